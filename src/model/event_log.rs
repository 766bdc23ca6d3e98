//! The GCS event log: every state change, as one text line.
//!
//! The whole log streams through a SHA-256 digest (`log_digest.rs`, and optionally to a
//! file), so two runs can be compared byte for byte; only the newest `capacity` lines
//! stay in memory.

use super::ids::HEX_DIGITS as HEX;
use super::log_digest::LogDigest;
use super::time::VirtualTime;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::Write;

pub struct EventLog {
    recent: VecDeque<LoggedEvent>,
    capacity: usize,
    digest: LogDigest,
    total: u64,
    sink: Option<Box<dyn Write + Send>>,
    sink_error: Option<std::io::Error>,
    /// Lines not yet fed to `digest`, the one being written last: SHA-256 is a stream,
    /// so hashing them a block of lines at a time gives the same digest for a fraction
    /// of the per-call cost, and each line is written once, in place.
    unhashed: String,
}

/// Bytes of lines gathered before they are hashed. Each batch wakes the digest's thread
/// (a futex wake, about 10 µs on these VMs): scale.yaml writes about 320 MB of lines,
/// 4,900 batches at 64 KiB, 1,200 at this size, for about 1 MiB more held in flight.
const HASH_BATCH: usize = 256 * 1024;

/// One event kept in memory for the state API.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoggedEvent {
    pub seq: u64,
    pub time_us: VirtualTime,
    pub source: &'static str,
    pub message: String,
}

impl EventLog {
    /// Keeps the last `capacity` events in memory for the state API; 0 keeps none (the
    /// digest and the sink still see every line).
    pub fn new(capacity: usize) -> EventLog {
        EventLog {
            recent: VecDeque::with_capacity(capacity.min(1 << 16)),
            capacity,
            digest: LogDigest::new(),
            total: 0,
            sink: None,
            sink_error: None,
            unhashed: String::with_capacity(HASH_BATCH + 256),
        }
    }

    /// Also write every line to `sink` (e.g. `--events FILE`).
    pub fn set_sink(&mut self, sink: Box<dyn Write + Send>) {
        self.sink = Some(sink);
    }

    /// Start a line (`<time> <source> `), then its message piece by piece, recorded by
    /// [`Line::end`]. The only way a line is written; `log_event!` is this with one
    /// formatted piece, and the lines every task writes five of use the plain pieces,
    /// which skip `core::fmt`'s machinery.
    pub fn line(&mut self, time_us: u64, source: &'static str) -> Line<'_> {
        let start = self.unhashed.len();
        let head = self.begin(time_us, source);
        Line { log: self, time_us, source, start, head }
    }

    /// Write "<time> <source> " and return where the message starts.
    fn begin(&mut self, time_us: u64, source: &'static str) -> usize {
        push_ascii(&mut self.unhashed, itoa::Buffer::new().format(time_us));
        self.unhashed.push(' ');
        self.unhashed.push_str(source);
        self.unhashed.push(' ');
        self.unhashed.len()
    }

    /// End the line written at `start..` of `unhashed` (its message from `head`): stream
    /// it, keep it in the ring, hash a full batch.
    fn commit(&mut self, time_us: u64, source: &'static str, start: usize, head: usize) {
        self.unhashed.push('\n');
        if let Some(sink) = self.sink.as_mut() {
            if let Err(e) = sink.write_all(&self.unhashed.as_bytes()[start..]) {
                self.sink_error.get_or_insert(e);
                self.sink = None;
            }
        }
        if self.capacity > 0 {
            let text = &self.unhashed[head..self.unhashed.len() - 1];
            // Reuse the evicted entry's buffer: no allocation per event once the ring is full.
            let mut message = match self.recent.len() == self.capacity {
                true => self.recent.pop_front().map(|e| e.message).unwrap_or_default(),
                false => String::with_capacity(text.len()),
            };
            message.clear();
            message.push_str(text);
            self.recent.push_back(LoggedEvent { seq: self.total, time_us: VirtualTime(time_us), source, message });
        }
        self.total += 1;
        if self.unhashed.len() >= HASH_BATCH {
            let full = std::mem::take(&mut self.unhashed);
            self.unhashed = self.digest.update(full);
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Newest first.
    pub fn recent(&self) -> impl Iterator<Item = &LoggedEvent> {
        self.recent.iter().rev()
    }

    pub fn len(&self) -> usize {
        self.recent.len()
    }
    pub fn is_empty(&self) -> bool {
        self.recent.is_empty()
    }

    /// Hex SHA-256 of every line recorded so far (the log so far, not just the kept part).
    pub fn sha256_hex(&self) -> String {
        self.digest.hex(self.unhashed.as_bytes())
    }

    /// Flush the sink; returns the first write error, if any happened.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(sink) = self.sink.as_mut() {
            if let Err(e) = sink.flush() {
                self.sink_error.get_or_insert(e);
            }
        }
        match self.sink_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Append a few ASCII bytes one by one: for the handful of digits of a number this is
/// cheaper than `push_str`'s call to `memcpy`.
#[inline]
fn push_ascii(out: &mut String, digits: &str) {
    for b in digits.bytes() {
        out.push(char::from(b));
    }
}

/// An event-log line being written (see [`EventLog::line`]); `end` records it.
#[must_use = "a line is recorded only by `end`"]
pub struct Line<'a> {
    log: &'a mut EventLog,
    time_us: u64,
    source: &'static str,
    start: usize,
    head: usize,
}

impl Line<'_> {
    #[inline]
    pub fn text(self, s: &str) -> Self {
        self.log.unhashed.push_str(s);
        self
    }
    /// As `{}` of an unsigned integer.
    #[inline]
    pub fn dec(self, v: u64) -> Self {
        push_ascii(&mut self.log.unhashed, itoa::Buffer::new().format(v));
        self
    }
    /// As `{:x}`: lower case, no leading zeros.
    #[inline]
    pub fn hex(self, v: u64) -> Self {
        let digits = if v == 0 { 1 } else { 16 - v.leading_zeros() / 4 };
        for shift in (0..digits).rev() {
            self.log.unhashed.push(char::from(HEX[((v >> (shift * 4)) & 0xf) as usize]));
        }
        self
    }
    /// Formatted text, as `format_args!` writes it (what `log_event!` writes).
    #[inline]
    pub fn fmt(self, args: std::fmt::Arguments<'_>) -> Self {
        let _ = self.log.unhashed.write_fmt(args);
        self
    }
    /// Each byte as two lower-case hex digits (`{:02x}` per byte), as Ray prints ids.
    #[inline]
    pub fn hex_bytes(self, bytes: &[u8]) -> Self {
        for b in bytes {
            self.log.unhashed.push(char::from(HEX[(b >> 4) as usize]));
            self.log.unhashed.push(char::from(HEX[(b & 0xf) as usize]));
        }
        self
    }
    pub fn end(self) {
        self.log.commit(self.time_us, self.source, self.start, self.head);
    }
}

/// `log_event!(log, time, "task", "{} RUNNING", id)`: a whole line whose message is
/// formatted text, written through [`EventLog::line`] like every other line.
#[macro_export]
macro_rules! log_event {
    ($log:expr, $time:expr, $source:expr, $($arg:tt)*) => {
        $log.line($time, $source).fmt(format_args!($($arg)*)).end()
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn keeps_only_capacity_but_hashes_everything() {
        let mut a = EventLog::new(2);
        let mut b = EventLog::new(100);
        for i in 0..10 {
            crate::log_event!(a, i, "test", "event {i}");
            crate::log_event!(b, i, "test", "event {i}");
        }
        assert_eq!(a.len(), 2);
        assert_eq!(a.total(), 10);
        assert_eq!(a.sha256_hex(), b.sha256_hex());
        assert_eq!(a.recent().next().unwrap().message, "event 9");
    }

    /// Lines hashed in batches give the digest of the whole text, across batch boundaries.
    #[test]
    fn batched_digest_is_the_digest_of_every_line() {
        let mut log = EventLog::new(8);
        let mut text = String::new();
        for i in 0..40_000u64 {
            crate::log_event!(log, i, "task", "{i:x} RUNNING attempt=0");
            text.push_str(&format!("{i} task {i:x} RUNNING attempt=0\n"));
            if i % 13_333 == 0 {
                let d = Sha256::digest(text.as_bytes());
                assert_eq!(log.sha256_hex(), d.iter().map(|b| format!("{b:02x}")).collect::<String>());
            }
        }
        assert!(text.len() > 3 * HASH_BATCH);
        let d = Sha256::digest(text.as_bytes());
        assert_eq!(log.sha256_hex(), d.iter().map(|b| format!("{b:02x}")).collect::<String>());
    }

    /// A line written piece by piece is byte for byte what `log_event!` writes.
    #[test]
    fn pieces_write_what_the_format_macro_writes() {
        let mut by_fmt = EventLog::new(8);
        let mut by_pieces = EventLog::new(8);
        for v in [0u64, 1, 9, 10, 15, 16, 255, 0xabc, 1 << 40, u64::MAX] {
            let bytes = (v as u32).to_le_bytes();
            crate::log_event!(
                by_fmt,
                v,
                "task",
                "{v:x} SUBMITTED job={:02x}{:02x}{:02x}{:02x} attempt={v}",
                bytes[0],
                bytes[1],
                bytes[2],
                bytes[3]
            );
            by_pieces.line(v, "task").hex(v).text(" SUBMITTED job=").hex_bytes(&bytes).text(" attempt=").dec(v).end();
            assert_eq!(by_fmt.recent().next().unwrap().message, by_pieces.recent().next().unwrap().message);
        }
        assert_eq!(by_fmt.total(), by_pieces.total());
        assert_eq!(by_fmt.sha256_hex(), by_pieces.sha256_hex());
    }

    #[test]
    fn different_logs_hash_differently() {
        let mut a = EventLog::new(4);
        let mut b = EventLog::new(4);
        crate::log_event!(a, 1, "x", "a");
        crate::log_event!(b, 1, "x", "b");
        assert_ne!(a.sha256_hex(), b.sha256_hex());
    }
}
