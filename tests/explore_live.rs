//! `kwire explore` on live input (issues 23 and 24): a live capture (`explore -i lo`) and a
//! capture file that grows while the explorer reads it. tmux runs the explorer in a
//! detached 200x50 session (keys with `send-keys`, the screen with `capture-pane`, as in
//! `tests/explore.rs`); the live tests replay a committed capture onto the loopback
//! interface with tcpreplay, rewritten by tcprewrite to a free port of their own (as in
//! `tests/live_capture.rs`), and compare the list with `kwire read` of the same packets.
//!
//! Traffic is bounded: one replay of `captures/demo.pcap` (92 packets, 13 kB) a test, on
//! `lo` only, between 127.0.0.1 addresses; every capture has `-a duration:60` besides the
//! test's own end, and every wait a deadline. The live tests need root, tmux, dumpcap,
//! tcpreplay and tcprewrite (the fallback's, tcpdump too), the growing-file test tmux only; without them they say why
//! they skip, and fail instead under `KWIRE_NO_SKIP=1`.

mod common;

use common::explore_screen::{have_tmux, list_lines, reverse_cells};
use common::live::{demo_on, free_port, on_path, replay};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DEMO: &str = "captures/demo.pcap";

fn kwire_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kwire"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether this test can capture and replay: root, tmux and the programs.
fn can_capture(test: &str) -> bool {
    common::live::can_capture(test, &["dumpcap", "tcpreplay", "tcprewrite"]) && have_tmux(test)
}

/// A folder of the test's own under target/ (removed by the test when it passes).
fn scratch(test: &str) -> PathBuf {
    let d = root()
        .join("target")
        .join(format!("explore-live-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The running capture programs with `port` in their command line.
fn capture_children(port: u16) -> Vec<String> {
    let needle = format!("port {port}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        // The program itself (its first word), not a shell or tmux naming it.
        let program = cmd.split(' ').next().unwrap_or("");
        let capturer = Path::new(program)
            .file_name()
            .is_some_and(|n| n == "dumpcap" || n == "tcpdump");
        if capturer && cmd.contains(&needle) {
            found.push(cmd);
        }
    }
    found
}

/// No capture program for `port` is running, nor left unreaped: kwire reaped its child.
fn no_child_left(port: u16) {
    let left = capture_children(port);
    assert!(left.is_empty(), "capture children still there: {left:?}");
}

/// A detached tmux session running a shell script, on a tmux server of its own.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// `kwire explore ARGS`, then `KWIRE_EXIT=<status>` on the screen.
    fn explore(test: &str, args: &[&str]) -> Tmux {
        Tmux::explore_path(test, None, args)
    }

    /// [`Tmux::explore`] with kwire's `PATH` set to `path`.
    fn explore_path(test: &str, path: Option<&Path>, args: &[&str]) -> Tmux {
        let socket = format!("kwire-explore-live-{}-{test}", std::process::id());
        let mut cmd = match path {
            Some(p) => format!("PATH='{}' ", p.display()),
            None => String::new(),
        };
        cmd.push_str(&format!("'{}' explore", kwire_bin().display()));
        for a in args {
            cmd.push_str(&format!(" '{a}'"));
        }
        let script = format!("{cmd}; echo KWIRE_EXIT=$?; sleep 120");
        let st = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "200", "-y", "50", "-s", "t"])
            .args([
                "env",
                "-u",
                "SSLKEYLOGFILE",
                "-u",
                "KWIRE_SCHEMA",
                "-u",
                "NO_COLOR",
            ])
            .arg("TERM=xterm-256color")
            .args(["sh", "-c", &script])
            .current_dir(root())
            .status()
            .expect("tmux runs");
        assert!(st.success(), "tmux new-session failed");
        Tmux { socket }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let o = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", "t", k]);
        }
        std::thread::sleep(Duration::from_millis(150));
    }

    fn screen(&self) -> Vec<String> {
        self.tmux(&["capture-pane", "-p", "-t", "t"])
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    /// Waits (20 s at most) until the screen satisfies `f`; the last screen on failure.
    fn wait(&self, what: &str, f: impl Fn(&[String]) -> bool) -> Vec<String> {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if f(&s) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("waited for {what}; the screen:\n{}", s.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits for the status bar (the last line) to satisfy `f`.
    fn wait_status(&self, what: &str, f: impl Fn(&str) -> bool) -> Vec<String> {
        self.wait(what, |s| s.last().is_some_and(|l| f(l)))
    }

    /// The selected list line: the first line that starts in reverse video.
    fn selected(&self) -> Option<String> {
        let raw = self.tmux(&["capture-pane", "-e", "-p", "-t", "t"]);
        raw.lines()
            .map(reverse_cells)
            .find(|r| r.first().is_some_and(|c| c.1))
            .map(|r| {
                r.iter()
                    .map(|c| c.0)
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
    }

    /// Quits with `key` and waits for kwire's exit status; the screen after it.
    fn quit(&self, key: &str) -> Vec<String> {
        self.keys(&[key]);
        self.wait("kwire to exit", |s| {
            s.iter().any(|l| l.starts_with("KWIRE_EXIT="))
        })
    }

    /// The terminal's state: alternate screen, mouse reporting, cursor shown.
    fn flags(&self) -> String {
        self.tmux(&[
            "display-message",
            "-p",
            "-t",
            "t",
            "#{alternate_on} #{mouse_any_flag} #{cursor_flag}",
        ])
        .trim()
        .to_string()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// `n of m messages` at the start of the status bar.
fn counts(status: &str) -> Option<(usize, usize)> {
    let (a, rest) = status.split_once(" of ")?;
    let b = rest.split_whitespace().next()?;
    Some((a.trim().parse().ok()?, b.parse().ok()?))
}

/// `kwire read ARGS`: the summary lines.
fn read_lines(args: &[&str]) -> Vec<String> {
    let o = Command::new(kwire_bin())
        .arg("read")
        .args(args)
        .env_remove("SSLKEYLOGFILE")
        .env_remove("KWIRE_SCHEMA")
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A summary line without what depends on when the packets were sent: the relative time
/// (second column) and the latency.
fn timeless(l: &str) -> String {
    l.split(' ')
        .enumerate()
        .filter(|(i, w)| *i != 1 && !w.starts_with("latency="))
        .map(|(_, w)| w)
        .collect::<Vec<_>>()
        .join(" ")
}

fn all_timeless(ls: &[String]) -> Vec<String> {
    ls.iter().map(|l| timeless(l)).collect()
}

/// Waits until the capture child has opened the interface: kwire has copied the
/// capture's header to the `-w` file.
fn wait_ready(w: &Path, t: &Tmux) {
    let start = Instant::now();
    while std::fs::metadata(w).map_or(0, |m| m.len()) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the capture did not start in 20 s; the screen:\n{}",
            t.screen().join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
}

#[test]
fn live_list_shows_reads_messages_follows_the_end_and_q_reaps_the_child() {
    let test = "live_list_shows_reads_messages_follows_the_end_and_q_reaps_the_child";
    if !can_capture(test) {
        return;
    }
    let dir = scratch("live");
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let expected = read_lines(&["--port", &ps, demo.to_str().unwrap()]);
    assert_eq!(expected.len(), 46);
    let t = Tmux::explore(
        "live",
        &[
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "-a",
            "duration:60",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    t.wait_status("the live status", |l| {
        l.starts_with("0 of 0 messages") && l.contains("live: capturing on lo (dumpcap)")
    });
    wait_ready(&w, &t);
    replay(&demo);
    let s = t.wait_status("46 messages", |l| counts(l) == Some((46, 46)));
    assert!(
        s.last()
            .unwrap()
            .contains("live: capturing on lo (dumpcap)"),
        "{s:?}"
    );
    // The list followed the end: the last message is selected and on screen.
    let sel = t.selected().expect("a selected line");
    assert_eq!(timeless(&sel), timeless(&expected[45]), "{s:?}");
    assert_eq!(
        list_lines(&s).last().map(|l| timeless(l)),
        Some(timeless(&expected[45]))
    );
    // Zoomed, from the first (g), the list holds every message: read's lines, times aside.
    t.keys(&["\\", "g"]);
    let s = t.wait("the zoomed list", |s| list_lines(s).len() == 46);
    assert_eq!(all_timeless(&list_lines(&s)), all_timeless(&expected));
    // The child runs until q; then it is stopped, reaped, and its counts said.
    assert_eq!(
        capture_children(port).len(),
        1,
        "one dumpcap while exploring"
    );
    let s = t.quit("q");
    assert!(s.iter().any(|l| l == "KWIRE_EXIT=0"), "{s:?}");
    assert!(
        s.iter()
            .any(|l| l == "kwire: live capture stopped when the explorer ended"),
        "{s:?}"
    );
    assert!(
        s.iter()
            .any(|l| l == "kwire: dumpcap: Packets captured: 92"),
        "{s:?}"
    );
    assert_eq!(t.flags(), "0 0 1", "alternate screen, mouse, cursor");
    no_child_left(port);
    // -w saved the packets: read back, the same messages.
    let back = read_lines(&["--port", &ps, w.to_str().unwrap()]);
    assert_eq!(all_timeless(&back), all_timeless(&expected));
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn live_autostop_ends_the_capture_the_filter_counts_and_ctrl_c_quits() {
    let test = "live_autostop_ends_the_capture_the_filter_counts_and_ctrl_c_quits";
    if !can_capture(test) {
        return;
    }
    let dir = scratch("autostop");
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let filter = "api == Fetch";
    let expected = read_lines(&["--port", &ps, "-Y", filter, demo.to_str().unwrap()]);
    assert!(!expected.is_empty());
    let t = Tmux::explore(
        "autostop",
        &[
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "-Y",
            filter,
            "-a",
            "duration:4",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    wait_ready(&w, &t);
    replay(&demo);
    // -a ends the capture: the child is reaped while the explorer stays, and the status
    // bar says why.
    let s = t.wait_status("the capture's end", |l| {
        l.contains("live capture stopped at -a duration")
    });
    let (n, total) = counts(s.last().unwrap()).unwrap();
    assert_eq!((n, total), (expected.len(), 46), "{s:?}");
    assert_eq!(
        all_timeless(&list_lines(&s)),
        all_timeless(&expected),
        "the filtered list"
    );
    no_child_left(port);
    let s = t.quit("C-c");
    assert!(s.iter().any(|l| l == "KWIRE_EXIT=0"), "{s:?}");
    assert!(
        s.iter()
            .any(|l| l == "kwire: live capture stopped at -a duration"),
        "{s:?}"
    );
    assert_eq!(t.flags(), "0 0 1", "alternate screen, mouse, cursor");
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_dumpcap_explore_captures_through_tcpdump() {
    let test = "without_dumpcap_explore_captures_through_tcpdump";
    if !can_capture(test) {
        return;
    }
    let Some(tcpdump) = on_path("tcpdump") else {
        common::skip(test, "tcpdump is not on PATH");
        return;
    };
    let dir = scratch("tcpdump");
    // A PATH with tcpdump alone.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(tcpdump.join("tcpdump"), bin.join("tcpdump")).unwrap();
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let expected = read_lines(&["--port", &ps, demo.to_str().unwrap()]);
    let t = Tmux::explore_path(
        "tcpdump",
        Some(&bin),
        &[
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "-a",
            "duration:60",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    t.wait_status("the live status", |l| {
        l.contains("live: capturing on lo (tcpdump)")
    });
    wait_ready(&w, &t);
    replay(&demo);
    t.wait_status("46 messages", |l| counts(l) == Some((46, 46)));
    t.keys(&["\\", "g"]);
    let s = t.wait("the zoomed list", |s| list_lines(s).len() == 46);
    assert_eq!(all_timeless(&list_lines(&s)), all_timeless(&expected));
    let s = t.quit("q");
    assert!(s.iter().any(|l| l == "KWIRE_EXIT=0"), "{s:?}");
    assert!(
        s.iter().any(|l| l == "kwire: tcpdump: 92 packets captured"),
        "{s:?}"
    );
    no_child_left(port);
    // tcpdump's pcap, saved as pcapng.
    assert_eq!(&std::fs::read(&w).unwrap()[..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_live_capture_that_cannot_start_is_said_on_the_normal_screen() {
    let test = "a_live_capture_that_cannot_start_is_said_on_the_normal_screen";
    if !can_capture(test) {
        return;
    }
    let t = Tmux::explore("nosuch", &["-i", "nosuch0"]);
    let s = t.wait("kwire to exit", |s| {
        s.iter().any(|l| l.starts_with("KWIRE_EXIT="))
    });
    assert!(s.iter().any(|l| l == "KWIRE_EXIT=2"), "{s:?}");
    assert!(
        s.iter()
            .any(|l| l.contains("There is no device named \"nosuch0\"")),
        "{s:?}"
    );
    assert!(
        s.iter()
            .any(|l| l.contains("the interfaces dumpcap can capture on (-D):")),
        "{s:?}"
    );
    assert_eq!(t.flags(), "0 0 1");
    // -D: the same list as read -D.
    let d = |cmd: &str| {
        let o = Command::new(kwire_bin())
            .args([cmd, "-D"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let list = d("explore");
    assert!(list.lines().any(|l| l.contains(". lo")), "{list}");
    assert_eq!(list, d("read"));
    // -w, -f and -a need -i, as for read.
    let o = Command::new(kwire_bin())
        .args(["explore", "-w", "x.pcapng", DEMO])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-w saves the packets of a live capture"));
    // A stdout that is not a terminal is refused before any capture child starts.
    let o = Command::new(kwire_bin())
        .args(["explore", "-i", "lo"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("stdout is not a terminal"), "{err}");
    assert!(!err.contains("capturing on"), "{err}");
}

#[test]
fn a_growing_capture_file_is_followed_to_its_end() {
    let test = "a_growing_capture_file_is_followed_to_its_end";
    if !have_tmux(test) {
        return;
    }
    let expected = read_lines(&[DEMO]);
    let b = std::fs::read(root().join(DEMO)).unwrap();
    let dir = scratch("grow");
    let p = dir.join("growing.pcap");
    std::fs::write(&p, &b[..6000]).unwrap();
    let t = Tmux::explore("grow", &[p.to_str().unwrap()]);
    let s = t.wait_status("the first part", |l| {
        l.contains("following the capture's end")
    });
    let (_, first) = counts(s.last().unwrap()).unwrap();
    assert!(
        first > 0 && first < 46,
        "{first} messages in the first part"
    );
    // Packets appended while the explorer runs, in two parts; no key pressed: the list
    // follows the end by itself.
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(&b[6000..10_000]).unwrap();
    f.flush().unwrap();
    t.wait_status("the second part", |l| {
        counts(l).is_some_and(|(_, n)| n > first)
    });
    f.write_all(&b[10_000..]).unwrap();
    f.flush().unwrap();
    let s = t.wait_status("every message", |l| counts(l) == Some((46, 46)));
    let want = expected.last().unwrap().clone();
    let start = Instant::now();
    while t.selected().as_deref() != Some(want.as_str()) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "selected {:?}, not the last message; {s:?}",
            t.selected()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t.keys(&["\\", "g"]);
    let s = t.wait("the zoomed list", |s| list_lines(s).len() == 46);
    assert_eq!(list_lines(&s), expected);
    let s = t.quit("q");
    assert!(s.iter().any(|l| l == "KWIRE_EXIT=0"), "{s:?}");
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}
