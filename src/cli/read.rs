//! `kwire read` and `kwire stats`: decode every Kafka message of a pcap/pcapng capture.
//!
//! The options come in groups so that each concern stays in one place: [`CaptureArgs`]
//! (which capture, where Kafka is, notices, `--strict`), [`FilterArgs`] (`-Y` and its
//! shorthands, for `read` and `stats`), [`super::view::ViewArgs`] (tshark's output flags).

use super::output::render_options;
use super::view::{self, View, ViewArgs};
use super::{say, Cli, CliError, OutputArgs, OutputFormat, EXIT_INPUT, EXIT_OK, EXIT_STRICT};
use crate::decode::{DecodeOptions, Detail};
use crate::filter::Select;
use crate::filter::{self, Filter};
use crate::page::frames::{PageFormat, Pages as PagesPrinter};
use crate::render::printer::{Printer, Shape};
pub use crate::run::{CaptureFile, MessageWork, Outcome, RunOptions};
use crate::run::{RunError, Sink, Work};
use crate::schema::Schema;
use crate::tree::Message;
use clap::Args;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

/// Which capture to read, how to find Kafka in it, and what to say about it.
#[derive(Args, Debug, Clone)]
pub struct CaptureArgs {
    /// The captures (pcap or pcapng), read one after the other, each with its own
    /// sessions; `-` for stdin.
    #[arg(
        value_name = "CAPTURE",
        num_args = 0..,
        required_unless_present_any = ["read_file", "interfaces", "list_interfaces"]
    )]
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
    /// Bytes all connections together may hold in flight (out-of-order segments,
    /// partial frames, TLS records, frames waiting for their turn); past it, the oldest
    /// partial frames are shown incomplete and the rest of each skipped, and a notice
    /// counts them (see docs/robustness.md, "Lost segments and the in-flight budget").
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    pub max_in_flight: usize,
    /// Seconds of capture time after which a silent connection gives up what it holds
    /// (a missing segment is lost, a partial frame shown incomplete); 0: never. A FIN
    /// from both sides or an RST frees a connection at once.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub idle_timeout: u64,
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
    /// Threads in all. `read`, `stats` and `report`: 1 reads, decodes and prints on one
    /// thread; 2 or more is the reading thread (reading, reassembly, pairing, printing)
    /// and N-1 decoding workers. The default, measured on 2 cores (docs/benchmarks.md):
    /// one worker per core beside the reading thread (3 on 2 cores), a worker fewer for
    /// JSON and values output (which the reading thread moves), and 1 when reading stdin
    /// or a live capture, so each message prints as it comes; with `-c`, 1 (the
    /// reading stops at the N-th message, so no worker reads ahead). `export`
    /// exports that many captures at once (default: the cores). The output is the same
    /// at any count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Live capture: `-i`, `-f`, `-a`, `-w`, `-D`.
    #[command(flatten)]
    pub live: super::live::LiveArgs,
}

impl CaptureArgs {
    /// Threads in all for a command whose output the reading thread prints (`read`'s
    /// JSON and values: `heavy_output`), by the rule of `--threads`.
    pub fn threads_for(&self, heavy_output: bool) -> usize {
        match self.threads {
            None if !self.reads_stdin() => {
                let cores = crate::pipeline::default_threads();
                if heavy_output {
                    cores
                } else {
                    cores + 1
                }
            }
            _ => self.threads(),
        }
    }

    fn reads_stdin(&self) -> bool {
        self.read_file
            .iter()
            .chain(&self.files)
            .any(|f| f.as_os_str() == "-")
            || self.live.is_live()
    }

    /// Threads to use (see `--threads`): `--threads`, else 1 on stdin or a live capture,
    /// else the cores (what `export` runs at once; `read`, `stats` and `report` take
    /// [`CaptureArgs::threads_for`]).
    pub fn threads(&self) -> usize {
        match self.threads {
            Some(n) => usize::from(n),
            None if self.reads_stdin() => 1,
            None => crate::pipeline::default_threads(),
        }
    }
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
        // The schema's names, gathered once and only for a filter (thousands of
        // definitions walked).
        let names = std::cell::OnceCell::new();
        let names = || names.get_or_init(|| filter::Known::of(schema));
        if let Some(e) = &self.display_filter {
            Filter::parse_known(e, names())
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
        // With the schema, so that the filter knows which of its fields a lighter tree
        // can keep (Filter::kept_fields).
        Filter::parse_known(&parts.join(" && "), names())
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
  kwire read f.pcap -t ad -Y 'latency > 100ms'

Live capture (dumpcap, else tcpdump; see docs/live-capture.md):
  kwire read -i eth0                       Kafka on port 9092, as it happens
  kwire read -i any -f 'tcp port 9093' --port 9093 -a duration:60 -w kafka.pcapng
  kwire read -i lo --port 19092 -c 100 -V  stop after 100 messages
  kwire read -D                            the interfaces";

/// Files at least this large get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 32 << 20;

impl CaptureArgs {
    /// The engine's settings from these options; the key logs are the `--tls-keylog`
    /// files, else the file `SSLKEYLOGFILE` names (when set and not empty).
    pub fn settings(&self) -> crate::run::Settings {
        let mut keylogs: Vec<(PathBuf, bool)> =
            self.tls_keylog.iter().map(|p| (p.clone(), true)).collect();
        if keylogs.is_empty() {
            if let Some(p) = std::env::var_os("SSLKEYLOGFILE").filter(|p| !p.is_empty()) {
                keylogs.push((PathBuf::from(p), false));
            }
        }
        crate::run::Settings {
            ports: self.ports.clone(),
            detect: self.detect,
            max_frame: self.max_frame,
            max_in_flight: self.max_in_flight,
            idle_timeout: self.idle_timeout,
            all_notices: self.all_notices,
            keylogs,
            live: self.live.is_live().then(|| super::live::options(self)),
        }
    }
}

impl From<RunError> for CliError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Io(e) => CliError::Io(e),
            RunError::Input(m) => CliError::Msg(m),
            RunError::Usage(m) => CliError::Usage(m),
        }
    }
}

/// The exit status of one capture's [`Outcome`]: 2 for a capture cut short or corrupt,
/// 3 with `strict` when some message failed to decode, else 0.
pub fn exit_status(o: &Outcome, strict: bool) -> i32 {
    if o.truncated || o.corrupt {
        EXIT_INPUT
    } else if strict && o.with_errors > 0 {
        EXIT_STRICT
    } else {
        EXIT_OK
    }
}

/// The terminal's [`Sink`]: each result to `collect`, notices to stderr as they come, and
/// a progress bar on stderr while a large file is read (when stderr is a terminal).
struct Terminal<F> {
    collect: F,
    bar: indicatif::ProgressBar,
}

impl<O, F: FnMut(O) -> bool> Sink<O> for Terminal<F> {
    fn message(&mut self, o: O) -> bool {
        (self.collect)(o)
    }
    fn notice(&mut self, line: String) {
        self.bar.suspend(|| say(&line))
    }
    fn input(&mut self, len: u64, r: Box<dyn Read + Send>) -> Box<dyn Read + Send> {
        if len < PROGRESS_MIN_BYTES || !std::io::stderr().is_terminal() {
            return r;
        }
        self.bar = indicatif::ProgressBar::new(len);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ) {
            self.bar.set_style(style);
        }
        Box::new(self.bar.wrap_read(r))
    }
    fn done(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// [`crate::run::run_capture`] from the command line's options, with the terminal's sink
/// (notices on stderr, results to `collect`).
///
/// # Errors
/// As [`crate::run::run_capture`].
#[allow(clippy::too_many_arguments)]
pub fn run_capture<W: Work + ?Sized>(
    schema: &Schema,
    a: &CaptureArgs,
    file: &CaptureFile<'_>,
    dopts: DecodeOptions,
    run: &mut RunOptions,
    out: &mut dyn Write,
    work: &W,
    collect: &mut dyn FnMut(W::Output) -> bool,
) -> Result<Outcome, CliError> {
    let mut sink = Terminal {
        collect,
        bar: indicatif::ProgressBar::hidden(),
    };
    Ok(crate::run::run_capture(
        schema,
        &a.settings(),
        file,
        dopts,
        run,
        out,
        work,
        &mut sink,
    )?)
}

/// The requests of the capture that get no response, read in a first pass, when the
/// filter asks for them ([`crate::run::unanswered_first_pass`]).
///
/// # Errors
/// As [`crate::run::unanswered_first_pass`].
pub(super) fn unanswered_first_pass(
    schema: &Schema,
    a: &CaptureArgs,
    file: &CaptureFile<'_>,
    f: Option<&Filter>,
) -> Result<Option<crate::input::RecordSet>, CliError> {
    Ok(crate::run::unanswered_first_pass(
        schema,
        &a.settings(),
        file,
        f.is_some_and(Filter::uses_unanswered),
        a.threads_for(false),
    )?)
}

pub use crate::session::SchemaPlausibility;

/// Whether `m` names topic `t` (`kwire read --topic`, `-Y 'topic == "t"'`): a `Name` or
/// `...Topic...` string equal to `t`, or a `TopicId` the session has named `t`.
pub fn mentions_topic(m: &Message<'_>, t: &str) -> bool {
    filter::occurrences("topic", m, &filter::MessageFacts::default())
        .iter()
        .any(|o| o.text() == t)
}

/// Whether any `...ErrorCode` field of `m` is non-zero (`-Y 'error_code ~= 0'`; `kwire
/// read --errors` also asks for a response).
pub fn has_error_code(m: &Message<'_>) -> bool {
    filter::occurrences("error_code", m, &filter::MessageFacts::default())
        .iter()
        .any(|o| o.text() != "0")
}

impl CaptureArgs {
    /// The captures to read, in command-line order, labelled when there are several. A
    /// live capture (`-i`) is one, named `-` (it is read as stdin is).
    pub fn captures(&self) -> Vec<CaptureFile<'_>> {
        if self.live.is_live() {
            return vec![CaptureFile {
                path: Path::new("-"),
                label: None,
            }];
        }
        let paths: Vec<&PathBuf> = self.read_file.iter().chain(&self.files).collect();
        let several = paths.len() > 1;
        let labels = crate::run::capture_labels(&paths);
        paths
            .into_iter()
            .zip(labels)
            .map(|(p, l)| CaptureFile {
                path: p,
                label: several.then_some(l),
            })
            .collect()
    }
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
        View::Fields => Some(
            view::fields(&a.view)?
                .checked(schema)
                .map_err(CliError::Usage)?,
        ),
        _ => None,
    };
    // The summary line needs a fraction of the tree: decode only that much, unless the
    // filter or -e reads schema fields.
    let detail = if v.view == View::Format(OutputFormat::SUMMARY)
        && flt.as_ref().is_none_or(Filter::decides_on_facts)
    {
        // Nothing but the summary line (and a filter on facts) reads the message: its
        // facts are enough.
        Detail::Facts
    } else if v.view == View::Fields
        && fields.as_ref().is_some_and(view::Fields::on_facts)
        && flt.as_ref().is_none_or(Filter::decides_on_facts)
    {
        // Columns of the message's and the capture's own facts.
        Detail::Facts
    } else if v.summary_detail()
        && !flt.as_ref().is_some_and(Filter::needs_full_tree)
        && !fields.as_ref().is_some_and(view::Fields::needs_full_tree)
    {
        Detail::Summary
    } else {
        Detail::Full
    };
    // A printer of whole trees behind a filter that decides on less: each message is
    // decoded at the filter's level first, and whole only when the filter keeps it.
    let (detail, whole) = match &flt {
        Some(f) if detail == Detail::Full && !f.needs_full_tree() => (
            f.least_detail(),
            Some(DecodeOptions {
                max_nodes: a.out.max_nodes,
                ..DecodeOptions::default()
            }),
        ),
        _ => (detail, None),
    };
    let flush_each =
        a.view.line_flush || a.capture.live.is_live() || std::io::stdout().is_terminal();
    if let Some(f) = &fields {
        if !a.view.quiet {
            f.header(out)?;
        }
    }
    let quiet = a.view.quiet;
    let dopts = DecodeOptions {
        detail,
        max_nodes: a.out.max_nodes,
        // A filter or a column on schema fields reads them from the summary tree (at the
        // whole tree, every field is there anyway).
        keep: flt
            .as_ref()
            .map(Filter::kept_fields)
            .unwrap_or_default()
            .union(
                &fields
                    .as_ref()
                    .map(view::Fields::kept_fields)
                    .unwrap_or_default(),
            ),
        ..DecodeOptions::default()
    };
    let limit = a.view.count;
    let pages = match v.view {
        View::Format(OutputFormat::Document(super::Document::Md)) => Some(PageFormat::Md),
        View::Format(OutputFormat::Document(super::Document::Html)) => Some(PageFormat::Html),
        _ => None,
    };
    // What depends on the messages shown before (numbered pages, -t dd, -c) or must come
    // out as it is read (a terminal, -l) runs on the reading thread.
    let ordered = pages.is_some()
        || flush_each
        || limit.is_some()
        || ropts.time == crate::render::time::TimeFormat::DeltaShown;
    let mut run = RunOptions {
        quiet,
        threads: if ordered {
            1
        } else {
            a.capture.threads_for(matches!(
                v.view,
                View::Format(OutputFormat::JSON | OutputFormat::VALUES)
            ))
        },
        whole,
        ..RunOptions::default()
    };
    // The printer: the pages (one document over the captures), or one of the others.
    let mut printer = match (pages, v.view, fields) {
        (Some(format), _, _) => Picked::Pages(PagesPrinter::new(
            schema,
            format,
            ropts,
            "Kafka messages decoded by kwire",
        )),
        (None, _, Some(f)) => Picked::Printer(Printer::new(Shape::Fields(f), ropts, ordered)),
        (None, View::LineGrid, None) => {
            Picked::Printer(Printer::new(Shape::LineGrid, ropts, ordered))
        }
        (None, View::Format(OutputFormat::Message(f)), None) => {
            Picked::Printer(Printer::new(Shape::Format(f), ropts, ordered))
        }
        // A document format is `pages`; -T fields has `fields`.
        (None, View::Format(OutputFormat::Document(_)) | View::Fields, None) => {
            return Err(CliError::Usage("no printer for this view".into()))
        }
    };
    printer.set_output(quiet, flush_each);
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
        let mut collect = |pass: Option<()>| {
            shown += u64::from(pass.is_some());
            pass.is_some()
        };
        printer.set_unanswered(&unanswered);
        let work = Select {
            filter: flt.as_ref(),
            unanswered: unanswered.as_ref(),
            inner: &printer,
        };
        let (s, d) = (&a.capture, dopts.clone());
        let outcome = run_capture(schema, s, file, d, &mut run, out, &work, &mut collect)?;
        out.flush()?;
        outcome.closing.iter().for_each(|l| say(l));
        status = worse(status, exit_status(&outcome, a.capture.strict));
        Ok(())
    })?;
    if let Picked::Pages(p) = &printer {
        p.finish(out)?;
    }
    Ok(status)
}

/// The printer `kwire read` picked: the work each message kept by the filter is given.
enum Picked<'s> {
    /// `--format md|html`.
    Pages(PagesPrinter<'s>),
    /// The others.
    Printer(Printer),
}

impl Picked<'_> {
    /// Prints nothing (`-q`) and flushes after each message (`-l`, a terminal), as told.
    fn set_output(&mut self, quiet: bool, flush_each: bool) {
        match self {
            Picked::Pages(p) => (p.quiet, p.flush_each) = (quiet, flush_each),
            Picked::Printer(p) => (p.quiet, p.flush_each) = (quiet, flush_each),
        }
    }

    /// The capture's unanswered requests, from the first pass (the text printer marks
    /// them; the pages do not).
    fn set_unanswered(&mut self, unanswered: &Option<crate::input::RecordSet>) {
        if let Picked::Printer(p) = self {
            p.unanswered.clone_from(unanswered);
        }
    }
}

impl Work for Picked<'_> {
    type Output = ();
    fn message(
        &self,
        m: &Message<'_>,
        ctx: &crate::session::Context,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        match self {
            Picked::Pages(p) => p.message(m, ctx, out),
            Picked::Printer(p) => p.message(m, ctx, out),
        }
    }
}

/// Two exit statuses combined, as [`exit_status`] ranks them: a capture cut short
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
                say(&f.name_line(format!("kwire: {e}")));
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
They are exact up to 4,000,000 paired responses over all APIs; past that the API with the
most moves into a histogram (within 1%, min and max exact), marked ~ (\"approximate\": true
in JSON). Bounded: 4,096 (api_key, api_version) pairs and 100,000 connections are itemised,
the messages past them counted and said.

Examples:
  kwire stats captures/demo.pcap
  kwire stats f.pcap -Y 'client_id == \"my-app\"' --format json
  kwire stats /var/lib/kafka/data -Y 'record_type == OffsetCommitValue'   (a log directory: -Y as in kwire log)
  kwire stats -i eth0 -a duration:30       30 seconds of live traffic on port 9092 (dumpcap)
  kwire stats -i eth0 -c 10000             the next 10000 messages, live")]
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
    /// Stop after N messages counted (those -Y keeps), across the captures, as `read -c`;
    /// a live capture (-i) stops there.
    #[arg(short = 'c', value_name = "N", value_parser = super::message_count)]
    pub count: Option<u64>,
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
        if a.count.is_some() {
            return Err(CliError::Usage(
                "-c N stops after N messages of a capture; a log directory is counted whole (choose with -Y)".into(),
            ));
        }
        let flt = a.filter.filter(schema)?;
        return log_stats(schema, &paths, flt.as_ref(), a.format, out)
            .map(|t| super::log_cmd::log_status(&t, a.capture.strict));
    }
    let flt = a.filter.filter(schema)?;
    // The counts read a few facts of each message (traffic::Item::of): with no filter the
    // fact walk gives them; a filter that decides on the summary tree's facts gets that.
    let dopts = DecodeOptions {
        detail: flt.as_ref().map_or(Detail::Facts, Filter::least_detail),
        keep: flt.as_ref().map(Filter::kept_fields).unwrap_or_default(),
        ..DecodeOptions::default()
    };
    let mut st = crate::traffic::Stats::default();
    let mut closing = Vec::new();
    let mut ordinal = 0;
    let mut status = EXIT_OK;
    // -c counts across the captures: once reached, the rest are not read.
    let mut counted = 0u64;
    let res = for_each_capture(&a.capture, |file| {
        let left = a.count.map(|l| l.saturating_sub(counted));
        if left == Some(0) {
            return Ok(());
        }
        // The closing lines of the capture before close it before this one's notices, so
        // the standard error keeps capture order; the last capture's follow the table.
        closing.drain(..).for_each(|l: String| say(&l));
        st.capture = ordinal;
        ordinal += 1;
        let unanswered = unanswered_first_pass(schema, &a.capture, file, flt.as_ref())?;
        let work = Select {
            filter: flt.as_ref(),
            unanswered: unanswered.as_ref(),
            inner: &crate::traffic::Count,
        };
        let mut run = RunOptions {
            // As `read -c`: stopped at the N-th message, on the reading thread, so the
            // closing line counts what was read up to it, not what workers read ahead.
            threads: if left.is_some() {
                1
            } else {
                a.capture.threads_for(false)
            },
            limit: left,
            ..RunOptions::default()
        };
        // With worker threads, results decoded before the engine saw the limit still
        // arrive: past it they are not counted.
        let mut taken = 0u64;
        let outcome = run_capture(
            schema,
            &a.capture,
            file,
            dopts.clone(),
            &mut run,
            &mut std::io::sink(),
            &work,
            &mut |item| match item {
                Some(item) if left.is_none_or(|l| taken < l) => {
                    taken += 1;
                    st.add_item(item);
                    true
                }
                _ => false,
            },
        )?;
        counted += taken;
        status = worse(status, exit_status(&outcome, a.capture.strict));
        closing.extend(outcome.closing);
        st.add_tls(outcome.tls, outcome.tls_past_cap, file.label.clone());
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
    let mut st = crate::log::census::LogStats::default();
    let opts = crate::log::LogOptions {
        verify: true,
        ..Default::default()
    };
    let paths: Vec<PathBuf> = paths.iter().map(|p| p.to_path_buf()).collect();
    let mut said = crate::log::Notify {
        inner: &mut st,
        tell: |l: String| say(&l),
    };
    let t = match flt {
        None => crate::log::read_paths(schema, &paths, &opts, &mut said)?,
        Some(filter) => {
            let mut fs = crate::filter::log::Filtered {
                inner: &mut said,
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
