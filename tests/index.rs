//! The message index (`kwire::index`): a capture opened through the index decodes any
//! message, alone, into the same JSON line `kwire read --format json` prints for it and
//! the same text (title, byte grid, tree) — on plain captures, TLS captures with their key
//! logs, captures that start mid-stream, lost a segment or were cut by a snap length — and
//! the index's own facts (pairs, api keys, frames, connections) agree with `read`'s.

use assert_cmd::Command;
use kwire::index::{Capture, IndexOptions};
use kwire::input::tls::KeyLog;
use kwire::input::Direction;
use kwire::render::RenderOptions;
use kwire::tree::Buffers;
use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod common;

fn repo(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// `kwire read --format json FILE EXTRA...`, one JSON value a message.
fn read_json(file: &Path, extra: &[&str]) -> Vec<J> {
    let out = Command::cargo_bin("kwire")
        .unwrap()
        .env_remove("SSLKEYLOGFILE")
        .arg("read")
        .arg(file)
        .args(["--format", "json", "--threads", "1"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `kwire read --format text -t ud --color never FILE EXTRA...`: the whole text.
fn read_text(file: &Path, extra: &[&str]) -> String {
    let out = Command::cargo_bin("kwire")
        .unwrap()
        .env_remove("SSLKEYLOGFILE")
        .arg("read")
        .arg(file)
        .args(["--format", "text", "-t", "ud", "--color", "never"])
        .args(extra)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Messages `which` of `cap` printed as text (title, byte grid, tree) through the index
/// are, each, a whole piece of `read`'s text.
fn same_text(name: &str, cap: &Capture, whole: &str, which: &[usize]) {
    let whole = format!("\n{whole}");
    for &i in which {
        let mut out = Vec::new();
        cap.with_message(i, |m, ctx| {
            kwire::render::text::render(&mut out, m, Some(ctx), &RenderOptions::default())
        })
        .unwrap()
        .unwrap();
        let one = format!("\n{}", String::from_utf8(out).unwrap());
        assert!(
            one.len() > 100 && whole.contains(&one),
            "{name}: message {i}'s text differs:{one}"
        );
    }
}

/// Message `i` decoded through the index, as the JSON line `read` prints.
fn index_json(cap: &Capture, i: usize) -> J {
    let frame = cap.frame(i).unwrap();
    let arena = Buffers::new();
    let (m, ctx) = cap.decode(i, &frame, &arena).unwrap();
    let mut out = Vec::new();
    kwire::render::json::render(&mut out, &m, Some(&ctx), false).unwrap();
    serde_json::from_slice(&out).unwrap()
}

/// Checks messages `which` (all when empty) of `cap` against `read`'s `lines`.
fn same(name: &str, cap: &Capture, lines: &[J], which: &[usize]) {
    assert_eq!(cap.len(), lines.len(), "{name}: message count");
    let all: Vec<usize> = (0..cap.len()).collect();
    let which = if which.is_empty() { &all[..] } else { which };
    for &i in which {
        let got = index_json(cap, i);
        assert!(
            got == lines[i],
            "{name}: message {i} differs\nindex: {got}\nread:  {}",
            lines[i]
        );
        let info = cap.info(i).unwrap();
        assert_eq!(
            Some(info.connection as u64),
            lines[i]["connection"].as_u64(),
            "{name}: {i}"
        );
        assert_eq!(
            Some(info.frames.0),
            lines[i]["frame"][0].as_u64(),
            "{name}: {i}"
        );
    }
}

/// Every message of the repository's demo capture, and the pairs the index keeps point
/// both ways at a request and its response with the same correlation_id.
#[test]
fn demo_every_message_and_its_pair() {
    let path = repo("captures/demo.pcap");
    let cap = Capture::open(&path).unwrap();
    let lines = read_json(&path, &[]);
    same("demo", &cap, &lines, &[]);
    let mut pairs = 0;
    for i in 0..cap.len() {
        let info = cap.info(i).unwrap();
        if let Some(j) = info.pair {
            let other = cap.info(j).unwrap();
            assert_eq!(other.pair, Some(i));
            assert_eq!(other.correlation_id, info.correlation_id);
            assert_ne!(other.direction, info.direction);
            if info.direction == Direction::ToClient {
                assert!(j < i);
                assert_eq!(
                    (info.api_key, info.api_version),
                    (other.api_key, other.api_version)
                );
                pairs += 1;
            }
        }
    }
    assert!(pairs >= cap.len() / 2 - 1, "{pairs} pairs of {}", cap.len());
}

/// `Capture::decode_at` at the lighter detail levels, as the explorer's scans use it:
/// every message of the demo and of a large lab capture gives the whole tree's summary
/// line and problem counts from its fact tree and its summary tree, and `kwire stats`'
/// counts over the capture are the same from fact trees as from whole trees.
#[test]
fn decode_at_every_detail() {
    use kwire::decode::Detail;
    use kwire::render::summary;
    use kwire::traffic::Stats;
    for f in ["captures/demo.pcap", "captures/lab/mixed_large.pcapng"] {
        let cap = Capture::open(repo(f)).unwrap();
        let mut stats: [Stats; 2] = Default::default();
        let mut facts = 0;
        for i in 0..cap.len() {
            let frame = cap.frame(i).unwrap();
            let arenas = [Buffers::new(), Buffers::new(), Buffers::new()];
            let at = |k: usize, d: Detail| cap.decode_at(i, &frame, &arenas[k], d).unwrap();
            let (full, cf) = at(0, Detail::Full);
            let (sum, cs) = at(1, Detail::Summary);
            let (fact, cx) = at(2, Detail::Facts);
            assert_eq!((&cf, &cf), (&cs, &cx), "{f}: message {i}: context");
            let o = RenderOptions::default();
            let line = summary::line(&full, Some(&cf), &o);
            assert_eq!(line, summary::line(&sum, Some(&cs), &o), "{f}: {i}");
            assert_eq!(line, summary::line(&fact, Some(&cx), &o), "{f}: {i}");
            assert_eq!(full.problem_counts(), fact.problem_counts(), "{f}: {i}");
            // A fact tree has no Frame node; a whole tree does.
            facts += usize::from(!fact.tree.children.iter().any(|c| c.name == "Frame"));
            assert!(full.tree.children.iter().any(|c| c.name == "Frame"));
            stats[0].add(&full, &cf);
            stats[1].add(&fact, &cx);
        }
        assert!(
            facts > cap.len() / 2,
            "{f}: {facts} of {} fact trees",
            cap.len()
        );
        let [a, b] = stats.map(|s| s.to_json().to_string());
        assert_eq!(a, b, "{f}: stats");
    }
}

/// The last, a middle and the first message of the largest lab capture (2.5 MB, three
/// clients), and of a pcapng file.
#[test]
fn lab_last_middle_first() {
    for f in [
        "captures/lab/mixed_large.pcapng",
        "captures/lab/ck_admin.pcapng",
    ] {
        let path = repo(f);
        let cap = Capture::open(&path).unwrap();
        let lines = read_json(&path, &[]);
        let n = cap.len();
        same(f, &cap, &lines, &[n - 1, n / 2, 0]);
        same_text(f, &cap, &read_text(&path, &[]), &[n - 1, n / 2, 0]);
    }
}

/// Every message of TLS 1.2 and 1.3 captures decrypted with their key logs: one read
/// alone inside a TLS connection equals `read`'s (the plaintext came from the spill file).
#[test]
fn tls_messages() {
    for name in ["tls13_kp_aes256gcm", "tls12_ck_aes128gcm"] {
        let path = repo(&format!("captures/lab/tls/{name}.pcapng"));
        let keys = repo(&format!("captures/lab/tls/{name}.keys"));
        let mut log = KeyLog::default();
        let problems = log.add_text(&std::fs::read(&keys).unwrap(), "test");
        assert!(problems.is_empty());
        let mut opts = IndexOptions::default();
        opts.capture.ports = vec![9093];
        opts.capture.tls_keys = Arc::new(log);
        let cap = Capture::open_with(&path, opts, &mut |_| {}).unwrap();
        let lines = read_json(
            &path,
            &["--port", "9093", "--tls-keylog", keys.to_str().unwrap()],
        );
        assert!(cap.info(cap.len() / 2).unwrap().tls);
        same(name, &cap, &lines, &[]);
        let text = read_text(
            &path,
            &["--port", "9093", "--tls-keylog", keys.to_str().unwrap()],
        );
        let n = cap.len();
        same_text(name, &cap, &text, &[n - 1, n / 2, 0]);
    }
}

/// A capture file cut into its header blocks and its packet records: a classic pcap's
/// 24-byte header and records, or a pcapng file's blocks (every block but Enhanced Packet
/// Blocks kept in front, in order, but the closing statistics; these files have one
/// section and interface).
fn split(path: &Path) -> (Vec<u8>, Vec<Vec<u8>>) {
    let b = std::fs::read(path).unwrap();
    let le32 = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let mut recs = Vec::new();
    if b[..4] == [0x4d, 0x3c, 0xb2, 0xa1] {
        let mut at = 24;
        while at + 16 <= b.len() {
            let n = 16 + le32(at + 8);
            recs.push(b[at..at + n].to_vec());
            at += n;
        }
        return (b[..24].to_vec(), recs);
    }
    assert_eq!(
        &b[..4],
        &[0x0a, 0x0d, 0x0d, 0x0a],
        "pcap (LE, ns) or pcapng"
    );
    let (mut head, mut at) = (Vec::new(), 0);
    while at + 12 <= b.len() {
        let n = le32(at + 4);
        if le32(at) == 6 {
            recs.push(b[at..at + n].to_vec());
        } else if recs.is_empty() {
            head.extend_from_slice(&b[at..at + n]);
        } else {
            // An Interface Statistics Block at the end: left out.
            assert_eq!(le32(at), 5, "header blocks come first");
        }
        at += n;
    }
    (head, recs)
}

/// The TCP source port and payload length of an Ethernet/IPv4 record (of a pcap record
/// or an EPB: `skip` bytes before the link layer).
fn tcp_of(rec: &[u8], skip: usize) -> (u16, usize) {
    let ip = &rec[skip + 14..];
    let ihl = (ip[0] & 15) as usize * 4;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    let tcp = &ip[ihl..];
    let off = (tcp[12] >> 4) as usize * 4;
    (u16::from_be_bytes([tcp[0], tcp[1]]), total - ihl - off)
}

fn write_capture(name: &str, head: &[u8], recs: &[Vec<u8>]) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let mut b = head.to_vec();
    for r in recs {
        b.extend_from_slice(r);
    }
    std::fs::write(&p, b).unwrap();
    p
}

/// Captures that start in the middle of their connections (records cut off at the front,
/// as `editcap -r` does: the first one a response, or inside a 200 kB frame) and ones that
/// lost a segment (inside a multi-segment Produce request; a whole small frame): every
/// message through the index equals `read`'s, the responses without their request
/// (decoded by a guess) and the frames cut by the gap included.
#[test]
fn mid_stream_and_gapped() {
    let mut cuts: Vec<(String, Vec<u8>, Vec<Vec<u8>>)> = Vec::new();
    let (head, recs) = split(&repo("captures/lab/ck_consumer_group.pcap"));
    // From the first response of the middle third: its request is not in the capture.
    let k = (recs.len() / 3..recs.len())
        .find(|&k| {
            tcp_of(&recs[k], 16) == (9092, tcp_of(&recs[k], 16).1) && tcp_of(&recs[k], 16).1 > 0
        })
        .unwrap();
    cuts.push(("mid-response".into(), head.clone(), recs[k..].to_vec()));
    let mut lost = recs.clone();
    let k = (recs.len() / 2..recs.len())
        .find(|&k| tcp_of(&recs[k], 16).1 > 0)
        .unwrap();
    lost.remove(k);
    cuts.push(("gap-small".into(), head, lost));
    // mixed_large: message 10 is a Produce request in records 27 to 33.
    let (head, recs) = split(&repo("captures/lab/mixed_large.pcapng"));
    cuts.push(("mid-frame".into(), head.clone(), recs[28..].to_vec()));
    let mut lost = recs.clone();
    lost.remove(30);
    cuts.push(("gap-in-frame".into(), head, lost));
    let mut seen = (0, 0);
    for (name, head, recs) in cuts {
        let p = write_capture(&format!("index-{name}.pcap"), &head, &recs);
        let cap = Capture::open(&p).unwrap();
        let lines = read_json(&p, &[]);
        same(&name, &cap, &lines, &[]);
        let n = cap.len();
        same_text(&name, &cap, &read_text(&p, &[]), &[n - 1, n / 2, 0]);
        seen.0 += lines
            .iter()
            .filter(|l| l["incomplete"] == J::Bool(true))
            .count();
        seen.1 += lines
            .iter()
            .filter(|l| l["kind"] == "response" && l["latency_ms"].is_null())
            .count();
        std::fs::remove_file(&p).unwrap();
    }
    assert!(
        seen.0 > 0 && seen.1 > 0,
        "cut frames and unpaired responses: {seen:?}"
    );
}

/// A capture cut by its snap length (200 bytes): the messages the snaplen cut are
/// incomplete, and read alone equal `read`'s.
#[test]
fn snaplen_cut() {
    let path = repo("captures/lab/var_snaplen200.pcap");
    let cap = Capture::open(&path).unwrap();
    let lines = read_json(&path, &[]);
    assert!((0..cap.len()).any(|i| cap.info(i).unwrap().incomplete));
    same("var_snaplen200", &cap, &lines, &[]);
}

/// Past its memory limit the index keeps its entries in a temporary file, and every
/// message still decodes to the same line; the progress callback reaches the end.
#[test]
fn spilled_entries_and_progress() {
    let path = repo("captures/lab/ck_admin.pcap");
    let opts = IndexOptions {
        memory_limit: 10 * kwire::index::ENTRY_BYTES,
        ..IndexOptions::default()
    };
    let mut calls = Vec::new();
    let cap = Capture::open_with(&path, opts, &mut |p| calls.push(*p)).unwrap();
    assert_eq!(cap.spilled_entries(), cap.len() as u64 - 10);
    let last = calls.last().unwrap();
    assert!(last.done && last.bytes == last.total && last.messages == cap.len() as u64);
    assert!(calls.windows(2).all(|w| w[0].bytes <= w[1].bytes));
    let lines = read_json(&path, &[]);
    same("ck_admin spilled", &cap, &lines, &[]);
}

/// Bad input: not a capture, a missing file, an index past the end.
#[test]
fn errors() {
    let not = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("index-not-a-capture");
    std::fs::write(&not, b"hello, this is no capture at all").unwrap();
    let e = Capture::open(&not).unwrap_err();
    assert!(e.to_string().contains("not a pcap or pcapng"), "{e}");
    let e = Capture::open(repo("captures/no-such.pcap")).unwrap_err();
    assert!(matches!(e, kwire::index::IndexError::Io(..)), "{e}");
    let cap = Capture::open(repo("captures/demo.pcap")).unwrap();
    let e = cap.frame(cap.len()).unwrap_err();
    assert!(
        e.to_string().contains(&format!("no message {}", cap.len())),
        "{e}"
    );
    std::fs::remove_file(&not).unwrap();
}

/// The resident size, in bytes, of the mappings of `path` in this process
/// (`/proc/self/smaps`); `None` where there is no such file (not Linux).
fn mapped_rss(path: &Path) -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let name = path.canonicalize().ok()?;
    let name = name.to_str()?;
    let mut ours = false;
    let mut kib = 0;
    for line in smaps.lines() {
        // A mapping's first line: `start-end perms offset dev inode path`.
        if line
            .split_whitespace()
            .next()
            .is_some_and(|a| a.contains('-') && !a.ends_with(':'))
        {
            ours = line.ends_with(name);
        } else if ours {
            if let Some(v) = line.strip_prefix("Rss:") {
                kib += v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
            }
        }
    }
    Some(kib * 1024)
}

/// Messages read again from all over a capture do not leave their pages (and the pages
/// the kernel maps around each fault) resident in the mapping: a report's pages and an
/// explorer's scrolling read hundreds of them (issue 26's memory bound). On 24 MB of
/// `kwire-gen` chatter, 600 messages spread over the file kept all 24 MB resident before.
#[test]
fn messages_read_again_give_their_pages_back() {
    let Some(gen) = common::kwire_gen() else {
        common::skip(
            "messages_read_again_give_their_pages_back",
            "no kwire-gen in target/ (cargo build -p kwire-gen)",
        );
        return;
    };
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("index-chatter-24M.pcap");
    let st = std::process::Command::new(gen)
        .args(["--kind", "chatter", "--size", "24M", "--seed", "3", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let cap = Capture::open(&path).unwrap();
    let Some(start) = mapped_rss(&path) else {
        common::skip(
            "messages_read_again_give_their_pages_back",
            "no /proc/self/smaps",
        );
        return;
    };
    let step = (cap.len() / 600).max(1);
    let mut peak = start;
    let mut read = 0;
    for i in (0..cap.len()).step_by(step) {
        let frame = cap.frame(i).unwrap();
        read += frame.bytes.len();
        peak = peak.max(mapped_rss(&path).unwrap());
    }
    std::fs::remove_file(&path).unwrap();
    assert!(read > 0 && cap.len() > 10_000, "{} messages", cap.len());
    // 8 MiB read again (with fault-around) before the pages go back, the 4 MiB the index
    // pass keeps behind itself, and a margin.
    assert!(
        peak < 14 << 20,
        "the capture's mapping reached {peak} bytes resident (at open: {start})"
    );
}
