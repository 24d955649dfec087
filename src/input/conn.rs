//! One TCP connection: its two reassemblers and framers, and the logic above them: which
//! side is the server, TLS detection, SASL v0 raw tokens (KIP-43).

use std::collections::VecDeque;
use std::net::SocketAddr;

use super::framer::{find_frame_start, Framer, FramerOut, Scan, PEEK};
use super::order::Reorder;
use super::tcp::{Delivery, Reassembler, Segment};
use super::tls::{KeyLog, TlsConn, TlsOut, TlsShed};
use super::{
    CaptureOptions, CaptureStats, Direction, Event, Frame, FrameContext, FrameKind,
    FramePlausibility, Notice, NoticeKind, Timestamp,
};

/// Correlation ids of recent requests remembered per connection, to check response
/// candidates while resynchronising.
const RECENT_CORRS: usize = 1024;

/// Response plausibility narrowed to correlation ids of requests seen on the connection,
/// or below all of them (answers to requests sent before the capture began).
struct KnownCorr<'a> {
    inner: &'a dyn FramePlausibility,
    corrs: &'a VecDeque<i32>,
    /// The lowest request correlation_id seen on the connection.
    low: Option<i32>,
}

impl FramePlausibility for KnownCorr<'_> {
    fn plausible_request(&self, b: &[u8]) -> bool {
        self.inner.plausible_request(b)
    }
    fn plausible_response(&self, b: &[u8]) -> bool {
        if !self.inner.plausible_response(b) {
            return false;
        }
        if self.corrs.is_empty() || b.len() < 4 {
            return true;
        }
        let c = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        self.corrs.contains(&c) || self.low.is_some_and(|l| c < l)
    }
    fn known_correlation(&self, b: &[u8]) -> bool {
        b.len() >= 4
            && self
                .corrs
                .contains(&i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

fn looks_tls(b: &[u8]) -> bool {
    b.len() >= 3 && (0x14..=0x17).contains(&b[0]) && b[1] == 3 && b[2] <= 4
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Undecided,
    Kafka,
    Tls,
    NotKafka,
}

/// Where connection output goes.
pub(crate) struct Sink<'a> {
    pub opts: &'a CaptureOptions,
    pub plaus: &'a dyn FramePlausibility,
    pub stats: &'a mut CaptureStats,
    /// Events wait here for their turn (see [`super::order`]).
    pub order: &'a mut Reorder,
    /// The record being processed: the key of the notices raised now.
    pub now: u64,
    /// Secrets for TLS connections.
    pub keys: &'a KeyLog,
}

impl Sink<'_> {
    pub fn notice(&mut self, n: Notice) {
        self.stats.notices += 1;
        self.order.push(self.now, Event::Notice(n));
    }
}

/// Bytes held per direction while deciding what a connection is.
const UNDECIDED_CAP: usize = 256 * 1024;

/// One TCP connection: two reassemblers, two framers, and the Kafka-level state.
pub(crate) struct Conn {
    pub id: u32,
    /// `addrs[0]` is the source of the first packet seen.
    pub addrs: [SocketAddr; 2],
    reasm: [Reassembler; 2],
    framers: [Option<Framer>; 2],
    /// Side index (0/1) of the client, when known.
    client: Option<usize>,
    syn_sender: Option<usize>,
    state: State,
    pending: [Vec<Delivery>; 2],
    pending_bytes: [usize; 2],
    sasl_corr: Option<i32>,
    sasl_raw: bool,
    last_frame: u64,
    recent_corrs: VecDeque<i32>,
    /// The lowest request correlation_id seen.
    low_corr: Option<i32>,
    /// The TLS layer, for a connection that carries TLS.
    tls: Option<Box<TlsConn>>,
    /// Capture time of the last segment (for the idle timeout,
    /// [`CaptureOptions::idle_timeout`]).
    pub last_time: Timestamp,
}

impl Conn {
    pub fn new(id: u32, addrs: [SocketAddr; 2], opts: &CaptureOptions) -> Conn {
        let in0 = opts.ports.contains(&addrs[0].port());
        let in1 = opts.ports.contains(&addrs[1].port());
        let client = match (in0, in1) {
            (false, true) => Some(0),
            (true, false) => Some(1),
            _ => None,
        };
        Conn {
            id,
            addrs,
            reasm: [
                Reassembler::new(opts.max_out_of_order),
                Reassembler::new(opts.max_out_of_order),
            ],
            framers: [None, None],
            client,
            syn_sender: None,
            state: State::Undecided,
            pending: [Vec::new(), Vec::new()],
            pending_bytes: [0, 0],
            sasl_corr: None,
            sasl_raw: false,
            last_frame: 0,
            recent_corrs: VecDeque::new(),
            low_corr: None,
            tls: None,
            last_time: Timestamp::default(),
        }
    }

    /// The lowest record number among the bytes this connection holds back (while deciding
    /// what it carries, looking for a frame start, or waiting for a missing segment): no
    /// event it raises later can be completed by an earlier record. `None` when it holds
    /// nothing back.
    pub fn hold_floor(&self) -> Option<u64> {
        let mut floor: Option<u64> = None;
        let mut low = |f: Option<u64>| {
            if let Some(f) = f {
                floor = Some(floor.map_or(f, |x| x.min(f)));
            }
        };
        for s in 0..2 {
            low(self.reasm[s].hold_floor());
            low(self.framers[s].as_ref().and_then(Framer::hold_floor));
            low(self.pending[s]
                .iter()
                .map(|d| match d {
                    Delivery::Data { frame, .. } | Delivery::Gap { frame, .. } => *frame,
                })
                .min());
        }
        floor
    }

    /// True when both directions are finished.
    pub fn is_closed(&self) -> bool {
        self.reasm[0].is_closed() && self.reasm[1].is_closed()
    }

    /// Bytes this connection holds in flight: out-of-order segments, partial frames and
    /// bytes held while resynchronising, bytes held while deciding what it carries, TLS
    /// records and handshake messages not yet whole. What the in-flight budget of all
    /// connections counts ([`CaptureOptions::max_in_flight`]).
    pub fn held(&self) -> usize {
        let mut n = self.pending_bytes[0] + self.pending_bytes[1];
        for s in 0..2 {
            n += self.reasm[s].held();
            n += self.framers[s].as_ref().map_or(0, Framer::held);
        }
        n + self.tls.as_ref().map_or(0, |t| t.held())
    }

    /// The record that carried the oldest byte this connection holds (see [`Conn::held`]),
    /// if it holds any: the order in which the budget sheds connections.
    pub fn held_since(&self) -> Option<u64> {
        let framers = (0..2).filter_map(|s| self.framers[s].as_ref().and_then(Framer::held_since));
        let tls = self.tls.as_ref().and_then(|t| t.held_since());
        [self.hold_floor(), tls]
            .into_iter()
            .flatten()
            .chain(framers)
            .min()
    }

    /// Gives up what this connection holds, at record `frame`, for the in-flight budget
    /// of all connections (`budget` bytes): missing segments are declared lost (a gap) and
    /// the data after them delivered, an undecided connection is decided on what it has,
    /// and each partial frame is emitted as incomplete with a notice (the rest of it is
    /// skipped as it comes); a TLS connection's unfinished records are given up too
    /// ([`TlsConn::shed`]: skipped by their headers' lengths, the records after them
    /// still decrypted; or its handshake, or the bytes a search after a gap held).
    /// Returns how many partial frames were cut, and what the TLS layer gave up.
    pub fn shed(&mut self, frame: u64, budget: usize, sink: &mut Sink<'_>) -> (u32, TlsShed) {
        for s in 0..2 {
            let mut dl = Vec::new();
            self.reasm[s].give_up(frame, &mut dl);
            for d in dl {
                self.deliver(s, d, sink);
            }
        }
        self.try_decide(true, sink);
        let mut cut = 0;
        for s in 0..2 {
            let mut fo = Vec::new();
            if let Some(fr) = self.framers[s].as_mut() {
                if fr.shed(frame, budget, &mut fo) {
                    cut += 1;
                }
            }
            self.framer_out(s, fo, sink);
        }
        // After the framers: a partial frame is cut (and counted) first, and the
        // plaintext of the record given up falls in the part of it that is skipped.
        let mut records = TlsShed::default();
        if let Some(t) = self.tls.as_mut() {
            let mut outs = Vec::new();
            records = t.shed(frame, budget, &mut outs);
            self.tls_out(outs, sink);
        }
        (cut, records)
    }

    fn dir_of(&self, side: usize) -> Direction {
        if Some(side) == self.client {
            Direction::ToServer
        } else {
            Direction::ToClient
        }
    }

    /// Feed a segment sent by `side` (index into `addrs`). `ack`: the ACK flag.
    /// One TCP segment from `side`, with its acknowledgement number when the ACK flag is
    /// set.
    pub fn segment(
        &mut self,
        side: usize,
        seg: &Segment<'_>,
        ack: Option<u32>,
        sink: &mut Sink<'_>,
    ) {
        self.last_frame = seg.frame;
        self.last_time = self.last_time.max(seg.time);
        if seg.syn && ack.is_none() && self.syn_sender.is_none() {
            self.syn_sender = Some(side);
        }
        if let (true, Some(a)) = (seg.syn, ack) {
            if self.syn_sender.is_none() {
                self.syn_sender = Some(1 - side);
            }
            // A SYN-ACK acknowledges the other side's SYN: its stream starts at this
            // number even when the capture missed the SYN itself.
            self.reasm[1 - side].anchor(a);
        }
        if let (false, Some(a)) = (seg.syn, ack) {
            // Bytes of the other side acknowledged but not in the capture are lost: the
            // frame they cut comes out now, before what this segment carries (past the
            // last byte seen only when this segment answers: data, FIN or RST).
            let mut other = Vec::new();
            let answers = !seg.data.is_empty() || seg.missing > 0 || seg.fin || seg.rst;
            self.reasm[1 - side].acked(a, answers, seg.frame, &mut other);
            for d in other {
                self.deliver(1 - side, d, sink);
            }
        }
        let mut dl = Vec::new();
        self.reasm[side].push(seg, &mut dl);
        let both_fin = self.reasm[0].saw_fin() && self.reasm[1].saw_fin();
        if seg.rst || (both_fin && !self.is_closed()) {
            // RST, or both sides have sent their FIN: the connection is over, and what
            // it waits for will not come.
            let mut own = Vec::new();
            self.reasm[side].flush(seg.frame, &mut own);
            dl.extend(own);
            let mut other = Vec::new();
            self.reasm[1 - side].flush(seg.frame, &mut other);
            for d in dl {
                self.deliver(side, d, sink);
            }
            for d in other {
                self.deliver(1 - side, d, sink);
            }
        } else {
            for d in dl {
                self.deliver(side, d, sink);
            }
        }
    }

    fn deliver(&mut self, side: usize, d: Delivery, sink: &mut Sink<'_>) {
        match self.state {
            State::Tls => self.tls_feed(side, d, sink),
            State::NotKafka => {}
            State::Undecided => {
                if let Delivery::Data { bytes, .. } = &d {
                    self.pending_bytes[side] += bytes.len();
                }
                self.pending[side].push(d);
                self.try_decide(false, sink);
            }
            State::Kafka => self.feed(side, d, sink),
        }
    }

    /// Contiguous bytes from the start of `side`'s pending data (up to `max`).
    fn prefix(&self, side: usize, max: usize) -> (Vec<u8>, bool) {
        let mut v = Vec::new();
        let mut at_start = false;
        for (i, d) in self.pending[side].iter().enumerate() {
            match d {
                Delivery::Data { offset, bytes, .. } => {
                    if i == 0 {
                        at_start = *offset == 0;
                    }
                    v.extend_from_slice(&bytes[..bytes.len().min(max - v.len())]);
                    if v.len() >= max {
                        break;
                    }
                }
                Delivery::Gap { .. } => break,
            }
        }
        (v, at_start)
    }

    fn try_decide(&mut self, final_: bool, sink: &mut Sink<'_>) {
        if self.state != State::Undecided {
            return;
        }
        let plaus = sink.plaus;
        let max_frame = sink.opts.max_frame;
        if sink.opts.detect && self.client.is_none() {
            self.client = self.syn_sender;
        }
        // TLS check on the client's (or, if unknown, either side's) first bytes
        let sides: Vec<usize> = match self.client {
            Some(c) => vec![c],
            None => vec![0, 1],
        };
        let mut waiting = false;
        for &s in &sides {
            let (p, _) = self.prefix(s, 3);
            if p.len() < 3 {
                waiting = true;
                continue;
            }
            if looks_tls(&p) {
                self.start_tls(sink);
                return;
            }
        }
        let over = self.pending_bytes[0] > 64 * 1024 || self.pending_bytes[1] > 64 * 1024;
        // A connection on a configured broker port is Kafka by its port, with or without
        // --detect (which only adds connections on other ports).
        let by_port = self
            .addrs
            .iter()
            .any(|a| sink.opts.ports.contains(&a.port()));
        if !sink.opts.detect || by_port {
            if waiting && !final_ && !over && self.client.is_some() {
                return;
            }
            if self.client.is_none() {
                self.client = Some(self.syn_sender.unwrap_or(0));
            }
            self.start_kafka(sink);
            return;
        }
        // detect mode: find a plausible request
        let over = self.pending_bytes[0] > UNDECIDED_CAP || self.pending_bytes[1] > UNDECIDED_CAP;
        let at_end = final_ || over;
        let candidates: Vec<usize> = match self.client {
            Some(c) => vec![c],
            None => vec![0, 1],
        };
        for &s in &candidates {
            let (p, at_start) = self.prefix(s, UNDECIDED_CAP);
            if p.is_empty() {
                continue;
            }
            let synced = at_start && self.reasm[s].saw_syn();
            if synced {
                // must start with a plausible request
                if p.len() >= 4 + PEEK || at_end {
                    // The stream's first bytes: a sane size prefix and a plausible request
                    // header in what follows (the frame itself may be longer than what is
                    // here yet).
                    let size = if p.len() >= 4 {
                        i32::from_be_bytes([p[0], p[1], p[2], p[3]])
                    } else {
                        -1
                    };
                    let starts_with_request = size >= 0
                        && (size as u64 + 4) <= max_frame as u64
                        && plaus
                            .plausible_request(&p[4..p.len().min(4 + PEEK).min(4 + size as usize)]);
                    if starts_with_request {
                        self.client = Some(s);
                        self.start_kafka(sink);
                        return;
                    }
                    if self.client.is_some() {
                        self.state = State::NotKafka;
                        self.pending = [Vec::new(), Vec::new()];
                        return;
                    }
                }
            } else if let Scan::Found(_) =
                find_frame_start(&p, Direction::ToServer, max_frame, plaus, at_end)
            {
                self.client = Some(s);
                self.start_kafka(sink);
                return;
            }
        }
        if at_end {
            self.state = State::NotKafka;
            self.pending = [Vec::new(), Vec::new()];
        }
    }

    /// The connection carries TLS: what was held goes to the TLS layer in capture order,
    /// and so does the rest (`tls_feed`).
    fn start_tls(&mut self, sink: &mut Sink<'_>) {
        self.state = State::Tls;
        sink.stats.connections += 1;
        let name = format!("{} <-> {}", self.addrs[0], self.addrs[1]);
        self.tls = Some(Box::new(TlsConn::new(self.id, name, self.client)));
        for (s, d) in self.held_in_order() {
            self.tls_feed(s, d, sink);
        }
    }

    /// TCP bytes of a TLS connection: decrypted application data is framed as Kafka.
    fn tls_feed(&mut self, side: usize, d: Delivery, sink: &mut Sink<'_>) {
        let Some(t) = self.tls.as_mut() else {
            return;
        };
        let mut outs = Vec::new();
        t.data(side, d, sink.keys, &mut outs);
        self.tls_out(outs, sink);
    }

    fn tls_out(&mut self, outs: Vec<TlsOut>, sink: &mut Sink<'_>) {
        if let Some(c) = self.tls.as_ref().and_then(|t| t.client_side()) {
            self.client = Some(c);
        }
        for o in outs {
            match o {
                TlsOut::Notice(n) => sink.notice(n),
                TlsOut::Lost {
                    side,
                    offset,
                    len,
                    frame,
                    exact,
                } => {
                    // Said by the notice before it: the framing goes on past it.
                    sink.stats.bytes_skipped += len;
                    let mut fo = Vec::new();
                    if let Some(fr) = self.framers[side].as_mut() {
                        fr.gap(offset, len, frame, &mut fo);
                        if !exact {
                            fr.resync("after a TLS record given up");
                        }
                    }
                    self.framer_out(side, fo, sink);
                }
                TlsOut::Plain(side, d) => {
                    if self.framers[side].is_none() {
                        let c = self.client.unwrap_or(1 - side);
                        self.client = Some(c);
                        for s in 0..2 {
                            self.framers[s] =
                                Some(Framer::new(self.dir_of(s), sink.opts.max_frame, true));
                        }
                    }
                    self.feed(side, d, sink);
                }
            }
        }
    }

    /// What was held while deciding, in capture order across both sides (stable: within
    /// one side and one record the order stays as it was).
    fn held_in_order(&mut self) -> Vec<(usize, Delivery)> {
        let mut held: Vec<(u64, usize, Delivery)> = Vec::new();
        for s in 0..2 {
            for d in std::mem::take(&mut self.pending[s]) {
                let frame = match &d {
                    Delivery::Data { frame, .. } | Delivery::Gap { frame, .. } => *frame,
                };
                held.push((frame, s, d));
            }
        }
        held.sort_by_key(|(frame, _, _)| *frame);
        held.into_iter().map(|(_, s, d)| (s, d)).collect()
    }

    fn start_kafka(&mut self, sink: &mut Sink<'_>) {
        self.state = State::Kafka;
        sink.stats.connections += 1;
        for s in 0..2 {
            let dir = self.dir_of(s);
            let starts_at_zero = match self.pending[s].first() {
                Some(Delivery::Data { offset, .. }) => *offset == 0,
                Some(Delivery::Gap { .. }) => false,
                None => true,
            };
            let synced = self.reasm[s].saw_syn() && starts_at_zero;
            self.framers[s] = Some(Framer::new(dir, sink.opts.max_frame, synced));
        }
        // What was held while deciding goes on in capture order across both sides, so a
        // response held on one side does not come out before the request it answers.
        for (s, d) in self.held_in_order() {
            self.feed(s, d, sink);
        }
    }

    fn feed(&mut self, side: usize, d: Delivery, sink: &mut Sink<'_>) {
        let dir = self.dir_of(side);
        let mut fo = Vec::new();
        let Some(fr) = self.framers[side].as_mut() else {
            return;
        };
        let kc = KnownCorr {
            inner: sink.plaus,
            corrs: &self.recent_corrs,
            low: self.low_corr,
        };
        match d {
            Delivery::Data {
                offset,
                bytes,
                frame,
                time,
            } => fr.data_vec(offset, bytes, frame, time, &kc, &mut fo),
            Delivery::Gap { offset, len, frame } => {
                sink.stats.bytes_skipped += len;
                let mut n = Notice::new(
                    NoticeKind::Gap,
                    format!(
                        "{len} bytes missing from the TCP stream (lost segment or snaplen \
                         cut): stream bytes {offset}..{}",
                        offset + len
                    ),
                );
                n.frame = Some(frame);
                n.connection = Some(self.id);
                n.direction = Some(dir);
                n.offset = Some(offset);
                n.bytes = Some(len);
                sink.notice(n);
                fr.gap(offset, len, frame, &mut fo);
            }
        }
        self.framer_out(side, fo, sink);
    }

    fn framer_out(&mut self, side: usize, fo: Vec<FramerOut>, sink: &mut Sink<'_>) {
        let dir = self.dir_of(side);
        for o in fo {
            match o {
                FramerOut::Notice {
                    kind,
                    frame,
                    offset,
                    bytes,
                    message,
                } => {
                    if kind == NoticeKind::Resync || kind == NoticeKind::Oversize {
                        sink.stats.bytes_skipped += bytes;
                    }
                    let mut n = Notice::new(kind, message);
                    n.frame = Some(frame);
                    n.connection = Some(self.id);
                    n.direction = Some(dir);
                    n.offset = Some(offset);
                    n.bytes = Some(bytes);
                    sink.notice(n);
                }
                FramerOut::Frame {
                    offset,
                    bytes,
                    first,
                    last,
                    time,
                    incomplete,
                    key,
                    low,
                    high,
                } => {
                    let kind = self.classify(dir, &bytes, incomplete, last, sink);
                    sink.stats.frames += 1;
                    let tls = self
                        .tls
                        .as_mut()
                        .and_then(|t| t.frame_info(side, offset, bytes.len() as u64));
                    let ctx = FrameContext {
                        first_frame: first,
                        last_frame: last,
                        time,
                        src: self.addrs[side],
                        dst: self.addrs[1 - side],
                        connection: self.id,
                        direction: dir,
                        stream_offset: offset,
                        incomplete,
                        origin: super::Origin {
                            low_record: low,
                            high_record: high,
                            tcp_seq: match self.tls {
                                Some(_) => None,
                                None => self.reasm[side]
                                    .base()
                                    .map(|b| b.wrapping_add(offset as u32)),
                            },
                        },
                        tls,
                    };
                    sink.order
                        .push(key, Event::Frame(Frame { ctx, kind, bytes }));
                }
            }
        }
    }

    /// SASL v0 state machine (KIP-43): after a successful SaslHandshake v0, frames are raw
    /// tokens until the client sends a plausible Kafka request.
    fn classify(
        &mut self,
        dir: Direction,
        b: &[u8],
        incomplete: bool,
        frame: u64,
        sink: &mut Sink<'_>,
    ) -> FrameKind {
        let be16 = |i: usize| i16::from_be_bytes([b[i], b[i + 1]]);
        let be32 = |i: usize| i32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        match dir {
            Direction::ToServer => {
                if self.sasl_raw {
                    if b.len() >= 4 && !incomplete && sink.plaus.plausible_request(&b[4..]) {
                        self.sasl_raw = false;
                        let mut n = Notice::new(NoticeKind::Info, "SASL raw tokens end");
                        n.frame = Some(frame);
                        n.connection = Some(self.id);
                        sink.notice(n);
                    } else {
                        return FrameKind::SaslToken;
                    }
                }
                if b.len() >= 12 {
                    if self.recent_corrs.len() >= RECENT_CORRS {
                        self.recent_corrs.pop_front();
                    }
                    self.recent_corrs.push_back(be32(8));
                    self.low_corr = Some(self.low_corr.map_or(be32(8), |l| l.min(be32(8))));
                }
                if b.len() >= 12 && be16(4) == 17 && be16(6) == 0 {
                    self.sasl_corr = Some(be32(8));
                }
                FrameKind::Kafka
            }
            Direction::ToClient => {
                if self.sasl_raw {
                    return FrameKind::SaslToken;
                }
                if let Some(c) = self.sasl_corr {
                    if b.len() >= 10 && be32(4) == c {
                        self.sasl_corr = None;
                        if be16(8) == 0 {
                            self.sasl_raw = true;
                            let mut n = Notice::new(
                                NoticeKind::Info,
                                "SaslHandshake v0 succeeded: following frames are raw SASL tokens",
                            );
                            n.frame = Some(frame);
                            n.connection = Some(self.id);
                            sink.notice(n);
                        }
                    }
                }
                FrameKind::Kafka
            }
        }
    }

    /// End of the connection or of the capture: flush both directions.
    pub fn finish(&mut self, frame: u64, sink: &mut Sink<'_>) {
        for s in 0..2 {
            let mut dl = Vec::new();
            self.reasm[s].flush(frame, &mut dl);
            for d in dl {
                self.deliver(s, d, sink);
            }
        }
        self.try_decide(true, sink);
        if let Some(t) = self.tls.as_mut() {
            let mut outs = Vec::new();
            t.finish(frame, &mut outs);
            let sum = t.summary();
            sink.stats.bytes_skipped += sum.encrypted_bytes;
            if sink.stats.tls.len() < super::TLS_SUMMARIES_KEEP {
                sink.stats.tls.push(sum);
            } else {
                sink.stats.tls_past_cap += 1;
            }
            self.tls_out(outs, sink);
        }
        for s in 0..2 {
            let mut fo = Vec::new();
            let kc = KnownCorr {
                inner: sink.plaus,
                corrs: &self.recent_corrs,
                low: self.low_corr,
            };
            if let Some(fr) = self.framers[s].as_mut() {
                fr.finish(&kc, &mut fo);
            }
            self.framer_out(s, fo, sink);
        }
        sink.stats.duplicate_bytes += self.reasm[0].duplicate_bytes + self.reasm[1].duplicate_bytes;
        let dropped = self.reasm[0].dropped_bytes + self.reasm[1].dropped_bytes;
        if dropped > 0 {
            let mut n = Notice::new(
                NoticeKind::Dropped,
                format!("{dropped} bytes of segments far ahead of the stream were dropped"),
            );
            n.connection = Some(self.id);
            n.bytes = Some(dropped);
            sink.notice(n);
        }
    }
}
