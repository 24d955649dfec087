//! `kwire export` of Kafka log directories and files: the batches of segments and KRaft
//! snapshots ([`crate::log`]) as a `batches` table, and their records as a `records`
//! table whose columns are those of the capture export's `records` where they mean the
//! same (docs/parquet-format.md, "Log directories").
//!
//! [`LogExport`] is a [`Sink`] of [`crate::log::read_paths`]: each batch becomes one
//! `batches` row and (with `--records`) one `records` row per record, written as it
//! comes, so memory stays flat however large the segments. Entries of the other files
//! (indexes, producer snapshots, text files) are not exported.

use super::rows::{count_records, Batch, PartitionRow, RecordRow};
use super::table::{Cell, Table, Ty};
use super::{ExportOptions, ExportSummary, TableSet};
use crate::log::{self, Finding, Item, ItemKind, Sink};
use crate::tree::Node;
use std::io;

fn col(name: &'static str, ty: Ty, nullable: bool) -> super::table::Col {
    super::table::Col { name, ty, nullable }
}

/// The `batches` table: one row per RecordBatch (or legacy message) of a segment or
/// KRaft snapshot.
pub fn batches_table() -> Table {
    use Ty::*;
    Table {
        name: "batches",
        cols: vec![
            col("batch_id", I64, false),
            col("file", Str, false),
            col("file_kind", Str, false),
            col("topic", Str, true),
            col("partition", I32, true),
            col("position", I64, false),
            col("size", I64, false),
            col("magic", I16, true),
            col("base_offset", I64, true),
            col("last_offset", I64, true),
            col("records_count", I32, true),
            col("records", I64, false),
            col("crc", I64, true),
            col("crc_valid", Bool, true),
            col("codec", Str, true),
            col("timestamp_type", Str, true),
            col("transactional", Bool, true),
            col("control", Bool, true),
            col("leader_epoch", I32, true),
            col("producer_id", I64, true),
            col("producer_epoch", I16, true),
            col("base_sequence", I32, true),
            col("base_timestamp", TimestampMicros, true),
            col("max_timestamp", TimestampMicros, true),
            col("max_timestamp_ms", I64, true),
            col("record_types", ListStr, false),
            col("decode_errors", I32, false),
            col("first_error", Str, true),
            col("first_error_offset", I64, true),
            col("warnings", I32, false),
        ],
    }
}

/// The `records` table of a log export; `values` adds the `value` column.
pub fn log_records_table(values: bool) -> Table {
    use Ty::*;
    let mut cols = vec![
        col("batch_id", I64, false),
        col("file", Str, false),
        col("topic", Str, true),
        col("partition", I32, true),
        col("batch_position", I64, false),
    ];
    cols.extend(super::rows::record_cols());
    cols.push(col("record_type", Str, false));
    if values {
        cols.push(col("value", Bytes, true));
    }
    Table {
        name: "records",
        cols,
    }
}

/// The partition of a partition folder's name (`__consumer_offsets-31` -> 31).
fn partition_of(path: &std::path::Path) -> Option<i64> {
    let name = path.parent()?.file_name()?.to_str()?;
    log::topic_of_folder(name)?;
    name.rsplit_once('-')?.1.parse().ok()
}

/// The types of a RecordBatch's records, in the order [`count_records`] finds them:
/// each `Record[i]` as `kwire stats` names it.
fn record_types(b: &Node<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for g in b.children.iter().filter(|c| c.ty == "records") {
        for r in g.children.iter().filter(|r| r.ty == "Record") {
            out.push(crate::tree::record_type(r));
        }
    }
    out
}

/// The export of the batches of log files, in the order they are read.
pub struct LogExport {
    batches: TableSet,
    records: Option<TableSet>,
    values: bool,
    topic: Option<String>,
    next: i64,
    /// The first write error: the read stops at it.
    failed: Option<String>,
}

impl LogExport {
    /// Starts the export into `o.out` (`batches/part-00000-00000.parquet`, and
    /// `records/...` with `o.records`); `topic` is `--topic` (else each partition
    /// folder's name gives it).
    ///
    /// # Errors
    /// A file cannot be created.
    pub fn new(o: &ExportOptions, topic: Option<String>) -> Result<LogExport, String> {
        let meta = || {
            vec![(
                "kwire.batch_id",
                "the batch's 0-based place in the read (the order kwire log prints)".to_string(),
            )]
        };
        let mut batches = TableSet::with_meta(batches_table(), o, 0, meta());
        batches.file("")?;
        let mut records = o
            .records
            .then(|| TableSet::with_meta(log_records_table(o.record_values), o, 0, meta()));
        if let Some(r) = records.as_mut() {
            r.file("")?;
        }
        Ok(LogExport {
            batches,
            records,
            values: o.record_values,
            topic,
            next: 0,
            failed: None,
        })
    }

    fn add(&mut self, it: &Item<'_>) -> Result<(), String> {
        let id = self.next;
        self.next += 1;
        let file = it.file.display().to_string();
        let topic = log::topic_name_of_file(it.file, self.topic.as_deref()).map(str::to_string);
        let partition = partition_of(it.file);
        let entry = PartitionRow {
            topic: topic.clone(),
            partition: partition.unwrap_or(-1),
            ..PartitionRow::default()
        };
        let mut recs: Vec<RecordRow> = Vec::new();
        let mut found = 0i64;
        let mut types = Vec::new();
        let (mut errors, mut warnings, mut first_error) = (0i64, 0i64, None);
        if let Some(n) = &it.node {
            let mut batch = Batch::of(n, &entry, 0);
            count_records(
                n,
                &mut batch,
                &mut found,
                &mut self.records.as_ref().map(|_| &mut recs),
                self.values,
            );
            types = if n.name == "RecordBatch" {
                record_types(n)
            } else {
                vec!["legacy message".to_string(); found.max(0) as usize]
            };
            n.walk(&mut |x, _| {
                if let Some(e) = x.error() {
                    errors += 1;
                    first_error.get_or_insert((e.to_string(), x.offset as i64));
                }
                warnings += i64::from(x.warning().is_some());
            });
        }
        let b = it.batch.as_ref();
        if b.is_some_and(|b| !b.crc_ok) && it.node.is_none() {
            errors += 1;
            first_error.get_or_insert(("CRC mismatch".to_string(), it.position as i64));
        }
        let mut distinct: Vec<&str> = Vec::new();
        for t in &types {
            if !distinct.contains(&t.as_str()) {
                distinct.push(t);
            }
        }
        let oi = |v: Option<i64>| v.map_or(Cell::Null, Cell::Int);
        let ts = |t: i64| (t >= 0).then(|| t.checked_mul(1000)).flatten();
        let codec = b.map(|b| b.compression());
        let v2 = b.filter(|b| b.magic == 2);
        let row = [
            Cell::Int(id),
            Cell::Str(&file),
            Cell::Str(it.file_kind.as_str()),
            topic.as_deref().map_or(Cell::Null, Cell::Str),
            oi(partition),
            Cell::Int(it.position as i64),
            Cell::Int(it.bytes.len() as i64),
            oi(b.map(|b| b.magic.into())),
            oi(b.map(|b| b.base_offset)),
            oi(b.map(|b| b.last_offset)),
            oi(b.map(|b| b.count.into())),
            Cell::Int(found),
            oi(b.map(|b| b.crc.into())),
            b.map_or(Cell::Null, |b| Cell::Bool(b.crc_ok)),
            codec.as_deref().map_or(Cell::Null, Cell::Str),
            b.filter(|b| b.magic > 0).map_or(Cell::Null, |b| {
                Cell::Str(if b.attributes & 0x08 != 0 {
                    "LogAppendTime"
                } else {
                    "CreateTime"
                })
            }),
            v2.map_or(Cell::Null, |b| Cell::Bool(b.is_transactional())),
            v2.map_or(Cell::Null, |b| Cell::Bool(b.is_control())),
            oi(v2.map(|b| b.leader_epoch.into())),
            oi(v2.map(|b| b.producer.0)),
            oi(v2.map(|b| b.producer.1.into())),
            oi(v2.map(|b| b.producer.2.into())),
            oi(b.and_then(|b| ts(b.base_timestamp))),
            oi(b.and_then(|b| ts(b.max_timestamp))),
            oi(b.map(|b| b.max_timestamp).filter(|t| *t >= 0)),
            Cell::StrList(&distinct),
            Cell::Int(errors),
            first_error
                .as_ref()
                .map_or(Cell::Null, |e| Cell::Str(e.0.as_str())),
            oi(first_error.as_ref().map(|e| e.1)),
            Cell::Int(warnings),
        ];
        self.batches.push("", &row)?;
        if let Some(t) = self.records.as_mut() {
            for (i, r) in recs.iter().enumerate() {
                let keys: Vec<&str> = r.header_keys.iter().map(String::as_str).collect();
                let ty = types.get(i).map_or("record", String::as_str);
                let mut c = vec![
                    Cell::Int(id),
                    Cell::Str(&file),
                    topic.as_deref().map_or(Cell::Null, Cell::Str),
                    oi(partition),
                    Cell::Int(it.position as i64),
                ];
                c.extend(r.record_cells(&keys));
                c.push(Cell::Str(ty));
                if self.values {
                    c.push(r.value_cell());
                }
                t.push("", &c)?;
            }
        }
        Ok(())
    }

    /// Finishes the files: `rows` is batches, 0, records.
    ///
    /// # Errors
    /// A write error during the read or now; the files are removed then.
    pub fn finish(mut self) -> Result<ExportSummary, String> {
        if let Some(e) = self.failed.take() {
            self.abandon();
            return Err(e);
        }
        super::finish_tables([Some(self.batches), None, self.records])
    }

    /// Gives up: removes every file written or being written.
    pub fn abandon(&mut self) {
        for t in std::iter::once(&mut self.batches).chain(self.records.as_mut()) {
            t.abandon();
            t.open.clear();
        }
    }
}

impl Sink for LogExport {
    fn item(&mut self, it: &Item<'_>) -> io::Result<()> {
        if it.kind != ItemKind::Batch {
            return Ok(());
        }
        self.add(it).map_err(|e| {
            self.failed.get_or_insert(e.clone());
            io::Error::other(e)
        })
    }

    /// Findings are not the tables' business: a caller that shows them wraps this sink
    /// in [`log::Notify`].
    fn finding(&mut self, _: &Finding) -> io::Result<()> {
        Ok(())
    }
}
