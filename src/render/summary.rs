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

use std::borrow::Cow;
use std::io::{self, Write};

use super::{api_head, guess_note, latency_text, value_text, RenderOptions};
use crate::session::Context;
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
    // Parts are separated by single spaces, written straight into one String.
    let mut s = String::with_capacity(160);
    let mut num = itoa::Buffer::new();
    if let Some(c) = ctx {
        super::push_capture_head(&mut s, c, opts);
        s.push(' ');
    }
    match &msg.api_name {
        Some(n) if msg.api_version >= 0 => {
            s.push_str(n);
            s.push_str(" v");
            s.push_str(num.format(msg.api_version));
        }
        _ => s.push_str(&api_head(msg)),
    }
    s.push(' ');
    s.push_str(msg.direction.as_str());
    match msg.correlation_id {
        Some(id) => {
            s.push_str(" corr=");
            s.push_str(num.format(id));
        }
        None => s.push_str(" corr=?"),
    }
    if let Some(g) = guess_note(msg) {
        s.push(' ');
        s.push_str(&g);
    }
    // Names are cut at 48 characters unless --wide asks for all of them.
    let max = if opts.wide {
        opts.max_value_len
    } else {
        opts.max_value_len.min(48)
    };
    let f = Facts::gather(&msg.tree, max);
    for (key, v) in [(" group=", &f.group), (" txn=", &f.transactional)] {
        if let Some(v) = v {
            s.push_str(key);
            s.push_str(v);
        }
    }
    if !f.topics.is_empty() {
        s.push_str(" topics=");
        for (i, t) in f.topics.iter().take(MAX_TOPICS).enumerate() {
            if i > 0 {
                s.push(',');
            }
            t.push_text(&mut s);
        }
        if f.topics.len() > MAX_TOPICS {
            s.push_str(",+");
            s.push_str(num.format(f.topics.len() - MAX_TOPICS));
            s.push_str(" more");
        }
    }
    if f.batches > 0 || f.records > 0 {
        s.push_str(" records=");
        s.push_str(num.format(f.records));
    }
    if !f.errors.is_empty() {
        s.push_str(" errors=");
        for (i, (n, k)) in f.errors.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(n);
            if *k > 1 {
                s.push('x');
                s.push_str(num.format(*k));
            }
        }
    }
    if let Some(l) = ctx.and_then(|c| c.latency) {
        s.push_str(" latency=");
        s.push_str(&latency_text(l).replace(' ', ""));
    }
    if ctx.is_some_and(|c| c.incomplete) {
        s.push_str(" incomplete");
    }
    let decode_errors = msg.error_count();
    if decode_errors > 0 {
        let e = format!(
            "!! {decode_errors} decode error{}",
            if decode_errors == 1 { "" } else { "s" }
        );
        s.push(' ');
        s.push_str(&super::paint(opts.color, &e, super::error_style()));
    }
    s
}

struct Topic<'t> {
    name: Cow<'t, str>,
    partitions: Vec<i64>,
}

impl Topic<'_> {
    /// `name` or `name[p0,p1,...]`, appended to `s`.
    fn push_text(&self, s: &mut String) {
        s.push_str(&self.name);
        if self.partitions.is_empty() {
            return;
        }
        s.push('[');
        for (i, p) in self.partitions.iter().take(MAX_PARTITIONS).enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(itoa::Buffer::new().format(*p));
        }
        if self.partitions.len() > MAX_PARTITIONS {
            s.push_str(",...");
        }
        s.push(']');
    }
}

#[derive(Default)]
struct Facts<'t> {
    topics: Vec<Topic<'t>>,
    group: Option<Cow<'t, str>>,
    transactional: Option<Cow<'t, str>>,
    batches: usize,
    records: usize,
    /// Error names with how often they occur, in order of first sight.
    errors: Vec<(String, usize)>,
}

fn str_value<'t>(n: &Node<'t>, max: usize) -> Option<Cow<'t, str>> {
    match n.value {
        Value::Str(s) => Some(summary_text(s, max)),
        _ => None,
    }
}

/// A string from the capture as the summary shows it: as it is when it is short and has
/// nothing a terminal or a reader of the line could mistake (control characters, white
/// space, quotes, backslashes); otherwise quoted and escaped as the tree shows it, and
/// cut at `max` characters.
fn summary_text(s: &str, max: usize) -> Cow<'_, str> {
    let plain = s.len() <= max
        && s.chars()
            .all(|c| !c.is_control() && !c.is_whitespace() && c != '"' && c != '\\');
    if plain {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(value_text(&Value::Str(s), max, false))
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

impl<'t> Facts<'t> {
    fn gather(root: &'t Node<'t>, max: usize) -> Facts<'t> {
        let mut f = Facts::default();
        f.visit(root, max, false);
        f
    }

    /// Adds a topic; a name seen before (a topic listed twice, as a Fetch with two
    /// sessions' worth of partitions lists it) gets the new partitions instead.
    fn add_topic(&mut self, t: Topic<'t>) {
        match self.topics.iter_mut().find(|x| x.name == t.name) {
            Some(x) => {
                for p in t.partitions {
                    if !x.partitions.contains(&p) {
                        x.partitions.push(p);
                    }
                }
            }
            None => self.topics.push(t),
        }
    }

    /// Visits `n`; `in_topic` is set under a topic struct, where no other topic is
    /// looked for (its configs and partitions are not topics).
    fn visit(&mut self, n: &'t Node<'t>, max: usize, in_topic: bool) {
        match n.name {
            "GroupId" if self.group.is_none() => self.group = str_value(n, max),
            "TransactionalId" if self.transactional.is_none() => {
                self.transactional = str_value(n, max)
            }
            "ErrorCode" => {
                if let Some(code) = int_value(&n.value).filter(|c| *c != 0) {
                    let name = n
                        .annotation
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
                        self.add_topic(Topic {
                            name: s,
                            partitions: Vec::new(),
                        });
                    }
                }
            }
            name if name == "RecordBatch" || name.starts_with("RecordBatch[") => self.batches += 1,
            "Records" | "Records (decompressed)"
                if n.ty == "records" && matches!(n.value, Value::Count(_)) =>
            {
                // The group holds the count of the records read (folded ones included);
                // nothing under a record (length, key, value, headers, control data)
                // is a fact of the summary: do not walk it.
                if let Value::Count(k) = n.value {
                    self.records += k as usize;
                }
                return;
            }
            _ => {}
        }
        let topic = !in_topic && n.kind == NodeKind::Struct && is_topic_struct(n);
        if topic {
            self.add_topic(topic_of(n, max));
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
    n.children.iter().any(|c| match c.name {
        "Topic" | "TopicName" => matches!(c.value, Value::Str(_)),
        "Name" => topicish && matches!(c.value, Value::Str(_) | Value::Null),
        "TopicId" => topicish,
        _ => false,
    })
}

fn topic_of<'t>(n: &'t Node<'t>, max: usize) -> Topic<'t> {
    let name = n
        .children
        .iter()
        .filter(|c| TOPIC_NAMES.contains(&c.name))
        .find_map(|c| str_value(c, max))
        .filter(|s| !s.is_empty())
        .or_else(|| {
            n.children
                .iter()
                .find(|c| c.name == "TopicId")
                .and_then(|c| {
                    match (
                        &c.value,
                        c.annotation.and_then(|a| a.strip_prefix("topic ")),
                    ) {
                        // named by the capture session from an earlier Metadata response
                        (Value::Uuid(_), Some(name)) => Some(summary_text(name, max)),
                        (Value::Uuid(u), None) => {
                            // Kafka's own form of the id, as its tools print it
                            Some(Cow::Owned(format!("id:{}", crate::text::uuid_base64(u))))
                        }
                        _ => None,
                    }
                })
        })
        .unwrap_or(Cow::Borrowed("\"\""));
    let mut partitions = Vec::new();
    for c in &n.children {
        if c.kind == NodeKind::Array {
            for e in c.children.iter().filter(|e| e.name != "length") {
                if let Some(p) = e
                    .children
                    .iter()
                    .find(|x| PARTITION_NAMES.contains(&x.name))
                    .and_then(|x| int_value(&x.value))
                {
                    partitions.push(p);
                } else if PARTITION_NAMES.iter().any(|p| e.name.starts_with(p))
                    || c.name == "Partitions"
                {
                    if let Some(p) = int_value(&e.value) {
                        partitions.push(p);
                    }
                }
            }
        }
    }
    Topic { name, partitions }
}
