//! Hand-built trees of the seed page's two DeleteTopics v6 frames (facts only: names,
//! types, values, offsets), with descriptions read at run time from
//! `../shared/reference/delete-topics-v6.md` when it is there.
#![allow(dead_code)]

pub mod explore_screen;
pub mod live;

use std::path::PathBuf;

use kwire::tree::{Children, Direction, Message, Node, NodeKind, Region, Value};

pub const REQ_HEX: &str =
    "000000230014000600000000000000020100000000000000000000000000000000000000000000";
pub const RESP_HEX: &str =
    "000000200000000000000000000201000000000000000000000000000000000000010000";

/// Bytes from hex text (whitespace between digits ignored), through the library's own
/// decoder ([`kwire::text::unhex`]); panics on text that is not hex, naming it.
pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    kwire::text::unhex(&s).unwrap_or_else(|| panic!("not hex: {s:?}"))
}

/// The kwire binary in the one environment every test runs it in: no `KWIRE_SCHEMA`
/// (the embedded schema), no `NO_COLOR` (colour decided by `--color` and whether stdout
/// is a terminal, which it is not), no `SSLKEYLOGFILE` (no key log read unless a test
/// gives one), the repository as the working folder.
pub fn kwire() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("kwire").unwrap();
    for v in CLEARED_ENV {
        c.env_remove(v);
    }
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// The variables [`kwire`] removes from the environment.
pub const CLEARED_ENV: [&str; 3] = ["KWIRE_SCHEMA", "NO_COLOR", "SSLKEYLOGFILE"];

/// [`kwire`]'s environment on a `std::process::Command` (for tests that run kwire under
/// another program, such as GNU time).
pub fn kwire_env(c: &mut std::process::Command) -> &mut std::process::Command {
    for v in CLEARED_ENV {
        c.env_remove(v);
    }
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
}

pub fn leaf<'a>(name: &'a str, ty: &'a str, v: Value<'a>, off: usize, len: usize) -> Node<'a> {
    Node::leaf(name, ty, v, off, len)
}

pub fn group<'a>(
    kind: NodeKind,
    name: &'a str,
    ty: &'a str,
    off: usize,
    len: usize,
    children: Vec<Node<'a>>,
) -> Node<'a> {
    let mut n = Node::new(name, ty, kind, off);
    n.length = len;
    n.children = kids(children);
    n
}

/// Children for a hand-built test tree (the test leaks them: a decoded tree's children
/// live in the message's arena instead).
pub fn kids<'a>(v: Vec<Node<'a>>) -> Children<'a> {
    Children::new(Box::leak(v.into_boxed_slice()))
}

fn tagged(off: usize) -> Node<'static> {
    let mut n = leaf("tagged_fields", "uvarint", Value::UInt(0), off, 1);
    n.region = Region::TaggedFields;
    n
}

fn frame_node(size: i64) -> Node<'static> {
    let mut f = group(
        NodeKind::Frame,
        "Frame",
        "frame",
        0,
        4,
        vec![leaf("size", "int32", Value::Int(size), 0, 4)],
    );
    f.set_region(Region::Frame);
    f
}

pub fn request(frame: &[u8]) -> Message<'_> {
    let mut header = group(
        NodeKind::Header,
        "RequestHeader",
        "header v2",
        4,
        11,
        vec![
            leaf("request_api_key", "int16", Value::Int(20), 4, 2).annotate("DeleteTopics"),
            leaf("request_api_version", "int16", Value::Int(6), 6, 2),
            leaf("correlation_id", "int32", Value::Int(0), 8, 4),
            leaf("client_id", "nullable_string", Value::Str(""), 0x0c, 2).annotate("int16 len=0"),
            leaf("tagged_fields", "uvarint", Value::UInt(0), 0x0e, 1),
        ],
    );
    header.set_region(Region::Header);
    let mut topics = group(
        NodeKind::Array,
        "Topics",
        "[]DeleteTopicState",
        0x0f,
        19,
        vec![
            leaf("length", "uvarint", Value::UInt(2), 0x0f, 1).annotate("compact, n+1"),
            group(
                NodeKind::Struct,
                "DeleteTopicState[0]",
                "DeleteTopicState",
                0x10,
                18,
                vec![
                    leaf("Name", "string", Value::Str(""), 0x10, 1).annotate("compact, len+1=1"),
                    leaf("TopicId", "uuid", Value::Uuid(uuid::Uuid::nil()), 0x11, 16),
                    tagged(0x21),
                ],
            ),
        ],
    );
    topics.value = Value::Count(1);
    let mut body = group(
        NodeKind::Body,
        "DeleteTopicsRequest",
        "struct",
        0x0f,
        24,
        vec![
            topics,
            leaf("TimeoutMs", "int32", Value::Int(0), 0x22, 4),
            tagged(0x26),
        ],
    );
    body.set_region(Region::RequestBody);
    let root = group(
        NodeKind::Message,
        "DeleteTopicsRequest",
        "message v6",
        0,
        39,
        vec![frame_node(35), header, body],
    );
    let mut m = Message {
        direction: Direction::Request,
        api_key: 20,
        api_name: Some("DeleteTopics"),
        api_version: 6,
        correlation_id: Some(0),
        header_version: 2,
        size: frame.len(),
        schema_release: Some("4.3"),
        frame,
        buffers: Vec::new(),
        tree: root,
        guess: None,
    };
    describe(&mut m.tree, "## Request");
    m
}

pub fn response(frame: &[u8]) -> Message<'_> {
    let mut header = group(
        NodeKind::Header,
        "ResponseHeader",
        "header v1",
        4,
        5,
        vec![
            leaf("correlation_id", "int32", Value::Int(0), 4, 4),
            leaf("tagged_fields", "uvarint", Value::UInt(0), 8, 1),
        ],
    );
    header.set_region(Region::Header);
    let mut responses = group(
        NodeKind::Array,
        "Responses",
        "[]DeletableTopicResult",
        0x0d,
        22,
        vec![
            leaf("length", "uvarint", Value::UInt(2), 0x0d, 1).annotate("compact, n+1"),
            group(
                NodeKind::Struct,
                "DeletableTopicResult[0]",
                "DeletableTopicResult",
                0x0e,
                21,
                vec![
                    leaf("Name", "string", Value::Str(""), 0x0e, 1).annotate("compact, len+1=1"),
                    leaf("TopicId", "uuid", Value::Uuid(uuid::Uuid::nil()), 0x0f, 16),
                    leaf("ErrorCode", "int16", Value::Int(0), 0x1f, 2),
                    leaf("ErrorMessage", "string", Value::Str(""), 0x21, 1)
                        .annotate("compact, len+1=1"),
                    tagged(0x22),
                ],
            ),
        ],
    );
    responses.value = Value::Count(1);
    let mut body = group(
        NodeKind::Body,
        "DeleteTopicsResponse",
        "struct",
        0x09,
        27,
        vec![
            leaf("ThrottleTimeMs", "int32", Value::Int(0), 0x09, 4),
            responses,
            tagged(0x23),
        ],
    );
    body.set_region(Region::ResponseBody);
    let root = group(
        NodeKind::Message,
        "DeleteTopicsResponse",
        "message v6",
        0,
        36,
        vec![frame_node(32), header, body],
    );
    let mut m = Message {
        direction: Direction::Response,
        api_key: 20,
        api_name: Some("DeleteTopics"),
        api_version: 6,
        correlation_id: Some(0),
        header_version: 1,
        size: frame.len(),
        schema_release: Some("4.3"),
        frame,
        buffers: Vec::new(),
        tree: root,
        guess: None,
    };
    describe(&mut m.tree, "## Response");
    m
}

/// The reference page from `$KWIRE_SHARED/reference` (or `../shared` beside the
/// checkout when `KWIRE_SHARED` is unset), when it is there.
pub fn reference() -> Option<String> {
    let base = std::env::var_os("KWIRE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared")));
    std::fs::read_to_string(base.join("reference/delete-topics-v6.md")).ok()
}

/// The `kwire-gen` binary of this workspace (built by `cargo build -p kwire-gen`), the
/// release build's or else the debug build's.
pub fn kwire_gen() -> Option<PathBuf> {
    ["release", "debug"]
        .iter()
        .map(|p| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target")
                .join(p)
                .join("kwire-gen")
        })
        .find(|p| p.exists())
}

/// Says on the terminal that `test` skips and why (written to stderr directly, so it shows
/// even when the test harness captures output), or panics when `KWIRE_NO_SKIP=1`.
pub fn skip(test: &str, why: &str) {
    use std::io::Write;
    if std::env::var("KWIRE_NO_SKIP").as_deref() == Ok("1") {
        panic!("{test}: {why}, and KWIRE_NO_SKIP=1 forbids skipping");
    }
    let _ = writeln!(std::io::stderr(), "{test}: skipped: {why}");
}

/// The tree lines of the reference's request (`## Request`) or response section.
pub fn reference_tree(section: &str) -> Option<Vec<String>> {
    let r = reference()?;
    let part = r.split(section).nth(1)?;
    let block = part.split("```").nth(3)?;
    Some(block.trim().lines().map(str::to_string).collect())
}

/// The prefix of a tree line up to and including the `]` of its `[0x...]` span.
pub fn prefix(line: &str) -> &str {
    let open = line.find("[0x").or_else(|| line.find("[buf")).unwrap();
    let close = open + line[open..].find(']').unwrap();
    &line[..=close]
}

/// Sets each node's description from the reference line with the same prefix, in order.
fn describe(root: &mut Node<'_>, section: &str) {
    let Some(lines) = reference_tree(section) else {
        return;
    };
    let mut descs = lines.iter().map(|l| {
        let p = prefix(l);
        l[p.len()..].trim().to_string()
    });
    fn go(n: &mut Node<'_>, descs: &mut dyn Iterator<Item = String>) {
        if let Some(d) = descs.next() {
            if !d.is_empty() {
                n.description = Some(Box::leak(d.into_boxed_str()));
            }
        }
        for c in &mut n.children {
            go(c, descs);
        }
    }
    go(root, &mut descs);
}

/// `../shared` from `KWIRE_SHARED`, or `None` after printing that the test skips (a
/// panic instead when `KWIRE_NO_SKIP=1`, as CI sets it).
pub fn shared(test: &str) -> Option<PathBuf> {
    match std::env::var_os("KWIRE_SHARED") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            skip(test, "KWIRE_SHARED is not set");
            None
        }
    }
}

/// The fixtures folder.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Asserts that the leaves of `root` in buffer 0 (nodes without children, with bytes)
/// tile `0..len`: every byte in exactly one leaf, in order.
pub fn assert_tiles(root: &Node<'_>, len: usize) {
    let mut leaves = Vec::new();
    root.walk(&mut |n, _| {
        if n.children.is_empty() && n.length > 0 && n.buffer == 0 {
            leaves.push((n.offset, n.length));
        }
    });
    leaves.sort_unstable();
    let mut pos = 0;
    for (o, l) in leaves {
        assert_eq!(o, pos, "leaves do not tile the frame at 0x{pos:04x}");
        pos = o + l;
    }
    assert_eq!(
        pos, len,
        "leaves end at 0x{pos:04x}, the frame is {len} bytes"
    );
}

/// The validator of docs/kwire-message.schema.json (the JSON output's shape).
pub fn message_validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/kwire-message.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    jsonschema::draft202012::new(&schema).expect("the JSON Schema compiles")
}

/// The Python of `target/duckdb-venv` (or `KWIRE_DUCKDB_PYTHON`) if it imports `modules`
/// (e.g. `"duckdb, pyarrow"`), or `None` after saying that `test` skips.
pub fn duckdb_python(test: &str, modules: &str) -> Option<PathBuf> {
    use std::process::{Command, Stdio};
    let py = std::env::var_os("KWIRE_DUCKDB_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/duckdb-venv/bin/python")
        });
    let ok = Command::new(&py)
        .args(["-c", &format!("import {modules}")])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    skip(
        test,
        &format!(
            "DuckDB not installed ({} cannot import {})",
            py.display(),
            modules.replace(", ", " and ")
        ),
    );
    None
}

/// Appends `v` as a zigzag varint (Kafka's varint of records) to `out`.
pub fn varint(out: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A RecordBatch v2 of `count` records encoded in `raw` (kwire's encoder computes the
/// CRC-32C), zstd-compressed when `zstd`.
pub fn batch_of(count: usize, raw: &[u8], zstd: bool) -> Vec<u8> {
    let h = kwire::encode::records::BatchHeader {
        attributes: if zstd { 4 } else { 0 },
        last_offset_delta: count as i32 - 1,
        base_timestamp: 1_714_564_800_000,
        max_timestamp: 1_714_564_800_000,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        partition_leader_epoch: -1,
        ..kwire::encode::records::BatchHeader::default()
    };
    let mut b = Vec::new();
    kwire::encode::records::write_batch_v2(&mut b, &h, count as i32, raw).unwrap();
    b
}

/// A pcap (kwire's own writer) of one TCP connection from a client at 10.0.0.1:40000 to a
/// broker at 10.0.0.2:9092: opened at 0, each of `frames` sent in order (`true`: by the
/// client) 1 ms apart from 1 ms on, closed at 1 s.
pub fn one_connection_pcap(frames: &[(bool, &[u8])]) -> Vec<u8> {
    use kwire::input::pcap_out::{PcapWriter, TcpFlow};
    use std::net::{Ipv4Addr, SocketAddrV4};
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut flow = TcpFlow::new(
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092),
        [1000, 5000],
    );
    flow.open(&mut w, 0).unwrap();
    for (i, (to_server, f)) in frames.iter().enumerate() {
        flow.send(&mut w, *to_server, 1000 + 1000 * i as u64, f)
            .unwrap();
    }
    flow.close(&mut w, 1_000_000).unwrap();
    w.into_inner()
}

/// Every `.pcap` and `.pcapng` file under `dir` (its subfolders included), sorted.
pub fn capture_files(dir: &std::path::Path) -> Vec<PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}
