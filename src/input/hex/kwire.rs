//! kwire's own text output read back as frames: the byte layouts of `kwire decode`
//! and `kwire read -x`, coloured or not.

use super::boxed::title_facts;
use super::{HexChunk, HexError, HexErrorKind};

/// `text` without ANSI escape sequences (CSI `ESC [ ... final` and two-byte `ESC x`, neither
/// taken across a line break, so lines keep their numbers):
/// kwire's coloured output reads back as its plain text.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // An escape never spans a line: a line break after ESC, or inside an unfinished
        // CSI sequence, is kept, so the lines (and the line numbers of errors) stay those
        // of the input.
        match it.peek() {
            Some('[') => {
                it.next();
                while let Some(&d) = it.peek() {
                    if d == '\n' || d == '\r' {
                        break;
                    }
                    it.next();
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            Some('\n' | '\r') | None => {}
            Some(_) => {
                it.next();
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
pub(super) fn parse_kwire_text(text: &str) -> Option<Result<Vec<HexChunk>, HexError>> {
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
