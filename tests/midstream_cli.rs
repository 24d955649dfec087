//! Mid-stream captures and frames of unknown layout as a user meets them, through the
//! command line: captures cut with editcap (the cases of issue 13), lone responses and
//! frames of unknown direction in `decode`, `encode --lines` round trips for every
//! capture in the repository, and the ApiVersions UNSUPPORTED_VERSION answers as bare
//! bodies.

mod common;
use common::kwire;

use assert_cmd::Command;
use serde_json::Value as J;
use std::path::{Path, PathBuf};

/// stdout and stderr of a successful run.
fn run(c: &mut Command) -> (String, String) {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// A fresh folder for this process's cut captures, under the build's target folder.
fn tmp() -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("midstream-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn captures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("captures")
}

/// `editcap -r IN OUT RANGE` into a temporary file, or `None` (the test says it skips)
/// without editcap.
fn editcap(test: &str, input: &Path, range: &str, dir: &Path) -> Option<PathBuf> {
    let out = dir.join(format!("cut-{range}.pcapng"));
    match std::process::Command::new("editcap")
        .arg("-r")
        .arg(input)
        .arg(&out)
        .arg(range)
        .status()
    {
        Ok(s) if s.success() => Some(out),
        _ => {
            common::skip(test, "editcap (Wireshark's) is not installed");
            None
        }
    }
}

/// The `#N` / `#N-M` frame numbers of summary lines, last record of each.
fn last_records(summary: &str) -> Vec<u64> {
    summary
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| {
            let f = l.split(' ').next().unwrap();
            f.rsplit('-').next().unwrap().parse().unwrap()
        })
        .collect()
}

#[test]
fn cut_demo_prints_in_frame_order_in_every_format() {
    let dir = tmp();
    let t = "cut_demo_prints_in_frame_order_in_every_format";
    let Some(nosyn) = editcap(t, &captures().join("demo.pcap"), "4-92", &dir) else {
        return;
    };
    let (summary, _) = run(kwire()
        .arg("read")
        .arg(&nosyn)
        .args(["--format", "summary"]));
    let recs = last_records(&summary);
    assert!(recs.len() > 10, "{summary}");
    assert!(recs.windows(2).all(|w| w[0] <= w[1]), "{recs:?}");
    assert_eq!(&recs[..4], &[1, 3, 5, 6], "{summary}");
    let (json, _) = run(kwire().arg("read").arg(&nosyn).args(["--format", "json"]));
    let frames: Vec<u64> = json
        .lines()
        .map(|l| {
            serde_json::from_str::<J>(l).unwrap()["frame"][1]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(frames, recs);
    let (text, _) = run(kwire().arg("read").arg(&nosyn).args(["--no-bytes"]));
    let titles: Vec<u64> = text
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            let f = l[1..].split(' ').next().unwrap();
            f.rsplit('-').next().unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(titles, recs);
}

#[test]
fn cut_librdkafka_session_pairs_a_response_after_its_held_request() {
    let dir = tmp();
    let t = "cut_librdkafka_session_pairs_a_response_after_its_held_request";
    let whole = captures().join("lab/mixed_large.pcapng");
    let Some(mid) = editcap(t, &whole, "28-490", &dir) else {
        return;
    };
    let (summary, closing) = run(kwire().arg("read").arg(&mid).args(["--format", "summary"]));
    let lines: Vec<&str> = summary.lines().collect();
    let req = lines
        .iter()
        .position(|l| l.starts_with("#9-10 ") && l.contains("Produce v10 request corr=5"))
        .expect(&summary);
    let resp = lines
        .iter()
        .position(|l| l.starts_with("#12 "))
        .expect(&summary);
    assert!(req < resp, "{summary}");
    assert!(
        lines[resp].contains("Produce v10 response corr=5") && lines[resp].contains("latency="),
        "{}",
        lines[resp]
    );
    assert!(!summary.contains("request not seen"), "{summary}");
    // The first response answers a request sent before the capture began; the one
    // request left waiting is the one the whole capture leaves waiting too.
    assert!(
        closing.contains(
            ", 1 unanswered request, 1 response to requests sent before the capture began;"
        ),
        "{closing}"
    );
    let (_, whole_closing) = run(kwire()
        .arg("read")
        .arg(&whole)
        .args(["--format", "summary"]));
    assert!(
        whole_closing.contains(", 1 unanswered request;"),
        "{whole_closing}"
    );
}

#[test]
fn capture_starting_with_a_server_packet_pairs_the_first_request() {
    let dir = tmp();
    let t = "capture_starting_with_a_server_packet_pairs_the_first_request";
    // demo.pcap record 6 is the broker's ApiVersions answer, record 8 the client's
    // Metadata request: from record 6 on, the server speaks first.
    let Some(cut) = editcap(t, &captures().join("demo.pcap"), "6-92", &dir) else {
        return;
    };
    let (summary, closing) = run(kwire().arg("read").arg(&cut).args(["--format", "summary"]));
    let first = summary.lines().next().unwrap();
    assert!(
        first.starts_with("#1 ") && first.contains("response"),
        "{summary}"
    );
    let lines: Vec<&str> = summary.lines().collect();
    let req = lines
        .iter()
        .position(|l| l.contains("Metadata v12 request corr=2"))
        .expect(&summary);
    let resp = lines
        .iter()
        .position(|l| l.contains("Metadata v12 response corr=2"))
        .expect(&summary);
    assert!(req < resp && lines[resp].contains("latency="), "{summary}");
    // The requests left waiting are the ones the whole capture leaves waiting.
    let (_, whole) = run(kwire()
        .arg("read")
        .arg(captures().join("demo.pcap"))
        .args(["--format", "summary"]));
    let waiting = |c: &str| {
        let head = c.split(" unanswered request").next().unwrap_or("");
        head.rsplit(' ').next().unwrap_or("").to_string()
    };
    assert_eq!(waiting(&closing), waiting(&whole), "{closing}");
    assert!(
        closing.contains("1 response to requests sent before the capture began"),
        "{closing}"
    );
}

#[test]
fn decode_guesses_lone_responses_and_pairs_a_response_after_its_request() {
    // ApiVersions v3 request (corr 4, client "x"), then the broker's v0 answer with
    // UNSUPPORTED_VERSION, as Kafka 0.10.2 sends it.
    let req = "0000000f001200030000000400017800010100";
    let resp = "0000000a00000004002300000000";
    let (out, _) = run(kwire().args([
        "decode",
        "--hex",
        &format!("{req}{resp}"),
        "--format",
        "summary",
    ]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("ApiVersions v3 request corr=4"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("ApiVersions v0 response corr=4"),
        "{out}"
    );
    assert!(!lines[1].contains("guessed"), "{out}");
    // Alone, without --api-key: a ranked guess, marked, runners-up listed in the JSON.
    let (json, _) = run(kwire().args([
        "decode", "--hex", resp, "--kind", "response", "--format", "json",
    ]));
    let j: J = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(j["guessed"], true, "{j}");
    let c = j["candidates"].as_array().unwrap();
    assert!(c.len() > 1, "{j}");
    assert_eq!(c[0]["api_key"], j["api_key"]);
    assert!(c
        .iter()
        .all(|x| x["kind"] == "response" && x["score"].is_number()));
    // Too short for a header: nothing is known, and the JSON says null, never -1.
    let (json, _) = run(kwire().args(["decode", "--hex", "00000002abcd", "--format", "json"]));
    let j: J = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert!(j["api_key"].is_null() && j["api_version"].is_null() && j["api_name"].is_null());
    let (text, _) = run(kwire().args(["decode", "--hex", "00000002abcd", "--no-bytes"]));
    assert!(!text.contains("-1"), "{text}");
    assert!(text.starts_with("? request"), "{text}");
}

#[test]
fn unsupported_version_bodies_decode_in_v0_with_body_only() {
    // sarama's recorded answers: Kafka 0.10.2.1 and 2.4.0 to ApiVersions v3, Kafka 4.1.0
    // to v4.
    for (body, asked, max) in [
        ("002300000000", 3, None),
        ("002300000001001200000003", 3, Some(3)),
        ("002300000001001200000004", 4, Some(4)),
    ] {
        let asked_s = asked.to_string();
        let bare = |format: &str| {
            let (out, _) = run(kwire().args([
                "decode",
                "--hex",
                body,
                "--body-only",
                "--api-key",
                "18",
                "--api-version",
                &asked_s,
                "--kind",
                "response",
                "--format",
                format,
            ]));
            serde_json::from_str::<J>(out.lines().next().unwrap()).unwrap()
        };
        let j = bare("json");
        assert_eq!(j["api_version"], 0, "{body}: {j}");
        assert_eq!(j["errors"], serde_json::json!([]), "{body}: {j}");
        let w = j["warnings"][0]["message"].as_str().unwrap();
        assert!(
            w.contains(&format!("ApiVersions v{asked}")) && w.contains("UNSUPPORTED_VERSION"),
            "{w}"
        );
        let v = bare("values");
        assert_eq!(v["body"]["ErrorCode"], 35, "{v}");
        let keys = v["body"]["ApiKeys"].as_array().unwrap();
        match max {
            None => assert!(keys.is_empty()),
            Some(m) => {
                assert_eq!(keys.len(), 1);
                assert_eq!(keys[0]["ApiKey"], 18);
                assert_eq!(keys[0]["MaxVersion"], m);
            }
        }
        assert!(v["body"].get("ThrottleTimeMs").is_none(), "{v}");
    }
}

#[test]
fn values_encode_lines_decode_round_trip_for_every_capture() {
    let mut files: Vec<PathBuf> = vec![captures().join("demo.pcap")];
    for e in std::fs::read_dir(captures().join("lab")).unwrap() {
        let p = e.unwrap().path();
        // The small-snaplen capture's cut requests do not encode, so their responses
        // come back as guesses.
        let snaplen = p.to_string_lossy().contains("var_snaplen200");
        if matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("pcap" | "pcapng")
        ) && !snaplen
        {
            files.push(p);
        }
    }
    files.sort();
    let mut messages = 0;
    for f in &files {
        let (all, _) = run(kwire().arg("read").arg(f).args(["--format", "values"]));
        // The broker's known-bad frames (tests/corpus.rs) do not encode: left out.
        let (json, _) = run(kwire().arg("read").arg(f).args(["--format", "json"]));
        let values: String = all
            .lines()
            .zip(json.lines())
            .filter(|(_, j)| {
                serde_json::from_str::<J>(j).unwrap()["errors"] == serde_json::json!([])
            })
            .map(|(v, _)| format!("{v}\n"))
            .collect();
        let (lines, _) = run(kwire()
            .args(["encode", "--lines", "-"])
            .write_stdin(values.clone()));
        assert!(
            lines
                .lines()
                .all(|l| l.starts_with("c>s ") || l.starts_with("s>c ")),
            "{}",
            f.display()
        );
        // Plain encode keeps bare hex lines.
        let (plain, _) = run(kwire().args(["encode", "-"]).write_stdin(values.clone()));
        assert_eq!(
            plain.lines().collect::<Vec<_>>(),
            lines.lines().map(|l| &l[4..]).collect::<Vec<_>>()
        );
        let (back, _) = run(kwire()
            .args(["decode", "--hex-file", "-", "--format", "values"])
            .write_stdin(lines));
        let a: Vec<&str> = values.lines().collect();
        let b: Vec<&str> = back.lines().collect();
        assert_eq!(a.len(), b.len(), "{}", f.display());
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x, y, "{}: message {}", f.display(), i + 1);
        }
        messages += a.len();
    }
    eprintln!("round trips: {} captures, {messages} messages", files.len());
    assert!(files.len() > 40 && messages > 1000);
}
