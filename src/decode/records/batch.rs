//! RecordBatch v2: the batch header, its CRC-32C, decompression, the record list and
//! the folding of records past the message's node budget.

use super::*;

/// What records need to know of their batch.
pub(super) struct BatchCx {
    pub(super) base_offset: i64,
    pub(super) base_timestamp: i64,
    pub(super) log_append_time: bool,
    pub(super) control: bool,
}

pub(super) fn decode_batch_v2<'a>(cx: &mut Cx<'a>, r: &mut Reader<'a>) -> Node<'a> {
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

pub(super) fn batch_v2_fields<'a>(
    cx: &mut Cx<'a>,
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
) -> Res<()> {
    let whole = r.rest;
    // The summary and fact trees show no annotation of a batch header: they are not
    // formatted there (dates, attribute lists), only at the rows level and above.
    let annotated = !matches!(cx.opts.detail, Detail::Summary | Detail::Facts);
    let base_offset = int(r, out, "baseOffset", "int64", wire::int64)?;
    let len = int(r, out, "batchLength", "int32", wire::int32)?;
    if annotated {
        annotate(out, r.fmt(format_args!("{len} bytes follow")));
    }
    let ple = int(r, out, "partitionLeaderEpoch", "int32", wire::int32)?;
    none_if_minus_one(out, ple);
    int(r, out, "magic", "int8", wire::int8)?;
    let crc = read(r, out, "crc", "uint32", wire::uint32, |v| {
        Value::UInt(u64::from(*v))
    })?;
    let computed = crc32c::crc32c(whole.get(21..).unwrap_or(&[]));
    check_crc(r, out, "CRC-32C", crc, computed);
    let attrs = int(r, out, "attributes", "int16", wire::int16)?;
    let codec = Codec::from_attributes(attrs);
    let log_append_time = attrs & 0x08 != 0;
    let control = attrs & 0x20 != 0;
    let delete_horizon = attrs & 0x40 != 0;
    if annotated {
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
    }
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
    if annotated {
        let mut ann = time_annotation(r, base_timestamp, "");
        if delete_horizon {
            ann = r.fmt(format_args!("delete horizon {ann}"));
        }
        annotate(out, ann);
    }
    let max_ts = int(r, out, "maxTimestamp", "int64", wire::int64)?;
    if annotated {
        annotate(out, time_annotation(r, max_ts, ""));
    }
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
    let arena = cx.arena;
    let charge = |n| arena.charge(n);
    match compress::decompress_charged(codec, data, cx.decompress_budget(), false, &charge) {
        Err(e) => {
            comp.annotation = Some(r.fmt(format_args!("{}, {} B", codec.name(), data.len())));
            comp.set_error(r.s(&budget_words(e, cx)));
            out.push(comp);
        }
        Ok(d) => {
            let dlen = d.data.len();
            let note = d.note.map(|n| format!(", {n}")).unwrap_or_default();
            if let Some(w) = &d.warning {
                comp.set_warning(r.s(w));
            }
            // Bytes after the data that decoded (after the last LZ4 frame): a leaf of
            // their own, with the error at their offset.
            let rest = d.trailing.as_ref().map(|(at, why)| {
                comp.length = *at;
                comp.value = Value::Bytes(&data[..*at]);
                let mut l = leaf(
                    r,
                    "unread compressed bytes",
                    "bytes",
                    Value::Bytes(&data[*at..]),
                    comp.offset + at,
                    data.len() - at,
                );
                l.set_error(r.s(why));
                l
            });
            if dlen == 0 {
                comp.annotation = Some(r.fmt(format_args!(
                    "{}, {} B -> 0 B{note}",
                    codec.name(),
                    data.len()
                )));
                out.push(comp);
                out.extend(rest);
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
            out.extend(rest);
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
pub(super) fn record_list<'a>(
    cx: &mut Cx<'a>,
    r: &mut Reader<'a>,
    count: i64,
    bcx: &BatchCx,
) -> (Vec<Node<'a>>, usize) {
    let room = cx.budget_left() / RECORD_NODES + 1;
    let cap = (count.max(0) as usize)
        .min(r.left() / MIN_RECORD + 1)
        .min(room);
    let mut recs = cx.vec();
    // Records of an internal topic (`__consumer_offsets`...) keep their nodes at every
    // level: their keys and values decode into trees that name topics, groups and
    // producers, which `-Y topic` and the rest read there as in the whole tree.
    let skim = cx.opts.detail != Detail::Full && !bcx.control && cx.topics.topic.is_none();
    if !skim {
        // The summary keeps no node for a clean record: nothing to make room for.
        recs.reserve(cap);
    }
    let mut i = 0usize;
    while (i as i64) < count && r.left() > 0 {
        if cx.budget_left() == 0 {
            let folded = fold_records(cx, r, i, count, bcx);
            i += folded.0;
            recs.push(folded.1);
            break;
        }
        cx.spend(RECORD_NODES);
        if skim {
            if let Some(n) = clean_record_len(r.rest) {
                // A record that decodes without an error or a warning: the summary
                // reads the count from the `Records` group and needs no node for it.
                r.split(n);
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

/// The nodes one record is counted as against the message's node budget (the record,
/// its seven fields and a header), at either detail level.
pub(super) const RECORD_NODES: usize = 9;

/// Records `first..count` of a list, past the message's node budget: each is read and
/// checked as [`decode_record`] does (a record [`clean_record_len`] cannot vouch for is
/// decoded in full into a scratch arena and dropped), counted, and the lot stands as one
/// leaf over their bytes, `Record[first..last]` of type `folded`, whose value is the
/// count, whose annotation says why and how to see them (`--max-nodes`), and which
/// carries an error (a warning) naming the first error (warning) among them and how many
/// records had one. Returns the count and the leaf.
pub(super) fn fold_records<'a>(
    cx: &mut Cx<'a>,
    r: &mut Reader<'a>,
    first: usize,
    count: i64,
    bcx: &BatchCx,
) -> (usize, Node<'a>) {
    let start = r.pos;
    let mut i = first;
    let scratch = &mut crate::tree::Buffers::new();
    let mut found = crate::decode::Folded::default();
    while (i as i64) < count && r.left() > 0 {
        if !bcx.control {
            if let Some(n) = clean_record_len(r.rest) {
                r.split(n);
                i += 1;
                continue;
            }
        }
        scratch.reset();
        let mut scx = Cx::new(cx.schema, scratch, cx.opts);
        scx.depth = cx.depth;
        let mut sr = Reader {
            arena: scratch,
            ..*r
        };
        let n = decode_record(&mut scx, &mut sr, i, bcx);
        found.note(i as u64, &n);
        let used = r.left() - sr.left();
        r.split(used.max(1).min(r.left()));
        i += 1;
    }
    let folded = i - first;
    let span = (first as u64, folded as u64);
    let mut n = found.leaf(r, "Record", "record", span, start, cx.opts.max_nodes);
    n.region = Region::Record;
    (folded, n)
}
