//! The message index (`kwire::index`): a capture opened through the index decodes any
//! message, alone, into the same JSON line `kwire read --format json` prints for it — on
//! plain captures, a TLS capture with its key log, a capture that starts mid-stream and
//! one with a lost segment — and the index's own facts (pairs, api keys, counts) agree
//! with `read`'s.

use assert_cmd::Command;
use kwire::index::{Capture, IndexOptions};
use kwire::input::tls::KeyLog;
use kwire::input::Direction;
use kwire::tree::Buffers;
use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    }
}

/// The records of a classic pcap file: its 24-byte header, then each record's bytes.
fn pcap_records(path: &Path) -> (Vec<u8>, Vec<Vec<u8>>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(
        &b[..4],
        &[0x4d, 0x3c, 0xb2, 0xa1],
        "a little-endian nanosecond pcap"
    );
    let mut at = 24;
    let mut recs = Vec::new();
    while at + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        recs.push(b[at..at + 16 + incl].to_vec());
        at += 16 + incl;
    }
    (b[..24].to_vec(), recs)
}

fn write_pcap(name: &str, head: &[u8], recs: &[Vec<u8>]) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let mut b = head.to_vec();
    for r in recs {
        b.extend_from_slice(r);
    }
    std::fs::write(&p, b).unwrap();
    p
}

/// A capture that starts in the middle of its connections (the first 31 records cut
/// off, as `editcap -r` does), and one that lost a segment in the middle: every message
/// through the index equals `read`'s, the responses without their request (decoded by a
/// guess) and the frames cut by the gap included.
#[test]
fn mid_stream_and_gapped() {
    for src in [
        "captures/lab/ck_consumer_group.pcap",
        "captures/lab/kp_admin.pcap",
    ] {
        let (head, recs) = pcap_records(&repo(src));
        let stem = Path::new(src).file_stem().unwrap().to_str().unwrap();
        let mid = write_pcap(&format!("index-mid-{stem}.pcap"), &head, &recs[31..]);
        let mut lost = recs.clone();
        // A record with data: a data segment of the middle of the capture.
        let k = (recs.len() / 2..recs.len())
            .find(|&k| recs[k].len() > 16 + 14 + 20 + 32 + 8)
            .unwrap();
        lost.remove(k);
        let gap = write_pcap(&format!("index-gap-{stem}.pcap"), &head, &lost);
        for p in [mid, gap] {
            let cap = Capture::open(&p).unwrap();
            let lines = read_json(&p, &[]);
            same(p.to_str().unwrap(), &cap, &lines, &[]);
            std::fs::remove_file(&p).unwrap();
        }
    }
}

/// Past its memory limit the index keeps its entries in a temporary file, and every
/// message still decodes to the same line; the progress callback reaches the end.
#[test]
fn spilled_entries_and_progress() {
    let path = repo("captures/lab/ck_admin.pcap");
    let mut opts = IndexOptions::default();
    opts.memory_limit = 10 * kwire::index::ENTRY_BYTES;
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
