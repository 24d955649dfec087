//! `kwire report` on committed lab captures (plain, TLS with its key log, a capture cut
//! in the middle of its conversations, consumer-group sessions): the overview's counts
//! and the API table against `kwire stats --format json`, the API table's quantiles
//! against DuckDB's `quantile_disc` over `kwire export` of the same capture, the linked
//! message pages against `kwire read -V`, `-Y` and `--max-pages`, and the page in
//! Chromium (`tests/browser/report-check.mjs`: no console error, no request, every plot
//! an SVG with labelled axes, sorting, a link that opens its page, dark mode, print).
//!
//! The DuckDB and Chromium tests skip with a message when their tools are missing, and
//! fail under `KWIRE_NO_SKIP=1`.

mod common;

use regex::Regex;
use serde_json::Value as J;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn lab(name: &str) -> String {
    repo().join("captures/lab").join(name).display().to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kwire-report-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// A case: a name and the capture arguments (the capture and its options).
struct Case {
    name: &'static str,
    args: Vec<String>,
}

/// `captures/lab/ck_consumer_group.pcap` from its 60th record on, as `editcap -r F OUT
/// 60-` cuts it: connections already open, requests whose responses come, responses
/// whose requests are gone. A pcap file is a 24-byte header and records of a 16-byte
/// header (incl_len at bytes 8..12, in the file's byte order) and their bytes.
fn cut_capture() -> String {
    // Written once per test process: the tests run at once, and one rewriting the file
    // while another's kwire reads it gave "capture input is empty".
    static CUT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CUT.get_or_init(write_cut_capture).clone()
}

fn write_cut_capture() -> String {
    let src = std::fs::read(lab("ck_consumer_group.pcap")).unwrap();
    let le = src[..4] == [0xd4, 0xc3, 0xb2, 0xa1] || src[..4] == [0x4d, 0x3c, 0xb2, 0xa1];
    assert!(
        le || src[..4] == [0xa1, 0xb2, 0xc3, 0xd4] || src[..4] == [0xa1, 0xb2, 0x3c, 0x4d],
        "not a pcap file"
    );
    let mut out = src[..24].to_vec();
    let (mut at, mut n) = (24usize, 0);
    while at + 16 <= src.len() {
        let b: [u8; 4] = src[at + 8..at + 12].try_into().unwrap();
        let len = if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        } as usize;
        let end = at + 16 + len;
        n += 1;
        if n >= 60 {
            out.extend_from_slice(&src[at..end]);
        }
        at = end;
    }
    assert!(n > 100, "{n} records");
    let p = tmp("cut.pcap");
    std::fs::write(&p, out).unwrap();
    p.display().to_string()
}

fn cases() -> Vec<Case> {
    let tls = repo().join("captures/lab/tls");
    vec![
        Case {
            name: "plain",
            args: vec![lab("ck_produce_none.pcap")],
        },
        Case {
            name: "tls",
            args: vec![
                tls.join("tls13_kp_aes256gcm.pcapng").display().to_string(),
                "--port".into(),
                "9093".into(),
                "--tls-keylog".into(),
                tls.join("tls13_kp_aes256gcm.keys").display().to_string(),
            ],
        },
        Case {
            name: "cut",
            args: vec![cut_capture()],
        },
        Case {
            name: "group",
            args: vec![lab("ck_consumer_group.pcap")],
        },
        Case {
            name: "kjs-group",
            args: vec![lab("kjs_group.pcap")],
        },
    ]
}

/// `kwire report ARGS -o FILE`: the page and stderr.
fn report(name: &str, args: &[String], extra: &[&str]) -> (String, String) {
    let out = tmp(&format!("{name}.html"));
    let o = common::kwire()
        .arg("report")
        .args(args)
        .args(extra)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{name}: {err}");
    (std::fs::read_to_string(&out).unwrap(), err)
}

fn stats(args: &[String], extra: &[&str]) -> J {
    let o = common::kwire()
        .arg("stats")
        .args(args)
        .args(extra)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success());
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The overview's cards: `data-k` to `data-v`.
fn cards(html: &str) -> BTreeMap<String, u64> {
    let re = Regex::new(r#"data-k="([a-z_]+)" data-v="(\d+)""#).unwrap();
    re.captures_iter(html)
        .map(|c| (c[1].to_string(), c[2].parse().unwrap()))
        .collect()
}

/// The API table: (api_key, api_version) to the cells' `data-v` by column name.
fn api_rows(html: &str) -> BTreeMap<(i64, i64), BTreeMap<String, i64>> {
    let table = section(html, "<table class=\"t\" id=\"t-apis\">", "</table>");
    let head = Regex::new(r"<th>([^<]*)</th>").unwrap();
    let cols: Vec<String> = head
        .captures_iter(table)
        .map(|c| c[1].to_string())
        .collect();
    let row =
        Regex::new(r#"(?s)<tr data-api="(-?\d+)" data-version="(-?\d+)">(.*?)</tr>"#).unwrap();
    let cell = Regex::new(r#"<td(?: class="n")?(?: data-v="(-?\d+)")?>"#).unwrap();
    let mut out = BTreeMap::new();
    for r in row.captures_iter(table) {
        let mut m = BTreeMap::new();
        for (i, c) in cell.captures_iter(&r[3]).enumerate() {
            if let Some(v) = c.get(1) {
                m.insert(cols[i].clone(), v.as_str().parse().unwrap());
            }
        }
        out.insert((r[1].parse().unwrap(), r[2].parse().unwrap()), m);
    }
    out
}

fn section<'h>(html: &'h str, start: &str, end: &str) -> &'h str {
    let i = html
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in the page"));
    let j = html[i..].find(end).map_or(html.len(), |j| i + j);
    &html[i..j]
}

/// Milliseconds as `kwire stats` rounds them.
fn ms(ns: i64) -> f64 {
    (ns as f64 / 1000.0).round() / 1000.0
}

/// A number from the engine's closing line: `166 packets`.
fn closing_count(stderr: &str, what: &str) -> u64 {
    let re = Regex::new(&format!(r"(\d+) {what}")).unwrap();
    let line = stderr
        .lines()
        .find(|l| l.contains(" packets, "))
        .unwrap_or_else(|| panic!("no closing line in {stderr}"));
    re.captures(line).unwrap()[1].parse().unwrap()
}

fn check_against_stats(what: &str, html: &str, err: &str, st: &J) {
    let c = cards(html);
    let apis = st["apis"].as_array().unwrap();
    let sum = |k: &str| apis.iter().map(|a| a[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(c["requests"], sum("requests"), "{what}: requests");
    assert_eq!(c["responses"], sum("responses"), "{what}: responses");
    assert_eq!(
        c["connections"],
        st["connections"].as_array().unwrap().len() as u64,
        "{what}: connections"
    );
    assert_eq!(
        c["sasl_tokens"],
        st["sasl_tokens"].as_u64().unwrap(),
        "{what}"
    );
    assert_eq!(
        c["unpaired_responses"],
        st["unpaired_responses"].as_u64().unwrap(),
        "{what}"
    );
    let ids: std::collections::BTreeSet<&str> = st["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["client_id"].as_str())
        .collect();
    assert_eq!(c["client_ids"], ids.len() as u64, "{what}: client_ids");
    let brokers: std::collections::BTreeSet<&str> = st["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["server"].as_str())
        .collect();
    assert_eq!(c["brokers"], brokers.len() as u64, "{what}: brokers");
    assert_eq!(
        c["packets"],
        closing_count(err, "packets"),
        "{what}: packets"
    );
    let rows = api_rows(html);
    assert_eq!(rows.len(), apis.len(), "{what}: API rows");
    for a in apis {
        let key = (
            a["api_key"].as_i64().unwrap(),
            a["api_version"].as_i64().unwrap(),
        );
        let r = &rows[&key];
        let name = format!("{what}: {} v{}", a["api_name"], key.1);
        for k in ["requests", "responses", "bytes", "malformed"] {
            assert_eq!(r[k], a[k].as_i64().unwrap(), "{name} {k}");
        }
        let errs: u64 = a["errors"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(r["errors"], errs as i64, "{name} errors");
        let lat = &a["latency_ms"];
        if lat.is_null() {
            assert_eq!(r["p99 ms"], -1, "{name}");
        } else {
            for (col, k) in [("p50 ms", "median"), ("p99 ms", "p99"), ("max ms", "max")] {
                assert_eq!(ms(r[col]), lat[k].as_f64().unwrap(), "{name} {k}");
            }
        }
    }
}

#[test]
fn overview_and_api_table_equal_stats() {
    for c in cases() {
        let (html, err) = report(c.name, &c.args, &[]);
        let st = stats(&c.args, &[]);
        check_against_stats(c.name, &html, &err, &st);
        assert!(html.contains("Every message of the captures (no filter)."));
        // The file's own promise: nothing outside it.
        for bad in ["<script src", "<link ", "@import", "url(http", "src=\"http"] {
            assert!(!html.contains(bad), "{}: {bad}", c.name);
        }
    }
}

#[test]
fn a_filter_restricts_every_section_and_is_printed() {
    let c = &cases()[3];
    let f = "api == Fetch || api == JoinGroup";
    let (html, err) = report("filtered", &c.args, &["-Y", f]);
    let st = stats(&c.args, &["-Y", f]);
    check_against_stats("filtered", &html, &err, &st);
    assert!(
        html.contains(&format!("id=\"filter\">({f})</code>")),
        "the filter is printed"
    );
    let rows = api_rows(&html);
    assert!(rows.keys().all(|(k, _)| *k == 1 || *k == 11), "{rows:?}");
    // The group timeline has no Heartbeat or SyncGroup: only JoinGroup events remain.
    assert!(!html.contains("<title>SyncGroup at"));
    assert!(html.contains("<title>JoinGroup at"));
}

/// The tree rows of message section `id` (the text of each `.row`).
fn page_rows(html: &str, id: &str) -> Vec<String> {
    let sec = section(html, &format!("id=\"{id}\""), "</section>");
    let row = Regex::new(r#"(?s)<div class="row"[^>]*>(.*?)</div>"#).unwrap();
    let tag = Regex::new(r"<[^>]+>").unwrap();
    row.captures_iter(sec)
        .map(|c| {
            tag.replace_all(&c[1], "")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&")
        })
        .collect()
}

/// `kwire read ARGS -V`: each message's tree lines (title line left out), by index.
fn read_trees(args: &[String]) -> Vec<Vec<String>> {
    let o = common::kwire()
        .arg("read")
        .args(args)
        .arg("-V")
        .output()
        .unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout)
        .unwrap()
        .split("\n\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|b| {
            b.trim_matches('\n')
                .lines()
                .skip(1)
                .map(str::to_string)
                .collect()
        })
        .collect()
}

#[test]
fn linked_pages_show_the_tree_read_v_prints() {
    let link = Regex::new(r##"<a href="#(msg-0-(\d+))">"##).unwrap();
    for c in cases() {
        let (html, _) = report(&format!("{}-pages", c.name), &c.args, &[]);
        let trees = read_trees(&c.args);
        let slow = section(&html, "id=\"t-slowest\"", "</table>");
        let (mut checked, mut cut) = (0, 0);
        for l in link.captures_iter(slow).take(10) {
            let i: usize = l[2].parse().unwrap();
            if section(&html, &format!("id=\"{}\"", &l[1]), "</section>")
                .contains("class=\"intro cut\"")
            {
                cut += 1;
                continue;
            }
            let rows = page_rows(&html, &l[1]);
            assert!(!rows.is_empty(), "{}: {} has no tree", c.name, &l[1]);
            assert_eq!(rows, trees[i], "{}: message {i}", c.name);
            checked += 1;
        }
        let slowest_rows = slow.matches("<tr data-message").count();
        assert!(
            checked + cut == slowest_rows.min(10) && checked > 0,
            "{}: {checked} links of {slowest_rows} rows",
            c.name
        );
    }
}

#[test]
fn max_pages_bounds_the_pages() {
    let c = &cases()[3];
    let (html, _) = report("pages4", &c.args, &["--max-pages", "4"]);
    let n = html.matches("<section class=\"msg\"").count();
    assert!((1..=4).contains(&n), "{n} pages");
    let (html, _) = report("pages0", &c.args, &["--max-pages", "0"]);
    assert_eq!(html.matches("<section class=\"msg\"").count(), 0);
    assert!(!html.contains("<a href=\"#msg-"), "no link without a page");
}

/// The Python with DuckDB, or `None` after saying why the test skips.
fn duckdb(test: &str) -> Option<PathBuf> {
    common::duckdb_python(test, "duckdb")
}

#[test]
fn api_quantiles_equal_duckdb_quantile_disc_over_export() {
    let Some(py) = duckdb("api_quantiles_equal_duckdb_quantile_disc_over_export") else {
        return;
    };
    for c in cases() {
        let (html, _) = report(&format!("{}-duck", c.name), &c.args, &[]);
        let rows = api_rows(&html);
        let out = tmp(&format!("{}-export", c.name));
        let _ = std::fs::remove_dir_all(&out);
        let o = common::kwire()
            .arg("export")
            .args(&c.args)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let sql = format!(
            "select api_key, api_version, quantile_disc(latency_ns, 0.5), quantile_disc(latency_ns, 0.9),
                    quantile_disc(latency_ns, 0.99), max(latency_ns)
             from read_parquet('{}/messages/**/*.parquet', hive_partitioning = true)
             where api_key >= 0 and not guessed and kind = 'response' and latency_ns is not null
             group by all order by all",
            out.display()
        );
        let got = Command::new(&py)
            .args([
                "-c",
                "import duckdb, json, sys; print(json.dumps(duckdb.sql(sys.argv[1]).fetchall()))",
                &sql,
            ])
            .output()
            .unwrap();
        assert!(
            got.status.success(),
            "{}",
            String::from_utf8_lossy(&got.stderr)
        );
        let want: Vec<Vec<i64>> = serde_json::from_slice(&got.stdout).unwrap();
        assert!(!want.is_empty(), "{}: no latencies", c.name);
        let with_latency = rows.values().filter(|r| r["p99 ms"] >= 0).count();
        assert_eq!(with_latency, want.len(), "{}: APIs with latencies", c.name);
        for w in want {
            let r = &rows[&(w[0], w[1])];
            let what = format!("{} api_key {} v{}", c.name, w[0], w[1]);
            assert_eq!(r["p50 ms"], w[2], "{what} p50");
            assert_eq!(r["p90 ms"], w[3], "{what} p90");
            assert_eq!(r["p99 ms"], w[4], "{what} p99");
            assert_eq!(r["max ms"], w[5], "{what} max");
        }
    }
}

fn has_node() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Chromium and `tests/browser`, or `None` after saying why the test skips.
fn browser(test: &str) -> Option<(PathBuf, PathBuf)> {
    let chromium = std::env::var_os("KWIRE_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let dir = repo().join("tests/browser");
    if !chromium.exists() {
        common::skip(test, &format!("no Chromium at {}", chromium.display()));
        None
    } else if !has_node() {
        common::skip(test, "no node");
        None
    } else if !dir.join("node_modules/playwright-core").exists() {
        common::skip(
            test,
            "tests/browser/node_modules/playwright-core is not installed",
        );
        None
    } else {
        Some((chromium, dir))
    }
}

#[test]
fn report_in_chromium() {
    let Some((chromium, dir)) = browser("report_in_chromium") else {
        return;
    };
    let shots = repo().join("target/page-browser");
    std::fs::create_dir_all(&shots).unwrap();
    for c in cases() {
        let (_, _) = report(&format!("{}-browser", c.name), &c.args, &[]);
        let page = tmp(&format!("{}-browser.html", c.name));
        let shot = shots.join(format!("report-{}.png", c.name));
        let run = Command::new("node")
            .current_dir(&dir)
            .arg("report-check.mjs")
            .arg(&page)
            .arg(&shot)
            .env("KWIRE_CHROMIUM", &chromium)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            run.status.success(),
            "{}: report-check failed:\n{stdout}\n{}",
            c.name,
            String::from_utf8_lossy(&run.stderr)
        );
        let v: J = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(v["ok"], true, "{v}");
        assert_eq!(v["plots"].as_array().unwrap().len(), 6, "{}: {v}", c.name);
        // The page the link opened shows the tree `read -V` prints for that message.
        let id = v["linked"]["id"].as_str().unwrap();
        let i: usize = id.rsplit('-').next().unwrap().parse().unwrap();
        let rows: Vec<String> = v["linked"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        assert_eq!(rows, read_trees(&c.args)[i], "{}: {id}", c.name);
        let png = std::fs::read(&shot).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    }
}

/// A pcapng whose interface says its timestamps count units of 10^-124 s (`if_tsresol`
/// 124): the times are far past what nanoseconds since 1970 hold in an i64. The report
/// and the export saturate them instead of overflowing (a debug build panicked, a release
/// build wrapped them to 1677).
#[test]
fn times_past_the_nanosecond_range_do_not_overflow() {
    let mut d = std::fs::read(lab("ck_transactions.pcapng")).unwrap();
    // The first interface block's if_tsresol option: code 9, length 1, value 9.
    assert_eq!(&d[200..205], &[9, 0, 1, 0, 9], "the option moved");
    d[204] = 124;
    let p = tmp("tsresol-124.pcapng");
    std::fs::write(&p, d).unwrap();
    let p = p.display().to_string();
    let (html, err) = report("tsresol", std::slice::from_ref(&p), &[]);
    assert!(!err.contains("panicked"), "{err}");
    assert!(html.contains("id=\"overview\""));
    let out = tmp("tsresol-export");
    let o = common::kwire()
        .args(["export", &p, "--out"])
        .arg(&out)
        .arg("--force")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && !err.contains("panicked"), "{err}");
}
