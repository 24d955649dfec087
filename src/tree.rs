//! The decoded tree: the one structure every renderer reads.
//!
//! A [`Message`] owns a root [`Node`]; each node names a span of bytes (`offset`,
//! `length`) in a buffer: buffer 0 is the frame itself, buffers 1.. are decompressed
//! record data owned by the [`Buffers`] arena the decoder was given. Values borrow from
//! those buffers. For a well-formed frame the leaves tile each buffer: every byte in
//! exactly one leaf, in order.

/// A node's value, borrowing from the frame or a decompressed buffer.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Value<'a> {
    /// No value of its own (messages, headers, structs, groups).
    #[default]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    #[default]
    Field,
    /// Any other container (RecordBatch, record, tagged field, attributes...).
    Group,
}

/// The colour region of a byte in the grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Region {
    /// The size prefix.
    #[default]
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
///
/// Nodes live in the per-message arena ([`Buffers`]): a node's children are one
/// contiguous slice of that arena, and its texts are `&'a str` borrowed from the
/// schema, from kwire's static tables, from the input, or (rarely: error messages,
/// numbered names past the cached tables) copied into the arena. Building a tree thus
/// allocates nothing on the heap per node, and dropping it frees nothing: the arena is
/// emptied at once by [`Buffers::reset`] and reused for the next message.
///
/// Read a node through its fields or the accessors ([`Node::children`], [`Node::walk`],
/// [`Node::find`], [`Node::error`], [`Node::warning`], [`Node::end`]).
#[derive(Debug, Default)]
pub struct Node<'a> {
    /// The name (`Topics`, `DeleteTopicState[0]`, `length`).
    pub name: &'a str,
    /// The type label (`[]DeleteTopicState`, `int32`, `message v6`, `header v2`).
    pub ty: &'a str,
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
    pub annotation: Option<&'a str>,
    /// A description (the `about` text with a run-time schema, or kwire's own phrase).
    pub description: Option<&'a str>,
    /// The error found at this node (the byte offset is the node's); read it with
    /// [`Node::error`], set it with [`Node::set_error`].
    err: Option<&'a str>,
    /// Something legal but odd (trailing bytes, a partial batch); see [`Node::warning`].
    warn: Option<&'a str>,
    /// Children, in byte order: one slice of the message's arena.
    pub children: Children<'a>,
}

/// A node's children: one contiguous slice of the message's arena. It reads as a slice
/// (`len`, `is_empty`, `iter`, indexing, `last`) and iterates with `for c in &n.children`.
///
/// It owns its slice the way a `Box<[Node]>` would (the arena gave it out once, and
/// nothing else points at it), so, like a box, it is covariant in `'a`: a `&Node<'a>`
/// passes where a `&Node<'shorter>` is asked for.
pub struct Children<'a> {
    ptr: std::ptr::NonNull<Node<'a>>,
    len: usize,
    _owns: std::marker::PhantomData<&'a [Node<'a>]>,
}

// SAFETY: `Children` is the sole owner of its slice (see above), so it is as Send and
// Sync as a `Box<[Node<'a>]>` would be, and a `Node` holds nothing else that is not
// both (shared `&str`/`&[u8]`, plain values); the unit test `message_and_arena_are_send`
// checks the rest of `Message`. (A `where Node<'a>: Send` bound would recurse.)
unsafe impl Send for Children<'_> {}
// SAFETY: as above.
unsafe impl Sync for Children<'_> {}

impl<'a> Children<'a> {
    /// Takes ownership of a slice the arena handed out.
    pub fn new(s: &'a mut [Node<'a>]) -> Children<'a> {
        Children {
            len: s.len(),
            ptr: std::ptr::NonNull::from(s).cast(),
            _owns: std::marker::PhantomData,
        }
    }
}

impl Default for Children<'_> {
    fn default() -> Self {
        Children {
            ptr: std::ptr::NonNull::dangling(),
            len: 0,
            _owns: std::marker::PhantomData,
        }
    }
}

impl std::fmt::Debug for Children<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> std::ops::Deref for Children<'a> {
    type Target = [Node<'a>];
    fn deref(&self) -> &[Node<'a>] {
        // SAFETY: `ptr` and `len` come from a live `&'a mut [Node<'a>]` (or are the
        // dangling empty slice), which this value owns alone.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for Children<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        // SAFETY: as in `deref`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<'n, 'a> IntoIterator for &'n Children<'a> {
    type Item = &'n Node<'a>;
    type IntoIter = std::slice::Iter<'n, Node<'a>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'n, 'a> IntoIterator for &'n mut Children<'a> {
    type Item = &'n mut Node<'a>;
    type IntoIter = std::slice::IterMut<'n, Node<'a>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<'a> Node<'a> {
    /// A node with no value, annotation or children.
    pub fn new(name: &'a str, ty: &'a str, kind: NodeKind, offset: usize) -> Node<'a> {
        Node {
            name,
            ty,
            kind,
            offset,
            ..Node::default()
        }
    }

    /// The children, in byte order.
    pub fn children(&self) -> std::slice::Iter<'_, Node<'a>> {
        self.children.iter()
    }

    /// The error found at this node, if any.
    pub fn error(&self) -> Option<&'a str> {
        self.err
    }

    /// The warning at this node, if any.
    pub fn warning(&self) -> Option<&'a str> {
        self.warn
    }

    /// Sets (or with `None` clears) the error at this node.
    pub fn set_error_opt(&mut self, e: Option<&'a str>) {
        self.err = e;
    }

    /// Sets the error at this node.
    pub fn set_error(&mut self, e: &'a str) {
        self.err = Some(e);
    }

    /// Sets the warning at this node.
    pub fn set_warning(&mut self, w: &'a str) {
        self.warn = Some(w);
    }

    /// Takes the error away from this node.
    pub fn take_error(&mut self) -> Option<&'a str> {
        self.err.take()
    }

    /// A leaf with a value.
    pub fn leaf(
        name: &'a str,
        ty: &'a str,
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
    pub fn annotate(mut self, a: &'a str) -> Self {
        self.annotation = Some(a);
        self
    }

    /// Sets the description (builder style).
    pub fn describe(mut self, d: &'a str) -> Self {
        self.description = Some(d);
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
            for c in n.children.iter() {
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
        for c in self.children.iter_mut() {
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
    /// The API name (`DeleteTopics`), when the key is known (borrowed from the schema).
    pub api_name: Option<&'a str>,
    /// The api_version.
    pub api_version: i16,
    /// The correlation_id, when the header could be read.
    pub correlation_id: Option<i32>,
    /// The header version used.
    pub header_version: i16,
    /// The frame's length in bytes, size prefix included.
    pub size: usize,
    /// The release (or `user`) the body's definition came from (borrowed from the
    /// schema).
    pub schema_release: Option<&'a str>,
    /// The frame bytes.
    pub frame: &'a [u8],
    /// Decompressed buffers; buffer id n is `buffers[n - 1]`.
    pub buffers: Vec<&'a [u8]>,
    /// The tree, rooted at the message node.
    pub tree: Node<'a>,
    /// Set when the layout was not given by the input but guessed: the candidates that
    /// fit, best (the decode shown) first ([`crate::decode::guess`]).
    pub guess: Option<Box<Guess>>,
}

impl<'a> Message<'a> {
    /// The root node (the message node): the same as `&self.tree`.
    pub fn root(&self) -> &Node<'a> {
        &self.tree
    }

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
        // One recursive pass over the children slices (no visitor, no depth).
        fn go(n: &Node<'_>, k: &mut (usize, usize)) {
            k.0 += usize::from(n.err.is_some());
            k.1 += usize::from(n.warn.is_some());
            for c in n.children.iter() {
                go(c, k);
            }
        }
        let mut k = (0, 0);
        go(&self.tree, &mut k);
        k
    }

    /// Whether any node carries an error or a warning (`problem_counts() != (0, 0)`),
    /// looking at the last children first: an error that ends a walk is on the tree's
    /// last path, so a decode that failed is told in a few steps.
    pub fn has_problem(&self) -> bool {
        fn go(n: &Node<'_>) -> bool {
            n.err.is_some() || n.warn.is_some() || n.children.iter().rev().any(go)
        }
        go(&self.tree)
    }

    /// Whether any node carries an error (`error_count() > 0`, stopping at the first).
    pub fn has_error(&self) -> bool {
        fn go(n: &Node<'_>) -> bool {
            n.err.is_some() || n.children.iter().any(go)
        }
        go(&self.tree)
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

/// The per-message arena: the decoder puts the tree's nodes, the texts it had to make,
/// and each decompressed buffer here, so that the tree borrows from it for as long as
/// the arena lives.
///
/// One arena serves one message at a time: decode, print, drop the [`Message`], then
/// [`Buffers::reset`] and decode the next one into the same memory. `Buffers` is `Send`
/// (not `Sync`): a worker thread can own one, decode a frame it owns into it, render the
/// message into a `Vec<u8>` and hand the bytes back, and a [`Message`] is `Send` too
/// (it holds only shared data), so it may also cross to another thread inside a scoped
/// thread that the arena outlives.
#[derive(Default)]
pub struct Buffers {
    /// Made on the first decompressed buffer of a message: most messages have none, and
    /// an arena costs an allocation.
    arena: std::cell::OnceCell<typed_arena::Arena<Vec<u8>>>,
    bump: bumpalo::Bump,
    /// Bytes charged to [`crate::memory`]'s budget for this message, given back on reset.
    held: std::cell::Cell<usize>,
    /// Node memory already charged (or kept from an earlier message and not charged).
    nodes_charged: std::cell::Cell<usize>,
}

impl Drop for Buffers {
    fn drop(&mut self) {
        crate::memory::give(self.held.replace(0));
    }
}

impl std::fmt::Debug for Buffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffers")
            .field("node_bytes", &self.bump.allocated_bytes())
            .finish_non_exhaustive()
    }
}

/// Above this many bytes, [`Buffers::reset`] hands the node memory back to the
/// allocator instead of keeping it for the next message (what is kept is not charged to
/// [`crate::memory`]'s budget: at most this much per arena).
const KEEP_BYTES: usize = 4 << 20;

impl Buffers {
    /// A new, empty arena.
    pub fn new() -> Buffers {
        Buffers::default()
    }

    /// Charges `n` bytes that this message is about to hold (a decompressed buffer) to
    /// the process-wide budget ([`crate::memory::take`], which may wait on a worker
    /// thread); they are given back when the arena is reset or dropped.
    pub fn charge(&self, n: usize) {
        crate::memory::take(n);
        self.held.set(self.held.get().saturating_add(n));
    }

    /// Charges the node memory grown by a [`crate::memory::STEP`] or more since the last
    /// charge.
    fn charge_nodes(&self) {
        let now = self.bump.allocated_bytes();
        let charged = self.nodes_charged.get();
        if now >= charged.saturating_add(crate::memory::STEP) {
            self.charge(now - charged);
            self.nodes_charged.set(now);
        }
    }

    /// Moves `v` into the arena and returns a slice of it that lives as long as the arena.
    pub fn alloc(&self, v: Vec<u8>) -> &[u8] {
        self.arena
            .get_or_init(typed_arena::Arena::new)
            .alloc(v)
            .as_slice()
    }

    /// Copies `s` into the arena.
    pub fn text(&self, s: &str) -> &str {
        self.bump.alloc_str(s)
    }

    /// Formats into the arena (no heap allocation of its own).
    pub fn fmt(&self, args: std::fmt::Arguments<'_>) -> &str {
        if let Some(s) = args.as_str() {
            return s;
        }
        use std::fmt::Write;
        let mut s = bumpalo::collections::String::new_in(&self.bump);
        let _ = s.write_fmt(args);
        s.into_bump_str()
    }

    /// Moves `nodes` into the arena as one contiguous slice (a node's children).
    pub fn nodes<'a, I>(&'a self, nodes: I) -> Children<'a>
    where
        I: IntoIterator<Item = Node<'a>>,
        I::IntoIter: ExactSizeIterator,
    {
        let c = Children::new(self.bump.alloc_slice_fill_iter(nodes));
        self.charge_nodes();
        c
    }

    /// Moves the nodes out of `v` into the arena as one contiguous slice, leaving `v`
    /// empty (with its capacity, for reuse).
    pub fn seal<'a>(&'a self, mut v: Vec<Node<'a>>) -> Children<'a> {
        self.seal_from(&mut v)
    }

    /// Like [`Buffers::seal`], draining a vector the caller keeps.
    pub fn seal_from<'a>(&'a self, v: &mut Vec<Node<'a>>) -> Children<'a> {
        if v.is_empty() {
            return Children::default();
        }
        let n = v.len();
        let dst = self
            .bump
            .alloc_layout(std::alloc::Layout::for_value(v.as_slice()))
            .cast::<Node<'a>>();
        // SAFETY: `dst` is fresh arena memory laid out for `n` nodes, apart from `v`'s
        // buffer. The nodes are moved there in one copy, and `v` forgets them (its length
        // set to 0 before anything else can read them), so each node has one owner: the
        // slice, which `Children` owns as a box would.
        let slice = unsafe {
            std::ptr::copy_nonoverlapping(v.as_ptr(), dst.as_ptr(), n);
            v.set_len(0);
            std::slice::from_raw_parts_mut(dst.as_ptr(), n)
        };
        let c = Children::new(slice);
        self.charge_nodes();
        c
    }

    /// Bytes the arena holds for nodes and texts (decompressed buffers not counted).
    pub fn node_bytes(&self) -> usize {
        self.bump.allocated_bytes()
    }

    /// Empties the arena for the next message, keeping its memory unless it grew large.
    pub fn reset(&mut self) {
        self.arena.take();
        if self.bump.allocated_bytes() > KEEP_BYTES {
            self.bump = bumpalo::Bump::new();
        } else {
            self.bump.reset();
        }
        crate::memory::give(self.held.replace(0));
        self.nodes_charged.set(self.bump.allocated_bytes());
    }
}

/// One ranked layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// api_key of the layout.
    pub api_key: i16,
    /// The API's name.
    pub api_name: Option<String>,
    /// api_version of the layout.
    pub api_version: i16,
    /// Request or response.
    pub direction: Direction,
    /// Its score (higher is better; only the order between candidates means anything).
    pub score: f64,
}

/// The mark of a guessed decode (set by `decode::guess`, the ranked guesses for frames whose
/// layout the input does not give): the candidates that fit, best first (the first is the
/// decode shown), at most `1 + decode::guess::MAX_CANDIDATES`.
#[derive(Clone, Debug, PartialEq)]
pub struct Guess {
    /// Best first.
    pub candidates: Vec<Candidate>,
    /// The request reading this guess beat, when it had problems (`kwire decode` of a
    /// frame with no direction given): its errors and warnings, counted; the message's
    /// root carries them at their offsets as a warning.
    pub beaten: Option<Beaten>,
}

/// A reading of the frame that failed and lost to the guess shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beaten {
    /// The direction of that reading (a request).
    pub direction: Direction,
    /// Errors it had.
    pub errors: usize,
    /// Warnings it had.
    pub warnings: usize,
}

/// The type name of one `Record[i]` node (a v2 record, as `decode::records` builds it): the value's definition
/// (`OffsetCommitValue v3`), a control record's name (`SNAPSHOT_HEADER`), `tombstone` and
/// the key's definition, or `record` for records of other topics.
pub fn record_type(rec: &Node<'_>) -> String {
    let key = rec.children.iter().find(|c| c.name == "key");
    let value = rec.children.iter().find(|c| c.name == "value");
    if let Some(k) = key.filter(|k| k.ty == "ControlRecordKey") {
        return k.annotation.unwrap_or("unknown control record").to_string();
    }
    match (key, value) {
        (Some(k), Some(v)) if v.value == Value::Null && k.ty != "bytes" => {
            format!("tombstone {}", k.ty)
        }
        (_, Some(v)) if v.kind == NodeKind::Group && v.ty != "bytes" => v.ty.to_string(),
        (Some(k), Some(v)) if v.kind == NodeKind::Group => format!("{} (value not decoded)", k.ty),
        _ => "record".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>() {}

    /// A worker thread can own an arena and a message decoded into it.
    #[test]
    fn message_and_arena_are_send() {
        send::<Buffers>();
        send::<Message<'static>>();
        send::<Node<'static>>();
        // What a node holds besides its children (their Send/Sync impls rely on it).
        fn both<T: Send + Sync>() {}
        both::<Value<'static>>();
        both::<Option<&'static str>>();
        both::<(NodeKind, Region, usize, u32)>();
    }

    /// Children sealed into the arena read back in order; a reset arena starts empty and
    /// keeps its memory for the next message.
    #[test]
    fn arena_children_and_reset() {
        let mut arena = Buffers::new();
        for round in 0..3 {
            let kids: Vec<Node> = (0..100)
                .map(|i| {
                    Node::leaf(
                        arena.fmt(format_args!("x[{i}]")),
                        "int8",
                        Value::Int(i),
                        0,
                        1,
                    )
                })
                .collect();
            let mut root = Node::new("root", "struct", NodeKind::Struct, 0);
            root.children = arena.seal(kids);
            assert_eq!(root.children.len(), 100);
            assert_eq!(root.children[7].name, "x[7]");
            assert_eq!((&root.children).into_iter().count(), 100);
            assert_eq!(root.find("x[99]").map(|n| &n.value), Some(&Value::Int(99)));
            let used = arena.node_bytes();
            assert!(used > 0, "round {round}");
            arena.reset();
        }
    }
}
