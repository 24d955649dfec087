//! From the decoded tree to table rows: the one place `kwire export` reads a
//! [`Message`]'s tree. It reads nodes by name, kind and value only (the `Node` fields
//! every printer reads), so that a change of the tree type touches this file alone.
//!
//! A *partition entry* is a struct (an array element) with an int32 field named
//! `Partition`, `PartitionIndex`, `PartitionId` or `Index` (Produce), or an element of
//! an int32 array named `Partitions` or `PartitionIndexes`, under a struct that names a
//! topic: a string `Name`, `Topic` or `TopicName`, or a uuid `TopicId` (named from an
//! earlier Metadata response as `read` names it). Its records are the RecordBatches (and
//! legacy messages) of its `records` field.

use crate::session::Context;
use crate::tree::{Direction, Message, Node, NodeKind, Value};

use super::table::{Cell, Col, Table, Ty};

fn col(name: &'static str, ty: Ty, nullable: bool) -> Col {
    Col { name, ty, nullable }
}

/// The `messages` table.
pub fn messages_table() -> Table {
    use Ty::*;
    Table {
        name: "messages",
        cols: vec![
            col("message_id", I64, false),
            col("capture", Str, false),
            col("capture_index", I32, false),
            col("message_index", I64, false),
            col("first_frame", I64, false),
            col("last_frame", I64, false),
            col("time", TimestampMicros, false),
            col("time_ns", I64, false),
            col("connection", I64, false),
            col("src_addr", Str, false),
            col("src_port", I32, false),
            col("dst_addr", Str, false),
            col("dst_port", I32, false),
            col("kind", Str, false),
            col("tls", Bool, false),
            col("api_key", I16, true),
            col("api_name", Str, true),
            col("api_version", I16, true),
            col("header_version", I16, false),
            col("correlation_id", I32, true),
            col("client_id", Str, true),
            col("size", I64, false),
            col("latency_ns", I64, true),
            col("latency_ms", F64, true),
            col("throttle_time_ms", I32, true),
            col("error_code", I16, true),
            col("error_name", Str, true),
            col("error_codes", ListI16, false),
            col("error_names", ListStr, false),
            col("decode_errors", I32, false),
            col("first_error", Str, true),
            col("first_error_offset", I64, true),
            col("warnings", I32, false),
            col("incomplete", Bool, false),
            col("guessed", Bool, false),
            col("schema_release", Str, true),
        ],
    }
}

/// The `partitions` table.
pub fn partitions_table() -> Table {
    use Ty::*;
    Table {
        name: "partitions",
        cols: vec![
            col("message_id", I64, false),
            col("capture", Str, false),
            col("kind", Str, false),
            col("api_key", I16, true),
            col("api_name", Str, true),
            col("topic", Str, true),
            col("topic_id", Str, true),
            col("partition", I32, false),
            col("error_code", I16, true),
            col("error_name", Str, true),
            col("fetch_offset", I64, true),
            col("high_watermark", I64, true),
            col("last_stable_offset", I64, true),
            col("log_start_offset", I64, true),
            col("base_offset", I64, true),
            col("committed_offset", I64, true),
            col("offset_value", I64, true),
            col("timestamp_ms", I64, true),
            col("leader_id", I32, true),
            col("batches", I32, true),
            col("records", I64, true),
            col("records_bytes", I64, true),
            col("codec", Str, true),
            col("compressed_bytes", I64, true),
            col("decompressed_bytes", I64, true),
            col("producer_id", I64, true),
            col("producer_epoch", I16, true),
            col("base_sequence", I32, true),
            col("transactional", Bool, true),
            col("control", Bool, true),
        ],
    }
}

/// The columns of a record's own facts, from `record_offset` to `header_keys`, that
/// the captures' `records` table and the log directories' share
/// ([`RecordRow::record_cells`]).
pub(crate) fn record_cols() -> Vec<Col> {
    use Ty::*;
    vec![
        col("record_offset", I64, false),
        col("timestamp", TimestampMicros, true),
        col("timestamp_ms", I64, true),
        col("timestamp_type", Str, true),
        col("control", Bool, false),
        col("key", Bytes, true),
        col("key_length", I32, true),
        col("value_length", I32, true),
        col("header_keys", ListStr, false),
    ]
}

/// The `records` table; `values` adds the `value` column (`--record-values`).
pub fn records_table(values: bool) -> Table {
    use Ty::*;
    let mut cols = vec![
        col("message_id", I64, false),
        col("capture", Str, false),
        col("kind", Str, false),
        col("topic", Str, true),
        col("partition", I32, false),
        col("batch_index", I32, false),
    ];
    cols.extend(record_cols());
    if values {
        cols.push(col("value", Bytes, true));
    }
    Table {
        name: "records",
        cols,
    }
}

/// `message_id` = capture ordinal x 2^40 + message ordinal: the capture's 0-based place
/// on the command line and the message's 0-based place in that capture (the order
/// `kwire read` prints, every message counted whatever is filtered), so the same
/// command gives the same ids on every run however many threads decode.
pub const MESSAGE_ID_SHIFT: u32 = 40;

/// The `message_id` of message `index` of capture `capture`.
pub fn message_id(capture: u32, index: u64) -> i64 {
    ((u64::from(capture) << MESSAGE_ID_SHIFT) | (index & ((1 << MESSAGE_ID_SHIFT) - 1))) as i64
}

/// A `messages` row, owned (a request's row waits for its response's latency).
#[derive(Clone, Debug, PartialEq)]
pub struct MessageRow {
    pub message_id: i64,
    pub capture_index: u32,
    pub message_index: u64,
    pub frames: (u64, u64),
    /// Seconds and nanoseconds since the Unix epoch.
    pub time: (i64, u32),
    pub connection: u32,
    pub src: (String, u16),
    pub dst: (String, u16),
    pub kind: Direction,
    pub tls: bool,
    pub api_key: i16,
    pub api_name: Option<String>,
    pub api_version: i16,
    pub header_version: i16,
    pub correlation_id: Option<i32>,
    pub client_id: Option<String>,
    pub size: u64,
    pub latency_ns: Option<u64>,
    pub throttle_time_ms: Option<i64>,
    pub error_codes: Vec<i64>,
    pub error_names: Vec<String>,
    pub decode_errors: usize,
    pub first_error: Option<(String, usize)>,
    pub warnings: usize,
    pub incomplete: bool,
    pub guessed: bool,
    pub schema_release: Option<String>,
    /// `Acks` of a Produce request, when 0 (no response will come).
    pub acks_zero: bool,
}

impl MessageRow {
    /// The time in nanoseconds since the Unix epoch.
    pub fn time_ns(&self) -> i64 {
        self.time
            .0
            .saturating_mul(1_000_000_000)
            .saturating_add(i64::from(self.time.1))
    }

    /// The row's cells, in [`messages_table`] order.
    pub fn cells<'x>(&'x self, capture: &'x str, names: &'x [&'x str]) -> Vec<Cell<'x>> {
        let opt_i = |v: Option<i64>| v.map_or(Cell::Null, Cell::Int);
        let opt_s = |v: Option<&'x str>| v.map_or(Cell::Null, Cell::Str);
        vec![
            Cell::Int(self.message_id),
            Cell::Str(capture),
            Cell::Int(self.capture_index.into()),
            Cell::Int(self.message_index as i64),
            Cell::Int(self.frames.0 as i64),
            Cell::Int(self.frames.1 as i64),
            Cell::Int(self.time_ns().div_euclid(1000)),
            Cell::Int(self.time_ns()),
            Cell::Int(self.connection.into()),
            Cell::Str(&self.src.0),
            Cell::Int(self.src.1.into()),
            Cell::Str(&self.dst.0),
            Cell::Int(self.dst.1.into()),
            Cell::Str(self.kind.as_str()),
            Cell::Bool(self.tls),
            known(self.api_key),
            opt_s(self.api_name.as_deref()),
            known(self.api_version),
            Cell::Int(self.header_version.into()),
            opt_i(self.correlation_id.map(i64::from)),
            opt_s(self.client_id.as_deref()),
            Cell::Int(self.size as i64),
            opt_i(self.latency_ns.map(|v| v as i64)),
            self.latency_ns
                .map_or(Cell::Null, |v| Cell::F64(v as f64 / 1e6)),
            opt_i(self.throttle_time_ms),
            opt_i(self.error_codes.first().copied()),
            opt_s(names.first().copied()),
            Cell::IntList(&self.error_codes),
            Cell::StrList(names),
            Cell::Int(self.decode_errors as i64),
            opt_s(self.first_error.as_ref().map(|e| e.0.as_str())),
            opt_i(self.first_error.as_ref().map(|e| e.1 as i64)),
            Cell::Int(self.warnings as i64),
            Cell::Bool(self.incomplete),
            Cell::Bool(self.guessed),
            opt_s(self.schema_release.as_deref()),
        ]
    }
}

/// An api_key or api_version, null when unknown (negative), as `read --format json` has it.
fn known<'x>(v: i16) -> Cell<'x> {
    if v < 0 {
        Cell::Null
    } else {
        Cell::Int(v.into())
    }
}

/// `10.0.0.1:51234` or `[::1]:9092` to address and port.
fn endpoint(s: &str) -> (String, u16) {
    match s.parse::<std::net::SocketAddr>() {
        Ok(a) => (a.ip().to_string(), a.port()),
        Err(_) => (s.to_string(), 0),
    }
}

/// The name of an error code node's code: its annotation, or `code N`.
fn code_name(code: i64, name: Option<&str>) -> String {
    name.map_or_else(|| format!("code {code}"), str::to_string)
}

/// The `messages` row of `m`. `client_id` is the request's own, or for a response the
/// one its caller remembered for the connection.
pub fn message_row(m: &Message<'_>, ctx: &Context, capture: u32, index: u64) -> MessageRow {
    let mut client_id = None;
    let mut throttle = None;
    let mut acks_zero = false;
    for part in &m.tree.children {
        match part.kind {
            NodeKind::Header => {
                if let Some(Value::Str(s)) = part.find("client_id").map(|n| &n.value) {
                    client_id = Some(s.to_string());
                }
            }
            NodeKind::Body => {
                for f in &part.children {
                    match (f.name, &f.value) {
                        ("ThrottleTimeMs", Value::Int(v)) => throttle = Some(*v),
                        ("Acks", Value::Int(0)) if m.api_key == 0 => acks_zero = true,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let (mut codes, mut names) = (Vec::new(), Vec::new());
    let (mut errors, mut warnings, mut first_error) = (0, 0, None);
    m.tree.walk(&mut |n, _| {
        if let Some((c, name)) = crate::traffic::error_code(n) {
            codes.push(c);
            names.push(code_name(c, name));
        }
        if let Some(e) = n.error() {
            errors += 1;
            if first_error.is_none() {
                first_error = Some((e.to_string(), n.offset));
            }
        }
        warnings += usize::from(n.warning().is_some());
    });
    MessageRow {
        message_id: message_id(capture, index),
        capture_index: capture,
        message_index: index,
        frames: ctx.frames,
        time: ctx.time,
        connection: ctx.connection,
        src: endpoint(&ctx.src),
        dst: endpoint(&ctx.dst),
        kind: m.direction,
        tls: ctx.tls.is_some(),
        api_key: m.api_key,
        api_name: m.api_name.map(str::to_string),
        api_version: m.api_version,
        header_version: m.header_version,
        correlation_id: m.correlation_id,
        client_id,
        size: m.size as u64,
        latency_ns: ctx.latency.map(|d| d.as_nanos() as u64),
        throttle_time_ms: throttle,
        error_codes: codes,
        error_names: names,
        decode_errors: errors,
        first_error,
        warnings,
        incomplete: ctx.incomplete,
        guessed: m.guess.is_some(),
        schema_release: m.schema_release.map(str::to_string),
        acks_zero,
    }
}

/// A `partitions` row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionRow {
    pub topic: Option<String>,
    pub topic_id: Option<String>,
    pub partition: i64,
    pub error_code: Option<(i64, String)>,
    pub fetch_offset: Option<i64>,
    pub high_watermark: Option<i64>,
    pub last_stable_offset: Option<i64>,
    pub log_start_offset: Option<i64>,
    pub base_offset: Option<i64>,
    pub committed_offset: Option<i64>,
    pub offset: Option<i64>,
    pub timestamp_ms: Option<i64>,
    pub leader_id: Option<i64>,
    /// Present when the entry has a records field.
    pub records: Option<RecordsSummary>,
}

/// What a partition entry's records field holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordsSummary {
    pub batches: i64,
    pub records: i64,
    pub bytes: i64,
    /// The first batch's codec, producer id and epoch, base sequence, flags.
    pub codec: Option<String>,
    pub compressed_bytes: Option<i64>,
    pub decompressed_bytes: Option<i64>,
    pub producer_id: Option<i64>,
    pub producer_epoch: Option<i64>,
    pub base_sequence: Option<i64>,
    pub transactional: Option<bool>,
    pub control: Option<bool>,
}

impl PartitionRow {
    /// The row's cells, in [`partitions_table`] order.
    pub fn cells<'x>(&'x self, m: &'x MessageRow, capture: &'x str) -> Vec<Cell<'x>> {
        let oi = |v: Option<i64>| v.map_or(Cell::Null, Cell::Int);
        let os = |v: Option<&'x str>| v.map_or(Cell::Null, Cell::Str);
        let r = self.records.as_ref();
        vec![
            Cell::Int(m.message_id),
            Cell::Str(capture),
            Cell::Str(m.kind.as_str()),
            known(m.api_key),
            os(m.api_name.as_deref()),
            os(self.topic.as_deref()),
            os(self.topic_id.as_deref()),
            Cell::Int(self.partition),
            oi(self.error_code.as_ref().map(|e| e.0)),
            os(self.error_code.as_ref().map(|e| e.1.as_str())),
            oi(self.fetch_offset),
            oi(self.high_watermark),
            oi(self.last_stable_offset),
            oi(self.log_start_offset),
            oi(self.base_offset),
            oi(self.committed_offset),
            oi(self.offset),
            oi(self.timestamp_ms),
            oi(self.leader_id),
            oi(r.map(|r| r.batches)),
            oi(r.map(|r| r.records)),
            oi(r.map(|r| r.bytes)),
            os(r.and_then(|r| r.codec.as_deref())),
            oi(r.and_then(|r| r.compressed_bytes)),
            oi(r.and_then(|r| r.decompressed_bytes)),
            oi(r.and_then(|r| r.producer_id)),
            oi(r.and_then(|r| r.producer_epoch)),
            oi(r.and_then(|r| r.base_sequence)),
            r.and_then(|r| r.transactional)
                .map_or(Cell::Null, Cell::Bool),
            r.and_then(|r| r.control).map_or(Cell::Null, Cell::Bool),
        ]
    }
}

/// A `records` row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordRow {
    pub topic: Option<String>,
    pub partition: i64,
    pub batch_index: i64,
    pub offset: i64,
    pub timestamp_ms: Option<i64>,
    pub timestamp_type: Option<&'static str>,
    pub control: bool,
    pub key: Option<Vec<u8>>,
    pub key_length: Option<i64>,
    pub value_length: Option<i64>,
    pub header_keys: Vec<String>,
    /// Only with `--record-values`.
    pub value: Option<Vec<u8>>,
}

impl RecordRow {
    /// The row's cells, in [`records_table`] order (`values`: with the value column).
    pub fn cells<'x>(
        &'x self,
        m: &'x MessageRow,
        capture: &'x str,
        header_keys: &'x [&'x str],
        values: bool,
    ) -> Vec<Cell<'x>> {
        let mut c = vec![
            Cell::Int(m.message_id),
            Cell::Str(capture),
            Cell::Str(m.kind.as_str()),
            self.topic.as_deref().map_or(Cell::Null, Cell::Str),
            Cell::Int(self.partition),
            Cell::Int(self.batch_index),
        ];
        c.extend(self.record_cells(header_keys));
        if values {
            c.push(self.value_cell());
        }
        c
    }

    /// The cells of [`record_cols`].
    pub(crate) fn record_cells<'x>(&'x self, header_keys: &'x [&'x str]) -> [Cell<'x>; 9] {
        let oi = |v: Option<i64>| v.map_or(Cell::Null, Cell::Int);
        [
            Cell::Int(self.offset),
            oi(self.timestamp_ms.and_then(|t| t.checked_mul(1000))),
            oi(self.timestamp_ms),
            self.timestamp_type.map_or(Cell::Null, Cell::Str),
            Cell::Bool(self.control),
            self.key.as_deref().map_or(Cell::Null, Cell::Bytes),
            oi(self.key_length),
            oi(self.value_length),
            Cell::StrList(header_keys),
        ]
    }

    /// The `value` column's cell.
    pub(crate) fn value_cell(&self) -> Cell<'_> {
        self.value.as_deref().map_or(Cell::Null, Cell::Bytes)
    }
}

/// Where record rows go, one at a time, as they are read (so that a message of millions
/// of records holds no more of them than the table's row group).
pub type RecordSink<'s> = Option<&'s mut dyn FnMut(RecordRow)>;

/// The bytes of a node: buffer id, offset and length to the slice, if it is there.
pub type NodeBytes<'b> = &'b dyn Fn(u32, usize, usize) -> Option<&'b [u8]>;

/// The partition entries of `m` and, when `records` is given, their records (every
/// record: those the node budget folded into a `Record[i..j]` leaf are read from the
/// leaf's bytes).
pub fn partition_rows(
    m: &Message<'_>,
    mut records: RecordSink<'_>,
    values: bool,
) -> Vec<PartitionRow> {
    let mut out = Vec::new();
    let bytes = |id: u32, off: usize, len: usize| m.buffer(id).get(off..off.checked_add(len)?);
    if let Some(body) = m.tree.children.iter().find(|n| n.kind == NodeKind::Body) {
        let mut topic = Topic::default();
        let mut w = Entries {
            out: &mut out,
            records: &mut records,
            values,
            bytes: &bytes,
        };
        w.walk(body, &mut topic);
    }
    out
}

/// What the walk over a message's entries writes to.
struct Entries<'w, 's, 'b> {
    out: &'w mut Vec<PartitionRow>,
    records: &'w mut RecordSink<'s>,
    values: bool,
    bytes: NodeBytes<'b>,
}

/// The topic a struct names, for the entries under it.
#[derive(Clone, Default)]
struct Topic {
    name: Option<String>,
    id: Option<String>,
}

impl Topic {
    fn named(&self) -> bool {
        self.name.is_some() || self.id.is_some()
    }
}

/// A struct's own topic fields, if it has any.
fn topic_of(n: &Node<'_>) -> Option<Topic> {
    let mut t = Topic::default();
    for c in &n.children {
        match (c.name, &c.value) {
            ("Name" | "Topic" | "TopicName", Value::Str(s)) => t.name = Some(s.to_string()),
            ("TopicId", Value::Uuid(u)) => {
                t.id = Some(u.to_string());
                if t.name.is_none() {
                    t.name = c
                        .annotation
                        .and_then(|a| a.strip_prefix("topic "))
                        .map(str::to_string);
                }
            }
            _ => {}
        }
    }
    t.named().then_some(t)
}

/// The integer value of `n`'s child `name`.
fn child_int(n: &Node<'_>, name: &str) -> Option<i64> {
    n.children
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| int(&c.value))
}

fn int(v: &Value<'_>) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

impl Entries<'_, '_, '_> {
    fn walk(&mut self, n: &Node<'_>, topic: &mut Topic) {
        let own = topic_of(n);
        let saved = own.map(|t| std::mem::replace(topic, t));
        if topic.named() && n.kind == NodeKind::Struct {
            if let Some(row) = self.entry(n, topic) {
                self.out.push(row);
            }
        }
        for c in &n.children {
            if c.kind == NodeKind::Array
                && topic.named()
                && matches!(c.name, "Partitions" | "PartitionIndexes")
            {
                // An int32 array of partition indexes.
                for e in &c.children {
                    if let (true, Some(p)) = (e.name != "length", int(&e.value)) {
                        self.out.push(PartitionRow {
                            topic: topic.name.clone(),
                            topic_id: topic.id.clone(),
                            partition: p,
                            ..PartitionRow::default()
                        });
                    }
                }
            }
            if matches!(c.kind, NodeKind::Struct | NodeKind::Array | NodeKind::Body) {
                self.walk(c, topic);
            }
        }
        if let Some(t) = saved {
            *topic = t;
        }
    }

    /// The row of partition entry `n`, if it is one.
    fn entry(&mut self, n: &Node<'_>, topic: &Topic) -> Option<PartitionRow> {
        let partition = n.children.iter().find_map(|c| match c.name {
            "Partition" | "PartitionIndex" | "PartitionId" | "Index" => int(&c.value),
            _ => None,
        })?;
        let mut row = PartitionRow {
            topic: topic.name.clone(),
            topic_id: topic.id.clone(),
            partition,
            ..PartitionRow::default()
        };
        for c in &n.children {
            let v = int(&c.value);
            match c.name {
                "ErrorCode" => {
                    row.error_code = v.map(|code| {
                        let name = if code == 0 {
                            "NONE".to_string()
                        } else {
                            code_name(code, c.annotation)
                        };
                        (code, name)
                    })
                }
                "FetchOffset" => row.fetch_offset = v,
                "HighWatermark" => row.high_watermark = v,
                "LastStableOffset" => row.last_stable_offset = v,
                "LogStartOffset" => row.log_start_offset = v,
                "BaseOffset" => row.base_offset = v,
                "CommittedOffset" => row.committed_offset = v,
                "Offset" => row.offset = v,
                "Timestamp" => row.timestamp_ms = v,
                "LeaderId" => row.leader_id = v,
                _ if c.ty == "records" => {
                    row.records = Some(summarise(c, &row, self.records, self.values, self.bytes));
                }
                _ => {}
            }
        }
        Some(row)
    }
}

/// The batches of a records field: RecordBatch v2 and legacy messages.
fn summarise(
    field: &Node<'_>,
    entry: &PartitionRow,
    records: &mut RecordSink<'_>,
    values: bool,
    bytes: NodeBytes<'_>,
) -> RecordsSummary {
    let mut s = RecordsSummary {
        bytes: field.length as i64
            - field
                .children
                .iter()
                .find(|c| c.name == "length")
                .map_or(0, |c| c.length as i64),
        ..RecordsSummary::default()
    };
    let mut first = true;
    for (bi, b) in field
        .children
        .iter()
        .filter(|b| b.name == "RecordBatch" || b.name == "Message")
        .enumerate()
    {
        s.batches += 1;
        let get = |name: &str| child_int(b, name);
        let attrs = get("attributes").unwrap_or(0);
        if first {
            first = false;
            s.codec = Some(crate::decode::compress::Codec::from_attributes(attrs).name());
            if b.name == "RecordBatch" {
                s.producer_id = get("producerId");
                s.producer_epoch = get("producerEpoch");
                s.base_sequence = get("baseSequence");
                s.transactional = Some(attrs & 0x10 != 0);
                s.control = Some(attrs & 0x20 != 0);
            }
        }
        let mut batch = Batch::of(b, entry, bi as i64);
        b.walk(&mut |n, _| {
            if n.name == "compressed records" {
                *s.compressed_bytes.get_or_insert(0) += n.length as i64;
            } else if n.name.ends_with("(decompressed)") {
                *s.decompressed_bytes.get_or_insert(0) += n.length as i64;
            }
        });
        count_records(b, &mut batch, &mut s.records, records, values, bytes);
    }
    s
}

/// What a record's row takes from its batch (a `RecordBatch` or legacy `Message` node)
/// and its partition entry.
pub(crate) struct Batch<'e> {
    entry: &'e PartitionRow,
    index: i64,
    base_offset: i64,
    base_ts: Option<i64>,
    max_ts: Option<i64>,
    log_append: bool,
    v2: bool,
    control: bool,
}

impl<'e> Batch<'e> {
    /// Batch node `b`, the `index`th of partition entry `entry` (whose topic and
    /// partition the rows take).
    pub(crate) fn of(b: &Node<'_>, entry: &'e PartitionRow, index: i64) -> Batch<'e> {
        let get = |name: &str| child_int(b, name);
        let attrs = get("attributes").unwrap_or(0);
        Batch {
            entry,
            index,
            base_offset: get("baseOffset").or_else(|| get("offset")).unwrap_or(0),
            base_ts: get("baseTimestamp").or_else(|| get("timestamp")),
            max_ts: get("maxTimestamp"),
            log_append: attrs & 0x08 != 0,
            v2: b.name == "RecordBatch",
            control: attrs & 0x20 != 0,
        }
    }
}

/// Counts (and, with `records`, makes rows of) the records under batch node `b`: the
/// `Record[i]` nodes of a v2 batch and the records of its folded `Record[i..j]` leaves
/// (read from their bytes, which `bytes` gives), the innermost messages of a legacy one.
pub(crate) fn count_records(
    b: &Node<'_>,
    batch: &mut Batch<'_>,
    count: &mut i64,
    records: &mut RecordSink<'_>,
    values: bool,
    bytes: NodeBytes<'_>,
) {
    if !batch.v2 {
        // A legacy message: itself, or the messages its compressed value holds.
        let inner: Vec<&Node<'_>> = b
            .children
            .iter()
            .filter(|c| c.name.ends_with("(decompressed)"))
            .flat_map(|g| g.children.iter().filter(|m| m.name == "Message"))
            .collect();
        if inner.is_empty() {
            *count += 1;
            if let Some(out) = records.as_deref_mut() {
                out(record_row(b, batch, values));
            }
        } else {
            for m in inner {
                count_records(m, batch, count, records, values, bytes);
            }
        }
        return;
    }
    for g in b.children.iter().filter(|c| c.ty == "records") {
        // The group's value is the count of records the decoder read. Below
        // `Detail::Full` a record that decodes cleanly has no node, and only the
        // count of those is added here (none are left at `Detail::Full`, where every
        // record read is a `Record[i]` node or in a folded leaf): the rows of the
        // `records` table need the full tree.
        let mut kept = 0u64;
        for r in &g.children {
            if r.ty == "Record" {
                kept += 1;
                *count += 1;
                if let Some(out) = records.as_deref_mut() {
                    out(record_row(r, batch, values));
                }
            } else if r.ty == "folded" && r.name.starts_with("Record[") {
                if let Value::Count(n) = r.value {
                    kept += n;
                }
                let Some(data) = bytes(r.buffer, r.offset, r.length) else {
                    continue;
                };
                let want = match r.value {
                    Value::Count(n) => n,
                    _ => u64::MAX,
                };
                let mut rest = data;
                let mut seen = 0u64;
                while seen < want && !rest.is_empty() {
                    let Some((used, raw)) = RawRecord::parse(rest) else {
                        break;
                    };
                    rest = &rest[used..];
                    seen += 1;
                    *count += 1;
                    if let Some(out) = records.as_deref_mut() {
                        out(raw.row(batch, values));
                    }
                }
            }
        }
        if let Value::Count(read) = g.value {
            *count += read.saturating_sub(kept) as i64;
        }
    }
}

/// A v2 record read from its bytes (Kafka's `DefaultRecord`: length varint, attributes
/// int8, timestampDelta varlong, offsetDelta varint, key and value as varint-length
/// bytes, a varint count of headers each a varint-length key and value): what a
/// `records` row takes from it. For the records a node budget folded, which the decoder
/// read and checked but kept no nodes of.
struct RawRecord<'r> {
    timestamp_delta: i64,
    offset_delta: i64,
    key: Option<&'r [u8]>,
    value: Option<&'r [u8]>,
    header_keys: Vec<String>,
}

impl<'r> RawRecord<'r> {
    /// The record at the start of `b` and the bytes it takes; `None` when it does not
    /// read as a record (the folded leaf's error says why).
    fn parse(b: &'r [u8]) -> Option<(usize, RawRecord<'r>)> {
        fn varint(b: &[u8], at: &mut usize) -> Option<i64> {
            let mut v: u64 = 0;
            for i in 0..10 {
                let x = *b.get(*at)?;
                *at += 1;
                v |= u64::from(x & 0x7f) << (7 * i);
                if x & 0x80 == 0 {
                    return Some((v >> 1) as i64 ^ -((v & 1) as i64));
                }
            }
            None
        }
        fn sized<'x>(b: &'x [u8], at: &mut usize) -> Option<Option<&'x [u8]>> {
            let n = varint(b, at)?;
            if n < 0 {
                return Some(None);
            }
            let end = at.checked_add(usize::try_from(n).ok()?)?;
            let s = b.get(*at..end)?;
            *at = end;
            Some(Some(s))
        }
        let mut at = 0;
        let len = usize::try_from(varint(b, &mut at)?).ok()?;
        let end = at.checked_add(len)?;
        let body = b.get(..end)?;
        at += 1; // attributes
        let timestamp_delta = varint(body, &mut at)?;
        let offset_delta = varint(body, &mut at)?;
        let key = sized(body, &mut at)?;
        let value = sized(body, &mut at)?;
        let headers = varint(body, &mut at)?;
        let mut header_keys = Vec::new();
        for _ in 0..headers.max(0) {
            let k = sized(body, &mut at)?;
            sized(body, &mut at)?;
            header_keys.push(String::from_utf8_lossy(k.unwrap_or_default()).into_owned());
        }
        Some((
            end,
            RawRecord {
                timestamp_delta,
                offset_delta,
                key,
                value,
                header_keys,
            },
        ))
    }

    /// Its row, as [`record_row`] makes one from a record's nodes.
    fn row(self, b: &Batch<'_>, values: bool) -> RecordRow {
        let ts = if b.log_append {
            b.max_ts
        } else {
            b.base_ts.map(|a| a.saturating_add(self.timestamp_delta))
        };
        RecordRow {
            topic: b.entry.topic.clone(),
            partition: b.entry.partition,
            batch_index: b.index,
            offset: b.base_offset.saturating_add(self.offset_delta),
            timestamp_ms: ts,
            timestamp_type: Some(if b.log_append {
                "LogAppendTime"
            } else {
                "CreateTime"
            }),
            control: b.control,
            key: self.key.map(<[u8]>::to_vec),
            key_length: self.key.map(|k| k.len() as i64),
            value_length: self.value.map(|v| v.len() as i64),
            header_keys: self.header_keys,
            value: if values {
                self.value.map(<[u8]>::to_vec)
            } else {
                None
            },
        }
    }
}

fn record_row(r: &Node<'_>, b: &Batch<'_>, values: bool) -> RecordRow {
    let get = |name: &str| r.children.iter().find(|c| c.name == name);
    let geti = |name: &str| get(name).and_then(|c| int(&c.value));
    let (offset, ts) = if b.v2 {
        let ts = if b.log_append {
            b.max_ts
        } else {
            b.base_ts
                .zip(geti("timestampDelta"))
                .map(|(a, d)| a.saturating_add(d))
        };
        (
            b.base_offset
                .saturating_add(geti("offsetDelta").unwrap_or(0)),
            ts,
        )
    } else {
        (geti("offset").unwrap_or(b.base_offset), geti("timestamp"))
    };
    fn bytes<'v>(n: Option<&Node<'v>>) -> Option<&'v [u8]> {
        match n.map(|n| &n.value) {
            Some(Value::Bytes(v)) => Some(*v),
            _ => None,
        }
    }
    let key = bytes(get("key"));
    let value = bytes(get("value"));
    let mut header_keys = Vec::new();
    for h in r.children.iter().filter(|c| c.ty == "Header") {
        if let Some(Value::Str(k)) = h
            .children
            .iter()
            .find(|c| c.name == "headerKey")
            .map(|c| &c.value)
        {
            header_keys.push(k.to_string());
        }
    }
    let timestamp_type = if b.v2 || geti("timestamp").is_some() {
        let la = if b.v2 {
            b.log_append
        } else {
            geti("attributes").unwrap_or(0) & 0x08 != 0
        };
        Some(if la { "LogAppendTime" } else { "CreateTime" })
    } else {
        None
    };
    RecordRow {
        topic: b.entry.topic.clone(),
        partition: b.entry.partition,
        batch_index: b.index,
        offset,
        timestamp_ms: ts,
        timestamp_type,
        control: b.control,
        key: key.map(<[u8]>::to_vec),
        key_length: key.map(|k| k.len() as i64),
        value_length: value.map(|v| v.len() as i64),
        header_keys,
        value: if values {
            value.map(<[u8]>::to_vec)
        } else {
            None
        },
    }
}
