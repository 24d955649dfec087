//! JSON, values, summary and hexdump printers; JSON Schema validation of `--format json`.

mod common;

use common::*;
use kwire::decode::{decode, DecodeOptions, Known};
use kwire::render::{self, json, summary, text, values, Format, RenderOptions};
use kwire::schema::Schema;
use kwire::session::Context;
use kwire::tree::{Buffers, Message, Node, NodeKind, Value};
use serde_json::Value as J;

fn validator() -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/kwire-message.schema.json"
    );
    let schema: J = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

fn assert_valid(v: &jsonschema::Validator, line: &J) {
    let errs: Vec<String> = v
        .iter_errors(line)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errs.is_empty(), "{errs:#?}\n{line}");
}

fn ctx() -> Context {
    Context {
        frames: (7, 8),
        time: (1_714_557_600, 5),
        src: "10.0.0.1:51234".into(),
        dst: "10.0.0.2:9092".into(),
        connection: 2,
        latency: Some(std::time::Duration::from_micros(2500)),
        incomplete: false,
        ..Context::default()
    }
}

fn json_line(m: &Message<'_>, c: Option<&Context>) -> (String, J) {
    let mut v = Vec::new();
    json::render(&mut v, m, c, false).unwrap();
    let s = String::from_utf8(v).unwrap();
    assert!(s.ends_with('\n'));
    assert_eq!(s.lines().count(), 1, "one line per message");
    let j = serde_json::from_str(&s).unwrap();
    (s, j)
}

#[test]
fn json_message_keys_and_nodes() {
    let f = unhex(REQ_HEX);
    let m = request(&f);
    let (_, j) = json_line(&m, None);
    for k in [
        "kind",
        "api_key",
        "api_name",
        "api_version",
        "correlation_id",
        "header_version",
        "size",
        "schema_release",
        "errors",
        "warnings",
        "tree",
    ] {
        assert!(j.get(k).is_some(), "lacks {k}");
    }
    assert_eq!(j["kind"], "request");
    assert_eq!(j["api_key"], 20);
    assert_eq!(j["api_name"], "DeleteTopics");
    assert_eq!(j["size"], 39);
    assert_eq!(j["header_version"], 2);
    assert!(j.get("frame").is_none());
    let t = &j["tree"];
    assert_eq!(
        (t["name"].as_str(), t["type"].as_str()),
        (Some("DeleteTopicsRequest"), Some("message v6"))
    );
    assert!(t.get("buffer").is_none());
    let kids = t["children"].as_array().unwrap();
    let names: Vec<(&str, &str)> = kids
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("Frame", "frame"),
            ("RequestHeader", "header v2"),
            ("DeleteTopicsRequest", "struct")
        ]
    );
    let body = &kids[2];
    let topics = &body["children"][0];
    assert_eq!(topics["value"], J::Null);
    let st = &topics["children"][1];
    assert_eq!(
        (st["name"].as_str(), st["type"].as_str()),
        (Some("DeleteTopicState[0]"), Some("DeleteTopicState"))
    );
    assert_eq!(
        st["children"][1]["value"],
        "00000000-0000-0000-0000-000000000000"
    );
    assert_eq!(st["children"][0]["annotation"], "compact, len+1=1");
    let timeout = &body["children"][1];
    assert_eq!(timeout["name"], "TimeoutMs");
    assert_eq!(timeout["type"], "int32");
    assert_eq!(
        (timeout["offset"].as_u64(), timeout["length"].as_u64()),
        (Some(0x22), Some(4))
    );
    assert!(timeout.get("children").is_none());
    let client = &kids[1]["children"][3];
    assert_eq!(
        (client["value"].as_str(), client["offset"].as_u64()),
        (Some(""), Some(12))
    );
}

#[test]
fn json_context_keys() {
    let f = unhex(RESP_HEX);
    let m = response(&f);
    let (_, j) = json_line(&m, Some(&ctx()));
    assert_eq!(j["frame"], serde_json::json!([7, 8]));
    assert_eq!(j["time"], "2024-05-01T10:00:00.000000005Z");
    assert_eq!(j["src"], "10.0.0.1:51234");
    assert_eq!(j["dst"], "10.0.0.2:9092");
    assert_eq!(j["connection"], 2);
    assert_eq!(j["latency_ms"], 2.5);
    assert_eq!(j["incomplete"], false);
    assert_valid(&validator(), &j);
}

#[test]
fn json_values_and_errors() {
    let big = [1u8, 2, 0xab];
    let mut root = Node::new("X", "message v0", NodeKind::Message, 0);
    root.length = 3;
    let mut kids = vec![
        Node::leaf("a", "int64", Value::Int(i64::MIN), 0, 1),
        Node::leaf("b", "uint32", Value::UInt(u64::MAX), 0, 1),
        Node::leaf("c", "int64", Value::Int(1 << 53), 0, 1),
        Node::leaf("d", "bytes", Value::Bytes(&big), 0, 3),
        Node::leaf("e", "bool", Value::Bool(true), 0, 1),
        Node::leaf("f", "float64", Value::Float(1.5), 0, 1),
        Node::leaf("g", "string", Value::Null, 0, 1),
        Node::leaf("h", "[]int32", Value::Count(3), 0, 1),
    ];
    let mut inner = Node::leaf("Record[0]", "Record", Value::Bytes(&big), 1, 2);
    inner.buffer = 1;
    inner.set_error("bad");
    inner.set_warning("odd");
    kids.push(inner);
    root.children = common::kids(kids);
    let m = Message {
        direction: kwire::tree::Direction::Response,
        api_key: 99,
        api_name: None,
        api_version: 0,
        correlation_id: None,
        header_version: 0,
        size: 3,
        schema_release: None,
        frame: &big,
        buffers: vec![&big],
        tree: root,
        guess: None,
    };
    let (_, j) = json_line(&m, None);
    let c = &j["tree"]["children"];
    assert_eq!(c[0]["value"], "-9223372036854775808");
    assert_eq!(c[1]["value"], "18446744073709551615");
    assert_eq!(c[2]["value"], 9007199254740992u64);
    assert_eq!(c[3]["value"], "0102ab");
    assert_eq!(c[4]["value"], true);
    assert_eq!(c[5]["value"], 1.5);
    assert_eq!(c[6]["value"], J::Null);
    assert_eq!(c[7]["value"], J::Null);
    assert_eq!(c[8]["buffer"], 1);
    assert_eq!(c[8]["error"], "bad");
    assert_eq!(
        j["errors"],
        serde_json::json!([{"offset": 1, "buffer": 1, "message": "bad"}])
    );
    assert_eq!(
        j["warnings"],
        serde_json::json!([{"offset": 1, "buffer": 1, "message": "odd"}])
    );
    assert_eq!(j["api_name"], J::Null);
    assert_eq!(j["correlation_id"], J::Null);
    assert_valid(&validator(), &j);
}

#[test]
fn schema_accepts_seed_lines_and_rejects_broken_ones() {
    let v = validator();
    let (f, g) = (unhex(REQ_HEX), unhex(RESP_HEX));
    for m in [request(&f), response(&g)] {
        // A message of one of several captures (`kwire read A B`) has a `capture` key.
        let several = Context {
            capture: Some("broker-1.pcap".into()),
            ..ctx()
        };
        for c in [None, Some(ctx()), Some(several)] {
            let (_, j) = json_line(&m, c.as_ref());
            assert_valid(&v, &j);
        }
    }
    let several = Context {
        capture: Some("b.pcap".into()),
        ..ctx()
    };
    let (_, j) = json_line(&request(&f), Some(&several));
    assert_eq!(j["capture"], "b.pcap");
    let (_, mut j) = json_line(&request(&f), Some(&several));
    j["capture"] = J::from(1);
    assert!(!v.is_valid(&j));
    let (_, mut j) = json_line(&request(&f), None);
    j.as_object_mut().unwrap().remove("tree");
    assert!(!v.is_valid(&j));
    let (_, mut j) = json_line(&request(&f), None);
    j["tree"]["children"][0]["offset"] = J::from(-1);
    assert!(!v.is_valid(&j));
    let (_, mut j) = json_line(&request(&f), None);
    j["tree"]["surprise"] = J::from(1);
    assert!(!v.is_valid(&j));
}

#[test]
fn ndjson_is_one_line_per_message() {
    let (f, g) = (unhex(REQ_HEX), unhex(RESP_HEX));
    let mut out = Vec::new();
    for m in [request(&f), response(&g)] {
        render::render(&mut out, Format::Json, &m, None, &RenderOptions::default()).unwrap();
    }
    let s = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 2);
    for l in lines {
        let j: J = serde_json::from_str(l).unwrap();
        assert_valid(&validator(), &j);
    }
}

#[test]
fn values_shape() {
    let (f, g) = (unhex(REQ_HEX), unhex(RESP_HEX));
    let mut out = Vec::new();
    values::render(&mut out, &request(&f)).unwrap();
    values::render(&mut out, &response(&g)).unwrap();
    let s = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[0],
        r#"{"kind":"request","api_key":20,"api_name":"DeleteTopics","api_version":6,"header":{"correlation_id":0,"client_id":""},"body":{"Topics":[{"Name":"","TopicId":"00000000-0000-0000-0000-000000000000"}],"TimeoutMs":0}}"#
    );
    assert_eq!(
        lines[1],
        r#"{"kind":"response","api_key":20,"api_name":"DeleteTopics","api_version":6,"header":{"correlation_id":0},"body":{"ThrottleTimeMs":0,"Responses":[{"Name":"","TopicId":"00000000-0000-0000-0000-000000000000","ErrorCode":0,"ErrorMessage":""}]}}"#
    );
}

#[test]
fn summary_lines() {
    let (f, g) = (unhex(REQ_HEX), unhex(RESP_HEX));
    let o = RenderOptions::default();
    assert_eq!(
        summary::line(&request(&f), None, &o),
        "DeleteTopics v6 request corr=0 topics=id:AAAAAAAAAAAAAAAAAAAAAA"
    );
    let mut r = response(&g);
    {
        let st = &mut r.tree.children[2].children[1].children[1];
        st.children[0].value = Value::Str("orders");
        st.children[2].value = Value::Int(3);
        st.children[2].annotation = Some("UNKNOWN_TOPIC_OR_PARTITION");
    }
    assert_eq!(
        summary::line(&r, Some(&ctx()), &o),
        "#7-8 2024-05-01T10:00:00.000000005Z 10.0.0.1:51234 -> 10.0.0.2:9092 DeleteTopics v6 response corr=0 \
         topics=orders errors=UNKNOWN_TOPIC_OR_PARTITION latency=2.500ms"
    );
}

#[test]
fn hexdump_through_hexyl() {
    let f = unhex(REQ_HEX);
    let m = request(&f);
    let mut out = Vec::new();
    render::hexdump::render(&mut out, &m, None, &RenderOptions::default()).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(s.starts_with("DeleteTopics v6 request"));
    assert!(s.contains("00 00 00 23 00 14 00 06"));
    assert!(!s.contains('\x1b'));
    let mut out = Vec::new();
    render::hexdump::render(
        &mut out,
        &m,
        None,
        &RenderOptions {
            color: true,
            ..RenderOptions::default()
        },
    )
    .unwrap();
    assert!(String::from_utf8(out).unwrap().contains('\x1b'));
}

#[test]
fn colour_choice() {
    use render::{color_enabled_with as c, ColorChoice::*};
    assert!(c(Always, false, true));
    assert!(!c(Never, true, false));
    assert!(c(Auto, true, false));
    assert!(!c(Auto, true, true));
    assert!(!c(Auto, false, false));
}

#[test]
fn rfc3339_dates() {
    assert_eq!(render::rfc3339(0, 0), "1970-01-01T00:00:00.000000000Z");
    assert_eq!(
        render::rfc3339(951_782_400, 1),
        "2000-02-29T00:00:00.000000001Z"
    );
    assert_eq!(
        render::rfc3339(1_700_000_000, 999_999_999),
        "2023-11-14T22:13:20.999999999Z"
    );
    assert_eq!(render::rfc3339(-1, 0), "1969-12-31T23:59:59.000000000Z");
}

/// The real decoder on the seed's two frames: the text tree has the reference's lines up
/// to `]`, the JSON validates.
#[test]
fn decoded_seed_frames() {
    let schema = Schema::embedded();
    let opts = DecodeOptions {
        page_mode: true,
        ..DecodeOptions::default()
    };
    let v = validator();
    for (hex, known, want) in [
        (REQ_HEX, Known::request(), reference_tree("## Request")),
        (
            RESP_HEX,
            Known::response(20, 6),
            reference_tree("## Response"),
        ),
    ] {
        let arena = Buffers::new();
        let f = unhex(hex);
        let m = decode(&schema, &opts, &arena, &f, &known);
        let (_, j) = json_line(&m, None);
        assert_valid(&v, &j);
        let mut out = Vec::new();
        text::tree(&mut out, &m, &RenderOptions::default()).unwrap();
        let s = String::from_utf8(out).unwrap();
        let got: Vec<&str> = s.lines().map(prefix).collect();
        let want: Vec<String> = match want {
            Some(w) => w.iter().map(|l| prefix(l).to_string()).collect(),
            None => {
                common::skip(
                    "decoded_seed_frames",
                    "the reference page (../shared/reference, through KWIRE_SHARED) was not found",
                );
                continue;
            }
        };
        assert_eq!(got, want);
    }
}

/// Every frame of the lab captures through every printer: no panic, JSON lines valid
/// against the schema, values lines parse, one summary line each.
#[test]
fn lab_frames_through_every_printer() {
    let Some(shared) = common::shared("lab_frames_through_every_printer") else {
        return;
    };
    let dir = shared.join("captures/lab/hex");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let schema = Schema::embedded();
    let dopts = DecodeOptions::default();
    let v = validator();
    let ropts = [
        RenderOptions::default(),
        RenderOptions {
            color: true,
            depth: Some(3),
            max_elements: 2,
            max_value_len: 8,
            ..RenderOptions::default()
        },
    ];
    let mut n = 0;
    for e in entries {
        let path = e.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut pending = std::collections::HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if parts.len() < 4 {
                continue;
            }
            let bytes = unhex(parts[3]);
            let known = if parts[0] == "c>s" {
                Known::request()
            } else {
                let corr = i32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
                match pending.get(&(parts[1].to_string(), corr)) {
                    Some(&(k, ver)) => Known::response(k, ver),
                    None => continue,
                }
            };
            let arena = Buffers::new();
            let m = decode(&schema, &dopts, &arena, &bytes, &known);
            if parts[0] == "c>s" {
                if let Some(c) = m.correlation_id {
                    pending.insert((parts[1].to_string(), c), (m.api_key, m.api_version));
                }
            }
            let (_, j) = json_line(&m, Some(&ctx()));
            assert_valid(&v, &j);
            let mut out = Vec::new();
            values::render(&mut out, &m).unwrap();
            let _: J = serde_json::from_slice(&out).unwrap();
            for o in &ropts {
                for fmt in [Format::Text, Format::Summary, Format::Hexdump] {
                    let mut out = Vec::new();
                    render::render(&mut out, fmt, &m, Some(&ctx()), o).unwrap();
                    if fmt == Format::Summary {
                        assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 1);
                    }
                }
            }
            n += 1;
        }
    }
    eprintln!("{n} lab frames rendered");
}
