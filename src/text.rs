//! Text forms of bytes and strings shared by every layer: lowercase hex and back, the
//! double-quoted string of the tree and the display filter's string literal, and Kafka's
//! base64 text of a uuid (a topic id as `Uuid.toString()` prints it).
//!
//! Below everything but [`crate::wire`]: it imports nothing from the crate.

use base64::Engine as _;

/// A notice line of capture `label`, as `kwire read A B` names it:
/// `kwire: connection 3: ...` becomes `kwire: A: connection 3: ...`, and a line without
/// the `kwire: ` prefix gets `A: ` before it. A line that already names `label` there
/// (`kwire: A: the capture is cut short`) is left as it is, so no line says it twice.
pub fn named(label: &str, line: String) -> String {
    let (head, rest) = match line.strip_prefix("kwire: ") {
        Some(rest) => ("kwire: ", rest),
        None => ("", line.as_str()),
    };
    if rest
        .strip_prefix(label)
        .is_some_and(|r| r.starts_with(": "))
    {
        return line;
    }
    // A path read again is named `PATH (2)` ([`crate::run::capture_labels`]): its lines
    // that begin with the bare path take the numbered name in its place.
    if let Some(r) = numbered_path(label)
        .and_then(|path| rest.strip_prefix(path))
        .and_then(|r| r.strip_prefix(": "))
    {
        return format!("{head}{label}: {r}");
    }
    format!("{head}{label}: {rest}")
}

/// The path of a numbered capture name (`a.pcap` of `a.pcap (2)`), if `label` is one.
fn numbered_path(label: &str) -> Option<&str> {
    let (path, n) = label.strip_suffix(')')?.rsplit_once(" (")?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(path)
}

/// `n` and the word for it, `one` when `n` is 1, else `many`: `1 message`,
/// `3 messages`, `1 partition entry`, `0 partition entries`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Bytes as a `String`, as `String::from_utf8_lossy(&b).into_owned()` gives it (each
/// invalid sequence as U+FFFD), but moved without a copy when they are UTF-8, and
/// checked by the standard library's validator rather than chunk by chunk: for the
/// html printers' buffers of megabytes, which are UTF-8 by construction.
pub fn utf8_owned(b: Vec<u8>) -> String {
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Lowercase hex of `b`, two digits a byte, no separators (`[0x0a, 0xff]` -> `0aff`).
pub fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

/// The value of one hex digit, either case (`b'a'` and `b'A'` -> 10); `None` for any
/// other byte.
pub fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Bytes from hex: digits of either case, an even number of them, no separators, no
/// `0x`; `None` otherwise (an odd length, any other character).
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks_exact(2)
        .map(|p| Some(hex_digit(p[0])? << 4 | hex_digit(p[1])?))
        .collect()
}

/// A string in double quotes as the tree and the summary show it: `"`, `\`, newline,
/// carriage return and tab escaped C-style, other control characters as `\u{1b}`.
pub fn quote(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    quote_into(&mut out, s);
    // quote_into copies whole characters and writes ASCII escapes: the bytes are UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// [`quote`], appended to `out` (UTF-8). Runs of bytes that need no escape are copied
/// whole; the bytes that may start an escape are the ASCII controls, `"`, `\`, DEL and
/// `0xc2` (the lead byte of the C1 controls U+0080-U+009F, which `char::is_control`
/// also counts).
pub fn quote_into(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f | 0x7f => b"",
            0xc2 if matches!(b.get(i + 1), Some(0x80..=0x9f)) => b"",
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&b[start..i]);
        if esc.is_empty() {
            // `\u{..}`: the code point in lowercase hex, no leading zeros.
            let cp = if c == 0xc2 {
                u32::from(b[i + 1] & 0x3f) | 0x80
            } else {
                u32::from(c)
            };
            out.extend_from_slice(b"\\u{");
            if cp >= 16 {
                out.push(HEX[(cp >> 4) as usize & 15]);
            }
            out.push(HEX[cp as usize & 15]);
            out.push(b'}');
            i += if c == 0xc2 { 2 } else { 1 };
        } else {
            out.extend_from_slice(esc);
            i += 1;
        }
        start = i;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// Lowercase hex of `b` ([`hex`]), appended to `out`.
pub fn hex_into(out: &mut Vec<u8>, b: &[u8]) {
    const D: &[u8; 16] = b"0123456789abcdef";
    out.reserve(b.len() * 2);
    for x in b {
        out.push(D[(x >> 4) as usize]);
        out.push(D[(x & 15) as usize]);
    }
}

/// A string as a display-filter string literal (`-Y`, docs/filter.md), for filters built
/// from other options (`--topic T`): `"`, `\`, newline, tab and carriage return escaped,
/// everything else as it is (the filter's lexer has no `\u{..}` escape; it takes other
/// characters literally).
pub fn filter_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Kafka's own text form of a uuid (`Uuid.toString()` in Kafka's Java code, as topic
/// and directory ids appear in logs and `meta.properties`): URL-safe base64 of its 16
/// bytes, no padding, 22 characters.
pub fn uuid_base64(u: &uuid::Uuid) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(u.as_bytes())
}

/// The uuid of Kafka's base64 text form ([`uuid_base64`]); `None` when `s` is not
/// URL-safe unpadded base64 of exactly 16 bytes.
pub fn base64_uuid(s: &str) -> Option<uuid::Uuid> {
    let b = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .ok()?;
    uuid::Uuid::from_slice(&b).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn named_says_the_capture_once() {
        let n = |l: &str| super::named("a.pcap", l.to_string());
        assert_eq!(
            n("kwire: connection 3: x"),
            "kwire: a.pcap: connection 3: x"
        );
        assert_eq!(n("a.pcap: no such file"), "a.pcap: no such file");
        assert_eq!(n("b.pcap: no such file"), "a.pcap: b.pcap: no such file");
        assert_eq!(n("kwire: a.pcap: cut short"), "kwire: a.pcap: cut short");
        // A name that only starts like the label is not the label.
        assert_eq!(n("kwire: a.pcapng: x"), "kwire: a.pcap: a.pcapng: x");
        // A path read again: its lines that name the bare path take the numbered name.
        let n2 = |l: &str| super::named("a.pcap (2)", l.to_string());
        assert_eq!(
            n2("kwire: a.pcap: cut short"),
            "kwire: a.pcap (2): cut short"
        );
        assert_eq!(
            n2("kwire: a.pcap (2): cut short"),
            "kwire: a.pcap (2): cut short"
        );
        assert_eq!(n2("kwire: frame 3: x"), "kwire: a.pcap (2): frame 3: x");
        assert_eq!(n2("kwire: b.pcap: x"), "kwire: a.pcap (2): b.pcap: x");
        let odd = |l: &str| super::named("a.pcap (x)", l.to_string());
        assert_eq!(odd("kwire: a.pcap: x"), "kwire: a.pcap (x): a.pcap: x");
    }

    #[test]
    fn a_path_given_again_is_numbered_past_every_name_in_use() {
        let l = crate::run::capture_labels(&["a", "b", "a", "a (2)", "a", "-", "-"]);
        let l: Vec<&str> = l.iter().map(|s| &**s).collect();
        assert_eq!(l, ["a", "b", "a (3)", "a (2)", "a (4)", "-", "- (2)"]);
    }

    #[test]
    fn count_is_singular_for_one() {
        assert_eq!(super::count(1, "message", "messages"), "1 message");
        assert_eq!(super::count(0, "message", "messages"), "0 messages");
        assert_eq!(super::count(2, "entry", "entries"), "2 entries");
    }

    use super::*;

    #[test]
    fn utf8_owned_is_from_utf8_lossy() {
        for b in [
            &b"plain"[..],
            "caf\u{e9} \u{2192}".as_bytes(),
            b"bad \xff\xfe end",
            b"\xe2\x82",
            b"",
        ] {
            assert_eq!(utf8_owned(b.to_vec()), String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn hex_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        let h = hex(&all);
        assert_eq!(&h[..8], "00010203");
        assert_eq!(&h[h.len() - 4..], "feff");
        assert_eq!(unhex(&h).as_deref(), Some(all.as_slice()));
        assert_eq!(unhex(&h.to_uppercase()).as_deref(), Some(all.as_slice()));
        assert_eq!(unhex(""), Some(vec![]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("0x00"), None);
        assert_eq!(unhex("00 "), None);
        // A multi-byte character must not split into a false pair.
        assert_eq!(unhex("é0"), None);
    }

    #[test]
    fn quotes() {
        assert_eq!(quote("a\"b\\c\n\x1b"), r#""a\"b\\c\n\u{1b}""#);
        assert_eq!(filter_literal("a\"b\\c\n\x1b"), "\"a\\\"b\\\\c\\n\x1b\"");
    }

    /// The former `quote`, char by char: what [`quote_into`] must give.
    fn quote_chars(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn quote_covers_every_control() {
        for cp in (0u32..0x300).chain([0x2028, 0xfeff, 0x1_f600]) {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            let s = format!("a{c}b{c}");
            assert_eq!(quote(&s), quote_chars(&s), "U+{cp:04X}");
        }
    }

    proptest::proptest! {
        /// The byte-run quoting gives what quoting char by char gave, on any text.
        #[test]
        fn quote_equals_char_by_char(
            s in proptest::collection::vec(proptest::prelude::any::<char>(), 0..40),
            low in proptest::collection::vec(0u32..0x200, 0..40),
        ) {
            let s: String = s.into_iter().collect();
            let l: String = low.into_iter().filter_map(char::from_u32).collect();
            for t in [s.as_str(), l.as_str()] {
                proptest::prop_assert_eq!(quote(t), quote_chars(t));
            }
        }

        #[test]
        fn hex_into_equals_hex(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            let mut out = b"x".to_vec();
            hex_into(&mut out, &b);
            let want = hex(&b);
            proptest::prop_assert_eq!(&out[1..], want.as_bytes());
        }
    }

    #[test]
    fn uuid_text() {
        let u = uuid::Uuid::from_bytes([
            1, 0xa2, 0x27, 0xdc, 0xba, 0xd8, 0x76, 0xc0, 0xb4, 0x54, 0x87, 0x85, 0x49, 0x5f, 0x3b,
            0x8b,
        ]);
        assert_eq!(uuid_base64(&u), "AaIn3LrYdsC0VIeFSV87iw");
        assert_eq!(base64_uuid("AaIn3LrYdsC0VIeFSV87iw"), Some(u));
        assert_eq!(base64_uuid("AaIn3LrYdsC0VIeFSV87"), None);
        assert_eq!(base64_uuid("AaIn3LrYdsC0VIeFSV87i="), None);
    }
}
