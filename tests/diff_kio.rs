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
                tally.skip(format!(
                    "kio has no such API or version (key {})",
                    m.api_key
                ));
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
    assert!(
        problems.is_empty(),
        "{} mismatches:\n{}",
        problems.len(),
        problems.join("\n")
    );
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
