//! The decoded tree: the one structure every renderer reads.
//!
//! A [`Message`] owns a root [`Node`]; each node names a span of bytes (`offset`,
//! `length`) in a buffer: buffer 0 is the frame itself, buffers 1.. are decompressed
//! record data owned by the [`Buffers`] arena the decoder was given. Values borrow from
//! those buffers. For a well-formed frame the leaves tile each buffer: every byte in
//! exactly one leaf, in order.

use std::borrow::Cow;

/// A node's value, borrowing from the frame or a decompressed buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// No value of its own (messages, headers, structs, groups).
    None,
    /// An explicit null (string, bytes, array, struct, records).
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer (int8..int64, varint, varlong).
    Int(i64),
    /// An unsigned integer (uint16, uint32, uvarint, CRCs).
    UInt(u64),
    /// A float64.
    Float(f64),
    /// A UTF-8 string.
    Str(&'a str),
    /// Raw bytes.
    Bytes(&'a [u8]),
    /// A UUID.
    Uuid(uuid::Uuid),
    /// The element count of an array (`1 element`).
    Count(u64),
}

/// What a node stands for; decides how its line reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// The message root (`DeleteTopicsRequest message v6`).
    Message,
    /// The 4-byte size framing (`Frame`).
    Frame,
    /// The request or response header (`RequestHeader v2`).
    Header,
    /// The message body (`DeleteTopicsRequest struct`).
    Body,
    /// A struct value: an array element or a struct field (`= struct`).
    Struct,
    /// An array (`= 1 element`).
    Array,
    /// A primitive value (a leaf, or bytes with a nested tree under them).
    Field,
    /// Any other container (RecordBatch, record, tagged field, attributes...).
    Group,
}

/// The colour region of a byte in the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Region {
    /// The size prefix.
    Frame,
    /// Request or response header.
    Header,
    /// Request body.
    RequestBody,
    /// Response body.
    ResponseBody,
    /// A RecordBatch header (or legacy message header).
    RecordBatch,
    /// A record inside a batch.
    Record,
    /// A tagged-field section.
    TaggedFields,
}

impl Region {
    /// Every region, in legend order.
    pub const ALL: [Region; 7] = [
        Region::Frame,
        Region::Header,
        Region::RequestBody,
        Region::RecordBatch,
        Region::Record,
        Region::ResponseBody,
        Region::TaggedFields,
    ];
    /// The legend label.
    pub fn label(&self) -> &'static str {
        match self {
            Region::Frame => "frame",
            Region::Header => "rpc header",
            Region::RequestBody => "request body",
            Region::ResponseBody => "response body",
            Region::RecordBatch => "RecordBatch",
            Region::Record => "Record",
            Region::TaggedFields => "tagged_fields",
        }
    }
}

/// One node of the tree.
#[derive(Clone, Debug)]
pub struct Node<'a> {
    /// The name (`Topics`, `DeleteTopicState[0]`, `length`).
    pub name: Cow<'a, str>,
    /// The type label (`[]DeleteTopicState`, `int32`, `message v6`, `header v2`).
    pub ty: Cow<'a, str>,
    /// What the node stands for.
    pub kind: NodeKind,
    /// The value.
    pub value: Value<'a>,
    /// Offset of the first byte, in buffer `buffer`.
    pub offset: usize,
    /// Number of bytes.
    pub length: usize,
    /// 0 for the frame; n for the n-th decompressed buffer.
    pub buffer: u32,
    /// The colour region of its bytes.
    pub region: Region,
    /// Text in parentheses after the value (`compact, len+1=1`, `DeleteTopics`).
    pub annotation: Option<Cow<'a, str>>,
    /// A description (the `about` text with a run-time schema, or kwire's own phrase).
    pub description: Option<Cow<'a, str>>,
    /// An error and a warning found at this node, boxed because most nodes have
    /// neither (it keeps every node 40 bytes smaller). Read them with [`Node::error`]
    /// and [`Node::warning`], set them with [`Node::set_error`] and [`Node::set_warning`].
    pub problems: Option<Box<Problems>>,
    /// Children, in byte order.
    pub children: Vec<Node<'a>>,
}

/// What a [`Node`] may carry besides its value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problems {
    /// An error found at the node (the byte offset is the node's).
    pub error: Option<String>,
    /// Something legal but odd (trailing bytes, a partial batch).
    pub warning: Option<String>,
}

impl<'a> Node<'a> {
    /// A node with no value, annotation or children.
    pub fn new(
        name: impl Into<Cow<'a, str>>,
        ty: impl Into<Cow<'a, str>>,
        kind: NodeKind,
        offset: usize,
    ) -> Node<'a> {
        Node {
            name: name.into(),
            ty: ty.into(),
            kind,
            value: Value::None,
            offset,
            length: 0,
            buffer: 0,
            region: Region::Frame,
            annotation: None,
            description: None,
            problems: None,
            children: Vec::new(),
        }
    }

    /// The error found at this node, if any.
    pub fn error(&self) -> Option<&str> {
        self.problems.as_ref()?.error.as_deref()
    }

    /// The warning at this node, if any.
    pub fn warning(&self) -> Option<&str> {
        self.problems.as_ref()?.warning.as_deref()
    }

    /// The error and warning, to change (made empty when there are none yet).
    pub fn problems_mut(&mut self) -> &mut Problems {
        self.problems.get_or_insert_with(Box::default)
    }

    /// Sets the error at this node.
    pub fn set_error(&mut self, e: impl Into<String>) {
        self.problems_mut().error = Some(e.into());
    }

    /// Sets the warning at this node.
    pub fn set_warning(&mut self, w: impl Into<String>) {
        self.problems_mut().warning = Some(w.into());
    }

    /// Takes the error away from this node.
    pub fn take_error(&mut self) -> Option<String> {
        self.problems.as_mut()?.error.take()
    }

    /// A leaf with a value.
    pub fn leaf(
        name: impl Into<Cow<'a, str>>,
        ty: impl Into<Cow<'a, str>>,
        value: Value<'a>,
        offset: usize,
        length: usize,
    ) -> Node<'a> {
        let mut n = Node::new(name, ty, NodeKind::Field, offset);
        n.value = value;
        n.length = length;
        n
    }

    /// Sets the annotation (builder style).
    pub fn annotate(mut self, a: impl Into<Cow<'a, str>>) -> Self {
        self.annotation = Some(a.into());
        self
    }

    /// Sets the description (builder style).
    pub fn describe(mut self, d: impl Into<Cow<'a, str>>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// The end offset (exclusive).
    pub fn end(&self) -> usize {
        self.offset + self.length
    }

    /// Visits this node and every descendant, depth first, in order.
    pub fn walk<'n>(&'n self, f: &mut impl FnMut(&'n Node<'a>, usize)) {
        fn go<'n, 'a>(n: &'n Node<'a>, d: usize, f: &mut impl FnMut(&'n Node<'a>, usize)) {
            f(n, d);
            for c in &n.children {
                go(c, d + 1, f);
            }
        }
        go(self, 0, f)
    }

    /// The first descendant (or self) with this name.
    pub fn find(&self, name: &str) -> Option<&Node<'a>> {
        if self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(name))
    }

    /// Sets the region of this node and every descendant that still has the default
    /// (`Frame`) region.
    pub fn set_region(&mut self, r: Region) {
        if self.region == Region::Frame {
            self.region = r;
        }
        for c in &mut self.children {
            c.set_region(r);
        }
    }
}

/// Request or response (or a raw SASL token between them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// A request (client to broker).
    Request,
    /// A response (broker to client).
    Response,
}

impl Direction {
    /// `"request"` or `"response"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Direction::Request => "request",
            Direction::Response => "response",
        }
    }
}

/// An error with its offset, as collected from a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// Offset in the frame (or in buffer `buffer`).
    pub offset: usize,
    /// 0 for the frame, n for a decompressed buffer.
    pub buffer: u32,
    /// The message.
    pub message: String,
}

/// One decoded Kafka message.
#[derive(Debug)]
pub struct Message<'a> {
    /// Request or response.
    pub direction: Direction,
    /// The api_key (from the header, or from the paired request for a response).
    pub api_key: i16,
    /// The API name (`DeleteTopics`), when the key is known.
    pub api_name: Option<String>,
    /// The api_version.
    pub api_version: i16,
    /// The correlation_id, when the header could be read.
    pub correlation_id: Option<i32>,
    /// The header version used.
    pub header_version: i16,
    /// The frame's length in bytes, size prefix included.
    pub size: usize,
    /// The release (or `user`) the body's definition came from.
    pub schema_release: Option<String>,
    /// The frame bytes.
    pub frame: &'a [u8],
    /// Decompressed buffers; buffer id n is `buffers[n - 1]`.
    pub buffers: Vec<&'a [u8]>,
    /// The tree, rooted at the message node.
    pub tree: Node<'a>,
    /// Set when the layout was not given by the input but guessed: the candidates that
    /// fit, best (the decode shown) first ([`crate::decode::guess`]).
    pub guess: Option<Box<crate::decode::guess::Guess>>,
}

impl<'a> Message<'a> {
    /// Every error in the tree, in tree order.
    pub fn errors(&self) -> Vec<Located> {
        let mut out = Vec::new();
        self.tree.walk(&mut |n, _| {
            if let Some(e) = n.error() {
                out.push(Located {
                    offset: n.offset,
                    buffer: n.buffer,
                    message: e.to_string(),
                });
            }
        });
        out
    }

    /// How many nodes carry an error (what `errors().len()` gives, without collecting).
    pub fn error_count(&self) -> usize {
        let mut k = 0;
        self.tree
            .walk(&mut |n, _| k += usize::from(n.error().is_some()));
        k
    }

    /// How many nodes carry a warning (what `warnings().len()` gives, without collecting).
    pub fn warning_count(&self) -> usize {
        let mut k = 0;
        self.tree
            .walk(&mut |n, _| k += usize::from(n.warning().is_some()));
        k
    }

    /// How many nodes carry an error and how many a warning, in one walk.
    pub fn problem_counts(&self) -> (usize, usize) {
        let (mut e, mut w) = (0, 0);
        self.tree.walk(&mut |n, _| {
            e += usize::from(n.error().is_some());
            w += usize::from(n.warning().is_some());
        });
        (e, w)
    }

    /// Every warning in the tree, in tree order.
    pub fn warnings(&self) -> Vec<Located> {
        let mut out = Vec::new();
        self.tree.walk(&mut |n, _| {
            if let Some(e) = n.warning() {
                out.push(Located {
                    offset: n.offset,
                    buffer: n.buffer,
                    message: e.to_string(),
                });
            }
        });
        out
    }

    /// The bytes of buffer `id` (0 = the frame).
    pub fn buffer(&self, id: u32) -> &'a [u8] {
        if id == 0 {
            self.frame
        } else {
            self.buffers.get(id as usize - 1).copied().unwrap_or(&[])
        }
    }
}

/// An arena for decompressed record data: the decoder puts each decompressed buffer here
/// so that the tree's values can borrow from it for as long as the arena lives.
#[derive(Default)]
pub struct Buffers {
    arena: typed_arena::Arena<Vec<u8>>,
}

impl Buffers {
    /// A new, empty arena.
    pub fn new() -> Buffers {
        Buffers::default()
    }
    /// Moves `v` into the arena and returns a slice of it that lives as long as the arena.
    pub fn alloc(&self, v: Vec<u8>) -> &[u8] {
        self.arena.alloc(v).as_slice()
    }
}
