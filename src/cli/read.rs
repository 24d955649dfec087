//! `kwire read` and `kwire stats`: decode every Kafka message of a pcap/pcapng capture.
//!
//! The options come in groups so that each concern stays in one place: [`CaptureArgs`]
//! (which capture, where Kafka is, notices, `--strict`), [`FilterArgs`] (`-Y` and its
//! shorthands, for `read` and `stats`), [`super::view::ViewArgs`] (tshark's output flags).

use super::output::{print_message, render_options};
use super::view::{self, View, ViewArgs};
use super::{say, Cli, CliError, OutputArgs, EXIT_INPUT, EXIT_OK, EXIT_STRICT};
use crate::decode::{DecodeOptions, Detail};
use crate::filter::{self, Filter};
use crate::input::{self, CaptureOptions, Event, FrameKind};
use crate::schema::Schema;
use crate::session::{Context, Prepared, Session};
use crate::tree::{Buffers, Message};
use clap::Args;
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Which capture to read, how to find Kafka in it, and what to say about it.
#[derive(Args, Debug, Clone)]
pub struct CaptureArgs {
    /// The captures (pcap or pcapng), read one after the other, each with its own
    /// sessions; `-` for stdin.
    #[arg(value_name = "CAPTURE", num_args = 0.., required_unless_present = "read_file")]
    pub files: Vec<PathBuf>,
    /// A capture, as tshark's -r: read before the CAPTUREs, if any.
    #[arg(short = 'r', value_name = "FILE")]
    pub read_file: Option<PathBuf>,
    /// A broker port (repeatable; default 9092).
    #[arg(long = "port", value_name = "P")]
    pub ports: Vec<u16>,
    /// Recognise Kafka on any port from its first frames.
    #[arg(long)]
    pub detect: bool,
    /// Largest frame accepted, in bytes, size prefix included (like the broker's
    /// socket.request.max.bytes); at least 8.
    #[arg(long, default_value_t = 100 << 20, value_parser = max_frame)]
    pub max_frame: usize,
    /// Exit with status 3 when the capture was read but some message failed to decode.
    #[arg(long)]
    pub strict: bool,
    /// Print every notice and every unanswered request (default: the first 50 notices
    /// of each kind and the first 5 unanswered requests; the closing line counts all).
    #[arg(long)]
    pub all_notices: bool,
    /// A TLS key log (NSS format, as SSLKEYLOGFILE files are) to decrypt TLS connections
    /// with; repeatable. Without it, the file SSLKEYLOGFILE names is read when it exists.
    /// A pcapng file's Decryption Secrets Blocks are always read.
    #[arg(long = "tls-keylog", value_name = "FILE")]
    pub tls_keylog: Vec<PathBuf>,
    /// Worker threads (default: the number of cores; 1 when reading stdin, so a live
    /// capture prints each message as it comes). `read` and `stats` decode and print on
    /// them (`--threads 1` decodes on the reading thread); `export` exports that many
    /// captures at once. The output is the same at any count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

impl CaptureArgs {
    /// Worker threads to use (see `--threads`).
    pub fn threads(&self) -> usize {
        let stdin = self
            .read_file
            .iter()
            .chain(&self.files)
            .any(|f| f.as_os_str() == "-");
        match self.threads {
            Some(n) => usize::from(n),
            None if stdin => 1,
            None => crate::pipeline::default_threads(),
        }
    }
}

/// The key logs `--tls-keylog` names (or the file `SSLKEYLOGFILE` names, when no
/// `--tls-keylog` is given and it exists), read into one [`input::tls::KeyLog`]. Each line
/// that cannot be used is a `kwire: FILE:LINE: ...` line for stderr; no secret is in them.
///
/// # Errors
/// A `--tls-keylog` file that cannot be read.
pub fn load_keylogs(a: &CaptureArgs) -> Result<(input::tls::KeyLog, Vec<String>), CliError> {
    let mut keys = input::tls::KeyLog::new();
    let mut lines = Vec::new();
    let mut files: Vec<(PathBuf, bool)> = a.tls_keylog.iter().map(|p| (p.clone(), true)).collect();
    if files.is_empty() {
        if let Some(p) = std::env::var_os("SSLKEYLOGFILE").filter(|p| !p.is_empty()) {
            files.push((PathBuf::from(p), false));
        }
    }
    for (p, given) in files {
        match std::fs::read(&p) {
            Ok(text) => {
                let problems = keys.add_text(&text, &p.display().to_string());
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
            Err(e) if given => {
                return Err(CliError::Msg(format!("--tls-keylog {}: {e}", p.display())))
            }
            Err(e) => lines.push(format!(
                "kwire: SSLKEYLOGFILE {}: {e}; TLS connections stay encrypted",
                p.display()
            )),
        }
    }
    Ok((keys, lines))
}

/// `--max-frame`: a frame holds at least a size prefix and a correlation_id.
fn max_frame(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    if n < 8 {
        return Err(format!(
            "{n} is too small: a frame holds at least a 4-byte size prefix and a 4-byte correlation_id (8 bytes)"
        ));
    }
    Ok(n)
}

/// Which messages to keep: `-Y` and the older options that are shorthands for it.
#[derive(Args, Debug, Clone, Default)]
pub struct FilterArgs {
    /// A display filter (Wireshark's syntax), e.g. `-Y 'api == Fetch && ErrorCode ~= 0'`;
    /// see docs/filter.md.
    #[arg(short = 'Y', long = "display-filter", value_name = "EXPR")]
    pub display_filter: Option<String>,
    /// Only these APIs, name or api_key; repeatable (`-Y 'api in {A, B}'`).
    #[arg(long = "api", value_name = "NAME|KEY")]
    pub apis: Vec<String>,
    /// Only messages with this correlation_id (`-Y 'correlation_id == N'`).
    #[arg(long, allow_negative_numbers = true)]
    pub correlation_id: Option<i32>,
    /// Only messages that mention this topic (`-Y 'topic == "T"'`).
    #[arg(long)]
    pub topic: Option<String>,
    /// Only responses with a non-zero error code anywhere
    /// (`-Y 'kind == response && error_code ~= 0'`).
    #[arg(long)]
    pub errors: bool,
    /// Only requests (`-Y 'kind == request'`).
    #[arg(long, conflicts_with = "responses")]
    pub requests: bool,
    /// Only responses (`-Y 'kind == response'`).
    #[arg(long)]
    pub responses: bool,
}

impl FilterArgs {
    /// The filter these options ask for: `-Y`'s expression and the shorthands joined
    /// with `&&`; none when no option was given.
    ///
    /// # Errors
    /// A bad `-Y` expression (with a caret under its column), an `--api` no schema knows.
    pub fn filter(&self, schema: &Schema) -> Result<Option<Filter>, CliError> {
        let mut parts = Vec::new();
        if let Some(e) = &self.display_filter {
            Filter::parse_known(e, &filter::Known::of(schema))
                .map_err(|e| CliError::Usage(format!("-Y: {e}\n{}", e.pointer())))?;
            parts.push(format!("({e})"));
        }
        if !self.apis.is_empty() {
            let mut items = Vec::new();
            for x in &self.apis {
                let known = match x.parse::<i16>() {
                    Ok(k) => schema.api_name(k).is_some(),
                    Err(_) => schema.api_keys().iter().any(|k| {
                        schema
                            .api_name(*k)
                            .is_some_and(|n| n.eq_ignore_ascii_case(x))
                    }),
                };
                if !known {
                    let names: Vec<&str> = schema
                        .api_keys()
                        .into_iter()
                        .filter_map(|k| schema.api_name(k))
                        .collect();
                    let near = filter::nearest(x, names);
                    return Err(CliError::Usage(format!(
                        "--api {x}: no such API (see `kwire apis`){}",
                        filter::did_you_mean(&near)
                    )));
                }
                items.push(match x.parse::<i16>() {
                    Ok(k) => k.to_string(),
                    Err(_) => filter::quote(x),
                });
            }
            parts.push(format!("api in {{{}}}", items.join(", ")));
        }
        if let Some(c) = self.correlation_id {
            parts.push(format!("correlation_id == {c}"));
        }
        if let Some(t) = &self.topic {
            parts.push(format!("topic == {}", filter::quote(t)));
        }
        if self.errors {
            parts.push("kind == response && error_code ~= 0".into());
        }
        if self.requests {
            parts.push("kind == request".into());
        }
        if self.responses {
            parts.push("kind == response".into());
        }
        if parts.is_empty() {
            return Ok(None);
        }
        Filter::parse(&parts.join(" && "))
            .map(Some)
            .map_err(|e| CliError::Usage(format!("the filter options: {e}\n{}", e.pointer())))
    }
}

/// `kwire read` options.
#[derive(Args, Debug, Clone)]
#[command(after_help = READ_HELP)]
pub struct ReadArgs {
    /// The capture and where Kafka is in it.
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Which messages to print.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// tshark's output flags.
    #[command(flatten)]
    pub view: ViewArgs,
    /// Output options.
    #[command(flatten)]
    pub out: OutputArgs,
}

const READ_HELP: &str = "\
What it prints (as tshark):
  (none), -T text     one line per message
  -V                  each message's title line and tree
  -x                  each message's line and byte grid
  -V -x, --format text  title, byte grid and tree
  -T json|values|summary|hexdump|fields   as --format of that name
  -c N stops after N messages printed, across the captures (tshark counts packets read).

Exit status (as every command, `kwire --help`): 0 the captures were read to their end
(also when a pipe closed or -c was reached); 1 bad arguments, a bad -Y expression or a
name no schema knows; 2 input that cannot be read or is cut short (of several captures,
any one), or output that cannot be written; 3 with --strict, some message failed to decode.

Examples:
  kwire read captures/demo.pcap
  kwire read -r capture.pcapng -Y 'api == Fetch && Topic == \"orders\"' -V
  kwire read f.pcap -Y 'ErrorCode ~= 0 || malformed' -c 10
  kwire read f.pcap -T fields -e frame -e api -e correlation_id -e latency -E header=y
  kwire read f.pcap -T json -x | jq .bytes
  tcpdump -U -w - port 9092 | kwire read - -l
  kwire read f.pcap -t ad -Y 'latency > 100ms'";

/// Notice lines printed per kind; the rest of that kind are only counted (in the closing
/// line), so a capture with a million broken connections does not flood the terminal.
const NOTICE_LINES_PER_KIND: u64 = 50;

/// Unanswered requests listed one a line after the capture; the rest are counted.
const UNANSWERED_LINES: usize = 5;

/// Counts for the closing line on stderr.
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
    /// Counts notice `n` and says its line, if it has one ([`Tally::notice`]).
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

/// Files at least this large get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 32 << 20;

pub use crate::session::SchemaPlausibility;

/// Whether `m` names topic `t` (`kwire read --topic`, `-Y 'topic == "t"'`): a `Name` or
/// `...Topic...` string equal to `t`, or a `TopicId` the session has named `t`.
pub fn mentions_topic(m: &Message<'_>, t: &str) -> bool {
    filter::occurrences("topic", m, &filter::Context::default())
        .iter()
        .any(|o| o.text() == t)
}

/// Whether any `...ErrorCode` field of `m` is non-zero (`-Y 'error_code ~= 0'`; `kwire
/// read --errors` also asks for a response).
pub fn has_error_code(m: &Message<'_>) -> bool {
    filter::occurrences("error_code", m, &filter::Context::default())
        .iter()
        .any(|o| o.text() != "0")
}

/// What reading a capture came to.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The closing lines for stderr: requests left unanswered (a few, or all with
    /// `--all-notices`), then one line counting packets, connections, messages, errors
    /// and what was skipped.
    pub closing: Vec<String>,
    /// The file ended inside a record (and reading was not stopped on purpose).
    pub truncated: bool,
    /// Messages with a decode error somewhere in their tree.
    pub with_errors: u64,
    /// Requests that got no response, as (connection, last frame).
    pub unanswered: HashSet<(u32, u64)>,
    /// Each TLS connection's summary (for `kwire stats`).
    pub tls: Vec<input::tls::TlsSummary>,
}

impl Outcome {
    /// The exit status: 2 for a capture cut short, 3 with `strict` when some message
    /// failed to decode, else 0.
    pub fn status(&self, strict: bool) -> i32 {
        if self.truncated {
            EXIT_INPUT
        } else if strict && self.with_errors > 0 {
            EXIT_STRICT
        } else {
            EXIT_OK
        }
    }
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

/// One capture of a command's list: its path and, when the command reads several, the
/// name its messages and notices carry (the path as given).
#[derive(Clone, Debug)]
pub struct CaptureFile<'p> {
    /// The file (`-` for stdin).
    pub path: &'p std::path::Path,
    /// `Some(path as given)` when the command reads more than one capture: it goes into
    /// each message's [`crate::render::Context::capture`] and prefixes notices.
    pub label: Option<std::sync::Arc<str>>,
}

impl CaptureArgs {
    /// The captures to read, in command-line order, labelled when there are several.
    pub fn captures(&self) -> Vec<CaptureFile<'_>> {
        let several = self.files.len() + usize::from(self.read_file.is_some()) > 1;
        self.read_file
            .iter()
            .chain(&self.files)
            .map(|p| CaptureFile {
                path: p,
                label: several.then(|| p.display().to_string().into()),
            })
            .collect()
    }
}

/// The work done for each message, on a worker thread (or on the reading thread with
/// one thread): write the message's output, if any, to the writer given, and return
/// what the reading thread gathers in capture order.
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
    (m.error_count() > 0, undecodable)
}

/// How [`run_capture`] runs, besides what to read.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// No notices and no closing lines on stderr (a first pass).
    pub quiet: bool,
    /// Stop once this many messages were shown.
    pub limit: Option<u64>,
    /// Worker threads (1: decode on the reading thread). A caller whose output depends
    /// on what earlier messages showed (`-c`, `-t dd`, numbered pages, a live terminal)
    /// passes 1.
    pub threads: usize,
    /// The times of the first and the latest message read so far, carried from capture
    /// to capture (they set [`Context::first_time`] and [`Context::previous_time`]).
    pub times: Option<((i64, u32), (i64, u32))>,
}

/// Reads a capture, decodes every Kafka message (pairing responses with requests) at
/// `dopts.detail` (see [`Detail`]: `Summary` keeps only what the summary line and the
/// filters read), runs `work` on each, writing what it writes to `out` in capture order,
/// and hands its results to `collect` in capture order (`collect` says whether the
/// message was shown). With more than one thread (`run.threads`), messages are decoded
/// and `work` runs on worker threads (see [`crate::pipeline`]) while this thread reads,
/// reassembles and pairs: the output is the same. Notices go to stderr as they come
/// (not with `run.quiet`). Reading stops early once `run.limit` messages were shown, or
/// when writing fails (a closed pipe).
///
/// # Errors
/// A file that cannot be opened or is not a capture (with a hint when it looks like
/// something another command reads); the first error `work` returns or writing to `out`
/// gives.
#[allow(clippy::too_many_arguments)]
pub fn run_capture<O: Send>(
    schema: &Schema,
    a: &CaptureArgs,
    file: &CaptureFile<'_>,
    dopts: DecodeOptions,
    run: &mut RunOptions,
    out: &mut dyn Write,
    work: &MessageWork<'_, O>,
    collect: &mut dyn FnMut(O) -> bool,
) -> Result<Outcome, CliError> {
    let (quiet, limit) = (run.quiet, run.limit);
    let path = file.path;
    // A progress bar on stderr for large files, when stderr is a terminal.
    let mut bar = indicatif::ProgressBar::hidden();
    let raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        if path.is_dir() {
            return Err(CliError::Msg(format!(
                "{}: is a folder, not a capture file",
                path.display()
            )));
        }
        let f = std::fs::File::open(path)
            .map_err(|e| CliError::Msg(format!("{}: {e}", path.display())))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        // One bar at a time: none when several captures are read (they may run at once).
        if len >= PROGRESS_MIN_BYTES
            && std::io::stderr().is_terminal()
            && !quiet
            && file.label.is_none()
        {
            bar = indicatif::ProgressBar::new(len);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            ) {
                bar.set_style(style);
            }
        }
        Box::new(bar.wrap_read(f))
    };
    let stop = Arc::new(AtomicBool::new(false));
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
        Some(l) => match line.strip_prefix("kwire: ") {
            Some(rest) => format!("kwire: {l}: {rest}"),
            None => format!("{l}: {line}"),
        },
        None => line,
    };
    let say_line = |line: String| {
        if !quiet {
            bar.suspend(|| say(&named(line)))
        }
    };
    let (keys, key_lines) = load_keylogs(a)?;
    key_lines.into_iter().for_each(say_line);
    let copts = CaptureOptions {
        ports: if a.ports.is_empty() {
            vec![9092]
        } else {
            a.ports.clone()
        },
        detect: a.detect,
        max_frame: a.max_frame,
        tls_keys: std::sync::Arc::new(keys),
        ..CaptureOptions::default()
    };
    let plaus = SchemaPlausibility(schema);
    let mut session = Session::new(schema, &dopts);
    let mut tally = Tally::default();
    let mut io_err: Option<std::io::Error> = None;
    let all = a.all_notices;
    // Counted in capture order as each message's output is written.
    let (mut shown, mut with_errors, mut undecodable) = (0u64, 0u64, 0u64);
    let mut count = |o: O, (errors, undec): (bool, bool)| {
        shown += u64::from(collect(o));
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
    let res = if run.threads <= 1 {
        // One arena for every message: emptied after each, so its memory is reused.
        let mut arena = Buffers::new();
        input::read_capture(input, &copts, &plaus, |ev| {
            if io_err.is_some() || stop.load(Ordering::Relaxed) {
                return;
            }
            match ev {
                Event::Notice(n) => tally.tell(&n, all, &say_line),
                Event::Frame(f) => {
                    arena.reset();
                    let arena = &arena;
                    tally.frame(&f);
                    let (m, mut ctx) = session.decode(&f, arena);
                    place(&mut ctx);
                    for n in session.notices.drain(..) {
                        tally.tell(&n, all, &say_line);
                    }
                    match work(&m, &ctx, out) {
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
        let dopts = &dopts;
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
                    arena.reset();
                    let arena = &*arena;
                    let m = p.decode(schema, dopts, f, arena);
                    let o = work(&m, &p.ctx, w)?;
                    outs.push((o, problems(&m)));
                }
                arena.reset();
                Ok::<(), std::io::Error>(())
            })?;
            Ok((outs, batch))
        };
        let budget = crate::pipeline::Budget::for_threads(run.threads);
        let piped = crate::pipeline::run(
            run.threads,
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
    bar.finish_and_clear();
    if let Some(e) = io_err {
        return Err(CliError::Io(e));
    }
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
        CliError::Msg(m)
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
            path.display()
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
            counted(waiting.len() as u64, "unanswered request", "unanswered requests")
        },
        answers_without_request(&session),
        if skipped.is_empty() { "none".to_string() } else { skipped.join(", ") }
    ));
    Ok(Outcome {
        closing: lines.into_iter().map(named).collect(),
        truncated,
        with_errors: tally.with_errors,
        unanswered: waiting
            .iter()
            .map(|p| (p.connection, p.request.frame))
            .collect(),
        tls: stats.tls,
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

/// The requests of the capture that get no response, read in a first pass (for
/// `-Y unanswered`, which must know the future when it sees a request).
pub(super) fn unanswered_first_pass(
    schema: &Schema,
    a: &CaptureArgs,
    file: &CaptureFile<'_>,
    f: Option<&Filter>,
) -> Result<Option<HashSet<(u32, u64)>>, CliError> {
    if !f.is_some_and(Filter::uses_unanswered) {
        return Ok(None);
    }
    if file.path.as_os_str() == "-" {
        return Err(CliError::Usage(
            "-Y unanswered needs a capture file, not stdin: it reads the capture twice".into(),
        ));
    }
    let dopts = DecodeOptions {
        detail: Detail::Summary,
        ..DecodeOptions::default()
    };
    let mut run = RunOptions {
        quiet: true,
        threads: a.threads(),
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
        &mut |()| false,
    )?;
    Ok(Some(first.unanswered))
}

/// Runs `kwire read`; returns the exit status.
///
/// # Errors
/// Bad options; a file that cannot be opened or is not a capture; output errors.
pub fn read_command(
    schema: &Schema,
    cli: &Cli,
    a: &ReadArgs,
    out: &mut dyn Write,
) -> Result<i32, CliError> {
    let flt = a.filter.filter(schema)?;
    let v = view::resolve(&a.view, &a.out)?;
    let mut ropts = render_options(cli, &a.out);
    view::apply(&a.view, &v, &mut ropts);
    for line in v.ignored.iter() {
        say(line);
    }
    let fields = match &v.view {
        View::Fields => Some(view::Fields::new(&a.view)?.checked(schema)?),
        _ => None,
    };
    // The summary line needs a fraction of the tree: decode only that much, unless the
    // filter or -e reads schema fields.
    let detail = if v.summary_detail()
        && !flt.as_ref().is_some_and(Filter::needs_full_tree)
        && !fields.as_ref().is_some_and(view::Fields::needs_full_tree)
    {
        Detail::Summary
    } else {
        Detail::Full
    };
    let flush_each = a.view.line_flush || std::io::stdout().is_terminal();
    if let Some(f) = &fields {
        if !a.view.quiet {
            f.header(out)?;
        }
    }
    let quiet = a.view.quiet;
    let dopts = DecodeOptions {
        detail,
        max_nodes: a.out.max_nodes,
        ..DecodeOptions::default()
    };
    let limit = a.view.count;
    let pages = matches!(
        v.view,
        View::Format(super::Format::Md | super::Format::Html)
    );
    // What depends on the messages shown before (numbered pages, -t dd, -c) or must come
    // out as it is read (a terminal, -l) runs on the reading thread.
    let ordered = pages
        || flush_each
        || limit.is_some()
        || ropts.time == crate::render::time::TimeFormat::DeltaShown;
    let mut run = RunOptions {
        quiet,
        threads: if ordered { 1 } else { a.capture.threads() },
        ..RunOptions::default()
    };
    // The state only the reading thread touches (with one thread): the pages' numbering
    // and the HTML document, the time of the previous message shown.
    struct Ordered {
        n: usize,
        doc: crate::page::frames::Doc,
        previous_shown: Option<(i64, u32)>,
    }
    let state = Mutex::new(Ordered {
        n: 0,
        doc: crate::page::frames::Doc::new(),
        previous_shown: None,
    });
    let mut shown = 0u64;
    let mut status = EXIT_OK;
    for_each_capture(&a.capture, |file| {
        // -c counts across the captures: once reached, the rest are not read.
        let left = limit.map(|l| l.saturating_sub(shown));
        if left == Some(0) {
            return Ok(());
        }
        run.limit = left;
        let unanswered = unanswered_first_pass(schema, &a.capture, file, flt.as_ref())?;
        let ropts = &ropts;
        let work = |m: &Message<'_>, ctx: &Context, out: &mut dyn Write| {
            let fctx = filter::Context {
                capture: Some(ctx),
                unanswered: unanswered.as_ref(),
            };
            let pass = flt.as_ref().is_none_or(|f| f.matches(m, &fctx));
            // Locked only on the reading thread's path (workers never wait for it).
            let mut st = ordered.then(|| {
                state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            });
            if pass && !quiet {
                let previous_shown = st.as_ref().and_then(|s| s.previous_shown);
                let ropts = &view::with_times(ropts, ctx, previous_shown);
                match (&v.view, &fields, st.as_mut()) {
                    (_, Some(f), _) => f.row(m, &fctx, out)?,
                    (View::LineGrid, _, _) => view::line_and_grid(m, ctx, ropts, out)?,
                    (View::Format(super::Format::Md), _, Some(st)) => {
                        st.n += 1;
                        crate::page::frames::markdown(out, schema, st.n, m, Some(ctx), ropts)?
                    }
                    (View::Format(super::Format::Html), _, Some(st)) => {
                        st.n += 1;
                        st.doc.add(schema, m, Some(ctx), 0, ropts)
                    }
                    (View::Format(fmt), _, _) => print_message(m, Some(ctx), ropts, *fmt, out)?,
                    (View::Fields, None, _) => {}
                }
                if flush_each {
                    out.flush()?;
                }
            }
            if let (true, Some(st)) = (pass, st.as_mut()) {
                st.previous_shown = Some(ctx.time);
            }
            Ok(pass)
        };
        let outcome = run_capture(
            schema,
            &a.capture,
            file,
            dopts.clone(),
            &mut run,
            out,
            &work,
            &mut |pass| {
                shown += u64::from(pass);
                pass
            },
        )?;
        out.flush()?;
        outcome.closing.iter().for_each(|l| say(l));
        status = worse(status, outcome.status(a.capture.strict));
        Ok(())
    })?;
    if matches!(v.view, View::Format(super::Format::Html)) {
        let st = state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        st.doc.finish(out, "Kafka messages decoded by kwire")?;
        out.flush()?;
    }
    Ok(status)
}

/// Two exit statuses combined, as [`Outcome::status`] ranks them: a capture cut short
/// (2) before a decode failure under --strict (3) before success.
pub fn worse(a: i32, b: i32) -> i32 {
    if a == EXIT_INPUT || b == EXIT_INPUT {
        EXIT_INPUT
    } else {
        a.max(b)
    }
}

/// Runs `each` on every capture of `a` (`-r` first, then the CAPTUREs), in command-line
/// order. With one capture its error is the command's; with several, a capture that cannot be read is named on
/// stderr and the others still run, and the command then fails (status 2) saying how
/// many could not be read. An output error (a closed pipe) ends the command at once.
///
/// # Errors
/// As above.
pub fn for_each_capture(
    a: &CaptureArgs,
    mut each: impl FnMut(&CaptureFile<'_>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let files = a.captures();
    if let [one] = files.as_slice() {
        return each(one);
    }
    let mut failed = 0;
    for f in &files {
        match each(f) {
            Ok(()) => {}
            Err(CliError::Io(e)) => return Err(CliError::Io(e)),
            Err(CliError::Usage(m)) => return Err(CliError::Usage(m)),
            Err(e) => {
                say(&format!("kwire: {e}"));
                failed += 1;
            }
        }
    }
    unreadable(failed, files.len(), "read")
}

/// The command's end when `failed` of `total` captures could not be read (or
/// exported: `verb`).
///
/// # Errors
/// `failed > 0`: `1 of 3 captures could not be read` (status 2).
pub fn unreadable(failed: usize, total: usize, verb: &str) -> Result<(), CliError> {
    if failed == 0 {
        return Ok(());
    }
    Err(CliError::Msg(format!(
        "{failed} of {total} {} could not be {verb}",
        if total == 1 { "capture" } else { "captures" }
    )))
}

/// `kwire stats` options.
#[derive(Args, Debug, Clone)]
#[command(after_help = "\
Latency quantiles are nearest-rank: the value at rank ceil(q x n) of the n sorted latencies.

Examples:
  kwire stats captures/demo.pcap
  kwire stats f.pcap -Y 'client_id == \"my-app\"' --format json
  kwire stats /var/lib/kafka/data -Y 'record_type == OffsetCommitValue'   (a log directory: -Y as in kwire log)")]
pub struct StatsArgs {
    /// The capture and where Kafka is in it.
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Which messages to count.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = super::ListFormat::Text)]
    pub format: super::ListFormat,
}

/// Runs `kwire stats`; returns the exit status.
///
/// # Errors
/// A bad filter; a file that cannot be opened or is not a capture; output errors.
pub fn stats_command(schema: &Schema, a: &StatsArgs, out: &mut dyn Write) -> Result<i32, CliError> {
    let paths: Vec<&Path> = a.capture.captures().iter().map(|c| c.path).collect();
    if paths
        .iter()
        .all(|f| f.is_dir() || crate::log::FileKind::of(f).is_some())
    {
        let flt = a.filter.filter(schema)?;
        return log_stats(schema, &paths, flt.as_ref(), a.format, out)
            .map(|t| super::log_cmd::log_status(&t, a.capture.strict));
    }
    let flt = a.filter.filter(schema)?;
    let mut st = crate::stats::Stats::default();
    let mut closing = Vec::new();
    let mut ordinal = 0;
    let mut status = EXIT_OK;
    let res = for_each_capture(&a.capture, |file| {
        st.capture = ordinal;
        ordinal += 1;
        let unanswered = unanswered_first_pass(schema, &a.capture, file, flt.as_ref())?;
        let work = |m: &Message<'_>, ctx: &Context, _: &mut dyn Write| {
            let fctx = filter::Context {
                capture: Some(ctx),
                unanswered: unanswered.as_ref(),
            };
            let pass = flt.as_ref().is_none_or(|f| f.matches(m, &fctx));
            Ok(pass.then(|| crate::stats::Item::of(m, ctx)))
        };
        let mut run = RunOptions {
            threads: a.capture.threads(),
            ..RunOptions::default()
        };
        let outcome = run_capture(
            schema,
            &a.capture,
            file,
            DecodeOptions::default(),
            &mut run,
            &mut std::io::sink(),
            &work,
            &mut |item| match item {
                Some(item) => {
                    st.add_item(item);
                    true
                }
                None => false,
            },
        )?;
        status = worse(status, outcome.status(a.capture.strict));
        closing.extend(outcome.closing);
        st.add_tls(outcome.tls);
        Ok(())
    });
    // One capture that cannot be read prints nothing; of several, the others are counted.
    let one = a.capture.captures().len() == 1;
    let res = match res {
        Err(e) if one || matches!(e, CliError::Usage(_) | CliError::Io(_)) => return Err(e),
        r => r,
    };
    write_stats(out, a.format, || st.to_json(), |w| st.write_text(w))?;
    out.flush()?;
    closing.iter().for_each(|l| say(l));
    res.map(|()| status)
}

/// `kwire stats` on a log directory or log file: every record decoded, then counted;
/// with a filter, only the batches and entries it keeps (`--topic T` is then the
/// partition folder's topic).
fn log_stats(
    schema: &Schema,
    paths: &[&Path],
    flt: Option<&Filter>,
    format: super::ListFormat,
    out: &mut dyn Write,
) -> Result<crate::log::Totals, CliError> {
    let mut st = crate::log::stats::LogStats::default();
    let opts = crate::log::LogOptions {
        verify: true,
        ..Default::default()
    };
    let paths: Vec<PathBuf> = paths.iter().map(|p| p.to_path_buf()).collect();
    let t = match flt {
        None => crate::log::read_paths(schema, &paths, &opts, &mut st)?,
        Some(filter) => {
            let mut fs = crate::log::Filtered {
                inner: &mut st,
                filter,
                topic: None,
                shown: 0,
            };
            crate::log::read_paths(schema, &paths, &opts, &mut fs)?
        }
    };
    write_stats(out, format, || st.to_json(), |w| st.write_text(w))?;
    Ok(t)
}

/// Prints counts as pretty JSON or as text, as `--format` asks.
fn write_stats(
    out: &mut dyn Write,
    format: super::ListFormat,
    json: impl FnOnce() -> serde_json::Value,
    text: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match format {
        super::ListFormat::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json()).unwrap_or_default()
        ),
        super::ListFormat::Text => text(out),
    }
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
