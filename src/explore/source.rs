//! Where the explorer's messages come from: the [`Source`] trait (how many messages,
//! how far the reading is, message `i` decoded on demand) and [`Spool`], its
//! implementation over capture files.
//!
//! [`Spool`] reads the captures on a background thread through the same input layer
//! and [`Session`] as `kwire read` (TCP reassembly, TLS, pairing), once, in capture
//! order. It keeps, per message, what [`crate::session::Prepared`] needs to decode that
//! message alone later (its context, its request's api_key and api_version) and writes
//! the frame's bytes to an unlinked spool file: memory holds one small entry a message,
//! never the frames or the trees. Decoding message `i` reads its frame back from the
//! spool and runs [`crate::session::Prepared::decode`], which gives the message
//! [`Session::decode`] gives in capture order, so every pane shows what `read` shows.
//!
//! A live capture ([`LiveInput`], `kwire explore -i IFACE`) is one more input of the
//! spool: the capture child's stream is read as stdin is, each message made visible as
//! it completes, until the child ends (`-a`, or [`LiveInput::close`] when the user quits).

use crate::decode::{DecodeOptions, Detail};
use crate::input::live::{LiveCapture, LiveEnd, LiveError, LiveOptions, LiveReader, StopReason};
use crate::input::{self, CaptureOptions, Event, Frame, FrameContext, FrameKind};
use crate::schema::Schema;
use crate::session::{Context, Prepared, SchemaPlausibility, Session};
use crate::tree::{Buffers, Direction, Message};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

/// How far the background reading has come.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Bytes of the capture files read so far.
    pub bytes_read: u64,
    /// Bytes of the capture files at start (0 for stdin).
    pub bytes_total: u64,
    /// Every capture was read to its end.
    pub done: bool,
    /// The reading waits at the end of a capture that is still being written.
    pub following: bool,
    /// Why a capture could not be read, if one could not.
    pub error: Option<String>,
}

/// What is known of message `i` without decoding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The connection's number (per capture).
    pub connection: u32,
    /// The capture it came from (0-based, in command-line order).
    pub capture: u32,
    /// Request or response.
    pub direction: Direction,
    /// The correlation_id read from the header bytes, when the frame has one.
    pub correlation_id: Option<i32>,
    /// Frame bytes, size prefix included.
    pub size: u32,
    /// Capture time, seconds and nanoseconds since the Unix epoch.
    pub time: (i64, u32),
    /// The message's pair (a request's response, a response's request), when the
    /// source knows it without a search (the index does).
    pub pair: Option<usize>,
}

/// The explorer's view of a capture: messages numbered `0..count()` in capture order,
/// growing while the capture is read.
pub trait Source: Send + Sync {
    /// Messages known so far.
    fn count(&self) -> usize;
    /// How far the reading is.
    fn progress(&self) -> Progress;
    /// What is known of message `i` without decoding it; `None` past [`Source::count`].
    fn meta(&self, i: usize) -> Option<Meta>;
    /// Decodes message `i` at `detail` and hands it with its capture context to `f`;
    /// false when there is no message `i` (or its bytes could not be read back).
    fn with_message(
        &self,
        i: usize,
        detail: Detail,
        f: &mut dyn FnMut(&Message<'_>, &Context),
    ) -> bool;
    /// The notices the reading raised, as `read` prints them (`kwire: ...`), oldest
    /// first (at most [`MAX_NOTICE_LINES`]; the rest are counted).
    fn notices(&self) -> (Vec<String>, u64);
    /// Each connection's TLS session, when it was decrypted: `(capture, connection)` and
    /// `TLS 1.3 TLS_AES_128_GCM_SHA256 sni=...`.
    fn tls_of(&self, capture: u32, connection: u32) -> Option<String>;
    /// The TLS table of `kwire stats`: each capture's TLS connections, sorted by
    /// connection id and named by capture when there are several, once that capture's
    /// reading has ended (its TLS layer sums a connection up only then); and the TLS
    /// connections past [`crate::input::TLS_SUMMARIES_KEEP`] a capture, counted only.
    fn tls_table(&self) -> (Vec<crate::traffic::TlsRow>, u64);
    /// The sizes of [`Source::tls_table`] (its rows, and the connections past the cap),
    /// without copying it: the table only grows, a capture at a time, so this changes
    /// whenever the table does.
    fn tls_count(&self) -> (usize, u64);
    /// For a live capture, what the status bar says of it (`live: capturing on lo
    /// (dumpcap)`, then how it ended); `None` for capture files.
    fn live(&self) -> Option<String> {
        None
    }
    /// Whether the list should follow the end, as Wireshark's auto-scroll: a live capture
    /// (from the start), a capture file that grew while it was read (once it has).
    fn follows_end(&self) -> bool {
        false
    }
    /// Whether an input turned out unreadable, not a capture, corrupt or cut short
    /// (inside a record, or under the explorer): what makes `kwire read` exit 2, and so
    /// `kwire explore` once the user quits. What was not read yet when the user quit
    /// (as with `read -c`) has said nothing.
    fn input_failed(&self) -> bool {
        false
    }
}

/// Notice lines kept for the notices view; the rest are only counted.
pub const MAX_NOTICE_LINES: usize = 10_000;

/// Most messages a [`Spool`] reads: its entries stay in memory (about 420 bytes a
/// message, more with TLS or many topic names; the frames are in the spool file), so
/// that 300,000 of them keep the explorer under 256 MiB. Only what the message index
/// cannot read goes through the spool alone (a live capture, a file still being
/// written, stdin among several inputs); past this many messages its reading stops, and
/// says so (a notice and the status bar).
pub const MAX_SPOOLED: usize = 300_000;

/// What the spool needs to decode one message again.
struct Entry {
    prepared: Prepared,
    kind: FrameKind,
    incomplete: bool,
    offset: u64,
    meta: Meta,
}

/// Frames read but not yet visible to [`Source::count`]: published in batches, and
/// whenever the reader waits for input.
struct Pending {
    spool: BufWriter<File>,
    written: u64,
    entries: Vec<Entry>,
    last: Instant,
}

struct Shared {
    entries: RwLock<Vec<Entry>>,
    pending: Mutex<Pending>,
    reader: File,
    bytes_read: AtomicU64,
    bytes_total: AtomicU64,
    done: AtomicBool,
    following: AtomicBool,
    /// A capture file grew while the reading waited at its end.
    grew: AtomicBool,
    stop: AtomicBool,
    /// Reading stops after this many messages (the index takes over from there).
    cap: usize,
    error: Mutex<Option<String>>,
    /// A capture file ended inside a record or held a corrupt one, or an input could not
    /// be read or was not a capture (not the spool's own bound, which `error` says too).
    input_failed: AtomicBool,
    notices: Mutex<(Vec<String>, u64)>,
    tls: Mutex<std::collections::HashMap<(u32, u32), String>>,
    /// The TLS table of the captures read to their end ([`Source::tls_table`]).
    tls_table: Mutex<(Vec<crate::traffic::TlsRow>, u64)>,
}

impl Shared {
    /// Makes the pending frames visible: the spool is flushed first, so a message
    /// counted can always be read back.
    fn publish(&self, p: &mut Pending) {
        if p.entries.is_empty() {
            return;
        }
        if p.spool.flush().is_err() {
            self.say("kwire: explore: the spool file could not be written".into());
            p.entries.clear();
            return;
        }
        let mut e = self.entries.write().unwrap_or_else(|e| e.into_inner());
        e.append(&mut p.entries);
        p.last = Instant::now();
    }

    fn say(&self, line: String) {
        let mut n = self.notices.lock().unwrap_or_else(|e| e.into_inner());
        if n.0.len() < MAX_NOTICE_LINES {
            n.0.push(line);
        } else {
            n.1 += 1;
        }
    }
}

/// The captures to read and how (what `kwire read` takes).
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// The capture files, `-` for stdin; not read when `live` is given.
    pub files: Vec<PathBuf>,
    /// A live capture to read instead of the files (`kwire explore -i`).
    pub live: Option<Arc<LiveInput>>,
    /// Input layer options (ports, `--detect`, `--max-frame`, TLS keys).
    pub capture: CaptureOptions,
    /// Decoder limits (`--max-nodes`).
    pub decode: DecodeOptions,
}

/// How long the explorer waits for a capture child that cannot start (no such interface,
/// a bad filter, no permission) to end, before it takes over the terminal.
pub const LIVE_START: Duration = Duration::from_millis(500);

/// Longest [`LiveInput::close`] waits for the reading to reach the end of the stream
/// after asking the child to stop (the child gets SIGKILL 3 seconds after SIGTERM).
const LIVE_CLOSE: Duration = Duration::from_secs(5);

/// A live capture as the explorer's input (`kwire explore -i IFACE`): the capture child
/// ([`crate::input::live`]) started with its stream, for a [`Spool`] to read. Whoever
/// opens it calls [`LiveInput::close`] when the explorer ends: the child is stopped and
/// reaped then, on every path.
pub struct LiveInput {
    /// The interfaces, `lo` or `eth0, lo`.
    label: String,
    /// The capture program's name (`dumpcap`, `tcpdump`).
    tool: &'static str,
    command: String,
    capture: Mutex<Option<LiveCapture>>,
    reader: Mutex<Option<LiveReader>>,
    /// How the capture ended, once it has; taken by [`LiveInput::close`].
    end: Mutex<LiveState>,
    ended: Condvar,
}

#[derive(Default)]
struct LiveState {
    /// The reading reached the end of the stream and the child was reaped.
    finished: bool,
    /// The status-bar text of the end.
    said: Option<String>,
    end: Option<LiveEnd>,
}

impl std::fmt::Debug for LiveInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveInput")
            .field("command", &self.command)
            .finish()
    }
}

impl LiveInput {
    /// Starts the capture `opts` asks for (dumpcap, else tcpdump; `opts.signals` should
    /// be false: the explorer reads Ctrl-C as a key), and waits up to [`LIVE_START`] for a
    /// child that cannot capture to end.
    ///
    /// # Errors
    /// Neither program on `PATH`, the child would not start, or it ended at once with an
    /// error (no such interface, a bad filter, no permission: [`LiveError`]'s message
    /// says what to do); the child is reaped then.
    pub fn open(opts: &LiveOptions) -> Result<Arc<LiveInput>, LiveError> {
        let (capture, mut reader) = LiveCapture::open(opts)?;
        if capture.ended_within(LIVE_START) == Some(false) {
            let tool = capture.capturer().tool;
            // The stream to its end (the child has ended), then what went wrong.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
            drop(reader);
            let end = capture.finish();
            return Err(end.error.unwrap_or(LiveError::Failed {
                tool,
                status: "failed".into(),
                message: "it ended as it started".into(),
            }));
        }
        Ok(Arc::new(LiveInput {
            label: opts.interfaces.join(", "),
            tool: capture.capturer().tool.name(),
            command: capture.command_line(),
            capture: Mutex::new(Some(capture)),
            reader: Mutex::new(Some(reader)),
            end: Mutex::new(LiveState::default()),
            ended: Condvar::new(),
        }))
    }

    /// The capture program's name (`dumpcap`, `tcpdump`).
    pub fn tool(&self) -> &'static str {
        self.tool
    }

    /// The capture child's command line (`dumpcap -f 'tcp port 9092' -i lo -w - -q`).
    pub fn command_line(&self) -> &str {
        &self.command
    }

    /// Asks the child to stop (SIGTERM to its process group); the reading then reaches
    /// the end of its stream. Does nothing once the capture has ended.
    pub fn stop(&self) {
        if let Ok(c) = self.capture.lock() {
            if let Some(c) = c.as_ref() {
                c.stop();
            }
        }
    }

    /// Ends the capture: stops the child, waits (at most about 5 seconds) for the reading
    /// to reach the end of the stream, and makes sure the child is reaped (reaping it here
    /// if the reading did not finish). Returns how the capture ended (the first call
    /// only).
    pub fn close(&self) -> Option<LiveEnd> {
        self.stop();
        let deadline = Instant::now() + LIVE_CLOSE;
        let mut st = self.end.lock().unwrap_or_else(|e| e.into_inner());
        while !st.finished {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = self
                .ended
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if st.finished {
            return st.end.take();
        }
        drop(st);
        // The reading is stuck (or never started): the child is reaped here.
        let cap = self.capture.lock().ok().and_then(|mut c| c.take());
        let end = cap.map(LiveCapture::finish);
        let mut st = self.end.lock().unwrap_or_else(|e| e.into_inner());
        st.finished = true;
        end.or_else(|| st.end.take())
    }

    /// The reader of the stream (once).
    fn take_reader(&self) -> Option<LiveReader> {
        self.reader.lock().ok().and_then(|mut r| r.take())
    }

    /// The reading reached the end of the stream: the child is reaped and its end kept;
    /// the notices and the error say how it ended.
    fn reading_ended(&self, shared: &Shared) {
        let cap = self.capture.lock().ok().and_then(|mut c| c.take());
        let Some(cap) = cap else { return };
        let end = cap.finish();
        for l in end_lines(self.tool, &end) {
            shared.say(l);
        }
        let said = match &end.error {
            Some(e) => {
                fail(shared, e.to_string());
                None
            }
            None => Some(format!("live capture {}", reason_text(&end))),
        };
        let mut st = self.end.lock().unwrap_or_else(|e| e.into_inner());
        st.finished = true;
        st.said = said;
        st.end = Some(end);
        self.ended.notify_all();
    }

    /// What the status bar says of the capture.
    fn status(&self) -> String {
        let st = self.end.lock().unwrap_or_else(|e| e.into_inner());
        match (&st.said, st.finished) {
            (Some(s), _) => s.clone(),
            (None, true) => "live capture ended".into(),
            (None, false) => format!("live: capturing on {} ({})", self.label, self.tool),
        }
    }
}

/// Why a live capture stopped, in words (`stopped at -a duration`).
fn reason_text(e: &LiveEnd) -> String {
    match e.reason {
        // The explorer stops the capture when the user quits.
        StopReason::Reader => "stopped when the explorer ended".to_string(),
        r => r.to_string(),
    }
}

/// How a live capture ended, as `kwire read` says it on its closing lines: the child's
/// counts (`kwire: dumpcap: Packets captured: 92`), why it stopped (`kwire: live capture
/// stopped when the explorer ended`; not said of a child that died), the error if any.
pub fn end_lines(tool: &str, e: &LiveEnd) -> Vec<String> {
    let mut lines: Vec<String> = e
        .counts
        .iter()
        .map(|l| format!("kwire: {tool}: {l}"))
        .collect();
    let died = matches!(e.error, Some(LiveError::Died { .. }));
    if !died {
        lines.push(format!(
            "kwire: live capture {}{}",
            reason_text(e),
            if e.killed {
                format!(" ({tool} did not stop when asked and was killed)")
            } else {
                String::new()
            }
        ));
    }
    if let Some(err) = &e.error {
        lines.push(format!("kwire: {err}"));
    }
    lines
}

/// A [`Source`] over capture files, read on a background thread (see the module
/// documentation).
pub struct Spool {
    shared: Arc<Shared>,
    schema: Arc<Schema>,
    decode: DecodeOptions,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The live capture read, if it is one.
    live: Option<Arc<LiveInput>>,
}

/// How long a capture whose file was modified this recently is followed at its end
/// (a capture still being written: `tcpdump -w`, `dumpcap -w`).
pub const FOLLOW_RECENT: Duration = Duration::from_secs(5);

/// The background reader's input: counts bytes, publishes what is pending when it must
/// wait, and follows a file that is still being written.
struct Follow {
    file: Option<File>,
    /// stdin, or a live capture's stream: reads may block.
    stream: Option<Box<dyn Read + Send>>,
    /// The live capture `stream` comes from.
    live: Option<Arc<LiveInput>>,
    shared: Arc<Shared>,
}

impl Read for Follow {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.shared.stop.load(Ordering::Relaxed) {
                if let (Some(l), Some(s)) = (&self.live, &mut self.stream) {
                    // The child is asked to stop and its stream read to the end, so that
                    // it never waits on a full pipe.
                    l.stop();
                    let _ = std::io::copy(s, &mut std::io::sink());
                }
                return Ok(0);
            }
            let n = match (&mut self.file, &mut self.stream) {
                (Some(f), _) => f.read(buf)?,
                (None, Some(s)) => {
                    // The read may block: what was read so far becomes visible first.
                    flush_pending(&self.shared);
                    s.read(buf)?
                }
                (None, None) => 0,
            };
            if n > 0 {
                self.shared
                    .bytes_read
                    .fetch_add(n as u64, Ordering::Relaxed);
                if self.shared.following.swap(false, Ordering::Relaxed) {
                    // Bytes after a wait at the end: the file is being written.
                    self.shared.grew.store(true, Ordering::Relaxed);
                }
                return Ok(n);
            }
            flush_pending(&self.shared);
            let Some(f) = &self.file else { return Ok(0) };
            // At the end of a file: follow it while it is being written.
            if !recent(f) {
                return Ok(0);
            }
            self.shared.following.store(true, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Whether `f` was modified less than [`FOLLOW_RECENT`] ago (it is being written).
fn recent(f: &File) -> bool {
    f.metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < FOLLOW_RECENT)
}

fn flush_pending(shared: &Shared) {
    let mut p = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
    shared.publish(&mut p);
}

/// A made-up frame context: [`Prepared::decode`] reads only a frame's bytes and whether
/// it is incomplete.
fn frame_context(incomplete: bool) -> FrameContext {
    let none = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    FrameContext {
        first_frame: 0,
        last_frame: 0,
        time: input::Timestamp::default(),
        src: none,
        dst: none,
        connection: 0,
        direction: input::Direction::ToServer,
        stream_offset: 0,
        incomplete,
        tls: None,
        origin: input::Origin::default(),
    }
}

/// The correlation_id in a frame's header: bytes 8..12 of a request, 4..8 of a
/// response (after the size prefix, and the api_key and api_version of a request).
fn correlation_id(b: &[u8], dir: Direction) -> Option<i32> {
    let at = if dir == Direction::Request { 8 } else { 4 };
    let x = b.get(at..at + 4)?;
    Some(i32::from_be_bytes([x[0], x[1], x[2], x[3]]))
}

impl Spool {
    /// Starts reading `inputs` on a background thread; the messages appear in
    /// [`Source::count`] as they are read.
    ///
    /// # Errors
    /// The spool file cannot be made (in `$TMPDIR`).
    pub fn start(schema: Arc<Schema>, inputs: Inputs) -> std::io::Result<Spool> {
        Spool::start_capped(schema, inputs, usize::MAX)
    }

    /// [`Spool::start`], reading no more than `cap` messages (the first screens while
    /// an index is built).
    ///
    /// # Errors
    /// As [`Spool::start`].
    pub fn start_capped(schema: Arc<Schema>, inputs: Inputs, cap: usize) -> std::io::Result<Spool> {
        let dir = std::env::temp_dir();
        let path = dir.join(format!(
            "kwire-explore-{}-{}.spool",
            std::process::id(),
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let w = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .read(true)
            .open(&path)?;
        let reader = File::open(&path)?;
        // Unlinked at once: the file goes with the process, however it ends.
        let _ = std::fs::remove_file(&path);
        let total: u64 = inputs
            .files
            .iter()
            .filter(|p| p.as_os_str() != "-")
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        let shared = Arc::new(Shared {
            entries: RwLock::new(Vec::new()),
            pending: Mutex::new(Pending {
                spool: BufWriter::with_capacity(256 << 10, w),
                written: 0,
                entries: Vec::new(),
                last: Instant::now(),
            }),
            reader,
            bytes_read: AtomicU64::new(0),
            bytes_total: AtomicU64::new(total),
            done: AtomicBool::new(false),
            following: AtomicBool::new(false),
            grew: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            cap,
            error: Mutex::new(None),
            input_failed: AtomicBool::new(false),
            notices: Mutex::new((Vec::new(), 0)),
            tls: Mutex::new(Default::default()),
            tls_table: Mutex::new((Vec::new(), 0)),
        });
        let decode = inputs.decode.clone();
        let live = inputs.live.clone();
        let thread = {
            let shared = Arc::clone(&shared);
            let schema = Arc::clone(&schema);
            std::thread::Builder::new()
                .name("kwire-index".into())
                .spawn(move || read_all(&schema, &inputs, &shared))?
        };
        Ok(Spool {
            shared,
            schema,
            decode,
            thread: Some(thread),
            live,
        })
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // A live capture's reader is blocked on the child's stream: the child is asked to
        // stop, and the reader then reaches the end (its owner reaps the child:
        // `LiveInput::close`).
        if let Some(l) = &self.live {
            l.stop();
        }
        // A reader blocked on stdin is not waited for.
        if let Some(t) = self.thread.take() {
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

/// The background thread: every capture in order, each with its own session (a live
/// capture: its stream, then the child reaped).
fn read_all(schema: &Schema, inputs: &Inputs, shared: &Arc<Shared>) {
    let names: Vec<PathBuf> = match &inputs.live {
        Some(l) => vec![PathBuf::from(format!("the live capture on {}", l.label))],
        None => inputs.files.clone(),
    };
    let several = names.len() > 1;
    let labels = crate::run::capture_labels(&names);
    let mut times: Option<((i64, u32), (i64, u32))> = None;
    let dopts = inputs.decode.clone();
    for (ordinal, path) in names.iter().enumerate() {
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let label: Option<Arc<str>> = several.then(|| Arc::clone(&labels[ordinal]));
        let named = |line: String| match &label {
            Some(l) => crate::text::named(l, line),
            None => line,
        };
        let input = if let Some(l) = &inputs.live {
            let Some(r) = l.take_reader() else {
                fail(shared, format!("{}: read already", path.display()));
                break;
            };
            Follow {
                file: None,
                stream: Some(Box::new(r)),
                live: Some(Arc::clone(l)),
                shared: Arc::clone(shared),
            }
        } else if path.as_os_str() == "-" {
            Follow {
                file: None,
                stream: Some(Box::new(std::io::stdin())),
                live: None,
                shared: Arc::clone(shared),
            }
        } else {
            match File::open(path) {
                Ok(f) if !path.is_dir() => Follow {
                    file: Some(f),
                    stream: None,
                    live: None,
                    shared: Arc::clone(shared),
                },
                Ok(_) => {
                    input_fail(
                        shared,
                        named(format!(
                            "{}: is a folder, not a capture file",
                            path.display()
                        )),
                    );
                    continue;
                }
                Err(e) => {
                    input_fail(shared, named(format!("{}: {e}", path.display())));
                    continue;
                }
            }
        };
        let plaus = SchemaPlausibility(schema);
        let mut session = Session::new(schema, &dopts);
        let res = input::read_capture(input, &inputs.capture, &plaus, |ev| match ev {
            Event::Notice(n) => shared.say(named(format!("kwire: {n}"))),
            Event::Frame(f) => {
                if shared.stop.load(Ordering::Relaxed) {
                    // Past the cap (the rest of a packet already read): not kept.
                    return;
                }
                let mut p = session.prepare(&f);
                p.ctx.capture.clone_from(&label);
                let (first, previous) = match times {
                    Some((first, previous)) => (first, Some(previous)),
                    None => (p.ctx.time, None),
                };
                p.ctx.first_time = Some(first);
                p.ctx.previous_time = previous;
                times = Some((first, p.ctx.time));
                for n in session.notices.drain(..) {
                    shared.say(named(format!("kwire: {n}")));
                }
                if let Some(t) = &p.ctx.tls {
                    let s = &t.session;
                    let mut text = format!("{} {}", s.version, s.cipher_suite);
                    if let Some(sni) = &s.sni {
                        text.push_str(&format!(" sni={sni}"));
                    }
                    let mut tls = shared.tls.lock().unwrap_or_else(|e| e.into_inner());
                    tls.entry((ordinal as u32, p.ctx.connection))
                        .or_insert(text);
                }
                let dir = if f.ctx.direction == input::Direction::ToServer {
                    Direction::Request
                } else {
                    Direction::Response
                };
                let meta = Meta {
                    connection: p.ctx.connection,
                    capture: ordinal as u32,
                    direction: dir,
                    correlation_id: correlation_id(&f.bytes, dir),
                    size: u32::try_from(f.bytes.len()).unwrap_or(u32::MAX),
                    time: p.ctx.time,
                    pair: None,
                };
                let mut pend = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
                let offset = pend.written;
                if pend.spool.write_all(&f.bytes).is_err() {
                    shared.say("kwire: explore: the spool file could not be written".into());
                    shared.stop.store(true, Ordering::Relaxed);
                    return;
                }
                pend.written += f.bytes.len() as u64;
                let read = shared.entries.read().map_or(0, |e| e.len()) + pend.entries.len();
                if read + 1 >= shared.cap {
                    shared.stop.store(true, Ordering::Relaxed);
                }
                if read + 1 == MAX_SPOOLED && shared.cap > MAX_SPOOLED {
                    // Not the first-screen spool of an index: its memory's bound.
                    shared.stop.store(true, Ordering::Relaxed);
                    fail(
                        shared,
                        format!(
                            "explore: stopped at {MAX_SPOOLED} messages: what the message index cannot take (a live capture, a file still being written, stdin among several inputs) is held in memory, {MAX_SPOOLED} messages at most; `kwire read` decodes all of it, and `kwire explore FILE` on the finished file indexes it"
                        ),
                    );
                }
                pend.entries.push(Entry {
                    prepared: p,
                    kind: f.kind,
                    incomplete: f.ctx.incomplete,
                    offset,
                    meta,
                });
                // Published in batches; the first messages at once (the first screen).
                if pend.entries.len() >= 4096
                    || pend.last.elapsed() >= Duration::from_millis(100)
                    || shared.entries.read().map_or(0, |e| e.len()) < 256
                {
                    shared.publish(&mut pend);
                }
            }
        });
        {
            let mut pend = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
            shared.publish(&mut pend);
        }
        if let Some(l) = &inputs.live {
            // The stream has ended: the child is reaped, and says how it ended.
            l.reading_ended(shared);
        }
        if shared.stop.load(Ordering::Relaxed) {
            // Stopped on purpose: what waits for the rest of the capture is not said.
            break;
        }
        match res {
            Ok(mut stats) => {
                {
                    let mut t = shared.tls_table.lock().unwrap_or_else(|e| e.into_inner());
                    t.0.extend(crate::traffic::TlsRow::of_capture(
                        std::mem::take(&mut stats.tls),
                        label.clone(),
                    ));
                    t.1 += stats.tls_past_cap;
                }
                if stats.file_corrupt {
                    // `read` exits 2 for it too; the notice said where.
                    shared.input_failed.store(true, Ordering::Relaxed);
                }
                for p in session.pairer.unanswered().iter().take(5) {
                    shared.say(named(format!(
                        "kwire: connection {}: request correlation_id {} ({} v{}, frame {}) got no response in the capture",
                        p.connection,
                        p.correlation_id,
                        schema.api_name(p.request.api_key).unwrap_or("?"),
                        p.request.api_version,
                        p.request.frame
                    )));
                }
                if stats.file_truncated {
                    shared.input_failed.store(true, Ordering::Relaxed);
                    shared.say(named(format!(
                        "kwire: {}: the capture is cut short (it ends inside a record)",
                        path.display()
                    )));
                }
            }
            Err(e) => input_fail(shared, named(format!("{}: {e}", path.display()))),
        }
    }
    shared.following.store(false, Ordering::Relaxed);
    shared.done.store(true, Ordering::Relaxed);
}

/// [`fail`] for an input that could not be read or is not a capture.
fn input_fail(shared: &Shared, m: String) {
    shared.input_failed.store(true, Ordering::Relaxed);
    fail(shared, m);
}

fn fail(shared: &Shared, m: String) {
    shared.say(format!("kwire: {m}"));
    let mut e = shared.error.lock().unwrap_or_else(|e| e.into_inner());
    if e.is_none() {
        *e = Some(m);
    }
}

impl Source for Spool {
    fn count(&self) -> usize {
        self.shared.entries.read().map_or(0, |e| e.len())
    }

    fn progress(&self) -> Progress {
        let s = &self.shared;
        Progress {
            bytes_read: s.bytes_read.load(Ordering::Relaxed),
            bytes_total: s.bytes_total.load(Ordering::Relaxed),
            done: s.done.load(Ordering::Relaxed),
            following: s.following.load(Ordering::Relaxed),
            error: s.error.lock().ok().and_then(|e| e.clone()),
        }
    }

    fn meta(&self, i: usize) -> Option<Meta> {
        self.shared.entries.read().ok()?.get(i).map(|e| e.meta)
    }

    fn with_message(
        &self,
        i: usize,
        detail: Detail,
        f: &mut dyn FnMut(&Message<'_>, &Context),
    ) -> bool {
        let (prepared, kind, incomplete, offset, size) = {
            let Ok(entries) = self.shared.entries.read() else {
                return false;
            };
            let Some(e) = entries.get(i) else {
                return false;
            };
            (
                e.prepared.clone(),
                e.kind,
                e.incomplete,
                e.offset,
                e.meta.size as usize,
            )
        };
        let mut bytes = vec![0u8; size];
        if self
            .shared
            .reader
            .read_exact_at(&mut bytes, offset)
            .is_err()
        {
            return false;
        }
        let frame = Frame {
            ctx: frame_context(incomplete),
            kind,
            bytes,
        };
        let opts = DecodeOptions {
            detail,
            ..self.decode.clone()
        };
        let arena = Buffers::new();
        let m = prepared.decode(&self.schema, &opts, &frame, &arena);
        f(&m, &prepared.ctx);
        true
    }

    fn notices(&self) -> (Vec<String>, u64) {
        self.shared
            .notices
            .lock()
            .map(|n| n.clone())
            .unwrap_or_default()
    }

    fn tls_of(&self, capture: u32, connection: u32) -> Option<String> {
        self.shared
            .tls
            .lock()
            .ok()?
            .get(&(capture, connection))
            .cloned()
    }

    fn tls_table(&self) -> (Vec<crate::traffic::TlsRow>, u64) {
        self.shared
            .tls_table
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default()
    }

    fn tls_count(&self) -> (usize, u64) {
        self.shared
            .tls_table
            .lock()
            .map(|t| (t.0.len(), t.1))
            .unwrap_or_default()
    }

    fn live(&self) -> Option<String> {
        self.live.as_ref().map(|l| l.status())
    }

    fn input_failed(&self) -> bool {
        self.shared.input_failed.load(Ordering::Relaxed)
    }

    fn follows_end(&self) -> bool {
        self.live.is_some() || self.shared.grew.load(Ordering::Relaxed)
    }
}
