//! Differential test against tshark: every capture in `captures/` and, with
//! `KWIRE_SHARED`, in `../shared/captures` (public and lab) is decoded by kwire and by
//! `tshark -T json -x`; tshark's Kafka PDUs are paired with kwire's messages by the frame
//! that completed them, direction and correlation_id. For every PDU tshark decodes
//! without complaint (no Malformed mark, no expert note) whose API and version tshark's
//! release handles correctly (the table in `oracle/tshark.rs`), the values both decode
//! must be equal: api_key, api_version, correlation_id, client_id; topic names, partition
//! ids, error codes and the other fields of [`CHECKED`] at the same byte offset; records
//! (count, then each key and value).
//!
//! Also checks that `docs/coverage.md` is what [`coverage_report`] makes now;
//! `KWIRE_UPDATE_COVERAGE=1` rewrites it (`scripts/coverage-report.sh`).

mod common;
mod oracle;

use oracle::tshark::{self, Limits, TPdu};
use oracle::{hex, KMsg, KVal, Tally};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// tshark fields compared with the kwire field at the same offset of the frame: the
/// field's filter name and what is compared.
const CHECKED: &[&str] = &[
    "kafka.topic_name",
    "kafka.partition_id",
    "kafka.error",
    "kafka.error_message",
    "kafka.throttle_time",
    "kafka.consumer_group",
    "kafka.member_id",
    "kafka.generation_id",
    "kafka.protocol_type",
    "kafka.protocol_name",
    "kafka.node_id",
    "kafka.host",
    "kafka.port",
    "kafka.leader_id",
    "kafka.replica_id",
    "kafka.isr_id",
    "kafka.transactional_id",
    "kafka.producer_id",
    "kafka.producer_epoch",
    "kafka.config_key",
    "kafka.config_value",
    "kafka.config_resource_name",
    "kafka.required_acks",
    "kafka.timeout",
    "kafka.session_timeout",
    "kafka.rebalance_timeout",
    "kafka.max_wait_time",
    "kafka.min_bytes",
    "kafka.max_bytes",
    "kafka.coordinator_key",
    "kafka.sasl_mechanism",
    "kafka.api_versions.api_key",
    "kafka.api_versions.min_version",
    "kafka.api_versions.max_version",
];

/// What became of one tshark PDU.
#[derive(Debug)]
enum Outcome {
    /// Compared; the mismatches found (empty: all equal).
    Compared(Vec<String>),
    /// Not compared, and why.
    Skipped(String),
}

/// Why tshark's decoding of `p` (kwire's `k`) is not compared, if it is not.
fn skip_reason(p: &TPdu, k: Option<&KMsg>, lim: &Limits) -> Option<String> {
    if p.request.is_none() {
        return Some("tshark: response without its request (\"Request missing\")".into());
    }
    if let (Some(key), Some(ver)) = (p.api_key, p.api_version) {
        if let Some(why) = lim.unsupported(key as i16, ver as i16) {
            return Some(why);
        }
    }
    if let Some(e) = p.experts.first() {
        return Some(format!("tshark expert note: {e}"));
    }
    if p.malformed {
        return Some("tshark: Malformed".into());
    }
    if p.packet_malformed {
        return Some("tshark: Malformed packet holding several PDUs".into());
    }
    if p.cut {
        return Some("capture: frame cut by the snap length".into());
    }
    if k.is_some_and(|k| k.sasl_token) {
        return Some("kwire: raw SASL token, not a Kafka message".into());
    }
    None
}

fn int_of(display: &str) -> Option<i128> {
    if let Some(h) = display.strip_prefix("0x") {
        return i128::from_str_radix(h, 16).ok();
    }
    display.parse().ok()
}

/// Does tshark's display value equal kwire's value?
fn same(display: &str, v: &KVal) -> bool {
    match v {
        KVal::Null => display == "[ Null ]",
        KVal::Str(s) => display == s,
        KVal::Int(i) => int_of(display) == Some(*i),
        KVal::Bool(b) => display == if *b { "1" } else { "0" },
        _ => false,
    }
}

fn show(v: &KVal) -> String {
    match v {
        KVal::Bytes(b) => hex(b),
        KVal::Str(s) => format!("{s:?}"),
        other => format!("{other:?}"),
    }
}

/// Compares one PDU tshark decodes cleanly with kwire's message.
fn compare(p: &TPdu, k: &KMsg, lim: &Limits, tally: &mut Tally) -> Vec<String> {
    let mut bad = Vec::new();
    let mut eq = |what: &str, t: Option<i128>, kv: Option<i128>, tally: &mut Tally| {
        tally.count(what);
        if t != kv {
            bad.push(format!("{what}: tshark {t:?}, kwire {kv:?}"));
        }
    };
    eq(
        "api_key",
        p.api_key.map(i128::from),
        Some(i128::from(k.api_key)),
        tally,
    );
    eq(
        "api_version",
        p.api_version.map(i128::from),
        Some(i128::from(k.api_version)),
        tally,
    );
    eq(
        "correlation_id",
        p.correlation_id.map(i128::from),
        k.correlation_id.map(i128::from),
        tally,
    );
    if p.request == Some(true) {
        tally.count("client_id");
        let ok = match (&p.client_id, &k.client_id) {
            (Some(t), Some(v)) => same(t, v),
            (None, None) => true,
            _ => false,
        };
        if !ok {
            bad.push(format!(
                "client_id: tshark {:?}, kwire {:?}",
                p.client_id, k.client_id
            ));
        }
    }
    // Fields at the same offset.
    let base = p.base.unwrap_or(0);
    for f in p.fields.iter().filter(|f| CHECKED.contains(&&*f.name)) {
        let Some((_, pos, _)) = f.raw else { continue };
        let rel = pos - base;
        if rel < 0 || rel as usize >= k.frame.len() {
            continue; // another data source (decompressed data)
        }
        tally.count(&f.name);
        let at = k.fields.get(&(rel as usize));
        match at.and_then(|v| v.iter().find(|(_, _, v)| same(&f.display, v))) {
            Some(_) => {}
            None => bad.push(format!(
                "{} at offset {rel}: tshark {:?}, kwire {}",
                f.name,
                f.display,
                match at {
                    None => "no field there".to_string(),
                    Some(v) => v
                        .iter()
                        .map(|(n, t, v)| format!("{n} {t} = {}", show(v)))
                        .collect::<Vec<_>>()
                        .join(", "),
                }
            )),
        }
    }
    // Records.
    if p.undecompressed {
        tally.skip("records of a message: tshark could not decompress them");
        return bad;
    }
    let t_recs: Vec<_> = p.records.iter().filter(|r| !r.wrapper).collect();
    let legacy_wrong = t_recs.iter().find_map(|r| {
        lim.wrong_legacy_magic
            .iter()
            .find(|(m, _)| r.magic == Some(i64::from(*m)))
    });
    if let Some((_, why)) = legacy_wrong {
        tally.skip(format!("records of a message: {why}"));
        return bad;
    }
    if !t_recs.is_empty() || !k.records.is_empty() {
        tally.count("record counts");
        if t_recs.len() != k.records.len() {
            bad.push(format!(
                "records: tshark {}, kwire {}",
                t_recs.len(),
                k.records.len()
            ));
            return bad;
        }
        for (i, (t, kr)) in t_recs.iter().zip(&k.records).enumerate() {
            for (what, tf, kv) in [("key", &t.key, &kr.key), ("value", &t.value, &kr.value)] {
                tally.count(&format!("record {what}s"));
                let t_hex = tf.as_ref().map(|f| match &f.raw {
                    Some((h, _, _)) => h.clone(),
                    None => f.display.replace(':', ""),
                });
                let k_hex = kv.as_ref().map(|b| hex(b));
                // tshark shows a null key or value as empty.
                let ok = t_hex.as_deref().unwrap_or("") == k_hex.as_deref().unwrap_or("");
                if !ok {
                    bad.push(format!(
                        "record {i} {what}: tshark {t_hex:?}, kwire {k_hex:?}"
                    ));
                }
            }
        }
    }
    bad
}

/// kwire's messages and tshark's outcome for each, for one capture.
struct CaptureResult {
    msgs: Vec<KMsg>,
    /// Per kwire message: the tshark outcome (`None`: no PDU of tshark's matched it).
    outcome: Vec<Option<Outcome>>,
    /// tshark PDUs that matched no kwire message: (frame, correlation_id).
    unmatched: Vec<(u64, Option<i64>)>,
}

fn run_capture(path: &Path, lim: &Limits, tally: &mut Tally) -> CaptureResult {
    let dec = oracle::decode_capture(path);
    let pdus = tshark::pdus(path);
    let mut index: HashMap<(u64, bool, Option<i64>), Vec<usize>> = HashMap::new();
    for (i, m) in dec.msgs.iter().enumerate() {
        index
            .entry((m.last_frame, m.request, m.correlation_id.map(i64::from)))
            .or_default()
            .push(i);
    }
    let mut outcome: Vec<Option<Outcome>> = dec.msgs.iter().map(|_| None).collect();
    let mut unmatched = Vec::new();
    for p in &pdus {
        let ki = index
            .get_mut(&(p.frame, p.request.unwrap_or(false), p.correlation_id))
            .and_then(|v| (!v.is_empty()).then(|| v.remove(0)));
        let k = ki.map(|i| &dec.msgs[i]);
        let o = match skip_reason(p, k, lim) {
            Some(why) => {
                tally.skip(why.clone());
                Outcome::Skipped(why)
            }
            None => match k {
                None => {
                    unmatched.push((p.frame, p.correlation_id));
                    continue;
                }
                Some(k) => Outcome::Compared(compare(p, k, lim, tally)),
            },
        };
        if let Some(i) = ki {
            outcome[i] = Some(o);
        }
    }
    CaptureResult {
        msgs: dec.msgs,
        outcome,
        unmatched,
    }
}

/// One capture's results.
struct FileResult {
    set: &'static str,
    rel: String,
    r: CaptureResult,
    tally: Tally,
}

/// Every capture, decoded by both tools once per test process (both tests read it).
fn corpus(shared: Option<&Path>, lim: &'static Limits) -> &'static [FileResult] {
    static C: OnceLock<Vec<FileResult>> = OnceLock::new();
    C.get_or_init(|| {
        let mut jobs = Vec::new();
        for set in oracle::capture_sets(shared) {
            for f in &set.files {
                jobs.push((set.name, set.rel(f), f.clone()));
            }
        }
        let run = |part: &[(&'static str, String, PathBuf)]| {
            part.iter()
                .map(|(set, rel, f)| {
                    let mut tally = Tally::default();
                    let r = run_capture(f, lim, &mut tally);
                    FileResult {
                        set,
                        rel: rel.clone(),
                        r,
                        tally,
                    }
                })
                .collect::<Vec<_>>()
        };
        // tshark spends most of its time starting up; four at a time.
        let chunk = jobs.len().div_ceil(4).max(1);
        std::thread::scope(|sc| {
            let hs: Vec<_> = jobs
                .chunks(chunk)
                .map(|c| sc.spawn(move || run(c)))
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        })
    })
}

/// tshark's version line and limits, or `None` after printing that the test skips.
fn tshark_or_skip(test: &str) -> Option<(String, &'static Limits)> {
    let Some(v) = tshark::version() else {
        oracle::skip(test, "tshark not installed");
        return None;
    };
    let (lim, exact) = tshark::limits(&v);
    if !exact {
        eprintln!(
            "{test}: {v}: no limits table for this release; using tshark {}x's",
            lim.series
        );
    }
    Some((v, lim))
}

#[test]
fn kwire_agrees_with_tshark() {
    let test = "kwire_agrees_with_tshark";
    let Some((version, lim)) = tshark_or_skip(test) else {
        return;
    };
    let shared = common::shared(test);
    let mut tally = Tally::default();
    let mut problems = Vec::new();
    let mut files = 0;
    let mut pdus_compared = 0;
    let mut kwire_only = 0;
    {
        for FileResult {
            set,
            rel,
            r,
            tally: t,
        } in corpus(shared.as_deref(), lim)
        {
            files += 1;
            tally.merge(t);
            for (m, o) in r.msgs.iter().zip(&r.outcome) {
                match o {
                    Some(Outcome::Compared(bad)) => {
                        pdus_compared += 1;
                        for b in bad {
                            problems.push(format!(
                                "{set}/{rel} frame {} {} {} v{} corr {:?}: {b}",
                                m.last_frame,
                                m.api_name.as_deref().unwrap_or("?"),
                                if m.request { "request" } else { "response" },
                                m.api_version,
                                m.correlation_id
                            ));
                        }
                    }
                    Some(Outcome::Skipped(_)) => {}
                    None => kwire_only += 1,
                }
            }
            for (frame, corr) in &r.unmatched {
                problems.push(format!(
                    "{set}/{rel}: tshark decodes a PDU in frame {frame} (correlation_id {corr:?}) \
                     that kwire has no message for"
                ));
            }
        }
    }
    eprintln!("{test}: {version}; {files} captures; {pdus_compared} PDUs compared; {kwire_only} kwire messages tshark shows no PDU for");
    tally.print(test);
    assert!(
        problems.is_empty(),
        "{} mismatches:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(files == 0 || pdus_compared > 0, "nothing compared");
}

// ---------------------------------------------------------------------------------------
// The coverage report.

/// `(api_key, api_version, request)`.
type Key = (i16, i16, bool);

#[derive(Default, Clone)]
struct Row {
    name: String,
    seen: usize,
    clean: usize,
    /// tshark's trouble -> count.
    trouble: BTreeMap<String, usize>,
}

/// A version's request and response rows.
type Sides<'r> = (Option<&'r Row>, Option<&'r Row>);

/// The short category of a skip reason or a mismatch, for the report.
fn category(o: &Option<Outcome>) -> Option<String> {
    Some(match o {
        None => "no PDU".into(),
        Some(Outcome::Compared(bad)) if bad.is_empty() => return None,
        Some(Outcome::Compared(_)) => "values differ".into(),
        Some(Outcome::Skipped(why)) => {
            let w = why.as_str();
            if w.contains("unknown api_key") {
                "unknown key".into()
            } else if w.contains("unsupported version") {
                "unsupported version".into()
            } else if w.contains("Malformed") {
                "malformed".into()
            } else if w.contains("pdu_length_mismatch") {
                "not dissected to its end".into()
            } else if w.contains("Request missing") {
                "request missing".into()
            } else if w.contains("expert note") {
                w.trim_start_matches("tshark expert note: kafka.")
                    .to_string()
            } else if w.contains("snap length") {
                "cut by the snap length".into()
            } else if w.contains("SASL token") {
                return None;
            } else {
                "known wrong (table)".into()
            }
        }
    })
}

/// Makes the report's text.
fn coverage_report(shared: &Path, version: &str, lim: &'static Limits) -> String {
    let results = corpus(Some(shared), lim);
    let mut out = String::new();
    out.push_str(
        "# Coverage: API keys and versions in the captures, and what tshark makes of them\n\n\
         Made by `scripts/coverage-report.sh` (which runs `KWIRE_SHARED=../shared \
         KWIRE_UPDATE_COVERAGE=1 cargo test --test diff_tshark coverage_report_is_current`); \
         `cargo test` with `KWIRE_SHARED` and tshark present fails when this file is not what \
         that command makes now. Do not edit by hand.\n\n",
    );
    out.push_str(&format!(
        "- Capture sets: `corpus` = this repository's `captures/`, `public` and `lab` = \
         `../shared/captures/public` and `../shared/captures/lab`. Every `.pcap` and `.pcapng`, \
         Kafka on ports {}.\n",
        oracle::PORTS.map(|p| p.to_string()).join(", ")
    ));
    out.push_str(&format!(
        "- Oracle: `{version}` with `-d tcp.port==PORT,kafka -T json -x`. Counted per kwire \
         message: `seen` = messages kwire decodes; `tshark ok` = tshark decodes the same message \
         without a note and every compared value is equal to kwire's (`tests/diff_tshark.rs`); \
         the last column says what went wrong for the others: `unknown key` (tshark {}x knows \
         keys 0-{}), `unsupported version`, `malformed`, `not dissected to its end`, `request \
         missing` (tshark did not decode the request, so not the response), `known wrong \
         (table)` (a misreading the test's table lists), `cut by the snap length` (the \
         capture holds part of the frame), `values differ`, `no PDU` (tshark shows no PDU \
         for it).\n",
        lim.series, lim.last_key
    ));
    let mut totals: Vec<(String, usize, usize, usize)> = Vec::new();
    let mut sections = String::new();
    for set in ["corpus", "public", "lab"] {
        let mut rows: BTreeMap<Key, Row> = BTreeMap::new();
        let files = results.iter().filter(|f| f.set == set).count();
        for FileResult { r, .. } in results.iter().filter(|f| f.set == set) {
            for (m, o) in r.msgs.iter().zip(&r.outcome) {
                if m.sasl_token {
                    continue;
                }
                let row = rows
                    .entry((m.api_key, m.api_version, m.request))
                    .or_default();
                row.name = m
                    .api_name
                    .clone()
                    .unwrap_or_else(|| "? (response without its request)".into());
                row.seen += 1;
                match category(o) {
                    None => row.clean += 1,
                    Some(c) => *row.trouble.entry(c).or_default() += 1,
                }
            }
        }
        let seen: usize = rows.values().map(|r| r.seen).sum();
        let clean: usize = rows.values().map(|r| r.clean).sum();
        totals.push((set.to_string(), files, seen, clean));
        sections.push_str(&format!(
            "\n## {set} ({files} captures, {seen} messages, {clean} tshark ok)\n\n"
        ));
        if rows.is_empty() {
            sections.push_str("No captures.\n");
            continue;
        }
        sections.push_str("| key | API | version | req seen | req tshark ok | rsp seen | rsp tshark ok | tshark trouble |\n|---:|---|---:|---:|---:|---:|---:|---|\n");
        let mut pairs: BTreeMap<(i16, i16), Sides<'_>> = BTreeMap::new();
        for ((k, v, req), row) in &rows {
            let e = pairs.entry((*k, *v)).or_default();
            if *req {
                e.0 = Some(row);
            } else {
                e.1 = Some(row);
            }
        }
        for ((k, v), (req, rsp)) in pairs {
            let name = req.or(rsp).map(|r| r.name.clone()).unwrap_or_default();
            let mut trouble: BTreeMap<String, usize> = BTreeMap::new();
            for (side, r) in [("req", req), ("rsp", rsp)] {
                if let Some(r) = r {
                    for (c, n) in &r.trouble {
                        *trouble.entry(format!("{c} ({side})")).or_default() += n;
                    }
                }
            }
            let cell = |r: Option<&Row>, f: fn(&Row) -> usize| r.map(f).unwrap_or(0);
            sections.push_str(&format!(
                "| {k} | {name} | {v} | {} | {} | {} | {} | {} |\n",
                cell(req, |r| r.seen),
                cell(req, |r| r.clean),
                cell(rsp, |r| r.seen),
                cell(rsp, |r| r.clean),
                trouble
                    .iter()
                    .map(|(c, n)| format!("{c} x{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    out.push_str("\n| set | captures | messages | tshark ok |\n|---|---:|---:|---:|\n");
    for (s, files, seen, clean) in &totals {
        out.push_str(&format!("| {s} | {files} | {seen} | {clean} |\n"));
    }
    out.push_str(&sections);
    out.push_str(TLS_NOTES);
    out
}

/// What the TLS lab's differential (`tests/diff_tshark_tls.rs`) checks, and where tshark
/// falls short on it.
const TLS_NOTES: &str = "
## TLS (`captures/lab/tls/`, `tests/diff_tshark_tls.rs`)

The TLS lab's captures are not in the tables above: they decode only with their key logs.
`tests/diff_tshark_tls.rs` runs tshark with `-o tls.keylog_file:NAME.keys -d \
tcp.port==9093,tls -d tls.port==9093,kafka` (the `.dsb.pcapng` capture without the
option: its keys are inside) and checks, capture by capture: the bytes kwire frames as
Kafka, end to end, are tshark's decrypted stream (`-q -z follow,tls,raw,N`) for every
connection in both directions; tshark's Kafka PDUs per api_key and direction are as many
as kwire's, and not none; each connection's correlation_ids, direction by direction, are
the same in the same order. TLS 1.2 and 1.3; AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305;
AES-CBC with HMAC-SHA1, HMAC-SHA256 and HMAC-SHA384, MAC-then-encrypt and
encrypt-then-MAC; RSA and ECDHE key exchange; HelloRetryRequest, KeyUpdate, resumed
sessions (TLS 1.2 abbreviated handshake, TLS 1.3 ticket); SASL_SSL.

Where tshark falls short:
- Without `-d tls.port==PORT,kafka`, tshark 4.0 hands no decrypted payload to its Kafka
  dissector; without `-d tcp.port==PORT,tls` its heuristics took one lab connection
  (`tls12_ck_cbc_sha256_rsa`) for ADS/AMS and decrypted nothing of it.
- Responses whose request tshark does not decode carry no api_key in tshark (`Response
  (Undecoded, Request Missing)`): Metadata v12 (tshark 4.0 stops at v9), and the other
  versions past its limits listed above. The test counts those under no api_key: tshark's
  total per direction equals kwire's, per api_key it has no more than kwire.
- Field values inside the decrypted messages (past the correlation_id) are compared for
  the plaintext captures only (the tables above); for TLS, the byte streams are.
";

#[test]
fn coverage_report_is_current() {
    let test = "coverage_report_is_current";
    let Some((version, lim)) = tshark_or_skip(test) else {
        return;
    };
    let Some(shared) = common::shared(test) else {
        return;
    };
    let text = coverage_report(&shared, &version, lim);
    let path = oracle::repo().join("docs/coverage.md");
    if std::env::var("KWIRE_UPDATE_COVERAGE").as_deref() == Ok("1") {
        std::fs::write(&path, &text).unwrap();
        eprintln!("{test}: wrote {}", path.display());
        return;
    }
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        old == text,
        "docs/coverage.md is not current: run scripts/coverage-report.sh"
    );
}
