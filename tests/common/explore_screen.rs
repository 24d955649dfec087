//! Helpers for the tests that drive `kwire explore` in tmux (`tests/explore.rs`,
//! `tests/explore_live.rs`): whether tmux is there, a `capture-pane -e` line as cells
//! with their reverse-video flag, and the list pane's lines of a screen.
#![allow(dead_code)]

use std::process::Command;

/// Whether tmux runs here; says the skip when it does not.
pub fn have_tmux(test: &str) -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        super::skip(test, "tmux is not installed");
    }
    ok
}

/// A line of `capture-pane -e` as its characters, each with whether it is in reverse
/// video.
pub fn reverse_cells(line: &str) -> Vec<(char, bool)> {
    let mut out = Vec::new();
    let mut rev = false;
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\x1b' {
            out.push((c, rev));
            continue;
        }
        if it.peek() != Some(&'[') {
            continue;
        }
        it.next();
        let mut params = String::new();
        let mut fin = ' ';
        for d in it.by_ref() {
            if d.is_ascii_digit() || d == ';' || d == ':' {
                params.push(d);
            } else {
                fin = d;
                break;
            }
        }
        if fin != 'm' {
            continue;
        }
        let ps: Vec<&str> = params.split(';').collect();
        let mut i = 0;
        while i < ps.len() {
            match ps[i] {
                "" | "0" => rev = false,
                "7" => rev = true,
                "27" => rev = false,
                "38" | "48" | "58" => {
                    i += if ps.get(i + 1) == Some(&"5") { 2 } else { 4 };
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// The list pane's lines: between the `Messages` title and the `Tree` title.
pub fn list_lines(screen: &[String]) -> Vec<String> {
    let start = screen
        .iter()
        .position(|l| l.contains("Messages ("))
        .expect("the list's title");
    // Up to the tree's title, or the status bar when the list is zoomed.
    let end = screen
        .iter()
        .position(|l| l.contains(" Tree"))
        .unwrap_or(screen.len() - 1);
    screen[start + 1..end]
        .iter()
        .filter(|l| !l.is_empty())
        .cloned()
        .collect()
}
