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
