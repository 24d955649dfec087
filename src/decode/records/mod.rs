//! Record data: RecordBatch v2 and legacy MessageSet v0/v1, with compression.
//!
//! A `records` field holds entries that all start `offset int64, length int32`, then
//! (at byte 16) a magic byte: 2 for a RecordBatch (Kafka's `DefaultRecordBatch`), 0 or 1
//! for a legacy message (`LegacyRecord`). Old brokers mix them, so each entry is
//! dispatched on its own magic. Compressed record data is decompressed (with a cap) into
//! a new buffer of the arena and decoded there; the nodes of that buffer carry its id.
//!
//! Node shapes (every leaf covers its bytes; the leaves tile each buffer):
//! - `RecordBatch` (Group, ty `RecordBatch`): `baseOffset` .. `recordsCount` leaves,
//!   then `Records` (Group, ty `records`) with `Record[i]`, or for compressed data a
//!   `compressed records` leaf and a `Records (decompressed)` group in buffer N.
//! - `Record[i]` (Group, ty `Record`): `length`, `attributes`, `timestampDelta`,
//!   `offsetDelta`, `key`, `value`, `headerCount`, `Header[j]` (`headerKey`,
//!   `headerValue`). In control batches `key` is a group (ty `ControlRecordKey`:
//!   `length`, `version`, `type`) and `value` a group (ty `EndTxnMarker`: `length`,
//!   `version`, `coordinatorEpoch`; or ty `LeaderChangeMessage` etc.: `length` and the
//!   struct from [`super::walk::decode_data`], whose own first field is `Version`).
//! - `Message` (Group, ty `LegacyRecord v0|v1`): `offset`, `messageSize`, `crc`,
//!   `magic`, `attributes`, (`timestamp`), `key`, `value`, and for a compressed wrapper
//!   `Messages (decompressed)` with the inner message set.
//! - `partial batch` (leaf, ty `bytes`): a last entry cut short.

use super::compress::{self, Codec};
use super::{texts, Cx, Detail, Reader};
use crate::tree::{Node, NodeKind, Region, Value};
use crate::wire::{self, LenPrefix, WResult};

/// Bytes before the magic byte of any entry (offset, length, epoch or CRC).
const MAGIC_OFFSET: usize = 16;
/// The smallest v2 record: length, attributes, timestampDelta, offsetDelta, key length,
/// value length, header count, one byte each.
const MIN_RECORD: usize = 7;

/// Decodes the content of a `records` field (after its length prefix).
///
/// `r` covers exactly the records bytes. `partial_ok` is true where a broker may cut the
/// last batch short (Fetch responses): a cut batch is then a warning, not an error.
/// Returns the nodes that tile those bytes: batches, legacy messages, and a leaf for a
/// partial or unreadable rest.
pub fn decode_records<'a>(cx: &mut Cx<'a>, r: &mut Reader<'a>, partial_ok: bool) -> Vec<Node<'a>> {
    let mut out = cx.vec();
    while r.left() > 0 {
        let left = r.left();
        if left < 12 {
            let m = r.fmt(format_args!(
                "partial batch: {left} bytes, too few for an offset and a length"
            ));
            out.push(partial(r, partial_ok, m));
            break;
        }
        let len = i32::from_be_bytes([r.rest[8], r.rest[9], r.rest[10], r.rest[11]]);
        if len < 0 {
            let msg = r.fmt(format_args!("negative batch length {len}"));
            let mut n = r.error_leaf("RecordBatch", "bytes", msg);
            n.region = Region::RecordBatch;
            out.push(n);
            break;
        }
        let total = 12 + len as usize;
        if total > left {
            // Only a broker answering a fetch cuts a batch on purpose.
            let why = if partial_ok {
                "cut by the broker's max bytes"
            } else {
                "the records field ends inside it"
            };
            let m = r.fmt(format_args!(
                "partial batch: {left} of {total} bytes, {why}"
            ));
            out.push(partial(r, partial_ok, m));
            break;
        }
        let Some(mut entry) = r.split(total) else {
            break;
        };
        if total <= MAGIC_OFFSET {
            let msg = r.fmt(format_args!(
                "batch length {len} leaves no room for a magic byte"
            ));
            let mut n = entry.error_leaf("RecordBatch", "bytes", msg);
            n.region = Region::RecordBatch;
            out.push(n);
            continue;
        }
        let node = match entry.rest[MAGIC_OFFSET] {
            2 => decode_batch_v2(cx, &mut entry),
            m @ (0 | 1) => decode_legacy(cx, &mut entry, m as i8),
            m => {
                let msg = r.fmt(format_args!(
                    "unknown magic {} at byte 16 of the entry",
                    m as i8
                ));
                let mut n = entry.error_leaf("RecordBatch", "bytes", msg);
                n.region = Region::RecordBatch;
                n
            }
        };
        out.push(node);
    }
    out
}

/// The leaf for a cut last entry: a warning where brokers may cut, else an error.
fn partial<'a>(r: &mut Reader<'a>, partial_ok: bool, msg: &str) -> Node<'a> {
    let mut n = r.error_leaf("partial batch", "bytes", msg);
    n.region = Region::RecordBatch;
    if partial_ok {
        if let Some(w) = n.take_error() {
            n.set_warning(w);
        }
        n.description = Some("the rest of a batch the broker cut at the fetch's max bytes");
    }
    n
}

mod batch;
mod build;
mod control;
mod legacy;
mod record;
#[cfg(test)]
mod tests;
mod time;

use batch::*;
use build::*;
use control::*;
use legacy::*;
use record::*;
pub use time::format_millis;
use time::*;
