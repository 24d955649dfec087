//! `kwire stats` over log directories (a census of them, beside [`crate::traffic`], the
//! statistics of captures): record types, counts, offsets and the time span, gathered
//! from the items of [`super::read_paths`] (read at full detail, so every
//! record is decoded).

use super::{Finding, Item, ItemKind, Sink};
use crate::tree::NodeKind;
use serde_json::{json, Value as J};
use std::collections::BTreeMap;
use std::io::{self, Write};

/// Offsets and counts of one partition folder (or lone file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionStats {
    /// Files read.
    pub files: u64,
    /// Batches.
    pub batches: u64,
    /// Records.
    pub records: u64,
    /// Lowest base offset and highest last offset of its segments' batches.
    pub offsets: Option<(i64, i64)>,
}

/// What `kwire stats` counts in log directories.
#[derive(Clone, Debug, Default)]
pub struct LogStats {
    /// Per partition folder (by path), segments only (KRaft snapshots count apart).
    pub partitions: BTreeMap<String, PartitionStats>,
    /// Files by kind.
    pub file_kinds: BTreeMap<&'static str, u64>,
    /// Records by type (`OffsetCommitValue v3`, `TopicRecord v0`, `SNAPSHOT_HEADER`,
    /// `tombstone OffsetCommitKey`, `record` for other topics).
    pub record_types: BTreeMap<String, u64>,
    /// Batches by compression codec.
    pub compression: BTreeMap<String, u64>,
    /// Control and transactional batches.
    pub control_batches: u64,
    /// Transactional batches.
    pub transactional_batches: u64,
    /// Batches whose CRC does not match.
    pub bad_crcs: u64,
    /// Entries of the other files.
    pub entries: u64,
    /// Earliest and latest batch timestamps (ms since the epoch; negative ones left out).
    pub time_span: Option<(i64, i64)>,
    /// Findings by level (info, warning, error).
    pub findings: [u64; 3],
    last_file: Option<std::path::PathBuf>,
}

pub use crate::tree::record_type;

impl Sink for LogStats {
    fn item(&mut self, it: &Item<'_>) -> io::Result<()> {
        if self.last_file.as_deref() != Some(it.file) {
            self.last_file = Some(it.file.to_path_buf());
            *self.file_kinds.entry(it.file_kind.as_str()).or_default() += 1;
            if it.kind == ItemKind::Batch {
                self.partition(it).files += 1;
            }
        }
        if it.kind == ItemKind::Entry {
            self.entries += 1;
            return Ok(());
        }
        let mut records = 0u64;
        if let Some(n) = &it.node {
            n.walk(&mut |x, _| {
                if x.ty.starts_with("LegacyRecord")
                    && x.children
                        .iter()
                        .all(|c| c.name != "Messages (decompressed)")
                {
                    // A legacy message (not a compressed wrapper) is one record.
                    records += 1;
                    *self
                        .record_types
                        .entry("legacy message".into())
                        .or_default() += 1;
                }
                if x.ty == "Record" && x.kind == NodeKind::Group {
                    records += 1;
                    *self.record_types.entry(record_type(x)).or_default() += 1;
                }
            });
        }
        let b = it.batch.clone();
        let p = self.partition(it);
        p.batches += 1;
        p.records += records;
        if let Some(b) = &b {
            p.offsets = Some(match p.offsets {
                None => (b.base_offset, b.last_offset),
                Some((lo, hi)) => (lo.min(b.base_offset), hi.max(b.last_offset)),
            });
            *self.compression.entry(b.compression()).or_default() += 1;
            self.control_batches += u64::from(b.is_control());
            self.transactional_batches += u64::from(b.is_transactional());
            self.bad_crcs += u64::from(!b.crc_ok);
            for t in [b.base_timestamp, b.max_timestamp] {
                if t >= 0 {
                    self.time_span = Some(match self.time_span {
                        None => (t, t),
                        Some((lo, hi)) => (lo.min(t), hi.max(t)),
                    });
                }
            }
        }
        Ok(())
    }

    fn finding(&mut self, f: &Finding) -> io::Result<()> {
        self.findings[f.level as usize] += 1;
        Ok(())
    }
}

impl LogStats {
    fn partition(&mut self, it: &Item<'_>) -> &mut PartitionStats {
        let key = if it.file_kind == super::FileKind::KraftSnapshot {
            it.file.display().to_string()
        } else {
            it.file.parent().map_or_else(
                || it.file.display().to_string(),
                |p| p.display().to_string(),
            )
        };
        self.partitions.entry(key).or_default()
    }

    /// The counts as JSON.
    pub fn to_json(&self) -> J {
        let parts: serde_json::Map<String, J> = self
            .partitions
            .iter()
            .map(|(k, p)| {
                (
                    k.clone(),
                    json!({"files": p.files, "batches": p.batches, "records": p.records,
                           "first_offset": p.offsets.map(|o| o.0), "last_offset": p.offsets.map(|o| o.1)}),
                )
            })
            .collect();
        let time = |t: Option<i64>| t.and_then(crate::decode::records::format_millis);
        json!({
            "kind": "log_stats",
            "partitions": parts,
            "file_kinds": self.file_kinds,
            "record_types": self.record_types,
            "compression": self.compression,
            "control_batches": self.control_batches,
            "transactional_batches": self.transactional_batches,
            "bad_crcs": self.bad_crcs,
            "entries": self.entries,
            "first_timestamp": time(self.time_span.map(|t| t.0)),
            "last_timestamp": time(self.time_span.map(|t| t.1)),
            "errors": self.findings[2],
            "warnings": self.findings[1],
            "notes": self.findings[0],
        })
    }

    /// The counts as text.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn write_text(&self, w: &mut dyn Write) -> io::Result<()> {
        let batches: u64 = self.partitions.values().map(|p| p.batches).sum();
        let records: u64 = self.partitions.values().map(|p| p.records).sum();
        writeln!(
            w,
            "{}, {}, {} entries in other files",
            crate::text::count(batches, "batch", "batches"),
            crate::text::count(records, "record", "records"),
            self.entries
        )?;
        if let Some((lo, hi)) = self.time_span {
            let t = |x| crate::decode::records::format_millis(x).unwrap_or_else(|| x.to_string());
            writeln!(w, "time span: {} .. {}", t(lo), t(hi))?;
        }
        writeln!(w, "\npartitions and snapshots:")?;
        for (k, p) in &self.partitions {
            let o = p
                .offsets
                .map_or("-".to_string(), |(a, b)| format!("{a}..{b}"));
            writeln!(
                w,
                "  {k}: {}, {}, {}, offsets {o}",
                crate::text::count(p.files, "file", "files"),
                crate::text::count(p.batches, "batch", "batches"),
                crate::text::count(p.records, "record", "records"),
            )?;
        }
        writeln!(w, "\nrecord types:")?;
        let mut types: Vec<_> = self.record_types.iter().collect();
        types.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (t, n) in types {
            writeln!(w, "  {n:>8}  {t}")?;
        }
        writeln!(w, "\nfiles:")?;
        for (k, n) in &self.file_kinds {
            writeln!(w, "  {n:>8}  {k}")?;
        }
        writeln!(
            w,
            "\nbatches: {} control, {} transactional, {} bad CRCs",
            self.control_batches, self.transactional_batches, self.bad_crcs
        )?;
        for (c, n) in &self.compression {
            writeln!(w, "  {n:>8}  compression {c}")?;
        }
        writeln!(
            w,
            "\nfindings: {} errors, {} warnings, {} notes",
            self.findings[2], self.findings[1], self.findings[0]
        )
    }
}
