//! A seeded generator of random instances in the values shape, following the schema.
#![allow(dead_code)]

use kwire::encode::{encode, float_json, int_json, minimal::minimal, to_hex, uint_json};
use kwire::schema::{Field, FieldType, MessageDef, MessageKind, Prim, Schema};
use serde_json::{json, Map, Value};

/// splitmix64: a small deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        match self.below(6) {
            0 => 0,
            1 => lo,
            2 => hi,
            3 => (-1i64).clamp(lo, hi),
            4 => (self.below(100) as i64).clamp(lo, hi),
            _ => {
                let span = (hi as i128 - lo as i128 + 1) as u128;
                (lo as i128 + (self.next() as u128 % span) as i128) as i64
            }
        }
    }
    fn bytes(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max + 1);
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn string(&mut self) -> String {
        const CH: [&str; 8] = ["a", "Z", "0", "-", " ", "é", "日", "🦀"];
        let n = self.below(7);
        (0..n).map(|_| CH[self.below(8) as usize]).collect()
    }
}

struct Gen<'s> {
    schema: &'s Schema,
    def: &'s MessageDef,
    version: i16,
    flexible: bool,
    snake: bool,
    rng: Rng,
}

impl<'s> Gen<'s> {
    fn fields(&mut self, fields: &'s [Field], depth: usize) -> Value {
        let mut o = Map::new();
        let mut known_tags = Vec::new();
        for f in fields {
            if !f.versions.contains(self.version) {
                continue;
            }
            let tagged = self.flexible && f.is_tagged(self.version);
            if let Some(t) = f.tag {
                known_tags.push(t);
            }
            if tagged && self.rng.chance(2) {
                continue;
            }
            let key = if self.snake {
                kwire::schema::snake_case(&f.name)
            } else {
                f.name.clone()
            };
            let v = self.value(f, &f.ty, depth, false);
            o.insert(key, v);
        }
        if self.flexible && self.rng.chance(6) {
            let mut u = Map::new();
            for _ in 0..1 + self.rng.below(2) {
                let tag = 100 + self.rng.below(50) as u32;
                if !known_tags.contains(&tag) {
                    u.insert(tag.to_string(), to_hex(&self.rng.bytes(4)).into());
                }
            }
            if !u.is_empty() {
                o.insert("_unknown_tags".into(), Value::Object(u));
            }
        }
        Value::Object(o)
    }

    fn value(&mut self, f: &'s Field, ty: &FieldType, depth: usize, elem: bool) -> Value {
        let nullable = !elem && f.nullable_versions.contains(self.version);
        if nullable && self.rng.chance(4) {
            return Value::Null;
        }
        match ty {
            FieldType::Prim(p) => self.prim(f, *p),
            FieldType::Array(inner) => {
                let n = if depth > 4 { 0 } else { self.rng.below(4) };
                Value::Array(
                    (0..n)
                        .map(|_| self.value(f, inner, depth + 1, true))
                        .collect(),
                )
            }
            FieldType::Struct(s) => {
                let fs = if f.fields.is_empty() {
                    self.def.struct_fields(s)
                } else {
                    Some(f.fields.as_slice())
                };
                match fs {
                    Some(fs) => self.fields(fs, depth + 1),
                    None => Value::Object(Map::new()),
                }
            }
        }
    }

    fn prim(&mut self, f: &Field, p: Prim) -> Value {
        let r = &mut self.rng;
        match p {
            Prim::Bool => (r.below(2) == 1).into(),
            Prim::Int8 => int_json(r.int(i8::MIN as i64, i8::MAX as i64)),
            Prim::Int16 => int_json(r.int(i16::MIN as i64, i16::MAX as i64)),
            Prim::Int32 => int_json(r.int(i32::MIN as i64, i32::MAX as i64)),
            Prim::Int64 => int_json(r.int(i64::MIN, i64::MAX)),
            Prim::Uint16 => uint_json(r.int(0, u16::MAX as i64) as u64),
            Prim::Uint32 => uint_json(r.int(0, u32::MAX as i64) as u64),
            Prim::Float64 => match r.below(5) {
                0 => float_json(f64::NAN),
                1 => float_json(f64::NEG_INFINITY),
                _ => float_json(f64::from_bits(r.next() >> 2)),
            },
            Prim::String => r.string().into(),
            Prim::Uuid => {
                let b: [u8; 16] = std::array::from_fn(|_| r.next() as u8);
                uuid::Uuid::from_bytes(b).to_string().into()
            }
            Prim::Bytes => {
                if self.def.name == "EnvelopeRequest" && f.name == "RequestData" {
                    // An Envelope carries a whole request (header and body, no size).
                    let inner = minimal(self.schema, 20, 6, true);
                    let frame = encode(self.schema, &inner).unwrap();
                    return to_hex(&frame[4..]).into();
                }
                to_hex(&r.bytes(8)).into()
            }
            Prim::Records => self.records(),
        }
    }

    fn records(&mut self) -> Value {
        let legacy = match self.def.name.as_str() {
            "ProduceRequest" | "ProduceResponse" => self.version < 3,
            "FetchRequest" | "FetchResponse" => self.version < 4,
            _ => false,
        };
        let r = &mut self.rng;
        let n = r.below(3);
        let mut out = Vec::new();
        let mut offset = r.int(0, 1 << 40);
        for _ in 0..n {
            if legacy {
                let magic = r.below(2) as i64;
                let mut o = Map::new();
                o.insert("magic".into(), magic.into());
                o.insert("offset".into(), int_json(offset));
                offset += 1;
                o.insert(
                    "attributes".into(),
                    (if magic == 1 && r.chance(2) { 8 } else { 0 }).into(),
                );
                if magic == 1 {
                    o.insert("timestamp".into(), int_json(r.int(0, 1 << 42)));
                }
                for k in ["key", "value"] {
                    let v = if r.chance(3) {
                        Value::Null
                    } else {
                        to_hex(&r.bytes(6)).into()
                    };
                    o.insert(k.into(), v);
                }
                out.push(Value::Object(o));
            } else {
                let count = r.below(4) as i64;
                let base_ts = r.int(0, 1 << 42);
                let recs: Vec<Value> = (0..count)
                    .map(|i| {
                        let opt = |r: &mut Rng| -> Value {
                            if r.chance(3) {
                                Value::Null
                            } else {
                                to_hex(&r.bytes(6)).into()
                            }
                        };
                        let headers: Vec<Value> = (0..r.below(3))
                            .map(|_| json!({"key": r.string(), "value": opt(r)}))
                            .collect();
                        json!({"attributes": 0, "timestampDelta": i, "offsetDelta": i,
                               "key": opt(r), "value": opt(r), "headers": headers})
                    })
                    .collect();
                let codec = ["none", "gzip", "snappy", "lz4", "zstd"][r.below(5) as usize];
                let mut attrs = json!({
                    "compression": codec,
                    "timestampType": if r.chance(2) { "CreateTime" } else { "LogAppendTime" },
                    "isTransactional": r.chance(2),
                    "isControlBatch": false,
                });
                if r.chance(4) {
                    attrs["hasDeleteHorizonMs"] = true.into();
                }
                let last = (count - 1).max(0);
                out.push(json!({
                    "magic": 2,
                    "baseOffset": int_json(offset),
                    "partitionLeaderEpoch": r.int(-1, 1000),
                    "attributes": attrs,
                    "lastOffsetDelta": last,
                    "baseTimestamp": int_json(base_ts),
                    "maxTimestamp": int_json(base_ts + last),
                    "producerId": int_json(r.int(-1, 1 << 50)),
                    "producerEpoch": r.int(-1, 100),
                    "baseSequence": r.int(-1, 1000),
                    "records": recs,
                }));
                offset += count.max(1);
            }
        }
        Value::Array(out)
    }
}

/// A random instance of `(key, version)` from `seed`; `unknown_tags` adds unknown tags.
pub fn instance(schema: &Schema, key: i16, version: i16, request: bool, seed: u64) -> Value {
    let kind = if request {
        MessageKind::Request
    } else {
        MessageKind::Response
    };
    let d = schema.resolve(kind, key, version).unwrap();
    let mut g = Gen {
        schema,
        def: &d.def,
        version,
        flexible: d.def.is_flexible(version),
        snake: false,
        rng: Rng(seed),
    };
    let body = g.fields(&d.def.fields, 0);
    let mut header = Map::new();
    header.insert(
        "correlation_id".into(),
        int_json(g.rng.int(i32::MIN as i64, i32::MAX as i64)),
    );
    let hv = if request {
        schema.request_header_version(key, version)
    } else {
        schema.response_header_version(key, version)
    };
    if request && hv >= 1 {
        let c = if g.rng.chance(4) {
            Value::Null
        } else {
            g.rng.string().into()
        };
        header.insert("client_id".into(), c);
    }
    if (request && hv >= 2 || !request && hv >= 1) && g.rng.chance(5) {
        header.insert(
            "_unknown_tags".into(),
            json!({"7": to_hex(&g.rng.bytes(3))}),
        );
    }
    json!({
        "kind": if request { "request" } else { "response" },
        "api_key": key,
        "api_name": schema.api_name(key),
        "api_version": version,
        "header": header,
        "body": body,
    })
}

pub fn all_pairs(schema: &Schema) -> Vec<(i16, i16, bool)> {
    let mut out = Vec::new();
    for key in schema.api_keys() {
        for (request, kind) in [(true, MessageKind::Request), (false, MessageKind::Response)] {
            for v in schema.versions(kind, key) {
                out.push((key, v, request));
            }
        }
    }
    out
}
