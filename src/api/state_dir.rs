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
//! Must never: start on a file it cannot read (the error names the file), or keep more
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

impl StateDir {
    /// Create `dir` if needed and read what it holds.
    pub fn open(dir: &Path) -> Result<StateDir, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the state directory {}: {e}", dir.display()))?;
        let read = |name: &str| -> Result<Vec<Value>, String> {
            let path = dir.join(name);
            match std::fs::read(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(e) => Err(format!("cannot read {}: {e}", path.display())),
                Ok(bytes) => serde_json::from_slice::<Vec<Value>>(&bytes).map_err(|e| {
                    format!(
                        "{}: not a state file rayscope wrote ({e}); move it away to start without it",
                        path.display()
                    )
                }),
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
