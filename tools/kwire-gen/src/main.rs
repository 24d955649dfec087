//! `kwire-gen`: writes large, realistic Kafka captures for benchmarks.
//!
//! ```sh
//! kwire-gen --kind chatter --size 100M --seed 1 -o target/bench/chatter-100M.pcap
//! kwire-gen --kind bulk --size 1G -o target/bench/bulk-1G.pcap
//! ```
//!
//! A capture is classic pcap (Ethernet/IPv4/TCP) written with kwire's own
//! [`PcapWriter`] and [`TcpFlow`] (segments of at most 1460 bytes); every Kafka frame is
//! built by kwire's encoder from the values shape ([`kwire::encode::encode`]), record
//! batches by [`encode_records`]. Clients on many connections talk to three brokers;
//! each request is answered after a realistic latency, and the packets of all
//! connections are interleaved in time order. The same seed gives the same file, byte
//! for byte. Output is streamed: what is held in memory is the in-flight exchanges and
//! a few recent batches per partition, whatever the size asked for.
//!
//! Kinds (see `docs/benchmarks.md`):
//! - `chatter`: consumer-group members (ApiVersions, Metadata, FindCoordinator,
//!   JoinGroup, SyncGroup, OffsetFetch, then Fetch long polls, Heartbeats, OffsetCommits,
//!   Metadata refreshes, LeaveGroup) and small producers: most frames under 1 KB.
//! - `bulk`: producers sending batches of 100-500 records (about half compressed with
//!   gzip, snappy, lz4 or zstd) and consumers fetching those batches back: frames of
//!   64 KB to 1 MB, with a little group chatter around them.
//! - `dense-zstd`, `dense-fetch`, `dense-threads`: the hostile inputs of issue 12 at full
//!   size, small captures of millions of tiny records (see `hostile.rs`):
//!   `kwire-gen --kind dense-zstd -o dense.pcap --frames-out dense.bin`.
//! - `lossy-produce`, `half-frames`: the lossy inputs of issue 25, many connections that
//!   lose segments at a chosen place (`--lose START:LEN`, `--delayed-acks`) or hold half
//!   a large frame at the end (see `lossy.rs`):
//!   `kwire-gen --kind lossy-produce --connections 300 -o lossy.pcap`.
//!
//! API versions are those of a Kafka 2.x/3.x Java client that tshark 4.0 also dissects
//! (Produce v8, Fetch v11, Metadata v9, ...), so that both tools do their full work.

mod hostile;
mod lossy;

use clap::{Parser, ValueEnum};
use kwire::encode::records::encode_records;
use kwire::encode::{encode, to_hex};
use kwire::input::pcap_out::{PcapWriter, TcpFlow};
use kwire::schema::Schema;
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddrV4;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kind {
    /// Small frames: group coordination, metadata, heartbeats, commits, small produce
    /// and fetch.
    Chatter,
    /// Large frames: batches of 100-500 records produced and fetched.
    Bulk,
    /// Hostile: one zstd batch inflating to `--size` (default 60M) of 7-byte records.
    DenseZstd,
    /// Hostile: a Fetch response of one uncompressed batch of `--size` (default 4M) of
    /// 7-byte records.
    DenseFetch,
    /// Hostile: `--batches` (default 8) `dense-zstd` batches, each in a worker job of
    /// its own.
    DenseThreads,
    /// Lossy: `--connections` (default 100) connections, each losing the segments over
    /// `--lose` inside a Produce of `--size` (default 1M), then two more exchanges.
    LossyProduce,
    /// Lossy: `--connections` (default 2000) connections each holding half a Produce of
    /// `--size` (default 1M) at the end of the capture.
    HalfFrames,
}

impl Kind {
    /// The lossy input this kind names, if it is one.
    fn lossy(self) -> Option<lossy::Lossy> {
        match self {
            Kind::LossyProduce => Some(lossy::Lossy::Produce),
            Kind::HalfFrames => Some(lossy::Lossy::HalfFrames),
            _ => None,
        }
    }

    /// The hostile input this kind names, if it is one.
    fn hostile(self) -> Option<hostile::Hostile> {
        match self {
            Kind::Chatter | Kind::Bulk | Kind::LossyProduce | Kind::HalfFrames => None,
            Kind::DenseZstd => Some(hostile::Hostile::ZstdBatch),
            Kind::DenseFetch => Some(hostile::Hostile::FetchResponse),
            Kind::DenseThreads => Some(hostile::Hostile::ManyJobs),
        }
    }
}

/// Writes a large, realistic Kafka capture (pcap) for benchmarks.
#[derive(Parser, Debug)]
#[command(name = "kwire-gen", version)]
struct Args {
    /// What the traffic looks like.
    #[arg(long, value_enum, default_value_t = Kind::Chatter)]
    kind: Kind,
    /// Size of the capture file to write (bytes; suffixes K, M, G are powers of 1024;
    /// default 100M); for the dense kinds, the bytes of tiny records in each dense batch.
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Seed of the pseudo-random choices: the same seed gives the same file.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Concurrent client connections (default: 64 for chatter, 12 for bulk).
    #[arg(long)]
    connections: Option<usize>,
    /// The file to write (default: target/bench/KIND-SIZE.pcap).
    #[arg(short, long)]
    out: Option<PathBuf>,
    /// dense-threads: how many dense batches, each in a job of its own (default 8).
    #[arg(long, default_value_t = hostile::BOMBS)]
    batches: usize,
    /// Dense kinds: also write the dense frame alone here (size-prefixed, for `kwire
    /// decode --raw`).
    #[arg(long)]
    frames_out: Option<PathBuf>,
    /// lossy-produce: the bytes of each Produce frame the capture loses (the segments
    /// overlapping them), START:LEN.
    #[arg(long, value_parser = lossy::parse_range, default_value = "500000:16384")]
    lose: std::ops::Range<usize>,
    /// lossy-produce: the broker acknowledges every second segment (its ACKs cover the
    /// lost bytes); without, only the response's ACK does.
    #[arg(long)]
    delayed_acks: bool,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(format!("unknown size suffix {c:?} (K, M, G)")),
            };
            (&s[..i], m)
        }
        _ => (s, 1),
    };
    num.parse::<u64>()
        .map(|n| n * mult)
        .map_err(|e| format!("{s:?}: {e}"))
}

fn size_label(n: u64) -> String {
    if n >= 1 << 30 && n.is_multiple_of(1 << 30) {
        format!("{}G", n >> 30)
    } else if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}M", n >> 20)
    } else {
        n.to_string()
    }
}

// ---------------------------------------------------------------------------------------
// Deterministic randomness (SplitMix64: no dependency, same stream on every platform).

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    fn pick<'a, T>(&mut self, s: &'a [T]) -> &'a T {
        &s[self.next() as usize % s.len()]
    }
    /// Log-normal around `median` (spread `sigma`), the usual shape of latencies.
    fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        // Sum of 4 uniforms: close enough to a normal for latencies.
        let z = (self.unit() + self.unit() + self.unit() + self.unit() - 2.0) * 1.732;
        median * (sigma * z).exp()
    }
    /// Log-uniform in `lo..=hi`.
    fn log_uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        (a + (b - a) * self.unit()).exp() as u64
    }
}

// ---------------------------------------------------------------------------------------
// Realistic names and payloads.

const TOPICS: [&str; 12] = [
    "orders",
    "payments",
    "page-views",
    "user-events",
    "inventory-updates",
    "audit-log",
    "clickstream.raw",
    "shipments",
    "notifications",
    "metrics.host",
    "fraud-scores",
    "search-queries",
];
const GROUPS: [&str; 6] = [
    "order-processor",
    "payments-ledger",
    "analytics-etl",
    "notification-service",
    "search-indexer",
    "fraud-detector",
];
const APPS: [&str; 8] = [
    "checkout-api",
    "billing-worker",
    "etl-job",
    "notifier",
    "indexer",
    "fraud-svc",
    "web-frontend",
    "inventory-sync",
];
const WORDS: [&str; 48] = [
    "alpha", "bravo", "cart", "delta", "event", "fresh", "green", "house", "index", "jolly",
    "kafka", "lemon", "metro", "north", "ocean", "pixel", "quick", "river", "stone", "tiger",
    "urban", "vivid", "water", "xenon", "yield", "zebra", "order", "price", "total", "state",
    "ready", "queued", "shipped", "paid", "refund", "mobile", "desktop", "search", "click", "view",
    "basket", "coupon", "session", "region", "eu-west", "us-east", "premium", "basic",
];
const EVENTS: [&str; 8] = [
    "page_view",
    "add_to_cart",
    "checkout",
    "payment_authorized",
    "order_shipped",
    "login",
    "search",
    "refund_requested",
];

/// A JSON-ish event of about `size` bytes: realistic text that compresses like real
/// application payloads do (2-6x).
fn payload(rng: &mut Rng, size: usize, ts_ms: u64) -> Vec<u8> {
    let mut s = String::with_capacity(size + 64);
    s.push_str(&format!(
        "{{\"id\":\"{:016x}\",\"user\":\"user-{}\",\"event\":\"{}\",\"ts\":{},\"amount\":{}.{:02},\"path\":\"/{}/{}\",\"note\":\"",
        rng.next(),
        rng.range(1, 999_999),
        rng.pick(&EVENTS),
        ts_ms,
        rng.range(0, 9999),
        rng.range(0, 99),
        rng.pick(&WORDS),
        rng.range(1, 99_999),
    ));
    while s.len() + 2 < size {
        let w = *rng.pick(&WORDS);
        s.push_str(w);
        s.push(' ');
        if rng.chance(0.1) {
            s.push_str(&rng.range(0, 1_000_000).to_string());
            s.push(' ');
        }
    }
    s.truncate(size.saturating_sub(2).max(1));
    s.push_str("\"}");
    s.into_bytes()
}

fn record_key(rng: &mut Rng) -> Value {
    match rng.range(0, 9) {
        0 => Value::Null,
        1..=5 => Value::String(to_hex(
            format!("order-{}", rng.range(100_000, 9_999_999)).as_bytes(),
        )),
        _ => Value::String(to_hex(
            format!(
                "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
                rng.next() as u32,
                rng.next() as u16,
                rng.next() as u16 & 0xfff,
                rng.next() as u16 & 0xfff,
                rng.next() & 0xffff_ffff_ffff
            )
            .as_bytes(),
        )),
    }
}

/// Record batch values (v2) of `count` records with values of about `value_size` bytes.
fn batch_values(
    rng: &mut Rng,
    count: usize,
    value_size: usize,
    codec: &str,
    ts_ms: u64,
    producer: (i64, i16, i32),
) -> Value {
    let mut records = Vec::with_capacity(count);
    let mut max_delta = 0;
    for i in 0..count {
        let delta = (i as u64 * rng.range(0, 3)) as i64;
        max_delta = max_delta.max(delta);
        let size = (value_size as f64 * (0.6 + 0.8 * rng.unit())) as usize;
        let mut headers = Vec::new();
        if rng.chance(0.3) {
            headers.push(json!({"key": "trace-id", "value": to_hex(&rng.next().to_be_bytes())}));
        }
        if rng.chance(0.2) {
            headers.push(json!({"key": "content-type", "value": to_hex(b"application/json")}));
        }
        records.push(json!({
            "attributes": 0,
            "timestampDelta": delta,
            "offsetDelta": i,
            "key": record_key(rng),
            "value": to_hex(&payload(rng, size.max(8), ts_ms + delta as u64)),
            "headers": headers,
        }));
    }
    let (pid, epoch, seq) = producer;
    json!([{
        "magic": 2,
        "baseOffset": 0,
        "partitionLeaderEpoch": -1,
        "attributes": {"compression": codec, "timestampType": "CreateTime",
                       "isTransactional": false, "isControlBatch": false},
        "lastOffsetDelta": count.saturating_sub(1),
        "baseTimestamp": ts_ms,
        "maxTimestamp": ts_ms + max_delta as u64,
        "producerId": pid,
        "producerEpoch": epoch,
        "baseSequence": seq,
        "records": records,
    }])
}

/// ConsumerProtocolSubscription v1 (JoinGroup metadata): topics, no user data, no owned
/// partitions.
fn subscription(topics: &[&str]) -> Vec<u8> {
    let mut b = vec![0, 1];
    b.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for t in topics {
        b.extend_from_slice(&(t.len() as i16).to_be_bytes());
        b.extend_from_slice(t.as_bytes());
    }
    b.extend_from_slice(&(-1i32).to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes());
    b
}

/// ConsumerProtocolAssignment v1: partitions per topic, no user data.
fn assignment(parts: &[(&str, Vec<i32>)]) -> Vec<u8> {
    let mut b = vec![0, 1];
    b.extend_from_slice(&(parts.len() as i32).to_be_bytes());
    for (t, ps) in parts {
        b.extend_from_slice(&(t.len() as i16).to_be_bytes());
        b.extend_from_slice(t.as_bytes());
        b.extend_from_slice(&(ps.len() as i32).to_be_bytes());
        for p in ps {
            b.extend_from_slice(&p.to_be_bytes());
        }
    }
    b.extend_from_slice(&(-1i32).to_be_bytes());
    b
}

// ---------------------------------------------------------------------------------------
// The world: brokers, topics, what was produced.

const PARTITIONS: i32 = 6;
const BROKERS: [[u8; 4]; 3] = [[10, 0, 0, 11], [10, 0, 0, 12], [10, 0, 0, 13]];
/// Recent batches kept per partition for consumers to fetch (bulk).
const RING: usize = 3;

/// A topic's batches in a produce request: (topic, [(partition, batch bytes, records)]).
type TopicBatches = (usize, Vec<(i32, Vec<u8>, usize)>);

struct Batch {
    base_offset: i64,
    count: i64,
    bytes: Vec<u8>,
}

struct Partition {
    next_offset: i64,
    recent: VecDeque<Batch>,
}

struct World {
    /// Per topic, per partition.
    parts: Vec<Vec<Partition>>,
    cluster_id: &'static str,
}

impl World {
    fn new() -> World {
        World {
            parts: (0..TOPICS.len())
                .map(|t| {
                    (0..PARTITIONS)
                        .map(|p| Partition {
                            next_offset: 1_000_000 * (t as i64 + 1) + 10_000 * p as i64,
                            recent: VecDeque::new(),
                        })
                        .collect()
                })
                .collect(),
            cluster_id: "q7Rk2nXhSZyTu0bWJ3fL9A",
        }
    }
    fn leader(t: usize, p: i32) -> i32 {
        ((t + p as usize) % BROKERS.len()) as i32 + 1
    }
}

// ---------------------------------------------------------------------------------------
// Clients.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// A consumer-group member: joins, then polls, heartbeats and commits.
    Consumer,
    /// A producer of small batches.
    SmallProducer,
    /// A producer of large batches.
    BulkProducer,
    /// A consumer fetching large batches.
    BulkConsumer,
}

struct Client {
    role: Role,
    flow: TcpFlow,
    client_id: String,
    corr: i32,
    step: u32,
    /// Exchanges left before the client leaves and the connection closes.
    left: u32,
    group: &'static str,
    member_id: String,
    generation: i32,
    topics: Vec<usize>,
    /// Assigned (topic, partition, next fetch offset).
    assigned: Vec<(usize, i32, i64)>,
    last_heartbeat: u64,
    last_commit: u64,
    last_metadata: u64,
    producer: (i64, i16, i32),
    codec: &'static str,
    /// The end of the last packet this connection sent or received.
    busy_until: u64,
}

/// One request and its response, and when the client acts next.
struct Exchange {
    request: Vec<u8>,
    response: Vec<u8>,
    latency_us: u64,
    think_us: u64,
}

struct Gen {
    schema: Schema,
    rng: Rng,
    kind: Kind,
    world: World,
    out: PcapWriter<BufWriter<File>>,
    written: u64,
    /// Packets built but not yet written, by time: (micros, sequence, packet).
    pending: BinaryHeap<Reverse<(u64, u64, Vec<u8>)>>,
    seq: u64,
    next_port: u16,
    next_host: u32,
    /// Compressed/uncompressed ratios seen per codec, to size compressed batches.
    ratio: [f64; 5],
}

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

fn codec_index(c: &str) -> usize {
    CODECS.iter().position(|x| *x == c).unwrap_or(0)
}

impl Gen {
    fn frame(&self, v: &Value) -> Vec<u8> {
        match encode(&self.schema, v) {
            Ok(b) => b,
            Err(e) => panic!("kwire-gen built a value the encoder rejects: {e}\n{v}"),
        }
    }

    fn request(&self, c: &Client, key: i16, ver: i16, body: Value) -> Vec<u8> {
        self.frame(
            &json!({"kind": "request", "api_key": key, "api_version": ver,
            "header": {"correlation_id": c.corr, "client_id": c.client_id}, "body": body}),
        )
    }

    fn response(&self, c: &Client, key: i16, ver: i16, body: Value) -> Vec<u8> {
        self.frame(
            &json!({"kind": "response", "api_key": key, "api_version": ver,
            "header": {"correlation_id": c.corr}, "body": body}),
        )
    }

    fn new_client(&mut self, role: Role, t: u64) -> Client {
        let r = &mut self.rng;
        self.next_host += 1;
        let h = self.next_host;
        let ip = [10, 1, (h >> 8) as u8 % 250, (h & 0xff) as u8 % 250 + 2];
        self.next_port = if self.next_port >= 60_999 {
            32_768
        } else {
            self.next_port + 1
        };
        let broker = *r.pick(&BROKERS);
        let isn = [r.next() as u32, r.next() as u32];
        let flow = TcpFlow::new(
            SocketAddrV4::new(ip.into(), self.next_port),
            SocketAddrV4::new(broker.into(), 9092),
            isn,
        );
        let app = *r.pick(&APPS);
        let client_id = match role {
            Role::Consumer | Role::BulkConsumer => {
                format!("{app}-consumer-{}", r.range(1, 40))
            }
            _ => format!("{app}-producer-{}", r.range(1, 40)),
        };
        let group = *r.pick(&GROUPS);
        let ntopics = r.range(1, 3) as usize;
        let mut topics: Vec<usize> = (0..ntopics).map(|_| r.range(0, 3) as usize).collect();
        topics.sort_unstable();
        topics.dedup();
        let codec = match role {
            Role::BulkProducer => {
                *r.pick(&["none", "none", "none", "gzip", "snappy", "lz4", "zstd"])
            }
            _ => *r.pick(&["none", "none", "lz4", "snappy"]),
        };
        let left = match role {
            Role::Consumer | Role::SmallProducer => r.range(200, 4000) as u32,
            Role::BulkProducer | Role::BulkConsumer => r.range(100, 1000) as u32,
        };
        Client {
            role,
            flow,
            client_id,
            corr: r.range(0, 50) as i32,
            step: 0,
            left,
            group,
            member_id: format!(
                "{}-{:08x}-{:04x}-{:04x}",
                app,
                r.next() as u32,
                r.next() as u16,
                r.next() as u16
            ),
            generation: r.range(1, 300) as i32,
            topics,
            assigned: Vec::new(),
            last_heartbeat: t,
            last_commit: t,
            last_metadata: t,
            producer: (r.range(1000, 900_000) as i64, 0, 0),
            codec,
            busy_until: t,
        }
    }

    // -- exchanges ---------------------------------------------------------------------

    fn api_versions(&mut self, c: &Client) -> Exchange {
        let req = self.request(
            c,
            18,
            3,
            json!({"ClientSoftwareName": "apache-kafka-java", "ClientSoftwareVersion": "3.6.1"}),
        );
        let keys: Vec<Value> = [
            (0, 0, 9),
            (1, 0, 13),
            (2, 0, 7),
            (3, 0, 12),
            (8, 0, 8),
            (9, 0, 8),
            (10, 0, 4),
            (11, 0, 9),
            (12, 0, 4),
            (13, 0, 5),
            (14, 0, 5),
            (15, 0, 5),
            (16, 0, 4),
            (17, 0, 1),
            (18, 0, 3),
            (19, 0, 7),
            (20, 0, 6),
            (21, 0, 2),
            (22, 0, 4),
            (23, 0, 4),
            (24, 0, 4),
            (25, 0, 3),
            (26, 0, 3),
            (27, 0, 1),
            (28, 0, 3),
            (29, 0, 3),
            (30, 0, 3),
            (31, 0, 3),
            (32, 0, 4),
            (33, 0, 2),
            (35, 0, 4),
            (36, 0, 2),
            (37, 0, 3),
            (42, 0, 2),
            (44, 0, 1),
            (45, 0, 0),
            (47, 0, 0),
            (48, 0, 1),
            (49, 0, 1),
            (50, 0, 0),
            (60, 0, 0),
            (61, 0, 0),
        ]
        .iter()
        .map(|(k, lo, hi)| json!({"ApiKey": k, "MinVersion": lo, "MaxVersion": hi}))
        .collect();
        let resp = self.response(
            c,
            18,
            3,
            json!({"ErrorCode": 0, "ApiKeys": keys, "ThrottleTimeMs": 0}),
        );
        Exchange {
            request: req,
            response: resp,
            latency_us: self.rng.lognormal(400.0, 0.4) as u64,
            think_us: self.rng.range(100, 800),
        }
    }

    fn metadata(&mut self, c: &Client) -> Exchange {
        let names: Vec<Value> = c
            .topics
            .iter()
            .map(|t| json!({"Name": TOPICS[*t]}))
            .collect();
        let req = self.request(
            c,
            3,
            9,
            json!({"Topics": names, "AllowAutoTopicCreation": false,
                   "IncludeClusterAuthorizedOperations": false,
                   "IncludeTopicAuthorizedOperations": false}),
        );
        let brokers: Vec<Value> = (0..BROKERS.len())
            .map(|i| {
                json!({"NodeId": i + 1, "Host": format!("kafka-{}.prod.internal", i + 1),
                       "Port": 9092, "Rack": format!("eu-west-1{}", ['a', 'b', 'c'][i])})
            })
            .collect();
        let topics: Vec<Value> = c
            .topics
            .iter()
            .map(|t| {
                let parts: Vec<Value> = (0..PARTITIONS)
                    .map(|p| {
                        let l = World::leader(*t, p);
                        let reps = [l, l % 3 + 1, (l + 1) % 3 + 1];
                        json!({"ErrorCode": 0, "PartitionIndex": p, "LeaderId": l,
                               "LeaderEpoch": 17, "ReplicaNodes": reps, "IsrNodes": reps,
                               "OfflineReplicas": []})
                    })
                    .collect();
                json!({"ErrorCode": 0, "Name": TOPICS[*t], "IsInternal": false,
                       "Partitions": parts, "TopicAuthorizedOperations": -2147483648i64})
            })
            .collect();
        let resp = self.response(
            c,
            3,
            9,
            json!({"ThrottleTimeMs": 0, "Brokers": brokers, "ClusterId": self.world.cluster_id,
                   "ControllerId": 2, "Topics": topics,
                   "ClusterAuthorizedOperations": -2147483648i64}),
        );
        Exchange {
            request: req,
            response: resp,
            latency_us: self.rng.lognormal(900.0, 0.5) as u64,
            think_us: self.rng.range(200, 2000),
        }
    }

    fn find_coordinator(&mut self, c: &Client) -> Exchange {
        let req = self.request(c, 10, 3, json!({"Key": c.group, "KeyType": 0}));
        let n = (c.group.len() % 3) + 1;
        let resp = self.response(
            c,
            10,
            3,
            json!({"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": "NONE", "NodeId": n,
                   "Host": format!("kafka-{n}.prod.internal"), "Port": 9092}),
        );
        Exchange {
            request: req,
            response: resp,
            latency_us: self.rng.lognormal(600.0, 0.4) as u64,
            think_us: self.rng.range(100, 1000),
        }
    }

    fn join_group(&mut self, c: &mut Client) -> Exchange {
        let subs: Vec<&str> = c.topics.iter().map(|t| TOPICS[*t]).collect();
        let meta = subscription(&subs);
        let req = self.request(
            c,
            11,
            7,
            json!({"GroupId": c.group, "SessionTimeoutMs": 45000, "RebalanceTimeoutMs": 300000,
                   "MemberId": c.member_id, "GroupInstanceId": null, "ProtocolType": "consumer",
                   "Protocols": [{"Name": "range", "Metadata": to_hex(&meta)},
                                 {"Name": "cooperative-sticky", "Metadata": to_hex(&meta)}]}),
        );
        c.generation += 1;
        let leader = self.rng.chance(0.3);
        let members: Vec<Value> = if leader {
            (0..self.rng.range(2, 6))
                .map(|i| {
                    let id = if i == 0 {
                        c.member_id.clone()
                    } else {
                        format!("{}-{:08x}", c.client_id, self.rng.next() as u32)
                    };
                    json!({"MemberId": id, "GroupInstanceId": null, "Metadata": to_hex(&meta)})
                })
                .collect()
        } else {
            Vec::new()
        };
        let resp = self.response(
            c,
            11,
            7,
            json!({"ThrottleTimeMs": 0, "ErrorCode": 0, "GenerationId": c.generation,
                   "ProtocolType": "consumer", "ProtocolName": "range",
                   "Leader": if leader { c.member_id.clone() } else { format!("{}-leader", c.group) },
                   "MemberId": c.member_id, "Members": members}),
        );
        Exchange {
            request: req,
            response: resp,
            // The coordinator waits for the other members (group.initial.rebalance.delay).
            latency_us: if c.role == Role::BulkConsumer {
                self.rng.lognormal(20_000.0, 0.5)
            } else {
                self.rng.lognormal(150_000.0, 0.8)
            } as u64,
            think_us: self.rng.range(100, 2000),
        }
    }

    fn sync_group(&mut self, c: &mut Client) -> Exchange {
        // Two or three partitions of each subscribed topic.
        let mut mine: Vec<(&str, Vec<i32>)> = Vec::new();
        c.assigned.clear();
        for t in &c.topics {
            let first = self.rng.range(0, PARTITIONS as u64 - 1) as i32;
            // Bulk consumers are few and read every partition of their topics.
            let n = if c.role == Role::BulkConsumer {
                PARTITIONS
            } else {
                self.rng.range(1, 3) as i32
            };
            let ps: Vec<i32> = (0..n).map(|i| (first + i) % PARTITIONS).collect();
            for p in &ps {
                let o = self.world.parts[*t][*p as usize].next_offset;
                c.assigned.push((*t, *p, o));
            }
            mine.push((TOPICS[*t], ps));
        }
        let a = assignment(&mine);
        let req = self.request(
            c,
            14,
            5,
            json!({"GroupId": c.group, "GenerationId": c.generation, "MemberId": c.member_id,
                   "GroupInstanceId": null, "ProtocolType": "consumer", "ProtocolName": "range",
                   "Assignments": []}),
        );
        let resp = self.response(
            c,
            14,
            5,
            json!({"ThrottleTimeMs": 0, "ErrorCode": 0, "ProtocolType": "consumer",
                   "ProtocolName": "range", "Assignment": to_hex(&a)}),
        );
        Exchange {
            request: req,
            response: resp,
            latency_us: self.rng.lognormal(3_000.0, 0.6) as u64,
            think_us: self.rng.range(100, 1000),
        }
    }

    fn by_topic(c: &Client) -> Vec<(usize, Vec<(i32, i64)>)> {
        let mut out: Vec<(usize, Vec<(i32, i64)>)> = Vec::new();
        for (t, p, o) in &c.assigned {
            match out.iter_mut().find(|(x, _)| x == t) {
                Some((_, v)) => v.push((*p, *o)),
                None => out.push((*t, vec![(*p, *o)])),
            }
        }
        out
    }

    fn offset_fetch(&mut self, c: &Client) -> Exchange {
        let bt = Self::by_topic(c);
        let topics: Vec<Value> = bt
            .iter()
            .map(|(t, ps)| {
                let idx: Vec<i32> = ps.iter().map(|(p, _)| *p).collect();
                json!({"Name": TOPICS[*t], "PartitionIndexes": idx})
            })
            .collect();
        let req = self.request(
            c,
            9,
            7,
            json!({"GroupId": c.group, "Topics": topics, "RequireStable": true}),
        );
        let rtopics: Vec<Value> = bt
            .iter()
            .map(|(t, ps)| {
                let parts: Vec<Value> = ps
                    .iter()
                    .map(|(p, o)| {
                        json!({"PartitionIndex": p, "CommittedOffset": o,
                               "CommittedLeaderEpoch": 17, "Metadata": "", "ErrorCode": 0})
                    })
                    .collect();
                json!({"Name": TOPICS[*t], "Partitions": parts})
            })
            .collect();
        let resp = self.response(
            c,
            9,
            7,
            json!({"ThrottleTimeMs": 0, "Topics": rtopics, "ErrorCode": 0}),
        );
        Exchange {
            request: req,
            response: resp,
            latency_us: self.rng.lognormal(1_200.0, 0.5) as u64,
            think_us: self.rng.range(100, 1000),
        }
    }

    fn heartbeat(&mut self, c: &Client) -> Exchange {
        let req = self.request(
            c,
            12,
            4,
            json!({"GroupId": c.group, "GenerationId": c.generation, "MemberId": c.member_id,
                   "GroupInstanceId": null}),
        );
        let err = if self.rng.chance(0.002) { 27 } else { 0 }; // REBALANCE_IN_PROGRESS
        let resp = self.response(c, 12, 4, json!({"ThrottleTimeMs": 0, "ErrorCode": err}));
        Exchange {
            request: req,
            response: resp,
            latency_us: self.rng.lognormal(350.0, 0.5) as u64,
            think_us: self.rng.range(50, 500),
        }
    }

    fn offset_commit(&mut self, c: &Client) -> Exchange {
        let bt = Self::by_topic(c);
        let topics: Vec<Value> = bt
            .iter()
            .map(|(t, ps)| {
                let parts: Vec<Value> = ps
                    .iter()
                    .map(|(p, o)| {
                        json!({"PartitionIndex": p, "CommittedOffset": o,
                               "CommittedLeaderEpoch": 17, "CommittedMetadata": ""})
                    })
                    .collect();
                json!({"Name": TOPICS[*t], "Partitions": parts})
            })
            .collect();
        let req = self.request(
            c,
            8,
            8,
            json!({"GroupId": c.group, "GenerationIdOrMemberEpoch": c.generation,
                   "MemberId": c.member_id, "GroupInstanceId": null, "Topics": topics}),
        );
        let rtopics: Vec<Value> = bt
            .iter()
            .map(|(t, ps)| {
                let parts: Vec<Value> = ps
                    .iter()
                    .map(|(p, _)| json!({"PartitionIndex": p, "ErrorCode": 0}))
                    .collect();
                json!({"Name": TOPICS[*t], "Partitions": parts})
            })
            .collect();
        let resp = self.response(c, 8, 8, json!({"ThrottleTimeMs": 0, "Topics": rtopics}));
        Exchange {
            request: req,
            response: resp,
            latency_us: self.rng.lognormal(2_500.0, 0.6) as u64,
            think_us: self.rng.range(50, 500),
        }
    }

    fn leave_group(&mut self, c: &Client) -> Exchange {
        let req = self.request(
            c,
            13,
            4,
            json!({"GroupId": c.group,
                   "Members": [{"MemberId": c.member_id, "GroupInstanceId": null}]}),
        );
        let resp = self.response(
            c,
            13,
            4,
            json!({"ThrottleTimeMs": 0, "ErrorCode": 0,
                   "Members": [{"MemberId": c.member_id, "GroupInstanceId": null, "ErrorCode": 0}]}),
        );
        Exchange {
            request: req,
            response: resp,
            latency_us: self.rng.lognormal(1_500.0, 0.5) as u64,
            think_us: 0,
        }
    }

    /// A produce of one batch per partition; `records` records of about `value_size`
    /// bytes each.
    fn produce(
        &mut self,
        c: &mut Client,
        t_ms: u64,
        parts: &[(usize, i32)],
        records: usize,
        value_size: usize,
    ) -> Exchange {
        let mut data: Vec<TopicBatches> = Vec::new();
        for (t, p) in parts {
            let bv = batch_values(
                &mut self.rng,
                records,
                value_size,
                c.codec,
                t_ms,
                c.producer,
            );
            c.producer.2 = c.producer.2.wrapping_add(records as i32);
            let bytes = match encode_records(&bv, "records") {
                Ok(b) => b,
                Err(e) => panic!("kwire-gen built records the encoder rejects: {e}"),
            };
            match data.iter_mut().find(|(x, _)| x == t) {
                Some((_, v)) => v.push((*p, bytes, records)),
                None => data.push((*t, vec![(*p, bytes, records)])),
            }
        }
        let acks = if c.role == Role::BulkProducer && self.rng.chance(0.3) {
            1
        } else {
            -1
        };
        let topic_data: Vec<Value> = data
            .iter()
            .map(|(t, ps)| {
                let pd: Vec<Value> = ps
                    .iter()
                    .map(|(p, b, _)| json!({"Index": p, "Records": to_hex(b)}))
                    .collect();
                json!({"Name": TOPICS[*t], "PartitionData": pd})
            })
            .collect();
        let req = self.request(
            c,
            0,
            8,
            json!({"TransactionalId": null, "Acks": acks, "TimeoutMs": 30000,
                   "TopicData": topic_data}),
        );
        // The broker appends: offsets assigned, batches kept for the consumers.
        let mut responses = Vec::new();
        for (t, ps) in data {
            let mut pr = Vec::new();
            for (p, mut bytes, n) in ps {
                let part = &mut self.world.parts[t][p as usize];
                let base = part.next_offset;
                part.next_offset += n as i64;
                pr.push(json!({"Index": p, "ErrorCode": 0, "BaseOffset": base,
                               "LogAppendTimeMs": -1, "LogStartOffset": 0,
                               "RecordErrors": [], "ErrorMessage": null}));
                if c.role == Role::BulkProducer {
                    // baseOffset and partitionLeaderEpoch lie before the CRC's range.
                    bytes[..8].copy_from_slice(&base.to_be_bytes());
                    bytes[12..16].copy_from_slice(&17i32.to_be_bytes());
                    part.recent.push_back(Batch {
                        base_offset: base,
                        count: n as i64,
                        bytes,
                    });
                    if part.recent.len() > RING {
                        part.recent.pop_front();
                    }
                }
            }
            responses.push(json!({"Name": TOPICS[t], "PartitionResponses": pr}));
        }
        let resp = self.response(
            c,
            0,
            8,
            json!({"Responses": responses, "ThrottleTimeMs": 0}),
        );
        let latency = if acks == -1 {
            self.rng.lognormal(4_000.0, 0.6)
        } else {
            self.rng.lognormal(1_500.0, 0.5)
        };
        Exchange {
            request: req,
            response: resp,
            latency_us: latency as u64,
            think_us: 0,
        }
    }

    fn fetch(&mut self, c: &mut Client, t_ms: u64) -> Exchange {
        let bt = Self::by_topic(c);
        let max_bytes = if c.role == Role::BulkConsumer {
            self.rng.log_uniform(64 << 10, 1 << 20) as usize
        } else {
            52_428_800
        };
        let topics: Vec<Value> = bt
            .iter()
            .map(|(t, ps)| {
                let parts: Vec<Value> = ps
                    .iter()
                    .map(|(p, o)| {
                        json!({"Partition": p, "CurrentLeaderEpoch": 17, "FetchOffset": o,
                               "LogStartOffset": -1, "PartitionMaxBytes": 1048576})
                    })
                    .collect();
                json!({"Topic": TOPICS[*t], "Partitions": parts})
            })
            .collect();
        let session = (c.corr as i64 * 7919) % 2_000_000_000;
        let req = self.request(
            c,
            1,
            11,
            json!({"ReplicaId": -1, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": max_bytes.max(52_428_800),
                   "IsolationLevel": 1, "SessionId": session, "SessionEpoch": (c.step as i32 % 1000) + 1,
                   "Topics": topics, "ForgottenTopicsData": [], "RackId": "eu-west-1a"}),
        );
        let mut total = 0usize;
        let mut any = false;
        let mut rtopics = Vec::new();
        for (t, ps) in &bt {
            let mut rparts = Vec::new();
            for (p, off) in ps {
                let mut recs: Vec<u8> = Vec::new();
                let mut new_off = *off;
                if c.role == Role::BulkConsumer {
                    let part = &self.world.parts[*t][*p as usize];
                    for b in &part.recent {
                        if b.base_offset + b.count <= *off || total + b.bytes.len() > max_bytes {
                            continue;
                        }
                        if b.base_offset + b.count > new_off {
                            recs.extend_from_slice(&b.bytes);
                            total += b.bytes.len();
                            new_off = b.base_offset + b.count;
                        }
                    }
                } else if self.rng.chance(0.25) {
                    // A few small records that small producers sent.
                    let n = self.rng.range(1, 8) as usize;
                    let size = self.rng.range(40, 300) as usize;
                    let bv = batch_values(&mut self.rng, n, size, "none", t_ms - 20, (-1, -1, -1));
                    if let Ok(mut b) = encode_records(&bv, "records") {
                        b[..8].copy_from_slice(&off.to_be_bytes());
                        recs = b;
                        new_off = off + n as i64;
                    }
                }
                if new_off != *off {
                    any = true;
                    for a in c.assigned.iter_mut() {
                        if a.0 == *t && a.1 == *p {
                            a.2 = new_off;
                        }
                    }
                }
                let hw = self.world.parts[*t][*p as usize].next_offset.max(new_off);
                rparts.push(
                    json!({"PartitionIndex": p, "ErrorCode": 0, "HighWatermark": hw,
                                   "LastStableOffset": hw, "LogStartOffset": 0,
                                   "AbortedTransactions": null, "PreferredReadReplica": -1,
                                   "Records": to_hex(&recs)}),
                );
            }
            rtopics.push(json!({"Topic": TOPICS[*t], "Partitions": rparts}));
        }
        let resp = self.response(
            c,
            1,
            11,
            json!({"ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": session, "Responses": rtopics}),
        );
        // With nothing to return the broker holds the fetch for max.wait.ms.
        let latency = if any {
            self.rng.lognormal(1_500.0, 0.6)
        } else if c.role == Role::BulkConsumer {
            // Busy partitions: new data arrives well within max.wait.ms.
            self.rng.lognormal(15_000.0, 0.5)
        } else {
            500_000.0 + self.rng.range(0, 3000) as f64
        };
        Exchange {
            request: req,
            response: resp,
            latency_us: latency as u64,
            think_us: self.rng.range(20, 400),
        }
    }

    /// The client's next exchange at `t` (micros); `None` when it leaves.
    fn next_exchange(&mut self, c: &mut Client, t: u64) -> Option<Exchange> {
        let t_ms = t / 1000;
        let step = c.step;
        c.step += 1;
        c.corr = c.corr.wrapping_add(1);
        if c.left == 0 {
            return None;
        }
        c.left -= 1;
        match step {
            0 => return Some(self.api_versions(c)),
            1 => {
                c.last_metadata = t;
                return Some(self.metadata(c));
            }
            _ => {}
        }
        let group_member = matches!(c.role, Role::Consumer | Role::BulkConsumer);
        if group_member {
            match step {
                2 => return Some(self.find_coordinator(c)),
                3 => return Some(self.join_group(c)),
                4 => return Some(self.sync_group(c)),
                5 => return Some(self.offset_fetch(c)),
                _ => {}
            }
            if c.left == 0 {
                return Some(self.leave_group(c));
            }
            if t - c.last_heartbeat >= 3_000_000 {
                c.last_heartbeat = t;
                return Some(self.heartbeat(c));
            }
            if t - c.last_commit >= 5_000_000 {
                c.last_commit = t;
                return Some(self.offset_commit(c));
            }
        }
        if t - c.last_metadata >= 300_000_000 {
            c.last_metadata = t;
            return Some(self.metadata(c));
        }
        Some(match c.role {
            Role::Consumer | Role::BulkConsumer => self.fetch(c, t_ms),
            Role::SmallProducer => {
                let t = *self.rng.pick(&c.topics);
                let p = self.rng.range(0, PARTITIONS as u64 - 1) as i32;
                let n = self.rng.range(1, 6) as usize;
                let size = self.rng.range(40, 250) as usize;
                let mut x = self.produce(c, t_ms, &[(t, p)], n, size);
                x.think_us = self.rng.lognormal(40_000.0, 1.0) as u64;
                x
            }
            Role::BulkProducer => {
                let target = self.rng.log_uniform(64 << 10, 1 << 20) as f64;
                let np = self.rng.range(1, 4) as usize;
                let parts: Vec<(usize, i32)> = (0..np)
                    .map(|_| {
                        (
                            *self.rng.pick(&c.topics),
                            self.rng.range(0, PARTITIONS as u64 - 1) as i32,
                        )
                    })
                    .collect();
                let mut parts = parts;
                parts.sort_unstable();
                parts.dedup();
                let records = self.rng.range(100, 500) as usize;
                let ci = codec_index(c.codec);
                let per_batch = target / parts.len() as f64;
                let value_size = (per_batch / self.ratio[ci] / records as f64 - 30.0).max(20.0);
                let mut x = self.produce(c, t_ms, &parts, records, value_size as usize);
                // Learn the codec's ratio from what came out.
                let raw = parts.len() as f64 * records as f64 * (value_size + 30.0);
                let got = (x.request.len() as f64 / raw).clamp(0.05, 1.5);
                self.ratio[ci] = self.ratio[ci] * 0.8 + got * 0.2;
                x.think_us = self.rng.lognormal(20_000.0, 0.7) as u64;
                x
            }
        })
    }

    // -- packets -----------------------------------------------------------------------

    /// Queues the packets a flow operation writes (into a scratch pcap) by their times.
    fn queue(&mut self, f: impl FnOnce(&mut PcapWriter<Vec<u8>>) -> io::Result<()>) {
        let mut w = match PcapWriter::new(Vec::new()) {
            Ok(w) => w,
            Err(e) => panic!("writing to memory failed: {e}"),
        };
        if let Err(e) = f(&mut w) {
            panic!("writing to memory failed: {e}");
        }
        let buf = w.into_inner();
        let mut rest = &buf[24..];
        while rest.len() >= 16 {
            let u = |i: usize| u32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
            let t = u(0) as u64 * 1_000_000 + u(4) as u64;
            let len = u(8) as usize;
            let pkt = rest[16..16 + len].to_vec();
            rest = &rest[16 + len..];
            self.seq += 1;
            self.pending.push(Reverse((t, self.seq, pkt)));
        }
    }

    /// Writes every queued packet up to time `t`.
    fn flush_until(&mut self, t: u64) -> io::Result<()> {
        while let Some(Reverse((pt, _, _))) = self.pending.peek() {
            if *pt > t {
                break;
            }
            if let Some(Reverse((pt, _, pkt))) = self.pending.pop() {
                self.out.packet(pt, &pkt)?;
                self.written += 16 + pkt.len() as u64;
            }
        }
        Ok(())
    }
}

/// Sends `data` segment by segment, one every `gap` micros from `t`; returns the time of
/// the last segment.
fn send(
    w: &mut PcapWriter<Vec<u8>>,
    flow: &mut TcpFlow,
    to_server: bool,
    t: u64,
    data: &[u8],
) -> io::Result<u64> {
    // TcpFlow::send spaces MSS-sized segments 10 µs apart (about 1.2 Gbit/s).
    flow.send(w, to_server, t, data)?;
    Ok(t + 10 * (data.len().div_ceil(kwire::input::pcap_out::MSS) as u64).saturating_sub(1))
}

fn run(a: &Args) -> io::Result<(PathBuf, u64, u64)> {
    let size = a
        .size
        .unwrap_or_else(|| match (a.kind.hostile(), a.kind.lossy()) {
            (Some(h), _) => h.default_size(),
            (_, Some(_)) => 1 << 20,
            _ => 100 << 20,
        });
    let path = a.out.clone().unwrap_or_else(|| {
        let kind = a
            .kind
            .to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string());
        PathBuf::from(format!("target/bench/{kind}-{}.pcap", size_label(size)))
    });
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    if let Some(l) = a.kind.lossy() {
        let conns = a.connections.unwrap_or(l.default_connections());
        let (bytes, packets) = lossy::write(l, size, conns, a.lose.clone(), a.delayed_acks, &path)?;
        return Ok((path, bytes, packets));
    }
    if let Some(h) = a.kind.hostile() {
        let (bytes, packets) = hostile::write(h, size, a.batches, &path, a.frames_out.as_deref())?;
        return Ok((path, bytes, packets));
    }
    let file = BufWriter::with_capacity(1 << 20, File::create(&path)?);
    let mut g = Gen {
        schema: Schema::embedded(),
        rng: Rng(a.seed ^ 0x6b77_6972_6567_656e),
        kind: a.kind,
        world: World::new(),
        out: PcapWriter::new(file)?,
        written: 24,
        pending: BinaryHeap::new(),
        seq: 0,
        next_port: 40_000,
        next_host: 0,
        ratio: [1.0, 0.3, 0.5, 0.5, 0.3],
    };
    // Bulk (the dense kinds were written above) where the kinds differ.
    let conns = a.connections.unwrap_or(match a.kind {
        Kind::Chatter => 64,
        _ => 12,
    });
    // 2024-05-01T10:00:00Z
    let t0: u64 = 1_714_557_600_000_000;
    let mut wakes: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut clients: Vec<Option<Client>> = Vec::with_capacity(conns);
    for i in 0..conns {
        clients.push(None);
        let stagger = match a.kind {
            Kind::Chatter => 2_000_000,
            _ => 50_000,
        };
        wakes.push(Reverse((t0 + g.rng.range(0, stagger), i)));
    }
    let mut closing = false;
    while let Some(Reverse((t, i))) = wakes.pop() {
        g.flush_until(t)?;
        if g.written >= size {
            closing = true;
        }
        let mut c = match clients[i].take() {
            Some(c) => c,
            None => {
                if closing {
                    continue;
                }
                let role = match g.kind {
                    Kind::Chatter => {
                        if g.rng.chance(0.7) {
                            Role::Consumer
                        } else {
                            Role::SmallProducer
                        }
                    }
                    _ => {
                        if i % 2 == 0 {
                            Role::BulkProducer
                        } else {
                            Role::BulkConsumer
                        }
                    }
                };
                let mut c = g.new_client(role, t);
                g.queue(|w| c.flow.open(w, t));
                c.busy_until = t + 100;
                c
            }
        };
        let t = t.max(c.busy_until + 1);
        let x = if closing {
            None
        } else {
            g.next_exchange(&mut c, t)
        };
        match x {
            Some(x) => {
                let mut req_end = 0;
                let mut resp_end = 0;
                let resp_at = |req_end: u64| req_end + x.latency_us.max(30);
                g.queue(|w| {
                    req_end = send(w, &mut c.flow, true, t, &x.request)?;
                    resp_end = send(w, &mut c.flow, false, resp_at(req_end), &x.response)?;
                    Ok(())
                });
                c.busy_until = resp_end;
                wakes.push(Reverse((resp_end + x.think_us.max(1), i)));
                clients[i] = Some(c);
            }
            None => {
                // The client leaves: FIN both ways; a new client takes the slot later.
                let at = t + 200;
                g.queue(|w| c.flow.close(w, at));
                if !closing {
                    wakes.push(Reverse((at + g.rng.range(1_000, 500_000), i)));
                }
            }
        }
    }
    g.flush_until(u64::MAX)?;
    let packets = g.out.packets;
    let mut w = g.out.into_inner();
    w.flush()?;
    Ok((path, g.written, packets))
}

fn main() {
    let a = Args::parse();
    match run(&a) {
        Ok((path, bytes, packets)) => {
            eprintln!(
                "kwire-gen: wrote {} ({bytes} bytes, {packets} packets)",
                path.display()
            );
        }
        Err(e) => {
            eprintln!("kwire-gen: {e}");
            std::process::exit(1);
        }
    }
}
