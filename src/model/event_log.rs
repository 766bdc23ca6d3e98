//! The GCS event log: every state change, as one text line.
//!
//! The engine writes each line encoded (`log_record.rs`: numbers as raw values, not yet
//! digits); the log's text thread (`log_text.rs`) makes the text, streams it through a
//! SHA-256 digest and optionally to a file, so two runs can be compared byte for byte.
//! Only the newest `capacity` lines stay in memory, encoded too: a line's text is made
//! when it is read (a snapshot reads a thousand; a served run writes far more).

use super::log_record;
use super::log_text::LogText;
use super::time::VirtualTime;
use std::collections::VecDeque;
use std::io::Write;

pub struct EventLog {
    recent: VecDeque<KeptLine>,
    capacity: usize,
    text: LogText,
    total: u64,
    /// Lines not yet handed to `text`, encoded, the one being written last: handing them
    /// over a batch at a time costs a fraction of a line at a time, and each line is
    /// written once, in place.
    unsent: Vec<u8>,
}

/// Bytes of encoded lines gathered before they are handed over. Each batch wakes the
/// text thread (a futex wake, about 10 µs on these VMs): scale.yaml writes about 320 MB
/// of text, some 1,200 batches at this size, for about 1 MiB more held in flight.
const BATCH: usize = 256 * 1024;

/// A line kept in the ring: its message's pieces as encoded (`log_record.rs`).
struct KeptLine {
    seq: u64,
    time_us: u64,
    source: &'static str,
    pieces: Vec<u8>,
}

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
            text: LogText::new(),
            total: 0,
            unsent: Vec::with_capacity(BATCH + 256),
        }
    }

    /// Also write every line from now on to `sink` (e.g. `--events FILE`). The text
    /// thread writes it a batch at a time: every line is in it once [`EventLog::finish`]
    /// returns.
    pub fn set_sink(&mut self, sink: Box<dyn Write + Send>) {
        // The lines before it were not for the sink.
        let batch = std::mem::take(&mut self.unsent);
        self.unsent = self.text.update(batch);
        self.text.set_sink(sink);
    }

    /// Start a line (`<time> <source> `), then its message piece by piece, recorded by
    /// [`Line::end`]. The only way a line is written; `log_event!` is this with one
    /// formatted piece, and the lines every task writes five of use the plain pieces,
    /// which skip `core::fmt`'s machinery and leave the digits to the text thread.
    pub fn line(&mut self, time_us: u64, source: &'static str) -> Line<'_> {
        let head = log_record::begin(&mut self.unsent, time_us, source);
        Line { log: self, time_us, source, head }
    }

    /// End the line whose message's pieces begin at `head` of `unsent`: keep it in the
    /// ring, hand over a full batch.
    fn commit(&mut self, time_us: u64, source: &'static str, head: usize) {
        log_record::end(&mut self.unsent);
        if self.capacity > 0 {
            // Reuse the evicted entry's buffer: no allocation per event once the ring is full.
            let mut pieces = match self.recent.len() == self.capacity {
                true => self.recent.pop_front().map(|e| e.pieces).unwrap_or_default(),
                false => Vec::new(),
            };
            pieces.clear();
            pieces.extend_from_slice(&self.unsent[head..]);
            self.recent.push_back(KeptLine { seq: self.total, time_us, source, pieces });
        }
        self.total += 1;
        if self.unsent.len() >= BATCH {
            let full = std::mem::take(&mut self.unsent);
            self.unsent = self.text.update(full);
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Newest first, each line's text made as it is read.
    pub fn recent(&self) -> impl Iterator<Item = LoggedEvent> + '_ {
        self.recent.iter().rev().map(|line| {
            let mut text = Vec::with_capacity(line.pieces.len() + 16);
            log_record::write_message(&line.pieces, &mut text);
            let message = String::from_utf8(text).expect("a record's text is UTF-8, as its pieces were");
            LoggedEvent { seq: line.seq, time_us: VirtualTime(line.time_us), source: line.source, message }
        })
    }

    pub fn len(&self) -> usize {
        self.recent.len()
    }
    pub fn is_empty(&self) -> bool {
        self.recent.is_empty()
    }

    /// Hex SHA-256 of every line recorded so far (the log so far, not just the kept part).
    pub fn sha256_hex(&self) -> String {
        self.text.hex(&self.unsent)
    }

    /// Hand over what is left and flush the sink; returns the first write error, if any
    /// happened.
    pub fn finish(&mut self) -> std::io::Result<()> {
        let rest = std::mem::take(&mut self.unsent);
        self.unsent = self.text.update(rest);
        self.text.finish()
    }
}

/// An event-log line being written (see [`EventLog::line`]); `end` records it.
#[must_use = "a line is recorded only by `end`"]
pub struct Line<'a> {
    log: &'a mut EventLog,
    time_us: u64,
    source: &'static str,
    head: usize,
}

impl Line<'_> {
    #[inline]
    pub fn text(self, s: &str) -> Self {
        log_record::text(&mut self.log.unsent, s);
        self
    }
    /// As `{}` of an unsigned integer.
    #[inline]
    pub fn dec(self, v: u64) -> Self {
        log_record::dec(&mut self.log.unsent, v);
        self
    }
    /// As `{:x}`: lower case, no leading zeros.
    #[inline]
    pub fn hex(self, v: u64) -> Self {
        log_record::hex(&mut self.log.unsent, v);
        self
    }
    /// Formatted text, as `format_args!` writes it (what `log_event!` writes).
    #[inline]
    pub fn fmt(self, args: std::fmt::Arguments<'_>) -> Self {
        log_record::fmt(&mut self.log.unsent, args);
        self
    }
    /// Each byte as two lower-case hex digits (`{:02x}` per byte), as Ray prints ids.
    #[inline]
    pub fn hex_bytes(self, bytes: &[u8]) -> Self {
        log_record::hex_bytes(&mut self.log.unsent, bytes);
        self
    }
    pub fn end(self) {
        self.log.commit(self.time_us, self.source, self.head);
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
        assert!(text.len() > 3 * BATCH);
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
