//! Minimal sample instances, by the rules of the reference pages (the DeleteTopics v6
//! seed page): numeric fields zero, strings and byte arrays empty (nullable ones empty,
//! not null), every array exactly one sample element, every struct present, uuids zero,
//! booleans false, tagged fields absent; any `records` field one empty RecordBatch v2
//! (61 bytes) in versions that carry v2 batches and an empty message set (no bytes) in
//! versions before them (Produce v0-2, Fetch v0-3). The header has correlation_id 0 and
//! client_id `""`.

use super::records::empty_batch;
use crate::schema::{Field, FieldType, MessageDef, MessageKind, Prim, Schema};
use serde_json::{json, Map, Value};

/// Whether `def` at `version` carries legacy message sets rather than v2 batches.
fn legacy_records(def: &MessageDef, version: i16) -> bool {
    match def.name.as_str() {
        "ProduceRequest" | "ProduceResponse" => version < 3,
        "FetchRequest" | "FetchResponse" => version < 4,
        _ => false,
    }
}

struct Min<'s> {
    def: &'s MessageDef,
    version: i16,
    flexible: bool,
    snake: bool,
}

impl<'s> Min<'s> {
    fn fields(&self, fields: &'s [Field], depth: usize) -> Value {
        let mut o = Map::new();
        for f in fields {
            if !f.versions.contains(self.version) || f.is_tagged(self.version) && self.flexible {
                continue;
            }
            let key = if self.snake {
                crate::schema::snake_case(&f.name)
            } else {
                f.name.clone()
            };
            o.insert(key, self.value(f, &f.ty, depth));
        }
        Value::Object(o)
    }

    fn value(&self, f: &'s Field, ty: &FieldType, depth: usize) -> Value {
        match ty {
            FieldType::Prim(p) => match p {
                Prim::Bool => false.into(),
                Prim::Float64 => json!(0.0),
                Prim::String | Prim::Bytes => "".into(),
                Prim::Uuid => uuid::Uuid::nil().to_string().into(),
                Prim::Records => {
                    if legacy_records(self.def, self.version) {
                        json!([])
                    } else {
                        json!([empty_batch()])
                    }
                }
                _ => 0.into(),
            },
            FieldType::Array(inner) => json!([self.value(f, inner, depth)]),
            FieldType::Struct(s) => {
                let fs = if f.fields.is_empty() {
                    self.def.struct_fields(s)
                } else {
                    Some(f.fields.as_slice())
                };
                match fs {
                    Some(fs) if depth < 32 => self.fields(fs, depth + 1),
                    _ => Value::Object(Map::new()),
                }
            }
        }
    }
}

/// The minimal sample instance of `(api_key, version)` in the values shape, a request
/// when `request` is true and a response otherwise; `Value::Null` when the schema has
/// no such definition.
///
/// Every field present in the version is given explicitly, so the instance equals
/// `to_values(decode(encode(instance)))` exactly.
pub fn minimal(schema: &Schema, api_key: i16, version: i16, request: bool) -> Value {
    let kind = if request {
        MessageKind::Request
    } else {
        MessageKind::Response
    };
    let Some(d) = schema.resolve(kind, api_key, version) else {
        return Value::Null;
    };
    let body = Min {
        def: &d.def,
        version,
        flexible: d.def.is_flexible(version),
        snake: false,
    }
    .fields(&d.def.fields, 0);
    let hv = if request {
        schema.request_header_version(api_key, version)
    } else {
        schema.response_header_version(api_key, version)
    };
    let mut header = match schema.header(request, hv) {
        Some(h) => Min {
            def: &h.def,
            version: hv,
            flexible: h.def.is_flexible(hv),
            snake: true,
        }
        .fields(&h.def.fields, 0),
        None => Value::Object(Map::new()),
    };
    if let Value::Object(h) = &mut header {
        h.shift_remove("request_api_key");
        h.shift_remove("request_api_version");
    }
    let mut o = Map::new();
    o.insert(
        "kind".into(),
        if request { "request" } else { "response" }.into(),
    );
    o.insert("api_key".into(), api_key.into());
    if let Some(n) = schema.api_name(api_key) {
        o.insert("api_name".into(), n.into());
    }
    o.insert("api_version".into(), version.into());
    o.insert("header".into(), header);
    o.insert("body".into(), body);
    Value::Object(o)
}
