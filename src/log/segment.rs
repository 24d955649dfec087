//! Segment files (`.log`) and KRaft snapshots (`.checkpoint`): entries back to back,
//! each `offset int64, length int32` and then a RecordBatch (magic 2) or a legacy
//! message (magic 0/1), read one entry at a time into a reused buffer (memory stays at
//! the largest entry, capped at [`MAX_ENTRY`]) and decoded by
//! [`crate::decode::records`] with file-relative offsets.
//!
//! A KRaft snapshot starts with a control batch holding a SnapshotHeader record and
//! ends with one holding a SnapshotFooter (Kafka's `RecordsSnapshotWriter`); a snapshot
//! that does not is reported.

use super::{BatchInfo, FileKind, Finding, Item, ItemKind, Level, LogOptions, OffsetTrack, Sink};
use crate::decode::internal_topics::InternalTopic;
use crate::decode::{records, Cx, DecodeOptions, Detail, Reader};
use crate::schema::Schema;
use crate::tree::{Buffers, Node};
use crate::wire;
use std::io::{self, Read};
use std::path::Path;

/// The largest entry read (bytes, offset and length included): Kafka's default
/// `message.max.bytes` is 1 MiB; larger entries are reported and skipped.
pub const MAX_ENTRY: u64 = 64 << 20;

/// Control record type of a SnapshotHeader.
const SNAPSHOT_HEADER: i16 = 3;
/// Control record type of a SnapshotFooter.
const SNAPSHOT_FOOTER: i16 = 4;

/// The file being read.
#[derive(Clone, Copy, Debug)]
pub struct Where<'p> {
    /// Its path.
    pub path: &'p Path,
    /// Segment or KRaft snapshot.
    pub kind: FileKind,
    /// The internal topic its records belong to.
    pub topic: Option<InternalTopic>,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    b.get(at..at + 8)
        .and_then(|s| <[u8; 8]>::try_from(s).ok())
        .map_or(0, i64::from_be_bytes)
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    b.get(at..at + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, i32::from_be_bytes)
}
fn be_i16(b: &[u8], at: usize) -> i16 {
    b.get(at..at + 2)
        .and_then(|s| <[u8; 2]>::try_from(s).ok())
        .map_or(0, i16::from_be_bytes)
}

/// The header facts of one whole entry (`offset`, `length` and the rest); `None` when it
/// is too short for its header or has an unknown magic.
pub fn batch_info(entry: &[u8]) -> Option<BatchInfo> {
    let magic = *entry.get(16)? as i8;
    let size = entry.len() as u64;
    match magic {
        2 if entry.len() >= 61 => {
            let crc = be_i32(entry, 17) as u32;
            let base = be_i64(entry, 0);
            Some(BatchInfo {
                magic,
                base_offset: base,
                last_offset: base.wrapping_add(be_i32(entry, 23).into()),
                size,
                count: be_i32(entry, 57),
                crc,
                crc_ok: crc32c::crc32c(&entry[21..]) == crc,
                attributes: be_i16(entry, 21),
                leader_epoch: be_i32(entry, 12),
                base_timestamp: be_i64(entry, 27),
                max_timestamp: be_i64(entry, 35),
                producer: (be_i64(entry, 43), be_i16(entry, 51), be_i32(entry, 53)),
            })
        }
        0 | 1 if entry.len() >= 18 + 8 * magic as usize => {
            let crc = be_i32(entry, 12) as u32;
            let offset = be_i64(entry, 0);
            let ts = if magic == 1 { be_i64(entry, 18) } else { -1 };
            Some(BatchInfo {
                magic,
                base_offset: offset,
                last_offset: offset,
                size,
                count: 1,
                crc,
                crc_ok: crc32fast::hash(&entry[16..]) == crc,
                attributes: i16::from(entry[17]),
                leader_epoch: -1,
                base_timestamp: ts,
                max_timestamp: ts,
                producer: (-1, -1, -1),
            })
        }
        _ => None,
    }
}

/// The control record type of a control batch's first record (uncompressed), read from
/// its bytes: the record's key is `int16 version, int16 type`.
pub fn first_control_type(entry: &[u8]) -> Option<i16> {
    let info = batch_info(entry)?;
    if !info.is_control() || info.attributes & 0x07 != 0 {
        return None;
    }
    let b = entry.get(61..)?;
    let (b, _len) = wire::varint(b).ok()?;
    let (b, _attrs) = wire::int8(b).ok()?;
    let (b, _ts) = wire::varlong(b).ok()?;
    let (b, _od) = wire::varint(b).ok()?;
    let (b, klen) = wire::varint(b).ok()?;
    if klen < 4 {
        return None;
    }
    let (b, _version) = wire::int16(b).ok()?;
    let (_, ty) = wire::int16(b).ok()?;
    Some(ty)
}

/// Reads `len` bytes of entries from `r` (positioned at the file's first byte), handing
/// each batch to `sink` as an [`Item`] and each problem as a [`Finding`]. `track`
/// checks offsets across the files of a partition when `opts.verify` is set.
///
/// # Errors
/// The sink's errors; a read error of the file is a finding.
pub fn read_batches(
    schema: &Schema,
    r: &mut dyn Read,
    len: u64,
    at: &Where<'_>,
    opts: &LogOptions,
    mut track: Option<&mut OffsetTrack>,
    sink: &mut dyn Sink,
) -> io::Result<()> {
    let finding = |offset: u64, level: Level, message: String| Finding {
        file: at.path.to_path_buf(),
        offset,
        level,
        message,
    };
    let mut pos = 0u64;
    let mut buf: Vec<u8> = Vec::new();
    let mut first_type: Option<Option<i16>> = None;
    let mut last: Option<(u64, Option<i16>)> = None;
    let full = opts.detail == Detail::Full || opts.verify;
    let dopts = DecodeOptions::default();
    // One arena for every batch's tree, emptied before each (memory stays at one batch).
    let mut arena = Buffers::new();
    while pos < len {
        let left = len - pos;
        let mut head = [0u8; 12];
        let n = left.min(12) as usize;
        if let Err(e) = r.read_exact(&mut head[..n]) {
            return sink.finding(&finding(pos, Level::Error, format!("read error: {e}")));
        }
        if n < 12 {
            sink.finding(&finding(
                pos,
                Level::Error,
                format!(
                    "{n} bytes at the end, too few for an entry's offset and length (a cut file?)"
                ),
            ))?;
            emit_raw(at, pos, &head[..n], "partial batch", sink)?;
            break;
        }
        let blen = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        if blen == 0 && head[..8] == [0; 8] {
            sink.finding(&finding(
                pos,
                Level::Warning,
                format!("a zeroed entry header: the last {left} bytes are not read (preallocated space?)"),
            ))?;
            break;
        }
        let total = 12 + u64::try_from(blen).unwrap_or(u64::MAX - 12);
        if blen < 0 || total > left {
            let what = if blen < 0 {
                format!("negative batch length {blen}")
            } else {
                format!("batch of {total} bytes, but the file ends {left} bytes after its start (a cut segment?)")
            };
            sink.finding(&finding(pos, Level::Error, what))?;
            // Show what there is of it, within the cap.
            buf.clear();
            buf.extend_from_slice(&head);
            let rest = (left - 12).min(MAX_ENTRY);
            r.take(rest).read_to_end(&mut buf)?;
            emit_raw(at, pos, &buf, "partial batch", sink)?;
            break;
        }
        if !(17..=MAX_ENTRY).contains(&total) {
            let why = if total < 17 {
                format!("batch length {blen} leaves no room for a magic byte")
            } else {
                format!("an entry of {total} bytes, more than the {MAX_ENTRY} kwire reads: skipped")
            };
            sink.finding(&finding(pos, Level::Error, why))?;
            io::copy(&mut r.take(total - 12), &mut io::sink())?;
            pos += total;
            continue;
        }
        buf.clear();
        buf.extend_from_slice(&head);
        buf.resize(total as usize, 0);
        if let Err(e) = r.read_exact(&mut buf[12..]) {
            return sink.finding(&finding(pos, Level::Error, format!("read error: {e}")));
        }
        let info = batch_info(&buf);
        match &info {
            None => sink.finding(&finding(
                pos,
                Level::Error,
                format!("unknown magic {} at byte 16 of the entry", buf[16] as i8),
            ))?,
            Some(b) => {
                if !b.crc_ok {
                    sink.finding(&finding(
                        pos,
                        Level::Error,
                        format!(
                            "batch {}..{}: CRC mismatch (stored 0x{:08x})",
                            b.base_offset, b.last_offset, b.crc
                        ),
                    ))?;
                }
                if opts.verify {
                    if let Some(t) = track.as_deref_mut() {
                        if let Some(f) = t.next(at.path, pos, b) {
                            sink.finding(&f)?;
                        }
                    }
                }
            }
        }
        if at.kind == FileKind::KraftSnapshot {
            let ct = first_control_type(&buf);
            first_type.get_or_insert(ct);
            last = Some((pos, ct));
        }
        arena.reset();
        let mut cx = Cx::new(schema, &arena, &dopts);
        let node = if full {
            cx.topics.topic = at.topic;
            let mut rd = Reader::new(&buf, pos as usize, 0, &arena);
            let node = records::decode_records(&mut cx, &mut rd, false)
                .into_iter()
                .next();
            if let Some(n) = &node {
                tree_findings(at.path, pos, n, sink)?;
            }
            node
        } else {
            None
        };
        sink.item(&Item {
            kind: ItemKind::Batch,
            file: at.path,
            file_kind: at.kind,
            position: pos,
            bytes: &buf,
            node,
            buffers: std::mem::take(&mut cx.buffers),
            batch: info,
            topic: at.topic,
        })?;
        pos += total;
    }
    if at.kind == FileKind::KraftSnapshot {
        if first_type.flatten() != Some(SNAPSHOT_HEADER) {
            sink.finding(&finding(
                0,
                Level::Error,
                "the snapshot does not start with a SnapshotHeader control record".into(),
            ))?;
        }
        match last {
            Some((_, Some(SNAPSHOT_FOOTER))) => {}
            Some((p, _)) => sink.finding(&finding(
                p,
                Level::Error,
                "the snapshot does not end with a SnapshotFooter control record".into(),
            ))?,
            None => sink.finding(&finding(0, Level::Error, "an empty snapshot".into()))?,
        }
    }
    Ok(())
}

/// Every error and warning in a batch's tree as a finding: at its file offset in the
/// file's bytes, or at the batch's position for bytes of a decompressed buffer.
fn tree_findings(path: &Path, pos: u64, n: &Node<'_>, sink: &mut dyn Sink) -> io::Result<()> {
    let mut out = Vec::new();
    n.walk(&mut |x, _| {
        for (level, m) in [(Level::Error, x.error()), (Level::Warning, x.warning())] {
            if let Some(m) = m {
                let (offset, message) = if x.buffer == 0 {
                    (x.offset as u64, format!("{}: {m}", x.name))
                } else {
                    (
                        pos,
                        format!(
                            "{} (decompressed buffer {}, byte {}): {m}",
                            x.name, x.buffer, x.offset
                        ),
                    )
                };
                out.push(Finding {
                    file: path.to_path_buf(),
                    offset,
                    level,
                    message,
                });
            }
        }
    });
    for f in &out {
        sink.finding(f)?;
    }
    Ok(())
}

/// A cut entry as an item with one raw leaf.
fn emit_raw(
    at: &Where<'_>,
    pos: u64,
    bytes: &[u8],
    name: &'static str,
    sink: &mut dyn Sink,
) -> io::Result<()> {
    let mut n = Node::leaf(
        name,
        "bytes",
        crate::tree::Value::Bytes(bytes),
        pos as usize,
        bytes.len(),
    );
    n.region = crate::tree::Region::RecordBatch;
    n.set_error("cut: the file ends inside this entry");
    sink.item(&Item {
        kind: ItemKind::Batch,
        file: at.path,
        file_kind: at.kind,
        position: pos,
        bytes,
        node: Some(n),
        buffers: Vec::new(),
        batch: None,
        topic: at.topic,
    })
}
