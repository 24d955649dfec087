//! Random instances of every (api_key, version), request and response, in the values
//! shape: they encode, decode with no error or warning, their leaves tile the frame,
//! and `to_values(decode(encode(v))) == v`.
//!
//! The instances come from a seeded generator that follows the schema: arrays of 0-3
//! elements, nulls where nullable, tagged fields present and absent (and unknown tags),
//! integers across their ranges, strings, bytes, uuids, floats, and records (v2 batches
//! in every compression, or legacy message sets in Produce v0-2 / Fetch v0-3).

mod encode_common;

use encode_common::decode_check;
use encode_common::gen::{all_pairs, instance};
use kwire::encode::encode;
use kwire::schema::Schema;
use proptest::prelude::*;

fn check(schema: &Schema, key: i16, v: i16, request: bool, seed: u64) -> Result<(), String> {
    let inst = instance(schema, key, v, request, seed);
    let what = format!(
        "api {key} v{v} {} seed {seed}",
        if request { "request" } else { "response" }
    );
    let frame = encode(schema, &inst).map_err(|e| format!("{what}: encode: {e}\n{inst}"))?;
    let back = decode_check(schema, &frame, request, key, v)
        .map_err(|e| format!("{what}: {e}\n{inst}"))?;
    if back != inst {
        return Err(format!("{what}: values differ\n want {inst}\n got  {back}"));
    }
    Ok(())
}

/// Every (api_key, version, kind) with a few fixed seeds: full coverage, reproducible.
#[test]
fn every_api_version_random_instances() {
    let schema = Schema::embedded();
    let mut failures = Vec::new();
    for (key, v, request) in all_pairs(&schema) {
        for seed in [1u64, 2, 3] {
            if let Err(e) = check(
                &schema,
                key,
                v,
                request,
                seed * 7919 + key as u64 * 131 + v as u64,
            ) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// A random (api_key, version, kind) with a random seed.
    #[test]
    fn random_instances_round_trip(pick in any::<u64>(), seed in any::<u64>()) {
        let schema = Schema::embedded();
        let pairs = all_pairs(&schema);
        let (key, v, request) = pairs[(pick % pairs.len() as u64) as usize];
        if let Err(e) = check(&schema, key, v, request, seed) {
            prop_assert!(false, "{}", e);
        }
    }
}

mod errors {
    use kwire::encode::{encode, EncodeError, EncodeErrorKind};
    use kwire::schema::Schema;
    use serde_json::{json, Value};

    fn delete_topics(version: i16, body: Value) -> Value {
        json!({"kind": "request", "api_name": "DeleteTopics", "api_version": version,
               "header": {"correlation_id": 7, "client_id": "me"}, "body": body})
    }

    fn err(v: &Value) -> EncodeError {
        encode(&Schema::embedded(), v).unwrap_err()
    }

    #[test]
    fn unknown_field() {
        let e = err(&delete_topics(
            6,
            json!({"Topics": [{"Name": "a", "Nme": "b"}]}),
        ));
        assert_eq!(e.path, "body.Topics[0].Nme");
        assert_eq!(e.kind, EncodeErrorKind::UnknownField);
        assert_eq!(e.to_string(), "body.Topics[0].Nme: unknown field");
        let e = err(&json!({"kind": "request", "api_key": 20, "api_version": 6, "bdy": {}}));
        assert_eq!(
            (e.path.as_str(), e.kind),
            ("bdy", EncodeErrorKind::UnknownField)
        );
        let e = err(&json!({"kind": "request", "api_key": 20, "api_version": 6,
                            "header": {"client_idd": ""}}));
        assert_eq!(e.path, "header.client_idd");
    }

    #[test]
    fn wrong_type() {
        let e = err(&delete_topics(6, json!({"Topics": [{"Name": 5}]})));
        assert_eq!(e.path, "body.Topics[0].Name");
        assert!(
            matches!(
                e.kind,
                EncodeErrorKind::WrongType {
                    found: "number",
                    ..
                }
            ),
            "{e}"
        );
        let e = err(&delete_topics(6, json!({"TimeoutMs": "soon"})));
        assert_eq!(e.path, "body.TimeoutMs");
        assert!(matches!(e.kind, EncodeErrorKind::WrongType { .. }));
        let e = err(&delete_topics(6, json!({"Topics": {"Name": "a"}})));
        assert_eq!(e.path, "body.Topics");
        let e = err(&delete_topics(
            6,
            json!({"Topics": [{"TopicId": "not-a-uuid"}]}),
        ));
        assert_eq!(e.path, "body.Topics[0].TopicId");
        assert!(matches!(e.kind, EncodeErrorKind::BadValue(_)));
    }

    #[test]
    fn absent_in_version() {
        // DeleteTopics v5 has TopicNames, not Topics.
        let e = err(&delete_topics(5, json!({"Topics": []})));
        assert_eq!(e.path, "body.Topics");
        assert_eq!(e.kind, EncodeErrorKind::AbsentInVersion { version: 5 });
        assert_eq!(
            e.to_string(),
            "body.Topics: field is not present in version 5"
        );
        // Metadata v0 partitions have no LeaderEpoch (v7+): a nested path.
        let e = err(&json!({"kind": "response", "api_key": 3, "api_version": 0,
            "body": {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "LeaderEpoch": 1}]}]}}));
        assert_eq!(e.path, "body.Topics[0].Partitions[0].LeaderEpoch");
        assert_eq!(e.kind, EncodeErrorKind::AbsentInVersion { version: 0 });
        // Tags exist only in flexible versions.
        let e = err(&delete_topics(3, json!({"_unknown_tags": {"1": "00"}})));
        assert_eq!(e.path, "body._unknown_tags");
    }

    #[test]
    fn null_and_range() {
        let e = err(&delete_topics(6, json!({"Topics": null})));
        assert_eq!(
            (e.path.as_str(), e.kind),
            ("body.Topics", EncodeErrorKind::NotNullable { version: 6 })
        );
        let e = err(&delete_topics(6, json!({"TimeoutMs": 2147483648i64})));
        assert_eq!(e.path, "body.TimeoutMs");
        assert!(matches!(e.kind, EncodeErrorKind::OutOfRange { .. }));
        let e = err(&json!({"kind": "request", "api_key": 20, "api_version": 99}));
        assert_eq!(e.path, "api_version");
        let e = err(&json!({"kind": "request", "api_name": "NoSuchApi", "api_version": 1}));
        assert_eq!(e.path, "api_name");
        let e = err(
            &json!({"kind": "request", "api_key": 0, "api_version": 9, "body": {
            "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": [{"magic": 2,
            "attributes": {"compression": "brotli"}}]}]}]}}),
        );
        assert_eq!(
            e.path,
            "body.TopicData[0].PartitionData[0].Records[0].attributes.compression"
        );
    }

    #[test]
    fn defaults_fill_missing_fields() {
        let schema = Schema::embedded();
        let a = encode(
            &schema,
            &json!({"kind": "request", "api_key": 20, "api_version": 6,
                                         "header": {"correlation_id": 0, "client_id": ""}}),
        )
        .unwrap();
        let b = encode(
            &schema,
            &json!({"kind": "request", "api_key": 20, "api_version": 6,
                                         "header": {"correlation_id": 0, "client_id": ""},
                                         "body": {"Topics": [], "TimeoutMs": 0}}),
        )
        .unwrap();
        assert_eq!(a, b);
    }
}
