//! A recorded history of an observed cluster: an append-only trace on disk that
//! outlives the cluster and rayscope.
//!
//! Owns: the trace's layout and both ends of it. A trace is a directory of segments,
//! `segment-000001.jsonl`, `segment-000002.jsonl`, ...; each line is one JSON record:
//! a header (`{"kind":"header",...}`: format version, the Ray version and session,
//! when it was opened) first in every segment, then the changes the store took, in the
//! order it took them (`store::Change`: a node, job, actor, task attempt, placement
//! group or worker process, as Ray wrote it, trimmed). A segment is closed at
//! `segment_bytes` and a new one opened; past `max_bytes` in all, the oldest segments
//! are deleted whole. Each
//! record is written with one `write` of the whole line, so a crash can only leave the
//! last line of the last segment torn; a reader skips a torn last line and tells which.
//! A writer that finds segments already there starts the next one: it never appends
//! to a file another process may have left torn.
//!
//! Observing several clusters, each named cluster's trace is its own directory,
//! `DIR/NAME` (the unnamed source's is `DIR` itself); a reader is given one of them
//! (`rayscope observe --trace DIR` shows each, a cluster apiece).
//!
//! One writer at a time: a recorder holds [`TraceLock`] (an exclusive `flock` of
//! `DIR/.lock`) for as long as it runs, so a second one fails at start instead of
//! taking segment numbers (and deleting segments) under the first. Only regular files
//! are segments: a symlink (to `/dev/zero`, say) or a device is never read, and a line
//! longer than [`MAX_LINE`] is skipped and counted, not held.
//! Must never: rewrite a line once written, grow past its bound, delete a segment it
//! did not write while another writer may hold the directory, or stop a reader at a
//! bad line (it is counted and named, the rest is read).

use super::store::{Change, Store, StoreLimits};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The longest trace line read (a task attempt's line is about a kilobyte).
pub const MAX_LINE: usize = 1 << 20;

/// Why a trace could not be recorded (`--record DIR`) or read (`--trace DIR`): each
/// names the directory or segment and what to do.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("--record {}: not a directory (a trace is a directory of segments): give a directory", dir.display())]
    NotADirectory { dir: PathBuf },
    #[error("--record {}: cannot create it: {source}", dir.display())]
    CreateDir { dir: PathBuf, source: std::io::Error },
    #[error("--record {}: cannot open {}: {source}", dir.display(), lock.display())]
    OpenLock { dir: PathBuf, lock: PathBuf, source: std::io::Error },
    /// `holder`: ` (pid N)`, or empty where the lock names none.
    #[error(
        "--record {}: another rayscope is recording into it{holder}; a trace has one writer: \
         give another directory, or stop that one",
        dir.display()
    )]
    Locked { dir: PathBuf, holder: String },
    #[error("--record {}: cannot list it: {source}", dir.display())]
    List { dir: PathBuf, source: std::io::Error },
    /// `what`: a line or a header.
    #[error("cannot encode a trace {what}: {source}")]
    Encode { what: &'static str, source: serde_json::Error },
    #[error("--record {}: {segment}: {source}", dir.display())]
    Write { dir: PathBuf, segment: String, source: std::io::Error },
    #[error("--record: cannot create {}: {source}", path.display())]
    CreateSegment { path: PathBuf, source: std::io::Error },
    #[error("--record: cannot write {}: {source}", path.display())]
    WriteHeader { path: PathBuf, source: std::io::Error },
    #[error("--trace {}: cannot read it: {source}", dir.display())]
    ReadDir { dir: PathBuf, source: std::io::Error },
    /// `names`: the clusters' directories, comma-separated; `first`: the first one's path.
    #[error(
        "--trace {}: this directory holds the traces of several clusters ({names}): give one's, as --trace {}",
        dir.display(),
        first.display()
    )]
    SeveralClusters { dir: PathBuf, names: String, first: PathBuf },
    #[error("--trace {}: no trace here (no segment-*.jsonl files; record one with --record)", dir.display())]
    NoTrace { dir: PathBuf },
    #[error("--trace {}: {source}", path.display())]
    ReadSegment { path: PathBuf, source: std::io::Error },
    #[error("--trace {}: not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("--trace {}:{line}: format {format} (this rayscope reads format {FORMAT})", path.display())]
    Format { path: PathBuf, line: u64, format: u32 },
}

/// The one writer's hold on a trace directory, for as long as it records.
#[derive(Debug)]
pub struct TraceLock {
    _file: File,
}

impl TraceLock {
    /// Make `dir` if missing and hold it; an error names what is wrong: a path that is
    /// not a directory, or another rayscope recording there.
    pub fn acquire(dir: &Path) -> Result<TraceLock, TraceError> {
        if let Ok(m) = std::fs::metadata(dir) {
            if !m.is_dir() {
                return Err(TraceError::NotADirectory { dir: dir.to_path_buf() });
            }
        }
        std::fs::create_dir_all(dir).map_err(|source| TraceError::CreateDir { dir: dir.to_path_buf(), source })?;
        let path = dir.join(".lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|source| TraceError::OpenLock { dir: dir.to_path_buf(), lock: path.clone(), source })?;
        // SAFETY: flock on a descriptor this function owns; no memory is shared.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let holder = if holder.is_empty() { String::new() } else { format!(" (pid {holder})") };
            return Err(TraceError::Locked { dir: dir.to_path_buf(), holder });
        }
        let _ = file.set_len(0);
        let _ = file.write_all(std::process::id().to_string().as_bytes());
        Ok(TraceLock { _file: file })
    }
}

/// The trace format this build writes and reads.
pub const FORMAT: u32 = 1;

/// Bounds of a trace directory.
#[derive(Clone, Copy, Debug)]
pub struct TraceLimits {
    /// A segment is closed past this size.
    pub segment_bytes: u64,
    /// Segments are deleted, oldest first, while the directory holds more than this.
    pub max_bytes: u64,
}

impl Default for TraceLimits {
    fn default() -> Self {
        TraceLimits { segment_bytes: 64 << 20, max_bytes: 1 << 30 }
    }
}

/// The first line of every segment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: u32,
    pub ray_version: String,
    pub session_name: String,
    /// The dashboard it was read from.
    pub source: String,
    /// Unix ms the segment was opened.
    pub opened_ms: u64,
}

/// One line of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Header {
        kind: HeaderTag,
        #[serde(flatten)]
        header: Header,
    },
    Change(Box<Change>),
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum HeaderTag {
    Header,
}

fn segment_name(n: u64) -> String {
    format!("segment-{n:06}.jsonl")
}

/// The segments in `dir`, oldest first, with their numbers: regular files only (a
/// symlink is not followed).
fn segments(dir: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(n) = name.strip_prefix("segment-").and_then(|r| r.strip_suffix(".jsonl")) else { continue };
        if let Ok(n) = n.parse::<u64>() {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Whether `dir` is a trace itself (it holds segments).
pub fn holds_segments(dir: &Path) -> bool {
    segments(dir).is_ok_and(|s| !s.is_empty())
}

/// The clusters whose traces `dir` holds, by name: its subdirectories with segments
/// (`--record` with several clusters writes each named cluster's in `DIR/NAME`).
pub fn cluster_traces(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| holds_segments(&e.path()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .take(1000)
        .collect();
    out.sort();
    out
}

/// Appends to a trace directory.
pub struct TraceWriter {
    dir: PathBuf,
    limits: TraceLimits,
    header: Header,
    file: File,
    segment: u64,
    written: u64,
    /// Bytes in the directory's segments, this one included.
    total: u64,
    pub lines: u64,
    pub deleted_segments: u64,
}

impl TraceWriter {
    /// Open `dir` (made if missing) and start a new segment after any already there.
    /// The caller holds the directory's [`TraceLock`].
    pub fn open(dir: &Path, limits: TraceLimits, header: Header) -> Result<TraceWriter, TraceError> {
        std::fs::create_dir_all(dir).map_err(|source| TraceError::CreateDir { dir: dir.to_path_buf(), source })?;
        let existing = segments(dir).map_err(|source| TraceError::List { dir: dir.to_path_buf(), source })?;
        let total: u64 = existing.iter().filter_map(|(_, p)| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
        let next = existing.last().map_or(1, |(n, _)| n + 1);
        let (file, written) = open_segment(dir, next, &header)?;
        let mut w = TraceWriter {
            dir: dir.to_path_buf(),
            limits,
            header,
            file,
            segment: next,
            written,
            total: total + written,
            lines: 0,
            deleted_segments: 0,
        };
        w.enforce_bound();
        Ok(w)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes the directory's segments hold.
    pub fn bytes(&self) -> u64 {
        self.total
    }

    /// Append changes, one line each; rotate and delete as the bounds say.
    pub fn append(&mut self, changes: &[Change]) -> Result<(), TraceError> {
        for c in changes {
            let mut line = serde_json::to_vec(c).map_err(|source| TraceError::Encode { what: "line", source })?;
            line.push(b'\n');
            if self.written + line.len() as u64 > self.limits.segment_bytes && self.written > 0 {
                self.rotate()?;
            }
            // One write of the whole line: a crash tears at most this line.
            self.file.write_all(&line).map_err(|e| self.io_error(e))?;
            self.written += line.len() as u64;
            self.total += line.len() as u64;
            self.lines += 1;
        }
        self.enforce_bound();
        Ok(())
    }

    /// Make what was appended durable (called once per round, not per line).
    pub fn sync(&mut self) -> Result<(), TraceError> {
        self.file.sync_data().map_err(|e| self.io_error(e))
    }

    fn io_error(&self, source: std::io::Error) -> TraceError {
        TraceError::Write { dir: self.dir.clone(), segment: segment_name(self.segment), source }
    }

    fn rotate(&mut self) -> Result<(), TraceError> {
        let _ = self.file.sync_data();
        self.segment += 1;
        let (file, written) = open_segment(&self.dir, self.segment, &self.header)?;
        self.file = file;
        self.written = written;
        self.total += written;
        Ok(())
    }

    /// Delete the oldest segments (never the open one) while past `max_bytes`.
    fn enforce_bound(&mut self) {
        if self.total <= self.limits.max_bytes {
            return;
        }
        let Ok(list) = segments(&self.dir) else { return };
        for (n, path) in list {
            if self.total <= self.limits.max_bytes || n >= self.segment {
                break;
            }
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if std::fs::remove_file(&path).is_ok() {
                self.total = self.total.saturating_sub(len);
                self.deleted_segments += 1;
                tracing::info!(segment = %path.display(), "trace past its bound: deleted the oldest segment");
            }
        }
    }
}

fn open_segment(dir: &Path, n: u64, header: &Header) -> Result<(File, u64), TraceError> {
    let path = dir.join(segment_name(n));
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)
        .map_err(|source| TraceError::CreateSegment { path: path.clone(), source })?;
    let opened_ms = super::now_ms();
    let line = Line::Header { kind: HeaderTag::Header, header: Header { format: FORMAT, opened_ms, ..header.clone() } };
    let mut text = serde_json::to_vec(&line).map_err(|source| TraceError::Encode { what: "header", source })?;
    text.push(b'\n');
    if let Err(source) = file.write_all(&text) {
        // A segment without its header is no segment: a full disk leaves none behind.
        let _ = std::fs::remove_file(&path);
        return Err(TraceError::WriteHeader { path, source });
    }
    Ok((file, text.len() as u64))
}

/// What reading a trace found.
#[derive(Clone, Debug, Default)]
pub struct TraceRead {
    /// The newest segment's header.
    pub header: Header,
    pub segments: u64,
    pub lines: u64,
    /// Lines that were not a record (file:line and why; the first 10).
    pub bad_lines: Vec<String>,
    pub bad_count: u64,
    /// The newest time any record names (Unix ms): the trace's "now".
    pub last_ms: u64,
}

/// Read every segment of `dir` into a new store.
pub fn read(dir: &Path, limits: StoreLimits) -> Result<(Store, TraceRead), TraceError> {
    let list = segments(dir).map_err(|source| TraceError::ReadDir { dir: dir.to_path_buf(), source })?;
    if list.is_empty() {
        let clusters = cluster_traces(dir);
        if !clusters.is_empty() {
            return Err(TraceError::SeveralClusters {
                dir: dir.to_path_buf(),
                names: clusters.join(", "),
                first: dir.join(&clusters[0]),
            });
        }
        return Err(TraceError::NoTrace { dir: dir.to_path_buf() });
    }
    let mut store = Store::new(limits);
    // A recorded time after now is no time Ray wrote (it is refused and counted).
    store.now_ms = super::now_ms();
    let mut out = TraceRead { segments: list.len() as u64, ..Default::default() };
    let last_segment = list.last().map(|(n, _)| *n);
    for (n, path) in &list {
        // No symlink is followed, even one swapped in after the listing.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|source| TraceError::ReadSegment { path: path.clone(), source })?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(TraceError::NotAFile { path: path.clone() });
        }
        let mut reader = BufReader::new(file);
        let mut buf = Vec::new();
        let mut lineno = 0u64;
        loop {
            buf.clear();
            let read = (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|source| TraceError::ReadSegment { path: path.clone(), source })?;
            if read == 0 {
                break;
            }
            lineno += 1;
            if buf.len() > MAX_LINE {
                // Skip the rest of the line without holding it.
                let mut skipped = 0u64;
                loop {
                    let chunk =
                        reader.fill_buf().map_err(|source| TraceError::ReadSegment { path: path.clone(), source })?;
                    if chunk.is_empty() {
                        break;
                    }
                    match chunk.iter().position(|b| *b == b'\n') {
                        Some(i) => {
                            reader.consume(i + 1);
                            break;
                        }
                        None => {
                            let len = chunk.len();
                            skipped += len as u64;
                            reader.consume(len);
                        }
                    }
                }
                out.bad_count += 1;
                if out.bad_lines.len() < 10 {
                    let total = buf.len() as u64 + skipped;
                    out.bad_lines.push(format!(
                        "{}:{lineno}: a line of {total}+ bytes, past the limit of {MAX_LINE}",
                        path.display()
                    ));
                }
                continue;
            }
            let torn = buf.last() != Some(&b'\n');
            let parsed = serde_json::from_slice::<Line>(&buf);
            match parsed {
                Ok(Line::Header { header, .. }) => {
                    if header.format != FORMAT {
                        return Err(TraceError::Format { path: path.clone(), line: lineno, format: header.format });
                    }
                    out.header = header;
                }
                Ok(Line::Change(c)) => {
                    let refused = store.implausible_times;
                    store.apply(&c);
                    if store.implausible_times == refused {
                        out.last_ms = out.last_ms.max(latest_ms(&c));
                    }
                    out.lines += 1;
                }
                Err(e) => {
                    out.bad_count += 1;
                    let why = if torn && Some(*n) == last_segment {
                        "a torn last line (rayscope stopped while writing it)".to_string()
                    } else {
                        e.to_string()
                    };
                    if out.bad_lines.len() < 10 {
                        out.bad_lines.push(format!("{}:{lineno}: {why}", path.display()));
                    }
                }
            }
        }
    }
    Ok((store, out))
}

/// The newest time a change names, Unix ms.
fn latest_ms(c: &Change) -> u64 {
    match c {
        Change::Task(t) => [t.end_time_ms, t.start_time_ms, t.submitted_ms()].into_iter().flatten().max().unwrap_or(0),
        Change::Job(j) => j.end_time.or(j.start_time).unwrap_or(0),
        Change::Node(n) => n.end_time_ms.or(n.start_time_ms).unwrap_or(0),
        Change::Actor(a) => a.end_time_ms.or(a.start_time_ms).unwrap_or(0),
        Change::PlacementGroup(_) => 0,
        Change::Worker(w) => w.launched_ms.or(w.launch_ms).unwrap_or(0),
        Change::WorkerCpu(c) => c.at_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::rows::{ObservedJob, ObservedTask};

    fn task(i: u32) -> Change {
        Change::Task(ObservedTask {
            task_id: format!("{i:08x}"),
            job_id: "01000000".into(),
            state: "FINISHED".into(),
            name: "f".into(),
            events: vec![("PENDING_ARGS_AVAIL".into(), 1_000 + u64::from(i))],
            end_time_ms: Some(2_000 + u64::from(i)),
            ..Default::default()
        })
    }

    #[test]
    fn what_is_written_reads_back_and_a_torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = TraceWriter::open(dir.path(), TraceLimits::default(), Header::default()).unwrap();
        let job =
            Change::Job(ObservedJob { job_id: "01000000".into(), status: "SUCCEEDED".into(), ..Default::default() });
        w.append(&[job]).unwrap();
        w.append(&(0..10).map(task).collect::<Vec<_>>()).unwrap();
        w.sync().unwrap();
        drop(w);
        // A crash in the middle of a line.
        let seg = dir.path().join(segment_name(1));
        let mut f = OpenOptions::new().append(true).open(&seg).unwrap();
        f.write_all(b"{\"kind\":\"task\",\"task_id\":\"ab").unwrap();
        let (store, read) = read(dir.path(), StoreLimits::default()).unwrap();
        assert_eq!(store.tasks.len(), 10);
        assert_eq!(store.jobs.len(), 1);
        assert_eq!(read.lines, 11);
        assert_eq!(read.bad_count, 1);
        assert!(
            read.bad_lines[0].ends_with(":13: a torn last line (rayscope stopped while writing it)"),
            "{:?}",
            read.bad_lines
        );
        assert_eq!(read.last_ms, 2_009);
    }

    #[test]
    fn a_new_writer_starts_a_new_segment_and_the_oldest_go_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let limits = TraceLimits { segment_bytes: 2_000, max_bytes: 6_000 };
        let mut w = TraceWriter::open(dir.path(), limits, Header::default()).unwrap();
        w.append(&(0..100).map(task).collect::<Vec<_>>()).unwrap();
        assert!(w.bytes() <= 6_000 + 2_000, "bounded: {}", w.bytes());
        assert!(w.deleted_segments > 0);
        let before = segments(dir.path()).unwrap();
        drop(w);
        let w2 = TraceWriter::open(dir.path(), limits, Header::default()).unwrap();
        let after = segments(dir.path()).unwrap();
        assert_eq!(after.last().unwrap().0, before.last().unwrap().0 + 1, "never appends to an old segment");
        drop(w2);
        let (store, read) = read(dir.path(), StoreLimits::default()).unwrap();
        assert_eq!(read.bad_count, 0);
        assert!(store.tasks.len() < 100 && !store.tasks.is_empty(), "the newest tasks survive: {}", store.tasks.len());
        assert!(store.task_number(&format!("{:08x}", 99)).is_some());
    }

    #[test]
    fn a_second_writer_is_refused_and_a_regular_file_is_no_trace_directory() {
        let dir = tempfile::tempdir().unwrap();
        let first = TraceLock::acquire(dir.path()).unwrap();
        let e = TraceLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(e.contains("another rayscope is recording into it"), "{e}");
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        drop(first);
        assert!(TraceLock::acquire(dir.path()).is_ok(), "free again once the first is gone");
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"x").unwrap();
        let e = TraceLock::acquire(&file).unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
    }

    #[test]
    fn only_regular_files_are_read_and_an_endless_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = TraceWriter::open(dir.path(), TraceLimits::default(), Header::default()).unwrap();
        w.append(&[task(1)]).unwrap();
        drop(w);
        // A segment name pointing at an endless device is not a segment.
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(segment_name(2))).unwrap();
        // A line with no end in sight, then a good one.
        let mut text = vec![b'x'; MAX_LINE * 2];
        text.push(b'\n');
        text.extend_from_slice(serde_json::to_string(&task(2)).unwrap().as_bytes());
        text.push(b'\n');
        std::fs::write(dir.path().join(segment_name(3)), text).unwrap();
        let (store, read) = read(dir.path(), StoreLimits::default()).unwrap();
        assert_eq!(read.segments, 2, "the symlink is skipped");
        assert_eq!((store.tasks.len(), read.bad_count), (2, 1));
        assert!(read.bad_lines[0].contains("past the limit"), "{:?}", read.bad_lines);
    }

    #[test]
    fn an_empty_directory_is_no_trace() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path(), StoreLimits::default()).unwrap_err().to_string();
        assert!(e.contains("no trace here"), "{e}");
    }
}
