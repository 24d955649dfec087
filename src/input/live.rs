//! Live capture through a capture child, the way Wireshark does it: `dumpcap` captures
//! (privileges, BPF, kernel buffers) and writes pcapng to a pipe; kwire reads that stream
//! as it reads `kwire read -`. Where dumpcap is absent, `tcpdump -U -w -` (pcap) is the
//! fallback. kwire links no libpcap: a machine without its development headers builds it.
//!
//! The child's life, from [`LiveCapture::start`] to [`LiveCapture::finish`] (or `Drop`):
//!
//! - it runs in a process group of its own (so a terminal's Ctrl-C reaches kwire only, and
//!   kwire decides how the capture ends) and, on Linux, gets SIGTERM if the thread that
//!   started it ends first (`PR_SET_PDEATHSIG`);
//! - a supervisor thread ends it with SIGTERM to its group when a stop condition is met:
//!   `duration:SECONDS`, `filesize:KB` (kB of 1000 bytes, as dumpcap counts them, of the
//!   stream read so far), SIGINT, SIGTERM or SIGHUP to kwire (with [`LiveOptions::signals`]),
//!   or a `-w` file that cannot be written; `packets:N` is passed on as the child's own `-c N`.
//!   The child flushes what it holds and exits; the reader reads to the end of the stream, so
//!   every packet captured is decoded. A child still running 3 seconds after SIGTERM, or a
//!   second signal to kwire, gets SIGKILL;
//! - [`LiveCapture::finish`] (and `Drop`, on every other path, panics included) asks the child
//!   to stop if it still runs, waits for it (SIGKILL after 3 seconds) and reaps it, so no
//!   capture process is ever left running.
//!
//! The reader ([`LiveReader`]) copies every byte it reads from the child to the `-w` file, if
//! any: the file is the captured packets themselves (dumpcap's pcapng; tcpdump's pcap
//! rewritten block by block as pcapng), not kwire's output, and holds exactly what kwire read.
//!
//! Sources: dumpcap(1) and tcpdump(8) (their options and messages), tshark(1) (`-a`).

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a child asked to stop (SIGTERM) may take before it gets SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// How often the supervisor looks at the signals, the clock and the bytes read.
const TICK: Duration = Duration::from_millis(20);

/// Most bytes of the child's stderr kept (its messages are a few lines).
const MAX_STDERR: usize = 64 << 10;

/// A capture program kwire can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// Wireshark's capture program: pcapng on stdout, several interfaces.
    Dumpcap,
    /// tcpdump: pcap on stdout, one interface (`any` for all).
    Tcpdump,
}

impl Tool {
    /// The program's name, as looked up on `PATH`.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Dumpcap => "dumpcap",
            Tool::Tcpdump => "tcpdump",
        }
    }
}

/// A capture program found on `PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capturer {
    /// Which program.
    pub tool: Tool,
    /// Where it is.
    pub path: PathBuf,
}

impl Capturer {
    /// dumpcap if it is on `PATH`, else tcpdump.
    ///
    /// # Errors
    /// [`LiveError::NoTool`] when neither is.
    pub fn find() -> Result<Capturer, LiveError> {
        Capturer::find_in(std::env::var_os("PATH"))
    }

    /// As [`Capturer::find`], in the folders of `path` (a `PATH` value).
    ///
    /// # Errors
    /// [`LiveError::NoTool`] when neither program is there.
    pub fn find_in(path: Option<OsString>) -> Result<Capturer, LiveError> {
        let dirs: Vec<PathBuf> = path
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        for tool in [Tool::Dumpcap, Tool::Tcpdump] {
            for d in &dirs {
                let p = d.join(tool.name());
                if is_executable(&p) {
                    return Ok(Capturer { tool, path: p });
                }
            }
        }
        Err(LiveError::NoTool)
    }

    /// The interfaces the program can capture on: its `-D` list, as it prints it (dumpcap:
    /// `1. eth0`; tcpdump: `1.eth0 [Up, Running]`).
    ///
    /// # Errors
    /// The program cannot run, or fails (its message).
    pub fn list_interfaces(&self) -> Result<String, LiveError> {
        let out = Command::new(&self.path)
            .arg("-D")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| LiveError::Spawn {
                tool: self.tool,
                error: e.to_string(),
            })?;
        if !out.status.success() {
            return Err(LiveError::Failed {
                tool: self.tool,
                status: out.status.to_string(),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A condition that ends a live capture (tshark's and dumpcap's `-a`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Autostop {
    /// `duration:SECONDS`: this long after the child started (fractions allowed).
    Duration(Duration),
    /// `packets:N`: after N packets, counted by the child (its `-c N`).
    Packets(u64),
    /// `filesize:KB`: once the capture stream read holds this many kB (1000 bytes).
    Filesize(u64),
}

impl std::str::FromStr for Autostop {
    type Err = String;

    /// `duration:5`, `duration:0.5`, `packets:100`, `filesize:1024`.
    fn from_str(s: &str) -> Result<Autostop, String> {
        let (k, v) = s.split_once(':').ok_or_else(|| {
            format!("{s:?}: a stop condition is duration:SECONDS, packets:N or filesize:KB")
        })?;
        let count = |what: &str| -> Result<u64, String> {
            match v.parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("{k}:{v}: {what} is a whole number above 0")),
            }
        };
        match k {
            "duration" => match v.parse::<f64>() {
                Ok(d) if d > 0.0 && d.is_finite() && d < 1e9 => {
                    Ok(Autostop::Duration(Duration::from_secs_f64(d)))
                }
                _ => Err(format!(
                    "duration:{v}: the seconds are a number above 0 (fractions allowed)"
                )),
            },
            "packets" => count("the packet count").map(Autostop::Packets),
            "filesize" => count("the size in kB").map(Autostop::Filesize),
            "files" => Err("files:N stops dumpcap's ring buffer of files, which kwire does not write; stop with duration:, packets: or filesize:".into()),
            _ => Err(format!(
                "{k}: no such stop condition (duration:SECONDS, packets:N, filesize:KB)"
            )),
        }
    }
}

/// What to capture and when to stop.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    /// The interfaces (dumpcap's `-i`: a name or a number of the `-D` list; `any` for all).
    /// tcpdump takes one.
    pub interfaces: Vec<String>,
    /// The capture filter (BPF, libpcap's syntax), passed on; `None` captures everything.
    pub filter: Option<String>,
    /// Stop conditions; the first one met ends the capture.
    pub autostop: Vec<Autostop>,
    /// A file to copy the capture stream to, as it is read (`-w`): pcapng (tcpdump's pcap
    /// is rewritten as pcapng).
    pub write: Option<PathBuf>,
    /// Catch SIGINT, SIGTERM and SIGHUP while the capture runs and end it on them (as
    /// tshark does: the capture stops, what was captured is read). A program that handles
    /// its own keys (a terminal UI) passes false and calls [`LiveCapture::stop`].
    pub signals: bool,
}

/// The capture filter kwire uses when the user gives none: the broker ports
/// (`tcp port 9092`, `tcp port 9092 or tcp port 9093`); none with `detect` (Kafka is
/// looked for on every port, so every packet is wanted).
pub fn default_filter(ports: &[u16], detect: bool) -> Option<String> {
    if detect {
        return None;
    }
    let ports: &[u16] = if ports.is_empty() { &[9092] } else { ports };
    Some(
        ports
            .iter()
            .map(|p| format!("tcp port {p}"))
            .collect::<Vec<_>>()
            .join(" or "),
    )
}

/// Why a live capture stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// kwire got this signal (SIGINT, SIGTERM, SIGHUP).
    Signal(i32),
    /// `-a duration:` was reached.
    Duration,
    /// `-a filesize:` was reached.
    Filesize,
    /// The child stopped after `-a packets:` packets.
    Packets,
    /// The reader stopped reading (`-c` reached, output closed) or [`LiveCapture::stop`]
    /// was called.
    Reader,
    /// The `-w` file could not be written.
    WriteFailed,
    /// The child ended by itself, successfully.
    ChildEnded,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Signal(s) => write!(f, "stopped by {}", signal_name(*s)),
            StopReason::Duration => f.write_str("stopped at -a duration"),
            StopReason::Filesize => f.write_str("stopped at -a filesize"),
            StopReason::Packets => f.write_str("stopped at -a packets"),
            StopReason::Reader => f.write_str("stopped when reading stopped"),
            StopReason::WriteFailed => f.write_str("stopped: the -w file could not be written"),
            StopReason::ChildEnded => f.write_str("ended by the capture program"),
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// What went wrong with a live capture. Each says what the user can do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveError {
    /// Neither dumpcap nor tcpdump is on `PATH`.
    NoTool,
    /// tcpdump captures on one interface; several were given.
    OneInterface,
    /// The program could not be started.
    Spawn {
        /// Which.
        tool: Tool,
        /// The OS error.
        error: String,
    },
    /// The `-w` file could not be created or written.
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: String,
    },
    /// Not allowed to capture: the program's message.
    Permission {
        /// Which program.
        tool: Tool,
        /// Its message.
        message: String,
    },
    /// No such interface: the program's message and its `-D` list.
    NoSuchInterface {
        /// Which program.
        tool: Tool,
        /// Its message.
        message: String,
        /// Its `-D` list (empty when that failed too).
        list: String,
    },
    /// The capture filter does not compile: the program's message.
    BadFilter {
        /// Which program.
        tool: Tool,
        /// Its message.
        message: String,
        /// The filter.
        filter: String,
    },
    /// The program failed before capturing anything, for another reason.
    Failed {
        /// Which program.
        tool: Tool,
        /// How it exited.
        status: String,
        /// Its message.
        message: String,
    },
    /// The program ended with an error during the capture.
    Died {
        /// Which program.
        tool: Tool,
        /// How it exited.
        status: String,
        /// Its message.
        message: String,
    },
}

/// Debian's packages of the two programs, for the messages.
const PACKAGES: &str = "install dumpcap (Debian package wireshark-common, which `apt install tshark` brings) or tcpdump (package tcpdump)";

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveError::NoTool => write!(
                f,
                "live capture runs dumpcap or tcpdump, and neither is on PATH: {PACKAGES}"
            ),
            LiveError::OneInterface => f.write_str(
                "tcpdump (dumpcap is not on PATH) captures on one interface: give one -i, or -i any, or install dumpcap (Debian package wireshark-common)",
            ),
            LiveError::Spawn { tool, error } => {
                write!(f, "cannot run {}: {error}", tool.name())
            }
            LiveError::Write { path, error } => write!(f, "-w {}: {error}", path.display()),
            LiveError::Permission { tool, message } => write!(
                f,
                "{} may not capture:\n{message}\nkwire: capturing needs root, or membership of the `wireshark` group on Debian (`sudo dpkg-reconfigure wireshark-common`, then `sudo usermod -a -G wireshark $USER` and log in again), or the capabilities on dumpcap (`sudo setcap cap_net_raw,cap_net_admin=eip $(command -v dumpcap)`)",
                tool.name()
            ),
            LiveError::NoSuchInterface {
                tool,
                message,
                list,
            } => {
                write!(f, "{message}\nkwire: the interfaces {} can capture on (-D):", tool.name())?;
                for l in list.lines().filter(|l| !l.trim().is_empty()) {
                    write!(f, "\n  {l}")?;
                }
                Ok(())
            }
            LiveError::BadFilter {
                tool,
                message,
                filter,
            } => write!(
                f,
                "{}: the capture filter (-f) {filter:?} does not compile:\n{message}",
                tool.name()
            ),
            LiveError::Failed {
                tool,
                status,
                message,
            } => write!(f, "{} failed ({status}):\n{message}", tool.name()),
            LiveError::Died {
                tool,
                status,
                message,
            } => write!(
                f,
                "{} ended during the capture ({status}){}{message}",
                tool.name(),
                if message.is_empty() { "" } else { ":\n" }
            ),
        }
    }
}

impl std::error::Error for LiveError {}

/// State shared by the capture's owner, its reader and its supervisor thread.
struct Shared {
    /// The child's pid, which is also its process group's id.
    pid: rustix::process::Pid,
    /// A stop was asked for (the child got SIGTERM).
    stop: AtomicBool,
    /// Why, and when.
    reason: Mutex<Option<(StopReason, Instant)>>,
    /// Bytes read from the child.
    bytes: AtomicU64,
    /// The child closed its output before any stop was asked for.
    ended_unasked: AtomicBool,
    /// The child closed its output.
    eof: AtomicBool,
    /// The supervisor is to end.
    done: AtomicBool,
    /// The child got SIGKILL.
    killed: AtomicBool,
    /// The first error writing the `-w` file.
    write_error: Mutex<Option<String>>,
}

impl Shared {
    /// Asks the child to stop (SIGTERM to its group), once; the first reason is kept.
    fn ask(&self, why: StopReason) {
        if !self.stop.swap(true, Ordering::SeqCst) {
            if let Ok(mut r) = self.reason.lock() {
                *r = Some((why, Instant::now()));
            }
            self.signal(rustix::process::Signal::TERM);
        }
    }

    /// Sends `sig` to the child's process group. The child is not yet reaped whenever
    /// this runs (its owner reaps it only after the supervisor ended), so the group is
    /// still the child's.
    fn signal(&self, sig: rustix::process::Signal) {
        let _ = rustix::process::kill_process_group(self.pid, sig);
    }

    fn reason(&self) -> Option<(StopReason, Instant)> {
        self.reason.lock().ok().and_then(|r| *r)
    }
}

/// The `-w` file: the capture stream as it is read; tcpdump's pcap rewritten as pcapng.
struct Tee {
    file: File,
    path: PathBuf,
    pcapng: Option<PcapToPcapng>,
}

impl Tee {
    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        match &mut self.pcapng {
            Some(c) => c.push(b, &mut self.file),
            None => self.file.write_all(b),
        }
    }
}

/// Largest pcap record the rewriting to pcapng accepts (tcpdump's snap length is 256 KiB).
const MAX_RECORD: usize = 16 << 20;

/// Rewrites a classic pcap stream (tcpdump's `-w -`) as pcapng as it comes, for `-w`: a
/// Section Header Block, one Interface Description Block (the pcap's link type and snap
/// length; `if_tsresol` 6 or 9 for micro- or nanosecond timestamps), and an Enhanced Packet
/// Block a record, all little-endian. A stream that is not pcap, or a record longer than
/// 16 MiB, makes it copy the rest as it is. Sources: the pcap file format and pcapng
/// (draft-ietf-opsawg-pcapng) block layouts.
#[derive(Debug, Default)]
struct PcapToPcapng {
    pending: Vec<u8>,
    /// `None` before the file header; then whether it is big-endian and nanosecond.
    format: Option<(bool, bool)>,
    raw: bool,
}

/// A pcapng block: type, total length, body (padded to 4 bytes), total length.
fn block(kind: u32, body: &[u8], out: &mut Vec<u8>) {
    let pad = (4 - body.len() % 4) % 4;
    let total = (12 + body.len() + pad) as u32;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.extend(std::iter::repeat_n(0u8, pad));
    out.extend_from_slice(&total.to_le_bytes());
}

impl PcapToPcapng {
    fn push(&mut self, data: &[u8], w: &mut impl Write) -> io::Result<()> {
        if self.raw {
            return w.write_all(data);
        }
        self.pending.extend_from_slice(data);
        let mut out = Vec::new();
        let mut at = 0;
        let p = &self.pending;
        loop {
            let Some((be, nanos)) = self.format else {
                if p.len() < 24 {
                    break;
                }
                let magic = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
                let (be, nanos) = match magic {
                    0xa1b2_c3d4 => (false, false),
                    0xa1b2_3c4d => (false, true),
                    0xd4c3_b2a1 => (true, false),
                    0x4d3c_b2a1 => (true, true),
                    _ => {
                        self.raw = true;
                        break;
                    }
                };
                let rd = |i: usize| {
                    let b = [p[i], p[i + 1], p[i + 2], p[i + 3]];
                    if be {
                        u32::from_be_bytes(b)
                    } else {
                        u32::from_le_bytes(b)
                    }
                };
                let (snaplen, link) = (rd(16), rd(20) & 0xffff);
                // SHB: byte-order magic, version 1.0, section length unknown (-1).
                let mut shb = Vec::with_capacity(16);
                shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
                shb.extend_from_slice(&1u16.to_le_bytes());
                shb.extend_from_slice(&0u16.to_le_bytes());
                shb.extend_from_slice(&(-1i64).to_le_bytes());
                block(0x0a0d_0d0a, &shb, &mut out);
                // IDB: link type, snap length, if_tsresol (option 9), end of options.
                let mut idb = Vec::with_capacity(20);
                idb.extend_from_slice(&(link as u16).to_le_bytes());
                idb.extend_from_slice(&0u16.to_le_bytes());
                idb.extend_from_slice(&snaplen.to_le_bytes());
                idb.extend_from_slice(&9u16.to_le_bytes());
                idb.extend_from_slice(&1u16.to_le_bytes());
                idb.extend_from_slice(&[if nanos { 9 } else { 6 }, 0, 0, 0]);
                idb.extend_from_slice(&[0, 0, 0, 0]);
                block(1, &idb, &mut out);
                self.format = Some((be, nanos));
                at = 24;
                continue;
            };
            let rest = &p[at..];
            if rest.len() < 16 {
                break;
            }
            let rd = |i: usize| {
                let b = [rest[i], rest[i + 1], rest[i + 2], rest[i + 3]];
                if be {
                    u32::from_be_bytes(b)
                } else {
                    u32::from_le_bytes(b)
                }
            };
            let caplen = rd(8) as usize;
            if caplen > MAX_RECORD {
                self.raw = true;
                break;
            }
            if rest.len() < 16 + caplen {
                break;
            }
            let scale: u64 = if nanos { 1_000_000_000 } else { 1_000_000 };
            let units = u64::from(rd(0)) * scale + u64::from(rd(4));
            let mut epb = Vec::with_capacity(20 + caplen);
            epb.extend_from_slice(&0u32.to_le_bytes());
            epb.extend_from_slice(&((units >> 32) as u32).to_le_bytes());
            epb.extend_from_slice(&(units as u32).to_le_bytes());
            epb.extend_from_slice(&(caplen as u32).to_le_bytes());
            epb.extend_from_slice(&rd(12).to_le_bytes());
            epb.extend_from_slice(&rest[16..16 + caplen]);
            block(6, &epb, &mut out);
            at += 16 + caplen;
        }
        if self.raw {
            // Not pcap after all (or a corrupt record): the rest as it is.
            out.extend_from_slice(&self.pending[at..]);
            self.pending.clear();
        } else {
            self.pending.drain(..at);
        }
        w.write_all(&out)
    }
}

/// The capture stream: the child's stdout, copied to the `-w` file as it is read.
/// Reads block until the child writes (or ends); the end of the stream is the child's end.
pub struct LiveReader {
    out: ChildStdout,
    tee: Option<Tee>,
    shared: Arc<Shared>,
}

impl fmt::Debug for LiveReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveReader")
            .field("bytes", &self.shared.bytes.load(Ordering::Relaxed))
            .field("tee", &self.tee.as_ref().map(|t| &t.path))
            .finish()
    }
}

impl Read for LiveReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = loop {
            match self.out.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r?,
            }
        };
        if n == 0 {
            if !self.shared.stop.load(Ordering::SeqCst) {
                self.shared.ended_unasked.store(true, Ordering::SeqCst);
            }
            self.shared.eof.store(true, Ordering::SeqCst);
            return Ok(0);
        }
        self.shared.bytes.fetch_add(n as u64, Ordering::SeqCst);
        if let Some(t) = &mut self.tee {
            if let Err(e) = t.write(&buf[..n]) {
                if let Ok(mut w) = self.shared.write_error.lock() {
                    w.get_or_insert(e.to_string());
                }
                self.tee = None;
                self.shared.ask(StopReason::WriteFailed);
            }
        }
        Ok(n)
    }
}

/// How a live capture ended ([`LiveCapture::finish`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveEnd {
    /// Why it stopped.
    pub reason: StopReason,
    /// The child's own counts, as it printed them (dumpcap: `Packets captured: 12`,
    /// `Packets received/dropped on interface 'lo': 12/0 ...`; tcpdump: `12 packets
    /// captured`, `0 packets dropped by kernel`...): packets the kernel dropped are said
    /// here.
    pub counts: Vec<String>,
    /// Bytes of capture stream read.
    pub bytes: u64,
    /// Whether the child was killed (SIGKILL) because it did not stop in time.
    pub killed: bool,
    /// A failure: the capture could not start (nothing was captured), the child died
    /// during it, or the `-w` file could not be written.
    pub error: Option<LiveError>,
}

/// A running capture child. Dropping it stops and reaps the child.
pub struct LiveCapture {
    capturer: Capturer,
    options: LiveOptions,
    args: Vec<String>,
    child: Option<Child>,
    shared: Arc<Shared>,
    supervisor: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<String>>,
    killed: bool,
}

impl fmt::Debug for LiveCapture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveCapture")
            .field("command", &self.command_line())
            .finish()
    }
}

/// Quotes `s` for a shell when it needs it (for the line that shows the command).
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@+".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The child's arguments for `opts`.
fn arguments(tool: Tool, opts: &LiveOptions) -> Result<Vec<String>, LiveError> {
    let mut a: Vec<String> = Vec::new();
    // Of several conditions of a kind, the first met is the smallest.
    let packets = opts
        .autostop
        .iter()
        .filter_map(|s| match s {
            Autostop::Packets(n) => Some(*n),
            _ => None,
        })
        .min();
    match tool {
        Tool::Dumpcap => {
            // A -f before any -i is the filter of every interface (one after an -i is
            // that interface's only).
            if let Some(f) = &opts.filter {
                a.extend(["-f".into(), f.clone()]);
            }
            for i in &opts.interfaces {
                a.extend(["-i".into(), i.clone()]);
            }
            if let Some(n) = packets {
                a.extend(["-c".into(), n.to_string()]);
            }
            a.extend(["-w".into(), "-".into(), "-q".into()]);
        }
        Tool::Tcpdump => {
            if opts.interfaces.len() > 1 {
                return Err(LiveError::OneInterface);
            }
            for i in &opts.interfaces {
                a.extend(["-i".into(), i.clone()]);
            }
            // -U: each packet written as the kernel hands it over. Not --immediate-mode:
            // libpcap then gives each packet a slot of the snap length (256 KiB) in the
            // 2 MiB ring, which a burst on loopback overflows (152 of 184 packets dropped
            // by the kernel in a test); in blocks, packets come at most a second late.
            a.push("-U".into());
            a.extend(["-w".into(), "-".into()]);
            if let Some(n) = packets {
                a.extend(["-c".into(), n.to_string()]);
            }
            if let Some(f) = &opts.filter {
                // One argument: tcpdump joins the words after its options into the filter.
                a.extend(["--".into(), f.clone()]);
            }
        }
    }
    Ok(a)
}

impl LiveCapture {
    /// Starts `capturer` on `opts.interfaces` with `opts.filter`, writing the capture to
    /// a pipe; returns the capture and the reader of its stream (pcapng from dumpcap, pcap
    /// from tcpdump; [`crate::input::read_capture`] reads both). The supervisor thread and,
    /// with `opts.signals`, the signal handlers start with it.
    ///
    /// An interface that does not exist, a filter that does not compile or missing
    /// privileges show only once the child has ended: [`LiveCapture::finish`] returns them.
    ///
    /// # Errors
    /// The `-w` file cannot be created; tcpdump and several interfaces; the program cannot
    /// be started; the signal handlers cannot be installed.
    pub fn start(
        capturer: &Capturer,
        opts: &LiveOptions,
    ) -> Result<(LiveCapture, LiveReader), LiveError> {
        let args = arguments(capturer.tool, opts)?;
        let tee = match &opts.write {
            Some(p) => Some(Tee {
                file: File::create(p).map_err(|e| LiveError::Write {
                    path: p.clone(),
                    error: e.to_string(),
                })?,
                path: p.clone(),
                pcapng: (capturer.tool == Tool::Tcpdump).then(PcapToPcapng::default),
            }),
            None => None,
        };
        let signals = if opts.signals {
            use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
            Some(
                signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(|e| {
                    LiveError::Spawn {
                        tool: capturer.tool,
                        error: format!("cannot catch SIGINT and SIGTERM: {e}"),
                    }
                })?,
            )
        } else {
            None
        };
        let mut cmd = Command::new(&capturer.path);
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        #[cfg(target_os = "linux")]
        // SAFETY: the closure runs in the forked child before exec, and only makes the
        // prctl(PR_SET_PDEATHSIG) system call, which is async-signal-safe; it allocates
        // nothing and takes no lock.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::TERM,
                ))
                .map_err(io::Error::from)
            });
        }
        let mut child = cmd.spawn().map_err(|e| LiveError::Spawn {
            tool: capturer.tool,
            error: e.to_string(),
        })?;
        let (Some(out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(LiveError::Spawn {
                tool: capturer.tool,
                error: "no pipe to the child".into(),
            });
        };
        let Some(pid) = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(LiveError::Spawn {
                tool: capturer.tool,
                error: "the child has no pid".into(),
            });
        };
        let shared = Arc::new(Shared {
            pid,
            stop: AtomicBool::new(false),
            reason: Mutex::new(None),
            bytes: AtomicU64::new(0),
            ended_unasked: AtomicBool::new(false),
            eof: AtomicBool::new(false),
            done: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            write_error: Mutex::new(None),
        });
        let stderr = std::thread::Builder::new()
            .name("kwire-capture-stderr".into())
            .spawn(move || {
                let mut kept = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    match err.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            let room = MAX_STDERR.saturating_sub(kept.len());
                            kept.extend_from_slice(&buf[..n.min(room)]);
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                String::from_utf8_lossy(&kept).into_owned()
            });
        let deadline = opts
            .autostop
            .iter()
            .filter_map(|s| match s {
                Autostop::Duration(d) => Some(Instant::now() + *d),
                _ => None,
            })
            .min();
        let max_bytes = opts
            .autostop
            .iter()
            .filter_map(|s| match s {
                Autostop::Filesize(kb) => Some(kb.saturating_mul(1000)),
                _ => None,
            })
            .min();
        let sup = shared.clone();
        let supervisor = std::thread::Builder::new()
            .name("kwire-capture".into())
            .spawn(move || supervise(&sup, signals, deadline, max_bytes));
        let mut cap = LiveCapture {
            capturer: capturer.clone(),
            options: opts.clone(),
            args,
            child: Some(child),
            shared: shared.clone(),
            supervisor: None,
            stderr: None,
            killed: false,
        };
        // A thread that cannot start ends the capture at once (Drop reaps the child).
        cap.stderr = Some(stderr.map_err(|e| LiveError::Spawn {
            tool: capturer.tool,
            error: format!("cannot start a thread: {e}"),
        })?);
        cap.supervisor = Some(supervisor.map_err(|e| LiveError::Spawn {
            tool: capturer.tool,
            error: format!("cannot start a thread: {e}"),
        })?);
        let reader = LiveReader { out, tee, shared };
        Ok((cap, reader))
    }

    /// [`Capturer::find`] then [`LiveCapture::start`]: the one call a reader of captures
    /// needs to read a live capture instead (hand the reader to
    /// [`crate::input::read_capture`], then call [`LiveCapture::finish`]).
    ///
    /// # Errors
    /// As those two.
    pub fn open(opts: &LiveOptions) -> Result<(LiveCapture, LiveReader), LiveError> {
        LiveCapture::start(&Capturer::find()?, opts)
    }

    /// The program running the capture.
    pub fn capturer(&self) -> &Capturer {
        &self.capturer
    }

    /// The command line of the child, shell-quoted (`dumpcap -f 'tcp port 9092' -i lo -w - -q`).
    pub fn command_line(&self) -> String {
        std::iter::once(self.capturer.tool.name().to_string())
            .chain(self.args.iter().map(|a| shell_word(a)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Asks the child to stop (SIGTERM to its group): it flushes and exits, and the
    /// reader then reaches the end of the stream. For a caller that ends the capture
    /// itself (a key in a terminal UI); does nothing once a stop was asked for.
    pub fn stop(&self) {
        self.shared.ask(StopReason::Reader);
    }

    /// Waits up to `within` for the child to end by itself; `Some(true)` if it ended with
    /// success, `Some(false)` if it failed or was killed, `None` if it still runs. A
    /// capture that cannot start (no such interface, a filter that does not compile, no
    /// permission) ends within a few tens of milliseconds: a caller about to take over the
    /// terminal asks this first, so that the error is said on the normal screen (read the
    /// stream to its end, then [`LiveCapture::finish`] says what went wrong). The child is
    /// left waitable (`waitid` with `WNOWAIT`): it is reaped by `finish` only, so its
    /// process group stays its own while the supervisor may signal it.
    pub fn ended_within(&self, within: Duration) -> Option<bool> {
        use rustix::process::{waitid, WaitId, WaitIdOptions};
        let start = Instant::now();
        self.child.as_ref()?;
        loop {
            let opts = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
            match waitid(WaitId::Pid(self.shared.pid), opts) {
                Ok(Some(st)) => return Some(st.exited() && st.exit_status() == Some(0)),
                Ok(None) if start.elapsed() < within => std::thread::sleep(TICK),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Ends the capture: asks the child to stop if it still runs, waits for it (SIGKILL
    /// after 3 seconds) and reaps it, and says how it ended. Call it once the reader has
    /// reached its end or is dropped.
    pub fn finish(mut self) -> LiveEnd {
        let status = self.shut_down();
        let text = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let bytes = self.shared.bytes.load(Ordering::SeqCst);
        let unasked = self.shared.ended_unasked.load(Ordering::SeqCst);
        let tool = self.capturer.tool;
        let message = child_message(&text);
        let status_text = status.map_or_else(|| "not reaped".to_string(), |s| s.to_string());
        let mut error = None;
        let mut reason = self.shared.reason().map_or(StopReason::ChildEnded, |r| r.0);
        if unasked {
            let ok = status.is_some_and(|s| s.success());
            if ok {
                let packets = self
                    .options
                    .autostop
                    .iter()
                    .any(|s| matches!(s, Autostop::Packets(_)));
                reason = if packets {
                    StopReason::Packets
                } else {
                    StopReason::ChildEnded
                };
            } else if bytes == 0 {
                error = Some(self.start_failure(&message, status_text));
            } else {
                error = Some(LiveError::Died {
                    tool,
                    status: status_text,
                    message: message.clone(),
                });
            }
        }
        if let Some(e) = self.shared.write_error.lock().ok().and_then(|w| w.clone()) {
            error.get_or_insert(LiveError::Write {
                path: self.options.write.clone().unwrap_or_default(),
                error: e,
            });
        }
        LiveEnd {
            reason,
            counts: count_lines(&text),
            bytes,
            killed: self.killed || self.shared.killed.load(Ordering::SeqCst),
            error,
        }
    }

    /// What a child that failed before capturing anything says, classified.
    fn start_failure(&self, message: &str, status: String) -> LiveError {
        let tool = self.capturer.tool;
        let lower = message.to_ascii_lowercase();
        if lower.contains("permission") || lower.contains("operation not permitted") {
            return LiveError::Permission {
                tool,
                message: message.to_string(),
            };
        }
        if lower.contains("no device named")
            || lower.contains("no such device")
            || lower.contains("doesn't exist")
            || lower.contains("no suitable device")
        {
            return LiveError::NoSuchInterface {
                tool,
                message: message.to_string(),
                list: self.capturer.list_interfaces().unwrap_or_default(),
            };
        }
        if let Some(f) = &self.options.filter {
            let filterish = lower.contains("filter")
                || lower.contains("syntax error")
                || lower.contains("unknown")
                || lower.contains("illegal")
                || lower.contains("expression");
            if filterish {
                return LiveError::BadFilter {
                    tool,
                    message: message.to_string(),
                    filter: f.clone(),
                };
            }
        }
        LiveError::Failed {
            tool,
            status,
            message: message.to_string(),
        }
    }

    /// Stops the supervisor, then the child (asked first, killed after [`GRACE`]), and
    /// reaps it; its exit status (none if it could not be reaped).
    fn shut_down(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        // Whatever ended reading, a child still running is stopped now.
        if !self.shared.ended_unasked.load(Ordering::SeqCst) {
            self.shared.ask(StopReason::Reader);
        }
        self.shared.done.store(true, Ordering::SeqCst);
        if let Some(h) = self.supervisor.take() {
            let _ = h.join();
        }
        let since = self
            .shared
            .reason()
            .map_or_else(Instant::now, |r| r.1.min(Instant::now()));
        loop {
            match child.try_wait() {
                Ok(Some(s)) => return Some(s),
                Ok(None) if since.elapsed() < GRACE => std::thread::sleep(TICK),
                Ok(None) => {
                    self.killed = true;
                    self.shared.signal(rustix::process::Signal::KILL);
                    let _ = child.kill();
                    return child.wait().ok();
                }
                Err(_) => {
                    let _ = child.kill();
                    return child.wait().ok();
                }
            }
        }
    }
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        self.shut_down();
        if let Some(h) = self.stderr.take() {
            let _ = h.join();
        }
    }
}

/// The supervisor: ends the capture on a signal, at the deadline, past the size; kills a
/// child that does not stop in time; returns when its owner says so.
fn supervise(
    shared: &Shared,
    mut signals: Option<signal_hook::iterator::Signals>,
    deadline: Option<Instant>,
    max_bytes: Option<u64>,
) {
    let mut caught = 0u32;
    let mut killed = false;
    while !shared.done.load(Ordering::SeqCst) {
        if let Some(s) = signals.as_mut() {
            for sig in s.pending() {
                caught += 1;
                shared.ask(StopReason::Signal(sig));
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            shared.ask(StopReason::Duration);
        }
        if max_bytes.is_some_and(|m| shared.bytes.load(Ordering::SeqCst) >= m) {
            shared.ask(StopReason::Filesize);
        }
        // A second signal, or a child that does not end in time: SIGKILL. Its stream is
        // then cut where it was, and read to there.
        let late = shared
            .reason()
            .is_some_and(|(_, at)| at.elapsed() >= GRACE && !shared.eof.load(Ordering::SeqCst));
        if !killed && (caught >= 2 || late) {
            killed = true;
            shared.killed.store(true, Ordering::SeqCst);
            shared.signal(rustix::process::Signal::KILL);
        }
        std::thread::sleep(TICK);
    }
}

/// The child's message: its stderr without the lines that only say it started, trimmed.
fn child_message(text: &str) -> String {
    text.lines()
        .filter(|l| {
            !l.starts_with("Capturing on ")
                && !l.starts_with("File: ")
                && !l.starts_with("tcpdump: listening on ")
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// The lines of the child's stderr that count packets captured, received and dropped.
fn count_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("Packets captured:")
                || l.starts_with("Packets received/dropped")
                || l.ends_with("packets captured")
                || l.ends_with("packet captured")
                || l.contains("received by filter")
                || l.contains("dropped by kernel")
                || l.contains("dropped by interface")
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_conditions_parse_as_tshark_writes_them() {
        assert_eq!(
            "duration:5".parse::<Autostop>(),
            Ok(Autostop::Duration(Duration::from_secs(5)))
        );
        assert_eq!(
            "duration:0.25".parse::<Autostop>(),
            Ok(Autostop::Duration(Duration::from_millis(250)))
        );
        assert_eq!("packets:3".parse::<Autostop>(), Ok(Autostop::Packets(3)));
        assert_eq!(
            "filesize:10".parse::<Autostop>(),
            Ok(Autostop::Filesize(10))
        );
        for bad in [
            "duration",
            "duration:0",
            "duration:-1",
            "duration:x",
            "packets:0",
            "filesize:1.5",
            "time:3",
            "files:2",
        ] {
            assert!(bad.parse::<Autostop>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_default_filter_names_the_broker_ports() {
        assert_eq!(default_filter(&[], false).as_deref(), Some("tcp port 9092"));
        assert_eq!(
            default_filter(&[9092, 19092], false).as_deref(),
            Some("tcp port 9092 or tcp port 19092")
        );
        assert_eq!(default_filter(&[9092], true), None);
    }

    #[test]
    fn dumpcap_gets_the_filter_before_the_interfaces() {
        let o = LiveOptions {
            interfaces: vec!["lo".into(), "eth0".into()],
            filter: Some("tcp port 9092".into()),
            autostop: vec![
                Autostop::Packets(9),
                Autostop::Packets(7),
                Autostop::Duration(Duration::from_secs(1)),
            ],
            ..LiveOptions::default()
        };
        assert_eq!(
            arguments(Tool::Dumpcap, &o).unwrap(),
            [
                "-f",
                "tcp port 9092",
                "-i",
                "lo",
                "-i",
                "eth0",
                "-c",
                "7",
                "-w",
                "-",
                "-q"
            ]
        );
        assert_eq!(arguments(Tool::Tcpdump, &o), Err(LiveError::OneInterface));
        let one = LiveOptions {
            interfaces: vec!["any".into()],
            ..o
        };
        assert_eq!(
            arguments(Tool::Tcpdump, &one).unwrap(),
            [
                "-i",
                "any",
                "-U",
                "-w",
                "-",
                "-c",
                "7",
                "--",
                "tcp port 9092"
            ]
        );
    }

    #[test]
    fn the_tool_is_looked_for_on_path_only() {
        let dir = std::env::temp_dir().join(format!("kwire-live-path-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(
            Capturer::find_in(Some(dir.clone().into_os_string())),
            Err(LiveError::NoTool)
        );
        let t = dir.join("tcpdump");
        std::fs::write(&t, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = Capturer::find_in(Some(dir.clone().into_os_string())).unwrap();
        assert_eq!(found.tool, Tool::Tcpdump);
        std::fs::remove_dir_all(&dir).unwrap();
        let msg = LiveError::NoTool.to_string();
        assert!(
            msg.contains("dumpcap") && msg.contains("tcpdump") && msg.contains("wireshark-common")
        );
    }

    #[test]
    fn tcpdump_s_pcap_is_saved_as_pcapng_that_reads_the_same() {
        // A pcap made by kwire's own writer, fed to the rewriting a few bytes at a time.
        let mut pcap = Vec::new();
        {
            let mut w = crate::input::pcap_out::PcapWriter::new(&mut pcap).unwrap();
            let mut flow = crate::input::pcap_out::TcpFlow::new(
                "127.0.0.1:40000".parse().unwrap(),
                "127.0.0.1:9092".parse().unwrap(),
                [1000, 2000],
            );
            let t = 1_700_000_000_000_000;
            flow.open(&mut w, t).unwrap();
            let frame = [0u8, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 255, 255];
            flow.send(&mut w, true, t + 1000, &frame).unwrap();
            flow.close(&mut w, t + 2000).unwrap();
        }
        let mut conv = PcapToPcapng::default();
        let mut ng = Vec::new();
        for chunk in pcap.chunks(7) {
            conv.push(chunk, &mut ng).unwrap();
        }
        assert_eq!(&ng[..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
        let events = |b: &[u8]| {
            let mut ev = Vec::new();
            let st = crate::input::read_capture(
                b,
                &crate::input::CaptureOptions::default(),
                &crate::input::DefaultPlausibility,
                |e| ev.push(e),
            )
            .unwrap();
            (ev, st.packets)
        };
        let (a, na) = events(&pcap);
        let (b, nb) = events(&ng);
        assert!(na > 0 && na == nb, "{na} {nb}");
        assert_eq!(a, b);
        // Not pcap: copied as it is.
        let mut raw = PcapToPcapng::default();
        let mut out = Vec::new();
        raw.push(&[1u8; 40], &mut out).unwrap();
        raw.push(&[2u8; 3], &mut out).unwrap();
        assert_eq!(out.len(), 43);
    }

    /// A stand-in capture program: a shell script (it ignores dumpcap's arguments).
    fn script(name: &str, body: &str) -> (Capturer, PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("kwire-live-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("dumpcap");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        (
            Capturer {
                tool: Tool::Dumpcap,
                path: p,
            },
            dir,
        )
    }

    fn gone(pid: u32) -> bool {
        // Reaped: no /proc entry (a zombie would still have one).
        !Path::new(&format!("/proc/{pid}")).exists()
    }

    fn opts() -> LiveOptions {
        LiveOptions {
            interfaces: vec!["lo".into()],
            ..LiveOptions::default()
        }
    }

    #[test]
    fn a_panic_while_capturing_still_reaps_the_child() {
        let (c, dir) = script("panic", "exec sleep 30");
        let pid = std::sync::Mutex::new(0);
        let r = std::panic::catch_unwind(|| {
            let (cap, _reader) = LiveCapture::start(&c, &opts()).unwrap();
            *pid.lock().unwrap() = cap.child.as_ref().unwrap().id();
            panic!("a bug while reading");
        });
        assert!(r.is_err());
        let pid = *pid.lock().unwrap();
        assert!(pid > 0 && gone(pid), "the child {pid} is left running");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_child_that_ignores_sigterm_is_killed_with_its_group() {
        // The script ignores SIGTERM, and so does the grandchild it leaves behind.
        let (c, dir) = script(
            "stubborn",
            "trap '' TERM\nsleep 30 &\necho $! > \"$(dirname \"$0\")/grandchild\"\nexec sleep 30",
        );
        let (cap, reader) = LiveCapture::start(&c, &opts()).unwrap();
        let pid = cap.child.as_ref().unwrap().id();
        let grandchild = dir.join("grandchild");
        let t = Instant::now();
        while std::fs::read_to_string(&grandchild).map_or(true, |s| !s.ends_with('\n')) {
            assert!(t.elapsed() < Duration::from_secs(10));
            std::thread::sleep(TICK);
        }
        let gpid: u32 = std::fs::read_to_string(&grandchild)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        drop(reader);
        let t = Instant::now();
        let end = cap.finish();
        assert!(t.elapsed() >= GRACE, "killed before the grace period");
        assert!(end.killed);
        assert_eq!(end.reason, StopReason::Reader);
        assert!(gone(pid), "the child is left");
        // The grandchild (reparented, reaped by init) got SIGKILL with the group.
        let t = Instant::now();
        // (A zombie until whoever adopted it reaps it: dead all the same.)
        let dead = |p: u32| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).map_or(true, |st| {
                st.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
        };
        while !dead(gpid) {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "the grandchild {gpid} is left"
            );
            std::thread::sleep(TICK);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_child_that_fails_at_once_is_a_start_failure_with_its_message() {
        let (c, dir) = script(
            "fails",
            "echo 'dumpcap: You do not have permission to capture on device \"lo\".' >&2; exit 1",
        );
        let (cap, mut reader) = LiveCapture::start(&c, &opts()).unwrap();
        let mut b = Vec::new();
        reader.read_to_end(&mut b).unwrap();
        let end = cap.finish();
        match end.error {
            Some(LiveError::Permission { message, .. }) => assert!(message.contains("permission")),
            e => panic!("{e:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ended_within_tells_a_failed_start_and_leaves_the_child_to_finish() {
        // Fails at once: seen within the wait, still a zombie (not reaped) until finish.
        let (c, dir) = script(
            "early",
            "echo 'dumpcap: There is no device named \"x\".' >&2; exit 1",
        );
        let (cap, mut reader) = LiveCapture::start(&c, &opts()).unwrap();
        let pid = cap.child.as_ref().unwrap().id();
        assert_eq!(cap.ended_within(Duration::from_secs(10)), Some(false));
        assert!(!gone(pid), "ended_within reaped the child");
        let mut b = Vec::new();
        reader.read_to_end(&mut b).unwrap();
        let end = cap.finish();
        assert!(gone(pid));
        assert!(
            matches!(end.error, Some(LiveError::NoSuchInterface { .. })),
            "{:?}",
            end.error
        );
        std::fs::remove_dir_all(&dir).unwrap();
        // Still running after the wait: None, and the child runs on until stopped.
        let (c, dir) = script("running", "exec sleep 30");
        let (cap, reader) = LiveCapture::start(&c, &opts()).unwrap();
        let pid = cap.child.as_ref().unwrap().id();
        let t = Instant::now();
        assert_eq!(cap.ended_within(Duration::from_millis(200)), None);
        assert!(t.elapsed() >= Duration::from_millis(200));
        drop(reader);
        let end = cap.finish();
        assert_eq!(end.reason, StopReason::Reader);
        assert!(gone(pid));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_the_counting_lines_are_kept() {
        let dumpcap = "Capturing on 'Loopback: lo'\nFile: -\nPackets captured: 12\nPackets received/dropped on interface 'Loopback: lo': 12/0 (pcap:0/dumpcap:0/flushed:0/ps_ifdrop:0) (100.0%)\n";
        assert_eq!(count_lines(dumpcap).len(), 2);
        assert_eq!(child_message(dumpcap).lines().count(), 2);
        let tcpdump = "tcpdump: listening on lo, link-type EN10MB (Ethernet), snapshot length 262144 bytes\n12 packets captured\n24 packets received by filter\n0 packets dropped by kernel\n";
        assert_eq!(count_lines(tcpdump).len(), 3);
    }
}
