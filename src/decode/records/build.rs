//! Small builders shared by the record decoders: leaves, groups, primitive readers
//! that push their leaf (or an error leaf over the rest) and the `Stop` they return.

use super::*;

/// An error leaf covering the rest of the reader was pushed; stop this structure.
pub(super) struct Stop;

pub(super) type Res<T> = Result<T, Stop>;

pub(super) fn leaf<'a>(
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
pub(super) fn group<'a>(
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

pub(super) fn read<'a, T>(
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

pub(super) fn int<'a, T: Into<i64> + Copy>(
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
    name: &'static str,
    ty: &'static str,
    p: impl Fn(&'a [u8]) -> WResult<'a, T>,
) -> Res<i64> {
    read(r, out, name, ty, p, |v| Value::Int((*v).into())).map(Into::into)
}

pub(super) fn annotate<'a>(out: &mut [Node<'a>], a: &'a str) {
    if let Some(n) = out.last_mut() {
        n.annotation = Some(a);
    }
}

pub(super) fn set_error<'a>(out: &mut [Node<'a>], e: &'a str) {
    if let Some(n) = out.last_mut() {
        n.set_error(e);
    }
}

/// Annotates -1 as `none` (leader epochs, producer ids, sequences).
/// Annotates the last node (a stored checksum) with whether it matches the one computed
/// over the bytes it covers, and sets an error naming both when it does not. `what` is
/// the checksum's name (`CRC-32C` for RecordBatch v2, `CRC-32` for legacy messages).
pub(super) fn check_crc<'a>(
    r: &Reader<'a>,
    out: &mut [Node<'a>],
    what: &str,
    crc: u32,
    computed: u32,
) {
    if crc == computed {
        annotate(out, r.fmt(format_args!("0x{crc:08x}, valid")));
    } else {
        annotate(
            out,
            r.fmt(format_args!(
                "0x{crc:08x}, invalid, computed 0x{computed:08x}"
            )),
        );
        set_error(
            out,
            r.fmt(format_args!(
                "{what} mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}"
            )),
        );
    }
}

pub(super) fn none_if_minus_one(out: &mut [Node<'_>], v: i64) {
    if v == -1 {
        annotate(out, "none");
    }
}

/// A leaf covering the rest of the reader, with an error, if anything is left.
pub(super) fn trailing<'a>(r: &mut Reader<'a>, out: &mut Vec<Node<'a>>, what: &str) {
    if r.left() > 0 {
        let n = r.left();
        let m = r.fmt(format_args!("{n} bytes after {what}"));
        out.push(r.error_leaf("trailing bytes", "bytes", m));
    }
}

/// A length-prefixed byte string as one leaf (prefix and bytes), `Value::Null` for null.
pub(super) fn bytes_leaf<'a>(
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
pub(super) fn varint_sized<'a>(
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
pub(super) fn stop_after_bad_length<'a, T>(
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

pub(super) fn checked_count(
    count: i64,
    left: usize,
    min_each: usize,
    what: &str,
) -> Option<String> {
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
