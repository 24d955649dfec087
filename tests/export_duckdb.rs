//! `kwire export` checked by a real engine: the lab captures (`captures/lab/` and, with
//! `KWIRE_SHARED`, `../shared/captures/lab/`) are exported in one run and queried with
//! DuckDB (and read with pyarrow) through `tests/export/query.py`: row counts against
//! `read --format json`, per-API counts, error names and latency quantiles against
//! `kwire stats`, joins, a partitioned export that prunes, and the schema against
//! `docs/parquet-format.md`. The bad-input tests need no engine.
//!
//! DuckDB and pyarrow come from a virtual environment: `KWIRE_DUCKDB_PYTHON`, else
//! `target/duckdb-venv/bin/python` (`.ci/run` makes it).

mod common;

use serde_json::{json, Value as J};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn kwire(args: &[&str]) -> Output {
    common::kwire().args(args).output().expect("kwire runs")
}

/// The Python with DuckDB and pyarrow, or `None` after saying why the test skips.
fn engine(test: &str) -> Option<PathBuf> {
    common::duckdb_python(test, "duckdb, pyarrow")
}

/// Results of `sql` (each `Ok(rows)` or `Err(message)`) and of reading `files` with pyarrow.
/// Each query's rows, or its error.
type Results = Vec<Result<Vec<J>, String>>;

fn query(py: &Path, sql: &[String], files: &[String]) -> (Results, Results) {
    let mut child = Command::new(py)
        .arg(repo().join("tests/export/query.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python runs");
    let req = json!({"sql": sql, "pyarrow": files});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(req.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "query.py failed");
    let v: J = serde_json::from_slice(&out.stdout).unwrap();
    let conv = |k: &str| -> Results {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|r| match r.get("rows") {
                Some(rows) => Ok(rows.as_array().unwrap().clone()),
                None => Err(r["error"].as_str().unwrap_or("?").to_string()),
            })
            .collect()
    };
    (conv("sql"), conv("pyarrow"))
}

fn sql1(py: &Path, q: String) -> Vec<J> {
    let (mut r, _) = query(py, std::slice::from_ref(&q), &[]);
    r.remove(0).unwrap_or_else(|e| panic!("{q}: {e}"))
}

/// The `.pcap` files of the repo's lab and, with `KWIRE_SHARED`, the shared lab.
fn lab_captures(test: &str) -> Vec<String> {
    let mut dirs = vec![repo().join("captures/lab")];
    if let Some(s) = common::shared(test) {
        dirs.push(s.join("captures/lab"));
    }
    let mut out = Vec::new();
    for d in dirs {
        let mut v: Vec<String> = std::fs::read_dir(&d)
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
            .map(|p| p.display().to_string())
            .collect();
        v.sort();
        out.extend(v);
    }
    assert!(out.len() > 10, "lab captures: {out:?}");
    out
}

/// These captures of the repo's lab, as paths.
fn lab(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|c| repo().join("captures/lab").join(c).display().to_string())
        .collect()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kwire-export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn export(caps: &[String], out: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<&str> = vec!["export"];
    args.extend(caps.iter().map(String::as_str));
    let o = out.display().to_string();
    args.extend(["--out", &o]);
    args.extend(extra);
    kwire(&args)
}

fn glob(out: &Path, table: &str) -> String {
    format!(
        "read_parquet('{}/{table}/**/*.parquet', hive_partitioning = true)",
        out.display()
    )
}

/// Rows of the messages table `m` per (capture, api_name or "", kind).
fn rows_per_capture_api_kind(py: &Path, m: &str) -> BTreeMap<(String, String, String), u64> {
    sql1(
        py,
        format!("select capture, coalesce(api_name, ''), kind, count(*) from {m} group by all"),
    )
    .iter()
    .map(|r| {
        (
            (
                r[0].as_str().unwrap().into(),
                r[1].as_str().unwrap().into(),
                r[2].as_str().unwrap().into(),
            ),
            r[3].as_u64().unwrap(),
        )
    })
    .collect()
}

/// nearest-rank milliseconds as `kwire stats` rounds them.
fn ms(ns: f64) -> f64 {
    (ns / 1000.0).round() / 1000.0
}

#[test]
fn export_agrees_with_read_and_stats() {
    let Some(py) = engine("export_agrees_with_read_and_stats") else {
        return;
    };
    let caps = lab_captures("export_agrees_with_read_and_stats");
    let out = tmp("all");
    let o = export(&caps, &out, &["--records"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = glob(&out, "messages");
    let p = glob(&out, "partitions");
    let r = glob(&out, "records");

    // Row counts per capture, API and kind equal the messages `read --format json` prints.
    let mut args = vec!["read"];
    args.extend(caps.iter().map(String::as_str));
    args.extend(["--format", "json"]);
    let read = kwire(&args);
    assert!(read.status.success());
    let mut want: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    let mut lines = 0;
    for l in String::from_utf8(read.stdout).unwrap().lines() {
        let v: J = serde_json::from_str(l).unwrap();
        lines += 1;
        *want
            .entry((
                v["capture"].as_str().unwrap().to_string(),
                v["api_name"].as_str().unwrap_or("").to_string(),
                v["kind"].as_str().unwrap().to_string(),
            ))
            .or_default() += 1;
    }
    assert!(lines > 500, "{lines} messages");
    let got = rows_per_capture_api_kind(&py, &m);
    assert_eq!(got, want);

    // Per API and version: requests, responses, bytes, error names and latencies as
    // `kwire stats` gives them over the same captures (which counts guessed layouts
    // apart, not under the API guessed).
    let mut args = vec!["stats"];
    args.extend(caps.iter().map(String::as_str));
    args.extend(["--format", "json"]);
    let st = kwire(&args);
    assert!(st.status.success());
    let st: J = serde_json::from_slice(&st.stdout).unwrap();
    let rows = sql1(
        &py,
        format!(
            "select api_key, api_version, count(*) filter (kind = 'request'), count(*) filter (kind = 'response'),
                    sum(size), count(latency_ns) filter (kind = 'response'),
                    min(latency_ns) filter (kind = 'response'),
                    quantile_disc(latency_ns, 0.5) filter (kind = 'response'),
                    quantile_disc(latency_ns, 0.99) filter (kind = 'response'),
                    max(latency_ns) filter (kind = 'response')
             from {m} where api_key >= 0 and not guessed group by all order by all"
        ),
    );
    let errs = sql1(
        &py,
        format!(
            "select api_key, api_version, e, count(*) from
               (select api_key, api_version, unnest(error_names) as e from {m}
                where kind = 'response' and api_key >= 0 and not guessed)
             where e not like 'code %' group by all"
        ),
    );
    let apis = st["apis"].as_array().unwrap();
    assert_eq!(rows.len(), apis.len());
    for (row, a) in rows.iter().zip(apis) {
        let what = format!("{} v{}", a["api_name"], a["api_version"]);
        assert_eq!(row[0], a["api_key"], "{what}");
        assert_eq!(row[1], a["api_version"], "{what}");
        assert_eq!(row[2], a["requests"], "{what} requests");
        assert_eq!(row[3], a["responses"], "{what} responses");
        assert_eq!(row[4].as_f64(), a["bytes"].as_f64(), "{what} bytes");
        let lat = &a["latency_ms"];
        if lat.is_null() {
            assert_eq!(row[5], 0, "{what}");
        } else {
            assert_eq!(row[5], lat["count"], "{what} latency count");
            for (i, k) in [(6, "min"), (7, "median"), (8, "p99"), (9, "max")] {
                assert_eq!(
                    ms(row[i].as_f64().unwrap()),
                    lat[k].as_f64().unwrap(),
                    "{what} {k}"
                );
            }
        }
        let mut want: BTreeMap<String, u64> = serde_json::from_value(a["errors"].clone()).unwrap();
        for e in &errs {
            if e[0] == a["api_key"] && e[1] == a["api_version"] {
                let n = want.remove(e[2].as_str().unwrap());
                assert_eq!(n, e[3].as_u64(), "{what} {}", e[2]);
            }
        }
        assert!(
            want.is_empty(),
            "{what}: stats errors not in the export: {want:?}"
        );
    }

    // Joins: every partition entry and record belongs to a message; records add up.
    let (res, arrow) = query(
        &py,
        &[
            format!("select count(*), count(distinct message_id) from {m}"),
            format!("select count(*) from {p} anti join {m} using (message_id)"),
            format!("select count(*) from {r} anti join {m} using (message_id)"),
            format!("select coalesce(sum(records), 0) from {p}"),
            format!("select count(*) from {r}"),
            format!(
                "select count(*) from {p} pp join {m} mm using (message_id)
                 where pp.api_key <> mm.api_key or pp.kind <> mm.kind"
            ),
            format!(
                "select m.api_name, m.kind, count(*) from {r} r join {m} m using (message_id)
                 group by all order by all"
            ),
            format!("select count(*) from {p} where api_name = 'Produce' and kind = 'request' and records > 0"),
            format!("select count(*) from {m} where kind = 'request' and latency_ns is not null"),
            format!("select count(*) from {m} where api_name = 'Fetch' and kind = 'response' and not guessed and client_id is null"),
        ],
        &[format!("{}/messages/part-00000-00000.parquet", out.display())],
    );
    let res: Vec<Vec<J>> = res.into_iter().map(Result::unwrap).collect();
    assert_eq!(res[0][0][0], res[0][0][1], "message_id is unique");
    assert_eq!(res[1][0][0], 0, "partition entries without a message");
    assert_eq!(res[2][0][0], 0, "records without a message");
    assert_eq!(
        res[3][0][0], res[4][0][0],
        "partitions.records adds up to the records table"
    );
    assert!(
        res[4][0][0].as_u64().unwrap() > 100,
        "records: {:?}",
        res[4]
    );
    assert_eq!(
        res[5][0][0], 0,
        "partition rows repeat their message's api_key and kind"
    );
    for row in &res[6] {
        let (api, kind) = (row[0].as_str().unwrap(), row[1].as_str().unwrap());
        assert!(
            matches!(
                (api, kind),
                ("Produce", "request") | ("Fetch", "response") | ("ShareFetch", "response")
            ),
            "records in {api} {kind}"
        );
    }
    assert!(
        res[7][0][0].as_u64().unwrap() > 0,
        "Produce requests carry records"
    );
    assert!(
        res[8][0][0].as_u64().unwrap() > 0,
        "request rows carry the time to their answer"
    );
    assert_eq!(
        res[9][0][0], 0,
        "responses carry their connection's client_id"
    );
    assert!(arrow[0].is_ok(), "pyarrow reads the file: {:?}", arrow[0]);

    let _ = std::fs::remove_dir_all(&out);
}

/// The documented columns of `table`: (name, DuckDB type, nullable).
fn documented(table: &str) -> Vec<(String, String, bool)> {
    documented_under(&format!("## `{table}`"))
}

/// The column table under `heading` in docs/parquet-format.md.
fn documented_under(heading: &str) -> Vec<(String, String, bool)> {
    let doc = std::fs::read_to_string(repo().join("docs/parquet-format.md")).unwrap();
    let part = doc
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("docs/parquet-format.md has no {heading} section"));
    let part = part.split("\n## ").next().unwrap();
    part.lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let c: Vec<&str> = l.split('|').map(str::trim).collect();
            (
                c[1].trim_matches('`').to_string(),
                c[2].to_string(),
                c[3] == "yes",
            )
        })
        .collect()
}

/// A file's columns as (name, DuckDB type, nullable), from DuckDB's `describe` rows
/// and `parquet_schema`'s repetition types.
fn file_columns(types: &[J], reps: &[J]) -> Vec<(String, String, bool)> {
    types
        .iter()
        .map(|t| {
            let name = t[0].as_str().unwrap().to_string();
            let rep = reps
                .iter()
                .find(|r| r[0].as_str() == Some(&name))
                .map(|r| r[1].as_str().unwrap().to_string())
                .unwrap_or_default();
            (name, t[1].as_str().unwrap().to_string(), rep == "OPTIONAL")
        })
        .collect()
}

#[test]
fn schema_matches_the_docs() {
    let Some(py) = engine("schema_matches_the_docs") else {
        return;
    };
    let out = tmp("schema");
    let cap = repo()
        .join("captures/lab/ck_produce_zstd.pcap")
        .display()
        .to_string();
    let o = export(&[cap], &out, &["--records", "--record-values"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for table in ["messages", "partitions", "records"] {
        let f = format!("{}/{table}/part-00000-00000.parquet", out.display());
        let (res, _) = query(
            &py,
            &[
                format!("select column_name, column_type from (describe select * from read_parquet('{f}'))"),
                format!("select name, repetition_type from parquet_schema('{f}') where name <> 'duckdb_schema' and name not in ('list', 'element')"),
                format!("select decode(key), decode(value) from parquet_kv_metadata('{f}') where decode(key) like 'kwire.%'"),
            ],
            &[],
        );
        let got = file_columns(&res[0].clone().unwrap(), &res[1].clone().unwrap());
        // The parquet_schema root row is named after the table in kwire's files.
        let got: Vec<_> = got.into_iter().filter(|g| g.0 != table).collect();
        assert_eq!(
            got,
            documented(table),
            "{table}: the file's columns against docs/parquet-format.md"
        );
        let kv: BTreeMap<String, String> = res[2]
            .clone()
            .unwrap()
            .iter()
            .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into()))
            .collect();
        assert_eq!(
            kv.get("kwire.format_version").map(String::as_str),
            Some("1")
        );
        assert_eq!(kv.get("kwire.table").map(String::as_str), Some(table));
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn partitioned_export_prunes() {
    let Some(py) = engine("partitioned_export_prunes") else {
        return;
    };
    let caps = lab(&["ck_produce_zstd.pcap", "kjs_group.pcap", "ck_admin.pcap"]);
    let flat = tmp("flat");
    assert!(export(&caps, &flat, &["--records"]).status.success());
    let total = sql1(
        &py,
        format!("select count(*) from {}", glob(&flat, "messages")),
    )[0][0]
        .clone();
    for by in ["api", "hour", "capture"] {
        let out = tmp(&format!("by-{by}"));
        // One open file per table: every switch of partition finishes a file.
        let o = export(
            &caps,
            &out,
            &[
                "--records",
                "--partition-by",
                by,
                "--max-open-files",
                "1",
                "--threads",
                "2",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let m = glob(&out, "messages");
        let n = sql1(&py, format!("select count(*) from {m}"))[0][0].clone();
        assert_eq!(n, total, "--partition-by {by}: all messages");
        let j = sql1(
            &py,
            format!(
                "select count(*) from {} anti join {m} using (message_id)",
                glob(&out, "records")
            ),
        );
        assert_eq!(j[0][0], 0, "--partition-by {by}: records join messages");
        let _ = std::fs::remove_dir_all(&out);
    }

    // Partitioned by API: keep one partition, corrupt every file of the others; a query
    // on the one kept still answers (the engine never opens the others), one over
    // everything fails. The one kept is the first the engine lists (`api=` folders in
    // name order): DuckDB reads the first file's footer for the schema.
    let out = tmp("prune");
    assert!(export(&caps, &out, &["--records", "--partition-by", "api"])
        .status
        .success());
    let mut corrupted = 0;
    for table in ["messages", "partitions"] {
        let mut dirs: Vec<String> = std::fs::read_dir(out.join(table))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        dirs.sort();
        let kept = dirs[0].clone();
        let api = kept.strip_prefix("api=").unwrap().to_string();
        let want = sql1(
            &py,
            format!(
                "select count(*) from {} where api_name = '{api}'",
                glob(&flat, table)
            ),
        )[0][0]
            .clone();
        assert!(want.as_u64().unwrap() > 0);
        for name in &dirs[1..] {
            assert!(name.starts_with("api="), "{name}");
            for f in std::fs::read_dir(out.join(table).join(name)).unwrap() {
                std::fs::write(f.unwrap().path(), b"not parquet at all").unwrap();
                corrupted += 1;
            }
        }
        let t = glob(&out, table);
        let (res, _) = query(
            &py,
            &[
                format!("select count(*) from {t} where api = '{api}'"),
                format!("select count(*) from {t}"),
            ],
            &[],
        );
        assert_eq!(
            res[0].as_ref().unwrap()[0][0],
            want,
            "{table}: pruned query"
        );
        assert!(
            res[1].is_err(),
            "{table}: a query over the corrupted files fails: {:?}",
            res[1]
        );
    }
    assert!(corrupted > 5, "{corrupted} files corrupted");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&flat);
}

#[test]
fn message_ids_are_stable_across_runs_and_threads() {
    let Some(py) = engine("message_ids_are_stable_across_runs_and_threads") else {
        return;
    };
    let caps = lab(&["kjs_group.pcap", "ck_produce_lz4.pcap", "ck_admin.pcap"]);
    let mut seen = Vec::new();
    for threads in ["1", "3"] {
        let out = tmp(&format!("ids-{threads}"));
        assert!(export(&caps, &out, &["--threads", threads])
            .status
            .success());
        seen.push(sql1(
            &py,
            format!(
                "select message_id, capture_index, message_index, capture, api_key, correlation_id, kind, time_ns
                 from {} order by message_id",
                glob(&out, "messages")
            ),
        ));
        let _ = std::fs::remove_dir_all(&out);
    }
    assert_eq!(seen[0], seen[1]);
    for r in &seen[0] {
        let id = r[0].as_i64().unwrap();
        assert_eq!(id, (r[1].as_i64().unwrap() << 40) + r[2].as_i64().unwrap());
    }
}

/// Every Parquet file under `dir`, and whether any temporary file is left.
fn files(dir: &Path) -> (Vec<PathBuf>, bool) {
    let (mut out, mut tmp) = (Vec::new(), false);
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let (f, t) = files(&p);
            out.extend(f);
            tmp |= t;
        } else if p.extension().is_some_and(|x| x == "tmp") {
            tmp = true;
        } else {
            out.push(p);
        }
    }
    (out, tmp)
}

#[test]
fn bad_input_is_named_and_the_rest_exports() {
    let out = tmp("bad");
    let good = repo()
        .join("captures/lab/ck_admin.pcap")
        .display()
        .to_string();
    let not_capture = repo().join("README.md").display().to_string();
    let missing = repo().join("captures/no-such.pcap").display().to_string();
    let o = export(
        &[missing.clone(), good.clone(), not_capture.clone()],
        &out,
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&missing) && err.contains(&not_capture),
        "{err}"
    );
    assert!(
        err.contains("2 of 3 captures could not be exported"),
        "{err}"
    );
    let (f, t) = files(&out);
    assert!(!t, "no temporary file is left");
    // The good capture (ordinal 1) has its messages and partitions files; the others none.
    let mut names: Vec<String> = f
        .iter()
        .map(|p| p.strip_prefix(&out).unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "messages/part-00001-00000.parquet",
            "partitions/part-00001-00000.parquet"
        ]
    );
    for p in &f {
        let b = std::fs::read(p).unwrap();
        assert!(
            b.starts_with(b"PAR1") && b.ends_with(b"PAR1"),
            "{}",
            p.display()
        );
    }

    // An existing folder is refused, and replaced with --force.
    let o = export(std::slice::from_ref(&good), &out, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let o = export(std::slice::from_ref(&good), &out, &["--force", "--records"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (f, _) = files(&out);
    let mut names: Vec<String> = f
        .iter()
        .map(|p| p.strip_prefix(&out).unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "keep.txt",
            "messages/part-00000-00000.parquet",
            "partitions/part-00000-00000.parquet",
            "records/part-00000-00000.parquet"
        ]
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn read_and_stats_take_several_captures() {
    let a = repo()
        .join("captures/lab/ck_admin.pcap")
        .display()
        .to_string();
    let b = repo()
        .join("captures/lab/kjs_group.pcap")
        .display()
        .to_string();
    let one = |c: &str| {
        let o = kwire(&["read", c, "--format", "json"]);
        assert!(o.status.success());
        String::from_utf8(o.stdout).unwrap()
    };
    let both = kwire(&["read", &a, &b, "--format", "json"]);
    assert!(both.status.success());
    let both = String::from_utf8(both.stdout).unwrap();
    let (la, lb) = (one(&a), one(&b));
    let lines: Vec<&str> = both.lines().collect();
    assert_eq!(lines.len(), la.lines().count() + lb.lines().count());
    // A's messages then B's, each as alone plus its capture.
    for (got, (want, cap)) in lines.iter().zip(
        la.lines()
            .map(|l| (l, &a))
            .chain(lb.lines().map(|l| (l, &b))),
    ) {
        let mut g: J = serde_json::from_str(got).unwrap();
        assert_eq!(g["capture"].as_str(), Some(cap.as_str()));
        g.as_object_mut().unwrap().remove("capture");
        let w: J = serde_json::from_str(want).unwrap();
        assert_eq!(g, w);
    }
    let missing = repo().join("captures/no-such.pcap").display().to_string();
    let o = kwire(&["stats", &a, &missing, &b, "--format", "json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&missing));
    let st: J = serde_json::from_slice(&o.stdout).unwrap();
    let caps: std::collections::BTreeSet<&str> = st["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["capture"].as_str().unwrap())
        .collect();
    assert_eq!(caps, [a.as_str(), b.as_str()].into_iter().collect());
}

/// Without an engine: the files read back with the `parquet` crate's own reader hold one
/// `messages` row per message `read --format json` prints, in its order.
#[test]
fn export_reads_back_without_an_engine() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    let caps = lab(&["ck_produce_gzip.pcap", "kp_admin.pcap"]);
    let out = tmp("readback");
    let o = export(&caps, &out, &["--records", "--compression", "snappy"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (i, cap) in caps.iter().enumerate() {
        let read = kwire(&["read", cap, "--format", "json"]);
        let want: Vec<J> = String::from_utf8(read.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let f =
            std::fs::File::open(out.join(format!("messages/part-{i:05}-00000.parquet"))).unwrap();
        let r = SerializedFileReader::new(f).unwrap();
        let kv = r
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .cloned()
            .unwrap_or_default();
        assert!(kv
            .iter()
            .any(|k| k.key == "kwire.format_version" && k.value.as_deref() == Some("1")));
        let rows: Vec<_> = r.get_row_iter(None).unwrap().map(Result::unwrap).collect();
        assert_eq!(rows.len(), want.len(), "{cap}");
        for (j, (row, w)) in rows.iter().zip(&want).enumerate() {
            assert_eq!(row.get_long(0).unwrap(), ((i as i64) << 40) + j as i64);
            assert_eq!(row.get_string(1).unwrap(), cap);
            assert_eq!(
                row.get_string(13).unwrap(),
                w["kind"].as_str().unwrap(),
                "{cap} #{j}"
            );
            assert_eq!(row.get_short(15).ok().map(i64::from), w["api_key"].as_i64());
            assert_eq!(row.get_long(21).unwrap(), w["size"].as_i64().unwrap());
            assert_eq!(row.get_long(4).unwrap(), w["frame"][0].as_i64().unwrap());
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// What one capture's tables hold, against what its tree shows (ck_produce_zstd: a
/// producer writing eight records to topic lab-zstd, a consumer fetching them by topic
/// id).
#[test]
fn tables_hold_what_the_tree_shows() {
    let Some(py) = engine("tables_hold_what_the_tree_shows") else {
        return;
    };
    let out = tmp("content");
    let caps = lab(&["ck_produce_zstd.pcap"]);
    let o = export(&caps, &out, &["--records", "--record-values"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (m, p, r) = (
        glob(&out, "messages"),
        glob(&out, "partitions"),
        glob(&out, "records"),
    );
    let (res, _) = query(
        &py,
        &[
            // Fetch names its topic by id: the name comes from the Metadata response.
            format!("select distinct topic, topic_id is not null from {p} where api_name = 'Fetch' order by all"),
            format!("select sum(records), string_agg(distinct codec, ',' order by codec) from {p} where api_name = 'Produce' and kind = 'request'"),
            format!("select count(*) from {p} where api_name = 'Produce' and kind = 'request' and codec = 'zstd' and (compressed_bytes is null or decompressed_bytes is null)"),
            format!("select count(*), count(*) filter (value_length is not distinct from octet_length(value)), count(distinct record_offset) filter (kind = 'response') from {r}"),
            format!("select decode(key), record_offset from {r} where kind = 'request' order by record_offset limit 1"),
            format!("select count(*) from {p} where api_name = 'Produce' and kind = 'response' and (base_offset is null or error_name <> 'NONE')"),
            format!("select count(*) from {m} m join {p} p using (message_id) where p.api_name = 'Fetch' and p.kind = 'response' and p.records > 0 and m.latency_ns is null"),
        ],
        &[],
    );
    let res: Vec<Vec<J>> = res.into_iter().map(Result::unwrap).collect();
    assert_eq!(res[0], vec![json!(["lab-zstd", true])]);
    assert_eq!(res[1][0][0], 8);
    assert!(
        res[1][0][1].as_str().unwrap().contains("zstd"),
        "{:?}",
        res[1]
    );
    assert_eq!(
        res[2][0][0], 0,
        "zstd batches have compressed and decompressed sizes"
    );
    assert_eq!(res[3][0][0], 16, "8 records produced and 8 fetched");
    assert_eq!(res[3][0][0], res[3][0][1], "value lengths");
    // A producer's batch starts at offset 0 (the broker assigns offsets); the fetched
    // records carry the log's offsets 0-7.
    assert_eq!(res[3][0][2], 8, "fetched offsets");
    assert_eq!(res[4][0], json!(["key-0", 0]));
    assert_eq!(res[5][0][0], 0);
    assert_eq!(res[6][0][0], 0);
    let _ = std::fs::remove_dir_all(&out);
}

/// A file holds at most 32 row groups (a writer keeps each row group's metadata until
/// its footer); the rows go on in the capture's next file, none lost.
#[test]
fn files_roll_after_32_row_groups() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let caps = lab(&["kjs_group.pcap"]);
    let out = tmp("roll");
    let o = export(&caps, &out, &["--row-group-rows", "1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = String::from_utf8(kwire(&["read", &caps[0], "--format", "json"]).stdout)
        .unwrap()
        .lines()
        .count();
    assert!(want > 32, "{want} messages");
    let mut names: Vec<String> = std::fs::read_dir(out.join("messages"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    let expect: Vec<String> = (0..want.div_ceil(32))
        .map(|n| format!("part-00000-{n:05}.parquet"))
        .collect();
    assert_eq!(names, expect);
    let (mut rows, mut groups) = (0, Vec::new());
    for n in &names {
        let r =
            SerializedFileReader::new(std::fs::File::open(out.join("messages").join(n)).unwrap())
                .unwrap();
        rows += r.metadata().file_metadata().num_rows() as usize;
        groups.push(r.metadata().num_row_groups());
    }
    assert_eq!(rows, want);
    assert_eq!(groups[0], 32);
    let _ = std::fs::remove_dir_all(&out);
}

/// A TLS capture exported with its key log: the decrypted messages, marked `tls`, as
/// `read` gives them with the same options.
#[test]
fn decrypted_messages_are_marked_tls() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    let lab = repo().join("captures/lab/tls/tls13_kp_aes256gcm");
    let (cap, keys) = (
        format!("{}.pcapng", lab.display()),
        format!("{}.keys", lab.display()),
    );
    let opts = ["--port", "9093", "--tls-keylog", keys.as_str()];
    let out = tmp("tls");
    let o = export(std::slice::from_ref(&cap), &out, &opts);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut args = vec!["read", cap.as_str(), "--format", "json"];
    args.extend(opts);
    let read = kwire(&args);
    let lines: Vec<J> = String::from_utf8(read.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    let f = std::fs::File::open(out.join("messages/part-00000-00000.parquet")).unwrap();
    let r = SerializedFileReader::new(f).unwrap();
    let rows: Vec<_> = r.get_row_iter(None).unwrap().map(Result::unwrap).collect();
    assert_eq!(rows.len(), lines.len());
    for (row, l) in rows.iter().zip(&lines) {
        assert_eq!(row.get_bool(14).unwrap(), l.get("tls").is_some());
    }
    assert!(
        rows.iter().any(|r| r.get_bool(14).unwrap()),
        "decrypted messages"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// The documented columns of a log directory's table (`## Log directories: \`batches\``).
fn documented_log(table: &str) -> Vec<(String, String, bool)> {
    documented_under(&format!("## Log directories: `{table}`"))
}

#[test]
fn log_directories_export_to_batches_and_records() {
    let Some(py) = engine("log_directories_export_to_batches_and_records") else {
        return;
    };
    let logdirs = repo().join("captures/logdirs").display().to_string();
    let out = tmp("logdirs");
    let o = export(
        std::slice::from_ref(&logdirs),
        &out,
        &["--records", "--record-values"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b = glob(&out, "batches");
    let r = glob(&out, "records");

    // Every batch `kwire log --format json` prints is a row, at its file and position,
    // with the records its tree holds; and the record types `kwire stats` counts.
    let o = kwire(&["log", &logdirs, "--format", "json"]);
    assert!(o.status.success());
    let mut want_batches = Vec::new();
    for line in String::from_utf8(o.stdout).unwrap().lines() {
        let v: J = serde_json::from_str(line).unwrap();
        if v["kind"] == "batch" {
            want_batches.push(json!([v["file"], v["position"], v["size"]]));
        }
    }
    let got = sql1(
        &py,
        format!("select file, position, size from {b} order by batch_id"),
    );
    assert_eq!(got, want_batches);
    let o = kwire(&["stats", &logdirs, "--format", "json"]);
    let stats: J = serde_json::from_slice(&o.stdout).unwrap();
    let got = sql1(
        &py,
        format!("select record_type, count(*) from {r} group by all order by all"),
    );
    let want: Vec<J> = stats["record_types"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| json!([k, n]))
        .collect();
    let mut want = want;
    want.sort_by_key(|a| a[0].as_str().unwrap().to_string());
    let mut got = got;
    got.sort_by_key(|a| a[0].as_str().unwrap().to_string());
    assert_eq!(got, want);
    // Counts from ../shared/captures/logdirs/MANIFEST.md for the codecrafters metadata
    // segment: 123 batches, 129 records, offsets 0..128, every CRC valid; the batches'
    // `records` equal their rows in `records` and their declared recordsCount.
    let got = sql1(
        &py,
        format!(
            "select count(*), sum(records), min(base_offset), max(last_offset), bool_and(crc_valid), \
             sum(records_count), (select count(*) from {r} where file like '%codecrafters_510714e/__cluster_metadata-0/%') \
             from {b} where file like '%codecrafters_510714e/__cluster_metadata-0/%'"
        ),
    );
    assert_eq!(got, vec![json!([123, 129, 0, 128, true, 129, 129])]);
    // The TopicRecord "foo" at offset 34, in the batch at byte 2456 (see tests/log_dirs.rs),
    // topic and partition from the folder name.
    let got = sql1(
        &py,
        format!(
            "select batch_position, record_offset, topic, partition, value_length from {r} \
             where record_type = 'TopicRecord v0' and file like '%codecrafters_510714e%'"
        ),
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        &got[0].as_array().unwrap()[..4],
        &[
            json!(2456),
            json!(34),
            json!("__cluster_metadata"),
            json!(0)
        ]
    );
    let got = sql1(
        &py,
        format!(
            "select list_contains(record_types, 'TopicRecord v0'), base_offset, last_offset from {b} \
             where position = 2456 and file like '%codecrafters_510714e/__cluster_metadata-0/%'"
        ),
    );
    assert_eq!(got, vec![json!([true, 34, 35])]);
    // __consumer_offsets-31's GroupMetadata record: its key's bytes as stored
    // (type 2, int16 length 21, "console-consumer-7889").
    let key = format!("00020015{}", hex(b"console-consumer-7889"));
    let got = sql1(
        &py,
        format!(
            "select distinct key, partition from {r} where topic = '__consumer_offsets' \
             and record_type = 'GroupMetadataValue v3' and file like '%__consumer_offsets-31%'"
        ),
    );
    assert_eq!(got, vec![json!([key, 31])]);
    // Tombstones have a null value; control records no key.
    let got = sql1(
        &py,
        format!(
            "select count(*) filter (where record_type like 'tombstone%' and value is not null), \
             count(*) filter (where control and key is not null), \
             count(*) filter (where record_type = 'SNAPSHOT_HEADER') from {r}"
        ),
    );
    assert_eq!(got, vec![json!([0, 0, 2])]);

    // The columns and their types are the documented ones; the files say their table.
    for table in ["batches", "records"] {
        let f = format!("{}/{table}/part-00000-00000.parquet", out.display());
        let (res, arrow) = query(
            &py,
            &[
                format!("select column_name, column_type from (describe select * from read_parquet('{f}'))"),
                format!("select name, repetition_type from parquet_schema('{f}') where name <> 'duckdb_schema' and name not in ('list', 'element')"),
                format!("select decode(value) from parquet_kv_metadata('{f}') where decode(key) = 'kwire.table'"),
            ],
            std::slice::from_ref(&f),
        );
        let got = file_columns(&res[0].clone().unwrap(), &res[1].clone().unwrap());
        assert_eq!(got, documented_log(table), "{table}");
        assert_eq!(res[2].clone().unwrap(), vec![json!([table])]);
        assert!(arrow[0].is_ok(), "pyarrow reads {f}: {:?}", arrow[0]);
    }

    // -Y keeps the batches `kwire log -Y` keeps.
    let out2 = tmp("logdirs-filtered");
    let o = export(
        std::slice::from_ref(&logdirs),
        &out2,
        &["--records", "-Y", "record_type == GroupMetadataValue"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = sql1(
        &py,
        format!(
            "select count(*), bool_and(list_contains(record_types, 'GroupMetadataValue v3')) from {}",
            glob(&out2, "batches")
        ),
    );
    assert_eq!(got, vec![json!([4, true])]);
    // A batch with a bad CRC mid-segment is a row that says so; the rest are clean.
    let d = tmp("logdirs-badcrc").join("__cluster_metadata-0");
    std::fs::create_dir_all(&d).unwrap();
    let mut seg = std::fs::read(repo().join(
        "captures/logdirs/codecrafters_510714e/__cluster_metadata-0/00000000000000000000.log",
    ))
    .unwrap();
    seg[2456 + 70] ^= 0xff;
    std::fs::write(d.join("00000000000000000000.log"), &seg).unwrap();
    let out3 = tmp("logdirs-badcrc-out");
    let o = export(&[d.display().to_string()], &out3, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("@2456"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let got = sql1(
        &py,
        format!(
            "select position, crc_valid, decode_errors > 0, first_error_offset >= 2456 from {}              where not crc_valid or decode_errors > 0",
            glob(&out3, "batches")
        ),
    );
    assert_eq!(got, vec![json!([2456, false, true, true])]);
    // Captures' options that do not apply to log directories are refused.
    let o = export(
        std::slice::from_ref(&logdirs),
        &tmp("logdirs-part"),
        &["--partition-by", "hour"],
    );
    assert!(!o.status.success());
}

fn hex(b: &[u8]) -> String {
    kwire::text::hex(b)
}

/// Every capture of the TLS lab exported at once with all their key logs, queried with
/// DuckDB: per capture, API and kind as many rows as `read --format json` prints with the
/// same key logs, every row marked `tls`, each row's correlation_id that of `read`,
/// and the decrypted Produce requests' records in `records` (topics and values as `read`
/// shows them).
#[test]
fn tls_lab_exports_its_decrypted_messages() {
    let test = "tls_lab_exports_its_decrypted_messages";
    let Some(py) = engine(test) else {
        return;
    };
    let dir = repo().join("captures/lab/tls");
    let mut caps: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcapng"))
        .map(|p| p.display().to_string())
        .collect();
    caps.sort();
    let mut opts: Vec<String> = vec!["--port".into(), "9093".into()];
    for c in caps.iter().filter(|c| !c.ends_with(".dsb.pcapng")) {
        opts.push("--tls-keylog".into());
        opts.push(c.replace(".pcapng", ".keys"));
    }
    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
    let out = tmp("tls-duckdb");
    let mut ex = opts.clone();
    ex.extend(["--records", "--record-values"]);
    let o = export(&caps, &out, &ex);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut args = vec!["read"];
    args.extend(caps.iter().map(String::as_str));
    args.extend(&opts);
    args.extend(["--format", "json"]);
    let read = kwire(&args);
    assert!(read.status.success());
    // (capture, api_name, kind) -> count; (capture, index) -> correlation_id
    let mut want: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    let mut ids: BTreeMap<(String, u64), J> = BTreeMap::new();
    let mut values: Vec<String> = Vec::new();
    let mut per_capture: BTreeMap<String, u64> = BTreeMap::new();
    for l in String::from_utf8(read.stdout).unwrap().lines() {
        let v: J = serde_json::from_str(l).unwrap();
        assert!(v.get("tls").is_some(), "not from TLS: {l}");
        let cap = v["capture"].as_str().unwrap().to_string();
        *want
            .entry((
                cap.clone(),
                v["api_name"].as_str().unwrap_or("").to_string(),
                v["kind"].as_str().unwrap().to_string(),
            ))
            .or_default() += 1;
        let i = per_capture.entry(cap.clone()).or_default();
        ids.insert((cap, *i), v["correlation_id"].clone());
        *i += 1;
        if v["api_name"] == "Produce" && v["kind"] == "request" {
            collect_values(&v["tree"], &mut values);
        }
    }
    assert_eq!(per_capture.len(), caps.len(), "every capture decrypts");
    let m = glob(&out, "messages");
    let r = glob(&out, "records");
    let got = rows_per_capture_api_kind(&py, &m);
    assert_eq!(got, want);
    let not_tls = sql1(&py, format!("select count(*) from {m} where not tls"));
    assert_eq!(not_tls[0][0], 0, "rows not marked tls");
    for row in sql1(
        &py,
        format!("select capture, message_index, correlation_id from {m}"),
    ) {
        let key = (
            row[0].as_str().unwrap().to_string(),
            row[1].as_u64().unwrap(),
        );
        assert_eq!(row[2], ids[&key], "{key:?}");
    }
    // the records of the decrypted Produce requests, with their values
    let rows = sql1(
        &py,
        format!(
            "select hex(value) from {r} rr join {m} mm using (message_id) \
             where mm.api_name = 'Produce' and mm.kind = 'request' and value is not null"
        ),
    );
    let mut got: Vec<String> = rows
        .iter()
        .map(|r| r[0].as_str().unwrap().to_lowercase())
        .collect();
    got.sort();
    values.sort();
    assert!(
        !values.is_empty(),
        "no record values in the Produce requests"
    );
    assert_eq!(got, values);
    let _ = std::fs::remove_dir_all(&out);
}

/// The hex of every record `value` in a `read --format json` tree.
fn collect_values(n: &J, out: &mut Vec<String>) {
    if n["name"] == "value" && n["type"] == "bytes" {
        if let Some(h) = n["value"].as_str() {
            out.push(h.to_lowercase());
        }
    }
    if let Some(kids) = n["children"].as_array() {
        for c in kids {
            collect_values(c, out);
        }
    }
}

/// A pcap of one client's Fetch v11 request and the broker's response, `parts` its
/// partitions' records fields (partition i of topic `big`), built with kwire's encoder.
fn fetch_capture(path: &Path, parts: &[Vec<u8>]) {
    use kwire::encode::{encode, to_hex};
    let schema = kwire::schema::Schema::embedded();
    let frame = |v: J| encode(&schema, &v).unwrap();
    let req = frame(json!({"kind": "request", "api_key": 1, "api_version": 11,
        "header": {"correlation_id": 7, "client_id": "export-test"},
        "body": {"ReplicaId": -1, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": 52_428_800,
            "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
            "Topics": [{"Topic": "big", "Partitions": (0..parts.len()).map(|i| json!(
                {"Partition": i, "CurrentLeaderEpoch": -1, "FetchOffset": 0,
                 "LogStartOffset": -1, "PartitionMaxBytes": 52_428_800})).collect::<Vec<_>>()}],
            "ForgottenTopicsData": [], "RackId": ""}}));
    let resp = frame(json!({"kind": "response", "api_key": 1, "api_version": 11,
        "header": {"correlation_id": 7},
        "body": {"ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": 0, "Responses": [
            {"Topic": "big", "Partitions": parts.iter().enumerate().map(|(i, r)| json!(
                {"PartitionIndex": i, "ErrorCode": 0, "HighWatermark": 60_000,
                 "LastStableOffset": 60_000, "LogStartOffset": 0, "AbortedTransactions": null,
                 "PreferredReadReplica": -1, "Records": to_hex(r)})).collect::<Vec<_>>()}]}}));
    std::fs::write(
        path,
        common::one_connection_pcap(&[(true, &req), (false, &resp)]),
    )
    .unwrap();
}

/// An uncompressed RecordBatch v2 at `base` of `count` records, each with key `k<i>` and
/// a value of `value_len` bytes.
fn numbered_batch(base: i64, count: usize, value_len: usize) -> Vec<u8> {
    use kwire::encode::records::{write_batch_v2, BatchHeader};
    fn zz(out: &mut Vec<u8>, v: i64) {
        let mut u = ((v << 1) ^ (v >> 63)) as u64;
        while u >= 0x80 {
            out.push(u as u8 | 0x80);
            u >>= 7;
        }
        out.push(u as u8);
    }
    let mut raw = Vec::new();
    for i in 0..count {
        let key = format!("k{i}");
        let mut body = vec![0u8]; // attributes
        zz(&mut body, i as i64); // timestampDelta
        zz(&mut body, i as i64); // offsetDelta
        zz(&mut body, key.len() as i64);
        body.extend(key.as_bytes());
        zz(&mut body, value_len as i64);
        body.extend(std::iter::repeat_n(b'v', value_len));
        zz(&mut body, 0); // headers
        zz(&mut raw, body.len() as i64);
        raw.extend(body);
    }
    let h = BatchHeader {
        base_offset: base,
        last_offset_delta: count as i32 - 1,
        base_timestamp: 1_714_564_800_000,
        max_timestamp: 1_714_564_800_000 + count as i64,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        partition_leader_epoch: -1,
        ..BatchHeader::default()
    };
    let mut b = Vec::new();
    write_batch_v2(&mut b, &h, count as i32, &raw).unwrap();
    b
}

/// Issue 25: a Fetch of 50,000 records in one 5.5 MB response exported 22,221 record rows
/// and said nothing (the tree's node budget cut the export). Every record and every
/// partition entry is a row, whatever the node budget, including the partition after
/// the one that spent it.
#[test]
fn a_fetch_past_the_node_budget_exports_every_record_and_partition() {
    let Some(py) = engine("a_fetch_past_the_node_budget_exports_every_record_and_partition") else {
        return;
    };
    let dir = tmp("node-budget");
    std::fs::create_dir_all(&dir).unwrap();
    let cap = dir.join("fetch-50k.pcap");
    let big = numbered_batch(0, 50_000, 100);
    assert!(big.len() > 5_400_000, "{} bytes", big.len());
    fetch_capture(&cap, &[big, numbered_batch(50_000, 10, 5)]);
    let out = dir.join("out");
    let o = export(&[cap.display().to_string()], &out, &["--records"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("50010 records") || said.contains("50,010 records"),
        "{said}"
    );
    let (p, r) = (glob(&out, "partitions"), glob(&out, "records"));
    let (res, _) = query(
        &py,
        &[
            format!("select count(*), count(distinct record_offset), min(record_offset), max(record_offset) from {r}"),
            format!("select partition, count(*) from {r} group by partition order by partition"),
            format!("select kind, count(*), sum(records) from {p} group by kind order by kind"),
            format!("select count(*) from {r} where decode(key) <> 'k' || (record_offset % 50000) or value_length not in (100, 5)"),
        ],
        &[],
    );
    let res: Vec<Vec<J>> = res.into_iter().map(Result::unwrap).collect();
    assert_eq!(res[0][0], json!([50_010, 50_010, 0, 50_009]));
    assert_eq!(res[1], vec![json!([0, 50_000]), json!([1, 10])]);
    assert_eq!(
        res[2],
        vec![json!(["request", 2, null]), json!(["response", 2, 50_010])]
    );
    assert_eq!(res[3][0][0], 0, "keys and value lengths as written");
    let _ = std::fs::remove_dir_all(&dir);
}
