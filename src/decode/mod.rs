//! The schema-driven walk of a Kafka frame into a [`Message`] tree.
//!
//! Given one frame (4-byte size prefix included) the decoder reads the header by the
//! schema's header rules, then walks the body's definition for `(api_key, api_version)`:
//! every field present in that version, in order, tagged fields by their tags. `records`
//! fields go to [`records`]; bytes fields that carry other structures (consumer protocol,
//! Envelope) go to nested walks. Errors stop the walk at their offset and leave a partial
//! tree; nothing panics and no allocation is sized from an unchecked length.

pub mod compress;
pub mod facts;
pub mod guess;
pub mod internal_topics;
pub mod records;
pub mod walk;

use crate::schema::Schema;
use crate::tree::{Buffers, Node};
use crate::wire::{WResult, WireError};

/// Texts that thousands of nodes share (`compact, len+1=5`, `Record[12]`), made once
/// and handed out as `&'static str`: a tree then allocates nothing for them.
pub(crate) mod texts {
    use crate::tree::Buffers;
    use std::sync::OnceLock;

    /// How many numbers each table holds (0..N).
    const N: usize = 1024;

    fn table(prefix: &str, suffix: &str) -> Box<[&'static str]> {
        (0..N)
            .map(|i| &*Box::leak(format!("{prefix}{i}{suffix}").into_boxed_str()))
            .collect()
    }

    macro_rules! cached {
        ($(#[$m:meta])* $name:ident, $prefix:expr, $suffix:expr) => {
            $(#[$m])*
            pub(crate) fn $name(n: i64, arena: &Buffers) -> &str {
                static T: OnceLock<Box<[&'static str]>> = OnceLock::new();
                match usize::try_from(n) {
                    Ok(i) if i < N => T.get_or_init(|| table($prefix, $suffix))[i],
                    _ => arena.fmt(format_args!("{}{n}{}", $prefix, $suffix)),
                }
            }
        };
    }

    cached!(
        /// `compact, len+1=N`
        compact_len, "compact, len+1=", ""
    );
    cached!(
        /// `int16 len=N`
        int16_len, "int16 len=", ""
    );
    cached!(
        /// `int32 len=N`
        int32_len, "int32 len=", ""
    );
    cached!(
        /// `varint len=N`
        varint_len, "varint len=", ""
    );
    cached!(
        /// `Record[N]`
        record, "Record[", "]"
    );
    cached!(
        /// `Header[N]`
        header, "Header[", "]"
    );
    cached!(
        /// `message vN`
        message, "message v", ""
    );
    cached!(
        /// `message body, version N`
        body, "message body, version ", ""
    );
    cached!(
        /// `header vN`
        header_version, "header v", ""
    );
}

/// Limits and modes of a decode.
#[derive(Clone, Debug)]
pub struct DecodeOptions {
    /// Largest total of decompressed bytes in one message (default 64 MiB).
    pub max_decompressed: usize,
    /// Deepest nesting of structs, nested protocols and wrapper messages (default 64).
    pub max_depth: usize,
    /// Use the reference page's phrasing for structural descriptions ("one sample
    /// element follows", "patched after encoding").
    pub page_mode: bool,
    /// How much of the tree to keep: everything, or what the summary line needs.
    pub detail: Detail,
    /// The node budget of one message (default 200,000, about 30 MB of tree): records
    /// and array elements are counted against it as they are read, at either detail
    /// level (a record as [`records`]' `RECORD_NODES`, an element as one node plus its
    /// struct's fields); past it, the rest of a record list is read, checked and
    /// counted but shown as one folded node (`Record[i..j]`, type `folded`) instead of
    /// a node graph per record.
    pub max_nodes: usize,
    /// Fold the elements of an array of the frame itself (buffer 0) past the node
    /// budget, as record lists are (default true). `kwire export` turns it off: its
    /// `partitions` rows need every partition entry, and elements of the frame's own
    /// arrays are bounded by the frame's bytes. Arrays inside decompressed data (the
    /// records of internal topics) and record lists fold either way.
    pub fold_frame_arrays: bool,
    /// Schema fields that the levels below [`Detail::Full`] keep besides what the level
    /// keeps: the fields a display filter reads ([`crate::filter::Filter::kept_fields`]),
    /// so that it decides on a lighter tree as on the whole one. Empty by default.
    pub keep: KeptFields,
    /// A trial decode: its errors and warnings are marked ([`TRIAL_PROBLEM`]), not
    /// worded; the names of primitive array elements are not indexed, and the names,
    /// types and annotations the walk would format (tagged fields, unknown error codes,
    /// length prefixes) are left empty. For callers that read only whether a decode has
    /// problems ([`Message::has_problem`]), as a guess's trials do
    /// ([`guess::Guesser::response`]). Off by default.
    pub trial: bool,
}

/// The text of every error and warning of the schema walk in a trial decode
/// ([`DecodeOptions::trial`]).
pub const TRIAL_PROBLEM: &str = "(trial decode: problem not worded)";

/// Names of schema fields (`ThrottleTimeMs`, `SessionId`) whose every node a tree below
/// [`Detail::Full`] keeps, value and all, as the whole tree has it: read, never stepped
/// over. Cheap to clone (shared), empty by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeptFields(Option<std::sync::Arc<[Box<str>]>>);

impl KeptFields {
    /// The fields called `names` (none: an empty set).
    pub fn new<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> KeptFields {
        let v: Vec<Box<str>> = names.into_iter().map(|n| n.as_ref().into()).collect();
        KeptFields((!v.is_empty()).then(|| v.into()))
    }

    /// Whether no field is named.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Whether a field called `name` is kept.
    pub fn contains(&self, name: &str) -> bool {
        self.0
            .as_deref()
            .is_some_and(|v| v.iter().any(|k| **k == *name))
    }

    /// The names, in the order given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.as_deref().unwrap_or_default().iter().map(|k| &**k)
    }

    /// The fields of `self` and those of `other` not among them.
    pub fn union(&self, other: &KeptFields) -> KeptFields {
        if other.is_empty() {
            return self.clone();
        }
        KeptFields::new(
            self.names()
                .chain(other.names().filter(|n| !self.contains(n))),
        )
    }
}

/// How much of the tree the decoder keeps. Every byte is read and checked the same way
/// at either level: what differs is which nodes are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// Every field, length prefix and record: the tree tiles the frame.
    #[default]
    Full,
    /// Only the nodes the summary line, the session (pairing, topic ids) and the `read`
    /// filters look at: the header, nodes with an error or a warning, topic names and
    /// ids, partitions, group and transactional ids, non-zero error codes,
    /// `ProtocolType`, `Acks`, and containers holding any of these; records that decode
    /// cleanly only in the count of their `Records` group. Such a tree does not tile the
    /// frame and is for `--format summary` only.
    Summary,
    /// What the summary line, the session, `kwire stats`, `-T fields` columns of
    /// properties and filters on facts ([`crate::filter::Filter::decides_on_facts`])
    /// read, and nothing else: the session decodes each message by the fact walk
    /// ([`facts::decode_facts`]), which gives a fact tree of a few nodes, and a message
    /// it gives up on at [`Detail::Summary`].
    /// [`decode`] itself decodes at [`Detail::Summary`] at this level.
    Facts,
    /// What [`Detail::Summary`] keeps, and besides what the export's `messages` and
    /// `partitions` rows and `kwire report` read: every error code (zero, NONE,
    /// included) and the row facts ([`crate::schema::Field::row`]: a partition entry's
    /// offsets, watermarks, timestamp and leader, `ThrottleTimeMs`, the client software
    /// of ApiVersions, every `records` field with its batch headers). Records that
    /// decode cleanly are counted in their `Records` group, as at
    /// [`Detail::Summary`]; the `records` table needs [`Detail::Full`].
    Rows,
}

impl DecodeOptions {
    /// [`DecodeOptions::max_nodes`] when not given.
    pub const DEFAULT_MAX_NODES: usize = 200_000;
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_decompressed: 64 << 20,
            max_depth: 64,
            page_mode: false,
            detail: Detail::Full,
            max_nodes: DecodeOptions::DEFAULT_MAX_NODES,
            fold_frame_arrays: true,
            keep: KeptFields::default(),
            trial: false,
        }
    }
}

/// The decoding context shared by the walk and the record decoders.
pub struct Cx<'a> {
    /// The schema stack.
    pub schema: &'a Schema,
    /// The arena that owns decompressed buffers.
    pub arena: &'a Buffers,
    /// Decompressed buffers so far; id n is `buffers[n - 1]`.
    pub buffers: Vec<&'a [u8]>,
    /// Total decompressed bytes so far (checked against `opts.max_decompressed`).
    pub decompressed: usize,
    /// Limits and modes.
    pub opts: &'a DecodeOptions,
    /// Current nesting depth.
    pub depth: usize,
    /// The internal topic (if any) of the records being walked.
    pub topics: internal_topics::TopicState,
    /// Emptied vectors kept for the next node's children (no allocation per node),
    /// within [`POOL_VECS`], [`POOL_NODES`] and [`POOL_ALL_NODES`].
    pool: Vec<Vec<Node<'a>>>,
    /// The nodes the pool's vectors have room for, together.
    pooled: usize,
    /// Nodes counted against `opts.max_nodes` so far.
    spent: usize,
}

impl<'a> Cx<'a> {
    /// A context over `schema` with decompressed buffers going into `arena`.
    pub fn new(schema: &'a Schema, arena: &'a Buffers, opts: &'a DecodeOptions) -> Cx<'a> {
        Cx {
            schema,
            arena,
            buffers: Vec::new(),
            decompressed: 0,
            opts,
            depth: 0,
            topics: internal_topics::TopicState::default(),
            pool: Vec::new(),
            pooled: 0,
            spent: 0,
        }
        .with_pool()
    }

    /// Takes the thread's pool of vectors (left by the last context).
    fn with_pool(mut self) -> Self {
        let (pool, pooled) = POOL.with(|p| p.take());
        // SAFETY: see `Drop`: the vectors hold no node.
        self.pool =
            unsafe { std::mem::transmute::<Vec<Vec<Node<'static>>>, Vec<Vec<Node<'_>>>>(pool) };
        self.pooled = pooled;
        self
    }

    /// Keeps the emptied `v` for reuse if the pool has room for it, else frees it.
    fn pool_push(&mut self, mut v: Vec<Node<'a>>) {
        v.clear();
        let c = v.capacity();
        if c > 0
            && c <= POOL_NODES
            && self.pool.len() < POOL_VECS
            && self.pooled + c <= POOL_ALL_NODES
        {
            self.pooled += c;
            self.pool.push(v);
        }
    }

    /// Counts `n` nodes against the message's node budget.
    pub fn spend(&mut self, n: usize) {
        self.spent = self.spent.saturating_add(n);
    }

    /// Nodes left in the message's budget (0: fold what follows).
    pub fn budget_left(&self) -> usize {
        self.opts.max_nodes.saturating_sub(self.spent)
    }

    /// An empty vector to collect a node's children in; hand it to [`Cx::seal`].
    pub fn vec(&mut self) -> Vec<Node<'a>> {
        match self.pool.pop() {
            Some(v) => {
                self.pooled -= v.capacity();
                v
            }
            None => Vec::new(),
        }
    }

    /// Keeps an emptied vector from [`Cx::vec`] for reuse.
    pub fn recycle(&mut self, v: Vec<Node<'a>>) {
        self.pool_push(v);
    }

    /// Moves collected children into the arena and keeps the vector for reuse.
    pub fn seal(&mut self, mut v: Vec<Node<'a>>) -> crate::tree::Children<'a> {
        let s = self.arena.seal_from(&mut v);
        self.pool_push(v);
        s
    }

    /// A text owned by the arena.
    pub fn s(&self, s: &str) -> &'a str {
        self.arena.text(s)
    }

    /// Formats into the arena: `cx.fmt(format_args!(...))`.
    pub fn fmt(&self, args: std::fmt::Arguments<'_>) -> &'a str {
        self.arena.fmt(args)
    }

    /// An error's or warning's text, formatted into the arena; in a trial decode
    /// ([`DecodeOptions::trial`]) marked ([`TRIAL_PROBLEM`]), not worded.
    pub fn problem(&self, args: std::fmt::Arguments<'_>) -> &'a str {
        if self.opts.trial {
            TRIAL_PROBLEM
        } else {
            self.arena.fmt(args)
        }
    }

    /// A name, type or annotation formatted into the arena; empty in a trial decode
    /// ([`DecodeOptions::trial`]), which nothing reads but for its problems.
    pub fn label(&self, args: std::fmt::Arguments<'_>) -> &'a str {
        if self.opts.trial {
            ""
        } else {
            self.arena.fmt(args)
        }
    }

    /// Registers a decompressed buffer; returns its id (1-based) and the slice that the
    /// tree may borrow.
    pub fn add_buffer(&mut self, v: Vec<u8>) -> (u32, &'a [u8]) {
        self.decompressed = self.decompressed.saturating_add(v.len());
        let s = self.arena.alloc(v);
        self.buffers.push(s);
        (self.buffers.len() as u32, s)
    }

    /// Bytes that may still be decompressed in this message.
    pub fn decompress_budget(&self) -> usize {
        self.opts.max_decompressed.saturating_sub(self.decompressed)
    }
}

thread_local! {
    /// The children vectors of the last context on this thread, emptied, so that the
    /// next message's walk reuses them instead of allocating its own.
    /// With the nodes their vectors have room for, together.
    static POOL: std::cell::Cell<(Vec<Vec<Node<'static>>>, usize)> = const { std::cell::Cell::new((Vec::new(), 0)) };
}

/// Vectors kept in [`POOL`], at most.
const POOL_VECS: usize = 64;
/// Nodes a kept vector may hold, at most, and all kept vectors together (larger ones
/// are freed: what a thread keeps between messages stays under 1.5 MB of nodes, as
/// every worker thread keeps its own).
const POOL_NODES: usize = 1024;
const POOL_ALL_NODES: usize = 8192;

impl Drop for Cx<'_> {
    fn drop(&mut self) {
        let pool = std::mem::take(&mut self.pool);
        // SAFETY: the pool's vectors hold no node (`pool_push` clears each one it
        // keeps, and `vec` hands them out), so none borrows from this message: what is
        // kept is their memory, laid out alike for every lifetime of `Node`. The bounds
        // were kept as vectors came in, so nothing is looked over here: this runs once
        // a decode, and a ranked guess makes hundreds of trial decodes a response.
        let kept =
            unsafe { std::mem::transmute::<Vec<Vec<Node<'_>>>, Vec<Vec<Node<'static>>>>(pool) };
        let pooled = self.pooled;
        POOL.with(|p| {
            let old = p.take();
            p.set(if old.0.len() < kept.len() {
                (kept, pooled)
            } else {
                old
            });
        });
    }
}

/// What a fold read past the message's node budget found: how many of its items (records
/// or array elements) had an error, how many a warning, and the first one's index,
/// offset and message.
#[derive(Default)]
pub(crate) struct Folded {
    errors: (u64, Option<(u64, usize, String)>),
    warnings: (u64, Option<(u64, usize, String)>),
}

impl Folded {
    /// Notes the first error and the first warning under `n`, item `i` of the list.
    pub(crate) fn note(&mut self, i: u64, n: &Node<'_>) {
        let (mut e, mut w) = (None, None);
        n.walk(&mut |x, _| {
            if e.is_none() {
                e = x.error().map(|m| (x.offset, m.to_string()));
            }
            if w.is_none() {
                w = x.warning().map(|m| (x.offset, m.to_string()));
            }
        });
        for (seen, found) in [(&mut self.errors, e), (&mut self.warnings, w)] {
            if let Some((o, m)) = found {
                seen.0 += 1;
                seen.1.get_or_insert((i, o, m));
            }
        }
    }

    /// The leaf over `start` to where `r` stands: items `first..first + count` of the
    /// list of `base` (`Record`, `TopicNames`), named `base[first..last]`, of type
    /// `folded`, valued with the count, annotated with why and how to see them, and
    /// with an error (a warning) naming the first error (warning) among them.
    pub(crate) fn leaf<'a>(
        &self,
        r: &Reader<'a>,
        base: &str,
        item: &str,
        (first, count): (u64, u64),
        start: usize,
        max_nodes: usize,
    ) -> Node<'a> {
        let last = (first + count).saturating_sub(1);
        let mut n = Node::leaf(
            r.fmt(format_args!("{base}[{first}..{last}]")),
            "folded",
            crate::tree::Value::Count(count),
            start,
            r.pos - start,
        );
        n.kind = crate::tree::NodeKind::Group;
        n.buffer = r.buffer;
        let plural = if count == 1 { "" } else { "s" };
        n.annotation = Some(r.fmt(format_args!(
            "{count} {item}{plural} read and checked, not shown: past the message's budget \
             of {max_nodes} tree nodes (--max-nodes)"
        )));
        let buf = if r.buffer == 0 {
            String::new()
        } else {
            format!(" of buffer {}", r.buffer)
        };
        for (kind, (k, first)) in [("errors", &self.errors), ("warnings", &self.warnings)] {
            if let Some((i, o, m)) = first {
                let t = r.fmt(format_args!(
                    "{k} folded {item}(s) with {kind}; the first, {base}[{i}] at offset {o}{buf}: {m}"
                ));
                if kind == "errors" {
                    n.set_error(t);
                } else {
                    n.set_warning(t);
                }
            }
        }
        n
    }
}

/// A cursor over one buffer: the slice, the absolute offset of its first byte, and the
/// buffer id, so every value read knows its absolute offset and length.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    /// The bytes still to read.
    pub rest: &'a [u8],
    /// Absolute offset of `rest[0]` in its buffer.
    pub pos: usize,
    /// Buffer id (0 = frame).
    pub buffer: u32,
    /// The message's arena, for the texts of the nodes made from these bytes.
    pub arena: &'a Buffers,
}

impl<'a> Reader<'a> {
    /// A reader over `data`, whose first byte sits at `pos` in buffer `buffer`.
    pub fn new(data: &'a [u8], pos: usize, buffer: u32, arena: &'a Buffers) -> Reader<'a> {
        Reader {
            rest: data,
            pos,
            buffer,
            arena,
        }
    }

    /// Runs a nom parser; on success advances and returns the value with its offset and
    /// length.
    ///
    /// # Errors
    /// The parser's [`WireError`], with the reader left where the primitive started.
    pub fn read<T>(
        &mut self,
        p: impl Fn(&'a [u8]) -> WResult<'a, T>,
    ) -> Result<(T, usize, usize), WireError<'a>> {
        match p(self.rest) {
            Ok((rest, v)) => {
                let off = self.pos;
                let n = self.rest.len() - rest.len();
                self.rest = rest;
                self.pos += n;
                Ok((v, off, n))
            }
            Err(nom::Err::Error(e)) | Err(nom::Err::Failure(e)) => Err(e),
            Err(nom::Err::Incomplete(_)) => Err(WireError {
                input: self.rest,
                kind: crate::wire::WireErrorKind::Eof {
                    need: 1,
                    have: self.rest.len(),
                },
            }),
        }
    }

    /// Takes the next `n` bytes as a sub-reader (and skips them here).
    pub fn split(&mut self, n: usize) -> Option<Reader<'a>> {
        if n > self.rest.len() {
            return None;
        }
        let sub = Reader {
            rest: &self.rest[..n],
            pos: self.pos,
            buffer: self.buffer,
            arena: self.arena,
        };
        self.rest = &self.rest[n..];
        self.pos += n;
        Some(sub)
    }

    /// Bytes left.
    pub fn left(&self) -> usize {
        self.rest.len()
    }

    /// A text owned by the message's arena.
    pub fn s(&self, s: &str) -> &'a str {
        self.arena.text(s)
    }

    /// Formats into the message's arena: `r.fmt(format_args!(...))`.
    pub fn fmt(&self, args: std::fmt::Arguments<'_>) -> &'a str {
        self.arena.fmt(args)
    }

    /// A leaf covering every byte left, with the error `msg` (copied into the arena).
    pub fn error_leaf(&mut self, name: &'a str, ty: &'a str, msg: impl AsRef<str>) -> Node<'a> {
        let msg = self.arena.text(msg.as_ref());
        self.error_leaf_of(name, ty, msg)
    }

    /// [`Reader::error_leaf`] with a text the arena (or the program) already holds.
    pub fn error_leaf_of(&mut self, name: &'a str, ty: &'a str, msg: &'a str) -> Node<'a> {
        let mut n = Node::leaf(
            name,
            ty,
            crate::tree::Value::Bytes(self.rest),
            self.pos,
            self.rest.len(),
        );
        n.buffer = self.buffer;
        n.set_error(msg);
        self.pos += self.rest.len();
        self.rest = &[];
        n
    }
}

pub use walk::{decode_data, Hints};

use crate::schema::{MessageKind, Source};
use crate::tree::{Direction, Message, NodeKind, Region, Value};
use walk::{Stop, Walk};

/// How the bytes given to the decoder are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The bytes start with the 4-byte size prefix (the normal case).
    pub size_prefix: bool,
    /// The bytes hold a header before the body (false: a bare body, `--body-only`).
    pub header: bool,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            size_prefix: true,
            header: true,
        }
    }
}

/// What the caller knows of a message before decoding it.
#[derive(Clone, Debug)]
pub struct Known {
    /// Request or response.
    pub direction: Direction,
    /// For responses (and bare bodies): the api_key of the request.
    pub api_key: Option<i16>,
    /// For responses (and bare bodies): the api_version of the request.
    pub api_version: Option<i16>,
    /// Hints from the paired request.
    pub hints: Hints,
    /// Byte layout.
    pub layout: Layout,
}

impl Known {
    /// A request with its size prefix and header.
    pub fn request() -> Known {
        Known {
            direction: Direction::Request,
            api_key: None,
            api_version: None,
            hints: Hints::default(),
            layout: Layout::default(),
        }
    }
    /// A response to a request of `(api_key, api_version)`.
    pub fn response(api_key: i16, api_version: i16) -> Known {
        Known {
            direction: Direction::Response,
            api_key: Some(api_key),
            api_version: Some(api_version),
            hints: Hints::default(),
            layout: Layout::default(),
        }
    }
}

/// Decodes one Kafka frame into a [`Message`].
///
/// `frame` is the whole frame (size prefix included unless `known.layout` says
/// otherwise). Decompressed record data goes into `arena`. Never panics: every problem
/// is an error (or a warning) attached at its offset inside the returned tree.
pub fn decode<'a>(
    schema: &'a crate::schema::Schema,
    opts: &'a DecodeOptions,
    arena: &'a Buffers,
    frame: &'a [u8],
    known: &Known,
) -> Message<'a> {
    let mut cx = Cx::new(schema, arena, opts);
    let mut msg = decode_in(&mut cx, frame, 0, known);
    // A broker that does not support the requested ApiVersions version answers with a v0
    // body carrying UNSUPPORTED_VERSION (35), so the client can learn what it supports.
    // The error code is the body's first field: after the size prefix and the response
    // header (a correlation_id: ApiVersions responses keep header v0) when they are there.
    let o = 4 * usize::from(known.layout.size_prefix) + 4 * usize::from(known.layout.header);
    if msg.direction == Direction::Response
        && msg.api_key == 18
        && msg.api_version > 0
        && !msg.errors().is_empty()
        && frame.get(o..o + 2) == Some(&[0, 35][..])
    {
        let mut k = known.clone();
        k.api_version = Some(0);
        let mut cx0 = Cx::new(schema, arena, opts);
        let mut m0 = decode_in(&mut cx0, frame, 0, &k);
        if m0.errors().is_empty() {
            m0.tree.set_warning(cx0.fmt(format_args!(
                "the request was ApiVersions v{}; the broker answered UNSUPPORTED_VERSION with a v0 body",
                msg.api_version
            )));
            m0.buffers = std::mem::take(&mut cx0.buffers);
            return m0;
        }
    }
    msg.buffers = std::mem::take(&mut cx.buffers);
    msg
}

const HEADER_DESC: [(&str, &str); 6] = [
    ("request_api_key", "numeric id of the API being invoked"),
    ("request_api_version", "version of the API being invoked"),
    (
        "correlation_id",
        "echoed back by the broker in the response",
    ),
    ("client_id", "always a non-flexible int16-prefixed string"),
    ("tagged_fields", "number of tagged fields in the header"),
    ("size", "number of bytes that follow"),
];

/// Decodes a frame held in `frame`, whose first byte is at `base` in buffer 0 (nested
/// Envelope requests use a base inside the outer frame).
fn decode_in<'a>(cx: &mut Cx<'a>, frame: &'a [u8], base: usize, known: &Known) -> Message<'a> {
    let schema = cx.schema;
    let is_req = known.direction == Direction::Request;
    let mut r = Reader::new(frame, base, 0, cx.arena);
    let mut root = Node::new("", "", NodeKind::Message, base);
    root.length = frame.len();
    let mut kids = cx.vec();
    let mut msg = Message {
        direction: known.direction,
        api_key: known.api_key.unwrap_or(-1),
        api_name: None,
        api_version: known.api_version.unwrap_or(-1),
        correlation_id: None,
        header_version: 0,
        size: frame.len(),
        schema_release: None,
        frame,
        buffers: Vec::new(),
        tree: Node::new("", "", NodeKind::Message, base),
        guess: None,
    };
    // Frame: the size prefix.
    if known.layout.size_prefix {
        let mut fnode = Node::new("Frame", "frame", NodeKind::Frame, r.pos)
            .describe("length-delimited framing");
        match r.read(crate::wire::int32) {
            Ok((size, off, len)) => {
                let mut s = Node::leaf("size", "int32", Value::Int(size as i64), off, len)
                    .describe(if cx.opts.page_mode {
                        "number of bytes that follow, patched after encoding"
                    } else {
                        "number of bytes that follow"
                    });
                let have = frame.len() - 4;
                if size < 0 {
                    s.set_error(cx.problem(format_args!("negative frame size {size}")));
                } else if size == 0 && known.layout.header {
                    s.set_error("frame size 0: no header follows");
                } else if (size as usize) > have {
                    s.set_error(cx.problem(format_args!(
                        "frame truncated: size says {size} bytes, {have} present"
                    )));
                } else if (size as usize) < have {
                    s.set_warning(cx.problem(format_args!(
                        "{} bytes beyond the frame's size",
                        have - size as usize
                    )));
                }
                fnode.children = cx.arena.nodes([s]);
            }
            Err(e) => {
                let m = cx.fmt(format_args!("size: {}", e.kind));
                fnode.children = cx.arena.nodes([r.error_leaf("size", "int32", m)]);
            }
        }
        fnode.length = r.pos - fnode.offset;
        kids.push(fnode);
    }
    // Header.
    let mut api_key = known.api_key;
    let mut api_version = known.api_version;
    if is_req && known.layout.header {
        let mut p = r;
        if let (Ok((k, _, _)), Ok((v, _, _))) =
            (p.read(crate::wire::int16), p.read(crate::wire::int16))
        {
            api_key = Some(k);
            api_version = Some(v);
        }
    }
    let key = api_key.unwrap_or(-1);
    let ver = api_version.unwrap_or(-1);
    msg.api_key = key;
    msg.api_version = ver;
    let kind = if is_req {
        MessageKind::Request
    } else {
        MessageKind::Response
    };
    let body_def = schema.resolve(kind, key, ver);
    let api_name = schema.api_name(key);
    msg.api_name = api_name;
    let hv = if is_req {
        schema.request_header_version(key, ver)
    } else {
        schema.response_header_version(key, ver)
    };
    let hv = if body_def.is_none() && schema.api_name(key).is_none() {
        if is_req {
            1
        } else {
            0
        }
    } else {
        hv
    };
    msg.header_version = hv;
    let mut stopped = false;
    if known.layout.header && !r.rest.is_empty() {
        let hname = if is_req {
            "RequestHeader"
        } else {
            "ResponseHeader"
        };
        let mut hk = cx.vec();
        let mut h = Node::new(
            hname,
            texts::header_version(hv.into(), cx.arena),
            NodeKind::Header,
            r.pos,
        )
        .describe(if is_req {
            "common request header"
        } else {
            "common response header"
        });
        match schema.header(is_req, hv) {
            Some(hd) => {
                let mut w = Walk::new(cx, &hd.def, hv, Region::Header);
                w.guide_style = true;
                if w.fields(
                    &mut r,
                    &hd.def.fields,
                    &mut hk,
                    "number of tagged fields in the header",
                )
                .is_err()
                {
                    stopped = true;
                }
            }
            None => {
                let m = cx.fmt(format_args!("{hname} v{hv} is not in the schema"));
                hk.push(r.error_leaf("header", "bytes", m));
                stopped = true;
            }
        }
        for c in hk.iter_mut() {
            c.region = if c.name == "tagged_fields" {
                Region::TaggedFields
            } else {
                Region::Header
            };
            if let Some((_, d)) = HEADER_DESC.iter().find(|(n, _)| *n == c.name) {
                if c.name != "correlation_id" || is_req {
                    c.description = Some(d);
                } else {
                    c.description = Some("matches the correlation_id of the request");
                }
            }
            if c.name == "correlation_id" {
                if let Value::Int(v) = c.value {
                    msg.correlation_id = Some(v as i32);
                }
            }
        }
        h.length = r.pos - h.offset;
        h.children = cx.seal(hk);
        kids.push(h);
    }
    // Body.
    let dir_s = if is_req { "Request" } else { "Response" };
    let region = if is_req {
        Region::RequestBody
    } else {
        Region::ResponseBody
    };
    let root_name: &'a str = match (&body_def, api_name) {
        (Some(d), _) => d.def.name.as_str(),
        (None, Some(a)) => cx.fmt(format_args!("{a}{dir_s}")),
        (None, None) if key < 0 => cx.fmt(format_args!("?{dir_s}")),
        (None, None) => cx.fmt(format_args!("ApiKey{key}{dir_s}")),
    };
    root.name = root_name;
    root.ty = if ver < 0 {
        "message v?"
    } else {
        texts::message(ver.into(), cx.arena)
    };
    if !stopped && !r.rest.is_empty() {
        match body_def {
            Some(d) => {
                msg.schema_release = Some(match &d.source {
                    Source::User => "user",
                    Source::Release(x) => x.as_str(),
                });
                let def = &d.def;
                let mut body = Node::new(root_name, "struct", NodeKind::Body, r.pos)
                    .describe(texts::body(ver.into(), cx.arena));
                body.region = region;
                let mut bk = cx.vec();
                let mut w = Walk::new(cx, def, ver, region);
                w.hints = known.hints.clone();
                w.cx.topics.known_ids = known.hints.internal_topic_ids.clone();
                let res = w.fields(
                    &mut r,
                    &def.fields,
                    &mut bk,
                    "number of tagged fields in this struct",
                );
                body.length = r.pos - body.offset;
                body.children = cx.seal(bk);
                body.set_region(region);
                kids.push(body);
                if res == Err(Stop) {
                    stopped = true;
                }
            }
            None => {
                let why = match (api_name, is_req) {
                    (None, _) => cx.fmt(format_args!("unknown api_key {key}: body shown raw")),
                    (Some(a), true) => cx.fmt(format_args!(
                        "{a} has no request version {ver} in the schema: body shown raw"
                    )),
                    (Some(a), false) if known.api_key.is_none() => {
                        cx.fmt(format_args!("{a} response: body shown raw"))
                    }
                    (Some(a), false) => cx.fmt(format_args!(
                        "{a} has no response version {ver} in the schema: body shown raw"
                    )),
                };
                let mut n = Node::leaf("body", "bytes", Value::Bytes(r.rest), r.pos, r.left());
                n.region = region;
                if !is_req && known.api_key.is_none() {
                    // Not a fault of the bytes: the request was not seen.
                    n.set_warning(
                        "request not captured: body shown raw (pass --api-key and --api-version to decode it)",
                    );
                } else {
                    n.set_error(why);
                }
                r.split(r.left());
                kids.push(n);
            }
        }
    }
    if !stopped && !r.rest.is_empty() {
        let mut t = Node::leaf(
            "trailing bytes",
            "bytes",
            Value::Bytes(r.rest),
            r.pos,
            r.left(),
        );
        t.region = region;
        t.set_warning(cx.problem(format_args!(
            "{} bytes after the end of the body (brokers ignore them)",
            r.left()
        )));
        r.split(r.left());
        kids.push(t);
    }
    root.children = cx.seal(kids);
    msg.tree = root;
    msg
}

/// The request wrapped in an Envelope's `RequestData`: a request header and body with no
/// size prefix, decoded in place.
pub fn nested_request<'a>(cx: &mut Cx<'a>, sub: &mut Reader<'a>) -> Node<'a> {
    let known = Known {
        layout: Layout {
            size_prefix: false,
            header: true,
        },
        ..Known::request()
    };
    cx.depth += 1;
    let m = if cx.depth > cx.opts.max_depth {
        None
    } else {
        Some(decode_in(cx, sub.rest, sub.pos, &known))
    };
    cx.depth -= 1;
    match m {
        Some(m) => {
            sub.split(sub.left());
            m.tree
        }
        None => {
            let m = cx.fmt(format_args!(
                "nesting deeper than the cap of {} levels",
                cx.opts.max_depth
            ));
            sub.error_leaf("RequestData", "bytes", m)
        }
    }
}

/// A raw SASL token (sent after a SaslHandshake v0, KIP-43): a size prefix and opaque
/// bytes, no Kafka header.
///
/// The tree's nodes go into `arena`.
pub fn sasl_token<'a>(arena: &'a Buffers, frame: &'a [u8], direction: Direction) -> Message<'a> {
    let mut r = Reader::new(frame, 0, 0, arena);
    let mut root = Node::new("SaslToken", "raw SASL token", NodeKind::Message, 0);
    root.length = frame.len();
    root.description = Some("opaque authentication bytes after SaslHandshake v0");
    let mut fnode =
        Node::new("Frame", "frame", NodeKind::Frame, 0).describe("length-delimited framing");
    let size = match r.read(crate::wire::int32) {
        Ok((size, off, len)) => Node::leaf("size", "int32", Value::Int(size as i64), off, len)
            .describe("number of bytes that follow"),
        Err(e) => {
            let m = arena.fmt(format_args!("{}", e.kind));
            r.error_leaf("size", "int32", m)
        }
    };
    fnode.children = arena.nodes([size]);
    fnode.length = r.pos;
    let mut kids = vec![fnode];
    if r.left() > 0 {
        let mut t = Node::leaf("token", "bytes", Value::Bytes(r.rest), r.pos, r.left());
        t.region = if direction == Direction::Request {
            Region::RequestBody
        } else {
            Region::ResponseBody
        };
        kids.push(t);
    }
    root.children = arena.seal(kids);
    Message {
        direction,
        api_key: -1,
        api_name: Some("SaslToken"),
        api_version: -1,
        correlation_id: None,
        header_version: -1,
        size: frame.len(),
        schema_release: None,
        frame,
        buffers: Vec::new(),
        tree: root,
        guess: None,
    }
}

#[cfg(test)]
mod tests {
    use super::KeptFields;

    #[test]
    fn the_pool_of_vectors_stays_in_its_bounds() {
        use super::{Cx, DecodeOptions, POOL, POOL_ALL_NODES, POOL_NODES, POOL_VECS};
        use crate::tree::{Buffers, Node};
        let schema = crate::schema::Schema::embedded();
        let arena = Buffers::new();
        let opts = DecodeOptions::default();
        let sizes = [0, 1, 8, 100, 900, 1024, 1025, 5000, 300, 300, 300];
        {
            let mut cx = Cx::new(&schema, &arena, &opts);
            for round in 0..3 {
                for &n in &sizes {
                    let mut v: Vec<Node<'_>> = Vec::with_capacity(n);
                    v.resize_with(n.min(3), Node::default);
                    if round == 1 {
                        let _ = cx.seal(v);
                    } else {
                        cx.recycle(v);
                    }
                    let held: usize = cx.pool.iter().map(Vec::capacity).sum();
                    assert_eq!(held, cx.pooled);
                    assert!(cx.pool.len() <= POOL_VECS && held <= POOL_ALL_NODES);
                    assert!(cx
                        .pool
                        .iter()
                        .all(|v| v.is_empty() && (1..=POOL_NODES).contains(&v.capacity())));
                }
                // Vectors handed out and back keep the count right.
                let a = cx.vec();
                let b = cx.vec();
                cx.recycle(a);
                cx.recycle(b);
                assert_eq!(cx.pool.iter().map(Vec::capacity).sum::<usize>(), cx.pooled);
            }
        }
        // The next context on the thread starts from what the last one kept.
        let cx = Cx::new(&schema, &arena, &opts);
        assert!(!cx.pool.is_empty());
        assert_eq!(cx.pool.iter().map(Vec::capacity).sum::<usize>(), cx.pooled);
        drop(cx);
        POOL.with(|p| {
            let (pool, pooled) = p.take();
            assert_eq!(pool.iter().map(Vec::capacity).sum::<usize>(), pooled);
        });
    }

    #[test]
    fn kept_fields_union_keeps_order_and_drops_repeats() {
        let a = KeptFields::new(["ThrottleTimeMs", "SessionId"]);
        let b = KeptFields::new(["SessionId", "MemberId"]);
        let u = a.union(&b);
        assert_eq!(
            u.names().collect::<Vec<_>>(),
            ["ThrottleTimeMs", "SessionId", "MemberId"]
        );
        assert!(u.contains("MemberId") && !u.contains("Member") && !u.contains("memberid"));
        let none = KeptFields::new(Vec::<String>::new());
        assert!(none.is_empty() && !none.contains(""));
        assert_eq!(none, KeptFields::default());
        assert_eq!(none.union(&a), a);
        assert_eq!(a.union(&none), a);
    }

    /// The folded leaf's note counts its items in the singular for one.
    #[test]
    fn folded_leaf_counts_one_item_in_the_singular() {
        let arena = crate::tree::Buffers::new();
        let bytes = [0u8; 8];
        let r = super::Reader::new(&bytes, 0, 0, &arena);
        let mut end = r;
        end.split(4);
        let one = super::Folded::default().leaf(&end, "Topics", "element", (7, 1), 0, 100);
        assert_eq!(one.name, "Topics[7..7]");
        let note = one.annotation.unwrap();
        assert!(
            note.starts_with("1 element read and checked, not shown"),
            "{note}"
        );
        let two = super::Folded::default().leaf(&end, "Topics", "element", (7, 2), 0, 100);
        let note = two.annotation.unwrap();
        assert!(
            note.starts_with("2 elements read and checked, not shown"),
            "{note}"
        );
        assert_eq!((two.offset, two.length), (0, 4));
    }
}
