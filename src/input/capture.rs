//! Streaming capture reader (pcap and pcapng) and link/IP/TCP parsing.
//!
//! Formats: pcap (magic `a1b2c3d4` microseconds / `a1b23c4d` nanoseconds, both byte orders)
//! and pcapng (Section Header, Interface Description with per-interface link type and
//! `if_tsresol`/`if_tsoffset`, Enhanced and Simple Packet Blocks), read with
//! `pcap_parser::create_reader` over any [`Read`], never holding more than the reader buffer.
//!
//! Link types (tcpdump.org link-layer header types): NULL (0, 4-byte host-endian address
//! family), ETHERNET (1, with any number of 802.1Q / 802.1ad / QinQ tags), RAW (101, and the
//! DLT values 12 and 14 used for raw IP by some systems), LOOP (108, big-endian family),
//! LINUX_SLL (113), IPV4 (228), IPV6 (229), LINUX_SLL2 (276).

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::collections::{BTreeSet, VecDeque};
use std::io::Read;
use std::net::{IpAddr, SocketAddr};

use etherparse::defrag::IpDefragPool;
use etherparse::{IpNumber, LaxIpSlice, SlicedPacket, TcpSlice};
use pcap_parser::{Block, PcapBlockOwned, PcapError};

use super::conn::{Conn, Sink};
use super::order::Reorder;
use super::tcp::Segment;
use super::{
    CaptureError, CaptureOptions, CaptureStats, Event, FramePlausibility, Notice, NoticeKind,
    Timestamp,
};

/// Largest reader buffer (bytes) the reader grows to for a single record.
const MAX_READ_BUFFER: usize = 16 << 20;
/// IP fragments older than this many records are abandoned.
pub(crate) const FRAG_WINDOW: u64 = 2000;

/// Extract the IP packet from a link-layer frame, or `None` if it is not IPv4/IPv6.
fn ip_payload(linktype: i32, d: &[u8]) -> Option<&[u8]> {
    fn ether_next(mut et: u16, mut d: &[u8]) -> Option<&[u8]> {
        for _ in 0..8 {
            match et {
                0x0800 | 0x86dd => return Some(d),
                0x8100 | 0x88a8 | 0x9100 => {
                    if d.len() < 4 {
                        return None;
                    }
                    et = u16::from_be_bytes([d[2], d[3]]);
                    d = &d[4..];
                }
                _ => return None,
            }
        }
        None
    }
    match linktype {
        1 => {
            if d.len() < 14 {
                return None;
            }
            ether_next(u16::from_be_bytes([d[12], d[13]]), &d[14..])
        }
        113 => {
            if d.len() < 16 {
                return None;
            }
            ether_next(u16::from_be_bytes([d[14], d[15]]), &d[16..])
        }
        276 => {
            if d.len() < 20 {
                return None;
            }
            ether_next(u16::from_be_bytes([d[0], d[1]]), &d[20..])
        }
        0 | 108 => {
            if d.len() < 4 {
                return None;
            }
            let le = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
            let be = u32::from_be_bytes([d[0], d[1], d[2], d[3]]);
            let known = |f: u32| matches!(f, 2 | 10 | 24 | 28 | 30);
            if (linktype == 0 && (known(le) || known(be))) || (linktype == 108 && known(be)) {
                Some(&d[4..])
            } else {
                None
            }
        }
        12 | 14 | 101 | 228 | 229 => Some(d),
        _ => None,
    }
}

pub(crate) fn link_supported(linktype: i32) -> bool {
    matches!(
        linktype,
        0 | 1 | 12 | 14 | 101 | 108 | 113 | 228 | 229 | 276
    )
}

/// A packet record's IP and TCP layers.
pub(crate) enum Parsed<'b> {
    /// A TCP segment between the source and destination IP addresses, with the number of
    /// its payload bytes the record did not keep (snaplen cut).
    Tcp {
        src: IpAddr,
        dst: IpAddr,
        tcp: TcpSlice<'b>,
        missing: u32,
    },
    /// An IP fragment carrying TCP: the IP packet, for reassembly.
    Fragment {
        ip: &'b [u8],
        src: IpAddr,
        dst: IpAddr,
    },
    /// An IP or TCP header that does not parse: what is wrong.
    Malformed(String),
    /// Not IPv4/IPv6, or not TCP.
    Other,
}

/// The IP and TCP layers of a record of a supported link type (`linktype`, captured bytes
/// `data`, wire length `origlen`).
pub(crate) fn ip_tcp(linktype: i32, data: &[u8], origlen: u32) -> Parsed<'_> {
    let Some(ip) = ip_payload(linktype, data) else {
        return Parsed::Other;
    };
    let (lax, _) = match LaxIpSlice::from_slice(ip) {
        Ok(x) => x,
        Err(e) => return Parsed::Malformed(format!("IP header not parsed: {e}")),
    };
    let src = lax.source_addr();
    let dst = lax.destination_addr();
    let payload = lax.payload();
    if payload.ip_number != IpNumber::TCP {
        return Parsed::Other;
    }
    if payload.fragmented {
        return Parsed::Fragment { ip, src, dst };
    }
    let truncated = (origlen as usize) > data.len();
    let missing = if truncated || payload.incomplete {
        (origlen as usize).saturating_sub(data.len()) as u32
    } else {
        0
    };
    match TcpSlice::from_slice(payload.payload) {
        Ok(tcp) => Parsed::Tcp {
            src,
            dst,
            tcp,
            missing,
        },
        Err(e) => Parsed::Malformed(format!("TCP header not parsed: {e}")),
    }
}

/// A TCP segment as [`super::tcp::Reassembler`] takes it, from its record number and time.
pub(crate) fn segment<'b>(
    tcp: &TcpSlice<'b>,
    missing: u32,
    frame: u64,
    time: Timestamp,
) -> Segment<'b> {
    Segment {
        seq: tcp.sequence_number(),
        data: tcp.payload(),
        missing,
        syn: tcp.syn(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        frame,
        time,
    }
}

/// Turns link-layer records into Kafka frames: IP defragmentation, connection tracking, TCP
/// reassembly, framing. Feed records with [`Extractor::packet`], then call
/// [`Extractor::finish`].
pub struct Extractor<'p> {
    opts: CaptureOptions,
    plaus: &'p dyn FramePlausibility,
    /// Open connections, boxed: the table's slots stay small, so growing it (which holds
    /// the old table and the new one at once) costs little with thousands open.
    conns: HashMap<(SocketAddr, SocketAddr), Box<Conn>>,
    closed: HashSet<(SocketAddr, SocketAddr)>,
    closed_order: VecDeque<(SocketAddr, SocketAddr)>,
    next_id: u32,
    stats: CaptureStats,
    defrag: IpDefragPool<u64, ()>,
    reported_links: HashSet<i32>,
    /// pcapng interface ids whose packets came with no Interface Description Block.
    reported_ifaces: HashSet<u32>,
    frame_no: u64,
    /// Events waiting for their turn in the output order ([`super::order`]).
    order: Reorder,
    /// Each connection's hold floor (`Conn::hold_floor`) that is set, by connection id.
    floor_of: HashMap<u32, u64>,
    /// The same floors, lowest first.
    floors: BTreeSet<(u64, u32)>,
    keys: super::tls::KeyLog,
    secrets_blocks: u32,
    /// The in-flight budget's accounts ([`CaptureOptions::max_in_flight`]).
    budget: Budget,
    /// Each open connection's key, by id.
    key_of: HashMap<u32, ConnKey>,
    /// The latest capture time seen, and when connections are next checked for the idle
    /// timeout (seconds).
    latest: Timestamp,
    next_sweep: i64,
}

type ConnKey = (SocketAddr, SocketAddr);

/// What each open connection holds ([`Conn::held`]), by id, with the record of its oldest
/// held byte; the total; and what the budget has shed so far.
#[derive(Default)]
struct Budget {
    held: HashMap<u32, (usize, Option<u64>)>,
    /// Connections holding bytes, oldest held byte first.
    oldest: BTreeSet<(u64, u32)>,
    total: usize,
    /// Partial frames cut, TLS records given up, TLS handshakes given up, searches
    /// after a TLS gap that gave up what they held, connections shed, times the budget
    /// was passed.
    cut: u64,
    tls_records: u64,
    tls_handshakes: u64,
    tls_searches: u64,
    shed: u64,
    passed: u64,
}

impl Budget {
    fn set(&mut self, id: u32, held: usize, since: Option<u64>) {
        let (old, old_since) = self.held.remove(&id).unwrap_or((0, None));
        if let Some(s) = old_since {
            self.oldest.remove(&(s, id));
        }
        self.total = self.total - old + held;
        if held > 0 || since.is_some() {
            self.held.insert(id, (held, since));
        }
        if let Some(s) = since {
            self.oldest.insert((s, id));
        }
    }
}

impl<'p> Extractor<'p> {
    /// New extractor with these options and plausibility check.
    pub fn new(opts: &CaptureOptions, plaus: &'p dyn FramePlausibility) -> Extractor<'p> {
        Extractor {
            opts: opts.clone(),
            plaus,
            conns: HashMap::new(),
            closed: HashSet::new(),
            closed_order: VecDeque::new(),
            next_id: 0,
            stats: CaptureStats::default(),
            defrag: IpDefragPool::new(),
            reported_links: HashSet::new(),
            reported_ifaces: HashSet::new(),
            frame_no: 0,
            order: Reorder::default(),
            floor_of: HashMap::new(),
            floors: BTreeSet::new(),
            keys: (*opts.tls_keys).clone(),
            secrets_blocks: 0,
            budget: Budget::default(),
            key_of: HashMap::new(),
            latest: Timestamp::default(),
            next_sweep: i64::MIN,
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> &CaptureStats {
        &self.stats
    }

    /// Adds TLS secrets in the NSS key log format (a pcapng Decryption Secrets Block's
    /// content): they apply to connections whose ServerHello comes after them. Lines that
    /// cannot be used are [`NoticeKind::Tls`] notices naming the block and line.
    pub fn add_tls_secrets(&mut self, text: &[u8], _out: &mut dyn FnMut(Event)) {
        self.secrets_blocks += 1;
        let source = format!("pcapng Decryption Secrets Block {}", self.secrets_blocks);
        for p in self.keys.add_text(text, &source) {
            let mut n = Notice::new(NoticeKind::Tls, format!("key log {p}"));
            n.frame = Some(self.frame_no);
            self.notice(n);
        }
    }

    fn notice(&mut self, n: Notice) {
        self.stats.notices += 1;
        self.order.push(self.frame_no, Event::Notice(n));
    }

    /// Records connection `id`'s hold floor after it has been fed.
    fn set_floor(&mut self, id: u32, floor: Option<u64>) {
        let old = self.floor_of.get(&id).copied();
        if old == floor {
            return;
        }
        if let Some(o) = old {
            self.floors.remove(&(o, id));
            self.floor_of.remove(&id);
        }
        if let Some(f) = floor {
            self.floors.insert((f, id));
            self.floor_of.insert(id, f);
        }
    }

    /// Hands on every event that no connection can still precede.
    fn release(&mut self, out: &mut dyn FnMut(Event)) {
        let next = self.frame_no + 1;
        let floor = self.floors.first().map_or(next, |(f, _)| (*f).min(next));
        self.order.release(floor, out);
    }

    /// Process one captured record: `linktype` (tcpdump.org LINKTYPE_ value), captured bytes
    /// `data`, original (wire) length `origlen` in bytes, capture time. Returns its 1-based
    /// record number. Events are passed to `out` in order.
    pub fn packet(
        &mut self,
        linktype: i32,
        data: &[u8],
        origlen: u32,
        time: Timestamp,
        out: &mut dyn FnMut(Event),
    ) -> u64 {
        let frame = self.packet_events(linktype, data, origlen, time);
        self.release(out);
        frame
    }

    /// A pcapng packet block of interface `if_id` that no Interface Description Block
    /// describes (so its link type is unknown): counted as a record, skipped, and said
    /// once per interface id. Returns its record number.
    pub fn packet_without_interface(
        &mut self,
        if_id: u32,
        captured: usize,
        out: &mut dyn FnMut(Event),
    ) -> u64 {
        self.frame_no += 1;
        let frame = self.frame_no;
        self.stats.packets += 1;
        self.stats.bytes += captured as u64;
        if self.reported_ifaces.insert(if_id) {
            let mut n = Notice::new(
                NoticeKind::UnsupportedLinkType,
                format!(
                    "a packet block of interface {if_id}, but no Interface Description Block \
                     before it describes interface {if_id} (pcapng needs one to give the link \
                     type): its records are skipped"
                ),
            );
            n.frame = Some(frame);
            self.notice(n);
        }
        self.release(out);
        frame
    }

    fn packet_events(&mut self, linktype: i32, data: &[u8], origlen: u32, time: Timestamp) -> u64 {
        self.frame_no += 1;
        let frame = self.frame_no;
        self.stats.packets += 1;
        self.stats.bytes += data.len() as u64;
        let truncated = (origlen as usize) > data.len();
        if truncated {
            let mut n = Notice::new(
                NoticeKind::Truncated,
                format!(
                    "record captured {} of {} bytes (snaplen); missing TCP payload is a gap",
                    data.len(),
                    origlen
                ),
            );
            n.frame = Some(frame);
            n.bytes = Some(origlen as u64 - data.len() as u64);
            self.notice(n);
        }
        if !link_supported(linktype) {
            if self.reported_links.insert(linktype) {
                let mut n = Notice::new(
                    NoticeKind::UnsupportedLinkType,
                    format!("link type {linktype} is not supported; its records are skipped"),
                );
                n.frame = Some(frame);
                self.notice(n);
            }
            return frame;
        }
        match ip_tcp(linktype, data, origlen) {
            Parsed::Tcp {
                src,
                dst,
                tcp,
                missing,
            } => self.tcp(src, dst, &tcp, missing, frame, time),
            Parsed::Fragment { ip, src, dst } => self.fragment(ip, frame, src, dst, time),
            Parsed::Malformed(message) => {
                let mut n = Notice::new(NoticeKind::Malformed, message);
                n.frame = Some(frame);
                self.notice(n);
            }
            Parsed::Other => {}
        }
        frame
    }

    fn fragment(&mut self, ip: &[u8], frame: u64, src: IpAddr, dst: IpAddr, time: Timestamp) {
        let cutoff = frame.saturating_sub(FRAG_WINDOW);
        if frame.is_multiple_of(256) {
            self.defrag.retain(|t| *t >= cutoff);
        }
        let res = match SlicedPacket::from_ip(ip) {
            Ok(sp) => self.defrag.process_sliced_packet(&sp, frame, ()),
            Err(e) => {
                let mut n = Notice::new(
                    NoticeKind::Malformed,
                    format!("IP fragment skipped (not parsed: {e})"),
                );
                n.frame = Some(frame);
                self.notice(n);
                return;
            }
        };
        match res {
            Ok(Some(pv)) => {
                if let Ok(tcp) = TcpSlice::from_slice(&pv.payload) {
                    self.tcp(src, dst, &tcp, 0, frame, time);
                }
                self.defrag.return_buf(pv);
            }
            Ok(None) => {}
            Err(e) => {
                let mut n = Notice::new(
                    NoticeKind::Malformed,
                    format!("IP fragment skipped (not reassembled: {e})"),
                );
                n.frame = Some(frame);
                self.notice(n);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn tcp(
        &mut self,
        src_ip: IpAddr,
        dst_ip: IpAddr,
        tcp: &TcpSlice<'_>,
        missing: u32,
        frame: u64,
        time: Timestamp,
    ) {
        self.stats.tcp_segments += 1;
        let src = SocketAddr::new(src_ip, tcp.source_port());
        let dst = SocketAddr::new(dst_ip, tcp.destination_port());
        let key = if src <= dst { (src, dst) } else { (dst, src) };
        let seg = segment(tcp, missing, frame, time);
        if !self.conns.contains_key(&key) {
            let candidate = self.opts.detect
                || self.opts.ports.contains(&src.port())
                || self.opts.ports.contains(&dst.port());
            if !candidate {
                return;
            }
            let fresh_syn = seg.syn && !tcp.ack();
            if self.closed.contains(&key) {
                if !fresh_syn {
                    return; // late segment of a finished connection
                }
                self.closed.remove(&key);
            }
            if seg.data.is_empty() && !seg.syn && seg.missing == 0 {
                return; // a bare ACK/FIN/RST tells nothing
            }
            self.next_id += 1;
            self.conns.insert(
                key,
                Box::new(Conn::new(self.next_id, [src, dst], &self.opts)),
            );
        }
        let Some(conn) = self.conns.get_mut(&key) else {
            return;
        };
        let side = if conn.addrs[0] == src { 0 } else { 1 };
        let mut sink = Sink {
            opts: &self.opts,
            plaus: self.plaus,
            stats: &mut self.stats,
            order: &mut self.order,
            now: frame,
            keys: &self.keys,
        };
        let ack = tcp.ack().then(|| tcp.acknowledgment_number());
        conn.segment(side, &seg, ack, &mut sink);
        let id = conn.id;
        if conn.is_closed() {
            conn.finish(frame, &mut sink);
            self.conns.remove(&key);
            self.key_of.remove(&id);
            self.budget.set(id, 0, None);
            self.set_floor(id, None);
            self.closed.insert(key);
            self.closed_order.push_back(key);
            while self.closed_order.len() > self.opts.max_closed {
                if let Some(k) = self.closed_order.pop_front() {
                    self.closed.remove(&k);
                }
            }
        } else {
            let floor = conn.hold_floor();
            let (held, since) = (conn.held(), conn.held_since());
            self.key_of.insert(id, key);
            self.set_floor(id, floor);
            self.budget.set(id, held, since);
        }
        self.keep_budget(frame);
        if time > self.latest {
            self.latest = time;
        }
        if self.opts.idle_timeout > 0 && self.latest.secs >= self.next_sweep {
            self.next_sweep = self.latest.secs.saturating_add(1);
            self.sweep_idle(frame);
        }
    }

    /// Sheds connection `id` (see [`Conn::shed`]) at record `frame` and updates its
    /// accounts. Returns whether it held less after.
    fn shed(&mut self, id: u32, frame: u64) -> bool {
        let Some(key) = self.key_of.get(&id).copied() else {
            self.budget.set(id, 0, None);
            return true;
        };
        let Some(conn) = self.conns.get_mut(&key) else {
            self.budget.set(id, 0, None);
            return true;
        };
        let before = conn.held();
        let mut sink = Sink {
            opts: &self.opts,
            plaus: self.plaus,
            stats: &mut self.stats,
            order: &mut self.order,
            now: frame,
            keys: &self.keys,
        };
        let (cut, records) = conn.shed(frame, self.opts.max_in_flight, &mut sink);
        self.budget.cut += u64::from(cut);
        self.budget.tls_records += u64::from(records.records);
        self.budget.tls_handshakes += u64::from(records.handshakes);
        self.budget.tls_searches += u64::from(records.searches);
        self.budget.shed += 1;
        let (floor, held, since) = (conn.hold_floor(), conn.held(), conn.held_since());
        self.set_floor(id, floor);
        self.budget.set(id, held, since);
        held < before
    }

    /// Keeps what all connections hold, and the frames waiting in the output order,
    /// under [`CaptureOptions::max_in_flight`]: the connections holding the oldest bytes
    /// give them up first. One connection alone may go past it with one frame (up to
    /// `max_frame`), unless frames of others wait behind it in the output order.
    fn keep_budget(&mut self, frame: u64) {
        let limit = self.opts.max_in_flight;
        if self.budget.total + self.order.bytes() <= limit {
            return;
        }
        self.budget.passed += 1;
        let mut tried: HashSet<u32> = HashSet::new();
        while self.budget.total + self.order.bytes() > limit {
            let Some(&(_, id)) = self
                .budget
                .oldest
                .iter()
                .find(|(_, id)| !tried.contains(id))
            else {
                break;
            };
            // `tried` holds only connections still holding something.
            let others = (self.budget.oldest.len() - tried.len()).saturating_sub(1);
            if others == 0 && self.order.bytes() <= limit / 2 {
                break;
            }
            self.shed(id, frame);
            if self.budget.held.get(&id).is_some_and(|(_, s)| s.is_some()) {
                tried.insert(id);
            }
        }
    }

    /// Connections that sent nothing for [`CaptureOptions::idle_timeout`] seconds of
    /// capture time give up what they hold.
    fn sweep_idle(&mut self, frame: u64) {
        let limit = self
            .latest
            .secs
            .saturating_sub(self.opts.idle_timeout as i64);
        let idle: Vec<(u32, i64)> = self
            .budget
            .oldest
            .iter()
            .filter_map(|(_, id)| {
                let c = self.conns.get(self.key_of.get(id)?)?;
                (c.last_time.secs < limit).then_some((*id, c.last_time.secs))
            })
            .collect();
        for (id, last) in idle {
            let mut n = Notice::new(
                NoticeKind::Dropped,
                format!(
                    "connection idle for more than {} s of capture time (last segment at {last} s): what it held is given up",
                    self.opts.idle_timeout
                ),
            );
            n.frame = Some(frame);
            n.connection = Some(id);
            self.notice(n);
            self.shed(id, frame);
        }
    }

    /// End of input: flush every open connection (in order of first appearance) and return
    /// the counters.
    pub fn finish(mut self, out: &mut dyn FnMut(Event)) -> CaptureStats {
        let mut conns: Vec<Box<Conn>> = self.conns.drain().map(|(_, c)| c).collect();
        conns.sort_by_key(|c| c.id);
        let frame = self.frame_no;
        let mut sink = Sink {
            opts: &self.opts,
            plaus: self.plaus,
            stats: &mut self.stats,
            order: &mut self.order,
            now: frame,
            keys: &self.keys,
        };
        for mut c in conns {
            c.finish(frame, &mut sink);
        }
        if self.budget.passed > 0 {
            let mut tls = match self.budget.tls_records {
                0 => String::new(),
                r => format!(", {r} partial TLS records given up and the rest of each skipped"),
            };
            if self.budget.tls_handshakes > 0 {
                tls.push_str(&format!(
                    ", {} unfinished TLS handshakes given up (the records of their connections stay encrypted)",
                    self.budget.tls_handshakes
                ));
            }
            if self.budget.tls_searches > 0 {
                tls.push_str(&format!(
                    ", {} times a search for the next TLS record after a gap gave up the bytes it held",
                    self.budget.tls_searches
                ));
            }
            let mut n = Notice::new(
                NoticeKind::Budget,
                format!(
                    "in-flight budget of {} bytes (all connections) passed {} times: {} partial frames shown incomplete and the rest of each skipped{tls}, {} times a connection gave up what it held",
                    self.opts.max_in_flight, self.budget.passed, self.budget.cut, self.budget.shed
                ),
            );
            n.frame = Some(frame);
            self.stats.notices += 1;
            self.order.push(frame, Event::Notice(n));
        }
        self.order.drain(out);
        self.stats
    }
}

#[derive(Clone, Debug)]
struct Iface {
    linktype: i32,
    /// Timestamp units per second.
    resol: u64,
    offset: i64,
}

/// How to read a capture's packet records: the pcap file header's link type, time unit
/// and byte order, or the pcapng section's byte order and interfaces (link type,
/// `if_tsresol`, `if_tsoffset`). It changes with each pcapng section and interface.
#[derive(Clone, Debug, Default)]
pub struct Links {
    legacy_link: i32,
    legacy_nanos: bool,
    legacy_be: bool,
    legacy_seen: bool,
    /// The pcapng section is big-endian.
    ng_be: bool,
    ifaces: Vec<Iface>,
}

/// A packet record's content, as the capture gave it.
pub(crate) struct Packet<'b> {
    /// tcpdump.org LINKTYPE_ value.
    pub linktype: i32,
    /// The captured bytes.
    pub data: &'b [u8],
    /// The packet's length on the wire, in bytes.
    pub origlen: u32,
    /// Capture time.
    pub time: Timestamp,
}

/// What one block of a capture is.
pub(crate) enum Rec<'b> {
    /// A packet record (pcap record, pcapng EPB or SPB).
    Packet(Packet<'b>),
    /// A pcapng Decryption Secrets Block holding an NSS key log.
    Secrets(&'b [u8]),
    /// A packet block naming an interface the section has not described (pcapng EPB or
    /// SPB before any IDB): its interface id and captured length.
    NoInterface {
        /// The interface id the block names.
        if_id: u32,
        /// Bytes captured.
        captured: usize,
    },
    /// A block that changed the [`Links`].
    Links,
    /// Anything else.
    Other,
}

impl Links {
    /// Reads one block: a packet, or a change to the link state.
    pub(crate) fn record<'b>(&mut self, block: &'b PcapBlockOwned<'_>) -> Rec<'b> {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.legacy_link = h.network.0;
                self.legacy_nanos = h.is_nanosecond_precision();
                self.legacy_be = h.is_bigendian();
                self.legacy_seen = true;
                Rec::Links
            }
            PcapBlockOwned::Legacy(b) => {
                let nanos = if self.legacy_nanos {
                    b.ts_usec
                } else {
                    b.ts_usec.saturating_mul(1000)
                };
                let time = Timestamp {
                    secs: b.ts_sec as i64,
                    nanos: nanos.min(999_999_999),
                };
                Rec::Packet(Packet {
                    linktype: self.legacy_link,
                    data: &b.data[..(b.caplen as usize).min(b.data.len())],
                    origlen: b.origlen,
                    time,
                })
            }
            PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                self.ifaces.clear();
                self.ng_be = shb.big_endian();
                Rec::Links
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                self.ifaces.push(Iface {
                    linktype: idb.linktype.0,
                    resol: idb.ts_resolution().unwrap_or(1_000_000),
                    offset: idb.ts_offset(),
                });
                Rec::Links
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                let Some(i) = self.ifaces.get(epb.if_id as usize) else {
                    return Rec::NoInterface {
                        if_id: epb.if_id,
                        captured: epb.data.len(),
                    };
                };
                let (lt, resol, off) = (i.linktype, i.resol, i.offset);
                let units = ((epb.ts_high as u64) << 32) | epb.ts_low as u64;
                Rec::Packet(Packet {
                    linktype: lt,
                    data: &epb.data[..(epb.caplen as usize).min(epb.data.len())],
                    origlen: epb.origlen,
                    time: ts_from_units(units, resol, off),
                })
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => match self.ifaces.first() {
                Some(i) => Rec::Packet(Packet {
                    linktype: i.linktype,
                    data: &spb.data[..(spb.origlen as usize).min(spb.data.len())],
                    origlen: spb.origlen,
                    time: Timestamp::default(),
                }),
                None => Rec::NoInterface {
                    if_id: 0,
                    captured: spb.data.len(),
                },
            },
            PcapBlockOwned::NG(Block::DecryptionSecrets(dsb)) => {
                if dsb.secrets_type == pcap_parser::pcapng::SecretsType::TlsKeyLog {
                    let n = (dsb.secrets_len as usize).min(dsb.data.len());
                    Rec::Secrets(&dsb.data[..n])
                } else {
                    Rec::Other
                }
            }
            PcapBlockOwned::NG(_) => Rec::Other,
        }
    }

    /// Parses the block at the start of `b` (a pcap record, or a pcapng block in the
    /// section's byte order): the block and its length in bytes; `None` when `b` does not
    /// start with a whole block.
    pub(crate) fn parse<'b>(&self, b: &'b [u8]) -> Option<(PcapBlockOwned<'b>, usize)> {
        if self.legacy_seen && self.ifaces.is_empty() {
            let r = if self.legacy_be {
                pcap_parser::pcap::parse_pcap_frame_be(b)
            } else {
                pcap_parser::pcap::parse_pcap_frame(b)
            };
            let (rest, blk) = r.ok()?;
            return Some((PcapBlockOwned::Legacy(blk), b.len() - rest.len()));
        }
        let r = if self.ng_be {
            pcap_parser::pcapng::parse_block_be(b)
        } else {
            pcap_parser::pcapng::parse_block_le(b)
        };
        let (rest, blk) = r.ok()?;
        Some((PcapBlockOwned::NG(blk), b.len() - rest.len()))
    }
}

fn ts_from_units(units: u64, resol: u64, offset: i64) -> Timestamp {
    let resol = resol.max(1);
    let secs = (units / resol) as i64 + offset;
    let frac = (units % resol) as u128;
    let nanos = (frac * 1_000_000_000 / resol as u128) as u32;
    Timestamp { secs, nanos }
}

/// pcap's magic numbers: microsecond and nanosecond times, either byte order.
const PCAP_MAGICS: [[u8; 4]; 4] = [
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
    [0x4d, 0x3c, 0xb2, 0xa1],
];
/// The block type of pcapng's section header block, which starts the file.
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// How many bytes of `b` (the start of the input) to read before the file header is
/// whole: 4 for the magic, then 24 for pcap, the section header block's length for
/// pcapng (12 to learn it); no more for anything else.
fn header_len(b: &[u8]) -> usize {
    match b {
        [] | [_] | [_, _] | [_, _, _] => 4,
        [m0, m1, m2, m3, ..] if PCAP_MAGICS.contains(&[*m0, *m1, *m2, *m3]) => 24,
        [m0, m1, m2, m3, rest @ ..] if [*m0, *m1, *m2, *m3] == PCAPNG_MAGIC => {
            match (rest.get(..4), rest.get(4..8)) {
                (Some(len), Some(order)) => {
                    let len: [u8; 4] = len.try_into().unwrap_or([0; 4]);
                    let total = match order {
                        [0x1a, 0x2b, 0x3c, 0x4d] => u32::from_be_bytes(len),
                        [0x4d, 0x3c, 0x2b, 0x1a] => u32::from_le_bytes(len),
                        _ => 0,
                    };
                    (total as usize).max(12)
                }
                _ => 12,
            }
        }
        _ => 4,
    }
}

/// Whether the whole input `b` starts like a pcap file (either byte order, microsecond or
/// nanosecond times) shorter than its 24-byte header, or like a pcapng file that ends
/// before its section header block does.
fn header_cut(b: &[u8]) -> bool {
    let n = b.len().min(4);
    n > 0
        && PCAP_MAGICS
            .iter()
            .chain([&PCAPNG_MAGIC])
            .any(|m| m[..n] == b[..n])
        && b.len() < header_len(b)
}

/// Read a whole pcap or pcapng capture from `r` (a file, stdin, ...) in a streaming way and
/// call `on_event` for every frame and notice, in capture order.
///
/// Errors: [`CaptureError::Empty`] / [`CaptureError::NotACapture`] when the input is not a
/// capture at all, [`CaptureError::HeaderCut`] when it starts like one but ends inside the
/// file header, [`CaptureError::Read`] on I/O errors. The file header is read whole first,
/// however the input hands it out (a pipe may give a byte at a time), and no more than it,
/// so a live capture on stdin shows its packets as they come. A file that ends inside a record, or
/// whose record claims more bytes than the file holds, is not an error: it is reported as a
/// [`NoticeKind::FileTruncated`] notice with the record number, everything before it is
/// processed, and [`CaptureStats::file_truncated`] is set. A record or block that cannot be
/// parsed is reported the same way as a [`NoticeKind::CorruptRecord`] notice, with
/// [`CaptureStats::file_corrupt`] set.
pub fn read_capture<R: Read + Send>(
    r: R,
    opts: &CaptureOptions,
    plaus: &dyn FramePlausibility,
    on_event: impl FnMut(Event),
) -> Result<CaptureStats, CaptureError> {
    read_capture_observed(r, opts, plaus, &mut (), on_event)
}

/// Told where each record of a capture lies, as [`read_capture_observed`] reads it: what
/// re-reading a record later without the ones before it needs ([`crate::index`]).
pub trait CaptureObserver {
    /// Packet record `number` (1-based, as [`super::FrameContext::first_frame`] counts)
    /// starts at byte `offset` of the input (its pcap record header or pcapng block).
    fn record(&mut self, number: u64, offset: u64);
    /// The file's link state changed (a pcap file header, a pcapng section header or
    /// interface description): `links` reads the records from number `next` on.
    fn links(&mut self, next: u64, links: &Links) {
        let _ = (next, links);
    }
}

/// Observes nothing.
impl CaptureObserver for () {
    fn record(&mut self, _: u64, _: u64) {}
}

/// [`read_capture`], telling `observer` where each record lies.
///
/// # Errors
/// As [`read_capture`].
pub fn read_capture_observed<R: Read + Send>(
    r: R,
    opts: &CaptureOptions,
    plaus: &dyn FramePlausibility,
    observer: &mut dyn CaptureObserver,
    mut on_event: impl FnMut(Event),
) -> Result<CaptureStats, CaptureError> {
    let out: &mut dyn FnMut(Event) = &mut on_event;
    let cap = opts.read_buffer.clamp(65536, MAX_READ_BUFFER);
    // The file header, read here and handed on in one piece (no more than it, so a live
    // capture on stdin shows its first packets as they come), to tell a capture cut
    // inside its file header from something that is no capture at all.
    const HEAD: usize = 64 << 10;
    let mut r = r;
    let mut head = Vec::with_capacity(64);
    let mut eof = false;
    while !eof && head.len() < header_len(&head).min(HEAD) {
        let want = header_len(&head).min(HEAD) - head.len();
        let mut chunk = vec![0u8; want];
        match r.read(&mut chunk) {
            Ok(0) => eof = true,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(CaptureError::Read),
        }
    }
    let cut = eof && header_cut(&head);
    let r = std::io::Cursor::new(head).chain(r);
    let mut reader = match pcap_parser::create_reader(cap, r) {
        Ok(rd) => rd,
        Err(PcapError::Eof) => return Err(CaptureError::Empty),
        Err(PcapError::ReadError) => return Err(CaptureError::Read),
        Err(PcapError::HeaderNotRecognized) | Err(PcapError::Incomplete(_)) if cut => {
            return Err(CaptureError::HeaderCut)
        }
        Err(PcapError::HeaderNotRecognized) | Err(PcapError::Incomplete(_)) => {
            return Err(CaptureError::NotACapture)
        }
        Err(e) => return Err(CaptureError::Parse(parse_words(&e, 0, None))),
    };
    let mut ex = Extractor::new(opts, plaus);
    let mut links = Links::default();
    let mut capacity = cap;
    let mut stalls = 0u32;
    // Bytes of the input consumed before the block being read: its offset in the file.
    let mut pos = 0u64;
    let halted = || {
        opts.stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
    };
    loop {
        if halted() {
            break;
        }
        match reader.next() {
            Ok((offset, block)) => {
                stalls = 0;
                match links.record(&block) {
                    Rec::Packet(p) => {
                        observer.record(ex.frame_no + 1, pos);
                        ex.packet(p.linktype, p.data, p.origlen, p.time, out);
                    }
                    Rec::NoInterface { if_id, captured } => {
                        observer.record(ex.frame_no + 1, pos);
                        ex.packet_without_interface(if_id, captured, out);
                    }
                    Rec::Secrets(text) => ex.add_tls_secrets(text, out),
                    Rec::Links => observer.links(ex.frame_no + 1, &links),
                    Rec::Other => {}
                }
                pos += offset as u64;
                // Without moving what is left to the buffer's start (which `consume`
                // does each time half of the buffer is read): `refill` moves the one
                // partial block left when the buffer runs out.
                reader.consume_noshift(offset);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => {
                stalls += 1;
                if stalls > 1000 {
                    truncated(&mut ex, "the reader made no progress");
                    break;
                }
                if reader.refill().is_err() {
                    return Err(CaptureError::Read);
                }
            }
            Err(PcapError::BufferTooSmall) => {
                // size claimed by the pending record/block, checked before growing the buffer
                let d = reader.data();
                let claim = if links.ifaces.is_empty() && d.len() >= 12 && links.legacy_seen {
                    let b = [d[8], d[9], d[10], d[11]];
                    let c = if links.legacy_be {
                        u32::from_be_bytes(b)
                    } else {
                        u32::from_le_bytes(b)
                    };
                    c as usize + 16
                } else if d.len() >= 8 {
                    let b = [d[4], d[5], d[6], d[7]];
                    u32::from_le_bytes(b).min(u32::from_be_bytes(b)) as usize
                } else {
                    usize::MAX
                };
                if claim <= MAX_READ_BUFFER && capacity < MAX_READ_BUFFER {
                    capacity = (claim + 4096)
                        .next_power_of_two()
                        .clamp(capacity * 2, MAX_READ_BUFFER);
                    if !reader.grow(capacity) {
                        truncated(&mut ex, "a record is larger than the reader buffer");
                        break;
                    }
                    if reader.refill().is_err() {
                        return Err(CaptureError::Read);
                    }
                } else {
                    corrupt(
                        &mut ex,
                        "a record claims more than 16 MiB (corrupt length); reading stopped",
                    );
                    break;
                }
            }
            Err(PcapError::UnexpectedEof) => {
                truncated(
                    &mut ex,
                    "the file ends inside a record (record claims more bytes than the file holds)",
                );
                break;
            }
            Err(PcapError::ReadError) => return Err(CaptureError::Read),
            Err(e) => {
                let ng = !links.legacy_seen;
                let msg = parse_words(&e, pos, Some(ng));
                // The cuts (Incomplete, UnexpectedEof) are matched above: this block is
                // corrupt, and the file may go on after it.
                corrupt(&mut ex, &msg);
                break;
            }
        }
    }
    Ok(ex.finish(out))
}

/// A parse failure of pcap-parser as a sentence with its byte offset in the file (`at`,
/// where the block or record that failed starts), never the parser's debug dump.
/// `ng`: the file is pcapng (`Some(true)`), legacy pcap (`Some(false)`), or its header
/// is what failed (`None`).
fn parse_words<I: AsRef<[u8]>>(e: &PcapError<I>, at: u64, ng: Option<bool>) -> String {
    let what = match ng {
        None => "the file header".to_string(),
        Some(true) => format!("the pcapng block at byte {at}"),
        Some(false) => format!("the pcap record at byte {at}"),
    };
    let why = match e {
        PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind)
            if !matches!(kind, nom::error::ErrorKind::Eof) =>
        {
            match ng {
                Some(true) => "is not a valid block: its type, length or closing length is wrong",
                Some(false) => "is not a valid record header",
                None => "is not a valid pcap or pcapng header",
            }
        }
        PcapError::NomError(..) | PcapError::OwnedNomError(..) => {
            "ends before its length says it does"
        }
        PcapError::Incomplete(_) | PcapError::UnexpectedEof => "is cut by the end of the file",
        PcapError::BufferTooSmall => "is larger than the reader's buffer",
        PcapError::HeaderNotRecognized => "is neither pcap nor pcapng",
        PcapError::ReadError => "could not be read",
        PcapError::Eof => "is missing: the file ends",
    };
    match ng {
        None => format!("{what} {why}"),
        Some(_) => format!("{what} {why}; reading stopped there"),
    }
}

/// The file ends inside the next record: a [`NoticeKind::FileTruncated`] notice.
fn truncated(ex: &mut Extractor<'_>, why: &str) {
    ex.stats.file_truncated = true;
    stopped(ex, NoticeKind::FileTruncated, why);
}

/// The next record or block cannot be parsed: a [`NoticeKind::CorruptRecord`] notice.
fn corrupt(ex: &mut Extractor<'_>, why: &str) {
    ex.stats.file_corrupt = true;
    stopped(ex, NoticeKind::CorruptRecord, why);
}

/// The notice of reading stopped before the next record, of `kind`.
fn stopped(ex: &mut Extractor<'_>, kind: NoticeKind, why: &str) {
    let frame = ex.frame_no + 1;
    // The notice's frame number says which record: the message need not say it again.
    let mut n = Notice::new(kind, why.to_string());
    n.frame = Some(frame);
    ex.notice(n);
}
