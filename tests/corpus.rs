//! The repository's own capture corpus (`captures/`, recorded by `captures/lab`): every
//! capture re-decodes to exactly its expected output in `captures/expected/`, and every
//! message decodes without error except the known-bad frames the tansu broker sends,
//! which must show exactly the errors listed here.
//!
//! `KWIRE_UPDATE_EXPECTED=1 cargo test --test corpus` rewrites the expected files.
//!
//! Expected files: `NAME.ndjson` holds `kwire read --format json` of the capture, one
//! message a line (the JSON of `kwire::render::json::message_json`, embedded schema).
//! A capture whose JSON would pass [`FULL_LIMIT`] bytes gets `NAME.digest.ndjson`
//! instead: the same objects with `tree` replaced by `tree_fnv1a64`, a hash of the
//! tree's JSON. `NAME.pcap` and `NAME.pcapng` share one expected file (the pcapng is
//! `editcap` of the pcap or the other way round), so the two readers must agree. The TLS
//! lab's captures (`captures/lab/tls/`) decode with their key logs and keep digests only;
//! `NAME.dsb.pcapng` (keys inside) shares `NAME`'s expected file.

use kwire::decode::DecodeOptions;
use kwire::input::{read_capture, CaptureOptions, Event};
use kwire::render::json::message_json;
use kwire::schema::Schema;
use kwire::session::{SchemaPlausibility, Session};
use kwire::tree::Buffers;
use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Past this size the expected file is a digest.
const FULL_LIMIT: usize = 1 << 20;

/// Captures whose expected file is another's (same bytes, another name).
const ALIASES: &[(&str, &str)] = &[("demo", "ck_produce_lz4")];

/// Captures made with a small snap length: their cut frames may carry errors, as long as
/// the message is marked incomplete.
const SNAPLEN: &[&str] = &["var_snaplen200"];

/// `(capture stem, first capture frame of the message, [(offset, error)])`.
type Bad = (&'static str, u64, &'static [(usize, &'static str)]);

/// Frames the tansu 0.6.0 broker gets wrong, with the errors kwire must show.
pub const KNOWN_BAD: &[Bad] = &[
    // CreateAcls v2 (librdkafka) and v3 (kafka-python): `Results` is a null compact
    // array (0x00), which no version allows, and the closing tagged-field byte is
    // missing. librdkafka 2.16 aborts on it (an assertion in rd_kafka_admin_response_parse).
    (
        "ck_admin",
        159,
        &[
            (13, "Results is null, which version 2 does not allow"),
            (14, "tagged_fields: varint cut by the end of input"),
        ],
    ),
    (
        "kp_admin",
        134,
        &[
            (13, "Results is null, which version 3 does not allow"),
            (14, "tagged_fields: varint cut by the end of input"),
        ],
    ),
    // CreateAcls v1 (kafkajs): ThrottleTimeMs and nothing more; the Results array is
    // missing altogether.
    ("kjs_admin", 47, &[(12, "needs 4 bytes, 0 left")]),
    // ListOffsets v0 (kafka-python, api_version (0,9)/(0,10)): each partition holds
    // PartitionIndex and ErrorCode only; the OldStyleOffsets array is missing.
    (
        "kp_old_formats",
        35,
        &[(33, "Partitions: 1 element cannot fit in the 6 bytes left")],
    ),
    (
        "kp_old_formats",
        72,
        &[(33, "Partitions: 1 element cannot fit in the 6 bytes left")],
    ),
    (
        "kp_old_formats",
        140,
        &[(33, "Partitions: 1 element cannot fit in the 6 bytes left")],
    ),
    (
        "kp_old_formats",
        192,
        &[(33, "Partitions: 1 element cannot fit in the 6 bytes left")],
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures")
}

fn find_captures(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            find_captures(&p, out);
        } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
            out.push(p);
        }
    }
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

fn expected_name(stem: &str) -> &str {
    // A TLS capture with its keys inside (`editcap --inject-secrets`) decodes as the
    // capture it was made from.
    let stem = stem.strip_suffix(".dsb").unwrap_or(stem);
    ALIASES
        .iter()
        .find(|(a, _)| *a == stem)
        .map_or(stem, |(_, b)| b)
}

/// One decoded message: its JSON and its errors.
struct Decoded {
    json: J,
    first_frame: u64,
    incomplete: bool,
    errors: Vec<(usize, String)>,
}

/// A capture of the TLS lab (`captures/lab/tls/`): the broker behind TLS on port 9093,
/// its key log `NAME.keys` beside it (or inside it, for `NAME.dsb.pcapng`).
fn is_tls(path: &Path) -> bool {
    path.parent().and_then(|p| p.file_name()) == Some(std::ffi::OsStr::new("tls"))
}

/// Decodes a capture with the embedded schema, as `kwire read` does (TLS lab captures
/// with `--port 9093 --tls-keylog NAME.keys`). Their alerts and KeyUpdates are not
/// counted as notices; what stays encrypted is.
fn decode_capture(path: &Path) -> (Vec<Decoded>, Vec<String>) {
    let schema = Schema::embedded();
    let plaus = SchemaPlausibility(&schema);
    let dopts = DecodeOptions::default();
    let tls = is_tls(path);
    let mut keys = kwire::input::tls::KeyLog::new();
    let keyfile = path.with_extension("keys");
    if tls && keyfile.exists() {
        let problems = keys.add_text(&std::fs::read(&keyfile).unwrap(), "keys");
        assert!(problems.is_empty(), "{}: {problems:?}", keyfile.display());
    }
    let opts = CaptureOptions {
        ports: vec![if tls { 9093 } else { 9092 }],
        tls_keys: std::sync::Arc::new(keys),
        ..CaptureOptions::default()
    };
    let mut session = Session::new(&schema, &dopts);
    let mut out = Vec::new();
    let mut notices = Vec::new();
    let stats = read_capture(
        std::fs::File::open(path).unwrap(),
        &opts,
        &plaus,
        |ev| match ev {
            Event::Notice(n) => {
                let benign =
                    n.kind == kwire::input::NoticeKind::Info || n.message.starts_with("TLS alert");
                if !(tls && benign) {
                    notices.push(n.to_string())
                }
            }
            Event::Frame(fr) => {
                let arena = Buffers::new();
                let (m, ctx) = session.decode(&fr, &arena);
                notices.extend(session.notices.drain(..).map(|n| n.to_string()));
                out.push(Decoded {
                    json: message_json(&m, Some(&ctx)),
                    first_frame: ctx.frames.0,
                    incomplete: ctx.incomplete,
                    errors: m
                        .errors()
                        .into_iter()
                        .map(|e| (e.offset, e.message))
                        .collect(),
                });
            }
        },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        !stats.file_truncated,
        "{} did not read to the end",
        path.display()
    );
    (out, notices)
}

/// FNV-1a, 64 bits: enough to notice any change in a tree too big to keep whole.
fn fnv1a64(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn digest(j: &J) -> J {
    let mut j = j.clone();
    if let J::Object(m) = &mut j {
        if let Some(t) = m.remove("tree") {
            m.insert("tree_fnv1a64".into(), fnv1a64(&t.to_string()).into());
        }
    }
    j
}

/// Lines of the expected file for `msgs`: full when small enough (and not `digest_only`),
/// else digests.
fn render(msgs: &[Decoded], digest_only: bool) -> (bool, String) {
    let full: String = msgs.iter().map(|d| format!("{}\n", d.json)).collect();
    if full.len() <= FULL_LIMIT && !digest_only {
        return (true, full);
    }
    (
        false,
        msgs.iter()
            .map(|d| format!("{}\n", digest(&d.json)))
            .collect(),
    )
}

/// A readable diff of two JSON objects: pretty-printed, the lines between the common
/// beginning and the common end (at most a dozen of each), with three lines of context.
fn json_diff(want: &str, got: &str) -> String {
    let pretty = |s: &str| {
        serde_json::from_str::<J>(s)
            .map(|j| serde_json::to_string_pretty(&j).unwrap())
            .unwrap_or_else(|_| s.to_string())
    };
    let (w, g) = (pretty(want), pretty(got));
    let (wl, gl): (Vec<&str>, Vec<&str>) = (w.lines().collect(), g.lines().collect());
    let head = wl.iter().zip(&gl).take_while(|(a, b)| a == b).count();
    let tail = wl[head..]
        .iter()
        .rev()
        .zip(gl[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = String::new();
    for (i, l) in wl
        .iter()
        .enumerate()
        .take(head)
        .skip(head.saturating_sub(3))
    {
        out += &format!("  {:5} {l}\n", i + 1);
    }
    let side = |out: &mut String, lines: &[&str], mark: char| {
        let end = lines.len() - tail;
        for (i, l) in lines.iter().enumerate().take(end.min(head + 12)).skip(head) {
            *out += &format!("{mark} {:5} {l}\n", i + 1);
        }
        if end > head + 12 {
            *out += &format!("{mark}       ... {} more lines\n", end - head - 12);
        }
    };
    side(&mut out, &wl, '-');
    side(&mut out, &gl, '+');
    for (i, l) in wl.iter().enumerate().skip(wl.len() - tail).take(3) {
        out += &format!("  {:5} {l}\n", i + 1);
    }
    out
}

/// The first difference between expected and actual files, readably.
fn first_difference(name: &str, want: &str, got: &str) -> Option<String> {
    let (wl, gl): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    for (i, (w, g)) in wl.iter().zip(&gl).enumerate() {
        if w != g {
            let label = serde_json::from_str::<J>(g)
                .map(|j| {
                    format!(
                        "frame {} {} v{} {} corr={}",
                        j["frame"], j["api_name"], j["api_version"], j["kind"], j["correlation_id"]
                    )
                })
                .unwrap_or_default();
            return Some(format!(
                "{name}: message {} ({label}) differs from the expected file:\n{}",
                i + 1,
                json_diff(w, g)
            ));
        }
    }
    (wl.len() != gl.len()).then(|| {
        format!(
            "{name}: {} messages expected, {} decoded",
            wl.len(),
            gl.len()
        )
    })
}

/// A capture file, its messages and the input layer's notices.
type Capture = (PathBuf, Vec<Decoded>, Vec<String>);

/// Every capture under `captures/`, decoded once for all the tests here.
fn corpus() -> &'static [Capture] {
    static DECODED: OnceLock<Vec<Capture>> = OnceLock::new();
    DECODED.get_or_init(|| {
        let mut files = Vec::new();
        find_captures(&root(), &mut files);
        files.sort();
        files
            .into_iter()
            .map(|f| {
                let (m, n) = decode_capture(&f);
                (f, m, n)
            })
            .collect()
    })
}

#[test]
fn every_corpus_capture_matches_its_expected_output() {
    let update = std::env::var_os("KWIRE_UPDATE_EXPECTED").is_some_and(|v| v == "1");
    let exp_dir = root().join("expected");
    let files = corpus();
    assert!(
        files.len() >= 40,
        "{} captures under captures/",
        files.len()
    );
    let mut problems = Vec::new();
    let mut written = std::collections::BTreeSet::new();
    for (f, msgs, _) in files {
        let st = stem(f);
        let name = expected_name(&st).to_string();
        assert!(!msgs.is_empty(), "{}: no Kafka messages", f.display());
        // TLS lab captures keep digests only: the trees are the plaintext lab's kind.
        let (full, text) = render(msgs, is_tls(f));
        let file = exp_dir.join(if full {
            format!("{name}.ndjson")
        } else {
            format!("{name}.digest.ndjson")
        });
        if update && written.insert(file.clone()) {
            std::fs::create_dir_all(&exp_dir).unwrap();
            std::fs::write(&file, &text).unwrap();
            continue;
        }
        let Ok(want) = std::fs::read_to_string(&file) else {
            problems.push(format!(
                "{}: no expected file {} (KWIRE_UPDATE_EXPECTED=1 writes it)",
                f.display(),
                file.display()
            ));
            continue;
        };
        let label = f.strip_prefix(root()).unwrap().display().to_string();
        if let Some(d) = first_difference(&label, &want, &text) {
            problems.push(d);
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n(after a deliberate change: KWIRE_UPDATE_EXPECTED=1 cargo test --test corpus)",
        problems.join("\n\n")
    );
}

#[test]
fn corpus_decodes_without_error_except_known_bad_frames() {
    let mut problems = Vec::new();
    let mut seen: Vec<(String, u64)> = Vec::new();
    for (f, msgs, notices) in corpus() {
        let st = stem(f);
        let name = expected_name(&st).to_string();
        let snaplen = SNAPLEN.contains(&name.as_str());
        if !snaplen && !notices.is_empty() {
            problems.push(format!("{}: notices {notices:?}", f.display()));
        }
        for d in msgs {
            let known = KNOWN_BAD
                .iter()
                .find(|(n, fr, _)| *n == name && *fr == d.first_frame);
            match known {
                Some((_, _, want)) => {
                    let want: Vec<(usize, String)> =
                        want.iter().map(|(o, s)| (*o, (*s).to_string())).collect();
                    if d.errors != want {
                        problems.push(format!(
                            "{} frame {}: want {want:?}, got {:?}",
                            f.display(),
                            d.first_frame,
                            d.errors
                        ));
                    }
                    seen.push((name.clone(), d.first_frame));
                }
                None if d.errors.is_empty() => {}
                None if snaplen && d.incomplete => {}
                None => problems.push(format!(
                    "{} frame {}: {} v{}: {:?}",
                    f.display(),
                    d.first_frame,
                    d.json["api_name"],
                    d.json["api_version"],
                    d.errors
                )),
            }
        }
    }
    for (n, fr, _) in KNOWN_BAD {
        let times = seen.iter().filter(|(a, b)| a == n && b == fr).count();
        // Each is in the pcap and the pcapng.
        if times != 2 {
            problems.push(format!("known-bad {n} frame {fr} met {times} times, not 2"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn snaplen_capture_marks_its_cut_messages_incomplete() {
    let (_, msgs, notices) = corpus()
        .iter()
        .find(|(f, _, _)| f.ends_with("lab/var_snaplen200.pcap"))
        .expect("captures/lab/var_snaplen200.pcap");
    let cut: Vec<&Decoded> = msgs.iter().filter(|d| d.incomplete).collect();
    assert!(
        !cut.is_empty(),
        "no message was cut by the 200-byte snap length"
    );
    assert!(
        notices.iter().any(|n| n.contains("(snaplen)")),
        "no snaplen notice: {notices:?}"
    );
    for d in cut {
        assert!(
            !d.errors.is_empty(),
            "frame {}: incomplete but no error",
            d.first_frame
        );
    }
}

#[test]
fn demo_capture_is_the_lz4_producer() {
    let a = std::fs::read(root().join("demo.pcap")).unwrap();
    let b = std::fs::read(root().join("lab/ck_produce_lz4.pcap")).unwrap();
    assert!(
        a == b,
        "captures/demo.pcap is a copy of captures/lab/ck_produce_lz4.pcap"
    );
}
