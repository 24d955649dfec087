//! Live-capture test helpers shared by `tests/live_capture.rs` and
//! `tests/explore_live.rs`: whether the test can capture and replay on `lo`, a free port,
//! `captures/demo.pcap` rewritten to that port (tcprewrite), and its replay (tcpreplay),
//! each bounded in time.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The committed capture the live tests replay (92 packets, 13 kB).
pub const DEMO: &str = "captures/demo.pcap";

/// The folder on PATH holding `name`, if any.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|d| d.join(name).is_file())
}

/// Whether this test can capture and replay: root, and the programs.
pub fn can_capture(test: &str, programs: &[&str]) -> bool {
    if !rustix::process::geteuid().is_root() {
        super::skip(test, "not root (capturing and replaying on lo need it)");
        return false;
    }
    for p in programs {
        if on_path(p).is_none() {
            super::skip(test, &format!("{p} is not on PATH"));
            return false;
        }
    }
    true
}

/// A port no one listens on now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `captures/demo.pcap` with the broker port 9092 rewritten to `port`.
pub fn demo_on(port: u16, dir: &Path) -> PathBuf {
    let out = dir.join("demo.pcap");
    let st = Command::new("tcprewrite")
        .arg(format!("--portmap=9092:{port}"))
        .arg("-i")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(DEMO))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success(), "tcprewrite failed");
    out
}

/// Replays `file` onto `lo` at top speed (92 packets: a fraction of a second).
pub fn replay(file: &Path) {
    let mut c = Command::new("tcpreplay")
        .args(["-q", "-i", "lo", "--topspeed"])
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let st = wait_until(&mut c, Duration::from_secs(30)).expect("tcpreplay did not end");
    assert!(st.success(), "tcpreplay failed");
}

/// Waits for `c` up to `limit`; kills it and returns None after that.
pub fn wait_until(c: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t = Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return Some(s);
        }
        if t.elapsed() > limit {
            let _ = c.kill();
            let _ = c.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
