//! The fact walk: the one-line summary's facts read from a frame without its tree.
//!
//! [`decode_facts`] reads a clean request or response by the compiled plans of its
//! definition ([`crate::schema::plan`]) at [`super::Detail::Summary`]'s rules, and keeps
//! only what the summary line ([`crate::render::summary`]) and the capture session
//! ([`crate::session`]) read of the summary tree: topics (name or id, with their
//! partitions, in order), the first `GroupId` and `TransactionalId`, non-zero
//! `ErrorCode`s, batch and record counts, the (topic id, name) pairs a message teaches,
//! the first `ProtocolType` and `Acks`; and what `kwire stats` reads
//! ([`crate::traffic::Item::of`]): the header's `client_id` and every non-zero field
//! whose name ends in `ErrorCode` (`TopicConfigErrorCode`, `AcknowledgeErrorCode`...).
//! Fields that none of them read are stepped over by their lengths, checked against the
//! bytes left as the summary walk checks them; `records` fields go to the records
//! decoder as they do there (read, counted, CRC-checked, decompressed under the caps).
//!
//! What it gives is a *fact tree*: a message whose root holds one small node per fact
//! (a topic struct with its name or id and a `Partitions` array, a `Topics` array of
//! names, `client_id`, `GroupId`, `TransactionalId`, the error codes under their fields'
//! names, `ProtocolType`, `Acks`, a group per (id, name) pair, the records decoder's
//! groups), laid out so that everything that reads a summary tree
//! ([`crate::render::summary::line`], [`crate::traffic::Item::of`], the session's topic
//! ids, topic naming, pairing) reads the same facts from it as from the message's
//! summary tree: a few nodes instead of one per field read.
//!
//! Anything out of the ordinary gives up (`None`): an error or a warning anywhere (a
//! length past the end, a null where the version allows none, bad UTF-8, trailing bytes,
//! a frame size that is not the frame's, a record error or a cut batch), tagged fields,
//! a nested protocol or Envelope, snapshot or unaligned records, the node budget running
//! out, a layout other than a whole framed message. The caller then decodes the frame
//! by the summary walk, so bad input shows exactly what it shows there.

use super::{Cx, DecodeOptions, Known, Reader};
use crate::errors::error_name;
use crate::schema::plan::{fixed_size, min_size, struct_fields_of, Plan, Role};
use crate::schema::{Field, FieldType, MessageDef, MessageKind, Prim, Schema, SummaryFact};
use crate::tree::{Buffers, Direction, Message, Node, NodeKind, Value};
use crate::wire::{self, LenPrefix};

/// Names of a topic struct's name fields, as the summary reads them.
const TOPIC_NAMES: [&str; 3] = ["Name", "Topic", "TopicName"];
/// Names of a partition's index, as the summary reads them.
const PARTITION_NAMES: [&str; 4] = ["PartitionIndex", "Partition", "PartitionId", "Index"];

/// The walk gave up: the summary walk decodes the frame instead.
struct GiveUp;

type R<T> = Result<T, GiveUp>;

/// A topic as the summary gathers it.
enum Topic<'a> {
    /// A topic struct: its name (non-empty), else its id, else none, and its partitions.
    Struct {
        name: Option<&'a str>,
        id: Option<uuid::Uuid>,
        partitions: Vec<i64>,
    },
    /// A name of a `Topics`/`TopicNames` string array.
    Plain(&'a str),
}

/// What one struct (the body, a struct field, an array element) holds of the facts.
#[derive(Default)]
struct Acc<'a> {
    /// Its type or name names a topic.
    topicish: bool,
    /// A child makes it a topic struct.
    is_topic: bool,
    /// The first name child with a string value.
    first_name: Option<&'a str>,
    /// The first `TopicId` child: its id when it is one.
    first_id: Option<Option<uuid::Uuid>>,
    /// Partitions of its arrays' elements.
    partitions: Vec<i64>,
    /// The last non-empty name and the last non-nil id (the session's topic ids).
    last_name: Option<&'a str>,
    last_id: Option<uuid::Uuid>,
    /// The first partition-named child's value (for an array element).
    partition_first: Option<Option<i64>>,
    /// Some child is kept by the summary tree.
    kept_any: bool,
    /// Where its topics and pairs start in the walk's lists.
    topics_start: usize,
    pairs_start: usize,
}

fn int_value(v: &Value<'_>) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        _ => None,
    }
}

fn len_prefix(flexible: bool, fixed: LenPrefix) -> LenPrefix {
    if flexible {
        LenPrefix::Compact
    } else {
        fixed
    }
}

/// The fact walk of one message.
struct FactWalk<'c, 'a> {
    cx: &'c mut Cx<'a>,
    def: &'a MessageDef,
    version: i16,
    flexible: bool,
    /// Reading the header: no facts, every field read.
    header: bool,
    correlation_id: Option<i32>,
    group: Option<&'a str>,
    transactional: Option<&'a str>,
    /// The header's `ClientId` (a string or null; absent in header v0 and responses).
    client_id: Option<Value<'a>>,
    /// Non-zero error codes (fields whose name ends in `ErrorCode`) in order: the
    /// field's name, the value and the error's name (for an int16 error code).
    errors: Vec<(&'a str, i64, Option<&'a str>)>,
    topics: Vec<Topic<'a>>,
    pairs: Vec<(uuid::Uuid, &'a str)>,
    protocol_type: Option<Value<'a>>,
    acks: Option<Value<'a>>,
    /// The records decoder's nodes, in order.
    records: Vec<Node<'a>>,
}

impl<'c, 'a> FactWalk<'c, 'a> {
    fn field_flexible(&self, f: &Field) -> bool {
        f.is_flexible(self.version, self.flexible)
    }

    /// A kept node named `name` with `value`, a child of the struct `acc`.
    fn child(
        &mut self,
        acc: &mut Acc<'a>,
        name: &'a str,
        value: &Value<'a>,
        error: Option<&'a str>,
    ) {
        if self.header {
            return;
        }
        acc.kept_any = true;
        match name {
            "GroupId" if self.group.is_none() => {
                if let Value::Str(s) = value {
                    self.group = Some(s);
                }
            }
            "TransactionalId" if self.transactional.is_none() => {
                if let Value::Str(s) = value {
                    self.transactional = Some(s);
                }
            }
            n if n.ends_with("ErrorCode") => {
                if let Some(code) = int_value(value).filter(|c| *c != 0) {
                    self.errors.push((n, code, error));
                }
            }
            "ProtocolType" if self.protocol_type.is_none() => {
                self.protocol_type = Some(value.clone())
            }
            "Acks" if self.acks.is_none() => self.acks = Some(value.clone()),
            _ => {}
        }
        match name {
            "Topic" | "TopicName" => acc.is_topic |= matches!(value, Value::Str(_)),
            "Name" => acc.is_topic |= acc.topicish && matches!(value, Value::Str(_) | Value::Null),
            "TopicId" => acc.is_topic |= acc.topicish,
            _ => {}
        }
        if TOPIC_NAMES.contains(&name) {
            if let Value::Str(s) = value {
                if acc.first_name.is_none() {
                    acc.first_name = Some(s);
                }
                if !s.is_empty() {
                    acc.last_name = Some(s);
                }
            }
        }
        if name == "TopicId" {
            let id = match value {
                Value::Uuid(u) => Some(*u),
                _ => None,
            };
            if acc.first_id.is_none() {
                acc.first_id = Some(id);
            }
            if let Some(u) = id.filter(|u| !u.is_nil()) {
                acc.last_id = Some(u);
            }
        }
        if acc.partition_first.is_none() && PARTITION_NAMES.contains(&name) {
            acc.partition_first = Some(int_value(value));
        }
    }

    fn open(&self, topicish: bool) -> Acc<'a> {
        Acc {
            topicish,
            topics_start: self.topics.len(),
            pairs_start: self.pairs.len(),
            ..Acc::default()
        }
    }

    /// The end of a struct (`is_struct`: a struct node, which may stand for a topic; the
    /// body is not one).
    fn close(&mut self, acc: &mut Acc<'a>, is_struct: bool) {
        if self.header {
            return;
        }
        if let (Some(n), Some(id)) = (acc.last_name, acc.last_id) {
            self.pairs.insert(acc.pairs_start, (id, n));
        }
        if is_struct && acc.is_topic {
            self.topics.truncate(acc.topics_start);
            let name = acc.first_name.filter(|s| !s.is_empty());
            let id = if name.is_none() {
                acc.first_id.flatten()
            } else {
                None
            };
            self.topics.push(Topic::Struct {
                name,
                id,
                partitions: std::mem::take(&mut acc.partitions),
            });
        }
    }

    /// Fields of a struct by `plan`, then its tagged fields.
    fn planned(
        &mut self,
        r: &mut Reader<'a>,
        fields: &'a [Field],
        plan: &Plan,
        acc: &mut Acc<'a>,
    ) -> R<()> {
        self.cx.depth += 1;
        if self.cx.depth > self.cx.opts.max_depth {
            return Err(GiveUp);
        }
        let mut k = 0;
        while let Some(step) = plan.steps.get(k) {
            let f = &fields[usize::from(step.field)];
            if !self.header && step.run > 1 {
                r.split(step.run_bytes as usize).ok_or(GiveUp)?;
                k += usize::from(step.run);
                continue;
            }
            k += 1;
            if !self.header && f.skimmable() && self.skim(r, f)? {
                continue;
            }
            let sub = step.home.as_ref().and_then(|h| h.fields(self.def));
            let (def, version, flexible) = (self.def, self.version, self.flexible);
            let sub_plan =
                sub.map(|fs| &**step.sub.get_or_init(|| def.plan(fs, version, flexible)));
            self.field(r, f, sub, sub_plan, acc)?;
        }
        if self.flexible {
            let (count, _, _) = r.read(wire::uvarint).map_err(|_| GiveUp)?;
            if count != 0 {
                return Err(GiveUp);
            }
        }
        self.cx.depth -= 1;
        Ok(())
    }

    /// Steps over field `f` (not kept by the summary) when the summary walk skims it:
    /// `Ok(true)`; `Ok(false)` for a field it reads in full; a skim that fails is an
    /// error there.
    fn skim(&mut self, r: &mut Reader<'a>, f: &Field) -> R<bool> {
        match &f.ty {
            FieldType::Prim(Prim::String) => {
                let prefix = len_prefix(self.field_flexible(f), LenPrefix::Int16);
                match r.read(wire::sized(prefix)) {
                    Ok(((_, None), _, _)) if f.is_nullable(self.version) => Ok(true),
                    Ok(((_, Some(b)), _, _)) if std::str::from_utf8(b).is_ok() => Ok(true),
                    _ => Err(GiveUp),
                }
            }
            FieldType::Prim(q) => match fixed_size(*q) {
                Some(n) => r.split(n).map(|_| true).ok_or(GiveUp),
                None => Ok(false),
            },
            FieldType::Array(inner) => match **inner {
                FieldType::Prim(q) => match fixed_size(q) {
                    Some(n) => {
                        let prefix = len_prefix(self.field_flexible(f), LenPrefix::Int32);
                        let (l, _, _) = r.read(wire::length(prefix)).map_err(|_| GiveUp)?;
                        match l.len {
                            None if f.is_nullable(self.version) => Ok(true),
                            None => Err(GiveUp),
                            Some(count) => {
                                let elements = usize::try_from(count).map_err(|_| GiveUp)?;
                                let bytes = elements.checked_mul(n).ok_or(GiveUp)?;
                                r.split(bytes).ok_or(GiveUp)?;
                                self.cx.spend(elements);
                                Ok(true)
                            }
                        }
                    }
                    None => Ok(false),
                },
                _ => Ok(false),
            },
            FieldType::Struct(_) => Ok(false),
        }
    }

    /// One field, with its struct's fields and plan when the parent plan has them.
    fn field(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        sub: Option<&'a [Field]>,
        sub_plan: Option<&Plan>,
        acc: &mut Acc<'a>,
    ) -> R<()> {
        match &f.ty {
            FieldType::Prim(p) => {
                let (v, ann) = self.prim(r, f, *p, self.field_flexible(f))?;
                if self.header && f.name == "CorrelationId" {
                    if let Value::Int(c) = v {
                        self.correlation_id = Some(c as i32);
                    }
                }
                if self.header && f.name == "ClientId" {
                    self.client_id = Some(v.clone());
                }
                self.cx.topics.observe_value(&self.def.name, f, &v);
                if *p == Prim::Records && v == Value::None && !self.header {
                    // The records' group: a kept container with no fact of its own.
                    acc.kept_any = true;
                } else if self.keeps(f, &v) {
                    self.child(acc, &f.name, &v, ann);
                }
                Ok(())
            }
            FieldType::Struct(s) => {
                let mut sacc = self.open(f.name.contains("Topic") || f.type_name.contains("Topic"));
                let mut value = Value::None;
                if f.is_nullable(self.version) {
                    let (m, _, _) = r.read(wire::int8).map_err(|_| GiveUp)?;
                    sacc.kept_any = !self.header;
                    if m < 0 {
                        value = Value::Null;
                    }
                }
                if value != Value::Null {
                    let fields = sub
                        .or_else(|| struct_fields_of(self.def, f, s))
                        .ok_or(GiveUp)?;
                    match sub_plan.filter(|_| sub.is_some()) {
                        Some(p) => self.planned(r, fields, p, &mut sacc)?,
                        None => {
                            let p = self.def.plan(fields, self.version, self.flexible);
                            self.planned(r, fields, &p, &mut sacc)?
                        }
                    }
                }
                self.close(&mut sacc, true);
                if sacc.kept_any {
                    self.child(acc, &f.name, &value, None);
                }
                Ok(())
            }
            FieldType::Array(inner) => self.array(r, f, inner, sub, sub_plan, acc),
        }
    }

    /// Whether the summary tree keeps the leaf of `f` valued `v`.
    fn keeps(&self, f: &Field, v: &Value<'_>) -> bool {
        f.summary.keeps(v)
    }

    /// A primitive's value and, for an int16 error code, its error's name.
    fn prim(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        p: Prim,
        flexible: bool,
    ) -> R<(Value<'a>, Option<&'a str>)> {
        macro_rules! fixed {
            ($parser:path, $wrap:expr) => {
                r.read($parser)
                    .map(|(v, _, _)| $wrap(v))
                    .map_err(|_| GiveUp)?
            };
        }
        let v = match p {
            Prim::Bool => fixed!(wire::boolean, Value::Bool),
            Prim::Int8 => fixed!(wire::int8, |v: i8| Value::Int(v as i64)),
            Prim::Int16 => {
                let v = fixed!(wire::int16, |v: i16| v);
                if f.role.has(Role::ERROR_CODE) && v != 0 {
                    let name = match error_name(v) {
                        Some(e) => e,
                        None => self.cx.fmt(format_args!("unknown error code {v}")),
                    };
                    return Ok((Value::Int(v.into()), Some(name)));
                }
                Value::Int(v.into())
            }
            Prim::Uint16 => fixed!(wire::uint16, |v: u16| Value::UInt(v as u64)),
            Prim::Int32 => fixed!(wire::int32, |v: i32| Value::Int(v as i64)),
            Prim::Uint32 => fixed!(wire::uint32, |v: u32| Value::UInt(v as u64)),
            Prim::Int64 => fixed!(wire::int64, Value::Int),
            Prim::Float64 => fixed!(wire::float64, Value::Float),
            Prim::Uuid => fixed!(wire::uuid, Value::Uuid),
            Prim::String => {
                let prefix = len_prefix(flexible, LenPrefix::Int16);
                let ((_, data), _, _) = r.read(wire::sized(prefix)).map_err(|_| GiveUp)?;
                match data {
                    None if f.is_nullable(self.version) => Value::Null,
                    None => return Err(GiveUp),
                    Some(b) => Value::Str(std::str::from_utf8(b).map_err(|_| GiveUp)?),
                }
            }
            Prim::Bytes | Prim::Records => return self.bytes(r, f, p, flexible),
        };
        Ok((v, None))
    }

    fn bytes(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        p: Prim,
        flexible: bool,
    ) -> R<(Value<'a>, Option<&'a str>)> {
        let prefix = len_prefix(flexible, LenPrefix::Int32);
        let (len, _, _) = r.read(wire::length(prefix)).map_err(|_| GiveUp)?;
        let Some(size) = len.len else {
            return if f.is_nullable(self.version) {
                Ok((Value::Null, None))
            } else {
                Err(GiveUp)
            };
        };
        let size = usize::try_from(size).map_err(|_| GiveUp)?;
        let mut sub = r.split(size).ok_or(GiveUp)?;
        let data = sub.rest;
        if p == Prim::Records {
            let def = self.def.name.as_str();
            if def == "FetchSnapshotResponse" || f.role.has(Role::UNALIGNED_RECORDS) {
                return Err(GiveUp);
            }
            let partial_ok = matches!(def, "FetchResponse" | "ShareFetchResponse");
            let nodes = super::records::decode_records(self.cx, &mut sub, partial_ok);
            let mut clean = true;
            for n in &nodes {
                n.walk(&mut |x, _| clean &= x.error().is_none() && x.warning().is_none());
            }
            if !clean {
                return Err(GiveUp);
            }
            self.records.extend(nodes);
            // The records' group is a kept container: it holds no fact of its own.
            return Ok((Value::None, None));
        }
        if !data.is_empty() && nests(&self.def.name, &f.name) {
            return Err(GiveUp);
        }
        Ok((Value::Bytes(data), None))
    }

    fn array(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        inner: &'a FieldType,
        sub: Option<&'a [Field]>,
        sub_plan: Option<&Plan>,
        acc: &mut Acc<'a>,
    ) -> R<()> {
        let flexible = self.field_flexible(f);
        let prefix = len_prefix(flexible, LenPrefix::Int32);
        let (len, _, _) = r.read(wire::length(prefix)).map_err(|_| GiveUp)?;
        let Some(count) = len.len else {
            if !f.is_nullable(self.version) {
                return Err(GiveUp);
            }
            if f.summary != SummaryFact::Never {
                self.child(acc, &f.name, &Value::Null, None);
            }
            return Ok(());
        };
        let elem_struct = match inner {
            FieldType::Struct(s) => Some((
                s.as_str(),
                sub.or_else(|| struct_fields_of(self.def, f, s))
                    .ok_or(GiveUp)?,
            )),
            _ => None,
        };
        let looked_up;
        let elem_plan: Option<&Plan> = match (elem_struct, sub_plan.filter(|_| sub.is_some())) {
            (Some(_), Some(p)) => Some(p),
            (Some((_, fs)), None) => {
                looked_up = self.def.plan(fs, self.version, self.flexible);
                Some(&looked_up)
            }
            _ => None,
        };
        let min = match elem_plan {
            Some(p) => p.min_size,
            None => min_size(self.def, inner, f, self.version, self.flexible, 0),
        } as u64;
        if count.saturating_mul(min.max(1)) > r.left() as u64 && min > 0 {
            return Err(GiveUp);
        }
        let weight = match elem_struct {
            Some((_, fs)) => 1 + fs.len(),
            None => 1,
        };
        let plain_names = matches!(f.name.as_str(), "TopicNames" | "Topics");
        let partition_names =
            f.name == "Partitions" || PARTITION_NAMES.iter().any(|p| f.name.starts_with(p));
        let mut kept = false;
        for _ in 0..count {
            if self.cx.budget_left() == 0 {
                return Err(GiveUp);
            }
            self.cx.spend(weight);
            match (inner, elem_struct, elem_plan) {
                (FieldType::Prim(p), _, _) => {
                    let (v, _) = self.prim(r, f, *p, flexible)?;
                    if self.header || !self.keeps(f, &v) {
                        continue;
                    }
                    kept = true;
                    if plain_names {
                        if let Value::Str(s) = v {
                            self.topics.push(Topic::Plain(s));
                        }
                    }
                    if partition_names {
                        if let Some(p) = int_value(&v) {
                            acc.partitions.push(p);
                        }
                    }
                }
                (FieldType::Struct(_), Some((s, fields)), Some(plan)) => {
                    let mut eacc = self.open(s.contains("Topic"));
                    self.planned(r, fields, plan, &mut eacc)?;
                    self.close(&mut eacc, true);
                    if eacc.kept_any {
                        kept = true;
                        if let Some(Some(p)) = eacc.partition_first {
                            acc.partitions.push(p);
                        }
                    }
                }
                _ => return Err(GiveUp),
            }
        }
        if kept || f.summary != SummaryFact::Never {
            self.child(acc, &f.name, &Value::Count(count), None);
        }
        Ok(())
    }
}

/// Whether bytes field `field` of definition `def` holds a nested structure the
/// summary walk decodes (the consumer protocol, an Envelope's request or principal).
fn nests(def: &str, field: &str) -> bool {
    matches!(
        (def, field),
        ("JoinGroupRequest" | "JoinGroupResponse", "Metadata")
            | ("SyncGroupRequest" | "SyncGroupResponse", "Assignment")
            | ("GroupMetadataValue", "subscription" | "assignment")
            | ("ConsumerGroupMemberMetadataValue", "Metadata")
            | ("EnvelopeRequest", "RequestPrincipal" | "RequestData")
    )
}

/// The fact tree of a whole framed message (size prefix and header) when it decodes
/// cleanly by the fast path (see the module docs); `None` when the summary walk must
/// decode it. The message's api, version, correlation_id, header version and schema
/// release are what [`super::decode`] gives; its tree holds the facts only.
pub fn decode_facts<'a>(
    schema: &'a Schema,
    opts: &'a DecodeOptions,
    arena: &'a Buffers,
    frame: &'a [u8],
    known: &Known,
) -> Option<Message<'a>> {
    if !known.layout.size_prefix || !known.layout.header || frame.len() < 4 {
        return None;
    }
    let size = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
    if size <= 0 || size as usize != frame.len() - 4 {
        return None;
    }
    let is_req = known.direction == Direction::Request;
    let (key, ver) = if is_req {
        let b = frame.get(4..8)?;
        (
            i16::from_be_bytes([b[0], b[1]]),
            i16::from_be_bytes([b[2], b[3]]),
        )
    } else {
        (known.api_key?, known.api_version?)
    };
    if key == 58 {
        return None; // Envelope: a request inside
    }
    let kind = if is_req {
        MessageKind::Request
    } else {
        MessageKind::Response
    };
    let body_def = schema.resolve(kind, key, ver)?;
    let api_name = schema.api_name(key)?;
    let hv = if is_req {
        schema.request_header_version(key, ver)
    } else {
        schema.response_header_version(key, ver)
    };
    let hd = schema.header(is_req, hv)?;
    let mut cx = Cx::new(schema, arena, opts);
    cx.topics.known_ids = known.hints.internal_topic_ids.clone();
    let mut r = Reader::new(&frame[4..], 4, 0, arena);
    let mut w = FactWalk {
        cx: &mut cx,
        def: &hd.def,
        version: hv,
        flexible: hd.def.is_flexible(hv),
        header: true,
        correlation_id: None,
        client_id: None,
        group: None,
        transactional: None,
        errors: Vec::new(),
        topics: Vec::new(),
        pairs: Vec::new(),
        protocol_type: None,
        acks: None,
        records: Vec::new(),
    };
    let mut hacc = Acc::default();
    let hplan = hd.def.plan(&hd.def.fields, hv, w.flexible);
    w.planned(&mut r, &hd.def.fields, &hplan, &mut hacc).ok()?;
    let correlation_id = w.correlation_id;
    let def = &body_def.def;
    // The definition's release, as the summary walk gives it: for a body that has bytes.
    let mut schema_release = None;
    if !r.rest.is_empty() {
        schema_release = Some(match &body_def.source {
            crate::schema::Source::User => "user",
            crate::schema::Source::Release(x) => x.as_str(),
        });
        w.header = false;
        w.def = def;
        w.version = ver;
        w.flexible = def.is_flexible(ver);
        let mut bacc = w.open(false);
        let plan = def.plan(&def.fields, ver, w.flexible);
        w.planned(&mut r, &def.fields, &plan, &mut bacc).ok()?;
        w.close(&mut bacc, false);
        if !r.rest.is_empty() {
            return None; // trailing bytes: a warning
        }
    }
    let tree = fact_tree(w, def.name.as_str(), ver, frame.len());
    let buffers = std::mem::take(&mut cx.buffers);
    Some(Message {
        direction: known.direction,
        api_key: key,
        api_name: Some(api_name),
        api_version: ver,
        correlation_id,
        header_version: hv,
        size: frame.len(),
        schema_release,
        frame,
        buffers,
        tree,
        guess: None,
    })
}

/// The facts of `w` as the fact tree (see the module docs).
fn fact_tree<'a>(w: FactWalk<'_, 'a>, root_name: &'a str, ver: i16, len: usize) -> Node<'a> {
    let arena = w.cx.arena;
    let leaf = |name: &'a str, v: Value<'a>| Node::leaf(name, "fact", v, 0, 0);
    let mut kids: Vec<Node<'a>> = Vec::new();
    if let Some(c) = w.client_id {
        kids.push(leaf("client_id", c));
    }
    if let Some(g) = w.group {
        kids.push(leaf("GroupId", Value::Str(g)));
    }
    if let Some(t) = w.transactional {
        kids.push(leaf("TransactionalId", Value::Str(t)));
    }
    if let Some(p) = w.protocol_type {
        kids.push(leaf("ProtocolType", p));
    }
    if let Some(a) = w.acks {
        kids.push(leaf("Acks", a));
    }
    for (field, code, name) in w.errors {
        let e = leaf(field, Value::Int(code));
        kids.push(match name {
            Some(n) => e.annotate(n),
            None => e,
        });
    }
    for t in w.topics {
        match t {
            Topic::Plain(s) => {
                let mut a = Node::new("Topics", "fact", NodeKind::Array, 0);
                a.children = arena.nodes([leaf("Topics[0]", Value::Str(s))]);
                kids.push(a);
            }
            Topic::Struct {
                name,
                id,
                partitions,
            } => {
                let mut s = Node::new("Topic", "Topic", NodeKind::Struct, 0);
                let first = match (name, id) {
                    (Some(n), _) => leaf("TopicName", Value::Str(n)),
                    (None, Some(u)) => leaf("TopicId", Value::Uuid(u)),
                    (None, None) => leaf("Name", Value::Null),
                };
                let mut p = Node::new("Partitions", "fact", NodeKind::Array, 0);
                p.children = arena.nodes(
                    partitions
                        .into_iter()
                        .map(|x| leaf("Partition", Value::Int(x))),
                );
                s.children = arena.nodes([first, p]);
                kids.push(s);
            }
        }
    }
    for (id, name) in w.pairs {
        let mut g = Node::new("pair", "fact", NodeKind::Group, 0);
        g.children = arena.nodes([
            leaf("Name", Value::Str(name)),
            leaf("TopicId", Value::Uuid(id)),
        ]);
        kids.push(g);
    }
    kids.extend(w.records);
    let mut root = Node::new(root_name, "fact", NodeKind::Message, 0);
    root.ty = super::texts::message(ver.into(), arena);
    root.length = len;
    root.children = arena.seal(kids);
    root
}
