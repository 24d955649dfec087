//! The fact walk (`decode::facts`, `kwire read`'s one-line summary) against the summary
//! tree: for every message of the committed captures and of `kwire-gen` captures, the
//! summary line from the fact walk's facts equals the line from the summary tree (topics
//! and partitions, group, transactional id, records, errors, topic names learned from
//! earlier messages), and so do the facts the session reads (`ProtocolType`, `Acks`);
//! the fact walk is taken only for messages whose summary tree is clean, and it gives up
//! on the malformed frames of the fuzz corpus and the regressions.

use kwire::decode::facts::decode_facts;
use kwire::decode::{self, DecodeOptions, Detail, Known};
use kwire::input::{self, CaptureOptions, Event, Frame};
use kwire::render::{summary, RenderOptions};
use kwire::schema::Schema;
use kwire::session::{SchemaPlausibility, Session};
use kwire::tree::{Buffers, Message, Value};
use std::path::{Path, PathBuf};

fn opts(detail: Detail) -> DecodeOptions {
    DecodeOptions {
        detail,
        ..DecodeOptions::default()
    }
}

/// Whether `m` is a fact tree (the fact walk's): it has no `Frame` node.
fn is_facts(m: &Message<'_>) -> bool {
    !m.tree.children.iter().any(|c| c.name == "Frame")
}

fn session_facts<'a>(m: &'a Message<'_>) -> (Option<Value<'a>>, Option<Value<'a>>) {
    let v = |n: &str| m.tree.find(n).map(|x| x.value.clone());
    (v("ProtocolType"), v("Acks"))
}

fn frames(path: &Path) -> Vec<Frame> {
    let schema = Schema::embedded();
    let copts = CaptureOptions {
        ports: vec![9092],
        detect: true,
        ..CaptureOptions::default()
    };
    let mut out = Vec::new();
    let f = std::fs::File::open(path).unwrap();
    let _ = input::read_capture(f, &copts, &SchemaPlausibility(&schema), |ev| {
        if let Event::Frame(f) = ev {
            out.push(f);
        }
    });
    out
}

/// Decodes the frames of `path` with a session at the summary level and one at the fact
/// level, in capture order, and compares every message; returns (messages, fast ones).
fn compare(path: &Path) -> (usize, usize) {
    let schema = Schema::embedded();
    let (o_sum, o_fact) = (opts(Detail::Summary), opts(Detail::Facts));
    let mut s_sum = Session::new(&schema, &o_sum);
    let mut s_fact = Session::new(&schema, &o_fact);
    let narrow = RenderOptions {
        max_value_len: 6,
        ..RenderOptions::default()
    };
    let wide = RenderOptions {
        wide: true,
        ..RenderOptions::default()
    };
    let (mut n, mut fast) = (0, 0);
    let (a1, a2) = (Buffers::new(), Buffers::new());
    for f in frames(path) {
        let (m1, c1) = s_sum.decode(&f, &a1);
        let (m2, c2) = s_fact.decode(&f, &a2);
        n += 1;
        let at = format!("{} frame {:?}", path.display(), c1.frames);
        for o in [&RenderOptions::default(), &narrow, &wide] {
            assert_eq!(
                summary::line(&m1, Some(&c1), o),
                summary::line(&m2, Some(&c2), o),
                "{at}"
            );
        }
        assert_eq!(session_facts(&m1), session_facts(&m2), "{at}");
        assert_eq!(m1.error_count(), m2.error_count(), "{at}");
        if is_facts(&m2) {
            fast += 1;
            assert_eq!(
                m1.problem_counts(),
                (0, 0),
                "{at}: fast path on a message with problems"
            );
        }
    }
    (n, fast)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn captures(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            captures(&p, out);
        } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
            out.push(p);
        }
    }
}

/// Every message of the committed captures: the same facts either way.
#[test]
fn committed_captures_same_facts() {
    let mut files = Vec::new();
    captures(&root().join("captures"), &mut files);
    files.sort();
    assert!(files.len() > 10, "{files:?}");
    let (mut n, mut fast) = (0, 0);
    for p in &files {
        let (a, b) = compare(p);
        n += a;
        fast += b;
    }
    eprintln!("captures/: {fast} of {n} messages by the fact walk");
    assert!(n > 1000, "{n} messages");
    assert!(fast > n / 2, "{fast} of {n} messages by the fact walk");
}

/// The `kwire-gen` binary of this workspace (built by `cargo build -p kwire-gen`).
fn kwire_gen() -> Option<PathBuf> {
    ["release", "debug"]
        .iter()
        .map(|p| root().join("target").join(p).join("kwire-gen"))
        .find(|p| p.exists())
}

/// Every message of `kwire-gen` captures (chatter, bulk, the lossy kinds): the same facts.
#[test]
fn kwire_gen_captures_same_facts() {
    let Some(gen) = kwire_gen() else {
        assert!(
            std::env::var_os("KWIRE_NO_SKIP").is_none(),
            "no kwire-gen: cargo build -p kwire-gen"
        );
        eprintln!("skipped: no kwire-gen (cargo build -p kwire-gen)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("kwire-fact-walk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (kind, size, extra) in [
        ("chatter", "3M", &[][..]),
        ("bulk", "6M", &[][..]),
        ("lossy-produce", "2M", &["--connections", "20"][..]),
        ("half-frames", "2M", &["--connections", "50"][..]),
    ] {
        let out = dir.join(format!("{kind}.pcap"));
        let st = std::process::Command::new(&gen)
            .args(["--kind", kind, "--size", size, "--seed", "3", "-o"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(st.status.success(), "{kind}: {st:?}");
        let (n, fast) = compare(&out);
        eprintln!("{kind}: {fast} of {n} messages by the fact walk");
        assert!(n > 20, "{kind}: {n} messages");
        if kind == "chatter" || kind == "bulk" {
            assert!(fast * 10 > n * 9, "{kind}: {fast} of {n} by the fact walk");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The malformed frames of the fuzz corpus and the regressions: where the fact walk
/// gives facts, the summary tree is clean and says the same; it gives up on the others.
#[test]
fn malformed_frames_give_up() {
    let schema = Schema::embedded();
    let o_sum = opts(Detail::Summary);
    let o_fact = opts(Detail::Facts);
    let mut files = Vec::new();
    for d in ["fuzz/corpus/frame", "fuzz/regressions/frame"] {
        for e in std::fs::read_dir(root().join(d)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    let (mut gave_up, mut fast) = (0, 0);
    let ropts = RenderOptions::default();
    for p in &files {
        let b = std::fs::read(p).unwrap();
        let mut knowns = vec![Known::request()];
        if b.len() >= 8 {
            let k = i16::from_be_bytes([b[4], b[5]]);
            let v = i16::from_be_bytes([b[6], b[7]]);
            knowns.push(Known::response(k, v));
        }
        for known in knowns {
            let (a1, a2) = (Buffers::new(), Buffers::new());
            let tree = decode::decode(&schema, &o_sum, &a1, &b, &known);
            match decode_facts(&schema, &o_fact, &a2, &b, &known) {
                Some(m) => {
                    fast += 1;
                    let at = p.display();
                    assert_eq!(tree.problem_counts(), (0, 0), "{at}");
                    assert_eq!(
                        summary::line(&tree, None, &ropts),
                        summary::line(&m, None, &ropts),
                        "{at}"
                    );
                    assert_eq!(session_facts(&tree), session_facts(&m), "{at}");
                }
                None => gave_up += usize::from(tree.problem_counts() != (0, 0)),
            }
        }
    }
    assert!(
        gave_up > 100,
        "gave up on {gave_up} malformed frames ({fast} clean)"
    );
}

/// Clean requests of the demo capture, spoilt: one byte more (trailing bytes, a
/// warning) or one less (cut short), the size prefix fixed to match. The fact walk
/// reads the clean ones and gives up on every spoilt one.
#[test]
fn spoilt_requests_give_up() {
    let schema = Schema::embedded();
    let o_sum = opts(Detail::Summary);
    let o_fact = opts(Detail::Facts);
    let (mut clean, mut spoilt) = (0, 0);
    for f in frames(&root().join("captures/demo.pcap")) {
        if f.ctx.direction != input::Direction::ToServer {
            continue;
        }
        let known = Known::request();
        let a = Buffers::new();
        if decode_facts(&schema, &o_fact, &a, &f.bytes, &known).is_none() {
            continue;
        }
        clean += 1;
        let mut longer = f.bytes.to_vec();
        longer.push(0);
        let mut shorter = f.bytes.to_vec();
        shorter.pop();
        for mut b in [longer, shorter] {
            let size = (b.len() - 4) as i32;
            b[..4].copy_from_slice(&size.to_be_bytes());
            let (a1, a2) = (Buffers::new(), Buffers::new());
            let tree = decode::decode(&schema, &o_sum, &a1, &b, &known);
            if tree.problem_counts() == (0, 0) {
                continue; // a body that ends in a field that may be cut (none here)
            }
            spoilt += 1;
            assert!(
                decode_facts(&schema, &o_fact, &a2, &b, &known).is_none(),
                "frame {:?}: {} bytes",
                f.ctx.first_frame,
                b.len()
            );
        }
    }
    assert!(
        clean > 5 && spoilt >= clean,
        "{clean} clean, {spoilt} spoilt"
    );
}
