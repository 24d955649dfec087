//! Replays every file of each fuzz target's committed corpus (`fuzz/corpus/<target>/`)
//! through the same invariant checks the fuzz targets assert (`fuzz/src/lib.rs`, included
//! here), so CI checks them without building the fuzzers.
//!
//! `write_seeds` (ignored) writes the seed corpus from the shared captures and the seed
//! frames: `KWIRE_SEEDS=/tmp/seeds cargo test --test fuzz_corpus -- --ignored`, then
//! `cargo fuzz cmin` each target into `fuzz/corpus/<target>` (see docs/robustness.md).

mod common;
use common::unhex;

#[path = "../fuzz/src/lib.rs"]
mod fuzz;

use std::path::{Path, PathBuf};

/// A target's name and body.
type Target = (&'static str, fn(&[u8]));

const TARGETS: [Target; 6] = [
    ("frame", fuzz::frame),
    ("capture", fuzz::capture),
    ("hex", fuzz::hex),
    ("records", fuzz::records),
    ("logfile", fuzz::log_file),
    ("tls", fuzz::tls),
];

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

fn replay(target: &str, f: fn(&[u8])) {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} is empty", dir.display());
    for p in &files {
        let data = std::fs::read(p).unwrap();
        let r = std::panic::catch_unwind(|| f(&data));
        assert!(r.is_ok(), "{target}: {} fails the checks", p.display());
    }
}

#[test]
fn frame_corpus() {
    replay("frame", fuzz::frame);
}

#[test]
fn capture_corpus() {
    replay("capture", fuzz::capture);
}

#[test]
fn tls_corpus() {
    replay("tls", fuzz::tls);
}

#[test]
fn hex_corpus() {
    replay("hex", fuzz::hex);
}

#[test]
fn records_corpus() {
    replay("records", fuzz::records);
}

#[test]
fn logfile_corpus() {
    replay("logfile", fuzz::log_file);
}

/// The crashes the fuzzers found, kept as inputs (`fuzz/regressions/<target>/`); each
/// also has a hand-built test in `tests/regressions.rs`.
#[test]
fn fuzz_regressions() {
    for (t, f) in TARGETS {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/regressions")
            .join(t);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            let data = std::fs::read(&p).unwrap();
            let r = std::panic::catch_unwind(|| f(&data));
            assert!(r.is_ok(), "{t}: {} fails the checks", p.display());
        }
    }
}

/// The builders the records target uses make frames that decode without error, so the
/// fuzzer starts from valid frames.
#[test]
fn records_target_builds_valid_frames() {
    use kwire::decode::{decode, Known};
    use kwire::tree::Buffers;
    let recs = [0x0e, 0, 0, 0, 0, 0x02, b'v', 0];
    for codec in 0..=4u8 {
        for fetch in [false, true] {
            let mut input = vec![0x50 | codec | if fetch { 0x20 } else { 0 }, 1, 0];
            input.extend(recs);
            let (field, is_fetch) = fuzz::records_field(&input).unwrap();
            assert_eq!(is_fetch, fetch);
            let frame = if fetch {
                fuzz::fetch_v4_response(&field)
            } else {
                fuzz::produce_v9(&field)
            };
            let known = if fetch {
                Known::response(1, 4)
            } else {
                Known::request()
            };
            let arena = Buffers::new();
            let m = decode(fuzz::schema(), fuzz::options(), &arena, &frame, &known);
            assert!(m.errors().is_empty(), "codec {codec}: {:?}", m.errors());
            assert!(m.warnings().is_empty(), "codec {codec}: {:?}", m.warnings());
            let vals: Vec<_> = m
                .buffers
                .iter()
                .map(|b| b.len())
                .chain(std::iter::once(frame.len()))
                .collect();
            assert!(
                m.tree.find("Record[0]").is_some(),
                "codec {codec}: {vals:?}"
            );
        }
    }
    // legacy wrappers (magic 0 and 1, gzip): inner message set of one message
    for magic in [0u8, 1] {
        let inner = fuzz::legacy_message(0, magic, 0, Some(b"x"));
        let mut input = vec![0x40 | (magic << 3) | 1, 0, 0];
        input.extend(&inner);
        let (field, _) = fuzz::records_field(&input).unwrap();
        let frame = fuzz::produce_v9(&field);
        let arena = Buffers::new();
        let m = decode(
            fuzz::schema(),
            fuzz::options(),
            &arena,
            &frame,
            &Known::request(),
        );
        assert!(m.errors().is_empty(), "magic {magic}: {:?}", m.errors());
        assert!(m.tree.find("Messages (decompressed)").is_some());
    }
}

// ---------------------------------------------------------------------------------------
// Seed corpus.

const SEED_FRAMES: [&str; 2] = [
    "000000230014000600000000000000020100000000000000000000000000000000000000000000",
    "000000200000000000000000000201000000000000000000000000000000000000010000",
];

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures")
}

fn captures() -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("pcap" | "pcapng")
            ) {
                out.push(p);
            }
        }
    }
    let mut v = Vec::new();
    walk(&shared(), &mut v);
    v.sort();
    v
}

/// Writes seeds for every target under `$KWIRE_SEEDS/<target>/`.
#[test]
#[ignore]
fn write_seeds() {
    use kwire::decode::{decode, Known};
    use kwire::input::hex::parse_hex;
    use kwire::input::{read_capture, CaptureOptions, Event};
    use kwire::session::Session;
    use kwire::tree::{Buffers, Direction};
    use std::collections::BTreeSet;

    let out = PathBuf::from(std::env::var("KWIRE_SEEDS").expect("KWIRE_SEEDS"));
    let mut sets: std::collections::BTreeMap<&str, BTreeSet<Vec<u8>>> = Default::default();
    let mut add = |t: &'static str, b: Vec<u8>| {
        sets.entry(t).or_default().insert(b);
    };

    // Minimal instances: the DeleteTopics v6 seed frames.
    for (i, h) in SEED_FRAMES.iter().enumerate() {
        let f = unhex(h);
        add("frame", [vec![20, 6], f].concat());
        add("hex", h.as_bytes().to_vec());
        let dir = if i == 0 { "c>s" } else { "s>c" };
        add("hex", format!("{dir} 0 0 {h}\n").into_bytes());
    }
    // The TLS lab's captures with their key logs (fuzz::tls's input shape).
    for p in captures() {
        if p.parent().and_then(|d| d.file_name()) != Some(std::ffi::OsStr::new("tls")) {
            continue;
        }
        let keys = std::fs::read(p.with_extension("keys")).unwrap_or_default();
        let cap = std::fs::read(&p).unwrap();
        add(
            "tls",
            [&(keys.len() as u16).to_be_bytes()[..], &keys, &cap].concat(),
        );
    }
    // Frames from every capture, with their (api_key, api_version) from pairing.
    for p in captures() {
        let bytes = std::fs::read(&p).unwrap();
        if bytes.len() <= 64 << 10 {
            add("capture", bytes.clone());
        }
        let schema = fuzz::schema();
        let opts = fuzz::options();
        let mut session = Session::new(schema, opts);
        let plaus = kwire::cli::read::SchemaPlausibility(schema);
        let copts = CaptureOptions {
            detect: true,
            ..CaptureOptions::default()
        };
        let mut frames = Vec::new();
        let _ = read_capture(&bytes[..], &copts, &plaus, |ev| {
            if let Event::Frame(f) = ev {
                let arena = Buffers::new();
                let (m, _) = session.decode(&f, &arena);
                frames.push((m.api_key, m.api_version, m.direction, f.bytes.clone()));
            }
        });
        for (k, v, dir, b) in frames {
            if b.len() > 16 << 10 || !(0..=255).contains(&k) || !(-128..=127).contains(&v) {
                continue;
            }
            add("frame", [vec![k as u8, v as u8], b.clone()].concat());
            // records fields, for the records target
            let known = if dir == Direction::Request {
                Known::request()
            } else {
                Known::response(k, v)
            };
            let arena = Buffers::new();
            let m = decode(schema, opts, &arena, &b, &known);
            let fetch = dir == Direction::Response;
            let mut fields = Vec::new();
            m.tree.walk(&mut |n, _| {
                if n.region == kwire::tree::Region::RecordBatch
                    && n.ty.contains("records")
                    && n.children.len() > 1
                    && n.children[0].name == "length"
                {
                    let s = n.children[0].end();
                    fields.push(b[s..n.end()].to_vec());
                }
            });
            for f in fields {
                let codec = if f.len() > 22 && f[16] == 2 {
                    f[22] & 7
                } else if f.len() > 17 {
                    f[17] & 7
                } else {
                    0
                };
                let ctl = codec | if fetch { 0x20 } else { 0 } | 0x10;
                add("records", [vec![ctl], f].concat());
            }
            // the decompressed record data of compressed batches, for the wrap mode
            for (i, d) in m.buffers.iter().enumerate() {
                let count = m
                    .tree
                    .find("recordsCount")
                    .and_then(|n| match n.value {
                        kwire::tree::Value::Int(c) => Some(c.clamp(0, 255) as u8),
                        _ => None,
                    })
                    .unwrap_or(1);
                if d.len() <= 8 << 10 {
                    for codec in 0..=4u8 {
                        let ctl = 0x50 | codec | if fetch { 0x20 } else { 0 };
                        add("records", [vec![ctl, count, 0], d.to_vec()].concat());
                    }
                }
                let _ = i;
            }
        }
    }
    // Hex dumps: each lab PDU file, and a few lines of each in other layouts.
    let hexdir = shared().join("lab/hex");
    let mut names: Vec<_> = std::fs::read_dir(&hexdir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    for p in names {
        let text = std::fs::read_to_string(&p).unwrap();
        let first: String = text.lines().take(4).collect::<Vec<_>>().join("\n");
        add("hex", first.into_bytes());
        if let Ok(chunks) = parse_hex(&text) {
            for c in chunks.iter().take(3) {
                let req = c.direction == Some(kwire::input::hex::Direction::ClientToServer);
                if c.bytes.len() < 1024 {
                    add("hex", xxd(&c.bytes).into_bytes());
                    add("hex", hexdump_c(&c.bytes).into_bytes());
                }
                let _ = req;
            }
            for c in &chunks {
                if c.bytes.len() > 16 << 10 {
                    continue;
                }
                if c.direction == Some(kwire::input::hex::Direction::ClientToServer) {
                    let (k, v) = (c.bytes.get(5).copied(), c.bytes.get(7).copied());
                    if let (Some(k), Some(v)) = (k, v) {
                        add("frame", [vec![k, v], c.bytes.clone()].concat());
                    }
                }
            }
        }
    }
    {
        use base64::Engine as _;
        for h in SEED_FRAMES {
            let b = unhex(h);
            add(
                "hex",
                base64::engine::general_purpose::STANDARD
                    .encode(&b)
                    .into_bytes(),
            );
            add(
                "hex",
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(&b)
                    .into_bytes(),
            );
        }
    }
    for (t, set) in sets {
        let d = out.join(t);
        std::fs::create_dir_all(&d).unwrap();
        for (i, b) in set.into_iter().enumerate() {
            std::fs::write(d.join(format!("seed-{i:05}")), b).unwrap();
        }
    }
}

fn xxd(b: &[u8]) -> String {
    let mut s = String::new();
    for (i, line) in b.chunks(16).enumerate() {
        s.push_str(&format!("{:08x}:", i * 16));
        for pair in line.chunks(2) {
            s.push(' ');
            for x in pair {
                s.push_str(&format!("{x:02x}"));
            }
        }
        s.push_str("  ");
        s.extend(
            line.iter()
                .map(|&c| if c.is_ascii_graphic() { c as char } else { '.' }),
        );
        s.push('\n');
    }
    s
}

fn hexdump_c(b: &[u8]) -> String {
    let mut s = String::new();
    for (i, line) in b.chunks(16).enumerate() {
        s.push_str(&format!("{:08x} ", i * 16));
        for (j, x) in line.iter().enumerate() {
            if j == 8 {
                s.push(' ');
            }
            s.push_str(&format!(" {x:02x}"));
        }
        s.push_str("  |");
        s.extend(
            line.iter()
                .map(|&c| if c.is_ascii_graphic() { c as char } else { '.' }),
        );
        s.push_str("|\n");
    }
    s.push_str(&format!("{:08x}\n", b.len()));
    s
}
