//! Reading one plain (not TLS) frame again from the records that carried it: the records
//! are parsed by the input layer's own code ([`Links`], `ip_tcp`), and this direction's
//! segments go through a fresh [`Reassembler`] anchored at the frame's first sequence
//! number, so that retransmissions, overlaps, out-of-order segments and snaplen cuts come
//! out as they did in the whole pass.

use crate::input::capture::{ip_tcp, link_supported, segment, Parsed, Rec};
use crate::input::tcp::{Delivery, Reassembler};

use super::{Capture, MessageInfo, RECORD_STEP};

/// The `len` bytes of the frame `info` whose first byte has TCP sequence number `seq` and
/// whose bytes came in records `low..=high`; what went wrong otherwise.
pub(super) fn bytes(
    cap: &Capture,
    info: &MessageInfo,
    low: u64,
    high: u64,
    seq: u32,
    len: usize,
) -> Result<Vec<u8>, String> {
    let map = &cap.map[..];
    let k = (low.saturating_sub(1) / RECORD_STEP) as usize;
    let Some(&start) = cap.records.get(k) else {
        return Err(format!("record {low} is not in the capture"));
    };
    let mut number = k as u64 * RECORD_STEP + 1;
    let mut links = match cap.links.iter().rev().find(|(from, _)| *from <= number) {
        Some((_, l)) => l.clone(),
        None => return Err("the capture's file header was not seen".into()),
    };
    let mut reasm = Reassembler::new(cap.max_out_of_order);
    reasm.anchor(seq);
    let mut out: Vec<Delivery> = Vec::new();
    let mut bytes: Vec<u8> = Vec::with_capacity(len);
    let mut gap = false;
    let mut at = start as usize;
    let take = |out: &mut Vec<Delivery>, bytes: &mut Vec<u8>, gap: &mut bool| {
        for d in out.drain(..) {
            match d {
                Delivery::Data {
                    offset, bytes: b, ..
                } if !*gap && offset == bytes.len() as u64 => {
                    let n = b.len().min(len - bytes.len());
                    bytes.extend_from_slice(&b[..n]);
                }
                _ => *gap = true,
            }
        }
    };
    while number <= high && bytes.len() < len && !gap {
        let Some(rest) = map.get(at..) else {
            break;
        };
        let Some((block, used)) = links.parse(rest) else {
            return Err(format!("record {number} does not parse"));
        };
        at += used.max(1);
        let Rec::Packet(p) = links.record(&block) else {
            continue;
        };
        let n = number;
        number += 1;
        if n < low || !link_supported(p.linktype) {
            continue;
        }
        if let Parsed::Tcp {
            src,
            dst,
            tcp,
            missing,
        } = ip_tcp(p.linktype, p.data, p.origlen)
        {
            if src == info.src.ip()
                && dst == info.dst.ip()
                && tcp.source_port() == info.src.port()
                && tcp.destination_port() == info.dst.port()
            {
                reasm.push(&segment(&tcp, missing, n, p.time), &mut out);
                take(&mut out, &mut bytes, &mut gap);
            }
        }
    }
    if bytes.len() < len && !gap {
        reasm.flush(high, &mut out);
        take(&mut out, &mut bytes, &mut gap);
    }
    if bytes.len() != len {
        return Err(format!(
            "records {low} to {high} give {} of its {len} bytes",
            bytes.len()
        ));
    }
    Ok(bytes)
}
