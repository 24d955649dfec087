//! The exit-code table, command by command (README "Exit status", `kwire --help`):
//!
//! | status | meaning |
//! |---|---|
//! | 0 | the input was read to its end (or output stopped at a closed pipe or `-c`) |
//! | 1 | bad arguments: an unknown option, name, version, field or value |
//! | 2 | an input unreadable, not what it should be, or cut short; or an output not written |
//! | 3 | `--strict`: the input was read, but something in it failed to decode |
//!
//! Every subcommand runs with a good input, a bad argument, a missing or cut input (where
//! it reads one) and `--strict` (where it decodes); and every subcommand runs with
//! stdout closed and with stdout on `/dev/full`, where none may panic (status 101) and
//! each that prints to stdout exits 2 saying so, and with stdout on `/dev/null` opened
//! read-write (Python's `subprocess.DEVNULL`), which is not closed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const K: &str = env!("CARGO_BIN_EXE_kwire");
const DEMO: &str = "captures/demo.pcap";
const SEED_REQ: &str =
    "000000230014000600000000000000020100000000000000000000000000000000000000000000";
/// The seed request with one byte changed: as a request it fails (TimeoutMs cut).
const BAD_REQ: &str =
    "000000230014000600000000000000020100000000000000000000000000000000010000000000";
const SEGMENT: &str = "captures/logdirs/rupia/__consumer_offsets-31/00000000000000000000.log";
/// An OffsetCommitKey v1: group "g", topic "t", partition 0.
const KEY: &str = "00010001670001740000000000";

fn tmp(tag: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("exit_codes")
        .join(tag);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Files the table needs: a cut capture, a capture with a frame that fails to decode,
/// a cut segment, a garbage segment, a segment with a CRC mismatch, a values file.
struct Inputs {
    cut_pcap: String,
    bad_pcap: String,
    cut_log: String,
    garbage_log: String,
    crc_log: String,
    values: String,
    out_dir: String,
    /// A copy of the demo capture that a report is asked to overwrite.
    own: String,
}

fn inputs(tag: &str) -> Inputs {
    let d = tmp(tag);
    let demo = std::fs::read(DEMO).unwrap();
    let w = |name: &str, b: &[u8]| {
        let p = d.join(name);
        std::fs::write(&p, b).unwrap();
        p.to_str().unwrap().to_string()
    };
    let cut_pcap = w("cut.pcap", &demo[..1000]);
    // The api_version of the first request (ApiVersions v3, correlation_id 1) made 0x7f.
    let mut b = demo.clone();
    let at = b
        .windows(8)
        .position(|x| x == [0x00, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01])
        .unwrap();
    b[at + 2] = 0x7f;
    let bad_pcap = w("bad.pcap", &b);
    let seg = std::fs::read(SEGMENT).unwrap();
    let cut_log = w("00000000000000000000.log", &seg[..150]);
    std::fs::create_dir_all(d.join("garbage-0")).unwrap();
    let garbage_log = {
        let p = d.join("garbage-0/00000000000000000000.log");
        std::fs::write(&p, &demo[..100]).unwrap();
        p.to_str().unwrap().to_string()
    };
    // The last byte of the first batch changed: its CRC no longer matches.
    let blen = i32::from_be_bytes([seg[8], seg[9], seg[10], seg[11]]) as usize;
    let mut c = seg.clone();
    c[12 + blen - 1] ^= 0xff;
    std::fs::create_dir_all(d.join("crc-0")).unwrap();
    let crc_log = {
        let p = d.join("crc-0/00000000000000000000.log");
        std::fs::write(&p, &c).unwrap();
        p.to_str().unwrap().to_string()
    };
    let o = Command::new(K)
        .args(["read", DEMO, "-T", "values", "-c", "2"])
        .output()
        .unwrap();
    let values = w("values.json", &o.stdout);
    Inputs {
        cut_pcap,
        bad_pcap,
        cut_log,
        garbage_log,
        crc_log,
        values,
        out_dir: d.join("out").to_str().unwrap().to_string(),
        own: w("own.pcap", &demo),
    }
}

fn code(args: &[&str]) -> (i32, String) {
    let o = Command::new(K)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// (command, what the row tries, arguments, the status it must give)
fn table(i: &Inputs) -> Vec<(&'static str, &'static str, Vec<String>, i32)> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let export_out = format!("{}/export", i.out_dir);
    let report_out = i.out_dir.clone();
    let log_out = format!("{}/export-log", i.out_dir);
    vec![
        ("read", "good", v(&["read", DEMO]), 0),
        (
            "read",
            "bad argument",
            v(&["read", DEMO, "-Y", "Topicc"]),
            1,
        ),
        ("read", "missing", v(&["read", "no/such.pcap"]), 2),
        ("read", "cut", v(&["read", &i.cut_pcap]), 2),
        ("read", "errors", v(&["read", &i.bad_pcap]), 0),
        ("read", "--strict", v(&["read", &i.bad_pcap, "--strict"]), 3),
        ("stats", "good", v(&["stats", DEMO]), 0),
        (
            "stats",
            "bad argument",
            v(&["stats", DEMO, "--api", "Fetchh"]),
            1,
        ),
        ("stats", "missing", v(&["stats", "no/such.pcap"]), 2),
        ("stats", "cut", v(&["stats", &i.cut_pcap]), 2),
        (
            "stats",
            "--strict",
            v(&["stats", &i.bad_pcap, "--strict"]),
            3,
        ),
        ("stats", "log good", v(&["stats", "captures/logdirs"]), 0),
        ("stats", "log missing", v(&["stats", "no/such.log"]), 2),
        ("stats", "log cut", v(&["stats", &i.cut_log]), 2),
        ("stats", "log errors", v(&["stats", &i.crc_log]), 0),
        (
            "stats",
            "log --strict",
            v(&["stats", &i.crc_log, "--strict"]),
            3,
        ),
        (
            "export",
            "log cut",
            v(&["export", &i.cut_log, "--force", "--out", &log_out]),
            2,
        ),
        (
            "export",
            "log --strict",
            v(&[
                "export", &i.crc_log, "--force", "--out", &log_out, "--strict",
            ]),
            3,
        ),
        (
            "export",
            "good",
            v(&["export", DEMO, "--force", "--out", &export_out]),
            0,
        ),
        (
            "export",
            "bad argument",
            v(&[
                "export",
                DEMO,
                "--force",
                "--out",
                &export_out,
                "-Y",
                "kind == requestt",
            ]),
            1,
        ),
        (
            "export",
            "missing",
            v(&["export", "no/such.pcap", "--force", "--out", &export_out]),
            2,
        ),
        (
            "export",
            "cut",
            v(&["export", &i.cut_pcap, "--force", "--out", &export_out]),
            2,
        ),
        (
            "export",
            "--strict",
            v(&[
                "export",
                &i.bad_pcap,
                "--force",
                "--out",
                &export_out,
                "--strict",
            ]),
            3,
        ),
        (
            "report",
            "good",
            v(&["report", DEMO, "-o", &format!("{report_out}/r.html")]),
            0,
        ),
        (
            "report",
            "bad argument",
            v(&[
                "report",
                DEMO,
                "-o",
                &format!("{report_out}/r.html"),
                "-Y",
                "kind == requestt",
            ]),
            1,
        ),
        (
            "report",
            "missing",
            v(&[
                "report",
                "no/such.pcap",
                "-o",
                &format!("{report_out}/r.html"),
            ]),
            2,
        ),
        // The output is the capture: refused before reading (it would be overwritten).
        (
            "report",
            "bad argument",
            v(&["report", &i.own, "-o", &i.own]),
            1,
        ),
        // The output's folder does not exist: said before reading.
        (
            "report",
            "output failed",
            v(&["report", DEMO, "-o", "no/such/folder/r.html"]),
            2,
        ),
        ("read", "bad argument", v(&["read", DEMO, "-c", "0"]), 1),
        (
            "report",
            "cut",
            v(&["report", &i.cut_pcap, "-o", &format!("{report_out}/r.html")]),
            2,
        ),
        (
            "report",
            "--strict",
            v(&[
                "report",
                &i.bad_pcap,
                "-o",
                &format!("{report_out}/r.html"),
                "--strict",
            ]),
            3,
        ),
        (
            "report",
            "output not written",
            v(&["report", DEMO, "-o", "/dev/full"]),
            2,
        ),
        // explore is a terminal program: with stdout not a terminal it says so (1); a bad
        // filter is refused before that (1).
        (
            "explore",
            "not a terminal",
            v(&["explore", "captures/demo.pcap"]),
            1,
        ),
        (
            "explore",
            "bad argument",
            v(&["explore", "captures/demo.pcap", "-Y", "Topicc == \"x\""]),
            1,
        ),
        // explore draws its tree in no format: --format is refused when the arguments
        // are parsed, before the file or the terminal (explore_has_no_format).
        (
            "explore",
            "--format",
            v(&["explore", "no/such.pcap", "--format", "json"]),
            1,
        ),
        ("log", "good", v(&["log", "captures/logdirs"]), 0),
        (
            "log",
            "bad argument",
            v(&["log", "captures/logdirs", "-Y", "baseOffsett == 0"]),
            1,
        ),
        // md and html are documents of API messages: refused when the arguments are
        // parsed, before any file is opened (so a missing file does not matter).
        (
            "log",
            "--format md",
            v(&["log", "no/such.log", "--format", "md"]),
            1,
        ),
        (
            "log",
            "--format html",
            v(&["log", "captures/logdirs", "--format", "html"]),
            1,
        ),
        ("log", "missing", v(&["log", "no/such.log"]), 2),
        ("log", "cut", v(&["log", &i.cut_log]), 2),
        ("log", "garbage", v(&["log", &i.garbage_log]), 2),
        ("log", "errors", v(&["log", &i.crc_log]), 0),
        ("log", "--strict", v(&["log", &i.crc_log, "--strict"]), 3),
        (
            "record",
            "good",
            v(&["record", "--topic", "__consumer_offsets", "--key", KEY]),
            0,
        ),
        (
            "record",
            "--format html",
            v(&[
                "record",
                "--topic",
                "__consumer_offsets",
                "--key",
                KEY,
                "--format",
                "html",
            ]),
            1,
        ),
        (
            "record",
            "bad argument",
            v(&["record", "--topic", "orders", "--key", KEY]),
            1,
        ),
        (
            "record",
            "not hex",
            v(&["record", "--topic", "__consumer_offsets", "--key", "zz"]),
            1,
        ),
        (
            "record",
            "cut",
            v(&[
                "record",
                "--topic",
                "__consumer_offsets",
                "--key",
                &KEY[..12],
            ]),
            0,
        ),
        (
            "record",
            "--strict",
            v(&[
                "record",
                "--topic",
                "__consumer_offsets",
                "--key",
                &KEY[..12],
                "--strict",
            ]),
            3,
        ),
        ("decode", "good", v(&["decode", "--hex", SEED_REQ]), 0),
        (
            "decode",
            "bad argument",
            v(&[
                "decode",
                "--hex",
                SEED_REQ,
                "--api-key",
                "999",
                "--api-version",
                "0",
            ]),
            1,
        ),
        (
            "decode",
            "bad version",
            v(&[
                "decode",
                "--hex",
                SEED_REQ,
                "--api-key",
                "20",
                "--api-version",
                "99",
            ]),
            1,
        ),
        (
            "decode",
            "missing",
            v(&["decode", "--raw", "no/such.bin"]),
            2,
        ),
        ("decode", "cut", v(&["decode", "--hex", &SEED_REQ[..30]]), 2),
        (
            "decode",
            "errors",
            v(&["decode", "--hex", BAD_REQ, "--kind", "request"]),
            0,
        ),
        (
            "decode",
            "--strict",
            v(&["decode", "--hex", BAD_REQ, "--kind", "request", "--strict"]),
            3,
        ),
        (
            "decode",
            "--strict clean",
            v(&["decode", "--hex", SEED_REQ, "--strict"]),
            0,
        ),
        ("apis", "good", v(&["apis"]), 0),
        ("apis", "bad argument", v(&["apis", "--format", "nope"]), 1),
        ("schema", "good", v(&["schema", "Fetch"]), 0),
        ("schema", "bad name", v(&["schema", "Fetchh"]), 1),
        (
            "schema",
            "bad version",
            v(&["schema", "Fetch", "--version", "99"]),
            1,
        ),
        ("page", "good", v(&["page", "DeleteTopics"]), 0),
        ("page", "bad name", v(&["page", "Fetchh"]), 1),
        (
            "page",
            "bad version",
            v(&["page", "Fetch", "--version", "99"]),
            1,
        ),
        (
            "pages",
            "good",
            v(&[
                "pages",
                "--out",
                &format!("{}/pages", i.out_dir),
                "--format",
                "md",
            ]),
            0,
        ),
        ("pages", "bad argument", v(&["pages"]), 1),
        (
            "pages",
            "output failed",
            v(&["pages", "--out", "/dev/full/x"]),
            2,
        ),
        ("diff", "good", v(&["diff", "Fetch", "v12", "v13"]), 0),
        ("diff", "bad name", v(&["diff", "Fetchh"]), 1),
        (
            "diff",
            "bad version",
            v(&["diff", "Fetch", "v99", "v100"]),
            1,
        ),
        ("wireshark", "good", v(&["wireshark"]), 0),
        ("wireshark", "bad argument", v(&["wireshark", "--nope"]), 1),
        (
            "wireshark",
            "output failed",
            v(&["wireshark", "--out", "/dev/full/x.lua"]),
            2,
        ),
        ("man", "good", v(&["man"]), 0),
        ("man", "bad argument", v(&["man", "extra"]), 1),
        ("completions", "good", v(&["completions", "bash"]), 0),
        (
            "completions",
            "bad argument",
            v(&["completions", "nosh"]),
            1,
        ),
        ("encode", "good", v(&["encode", &i.values]), 0),
        (
            "encode",
            "bad argument",
            v(&["encode", &i.values, "--format", "nope"]),
            1,
        ),
        ("encode", "missing", v(&["encode", "no/such.json"]), 2),
    ]
}

#[test]
fn exit_code_table_command_by_command() {
    let i = inputs("table");
    let rows = table(&i);
    let mut bad = Vec::new();
    for (cmd, what, args, want) in &rows {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (got, err) = code(&a);
        if got != *want {
            bad.push(format!(
                "{cmd} ({what}): {got}, not {want}: kwire {}\n{err}",
                a.join(" ")
            ));
        }
        assert!(!err.contains("panicked"), "{cmd} ({what}): {err}");
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // Every subcommand has its rows.
    let help = Command::new(K).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A description's continuation lines are indented deeper.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(listed.len() >= 15, "{listed:?}");
    for c in &listed {
        assert!(
            rows.iter().any(|r| r.0 == *c),
            "no exit-code rows for `kwire {c}`"
        );
    }
}

/// `kwire explore --format X` is refused when the arguments are parsed, with a message
/// that says explore has no --format (it was accepted and ignored); explore's help does
/// not offer it.
#[test]
fn explore_has_no_format() {
    for f in ["json", "text", "md"] {
        let (got, err) = code(&["explore", "captures/demo.pcap", "--format", f]);
        assert_eq!(got, 1, "--format {f}: {err}");
        assert!(
            err.contains("kwire explore has no --format"),
            "--format {f}: {err}"
        );
        assert!(!err.contains("not a terminal"), "refused first: {err}");
    }
    let help = Command::new(K)
        .args(["explore", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    assert!(!help.contains("--format"), "{help}");
}

#[test]
fn the_table_is_in_help_and_readme() {
    let help = Command::new(K).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let readme = std::fs::read_to_string("README.md").unwrap();
    for row in [
        "0  the input was read to its end",
        "1  bad arguments",
        "2  an input unreadable",
        "3  --strict",
    ] {
        assert!(help.contains(row), "--help lacks {row:?}:\n{help}");
        assert!(readme.contains(row), "README lacks {row:?}");
    }
}

#[test]
fn closed_and_full_stdout_never_panic() {
    let i = inputs("closed");
    let rows = table(&i);
    for (cmd, what, args, want) in &rows {
        if *what != "good" {
            continue;
        }
        let a = args.join("' '");
        for (how, redirect) in [
            // A real closed descriptor 1 in the child (bash closes it before the exec).
            ("closed", ">&-"),
            // Open for reading only: every write fails with EBADF, as on a closed one.
            ("read-only", "1</dev/null"),
            ("full", ">/dev/full"),
            ("devnull read-write", "1<>/dev/null"),
            ("stderr closed", "2>&-"),
            ("stderr full", "2>/dev/full"),
        ] {
            let o = Command::new("bash")
                .arg("-c")
                .arg(format!("'{K}' '{a}' {redirect}"))
                .output()
                .unwrap();
            let got = o.status.code().unwrap_or(-1);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_ne!(got, 101, "{cmd} with stdout {how}: {err}");
            assert!(!err.contains("panicked"), "{cmd} with stdout {how}: {err}");
            match how {
                // /dev/null takes every write, however opened; stderr lost is no failure.
                "devnull read-write" | "stderr closed" | "stderr full" => {
                    assert_eq!(got, *want, "{cmd} {how}: {err}");
                    assert!(!err.contains("stdout is closed"), "{cmd} {how}: {err}");
                }
                // Nothing could be written: 2, said, for commands that print to stdout.
                _ if !matches!(*cmd, "export" | "pages" | "report") => {
                    assert_eq!(got, 2, "{cmd} {how}: {err}");
                    assert!(err.contains("cannot write the output"), "{cmd}: {err}");
                    if how == "closed" || how == "read-only" {
                        assert!(err.contains("stdout is closed"), "{cmd}: {err}");
                        assert_eq!(err.lines().count(), 1, "one line: {cmd}: {err}");
                    }
                }
                // The commands that write files, not stdout, are not concerned.
                _ => assert_eq!(got, *want, "{cmd} {how}: {err}"),
            }
        }
    }
}
