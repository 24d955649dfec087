//! Differential test of TLS decryption against tshark: every capture of the TLS lab
//! (`captures/lab/tls/NAME.pcapng` with its key log `NAME.keys`; `NAME.dsb.pcapng` carries
//! its keys in a Decryption Secrets Block) is decrypted by kwire and by `tshark -o
//! tls.keylog_file:KEYS -d tls.port==9093,kafka`. For each connection and direction, the
//! bytes kwire frames as Kafka, end to end, must be tshark's decrypted stream (`-q -z
//! follow,tls,raw,N`), the Kafka PDUs per api_key and direction must be as many (and
//! more than none), and each connection's correlation_ids, direction by direction, the
//! same in the same order. Then, inside the decrypted messages, the values tshark's Kafka
//! dissector decodes are compared with kwire's field by field, as `tests/diff_tshark.rs`
//! does for the plaintext captures (the same code: `tests/oracle/compare.rs`); the
//! messages tshark 4.0 cannot decode (versions past its limits, responses whose request
//! it did not decode) are counted by reason, and `docs/coverage.md` lists them (its `tls`
//! set). Skips (saying so) when tshark is missing.

mod common;
use common::unhex;

mod oracle;

use kwire::decode::DecodeOptions;
use kwire::input::{read_capture, CaptureOptions, Direction, Event, NoticeKind};
use kwire::schema::Schema;
use kwire::session::{SchemaPlausibility, Session};
use kwire::tree::Buffers;
use oracle::compare::{self, tshark_or_skip};
use oracle::{CaptureSet, Tls, TLS_PORT as PORT};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

/// Per client port: the bytes of each direction (c>s, s>c).
type Streams = BTreeMap<u16, [Vec<u8>; 2]>;
/// (api_key, is_response) -> PDUs.
type Counts = BTreeMap<(i16, bool), u64>;
/// (client port, 0 for c>s or 1 for s>c) -> the correlation_ids of its messages, in order.
type Corrs = BTreeMap<(u16, usize), Vec<i32>>;

struct Kw {
    streams: Streams,
    corrs: Corrs,
    counts: Counts,
    notices: Vec<String>,
}

fn read_in_process(path: &Path) -> Kw {
    let keys = Tls::of(path).key_log();
    let schema = Schema::embedded();
    let plaus = SchemaPlausibility(&schema);
    let dopts = DecodeOptions::default();
    let opts = CaptureOptions {
        ports: vec![PORT],
        tls_keys: Arc::new(keys),
        ..CaptureOptions::default()
    };
    let mut session = Session::new(&schema, &dopts);
    let mut kw = Kw {
        streams: Streams::new(),
        counts: Counts::new(),
        corrs: Corrs::new(),
        notices: Vec::new(),
    };
    read_capture(
        std::fs::File::open(path).unwrap(),
        &opts,
        &plaus,
        |ev| match ev {
            Event::Notice(n) => {
                if matches!(
                    n.kind,
                    NoticeKind::Tls | NoticeKind::Resync | NoticeKind::Gap
                ) {
                    kw.notices.push(n.to_string());
                }
            }
            Event::Frame(f) => {
                assert!(f.ctx.tls.is_some(), "a frame not from TLS: {:?}", f.ctx);
                let (client, d) = match f.ctx.direction {
                    Direction::ToServer => (f.ctx.src.port(), 0),
                    Direction::ToClient => (f.ctx.dst.port(), 1),
                };
                let s = &mut kw.streams.entry(client).or_default()[d];
                assert_eq!(s.len() as u64, f.ctx.stream_offset, "frames end to end");
                s.extend_from_slice(&f.bytes);
                let arena = Buffers::new();
                let (m, _) = session.decode(&f, &arena);
                *kw.counts.entry((m.api_key, d == 1)).or_default() += 1;
                kw.corrs
                    .entry((client, d))
                    .or_default()
                    .push(m.correlation_id.unwrap_or(-1));
            }
        },
    )
    .unwrap();
    kw
}

fn tshark(path: &Path, args: &[String]) -> String {
    let mut c = Command::new("tshark");
    c.arg("-r")
        .arg(path)
        .args(Tls::of(path).tshark_args())
        .args(args);
    let out = c.output().expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// tshark's decrypted streams, by client port: node 0's bytes and node 1's (indented).
fn tshark_streams(path: &Path) -> BTreeMap<u16, [Vec<u8>; 2]> {
    // tcp.stream -> client port, from each stream's SYN
    let mut ports = BTreeMap::new();
    let syns = tshark(
        path,
        &[
            "-Y".into(),
            "tcp.flags.syn==1 && tcp.flags.ack==0".into(),
            "-T".into(),
            "fields".into(),
            "-e".into(),
            "tcp.stream".into(),
            "-e".into(),
            "tcp.srcport".into(),
        ],
    );
    for l in syns.lines() {
        let mut it = l.split('\t');
        let (Some(s), Some(p)) = (it.next(), it.next()) else {
            continue;
        };
        ports.insert(s.parse::<u32>().unwrap(), p.parse::<u16>().unwrap());
    }
    let mut args = vec!["-q".to_string()];
    for s in ports.keys() {
        args.push("-z".into());
        args.push(format!("follow,tls,raw,{s}"));
    }
    let text = tshark(path, &args);
    let mut out = BTreeMap::new();
    let mut cur: Option<(u16, [Vec<u8>; 2])> = None;
    for l in text.lines() {
        if let Some(n) = l.strip_prefix("Filter: tcp.stream eq ") {
            if let Some((p, b)) = cur.take() {
                out.insert(p, b);
            }
            cur = Some((ports[&n.trim().parse::<u32>().unwrap()], Default::default()));
        } else if l.starts_with('=') || l.starts_with("Follow:") || l.starts_with("Node ") {
            continue;
        } else if let Some((_, b)) = cur.as_mut() {
            let (side, hex) = match l.strip_prefix('\t') {
                Some(h) => (1, h),
                None => (0, l),
            };
            if !hex.is_empty() {
                b[side].extend(unhex(hex.trim()));
            }
        }
    }
    if let Some((p, b)) = cur {
        out.insert(p, b);
    }
    out
}

/// tshark's Kafka PDUs per (api_key, is_response), and the correlation_ids it read.
fn tshark_counts(path: &Path) -> (Counts, Corrs) {
    let text = tshark(
        path,
        &[
            "-Y".into(),
            "kafka".into(),
            "-T".into(),
            "fields".into(),
            "-E".into(),
            "occurrence=a".into(),
            "-e".into(),
            "tcp.srcport".into(),
            "-e".into(),
            "kafka.len".into(),
            "-e".into(),
            "kafka.api_key".into(),
            "-e".into(),
            "tcp.dstport".into(),
            "-e".into(),
            "kafka.correlation_id".into(),
        ],
    );
    let mut c = Counts::new();
    let mut corrs = Corrs::new();
    for l in text.lines() {
        let mut it = l.split('\t');
        let (Some(src), Some(lens), Some(keys), Some(dst), Some(cs)) =
            (it.next(), it.next(), it.next(), it.next(), it.next())
        else {
            continue;
        };
        let resp = src == PORT.to_string();
        let client: u16 = if resp { dst } else { src }.parse().unwrap();
        corrs
            .entry((client, usize::from(resp)))
            .or_default()
            .extend(
                cs.split(',')
                    .filter(|x| !x.is_empty())
                    .map(|x| x.parse::<i32>().unwrap()),
            );
        let pdus = lens.split(',').filter(|k| !k.is_empty()).count();
        let keys: Vec<i16> = keys
            .split(',')
            .filter(|k| !k.is_empty())
            .map(|k| k.parse().unwrap())
            .collect();
        // A response whose request tshark did not keep (it decodes no Metadata past v9)
        // carries no api_key: counted under -1.
        *c.entry((-1, resp)).or_default() += (pdus - keys.len().min(pdus)) as u64;
        for k in keys {
            *c.entry((k, resp)).or_default() += 1;
        }
    }
    c.retain(|_, n| *n > 0);
    (c, corrs)
}

/// tshark's counts must be kwire's, except that responses tshark left without api_key
/// (`-1`) are some of kwire's: per api_key tshark counts no more than kwire, and each
/// direction's total is the same.
fn counts_agree(t: &Counts, k: &Counts) -> bool {
    let total = |c: &Counts, resp: bool| -> u64 {
        c.iter()
            .filter(|((_, r), _)| *r == resp)
            .map(|(_, n)| n)
            .sum()
    };
    let per_key = t
        .iter()
        .filter(|((key, _), _)| *key >= 0)
        .all(|((key, resp), n)| {
            let kn = k.get(&(*key, *resp)).copied().unwrap_or(0);
            if *resp {
                *n <= kn
            } else {
                *n == kn
            }
        });
    let requests_same = k
        .iter()
        .filter(|((_, r), _)| !*r)
        .all(|(key, n)| t.get(key) == Some(n));
    per_key
        && requests_same
        && total(t, false) == total(k, false)
        && total(t, true) == total(k, true)
}

#[test]
fn tls_lab_decrypts_as_tshark_does() {
    if tshark_or_skip("tls_lab_decrypts_as_tshark_does").is_none() {
        return;
    }
    let files = CaptureSet::tls_lab().files;
    assert!(files.len() >= 10, "{} TLS lab captures", files.len());
    let mut problems = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let kw = read_in_process(f);
        let ts = tshark_streams(f);
        if kw.streams.is_empty() {
            problems.push(format!("{name}: kwire decrypted nothing: {:?}", kw.notices));
        }
        for n in &kw.notices {
            if n.contains("stayed encrypted")
                || n.contains("does not decrypt")
                || n.contains("skipped")
            {
                problems.push(format!("{name}: {n}"));
            }
        }
        for (port, [c2s, s2c]) in &kw.streams {
            let Some([n0, n1]) = ts.get(port) else {
                problems.push(format!(
                    "{name}: tshark has no stream for client port {port}"
                ));
                continue;
            };
            let same = (n0 == c2s && n1 == s2c) || (n0 == s2c && n1 == c2s);
            if !same {
                problems.push(format!(
                    "{name}: client port {port}: kwire c>s {} / s>c {} bytes, tshark {} / {} bytes, not the same",
                    c2s.len(),
                    s2c.len(),
                    n0.len(),
                    n1.len()
                ));
            }
        }
        for (port, [n0, n1]) in &ts {
            if !kw.streams.contains_key(port) && (n0.len() + n1.len()) > 0 {
                problems.push(format!(
                    "{name}: tshark decrypted client port {port}, kwire did not"
                ));
            }
        }
        let (tc, tcorrs) = tshark_counts(f);
        // the values tshark decodes in every PDU: each connection's correlation_ids, in
        // order, per direction
        if tcorrs != kw.corrs {
            problems.push(format!(
                "{name}: correlation_ids per connection and direction: tshark {tcorrs:?}, kwire {:?}",
                kw.corrs
            ));
        }
        if tc.is_empty() {
            problems.push(format!("{name}: tshark found no Kafka PDU"));
        }
        if !counts_agree(&tc, &kw.counts) {
            problems.push(format!(
                "{name}: Kafka PDUs per (api_key, response): tshark {tc:?}, kwire {:?}",
                kw.counts
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn tls_values_agree_with_tshark() {
    // Inside the decrypted messages: api_key, api_version, correlation_id, client_id, the
    // fields of `oracle::compare::CHECKED` at the same offset (topic names, partition ids,
    // error codes, group and member ids, producer ids, timeouts, ApiVersions entries...)
    // and each record's key and value, for every PDU tshark decodes cleanly.
    let test = "tls_values_agree_with_tshark";
    let Some((version, lim)) = tshark_or_skip(test) else {
        return;
    };
    let set = CaptureSet::tls_lab();
    assert!(
        set.files.len() >= 10,
        "{} TLS lab captures",
        set.files.len()
    );
    let results = compare::run_sets(&[set], lim);
    let s = compare::check(&results);
    s.assert_clean(test, &version);
    // Every capture has PDUs compared, and each of the values below was compared at least
    // once: a test that compared nothing could not fail.
    for f in &results {
        let n =
            f.r.outcome
                .iter()
                .filter(|o| matches!(o, Some(compare::Outcome::Compared(_))))
                .count();
        assert!(n > 0, "{}: no PDU compared", f.rel);
    }
    for what in [
        "api_key",
        "client_id",
        "kafka.topic_name",
        "kafka.partition_id",
        "kafka.error",
        "kafka.consumer_group",
        "record values",
    ] {
        assert!(
            s.tally.compared.get(what).is_some_and(|n| *n > 0),
            "{what} never compared: {:?}",
            s.tally.compared
        );
    }
}
