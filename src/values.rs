//! The values shape: a decoded message's fields alone, as JSON, the input of
//! `kwire encode` ([`crate::encode::encode`]). `docs/values-format.md` describes it.
//!
//! ```json
//! {"kind":"request","api_key":20,"api_name":"DeleteTopics","api_version":6,
//!  "header":{"correlation_id":0,"client_id":""},
//!  "body":{"Topics":[{"Name":"","TopicId":"00000000-0000-0000-0000-000000000000"}],
//!          "TimeoutMs":0}}
//! ```
//!
//! Body fields go by their schema names, structs as objects and arrays as arrays;
//! tagged fields present on the wire appear by name, unknown tags as
//! `"_unknown_tags":{"TAG":"hex"}`. Integers are JSON numbers while |v| <= 2^53 and
//! decimal strings past that; bytes are lowercase hex; uuids canonical; null is null.
//! `records` fields are lists of batches (see [`crate::encode::records`]), or raw hex
//! when the bytes are not whole well-formed batches. Bytes fields that carry a nested
//! structure (consumer protocol, Envelope) stay as their raw hex, so encoding the values
//! gives the same bytes. Computed fields (lengths, CRCs, counts) are left out.

use crate::encode::records::parse_records;
use crate::encode::{float_json, int_json, to_hex, uint_json};
use crate::tree::{Message, Node, NodeKind, Value as TV};
use serde_json::{Map, Value};

/// The message's fields in the values shape (see the module docs).
///
/// Works from the tree alone: structural nodes (`length`, `present`, `tagged_fields`
/// counts, the size prefix) are left out. A part of the tree that stopped on an error
/// gives what was read before the error.
pub fn to_values(msg: &Message<'_>) -> Value {
    let mut o = Map::new();
    o.insert("kind".into(), msg.direction.as_str().into());
    // Null where nothing is known (the decoder's -1).
    let known = |v: i16| if v < 0 { Value::Null } else { v.into() };
    o.insert("api_key".into(), known(msg.api_key));
    if let Some(n) = &msg.api_name {
        o.insert("api_name".into(), (*n).into());
    }
    o.insert("api_version".into(), known(msg.api_version));
    let mut header = Map::new();
    let mut body = Value::Object(Map::new());
    for c in &msg.tree.children {
        match c.kind {
            NodeKind::Header => {
                header = struct_map(msg, &c.children);
                header.shift_remove("request_api_key");
                header.shift_remove("request_api_version");
            }
            NodeKind::Body => body = Value::Object(struct_map(msg, &c.children)),
            // A body the schema could not walk (unknown api_key or version, a response
            // whose request was not seen) stays its bytes, as hex: never dropped.
            NodeKind::Field if c.name == "body" => {
                if let TV::Bytes(b) = c.value {
                    body = Value::String(to_hex(b));
                }
            }
            _ => {}
        }
    }
    o.insert("header".into(), Value::Object(header));
    o.insert("body".into(), body);
    Value::Object(o)
}

/// The fields of a struct from its children: every field node by name, tagged fields
/// by name and unknown tags under `_unknown_tags`.
fn struct_map(msg: &Message<'_>, children: &[Node<'_>]) -> Map<String, Value> {
    let mut o = Map::new();
    let mut unknown = Map::new();
    for c in children {
        match c.name {
            "present" | "length" | "unread" | "trailing bytes" => {}
            "tagged_fields" => {
                for t in c.children.iter().filter(|t| t.name != "count") {
                    let tag = t
                        .children
                        .first()
                        .and_then(|x| match x.value {
                            TV::UInt(v) => Some(v),
                            _ => None,
                        })
                        .unwrap_or(0);
                    let Some(v) = t.children.get(2) else {
                        continue;
                    };
                    if t.name.starts_with("unknown tag ") {
                        unknown.insert(tag.to_string(), leaf_value(v));
                    } else {
                        o.insert(t.name.to_string(), node_value(msg, v));
                    }
                }
            }
            name => {
                o.insert(name.to_string(), node_value(msg, c));
            }
        }
    }
    if !unknown.is_empty() {
        o.insert("_unknown_tags".into(), Value::Object(unknown));
    }
    o
}

fn leaf_value(n: &Node<'_>) -> Value {
    match &n.value {
        TV::None | TV::Null => Value::Null,
        TV::Bool(b) => (*b).into(),
        TV::Int(i) => int_json(*i),
        TV::UInt(u) => uint_json(*u),
        TV::Float(x) => float_json(*x),
        TV::Str(s) => (*s).into(),
        TV::Bytes(b) => to_hex(b).into(),
        TV::Uuid(u) => u.to_string().into(),
        TV::Count(c) => uint_json(*c),
    }
}

/// The value of one field node.
fn node_value(msg: &Message<'_>, n: &Node<'_>) -> Value {
    if n.ty == "records" {
        return records_value(msg, n);
    }
    match n.kind {
        NodeKind::Array => {
            if n.value == TV::Null {
                return Value::Null;
            }
            Value::Array(
                n.children
                    .iter()
                    .filter(|c| c.name != "length" && c.name != "unread")
                    .map(|c| node_value(msg, c))
                    .collect(),
            )
        }
        NodeKind::Struct => {
            if n.value == TV::Null {
                Value::Null
            } else {
                Value::Object(struct_map(msg, &n.children))
            }
        }
        _ => leaf_value(n),
    }
}

/// A records field: its bytes read back as batches, or raw hex.
fn records_value(msg: &Message<'_>, n: &Node<'_>) -> Value {
    let data: &[u8] = match (&n.value, n.children.first()) {
        (TV::Null, _) => return Value::Null,
        (TV::Bytes(b), _) if n.children.is_empty() => b,
        (_, Some(len)) if len.name == "length" => {
            let buf = msg.buffer(n.buffer);
            match buf.get(len.end()..n.end()) {
                Some(b) => b,
                None => return Value::Null,
            }
        }
        _ => return Value::Null,
    };
    parse_records(data).unwrap_or_else(|| Value::String(to_hex(data)))
}

/// Appends [`to_values`] of `msg` to `out` as compact JSON: the bytes
/// `serde_json::to_writer(out, &to_values(msg))` writes, without building the value
/// tree (no map, string or vector a field). A struct whose keys repeat (where the map
/// keeps the last value in the first place) is built as [`to_values`] builds it.
pub fn write_values(out: &mut Vec<u8>, msg: &Message<'_>) {
    out.extend_from_slice(b"{\"kind\":");
    put_str(out, msg.direction.as_str());
    out.extend_from_slice(b",\"api_key\":");
    put_known(out, msg.api_key);
    if let Some(n) = &msg.api_name {
        out.extend_from_slice(b",\"api_name\":");
        put_str(out, n);
    }
    out.extend_from_slice(b",\"api_version\":");
    put_known(out, msg.api_version);
    // The last header and the last body win, as in `to_values`.
    let (mut header, mut body) = (None, None);
    for c in &msg.tree.children {
        match c.kind {
            NodeKind::Header => header = Some(c),
            NodeKind::Body => body = Some(c),
            NodeKind::Field if c.name == "body" && matches!(c.value, TV::Bytes(_)) => {
                body = Some(c)
            }
            _ => {}
        }
    }
    out.extend_from_slice(b",\"header\":");
    match header {
        Some(h) => {
            const LEFT_OUT: [&str; 2] = ["request_api_key", "request_api_version"];
            put_struct(out, msg, &h.children, &LEFT_OUT);
        }
        None => out.extend_from_slice(b"{}"),
    }
    out.extend_from_slice(b",\"body\":");
    match body {
        Some(b) if b.kind == NodeKind::Body => put_struct(out, msg, &b.children, &[]),
        Some(Node {
            value: TV::Bytes(b),
            ..
        }) => put_hex(out, b),
        _ => out.extend_from_slice(b"{}"),
    }
    out.push(b'}');
}

/// `s` as a JSON string, escaped as serde_json escapes it.
fn put_str(out: &mut Vec<u8>, s: &str) {
    // Writing into a vector cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// `v` as serde_json writes it.
fn put_json(out: &mut Vec<u8>, v: &Value) {
    let _ = serde_json::to_writer(&mut *out, v);
}

/// An api key or version: null where the decoder does not know it (-1).
fn put_known(out: &mut Vec<u8>, v: i16) {
    if v < 0 {
        out.extend_from_slice(b"null");
    } else {
        out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }
}

/// Bytes as a string of lowercase hex ([`to_hex`]).
fn put_hex(out: &mut Vec<u8>, b: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(b.len() * 2 + 2);
    out.push(b'"');
    for x in b {
        out.push(HEX[usize::from(x >> 4)]);
        out.push(HEX[usize::from(x & 15)]);
    }
    out.push(b'"');
}

/// A struct's fields from its children, as [`struct_map`] gives them (less the keys
/// `left_out`), written as they are found; built as a map when a key repeats.
fn put_struct(out: &mut Vec<u8>, msg: &Message<'_>, children: &[Node<'_>], left_out: &[&str]) {
    let mut keys: Vec<&str> = Vec::with_capacity(children.len());
    let mut unknown: Vec<u64> = Vec::new();
    for c in children {
        match c.name {
            "present" | "length" | "unread" | "trailing bytes" => {}
            "tagged_fields" => {
                for t in c.children.iter().filter(|t| t.name != "count") {
                    if t.children.get(2).is_none() {
                        continue;
                    }
                    if t.name.starts_with("unknown tag ") {
                        unknown.push(tag_of(t));
                    } else {
                        keys.push(t.name);
                    }
                }
            }
            name => keys.push(name),
        }
    }
    if !unknown.is_empty() {
        keys.push("_unknown_tags");
    }
    if has_repeats(&keys) || has_repeats(&unknown) {
        let mut o = struct_map(msg, children);
        for k in left_out {
            o.shift_remove(*k);
        }
        return put_json(out, &Value::Object(o));
    }
    out.push(b'{');
    let mut first = true;
    let mut key = |out: &mut Vec<u8>, k: &str| {
        if !first {
            out.push(b',');
        }
        first = false;
        put_str(out, k);
        out.push(b':');
    };
    for c in children {
        match c.name {
            "present" | "length" | "unread" | "trailing bytes" => {}
            "tagged_fields" => {
                for t in c.children.iter().filter(|t| t.name != "count") {
                    let Some(v) = t.children.get(2) else {
                        continue;
                    };
                    if !t.name.starts_with("unknown tag ") && !left_out.contains(&t.name) {
                        key(out, t.name);
                        put_node(out, msg, v);
                    }
                }
            }
            name if left_out.contains(&name) => {}
            name => {
                key(out, name);
                put_node(out, msg, c);
            }
        }
    }
    if !unknown.is_empty() && !left_out.contains(&"_unknown_tags") {
        key(out, "_unknown_tags");
        out.push(b'{');
        let mut first = true;
        for c in children.iter().filter(|c| c.name == "tagged_fields") {
            for t in c.children.iter().filter(|t| t.name != "count") {
                let Some(v) = t.children.get(2) else {
                    continue;
                };
                if t.name.starts_with("unknown tag ") {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    put_str(out, itoa::Buffer::new().format(tag_of(t)));
                    out.push(b':');
                    put_leaf(out, v);
                }
            }
        }
        out.push(b'}');
    }
    out.push(b'}');
}

/// Whether some item of `v` comes twice: pair by pair for a few, sorted for many (a
/// tagged-field section may hold tens of thousands of unknown tags).
fn has_repeats<T: Ord + Copy>(v: &[T]) -> bool {
    if v.len() <= 16 {
        return v.iter().enumerate().any(|(i, k)| v[..i].contains(k));
    }
    let mut sorted = v.to_vec();
    sorted.sort_unstable();
    sorted.windows(2).any(|w| w[0] == w[1])
}

/// A tagged field's tag number (its first child), 0 when unreadable.
fn tag_of(t: &Node<'_>) -> u64 {
    t.children
        .first()
        .and_then(|x| match x.value {
            TV::UInt(v) => Some(v),
            _ => None,
        })
        .unwrap_or(0)
}

/// [`leaf_value`], written.
fn put_leaf(out: &mut Vec<u8>, n: &Node<'_>) {
    match &n.value {
        TV::None | TV::Null => out.extend_from_slice(b"null"),
        TV::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        TV::Int(i) => put_json(out, &int_json(*i)),
        TV::UInt(u) => put_json(out, &uint_json(*u)),
        TV::Float(x) => put_json(out, &float_json(*x)),
        TV::Str(s) => put_str(out, s),
        TV::Bytes(b) => put_hex(out, b),
        TV::Uuid(u) => {
            out.push(b'"');
            let mut buf = uuid::Uuid::encode_buffer();
            out.extend_from_slice(u.hyphenated().encode_lower(&mut buf).as_bytes());
            out.push(b'"');
        }
        TV::Count(c) => put_json(out, &uint_json(*c)),
    }
}

/// [`node_value`], written.
fn put_node(out: &mut Vec<u8>, msg: &Message<'_>, n: &Node<'_>) {
    if n.ty == "records" {
        return put_json(out, &records_value(msg, n));
    }
    match n.kind {
        NodeKind::Array if n.value == TV::Null => out.extend_from_slice(b"null"),
        NodeKind::Array => {
            out.push(b'[');
            let mut first = true;
            for c in n
                .children
                .iter()
                .filter(|c| c.name != "length" && c.name != "unread")
            {
                if !first {
                    out.push(b',');
                }
                first = false;
                put_node(out, msg, c);
            }
            out.push(b']');
        }
        NodeKind::Struct if n.value == TV::Null => out.extend_from_slice(b"null"),
        NodeKind::Struct => put_struct(out, msg, &n.children, &[]),
        _ => put_leaf(out, n),
    }
}
