//! The JSON printer: one object per message, on one line (NDJSON). The shape is
//! documented in `docs/json-format.md` and checked by `docs/kwire-message.schema.json`.

use std::io::{self, Write};

use serde_json::{json, Map, Value as J};

use super::{rfc3339, value_json, JSON_EXACT};
use crate::session::Context;
use crate::tree::{Located, Message, Node, Value};

/// Prints `msg` as one JSON line.
///
/// The line is written straight from the tree (no `serde_json::Value` in between) into
/// one buffer, then to `w` in one call; it is byte for byte what serializing
/// [`message_json`] gives.
///
/// With `bytes`, the object ends with `"bytes"`: the frame's bytes, size prefix
/// included, in lowercase hex (`--json-bytes`, or `-x` with `-T json`).
///
/// # Errors
/// The writer's errors.
pub fn render(
    w: &mut dyn Write,
    msg: &Message<'_>,
    ctx: Option<&Context>,
    bytes: bool,
) -> io::Result<()> {
    thread_local! {
        /// The line buffer, reused from message to message.
        static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    super::with_thread_buffer(&LINE, |out| {
        out.reserve(1024 + 160 * msg.size.min(1 << 16));
        let mut spill = Spill::new(w);
        write_message(out, msg, ctx, &mut spill);
        if bytes && out.last() == Some(&b'}') {
            out.pop();
            out.extend_from_slice(b",\"bytes\":\"");
            out.extend_from_slice(super::hex(msg.frame).as_bytes());
            out.extend_from_slice(b"\"}");
        }
        out.push(b'\n');
        spill.finish(out)
    })
}

/// The bytes a JSON string must escape: control characters, `"` and `\\`.
static ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The index of the first byte of `b` that JSON must escape. Eight bytes at a time:
/// a word with no control character, `"` or `\\` is passed over whole.
fn first_escape(b: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // Non-zero when some byte of `w` is below `n` (n <= 0x80).
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGH;
    let mut i = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_ne_bytes(chunk.try_into().unwrap_or([0; 8]));
        if below(w, 0x20) | below(w ^ (ONES * 0x22), 1) | below(w ^ (ONES * 0x5c), 1) != 0 {
            break;
        }
        i += 8;
    }
    b[i..]
        .iter()
        .position(|&c| ESCAPE[c as usize])
        .map(|j| i + j)
}

/// The JSON text of a string, escaped as serde_json escapes it.
pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut rest = b;
    // Copy runs of plain bytes whole; escape the rare byte between them.
    while let Some(i) = first_escape(rest) {
        out.extend_from_slice(&rest[..i]);
        let c = rest[i];
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
        }
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

/// An integer's JSON text.
pub(crate) fn put_int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// `,"key":`, as one literal.
macro_rules! put_key {
    ($out:expr, $key:literal) => {
        $out.extend_from_slice(concat!(",\"", $key, "\":").as_bytes())
    };
}

/// An api_key or api_version, `null` where nothing is known (the decoder's -1).
fn put_known(out: &mut Vec<u8>, v: i16) {
    if v < 0 {
        out.extend_from_slice(b"null");
    } else {
        put_int(out, v);
    }
}

/// [`put_known`] as a JSON value.
fn known(v: i16) -> J {
    if v < 0 {
        J::Null
    } else {
        v.into()
    }
}

/// The ranked layouts of a guessed decode (`candidates`: best, the decode shown, first),
/// or `None` when the layout was not guessed.
pub fn candidates_json(msg: &Message<'_>) -> Option<J> {
    let g = msg.guess.as_ref()?;
    Some(J::Array(
        g.candidates
            .iter()
            .map(|c| {
                json!({
                    "api_key": c.api_key,
                    "api_name": c.api_name,
                    "api_version": c.api_version,
                    "kind": c.direction.as_str(),
                    "score": (c.score * 100.0).round() / 100.0,
                })
            })
            .collect(),
    ))
}

fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// A float as serde_json writes it (non-finite as `null`).
fn put_f64(out: &mut Vec<u8>, f: f64) {
    // serde_json's own float formatting, so the digits are the same; writing to a Vec
    // cannot fail.
    let _ = serde_json::to_writer(&mut *out, &f);
}

/// A value as [`value_json`] gives it.
fn put_value(out: &mut Vec<u8>, v: &Value<'_>) {
    match v {
        Value::None | Value::Null | Value::Count(_) => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(i) => {
            if i.unsigned_abs() <= JSON_EXACT {
                put_int(out, *i);
            } else {
                out.push(b'"');
                put_int(out, *i);
                out.push(b'"');
            }
        }
        Value::UInt(u) => {
            if *u <= JSON_EXACT {
                put_int(out, *u);
            } else {
                out.push(b'"');
                put_int(out, *u);
                out.push(b'"');
            }
        }
        Value::Float(f) => {
            if f.is_finite() {
                put_f64(out, *f);
            } else {
                put_str(out, &f.to_string());
            }
        }
        Value::Str(s) => put_str(out, s),
        Value::Bytes(b) => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push(b'"');
            let start = out.len();
            out.resize(start + b.len() * 2, 0);
            for (d, x) in out[start..].chunks_exact_mut(2).zip(b.iter()) {
                d[0] = HEX[(x >> 4) as usize];
                d[1] = HEX[(x & 15) as usize];
            }
            out.push(b'"');
        }
        Value::Uuid(u) => {
            out.push(b'"');
            out.extend_from_slice(
                u.hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer())
                    .as_bytes(),
            );
            out.push(b'"');
        }
    }
}

/// Where a large message's line goes while it is written: once the buffer holds
/// [`SPILL`] bytes, between two nodes, it is written out and emptied, so a message of
/// many records streams rather than being held whole (the bytes are the same).
pub(crate) struct Spill<'w> {
    w: &'w mut dyn Write,
    /// The first write error; nothing more is written after it.
    err: Option<io::Error>,
}

/// Bytes of a JSON line buffered before they are written out.
pub(crate) const SPILL: usize = 256 << 10;

impl<'w> Spill<'w> {
    /// Spills into `w`.
    pub(crate) fn new(w: &'w mut dyn Write) -> Spill<'w> {
        Spill { w, err: None }
    }

    /// Writes what `out` still holds (the line's end), or gives the first error.
    pub(crate) fn finish(self, out: &[u8]) -> io::Result<()> {
        match self.err {
            Some(e) => Err(e),
            None => self.w.write_all(out),
        }
    }

    /// Whether a write failed (nothing more will be written).
    pub(crate) fn failed(&self) -> bool {
        self.err.is_some()
    }

    /// Writes out and empties `out` once it holds [`SPILL`] bytes.
    pub(crate) fn check(&mut self, out: &mut Vec<u8>) {
        if out.len() >= SPILL {
            if self.err.is_none() {
                if let Err(e) = self.w.write_all(out) {
                    self.err = Some(e);
                }
            }
            out.clear();
        }
    }
}

fn write_message(
    out: &mut Vec<u8>,
    msg: &Message<'_>,
    ctx: Option<&Context>,
    spill: &mut Spill<'_>,
) {
    out.extend_from_slice(b"{\"kind\":");
    put_str(out, msg.direction.as_str());
    put_key!(out, "api_key");
    put_known(out, msg.api_key);
    put_key!(out, "api_name");
    put_opt_str(out, msg.api_name);
    put_key!(out, "api_version");
    put_known(out, msg.api_version);
    put_key!(out, "correlation_id");
    match msg.correlation_id {
        Some(c) => put_int(out, c),
        None => out.extend_from_slice(b"null"),
    }
    put_key!(out, "header_version");
    put_int(out, msg.header_version);
    put_key!(out, "size");
    put_int(out, msg.size);
    put_key!(out, "schema_release");
    put_opt_str(out, msg.schema_release);
    if let Some(c) = candidates_json(msg) {
        out.extend_from_slice(b",\"guessed\":true,\"candidates\":");
        out.extend_from_slice(c.to_string().as_bytes());
    }
    if let Some(c) = ctx {
        if let Some(cap) = &c.capture {
            put_key!(out, "capture");
            put_str(out, cap);
        }
        put_key!(out, "frame");
        out.push(b'[');
        put_int(out, c.frames.0);
        out.push(b',');
        put_int(out, c.frames.1);
        out.push(b']');
        put_key!(out, "time");
        put_str(out, &rfc3339(c.time.0, c.time.1));
        put_key!(out, "src");
        put_str(out, &c.src);
        put_key!(out, "dst");
        put_str(out, &c.dst);
        put_key!(out, "connection");
        put_int(out, c.connection);
        put_key!(out, "latency_ms");
        match c.latency {
            Some(d) => put_f64(out, d.as_secs_f64() * 1000.0),
            None => out.extend_from_slice(b"null"),
        }
        put_key!(out, "incomplete");
        out.extend_from_slice(if c.incomplete { b"true" } else { b"false" });
        if let Some(t) = &c.tls {
            put_key!(out, "tls");
            out.extend_from_slice(b"{\"version\":");
            put_str(out, t.session.version);
            put_key!(out, "cipher_suite");
            put_str(out, t.session.cipher_suite);
            put_key!(out, "sni");
            put_opt_str(out, t.session.sni.as_deref());
            put_key!(out, "records");
            out.push(b'[');
            for (i, r) in t.records.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                put_int(out, *r);
            }
            out.extend_from_slice(b"]}");
        }
    }
    write_problems(out, Some(&msg.tree), None);
    put_key!(out, "tree");
    write_node(out, &msg.tree, spill);
    out.push(b'}');
}

/// `,"errors":[...],"warnings":[...]`: every error and warning of `tree` as
/// `{"offset","buffer"?,"message"}`, in tree order, and `extra` (an offset and a
/// message) last among the errors.
pub(crate) fn write_problems(
    out: &mut Vec<u8>,
    tree: Option<&Node<'_>>,
    extra: Option<(u64, &str)>,
) {
    // Errors and warnings in one walk: warnings go to a second buffer.
    let mut warnings = Vec::new();
    out.extend_from_slice(b",\"errors\":[");
    let (mut first_e, mut first_w) = (true, true);
    if let Some(t) = tree {
        t.walk(&mut |n, _| {
            for (m, buf, first) in [
                (n.error(), &mut *out, &mut first_e),
                (n.warning(), &mut warnings, &mut first_w),
            ] {
                if let Some(m) = m {
                    if !*first {
                        buf.push(b',');
                    }
                    *first = false;
                    buf.extend_from_slice(b"{\"offset\":");
                    put_int(buf, n.offset);
                    if n.buffer != 0 {
                        put_key!(buf, "buffer");
                        put_int(buf, n.buffer);
                    }
                    put_key!(buf, "message");
                    put_str(buf, m);
                    buf.push(b'}');
                }
            }
        });
    }
    if let Some((at, m)) = extra {
        if !first_e {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"offset\":");
        put_int(out, at);
        put_key!(out, "message");
        put_str(out, m);
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"warnings\":[");
    out.extend_from_slice(&warnings);
    out.push(b']');
}

/// A node and its descendants, as [`node_json`] gives them; between two children, a
/// buffer past [`SPILL`] bytes is written out through `spill`.
pub(crate) fn write_node(out: &mut Vec<u8>, n: &Node<'_>, spill: &mut Spill<'_>) {
    out.extend_from_slice(b"{\"name\":");
    put_str(out, n.name);
    put_key!(out, "type");
    put_str(out, n.ty);
    put_key!(out, "value");
    put_value(out, &n.value);
    put_key!(out, "offset");
    put_int(out, n.offset);
    put_key!(out, "length");
    put_int(out, n.length);
    if n.buffer != 0 {
        put_key!(out, "buffer");
        put_int(out, n.buffer);
    }
    if let Some(a) = &n.annotation {
        put_key!(out, "annotation");
        put_str(out, a);
    }
    if let Some(d) = &n.description {
        put_key!(out, "description");
        put_str(out, d);
    }
    if let Some(e) = n.error() {
        put_key!(out, "error");
        put_str(out, e);
    }
    if let Some(e) = n.warning() {
        put_key!(out, "warning");
        put_str(out, e);
    }
    if !n.children.is_empty() {
        put_key!(out, "children");
        out.push(b'[');
        for (i, c) in n.children.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_node(out, c, spill);
            spill.check(out);
        }
        out.push(b']');
    }
    out.push(b'}');
}

/// The message object.
pub fn message_json(msg: &Message<'_>, ctx: Option<&Context>) -> J {
    let mut m = Map::new();
    m.insert("kind".into(), msg.direction.as_str().into());
    m.insert("api_key".into(), known(msg.api_key));
    m.insert("api_name".into(), msg.api_name.into());
    m.insert("api_version".into(), known(msg.api_version));
    m.insert("correlation_id".into(), msg.correlation_id.into());
    m.insert("header_version".into(), msg.header_version.into());
    m.insert("size".into(), msg.size.into());
    m.insert("schema_release".into(), msg.schema_release.into());
    if let Some(c) = candidates_json(msg) {
        m.insert("guessed".into(), true.into());
        m.insert("candidates".into(), c);
    }
    if let Some(c) = ctx {
        if let Some(cap) = &c.capture {
            m.insert("capture".into(), cap.to_string().into());
        }
        m.insert("frame".into(), json!([c.frames.0, c.frames.1]));
        m.insert("time".into(), rfc3339(c.time.0, c.time.1).into());
        m.insert("src".into(), c.src.clone().into());
        m.insert("dst".into(), c.dst.clone().into());
        m.insert("connection".into(), c.connection.into());
        m.insert(
            "latency_ms".into(),
            c.latency.map(|d| d.as_secs_f64() * 1000.0).into(),
        );
        m.insert("incomplete".into(), c.incomplete.into());
        if let Some(t) = &c.tls {
            m.insert(
                "tls".into(),
                json!({
                    "version": t.session.version,
                    "cipher_suite": t.session.cipher_suite,
                    "sni": t.session.sni,
                    "records": t.records,
                }),
            );
        }
    }
    m.insert("errors".into(), located(&msg.errors()));
    m.insert("warnings".into(), located(&msg.warnings()));
    m.insert("tree".into(), node_json(&msg.tree));
    J::Object(m)
}

fn located(v: &[Located]) -> J {
    J::Array(
        v.iter()
            .map(|l| {
                let mut m = Map::new();
                m.insert("offset".into(), l.offset.into());
                if l.buffer != 0 {
                    m.insert("buffer".into(), l.buffer.into());
                }
                m.insert("message".into(), l.message.clone().into());
                J::Object(m)
            })
            .collect(),
    )
}

/// A node object: `name`, `type`, `value`, `offset`, `length`, and when they apply
/// `buffer`, `annotation`, `description`, `error`, `warning`, `children`.
pub fn node_json(n: &Node<'_>) -> J {
    let mut m = Map::new();
    m.insert("name".into(), n.name.into());
    m.insert("type".into(), n.ty.into());
    m.insert("value".into(), value_json(&n.value));
    m.insert("offset".into(), n.offset.into());
    m.insert("length".into(), n.length.into());
    if n.buffer != 0 {
        m.insert("buffer".into(), n.buffer.into());
    }
    if let Some(a) = &n.annotation {
        m.insert("annotation".into(), (*a).into());
    }
    if let Some(d) = &n.description {
        m.insert("description".into(), (*d).into());
    }
    if let Some(e) = n.error() {
        m.insert("error".into(), e.into());
    }
    if let Some(e) = n.warning() {
        m.insert("warning".into(), e.into());
    }
    if !n.children.is_empty() {
        m.insert(
            "children".into(),
            J::Array(n.children.iter().map(node_json).collect()),
        );
    }
    J::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Direction, NodeKind};
    use std::time::Duration;

    proptest::proptest! {
        /// The word-at-a-time scan finds the same byte as a plain scan, and `put_str`
        /// writes what serde_json writes.
        #[test]
        fn escaping_agrees_with_a_plain_scan_and_serde_json(
            s in proptest::collection::vec(proptest::prelude::any::<char>(), 0..40),
            ascii in proptest::collection::vec(0u8..0x80, 0..40),
        ) {
            let s: String = s.into_iter().collect();
            let a = String::from_utf8(ascii).unwrap_or_default();
            for t in [s.as_str(), a.as_str()] {
                let b = t.as_bytes();
                proptest::prop_assert_eq!(
                    first_escape(b),
                    b.iter().position(|&c| ESCAPE[c as usize])
                );
                let mut out = Vec::new();
                put_str(&mut out, t);
                proptest::prop_assert_eq!(out, serde_json::to_vec(t).unwrap_or_default());
            }
        }
    }

    /// The streaming writer gives exactly what serializing `message_json` gives.
    #[test]
    fn streaming_equals_serde_json() {
        let frame = [0u8; 8];
        let mut root = Node::new(
            "Root \"q\"\n\u{1}\u{7f}é",
            "message v1",
            NodeKind::Message,
            0,
        );
        root.length = 8;
        let values = [
            Value::None,
            Value::Null,
            Value::Bool(true),
            Value::Int(-5),
            Value::Int(i64::MIN),
            Value::UInt(u64::MAX),
            Value::UInt(7),
            Value::Float(0.1),
            Value::Float(1.0),
            Value::Float(f64::NAN),
            Value::Float(f64::INFINITY),
            Value::Str("tab\there \\ \u{8}\u{c}"),
            Value::Bytes(&[0, 0xab, 0xff]),
            Value::Uuid(uuid::Uuid::from_u128(
                0x0123_4567_89ab_cdef_0123_4567_89ab_cdef,
            )),
            Value::Count(3),
        ];
        let arena = crate::tree::Buffers::new();
        let mut kids = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let name = arena.fmt(format_args!("f{i}"));
            let mut n = Node::leaf(name, "int32", v.clone(), i, 1);
            n.buffer = (i % 2) as u32;
            if i % 3 == 0 {
                n.annotation = Some("ann \"x\"");
                n.set_error(arena.fmt(format_args!("err {i}")));
            }
            if i % 4 == 0 {
                n.description = Some("desc");
                n.set_warning("warn\r");
            }
            kids.push(n);
        }
        root.children = arena.seal(kids);
        let msg = Message {
            direction: Direction::Response,
            api_key: 1,
            api_name: Some("Fetch"),
            api_version: 11,
            correlation_id: None,
            header_version: 0,
            size: 8,
            schema_release: None,
            frame: &frame,
            buffers: Vec::new(),
            tree: root,
            guess: None,
        };
        for ctx in [
            None,
            Some(Context {
                frames: (3, 9),
                time: (1_714_557_600, 123_456_789),
                src: "10.0.0.1:9092".into(),
                dst: "10.1.0.2:40000".into(),
                connection: 4,
                latency: Some(Duration::from_nanos(1_234_567)),
                incomplete: true,
                capture: Some("broker-1/a \"b\".pcap".into()),
                first_time: None,
                previous_time: None,
                tls: None,
            }),
            Some(Context {
                frames: (5, 5),
                connection: 2,
                tls: Some(crate::input::tls::TlsFrameInfo {
                    session: std::sync::Arc::new(crate::input::tls::TlsSession {
                        version: "TLS 1.3",
                        cipher_suite: "TLS_AES_128_GCM_SHA256",
                        sni: Some("broker \"1\"".into()),
                        alpn: None,
                    }),
                    records: vec![3, 4],
                }),
                ..Context::default()
            }),
        ] {
            let mut got = Vec::new();
            render(&mut got, &msg, ctx.as_ref(), false).unwrap();
            let want = serde_json::to_string(&message_json(&msg, ctx.as_ref())).unwrap() + "\n";
            assert_eq!(String::from_utf8(got).unwrap(), want);
        }
    }
}
