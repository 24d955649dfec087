//! Kafka 4.4 in the embedded stack (issue 28): API keys 93
//! (StreamsGroupTopologyDescriptionUpdate) and 94 (UnregisterController), the new
//! versions of ApiVersions, TxnOffsetCommit, DeleteGroups and the StreamsGroup APIs, the
//! metadata record UnregisterControllerRecord, the tagged fields 4.4 gave
//! StreamsGroupMetadataValue, and error codes 134-136.
//!
//! Without `KWIRE_SHARED` the tests that need no shared files still run: every new
//! (api_key, version, direction) round-trips and tiles; the new APIs decode by name from
//! hex; a capture of them goes through `read`, `-Y`, `stats` and `export`; the
//! internal-topic decoder reads the new records. With it, `kwire diff --release 4.3 4.4`
//! is checked against what the two definition folders say, field by field, and the error
//! table against `kafka-schema/error-codes.tsv`.

mod common;
mod encode_common;

use assert_cmd::Command;
use common::kwire;
use encode_common::decode_check;
use encode_common::gen::{all_pairs, instance};
use kwire::encode::{encode, minimal::minimal};
use kwire::schema::{MessageKind, Schema};
use serde_json::{json, Value as J};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn out(c: &mut Command) -> String {
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn json_lines(s: &str) -> Vec<J> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What 4.4 added over 4.3, as the issue lists it: (api_key, versions).
const NEW_IN_4_4: &[(i16, &[i16])] = &[
    (18, &[5]), // ApiVersions
    (28, &[6]), // TxnOffsetCommit
    (42, &[3]), // DeleteGroups
    (88, &[1]), // StreamsGroupHeartbeat
    (89, &[1]), // StreamsGroupDescribe
    (93, &[0]), // StreamsGroupTopologyDescriptionUpdate (new)
    (94, &[0]), // UnregisterController (new)
];

/// The (api_key, version, request?) triples release 4.4 has and 4.3 has not, from the
/// embedded histories.
fn new_triples(s: &Schema) -> BTreeSet<(i16, i16, bool)> {
    let mut out = BTreeSet::new();
    for key in s.api_keys() {
        for (kind, request) in [(MessageKind::Request, true), (MessageKind::Response, false)] {
            let Some(d) = s.by_api(kind, key).first().map(|d| d.def.name.clone()) else {
                continue;
            };
            let h = s.history(&d).unwrap();
            let at = |r: &str| h.iter().find(|(x, _)| x == r).map(|(_, v)| *v);
            let (old, new) = (at("4.3"), at("4.4"));
            let new = new.unwrap_or_else(|| panic!("{d} has no 4.4 entry"));
            for v in new.lo..=new.hi {
                if !old.is_some_and(|o| o.contains(v)) {
                    out.insert((key, v, request));
                }
            }
        }
    }
    out
}

#[test]
fn every_new_shape_round_trips_and_tiles() {
    let s = Schema::embedded();
    let want: BTreeSet<(i16, i16, bool)> = NEW_IN_4_4
        .iter()
        .flat_map(|(k, vs)| {
            vs.iter()
                .flat_map(move |v| [(*k, *v, true), (*k, *v, false)])
        })
        .collect();
    let got = new_triples(&s);
    assert_eq!(got, want, "the embedded histories' 4.3 -> 4.4 additions");
    assert_eq!(got.len(), 14);
    // The round-trip suites (tests/roundtrip.rs, tests/minimal.rs) walk all_pairs: the
    // new triples are among them.
    let pairs: BTreeSet<(i16, i16, bool)> = all_pairs(&s).into_iter().collect();
    assert!(got.is_subset(&pairs), "all_pairs lacks some 4.4 shapes");
    let mut checked = 0;
    for &(key, v, request) in &got {
        let what = format!(
            "api {key} v{v} {}",
            if request { "request" } else { "response" }
        );
        let mut insts = vec![minimal(&s, key, v, request)];
        for seed in 1..=16u64 {
            insts.push(instance(&s, key, v, request, seed * 104_729 + key as u64));
        }
        for inst in insts {
            let frame = encode(&s, &inst).unwrap_or_else(|e| panic!("{what}: encode: {e}\n{inst}"));
            // decode_check: no error or warning, and the leaves tile the frame.
            let back = decode_check(&s, &frame, request, key, v)
                .unwrap_or_else(|e| panic!("{what}: {e}\n{inst}"));
            assert_eq!(back, inst, "{what}: values differ");
            checked += 1;
        }
    }
    assert_eq!(checked, 14 * 17);
}

#[test]
fn apis_lists_95_keys_with_the_4_4_ranges() {
    let j: J = serde_json::from_str(&out(kwire().args(["apis", "--format", "json"]))).unwrap();
    let a = j.as_array().unwrap();
    let keys: Vec<i64> = a.iter().map(|x| x["api_key"].as_i64().unwrap()).collect();
    assert_eq!(keys, (0..=94).collect::<Vec<i64>>());
    for &(key, vs) in NEW_IN_4_4 {
        let x = &a[key as usize];
        assert_eq!(
            x["max_version"].as_i64(),
            Some(*vs.last().unwrap() as i64),
            "{x}"
        );
        assert_eq!(x["source_releases"][0], "4.4", "{x}");
    }
    assert_eq!(a[93]["api_name"], "StreamsGroupTopologyDescriptionUpdate");
    assert_eq!(a[94]["api_name"], "UnregisterController");
    assert_eq!(a[94]["listeners"], json!(["broker", "controller"]));
    // The text table keeps its columns for the longest name.
    let text = out(kwire().arg("apis"));
    let header = text.lines().next().unwrap();
    let at = header.find("request").unwrap();
    for l in text.lines().skip(1) {
        let (name, rest) = (l[5..at].trim(), &l[at..]);
        assert!(!name.contains(' ') && !name.is_empty(), "{l}");
        assert!(
            rest.starts_with(|c: char| c.is_ascii_digit()) || rest.starts_with("none"),
            "{l}"
        );
    }
    // The release stack knows 4.4, newest.
    let e = Command::cargo_bin("kwire")
        .unwrap()
        .args(["diff", "--release", "4.4", "9.9"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&e.stderr);
    assert!(e.contains("(it has: 3.9, 4.0, 4.1, 4.2, 4.3, 4.4)"), "{e}");
}

/// `kwire encode` of a value, as one hex line.
fn encode_hex(v: &J) -> String {
    out(kwire().args(["encode", "-"]).write_stdin(v.to_string()))
        .trim()
        .to_string()
}

fn walk<'a>(n: &'a J, out: &mut Vec<&'a J>) {
    out.push(n);
    for c in n["children"].as_array().into_iter().flatten() {
        walk(c, out);
    }
}

fn node<'a>(m: &'a J, name: &str) -> &'a J {
    let mut all = Vec::new();
    walk(&m["tree"], &mut all);
    all.into_iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no node {name} in {m}"))
}

#[test]
fn new_apis_decode_by_name_from_hex() {
    let s = Schema::embedded();
    for (key, name, code, error) in [
        (
            93,
            "StreamsGroupTopologyDescriptionUpdate",
            135,
            "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED",
        ),
        (
            94,
            "UnregisterController",
            136,
            "CONTROLLER_ID_NOT_REGISTERED",
        ),
    ] {
        let req = encode_hex(&minimal(&s, key, 0, true));
        let m = json_lines(&out(
            kwire().args(["decode", "--hex", &req, "--format", "json"])
        ));
        assert_eq!(m.len(), 1);
        let m = &m[0];
        assert_eq!(
            (&m["kind"], &m["api_key"], &m["api_name"], &m["api_version"]),
            (&json!("request"), &json!(key), &json!(name), &json!(0)),
            "{m}"
        );
        assert_eq!(m["schema_release"], "4.4");
        assert_eq!(m["errors"], json!([]));
        assert_eq!(m["size"].as_u64().unwrap() as usize * 2, req.len());

        let mut resp = minimal(&s, key, 0, false);
        resp["body"]["ErrorCode"] = json!(code);
        let hex = encode_hex(&resp);
        let m = json_lines(&out(kwire().args([
            "decode",
            "--hex",
            &hex,
            "--api-key",
            &key.to_string(),
            "--api-version",
            "0",
            "--format",
            "json",
        ])));
        let m = &m[0];
        assert_eq!(
            (&m["kind"], &m["api_name"]),
            (&json!("response"), &json!(name))
        );
        assert_eq!(m["errors"], json!([]));
        let ec = node(m, "ErrorCode");
        assert_eq!(
            (&ec["value"], &ec["annotation"]),
            (&json!(code), &json!(error))
        );
        // The text tree names the message and the error too.
        let t = out(kwire().args([
            "decode",
            "--hex",
            &hex,
            "--api-key",
            &key.to_string(),
            "--api-version",
            "0",
            "--no-bytes",
            "--color",
            "never",
        ]));
        assert!(t.contains(&format!("{name}Response")), "{t}");
        assert!(t.contains(error), "{t}");
    }
    // DeleteGroups v3's results carry GROUP_DELETION_FAILED (134).
    let mut resp = minimal(&s, 42, 3, false);
    resp["body"]["Results"][0]["ErrorCode"] = json!(134);
    let hex = encode_hex(&resp);
    let m = json_lines(&out(kwire().args([
        "decode",
        "--hex",
        &hex,
        "--api-key",
        "42",
        "--api-version",
        "3",
        "--format",
        "json",
    ])));
    assert_eq!(
        node(&m[0], "ErrorCode")["annotation"],
        "GROUP_DELETION_FAILED"
    );
}

/// A capture of every (api_key, version) 4.4 added, request and response, one TCP
/// connection: `read`, `-Y`, `stats` and `export` know the names.
#[test]
fn a_capture_of_the_new_shapes() {
    use kwire::input::pcap_out::{PcapWriter, TcpFlow};
    let s = Schema::embedded();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("release_4_4");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cap = dir.join("new.pcap");
    let mut w = PcapWriter::new(std::fs::File::create(&cap).unwrap()).unwrap();
    let mut flow = TcpFlow::new(
        "10.0.0.1:50000".parse().unwrap(),
        "10.0.0.2:9092".parse().unwrap(),
        [1000, 2000],
    );
    flow.open(&mut w, 1_000_000).unwrap();
    let mut t = 1_000_100;
    let mut n = 0;
    for (i, &(key, vs)) in NEW_IN_4_4.iter().enumerate() {
        for &v in vs {
            let mut req = minimal(&s, key, v, true);
            req["header"]["correlation_id"] = json!(i);
            let mut resp = minimal(&s, key, v, false);
            resp["header"]["correlation_id"] = json!(i);
            if key == 94 {
                resp["body"]["ErrorCode"] = json!(136);
            }
            flow.send(&mut w, true, t, &encode(&s, &req).unwrap())
                .unwrap();
            flow.send(&mut w, false, t + 500, &encode(&s, &resp).unwrap())
                .unwrap();
            t += 1000;
            n += 2;
        }
    }
    flow.close(&mut w, t).unwrap();
    drop(w);
    let capture = cap.to_str().unwrap();
    let msgs = json_lines(&out(kwire().args(["read", capture, "--format", "json"])));
    assert_eq!(msgs.len(), n);
    for (m, &(key, vs)) in msgs.chunks(2).zip(NEW_IN_4_4) {
        for x in m {
            assert_eq!(x["api_key"], key, "{x}");
            assert_eq!(x["api_version"], *vs.last().unwrap(), "{x}");
            assert_eq!(x["schema_release"], "4.4", "{x}");
            assert_eq!(x["errors"], json!([]), "{x}");
            assert_eq!(x["warnings"], json!([]), "{x}");
        }
    }
    let names: BTreeSet<String> = msgs
        .iter()
        .map(|m| m["api_name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains("StreamsGroupTopologyDescriptionUpdate"));
    // The display filter, by API name and by the new error code.
    let f = json_lines(&out(kwire().args([
        "read",
        capture,
        "--format",
        "json",
        "-Y",
        "api == UnregisterController",
    ])));
    assert_eq!(f.len(), 2);
    assert!(f.iter().all(|m| m["api_key"] == 94));
    let f = json_lines(&out(kwire().args([
        "read",
        capture,
        "--format",
        "json",
        "-Y",
        "api == StreamsGroupTopologyDescriptionUpdate && kind == request",
    ])));
    assert_eq!(f.len(), 1);
    let f = json_lines(&out(kwire().args([
        "read",
        capture,
        "--format",
        "json",
        "-Y",
        "ErrorCode == 136",
    ])));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["api_name"], "UnregisterController");
    // stats: one row per API and version, the error by name.
    let st = out(kwire().args(["stats", capture]));
    assert!(st.contains("StreamsGroupTopologyDescriptionUpdate"), "{st}");
    assert!(st.contains("CONTROLLER_ID_NOT_REGISTERED x1"), "{st}");
    // export: the messages table names the APIs and the error.
    let ex = dir.join("export");
    out(kwire().arg("export").arg(capture).arg("--out").arg(&ex));
    let rows = parquet_rows(&ex.join("messages"));
    assert_eq!(rows.len(), n);
    let col = |r: &BTreeMap<String, String>, c: &str| r.get(c).cloned().unwrap_or_default();
    let exported: BTreeSet<String> = rows.iter().map(|r| col(r, "api_name")).collect();
    assert_eq!(
        exported,
        names
            .iter()
            .map(|n| format!("\"{n}\""))
            .collect::<BTreeSet<_>>()
    );
    assert!(rows
        .iter()
        .any(|r| col(r, "error_name") == "\"CONTROLLER_ID_NOT_REGISTERED\""));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every row of the Parquet files under `dir`, column name -> value as the parquet
/// crate prints it.
fn parquet_rows(dir: &Path) -> Vec<BTreeMap<String, String>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    let mut rows = Vec::new();
    for f in files {
        let r = SerializedFileReader::new(std::fs::File::open(&f).unwrap()).unwrap();
        for row in r.get_row_iter(None).unwrap() {
            let row = row.unwrap();
            rows.push(
                row.get_column_iter()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect(),
            );
        }
    }
    rows
}

#[test]
fn internal_topics_know_the_4_4_records() {
    // __cluster_metadata: frame version 1, type 29 (UnregisterControllerRecord), version
    // 0, ControllerId 7, no tagged fields.
    let r: J = serde_json::from_str(&out(kwire().args([
        "record",
        "--topic",
        "__cluster_metadata",
        "--value",
        "011d000000000700",
        "--format",
        "json",
    ])))
    .unwrap();
    let s = r.to_string();
    assert!(s.contains("UnregisterControllerRecord"), "{s}");
    assert!(!s.contains("unknown metadata record type"), "{s}");
    let c = find(&r, "ControllerId").unwrap_or_else(|| panic!("{s}"));
    assert_eq!(
        (&c["value"], &c["offset"], &c["length"]),
        (&json!(7), &json!(3), &json!(4))
    );
    // __consumer_offsets: StreamsGroupMetadataKey (type 17, group "gg") and its value v0
    // with 4.4's tagged fields 2 (StoredDescriptionTopologyEpoch = 5) and 3
    // (FailedDescriptionTopologyEpoch = 7).
    let r: J = serde_json::from_str(&out(kwire().args([
        "record",
        "--topic",
        "__consumer_offsets",
        "--key",
        "001100026767",
        "--value",
        "0000 00000003 0000000000000009 02 0204 00000005 0304 00000007",
        "--format",
        "json",
    ])))
    .unwrap();
    let s = r.to_string();
    assert!(s.contains("StreamsGroupMetadataValue"), "{s}");
    for (f, v) in [
        ("Epoch", 3),
        ("MetadataHash", 9),
        ("StoredDescriptionTopologyEpoch", 5),
        ("FailedDescriptionTopologyEpoch", 7),
    ] {
        let n = find(&r, f).unwrap_or_else(|| panic!("no {f}: {s}"));
        assert_eq!(n["value"], v, "{f}: {s}");
    }
    assert!(!s.contains("unknown tag"), "{s}");
}

/// The first node in `v` (any depth) named `name` that is not a tagged field's wrapper
/// (`type` `tag N`, whose child of the same name holds the value).
fn find<'a>(v: &'a J, name: &str) -> Option<&'a J> {
    match v {
        J::Object(m) => {
            let wrapper = m
                .get("type")
                .and_then(J::as_str)
                .is_some_and(|t| t.starts_with("tag "));
            if m.get("name").and_then(J::as_str) == Some(name) && !wrapper {
                return Some(v);
            }
            m.values().find_map(|x| find(x, name))
        }
        J::Array(a) => a.iter().find_map(|x| find(x, name)),
        _ => None,
    }
}

// ------------------------------------------------------------ against the folders

/// `validVersions`-style ranges: `none`, `3`, `3+`, `0-5`.
fn range(s: Option<&J>) -> Vec<i16> {
    let s = s.and_then(J::as_str).unwrap_or("none");
    if s == "none" {
        return Vec::new();
    }
    let (lo, hi) = if let Some(lo) = s.strip_suffix('+') {
        (lo.parse().unwrap(), 99)
    } else if let Some((a, b)) = s.split_once('-') {
        (a.parse().unwrap(), b.parse().unwrap())
    } else {
        (s.parse().unwrap(), s.parse().unwrap())
    };
    (lo..=hi).collect()
}

/// The 4.3 and 4.4 folders of the shared schemas, as `folder` reads them; `None`
/// (with the skip said) where `KWIRE_SHARED` is not set.
fn folders_4_3_4_4(test: &str) -> Option<(BTreeMap<String, J>, BTreeMap<String, J>)> {
    let sh = common::shared(test)?;
    Some((
        folder(&sh.join("kafka-schema/4.3")),
        folder(&sh.join("kafka-schema/4.4")),
    ))
}

/// The definitions of one release folder by name, as raw JSON (comments removed).
fn folder(dir: &Path) -> BTreeMap<String, J> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                let text = std::fs::read_to_string(&p).unwrap();
                let plain = json_comments::StripComments::new(text.as_bytes());
                let v: J = serde_json::from_reader(plain)
                    .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                out.insert(v["name"].as_str().unwrap().to_string(), v);
            }
        }
    }
    out
}

const PRIMS: &[&str] = &[
    "bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "string", "bytes",
    "uuid", "records",
];

/// One field at one version, flattened: path -> (type, nullable, tag, default).
type Flat = BTreeMap<String, (String, bool, Option<i64>, Option<String>)>;

fn struct_fields<'a>(def: &'a J, f: &'a J) -> Option<&'a Vec<J>> {
    if let Some(fs) = f["fields"].as_array() {
        return Some(fs);
    }
    let t = f["type"].as_str()?.trim_start_matches("[]");
    if PRIMS.contains(&t) {
        return None;
    }
    def["commonStructs"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == t)?
        .get("fields")?
        .as_array()
}

fn flatten(def: &J, fields: &[J], v: i16, prefix: &str, out: &mut Flat) {
    for f in fields
        .iter()
        .filter(|f| range(f.get("versions")).contains(&v))
    {
        let name = f["name"].as_str().unwrap();
        let path = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        };
        let tagged = range(f.get("taggedVersions")).contains(&v);
        out.insert(
            path.clone(),
            (
                f["type"].as_str().unwrap().to_string(),
                range(f.get("nullableVersions")).contains(&v),
                if tagged { f["tag"].as_i64() } else { None },
                f.get("default").map(|d| match d {
                    J::String(s) => s.clone(),
                    x => x.to_string(),
                }),
            ),
        );
        if let Some(cs) = struct_fields(def, f) {
            let p = if f["type"].as_str().unwrap().starts_with("[]") {
                format!("{path}[]")
            } else {
                path
            };
            flatten(def, cs, v, &p, out);
        }
    }
}

fn flat(def: &J, v: i16) -> Flat {
    let mut out = Flat::new();
    flatten(def, def["fields"].as_array().unwrap(), v, "", &mut out);
    out
}

/// (path, change) pairs between two flattened sides, as kwire names them: a field under
/// an added (removed) struct is said once, by the struct.
fn changes(old: &Flat, new: &Flat) -> BTreeSet<(String, String)> {
    let under = |p: &str, side: &Flat| {
        let mut q = p;
        while let Some(i) = q.rfind('.') {
            q = q[..i].trim_end_matches("[]");
            if !side.contains_key(q) {
                return true;
            }
        }
        false
    };
    let mut out = BTreeSet::new();
    for (p, n) in new {
        let Some(o) = old.get(p) else {
            if !under(p, old) {
                out.insert((p.clone(), "added".to_string()));
            }
            continue;
        };
        if o.0 != n.0 {
            out.insert((p.clone(), "type".into()));
        }
        if o.1 != n.1 {
            out.insert((p.clone(), "nullable".into()));
        }
        match (o.2, n.2) {
            (None, Some(_)) => drop(out.insert((p.clone(), "tagged".into()))),
            (Some(a), Some(b)) if a != b => drop(out.insert((p.clone(), "tagged".into()))),
            (Some(_), None) => drop(out.insert((p.clone(), "untagged".into()))),
            _ => {}
        }
        if o.3 != n.3 {
            out.insert((p.clone(), "default".into()));
        }
    }
    for p in old.keys() {
        if !new.contains_key(p) && !under(p, new) {
            out.insert((p.clone(), "removed".into()));
        }
    }
    out
}

fn messages_by_key(defs: &BTreeMap<String, J>, ty: &str) -> BTreeMap<i64, J> {
    defs.values()
        .filter(|d| d["type"] == ty)
        .map(|d| (d["apiKey"].as_i64().unwrap(), d.clone()))
        .collect()
}

/// `kwire diff --release 4.3 4.4` lists the APIs whose versions the folders change, with
/// exactly those versions; `kwire diff API --release 4.3 4.4` lists, for each, exactly
/// the field changes between 4.3's newest version and 4.4's newest (each as 4.4's files
/// lay it out: the stable versions' layout is checked to be 4.3's by the next test).
#[test]
fn diff_release_4_3_4_4_is_what_the_folders_say() {
    let Some((a, b)) = folders_4_3_4_4("diff_release_4_3_4_4_is_what_the_folders_say") else {
        return;
    };
    let (ra, rb) = (
        messages_by_key(&a, "request"),
        messages_by_key(&b, "request"),
    );
    let mut want: BTreeMap<i64, (Vec<i16>, Vec<i16>)> = BTreeMap::new();
    for key in ra.keys().chain(rb.keys()) {
        let va = ra
            .get(key)
            .map(|d| range(d.get("validVersions")))
            .unwrap_or_default();
        let vb = rb
            .get(key)
            .map(|d| range(d.get("validVersions")))
            .unwrap_or_default();
        let added: Vec<i16> = vb.iter().filter(|v| !va.contains(v)).copied().collect();
        let removed: Vec<i16> = va.iter().filter(|v| !vb.contains(v)).copied().collect();
        if !added.is_empty() || !removed.is_empty() {
            want.insert(*key, (added, removed));
        }
    }
    let j: J = serde_json::from_str(&out(kwire().args([
        "diff",
        "--release",
        "4.3",
        "4.4",
        "--format",
        "json",
    ])))
    .unwrap();
    let got: BTreeMap<i64, (Vec<i16>, Vec<i16>)> = j["apis"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let l = |k: &str| -> Vec<i16> {
                x[k].as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap() as i16)
                    .collect()
            };
            (x["api_key"].as_i64().unwrap(), (l("added"), l("removed")))
        })
        .collect();
    assert_eq!(got, want, "APIs and versions 4.3 -> 4.4");
    let issue: BTreeMap<i64, (Vec<i16>, Vec<i16>)> = NEW_IN_4_4
        .iter()
        .map(|(k, vs)| (*k as i64, (vs.to_vec(), Vec::new())))
        .collect();
    assert_eq!(want, issue, "the folders against the issue's list");

    let pb = messages_by_key(&b, "response");
    let mut fields_checked = 0;
    for key in want.keys() {
        let name = rb[key]["name"]
            .as_str()
            .unwrap()
            .trim_end_matches("Request");
        let j: J = serde_json::from_str(&out(kwire().args([
            "diff",
            name,
            "--release",
            "4.3",
            "4.4",
            "--format",
            "json",
        ])))
        .unwrap();
        let Some(old_req) = ra.get(key) else {
            // A new API: no version to compare with.
            assert!(j["diff"].is_null(), "{j}");
            continue;
        };
        let fv = *range(old_req.get("validVersions")).last().unwrap();
        let tv = *range(rb[key].get("validVersions")).last().unwrap();
        assert_eq!(
            (&j["diff"]["from"]["version"], &j["diff"]["to"]["version"]),
            (&json!(fv), &json!(tv))
        );
        for (kind, new_defs) in [("request", &rb), ("response", &pb)] {
            let d = &new_defs[key];
            let want = changes(&flat(d, fv), &flat(d, tv));
            let m = j["diff"]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["kind"] == kind)
                .unwrap();
            let got: BTreeSet<(String, String)> = m["changes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["path"].as_str().unwrap().to_string(),
                        c["change"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            assert_eq!(got, want, "api {key} {kind} v{fv} -> v{tv}");
            fields_checked += want.len();
        }
    }
    // ApiVersions v5, TxnOffsetCommit v6, DeleteGroups v3, StreamsGroupHeartbeat v1 and
    // StreamsGroupDescribe v1 change fields.
    assert!(fields_checked >= 10, "{fields_checked} field changes");
}

/// The wire layout of one message at one version with the names left out: per field in
/// order, its type (structs by their own layout), nullability and tag.
fn layout(def: &J, fields: &[J], v: i16) -> String {
    let mut s = String::new();
    for f in fields
        .iter()
        .filter(|f| range(f.get("versions")).contains(&v))
    {
        let t = f["type"].as_str().unwrap();
        let inner = struct_fields(def, f)
            .map(|cs| format!("{{{}}}", layout(def, cs, v)))
            .unwrap_or_else(|| t.trim_start_matches("[]").to_string());
        s.push_str(&format!(
            "{}{}{}{};",
            if t.starts_with("[]") { "[]" } else { "" },
            inner,
            if range(f.get("nullableVersions")).contains(&v) {
                "?"
            } else {
                ""
            },
            if range(f.get("taggedVersions")).contains(&v) {
                format!("@{}", f["tag"])
            } else {
                String::new()
            }
        ));
    }
    s
}

/// kwire keeps 4.3's definition of a message only where it serves a version 4.4 does not;
/// decoding and `diff --release` read 4.4's files for the versions both have. That is
/// right where 4.4 left those versions' wire layout alone: checked here for every
/// message, with the exceptions 4.4 made listed exactly (a rename, which changes no
/// byte, and the tagged fields it gave a record version).
#[test]
fn versions_4_3_had_keep_their_layout_in_4_4() {
    let Some((a, b)) = folders_4_3_4_4("versions_4_3_had_keep_their_layout_in_4_4") else {
        return;
    };
    let mut renamed = BTreeSet::new();
    let mut relaid = BTreeSet::new();
    let mut compared = 0;
    for (name, da) in &a {
        let db = b.get(name).unwrap_or_else(|| panic!("4.4 dropped {name}"));
        let vb = range(db.get("validVersions"));
        for v in range(da.get("validVersions"))
            .into_iter()
            .filter(|v| vb.contains(v))
        {
            compared += 1;
            let (fa, fb) = (
                da["fields"].as_array().unwrap(),
                db["fields"].as_array().unwrap(),
            );
            let flex = |d: &J| range(d.get("flexibleVersions")).contains(&v);
            if layout(da, fa, v) != layout(db, fb, v) || flex(da) != flex(db) {
                let (xa, xb) = (flat(da, v), flat(db, v));
                for (p, c) in changes(&xa, &xb) {
                    relaid.insert(format!("{name} v{v} {p} {c}"));
                }
            } else {
                let (xa, xb) = (flat(da, v), flat(db, v));
                let (ka, kb): (BTreeSet<_>, BTreeSet<_>) =
                    (xa.keys().collect(), xb.keys().collect());
                for (x, y) in ka.difference(&kb).zip(kb.difference(&ka)) {
                    renamed.insert(format!("{name} v{v} {x} -> {y}"));
                }
            }
        }
    }
    assert!(compared > 700, "{compared} (message, version) pairs");
    let mut want_renamed: BTreeSet<String> = (3..=5)
        .map(|v| format!("TxnOffsetCommitRequest v{v} GenerationId -> GenerationIdOrMemberEpoch"))
        .collect();
    // v1 widened it to an int64 under the old name; v0's int32 keeps its bytes, renamed.
    want_renamed.insert(
        "StreamsGroupHeartbeatResponse v0 AcceptableRecoveryLag -> AcceptableRecoveryLagLegacy"
            .into(),
    );
    assert_eq!(renamed, want_renamed);
    let want_relaid: BTreeSet<String> = [
        "StreamsGroupMetadataValue v0 FailedDescriptionTopologyEpoch added",
        "StreamsGroupMetadataValue v0 StoredDescriptionTopologyEpoch added",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(relaid, want_relaid);
    // Tagged, so a 4.3 broker's record (without them) still decodes with 4.4's file.
    let smv = &b["StreamsGroupMetadataValue"]["fields"];
    for f in [
        "StoredDescriptionTopologyEpoch",
        "FailedDescriptionTopologyEpoch",
    ] {
        let x = smv
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == f)
            .unwrap();
        assert_eq!(x["taggedVersions"], "0+", "{f}");
    }
    // The renamed field decodes under 4.4's name at every version (the newest file names
    // the fields), and DescribeProducers (4.4 changed a non-wire fact only) shows no change.
    let s = Schema::embedded();
    let d = s.request(28, 3).unwrap();
    assert!(d
        .def
        .fields
        .iter()
        .any(|f| f.name == "GenerationIdOrMemberEpoch"));
    let t = out(kwire().args([
        "diff",
        "DescribeProducers",
        "--release",
        "4.3",
        "4.4",
        "--color",
        "never",
    ]));
    assert!(t.contains("request: no change on the wire"), "{t}");
    assert!(t.contains("response: no change on the wire"), "{t}");
}

/// `src/errors.rs` holds exactly the codes of `kafka-schema/error-codes.tsv` (4.4's).
#[test]
fn error_table_is_the_shared_one() {
    use kwire::errors::{error_name, ERROR_CODES};
    for (c, n) in [
        (134, "GROUP_DELETION_FAILED"),
        (135, "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED"),
        (136, "CONTROLLER_ID_NOT_REGISTERED"),
    ] {
        assert_eq!(error_name(c), Some(n));
    }
    assert_eq!(error_name(137), None);
    let Some(sh) = common::shared("error_table_is_the_shared_one") else {
        return;
    };
    let tsv = std::fs::read_to_string(sh.join("kafka-schema/error-codes.tsv")).unwrap();
    let want: Vec<(i16, String)> = tsv
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("code\t") && !l.trim().is_empty())
        .map(|l| {
            let (c, n) = l.split_once('\t').unwrap();
            (c.trim().parse().unwrap(), n.trim().to_string())
        })
        .collect();
    let got: Vec<(i16, String)> = ERROR_CODES
        .iter()
        .map(|(c, n)| (*c, n.to_string()))
        .collect();
    assert_eq!(
        got, want,
        "src/errors.rs differs from error-codes.tsv: copy the new codes into ERROR_CODES"
    );
}
