//! Running scripts/ray-differential/scenario.py on a real Ray cluster from a test: under
//! the machine-wide lock every real-Ray test takes (/tmp/real-ray.lock, one cluster at a
//! time), in a temp dir of its own, and always cleaned up: the scenario and every Ray
//! process it starts share one process group, killed when the run is dropped, and any
//! process still naming the temp dir on its command line is killed too.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{recording, Shape};

/// How long the scenario may take once it runs (about three minutes on two busy cores).
const DEADLINE: Duration = Duration::from_secs(540);
/// How long it may wait for the real-Ray lock first (other real-Ray tests hold it).
const LOCK_DEADLINE: Duration = Duration::from_secs(1200);

pub struct LiveRun {
    child: Option<Child>,
    /// The process group of flock, the scenario and every Ray process it starts.
    group: u32,
    dir: tempfile::TempDir,
    out: PathBuf,
    log: PathBuf,
}

impl LiveRun {
    pub fn start(python: &Path) -> LiveRun {
        LiveRun::start_with(python, &[])
    }

    /// [`LiveRun::start`] with more arguments for the scenario (`--until STEP`).
    pub fn start_with(python: &Path, extra: &[&str]) -> LiveRun {
        // Short paths: Ray's socket paths live under the temp dir and must fit 107 bytes.
        let dir = tempfile::Builder::new().prefix("rd").tempdir_in("/tmp").unwrap();
        let out = dir.path().join("live.json");
        let log = dir.path().join("scenario.log");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/ray-differential/scenario.py");
        // One open file for both streams, so they append rather than overwrite each other.
        let log_file = std::fs::File::create(&log).unwrap();
        let child = Command::new("flock")
            .arg("/tmp/real-ray.lock")
            .arg(python)
            .arg(script)
            .arg("--out")
            .arg(&out)
            .arg("--temp-dir")
            .arg(dir.path().join("ray"))
            .args(extra)
            .stdout(Stdio::from(log_file.try_clone().unwrap()))
            .stderr(Stdio::from(log_file))
            .process_group(0)
            .spawn()
            .expect("flock runs the scenario");
        LiveRun { group: child.id(), child: Some(child), dir, out, log }
    }

    /// Wait for the scenario (with a deadline) and read what it recorded.
    pub fn finish(mut self) -> Vec<(String, Shape)> {
        let asked = Instant::now();
        // The scenario writes its log from its first moment: until then, flock is waiting.
        let mut started: Option<Instant> = None;
        let status = loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                break status;
            }
            if started.is_none() && std::fs::metadata(&self.log).is_ok_and(|m| m.len() > 0) {
                started = Some(Instant::now());
            }
            match started {
                Some(t) if t.elapsed() > DEADLINE => {
                    panic!("the scenario ran past {DEADLINE:?}; its log:\n{}", self.log_tail())
                }
                None if asked.elapsed() > LOCK_DEADLINE => {
                    panic!("waited {LOCK_DEADLINE:?} for /tmp/real-ray.lock (another real-Ray run holds it)")
                }
                _ => {}
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        self.child = None;
        assert!(status.success(), "the scenario failed ({status}); its log:\n{}", self.log_tail());
        recording(self.out.to_str().unwrap())
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            // SIGTERM first: the scenario shuts its cluster down on the way out.
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
            let end = Instant::now() + Duration::from_secs(20);
            while Instant::now() < end && child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(200));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        // Even after a clean run: a worker's metrics agent can outlive its raylet and
        // the cluster's shutdown (measured), still in the group, reparented to init.
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.group)]).status();
        kill_using(self.dir.path());
    }
}

/// SIGKILL every process whose command line, working directory or open files name `dir`:
/// only this run's Ray processes do (the temp dir is ours alone). Ray's agents rename
/// themselves (`ray::DashboardAgent`), so the command line alone does not find them.
fn kill_using(dir: &Path) {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    let me = std::process::id().to_string();
    for e in entries.flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
            continue;
        }
        let names = |p: PathBuf| std::fs::read_link(p).is_ok_and(|t| t.to_string_lossy().contains(&needle));
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let uses = String::from_utf8_lossy(&cmdline).contains(&needle)
            || names(e.path().join("cwd"))
            || std::fs::read_dir(e.path().join("fd"))
                .map(|fds| fds.flatten().any(|fd| names(fd.path())))
                .unwrap_or(false);
        if uses {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
    }
}
