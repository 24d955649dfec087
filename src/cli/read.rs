//! `kwire read`: decode every Kafka message of a pcap/pcapng capture.

use super::output::{print_message, render_options};
use super::{Cli, CliError, OutputArgs};
use crate::decode::{DecodeOptions, Detail};
use crate::input::{self, CaptureOptions, Event, FrameKind};
use crate::schema::Schema;
use crate::session::{Context, Prepared, Session};
use crate::tree::{Buffers, Direction, Message, Value};
use clap::Args;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

/// Which capture to read and how to find Kafka in it.
#[derive(Args, Debug, Clone)]
pub struct CaptureArgs {
    /// The capture (pcap or pcapng); `-` for stdin.
    pub file: PathBuf,
    /// A broker port (repeatable; default 9092).
    #[arg(long = "port", value_name = "P")]
    pub ports: Vec<u16>,
    /// Recognise Kafka on any port from its first frames.
    #[arg(long)]
    pub detect: bool,
    /// Largest frame accepted, in bytes (like the broker's socket.request.max.bytes).
    #[arg(long, default_value_t = 100 << 20)]
    pub max_frame: usize,
    /// A TLS key log (NSS format, as SSLKEYLOGFILE files are) to decrypt TLS connections
    /// with; repeatable. Without it, the file SSLKEYLOGFILE names is read when it exists.
    /// A pcapng file's Decryption Secrets Blocks are always read.
    #[arg(long = "tls-keylog", value_name = "FILE")]
    pub tls_keylog: Vec<PathBuf>,
    /// Worker threads that decode and print (default: the number of cores; 1 when
    /// reading stdin, so a live capture prints each message as it comes). `--threads 1`
    /// decodes on the reading thread. The output is the same at any count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

impl CaptureArgs {
    /// Worker threads to use (see `--threads`).
    pub fn threads(&self) -> usize {
        match self.threads {
            Some(n) => usize::from(n),
            None if self.file.as_os_str() == "-" => 1,
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
                for pr in problems.iter().take(NOTICE_LINES_PER_KIND as usize) {
                    lines.push(format!("kwire: key log {pr}"));
                }
                if n > NOTICE_LINES_PER_KIND as usize {
                    lines.push(format!(
                        "kwire: key log {}: {} more lines could not be used",
                        p.display(),
                        n - NOTICE_LINES_PER_KIND as usize
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

/// `kwire read` options.
#[derive(Args, Debug, Clone)]
pub struct ReadArgs {
    /// The capture and where Kafka is in it.
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Only these APIs (name or api_key; repeatable).
    #[arg(long = "api", value_name = "NAME|KEY")]
    pub apis: Vec<String>,
    /// Only messages with this correlation_id.
    #[arg(long, allow_negative_numbers = true)]
    pub correlation_id: Option<i32>,
    /// Only messages that mention this topic.
    #[arg(long)]
    pub topic: Option<String>,
    /// Only responses with a non-zero error code anywhere.
    #[arg(long)]
    pub errors: bool,
    /// Only requests.
    #[arg(long, conflicts_with = "responses")]
    pub requests: bool,
    /// Only responses.
    #[arg(long)]
    pub responses: bool,
    /// Output options.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Notice lines printed per kind; the rest of that kind are only counted (in the closing
/// line), so a capture with a million broken connections does not flood the terminal.
const NOTICE_LINES_PER_KIND: u64 = 50;

impl Tally {
    /// Counts notice `n` and says its line, if it has one ([`Tally::notice`]).
    fn tell(&mut self, n: &input::Notice, say: &impl Fn(String)) {
        if let Some(line) = self.notice(n) {
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
    /// [`NOTICE_LINES_PER_KIND`] of each kind, then one line saying the rest are counted.
    fn notice(&mut self, n: &input::Notice) -> Option<String> {
        let kind = format!("{:?}", n.kind);
        let e = self.notices.entry(kind).or_default();
        e.0 += 1;
        e.1 += n.bytes.unwrap_or(0);
        match e.0 {
            k if k <= NOTICE_LINES_PER_KIND => Some(format!("kwire: {n}")),
            k if k == NOTICE_LINES_PER_KIND + 1 => Some(format!(
                "kwire: more {:?} notices are not shown; the closing line counts them",
                n.kind
            )),
            _ => None,
        }
    }
}

/// Files at least this large get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 32 << 20;

pub use crate::session::SchemaPlausibility;

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

/// Whether `m` names topic `t` (`kwire read --topic`): a `Name` or `...Topic...` string
/// equal to `t`, or a `TopicId` the session has named `t` from an earlier response.
pub fn mentions_topic(m: &Message<'_>, t: &str) -> bool {
    let mut hit = false;
    m.tree.walk(&mut |n, _| {
        if let Value::Str(s) = n.value {
            let nm = n.name;
            if s == t && (nm == "Name" || nm.contains("Topic")) {
                hit = true;
            }
        }
        if n.name == "TopicId" && n.annotation.and_then(|a| a.strip_prefix("topic ")) == Some(t) {
            hit = true;
        }
    });
    hit
}

/// Whether any `...ErrorCode` field of `m` is non-zero (`kwire read --errors`, which also
/// asks for a response).
pub fn has_error_code(m: &Message<'_>) -> bool {
    let mut hit = false;
    m.tree.walk(&mut |n, _| {
        if n.name.ends_with("ErrorCode") {
            if let Value::Int(v) = n.value {
                hit |= v != 0;
            }
        }
    });
    hit
}

fn matches_filters(a: &ReadArgs, schema: &Schema, m: &Message<'_>) -> bool {
    if a.requests && m.direction != Direction::Request
        || a.responses && m.direction != Direction::Response
    {
        return false;
    }
    if let Some(c) = a.correlation_id {
        if m.correlation_id != Some(c) {
            return false;
        }
    }
    if !a.apis.is_empty() {
        let ok = a.apis.iter().any(|x| match x.parse::<i16>() {
            Ok(k) => k == m.api_key,
            Err(_) => schema
                .api_name(m.api_key)
                .is_some_and(|n| n.eq_ignore_ascii_case(x)),
        });
        if !ok {
            return false;
        }
    }
    if let Some(t) = &a.topic {
        if !mentions_topic(m, t) {
            return false;
        }
    }
    if a.errors && (m.direction != Direction::Response || !has_error_code(m)) {
        return false;
    }
    true
}

/// The work done for each message, on a worker thread (or on the reading thread with
/// `--threads 1`): write the message's output, if any, to the writer given, and return
/// what the reading thread gathers in capture order.
pub type MessageWork<'w, O> =
    dyn Fn(&Message<'_>, &Context, &mut dyn Write) -> std::io::Result<O> + Sync + 'w;

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

/// Reads a capture, decodes every Kafka message (pairing responses with requests) at
/// `detail` (see [`Detail`]: `Summary` keeps only what the summary line and the filters
/// read), runs `work` on each, writing what it writes to `out` in capture order, and
/// hands its results to `collect` in capture order (`collect` says whether the message
/// was shown). With more than one thread (`a.threads()`), messages are decoded and
/// `work` runs on worker threads (see [`crate::pipeline`]) while this thread reads,
/// reassembles and pairs: the output is the same. Notices go to stderr as they come.
/// Returns the closing lines for stderr (requests left unanswered, then one line
/// counting packets, connections, messages, errors and what was skipped), for the
/// caller to print once its output is flushed, and each TLS connection's summary (for
/// `kwire stats`).
///
/// # Errors
/// A file that cannot be opened or is not a capture; the first error `work` returns or
/// writing to `out` gives.
pub fn run_capture<O: Send>(
    schema: &Schema,
    a: &CaptureArgs,
    dopts: DecodeOptions,
    out: &mut dyn Write,
    work: &MessageWork<'_, O>,
    collect: &mut dyn FnMut(O) -> bool,
) -> Result<(Vec<String>, Vec<input::tls::TlsSummary>), CliError> {
    // A progress bar on stderr for large files, when stderr is a terminal.
    let mut bar = indicatif::ProgressBar::hidden();
    let input: Box<dyn Read + Send> = if a.file.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        if a.file.is_dir() {
            return Err(CliError::Msg(format!(
                "{}: is a folder, not a capture file",
                a.file.display()
            )));
        }
        let f = std::fs::File::open(&a.file)
            .map_err(|e| CliError::Msg(format!("{}: {e}", a.file.display())))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len >= PROGRESS_MIN_BYTES && std::io::stderr().is_terminal() {
            bar = indicatif::ProgressBar::new(len);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            ) {
                bar.set_style(style);
            }
        }
        Box::new(bar.wrap_read(f))
    };
    let say = |line: String| bar.suspend(|| eprintln!("{line}"));
    let (keys, key_lines) = load_keylogs(a)?;
    key_lines.into_iter().for_each(say);
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
    // Counted in capture order as each message's output is written.
    let (mut shown, mut with_errors, mut undecodable) = (0u64, 0u64, 0u64);
    let mut count = |o: O, (errors, undec): (bool, bool)| {
        shown += u64::from(collect(o));
        with_errors += u64::from(errors);
        undecodable += u64::from(undec);
    };
    let threads = a.threads();
    let read = if threads <= 1 {
        // One arena for every message: emptied after each, so its memory is reused.
        let mut arena = Buffers::new();
        input::read_capture(input, &copts, &plaus, |ev| {
            if io_err.is_some() {
                return;
            }
            match ev {
                Event::Notice(n) => tally.tell(&n, &say),
                Event::Frame(f) => {
                    arena.reset();
                    let arena = &arena;
                    tally.frame(&f);
                    let (m, ctx) = session.decode(&f, arena);
                    for n in session.notices.drain(..) {
                        tally.tell(&n, &say);
                    }
                    match work(&m, &ctx, out) {
                        Ok(o) => count(o, problems(&m)),
                        Err(e) => io_err = Some(e),
                    }
                }
            }
        })
    } else {
        let dopts = &dopts;
        // A job is a batch of frames, so that small messages do not each pay for a
        // hand-over between threads.
        let job = move |batch: Vec<(input::Frame, Prepared)>, w: &mut dyn Write| {
            let mut outs = Vec::with_capacity(batch.len());
            // One arena for the batch, emptied after each message.
            let mut arena = Buffers::new();
            for (f, p) in batch {
                arena.reset();
                let arena = &arena;
                let m = p.decode(schema, dopts, &f, arena);
                let o = work(&m, &p.ctx, w)?;
                outs.push((o, problems(&m)));
            }
            Ok(outs)
        };
        let budget = crate::pipeline::Budget::for_threads(threads);
        let piped = crate::pipeline::run(
            threads,
            budget,
            &job,
            out,
            &mut |outs| outs.into_iter().for_each(|(o, p)| count(o, p)),
            |feeder| {
                let mut batch = Vec::new();
                let mut batch_bytes = 0;
                let r = input::read_capture(input, &copts, &plaus, |ev| {
                    if feeder.error().is_some() {
                        return;
                    }
                    match ev {
                        Event::Notice(n) => tally.tell(&n, &say),
                        Event::Frame(f) => {
                            tally.frame(&f);
                            let p = session.prepare(&f);
                            for n in session.notices.drain(..) {
                                tally.tell(&n, &say);
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
    let stats = read.map_err(|e| CliError::Msg(format!("{}: {e}", a.file.display())))?;
    bar.finish_and_clear();
    if let Some(e) = io_err {
        return Err(CliError::Io(e));
    }
    tally.shown = shown;
    tally.with_errors = with_errors;
    tally.undecodable = undecodable;
    let waiting = session.pairer.unanswered();
    let mut lines = Vec::new();
    for p in &waiting {
        lines.push(format!(
            "kwire: connection {}: request correlation_id {} ({} v{}, frame {}) got no response in the capture",
            p.connection,
            p.correlation_id,
            schema.api_name(p.request.api_key).unwrap_or("?"),
            p.request.api_version,
            p.request.frame
        ));
    }
    if stats.connections == 0 && stats.tcp_segments > 0 {
        let ports: Vec<String> = copts.ports.iter().map(u16::to_string).collect();
        lines.push(format!(
            "kwire: {}, but no Kafka connection on port {}: try --port P or --detect",
            counted(stats.tcp_segments, "TCP segment", "TCP segments"),
            ports.join(", ")
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
        "kwire: {}, {}, {} decoded ({} shown), {} with decode errors, {} incomplete, {} undecodable, {}, {}{}; notices: {}",
        counted(stats.packets, "packet", "packets"),
        counted(stats.connections.into(), "connection", "connections"),
        counted(tally.messages, "message", "messages"),
        tally.shown,
        tally.with_errors,
        tally.incomplete,
        tally.undecodable,
        counted(tally.sasl_tokens, "SASL token", "SASL tokens"),
        counted(waiting.len() as u64, "unanswered request", "unanswered requests"),
        answers_without_request(&session),
        if skipped.is_empty() { "none".to_string() } else { skipped.join(", ") }
    ));
    Ok((lines, stats.tls))
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

/// Runs `kwire read`.
///
/// # Errors
/// A file that cannot be opened or is not a capture; output errors.
pub fn read_command(
    schema: &Schema,
    cli: &Cli,
    a: &ReadArgs,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    for x in &a.apis {
        let known = match x.parse::<i16>() {
            Ok(k) => schema.api_name(k).is_some(),
            Err(_) => schema.api_keys().iter().any(|k| {
                schema
                    .api_name(*k)
                    .is_some_and(|n| n.eq_ignore_ascii_case(x))
            }),
        };
        if !known {
            return Err(CliError::Msg(format!(
                "--api {x}: no such API (see `kwire apis`)"
            )));
        }
    }
    let ropts = render_options(cli, &a.out);
    for line in super::output::ignored_options(&a.out) {
        eprintln!("{line}");
    }
    // The summary line needs a fraction of the tree: decode only that much.
    let detail = if a.out.format == super::Format::Summary {
        Detail::Summary
    } else {
        Detail::Full
    };
    let dopts = DecodeOptions {
        detail,
        max_nodes: a.out.max_nodes,
        ..DecodeOptions::default()
    };
    let format = a.out.format;
    let work = |m: &Message<'_>, ctx: &Context, w: &mut dyn Write| {
        if matches_filters(a, schema, m) {
            print_message(m, Some(ctx), &ropts, format, w)?;
            Ok(true)
        } else {
            Ok(false)
        }
    };
    let (closing, _) = run_capture(schema, &a.capture, dopts, out, &work, &mut |shown| shown)?;
    out.flush()?;
    closing.iter().for_each(|l| eprintln!("{l}"));
    Ok(())
}

/// `kwire stats` options.
#[derive(Args, Debug, Clone)]
pub struct StatsArgs {
    /// The capture and where Kafka is in it.
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = super::ListFormat::Text)]
    pub format: super::ListFormat,
}

/// Runs `kwire stats`.
///
/// # Errors
/// A file that cannot be opened or is not a capture; output errors.
pub fn stats_command(schema: &Schema, a: &StatsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let mut st = crate::stats::Stats::default();
    let work =
        |m: &Message<'_>, ctx: &Context, _: &mut dyn Write| Ok(crate::stats::Item::of(m, ctx));
    let (closing, tls) = run_capture(
        schema,
        &a.capture,
        DecodeOptions::default(),
        &mut std::io::sink(),
        &work,
        &mut |item| {
            st.add_item(item);
            true
        },
    )?;
    st.add_tls(tls);
    match a.format {
        super::ListFormat::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&st.to_json()).unwrap_or_default()
        )?,
        super::ListFormat::Text => st.write_text(out)?,
    }
    out.flush()?;
    closing.iter().for_each(|l| eprintln!("{l}"));
    Ok(())
}
