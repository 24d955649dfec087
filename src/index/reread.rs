//! Reading one plain (not TLS) frame again from the records that carried it: the records
//! are parsed by the input layer's own code ([`Links`], `ip_tcp`), and this direction's
//! segments go through a fresh [`Reassembler`] anchored at the frame's first sequence
//! number, so that retransmissions, overlaps, out-of-order segments and snaplen cuts come
//! out as they did in the whole pass.
//!
//! A segment that came in IP fragments was put together by the whole pass from records
//! before the frame's (up to [`FRAG_WINDOW`] records back, the window the whole pass
//! keeps fragments for): when one of the frame's records is such a fragment, the frame is
//! read again from that window before it, with the same defragmentation. Either way the
//! read is bounded: at most 15 + [`FRAG_WINDOW`] + 256 records before the frame's own.

use etherparse::defrag::IpDefragPool;
use etherparse::{SlicedPacket, TcpSlice};

use crate::input::capture::{ip_tcp, link_supported, segment, Parsed, Rec, FRAG_WINDOW};
use crate::input::tcp::{Delivery, Reassembler, Segment};
use crate::input::Links;

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
    match read(cap, info, low, high, seq, len, false) {
        Err(Reread::Fragments) => match read(cap, info, low, high, seq, len, true) {
            Ok(b) => Ok(b),
            Err(Reread::Fragments) => Err("its IP fragments do not reassemble".into()),
            Err(Reread::Failed(why)) => Err(why),
        },
        Ok(b) => Ok(b),
        Err(Reread::Failed(why)) => Err(why),
    }
}

enum Reread {
    /// One of the frame's records is an IP fragment of its flow, and the read did not
    /// start early enough to have the fragments before it.
    Fragments,
    Failed(String),
}

/// The link state for record `number` and the first record at or before `from` whose
/// offset is kept: (its number, its offset, the links).
fn start(cap: &Capture, from: u64) -> Result<(u64, usize, Links), Reread> {
    let k = (from.saturating_sub(1) / RECORD_STEP) as usize;
    let Some(&at) = cap.records.get(k) else {
        return Err(Reread::Failed(format!(
            "record {from} is not in the capture"
        )));
    };
    let number = k as u64 * RECORD_STEP + 1;
    match cap.links.iter().rev().find(|(from, _)| *from <= number) {
        Some((_, l)) => Ok((number, at as usize, l.clone())),
        None => Err(Reread::Failed(
            "the capture's file header was not seen".into(),
        )),
    }
}

fn read(
    cap: &Capture,
    info: &MessageInfo,
    low: u64,
    high: u64,
    seq: u32,
    len: usize,
    fragments: bool,
) -> Result<Vec<u8>, Reread> {
    let map = &cap.map[..];
    // With fragments: as far back as the whole pass may have kept a fragment (it drops
    // those older than FRAG_WINDOW records when a fragment comes at a multiple of 256).
    let from = if fragments {
        low.saturating_sub(FRAG_WINDOW + 256).max(1)
    } else {
        low
    };
    let (mut number, mut at, mut links) = start(cap, from)?;
    let first = at;
    let mut defrag: IpDefragPool<u64, ()> = IpDefragPool::new();
    let mut reasm = Reassembler::new(cap.max_out_of_order);
    reasm.anchor(seq);
    let mut out: Vec<Delivery> = Vec::new();
    let mut bytes: Vec<u8> = Vec::with_capacity(len);
    let mut gap = false;
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
    let ports = (info.src.port(), info.dst.port());
    let ours = |tcp: &TcpSlice<'_>| (tcp.source_port(), tcp.destination_port()) == ports;
    while number <= high && bytes.len() < len && !gap {
        let Some(rest) = map.get(at..) else {
            break;
        };
        let Some((block, used)) = links.parse(rest) else {
            return Err(Reread::Failed(format!("record {number} does not parse")));
        };
        at += used.max(1);
        let Rec::Packet(p) = links.record(&block) else {
            continue;
        };
        let n = number;
        number += 1;
        if !link_supported(p.linktype) {
            continue;
        }
        match ip_tcp(p.linktype, p.data, p.origlen) {
            Parsed::Tcp {
                src,
                dst,
                tcp,
                missing,
            } if n >= low && src == info.src.ip() && dst == info.dst.ip() && ours(&tcp) => {
                reasm.push(&segment(&tcp, missing, n, p.time), &mut out);
                take(&mut out, &mut bytes, &mut gap);
            }
            Parsed::Fragment { ip, src, dst } => {
                if !fragments {
                    if n >= low && src == info.src.ip() && dst == info.dst.ip() {
                        return Err(Reread::Fragments);
                    }
                    continue;
                }
                // As the whole pass does (`Extractor::fragment`), for the fragments of
                // every flow (they decide when old ones are dropped).
                if n.is_multiple_of(256) {
                    let cutoff = n.saturating_sub(FRAG_WINDOW);
                    defrag.retain(|t| *t >= cutoff);
                }
                if src != info.src.ip() || dst != info.dst.ip() {
                    continue;
                }
                let Ok(sp) = SlicedPacket::from_ip(ip) else {
                    continue;
                };
                if let Ok(Some(pv)) = defrag.process_sliced_packet(&sp, n, ()) {
                    if let Ok(tcp) = TcpSlice::from_slice(&pv.payload) {
                        if n >= low && ours(&tcp) {
                            let seg: Segment<'_> = segment(&tcp, 0, n, p.time);
                            reasm.push(&seg, &mut out);
                            take(&mut out, &mut bytes, &mut gap);
                        }
                    }
                    defrag.return_buf(pv);
                }
            }
            _ => {}
        }
    }
    cap.note_read(first, at);
    if bytes.len() < len && !gap {
        reasm.flush(high, &mut out);
        take(&mut out, &mut bytes, &mut gap);
    }
    if bytes.len() != len {
        return Err(Reread::Failed(format!(
            "records {low} to {high} give {} of its {len} bytes",
            bytes.len()
        )));
    }
    Ok(bytes)
}
