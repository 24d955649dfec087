//! The command line: clap definitions and wiring only.

pub mod diff_cmd;
pub mod encode_cmd;
pub mod export_cmd;
pub mod log_cmd;
pub mod output;
pub mod page_cmd;
pub mod read;
pub mod schema_cmd;
pub mod view;

use output::{print_message, render_options};

use crate::decode::guess::{clean_request, GuessContext, Guesser};
use crate::decode::{self, DecodeOptions, Known, Layout};
use crate::input::hex;
use crate::schema::{load, Schema};
use crate::tree::{Buffers, Direction};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::collections::HashMap;
use std::io::{self, Read, Write};
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

Exit status: 0 input read to its end; 1 bad arguments or -Y; 2 input unreadable or cut
short, or output not written; 3 with --strict, a message failed to decode.")]
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

/// `--format` for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Title, byte grid and object tree.
    Text,
    /// One JSON object per message (NDJSON).
    Json,
    /// The fields alone, as `kwire encode` takes them.
    Values,
    /// One line a message.
    Summary,
    /// The raw frame as a hex dump.
    Hexdump,
    /// Each message as a reference page does it, in Markdown (title, byte grid with the
    /// regions present, object tree).
    Md,
    /// One self-contained HTML file of all the messages: a contents list, requests beside
    /// their responses, hover linking between bytes and tree rows.
    Html,
}

/// Options wherever messages are printed.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format (`kwire decode`: text; `kwire read`: see -T).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
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
    #[arg(long, value_name = "N", default_value_t = DecodeOptions::DEFAULT_MAX_NODES)]
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
    /// API key and version, fields named kwire.<Api>.<Field>.
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

/// Whether stdout was closed when kwire started (`kwire ... >&-`). Rust's runtime puts
/// `/dev/null` (opened read-write) on a closed standard descriptor before `main`, so a
/// closed stdout shows as descriptor 1 being `/dev/null` open for reading and writing,
/// which no shell redirection of stdout gives (`>/dev/null` opens it write-only).
fn stdout_closed() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: F_GETFL only reads the descriptor's flags; any number is safe to ask about.
        let flags = unsafe { libc::fcntl(1, libc::F_GETFL) };
        if flags == -1 {
            return true;
        }
        if flags & libc::O_ACCMODE != libc::O_RDWR {
            return false;
        }
        let (Ok(out), Ok(null)) = (
            std::fs::metadata("/proc/self/fd/1").or_else(|_| std::fs::metadata("/dev/fd/1")),
            std::fs::metadata("/dev/null"),
        ) else {
            return false;
        };
        out.rdev() == null.rdev() && out.dev() == null.dev() && out.ino() == null.ino()
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// stdout, buffered, remembering the first write that failed so that the exit status
/// can tell a closed pipe (quiet, 0) from output that could not be written (2).
pub struct Out {
    inner: io::BufWriter<io::Stdout>,
    closed: bool,
    failed: Option<io::Error>,
}

impl Out {
    fn new(closed: bool) -> Out {
        Out {
            inner: io::BufWriter::with_capacity(64 << 10, io::stdout()),
            closed,
            failed: None,
        }
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
        if self.closed {
            return Err(self.fail(io::Error::other("stdout is closed")));
        }
        self.inner.write(b).map_err(|e| self.fail(e))
    }
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        if self.closed {
            return Err(self.fail(io::Error::other("stdout is closed")));
        }
        self.inner.write_all(b).map_err(|e| self.fail(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        self.inner.flush().map_err(|e| self.fail(e))
    }
}

/// Runs kwire; returns the process exit status ([`EXIT_OK`], [`EXIT_USAGE`],
/// [`EXIT_INPUT`], [`EXIT_STRICT`]).
pub fn main() -> i32 {
    let closed = stdout_closed();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    let mut out = Out::new(closed);
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
            let schema = load_schema(cli.schema.as_deref())?;
            read::read_command(&schema, cli, a, out)
        }
        Command::Stats(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            read::stats_command(&schema, a, out)
        }
        Command::Export(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            export_cmd::export_command(&schema, a)
        }
        Command::Man => {
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(out)?;
            Ok(EXIT_OK)
        }
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "kwire", out);
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
            schema_cmd::schema_command(&schema, name, *version, *json, out).map_err(CliError::Msg)
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
        Command::Log(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            log_cmd::log_command(&schema, render_options(cli, &a.out), a, out)
        }
        Command::Record(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            log_cmd::record_command(&schema, &render_options(cli, &a.out), a, out)
        }
        Command::Read(_)
        | Command::Stats(_)
        | Command::Export(_)
        | Command::Man
        | Command::Completions { .. } => Ok(()),
        Command::Decode(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            decode_command(&schema, cli, a, out)
        }
        Command::Page {
            name,
            version,
            format,
            wide,
        } => {
            let schema = load_schema(cli.schema.as_deref())?;
            let ropts = page_cmd::page_render_options(output::color(cli), *wide);
            page_cmd::page_command(&schema, name, *version, *format, &ropts, out)
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
            diff_cmd::diff_command(&schema, &req, out)
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

/// Requests waiting for their responses in `kwire decode`: (stream, correlation_id) to
/// the (api_key, api_version, protocol type) of each, oldest first.
type Pending = HashMap<(u64, i32), Vec<(i16, i16, Option<String>)>>;

/// One frame to decode, with what its source line said.
struct Frame {
    bytes: Vec<u8>,
    direction: Option<hex::Direction>,
    stream: u64,
}

/// The chunks of the input, and the hex-dump style they were written in (for text).
type Input = (Vec<hex::HexChunk>, Option<hex::HexFormat>);

/// Whether `b` starts like a pcap or pcapng file.
fn looks_like_capture(b: &[u8]) -> bool {
    const MAGICS: [[u8; 4]; 5] = [
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ];
    b.len() >= 4 && MAGICS.iter().any(|m| b[..4] == *m)
}

/// The hint for a capture given to `decode`.
fn capture_hint(name: &str) -> CliError {
    CliError::Msg(format!(
        "{name} is a pcap/pcapng capture, not frames: read it with `kwire read {name}`"
    ))
}

/// All of stdin; on a terminal, first a line saying that it is read (so `kwire decode`
/// alone does not wait without a word).
fn read_stdin() -> Result<Vec<u8>, CliError> {
    use std::io::IsTerminal;
    if io::stdin().is_terminal() {
        say("kwire decode: reading frames as hex from stdin (end with Ctrl-D); or give --hex, --hex-file, --base64 or --raw");
    }
    let mut v = Vec::new();
    io::stdin()
        .lock()
        .read_to_end(&mut v)
        .map_err(|e| CliError::Msg(format!("stdin: {e}")))?;
    Ok(v)
}

/// Text from a hex source: not UTF-8 is said with a hint (a capture, or raw bytes).
fn hex_text(bytes: Vec<u8>, name: &str) -> Result<String, CliError> {
    if looks_like_capture(&bytes) {
        return Err(capture_hint(name));
    }
    String::from_utf8(bytes).map_err(|_| {
        CliError::Msg(format!(
            "{name} is not text (not UTF-8): for raw frame bytes use `kwire decode --raw {name}`"
        ))
    })
}

fn read_decode_input(a: &DecodeArgs) -> Result<Input, CliError> {
    let text_chunks = |t: &str| {
        let chunks = hex::parse_hex(t).map_err(|e| CliError::Msg(format!("hex input: {e}")))?;
        Ok((chunks, Some(hex::detect_format(t))))
    };
    let raw = |b: Vec<u8>| {
        vec![hex::HexChunk {
            direction: None,
            stream: None,
            bytes: b,
            line: 1,
        }]
    };
    if let Some(h) = &a.hex {
        return text_chunks(h);
    }
    if let Some(f) = &a.hex_file {
        let name = f.display().to_string();
        let bytes = if f.as_os_str() == "-" {
            read_stdin()?
        } else {
            std::fs::read(f).map_err(|e| CliError::Msg(format!("{name}: {e}")))?
        };
        return text_chunks(&hex_text(bytes, &name)?);
    }
    if let Some(b) = &a.base64 {
        let bytes =
            hex::parse_base64(b).map_err(|e| CliError::Msg(format!("base64 input: {e}")))?;
        return Ok((raw(bytes), None));
    }
    if let Some(f) = &a.raw {
        let v = if f.as_os_str() == "-" {
            read_stdin()?
        } else {
            std::fs::read(f).map_err(|e| CliError::Msg(format!("{}: {e}", f.display())))?
        };
        if looks_like_capture(&v) {
            return Err(capture_hint(&f.display().to_string()));
        }
        return Ok((raw(v), None));
    }
    let t = hex_text(read_stdin()?, "stdin")?;
    text_chunks(&t)
}

/// Wireshark and `tshark -x` dumps hold whole packets: where a chunk parses as
/// Ethernet/IP/TCP (etherparse), its TCP payload is what kwire decodes, and packets with
/// no payload are left out with a note.
fn tcp_payloads(chunks: Vec<hex::HexChunk>, notes: &mut Vec<String>) -> Vec<hex::HexChunk> {
    let mut out = Vec::new();
    for mut c in chunks {
        let payload = match etherparse::SlicedPacket::from_ethernet(&c.bytes) {
            Ok(etherparse::SlicedPacket {
                transport: Some(etherparse::TransportSlice::Tcp(t)),
                ..
            }) => Some(t.payload().to_vec()),
            _ => None,
        };
        match payload {
            None => out.push(c),
            Some(p) if p.is_empty() => notes.push(format!(
                "line {}: a TCP packet with no payload, left out",
                c.line
            )),
            Some(p) => {
                notes.push(format!(
                    "line {}: a whole packet ({} bytes): decoding its TCP payload ({} bytes)",
                    c.line,
                    c.bytes.len(),
                    p.len()
                ));
                c.bytes = p;
                out.push(c);
            }
        }
    }
    out
}

/// Splits a chunk into frames by their size prefixes; what does not split is reported.
fn split_frames(c: &hex::HexChunk, size_prefix: bool, notes: &mut Vec<String>) -> Vec<Frame> {
    let stream = c.stream.unwrap_or(0);
    if !size_prefix {
        return vec![Frame {
            bytes: c.bytes.clone(),
            direction: c.direction,
            stream,
        }];
    }
    let mut out = Vec::new();
    let mut rest = &c.bytes[..];
    while !rest.is_empty() {
        let size = if rest.len() >= 4 {
            i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]])
        } else {
            -1
        };
        let whole = size >= 0 && (size as usize) <= rest.len() - 4;
        let take = if whole { size as usize + 4 } else { rest.len() };
        if !whole {
            let why = if rest.len() < 4 {
                "too few for a size prefix".to_string()
            } else {
                format!("size prefix {size}")
            };
            let bytes = if rest.len() == 1 {
                "byte does"
            } else {
                "bytes do"
            };
            notes.push(format!(
                "line {}: {} {bytes} not hold a whole frame ({why}): decoded as they are",
                c.line,
                rest.len(),
            ));
        }
        out.push(Frame {
            bytes: rest[..take].to_vec(),
            direction: c.direction,
            stream,
        });
        rest = &rest[take..];
    }
    out
}

/// The pending request a response frame answers, taken from the queue of its
/// correlation_id: the oldest whose response layout decodes the frame cleanly, else the
/// oldest.
fn take_pending(
    schema: &Schema,
    opts: &DecodeOptions,
    pending: &mut Pending,
    key: (u64, i32),
    frame: &[u8],
    layout: Layout,
) -> Option<(i16, i16, Option<String>)> {
    let q = pending.get_mut(&key)?;
    let fits = |k: i16, v: i16| {
        let arena = Buffers::new();
        let known = Known {
            layout,
            ..Known::response(k, v)
        };
        decode::decode(schema, opts, &arena, frame, &known).problem_counts() == (0, 0)
    };
    let i = if q.len() > 1 {
        q.iter().position(|(k, v, _)| fits(*k, *v)).unwrap_or(0)
    } else {
        0
    };
    let p = (i < q.len()).then(|| q.remove(i));
    if q.is_empty() {
        pending.remove(&key);
    }
    p
}

fn decode_command(
    schema: &Schema,
    cli: &Cli,
    a: &DecodeArgs,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    if a.body_only && (a.api_key.is_none() || a.api_version.is_none() || a.kind.is_none()) {
        return Err(CliError::Usage(
            "--body-only needs --api-key, --api-version and --kind".into(),
        ));
    }
    if a.api_key.is_some() != a.api_version.is_some() {
        return Err(CliError::Usage(
            "--api-key and --api-version go together".into(),
        ));
    }
    let (chunks, format) = read_decode_input(a)?;
    let mut notes = Vec::new();
    let chunks = if format == Some(hex::HexFormat::Wireshark) {
        tcp_payloads(chunks, &mut notes)
    } else {
        chunks
    };
    if chunks.iter().all(|c| c.bytes.is_empty()) {
        for n in &notes {
            say(&format!("kwire: {n}"));
        }
        return Err(CliError::Msg("no bytes in the input".into()));
    }
    let layout = Layout {
        size_prefix: !(a.no_size_prefix || a.body_only),
        header: !a.body_only,
    };
    let frames: Vec<Frame> = chunks
        .iter()
        .flat_map(|c| split_frames(c, layout.size_prefix, &mut notes))
        .collect();
    for n in &notes {
        say(&format!("kwire: {n}"));
    }
    let opts = DecodeOptions {
        max_nodes: a.out.max_nodes,
        ..DecodeOptions::default()
    };
    let ropts = render_options(cli, &a.out);
    let format = a.out.format.unwrap_or(Format::Text);
    for line in output::ignored_options(&a.out, format) {
        say(&line);
    }
    // Requests by (stream, correlation_id), oldest first: streams of several connections
    // written as one (`c>s`/`s>c` lines) reuse correlation_ids.
    let mut pending: Pending = HashMap::new();
    let mut errors = 0usize;
    let mut doc = crate::page::frames::Doc::new();
    let guesser = Guesser::new(schema);
    let mut arena = Buffers::new();
    for (n, f) in frames.iter().enumerate() {
        // The direction the input gives (a c>s/s>c line, --kind, or --api-key for a
        // response); with none, the frame's own bytes decide (see below).
        let given = match (f.direction, a.kind) {
            (Some(hex::Direction::ClientToServer), _) => Some(Direction::Request),
            (Some(hex::Direction::ServerToClient), _) => Some(Direction::Response),
            (None, Some(KindArg::Request)) => Some(Direction::Request),
            (None, Some(KindArg::Response)) => Some(Direction::Response),
            (None, None) if a.api_key.is_some() => Some(Direction::Response),
            (None, None) => None,
        };
        let dir = given.unwrap_or(Direction::Request);
        let mut known = Known {
            direction: dir,
            api_key: a.api_key,
            api_version: a.api_version,
            hints: Default::default(),
            layout,
        };
        // A correlation_id that an earlier request of the input carries pairs the frame
        // with it.
        let mut paired = None;
        if a.api_key.is_none() && layout.header && given != Some(Direction::Request) {
            let o = if layout.size_prefix { 4 } else { 0 };
            if f.bytes.len() >= o + 4 {
                let corr = i32::from_be_bytes([
                    f.bytes[o],
                    f.bytes[o + 1],
                    f.bytes[o + 2],
                    f.bytes[o + 3],
                ]);
                paired = take_pending(
                    schema,
                    &opts,
                    &mut pending,
                    (f.stream, corr),
                    &f.bytes,
                    layout,
                );
            }
        }
        arena.reset();
        let none = GuessContext::default();
        let m = match (given, paired) {
            (Some(Direction::Response), Some((k, v, pt))) | (None, Some((k, v, pt))) => {
                let request = (given.is_none())
                    .then(|| decode::decode(schema, &opts, &arena, &f.bytes, &known));
                match request {
                    Some(r) if clean_request(schema, &r) => r,
                    _ => {
                        known.direction = Direction::Response;
                        known.api_key = Some(k);
                        known.api_version = Some(v);
                        known.hints.protocol_type = pt;
                        decode::decode(schema, &opts, &arena, &f.bytes, &known)
                    }
                }
            }
            (Some(Direction::Response), None) if a.api_key.is_none() => guesser
                .response(schema, &opts, &arena, &f.bytes, layout, &none)
                .unwrap_or_else(|| decode::decode(schema, &opts, &arena, &f.bytes, &known)),
            (None, None) if layout.header => {
                guesser.either(schema, &opts, &arena, &f.bytes, layout, &none)
            }
            _ => decode::decode(schema, &opts, &arena, &f.bytes, &known),
        };
        if m.direction == Direction::Request {
            if let Some(c) = m.correlation_id {
                let pt = m.tree.find("ProtocolType").and_then(|n| match n.value {
                    crate::tree::Value::Str(s) => Some(s.to_string()),
                    _ => None,
                });
                let q = pending.entry((f.stream, c)).or_default();
                if q.len() < 64 {
                    q.push((m.api_key, m.api_version, pt));
                }
            }
        }
        errors += m.errors().len();
        match format {
            Format::Md => crate::page::frames::markdown(out, schema, n + 1, &m, None, &ropts)?,
            Format::Html => doc.add(schema, &m, None, f.stream as u32, &ropts),
            _ => print_message(&m, None, &ropts, format, out)?,
        }
    }
    if format == Format::Html {
        doc.finish(out, "Kafka messages decoded by kwire")?;
    }
    if errors > 0 {
        say(&format!(
            "kwire: {} frame(s), {errors} error(s) (shown in the tree at their offsets)",
            frames.len()
        ));
    }
    Ok(())
}
