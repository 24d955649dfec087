//! A capture session: turns the input layer's frames into decoded messages, pairing each
//! response with its request (by connection and correlation_id) so it decodes with the
//! request's api_key and api_version, and carrying the group protocol type from
//! JoinGroup/SyncGroup requests to their responses.
//!
//! Memory for pairing is bounded by [`Pairer`]'s caps, per connection and over all
//! connections.
//!
//! Frames without a capture (`kwire decode` of hex, base64 or raw frames) go through the
//! same session: [`Session::for_dump`] pairs them by stream and correlation_id with a
//! queue per correlation_id (a dump of several connections written as one stream reuses
//! them), and [`Session::decode_loose`] decodes each with what its input says of it.

use crate::decode::guess::{clean_request, Decided, GuessContext, Guesser};
use crate::decode::internal_topics::InternalTopic;
use crate::decode::{self, DecodeOptions, Known, Layout};
use crate::input::{
    self, DefaultPlausibility, Frame, FrameKind, FramePlausibility, PairedRequest, Pairer,
};
use crate::schema::Schema;
use crate::tree::{Buffers, Direction, Message, Node, Value};
use foldhash::{HashMap, HashMapExt};
use std::sync::Arc;
use std::time::Duration;

/// Where a message came from, when it came from a capture.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    /// Numbers of the first and last capture frames that carried the message (1-based,
    /// as Wireshark counts).
    pub frames: (u64, u64),
    /// Capture time of the first frame: seconds and nanoseconds since the Unix epoch.
    pub time: (i64, u32),
    /// Source endpoint (`10.0.0.1:51234`).
    pub src: String,
    /// Destination endpoint (`10.0.0.2:9092`).
    pub dst: String,
    /// The connection's number in the capture.
    pub connection: u32,
    /// For a response: the time since its request.
    pub latency: Option<Duration>,
    /// The message was cut short (the capture ended or lost segments).
    pub incomplete: bool,
    /// The capture file it came from, as given on the command line, when the command
    /// reads several (`kwire read A B`); `None` for one capture.
    pub capture: Option<std::sync::Arc<str>>,
    /// Capture time of the first message read (of the first capture, when several are
    /// read): what `-t r` counts from. Set by the reader in capture order.
    pub first_time: Option<(i64, u32)>,
    /// Capture time of the message read before this one (`-t d`); `None` for the first.
    pub previous_time: Option<(i64, u32)>,
    /// For a message decrypted from TLS: the session (version, suite, SNI) and the
    /// records that carried it.
    pub tls: Option<crate::input::tls::TlsFrameInfo>,
}

/// `addr` as its `Display` writes it (`10.0.0.1:51234`, `[::1]:9092`); IPv4 written
/// digit by digit into one allocation of the right size (every message's context has
/// two of these).
fn endpoint_text(addr: &std::net::SocketAddr) -> String {
    let std::net::SocketAddr::V4(a) = addr else {
        return addr.to_string();
    };
    let mut s = String::with_capacity(21);
    let mut num = itoa::Buffer::new();
    for (i, o) in a.ip().octets().iter().enumerate() {
        if i > 0 {
            s.push('.');
        }
        s.push_str(num.format(*o));
    }
    s.push(':');
    s.push_str(num.format(a.port()));
    s
}

/// Pairing state over one capture.
pub struct Session<'s> {
    /// The schema stack.
    pub schema: &'s Schema,
    /// Decoder limits.
    pub opts: &'s DecodeOptions,
    /// Requests waiting for their responses.
    pub pairer: Pairer,
    /// The protocol type of JoinGroup/SyncGroup requests waiting, by (connection,
    /// correlation_id, the request's frame number: [`PairedRequest::frame`]).
    protocol_types: HashMap<(u32, i32, u64), String>,
    /// Topic ids learned from responses that carry both a name and an id (Metadata,
    /// CreateTopics, DescribeTopicPartitions...), so later messages that carry only the
    /// id (Fetch v13+, Produce v13+) can show the name.
    topic_names: TopicNames,
    /// The ids of internal topics among them (few), handed to the decoder so records of
    /// `__consumer_offsets` and the like decode where only the id names the topic.
    internal_ids: Vec<(uuid::Uuid, InternalTopic)>,
    /// [`Facts`] per (request?, api_key, api_version), as definitions are met.
    facts: HashMap<(bool, i16, i16), Facts>,
    /// The arena of the messages [`Session::prepare`] decodes, reused.
    scratch: Buffers,
    /// Notices raised while pairing (oldest pending request dropped).
    pub notices: Vec<input::Notice>,
    /// Per connection: the (api_key, api_version) of its recent requests, oldest first
    /// (the context of ranked guesses), and the lowest request correlation_id seen.
    requests_seen: HashMap<u32, (Vec<(i16, i16)>, i32)>,
    /// The response layouts, listed on the first response that needs a guess.
    guesser: Option<Arc<Guesser>>,
    /// Responses whose request is not in the capture because it was sent before the
    /// capture began: their correlation_id is below every request seen on the connection
    /// (clients number requests upwards), or no request was seen there before them.
    pub answers_before_start: u64,
    /// Responses whose request is not in the capture for another reason (lost in a gap,
    /// a correlation_id out of the connection's order).
    pub answers_unpaired: u64,
    /// The number the next requests are remembered under for pairing
    /// ([`PairedRequest::tag`]): the index's message number.
    pub(crate) tag: u64,
    /// The request the last response prepared or decoded was paired with.
    pub(crate) last_paired: Option<PairedRequest>,
    /// When set, every topic name learned (or renamed) is added here too, in order.
    pub(crate) learned: Option<Vec<(uuid::Uuid, String)>>,
    /// [`Session::prepare`] hands the guess it makes of a response without its request
    /// (to learn its topic names) over in the [`Prepared`], so that
    /// [`Prepared::decode`] under the same limits does not make it again: set where the
    /// prepared frames are decoded soon after on other threads, and held for a batch
    /// (a few dozen bytes a guessed response); off by default, as where prepared frames
    /// are kept by the hundred thousand.
    pub hand_over_guesses: bool,
}

/// `k` (what a paired response knows) with the layout and internal topic ids of `base`.
fn with_layout(mut k: Known, base: &Known) -> Known {
    k.layout = base.layout;
    k.hints
        .internal_topic_ids
        .clone_from(&base.hints.internal_topic_ids);
    k
}

/// Distinct (api_key, api_version) pairs remembered per connection.
const SEEN_PER_CONNECTION: usize = 32;

fn acks_zero(m: &Message<'_>) -> bool {
    m.api_key == 0
        && m.tree
            .find("Acks")
            .is_some_and(|n| n.value == Value::Int(0))
}

/// Frame-start plausibility from the schema: a known api_key at a version some release
/// defines, a sane correlation_id and client_id.
pub struct SchemaPlausibility<'s>(pub &'s Schema);

impl FramePlausibility for SchemaPlausibility<'_> {
    fn plausible_request(&self, b: &[u8]) -> bool {
        input::plausible_request_header(b, |key, ver| self.0.request(key, ver).is_some(), 4096)
    }
    fn plausible_response(&self, b: &[u8]) -> bool {
        DefaultPlausibility.plausible_response(b)
    }
}

/// Most topic ids remembered at once.
const MAX_TOPIC_IDS: usize = 100_000;

/// Topic names by topic id, shared with the frames in flight on worker threads (see
/// [`Session::prepare`]): copied only when a frame adds a name while older frames still
/// hold the previous map.
type TopicNames = Arc<HashMap<uuid::Uuid, String>>;

/// Annotates every non-zero `TopicId` whose name is known.
fn name_topic_ids<'a>(n: &mut Node<'a>, names: &HashMap<uuid::Uuid, String>, arena: &'a Buffers) {
    if names.is_empty() {
        return;
    }
    if let Value::Uuid(u) = n.value {
        if n.name == "TopicId" && n.annotation.is_none() {
            if let Some(name) = names.get(&u) {
                n.annotation = Some(arena.fmt(format_args!("topic {name}")));
            }
        }
    }
    for c in &mut n.children {
        name_topic_ids(c, names, arena);
    }
}

/// The topic (name, id) pairs of a tree: a `Name`/`Topic`/`TopicName` string beside a
/// non-nil `TopicId` among the children of one node.
fn topic_ids<'a>(n: &Node<'a>, out: &mut Vec<(uuid::Uuid, &'a str)>) {
    let mut name = None;
    let mut id = None;
    for c in &n.children {
        match (c.name, &c.value) {
            ("Name" | "Topic" | "TopicName", Value::Str(s)) if !s.is_empty() => name = Some(*s),
            ("TopicId", Value::Uuid(u)) if !u.is_nil() => id = Some(*u),
            _ => {}
        }
    }
    if let (Some(name), Some(id)) = (name, id) {
        out.push((id, name));
    }
    for c in &n.children {
        topic_ids(c, out);
    }
}

/// Which session facts a kind of message can carry, from its definition at its version
/// (see [`Session::prepare`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Facts {
    /// A struct with a topic name beside a `TopicId`: the message can teach topic names.
    topic_names: bool,
    /// A `ProtocolType` field (requests: carried to the response).
    protocol_type: bool,
}

impl Facts {
    /// Every fact: for messages whose tree holds more than their definition says
    /// (nested requests and protocols).
    const ALL: Facts = Facts {
        topic_names: true,
        protocol_type: true,
    };

    fn of_fields(
        def: &crate::schema::MessageDef,
        fields: &[crate::schema::Field],
        version: i16,
        depth: usize,
    ) -> Facts {
        let mut f = Facts::default();
        if depth > 32 {
            return Facts::ALL;
        }
        let (mut name, mut id) = (false, false);
        for x in fields.iter().filter(|x| x.versions.contains(version)) {
            match x.name.as_str() {
                "Name" | "Topic" | "TopicName" => name = true,
                "TopicId" => id = true,
                "ProtocolType" => f.protocol_type = true,
                _ => {}
            }
            if let Some(sn) = x.struct_name() {
                let sub = if x.fields.is_empty() {
                    def.struct_fields(sn).unwrap_or(&[])
                } else {
                    &x.fields
                };
                let g = Facts::of_fields(def, sub, version, depth + 1);
                f.topic_names |= g.topic_names;
                f.protocol_type |= g.protocol_type;
            }
        }
        f.topic_names |= name && id;
        f
    }
}

/// What the guess of a response without its request needs, taken in capture order.
#[derive(Clone, Debug)]
struct Orphan {
    guesser: Arc<Guesser>,
    /// The connection's recent requests, oldest first.
    seen: Vec<(i16, i16)>,
    /// The guess as [`Session::prepare`] made it, when the session hands guesses over
    /// ([`Session::hand_over_guesses`]): a decode under the same limits takes it rather
    /// than guessing again.
    decided: Option<Box<Decided>>,
}

impl Orphan {
    /// The response in `bytes` (laid out as `layout` says) decoded by the best ranked
    /// guess; as raw bytes when no layout fits or the frame is cut short (`incomplete`).
    fn decode<'a>(
        &self,
        schema: &'a Schema,
        opts: &'a DecodeOptions,
        bytes: &'a [u8],
        incomplete: bool,
        layout: Layout,
        arena: &'a Buffers,
    ) -> Message<'a> {
        let raw = Known {
            direction: Direction::Response,
            layout,
            ..Known::request()
        };
        if incomplete {
            // A cut frame fits no layout exactly: it stays raw.
            return decode::decode(schema, opts, arena, bytes, &raw);
        }
        if let Some(d) = self.decided.as_deref().filter(|d| d.holds_for(opts)) {
            return d
                .decode(schema, opts, arena, bytes, layout)
                .unwrap_or_else(|| decode::decode(schema, opts, arena, bytes, &raw));
        }
        let cx = GuessContext { seen: &self.seen };
        self.guesser
            .response(schema, opts, arena, bytes, layout, &cx)
            .unwrap_or_else(|| decode::decode(schema, opts, arena, bytes, &raw))
    }
}

/// Requests of a dump ([`Session::for_dump`]) remembered per (stream, correlation_id) at
/// most: a dump of several connections written as one stream reuses correlation_ids.
pub const DUMP_DEPTH: usize = 64;

/// Requests of a dump ([`Session::for_dump`]) remembered for pairing their responses at
/// most, over all streams; past it the oldest is forgotten (a notice says so).
pub const DUMP_MAX_PENDING: usize = 100_000;

/// What a frame of a dump, not of a capture (`kwire decode`), says of itself: see
/// [`Session::decode_loose`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loose {
    /// The stream it belongs to (a `c>s STREAM OFFSET HEX` line's, a `conn N` title's;
    /// else 0): requests and responses pair within one stream.
    pub connection: u32,
    /// Its number in the input, 1-based ([`PairedRequest::frame`] of a request).
    pub frame: u64,
    /// Its direction when the input says (a `c>s`/`s>c` line, `--kind`); `None`: the
    /// bytes decide (a request that decodes cleanly, else a response).
    pub direction: Option<Direction>,
    /// How its bytes are laid out (size prefix, header).
    pub layout: Layout,
    /// The api_key and api_version to decode it with (`--api-key`, `--api-version`):
    /// then it is not paired.
    pub api: Option<(i16, i16)>,
}

/// What the session's in-order pass ([`Session::prepare`]) hands a frame so that it can
/// be decoded on any thread, in any order, into the message [`Session::decode`] gives.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The frame's capture context (latency included for a paired response).
    pub ctx: Context,
    /// What is known before decoding (a response's request, its protocol type).
    known: Known,
    /// The frame is a raw SASL token in this direction.
    sasl: Option<Direction>,
    /// A response whose request is not in the capture: decoded by a guess.
    orphan: Option<Orphan>,
    /// Topic names learned up to and including this frame.
    names: TopicNames,
}

impl Prepared {
    /// Decodes the frame this was prepared from (`f`: the same frame) with decoder limits
    /// `opts`: the message equals what [`Session::decode`] gives for it in capture order.
    pub fn decode<'a>(
        &self,
        schema: &'a Schema,
        opts: &'a DecodeOptions,
        f: &'a Frame,
        arena: &'a Buffers,
    ) -> Message<'a> {
        if let Some(dir) = self.sasl {
            return decode::sasl_token(arena, &f.bytes, dir);
        }
        let mut m = match &self.orphan {
            Some(o) => o.decode(
                schema,
                opts,
                &f.bytes,
                f.ctx.incomplete,
                Layout::default(),
                arena,
            ),
            None => decode_fast(schema, opts, arena, &f.bytes, &self.known),
        };
        name_topic_ids(&mut m.tree, &self.names, arena);
        m
    }
}

/// A frame of a capture decoded as `opts.detail` asks: at [`decode::Detail::Facts`] by
/// the fact walk ([`decode::facts::decode_facts`]) when it does not give up, else (and
/// at the other levels) by [`decode::decode`].
fn decode_fast<'a>(
    schema: &'a Schema,
    opts: &'a DecodeOptions,
    arena: &'a Buffers,
    frame: &'a [u8],
    known: &Known,
) -> Message<'a> {
    if opts.detail == decode::Detail::Facts {
        if let Some(m) = decode::facts::decode_facts(schema, opts, arena, frame, known) {
            return m;
        }
    }
    decode::decode(schema, opts, arena, frame, known)
}

/// Bytes of a Produce request decoded on the reading thread to find its `Acks` when
/// [`Session::acks_end`] cannot tell where it ends (a longer header or id decodes the
/// whole frame).
const ACKS_PREFIX: usize = 4096;

/// An unsigned varint at `b[*at..]`, moving `*at` past it.
fn uvarint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..5 {
        let x = *b.get(*at)?;
        *at += 1;
        v |= u64::from(x & 0x7f) << (7 * i);
        if x & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl<'s> Session<'s> {
    fn learn_topic_ids(&mut self, n: &Node<'_>) {
        let mut found = Vec::new();
        topic_ids(n, &mut found);
        for (id, name) in found {
            self.learn_topic_id(id, name);
        }
    }

    /// Learns that topic id `id` names topic `name` (from a message, or from what the
    /// index learned before the message it decodes).
    pub(crate) fn learn_topic_id(&mut self, id: uuid::Uuid, name: &str) {
        if self.topic_names.get(&id).map(String::as_str) == Some(name) {
            return;
        }
        if self.topic_names.len() < MAX_TOPIC_IDS || self.topic_names.contains_key(&id) {
            Arc::make_mut(&mut self.topic_names).insert(id, name.to_string());
            if let Some(l) = self.learned.as_mut() {
                l.push((id, name.to_string()));
            }
        }
        if let Some(t) = InternalTopic::from_name(name) {
            if !self.internal_ids.contains(&(id, t)) && self.internal_ids.len() < 64 {
                self.internal_ids.push((id, t));
            }
        }
    }

    /// Remembers a request's API and version for the guesses on its connection.
    pub(crate) fn seen_request(&mut self, conn: u32, corr: i32, k: i16, v: i16) {
        if self.requests_seen.len() >= 100_000 && !self.requests_seen.contains_key(&conn) {
            return;
        }
        let (seen, low) = self
            .requests_seen
            .entry(conn)
            .or_insert_with(|| (Vec::new(), i32::MAX));
        *low = (*low).min(corr);
        seen.retain(|x| *x != (k, v));
        if seen.len() >= SEEN_PER_CONNECTION {
            seen.remove(0);
        }
        seen.push((k, v));
    }

    /// The in-order half of an orphan's decode (a response whose request is not in the
    /// capture, decoded by the best ranked guess: [`crate::decode::guess`]) for a
    /// response of `conn` with `corr`: counts the response and takes what its guess
    /// needs (the layouts, the connection's recent requests).
    fn orphan_context(&mut self, conn: u32, corr: Option<i32>) -> Orphan {
        let before = match (self.requests_seen.get(&conn), corr) {
            (None, _) => true,
            (Some((_, low)), Some(c)) => c < *low,
            (Some(_), None) => false,
        };
        if before {
            self.answers_before_start += 1;
        } else {
            self.answers_unpaired += 1;
        }
        self.guess_context(conn)
    }

    /// The layouts and the recent requests of `conn`: what a guess on it needs.
    fn guess_context(&mut self, conn: u32) -> Orphan {
        let schema = self.schema;
        let guesser = Arc::clone(
            self.guesser
                .get_or_insert_with(|| Arc::new(Guesser::new(schema))),
        );
        let seen = self
            .requests_seen
            .get(&conn)
            .map(|(s, _)| s.clone())
            .unwrap_or_default();
        Orphan {
            guesser,
            seen,
            decided: None,
        }
    }

    /// A new session over `schema` with decoder limits `opts`.
    pub fn new(schema: &'s Schema, opts: &'s DecodeOptions) -> Session<'s> {
        Session {
            schema,
            opts,
            pairer: Pairer::default(),
            protocol_types: HashMap::new(),
            topic_names: Arc::new(HashMap::new()),
            internal_ids: Vec::new(),
            facts: HashMap::new(),
            scratch: Buffers::new(),
            notices: Vec::new(),
            requests_seen: HashMap::new(),
            guesser: None,
            answers_before_start: 0,
            answers_unpaired: 0,
            tag: 0,
            last_paired: None,
            learned: None,
            hand_over_guesses: false,
        }
    }

    /// A new session for frames of a dump, not of a capture (`kwire decode`): a
    /// response pairs with the oldest request of its stream and correlation_id that its
    /// layout fits, of up to [`DUMP_DEPTH`] waiting with it; at most
    /// [`DUMP_MAX_PENDING`] requests wait over all. Decode with
    /// [`Session::decode_loose`].
    pub fn for_dump(schema: &'s Schema, opts: &'s DecodeOptions) -> Session<'s> {
        let mut s = Session::new(schema, opts);
        s.pairer = Pairer::with_total(DUMP_MAX_PENDING, DUMP_MAX_PENDING).with_depth(DUMP_DEPTH);
        s
    }

    /// Uses `g` (listed over this session's schema) for the guesses.
    pub(crate) fn set_guesser(&mut self, g: Arc<Guesser>) {
        self.guesser = Some(g);
    }

    /// The frame's context, direction and what is known before decoding it: for a
    /// response, its request (found and forgotten) and the latency since it.
    fn begin(&mut self, f: &Frame) -> (Context, Direction, Known) {
        let c = &f.ctx;
        let mut ctx = Context {
            frames: (c.first_frame, c.last_frame),
            time: (c.time.secs, c.time.nanos),
            src: endpoint_text(&c.src),
            dst: endpoint_text(&c.dst),
            connection: c.connection,
            latency: None,
            incomplete: c.incomplete,
            capture: None,
            first_time: None,
            previous_time: None,
            tls: c.tls.clone(),
        };
        let dir = if c.direction == input::Direction::ToServer {
            Direction::Request
        } else {
            Direction::Response
        };
        self.last_paired = None;
        if f.kind == FrameKind::SaslToken {
            return (ctx, dir, Known::request());
        }
        let known = if dir == Direction::Request {
            Known::request()
        } else {
            let corr = Pairer::response_correlation(&f.bytes);
            match self.pair(c.connection, corr, |_| false) {
                Some((p, k)) => {
                    let ns = c.time.nanos_since(&p.time).max(0) as u64;
                    ctx.latency = Some(Duration::from_nanos(ns));
                    k
                }
                None => Known {
                    direction: Direction::Response,
                    ..Known::request()
                },
            }
        };
        let mut known = known;
        known
            .hints
            .internal_topic_ids
            .clone_from(&self.internal_ids);
        (ctx, dir, known)
    }

    /// The request of `connection` a response with correlation_id `corr` answers (found
    /// and forgotten: of several waiting, the oldest `fits` says yes to, see
    /// [`Pairer::response_with`]), and what decoding the response knows from it (api_key,
    /// api_version, the protocol type of a JoinGroup/SyncGroup request).
    fn pair(
        &mut self,
        connection: u32,
        corr: Option<i32>,
        fits: impl FnMut(&PairedRequest) -> bool,
    ) -> Option<(PairedRequest, Known)> {
        let corr = corr?;
        let p = self.pairer.response_with(connection, corr, fits)?;
        self.last_paired = Some(p);
        let mut k = Known::response(p.api_key, p.api_version);
        k.hints.protocol_type = self.protocol_types.remove(&(connection, corr, p.frame));
        Some((p, k))
    }

    /// Remembers a decoded request: its protocol type for the response, and the request
    /// itself for pairing (unless it expects no response: Produce with acks=0).
    fn note_request(&mut self, f: &Frame, m: &Message<'_>) {
        let c = &f.ctx;
        self.note_request_at(c.connection, c.last_frame, c.time, m);
    }

    /// [`Session::note_request`] for a request of `connection` at frame number `frame`
    /// and time `time`.
    fn note_request_at(
        &mut self,
        connection: u32,
        frame: u64,
        time: input::Timestamp,
        m: &Message<'_>,
    ) {
        let Some(corr) = m.correlation_id else {
            return;
        };
        // Produce requests carry no ProtocolType: spare the walk over their records.
        let pt = if m.api_key == 0 {
            None
        } else {
            m.tree.find("ProtocolType").map(|n| n.value.clone())
        };
        if let Some(Value::Str(pt)) = pt {
            if self.protocol_types.len() < 100_000 {
                self.protocol_types
                    .insert((connection, corr, frame), pt.to_string());
            }
        }
        let at = (connection, frame, time);
        self.note_pending(at, m.api_key, m.api_version, corr, !acks_zero(m));
    }

    /// Remembers a request of (connection, frame number, time) `at` for pairing and for
    /// the guesses on its connection.
    fn note_pending(
        &mut self,
        at: (u32, u64, input::Timestamp),
        key: i16,
        ver: i16,
        corr: i32,
        expects: bool,
    ) {
        let (connection, frame, time) = at;
        self.seen_request(connection, corr, key, ver);
        if let Some(n) = self
            .pairer
            .request_tagged(connection, corr, key, ver, expects, frame, time, self.tag)
        {
            self.notices.push(n);
        }
    }

    /// Decodes one frame of a dump (`kwire decode`; the session made by
    /// [`Session::for_dump`]), in input order, as [`Session::decode`] does a capture's:
    /// a response decodes with the api_key, api_version and protocol type of the request
    /// it answers (of the requests of its stream waiting with its correlation_id, the
    /// oldest whose response layout decodes it cleanly, else the oldest), one without its
    /// request by the ranked guess with the stream's earlier requests; a Produce request
    /// with acks=0 waits for no response; topic names learned from earlier messages name
    /// the `TopicId`s. A frame of unknown direction (`how.direction` `None`) is a request
    /// when it decodes cleanly as one, else a response (paired, or guessed). With
    /// `how.api`, the frame decodes with that api_key and api_version, unpaired.
    /// Notices (a request forgotten for the cap) go to [`Session::notices`].
    pub fn decode_loose<'a>(
        &mut self,
        bytes: &'a [u8],
        how: &Loose,
        arena: &'a Buffers,
    ) -> Message<'a>
    where
        's: 'a,
    {
        let (schema, opts, layout, conn) = (self.schema, self.opts, how.layout, how.connection);
        self.last_paired = None;
        let mut known = Known {
            direction: how.direction.unwrap_or(Direction::Request),
            api_key: how.api.map(|a| a.0),
            api_version: how.api.map(|a| a.1),
            hints: decode::Hints::default(),
            layout,
        };
        known
            .hints
            .internal_topic_ids
            .clone_from(&self.internal_ids);
        // The correlation_id where a response has it (a frame that may be a response).
        let corr =
            if how.api.is_none() && layout.header && how.direction != Some(Direction::Request) {
                let o = if layout.size_prefix { 4 } else { 0 };
                bytes
                    .get(o..o + 4)
                    .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            } else {
                None
            };
        // Whether the response layout of a request waiting fits the frame cleanly.
        let fits = |p: &PairedRequest| {
            let a = Buffers::new();
            let k = Known {
                layout,
                ..Known::response(p.api_key, p.api_version)
            };
            !decode::decode(schema, opts, &a, bytes, &k).has_problem()
        };
        let mut m = match how.direction {
            _ if how.api.is_some() || !layout.header => {
                decode::decode(schema, opts, arena, bytes, &known)
            }
            Some(Direction::Request) => decode::decode(schema, opts, arena, bytes, &known),
            Some(Direction::Response) => match self.pair(conn, corr, fits) {
                Some((_, k)) => decode::decode(schema, opts, arena, bytes, &with_layout(k, &known)),
                None => {
                    let o = self.orphan_context(conn, corr);
                    o.decode(schema, opts, bytes, false, layout, arena)
                }
            },
            None => {
                let waiting = corr.is_some_and(|c| self.pairer.waiting(conn, c));
                if waiting {
                    // A request whose header reads as a waiting correlation_id stays a
                    // request when it decodes cleanly as one.
                    let r = decode::decode(schema, opts, arena, bytes, &known);
                    if clean_request(schema, &r) {
                        r
                    } else {
                        match self.pair(conn, corr, fits) {
                            Some((_, k)) => {
                                decode::decode(schema, opts, arena, bytes, &with_layout(k, &known))
                            }
                            None => r,
                        }
                    }
                } else {
                    let o = self.guess_context(conn);
                    let cx = GuessContext { seen: &o.seen };
                    o.guesser.either(schema, opts, arena, bytes, layout, &cx)
                }
            }
        };
        self.learn_topic_ids(&m.tree);
        name_topic_ids(&mut m.tree, &self.topic_names, arena);
        if m.direction == Direction::Request {
            self.note_request_at(conn, how.frame, input::Timestamp::default(), &m);
        }
        m
    }

    /// Decodes one frame from the input layer. The message borrows from `f` and `arena`;
    /// the context carries frame numbers, time, endpoints, connection and, for a paired
    /// response, the latency since its request.
    pub fn decode<'a>(&mut self, f: &'a Frame, arena: &'a Buffers) -> (Message<'a>, Context)
    where
        's: 'a,
    {
        let (m, p) = self.decode_prepared(f, arena);
        (m, p.ctx)
    }

    /// [`Session::begin`] for frame `f`, as a [`Prepared`] (nothing decoded yet), and
    /// the frame's direction.
    fn begin_prepared(&mut self, f: &Frame) -> (Prepared, Direction) {
        let (ctx, dir, known) = self.begin(f);
        let p = Prepared {
            ctx,
            known,
            sasl: None,
            orphan: None,
            names: Arc::clone(&self.topic_names),
        };
        (p, dir)
    }

    /// [`Session::decode`], with what decodes the frame again besides: the returned
    /// [`Prepared`] gives the same message with the session's options
    /// ([`Prepared::decode`]), and the message at other options (a whole tree after a
    /// summary one), as [`Session::prepare`]'s would, without the reading thread's
    /// decodes that `prepare` makes to learn topic names.
    pub fn decode_prepared<'a>(
        &mut self,
        f: &'a Frame,
        arena: &'a Buffers,
    ) -> (Message<'a>, Prepared)
    where
        's: 'a,
    {
        let (mut p, dir) = self.begin_prepared(f);
        if f.kind == FrameKind::SaslToken {
            p.sasl = Some(dir);
            return (decode::sasl_token(arena, &f.bytes, dir), p);
        }
        let mut m = if p.known.direction == Direction::Response && p.known.api_key.is_none() {
            // A response whose request is not in the capture: counted (sent before the
            // capture began, or not), and decoded by the best ranked guess, with the
            // connection's requests as context; as raw bytes when no layout fits.
            let o = self.orphan_context(f.ctx.connection, Pairer::response_correlation(&f.bytes));
            let m = o.decode(
                self.schema,
                self.opts,
                &f.bytes,
                f.ctx.incomplete,
                Layout::default(),
                arena,
            );
            p.orphan = Some(o);
            m
        } else {
            decode_fast(self.schema, self.opts, arena, &f.bytes, &p.known)
        };
        self.learn_topic_ids(&m.tree);
        name_topic_ids(&mut m.tree, &self.topic_names, arena);
        if dir == Direction::Request {
            self.note_request(f, &m);
        }
        p.names = Arc::clone(&self.topic_names);
        (m, p)
    }

    /// Where a Produce request's `Acks` field ends in its frame (size prefix included),
    /// read by hand from the header and the fields before it (nullable strings only), so
    /// that the decoder need not walk the records to find it; `None` when the bytes or
    /// the definition are not what that expects. Only a guess at how many bytes to
    /// decode: the decoder's own `Acks` is what counts.
    fn acks_end(&self, b: &[u8], ver: i16) -> Option<usize> {
        let d = self.schema.request(0, ver)?;
        let flexible = d.def.flexible_versions.contains(ver);
        let mut at = 12; // size, api_key, api_version, correlation_id
        let len = i16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]);
        at += 2 + usize::try_from(len.max(0)).ok()?;
        if self.schema.request_header_version(0, ver) >= 2 {
            for _ in 0..uvarint(b, &mut at)? {
                uvarint(b, &mut at)?;
                let size = uvarint(b, &mut at)?;
                at = at.checked_add(usize::try_from(size).ok()?)?;
            }
        }
        for field in d.def.fields.iter().filter(|x| x.versions.contains(ver)) {
            if field.name == "Acks" {
                return Some(at + 2);
            }
            if field.ty != crate::schema::FieldType::Prim(crate::schema::Prim::String) {
                return None;
            }
            if flexible {
                let n = uvarint(b, &mut at)?;
                at = at.checked_add(usize::try_from(n.saturating_sub(1)).ok()?)?;
            } else {
                let n = i16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]);
                at += 2 + usize::try_from(n.max(0)).ok()?;
            }
        }
        None
    }

    /// The facts messages of `(direction, api_key, api_version)` can carry.
    fn facts(&mut self, dir: Direction, key: i16, ver: i16) -> Facts {
        if key == 58 {
            // Envelope carries a whole request: its tree holds more than its definition.
            return Facts::ALL;
        }
        let kind = if dir == Direction::Request {
            crate::schema::MessageKind::Request
        } else {
            crate::schema::MessageKind::Response
        };
        let Some(d) = self.schema.resolve(kind, key, ver) else {
            return Facts::default();
        };
        let schema = self.schema;
        *self
            .facts
            .entry((dir == Direction::Request, key, ver))
            .or_insert_with(|| {
                let mut f = Facts::of_fields(&d.def, &d.def.fields, ver, 0);
                if matches!(key, 11 | 14) {
                    // JoinGroup and SyncGroup carry the consumer protocol's structures in
                    // bytes fields, which the decoder decodes too: any of their versions.
                    for n in ["ConsumerProtocolSubscription", "ConsumerProtocolAssignment"] {
                        for nd in schema.by_name(n) {
                            for v in nd.def.valid_versions.lo..=nd.def.valid_versions.hi {
                                let g = Facts::of_fields(&nd.def, &nd.def.fields, v, 0);
                                f.topic_names |= g.topic_names;
                                f.protocol_type |= g.protocol_type;
                            }
                        }
                    }
                    // Unknown to this schema: assume the worst.
                    if schema.by_name("ConsumerProtocolSubscription").is_empty() {
                        f = Facts::ALL;
                    }
                }
                f
            })
    }

    /// The in-order half of [`Session::decode`], for decoding on other threads: pairs a
    /// response with its request, and learns from the frame what later frames need
    /// (a request's api_key, api_version and correlation_id from its header, a Produce
    /// request's acks, a JoinGroup/SyncGroup request's protocol type, topic names), then
    /// returns what [`Prepared::decode`] needs to decode the frame anywhere. Only the
    /// messages whose definitions can teach topic names or carry a protocol type are
    /// decoded here in full (small: Metadata, CreateTopics, JoinGroup...); a Produce
    /// request decodes its first `ACKS_PREFIX` (4096) bytes; any other frame is not decoded.
    pub fn prepare(&mut self, f: &Frame) -> Prepared {
        let (mut p, dir) = self.begin_prepared(f);
        if f.kind == FrameKind::SaslToken {
            p.sasl = Some(dir);
            return p;
        }
        if dir == Direction::Response && p.known.api_key.is_none() {
            // Without its request, the guess decides what the response is: decoded here
            // too, to learn what it teaches (topic names).
            let mut o =
                self.orphan_context(f.ctx.connection, Pairer::response_correlation(&f.bytes));
            let mut arena = std::mem::take(&mut self.scratch);
            arena.reset();
            let layout = Layout::default();
            let m = o.decode(
                self.schema,
                self.opts,
                &f.bytes,
                f.ctx.incomplete,
                layout,
                &arena,
            );
            self.learn_topic_ids(&m.tree);
            if self.hand_over_guesses && !f.ctx.incomplete {
                o.decided = Some(Box::new(Decided::of(&m, self.opts)));
            }
            drop(m);
            self.scratch = arena;
            p.names = Arc::clone(&self.topic_names);
            p.orphan = Some(o);
            return p;
        }
        let (key, ver) = if dir == Direction::Request {
            match Pairer::request_header(&f.bytes) {
                Some((k, v, _)) => (k, v),
                None => return p, // no correlation_id: nothing to pair, nothing to learn
            }
        } else {
            (
                p.known.api_key.unwrap_or(-1),
                p.known.api_version.unwrap_or(-1),
            )
        };
        let facts = self.facts(dir, key, ver);
        // The scratch arena, out of `self` while a message borrows from it.
        let mut arena = std::mem::take(&mut self.scratch);
        arena.reset();
        if facts.topic_names || (dir == Direction::Request && facts.protocol_type) {
            let m = decode::decode(self.schema, self.opts, &arena, &f.bytes, &p.known);
            self.learn_topic_ids(&m.tree);
            if dir == Direction::Request {
                self.note_request(f, &m);
            }
            drop(m);
            self.scratch = arena;
            p.names = Arc::clone(&self.topic_names);
            return p;
        }
        let corr = Pairer::request_header(&f.bytes).map(|(_, _, c)| c);
        let Some(corr) = corr.filter(|_| dir == Direction::Request) else {
            self.scratch = arena;
            return p;
        };
        let mut expects = true;
        if key == 0 {
            // acks=0: the decoder's Acks, from the frame's first bytes when they hold the
            // whole field (else from the whole frame).
            let n = self
                .acks_end(&f.bytes, ver)
                .unwrap_or(ACKS_PREFIX)
                .min(f.bytes.len());
            let m = decode::decode(self.schema, self.opts, &arena, &f.bytes[..n], &p.known);
            let acks = m
                .tree
                .find("Acks")
                .map(|a| (a.value.clone(), a.end() <= n && a.error().is_none()));
            expects = match acks {
                Some((v, true)) => v != Value::Int(0),
                _ if n == f.bytes.len() => true,
                _ => {
                    let m = decode::decode(self.schema, self.opts, &arena, &f.bytes, &p.known);
                    !acks_zero(&m)
                }
            };
        }
        self.scratch = arena;
        let at = (f.ctx.connection, f.ctx.last_frame, f.ctx.time);
        self.note_pending(at, key, ver, corr, expects);
        p
    }
}

#[cfg(test)]
mod tests {
    /// Endpoints read as `SocketAddr`'s `Display` writes them.
    #[test]
    fn endpoint_text_as_display() {
        for a in [
            "10.0.0.1:51234",
            "0.0.0.0:0",
            "255.255.255.255:65535",
            "192.168.1.20:9092",
            "[::1]:9092",
            "[fe80::1%2]:443",
        ] {
            let addr: std::net::SocketAddr = a.parse().unwrap();
            assert_eq!(super::endpoint_text(&addr), addr.to_string());
        }
    }
}
