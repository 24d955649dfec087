//! Live capture (issue 24): `kwire read -i lo` runs dumpcap (or tcpdump) and decodes what
//! it captures. Each test replays a committed capture onto the loopback interface with
//! tcpreplay, rewritten by tcprewrite to a free port of its own, and compares what kwire
//! printed live with what it prints for the same packets read from a file.
//!
//! Traffic is bounded: one replay of `captures/demo.pcap` (92 packets, 13 kB) a test, on
//! `lo` only, between 127.0.0.1 addresses (the capture's own). Every kwire run has a
//! deadline, after which it is killed and the test fails. The tests need root (to capture
//! and to replay), dumpcap, tcpdump, tcpreplay and tcprewrite; without them they say why
//! they skip, and fail instead under `KWIRE_NO_SKIP=1`. The ones that need neither root nor
//! a capture program (no program on PATH, `-w` with a file) always run.

mod common;

use common::live::{can_capture, demo_on, free_port, on_path, replay, wait_until};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DEMO: &str = "captures/demo.pcap";

fn kwire_bin() -> &'static str {
    env!("CARGO_BIN_EXE_kwire")
}

/// A temporary folder of the test's own (removed by the test when it passes).
fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kwire-live-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A kwire run with its output in files.
struct Live {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

struct Ended {
    code: i32,
    out: String,
    err: String,
}

impl Live {
    fn start(dir: &Path, path_env: Option<&Path>, args: &[&str]) -> Live {
        let out = dir.join("stdout");
        let err = dir.join("stderr");
        let mut c = Command::new(kwire_bin());
        c.args(args)
            .env_remove("SSLKEYLOGFILE")
            .env_remove("KWIRE_SCHEMA")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap());
        if let Some(p) = path_env {
            c.env("PATH", p);
        }
        Live {
            child: c.spawn().unwrap(),
            out,
            err,
        }
    }

    /// Waits until the capture child has opened the interface: it has written the
    /// capture's header, which kwire copies to the `-w` file.
    fn wait_ready(&mut self, w: &Path) {
        let t = Instant::now();
        while std::fs::metadata(w).map_or(0, |m| m.len()) == 0 {
            if let Some(s) = self.child.try_wait().unwrap() {
                panic!(
                    "kwire ended ({s}) before capturing: {}",
                    std::fs::read_to_string(&self.err).unwrap_or_default()
                );
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "the capture did not start in 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // The header is written once the interface is open and its filter set.
        std::thread::sleep(Duration::from_millis(200));
    }

    fn lines(&self) -> usize {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .count()
    }

    fn end(mut self, limit: Duration) -> Ended {
        let st = wait_until(&mut self.child, limit);
        let err = std::fs::read_to_string(&self.err).unwrap_or_default();
        let st = st.unwrap_or_else(|| panic!("kwire did not end in {limit:?}; stderr:\n{err}"));
        Ended {
            code: st.code().unwrap_or(-1),
            out: std::fs::read_to_string(&self.out).unwrap_or_default(),
            err,
        }
    }
}

/// `kwire read ARGS` of a file, run to its end.
fn read_file(args: &[&str]) -> Ended {
    let o = Command::new(kwire_bin())
        .arg("read")
        .args(args)
        .env_remove("SSLKEYLOGFILE")
        .env_remove("KWIRE_SCHEMA")
        .output()
        .unwrap();
    Ended {
        code: o.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Summary lines without what depends on when the packets were sent: the relative time
/// (second column) and the latency.
fn timeless(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            l.split(' ')
                .enumerate()
                .filter(|(i, w)| *i != 1 && !w.starts_with("latency="))
                .map(|(_, w)| w)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// No capture program with `port` in its command line is running (kwire reaped its child).
fn no_child_left(port: u16) {
    let needle = format!("port {port}");
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let capturer =
            cmd.starts_with("dumpcap") || cmd.contains("/dumpcap ") || cmd.contains("tcpdump");
        assert!(
            !(capturer && cmd.contains(&needle)),
            "a capture child is still running: {cmd}"
        );
    }
}

/// The closing line (`kwire: 92 packets, 5 connections, ...`).
fn closing_line(err: &str) -> &str {
    err.lines()
        .find(|l| l.contains(" packets, ") && l.contains(" messages decoded"))
        .unwrap_or_else(|| panic!("no closing line in:\n{err}"))
}

#[test]
fn live_lines_equal_the_file_lines_and_w_saves_the_same_packets() {
    let test = "live_lines_equal_the_file_lines_and_w_saves_the_same_packets";
    if !can_capture(test, &["dumpcap", "tcpreplay", "tcprewrite"]) {
        return;
    }
    let dir = scratch("equal");
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let mut live = Live::start(
        &dir,
        None,
        &[
            "read",
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "-a",
            "duration:8",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    live.wait_ready(&w);
    replay(&demo);
    let r = live.end(Duration::from_secs(40));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    let file = read_file(&["--port", &ps, demo.to_str().unwrap()]);
    assert_eq!(file.code, 0, "{}", file.err);
    assert_eq!(file.out.lines().count(), 46);
    assert_eq!(
        timeless(&r.out),
        timeless(&file.out),
        "live lines differ from the file's"
    );
    assert!(
        closing_line(&r.err).starts_with("kwire: 92 packets, 5 connections, 46 messages"),
        "{}",
        r.err
    );
    assert!(
        r.err.contains("kwire: live capture stopped at -a duration"),
        "{}",
        r.err
    );
    assert!(
        r.err.contains("kwire: dumpcap: Packets captured: 92"),
        "{}",
        r.err
    );
    // The -w file holds the packets: read back, the same lines, times included.
    assert_eq!(
        &std::fs::read(&w).unwrap()[..4],
        &[0x0a, 0x0d, 0x0d, 0x0a],
        "-w is dumpcap's pcapng"
    );
    let back = read_file(&["--port", &ps, w.to_str().unwrap()]);
    assert_eq!(back.code, 0, "{}", back.err);
    assert_eq!(
        back.out, r.out,
        "the -w file read back differs from what was printed live"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn count_stops_after_three_messages() {
    let test = "count_stops_after_three_messages";
    if !can_capture(test, &["dumpcap", "tcpreplay", "tcprewrite"]) {
        return;
    }
    let dir = scratch("count");
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    // duration:60 only bounds the test: -c must stop it long before.
    let mut live = Live::start(
        &dir,
        None,
        &[
            "read",
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "-c",
            "3",
            "-a",
            "duration:60",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    live.wait_ready(&w);
    let t = Instant::now();
    replay(&demo);
    let r = live.end(Duration::from_secs(20));
    assert!(t.elapsed() < Duration::from_secs(20));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    let file = read_file(&["--port", &ps, "-c", "3", demo.to_str().unwrap()]);
    assert_eq!(r.out.lines().count(), 3, "{}", r.out);
    assert_eq!(timeless(&r.out), timeless(&file.out));
    assert!(
        closing_line(&r.err).contains("(3 shown, stopped at -c)"),
        "{}",
        r.err
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigint_mid_capture_exits_0_with_the_closing_lines() {
    let test = "sigint_mid_capture_exits_0_with_the_closing_lines";
    if !can_capture(test, &["dumpcap", "tcpreplay", "tcprewrite"]) {
        return;
    }
    let dir = scratch("sigint");
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let mut live = Live::start(
        &dir,
        None,
        &[
            "read",
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
    live.wait_ready(&w);
    replay(&demo);
    // Messages print as they complete: all 46 are out before the capture ends.
    let t = Instant::now();
    while live.lines() < 46 {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "only {} lines printed live",
            live.lines()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_child(&live.child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let r = live.end(Duration::from_secs(20));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    assert!(
        closing_line(&r.err).starts_with("kwire: 92 packets, 5 connections, 46 messages"),
        "{}",
        r.err
    );
    assert!(
        r.err.contains("kwire: live capture stopped by SIGINT"),
        "{}",
        r.err
    );
    assert!(
        r.err.contains("got no response in the capture"),
        "{}",
        r.err
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_packets_stop_condition_is_the_child_s_count() {
    let test = "the_packets_stop_condition_is_the_child_s_count";
    if !can_capture(test, &["dumpcap", "tcpreplay", "tcprewrite"]) {
        return;
    }
    let dir = scratch("packets");
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let mut live = Live::start(
        &dir,
        None,
        &[
            "stats",
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "-a",
            "packets:10",
            "-a",
            "duration:60",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    live.wait_ready(&w);
    replay(&demo);
    let r = live.end(Duration::from_secs(20));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    assert!(
        closing_line(&r.err).starts_with("kwire: 10 packets, "),
        "{}",
        r.err
    );
    assert!(
        r.err.contains("kwire: live capture stopped at -a packets"),
        "{}",
        r.err
    );
    let back = read_file(&["--port", &ps, w.to_str().unwrap()]);
    assert!(
        closing_line(&back.err).starts_with("kwire: 10 packets, "),
        "{}",
        back.err
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_dumpcap_tcpdump_captures() {
    let test = "without_dumpcap_tcpdump_captures";
    if !can_capture(test, &["tcpdump", "tcpreplay", "tcprewrite"]) {
        return;
    }
    let dir = scratch("tcpdump");
    // A PATH with tcpdump alone.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(
        on_path("tcpdump").unwrap().join("tcpdump"),
        bin.join("tcpdump"),
    )
    .unwrap();
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let mut live = Live::start(
        &dir,
        Some(&bin),
        &[
            "read",
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "-a",
            "duration:8",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    live.wait_ready(&w);
    replay(&demo);
    let r = live.end(Duration::from_secs(40));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    assert!(
        r.err.contains("kwire: capturing on lo: tcpdump "),
        "{}",
        r.err
    );
    let file = read_file(&["--port", &ps, demo.to_str().unwrap()]);
    assert_eq!(timeless(&r.out), timeless(&file.out));
    // tcpdump's pcap, saved as pcapng.
    assert_eq!(&std::fs::read(&w).unwrap()[..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
    let back = read_file(&["--port", &ps, w.to_str().unwrap()]);
    assert_eq!(back.out, r.out);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_dumpcap_or_tcpdump_the_message_names_both() {
    let dir = scratch("none");
    let empty = dir.join("bin");
    std::fs::create_dir_all(&empty).unwrap();
    let r = Live::start(&dir, Some(&empty), &["read", "-i", "lo"]).end(Duration::from_secs(20));
    assert_eq!(r.code, 2, "{}", r.err);
    for w in [
        "dumpcap",
        "tcpdump",
        "wireshark-common",
        "neither is on PATH",
    ] {
        assert!(r.err.contains(w), "{w} not in: {}", r.err);
    }
    assert!(r.out.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_live_options_need_a_live_capture() {
    for (args, word) in [
        (
            vec!["read", "-w", "x.pcapng", DEMO],
            "-w x.pcapng: -w saves the packets of a live capture",
        ),
        (vec!["stats", "-f", "tcp", DEMO], "-f is a capture filter"),
        (
            vec!["read", "-a", "duration:1", DEMO],
            "-a stops a live capture",
        ),
        (vec!["read", "-i", "lo", DEMO], "give one or the other"),
        (
            vec!["read", "-a", "time:3", "-i", "lo"],
            "no such stop condition",
        ),
    ] {
        let o = Command::new(kwire_bin()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(word), "{args:?}: {err}");
    }
    assert!(!Path::new("x.pcapng").exists());
}

#[test]
fn no_such_interface_exits_2_with_the_interface_list() {
    let test = "no_such_interface_exits_2_with_the_interface_list";
    if on_path("dumpcap").is_none() {
        common::skip(test, "dumpcap is not on PATH");
        return;
    }
    let dir = scratch("nosuch");
    let r = Live::start(&dir, None, &["read", "-i", "nosuch0"]).end(Duration::from_secs(20));
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("There is no device named \"nosuch0\""),
        "{}",
        r.err
    );
    assert!(
        r.err
            .contains("the interfaces dumpcap can capture on (-D):"),
        "{}",
        r.err
    );
    assert!(
        r.err
            .lines()
            .any(|l| l.trim_start().ends_with(". lo (Loopback)") || l.contains(". lo")),
        "{}",
        r.err
    );
    // The same list as -D prints.
    let d = Command::new(kwire_bin())
        .args(["read", "-D"])
        .output()
        .unwrap();
    assert_eq!(d.status.code(), Some(0));
    for l in String::from_utf8_lossy(&d.stdout).lines() {
        assert!(r.err.contains(l), "{l} missing from:\n{}", r.err);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_capture_filter_exits_2_with_dumpcap_s_message() {
    let test = "a_bad_capture_filter_exits_2_with_dumpcap_s_message";
    if !can_capture(test, &["dumpcap"]) {
        return;
    }
    let dir = scratch("badfilter");
    let r = Live::start(
        &dir,
        None,
        &["read", "-i", "lo", "-f", "tcp port kwirebogus"],
    )
    .end(Duration::from_secs(20));
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err
            .contains("the capture filter (-f) \"tcp port kwirebogus\" does not compile"),
        "{}",
        r.err
    );
    assert!(
        r.err
            .contains("Invalid capture filter \"tcp port kwirebogus\""),
        "{}",
        r.err
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn not_allowed_to_capture_says_how_to_be() {
    let test = "not_allowed_to_capture_says_how_to_be";
    if !can_capture(test, &["dumpcap", "setpriv"]) {
        return;
    }
    let dir = scratch("perm");
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--",
        ])
        .args([kwire_bin(), "read", "-i", "lo", "-a", "duration:5"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("Permission denied") && !err.contains("capture") {
        common::skip(test, "the kwire binary cannot be run by user nobody");
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("You do not have permission to capture"),
        "{err}"
    );
    assert!(
        err.contains("`wireshark` group") && err.contains("setcap"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_key_log_written_during_the_capture_is_read_when_a_connection_needs_it() {
    let test = "a_key_log_written_during_the_capture_is_read_when_a_connection_needs_it";
    if !can_capture(test, &["dumpcap", "tcpreplay", "tcprewrite"]) {
        return;
    }
    let dir = scratch("keylog");
    let port = free_port();
    let cap = dir.join("tls.pcap");
    let st = Command::new("tcprewrite")
        .arg(format!("--portmap=9093:{port}"))
        .args(["-i", "captures/lab/tls/tls13_kp_aes256gcm.pcapng", "-o"])
        .arg(&cap)
        .status()
        .unwrap();
    assert!(st.success());
    let keys = dir.join("sslkeylog.txt");
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    // The key log does not exist when the capture starts, as a client's SSLKEYLOGFILE
    // before the client runs.
    let mut live = Live::start(
        &dir,
        None,
        &[
            "read",
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "-a",
            "duration:8",
            "-w",
            w.to_str().unwrap(),
            "--tls-keylog",
            keys.to_str().unwrap(),
        ],
    );
    live.wait_ready(&w);
    // Written in two parts, the second ending inside a line, completed later.
    let text = std::fs::read_to_string("captures/lab/tls/tls13_kp_aes256gcm.keys").unwrap();
    let cut = text.len() / 2;
    std::fs::write(&keys, &text[..cut]).unwrap();
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&keys)
            .unwrap();
        f.write_all(&text.as_bytes()[cut..]).unwrap();
    }
    replay(&cap);
    let r = live.end(Duration::from_secs(40));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    assert!(
        r.err
            .contains("not there yet; read when a TLS connection needs its keys"),
        "{}",
        r.err
    );
    let file = read_file(&[
        "--port",
        &ps,
        "--tls-keylog",
        "captures/lab/tls/tls13_kp_aes256gcm.keys",
        cap.to_str().unwrap(),
    ]);
    assert_eq!(file.out.lines().count(), 48, "{}", file.err);
    assert_eq!(timeless(&r.out), timeless(&file.out), "{}", r.err);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The pid of the capture child whose command line holds `port port`.
fn child_of(port: u16) -> Option<i32> {
    let needle = format!("port {port}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        (cmd.contains("dumpcap") && cmd.contains(&needle)).then_some(pid)
    })
}

#[test]
fn sigterm_and_no_traffic_stops_with_the_closing_lines() {
    let test = "sigterm_and_no_traffic_stops_with_the_closing_lines";
    if !can_capture(test, &["dumpcap"]) {
        return;
    }
    let dir = scratch("sigterm");
    let port = free_port();
    let w = dir.join("out.pcapng");
    let fs = format!("tcp port {port}");
    let mut live = Live::start(
        &dir,
        None,
        &[
            "stats",
            "-i",
            "lo",
            "-f",
            &fs,
            "-a",
            "duration:60",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    live.wait_ready(&w);
    let pid = rustix::process::Pid::from_child(&live.child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let r = live.end(Duration::from_secs(20));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    assert!(
        closing_line(&r.err).starts_with("kwire: 0 packets, 0 connections"),
        "{}",
        r.err
    );
    assert!(
        r.err.contains("kwire: live capture stopped by SIGTERM"),
        "{}",
        r.err
    );
    assert!(r.out.contains("messages"), "stats printed: {}", r.out);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn filesize_stops_the_capture_once_the_stream_holds_that_many_kb() {
    let test = "filesize_stops_the_capture_once_the_stream_holds_that_many_kb";
    if !can_capture(test, &["dumpcap", "tcpreplay", "tcprewrite"]) {
        return;
    }
    let dir = scratch("filesize");
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let mut live = Live::start(
        &dir,
        None,
        &[
            "read",
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "-a",
            "filesize:2",
            "-a",
            "duration:60",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    live.wait_ready(&w);
    replay(&demo);
    let r = live.end(Duration::from_secs(20));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    assert!(
        r.err.contains("kwire: live capture stopped at -a filesize"),
        "{}",
        r.err
    );
    // The stream (and so the -w file) reached 2 kB; the child was stopped soon after.
    let len = std::fs::metadata(&w).unwrap().len();
    assert!(len >= 2000, "{len} bytes");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_child_dying_mid_capture_gives_the_closing_lines_then_exit_2() {
    let test = "the_child_dying_mid_capture_gives_the_closing_lines_then_exit_2";
    if !can_capture(test, &["dumpcap", "tcpreplay", "tcprewrite"]) {
        return;
    }
    let dir = scratch("died");
    let port = free_port();
    let demo = demo_on(port, &dir);
    let w = dir.join("out.pcapng");
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let mut live = Live::start(
        &dir,
        None,
        &[
            "read",
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
    live.wait_ready(&w);
    replay(&demo);
    let t = Instant::now();
    while live.lines() < 46 {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "only {} lines printed live",
            live.lines()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let child = child_of(port).expect("the dumpcap child");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let r = live.end(Duration::from_secs(20));
    assert_eq!(r.code, 2, "{}", r.err);
    no_child_left(port);
    assert!(
        closing_line(&r.err).starts_with("kwire: 92 packets, 5 connections, 46 messages"),
        "{}",
        r.err
    );
    assert!(
        r.err
            .contains("kwire: dumpcap ended during the capture (signal: 9"),
        "{}",
        r.err
    );
    assert_eq!(r.out.lines().count(), 46);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kwire ARGS` (stats or export) of a file, run to its end.
fn kwire_file(args: &[&str]) -> Ended {
    let o = Command::new(kwire_bin())
        .args(args)
        .env_remove("SSLKEYLOGFILE")
        .env_remove("KWIRE_SCHEMA")
        .output()
        .unwrap();
    Ended {
        code: o.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `kwire stats --format json` without what depends on when the packets were sent (the
/// latencies).
fn timeless_stats(json: &str) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: not JSON:\n{json}"));
    if let Some(apis) = v["apis"].as_array_mut() {
        for a in apis {
            a.as_object_mut().unwrap().remove("latency_ms");
        }
    }
    v
}

/// Rows of the Parquet files under `dir` (every file, every partition folder).
fn parquet_rows(dir: &Path) -> i64 {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut n = 0;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            n += parquet_rows(&p);
        } else if p.extension().is_some_and(|x| x == "parquet") {
            let r = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
            n += r.metadata().file_metadata().num_rows();
        }
    }
    n
}

#[test]
fn c_stops_stats_and_export_of_files_across_the_captures() {
    // stats: 46 messages a capture; -c 50 takes the first's 46 and the second's first 4.
    let whole = kwire_file(&["stats", "--format", "json", "-c", "50", DEMO, DEMO]);
    assert_eq!(whole.code, 0, "{}", whole.err);
    let lines: Vec<&str> = whole
        .err
        .lines()
        .filter(|l| l.contains(" messages decoded"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", whole.err);
    assert!(lines[0].contains("(46 shown)"), "{}", whole.err);
    assert!(
        lines[1].contains("(4 shown, stopped at -c)"),
        "{}",
        whole.err
    );
    let v: serde_json::Value = serde_json::from_str(&whole.out).unwrap();
    let counted: u64 = v["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["messages"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 50, "{}", whole.out);
    // -c with -Y counts the messages the filter keeps.
    let f = kwire_file(&["stats", "-c", "2", "-Y", "api == Metadata", DEMO]);
    assert_eq!(f.code, 0, "{}", f.err);
    assert!(
        closing_line(&f.err).contains("(2 shown, stopped at -c)"),
        "{}",
        f.err
    );
    // A log directory is counted whole: -c says so instead of being ignored.
    let log = kwire_file(&["stats", "-c", "2", "captures/logdirs/codecrafters_510714e"]);
    assert_eq!(log.code, 1, "{}", log.err);
    assert!(
        log.err.contains("a log directory is counted whole"),
        "{}",
        log.err
    );

    // export: -c 50 over three captures; the third is not read.
    let dir = scratch("c-files");
    let out = dir.join("tables");
    let e = kwire_file(&[
        "export",
        "--out",
        out.to_str().unwrap(),
        "-c",
        "50",
        DEMO,
        DEMO,
        DEMO,
    ]);
    assert_eq!(e.code, 0, "{}", e.err);
    assert!(
        e.err
            .contains("kwire: -c 50 reached: 1 of 3 captures not read"),
        "{}",
        e.err
    );
    assert!(
        e.err.contains("kwire: exported 50 messages, ") && e.err.contains("from 2 of 3 captures"),
        "{}",
        e.err
    );
    assert_eq!(parquet_rows(&out.join("messages")), 50);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn c_stops_live_stats_and_export() {
    let test = "c_stops_live_stats_and_export";
    if !can_capture(test, &["dumpcap", "tcpreplay", "tcprewrite"]) {
        return;
    }
    let dir = scratch("c-live");
    let port = free_port();
    let demo = demo_on(port, &dir);
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    // stats -c 5: the first five messages' counts, as of the same packets in a file.
    let w = dir.join("stats.pcapng");
    let mut live = Live::start(
        &dir,
        None,
        &[
            "stats",
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "--format",
            "json",
            "-c",
            "5",
            // Only bounds the test: -c must stop it long before.
            "-a",
            "duration:60",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    live.wait_ready(&w);
    let t = Instant::now();
    replay(&demo);
    let r = live.end(Duration::from_secs(20));
    assert!(t.elapsed() < Duration::from_secs(20));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    assert!(
        closing_line(&r.err).contains("(5 shown, stopped at -c)"),
        "{}",
        r.err
    );
    assert!(
        r.err
            .contains("kwire: live capture stopped when reading stopped"),
        "{}",
        r.err
    );
    let file = kwire_file(&[
        "stats",
        "--port",
        &ps,
        "--format",
        "json",
        "-c",
        "5",
        demo.to_str().unwrap(),
    ]);
    assert_eq!(file.code, 0, "{}", file.err);
    assert_eq!(timeless_stats(&r.out), timeless_stats(&file.out));

    // export -c 7: seven message rows, as of the file.
    let port = free_port();
    let demo = demo_on(port, &dir);
    let (ps, fs) = (port.to_string(), format!("tcp port {port}"));
    let w = dir.join("export.pcapng");
    let tables = dir.join("live-tables");
    let mut live = Live::start(
        &dir,
        None,
        &[
            "export",
            "-i",
            "lo",
            "-f",
            &fs,
            "--port",
            &ps,
            "--out",
            tables.to_str().unwrap(),
            "-c",
            "7",
            "-a",
            "duration:60",
            "-w",
            w.to_str().unwrap(),
        ],
    );
    live.wait_ready(&w);
    let t = Instant::now();
    replay(&demo);
    let r = live.end(Duration::from_secs(20));
    assert!(t.elapsed() < Duration::from_secs(20));
    assert_eq!(r.code, 0, "{}", r.err);
    no_child_left(port);
    assert!(
        closing_line(&r.err).contains("(7 shown, stopped at -c)"),
        "{}",
        r.err
    );
    assert!(r.err.contains("kwire: exported 7 messages, "), "{}", r.err);
    assert_eq!(parquet_rows(&tables.join("messages")), 7);
    let from_file = dir.join("file-tables");
    let file = kwire_file(&[
        "export",
        "--port",
        &ps,
        "--out",
        from_file.to_str().unwrap(),
        "-c",
        "7",
        demo.to_str().unwrap(),
    ]);
    assert_eq!(file.code, 0, "{}", file.err);
    assert_eq!(
        parquet_rows(&tables.join("partitions")),
        parquet_rows(&from_file.join("partitions"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}
