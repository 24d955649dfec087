//! The schema foundation: every shared definition loads, the embedded stack resolves
//! versions to the right releases, header rules, malformed definitions, run-time schemas.

mod common;

use kwire::schema::{load, MessageKind, Schema, Source};
use std::io::Write;

#[test]
fn every_shared_definition_loads() {
    let Some(sh) = common::shared("every_shared_definition_loads") else {
        return;
    };
    let root = sh.join("kafka-schema");
    let mut n = 0;
    for rel in std::fs::read_dir(&root).unwrap() {
        let rel = rel.unwrap().path();
        if !rel.is_dir() {
            continue;
        }
        let defs = load::load_folder(&rel, Source::Release("x".into()), false)
            .unwrap_or_else(|e| panic!("{e}"));
        n += defs.len();
    }
    assert!(n >= 1315, "{n} definitions");
}

#[test]
fn reimport_changes_nothing() {
    let Some(sh) = common::shared("reimport_changes_nothing") else {
        return;
    };
    let root = sh.join("kafka-schema");
    let mut rels: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    rels.sort();
    let text = load::export_embedded(&rels).unwrap();
    assert!(text == load::EMBEDDED, "src/schema/embedded.jsonl is stale: run `kwire schema import ../shared/kafka-schema --out src/schema/embedded.jsonl`");
    assert!(!text.contains("\"about\""));
}

#[test]
fn embedded_stack_resolves_releases() {
    let s = Schema::embedded();
    let keys = s.api_keys();
    assert_eq!(keys, (0..=94).collect::<Vec<i16>>());
    for v in 0..=2 {
        assert_eq!(
            s.request(0, v).unwrap().source,
            Source::Release("3.9".into()),
            "Produce v{v}"
        );
    }
    for v in 3..=13 {
        assert_eq!(
            s.request(0, v).unwrap().source,
            Source::Release("4.4".into()),
            "Produce v{v}"
        );
    }
    assert!(s.request(0, 14).is_none());
    for v in 1..=6 {
        let d = s.request(20, v).unwrap();
        assert_eq!(d.source, Source::Release("4.4".into()));
        assert_eq!(d.def.is_flexible(v), v >= 4);
    }
    assert_eq!(
        s.request(20, 0).unwrap().source,
        Source::Release("3.9".into())
    );
    // UpdateMetadata v7 (KIP-516: topic ids) from 3.9, the last release with ZooKeeper APIs.
    let um = s.request(6, 7).unwrap();
    assert_eq!(um.source, Source::Release("3.9".into()));
    let ts = um
        .def
        .fields
        .iter()
        .find(|f| f.name == "TopicStates")
        .unwrap();
    assert!(ts
        .fields
        .iter()
        .any(|f| f.name == "TopicId" && f.versions.contains(7)));
    for key in [4, 5, 6, 7] {
        assert_eq!(
            s.request(key, 0).unwrap().source,
            Source::Release("3.9".into()),
            "key {key}"
        );
    }
    // The coordinator and metadata record definitions are there too.
    assert!(s.resolve_name("OffsetCommitValue", 3).is_some());
    assert!(s.resolve_name("TransactionLogValue", 0).is_some());
    assert!(s.resolve_name("ShareSnapshotValue", 0).is_some());
    assert!(
        s.resolve(MessageKind::Metadata, 2, 0).is_some(),
        "TopicRecord"
    );
}

#[test]
fn api_table() {
    let s = Schema::embedded();
    let infos = kwire::cli::schema_cmd::api_infos(&s);
    assert_eq!(infos.len(), 95);
    let dt = infos.iter().find(|a| a.api_key == 20).unwrap();
    assert_eq!(
        (dt.api_name.as_str(), dt.min_version, dt.max_version),
        ("DeleteTopics", Some(1), Some(6))
    );
    assert_eq!(dt.legacy_versions, vec![0]);
    assert_eq!(dt.flexible_min_version, Some(4));
    assert_eq!(
        dt.source_releases,
        vec!["4.4".to_string(), "3.9".to_string()]
    );
    let um = infos.iter().find(|a| a.api_key == 6).unwrap();
    assert_eq!((um.min_version, um.max_version), (Some(0), Some(8)));
    assert_eq!(um.removed_in.as_deref(), Some("4.0"));
    assert_eq!(um.source_releases, vec!["3.9".to_string()]);
    let av = infos.iter().find(|a| a.api_key == 18).unwrap();
    assert!(av.removed_in.is_none());
    let j = kwire::cli::schema_cmd::apis_json(&infos);
    let first = &j[0];
    for k in [
        "api_key",
        "api_name",
        "min_version",
        "max_version",
        "legacy_versions",
        "flexible_min_version",
        "source_releases",
        "removed_in",
    ] {
        assert!(first.get(k).is_some(), "{k}");
    }
}

#[test]
fn header_versions_for_every_api_and_version() {
    let s = Schema::embedded();
    let mut checked = 0;
    for key in s.api_keys() {
        for v in s.versions(MessageKind::Request, key) {
            let flex = s.request(key, v).unwrap().def.flexible_versions;
            let want_req = if key == 7 && v == 0 {
                0
            } else if flex.contains(v) {
                2
            } else {
                1
            };
            assert_eq!(
                s.request_header_version(key, v),
                want_req,
                "request header of key {key} v{v}"
            );
            if let Some(resp) = s.response(key, v) {
                let want = if key == 18 {
                    0
                } else if resp.def.flexible_versions.contains(v) {
                    1
                } else {
                    0
                };
                assert_eq!(
                    s.response_header_version(key, v),
                    want,
                    "response header of key {key} v{v}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 350, "{checked}");
    // The two exceptions, and some plain cases.
    assert_eq!(s.request_header_version(7, 0), 0);
    assert_eq!(s.request_header_version(7, 1), 1);
    assert_eq!(s.request_header_version(18, 3), 2);
    assert_eq!(s.response_header_version(18, 3), 0);
    assert_eq!(s.request_header_version(3, 8), 1);
    assert_eq!(s.request_header_version(3, 9), 2);
    assert_eq!(s.response_header_version(3, 9), 1);
    assert_eq!(
        s.header(true, 0).unwrap().source,
        Source::Release("3.9".into())
    );
}

fn bad(name: &str) -> String {
    let p = common::fixtures().join("schema/bad").join(name);
    let text = std::fs::read_to_string(&p).unwrap();
    load::parse_definition_text(name, &text)
        .unwrap_err()
        .to_string()
}

#[test]
fn malformed_definitions_name_file_field_and_position() {
    assert_eq!(
        bad("invalid_json.json"),
        "invalid_json.json:5:3: invalid JSON: expected `,` or `}` at line 5 column 3"
    );
    assert_eq!(
        bad("unknown_type.json"),
        "unknown_type.json: field Count: unknown type \"int33\""
    );
    assert_eq!(
        bad("bad_range.json"),
        "bad_range.json: \"validVersions\": bad version range \"5-2\": end before start"
    );
    assert_eq!(
        bad("undefined_struct.json"),
        "undefined_struct.json: field Items: struct type \"Missing\" is never defined"
    );
    assert_eq!(
        bad("duplicate_tag.json"),
        "duplicate_tag.json: duplicate tag 0 on A and B"
    );
    // A folder of them fails on the first, naming it.
    let e =
        load::load_folder(&common::fixtures().join("schema/bad"), Source::User, true).unwrap_err();
    assert!(e.file.ends_with("bad_range.json"), "{e}");
    let e = load::load_user(&common::fixtures().join("schema/empty")).unwrap_err();
    assert!(
        e.to_string().contains("holds no Kafka message definitions"),
        "{e}"
    );
    let e = load::load_user(&common::fixtures().join("schema/nowhere")).unwrap_err();
    assert!(e.to_string().contains("no such file or folder"), "{e}");
}

#[test]
fn comments_are_kept_and_strings_left_alone() {
    let dir = common::fixtures().join("schema/good");
    let defs = load::load_user(&dir).unwrap();
    let req = defs
        .iter()
        .find(|d| d.def.name == "DeleteTopicsRequest")
        .unwrap();
    assert!(req
        .raw
        .as_ref()
        .unwrap()
        .contains("/* versions 1-6; flexible from 4 */"));
    assert_eq!(
        req.def.fields[0].about.as_deref(),
        Some("Topics to remove, by name or id // not a comment")
    );
    assert_eq!(req.source, Source::User);
}

#[test]
fn user_schema_overlays_the_embedded_stack() {
    let mut s = Schema::embedded();
    s.overlay(load::load_user(&common::fixtures().join("schema/good")).unwrap());
    assert_eq!(s.request(20, 6).unwrap().source, Source::User);
    // versions the user's definitions lack still come from the embedded facts
    assert_eq!(
        s.request(20, 0).unwrap().source,
        Source::Release("3.9".into())
    );
    assert_eq!(
        s.request(0, 9).unwrap().source,
        Source::Release("4.4".into())
    );
}

#[test]
fn jar_and_kafka_home() {
    let tmp = std::env::temp_dir().join(format!("kwire-jar-{}", std::process::id()));
    let libs = tmp.join("libs");
    std::fs::create_dir_all(&libs).unwrap();
    let jar = libs.join("kafka-clients-9.9.9.jar");
    {
        let f = std::fs::File::create(&jar).unwrap();
        let mut z = zip::ZipWriter::new(f);
        let o = zip::write::SimpleFileOptions::default();
        for n in ["DeleteTopicsRequest.json", "DeleteTopicsResponse.json"] {
            z.start_file(format!("common/message/{n}"), o).unwrap();
            z.write_all(&std::fs::read(common::fixtures().join("schema/good").join(n)).unwrap())
                .unwrap();
        }
        z.start_file("META-INF/MANIFEST.MF", o).unwrap();
        z.write_all(b"Manifest-Version: 1.0\n").unwrap();
        z.finish().unwrap();
    }
    let from_jar = load::load_user(&jar).unwrap();
    assert_eq!(from_jar.len(), 2);
    let from_home = load::load_user(&tmp).unwrap();
    assert_eq!(from_home.len(), 2);
    assert!(from_home[0].raw.is_some());
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn error_code_table() {
    use kwire::errors::{error_name, ERROR_CODES};
    assert!(ERROR_CODES.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(error_name(0), Some("NONE"));
    assert_eq!(error_name(-1), Some("UNKNOWN_SERVER_ERROR"));
    assert_eq!(error_name(35), Some("UNSUPPORTED_VERSION"));
    assert_eq!(error_name(9999), None);
}
