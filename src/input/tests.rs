//! Tests for the input layer: captures built by hand (pcap / pcapng writers below, packets
//! from etherparse's `PacketBuilder`), and the shared real captures when `KWIRE_SHARED` is set.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use etherparse::PacketBuilder;

use super::*;

// ---------- capture writers ----------

#[derive(Clone, Copy, PartialEq)]
enum Link {
    Eth,
    Vlan,
    QinQ,
    Raw,
    Sll2,
    Null,
}

impl Link {
    fn dlt(self) -> u32 {
        match self {
            Link::Eth | Link::Vlan | Link::QinQ => 1,
            Link::Raw => 101,
            Link::Sll2 => 276,
            Link::Null => 0,
        }
    }
}

/// Wrap an IP packet in a link header.
fn link_wrap(link: Link, ip: Vec<u8>) -> Vec<u8> {
    let et: u16 = if ip[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
    let mut v = Vec::new();
    match link {
        Link::Raw => {}
        Link::Eth | Link::Vlan | Link::QinQ => {
            v.extend_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2]);
            if link == Link::QinQ {
                v.extend_from_slice(&[0x88, 0xa8, 0x00, 0x64]);
            }
            if link != Link::Eth {
                v.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a]);
            }
            v.extend_from_slice(&et.to_be_bytes());
        }
        Link::Sll2 => {
            v.extend_from_slice(&et.to_be_bytes());
            v.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0]);
        }
        Link::Null => {
            let fam: u32 = if et == 0x86dd { 30 } else { 2 };
            v.extend_from_slice(&fam.to_le_bytes());
        }
    }
    v.extend_from_slice(&ip);
    v
}

/// One record: bytes, original length.
type Rec = (Vec<u8>, u32);

/// A little-endian microsecond pcap.
fn pcap(link: Link, recs: &[Rec]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&0i32.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&link.dlt().to_le_bytes());
    for (i, (d, orig)) in recs.iter().enumerate() {
        v.extend_from_slice(&(1_700_000_000u32 + i as u32).to_le_bytes());
        v.extend_from_slice(&(i as u32 * 10).to_le_bytes());
        v.extend_from_slice(&(d.len() as u32).to_le_bytes());
        v.extend_from_slice(&orig.to_le_bytes());
        v.extend_from_slice(d);
    }
    v
}

/// A big-endian nanosecond pcap.
fn pcap_be_nanos(link: Link, recs: &[Rec]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b23c4du32.to_be_bytes());
    v.extend_from_slice(&2u16.to_be_bytes());
    v.extend_from_slice(&4u16.to_be_bytes());
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&65535u32.to_be_bytes());
    v.extend_from_slice(&link.dlt().to_be_bytes());
    for (i, (d, orig)) in recs.iter().enumerate() {
        v.extend_from_slice(&(1_700_000_000u32 + i as u32).to_be_bytes());
        v.extend_from_slice(&123_456_789u32.to_be_bytes());
        v.extend_from_slice(&(d.len() as u32).to_be_bytes());
        v.extend_from_slice(&orig.to_be_bytes());
        v.extend_from_slice(d);
    }
    v
}

fn ng_block(v: &mut Vec<u8>, ty: u32, body: &[u8]) {
    let pad = (4 - body.len() % 4) % 4;
    let len = (12 + body.len() + pad) as u32;
    v.extend_from_slice(&ty.to_le_bytes());
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(body);
    v.extend_from_slice(&vec![0; pad]);
    v.extend_from_slice(&len.to_le_bytes());
}

/// A pcapng with one interface per entry of `ifaces` (link, if_tsresol); records name their
/// interface; timestamps are `units` in that interface's resolution.
fn pcapng(ifaces: &[(Link, u8)], recs: &[(u32, u64, Vec<u8>)]) -> Vec<u8> {
    let mut v = Vec::new();
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b3c4du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    ng_block(&mut v, 0x0a0d0d0a, &shb);
    for (link, res) in ifaces {
        let mut idb = Vec::new();
        idb.extend_from_slice(&(link.dlt() as u16).to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&0u32.to_le_bytes());
        // option if_tsresol (9), length 1, padded; then opt_endofopt
        idb.extend_from_slice(&9u16.to_le_bytes());
        idb.extend_from_slice(&1u16.to_le_bytes());
        idb.extend_from_slice(&[*res, 0, 0, 0]);
        idb.extend_from_slice(&[0, 0, 0, 0]);
        ng_block(&mut v, 1, &idb);
    }
    for (iface, units, d) in recs {
        let mut epb = Vec::new();
        epb.extend_from_slice(&iface.to_le_bytes());
        epb.extend_from_slice(&((units >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(*units as u32).to_le_bytes());
        epb.extend_from_slice(&(d.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(d.len() as u32).to_le_bytes());
        epb.extend_from_slice(d);
        epb.extend_from_slice(&vec![0; (4 - d.len() % 4) % 4]);
        ng_block(&mut v, 6, &epb);
    }
    v
}

// ---------- TCP flows ----------

struct Flow {
    link: Link,
    client: (IpAddr, u16),
    server: (IpAddr, u16),
}

#[derive(Clone, Copy, Default)]
struct Fl {
    syn: bool,
    ack: bool,
    fin: bool,
    rst: bool,
}

/// A data segment's flags. No ACK: [`Flow`] does not follow the peer's sequence numbers,
/// and an ACK number ahead of what the peer sent declares bytes lost (see
/// `Reassembler::acked`).
const NONE: Fl = Fl {
    syn: false,
    ack: false,
    fin: false,
    rst: false,
};

impl Flow {
    fn v4(link: Link, server_port: u16) -> Flow {
        Flow {
            link,
            client: (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 40000),
            server: (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), server_port),
        }
    }
    fn v6(link: Link) -> Flow {
        Flow {
            link,
            client: (IpAddr::V6(Ipv6Addr::LOCALHOST), 40001),
            server: (IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2)), 9092),
        }
    }
    /// A packet from the client (`to_server`) or the server.
    fn pkt(&self, to_server: bool, seq: u32, fl: Fl, payload: &[u8]) -> Vec<u8> {
        let (a, b) = if to_server {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let ip = match (a.0, b.0) {
            (IpAddr::V4(s), IpAddr::V4(d)) => PacketBuilder::ipv4(s.octets(), d.octets(), 64),
            (IpAddr::V6(s), IpAddr::V6(d)) => PacketBuilder::ipv6(s.octets(), d.octets(), 64),
            _ => unreachable!(),
        };
        let mut t = ip.tcp(a.1, b.1, seq, 65535);
        if fl.syn {
            t = t.syn();
        }
        if fl.ack {
            t = t.ack(1);
        }
        if fl.fin {
            t = t.fin();
        }
        if fl.rst {
            t = t.rst();
        }
        let mut v = Vec::new();
        t.write(&mut v, payload).unwrap();
        link_wrap(self.link, v)
    }
    fn c(&self, seq: u32, payload: &[u8]) -> Rec {
        let p = self.pkt(true, seq, NONE, payload);
        let n = p.len() as u32;
        (p, n)
    }
    fn s(&self, seq: u32, payload: &[u8]) -> Rec {
        let p = self.pkt(false, seq, NONE, payload);
        let n = p.len() as u32;
        (p, n)
    }
    fn syn(&self, to_server: bool, seq: u32) -> Rec {
        let fl = Fl {
            syn: true,
            ack: !to_server,
            ..Fl::default()
        };
        let p = self.pkt(to_server, seq, fl, b"");
        let n = p.len() as u32;
        (p, n)
    }
    fn fin(&self, to_server: bool, seq: u32) -> Rec {
        let fl = Fl {
            fin: true,
            ..Fl::default()
        };
        let p = self.pkt(to_server, seq, fl, b"");
        let n = p.len() as u32;
        (p, n)
    }
}

/// A request frame: size, api_key, api_version, correlation_id, client_id "kw", body.
fn req(key: i16, ver: i16, corr: i32, body_len: usize) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&key.to_be_bytes());
    b.extend_from_slice(&ver.to_be_bytes());
    b.extend_from_slice(&corr.to_be_bytes());
    b.extend_from_slice(&2i16.to_be_bytes());
    b.extend_from_slice(b"kw");
    b.extend((0..body_len).map(|i| (i % 251) as u8));
    let mut v = (b.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(&b);
    v
}

/// A response frame: size, correlation_id, body.
fn resp(corr: i32, body: &[u8]) -> Vec<u8> {
    let mut v = ((4 + body.len()) as i32).to_be_bytes().to_vec();
    v.extend_from_slice(&corr.to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

struct Out {
    frames: Vec<Frame>,
    notices: Vec<Notice>,
    stats: CaptureStats,
}

fn run_opts(file: &[u8], opts: &CaptureOptions) -> Out {
    let mut frames = Vec::new();
    let mut notices = Vec::new();
    let stats = read_capture(file, opts, &DefaultPlausibility, |e| match e {
        Event::Frame(f) => frames.push(f),
        Event::Notice(n) => notices.push(n),
    })
    .expect("capture reads");
    Out {
        frames,
        notices,
        stats,
    }
}

fn run(file: &[u8]) -> Out {
    run_opts(file, &CaptureOptions::default())
}

fn frames_of(o: &Out, dir: Direction) -> Vec<Vec<u8>> {
    o.frames
        .iter()
        .filter(|f| f.ctx.direction == dir)
        .map(|f| f.bytes.clone())
        .collect()
}

/// A standard conversation: handshake, requests r1..r3 (coalesced + split), responses.
fn conversation(flow: &Flow, cisn: u32, sisn: u32) -> (Vec<Rec>, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let r1 = req(18, 3, 1, 10);
    let r2 = req(3, 12, 2, 30);
    let r3 = req(0, 9, 3, 3000);
    let p1 = resp(1, b"apiversions");
    let p2 = resp(2, &[7u8; 2000]);
    let p3 = resp(3, b"produced");
    let c = cisn.wrapping_add(1);
    let s = sisn.wrapping_add(1);
    let mut recs = vec![flow.syn(true, cisn), flow.syn(false, sisn)];
    let both = cat(&[&r1, &r2]);
    recs.push(flow.c(c, &both));
    let mut cs = c.wrapping_add(both.len() as u32);
    for chunk in r3.chunks(1400) {
        recs.push(flow.c(cs, chunk));
        cs = cs.wrapping_add(chunk.len() as u32);
    }
    let sall = cat(&[&p1, &p2, &p3]);
    let mut ss = s;
    for chunk in sall.chunks(1000) {
        recs.push(flow.s(ss, chunk));
        ss = ss.wrapping_add(chunk.len() as u32);
    }
    recs.push(flow.fin(true, cs));
    recs.push(flow.fin(false, ss));
    (recs, vec![r1, r2, r3], vec![p1, p2, p3])
}

#[test]
fn input_split_and_coalesced_ethernet() {
    let flow = Flow::v4(Link::Eth, 9092);
    let (recs, reqs, resps) = conversation(&flow, 1000, 5000);
    let o = run(&pcap(Link::Eth, &recs));
    assert_eq!(frames_of(&o, Direction::ToServer), reqs);
    assert_eq!(frames_of(&o, Direction::ToClient), resps);
    assert!(o.notices.is_empty(), "{:?}", o.notices);
    let f = &o.frames[2];
    assert_eq!((f.ctx.first_frame, f.ctx.last_frame), (4, 6));
    assert_eq!(f.ctx.stream_offset, (reqs[0].len() + reqs[1].len()) as u64);
    assert_eq!(f.ctx.connection, 1);
    assert_eq!(f.ctx.src.port(), 40000);
    assert_eq!(f.ctx.time.secs, 1_700_000_005);
    assert_eq!(f.ctx.time.nanos, 50_000);
    assert!(o
        .frames
        .iter()
        .all(|f| f.kind == FrameKind::Kafka && !f.ctx.incomplete));
    assert_eq!(o.stats.connections, 1);
    assert_eq!(o.stats.frames, 6);
}

#[test]
fn input_link_types_and_ipv6() {
    for link in [Link::Vlan, Link::QinQ, Link::Raw, Link::Sll2, Link::Null] {
        for v6 in [false, true] {
            let flow = if v6 {
                Flow::v6(link)
            } else {
                Flow::v4(link, 9092)
            };
            let (recs, reqs, resps) = conversation(&flow, 7, 9);
            let o = run(&pcap(link, &recs));
            assert_eq!(
                frames_of(&o, Direction::ToServer),
                reqs,
                "link {}",
                link.dlt()
            );
            assert_eq!(frames_of(&o, Direction::ToClient), resps);
            if v6 {
                assert!(o.frames[0].ctx.src.is_ipv6());
            }
        }
    }
}

#[test]
fn input_pcap_big_endian_nanos_and_pcapng_interfaces() {
    let flow = Flow::v4(Link::Eth, 9092);
    let (recs, reqs, _) = conversation(&flow, 1, 2);
    let o = run(&pcap_be_nanos(Link::Eth, &recs));
    assert_eq!(frames_of(&o, Direction::ToServer), reqs);
    assert_eq!(o.frames[0].ctx.time.nanos, 123_456_789);

    // pcapng: the client side on an Ethernet interface with microseconds, the server side on
    // a raw-IP interface with nanoseconds (if_tsresol 9)
    let raw = Flow::v4(Link::Raw, 9092);
    let (rrecs, _, resps) = conversation(&raw, 1, 2);
    let mut ng = Vec::new();
    for (i, (r, rr)) in recs.iter().zip(rrecs.iter()).enumerate() {
        // decide by direction: use the raw-IP copy for server packets
        let ip_dst_is_server = r.0[14 + 19] == 2;
        if ip_dst_is_server {
            ng.push((0u32, 1_700_000_000_000_001u64 + i as u64, r.0.clone()));
        } else {
            ng.push((1u32, 1_700_000_000_000_000_007u64, rr.0.clone()));
        }
    }
    let o = run(&pcapng(&[(Link::Eth, 6), (Link::Raw, 9)], &ng));
    assert_eq!(frames_of(&o, Direction::ToServer), reqs);
    assert_eq!(frames_of(&o, Direction::ToClient), resps);
    let c0 = &o.frames[0].ctx.time;
    assert_eq!((c0.secs, c0.nanos), (1_700_000_000, 3000));
    let s0 = o
        .frames
        .iter()
        .find(|f| f.ctx.direction == Direction::ToClient)
        .unwrap();
    assert_eq!((s0.ctx.time.secs, s0.ctx.time.nanos), (1_700_000_000, 7));
}

#[test]
fn input_out_of_order_retransmit_overlap() {
    let flow = Flow::v4(Link::Eth, 9092);
    let r1 = req(1, 11, 10, 500);
    let r2 = req(2, 5, 11, 40);
    let all = cat(&[&r1, &r2]);
    let c = 101u32;
    let recs = vec![
        flow.syn(true, 100),
        flow.syn(false, 900),
        flow.c(c + 300, &all[300..]),    // out of order
        flow.c(c + 100, &all[100..350]), // overlaps the previous one
        flow.c(c, &all[..200]),          // fills the start, overlaps
        flow.c(c, &all[..200]),          // retransmission
        flow.c(c + 50, &all[50..60]),    // stale duplicate
    ];
    let o = run(&pcap(Link::Eth, &recs));
    assert_eq!(frames_of(&o, Direction::ToServer), vec![r1, r2]);
    assert!(o.stats.duplicate_bytes >= 200 + 10 + 150);
    assert!(o.notices.is_empty(), "{:?}", o.notices);
}

#[test]
fn input_overlap_keeps_first_seen_bytes() {
    let flow = Flow::v4(Link::Eth, 9092);
    let r1 = req(3, 1, 1, 20);
    let mut bad = r1.clone();
    for b in &mut bad[10..] {
        *b ^= 0xff;
    }
    let recs = vec![
        flow.syn(true, 0),
        flow.c(1 + 10, &r1[10..]),
        flow.c(1, &bad[..20]), // conflicting overlap: first-seen bytes win
    ];
    let o = run(&pcap(Link::Eth, &recs));
    assert_eq!(frames_of(&o, Direction::ToServer), vec![r1]);
}

#[test]
fn input_sequence_wraparound() {
    let flow = Flow::v4(Link::Eth, 9092);
    let (recs, reqs, resps) = conversation(&flow, u32::MAX - 5, u32::MAX - 1500);
    let o = run(&pcap(Link::Eth, &recs));
    assert_eq!(frames_of(&o, Direction::ToServer), reqs);
    assert_eq!(frames_of(&o, Direction::ToClient), resps);
}

#[test]
fn input_mid_stream_resync() {
    let flow = Flow::v4(Link::Eth, 9092);
    let r0 = req(1, 4, 99, 300);
    let r1 = req(3, 1, 100, 5);
    let r2 = req(18, 0, 101, 0);
    let p1 = resp(100, b"x");
    // the capture starts 123 bytes into r0
    let data = cat(&[&r0[123..], &r1, &r2]);
    let mut tail = vec![0xffu8, 0xff, 0xff, 0xf0];
    tail.extend_from_slice(&[1, 2, 3]);
    let sdata = cat(&[&tail, &p1]);
    let recs = vec![flow.c(5000, &data), flow.s(7000, &sdata)];
    let o = run(&pcap(Link::Eth, &recs));
    assert_eq!(frames_of(&o, Direction::ToServer), vec![r1, r2]);
    assert_eq!(frames_of(&o, Direction::ToClient), vec![p1]);
    let rs: Vec<&Notice> = o
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::Resync)
        .collect();
    assert_eq!(rs.len(), 2, "{:?}", o.notices);
    assert_eq!(rs[0].bytes, Some((r0.len() - 123) as u64));
    assert_eq!(rs[0].frame, Some(1));
    assert_eq!(rs[1].bytes, Some(7));
    assert_eq!(o.stats.bytes_skipped, (r0.len() - 123 + 7) as u64);
}

#[test]
fn input_lost_segment_gap() {
    let flow = Flow::v4(Link::Eth, 9092);
    let r1 = req(0, 9, 1, 4000);
    let r2 = req(3, 12, 2, 10);
    let r3 = req(3, 12, 3, 10);
    let all = cat(&[&r1, &r2, &r3]);
    let c = 11u32;
    let recs = vec![
        flow.syn(true, 10),
        flow.c(c, &all[..1000]),
        // lost: 1000..2000
        flow.c(c + 2000, &all[2000..3000]),
        flow.c(c + 3000, &all[3000..]),
        flow.fin(true, c + all.len() as u32),
    ];
    for small_window in [false, true] {
        let mut opts = CaptureOptions::default();
        if small_window {
            opts.max_out_of_order = 1500;
        }
        let o = run_opts(&pcap(Link::Eth, &recs), &opts);
        let fs = frames_of(&o, Direction::ToServer);
        assert_eq!(fs.len(), 3, "{:?}", o.notices);
        assert_eq!(fs[0], r1[..1000].to_vec());
        let inc: Vec<bool> = o.frames.iter().map(|f| f.ctx.incomplete).collect();
        assert_eq!(inc, vec![true, false, false]);
        assert_eq!(fs[1], r2);
        assert_eq!(fs[2], r3);
        let g: Vec<&Notice> = o
            .notices
            .iter()
            .filter(|n| n.kind == NoticeKind::Gap)
            .collect();
        assert_eq!(g.len(), 1);
        assert_eq!((g[0].offset, g[0].bytes), (Some(1000), Some(1000)));
    }
    // a gap that swallows a frame boundary: resynchronise
    let recs = vec![
        flow.syn(true, 10),
        flow.c(c, &all[..1000]),
        flow.c(c + r1.len() as u32 + 3, &all[r1.len() + 3..]),
    ];
    let opts = CaptureOptions {
        max_out_of_order: 10,
        ..CaptureOptions::default()
    };
    let o = run_opts(&pcap(Link::Eth, &recs), &opts);
    let fs = frames_of(&o, Direction::ToServer);
    assert_eq!(fs, vec![r1[..1000].to_vec(), r3.clone()], "{:?}", o.notices);
    assert!(o.notices.iter().any(|n| n.kind == NoticeKind::Resync));
}

#[test]
fn input_oversize_frame_skipped() {
    let flow = Flow::v4(Link::Eth, 9092);
    let big = req(0, 9, 1, 5000);
    let r2 = req(3, 12, 2, 10);
    let all = cat(&[&big, &r2]);
    let mut recs = vec![flow.syn(true, 0)];
    let mut s = 1u32;
    for ch in all.chunks(1000) {
        recs.push(flow.c(s, ch));
        s += ch.len() as u32;
    }
    let opts = CaptureOptions {
        max_frame: 1024,
        ..CaptureOptions::default()
    };
    let o = run_opts(&pcap(Link::Eth, &recs), &opts);
    assert_eq!(frames_of(&o, Direction::ToServer), vec![r2]);
    let n: Vec<&Notice> = o
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::Oversize)
        .collect();
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].bytes, Some(big.len() as u64));
    assert_eq!(n[0].frame, Some(2));
}

#[test]
fn input_negative_size_resyncs() {
    let flow = Flow::v4(Link::Eth, 9092);
    let r2 = req(3, 12, 2, 10);
    let data = cat(&[&[0x80, 0, 0, 1, 9, 9], &r2]);
    let recs = vec![flow.syn(true, 0), flow.c(1, &data)];
    let o = run(&pcap(Link::Eth, &recs));
    assert_eq!(frames_of(&o, Direction::ToServer), vec![r2]);
    assert!(o
        .notices
        .iter()
        .any(|n| n.kind == NoticeKind::Resync && n.bytes == Some(6)));
}

#[test]
fn input_record_longer_than_file() {
    let flow = Flow::v4(Link::Eth, 9092);
    let (recs, reqs, _) = conversation(&flow, 1, 2);
    let mut file = pcap(Link::Eth, &recs[..3]);
    // a record header claiming 1000 bytes, with only 10 present
    file.extend_from_slice(&1u32.to_le_bytes());
    file.extend_from_slice(&0u32.to_le_bytes());
    file.extend_from_slice(&1000u32.to_le_bytes());
    file.extend_from_slice(&1000u32.to_le_bytes());
    file.extend_from_slice(&[0u8; 10]);
    let o = run(&file);
    assert_eq!(frames_of(&o, Direction::ToServer), reqs[..2].to_vec());
    let n: Vec<&Notice> = o
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::FileTruncated)
        .collect();
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].frame, Some(4));
    assert!(o.stats.file_truncated);
}

#[test]
fn input_snaplen_truncated_record() {
    let flow = Flow::v4(Link::Eth, 9092);
    let r1 = req(0, 9, 1, 3000);
    let r2 = req(3, 12, 2, 10);
    let mut p = flow.c(1, &r1);
    let orig = p.0.len() as u32;
    p.0.truncate(200);
    p.1 = orig;
    let recs = vec![flow.syn(true, 0), p, flow.c(1 + r1.len() as u32, &r2)];
    let o = run(&pcap(Link::Eth, &recs));
    let fs = frames_of(&o, Direction::ToServer);
    assert_eq!(fs.len(), 2);
    assert!(o.frames[0].ctx.incomplete);
    assert_eq!(fs[0], r1[..200 - 54].to_vec());
    assert_eq!(fs[1], r2);
    assert!(o
        .notices
        .iter()
        .any(|n| n.kind == NoticeKind::Truncated && n.frame == Some(2)));
}

#[test]
fn input_tls_connection() {
    let flow = Flow::v4(Link::Eth, 9092);
    let hello = [0x16, 0x03, 0x01, 0x00, 0x05, 1, 0, 0, 1, 0];
    let recs = vec![
        flow.syn(true, 0),
        flow.syn(false, 0),
        flow.c(1, &hello),
        flow.s(1, &[0x16, 0x03, 0x03, 0, 2, 2, 0]),
    ];
    let o = run(&pcap(Link::Eth, &recs));
    assert!(o.frames.is_empty());
    let n: Vec<&Notice> = o
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::Tls)
        .collect();
    // The ClientHello here is garbled (a one-byte body), and the connection's closing
    // notice says it stayed TLS, with no encrypted record (nothing to decrypt).
    assert_eq!(n.len(), 2, "{n:?}");
    assert!(n[0].message.contains("garbled ClientHello"), "{n:?}");
    assert!(
        n[1].message.contains("no encrypted record was seen"),
        "{n:?}"
    );
    assert!(n.iter().all(|n| n.connection == Some(1)));
}

#[test]
fn input_sasl_v0_raw_tokens() {
    let flow = Flow::v4(Link::Eth, 9093);
    let hs = {
        let mut b = req(17, 0, 5, 0);
        b.extend_from_slice(&5i16.to_be_bytes());
        b.extend_from_slice(b"PLAIN");
        let n = (b.len() - 4) as i32;
        b[..4].copy_from_slice(&n.to_be_bytes());
        b
    };
    let hs_resp = resp(5, &[0, 0, 0, 0, 0, 1, 0, 5, b'P', b'L', b'A', b'I', b'N']);
    let token = {
        let t = b"\0user\0secret";
        let mut v = (t.len() as i32).to_be_bytes().to_vec();
        v.extend_from_slice(t);
        v
    };
    let empty_token = vec![0u8, 0, 0, 0];
    let next = req(3, 1, 6, 4);
    let next_resp = resp(6, b"meta");
    let mut c = 1u32;
    let mut s = 1u32;
    let mut recs = vec![flow.syn(true, 0), flow.syn(false, 0)];
    for (to_s, d) in [
        (true, &hs),
        (false, &hs_resp),
        (true, &token),
        (false, &empty_token),
        (true, &next),
        (false, &next_resp),
    ] {
        if to_s {
            recs.push(flow.c(c, d));
            c += d.len() as u32;
        } else {
            recs.push(flow.s(s, d));
            s += d.len() as u32;
        }
    }
    let opts = CaptureOptions {
        ports: vec![9092, 9093],
        ..CaptureOptions::default()
    };
    let o = run_opts(&pcap(Link::Eth, &recs), &opts);
    let kinds: Vec<FrameKind> = o.frames.iter().map(|f| f.kind).collect();
    use FrameKind::*;
    assert_eq!(
        kinds,
        vec![Kafka, Kafka, SaslToken, SaslToken, Kafka, Kafka]
    );
    assert_eq!(o.frames[2].bytes, token);

    // an error response keeps normal framing; v1 handshakes never switch
    let mut bad = hs_resp.clone();
    bad[9] = 33;
    let mut recs2 = recs.clone();
    recs2[3] = flow.s(1, &bad);
    let o = run_opts(&pcap(Link::Eth, &recs2), &opts);
    assert!(o.frames.iter().all(|f| f.kind == Kafka));
}

#[test]
fn input_detect_mode_finds_server() {
    let flow = Flow::v4(Link::Eth, 31337);
    let (recs, reqs, resps) = conversation(&flow, 1, 2);
    // without detect, port 31337 is not Kafka
    assert!(run(&pcap(Link::Eth, &recs)).frames.is_empty());
    let opts = CaptureOptions {
        detect: true,
        ..CaptureOptions::default()
    };
    let o = run_opts(&pcap(Link::Eth, &recs), &opts);
    assert_eq!(frames_of(&o, Direction::ToServer), reqs);
    assert_eq!(frames_of(&o, Direction::ToClient), resps);
    // mid-stream (no SYN): recognised from the plausible request
    let o = run_opts(&pcap(Link::Eth, &recs[2..]), &opts);
    assert_eq!(frames_of(&o, Direction::ToServer), reqs);
    assert_eq!(o.frames[0].ctx.dst.port(), 31337);
    // a non-Kafka connection yields nothing
    let junk = Flow::v4(Link::Eth, 80);
    let recs = vec![
        junk.syn(true, 0),
        junk.c(1, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        junk.fin(true, 28),
    ];
    let o = run_opts(&pcap(Link::Eth, &recs), &opts);
    assert!(o.frames.is_empty());
}

#[test]
fn input_ipv4_fragments_reassembled() {
    let flow = Flow::v4(Link::Raw, 9092);
    let r1 = req(3, 12, 1, 100);
    let (whole, _) = flow.c(1, &r1);
    // split the IP payload (TCP header + data) at 64 bytes
    let ihl = 20;
    let payload = &whole[ihl..];
    let mk = |part: &[u8], off8: u16, more: bool| {
        let mut h = whole[..ihl].to_vec();
        let tl = (ihl + part.len()) as u16;
        h[2..4].copy_from_slice(&tl.to_be_bytes());
        h[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        let ff = (if more { 0x2000 } else { 0 }) | off8;
        h[6..8].copy_from_slice(&ff.to_be_bytes());
        h[10..12].copy_from_slice(&[0, 0]);
        let mut sum = 0u32;
        for i in (0..ihl).step_by(2) {
            sum += u16::from_be_bytes([h[i], h[i + 1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        h.extend_from_slice(part);
        let n = h.len() as u32;
        (h, n)
    };
    let recs = vec![
        flow.syn(true, 0),
        mk(&payload[..64], 0, true),
        mk(&payload[64..], 8, false),
    ];
    let o = run(&pcap(Link::Raw, &recs));
    assert_eq!(frames_of(&o, Direction::ToServer), vec![r1]);
    assert_eq!(o.frames[0].ctx.last_frame, 3);
}

#[test]
fn input_pairing_from_capture() {
    let flow = Flow::v4(Link::Eth, 9092);
    let (mut recs, _, _) = conversation(&flow, 1, 2);
    recs.truncate(recs.len() - 4); // drop the last response packets and the FINs
    let o = run(&pcap(Link::Eth, &recs));
    let mut p = Pairer::default();
    let mut paired = Vec::new();
    for f in o.frames.iter().filter(|f| !f.ctx.incomplete) {
        match f.ctx.direction {
            Direction::ToServer => {
                let (k, v, c) = Pairer::request_header(&f.bytes).unwrap();
                p.request(
                    f.ctx.connection,
                    c,
                    k,
                    v,
                    true,
                    f.ctx.last_frame,
                    f.ctx.time,
                );
            }
            Direction::ToClient => {
                let c = Pairer::response_correlation(&f.bytes).unwrap();
                let r = p.response(f.ctx.connection, c).unwrap();
                paired.push((r.api_key, r.api_version));
                assert!(f.ctx.time.nanos_since(&r.time) > 0);
            }
        }
    }
    assert_eq!(paired, vec![(18, 3)]);
    let left: Vec<i32> = p.unanswered().iter().map(|x| x.correlation_id).collect();
    assert_eq!(left, vec![2, 3]);
}

#[test]
fn input_garbage_never_panics() {
    let flow = Flow::v4(Link::Eth, 9092);
    let (recs, _, _) = conversation(&flow, 1, 2);
    let file = pcap(Link::Eth, &recs);
    let mut seed = 12345u64;
    for round in 0..300 {
        let mut f = file.clone();
        for _ in 0..(1 + round % 8) {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = 24 + (seed >> 33) as usize % (f.len() - 24);
            f[i] = (seed >> 17) as u8;
        }
        let cut = if round % 3 == 0 {
            f.len() - (round % 50)
        } else {
            f.len()
        };
        let _ = read_capture(
            &f[..cut],
            &CaptureOptions::default(),
            &DefaultPlausibility,
            |_| {},
        );
        let opts = CaptureOptions {
            detect: true,
            ..CaptureOptions::default()
        };
        let _ = read_capture(&f[..cut], &opts, &DefaultPlausibility, |_| {});
    }
    assert!(matches!(
        read_capture(
            &b"not a capture at all"[..],
            &CaptureOptions::default(),
            &DefaultPlausibility,
            |_| {}
        ),
        Err(CaptureError::NotACapture) | Err(CaptureError::Parse(_))
    ));
    assert!(matches!(
        read_capture(
            &b""[..],
            &CaptureOptions::default(),
            &DefaultPlausibility,
            |_| {}
        ),
        Err(CaptureError::Empty)
    ));
}

/// A reader that hands out at most `step` bytes a call, like a pipe fed slowly.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn file_headers_cut_short_and_read_a_byte_at_a_time() {
    let flow = Flow::v4(Link::Eth, 9092);
    let (recs, reqs, _) = conversation(&flow, 100, 5000);
    let ng_recs: Vec<(u32, u64, Vec<u8>)> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| (0u32, 1_700_000_000_000_000 + i as u64, r.0.clone()))
        .collect();
    let ng = pcapng(&[(Link::Eth, 6)], &ng_recs);
    for file in [pcap(Link::Eth, &recs), ng] {
        // A pipe that delivers a byte at a time still reads the header whole.
        let stats = read_capture(
            Trickle {
                data: &file,
                step: 1,
            },
            &CaptureOptions::default(),
            &DefaultPlausibility,
            |_| {},
        )
        .expect("capture reads a byte at a time");
        assert!(stats.packets > 0);
        // Cut inside the file header: said so, not "not a capture".
        for cut in [1, 3, 10, 20] {
            let r = read_capture(
                &file[..cut],
                &CaptureOptions::default(),
                &DefaultPlausibility,
                |_| {},
            );
            assert!(
                matches!(r, Err(CaptureError::HeaderCut)),
                "cut at {cut}: {r:?}"
            );
        }
    }
    let o = run(&pcap(Link::Eth, &recs));
    assert_eq!(frames_of(&o, Direction::ToServer), reqs);
    // Two bytes that start no capture format are no capture.
    assert!(matches!(
        read_capture(
            &b"ab"[..],
            &CaptureOptions::default(),
            &DefaultPlausibility,
            |_| {}
        ),
        Err(CaptureError::NotACapture)
    ));
}

// ---------- shared real captures ----------

fn shared_dir() -> Option<std::path::PathBuf> {
    match std::env::var_os("KWIRE_SHARED") {
        Some(d) => Some(std::path::PathBuf::from(d)),
        None => {
            if std::env::var("KWIRE_NO_SKIP").as_deref() == Ok("1") {
                panic!("KWIRE_SHARED not set and KWIRE_NO_SKIP=1");
            }
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                concat!(module_path!(), ": skipped: KWIRE_SHARED not set\n").as_bytes(),
            );
            None
        }
    }
}

fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("pcap" | "pcapng")
            ) {
                out.push(p);
            }
        }
    }
}

fn shared_opts() -> CaptureOptions {
    CaptureOptions {
        ports: vec![9092, 9093, 36333],
        ..CaptureOptions::default()
    }
}

#[test]
fn input_shared_captures_read_to_end() {
    let Some(dir) = shared_dir() else { return };
    let mut files = Vec::new();
    walk(&dir.join("captures"), &mut files);
    files.sort();
    assert!(!files.is_empty(), "no captures under {}", dir.display());
    for p in files {
        let f = std::fs::File::open(&p).unwrap();
        let mut n = 0u64;
        let stats = read_capture(
            std::io::BufReader::new(f),
            &shared_opts(),
            &DefaultPlausibility,
            |e| {
                if let Event::Frame(_) = e {
                    n += 1
                }
            },
        )
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(!stats.file_truncated, "{}", p.display());
        assert!(stats.packets > 0 && n > 0, "{}: no frames", p.display());
    }
}

#[test]
fn input_shared_lab_frames_match_hex() {
    let Some(dir) = shared_dir() else { return };
    let lab = dir.join("captures/lab");
    let mut checked = 0;
    for ext in ["pcapng", "pcap"] {
        let mut names: Vec<_> = std::fs::read_dir(&lab)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().and_then(|x| x.to_str()) == Some(ext))
            .collect();
        names.sort();
        for p in names {
            let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
            let hexf = lab.join("hex").join(format!("{stem}.pdus.txt"));
            let Ok(text) = std::fs::read_to_string(&hexf) else {
                continue;
            };
            let mut want: Vec<String> = Vec::new();
            for l in text.lines() {
                if l.starts_with('#') || l.trim().is_empty() {
                    continue;
                }
                let parts: Vec<&str> = l.split_whitespace().collect();
                assert_eq!(parts.len(), 4, "{l}");
                want.push(format!(
                    "{} {} {} {}",
                    parts[0], parts[1], parts[2], parts[3]
                ));
            }
            let f = std::fs::File::open(&p).unwrap();
            let mut got: Vec<String> = Vec::new();
            let opts = CaptureOptions {
                ports: vec![9092, 9093],
                ..CaptureOptions::default()
            };
            read_capture(f, &opts, &DefaultPlausibility, |e| {
                if let Event::Frame(fr) = e {
                    assert!(!fr.ctx.incomplete, "{stem}: incomplete frame");
                    let hex: String = fr.bytes.iter().map(|b| format!("{b:02x}")).collect();
                    got.push(format!(
                        "{} {} {} {}",
                        fr.ctx.direction.arrow(),
                        fr.ctx.connection - 1,
                        fr.ctx.stream_offset,
                        hex
                    ));
                }
            })
            .unwrap();
            // compare in order per stream and direction
            let key = |s: &String| {
                let v: Vec<&str> = s.splitn(3, ' ').collect();
                (v[1].parse::<u32>().unwrap(), v[0].to_string())
            };
            let mut w = want.clone();
            let mut g = got.clone();
            w.sort_by_key(key);
            g.sort_by_key(key);
            assert_eq!(g.len(), w.len(), "{stem}.{ext}: frame count");
            for (a, b) in g.iter().zip(w.iter()) {
                assert_eq!(a, b, "{stem}.{ext}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} lab files checked");
}

/// Notices of `o` whose message contains `s`.
fn notices_with<'a>(o: &'a Out, s: &str) -> Vec<&'a Notice> {
    o.notices.iter().filter(|n| n.message.contains(s)).collect()
}

#[test]
fn tls_capture_starting_after_the_handshake() {
    // application data records only: no ClientHello, no client random
    let flow = Flow::v4(Link::Eth, 9092);
    let rec = |n: usize| cat(&[&[23, 3, 3, 0, n as u8], &vec![0xa5; n]]);
    let recs = vec![
        flow.c(100, &rec(40)),
        flow.s(200, &rec(30)),
        flow.c(145, &rec(20)),
    ];
    let o = run(&pcap(Link::Eth, &recs));
    assert!(o.frames.is_empty());
    let n = notices_with(&o, "no ClientHello");
    assert_eq!(n.len(), 1, "{:?}", o.notices);
    assert!(
        n[0].message.contains("the keys cannot be matched"),
        "{}",
        n[0]
    );
    assert!(n[0].message.contains("3 records (105 bytes)"), "{}", n[0]);
    assert_eq!(o.stats.tls.len(), 1);
    assert_eq!(o.stats.tls[0].decrypted(), "no");
}

#[test]
fn tls_connection_that_stops_after_its_client_hello() {
    // a ClientHello and nothing after it: no record was encrypted, so nothing was
    // decrypted, and nothing "stayed encrypted" either
    let ch_body = cat(&[&[3, 3], &[7u8; 32], &[0, 0, 2, 0x13, 0x01, 1, 0, 0, 0]]);
    let flow = Flow::v4(Link::Eth, 9092);
    let recs = vec![
        flow.syn(true, 0),
        flow.syn(false, 0),
        flow.c(1, &handshake_record(1, &ch_body)),
    ];
    let o = run(&pcap(Link::Eth, &recs));
    assert!(o.frames.is_empty());
    let n: Vec<_> = o
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::Tls)
        .collect();
    assert_eq!(n.len(), 1, "{:?}", o.notices);
    assert!(
        n[0].message.contains("no encrypted record was seen")
            && n[0].message.contains("no ServerHello seen"),
        "{}",
        n[0]
    );
    assert!(!n[0].message.contains("stayed encrypted"), "{}", n[0]);
    assert_eq!(o.stats.tls.len(), 1);
    assert_eq!(o.stats.tls[0].encrypted_records, 0);
    assert_eq!(o.stats.tls[0].decrypted(), "none");
}

#[test]
fn tls_truncated_and_oversize_records() {
    let flow = Flow::v4(Link::Eth, 9092);
    // a record that says 100 bytes, of which 10 are there when the capture ends
    let cut = cat(&[&[23, 3, 3, 0, 100], &[1u8; 10]]);
    let o = run(&pcap(Link::Eth, &[flow.c(1, &cut)]));
    assert_eq!(
        notices_with(&o, "stream ended inside a TLS record (15 bytes present)").len(),
        1,
        "{:?}",
        o.notices
    );
    // a record longer than 2^14 + 2048
    let big = [23, 3, 3, 0x48, 0x01, 0, 0, 0];
    let o = run(&pcap(Link::Eth, &[flow.c(1, &big)]));
    let n = notices_with(&o, "longer than the TLS maximum");
    assert_eq!(n.len(), 1, "{:?}", o.notices);
    assert_eq!(n[0].offset, Some(0));
}

#[test]
fn tls_on_a_detected_port_is_told_from_kafka() {
    // --detect: a TLS connection on a port that is not a broker port is TLS, not Kafka
    let flow = Flow::v4(Link::Eth, 19093);
    let hello = [0x16, 0x03, 0x01, 0x00, 0x05, 1, 0, 0, 1, 0];
    let recs = vec![flow.syn(true, 0), flow.syn(false, 0), flow.c(1, &hello)];
    let opts = CaptureOptions {
        detect: true,
        ..CaptureOptions::default()
    };
    let o = run_opts(&pcap(Link::Eth, &recs), &opts);
    assert!(o.frames.is_empty());
    assert_eq!(
        notices_with(&o, "no encrypted record was seen").len(),
        1,
        "{:?}",
        o.notices
    );
    assert_eq!(o.stats.connections, 1);
}

#[test]
fn tls_key_log_in_a_decryption_secrets_block_is_read() {
    // a pcapng with a DSB of a bad line: the line is reported with its block and number
    let mut f = Vec::new();
    let shb: [u8; 28] = [
        0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
    ];
    f.extend_from_slice(&shb);
    let text = b"# keys\nNOT_A_LABEL 00 11\n";
    let pad = (4 - text.len() % 4) % 4;
    let len = (20 + text.len() + pad) as u32;
    f.extend_from_slice(&0x0000_000au32.to_le_bytes());
    f.extend_from_slice(&len.to_le_bytes());
    f.extend_from_slice(&0x544c_534bu32.to_le_bytes());
    f.extend_from_slice(&(text.len() as u32).to_le_bytes());
    f.extend_from_slice(text);
    f.extend(std::iter::repeat_n(0u8, pad));
    f.extend_from_slice(&len.to_le_bytes());
    let o = run(&f);
    let n = notices_with(&o, "Decryption Secrets Block 1:2: unknown label");
    assert_eq!(n.len(), 1, "{:?}", o.notices);
}

/// A TLS 1.3 record sealed with AES-128-GCM under `secret` (the aes-gcm crate; the key
/// schedule's HKDF-Expand-Label from kwire's TLS module), as a sender would write it.
fn seal13(secret: &[u8], seq: u64, inner: &[u8], ctype: u8) -> Vec<u8> {
    use aes_gcm::aead::{AeadInPlace, KeyInit};
    let key = crate::input::tls::decrypt::expand_label(false, secret, "key", 16).unwrap();
    let iv = crate::input::tls::decrypt::expand_label(false, secret, "iv", 12).unwrap();
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&iv);
    for (a, b) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
        *a ^= b;
    }
    let mut pt = inner.to_vec();
    pt.push(ctype);
    let len = pt.len() + 16;
    let hdr = [23, 3, 3, (len >> 8) as u8, len as u8];
    aes_gcm::Aes128Gcm::new_from_slice(&key)
        .unwrap()
        .encrypt_in_place(aes_gcm::Nonce::from_slice(&nonce), &hdr, &mut pt)
        .unwrap();
    cat(&[&hdr, &pt])
}

fn handshake_record(msg_type: u8, body: &[u8]) -> Vec<u8> {
    let n = body.len();
    let msg = cat(&[&[msg_type, 0, (n >> 8) as u8, n as u8], body]);
    let m = msg.len();
    cat(&[&[22, 3, 3, (m >> 8) as u8, m as u8], &msg])
}

#[test]
fn tls13_records_split_and_joined_frames_across_records_and_a_key_update() {
    let random = [7u8; 32];
    let (chs, shs, cts, sts) = ([1u8; 32], [2u8; 32], [3u8; 32], [4u8; 32]);
    let hexs = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let r = hexs(&random);
    let mut keys = crate::input::tls::KeyLog::new();
    let text = format!(
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET {r} {}\nSERVER_HANDSHAKE_TRAFFIC_SECRET {r} {}\nCLIENT_TRAFFIC_SECRET_0 {r} {}\nSERVER_TRAFFIC_SECRET_0 {r} {}\n",
        hexs(&chs), hexs(&shs), hexs(&cts), hexs(&sts)
    );
    assert!(keys.add_text(text.as_bytes(), "t").is_empty());
    let sni = b"broker.test";
    let sni_ext = cat(&[
        &[0, 0],
        &((sni.len() + 5) as u16).to_be_bytes(),
        &((sni.len() + 3) as u16).to_be_bytes(),
        &[0],
        &(sni.len() as u16).to_be_bytes(),
        sni,
    ]);
    let ch_body = cat(&[
        &[3, 3],
        &random,
        &[0, 0, 2, 0x13, 0x01, 1, 0],
        &(sni_ext.len() as u16).to_be_bytes(),
        &sni_ext,
    ]);
    let sh_body = cat(&[
        &[3, 3],
        &[9u8; 32],
        &[0, 0x13, 0x01, 0, 0, 6, 0, 43, 0, 2, 3, 4],
    ]);
    let finished = cat(&[&[20, 0, 0, 32], &[0u8; 32]]);
    // a 70-byte request whose bytes go in two records, and a second request in a third
    let req = |corr: u8| {
        let mut b = req(18, 3, corr as i32, 0);
        b.extend_from_slice(&[0u8; 56]);
        let n = (b.len() - 4) as i32;
        b[..4].copy_from_slice(&n.to_be_bytes());
        b
    };
    let (r1, r2) = (req(1), req(2));
    let c_app1 = seal13(&cts, 0, &r1[..30], 23);
    let c_app2 = seal13(&cts, 1, &r1[30..], 23);
    let c_app3 = seal13(&cts, 2, &r2, 23);
    let key_update = seal13(&cts, 3, &[24, 0, 0, 1, 0], 22);
    let next = crate::input::tls::decrypt::expand_label(false, &cts, "traffic upd", 32).unwrap();
    let r3 = req(3);
    let c_app4 = seal13(&next, 0, &r3, 23);
    // a response: size 10, correlation_id 1, six more bytes
    let resp = vec![0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    let s_app = seal13(&sts, 0, &resp, 23);
    let flow = Flow::v4(Link::Eth, 9093);
    let c_hs = cat(&[&handshake_record(1, &ch_body)]);
    let c_fin = seal13(&chs, 0, &finished, 22);
    let s_first = cat(&[
        &handshake_record(2, &sh_body),
        &[20, 3, 3, 0, 1, 1],
        &seal13(&shs, 0, &finished, 22),
    ]);
    // two records and a half in one segment, the rest in the next
    let joined = cat(&[&c_fin, &c_app1, &c_app2, &c_app3[..10]]);
    let mut seq_c = 1u32;
    let mut seq_s = 1u32;
    let mut recs = vec![flow.syn(true, 0), flow.syn(false, 0)];
    for (to_server, b) in [
        (true, c_hs.clone()),
        (false, s_first.clone()),
        (true, joined.clone()),
        (true, c_app3[10..].to_vec()),
        (false, s_app.clone()),
        (true, cat(&[&key_update, &c_app4])),
    ] {
        if to_server {
            recs.push(flow.c(seq_c, &b));
            seq_c += b.len() as u32;
        } else {
            recs.push(flow.s(seq_s, &b));
            seq_s += b.len() as u32;
        }
    }
    let opts = CaptureOptions {
        ports: vec![9093],
        tls_keys: std::sync::Arc::new(keys),
        ..CaptureOptions::default()
    };
    let o = run_opts(&pcap(Link::Eth, &recs), &opts);
    let reqs = frames_of(&o, Direction::ToServer);
    assert_eq!(
        reqs,
        vec![r1.clone(), r2.clone(), r3.clone()],
        "{:?}",
        o.notices
    );
    assert_eq!(frames_of(&o, Direction::ToClient), vec![resp.clone()]);
    let f0 = &o.frames[0];
    let t = f0.ctx.tls.as_ref().expect("from TLS");
    assert_eq!(t.session.version, "TLS 1.3");
    assert_eq!(t.session.cipher_suite, "TLS_AES_128_GCM_SHA256");
    assert_eq!(t.session.sni.as_deref(), Some("broker.test"));
    // client records: 1 ClientHello, 2 Finished, 3 and 4 the first request
    assert_eq!(t.records, vec![3, 4]);
    assert_eq!(f0.ctx.stream_offset, 0);
    assert_eq!(o.frames[1].ctx.tls.as_ref().unwrap().records, vec![5]);
    assert_eq!(notices_with(&o, "KeyUpdate").len(), 1, "{:?}", o.notices);
    assert_eq!(o.stats.tls.len(), 1);
    assert_eq!(o.stats.tls[0].decrypted(), "yes", "{:?}", o.stats.tls[0]);
    assert!(
        o.notices.iter().all(|n| n.kind != NoticeKind::Tls),
        "{:?}",
        o.notices
    );
}

// Lost segments and the in-flight budget (issue 25): captures written with
// `pcap_out::TcpFlow`, whose segments carry real ACK numbers.

use super::pcap_out::{PcapWriter, TcpFlow, MSS};
use std::net::SocketAddrV4;

fn lossy_flow(i: u16) -> TcpFlow {
    TcpFlow::new(
        SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, 1), 30000 + i),
        SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, 2), 9092),
        [7000 * u32::from(i) + 11, 900_000],
    )
}

/// Where each of connection 1's frames comes out among all frames (by correlation_id).
fn order_of(o: &Out) -> Vec<(u32, Direction, Option<i32>, bool)> {
    o.frames
        .iter()
        .map(|f| {
            let corr = match f.ctx.direction {
                Direction::ToServer => f.bytes.get(8..12),
                Direction::ToClient => f.bytes.get(4..8),
            }
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            (f.ctx.connection, f.ctx.direction, corr, f.ctx.incomplete)
        })
        .collect()
}

/// A request that lost two segments in its middle, answered (the response ACKs the
/// whole request), then two more exchanges: the request comes out incomplete at the
/// response, before it; framing resumes at the next request; every frame comes out in
/// order, and the gap notice names the lost range.
#[test]
fn input_lost_segment_ends_the_frame_not_the_connection() {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut f = lossy_flow(1);
    f.open(&mut w, 0).unwrap();
    let big = req(0, 3, 1, 40 * MSS);
    f.send_losing(&mut w, true, 1000, &big, 10 * MSS..12 * MSS, false)
        .unwrap();
    f.send(&mut w, false, 5000, &resp(1, b"produced")).unwrap();
    for corr in [2, 3] {
        f.send(&mut w, true, 6000 + corr as u64 * 100, &req(18, 0, corr, 4))
            .unwrap();
        f.send(&mut w, false, 6050 + corr as u64 * 100, &resp(corr, b"ok"))
            .unwrap();
    }
    let o = run(&w.into_inner());
    let d = (Direction::ToServer, Direction::ToClient);
    assert_eq!(
        order_of(&o),
        vec![
            (1, d.0, Some(1), true),
            (1, d.1, Some(1), false),
            (1, d.0, Some(2), false),
            (1, d.1, Some(2), false),
            (1, d.0, Some(3), false),
            (1, d.1, Some(3), false),
        ]
    );
    assert_eq!(o.frames[0].bytes, big[..10 * MSS]);
    let gap = o
        .notices
        .iter()
        .find(|n| n.kind == NoticeKind::Gap)
        .expect("a gap notice");
    assert_eq!(
        (gap.offset, gap.bytes),
        (Some(10 * MSS as u64), Some(2 * MSS as u64))
    );
    assert!(
        gap.message
            .contains(&format!("stream bytes {}..{}", 10 * MSS, 12 * MSS)),
        "{}",
        gap.message
    );
}

/// A connection that lost a segment and is closed (both FINs, or an RST) gives up what
/// it held at once: its incomplete frame comes out before the next connection's frames,
/// not at the end of the capture. So does one that stays silent past the idle timeout.
#[test]
fn input_fin_rst_and_idle_timeout_free_a_lossy_connection() {
    for how in ["fin", "rst", "idle"] {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let mut a = lossy_flow(1);
        a.open(&mut w, 0).unwrap();
        // No ACK covers the lost bytes: only the end of the connection gives them up.
        a.send_losing(
            &mut w,
            true,
            1000,
            &req(0, 3, 1, 20 * MSS),
            5 * MSS..6 * MSS,
            false,
        )
        .unwrap();
        let later = match how {
            "fin" => {
                a.close(&mut w, 2000).unwrap();
                3000
            }
            "rst" => {
                a.reset(&mut w, true, 2000).unwrap();
                3000
            }
            _ => 700_000_000, // 700 s later
        };
        let mut b = lossy_flow(2);
        b.open(&mut w, later).unwrap();
        b.send(&mut w, true, later + 1000, &req(18, 0, 1, 4))
            .unwrap();
        b.send(&mut w, false, later + 2000, &resp(1, b"ok"))
            .unwrap();
        b.send(&mut w, true, later + 3000, &req(18, 0, 2, 4))
            .unwrap();
        let o = run(&w.into_inner());
        let conns: Vec<(u32, bool)> = o
            .frames
            .iter()
            .map(|f| (f.ctx.connection, f.ctx.incomplete))
            .collect();
        assert_eq!(
            conns,
            vec![(1, true), (2, false), (2, false), (2, false)],
            "{how}: {:?}",
            o.notices
        );
        if how == "idle" {
            assert!(
                o.notices.iter().any(|n| n.kind == NoticeKind::Dropped
                    && n.message.contains("idle for more than 600 s")),
                "{:?}",
                o.notices
            );
        }
    }
}

/// Many connections each holding half of a large frame: past the in-flight budget the
/// oldest partial frames are emitted incomplete (with the bytes they have) and the rest
/// of each skipped; a notice per frame and a closing notice count them, and what is
/// held never passes the budget by more than one frame.
#[test]
fn input_budget_sheds_the_oldest_partial_frames() {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let frame = req(0, 3, 1, 200 * MSS);
    let half = &frame[..100 * MSS];
    let n = 40u16;
    let mut t = 0;
    for i in 0..n {
        let mut f = lossy_flow(i + 1);
        f.open(&mut w, t).unwrap();
        f.send(&mut w, true, t + 1000, half).unwrap();
        t += 10_000;
    }
    let opts = CaptureOptions {
        max_in_flight: 1 << 20,
        ..CaptureOptions::default()
    };
    let o = run_opts(&w.into_inner(), &opts);
    // Every connection's frame comes out incomplete with its first bytes.
    assert_eq!(o.frames.len(), n as usize);
    assert!(o
        .frames
        .iter()
        .all(|f| f.ctx.incomplete && half.starts_with(&f.bytes)));
    let cut = o
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::Dropped && n.message.contains("oldest partial frame"))
        .count();
    // 146 KB a frame (capacity 256 KiB): four fit in 1 MiB, the others are cut in turn.
    assert!(cut >= n as usize - 5 && cut < n as usize, "{cut} cut");
    // They come out oldest first.
    let conns: Vec<u32> = o.frames.iter().map(|f| f.ctx.connection).collect();
    let mut sorted = conns.clone();
    sorted.sort_unstable();
    assert_eq!(conns, sorted);
    let last = o.notices.last().unwrap();
    assert_eq!(last.kind, NoticeKind::Budget);
    assert!(
        last.message
            .contains(&format!("{cut} partial frames shown incomplete")),
        "{}",
        last.message
    );
}

/// The message index ([`crate::index`]) on a frame whose segment came in two IP
/// fragments: its records alone do not give it (fragments are reassembled across
/// records), so the index reads it again from the window before it where the whole pass
/// keeps fragments, and it equals the input layer's. With the first fragment 3,000
/// records before the second (kept by the whole pass, which drops old fragments only
/// when a fragment comes at a multiple of 256 records), past that window, the frame is
/// an error, never other bytes; the frame after it still reads.
#[test]
fn index_frame_from_ip_fragments() {
    use std::io::Write;
    let flow = Flow::v4(Link::Raw, 9092);
    let r1 = req(3, 12, 1, 100);
    let (whole, _) = flow.c(1, &r1);
    let ihl = 20;
    let payload = &whole[ihl..];
    let mk = |part: &[u8], off8: u16, more: bool| {
        let mut h = whole[..ihl].to_vec();
        let tl = (ihl + part.len()) as u16;
        h[2..4].copy_from_slice(&tl.to_be_bytes());
        h[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        let ff = (if more { 0x2000 } else { 0 }) | off8;
        h[6..8].copy_from_slice(&ff.to_be_bytes());
        h[10..12].copy_from_slice(&[0, 0]);
        let mut sum = 0u32;
        for i in (0..ihl).step_by(2) {
            sum += u16::from_be_bytes([h[i], h[i + 1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        h.extend_from_slice(part);
        let n = h.len() as u32;
        (h, n)
    };
    let (r2, _) = flow.c(1 + r1.len() as u32, &req(18, 3, 2, 10));
    // Another connection's bare segments between the fragments (not a Kafka port).
    let other = Flow::v4(Link::Raw, 9999);
    for filler in [0, 2000, 3000] {
        let mut recs = vec![flow.syn(true, 0), mk(&payload[..64], 0, true)];
        recs.extend((0..filler).map(|_| other.c(1, b"")));
        recs.push(mk(&payload[64..], 8, false));
        recs.push((r2.clone(), r2.len() as u32));
        let bytes = pcap(Link::Raw, &recs);
        let o = run(&bytes);
        assert_eq!(o.frames.len(), 2);
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&bytes).unwrap();
        let cap = crate::index::Capture::open(f.path()).unwrap();
        assert_eq!(cap.len(), 2);
        for (i, want) in o.frames.iter().enumerate() {
            if filler == 3000 && i == 0 {
                let e = cap.frame(i).unwrap_err();
                assert!(
                    matches!(e, crate::index::IndexError::Reread { index: 0, .. }),
                    "{e}"
                );
                continue;
            }
            let got = cap.frame(i).unwrap();
            assert_eq!(got.bytes, want.bytes, "frame {i} after {filler}");
            assert_eq!(got.ctx.first_frame, want.ctx.first_frame);
            assert_eq!(got.ctx.src, want.ctx.src);
        }
    }
}

/// A request whose last segment the capture lost, then a pause: the server's bare ACK
/// (which covers the lost bytes) is not enough alone (delayed ACKs in a transfer), but
/// its response's ACK shows the request incomplete at once, before the response, not
/// when the client's next data reveals the hole; the next exchange is framed as before.
#[test]
fn loss_at_the_end_of_a_frame_is_known_at_the_ack() {
    use crate::input::pcap_out::{PcapWriter, TcpFlow, MSS};
    use std::net::SocketAddrV4;
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut f = TcpFlow::new(
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092),
        [1000, 5000],
    );
    f.open(&mut w, 0).unwrap();
    let r1 = req(18, 3, 1, 5000);
    let segments = r1.len().div_ceil(MSS);
    let last = (segments - 1) * MSS;
    f.send_losing(&mut w, true, 1000, &r1, last..r1.len(), false)
        .unwrap();
    // Records: the handshake (3), the segments kept, the server's bare ACK, then its
    // response.
    let ack_record = 3 + (segments - 1) as u64 + 2;
    f.ack(&mut w, false, 2000).unwrap();
    let (p1, r2, p2) = (resp(1, &[0; 6]), req(18, 3, 2, 10), resp(2, &[0; 6]));
    f.send(&mut w, false, 3000, &p1).unwrap();
    f.send(&mut w, true, 4000, &r2).unwrap();
    f.send(&mut w, false, 5000, &p2).unwrap();
    f.close(&mut w, 6000).unwrap();
    let mut events = Vec::new();
    read_capture(
        &w.into_inner()[..],
        &CaptureOptions::default(),
        &DefaultPlausibility,
        |e| events.push(e),
    )
    .unwrap();
    let frames: Vec<&Frame> = events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) => Some(f),
            Event::Notice(_) => None,
        })
        .collect();
    let got: Vec<(&[u8], bool)> = frames
        .iter()
        .map(|f| (&f.bytes[..], f.ctx.incomplete))
        .collect();
    assert_eq!(
        got,
        vec![
            (&r1[..last], true),
            (&p1[..], false),
            (&r2[..], false),
            (&p2[..], false)
        ]
    );
    let gap = events
        .iter()
        .find_map(|e| match e {
            Event::Notice(n) if n.kind == NoticeKind::Gap => Some(n),
            _ => None,
        })
        .expect("a gap notice");
    assert_eq!(gap.frame, Some(ack_record), "{gap}");
    assert_eq!(
        (gap.offset, gap.bytes),
        (Some(last as u64), Some((r1.len() - last) as u64)),
        "{gap}"
    );
}
