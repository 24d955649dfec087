//! The capture engine, below the command line: reads a capture (a file or stdin), finds
//! Kafka in it ([`crate::input`]), pairs and decodes every message ([`crate::session`],
//! [`crate::decode`]) on one thread or a pool ([`crate::pipeline`]), runs the caller's
//! per-message work (a printer, the display filter, the statistics, the export) and hands
//! each result, every notice and the closing tally to a [`Sink`]. It says nothing itself:
//! the sink decides where notices go (the command line sends them to stderr), and the
//! caller maps the [`Outcome`] to an exit status.
//!
//! ```text
//! file/stdin -> input::read_capture -> Session::decode (or prepare + workers)
//!            -> work(message, context, out)  -> Sink::message (in capture order)
//!            -> notices                      -> Sink::notice
//!            -> the closing lines            -> Outcome
//! ```

mod live;

use crate::decode::{DecodeOptions, Detail};
use crate::input::{self, CaptureOptions, Event, FrameKind};
use crate::schema::Schema;
use crate::session::{Context, Prepared, SchemaPlausibility, Session};
use crate::tree::{Buffers, Message};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Where the capture is and how to find Kafka in it (the command line's `--port`,
/// `--detect`, `--max-frame`, `--all-notices`, `--tls-keylog`).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Broker ports (none: 9092).
    pub ports: Vec<u16>,
    /// Recognise Kafka on any port from its first frames.
    pub detect: bool,
    /// Largest frame accepted, in bytes, size prefix included.
    pub max_frame: usize,
    /// Bytes all connections together may hold in flight
    /// ([`CaptureOptions::max_in_flight`]).
    pub max_in_flight: usize,
    /// Seconds of capture time after which a silent connection gives up what it holds;
    /// 0: never ([`CaptureOptions::idle_timeout`]).
    pub idle_timeout: u64,
    /// Every notice and every unanswered request as a line (else the first 50 notices
    /// of each kind and the first 5 unanswered requests; the closing line counts all).
    pub all_notices: bool,
    /// TLS key logs to read, each with whether the user named it (an unreadable one is
    /// then an error; else, as for `SSLKEYLOGFILE`, a notice).
    pub keylogs: Vec<(PathBuf, bool)>,
    /// A live capture to read instead of the file (`-i`: a dumpcap or tcpdump child whose
    /// pcapng stream is read as stdin is; see [`input::live`]). Its key logs are followed:
    /// a running client may still be writing them.
    pub live: Option<input::live::LiveOptions>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            ports: Vec::new(),
            detect: false,
            max_frame: 100 << 20,
            max_in_flight: CaptureOptions::default().max_in_flight,
            idle_timeout: CaptureOptions::default().idle_timeout,
            all_notices: false,
            keylogs: Vec::new(),
            live: None,
        }
    }
}

/// Where the engine's results go, on the reading thread, in capture order.
pub trait Sink<O> {
    /// One message's result (what the per-message work returned); returns whether the
    /// message was shown (counted for [`RunOptions::limit`] and the closing line).
    fn message(&mut self, o: O) -> bool;
    /// One notice line (`kwire: ...`; with several captures, named by capture), as it
    /// comes: what was skipped or could not be read, and why.
    fn notice(&mut self, line: String);
    /// The capture file about to be read, `len` bytes long: the sink may wrap the reader
    /// (a progress display). Not called for stdin, several captures or a quiet pass.
    fn input(&mut self, len: u64, r: Box<dyn Read + Send>) -> Box<dyn Read + Send> {
        let _ = len;
        r
    }
    /// Reading ended (before the closing lines are made).
    fn done(&mut self) {}
}

/// A sink that keeps nothing and shows nothing (a first pass).
pub struct Quiet;

impl<O> Sink<O> for Quiet {
    fn message(&mut self, _: O) -> bool {
        false
    }
    fn notice(&mut self, _: String) {}
}

/// What ends a run early.
#[derive(Debug)]
pub enum RunError {
    /// Reading the input, or writing the output or the work's own error, failed.
    Io(std::io::Error),
    /// Input that cannot be used (a missing file, not a capture: with a hint), as text.
    Input(String),
    /// A request that cannot be met (`-Y unanswered` on stdin), as text.
    Usage(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Io(e) => write!(f, "{e}"),
            RunError::Input(m) | RunError::Usage(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

/// The key logs of [`Settings::keylogs`] read into one [`input::tls::KeyLog`]. Each line
/// that cannot be used is a `kwire: FILE:LINE: ...` notice line; no secret is in them.
///
/// # Errors
/// A key log given by the user (`--tls-keylog`) that cannot be read; one named by
/// `SSLKEYLOGFILE` that cannot be read is a notice line.
pub fn load_keylogs(
    files: &[(PathBuf, bool)],
    follow: bool,
) -> Result<(input::tls::KeyLog, Vec<String>), RunError> {
    let mut keys = input::tls::KeyLog::new();
    let mut lines = Vec::new();
    for (p, given) in files {
        let given = *given;
        match std::fs::read(p) {
            Ok(text) => {
                // Followed, the whole lines only: the rest is read with what comes after it.
                let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                let text = if follow { &text[..whole] } else { &text[..] };
                if follow {
                    keys.follow(p.clone(), whole as u64);
                }
                let problems = keys.add_text(text, &p.display().to_string());
                let n = problems.len();
                let lines_read = text
                    .split(|&b| b == b'\n')
                    .filter(|l| {
                        let l = l.trim_ascii();
                        !l.is_empty() && !l.starts_with(b"#")
                    })
                    .count();
                // A file none of whose lines is a key log line (a capture or a JSON file
                // given by mistake) is said to be one, with its first few lines only.
                let mut shown = NOTICE_LINES_PER_KIND as usize;
                if n > 0 && n == lines_read {
                    lines.push(format!(
                        "kwire: key log {}: no line of it is a key log line: it is not an NSS key log (SSLKEYLOGFILE format, `LABEL CLIENT_RANDOM SECRET` lines)",
                        p.display()
                    ));
                    shown = 3;
                }
                for pr in problems.iter().take(shown) {
                    lines.push(format!("kwire: key log {pr}"));
                }
                if n > shown {
                    lines.push(format!(
                        "kwire: key log {}: {} more lines could not be used",
                        p.display(),
                        n - shown
                    ));
                }
            }
            Err(e) if follow && e.kind() == std::io::ErrorKind::NotFound => {
                keys.follow(p.clone(), 0);
                lines.push(format!(
                    "kwire: key log {}: not there yet; read when a TLS connection needs its keys",
                    p.display()
                ));
            }
            Err(e) if given => {
                return Err(RunError::Input(format!(
                    "--tls-keylog {}: {e}",
                    p.display()
                )))
            }
            Err(e) => lines.push(format!(
                "kwire: SSLKEYLOGFILE {}: {e}; TLS connections stay encrypted",
                p.display()
            )),
        }
    }
    Ok((keys, lines))
}

/// Notice lines printed per kind; the rest of that kind are only counted (in the closing
/// line), so a capture with a million broken connections does not flood the terminal.
const NOTICE_LINES_PER_KIND: u64 = 50;

/// Unanswered requests listed one a line after the capture; the rest are counted.
const UNANSWERED_LINES: usize = 5;

/// Counts for the closing line.
#[derive(Default, Debug)]
struct Tally {
    messages: u64,
    shown: u64,
    with_errors: u64,
    incomplete: u64,
    undecodable: u64,
    sasl_tokens: u64,
    notices: BTreeMap<String, (u64, u64)>,
}

impl Tally {
    /// Counts notice `n` and hands on its line, if it has one ([`Tally::notice`]).
    fn tell(&mut self, n: &input::Notice, all: bool, say: &impl Fn(String)) {
        if let Some(line) = self.notice(n, all) {
            say(line);
        }
    }

    /// Counts a frame as it is read.
    fn frame(&mut self, f: &input::Frame) {
        self.messages += 1;
        if f.kind == FrameKind::SaslToken {
            self.sasl_tokens += 1;
        }
        if f.ctx.incomplete {
            self.incomplete += 1;
        }
    }

    /// Counts notice `n` and returns the line to print for it, if any: the first
    /// [`NOTICE_LINES_PER_KIND`] of each kind (all with `all`), then one line saying the
    /// rest are counted.
    fn notice(&mut self, n: &input::Notice, all: bool) -> Option<String> {
        let kind = format!("{:?}", n.kind);
        let e = self.notices.entry(kind).or_default();
        e.0 += 1;
        e.1 += n.bytes.unwrap_or(0);
        match e.0 {
            _ if all => Some(format!("kwire: {n}")),
            k if k <= NOTICE_LINES_PER_KIND => Some(format!("kwire: {n}")),
            k if k == NOTICE_LINES_PER_KIND + 1 => Some(format!(
                "kwire: more {:?} notices are not shown (--all-notices shows them); the closing line counts them",
                n.kind
            )),
            _ => None,
        }
    }
}

/// What reading a capture came to.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The closing lines (for the terminal): requests left unanswered (a few, or all with
    /// `--all-notices`), then one line counting packets, connections, messages, errors
    /// and what was skipped.
    pub closing: Vec<String>,
    /// The file ended inside a record (and reading was not stopped on purpose).
    pub truncated: bool,
    /// Reading stopped at a record or block that cannot be parsed (its notice says
    /// which): the input is unreadable from there, though not cut.
    pub corrupt: bool,
    /// Messages with a decode error somewhere in their tree.
    pub with_errors: u64,
    /// Requests that got no response, by the record number of their last segment: those
    /// still waiting at the end and those the pairer's cap gave up before it.
    pub unanswered: input::RecordSet,
    /// How many requests got no response (several may end in one record): the closing
    /// line's count.
    pub unanswered_requests: u64,
    /// Each TLS connection's summary (for `kwire stats`), the first
    /// [`input::TLS_SUMMARIES_KEEP`].
    pub tls: Vec<input::tls::TlsSummary>,
    /// TLS connections past those (counted only).
    pub tls_past_cap: u64,
    /// Packets (capture records) read (for `kwire report`).
    pub packets: u64,
    /// Kafka connections found (for `kwire report`).
    pub connections: u64,
}

/// The capture input, with what the reader needs besides the bytes: a flag that ends
/// the input early (a closed pipe, `-c` reached), the last OS error (which the capture
/// parser does not keep) and the first bytes (for a hint when it is not a capture).
struct Input<R> {
    inner: R,
    stop: Arc<AtomicBool>,
    last_error: Arc<Mutex<Option<String>>>,
    head: Arc<Mutex<Vec<u8>>>,
}

impl<R: Read> Read for Input<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Ok(n) => {
                if let Ok(mut h) = self.head.lock() {
                    if h.len() < 512 {
                        let take = n.min(512 - h.len());
                        h.extend_from_slice(&buf[..take]);
                    }
                }
                Ok(n)
            }
            Err(e) => {
                if let Ok(mut l) = self.last_error.lock() {
                    *l = Some(e.to_string());
                }
                Err(e)
            }
        }
    }
}

/// Whether `head` (the first bytes of a file) is text: UTF-8 (a character cut by the end
/// of `head` allowed) without control characters other than whitespace. Random bytes
/// are not: bytes of 0x80 and over must form UTF-8 sequences.
fn is_text(head: &[u8]) -> bool {
    let valid = match std::str::from_utf8(head) {
        Ok(s) => s,
        // Only a sequence cut by the end of `head` may be incomplete.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    !valid.is_empty() && !valid.chars().any(|c| c.is_control() && !c.is_whitespace())
}

/// A hint for input that is not a capture, from its first bytes.
fn not_a_capture_hint(head: &[u8], path: &Path) -> Option<String> {
    let p = path.display();
    if is_text(head) {
        let hexish = head.iter().filter(|b| b.is_ascii_hexdigit()).count() * 2 >= head.len();
        return Some(if hexish {
            format!("it looks like a hex dump: try `kwire decode --hex-file {p}`")
        } else {
            format!("it is text: a hex dump goes to `kwire decode --hex-file {p}`")
        });
    }
    if head.len() >= 8 {
        let size = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let key = i16::from_be_bytes([head[4], head[5]]);
        if size > 0 && (0..100).contains(&key) {
            return Some(format!(
                "it may be raw Kafka frames: try `kwire decode --raw {p}`"
            ));
        }
    }
    None
}

/// The names of the captures of a command's list: each path as given, and a path given
/// more than once numbered from its second time on (`a.pcap`, `a.pcap (2)`), so that
/// its notices and `CAPTURE#ID` connection names tell the readings apart.
pub fn capture_labels<P: AsRef<std::path::Path>>(paths: &[P]) -> Vec<std::sync::Arc<str>> {
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.as_ref().display().to_string())
        .collect();
    // Every name given, and every name made: a number skips those (a file may be
    // called `a.pcap (2)` itself).
    let mut taken: std::collections::HashSet<String> = names.iter().cloned().collect();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    names
        .iter()
        .map(|name| {
            if seen.insert(name) {
                return name.as_str().into();
            }
            let mut k = 2;
            while taken.contains(&format!("{name} ({k})")) {
                k += 1;
            }
            let label = format!("{name} ({k})");
            taken.insert(label.clone());
            label.into()
        })
        .collect()
}

/// One capture of a command's list: its path and, when the command reads several, the
/// name its messages and notices carry (the path as given; see [`capture_labels`]).
#[derive(Clone, Debug)]
pub struct CaptureFile<'p> {
    /// The file (`-` for stdin).
    pub path: &'p std::path::Path,
    /// `Some(path as given)` when the command reads more than one capture: it goes into
    /// each message's [`crate::session::Context::capture`] and prefixes notices.
    pub label: Option<std::sync::Arc<str>>,
}

impl CaptureFile<'_> {
    /// `line` (of this capture, naming it by its path), with the path's numbered name in
    /// its place when the path was given before (`a.pcap (2)`); else as it is.
    pub fn name_line(&self, line: String) -> String {
        match &self.label {
            Some(l) if **l != *self.path.display().to_string() => crate::text::named(l, line),
            _ => line,
        }
    }
}

/// The work done for each message, on a worker thread (or on the reading thread with
/// one thread): write the message's output, if any, to the writer given, and return
/// what the reading thread gathers in capture order and hands to the [`Sink`]. The
/// printers (`render::Printer`, `page::frames::Pages`), the display filter wrapping one
/// (`filter::Select`), `kwire stats`'s count (`traffic::Count`) and `kwire export`'s
/// rows are works; so is any closure `Fn(&Message, &Context, &mut dyn Write) ->
/// io::Result<O> + Sync`.
pub trait Work: Sync {
    /// What one message's work gives the reading thread.
    type Output: Send;
    /// Does the work for message `m` with capture context `ctx`, writing its output to
    /// `out`.
    ///
    /// # Errors
    /// The writer's errors, or the work's own (they end the run).
    fn message(
        &self,
        m: &Message<'_>,
        ctx: &Context,
        out: &mut dyn Write,
    ) -> std::io::Result<Self::Output>;

    /// What the work makes of message `m` decoded at the run's detail level, when the
    /// run decodes in two steps ([`RunOptions::whole`]): its output, or that the message
    /// is to be decoded again whole for [`Work::message`] (a display filter that decides
    /// on the lighter tree keeps it for a printer of whole trees). By default, the work
    /// done on `m` as it is.
    ///
    /// # Errors
    /// As [`Work::message`].
    fn first_look(
        &self,
        m: &Message<'_>,
        ctx: &Context,
        out: &mut dyn Write,
    ) -> std::io::Result<FirstLook<Self::Output>> {
        self.message(m, ctx, out).map(FirstLook::Done)
    }
}

/// What a [`Work`] makes of a message at its first look ([`Work::first_look`]).
#[derive(Debug)]
pub enum FirstLook<O> {
    /// Done with it: its output.
    Done(O),
    /// Decode it whole, and give that to [`Work::message`].
    Whole,
}

impl<O: Send, F> Work for F
where
    F: Fn(&Message<'_>, &Context, &mut dyn Write) -> std::io::Result<O> + Sync + ?Sized,
{
    type Output = O;
    fn message(&self, m: &Message<'_>, ctx: &Context, out: &mut dyn Write) -> std::io::Result<O> {
        self(m, ctx, out)
    }
}

/// The per-message work as a trait object of closures (kept for callers that name it).
pub type MessageWork<'w, O> =
    dyn Fn(&Message<'_>, &Context, &mut dyn Write) -> std::io::Result<O> + Sync + 'w;

thread_local! {
    /// A worker thread's arena, kept from batch to batch.
    static ARENA: std::cell::RefCell<Buffers> = std::cell::RefCell::new(Buffers::new());
}

/// Most frames in one job handed to a worker thread.
const BATCH_FRAMES: usize = 64;

/// A job handed to a worker thread closes once its frames hold this many bytes.
const BATCH_BYTES: usize = 256 << 10;

/// Whether a message counts as having decode errors, and as undecodable (its body
/// did not decode at all), for the closing line.
fn problems(m: &Message<'_>) -> (bool, bool) {
    let undecodable = m
        .tree
        .children
        .iter()
        .any(|n| n.name == "body" && n.error().is_some());
    (m.has_error(), undecodable)
}

/// How [`run_capture`] runs, besides what to read.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// No notices and no closing lines (a first pass).
    pub quiet: bool,
    /// A flag another thread may set to stop the run, as `-c` does (the reader stops at
    /// its next read): the explorer's first passes, when their filter is replaced.
    pub halt: Option<Arc<AtomicBool>>,
    /// Stop once this many messages were shown.
    pub limit: Option<u64>,
    /// Threads in all (1: decode on the reading thread; N > 1: the reading thread and
    /// N-1 decoding workers). A caller whose output depends
    /// on what earlier messages showed (`-c`, `-t dd`, numbered pages, a live terminal)
    /// passes 1.
    pub threads: usize,
    /// The times of the first and the latest message read so far, carried from capture
    /// to capture (they set [`Context::first_time`] and [`Context::previous_time`]).
    pub times: Option<((i64, u32), (i64, u32))>,
    /// Decode in two steps: each message at the run's options first, and again with
    /// these (whole, [`Detail::Full`]) when the work asks for it ([`Work::first_look`]).
    /// `kwire read -V -Y F` decodes at the level `F` decides on and whole only the
    /// messages `F` keeps. None: one step.
    pub whole: Option<DecodeOptions>,
}

/// Does `work` on frame `f`, prepared as `p`: decoded at `dopts` into `arena`; with
/// `whole`, given to the work's first look ([`Work::first_look`]) and decoded again at
/// `whole` when it asks. Returns the output and the message's problems ([`problems`]).
#[allow(clippy::too_many_arguments)]
fn work_on<W: Work + ?Sized>(
    schema: &Schema,
    p: &Prepared,
    f: &input::Frame,
    dopts: &DecodeOptions,
    whole: Option<&DecodeOptions>,
    work: &W,
    arena: &mut Buffers,
    out: &mut dyn Write,
) -> std::io::Result<(W::Output, (bool, bool))> {
    arena.reset();
    let whole = {
        let m = p.decode(schema, dopts, f, arena);
        match whole {
            Some(w) => match work.first_look(&m, &p.ctx, out)? {
                FirstLook::Done(o) => return Ok((o, problems(&m))),
                FirstLook::Whole => w,
            },
            None => return work.message(&m, &p.ctx, out).map(|o| (o, problems(&m))),
        }
    };
    arena.reset();
    let m = p.decode(schema, whole, f, arena);
    work.message(&m, &p.ctx, out).map(|o| (o, problems(&m)))
}

/// Reads a capture, decodes every Kafka message (pairing responses with requests) at
/// `dopts.detail` (see [`Detail`]: `Summary` keeps only what the summary line and the
/// filters read), runs `work` on each, writing what it writes to `out` in capture order,
/// and hands its results to `sink` in capture order ([`Sink::message`] says whether the
/// message was shown). With more than one thread (`run.threads`), messages are decoded
/// and `work` runs on worker threads (see [`crate::pipeline`]) while this thread reads,
/// reassembles and pairs: the output is the same. Notices go to [`Sink::notice`] as they
/// come (not with `run.quiet`). Reading stops early once `run.limit` messages were shown,
/// or when writing fails (a closed pipe). The closing lines are in the [`Outcome`].
///
/// # Errors
/// A file that cannot be opened or is not a capture (with a hint when it looks like
/// something another command reads); the first error `work` returns or writing to `out`
/// gives.
#[allow(clippy::too_many_arguments)]
pub fn run_capture<W: Work + ?Sized>(
    schema: &Schema,
    a: &Settings,
    file: &CaptureFile<'_>,
    dopts: DecodeOptions,
    run: &mut RunOptions,
    out: &mut dyn Write,
    work: &W,
    sink: &mut dyn Sink<W::Output>,
) -> Result<Outcome, RunError> {
    let (quiet, limit) = (run.quiet, run.limit);
    let whole = run.whole.clone();
    let path = file.path;
    let mut live = None;
    let raw: Box<dyn Read + Send> = if let Some(lopts) = &a.live {
        let (capture, reader) = live::start(lopts)?;
        if !quiet {
            sink.notice(format!(
                "kwire: capturing on {}: {}",
                lopts.interfaces.join(", "),
                capture.command_line()
            ));
        }
        live = Some(capture);
        Box::new(reader)
    } else if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        if path.is_dir() {
            return Err(RunError::Input(format!(
                "{}: is a folder, not a capture file",
                path.display()
            )));
        }
        let f = std::fs::File::open(path)
            .map_err(|e| RunError::Input(format!("{}: {e}", path.display())))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        // One progress display at a time: none when several captures are read (they may
        // run at once), none for a quiet pass.
        if !quiet && file.label.is_none() {
            sink.input(len, Box::new(f))
        } else {
            Box::new(f)
        }
    };
    let sink = std::cell::RefCell::new(sink);
    let stop = run.halt.clone().unwrap_or_default();
    let last_error = Arc::new(Mutex::new(None));
    let head = Arc::new(Mutex::new(Vec::new()));
    let input = Input {
        inner: raw,
        stop: stop.clone(),
        last_error: last_error.clone(),
        head: head.clone(),
    };
    // With several captures, each line names its capture: `kwire: a.pcap: ...`.
    let named = |line: String| match &file.label {
        Some(l) => crate::text::named(l, line),
        None => line,
    };
    let say_line = |line: String| {
        if !quiet {
            sink.borrow_mut().notice(named(line))
        }
    };
    let (keys, key_lines) = load_keylogs(&a.keylogs, a.live.is_some())?;
    key_lines.into_iter().for_each(say_line);
    let copts = CaptureOptions {
        ports: if a.ports.is_empty() {
            vec![9092]
        } else {
            a.ports.clone()
        },
        detect: a.detect,
        max_frame: a.max_frame,
        max_in_flight: a.max_in_flight,
        idle_timeout: a.idle_timeout,
        tls_keys: std::sync::Arc::new(keys),
        stop: Some(stop.clone()),
        ..CaptureOptions::default()
    };
    let plaus = SchemaPlausibility(schema);
    let mut session = Session::new(schema, &dopts);
    // The requests given up for the pairer's cap are unanswered too (Outcome::unanswered).
    session.pairer.keep_given_up();
    // With workers, a guess this thread makes to learn topic names goes with the frame.
    session.hand_over_guesses = run.threads > 1;
    let mut tally = Tally::default();
    let mut io_err: Option<std::io::Error> = None;
    let all = a.all_notices;
    // Counted in capture order as each message's output is written.
    let (mut shown, mut with_errors, mut undecodable) = (0u64, 0u64, 0u64);
    let mut count = |o: W::Output, (errors, undec): (bool, bool)| {
        shown += u64::from(sink.borrow_mut().message(o));
        with_errors += u64::from(errors);
        undecodable += u64::from(undec);
        if limit.is_some_and(|l| shown >= l) {
            stop.store(true, Ordering::Relaxed);
        }
    };
    // What the capture's context says of the messages before this one (`-t r`, `-t d`).
    let times = &mut run.times;
    let mut place = |ctx: &mut Context| {
        ctx.capture.clone_from(&file.label);
        let (first, previous) = match *times {
            Some((first, previous)) => (first, Some(previous)),
            None => (ctx.time, None),
        };
        ctx.first_time = Some(first);
        ctx.previous_time = previous;
        *times = Some((first, ctx.time));
    };
    let whole_ref = whole.as_ref();
    let res = if run.threads <= 1 {
        // One arena for every message: emptied after each, so its memory is reused.
        let mut arena = Buffers::new();
        input::read_capture(input, &copts, &plaus, |ev| {
            if io_err.is_some() || stop.load(Ordering::Relaxed) {
                return;
            }
            match ev {
                Event::Notice(n) => tally.tell(&n, all, &say_line),
                Event::Frame(f) if whole.is_some() => {
                    // In two steps: decoded by the session, and again whole if asked.
                    tally.frame(&f);
                    arena.reset();
                    let (m, mut p) = session.decode_prepared(&f, &arena);
                    place(&mut p.ctx);
                    for n in session.notices.drain(..) {
                        tally.tell(&n, all, &say_line);
                    }
                    let done = match work.first_look(&m, &p.ctx, out) {
                        Ok(FirstLook::Done(o)) => Ok((o, problems(&m))),
                        Ok(FirstLook::Whole) => {
                            drop(m);
                            arena.reset();
                            let w = whole.as_ref().unwrap_or(&dopts);
                            let m = p.decode(schema, w, &f, &arena);
                            work.message(&m, &p.ctx, out).map(|o| (o, problems(&m)))
                        }
                        Err(e) => Err(e),
                    };
                    match done {
                        Ok((o, pr)) => count(o, pr),
                        Err(e) => {
                            io_err = Some(e);
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
                Event::Frame(f) => {
                    arena.reset();
                    let arena = &arena;
                    tally.frame(&f);
                    let (m, mut ctx) = session.decode(&f, arena);
                    place(&mut ctx);
                    for n in session.notices.drain(..) {
                        tally.tell(&n, all, &say_line);
                    }
                    match work.message(&m, &ctx, out) {
                        Ok(o) => count(o, problems(&m)),
                        Err(e) => {
                            io_err = Some(e);
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
        })
    } else {
        let (dopts, whole) = (&dopts, whole_ref);
        // A job is a batch of frames, so that small messages do not each pay for a
        // hand-over between threads. The batch goes back with the results, to be freed
        // on the reading thread that allocated it: freeing another thread's allocations
        // takes that thread's malloc arena lock, and with every frame, context and
        // string of a capture crossing over, that contention cost more than a core.
        let job = move |batch: Vec<(input::Frame, Prepared)>, w: &mut dyn Write| {
            let mut outs = Vec::with_capacity(batch.len());
            ARENA.with(|cell| {
                // One arena per worker thread, emptied before each message.
                let mut fresh = Buffers::new();
                let mut kept = cell.try_borrow_mut();
                let arena = match kept.as_deref_mut() {
                    Ok(a) => a,
                    Err(_) => &mut fresh,
                };
                for (f, p) in &batch {
                    outs.push(work_on(schema, p, f, dopts, whole, work, arena, w)?);
                }
                arena.reset();
                Ok::<(), std::io::Error>(())
            })?;
            Ok((outs, batch))
        };
        // The reading thread is one of the threads: it reads, reassembles and pairs, the
        // others decode and print.
        let workers = run.threads - 1;
        let budget = crate::pipeline::Budget::for_threads(workers);
        let piped = crate::pipeline::run(
            workers,
            budget,
            &job,
            out,
            &mut |(outs, batch)| {
                outs.into_iter().for_each(|(o, p)| count(o, p));
                drop(batch);
            },
            |feeder| {
                let mut batch = Vec::new();
                let mut batch_bytes = 0;
                let r = input::read_capture(input, &copts, &plaus, |ev| {
                    if feeder.error().is_some() {
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                    // Stopped (`-c` reached, the output closed): what the reader still
                    // gives is not read, as on one thread; its end of input is ours, not
                    // the file's (no "the file ends inside a record").
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    match ev {
                        Event::Notice(n) => tally.tell(&n, all, &say_line),
                        Event::Frame(f) => {
                            tally.frame(&f);
                            let mut p = session.prepare(&f);
                            place(&mut p.ctx);
                            for n in session.notices.drain(..) {
                                tally.tell(&n, all, &say_line);
                            }
                            batch_bytes += f.bytes.len();
                            batch.push((f, p));
                            feeder.poll();
                            if batch.len() >= BATCH_FRAMES || batch_bytes >= BATCH_BYTES {
                                feeder.submit(std::mem::take(&mut batch), batch_bytes);
                                batch_bytes = 0;
                            }
                        }
                    }
                });
                if !batch.is_empty() {
                    feeder.submit(batch, batch_bytes);
                }
                r
            },
        );
        match piped {
            Ok(r) => r,
            Err(e) => {
                io_err = Some(e);
                Ok(input::CaptureStats::default())
            }
        }
    };
    sink.borrow_mut().done();
    if let Some(e) = io_err {
        return Err(RunError::Io(e));
    }
    // A live capture's child is stopped and reaped here; one that never started says why.
    let live = live.map(|c| live::end(c, &copts.tls_keys)).transpose()?;
    tally.shown = shown;
    tally.with_errors = with_errors;
    tally.undecodable = undecodable;
    let stats = res.map_err(|e| {
        let mut m = format!("{}: {e}", path.display());
        if let Some(os) = last_error.lock().ok().and_then(|l| l.clone()) {
            m.push_str(&format!(" ({os})"));
        }
        if matches!(e, input::CaptureError::NotACapture) {
            let h = head.lock().map(|h| h.clone()).unwrap_or_default();
            if let Some(hint) = not_a_capture_hint(&h, path) {
                m.push_str(&format!(": {hint}"));
            }
        }
        RunError::Input(m)
    })?;
    let stopped = stop.load(Ordering::Relaxed);
    let waiting = session.pairer.unanswered();
    let mut lines = Vec::new();
    // Stopped early, requests still waiting may be answered later in the capture.
    let listed = if stopped {
        0
    } else if a.all_notices {
        waiting.len()
    } else {
        UNANSWERED_LINES
    };
    for p in waiting.iter().take(listed) {
        lines.push(format!(
            "kwire: connection {}: request correlation_id {} ({} v{}, frame {}) got no response in the capture",
            p.connection,
            p.correlation_id,
            schema.api_name(p.request.api_key).unwrap_or("?"),
            p.request.api_version,
            p.request.frame
        ));
    }
    if waiting.len() > listed && !stopped {
        lines.push(format!(
            "kwire: {} more unanswered requests are not listed (--all-notices lists them; -Y unanswered shows them)",
            waiting.len() - listed
        ));
    }
    if let Some(n) = session.pairer.given_up_notice() {
        lines.push(format!("kwire: {n}"));
    }
    if stats.connections == 0 && stats.tcp_segments > 0 {
        let ports: Vec<String> = copts.ports.iter().map(u16::to_string).collect();
        let advice = if a.detect {
            "try --port P"
        } else {
            "try --port P or --detect"
        };
        lines.push(format!(
            "kwire: {}, but no Kafka connection on port {}: {advice}",
            counted(stats.tcp_segments, "TCP segment", "TCP segments"),
            ports.join(", ")
        ));
    }
    let truncated = stats.file_truncated && !stopped;
    if truncated {
        lines.push(format!(
            "kwire: {}: the capture is cut short (it ends inside a record)",
            if live.is_some() {
                "the live capture's stream".into()
            } else {
                path.display().to_string()
            }
        ));
    }
    let skipped: Vec<String> = tally
        .notices
        .iter()
        .map(|(k, (n, b))| {
            if *b > 0 {
                format!("{k} x{n} ({b} bytes)")
            } else {
                format!("{k} x{n}")
            }
        })
        .collect();
    lines.push(format!(
        "kwire: {}, {}, {} decoded ({} shown{}), {} with decode errors, {} incomplete, {} undecodable, {}, {}{}; notices: {}",
        counted(stats.packets, "packet", "packets"),
        counted(stats.connections.into(), "connection", "connections"),
        counted(tally.messages, "message", "messages"),
        tally.shown,
        if stopped { ", stopped at -c" } else { "" },
        tally.with_errors,
        tally.incomplete,
        tally.undecodable,
        counted(tally.sasl_tokens, "SASL token", "SASL tokens"),
        if stopped {
            counted(waiting.len() as u64, "request", "requests") + " waiting when reading stopped"
        } else {
            // Those given up before the end for the pairer's cap are unanswered too.
            counted(
                waiting.len() as u64 + session.pairer.given_up(),
                "unanswered request",
                "unanswered requests",
            )
        },
        answers_without_request(&session),
        if skipped.is_empty() { "none".to_string() } else { skipped.join(", ") }
    ));
    // The capture child failing part-way fails the command, as a file cut short does.
    let truncated = truncated || live.as_ref().is_some_and(|l| l.failed);
    lines.extend(live.into_iter().flat_map(|l| l.lines));
    Ok(Outcome {
        closing: lines.into_iter().map(named).collect(),
        truncated,
        corrupt: stats.file_corrupt,
        with_errors: tally.with_errors,
        unanswered: {
            let mut set = session.pairer.take_given_up();
            waiting.iter().for_each(|p| set.insert(p.request.frame));
            set.seal();
            set
        },
        unanswered_requests: waiting.len() as u64 + session.pairer.given_up(),
        packets: stats.packets,
        connections: stats.connections.into(),
        tls: stats.tls,
        tls_past_cap: stats.tls_past_cap,
    })
}

/// The closing line's count of responses whose request is not in the capture:
/// `, 3 responses to requests sent before the capture began` (and those without their
/// request for another reason); empty when every response found its request.
fn answers_without_request(s: &Session<'_>) -> String {
    let mut t = String::new();
    if s.answers_before_start > 0 {
        t.push_str(&format!(
            ", {} to requests sent before the capture began",
            counted(s.answers_before_start, "response", "responses")
        ));
    }
    if s.answers_unpaired > 0 {
        t.push_str(&format!(
            ", {} whose request is not in the capture",
            counted(s.answers_unpaired, "response", "responses")
        ));
    }
    t
}

/// `1 packet`, `2 packets`.
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The requests of the capture that get no response (those the pairer's cap gives up
/// included), by the record number of their last segment, read in a first pass when
/// `needed` (for `-Y unanswered`, which must know the future when it sees a request:
/// `filter::Filter::uses_unanswered`); `None` when not needed. The set costs at most
/// about one bit a record of the capture ([`input::RecordSet`]).
///
/// # Errors
/// A capture on stdin (it cannot be read twice); those of [`run_capture`].
pub fn unanswered_first_pass(
    schema: &Schema,
    a: &Settings,
    file: &CaptureFile<'_>,
    needed: bool,
    threads: usize,
) -> Result<Option<input::RecordSet>, RunError> {
    if !needed {
        return Ok(None);
    }
    if file.path.as_os_str() == "-" {
        return Err(RunError::Usage(
            "-Y unanswered needs a capture file, not stdin or a live capture: it reads the capture twice".into(),
        ));
    }
    unanswered_pass(schema, a, file, threads, None).map(Some)
}

/// [`unanswered_first_pass`]'s pass over a capture file, stopped early when `halt` is
/// set (what it gives then is partial).
///
/// # Errors
/// Those of [`run_capture`].
pub fn unanswered_pass(
    schema: &Schema,
    a: &Settings,
    file: &CaptureFile<'_>,
    threads: usize,
    halt: Option<Arc<AtomicBool>>,
) -> Result<input::RecordSet, RunError> {
    // The pass reads only which requests are answered: the pairing's facts (`Acks`).
    let dopts = DecodeOptions {
        detail: Detail::Facts,
        ..DecodeOptions::default()
    };
    let mut run = RunOptions {
        quiet: true,
        threads,
        halt,
        ..RunOptions::default()
    };
    let work = |_: &Message<'_>, _: &Context, _: &mut dyn Write| Ok(());
    let first = run_capture(
        schema,
        a,
        file,
        dopts,
        &mut run,
        &mut std::io::sink(),
        &work,
        &mut Quiet,
    )?;
    Ok(first.unanswered)
}

#[cfg(test)]
mod text_tests {
    #[test]
    fn random_bytes_are_not_text() {
        use super::is_text;
        assert!(is_text(b"00000000  00 00 00 23 00 14  |...#|\n"));
        assert!(is_text("caf\u{e9} na\u{ef}ve\n".as_bytes()));
        assert!(
            is_text(&"ab\u{e9}".as_bytes()[..3]),
            "a character cut by the end"
        );
        assert!(!is_text(&[0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00]));
        assert!(!is_text(&[0x9f, 0x80, 0xc1, 0xff, 0xfe, 0x41, 0x42]));
        assert!(!is_text(b"abc\x01def"));
        assert!(!is_text(b""));
    }
}
