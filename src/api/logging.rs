//! The server's log: `tracing` to stderr, as text or JSON lines, with every logged
//! value made safe in one place.
//!
//! Owns: the subscriber setup, and escaping control characters in every field and
//! message of the text format. Clients choose much of what is logged (percent-decoded
//! IPs in control paths, job names, entrypoints); written raw, a `%0a` forged a whole
//! log line and an escape sequence reached the operator's terminal. Escaping here, not
//! at each call site, covers log lines that do not exist yet. The JSON format is safe
//! by construction (serde_json escapes control characters in strings).
//!
//! Must never: write a control character a client sent, or drop a field.

use std::fmt::{self, Write as _};
use tracing::field::Field;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format::{debug_fn, Writer};

/// Install the global subscriber (a no-op if one is already installed): `RUST_LOG`
/// filters (default `info`); `json` selects JSON lines; ANSI colours only on a terminal.
pub fn init(json: bool, ansi: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.fmt_fields(debug_fn(write_field).delimited(" ")).try_init()
    };
}

/// One field as the default text format writes it (`name=value`, the message bare),
/// with control characters escaped.
fn write_field(w: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug) -> fmt::Result {
    let mut text = String::new();
    write!(text, "{value:?}")?;
    if field.name() != "message" {
        write!(w, "{}=", field.name())?;
    }
    w.write_str(&escape_control(&text))
}

/// `s` with every control character (C0, DEL, C1), Unicode line or paragraph separator
/// and bidirectional control (U+202E and its kin, which make a terminal show text in an
/// order other than the bytes') written as a Rust escape (`\n`, `\u{1b}`), so one log
/// record is one line and reads as written, and no client bytes reach a terminal as
/// commands.
pub fn escape_control(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{200e}' | '\u{200f}')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    };
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::escape_control;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape_control("10.0.1.2"), "10.0.1.2");
        assert_eq!(escape_control("a\nb\r\x1b[31mc\u{7f}\u{85}"), "a\\nb\\r\\u{1b}[31mc\\u{7f}\\u{85}");
        assert_eq!(escape_control("x\u{2028}y"), "x\\u{2028}y");
        assert_eq!(escape_control("job\u{202e}txt.exe\u{2066}"), "job\\u{202e}txt.exe\\u{2066}");
        assert_eq!(escape_control("héllo wörld ✓"), "héllo wörld ✓");
    }
}
