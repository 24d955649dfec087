//! `kwire read`: decode every Kafka message of a pcap/pcapng capture.

use super::output::{print_message, render_options};
use super::{Cli, CliError, OutputArgs};
use crate::decode::{DecodeOptions, Detail};
use crate::input::{self, CaptureOptions, Event, FrameKind};
use crate::schema::Schema;
use crate::session::Session;
use crate::tree::{Buffers, Direction, Message, Value};
use clap::Args;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

/// Which capture to read and how to find Kafka in it.
#[derive(Args, Debug, Clone)]
pub struct CaptureArgs {
    /// The captures (pcap or pcapng), read one after the other, each with its own
    /// sessions; `-` for stdin.
    #[arg(value_name = "CAPTURE", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
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
        let several = self.files.len() > 1;
        self.files
            .iter()
            .map(|p| CaptureFile {
                path: p,
                label: several.then(|| p.display().to_string().into()),
            })
            .collect()
    }
}

/// Reads a capture, decodes every Kafka message (pairing responses with requests) and
/// hands each to `on_message`, decoded at `detail` (see [`Detail`]: `Summary` keeps only
/// what the summary line and the filters read); notices go to stderr as they come. Returns the closing
/// lines for stderr (requests left unanswered, then one line counting packets,
/// connections, messages, errors and what was skipped), for the caller to print once
/// its output is flushed, and each TLS connection's summary (for `kwire stats`).
///
/// # Errors
/// A file that cannot be opened or is not a capture; the first error `on_message` returns.
pub fn run_capture(
    schema: &Schema,
    a: &CaptureArgs,
    file: &CaptureFile<'_>,
    dopts: DecodeOptions,
    mut on_message: impl FnMut(&Message<'_>, &crate::render::Context) -> std::io::Result<bool>,
) -> Result<(Vec<String>, Vec<input::tls::TlsSummary>), CliError> {
    // A progress bar on stderr for large files, when stderr is a terminal.
    let mut bar = indicatif::ProgressBar::hidden();
    let path = file.path;
    let input: Box<dyn Read + Send> = if path.as_os_str() == "-" {
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
        if len >= PROGRESS_MIN_BYTES && std::io::stderr().is_terminal() && file.label.is_none() {
            bar = indicatif::ProgressBar::new(len);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            ) {
                bar.set_style(style);
            }
        }
        Box::new(bar.wrap_read(f))
    };
    // With several captures, each line names its capture: `kwire: a.pcap: ...`.
    let named = |line: String| match &file.label {
        Some(l) => match line.strip_prefix("kwire: ") {
            Some(rest) => format!("kwire: {l}: {rest}"),
            None => format!("{l}: {line}"),
        },
        None => line,
    };
    let say = |line: String| bar.suspend(|| eprintln!("{}", named(line)));
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
    // One arena for every message: emptied after each, so its memory is reused.
    let mut arena = Buffers::new();
    let stats = input::read_capture(input, &copts, &plaus, |ev| {
        if io_err.is_some() {
            return;
        }
        match ev {
            Event::Notice(n) => {
                if let Some(line) = tally.notice(&n) {
                    say(line);
                }
            }
            Event::Frame(f) => {
                arena.reset();
                let arena = &arena;
                if f.kind == FrameKind::SaslToken {
                    tally.sasl_tokens += 1;
                }
                let (m, mut ctx) = session.decode(&f, arena);
                ctx.capture.clone_from(&file.label);
                for n in session.notices.drain(..) {
                    if let Some(line) = tally.notice(&n) {
                        say(line);
                    }
                }
                tally.messages += 1;
                if f.ctx.incomplete {
                    tally.incomplete += 1;
                }
                if m.error_count() > 0 {
                    tally.with_errors += 1;
                }
                if m.tree
                    .children
                    .iter()
                    .any(|n| n.name == "body" && n.error().is_some())
                {
                    tally.undecodable += 1;
                }
                match on_message(&m, &ctx) {
                    Ok(shown) => tally.shown += u64::from(shown),
                    Err(e) => io_err = Some(e),
                }
            }
        }
    })
    .map_err(|e| CliError::Msg(format!("{}: {e}", path.display())))?;
    bar.finish_and_clear();
    if let Some(e) = io_err {
        return Err(CliError::Io(e));
    }
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
    Ok((lines.into_iter().map(named).collect(), stats.tls))
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
    let mut doc = crate::page::frames::Doc::new();
    let mut n = 0;
    let dopts = DecodeOptions {
        detail,
        max_nodes: a.out.max_nodes,
        ..DecodeOptions::default()
    };
    for_each_capture(&a.capture, |file| {
        let (closing, _) = run_capture(schema, &a.capture, file, dopts.clone(), |m, ctx| {
            if matches_filters(a, schema, m) {
                n += 1;
                match a.out.format {
                    super::Format::Md => {
                        crate::page::frames::markdown(out, schema, n, m, Some(ctx), &ropts)?
                    }
                    super::Format::Html => doc.add(schema, m, Some(ctx), 0, &ropts),
                    _ => print_message(m, Some(ctx), &ropts, a.out.format, out)?,
                }
                Ok(true)
            } else {
                Ok(false)
            }
        })?;
        out.flush()?;
        closing.iter().for_each(|l| eprintln!("{l}"));
        Ok(())
    })?;
    if a.out.format == super::Format::Html {
        doc.finish(out, "Kafka messages decoded by kwire")?;
        out.flush()?;
    }
    Ok(())
}

/// Runs `each` on every capture of `a`, in command-line order. With one capture its
/// error is the command's; with several, a capture that cannot be read is named on
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
            Err(e) => {
                eprintln!("kwire: {e}");
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
    if a.capture
        .files
        .iter()
        .all(|f| f.is_dir() || crate::log::FileKind::of(f).is_some())
    {
        return log_stats(schema, a, out);
    }
    let mut st = crate::stats::Stats::default();
    let mut closing = Vec::new();
    let mut ordinal = 0;
    let res = for_each_capture(&a.capture, |file| {
        st.capture = ordinal;
        ordinal += 1;
        let (lines, tls) = run_capture(
            schema,
            &a.capture,
            file,
            DecodeOptions::default(),
            |m, ctx| {
                st.add(m, ctx);
                Ok(true)
            },
        )?;
        closing.extend(lines);
        st.add_tls(tls);
        Ok(())
    });
    // One capture that cannot be read prints nothing; of several, the others are counted.
    if a.capture.files.len() == 1 && res.is_err() {
        return res;
    }
    write_stats(out, a.format, || st.to_json(), |w| st.write_text(w))?;
    out.flush()?;
    closing.iter().for_each(|l| eprintln!("{l}"));
    res
}

/// `kwire stats` on a log directory or log file: every record decoded, then counted.
fn log_stats(schema: &Schema, a: &StatsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let mut st = crate::log::stats::LogStats::default();
    let opts = crate::log::LogOptions {
        verify: true,
        ..Default::default()
    };
    crate::log::read_paths(schema, &a.capture.files, &opts, &mut st)?;
    write_stats(out, a.format, || st.to_json(), |w| st.write_text(w))?;
    Ok(())
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
