//! Tests of the hex and base64 readers.

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
    let labelled = format!("Frame (39 bytes):\n{TSHARK}\nReassembled TCP (39 bytes):\n{TSHARK}");
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

/// An escape character at the end of a line, or a CSI sequence cut by a line break, is
/// not taken with the line break: an error after it is on its own line (the fuzz target
/// `hex` found the error of line 7 reported on line 6, at a column past its end).
#[test]
fn escapes_never_join_lines() {
    assert_eq!(strip_ansi("ab\u{1b}\ncd"), "ab\ncd");
    assert_eq!(strip_ansi("ab\u{1b}[3\ncd"), "ab\ncd");
    assert_eq!(strip_ansi("ab\u{1b}[31mcd\u{1b}[0m"), "abcd");
    assert_eq!(strip_ansi("ab\u{1b}c"), "ab");
    let e = err("0000 00\u{1b}\n0001 01\n0002 0\u{0}\n");
    assert_eq!(
        (at(&e), e.kind),
        ((3, 7), HexErrorKind::InvalidCharacter('\u{0}'))
    );
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
    let e =
        err("00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n*\n");
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
