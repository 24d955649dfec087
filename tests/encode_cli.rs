//! `kwire encode` at the command line: JSON in the values shape to frames (hex or raw),
//! back through `kwire decode --format values` to the same JSON; NDJSON; defaults;
//! errors that name the field's path.

mod common;
use common::kwire;

use assert_cmd::Command;
use kwire::encode::minimal::minimal;
use kwire::schema::Schema;
use serde_json::{json, Value};

fn run_ok(c: &mut Command) -> Vec<u8> {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Sets `path` (`body.Topics.0.Name`) in `v`.
fn set(v: &mut Value, path: &str, x: Value) {
    let mut cur = v;
    for p in path.split('.') {
        cur = match p.parse::<usize>() {
            Ok(i) => &mut cur[i],
            Err(_) => &mut cur[p],
        };
    }
    *cur = x;
}

/// Messages with values other than the minimal ones, complete (every field given), so
/// that `decode --format values` must give back exactly the JSON.
fn messages() -> Vec<Value> {
    let s = Schema::embedded();
    let mut out = Vec::new();
    let mut m = minimal(&s, 20, 6, true);
    set(&mut m, "header.correlation_id", json!(7));
    set(&mut m, "header.client_id", json!("kwire-test"));
    set(&mut m, "body.Topics.0.Name", json!("orders"));
    set(
        &mut m,
        "body.Topics.0.TopicId",
        json!("6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
    );
    set(&mut m, "body.TimeoutMs", json!(30000));
    out.push(m);
    let mut m = minimal(&s, 20, 6, false);
    set(&mut m, "header.correlation_id", json!(7));
    set(&mut m, "body.Responses.0.ErrorCode", json!(3));
    set(&mut m, "body.Responses.0.ErrorMessage", Value::Null);
    out.push(m);
    let mut m = minimal(&s, 20, 3, true);
    set(&mut m, "body.TopicNames", json!(["a", "b", "c"]));
    out.push(m);
    // Produce v9 with one record in its batch.
    let mut m = minimal(&s, 0, 9, true);
    set(&mut m, "body.Acks", json!(-1));
    set(&mut m, "body.TopicData.0.Name", json!("t"));
    let batch = &mut m["body"]["TopicData"][0]["PartitionData"][0]["Records"][0];
    batch["records"] = json!([{"attributes":0,"timestampDelta":0,"offsetDelta":0,
        "key":null,"value":"68656c6c6f","headers":[{"key":"trace","value":"01"}]}]);
    batch["baseTimestamp"] = json!(1_700_000_000_000i64);
    batch["maxTimestamp"] = json!(1_700_000_000_000i64);
    batch["producerId"] = json!(-1);
    batch["producerEpoch"] = json!(-1);
    batch["baseSequence"] = json!(-1);
    out.push(m);
    // Metadata v12 with null topics; ApiVersions v3 response; Fetch v4 response.
    let mut m = minimal(&s, 3, 12, true);
    set(&mut m, "body.Topics", Value::Null);
    set(&mut m, "body.AllowAutoTopicCreation", json!(true));
    out.push(m);
    let mut m = minimal(&s, 18, 3, false);
    set(&mut m, "body.ApiKeys.0.MaxVersion", json!(13));
    out.push(m);
    out.push(minimal(&s, 1, 4, false));
    out.push(minimal(&s, 0, 2, true));
    out
}

fn decode_values(hex: &str, m: &Value) -> Value {
    let mut c = kwire();
    c.args(["decode", "--format", "values", "--hex", hex]);
    if m["kind"] == "response" {
        c.args([
            "--api-key",
            &m["api_key"].to_string(),
            "--api-version",
            &m["api_version"].to_string(),
        ]);
    }
    let out = String::from_utf8(run_ok(&mut c)).unwrap();
    serde_json::from_str(out.trim()).unwrap()
}

#[test]
fn encode_then_decode_gives_back_the_json() {
    let msgs = messages();
    // One value at a time, from stdin and from a file.
    for m in &msgs {
        let hex = String::from_utf8(run_ok(
            kwire().args(["encode", "-"]).write_stdin(m.to_string()),
        ))
        .unwrap();
        let hex = hex.trim();
        assert_eq!(hex.lines().count(), 1);
        assert_eq!(&decode_values(hex, m), m, "{hex}");
    }
    // NDJSON: one frame a line, in order.
    let nd: String = msgs.iter().map(|m| format!("{m}\n")).collect();
    let path = std::env::temp_dir().join(format!("kwire-encode-{}.ndjson", std::process::id()));
    std::fs::write(&path, &nd).unwrap();
    let out = String::from_utf8(run_ok(kwire().arg("encode").arg(&path))).unwrap();
    std::fs::remove_file(&path).ok();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), msgs.len());
    for (l, m) in lines.iter().zip(&msgs) {
        assert_eq!(&decode_values(l, m), m);
    }
}

#[test]
fn raw_output_is_the_frame_bytes() {
    let m = &messages()[0];
    let raw = run_ok(
        kwire()
            .args(["encode", "--format", "raw"])
            .write_stdin(m.to_string()),
    );
    let hex = String::from_utf8(run_ok(kwire().arg("encode").write_stdin(m.to_string()))).unwrap();
    let from_hex: Vec<u8> = (0..hex.trim().len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex.trim()[i..i + 2], 16).unwrap())
        .collect();
    assert_eq!(raw, from_hex);
    let back = run_ok(
        kwire()
            .args(["decode", "--raw", "-", "--format", "values"])
            .write_stdin(raw),
    );
    let back: Value = serde_json::from_slice(&back).unwrap();
    assert_eq!(&back, m);
}

#[test]
fn left_out_fields_take_their_defaults() {
    // The seed request: everything but one topic left to the defaults.
    let v = json!({"api_name":"deletetopics","api_version":6,"kind":"request",
        "body":{"Topics":[{"Name":""}]}});
    let hex = String::from_utf8(run_ok(kwire().arg("encode").write_stdin(v.to_string()))).unwrap();
    assert_eq!(
        hex.trim(),
        "000000230014000600000000000000020100000000000000000000000000000000000000000000"
    );
    // api_key in place of api_name; no body at all.
    let v = json!({"api_key":20,"api_version":6,"kind":"response"});
    let hex = String::from_utf8(run_ok(kwire().arg("encode").write_stdin(v.to_string()))).unwrap();
    assert_eq!(hex.trim(), "0000000b0000000000000000000100");
}

#[test]
fn bad_values_name_the_field() {
    let base = || json!({"api_name":"DeleteTopics","api_version":6,"kind":"request"});
    let mut cases: Vec<(String, &str)> = Vec::new();
    let mut v = base();
    v["body"] = json!({"Topics":[{"Nme":"x"}]});
    cases.push((v.to_string(), "body.Topics[0].Nme: unknown field"));
    let mut v = base();
    v["body"] = json!({"TimeoutMs":"soon"});
    cases.push((
        v.to_string(),
        "body.TimeoutMs: expected int32, found string",
    ));
    let mut v = base();
    v["body"] = json!({"TopicNames":["a"]});
    cases.push((
        v.to_string(),
        "body.TopicNames: field is not present in version 6",
    ));
    let mut v = base();
    v["body"] = json!({"TimeoutMs":2147483648i64});
    cases.push((v.to_string(), "body.TimeoutMs: 2147483648 is out of range"));
    let mut v = base();
    v["header"] = json!({"client":"x"});
    cases.push((v.to_string(), "header.client: unknown field"));
    let mut v = base();
    v["api_version"] = json!(99);
    cases.push((
        v.to_string(),
        "api_version: no request definition for version 99",
    ));
    cases.push((
        r#"{"api_name":"Nope","api_version":0,"kind":"request"}"#.into(),
        "api_name: unknown API Nope",
    ));
    // The second value of an NDJSON stream is the bad one: nothing is written.
    let mut v = base();
    v["body"] = json!({"Topics":[{"TopicId":"not-a-uuid"}]});
    cases.push((
        format!("{}\n{}\n", base(), v),
        "value 2 (line 2): body.Topics[0].TopicId: not a uuid",
    ));
    cases.push(("{\"kind\":".into(), "JSON"));
    cases.push(("".into(), "no JSON value"));
    for (input, want) in cases {
        let out = kwire()
            .arg("encode")
            .write_stdin(input.clone())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{input}: exited 0");
        assert!(out.stdout.is_empty(), "{input}: wrote {:?}", out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{input}: {err}");
    }
}
