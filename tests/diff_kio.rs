//! Differential test against kio (PyPI `kio`, Aiven's Python Kafka protocol library,
//! entities generated from Kafka's message definitions): every Kafka message kwire finds
//! in the captures (`captures/` and, with `KWIRE_SHARED`, `../shared/captures`) whose API
//! and version kio has is decoded by `tests/kio_oracle.py` from the captured frame; every
//! field both decode must be equal, by name (kio's snake_case against kwire's schema
//! names), through structs and arrays; record batches kio can read (v2, uncompressed) by
//! count, then each record's key and value.
//!
//! kio runs from a virtual environment: `KWIRE_KIO_PYTHON`, else `target/kio-venv/bin/python`
//! (`.ci/run` makes it: `python3 -m venv target/kio-venv && target/kio-venv/bin/pip install
//! kio`).

mod common;
mod oracle;

use kwire::schema::{release_number, MessageKind, Schema};
use oracle::{KMsg, Tally};
use serde_json::{json, Value as J};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The Python with kio, or `None` after printing that the test skips.
fn kio_python(test: &str) -> Option<PathBuf> {
    let py = std::env::var_os("KWIRE_KIO_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| oracle::repo().join("target/kio-venv/bin/python"));
    let ok = Command::new(&py)
        .args(["-c", "import kio"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(py)
    } else {
        oracle::skip(
            test,
            &format!("kio not installed ({} cannot import kio)", py.display()),
        );
        None
    }
}

/// `ThrottleTimeMs` -> `throttle_time_ms`.
fn snake(s: &str) -> String {
    let cs: Vec<char> = s.chars().collect();
    let mut out = String::new();
    for (i, c) in cs.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (cs[i - 1].is_ascii_lowercase() || cs[i - 1].is_ascii_digit());
            let next_lower = cs.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && cs[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

/// The kwire key of an object for kio's field name `name`.
fn kwire_key<'a>(kw: &'a serde_json::Map<String, J>, name: &str) -> Option<&'a str> {
    let ms = format!("{name}_ms");
    kw.keys()
        .find(|k| snake(k) == name)
        .or_else(|| kw.keys().find(|k| snake(k) == ms))
        .map(String::as_str)
}

struct Cmp<'t> {
    tally: &'t mut Tally,
    bad: Vec<String>,
    /// kio fields kwire has no field for (tagged fields absent from the frame), by name.
    unpaired: BTreeMap<String, usize>,
}

const NIL_UUID: &str = "00000000-0000-0000-0000-000000000000";

fn scalar_eq(path: &str, kio: &J, kw: &J) -> bool {
    match (kio, kw) {
        // kio reads a timestamp of -1 (none) as None.
        (J::Null, J::Number(n)) if path.ends_with("Ms") || path.ends_with("Timestamp") => {
            n.as_i64() == Some(-1)
        }
        (J::Number(a), J::Number(b)) => {
            a.as_f64() == b.as_f64() && a.to_string() == b.to_string()
                || a.as_i64().is_some() && a.as_i64() == b.as_i64()
                || a.as_f64() == b.as_f64()
        }
        (J::Number(a), J::String(b)) => a.to_string() == *b,
        // kio reads the nil UUID as None.
        (J::Null, J::String(s)) => s == NIL_UUID,
        _ => kio == kw,
    }
}

impl Cmp<'_> {
    fn value(&mut self, path: &str, kio: &J, kw: &J) {
        match (kio, kw) {
            (J::Object(k), _) if k.contains_key("batches") || k.contains_key("raw") => {
                self.records(path, k, kw)
            }
            // kwire has no body node for an empty body.
            (J::Object(k), J::Null) if k.is_empty() => {}
            (J::Object(k), J::Object(w)) => {
                for (name, v) in k {
                    match kwire_key(w, name) {
                        Some(wk) => self.value(&format!("{path}.{wk}"), v, &w[wk]),
                        None => *self.unpaired.entry(name.clone()).or_default() += 1,
                    }
                }
            }
            (J::Array(a), J::Array(b)) => {
                self.tally.count("array lengths");
                if a.len() != b.len() {
                    self.bad.push(format!(
                        "{path}: kio {} elements, kwire {}",
                        a.len(),
                        b.len()
                    ));
                    return;
                }
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    self.value(&format!("{path}[{i}]"), x, y);
                }
            }
            _ => {
                self.tally.count("scalar fields");
                if !scalar_eq(path, kio, kw) {
                    self.bad.push(format!("{path}: kio {kio}, kwire {kw}"));
                }
            }
        }
    }

    fn records(&mut self, path: &str, k: &serde_json::Map<String, J>, kw: &J) {
        let Some(batches) = k.get("batches").and_then(J::as_array) else {
            let why = k.get("why").and_then(J::as_str).unwrap_or("?");
            self.tally.skip(format!("records field: kio: {why}"));
            return;
        };
        // kwire: an array of batch objects (a hex string when it could not decode them).
        let empty = Vec::new();
        let kb = match kw {
            J::Array(a) => a,
            J::Null | J::String(_) if batches.is_empty() => &empty,
            _ => {
                self.bad.push(format!(
                    "{path}: kio reads {} batches, kwire {kw}",
                    batches.len()
                ));
                return;
            }
        };
        // kio stops at a partial batch at the end (a Fetch response may end with one);
        // kwire shows it as a batch of its own.
        let partial = k.get("partial_tail").and_then(J::as_bool) == Some(true);
        let kb = if partial && kb.len() == batches.len() + 1 {
            &kb[..batches.len()]
        } else {
            &kb[..]
        };
        self.tally.count("record batch counts");
        if batches.len() != kb.len() {
            self.bad.push(format!(
                "{path}: kio {} batches, kwire {}",
                batches.len(),
                kb.len()
            ));
            return;
        }
        for (i, (b, w)) in batches.iter().zip(kb).enumerate() {
            let p = format!("{path}[{i}]");
            self.tally.count("record batch fields");
            if b["attributes"].as_i64() != Some(attributes_bits(&w["attributes"])) {
                self.bad.push(format!(
                    "{p}.attributes: kio {}, kwire {}",
                    b["attributes"], w["attributes"]
                ));
            }
            for (kf, wf) in [("base_offset", "baseOffset"), ("producer_id", "producerId")] {
                self.tally.count("record batch fields");
                if !scalar_eq(wf, &b[kf], &w[wf]) {
                    self.bad
                        .push(format!("{p}.{wf}: kio {}, kwire {}", b[kf], w[wf]));
                }
            }
            let kr = b["records"].as_array().unwrap();
            let wr = w["records"].as_array().cloned().unwrap_or_default();
            self.tally.count("record counts");
            if kr.len() != wr.len() {
                self.bad
                    .push(format!("{p}: kio {} records, kwire {}", kr.len(), wr.len()));
                continue;
            }
            for (j, (x, y)) in kr.iter().zip(&wr).enumerate() {
                for f in ["key", "value"] {
                    self.tally.count(&format!("record {f}s"));
                    if x[f] != y[f] {
                        self.bad.push(format!(
                            "{p}.Records[{j}].{f}: kio {}, kwire {}",
                            x[f], y[f]
                        ));
                    }
                }
                self.tally.count("record header counts");
                let wh = y.get("headers").and_then(J::as_array).map_or(0, Vec::len);
                if x["headers"].as_u64() != Some(wh as u64) {
                    self.bad.push(format!(
                        "{p}.Records[{j}]: kio {} headers, kwire {wh}",
                        x["headers"]
                    ));
                }
            }
        }
    }
}

#[test]
fn kwire_agrees_with_kio() {
    let test = "kwire_agrees_with_kio";
    let Some(py) = kio_python(test) else {
        return;
    };
    let shared = common::shared(test);
    let sets = oracle::capture_sets(shared.as_deref());
    let mut msgs: Vec<(String, KMsg)> = Vec::new();
    let mut tally = Tally::default();
    for set in &sets {
        for f in &set.files {
            for m in oracle::decode_capture(f).msgs {
                if m.sasl_token {
                    tally.skip("kwire: raw SASL token, not a Kafka message");
                    continue;
                }
                if m.api_name.is_none() {
                    tally.skip("kwire: unknown api_key");
                    continue;
                }
                msgs.push((format!("{}/{}", set.name, set.rel(f)), m));
            }
        }
    }
    // Every (api_key, version) of the embedded stack, request and response, as its
    // minimal instance: the versions no capture holds are compared too, and those kio
    // cannot know are skipped by name below.
    let every = every_version_capture();
    for m in oracle::decode_capture(&every).msgs {
        assert!(m.api_name.is_some(), "every-version.pcap: {m:?}");
        msgs.push(("minimal/every-version.pcap".to_string(), m));
    }
    let _ = std::fs::remove_file(&every);
    let mut after_4_3 = 0;
    let mut input = String::new();
    for (i, (_, m)) in msgs.iter().enumerate() {
        let line = json!({
            "id": i,
            "kind": if m.request { "request" } else { "response" },
            "api_key": m.api_key,
            "api_version": m.api_version,
            "hex": oracle::hex(&m.frame),
        });
        input.push_str(&line.to_string());
        input.push('\n');
    }
    let mut child = Command::new(&py)
        .arg(oracle::repo().join("tests/kio_oracle.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running kio_oracle.py");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "kio_oracle.py failed");
    let schema = Schema::embedded();
    let mut problems = Vec::new();
    let mut compared = 0;
    let mut unpaired: BTreeMap<String, usize> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let r: J = serde_json::from_str(line).unwrap();
        let (file, m) = &msgs[r["id"].as_u64().unwrap() as usize];
        let what = format!(
            "{file} frame {} {} {} v{} corr {:?}",
            m.last_frame,
            m.api_name.as_deref().unwrap_or("?"),
            if m.request { "request" } else { "response" },
            m.api_version,
            m.correlation_id
        );
        match r["status"].as_str().unwrap() {
            "unsupported" => {
                // Skipped only where Kafka 4.3 (the definitions kio is generated from)
                // has no such version; kio lacking a version 4.3 has is a failure.
                match kio_may_lack(&schema, m.api_key, m.api_version, m.request) {
                    Some(why) => {
                        after_4_3 += usize::from(why.contains("added in Kafka"));
                        tally.skip(format!(
                            "kio has no such API or version: {} v{} {why}",
                            m.api_name.as_deref().unwrap_or("?"),
                            m.api_version
                        ))
                    }
                    None => problems.push(format!(
                        "{what}: kio has no such API or version, yet Kafka 4.3 has it"
                    )),
                }
                continue;
            }
            "error" => {
                let why = r["why"].as_str().unwrap_or("");
                if why.contains("is not a valid ErrorCode") {
                    tally.skip("kio rejects an error code it does not know");
                } else if m.errors.is_empty() {
                    problems.push(format!(
                        "{what}: kio fails where kwire finds no error: {why}"
                    ));
                } else {
                    tally.skip("kio fails and kwire reports errors too");
                }
                continue;
            }
            _ => {}
        }
        if !m.errors.is_empty() {
            tally.skip("kwire reports errors (compared up to them only by kwire's own tests)");
            continue;
        }
        compared += 1;
        let mut c = Cmp {
            tally: &mut tally,
            bad: Vec::new(),
            unpaired: BTreeMap::new(),
        };
        c.tally.count("frame lengths");
        // kwire reads the whole frame; bytes after the body are a warning of its own.
        let body_end = m.frame.len() - m.trailing;
        if r["consumed"].as_u64() != Some(body_end as u64) {
            c.bad.push(format!(
                "kio reads {} bytes, kwire's body ends at {body_end}",
                r["consumed"]
            ));
        }
        // Header fields, by name; the top level of kwire's values holds them.
        c.value("header", &r["header"], &header_values(&m.values));
        c.value("body", &r["body"], &m.values["body"]);
        for (k, n) in c.unpaired {
            *unpaired.entry(k).or_default() += n;
        }
        for b in c.bad {
            problems.push(format!("{what}: {b}"));
        }
    }
    eprintln!(
        "{test}: {} captures, {} kwire messages, {compared} compared with kio",
        sets.iter().map(|s| s.files.len()).sum::<usize>(),
        msgs.len()
    );
    tally.print(test);
    if !unpaired.is_empty() {
        eprintln!("{test}: kio fields with no kwire field (tagged fields not in the frame):");
        for (k, n) in &unpaired {
            eprintln!("  {n:6}  {k}");
        }
    }
    // Kafka 4.4's seven new (api_key, version)s, request and response, are the ones kio
    // cannot know among the minimal instances (no capture holds them yet).
    assert_eq!(
        after_4_3, 14,
        "messages of versions newer than kio's Kafka 4.3"
    );
    assert!(
        problems.is_empty(),
        "{} mismatches:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Writes a capture (one TCP connection to port 9092) of the minimal instance of every
/// (api_key, version) the embedded stack has, each request followed by its response.
fn every_version_capture() -> PathBuf {
    use kwire::encode::{encode, minimal::minimal};
    use kwire::input::pcap_out::{PcapWriter, TcpFlow};
    let s = Schema::embedded();
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("kio-every-version-{}.pcap", std::process::id()));
    let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    let mut flow = TcpFlow::new(
        "10.0.0.1:50000".parse().unwrap(),
        "10.0.0.2:9092".parse().unwrap(),
        [1000, 2000],
    );
    let mut t = 1_000_000;
    flow.open(&mut w, t).unwrap();
    let mut corr = 0;
    for key in s.api_keys() {
        for v in s.versions(MessageKind::Request, key) {
            if !s.versions(MessageKind::Response, key).contains(&v) {
                continue;
            }
            corr += 1;
            for request in [true, false] {
                let mut m = minimal(&s, key, v, request);
                m["header"]["correlation_id"] = json!(corr);
                if key == 0 && request {
                    // acks=0 would leave the response unpaired (no response is due).
                    m["body"]["Acks"] = json!(-1);
                }
                let frame = encode(&s, &m).unwrap();
                t += 100;
                flow.send(&mut w, request, t, &frame).unwrap();
            }
        }
    }
    flow.close(&mut w, t + 100).unwrap();
    path
}

/// Why kio may lack `api_key` v`version` (request or response): kio 0.6.5's entities are
/// generated from Kafka 4.3's definitions, so a version 4.3 does not have (removed by 4.0,
/// KIP-896; or added since, Kafka 4.4's new versions and APIs) is one it cannot know.
/// `None` when 4.3 has the version: kio must decode it. From the embedded histories.
fn kio_may_lack(schema: &Schema, api_key: i16, version: i16, request: bool) -> Option<String> {
    let kind = if request {
        MessageKind::Request
    } else {
        MessageKind::Response
    };
    let name = schema.by_api(kind, api_key).first()?.def.name.clone();
    let h = schema.history(&name)?;
    let has = |pred: &dyn Fn(i64) -> bool| {
        h.iter()
            .filter(|(r, _)| pred(release_number(r)))
            .find(|(_, v)| v.contains(version))
            .map(|(r, _)| r.clone())
    };
    let kio = release_number("4.3");
    if has(&|r| r == kio).is_some() {
        return None;
    }
    Some(match has(&|r| r > kio) {
        Some(r) => format!("(added in Kafka {r}, after kio's 4.3)"),
        None => "(not in Kafka 4.3: removed by 4.0, KIP-896)".to_string(),
    })
}

/// kwire's header values under the header's own field names.
/// A RecordBatch's attributes as the int16 on the wire, from kwire's values object
/// (`docs/values-format.md`).
fn attributes_bits(a: &J) -> i64 {
    let codec = match a["compression"].as_str() {
        Some("gzip") => 1,
        Some("snappy") => 2,
        Some("lz4") => 3,
        Some("zstd") => 4,
        _ => 0,
    };
    let bit = |k: &str, n: u32| {
        if a[k].as_bool() == Some(true) {
            1i64 << n
        } else {
            0
        }
    };
    let ts = if a["timestampType"] == "LogAppendTime" {
        1 << 3
    } else {
        0
    };
    codec
        | ts
        | bit("isTransactional", 4)
        | bit("isControlBatch", 5)
        | bit("hasDeleteHorizonMs", 6)
        | (a["unusedBits"].as_i64().unwrap_or(0) << 7)
}

fn header_values(v: &J) -> J {
    let mut m = serde_json::Map::new();
    m.insert("RequestApiKey".into(), v["api_key"].clone());
    m.insert("RequestApiVersion".into(), v["api_version"].clone());
    m.insert(
        "CorrelationId".into(),
        v["header"]["correlation_id"].clone(),
    );
    if let Some(c) = v["header"].get("client_id") {
        m.insert("ClientId".into(), c.clone());
    }
    J::Object(m)
}
