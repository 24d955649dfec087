//! Legacy messages (MessageSet v0/v1, Kafka's `LegacyRecord`), compressed wrappers
//! included.

use super::*;

pub(super) fn decode_legacy<'a>(cx: &mut Cx<'a>, r: &mut Reader<'a>, magic: i8) -> Node<'a> {
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

pub(super) fn legacy_fields<'a>(
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
    check_crc(r, out, "CRC-32", crc, computed);
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
    let arena = cx.arena;
    let charge = |n| arena.charge(n);
    match compress::decompress_charged(codec, data, cx.decompress_budget(), magic == 0, &charge) {
        Err(e) => {
            out[value_idx].annotation =
                Some(r.fmt(format_args!("int32 len={}, {}", data.len(), codec.name())));
            out[value_idx].set_error(r.s(&budget_words(e, cx)));
        }
        Ok(d) => {
            let dlen = d.data.len();
            let note = d
                .note
                .map(|n| r.fmt(format_args!(", {n}")))
                .unwrap_or_default();
            if let Some(w) = &d.warning {
                out[value_idx].set_warning(r.s(w));
            }
            if let Some((at, why)) = &d.trailing {
                // The value is one leaf (length prefix and bytes): the offset in words.
                let (frame_at, buffer) = (out[value_idx].offset + 4 + at, out[value_idx].buffer);
                let e = r.fmt(format_args!("{why} (byte {frame_at} of buffer {buffer})"));
                out[value_idx].set_error(e);
            }
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
