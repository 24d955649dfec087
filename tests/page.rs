//! `kwire page` and `kwire pages`: the DeleteTopics v6 page against the seed reference
//! (metadata, sizes, trees; with `--schema` the `about` descriptions too), every
//! (api_key, version) of the embedded schema as a page, the minimal-instance rules,
//! the index grouping, and the staleness of `docs/reference`.

mod common;
use common::kwire;

use assert_cmd::Command;
use kwire::decode::{decode, Known};
use kwire::encode::{encode, minimal::minimal, records::empty_batch};
use kwire::page::{leaves_tile, page_options, Page};
use kwire::render::RenderOptions;
use kwire::schema::{MessageKind, Schema};
use kwire::tree::{Buffers, Node, Value as TV};
use serde_json::Value;
use std::path::Path;

fn stdout(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        c,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The facts of the seed page's trees: each line up to its `]`.
const REQ_TREE: &[&str] = &[
    "DeleteTopicsRequest message v6 [0x0000, 39B]",
    "+-- Frame [0x0000, 4B]",
    "|   +-- size int32 = 35 [0x0000, 4B]",
    "+-- RequestHeader v2 [0x0004, 11B]",
    "|   +-- request_api_key int16 = 20 (DeleteTopics) [0x0004, 2B]",
    "|   +-- request_api_version int16 = 6 [0x0006, 2B]",
    "|   +-- correlation_id int32 = 0 [0x0008, 4B]",
    "|   +-- client_id nullable_string = \"\" (int16 len=0) [0x000c, 2B]",
    "|   +-- tagged_fields uvarint = 0 [0x000e, 1B]",
    "+-- DeleteTopicsRequest struct [0x000f, 24B]",
    "    +-- Topics []DeleteTopicState = 1 element [0x000f, 19B]",
    "    |   +-- length uvarint = 2 (compact, n+1) [0x000f, 1B]",
    "    |   +-- DeleteTopicState[0] DeleteTopicState = struct [0x0010, 18B]",
    "    |       +-- Name string = \"\" (compact, len+1=1) [0x0010, 1B]",
    "    |       +-- TopicId uuid = 00000000-0000-0000-0000-000000000000 [0x0011, 16B]",
    "    |       +-- tagged_fields uvarint = 0 [0x0021, 1B]",
    "    +-- TimeoutMs int32 = 0 [0x0022, 4B]",
    "    +-- tagged_fields uvarint = 0 [0x0026, 1B]",
];

const RESP_TREE: &[&str] = &[
    "DeleteTopicsResponse message v6 [0x0000, 36B]",
    "+-- Frame [0x0000, 4B]",
    "|   +-- size int32 = 32 [0x0000, 4B]",
    "+-- ResponseHeader v1 [0x0004, 5B]",
    "|   +-- correlation_id int32 = 0 [0x0004, 4B]",
    "|   +-- tagged_fields uvarint = 0 [0x0008, 1B]",
    "+-- DeleteTopicsResponse struct [0x0009, 27B]",
    "    +-- ThrottleTimeMs int32 = 0 [0x0009, 4B]",
    "    +-- Responses []DeletableTopicResult = 1 element [0x000d, 22B]",
    "    |   +-- length uvarint = 2 (compact, n+1) [0x000d, 1B]",
    "    |   +-- DeletableTopicResult[0] DeletableTopicResult = struct [0x000e, 21B]",
    "    |       +-- Name string = \"\" (compact, len+1=1) [0x000e, 1B]",
    "    |       +-- TopicId uuid = 00000000-0000-0000-0000-000000000000 [0x000f, 16B]",
    "    |       +-- ErrorCode int16 = 0 [0x001f, 2B]",
    "    |       +-- ErrorMessage string = \"\" (compact, len+1=1) [0x0021, 1B]",
    "    |       +-- tagged_fields uvarint = 0 [0x0022, 1B]",
    "    +-- tagged_fields uvarint = 0 [0x0023, 1B]",
];

/// The tree lines of the text page's `Request` or `Response` section.
fn page_tree(page: &str, root: &str) -> Vec<String> {
    page.lines()
        .skip_while(|l| !l.starts_with(root))
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The value of a metadata row of the text page (`  Request size       39 bytes`).
fn meta(page: &str, key: &str) -> Option<String> {
    page.lines()
        .find_map(|l| l.strip_prefix(&format!("  {key} ")))
        .map(|v| v.trim().to_string())
}

fn check_metadata(page: &str) {
    for (k, v) in [
        ("API key", "20"),
        ("Encoded at", "v6"),
        ("Flexible versions", "4+"),
        ("Headers", "req v2, resp v1"),
        ("Request versions", "1-6"),
        ("Response versions", "1-6"),
        ("Request size", "39 bytes"),
        ("Response size", "36 bytes"),
    ] {
        assert_eq!(meta(page, k).as_deref(), Some(v), "metadata {k}");
    }
    assert!(page.starts_with("DeleteTopics\n"), "{page}");
    assert!(page.contains("\nDeleteTopicsRequest v6, request header v2, 39 bytes on the wire\n"));
    assert!(page.contains("\nDeleteTopicsResponse v6, response header v1, 36 bytes on the wire\n"));
    assert!(page.contains("byte layout (39 bytes, 16 bytes per row)"));
    assert!(page.contains("byte layout (36 bytes, 16 bytes per row)"));
    assert!(page.contains("0000  00 00 00 23 00 14 00 06 00 00 00 00 00 00 00 02"));
    assert!(page.contains("0020  00 01 00 00"));
    assert!(page.contains("kafka message schema (.json)"));
}

fn prefix(line: &str) -> &str {
    common::prefix(line)
}

#[test]
fn delete_topics_v6_page_matches_the_reference_facts() {
    for name in ["DeleteTopics", "deletetopics", "20", "DeleteTopicsResponse"] {
        let page = stdout(kwire().args(["page", name]));
        check_metadata(&page);
        for (root, want) in [
            ("DeleteTopicsRequest message", REQ_TREE),
            ("DeleteTopicsResponse message", RESP_TREE),
        ] {
            let got = page_tree(&page, root);
            let got: Vec<&str> = got.iter().map(|l| prefix(l)).collect();
            assert_eq!(got, want, "{name}: {root}");
        }
        // Page phrasing, no `about` text from the embedded facts.
        assert!(page.contains("[0x000f, 1B] one sample element follows"));
        assert!(page.contains("[0x0000, 4B] number of bytes that follow, patched after encoding"));
        assert!(!page.contains("The unique topic ID."));
        // The facts, not a raw file.
        assert!(page.contains("\"validVersions\": \"1-6\""));
        assert!(!page.contains("//"));
    }
}

#[test]
fn delete_topics_v6_page_equals_the_reference_trees() {
    let Some(shared) = common::shared("delete_topics_v6_page_equals_the_reference_trees") else {
        return;
    };
    let reference = std::fs::read_to_string(shared.join("reference/delete-topics-v6.md")).unwrap();
    let tree = |section: &str| -> Vec<String> {
        let part = reference.split(section).nth(1).unwrap();
        let block = part.split("```").nth(3).unwrap();
        block.trim().lines().map(str::to_string).collect()
    };
    // Without --schema: line by line up to `]`.
    let page = stdout(kwire().args(["page", "DeleteTopics"]));
    check_metadata(&page);
    for (section, root) in [
        ("## Request", "DeleteTopicsRequest message"),
        ("## Response", "DeleteTopicsResponse message"),
    ] {
        let want: Vec<String> = tree(section)
            .iter()
            .map(|l| prefix(l).to_string())
            .collect();
        let got: Vec<String> = page_tree(&page, root)
            .iter()
            .map(|l| prefix(l).to_string())
            .collect();
        assert_eq!(got, want, "{section}");
    }
    // With a Kafka 4.3 definition folder: whole lines, descriptions included.
    let schema = shared.join("kafka-schema/4.3/clients");
    let page = stdout(
        kwire()
            .arg("--schema")
            .arg(&schema)
            .args(["page", "DeleteTopics"]),
    );
    check_metadata(&page);
    for (section, root) in [
        ("## Request", "DeleteTopicsRequest message"),
        ("## Response", "DeleteTopicsResponse message"),
    ] {
        assert_eq!(
            page_tree(&page, root),
            tree(section),
            "{section} with --schema"
        );
    }
    // The raw file, comments and all.
    assert!(page.contains("// Version 6 reorganizes topics"));
    assert!(page.contains("\"about\": \"The name or topic ID of the topic.\""));
}

#[test]
fn run_time_schema_gives_descriptions_and_the_raw_file() {
    let dir = common::fixtures().join("schema/good");
    let page = stdout(
        kwire()
            .arg("--schema")
            .arg(&dir)
            .args(["page", "DeleteTopics"]),
    );
    check_metadata(&page);
    assert!(
        page.contains("[0x0011, 16B] Which topic (by id)."),
        "{page}"
    );
    assert!(page.contains("/* versions 1-6; flexible from 4 */"));
    let got: Vec<String> = page_tree(&page, "DeleteTopicsRequest message")
        .iter()
        .map(|l| prefix(l).to_string())
        .collect();
    assert_eq!(got, REQ_TREE);
}

#[test]
fn page_formats_and_errors() {
    let md = stdout(kwire().args(["page", "DeleteTopics", "--format", "md"]));
    assert!(md.starts_with("# DeleteTopics\n"));
    assert!(md.contains("| Request size | 39 bytes |"));
    assert!(md.contains("| Headers | req v2, resp v1 |"));
    assert!(md.contains("```text\nDeleteTopicsRequest message v6 [0x0000, 39B]\n"));
    let html = stdout(kwire().args(["page", "DeleteTopics", "--format", "html"]));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<style>") && html.contains("<script>"));
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    assert!(html.contains("data-g=\"req-0\" data-o=\"17\" data-l=\"16\""));
    // UpdateMetadata was removed in 4.0: its newest version is 3.9's v8.
    let um = stdout(kwire().args(["page", "UpdateMetadata"]));
    assert_eq!(meta(&um, "Encoded at").as_deref(), Some("v8"));
    let v3 = stdout(kwire().args(["page", "DeleteTopics", "--version", "3"]));
    assert_eq!(meta(&v3, "Headers").as_deref(), Some("req v1, resp v0"));
    let words = v3.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("Version 3 is not a flexible version"));
    let p0 = stdout(kwire().args(["page", "Produce", "--version", "2"]));
    assert!(p0.contains("empty message set"), "{p0}");
    for (args, want) in [
        (vec!["page", "NoSuchApi"], "NoSuchApi"),
        (
            vec!["page", "DeleteTopics", "--version", "99"],
            "no version 99",
        ),
        (vec!["page", "RequestHeader"], "not an API"),
    ] {
        let out = kwire().args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Checks the minimal-instance rules on a decoded tree: numbers zero, strings and
/// bytes empty (never null), every array one element, uuids zero, booleans false,
/// no tagged fields; a records field one empty RecordBatch v2 (61 bytes) or, in
/// legacy versions, an empty message set.
fn check_rules(n: &Node<'_>, legacy: bool, path: &str, bad: &mut Vec<String>) {
    let p = format!("{path}/{}", n.name);
    if n.ty == "records" {
        // A records node has a length child then its batches, or (UnalignedRecords of
        // FetchSnapshot, kept as raw bytes) is one leaf holding the data.
        let len = n.children.first().map(|l| l.value.clone());
        let body = match (&n.value, n.children.first()) {
            (TV::Bytes(b), None) => b.len(),
            _ => n.length - n.children.first().map_or(0, |l| l.length),
        };
        let want = if legacy { 0 } else { 61 };
        if body != want || n.value == TV::Null {
            bad.push(format!(
                "{p}: records of {body} bytes ({len:?}), want {want}"
            ));
        }
        return;
    }
    // Structure, not values: prefixes, counts, presence markers, the header's key.
    if n.name == "RecordBatch"
        || n.region == kwire::tree::Region::Frame
        || matches!(
            n.name,
            "length" | "present" | "request_api_key" | "request_api_version"
        )
    {
        return;
    }
    match &n.value {
        TV::Null => bad.push(format!("{p}: null")),
        TV::Bool(true) => bad.push(format!("{p}: true")),
        TV::Int(i) if *i != 0 => bad.push(format!("{p}: {i}")),
        TV::UInt(u) if n.name == "tagged_fields" && *u != 0 => bad.push(format!("{p}: {u} tags")),
        TV::Str(s) if !s.is_empty() => bad.push(format!("{p}: {s:?}")),
        TV::Bytes(b) if !b.is_empty() => bad.push(format!("{p}: {} bytes", b.len())),
        TV::Uuid(u) if !u.is_nil() => bad.push(format!("{p}: {u}")),
        TV::Float(x) if *x != 0.0 => bad.push(format!("{p}: {x}")),
        _ => {}
    }
    if n.kind == kwire::tree::NodeKind::Array {
        let elems = n.children.iter().filter(|c| c.name != "length").count();
        if elems != 1 {
            bad.push(format!("{p}: {elems} elements"));
        }
    }
    for c in &n.children {
        check_rules(c, legacy, &p, bad);
    }
}

#[test]
fn every_api_version_has_a_page_whose_sizes_hold() {
    let schema = Schema::embedded();
    let opts = page_options();
    let ropts = RenderOptions::default();
    let mut bad = Vec::new();
    let mut n = 0;
    for key in schema.api_keys() {
        for v in schema.versions(MessageKind::Request, key) {
            let page = match Page::build(&schema, key, v) {
                Ok(p) => p,
                Err(e) => {
                    bad.push(format!("api {key} v{v}: {e}"));
                    continue;
                }
            };
            let mut text = Vec::new();
            kwire::page::text::render(&mut text, &schema, &page, &ropts).unwrap();
            let text = String::from_utf8(text).unwrap();
            for side in page.sides() {
                let request = side.kind == MessageKind::Request;
                let what = format!("api {key} v{v} {}", side.label());
                // The same instance the encoder makes from `minimal`.
                let frame = encode(&schema, &minimal(&schema, key, v, request)).unwrap();
                if frame != side.frame {
                    bad.push(format!("{what}: page frame differs from encode(minimal)"));
                }
                let arena = Buffers::new();
                let known = if request {
                    Known::request()
                } else {
                    Known::response(key, v)
                };
                let m = decode(&schema, &opts, &arena, &frame, &known);
                if !m.errors().is_empty() || !m.warnings().is_empty() {
                    bad.push(format!("{what}: {:?} {:?}", m.errors(), m.warnings()));
                }
                if let Err(e) = leaves_tile(&m) {
                    bad.push(format!("{what}: {e}"));
                }
                let hv = if request {
                    schema.request_header_version(key, v)
                } else {
                    schema.response_header_version(key, v)
                };
                if m.header_version != hv || m.api_key != key || m.api_version != v {
                    bad.push(format!(
                        "{what}: decoded as api {} v{} header v{}",
                        m.api_key, m.api_version, m.header_version
                    ));
                }
                let size_row = if request {
                    "Request size"
                } else {
                    "Response size"
                };
                if meta(&text, size_row) != Some(format!("{} bytes", frame.len())) {
                    bad.push(format!("{what}: page says {:?}", meta(&text, size_row)));
                }
                let title = format!(
                    "{} v{v}, {} header v{hv}, {} bytes on the wire",
                    side.message_name,
                    side.label(),
                    frame.len()
                );
                if !text.contains(&title) {
                    bad.push(format!("{what}: no title line {title:?}"));
                }
                let legacy = (key == 0 && v < 3) || (key == 1 && v < 4);
                for c in &m.tree.children {
                    check_rules(c, legacy, &what, &mut bad);
                }
                n += 1;
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} problems:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(n > 700, "only {n} sides");
}

#[test]
fn minimal_records_are_one_empty_batch_or_an_empty_message_set() {
    let schema = Schema::embedded();
    let batch = empty_batch();
    for (key, v, request, legacy) in [
        (0, 2, true, true),
        (0, 3, true, false),
        (0, 13, true, false),
        (1, 3, false, true),
        (1, 4, false, false),
        (1, 18, false, false),
    ] {
        let inst = minimal(&schema, key, v, request);
        let recs: Vec<&Value> = find_key(&inst, "Records");
        assert_eq!(recs.len(), 1, "api {key} v{v}");
        let want = if legacy {
            serde_json::json!([])
        } else {
            serde_json::json!([batch])
        };
        assert_eq!(recs[0], &want, "api {key} v{v}");
    }
    let frame = encode(&schema, &minimal(&schema, 0, 13, true)).unwrap();
    assert_eq!(frame.len(), 109);
}

fn find_key<'v>(v: &'v Value, key: &str) -> Vec<&'v Value> {
    let mut out = Vec::new();
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == key {
                    out.push(x);
                } else {
                    out.extend(find_key(x, key));
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| out.extend(find_key(x, key))),
        _ => {}
    }
    out
}

#[test]
fn index_groups_by_listeners() {
    let dir = tempdir("index");
    let out = kwire()
        .args(["pages", "--format", "md", "--all-versions", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = std::fs::read_to_string(dir.join("index.md")).unwrap();
    let section = |name: &str| -> String {
        index
            .split(&format!("\n## {name}\n"))
            .nth(1)
            .map(|s| s.split("\n## ").next().unwrap().to_string())
            .unwrap_or_default()
    };
    // DeleteTopics lists broker and controller; Vote controller only; UpdateMetadata zkBroker.
    assert!(section("broker").contains("[DeleteTopics](DeleteTopics.md)"));
    assert!(section("controller").contains("[DeleteTopics](DeleteTopics.md)"));
    assert!(section("controller").contains("[Vote](Vote.md)"));
    assert!(!section("broker").contains("[Vote](Vote.md)"));
    assert!(section("zkBroker").contains("[UpdateMetadata](UpdateMetadata.md)"));
    assert!(index.contains("[v1](DeleteTopics-v1.md)"));
    assert!(dir.join("DeleteTopics-v1.md").exists());
    assert!(dir.join("Produce-v0.md").exists());
    // Every link names a file that exists.
    for part in index.split("](").skip(1) {
        let f = part.split(')').next().unwrap();
        assert!(dir.join(f).exists(), "{f}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn tempdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kwire-pages-{tag}-{}", std::process::id()));
    std::fs::remove_dir_all(&d).ok();
    d
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `docs/reference` is what `kwire pages --out docs/reference --format md` makes with
/// the embedded schema; regenerate it with that command when this fails.
#[test]
fn docs_reference_is_current() {
    let dir = tempdir("docs");
    let out = kwire()
        .args(["pages", "--format", "md", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference");
    let fix = "run `kwire pages --out docs/reference --format md` (cargo run -- pages --out docs/reference --format md)";
    assert_eq!(
        files(&dir),
        files(&docs),
        "docs/reference lists other files: {fix}"
    );
    for f in files(&dir) {
        let a = std::fs::read_to_string(dir.join(&f)).unwrap();
        let b = std::fs::read_to_string(docs.join(&f)).unwrap();
        assert!(a == b, "docs/reference/{f} is stale: {fix}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
