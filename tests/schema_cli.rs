//! `kwire apis`, `kwire schema` and `kwire schema import` as a user runs them.

mod common;

use assert_cmd::Command;
use serde_json::Value as J;

fn kwire() -> Command {
    let mut c = Command::cargo_bin("kwire").unwrap();
    c.env_remove("KWIRE_SCHEMA");
    c
}

fn out(c: &mut Command) -> String {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn schema_grammar_in_the_protocol_guide_style() {
    let s = out(kwire().args(["schema", "deletetopics"]));
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[0],
        "DeleteTopics Request (Version: 6) => [topics] timeout_ms _tagged_fields"
    );
    assert_eq!(lines[1], "  topics => name topic_id _tagged_fields");
    assert_eq!(lines[2], "    name => COMPACT_NULLABLE_STRING");
    assert!(s.contains("request header v2"), "{s}");
    assert!(s.contains(
        "DeleteTopics Response (Version: 6) => throttle_time_ms [responses] _tagged_fields"
    ));
    assert!(s.contains("response header v1"));
    // by api_key and by message name, and an older version from an older release
    assert_eq!(out(kwire().args(["schema", "20"])), s);
    let v0 = out(kwire().args(["schema", "DeleteTopicsRequest", "--version", "0"]));
    assert!(
        v0.starts_with("DeleteTopics Request (Version: 0) => [topic_names] timeout_ms\n"),
        "{v0}"
    );
    assert!(v0.contains("Kafka 3.9"));
    // tagged fields are marked
    let av = out(kwire().args(["schema", "ApiVersions", "--version", "3"]));
    assert!(av.contains("(tagged, tag 0)"), "{av}");
    // --json gives the facts, which hold no about text
    let j: J =
        serde_json::from_str(out(kwire().args(["schema", "DeleteTopicsRequest", "--json"])).trim())
            .unwrap();
    assert_eq!(j["validVersions"], "1-6");
    assert!(!out(kwire().args(["schema", "DeleteTopicsRequest", "--json"])).contains("\"about\""));
    // unknown names and versions are errors that say so
    let o = kwire().args(["schema", "NoSuchApi"]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no API or message named"));
    let o = kwire()
        .args(["schema", "DeleteTopics", "--version", "42"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("has no version 42"));
}

#[test]
fn schema_json_with_a_runtime_schema_is_the_raw_file() {
    let dir = common::fixtures().join("schema/good");
    let s = out(kwire()
        .args(["schema", "DeleteTopicsRequest", "--json", "--schema"])
        .arg(&dir));
    assert!(s.contains("/* versions 1-6; flexible from 4 */"), "{s}");
    let e = kwire()
        .args(["apis", "--schema"])
        .arg(common::fixtures().join("schema/empty"))
        .output()
        .unwrap();
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("holds no Kafka message definitions"));
}

#[test]
fn apis_lists_every_key() {
    let j: J = serde_json::from_str(&out(kwire().args(["apis", "--format", "json"]))).unwrap();
    let a = j.as_array().unwrap();
    assert_eq!(a.len(), 95);
    let dt = a.iter().find(|x| x["api_key"] == 20).unwrap();
    assert_eq!(
        (dt["min_version"].as_i64(), dt["max_version"].as_i64()),
        (Some(1), Some(6))
    );
    assert_eq!(dt["legacy_versions"], serde_json::json!([0]));
    let text = out(kwire().args(["apis"]));
    assert!(
        text.lines()
            .any(|l| l.contains("UpdateMetadata") && l.contains("removed in 4.0")),
        "{text}"
    );
}

#[test]
fn schema_import_rebuilds_the_embedded_facts() {
    let Some(sh) = common::shared("schema_import_rebuilds_the_embedded_facts") else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("kwire-import-{}.jsonl", std::process::id()));
    out(kwire()
        .args(["schema", "import"])
        .arg(sh.join("kafka-schema"))
        .arg("--out")
        .arg(&tmp));
    let got = std::fs::read_to_string(&tmp).unwrap();
    let _ = std::fs::remove_file(&tmp);
    assert!(
        got == kwire::schema::load::EMBEDDED,
        "re-importing changed the embedded facts"
    );
}
