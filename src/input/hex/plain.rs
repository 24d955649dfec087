//! Plain hex (runs of digits, `0x` tokens, C arrays) and `c>s`/`s>c` lines (one chunk a
//! line, with its direction and stream).

use super::*;

/// Result of reading one plain-hex token.
pub(super) enum Token {
    /// Complete bytes were appended.
    Done,
    /// A bare token with an odd number of digits: everything but the last digit was
    /// appended; the last nibble is returned.
    OddTail(u8),
}

/// Reads one plain token (`0x...`, `\x..\x..`, or bare digits) at byte `base` of `line`.
/// With `allow_odd`, a bare odd-length token returns its last nibble instead of failing.
pub(super) fn plain_token(
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

pub(super) fn is_plain_sep(c: char) -> bool {
    c.is_whitespace() || c == ','
}

/// Reads a whole line of plain hex (from byte `from`) with no carry between lines.
pub(super) fn plain_line(line: &Line, from: usize, out: &mut Vec<u8>) -> Result<(), HexError> {
    let rest = line.text.get(from..).unwrap_or("");
    for (i, tok) in tokens(rest, is_plain_sep) {
        plain_token(line, from + i, tok, false, out)?;
    }
    Ok(())
}

pub(super) fn parse_plain(all: &[Line]) -> Result<Vec<HexChunk>, HexError> {
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
pub(super) fn direction_prefix(line: &Line) -> Option<(Direction, usize)> {
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
pub(super) fn canonical_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

pub(super) fn parse_directional(all: &[Line]) -> Result<Vec<HexChunk>, HexError> {
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
