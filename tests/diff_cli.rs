//! `kwire diff` as a user runs it: version steps, releases, a user's own definitions,
//! the three formats, the errors, and the `NAME-vN-diff` pages of `kwire pages`.

use assert_cmd::Command;
use serde_json::Value as J;
use std::path::{Path, PathBuf};

fn kwire() -> Command {
    let mut c = Command::cargo_bin("kwire").unwrap();
    c.env_remove("KWIRE_SCHEMA").env_remove("NO_COLOR");
    c
}

fn out(c: &mut Command) -> String {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn err(c: &mut Command) -> String {
    let o = c.output().unwrap();
    assert!(!o.status.success(), "expected a failure");
    String::from_utf8(o.stderr).unwrap()
}

fn user_schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diff-user")
}

#[test]
fn fetch_12_to_13_as_text() {
    let s = out(kwire().args(["diff", "Fetch", "v12", "v13", "--color", "never"]));
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines[0], "Fetch v12 (4.4) -> v13 (4.4)");
    assert!(
        s.contains("+ Topics[].TopicId               added (uuid)  [+16 B per topic]"),
        "{s}"
    );
    assert!(s.contains("- Topics[].Topic"), "{s}");
    assert!(
        s.contains("+ Responses[].TopicId  added (uuid)  [+16 B per response]"),
        "{s}"
    );
    assert!(!s.contains('\x1b'));
}

#[test]
fn colour_marks_added_and_removed() {
    let s = out(kwire().args(["diff", "Fetch", "13", "--color", "always"]));
    assert!(s.contains("\x1b[32m    + Topics[].TopicId"), "{s:?}");
    assert!(s.contains("\x1b[31m    - Topics[].Topic "), "{s:?}");
}

#[test]
fn every_step_when_no_version_is_given() {
    let s = out(kwire().args(["diff", "DeleteTopics", "--format", "json"]));
    let v: J = serde_json::from_str(&s).unwrap();
    let steps = v.as_array().unwrap();
    // DeleteTopics has v0 (3.9) to v6: six steps.
    assert_eq!(steps.len(), 6);
    assert_eq!(steps[0]["from"]["version"], 0);
    assert_eq!(steps[0]["from"]["source"], "3.9");
    // v3 -> v4 is the flexible boundary; the request header goes v1 -> v2.
    let req = &steps[3]["messages"][0];
    assert_eq!(req["kind"], "request");
    assert_eq!(req["header_version"]["from"], 1);
    assert_eq!(req["header_version"]["to"], 2);
    assert_eq!(req["flexible"]["to"], true);
    let changes = req["changes"].as_array().unwrap();
    assert!(changes
        .iter()
        .any(|c| c["change"] == "flexible" && c["wire"] == "compact from here"));
    // v5 -> v6: Topics[] by name or id replaces TopicNames.
    let req6 = &steps[5]["messages"][0]["changes"];
    let paths: Vec<&str> = req6
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["Topics", "TopicNames"], "{req6}");
}

#[test]
fn markdown_tables() {
    let s = out(kwire().args(["diff", "Fetch", "v12", "v13", "--format", "md"]));
    assert!(s.starts_with("# Fetch v12 (4.4) -> v13 (4.4)\n"), "{s}");
    assert!(
        s.contains("| `Topics[].TopicId` | added |  | uuid | +16 B per topic |"),
        "{s}"
    );
}

#[test]
fn releases_list_kip_896_removals() {
    let s = out(kwire().args(["diff", "--release", "3.9", "4.0", "--color", "never"]));
    assert!(s.contains("Produce (0): v0-2 removed"), "{s}");
    assert!(
        s.contains("LeaderAndIsr (4): API removed (had v0-7)"),
        "{s}"
    );
    let j = out(kwire().args(["diff", "--release", "3.9", "4.3", "--format", "json"]));
    let v: J = serde_json::from_str(&j).unwrap();
    let produce = v["apis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["api_key"] == 0)
        .unwrap();
    assert_eq!(produce["removed"], serde_json::json!([0, 1, 2]));
    assert_eq!(produce["from_versions"], "0-11");
}

#[test]
fn one_api_between_releases() {
    let s = out(kwire().args([
        "diff",
        "Produce",
        "--release",
        "3.9",
        "4.4",
        "--color",
        "never",
    ]));
    assert!(
        s.starts_with("Kafka 3.9 -> 4.4: Produce (0): v0-2 removed;"),
        "{s}"
    );
    assert!(s.contains("Produce v11 (3.9) -> v13 (4.4)"), "{s}");
    assert!(s.contains("TopicData[].TopicId"), "{s}");
}

#[test]
fn a_users_definitions_against_the_embedded_ones() {
    let s = out(kwire().arg("--schema").arg(user_schema()).args([
        "diff",
        "DeleteTopics",
        "--release",
        "4.4",
        "user",
        "--color",
        "never",
    ]));
    assert!(s.contains("DeleteTopics v6 (4.4) -> v6 (user)"), "{s}");
    assert!(
        s.contains("TimeoutMs        type: int32 -> int64  [+4 B]"),
        "{s}"
    );
    assert!(
        s.contains("Topics[].Name    nullable: nullable -> not null"),
        "{s}"
    );
    assert!(s.contains("Topics[].Name    default: null -> x"), "{s}");
    assert!(
        s.contains("+ Topics[].Reason  added (string)  [0 B unless set (tag 0)]"),
        "{s}"
    );
    assert!(
        s.contains("response DeleteTopicsResponse: only in v6 (4.4)"),
        "{s}"
    );
}

#[test]
fn errors_name_what_is_missing() {
    let e = err(kwire().args(["diff", "NoSuchApi"]));
    assert!(e.contains("no API named \"NoSuchApi\""), "{e}");
    let e = err(kwire().args(["diff", "Fetch", "v12", "v99"]));
    assert!(e.contains("Fetch has no v99 (its versions: 0-18)"), "{e}");
    let e = err(kwire().args(["diff", "--release", "2.8", "4.3"]));
    assert!(e.contains("release 2.8 is not in the schema stack"), "{e}");
    let e = err(kwire().args(["diff", "Fetch", "--release", "4.3", "5.0"]));
    assert!(e.contains("release 5.0 is not in the schema stack"), "{e}");
    let e = err(kwire().args(["diff", "Fetch", "vx"]));
    assert!(e.contains("\"vx\" is not a version"), "{e}");
    let e = err(kwire().args(["diff", "LeaderAndIsr", "--release", "4.0", "4.3"]));
    assert!(e.contains("neither 4.0 nor 4.3 has LeaderAndIsr"), "{e}");
}

#[test]
fn pages_write_a_diff_page_per_version_and_link_it() {
    let dir = std::env::temp_dir().join(format!("kwire-diff-pages-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    out(kwire()
        .args(["pages", "--format", "md", "--all-versions", "--out"])
        .arg(&dir));
    let v13 = std::fs::read_to_string(dir.join("Fetch-v13.md")).unwrap();
    assert!(
        v13.contains("[All APIs](index.md) · [What changed since v12](Fetch-v13-diff.md)"),
        "{}",
        &v13[..200]
    );
    let d = std::fs::read_to_string(dir.join("Fetch-v13-diff.md")).unwrap();
    assert!(
        d.starts_with("# Fetch v13: what changed since v12\n"),
        "{d}"
    );
    assert!(d.contains("| `Topics[].TopicId` | added |  | uuid | +16 B per topic |"));
    // The first version has nothing before it: no diff page, no link.
    assert!(!dir.join("Fetch-v0-diff.md").exists());
    let v0 = std::fs::read_to_string(dir.join("Fetch-v0.md")).unwrap();
    assert!(!v0.contains("-diff.md"));
    // Every version page after the first links to a diff page that exists.
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        for part in text.split("](").skip(1) {
            let f = part.split(')').next().unwrap();
            if f.ends_with("-diff.md") {
                assert!(dir.join(f).exists(), "{}: {f}", p.display());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
