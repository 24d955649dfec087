//! Hex and base64 text to bytes, for `kwire decode --hex`, `--hex-file`, stdin and
//! `--base64`.
//!
//! [`parse_hex`] auto-detects the layout of the text (see [`HexFormat`]) and returns the
//! bytes as one or more [`HexChunk`]s; [`parse_base64`] decodes standard or URL-safe base64.
//! Neither splits bytes into Kafka frames: the caller does that with the 4-byte size
//! prefixes. Errors ([`HexError`]) give the 1-based line and column (in characters) of the
//! first problem and what it was; nothing is silently skipped except what a format defines
//! as decoration (offset columns, ASCII columns, comment and blank lines).

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

/// Result of reading one plain-hex token.
enum Token {
    /// Complete bytes were appended.
    Done,
    /// A bare token with an odd number of digits: everything but the last digit was
    /// appended; the last nibble is returned.
    OddTail(u8),
}

/// Reads one plain token (`0x...`, `\x..\x..`, or bare digits) at byte `base` of `line`.
/// With `allow_odd`, a bare odd-length token returns its last nibble instead of failing.
fn plain_token(
    line: &Line,
    base: usize,
    tok: &str,
    allow_odd: bool,
    out: &mut Vec<u8>,
) -> Result<Token, HexError> {
    if let Some(rest) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        if rest.is_empty() {
            return Err(line.err(base, HexErrorKind::EmptyPrefix));
        }
        push_hex_digits(line, base + 2, rest, out)?;
        return Ok(Token::Done);
    }
    if tok.starts_with('\\') {
        let b = tok.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'\\' {
                return Err(line.err(base + i, HexErrorKind::InvalidCharacter(char_at(tok, i))));
            }
            if b.get(i + 1) != Some(&b'x') && b.get(i + 1) != Some(&b'X') {
                let j = (i + 1).min(b.len());
                return Err(if j == b.len() {
                    line.err(base + i, HexErrorKind::EmptyPrefix)
                } else {
                    line.err(base + j, HexErrorKind::InvalidCharacter(char_at(tok, j)))
                });
            }
            let digits = tok.get(i + 2..).unwrap_or("");
            if hex_run(digits) < 2 {
                return Err(line.err(base + i, HexErrorKind::EmptyPrefix));
            }
            push_hex_digits(line, base + i + 2, &digits[..2], out)?;
            i += 4;
        }
        return Ok(Token::Done);
    }
    let run = hex_run(tok);
    if run < tok.len() {
        return Err(line.err(
            base + run,
            HexErrorKind::InvalidCharacter(char_at(tok, run)),
        ));
    }
    if !tok.len().is_multiple_of(2) {
        if allow_odd {
            let (even, last) = tok.split_at(tok.len() - 1);
            push_hex_digits(line, base, even, out)?;
            return Ok(Token::OddTail(hex_val(last.as_bytes()[0]).unwrap_or(0)));
        }
        return Err(line.err(base, HexErrorKind::OddDigitCount));
    }
    push_hex_digits(line, base, tok, out)?;
    Ok(Token::Done)
}

fn is_plain_sep(c: char) -> bool {
    c.is_whitespace() || c == ','
}

/// Reads a whole line of plain hex (from byte `from`) with no carry between lines.
fn plain_line(line: &Line, from: usize, out: &mut Vec<u8>) -> Result<(), HexError> {
    let rest = line.text.get(from..).unwrap_or("");
    for (i, tok) in tokens(rest, is_plain_sep) {
        plain_token(line, from + i, tok, false, out)?;
    }
    Ok(())
}

fn parse_plain(all: &[Line]) -> Result<Vec<HexChunk>, HexError> {
    let mut bytes = Vec::new();
    let mut start_line = None;
    // A pending high nibble from a wrapped single-token line, with where it was.
    let mut pending: Option<(u8, usize, usize)> = None;
    for line in all.iter().filter(|l| !l.is_ignorable()) {
        let toks = tokens(line.text, is_plain_sep);
        let single_bare = toks.len() == 1 && hex_run(toks[0].1) == toks[0].1.len();
        for (k, &(i, tok)) in toks.iter().enumerate() {
            start_line.get_or_insert(line.no);
            let mut idx = i;
            let mut tok = tok;
            if let Some((hi, pl, pc)) = pending.take() {
                let first = tok.as_bytes()[0];
                match hex_val(first) {
                    Some(lo) if k == 0 && single_bare => {
                        bytes.push(hi << 4 | lo);
                        idx += 1;
                        tok = &tok[1..];
                    }
                    _ => {
                        return Err(HexError {
                            line: pl,
                            column: pc,
                            kind: HexErrorKind::OddDigitCount,
                        })
                    }
                }
                if tok.is_empty() {
                    continue;
                }
            }
            if let Token::OddTail(n) = plain_token(line, idx, tok, single_bare, &mut bytes)? {
                let at = line.err(idx, HexErrorKind::OddDigitCount);
                pending = Some((n, at.line, at.column));
            }
        }
    }
    if let Some((_, line, column)) = pending {
        return Err(HexError {
            line,
            column,
            kind: HexErrorKind::OddDigitCount,
        });
    }
    Ok(match start_line {
        Some(line) if !bytes.is_empty() => vec![HexChunk {
            direction: None,
            stream: None,
            bytes,
            line,
        }],
        _ => Vec::new(),
    })
}

/// The direction prefix of a line and the byte index after it.
fn direction_prefix(line: &Line) -> Option<(Direction, usize)> {
    let ind = line.indent();
    let head = line.text.get(ind..ind + 3)?;
    let dir = if head.eq_ignore_ascii_case("c>s") {
        Direction::ClientToServer
    } else if head.eq_ignore_ascii_case("s>c") {
        Direction::ServerToClient
    } else {
        return None;
    };
    let after = ind + 3;
    match line.text[after..].chars().next() {
        None => Some((dir, after)),
        Some(c) if c.is_whitespace() => Some((dir, after)),
        _ => None,
    }
}

/// A decimal number as written by the lab PDU tool: digits, no leading zero unless "0".
fn canonical_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

fn parse_directional(all: &[Line]) -> Result<Vec<HexChunk>, HexError> {
    let mut chunks = Vec::new();
    for line in all.iter().filter(|l| !l.is_ignorable()) {
        let Some((direction, after)) = direction_prefix(line) else {
            return Err(line.err(line.indent(), HexErrorKind::MissingDirection));
        };
        let rest = &line.text[after..];
        let toks = tokens(rest, char::is_whitespace);
        let mut bytes = Vec::new();
        let mut stream = None;
        match toks.as_slice() {
            [] => {
                return Err(line.err(
                    line.text.trim_end().len(),
                    HexErrorKind::NoBytesAfterDirection,
                ))
            }
            [(_, s), (_, o), (hi, h)]
                if canonical_decimal(s).is_some() && canonical_decimal(o).is_some() =>
            {
                stream = canonical_decimal(s);
                plain_token(line, after + hi, h, false, &mut bytes)?;
            }
            _ => plain_line(line, after, &mut bytes)?,
        }
        if bytes.is_empty() {
            return Err(line.err(after, HexErrorKind::NoBytesAfterDirection));
        }
        chunks.push(HexChunk {
            direction: Some(direction),
            stream,
            bytes,
            line: line.no,
        });
    }
    Ok(chunks)
}

/// One line of an offset dump.
enum DumpItem<'a> {
    /// An offset (digits as written, and their byte index) and the line's bytes (maybe none:
    /// the final offset-only line).
    Data {
        line: Line<'a>,
        offset: &'a str,
        offset_idx: usize,
        bytes: Vec<u8>,
    },
    /// A `*` line: the previous line repeats until the next offset.
    Star(Line<'a>),
    /// A Wireshark data-source label such as `Frame (74 bytes):`; starts a new chunk.
    Label,
}

fn is_wireshark_label(t: &str) -> bool {
    let t = t.trim();
    t.ends_with(" bytes):")
        && t.contains('(')
        && !t.starts_with(|c: char| c.is_ascii_hexdigit() && hex_run(t) >= 4)
}

/// Splits the offset off a dump line: (offset digits, their byte index, byte index after).
fn dump_offset<'a>(line: &Line<'a>) -> Result<(&'a str, usize, usize), HexError> {
    let ind = line.indent();
    let rest = &line.text[ind..];
    let run = hex_run(rest);
    if run == 0 || run > 16 {
        return Err(line.err(ind, HexErrorKind::ExpectedOffset));
    }
    Ok((&rest[..run], ind, ind + run))
}

/// Reads whitespace-separated two-digit byte tokens from `area` (starting at byte `base`).
fn byte_tokens(line: &Line, base: usize, area: &str, out: &mut Vec<u8>) -> Result<(), HexError> {
    byte_tokens_split(line, base, area, char::is_whitespace, out)
}

/// Reads two-digit byte tokens separated by `sep` from `area` (starting at byte `base`).
fn byte_tokens_split(
    line: &Line,
    base: usize,
    area: &str,
    sep: impl Fn(char) -> bool,
    out: &mut Vec<u8>,
) -> Result<(), HexError> {
    for (i, tok) in tokens(area, sep) {
        let run = hex_run(tok);
        if run < tok.len() {
            return Err(line.err(
                base + i + run,
                HexErrorKind::InvalidCharacter(char_at(tok, run)),
            ));
        }
        if tok.len() != 2 {
            return Err(line.err(base + i, HexErrorKind::ByteTokenWidth { found: tok.len() }));
        }
        push_hex_digits(line, base + i, tok, out)?;
    }
    Ok(())
}

fn dump_item(format: HexFormat, line: Line<'_>) -> Result<DumpItem<'_>, HexError> {
    if format == HexFormat::Hexyl {
        return hexyl_item(line);
    }
    if line.text.trim() == "*" {
        return Ok(DumpItem::Star(line));
    }
    if format == HexFormat::Wireshark && is_wireshark_label(line.text) {
        return Ok(DumpItem::Label);
    }
    let (offset, offset_idx, mut after) = dump_offset(&line)?;
    let text = line.text;
    let mut bytes = Vec::new();
    // Every format needs a separator (or the end) after the offset.
    match text[after..].chars().next() {
        None => {}
        Some(':') if format == HexFormat::Xxd => after += 1,
        Some(c) if c.is_whitespace() && format != HexFormat::Xxd => {}
        Some(c) => return Err(line.err(after, HexErrorKind::InvalidCharacter(c))),
    }
    match format {
        HexFormat::Xxd => {
            // Skip the single space after the colon; the hex area ends at two spaces.
            let start = if text[after..].starts_with(' ') {
                after + 1
            } else {
                after
            };
            let rest = &text[start..];
            let end = rest.find("  ").unwrap_or(rest.len());
            for (i, tok) in tokens(&rest[..end], |c| c == ' ') {
                push_hex_digits(&line, start + i, tok, &mut bytes)?;
            }
        }
        HexFormat::HexdumpC => {
            let rest = &text[after..];
            let end = rest.find('|').unwrap_or(rest.len());
            byte_tokens(&line, after, &rest[..end], &mut bytes)?;
        }
        HexFormat::Od => {
            let rest = &text[after..];
            let trimmed = rest.trim_end();
            let end = match rest.find("  >") {
                Some(p) if trimmed.ends_with('<') => p,
                _ => rest.len(),
            };
            byte_tokens(&line, after, &rest[..end], &mut bytes)?;
        }
        HexFormat::Wireshark => wireshark_bytes(&line, after, &mut bytes)?,
        HexFormat::Plain | HexFormat::Directional | HexFormat::Hexyl => {}
    }
    Ok(DumpItem::Data {
        line,
        offset,
        offset_idx,
        bytes,
    })
}

/// Wireshark's hex area: up to 16 two-digit bytes separated by single spaces (a double
/// space after the eighth in some versions); two or more spaces end it and begin the
/// ASCII column, which may itself look like hex.
fn wireshark_bytes(line: &Line, from: usize, out: &mut Vec<u8>) -> Result<(), HexError> {
    let b = line.text.as_bytes();
    let mut i = from;
    let mut count = 0;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    while i < b.len() && count < 16 {
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        let tok = &line.text[start..i];
        let run = hex_run(tok);
        if run < tok.len() {
            return Err(line.err(
                start + run,
                HexErrorKind::InvalidCharacter(char_at(tok, run)),
            ));
        }
        if tok.len() != 2 {
            return Err(line.err(start, HexErrorKind::ByteTokenWidth { found: tok.len() }));
        }
        push_hex_digits(line, start, tok, out)?;
        count += 1;
        let gap_start = i;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let gap = i - gap_start;
        if gap >= 2 && !(gap == 2 && count == 8) {
            break;
        }
    }
    Ok(())
}

/// Picks the offset radix: the first of 16, 8, 10 under which every pair of consecutive
/// data lines (no `*` or label between, no restart at zero) is contiguous.
fn infer_radix(items: &[DumpItem], candidates: &[u32]) -> u32 {
    'cand: for &r in candidates {
        let mut prev: Option<(u64, usize)> = None;
        for item in items {
            match item {
                DumpItem::Data { offset, bytes, .. } => {
                    let Ok(off) = u64::from_str_radix(offset, r) else {
                        continue 'cand;
                    };
                    if let Some((p, n)) = prev {
                        if off != 0 && p.checked_add(n as u64) != Some(off) {
                            continue 'cand;
                        }
                    }
                    prev = Some((off, bytes.len()));
                }
                DumpItem::Star(_) | DumpItem::Label => prev = None,
            }
        }
        return r;
    }
    candidates.first().copied().unwrap_or(16)
}

fn parse_dump(all: &[Line], format: HexFormat) -> Result<Vec<HexChunk>, HexError> {
    let mut items = Vec::new();
    for line in all.iter().filter(|l| !l.is_ignorable()) {
        items.push(dump_item(format, *line)?);
    }
    let radix = if format == HexFormat::Od {
        infer_radix(&items, &[16, 8, 10])
    } else {
        16
    };

    let mut chunks = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    let mut cur_line = 0;
    let mut expected: Option<u64> = None;
    let mut last: Vec<u8> = Vec::new();
    let mut star: Option<Line> = None;
    let mut finish = |cur: &mut Vec<u8>, line: usize| {
        if !cur.is_empty() {
            chunks.push(HexChunk {
                direction: None,
                stream: None,
                bytes: std::mem::take(cur),
                line,
            });
        }
    };
    let unresolved = |l: &Line| l.err(l.indent(), HexErrorKind::UnresolvedRepeat);

    for item in items {
        match item {
            DumpItem::Star(l) => {
                if last.is_empty() || star.is_some() {
                    return Err(l.err(l.indent(), HexErrorKind::RepeatWithoutPreviousLine));
                }
                star = Some(l);
            }
            DumpItem::Label => {
                if let Some(s) = star.take() {
                    return Err(unresolved(&s));
                }
                finish(&mut cur, cur_line);
                expected = None;
                last.clear();
            }
            DumpItem::Data {
                line,
                offset,
                offset_idx,
                bytes,
            } => {
                let off = u64::from_str_radix(offset, radix)
                    .map_err(|_| line.err(offset_idx, HexErrorKind::TooLarge))?;
                let restart = off == 0 && expected.is_some_and(|e| e != 0);
                if restart {
                    if let Some(s) = star.take() {
                        return Err(unresolved(&s));
                    }
                    finish(&mut cur, cur_line);
                    expected = None;
                    last.clear();
                }
                if let Some(exp) = expected {
                    if let Some(s) = star.take() {
                        let n = last.len() as u64;
                        if off < exp || n == 0 || (off - exp) % n != 0 {
                            return Err(unresolved(&s));
                        }
                        let extra = off - exp;
                        if extra + cur.len() as u64 > MAX_REPEAT_BYTES as u64 {
                            return Err(s.err(s.indent(), HexErrorKind::TooLarge));
                        }
                        for _ in 0..(extra / n) {
                            cur.extend_from_slice(&last);
                        }
                    } else if off != exp {
                        return Err(line.err(
                            offset_idx,
                            HexErrorKind::OffsetMismatch {
                                expected: exp,
                                found: off,
                            },
                        ));
                    }
                }
                if cur.is_empty() {
                    cur_line = line.no;
                }
                expected = Some(
                    off.checked_add(bytes.len() as u64)
                        .ok_or_else(|| line.err(offset_idx, HexErrorKind::TooLarge))?,
                );
                if !bytes.is_empty() {
                    cur.extend_from_slice(&bytes);
                    last = bytes;
                }
            }
        }
    }
    if let Some(s) = star {
        return Err(unresolved(&s));
    }
    finish(&mut cur, cur_line);
    Ok(chunks)
}

/// Offset digits at the start of a trimmed line, and the text after them.
fn split_offset(t: &str) -> (&str, &str) {
    let run = hex_run(t);
    (&t[..run], &t[run..])
}

/// True if `rest` starts with exactly `n` spaces then a token of `width` hex digits
/// followed by whitespace or the end.
fn spaced_token(rest: &str, min_spaces: usize, max_spaces: usize, width: &[usize]) -> bool {
    let spaces = rest.bytes().take_while(|&b| b == b' ').count();
    if spaces < min_spaces || spaces > max_spaces {
        return false;
    }
    let after = &rest[spaces..];
    let run = hex_run(after);
    width.contains(&run) && after[run..].chars().next().is_none_or(char::is_whitespace)
}

/// Tells which layout [`parse_hex`] will read `text` as. Detection looks at the first
/// non-blank, non-comment line (skipping Wireshark labels such as `Frame (74 bytes):`),
/// except that any `c>s`/`s>c` line anywhere makes the input [`HexFormat::Directional`].
#[must_use]
pub fn detect_format(text: &str) -> HexFormat {
    detect(&lines(text)).0
}

/// The format, and whether the first line is an `od`/`hexdump` word dump.
fn detect(all: &[Line]) -> (HexFormat, bool) {
    let content = all.iter().filter(|l| !l.is_ignorable());
    if content.clone().any(|l| direction_prefix(l).is_some()) {
        return (HexFormat::Directional, false);
    }
    if content
        .clone()
        .any(|l| l.text.trim_start().starts_with('│'))
    {
        return (HexFormat::Hexyl, false);
    }
    let first = content
        .clone()
        .find(|l| !is_wireshark_label(l.text))
        .map(|l| l.text.trim_start());
    let Some(first) = first else {
        return (HexFormat::Plain, false);
    };
    let (off, rest) = split_offset(first);
    let zero = !off.is_empty() && off.bytes().all(|b| b == b'0');
    if (1..=16).contains(&off.len())
        && rest.starts_with(':')
        && rest[1..].chars().next().is_none_or(char::is_whitespace)
    {
        (HexFormat::Xxd, false)
    } else if (8..=16).contains(&off.len())
        && spaced_token(rest, 2, 2, &[2])
        && rest.trim_end().ends_with('|')
    {
        (HexFormat::HexdumpC, false)
    } else if zero && off.len() >= 6 && spaced_token(rest, 1, 1, &[4, 8]) {
        (HexFormat::Plain, true)
    } else if zero && off.len() >= 6 && spaced_token(rest, 1, 1, &[2]) {
        (HexFormat::Od, false)
    } else if zero && (4..=8).contains(&off.len()) && spaced_token(rest, 2, 3, &[2]) {
        (HexFormat::Wireshark, false)
    } else {
        (HexFormat::Plain, false)
    }
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
    if let Some(chunks) = parse_kwire_text(text) {
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

/// hexyl boxes: each box is one chunk. The title line before a box, as kwire prints it
/// (`... conn 3: Fetch v11 response, correlation_id 7, ...`), gives the chunk its
/// direction and, from `conn N`, its stream, so `kwire decode` pairs responses with
/// requests as `kwire read` did. The boxes of decompressed buffers (under a
/// `decompressed buffer N (M bytes)` title) are left out: they are not frames.
fn parse_hexyl(all: &[Line]) -> Result<Vec<HexChunk>, HexError> {
    let mut out = Vec::new();
    let mut title: Option<&str> = None;
    let mut boxed: Vec<Line> = Vec::new();
    let mut skipping = false;
    let mut flush = |boxed: &mut Vec<Line>, title: Option<&str>| -> Result<(), HexError> {
        let (direction, stream) = title.map_or((None, None), title_facts);
        for mut c in parse_dump(boxed, HexFormat::Hexyl)? {
            c.direction = direction;
            c.stream = stream;
            out.push(c);
        }
        boxed.clear();
        Ok(())
    };
    for l in all {
        let t = l.text.trim_start();
        if t.starts_with("decompressed buffer ") {
            skipping = true;
        } else if skipping {
            skipping = !t.starts_with('└');
        } else if t.starts_with('│') {
            boxed.push(*l);
        } else if t.starts_with('└') {
            flush(&mut boxed, title)?;
        } else if !t.starts_with('┌') && !t.trim().is_empty() {
            // kwire's titles start `#N` like a comment: they are read for their facts.
            flush(&mut boxed, title)?;
            title = Some(t);
        }
    }
    flush(&mut boxed, title)?;
    Ok(out)
}

/// `text` without ANSI escape sequences (CSI `ESC [ ... final` and two-byte `ESC x`):
/// kwire's coloured output reads back as its plain text.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if it.next() == Some('[') {
            for d in it.by_ref() {
                if ('@'..='~').contains(&d) {
                    break;
                }
            }
        }
    }
    out
}

/// kwire's own text output (`kwire decode`, `kwire read -x` or `-V -x`): blocks of a
/// title or summary line, `byte layout (N bytes, 16 bytes per row)`, a column header and
/// rows `OFFSET  HH HH ...  ASCII`, then the tree, which is left aside. Each byte layout
/// is one chunk, with the direction and connection its title gives; the grids of
/// decompressed buffers are left out (they are not frames). `None` when the text has no
/// byte layout line.
fn parse_kwire_text(text: &str) -> Option<Result<Vec<HexChunk>, HexError>> {
    if !text.lines().any(|l| l.starts_with("byte layout (")) {
        return None;
    }
    let mut out: Vec<HexChunk> = Vec::new();
    let mut title: Option<&str> = None;
    // Some((chunk index, offset width)) while inside a frame's rows; None elsewhere.
    let mut rows: Option<(usize, usize)> = None;
    let mut skipping = false;
    for (i, l) in text.lines().enumerate() {
        if l.starts_with("byte layout (") {
            let (direction, stream) = title.map_or((None, None), title_facts);
            out.push(HexChunk {
                direction,
                stream,
                bytes: Vec::new(),
                line: i + 2,
            });
            rows = Some((out.len() - 1, 0));
            skipping = false;
            continue;
        }
        if l.starts_with("decompressed buffer ") {
            rows = None;
            skipping = true;
            continue;
        }
        let off_len = l.bytes().take_while(u8::is_ascii_hexdigit).count();
        let is_row = off_len >= 4 && l[off_len..].starts_with("  ");
        if is_row && (rows.is_some() || skipping) {
            if let Some((k, _)) = rows {
                let area: String = l[off_len + 2..].chars().take(47).collect();
                for tok in area.split_whitespace() {
                    match u8::from_str_radix(tok, 16) {
                        Ok(b) if tok.len() == 2 => out[k].bytes.push(b),
                        _ => {
                            return Some(Err(HexError {
                                line: i + 1,
                                column: off_len + 3,
                                kind: HexErrorKind::ByteTokenWidth {
                                    found: tok.chars().count(),
                                },
                            }))
                        }
                    }
                }
                rows = Some((k, off_len));
            }
            continue;
        }
        if l.trim_start().starts_with("0  1  2") || l.starts_with("legend:") {
            continue;
        }
        rows = None;
        skipping = false;
        if !l.trim().is_empty() && !l.starts_with(['+', '|', ' ']) {
            title = Some(l);
        }
    }
    out.retain(|c| !c.bytes.is_empty());
    Some(Ok(out))
}

/// The direction and connection of a kwire title or summary line: `request,
/// correlation_id` or `response, correlation_id` (`request corr=` in a summary line), and
/// `conn N:`.
fn title_facts(t: &str) -> (Option<Direction>, Option<u64>) {
    let direction = if t.contains(" request, correlation_id") || t.contains(" request corr=") {
        Some(Direction::ClientToServer)
    } else if t.contains(" response, correlation_id") || t.contains(" response corr=") {
        Some(Direction::ServerToClient)
    } else {
        None
    };
    let stream = t
        .split_once(" conn ")
        .and_then(|(_, r)| r.split_once(':'))
        .and_then(|(n, _)| n.parse().ok());
    (direction, stream)
}

/// One line of a hexyl box: a border or a title (a label), a `*` repeat line, or an
/// offset and up to 16 bytes in two panels split by `┊`; the character panel after the
/// third `│` is ignored.
fn hexyl_item<'a>(line: Line<'a>) -> Result<DumpItem<'a>, HexError> {
    const BAR: char = '│';
    let t = line.text.trim_start();
    if !t.starts_with(BAR) {
        return Ok(DumpItem::Label);
    }
    let start = line.text.len() - t.len() + BAR.len_utf8();
    let Some(end) = line.text[start..].find(BAR).map(|p| start + p) else {
        return Err(line.err(start, HexErrorKind::ExpectedOffset));
    };
    let field = &line.text[start..end];
    let offset = field.trim();
    if offset == "*" {
        return Ok(DumpItem::Star(line));
    }
    let offset_idx = start + (field.len() - field.trim_start().len());
    if offset.is_empty() || offset.len() > 16 || hex_run(offset) != offset.len() {
        return Err(line.err(offset_idx, HexErrorKind::ExpectedOffset));
    }
    let from = end + BAR.len_utf8();
    let to = line.text[from..]
        .find(BAR)
        .map_or(line.text.len(), |p| from + p);
    let mut bytes = Vec::new();
    let area = &line.text[from..to];
    byte_tokens_split(
        &line,
        from,
        area,
        |c| c.is_whitespace() || c == '┊',
        &mut bytes,
    )?;
    Ok(DumpItem::Data {
        line,
        offset,
        offset_idx,
        bytes,
    })
}

/// Decodes base64 text for `kwire decode --base64`: the standard (`+`, `/`) or URL-safe
/// (`-`, `_`) alphabet, chosen by which characters appear, with or without `=` padding.
/// All whitespace (including newlines) is ignored. Empty input gives no bytes.
///
/// # Errors
/// A [`HexError`] naming the line and column of a character outside both alphabets, of the
/// first character that mixes the two alphabets, of misplaced `=` padding, or (for a bad
/// length or stray bits in the last symbol) of the last symbol.
pub fn parse_base64(text: &str) -> Result<Vec<u8>, HexError> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine as _;

    // Every symbol with its position.
    let mut syms: Vec<u8> = Vec::new();
    let mut pos: Vec<(usize, usize)> = Vec::new();
    let mut std_at = None;
    let mut url_at = None;
    let mut pad_at: Option<usize> = None;
    for l in lines(text) {
        for (col, c) in l.text.chars().enumerate() {
            let here = (l.no, col + 1);
            let err = |kind| HexError {
                line: here.0,
                column: here.1,
                kind,
            };
            if c.is_whitespace() {
                continue;
            }
            match c {
                'A'..='Z' | 'a'..='z' | '0'..='9' | '+' | '/' | '-' | '_' => {
                    if pad_at.is_some() {
                        return Err(err(HexErrorKind::Base64Padding));
                    }
                    if matches!(c, '+' | '/') {
                        std_at.get_or_insert(here);
                        if url_at.is_some() {
                            return Err(err(HexErrorKind::MixedBase64Alphabets));
                        }
                    }
                    if matches!(c, '-' | '_') {
                        url_at.get_or_insert(here);
                        if std_at.is_some() {
                            return Err(err(HexErrorKind::MixedBase64Alphabets));
                        }
                    }
                }
                '=' => {
                    let first = *pad_at.get_or_insert(syms.len());
                    // Padding completes a group of four begun by two or three symbols.
                    if first % 4 < 2 || syms.len() - first >= 4 - first % 4 {
                        return Err(err(HexErrorKind::Base64Padding));
                    }
                }
                _ => return Err(err(HexErrorKind::InvalidCharacter(c))),
            }
            syms.push(c as u8);
            pos.push(here);
        }
    }
    let alphabet = if url_at.is_some() {
        &base64::alphabet::URL_SAFE
    } else {
        &base64::alphabet::STANDARD
    };
    let engine = GeneralPurpose::new(
        alphabet,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let at = |i: usize, kind| {
        let (line, column) = pos.get(i).or(pos.last()).copied().unwrap_or((1, 1));
        HexError { line, column, kind }
    };
    engine.decode(&syms).map_err(|e| match e {
        base64::DecodeError::InvalidByte(i, b) => {
            if b == b'=' {
                at(i, HexErrorKind::Base64Padding)
            } else {
                at(i, HexErrorKind::InvalidCharacter(b as char))
            }
        }
        base64::DecodeError::InvalidLastSymbol(i, _) => at(i, HexErrorKind::Base64Length),
        base64::DecodeError::InvalidLength(_) => at(
            pad_at.unwrap_or(syms.len()).saturating_sub(1),
            HexErrorKind::Base64Length,
        ),
        base64::DecodeError::InvalidPadding => at(
            pad_at.unwrap_or(syms.len().saturating_sub(1)),
            HexErrorKind::Base64Padding,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `data` in hexyl's boxes (kwire's settings; with hexyl's `*` lines if `squeeze`).
    fn render_hexyl(data: &[u8], squeeze: bool) -> String {
        let mut out = Vec::new();
        hexyl::PrinterBuilder::new(&mut out)
            .show_color(false)
            .with_border_style(hexyl::BorderStyle::Unicode)
            .enable_squeezing(squeeze)
            .num_panels(2)
            .group_size(1)
            .build()
            .print_all(data)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    /// kwire's own hexdump output reads back: titles give direction and connection, the
    /// boxes of decompressed buffers are left out, a bad byte is found at its column.
    #[test]
    fn kwire_hexdump_reads_back() {
        let mut text = String::from("#4 2024-05-01T10:00:00Z 10.0.0.1:5 -> 10.0.0.2:9092 conn 3: DeleteTopics v6 request, correlation_id 0, header v2, 39 bytes\n");
        text.push_str(&render_hexyl(&dt(), false));
        text.push_str("decompressed buffer 1 (4 bytes)\n");
        text.push_str(&render_hexyl(b"zzzz", false));
        text.push_str(
            "#5 ... conn 3: DeleteTopics v6 response, correlation_id 0, header v1, 36 bytes\n",
        );
        text.push_str(&render_hexyl(&[0, 0, 0, 1, 9], false));
        let chunks = parse_hex(&text).unwrap();
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].bytes, dt());
        assert_eq!(chunks[0].direction, Some(Direction::ClientToServer));
        assert_eq!(chunks[0].stream, Some(3));
        assert_eq!(chunks[0].line, 3);
        assert_eq!(chunks[1].bytes, [0, 0, 0, 1, 9]);
        assert_eq!(chunks[1].direction, Some(Direction::ServerToClient));
        let bad = text.replacen("00 14", "0g 14", 1);
        let e = parse_hex(&bad).unwrap_err();
        assert_eq!((e.line, e.column), (3, 25), "{e}");
        assert_eq!(e.kind, HexErrorKind::InvalidCharacter('g'));
    }

    /// DeleteTopics v6 request, 39 bytes, size prefix 0x23.
    const DT_HEX: &str =
        "000000230014000600000000000000020100000000000000000000000000000000000000000000";

    fn dt() -> Vec<u8> {
        let mut out = Vec::new();
        for i in (0..DT_HEX.len()).step_by(2) {
            out.push(u8::from_str_radix(&DT_HEX[i..i + 2], 16).unwrap());
        }
        out
    }

    /// DeleteTopics bytes, 64 zero bytes, then ASCII that looks like hex and like
    /// the dump separators: 115 bytes, the `star.bin` of the samples below.
    fn star() -> Vec<u8> {
        let mut v = dt();
        v.extend_from_slice(&[0; 64]);
        v.extend_from_slice(b"ab|cd 0x12 |");
        v
    }

    /// The bytes of a single-chunk parse, asserting there is exactly one chunk.
    fn one(text: &str) -> Vec<u8> {
        let chunks = parse_hex(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(chunks.len(), 1, "{chunks:?}");
        assert_eq!(chunks[0].direction, None);
        chunks.into_iter().next().unwrap().bytes
    }

    fn err(text: &str) -> HexError {
        match parse_hex(text) {
            Ok(c) => panic!("expected an error, got {c:?}"),
            Err(e) => e,
        }
    }

    fn printable(b: u8) -> char {
        if (0x20..0x7f).contains(&b) {
            b as char
        } else {
            '.'
        }
    }

    // Renderers reproducing each tool's layout (checked against the real tools in
    // `renderers_match_real_tools` when they are installed).

    /// `xxd` default: 16 bytes, groups of 2, no autoskip.
    fn render_xxd(data: &[u8]) -> String {
        let mut s = String::new();
        for (i, row) in data.chunks(16).enumerate() {
            let mut hex = String::new();
            for (j, b) in row.iter().enumerate() {
                if j > 0 && j % 2 == 0 {
                    hex.push(' ');
                }
                hex.push_str(&format!("{b:02x}"));
            }
            let ascii: String = row.iter().map(|&b| printable(b)).collect();
            s.push_str(&format!("{:08x}: {hex:<39}  {ascii}\n", i * 16));
        }
        s
    }

    /// `hexdump -C`: squeezes repeated lines to `*`, ends with the length.
    fn render_hexdump_c(data: &[u8]) -> String {
        let mut s = String::new();
        let mut prev: Option<&[u8]> = None;
        let mut starred = false;
        for (i, row) in data.chunks(16).enumerate() {
            if prev == Some(row) && row.len() == 16 {
                if !starred {
                    s.push_str("*\n");
                    starred = true;
                }
                continue;
            }
            starred = false;
            prev = Some(row);
            let mut hex = String::new();
            for (j, b) in row.iter().enumerate() {
                hex.push_str(&format!("{b:02x} "));
                if j == 7 {
                    hex.push(' ');
                }
            }
            let ascii: String = row.iter().map(|&b| printable(b)).collect();
            s.push_str(&format!("{:08x}  {hex:<49} |{ascii}|\n", i * 16));
        }
        if !data.is_empty() {
            s.push_str(&format!("{:08x}\n", data.len()));
        }
        s
    }

    /// `od -A x -t x1`: squeezes repeated lines to `*`, ends with the length.
    fn render_od(data: &[u8]) -> String {
        let mut s = String::new();
        let mut prev: Option<&[u8]> = None;
        let mut starred = false;
        for (i, row) in data.chunks(16).enumerate() {
            if prev == Some(row) {
                if !starred {
                    s.push_str("*\n");
                    starred = true;
                }
                continue;
            }
            starred = false;
            prev = Some(row);
            let hex: String = row.iter().map(|b| format!(" {b:02x}")).collect();
            s.push_str(&format!("{:06x}{hex}\n", i * 16));
        }
        s.push_str(&format!("{:06x}\n", data.len()));
        s
    }

    /// `tshark -x`: 4-digit offset, two spaces, bytes, three spaces, ASCII.
    fn render_tshark(data: &[u8]) -> String {
        let mut s = String::new();
        for (i, row) in data.chunks(16).enumerate() {
            let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
            let ascii: String = row.iter().map(|&b| printable(b)).collect();
            s.push_str(&format!(
                "{:04x}  {:<47}   {ascii}\n",
                i * 16,
                hex.join(" ")
            ));
        }
        s
    }

    // Real output of the tools on this machine (xxd 2022-01-14, util-linux hexdump,
    // GNU coreutils od) for the DeleteTopics bytes.
    const XXD: &str = "\
00000000: 0000 0023 0014 0006 0000 0000 0000 0002  ...#............
00000010: 0100 0000 0000 0000 0000 0000 0000 0000  ................
00000020: 0000 0000 0000 00                        .......
";
    const XXD_G1: &str = "\
00000000: 00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02  ...#............
00000010: 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
00000020: 00 00 00 00 00 00 00                             .......
";
    const XXD_U_G4: &str = "\
00000000: 00000023 00140006 00000000 00000002  ...#............
00000010: 01000000 00000000 00000000 00000000  ................
00000020: 00000000 000000                      .......
";
    const XXD_P: &str = "\
000000230014000600000000000000020100000000000000000000000000
000000000000000000
";
    const HEXDUMP_C: &str = "\
00000000  00 00 00 23 00 14 00 06  00 00 00 00 00 00 00 02  |...#............|
00000010  01 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|
00000020  00 00 00 00 00 00 00                              |.......|
00000027
";
    const OD_X: &str = "\
000000 00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02
000010 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
000020 00 00 00 00 00 00 00
000027
";
    const OD_OCTAL: &str = "\
0000000 00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02
0000020 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0000040 00 00 00 00 00 00 00
0000047
";
    const OD_XZ: &str = "\
000000 00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02  >...#............<
000010 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  >................<
000020 00 00 00 00 00 00 00                             >.......<
000027
";
    const TSHARK: &str = "\
0000  00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02   ...#............
0010  01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00   ................
0020  00 00 00 00 00 00 00                              .......
";
    /// Wireshark GUI "Copy as Hex + ASCII Dump": three spaces after the offset.
    const WIRESHARK_COPY: &str = "\
0000   00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02   ...#............
0010   01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00   ................
0020   00 00 00 00 00 00 00                              .......
";

    // The 115-byte `star()` data with `*` lines and hex-looking ASCII.
    const STAR_XXD_A: &str = "\
00000000: 0000 0023 0014 0006 0000 0000 0000 0002  ...#............
00000010: 0100 0000 0000 0000 0000 0000 0000 0000  ................
00000020: 0000 0000 0000 0000 0000 0000 0000 0000  ................
*
00000060: 0000 0000 0000 0061 627c 6364 2030 7831  .......ab|cd 0x1
00000070: 3220 7c                                  2 |
";
    const STAR_XXD_C8: &str = "\
00000000: 0000 0023 0014 0006  ...#....
00000008: 0000 0000 0000 0002  ........
00000010: 0100 0000 0000 0000  ........
00000018: 0000 0000 0000 0000  ........
*
00000060: 0000 0000 0000 0061  .......a
00000068: 627c 6364 2030 7831  b|cd 0x1
00000070: 3220 7c              2 |
";
    const STAR_HEXDUMP_C: &str = "\
00000000  00 00 00 23 00 14 00 06  00 00 00 00 00 00 00 02  |...#............|
00000010  01 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|
00000020  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|
*
00000060  00 00 00 00 00 00 00 61  62 7c 63 64 20 30 78 31  |.......ab|cd 0x1|
00000070  32 20 7c                                          |2 ||
00000073
";
    const STAR_OD_X: &str = "\
000000 00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02
000010 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
000020 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
*
000060 00 00 00 00 00 00 00 61 62 7c 63 64 20 30 78 31
000070 32 20 7c
000073
";
    const STAR_OD_OCTAL: &str = "\
0000000 00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02
0000020 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0000040 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
*
0000140 00 00 00 00 00 00 00 61 62 7c 63 64 20 30 78 31
0000160 32 20 7c
0000163
";
    const STAR_OD_DZ: &str = "\
0000000 00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02  >...#............<
0000016 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  >................<
0000032 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  >................<
*
0000096 00 00 00 00 00 00 00 61 62 7c 63 64 20 30 78 31  >.......ab|cd 0x1<
0000112 32 20 7c                                         >2 |<
0000115
";
    const ZEROS_HEXDUMP_C: &str = "\
00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|
*
00000020
";

    #[test]
    fn plain_variants() {
        let want = dt();
        let spaced: Vec<String> = want.iter().map(|b| format!("{b:02x}")).collect();
        let per_byte_0x: Vec<String> = want.iter().map(|b| format!("0x{b:02X}")).collect();
        let escaped: String = want.iter().map(|b| format!("\\x{b:02x}")).collect();
        let texts = [
            DT_HEX.to_string(),
            format!("  {DT_HEX}  \n"),
            DT_HEX.to_uppercase(),
            format!("0x{DT_HEX}"),
            spaced.join(" "),
            spaced.join("\n"),
            spaced.join(", "),
            per_byte_0x.join(" "),
            per_byte_0x.join(","),
            format!("{},", per_byte_0x.join(", ")),
            escaped.clone(),
            format!("{}\n{}", &escaped[..40], &escaped[40..]),
            XXD_P.to_string(),
            XXD_P.replace('\n', "\r\n"),
            format!("\u{feff}{DT_HEX}"),
            "0000 0023 0014 0006 0000 0000 0000 0002\n0100 0000 0000 0000 0000 0000 0000 0000\n0000 0000 0000 00\n".to_string(),
            // A blob wrapped at an odd width: bytes split across the line break.
            format!("{}\n{}\n{}", &DT_HEX[..31], &DT_HEX[31..62], &DT_HEX[62..]),
            format!("# DeleteTopics v6\n\n{DT_HEX}\n# end\n"),
        ];
        for t in &texts {
            assert_eq!(one(t), want, "{t}");
            assert_eq!(detect_format(t), HexFormat::Plain, "{t}");
        }
        assert_eq!(parse_hex(&format!("\n\n{DT_HEX}")).unwrap()[0].line, 3);
    }

    #[test]
    fn tool_dumps_of_the_same_bytes() {
        let want = dt();
        let cases = [
            (XXD, HexFormat::Xxd),
            (XXD_G1, HexFormat::Xxd),
            (XXD_U_G4, HexFormat::Xxd),
            (HEXDUMP_C, HexFormat::HexdumpC),
            (OD_X, HexFormat::Od),
            (OD_OCTAL, HexFormat::Od),
            (OD_XZ, HexFormat::Od),
            (TSHARK, HexFormat::Wireshark),
            (WIRESHARK_COPY, HexFormat::Wireshark),
        ];
        for (text, format) in cases {
            assert_eq!(detect_format(text), format, "{text}");
            assert_eq!(one(text), want, "{text}");
            let uppercase = text.to_uppercase();
            assert_eq!(one(&uppercase), want, "{uppercase}");
            let crlf = text.replace('\n', "\r\n");
            assert_eq!(one(&crlf), want, "{crlf}");
        }
        assert_eq!(render_xxd(&want), XXD);
        assert_eq!(render_hexdump_c(&want), HEXDUMP_C);
        assert_eq!(render_od(&want), OD_X);
        assert_eq!(render_tshark(&want), TSHARK);
    }

    #[test]
    fn star_repeat_lines() {
        let want = star();
        assert_eq!(want.len(), 115);
        for text in [
            STAR_XXD_A,
            STAR_XXD_C8,
            STAR_HEXDUMP_C,
            STAR_OD_X,
            STAR_OD_OCTAL,
            STAR_OD_DZ,
        ] {
            assert_eq!(one(text), want, "{text}");
        }
        assert_eq!(one(ZEROS_HEXDUMP_C), vec![0; 32]);
        assert_eq!(render_hexdump_c(&want), STAR_HEXDUMP_C);
        assert_eq!(render_od(&want), STAR_OD_X);
    }

    #[test]
    fn wireshark_packets_and_labels() {
        let two = format!("{TSHARK}\n{}", render_tshark(b"\x00\x00\x00\x04abcd"));
        let chunks = parse_hex(&two).unwrap();
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].bytes, dt());
        assert_eq!(chunks[0].line, 1);
        assert_eq!(chunks[1].bytes, b"\x00\x00\x00\x04abcd");
        assert_eq!(chunks[1].line, 5);
        // No blank line between packets: the offset restarting at zero splits them.
        let tight = format!("{TSHARK}{TSHARK}");
        assert_eq!(parse_hex(&tight).unwrap().len(), 2);
        // tshark -x with data-source labels.
        let labelled =
            format!("Frame (39 bytes):\n{TSHARK}\nReassembled TCP (39 bytes):\n{TSHARK}");
        assert_eq!(detect_format(&labelled), HexFormat::Wireshark);
        let chunks = parse_hex(&labelled).unwrap();
        assert_eq!(chunks.len(), 2);
        assert!(chunks.iter().all(|c| c.bytes == dt()));
        // ASCII column full of hex-looking text, and the 8/8 double space some
        // versions print.
        let text = "\
0000  61 62 20 63 64 20 30 31  32 33 34 35 36 37 38 39   ab cd 0123456789
0010  61 62                                              ab
";
        assert_eq!(one(text), b"ab cd 0123456789ab");
    }

    #[test]
    fn direction_lines() {
        let text = format!(
            "# kafka PDUs\nc>s 0 0 {DT_HEX}\ns>c 0 0 0000000400000001\nc>s 1 39 {DT_HEX}\n\nS>C 0000000400000002\ns>c 00 00 00 04 00 00 00 03\nc>s 0x00000004 0x00000004\n"
        );
        assert_eq!(detect_format(&text), HexFormat::Directional);
        let chunks = parse_hex(&text).unwrap();
        use Direction::*;
        let got: Vec<_> = chunks
            .iter()
            .map(|c| (c.direction, c.stream, c.line, c.bytes.len()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(ClientToServer), Some(0), 2, 39),
                (Some(ServerToClient), Some(0), 3, 8),
                (Some(ClientToServer), Some(1), 4, 39),
                (Some(ServerToClient), None, 6, 8),
                (Some(ServerToClient), None, 7, 8),
                (Some(ClientToServer), None, 8, 8),
            ]
        );
        assert_eq!(chunks[0].bytes, dt());
        assert_eq!(chunks[4].bytes, [0, 0, 0, 4, 0, 0, 0, 3]);
    }

    fn at(e: &HexError) -> (usize, usize) {
        (e.line, e.column)
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = err("0000 0023\n0014 00g6\n");
        assert_eq!(at(&e), (2, 8));
        assert_eq!(e.kind, HexErrorKind::InvalidCharacter('g'));
        assert_eq!(e.to_string(), "line 2, column 8: unexpected character 'g'");

        let e = err("00 01 002 03");
        assert_eq!((at(&e), e.kind), ((1, 7), HexErrorKind::OddDigitCount));
        let e = err("000102\n0");
        assert_eq!((at(&e), e.kind), ((2, 1), HexErrorKind::OddDigitCount));
        let e = err("00 0x 01");
        assert_eq!((at(&e), e.kind), ((1, 4), HexErrorKind::EmptyPrefix));
        let e = err("\\x00\\x1");
        assert_eq!((at(&e), e.kind), ((1, 5), HexErrorKind::EmptyPrefix));
        // Non-ASCII: the column counts characters.
        let e = err("00 é1");
        assert_eq!(
            (at(&e), e.kind),
            ((1, 4), HexErrorKind::InvalidCharacter('é'))
        );

        let e = err("c>s 0 0 00000000\n00000000\n");
        assert_eq!((at(&e), e.kind), ((2, 1), HexErrorKind::MissingDirection));
        let e = err("c>s 0 0 00000000\ns>c   \n");
        assert_eq!(
            (at(&e), e.kind),
            ((2, 4), HexErrorKind::NoBytesAfterDirection)
        );
        let e = err("c>s 0 0 0000000");
        assert_eq!((at(&e), e.kind), ((1, 9), HexErrorKind::OddDigitCount));

        // A line dropped from an xxd dump.
        let dropped: String = XXD
            .lines()
            .filter(|l| !l.starts_with("00000010"))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = err(&dropped);
        assert_eq!(at(&e), (2, 1));
        assert_eq!(
            e.kind,
            HexErrorKind::OffsetMismatch {
                expected: 0x10,
                found: 0x20
            }
        );

        let e = err(&HEXDUMP_C.replace("00 14 00 06", "00 14 00 6"));
        assert_eq!(
            (at(&e), e.kind),
            ((1, 32), HexErrorKind::ByteTokenWidth { found: 1 })
        );
        let e = err(&XXD.replace("0000 0023", "0000 0O23"));
        assert_eq!(
            (at(&e), e.kind),
            ((1, 17), HexErrorKind::InvalidCharacter('O'))
        );
        let e = err(&format!("{XXD}garbage\n"));
        assert_eq!((at(&e), e.kind), ((4, 1), HexErrorKind::ExpectedOffset));

        // `*` with nothing after it, at the start, or not a whole number of lines.
        let e = err(
            "00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n*\n",
        );
        assert_eq!((at(&e), e.kind), ((2, 1), HexErrorKind::UnresolvedRepeat));
        let e = err("00000000: 0000  ..\n*\n00000003: 00  .\n");
        assert_eq!((at(&e), e.kind), ((2, 1), HexErrorKind::UnresolvedRepeat));
        let e = err("00000000  00 00  |..|\n*\n*\n");
        assert_eq!(
            (at(&e), e.kind),
            ((3, 1), HexErrorKind::RepeatWithoutPreviousLine)
        );
        let e = err("00000000  00 00  |..|\n*\nfffffffffe\n");
        assert_eq!((at(&e), e.kind), ((2, 1), HexErrorKind::TooLarge));

        // od / hexdump without -t x1 / -C: words in host byte order.
        let e = err("0000000 0000 2300 1400 0600\n0000010 0001\n");
        assert_eq!((at(&e), &e.kind), ((1, 1), &HexErrorKind::WordDump));
        assert!(e.to_string().contains("od -A x -t x1"));
    }

    #[test]
    fn empty_input_gives_no_chunks() {
        assert_eq!(parse_hex("").unwrap(), vec![]);
        assert_eq!(parse_hex("\n  \n# only a comment\n").unwrap(), vec![]);
        assert_eq!(parse_base64(" \n").unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn base64_both_alphabets() {
        let want = star();
        let std = "AAAAIwAUAAYAAAAAAAAAAgEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAGFifGNkIDB4MTIgfA==";
        assert_eq!(parse_base64(std).unwrap(), want);
        assert_eq!(parse_base64(std.trim_end_matches('=')).unwrap(), want);
        let wrapped: String = std
            .as_bytes()
            .chunks(76)
            .map(|c| format!("{}\r\n", std::str::from_utf8(c).unwrap()))
            .collect();
        assert_eq!(parse_base64(&format!("  {wrapped}")).unwrap(), want);
        assert_eq!(parse_base64("AAAAIwAU AAYA\n\tAAAA").unwrap(), dt()[..12]);
        assert_eq!(parse_base64("+/+/").unwrap(), [0xfb, 0xff, 0xbf]);
        assert_eq!(parse_base64("-_-_").unwrap(), [0xfb, 0xff, 0xbf]);
        assert_eq!(parse_base64("-_8=").unwrap(), [0xfb, 0xff]);
        assert_eq!(parse_base64("-_8").unwrap(), [0xfb, 0xff]);
    }

    #[test]
    fn base64_errors() {
        let e = parse_base64("AAAA\nAA*A").unwrap_err();
        assert_eq!(
            (at(&e), e.kind),
            ((2, 3), HexErrorKind::InvalidCharacter('*'))
        );
        let e = parse_base64("+/\n-_").unwrap_err();
        assert_eq!(
            (at(&e), e.kind),
            ((2, 1), HexErrorKind::MixedBase64Alphabets)
        );
        let e = parse_base64("AA==AAAA").unwrap_err();
        assert_eq!((at(&e), e.kind), ((1, 5), HexErrorKind::Base64Padding));
        let e = parse_base64("A===").unwrap_err();
        assert_eq!((at(&e), e.kind), ((1, 2), HexErrorKind::Base64Padding));
        let e = parse_base64("AAA==").unwrap_err();
        assert_eq!((at(&e), e.kind), ((1, 5), HexErrorKind::Base64Padding));
        let e = parse_base64("AAAAA").unwrap_err();
        assert_eq!((at(&e), e.kind), ((1, 5), HexErrorKind::Base64Length));
        // Stray bits in the last symbol ("AB" is not a canonical encoding).
        let e = parse_base64("AAAA\n  AB").unwrap_err();
        assert_eq!((at(&e), e.kind), ((2, 4), HexErrorKind::Base64Length));
    }

    /// Every line of the lab PDU files is one whole frame with a direction.
    #[test]
    fn lab_pdu_files() {
        let Some(shared) = std::env::var_os("KWIRE_SHARED") else {
            if std::env::var("KWIRE_NO_SKIP").as_deref() == Ok("1") {
                panic!("KWIRE_SHARED not set and KWIRE_NO_SKIP=1");
            }
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                concat!(module_path!(), ": skipped: KWIRE_SHARED not set\n").as_bytes(),
            );
            return;
        };
        let dir = std::path::Path::new(&shared).join("captures/lab/hex");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".pdus.txt"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no *.pdus.txt in {}", dir.display());
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let chunks = parse_hex(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let frames = text
                .lines()
                .filter(|l| l.starts_with("c>s") || l.starts_with("s>c"))
                .count();
            assert!(frames > 0, "{}", path.display());
            assert_eq!(chunks.len(), frames, "{}", path.display());
            for c in &chunks {
                let where_ = format!("{}:{}", path.display(), c.line);
                assert!(c.direction.is_some(), "{where_}");
                assert!(c.stream.is_some(), "{where_}");
                assert!(c.bytes.len() >= 4, "{where_}");
                let size = u32::from_be_bytes([c.bytes[0], c.bytes[1], c.bytes[2], c.bytes[3]]);
                assert_eq!(size as usize + 4, c.bytes.len(), "{where_}");
            }
        }
    }

    /// The renderers above and the literal samples agree with the real tools, where
    /// installed (each missing tool is reported and skipped).
    #[test]
    fn renderers_match_real_tools() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        fn run(cmd: &str, args: &[&str], input: &[u8]) -> Option<String> {
            let mut child = Command::new(cmd)
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .ok()?;
            child.stdin.take()?.write_all(input).ok()?;
            let out = child.wait_with_output().ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        }
        let mut data = star();
        data.extend((0..=255u8).cycle().take(700));
        data.extend([0x41; 40]);
        let checks: [(&str, &[&str], &[u8], String); 9] = [
            ("xxd", &[], &dt(), XXD.into()),
            ("xxd", &["-g1"], &dt(), XXD_G1.into()),
            ("xxd", &["-a"], &star(), STAR_XXD_A.into()),
            ("xxd", &[], &data, render_xxd(&data)),
            ("hexdump", &["-C"], &star(), STAR_HEXDUMP_C.into()),
            ("hexdump", &["-C"], &data, render_hexdump_c(&data)),
            ("od", &["-A", "x", "-t", "x1"], &star(), STAR_OD_X.into()),
            ("od", &["-t", "x1"], &star(), STAR_OD_OCTAL.into()),
            ("od", &["-A", "x", "-t", "x1"], &data, render_od(&data)),
        ];
        for (cmd, args, input, expected) in checks {
            match run(cmd, args, input) {
                Some(real) => {
                    assert_eq!(real, expected, "{cmd} {args:?}");
                    assert_eq!(one(&real), input, "{cmd} {args:?}");
                }
                None => {
                    assert!(
                        std::env::var("KWIRE_NO_SKIP").as_deref() != Ok("1"),
                        "{cmd} is not runnable and KWIRE_NO_SKIP=1 forbids skipping"
                    );
                    let _ = std::io::Write::write_all(
                        &mut std::io::stderr(),
                        format!("{}: skipped: {cmd} not runnable\n", module_path!()).as_bytes(),
                    );
                }
            }
        }
    }

    proptest! {
        #[test]
        fn never_panics(text in "\\PC{0,200}") {
            let _ = parse_hex(&text);
            let _ = parse_base64(&text);
        }

        #[test]
        fn never_panics_on_dump_like_text(
            text in "([0-9a-fA-F]{0,9}[: ]{0,3}([0-9a-f]{1,3}[ ]{1,3}){0,18}[|>.* <]{0,3}\n){0,6}"
        ) {
            let _ = parse_hex(&text);
        }

        #[test]
        fn renderings_round_trip(
            data in proptest::collection::vec(
                prop_oneof![Just(0u8), any::<u8>()], 1..300)
        ) {
            prop_assert_eq!(one(&render_xxd(&data)), data.clone());
            prop_assert_eq!(one(&render_hexdump_c(&data)), data.clone());
            prop_assert_eq!(one(&render_od(&data)), data.clone());
            let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
            prop_assert_eq!(one(&hex), data.clone());
            // tshark dumps start at offset zero: one chunk per rendering.
            let chunks = parse_hex(&render_tshark(&data)).unwrap();
            prop_assert_eq!(chunks.len(), 1);
            prop_assert_eq!(&chunks[0].bytes, &data);
            // hexyl boxes, as kwire prints them and squeezed as hexyl does by default.
            for squeeze in [false, true] {
                let text = render_hexyl(&data, squeeze);
                prop_assert_eq!(detect_format(&text), HexFormat::Hexyl);
                prop_assert_eq!(one(&text), data.clone(), "{}", text);
            }
        }

        #[test]
        fn zero_runs_round_trip(head in 0usize..40, zeros in 0usize..200, tail in 0usize..40) {
            let mut data = vec![0x5a; head];
            data.extend(vec![0; zeros]);
            data.extend(vec![0x7c; tail]);
            prop_assume!(!data.is_empty());
            prop_assert_eq!(one(&render_hexdump_c(&data)), data.clone());
            prop_assert_eq!(one(&render_od(&data)), data.clone());
        }
    }
}
