//! The HTML page of DeleteTopics v6 in a real browser: Debian's Chromium, headless,
//! driven by `tests/browser/page-check.mjs` (playwright-core from npm, no browser
//! download; `.ci/run` installs both). The page loads from a `file://` URL with no
//! console errors and nothing fetched, hovering a tree row marks its bytes, hovering a
//! byte marks the deepest row, clicking a row selects it; a screenshot goes under
//! `target/page-browser/`.
//!
//! Without Chromium, Node.js or `tests/browser/node_modules` the test says it skips
//! (and fails under `KWIRE_NO_SKIP=1`).

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn skip(why: &str) {
    if std::env::var("KWIRE_NO_SKIP").as_deref() == Ok("1") {
        panic!("html_page_in_chromium: {why}, and KWIRE_NO_SKIP=1 forbids skipping");
    }
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("html_page_in_chromium: skipped: {why} (see .ci/run for the install steps)\n")
            .as_bytes(),
    );
}

fn has_node() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The repository, Chromium, `tests/browser` and the screenshot folder, or `None` after
/// saying why the test skips.
fn browser_or_skip() -> Option<(&'static Path, PathBuf, PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chromium = std::env::var_os("KWIRE_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.exists() {
        skip(&format!("no Chromium at {}", chromium.display()));
        return None;
    }
    if !has_node() {
        skip("no node");
        return None;
    }
    let browser = root.join("tests/browser");
    if !browser.join("node_modules/playwright-core").exists() {
        skip("tests/browser/node_modules/playwright-core is not installed");
        return None;
    }
    let out_dir = root.join("target/page-browser");
    std::fs::create_dir_all(&out_dir).unwrap();
    Some((root, chromium, browser, out_dir))
}

#[test]
fn html_page_in_chromium() {
    let Some((_, chromium, browser, out_dir)) = browser_or_skip() else {
        return;
    };
    let html = Command::cargo_bin("kwire")
        .unwrap()
        .env_remove("KWIRE_SCHEMA")
        .args(["page", "DeleteTopics", "--format", "html"])
        .output()
        .unwrap();
    assert!(html.status.success());
    let page = out_dir.join("DeleteTopics.html");
    std::fs::write(&page, &html.stdout).unwrap();
    let shot = out_dir.join("DeleteTopics.png");
    std::fs::remove_file(&shot).ok();
    let run = std::process::Command::new("node")
        .current_dir(&browser)
        .arg("page-check.mjs")
        .arg(&page)
        .arg(&shot)
        .env("KWIRE_CHROMIUM", &chromium)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "page-check failed:\n{stdout}\n{stderr}"
    );
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    println!("screenshot: {}", shot.display());
    eprintln!("html_page_in_chromium: screenshot: {}", shot.display());
}

/// `kwire read captures/demo.pcap --format html` in Chromium at 1400 px: the contents
/// list, requests beside responses, hover linking, no horizontal scroll
/// (`tests/browser/frames-check.mjs`); a screenshot goes under `target/page-browser/`.
#[test]
fn captured_messages_in_chromium() {
    let Some((root, chromium, browser, out_dir)) = browser_or_skip() else {
        return;
    };
    let html = Command::cargo_bin("kwire")
        .unwrap()
        .env_remove("KWIRE_SCHEMA")
        .args(["read", "captures/demo.pcap", "--format", "html"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        html.status.success(),
        "{}",
        String::from_utf8_lossy(&html.stderr)
    );
    let doc = out_dir.join("demo-capture.html");
    std::fs::write(&doc, &html.stdout).unwrap();
    let shot = out_dir.join("demo-capture.png");
    std::fs::remove_file(&shot).ok();
    let run = std::process::Command::new("node")
        .current_dir(&browser)
        .arg("frames-check.mjs")
        .arg(&doc)
        .arg(&shot)
        .env("KWIRE_CHROMIUM", &chromium)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "frames-check failed:\n{stdout}\n{stderr}"
    );
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    eprintln!("captured_messages_in_chromium: {report}");
}
