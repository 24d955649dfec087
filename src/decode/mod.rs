//! The schema-driven walk of a Kafka frame into a [`Message`] tree.
//!
//! Given one frame (4-byte size prefix included) the decoder reads the header by the
//! schema's header rules, then walks the body's definition for `(api_key, api_version)`:
//! every field present in that version, in order, tagged fields by their tags. `records`
//! fields go to [`records`]; bytes fields that carry other structures (consumer protocol,
//! Envelope) go to nested walks. Errors stop the walk at their offset and leave a partial
//! tree; nothing panics and no allocation is sized from an unchecked length.

pub mod compress;
pub mod records;
pub mod walk;

use crate::schema::Schema;
use crate::tree::{Buffers, Node};
use crate::wire::{WResult, WireError};

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
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions { max_decompressed: 64 << 20, max_depth: 64, page_mode: false }
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
}

impl<'a> Cx<'a> {
    /// A context over `schema` with decompressed buffers going into `arena`.
    pub fn new(schema: &'a Schema, arena: &'a Buffers, opts: &'a DecodeOptions) -> Cx<'a> {
        Cx { schema, arena, buffers: Vec::new(), decompressed: 0, opts, depth: 0 }
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
}

impl<'a> Reader<'a> {
    /// A reader over `data`, whose first byte sits at `pos` in buffer `buffer`.
    pub fn new(data: &'a [u8], pos: usize, buffer: u32) -> Reader<'a> {
        Reader { rest: data, pos, buffer }
    }

    /// Runs a nom parser; on success advances and returns the value with its offset and
    /// length.
    ///
    /// # Errors
    /// The parser's [`WireError`], with the reader left where the primitive started.
    pub fn read<T>(&mut self, p: impl Fn(&'a [u8]) -> WResult<'a, T>) -> Result<(T, usize, usize), WireError<'a>> {
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
                kind: crate::wire::WireErrorKind::Eof { need: 1, have: self.rest.len() },
            }),
        }
    }

    /// Takes the next `n` bytes as a sub-reader (and skips them here).
    pub fn split(&mut self, n: usize) -> Option<Reader<'a>> {
        if n > self.rest.len() {
            return None;
        }
        let sub = Reader { rest: &self.rest[..n], pos: self.pos, buffer: self.buffer };
        self.rest = &self.rest[n..];
        self.pos += n;
        Some(sub)
    }

    /// Bytes left.
    pub fn left(&self) -> usize {
        self.rest.len()
    }

    /// A leaf covering every byte left, with an error: what a walk leaves where it stops.
    pub fn error_leaf(&mut self, name: &str, ty: &str, msg: String) -> Node<'a> {
        let mut n = Node::leaf(name.to_string(), ty.to_string(), crate::tree::Value::Bytes(self.rest), self.pos, self.rest.len());
        n.buffer = self.buffer;
        n.error = Some(msg);
        self.pos += self.rest.len();
        self.rest = &[];
        n
    }
}
