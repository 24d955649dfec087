//! A capture session: turns the input layer's frames into decoded messages, pairing each
//! response with its request (by connection and correlation_id) so it decodes with the
//! request's api_key and api_version, and carrying the group protocol type from
//! JoinGroup/SyncGroup requests to their responses.
//!
//! Memory for pairing is bounded by [`Pairer`]'s cap per connection.

use crate::decode::guess::{GuessContext, Guesser};
use crate::decode::{self, DecodeOptions, Known};
use crate::input::{self, DefaultPlausibility, Frame, FrameKind, FramePlausibility, Pairer};
use crate::render::Context;
use crate::schema::Schema;
use crate::tree::{Buffers, Direction, Message, Node, Value};
use foldhash::{HashMap, HashMapExt};
use std::time::Duration;

/// Pairing state over one capture.
pub struct Session<'s> {
    /// The schema stack.
    pub schema: &'s Schema,
    /// Decoder limits.
    pub opts: &'s DecodeOptions,
    /// Requests waiting for their responses.
    pub pairer: Pairer,
    protocol_types: HashMap<(u32, i32), String>,
    /// Topic ids learned from responses that carry both a name and an id (Metadata,
    /// CreateTopics, DescribeTopicPartitions...), so later messages that carry only the
    /// id (Fetch v13+, Produce v13+) can show the name.
    topic_names: HashMap<uuid::Uuid, String>,
    /// Notices raised while pairing (oldest pending request dropped).
    pub notices: Vec<input::Notice>,
    /// Per connection: the (api_key, api_version) of its recent requests, oldest first
    /// (the context of ranked guesses), and the lowest request correlation_id seen.
    requests_seen: HashMap<u32, (Vec<(i16, i16)>, i32)>,
    /// The response layouts, listed on the first response that needs a guess.
    guesser: Option<Guesser>,
    /// Responses whose request is not in the capture because it was sent before the
    /// capture began: their correlation_id is below every request seen on the connection
    /// (clients number requests upwards), or no request was seen there before them.
    pub answers_before_start: u64,
    /// Responses whose request is not in the capture for another reason (lost in a gap,
    /// a correlation_id out of the connection's order).
    pub answers_unpaired: u64,
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

impl<'s> Session<'s> {
    fn learn_topic_ids(&mut self, n: &Node<'_>) {
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
            if self.topic_names.len() < MAX_TOPIC_IDS || self.topic_names.contains_key(&id) {
                self.topic_names.insert(id, name.to_string());
            }
        }
        for c in &n.children {
            self.learn_topic_ids(c);
        }
    }

    /// Remembers a request's API and version for the guesses on its connection.
    fn seen_request(&mut self, conn: u32, corr: i32, k: i16, v: i16) {
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

    /// A response whose request is not in the capture: counted (sent before the capture
    /// began, or not), and decoded by the best ranked guess, with the connection's
    /// requests as context ([`crate::decode::guess`]); as raw bytes when no layout fits.
    fn orphan<'a>(&mut self, f: &'a Frame, arena: &'a Buffers) -> Message<'a>
    where
        's: 'a,
    {
        let conn = f.ctx.connection;
        let corr = Pairer::response_correlation(&f.bytes);
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
        let schema = self.schema;
        let opts = self.opts;
        let g = self.guesser.get_or_insert_with(|| Guesser::new(schema));
        let seen: &[(i16, i16)] = self
            .requests_seen
            .get(&conn)
            .map(|(s, _)| s.as_slice())
            .unwrap_or(&[]);
        let cx = GuessContext { seen };
        let layout = decode::Layout::default();
        if f.ctx.incomplete {
            // A cut frame fits no layout exactly: it stays raw.
            let k = Known {
                direction: Direction::Response,
                ..Known::request()
            };
            return decode::decode(schema, opts, arena, &f.bytes, &k);
        }
        g.response(schema, opts, arena, &f.bytes, layout, &cx)
            .unwrap_or_else(|| {
                let k = Known {
                    direction: Direction::Response,
                    ..Known::request()
                };
                decode::decode(schema, opts, arena, &f.bytes, &k)
            })
    }

    /// A new session over `schema` with decoder limits `opts`.
    pub fn new(schema: &'s Schema, opts: &'s DecodeOptions) -> Session<'s> {
        Session {
            schema,
            opts,
            pairer: Pairer::default(),
            protocol_types: HashMap::new(),
            topic_names: HashMap::new(),
            notices: Vec::new(),
            requests_seen: HashMap::new(),
            guesser: None,
            answers_before_start: 0,
            answers_unpaired: 0,
        }
    }

    /// Decodes one frame from the input layer. The message borrows from `f` and `arena`;
    /// the context carries frame numbers, time, endpoints, connection and, for a paired
    /// response, the latency since its request.
    pub fn decode<'a>(&mut self, f: &'a Frame, arena: &'a Buffers) -> (Message<'a>, Context)
    where
        's: 'a,
    {
        let c = &f.ctx;
        let mut ctx = Context {
            frames: (c.first_frame, c.last_frame),
            time: (c.time.secs, c.time.nanos),
            src: c.src.to_string(),
            dst: c.dst.to_string(),
            connection: c.connection,
            latency: None,
            incomplete: c.incomplete,
            capture: None,
            tls: c.tls.clone(),
        };
        let dir = if c.direction == input::Direction::ToServer {
            Direction::Request
        } else {
            Direction::Response
        };
        if f.kind == FrameKind::SaslToken {
            return (decode::sasl_token(arena, &f.bytes, dir), ctx);
        }
        let known = if dir == Direction::Request {
            Known::request()
        } else {
            let corr = Pairer::response_correlation(&f.bytes);
            match corr.and_then(|x| self.pairer.response(c.connection, x)) {
                Some(p) => {
                    let ns = c.time.nanos_since(&p.time).max(0) as u64;
                    ctx.latency = Some(Duration::from_nanos(ns));
                    let mut k = Known::response(p.api_key, p.api_version);
                    k.hints.protocol_type =
                        corr.and_then(|x| self.protocol_types.remove(&(c.connection, x)));
                    k
                }
                None => Known {
                    direction: Direction::Response,
                    ..Known::request()
                },
            }
        };
        let mut m = if known.direction == Direction::Response && known.api_key.is_none() {
            self.orphan(f, arena)
        } else {
            decode::decode(self.schema, self.opts, arena, &f.bytes, &known)
        };
        self.learn_topic_ids(&m.tree);
        name_topic_ids(&mut m.tree, &self.topic_names, arena);
        if dir == Direction::Request {
            if let Some(corr) = m.correlation_id {
                // Produce requests carry no ProtocolType: spare the walk over their records.
                let pt = if m.api_key == 0 {
                    None
                } else {
                    m.tree.find("ProtocolType").map(|n| n.value.clone())
                };
                if let Some(Value::Str(pt)) = pt {
                    if self.protocol_types.len() < 100_000 {
                        self.protocol_types
                            .insert((c.connection, corr), pt.to_string());
                    }
                }
                self.seen_request(c.connection, corr, m.api_key, m.api_version);
                let expects = !acks_zero(&m);
                if let Some(n) = self.pairer.request(
                    c.connection,
                    corr,
                    m.api_key,
                    m.api_version,
                    expects,
                    c.last_frame,
                    c.time,
                ) {
                    self.notices.push(n);
                }
            }
        }
        (m, ctx)
    }
}
