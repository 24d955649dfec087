//! hexyl's boxed dumps (`│`/`┊` separators, a title line per frame in kwire's output).

use super::*;

/// hexyl boxes: each box is one chunk. The title line before a box, as kwire prints it
/// (`... conn 3: Fetch v11 response, correlation_id 7, ...`), gives the chunk its
/// direction and, from `conn N`, its stream, so `kwire decode` pairs responses with
/// requests as `kwire read` did. The boxes of decompressed buffers (under a
/// `decompressed buffer N (M bytes)` title) are left out: they are not frames.
pub(super) fn parse_hexyl(all: &[Line]) -> Result<Vec<HexChunk>, HexError> {
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

/// The direction and connection of a kwire title or summary line: `request,
/// correlation_id` or `response, correlation_id` (`request corr=` in a summary line), and
/// `conn N:`.
pub(super) fn title_facts(t: &str) -> (Option<Direction>, Option<u64>) {
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
pub(super) fn hexyl_item<'a>(line: Line<'a>) -> Result<DumpItem<'a>, HexError> {
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
