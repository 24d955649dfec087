//! The one-pass accumulation of `kwire report`: what each message contributes
//! ([`Fact`], taken on the worker thread that decoded it) and the totals, time buckets
//! and bounded lists it is added to in capture order ([`Gather`]).
//!
//! Bounds: the per-API counts and latency quantiles are [`crate::traffic::Stats`]'s
//! (the same code `kwire stats` counts with, so the two agree: exact quantiles up to
//! [`crate::traffic::EXACT_LATENCIES_KEEP`] paired responses in all, then histograms
//! within 1%; pairs and connections capped); the plots come from [`BUCKETS`] time
//! buckets whose width doubles as the capture grows (per bucket and api_key a count and
//! a log-scale latency histogram, per error name and per topic a count, over at most
//! [`API_KEYS_KEEP`] api_keys, [`ERROR_NAMES_KEEP`] error names and [`ROWS_KEEP`]
//! topics, the rest folded into one line each); the slowest responses are a heap of
//! [`SLOW_KEEP`]; error messages, group events, topics, clients, connections,
//! partitions and first requests are kept up to a cap each and counted past it
//! ([`Gather::folded`] says what was); names (topics, client_ids, GroupIds, software)
//! are cut to [`crate::traffic::NAME_CHARS_KEEP`] characters.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use crate::session::Context;
use crate::traffic::{bounded_name, error_code, Item, Stats};
use crate::tree::{Direction, Message, Value};

/// Time buckets of the plots.
pub const BUCKETS: usize = 200;
/// Slowest responses kept (the table shows 50; the latency plot marks them all).
pub const SLOW_KEEP: usize = 200;
/// Error responses kept for the error table and its pages.
pub const ERRORS_KEEP: usize = 200;
/// Consumer-group events kept for the timeline.
pub const EVENTS_KEEP: usize = 5_000;
/// Topics, clients and connections kept in their tables (the rest are counted).
pub const ROWS_KEEP: usize = 2_000;
/// Connections whose client_id is remembered (to count their responses' errors under it).
const CONN_CLIENTS_KEEP: usize = 100_000;
/// Partitions counted per topic.
const PARTITIONS_KEEP: usize = 10_000;
/// Partitions counted over all topics (a topic past it shows the partitions counted
/// before).
const ALL_PARTITIONS_KEEP: usize = 200_000;
/// Connections listed over all client rows.
const CLIENT_CONNECTIONS_KEEP: usize = 200_000;
/// Error names with a row and a line in the error plot; the rest are counted as
/// [`OTHER_ERRORS`].
pub const ERROR_NAMES_KEEP: usize = 500;
/// api_keys with a line in the plots; the rest are counted under [`OTHER_API_KEYS`]
/// (Kafka 4.4 has fewer than 100).
pub const API_KEYS_KEEP: usize = 256;
/// (api_key, api_version) pairs whose first request is remembered for its page.
pub const FIRST_OF_KEEP: usize = 1_000;
/// The row name of error names past [`ERROR_NAMES_KEEP`].
pub const OTHER_ERRORS: &str = "(other errors)";
/// The row name of topics past [`ROWS_KEEP`] in the time buckets.
pub const OTHER_TOPICS: &str = "(other topics)";
/// The bucket key of api_keys past [`API_KEYS_KEEP`].
pub const OTHER_API_KEYS: i16 = i16::MIN;
/// Bins per octave of the latency histograms.
const BINS_PER_OCTAVE: f64 = 4.0;
/// Bins of a latency histogram (up to 2^48 ns, about 3 days).
const BINS: usize = 4 * 48;

/// A message in the report: its capture (0-based, command-line order) and its index in
/// that capture (0-based, `kwire read`'s order and [`crate::index`]'s numbering).
pub type MsgRef = (u32, u64);

/// A consumer-group event's row on the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupEvent {
    /// A JoinGroup request.
    Join,
    /// A SyncGroup request.
    Sync,
    /// A Heartbeat response with an error (REBALANCE_IN_PROGRESS: a rebalance began).
    HeartbeatError,
    /// A LeaveGroup request.
    Leave,
    /// A ConsumerGroupHeartbeat (KIP-848) response with an error.
    ConsumerHeartbeatError,
    /// Any other group-API response with an error (JoinGroup, SyncGroup, LeaveGroup,
    /// OffsetCommit).
    OtherError,
}

impl GroupEvent {
    /// All rows, top to bottom.
    pub const ALL: [GroupEvent; 6] = [
        GroupEvent::Join,
        GroupEvent::Sync,
        GroupEvent::HeartbeatError,
        GroupEvent::Leave,
        GroupEvent::ConsumerHeartbeatError,
        GroupEvent::OtherError,
    ];

    /// The row's label.
    pub fn label(self) -> &'static str {
        match self {
            GroupEvent::Join => "JoinGroup",
            GroupEvent::Sync => "SyncGroup",
            GroupEvent::HeartbeatError => "Heartbeat error",
            GroupEvent::Leave => "LeaveGroup",
            GroupEvent::ConsumerHeartbeatError => "ConsumerGroupHeartbeat error",
            GroupEvent::OtherError => "other group error",
        }
    }
}

/// What a partition entry of a message adds to its topic's row.
#[derive(Clone, Debug, Default)]
pub struct TopicPart {
    /// The topic's name, else its id.
    pub topic: String,
    /// The partition index.
    pub partition: i64,
    /// Record bytes in a Produce request (produced) or a Fetch response (fetched).
    pub bytes: u64,
    /// Records in them.
    pub records: u64,
    /// A non-zero error code's name in the entry.
    pub error: Option<String>,
}

/// What one message contributes to the report, owned (taken on a worker thread).
#[derive(Clone, Debug)]
pub struct Fact {
    /// The display filter kept it (else only its place in the numbering counts).
    pub pass: bool,
    /// What `kwire stats` counts of it.
    pub item: Item,
    /// Capture time, nanoseconds since the epoch.
    pub time_ns: i64,
    /// Request or response.
    pub direction: Direction,
    /// The header's api_key (for a response, its request's); negative for a SASL token.
    pub api_key: i16,
    /// The api_version.
    pub api_version: i16,
    /// The API's name (`api_key N` when the schema has none).
    pub api_name: String,
    /// The layout was guessed (a response whose request is not in the capture).
    pub guessed: bool,
    /// Frame size in bytes, size prefix included.
    pub size: u64,
    /// For a paired response: nanoseconds since its request.
    pub latency_ns: Option<u64>,
    /// The connection's number in its capture.
    pub connection: u32,
    /// The header's correlation_id.
    pub correlation_id: Option<i32>,
    /// A request's client_id.
    pub client_id: Option<String>,
    /// An ApiVersions request's ClientSoftwareName and ClientSoftwareVersion (v3+, KIP-511).
    pub software: Option<(String, String)>,
    /// Error names of a response's non-zero error codes (`code N` for an unknown code).
    pub errors: Vec<String>,
    /// Decode errors in the tree.
    pub decode_errors: usize,
    /// The frame was cut short.
    pub incomplete: bool,
    /// Its partition entries.
    pub parts: Vec<TopicPart>,
    /// A group event, with the request's GroupId (or the response's error).
    pub group: Option<(GroupEvent, Option<String>)>,
    /// The schema release its definition comes from.
    pub release: Option<String>,
}

fn str_field(m: &Message<'_>, name: &str) -> Option<String> {
    match m.tree.find(name).map(|n| &n.value) {
        Some(Value::Str(s)) => Some(bounded_name(s)),
        _ => None,
    }
}

impl Fact {
    /// The facts of message `m` (context `ctx`); `pass`: whether `-Y` keeps it.
    pub fn of(m: &Message<'_>, ctx: &Context, pass: bool) -> Fact {
        let req = m.direction == Direction::Request;
        let mut errors = Vec::new();
        if !req && m.api_key >= 0 {
            m.tree.walk(&mut |n, _| {
                if let Some((code, name)) = error_code(n) {
                    errors.push(name.map_or_else(|| format!("code {code}"), str::to_string));
                }
            });
        }
        let produce = m.api_key == 0 && req;
        let fetch = m.api_key == 1 && !req;
        let parts = if pass && m.api_key >= 0 {
            crate::export::rows::partition_rows(m, None, false)
                .into_iter()
                .filter_map(|p| {
                    let topic = p.topic.as_ref().or(p.topic_id.as_ref())?;
                    let topic = bounded_name(topic);
                    let (bytes, records) = match (&p.records, produce || fetch) {
                        (Some(r), true) => (r.bytes.max(0) as u64, r.records.max(0) as u64),
                        _ => (0, 0),
                    };
                    Some(TopicPart {
                        topic,
                        partition: p.partition,
                        bytes,
                        records,
                        error: p.error_code.filter(|(c, _)| *c != 0).map(|(_, n)| n),
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let group = match (m.api_key, req) {
            (11, true) => Some(GroupEvent::Join),
            (14, true) => Some(GroupEvent::Sync),
            (13, true) => Some(GroupEvent::Leave),
            (12, false) if !errors.is_empty() => Some(GroupEvent::HeartbeatError),
            (68, false) if !errors.is_empty() => Some(GroupEvent::ConsumerHeartbeatError),
            (8 | 11 | 13 | 14, false) if !errors.is_empty() => Some(GroupEvent::OtherError),
            _ => None,
        }
        .map(|e| {
            let what = if req {
                str_field(m, "GroupId")
            } else {
                errors.first().cloned()
            };
            (e, what)
        });
        let software = (req && m.api_key == 18)
            .then(|| {
                Some((
                    str_field(m, "ClientSoftwareName")?,
                    str_field(m, "ClientSoftwareVersion").unwrap_or_default(),
                ))
            })
            .flatten();
        Fact {
            pass,
            item: Item::of(m, ctx),
            time_ns: ctx
                .time
                .0
                .saturating_mul(1_000_000_000)
                .saturating_add(i64::from(ctx.time.1)),
            direction: m.direction,
            api_key: m.api_key,
            api_version: m.api_version,
            api_name: m
                .api_name
                .map_or_else(|| format!("api_key {}", m.api_key), str::to_string),
            guessed: m.guess.is_some(),
            size: m.size as u64,
            latency_ns: ctx.latency.map(|l| l.as_nanos() as u64),
            connection: ctx.connection,
            correlation_id: m.correlation_id,
            client_id: if req { str_field(m, "client_id") } else { None },
            software,
            errors,
            decode_errors: m.error_count(),
            incomplete: ctx.incomplete,
            parts,
            group,
            release: m.schema_release.map(str::to_string),
        }
    }
}

/// A log-scale histogram of latencies: four bins per power of two (bin edges within 19% of each other, so a quantile read from it is within 9%).
#[derive(Clone, Debug, Default)]
pub struct Hist {
    bins: Vec<u32>,
    /// Values added.
    pub n: u64,
}

fn bin(ns: u64) -> usize {
    (((ns.max(1) as f64).log2() * BINS_PER_OCTAVE) as usize).min(BINS - 1)
}

impl Hist {
    /// Adds one latency in nanoseconds.
    pub fn add(&mut self, ns: u64) {
        if self.bins.is_empty() {
            self.bins = vec![0; BINS];
        }
        let b = bin(ns);
        self.bins[b] = self.bins[b].saturating_add(1);
        self.n += 1;
    }

    fn merge(&mut self, o: &Hist) {
        if o.bins.is_empty() {
            return;
        }
        if self.bins.is_empty() {
            self.bins = vec![0; BINS];
        }
        for (a, b) in self.bins.iter_mut().zip(&o.bins) {
            *a = a.saturating_add(*b);
        }
        self.n += o.n;
    }

    /// The nearest-rank `q`-quantile in nanoseconds, as the middle of its bin (within
    /// 9% of the value: a bin spans a factor of 2^(1/4)); `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        for (i, c) in self.bins.iter().enumerate() {
            seen += u64::from(*c);
            if seen >= rank {
                return Some(2f64.powf((i as f64 + 0.5) / BINS_PER_OCTAVE));
            }
        }
        None
    }
}

/// One time bucket.
#[derive(Clone, Debug, Default)]
pub struct Bucket {
    /// Per api_key: messages, and the latencies of its paired responses.
    pub apis: BTreeMap<i16, (u64, Hist)>,
    /// Per error name: responses carrying it (each error code field counts).
    pub errors: BTreeMap<String, u64>,
    /// Per topic (those of [`Gather::topics`], the rest as [`OTHER_TOPICS`]): record
    /// bytes produced and fetched.
    pub topics: BTreeMap<std::sync::Arc<str>, (u64, u64)>,
}

impl Bucket {
    fn merge(&mut self, o: Bucket) {
        for (k, (n, h)) in o.apis {
            let e = self.apis.entry(k).or_default();
            e.0 += n;
            e.1.merge(&h);
        }
        for (k, n) in o.errors {
            *self.errors.entry(k).or_default() += n;
        }
        for (k, (p, f)) in o.topics {
            let e = self.topics.entry(k).or_default();
            e.0 += p;
            e.1 += f;
        }
    }
}

/// A slow response.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Slow {
    /// Nanoseconds from request to response.
    pub latency_ns: u64,
    /// The response.
    pub at: MsgRef,
    /// Capture time of the response, ns since the epoch.
    pub time_ns: i64,
    /// The API and version.
    pub api: (i16, i16),
    /// Its name.
    pub api_name: String,
    /// Connection and correlation_id.
    pub connection: u32,
    /// The correlation_id.
    pub correlation_id: Option<i32>,
    /// The response's error names.
    pub errors: Vec<String>,
}

/// One topic's row.
#[derive(Clone, Debug, Default)]
pub struct TopicRow {
    /// Produce-request record bytes and records.
    pub produced: (u64, u64),
    /// Fetch-response record bytes and records.
    pub fetched: (u64, u64),
    /// Partitions seen (up to 10 000).
    pub partitions: BTreeSet<i64>,
    /// Partition entries with a non-zero error code.
    pub errors: u64,
    /// Messages that name it.
    pub messages: u64,
}

/// One client's row (by client_id).
#[derive(Clone, Debug, Default)]
pub struct ClientRow {
    /// Software names and versions its connections gave in ApiVersions (KIP-511).
    pub software: BTreeSet<(String, String)>,
    /// Connections whose requests carry this client_id.
    pub connections: BTreeSet<MsgRef>,
    /// Requests.
    pub requests: u64,
    /// Request bytes.
    pub bytes: u64,
    /// Error names in the responses to its requests.
    pub errors: u64,
}

/// One connection's extra facts (the rest are in [`Stats::connections`]).
#[derive(Clone, Debug, Default)]
pub struct ConnRow {
    /// First and last message times, ns since the epoch.
    pub span: (i64, i64),
    /// Request and response bytes.
    pub bytes: (u64, u64),
    /// The ApiVersions software name and version.
    pub software: Option<(String, String)>,
    /// Error names in its responses.
    pub errors: u64,
}

/// One error name's row.
#[derive(Clone, Debug, Default)]
pub struct ErrorRow {
    /// Error code fields with this name.
    pub count: u64,
    /// The APIs it came in.
    pub apis: BTreeSet<String>,
    /// The first response carrying it.
    pub first: Option<MsgRef>,
}

/// A group event on the timeline.
#[derive(Clone, Debug)]
pub struct Event {
    /// Which row.
    pub kind: GroupEvent,
    /// ns since the epoch.
    pub time_ns: i64,
    /// The GroupId of a request, the error of a response.
    pub what: Option<String>,
    /// The message.
    pub at: MsgRef,
    /// Its connection.
    pub connection: u32,
}

/// An error response kept for the error table.
#[derive(Clone, Debug)]
pub struct ErrorMsg {
    /// The response.
    pub at: MsgRef,
    /// Its time.
    pub time_ns: i64,
    /// API name and version.
    pub api: String,
    /// Its error names, in tree order.
    pub errors: Vec<String>,
    /// Latency, if paired.
    pub latency_ns: Option<u64>,
    /// Connection.
    pub connection: u32,
}

/// Everything the report is made of, added message by message in capture order.
#[derive(Debug, Default)]
pub struct Gather {
    /// What `kwire stats` counts (the same code, so the numbers agree).
    pub stats: Stats,
    /// The capture now being added (0-based).
    pub capture: u32,
    /// Index of the next message of the current capture.
    pub next: u64,
    /// Messages the filter kept.
    pub messages: u64,
    /// Messages read (kept or not).
    pub read: u64,
    /// Requests and responses kept.
    pub requests: u64,
    /// Responses kept.
    pub responses: u64,
    /// Bytes client to broker and broker to client (frames, size prefix included).
    pub bytes: (u64, u64),
    /// Messages with decode errors, and incomplete ones.
    pub decode_errors: u64,
    /// Frames cut short.
    pub incomplete: u64,
    /// Earliest and latest message time, ns since the epoch.
    pub span: Option<(i64, i64)>,
    /// Bucket 0's start, ns since the epoch (the first message kept).
    pub t0: Option<i64>,
    /// A bucket's width, ns (doubles as the capture grows).
    pub width_ns: i64,
    /// The buckets.
    pub buckets: Vec<Bucket>,
    /// Latencies per api_key over the whole report (for the plots' y range).
    pub api_names: BTreeMap<i16, String>,
    slow: BinaryHeap<Reverse<Slow>>,
    /// Error responses (the first [`ERRORS_KEEP`]).
    pub error_msgs: Vec<ErrorMsg>,
    /// Error responses in all.
    pub error_responses: u64,
    /// Per error name.
    pub error_names: BTreeMap<String, ErrorRow>,
    /// Per topic (up to [`ROWS_KEEP`]).
    pub topics: BTreeMap<std::sync::Arc<str>, TopicRow>,
    /// Topics past the cap.
    pub topics_dropped: u64,
    /// Per client_id (`""`: none), up to [`ROWS_KEEP`].
    pub clients: BTreeMap<String, ClientRow>,
    /// Per connection (capture, id).
    pub conns: BTreeMap<MsgRef, ConnRow>,
    /// client_id of each connection (for its responses' errors).
    conn_client: BTreeMap<MsgRef, String>,
    /// Group events (the first [`EVENTS_KEEP`]).
    pub events: Vec<Event>,
    /// Group events in all.
    pub events_total: u64,
    /// The first request of each (api_key, api_version), for its page.
    pub first_of: BTreeMap<(i16, i16), MsgRef>,
    /// Schema releases the messages' definitions came from.
    pub releases: BTreeSet<String>,
    /// Partitions counted over all topic rows (at most [`ALL_PARTITIONS_KEEP`]).
    partitions: usize,
    /// Connections listed over all client rows (at most [`CLIENT_CONNECTIONS_KEEP`]).
    client_connections: usize,
    /// Error code fields counted as [`OTHER_ERRORS`].
    pub errors_folded: u64,
    /// Messages counted under [`OTHER_API_KEYS`] in the plots.
    pub api_keys_folded: u64,
    /// Requests of (api_key, api_version) pairs past [`FIRST_OF_KEEP`] (those pairs get no
    /// first-request page).
    pub first_of_folded: u64,
    /// Requests whose client_id is past the first [`ROWS_KEEP`] (no client row).
    pub clients_folded: u64,
}

impl Gather {
    /// An empty report.
    pub fn new() -> Gather {
        Gather {
            width_ns: 10_000_000,
            buckets: vec![Bucket::default(); BUCKETS],
            ..Gather::default()
        }
    }

    /// Starts the next capture (message numbering restarts at 0).
    pub fn next_capture(&mut self, ordinal: u32) {
        self.capture = ordinal;
        self.stats.capture = ordinal;
        self.next = 0;
    }

    /// The bucket of time `t` (ns since the epoch), widening the buckets as needed.
    fn bucket(&mut self, t: i64) -> &mut Bucket {
        let t0 = *self.t0.get_or_insert(t);
        let off = t.saturating_sub(t0).max(0);
        while off / self.width_ns >= BUCKETS as i64 {
            let old = std::mem::take(&mut self.buckets);
            let mut merged = Vec::with_capacity(BUCKETS);
            let mut it = old.into_iter();
            while let Some(mut a) = it.next() {
                if let Some(b) = it.next() {
                    a.merge(b);
                }
                merged.push(a);
            }
            merged.resize(BUCKETS, Bucket::default());
            self.buckets = merged;
            self.width_ns *= 2;
        }
        let i = (off / self.width_ns) as usize;
        &mut self.buckets[i]
    }

    /// Adds one message (every message, in capture order: a message the filter did not
    /// keep only takes its number).
    pub fn add(&mut self, f: Fact) {
        let at = (self.capture, self.next);
        self.next += 1;
        self.read += 1;
        if !f.pass {
            return;
        }
        self.stats.add_item(f.item);
        self.messages += 1;
        let req = f.direction == Direction::Request;
        if req {
            self.requests += 1;
            self.bytes.0 += f.size;
        } else {
            self.responses += 1;
            self.bytes.1 += f.size;
        }
        self.decode_errors += u64::from(f.decode_errors > 0);
        self.incomplete += u64::from(f.incomplete);
        let t = f.time_ns;
        self.span = Some(match self.span {
            Some((a, b)) => (a.min(t), b.max(t)),
            None => (t, t),
        });
        if let Some(r) = &f.release {
            if !self.releases.contains(r) {
                self.releases.insert(r.clone());
            }
        }
        let counted = f.api_key >= 0 && !f.guessed;
        let mut plotted_key = if f.api_key >= 0 { f.api_key } else { -1 };
        if counted {
            if self.api_names.len() < API_KEYS_KEEP || self.api_names.contains_key(&f.api_key) {
                self.api_names
                    .entry(f.api_key)
                    .or_insert_with(|| f.api_name.clone());
            } else {
                plotted_key = OTHER_API_KEYS;
                self.api_keys_folded += 1;
            }
            let k = (f.api_key, f.api_version);
            if req && !self.first_of.contains_key(&k) {
                if self.first_of.len() < FIRST_OF_KEEP {
                    self.first_of.insert(k, at);
                } else {
                    self.first_of_folded += 1;
                }
            }
        }
        // Connection and client rows.
        let ck = (self.capture, u64::from(f.connection));
        let conn_known = self.conns.contains_key(&ck);
        if conn_known || self.conns.len() < ROWS_KEEP {
            let c = self.conns.entry(ck).or_default();
            if !conn_known {
                c.span = (t, t);
            }
            c.span = (c.span.0.min(t), c.span.1.max(t));
            if req {
                c.bytes.0 += f.size;
            } else {
                c.bytes.1 += f.size;
            }
            if c.software.is_none() {
                c.software.clone_from(&f.software);
            }
            c.errors += f.errors.len() as u64;
        }
        if req {
            let id = f.client_id.clone().unwrap_or_default();
            if self.conn_client.len() < CONN_CLIENTS_KEEP || self.conn_client.contains_key(&ck) {
                self.conn_client.entry(ck).or_insert_with(|| id.clone());
            }
            let known = self.clients.contains_key(&id);
            if known || self.clients.len() < ROWS_KEEP {
                let cl = self.clients.entry(id).or_default();
                cl.requests += 1;
                cl.bytes += f.size;
                if cl.connections.len() < ROWS_KEEP
                    && self.client_connections < CLIENT_CONNECTIONS_KEEP
                    && cl.connections.insert(ck)
                {
                    self.client_connections += 1;
                }
                if let Some(s) = &f.software {
                    if cl.software.len() < 16 {
                        cl.software.insert(s.clone());
                    }
                }
            } else {
                self.clients_folded += 1;
            }
        } else if !f.errors.is_empty() {
            if let Some(cl) = self
                .conn_client
                .get(&ck)
                .and_then(|id| self.clients.get_mut(id))
            {
                cl.errors += f.errors.len() as u64;
            }
        }
        // Errors: past ERROR_NAMES_KEEP names, the rest count as one row.
        let mut errors = f.errors;
        for e in &mut errors {
            if self.error_names.len() >= ERROR_NAMES_KEEP && !self.error_names.contains_key(e) {
                *e = OTHER_ERRORS.to_string();
                self.errors_folded += 1;
            }
        }
        // A message keeps its first 16 error names in the lists of messages.
        let listed = || errors.iter().take(16).cloned().collect::<Vec<String>>();
        if !errors.is_empty() {
            self.error_responses += 1;
            for e in &errors {
                let r = self.error_names.entry(e.clone()).or_default();
                r.count += 1;
                if r.apis.len() < 32 && !r.apis.contains(&f.api_name) {
                    r.apis.insert(f.api_name.clone());
                }
                r.first.get_or_insert(at);
            }
            if self.error_msgs.len() < ERRORS_KEEP {
                self.error_msgs.push(ErrorMsg {
                    at,
                    time_ns: t,
                    api: format!("{} v{}", f.api_name, f.api_version),
                    errors: listed(),
                    latency_ns: f.latency_ns,
                    connection: f.connection,
                });
            }
        }
        // Topics: past ROWS_KEEP, the plots count the rest as one topic.
        let mut plotted: Vec<(std::sync::Arc<str>, u64)> = Vec::new();
        for p in &f.parts {
            let known = self
                .topics
                .get_key_value(p.topic.as_str())
                .map(|(k, _)| k.clone());
            if known.is_none() && self.topics.len() >= ROWS_KEEP {
                self.topics_dropped += 1;
                plotted.push((OTHER_TOPICS.into(), p.bytes));
                continue;
            }
            let name = known.unwrap_or_else(|| p.topic.as_str().into());
            plotted.push((name.clone(), p.bytes));
            let row = self.topics.entry(name).or_default();
            if f.api_key == 0 {
                row.produced.0 += p.bytes;
                row.produced.1 += p.records;
            } else if f.api_key == 1 {
                row.fetched.0 += p.bytes;
                row.fetched.1 += p.records;
            }
            if row.partitions.len() < PARTITIONS_KEEP
                && self.partitions < ALL_PARTITIONS_KEEP
                && row.partitions.insert(p.partition)
            {
                self.partitions += 1;
            }
            row.errors += u64::from(p.error.is_some());
        }
        let mut named: Vec<&str> = f.parts.iter().map(|p| p.topic.as_str()).collect();
        named.sort_unstable();
        named.dedup();
        for n in named {
            if let Some(r) = self.topics.get_mut(n) {
                r.messages += 1;
            }
        }
        // Group events.
        if let Some((kind, what)) = &f.group {
            self.events_total += 1;
            if self.events.len() < EVENTS_KEEP {
                self.events.push(Event {
                    kind: *kind,
                    time_ns: t,
                    what: what.clone(),
                    at,
                    connection: f.connection,
                });
            }
        }
        // Slowest.
        if let (Some(l), false, true) = (f.latency_ns, req, counted) {
            let s = Slow {
                latency_ns: l,
                at,
                time_ns: t,
                api: (f.api_key, f.api_version),
                api_name: f.api_name.clone(),
                connection: f.connection,
                correlation_id: f.correlation_id,
                errors: listed(),
            };
            if self.slow.len() < SLOW_KEEP {
                self.slow.push(Reverse(s));
            } else if self.slow.peek().is_some_and(|m| m.0.latency_ns < l) {
                self.slow.pop();
                self.slow.push(Reverse(s));
            }
        }
        // The time bucket.
        let key = plotted_key;
        let latency = f.latency_ns.filter(|_| counted);
        let (prod, fetch) = (f.api_key == 0 && req, f.api_key == 1 && !req);
        let b = self.bucket(t);
        let e = b.apis.entry(key).or_default();
        e.0 += 1;
        if let Some(l) = latency {
            e.1.add(l);
        }
        for name in errors {
            *b.errors.entry(name).or_default() += 1;
        }
        if prod || fetch {
            for (topic, bytes) in plotted {
                let e = b.topics.entry(topic).or_default();
                if prod {
                    e.0 += bytes;
                } else {
                    e.1 += bytes;
                }
            }
        }
    }

    /// Ends the gathering: sorts each API's latencies in place (the tables and plots then
    /// read quantiles without copying them).
    pub fn finish(&mut self) {
        self.stats.finish();
    }

    /// What was counted without a row or line of its own, past the caps that keep the
    /// report bounded (this module's and [`Stats::folded`]), in words; empty when
    /// nothing was.
    pub fn folded(&self) -> Vec<String> {
        let mut v = self.stats.folded();
        let mut say = |n: u64, what: String| {
            if n > 0 {
                v.push(format!("{n} {what}"));
            }
        };
        say(
            self.topics_dropped,
            format!("partition entries of topics past the first {ROWS_KEEP} are in no topic row (plotted as {OTHER_TOPICS})"),
        );
        say(
            self.clients_folded,
            format!("requests of client_ids past the first {ROWS_KEEP} are in no client row"),
        );
        say(
            self.errors_folded,
            format!("error code fields with names past the first {ERROR_NAMES_KEEP} are counted as {OTHER_ERRORS}"),
        );
        say(
            self.api_keys_folded,
            format!("messages of api_keys past the first {API_KEYS_KEEP} are plotted as (other api_keys)"),
        );
        say(
            self.first_of_folded,
            format!("requests of (api_key, api_version) pairs past the first {FIRST_OF_KEEP} have no first-request page"),
        );
        if self.partitions >= ALL_PARTITIONS_KEEP {
            v.push(format!(
                "partitions are counted up to {ALL_PARTITIONS_KEEP} over all topics"
            ));
        }
        if self.client_connections >= CLIENT_CONNECTIONS_KEEP {
            v.push(format!(
                "client rows list up to {CLIENT_CONNECTIONS_KEEP} connections in all"
            ));
        }
        v
    }

    /// The slowest responses, slowest first.
    pub fn slowest(&self) -> Vec<Slow> {
        let mut v: Vec<Slow> = self.slow.iter().map(|r| r.0.clone()).collect();
        v.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.at.cmp(&b.at)));
        v
    }

    /// How many buckets hold data (the last one with any message, plus one).
    pub fn used_buckets(&self) -> usize {
        match self.span {
            Some((_, hi)) => {
                let t0 = self.t0.unwrap_or(hi);
                ((hi.saturating_sub(t0).max(0) / self.width_ns) as usize + 1).min(BUCKETS)
            }
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_a_bin() {
        let mut h = Hist::default();
        for v in 1..=1000u64 {
            h.add(v * 1000);
        }
        let p50 = h.quantile(0.5).unwrap();
        assert!((p50 / 500_000.0 - 1.0).abs() < 0.1, "{p50}");
        let p99 = h.quantile(0.99).unwrap();
        assert!((p99 / 990_000.0 - 1.0).abs() < 0.1, "{p99}");
        assert_eq!(Hist::default().quantile(0.5), None);
    }

    #[test]
    fn buckets_double_and_keep_their_counts() {
        let mut g = Gather::new();
        let t0 = 1_700_000_000_000_000_000i64;
        for i in 0..1000i64 {
            let b = g.bucket(t0 + i * 50_000_000);
            b.apis.entry(3).or_default().0 += 1;
        }
        let total: u64 = g
            .buckets
            .iter()
            .map(|b| b.apis.get(&3).map_or(0, |x| x.0))
            .sum();
        assert_eq!(total, 1000);
        // 50 s over 200 buckets of a power-of-two multiple of 10 ms.
        assert_eq!(g.width_ns, 320_000_000);
    }
}
