//! `kwire wireshark`'s dissector in the real tshark: the generated `kwire_kafka.lua` is
//! loaded with `tshark -X lua_script:...` (tshark's own Kafka dissector disabled, ports
//! 9092, 9093 and 36333 through the `kwire.ports` preference) on every capture in
//! `captures/` and, with `KWIRE_SHARED`, `../shared/captures/{public,lab}`.
//!
//! - No Lua error anywhere (`_ws.lua.error`, a load error on stderr, or the plugin's own
//!   `kwire.internal` note for an error it caught).
//! - On the complete captures (kwire reports no snap-length cut, gap, resync, dropped or
//!   unfinished data), tshark shows a PDU for the same Kafka frames kwire finds (matched
//!   by the frame that completed it, direction and correlation_id), and for each one the
//!   leaf values — header fields, topic names, partition indexes, error codes, record
//!   counts — equal kwire's at the same byte offset, for at least 99% of frames.
//! - The fuzz corpora of the `frame` and `capture` targets (all frame inputs written into
//!   a few captures, a sample of the capture inputs as they are) give no Lua error and no
//!   crash.
//!
//! `docs/coverage.md` ends with the shares this test measures (`KWIRE_UPDATE_COVERAGE=1`
//! rewrites that section; `scripts/coverage-report.sh` does both sections).

mod common;
mod oracle;

use kwire::input::pcap_out::{PcapWriter, TcpFlow};
use kwire::input::{read_capture, CaptureOptions, Event, NoticeKind};
use oracle::{KMsg, KVal};
use serde_json::Value as J;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The generated plugin, written once per test process.
fn plugin() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let dir = oracle::repo().join("target/wireshark-lua");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("kwire_kafka.lua");
        let out = assert_cmd::Command::cargo_bin("kwire")
            .unwrap()
            .env_remove("KWIRE_SCHEMA")
            .args(["wireshark", "--out"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        p
    })
}

fn tshark(capture: &Path, extra: &[&str]) -> std::process::Output {
    let mut c = Command::new("tshark");
    c.arg("-r")
        .arg(capture)
        .arg("-n")
        .arg("-X")
        .arg(format!("lua_script:{}", plugin().display()))
        .args(["--disable-protocol", "kafka"])
        .args(["-o", "kwire.ports:9092,9093,36333"])
        .args(extra);
    c.output().expect("running tshark")
}

/// One field the plugin shows: filter name, display value, position in its data source.
#[derive(Debug, Clone)]
struct LField {
    name: String,
    display: String,
    pos: i64,
    len: i64,
    /// Wireshark's field type number (0: FT_NONE, a subtree).
    ftype: i64,
    /// Inside decompressed data (another data source: its positions are not the frame's).
    decompressed: bool,
}

/// One PDU of the plugin.
#[derive(Debug, Default)]
struct LPdu {
    frame: u64,
    request: bool,
    corr: Option<i64>,
    sasl: bool,
    base: i64,
    fields: Vec<LField>,
    experts: Vec<String>,
    /// Records shown compressed (snappy, lz4, zstd), so not counted.
    undecompressed: bool,
    records: usize,
    wrappers: usize,
}

/// What one tshark run shows.
#[derive(Default)]
struct LRun {
    pdus: Vec<LPdu>,
    /// Packets with a Lua error or a caught plugin error, with the text.
    lua_errors: Vec<String>,
}

fn raws(v: Option<&J>) -> Vec<Option<(i64, i64, i64)>> {
    let one = |r: &J| {
        let a = r.as_array()?;
        Some((
            a.get(1)?.as_i64()?,
            a.get(2)?.as_i64()?,
            a.get(4)?.as_i64()?,
        ))
    };
    match v {
        Some(J::Array(a)) if a.first().is_some_and(|x| x.is_array()) => a.iter().map(one).collect(),
        Some(r) => vec![one(r)],
        None => Vec::new(),
    }
}

fn walk(m: &J, pdu: &mut LPdu, dec: bool) {
    let J::Object(m) = m else {
        if let J::Array(a) = m {
            for x in a {
                walk(x, pdu, dec);
            }
        }
        return;
    };
    for (key, val) in m {
        if key == "_ws.expert" {
            for e in match val {
                J::Array(a) => a.iter().collect(),
                o => vec![o],
            } {
                if let Some(o) = e.as_object() {
                    let msg = o
                        .get("_ws.expert.message")
                        .and_then(J::as_str)
                        .unwrap_or("");
                    for k in o.keys().filter(|k| !k.starts_with("_ws.")) {
                        pdu.experts.push(format!("{k}: {msg}"));
                        if msg.contains("shown compressed") {
                            pdu.undecompressed = true;
                        }
                    }
                }
            }
            continue;
        }
        if key.ends_with("_raw") {
            continue;
        }
        if !key.starts_with("kwire") {
            // An expert item's own line (`text`: {"_ws.expert": ...}).
            if val.is_object() || val.is_array() {
                walk(val, pdu, dec);
            }
            continue;
        }
        if key.ends_with("_tree") {
            walk(val, pdu, dec);
            continue;
        }
        let inner = dec || key == "kwire.decompressed";
        let rs = raws(m.get(&format!("{key}_raw")));
        let vals: Vec<&J> = match val {
            J::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        for (i, v) in vals.into_iter().enumerate() {
            let (pos, len, ftype) = rs.get(i).copied().flatten().unwrap_or((-1, 0, -1));
            match v {
                J::Object(_) => {
                    pdu.fields.push(LField {
                        name: key.clone(),
                        display: String::new(),
                        pos,
                        len,
                        ftype: 0,
                        decompressed: dec,
                    });
                    walk(v, pdu, inner);
                }
                J::String(s) => pdu.fields.push(LField {
                    name: key.clone(),
                    display: s.clone(),
                    pos,
                    len,
                    ftype,
                    decompressed: dec,
                }),
                _ => {}
            }
        }
    }
}

fn any_key(v: &J, f: &dyn Fn(&str) -> bool) -> bool {
    match v {
        J::Object(m) => m.iter().any(|(k, x)| f(k) || any_key(x, f)),
        J::Array(a) => a.iter().any(|x| any_key(x, f)),
        _ => false,
    }
}

/// Runs tshark with the plugin on one capture and reads its PDUs (`-T json -x`).
fn lua_run(capture: &Path) -> LRun {
    lua_run_with(capture, &[])
}

/// [`lua_run`] with more tshark options.
fn lua_run_with(capture: &Path, extra: &[&str]) -> LRun {
    let mut args = vec!["-T", "json", "-x", "--no-duplicate-keys"];
    args.extend_from_slice(extra);
    let out = tshark(capture, &args);
    assert!(
        out.status.success(),
        "tshark on {}: {}",
        capture.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut run = LRun::default();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("Lua") {
        run.lua_errors.push(format!("stderr: {stderr}"));
    }
    let packets: J = serde_json::from_slice(&out.stdout).expect("tshark's JSON");
    for p in packets.as_array().unwrap() {
        let layers = &p["_source"]["layers"];
        let frame: u64 = layers["frame"]["frame.number"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap();
        if any_key(layers, &|k| {
            k == "_ws.lua.error" || k.starts_with("Lua Error")
        }) {
            run.lua_errors.push(format!("frame {frame}: Lua error"));
        }
        let kws: Vec<&J> = match layers.get("kwire") {
            None => continue,
            Some(J::Array(a)) => a.iter().collect(),
            Some(o) => vec![o],
        };
        for k in kws {
            let mut pdu = LPdu {
                frame,
                ..LPdu::default()
            };
            walk(k, &mut pdu, false);
            for e in &pdu.experts {
                if e.starts_with("kwire.internal") {
                    run.lua_errors.push(format!("frame {frame}: {e}"));
                }
            }
            let first = |n: &str| pdu.fields.iter().find(|f| f.name == n);
            pdu.request = first("kwire.kind").is_some_and(|f| f.display == "request");
            pdu.sasl = first("kwire.sasl_token").is_some() || {
                // A zero-length token has no field of its own.
                first("kwire.kind").is_some() && first("kwire.header").is_none()
            };
            pdu.corr = first("kwire.correlation_id").and_then(|f| f.display.parse().ok());
            pdu.base = first("kwire.length").map(|f| f.pos).unwrap_or(0);
            pdu.records = pdu
                .fields
                .iter()
                .filter(|f| f.name == "kwire.record" || f.name == "kwire.message")
                .count();
            pdu.wrappers = pdu
                .fields
                .iter()
                .filter(|f| f.name == "kwire.message.wrapper")
                .count();
            run.pdus.push(pdu);
        }
    }
    run
}

/// Whether kwire reads the capture whole: no cut, corrupt record, gap, resync, drop or
/// unfinished frame.
fn complete(path: &Path) -> bool {
    let schema = kwire::schema::Schema::embedded();
    let plaus = kwire::cli::read::SchemaPlausibility(&schema);
    let opts = CaptureOptions {
        ports: oracle::PORTS.to_vec(),
        ..CaptureOptions::default()
    };
    let mut whole = true;
    let res = read_capture(std::fs::File::open(path).unwrap(), &opts, &plaus, |ev| {
        if let Event::Notice(n) = ev {
            if matches!(
                n.kind,
                NoticeKind::Truncated
                    | NoticeKind::FileTruncated
                    | NoticeKind::CorruptRecord
                    | NoticeKind::Gap
                    | NoticeKind::Resync
                    | NoticeKind::Dropped
                    | NoticeKind::Unfinished
                    | NoticeKind::Oversize
                    | NoticeKind::Malformed
            ) {
                whole = false;
            }
        }
    });
    whole && res.is_ok()
}

/// Names of leaf fields the ≥ 99% rule is about (besides the header and record counts).
fn checked_leaf(name: &str) -> bool {
    let n = name.rsplit('.').next().unwrap_or(name);
    n.ends_with("ErrorCode")
        || matches!(n, "Topic" | "TopicName" | "Name" | "Index" | "recordsCount")
        || (n.starts_with("Partition") && !n.ends_with('s') && !n.contains("Data"))
}

/// Plugin fields made up by the plugin (no kwire node of the same value at the offset).
fn generated(name: &str) -> bool {
    matches!(
        name,
        "kwire.kind"
            | "kwire.api_name"
            | "kwire.header_version"
            | "kwire.request_in"
            | "kwire.response_in"
            | "kwire.null"
            | "kwire.count"
            | "kwire.message.wrapper"
            | "kwire.sasl_token"
            | "kwire.undecoded"
            | "kwire.partial_batch"
            | "kwire.batch.compressed"
    )
}

fn hex_colons(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn same(f: &LField, null: bool, v: &KVal) -> bool {
    let d = f.display.as_str();
    match v {
        KVal::Null => null,
        _ if null => false,
        KVal::Str(s) => d == s,
        KVal::Int(i) => d.parse::<i128>().ok() == Some(*i),
        KVal::Bool(b) => d == if *b { "1" } else { "0" },
        KVal::Bytes(b) => d.replace(':', "") == oracle::hex(b) || d == hex_colons(b),
        KVal::Uuid(u) => d.eq_ignore_ascii_case(u),
        KVal::Float(x) => d
            .parse::<f64>()
            .ok()
            .is_some_and(|y| y == *x || (y.is_nan() && x.is_nan())),
    }
}

/// The comparison of one PDU with kwire's message.
#[derive(Default, Debug)]
struct Cmp {
    /// Mismatches among header fields, checked leaves and record counts.
    checked_bad: Vec<String>,
    /// Leaves compared, and how many of every plugin leaf differ from kwire's.
    leaves: usize,
    leaves_bad: Vec<String>,
}

fn compare(p: &LPdu, k: &KMsg) -> Cmp {
    let mut c = Cmp::default();
    let flen = k.frame.len() as i64;
    let in_frame =
        |f: &LField| !f.decompressed && f.pos >= p.base && f.pos - p.base < flen && f.len > 0;
    let nulls: HashSet<i64> = p
        .fields
        .iter()
        .filter(|f| f.name == "kwire.null" && !f.decompressed)
        .map(|f| f.pos)
        .collect();
    // A null value shows as empty, with a kwire.null field at its position.
    let is_null = |f: &LField| f.display.is_empty() && nulls.contains(&f.pos);
    // Header values the plugin shows (or generates, for a response's API).
    let first = |n: &str| p.fields.iter().find(|f| f.name == n);
    let int = |n: &str| first(n).and_then(|f| f.display.parse::<i128>().ok());
    // kwire's -1, or its guess: a response whose request is not in the capture (the
    // plugin shows its correlation_id and bytes, and no API).
    let known = |v: i16| (v >= 0 && !k.guessed).then_some(i128::from(v));
    for (what, t, kv) in [
        ("api_key", int("kwire.api_key"), known(k.api_key)),
        (
            "api_version",
            int("kwire.api_version"),
            known(k.api_version),
        ),
        (
            "correlation_id",
            int("kwire.correlation_id"),
            k.correlation_id.map(i128::from),
        ),
    ] {
        if t != kv {
            c.checked_bad
                .push(format!("{what}: plugin {t:?}, kwire {kv:?}"));
        }
    }
    if p.request {
        let t = first("kwire.client_id");
        let ok = match (t, &k.client_id) {
            (Some(f), Some(v)) => same(f, is_null(f), v),
            (None, None) => true,
            _ => false,
        };
        if !ok {
            c.checked_bad
                .push(format!("client_id: plugin {t:?}, kwire {:?}", k.client_id));
        }
    }
    if k.guessed {
        return c;
    }
    // Leaves at the same offset.
    let leaves: Vec<&LField> = p
        .fields
        .iter()
        .filter(|f| f.ftype != 0 && !generated(&f.name) && in_frame(f))
        .collect();
    for f in &leaves {
        let rel = (f.pos - p.base) as usize;
        let null = is_null(f);
        let at = k.fields.get(&rel);
        let short = f.name.rsplit('.').next().unwrap_or("");
        let checked = checked_leaf(&f.name);
        let ok = at.is_some_and(|v| {
            v.iter()
                .any(|(n, _, v)| same(f, null, v) && (!checked || n == short))
        }) || {
            // A bytes item covers the data alone: kwire's node starts at its length
            // prefix, 1 to 5 bytes before.
            (1..=5).any(|d| {
                rel >= d
                    && k.fields.get(&(rel - d)).is_some_and(|v| {
                        v.iter().any(|(_, t, v)| {
                            matches!(v, KVal::Bytes(_)) && t != "uvarint" && same(f, false, v)
                        })
                    })
            })
        };
        c.leaves += 1;
        if !ok {
            let why = format!(
                "{} at offset {rel}: plugin {:?}{}, kwire {:?}",
                f.name,
                f.display,
                if null { " (null)" } else { "" },
                at
            );
            if checked {
                c.checked_bad.push(why.clone());
            }
            c.leaves_bad.push(why);
        }
    }
    // kwire's checked leaves the plugin does not show (outside values it shows whole,
    // such as nested protocols inside a bytes field).
    let spans: Vec<(i64, i64)> = leaves
        .iter()
        .map(|f| (f.pos - p.base, f.pos - p.base + f.len))
        .collect();
    let shown: HashSet<i64> = leaves.iter().map(|f| f.pos - p.base).collect();
    for (off, vs) in &k.fields {
        let o = *off as i64;
        for (n, _, _) in vs {
            if checked_leaf(n)
                && !shown.contains(&o)
                && !spans.iter().any(|(a, b)| *a < o && o < *b)
            {
                c.checked_bad.push(format!(
                    "kwire's {n} at offset {off}: the plugin shows nothing there"
                ));
            }
        }
    }
    // Record counts, where the plugin could decompress.
    if !p.undecompressed {
        // A compressed legacy wrapper is a message but not a record; what it holds are.
        let t = p.records - p.wrappers;
        let kn = k.records.len();
        if t != kn {
            c.checked_bad
                .push(format!("records: plugin {t}, kwire {kn}"));
        }
    }
    c
}

/// One capture's results.
#[derive(Default)]
struct FileResult {
    set: &'static str,
    rel: String,
    complete: bool,
    kwire_msgs: usize,
    pdus: usize,
    matched: usize,
    checked_ok: usize,
    leaves: usize,
    leaves_ok: usize,
    /// Leaves that differ, by plugin field name.
    leaf_kinds: BTreeMap<String, usize>,
    problems: Vec<String>,
    lua_errors: Vec<String>,
}

fn run_capture(set: &'static str, rel: String, path: &Path) -> FileResult {
    let dec = oracle::decode_capture(path);
    let run = lua_run(path);
    let mut r = FileResult {
        set,
        rel,
        complete: complete(path),
        kwire_msgs: dec.msgs.len(),
        pdus: run.pdus.len(),
        lua_errors: run.lua_errors,
        ..FileResult::default()
    };
    let mut index: HashMap<(u64, bool, Option<i64>), Vec<usize>> = HashMap::new();
    for (i, m) in dec.msgs.iter().enumerate() {
        let corr = if m.sasl_token {
            None
        } else {
            m.correlation_id.map(i64::from)
        };
        index
            .entry((m.last_frame, m.request, corr))
            .or_default()
            .push(i);
    }
    for p in &run.pdus {
        let corr = if p.sasl { None } else { p.corr };
        let Some(i) = index
            .get_mut(&(p.frame, p.request, corr))
            .and_then(|v| (!v.is_empty()).then(|| v.remove(0)))
        else {
            r.problems.push(format!(
                "frame {}: a plugin PDU ({}, correlation_id {:?}) kwire has no message for",
                p.frame,
                if p.request { "request" } else { "response" },
                p.corr
            ));
            continue;
        };
        r.matched += 1;
        let k = &dec.msgs[i];
        if k.sasl_token {
            r.checked_ok += 1;
            continue;
        }
        let c = compare(p, k);
        r.leaves += c.leaves;
        r.leaves_ok += c.leaves - c.leaves_bad.len();
        for b in &c.leaves_bad {
            let name = b.split(' ').next().unwrap_or("").to_string();
            *r.leaf_kinds.entry(name).or_default() += 1;
        }
        if let Some(b) = c.leaves_bad.first() {
            r.leaf_kinds.entry(format!("e.g. {b}")).or_insert(0);
        }
        if c.checked_bad.is_empty() {
            r.checked_ok += 1;
        } else {
            for b in c.checked_bad {
                r.problems.push(format!(
                    "frame {} {} v{} {}: {b}",
                    p.frame,
                    k.api_name.as_deref().unwrap_or("?"),
                    k.api_version,
                    if k.request { "request" } else { "response" }
                ));
            }
        }
    }
    for v in index.values() {
        for i in v {
            let m = &dec.msgs[*i];
            r.problems.push(format!(
                "frame {}: kwire's {} {} (correlation_id {:?}) has no plugin PDU",
                m.last_frame,
                m.api_name.as_deref().unwrap_or("?"),
                if m.request { "request" } else { "response" },
                m.correlation_id
            ));
        }
    }
    r
}

/// Every capture, run once per test process.
fn corpus(shared: Option<&Path>) -> &'static [FileResult] {
    static C: OnceLock<Vec<FileResult>> = OnceLock::new();
    C.get_or_init(|| {
        let mut jobs = Vec::new();
        for set in oracle::capture_sets(shared) {
            for f in &set.files {
                jobs.push((set.name, set.rel(f), f.clone()));
            }
        }
        let chunk = jobs.len().div_ceil(2).max(1);
        std::thread::scope(|sc| {
            let hs: Vec<_> = jobs
                .chunks(chunk)
                .map(|c| {
                    sc.spawn(move || {
                        c.iter()
                            .map(|(s, rel, f)| run_capture(s, rel.clone(), f))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        })
    })
}

fn tshark_or_skip(test: &str) -> Option<String> {
    let v = oracle::tshark::version();
    if v.is_none() {
        oracle::skip(test, "tshark not installed");
    }
    v
}

/// Sums per set (and `all`): (captures, complete, kwire messages, PDUs, matched,
/// checked ok, leaves, leaves ok), over complete captures for the last six.
type Sums = (usize, usize, usize, usize, usize, usize, usize, usize);

fn sums(results: &[FileResult], set: Option<&str>) -> Sums {
    let mut s: Sums = Default::default();
    for r in results.iter().filter(|r| set.is_none_or(|x| r.set == x)) {
        s.0 += 1;
        if !r.complete {
            continue;
        }
        s.1 += 1;
        s.2 += r.kwire_msgs;
        s.3 += r.pdus;
        s.4 += r.matched;
        s.5 += r.checked_ok;
        s.6 += r.leaves;
        s.7 += r.leaves_ok;
    }
    s
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * a as f64 / b as f64)
    }
}

#[test]
fn the_plugin_agrees_with_kwire_in_tshark() {
    let test = "the_plugin_agrees_with_kwire_in_tshark";
    let Some(version) = tshark_or_skip(test) else {
        return;
    };
    let shared = common::shared(test);
    let results = corpus(shared.as_deref());
    let mut errors = Vec::new();
    for r in results {
        for e in &r.lua_errors {
            errors.push(format!("{}/{}: {e}", r.set, r.rel));
        }
    }
    assert!(errors.is_empty(), "Lua errors:\n{}", errors.join("\n"));
    let s = sums(results, None);
    eprintln!(
        "{test}: {version}; {} captures, {} complete: kwire {} messages, plugin {} PDUs, {} matched, {} agree ({}), leaves {}/{} equal ({})",
        s.0, s.1, s.2, s.3, s.4, s.5, pct(s.5, s.4), s.7, s.6, pct(s.7, s.6)
    );
    for r in results.iter().filter(|r| r.complete) {
        for p in r.problems.iter().take(5) {
            eprintln!("  {}/{}: {p}", r.set, r.rel);
        }
    }
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results.iter().filter(|r| r.complete) {
        for (k, n) in &r.leaf_kinds {
            *kinds.entry(k).or_default() += n;
        }
    }
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (k, n) in kinds.iter().take(40) {
        eprintln!("  leaf mismatch x{n}: {k}");
    }
    assert!(s.4 > 0, "nothing compared");
    // The same frames: kwire's messages and the plugin's PDUs match one to one.
    assert!(
        s.4 * 100 >= s.2 * 99,
        "only {} of kwire's {} messages have a plugin PDU",
        s.4,
        s.2
    );
    assert!(
        s.4 * 100 >= s.3 * 99,
        "only {} of the plugin's {} PDUs match kwire's",
        s.4,
        s.3
    );
    assert!(
        s.5 * 100 >= s.4 * 99,
        "values agree on {} of {} frames",
        s.5,
        s.4
    );
}

fn lua_section(results: &[FileResult], version: &str) -> String {
    let mut out = String::from(oracle::LUA_SECTION);
    out.push_str(&format!(
        "\nThe dissector `kwire wireshark` generates (`kwire_kafka.lua`), loaded into `{version}` \
         with `-X lua_script:kwire_kafka.lua --disable-protocol kafka -o kwire.ports:9092,9093,36333 \
         -T json -x` (`tests/wireshark_lua.rs`), against kwire on the same captures. Counted on the \
         complete captures (kwire reports no snap-length cut, gap, resync, drop or unfinished \
         frame): `frames` = kwire's messages, `PDUs` = what the plugin shows, `same` = matched one \
         to one by the frame that completed them, direction and correlation_id; `agree` = frames \
         whose header fields, topic names, partition indexes, error codes and record counts all \
         equal kwire's at the same offsets (records shown compressed — snappy, lz4, zstd, which \
         Wireshark's Lua API cannot decompress — are not counted); `leaves equal` = every leaf \
         value the plugin shows, compared with kwire's at its offset. tshark's own dissector on \
         the same messages: the `tshark ok` columns above. No Lua error in any capture, complete \
         or not. The TLS lab's captures (`captures/lab/tls/`) are not in the table: \
         `decrypted_tls_reaches_the_plugin` runs them with their key logs and checks that the \
         decrypted Kafka reaches the plugin through `tls.port`, with no Lua error.\n\n"
    ));
    out.push_str("| set | captures | complete | frames | PDUs | same | agree | leaves equal |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for set in ["corpus", "public", "lab"] {
        let s = sums(results, Some(set));
        out.push_str(&format!(
            "| {set} | {} | {} | {} | {} | {} | {} ({}) | {} of {} ({}) |\n",
            s.0,
            s.1,
            s.2,
            s.3,
            s.4,
            s.5,
            pct(s.5, s.4),
            s.7,
            s.6,
            pct(s.7, s.6)
        ));
    }
    let mut bad: BTreeMap<String, usize> = BTreeMap::new();
    for r in results.iter().filter(|r| r.complete) {
        for p in &r.problems {
            // The kind of problem, without frame numbers and values.
            let kind = p
                .split(": ")
                .nth(1)
                .unwrap_or(p)
                .split(" at offset")
                .next()
                .unwrap_or("")
                .to_string();
            let api = p.split_whitespace().nth(2).unwrap_or("?");
            *bad.entry(format!("{api}: {kind}")).or_default() += 1;
        }
    }
    if !bad.is_empty() {
        out.push_str("\nWhere the plugin and kwire differ on complete captures:\n\n");
        for (k, n) in bad {
            out.push_str(&format!("- {k} (x{n})\n"));
        }
    }
    out
}

#[test]
fn coverage_section_is_current() {
    let test = "coverage_section_is_current";
    let Some(version) = tshark_or_skip(test) else {
        return;
    };
    let Some(shared) = common::shared(test) else {
        return;
    };
    let section = lua_section(corpus(Some(&shared)), &version);
    let path = oracle::repo().join("docs/coverage.md");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let (head, tail) = oracle::coverage_split(&old);
    if std::env::var("KWIRE_UPDATE_COVERAGE").as_deref() == Ok("1") {
        std::fs::write(&path, format!("{head}{section}")).unwrap();
        eprintln!("{test}: wrote {}", path.display());
        return;
    }
    assert!(
        tail == section,
        "docs/coverage.md's kwire_kafka.lua section is not current: run scripts/coverage-report.sh"
    );
}

#[test]
fn committed_copy_is_fresh() {
    // `docs/kwire_kafka.lua` is what `kwire wireshark` makes from the embedded facts.
    let want = std::fs::read_to_string(plugin()).unwrap();
    let path = oracle::repo().join("docs/kwire_kafka.lua");
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/kwire_kafka.lua is stale: run `cargo run -- wireshark --out docs/kwire_kafka.lua`"
    );
}

#[test]
fn decrypted_tls_reaches_the_plugin() {
    // The TLS lab (`captures/lab/tls/`): with each capture's key log (the `.dsb.pcapng`
    // holds its keys), tshark decrypts port 9093 and hands the plaintext to the plugin
    // through `tls.port`: Kafka PDUs, no Lua error.
    let test = "decrypted_tls_reaches_the_plugin";
    if tshark_or_skip(test).is_none() {
        return;
    }
    let dir = oracle::repo().join("captures/lab/tls");
    let caps: Vec<PathBuf> = sorted_files(&dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "pcapng"))
        .collect();
    assert!(!caps.is_empty(), "no TLS captures in {}", dir.display());
    let mut bad = Vec::new();
    for c in &caps {
        let keys = c.with_extension("keys");
        let opt = format!("tls.keylog_file:{}", keys.display());
        // 9093 is TLS here, not plain Kafka (the later -o wins over tshark()'s).
        let mut extra = vec!["-o", "kwire.ports:9092", "-d", "tcp.port==9093,tls"];
        if keys.exists() {
            extra.extend(["-o", opt.as_str()]);
        }
        let run = lua_run_with(c, &extra);
        let name = c.file_name().unwrap().to_string_lossy().to_string();
        for e in &run.lua_errors {
            bad.push(format!("{name}: {e}"));
        }
        let known = run
            .pdus
            .iter()
            .filter(|p| p.fields.iter().any(|f| f.name == "kwire.api_name"))
            .count();
        if known == 0 {
            bad.push(format!("{name}: no Kafka PDU decoded after decryption"));
        }
        let malformed = run
            .pdus
            .iter()
            .filter(|p| p.experts.iter().any(|e| e.starts_with("kwire.malformed")))
            .count();
        eprintln!(
            "{test}: {name}: {} PDUs, {known} with their API, {malformed} malformed",
            run.pdus.len()
        );
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Bad input: the fuzz corpora.

fn fuzz_dir(target: &str) -> PathBuf {
    oracle::repo().join("fuzz/corpus").join(target)
}

fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Writes the `frame` target's inputs (`[api_key, api_version, frame...]`) into `parts`
/// captures: each input on its own connection, sent by the server after a client request
/// of its api_key and version with its correlation_id (so the plugin reads it as that
/// response), then by the client as a request.
fn frame_captures(dir: &Path, parts: usize) -> Vec<PathBuf> {
    let inputs = sorted_files(&fuzz_dir("frame"));
    let per = inputs.len().div_ceil(parts).max(1);
    let mut out = Vec::new();
    for (n, chunk) in inputs.chunks(per).enumerate() {
        let path = dir.join(format!("fuzz-frames-{n}.pcap"));
        let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
        for (i, f) in chunk.iter().enumerate() {
            let data = std::fs::read(f).unwrap();
            let [k, v, frame @ ..] = data.as_slice() else {
                continue;
            };
            let corr = frame.get(4..8).unwrap_or(&[0, 0, 0, 0]);
            let mut req = vec![0u8; 4];
            req.extend_from_slice(&i16::from(*k).to_be_bytes());
            req.extend_from_slice(&i16::from(*v as i8).to_be_bytes());
            req.extend_from_slice(corr);
            req.extend_from_slice(&[0xff, 0xff, 0]); // null client_id, no tagged fields
            let size = (req.len() - 4) as i32;
            req[..4].copy_from_slice(&size.to_be_bytes());
            let port = 40000 + (i % 20000) as u16;
            let mut flow = TcpFlow::new(
                SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), port),
                SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092),
                [1000, 2000],
            );
            let t = (n * per + i) as u64 * 10_000;
            flow.open(&mut w, t).unwrap();
            flow.send(&mut w, true, t + 1000, &req).unwrap();
            flow.send(&mut w, false, t + 2000, frame).unwrap();
            flow.send(&mut w, true, t + 3000, frame).unwrap();
            flow.close(&mut w, t + 4000).unwrap();
        }
        out.push(path);
    }
    out
}

/// Runs tshark with the plugin, showing only packets with a Lua error or a caught
/// plugin error; returns what went wrong.
fn lua_trouble(capture: &Path) -> Vec<String> {
    let out = tshark(
        capture,
        &[
            "-Y",
            "_ws.lua.error || kwire.internal",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "_ws.expert.message",
        ],
    );
    let mut bad = Vec::new();
    match out.status.code() {
        None => bad.push(format!("tshark killed by a signal: {:?}", out.status)),
        // 2: the file is damaged (a fuzzed capture); tshark reads what it can.
        Some(0) | Some(2) => {}
        Some(c) => bad.push(format!("tshark exit code {c}")),
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    for l in stdout.lines().filter(|l| !l.trim().is_empty()) {
        bad.push(format!("frame {l}"));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    for l in stderr
        .lines()
        .filter(|l| l.contains("Lua") || l.contains("lua_script"))
    {
        bad.push(format!("stderr: {l}"));
    }
    bad
}

#[test]
fn fuzz_corpora_raise_no_lua_error() {
    let test = "fuzz_corpora_raise_no_lua_error";
    if tshark_or_skip(test).is_none() {
        return;
    }
    let dir = oracle::repo().join("target/wireshark-lua/fuzz");
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = frame_captures(&dir, 2);
    assert!(!files.is_empty(), "no frame corpus");
    // A sample of the capture target's inputs, as they are: every 16th.
    let caps = sorted_files(&fuzz_dir("capture"));
    files.extend(caps.iter().step_by(16).cloned());
    let chunk = files.len().div_ceil(2);
    let bad: Vec<String> = std::thread::scope(|sc| {
        let hs: Vec<_> = files
            .chunks(chunk)
            .map(|c| {
                sc.spawn(move || {
                    c.iter()
                        .flat_map(|f| {
                            lua_trouble(f)
                                .into_iter()
                                .map(|b| format!("{}: {b}", f.display()))
                                .collect::<Vec<_>>()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    eprintln!(
        "{test}: {} captures (frame corpus in 2, capture corpus sampled)",
        files.len()
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_plugin_marks_a_cut_frame_where_it_is_cut() {
    // A DeleteTopics v6 request whose Topics array claims more elements than there are
    // bytes: the plugin's expert note is at the array's count byte.
    if tshark_or_skip("the_plugin_marks_a_cut_frame_where_it_is_cut").is_none() {
        return;
    }
    let mut body = vec![0u8, 20, 0, 6, 0, 0, 0, 7, 0xff, 0xff, 0];
    body.extend_from_slice(&[0x02, 0x03, 0x61]); // 1 topic, its 2-byte name cut short
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    let dir = oracle::repo().join("target/wireshark-lua");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cut-frame.pcap");
    let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    let mut flow = TcpFlow::new(
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092),
        [1, 2],
    );
    flow.open(&mut w, 0).unwrap();
    flow.send(&mut w, true, 1000, &frame).unwrap();
    flow.close(&mut w, 2000).unwrap();
    drop(w);
    let run = lua_run(&path);
    assert!(run.lua_errors.is_empty(), "{:?}", run.lua_errors);
    let p = &run.pdus[0];
    assert!(p.request);
    assert_eq!(p.corr, Some(7));
    assert!(
        p.experts
            .iter()
            .any(|e| e == "kwire.malformed: Name: string of 2 bytes, 1 left"),
        "{:?}",
        p.experts
    );
    // The note sits on the byte that is wrong: the name's length (offset 16 of the
    // frame). tshark's PDML gives the position of the note's own line.
    let pdml = tshark(&path, &["-T", "pdml"]);
    let text = String::from_utf8_lossy(&pdml.stdout);
    let pos_of = |needle: &str| -> i64 {
        let line = text
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle} in the PDML"));
        let at = line.find(" pos=\"").unwrap() + 6;
        line[at..].split('"').next().unwrap().parse().unwrap()
    };
    let base = pos_of("name=\"kwire.length\"");
    let note = pos_of("show=\"Name: string of 2 bytes, 1 left\"");
    assert_eq!(note - base, 16);
}
