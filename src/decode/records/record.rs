//! One record of a v2 batch: length, attributes, timestamp and offset deltas, key,
//! value, headers; and the node-free check the summary level and folding use.

use super::*;

/// The length of the record (not a control record) at the start of `b`, length prefix
/// included, when [`decode_record`] would find no error and no warning in it; `None`
/// otherwise. It checks what `decode_record` checks, in the same order, without
/// building nodes: the length against the bytes left, each varint, key and value
/// lengths, the header count against the bytes left, each header key present and
/// UTF-8, the header value, and no bytes left over inside the length.
pub(super) fn clean_record_len(b: &[u8]) -> Option<usize> {
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
pub(super) fn record_node<'a>(
    cx: &mut Cx<'a>,
    i: usize,
    r: &Reader<'a>,
    start: usize,
    children: Vec<Node<'a>>,
) -> Node<'a> {
    let name = texts::record(i as i64, r.arena);
    group(cx, name, "Record", r.buffer, start, r.pos, children)
}

pub(super) fn decode_record<'a>(
    cx: &mut Cx<'a>,
    r: &mut Reader<'a>,
    i: usize,
    bcx: &BatchCx,
) -> Node<'a> {
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

pub(super) fn record_fields<'a>(
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

pub(super) fn record_body<'a>(
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
        let k = out.len();
        bytes_leaf(r, out, "key", LenPrefix::Varint)?;
        bytes_leaf(r, out, "value", LenPrefix::Varint)?;
        if let Some(t) = cx.topics.topic {
            crate::decode::internal_topics::key_value(cx, t, &mut out[k..]);
        }
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

pub(super) fn header<'a>(r: &mut Reader<'a>, h: &mut Vec<Node<'a>>) -> Res<()> {
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
