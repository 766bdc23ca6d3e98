//! An event-log line as the engine writes it: its pieces encoded, not yet text.
//!
//! Owns: the encoding of a line (its time, its source, and each piece of its message as a
//! tag and its raw value) and the one way back to text. Must never: write text that
//! differs by a byte from what formatting the pieces in place writes (`{}` of a time and
//! of a decimal, `{:x}` of a hex number, `{:02x}` of each byte), since the log's digest is
//! the proof that two runs are the same.
//!
//! Turning numbers into digits was a tenth of the engine thread's instructions at
//! scale.yaml (docs/benchmarks-history.md, "The event log's text made off the engine's
//! thread"). The engine writes a tag and eight bytes instead, and the log's text thread
//! (`log_text.rs`) makes the digits beside it.
//!
//! A record: the time (8 bytes, little-endian), the source's length (1 byte) and bytes,
//! then pieces, each a tag and its value, then [`END`].

use super::ids::HEX_DIGITS as HEX;

const END: u8 = 0;
/// Text: its length (4 bytes) and its UTF-8 bytes.
const TEXT: u8 = 1;
/// An unsigned number written as `{}`: 8 bytes.
const DEC: u8 = 2;
/// An unsigned number written as `{:x}`: 8 bytes.
const HEX_NUMBER: u8 = 3;
/// Bytes written as `{:02x}` each: their length (4 bytes) and the bytes.
const HEX_BYTES: u8 = 4;

/// Start a record: the line's time and source (a short literal: past 255 bytes it would
/// be cut). Returns where its message's pieces begin.
#[inline]
pub(super) fn begin(out: &mut Vec<u8>, time_us: u64, source: &'static str) -> usize {
    let source = &source.as_bytes()[..source.len().min(u8::MAX as usize)];
    let mut head = [0u8; 9];
    head[..8].copy_from_slice(&time_us.to_le_bytes());
    head[8] = source.len() as u8;
    out.extend_from_slice(&head);
    out.extend_from_slice(source);
    out.len()
}

#[inline]
fn tagged_bytes(out: &mut Vec<u8>, tag: u8, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("a log piece under 4 GiB");
    let mut head = [tag, 0, 0, 0, 0];
    head[1..].copy_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(bytes);
}

#[inline]
fn tagged_number(out: &mut Vec<u8>, tag: u8, v: u64) {
    let mut piece = [tag, 0, 0, 0, 0, 0, 0, 0, 0];
    piece[1..].copy_from_slice(&v.to_le_bytes());
    out.extend_from_slice(&piece);
}

#[inline]
pub(super) fn text(out: &mut Vec<u8>, s: &str) {
    tagged_bytes(out, TEXT, s.as_bytes());
}

#[inline]
pub(super) fn dec(out: &mut Vec<u8>, v: u64) {
    tagged_number(out, DEC, v);
}

#[inline]
pub(super) fn hex(out: &mut Vec<u8>, v: u64) {
    tagged_number(out, HEX_NUMBER, v);
}

#[inline]
pub(super) fn hex_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    tagged_bytes(out, HEX_BYTES, bytes);
}

/// Formatted text, as `format_args!` writes it: formatted here (it borrows what it
/// formats), its length written once it is known.
pub(super) fn fmt(out: &mut Vec<u8>, args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let at = out.len();
    out.extend_from_slice(&[TEXT, 0, 0, 0, 0]);
    // Writing to a Vec cannot fail.
    let _ = out.write_fmt(args);
    let len = u32::try_from(out.len() - at - 5).expect("a log piece under 4 GiB");
    out[at + 1..at + 5].copy_from_slice(&len.to_le_bytes());
}

#[inline]
pub(super) fn end(out: &mut Vec<u8>) {
    out.push(END);
}

/// Every record in `records` as text, a line each, appended to `text`.
pub(super) fn write_lines(mut records: &[u8], text: &mut Vec<u8>) {
    while !records.is_empty() {
        let time = u64::from_le_bytes(records[..8].try_into().expect("8 bytes"));
        let source_len = usize::from(records[8]);
        text.extend_from_slice(itoa::Buffer::new().format(time).as_bytes());
        text.push(b' ');
        text.extend_from_slice(&records[9..9 + source_len]);
        text.push(b' ');
        let used = write_message(&records[9 + source_len..], text);
        text.push(b'\n');
        records = &records[9 + source_len + used..];
    }
}

/// One record's message (its pieces, from where [`begin`] left off) as text appended to
/// `text`; returns the bytes the pieces took, their end included.
pub(super) fn write_message(pieces: &[u8], text: &mut Vec<u8>) -> usize {
    let mut at = 0;
    loop {
        let tag = pieces[at];
        at += 1;
        match tag {
            END => return at,
            DEC | HEX_NUMBER => {
                let v = u64::from_le_bytes(pieces[at..at + 8].try_into().expect("8 bytes"));
                at += 8;
                if tag == DEC {
                    text.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
                } else {
                    let digits = if v == 0 { 1 } else { 16 - v.leading_zeros() / 4 };
                    text.extend((0..digits).rev().map(|shift| HEX[((v >> (shift * 4)) & 0xf) as usize]));
                }
            }
            TEXT | HEX_BYTES => {
                let len = u32::from_le_bytes(pieces[at..at + 4].try_into().expect("4 bytes")) as usize;
                let bytes = &pieces[at + 4..at + 4 + len];
                at += 4 + len;
                if tag == TEXT {
                    text.extend_from_slice(bytes);
                } else {
                    for b in bytes {
                        text.extend_from_slice(&[HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]]);
                    }
                }
            }
            other => unreachable!("log record tag {other}: records are written only by this module"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each piece comes back as the format it stands for would write it.
    #[test]
    fn a_record_reads_back_as_the_formatted_line() {
        let mut records = Vec::new();
        for v in [0u64, 1, 9, 10, 15, 16, 255, 0xabc, 1 << 40, u64::MAX] {
            let bytes = (v as u32).to_le_bytes();
            begin(&mut records, v, "task");
            hex(&mut records, v);
            text(&mut records, " SUBMITTED job=");
            hex_bytes(&mut records, &bytes);
            fmt(&mut records, format_args!(" attempt={}", v % 7));
            text(&mut records, " n=");
            dec(&mut records, v);
            end(&mut records);
        }
        let mut text = Vec::new();
        write_lines(&records, &mut text);
        let mut expected = String::new();
        for v in [0u64, 1, 9, 10, 15, 16, 255, 0xabc, 1 << 40, u64::MAX] {
            let b = (v as u32).to_le_bytes();
            expected.push_str(&format!(
                "{v} task {v:x} SUBMITTED job={:02x}{:02x}{:02x}{:02x} attempt={} n={v}\n",
                b[0],
                b[1],
                b[2],
                b[3],
                v % 7
            ));
        }
        assert_eq!(String::from_utf8(text).unwrap(), expected);
    }
}
