//! Offset dumps: xxd, `hexdump -C`, `od -A x -t x1`, tshark/Wireshark hex and kwire's
//! own hexdump format (an offset column, byte columns, an ASCII column; `*` repeats).

use super::*;

/// One line of an offset dump.
pub(super) enum DumpItem<'a> {
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

pub(super) fn is_wireshark_label(t: &str) -> bool {
    let t = t.trim();
    t.ends_with(" bytes):")
        && t.contains('(')
        && !t.starts_with(|c: char| c.is_ascii_hexdigit() && hex_run(t) >= 4)
}

/// Splits the offset off a dump line: (offset digits, their byte index, byte index after).
pub(super) fn dump_offset<'a>(line: &Line<'a>) -> Result<(&'a str, usize, usize), HexError> {
    let ind = line.indent();
    let rest = &line.text[ind..];
    let run = hex_run(rest);
    if run == 0 || run > 16 {
        return Err(line.err(ind, HexErrorKind::ExpectedOffset));
    }
    Ok((&rest[..run], ind, ind + run))
}

/// Reads whitespace-separated two-digit byte tokens from `area` (starting at byte `base`).
pub(super) fn byte_tokens(
    line: &Line,
    base: usize,
    area: &str,
    out: &mut Vec<u8>,
) -> Result<(), HexError> {
    byte_tokens_split(line, base, area, char::is_whitespace, out)
}

/// Reads two-digit byte tokens separated by `sep` from `area` (starting at byte `base`).
pub(super) fn byte_tokens_split(
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

pub(super) fn dump_item(format: HexFormat, line: Line<'_>) -> Result<DumpItem<'_>, HexError> {
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
pub(super) fn wireshark_bytes(line: &Line, from: usize, out: &mut Vec<u8>) -> Result<(), HexError> {
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
pub(super) fn infer_radix(items: &[DumpItem], candidates: &[u32]) -> u32 {
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

pub(super) fn parse_dump(all: &[Line], format: HexFormat) -> Result<Vec<HexChunk>, HexError> {
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
