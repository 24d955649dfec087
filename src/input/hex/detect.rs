//! Which layout a text is in ([`HexFormat`]), from its first lines.

use super::*;

/// Offset digits at the start of a trimmed line, and the text after them.
pub(super) fn split_offset(t: &str) -> (&str, &str) {
    let run = hex_run(t);
    (&t[..run], &t[run..])
}

/// True if `rest` starts with exactly `n` spaces then a token of `width` hex digits
/// followed by whitespace or the end.
pub(super) fn spaced_token(
    rest: &str,
    min_spaces: usize,
    max_spaces: usize,
    width: &[usize],
) -> bool {
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
pub(super) fn detect(all: &[Line]) -> (HexFormat, bool) {
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
