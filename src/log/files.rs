//! The small files of a log directory: indexes, producer-state snapshots and the text
//! files. Each is read whole (at most [`super::MAX_SMALL_FILE`] bytes) and handed out
//! as one [`Item`] per entry, its node's offsets relative to the file.
//!
//! - `.index`: 8-byte entries `relativeOffset int32, position int32` (Kafka's
//!   `OffsetIndex`); each should point at the start of the segment batch whose last
//!   offset is `baseOffset + relativeOffset`: checked by reading the segment there.
//! - `.timeindex`: 12-byte entries `timestamp int64, relativeOffset int32`
//!   (`TimeIndex`), both never decreasing.
//! - `.txnindex`: 34-byte entries `version int16, producerId int64, firstOffset int64,
//!   lastOffset int64, lastStableOffset int64` (`TransactionIndex`).
//!   Unused, zeroed slots at the end of a preallocated index end it.
//! - `.snapshot`: `version int16, crc uint32` (CRC-32C of what follows), `count int32`,
//!   then per producer `producerId int64, producerEpoch int16, lastSequence int32,
//!   lastOffset int64, offsetDelta int32, timestamp int64, coordinatorEpoch int32,
//!   currentTxnFirstOffset int64` (`ProducerStateManager`, 46 bytes).
//! - `quorum-state`: JSON of `QuorumStateData` (raft), field names checked against the
//!   definition at its `data_version`.
//! - `leader-epoch-checkpoint`, `*-offset-checkpoint`: a version line, a count line, then
//!   `epoch startOffset` or `topic partition offset` lines.
//! - `partition.metadata`: `version: 0` and `topic_id: <base64 uuid>`.
//! - `meta.properties`: Java properties (`key=value`, `#` comments).

use super::segment::{batch_info, MAX_ENTRY};
use super::{FileKind, Finding, Item, ItemKind, Level, LogOptions, Sink};
use crate::schema::Schema;
use crate::tree::{Buffers, Node, NodeKind, Region, Value};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

fn leaf<'a>(name: &'a str, ty: &'static str, v: Value<'a>, off: usize, len: usize) -> Node<'a> {
    let mut n = Node::leaf(name, ty, v, off, len);
    n.region = Region::ResponseBody;
    n
}

fn group<'a>(
    a: &'a Buffers,
    name: &'a str,
    ty: &'static str,
    off: usize,
    len: usize,
    children: Vec<Node<'a>>,
) -> Node<'a> {
    let mut n = Node::new(name, ty, NodeKind::Group, off);
    n.length = len;
    n.children = a.seal(children);
    n.set_region(Region::ResponseBody);
    n
}

/// Big-endian integer of `n` bytes at `at` (caller checked the length).
fn be(b: &[u8], at: usize, n: usize) -> i64 {
    let mut v: u64 = 0;
    for x in &b[at..at + n] {
        v = (v << 8) | u64::from(*x);
    }
    match n {
        2 => v as u16 as i16 as i64,
        4 => v as u32 as i32 as i64,
        _ => v as i64,
    }
}

/// A fixed-layout entry: `(name, type, width)` fields at `off` of `data`.
fn fixed_entry<'a>(
    a: &'a Buffers,
    name: &'a str,
    data: &'a [u8],
    off: usize,
    layout: &[(&'static str, &'static str, usize)],
) -> Node<'a> {
    let mut at = off;
    let mut children = Vec::with_capacity(layout.len());
    for (n, ty, w) in layout {
        let v = if *ty == "uint32" {
            Value::UInt(be(data, at, *w) as u32 as u64)
        } else {
            Value::Int(be(data, at, *w))
        };
        children.push(leaf(n, ty, v, at, *w));
        at += w;
    }
    group(a, name, "entry", off, at - off, children)
}

/// Reads one small file (whose bytes are `data`) and hands its entries to `sink`.
///
/// # Errors
/// The sink's errors.
pub fn read_small(
    schema: &Schema,
    path: &Path,
    kind: FileKind,
    data: &[u8],
    opts: &LogOptions,
    sink: &mut dyn Sink,
) -> io::Result<()> {
    let mut r = FileReader {
        path,
        kind,
        data,
        sink,
    };
    match kind {
        FileKind::OffsetIndex | FileKind::TimeIndex | FileKind::TxnIndex => r.index(opts),
        FileKind::ProducerSnapshot => r.producer_snapshot(),
        FileKind::QuorumState => r.quorum_state(schema),
        FileKind::LeaderEpochCheckpoint | FileKind::OffsetCheckpoint => r.checkpoint(),
        FileKind::PartitionMetadata | FileKind::MetaProperties => r.properties(),
        FileKind::Segment | FileKind::KraftSnapshot => Ok(()),
    }
}

struct FileReader<'p, 'd, 's> {
    path: &'p Path,
    kind: FileKind,
    data: &'d [u8],
    sink: &'s mut dyn Sink,
}

/// The segment (`.log`) a `.index`/`.timeindex`/`.txnindex` belongs to.
fn segment_of(path: &Path) -> PathBuf {
    path.with_extension("log")
}

/// A segment opened to check index positions against.
struct Segment {
    file: std::fs::File,
    len: u64,
    buf: Vec<u8>,
}

impl Segment {
    /// The batch at `pos`: `Ok((base, last))` when a whole entry with a valid CRC starts
    /// there, `Err(why)` otherwise.
    fn batch_at(&mut self, pos: u64) -> Result<(i64, i64), String> {
        if pos >= self.len {
            return Err(format!(
                "position {pos} is past the end of the segment ({} bytes)",
                self.len
            ));
        }
        let mut head = [0u8; 12];
        self.file
            .seek(SeekFrom::Start(pos))
            .and_then(|_| self.file.read_exact(&mut head))
            .map_err(|_| {
                format!("position {pos}: no whole entry header before the segment's end")
            })?;
        let blen = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        let total = 12
            + u64::try_from(blen)
                .map_err(|_| format!("position {pos} is not at a batch boundary"))?;
        if total > MAX_ENTRY || pos + total > self.len || total < 17 {
            return Err(format!("position {pos} is not at a batch boundary"));
        }
        self.buf.clear();
        self.buf.extend_from_slice(&head);
        self.buf.resize(total as usize, 0);
        self.file
            .read_exact(&mut self.buf[12..])
            .map_err(|e| format!("position {pos}: {e}"))?;
        match batch_info(&self.buf) {
            Some(b) if b.crc_ok => Ok((b.base_offset, b.last_offset)),
            _ => Err(format!("position {pos} is not at a batch boundary (no batch with a valid CRC starts there)")),
        }
    }
}

impl FileReader<'_, '_, '_> {
    fn finding(&mut self, offset: usize, level: Level, message: String) -> io::Result<()> {
        self.sink.finding(&Finding {
            file: self.path.to_path_buf(),
            offset: offset as u64,
            level,
            message,
        })
    }

    fn emit(&mut self, node: Node<'_>) -> io::Result<()> {
        let pos = node.offset;
        let end = node.end().min(self.data.len());
        let mut problems = Vec::new();
        node.walk(&mut |x, _| {
            if let Some(e) = x.error() {
                problems.push((x.offset, Level::Error, format!("{}: {e}", x.name)));
            }
            if let Some(w) = x.warning() {
                problems.push((x.offset, Level::Warning, format!("{}: {w}", x.name)));
            }
        });
        for (o, l, m) in problems {
            self.finding(o, l, m)?;
        }
        self.sink.item(&Item {
            kind: ItemKind::Entry,
            file: self.path,
            file_kind: self.kind,
            position: pos as u64,
            bytes: &self.data[pos.min(end)..end],
            node: Some(node),
            buffers: Vec::new(),
            batch: None,
            topic: None,
        })
    }

    /// A file too short or malformed as a whole: one raw entry with the error.
    fn raw(&mut self, off: usize, msg: String) -> io::Result<()> {
        let a = Buffers::new();
        let d = self.data;
        let mut n = leaf(
            "rest",
            "bytes",
            Value::Bytes(&d[off.min(d.len())..]),
            off,
            d.len().saturating_sub(off),
        );
        n.set_error(a.text(&msg));
        self.emit(n)
    }

    fn index(&mut self, opts: &LogOptions) -> io::Result<()> {
        let (width, layout): (usize, &[(&str, &str, usize)]) = match self.kind {
            FileKind::OffsetIndex => (
                8,
                &[("relativeOffset", "int32", 4), ("position", "int32", 4)],
            ),
            FileKind::TimeIndex => (
                12,
                &[("timestamp", "int64", 8), ("relativeOffset", "int32", 4)],
            ),
            _ => (
                34,
                &[
                    ("version", "int16", 2),
                    ("producerId", "int64", 8),
                    ("firstOffset", "int64", 8),
                    ("lastOffset", "int64", 8),
                    ("lastStableOffset", "int64", 8),
                ],
            ),
        };
        let base = super::base_offset_of(self.path).map(|b| b as i64);
        let mut seg = if self.kind == FileKind::OffsetIndex {
            std::fs::File::open(segment_of(self.path)).ok().map(|file| {
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                Segment {
                    file,
                    len,
                    buf: Vec::new(),
                }
            })
        } else {
            None
        };
        if self.kind == FileKind::OffsetIndex && seg.is_none() && opts.verify {
            self.finding(
                0,
                Level::Info,
                format!(
                    "{} is absent: positions not checked",
                    segment_of(self.path).display()
                ),
            )?;
        }
        let data = self.data;
        let whole = data.len() / width * width;
        let mut prev: Option<(i64, i64)> = None;
        let mut i = 0usize;
        while i * width < whole {
            let off = i * width;
            let e = &data[off..off + width];
            if i > 0 && e.iter().all(|b| *b == 0) {
                let unused = (whole - off) / width;
                self.finding(
                    off,
                    Level::Info,
                    format!("{unused} unused (zeroed) entries from here: a preallocated index"),
                )?;
                break;
            }
            // One small arena per entry: memory stays flat over a large index.
            let a = Buffers::new();
            let mut n = fixed_entry(&a, a.fmt(format_args!("entry[{i}]")), data, off, layout);
            match self.kind {
                FileKind::OffsetIndex => {
                    let rel = be(data, off, 4);
                    let p = be(data, off + 4, 4);
                    if let Some(b) = base {
                        n.children[0].annotation = Some(a.fmt(format_args!("offset {}", b + rel)));
                    }
                    if let Some((pr, pp)) = prev {
                        if rel <= pr || p <= pp {
                            n.set_error(a.fmt(format_args!("entry goes backwards: offset {rel} after {pr}, position {p} after {pp}")));
                        }
                    }
                    prev = Some((rel, p));
                    if let (Some(s), Some(b)) = (seg.as_mut(), base) {
                        match s.batch_at(p as u64) {
                            Ok((bo, lo)) if (bo..=lo).contains(&(b + rel)) => {
                                n.children[1].annotation =
                                    Some(a.fmt(format_args!("batch boundary: batch {bo}..{lo}")));
                            }
                            Ok((bo, lo)) => {
                                n.children[1].annotation =
                                    Some(a.fmt(format_args!("batch boundary: batch {bo}..{lo}")));
                                n.children[1].set_warning(a.fmt(format_args!(
                                    "offset {} is not in the batch at this position ({bo}..{lo})",
                                    b + rel
                                )));
                            }
                            Err(why) => n.children[1].set_error(a.text(&why)),
                        }
                    }
                }
                FileKind::TimeIndex => {
                    let ts = be(data, off, 8);
                    let rel = be(data, off + 8, 4);
                    if let Some(t) = crate::decode::records::format_millis(ts) {
                        n.children[0].annotation = Some(a.text(&t));
                    }
                    if let Some(b) = base {
                        n.children[1].annotation = Some(a.fmt(format_args!("offset {}", b + rel)));
                    }
                    if let Some((pt, pr)) = prev {
                        if ts < pt || rel < pr {
                            n.set_error(a.fmt(format_args!("entry goes backwards: timestamp {ts} after {pt}, offset {rel} after {pr}")));
                        }
                    }
                    prev = Some((ts, rel));
                }
                _ => {}
            }
            self.emit(n)?;
            i += 1;
        }
        if whole < data.len() {
            let k = data.len() - whole;
            self.raw(
                whole,
                format!("{k} bytes at the end, too few for a {width}-byte entry (a cut index?)"),
            )?;
        }
        Ok(())
    }

    fn producer_snapshot(&mut self) -> io::Result<()> {
        let data = self.data;
        if data.len() < 10 {
            return self.raw(
                0,
                format!(
                    "{} bytes, too few for a producer-state snapshot's 10-byte header",
                    data.len()
                ),
            );
        }
        let a = Buffers::new();
        let mut h = fixed_entry(
            &a,
            "header",
            data,
            0,
            &[
                ("version", "int16", 2),
                ("crc", "uint32", 4),
                ("count", "int32", 4),
            ],
        );
        let crc = be(data, 2, 4) as u32;
        let computed = crc32c::crc32c(&data[6..]);
        if crc == computed {
            h.children[1].annotation = Some("valid");
        } else {
            h.children[1].set_error(a.fmt(format_args!(
                "CRC-32C mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}"
            )));
        }
        let version = be(data, 0, 2);
        if version != 1 {
            h.children[0].set_warning(a.fmt(format_args!("version {version}; kwire knows 1")));
        }
        let count = be(data, 6, 4);
        let room = (data.len() - 10) / 46;
        if count < 0 || count as usize > room {
            h.children[2].set_error(a.fmt(format_args!("count {count}, room for {room} entries")));
        }
        self.emit(h)?;
        const LAYOUT: [(&str, &str, usize); 8] = [
            ("producerId", "int64", 8),
            ("producerEpoch", "int16", 2),
            ("lastSequence", "int32", 4),
            ("lastOffset", "int64", 8),
            ("offsetDelta", "int32", 4),
            ("timestamp", "int64", 8),
            ("coordinatorEpoch", "int32", 4),
            ("currentTxnFirstOffset", "int64", 8),
        ];
        let n = (count.max(0) as usize).min(room);
        for i in 0..n {
            let off = 10 + i * 46;
            let a = Buffers::new();
            let mut e = fixed_entry(&a, a.fmt(format_args!("producer[{i}]")), data, off, &LAYOUT);
            if let Some(t) = crate::decode::records::format_millis(be(data, off + 26, 8)) {
                e.children[5].annotation = Some(a.text(&t));
            }
            self.emit(e)?;
        }
        let end = 10 + n * 46;
        if end < data.len() {
            let k = data.len() - end;
            self.raw(end, format!("{k} bytes after the {n} producer entries"))?;
        }
        Ok(())
    }

    /// `version`, `count` and entry lines; each line an entry.
    fn checkpoint(&mut self) -> io::Result<()> {
        let data = self.data;
        let a = Buffers::new();
        let text = match std::str::from_utf8(data) {
            Ok(t) => t,
            Err(e) => return self.raw(e.valid_up_to(), "not UTF-8 text".into()),
        };
        let fields: &[&str] = if self.kind == FileKind::LeaderEpochCheckpoint {
            &["epoch", "startOffset"]
        } else {
            &["topic", "partition", "offset"]
        };
        let mut off = 0usize;
        let mut declared: Option<i64> = None;
        let mut seen = 0i64;
        let mut count_off = 0;
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let body = line.trim_end_matches(['\n', '\r']);
            let mut n = match i {
                0 | 1 => {
                    let name = if i == 0 { "version" } else { "count" };
                    let mut l = leaf(name, "int32", Value::Str(body), off, body.len());
                    match body.trim().parse::<i64>() {
                        Ok(v) => {
                            l.value = Value::Int(v);
                            if i == 0 && v != 0 {
                                l.set_warning(a.fmt(format_args!("version {v}; kwire knows 0")));
                            }
                            if i == 1 {
                                declared = Some(v);
                                count_off = off;
                            }
                        }
                        Err(_) => l.set_error(a.fmt(format_args!("{name} line is not a number"))),
                    }
                    l
                }
                _ => {
                    seen += 1;
                    let mut children = Vec::new();
                    let mut at = off;
                    let parts: Vec<&str> = body.split(' ').collect();
                    for (j, p) in parts.iter().enumerate() {
                        let name = fields.get(j).copied().unwrap_or("extra");
                        let is_num = name != "topic";
                        let mut l = leaf(
                            name,
                            if is_num { "int64" } else { "string" },
                            Value::Str(p),
                            at,
                            p.len(),
                        );
                        if is_num {
                            match p.parse::<i64>() {
                                Ok(v) => l.value = Value::Int(v),
                                Err(_) => l.set_error("not a number"),
                            }
                        }
                        if j >= fields.len() {
                            l.set_error("more fields than the line has");
                        }
                        children.push(l);
                        at += p.len() + 1;
                    }
                    let mut g = group(
                        &a,
                        a.fmt(format_args!("entry[{}]", i - 2)),
                        "line",
                        off,
                        body.len(),
                        children,
                    );
                    if parts.len() < fields.len() {
                        g.set_error(a.fmt(format_args!(
                            "{} fields, {} expected",
                            parts.len(),
                            fields.len()
                        )));
                    }
                    g
                }
            };
            if !line.ends_with('\n') {
                n.set_warning("the last line has no newline (a cut file?)");
            }
            self.emit(n)?;
            off += line.len();
        }
        match declared {
            Some(d) if d != seen => self.finding(
                count_off,
                Level::Error,
                format!("count {d}, but {seen} entries follow"),
            )?,
            None => self.finding(0, Level::Error, "no version and count lines".into())?,
            _ => {}
        }
        Ok(())
    }

    /// `key=value` (meta.properties) or `key: value` (partition.metadata) lines.
    fn properties(&mut self) -> io::Result<()> {
        let data = self.data;
        let a = Buffers::new();
        let text = match std::str::from_utf8(data) {
            Ok(t) => t,
            Err(e) => return self.raw(e.valid_up_to(), "not UTF-8 text".into()),
        };
        let sep = if self.kind == FileKind::PartitionMetadata {
            ':'
        } else {
            '='
        };
        let mut off = 0usize;
        let mut nodes = Vec::new();
        for line in text.split_inclusive('\n') {
            let body = line.trim_end_matches(['\n', '\r']);
            if body.starts_with('#') || body.trim().is_empty() {
                off += line.len();
                continue;
            }
            let n = match body.split_once(sep) {
                Some((k, v)) => {
                    let vt = v.trim_start();
                    let voff = off + k.len() + 1 + (v.len() - vt.len());
                    let mut val = leaf("value", "string", Value::Str(vt), voff, vt.len());
                    if k.ends_with("id") || k.ends_with("_id") {
                        if let Some(u) = base64_uuid(vt) {
                            val.value = Value::Uuid(u);
                            val.annotation = Some(vt);
                            if u == crate::decode::internal_topics::CLUSTER_METADATA_TOPIC_ID
                                && k == "topic_id"
                            {
                                val.annotation =
                                    Some(a.fmt(format_args!("{vt}, __cluster_metadata")));
                            }
                        }
                    }
                    group(&a, k.trim(), "property", off, body.len(), vec![val])
                }
                None => {
                    let mut l = leaf("line", "string", Value::Str(body), off, body.len());
                    l.set_error(a.fmt(format_args!("no '{sep}' in this line")));
                    l
                }
            };
            nodes.push(n);
            off += line.len();
        }
        for n in nodes {
            self.emit(n)?;
        }
        Ok(())
    }

    fn quorum_state(&mut self, schema: &Schema) -> io::Result<()> {
        let data = self.data;
        let a = Buffers::new();
        let v: serde_json::Value = match serde_json::from_slice(data) {
            Ok(v) => v,
            Err(e) => {
                let at = if e.is_eof() {
                    data.len()
                } else {
                    line_col_offset(data, e.line(), e.column())
                };
                return self.raw(at, format!("quorum-state is not whole JSON: {e}"));
            }
        };
        let Some(obj) = v.as_object() else {
            return self.raw(0, "quorum-state is not a JSON object".into());
        };
        let version = obj
            .get("data_version")
            .and_then(|v| v.as_i64())
            .unwrap_or(0);
        let def = schema.resolve_name("QuorumStateData", version as i16);
        let text = std::str::from_utf8(data).unwrap_or("");
        let mut cursor = 0usize;
        for (k, val) in obj {
            let pat = format!("\"{k}\"");
            let at = text[cursor..].find(&pat).map_or(cursor, |i| cursor + i);
            cursor = at + pat.len();
            let end = text[cursor..]
                .find([',', '}'])
                .map_or(text.len(), |i| cursor + i);
            // Arrays hold commas: cover up to their closing bracket.
            let end = if val.is_array() {
                text[cursor..].find(']').map_or(end, |i| cursor + i + 1)
            } else {
                end
            };
            let value = match val {
                serde_json::Value::Number(n) => n.as_i64().map_or(Value::None, Value::Int),
                serde_json::Value::String(_) => {
                    let s = text[cursor..end]
                        .trim_start_matches([':', ' '])
                        .trim_matches('"');
                    match base64_uuid(s) {
                        Some(u) => Value::Uuid(u),
                        None => Value::Str(s),
                    }
                }
                serde_json::Value::Bool(b) => Value::Bool(*b),
                serde_json::Value::Null => Value::Null,
                _ => Value::None,
            };
            let mut n = leaf(a.text(k), "json", value, at, end - at);
            if val.is_array() || val.is_object() {
                n.annotation = Some(a.text(&val.to_string()));
            }
            if k != "data_version" {
                let field = def.and_then(|d| {
                    d.def.fields.iter().find(|f| {
                        let mut c = f.name.chars();
                        c.next()
                            .map(|x| x.to_ascii_lowercase().to_string() + c.as_str())
                            .as_deref()
                            == Some(k.as_str())
                    })
                });
                match (def, field) {
                    (Some(_), Some(f)) if f.versions.contains(version as i16) => {
                        n.ty = a.text(&f.type_name);
                    }
                    (Some(d), _) => n.set_warning(
                        a.fmt(format_args!("not a field of {} v{version}", d.def.name)),
                    ),
                    (None, _) => n.set_warning(a.fmt(format_args!(
                        "QuorumStateData has no version {version} in the schema"
                    ))),
                }
            }
            self.emit(n)?;
        }
        Ok(())
    }
}

/// The byte offset of a 1-based line and column (serde_json's error position).
fn line_col_offset(data: &[u8], line: usize, col: usize) -> usize {
    let mut off = 0;
    for (i, l) in data.split_inclusive(|b| *b == b'\n').enumerate() {
        if i + 1 == line {
            return (off + col.saturating_sub(1)).min(data.len());
        }
        off += l.len();
    }
    data.len()
}

pub use crate::text::base64_uuid;
