//! `kwire export`: the decoded messages of captures as Parquet tables (`messages`,
//! `partitions`, `records`), for DuckDB, Spark, Trino and the like. The layout is in
//! `docs/parquet-format.md`.
//!
//! Export is one more output of the decoded tree: the command line feeds it the same
//! messages, in the same order, with the same pairing and topic-id naming, as `kwire
//! read` prints ([`CaptureExport::add`] takes a [`Message`] and its [`Context`]).
//! [`rows`] reads the tree into rows; [`table`] writes the rows. Each capture is
//! exported by its own [`CaptureExport`], into files of its own
//! (`part-CCCCC-NNNNN.parquet`, `CCCCC` the capture's ordinal), so captures can be
//! exported at once on several threads without sharing a writer.
//!
//! Memory stays flat: rows are buffered up to one row group per open file (see
//! [`table::FileOptions`]), at most [`ExportOptions::max_open_files`] files are open
//! per table (the least recently used one is finished when another is needed), and a
//! request's `messages` row waits for its response (for the latency) among at most
//! [`MAX_WAITING`] rows.

pub mod log;
pub mod rows;
pub mod table;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use crate::session::Context;
use crate::tree::{Direction, Message};

use rows::{MessageRow, PartitionRow, RecordRow};
use table::{Cell, FileOptions, Table, TableFile};

/// How many `messages` rows may wait for a request's response before the oldest is
/// written without its latency.
pub const MAX_WAITING: usize = 8192;

/// Connections whose client_id is remembered (for their responses' rows) before the
/// memory is cleared.
const MAX_CLIENT_IDS: usize = 1 << 20;

/// `--partition-by`: the Hive-style folder level under each table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionBy {
    /// `hour=2026-11-29T14`: the UTC hour of the message's time.
    Hour,
    /// `api=Fetch`: the API name (`api_key_N` for a key kwire does not know, `unknown`
    /// for a response whose request is not in the capture).
    Api,
    /// `capture=broker-1.pcap`: the capture as given on the command line, escaped as
    /// Hive escapes folder names.
    Capture,
}

impl PartitionBy {
    /// The folder's key (`hour`, `api`, `capture`).
    pub fn key(&self) -> &'static str {
        match self {
            PartitionBy::Hour => "hour",
            PartitionBy::Api => "api",
            PartitionBy::Capture => "capture",
        }
    }
}

/// What to export and how.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// The output folder (`DIR/messages`, `DIR/partitions`, `DIR/records`).
    pub out: PathBuf,
    /// Write the `records` table (`--records`).
    pub records: bool,
    /// Give the `records` table a `value` column (`--record-values`).
    pub record_values: bool,
    /// Hive-style partition folders (`--partition-by`).
    pub partition_by: Option<PartitionBy>,
    /// Files open at once per table and capture (`--max-open-files`, at least 1).
    pub max_open_files: usize,
    /// Compression and row-group bounds.
    pub file: FileOptions,
}

/// What one capture's export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Rows per table: messages, partitions, records.
    pub rows: [u64; 3],
    /// The files written, final names.
    pub files: Vec<PathBuf>,
}

/// Hive's escaping of a partition folder's value: `%XX` for control characters and
/// `"#%'*/:=?\{[]^` and DEL, as Spark, Hive and DuckDB read them back.
pub fn hive_escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        if c < ' ' || "\"#%'*/:=?\\\x7f{[]^".contains(c) {
            s.push_str(&format!("%{:02X}", c as u32));
        } else {
            s.push(c);
        }
    }
    if s.is_empty() {
        // Hive's name for a null or empty partition value.
        s.push_str("__HIVE_DEFAULT_PARTITION__");
    }
    s
}

/// The files of one table for one capture: one file, or with `--partition-by` one per
/// partition value, at most `max_open` of them open at once.
struct TableSet {
    table: Table,
    root: PathBuf,
    by: Option<PartitionBy>,
    capture_index: u32,
    meta: Vec<(&'static str, String)>,
    opts: FileOptions,
    max_open: usize,
    /// Open files: partition value, file, last use.
    open: Vec<(String, TableFile, u64)>,
    /// The next file number per partition value.
    seq: HashMap<String, u32>,
    tick: u64,
    rows: u64,
    done: Vec<PathBuf>,
}

impl TableSet {
    fn new(table: Table, o: &ExportOptions, capture_index: u32, capture: &str) -> TableSet {
        let meta = vec![
            ("kwire.capture", capture.to_string()),
            ("kwire.capture_index", capture_index.to_string()),
            (
                "kwire.message_id",
                format!(
                    "capture_index * 2^{} + message_index",
                    rows::MESSAGE_ID_SHIFT
                ),
            ),
            (
                "kwire.partition_by",
                o.partition_by.map_or("none", |b| b.key()).to_string(),
            ),
        ];
        TableSet::with_meta(table, o, capture_index, meta)
    }

    /// A table's files with these key-value metadata (`kwire.format_version` and
    /// `kwire.table` are added to every file).
    fn with_meta(
        table: Table,
        o: &ExportOptions,
        capture_index: u32,
        meta: Vec<(&'static str, String)>,
    ) -> TableSet {
        let by = o.partition_by;
        // Partitioned, each file holds a share of the buffer budget.
        let mut opts = o.file.clone();
        if by.is_some() {
            opts.row_group_bytes = (opts.row_group_bytes / o.max_open_files.max(1)).max(64 << 10);
        }
        TableSet {
            root: o.out.join(table.name),
            table,
            by,
            capture_index,
            meta,
            opts,
            max_open: o.max_open_files.max(1),
            open: Vec::new(),
            seq: HashMap::new(),
            tick: 0,
            rows: 0,
            done: Vec::new(),
        }
    }

    fn path(&mut self, value: &str) -> PathBuf {
        let n = self.seq.entry(value.to_string()).or_insert(0);
        let name = format!("part-{:05}-{:05}.parquet", self.capture_index, *n);
        *n += 1;
        match self.by {
            Some(b) => self
                .root
                .join(format!("{}={}", b.key(), hive_escape(value)))
                .join(name),
            None => self.root.join(name),
        }
    }

    /// The open file for partition value `value`, opening it (and finishing the least
    /// recently used one when `max_open` are open).
    fn file(&mut self, value: &str) -> Result<&mut TableFile, String> {
        self.tick += 1;
        let i = match self.open.iter().position(|(v, _, _)| v == value) {
            Some(i) => i,
            None => {
                if self.open.len() >= self.max_open {
                    let lru = (0..self.open.len())
                        .min_by_key(|&i| self.open[i].2)
                        .unwrap_or(0);
                    let (_, f, _) = self.open.swap_remove(lru);
                    self.done.push(f.finish()?);
                }
                let p = self.path(value);
                let f = TableFile::create(&self.table, &p, &self.opts, &self.meta)?;
                self.open.push((value.to_string(), f, 0));
                self.open.len() - 1
            }
        };
        self.open[i].2 = self.tick;
        Ok(&mut self.open[i].1)
    }

    fn push(&mut self, value: &str, row: &[Cell<'_>]) -> Result<(), String> {
        let f = self.file(value)?;
        f.push(row)?;
        let full = f.full();
        self.rows += 1;
        if full {
            if let Some(i) = self.open.iter().position(|(v, _, _)| v == value) {
                let (_, f, _) = self.open.swap_remove(i);
                self.done.push(f.finish()?);
            }
        }
        Ok(())
    }

    /// Finishes every open file; returns all the files written.
    fn finish(mut self) -> Result<Vec<PathBuf>, String> {
        let mut first_err = None;
        for (_, f, _) in self.open.drain(..) {
            match f.finish() {
                Ok(p) => self.done.push(p),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            None => Ok(std::mem::take(&mut self.done)),
            Some(e) => {
                self.abandon();
                Err(e)
            }
        }
    }

    /// Removes the files already finished (open ones remove themselves when dropped).
    fn abandon(&mut self) {
        for p in self.done.drain(..) {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A `messages` row waiting in capture order, with the partition value it goes to.
struct Slot {
    row: MessageRow,
    value: String,
    /// A request waiting for its response's latency.
    waiting: bool,
}

/// The export of one capture.
pub struct CaptureExport {
    capture: String,
    capture_index: u32,
    by: Option<PartitionBy>,
    record_values: bool,
    tables: [Option<TableSet>; 3],
    queue: VecDeque<Slot>,
    /// The sequence number of the queue's first slot.
    head: u64,
    /// (connection, correlation_id) of waiting requests -> their sequence number.
    pending: HashMap<(u32, i32), u64>,
    client_ids: HashMap<u32, String>,
    next_index: u64,
}

impl CaptureExport {
    /// Starts exporting capture `capture` (its name as given; `capture_index` its
    /// 0-based place on the command line). Without `--partition-by` each table's file
    /// is created at once, so a capture with no messages still has its (empty) files.
    ///
    /// # Errors
    /// A file cannot be created.
    pub fn new(o: &ExportOptions, capture_index: u32, capture: &str) -> Result<Self, String> {
        let mut tables = [
            Some(TableSet::new(
                rows::messages_table(),
                o,
                capture_index,
                capture,
            )),
            Some(TableSet::new(
                rows::partitions_table(),
                o,
                capture_index,
                capture,
            )),
            o.records.then(|| {
                TableSet::new(
                    rows::records_table(o.record_values),
                    o,
                    capture_index,
                    capture,
                )
            }),
        ];
        if o.partition_by.is_none() {
            for t in tables.iter_mut().flatten() {
                t.file("")?;
            }
        }
        Ok(CaptureExport {
            capture: capture.to_string(),
            capture_index,
            by: o.partition_by,
            record_values: o.record_values,
            tables,
            queue: VecDeque::new(),
            head: 0,
            pending: HashMap::new(),
            client_ids: HashMap::new(),
            next_index: 0,
        })
    }

    /// The partition value of a message.
    fn value(&self, m: &MessageRow) -> String {
        match self.by {
            None => String::new(),
            Some(PartitionBy::Hour) => {
                let t = crate::render::rfc3339(m.time.0, 0);
                t.get(..13).unwrap_or(&t).to_string()
            }
            Some(PartitionBy::Api) => match (&m.api_name, m.api_key) {
                (Some(n), _) => n.clone(),
                (None, k) if k >= 0 => format!("api_key_{k}"),
                _ => "unknown".to_string(),
            },
            Some(PartitionBy::Capture) => self.capture.clone(),
        }
    }

    /// Adds the next message of the capture (every message `read` would print, in its
    /// order: the message ordinal counts them all).
    ///
    /// # Errors
    /// Write errors.
    pub fn add(&mut self, m: &Message<'_>, ctx: &Context) -> Result<(), String> {
        let index = self.next_index;
        self.next_index += 1;
        let mut row = rows::message_row(m, ctx, self.capture_index, index);
        match row.kind {
            Direction::Request => {
                if let Some(c) = &row.client_id {
                    if self.client_ids.len() >= MAX_CLIENT_IDS {
                        self.client_ids.clear();
                    }
                    self.client_ids.insert(row.connection, c.clone());
                }
            }
            Direction::Response => {
                row.client_id = self.client_ids.get(&row.connection).cloned();
                if let (Some(l), Some(c)) = (row.latency_ns, row.correlation_id) {
                    if let Some(seq) = self.pending.remove(&(row.connection, c)) {
                        if let Some(s) = seq
                            .checked_sub(self.head)
                            .and_then(|i| self.queue.get_mut(i as usize))
                        {
                            s.row.latency_ns = Some(l);
                            s.waiting = false;
                        }
                    }
                }
            }
        }
        let value = self.value(&row);
        // Record rows go to their table as they are read: a message of millions of
        // records holds at most a row group of them.
        let mut failed = None;
        let has_records = self.tables[2].is_some();
        let parts = {
            let (capture, values) = (&self.capture, self.record_values);
            let (t, m_row, v) = (&mut self.tables[2], &row, &value);
            let mut put = |r: RecordRow| {
                if let (Some(t), None) = (t.as_mut(), &failed) {
                    let keys: Vec<&str> = r.header_keys.iter().map(String::as_str).collect();
                    if let Err(e) = t.push(v, &r.cells(m_row, capture, &keys, values)) {
                        failed = Some(e);
                    }
                }
            };
            let sink: rows::RecordSink<'_> = if has_records { Some(&mut put) } else { None };
            rows::partition_rows(m, sink, self.record_values)
        };
        if let Some(e) = failed {
            return Err(e);
        }
        self.write_parts(&row, &value, &parts)?;
        let waits = row.kind == Direction::Request
            && row.api_key >= 0
            && !row.acks_zero
            && row.correlation_id.is_some();
        if waits {
            let seq = self.head + self.queue.len() as u64;
            let key = (row.connection, row.correlation_id.unwrap_or(0));
            // A correlation_id used again before its answer: the older one waits no more.
            if let Some(old) = self.pending.insert(key, seq) {
                if let Some(s) = old
                    .checked_sub(self.head)
                    .and_then(|i| self.queue.get_mut(i as usize))
                {
                    s.waiting = false;
                }
            }
        }
        self.queue.push_back(Slot {
            row,
            value,
            waiting: waits,
        });
        self.release(false)
    }

    /// Writes the queue's front rows that wait no more (all of them with `all`, and the
    /// oldest whenever more than [`MAX_WAITING`] wait).
    fn release(&mut self, all: bool) -> Result<(), String> {
        while let Some(front) = self.queue.front() {
            if front.waiting && !all && self.queue.len() <= MAX_WAITING {
                break;
            }
            let Some(s) = self.queue.pop_front() else {
                break;
            };
            if s.waiting {
                if let Some(c) = s.row.correlation_id {
                    if self.pending.get(&(s.row.connection, c)) == Some(&self.head) {
                        self.pending.remove(&(s.row.connection, c));
                    }
                }
            }
            self.head += 1;
            let names: Vec<&str> = s.row.error_names.iter().map(String::as_str).collect();
            if let Some(t) = self.tables[0].as_mut() {
                t.push(&s.value, &s.row.cells(&self.capture, &names))?;
            }
        }
        Ok(())
    }

    fn write_parts(
        &mut self,
        m: &MessageRow,
        value: &str,
        parts: &[PartitionRow],
    ) -> Result<(), String> {
        if let Some(t) = self.tables[1].as_mut() {
            for p in parts {
                t.push(value, &p.cells(m, &self.capture))?;
            }
        }
        Ok(())
    }

    /// Writes the rows still waiting and finishes every file.
    ///
    /// # Errors
    /// Write errors; the capture's files are removed then.
    pub fn finish(mut self) -> Result<ExportSummary, String> {
        if let Err(e) = self.release(true) {
            self.abandon();
            return Err(e);
        }
        finish_tables(std::mem::take(&mut self.tables))
    }

    /// Gives up: removes every file of this capture (finished or not).
    pub fn abandon(&mut self) {
        for t in self.tables.iter_mut().flatten() {
            t.abandon();
            t.open.clear();
        }
    }
}

/// Finishes up to three tables' files; `rows` counts each one's rows in its place. On
/// an error every file written is removed.
fn finish_tables(tables: [Option<TableSet>; 3]) -> Result<ExportSummary, String> {
    let mut sum = ExportSummary::default();
    let mut err = None;
    for (i, t) in tables.into_iter().enumerate() {
        if let Some(t) = t {
            sum.rows[i] = t.rows;
            match t.finish() {
                Ok(f) => sum.files.extend(f),
                Err(e) => {
                    err.get_or_insert(e);
                }
            }
        }
    }
    match err {
        None => Ok(sum),
        Some(e) => {
            for f in &sum.files {
                let _ = std::fs::remove_file(f);
            }
            Err(e)
        }
    }
}

/// The table folders `kwire export` writes under `out` (of captures: `messages`,
/// `partitions`, `records`; of log files: `batches`, `records`).
pub fn table_dirs(out: &Path) -> [PathBuf; 4] {
    ["messages", "partitions", "records", "batches"].map(|t| out.join(t))
}

/// `kwire export`'s per-message work ([`crate::run::Work`]): each message goes to one
/// capture's [`CaptureExport`]. Its Parquet writer takes rows in capture order, so the
/// run that drives it has one thread (the lock is then never contended).
pub struct Exporter {
    inner: std::sync::Mutex<CaptureExport>,
}

impl Exporter {
    /// The work of exporting into `e`.
    pub fn new(e: CaptureExport) -> Exporter {
        Exporter {
            inner: std::sync::Mutex::new(e),
        }
    }

    /// The export, to finish or abandon once the run is over.
    ///
    /// # Errors
    /// A worker panicked while holding the writer.
    pub fn into_inner(self) -> Result<CaptureExport, String> {
        self.inner
            .into_inner()
            .map_err(|_| "export writer poisoned".to_string())
    }
}

impl crate::run::Work for Exporter {
    type Output = ();
    fn message(
        &self,
        m: &Message<'_>,
        ctx: &Context,
        _: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        self.inner
            .lock()
            .map_err(|_| std::io::Error::other("export writer poisoned"))?
            .add(m, ctx)
            .map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hive_escaping() {
        assert_eq!(hive_escape("2026-11-29T14"), "2026-11-29T14");
        assert_eq!(hive_escape("a/b c=d:%"), "a%2Fb c%3Dd%3A%25");
        assert_eq!(hive_escape(""), "__HIVE_DEFAULT_PARTITION__");
    }

    #[test]
    fn message_ids_are_capture_then_message() {
        assert_eq!(rows::message_id(0, 7), 7);
        assert_eq!(rows::message_id(2, 5), (2 << 40) + 5);
    }
}
