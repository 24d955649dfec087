//! Minimal instances: the seed page's exact bytes, and every (api_key, version) of the
//! embedded schema, request and response, encodes, decodes cleanly, tiles and gives
//! back the same values.

mod encode_common;

use encode_common::{decode_check, hex};
use kwire::encode::{encode, minimal::minimal};
use kwire::schema::{MessageKind, Schema};

#[test]
fn seed_delete_topics_v6() {
    let schema = Schema::embedded();
    let req = encode(&schema, &minimal(&schema, 20, 6, true)).unwrap();
    assert_eq!(
        hex(&req),
        "000000230014000600000000000000020100000000000000000000000000000000000000000000"
    );
    let resp = encode(&schema, &minimal(&schema, 20, 6, false)).unwrap();
    assert_eq!(
        hex(&resp),
        "000000200000000000000000000201000000000000000000000000000000000000010000"
    );
    assert_eq!(
        minimal(&schema, 20, 6, true),
        serde_json::json!({"kind":"request","api_key":20,"api_name":"DeleteTopics","api_version":6,
            "header":{"correlation_id":0,"client_id":""},
            "body":{"Topics":[{"Name":"","TopicId":"00000000-0000-0000-0000-000000000000"}],"TimeoutMs":0}})
    );
}

#[test]
fn every_api_version_round_trips() {
    let schema = Schema::embedded();
    let mut n = 0;
    let mut failures = Vec::new();
    for key in schema.api_keys() {
        for (request, kind) in [(true, MessageKind::Request), (false, MessageKind::Response)] {
            for v in schema.versions(kind, key) {
                let inst = minimal(&schema, key, v, request);
                assert!(!inst.is_null(), "{key} v{v}");
                let what = format!(
                    "api {key} v{v} {}",
                    if request { "request" } else { "response" }
                );
                let frame = match encode(&schema, &inst) {
                    Ok(f) => f,
                    Err(e) => {
                        failures.push(format!("{what}: encode: {e}"));
                        continue;
                    }
                };
                match decode_check(&schema, &frame, request, key, v) {
                    Ok(back) if back == inst => {}
                    Ok(back) => failures.push(format!("{what}: values differ:\n {inst}\n {back}")),
                    Err(e) => failures.push(format!("{what}: {e}")),
                }
                n += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(n > 500, "only {n} instances");
}

#[test]
fn records_in_produce_and_fetch() {
    let schema = Schema::embedded();
    for (key, v, request, want) in [
        (0, 2, true, 0usize),
        (0, 3, true, 61),
        (1, 3, false, 0),
        (1, 4, false, 61),
    ] {
        let inst = minimal(&schema, key, v, request);
        let f0 = encode(&schema, &inst).unwrap();
        // The same instance with the records field emptied is shorter by the batch.
        let s = inst.to_string().replace(
            &serde_json::to_string(&kwire::encode::records::empty_batch()).unwrap(),
            "",
        );
        let f1 = encode(&schema, &serde_json::from_str(&s).unwrap()).unwrap();
        assert_eq!(f0.len() - f1.len(), want, "api {key} v{v}");
    }
}
