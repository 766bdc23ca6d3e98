//! The event log's text, made, hashed and written beside the simulation.
//!
//! Owns: turning each batch of encoded lines (`log_record.rs`) into text, the SHA-256 of
//! that text in the order the batches were handed, and writing it to the log's sink
//! (`--events FILE`). Batches go to a thread of its own over a bounded channel, so on a
//! machine with a second core the simulation waits neither for the digits nor for
//! SHA-256 (together about a sixth of a scale run when done inline); the text, and so the
//! digest and the file, are the same either way. If the thread cannot be started it
//! does the work inline.
//!
//! Must never: reorder or drop a batch, hold more than a few batches (the channel is
//! bounded: a simulation that outruns the thread waits), or block the caller except to
//! answer `hex` and `finish`.

use super::log_record;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::sync::mpsc::{self, Receiver, SyncSender};

/// Batches in flight before `update` waits for the thread.
const IN_FLIGHT: usize = 4;

enum Request {
    Batch(Vec<u8>),
    /// From now on, also write the text here.
    Sink(Box<dyn Write + Send>),
    /// The digest of everything so far plus these encoded lines, sent back.
    Hex(Vec<u8>, SyncSender<String>),
    /// Flush the sink and send back its first error, if it had one.
    Finish(SyncSender<Option<std::io::Error>>),
}

/// What the thread (or the inline fallback) keeps: the digest so far, the sink, and a
/// buffer the text of a batch is made in.
struct Text {
    digest: Sha256,
    sink: Option<Box<dyn Write + Send>>,
    sink_error: Option<std::io::Error>,
    text: Vec<u8>,
}

impl Text {
    fn new() -> Self {
        Text { digest: Sha256::new(), sink: None, sink_error: None, text: Vec::new() }
    }

    /// A batch of encoded lines: hashed and written as text.
    fn take(&mut self, records: &[u8]) {
        self.text.clear();
        log_record::write_lines(records, &mut self.text);
        self.digest.update(&self.text);
        if let Some(sink) = self.sink.as_mut() {
            if let Err(e) = sink.write_all(&self.text) {
                self.sink_error.get_or_insert(e);
                self.sink = None;
            }
        }
    }

    fn hex(&self, tail: &[u8]) -> String {
        let mut text = Vec::new();
        log_record::write_lines(tail, &mut text);
        let mut d = self.digest.clone();
        d.update(&text);
        d.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    fn finish(&mut self) -> Option<std::io::Error> {
        if let Some(sink) = self.sink.as_mut() {
            if let Err(e) = sink.flush() {
                self.sink_error.get_or_insert(e);
            }
        }
        self.sink_error.take()
    }

    fn serve(&mut self, request: Request) -> Option<Vec<u8>> {
        match request {
            Request::Batch(mut records) => {
                self.take(&records);
                records.clear();
                return Some(records);
            }
            Request::Sink(sink) => self.sink = Some(sink),
            Request::Hex(tail, reply) => {
                let _ = reply.send(self.hex(&tail));
            }
            Request::Finish(reply) => {
                let _ = reply.send(self.finish());
            }
        }
        None
    }
}

pub struct LogText {
    mode: Mode,
}

enum Mode {
    Inline(Text),
    Thread {
        requests: SyncSender<Request>,
        /// Spent batches handed back, to be filled again instead of allocated.
        spent: Receiver<Vec<u8>>,
    },
}

const STOPPED: &str = "unavailable: the event log's text thread stopped";

impl LogText {
    pub fn new() -> LogText {
        let (requests, inbox) = mpsc::sync_channel::<Request>(IN_FLIGHT);
        let (give_back, spent) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let started = std::thread::Builder::new().name("event-log-text".into()).spawn(move || {
            let mut text = Text::new();
            // Ends when the log is dropped (the sender with it); the sink goes with it.
            for request in inbox {
                if let Some(spent) = text.serve(request) {
                    let _ = give_back.try_send(spent);
                }
            }
        });
        match started {
            Ok(_) => LogText { mode: Mode::Thread { requests, spent } },
            Err(_) => LogText { mode: Mode::Inline(Text::new()) },
        }
    }

    /// Take `batch` of encoded lines (after everything before it) and hand back an empty
    /// buffer to fill next, with room for about as much.
    pub fn update(&mut self, batch: Vec<u8>) -> Vec<u8> {
        let capacity = batch.capacity();
        match &mut self.mode {
            Mode::Inline(text) => {
                let mut batch = batch;
                text.take(&batch);
                batch.clear();
                batch
            }
            Mode::Thread { requests, spent } => {
                // A send fails only if the thread is gone (it cannot panic on its own):
                // nothing to do but keep the simulation going; `hex` reports it.
                let _ = requests.send(Request::Batch(batch));
                spent.try_recv().unwrap_or_else(|_| Vec::with_capacity(capacity))
            }
        }
    }

    /// Write the text of every batch handed from now on to `sink` too.
    pub fn set_sink(&mut self, sink: Box<dyn Write + Send>) {
        match &mut self.mode {
            Mode::Inline(text) => text.sink = Some(sink),
            Mode::Thread { requests, .. } => {
                let _ = requests.send(Request::Sink(sink));
            }
        }
    }

    /// Hex SHA-256 of the text of every batch so far followed by `tail`'s (encoded lines).
    pub fn hex(&self, tail: &[u8]) -> String {
        match &self.mode {
            Mode::Inline(text) => text.hex(tail),
            Mode::Thread { requests, .. } => {
                let (reply, answer) = mpsc::sync_channel(1);
                if requests.send(Request::Hex(tail.to_vec(), reply)).is_err() {
                    return String::from(STOPPED);
                }
                answer.recv().unwrap_or_else(|_| String::from(STOPPED))
            }
        }
    }

    /// Flush the sink, once every batch handed is written; returns its first error.
    pub fn finish(&mut self) -> std::io::Result<()> {
        let error = match &mut self.mode {
            Mode::Inline(text) => text.finish(),
            Mode::Thread { requests, .. } => {
                let (reply, answer) = mpsc::sync_channel(1);
                match requests.send(Request::Finish(reply)).ok().and_then(|_| answer.recv().ok()) {
                    Some(error) => error,
                    None => Some(std::io::Error::other(STOPPED)),
                }
            }
        };
        error.map_or(Ok(()), Err)
    }
}

impl Default for LogText {
    fn default() -> Self {
        LogText::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex_of(bytes: &[u8]) -> String {
        Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
    }

    fn record(out: &mut Vec<u8>, i: u64) {
        log_record::begin(out, i, "batch");
        log_record::dec(out, i);
        log_record::end(out);
    }

    /// Many batches through the thread: the digest and the sink's bytes are those of
    /// their text in order, and asking midway does not disturb the stream.
    #[test]
    fn the_thread_hashes_and_writes_the_text_in_order() {
        #[derive(Clone, Default)]
        struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut text = LogText::new();
        assert!(matches!(text.mode, Mode::Thread { .. }));
        let sink = Shared::default();
        text.set_sink(Box::new(sink.clone()));
        let mut whole = String::new();
        let mut buf = Vec::with_capacity(64);
        for i in 0..1_000u64 {
            record(&mut buf, i);
            whole.push_str(&format!("{i} batch {i}\n"));
            buf = text.update(buf);
            assert!(buf.is_empty());
            if i % 250 == 0 {
                let mut tail = Vec::new();
                record(&mut tail, 7);
                assert_eq!(text.hex(&tail), hex_of(format!("{whole}7 batch 7\n").as_bytes()));
            }
        }
        assert_eq!(text.hex(b""), hex_of(whole.as_bytes()));
        text.finish().unwrap();
        assert_eq!(String::from_utf8(sink.0.lock().unwrap().clone()).unwrap(), whole);
    }

    /// A sink that fails: `finish` names its first error, and the digest goes on.
    #[test]
    fn a_failing_sink_is_reported_by_finish() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut text = LogText::new();
        text.set_sink(Box::new(Broken));
        let mut buf = Vec::new();
        record(&mut buf, 1);
        text.update(buf);
        assert_eq!(text.hex(b""), hex_of(b"1 batch 1\n"));
        assert_eq!(text.finish().unwrap_err().to_string(), "disk full");
        assert!(text.finish().is_ok(), "the error is told once");
    }
}
