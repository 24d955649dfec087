//! The command line, on top of the library: the clap definitions of every command and
//! their options (here and in each `*_cmd.rs`, `read.rs`, `view.rs`), the choice of
//! sinks for what the user asked, [`say`] (the one writer of stderr lines), [`Out`]
//! (stdout that tells a closed pipe from a failed write), the mapping of outcomes and
//! errors ([`CliError`]) to exit statuses, [`main`] (the binary's entry: parse, load the
//! schema stack with [`load_schema`], run the command, print its error) and `run_other`
//! (the commands that print from the schema alone: apis, schema, page(s), diff,
//! wireshark, man, completions, encode).

pub mod decode_cmd;
pub mod diff_cmd;
pub mod encode_cmd;
pub mod explore_cmd;
pub mod export_cmd;
pub mod live;
pub mod log_cmd;
pub mod output;
pub mod page_cmd;
pub mod read;
pub mod report_cmd;
pub mod schema_cmd;
pub mod view;

use crate::schema::{load, Schema};
use clap::{Args, Parser, Subcommand, ValueEnum};
use output::render_options;
use std::io::{self, Write};
use std::path::PathBuf;

/// kwire: a Kafka wire-protocol inspector.
#[derive(Parser, Debug)]
#[command(name = "kwire", version, about, long_about = None, after_help = "\
Examples:
  kwire read captures/demo.pcap                  one line per Kafka message
  kwire read f.pcap -V -Y 'api == Fetch'         the trees of the Fetch messages
  kwire stats f.pcap                             counts, errors, latencies
  kwire decode --hex 000000230014000600000000000000020100000000000000000000000000000000000000000000
  kwire page DeleteTopics                        the reference page of an API

Exit status (every command):
  0  the input was read to its end, whatever the messages held (also when output
     stopped at a closed pipe or -c)
  1  bad arguments: an unknown option, command, name, version, field, value or unit
  2  an input unreadable, not what it should be, or cut short; or an output not written
  3  --strict (read, stats, export, decode, log, record; log --verify too): the input
     was read, but something in it failed to decode")]
pub struct Cli {
    /// Kafka message definitions to decode with first: a folder of JSON definitions, a
    /// kafka-clients-*.jar, or a Kafka installation folder.
    #[arg(long, global = true, env = "KWIRE_SCHEMA", value_name = "PATH")]
    pub schema: Option<PathBuf>,
    /// When to colour the output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `--color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and NO_COLOR is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// `--format` for messages: each message on its own, in one of the renderers' formats
/// ([`crate::render::Format`]), or all of them in one document (Markdown or HTML,
/// [`crate::page::frames`]). The two kinds are apart in the type, so that a renderer is
/// never handed a document format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// One message at a time.
    Message(crate::render::Format),
    /// A document of the messages.
    Document(Document),
}

/// The document formats of [`OutputFormat`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Document {
    /// Each message as a reference page does it, in Markdown.
    Md,
    /// One self-contained HTML file of all the messages.
    Html,
}

impl OutputFormat {
    /// Title, byte grid and object tree.
    pub const TEXT: OutputFormat = OutputFormat::Message(crate::render::Format::Text);
    /// One JSON object per message (NDJSON).
    pub const JSON: OutputFormat = OutputFormat::Message(crate::render::Format::Json);
    /// The fields alone, as `kwire encode` takes them.
    pub const VALUES: OutputFormat = OutputFormat::Message(crate::render::Format::Values);
    /// One line a message.
    pub const SUMMARY: OutputFormat = OutputFormat::Message(crate::render::Format::Summary);
    /// The raw frame as a hex dump.
    pub const HEXDUMP: OutputFormat = OutputFormat::Message(crate::render::Format::Hexdump);
    /// Markdown pages.
    pub const MD: OutputFormat = OutputFormat::Document(Document::Md);
    /// One HTML document.
    pub const HTML: OutputFormat = OutputFormat::Document(Document::Html);
}

impl ValueEnum for OutputFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            OutputFormat::TEXT,
            OutputFormat::JSON,
            OutputFormat::VALUES,
            OutputFormat::SUMMARY,
            OutputFormat::HEXDUMP,
            OutputFormat::MD,
            OutputFormat::HTML,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        use crate::render::Format as F;
        use clap::builder::PossibleValue as V;
        Some(match self {
            OutputFormat::Message(F::Text) => V::new("text").help("Title, byte grid and object tree"),
            OutputFormat::Message(F::Json) => {
                V::new("json").help("One JSON object per message (NDJSON)")
            }
            OutputFormat::Message(F::Values) => {
                V::new("values").help("The fields alone, as `kwire encode` takes them")
            }
            OutputFormat::Message(F::Summary) => V::new("summary").help("One line a message"),
            OutputFormat::Message(F::Hexdump) => V::new("hexdump").help("The raw frame as a hex dump"),
            OutputFormat::Document(Document::Md) => V::new("md").help(
                "Each message as a reference page does it, in Markdown (title, byte grid with the regions present, object tree)",
            ),
            OutputFormat::Document(Document::Html) => V::new("html").help(
                "One self-contained HTML file of all the messages: a contents list, requests beside their responses, hover linking between bytes and tree rows",
            ),
        })
    }
}

/// `--format` of the commands that print one item at a time and no document (`kwire
/// log`, `kwire record`): the values of [`OutputFormat::Message`] only, so `md` and
/// `html` are refused when the arguments are parsed (clap's error, exit status 1).
pub fn message_formats_only(a: clap::Arg) -> clap::Arg {
    use clap::builder::TypedValueParser;
    let names = OutputFormat::value_variants()
        .iter()
        .filter(|f| matches!(f, OutputFormat::Message(_)))
        .filter_map(ValueEnum::to_possible_value);
    a.value_parser(
        clap::builder::PossibleValuesParser::new(names)
            .try_map(|s: String| OutputFormat::from_str(&s, true)),
    )
}

/// `--format` of `kwire explore`, which draws its tree on the terminal in no format: the
/// option it shares with the printing commands ([`OutputArgs`]) is hidden, and any value
/// is refused when the arguments are parsed (clap's error, exit status 1).
pub fn no_format(a: clap::Arg) -> clap::Arg {
    use clap::builder::TypedValueParser;
    a.hide(true).value_parser(
        clap::builder::NonEmptyStringValueParser::new().try_map(|_| {
            Err::<OutputFormat, _>(
                "kwire explore has no --format: it draws the tree on the terminal (kwire read --format prints it)",
            )
        }),
    )
}

/// Options wherever messages are printed.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format (`kwire decode`: text; `kwire read`: see -T).
    #[arg(long, value_enum)]
    pub format: Option<OutputFormat>,
    /// Print the tree only, no byte grid.
    #[arg(long)]
    pub no_bytes: bool,
    /// Print the byte grid only, no tree.
    #[arg(long, conflicts_with = "no_bytes")]
    pub bytes_only: bool,
    /// Fold tree levels deeper than N into one line.
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Show at most N elements of an array or record list.
    #[arg(long, value_name = "N", default_value_t = OutputArgs::DEFAULT_MAX_ELEMENTS)]
    pub max_elements: usize,
    /// Do not cut descriptions and long values.
    #[arg(long)]
    pub wide: bool,
    /// Build at most N tree nodes per message: records past that are still read,
    /// checked and counted, and shown as one folded line (`Record[i..j]`).
    #[arg(long, value_name = "N", default_value_t = crate::decode::DecodeOptions::DEFAULT_MAX_NODES)]
    pub max_nodes: usize,
}

impl OutputArgs {
    /// `--max-elements` when not given.
    pub const DEFAULT_MAX_ELEMENTS: usize = 100;
}

/// `--kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// Requests (client to broker).
    Request,
    /// Responses (broker to client).
    Response,
}

/// Where `kwire decode` reads its bytes.
#[derive(Args, Debug, Clone)]
pub struct DecodeArgs {
    /// Hex text (any common dump style).
    #[arg(long, value_name = "HEX", group = "src")]
    pub hex: Option<String>,
    /// A file of hex text (`-` for stdin): xxd, hexdump -C, od, tshark/Wireshark, hexyl,
    /// kwire's own output (text with its byte grid, or hexdump; coloured or not), plain,
    /// c>s/s>c lines.
    #[arg(long, value_name = "FILE", group = "src")]
    pub hex_file: Option<PathBuf>,
    /// Base64 text.
    #[arg(long, value_name = "B64", group = "src")]
    pub base64: Option<String>,
    /// A file of raw bytes (`-` for stdin).
    #[arg(long, value_name = "FILE", group = "src")]
    pub raw: Option<PathBuf>,
    /// The api_key of the request (for a lone response or a bare body).
    #[arg(long)]
    pub api_key: Option<i16>,
    /// The api_version of the request (for a lone response or a bare body).
    #[arg(long)]
    pub api_version: Option<i16>,
    /// Take frames as requests or responses (default: request, unless --api-key is given
    /// or a line says c>s / s>c).
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
    /// The bytes have no 4-byte size prefix.
    #[arg(long)]
    pub no_size_prefix: bool,
    /// The bytes are a bare body: no size prefix, no header (needs --api-key, --api-version, --kind).
    #[arg(long)]
    pub body_only: bool,
    /// Exit with status 3 when the input was read but some frame failed to decode.
    #[arg(long)]
    pub strict: bool,
    /// Output options.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decode every Kafka message of a pcap/pcapng capture.
    Read(read::ReadArgs),
    /// Read Kafka log directories and files (segments, indexes, snapshots, checkpoints).
    Log(log_cmd::LogArgs),
    /// Decode one record of an internal topic from its key and value bytes.
    Record(log_cmd::RecordArgs),
    /// Decode frames from hex, base64 or raw bytes.
    #[command(after_help = "Examples:
  kwire decode --hex 000000230014000600000000000000020100000000000000000000000000000000000000000000
  kwire decode --hex 000000200000000000000000000201000000000000000000000000000000000000010000 --api-key 20 --api-version 6
  kwire read f.pcap -V -x --color never > d.txt; kwire decode --hex-file d.txt
  xxd frame.bin | kwire decode --hex-file -
  kwire decode --raw frame.bin --format json")]
    Decode(DecodeArgs),
    /// Per-API counts, error names, latencies and bytes; per-connection client ids.
    Stats(read::StatsArgs),
    /// A capture as one self-contained HTML page: overview, plots, sortable tables and
    /// linked message pages (`kwire report CAPTURE -o REPORT.html`).
    Report(report_cmd::ReportArgs),
    /// Explore captures in the terminal: the message list, the selected message's tree
    /// and its bytes, linked; display filter, search, connections and statistics.
    Explore(explore_cmd::ExploreArgs),
    /// Writes the messages of captures as Parquet tables (messages, partitions, records)
    /// for DuckDB, Spark, Trino...
    Export(export_cmd::ExportArgs),
    /// Every API key with its versions.
    #[command(
        after_help = "Examples:\n  kwire apis\n  kwire apis --format json | jq '.[] | select(.deprecated != null)'"
    )]
    Apis {
        /// Output format.
        #[arg(long, value_enum, default_value_t = ListFormat::Text)]
        format: ListFormat,
    },
    /// The grammar of a message, or `schema import` to rebuild the embedded facts.
    #[command(
        after_help = "Examples:\n  kwire schema Fetch --version 12\n  kwire schema DeleteTopicsRequest --json\n  kwire schema import ../shared/kafka-schema --out src/schema/embedded.jsonl"
    )]
    Schema {
        /// API name, message name or api_key (or `import`).
        name: String,
        /// The version (default: the newest).
        #[arg(long)]
        version: Option<i16>,
        /// Print the definition as JSON.
        #[arg(long)]
        json: bool,
        /// With `import`: release folders (named like 4.3) or one folder holding them.
        #[arg(value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// With `import`: where to write the facts (default: stdout).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The reference page of an API: its smallest request and response, their bytes,
    /// object trees and definitions.
    #[command(
        after_help = "Examples:\n  kwire page DeleteTopics\n  kwire page 1 --version 12 --format md\n  kwire page Produce --format html > produce.html"
    )]
    Page {
        /// API name, message name or api_key (case-insensitive).
        name: String,
        /// The version (default: the highest of the newest release that has the API).
        #[arg(long)]
        version: Option<i16>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = PageFormat::Text)]
        format: PageFormat,
        /// Do not cut descriptions and long values.
        #[arg(long)]
        wide: bool,
    },
    /// Writes a reference page for every API, and an index page grouped by listeners.
    #[command(
        after_help = "Examples:\n  kwire pages --out site --format html\n  kwire pages --out docs/reference --format md --all-versions"
    )]
    Pages {
        /// The folder to write into (made when missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Page format.
        #[arg(long, value_enum, default_value_t = PagesFormat::Html)]
        format: PagesFormat,
        /// Also a page for every version (`NAME-vN`), beside the newest (`NAME`).
        #[arg(long)]
        all_versions: bool,
    },
    /// What changes on the wire between versions of an API (`diff Fetch v12 v13`; one
    /// version: against the one before; none: every step), or between releases
    /// (`--release 3.9 4.3`, with or without an API; `user` names the `--schema`
    /// definitions).
    Diff {
        /// API name, message name or api_key (case-insensitive).
        api: Option<String>,
        /// FROM and TO versions (`v4 v6` or `4 6`).
        #[arg(value_name = "VERSION")]
        versions: Vec<String>,
        /// Compare two releases of the stack (`3.9`, `4.3`, or `user`).
        #[arg(long, num_args = 2, value_names = ["FROM", "TO"])]
        release: Option<Vec<String>>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
        format: DiffFormat,
    },
    /// Writes a Wireshark Lua dissector (Wireshark 4.0+) generated from the schema: every
    /// API key and version, fields named `kwire.<Api>.<Field>`.
    Wireshark {
        /// The file to write (default: stdout).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Prints kwire's manual page (roff, for `man -l -`).
    #[command(after_help = "Example:\n  kwire man > kwire.1 && man -l kwire.1")]
    Man,
    /// Prints a shell completion script.
    #[command(
        after_help = "Examples:\n  kwire completions bash > /etc/bash_completion.d/kwire\n  kwire completions zsh > ~/.zfunc/_kwire\n  kwire completions fish > ~/.config/fish/completions/kwire.fish"
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Builds frames from JSON in the shape of `--format values` (one value or NDJSON).
    #[command(
        after_help = "Examples:\n  kwire read f.pcap -T values -c 1 | kwire encode - | xargs kwire decode --hex\n  kwire encode request.json --format raw > frame.bin"
    )]
    Encode {
        /// The JSON file (`-` or none: stdin).
        #[arg(value_name = "FILE")]
        file: Option<PathBuf>,
        /// Output: one hex line a frame, or the raw bytes.
        #[arg(long, value_enum, default_value_t = EncodeFormat::Hex)]
        format: EncodeFormat,
        /// Start each hex line with its direction, `c>s HEX` (request) or `s>c HEX`
        /// (response), as `kwire decode --hex-file` reads it.
        #[arg(long, conflicts_with = "format")]
        lines: bool,
    },
}

/// `--format` of `kwire page`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PageFormat {
    /// Terminal text (coloured by `--color`).
    Text,
    /// Markdown.
    Md,
    /// One self-contained HTML file.
    Html,
}

/// `--format` of `kwire pages`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PagesFormat {
    /// Markdown (`NAME.md`, `index.md`).
    Md,
    /// Self-contained HTML (`NAME.html`, `index.html`).
    Html,
}

/// `--format` of `kwire diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Terminal text (coloured by `--color`).
    Text,
    /// Markdown tables.
    Md,
    /// JSON.
    Json,
}

/// `--format` of `kwire encode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EncodeFormat {
    /// One line of lowercase hex per frame.
    Hex,
    /// The frames' bytes, back to back.
    Raw,
}

/// `--format` for lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// A table.
    Text,
    /// JSON.
    Json,
}

/// Exit status: the input was read to its end (or output stopped because a pipe closed
/// or `-c` was reached).
pub const EXIT_OK: i32 = 0;
/// Exit status: bad arguments or a bad `-Y` expression.
pub const EXIT_USAGE: i32 = 1;
/// Exit status: input that cannot be read or is cut short, or output that cannot be
/// written.
pub const EXIT_INPUT: i32 = 2;
/// Exit status with `--strict`: the input was read, but some message failed to decode.
pub const EXIT_STRICT: i32 = 3;

/// Writes one line to stderr. A closed or full stderr is not an error worth dying for:
/// the line is lost, never a panic (`eprintln!` panics on a failed write).
pub fn say(line: &str) {
    let mut e = io::stderr().lock();
    let _ = e.write_all(line.as_bytes());
    let _ = e.write_all(b"\n");
}

/// `-c N`: a count of messages, 1 or more (as tshark's `-c`, which refuses 0).
///
/// # Errors
/// Not a number, or 0.
pub fn message_count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => {
            Err("-c counts the messages to stop after: 1 or more (0 would read nothing)".into())
        }
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a count of messages: {e}")),
    }
}

/// Descriptor 1 was not open when the process started ([`stdout_closed_at_start`]).
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Tells kwire that descriptor 1 was not open when the process started (`kwire read f
/// >&-`), as the binary found it before Rust's runtime ran (`src/main.rs`). The runtime
/// puts `/dev/null` on a standard descriptor it finds closed, which takes every write: only
/// what was there before it tells a closed stdout from `/dev/null` opened for reading and
/// writing (Python's `subprocess.DEVNULL`). Each write to kwire's stdout ([`Out`]) then
/// fails, and the command exits with [`EXIT_INPUT`] saying so; a command that writes
/// nothing to stdout (`kwire export`) is not concerned.
pub fn stdout_closed_at_start(closed: bool) {
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

/// stdout, buffered, remembering the first write that failed so that the exit status
/// can tell a closed pipe (quiet, 0) from output that could not be written (2).
///
/// A stdout closed when kwire started ([`stdout_closed_at_start`]) fails every write
/// of one byte or more. `/dev/null`, however opened (Python's `subprocess.DEVNULL`
/// opens it for reading and writing), takes every write.
pub struct Out {
    inner: io::BufWriter<io::Stdout>,
    failed: Option<io::Error>,
    /// Descriptor 1 was closed when the process started.
    closed: bool,
}

impl Out {
    fn new() -> Out {
        Out {
            inner: io::BufWriter::with_capacity(64 << 10, io::stdout()),
            failed: None,
            closed: STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
    /// The error of a write to a stdout closed at the start.
    fn closed_error(&mut self) -> io::Error {
        self.fail(io::Error::other(
            "stdout is closed or read-only (descriptor 1 was not open for writing when kwire started)",
        ))
    }
    fn fail(&mut self, e: io::Error) -> io::Error {
        let again = io::Error::new(e.kind(), e.to_string());
        if self.failed.is_none() {
            self.failed = Some(e);
        }
        again
    }
}

impl Write for Out {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if self.closed && !b.is_empty() {
            return Err(self.closed_error());
        }
        self.inner.write(b).map_err(|e| self.fail(e))
    }
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        if self.closed && !b.is_empty() {
            return Err(self.closed_error());
        }
        self.inner.write_all(b).map_err(|e| self.fail(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.fail(e))
    }
}

/// Runs kwire; returns the process exit status ([`EXIT_OK`], [`EXIT_USAGE`],
/// [`EXIT_INPUT`], [`EXIT_STRICT`]).
pub fn main() -> i32 {
    crate::memory::return_large_buffers();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    let mut out = Out::new();
    let res = run(&cli, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    if let Some(e) = out.failed.take() {
        if e.kind() == io::ErrorKind::BrokenPipe {
            return EXIT_OK;
        }
        say(&format!("kwire: cannot write the output: {e}"));
        return EXIT_INPUT;
    }
    match res {
        Ok(code) => code,
        Err(CliError::Usage(m)) => {
            say(&format!("kwire: {m}"));
            EXIT_USAGE
        }
        Err(e) => {
            say(&format!("kwire: {e}"));
            EXIT_INPUT
        }
    }
}

/// An error that ends the command.
#[derive(Debug)]
pub enum CliError {
    /// Reading input failed (write failures are told apart by [`Out`]).
    Io(io::Error),
    /// Input that cannot be used, as text (exit status 2).
    Msg(String),
    /// Bad arguments, as text (exit status 1).
    Usage(String),
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Io(e) => write!(f, "{e}"),
            CliError::Msg(m) | CliError::Usage(m) => f.write_str(m),
        }
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        CliError::Io(e)
    }
}

impl From<String> for CliError {
    fn from(e: String) -> Self {
        CliError::Msg(e)
    }
}

/// A command whose input is its arguments alone (`page`, `diff`): what it refuses is a
/// bad argument (exit 1), not unreadable input; write failures stay what they are.
fn arguments(e: CliError) -> CliError {
    match e {
        CliError::Msg(m) => CliError::Usage(m),
        e => e,
    }
}

/// The embedded schema with the user's `--schema` on top.
pub fn load_schema(path: Option<&std::path::Path>) -> Result<Schema, CliError> {
    let mut s = Schema::embedded();
    if let Some(p) = path {
        let user = load::load_user(p).map_err(|e| CliError::Msg(e.to_string()))?;
        s.overlay(user);
        s.user_paths.push(p.display().to_string());
    }
    Ok(s)
}

fn run(cli: &Cli, out: &mut dyn Write) -> Result<i32, CliError> {
    match &cli.command {
        Command::Read(a) => {
            if let Some(code) = live::before(&a.capture, out)? {
                return Ok(code);
            }
            let schema = load_schema(cli.schema.as_deref())?;
            read::read_command(&schema, cli, a, out)
        }
        Command::Stats(a) => {
            if let Some(code) = live::before(&a.capture, out)? {
                return Ok(code);
            }
            let schema = load_schema(cli.schema.as_deref())?;
            read::stats_command(&schema, a, out)
        }
        Command::Report(a) => {
            if let Some(code) = live::before(&a.capture, out)? {
                return Ok(code);
            }
            let schema = load_schema(cli.schema.as_deref())?;
            report_cmd::report_command(&schema, a, out)
        }
        Command::Export(a) => {
            if let Some(code) = live::before(&a.capture, out)? {
                return Ok(code);
            }
            let schema = load_schema(cli.schema.as_deref())?;
            export_cmd::export_command(&schema, a)
        }
        Command::Decode(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            decode_cmd::decode_command(&schema, cli, a, out)
        }
        Command::Log(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            log_cmd::log_command(&schema, render_options(cli, &a.out), a, out)
        }
        Command::Record(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            log_cmd::record_command(&schema, &render_options(cli, &a.out), a, out)
        }
        Command::Explore(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            explore_cmd::explore_command(schema, cli, a, out)
        }
        Command::Man => {
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(out)?;
            Ok(EXIT_OK)
        }
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            // The generator panics on a failed write: it writes into memory, and the
            // script goes out through `out`, whose failures are told (exit 2).
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut cmd, "kwire", &mut script);
            out.write_all(&script)?;
            Ok(EXIT_OK)
        }
        _ => run_other(cli, out).map(|()| EXIT_OK),
    }
}

fn run_other(cli: &Cli, out: &mut dyn Write) -> Result<(), CliError> {
    match &cli.command {
        Command::Schema {
            name,
            dirs,
            out: dest,
            ..
        } if name == "import" => {
            let mut rel = Vec::new();
            for d in dirs {
                let is_release = d
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()));
                if is_release {
                    rel.push(d.clone());
                } else {
                    let entries = std::fs::read_dir(d)
                        .map_err(|e| CliError::Msg(format!("{}: {e}", d.display())))?;
                    for e in entries {
                        let p = e?.path();
                        if p.is_dir()
                            && p.file_name()
                                .and_then(|n| n.to_str())
                                .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()))
                        {
                            rel.push(p);
                        }
                    }
                }
            }
            if rel.is_empty() {
                return Err(CliError::Usage(
                    "schema import: give release folders (named like 4.3) or a folder holding them"
                        .into(),
                ));
            }
            let text = load::export_embedded(&rel).map_err(|e| CliError::Msg(e.to_string()))?;
            match dest {
                Some(p) => std::fs::write(p, text)?,
                None => out.write_all(text.as_bytes())?,
            }
            Ok(())
        }
        Command::Schema {
            name,
            version,
            json,
            ..
        } => {
            let schema = load_schema(cli.schema.as_deref())?;
            // Its only failures besides writing (told apart by `Out`) are a name or a
            // version the schema does not hold: bad arguments.
            schema_cmd::schema_command(&schema, name, *version, *json, out).map_err(CliError::Usage)
        }
        Command::Apis { format } => {
            let schema = load_schema(cli.schema.as_deref())?;
            let infos = schema_cmd::api_infos(&schema);
            match format {
                ListFormat::Json => writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&schema_cmd::apis_json(&infos))
                        .unwrap_or_default()
                )?,
                ListFormat::Text => schema_cmd::apis_text(&infos, out)?,
            }
            Ok(())
        }
        Command::Read(_)
        | Command::Stats(_)
        | Command::Report(_)
        | Command::Explore(_)
        | Command::Export(_)
        | Command::Decode(_)
        | Command::Log(_)
        | Command::Record(_)
        | Command::Man
        | Command::Completions { .. } => Ok(()),
        Command::Page {
            name,
            version,
            format,
            wide,
        } => {
            let schema = load_schema(cli.schema.as_deref())?;
            let ropts = page_cmd::page_render_options(output::color(cli), *wide);
            page_cmd::page_command(&schema, name, *version, *format, &ropts, out).map_err(arguments)
        }
        Command::Pages {
            out: dir,
            format,
            all_versions,
        } => {
            let schema = load_schema(cli.schema.as_deref())?;
            let ropts = page_cmd::page_render_options(false, false);
            let n = page_cmd::pages_command(&schema, dir, *format, *all_versions, &ropts)?;
            say(&format!(
                "kwire: {n} pages and an index in {}",
                dir.display()
            ));
            Ok(())
        }
        Command::Diff {
            api,
            versions,
            release,
            format,
        } => {
            let schema = load_schema(cli.schema.as_deref())?;
            let releases = release.as_ref().map(|r| (r[0].as_str(), r[1].as_str()));
            let req = diff_cmd::DiffRequest {
                api: api.as_deref(),
                versions,
                releases,
                format: *format,
                color: output::color(cli),
            };
            diff_cmd::diff_command(&schema, &req, out).map_err(arguments)
        }
        Command::Wireshark { out: dest } => {
            let schema = load_schema(cli.schema.as_deref())?;
            let origin = match &cli.schema {
                Some(p) => format!(
                    "the definitions in {} over kwire {}'s embedded ones",
                    p.display(),
                    env!("CARGO_PKG_VERSION")
                ),
                None => format!(
                    "kwire {}'s embedded definitions (Kafka {})",
                    env!("CARGO_PKG_VERSION"),
                    crate::diff::releases(&schema).join(", ")
                ),
            };
            let lua = crate::wireshark::generate(&schema, &origin);
            match dest {
                Some(p) => std::fs::write(p, lua)
                    .map_err(|e| CliError::Msg(format!("{}: {e}", p.display())))?,
                None => out.write_all(lua.as_bytes())?,
            }
            Ok(())
        }
        Command::Encode {
            file,
            format,
            lines,
        } => {
            let schema = load_schema(cli.schema.as_deref())?;
            encode_cmd::encode_command(&schema, file.as_deref(), *format, *lines, out)
        }
    }
}
