//! `serve --state-dir DIR`: what a user expects to outlive a restart, kept on disk.
//!
//! Owns: `DIR/alerts.json` (the received alerts) and `DIR/jobs.json` (the jobs submitted
//! through the Jobs API, as Ray's `JobDetails`, each with its session), read at start and
//! written at most once a second when they changed. Every write goes to a temporary file
//! that is synced and then renamed over the old one, so a crash (`kill -9`, power loss)
//! leaves the previous file or the new one, never half of one.
//!
//! A job that was still running when the server stopped cannot go on (the model starts
//! again from its config): it comes back `FAILED`, saying so. Jobs are matched by
//! `submission_id` first, since a new session numbers its jobs from `01000000` again.
//!
//! A directory that cannot be written (read-only, full) is retried each second and said
//! once when writes start failing and once when they succeed again, not every second.
//!
//! Must never: start on a file it cannot read (the error names the file and, for an
//! entry that is not an object, its index), panic on what a file holds, or keep more
//! than the in-memory limits allow (`server.limits`).

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

pub(crate) const ALERTS: &str = "alerts.json";
pub(crate) const JOBS: &str = "jobs.json";
/// Previous jobs kept at most, as for the live submissions.
pub(crate) const MAX_JOBS: usize = 1_000;

/// An opened state directory and what it held at start.
#[derive(Clone, Debug)]
pub struct StateDir {
    dir: PathBuf,
    /// Received alerts, oldest first, as `GET /api/alerts` shows each.
    pub alerts: Vec<Value>,
    /// Jobs of earlier sessions, oldest first, as `GET /api/jobs/` shows each.
    pub jobs: Vec<Value>,
}

/// Why a state directory cannot be used: each names the path and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StateDirError {
    #[error("cannot create the state directory {}: {source}", dir.display())]
    Create { dir: PathBuf, source: std::io::Error },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: not a state file rayscope wrote ({why}); move it away to start without it", path.display())]
    NotOurs { path: PathBuf, why: String },
}

impl StateDir {
    /// Create `dir` if needed and read what it holds.
    pub fn open(dir: &Path) -> Result<StateDir, StateDirError> {
        std::fs::create_dir_all(dir).map_err(|source| StateDirError::Create { dir: dir.to_path_buf(), source })?;
        let read = |name: &str| -> Result<Vec<Value>, StateDirError> {
            let path = dir.join(name);
            match std::fs::read(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(source) => Err(StateDirError::Read { path, source }),
                Ok(bytes) => {
                    let not_ours = |why: String| StateDirError::NotOurs { path: path.clone(), why };
                    let list = serde_json::from_slice::<Vec<Value>>(&bytes).map_err(|e| not_ours(e.to_string()))?;
                    if let Some(i) = list.iter().position(|v| !v.is_object()) {
                        return Err(not_ours(format!("entry {i} is not a JSON object")));
                    }
                    Ok(list)
                }
            }
        };
        let alerts = read(ALERTS)?;
        let mut jobs = read(JOBS)?;
        for job in &mut jobs {
            let terminal = matches!(job["status"].as_str(), Some("SUCCEEDED" | "FAILED" | "STOPPED"));
            if !terminal {
                let was = job["status"].as_str().unwrap_or("unknown").to_string();
                job["status"] = "FAILED".into();
                job["message"] =
                    format!("rayscope restarted while this job was {was}; a job does not survive a restart").into();
            }
        }
        jobs.truncate(MAX_JOBS);
        Ok(StateDir { dir: dir.to_path_buf(), alerts, jobs })
    }

    /// Replace `name` with `value`'s JSON, atomically.
    pub(crate) fn write(&self, name: &str, value: &[u8]) -> std::io::Result<()> {
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(value)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, self.dir.join(name))?;
        // The rename itself is durable once the directory is synced.
        std::fs::File::open(&self.dir)?.sync_all()
    }
}

/// Whether a file's writes fail now, so a failing directory is said once, not each second.
#[derive(Default)]
pub(crate) struct Failing(bool);

impl Failing {
    /// Log a write's outcome if it changes whether writes fail; `true` if it logged.
    pub(crate) fn note(&mut self, file: &str, result: std::io::Result<()>) -> bool {
        let failed = result.is_err();
        if failed == self.0 {
            return false;
        }
        self.0 = failed;
        match result {
            Err(e) => tracing::warn!(error = %e, file, "cannot write the state directory; retrying each second"),
            Ok(()) => tracing::info!(file, "the state directory takes writes again"),
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_entries_that_are_not_objects_is_a_clear_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(JOBS), b"[5]").unwrap();
        let e = StateDir::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("jobs.json") && e.contains("entry 0 is not a JSON object"), "{e}");
        std::fs::write(dir.path().join(JOBS), b"[{\"status\": \"RUNNING\"}]").unwrap();
        let state = StateDir::open(dir.path()).unwrap();
        assert_eq!(state.jobs[0]["status"], "FAILED");
    }

    #[test]
    fn a_directory_that_cannot_be_written_is_said_once_until_it_can() {
        let dir = tempfile::tempdir().unwrap();
        // The temporary file's name taken by a directory: every write fails (as for a
        // read-only directory, which root could still write).
        std::fs::create_dir(dir.path().join(format!(".{JOBS}.tmp"))).unwrap();
        let state = StateDir::open(dir.path()).unwrap();
        let mut failing = Failing::default();
        let logged: Vec<bool> = (0..5).map(|_| failing.note(JOBS, state.write(JOBS, b"[]"))).collect();
        assert_eq!(logged, [true, false, false, false, false]);
        std::fs::remove_dir(dir.path().join(format!(".{JOBS}.tmp"))).unwrap();
        assert!(failing.note(JOBS, state.write(JOBS, b"[]")), "said once when it writes again");
        assert!(!failing.note(JOBS, state.write(JOBS, b"[]")));
    }
}
