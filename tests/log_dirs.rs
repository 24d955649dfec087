//! `kwire log` on log directories real brokers wrote (`captures/logdirs/`, and the large
//! metadata segment of `../shared` through `KWIRE_SHARED`), checked by their invariants
//! and by values read from the bytes; and on broken copies of them (a cut segment, a bad
//! CRC mid-file, an index past the end, a snapshot without its footer, a cut
//! quorum-state, a record type from a newer Kafka).

mod common;
use common::kwire;

use kwire::log::{self, Finding, Item, ItemKind, Level, LogOptions, Sink};
use kwire::schema::Schema;
use kwire::tree::{Node, NodeKind, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn captures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/logdirs")
}

/// What a read gave, file by file.
#[derive(Default)]
struct Seen {
    /// Per file: batches, records, first and last offset.
    files: BTreeMap<PathBuf, (u64, u64, i64, i64)>,
    /// Record types (the value's type, a control record's name) per file.
    types: BTreeMap<PathBuf, Vec<String>>,
    /// Entries' nodes as text lines `name=value (annotation)` per file.
    entries: BTreeMap<PathBuf, Vec<String>>,
    /// Nodes with an error or a warning, by file.
    problems: Vec<String>,
    findings: Vec<Finding>,
    /// Values of named leaves of batches, per file (first seen).
    values: BTreeMap<(PathBuf, String), String>,
}

fn text(v: &Value<'_>) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(i) => i.to_string(),
        Value::Uuid(u) => u.to_string(),
        Value::Null => "null".into(),
        other => format!("{other:?}"),
    }
}

impl Sink for Seen {
    fn item(&mut self, it: &Item<'_>) -> std::io::Result<()> {
        let f = it.file.to_path_buf();
        if let Some(n) = &it.node {
            n.walk(&mut |x, _| {
                if x.error().is_some() || x.warning().is_some() {
                    self.problems.push(format!(
                        "{}@{}: {}: {:?} {:?}",
                        it.file.display(),
                        x.offset,
                        x.name,
                        x.error(),
                        x.warning()
                    ));
                }
            });
        }
        match it.kind {
            ItemKind::Batch => {
                // A cut entry has no batch facts, only a raw node.
                let Some(b) = it.batch.clone() else {
                    return Ok(());
                };
                let mut recs = 0;
                let mut types = Vec::new();
                if let Some(n) = &it.node {
                    n.walk(&mut |x, _| {
                        if x.ty.starts_with("LegacyRecord")
                            && x.children
                                .iter()
                                .all(|c| c.name != "Messages (decompressed)")
                        {
                            recs += 1;
                        }
                        if x.ty == "Record" && x.kind == NodeKind::Group {
                            recs += 1;
                            types.push(kwire::tree::record_type(x));
                        }
                        if x.children.is_empty() && x.value != Value::None {
                            self.values
                                .entry((f.clone(), x.name.to_string()))
                                .or_insert_with(|| text(&x.value));
                        }
                    });
                }
                let e = self
                    .files
                    .entry(f.clone())
                    .or_insert((0, 0, i64::MAX, i64::MIN));
                e.0 += 1;
                e.1 += recs;
                e.2 = e.2.min(b.base_offset);
                e.3 = e.3.max(b.last_offset);
                self.types.entry(f).or_default().extend(types);
            }
            ItemKind::Entry => {
                let n = it.node.as_ref().unwrap();
                let mut line = n.name.to_string();
                let leaves: Vec<&Node<'_>> = if n.children.is_empty() {
                    vec![n]
                } else {
                    n.children.iter().collect()
                };
                for c in leaves {
                    line.push_str(&format!(" {}={}", c.name, text(&c.value)));
                    if let Some(a) = &c.annotation {
                        line.push_str(&format!(" ({a})"));
                    }
                }
                self.entries.entry(f).or_default().push(line);
            }
        }
        Ok(())
    }
    fn finding(&mut self, f: &Finding) -> std::io::Result<()> {
        self.findings.push(f.clone());
        Ok(())
    }
}

fn read(paths: &[PathBuf], verify: bool) -> Seen {
    let schema = Schema::embedded();
    let mut seen = Seen::default();
    let opts = LogOptions {
        verify,
        ..Default::default()
    };
    log::read_paths(&schema, paths, &opts, &mut seen).unwrap();
    seen
}

fn errors(s: &Seen) -> Vec<&Finding> {
    s.findings
        .iter()
        .filter(|f| f.level != Level::Info)
        .collect()
}

fn file_of<'s, T>(m: &'s BTreeMap<PathBuf, T>, end: &str) -> &'s T {
    m.iter()
        .find(|(p, _)| p.to_string_lossy().ends_with(end))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no file ending {end}"))
}

#[test]
fn real_directories_verify_clean_with_the_manifest_counts() {
    let s = read(&[captures()], true);
    assert!(errors(&s).is_empty(), "{:#?}", errors(&s));
    assert!(s.problems.is_empty(), "{:#?}", s.problems);
    // Counts from ../shared/captures/logdirs/MANIFEST.md: batches, records, offsets.
    let want = [
        (
            "codecrafters_510714e/__cluster_metadata-0/00000000000000000000.log",
            (123, 129, 0, 128),
        ),
        (
            "rupia/__cluster_metadata-0/00000000000000852953-0000000001.checkpoint",
            (3, 68, 0, 67),
        ),
        ("codecrafters_e856b9a_bootstrap.checkpoint", (3, 3, 0, 2)),
        (
            "rupia/__consumer_offsets-31/00000000000000000000.log",
            (1, 1, 2, 2),
        ),
        (
            "rupia/__consumer_offsets-31/00000000000000000003.log",
            (2, 2, 3, 4),
        ),
    ];
    for (f, counts) in want {
        assert_eq!(*file_of(&s.files, f), counts, "{f}");
    }
    // Every record of an internal topic names its type; no value stays bytes.
    for (f, types) in &s.types {
        let internal =
            f.to_string_lossy().contains("__") || f.extension().is_some_and(|e| e == "checkpoint");
        if internal {
            for t in types {
                assert!(
                    t != "record" && !t.contains("not decoded"),
                    "{}: {t}",
                    f.display()
                );
            }
        }
    }
    // Snapshots: header first, footer last.
    for f in ["852953-0000000001.checkpoint", "bootstrap.checkpoint"] {
        let t = file_of(&s.types, f);
        assert_eq!(
            t.first().map(String::as_str),
            Some("SNAPSHOT_HEADER"),
            "{f}"
        );
        assert_eq!(t.last().map(String::as_str), Some("SNAPSHOT_FOOTER"), "{f}");
    }
    // The offset index's entries point at batch boundaries of their segment.
    let idx = file_of(
        &s.entries,
        "__cluster_metadata-0/00000000000000000000.index",
    );
    assert!(!idx.is_empty());
    for e in idx {
        assert!(e.contains("(batch boundary: batch "), "{e}");
    }
}

#[test]
fn values_read_from_the_bytes() {
    let s = read(&[captures()], false);
    let v = |f: &str, name: &str| -> String {
        s.values
            .iter()
            .find(|((p, n), _)| p.to_string_lossy().ends_with(f) && n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{f}: no {name}"))
    };
    // __consumer_offsets-31, offset 2: a GroupMetadata record of console-consumer-7889
    // (bytes 0x45.. "console-consumer-7889"; value v3, generation 2, "range").
    let co = "__consumer_offsets-31/00000000000000000000.log";
    assert_eq!(v(co, "group"), "console-consumer-7889");
    assert_eq!(v(co, "protocolType"), "consumer");
    assert_eq!(v(co, "generation"), "2");
    assert_eq!(v(co, "protocol"), "range");
    // Its member's subscription and assignment, the consumer protocol v3 (issue 25: they
    // were bytes): the subscribed topic, the generation, the assigned partition.
    assert_eq!(v(co, "version"), "3");
    assert_eq!(v(co, "Topics[0]"), "topic_transactions");
    assert_eq!(v(co, "GenerationId"), "1");
    assert_eq!(v(co, "RackId"), "null");
    assert_eq!(v(co, "Topic"), "topic_transactions");
    assert_eq!(v(co, "Partitions[0]"), "0");
    assert_eq!(
        file_of(&s.types, co),
        &vec!["GroupMetadataValue v3".to_string()]
    );
    // The KRaft snapshot's image starts with FeatureLevelRecord metadata.version 27.
    let cp = "852953-0000000001.checkpoint";
    assert_eq!(v(cp, "FeatureLevel"), "27");
    assert_eq!(file_of(&s.types, cp)[3], "FeatureLevelRecord v0");
    // foo-0's producer snapshot holds one idempotent producer, CRC valid.
    let ps = file_of(&s.entries, "foo-0/00000000000000000001.snapshot");
    assert_eq!(ps.len(), 2, "{ps:?}");
    assert!(
        ps[0].contains("crc=") && ps[0].contains("(valid)") && ps[0].contains("count=1"),
        "{}",
        ps[0]
    );
    assert!(ps[1].starts_with("producer[0] producerId="), "{}", ps[1]);
    // quorum-state, partition.metadata, meta.properties.
    let qs = file_of(&s.entries, "rupia/__cluster_metadata-0/quorum-state");
    assert!(qs.contains(&"leaderId leaderId=1".to_string()), "{qs:?}");
    let pm = file_of(&s.entries, "rupia/__cluster_metadata-0/partition.metadata");
    assert!(
        pm.iter()
            .any(|e| e.contains("topic_id value=00000000-0000-0000-0000-000000000001")),
        "{pm:?}"
    );
    let mp = file_of(&s.entries, "rupia/meta.properties");
    assert!(mp.contains(&"node.id value=1".to_string()), "{mp:?}");
    let lec = file_of(
        &s.entries,
        "rupia/__cluster_metadata-0/leader-epoch-checkpoint",
    );
    assert_eq!(lec.last().unwrap(), "entry[0] epoch=1 startOffset=852953");
}

#[test]
fn shared_metadata_segment_and_its_index() {
    let Some(base) = common::shared("shared_metadata_segment_and_its_index") else {
        return;
    };
    let dir = base.join("captures/logdirs/rupia_kraft/kafka-logs/__cluster_metadata-0");
    let seg = dir.join("00000000000001725413.log");
    let s = read(&[seg, dir.join("00000000000001725413.index")], true);
    assert!(errors(&s).is_empty(), "{:#?}", errors(&s));
    assert!(
        s.problems.is_empty(),
        "{:#?}",
        &s.problems[..s.problems.len().min(5)]
    );
    assert_eq!(
        *file_of(&s.files, "1725413.log"),
        (12105, 12156, 1725413, 1737568)
    );
    let idx = file_of(&s.entries, "1725413.index");
    assert!(!idx.is_empty());
    assert!(idx.iter().all(|e| e.contains("(batch boundary: batch ")));
}

/// A fresh scratch folder for broken copies.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kwire-log-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The positions and lengths of the entries of a segment.
fn entries(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut p = 0;
    while p + 12 <= b.len() {
        let len = i32::from_be_bytes(b[p + 8..p + 12].try_into().unwrap()) as usize + 12;
        out.push((p, len));
        p += len;
    }
    out
}

fn metadata_log() -> Vec<u8> {
    std::fs::read(
        captures().join("codecrafters_510714e/__cluster_metadata-0/00000000000000000000.log"),
    )
    .unwrap()
}

#[test]
fn a_cut_segment_is_reported_at_its_last_batch() {
    let d = scratch("cut").join("__cluster_metadata-0");
    std::fs::create_dir_all(&d).unwrap();
    let b = metadata_log();
    let e = entries(&b);
    let (last, _) = *e.last().unwrap();
    let f = d.join("00000000000000000000.log");
    std::fs::write(&f, &b[..last + 30]).unwrap();
    let s = read(std::slice::from_ref(&f), true);
    let errs = errors(&s);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].offset, last as u64);
    assert!(
        errs[0].message.contains("a cut segment"),
        "{}",
        errs[0].message
    );
    assert_eq!(file_of(&s.files, ".log").0, e.len() as u64 - 1);
}

#[test]
fn a_bad_crc_mid_file_is_reported_and_the_rest_read() {
    let d = scratch("crc").join("__cluster_metadata-0");
    std::fs::create_dir_all(&d).unwrap();
    let mut b = metadata_log();
    let e = entries(&b);
    let (p, len) = e[5];
    b[p + len - 2] ^= 0xff;
    let f = d.join("00000000000000000000.log");
    std::fs::write(&f, &b).unwrap();
    let s = read(&[f], true);
    let errs = errors(&s);
    assert!(
        errs.iter()
            .any(|x| x.offset == p as u64 && x.message.contains("CRC mismatch")),
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .all(|x| x.offset >= p as u64 && x.offset < (p + len) as u64),
        "{errs:#?}"
    );
    assert_eq!(
        file_of(&s.files, ".log").0,
        e.len() as u64,
        "every batch still read"
    );
}

#[test]
fn an_index_past_the_end_and_off_a_boundary() {
    let d = scratch("index").join("__cluster_metadata-0");
    std::fs::create_dir_all(&d).unwrap();
    let b = metadata_log();
    std::fs::write(d.join("00000000000000000000.log"), &b).unwrap();
    let e = entries(&b);
    let mut idx = Vec::new();
    for (rel, pos) in [
        (0i32, 0i32),
        (1, e[1].0 as i32 + 3),
        (2, b.len() as i32 + 100),
    ] {
        idx.extend(rel.to_be_bytes());
        idx.extend(pos.to_be_bytes());
    }
    let f = d.join("00000000000000000000.index");
    std::fs::write(&f, &idx).unwrap();
    let s = read(&[f], true);
    let errs = errors(&s);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert_eq!(errs[0].offset, 12);
    assert!(
        errs[0].message.contains("not at a batch boundary"),
        "{}",
        errs[0].message
    );
    assert_eq!(errs[1].offset, 20);
    assert!(
        errs[1].message.contains("past the end of the segment"),
        "{}",
        errs[1].message
    );
    assert_eq!(
        s.entries.values().next().unwrap().len(),
        3,
        "every entry still read"
    );
}

#[test]
fn a_snapshot_without_its_footer() {
    let d = scratch("footer");
    let b = std::fs::read(
        captures().join("rupia/__cluster_metadata-0/00000000000000852953-0000000001.checkpoint"),
    )
    .unwrap();
    let e = entries(&b);
    let (last, _) = *e.last().unwrap();
    let f = d.join("00000000000000000068-0000000001.checkpoint");
    std::fs::write(&f, &b[..last]).unwrap();
    let s = read(&[f], false);
    let errs = errors(&s);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].offset, e[e.len() - 2].0 as u64);
    assert!(errs[0]
        .message
        .contains("does not end with a SnapshotFooter"));
}

#[test]
fn a_cut_quorum_state() {
    let d = scratch("quorum").join("__cluster_metadata-0");
    std::fs::create_dir_all(&d).unwrap();
    let b = std::fs::read(captures().join("rupia/__cluster_metadata-0/quorum-state")).unwrap();
    let f = d.join("quorum-state");
    std::fs::write(&f, &b[..40]).unwrap();
    let s = read(&[f], false);
    let errs = errors(&s);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].offset, 40);
    assert!(
        errs[0].message.contains("not whole JSON"),
        "{}",
        errs[0].message
    );
}

#[test]
fn a_record_type_from_a_newer_kafka_is_raw_with_a_warning() {
    let d = scratch("newer").join("__cluster_metadata-0");
    std::fs::create_dir_all(&d).unwrap();
    let mut b = metadata_log();
    // The first NoOpRecord (type 20) becomes type 120, its batch's CRC recomputed.
    let e = entries(&b);
    let (p, len) = e
        .iter()
        .copied()
        .find(|(p, len)| b[*p + 61..*p + len].windows(3).any(|w| w == [1, 20, 0]))
        .unwrap();
    let at = p
        + 61
        + b[p + 61..p + len]
            .windows(3)
            .position(|w| w == [1, 20, 0])
            .unwrap()
        + 1;
    b[at] = 120;
    let crc = crc32c::crc32c(&b[p + 21..p + len]);
    b[p + 17..p + 21].copy_from_slice(&crc.to_be_bytes());
    let f = d.join("00000000000000000000.log");
    std::fs::write(&f, &b).unwrap();
    let s = read(&[f], true);
    let warns: Vec<_> = s
        .findings
        .iter()
        .filter(|f| f.level == Level::Warning)
        .collect();
    assert_eq!(warns.len(), 1, "{warns:#?}");
    // At the raw data after the record's frame (frameVersion, type, version).
    assert_eq!(warns[0].offset, at as u64 + 2);
    assert!(
        warns[0]
            .message
            .contains("unknown metadata record type 120"),
        "{}",
        warns[0].message
    );
    assert!(s.findings.iter().all(|f| f.level != Level::Error));
    assert_eq!(file_of(&s.files, ".log").0, e.len() as u64);
}

/// The validator of docs/kwire-message.schema.json.
fn message_schema() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/kwire-message.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn cli_log_json_lines_match_the_schema() {
    let validator = message_schema();
    let out = kwire()
        .args(["log", "--format", "json", "--verify"])
        .arg(captures().join("rupia"))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let mut kinds = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let errs: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "{line}: {errs:?}");
        *kinds
            .entry(v["kind"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
        if v["kind"] == "batch" {
            assert!(v.get("api_key").is_none() && v.get("correlation_id").is_none());
            assert_eq!(v["tree"]["offset"], v["position"]);
        }
    }
    assert_eq!(kinds.get("batch"), Some(&9), "{kinds:?}");
    assert_eq!(kinds.get("verdict"), Some(&1));
    assert!(kinds.contains_key("entry") && kinds.contains_key("finding"));
}

#[test]
fn cli_log_summary_text_and_hexdump() {
    let seg = captures().join("rupia/__consumer_offsets-31/00000000000000000003.log");
    let out = kwire()
        .args(["log", "--format", "summary"])
        .arg(&seg)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[1]
            .contains("@366 baseOffset 4 lastOffset 4 count 1 size 125 magic 2 compression none"),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains("crc 0x55a8a819 valid"), "{}", lines[1]);
    let out = kwire()
        .args(["log", "--color", "never"])
        .arg(&seg)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("+-- key GroupMetadataKey = "), "{text}");
    assert!(
        text.contains("RecordBatch RecordBatch [0x016e, 125B]"),
        "{text}"
    );
    let out = kwire()
        .args(["log", "--format", "hexdump", "--color", "never"])
        .arg(&seg)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    // The second batch's dump starts at its file offset 0x16e.
    assert!(text.contains("│0000016e│"), "{text}");
}

#[test]
fn cli_record_in_every_format() {
    // An OffsetCommit key of __consumer_offsets-44 (bytes from its segment), as a
    // tombstone: group "rupia-transaction-group", topic "topic_transactions", partition 0.
    let key = "0001001772757069612d7472616e73616374696f6e2d67726f75700012746f7069635f7472616e73616374696f6e7300000000";
    for (format, want) in [
        ("text", "type int16 = 1 (OffsetCommit)"),
        ("json", "\"OffsetCommitKey\""),
        ("values", "\"key\":\"0001001772757069612d"),
        ("summary", "__consumer_offsets record"),
        ("hexdump", "00 01 00 17 72 75 70 69"),
    ] {
        let out = kwire()
            .args([
                "record",
                "--topic",
                "__consumer_offsets",
                "--key",
                key,
                "--format",
                format,
                "--color",
                "never",
            ])
            .assert()
            .success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        assert!(text.contains(want), "{format}: {text}");
    }
    let out = kwire()
        .args([
            "record",
            "--topic",
            "__consumer_offsets",
            "--key",
            key,
            "--color",
            "never",
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("tombstone: deletes this OffsetCommit record"),
        "{text}"
    );
    kwire()
        .args(["record", "--topic", "orders", "--key", "00"])
        .assert()
        .failure();
}

#[test]
fn cli_stats_on_a_log_directory() {
    let out = kwire()
        .args(["stats", "--format", "json"])
        .arg(captures())
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["kind"], "log_stats");
    assert_eq!(v["record_types"]["GroupMetadataValue v3"], 4);
    assert_eq!(v["record_types"]["SNAPSHOT_HEADER"], 2);
    assert_eq!(v["errors"], 0);
    assert!(v["first_timestamp"].as_str().unwrap() < v["last_timestamp"].as_str().unwrap());
}

#[test]
fn a_file_reached_twice_is_read_once() {
    // `kwire stats DIR DIR` counted every file of DIR twice into the same partition rows
    // ("4 files" for a partition of 2); a path given again, a folder inside one given
    // before, or a folder holding files read before are now read once, with a warning.
    let json = |paths: &[PathBuf]| {
        let out = kwire()
            .args(["stats", "--format", "json"])
            .args(paths)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v, String::from_utf8(out.stderr).unwrap())
    };
    let rupia = captures().join("rupia");
    let part = rupia.join("__consumer_offsets-31");
    let seg = part.join("00000000000000000003.log");
    // the partition's first segment (given before the folder, a later one would go
    // back over offsets: the order given is the order read)
    let first = part.join("00000000000000000000.log");
    let (once, err) = json(std::slice::from_ref(&rupia));
    assert_eq!(err, "");
    for (paths, said) in [
        (vec![rupia.clone(), rupia.clone()], "given again: read once"),
        (
            vec![rupia.clone(), part.clone()],
            "inside ", // ... the folder given before
        ),
        (
            vec![part.clone(), rupia.clone()],
            "8 of its 23 files were read through an earlier path: read once",
        ),
        (vec![first, rupia.clone()], "1 of its 23 files was read"),
    ] {
        let (v, err) = json(&paths);
        assert_eq!(v["partitions"], once["partitions"], "{paths:?}");
        assert_eq!(v["record_types"], once["record_types"], "{paths:?}");
        assert_eq!(v["warnings"], 1, "{paths:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(said) && err.contains("warning"), "{err}");
    }
    // a file given twice
    let (v, err) = json(&[seg.clone(), seg.clone()]);
    let (one, _) = json(&[seg]);
    assert_eq!(v["partitions"], one["partitions"]);
    assert!(err.contains("given again: read once"), "{err}");
}

#[test]
fn legacy_message_sets_and_a_v2_batch_in_one_segment() {
    // A segment written by an old broker and upgraded: two magic 1 messages, then a
    // RecordBatch, made by kwire's encoder.
    let v = serde_json::json!([
        {"magic": 1, "offset": 0, "attributes": 0, "timestamp": 1700000000000i64, "key": null, "value": "6869"},
        {"magic": 1, "offset": 1, "attributes": 0, "timestamp": 1700000000001i64, "key": "6b", "value": "6f6b"},
        {"magic": 2, "baseOffset": 2, "lastOffsetDelta": 1, "producerId": -1, "producerEpoch": -1, "baseSequence": -1,
         "records": [{"attributes": 0, "timestampDelta": 0, "offsetDelta": 0, "key": null, "value": "01"},
                     {"attributes": 0, "timestampDelta": 0, "offsetDelta": 1, "key": null, "value": "02"}]}
    ]);
    let seg = kwire::encode::records::encode_records(&v, "").unwrap();
    let d = scratch("legacy").join("orders-0");
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("00000000000000000000.log");
    std::fs::write(&f, &seg).unwrap();
    let s = read(&[f], true);
    assert!(s.findings.is_empty(), "{:#?}", s.findings);
    assert!(s.problems.is_empty(), "{:#?}", s.problems);
    assert_eq!(*file_of(&s.files, ".log"), (3, 4, 0, 3));
    // The legacy messages' CRC-32 and the batch's CRC-32C are checked in summary mode too.
    let out = kwire()
        .args(["log", "--format", "summary"])
        .arg(d.join("00000000000000000000.log"))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines[0].contains("@0 baseOffset 0 lastOffset 0 count 1")
            && lines[0].contains("magic 1")
            && lines[0].contains(" valid"),
        "{}",
        lines[0]
    );
    assert!(
        lines[2].contains("baseOffset 2 lastOffset 3 count 2")
            && lines[2].contains("magic 2")
            && lines[2].contains(" valid"),
        "{}",
        lines[2]
    );
}

#[test]
fn schema_overlays_apply_to_internal_records() {
    // OffsetCommitValue v99 is no release's: raw with a warning, then decoded by the
    // user's definition under --schema.
    let key = "0001000167000174 00000001";
    let value = "0063 000000000000002a";
    let out = kwire()
        .args([
            "record",
            "--topic",
            "__consumer_offsets",
            "--key",
            key,
            "--value",
            value,
            "--format",
            "json",
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("OffsetCommitValue has no version 99 in the schema"),
        "{text}"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema/internal");
    let out = kwire()
        .arg("--schema")
        .arg(&dir)
        .args([
            "record",
            "--topic",
            "__consumer_offsets",
            "--key",
            key,
            "--value",
            value,
            "--format",
            "json",
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains(r#""name":"CommittedOffset","type":"int64","value":42"#),
        "{text}"
    );
    assert!(text.contains(r#""type":"OffsetCommitValue v99""#), "{text}");
}

/// Position, first and last offset, control flag, record types.
type RawBatch = (u64, i64, i64, bool, Vec<i64>);

/// Which raw batches a filter must keep.
type Keep = fn(&RawBatch) -> bool;

/// The batches of a segment read straight from its bytes (no kwire code): position,
/// first and last offset, control flag, and each record's metadata record type (the
/// value's second uvarint, after the frame version) or coordinator key type (the key's
/// leading int16), for records with a value.
fn raw_batches(seg: &[u8], metadata: bool) -> Vec<RawBatch> {
    fn varint(b: &[u8], p: &mut usize) -> u64 {
        let (mut v, mut s) = (0u64, 0);
        loop {
            let c = b[*p];
            *p += 1;
            v |= u64::from(c & 0x7f) << s;
            s += 7;
            if c < 0x80 {
                return v;
            }
        }
    }
    let zigzag = |v: u64| (v >> 1) as i64 ^ -((v & 1) as i64);
    let mut out = Vec::new();
    let mut p = 0;
    while p + 12 <= seg.len() {
        let be = |a: usize, n: usize| {
            seg[p + a..p + a + n]
                .iter()
                .fold(0i64, |v, b| (v << 8) | i64::from(*b))
        };
        let base = be(0, 8);
        let len = be(8, 4) as usize;
        let control = be(21, 2) & 0x20 != 0;
        let last = base + be(23, 4);
        let count = be(57, 4);
        let mut types = Vec::new();
        let mut q = p + 61;
        for _ in 0..count {
            let rl = zigzag(varint(seg, &mut q)) as usize;
            let end = q + rl;
            q += 1; // attributes
            varint(seg, &mut q); // timestampDelta
            varint(seg, &mut q); // offsetDelta
            let kl = zigzag(varint(seg, &mut q));
            let key = (kl >= 0).then(|| &seg[q..q + kl as usize]);
            q += kl.max(0) as usize;
            let vl = zigzag(varint(seg, &mut q));
            if vl >= 0 && !control {
                let mut v = q;
                if metadata {
                    varint(seg, &mut v); // frame version
                    types.push(varint(seg, &mut v) as i64);
                } else if let Some(k) = key {
                    types.push(i64::from(i16::from_be_bytes([k[0], k[1]])));
                }
            }
            q = end;
        }
        out.push((p as u64, base, last, control, types));
        p += 12 + len;
    }
    out
}

/// The `@POSITION`s of `kwire log --format summary -Y EXPR` lines, and its closing line.
fn filtered(paths: &[PathBuf], expr: &str) -> (Vec<(String, u64)>, String) {
    let out = kwire()
        .args(["log", "--format", "summary", "-Y", expr])
        .args(paths)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let lines = text
        .lines()
        .map(|l| {
            let at = l.split(' ').next().unwrap();
            let (f, pos) = at.rsplit_once('@').unwrap();
            (f.to_string(), pos.parse().unwrap())
        })
        .collect();
    let closing = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    (lines, closing)
}

#[test]
fn cli_log_display_filter_counts_from_the_bytes() {
    let seg = captures().join("codecrafters_510714e/__cluster_metadata-0/00000000000000000000.log");
    let raw = raw_batches(&std::fs::read(&seg).unwrap(), true);
    assert_eq!(raw.len(), 123);
    // Metadata record types by their ids (the definitions' apiKey): each filter keeps
    // exactly the batches holding one.
    for (id, name) in [
        (0, "RegisterBrokerRecord"),
        (2, "TopicRecord"),
        (3, "PartitionRecord"),
        (12, "FeatureLevelRecord"),
        (17, "BrokerRegistrationChangeRecord"),
        (20, "NoOpRecord"),
    ] {
        let want: Vec<u64> = raw
            .iter()
            .filter(|b| b.4.contains(&id))
            .map(|b| b.0)
            .collect();
        assert!(!want.is_empty(), "{name}");
        for expr in [format!("record_type == {name}"), name.to_string()] {
            let (got, _) = filtered(std::slice::from_ref(&seg), &expr);
            let got: Vec<u64> = got.iter().map(|g| g.1).collect();
            assert_eq!(got, want, "{expr}");
        }
    }
    assert_eq!(raw.iter().filter(|b| b.4.contains(&20)).count(), 115);
    // The one TopicRecord: "foo" (bytes 66 6f 6f after its compact length 04), offset 34.
    let (got, closing) = filtered(std::slice::from_ref(&seg), r#"TopicRecord.Name == "foo""#);
    assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), vec![2456]);
    assert!(closing.contains("(1 shown)"), "{closing}");
    let topic_at = raw.iter().find(|b| b.4.contains(&2)).unwrap();
    assert_eq!((topic_at.0, topic_at.1), (2456, 34));
    // Filters that must match nothing: a name no TopicRecord has, an API property.
    for expr in [
        r#"TopicRecord.Name == "nosuch""#,
        "api == Fetch",
        "correlation_id == 0",
        "PartitionRecord.Name",
        "malformed",
    ] {
        let (got, closing) = filtered(std::slice::from_ref(&seg), expr);
        assert!(got.is_empty(), "{expr}: {got:?}");
        assert!(closing.contains("(0 shown)"), "{expr}: {closing}");
    }
    // Offsets: the batch holding 34; those overlapping 50..60; those past 120.
    let cases: [(&str, Keep); 5] = [
        ("offset == 34", |b| b.1 <= 34 && 34 <= b.2),
        ("offset in {50..60}", |b| b.2 >= 50 && b.1 <= 60),
        ("offset > 120", |b| b.2 > 120),
        ("last_offset == 4 && kind == batch", |b| b.2 == 4),
        ("RecordBatch.attributes == 32", |b| b.3),
    ];
    for (expr, keep) in cases {
        let want: Vec<u64> = raw.iter().filter(|b| keep(b)).map(|b| b.0).collect();
        let (got, _) = filtered(std::slice::from_ref(&seg), expr);
        assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), want, "{expr}");
        assert!(!want.is_empty(), "{expr}");
    }
    // __consumer_offsets: GroupMetadata values (key type 2) and OffsetCommit keys
    // (type 1, tombstones included) across the partitions' segments.
    let dir = captures().join("rupia");
    let mut segs = Vec::new();
    for p in ["__consumer_offsets-31", "__consumer_offsets-44"] {
        for f in log::folder_files(&dir.join(p)).unwrap() {
            if f.extension().is_some_and(|e| e == "log") {
                segs.push(f);
            }
        }
    }
    let (mut want_gm, mut all) = (Vec::new(), 0);
    for f in &segs {
        for b in raw_batches(&std::fs::read(f).unwrap(), false) {
            all += 1;
            if b.4.contains(&2) {
                want_gm.push((f.display().to_string(), b.0));
            }
        }
    }
    assert_eq!(want_gm.len(), 4);
    let (got, _) = filtered(
        std::slice::from_ref(&dir),
        "record_type == GroupMetadataValue",
    );
    assert_eq!(got, want_gm);
    let (got, _) = filtered(
        std::slice::from_ref(&dir),
        "topic == __consumer_offsets && kind == batch && !TopicRecord",
    );
    assert_eq!(got.len(), all, "{got:?}");
    // Entries: the offset index's two entries (16 bytes), by kind and file kind.
    let (got, _) = filtered(
        &[captures().join("codecrafters_510714e")],
        "kind == entry && file_kind == offset_index",
    );
    assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), vec![0, 8]);
    // Every format keeps the same items: the summary reads whole the batches a filter
    // needs decoded (topic names in records, decode problems).
    for expr in [
        "topic == foo",
        "topic == __consumer_offsets",
        "not malformed && offset < 40",
        "kind == batch && size > 300",
    ] {
        let (summary, _) = filtered(&[captures()], expr);
        let out = kwire()
            .args(["log", "--format", "json", "-Y", expr])
            .arg(captures())
            .assert()
            .success();
        let json: Vec<(String, u64)> = String::from_utf8(out.get_output().stdout.clone())
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["file"].as_str().unwrap().to_string(),
                    v["position"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(summary, json, "{expr}");
        assert!(!json.is_empty(), "{expr}");
    }
    // A bad expression is a usage error with its column.
    let out = kwire()
        .args(["log", "-Y", "TopicRecord.Name =="])
        .arg(&seg)
        .assert()
        .failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("-Y: column 20: expected a value"), "{err}");
}

#[test]
fn cli_stats_on_a_log_directory_with_a_filter() {
    let out = kwire()
        .args([
            "stats",
            "--format",
            "json",
            "-Y",
            "record_type == GroupMetadataValue",
        ])
        .arg(captures().join("rupia"))
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    // Four batches hold one GroupMetadata value each (see the test above); nothing else
    // of them is another type but the tombstones sharing a batch.
    assert_eq!(v["record_types"]["GroupMetadataValue v3"], 4);
    assert!(v["record_types"].get("PartitionRecord v2").is_none(), "{v}");
    assert_eq!(v["entries"], 0);
    let out = kwire()
        // A log item is a batch or an entry, never a request (`kind == nothing` is
        // refused: it cannot mean anything).
        .args(["stats", "--format", "json", "-Y", "kind == request"])
        .arg(captures().join("rupia"))
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["record_types"], serde_json::json!({}));
}

/// Compares, item by item, the streamed JSON line with serializing `item_json`.
struct SameJson(u64);

impl Sink for SameJson {
    fn item(&mut self, it: &Item<'_>) -> std::io::Result<()> {
        let (mut line, mut buf) = (Vec::new(), Vec::new());
        kwire::cli::log_cmd::write_item_json(&mut line, &mut buf, it).unwrap();
        let want = format!("{}\n", kwire::cli::log_cmd::item_json(it));
        assert_eq!(String::from_utf8(line).unwrap(), want);
        self.0 += 1;
        Ok(())
    }
    fn finding(&mut self, _: &Finding) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn streamed_json_lines_equal_serde_json_ones() {
    // Real directories, a batch with a bad CRC (read without a tree at the summary
    // level: its error comes from the header check alone) and a cut segment.
    let d = scratch("samejson").join("__cluster_metadata-0");
    std::fs::create_dir_all(&d).unwrap();
    let mut b = metadata_log();
    let e = entries(&b);
    let (p, _) = e[5];
    b[p + 70] ^= 0xff;
    std::fs::write(d.join("00000000000000000000.log"), &b).unwrap();
    let (last, _) = *e.last().unwrap();
    std::fs::write(d.join("00000000000000000200.log"), &b[..last + 30]).unwrap();
    let schema = Schema::embedded();
    for detail in [kwire::decode::Detail::Full, kwire::decode::Detail::Summary] {
        for verify in [false, true] {
            let opts = LogOptions {
                verify,
                detail,
                ..Default::default()
            };
            let mut s = SameJson(0);
            log::read_paths(&schema, &[captures(), d.clone()], &opts, &mut s).unwrap();
            assert!(s.0 > 300, "{}", s.0);
        }
    }
}

#[test]
fn cli_log_json_with_a_filter_matches_the_schema() {
    let validator = message_schema();
    let out = kwire()
        .args(["log", "--format", "json", "--verify", "-Y"])
        .arg("record_type == GroupMetadataValue")
        .arg(captures().join("rupia"))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let mut batches = 0;
    let mut verdict = None;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let errs: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "{line}: {errs:?}");
        match v["kind"].as_str() {
            Some("batch") => {
                batches += 1;
                assert!(line.contains(r#""type":"GroupMetadataValue v3""#), "{line}");
            }
            Some("entry") => panic!("an entry passed: {line}"),
            Some("verdict") => verdict = Some(v),
            _ => {}
        }
    }
    assert_eq!(batches, 4);
    let v = verdict.unwrap();
    assert_eq!(v["shown"], 4);
    assert_eq!(v["batches"], 9, "every batch is read and counted: {v}");
}
