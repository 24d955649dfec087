//! The text printer against the seed page's layout.

mod common;

use common::*;
use kwire::render::{self, text, RenderOptions};
use kwire::session::Context;
use kwire::tree::{Message, Node, NodeKind, Region, Value};

/// The request tree's lines up to `]` (facts only), for when `../shared` is absent.
const REQ_PREFIXES: &str = "\
DeleteTopicsRequest message v6 [0x0000, 39B]
+-- Frame [0x0000, 4B]
|   +-- size int32 = 35 [0x0000, 4B]
+-- RequestHeader v2 [0x0004, 11B]
|   +-- request_api_key int16 = 20 (DeleteTopics) [0x0004, 2B]
|   +-- request_api_version int16 = 6 [0x0006, 2B]
|   +-- correlation_id int32 = 0 [0x0008, 4B]
|   +-- client_id nullable_string = \"\" (int16 len=0) [0x000c, 2B]
|   +-- tagged_fields uvarint = 0 [0x000e, 1B]
+-- DeleteTopicsRequest struct [0x000f, 24B]
    +-- Topics []DeleteTopicState = 1 element [0x000f, 19B]
    |   +-- length uvarint = 2 (compact, n+1) [0x000f, 1B]
    |   +-- DeleteTopicState[0] DeleteTopicState = struct [0x0010, 18B]
    |       +-- Name string = \"\" (compact, len+1=1) [0x0010, 1B]
    |       +-- TopicId uuid = 00000000-0000-0000-0000-000000000000 [0x0011, 16B]
    |       +-- tagged_fields uvarint = 0 [0x0021, 1B]
    +-- TimeoutMs int32 = 0 [0x0022, 4B]
    +-- tagged_fields uvarint = 0 [0x0026, 1B]";

const RESP_PREFIXES: &str = "\
DeleteTopicsResponse message v6 [0x0000, 36B]
+-- Frame [0x0000, 4B]
|   +-- size int32 = 32 [0x0000, 4B]
+-- ResponseHeader v1 [0x0004, 5B]
|   +-- correlation_id int32 = 0 [0x0004, 4B]
|   +-- tagged_fields uvarint = 0 [0x0008, 1B]
+-- DeleteTopicsResponse struct [0x0009, 27B]
    +-- ThrottleTimeMs int32 = 0 [0x0009, 4B]
    +-- Responses []DeletableTopicResult = 1 element [0x000d, 22B]
    |   +-- length uvarint = 2 (compact, n+1) [0x000d, 1B]
    |   +-- DeletableTopicResult[0] DeletableTopicResult = struct [0x000e, 21B]
    |       +-- Name string = \"\" (compact, len+1=1) [0x000e, 1B]
    |       +-- TopicId uuid = 00000000-0000-0000-0000-000000000000 [0x000f, 16B]
    |       +-- ErrorCode int16 = 0 [0x001f, 2B]
    |       +-- ErrorMessage string = \"\" (compact, len+1=1) [0x0021, 1B]
    |       +-- tagged_fields uvarint = 0 [0x0022, 1B]
    +-- tagged_fields uvarint = 0 [0x0023, 1B]";

fn out(msg: &Message<'_>, ctx: Option<&Context>, opts: &RenderOptions) -> String {
    let mut v = Vec::new();
    text::render(&mut v, msg, ctx, opts).unwrap();
    String::from_utf8(v).unwrap()
}

fn plain() -> RenderOptions {
    RenderOptions {
        no_bytes: true,
        ..RenderOptions::default()
    }
}

fn tree_lines(s: &str) -> Vec<&str> {
    // title line, then the tree, then an empty line
    let lines: Vec<&str> = s.lines().collect();
    lines[1..lines.len() - 1].to_vec()
}

#[test]
fn request_tree_prefixes_match_reference() {
    let f = unhex(REQ_HEX);
    let s = out(&request(&f), None, &plain());
    let got: Vec<&str> = tree_lines(&s).iter().map(|l| prefix(l)).collect();
    assert_eq!(got, REQ_PREFIXES.lines().collect::<Vec<_>>());
}

#[test]
fn response_tree_prefixes_match_reference() {
    let f = unhex(RESP_HEX);
    let s = out(&response(&f), None, &plain());
    let got: Vec<&str> = tree_lines(&s).iter().map(|l| prefix(l)).collect();
    assert_eq!(got, RESP_PREFIXES.lines().collect::<Vec<_>>());
}

#[test]
fn trees_equal_reference_byte_for_byte() {
    let (Some(req), Some(resp)) = (reference_tree("## Request"), reference_tree("## Response"))
    else {
        common::skip(
            "trees_equal_reference_byte_for_byte",
            "the reference page (../shared/reference, through KWIRE_SHARED) was not found",
        );
        return;
    };
    let f = unhex(REQ_HEX);
    let s = out(&request(&f), None, &plain());
    assert_eq!(tree_lines(&s), req);
    let f = unhex(RESP_HEX);
    let s = out(&response(&f), None, &plain());
    assert_eq!(tree_lines(&s), resp);
}

#[test]
fn title_line() {
    let f = unhex(REQ_HEX);
    let s = out(&request(&f), None, &plain());
    assert_eq!(
        s.lines().next().unwrap(),
        "DeleteTopics v6 request, correlation_id 0, header v2, 39 bytes"
    );
    let ctx = Context {
        frames: (4, 5),
        time: (1_714_557_600, 123_456_789),
        src: "10.0.0.2:9092".into(),
        dst: "10.0.0.1:5000".into(),
        connection: 3,
        latency: Some(std::time::Duration::from_micros(1234)),
        incomplete: false,
        ..Context::default()
    };
    let f = unhex(RESP_HEX);
    let s = out(&response(&f), Some(&ctx), &plain());
    assert_eq!(
        s.lines().next().unwrap(),
        "#4-5 2024-05-01T10:00:00.123456789Z 10.0.0.2:9092 -> 10.0.0.1:5000 conn 3: \
         DeleteTopics v6 response, correlation_id 0, header v1, 36 bytes, latency 1.234 ms"
    );
}

#[test]
fn byte_grid_plain() {
    let f = unhex(REQ_HEX);
    let s = out(&request(&f), None, &RenderOptions::default());
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines[1], "byte layout (39 bytes, 16 bytes per row)");
    assert_eq!(
        lines[2],
        "      0  1  2  3  4  5  6  7  8  9  A  B  C  D  E  F"
    );
    assert_eq!(
        lines[3],
        "0000  00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02  ...#............"
    );
    assert_eq!(
        lines[4],
        "0010  01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................"
    );
    assert_eq!(
        lines[5],
        "0020  00 00 00 00 00 00 00                             ......."
    );
    assert_eq!(lines[6], "");
    assert!(lines[7].starts_with("DeleteTopicsRequest message v6 [0x0000, 39B]"));
    assert!(!s.contains('\x1b'));
}

#[test]
fn bytes_only_has_no_tree() {
    let f = unhex(REQ_HEX);
    let s = out(
        &request(&f),
        None,
        &RenderOptions {
            bytes_only: true,
            ..RenderOptions::default()
        },
    );
    assert!(s.contains("0020  00"));
    assert!(!s.contains("+--"));
}

#[test]
fn colour_on_and_off() {
    let f = unhex(REQ_HEX);
    let m = request(&f);
    let on = out(
        &m,
        None,
        &RenderOptions {
            color: true,
            ..RenderOptions::default()
        },
    );
    assert!(on.contains("\x1b["));
    assert!(on.contains("legend:"));
    for label in ["frame", "rpc header", "request body", "tagged_fields"] {
        assert!(on.contains(label), "legend lacks {label}");
    }
    assert!(!on.contains("response body"));
    let off = out(&m, None, &RenderOptions::default());
    assert!(!off.contains('\x1b'));
    // colour changes nothing but the escapes
    assert_eq!(strip_ansi(&on).replace(&legend_line(&on), ""), off);
}

fn legend_line(s: &str) -> String {
    strip_ansi(s)
        .lines()
        .find(|l| l.starts_with("legend:"))
        .map(|l| format!("{l}\n"))
        .unwrap()
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\x1b' {
            for d in it.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn region_of_each_byte_is_the_deepest_node() {
    let f = unhex(REQ_HEX);
    let m = request(&f);
    let (r, e) = text::byte_regions(&m, 0);
    assert_eq!(r[0], Some(Region::Frame));
    assert_eq!(r[4], Some(Region::Header));
    assert_eq!(r[0x0f], Some(Region::RequestBody));
    assert_eq!(r[0x21], Some(Region::TaggedFields));
    assert_eq!(r[0x26], Some(Region::TaggedFields));
    assert!(e.iter().all(|x| !x));
}

#[test]
fn depth_folds_deeper_levels() {
    let f = unhex(REQ_HEX);
    let s = out(
        &request(&f),
        None,
        &RenderOptions {
            depth: Some(1),
            ..plain()
        },
    );
    let got: Vec<String> = tree_lines(&s)
        .iter()
        .map(|l| l.split(" [").next().unwrap().to_string())
        .collect();
    assert_eq!(
        got,
        [
            "DeleteTopicsRequest message v6",
            "+-- Frame",
            "|   +-- ... (1 node)",
            "+-- RequestHeader v2",
            "|   +-- ... (5 nodes)",
            "+-- DeleteTopicsRequest struct",
            "    +-- ... (8 nodes)",
        ]
    );
    let s = out(
        &request(&f),
        None,
        &RenderOptions {
            depth: Some(0),
            ..plain()
        },
    );
    assert_eq!(tree_lines(&s)[1], "+-- ... (17 nodes)");
}

fn many(n: usize) -> Node<'static> {
    let mut children = vec![Node::leaf(
        "length",
        "uvarint",
        Value::UInt(n as u64 + 1),
        0,
        1,
    )];
    for i in 0..n {
        children.push(Node::leaf(
            Box::leak(format!("Partitions[{i}]").into_boxed_str()),
            "int32",
            Value::Int(i as i64),
            1 + 4 * i,
            4,
        ));
    }
    let mut a = Node::new("Partitions", "[]int32", NodeKind::Array, 0);
    a.value = Value::Count(n as u64);
    a.length = 1 + 4 * n;
    a.children = common::kids(children);
    a
}

#[test]
fn max_elements_shows_n_then_more() {
    let opts = RenderOptions {
        max_elements: 2,
        ..plain()
    };
    let mut v = Vec::new();
    text::node_tree(&mut v, &many(5), &opts).unwrap();
    let s = String::from_utf8(v).unwrap();
    assert_eq!(
        s,
        "Partitions []int32 = 5 elements [0x0000, 21B]\n\
         +-- length uvarint = 6 [0x0000, 1B]\n\
         +-- Partitions[0] int32 = 0 [0x0001, 4B]\n\
         +-- Partitions[1] int32 = 1 [0x0005, 4B]\n\
         +-- ... 3 more\n"
    );
}

#[test]
fn errors_and_warnings_get_their_own_lines() {
    let mut root = many(2);
    root.children[1].set_error("bad thing");
    root.set_warning("odd thing");
    let mut v = Vec::new();
    text::node_tree(&mut v, &root, &plain()).unwrap();
    let s = String::from_utf8(v).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines[1], "! warning: odd thing");
    assert_eq!(lines[3], "+-- Partitions[0] int32 = 0 [0x0001, 4B]");
    assert_eq!(lines[4], "|   !! error: bad thing");
    // a leaf where a walk stopped, with nothing read, shows no value
    let mut cut = Node::leaf("tagged_fields", "uvarint", Value::Bytes(&[]), 9, 0);
    cut.set_error("varint cut by the end of input");
    assert_eq!(
        text::node_line(&cut, None, &plain()),
        "tagged_fields uvarint [0x0009, 0B]"
    );
    let mut v = Vec::new();
    text::node_tree(
        &mut v,
        &root,
        &RenderOptions {
            color: true,
            ..plain()
        },
    )
    .unwrap();
    let s = String::from_utf8(v).unwrap();
    assert!(
        s.contains("\x1b[31") || s.contains("\x1b[1;31") || s.contains(";31m"),
        "{s:?}"
    );
}

#[test]
fn error_title_and_grid() {
    let f = unhex(REQ_HEX);
    let mut m = request(&f);
    m.tree.children[2].children[1].set_error("broken");
    let s = out(&m, None, &RenderOptions::default());
    assert!(s.lines().next().unwrap().ends_with(", !! 1 error"));
    assert!(s.contains("\n    |   !! error: broken\n"));
    let s = out(
        &m,
        None,
        &RenderOptions {
            color: true,
            ..RenderOptions::default()
        },
    );
    assert!(
        strip_ansi(&s).contains("legend:  frame  rpc header  request body  tagged_fields  error")
    );
}

#[test]
fn values_elided_and_record_payloads_as_text() {
    let long = "x".repeat(100);
    let mut rec = Node::new("Record[0]", "Record", NodeKind::Group, 0);
    rec.children = common::kids(vec![
        Node::leaf("key", "varbytes", Value::Bytes(b"user-1"), 0, 6),
        Node::leaf("value", "varbytes", Value::Bytes(&[0, 1, 0xff]), 6, 3),
        Node::leaf("note", "string", Value::Str(&long), 9, 100),
        Node::leaf("blob", "bytes", Value::Bytes(b"user-1"), 109, 6),
    ]);
    rec.length = 115;
    let mut v = Vec::new();
    text::node_tree(
        &mut v,
        &rec,
        &RenderOptions {
            max_value_len: 8,
            ..plain()
        },
    )
    .unwrap();
    let s = String::from_utf8(v).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines[0], "Record[0] Record [0x0000, 115B]");
    assert_eq!(lines[1], "+-- key varbytes = \"user-1\" [0x0000, 6B]");
    assert_eq!(lines[2], "+-- value varbytes = 0001ff [0x0006, 3B]");
    assert_eq!(
        lines[3],
        "+-- note string = \"xxxxxxxx\"... (100 B) [0x0009, 100B]"
    );
    assert_eq!(lines[4], "+-- blob bytes = 75736572... (6 B) [0x006d, 6B]");
}

#[test]
fn wide_keeps_whole_descriptions() {
    let d = "d".repeat(80);
    let n = Node::leaf("x", "int8", Value::Int(1), 0, 1).describe(&d);
    let cut = text::node_line(&n, None, &plain());
    assert!(cut.ends_with(&format!("{}...", "d".repeat(75))));
    let wide = text::node_line(
        &n,
        None,
        &RenderOptions {
            wide: true,
            ..plain()
        },
    );
    assert!(wide.ends_with(&"d".repeat(80)));
}

#[test]
fn decompressed_buffers_and_wide_offsets() {
    let big = vec![0u8; 70_000];
    let inner = [1u8, 2, 3, 4, 5];
    let mut root = Node::new("ProduceRequest", "message v9", NodeKind::Message, 0);
    root.length = big.len();
    let mut r = Node::leaf(
        "records",
        "records",
        Value::Bytes(&big[10..]),
        10,
        big.len() - 10,
    );
    let mut x = Node::leaf("Record[0]", "Record", Value::Bytes(&inner), 0, 5);
    x.buffer = 1;
    x.region = Region::Record;
    r.children = common::kids(vec![x]);
    root.children = common::kids(vec![r]);
    let m = Message {
        direction: kwire::tree::Direction::Request,
        api_key: 0,
        api_name: Some("Produce"),
        api_version: 9,
        correlation_id: Some(1),
        header_version: 2,
        size: big.len(),
        schema_release: None,
        frame: &big,
        buffers: vec![&inner],
        tree: root,
        guess: None,
    };
    let s = out(&m, None, &RenderOptions::default());
    assert!(s.contains("\n00000  00 00"));
    assert!(s.contains("\n11160  00 00"));
    assert!(s.contains("decompressed buffer 1 (5 bytes, 16 bytes per row)\n      0  1"));
    assert!(s.contains("\n0000  01 02 03 04 05"));
    assert!(s.contains("ProduceRequest message v9 [0x00000, 70000B]"));
    assert!(s.contains("+-- records records = "));
    assert!(s.contains("    +-- Record[0] Record = 0102030405 [buf1 0x0000, 5B]"));
}

#[test]
fn render_dispatch_summary_and_hexdump_colour() {
    let f = unhex(REQ_HEX);
    let m = request(&f);
    for fmt in [
        render::Format::Text,
        render::Format::Summary,
        render::Format::Hexdump,
    ] {
        let mut on = Vec::new();
        render::render(
            &mut on,
            fmt,
            &m,
            None,
            &RenderOptions {
                color: true,
                ..RenderOptions::default()
            },
        )
        .unwrap();
        let mut off = Vec::new();
        render::render(&mut off, fmt, &m, None, &RenderOptions::default()).unwrap();
        let (on, off) = (
            String::from_utf8(on).unwrap(),
            String::from_utf8(off).unwrap(),
        );
        assert!(!off.contains('\x1b'), "{fmt:?}");
        if fmt != render::Format::Summary {
            assert!(on.contains('\x1b'), "{fmt:?}");
        }
    }
}

/// The regions of every buffer from one walk (`text::ByteRegions`, which the grids of
/// `-x` and the html pages read) are what `text::byte_regions` gives buffer by buffer,
/// and their runs (`page::runs_of`) are `page::region_runs`': on every message of the
/// compressed lab captures (a buffer a batch) and of the demo.
#[test]
fn byte_regions_of_every_buffer_at_once() {
    let mut buffers = 0;
    for f in [
        "captures/lab/ck_produce_zstd.pcap",
        "captures/lab/ck_produce_lz4.pcap",
        "captures/lab/ck_produce_gzip.pcapng",
        "captures/lab/kp_produce_codecs.pcap",
        "captures/demo.pcap",
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(f);
        let cap = kwire::index::Capture::open(&path).unwrap();
        for i in 0..cap.len() {
            cap.with_message(i, |m, _| {
                let br = text::ByteRegions::of(m);
                for id in 0..=m.buffers.len() as u32 {
                    let one = text::byte_regions(m, id);
                    assert_eq!(br.buffer(id), one, "{f}: message {i}, buffer {id}");
                    assert_eq!(
                        kwire::page::runs_of(&one.0),
                        kwire::page::region_runs(m, id),
                        "{f}: message {i}, buffer {id}"
                    );
                    buffers += usize::from(id > 0);
                }
            })
            .unwrap();
        }
    }
    assert!(buffers > 10, "{buffers} decompressed buffers");
}
