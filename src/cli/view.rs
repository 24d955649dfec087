//! tshark's output flags for `kwire read`: `-V`, `-x`, `-T`, `-e`/`-E`, `-t`, `-c`, `-q`,
//! `-l`, and how they map onto kwire's formats.
//!
//! | flags | prints |
//! |---|---|
//! | none, or `-T text` | one line per message (the summary format) |
//! | `-V` | each message's title line and tree |
//! | `-x` | each message's line and byte grid |
//! | `-V -x`, or `--format text` | title, byte grid and tree |
//! | `-T json`/`values`/`summary`/`hexdump` | as `--format` of that name |
//! | `-T fields -e NAME...` | the named fields, one row per message |
//!
//! `--no-bytes`, `--bytes-only` and `--depth` without `-T` or `--format` ask for the tree
//! as they always did.

use super::output::ignored_options;
use super::{CliError, OutputArgs, OutputFormat};
pub use crate::render::fields::Fields;
use crate::render::time::TimeFormat;
use crate::render::RenderOptions;
use clap::{Args, ValueEnum};

/// tshark's output flags.
#[derive(Args, Debug, Clone)]
pub struct ViewArgs {
    /// Print each message's title line and tree (tshark's -V).
    #[arg(short = 'V')]
    pub verbose: bool,
    /// Print each message's byte grid; with -T json, add its bytes as `bytes` (tshark's -x).
    #[arg(short = 'x')]
    pub hex: bool,
    /// Output format, as tshark's -T: text is one line a message (-V and -x add detail);
    /// the others are --format of the same name; fields prints the -e fields.
    #[arg(
        short = 'T',
        value_enum,
        value_name = "FORMAT",
        conflicts_with = "format"
    )]
    pub tformat: Option<TFormat>,
    /// A field for -T fields (repeatable): a message property (frame, api, latency...)
    /// or any schema field name.
    #[arg(short = 'e', value_name = "FIELD")]
    pub fields: Vec<String>,
    /// A -T fields option (repeatable, as tshark): header=y|n, separator=/t|/s|C,
    /// quote=d|s|n, occurrence=f|l|a|N, aggregator=,|/s|C.
    #[arg(short = 'E', value_name = "OPTION=VALUE")]
    pub field_opts: Vec<String>,
    /// How times read, as tshark's -t: a ad adoy (local), u ud udoy (UTC; ud is RFC
    /// 3339), e (epoch), r (since the first message), d (since the previous message
    /// read), dd (since the previous message shown).
    #[arg(short = 't', value_enum, value_name = "FORMAT", default_value = "r")]
    pub time: TimeArg,
    /// Stop after N messages printed, counted across all the captures (tshark's -c counts
    /// packets read instead).
    #[arg(short = 'c', value_name = "N", value_parser = super::message_count)]
    pub count: Option<u64>,
    /// Print only the closing lines (no messages, no notices).
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Flush the output after every message (always done when stdout is a terminal).
    #[arg(short = 'l')]
    pub line_flush: bool,
    /// With -T json or --format json: add each message's raw bytes as `bytes` (hex).
    #[arg(long)]
    pub json_bytes: bool,
}

/// `-T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TFormat {
    /// One line a message; -V adds the tree, -x the byte grid.
    Text,
    /// As --format json.
    Json,
    /// As --format values.
    Values,
    /// As --format summary.
    Summary,
    /// As --format hexdump.
    Hexdump,
    /// The -e fields, one row a message.
    Fields,
}

/// `-t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TimeArg {
    /// Local time of day.
    #[value(name = "a")]
    A,
    /// Local date and time.
    #[value(name = "ad")]
    Ad,
    /// Local year/day of year and time.
    #[value(name = "adoy")]
    Adoy,
    /// Seconds since the previous message read.
    #[value(name = "d")]
    D,
    /// Seconds since the previous message shown.
    #[value(name = "dd")]
    Dd,
    /// Seconds since the epoch.
    #[value(name = "e")]
    E,
    /// Seconds since the first message.
    #[value(name = "r")]
    R,
    /// UTC time of day.
    #[value(name = "u")]
    U,
    /// UTC date and time (RFC 3339).
    #[value(name = "ud")]
    Ud,
    /// UTC year/day of year and time.
    #[value(name = "udoy")]
    Udoy,
}

impl TimeArg {
    fn format(self) -> TimeFormat {
        match self {
            TimeArg::A => TimeFormat::Local,
            TimeArg::Ad => TimeFormat::LocalDate,
            TimeArg::Adoy => TimeFormat::LocalDoy,
            TimeArg::D => TimeFormat::Delta,
            TimeArg::Dd => TimeFormat::DeltaShown,
            TimeArg::E => TimeFormat::Epoch,
            TimeArg::R => TimeFormat::Relative,
            TimeArg::U => TimeFormat::Utc,
            TimeArg::Ud => TimeFormat::UtcDate,
            TimeArg::Udoy => TimeFormat::UtcDoy,
        }
    }
}

/// What `read` prints per message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// A printer of `--format`.
    Format(OutputFormat),
    /// The summary line, then the byte grid (`-x`).
    LineGrid,
    /// `-T fields`.
    Fields,
}

/// The view the flags ask for, and the lines to say about flags it ignores.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// What to print.
    pub view: View,
    /// `-V` alone: the tree without the grid.
    no_bytes: bool,
    /// `-x` or `--json-bytes` with JSON.
    json_bytes: bool,
    /// Lines for stderr naming options the view does not use.
    pub ignored: Vec<String>,
}

impl Resolved {
    /// Whether the summary detail level is enough for what is printed.
    pub fn summary_detail(&self) -> bool {
        matches!(
            self.view,
            View::Format(OutputFormat::SUMMARY) | View::Fields
        )
    }
}

/// Resolves tshark's flags and `--format` into one view.
///
/// # Errors
/// `-e` or `-E` without `-T fields`; `-T fields` without `-e`.
pub fn resolve(v: &ViewArgs, o: &OutputArgs) -> Result<Resolved, CliError> {
    let fields = v.tformat == Some(TFormat::Fields);
    if !fields && (!v.fields.is_empty() || !v.field_opts.is_empty()) {
        return Err(CliError::Usage("-e and -E go with -T fields".into()));
    }
    if fields && v.fields.is_empty() {
        return Err(CliError::Usage(
            "-T fields needs at least one -e FIELD".into(),
        ));
    }
    let mut ignored = Vec::new();
    let tree_habits = o.no_bytes || o.bytes_only || o.depth.is_some();
    let (view, no_bytes) = match (o.format, v.tformat) {
        (Some(f), _) => (View::Format(f), false),
        (None, Some(TFormat::Fields)) => (View::Fields, false),
        (None, Some(TFormat::Json)) => (View::Format(OutputFormat::JSON), false),
        (None, Some(TFormat::Values)) => (View::Format(OutputFormat::VALUES), false),
        (None, Some(TFormat::Summary)) => (View::Format(OutputFormat::SUMMARY), false),
        (None, Some(TFormat::Hexdump)) => (View::Format(OutputFormat::HEXDUMP), false),
        (None, Some(TFormat::Text) | None) => match (v.verbose, v.hex) {
            (false, false) if tree_habits => (View::Format(OutputFormat::TEXT), false),
            (false, false) => (View::Format(OutputFormat::SUMMARY), false),
            (true, false) => (View::Format(OutputFormat::TEXT), true),
            (false, true) => (View::LineGrid, false),
            (true, true) => (View::Format(OutputFormat::TEXT), false),
        },
    };
    let tshark_text = o.format.is_none() && matches!(v.tformat, None | Some(TFormat::Text));
    let json = view == View::Format(OutputFormat::JSON);
    if !tshark_text && !(o.format == Some(OutputFormat::TEXT)) {
        if v.verbose {
            ignored.push("kwire: -V applies to -T text; ignored here".to_string());
        }
        if v.hex && !json {
            ignored.push("kwire: -x applies to -T text and -T json; ignored here".to_string());
        }
    }
    if v.json_bytes && !json {
        ignored.push("kwire: --json-bytes applies to JSON; ignored here".to_string());
    }
    let shown = match view {
        View::Format(f) => f,
        View::LineGrid => OutputFormat::TEXT,
        View::Fields => OutputFormat::SUMMARY,
    };
    if !(tshark_text && tree_habits) {
        ignored.extend(ignored_options(o, shown));
    }
    Ok(Resolved {
        view,
        no_bytes,
        json_bytes: json && (v.hex || v.json_bytes),
        ignored,
    })
}

/// Puts the view's choices into the render options.
pub fn apply(v: &ViewArgs, r: &Resolved, ropts: &mut RenderOptions) {
    ropts.no_bytes |= r.no_bytes;
    ropts.json_bytes = r.json_bytes;
    ropts.time = v.time.format();
}

/// `-T fields` output ([`crate::render::fields::Fields`]) from `-e` and `-E`.
///
/// # Errors
/// An `-E` option tshark does not have, or a value it does not take.
pub fn fields(v: &ViewArgs) -> Result<Fields, CliError> {
    Fields::new(v.fields.clone(), &v.field_opts).map_err(CliError::Usage)
}
