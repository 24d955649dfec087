//! `kwire read` and `kwire stats` on the TLS lab's captures (`captures/lab/tls/`): the
//! decrypted messages in every format, the `tls` JSON object against
//! `docs/kwire-message.schema.json`, the notices for missing, foreign and wrong keys and
//! for bad key log lines, keys from a Decryption Secrets Block and from `SSLKEYLOGFILE`,
//! and no secret in any output.

mod common;

use assert_cmd::Command;
use serde_json::Value as J;
use std::path::{Path, PathBuf};

fn lab(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("captures/lab/tls")
        .join(name)
}

fn kwire(args: &[&str]) -> (String, String) {
    let out = common::kwire().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `kwire read CAP --port 9093 --tls-keylog KEYS EXTRA...`: stdout and stderr.
fn read_tls(cap: &str, keys: &str, extra: &[&str]) -> (String, String) {
    let mut a = vec!["read", cap, "--port", "9093", "--tls-keylog", keys];
    a.extend(extra);
    kwire(&a)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every secret of a key log, in hex, upper and lower case, whole and its first 16 digits.
fn secrets(keys: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(keys).unwrap();
    let mut v = Vec::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(s) = l.split_whitespace().nth(2) {
            for x in [s, &s[..16]] {
                v.push(x.to_lowercase());
                v.push(x.to_uppercase());
            }
        }
    }
    v
}

fn temp(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("kwire-tls-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

const CAP: &str = "tls13_kp_aes256gcm";

#[test]
fn decrypted_messages_in_json_carry_their_tls_records() {
    let cap = lab(&format!("{CAP}.pcapng"));
    let keys = lab(&format!("{CAP}.keys"));
    let (out, err) = read_tls(path(&cap), path(&keys), &["--format", "json"]);
    let v = common::message_validator();
    let lines: Vec<J> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 40, "{} messages\n{err}", lines.len());
    for j in &lines {
        let errs: Vec<String> = v.iter_errors(j).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "{errs:?}");
        let t = &j["tls"];
        assert_eq!(t["version"], "TLS 1.3");
        assert_eq!(t["cipher_suite"], "TLS_AES_256_GCM_SHA384");
        assert!(!t["records"].as_array().unwrap().is_empty());
        assert!(j["errors"].as_array().unwrap().is_empty(), "{j}");
    }
    assert!(lines
        .iter()
        .any(|j| j["api_name"] == "Fetch" && j["kind"] == "response"));
    for s in secrets(&keys) {
        assert!(!out.contains(&s) && !err.contains(&s), "secret {s} printed");
    }
}

#[test]
fn text_hexdump_and_summary_show_the_decrypted_messages() {
    let cap = lab(&format!("{CAP}.pcapng"));
    let keys = lab(&format!("{CAP}.keys"));
    let (text, _) = kwire(&[
        "read",
        path(&cap),
        "-V",
        "--port",
        "9093",
        "--tls-keylog",
        path(&keys),
        "--api",
        "Produce",
        "--color",
        "never",
    ]);
    let title = text.lines().next().unwrap();
    assert!(title.contains("[TLS 1.3 record"), "{title}");
    assert!(text.contains("lab-tls-kp"), "{text}");
    let (hd, _) = read_tls(
        path(&cap),
        path(&keys),
        &[
            "--api", "Produce", "--format", "hexdump", "--color", "never",
        ],
    );
    assert!(hd.contains("[TLS 1.3 record"), "{hd}");
    // the grid shows decrypted bytes: the topic name in the ASCII column
    assert!(hd.contains("lab-tls-"), "{hd}");
    let (sum, _) = read_tls(path(&cap), path(&keys), &["--format", "summary"]);
    assert!(
        sum.lines().any(|l| l.contains("JoinGroup v7 request")),
        "{sum}"
    );
}

#[test]
fn keys_inside_the_capture_and_from_sslkeylogfile() {
    let dsb = lab(&format!("{CAP}.dsb.pcapng"));
    let (a, _) = kwire(&["read", path(&dsb), "--port", "9093", "--format", "summary"]);
    let cap = lab(&format!("{CAP}.pcapng"));
    let keys = lab(&format!("{CAP}.keys"));
    let out = Command::cargo_bin("kwire")
        .unwrap()
        .env("SSLKEYLOGFILE", &keys)
        .args(["read", path(&cap), "--port", "9093", "--format", "summary"])
        .output()
        .unwrap();
    let b = String::from_utf8(out.stdout).unwrap();
    assert!(a.lines().count() >= 40);
    assert_eq!(a, b);
}

#[test]
fn no_keys_foreign_keys_and_wrong_keys_are_notices() {
    let cap = lab(&format!("{CAP}.pcapng"));
    let (out, err) = kwire(&["read", path(&cap), "--port", "9093"]);
    assert!(out.is_empty());
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("stayed encrypted"))
        .collect();
    assert_eq!(lines.len(), 5, "{err}");
    assert!(lines[0].contains("TLS 1.3 (client random "), "{}", lines[0]);
    assert!(lines[0].contains("no key log given"), "{}", lines[0]);
    // keys of another capture
    let other = lab("tls12_kp_chacha20.keys");
    let (_, err) = read_tls(path(&cap), path(&other), &[]);
    assert_eq!(
        err.matches("no key in the key log for this client random")
            .count(),
        5,
        "{err}"
    );
    // the right client randoms with changed secrets: one failed tag per connection
    let keys = std::fs::read_to_string(lab(&format!("{CAP}.keys"))).unwrap();
    let wrong: String = keys
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() == 3 {
                format!("{} {} {}\n", f[0], f[1], f[2].replace('a', "b"))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let wk = temp("wrong.keys", &wrong);
    let (out, err) = read_tls(path(&cap), path(&wk), &[]);
    std::fs::remove_file(&wk).ok();
    assert!(out.is_empty(), "{out}");
    assert_eq!(
        err.matches("does not decrypt with the logged key").count(),
        5,
        "{err}"
    );
    assert!(err.contains("the AEAD tag did not verify"), "{err}");
}

#[test]
fn a_malformed_key_log_line_is_named_and_the_rest_used() {
    let keys = std::fs::read_to_string(lab(&format!("{CAP}.keys"))).unwrap();
    let k = temp(
        "bad.keys",
        &format!("# comment\nCLIENT_RANDOM nothex\n{keys}GARBAGE\n"),
    );
    let cap = lab(&format!("{CAP}.pcapng"));
    let (out, err) = read_tls(path(&cap), path(&k), &["--format", "summary"]);
    std::fs::remove_file(&k).ok();
    assert!(
        err.contains(":2: CLIENT_RANDOM needs a client random and a secret"),
        "{err}"
    );
    let last = keys.lines().count() + 3;
    assert!(
        err.contains(&format!(":{last}: unknown label \"GARBAGE\"")),
        "{err}"
    );
    assert!(out.lines().count() >= 40);
    // a missing file is an error
    let out = Command::cargo_bin("kwire")
        .unwrap()
        .args(["read", path(&cap), "--tls-keylog", "/nonexistent/keys"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn stats_show_each_tls_connection() {
    let cap = lab("tls12_ck_sasl_ssl.pcapng");
    let keys = lab("tls12_ck_sasl_ssl.keys");
    let (out, _) = kwire(&[
        "stats",
        path(&cap),
        "--port",
        "9093",
        "--tls-keylog",
        path(&keys),
        "--format",
        "json",
    ]);
    let j: J = serde_json::from_str(&out).unwrap();
    let tls = j["tls"].as_array().unwrap();
    assert!(!tls.is_empty());
    for t in tls {
        assert_eq!(t["version"], "TLS 1.2");
        assert_eq!(t["cipher_suite"], "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384");
        assert_eq!(t["decrypted"], "yes", "{t}");
    }
    // SASL over TLS decodes as SASL over plaintext does
    assert!(j["apis"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["api_name"] == "SaslAuthenticate"));
    let (text, _) = kwire(&["stats", path(&cap), "--port", "9093"]);
    assert!(
        text.contains("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("TLS 1.2") && l.contains(" no ")),
        "{text}"
    );
}

#[test]
fn early_data_decrypts_with_its_secret() {
    // openssl s_client -sess_in -early_data: the second connection's ApiVersions request
    // is 0-RTT early data, in the ClientHello's packet (frame 30), before any ServerHello
    let cap = lab("tls13_openssl_early_data.pcapng");
    let keys = lab("tls13_openssl_early_data.keys");
    let (out, err) = read_tls(path(&cap), path(&keys), &["--format", "json"]);
    let msgs: Vec<J> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(msgs.len(), 8, "{err}");
    let early = msgs
        .iter()
        .find(|m| m["correlation_id"] == 3 && m["kind"] == "request")
        .expect("the early data request");
    assert_eq!(early["api_name"], "ApiVersions");
    assert_eq!(early["frame"][0], 30);
    assert!(early["errors"].as_array().unwrap().is_empty(), "{early}");
    // its response pairs with it: not guessed
    assert!(msgs
        .iter()
        .all(|m| m.get("guessed").is_none_or(|g| g == false)));
    assert!(
        err.contains("TLS 1.3 early data (0-RTT): 1 of the client's 1 record sent"),
        "{err}"
    );
    assert!(!err.contains("stayed encrypted"), "{err}");
    // without CLIENT_EARLY_TRAFFIC_SECRET: the early record and EndOfEarlyData stay
    // encrypted, said so; the rest of the connection decrypts
    let text = std::fs::read_to_string(&keys).unwrap();
    let k = temp(
        "no-early.keys",
        &text
            .lines()
            .filter(|l| !l.starts_with("CLIENT_EARLY_TRAFFIC_SECRET"))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    let (out, err) = read_tls(path(&cap), path(&k), &["--format", "summary"]);
    std::fs::remove_file(&k).ok();
    assert_eq!(out.lines().count(), 7, "{out}{err}");
    assert!(out.contains("Metadata v12 request corr=4"), "{out}");
    assert!(
        err.contains("the key log has no CLIENT_EARLY_TRAFFIC_SECRET for this client random"),
        "{err}"
    );
    assert!(
        err.contains("2 records (84 bytes) stayed encrypted: 2 of them TLS 1.3 early data"),
        "{err}"
    );
    assert!(!err.contains("does not decrypt"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Bad input on the command line (the in-memory cases: `tests/tls_bad_input.rs`).

/// kafka-python over TLS 1.2 ChaCha20-Poly1305: 5 connections, 48 messages.
const KP12: &str = "tls12_kp_chacha20";

#[test]
fn a_key_log_of_the_wrong_format() {
    // the capture itself given as its key log: a binary file, no line of it a key line
    let cap = lab(&format!("{KP12}.pcapng"));
    let cap = cap.to_str().unwrap();
    let (out, err) = read_tls(cap, cap, &["--format", "summary"]);
    assert!(out.is_empty(), "{out}");
    let named = err
        .lines()
        .filter(|l| l.contains("kwire: key log "))
        .count();
    assert!(
        (2..=12).contains(&named),
        "a few lines name the problems, not one per line: {err}"
    );
    assert!(
        err.contains("is not an NSS key log"),
        "the file is said not to be a key log: {err}"
    );
    assert!(err.contains("more lines could not be used"), "{err}");
    // the run goes on: every connection is named with what stayed encrypted
    assert_eq!(err.matches("stayed encrypted").count(), 5, "{err}");
    // a JSON file: text, but no line of it is a key log line
    let json = std::env::temp_dir().join(format!("kwire-tls-bad-{}.json", std::process::id()));
    std::fs::write(&json, "{\"keys\": [\n  \"CLIENT_RANDOM\"\n]}\n").unwrap();
    let (_, err) = read_tls(cap, json.to_str().unwrap(), &[]);
    std::fs::remove_file(&json).ok();
    assert!(err.contains(":1: unknown label"), "{err}");
    assert!(err.contains("is not an NSS key log"), "{err}");
    assert_eq!(err.matches("stayed encrypted").count(), 5, "{err}");
}

#[test]
fn tls_on_a_kafka_port_and_with_detect() {
    let cap = lab(&format!("{KP12}.pcapng"));
    let keys = lab(&format!("{KP12}.keys"));
    let (cap, keys) = (cap.to_str().unwrap(), keys.to_str().unwrap());
    let with = read_tls(cap, keys, &["--format", "summary"]);
    assert_eq!(with.0.lines().count(), 48, "{}", with.1);
    // --detect, no port: TLS is recognised and decrypted all the same
    let det = kwire(&[
        "read",
        cap,
        "--detect",
        "--tls-keylog",
        keys,
        "--format",
        "summary",
    ]);
    assert_eq!(det.0, with.0, "{}", det.1);
    // without keys, on the Kafka port or with --detect: no Kafka read from TLS bytes, one
    // notice per connection
    for args in [
        &["--port", "9093"][..],
        &["--detect"][..],
        &["--port", "9093", "--detect"],
    ] {
        let mut a = vec!["read", cap, "--format", "summary"];
        a.extend(args);
        let (out, err) = kwire(&a);
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(
            err.matches("stayed encrypted").count(),
            5,
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"));
    }
}

#[test]
fn alerts_are_notices() {
    // a Python ssl server answers kafka-python's closing with a decode_error alert (the
    // lab README); confluent-kafka closes with close_notify
    let (_, err) = read_tls(
        lab(&format!("{KP12}.pcapng")).to_str().unwrap(),
        lab(&format!("{KP12}.keys")).to_str().unwrap(),
        &["--format", "summary"],
    );
    let alerts: Vec<&str> = err.lines().filter(|l| l.contains("TLS alert")).collect();
    assert_eq!(alerts.len(), 5, "{err}");
    assert!(alerts
        .iter()
        .all(|l| l.starts_with("kwire: frame ") && l.contains("decode_error (fatal)")));
    let (_, err) = read_tls(
        lab("tls12_ck_sasl_ssl.pcapng").to_str().unwrap(),
        lab("tls12_ck_sasl_ssl.keys").to_str().unwrap(),
        &["--format", "summary"],
    );
    assert_eq!(
        err.matches("TLS alert: close_notify (warning)").count(),
        6,
        "{err}"
    );
}

#[test]
fn no_secret_in_any_output() {
    let test = "no_secret_in_any_output";
    let mut checked = 0;
    for name in [
        "tls12_kp_chacha20",
        "tls13_kp_aes256gcm",
        "tls12_ck_sasl_ssl",
    ] {
        let cap = lab(&format!("{name}.pcapng"));
        let keys = lab(&format!("{name}.keys"));
        let s = secrets(&keys);
        assert!(!s.is_empty());
        let (cap, keys) = (cap.to_str().unwrap(), keys.to_str().unwrap());
        let base = ["--port", "9093", "--tls-keylog", keys, "--color", "never"];
        let mut runs: Vec<Vec<&str>> = Vec::new();
        for f in ["text", "json", "values", "summary", "hexdump", "md", "html"] {
            runs.push([&["read", cap, "--format", f][..], &base[..]].concat());
        }
        runs.push([&["read", cap, "-V", "-x"][..], &base[..]].concat());
        for f in ["text", "json"] {
            runs.push([&["stats", cap, "--format", f][..], &base[..]].concat());
        }
        for args in &runs {
            let (out, err) = kwire(args);
            assert!(out.len() > 100, "{args:?}: {out}");
            for x in &s {
                assert!(
                    !out.contains(x.as_str()) && !err.contains(x.as_str()),
                    "{args:?}: secret {x} printed"
                );
            }
            checked += 1;
        }
        // the Parquet export, every file of it
        let dir = std::env::temp_dir().join(format!("kwire-{test}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let d = dir.to_str().unwrap();
        let (_, err) = kwire(
            &[
                &["export", cap, "--out", d, "--records", "--record-values"][..],
                &base[..4],
            ]
            .concat(),
        );
        assert!(
            s.iter().all(|x| !err.contains(x.as_str())),
            "export's notices"
        );
        let mut files = vec![dir.clone()];
        let mut n = 0;
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let bytes = std::fs::read(&p).unwrap();
            let text = String::from_utf8_lossy(&bytes).to_lowercase();
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            for x in s.iter().filter(|x| x.len() > 16) {
                let raw = common::unhex(x);
                assert!(
                    !hex.contains(&x.to_lowercase()) && !text.contains(&x.to_lowercase()),
                    "{}: secret in the export",
                    p.display()
                );
                assert!(
                    !bytes.windows(raw.len()).any(|w| w == raw.as_slice()),
                    "{}: secret bytes in the export",
                    p.display()
                );
            }
            n += 1;
        }
        assert!(n > 0);
        std::fs::remove_dir_all(&dir).ok();
    }
    assert!(checked >= 30);
}

#[test]
fn stats_of_several_captures_name_each_tls_connection() {
    // Connection ids restart in each capture: the rows keep capture order and say which
    // capture each connection is of (before, the two captures' rows were sorted together
    // by id, 1, 1, 2, 2..., with nothing to tell them apart).
    let a = lab("tls12_ck_sasl_ssl.pcapng");
    let b = lab("tls13_openssl_early_data.pcapng");
    let args = ["stats", path(&a), path(&b), "--port", "9093"];
    let (out, _) = kwire(&[&args[..], &["--format", "json"]].concat());
    let j: J = serde_json::from_str(&out).unwrap();
    let rows: Vec<(String, u64)> = j["tls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let cap = t["capture"].as_str().expect("each row names its capture");
            (cap.to_string(), t["connection"].as_u64().unwrap())
        })
        .collect();
    let first = rows.iter().take_while(|r| r.0 == path(&a)).count();
    assert!(first > 0 && first < rows.len(), "{rows:?}");
    assert!(rows[first..].iter().all(|r| r.0 == path(&b)), "{rows:?}");
    for part in [&rows[..first], &rows[first..]] {
        assert!(part.windows(2).all(|w| w[0].1 < w[1].1), "{rows:?}");
    }
    // The text table: one row a connection, named CAPTURE#ID, its columns aligned.
    let (text, _) = kwire(&args);
    let tls: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("cipher_suite"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(tls.len(), rows.len() + 1, "{text}");
    let col = tls[0].find("tls ").unwrap();
    for (l, (cap, id)) in tls[1..].iter().zip(&rows) {
        assert!(l.starts_with(&format!("{cap}#{id} ")), "{l}");
        assert_eq!(l.find("TLS 1."), Some(col), "{text}");
    }
}

#[test]
fn the_tls_table_fits_the_longest_cipher_suite() {
    // TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 is 43 characters: the column widens
    // for it, so every row's `decrypted` cell starts where the heading's does.
    let o = common::kwire()
        .args([
            "stats",
            "captures/lab/tls/tls12_kp_chacha20.pcapng",
            "--port",
            "9093",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("cipher_suite"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(table.len() > 1, "{out}");
    let at = table[0].find("decrypted").unwrap();
    for row in &table[1..] {
        assert!(row.contains("CHACHA20"), "{row}");
        let cell = &row[at..];
        assert!(
            cell.starts_with("no ") || cell.starts_with("yes ") || cell.starts_with("partly "),
            "{row}"
        );
    }
}
