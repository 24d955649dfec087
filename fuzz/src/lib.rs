//! The fuzz targets' bodies and the invariants they assert, shared with
//! `tests/fuzz_corpus.rs` (which includes this file with `#[path]`) so that the normal
//! tests replay the committed corpus through exactly the same checks.
//!
//! Invariants, for every input:
//! - nothing panics;
//! - every node lies inside its buffer, and every error offset is inside its buffer;
//! - for a decoded frame, the leaves of buffer 0 tile the frame: every byte in exactly
//!   one leaf, in order.
#![allow(dead_code)]

use std::io::Write;
use std::sync::OnceLock;

use kwire::cli::read::{has_error_code, mentions_topic, SchemaPlausibility};
use kwire::decode::{decode, DecodeOptions, Detail, Known, Layout};
use kwire::input::hex::{parse_base64, parse_hex};
use kwire::input::{read_capture, CaptureOptions, Event, FrameKind};
use kwire::render::{summary, RenderOptions};
use kwire::schema::Schema;
use kwire::session::Session;
use kwire::tree::{Buffers, Direction, Message};

/// The embedded schema, parsed once.
pub fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(Schema::embedded)
}

/// Decoder limits for fuzzing: the default depth, a smaller decompression cap (the cap's
/// logic is the same; a 64 MiB bomb per input would only slow the fuzzer down).
pub fn options() -> &'static DecodeOptions {
    static O: OnceLock<DecodeOptions> = OnceLock::new();
    O.get_or_init(|| DecodeOptions {
        max_decompressed: 4 << 20,
        ..DecodeOptions::default()
    })
}

/// [`options`] at the summary detail level.
pub fn summary_options() -> &'static DecodeOptions {
    static O: OnceLock<DecodeOptions> = OnceLock::new();
    O.get_or_init(|| DecodeOptions {
        detail: Detail::Summary,
        ..options().clone()
    })
}

/// [`options`] and [`summary_options`] with a node budget of 64, so that record lists
/// and arrays past a few elements are folded: the two detail levels must still agree and
/// the tree still tile.
pub fn small_budget_options() -> &'static [DecodeOptions; 2] {
    static O: OnceLock<[DecodeOptions; 2]> = OnceLock::new();
    O.get_or_init(|| {
        [options(), summary_options()].map(|o| DecodeOptions {
            max_nodes: 64,
            ..o.clone()
        })
    })
}

/// The topic names a message mentions, as `kwire read --topic` matches them.
fn topics(m: &Message<'_>) -> Vec<String> {
    let mut out = Vec::new();
    m.tree.walk(&mut |n, _| {
        if let kwire::tree::Value::Str(s) = n.value {
            out.push(s.to_string());
        }
        if let Some(t) = n.annotation.and_then(|a| a.strip_prefix("topic ")) {
            out.push(t.to_string());
        }
    });
    out.sort();
    out.dedup();
    out
}

/// A message decoded at the summary detail level keeps what the summary line, the
/// closing counts and `kwire read`'s filters read: the same errors at the same offsets,
/// the same summary line, the same answers to `--topic` and `--errors`.
pub fn check_summary_detail(full: &Message<'_>, sum: &Message<'_>) {
    assert_eq!(
        full.errors(),
        sum.errors(),
        "errors differ at the summary detail level"
    );
    let opts = RenderOptions::default();
    assert_eq!(
        summary::line(full, None, &opts),
        summary::line(sum, None, &opts),
        "summary lines differ"
    );
    assert_eq!(
        has_error_code(full),
        has_error_code(sum),
        "--errors differs"
    );
    for t in topics(full) {
        assert_eq!(
            mentions_topic(full, &t),
            mentions_topic(sum, &t),
            "--topic {t:?} differs"
        );
    }
}

/// Asserts the invariants of one decoded message.
pub fn check_message(m: &Message<'_>) {
    let nbuf = m.buffers.len() as u32;
    m.tree.walk(&mut |n, _| {
        assert!(
            n.buffer <= nbuf,
            "node {:?} in buffer {} of {nbuf}",
            n.name,
            n.buffer
        );
        let len = m.buffer(n.buffer).len();
        assert!(
            n.offset <= len && n.length <= len - n.offset,
            "node {:?} at {}+{} outside buffer {} of {len} bytes",
            n.name,
            n.offset,
            n.length,
            n.buffer
        );
    });
    for e in m.errors() {
        let len = m.buffer(e.buffer).len();
        assert!(
            e.offset <= len,
            "error {:?} at {} outside buffer {} of {len} bytes",
            e.message,
            e.offset,
            e.buffer
        );
    }
    tiles(m);
}

/// The leaves of buffer 0 tile the frame.
pub fn tiles(m: &Message<'_>) {
    let mut leaves = Vec::new();
    m.tree.walk(&mut |n, _| {
        if n.children.is_empty() && n.length > 0 && n.buffer == 0 {
            leaves.push((n.offset, n.length, n.name.to_string()));
        }
    });
    leaves.sort();
    let mut pos = 0;
    for (o, l, name) in leaves {
        assert_eq!(
            o, pos,
            "leaves do not tile buffer 0 at {pos} (leaf {name:?} at {o}+{l})"
        );
        pos = o + l;
    }
    assert_eq!(pos, m.frame.len(), "leaves of buffer 0 end early");
}

/// Target `frame`: byte 0 is an api_key, byte 1 (signed) an api_version, the rest one
/// frame, decoded as a request, as a response to `(api_key, api_version)`, and as a bare
/// request body of `(api_key, api_version)`.
pub fn frame(data: &[u8]) {
    let [k, v, frame @ ..] = data else {
        return;
    };
    let key = i16::from(*k);
    let ver = i16::from(*v as i8);
    let bare = Known {
        api_key: Some(key),
        api_version: Some(ver),
        layout: Layout {
            size_prefix: false,
            header: false,
        },
        ..Known::request()
    };
    for known in [Known::request(), Known::response(key, ver), bare] {
        let arena = Buffers::new();
        let m = decode(schema(), options(), &arena, frame, &known);
        check_message(&m);
        let arena2 = Buffers::new();
        let s = decode(schema(), summary_options(), &arena2, frame, &known);
        check_summary_detail(&m, &s);
        let [full, sum] = small_budget_options();
        let (arena, arena2) = (Buffers::new(), Buffers::new());
        let m = decode(schema(), full, &arena, frame, &known);
        check_message(&m);
        let s = decode(schema(), sum, &arena2, frame, &known);
        check_summary_detail(&m, &s);
    }
}

/// Target `pages`: the page printers of `read`/`decode --format md|html` under the
/// budgets. Byte 0: bits 0-1 the node budget (16, 64, 256 or the default 200,000), bits
/// 2-3 `--max-elements` (1, 3, 100, 100), bit 4 `--depth 3`, bit 5 a response (else a
/// request), bit 6 a second message (the same frame again, so that the HTML pairs or
/// queues); byte 1 an api_key, byte 2 (signed) an api_version, the rest one frame.
/// Invariants: nothing panics; the HTML is one whole document whose tree shows exactly
/// the lines of the text tree (node, error, warning, `... M more` and `... (N nodes)`
/// rows), and whose every byte grid accounts for every byte of its buffer (cells, and
/// collapsed rows whose `data-n` says how many bytes they stand for); the HTML is at
/// most a fixed multiple of what it shows (cells and rows); the Markdown's fences are
/// its own and balanced.
pub fn pages(data: &[u8]) {
    use kwire::page::frames::{markdown, Doc};
    use kwire::render::text as rtext;
    let [ctl, k, v, frame @ ..] = data else {
        return;
    };
    let key = i16::from(*k);
    let ver = i16::from(*v as i8);
    let opts = DecodeOptions {
        max_nodes: [16, 64, 256, DecodeOptions::DEFAULT_MAX_NODES][usize::from(ctl & 3)],
        ..options().clone()
    };
    let ropts = RenderOptions {
        color: false,
        max_elements: [1, 3, 100, 100][usize::from((ctl >> 2) & 3)],
        depth: (ctl & 0x10 != 0).then_some(3),
        ..RenderOptions::default()
    };
    let known = if ctl & 0x20 != 0 {
        Known::response(key, ver)
    } else {
        Known::request()
    };
    let arena = Buffers::new();
    let m = decode(schema(), &opts, &arena, frame, &known);
    check_message(&m);

    let mut doc = Doc::new("fuzz");
    let mut html = Vec::new();
    let copies = if ctl & 0x40 != 0 { 2 } else { 1 };
    for _ in 0..copies {
        doc.add(&mut html, schema(), &m, None, 0, &ropts)
            .expect("writing into a Vec");
    }
    doc.finish(&mut html).expect("writing into a Vec");
    let html = String::from_utf8(html).expect("the HTML is UTF-8");
    assert!(html.starts_with("<!DOCTYPE html>"), "a whole document");
    assert!(html.trim_end().ends_with("</html>"), "a whole document");
    let mut text = Vec::new();
    rtext::tree(&mut text, &m, &ropts).expect("writing into a Vec");
    let lines = String::from_utf8_lossy(&text).lines().count();
    for n in 1..=copies {
        let section = html
            .split(&format!("<section class=\"msg\" id=\"m{n}\">"))
            .nth(1)
            .and_then(|s| s.split("</section>").next())
            .expect("the message's section");
        let rows = section.matches("<div class=\"row").count();
        assert_eq!(rows, lines, "the HTML tree shows the text tree's lines");
        let mut cells_all = 0;
        for id in 0..=m.buffers.len() {
            let grid = section
                .split(&format!("<table class=\"grid\" data-g=\"m{n}-{id}\">"))
                .nth(1)
                .and_then(|g| g.split("</table>").next())
                .expect("a grid per buffer");
            let cells = grid.matches("<td class=\"b ").count();
            let gaps: usize = grid
                .split("<tr class=\"gap\" data-n=\"")
                .skip(1)
                .map(|s| {
                    s.split('"')
                        .next()
                        .and_then(|x| x.parse::<usize>().ok())
                        .expect("a gap's byte count")
                })
                .sum();
            assert_eq!(
                cells + gaps,
                m.buffer(id as u32).len(),
                "grid {id} accounts for every byte"
            );
            cells_all += cells + grid.matches("<tr").count();
        }
        // What a section holds beyond its cells and rows is bounded per cell and row
        // (each at most a few hundred bytes, values cut at --max-value-len).
        let bound = 8192 + 200 * cells_all + 2048 * rows + 64 * frame.len();
        assert!(
            section.len() <= bound,
            "{} bytes for {cells_all} cells and {rows} rows",
            section.len()
        );
    }

    let mut md = Vec::new();
    markdown(&mut md, schema(), 1, &m, None, &ropts).expect("writing into a Vec");
    let md = String::from_utf8_lossy(&md);
    // Fences (lines starting with three backticks after at most three spaces) are the
    // printer's own, opening and closing in turn: no value opens or closes one.
    let mut open = false;
    for l in md.lines() {
        let t = l.trim_start_matches(' ');
        if l.len() - t.len() > 3 || !t.starts_with("```") {
            continue;
        }
        if open {
            assert_eq!(t, "```", "a fence closes: {l:?}");
        } else {
            assert!(t == "```text" || t == "```json", "a fence opens: {l:?}");
        }
        open = !open;
    }
    assert!(!open, "fences balanced");
}

/// Target `capture`: the bytes as a pcap or pcapng file, read with reassembly (broker
/// port 9092, then with server detection on every connection), every frame decoded with
/// request/response pairing.
pub fn capture(data: &[u8]) {
    for detect in [false, true] {
        let opts = CaptureOptions {
            detect,
            max_frame: 1 << 20,
            max_out_of_order: 1 << 20,
            read_buffer: 64 << 10,
            ..CaptureOptions::default()
        };
        let plaus = SchemaPlausibility(schema());
        let mut session = Session::new(schema(), options());
        // A second session at the summary detail level: pairing, protocol types and
        // topic ids must come out the same.
        let mut summary_session = Session::new(schema(), summary_options());
        let mut frames = 0u64;
        let res = read_capture(data, &opts, &plaus, |ev| {
            if let Event::Frame(f) = ev {
                frames += 1;
                assert!(f.bytes.len() >= 4, "a frame of {} bytes", f.bytes.len());
                if !f.ctx.incomplete {
                    let size = u32::from_be_bytes([f.bytes[0], f.bytes[1], f.bytes[2], f.bytes[3]]);
                    assert_eq!(
                        size as usize + 4,
                        f.bytes.len(),
                        "a complete frame whose size prefix disagrees with its length"
                    );
                }
                let arena = Buffers::new();
                let (m, ctx) = session.decode(&f, &arena);
                let arena2 = Buffers::new();
                let (s, ctx2) = summary_session.decode(&f, &arena2);
                check_summary_detail(&m, &s);
                assert_eq!(ctx.latency, ctx2.latency, "pairing differs");
                assert_eq!((m.api_key, m.api_version), (s.api_key, s.api_version));
                if f.kind == FrameKind::Kafka {
                    let want = if f.ctx.direction == kwire::input::Direction::ToServer {
                        Direction::Request
                    } else {
                        Direction::Response
                    };
                    assert_eq!(m.direction, want);
                }
                check_message(&m);
            }
        });
        if let Ok(stats) = res {
            assert_eq!(
                stats.frames, frames,
                "frames counted and frames emitted differ"
            );
        }
    }
}

/// Target `tls`: a key log and a capture of TLS connections. The input is a 2-byte
/// big-endian length `L`, `L` bytes of NSS key log text, then a pcap or pcapng file read
/// with broker port 9093 and those keys (the seeds are the TLS lab's captures with their
/// key logs, so records decrypt and mutations hit the record, handshake and decryption
/// paths). Then the capture bytes again, cut into chunks, straight into one
/// [`kwire::input::tls::TlsConn`] as the two directions' streams. Invariants: nothing
/// panics; every decoded message passes [`check_message`]; a decrypted frame names TLS
/// records in ascending order; no notice and no key log problem holds a logged secret.
pub fn tls(data: &[u8]) {
    use kwire::input::tcp::Delivery;
    use kwire::input::tls::{KeyLog, TlsConn, TlsOut};
    if data.len() < 2 {
        return;
    }
    let l = (u16::from_be_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
    let (text, cap) = data[2..].split_at(l);
    let mut keys = KeyLog::new();
    let problems = keys.add_text(text, "fuzz");
    // the logged secrets, as they would print (hex, at least 16 digits)
    let secrets: Vec<String> = String::from_utf8_lossy(text)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(|s| s.to_ascii_lowercase()))
        .filter(|s| s.len() >= 16 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .collect();
    let leaks = |t: &str| {
        let t = t.to_ascii_lowercase();
        secrets.iter().any(|s| t.contains(s.as_str()))
    };
    for p in &problems {
        assert!(
            !leaks(&p.to_string()),
            "a key log problem shows a secret: {p}"
        );
    }
    let opts = CaptureOptions {
        ports: vec![9093],
        max_frame: 1 << 20,
        max_out_of_order: 1 << 20,
        read_buffer: 64 << 10,
        tls_keys: std::sync::Arc::new(keys.clone()),
        ..CaptureOptions::default()
    };
    let plaus = SchemaPlausibility(schema());
    let mut session = Session::new(schema(), options());
    let _ = read_capture(cap, &opts, &plaus, |ev| match ev {
        Event::Notice(n) => assert!(!leaks(&n.to_string()), "a notice shows a secret: {n}"),
        Event::Frame(f) => {
            if let Some(t) = &f.ctx.tls {
                assert!(t.records.windows(2).all(|w| w[0] < w[1]), "{:?}", t.records);
            }
            let arena = Buffers::new();
            let (m, _) = session.decode(&f, &arena);
            check_message(&m);
        }
    });
    // the same bytes as the two directions of one TLS connection
    let mut conn = TlsConn::new(1, "fuzz".into(), None);
    let mut offs = [0u64; 2];
    let mut next_plain = [0u64; 2];
    let mut out = Vec::new();
    let mut rest = cap;
    let mut frame = 0u64;
    while rest.len() >= 3 {
        let side = (rest[0] & 1) as usize;
        let n = (u16::from_be_bytes([rest[1], rest[2]]) as usize).min(rest.len() - 3);
        frame += 1;
        let d = if rest[0] & 0x80 != 0 {
            Delivery::Gap {
                offset: offs[side],
                len: n as u64,
                frame,
            }
        } else {
            Delivery::Data {
                offset: offs[side],
                bytes: rest[3..3 + n].to_vec(),
                frame,
                time: Default::default(),
            }
        };
        offs[side] += n as u64;
        conn.data(side, d, &keys, &mut out);
        rest = &rest[3 + n..];
    }
    conn.finish(frame, &mut out);
    for o in out {
        match o {
            TlsOut::Notice(n) => assert!(!leaks(&n.to_string()), "a notice shows a secret: {n}"),
            TlsOut::Plain(side, Delivery::Data { offset, bytes, .. }) => {
                assert_eq!(offset, next_plain[side], "plaintext not end to end");
                next_plain[side] += bytes.len() as u64;
            }
            TlsOut::Plain(_, Delivery::Gap { .. }) => {}
            // Plaintext of a record the budget gave up (`TlsConn::shed`): a gap in it.
            TlsOut::Lost {
                side, offset, len, ..
            } => {
                assert_eq!(offset, next_plain[side], "plaintext not end to end");
                next_plain[side] += len;
            }
        }
    }
    let sum = conn.summary();
    assert!(sum.decrypted_records + sum.encrypted_records <= frame * 4096 + 2);
}

/// Where a hex or base64 error may point: a line of the text, a column inside it or
/// just past its end.
fn check_position(text: &str, line: usize, column: usize) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    assert!(
        line >= 1 && line <= lines.len(),
        "error line {line} of {}",
        lines.len()
    );
    let width = lines[line - 1].chars().count();
    assert!(
        column >= 1 && column <= width + 1,
        "error column {column} on line {line} of {width} characters"
    );
}

/// Target `hex`: the bytes (as lossy UTF-8 text) through `parse_hex` and `parse_base64`.
/// Errors point inside the text; what parses re-encodes (as plain hex, as base64) and
/// parses back to the same bytes.
pub fn hex(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let nlines = text.split('\n').count();
    match parse_hex(&text) {
        Ok(chunks) => {
            let mut all = Vec::new();
            for c in &chunks {
                assert!(!c.bytes.is_empty(), "an empty chunk at line {}", c.line);
                assert!(
                    c.line >= 1 && c.line <= nlines,
                    "chunk line {} of {nlines}",
                    c.line
                );
                all.extend_from_slice(&c.bytes);
            }
            if !all.is_empty() && all.len() <= 1 << 16 {
                let mut plain = String::with_capacity(all.len() * 2);
                for b in &all {
                    let _ = std::fmt::Write::write_fmt(&mut plain, format_args!("{b:02x}"));
                }
                let back = parse_hex(&plain).expect("plain hex of parsed bytes parses");
                assert_eq!(back.len(), 1);
                assert_eq!(back[0].bytes, all, "plain hex round trip");
            }
        }
        Err(e) => check_position(&text, e.line, e.column),
    }
    match parse_base64(&text) {
        Ok(bytes) => {
            use base64::Engine as _;
            let enc = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let back = parse_base64(&enc).expect("base64 of parsed bytes parses");
            assert_eq!(back, bytes, "base64 round trip");
        }
        Err(e) => check_position(&text, e.line, e.column),
    }
}

// ---------------------------------------------------------------------------------------
// Record batches.

/// A Produce v9 request (flexible) with one topic `t`, one partition, and `records` as
/// its Records field.
pub fn produce_v9(records: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, 0, 0]; // size, patched below
    b.extend([0, 0, 0, 9]); // api_key 0, api_version 9
    b.extend(1i32.to_be_bytes()); // correlation_id
    b.extend([0, 0]); // client_id ""
    b.push(0); // header tagged fields
    b.push(0); // TransactionalId: null
    b.extend((-1i16).to_be_bytes()); // Acks
    b.extend(30_000i32.to_be_bytes()); // TimeoutMs
    b.push(2); // TopicData: 1 element
    b.extend([2, b't']); // Name "t"
    b.push(2); // PartitionData: 1 element
    b.extend(0i32.to_be_bytes()); // Index
    uvarint(&mut b, records.len() as u64 + 1);
    b.extend(records);
    b.extend([0, 0, 0]); // tagged fields: partition, topic, body
    sized(b)
}

/// A Fetch v4 response (not flexible, header v0) with one topic `t`, one partition, and
/// `records` as its Records field.
pub fn fetch_v4_response(records: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, 0, 0];
    b.extend(1i32.to_be_bytes()); // correlation_id
    b.extend(0i32.to_be_bytes()); // ThrottleTimeMs
    b.extend(1i32.to_be_bytes()); // Responses: 1 element
    b.extend([0, 1, b't']); // Topic "t"
    b.extend(1i32.to_be_bytes()); // Partitions: 1 element
    b.extend(0i32.to_be_bytes()); // PartitionIndex
    b.extend(0i16.to_be_bytes()); // ErrorCode
    b.extend(100i64.to_be_bytes()); // HighWatermark
    b.extend(100i64.to_be_bytes()); // LastStableOffset
    b.extend((-1i32).to_be_bytes()); // AbortedTransactions: null
    b.extend((records.len() as i32).to_be_bytes());
    b.extend(records);
    sized(b)
}

fn uvarint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn sized(mut b: Vec<u8>) -> Vec<u8> {
    let n = (b.len() - 4) as u32;
    b[..4].copy_from_slice(&n.to_be_bytes());
    b
}

/// Compresses `data` with the codec of attributes bits 0-2 (as Kafka's clients do:
/// gzip, raw snappy, LZ4 frame, zstd); other codecs leave it as is.
pub fn compress(codec: u8, data: &[u8]) -> Vec<u8> {
    match codec {
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
        2 => snap::raw::Encoder::new()
            .compress_vec(data)
            .unwrap_or_default(),
        3 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
        4 => zstd::encode_all(data, 1).unwrap_or_default(),
        _ => data.to_vec(),
    }
}

/// A RecordBatch v2 around `records` (already compressed if `attrs` says so), with a
/// valid CRC-32C.
pub fn batch_v2(base_offset: i64, attrs: i16, count: i32, records: &[u8]) -> Vec<u8> {
    let mut a = Vec::new();
    a.extend(attrs.to_be_bytes());
    a.extend((count - 1).max(0).to_be_bytes()); // lastOffsetDelta
    a.extend(1_714_564_800_123i64.to_be_bytes()); // baseTimestamp
    a.extend(1_714_564_800_123i64.to_be_bytes()); // maxTimestamp
    a.extend((-1i64).to_be_bytes()); // producerId
    a.extend((-1i16).to_be_bytes()); // producerEpoch
    a.extend((-1i32).to_be_bytes()); // baseSequence
    a.extend(count.to_be_bytes());
    a.extend(records);
    let mut b = base_offset.to_be_bytes().to_vec();
    b.extend(((9 + a.len()) as i32).to_be_bytes());
    b.extend((-1i32).to_be_bytes()); // partitionLeaderEpoch
    b.push(2);
    b.extend(crc32c::crc32c(&a).to_be_bytes());
    b.extend(a);
    b
}

/// A legacy message (magic 0 or 1) with a null key and `value`, with a valid CRC-32.
pub fn legacy_message(offset: i64, magic: u8, attrs: u8, value: Option<&[u8]>) -> Vec<u8> {
    let mut m = vec![magic, attrs];
    if magic == 1 {
        m.extend(1_714_564_800_123i64.to_be_bytes());
    }
    m.extend((-1i32).to_be_bytes());
    match value {
        None => m.extend((-1i32).to_be_bytes()),
        Some(v) => {
            m.extend((v.len() as i32).to_be_bytes());
            m.extend(v);
        }
    }
    let mut b = offset.to_be_bytes().to_vec();
    b.extend(((4 + m.len()) as i32).to_be_bytes());
    b.extend(crc32fast::hash(&m).to_be_bytes());
    b.extend(m);
    b
}

/// Sets the codec bits of the first entry of a records field and fixes its checksum.
fn set_codec(records: &mut [u8], codec: u8) {
    if records.len() < 17 {
        return;
    }
    let len = i32::from_be_bytes([records[8], records[9], records[10], records[11]]);
    let end = (12usize.saturating_add(len.max(0) as usize)).min(records.len());
    match records[16] {
        2 if end >= 23 => {
            records[22] = (records[22] & !7) | codec;
            let crc = crc32c::crc32c(&records[21..end]);
            records[17..21].copy_from_slice(&crc.to_be_bytes());
        }
        0 | 1 if end >= 18 => {
            records[17] = (records[17] & !7) | codec;
            let crc = crc32fast::hash(&records[16..end]);
            records[12..16].copy_from_slice(&crc.to_be_bytes());
        }
        _ => {}
    }
}

/// The records field the `records` target builds from its input (see [`records`]), and
/// whether it goes in a Fetch response (true) or a Produce request.
pub fn records_field(data: &[u8]) -> Option<(Vec<u8>, bool)> {
    let (&ctl, rest) = data.split_first()?;
    let codec = ctl & 7;
    let magic = match (ctl >> 3) & 3 {
        0 => 0,
        1 => 1,
        _ => 2,
    };
    let fetch = ctl & 0x20 != 0;
    let field = if ctl & 0x40 == 0 {
        // The rest is a whole records field; bit 7 sets the first entry's codec.
        let mut f = rest.to_vec();
        if ctl & 0x80 != 0 {
            set_codec(&mut f, codec);
        }
        f
    } else {
        // The rest is record data: byte 0 a record count, byte 1 more attribute bits
        // (timestamp type, transactional, control), then the records (or, for magic 0/1,
        // the inner message set), compressed here with the codec.
        let [count, extra, payload @ ..] = rest else {
            return None;
        };
        let comp = compress(codec, payload);
        if magic == 2 {
            let attrs = i16::from(codec) | i16::from(extra & 0x78);
            batch_v2(0, attrs, i32::from(*count), &comp)
        } else {
            legacy_message(0, magic, codec | (extra & 0x08), Some(&comp))
        }
    };
    Some((field, fetch))
}

/// Target `records`: byte 0 chooses the codec (bits 0-2), the magic (bits 3-4: 0, 1,
/// else 2), the container (bit 5: a Fetch v4 response, where a cut last batch is legal,
/// else a Produce v9 request) and the mode (bit 6): either the rest is a whole records
/// field (bit 7: give its first entry that codec, with a fixed checksum), or record data
/// that is compressed here and wrapped in one batch or legacy wrapper message. The frame
/// is decoded and checked.
pub fn records(data: &[u8]) {
    let Some((field, fetch)) = records_field(data) else {
        return;
    };
    let frame = if fetch {
        fetch_v4_response(&field)
    } else {
        produce_v9(&field)
    };
    let known = if fetch {
        Known::response(1, 4)
    } else {
        Known::request()
    };
    let arena = Buffers::new();
    let m = decode(schema(), options(), &arena, &frame, &known);
    check_message(&m);
    let arena2 = Buffers::new();
    let s = decode(schema(), summary_options(), &arena2, &frame, &known);
    check_summary_detail(&m, &s);
    let [full, sum] = small_budget_options();
    let (arena, arena2) = (Buffers::new(), Buffers::new());
    let m = decode(schema(), full, &arena, &frame, &known);
    check_message(&m);
    let s = decode(schema(), sum, &arena2, &frame, &known);
    check_summary_detail(&m, &s);
}

/// The file kinds the `logfile` target feeds its input to, by byte 0 (mod 11).
pub const LOG_FILE_NAMES: [&str; 11] = [
    "__consumer_offsets-3/00000000000000000000.log",
    "__cluster_metadata-0/00000000000000000000-0000000001.checkpoint",
    "fuzz-0/00000000000000000000.index",
    "fuzz-0/00000000000000000000.timeindex",
    "fuzz-0/00000000000000000000.txnindex",
    "fuzz-0/00000000000000000000.snapshot",
    "__cluster_metadata-0/quorum-state",
    "fuzz-0/leader-epoch-checkpoint",
    "fuzz-0/partition.metadata",
    "meta.properties",
    "replication-offset-checkpoint",
];

/// Collects what a log-file read hands out and checks each item as it comes.
struct LogCheck {
    len: usize,
    items: usize,
    batches: Vec<(u64, Option<kwire::log::BatchInfo>)>,
    findings: Vec<kwire::log::Finding>,
}

impl kwire::log::Sink for LogCheck {
    fn item(&mut self, it: &kwire::log::Item<'_>) -> std::io::Result<()> {
        let pos = it.position as usize;
        assert!(
            pos <= self.len && it.bytes.len() <= self.len - pos,
            "item at {pos}+{} outside the file of {} bytes",
            it.bytes.len(),
            self.len
        );
        if let Some(n) = &it.node {
            let mut at = pos;
            n.walk(&mut |x, _| {
                let blen = if x.buffer == 0 {
                    pos + it.bytes.len()
                } else {
                    it.buffers.get(x.buffer as usize - 1).map_or(0, |b| b.len())
                };
                assert!(
                    x.buffer as usize <= it.buffers.len(),
                    "node {:?} in an unknown buffer",
                    x.name
                );
                assert!(
                    x.offset <= blen && x.length <= blen - x.offset,
                    "node {:?} at {}+{} outside its buffer of {blen} bytes",
                    x.name,
                    x.offset,
                    x.length
                );
                if x.buffer == 0 && x.buffer == n.buffer && x.children.is_empty() && x.length > 0 {
                    // Leaves of the file's bytes come in order, without overlap.
                    assert!(
                        x.offset >= at,
                        "leaf {:?} at {} overlaps the one before (ends {at})",
                        x.name,
                        x.offset
                    );
                    at = x.end();
                }
            });
            if it.kind == kwire::log::ItemKind::Batch && n.buffer == 0 {
                assert_eq!(at, pos + it.bytes.len(), "a batch's leaves cover its bytes");
            }
        }
        // `kwire log --format json` streams the line that serializing item_json gives.
        let (mut line, mut buf) = (Vec::new(), Vec::new());
        kwire::cli::log_cmd::write_item_json(&mut line, &mut buf, it).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&line),
            format!("{}\n", kwire::cli::log_cmd::item_json(it)),
            "the streamed JSON line differs from item_json's"
        );
        self.items += 1;
        if it.kind == kwire::log::ItemKind::Batch {
            self.batches.push((it.position, it.batch.clone()));
        }
        Ok(())
    }
    fn finding(&mut self, f: &kwire::log::Finding) -> std::io::Result<()> {
        assert!(
            f.offset as usize <= self.len,
            "finding {:?} at {} past the end",
            f.message,
            f.offset
        );
        self.findings.push(f.clone());
        Ok(())
    }
}

/// Target `logfile`: byte 0 picks the file kind ([`LOG_FILE_NAMES`], mod 11); the rest
/// is the file. It is read at full detail with `--verify` and at the summary detail;
/// each item's streamed JSON line is what serializing `item_json` gives;
/// every item and node lies inside the file (or its decompressed buffer), a batch's
/// leaves cover its bytes in order, every finding is inside the file, and both detail
/// levels see the same batches.
pub fn log_file(data: &[u8]) {
    use kwire::log::{files, segment, FileKind, LogOptions};
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let path =
        std::path::Path::new("/nonexistent-kwire-fuzz").join(LOG_FILE_NAMES[sel as usize % 11]);
    let kind = FileKind::of(&path).unwrap();
    let mut seen = Vec::new();
    for (detail, verify) in [(Detail::Full, true), (Detail::Summary, false)] {
        let opts = LogOptions {
            topic: None,
            verify,
            detail,
        };
        let mut c = LogCheck {
            len: body.len(),
            items: 0,
            batches: Vec::new(),
            findings: Vec::new(),
        };
        match kind {
            FileKind::Segment | FileKind::KraftSnapshot => {
                let at = segment::Where {
                    path: &path,
                    kind,
                    topic: kwire::log::topic_of_file(&path, &opts),
                };
                let mut track = kwire::log::OffsetTrack::default();
                segment::read_batches(
                    schema(),
                    &mut &body[..],
                    body.len() as u64,
                    &at,
                    &opts,
                    Some(&mut track),
                    &mut c,
                )
                .unwrap();
            }
            _ => files::read_small(schema(), &path, kind, body, &opts, &mut c).unwrap(),
        }
        seen.push(c.batches);
    }
    assert_eq!(seen[0], seen[1], "both detail levels see the same batches");
}

/// Target `filter`: the input (as UTF-8, lossily) is a `-Y` expression. It is parsed
/// with and without the schema's names, and, when it parses, evaluated over the seed
/// page's DeleteTopics v6 request and response and over a log batch's facts. Nothing
/// panics or overflows the stack (chains of any length, nesting past the cap); an error
/// names a column inside the expression (or just past its end); what parses with the
/// schema's names parses without them; `not (E)` is the negation of `E` and `(E) && (E)`
/// and `(E) || (E)` are `E`, on every message.
pub fn filter(data: &[u8]) {
    use kwire::filter::{Filter, LogFacts, MessageFacts};
    static NAMES: OnceLock<kwire::filter::Known> = OnceLock::new();
    let known = NAMES.get_or_init(|| kwire::filter::Known::of(schema()));
    let text = String::from_utf8_lossy(data);
    let chars = text.chars().count();
    let plain = Filter::parse(&text);
    let checked = Filter::parse_known(&text, known);
    for e in [plain.as_ref().err(), checked.as_ref().err()]
        .into_iter()
        .flatten()
    {
        assert!(
            (1..=chars + 1).contains(&e.column),
            "column {} of {chars} chars: {e}",
            e.column
        );
        let _ = e.pointer();
    }
    if checked.is_ok() {
        assert!(plain.is_ok(), "parses with the schema's names, not without");
    }
    let Ok(f) = plain else {
        return;
    };
    let arena = Buffers::new();
    let frames = [
        (SEED_REQUEST, Known::request()),
        (SEED_RESPONSE, Known::response(20, 6)),
    ];
    let msgs: Vec<Message<'_>> = frames
        .iter()
        .map(|(h, k)| {
            let bytes: &[u8] = arena.alloc(parse_hex(h).unwrap().remove(0).bytes);
            decode(schema(), options(), &arena, bytes, k)
        })
        .collect();
    let ctx = MessageFacts::default();
    let derived = |wrap: &str| Filter::parse(&wrap.replace('E', &format!("({text})"))).ok();
    let (neg, both, either) = (derived("not E"), derived("E && E"), derived("E || E"));
    for m in &msgs {
        let v = f.matches(m, &ctx);
        if let Some(n) = &neg {
            assert_eq!(n.matches(m, &ctx), !v, "not ({text})");
        }
        for d in [&both, &either].into_iter().flatten() {
            assert_eq!(d.matches(m, &ctx), v, "{}", d.text());
        }
    }
    let facts = LogFacts {
        kind: "batch",
        file: "d/foo-0/00000000000000000000.log",
        file_kind: "segment",
        position: 0,
        topic: Some("foo"),
        offsets: Some((10, 19)),
        bad_crc: false,
    };
    let v = f.matches_log(&msgs[0].tree, &facts);
    if let Some(n) = &neg {
        assert_eq!(
            n.matches_log(&msgs[0].tree, &facts),
            !v,
            "not ({text}) on a log item"
        );
    }
    let _ = (f.needs_full_tree(), f.needs_log_tree(), f.uses_unanswered());
}

/// The seed page's DeleteTopics v6 request and response (size prefix included).
const SEED_REQUEST: &str =
    "000000230014000600000000000000020100000000000000000000000000000000000000000000";
const SEED_RESPONSE: &str =
    "000000200000000000000000000201000000000000000000000000000000000000010000";
