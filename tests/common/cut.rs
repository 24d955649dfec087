//! Captures cut in the middle, made in memory from the repository's own captures: the
//! records of a pcap/pcapng file (pcap_parser) fed from a start point, or with one record
//! left out, through kwire's input layer and session — what `editcap -r FILE OUT A-B` and
//! a lost packet give, frames renumbered from 1 as editcap does.

#![allow(dead_code)]

use kwire::decode::DecodeOptions;
use kwire::input::{CaptureOptions, Event, Extractor, Timestamp};
use kwire::schema::Schema;
use kwire::session::{SchemaPlausibility, Session};
use kwire::tree::{Buffers, Direction};
use pcap_parser::{create_reader, Block, PcapBlockOwned, PcapError};
use std::path::{Path, PathBuf};

/// One captured record.
#[derive(Clone)]
pub struct Rec {
    pub linktype: i32,
    pub data: Vec<u8>,
    pub origlen: u32,
    pub time: Timestamp,
}

/// The records of a pcap or pcapng file (times in the file's own units, read the same
/// way for a whole capture and its cuts).
pub fn records(path: &Path) -> Vec<Rec> {
    let f = std::fs::File::open(path).unwrap();
    let mut rd = create_reader(1 << 20, f).unwrap();
    let mut out = Vec::new();
    let mut legacy_link = 1;
    let mut links: Vec<i32> = Vec::new();
    loop {
        match rd.next() {
            Ok((off, b)) => {
                match b {
                    PcapBlockOwned::LegacyHeader(h) => legacy_link = h.network.0,
                    PcapBlockOwned::Legacy(b) => out.push(Rec {
                        linktype: legacy_link,
                        data: b.data[..(b.caplen as usize).min(b.data.len())].to_vec(),
                        origlen: b.origlen,
                        time: Timestamp {
                            secs: b.ts_sec as i64,
                            nanos: b.ts_usec,
                        },
                    }),
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => links.clear(),
                    PcapBlockOwned::NG(Block::InterfaceDescription(i)) => links.push(i.linktype.0),
                    PcapBlockOwned::NG(Block::EnhancedPacket(e)) => {
                        let units = ((e.ts_high as u64) << 32) | e.ts_low as u64;
                        out.push(Rec {
                            linktype: links.get(e.if_id as usize).copied().unwrap_or(-1),
                            data: e.data[..(e.caplen as usize).min(e.data.len())].to_vec(),
                            origlen: e.origlen,
                            time: Timestamp {
                                secs: (units / 1_000_000_000) as i64,
                                nanos: (units % 1_000_000_000) as u32,
                            },
                        })
                    }
                    _ => {}
                }
                rd.consume(off);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => rd.refill().unwrap(),
            Err(e) => panic!("{}: {e:?}", path.display()),
        }
    }
    out
}

/// What a message is matched by between a capture and its cut: endpoints, direction,
/// correlation_id and the time of its last packet.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id {
    pub src: String,
    pub dst: String,
    pub request: bool,
    pub corr: Option<i32>,
    pub time: (i64, u32),
}

/// One decoded message of a capture, as the tests look at it.
#[derive(Clone, Debug)]
pub struct Msg {
    pub id: Id,
    /// The first and last record numbers (1-based, in the records fed).
    pub frames: (u64, u64),
    pub incomplete: bool,
    pub api_key: i16,
    pub api_version: i16,
    /// Whether a response found its request (latency set).
    pub paired: bool,
    /// The values JSON of the message (`kwire::values`), to compare decodes.
    pub values: String,
    /// `m.guessed`: the decode is a ranked guess.
    pub guessed: bool,
    /// The frame's bytes.
    pub bytes: Vec<u8>,
    /// The connection id.
    pub connection: u32,
}

/// A decoded capture: its messages in output order, the requests the session still
/// waits for at the end (`(connection, correlation_id, record of the request)`), and the
/// session's count of responses to requests sent before the capture began.
pub struct Decoded {
    pub msgs: Vec<Msg>,
    pub unanswered: Vec<(u32, i32, u64)>,
    pub answers_before_start: u64,
}

/// Decodes records `recs` as `kwire read` does (embedded schema, port 9092), in output
/// order.
pub fn decode(schema: &Schema, recs: &[&Rec]) -> Decoded {
    let opts = CaptureOptions::default();
    let plaus = SchemaPlausibility(schema);
    let dopts = DecodeOptions::default();
    let mut session = Session::new(schema, &dopts);
    let mut out = Vec::new();
    let mut on = |ev: Event| {
        if let Event::Frame(f) = ev {
            let arena = Buffers::new();
            let (m, ctx) = session.decode(&f, &arena);
            out.push(Msg {
                id: Id {
                    src: f.ctx.src.to_string(),
                    dst: f.ctx.dst.to_string(),
                    request: m.direction == Direction::Request,
                    corr: m.correlation_id,
                    time: (f.ctx.time.secs, f.ctx.time.nanos),
                },
                frames: (f.ctx.first_frame, f.ctx.last_frame),
                incomplete: f.ctx.incomplete,
                api_key: m.api_key,
                api_version: m.api_version,
                paired: ctx.latency.is_some(),
                values: kwire::values::to_values(&m).to_string(),
                guessed: m.guess.is_some(),
                bytes: f.bytes.clone(),
                connection: f.ctx.connection,
            });
        }
    };
    let mut ex = Extractor::new(&opts, &plaus);
    for r in recs {
        ex.packet(r.linktype, &r.data, r.origlen, r.time, &mut on);
    }
    ex.finish(&mut on);
    let unanswered = session
        .pairer
        .unanswered()
        .iter()
        .map(|p| (p.connection, p.correlation_id, p.request.frame))
        .collect();
    Decoded {
        msgs: out,
        unanswered,
        answers_before_start: session.answers_before_start,
    }
}

/// Every capture in the repository (`captures/*.pcap`, `captures/lab/*.pcap*`).
pub fn repo_captures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut v = Vec::new();
    for d in [root.clone(), root.join("lab")] {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("pcap" | "pcapng")
            ) {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

/// [`repo_captures`] with their records, a pcap and a pcapng of the same packets once.
pub fn distinct_captures() -> Vec<(String, Vec<Rec>)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for p in repo_captures() {
        let recs = records(&p);
        let key: Vec<Vec<u8>> = recs.iter().take(50).map(|r| r.data.clone()).collect();
        if seen.insert((recs.len(), key)) {
            out.push((p.file_name().unwrap().to_string_lossy().to_string(), recs));
        }
    }
    out
}
