//! The field-by-field comparison of kwire's messages with tshark's Kafka PDUs, for one
//! capture or a set of them (`tests/diff_tshark.rs` on the plaintext captures,
//! `tests/diff_tshark_tls.rs` on the TLS lab decrypted by both tools): tshark's PDUs are
//! paired with kwire's messages by the frame that completed them, direction and
//! correlation_id; for every PDU tshark decodes without complaint whose API and version
//! tshark's release handles correctly, the values both decode must be equal.

use super::tshark::{self, Limits, TPdu};
use super::{hex, CaptureSet, KMsg, KVal, Tally, Tls};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// tshark fields compared with the kwire field at the same offset of the frame: the
/// field's filter name and what is compared.
pub const CHECKED: &[&str] = &[
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
pub enum Outcome {
    /// Compared; the mismatches found (empty: all equal).
    Compared(Vec<String>),
    /// Not compared, and why.
    Skipped(String),
}

/// Why tshark's decoding of `p` (kwire's `k`) is not compared, if it is not.
pub fn skip_reason(p: &TPdu, k: Option<&KMsg>, lim: &Limits) -> Option<String> {
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
pub fn compare(p: &TPdu, k: &KMsg, lim: &Limits, tally: &mut Tally) -> Vec<String> {
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
pub struct CaptureResult {
    pub msgs: Vec<KMsg>,
    /// Per kwire message: the tshark outcome (`None`: no PDU of tshark's matched it).
    pub outcome: Vec<Option<Outcome>>,
    /// tshark PDUs that matched no kwire message: (frame, correlation_id).
    pub unmatched: Vec<(u64, Option<i64>)>,
}

/// Decodes `path` with both tools (decrypted with `tls`, if given) and compares them.
pub fn run_capture(
    path: &Path,
    tls: Option<&Tls>,
    lim: &Limits,
    tally: &mut Tally,
) -> CaptureResult {
    let dec = super::decode_capture_tls(path, tls);
    let pdus = tshark::pdus_tls(path, tls);
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
pub struct FileResult {
    pub set: &'static str,
    pub rel: String,
    pub r: CaptureResult,
    pub tally: Tally,
}

/// Every capture of `sets`, decoded and compared by both tools, four at a time (tshark
/// spends most of its time starting up).
pub fn run_sets(sets: &[CaptureSet], lim: &'static Limits) -> Vec<FileResult> {
    let mut jobs = Vec::new();
    for set in sets {
        for f in &set.files {
            jobs.push((set.name, set.rel(f), f.clone(), set.tls_of(f)));
        }
    }
    type Job = (&'static str, String, PathBuf, Option<Tls>);
    let run = |part: &[Job]| {
        part.iter()
            .map(|(set, rel, f, tls)| {
                let mut tally = Tally::default();
                let r = run_capture(f, tls.as_ref(), lim, &mut tally);
                FileResult {
                    set,
                    rel: rel.clone(),
                    r,
                    tally,
                }
            })
            .collect::<Vec<_>>()
    };
    let chunk = jobs.len().div_ceil(4).max(1);
    std::thread::scope(|sc| {
        let hs: Vec<_> = jobs
            .chunks(chunk)
            .map(|c| sc.spawn(move || run(c)))
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

/// tshark's version line and limits, or `None` after printing that the test skips.
pub fn tshark_or_skip(test: &str) -> Option<(String, &'static Limits)> {
    let Some(v) = tshark::version() else {
        super::skip(test, "tshark not installed");
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

/// What [`check`] found over a set of results.
#[derive(Default)]
pub struct Summary {
    pub files: usize,
    /// PDUs whose values were compared.
    pub pdus_compared: usize,
    /// kwire messages tshark shows no PDU for.
    pub kwire_only: usize,
    /// Every value that differs, and every tshark PDU kwire has no message for.
    pub problems: Vec<String>,
    /// The comparison and skip counts, merged.
    pub tally: Tally,
}

/// Gathers the mismatches of `results`.
pub fn check<'a>(results: impl IntoIterator<Item = &'a FileResult>) -> Summary {
    let mut s = Summary::default();
    for FileResult {
        set,
        rel,
        r,
        tally: t,
    } in results
    {
        s.files += 1;
        s.tally.merge(t);
        for (m, o) in r.msgs.iter().zip(&r.outcome) {
            match o {
                Some(Outcome::Compared(bad)) => {
                    s.pdus_compared += 1;
                    for b in bad {
                        s.problems.push(format!(
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
                None => s.kwire_only += 1,
            }
        }
        for (frame, corr) in &r.unmatched {
            s.problems.push(format!(
                "{set}/{rel}: tshark decodes a PDU in frame {frame} (correlation_id {corr:?}) \
                 that kwire has no message for"
            ));
        }
    }
    s
}

impl Summary {
    /// Prints the counts, then fails on any mismatch or when nothing was compared.
    pub fn assert_clean(&self, test: &str, version: &str) {
        eprintln!(
            "{test}: {version}; {} captures; {} PDUs compared; {} kwire messages tshark shows no PDU for",
            self.files, self.pdus_compared, self.kwire_only
        );
        self.tally.print(test);
        assert!(
            self.problems.is_empty(),
            "{} mismatches:\n{}",
            self.problems.len(),
            self.problems.join("\n")
        );
        assert!(
            self.files == 0 || self.pdus_compared > 0,
            "nothing compared"
        );
    }
}
