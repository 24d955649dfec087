//! Printers: every output reads the same [`Message`] tree and writes to a
//! `&mut dyn Write`.
//!
//! | format | module | what |
//! |---|---|---|
//! | text | [`text`] | title line, coloured byte grid, object tree (the reference page's layout) |
//! | json | [`json`] | one JSON object per message, one line each (NDJSON) |
//! | values | [`values`] | the message's fields alone, nested by name: the input of `kwire encode` |
//! | summary | [`summary`] | one line a message, like tshark's default output |
//! | hexdump | [`hexdump`] | the raw frame through hexyl |
//! | fields | [`fields`] | `-T fields`: the `-e` fields, one row a message |
//!
//! [`printer::Printer`] is all of them as the capture engine's per-message work
//! ([`crate::run::Work`]).
//!
//! The value formatting (numbers, strings, bytes, uuids, counts) lives here and is
//! shared by every printer. Every printer returns `io::Result` so that a closed pipe can
//! end the output quietly.

pub mod fields;
pub mod hexdump;
pub mod json;
pub mod printer;
pub mod summary;
pub mod text;
pub mod time;
pub mod values;

use std::io::{self, Write};
use std::time::Duration;

use owo_colors::{OwoColorize, Style};

use crate::tree::{Message, Node, Region, Value};

/// How a message is printed.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    /// Use ANSI colours (decide with [`color_enabled`]).
    pub color: bool,
    /// Text: leave out the byte grid.
    pub no_bytes: bool,
    /// Text: print the byte grid alone, without the tree.
    pub bytes_only: bool,
    /// Text: print tree levels down to this depth (root = 0); deeper levels fold into
    /// one `... (N nodes)` line. `None`: no limit.
    pub depth: Option<usize>,
    /// Text: show at most this many elements of an array or record list, then
    /// `... M more`.
    pub max_elements: usize,
    /// Text: do not cut descriptions.
    pub wide: bool,
    /// Text and summary: longest value text before it is elided with its length. For a
    /// string, characters; for bytes, hex digits (so half as many bytes).
    pub max_value_len: usize,
    /// Summary and text: how capture times read (tshark's `-t`; RFC 3339 UTC by default).
    pub time: time::TimeFormat,
    /// The times the relative `time` formats count from, kept up to date by the caller.
    pub time_refs: time::TimeRefs,
    /// JSON: add the frame's bytes as `bytes` (lowercase hex).
    pub json_bytes: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            color: false,
            no_bytes: false,
            bytes_only: false,
            depth: None,
            max_elements: 100,
            wide: false,
            max_value_len: 64,
            time: time::TimeFormat::default(),
            time_refs: time::TimeRefs::default(),
            json_bytes: false,
        }
    }
}

/// Where a message came from (defined with the session, which makes it; re-exported for
/// the printers, which read it).
use crate::session::Context;

/// The `--color` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour, whatever `NO_COLOR` says.
    Always,
    /// Never colour.
    Never,
}

/// Whether to colour: `always` colours, `never` does not, `auto` colours a terminal
/// unless the `NO_COLOR` environment variable is set to a non-empty value.
pub fn color_enabled(choice: ColorChoice, is_tty: bool) -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    color_enabled_with(choice, is_tty, no_color)
}

/// [`color_enabled`] with the `NO_COLOR` reading given.
pub fn color_enabled_with(choice: ColorChoice, is_tty: bool, no_color: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => is_tty && !no_color,
    }
}

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// [`text`]
    #[default]
    Text,
    /// [`json`]
    Json,
    /// [`values`]
    Values,
    /// [`summary`]
    Summary,
    /// [`hexdump`]
    Hexdump,
}

/// Prints one message in `format`.
///
/// # Errors
/// The writer's errors (a closed pipe ends the output).
pub fn render(
    w: &mut dyn Write,
    format: Format,
    msg: &Message<'_>,
    ctx: Option<&Context>,
    opts: &RenderOptions,
) -> io::Result<()> {
    match format {
        Format::Text => text::render(w, msg, ctx, opts),
        Format::Json => json::render(w, msg, ctx, opts.json_bytes),
        Format::Values => values::render(w, msg),
        Format::Summary => summary::render(w, msg, ctx, opts),
        Format::Hexdump => hexdump::render(w, msg, ctx, opts),
    }
}

// ---------------------------------------------------------------------------------------
// Shared value formatting.

/// The largest integer a JSON number carries exactly (2^53).
pub const JSON_EXACT: u64 = 1 << 53;

/// `1 element` / `N elements`.
pub fn count_text(n: u64) -> String {
    if n == 1 {
        "1 element".to_string()
    } else {
        format!("{n} elements")
    }
}

pub use crate::text::{hex, quote};

/// Whether bytes read as text: valid UTF-8 without control characters other than
/// tab, newline and carriage return.
pub fn printable(b: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(b).ok()?;
    let ok = if s.is_ascii() {
        // The usual record value: a byte test the compiler can run many bytes at a time
        // (ASCII control characters are 0x00-0x1f and 0x7f).
        !s.bytes()
            .any(|c| (c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r')) || c == 0x7f)
    } else {
        s.chars()
            .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
    };
    ok.then_some(s)
}

/// How a value reads on a text line (and in summaries).
///
/// `max_len` elides long strings (characters) and bytes (hex digits) with their length
/// in bytes: `"abc..."... (1234 B)`. `as_text` shows printable bytes as a quoted string
/// (record keys and values). [`Value::None`] reads as an empty string.
pub fn value_text(v: &Value<'_>, max_len: usize, as_text: bool) -> String {
    let mut out = Vec::new();
    value_into(&mut out, v, max_len, as_text);
    // Every piece is ASCII or a quoted `&str` cut at a character: UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// [`value_text`], appended to `out` (the tree printer's line buffer).
pub fn value_into(out: &mut Vec<u8>, v: &Value<'_>, max_len: usize, as_text: bool) {
    match v {
        Value::None => {}
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes()),
        Value::UInt(u) => out.extend_from_slice(itoa::Buffer::new().format(*u).as_bytes()),
        Value::Float(f) => {
            let _ = write!(out, "{f}");
        }
        Value::Str(s) => str_into(out, s, max_len),
        Value::Bytes(b) => {
            if as_text {
                if let Some(s) = printable(b) {
                    return str_into(out, s, max_len);
                }
            }
            if b.is_empty() {
                return out.extend_from_slice(b"\"\"");
            }
            let keep = (max_len / 2).max(1);
            if b.len() > keep {
                crate::text::hex_into(out, &b[..keep]);
                out.extend_from_slice(b"... (");
                out.extend_from_slice(itoa::Buffer::new().format(b.len()).as_bytes());
                out.extend_from_slice(b" B)");
            } else {
                crate::text::hex_into(out, b);
            }
        }
        Value::Uuid(u) => out.extend_from_slice(
            u.hyphenated()
                .encode_lower(&mut uuid::Uuid::encode_buffer())
                .as_bytes(),
        ),
        Value::Count(n) => {
            if *n == 1 {
                out.extend_from_slice(b"1 element");
            } else {
                out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes());
                out.extend_from_slice(b" elements");
            }
        }
    }
}

/// A string quoted, cut past `max_len` characters with its length in bytes.
fn str_into(out: &mut Vec<u8>, s: &str, max_len: usize) {
    let max_len = max_len.max(1);
    // No more characters than bytes: a string of at most `max_len` bytes is never cut,
    // and an ASCII one is cut at byte `max_len`.
    let cut = if s.len() <= max_len {
        None
    } else if s.is_ascii() {
        Some(max_len)
    } else {
        s.char_indices().nth(max_len).map(|(cut, _)| cut)
    };
    match cut {
        Some(cut) => {
            crate::text::quote_into(out, &s[..cut]);
            out.extend_from_slice(b"... (");
            out.extend_from_slice(itoa::Buffer::new().format(s.len()).as_bytes());
            out.extend_from_slice(b" B)");
        }
        None => crate::text::quote_into(out, s),
    }
}

/// A value as JSON: integers as numbers while |v| <= 2^53 (else strings), strings as
/// strings, bytes as lowercase hex, uuids canonical, floats as numbers (non-finite ones
/// as strings), and `null` for no value, null and element counts.
pub fn value_json(v: &Value<'_>) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::None | Value::Null | Value::Count(_) => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => {
            if i.unsigned_abs() <= JSON_EXACT {
                J::from(*i)
            } else {
                J::String(i.to_string())
            }
        }
        Value::UInt(u) => {
            if *u <= JSON_EXACT {
                J::from(*u)
            } else {
                J::String(u.to_string())
            }
        }
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(J::Number)
            .unwrap_or_else(|| J::String(f.to_string())),
        Value::Str(s) => J::String((*s).to_string()),
        Value::Bytes(b) => J::String(hex(b)),
        Value::Uuid(u) => J::String(u.hyphenated().to_string()),
    }
}

/// Whether a node's bytes are record data that often hold text: a `key` or `value`
/// inside a record.
pub fn is_record_payload(parent: Option<&Node<'_>>, node: &Node<'_>) -> bool {
    let record = matches!(node.name, "key" | "value" | "Key" | "Value")
        && parent.is_some_and(|p| {
            p.name.starts_with("Record[")
                || p.name.starts_with("Record ")
                || p.name == "Record"
                || p.name.starts_with("Message")
        });
    let header =
        node.name == "headerValue" && parent.is_some_and(|p| p.name.starts_with("Header["));
    record || header
}

/// RFC 3339 UTC time with nanoseconds: `2024-05-01T10:00:00.123456789Z`.
pub fn rfc3339(secs: i64, nanos: u32) -> String {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:09}Z",
            sod / 3600,
            (sod / 60) % 60,
            sod % 60,
            nanos.min(999_999_999)
        );
    }
    // Digit by digit (one per message in every printer): same text as the format above.
    fn digits(s: &mut String, v: u64, width: u32) {
        let mut div = 10u64.pow(width - 1);
        while div > 0 {
            s.push(char::from(b'0' + (v / div % 10) as u8));
            div /= 10;
        }
    }
    let mut s = String::with_capacity(30);
    digits(&mut s, y as u64, 4);
    s.push('-');
    digits(&mut s, m.into(), 2);
    s.push('-');
    digits(&mut s, d.into(), 2);
    s.push('T');
    digits(&mut s, (sod / 3600) as u64, 2);
    s.push(':');
    digits(&mut s, (sod / 60 % 60) as u64, 2);
    s.push(':');
    digits(&mut s, (sod % 60) as u64, 2);
    s.push('.');
    digits(&mut s, nanos.min(999_999_999).into(), 9);
    s.push('Z');
    s
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A latency in milliseconds with microsecond precision (`1.234 ms`).
pub fn latency_text(d: Duration) -> String {
    let mut s = String::with_capacity(12);
    push_latency(&mut s, d);
    s
}

/// The capture context that opens a title and a summary line, appended to `s`:
/// `#3` or `#3-4` (the capture frames), the time in `opts.time`, `SRC -> DST`.
pub(crate) fn push_capture_head(s: &mut String, c: &Context, opts: &RenderOptions) {
    let mut num = itoa::Buffer::new();
    s.push('#');
    s.push_str(num.format(c.frames.0));
    if c.frames.0 != c.frames.1 {
        s.push('-');
        s.push_str(num.format(c.frames.1));
    }
    s.push(' ');
    s.push_str(&time::time_text(c.time, opts.time, &opts.time_refs));
    s.push(' ');
    s.push_str(&c.src);
    s.push_str(" -> ");
    s.push_str(&c.dst);
}

/// [`latency_text`] appended to `s`.
pub(crate) fn push_latency(s: &mut String, d: Duration) {
    use std::fmt::Write as _;
    let _ = write!(s, "{:.3} ms", d.as_secs_f64() * 1000.0);
}

/// The API's name, or `api_key N` when the key is unknown.
pub fn api_label(msg: &Message<'_>) -> String {
    match &msg.api_name {
        Some(n) => n.to_string(),
        None => format!("api_key {}", msg.api_key),
    }
}

/// The API and version of a title or summary line (`Produce v9`). What is not known is
/// `?`: a response whose request is not in the input and that no layout fits is `?`, a
/// version the frame is too short to carry `v?`.
pub fn api_head(msg: &Message<'_>) -> String {
    let mut s = String::with_capacity(24);
    push_api_head(&mut s, msg);
    s
}

/// [`api_head`] appended to `s`.
pub(crate) fn push_api_head(s: &mut String, msg: &Message<'_>) {
    if msg.api_key < 0 && msg.api_name.is_none() {
        s.push('?');
        return;
    }
    let mut num = itoa::Buffer::new();
    match &msg.api_name {
        Some(n) => s.push_str(n),
        None => {
            s.push_str("api_key ");
            s.push_str(num.format(msg.api_key));
        }
    }
    s.push_str(" v");
    if msg.api_version < 0 {
        s.push('?');
    } else {
        s.push_str(num.format(msg.api_version));
    }
}

/// The mark of a guessed layout for title and summary lines, runners-up after it:
/// `guessed (also EndTxn v3, AddOffsetsToTxn v3)`; `None` when the layout was given.
pub fn guess_note(msg: &Message<'_>) -> Option<String> {
    let g = msg.guess.as_ref()?;
    let mut s = String::from("guessed");
    let rest: Vec<String> = g
        .candidates
        .iter()
        .skip(1)
        .map(|c| {
            let mut t = match &c.api_name {
                Some(n) => format!("{n} v{}", c.api_version),
                None => format!("api_key {} v{}", c.api_key, c.api_version),
            };
            if c.direction != msg.direction {
                t.push(' ');
                t.push_str(c.direction.as_str());
            }
            t
        })
        .collect();
    if !rest.is_empty() {
        s.push_str(" (also ");
        s.push_str(&rest.join(", "));
        s.push(')');
    }
    if let Some(b) = &g.beaten {
        let n = |k: usize, w: &str| format!("{k} {w}{}", if k == 1 { "" } else { "s" });
        s.push_str(&format!(
            " over a {} reading with {} and {}",
            b.direction.as_str(),
            n(b.errors, "error"),
            n(b.warnings, "warning")
        ));
    }
    Some(s)
}

// ---------------------------------------------------------------------------------------
// Colours.

/// The colour of a region's bytes and legend entry.
pub fn region_style(r: Region) -> Style {
    match r {
        Region::Frame => Style::new().bright_black(),
        Region::Header => Style::new().cyan(),
        Region::RequestBody => Style::new().green(),
        Region::ResponseBody => Style::new().blue(),
        Region::RecordBatch => Style::new().yellow(),
        Region::Record => Style::new().magenta(),
        Region::TaggedFields => Style::new().bright_black().underline(),
    }
}

/// The style of errors: bold red.
pub fn error_style() -> Style {
    Style::new().red().bold()
}

/// The style of warnings: yellow.
pub fn warning_style() -> Style {
    Style::new().yellow()
}

/// `s` in `style` when `on`, else `s` as it is.
pub fn paint(on: bool, s: &str, style: Style) -> String {
    if on {
        s.style(style).to_string()
    } else {
        s.to_string()
    }
}

/// Runs `f` with the output buffer kept in `cell` on this thread (emptied first), so
/// the printers reuse one allocation from message to message; a buffer that one large
/// message grew past 4 MiB is dropped afterwards rather than kept. Re-entered on the
/// same thread (a printer inside a printer), `f` gets a fresh buffer instead.
pub(crate) fn with_thread_buffer<R>(
    cell: &'static std::thread::LocalKey<std::cell::RefCell<Vec<u8>>>,
    f: impl FnOnce(&mut Vec<u8>) -> R,
) -> R {
    /// A buffer grown past this by one large message is not kept for the next.
    const KEEP: usize = 4 << 20;
    cell.with(|cell| {
        let mut fresh = Vec::new();
        let mut kept = cell.try_borrow_mut();
        let out = match kept.as_deref_mut() {
            Ok(v) => v,
            Err(_) => &mut fresh,
        };
        out.clear();
        let r = f(out);
        if out.capacity() > KEEP {
            *out = Vec::new();
        }
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The former `value_text`, built of `format!` and `String`s: what [`value_into`]
    /// must give.
    fn value_text_old(v: &Value<'_>, max_len: usize, as_text: bool) -> String {
        fn str_text(s: &str, max_len: usize) -> String {
            let max_len = max_len.max(1);
            match s.char_indices().nth(max_len) {
                Some((cut, _)) => format!("{}... ({} B)", quote(&s[..cut]), s.len()),
                None => quote(s),
            }
        }
        match v {
            Value::None => String::new(),
            Value::Null => "null".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::UInt(u) => u.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Str(s) => str_text(s, max_len),
            Value::Bytes(b) => {
                if as_text {
                    if let Some(s) = printable(b) {
                        return str_text(s, max_len);
                    }
                }
                if b.is_empty() {
                    return "\"\"".to_string();
                }
                let keep = (max_len / 2).max(1);
                if b.len() > keep {
                    format!("{}... ({} B)", hex(&b[..keep]), b.len())
                } else {
                    hex(b)
                }
            }
            Value::Uuid(u) => u.hyphenated().to_string(),
            Value::Count(n) => count_text(*n),
        }
    }

    proptest::proptest! {
        /// Every kind of value reads as it read before, at any cut.
        #[test]
        fn value_text_equals_the_former_text(
            chars in proptest::collection::vec(proptest::prelude::any::<char>(), 0..30),
            ascii in "[ -~\t\n]{0,80}",
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..50),
            i in proptest::prelude::any::<i64>(),
            u in proptest::prelude::any::<u64>(),
            f in proptest::prelude::any::<f64>(),
            uuid in proptest::prelude::any::<u128>(),
            max_len in 0usize..70,
            as_text in proptest::prelude::any::<bool>(),
        ) {
            let s: String = chars.into_iter().collect();
            let values = [
                Value::None,
                Value::Null,
                Value::Bool(as_text),
                Value::Int(i),
                Value::UInt(u),
                Value::Float(f),
                Value::Str(&s),
                Value::Str(&ascii),
                Value::Bytes(&bytes),
                Value::Bytes(ascii.as_bytes()),
                Value::Bytes(s.as_bytes()),
                Value::Bytes(&[]),
                Value::Uuid(uuid::Uuid::from_u128(uuid)),
                Value::Count(u % 3),
                Value::Count(u),
            ];
            for v in &values {
                proptest::prop_assert_eq!(
                    value_text(v, max_len, as_text),
                    value_text_old(v, max_len, as_text)
                );
            }
        }
    }
}
