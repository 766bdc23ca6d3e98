//! The event log's SHA-256, computed beside the simulation.
//!
//! Owns: the digest of every batch of log lines handed to it, in the order handed.
//! Batches go to a thread of its own over a bounded channel, so on a machine with a
//! second core the simulation does not wait for SHA-256 (about 6% of a scale run when
//! hashed inline); the stream, and so the digest, is the same either way. If the
//! thread cannot be started it hashes inline.
//!
//! Must never: reorder or drop a batch, hold more than a few batches (the channel is
//! bounded: a simulation that outruns the hasher waits), or block the caller except to
//! answer `hex`.

use sha2::{Digest, Sha256};
use std::sync::mpsc::{self, Receiver, SyncSender};

/// Batches in flight before `update` waits for the hasher.
const IN_FLIGHT: usize = 4;

enum Request {
    Batch(Vec<u8>),
    /// The digest of everything so far plus this tail, sent back on the channel.
    Hex(Vec<u8>, SyncSender<String>),
}

pub struct LogDigest {
    mode: Mode,
}

enum Mode {
    Inline(Sha256),
    Thread {
        requests: SyncSender<Request>,
        /// Hashed batches handed back, to be filled again instead of allocated.
        spent: Receiver<Vec<u8>>,
    },
}

fn hex(d: Sha256) -> String {
    d.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl LogDigest {
    pub fn new() -> LogDigest {
        let (requests, inbox) = mpsc::sync_channel::<Request>(IN_FLIGHT);
        let (give_back, spent) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let started = std::thread::Builder::new().name("event-log-digest".into()).spawn(move || {
            let mut digest = Sha256::new();
            // Ends when the log is dropped (the sender with it).
            for request in inbox {
                match request {
                    Request::Batch(mut bytes) => {
                        digest.update(&bytes);
                        bytes.clear();
                        let _ = give_back.try_send(bytes);
                    }
                    Request::Hex(tail, reply) => {
                        let mut d = digest.clone();
                        d.update(&tail);
                        let _ = reply.send(hex(d));
                    }
                }
            }
        });
        match started {
            Ok(_) => LogDigest { mode: Mode::Thread { requests, spent } },
            Err(_) => LogDigest { mode: Mode::Inline(Sha256::new()) },
        }
    }

    /// Hash `batch` (after everything before it) and hand back an empty buffer to fill
    /// next, with room for about as much.
    pub fn update(&mut self, batch: String) -> String {
        let capacity = batch.capacity();
        match &mut self.mode {
            Mode::Inline(d) => {
                d.update(batch.as_bytes());
                let mut batch = batch;
                batch.clear();
                batch
            }
            Mode::Thread { requests, spent } => {
                if requests.send(Request::Batch(batch.into_bytes())).is_err() {
                    // The hasher is gone (it cannot panic on its own): nothing to do
                    // but keep the simulation going; `hex` reports it.
                    return String::with_capacity(capacity);
                }
                // An empty buffer is valid UTF-8 whatever it held before.
                match spent.try_recv().map(|mut b| {
                    b.clear();
                    String::from_utf8(b)
                }) {
                    Ok(Ok(s)) => s,
                    _ => String::with_capacity(capacity),
                }
            }
        }
    }

    /// Hex SHA-256 of every batch so far followed by `tail`.
    pub fn hex(&self, tail: &[u8]) -> String {
        match &self.mode {
            Mode::Inline(d) => {
                let mut d = d.clone();
                d.update(tail);
                hex(d)
            }
            Mode::Thread { requests, .. } => {
                let (reply, answer) = mpsc::sync_channel(1);
                if requests.send(Request::Hex(tail.to_vec(), reply)).is_err() {
                    return String::from("unavailable: the digest thread stopped");
                }
                answer.recv().unwrap_or_else(|_| String::from("unavailable: the digest thread stopped"))
            }
        }
    }
}

impl Default for LogDigest {
    fn default() -> Self {
        LogDigest::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many batches through the thread: the digest of their concatenation, and asking
    /// midway does not disturb the stream.
    #[test]
    fn the_thread_hashes_the_stream_in_order() {
        let mut digest = LogDigest::new();
        assert!(matches!(digest.mode, Mode::Thread { .. }));
        let mut whole = Vec::new();
        let mut buf = String::with_capacity(64);
        for i in 0..1_000u32 {
            buf.push_str(&format!("{i} batch\n"));
            whole.extend_from_slice(buf.as_bytes());
            buf = digest.update(buf);
            assert!(buf.is_empty());
            if i % 250 == 0 {
                assert_eq!(digest.hex(b"tail"), hex(Sha256::new_with_prefix([whole.as_slice(), b"tail"].concat())));
            }
        }
        assert_eq!(digest.hex(b""), hex(Sha256::new_with_prefix(&whole)));
    }
}
