//! The summary printer: one line a message, like tshark's default output.
//!
//! ```text
//! #3 2024-05-01T10:00:00.000000000Z 10.0.0.1:5000 -> 10.0.0.2:9092 Produce v9 request corr=7 topics=orders[0,1] records=3
//! #4 2024-05-01T10:00:00.002000000Z 10.0.0.2:9092 -> 10.0.0.1:5000 Produce v9 response corr=7 topics=orders[0,1] errors=NOT_LEADER_OR_FOLLOWER latency=2.000ms
//! ```
//!
//! The fields come from node names: topics (`Name`/`Topic`/`TopicName` in a topic
//! struct, `TopicNames`/`Topics` string arrays, `TopicId` when no name) with their
//! partitions (`PartitionIndex`/`Partition`/`PartitionId`), `GroupId`,
//! `TransactionalId`, record counts (`RecordBatch`, `Record[..]`) and non-zero
//! `ErrorCode`s by the error name in their annotation.

use std::io::{self, Write};

use super::{
    api_label, latency_text, rfc3339, text::frames_text, value_text, Context, RenderOptions,
};
use crate::tree::{Message, Node, NodeKind, Value};

/// Topics shown before `+N more`.
const MAX_TOPICS: usize = 5;
/// Partitions shown per topic before `,...`.
const MAX_PARTITIONS: usize = 8;

/// Prints the summary line of `msg`.
///
/// # Errors
/// The writer's errors.
pub fn render(
    w: &mut dyn Write,
    msg: &Message<'_>,
    ctx: Option<&Context>,
    opts: &RenderOptions,
) -> io::Result<()> {
    writeln!(w, "{}", line(msg, ctx, opts))
}

/// The summary line, without the newline.
pub fn line(msg: &Message<'_>, ctx: Option<&Context>, opts: &RenderOptions) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(c) = ctx {
        parts.push(frames_text(c));
        parts.push(rfc3339(c.time.0, c.time.1));
        parts.push(format!("{} -> {}", c.src, c.dst));
    }
    parts.push(format!(
        "{} v{} {}",
        api_label(msg),
        msg.api_version,
        msg.direction.as_str()
    ));
    match msg.correlation_id {
        Some(id) => parts.push(format!("corr={id}")),
        None => parts.push("corr=?".into()),
    }
    let f = Facts::gather(&msg.tree, opts.max_value_len.min(48));
    for (key, v) in [("group", &f.group), ("txn", &f.transactional)] {
        if let Some(v) = v {
            parts.push(format!("{key}={v}"));
        }
    }
    if !f.topics.is_empty() {
        let mut t: Vec<String> = f.topics.iter().take(MAX_TOPICS).map(Topic::text).collect();
        if f.topics.len() > MAX_TOPICS {
            t.push(format!("+{} more", f.topics.len() - MAX_TOPICS));
        }
        parts.push(format!("topics={}", t.join(",")));
    }
    if f.batches > 0 || f.records > 0 {
        parts.push(format!("records={}", f.records));
    }
    if !f.errors.is_empty() {
        let e: Vec<String> = f
            .errors
            .iter()
            .map(|(n, k)| {
                if *k > 1 {
                    format!("{n}x{k}")
                } else {
                    n.clone()
                }
            })
            .collect();
        parts.push(format!("errors={}", e.join(",")));
    }
    if let Some(l) = ctx.and_then(|c| c.latency) {
        parts.push(format!("latency={}", latency_text(l).replace(' ', "")));
    }
    if ctx.is_some_and(|c| c.incomplete) {
        parts.push("incomplete".into());
    }
    let decode_errors = msg.error_count();
    if decode_errors > 0 {
        let e = format!(
            "!! {decode_errors} decode error{}",
            if decode_errors == 1 { "" } else { "s" }
        );
        parts.push(super::paint(opts.color, &e, super::error_style()));
    }
    parts.join(" ")
}

struct Topic {
    name: String,
    partitions: Vec<String>,
}

impl Topic {
    fn text(&self) -> String {
        if self.partitions.is_empty() {
            return self.name.clone();
        }
        let mut p: Vec<&str> = self
            .partitions
            .iter()
            .take(MAX_PARTITIONS)
            .map(String::as_str)
            .collect();
        if self.partitions.len() > MAX_PARTITIONS {
            p.push("...");
        }
        format!("{}[{}]", self.name, p.join(","))
    }
}

#[derive(Default)]
struct Facts {
    topics: Vec<Topic>,
    group: Option<String>,
    transactional: Option<String>,
    batches: usize,
    records: usize,
    /// Error names with how often they occur, in order of first sight.
    errors: Vec<(String, usize)>,
}

fn str_value(n: &Node<'_>, max: usize) -> Option<String> {
    match &n.value {
        Value::Str(s) => Some(if s.chars().count() > max {
            value_text(&n.value, max, false)
        } else {
            s.to_string()
        }),
        _ => None,
    }
}

fn int_value(v: &Value<'_>) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        _ => None,
    }
}

const TOPIC_NAMES: [&str; 3] = ["Name", "Topic", "TopicName"];
const PARTITION_NAMES: [&str; 4] = ["PartitionIndex", "Partition", "PartitionId", "Index"];

impl Facts {
    fn gather(root: &Node<'_>, max: usize) -> Facts {
        let mut f = Facts::default();
        f.visit(root, max, false);
        f
    }

    /// Visits `n`; `in_topic` is set under a topic struct, where no other topic is
    /// looked for (its configs and partitions are not topics).
    fn visit(&mut self, n: &Node<'_>, max: usize, in_topic: bool) {
        match &*n.name {
            "GroupId" if self.group.is_none() => self.group = str_value(n, max),
            "TransactionalId" if self.transactional.is_none() => {
                self.transactional = str_value(n, max)
            }
            "ErrorCode" => {
                if let Some(code) = int_value(&n.value).filter(|c| *c != 0) {
                    let name = n
                        .annotation
                        .as_deref()
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("error{code}"));
                    match self.errors.iter_mut().find(|(e, _)| *e == name) {
                        Some((_, k)) => *k += 1,
                        None => self.errors.push((name, 1)),
                    }
                }
            }
            "TopicNames" | "Topics" if n.kind == NodeKind::Array && !in_topic => {
                for c in &n.children {
                    if let Some(s) = str_value(c, max) {
                        self.topics.push(Topic {
                            name: s,
                            partitions: Vec::new(),
                        });
                    }
                }
            }
            name if name == "RecordBatch" || name.starts_with("RecordBatch[") => self.batches += 1,
            name if name.starts_with("Record[") => {
                // Nothing under a record (length, key, value, headers, control data)
                // is a fact of the summary: do not walk it.
                self.records += 1;
                return;
            }
            _ => {}
        }
        let topic = !in_topic && n.kind == NodeKind::Struct && is_topic_struct(n);
        if topic {
            self.topics.push(topic_of(n, max));
        }
        for c in &n.children {
            self.visit(c, max, in_topic || topic);
        }
    }
}

/// A struct that stands for a topic: it has a `Topic`/`TopicName` string, or a `Name`
/// string or a `TopicId` while its type names a topic.
fn is_topic_struct(n: &Node<'_>) -> bool {
    let topicish = n.ty.contains("Topic") || n.name.contains("Topic");
    n.children.iter().any(|c| match &*c.name {
        "Topic" | "TopicName" => matches!(c.value, Value::Str(_)),
        "Name" => topicish && matches!(c.value, Value::Str(_) | Value::Null),
        "TopicId" => topicish,
        _ => false,
    })
}

fn topic_of(n: &Node<'_>, max: usize) -> Topic {
    let name = n
        .children
        .iter()
        .filter(|c| TOPIC_NAMES.contains(&&*c.name))
        .find_map(|c| str_value(c, max))
        .filter(|s| !s.is_empty())
        .or_else(|| {
            n.children
                .iter()
                .find(|c| c.name == "TopicId")
                .and_then(|c| match c.value {
                    Value::Uuid(u) => Some(format!("id:{}", &u.simple().to_string()[..8])),
                    _ => None,
                })
        })
        .unwrap_or_else(|| "\"\"".to_string());
    let mut partitions = Vec::new();
    for c in &n.children {
        if c.kind == NodeKind::Array {
            for e in c.children.iter().filter(|e| e.name != "length") {
                if let Some(p) = e
                    .children
                    .iter()
                    .find(|x| PARTITION_NAMES.contains(&&*x.name))
                    .and_then(|x| int_value(&x.value))
                {
                    partitions.push(p.to_string());
                } else if PARTITION_NAMES.iter().any(|p| e.name.starts_with(p))
                    || c.name == "Partitions"
                {
                    if let Some(p) = int_value(&e.value) {
                        partitions.push(p.to_string());
                    }
                }
            }
        }
    }
    Topic { name, partitions }
}
