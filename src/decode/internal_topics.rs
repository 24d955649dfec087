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
use crate::schema::plan::Role;
use crate::schema::{Definition, Field, MessageKind, Schema};
use crate::tree::{Node, NodeKind, Region, Value};
use crate::wire;

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
        self.observe_value(def_name, f, &n.value)
    }

    /// [`TopicState::observe`] of the value `v` read for field `f` (the fact walk reads
    /// values without nodes).
    pub fn observe_value(&mut self, def_name: &str, f: &Field, v: &Value<'_>) {
        match v {
            Value::Str(s) if f.role.has(Role::TOPIC_NAME) => {
                self.topic = InternalTopic::from_name(s);
            }
            Value::Uuid(u) if f.role.has(Role::TOPIC_ID) && !u.is_nil() => {
                self.topic = if *u == CLUSTER_METADATA_TOPIC_ID {
                    Some(InternalTopic::ClusterMetadata)
                } else {
                    self.known_ids
                        .iter()
                        .find(|(id, _)| id == u)
                        .map(|(_, t)| *t)
                };
            }
            Value::Int(v) if f.role.has(Role::POSITION) && def_name == "FetchSnapshotResponse" => {
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
pub fn key_definition(
    schema: &Schema,
    topic: InternalTopic,
    ty: i16,
) -> Option<(&Definition, i16)> {
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

/// Reads one primitive with `p` as a leaf of type `ty` whose value `value` gives; an
/// error leaf over the rest when it cannot be read.
fn prim<'a, T: Copy>(
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
    name: &'static str,
    ty: &'static str,
    p: impl Fn(&'a [u8]) -> wire::WResult<'a, T>,
    value: impl Fn(T) -> Value<'a>,
) -> Option<T> {
    match r.read(p) {
        Ok((v, off, len)) => {
            let mut n = leaf(r, name, ty, value(v));
            n.offset = off;
            n.length = len;
            out.push(n);
            Some(v)
        }
        Err(e) => {
            let m = r.fmt(format_args!("{name}: {}", e.kind));
            out.push(r.error_leaf(name, ty, m));
            None
        }
    }
}

/// Reads an int16 as a leaf ([`prim`]).
fn int16<'a>(r: &mut Reader<'a>, out: &mut Vec<Node<'a>>, name: &'static str) -> Option<i16> {
    prim(r, out, name, "int16", wire::int16, |v| Value::Int(v.into()))
}

/// Reads a uvarint as a leaf ([`prim`]).
fn uvarint<'a>(r: &mut Reader<'a>, out: &mut Vec<Node<'a>>, name: &'static str) -> Option<u32> {
    prim(r, out, name, "uvarint", wire::uvarint, |v| {
        Value::UInt(v.into())
    })
}

/// The rest of `r` as a raw leaf with a warning (nothing when it is empty).
fn raw_rest<'a>(r: &mut Reader<'a>, out: &mut Vec<Node<'a>>, name: &'static str, warning: &'a str) {
    if r.left() == 0 {
        if let Some(l) = out.last_mut() {
            l.set_warning(warning);
        }
        return;
    }
    let mut n = r.error_leaf(name, "bytes", "");
    n.set_error_opt(None);
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
    let res = w.fields(
        r,
        &d.def.fields,
        out,
        "number of tagged fields in this struct",
    );
    (cx.topics.topic, cx.topics.position) = saved;
    if res.is_ok() && r.left() > 0 {
        let n = r.left();
        let w = r.fmt(format_args!("{n} bytes after {} v{version}", d.def.name));
        raw_rest(r, out, "trailing bytes", w);
    }
}

/// Decodes a record key of `topic` (the bytes without their length prefix) into `out`;
/// returns what it says of the value and the key's type label (`OffsetCommitKey`).
pub fn decode_key<'a>(
    cx: &mut Cx<'a>,
    topic: InternalTopic,
    r: &mut Reader<'a>,
    out: &mut Vec<Node<'a>>,
) -> (KeyInfo, &'a str) {
    if topic == InternalTopic::ClusterMetadata {
        // Metadata records have null keys; anything else stays bytes.
        return (KeyInfo::Metadata, "bytes");
    }
    let schema: &'a Schema = cx.schema;
    let Some(ty) = int16(r, out, "type") else {
        return (KeyInfo::Unknown, "bytes");
    };
    let Some((d, version)) = key_definition(schema, topic, ty) else {
        let w = r.fmt(format_args!(
            "unknown {} record type {ty} (a newer Kafka?): shown raw",
            topic.name()
        ));
        raw_rest(r, out, "data", w);
        return (KeyInfo::Unknown, "bytes");
    };
    let name = d.def.name.as_str();
    let record = name.strip_suffix("Key").unwrap_or(name);
    if let Some(t) = out.last_mut() {
        t.annotation = Some(record);
    }
    walk_fields(cx, d, version, r, out);
    let value = format!("{record}Value");
    (
        KeyInfo::Coordinator {
            record: record.to_string(),
            value,
        },
        name,
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
) -> &'a str {
    let schema: &'a Schema = cx.schema;
    match key {
        KeyInfo::Unknown => {
            raw_rest(
                r,
                out,
                "data",
                "the key names no known record type: value shown raw",
            );
            "bytes"
        }
        KeyInfo::Coordinator { value, .. } => {
            let Some(v) = int16(r, out, "version") else {
                return "bytes";
            };
            match schema.resolve_name(value, v) {
                Some(d) => {
                    walk_fields(cx, d, v, r, out);
                    cx.fmt(format_args!("{} v{v}", d.def.name))
                }
                None => {
                    raw_rest(
                        r,
                        out,
                        "data",
                        r.fmt(format_args!(
                            "{value} has no version {v} in the schema (a newer Kafka?): shown raw"
                        )),
                    );
                    "bytes"
                }
            }
        }
        KeyInfo::Metadata => {
            let Some(frame) = uvarint(r, out, "frameVersion") else {
                return "bytes";
            };
            if frame != 1 {
                raw_rest(
                    r,
                    out,
                    "data",
                    r.fmt(format_args!(
                        "metadata record frame version {frame}, kwire knows 1: shown raw"
                    )),
                );
                return "bytes";
            }
            let Some(ty) = uvarint(r, out, "type") else {
                return "bytes";
            };
            let ty16 = i16::try_from(ty).unwrap_or(i16::MAX);
            let any = schema.by_api(MessageKind::Metadata, ty16);
            if let (Some(d), Some(t)) = (any.first(), out.last_mut()) {
                t.annotation = Some(d.def.name.as_str());
            }
            let Some(v) = uvarint(r, out, "version") else {
                return "bytes";
            };
            let v16 = i16::try_from(v).unwrap_or(i16::MAX);
            match schema.resolve(MessageKind::Metadata, ty16, v16) {
                Some(d) => {
                    walk_fields(cx, d, v16, r, out);
                    cx.fmt(format_args!("{} v{v}", d.def.name))
                }
                None => {
                    let why = match any.first() {
                        Some(d) => r.fmt(format_args!(
                            "{} has no version {v} in the schema (a newer Kafka?): shown raw",
                            d.def.name
                        )),
                        None => r.fmt(format_args!(
                            "unknown metadata record type {ty} (a newer Kafka?): shown raw"
                        )),
                    };
                    raw_rest(r, out, "data", why);
                    "bytes"
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
            let (info, ty) = nest(cx, key, b, |cx, r, out| decode_key(cx, topic, r, out));
            key.ty = ty;
            info
        }
        _ if topic == InternalTopic::ClusterMetadata => KeyInfo::Metadata,
        _ => {
            key.set_warning(cx.fmt(format_args!(
                "a {} record without a key: Kafka writes none",
                topic.name()
            )));
            KeyInfo::Unknown
        }
    };
    match value.value {
        Value::Bytes(b) => {
            let ty = nest(cx, value, b, |cx, r, out| decode_value(cx, &info, r, out));
            value.ty = ty;
        }
        Value::Null => {
            if let KeyInfo::Coordinator { record, .. } = &info {
                value.annotation =
                    Some(cx.fmt(format_args!("tombstone: deletes this {record} record")));
                value.description = Some(
                    "a null value: the record of this key is deleted (compaction removes both)",
                );
            }
        }
        _ => {}
    }
}

/// Turns a `key`/`value` leaf over a varint length and `b` into a group: the `length`
/// leaf, then what `f` reads from `b`.
fn nest<'a, R>(
    cx: &mut Cx<'a>,
    n: &mut Node<'a>,
    b: &'a [u8],
    f: impl FnOnce(&mut Cx<'a>, &mut Reader<'a>, &mut Vec<Node<'a>>) -> R,
) -> R {
    let prefix = n.length.saturating_sub(b.len());
    let mut len = Node::leaf(
        "length",
        "varint",
        Value::Int(b.len() as i64),
        n.offset,
        prefix,
    );
    len.buffer = n.buffer;
    len.region = Region::Record;
    n.annotation = None;
    let mut r = Reader::new(b, n.offset + prefix, n.buffer, cx.arena);
    let mut out = cx.vec();
    out.push(len);
    let res = f(cx, &mut r, &mut out);
    if r.left() > 0 {
        let k = r.left();
        let m = r.fmt(format_args!("{k} bytes not decoded after an error"));
        out.push(r.error_leaf("rest", "bytes", m));
    }
    n.kind = NodeKind::Group;
    n.children = cx.seal(out);
    res
}

/// Encodes the key of coordinator record `record` (`TransactionLog`, `ShareSnapshot`,
/// `ConsumerGroupMemberMetadata`) from its fields in the values shape: `int16 type`
/// (the definition's `apiKey`, or its version in 3.9-style files), then the struct.
///
/// # Errors
/// An unknown record name; fields that do not fit the definition.
pub fn encode_coordinator_key(
    schema: &Schema,
    record: &str,
    fields: &serde_json::Value,
) -> Result<Vec<u8>, String> {
    let name = format!("{record}Key");
    let d = schema
        .by_name(&name)
        .into_iter()
        .next()
        .ok_or_else(|| format!("{name} is not in the schema"))?;
    let version = d.def.valid_versions.lo;
    let ty = match (d.def.kind, d.def.api_key) {
        (MessageKind::CoordinatorKey, Some(k)) => k,
        _ => version,
    };
    after(ty.to_be_bytes().to_vec(), d, version, fields)
}

/// `prefix`, then the struct `d` at `version` encoded from `fields`.
fn after(
    mut prefix: Vec<u8>,
    d: &Definition,
    version: i16,
    fields: &serde_json::Value,
) -> Result<Vec<u8>, String> {
    prefix
        .extend(crate::encode::encode_struct(&d.def, version, fields).map_err(|e| e.to_string())?);
    Ok(prefix)
}

/// Encodes the value of coordinator record `record` at `version`: `int16 version`, then
/// the struct.
///
/// # Errors
/// No such value definition or version; fields that do not fit.
pub fn encode_coordinator_value(
    schema: &Schema,
    record: &str,
    version: i16,
    fields: &serde_json::Value,
) -> Result<Vec<u8>, String> {
    let name = format!("{record}Value");
    let d = schema
        .resolve_name(&name, version)
        .ok_or_else(|| format!("{name} has no version {version} in the schema"))?;
    after(version.to_be_bytes().to_vec(), d, version, fields)
}

/// Encodes a `__cluster_metadata` record value: the frame (`uvarint 1`, `uvarint`
/// type, `uvarint` version), then the record `name` (`TopicRecord`) at `version`.
///
/// # Errors
/// No such metadata record or version; fields that do not fit.
pub fn encode_metadata_value(
    schema: &Schema,
    name: &str,
    version: i16,
    fields: &serde_json::Value,
) -> Result<Vec<u8>, String> {
    let d = schema
        .resolve_name(name, version)
        .filter(|d| d.def.kind == MessageKind::Metadata)
        .ok_or_else(|| format!("{name} v{version} is not a metadata record in the schema"))?;
    let ty = d.def.api_key.unwrap_or(0);
    let mut out = Vec::new();
    for v in [1u64, ty as u64, version as u64] {
        crate::encode::put_uvarint(&mut out, v);
    }
    after(out, d, version, fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::DecodeOptions;
    use crate::tree::Buffers;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::embedded()
    }

    /// Decodes key and value bytes of `topic` as `kwire record` does; returns the key and
    /// value children, checked to tile their bytes.
    fn decode(
        s: &Schema,
        topic: InternalTopic,
        key: &[u8],
        value: &[u8],
        check: impl FnOnce(&[Node<'_>], &[Node<'_>], &str, &str),
    ) {
        let opts = DecodeOptions::default();
        let arena = Buffers::new();
        let mut cx = Cx::new(s, &arena, &opts);
        let mut kr = Reader::new(key, 0, 0, &arena);
        let mut k = Vec::new();
        let (info, kty) = decode_key(&mut cx, topic, &mut kr, &mut k);
        let mut vr = Reader::new(value, 100, 0, &arena);
        let mut v = Vec::new();
        let vty = decode_value(&mut cx, &info, &mut vr, &mut v);
        for (nodes, start, len) in [(&k, 0, key.len()), (&v, 100, value.len())] {
            let mut at = start;
            for n in nodes.iter() {
                let mut leaves = Vec::new();
                n.walk(&mut |x, _| {
                    if x.children.is_empty() {
                        leaves.push((x.offset, x.length));
                    }
                });
                for (o, l) in leaves {
                    assert_eq!(o, at, "leaves tile: gap or overlap at {o}");
                    at += l;
                }
            }
            if topic != InternalTopic::ClusterMetadata || start != 0 {
                assert_eq!(at, start + len, "leaves cover every byte");
            }
        }
        check(&k, &v, kty, vty);
    }

    fn find<'n, 'a>(nodes: &'n [Node<'a>], name: &str) -> &'n Node<'a> {
        nodes
            .iter()
            .find_map(|n| n.find(name))
            .unwrap_or_else(|| panic!("no {name}"))
    }

    fn no_problems(nodes: &[Node<'_>]) {
        for n in nodes {
            n.walk(&mut |x, _| {
                assert!(
                    x.error().is_none() && x.warning().is_none(),
                    "{}: {:?} {:?}",
                    x.name,
                    x.error(),
                    x.warning()
                )
            });
        }
    }

    #[test]
    fn transaction_log_round_trip_and_hand_bytes() {
        let s = schema();
        let key = encode_coordinator_key(&s, "TransactionLog", &json!({"TransactionalId": "tx"}))
            .unwrap();
        // int16 type 0, int16 length 2, "tx"
        assert_eq!(key, [0, 0, 0, 2, b't', b'x']);
        let value = encode_coordinator_value(
            &s,
            "TransactionLog",
            1,
            &json!({"ProducerId": 7, "ProducerEpoch": 1, "TransactionTimeoutMs": 60000,
                    "TransactionStatus": 2,
                    "TransactionPartitions": [{"Topic": "orders", "PartitionIds": [0, 3]}],
                    "TransactionLastUpdateTimestampMs": 1700000000000i64,
                    "TransactionStartTimestampMs": 1699999999000i64}),
        )
        .unwrap();
        // version 1, ProducerId int64 7, ProducerEpoch int16 1, timeout int32 60000, status 2
        assert_eq!(
            &value[..17],
            &[0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 1, 0, 0, 0xea, 0x60, 2]
        );
        // compact array of 1 (2), compact string "orders" (7), compact [2 ints] (3)
        assert_eq!(
            &value[17..26],
            &[2, 7, b'o', b'r', b'd', b'e', b'r', b's', 3]
        );
        decode(
            &s,
            InternalTopic::TransactionState,
            &key,
            &value,
            |k, v, kty, vty| {
                assert_eq!(kty, "TransactionLogKey");
                assert_eq!(vty, "TransactionLogValue v1");
                no_problems(k);
                no_problems(v);
                assert_eq!(find(k, "TransactionalId").value, Value::Str("tx"));
                assert_eq!(find(v, "ProducerId").value, Value::Int(7));
                assert_eq!(find(v, "TransactionStatus").value, Value::Int(2));
                assert_eq!(find(v, "Topic").value, Value::Str("orders"));
                assert_eq!(find(v, "ProducerId").offset, 102);
            },
        );
    }

    #[test]
    fn share_snapshot_and_kip848_member_records() {
        let s = schema();
        let id = "0c8a7b8e-0000-4000-8000-000000000001";
        let key = encode_coordinator_key(
            &s,
            "ShareSnapshot",
            &json!({"GroupId": "sg", "TopicId": id, "Partition": 4}),
        )
        .unwrap();
        assert_eq!(&key[..6], &[0, 0, 0, 2, b's', b'g']);
        assert_eq!(&key[22..], &[0, 0, 0, 4]);
        let value = encode_coordinator_value(
            &s,
            "ShareSnapshot",
            0,
            &json!({"SnapshotEpoch": 1, "StateEpoch": 2, "LeaderEpoch": 3, "StartOffset": 10,
                    "CreateTimestamp": 5, "WriteTimestamp": 6,
                    "StateBatches": [{"FirstOffset": 10, "LastOffset": 12, "DeliveryState": 2, "DeliveryCount": 1}]}),
        )
        .unwrap();
        decode(
            &s,
            InternalTopic::ShareGroupState,
            &key,
            &value,
            |k, v, kty, vty| {
                assert_eq!(kty, "ShareSnapshotKey");
                assert_eq!(vty, "ShareSnapshotValue v0");
                no_problems(k);
                no_problems(v);
                assert_eq!(find(k, "Partition").value, Value::Int(4));
                assert_eq!(find(v, "LastOffset").value, Value::Int(12));
            },
        );
        let key = encode_coordinator_key(
            &s,
            "ConsumerGroupMemberMetadata",
            &json!({"GroupId": "g", "MemberId": "m1"}),
        )
        .unwrap();
        // KIP-848 member metadata is record type 5.
        assert_eq!(key, [0, 5, 0, 1, b'g', 0, 2, b'm', b'1']);
        let value = encode_coordinator_value(
            &s,
            "ConsumerGroupMemberMetadata",
            0,
            &json!({"InstanceId": null, "RackId": null, "ClientId": "c", "ClientHost": "/h",
                    "SubscribedTopicNames": ["orders"], "SubscribedTopicRegex": null,
                    "RebalanceTimeoutMs": 1000, "ServerAssignor": "uniform"}),
        )
        .unwrap();
        decode(
            &s,
            InternalTopic::ConsumerOffsets,
            &key,
            &value,
            |k, v, kty, vty| {
                assert_eq!(kty, "ConsumerGroupMemberMetadataKey");
                assert_eq!(vty, "ConsumerGroupMemberMetadataValue v0");
                no_problems(k);
                no_problems(v);
                assert_eq!(
                    find(k, "type").annotation,
                    Some("ConsumerGroupMemberMetadata")
                );
                assert_eq!(find(v, "ServerAssignor").value, Value::Str("uniform"));
            },
        );
    }

    #[test]
    fn metadata_record_frame_by_hand() {
        let s = schema();
        let value = encode_metadata_value(
            &s,
            "TopicRecord",
            0,
            &json!({"Name": "t", "TopicId": "00000000-0000-0000-0000-000000000002"}),
        )
        .unwrap();
        let mut want = vec![1, 2, 0, 2, b't'];
        want.extend([0; 15]);
        want.extend([2, 0]);
        assert_eq!(value, want);
        decode(
            &s,
            InternalTopic::ClusterMetadata,
            &[],
            &value,
            |_, v, _, vty| {
                assert_eq!(vty, "TopicRecord v0");
                no_problems(v);
                assert_eq!(find(v, "type").annotation, Some("TopicRecord"));
                assert_eq!(find(v, "Name").value, Value::Str("t"));
            },
        );
    }

    #[test]
    fn unknown_types_and_versions_stay_raw_with_a_warning() {
        let s = schema();
        decode(
            &s,
            InternalTopic::ConsumerOffsets,
            &[0, 99, 1, 2],
            &[0, 0, 9],
            |k, v, kty, vty| {
                assert_eq!((kty, vty), ("bytes", "bytes"));
                assert!(find(k, "data")
                    .warning()
                    .unwrap()
                    .contains("unknown __consumer_offsets record type 99"));
                assert_eq!(find(v, "data").value, Value::Bytes(&[0, 0, 9]));
            },
        );
        let key = encode_coordinator_key(
            &s,
            "OffsetCommit",
            &json!({"group": "g", "topic": "t", "partition": 0}),
        )
        .unwrap();
        decode(
            &s,
            InternalTopic::ConsumerOffsets,
            &key,
            &[0, 77, 1, 2, 3],
            |_, v, _, vty| {
                assert_eq!(vty, "bytes");
                assert!(find(v, "data")
                    .warning()
                    .unwrap()
                    .contains("OffsetCommitValue has no version 77"));
            },
        );
        // A metadata record type from a newer Kafka.
        decode(
            &s,
            InternalTopic::ClusterMetadata,
            &[],
            &[1, 120, 0, 5],
            |_, v, _, _| {
                assert!(find(v, "data")
                    .warning()
                    .unwrap()
                    .contains("unknown metadata record type 120"));
            },
        );
    }

    #[test]
    fn tombstones_and_the_records_hook() {
        // A record batch of __consumer_offsets with an OffsetCommit tombstone, inside a
        // Produce request made by kwire's encoder.
        let s = schema();
        let key = encode_coordinator_key(
            &s,
            "OffsetCommit",
            &json!({"group": "g", "topic": "t", "partition": 1}),
        )
        .unwrap();
        let hex = crate::encode::to_hex(&key);
        let v = json!({"kind": "request", "api_name": "Produce", "api_version": 9,
            "header": {"correlation_id": 1, "client_id": "c"},
            "body": {"Acks": -1, "TimeoutMs": 1000, "TopicData": [{"Name": "__consumer_offsets",
                "PartitionData": [{"Index": 0, "Records": [{"magic": 2, "producerId": -1, "producerEpoch": -1, "baseSequence": -1,
                    "records": [{"attributes": 0, "timestampDelta": 0, "offsetDelta": 0, "key": hex, "value": null}]}]}]}]}});
        let frame = crate::encode::encode(&s, &v).unwrap();
        let opts = DecodeOptions::default();
        let arena = Buffers::new();
        let m = crate::decode::decode(&s, &opts, &arena, &frame, &crate::decode::Known::request());
        assert!(m.errors().is_empty(), "{:?}", m.errors());
        let rec = m.tree.find("Record[0]").unwrap();
        let k = rec.find("key").unwrap();
        assert_eq!(k.ty, "OffsetCommitKey");
        assert_eq!(k.find("partition").unwrap().value, Value::Int(1));
        let val = rec.find("value").unwrap();
        assert_eq!(val.value, Value::Null);
        assert_eq!(
            val.annotation,
            Some("tombstone: deletes this OffsetCommit record")
        );
        // The same batch for another topic stays bytes.
        let other = serde_json::to_string(&v)
            .unwrap()
            .replace("__consumer_offsets", "orders");
        let frame = crate::encode::encode(&s, &serde_json::from_str(&other).unwrap()).unwrap();
        let arena = Buffers::new();
        let m = crate::decode::decode(&s, &opts, &arena, &frame, &crate::decode::Known::request());
        assert_eq!(m.tree.find("key").unwrap().ty, "bytes");
    }

    #[test]
    fn fetch_by_the_fixed_cluster_metadata_topic_id() {
        let s = schema();
        let value = encode_metadata_value(&s, "NoOpRecord", 0, &json!({})).unwrap();
        let v = json!({"kind": "response", "api_name": "Fetch", "api_version": 13,
            "header": {"correlation_id": 1},
            "body": {"Responses": [{"TopicId": "00000000-0000-0000-0000-000000000001",
                "Partitions": [{"PartitionIndex": 0, "Records": [{"magic": 2, "producerId": -1, "producerEpoch": -1, "baseSequence": -1,
                    "records": [{"attributes": 0, "timestampDelta": 0, "offsetDelta": 0, "key": null,
                                 "value": crate::encode::to_hex(&value)}]}]}]}]}});
        let frame = crate::encode::encode(&s, &v).unwrap();
        let opts = DecodeOptions::default();
        let arena = Buffers::new();
        let m = crate::decode::decode(
            &s,
            &opts,
            &arena,
            &frame,
            &crate::decode::Known::response(1, 13),
        );
        assert!(m.errors().is_empty(), "{:?}", m.errors());
        let val = m.tree.find("Record[0]").unwrap().find("value").unwrap();
        assert_eq!(val.ty, "NoOpRecord v0");
    }

    #[test]
    fn fetch_snapshot_first_chunk_decodes_later_chunks_stay_raw() {
        let s = schema();
        let value = encode_metadata_value(
            &s,
            "FeatureLevelRecord",
            0,
            &json!({"Name": "metadata.version", "FeatureLevel": 27}),
        )
        .unwrap();
        for (position, decoded) in [(0, true), (4096, false)] {
            let v = json!({"kind": "response", "api_name": "FetchSnapshot", "api_version": 1,
                "header": {"correlation_id": 1},
                "body": {"Topics": [{"Name": "__cluster_metadata", "Partitions": [{"Index": 0, "Size": 100, "Position": position,
                    "UnalignedRecords": [{"magic": 2, "producerId": -1, "producerEpoch": -1, "baseSequence": -1,
                        "records": [{"attributes": 0, "timestampDelta": 0, "offsetDelta": 0, "key": null,
                                     "value": crate::encode::to_hex(&value)}]}]}]}]}});
            let frame = crate::encode::encode(&s, &v).unwrap();
            let opts = DecodeOptions::default();
            let arena = Buffers::new();
            let m = crate::decode::decode(
                &s,
                &opts,
                &arena,
                &frame,
                &crate::decode::Known::response(59, 1),
            );
            assert!(m.errors().is_empty(), "{:?}", m.errors());
            match m.tree.find("Record[0]") {
                Some(r) if decoded => {
                    let v = r.find("value").unwrap();
                    assert_eq!(v.ty, "FeatureLevelRecord v0");
                    assert_eq!(v.find("FeatureLevel").unwrap().value, Value::Int(27));
                }
                None if !decoded => {
                    assert!(matches!(
                        m.tree.find("UnalignedRecords").unwrap().value,
                        Value::Bytes(_)
                    ));
                }
                other => panic!("position {position}: {other:?}"),
            }
        }
    }

    /// Bytes of the consumer protocol (not flexible): int16 strings, int32 arrays.
    fn cp_str(b: &mut Vec<u8>, s: &str) {
        b.extend((s.len() as i16).to_be_bytes());
        b.extend(s.as_bytes());
    }

    /// `(topic, partitions)` as a consumer protocol `[]TopicPartition`.
    fn cp_partitions(b: &mut Vec<u8>, tps: &[(&str, &[i32])]) {
        b.extend((tps.len() as i32).to_be_bytes());
        for (t, ps) in tps {
            cp_str(b, t);
            b.extend((ps.len() as i32).to_be_bytes());
            for p in *ps {
                b.extend(p.to_be_bytes());
            }
        }
    }

    /// A GroupMetadataValue v3 of `protocol_type` with one member whose subscription and
    /// assignment are the consumer protocol v3 (topics, user data, owned partitions,
    /// generation, rack; assigned partitions, user data).
    fn group_metadata_value(s: &Schema, protocol_type: &str) -> Vec<u8> {
        let mut sub = 3i16.to_be_bytes().to_vec();
        sub.extend(1i32.to_be_bytes());
        cp_str(&mut sub, "orders");
        sub.extend((-1i32).to_be_bytes()); // UserData: null
        cp_partitions(&mut sub, &[("orders", &[0, 1])]);
        sub.extend(7i32.to_be_bytes()); // GenerationId
        cp_str(&mut sub, "rack-a");
        let mut asg = 3i16.to_be_bytes().to_vec();
        cp_partitions(&mut asg, &[("orders", &[2, 3])]);
        asg.extend(2i32.to_be_bytes());
        asg.extend(b"ud");
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        encode_coordinator_value(
            s,
            "GroupMetadata",
            3,
            &json!({"protocolType": protocol_type, "generation": 7, "protocol": "range",
                    "leader": "m1", "currentStateTimestamp": 1_714_564_800_000i64,
                    "members": [{"memberId": "m1", "groupInstanceId": null, "clientId": "c",
                                 "clientHost": "/10.0.0.1", "rebalanceTimeout": 300_000,
                                 "sessionTimeout": 45_000, "subscription": hex(&sub),
                                 "assignment": hex(&asg)}]}),
        )
        .unwrap()
    }

    /// Issue 25: a GroupMetadata value's members' `subscription` and `assignment` are
    /// the consumer protocol when the group's `protocolType` is `consumer`, as in
    /// JoinGroup and SyncGroup; another protocol type leaves them bytes.
    #[test]
    fn group_metadata_members_decode_as_the_consumer_protocol() {
        let s = schema();
        let key = encode_coordinator_key(&s, "GroupMetadata", &json!({"group": "g1"})).unwrap();
        let value = group_metadata_value(&s, "consumer");
        decode(
            &s,
            InternalTopic::ConsumerOffsets,
            &key,
            &value,
            |_, v, _, vty| {
                assert_eq!(vty, "GroupMetadataValue v3");
                no_problems(v);
                let sub = find(v, "ConsumerProtocolSubscription");
                assert_eq!(sub.ty, "ConsumerProtocolSubscription v3");
                assert_eq!(find(v, "Topics[0]").value, Value::Str("orders"));
                assert_eq!(find(v, "GenerationId").value, Value::Int(7));
                assert_eq!(find(v, "RackId").value, Value::Str("rack-a"));
                let owned = find(v, "OwnedPartitions");
                assert!(owned.find("Partitions").is_some());
                let asg = find(v, "ConsumerProtocolAssignment");
                assert_eq!(asg.ty, "ConsumerProtocolAssignment v3");
                let assigned = find(v, "AssignedPartitions");
                let parts: Vec<Value<'_>> = assigned
                    .find("Partitions")
                    .unwrap()
                    .children()
                    .filter(|c| c.name != "length")
                    .map(|c| c.value.clone())
                    .collect();
                assert_eq!(parts, [Value::Int(2), Value::Int(3)]);
                assert_eq!(asg.find("UserData").unwrap().value, Value::Bytes(b"ud"));
            },
        );
        // Kafka Connect's groups (`connect`) carry their own protocol: left as bytes.
        let value = group_metadata_value(&s, "connect");
        decode(
            &s,
            InternalTopic::ConsumerOffsets,
            &key,
            &value,
            |_, v, _, _| {
                no_problems(v);
                assert!(v
                    .iter()
                    .all(|n| n.find("ConsumerProtocolSubscription").is_none()));
                assert!(matches!(find(v, "subscription").value, Value::Bytes(_)));
            },
        );
    }

    /// A KIP-848 consumer group's classic member (ConsumerGroupMemberMetadataValue's
    /// `ClassicMemberMetadata`): each supported protocol's metadata is a consumer
    /// protocol subscription.
    #[test]
    fn classic_members_of_a_consumer_group_decode_their_subscriptions() {
        let s = schema();
        let key = encode_coordinator_key(
            &s,
            "ConsumerGroupMemberMetadata",
            &json!({"GroupId": "g", "MemberId": "m1"}),
        )
        .unwrap();
        let mut sub = 1i16.to_be_bytes().to_vec();
        sub.extend(1i32.to_be_bytes());
        cp_str(&mut sub, "orders");
        sub.extend((-1i32).to_be_bytes());
        cp_partitions(&mut sub, &[]);
        let hex: String = sub.iter().map(|x| format!("{x:02x}")).collect();
        let value = encode_coordinator_value(
            &s,
            "ConsumerGroupMemberMetadata",
            0,
            &json!({"InstanceId": null, "RackId": null, "ClientId": "c", "ClientHost": "/h",
                    "SubscribedTopicNames": ["orders"], "SubscribedTopicRegex": null,
                    "RebalanceTimeoutMs": 1000, "ServerAssignor": null,
                    "ClassicMemberMetadata": {"SessionTimeoutMs": 45000, "SupportedProtocols": [
                        {"Name": "range", "Metadata": hex}]}}),
        )
        .unwrap();
        decode(
            &s,
            InternalTopic::ConsumerOffsets,
            &key,
            &value,
            |_, v, _, _| {
                no_problems(v);
                let sub = find(v, "ConsumerProtocolSubscription");
                assert_eq!(sub.ty, "ConsumerProtocolSubscription v1");
                assert_eq!(find(v, "Topics[0]").value, Value::Str("orders"));
            },
        );
    }
}
