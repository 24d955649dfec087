//! `kwire read` and `kwire stats` print the same bytes, in the same order, at any
//! `--threads`: every capture of the repository (`captures/`, `captures/lab/`) and of
//! `$KWIRE_SHARED/captures`, in every output format, stdout and stderr compared with the
//! `--threads 1` run (which decodes on the reading thread, without the pipeline).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn captures_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            captures_under(&p, out);
        } else {
            match p.extension().and_then(|e| e.to_str()) {
                Some("pcap") => out.push(p),
                // The lab writes each session as .pcap and .pcapng: one of them is enough
                // here (tests/captures.rs reads both).
                Some("pcapng") if !p.with_extension("pcap").exists() => out.push(p),
                _ => {}
            }
        }
    }
}

/// stdout and stderr of `kwire ARGS... --threads N`.
fn run(args: &[&str], file: &Path, threads: usize) -> (Vec<u8>, Vec<u8>) {
    let o = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(args)
        .arg(file)
        .args(["--threads", &threads.to_string()])
        .env_remove("NO_COLOR")
        .output()
        .expect("kwire runs");
    (o.stdout, o.stderr)
}

const MODES: &[&[&str]] = &[
    &["read", "--color", "always"],
    &["read", "--format", "json"],
    &["read", "--format", "values"],
    &["read", "--format", "summary", "--topic", "orders"],
    &["read", "--format", "summary"],
    &["read", "--format", "hexdump", "--color", "never"],
    &["stats", "--format", "json"],
];

/// Every mode on every file with `all`; otherwise the text tree, JSON and one more mode
/// in turn (so each mode still meets a share of the files, in less time).
fn check(files: &[PathBuf], all: bool) {
    assert!(!files.is_empty());
    for (i, f) in files.iter().enumerate() {
        let rest = &MODES[2..];
        let modes: Vec<&[&str]> = if all {
            MODES.to_vec()
        } else {
            vec![MODES[0], MODES[1], rest[i % rest.len()]]
        };
        for mode in modes {
            let one = run(mode, f, 1);
            {
                let threads = 3;
                let many = run(mode, f, threads);
                assert!(
                    one.0 == many.0,
                    "{}: `kwire {} --threads {threads}` prints other stdout than --threads 1",
                    f.display(),
                    mode.join(" ")
                );
                assert!(
                    one.1 == many.1,
                    "{}: `kwire {} --threads {threads}` prints other stderr than --threads 1:\n{}\n---\n{}",
                    f.display(),
                    mode.join(" "),
                    String::from_utf8_lossy(&one.1),
                    String::from_utf8_lossy(&many.1)
                );
            }
        }
    }
}

#[test]
fn repository_captures_print_the_same_at_any_thread_count() {
    let mut files = Vec::new();
    captures_under(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures"),
        &mut files,
    );
    assert!(files.len() > 20, "the repository's captures are there");
    check(&files, true);
}

#[test]
fn shared_captures_print_the_same_at_any_thread_count() {
    let Some(shared) = common::shared("shared_captures_print_the_same_at_any_thread_count") else {
        return;
    };
    let mut files = Vec::new();
    captures_under(&shared.join("captures"), &mut files);
    check(&files, false);
}

/// The server's packets of `pcap` (legacy pcap, Ethernet): every response's request is
/// missing, so each is decoded by a ranked guess.
fn server_side(pcap: &[u8]) -> Vec<u8> {
    let mut out = pcap[..24].to_vec();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let rec = &pcap[at..at + 16 + incl];
        at += 16 + incl;
        let from_server = etherparse::SlicedPacket::from_ethernet(&rec[16..])
            .ok()
            .and_then(|p| match p.transport {
                Some(etherparse::TransportSlice::Tcp(t)) => Some(t.source_port() == 9092),
                _ => None,
            })
            .unwrap_or(false);
        if from_server {
            out.extend_from_slice(rec);
        }
    }
    out
}

#[test]
fn guessed_responses_print_the_same_at_any_thread_count() {
    // With workers, the reading thread's guess (made to learn topic names) goes to the
    // worker with the frame (Session::hand_over_guesses): the worker's message must be
    // the one its own guess gives.
    let test = "guessed_responses_print_the_same_at_any_thread_count";
    let Some(gen) = common::kwire_gen() else {
        common::skip(test, "kwire-gen is not built (cargo build --bin kwire-gen)");
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("threads_guessed");
    std::fs::create_dir_all(&dir).unwrap();
    let full = dir.join("chatter.pcap");
    let st = Command::new(gen)
        .args(["--size", "1M", "--seed", "3", "-o"])
        .arg(&full)
        .output()
        .unwrap();
    assert!(st.status.success());
    let orphans = dir.join("server-side.pcap");
    std::fs::write(&orphans, server_side(&std::fs::read(&full).unwrap())).unwrap();
    let (summary, _) = run(&["read"], &orphans, 1);
    let summary = String::from_utf8(summary).unwrap();
    let guessed = summary.lines().filter(|l| l.contains(" guessed")).count();
    assert!(guessed > 500, "{guessed} guessed responses");
    for mode in [
        &["read", "-V", "--color", "never"][..],
        &["read", "--format", "json"],
        &["read"],
    ] {
        let one = run(mode, &orphans, 1);
        let many = run(mode, &orphans, 3);
        assert!(
            one.0 == many.0,
            "`kwire {}`: stdout differs",
            mode.join(" ")
        );
    }
}
