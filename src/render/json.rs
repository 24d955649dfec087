//! The JSON printer: one object per message, on one line (NDJSON). The shape is
//! documented in `docs/json-format.md` and checked by `docs/kwire-message.schema.json`.

use std::io::{self, Write};

use serde_json::{json, Map, Value as J};

use super::{rfc3339, value_json, Context};
use crate::tree::{Located, Message, Node};

/// Prints `msg` as one JSON line.
///
/// # Errors
/// The writer's errors.
pub fn render(w: &mut dyn Write, msg: &Message<'_>, ctx: Option<&Context>) -> io::Result<()> {
    serde_json::to_writer(&mut *w, &message_json(msg, ctx)).map_err(io::Error::from)?;
    writeln!(w)
}

/// The message object.
pub fn message_json(msg: &Message<'_>, ctx: Option<&Context>) -> J {
    let mut m = Map::new();
    m.insert("kind".into(), msg.direction.as_str().into());
    m.insert("api_key".into(), msg.api_key.into());
    m.insert("api_name".into(), msg.api_name.clone().into());
    m.insert("api_version".into(), msg.api_version.into());
    m.insert("correlation_id".into(), msg.correlation_id.into());
    m.insert("header_version".into(), msg.header_version.into());
    m.insert("size".into(), msg.size.into());
    m.insert("schema_release".into(), msg.schema_release.clone().into());
    if let Some(c) = ctx {
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
    m.insert("name".into(), n.name.as_ref().into());
    m.insert("type".into(), n.ty.as_ref().into());
    m.insert("value".into(), value_json(&n.value));
    m.insert("offset".into(), n.offset.into());
    m.insert("length".into(), n.length.into());
    if n.buffer != 0 {
        m.insert("buffer".into(), n.buffer.into());
    }
    if let Some(a) = &n.annotation {
        m.insert("annotation".into(), a.as_ref().into());
    }
    if let Some(d) = &n.description {
        m.insert("description".into(), d.as_ref().into());
    }
    if let Some(e) = &n.error {
        m.insert("error".into(), e.as_str().into());
    }
    if let Some(e) = &n.warning {
        m.insert("warning".into(), e.as_str().into());
    }
    if !n.children.is_empty() {
        m.insert(
            "children".into(),
            J::Array(n.children.iter().map(node_json).collect()),
        );
    }
    J::Object(m)
}
