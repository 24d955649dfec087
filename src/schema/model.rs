//! The model of Kafka's JSON message definitions.
//!
//! Source: the `*.json` files under Kafka's `clients/src/main/resources/common/message`
//! (and the coordinator, metadata, raft and streams modules), as read by Kafka's own
//! `generator` module. The files are looser than Kafka's model: a few `tag` and
//! `ignorable` values are strings, `default` may be a string, number, boolean or null, a
//! tagged field may omit `versions`, and APIs removed in 4.0 have
//! `"validVersions": "none"` and no `fields`. [`MessageDef::from_json`] accepts all of
//! that and rejects what Kafka's generator would reject, naming the field.

use serde_json::Value;
use std::fmt;

/// A version range as the definitions write it: `"0+"`, `"1-6"`, `"3"` or `"none"`.
///
/// Stored inclusive; `none` is the empty range. Versions are `i16`, as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Versions {
    /// Lowest version in the range (meaningless when empty).
    pub lo: i16,
    /// Highest version in the range; `i16::MAX` for an open range (`"N+"`).
    pub hi: i16,
}

impl Versions {
    /// The empty range (`"none"`).
    pub const NONE: Versions = Versions { lo: 1, hi: 0 };
    /// Every version (`"0+"`).
    pub const ALL: Versions = Versions {
        lo: 0,
        hi: i16::MAX,
    };

    /// Parses `"N+"`, `"N-M"`, `"N"` or `"none"`.
    ///
    /// # Errors
    /// A message naming what is wrong (not a number, `M < N`, negative).
    pub fn parse(s: &str) -> Result<Versions, String> {
        let t = s.trim();
        if t == "none" {
            return Ok(Versions::NONE);
        }
        let num = |x: &str| -> Result<i16, String> {
            x.trim()
                .parse::<i16>()
                .ok()
                .filter(|v| *v >= 0)
                .ok_or_else(|| format!("bad version range {s:?}"))
        };
        if let Some(lo) = t.strip_suffix('+') {
            return Ok(Versions {
                lo: num(lo)?,
                hi: i16::MAX,
            });
        }
        if let Some((a, b)) = t.split_once('-') {
            let (lo, hi) = (num(a)?, num(b)?);
            if hi < lo {
                return Err(format!("bad version range {s:?}: end before start"));
            }
            return Ok(Versions { lo, hi });
        }
        let v = num(t)?;
        Ok(Versions { lo: v, hi: v })
    }

    /// Whether `v` is in the range.
    pub fn contains(&self, v: i16) -> bool {
        v >= self.lo && v <= self.hi
    }

    /// Whether the range is empty (`"none"`).
    pub fn is_empty(&self) -> bool {
        self.hi < self.lo
    }

    /// The highest version of a closed range, or `None` for an open or empty one.
    pub fn closed_max(&self) -> Option<i16> {
        (!self.is_empty() && self.hi != i16::MAX).then_some(self.hi)
    }

    /// The intersection of two ranges.
    pub fn intersect(&self, o: &Versions) -> Versions {
        let v = Versions {
            lo: self.lo.max(o.lo),
            hi: self.hi.min(o.hi),
        };
        if v.is_empty() {
            Versions::NONE
        } else {
            v
        }
    }
}

impl fmt::Display for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            write!(f, "none")
        } else if self.hi == i16::MAX {
            write!(f, "{}+", self.lo)
        } else if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

/// The kind of a definition file (its top-level `"type"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// An API request body.
    Request,
    /// An API response body.
    Response,
    /// `RequestHeader` or `ResponseHeader`.
    Header,
    /// A data type carried inside other messages (ConsumerProtocolSubscription, ...).
    Data,
    /// A KRaft `__cluster_metadata` record.
    Metadata,
    /// The key of an internal-topic record (`__consumer_offsets`, ...).
    CoordinatorKey,
    /// The value of an internal-topic record.
    CoordinatorValue,
}

impl MessageKind {
    /// Parses the `"type"` string of a definition file.
    pub fn parse(s: &str) -> Option<MessageKind> {
        Some(match s {
            "request" => MessageKind::Request,
            "response" => MessageKind::Response,
            "header" => MessageKind::Header,
            "data" => MessageKind::Data,
            "metadata" => MessageKind::Metadata,
            "coordinator-key" => MessageKind::CoordinatorKey,
            "coordinator-value" => MessageKind::CoordinatorValue,
            _ => return None,
        })
    }
    /// The `"type"` string as the files write it.
    pub fn as_str(&self) -> &'static str {
        match self {
            MessageKind::Request => "request",
            MessageKind::Response => "response",
            MessageKind::Header => "header",
            MessageKind::Data => "data",
            MessageKind::Metadata => "metadata",
            MessageKind::CoordinatorKey => "coordinator-key",
            MessageKind::CoordinatorValue => "coordinator-value",
        }
    }
}

/// A primitive Kafka type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// `bool`: one byte, 0 or 1.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`, big-endian.
    Int16,
    /// `uint16`, big-endian.
    Uint16,
    /// `int32`, big-endian.
    Int32,
    /// `uint32`, big-endian.
    Uint32,
    /// `int64`, big-endian.
    Int64,
    /// `float64`, IEEE 754 big-endian.
    Float64,
    /// `string`: int16 length (or compact uvarint length+1) and UTF-8.
    String,
    /// `bytes`: int32 length (or compact uvarint length+1).
    Bytes,
    /// `uuid`: 16 bytes.
    Uuid,
    /// `records`: bytes holding record batches or message sets.
    Records,
}

impl Prim {
    /// Parses a primitive type name as the definitions write it.
    pub fn parse(s: &str) -> Option<Prim> {
        Some(match s {
            "bool" => Prim::Bool,
            "int8" => Prim::Int8,
            "int16" => Prim::Int16,
            "uint16" => Prim::Uint16,
            "int32" => Prim::Int32,
            "uint32" => Prim::Uint32,
            "int64" => Prim::Int64,
            "float64" => Prim::Float64,
            "string" => Prim::String,
            "bytes" => Prim::Bytes,
            "uuid" => Prim::Uuid,
            "records" => Prim::Records,
            _ => return None,
        })
    }
    /// The type name as the definitions write it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Prim::Bool => "bool",
            Prim::Int8 => "int8",
            Prim::Int16 => "int16",
            Prim::Uint16 => "uint16",
            Prim::Int32 => "int32",
            Prim::Uint32 => "uint32",
            Prim::Int64 => "int64",
            Prim::Float64 => "float64",
            Prim::String => "string",
            Prim::Bytes => "bytes",
            Prim::Uuid => "uuid",
            Prim::Records => "records",
        }
    }
    /// The encoded size of a fixed-size type (numbers, `bool`, `uuid`), in bytes; `None`
    /// for strings, bytes and records.
    pub fn fixed_size(&self) -> Option<usize> {
        Some(match self {
            Prim::Bool | Prim::Int8 => 1,
            Prim::Int16 | Prim::Uint16 => 2,
            Prim::Int32 | Prim::Uint32 => 4,
            Prim::Int64 | Prim::Float64 => 8,
            Prim::Uuid => 16,
            Prim::String | Prim::Bytes | Prim::Records => return None,
        })
    }

    /// Whether values of this type may be null in some versions (strings, bytes, records).
    pub fn nullable_capable(&self) -> bool {
        matches!(self, Prim::String | Prim::Bytes | Prim::Records)
    }
}

/// The type of a field: a primitive, a struct (by name), or an array of either.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// A primitive.
    Prim(Prim),
    /// A struct, by name: defined inline by the field's `fields` or in `commonStructs`.
    Struct(String),
    /// `[]T`.
    Array(Box<FieldType>),
}

impl FieldType {
    /// Parses a type string (`int32`, `[]string`, `DeleteTopicState`, `[]DeleteTopicState`).
    ///
    /// # Errors
    /// An unknown lower-case type or a malformed name.
    pub fn parse(s: &str) -> Result<FieldType, String> {
        if let Some(inner) = s.strip_prefix("[]") {
            let t = FieldType::parse(inner)?;
            if matches!(t, FieldType::Array(_)) {
                return Err(format!(
                    "unknown type {s:?}: arrays of arrays are not allowed"
                ));
            }
            return Ok(FieldType::Array(Box::new(t)));
        }
        if let Some(p) = Prim::parse(s) {
            return Ok(FieldType::Prim(p));
        }
        let ok = s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if ok {
            Ok(FieldType::Struct(s.to_string()))
        } else {
            Err(format!("unknown type {s:?}"))
        }
    }
}

/// One field of a message or struct.
#[derive(Clone, Debug)]
pub struct Field {
    /// The field's name (`Topics`, `TimeoutMs`).
    pub name: String,
    /// The type string exactly as the file writes it (`[]DeleteTopicState`).
    pub type_name: String,
    /// The parsed type.
    pub ty: FieldType,
    /// Versions in which the field is present (tagged fields may omit it: then their
    /// `taggedVersions`).
    pub versions: Versions,
    /// Versions in which the field may be null.
    pub nullable_versions: Versions,
    /// Versions in which the field is a tagged field.
    pub tagged_versions: Versions,
    /// The tag, for tagged fields.
    pub tag: Option<u32>,
    /// The `default` as written (a string, number, boolean or null), normalised to text.
    pub default: Option<String>,
    /// `ignorable`.
    pub ignorable: bool,
    /// `mapKey`.
    pub map_key: bool,
    /// `entityType` (topicName, groupId, brokerId, ...).
    pub entity_type: Option<String>,
    /// `zeroCopy`.
    pub zero_copy: bool,
    /// Per-field `flexibleVersions` override (RequestHeader's ClientId: `none`).
    pub flexible_versions: Option<Versions>,
    /// The `about` text: present only in run-time schemas, never in the embedded facts.
    pub about: Option<String>,
    /// Inline struct fields, when the type is a struct defined here.
    pub fields: Vec<Field>,
    /// Whether the summary detail level keeps this field's value (from its name; see
    /// `decode::Detail::Summary`).
    pub summary: SummaryFact,
    /// Whether the rows detail level (`decode::Detail::Rows`) keeps this field's value
    /// beyond what [`Field::summary`] keeps: the values the export's `messages` and
    /// `partitions` rows and `kwire report` read (from its name and type; see
    /// [`Field::is_row_fact`]).
    pub row: bool,
    /// What the decoder does with the field beyond reading its type (from its name and
    /// entity type; see [`super::plan::Role`]).
    pub role: super::plan::Role,
}

/// Whether the summary detail level (`decode::Detail::Summary`) keeps a field's value:
/// the fields the summary line, the capture session and `kwire read`'s filters read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryFact {
    /// Not read by any of them.
    Never,
    /// Topic names and ids, partitions, group and transactional ids, `ProtocolType`,
    /// `Acks`.
    Always,
    /// Error codes, when not 0 (NONE).
    NonZero,
}

impl SummaryFact {
    /// The fact a field called `name` (or an element of an array field called `name`) is.
    pub fn of(name: &str) -> SummaryFact {
        match name {
            "GroupId" | "TransactionalId" | "ProtocolType" | "Acks" | "Name" | "Index" => {
                SummaryFact::Always
            }
            n if n.contains("Topic") || n.starts_with("Partition") => SummaryFact::Always,
            n if n.ends_with("ErrorCode") => SummaryFact::NonZero,
            _ => SummaryFact::Never,
        }
    }

    /// Whether the summary detail level keeps a value `v` of a field that is this fact.
    pub fn keeps(self, v: &crate::tree::Value<'_>) -> bool {
        match self {
            SummaryFact::Never => false,
            SummaryFact::Always => true,
            SummaryFact::NonZero => *v != crate::tree::Value::Int(0),
        }
    }
}

impl Field {
    /// Whether the levels below the whole tree may step over this field without
    /// reading its value: the summary keeps nothing of it ([`SummaryFact::Never`]) and
    /// its value does not steer the rest of the walk ([`super::plan::Role::STEERS`]).
    pub fn skimmable(&self) -> bool {
        self.summary == SummaryFact::Never && !self.role.has(super::plan::Role::STEERS)
    }

    /// Whether a field called `name` of type `ty` (or an element of an array field) is
    /// read by the export's `messages` and `partitions` rows or by `kwire report`, and is
    /// not a [`SummaryFact::Always`] already: a partition entry's offsets, watermarks,
    /// timestamp and leader (Fetch, ListOffsets, OffsetCommit, OffsetFetch, Produce
    /// responses), `ThrottleTimeMs`, the `ClientSoftwareName`/`Version` of
    /// ApiVersions, and every `records` field (its batches are counted and summed).
    pub fn is_row_fact(name: &str, ty: &FieldType) -> bool {
        matches!(ty, FieldType::Prim(Prim::Records))
            || matches!(
                name,
                "FetchOffset"
                    | "HighWatermark"
                    | "LastStableOffset"
                    | "LogStartOffset"
                    | "BaseOffset"
                    | "CommittedOffset"
                    | "Offset"
                    | "Timestamp"
                    | "LeaderId"
                    | "ThrottleTimeMs"
                    | "ClientSoftwareName"
                    | "ClientSoftwareVersion"
            )
    }
}

/// A struct listed in a file's `commonStructs`.
#[derive(Clone, Debug)]
pub struct StructDef {
    /// The struct's name.
    pub name: String,
    /// `versions` of the struct.
    pub versions: Versions,
    /// Its fields.
    pub fields: Vec<Field>,
}

/// One definition file.
#[derive(Clone, Debug)]
pub struct MessageDef {
    /// `name` (`DeleteTopicsRequest`).
    pub name: String,
    /// The top-level `type`.
    pub kind: MessageKind,
    /// `apiKey` (for requests and responses; record type ids for metadata and coordinator
    /// records).
    pub api_key: Option<i16>,
    /// `validVersions` (empty for `"none"`).
    pub valid_versions: Versions,
    /// `deprecatedVersions` (empty when absent).
    pub deprecated_versions: Versions,
    /// `flexibleVersions` (empty when absent or `"none"`).
    pub flexible_versions: Versions,
    /// `latestVersionUnstable`.
    pub latest_version_unstable: bool,
    /// `listeners` (`broker`, `controller`, `zkBroker`).
    pub listeners: Vec<String>,
    /// Top-level fields.
    pub fields: Vec<Field>,
    /// `commonStructs`.
    pub common_structs: Vec<StructDef>,
    /// The decoder's compiled plans of this definition's field lists, made on first use
    /// ([`super::plan`]).
    pub plans: super::plan::Plans,
}

/// An error in a definition: the field path and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefError {
    /// Dotted path of the field (`Topics.Name`), empty for the top level.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for DefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "field {}: {}", self.field, self.message)
        }
    }
}

fn err(field: &str, message: impl Into<String>) -> DefError {
    DefError {
        field: field.to_string(),
        message: message.into(),
    }
}

fn get_str<'v>(
    o: &'v serde_json::Map<String, Value>,
    k: &str,
    path: &str,
) -> Result<Option<&'v str>, DefError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(err(path, format!("\"{k}\" must be a string, found {v}"))),
    }
}

fn get_bool(o: &serde_json::Map<String, Value>, k: &str, path: &str) -> Result<bool, DefError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s == "true" => Ok(true),
        Some(Value::String(s)) if s == "false" => Ok(false),
        Some(v) => Err(err(path, format!("\"{k}\" must be a boolean, found {v}"))),
    }
}

fn get_versions(
    o: &serde_json::Map<String, Value>,
    k: &str,
    path: &str,
) -> Result<Option<Versions>, DefError> {
    get_str(o, k, path)?
        .map(|s| Versions::parse(s).map_err(|m| err(path, format!("\"{k}\": {m}"))))
        .transpose()
}

impl Field {
    fn from_json(v: &Value, parent: &str) -> Result<Field, DefError> {
        let o = v
            .as_object()
            .ok_or_else(|| err(parent, "a field must be a JSON object"))?;
        let name = get_str(o, "name", parent)?
            .ok_or_else(|| err(parent, "a field has no \"name\""))?
            .to_string();
        let path = if parent.is_empty() {
            name.clone()
        } else {
            format!("{parent}.{name}")
        };
        let type_name = get_str(o, "type", &path)?
            .ok_or_else(|| err(&path, "no \"type\""))?
            .to_string();
        let ty = FieldType::parse(&type_name).map_err(|m| err(&path, m))?;
        let tagged_versions = get_versions(o, "taggedVersions", &path)?.unwrap_or(Versions::NONE);
        let versions = match get_versions(o, "versions", &path)? {
            Some(v) => v,
            None if !tagged_versions.is_empty() => tagged_versions,
            None => return Err(err(&path, "no \"versions\"")),
        };
        let tag = match o.get("tag") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(
                n.as_u64()
                    .and_then(|t| u32::try_from(t).ok())
                    .ok_or_else(|| err(&path, format!("bad \"tag\" {n}")))?,
            ),
            Some(Value::String(s)) => Some(
                s.trim()
                    .parse::<u32>()
                    .map_err(|_| err(&path, format!("bad \"tag\" {s:?}")))?,
            ),
            Some(t) => return Err(err(&path, format!("bad \"tag\" {t}"))),
        };
        if tag.is_some() == tagged_versions.is_empty() {
            return Err(err(
                &path,
                "\"tag\" and \"taggedVersions\" must be given together",
            ));
        }
        let default = match o.get("default") {
            None => None,
            Some(Value::String(s)) => Some(s.trim().to_string()),
            Some(Value::Null) => Some("null".to_string()),
            Some(x) => Some(x.to_string()),
        };
        let mut fields = Vec::new();
        if let Some(fs) = o.get("fields") {
            let arr = fs
                .as_array()
                .ok_or_else(|| err(&path, "\"fields\" must be an array"))?;
            for f in arr {
                fields.push(Field::from_json(f, &path)?);
            }
            check_tags(&fields, &path)?;
        }
        let entity_type = get_str(o, "entityType", &path)?.map(str::to_string);
        Ok(Field {
            summary: SummaryFact::of(&name),
            row: Field::is_row_fact(&name, &ty),
            role: super::plan::Role::of(&name, entity_type.as_deref()),
            name,
            type_name,
            ty,
            versions,
            nullable_versions: get_versions(o, "nullableVersions", &path)?
                .unwrap_or(Versions::NONE),
            tagged_versions,
            tag,
            default,
            ignorable: get_bool(o, "ignorable", &path)?,
            map_key: get_bool(o, "mapKey", &path)?,
            entity_type,
            zero_copy: get_bool(o, "zeroCopy", &path)?,
            flexible_versions: get_versions(o, "flexibleVersions", &path)?,
            about: get_str(o, "about", &path)?.map(str::to_string),
            fields,
        })
    }

    /// The struct type this field holds (itself or as array element), if any.
    pub fn struct_name(&self) -> Option<&str> {
        match &self.ty {
            FieldType::Struct(s) => Some(s),
            FieldType::Array(inner) => match inner.as_ref() {
                FieldType::Struct(s) => Some(s),
                _ => None,
            },
            FieldType::Prim(_) => None,
        }
    }

    /// Whether the field is written in its flexible form (compact lengths) in `version`
    /// of a message whose own flexibility there is `message_flexible`: a per-field
    /// `flexibleVersions` (RequestHeader's ClientId: `none`) overrides the message's.
    pub fn is_flexible(&self, version: i16, message_flexible: bool) -> bool {
        self.flexible_versions
            .map(|v| v.contains(version))
            .unwrap_or(message_flexible)
    }

    /// Whether the field may be null in `version`.
    pub fn is_nullable(&self, version: i16) -> bool {
        self.nullable_versions.contains(version)
    }

    /// Whether the field is a tagged field in `version`.
    pub fn is_tagged(&self, version: i16) -> bool {
        self.tag.is_some() && self.tagged_versions.contains(version)
    }
}

fn check_tags(fields: &[Field], path: &str) -> Result<(), DefError> {
    let mut seen = std::collections::BTreeMap::new();
    for f in fields {
        if let Some(t) = f.tag {
            if let Some(prev) = seen.insert(t, &f.name) {
                return Err(err(
                    path,
                    format!("duplicate tag {t} on {} and {}", prev, f.name),
                ));
            }
        }
    }
    Ok(())
}

impl MessageDef {
    /// Builds a definition from a parsed JSON value.
    ///
    /// # Errors
    /// A [`DefError`] naming the field: unknown type, bad version range, missing keys,
    /// duplicate tags, or a struct type that is never defined.
    pub fn from_json(v: &Value) -> Result<MessageDef, DefError> {
        let o = v
            .as_object()
            .ok_or_else(|| err("", "a definition must be a JSON object"))?;
        let name = get_str(o, "name", "")?
            .ok_or_else(|| err("", "no \"name\""))?
            .to_string();
        let kind_s = get_str(o, "type", "")?.ok_or_else(|| err("", "no \"type\""))?;
        let kind = MessageKind::parse(kind_s)
            .ok_or_else(|| err("", format!("unknown message type {kind_s:?}")))?;
        let api_key = match o.get("apiKey") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(
                n.as_i64()
                    .and_then(|k| i16::try_from(k).ok())
                    .ok_or_else(|| err("", format!("bad \"apiKey\" {n}")))?,
            ),
            Some(x) => return Err(err("", format!("bad \"apiKey\" {x}"))),
        };
        let valid_versions =
            get_versions(o, "validVersions", "")?.ok_or_else(|| err("", "no \"validVersions\""))?;
        let listeners = match o.get("listeners") {
            None => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            Some(x) => {
                return Err(err(
                    "",
                    format!("\"listeners\" must be an array, found {x}"),
                ))
            }
        };
        let mut fields = Vec::new();
        if let Some(fs) = o.get("fields") {
            for f in fs
                .as_array()
                .ok_or_else(|| err("", "\"fields\" must be an array"))?
            {
                fields.push(Field::from_json(f, "")?);
            }
        } else if !valid_versions.is_empty() {
            return Err(err("", "no \"fields\""));
        }
        check_tags(&fields, "")?;
        let mut common_structs = Vec::new();
        if let Some(cs) = o.get("commonStructs") {
            for s in cs
                .as_array()
                .ok_or_else(|| err("", "\"commonStructs\" must be an array"))?
            {
                let so = s
                    .as_object()
                    .ok_or_else(|| err("commonStructs", "must hold objects"))?;
                let sname = get_str(so, "name", "commonStructs")?
                    .ok_or_else(|| err("commonStructs", "a struct has no \"name\""))?;
                let mut sf = Vec::new();
                for f in so
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or_else(|| err(sname, "no \"fields\""))?
                {
                    sf.push(Field::from_json(f, sname)?);
                }
                check_tags(&sf, sname)?;
                common_structs.push(StructDef {
                    name: sname.to_string(),
                    versions: get_versions(so, "versions", sname)?.unwrap_or(Versions::ALL),
                    fields: sf,
                });
            }
        }
        let def = MessageDef {
            name,
            kind,
            api_key,
            valid_versions,
            deprecated_versions: get_versions(o, "deprecatedVersions", "")?
                .unwrap_or(Versions::NONE),
            flexible_versions: get_versions(o, "flexibleVersions", "")?.unwrap_or(Versions::NONE),
            latest_version_unstable: get_bool(o, "latestVersionUnstable", "")?,
            listeners,
            fields,
            common_structs,
            plans: Default::default(),
        };
        def.check_structs()?;
        Ok(def)
    }

    /// Finds the fields of struct `name`: an inline definition anywhere in the tree, or a
    /// common struct.
    pub fn struct_fields(&self, name: &str) -> Option<&[Field]> {
        fn find<'a>(fs: &'a [Field], name: &str) -> Option<&'a [Field]> {
            for f in fs {
                if f.struct_name() == Some(name) && !f.fields.is_empty() {
                    return Some(&f.fields);
                }
                if let Some(x) = find(&f.fields, name) {
                    return Some(x);
                }
            }
            None
        }
        find(&self.fields, name)
            .or_else(|| {
                self.common_structs
                    .iter()
                    .find(|s| s.name == name)
                    .map(|s| s.fields.as_slice())
            })
            .or_else(|| {
                self.common_structs
                    .iter()
                    .find_map(|s| find(&s.fields, name))
            })
    }

    /// The fields of struct field `f` (inline, or the struct it names), or `None` when
    /// `f` holds no struct or names one this definition does not define.
    pub fn fields_of<'a>(&'a self, f: &'a Field) -> Option<&'a [Field]> {
        let s = f.struct_name()?;
        if f.fields.is_empty() {
            self.struct_fields(s)
        } else {
            Some(&f.fields)
        }
    }

    fn check_structs(&self) -> Result<(), DefError> {
        fn walk(def: &MessageDef, fs: &[Field], path: &str) -> Result<(), DefError> {
            for f in fs {
                let p = if path.is_empty() {
                    f.name.clone()
                } else {
                    format!("{path}.{}", f.name)
                };
                if let Some(s) = f.struct_name() {
                    if f.fields.is_empty() && def.struct_fields(s).is_none() {
                        return Err(err(&p, format!("struct type {s:?} is never defined")));
                    }
                } else if !f.fields.is_empty() {
                    return Err(err(
                        &p,
                        format!("type {:?} is not a struct but has \"fields\"", f.type_name),
                    ));
                }
                walk(def, &f.fields, &p)?;
            }
            Ok(())
        }
        walk(self, &self.fields, "")?;
        for s in &self.common_structs {
            walk(self, &s.fields, &s.name)?;
        }
        Ok(())
    }

    /// Whether `version` is a flexible version of this message.
    pub fn is_flexible(&self, version: i16) -> bool {
        self.flexible_versions.contains(version)
    }
}

fn versions_json(v: &Versions) -> Value {
    Value::String(v.to_string())
}

impl Field {
    /// The field as Kafka-shaped JSON facts (no `about` unless `with_about`).
    pub fn to_json(&self, with_about: bool) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("name".into(), self.name.clone().into());
        o.insert("type".into(), self.type_name.clone().into());
        o.insert("versions".into(), versions_json(&self.versions));
        if !self.nullable_versions.is_empty() {
            o.insert(
                "nullableVersions".into(),
                versions_json(&self.nullable_versions),
            );
        }
        if let Some(t) = self.tag {
            o.insert(
                "taggedVersions".into(),
                versions_json(&self.tagged_versions),
            );
            o.insert("tag".into(), t.into());
        }
        if let Some(fv) = &self.flexible_versions {
            o.insert("flexibleVersions".into(), versions_json(fv));
        }
        if self.ignorable {
            o.insert("ignorable".into(), true.into());
        }
        if self.map_key {
            o.insert("mapKey".into(), true.into());
        }
        if self.zero_copy {
            o.insert("zeroCopy".into(), true.into());
        }
        if let Some(d) = &self.default {
            o.insert("default".into(), d.clone().into());
        }
        if let Some(e) = &self.entity_type {
            o.insert("entityType".into(), e.clone().into());
        }
        if with_about {
            if let Some(a) = &self.about {
                o.insert("about".into(), a.clone().into());
            }
        }
        if !self.fields.is_empty() {
            o.insert(
                "fields".into(),
                Value::Array(self.fields.iter().map(|f| f.to_json(with_about)).collect()),
            );
        }
        Value::Object(o)
    }
}

impl MessageDef {
    /// The definition as Kafka-shaped JSON facts (names, types, versions, tags,
    /// defaults, flags); `about` only when `with_about`.
    pub fn to_json(&self, with_about: bool) -> Value {
        let mut o = serde_json::Map::new();
        if let Some(k) = self.api_key {
            o.insert("apiKey".into(), k.into());
        }
        o.insert("type".into(), self.kind.as_str().into());
        if !self.listeners.is_empty() {
            o.insert("listeners".into(), self.listeners.clone().into());
        }
        o.insert("name".into(), self.name.clone().into());
        o.insert("validVersions".into(), versions_json(&self.valid_versions));
        if !self.deprecated_versions.is_empty() {
            o.insert(
                "deprecatedVersions".into(),
                versions_json(&self.deprecated_versions),
            );
        }
        o.insert(
            "flexibleVersions".into(),
            versions_json(&self.flexible_versions),
        );
        if self.latest_version_unstable {
            o.insert("latestVersionUnstable".into(), true.into());
        }
        o.insert(
            "fields".into(),
            Value::Array(self.fields.iter().map(|f| f.to_json(with_about)).collect()),
        );
        if !self.common_structs.is_empty() {
            let cs = self
                .common_structs
                .iter()
                .map(|s| {
                    serde_json::json!({
                        "name": s.name,
                        "versions": s.versions.to_string(),
                        "fields": s.fields.iter().map(|f| f.to_json(with_about)).collect::<Vec<_>>(),
                    })
                })
                .collect();
            o.insert("commonStructs".into(), Value::Array(cs));
        }
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ranges() {
        assert_eq!(Versions::parse("0+").unwrap(), Versions::ALL);
        assert_eq!(Versions::parse("1-6").unwrap(), Versions { lo: 1, hi: 6 });
        assert_eq!(Versions::parse("3").unwrap(), Versions { lo: 3, hi: 3 });
        assert!(Versions::parse("none").unwrap().is_empty());
        assert!(Versions::parse("6-1").is_err());
        assert!(Versions::parse("x+").is_err());
        assert_eq!(Versions::parse("4+").unwrap().to_string(), "4+");
        assert_eq!(Versions::parse("1-6").unwrap().to_string(), "1-6");
    }

    #[test]
    fn field_types() {
        assert_eq!(
            FieldType::parse("[]int32").unwrap(),
            FieldType::Array(Box::new(FieldType::Prim(Prim::Int32)))
        );
        assert_eq!(
            FieldType::parse("Foo").unwrap(),
            FieldType::Struct("Foo".into())
        );
        assert!(FieldType::parse("strnig").is_err());
        assert!(FieldType::parse("[][]int8").is_err());
    }
}
