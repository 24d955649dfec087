//! The display filter (`kwire read -Y EXPR`): Wireshark 4.x's filter language over
//! kwire's decoded tree.
//!
//! ```
//! use kwire::filter::Filter;
//! let f = Filter::parse(r#"api == Fetch && Topic == "orders" && ErrorCode ~= 0"#).unwrap();
//! assert!(f.needs_full_tree());
//! let e = Filter::parse("Topic ==").unwrap_err();
//! assert_eq!(e.column, 9);
//! ```
//!
//! A name is a message property ([`PROPERTIES`], the JSON output's names and short
//! aliases), `topic`, a predicate (`malformed`, `warning`, `incomplete`, `unanswered`),
//! `error_code` (every field whose name ends in `ErrorCode`), or else any schema field by
//! its name, found anywhere in the tree: headers, bodies, records, nested consumer
//! protocols, decompressed batches. A field that occurs several times has several
//! occurrences, and the relations follow Wireshark 4.x:
//!
//! | relation | true when |
//! |---|---|
//! | `NAME` | the name occurs (a predicate: holds) |
//! | `==`, `eq`, `any_eq` | some occurrence equals |
//! | `===`, `all_eq` | there are occurrences and every one equals |
//! | `!=`, `ne`, `all_ne`, `!==` | there are occurrences and every one differs |
//! | `~=`, `any_ne` | some occurrence differs |
//! | `>` `>=` `<` `<=` | some occurrence compares so |
//! | `contains` | some occurrence holds the text (or bytes) |
//! | `matches`, `~` | some occurrence matches the regular expression, case-insensitively |
//! | `in {a, b, lo..hi}` | some occurrence equals a member or lies in a range |
//!
//! A relation on a name that does not occur is false, so `!(x == 1)` and `x != 1`
//! differ on messages without `x`, as in Wireshark.

pub mod log;
mod names;
mod parse;
mod select;

pub use names::{did_you_mean, nearest, Known, DECODER_NAMES};
pub use parse::column;
use parse::{RawExpr, RawItem, RawLit, RelOp, Rhs};
pub use select::Select;

use crate::input::RecordSet;
use crate::session::Context;
use crate::tree::{Direction, Message, Node, Value};
use std::borrow::Cow;
use std::cmp::Ordering;

/// A bad filter expression: where (1-based column, in characters) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    /// 1-based column of the fault, in characters.
    pub column: usize,
    /// What is wrong there.
    pub message: String,
    /// The expression.
    pub expr: String,
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for FilterError {}

impl FilterError {
    /// The expression and a caret under the fault's column, as two lines.
    pub fn pointer(&self) -> String {
        format!(
            "  {}\n  {}^",
            self.expr,
            " ".repeat(self.column.saturating_sub(1))
        )
    }
}

/// What a filter can know about a message besides its tree.
#[derive(Clone, Copy, Default)]
pub struct MessageFacts<'c> {
    /// Where the message came from in a capture (none for `kwire decode`).
    pub capture: Option<&'c Context>,
    /// Requests that got no response in the whole capture (those the pairer's cap gave
    /// up included), by the record number of their last segment; `unanswered` is false
    /// for every message when this is none.
    pub unanswered: Option<&'c RecordSet>,
}

/// What a filter knows about a batch or entry of a Kafka log file (`kwire log -Y`,
/// `kwire stats -Y` on log directories; [`crate::log::Item`]), which has no API header
/// and no capture: `kind` is `batch` or `entry`, `topic` the partition folder's topic,
/// and `file`, `file_kind`, `position`, `offset` and `last_offset` name its place.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogFacts<'f> {
    /// `batch` or `entry`.
    pub kind: &'f str,
    /// The file, as `kwire log` prints it.
    pub file: &'f str,
    /// The file's kind (`segment`, `kraft_snapshot`, `offset_index`...).
    pub file_kind: &'f str,
    /// Byte offset of the item in its file.
    pub position: u64,
    /// The topic: `--topic`, else the partition folder's name (`foo-0` -> `foo`);
    /// `__cluster_metadata` for KRaft snapshots.
    pub topic: Option<&'f str>,
    /// A batch's first and last offset (`baseOffset`, `baseOffset + lastOffsetDelta`).
    pub offsets: Option<(i64, i64)>,
    /// The batch's CRC does not match its bytes (counted as `malformed` even when the
    /// batch was read without a tree).
    pub bad_crc: bool,
}

/// What a filter is evaluated over: an API message with its capture context, or a
/// log item's tree with its [`LogFacts`].
struct Subject<'s, 'x> {
    tree: &'s Node<'x>,
    msg: Option<&'s Message<'x>>,
    ctx: MessageFacts<'s>,
    log: Option<&'s LogFacts<'s>>,
}

/// The message properties a filter (and `-T fields -e`) can name: the JSON output's
/// names, then their short aliases.
pub const PROPERTIES: [(&str, &str); 27] = [
    ("api_name", "the API's name (case-insensitive)"),
    (
        "api",
        "api_key, or the API's name when compared with a name",
    ),
    ("api_key", "the api_key"),
    ("api_version", "the api_version"),
    ("header_version", "the header version"),
    ("kind", "request or response"),
    ("correlation_id", "the correlation_id (alias corr)"),
    ("client_id", "the request header's client_id"),
    ("connection", "the connection's number (alias conn)"),
    (
        "capture",
        "the capture file, when several are read (a path given again: PATH (2))",
    ),
    (
        "latency_ms",
        "a response's latency in ms (alias latency; units us, ms, s)",
    ),
    ("size", "the frame's size in bytes, size prefix included"),
    ("frame", "the first and last capture frame of the message"),
    ("src", "source address:port (or the address alone)"),
    ("dst", "destination address:port (or the address alone)"),
    ("schema_release", "the release the definition came from"),
    (
        "topic",
        "any topic name in the message, topic ids named included",
    ),
    ("error_code", "every field whose name ends in ErrorCode"),
    (
        "tls",
        "a message decrypted from TLS: its TLS version (tls.version)",
    ),
    ("tls.sni", "the TLS ClientHello's server_name"),
    ("tls.cipher_suite", "the TLS cipher suite's IANA name"),
    (
        "record_type",
        "each record's type (TopicRecord, OffsetCommitValue, SNAPSHOT_HEADER...)",
    ),
    (
        "offset",
        "kwire log: the offsets a batch holds (baseOffset..lastOffset)",
    ),
    ("last_offset", "kwire log: a batch's last offset"),
    ("file", "kwire log: the file of a batch or entry"),
    (
        "file_kind",
        "kwire log: the file's kind (segment, offset_index...)",
    ),
    (
        "position",
        "kwire log: the byte offset of a batch or entry in its file",
    ),
];

/// The predicates: names that hold or not, and take no value.
pub const PREDICATES: [(&str, &str); 5] = [
    ("malformed", "some part of the message failed to decode"),
    ("warning", "some part of the message carries a warning"),
    ("incomplete", "the capture lost part of the message"),
    (
        "unanswered",
        "a request that got no response in the capture",
    ),
    (
        "guessed",
        "the layout was guessed (a response whose request is not in the input)",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prop {
    ApiName,
    Api,
    ApiKey,
    ApiVersion,
    HeaderVersion,
    Kind,
    CorrelationId,
    ClientId,
    Connection,
    Capture,
    Latency,
    Size,
    Frame,
    Src,
    Dst,
    SchemaRelease,
    Topic,
    ErrorCode,
    Tls,
    TlsSni,
    TlsCipher,
    RecordType,
    Offset,
    LastOffset,
    File,
    FileKind,
    Position,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pred {
    Malformed,
    Warning,
    Incomplete,
    Unanswered,
    Guessed,
}

#[derive(Clone, Debug, PartialEq)]
enum Name {
    Prop(Prop),
    Pred(Pred),
    Field(String),
}

fn resolve(name: &str) -> Name {
    let p = match name {
        "api_name" => Prop::ApiName,
        "api" => Prop::Api,
        "api_key" => Prop::ApiKey,
        "api_version" => Prop::ApiVersion,
        "header_version" => Prop::HeaderVersion,
        "kind" => Prop::Kind,
        "correlation_id" | "corr" => Prop::CorrelationId,
        "client_id" => Prop::ClientId,
        "connection" | "conn" => Prop::Connection,
        "capture" => Prop::Capture,
        "latency_ms" | "latency" => Prop::Latency,
        "size" => Prop::Size,
        "frame" => Prop::Frame,
        "src" => Prop::Src,
        "dst" => Prop::Dst,
        "schema_release" => Prop::SchemaRelease,
        "topic" => Prop::Topic,
        "error_code" => Prop::ErrorCode,
        "tls" | "tls.version" => Prop::Tls,
        "tls.sni" => Prop::TlsSni,
        "tls.cipher_suite" => Prop::TlsCipher,
        "record_type" => Prop::RecordType,
        "offset" => Prop::Offset,
        "last_offset" => Prop::LastOffset,
        "file" => Prop::File,
        "file_kind" => Prop::FileKind,
        "position" => Prop::Position,
        "malformed" => return Name::Pred(Pred::Malformed),
        "warning" => return Name::Pred(Pred::Warning),
        "incomplete" => return Name::Pred(Pred::Incomplete),
        "unanswered" => return Name::Pred(Pred::Unanswered),
        "guessed" => return Name::Pred(Pred::Guessed),
        _ => return Name::Field(name.to_string()),
    };
    Name::Prop(p)
}

/// Whether `name` is a message property, `topic`, `error_code` or a predicate (read
/// from the message and the capture) rather than a schema field (read from the tree).
pub fn is_property(name: &str) -> bool {
    !matches!(resolve(name), Name::Field(_))
}

/// Whether every occurrence of `name` (a `-T fields -e` column) is in a message's whole
/// tree only: a schema field, `record_type` (the summary tree counts clean records, it
/// does not hold them) or `error_code` (every code, zeros included, which the summary
/// tree keeps only in partitions).
pub fn name_needs_full_tree(name: &str) -> bool {
    matches!(
        resolve(name),
        Name::Field(_) | Name::Prop(Prop::RecordType | Prop::ErrorCode)
    )
}

/// Whether the occurrences of `name` (a `-T fields -e` column) are the same from a fact
/// tree ([`crate::decode::Detail::Facts`]) as from the whole tree: the message's and the
/// capture's properties and the predicates, but `topic`, `client_id`, `record_type` and
/// `error_code`.
pub fn name_on_facts(name: &str) -> bool {
    match resolve(name) {
        Name::Pred(_) => true,
        Name::Prop(Prop::Topic | Prop::ClientId | Prop::RecordType | Prop::ErrorCode) => false,
        Name::Prop(_) => true,
        Name::Field(_) => false,
    }
}

/// A number as a literal gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
    fn cmp(self, o: Num) -> Option<Ordering> {
        match (self, o) {
            (Num::Int(a), Num::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.f().partial_cmp(&b.f()),
        }
    }
}

/// A resolved literal.
#[derive(Clone, Debug)]
struct Lit {
    text: String,
    quoted: bool,
    num: Option<Num>,
}

fn parse_num(s: &str) -> Option<Num> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let int = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(h) => i128::from_str_radix(h, 16).ok(),
        None => body.parse::<i128>().ok(),
    };
    if let Some(v) = int {
        return Some(Num::Int(if neg { -v } else { v }));
    }
    if body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return s
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Num::Float);
    }
    None
}

/// A duration with a unit (`100ms`, `1.5s`, `250us`), in milliseconds.
fn parse_duration(s: &str) -> Option<f64> {
    for (unit, scale) in [
        ("ms", 1.0),
        ("us", 1e-3),
        ("µs", 1e-3),
        ("ns", 1e-6),
        ("s", 1e3),
    ] {
        if let Some(n) = s.strip_suffix(unit) {
            return parse_num(n).map(|n| n.f() * scale);
        }
    }
    None
}

#[derive(Debug)]
enum Rel {
    Cmp(RelOp, Lit),
    Matches(regex::Regex),
    In(Vec<(Lit, Option<Lit>)>),
}

/// The lowered expression: chains flat (a chain of any length is one level deep), so
/// the only recursion is per `(` and `not`, which the parser caps.
#[derive(Debug)]
enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Test(Name, Option<Rel>),
}

/// A parsed display filter. Parse once with [`Filter::parse`], then ask
/// [`Filter::matches`] of every message.
#[derive(Debug)]
pub struct Filter {
    expr: Expr,
    text: String,
    /// The schema fields the filter tests, when a tree below the whole one that keeps
    /// them decides as the whole tree does (every one [`Known::is_light`]); else empty.
    kept: Vec<String>,
}

impl Filter {
    /// Parses `expr`.
    ///
    /// # Errors
    /// A [`FilterError`] naming the 1-based column of the first fault: a missing value or
    /// parenthesis, an unclosed string or set, a value given to a predicate, a unit on
    /// anything but `latency`, a regular expression that does not compile.
    pub fn parse(expr: &str) -> Result<Filter, FilterError> {
        Filter::parse_with(expr, None)
    }

    /// Parses `expr` as [`Filter::parse`] does, and refuses what cannot mean anything
    /// with `known`'s schema: a field no definition has (each part of a dotted name), an
    /// API name no API has (`api == Fetchh`), besides what [`Filter::parse`] refuses
    /// (a `kind` that is neither request, response, batch nor entry, an error name no
    /// error has, a latency without a known unit, a word where a number must be). Each
    /// error names the column and the nearest known names (`did you mean `Topic`?`).
    ///
    /// # Errors
    /// A [`FilterError`], as [`Filter::parse`].
    pub fn parse_known(expr: &str, known: &Known) -> Result<Filter, FilterError> {
        Filter::parse_with(expr, Some(known))
    }

    fn parse_with(expr: &str, known: Option<&Known>) -> Result<Filter, FilterError> {
        let err = |at: usize, message: String| FilterError {
            column: column(expr, at),
            message,
            expr: expr.to_string(),
        };
        if expr.trim().is_empty() {
            return Err(err(0, "the filter is empty".into()));
        }
        let raw = parse::expression(expr).map_err(|e| {
            err(
                expr.len() - e.at.len(),
                e.msg.unwrap_or_else(|| "cannot parse here".into()),
            )
        })?;
        let expr_tree = lower(raw, &|at, m| err(at, m), known)?;
        let mut kept = Vec::new();
        fields_tested(&expr_tree, &mut kept);
        if !known.is_some_and(|k| kept.iter().all(|f| k.is_light(f))) {
            kept.clear();
        }
        Ok(Filter {
            expr: expr_tree,
            text: expr.to_string(),
            kept,
        })
    }

    /// The schema fields a tree below the whole one must keep for the filter to decide
    /// on it as on the whole tree ([`crate::decode::DecodeOptions::keep`]): the fields
    /// it tests when each is a primitive field everywhere ([`Known::is_light`]) and the
    /// filter was parsed with the schema ([`Filter::parse_known`]); else none, and a
    /// filter that tests a field [`Filter::needs_full_tree`].
    pub fn kept_fields(&self) -> crate::decode::KeptFields {
        crate::decode::KeptFields::new(&self.kept)
    }

    /// The expression as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the filter reads schema fields that a lighter tree does not keep as the
    /// whole tree has them (so the message must be decoded whole, not at the summary
    /// detail level, which keeps only headers, topics, partitions, group ids, non-zero
    /// error codes, problems and the [`Filter::kept_fields`]), tests `record_type`, or
    /// tests `error_code` in a way the zero codes take part in: `error_code` alone, `!=`
    /// and `===` (which ask about every code), and relations that 0 satisfies (`~= 3`,
    /// `< 1`).
    pub fn needs_full_tree(&self) -> bool {
        fn go(e: &Expr, kept: &[String]) -> bool {
            match e {
                Expr::And(v) | Expr::Or(v) => v.iter().any(|e| go(e, kept)),
                Expr::Not(a) => go(a, kept),
                Expr::Test(Name::Field(f), _) => !kept.contains(f),
                Expr::Test(Name::Prop(Prop::RecordType), _) => true,
                Expr::Test(Name::Prop(Prop::ErrorCode), rel) => !decided_by_nonzero(rel),
                Expr::Test(..) => false,
            }
        }
        go(&self.expr, &self.kept)
    }

    /// Whether the filter decides on what a fact tree holds
    /// ([`crate::decode::Detail::Facts`]), so that messages can be decoded by the fact
    /// walk: it names only the message's own facts (`api`, `api_key`, `api_version`,
    /// `header_version`, `kind`, `correlation_id`, `size`, `schema_release`), the
    /// capture's (`connection`, `frame`, `src`, `dst`, `latency`, `tls...`), `error_code`
    /// where the non-zero codes decide (a fact tree holds every non-zero error code, not
    /// the zeros: `==`, `~= 0`, `> 0`, `in`, `matches`...) and the predicates (the fact walk
    /// makes a tree only for a message with no error or warning, and the others are
    /// decoded at the summary level). `topic`, `client_id`, `record_type` and schema
    /// fields need the summary tree or the whole tree.
    pub fn decides_on_facts(&self) -> bool {
        fn go(e: &Expr) -> bool {
            match e {
                Expr::And(v) | Expr::Or(v) => v.iter().all(go),
                Expr::Not(a) => go(a),
                Expr::Test(Name::Pred(_), _) => true,
                Expr::Test(Name::Prop(Prop::Topic | Prop::ClientId | Prop::RecordType), _) => false,
                Expr::Test(Name::Prop(Prop::ErrorCode), rel) => decided_by_nonzero(rel),
                Expr::Test(Name::Prop(_), _) => true,
                Expr::Test(Name::Field(_), _) => false,
            }
        }
        go(&self.expr)
    }

    /// The lightest detail level the filter decides on as on the whole tree, given that
    /// the decoder keeps its [`Filter::kept_fields`] ([`crate::decode::DecodeOptions::keep`]):
    /// the fact trees ([`Filter::decides_on_facts`]), else the summary tree unless it
    /// [`Filter::needs_full_tree`], else the whole tree.
    pub fn least_detail(&self) -> crate::decode::Detail {
        use crate::decode::Detail;
        if self.decides_on_facts() {
            Detail::Facts
        } else if self.needs_full_tree() {
            Detail::Full
        } else {
            Detail::Summary
        }
    }

    /// Whether the filter needs a log item's tree ([`Filter::matches_log`]): it names
    /// anything but `kind`, `offset`, `last_offset`, `file`, `file_kind`, `position`
    /// and `size`, which a batch read from its header alone (`kwire log --format
    /// summary`) has too.
    pub fn needs_log_tree(&self) -> bool {
        fn go(e: &Expr) -> bool {
            match e {
                Expr::And(v) | Expr::Or(v) => v.iter().any(go),
                Expr::Not(a) => go(a),
                Expr::Test(
                    Name::Prop(
                        Prop::Kind
                        | Prop::Offset
                        | Prop::LastOffset
                        | Prop::File
                        | Prop::FileKind
                        | Prop::Position
                        | Prop::Size,
                    ),
                    _,
                ) => false,
                Expr::Test(..) => true,
            }
        }
        go(&self.expr)
    }

    /// Whether the filter uses `unanswered` (which needs the whole capture read first).
    pub fn uses_unanswered(&self) -> bool {
        fn go(e: &Expr) -> bool {
            match e {
                Expr::And(v) | Expr::Or(v) => v.iter().any(go),
                Expr::Not(a) => go(a),
                Expr::Test(Name::Pred(Pred::Unanswered), _) => true,
                Expr::Test(..) => false,
            }
        }
        go(&self.expr)
    }

    /// Whether message `m` passes.
    pub fn matches(&self, m: &Message<'_>, ctx: &MessageFacts<'_>) -> bool {
        let s = Subject {
            tree: &m.tree,
            msg: Some(m),
            ctx: *ctx,
            log: None,
        };
        eval(&self.expr, &s)
    }

    /// Whether a batch or entry of a Kafka log file passes: `tree` is its tree (a
    /// `RecordBatch`, legacy `Message` or entry node; an empty node when it was read
    /// without one), `facts` its place and kind. The API properties (`api`,
    /// `correlation_id`, `client_id`, `src`...) do not occur in log items.
    pub fn matches_log(&self, tree: &Node<'_>, facts: &LogFacts<'_>) -> bool {
        let s = Subject {
            tree,
            msg: None,
            ctx: MessageFacts::default(),
            log: Some(facts),
        };
        eval(&self.expr, &s)
    }
}

type Fault<'f> = dyn Fn(usize, String) -> FilterError + 'f;

fn lit(r: &RawLit) -> Lit {
    Lit {
        text: r.text.clone(),
        quoted: r.quoted,
        num: if r.quoted { None } else { parse_num(&r.text) },
    }
}

/// A literal for `name`: `latency` takes units and gives milliseconds; a unit anywhere
/// else is an error.
fn lit_for(name: &Name, r: &RawLit, err: &Fault<'_>) -> Result<Lit, FilterError> {
    let mut l = lit(r);
    if !r.quoted && l.num.is_none() {
        if let Some(ms) = parse_duration(&r.text) {
            if *name != Name::Prop(Prop::Latency) {
                return Err(err(
                    r.at,
                    format!(
                        "'{}' has a unit: units (us, ms, s) apply to latency only",
                        r.text
                    ),
                ));
            }
            l.num = Some(Num::Float(ms));
        } else if *name == Name::Prop(Prop::Latency) {
            return Err(err(
                r.at,
                format!(
                    "'{}' is not a duration: a number, in ms, or with a unit (ns, us, ms, s)",
                    r.text
                ),
            ));
        }
    }
    Ok(l)
}

/// Refuses a field name `known` does not hold: the first unknown part of a dotted name,
/// at its column, with the nearest known names.
pub fn check_name(name: &str, known: &Known) -> Result<(), (usize, String)> {
    if is_property(name) || known.is_field(name) {
        return Ok(());
    }
    let mut at = 0;
    for part in name.split('.') {
        if !known.is_field(part) {
            let near = nearest(part, known.names());
            let what = if part.len() == name.len() {
                format!("`{name}`")
            } else {
                format!("`{part}` (in `{name}`)")
            };
            return Err((
                at,
                format!(
                    "{what} is neither a property nor a field of any message the schema holds{}",
                    did_you_mean(&near)
                ),
            ));
        }
        at += part.len() + 1;
    }
    Ok(())
}

/// Whether a property only ever holds numbers.
fn numeric(p: Prop) -> bool {
    matches!(
        p,
        Prop::ApiKey
            | Prop::ApiVersion
            | Prop::HeaderVersion
            | Prop::CorrelationId
            | Prop::Connection
            | Prop::Size
            | Prop::Frame
            | Prop::Offset
            | Prop::LastOffset
            | Prop::Position
    )
}

/// Refuses a value that name `n` can never hold: a word for a number-only property,
/// a `kind` that is none of the four, an error name no error has, an API name the
/// schema does not hold (with `known`).
fn check_value(
    name: &str,
    n: &Name,
    l: &RawLit,
    known: Option<&Known>,
    err: &Fault<'_>,
) -> Result<(), FilterError> {
    let number = !l.quoted && parse_num(&l.text).is_some();
    let refuse =
        |what: String, near: Vec<&str>| Err(err(l.at, format!("{what}{}", did_you_mean(&near))));
    match n {
        Name::Prop(Prop::Kind) => {
            const KINDS: [&str; 4] = ["request", "response", "batch", "entry"];
            if !KINDS.iter().any(|k| k.eq_ignore_ascii_case(&l.text)) {
                return refuse(
                    format!(
                        "kind is request or response (batch or entry in kwire log), not '{}'",
                        l.text
                    ),
                    nearest(&l.text, KINDS),
                );
            }
        }
        Name::Prop(p @ (Prop::Api | Prop::ApiName)) if !number || *p == Prop::ApiName => {
            if let Some(k) = known {
                if !k.is_api(&l.text) {
                    return refuse(
                        format!("'{}' is not the name of an API the schema holds", l.text),
                        nearest(&l.text, k.apis()),
                    );
                }
            }
        }
        Name::Prop(p) if numeric(*p) && !number => {
            return refuse(
                format!("{name} holds numbers; '{}' is not one", l.text),
                vec![],
            );
        }
        Name::Prop(Prop::ErrorCode) | Name::Field(_)
            if !number
                && !l.quoted
                && (matches!(n, Name::Prop(Prop::ErrorCode)) || name.ends_with("ErrorCode")) =>
        {
            let names = crate::errors::ERROR_CODES.iter().map(|(_, e)| *e);
            if !names.clone().any(|e| e.eq_ignore_ascii_case(&l.text)) {
                return refuse(
                    format!(
                        "'{}' is neither a number nor the name of a Kafka error",
                        l.text
                    ),
                    nearest(&l.text, names),
                );
            }
        }
        _ => {}
    }
    Ok(())
}

fn lower(e: RawExpr, err: &Fault<'_>, known: Option<&Known>) -> Result<Expr, FilterError> {
    Ok(match e {
        RawExpr::And(v) => Expr::And(
            v.into_iter()
                .map(|e| lower(e, err, known))
                .collect::<Result<_, _>>()?,
        ),
        RawExpr::Or(v) => Expr::Or(
            v.into_iter()
                .map(|e| lower(e, err, known))
                .collect::<Result<_, _>>()?,
        ),
        RawExpr::Not(a) => Expr::Not(Box::new(lower(*a, err, known)?)),
        RawExpr::Test { name, at, rhs } => {
            let n = resolve(&name);
            if let Some(k) = known {
                check_name(&name, k).map_err(|(off, m)| err(at + off, m))?;
            }
            match &rhs {
                Some(Rhs::Rel(op, l)) if !matches!(op, RelOp::Contains | RelOp::Matches) => {
                    check_value(&name, &n, l, known, err)?;
                }
                Some(Rhs::In(items)) => {
                    for it in items {
                        if let RawItem::One(l) = it {
                            check_value(&name, &n, l, known, err)?;
                        }
                    }
                }
                _ => {}
            }
            let rel = match rhs {
                None => None,
                Some(_) if matches!(n, Name::Pred(_)) => {
                    return Err(err(
                        at,
                        format!(
                        "'{name}' is a predicate: it takes no value (write `{name}` or `!{name}`)"
                    ),
                    ))
                }
                Some(Rhs::Rel(RelOp::Matches, r)) => {
                    let re = regex::RegexBuilder::new(&r.text)
                        .case_insensitive(true)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| {
                            err(
                                r.at,
                                format!(
                                    "not a regular expression: {}",
                                    e.to_string().lines().last().unwrap_or("")
                                ),
                            )
                        })?;
                    Some(Rel::Matches(re))
                }
                Some(Rhs::Rel(op, r)) => Some(Rel::Cmp(op, lit_for(&n, &r, err)?)),
                Some(Rhs::In(items)) => {
                    let mut v = Vec::new();
                    for it in items {
                        v.push(match it {
                            RawItem::One(a) => (lit_for(&n, &a, err)?, None),
                            RawItem::Range(a, b) => {
                                let (lo, hi) = (lit_for(&n, &a, err)?, lit_for(&n, &b, err)?);
                                if lo.num.is_none() {
                                    return Err(err(
                                        a.at,
                                        format!("a range needs numbers; '{}' is not one", a.text),
                                    ));
                                }
                                if hi.num.is_none() {
                                    return Err(err(
                                        b.at,
                                        format!("a range needs numbers; '{}' is not one", b.text),
                                    ));
                                }
                                (lo, Some(hi))
                            }
                        });
                    }
                    Some(Rel::In(v))
                }
            };
            Expr::Test(n, rel)
        }
    })
}

// ---------------------------------------------------------------------------------------
// Occurrences.

/// One occurrence of a name in a message: a value and, for numbers, the annotation that
/// names it (an error code's name, an api_key's API).
#[derive(Clone, Debug)]
pub struct Occurrence<'a> {
    value: Occ<'a>,
    label: Option<&'a str>,
}

#[derive(Clone, Debug)]
enum Occ<'a> {
    Num(Num),
    /// Text compared as written.
    Str(Cow<'a, str>),
    /// Text compared without regard to case (API names, kind).
    Ci(&'a str),
    /// An `address:port`, equal to itself or its address alone.
    Addr(&'a str),
    Bytes(&'a [u8]),
    Uuid(uuid::Uuid),
    Bool(bool),
    Null,
    /// A node with no value (a struct, a header).
    Empty,
    /// The offsets a log batch holds, first and last: equal to each offset in between.
    Range(i64, i64),
}

impl Occurrence<'_> {
    /// The text `-T fields` prints: numbers in decimal, bytes in hex, uuids canonical,
    /// null and value-less nodes empty.
    pub fn text(&self) -> String {
        match &self.value {
            Occ::Num(Num::Int(i)) => i.to_string(),
            Occ::Num(Num::Float(f)) => format!("{f}"),
            Occ::Str(s) => s.to_string(),
            Occ::Ci(s) | Occ::Addr(s) => s.to_string(),
            Occ::Bytes(b) => crate::text::hex(b),
            Occ::Uuid(u) => u.to_string(),
            Occ::Bool(b) => b.to_string(),
            Occ::Null | Occ::Empty => String::new(),
            Occ::Range(a, b) if a == b => a.to_string(),
            Occ::Range(a, b) => format!("{a}..{b}"),
        }
    }
}

pub use crate::text::uuid_base64;

fn node_occ<'a>(n: &'a Node<'_>) -> Occurrence<'a> {
    let value = match &n.value {
        Value::None => Occ::Empty,
        Value::Null => Occ::Null,
        Value::Bool(b) => Occ::Bool(*b),
        Value::Int(i) => Occ::Num(Num::Int(i128::from(*i))),
        Value::UInt(u) | Value::Count(u) => Occ::Num(Num::Int(i128::from(*u))),
        Value::Float(f) => Occ::Num(Num::Float(*f)),
        Value::Str(s) => Occ::Str(Cow::Borrowed(s)),
        Value::Bytes(b) => Occ::Bytes(b),
        Value::Uuid(u) => Occ::Uuid(*u),
    };
    // The decoder leaves an error code of 0 unnamed (as the reference page does); to a
    // filter it is NONE, the name Kafka gives it.
    let label = match (n.annotation, &n.value) {
        (None, Value::Int(0)) if n.name.ends_with("ErrorCode") => Some("NONE"),
        (a, _) => a,
    };
    Occurrence { value, label }
}

/// Whether a node named `node` is field `field`: the same name, or an element of a
/// primitive array of it (`Topics[3]`).
fn is_field(node: &str, field: &str) -> bool {
    match node.strip_prefix(field) {
        Some("") => true,
        Some(rest) => {
            rest.len() > 2
                && rest.starts_with('[')
                && rest.ends_with(']')
                && rest[1..rest.len() - 1].bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

/// Topic names in `m`, each once: `Name` or `...Topic...` strings, and `TopicId`s named
/// from an earlier response (their annotation `topic NAME`).
fn topics<'a>(tree: &'a Node<'_>, log: Option<&LogFacts<'a>>, out: &mut Vec<Occurrence<'a>>) {
    let mut seen: Vec<&'a str> = Vec::new();
    let mut add = |t: &'a str, out: &mut Vec<Occurrence<'a>>| {
        if !seen.contains(&t) {
            seen.push(t);
            out.push(Occurrence {
                value: Occ::Str(Cow::Borrowed(t)),
                label: None,
            });
        }
    };
    if let Some(t) = log.and_then(|l| l.topic) {
        add(t, out);
    }
    tree.walk(&mut |n, _| {
        if let Value::Str(s) = n.value {
            let nm = n.name;
            if nm == "Name" || nm.contains("Topic") {
                add(s, out);
            }
        }
        if n.name == "TopicId" {
            if let Some(t) = n.annotation.and_then(|a| a.strip_prefix("topic ")) {
                add(t, out);
            }
        }
    });
}

/// Every occurrence of `name` (a property, a predicate or a schema field) in `m`.
/// A predicate gives one `true` occurrence when it holds, none otherwise.
pub fn occurrences<'a>(
    name: &str,
    m: &'a Message<'_>,
    ctx: &MessageFacts<'a>,
) -> Vec<Occurrence<'a>> {
    let mut v = Vec::new();
    let s = Subject {
        tree: &m.tree,
        msg: Some(m),
        ctx: *ctx,
        log: None,
    };
    match resolve(name) {
        Name::Pred(p) => {
            if pred(p, &s) {
                v.push(Occurrence {
                    value: Occ::Bool(true),
                    label: None,
                });
            }
        }
        n => collect(&n, &s, &mut v),
    }
    v
}

fn num(i: impl Into<i128>) -> Occurrence<'static> {
    Occurrence {
        value: Occ::Num(Num::Int(i.into())),
        label: None,
    }
}

/// The type's name without a version (`TopicRecord v0` -> `TopicRecord`).
fn type_name(ty: &str) -> &str {
    ty.split_once(' ').map_or(ty, |(t, _)| t)
}

/// The schema fields `e` tests, each once, in the order written.
fn fields_tested(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::And(v) | Expr::Or(v) => v.iter().for_each(|e| fields_tested(e, out)),
        Expr::Not(a) => fields_tested(a, out),
        Expr::Test(Name::Field(f), _) => {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        Expr::Test(..) => {}
    }
}

/// Whether node `n` is named by `f`: its name (or an element of it, `Topics[3]`), or,
/// for a name that starts with a capital, its type (`TopicRecord` for a value of type
/// `TopicRecord v0`, `OffsetCommitKey`, `FetchTopic` for `Topics[0]`).
fn names_node(n: &Node<'_>, f: &str) -> bool {
    is_field(n.name, f) || (f.starts_with(|c: char| c.is_ascii_uppercase()) && type_name(n.ty) == f)
}

/// Occurrences of a field, plain (`Name`) or qualified by the nodes it lies in
/// (`TopicRecord.Name`: every `Name` inside a node named or typed `TopicRecord`).
fn field<'a>(n: &'a Node<'_>, parts: &[&str], out: &mut Vec<Occurrence<'a>>) {
    let Some((last, scopes)) = parts.split_last() else {
        return;
    };
    match scopes.split_first() {
        None => n.walk(&mut |x, _| {
            if is_field(x.name, last) {
                out.push(node_occ(x));
            }
        }),
        Some((scope, rest)) => {
            fn inside<'a>(
                n: &'a Node<'_>,
                scope: &str,
                rest: &[&str],
                last: &str,
                out: &mut Vec<Occurrence<'a>>,
            ) {
                for c in n.children.iter() {
                    if names_node(c, scope) {
                        let mut parts = rest.to_vec();
                        parts.push(last);
                        for k in c.children.iter() {
                            field(k, &parts, out);
                        }
                    } else {
                        inside(c, scope, rest, last, out);
                    }
                }
            }
            if names_node(n, scope) {
                let mut parts = rest.to_vec();
                parts.push(last);
                for k in n.children.iter() {
                    field(k, &parts, out);
                }
            } else {
                inside(n, scope, rest, last, out);
            }
        }
    }
}

fn collect<'a>(name: &Name, s: &Subject<'a, '_>, out: &mut Vec<Occurrence<'a>>) {
    let cap = s.ctx.capture;
    let (tree, msg, log) = (s.tree, s.msg, s.log);
    match name {
        Name::Pred(_) => {}
        Name::Field(f) => {
            if f.contains('.') {
                let parts: Vec<&str> = f.split('.').collect();
                field(tree, &parts, out);
            } else {
                tree.walk(&mut |n, _| {
                    if names_node(n, f) {
                        out.push(node_occ(n));
                    }
                });
            }
        }
        Name::Prop(p) => match p {
            Prop::Kind => {
                let k = match (msg, log) {
                    (Some(m), _) => Some(m.direction.as_str()),
                    (None, Some(l)) => Some(l.kind),
                    _ => None,
                };
                if let Some(k) = k {
                    out.push(Occurrence {
                        value: Occ::Ci(k),
                        label: None,
                    });
                }
            }
            Prop::Topic => topics(tree, log, out),
            Prop::ErrorCode => tree.walk(&mut |n, _| {
                if n.name.ends_with("ErrorCode") && matches!(n.value, Value::Int(_)) {
                    out.push(node_occ(n));
                }
            }),
            Prop::RecordType => tree.walk(&mut |n, _| {
                if n.ty == "Record" && n.kind == crate::tree::NodeKind::Group {
                    let t = crate::tree::record_type(n);
                    let t = match t.rsplit_once(" v") {
                        Some((a, v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                            a.to_string()
                        }
                        _ => t,
                    };
                    out.push(Occurrence {
                        value: Occ::Str(Cow::Owned(t)),
                        label: None,
                    });
                }
            }),
            Prop::Size => match (msg, log) {
                (Some(m), _) => out.push(num(m.size as u64)),
                (None, Some(_)) => out.push(num(tree.length as u64)),
                _ => {}
            },
            Prop::Offset => {
                if let Some((lo, hi)) = log.and_then(|l| l.offsets) {
                    out.push(Occurrence {
                        value: Occ::Range(lo, hi),
                        label: None,
                    });
                }
            }
            Prop::LastOffset => {
                if let Some((_, hi)) = log.and_then(|l| l.offsets) {
                    out.push(num(hi));
                }
            }
            Prop::File | Prop::FileKind => {
                if let Some(l) = log {
                    out.push(Occurrence {
                        value: Occ::Str(Cow::Borrowed(if *p == Prop::File {
                            l.file
                        } else {
                            l.file_kind
                        })),
                        label: None,
                    });
                }
            }
            Prop::Position => {
                if let Some(l) = log {
                    out.push(num(l.position));
                }
            }
            _ => {
                if let Some(m) = msg {
                    message_prop(*p, m, cap, out);
                }
            }
        },
    }
}

/// The properties only API messages have.
fn message_prop<'a>(
    p: Prop,
    m: &'a Message<'_>,
    cap: Option<&'a Context>,
    out: &mut Vec<Occurrence<'a>>,
) {
    match p {
        Prop::ApiName => {
            if let Some(a) = &m.api_name {
                out.push(Occurrence {
                    value: Occ::Ci(a),
                    label: None,
                });
            }
        }
        Prop::Api => out.push(Occurrence {
            value: Occ::Num(Num::Int(m.api_key.into())),
            label: m.api_name,
        }),
        Prop::ApiKey => out.push(num(m.api_key)),
        Prop::ApiVersion => out.push(num(m.api_version)),
        Prop::HeaderVersion => out.push(num(m.header_version)),
        Prop::CorrelationId => {
            if let Some(c) = m.correlation_id {
                out.push(num(c));
            }
        }
        Prop::ClientId => {
            if let Some(h) = m
                .tree
                .children
                .iter()
                .find(|c| c.kind == crate::tree::NodeKind::Header)
            {
                if let Some(c) = h.children.iter().find(|c| c.name == "client_id") {
                    out.push(node_occ(c));
                }
            }
        }
        Prop::SchemaRelease => {
            if let Some(r) = &m.schema_release {
                out.push(Occurrence {
                    value: Occ::Str(Cow::Borrowed(r)),
                    label: None,
                });
            }
        }
        Prop::Connection => {
            if let Some(c) = cap {
                out.push(num(c.connection));
            }
        }
        Prop::Capture => {
            if let Some(l) = cap.and_then(|c| c.capture.as_deref()) {
                out.push(Occurrence {
                    value: Occ::Str(Cow::Borrowed(l)),
                    label: None,
                });
            }
        }
        Prop::Latency => {
            if let Some(l) = cap.and_then(|c| c.latency) {
                out.push(Occurrence {
                    value: Occ::Num(Num::Float(l.as_nanos() as f64 / 1e6)),
                    label: None,
                });
            }
        }
        Prop::Frame => {
            if let Some(c) = cap {
                out.push(num(c.frames.0));
                if c.frames.1 != c.frames.0 {
                    out.push(num(c.frames.1));
                }
            }
        }
        Prop::Tls | Prop::TlsSni | Prop::TlsCipher => {
            if let Some(t) = cap.and_then(|c| c.tls.as_ref()) {
                let v = match p {
                    Prop::Tls => Some(t.session.version),
                    Prop::TlsCipher => Some(t.session.cipher_suite),
                    _ => t.session.sni.as_deref(),
                };
                if let Some(v) = v {
                    out.push(Occurrence {
                        value: Occ::Ci(v),
                        label: None,
                    });
                }
            }
        }
        Prop::Src | Prop::Dst => {
            if let Some(c) = cap {
                out.push(Occurrence {
                    value: Occ::Addr(if p == Prop::Src { &c.src } else { &c.dst }),
                    label: None,
                });
            }
        }
        // Read from the tree or the log facts (collect).
        Prop::Kind
        | Prop::Topic
        | Prop::ErrorCode
        | Prop::RecordType
        | Prop::Size
        | Prop::Offset
        | Prop::LastOffset
        | Prop::File
        | Prop::FileKind
        | Prop::Position => {}
    }
}

fn pred(p: Pred, s: &Subject<'_, '_>) -> bool {
    let count = |f: fn(&Node<'_>) -> bool| {
        let mut k = false;
        s.tree.walk(&mut |n, _| k |= f(n));
        k
    };
    match p {
        Pred::Malformed => s.log.is_some_and(|l| l.bad_crc) || count(|n| n.error().is_some()),
        Pred::Warning => count(|n| n.warning().is_some()),
        Pred::Incomplete => s.ctx.capture.is_some_and(|c| c.incomplete),
        Pred::Guessed => s.msg.is_some_and(|m| m.guess.is_some()),
        Pred::Unanswered => s.msg.is_some_and(|m| {
            m.direction == Direction::Request
                && match (s.ctx.capture, s.ctx.unanswered) {
                    (Some(c), Some(set)) => set.contains(c.frames.1),
                    _ => false,
                }
        }),
    }
}

fn eval(e: &Expr, s: &Subject<'_, '_>) -> bool {
    match e {
        Expr::And(v) => v.iter().all(|e| eval(e, s)),
        Expr::Or(v) => v.iter().any(|e| eval(e, s)),
        Expr::Not(a) => !eval(a, s),
        Expr::Test(Name::Pred(p), _) => pred(*p, s),
        Expr::Test(n, rel) => {
            let mut occ = Vec::new();
            collect(n, s, &mut occ);
            match rel {
                None => !occ.is_empty(),
                Some(r) => relation(r, &occ),
            }
        }
    }
}

/// Whether a test of `error_code` with relation `rel` is decided by the message's
/// non-zero error codes alone, whatever zero codes are there besides: a relation that
/// holds when *some* code satisfies it (`==`, `~=`, `>`, `in`, `contains`, `matches`...)
/// and that a zero code (NONE) does not satisfy. The
/// summary tree keeps the non-zero codes and only some zeros (a partition's), the fact
/// tree the non-zero ones, the whole tree every code: such a test gives the same answer
/// on all three. `error_code` alone, `!=` and `===` (every code), and relations that 0
/// satisfies (`~= 3`, `< 1`) are not.
fn decided_by_nonzero(rel: &Option<Rel>) -> bool {
    let Some(r) = rel else { return false };
    if matches!(r, Rel::Cmp(RelOp::AllEq | RelOp::AllNe, _)) {
        return false;
    }
    let zero = Occurrence {
        value: Occ::Num(Num::Int(0)),
        label: Some("NONE"),
    };
    !relation(r, &[zero])
}

fn relation(r: &Rel, occ: &[Occurrence<'_>]) -> bool {
    use Ordering::{Greater, Less};
    match r {
        Rel::Cmp(op, l) => match op {
            RelOp::AnyEq => occ.iter().any(|o| equal(o, l)),
            RelOp::AllEq => !occ.is_empty() && occ.iter().all(|o| all_equal(o, l)),
            RelOp::AllNe => !occ.is_empty() && occ.iter().all(|o| !equal(o, l)),
            RelOp::AnyNe => occ.iter().any(|o| !all_equal(o, l)),
            RelOp::Gt => occ.iter().any(|o| some_order(o, l, |x| x == Greater)),
            RelOp::Ge => occ.iter().any(|o| some_order(o, l, |x| x != Less)),
            RelOp::Lt => occ.iter().any(|o| some_order(o, l, |x| x == Less)),
            RelOp::Le => occ.iter().any(|o| some_order(o, l, |x| x != Greater)),
            RelOp::Contains => occ.iter().any(|o| contains(o, l)),
            RelOp::Matches => false,
        },
        Rel::Matches(re) => occ.iter().any(|o| texts(o).iter().any(|t| re.is_match(t))),
        Rel::In(items) => occ.iter().any(|o| {
            items.iter().any(|(lo, hi)| match hi {
                None => equal(o, lo),
                // A range of offsets is in a range when the two overlap.
                Some(hi) => match o.value {
                    Occ::Range(a, b) => {
                        order_num(b, lo).is_some_and(|x| x != Less)
                            && order_num(a, hi).is_some_and(|x| x != Greater)
                    }
                    _ => {
                        order(o, lo).is_some_and(|x| x != Less)
                            && order(o, hi).is_some_and(|x| x != Greater)
                    }
                },
            })
        }),
    }
}

fn order_num(v: i64, l: &Lit) -> Option<Ordering> {
    Num::Int(v.into()).cmp(l.num?)
}

/// Whether some value of `o` compares to `l` as `want` asks: a range of offsets has
/// one when its first or last does (every offset between them is in it).
fn some_order(o: &Occurrence<'_>, l: &Lit, want: impl Fn(Ordering) -> bool) -> bool {
    match o.value {
        Occ::Range(a, b) => [a, b].iter().any(|v| order_num(*v, l).is_some_and(&want)),
        _ => order(o, l).is_some_and(want),
    }
}

/// Whether every value of `o` equals `l` (a range of offsets: only a range of one).
fn all_equal(o: &Occurrence<'_>, l: &Lit) -> bool {
    match o.value {
        Occ::Range(a, b) => a == b && equal(o, l),
        _ => equal(o, l),
    }
}

/// Bytes from a bare hex literal (`0a1b`, `0a:1b`, `0x0a1b`).
fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    let digits: String = s
        .chars()
        .filter(|c| !matches!(c, ':' | '-' | '.'))
        .collect();
    if digits.is_empty() || !digits.len().is_multiple_of(2) {
        return None;
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(digits.get(i..i + 2)?, 16).ok())
        .collect()
}

fn equal(o: &Occurrence<'_>, l: &Lit) -> bool {
    match &o.value {
        Occ::Num(n) => match l.num {
            Some(x) => n.cmp(x) == Some(Ordering::Equal),
            None => o.label.is_some_and(|a| a.eq_ignore_ascii_case(&l.text)),
        },
        Occ::Str(s) => s.as_ref() == l.text,
        Occ::Ci(s) => s.eq_ignore_ascii_case(&l.text),
        Occ::Addr(s) => {
            *s == l.text
                || s.rsplit_once(':')
                    .is_some_and(|(h, _)| h == l.text || h.trim_matches(['[', ']']) == l.text)
        }
        Occ::Bytes(b) => {
            if l.quoted {
                *b == l.text.as_bytes()
            } else {
                hex_bytes(&l.text).is_some_and(|h| h == *b)
            }
        }
        Occ::Uuid(u) => u.to_string().eq_ignore_ascii_case(&l.text) || uuid_base64(u) == l.text,
        Occ::Bool(b) => match l.text.to_ascii_lowercase().as_str() {
            "true" | "1" => *b,
            "false" | "0" => !*b,
            _ => false,
        },
        Occ::Null => !l.quoted && l.text == "null",
        Occ::Empty => false,
        Occ::Range(a, b) => {
            order_num(*a, l).is_some_and(|x| x != Ordering::Greater)
                && order_num(*b, l).is_some_and(|x| x != Ordering::Less)
        }
    }
}

fn order(o: &Occurrence<'_>, l: &Lit) -> Option<Ordering> {
    match &o.value {
        Occ::Num(n) => n.cmp(l.num?),
        Occ::Str(s) => Some(s.as_ref().cmp(l.text.as_str())),
        Occ::Ci(s) | Occ::Addr(s) => Some(s.cmp(&l.text.as_str())),
        _ => None,
    }
}

/// The texts `matches` and `contains` look in: the value's text, and a number's label.
fn texts(o: &Occurrence<'_>) -> Vec<String> {
    let mut v = match &o.value {
        Occ::Bytes(b) => vec![String::from_utf8_lossy(b).into_owned()],
        Occ::Uuid(u) => vec![u.to_string(), uuid_base64(u)],
        _ => vec![o.text()],
    };
    if let Some(a) = o.label {
        v.push(a.to_string());
    }
    v
}

fn contains(o: &Occurrence<'_>, l: &Lit) -> bool {
    if let Occ::Bytes(b) = &o.value {
        let needle = if l.quoted {
            l.text.as_bytes().to_vec()
        } else {
            match hex_bytes(&l.text) {
                Some(h) => h,
                None => l.text.as_bytes().to_vec(),
            }
        };
        return needle.is_empty() || b.windows(needle.len()).any(|w| w == needle.as_slice());
    }
    texts(o).iter().any(|t| t.contains(l.text.as_str()))
}

/// Quotes `s` as a filter string literal (for building filters from other options).
pub use crate::text::filter_literal as quote;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Buffers, NodeKind};

    fn msg<'a>(arena: &'a Buffers, codes: &[i64], topics: &[&'a str]) -> Message<'a> {
        let mut body = Node::new("ProduceResponse", "struct", NodeKind::Body, 0);
        let mut kids = Vec::new();
        for (i, c) in codes.iter().enumerate() {
            let mut n = Node::leaf("ErrorCode", "int16", Value::Int(*c), i * 2, 2);
            if *c == 3 {
                n = n.annotate("UNKNOWN_TOPIC_OR_PARTITION");
            }
            kids.push(n);
        }
        for t in topics {
            kids.push(Node::leaf("Name", "string", Value::Str(t), 0, 0));
        }
        body.children = arena.seal(kids);
        let mut root = Node::new("m", "message v9", NodeKind::Message, 0);
        root.children = arena.seal(vec![body]);
        Message {
            direction: Direction::Response,
            api_key: 0,
            api_name: Some("Produce"),
            api_version: 9,
            correlation_id: Some(7),
            header_version: 1,
            size: 40,
            schema_release: None,
            frame: &[],
            buffers: vec![],
            tree: root,
            guess: None,
        }
    }

    fn yes(f: &str, m: &Message<'_>) -> bool {
        Filter::parse(f)
            .unwrap()
            .matches(m, &MessageFacts::default())
    }

    #[test]
    fn filter_occurrence_semantics() {
        let arena = Buffers::new();
        let m = msg(&arena, &[0, 3], &["orders"]);
        assert!(yes("ErrorCode == 0", &m));
        assert!(yes("ErrorCode == 3", &m));
        assert!(!yes("ErrorCode != 0", &m), "!= is all-differ");
        assert!(yes("ErrorCode ~= 0", &m), "~= is any-differs");
        assert!(!yes("ErrorCode === 0", &m));
        assert!(yes("ErrorCode == UNKNOWN_TOPIC_OR_PARTITION", &m));
        assert!(yes("ErrorCode in {1..5}", &m));
        assert!(!yes("ErrorCode in {4, 5}", &m));
        assert!(yes("ErrorCode > 2 && ErrorCode < 4", &m));
        assert!(
            !yes("Absent != 1", &m),
            "a relation on an absent name is false"
        );
        assert!(yes("!(Absent == 1)", &m));
        assert!(yes(
            "topic == \"orders\" and api == Produce and api == 0",
            &m
        ));
        assert!(yes(
            "api_name == produce && kind == RESPONSE && corr == 7",
            &m
        ));
        assert!(yes("Name matches \"^ORD\"", &m));
        assert!(yes("Name contains \"der\"", &m));
        assert!(!yes("malformed", &m));
        assert!(yes("not malformed or warning", &m));
        let one = msg(&arena, &[0], &[]);
        assert!(yes("ErrorCode != 1 and ErrorCode === 0", &one));
    }

    #[test]
    fn filter_semantic_errors_point_at_columns() {
        for (src, col) in [
            ("malformed == 1", 1),
            ("size > 10ms", 8),
            ("Name matches \"(\"", 14),
            ("frame in {a..3}", 11),
        ] {
            let e = Filter::parse(src).unwrap_err();
            assert_eq!(e.column, col, "{src}: {e}");
        }
        assert!(Filter::parse("latency > 1.5ms").is_ok());
    }

    #[test]
    fn filter_qualified_names_types_and_offset_ranges() {
        let arena = Buffers::new();
        // A batch with a TopicRecord named "foo" and a PartitionRecord whose Leader is 1.
        let topic = {
            let mut v = Node::new("value", "TopicRecord v0", NodeKind::Group, 0);
            v.children = arena.seal(vec![Node::leaf("Name", "string", Value::Str("foo"), 0, 4)]);
            v
        };
        let part = {
            let mut v = Node::new("value", "PartitionRecord v2", NodeKind::Group, 4);
            v.children = arena.seal(vec![
                Node::leaf("Name", "string", Value::Str("bar"), 4, 4),
                Node::leaf("Leader", "int32", Value::Int(1), 8, 4),
            ]);
            v
        };
        let mut root = Node::new("RecordBatch", "RecordBatch", NodeKind::Group, 0);
        root.length = 12;
        root.children = arena.seal(vec![topic, part]);
        let facts = LogFacts {
            kind: "batch",
            file: "d/foo-0/00.log",
            file_kind: "segment",
            position: 0,
            topic: Some("foo"),
            offsets: Some((10, 19)),
            bad_crc: false,
        };
        let yes = |f: &str| Filter::parse(f).unwrap().matches_log(&root, &facts);
        assert!(yes(r#"TopicRecord.Name == "foo""#));
        assert!(
            !yes(r#"TopicRecord.Name == "bar""#),
            "bar is a PartitionRecord's"
        );
        assert!(yes(
            r#"PartitionRecord.Name == "bar" && PartitionRecord.Leader == 1"#
        ));
        assert!(yes(r#"RecordBatch.PartitionRecord.Leader == 1"#));
        assert!(!yes(r#"TopicRecord.Leader"#));
        assert!(yes("TopicRecord && PartitionRecord && !RemoveTopicRecord"));
        assert!(!yes("topicrecord"), "a type is named as written");
        assert!(yes("offset == 10 && offset == 15 && offset == 19"));
        assert!(!yes("offset == 9") && !yes("offset == 20"));
        assert!(yes(
            "offset > 18 && offset < 11 && offset >= 19 && offset <= 10"
        ));
        assert!(!yes("offset > 19") && !yes("offset < 10"));
        assert!(yes("offset in {0..10}") && yes("offset in {19..30}") && yes("offset in {12..13}"));
        assert!(!yes("offset in {0..9, 20..30}"));
        assert!(!yes("offset === 10") && yes("offset ~= 10") && yes("offset != 20"));
        assert!(yes("last_offset == 19 && kind == batch && size == 12"));
        assert!(yes(
            r#"file contains "foo-0" && file_kind == segment && position == 0"#
        ));
        assert!(yes("topic == foo && topic == bar"));
        assert!(!yes("api == 0") && !yes("api_key == 0") && !yes("kind == request"));
        assert!(!yes("malformed"));
        let bad = LogFacts {
            bad_crc: true,
            ..facts
        };
        assert!(Filter::parse("malformed").unwrap().matches_log(&root, &bad));
    }

    #[test]
    fn filter_uuid_both_forms() {
        let u = uuid::Uuid::parse_str("01a227dc-bad8-76c0-b454-8785495f3b8b").unwrap();
        assert_eq!(uuid_base64(&u), "AaIn3LrYdsC0VIeFSV87iw");
    }
}
