//! Differential test against tshark: every capture in `captures/` and, with
//! `KWIRE_SHARED`, in `../shared/captures` (public and lab) is decoded by kwire and by
//! `tshark -T json -x`; tshark's Kafka PDUs are paired with kwire's messages by the frame
//! that completed them, direction and correlation_id. For every PDU tshark decodes
//! without complaint (no Malformed mark, no expert note) whose API and version tshark's
//! release handles correctly (the table in `oracle/tshark.rs`), the values both decode
//! must be equal: api_key, api_version, correlation_id, client_id; topic names, partition
//! ids, error codes and the other fields of `oracle::compare::CHECKED` at the same byte
//! offset; records (count, then each key and value). The comparison is
//! `tests/oracle/compare.rs`, which `tests/diff_tshark_tls.rs` runs on the decrypted TLS lab.
//!
//! Also checks that `docs/coverage.md` is what [`coverage_report`] makes now;
//! `KWIRE_UPDATE_COVERAGE=1` rewrites it (`scripts/coverage-report.sh`).

mod common;
mod oracle;

use oracle::compare::{self, tshark_or_skip, FileResult, Outcome};
use oracle::tshark::Limits;
use oracle::CaptureSet;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

/// Every capture, decoded by both tools once per test process (both tests read it).
fn corpus(shared: Option<&Path>, lim: &'static Limits) -> &'static [FileResult] {
    static C: OnceLock<Vec<FileResult>> = OnceLock::new();
    C.get_or_init(|| compare::run_sets(&oracle::capture_sets(shared), lim))
}

#[test]
fn kwire_agrees_with_tshark() {
    let test = "kwire_agrees_with_tshark";
    let Some((version, lim)) = tshark_or_skip(test) else {
        return;
    };
    let shared = common::shared(test);
    compare::check(corpus(shared.as_deref(), lim)).assert_clean(test, &version);
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
    let plain = corpus(Some(shared), lim);
    // The TLS lab, decrypted by both tools with its key logs (as `tests/diff_tshark_tls.rs`).
    let tls = compare::run_sets(&[CaptureSet::tls_lab()], lim);
    let results: Vec<&FileResult> = plain.iter().chain(&tls).collect();
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
         Kafka on ports {}. `tls` = this repository's `captures/lab/tls/`, TLS on port {} \
         decrypted by both tools with each capture's key log (see the TLS section below).\n",
        oracle::PORTS.map(|p| p.to_string()).join(", "),
        oracle::TLS_PORT
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
    for set in ["corpus", "public", "lab", "tls"] {
        let mut rows: BTreeMap<Key, Row> = BTreeMap::new();
        let files = results.iter().filter(|f| f.set == set).count();
        for FileResult { r, .. } in results.iter().copied().filter(|f| f.set == set) {
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

The TLS lab's captures decode only with their key logs: the `tls` table above.
`tests/diff_tshark_tls.rs` runs tshark with `-o tls.keylog_file:NAME.keys -d \
tcp.port==9093,tls -d tls.port==9093,kafka` (the `.dsb.pcapng` capture without the
option: its keys are inside) and checks, capture by capture: the bytes kwire frames as
Kafka, end to end, are tshark's decrypted stream (`-q -z follow,tls,raw,N`) for every
connection in both directions; tshark's Kafka PDUs per api_key and direction are as many
as kwire's, and not none; each connection's correlation_ids, direction by direction, are
the same in the same order. TLS 1.2 and 1.3; AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305;
AES-CBC with HMAC-SHA1, HMAC-SHA256 and HMAC-SHA384, MAC-then-encrypt and
encrypt-then-MAC; RSA and ECDHE key exchange; HelloRetryRequest, KeyUpdate, resumed
sessions (TLS 1.2 abbreviated handshake, TLS 1.3 ticket); TLS 1.3 0-RTT early data (a
Kafka request in the resumed connection's early data, decrypted by both tools with
`CLIENT_EARLY_TRAFFIC_SECRET`); SASL_SSL.

Where tshark falls short:
- Without `-d tls.port==PORT,kafka`, tshark 4.0 hands no decrypted payload to its Kafka
  dissector; without `-d tcp.port==PORT,tls` its heuristics took one lab connection
  (`tls12_ck_cbc_sha256_rsa`) for ADS/AMS and decrypted nothing of it.
- Responses whose request tshark does not decode carry no api_key in tshark (`Response
  (Undecoded, Request Missing)`): Metadata v12 (tshark 4.0 stops at v9), and the other
  versions past its limits listed above. The test counts those under no api_key: tshark's
  total per direction equals kwire's, per api_key it has no more than kwire.
- Inside the decrypted messages, the field values are compared as for the plaintext
  captures (`tests/oracle/compare.rs`: api_key, api_version, correlation_id, client_id,
  topic names, partition ids, error codes, group and member ids, records' keys and
  values...); every message tshark decodes cleanly agrees. The `tls` table's last column
  counts the messages tshark cannot decode: Produce past v8, Fetch past v11, Metadata past
  v9, ApiVersions past v3 and the other versions past its limits; API keys past 47;
  responses whose request it did not decode; JoinGroup v5 and SyncGroup v3, which it
  misreads (the table in `tests/oracle/tshark.rs`). SaslAuthenticate v1 (SASL_SSL) is
  `not dissected to its end`, as in the plaintext SASL captures: tshark 4.0 shows its
  `auth_bytes` as `<MISSING>` and reads the response's session lifetime from bytes of
  the SCRAM message, while kwire's decoding of the same bytes ends at the frame's end.
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
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    // The file ends with the section tests/wireshark_lua.rs keeps.
    let (head, tail) = oracle::coverage_split(&old);
    if std::env::var("KWIRE_UPDATE_COVERAGE").as_deref() == Ok("1") {
        std::fs::write(&path, format!("{text}{tail}")).unwrap();
        eprintln!("{test}: wrote {}", path.display());
        return;
    }
    assert!(
        head == text,
        "docs/coverage.md is not current: run scripts/coverage-report.sh"
    );
}
