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

// ---------------------------------------------------------------------------------------
// Small builders. A field reader pushes its leaf onto `out`; on failure it pushes an error
// leaf over the rest of the reader and returns `Stop`, so every byte stays covered.

/// An error leaf covering the rest of the reader was pushed; stop this structure.
struct Stop;

type Res<T> = Result<T, Stop>;

fn leaf<'a>(
    r: &Reader<'a>,
    name: &'a str,
    ty: &'static str,
    v: Value<'a>,
    off: usize,
    len: usize,
) -> Node<'a> {
    let mut n = Node::leaf(name, ty, v, off, len);
    n.buffer = r.buffer;
    n
}

/// A group over `[offset, end)` of `buffer` (children may also sit in other buffers);
/// the children move into the arena and `children` goes back to the pool.
fn group<'a>(
    cx: &mut Cx<'a>,
    name: &'a str,
    ty: &'a str,
    buffer: u32,
    offset: usize,
    end: usize,
    children: Vec<Node<'a>>,
) -> Node<'a> {
    let mut n = Node::new(name, ty, NodeKind::Group, offset);
    n.buffer = buffer;
    n.length = end.saturating_sub(offset);
    n.children = cx.seal(children);
    n
}

fn read<'a, T>(
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
    name: &'static str,
    ty: &'static str,
    p: impl Fn(&'a [u8]) -> WResult<'a, T>,
    val: impl Fn(&T) -> Value<'a>,
) -> Res<T> {
    match r.read(p) {
        Ok((v, off, n)) => {
            out.push(leaf(r, name, ty, val(&v), off, n));
            Ok(v)
        }
        Err(e) => {
            let m = r.fmt(format_args!("{name}: {}", e.kind));
            out.push(r.error_leaf(name, ty, m));
            Err(Stop)
        }
    }
}

fn int<'a, T: Into<i64> + Copy>(
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
    name: &'static str,
    ty: &'static str,
    p: impl Fn(&'a [u8]) -> WResult<'a, T>,
) -> Res<i64> {
    read(r, out, name, ty, p, |v| Value::Int((*v).into())).map(Into::into)
}

fn annotate<'a>(out: &mut [Node<'a>], a: &'a str) {
    if let Some(n) = out.last_mut() {
        n.annotation = Some(a);
    }
}

fn set_error<'a>(out: &mut [Node<'a>], e: &'a str) {
    if let Some(n) = out.last_mut() {
        n.set_error(e);
    }
}

/// Annotates -1 as `none` (leader epochs, producer ids, sequences).
fn none_if_minus_one(out: &mut [Node<'_>], v: i64) {
    if v == -1 {
        annotate(out, "none");
    }
}

/// A leaf covering the rest of the reader, with an error, if anything is left.
fn trailing<'a>(r: &mut Reader<'a>, out: &mut Vec<Node<'a>>, what: &str) {
    if r.left() > 0 {
        let n = r.left();
        let m = r.fmt(format_args!("{n} bytes after {what}"));
        out.push(r.error_leaf("trailing bytes", "bytes", m));
    }
}

/// A length-prefixed byte string as one leaf (prefix and bytes), `Value::Null` for null.
fn bytes_leaf<'a>(
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
    name: &'static str,
    prefix: LenPrefix,
) -> Res<Option<&'a [u8]>> {
    let label = if prefix == LenPrefix::Varint {
        "varint"
    } else {
        "int32"
    };
    match r.read(wire::sized(prefix)) {
        Ok(((l, b), off, n)) => {
            let v = b.map_or(Value::Null, Value::Bytes);
            let ann: &'a str = match (b.is_some(), prefix) {
                (true, LenPrefix::Varint) => texts::varint_len(l.raw, r.arena),
                (true, _) => texts::int32_len(l.raw, r.arena),
                (false, _) => r.fmt(format_args!("{label} len={}, null", l.raw)),
            };
            out.push(leaf(r, name, "bytes", v, off, n).annotate(ann));
            Ok(b)
        }
        Err(e) => {
            let m = r.fmt(format_args!("{name}: {}", e.kind));
            out.push(r.error_leaf(name, "bytes", m));
            Err(Stop)
        }
    }
}

/// Reads a varint length prefix as a leaf and splits off the bytes it covers. `None` for
/// a null (-1) length.
fn varint_sized<'a>(
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
    name: &'static str,
) -> Res<Option<Reader<'a>>> {
    let len = int(r, out, name, "varint", wire::varint)?;
    if len == -1 {
        annotate(out, "null");
        return Ok(None);
    }
    if len < 0 || len as usize > r.left() {
        let msg = if len < 0 {
            r.fmt(format_args!("negative length {len}"))
        } else {
            r.fmt(format_args!("length {len}, {} bytes left", r.left()))
        };
        return stop_after_bad_length(r, out, msg, "length");
    }
    Ok(r.split(len as usize))
}

/// Sets `msg` on the length leaf just pushed, covers the rest of `r` with a `rest` leaf
/// (so the leaves still tile) and stops: what a bad `what` length leaves behind.
fn stop_after_bad_length<'a, T>(
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
    msg: &'a str,
    what: &str,
) -> Res<T> {
    set_error(out, msg);
    let n = r.left();
    if n > 0 {
        let m = r.fmt(format_args!("{n} bytes not decoded after a bad {what}"));
        out.push(r.error_leaf("rest", "bytes", m));
    }
    Err(Stop)
}

/// `v` as `width` zero-padded decimal digits (`v` in `0..10^width`).
fn push_padded(s: &mut [u8; 24], at: &mut usize, v: i64, width: u32) {
    let mut div = 10i64.pow(width - 1);
    while div > 0 {
        s[*at] = b'0' + (v / div % 10) as u8;
        *at += 1;
        div /= 10;
    }
}

/// Formats epoch milliseconds as RFC 3339 UTC with millis (`2024-05-01T12:00:00.123Z`).
pub fn format_millis(ms: i64) -> Option<String> {
    Millis::new(ms).map(|m| m.as_str().to_string())
}

/// Epoch milliseconds as RFC 3339 UTC text, on the stack (one per record: no allocation).
struct Millis {
    buf: [u8; 24],
}

impl Millis {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf).unwrap_or("")
    }

    /// `None` outside years 0..=9999.
    fn new(ms: i64) -> Option<Millis> {
        let secs = ms.div_euclid(1000);
        let milli = ms.rem_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        if !(0..=9999).contains(&y) {
            return None;
        }
        // Written digit by digit: no formatting machinery (one per record).
        let mut s = [0u8; 24];
        let at = &mut 0;
        push_padded(&mut s, at, y, 4);
        s[4] = b'-';
        *at += 1;
        push_padded(&mut s, at, m, 2);
        s[7] = b'-';
        *at += 1;
        push_padded(&mut s, at, d, 2);
        s[10] = b'T';
        *at += 1;
        push_padded(&mut s, at, sod / 3600, 2);
        s[13] = b':';
        *at += 1;
        push_padded(&mut s, at, sod / 60 % 60, 2);
        s[16] = b':';
        *at += 1;
        push_padded(&mut s, at, sod % 60, 2);
        s[19] = b'.';
        *at += 1;
        push_padded(&mut s, at, milli, 3);
        s[23] = b'Z';
        Some(Millis { buf: s })
    }
}

/// The annotation of a timestamp: `none` for -1, else its RFC 3339 text, with `suffix`.
fn time_annotation<'a>(r: &Reader<'a>, ms: i64, suffix: &str) -> &'a str {
    if ms == -1 && suffix.is_empty() {
        return "none";
    }
    match Millis::new(ms) {
        _ if ms == -1 => r.fmt(format_args!("none{suffix}")),
        Some(m) => r.fmt(format_args!("{}{suffix}", m.as_str())),
        None => r.fmt(format_args!("out of the date range{suffix}")),
    }
}

fn checked_count(count: i64, left: usize, min_each: usize, what: &str) -> Option<String> {
    if count < 0 {
        return Some(format!("negative {what} count {count}"));
    }
    if (count as u64).saturating_mul(min_each as u64) > left as u64 {
        return Some(format!(
            "{what} count {count}, but only {left} bytes follow (each takes at least {min_each})"
        ));
    }
    None
}

// ---------------------------------------------------------------------------------------
// RecordBatch v2.

/// What records need to know of their batch.
struct BatchCx {
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: bool,
    control: bool,
}

fn decode_batch_v2<'a>(cx: &mut Cx<'a>, r: &mut Reader<'a>) -> Node<'a> {
    let start = r.pos;
    let mut out = cx.vec();
    let _ = batch_v2_fields(cx, r, &mut out);
    trailing(r, &mut out, "the batch");
    let mut n = group(
        cx,
        "RecordBatch",
        "RecordBatch",
        r.buffer,
        start,
        r.pos,
        out,
    );
    n.set_region(Region::RecordBatch);
    n
}

fn batch_v2_fields<'a>(cx: &mut Cx<'a>, r: &mut Reader<'a>, out: &mut Vec<Node<'a>>) -> Res<()> {
    let whole = r.rest;
    let base_offset = int(r, out, "baseOffset", "int64", wire::int64)?;
    let len = int(r, out, "batchLength", "int32", wire::int32)?;
    annotate(out, r.fmt(format_args!("{len} bytes follow")));
    let ple = int(r, out, "partitionLeaderEpoch", "int32", wire::int32)?;
    none_if_minus_one(out, ple);
    int(r, out, "magic", "int8", wire::int8)?;
    let crc = read(r, out, "crc", "uint32", wire::uint32, |v| {
        Value::UInt(u64::from(*v))
    })?;
    let computed = crc32c::crc32c(whole.get(21..).unwrap_or(&[]));
    if crc == computed {
        annotate(out, "valid");
    } else {
        annotate(
            out,
            r.fmt(format_args!("invalid, computed 0x{computed:08x}")),
        );
        set_error(
            out,
            r.fmt(format_args!(
                "CRC-32C mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}"
            )),
        );
    }
    let attrs = int(r, out, "attributes", "int16", wire::int16)?;
    let codec = Codec::from_attributes(attrs);
    let log_append_time = attrs & 0x08 != 0;
    let control = attrs & 0x20 != 0;
    let delete_horizon = attrs & 0x40 != 0;
    annotate(
        out,
        r.fmt(format_args!(
            "compression={}, timestampType={}, isTransactional={}, isControlBatch={}, hasDeleteHorizonMs={}",
            codec.name(),
            if log_append_time { "LogAppendTime" } else { "CreateTime" },
            attrs & 0x10 != 0,
            control,
            delete_horizon
        )),
    );
    if let Some(n) = out.last_mut() {
        if attrs & !0x7f != 0 {
            n.set_warning(r.fmt(format_args!(
                "unused attribute bits set: 0x{:04x}",
                attrs & !0x7f
            )));
        }
        if let Codec::Unknown(c) = codec {
            n.set_error(r.fmt(format_args!("unknown compression codec {c}")));
        }
    }
    int(r, out, "lastOffsetDelta", "int32", wire::int32)?;
    let base_timestamp = int(r, out, "baseTimestamp", "int64", wire::int64)?;
    let mut ann = time_annotation(r, base_timestamp, "");
    if delete_horizon {
        ann = r.fmt(format_args!("delete horizon {ann}"));
    }
    annotate(out, ann);
    let max_ts = int(r, out, "maxTimestamp", "int64", wire::int64)?;
    annotate(out, time_annotation(r, max_ts, ""));
    let pid = int(r, out, "producerId", "int64", wire::int64)?;
    none_if_minus_one(out, pid);
    let epoch = int(r, out, "producerEpoch", "int16", wire::int16)?;
    none_if_minus_one(out, epoch);
    let seq = int(r, out, "baseSequence", "int32", wire::int32)?;
    none_if_minus_one(out, seq);
    let count = int(r, out, "recordsCount", "int32", wire::int32)?;
    let count_idx = out.len() - 1;
    let bcx = BatchCx {
        base_offset,
        base_timestamp,
        log_append_time,
        control,
    };

    if r.left() == 0 {
        if count != 0 {
            out[count_idx]
                .set_error(r.fmt(format_args!("record count {count}, but no bytes follow")));
        }
        return Ok(());
    }
    if codec == Codec::None {
        let bad = checked_count(count, r.left(), MIN_RECORD, "record");
        let absurd = bad.is_some();
        out[count_idx].set_error_opt(bad.map(|b| r.s(&b)));
        let start = r.pos;
        let (recs, found) = record_list(cx, r, count, &bcx);
        let mut g = group(cx, "Records", "records", r.buffer, start, r.pos, recs);
        g.value = Value::Count(found as u64);
        if !absurd && found < count.max(0) as usize {
            g.set_error(r.fmt(format_args!("{count} records declared, {found} found")));
        }
        out.push(g);
        return Ok(());
    }

    // Compressed: the bytes are one leaf of this buffer; the records go in a new one.
    let data = r.rest;
    let mut comp = leaf(
        r,
        "compressed records",
        "bytes",
        Value::Bytes(data),
        r.pos,
        data.len(),
    );
    r.split(data.len());
    match compress::decompress(codec, data, cx.decompress_budget(), false) {
        Err(e) => {
            comp.annotation = Some(r.fmt(format_args!("{}, {} B", codec.name(), data.len())));
            comp.set_error(r.s(&e));
            out.push(comp);
        }
        Ok(d) => {
            let dlen = d.data.len();
            let note = d.note.map(|n| format!(", {n}")).unwrap_or_default();
            if dlen == 0 {
                comp.annotation = Some(r.fmt(format_args!(
                    "{}, {} B -> 0 B{note}",
                    codec.name(),
                    data.len()
                )));
                out.push(comp);
                if count != 0 {
                    out[count_idx].set_error(r.fmt(format_args!(
                        "record count {count}, but the data decompresses to nothing"
                    )));
                }
                return Ok(());
            }
            let (id, slice) = cx.add_buffer(d.data);
            comp.annotation = Some(r.fmt(format_args!(
                "{}, {} B -> {dlen} B, buffer {id}{note}",
                codec.name(),
                data.len()
            )));
            out.push(comp);
            let bad = checked_count(count, dlen, MIN_RECORD, "record");
            let absurd = bad.is_some();
            out[count_idx].set_error_opt(bad.map(|b| r.s(&b)));
            let mut inner = Reader::new(slice, 0, id, cx.arena);
            let (recs, found) = record_list(cx, &mut inner, count, &bcx);
            let mut g = group(cx, "Records (decompressed)", "records", id, 0, dlen, recs);
            g.value = Value::Count(found as u64);
            g.annotation = Some(r.fmt(format_args!("buffer {id}, {dlen} B")));
            g.description =
                Some(r.fmt(format_args!("offsets are inside decompressed buffer {id}")));
            if !absurd && found < count.max(0) as usize {
                g.set_error(r.fmt(format_args!("{count} records declared, {found} found")));
            }
            out.push(g);
        }
    }
    Ok(())
}

/// Decodes up to `count` records (fewer when the bytes run out) and flags bytes after
/// them. Returns the nodes and the number of records.
fn record_list<'a>(
    cx: &mut Cx<'a>,
    r: &mut Reader<'a>,
    count: i64,
    bcx: &BatchCx,
) -> (Vec<Node<'a>>, usize) {
    let cap = (count.max(0) as usize).min(r.left() / MIN_RECORD + 1);
    let mut recs = cx.vec();
    recs.reserve(cap);
    let mut i = 0usize;
    let skim = cx.opts.detail == Detail::Summary && !bcx.control;
    while (i as i64) < count && r.left() > 0 {
        if skim {
            if let Some(n) = clean_record_len(r.rest) {
                // A record that decodes without an error or a warning: the summary
                // counts it and needs nothing inside it.
                let start = r.pos;
                r.split(n);
                let mut rec = record_node(cx, i, r, start, Vec::new());
                rec.region = Region::Record;
                recs.push(rec);
                i += 1;
                continue;
            }
        }
        recs.push(decode_record(cx, r, i, bcx));
        i += 1;
    }
    if r.left() > 0 {
        trailing(r, &mut recs, &format!("{i} records"));
    }
    (recs, i)
}

/// The length of the record (not a control record) at the start of `b`, length prefix
/// included, when [`decode_record`] would find no error and no warning in it; `None`
/// otherwise. It checks what `decode_record` checks, in the same order, without
/// building nodes: the length against the bytes left, each varint, key and value
/// lengths, the header count against the bytes left, each header key present and
/// UTF-8, the header value, and no bytes left over inside the length.
fn clean_record_len(b: &[u8]) -> Option<usize> {
    let (rest, len) = wire::varint(b).ok()?;
    let len = usize::try_from(len).ok()?;
    let body = rest.get(..len)?;
    let total = b.len() - rest.len() + len;
    let (body, _attributes) = wire::int8(body).ok()?;
    let (body, _ts) = wire::varlong(body).ok()?;
    let (body, _od) = wire::varint(body).ok()?;
    let (body, _key) = wire::sized(LenPrefix::Varint)(body).ok()?;
    let (mut body, _value) = wire::sized(LenPrefix::Varint)(body).ok()?;
    let (rest, hc) = wire::varint(body).ok()?;
    body = rest;
    if checked_count(hc.into(), body.len(), 2, "header").is_some() {
        return None;
    }
    for _ in 0..hc {
        let (rest, (_, key)) = wire::sized(LenPrefix::Varint)(body).ok()?;
        std::str::from_utf8(key?).ok()?;
        let (rest, _value) = wire::sized(LenPrefix::Varint)(rest).ok()?;
        body = rest;
    }
    body.is_empty().then_some(total)
}

/// The `Record[i]` group over `start` to where `r` stands now.
fn record_node<'a>(
    cx: &mut Cx<'a>,
    i: usize,
    r: &Reader<'a>,
    start: usize,
    children: Vec<Node<'a>>,
) -> Node<'a> {
    let name = texts::record(i as i64, r.arena);
    group(cx, name, "Record", r.buffer, start, r.pos, children)
}

fn decode_record<'a>(cx: &mut Cx<'a>, r: &mut Reader<'a>, i: usize, bcx: &BatchCx) -> Node<'a> {
    let start = r.pos;
    // length, attributes, timestampDelta, offsetDelta, key, value, headerCount, a header
    let mut out = cx.vec();
    let mut abs_offset = None;
    let _ = record_fields(cx, r, bcx, &mut out, &mut abs_offset);
    let mut n = record_node(cx, i, r, start, out);
    n.annotation = abs_offset;
    n.set_region(Region::Record);
    n
}

fn record_fields<'a>(
    cx: &mut Cx<'a>,
    r: &mut Reader<'a>,
    bcx: &BatchCx,
    out: &mut Vec<Node<'a>>,
    abs_offset: &mut Option<&'a str>,
) -> Res<()> {
    let len = int(r, out, "length", "varint", wire::varint)?;
    if len < 0 || len as usize > r.left() {
        let msg = if len < 0 {
            r.fmt(format_args!("negative record length {len}"))
        } else {
            r.fmt(format_args!(
                "record length {len}, only {} bytes left",
                r.left()
            ))
        };
        return stop_after_bad_length(r, out, msg, "record length");
    }
    let Some(mut body) = r.split(len as usize) else {
        return Err(Stop);
    };
    let res = record_body(cx, &mut body, bcx, out, abs_offset);
    if body.left() > 0 {
        let n = body.left();
        // After an error inside a length-prefixed part (a control key or value) the
        // record's own bytes are not all read yet: cover them so the leaves still tile.
        let (name, msg) = if res.is_ok() {
            (
                "trailing bytes",
                r.fmt(format_args!(
                    "{n} bytes after the record's fields, inside its length {len}"
                )),
            )
        } else {
            (
                "rest",
                r.fmt(format_args!(
                    "{n} bytes of the record not decoded after an error"
                )),
            )
        };
        out.push(body.error_leaf(name, "bytes", msg));
    }
    res
}

fn record_body<'a>(
    cx: &mut Cx<'a>,
    r: &mut Reader<'a>,
    bcx: &BatchCx,
    out: &mut Vec<Node<'a>>,
    abs_offset: &mut Option<&'a str>,
) -> Res<()> {
    int(r, out, "attributes", "int8", wire::int8)?;
    let ts = int(r, out, "timestampDelta", "varlong", wire::varlong)?;
    let suffix = if bcx.log_append_time {
        ", LogAppendTime: the batch's maxTimestamp applies"
    } else {
        ""
    };
    let ann = time_annotation(r, bcx.base_timestamp.wrapping_add(ts), suffix);
    annotate(out, ann);
    let od = int(r, out, "offsetDelta", "varint", wire::varint)?;
    let o = r.fmt(format_args!("offset {}", bcx.base_offset.wrapping_add(od)));
    annotate(out, o);
    *abs_offset = Some(o);
    if bcx.control {
        control_record(cx, r, out)?;
    } else {
        bytes_leaf(r, out, "key", LenPrefix::Varint)?;
        bytes_leaf(r, out, "value", LenPrefix::Varint)?;
    }
    let hc = int(r, out, "headerCount", "varint", wire::varint)?;
    let bad = checked_count(hc, r.left(), 2, "header");
    let absurd = bad.is_some();
    if let Some(e) = bad {
        set_error(out, r.s(&e));
    }
    let mut j = 0usize;
    while (j as i64) < hc && r.left() > 0 {
        let start = r.pos;
        let mut h = cx.vec();
        let res = header(r, &mut h);
        let name = texts::header(j as i64, r.arena);
        out.push(group(cx, name, "Header", r.buffer, start, r.pos, h));
        res?;
        j += 1;
    }
    if !absurd && (j as i64) < hc {
        set_error(out, r.fmt(format_args!("{hc} headers declared, {j} found")));
    }
    Ok(())
}

fn header<'a>(r: &mut Reader<'a>, h: &mut Vec<Node<'a>>) -> Res<()> {
    match r.read(wire::sized(LenPrefix::Varint)) {
        Ok(((l, b), off, n)) => {
            let mut k = match b {
                None => {
                    let mut k = leaf(r, "headerKey", "string", Value::Null, off, n)
                        .annotate("varint len=-1, null");
                    k.set_error("null header key: Kafka requires a header key");
                    k
                }
                Some(b) => {
                    let v = std::str::from_utf8(b).map_or(Value::Bytes(b), Value::Str);
                    leaf(r, "headerKey", "string", v, off, n)
                        .annotate(texts::varint_len(l.raw, r.arena))
                }
            };
            if matches!(k.value, Value::Bytes(_)) {
                k.set_warning("header key is not valid UTF-8");
            }
            h.push(k);
        }
        Err(e) => {
            let m = r.fmt(format_args!("headerKey: {}", e.kind));
            h.push(r.error_leaf("headerKey", "string", m));
            return Err(Stop);
        }
    }
    bytes_leaf(r, h, "headerValue", LenPrefix::Varint)?;
    Ok(())
}

/// Control record types (Kafka's `ControlRecordType`), with the data definition of the
/// value for the KRaft ones.
fn control_type(t: i64) -> Option<(&'static str, Option<&'static str>)> {
    Some(match t {
        0 => ("ABORT", None),
        1 => ("COMMIT", None),
        2 => ("LEADER_CHANGE", Some("LeaderChangeMessage")),
        3 => ("SNAPSHOT_HEADER", Some("SnapshotHeaderRecord")),
        4 => ("SNAPSHOT_FOOTER", Some("SnapshotFooterRecord")),
        5 => ("KRAFT_VERSION", Some("KRaftVersionRecord")),
        6 => ("KRAFT_VOTERS", Some("VotersRecord")),
        _ => return None,
    })
}

/// The key (`version int16, type int16`) and value of a control record.
fn control_record<'a>(cx: &mut Cx<'a>, r: &mut Reader<'a>, out: &mut Vec<Node<'a>>) -> Res<()> {
    // key
    let start = r.pos;
    let mut k = cx.vec();
    let mut ty = None;
    let res = (|| -> Res<()> {
        match varint_sized(r, &mut k, "length")? {
            None => set_error(&mut k, "control record without a key"),
            Some(mut kr) => {
                if let Some(l) = k.last_mut() {
                    l.annotation = Some(kr.fmt(format_args!("varint len={}", kr.left())));
                }
                int(&mut kr, &mut k, "version", "int16", wire::int16)?;
                let t = int(&mut kr, &mut k, "type", "int16", wire::int16)?;
                match control_type(t) {
                    Some((name, _)) => annotate(&mut k, name),
                    None => set_error(
                        &mut k,
                        kr.fmt(format_args!("unknown control record type {t}")),
                    ),
                }
                ty = Some(t);
                if kr.left() > 0 {
                    let n = kr.left();
                    let mut u = kr.error_leaf("unknown", "bytes", "");
                    u.set_error_opt(None);
                    u.set_warning(kr.fmt(format_args!(
                        "{n} bytes after the control key (a newer key version?)"
                    )));
                    k.push(u);
                }
            }
        }
        Ok(())
    })();
    let mut g = group(cx, "key", "ControlRecordKey", r.buffer, start, r.pos, k);
    g.annotation = ty.and_then(control_type).map(|(n, _)| n);
    out.push(g);
    res?;

    // value
    let start = r.pos;
    let mut v = cx.vec();
    let ct = ty.and_then(control_type);
    let vty = match ct {
        Some((_, Some(def))) => def,
        Some((_, None)) => "EndTxnMarker",
        None => "bytes",
    };
    let res = (|| -> Res<()> {
        let Some(mut vr) = varint_sized(r, &mut v, "length")? else {
            if ct.is_some() {
                set_error(&mut v, "control record without a value");
            }
            return Ok(());
        };
        if let Some(l) = v.last_mut() {
            l.annotation = Some(vr.fmt(format_args!("varint len={}", vr.left())));
        }
        match ct {
            None => {
                if vr.left() > 0 {
                    let b = vr.rest;
                    v.push(leaf(&vr, "data", "bytes", Value::Bytes(b), vr.pos, b.len()));
                    vr.split(b.len());
                }
            }
            Some((_, None)) => {
                // EndTxnMarker: version int16, coordinatorEpoch int32 (Kafka hard-codes it).
                int(&mut vr, &mut v, "version", "int16", wire::int16)?;
                int(&mut vr, &mut v, "coordinatorEpoch", "int32", wire::int32)?;
                if vr.left() > 0 {
                    let n = vr.left();
                    let mut u = vr.error_leaf("unknown", "bytes", "");
                    u.set_error_opt(None);
                    u.set_warning(vr.fmt(format_args!(
                        "{n} bytes after the end transaction marker (a newer version?)"
                    )));
                    v.push(u);
                }
            }
            Some((_, Some(def))) => {
                // Kafka writes these with MessageUtil.toByteBuffer(message, version): the
                // struct alone, whose first field is its own `Version int16`. That field
                // names the version to decode the struct at; it stays inside the struct.
                let version = match vr.rest {
                    [a, b, ..] => i16::from_be_bytes([*a, *b]),
                    _ => 0,
                };
                if vr.left() > 0 {
                    let node = super::walk::decode_data(cx, def, version, &mut vr, def);
                    v.push(node);
                    trailing(&mut vr, &mut v, def);
                }
            }
        }
        Ok(())
    })();
    let mut g = group(cx, "value", vty, r.buffer, start, r.pos, v);
    if let Some((n, _)) = ct {
        g.annotation = Some(n);
    }
    out.push(g);
    res
}

// ---------------------------------------------------------------------------------------
// Legacy messages (MessageSet v0/v1).

fn decode_legacy<'a>(cx: &mut Cx<'a>, r: &mut Reader<'a>, magic: i8) -> Node<'a> {
    let start = r.pos;
    let mut out = cx.vec();
    let _ = legacy_fields(cx, r, magic, &mut out);
    trailing(r, &mut out, "the message");
    let ty = if magic == 0 {
        "LegacyRecord v0"
    } else {
        "LegacyRecord v1"
    };
    let mut n = group(cx, "Message", ty, r.buffer, start, r.pos, out);
    n.set_region(Region::RecordBatch);
    n
}

fn legacy_fields<'a>(
    cx: &mut Cx<'a>,
    r: &mut Reader<'a>,
    magic: i8,
    out: &mut Vec<Node<'a>>,
) -> Res<()> {
    let whole = r.rest;
    int(r, out, "offset", "int64", wire::int64)?;
    let size = int(r, out, "messageSize", "int32", wire::int32)?;
    annotate(out, r.fmt(format_args!("{size} bytes follow")));
    let crc = read(r, out, "crc", "uint32", wire::uint32, |v| {
        Value::UInt(u64::from(*v))
    })?;
    let computed = crc32fast::hash(whole.get(16..).unwrap_or(&[]));
    if crc == computed {
        annotate(out, "valid");
    } else {
        annotate(
            out,
            r.fmt(format_args!("invalid, computed 0x{computed:08x}")),
        );
        set_error(
            out,
            r.fmt(format_args!(
                "CRC-32 mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}"
            )),
        );
    }
    int(r, out, "magic", "int8", wire::int8)?;
    let attrs = int(r, out, "attributes", "int8", wire::int8)?;
    let codec = Codec::from_attributes(attrs);
    let tt = match (magic >= 1, attrs & 0x08 != 0) {
        (false, _) => "",
        (true, true) => ", timestampType=LogAppendTime",
        (true, false) => ", timestampType=CreateTime",
    };
    annotate(out, r.fmt(format_args!("compression={}{tt}", codec.name())));
    if matches!(codec, Codec::Unknown(_) | Codec::Zstd) {
        set_error(
            out,
            r.fmt(format_args!(
                "compression codec {} is not defined for magic {magic}",
                attrs & 7
            )),
        );
    }
    if magic >= 1 {
        let ts = int(r, out, "timestamp", "int64", wire::int64)?;
        annotate(out, time_annotation(r, ts, ""));
    }
    let key_idx = out.len();
    bytes_leaf(r, out, "key", LenPrefix::Int32)?;
    out[key_idx].region = Region::Record;
    let value = bytes_leaf(r, out, "value", LenPrefix::Int32)?;
    let value_idx = out.len() - 1;
    out[value_idx].region = Region::Record;
    if codec == Codec::None || matches!(codec, Codec::Unknown(_)) {
        return Ok(());
    }
    // A wrapper message: the value is a compressed inner message set.
    let Some(data) = value else {
        out[value_idx].set_error("compressed wrapper message with a null value");
        return Ok(());
    };
    if cx.depth >= cx.opts.max_depth {
        out[value_idx].set_error(r.fmt(format_args!(
            "nesting deeper than the cap of {} levels",
            cx.opts.max_depth
        )));
        return Ok(());
    }
    match compress::decompress(codec, data, cx.decompress_budget(), magic == 0) {
        Err(e) => {
            out[value_idx].annotation =
                Some(r.fmt(format_args!("int32 len={}, {}", data.len(), codec.name())));
            out[value_idx].set_error(r.s(&e));
        }
        Ok(d) => {
            let dlen = d.data.len();
            let note = d
                .note
                .map(|n| r.fmt(format_args!(", {n}")))
                .unwrap_or_default();
            if dlen == 0 {
                out[value_idx].annotation = Some(r.fmt(format_args!(
                    "int32 len={}, {}, {} B -> 0 B{note}",
                    data.len(),
                    codec.name(),
                    data.len()
                )));
                out[value_idx]
                    .set_error("compressed wrapper message with an empty inner message set");
                return Ok(());
            }
            let (id, slice) = cx.add_buffer(d.data);
            out[value_idx].annotation = Some(r.fmt(format_args!(
                "int32 len={}, {}, {} B -> {dlen} B, buffer {id}{note}",
                data.len(),
                codec.name(),
                data.len()
            )));
            let mut inner = Reader::new(slice, 0, id, cx.arena);
            cx.depth += 1;
            let nodes = decode_records(cx, &mut inner, false);
            cx.depth -= 1;
            let count = nodes.len();
            let mut g = group(
                cx,
                "Messages (decompressed)",
                "MessageSet",
                id,
                0,
                dlen,
                nodes,
            );
            g.value = Value::Count(count as u64);
            g.annotation = Some(r.fmt(format_args!("buffer {id}, {dlen} B")));
            g.description =
                Some(r.fmt(format_args!("offsets are inside decompressed buffer {id}")));
            out.push(g);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::DecodeOptions;
    use crate::schema::Schema;
    use crate::tree::Buffers;
    use std::collections::BTreeMap;
    use std::io::Write;

    /// Where the records field starts in the (imaginary) frame: offsets must be absolute.
    const BASE: usize = 7;
    const TS: i64 = 1_714_564_800_123; // 2024-05-01T12:00:00.123Z

    fn zz(v: i64) -> Vec<u8> {
        let mut u = ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        loop {
            let b = (u & 0x7f) as u8;
            u >>= 7;
            if u == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    fn vbytes(b: Option<&[u8]>) -> Vec<u8> {
        match b {
            None => zz(-1),
            Some(b) => [zz(b.len() as i64), b.to_vec()].concat(),
        }
    }

    type Hdr<'b> = (Option<&'b [u8]>, Option<&'b [u8]>);

    fn record(od: i64, key: Option<&[u8]>, value: Option<&[u8]>, headers: &[Hdr]) -> Vec<u8> {
        let mut b = vec![0u8];
        b.extend(zz(od * 10));
        b.extend(zz(od));
        b.extend(vbytes(key));
        b.extend(vbytes(value));
        b.extend(zz(headers.len() as i64));
        for (k, v) in headers {
            b.extend(vbytes(*k));
            b.extend(vbytes(*v));
        }
        [zz(b.len() as i64), b].concat()
    }

    fn three_records() -> Vec<u8> {
        [
            record(0, None, Some(b"v0"), &[]),
            record(1, Some(b"k1"), Some(b"hello"), &[(Some(b"h"), None)]),
            record(2, Some(b"k2"), None, &[(None, Some(b"x"))]),
        ]
        .concat()
    }

    fn batch(base_offset: i64, attrs: i16, count: i32, records: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend(attrs.to_be_bytes());
        a.extend((count - 1).max(0).to_be_bytes());
        a.extend(TS.to_be_bytes());
        a.extend(TS.to_be_bytes());
        a.extend((-1i64).to_be_bytes());
        a.extend((-1i16).to_be_bytes());
        a.extend((-1i32).to_be_bytes());
        a.extend(count.to_be_bytes());
        a.extend(records);
        let mut b = base_offset.to_be_bytes().to_vec();
        b.extend(((9 + a.len()) as i32).to_be_bytes());
        b.extend((-1i32).to_be_bytes());
        b.push(2);
        b.extend(crc32c::crc32c(&a).to_be_bytes());
        b.extend(a);
        b
    }

    fn legacy(
        offset: i64,
        magic: u8,
        attrs: u8,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut m = vec![magic, attrs];
        if magic == 1 {
            m.extend(TS.to_be_bytes());
        }
        for b in [key, value] {
            match b {
                None => m.extend((-1i32).to_be_bytes()),
                Some(b) => {
                    m.extend((b.len() as i32).to_be_bytes());
                    m.extend(b);
                }
            }
        }
        let mut out = offset.to_be_bytes().to_vec();
        out.extend(((m.len() + 4) as i32).to_be_bytes());
        out.extend(crc32fast::hash(&m).to_be_bytes());
        out.extend(m);
        out
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn xerial(data: &[u8]) -> Vec<u8> {
        let mut x = b"\x82SNAPPY\x00".to_vec();
        x.extend(1i32.to_be_bytes());
        x.extend(1i32.to_be_bytes());
        for chunk in data.chunks(16) {
            let c = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
            x.extend((c.len() as i32).to_be_bytes());
            x.extend(c);
        }
        x
    }

    fn lz4(data: &[u8]) -> Vec<u8> {
        let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Checks that the leaves tile the field in buffer 0 and each decompressed buffer,
    /// and that every whole-leaf `Bytes` value is the buffer's bytes at the leaf.
    fn check_tiling(nodes: &[Node], len: usize, bufs: &[&[u8]], field: &[u8]) {
        let mut leaves: BTreeMap<u32, Vec<(usize, usize)>> = BTreeMap::new();
        for n in nodes {
            n.walk(&mut |x, _| {
                if x.children.is_empty() && x.length > 0 {
                    leaves
                        .entry(x.buffer)
                        .or_default()
                        .push((x.offset, x.length));
                    let buf: &[u8] = if x.buffer == 0 {
                        field
                    } else {
                        bufs[x.buffer as usize - 1]
                    };
                    let base = if x.buffer == 0 { BASE } else { 0 };
                    if let Value::Bytes(b) = x.value {
                        if b.len() == x.length {
                            assert_eq!(
                                b,
                                &buf[x.offset - base..x.end() - base],
                                "bytes of {}",
                                x.name
                            );
                        }
                    }
                }
                for c in &x.children {
                    if c.buffer == x.buffer {
                        assert!(
                            c.offset >= x.offset && c.end() <= x.end(),
                            "{} outside {}",
                            c.name,
                            x.name
                        );
                    }
                }
            });
        }
        let mut expect: Vec<(u32, usize, usize)> = vec![(0, BASE, BASE + len)];
        for (i, b) in bufs.iter().enumerate() {
            expect.push((i as u32 + 1, 0, b.len()));
        }
        for (id, start, end) in expect {
            let mut at = start;
            for &(o, l) in leaves.get(&id).map(|v| v.as_slice()).unwrap_or(&[]) {
                assert_eq!(o, at, "buffer {id}: gap or overlap at {at}");
                at += l;
            }
            assert_eq!(at, end, "buffer {id}: leaves end at {at}, buffer at {end}");
        }
    }

    struct Out {
        errors: Vec<(u32, usize, String, String)>,
        warnings: Vec<String>,
    }

    fn all(nodes: &[Node]) -> Out {
        let mut o = Out {
            errors: Vec::new(),
            warnings: Vec::new(),
        };
        for n in nodes {
            n.walk(&mut |x, _| {
                if let Some(e) = x.error() {
                    o.errors
                        .push((x.buffer, x.offset, x.name.to_string(), e.to_string()));
                }
                if let Some(w) = x.warning() {
                    o.warnings.push(w.to_string());
                }
            });
        }
        o
    }

    /// Decodes `field` at offset BASE, checks the tiling, then runs `f`.
    fn run_with(
        field: &[u8],
        partial_ok: bool,
        opts: DecodeOptions,
        f: impl FnOnce(&[Node], &Out),
    ) {
        let schema = Schema::embedded();
        let arena = Buffers::new();
        let mut cx = Cx::new(&schema, &arena, &opts);
        let mut r = Reader::new(field, BASE, 0, &arena);
        let nodes = decode_records(&mut cx, &mut r, partial_ok);
        assert_eq!(r.left(), 0);
        check_tiling(&nodes, field.len(), &cx.buffers, field);
        let o = all(&nodes);
        f(&nodes, &o);
    }

    fn run(field: &[u8], partial_ok: bool, f: impl FnOnce(&[Node], &Out)) {
        run_with(field, partial_ok, DecodeOptions::default(), f)
    }

    fn child<'n, 'a>(n: &'n Node<'a>, name: &str) -> &'n Node<'a> {
        n.children
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no {name} in {}", n.name))
    }

    fn ann<'n>(n: &'n Node) -> &'n str {
        n.annotation.unwrap_or("")
    }

    /// The values of the records (v2) or innermost messages (legacy), in order.
    fn values<'a>(nodes: &[Node<'a>]) -> Vec<Option<Vec<u8>>> {
        let mut out = Vec::new();
        for n in nodes {
            n.walk(&mut |x, _| {
                let legacy_plain = x.name == "Message"
                    && !x.children.iter().any(|c| c.name.contains("decompressed"));
                if x.name.starts_with("Record[") || legacy_plain {
                    if let Some(v) = x.children.iter().find(|c| c.name == "value") {
                        out.push(match v.value {
                            Value::Bytes(b) => Some(b.to_vec()),
                            _ => None,
                        });
                    }
                }
            });
        }
        out
    }

    fn three_values() -> Vec<Option<Vec<u8>>> {
        vec![Some(b"v0".to_vec()), Some(b"hello".to_vec()), None]
    }

    #[test]
    fn empty_batch_is_61_bytes_with_a_valid_crc() {
        let b = batch(0, 0, 0, &[]);
        assert_eq!(b.len(), 61);
        assert_eq!(i32::from_be_bytes(b[8..12].try_into().unwrap()), 49);
        run(&b, false, |nodes, o| {
            assert_eq!(nodes.len(), 1);
            let n = &nodes[0];
            assert_eq!(
                (n.name, n.ty, n.region, n.offset, n.length),
                ("RecordBatch", "RecordBatch", Region::RecordBatch, BASE, 61)
            );
            assert_eq!(ann(child(n, "crc")), "valid");
            assert_eq!(child(n, "crc").offset, BASE + 17);
            assert_eq!(ann(child(n, "partitionLeaderEpoch")), "none");
            assert_eq!(ann(child(n, "producerId")), "none");
            assert_eq!(ann(child(n, "baseTimestamp")), "2024-05-01T12:00:00.123Z");
            assert!(ann(child(n, "attributes")).contains("compression=none"));
            assert!(o.errors.is_empty() && o.warnings.is_empty());
        });
    }

    #[test]
    fn three_records_with_null_key_and_header_cases() {
        let b = batch(100, 0, 3, &three_records());
        run(&b, false, |nodes, o| {
            let recs = child(&nodes[0], "Records");
            assert_eq!(recs.children.len(), 3);
            assert_eq!(recs.value, Value::Count(3));
            let r0 = &recs.children[0];
            assert_eq!((r0.name, r0.region), ("Record[0]", Region::Record));
            assert_eq!(child(r0, "key").value, Value::Null);
            assert_eq!(ann(child(r0, "key")), "varint len=-1, null");
            assert_eq!(ann(child(r0, "value")), "varint len=2");
            let r1 = &recs.children[1];
            assert_eq!(ann(child(r1, "offsetDelta")), "offset 101");
            assert_eq!(ann(child(r1, "timestampDelta")), "2024-05-01T12:00:00.133Z");
            let h = child(r1, "Header[0]");
            assert_eq!(child(h, "headerKey").value, Value::Str("h"));
            assert_eq!(child(h, "headerValue").value, Value::Null);
            assert!(h.error().is_none() && child(h, "headerValue").error().is_none());
            let h2 = child(&recs.children[2], "Header[0]");
            let k = child(h2, "headerKey");
            assert!(k.error().unwrap().contains("null header key"));
            assert_eq!(o.errors.len(), 1, "{:?}", o.errors);
            assert_eq!(o.errors[0].1, k.offset);
            assert_eq!(ann(child(&nodes[0], "crc")), "valid");
        });
        assert_eq!(
            {
                let mut v = None;
                run(&b, false, |nodes, _| v = Some(values(nodes)));
                v.unwrap()
            },
            three_values()
        );
    }

    #[test]
    fn each_compression_decodes_into_a_new_buffer() {
        let recs = three_records();
        let cases: Vec<(i16, &str, Vec<u8>)> = vec![
            (1, "gzip", gzip(&recs)),
            (
                2,
                "snappy",
                snap::raw::Encoder::new().compress_vec(&recs).unwrap(),
            ),
            (2, "snappy", xerial(&recs)),
            (3, "lz4", lz4(&recs)),
            (4, "zstd", zstd::encode_all(&recs[..], 3).unwrap()),
        ];
        for (attrs, name, data) in cases {
            // a compressed batch, then a plain one: both in the same field
            let field = [batch(0, attrs, 3, &data), batch(3, 0, 3, &recs)].concat();
            run(&field, false, |nodes, o| {
                assert!(o.errors.len() == 2, "{name}: {:?}", o.errors); // the two null header keys
                let b = &nodes[0];
                let comp = child(b, "compressed records");
                assert!(comp.children.is_empty() && comp.buffer == 0);
                let a = ann(comp);
                assert!(
                    a.starts_with(&format!(
                        "{name}, {} B -> {} B, buffer 1",
                        data.len(),
                        recs.len()
                    )),
                    "{a}"
                );
                let d = child(b, "Records (decompressed)");
                assert_eq!((d.buffer, d.offset, d.length), (1, 0, recs.len()));
                assert!(d.description.unwrap().contains("decompressed buffer 1"));
                assert_eq!(d.children.len(), 3);
                d.walk(&mut |x, _| assert_eq!(x.buffer, 1));
                assert_eq!(values(&nodes[..1]), three_values());
                assert_eq!(values(&nodes[1..]), three_values());
            });
        }
    }

    #[test]
    fn corrupt_lz4_is_an_error_on_the_compressed_leaf_and_the_next_batch_decodes() {
        let recs = three_records();
        let mut data = lz4(&recs);
        // a block size past the frame's maximum
        data[7..11].copy_from_slice(&0x0fff_ffffu32.to_le_bytes());
        let field = [batch(0, 3, 3, &data), batch(3, 0, 3, &recs)].concat();
        run(&field, false, |nodes, o| {
            let comp = child(&nodes[0], "compressed records");
            assert!(comp.error().is_some());
            assert_eq!(o.errors[0].2, "compressed records");
            assert_eq!(values(&nodes[1..]), three_values());
        });
    }

    #[test]
    fn bombs_stop_at_the_cap() {
        let big = vec![0u8; 1 << 20];
        for (attrs, data) in [
            (1i16, gzip(&big)),
            (4, zstd::encode_all(&big[..], 3).unwrap()),
        ] {
            let field = batch(0, attrs, 1, &data);
            let opts = DecodeOptions {
                max_decompressed: 4096,
                ..DecodeOptions::default()
            };
            run_with(&field, false, opts, |nodes, o| {
                assert_eq!(o.errors.len(), 1);
                let comp = child(&nodes[0], "compressed records");
                assert!(
                    comp.error().unwrap().contains("cap of 4096 bytes"),
                    "{:?}",
                    comp.error()
                );
            });
        }
    }

    #[test]
    fn huge_record_count_is_an_error_not_an_allocation() {
        let field = batch(0, 0, 300_000_000, &[1u8; 10]);
        run(&field, false, |nodes, o| {
            let c = child(&nodes[0], "recordsCount");
            assert!(c.error().unwrap().contains("300000000"), "{:?}", c.error());
            assert!(!o.errors.is_empty());
        });
        // compressed: checked against the decompressed size
        let field = batch(0, 1, 300_000_000, &gzip(&[1u8; 10]));
        run(&field, false, |nodes, _| {
            assert!(child(&nodes[0], "recordsCount").error().is_some());
        });
    }

    #[test]
    fn varint_running_to_the_end() {
        // the record length itself
        let field = batch(0, 0, 1, &[0x80, 0x80, 0x80]);
        run(&field, false, |nodes, o| {
            let recs = child(&nodes[0], "Records");
            let l = child(&recs.children[0], "length");
            assert!(l.error().unwrap().contains("varint cut"), "{:?}", l.error());
            // and the count says more than 3 bytes can hold
            assert_eq!(o.errors.len(), 2, "{:?}", o.errors);
        });
        // a key length inside a record
        let field = batch(0, 0, 1, &[14, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        run(&field, false, |nodes, o| {
            let rec = &child(&nodes[0], "Records").children[0];
            assert!(child(rec, "key").error().unwrap().contains("varint cut"));
            assert_eq!(o.errors.len(), 1, "{:?}", o.errors);
        });
    }

    #[test]
    fn legacy_v0_and_v1_plain() {
        let field = [
            legacy(0, 0, 0, None, Some(b"zero")),
            legacy(1, 0, 0, Some(b"k"), Some(b"one")),
            legacy(2, 1, 0, Some(b"k"), Some(b"two")),
            legacy(3, 1, 0, None, None),
        ]
        .concat();
        run(&field, false, |nodes, o| {
            assert!(o.errors.is_empty(), "{:?}", o.errors);
            assert_eq!(nodes.len(), 4);
            assert_eq!(nodes[0].ty, "LegacyRecord v0");
            assert_eq!(nodes[2].ty, "LegacyRecord v1");
            assert_eq!(ann(child(&nodes[0], "crc")), "valid");
            assert_eq!(
                ann(child(&nodes[2], "timestamp")),
                "2024-05-01T12:00:00.123Z"
            );
            assert_eq!(ann(child(&nodes[1], "key")), "int32 len=1");
            assert_eq!(
                values(nodes),
                vec![
                    Some(b"zero".to_vec()),
                    Some(b"one".to_vec()),
                    Some(b"two".to_vec()),
                    None
                ]
            );
        });
    }

    #[test]
    fn legacy_gzip_wrappers_v0_and_v1_and_the_depth_cap() {
        for magic in [0u8, 1] {
            let inner = [
                legacy(0, magic, 0, None, Some(b"a")),
                legacy(1, magic, 0, None, Some(b"b")),
            ]
            .concat();
            let field = legacy(1, magic, 1, None, Some(&gzip(&inner)));
            run(&field, false, |nodes, o| {
                assert!(o.errors.is_empty(), "{:?}", o.errors);
                let d = child(&nodes[0], "Messages (decompressed)");
                assert_eq!((d.buffer, d.length, d.children.len()), (1, inner.len(), 2));
                assert_eq!(
                    values(nodes),
                    vec![Some(b"a".to_vec()), Some(b"b".to_vec())]
                );
            });
            // a wrapper in a wrapper, with max_depth 1
            let outer = legacy(1, magic, 1, None, Some(&gzip(&field)));
            let opts = DecodeOptions {
                max_depth: 1,
                ..DecodeOptions::default()
            };
            run_with(&outer, false, opts, |_, o| {
                assert_eq!(o.errors.len(), 1, "{:?}", o.errors);
                assert_eq!(o.errors[0].0, 1, "in buffer 1");
                assert_eq!(o.errors[0].3, "nesting deeper than the cap of 1 levels");
            });
        }
        // legacy snappy (xerial) and lz4
        let inner = [
            legacy(0, 1, 0, None, Some(b"a")),
            legacy(1, 1, 0, None, Some(b"b")),
        ]
        .concat();
        for (attrs, data) in [(2u8, xerial(&inner)), (3, lz4(&inner))] {
            run(
                &legacy(1, 1, attrs, None, Some(&data)),
                false,
                |nodes, o| {
                    assert!(o.errors.is_empty(), "{:?}", o.errors);
                    assert_eq!(
                        values(nodes),
                        vec![Some(b"a".to_vec()), Some(b"b".to_vec())]
                    );
                },
            );
        }
    }

    #[test]
    fn mixed_v1_and_v2() {
        let field = [
            legacy(0, 1, 0, None, Some(b"old")),
            batch(1, 0, 3, &three_records()),
            legacy(4, 0, 0, None, Some(b"older")),
        ]
        .concat();
        run(&field, false, |nodes, o| {
            assert_eq!(o.errors.len(), 1); // the null header key
            let names: Vec<_> = nodes.iter().map(|n| n.name.to_string()).collect();
            assert_eq!(names, ["Message", "RecordBatch", "Message"]);
            let mut want = vec![Some(b"old".to_vec())];
            want.extend(three_values());
            want.push(Some(b"older".to_vec()));
            assert_eq!(values(nodes), want);
        });
    }

    #[test]
    fn partial_last_batch() {
        let full = batch(0, 0, 3, &three_records());
        let field = [full.clone(), full[..40].to_vec()].concat();
        run(&field, true, |nodes, o| {
            assert_eq!(o.errors.len(), 1); // the null header key of the whole batch
            let p = nodes.last().unwrap();
            assert_eq!(
                (p.name, p.offset, p.length),
                ("partial batch", BASE + full.len(), 40)
            );
            assert!(p.error().is_none());
            let w = p.warning().unwrap();
            assert_eq!(
                w,
                format!(
                    "partial batch: 40 of {} bytes, cut by the broker's max bytes",
                    full.len()
                )
            );
        });
        run(&field, false, |nodes, o| {
            assert_eq!(o.errors.len(), 2);
            assert!(nodes
                .last()
                .unwrap()
                .error()
                .unwrap()
                .starts_with("partial batch: 40 of"));
            assert!(o.warnings.is_empty());
        });
        // fewer than 12 bytes
        run(&[0u8; 5], true, |nodes, o| {
            assert!(o.errors.is_empty() && o.warnings.len() == 1);
            assert_eq!(nodes[0].length, 5);
        });
        // a cut legacy message
        let m = legacy(0, 0, 0, None, Some(b"zero"));
        run(&m[..m.len() - 1], true, |_, o| {
            assert!(o.errors.is_empty() && o.warnings.len() == 1)
        });
    }

    #[test]
    fn invalid_crc_is_an_error_at_the_crc_leaf() {
        let mut b = batch(0, 0, 3, &three_records());
        b[20] ^= 1;
        let stored = u32::from_be_bytes(b[17..21].try_into().unwrap());
        run(&b, false, |nodes, o| {
            let crc = child(&nodes[0], "crc");
            assert_eq!(crc.value, Value::UInt(stored as u64));
            assert!(ann(crc).starts_with("invalid, computed 0x"));
            let e = o.errors.iter().find(|e| e.2 == "crc").unwrap();
            assert_eq!(e.1, BASE + 17);
        });
        let mut m = legacy(0, 1, 0, None, Some(b"x"));
        m[15] ^= 1;
        run(&m, false, |_, o| {
            assert_eq!(o.errors.len(), 1);
            assert_eq!((o.errors[0].1, o.errors[0].2.as_str()), (BASE + 12, "crc"));
        });
    }

    #[test]
    fn control_batch_markers() {
        let mut key = 0i16.to_be_bytes().to_vec();
        key.extend(1i16.to_be_bytes()); // COMMIT
        let mut val = 0i16.to_be_bytes().to_vec();
        val.extend(7i32.to_be_bytes());
        let mut lc_key = 0i16.to_be_bytes().to_vec();
        lc_key.extend(2i16.to_be_bytes()); // LEADER_CHANGE
                                           // LeaderChangeMessage v0 (flexible): LeaderId 1, Voters [], GrantingVoters [], no
                                           // tagged fields
        let lc_val = [0u8, 0, 0, 0, 0, 1, 1, 1, 0];
        let recs = [
            record(0, Some(&key), Some(&val), &[]),
            record(1, Some(&lc_key), Some(&lc_val), &[]),
        ]
        .concat();
        let field = batch(0, 0x30, 2, &recs);
        run(&field, false, |nodes, o| {
            assert!(o.errors.is_empty(), "{:?}", o.errors);
            assert!(ann(child(&nodes[0], "attributes")).contains("isControlBatch=true"));
            let rs = child(&nodes[0], "Records");
            let k = child(&rs.children[0], "key");
            assert_eq!((k.ty, ann(k)), ("ControlRecordKey", "COMMIT"));
            assert_eq!(ann(child(k, "type")), "COMMIT");
            let v = child(&rs.children[0], "value");
            assert_eq!(v.ty, "EndTxnMarker");
            assert_eq!(child(v, "coordinatorEpoch").value, Value::Int(7));
            let v = child(&rs.children[1], "value");
            assert_eq!(v.ty, "LeaderChangeMessage");
            let data = child(v, "LeaderChangeMessage");
            assert_eq!(data.offset, child(v, "length").end());
            assert_eq!(data.find("Version").unwrap().value, Value::Int(0));
            assert_eq!(data.find("LeaderId").unwrap().value, Value::Int(1));
        });
    }

    #[test]
    fn agrees_with_the_kafka_protocol_crate() {
        use bytes::Bytes;
        use kafka_protocol::protocol::StrBytes;
        use kafka_protocol::records::{
            Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
        };
        let mut recs = Vec::new();
        for i in 0..5i64 {
            let mut headers = kafka_protocol::indexmap::IndexMap::new();
            headers.insert(
                StrBytes::from_static_str("h"),
                Some(Bytes::from_static(b"hv")),
            );
            recs.push(Record {
                transactional: false,
                control: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: 10 + i,
                sequence: -1,
                timestamp: TS + i,
                key: (i % 2 == 0).then(|| Bytes::from(format!("key{i}"))),
                value: Some(Bytes::from(format!("value number {i}").repeat(3))),
                headers,
            });
        }
        let want: Vec<_> = recs
            .iter()
            .map(|r| r.value.as_ref().map(|v| v.to_vec()))
            .collect();
        for version in [0i8, 1, 2] {
            for compression in [
                Compression::None,
                Compression::Gzip,
                Compression::Snappy,
                Compression::Lz4,
                Compression::Zstd,
            ] {
                // the crate writes neither for message sets
                if version < 2 && matches!(compression, Compression::Zstd | Compression::Lz4) {
                    continue;
                }
                let mut recs = recs.clone();
                if version < 2 {
                    recs.iter_mut().for_each(|r| r.headers.clear());
                }
                let mut buf = bytes::BytesMut::new();
                let opts = RecordEncodeOptions {
                    version,
                    compression,
                };
                RecordBatchEncoder::encode(&mut buf, &recs, &opts).unwrap();
                run(&buf, false, |nodes, o| {
                    assert!(
                        o.errors.is_empty(),
                        "v{version} {compression:?}: {:?}",
                        o.errors
                    );
                    assert_eq!(values(nodes), want, "v{version} {compression:?}");
                });
            }
        }
    }

    #[test]
    fn time_format() {
        assert_eq!(format_millis(0).unwrap(), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_millis(TS).unwrap(), "2024-05-01T12:00:00.123Z");
        assert_eq!(
            format_millis(951_782_400_000).unwrap(),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(format_millis(-1).unwrap(), "1969-12-31T23:59:59.999Z");
        assert!(format_millis(i64::MAX).is_none());
        assert!(format_millis(i64::MIN).is_none());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn hostile_bytes_never_panic_and_tile(
            cut in 0usize..400,
            flips in proptest::collection::vec((0usize..400, 0u8..255), 0..6),
            codec in 0i16..5,
        ) {
            let recs = three_records();
            let data = match codec {
                1 => gzip(&recs),
                2 => xerial(&recs),
                3 => lz4(&recs),
                4 => zstd::encode_all(&recs[..], 3).unwrap(),
                _ => recs.clone(),
            };
            let mut field = [legacy(0, 1, 0, None, Some(b"x")), batch(0, codec, 3, &data), batch(3, 0, 3, &recs)].concat();
            for (at, x) in flips {
                let n = field.len();
                field[at % n] ^= x;
            }
            field.truncate(cut.max(1).min(field.len()));
            run(&field, true, |_, _| {});
            run(&field, false, |_, _| {});
        }
    }

    /// A record with `key`, `value` and headers, as bytes, from parts that may be
    /// out of range (negative lengths, huge counts).
    fn raw_record(
        len_delta: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(i64, Option<&[u8]>)],
        count_delta: i64,
    ) -> Vec<u8> {
        let mut body = vec![0u8];
        body.extend(zz(5));
        body.extend(zz(1));
        body.extend(vbytes(key));
        body.extend(vbytes(value));
        body.extend(zz(headers.len() as i64 + count_delta));
        for (klen, v) in headers {
            body.extend(zz(*klen));
            if *klen > 0 {
                body.extend(std::iter::repeat_n(b'k', *klen as usize));
            }
            body.extend(vbytes(*v));
        }
        let mut out = zz(body.len() as i64 + len_delta);
        out.extend(body);
        out
    }

    #[test]
    fn clean_record_check_accepts_clean_records_and_refuses_faults() {
        let ok = raw_record(0, Some(b"k"), None, &[(3, Some(b"v")), (2, None)], 0);
        assert_eq!(clean_record_len(&ok), Some(ok.len()));
        // A null header key (Kafka forbids it), a length past the end, a header count
        // one too many, bytes left inside the length: each sends the record to the
        // full decoder.
        for bad in [
            raw_record(0, None, None, &[(-1, Some(b"v"))], 0),
            raw_record(1, None, None, &[], 0),
            raw_record(0, None, None, &[(1, None)], 1),
            raw_record(-1, None, Some(b"xy"), &[], 0),
        ] {
            assert_eq!(clean_record_len(&bad), None, "{bad:02x?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// The summary's record check never calls a record clean that the full decoder
        /// finds fault with, and covers the bytes the full decoder reads.
        #[test]
        fn clean_record_check_agrees_with_the_full_decoder(
            len_delta in -3i64..3,
            key in proptest::option::of(proptest::collection::vec(0u8..255, 0..6)),
            value in proptest::option::of(proptest::collection::vec(0u8..255, 0..6)),
            headers in proptest::collection::vec((-2i64..4, proptest::option::of(proptest::collection::vec(0u8..255, 0..4))), 0..3),
            count_delta in -1i64..2,
            flips in proptest::collection::vec((0usize..64, 0u8..255), 0..3),
            cut in 1usize..80,
        ) {
            let hs: Vec<(i64, Option<&[u8]>)> = headers.iter().map(|(k, v)| (*k, v.as_deref())).collect();
            let mut b = raw_record(len_delta, key.as_deref(), value.as_deref(), &hs, count_delta);
            for (at, x) in flips {
                let n = b.len();
                b[at % n] ^= x;
            }
            b.truncate(cut.min(b.len()));
            let bcx = BatchCx { base_offset: 0, base_timestamp: 0, log_append_time: false, control: false };
            let schema = crate::schema::Schema::embedded();
            let arena = Buffers::new();
            let opts = DecodeOptions::default();
            let mut cx = Cx::new(&schema, &arena, &opts);
            let mut r = Reader::new(&b, 0, 0, &arena);
            let n = decode_record(&mut cx, &mut r, 0, &bcx);
            let mut problems = 0;
            n.walk(&mut |x, _| problems += usize::from(x.error().is_some() || x.warning().is_some()));
            if let Some(len) = clean_record_len(&b) {
                proptest::prop_assert_eq!(problems, 0, "clean by the check, not by the decoder: {:02x?}", b);
                proptest::prop_assert_eq!(len, r.pos);
            }
        }
    }

    /// The Fetch v0 responses of kafka-rust's test data: values must equal the companion
    /// text's lines.
    #[test]
    fn kafka_rust_fetch_v0_captures() {
        let Some(shared) = std::env::var_os("KWIRE_SHARED") else {
            if std::env::var("KWIRE_NO_SKIP").as_deref() == Ok("1") {
                panic!("KWIRE_SHARED not set and KWIRE_NO_SKIP=1");
            }
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                concat!(module_path!(), ": skipped: KWIRE_SHARED not set\n").as_bytes(),
            );
            return;
        };
        let dir = std::path::Path::new(&shared).join("captures/public/kafka-rust__kafka-rust");
        let files = [
            ("fetch1.mytopic.1p.nocompression.kafka.0821", "fetch1.txt"),
            ("fetch1.mytopic.1p.gzip.kafka.0821", "fetch1.txt"),
            ("fetch1.mytopic.1p.snappy.kafka.0821", "fetch1.txt"),
            ("fetch1.mytopic.1p.snappy.kafka.0822", "fetch1.txt"),
            ("fetch2.mytopic.nocompression.kafka.0900", "fetch2.txt"),
            (
                "fetch2.mytopic.nocompression.invalid_crc.kafka.0900",
                "fetch2.txt",
            ),
        ];
        // snappy-java's stream framing on its own
        let chunked = std::fs::read(dir.join("fetch1.snappy.chunked.4k")).unwrap();
        let d = compress::decompress(Codec::Snappy, &chunked, 1 << 20, false).unwrap();
        assert_eq!(d.data, std::fs::read(dir.join("fetch1.txt")).unwrap());
        assert!(d.note.unwrap().starts_with("xerial framing"));
        for (file, txt) in files {
            let body = std::fs::read(dir.join(file)).unwrap();
            let text = std::fs::read_to_string(dir.join(txt)).unwrap();
            let lines: Vec<Option<Vec<u8>>> =
                text.lines().map(|l| Some(l.as_bytes().to_vec())).collect();
            // Fetch v0 response: correlation_id, [topic, [partition, error_code,
            // high_watermark, records]]
            let be32 = |p: usize| i32::from_be_bytes(body[p..p + 4].try_into().unwrap());
            let mut p = 4;
            let topics = be32(p);
            p += 4;
            let mut got = Vec::new();
            let mut errors = Vec::new();
            for _ in 0..topics {
                let tl = i16::from_be_bytes([body[p], body[p + 1]]) as usize;
                p += 2 + tl;
                let parts = be32(p);
                p += 4;
                for _ in 0..parts {
                    p += 4 + 2 + 8;
                    let n = be32(p) as usize;
                    p += 4;
                    let field = &body[p..p + n];
                    let schema = Schema::embedded();
                    let arena = Buffers::new();
                    let opts = DecodeOptions::default();
                    let mut cx = Cx::new(&schema, &arena, &opts);
                    let mut r = Reader::new(field, p, 0, &arena);
                    let nodes = decode_records(&mut cx, &mut r, true);
                    got.extend(values(&nodes));
                    errors.extend(all(&nodes).errors.into_iter().map(|e| (e.1, e.2, e.3)));
                    p += n;
                }
            }
            assert_eq!(p, body.len(), "{file}: framing");
            assert!(!got.is_empty(), "{file}");
            assert_eq!(got, lines[..got.len()], "{file}");
            if file.contains("invalid_crc") {
                assert_eq!(errors.len(), 1, "{file}: {errors:?}");
                assert_eq!(errors[0].1, "crc");
                assert!(errors[0].2.contains("CRC-32 mismatch"));
            } else {
                assert!(errors.is_empty(), "{file}: {errors:?}");
                if txt == "fetch1.txt" {
                    assert_eq!(got.len(), lines.len(), "{file}: all lines");
                }
            }
        }
    }
}
