//! The values printer: the message's fields alone, nested by schema field names, as one
//! JSON object on one line: the shape `kwire encode` takes.
//!
//! ```json
//! {"kind":"request","api_key":20,"api_name":"DeleteTopics","api_version":6,
//!  "correlation_id":0,"client_id":"",
//!  "body":{"Topics":[{"Name":"","TopicId":"00000000-0000-0000-0000-000000000000"}],"TimeoutMs":0}}
//! ```
//!
//! Structural leaves (`length` prefixes, `tagged_fields` counts) are left out; tagged
//! fields the schema names appear by their names; a `records` field is a list of batch
//! objects, each with its fields and its records. See `docs/json-format.md`.

use std::io::{self, Write};

use serde_json::{Map, Value as J};

use super::value_json;
use crate::tree::{Message, Node, NodeKind, Value};

/// Header fields that the values object carries at its top level under other names.
const HEADER_SKIP: [&str; 4] = [
    "request_api_key",
    "request_api_version",
    "correlation_id",
    "tagged_fields",
];

/// Names of structural nodes left out of values.
const STRUCTURAL: [&str; 4] = ["length", "tagged_fields", "tag", "size"];

/// Prints the values object of `msg` as one JSON line.
///
/// # Errors
/// The writer's errors.
pub fn render(w: &mut dyn Write, msg: &Message<'_>) -> io::Result<()> {
    serde_json::to_writer(&mut *w, &message_values(msg)).map_err(io::Error::from)?;
    writeln!(w)
}

/// The values object: `kind`, `api_key`, `api_name`, `api_version`, `correlation_id`,
/// the other header fields by their names (`client_id`), and `body`.
pub fn message_values(msg: &Message<'_>) -> J {
    let mut m = Map::new();
    m.insert("kind".into(), msg.direction.as_str().into());
    m.insert("api_key".into(), msg.api_key.into());
    m.insert("api_name".into(), msg.api_name.clone().into());
    m.insert("api_version".into(), msg.api_version.into());
    m.insert("correlation_id".into(), msg.correlation_id.into());
    for part in &msg.tree.children {
        match part.kind {
            NodeKind::Header => {
                for c in &part.children {
                    if !HEADER_SKIP.contains(&&*c.name) {
                        m.insert(c.name.to_string(), node_values(c));
                    }
                }
            }
            NodeKind::Body => {
                m.insert("body".into(), node_values(part));
            }
            _ => {}
        }
    }
    J::Object(m)
}

/// The value of one node: an object for a struct or body, an array for an array or a
/// `records` field, the leaf value otherwise.
pub fn node_values(n: &Node<'_>) -> J {
    if n.value == Value::Null {
        return J::Null;
    }
    match n.kind {
        NodeKind::Array => J::Array(
            n.children
                .iter()
                .filter(|c| !is_structural(c))
                .map(node_values)
                .collect(),
        ),
        NodeKind::Struct | NodeKind::Body | NodeKind::Message => J::Object(fields(n)),
        _ if n.ty == "records" && !n.children.is_empty() => records(n),
        _ if n.value == Value::None && !n.children.is_empty() => J::Object(fields(n)),
        _ => value_json(&n.value),
    }
}

/// A decoded `records` field: an array of batches; record data left undecoded (no
/// batch under it) stays one hex string.
fn records(n: &Node<'_>) -> J {
    let parts: Vec<&Node<'_>> = n.children.iter().filter(|c| !is_structural(c)).collect();
    if parts.iter().any(|c| !c.children.is_empty()) {
        return J::Array(parts.into_iter().map(node_values).collect());
    }
    let mut hex = String::new();
    for c in parts {
        if let Value::Bytes(b) = c.value {
            hex.push_str(&super::hex(b));
        }
    }
    J::String(hex)
}

fn is_structural(n: &Node<'_>) -> bool {
    STRUCTURAL.contains(&&*n.name) && n.children.is_empty()
}

/// `Name[3]` -> `Name`.
fn element_base(name: &str) -> Option<&str> {
    let open = name.rfind('[')?;
    (name.ends_with(']')
        && name[open + 1..name.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_digit())
        && open + 2 < name.len())
    .then(|| &name[..open])
}

/// The children of a struct-like node as an object by name. Tagged fields the schema
/// names are lifted to their struct; repeated elements `X[i]` gather into an array `X`.
fn fields(n: &Node<'_>) -> Map<String, J> {
    let mut m = Map::new();
    for c in &n.children {
        if is_structural(c) {
            continue;
        }
        if c.name == "tagged_fields" {
            lift_tagged(c, &mut m);
            continue;
        }
        if let Some(base) = element_base(&c.name) {
            let e = m
                .entry(base.to_string())
                .or_insert_with(|| J::Array(Vec::new()));
            if let J::Array(a) = e {
                a.push(node_values(c));
            }
            continue;
        }
        m.insert(c.name.to_string(), node_values(c));
    }
    m
}

/// Named tagged fields under a `tagged_fields` node (possibly inside per-tag groups).
fn lift_tagged(t: &Node<'_>, m: &mut Map<String, J>) {
    for c in &t.children {
        if is_structural(c) {
            continue;
        }
        if c.kind == NodeKind::Group && c.value == Value::None {
            lift_tagged(c, m);
        } else {
            m.insert(c.name.to_string(), node_values(c));
        }
    }
}
