//! The command line: clap definitions and wiring only.

pub mod decode_cmd;
pub mod encode_cmd;
pub mod output;
pub mod page_cmd;
pub mod read;
pub mod schema_cmd;

use crate::schema::{load, Schema};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::{self, Write};
use std::path::PathBuf;

/// kwire: a Kafka wire-protocol inspector.
#[derive(Parser, Debug)]
#[command(name = "kwire", version, about, long_about = None)]
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
}

/// Options wherever messages are printed.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
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
    /// A file of hex text (xxd, hexdump -C, od, tshark/Wireshark, hexyl and kwire's own
    /// hexdump format, plain, c>s/s>c lines); `-` for stdin.
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
    /// Decode frames from hex, base64 or raw bytes.
    Decode(DecodeArgs),
    /// Per-API counts, error names, latencies and bytes; per-connection client ids.
    Stats(read::StatsArgs),
    /// Every API key with its versions.
    Apis {
        /// Output format.
        #[arg(long, value_enum, default_value_t = ListFormat::Text)]
        format: ListFormat,
    },
    /// The grammar of a message, or `schema import` to rebuild the embedded facts.
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
    /// Builds frames from JSON in the shape of `--format values` (one value or NDJSON).
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

/// Runs kwire; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let res = run(&cli, &mut out).and_then(|()| out.flush().map_err(|e| e.into()));
    match res {
        Ok(()) => 0,
        Err(CliError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            let _ = out.flush();
            eprintln!("kwire: {e}");
            2
        }
    }
}

/// An error that ends the command.
#[derive(Debug)]
pub enum CliError {
    /// Writing output or reading input failed.
    Io(io::Error),
    /// Anything else, as text.
    Msg(String),
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Io(e) => write!(f, "{e}"),
            CliError::Msg(m) => f.write_str(m),
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

fn run(cli: &Cli, out: &mut dyn Write) -> Result<(), CliError> {
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
                    for e in std::fs::read_dir(d)? {
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
                return Err(CliError::Msg(
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
        Command::Read(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            read::read_command(&schema, cli, a, out)
        }
        Command::Stats(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            read::stats_command(&schema, a, out)
        }
        Command::Decode(a) => {
            let schema = load_schema(cli.schema.as_deref())?;
            decode_cmd::decode_command(&schema, cli, a, out)
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
            eprintln!("kwire: {n} pages and an index in {}", dir.display());
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
