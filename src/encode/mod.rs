//! The encoder: the values shape (see [`crate::values`] and `docs/values-format.md`)
//! back into a whole Kafka frame.
//!
//! [`encode`] is the exact inverse of the decoder's walk ([`crate::decode::walk`]): the
//! same field order, the same version, flexible, nullable and tagged rules, compact
//! (uvarint length+1) prefixes in flexible versions and int16/int32 prefixes before
//! them, an int8 presence marker before nullable structs, and the tagged-field section
//! at the end of every struct of a flexible version, sorted by tag. The frame gets its
//! 4-byte size prefix and the header version the schema's rules give
//! ([`Schema::request_header_version`], [`Schema::response_header_version`]).
//!
//! Fields left out take their schema `default` by Kafka's rules (numbers 0 unless a
//! default says otherwise, strings `""`, nullable fields whose default is `"null"` null,
//! arrays empty, booleans false, uuids zero). Records fields go to [`records`]; the
//! minimal sample instances of the reference pages come from [`minimal`].
//!
//! Bad values are errors ([`EncodeError`]) naming the field's path; nothing panics.

pub mod minimal;
pub mod records;

use crate::schema::{Field, FieldType, MessageDef, MessageKind, Prim, Schema};
use serde_json::{Map, Value};
use std::fmt;

/// What is wrong with a value given to [`encode`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeErrorKind {
    /// A key that names no field of the struct (in any version).
    UnknownField,
    /// A value of the wrong JSON type.
    WrongType {
        /// What the field takes (`int32`, `string`, `object`, `array`, ...).
        expected: String,
        /// The JSON type given (`string`, `number`, `object`, ...).
        found: &'static str,
    },
    /// A field the schema has, but not in this version.
    AbsentInVersion {
        /// The version being encoded.
        version: i16,
    },
    /// A null where the field is not nullable in this version.
    NotNullable {
        /// The version being encoded.
        version: i16,
    },
    /// An integer outside its type's range (or a length its prefix cannot hold).
    OutOfRange {
        /// The wire type (`int16`, `uint32`, `int16 length`).
        ty: String,
        /// The value given.
        value: String,
    },
    /// A value of the right JSON type that cannot be read (bad hex, bad uuid, unknown
    /// compression name, duplicate tag, ...).
    BadValue(String),
    /// A required key is missing (`kind`, `api_version`, `api_key`/`api_name`).
    Missing,
    /// The API (by key or name) is not in the schema.
    UnknownApi(String),
    /// The API has no definition of this kind at this version.
    UnknownVersion {
        /// `request` or `response`.
        kind: &'static str,
        /// The version asked for.
        version: i16,
    },
}

/// An error of [`encode`]: the path of the offending value (`body.Topics[0].Name`,
/// `header.client_id`, `api_version`) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeError {
    /// The path: `body.` or `header.` then field names and `[index]`es; top-level keys
    /// alone; `body.X.Records[0].records[1].key` inside record batches.
    pub path: String,
    /// What is wrong.
    pub kind: EncodeErrorKind,
}

impl EncodeError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, kind: EncodeErrorKind) -> EncodeError {
        EncodeError {
            path: path.into(),
            kind,
        }
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.path;
        match &self.kind {
            EncodeErrorKind::UnknownField => write!(f, "{p}: unknown field"),
            EncodeErrorKind::WrongType { expected, found } => {
                write!(f, "{p}: expected {expected}, found {found}")
            }
            EncodeErrorKind::AbsentInVersion { version } => {
                write!(f, "{p}: field is not present in version {version}")
            }
            EncodeErrorKind::NotNullable { version } => {
                write!(f, "{p}: null is not allowed in version {version}")
            }
            EncodeErrorKind::OutOfRange { ty, value } => {
                write!(f, "{p}: {value} is out of range for {ty}")
            }
            EncodeErrorKind::BadValue(m) => write!(f, "{p}: {m}"),
            EncodeErrorKind::Missing => write!(f, "{p}: missing"),
            EncodeErrorKind::UnknownApi(a) => write!(f, "{p}: unknown API {a}"),
            EncodeErrorKind::UnknownVersion { kind, version } => {
                write!(f, "{p}: no {kind} definition for version {version}")
            }
        }
    }
}

impl std::error::Error for EncodeError {}

type Res<T> = Result<T, EncodeError>;

/// The JSON type name of a value, for error messages.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(crate) fn wrong(path: &str, expected: &str, v: &Value) -> EncodeError {
    EncodeError::new(
        path,
        EncodeErrorKind::WrongType {
            expected: expected.to_string(),
            found: json_type(v),
        },
    )
}

/// Joins a path and a key (`body` + `Topics` = `body.Topics`).
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

pub use crate::text::hex as to_hex;

/// Bytes from hex (either case, even length, no separators).
pub(crate) fn from_hex(s: &str, path: &str) -> Res<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err(EncodeError::new(
            path,
            EncodeErrorKind::BadValue("hex string of odd length".into()),
        ));
    }
    crate::text::unhex(s).ok_or_else(|| {
        EncodeError::new(
            path,
            EncodeErrorKind::BadValue(format!("not a hex string: {s:?}")),
        )
    })
}

/// An integer as the values shape writes it: a JSON number while |v| <= 2^53, else a
/// decimal string.
pub fn int_json(v: i64) -> Value {
    if v.unsigned_abs() <= 1 << 53 {
        Value::from(v)
    } else {
        Value::String(v.to_string())
    }
}

/// An unsigned integer as the values shape writes it (see [`int_json`]).
pub fn uint_json(v: u64) -> Value {
    if v <= 1 << 53 {
        Value::from(v)
    } else {
        Value::String(v.to_string())
    }
}

/// Reads an integer (a JSON number or a decimal string) within `[lo, hi]`.
pub(crate) fn get_int(v: &Value, ty: &str, lo: i128, hi: i128, path: &str) -> Res<i128> {
    let n: i128 = match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i as i128
            } else if let Some(u) = n.as_u64() {
                u as i128
            } else {
                return Err(wrong(path, ty, v));
            }
        }
        Value::String(s) => s.trim().parse::<i128>().map_err(|_| wrong(path, ty, v))?,
        _ => return Err(wrong(path, ty, v)),
    };
    if n < lo || n > hi {
        return Err(EncodeError::new(
            path,
            EncodeErrorKind::OutOfRange {
                ty: ty.to_string(),
                value: n.to_string(),
            },
        ));
    }
    Ok(n)
}

/// Appends an unsigned LEB128 varint.
pub(crate) fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a zigzag varint (or varlong).
pub(crate) fn put_varlong(out: &mut Vec<u8>, v: i64) {
    put_uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// The encoder of one definition at one version.
struct Enc<'s> {
    def: &'s MessageDef,
    version: i16,
    flexible: bool,
    /// Header style: values name fields in snake_case (`client_id`).
    snake: bool,
}

fn snake(s: &str) -> String {
    crate::schema::snake_case(s)
}

impl<'s> Enc<'s> {
    fn key(&self, f: &Field) -> String {
        if self.snake {
            snake(&f.name)
        } else {
            f.name.clone()
        }
    }

    fn field_flexible(&self, f: &Field) -> bool {
        f.is_flexible(self.version, self.flexible)
    }

    fn nullable(&self, f: &Field) -> bool {
        f.is_nullable(self.version)
    }

    fn struct_fields(&self, f: &'s Field) -> Option<&'s [Field]> {
        if !f.fields.is_empty() {
            return Some(&f.fields);
        }
        f.struct_name().and_then(|s| self.def.struct_fields(s))
    }

    /// Whether `f` is written in the tagged section in this version.
    fn in_tags(&self, f: &Field) -> bool {
        self.flexible && f.is_tagged(self.version)
    }

    /// Encodes the struct `fields` from the object `v` (then its tagged section).
    fn fields(&self, out: &mut Vec<u8>, fields: &'s [Field], v: &Value, path: &str) -> Res<()> {
        let Value::Object(obj) = v else {
            return Err(wrong(path, "object", v));
        };
        for k in obj.keys() {
            if k == "_unknown_tags" {
                if !self.flexible {
                    return Err(EncodeError::new(
                        join(path, k),
                        EncodeErrorKind::AbsentInVersion {
                            version: self.version,
                        },
                    ));
                }
                continue;
            }
            match fields.iter().find(|f| self.key(f) == *k) {
                None => {
                    return Err(EncodeError::new(
                        join(path, k),
                        EncodeErrorKind::UnknownField,
                    ))
                }
                Some(f) if !f.versions.contains(self.version) => {
                    return Err(EncodeError::new(
                        join(path, k),
                        EncodeErrorKind::AbsentInVersion {
                            version: self.version,
                        },
                    ))
                }
                Some(_) => {}
            }
        }
        for f in fields {
            if !f.versions.contains(self.version) || self.in_tags(f) {
                continue;
            }
            let key = self.key(f);
            let p = join(path, &key);
            match obj.get(&key) {
                Some(x) => self.field(out, f, x, &p)?,
                None => {
                    let d = default_value(f, self.version);
                    self.field(out, f, &d, &p)?
                }
            }
        }
        if self.flexible {
            let mut tags: Vec<(u32, Vec<u8>, String)> = Vec::new();
            for f in fields {
                if !f.versions.contains(self.version) || !self.in_tags(f) {
                    continue;
                }
                let key = self.key(f);
                if let (Some(x), Some(tag)) = (obj.get(&key), f.tag) {
                    let p = join(path, &key);
                    let mut data = Vec::new();
                    self.field(&mut data, f, x, &p)?;
                    tags.push((tag, data, p));
                }
            }
            if let Some(u) = obj.get("_unknown_tags") {
                let up = join(path, "_unknown_tags");
                let Value::Object(m) = u else {
                    return Err(wrong(&up, "object", u));
                };
                for (k, x) in m {
                    let p = join(&up, k);
                    let tag = k.parse::<u32>().map_err(|_| {
                        EncodeError::new(
                            &p,
                            EncodeErrorKind::BadValue(format!("tag {k:?} is not a number")),
                        )
                    })?;
                    let Value::String(h) = x else {
                        return Err(wrong(&p, "hex string", x));
                    };
                    tags.push((tag, from_hex(h, &p)?, p));
                }
            }
            tags.sort_by_key(|t| t.0);
            for w in tags.windows(2) {
                if w[0].0 == w[1].0 {
                    return Err(EncodeError::new(
                        &w[1].2,
                        EncodeErrorKind::BadValue(format!("tag {} is given twice", w[1].0)),
                    ));
                }
            }
            put_uvarint(out, tags.len() as u64);
            for (tag, data, _) in tags {
                put_uvarint(out, tag as u64);
                put_uvarint(out, data.len() as u64);
                out.extend_from_slice(&data);
            }
        }
        Ok(())
    }

    fn null_check(&self, f: &Field, path: &str) -> Res<()> {
        if self.nullable(f) {
            Ok(())
        } else {
            Err(EncodeError::new(
                path,
                EncodeErrorKind::NotNullable {
                    version: self.version,
                },
            ))
        }
    }

    /// Writes a length prefix (`None` = null) for a string (`int16`) or bytes/array
    /// (`int32`), or compact.
    fn len_prefix(
        &self,
        out: &mut Vec<u8>,
        len: Option<usize>,
        compact: bool,
        int16: bool,
        path: &str,
    ) -> Res<()> {
        if compact {
            match len {
                None => put_uvarint(out, 0),
                Some(n) => {
                    if n as u64 >= u32::MAX as u64 {
                        return Err(too_long(path, "compact length", n));
                    }
                    put_uvarint(out, n as u64 + 1)
                }
            }
        } else if int16 {
            let n = match len {
                None => -1i16,
                Some(n) => i16::try_from(n).map_err(|_| too_long(path, "int16 length", n))?,
            };
            out.extend_from_slice(&n.to_be_bytes());
        } else {
            let n = match len {
                None => -1i32,
                Some(n) => i32::try_from(n).map_err(|_| too_long(path, "int32 length", n))?,
            };
            out.extend_from_slice(&n.to_be_bytes());
        }
        Ok(())
    }

    fn field(&self, out: &mut Vec<u8>, f: &'s Field, v: &Value, path: &str) -> Res<()> {
        let flexible = self.field_flexible(f);
        match &f.ty {
            FieldType::Prim(p) => self.prim(out, f, *p, v, path, flexible),
            FieldType::Struct(s) => {
                let Some(fs) = self.struct_fields(f) else {
                    return Err(EncodeError::new(
                        path,
                        EncodeErrorKind::BadValue(format!("struct {s} is not defined")),
                    ));
                };
                if self.nullable(f) {
                    if v.is_null() {
                        out.push(0xff);
                        return Ok(());
                    }
                    out.push(1);
                } else if v.is_null() {
                    return self.null_check(f, path);
                }
                self.fields(out, fs, v, path)
            }
            FieldType::Array(inner) => {
                let items = match v {
                    Value::Null => {
                        self.null_check(f, path)?;
                        return self.len_prefix(out, None, flexible, false, path);
                    }
                    Value::Array(a) => a,
                    _ => return Err(wrong(path, &f.type_name, v)),
                };
                self.len_prefix(out, Some(items.len()), flexible, false, path)?;
                for (i, x) in items.iter().enumerate() {
                    let p = format!("{path}[{i}]");
                    match inner.as_ref() {
                        FieldType::Prim(pr) => {
                            if x.is_null() {
                                // Array elements are never nullable.
                                return Err(EncodeError::new(
                                    &p,
                                    EncodeErrorKind::NotNullable {
                                        version: self.version,
                                    },
                                ));
                            }
                            self.prim(out, f, *pr, x, &p, flexible)?
                        }
                        FieldType::Struct(s) => {
                            let Some(fs) = self.struct_fields(f) else {
                                return Err(EncodeError::new(
                                    &p,
                                    EncodeErrorKind::BadValue(format!("struct {s} is not defined")),
                                ));
                            };
                            self.fields(out, fs, x, &p)?
                        }
                        FieldType::Array(_) => {
                            return Err(EncodeError::new(
                                &p,
                                EncodeErrorKind::BadValue("arrays of arrays".into()),
                            ))
                        }
                    }
                }
                Ok(())
            }
        }
    }

    fn prim(
        &self,
        out: &mut Vec<u8>,
        f: &Field,
        p: Prim,
        v: &Value,
        path: &str,
        flexible: bool,
    ) -> Res<()> {
        let ty = p.as_str();
        match p {
            Prim::Bool => match v {
                Value::Bool(b) => out.push(*b as u8),
                _ => return Err(wrong(path, ty, v)),
            },
            Prim::Int8 => {
                let n = get_int(v, ty, i8::MIN as i128, i8::MAX as i128, path)?;
                out.push(n as i8 as u8)
            }
            Prim::Int16 => {
                let n = get_int(v, ty, i16::MIN as i128, i16::MAX as i128, path)?;
                out.extend_from_slice(&(n as i16).to_be_bytes())
            }
            Prim::Uint16 => {
                let n = get_int(v, ty, 0, u16::MAX as i128, path)?;
                out.extend_from_slice(&(n as u16).to_be_bytes())
            }
            Prim::Int32 => {
                let n = get_int(v, ty, i32::MIN as i128, i32::MAX as i128, path)?;
                out.extend_from_slice(&(n as i32).to_be_bytes())
            }
            Prim::Uint32 => {
                let n = get_int(v, ty, 0, u32::MAX as i128, path)?;
                out.extend_from_slice(&(n as u32).to_be_bytes())
            }
            Prim::Int64 => {
                let n = get_int(v, ty, i64::MIN as i128, i64::MAX as i128, path)?;
                out.extend_from_slice(&(n as i64).to_be_bytes())
            }
            Prim::Float64 => {
                let x = get_float(v, path)?;
                out.extend_from_slice(&x.to_be_bytes())
            }
            Prim::Uuid => match v {
                Value::String(s) => {
                    let u = uuid::Uuid::parse_str(s).map_err(|_| {
                        EncodeError::new(
                            path,
                            EncodeErrorKind::BadValue(format!("not a uuid: {s:?}")),
                        )
                    })?;
                    out.extend_from_slice(u.as_bytes())
                }
                _ => return Err(wrong(path, ty, v)),
            },
            Prim::String => match v {
                Value::Null => {
                    self.null_check(f, path)?;
                    self.len_prefix(out, None, flexible, true, path)?
                }
                Value::String(s) => {
                    self.len_prefix(out, Some(s.len()), flexible, true, path)?;
                    out.extend_from_slice(s.as_bytes())
                }
                _ => return Err(wrong(path, ty, v)),
            },
            Prim::Bytes => match v {
                Value::Null => {
                    self.null_check(f, path)?;
                    self.len_prefix(out, None, flexible, false, path)?
                }
                Value::String(s) => {
                    let b = from_hex(s, path)?;
                    self.len_prefix(out, Some(b.len()), flexible, false, path)?;
                    out.extend_from_slice(&b)
                }
                _ => return Err(wrong(path, "bytes (hex string)", v)),
            },
            Prim::Records => {
                let data = match v {
                    Value::Null => {
                        self.null_check(f, path)?;
                        return self.len_prefix(out, None, flexible, false, path);
                    }
                    Value::String(s) => from_hex(s, path)?,
                    Value::Array(_) => records::encode_records(v, path)?,
                    _ => return Err(wrong(path, "records (array of batches)", v)),
                };
                self.len_prefix(out, Some(data.len()), flexible, false, path)?;
                out.extend_from_slice(&data)
            }
        }
        Ok(())
    }
}

fn too_long(path: &str, ty: &str, n: usize) -> EncodeError {
    EncodeError::new(
        path,
        EncodeErrorKind::OutOfRange {
            ty: ty.to_string(),
            value: n.to_string(),
        },
    )
}

/// Reads a float64: a JSON number, or `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn get_float(v: &Value, path: &str) -> Res<f64> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| wrong(path, "float64", v)),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => s.parse::<f64>().map_err(|_| wrong(path, "float64", v)),
        },
        _ => Err(wrong(path, "float64", v)),
    }
}

/// A float64 as the values shape writes it: a JSON number, or `"NaN"`, `"Infinity"`,
/// `"-Infinity"` (which JSON cannot hold).
pub fn float_json(x: f64) -> Value {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        serde_json::Number::from_f64(x)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

fn parse_int_default(d: &str) -> Option<i128> {
    let (neg, t) = match d.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, d),
    };
    let n = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i128::from_str_radix(h, 16).ok()?
    } else {
        t.parse::<i128>().ok()?
    };
    Some(if neg { -n } else { n })
}

/// The value a field takes when the values leave it out, by Kafka's rules: its
/// `default` when given, else 0, `""`, false, the zero uuid, an empty array or empty
/// bytes, an all-defaults struct; `"null"` defaults give null where the version allows
/// null. Records without a default are null where nullable, else an empty record set.
pub fn default_value(f: &Field, version: i16) -> Value {
    let nullable = f.nullable_versions.contains(version);
    let d = f.default.as_deref();
    if d == Some("null") && nullable {
        return Value::Null;
    }
    let d = d.filter(|x| *x != "null");
    match &f.ty {
        FieldType::Array(_) => Value::Array(Vec::new()),
        FieldType::Struct(_) => Value::Object(Map::new()),
        FieldType::Prim(p) => match p {
            Prim::Bool => Value::Bool(d == Some("true")),
            Prim::Int8 | Prim::Int16 | Prim::Uint16 | Prim::Int32 | Prim::Uint32 | Prim::Int64 => {
                let n = d.and_then(parse_int_default).unwrap_or(0);
                // The schema's hex defaults are bit patterns of the field's width.
                let n = match p {
                    Prim::Int8 if n > i8::MAX as i128 => n as u8 as i8 as i128,
                    Prim::Int16 if n > i16::MAX as i128 => n as u16 as i16 as i128,
                    Prim::Int32 if n > i32::MAX as i128 => n as u32 as i32 as i128,
                    Prim::Int64 if n > i64::MAX as i128 => n as u64 as i64 as i128,
                    _ => n,
                };
                int_json(n.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
            }
            Prim::Float64 => float_json(d.and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0)),
            Prim::String => Value::String(d.unwrap_or("").to_string()),
            Prim::Bytes => Value::String(String::new()),
            Prim::Uuid => Value::String(uuid::Uuid::nil().to_string()),
            Prim::Records => {
                if nullable {
                    Value::Null
                } else {
                    Value::Array(Vec::new())
                }
            }
        },
    }
}

fn get_kind(v: &Map<String, Value>) -> Res<MessageKind> {
    match v.get("kind") {
        None => Err(EncodeError::new("kind", EncodeErrorKind::Missing)),
        Some(Value::String(s)) if s == "request" => Ok(MessageKind::Request),
        Some(Value::String(s)) if s == "response" => Ok(MessageKind::Response),
        Some(Value::String(s)) => Err(EncodeError::new(
            "kind",
            EncodeErrorKind::BadValue(format!("{s:?} is neither \"request\" nor \"response\"")),
        )),
        Some(x) => Err(wrong("kind", "\"request\" or \"response\"", x)),
    }
}

/// Finds the api_key of an API name (`DeleteTopics`, case-insensitive; a trailing
/// `Request`/`Response` is allowed).
pub fn api_key_by_name(schema: &Schema, name: &str) -> Option<i16> {
    let n = name.trim();
    let n = n
        .strip_suffix("Request")
        .or_else(|| n.strip_suffix("Response"))
        .unwrap_or(n);
    schema.api_keys().into_iter().find(|k| {
        schema
            .api_name(*k)
            .is_some_and(|a| a.eq_ignore_ascii_case(n))
    })
}

/// Builds a whole frame (4-byte size prefix, header, body) from the values shape.
///
/// `v` is an object with `kind` (`"request"` or `"response"`), `api_key` or `api_name`,
/// `api_version`, an optional `header` (`correlation_id`, and `client_id` for requests)
/// and an optional `body` (fields by their schema names). The request header's version
/// follows the schema's rules; fields left out take their defaults (see
/// [`default_value`]).
///
/// # Errors
/// An [`EncodeError`] with the path of the offending value: an unknown field, a value
/// of the wrong type, a field absent in that version, a null where the field is not
/// nullable, an integer out of range, bad hex or uuid text, an unknown API or version.
pub fn encode(schema: &Schema, v: &Value) -> Result<Vec<u8>, EncodeError> {
    let Value::Object(top) = v else {
        return Err(wrong("", "object", v));
    };
    for k in top.keys() {
        if !matches!(
            k.as_str(),
            "kind" | "api_key" | "api_name" | "api_version" | "header" | "body"
        ) {
            return Err(EncodeError::new(k, EncodeErrorKind::UnknownField));
        }
    }
    let kind = get_kind(top)?;
    let by_key = match top.get("api_key") {
        Some(x) => Some(get_int(x, "int16", i16::MIN as i128, i16::MAX as i128, "api_key")? as i16),
        None => None,
    };
    let by_name =
        match top.get("api_name") {
            None => None,
            Some(Value::String(s)) => Some(api_key_by_name(schema, s).ok_or_else(|| {
                EncodeError::new("api_name", EncodeErrorKind::UnknownApi(s.clone()))
            })?),
            Some(x) => return Err(wrong("api_name", "string", x)),
        };
    let api_key = match (by_key, by_name) {
        (Some(a), Some(b)) if a != b => {
            return Err(EncodeError::new(
                "api_name",
                EncodeErrorKind::BadValue(format!("names api_key {b}, but api_key is {a}")),
            ))
        }
        (Some(a), _) | (None, Some(a)) => a,
        (None, None) => return Err(EncodeError::new("api_key", EncodeErrorKind::Missing)),
    };
    let version = match top.get("api_version") {
        Some(x) => get_int(x, "int16", 0, i16::MAX as i128, "api_version")? as i16,
        None => return Err(EncodeError::new("api_version", EncodeErrorKind::Missing)),
    };
    let request = kind == MessageKind::Request;
    let kind_s = if request { "request" } else { "response" };
    if schema.api_name(api_key).is_none() && schema.by_api(kind, api_key).is_empty() {
        return Err(EncodeError::new(
            "api_key",
            EncodeErrorKind::UnknownApi(api_key.to_string()),
        ));
    }
    let body_def = schema.resolve(kind, api_key, version).ok_or_else(|| {
        EncodeError::new(
            "api_version",
            EncodeErrorKind::UnknownVersion {
                kind: kind_s,
                version,
            },
        )
    })?;
    let hv = if request {
        schema.request_header_version(api_key, version)
    } else {
        schema.response_header_version(api_key, version)
    };
    let header_def = schema.header(request, hv).ok_or_else(|| {
        EncodeError::new(
            "header",
            EncodeErrorKind::BadValue(format!("header version {hv} is not in the schema")),
        )
    })?;
    let mut header = match top.get("header") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(x) => return Err(wrong("header", "object", x)),
    };
    if request {
        for k in ["request_api_key", "request_api_version"] {
            if header.contains_key(k) {
                return Err(EncodeError::new(
                    join("header", k),
                    EncodeErrorKind::UnknownField,
                ));
            }
        }
        header.insert("request_api_key".into(), api_key.into());
        header.insert("request_api_version".into(), version.into());
    }
    let mut out = vec![0u8; 4];
    let he = Enc {
        def: &header_def.def,
        version: hv,
        flexible: header_def.def.is_flexible(hv),
        snake: true,
    };
    he.fields(
        &mut out,
        &header_def.def.fields,
        &Value::Object(header),
        "header",
    )?;
    let be = Enc {
        def: &body_def.def,
        version,
        flexible: body_def.def.is_flexible(version),
        snake: false,
    };
    let empty = Value::Object(Map::new());
    be.fields(
        &mut out,
        &body_def.def.fields,
        top.get("body").unwrap_or(&empty),
        "body",
    )?;
    let size = i32::try_from(out.len() - 4).map_err(|_| too_long("", "frame size", out.len()))?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(out)
}

/// Encodes one struct-shaped definition (a data, metadata or coordinator record
/// definition) at `version` from the object `v`, in the values shape of its fields:
/// the struct's bytes alone, with no version prefix or framing.
///
/// # Errors
/// A value that does not fit the definition, at its path.
pub fn encode_struct(def: &MessageDef, version: i16, v: &Value) -> Result<Vec<u8>, EncodeError> {
    let e = Enc {
        def,
        version,
        flexible: def.is_flexible(version),
        snake: false,
    };
    let mut out = Vec::new();
    e.fields(&mut out, &def.fields, v, "")?;
    Ok(out)
}
