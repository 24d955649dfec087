//! Records of Kafka's internal topics, decoded by their definitions.
//!
//! Kafka keeps its own state in four topics whose record keys and values are messages of
//! its own definitions:
//!
//! | topic | key | value |
//! |---|---|---|
//! | `__consumer_offsets` | `int16 type` + the `coordinator-key` struct of the group coordinator (OffsetCommit, GroupMetadata, ConsumerGroup*, ShareGroup*, Streams*) | `int16 version` + the matching `coordinator-value` struct, or null (a tombstone: the key's record is deleted) |
//! | `__transaction_state` | `int16 type` + TransactionLogKey | `int16 version` + TransactionLogValue |
//! | `__share_group_state` | `int16 type` + ShareSnapshotKey / ShareUpdateKey | `int16 version` + the value |
//! | `__cluster_metadata` | null | the record frame (`uvarint frameVersion` (1), `uvarint type` (the `metadata` definition's `apiKey`), `uvarint version`) + the record (TopicRecord, PartitionRecord...) |
//!
//! The key's leading int16 is the definition's `apiKey` in Kafka 4.1+ files
//! (`"type": "coordinator-key"`); Kafka 3.9/4.0 files say the same through the key's
//! `validVersions` (GroupMetadataKey `"2"`), and both are understood. Control records in
//! control batches (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters) are
//! decoded by [`super::records`] for every topic.
//!
//! A record type or version the schema does not hold is shown raw with a warning, never
//! guessed. Node shapes: the record's `key` and `value` become groups (ty the record's
//! definition, `OffsetCommitKey`, `OffsetCommitValue v3`, `TopicRecord v0`) holding the
//! `length` varint, `type`/`version` (and `frameVersion` for metadata) and the struct's
//! fields, offsets in the record's (decompressed) buffer.

use super::walk::Walk;
use super::{Cx, Reader};
use crate::schema::{Definition, Field, MessageKind, Schema};
use crate::tree::{Node, NodeKind, Region, Value};
use crate::wire;
use std::borrow::Cow;

/// One of Kafka's internal topics whose records kwire decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InternalTopic {
    /// `__consumer_offsets`: the group coordinator's records.
    ConsumerOffsets,
    /// `__transaction_state`: the transaction coordinator's records.
    TransactionState,
    /// `__share_group_state`: the share coordinator's records.
    ShareGroupState,
    /// `__cluster_metadata`: KRaft's metadata log.
    ClusterMetadata,
}

/// `__cluster_metadata`'s fixed topic id (`AAAAAAAAAAAAAAAAAAAAAQ`, Kafka's
/// `Topic.CLUSTER_METADATA_TOPIC_ID`).
pub const CLUSTER_METADATA_TOPIC_ID: uuid::Uuid = uuid::Uuid::from_u128(1);

impl InternalTopic {
    /// Every internal topic.
    pub const ALL: [InternalTopic; 4] = [
        InternalTopic::ConsumerOffsets,
        InternalTopic::TransactionState,
        InternalTopic::ShareGroupState,
        InternalTopic::ClusterMetadata,
    ];

    /// The topic for a topic name, `None` for any other topic.
    pub fn from_name(name: &str) -> Option<InternalTopic> {
        InternalTopic::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The topic's name (`__consumer_offsets`).
    pub fn name(&self) -> &'static str {
        match self {
            InternalTopic::ConsumerOffsets => "__consumer_offsets",
            InternalTopic::TransactionState => "__transaction_state",
            InternalTopic::ShareGroupState => "__share_group_state",
            InternalTopic::ClusterMetadata => "__cluster_metadata",
        }
    }

    /// The folder of Kafka's definitions for the topic's records (`group-coordinator`).
    pub fn module(&self) -> &'static str {
        match self {
            InternalTopic::ConsumerOffsets => "group-coordinator",
            InternalTopic::TransactionState => "transaction-coordinator",
            InternalTopic::ShareGroupState => "share-coordinator",
            InternalTopic::ClusterMetadata => "metadata",
        }
    }
}

/// Which internal topic the records being decoded belong to, learned by the walk from
/// the topic name or id fields it reads (a [`super::Cx`] field).
#[derive(Clone, Debug, Default)]
pub struct TopicState {
    /// The internal topic of the struct being walked, if it is one.
    pub topic: Option<InternalTopic>,
    /// A FetchSnapshot response's `Position` (0: the chunk starts at a batch).
    pub position: Option<i64>,
    /// Topic ids of internal topics learned earlier in the session (besides
    /// `__cluster_metadata`'s fixed id).
    pub known_ids: Vec<(uuid::Uuid, InternalTopic)>,
}

impl TopicState {
    /// Takes note of field `f` of message `def_name` just read as `n`: a topic name
    /// (`entityType: topicName`) or `TopicId` sets the topic the next records belong to.
    pub fn observe(&mut self, def_name: &str, f: &Field, n: &Node<'_>) {
        match &n.value {
            Value::Str(s) if f.entity_type.as_deref() == Some("topicName") => {
                self.topic = InternalTopic::from_name(s);
            }
            Value::Uuid(u) if f.name == "TopicId" && !u.is_nil() => {
                self.topic = if *u == CLUSTER_METADATA_TOPIC_ID {
                    Some(InternalTopic::ClusterMetadata)
                } else {
                    self.known_ids
                        .iter()
                        .find(|(id, _)| id == u)
                        .map(|(_, t)| *t)
                };
            }
            Value::Int(v) if f.name == "Position" && def_name == "FetchSnapshotResponse" => {
                self.position = Some(*v);
            }
            _ => {}
        }
    }
}

/// What a record's key says about its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyInfo {
    /// A coordinator record: its name (`OffsetCommit`) and value definition
    /// (`OffsetCommitValue`).
    Coordinator {
        /// The record's name: the key definition's name without `Key`.
        record: String,
        /// The value definition's name.
        value: String,
    },
    /// A `__cluster_metadata` record: the value holds the frame and the record.
    Metadata,
    /// The key could not be read or names a type the schema lacks.
    Unknown,
}

/// The module a definition belongs to: its file's folder when that is one of the
/// internal topics' modules, otherwise guessed from the name (a flat `--schema` folder).
fn module_of(d: &Definition) -> &str {
    if let Some(folder) = d.file.rsplit('/').nth(1) {
        if InternalTopic::ALL.iter().any(|t| t.module() == folder) {
            return folder;
        }
    }
    let n = d.def.name.as_str();
    if d.def.kind == MessageKind::Metadata {
        "metadata"
    } else if n.starts_with("TransactionLog") {
        "transaction-coordinator"
    } else if n.starts_with("ShareSnapshot") || n.starts_with("ShareUpdate") {
        "share-coordinator"
    } else {
        "group-coordinator"
    }
}

/// The key definition for record type `ty` of a coordinator topic and the version to
/// read its fields at: a 4.1+ `coordinator-key` whose `apiKey` is `ty`, or else a
/// 3.9-style key whose `validVersions` hold `ty`.
pub fn key_definition<'s>(
    schema: &'s Schema,
    topic: InternalTopic,
    ty: i16,
) -> Option<(&'s Definition, i16)> {
    if let Some(d) = schema
        .by_api(MessageKind::CoordinatorKey, ty)
        .into_iter()
        .find(|d| module_of(d) == topic.module())
    {
        return Some((d, d.def.valid_versions.lo));
    }
    let name = schema
        .definitions()
        .find(|d| {
            d.def.kind == MessageKind::Data
                && d.def.name.ends_with("Key")
                && d.def.valid_versions.contains(ty)
                && module_of(d) == topic.module()
        })?
        .def
        .name
        .clone();
    schema.resolve_name(&name, ty).map(|d| (d, ty))
}

fn leaf<'a>(r: &Reader<'a>, name: &'static str, ty: &'static str, v: Value<'a>) -> Node<'a> {
    let mut n = Node::leaf(name, ty, v, r.pos, 0);
    n.buffer = r.buffer;
    n.region = Region::Record;
    n
}

/// Reads an int16 as a leaf; an error leaf over the rest when the bytes run out.
fn int16<'a>(r: &mut Reader<'a>, out: &mut Vec<Node<'a>>, name: &'static str) -> Option<i16> {
    match r.read(wire::int16) {
        Ok((v, off, len)) => {
            let mut n = leaf(r, name, "int16", Value::Int(v.into()));
            n.offset = off;
            n.length = len;
            out.push(n);
            Some(v)
        }
        Err(e) => {
            out.push(r.error_leaf(name, "int16", format!("{name}: {}", e.kind)));
            None
        }
    }
}

/// Reads a uvarint as a leaf; an error leaf over the rest when it cannot be read.
fn uvarint<'a>(r: &mut Reader<'a>, out: &mut Vec<Node<'a>>, name: &'static str) -> Option<u32> {
    match r.read(wire::uvarint) {
        Ok((v, off, len)) => {
            let mut n = leaf(r, name, "uvarint", Value::UInt(v.into()));
            n.offset = off;
            n.length = len;
            out.push(n);
            Some(v)
        }
        Err(e) => {
            out.push(r.error_leaf(name, "uvarint", format!("{name}: {}", e.kind)));
            None
        }
    }
}

/// The rest of `r` as a raw leaf with a warning (nothing when it is empty).
fn raw_rest<'a>(r: &mut Reader<'a>, out: &mut Vec<Node<'a>>, name: &'static str, warning: String) {
    if r.left() == 0 {
        if let Some(l) = out.last_mut() {
            l.set_warning(warning);
        }
        return;
    }
    let mut n = r.error_leaf(name, "bytes", String::new());
    n.problems_mut().error = None;
    n.set_warning(warning);
    n.region = Region::Record;
    out.push(n);
}

/// Walks `d`'s fields at `version` over `r` into `out`; bytes left after them are a
/// trailing leaf with a warning.
fn walk_fields<'a>(
    cx: &mut Cx<'a>,
    d: &'a Definition,
    version: i16,
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
) {
    // Topic names inside the record (TopicRecord's Name) say nothing of the records
    // around it.
    let saved = (cx.topics.topic, cx.topics.position);
    let mut w = Walk::new(cx, &d.def, version, Region::Record);
    let res = w.fields(r, &d.def.fields, out, "number of tagged fields in this struct");
    (cx.topics.topic, cx.topics.position) = saved;
    if res.is_ok() && r.left() > 0 {
        let n = r.left();
        raw_rest(
            r,
            out,
            "trailing bytes",
            format!("{n} bytes after {} v{version}", d.def.name),
        );
    }
}

/// Decodes a record key of `topic` (the bytes without their length prefix) into `out`;
/// returns what it says of the value and the key's type label (`OffsetCommitKey`).
pub fn decode_key<'a>(
    cx: &mut Cx<'a>,
    topic: InternalTopic,
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
) -> (KeyInfo, Cow<'a, str>) {
    if topic == InternalTopic::ClusterMetadata {
        // Metadata records have null keys; anything else stays bytes.
        return (KeyInfo::Metadata, Cow::Borrowed("bytes"));
    }
    let schema: &'a Schema = cx.schema;
    let Some(ty) = int16(r, out, "type") else {
        return (KeyInfo::Unknown, Cow::Borrowed("bytes"));
    };
    let Some((d, version)) = key_definition(schema, topic, ty) else {
        raw_rest(
            r,
            out,
            "data",
            format!(
                "unknown {} record type {ty} (a newer Kafka?): shown raw",
                topic.name()
            ),
        );
        return (KeyInfo::Unknown, Cow::Borrowed("bytes"));
    };
    let name = d.def.name.as_str();
    let record = name.strip_suffix("Key").unwrap_or(name);
    if let Some(t) = out.last_mut() {
        t.annotation = Some(Cow::Borrowed(record));
    }
    walk_fields(cx, d, version, r, out);
    let value = format!("{record}Value");
    (
        KeyInfo::Coordinator {
            record: record.to_string(),
            value,
        },
        Cow::Borrowed(name),
    )
}

/// Decodes a record value of `topic` (the bytes without their length prefix) into
/// `out`, given what its key said; returns the value's type label
/// (`OffsetCommitValue v3`, `TopicRecord v0`, `bytes` when it stays raw).
pub fn decode_value<'a>(
    cx: &mut Cx<'a>,
    key: &KeyInfo,
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
) -> Cow<'a, str> {
    let schema: &'a Schema = cx.schema;
    match key {
        KeyInfo::Unknown => {
            raw_rest(
                r,
                out,
                "data",
                "the key names no known record type: value shown raw".into(),
            );
            Cow::Borrowed("bytes")
        }
        KeyInfo::Coordinator { value, .. } => {
            let Some(v) = int16(r, out, "version") else {
                return Cow::Borrowed("bytes");
            };
            match schema.resolve_name(value, v) {
                Some(d) => {
                    walk_fields(cx, d, v, r, out);
                    Cow::Owned(format!("{} v{v}", d.def.name))
                }
                None => {
                    raw_rest(
                        r,
                        out,
                        "data",
                        format!("{value} has no version {v} in the schema (a newer Kafka?): shown raw"),
                    );
                    Cow::Borrowed("bytes")
                }
            }
        }
        KeyInfo::Metadata => {
            let Some(frame) = uvarint(r, out, "frameVersion") else {
                return Cow::Borrowed("bytes");
            };
            if frame != 1 {
                raw_rest(
                    r,
                    out,
                    "data",
                    format!("metadata record frame version {frame}, kwire knows 1: shown raw"),
                );
                return Cow::Borrowed("bytes");
            }
            let Some(ty) = uvarint(r, out, "type") else {
                return Cow::Borrowed("bytes");
            };
            let ty16 = i16::try_from(ty).unwrap_or(i16::MAX);
            let any = schema.by_api(MessageKind::Metadata, ty16);
            if let (Some(d), Some(t)) = (any.first(), out.last_mut()) {
                t.annotation = Some(Cow::Borrowed(d.def.name.as_str()));
            }
            let Some(v) = uvarint(r, out, "version") else {
                return Cow::Borrowed("bytes");
            };
            let v16 = i16::try_from(v).unwrap_or(i16::MAX);
            match schema.resolve(MessageKind::Metadata, ty16, v16) {
                Some(d) => {
                    walk_fields(cx, d, v16, r, out);
                    Cow::Owned(format!("{} v{v}", d.def.name))
                }
                None => {
                    let why = match any.first() {
                        Some(d) => format!(
                            "{} has no version {v} in the schema (a newer Kafka?): shown raw",
                            d.def.name
                        ),
                        None => format!(
                            "unknown metadata record type {ty} (a newer Kafka?): shown raw"
                        ),
                    };
                    raw_rest(r, out, "data", why);
                    Cow::Borrowed("bytes")
                }
            }
        }
    }
}

/// The hook of [`super::records`]: `kv` holds a record's `key` and `value` leaves (a
/// varint length and the bytes, or null); each non-null one becomes a group with the
/// `length` leaf and the decoded struct. A null value after a coordinator key is a
/// tombstone.
pub fn key_value<'a>(cx: &mut Cx<'a>, topic: InternalTopic, kv: &mut [Node<'a>]) {
    let [key, value] = kv else {
        return;
    };
    let info = match key.value {
        Value::Bytes(b) => {
            let (info, ty) = nest(key, b, |r, out| decode_key(cx, topic, r, out));
            key.ty = ty;
            info
        }
        _ if topic == InternalTopic::ClusterMetadata => KeyInfo::Metadata,
        _ => {
            key.set_warning(format!(
                "a {} record without a key: Kafka writes none",
                topic.name()
            ));
            KeyInfo::Unknown
        }
    };
    match value.value {
        Value::Bytes(b) => {
            let ty = nest(value, b, |r, out| decode_value(cx, &info, r, out));
            value.ty = ty;
        }
        Value::Null => {
            if let KeyInfo::Coordinator { record, .. } = &info {
                value.annotation = Some(Cow::Owned(format!("tombstone: deletes this {record} record")));
                value.description = Some(Cow::Borrowed(
                    "a null value: the record of this key is deleted (compaction removes both)",
                ));
            }
        }
        _ => {}
    }
}

/// Turns a `key`/`value` leaf over a varint length and `b` into a group: the `length`
/// leaf, then what `f` reads from `b`.
fn nest<'a, R>(
    n: &mut Node<'a>,
    b: &'a [u8],
    f: impl FnOnce(&mut Reader<'a>, &mut Vec<Node<'a>>) -> R,
) -> R {
    let prefix = n.length.saturating_sub(b.len());
    let mut len = Node::leaf("length", "varint", Value::Int(b.len() as i64), n.offset, prefix);
    len.buffer = n.buffer;
    len.region = Region::Record;
    n.annotation = None;
    let mut r = Reader::new(b, n.offset + prefix, n.buffer);
    let mut out = vec![len];
    let res = f(&mut r, &mut out);
    if r.left() > 0 {
        let k = r.left();
        out.push(r.error_leaf("rest", "bytes", format!("{k} bytes not decoded after an error")));
    }
    n.kind = NodeKind::Group;
    n.children = out;
    res
}
