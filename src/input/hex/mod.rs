//! Hex and base64 text to bytes, for `kwire decode --hex`, `--hex-file`, stdin and
//! `--base64`.
//!
//! [`parse_hex`] auto-detects the layout of the text (see [`HexFormat`]) and returns the
//! bytes as one or more [`HexChunk`]s; [`parse_base64`] decodes standard or URL-safe base64.
//! Neither splits bytes into Kafka frames: the caller does that with the 4-byte size
//! prefixes. Errors ([`HexError`]) give the 1-based line and column (in characters) of the
//! first problem and what it was; nothing is silently skipped except what a format defines
//! as decoration (offset columns, ASCII columns, comment and blank lines).

//!
//! The layouts each have a module: `plain` (plain hex and `c>s`/`s>c` lines), `dump`
//! (offset dumps: xxd, hexdump, od, Wireshark), `kwire` (kwire's own text output, its
//! byte layouts), `boxed` (hexyl's boxes),
//! `detect` (which layout a text is in) and `b64` (base64); this module holds the
//! chunk and error types, the line and token readers they share, and [`parse_hex`].

mod b64;
mod boxed;
mod detect;
mod dump;
mod kwire;
mod plain;

pub use b64::parse_base64;
use boxed::{hexyl_item, parse_hexyl};
use detect::detect;
pub use detect::detect_format;
use dump::{byte_tokens_split, is_wireshark_label, parse_dump, DumpItem};
pub use kwire::strip_ansi;
use plain::{direction_prefix, parse_directional, parse_plain};

use std::fmt;

/// Largest number of bytes a single `*` repeat line may expand to, and the largest total a
/// dump may produce through repeats (256 MiB). A `*` that would go beyond is an error
/// ([`HexErrorKind::TooLarge`]) rather than an allocation that could abort the process.
pub const MAX_REPEAT_BYTES: usize = 256 << 20;

/// Which way a chunk travelled, as its line said (`c>s` or `s>c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `c>s`: client to server, so the chunk holds requests.
    ClientToServer,
    /// `s>c`: server to client, so the chunk holds responses.
    ServerToClient,
}

/// One chunk of input bytes with the direction its line said, if any.
///
/// A plain hex blob, an `xxd`, `hexdump -C` or `od` dump is one chunk; a direction-prefixed
/// input gives one chunk per line; a Wireshark/tshark dump gives one chunk per packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexChunk {
    /// The direction from a `c>s` / `s>c` line prefix; `None` for dumps without one.
    pub direction: Option<Direction>,
    /// The TCP stream number of a lab PDU line (`c>s STREAM OFFSET HEX`); `None` otherwise.
    /// Kafka correlation ids are per connection, so use it to pair requests and responses.
    pub stream: Option<u64>,
    /// The bytes, never empty.
    pub bytes: Vec<u8>,
    /// 1-based source line where the chunk starts.
    pub line: usize,
}

/// The text layouts [`parse_hex`] recognises; [`detect_format`] tells which one it chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HexFormat {
    /// Hex digits with optional whitespace, newlines, commas, `0x`/`0X` prefixes (per byte
    /// `0x00 0x14` or per blob `0x0014`) and `\x00` escapes. A blob wrapped over several
    /// lines may split a byte across a line break only if those lines hold nothing else.
    Plain,
    /// Lines starting `c>s` or `s>c`. Either the lab PDU layout `c>s STREAM OFFSET HEX`
    /// (STREAM and OFFSET decimal without leading zeros, HEX one token: exactly three fields
    /// after the prefix) or the prefix followed by plain hex (as in [`HexFormat::Plain`]).
    /// Each line is one chunk; every non-comment line must carry a prefix. (`c>s 14 23 0000`
    /// reads as the lab layout: write `c>s 0x14 0x23 0x0000` to mean three hex tokens.)
    Directional,
    /// `xxd` (also `-g N`, `-c N`, `-u`, `-a` with `*` lines):
    /// `00000000: 0000 0023 0014 0006  ....`. The hex area ends at the first two
    /// consecutive spaces; the ASCII column after it is ignored.
    Xxd,
    /// `hexdump -C` / `hd`: `00000000  00 00 00 23 ...  |...#|`, `*` repeat lines and the final
    /// offset-only line. The hex area ends at the first `|`.
    HexdumpC,
    /// `od -t x1` with any `-A x|o|d` offsets (the radix is inferred from the offsets),
    /// optional `z` ASCII column (`>...<`), `*` repeat lines and the final offset-only
    /// line. Recognised only when the first offset is zero and has at least 6 digits.
    Od,
    /// Wireshark "Copy as Hex + ASCII dump" / "Hex Dump" and `tshark -x`:
    /// `0000  00 00 00 23 ...   ...#`, up to 16 bytes a line, hex offsets. Each packet (offset
    /// restarting at zero, usually after a blank line) is one chunk. Label lines such as
    /// `Frame (74 bytes):` or `Reassembled TCP (123 bytes):` start a new chunk. Recognised
    /// only when the first offset is zero and has at least 4 digits.
    Wireshark,
    /// hexyl's boxes, as `kwire read --format hexdump` prints them:
    /// `│00000000│ 00 00 00 23 00 14 00 06 ┊ 00 ... │⋄⋄⋄#⋄•⋄•┊...│`, border lines
    /// `┌──`/`└──`, `│*       │` repeat lines. Each box is one chunk; lines outside the
    /// boxes (kwire's titles) are labels, and the boxes of decompressed buffers (under a
    /// `decompressed buffer N (M bytes)` title) are left out: they are not frames.
    /// Recognised when a line starts with `│`.
    Hexyl,
}

/// What was wrong with the input; see [`HexError`] for where.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HexErrorKind {
    /// A character that is not allowed here (not a hex digit, separator or prefix; for
    /// base64, not in either alphabet).
    InvalidCharacter(char),
    /// A run of hex digits with an odd number of digits (half a byte is missing).
    OddDigitCount,
    /// A `0x` prefix or `\x` escape not followed by hex digits (`\x` needs exactly two).
    EmptyPrefix,
    /// In a byte-per-token dump (`hexdump -C`, `od`, Wireshark), a token that is not exactly
    /// two hex digits; `found` is its length in characters.
    ByteTokenWidth {
        /// Length of the offending token.
        found: usize,
    },
    /// Output of `od` or `hexdump` without `-t x1` / `-C`: 2-byte words in host byte order,
    /// which cannot be read back reliably. Re-run with `od -A x -t x1` or `hexdump -C`.
    WordDump,
    /// A line without a `c>s` / `s>c` prefix in an input where other lines have one.
    MissingDirection,
    /// A `c>s` / `s>c` prefix with no hex after it.
    NoBytesAfterDirection,
    /// A dump line that does not start with an offset (or, for `xxd`, `offset:`).
    ExpectedOffset,
    /// A dump line whose offset does not follow the previous line (lines missing or edited).
    OffsetMismatch {
        /// The offset the previous line implies.
        expected: u64,
        /// The offset the line has.
        found: u64,
    },
    /// A `*` repeat line with no preceding data line to repeat.
    RepeatWithoutPreviousLine,
    /// A `*` repeat line not followed by an offset that lies a whole number of repeated lines
    /// further on (or not followed by an offset line at all).
    UnresolvedRepeat,
    /// An offset or a `*` expansion beyond [`MAX_REPEAT_BYTES`] or 64 bits.
    TooLarge,
    /// Base64 mixing the standard (`+`, `/`) and URL-safe (`-`, `_`) alphabets.
    MixedBase64Alphabets,
    /// Base64 `=` padding somewhere other than the end, or more than two of them.
    Base64Padding,
    /// Base64 whose length cannot be decoded (one symbol too many or too few in the last
    /// group of four), or whose last symbol has stray bits.
    Base64Length,
}

/// A parse error: where (1-based line and column, the column counted in characters) and
/// what ([`HexErrorKind`]). `Display` gives e.g. `line 3, column 7: odd number of hex digits`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexError {
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column (in characters) of the problem.
    pub column: usize,
    /// What was wrong.
    pub kind: HexErrorKind,
}

impl fmt::Display for HexErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HexErrorKind::InvalidCharacter(c) => write!(f, "unexpected character {c:?}"),
            HexErrorKind::OddDigitCount => write!(f, "odd number of hex digits"),
            HexErrorKind::EmptyPrefix => {
                write!(
                    f,
                    "`0x` or `\\x` not followed by hex digits (`\\x` takes two)"
                )
            }
            HexErrorKind::ByteTokenWidth { found } => {
                write!(
                    f,
                    "expected a byte of two hex digits, found {found} characters"
                )
            }
            HexErrorKind::WordDump => write!(
                f,
                "dump of 2-byte words in host byte order; use `od -A x -t x1` or `hexdump -C`"
            ),
            HexErrorKind::MissingDirection => {
                write!(f, "line has no `c>s`/`s>c` prefix while other lines do")
            }
            HexErrorKind::NoBytesAfterDirection => write!(f, "no hex after the direction"),
            HexErrorKind::ExpectedOffset => {
                write!(f, "expected a dump line starting with an offset")
            }
            HexErrorKind::OffsetMismatch { expected, found } => write!(
                f,
                "offset {found:#x} does not follow the previous line (expected {expected:#x})"
            ),
            HexErrorKind::RepeatWithoutPreviousLine => {
                write!(f, "`*` repeat line with no previous line to repeat")
            }
            HexErrorKind::UnresolvedRepeat => write!(
                f,
                "`*` repeat line not followed by an offset a whole number of lines further on"
            ),
            HexErrorKind::TooLarge => write!(f, "offset or repeat too large"),
            HexErrorKind::MixedBase64Alphabets => {
                write!(
                    f,
                    "base64 mixes standard (+ /) and URL-safe (- _) characters"
                )
            }
            HexErrorKind::Base64Padding => write!(f, "base64 `=` padding misplaced"),
            HexErrorKind::Base64Length => write!(f, "base64 length or final symbol invalid"),
        }
    }
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.kind
        )
    }
}

impl std::error::Error for HexError {}

/// One source line: its 1-based number and text without the line terminator.
#[derive(Clone, Copy)]
struct Line<'a> {
    no: usize,
    text: &'a str,
}

impl Line<'_> {
    /// An error at byte index `idx` of this line (must be a char boundary or the end).
    fn err(&self, idx: usize, kind: HexErrorKind) -> HexError {
        let idx = idx.min(self.text.len());
        let column = self.text.get(..idx).map_or(idx, |s| s.chars().count()) + 1;
        HexError {
            line: self.no,
            column,
            kind,
        }
    }

    /// Byte index of the first non-whitespace character (or the length).
    fn indent(&self) -> usize {
        self.text.len() - self.text.trim_start().len()
    }

    /// Blank or `#` comment.
    fn is_ignorable(&self) -> bool {
        let t = self.text.trim();
        t.is_empty() || t.starts_with('#')
    }
}

fn lines(text: &str) -> Vec<Line<'_>> {
    // A byte-order mark from an editor is not part of the data.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .enumerate()
        .map(|(i, l)| Line {
            no: i + 1,
            text: l.strip_suffix('\r').unwrap_or(l),
        })
        .collect()
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Length in bytes of the leading run of ASCII hex digits of `s`.
fn hex_run(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_hexdigit).count()
}

/// The character at byte index `idx` of `s` (for error messages).
fn char_at(s: &str, idx: usize) -> char {
    s.get(idx..).and_then(|t| t.chars().next()).unwrap_or(' ')
}

/// Splits `s` into (byte index, token) pairs at characters for which `sep` holds.
fn tokens(s: &str, sep: impl Fn(char) -> bool) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in s.char_indices() {
        if sep(c) {
            if let Some(st) = start.take() {
                out.push((st, &s[st..i]));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(st) = start {
        out.push((st, &s[st..]));
    }
    out
}

/// Decodes an even-length run of hex digits starting at byte `base` of `line`.
fn push_hex_digits(
    line: &Line,
    base: usize,
    digits: &str,
    out: &mut Vec<u8>,
) -> Result<(), HexError> {
    let run = hex_run(digits);
    if run < digits.len() {
        return Err(line.err(
            base + run,
            HexErrorKind::InvalidCharacter(char_at(digits, run)),
        ));
    }
    if !digits.len().is_multiple_of(2) {
        return Err(line.err(base, HexErrorKind::OddDigitCount));
    }
    for pair in digits.as_bytes().chunks_exact(2) {
        if let (Some(h), Some(l)) = (hex_val(pair[0]), hex_val(pair[1])) {
            out.push(h << 4 | l);
        }
    }
    Ok(())
}

/// Parses pasted or file hex text into byte chunks, auto-detecting the layout (see
/// [`HexFormat`] for each accepted tool format and [`detect_format`] for how it is chosen).
///
/// Blank lines and lines starting with `#` are ignored everywhere. Returns one chunk for a
/// plain blob or an `xxd`/`hexdump -C`/`od` dump (a new chunk if a dump's offsets restart at
/// zero), one chunk per line for `c>s`/`s>c` lines, and one chunk per packet for a
/// Wireshark/tshark dump. Input with no bytes at all gives an empty vector. Dump offsets are
/// checked for continuity and `*` lines expanded up to [`MAX_REPEAT_BYTES`].
///
/// # Errors
/// A [`HexError`] at the first problem: a character that is not hex where hex is expected,
/// an odd number of digits, a missing direction prefix, a dump line without an offset or
/// with one that does not follow, an unresolvable `*`, or `od`/`hexdump` 2-byte-word output.
pub fn parse_hex(text: &str) -> Result<Vec<HexChunk>, HexError> {
    let plain;
    let text = if text.contains('\u{1b}') {
        plain = strip_ansi(text);
        plain.as_str()
    } else {
        text
    };
    if let Some(chunks) = kwire::parse_kwire_text(text) {
        return chunks;
    }
    let all = lines(text);
    let (format, word_dump) = detect(&all);
    if word_dump {
        let l = all.iter().find(|l| !l.is_ignorable()).copied();
        let l = l.unwrap_or(Line { no: 1, text: "" });
        return Err(l.err(l.indent(), HexErrorKind::WordDump));
    }
    match format {
        HexFormat::Plain => parse_plain(&all),
        HexFormat::Directional => parse_directional(&all),
        HexFormat::Hexyl => parse_hexyl(&all),
        f => parse_dump(&all, f),
    }
}

#[cfg(test)]
mod tests;
