//! `kwire read/decode --format md|html`: captured messages laid out as reference pages.

mod common;
use common::kwire;

use assert_cmd::Command;

fn out(c: &mut Command) -> String {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn markdown_of_chosen_messages() {
    let s = out(kwire().args([
        "read",
        "captures/demo.pcap",
        "--api",
        "Produce",
        "--format",
        "md",
    ]));
    let heads: Vec<&str> = s.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(heads[0], "## 1. Produce v10 request");
    assert_eq!(heads[1], "## 2. Produce v10 response");
    assert!(s.contains("`#21 2026-11-29T"), "{s}");
    // The legend lists only the regions present: a Produce response has no records.
    let second = s
        .split("## 2. ")
        .nth(1)
        .unwrap()
        .split("## 3. ")
        .next()
        .unwrap();
    let legend: Vec<&str> = second
        .lines()
        .filter(|l| l.starts_with("- "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        legend,
        vec![
            "- frame",
            "- rpc header",
            "- response body",
            "- tagged_fields"
        ]
    );
    assert!(s.contains("|       |       |       +-- baseOffset int64 = 0 [0x002e, 8B]"));
    // Fenced blocks are balanced.
    assert_eq!(s.matches("```").count() % 2, 0);
}

#[test]
fn html_of_a_whole_capture() {
    let s = out(kwire().args(["read", "captures/demo.pcap", "--format", "html"]));
    assert!(s.starts_with("<!DOCTYPE html>"));
    assert!(
        !s.contains("http://") && !s.contains("https://"),
        "nothing fetched"
    );
    let sections = s.matches("<section class=\"msg\"").count();
    let links = s.matches("<li><a href=\"#m").count();
    let pairs = s.matches("<div class=\"pair\">").count();
    assert!(sections > 10);
    // Every request with its response in the capture is one pair, listed once.
    assert_eq!(sections, links + pairs);
    assert!(s.contains("<a href=\"#m1\">ApiVersions v3 request, correlation_id 1</a> · <a href=\"#m2\">response</a>"));
    // Every tree row has its whole text as a tooltip.
    let rows = s.matches("<div class=\"row\" tabindex=\"0\"").count();
    let titled = s.matches("data-d=\"").count();
    assert_eq!(rows, titled);
}

#[test]
fn decode_writes_pages_too() {
    let hex = "0000001d0014000600000007ffff000201610000000000000000000000000000000000000000753000";
    let s = out(kwire().args(["decode", "--hex", hex, "--format", "md"]));
    assert!(s.starts_with("## 1. DeleteTopics v6 request\n"), "{s}");
    let h = out(kwire().args(["decode", "--hex", hex, "--format", "html"]));
    assert!(h.contains("<section class=\"msg\" id=\"m1\">"));
    assert!(h.contains("data-g=\"m1-0\""));
}
