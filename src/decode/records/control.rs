//! Control records (control batches): the key's type and the value's marker or KRaft
//! struct.

use super::*;

/// Control record types (Kafka's `ControlRecordType`), with the data definition of the
/// value for the KRaft ones.
pub(super) fn control_type(t: i64) -> Option<(&'static str, Option<&'static str>)> {
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
pub(super) fn control_record<'a>(
    cx: &mut Cx<'a>,
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
) -> Res<()> {
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
                    let node = crate::decode::walk::decode_data(cx, def, version, &mut vr, def);
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
