//! The command line of issue 15: tshark's habits for `read` (-V, -x, -T, -r, -c, -q, -l,
//! -t, -T fields with -E), the display filter `-Y` compared with the same filter done on
//! the JSON output, exit codes, closed and full stdout/stderr, the wrong-tool hints, the
//! man page and completions.

mod common;
use common::kwire;

use serde_json::Value as J;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::Stdio;

const DEMO: &str = "captures/demo.pcap";

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("kwire")
}

struct Run {
    code: i32,
    out: String,
    err: String,
}

fn run(args: &[&str]) -> Run {
    let o = kwire().args(args).output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `sh -c SCRIPT` with `$K` the kwire binary; returns (status, stdout, stderr).
fn sh(script: &str) -> Run {
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("K", bin())
        .env_remove("NO_COLOR")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("kwire-i15-{}-{name}", std::process::id()))
}

#[test]
fn default_is_one_line_per_message_and_v_x_add_detail() {
    let lines = run(&["read", DEMO]);
    assert_eq!(lines.code, 0, "{}", lines.err);
    assert_eq!(lines.out.lines().count(), 46, "{}", lines.out);
    assert!(lines.out.lines().all(|l| l.starts_with('#')));
    let same = run(&["read", "-r", DEMO, "-T", "text"]);
    assert_eq!(same.out, lines.out);
    let summary = run(&["read", DEMO, "--format", "summary"]);
    assert_eq!(summary.out, lines.out);
    // -V: title and tree, no grid
    let v = run(&["read", DEMO, "-V", "--color", "never", "-c", "1"]);
    assert!(v.out.contains("+-- RequestHeader v2"), "{}", v.out);
    assert!(!v.out.contains("byte layout"), "{}", v.out);
    // -x: the line and the grid, no tree
    let x = run(&["read", DEMO, "-x", "--color", "never", "-c", "1"]);
    assert!(x.out.starts_with("#4 0.000000000 "), "{}", x.out);
    assert!(x.out.contains("byte layout (70 bytes"), "{}", x.out);
    assert!(!x.out.contains("+-- "), "{}", x.out);
    // -V -x is --format text
    let vx = run(&["read", DEMO, "-V", "-x", "--color", "never", "-c", "2"]);
    let text = run(&[
        "read", DEMO, "--format", "text", "--color", "never", "-c", "2",
    ]);
    assert_eq!(vx.out, text.out);
    assert!(vx.out.contains("byte layout") && vx.out.contains("+-- RequestHeader"));
    // the old habits still give the tree
    let nb = run(&["read", DEMO, "--no-bytes", "--color", "never", "-c", "1"]);
    assert_eq!(nb.out, v.out);
    // -T json is --format json
    let tj = run(&["read", DEMO, "-T", "json", "-c", "3"]);
    let fj = run(&["read", DEMO, "--format", "json", "-c", "3"]);
    assert_eq!(tj.out, fj.out);
    // -T and --format together is a usage error
    assert_eq!(
        run(&["read", DEMO, "-T", "json", "--format", "json"]).code,
        1
    );
}

#[test]
fn count_quiet_and_closing_lines() {
    let c = run(&["read", DEMO, "-c", "3"]);
    assert_eq!((c.code, c.out.lines().count()), (0, 3), "{}", c.err);
    assert!(c.err.contains("3 shown, stopped at -c"), "{}", c.err);
    assert!(!c.err.contains("got no response"), "{}", c.err);
    // -c counts messages printed, after the filter
    let f = run(&["read", DEMO, "-c", "2", "-Y", "kind == response"]);
    assert_eq!(f.out.lines().count(), 2);
    assert!(f.out.lines().all(|l| l.contains(" response ")), "{}", f.out);
    let q = run(&["read", DEMO, "-q"]);
    assert_eq!((q.code, q.out.as_str()), (0, ""));
    assert!(
        q.err.contains("46 messages decoded (46 shown)"),
        "{}",
        q.err
    );
}

#[test]
fn time_formats_follow_tshark() {
    let json = run(&["read", DEMO, "-T", "json", "-c", "3"]);
    let msgs: Vec<J> = json
        .out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let t0 = msgs[0]["time"].as_str().unwrap().to_string();
    let field = |t: &str| -> Vec<String> {
        let r = run(&["read", DEMO, "-c", "3", "-t", t]);
        assert_eq!(r.code, 0, "{}", r.err);
        r.out
            .lines()
            .map(|l| l.split(' ').nth(1).unwrap().to_string())
            .collect()
    };
    let ud = field("ud");
    assert_eq!(ud[0], t0);
    let r = field("r");
    assert_eq!(r[0], "0.000000000");
    let e = field("e");
    // epoch seconds and the RFC 3339 time agree
    let secs: i64 = e[0].split('.').next().unwrap().parse().unwrap();
    assert_eq!(&e[0][e[0].len() - 9..], &t0[20..29], "{e:?} {t0}");
    assert_eq!(secs % 60, t0[17..19].parse::<i64>().unwrap());
    let u = field("u");
    assert_eq!(u[0], t0[11..29]);
    let udoy = field("udoy");
    assert!(
        udoy[0].starts_with(&t0[..4]) && udoy[0].contains('/'),
        "{udoy:?}"
    );
    // deltas: d from the previous message, r from the first
    let d = field("d");
    assert_eq!(d[0], "0.000000000");
    let rel: Vec<f64> = r.iter().map(|x| x.parse().unwrap()).collect();
    let del: Vec<f64> = d.iter().map(|x| x.parse().unwrap()).collect();
    assert!((rel[2] - rel[1] - del[2]).abs() < 1e-6, "{r:?} {d:?}");
    // dd counts from the previous message shown
    let dd = run(&["read", DEMO, "-t", "dd", "-Y", "kind == request", "-c", "2"]);
    let rr = run(&["read", DEMO, "-t", "r", "-Y", "kind == request", "-c", "2"]);
    let get = |s: &str| -> Vec<f64> {
        s.lines()
            .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
            .collect()
    };
    let (ddv, rrv) = (get(&dd.out), get(&rr.out));
    assert!((ddv[1] - (rrv[1] - rrv[0])).abs() < 1e-6, "{ddv:?} {rrv:?}");
    assert_eq!(run(&["read", DEMO, "-t", "x"]).code, 1);
}

#[test]
fn fields_with_e_options() {
    let json = run(&["read", DEMO, "-T", "json"]);
    let msgs: Vec<J> = json
        .out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let r = run(&[
        "read",
        DEMO,
        "-T",
        "fields",
        "-e",
        "frame",
        "-e",
        "api_name",
        "-e",
        "corr",
        "-e",
        "client_id",
        "-E",
        "header=y",
        "-E",
        "separator=,",
        "-E",
        "occurrence=f",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    let rows: Vec<&str> = r.out.lines().collect();
    assert_eq!(rows[0], "frame,api_name,corr,client_id");
    assert_eq!(rows.len(), msgs.len() + 1);
    for (row, m) in rows[1..].iter().zip(&msgs) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells[0], m["frame"][0].to_string(), "{row}");
        assert_eq!(cells[1], m["api_name"].as_str().unwrap());
        assert_eq!(cells[2], m["correlation_id"].to_string());
        if m["kind"] == "response" {
            assert_eq!(cells[3], "", "{row}");
        }
    }
    // quote=d, the default tab separator, and every occurrence aggregated with ','
    let q = run(&[
        "read",
        DEMO,
        "-T",
        "fields",
        "-e",
        "api",
        "-e",
        "topic",
        "-E",
        "quote=d",
        "-Y",
        "api_name == Metadata && kind == response",
        "-c",
        "1",
    ]);
    assert_eq!(q.out, "\"3\"\t\"lab-lz4\"\n", "{}", q.err);
    // -e without -T fields, and an unknown -E, are usage errors
    assert_eq!(run(&["read", DEMO, "-e", "frame"]).code, 1);
    assert_eq!(run(&["read", DEMO, "-T", "fields"]).code, 1);
    assert_eq!(
        run(&["read", DEMO, "-T", "fields", "-e", "frame", "-E", "bogus=1"]).code,
        1
    );
}

#[test]
fn json_bytes_carry_the_frame() {
    let x = run(&["read", DEMO, "-T", "json", "-x", "-c", "5"]);
    let lj = run(&["read", DEMO, "--format", "json", "--json-bytes", "-c", "5"]);
    assert_eq!(x.out, lj.out);
    let v = common::message_validator();
    for l in x.out.lines() {
        let m: J = serde_json::from_str(l).unwrap();
        let b = m["bytes"].as_str().unwrap();
        assert_eq!(b.len(), 2 * m["size"].as_u64().unwrap() as usize);
        assert!(v.is_valid(&m), "{l}");
    }
    let plain = run(&["read", DEMO, "-T", "json", "-c", "1"]);
    assert!(!plain.out.contains("\"bytes\""));
}

#[test]
fn closed_and_full_outputs_never_panic() {
    // stdout and stderr into one pipe closed after one line
    let r = sh("$K read captures/demo.pcap -V 2>&1 | head -1 >/dev/null; echo ${PIPESTATUS[0]}");
    assert_eq!(r.out.trim(), "0", "{}", r.err);
    assert!(!r.err.contains("panicked"), "{}", r.err);
    let r = sh("$K read captures/demo.pcap 2>&1 | head -48 >/dev/null; echo ${PIPESTATUS[0]}");
    assert_eq!(r.out.trim(), "0", "{}", r.err);
    // stdout on a full device: said, status 2
    let r = sh("$K read captures/demo.pcap > /dev/full");
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("cannot write the output"), "{}", r.err);
    assert!(!r.err.contains("panicked"), "{}", r.err);
    // stderr on a full device: the output is whole, status 0
    let r = sh("$K read captures/demo.pcap 2>/dev/full");
    assert_eq!((r.code, r.out.lines().count()), (0, 46));
    // stdout closed: kwire saw descriptor 1 closed before Rust's runtime put /dev/null
    // there, so the output is not written: said, status 2, no panic.
    let r = sh("$K read captures/demo.pcap >&-");
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("stdout is closed"), "{}", r.err);
    assert!(!r.err.contains("panicked"), "{}", r.err);
    // /dev/null opened read-write (as Python's subprocess.DEVNULL) is not closed.
    let r = sh("$K read captures/demo.pcap --strict 1<>/dev/null");
    assert_eq!(r.code, 0, "{}", r.err);
    // stderr closed
    let r = sh("$K read captures/demo.pcap 2>&-");
    assert_eq!(r.code, 0);
    // decode too
    let r = sh("$K decode --hex 000000230014000600000000000000020100000000000000000000000000000000000000000000 >/dev/full");
    assert_eq!(r.code, 2, "{}", r.err);
}

#[test]
fn exit_codes() {
    let cut = tmp("cut.pcap");
    let demo = std::fs::read(DEMO).unwrap();
    std::fs::write(&cut, &demo[..1000]).unwrap();
    let r = run(&["read", cut.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("cut short"), "{}", r.err);
    assert!(!r.err.contains("record 8: record"), "{}", r.err);
    // a frame that fails to decode: 0, or 3 with --strict
    let bad = tmp("bad.pcap");
    let mut b = demo.clone();
    // the api_version of the first request (frame #4, after its Ethernet/IP/TCP headers)
    let at = find(&b, &[0x00, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01]).unwrap();
    b[at + 2] = 0x7f;
    std::fs::write(&bad, &b).unwrap();
    let r = run(&["read", bad.to_str().unwrap(), "-q"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(!r.err.contains(" 0 with decode errors"), "{}", r.err);
    assert_eq!(
        run(&["read", bad.to_str().unwrap(), "-q", "--strict"]).code,
        3
    );
    assert_eq!(run(&["read", DEMO, "-q", "--strict"]).code, 0);
    let m = run(&["read", bad.to_str().unwrap(), "-Y", "malformed"]);
    assert!(m.out.lines().count() >= 1, "{}", m.out);
    assert!(
        m.out.lines().all(|l| l.contains("decode error")),
        "{}",
        m.out
    );
    // bad arguments: 1
    assert_eq!(run(&["read", DEMO, "--bogus"]).code, 1);
    assert_eq!(run(&["read"]).code, 1);
    assert_eq!(run(&["read", DEMO, "--api", "Bogus"]).code, 1);
    assert_eq!(run(&["read", DEMO, "--max-frame", "0"]).code, 1);
    assert_eq!(run(&["decode", "--body-only"]).code, 1);
    // help and version: 0
    assert_eq!(run(&["--help"]).code, 0);
    assert_eq!(run(&["--version"]).code, 0);
    // input that cannot be read: 2
    assert_eq!(run(&["read", "no-such-file.pcap"]).code, 2);
    let _ = std::fs::remove_file(&cut);
    let _ = std::fs::remove_file(&bad);
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

#[test]
fn bad_filter_points_at_its_column() {
    let r = run(&["read", DEMO, "-Y", "Topic == \"orders\" &&"]);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("column 21"), "{}", r.err);
    let lines: Vec<&str> = r.err.lines().collect();
    let caret = lines.iter().find(|l| l.trim() == "^").unwrap();
    assert_eq!(caret.find('^'), Some(2 + 20), "{}", r.err);
    let r = run(&["read", DEMO, "-Y", "(api == Fetch"]);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("close the '('"), "{}", r.err);
    let r = run(&["stats", DEMO, "-Y", "malformed == 1"]);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("predicate"), "{}", r.err);
}

#[test]
fn shorthands_are_the_filter() {
    for (old, new) in [
        (vec!["--api", "Metadata"], "api in {\"Metadata\"}"),
        (vec!["--requests"], "kind == request"),
        (
            vec!["--responses", "--correlation-id", "2"],
            "kind == response && corr == 2",
        ),
        (vec!["--topic", "lab-lz4"], "topic == \"lab-lz4\""),
    ] {
        let mut a = vec!["read", DEMO];
        a.extend(old.iter());
        let o = run(&a);
        let n = run(&["read", DEMO, "-Y", new]);
        assert_eq!(o.out, n.out, "{old:?} vs {new}");
        assert!(!o.out.is_empty(), "{old:?}");
    }
    // stats counts only what the filter keeps
    let all = run(&["stats", DEMO, "--format", "json"]);
    let meta = run(&["stats", DEMO, "--format", "json", "-Y", "api == Metadata"]);
    assert_eq!(meta.code, 0, "{}", meta.err);
    assert_ne!(all.out, meta.out);
    assert!(!meta.out.contains("\"ApiVersions\""), "{}", meta.out);
}

/// Occurrences of field `name` anywhere in a JSON tree (elements `name[N]` included).
fn occ<'a>(n: &'a J, name: &str, out: &mut Vec<&'a J>) {
    let nm = n["name"].as_str().unwrap_or("");
    let elem = nm
        .strip_prefix(name)
        .is_some_and(|r| r.starts_with('[') && r.ends_with(']'));
    if nm == name || elem {
        out.push(&n["value"]);
    }
    if let Some(c) = n["children"].as_array() {
        for x in c {
            occ(x, name, out);
        }
    }
}

fn values<'a>(m: &'a J, name: &str) -> Vec<&'a J> {
    let mut v = Vec::new();
    occ(&m["tree"], name, &mut v);
    v
}

type Pred = fn(&J) -> bool;

#[test]
fn filter_agrees_with_the_same_filter_on_json() {
    let Some(sh) = common::shared("filter_agrees_with_the_same_filter_on_json") else {
        return;
    };
    let lab = sh.join("captures/lab");
    let files = [
        "ck_consumer_group.pcapng",
        "ck_admin_topics.pcapng",
        "kp_admin.pcapng",
        "kjs_admin.pcapng",
        "ck_produce_gzip.pcapng",
        "aio_transactions.pcapng",
    ];
    let cases: Vec<(&str, Pred)> = vec![
        ("ErrorCode == 0", |m| {
            values(m, "ErrorCode").iter().any(|v| *v == 0)
        }),
        ("ErrorCode != 0", |m| {
            let v = values(m, "ErrorCode");
            !v.is_empty() && v.iter().all(|v| **v != 0)
        }),
        ("ErrorCode ~= 0", |m| {
            values(m, "ErrorCode").iter().any(|v| **v != 0)
        }),
        ("!(ErrorCode == 0)", |m| {
            !values(m, "ErrorCode").iter().any(|v| *v == 0)
        }),
        ("PartitionIndex != 0", |m| {
            let v = values(m, "PartitionIndex");
            !v.is_empty() && v.iter().all(|v| **v != 0)
        }),
        ("PartitionIndex ~= 0", |m| {
            values(m, "PartitionIndex").iter().any(|v| **v != 0)
        }),
        ("PartitionIndex in {0, 2..3}", |m| {
            values(m, "PartitionIndex")
                .iter()
                .any(|v| matches!(v.as_i64(), Some(0 | 2 | 3)))
        }),
        ("api == Metadata || api_key == 19", |m| {
            m["api_name"] == "Metadata" || m["api_key"] == 19
        }),
        ("kind == response and latency_ms > 1", |m| {
            m["kind"] == "response" && m["latency_ms"].as_f64().is_some_and(|l| l > 1.0)
        }),
        ("frame in {10..40}", |m| {
            let f = &m["frame"];
            [&f[0], &f[1]]
                .iter()
                .any(|x| (10..=40).contains(&x.as_u64().unwrap()))
        }),
        ("Name matches \"^LAB\"", |m| {
            values(m, "Name").iter().any(|v| {
                v.as_str()
                    .is_some_and(|s| s.to_lowercase().starts_with("lab"))
            })
        }),
        ("client_id contains \"lab\" && kind == request", |m| {
            m["kind"] == "request"
                && m["tree"]["children"]
                    .as_array()
                    .and_then(|c| {
                        c.iter()
                            .find(|n| n["type"].as_str().unwrap_or("").starts_with("header"))
                    })
                    .and_then(|h| h["children"].as_array())
                    .and_then(|c| c.iter().find(|n| n["name"] == "client_id"))
                    .and_then(|n| n["value"].as_str())
                    .is_some_and(|s| s.contains("lab"))
        }),
        ("guessed || kind == request && api == 19", |m| {
            m["guessed"] == true || m["kind"] == "request" && m["api_key"] == 19
        }),
        ("size >= 100 and not malformed", |m| {
            m["size"].as_u64().unwrap() >= 100 && m["errors"].as_array().unwrap().is_empty()
        }),
    ];
    let mut differ = 0;
    for f in files {
        let path = lab.join(f);
        let p = path.to_str().unwrap();
        let json = run(&["read", p, "-T", "json"]);
        assert_eq!(json.code, 0, "{f}: {}", json.err);
        let msgs: Vec<J> = json
            .out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let key = |m: &J| format!("{} {} {}", m["frame"][0], m["kind"], m["correlation_id"]);
        let mut counts = Vec::new();
        for (expr, pred) in &cases {
            let want: Vec<String> = msgs.iter().filter(|m| pred(m)).map(key).collect();
            let got = run(&["read", p, "-T", "json", "-Y", expr]);
            assert_eq!(got.code, 0, "{f} {expr}: {}", got.err);
            let got: Vec<String> = got
                .out
                .lines()
                .map(|l| key(&serde_json::from_str(l).unwrap()))
                .collect();
            assert_eq!(got, want, "{f}: -Y {expr}");
            counts.push(want.len());
        }
        // != and ~= differ where a message holds partition 0 and others
        if counts[4] != counts[5] {
            differ += 1;
        }
    }
    assert!(differ > 0, "no capture tells != from ~=");
}

#[test]
fn unanswered_reads_the_file_twice() {
    let r = run(&["read", DEMO, "-Y", "unanswered"]);
    assert_eq!(r.code, 0, "{}", r.err);
    let rows: Vec<&str> = r.out.lines().collect();
    assert_eq!(rows.len(), 2, "{}", r.out);
    assert!(rows[0].starts_with("#36 ") && rows[0].contains("FindCoordinator v2 request"));
    assert!(rows[1].starts_with("#82 ") && rows[1].contains("Metadata v12 request"));
    let s = sh("cat captures/demo.pcap | $K read - -Y unanswered");
    assert_eq!(s.code, 1, "{}", s.err);
}

#[test]
fn line_flush_shows_messages_before_the_input_ends() {
    // The first packets of the demo capture go in; the pipe stays open; with -l the first
    // messages must come out while kwire still waits for more.
    let demo = std::fs::read(DEMO).unwrap();
    let mut at = 24;
    let mut records = 0;
    while records < 8 {
        let len = u32::from_le_bytes(demo[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + len;
        records += 1;
    }
    let mut child = std::process::Command::new(bin())
        .args(["read", "-", "-l"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&demo[..at]).unwrap();
    stdin.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(stdout);
        let mut line = String::new();
        let _ = r.read_line(&mut line);
        let _ = tx.send(line);
        let mut rest = String::new();
        let _ = r.read_to_string(&mut rest);
    });
    let line = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("no line while the input stays open");
    assert!(line.contains("ApiVersions v3 request"), "{line}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn wrong_tool_hints() {
    let r = run(&["decode", "--hex-file", DEMO]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("kwire read captures/demo.pcap"), "{}", r.err);
    let r = run(&["decode", "--raw", DEMO]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("kwire read"), "{}", r.err);
    let r = run(&["read", "README.md"]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("kwire decode --hex-file README.md"),
        "{}",
        r.err
    );
    let r = sh("$K read - < captures");
    assert_eq!(r.code, 2);
    assert!(r.err.contains("Is a directory"), "{}", r.err);
    let r = run(&["schema", "import", "no-such-folder", "--out", "x.jsonl"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("no-such-folder"), "{}", r.err);
    let r = run(&["read", DEMO, "--max-frame", "4"]);
    assert!(r.err.contains("at least"), "{}", r.err);
}

#[test]
fn decode_reads_back_its_own_text_and_stdin() {
    for color in ["never", "always"] {
        let text = run(&["read", DEMO, "-V", "-x", "--color", color, "-c", "6"]);
        let f = tmp(&format!("text-{color}.txt"));
        std::fs::write(&f, &text.out).unwrap();
        let back = run(&[
            "decode",
            "--hex-file",
            f.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert_eq!(back.code, 0, "{}", back.err);
        let read = run(&["read", DEMO, "-T", "json", "-c", "6"]);
        let key = |s: &str| -> Vec<(String, String, u64)> {
            s.lines()
                .map(|l| {
                    let m: J = serde_json::from_str(l).unwrap();
                    (
                        m["api_name"].to_string(),
                        m["kind"].to_string(),
                        m["size"].as_u64().unwrap(),
                    )
                })
                .collect()
        };
        assert_eq!(key(&back.out), key(&read.out), "{color}");
        // and from stdin
        let piped = sh(&format!(
            "$K decode --hex-file - --format json < {}",
            f.display()
        ));
        assert_eq!(piped.out, back.out);
        let _ = std::fs::remove_file(&f);
    }
}

#[test]
fn man_page_and_completions() {
    let man = run(&["man"]);
    assert_eq!(man.code, 0);
    assert!(
        man.out.starts_with(".ie") || man.out.contains(".TH kwire"),
        "{}",
        &man.out[..200.min(man.out.len())]
    );
    assert!(man.out.contains("read"));
    for (shell, mark) in [
        ("bash", "_kwire()"),
        ("zsh", "#compdef kwire"),
        ("fish", "complete -c kwire"),
    ] {
        let c = run(&["completions", shell]);
        assert_eq!(c.code, 0, "{shell}");
        assert!(c.out.contains(mark), "{shell}");
        assert!(c.out.contains("display-filter"), "{shell}");
    }
    assert_eq!(run(&["completions", "tcsh"]).code, 1);
}

#[test]
fn help_has_examples_and_exit_codes() {
    for cmd in [
        "read", "decode", "stats", "apis", "schema", "page", "pages", "encode",
    ] {
        let h = run(&[cmd, "--help"]);
        assert_eq!(h.code, 0);
        assert!(h.out.contains("Example"), "{cmd} --help has no examples");
    }
    let h = run(&["read", "--help"]);
    assert!(h.out.contains("Exit status"), "{}", h.out);
    assert!(h.out.contains("counts packets read"), "{}", h.out);
    let s = run(&["stats", "--help"]);
    assert!(s.out.contains("nearest-rank"), "{}", s.out);
}

#[test]
fn unanswered_requests_are_counted_and_a_few_listed() {
    let Some(sh) = common::shared("unanswered_requests_are_counted_and_a_few_listed") else {
        return;
    };
    // the capture with the most unanswered requests among the lab's
    let dir = sh.join("captures/lab");
    let mut best: Option<(usize, PathBuf)> = None;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "pcapng") {
            let r = run(&["read", p.to_str().unwrap(), "-q", "--all-notices"]);
            let n = r.err.matches("got no response").count();
            if best.as_ref().is_none_or(|(b, _)| n > *b) {
                best = Some((n, p));
            }
        }
    }
    let (n, p) = best.unwrap();
    let r = run(&["read", p.to_str().unwrap(), "-q"]);
    assert_eq!(
        r.err.matches("got no response").count(),
        n.min(5),
        "{}",
        r.err
    );
    if n > 5 {
        assert!(
            r.err
                .contains(&format!("{} more unanswered requests", n - 5)),
            "{}",
            r.err
        );
    }
    assert!(
        r.err.contains(&format!(" {n} unanswered request")),
        "{}",
        r.err
    );
}

#[test]
fn apis_show_deprecated_versions_from_the_definitions() {
    let r = run(&["apis", "--format", "json"]);
    let v: J = serde_json::from_str(&r.out).unwrap();
    let produce = v
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["api_name"] == "Produce")
        .unwrap();
    assert_eq!(produce["deprecated_versions"], "0-2", "{produce}");
    let text = run(&["apis"]);
    let row = text.out.lines().find(|l| l.contains(" Produce ")).unwrap();
    assert!(row.contains(" 0-2 "), "{row}");
}

#[test]
fn tls_properties_filter_decrypted_messages() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/captures/lab/tls/");
    let cap = format!("{dir}tls12_ck_sasl_ssl.pcapng");
    let keys = format!("{dir}tls12_ck_sasl_ssl.keys");
    let base = [
        "read",
        cap.as_str(),
        "--port",
        "9093",
        "--tls-keylog",
        keys.as_str(),
    ];
    let mut a = base.to_vec();
    a.extend(["-T", "json"]);
    let json = run(&a);
    assert_eq!(json.code, 0, "{}", json.err);
    let want = json
        .out
        .lines()
        .filter(|l| {
            let m: J = serde_json::from_str(l).unwrap();
            m["tls"]["version"] == "TLS 1.2"
        })
        .count();
    assert!(want > 0);
    let mut f = base.to_vec();
    f.extend([
        "-Y",
        "tls == \"TLS 1.2\" && tls.cipher_suite contains \"AES_256_GCM\"",
    ]);
    assert_eq!(run(&f).out.lines().count(), want);
    // without the keys nothing is decrypted, so nothing is `tls`
    let r = run(&["read", cap.as_str(), "--port", "9093", "-Y", "tls"]);
    assert_eq!((r.code, r.out.as_str()), (0, ""), "{}", r.err);
}
