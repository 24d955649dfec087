//! TCP reassembly of one direction of one connection, by sequence number (RFC 793 / RFC 9293).
//!
//! Sequence numbers are 32-bit and wrap; the reassembler maps them to 64-bit stream offsets
//! relative to the stream start (ISN + 1 after a SYN, or the first data byte seen when the
//! capture starts mid-stream). Segments may arrive out of order, be retransmitted or overlap:
//! the first-seen bytes win and duplicates are dropped. Out-of-order data is buffered until the
//! missing bytes come, or until they are known lost and delivered as a [`Delivery::Gap`]:
//!
//! - the peer acknowledges them ([`Reassembler::acked`]): the receiver has them, so no
//!   retransmission will come, and only the capture lost them (also the last bytes before a
//!   pause, at the end of a frame: no later data need come to reveal them);
//! - the stream ends (RST, both FINs, the connection's idle timeout, the end of the capture;
//!   [`Reassembler::flush`]);
//! - the buffered bytes pass a byte cap, or the budget of all connections sheds them
//!   ([`Reassembler::give_up`]).

use std::collections::BTreeMap;

use super::Timestamp;

/// Maximum number of out-of-order pieces kept per direction (bounds bookkeeping overhead).
const MAX_PIECES: usize = 4096;

/// One TCP segment of this direction, as parsed from a packet.
#[derive(Clone, Debug)]
pub struct Segment<'a> {
    /// Sequence number of the segment (of the SYN itself when `syn`).
    pub seq: u32,
    /// Captured payload bytes.
    pub data: &'a [u8],
    /// Payload bytes that the segment carried on the wire but the capture did not keep
    /// (snaplen cut); they follow `data` in sequence space.
    pub missing: u32,
    /// SYN flag.
    pub syn: bool,
    /// FIN flag.
    pub fin: bool,
    /// RST flag.
    pub rst: bool,
    /// 1-based record number.
    pub frame: u64,
    /// Capture time.
    pub time: Timestamp,
}

/// In-order output of the reassembler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Contiguous bytes at `offset` of the stream.
    Data {
        /// Stream offset of `bytes[0]`.
        offset: u64,
        /// The bytes.
        bytes: Vec<u8>,
        /// Record that carried them.
        frame: u64,
        /// Its capture time.
        time: Timestamp,
    },
    /// `len` bytes at `offset` that will never arrive.
    Gap {
        /// Stream offset of the first missing byte.
        offset: u64,
        /// Number of missing bytes.
        len: u64,
        /// Record that revealed the gap (the one after it, or the truncated one).
        frame: u64,
    },
}

#[derive(Debug)]
struct Piece {
    /// `None`: known-missing bytes (snaplen cut).
    data: Option<Vec<u8>>,
    len: u64,
    frame: u64,
    time: Timestamp,
}

/// Reassembler for one direction.
#[derive(Debug)]
pub struct Reassembler {
    /// Sequence number of stream offset 0; `None` until the first SYN or data segment.
    base: Option<u32>,
    saw_syn: bool,
    /// Next expected stream offset.
    offset: u64,
    ooo: BTreeMap<u64, Piece>,
    ooo_bytes: usize,
    /// How many of the `ooo` pieces each record carried (the lowest is the hold floor,
    /// found without walking the pieces).
    ooo_frames: BTreeMap<u64, u32>,
    cap: usize,
    fin: Option<u64>,
    /// The end (stream offset) of the furthest bytes seen, delivered or buffered.
    high: u64,
    closed: bool,
    /// Duplicate payload bytes dropped so far.
    pub duplicate_bytes: u64,
    /// Out-of-order bytes dropped because they lay too far ahead.
    pub dropped_bytes: u64,
}

impl Reassembler {
    /// New reassembler buffering at most `cap` out-of-order bytes.
    pub fn new(cap: usize) -> Reassembler {
        Reassembler {
            base: None,
            saw_syn: false,
            offset: 0,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            ooo_frames: BTreeMap::new(),
            cap,
            fin: None,
            high: 0,
            closed: false,
            duplicate_bytes: 0,
            dropped_bytes: 0,
        }
    }

    /// True after a SYN was seen (the stream starts at its real beginning).
    pub fn saw_syn(&self) -> bool {
        self.saw_syn
    }

    /// True once the stream is finished (FIN reached, RST, or flushed).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The sequence number of stream offset 0 (ISN + 1 after a SYN, or the first data
    /// byte seen mid-stream); `None` before the first SYN or data segment.
    pub fn base(&self) -> Option<u32> {
        self.base
    }

    /// Next expected stream offset (bytes delivered or declared lost so far).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// True once a FIN was seen in this direction.
    pub fn saw_fin(&self) -> bool {
        self.fin.is_some()
    }

    /// Out-of-order payload bytes buffered now.
    pub fn held(&self) -> usize {
        self.ooo_bytes
    }

    /// The peer acknowledged sequence number `ack` (RFC 9293 SEG.ACK: every byte before it
    /// reached the receiver). Missing bytes before it will never be sent again: they are
    /// delivered as a gap now, with the buffered data after them. With `beyond` (the ACK
    /// comes with the peer's own data, FIN or RST: the peer answers, so what it
    /// acknowledges is all it will get), that holds past the last byte the capture saw
    /// too (the end of a frame lost), except for an ACK just one past it, which counts a
    /// FIN the capture missed more likely than one lost byte (a FIN takes one sequence
    /// number; a FIN seen ends the gap). A bare ACK does not reach past the last byte
    /// seen: during a transfer the receiver's delayed ACKs would cut one loss into many
    /// gaps. An ACK before the next expected byte, or more than 1 GiB ahead of it, is
    /// ignored.
    pub fn acked(&mut self, ack: u32, beyond: bool, frame: u64, out: &mut Vec<Delivery>) {
        if self.closed {
            return;
        }
        let Some(base) = self.base else {
            return;
        };
        let rel = ack.wrapping_sub(base.wrapping_add(self.offset as u32)) as i32 as i64;
        if rel <= 0 || rel > (1 << 30) {
            return;
        }
        let acked = self.offset + rel as u64;
        let to = match self.fin {
            Some(f) => acked.min(f),
            None if !beyond => acked.min(self.high),
            // One past everything seen: a FIN the capture missed, most likely.
            None if acked == self.high + 1 => self.high,
            None => acked,
        };
        if to <= self.offset {
            return;
        }
        loop {
            match self.ooo.first_key_value() {
                Some((&k, _)) if k < to => {
                    self.skip_to_first(frame, out);
                }
                _ => break,
            }
        }
        if to > self.offset {
            out.push(Delivery::Gap {
                offset: self.offset,
                len: to - self.offset,
                frame,
            });
            self.offset = to;
            self.high = self.high.max(to);
            self.drain(out);
        }
    }

    /// Declares every missing range before the buffered data lost and delivers that data
    /// (the budget of all connections sheds this direction's out-of-order bytes). The
    /// stream stays open.
    pub fn give_up(&mut self, frame: u64, out: &mut Vec<Delivery>) {
        while self.skip_to_first(frame, out) {}
    }

    /// Marks `seq` as the stream's first byte (the sequence number after the SYN, as the
    /// peer's SYN-ACK acknowledges it), when no SYN and no data have set one: a capture
    /// that missed the SYN still starts this stream at its real beginning.
    pub fn anchor(&mut self, seq: u32) {
        if self.base.is_none() && self.offset == 0 {
            self.base = Some(seq);
            self.saw_syn = true;
        }
    }

    /// Feed one segment; in-order data and gaps are appended to `out`.
    pub fn push(&mut self, seg: &Segment<'_>, out: &mut Vec<Delivery>) {
        if self.closed {
            return;
        }
        if seg.syn && self.base.is_none() {
            self.base = Some(seg.seq.wrapping_add(1));
            self.saw_syn = true;
        }
        let start_seq = if seg.syn {
            seg.seq.wrapping_add(1)
        } else {
            seg.seq
        };
        let total = seg.data.len() as u64 + seg.missing as u64;
        if self.base.is_none() {
            if total == 0 {
                // a pure ACK / FIN / RST before any data: nothing to anchor on
                if seg.rst || seg.fin {
                    self.closed = true;
                }
                return;
            }
            self.base = Some(start_seq);
        }
        let base = self.base.unwrap_or(start_seq);
        let expected_seq = base.wrapping_add(self.offset as u32);
        let rel = start_seq.wrapping_sub(expected_seq) as i32 as i64;
        let abs = self.offset as i64 + rel;
        if !seg.data.is_empty() && abs == self.offset as i64 && self.ooo.is_empty() {
            // In order with nothing held: delivered at once, without a piece in the
            // maps (whose first node stays allocated once made: a few KiB a connection).
            let len = seg.data.len() as u64;
            out.push(Delivery::Data {
                offset: self.offset,
                bytes: seg.data.to_vec(),
                frame: seg.frame,
                time: seg.time,
            });
            self.offset += len;
            self.high = self.high.max(self.offset);
        } else if !seg.data.is_empty() {
            self.insert(
                abs,
                Some(seg.data),
                seg.data.len() as u64,
                seg.frame,
                seg.time,
            );
        }
        if seg.missing > 0 {
            let mabs = abs + seg.data.len() as i64;
            self.insert(mabs, None, seg.missing as u64, seg.frame, seg.time);
        }
        if seg.fin {
            let end = abs + total as i64;
            if end >= 0 && self.fin.is_none() {
                self.fin = Some(end as u64);
            }
        }
        self.drain(out);
        if seg.rst {
            self.flush(seg.frame, out);
            return;
        }
        while self.ooo_bytes > self.cap || self.ooo.len() > MAX_PIECES {
            if !self.skip_to_first(seg.frame, out) {
                break;
            }
        }
    }

    fn insert(&mut self, start: i64, data: Option<&[u8]>, len: u64, frame: u64, time: Timestamp) {
        let orig = start;
        let end = start + len as i64;
        let cur = self.offset as i64;
        if end > 0 && start - cur <= (1 << 30) {
            self.high = self.high.max(end as u64);
        }
        if end <= cur {
            if data.is_some() {
                self.duplicate_bytes += len;
            }
            return;
        }
        // far-ahead data (beyond 1 GiB) is not trusted: drop it
        if start - cur > (1 << 30) {
            self.dropped_bytes += len;
            return;
        }
        if start < cur && data.is_some() {
            self.duplicate_bytes += (cur - start) as u64;
        }
        let start = start.max(cur) as u64;
        let end = end as u64;
        // subtract ranges already held (first-seen wins)
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        let mut pos = start;
        let prev = self
            .ooo
            .range(..start)
            .next_back()
            .map(|(k, p)| (*k, *k + p.len));
        if let Some((_, pend)) = prev {
            if pend > pos {
                pos = pend.min(end);
            }
        }
        for (k, p) in self.ooo.range(start..end) {
            if *k > pos {
                pieces.push((pos, *k));
            }
            pos = pos.max(*k + p.len);
            if pos >= end {
                break;
            }
        }
        if pos < end {
            pieces.push((pos, end));
        }
        let kept: u64 = pieces.iter().map(|(a, b)| b - a).sum();
        if data.is_some() {
            self.duplicate_bytes += (end - start) - kept;
        }
        for (a, b) in pieces {
            let piece_data = data.map(|d| {
                // index of `a` within the original data slice (which started at `orig`)
                let i0 = (a as i64 - orig) as usize;
                let i1 = (b as i64 - orig) as usize;
                d[i0.min(d.len())..i1.min(d.len())].to_vec()
            });
            if let Some(ref v) = piece_data {
                self.ooo_bytes += v.len();
            }
            *self.ooo_frames.entry(frame).or_default() += 1;
            self.ooo.insert(
                a,
                Piece {
                    data: piece_data,
                    len: b - a,
                    frame,
                    time,
                },
            );
        }
    }

    fn drain(&mut self, out: &mut Vec<Delivery>) {
        while let Some(entry) = self.ooo.first_entry() {
            if *entry.key() > self.offset {
                break;
            }
            let p = entry.remove();
            if let Some(n) = self.ooo_frames.get_mut(&p.frame) {
                *n -= 1;
                if *n == 0 {
                    self.ooo_frames.remove(&p.frame);
                }
            }
            match p.data {
                Some(d) => {
                    self.ooo_bytes -= d.len();
                    out.push(Delivery::Data {
                        offset: self.offset,
                        bytes: d,
                        frame: p.frame,
                        time: p.time,
                    });
                }
                None => out.push(Delivery::Gap {
                    offset: self.offset,
                    len: p.len,
                    frame: p.frame,
                }),
            }
            self.offset += p.len;
        }
        if self.ooo.is_empty() && self.ooo_frames.is_empty() {
            // Frees the maps' nodes: an open connection with nothing out of order holds
            // none.
            self.ooo = BTreeMap::new();
            self.ooo_frames = BTreeMap::new();
        }
        if let Some(f) = self.fin {
            if self.offset >= f && self.ooo.is_empty() {
                self.closed = true;
            }
        }
    }

    /// The lowest record number among the out-of-order pieces held, if any (see
    /// `Conn::hold_floor`).
    pub fn hold_floor(&self) -> Option<u64> {
        self.ooo_frames.keys().next().copied()
    }

    /// Declare the bytes up to the first buffered piece lost; false if nothing is buffered.
    fn skip_to_first(&mut self, frame: u64, out: &mut Vec<Delivery>) -> bool {
        let Some((&k, _)) = self.ooo.first_key_value() else {
            return false;
        };
        if k > self.offset {
            out.push(Delivery::Gap {
                offset: self.offset,
                len: k - self.offset,
                frame,
            });
            self.offset = k;
        }
        self.drain(out);
        true
    }

    /// End of stream (RST, connection end, end of capture): every missing range before
    /// buffered data or before the FIN becomes a gap, buffered data is delivered.
    pub fn flush(&mut self, frame: u64, out: &mut Vec<Delivery>) {
        while self.skip_to_first(frame, out) {}
        if let Some(f) = self.fin {
            if f > self.offset {
                out.push(Delivery::Gap {
                    offset: self.offset,
                    len: f - self.offset,
                    frame,
                });
                self.offset = f;
            }
        }
        self.closed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u32, data: &[u8], frame: u64) -> Segment<'_> {
        Segment {
            seq,
            data,
            missing: 0,
            syn: false,
            fin: false,
            rst: false,
            frame,
            time: Timestamp::default(),
        }
    }

    fn collect(out: &[Delivery]) -> (Vec<u8>, Vec<(u64, u64)>) {
        let mut d = Vec::new();
        let mut g = Vec::new();
        for x in out {
            match x {
                Delivery::Data { bytes, .. } => d.extend_from_slice(bytes),
                Delivery::Gap { offset, len, .. } => g.push((*offset, *len)),
            }
        }
        (d, g)
    }

    #[test]
    fn input_tcp_in_order_and_out_of_order() {
        let mut r = Reassembler::new(1 << 20);
        let mut out = Vec::new();
        let mut syn = seg(100, b"", 1);
        syn.syn = true;
        r.push(&syn, &mut out);
        r.push(&seg(105, b"efgh", 2), &mut out);
        assert!(out.is_empty());
        r.push(&seg(101, b"abc", 3), &mut out);
        r.push(&seg(101, b"abcd", 4), &mut out); // overlapping retransmission
        let (d, g) = collect(&out);
        assert_eq!(d, b"abcdefgh");
        assert!(g.is_empty());
        assert_eq!(r.duplicate_bytes, 3);
    }

    #[test]
    fn input_tcp_overlap_keeps_first_seen() {
        let mut r = Reassembler::new(1 << 20);
        let mut out = Vec::new();
        r.push(&seg(0, b"AB", 1), &mut out);
        r.push(&seg(4, b"EF", 2), &mut out);
        r.push(&seg(3, b"xyzw", 3), &mut out); // covers 3..7, overlapping 4..6
        r.push(&seg(2, b"C", 4), &mut out);
        let (d, _) = collect(&out);
        assert_eq!(d, b"ABCxEFw");
    }

    #[test]
    fn input_tcp_wraparound() {
        let mut r = Reassembler::new(1 << 20);
        let mut out = Vec::new();
        let mut syn = seg(u32::MAX - 2, b"", 1);
        syn.syn = true;
        r.push(&syn, &mut out);
        r.push(&seg(1, b"def", 3), &mut out);
        r.push(&seg(u32::MAX - 1, b"abc", 2), &mut out);
        let (d, g) = collect(&out);
        assert_eq!(d, b"abcdef");
        assert!(g.is_empty());
    }

    #[test]
    fn input_tcp_gap_on_cap_and_flush() {
        let mut r = Reassembler::new(4);
        let mut out = Vec::new();
        r.push(&seg(0, b"ab", 1), &mut out);
        r.push(&seg(5, b"fghij", 2), &mut out); // 3 bytes missing, over cap
        let (d, g) = collect(&out);
        assert_eq!(d, b"abfghij");
        assert_eq!(g, vec![(2, 3)]);
        let mut out = Vec::new();
        r.push(&seg(12, b"m", 3), &mut out);
        r.flush(4, &mut out);
        let (d, g) = collect(&out);
        assert_eq!(d, b"m");
        assert_eq!(g, vec![(10, 2)]);
    }

    #[test]
    fn input_tcp_missing_tail_is_gap() {
        let mut r = Reassembler::new(1 << 20);
        let mut out = Vec::new();
        let mut s = seg(10, b"abc", 1);
        s.missing = 5;
        r.push(&s, &mut out);
        r.push(&seg(18, b"z", 2), &mut out);
        let (d, g) = collect(&out);
        assert_eq!(d, b"abcz");
        assert_eq!(g, vec![(3, 5)]);
    }
}
