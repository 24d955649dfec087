//! `kwire log`, `kwire record` and `kwire stats` on log directories: printers over the
//! items of [`crate::log`].

use super::{CliError, OutputArgs, OutputFormat};
use crate::decode::internal_topics::{self, InternalTopic};
use crate::decode::{Cx, DecodeOptions, Detail, Reader};
use crate::filter::Filter;
use crate::log::{self, Finding, Item, ItemKind, Level, LogOptions, Sink};
use crate::render::{self, json::node_json, RenderOptions};
use crate::schema::Schema;
use crate::tree::{Buffers, Direction, Message, Node, NodeKind, Region, Value};
use serde_json::{json, Map, Value as J};
use std::io::{self, Write};
use std::path::PathBuf;

/// `kwire log` options.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = LOG_HELP, mut_arg("format", super::message_formats_only))]
pub struct LogArgs {
    /// Log directories, partition folders or files (`.log`, `.index`, `.timeindex`,
    /// `.txnindex`, `.snapshot`, `.checkpoint`, `quorum-state`, `*-checkpoint`,
    /// `partition.metadata`, `meta.properties`).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The topic of the records (default: from the partition folder's name).
    #[arg(long)]
    pub topic: Option<String>,
    /// Check CRCs, offsets across batches and segments, index entries and snapshot
    /// footers, and print what was found.
    #[arg(long)]
    pub verify: bool,
    /// Exit with status 3 when the files were read but some batch or entry failed to
    /// decode (an error finding).
    #[arg(long)]
    pub strict: bool,
    /// A display filter (docs/filter.md): print only the batches and entries for which
    /// it holds, e.g. `-Y 'TopicRecord.Name == "foo"'`, `-Y 'record_type == GroupMetadataValue'`,
    /// `-Y 'offset == 1234'`. Findings are all printed.
    #[arg(short = 'Y', long = "display-filter", value_name = "EXPR")]
    pub display_filter: Option<String>,
    /// Output options (`--format summary`: one line per batch or entry; no md or html).
    #[command(flatten)]
    pub out: OutputArgs,
}

const LOG_HELP: &str = "\
-Y takes the display filter of kwire read (docs/filter.md) over each batch's tree (its
RecordBatch fields, every record, each internal-topic record's key and value) and over
each entry of the other files. A name with dots is a field inside a record type or node
(`TopicRecord.Name`, `PartitionRecord.Leader`, `RecordBatch.producerId`); a capitalised
name alone is also a record type (`TopicRecord`: the batch holds one). Properties of log
items: kind (batch or entry), topic (the partition folder's or --topic), record_type,
offset (the batch holds that offset: `offset == 42`, `offset in {10..20}`), last_offset,
file, file_kind, position, size; and malformed, warning.

Examples:
  kwire log /var/lib/kafka/data/__cluster_metadata-0 --format summary
  kwire log DIR -Y 'TopicRecord.Name == \"orders\"'
  kwire log __consumer_offsets-31 -Y 'OffsetCommitKey.group == \"billing\"'
  kwire log 00000000000000000000.log -Y 'offset == 1234' --format json
  kwire log DIR -Y 'kind == entry && file_kind == offset_index'
  kwire log DIR --verify";

/// `kwire record` options.
#[derive(clap::Args, Debug, Clone)]
#[command(mut_arg("format", super::message_formats_only))]
pub struct RecordArgs {
    /// The topic the record belongs to (`__consumer_offsets`, `__transaction_state`,
    /// `__share_group_state`, `__cluster_metadata`).
    #[arg(long)]
    pub topic: String,
    /// The record's key, as hex (any dump style); absent: a null key.
    #[arg(long, value_name = "HEX")]
    pub key: Option<String>,
    /// The record's value, as hex; absent: a null value (a tombstone).
    #[arg(long, value_name = "HEX")]
    pub value: Option<String>,
    /// Exit with status 3 when the record failed to decode.
    #[arg(long)]
    pub strict: bool,
    /// Output options.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `FILE@POSITION` as printed before each line.
fn place(it: &Item<'_>) -> String {
    format!("{}@{}", it.file.display(), it.position)
}

/// The summary line of a batch, from its header alone (kafka-dump-log's fields).
pub fn batch_line(it: &Item<'_>) -> String {
    let Some(b) = &it.batch else {
        return format!(
            "{} {} bytes: not a readable batch",
            place(it),
            it.bytes.len()
        );
    };
    let mut s = format!(
        "{} baseOffset {} lastOffset {} count {} size {} magic {} compression {} crc 0x{:08x} {}",
        place(it),
        b.base_offset,
        b.last_offset,
        b.count,
        b.size,
        b.magic,
        b.compression(),
        b.crc,
        if b.crc_ok { "valid" } else { "INVALID" }
    );
    if b.magic == 2 {
        s.push_str(&format!(" leaderEpoch {}", b.leader_epoch));
        if b.producer.0 >= 0 {
            s.push_str(&format!(
                " producerId {} producerEpoch {} baseSequence {}",
                b.producer.0, b.producer.1, b.producer.2
            ));
        }
        if b.is_transactional() {
            s.push_str(" transactional");
        }
        if b.is_control() {
            s.push_str(" control");
        }
    }
    let kind = if b.attributes & 0x08 != 0 {
        "LogAppendTime"
    } else {
        "CreateTime"
    };
    match crate::decode::records::format_millis(b.max_timestamp) {
        Some(t) if b.max_timestamp >= 0 => s.push_str(&format!(" {kind} {t}")),
        _ => s.push_str(&format!(" {kind} {}", b.max_timestamp)),
    }
    s
}

/// One line for an entry: its name and its leaves' `name=value`.
fn entry_line(it: &Item<'_>, opts: &RenderOptions) -> String {
    let mut s = place(it);
    if let Some(n) = &it.node {
        s.push(' ');
        s.push_str(n.name);
        let leaves: Vec<&Node<'_>> = if n.children.is_empty() {
            vec![n]
        } else {
            n.children.iter().collect()
        };
        for c in leaves {
            s.push(' ');
            if !n.children.is_empty() {
                s.push_str(c.name);
                s.push('=');
            }
            s.push_str(&render::value_text(&c.value, opts.max_value_len, true));
            if let Some(a) = &c.annotation {
                s.push_str(&format!(" ({a})"));
            }
            if let Some(e) = c.error() {
                s.push_str(&format!(" !! {e}"));
            }
        }
        if let Some(e) = n.error().filter(|_| !n.children.is_empty()) {
            s.push_str(&format!(" !! {e}"));
        }
    }
    s
}

/// The JSON object of one item (`kind: "batch"` or `"entry"`; see docs/json-format.md).
pub fn item_json(it: &Item<'_>) -> J {
    let mut m = Map::new();
    m.insert(
        "kind".into(),
        match it.kind {
            ItemKind::Batch => "batch",
            ItemKind::Entry => "entry",
        }
        .into(),
    );
    m.insert("file".into(), it.file.display().to_string().into());
    m.insert("file_kind".into(), it.file_kind.as_str().into());
    m.insert("position".into(), it.position.into());
    m.insert("size".into(), it.bytes.len().into());
    if let Some(t) = it.topic {
        m.insert("topic".into(), t.name().into());
    }
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    if let Some(n) = &it.node {
        n.walk(&mut |x, _| {
            let at = |msg: &str| {
                let mut o = Map::new();
                o.insert("offset".into(), x.offset.into());
                if x.buffer != 0 {
                    o.insert("buffer".into(), x.buffer.into());
                }
                o.insert("message".into(), msg.into());
                J::Object(o)
            };
            if let Some(e) = x.error() {
                errors.push(at(e));
            }
            if let Some(w) = x.warning() {
                warnings.push(at(w));
            }
        });
    }
    if let Some(b) = &it.batch {
        if !b.crc_ok && it.node.is_none() {
            errors.push(json!({"offset": it.position, "message": "CRC mismatch"}));
        }
    }
    m.insert("errors".into(), J::Array(errors));
    m.insert("warnings".into(), J::Array(warnings));
    if let Some(n) = &it.node {
        m.insert("tree".into(), node_json(n));
    }
    J::Object(m)
}

/// Writes the JSON line of one item to `w` straight from its tree (no
/// `serde_json::Value` in between): byte for byte what serializing [`item_json`] gives,
/// and a newline. `out` is the line buffer (emptied first); a batch of many records is
/// written out in pieces as the buffer fills, as `kwire read`'s JSON lines are.
///
/// # Errors
/// The writer's errors.
pub fn write_item_json(w: &mut dyn Write, out: &mut Vec<u8>, it: &Item<'_>) -> io::Result<()> {
    use crate::render::json::{put_int, put_str, write_node, write_problems, Spill};
    out.clear();
    out.extend_from_slice(match it.kind {
        ItemKind::Batch => b"{\"kind\":\"batch\",\"file\":",
        ItemKind::Entry => b"{\"kind\":\"entry\",\"file\":",
    });
    put_str(out, &it.file.display().to_string());
    out.extend_from_slice(b",\"file_kind\":");
    put_str(out, it.file_kind.as_str());
    out.extend_from_slice(b",\"position\":");
    put_int(out, it.position);
    out.extend_from_slice(b",\"size\":");
    put_int(out, it.bytes.len());
    if let Some(t) = it.topic {
        out.extend_from_slice(b",\"topic\":");
        put_str(out, t.name());
    }
    let crc = it
        .batch
        .as_ref()
        .filter(|b| !b.crc_ok && it.node.is_none())
        .map(|_| (it.position, "CRC mismatch"));
    write_problems(out, it.node.as_ref(), crc);
    let mut spill = Spill::new(w);
    if let Some(n) = &it.node {
        out.extend_from_slice(b",\"tree\":");
        write_node(out, n, &mut spill);
    }
    out.extend_from_slice(b"}\n");
    spill.finish(out)
}

/// The JSON object of a finding (`kind: "finding"`).
pub fn finding_json(f: &Finding) -> J {
    json!({
        "kind": "finding",
        "file": f.file.display().to_string(),
        "offset": f.offset,
        "level": f.level.as_str(),
        "message": f.message,
    })
}

/// Prints items in one format; findings to stderr, or to the output with `--verify`.
struct Printer<'o> {
    out: &'o mut dyn Write,
    format: OutputFormat,
    ropts: RenderOptions,
    verify: bool,
    /// The JSON line buffer, reused from item to item.
    line: Vec<u8>,
}

impl Sink for Printer<'_> {
    fn item(&mut self, it: &Item<'_>) -> io::Result<()> {
        let w = &mut *self.out;
        match self.format {
            // md and html are refused before any item (log_command).
            OutputFormat::SUMMARY
            | OutputFormat::VALUES
            | OutputFormat::MD
            | OutputFormat::HTML => match it.kind {
                ItemKind::Batch => writeln!(w, "{}", batch_line(it)),
                ItemKind::Entry => writeln!(w, "{}", entry_line(it, &self.ropts)),
            },
            OutputFormat::JSON => {
                let res = write_item_json(w, &mut self.line, it);
                // One huge batch does not keep its buffer for the rest of the read.
                if self.line.capacity() > 4 << 20 {
                    self.line = Vec::new();
                }
                res
            }
            OutputFormat::TEXT => {
                match it.kind {
                    ItemKind::Batch => writeln!(w, "{}", batch_line(it))?,
                    ItemKind::Entry => writeln!(w, "{}", place(it))?,
                }
                if let Some(n) = &it.node {
                    render::text::node_tree(w, n, &self.ropts)?;
                }
                if it.kind == ItemKind::Batch {
                    writeln!(w)?;
                }
                Ok(())
            }
            OutputFormat::HEXDUMP => {
                match it.kind {
                    ItemKind::Batch => writeln!(w, "{}", batch_line(it))?,
                    ItemKind::Entry => writeln!(w, "{}", entry_line(it, &self.ropts))?,
                }
                dump_at(w, it.bytes, it.position, self.ropts.color)?;
                for (i, b) in it.buffers.iter().enumerate() {
                    writeln!(w, "decompressed buffer {} ({} bytes)", i + 1, b.len())?;
                    dump_at(w, b, 0, self.ropts.color)?;
                }
                Ok(())
            }
        }
    }

    fn finding(&mut self, f: &Finding) -> io::Result<()> {
        if self.verify {
            match self.format {
                OutputFormat::JSON => writeln!(self.out, "{}", finding_json(f)),
                _ => writeln!(self.out, "{}", f.line()),
            }
        } else {
            if f.level != Level::Info {
                super::say(&format!("kwire: {}", f.line()));
            }
            Ok(())
        }
    }
}

/// A hexyl dump whose offsets start at `offset` (the item's place in its file).
fn dump_at(w: &mut dyn Write, bytes: &[u8], offset: u64, color: bool) -> io::Result<()> {
    let mut w = w;
    let mut printer = hexyl::PrinterBuilder::new(&mut w)
        .show_color(color)
        .show_char_panel(true)
        .show_position_panel(true)
        .with_border_style(hexyl::BorderStyle::Unicode)
        .enable_squeezing(false)
        .num_panels(2)
        .group_size(1)
        .build();
    printer.display_offset(offset);
    printer.print_all(bytes)
}

/// Runs `kwire log`. With `--verify`, ends with a verdict line and fails when errors
/// were found.
///
/// # Errors
/// Output errors; with `--verify`, errors found in the files.
pub fn log_command(
    schema: &Schema,
    ropts: RenderOptions,
    a: &LogArgs,
    out: &mut dyn Write,
) -> Result<i32, CliError> {
    let format = a.out.format.unwrap_or(OutputFormat::TEXT);
    for l in super::output::ignored_options(&a.out, format) {
        super::say(&l);
    }
    // md and html are refused when the arguments are parsed (`message_formats_only`).
    if matches!(format, OutputFormat::Document(_)) {
        return Err(CliError::Usage(
            "kwire log prints text, json, summary or hexdump".to_string(),
        ));
    }
    if format == OutputFormat::VALUES {
        super::say(
            "kwire: --format values applies to API messages; kwire log prints its summary lines",
        );
    }
    let filter = a
        .display_filter
        .as_deref()
        .map(|e| Filter::parse_known(e, &crate::filter::Known::of(schema)))
        .transpose()
        .map_err(|e| CliError::Usage(format!("-Y: {e}\n{}", e.pointer())))?;
    let opts = LogOptions {
        topic: a.topic.clone(),
        verify: a.verify,
        detail: if matches!(
            format,
            OutputFormat::SUMMARY | OutputFormat::VALUES | OutputFormat::HEXDUMP
        ) && !filter.as_ref().is_some_and(Filter::needs_log_tree)
        {
            Detail::Summary
        } else {
            Detail::Full
        },
    };
    let mut p = Printer {
        out,
        format,
        ropts,
        verify: a.verify,
        line: Vec::new(),
    };
    let (t, shown) = match &filter {
        None => (log::read_paths(schema, &a.paths, &opts, &mut p)?, None),
        Some(f) => {
            let mut fs = crate::filter::log::Filtered {
                inner: &mut p,
                filter: f,
                topic: a.topic.as_deref(),
                shown: 0,
            };
            let t = log::read_paths(schema, &a.paths, &opts, &mut fs)?;
            (t, Some(fs.shown))
        }
    };
    let [info, warnings, errors] = t.findings;
    let shown_text = shown.map_or(String::new(), |n| format!(" ({n} shown)"));
    let line = format!(
        "kwire: {} file{}, {} batch{}, {} entr{}{shown_text}: {errors} error{}, {warnings} warning{}, {info} note{}",
        t.files,
        if t.files == 1 { "" } else { "s" },
        t.batches,
        if t.batches == 1 { "" } else { "es" },
        t.entries,
        if t.entries == 1 { "y" } else { "ies" },
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" },
        if info == 1 { "" } else { "s" },
    );
    if a.verify {
        match format {
            OutputFormat::JSON => {
                let mut v = json!({"kind": "verdict", "files": t.files, "batches": t.batches, "entries": t.entries,
                       "errors": errors, "warnings": warnings, "notes": info});
                if let Some(n) = shown {
                    v["shown"] = n.into();
                }
                writeln!(p.out, "{v}")?
            }
            _ => writeln!(p.out, "{}", line.trim_start_matches("kwire: "))?,
        }
        p.out.flush()?;
        if errors > 0 {
            super::say(&format!(
                "kwire: --verify found {errors} error{}",
                if errors == 1 { "" } else { "s" }
            ));
        }
    } else {
        super::say(&line);
    }
    Ok(log_status(&t, a.strict || a.verify))
}

/// The exit status of reading log files (`kwire log`, and `stats` and `export` of log
/// directories): a file that could not be read or followed to its end is input
/// unreadable or cut (2, said), as in `kwire read`; errors inside what was read are
/// decode errors (3 with `strict`); else 0.
pub fn log_status(t: &log::Totals, strict: bool) -> i32 {
    if t.unreadable > 0 {
        super::say(&format!(
            "kwire: {} {} a file could not be read to its end (missing, cut or not a Kafka log)",
            t.unreadable,
            if t.unreadable == 1 {
                "finding says"
            } else {
                "findings say"
            }
        ));
        super::EXIT_INPUT
    } else if strict && t.findings[2] > 0 {
        super::EXIT_STRICT
    } else {
        super::EXIT_OK
    }
}

/// Decodes one record of an internal topic from its key and value bytes: a message
/// whose frame is the key's bytes followed by the value's, with the key and value
/// groups (offsets of the value follow the key's).
pub fn record_message<'a>(
    schema: &'a Schema,
    opts: &'a DecodeOptions,
    arena: &'a Buffers,
    topic: InternalTopic,
    frame: &'a [u8],
    key_len: Option<usize>,
    value_null: bool,
) -> Message<'a> {
    let mut cx = Cx::new(schema, arena, opts);
    let klen = key_len.unwrap_or(0);
    let (kb, vb) = frame.split_at(klen.min(frame.len()));
    let mut root = Node::new(
        arena.fmt(format_args!("{} record", topic.name())),
        "record",
        NodeKind::Message,
        0,
    );
    root.length = frame.len();
    let mut kr = Reader::new(kb, 0, 0, arena);
    let mut key = Node::new("key", "bytes", NodeKind::Group, 0);
    key.length = kb.len();
    let mut kids = Vec::new();
    let info = if key_len.is_some() {
        let (info, ty) = internal_topics::decode_key(&mut cx, topic, &mut kr, &mut kids);
        key.ty = ty;
        key.value = Value::Bytes(kb);
        info
    } else {
        key.kind = NodeKind::Field;
        key.value = Value::Null;
        if topic == InternalTopic::ClusterMetadata {
            internal_topics::KeyInfo::Metadata
        } else {
            key.set_warning(arena.fmt(format_args!("a {} record without a key", topic.name())));
            internal_topics::KeyInfo::Unknown
        }
    };
    if kr.left() > 0 {
        let n = kr.left();
        kids.push(kr.error_leaf(
            "rest",
            "bytes",
            format!("{n} bytes not decoded after an error"),
        ));
    }
    key.children = cx.seal(kids);
    key.set_region(Region::Record);
    let mut value = Node::new("value", "bytes", NodeKind::Group, klen);
    value.length = vb.len();
    if value_null {
        value.kind = NodeKind::Field;
        value.value = Value::Null;
        if let internal_topics::KeyInfo::Coordinator { record, .. } = &info {
            value.annotation =
                Some(arena.fmt(format_args!("tombstone: deletes this {record} record")));
        }
    } else {
        let mut vr = Reader::new(vb, klen, 0, arena);
        let mut kids = Vec::new();
        value.ty = internal_topics::decode_value(&mut cx, &info, &mut vr, &mut kids);
        if vr.left() > 0 {
            let n = vr.left();
            kids.push(vr.error_leaf(
                "rest",
                "bytes",
                format!("{n} bytes not decoded after an error"),
            ));
        }
        value.value = Value::Bytes(vb);
        value.children = cx.seal(kids);
    }
    value.set_region(Region::RecordBatch);
    let mut body = Node::new("record", "struct", NodeKind::Body, 0);
    body.length = frame.len();
    body.children = arena.nodes([key, value]);
    root.children = arena.nodes([body]);
    Message {
        direction: Direction::Request,
        api_key: -1,
        api_name: Some(arena.fmt(format_args!("{} record", topic.name()))),
        api_version: 0,
        correlation_id: None,
        header_version: 0,
        size: frame.len(),
        schema_release: None,
        frame,
        buffers: std::mem::take(&mut cx.buffers),
        tree: root,
        guess: None,
    }
}

/// Runs `kwire record`.
///
/// # Errors
/// An unknown topic, hex that does not parse; output errors.
pub fn record_command(
    schema: &Schema,
    ropts: &RenderOptions,
    a: &RecordArgs,
    out: &mut dyn Write,
) -> Result<i32, CliError> {
    let topic = InternalTopic::from_name(&a.topic).ok_or_else(|| {
        CliError::Usage(format!(
            "{} is not one of Kafka's internal topics whose records kwire decodes (__consumer_offsets, __transaction_state, __share_group_state, __cluster_metadata)",
            a.topic
        ))
    })?;
    let parse = |what: &str, h: &str| -> Result<Vec<u8>, CliError> {
        let compact: String = h
            .chars()
            .filter(|c| !c.is_whitespace() && *c != ':')
            .collect();
        let compact = compact.strip_prefix("0x").unwrap_or(&compact);
        if !compact.len().is_multiple_of(2) || !compact.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CliError::Usage(format!("--{what}: not hex")));
        }
        Ok((0..compact.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&compact[i..i + 2], 16).unwrap_or(0))
            .collect())
    };
    let key = a.key.as_deref().map(|h| parse("key", h)).transpose()?;
    let value = a.value.as_deref().map(|h| parse("value", h)).transpose()?;
    let mut frame = key.clone().unwrap_or_default();
    frame.extend(value.clone().unwrap_or_default());
    let opts = DecodeOptions::default();
    let arena = Buffers::new();
    let m = record_message(
        schema,
        &opts,
        &arena,
        topic,
        &frame,
        key.as_ref().map(Vec::len),
        value.is_none(),
    );
    let OutputFormat::Message(format) = a.out.format.unwrap_or(OutputFormat::TEXT) else {
        return Err(std::io::Error::other(
            "Markdown and HTML documents are written by crate::page::frames",
        )
        .into());
    };
    super::output::print_message(&m, None, ropts, format, out)?;
    Ok(if a.strict && m.error_count() > 0 {
        super::EXIT_STRICT
    } else {
        super::EXIT_OK
    })
}
