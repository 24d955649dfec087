//! `--depth`, `--max-elements` and value elision behave as documented on a large Fetch
//! response (300 records of 200-byte values in one batch), built with kwire's encoder.

use assert_cmd::Command;
use serde_json::json;

fn large_fetch_hex() -> String {
    let records: Vec<_> = (0..300)
        .map(|i| {
            let value = format!("{{\"order\":{i:05},\"pad\":\"{}\"}}", "x".repeat(180));
            json!({"attributes":0,"timestampDelta":i,"offsetDelta":i,
                   "key": hex(format!("key-{i}").as_bytes()), "value": hex(value.as_bytes()), "headers":[]})
        })
        .collect();
    let batch = json!({"magic":2,"baseOffset":1000,"partitionLeaderEpoch":0,
        "attributes":{"compression":"none","timestampType":"CreateTime","isTransactional":false,"isControlBatch":false},
        "lastOffsetDelta":299,"baseTimestamp":1700000000000i64,"maxTimestamp":1700000000299i64,
        "producerId":-1,"producerEpoch":-1,"baseSequence":-1,"records":records});
    let v = json!({"kind":"response","api_key":1,"api_version":12,"header":{"correlation_id":42},
        "body":{"ThrottleTimeMs":0,"ErrorCode":0,"SessionId":0,
            "Responses":[{"Topic":"orders","Partitions":[{"PartitionIndex":0,"ErrorCode":0,
                "HighWatermark":1300,"LastStableOffset":1300,"LogStartOffset":0,
                "AbortedTransactions":null,"PreferredReadReplica":-1,"Records":[batch]}]}]}});
    let schema = kwire::schema::Schema::embedded();
    let frame = kwire::encode::encode(&schema, &v).expect("encodes");
    hex(&frame)
}

fn hex(b: &[u8]) -> String {
    kwire::text::hex(b)
}

fn run(extra: &[&str]) -> String {
    let h = large_fetch_hex();
    let o = Command::cargo_bin("kwire")
        .unwrap()
        .args([
            "decode",
            "--api-key",
            "1",
            "--api-version",
            "12",
            "--no-bytes",
            "--color",
            "never",
        ])
        .args(extra)
        .write_stdin(h)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn max_elements_elides_long_record_lists() {
    let out = run(&["--max-elements", "5"]);
    let shown = out.lines().filter(|l| l.contains("+-- Record[")).count();
    assert_eq!(shown, 5, "{out}");
    assert!(out.contains("... 295 more"), "{out}");
    // the default shows 100 and elides the rest
    let out = run(&[]);
    assert_eq!(
        out.lines().filter(|l| l.contains("+-- Record[")).count(),
        100
    );
    assert!(out.contains("... 200 more"));
}

#[test]
fn depth_folds_deeper_levels_with_a_count() {
    let out = run(&["--depth", "3"]);
    assert!(!out.contains("Record["), "{out}");
    let folded: Vec<&str> = out.lines().filter(|l| l.contains("nodes)")).collect();
    assert!(!folded.is_empty(), "{out}");
    // every line is at most depth 3 (4 connector columns)
    for l in out.lines().filter(|l| l.contains("[0x")) {
        let indent = l.find("+--").map(|i| i / 4).unwrap_or(0);
        assert!(indent <= 3, "{l}");
    }
}

#[test]
fn long_values_are_elided_with_their_length_unless_wide() {
    let out = run(&[]);
    let v = out.lines().find(|l| l.contains("+-- value bytes")).unwrap();
    assert!(v.contains("\"... (204 B)"), "{v}");
    assert!(
        v.contains("\"{\\\"order\\\":00000"),
        "record values show as text: {v}"
    );
    let wide = run(&["--wide", "--max-elements", "1"]);
    let v = wide
        .lines()
        .find(|l| l.contains("+-- value bytes"))
        .unwrap();
    assert!(v.contains(&"x".repeat(180)), "{v}");
}
