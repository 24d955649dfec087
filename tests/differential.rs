//! Differential tests against the `kafka-protocol` crate (an independent Rust
//! implementation generated from Kafka's JSON definitions).
//!
//! For Produce, Fetch, Metadata, ApiVersions, JoinGroup, SyncGroup, OffsetCommit,
//! CreateTopics and DeleteTopics at old, middle and newest versions that both know,
//! requests and responses:
//!
//! 1. messages built with kafka-protocol (by hand, and by decoding random kwire
//!    instances, which gives messages with non-trivial values in every field) are
//!    encoded with it (size prefix, header, body);
//! 2. kwire decodes those frames with no errors, and `to_values` of the result is
//!    compared field by field, by name, with the kafka-protocol message (its `Debug`
//!    tree, snake_case names): every field kwire reads must be there with the same value
//!    (ints, strings, bytes, uuids, booleans, nulls, arrays of the same length);
//! 3. kwire encodes its values back to exactly kafka-protocol's bytes.

mod encode_common;

use bytes::{Bytes, BytesMut};
use encode_common::decode_check;
use encode_common::gen::instance;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use kwire::encode::{encode, records::encode_records, to_hex};
use kwire::schema::Schema;
use serde_json::{Map, Value};
use std::fmt::Debug;

// ---------------------------------------------------------------------------------
// A reader of Rust `{:?}` output into JSON-like values.

struct Dbg<'a> {
    s: &'a [u8],
    i: usize,
}

impl Dbg<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i] == b' ' {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn quoted(&mut self) -> Vec<u8> {
        // after the opening quote
        let mut out = Vec::new();
        loop {
            let c = self.s[self.i];
            self.i += 1;
            match c {
                b'"' => return out,
                b'\\' => {
                    let e = self.s[self.i];
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'0' => out.push(0),
                        b'x' => {
                            let h = std::str::from_utf8(&self.s[self.i..self.i + 2]).unwrap();
                            out.push(u8::from_str_radix(h, 16).unwrap());
                            self.i += 2;
                        }
                        b'u' => {
                            let end =
                                self.i + self.s[self.i..].iter().position(|&x| x == b'}').unwrap();
                            let h = std::str::from_utf8(&self.s[self.i + 1..end]).unwrap();
                            let ch = char::from_u32(u32::from_str_radix(h, 16).unwrap()).unwrap();
                            out.extend_from_slice(ch.to_string().as_bytes());
                            self.i = end + 1;
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
    }
    fn value(&mut self) -> Value {
        self.ws();
        match self.s[self.i] {
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                while !self.eat(b']') {
                    a.push(self.value());
                    self.eat(b',');
                }
                Value::Array(a)
            }
            b'{' => {
                // a map (unknown tagged fields): keys and values, kept as an object
                self.i += 1;
                let mut m = Map::new();
                while !self.eat(b'}') {
                    let k = self.value();
                    assert!(self.eat(b':'));
                    let v = self.value();
                    m.insert(k.to_string(), v);
                    self.eat(b',');
                }
                Value::Object(m)
            }
            b'"' => {
                self.i += 1;
                Value::String(String::from_utf8(self.quoted()).unwrap())
            }
            b'b' if self.s.get(self.i + 1) == Some(&b'"') => {
                self.i += 2;
                let b = self.quoted();
                Value::String(format!("bytes:{}", to_hex(&b)))
            }
            _ => {
                let st = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || b"_.+-".contains(&self.s[self.i]))
                {
                    self.i += 1;
                }
                let tok = std::str::from_utf8(&self.s[st..self.i])
                    .unwrap()
                    .to_string();
                self.ws();
                match self.s.get(self.i) {
                    Some(b'{') => {
                        self.i += 1;
                        let mut m = Map::new();
                        while !self.eat(b'}') {
                            self.ws();
                            let ks = self.i;
                            while self.s[self.i] != b':' {
                                self.i += 1;
                            }
                            let k = std::str::from_utf8(&self.s[ks..self.i])
                                .unwrap()
                                .trim()
                                .to_string();
                            self.i += 1;
                            let v = self.value();
                            m.insert(k, v);
                            self.eat(b',');
                        }
                        return Value::Object(m);
                    }
                    Some(b'(') => {
                        self.i += 1;
                        let v = self.value();
                        assert!(self.eat(b')'), "tuple with more than one field after {tok}");
                        return v;
                    }
                    _ => {}
                }
                match tok.as_str() {
                    "None" => Value::Null,
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    t if t.len() == 36 && t.matches('-').count() == 4 => Value::String(t.into()),
                    t => Value::String(format!("num:{t}")),
                }
            }
        }
    }
}

fn debug_tree(x: &impl Debug) -> Value {
    let s = format!("{x:?}");
    let mut d = Dbg {
        s: s.as_bytes(),
        i: 0,
    };
    d.value()
}

fn snake(s: &str) -> String {
    kwire::schema::snake_case(s)
}

/// Compares kwire's values (`kw`) with kafka-protocol's Debug tree (`kp`).
fn compare(kw: &Value, kp: &Value, path: &str, errs: &mut Vec<String>) {
    match (kw, kp) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                if k == "_unknown_tags" {
                    continue;
                }
                let s = snake(k);
                let cand = [
                    s.clone(),
                    format!("{s}_"),
                    format!("_{s}"),
                    format!("r#{s}"),
                ];
                match cand.iter().find_map(|c| b.get(c)) {
                    Some(x) => compare(v, x, &format!("{path}.{k}"), errs),
                    None => errs.push(format!("{path}.{k}: kafka-protocol has no field {s}")),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                errs.push(format!("{path}: {} elements vs {}", a.len(), b.len()));
                return;
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                compare(x, y, &format!("{path}[{i}]"), errs);
            }
        }
        // records: kwire's batches against kafka-protocol's raw bytes
        (Value::Array(_), Value::String(s)) if s.starts_with("bytes:") => {
            match encode_records(kw, path) {
                Ok(b) if format!("bytes:{}", to_hex(&b)) == *s => {}
                _ => errs.push(format!("{path}: records differ")),
            }
        }
        (Value::Null, Value::Null) => {}
        // kwire leaves an absent nullable struct as null; kafka-protocol as None
        (Value::Null, _) => errs.push(format!("{path}: null vs {kp}")),
        (Value::Bool(a), Value::Bool(b)) if a == b => {}
        (Value::Number(n), Value::String(s)) if *s == format!("num:{n}") => {}
        (Value::Number(n), Value::String(s)) if s.starts_with("num:") => {
            let (x, y) = (n.as_f64(), s[4..].parse::<f64>().ok());
            if y != x {
                errs.push(format!("{path}: {n} vs {s}"));
            }
        }
        (Value::String(a), Value::String(s)) => {
            let ok = s == a
                || *s == format!("bytes:{a}")
                || *s == format!("num:{a}")
                || (s == "bytes:" && a.is_empty());
            if !ok {
                errs.push(format!("{path}: {a:?} vs {s:?}"));
            }
        }
        _ => errs.push(format!("{path}: {kw} vs {kp}")),
    }
}

// ---------------------------------------------------------------------------------

fn frame(header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut f = ((header.len() + body.len()) as i32).to_be_bytes().to_vec();
    f.extend_from_slice(header);
    f.extend_from_slice(body);
    f
}

/// Encodes a kafka-protocol request with its header, decodes it with kwire and
/// compares every field by name, then re-encodes kwire's values.
fn check_request<T: Encodable + HeaderVersion + Debug>(
    schema: &Schema,
    key: i16,
    version: i16,
    msg: &T,
    correlation_id: i32,
    client_id: Option<&str>,
) {
    let header = RequestHeader::default()
        .with_request_api_key(key)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(client_id.map(|c| StrBytes::from_string(c.to_string())));
    let hv = T::header_version(version);
    assert_eq!(
        hv,
        schema.request_header_version(key, version),
        "header version of {key} v{version}"
    );
    let mut hb = BytesMut::new();
    header.encode(&mut hb, hv).unwrap();
    let mut bb = BytesMut::new();
    msg.encode(&mut bb, version).unwrap();
    let f = frame(&hb, &bb);
    let what = format!("api {key} v{version} request");
    let values =
        decode_check(schema, &f, true, key, version).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut errs = Vec::new();
    compare(&values["header"], &debug_tree(&header), "header", &mut errs);
    compare(&values["body"], &debug_tree(msg), "body", &mut errs);
    assert!(errs.is_empty(), "{what}:\n{}", errs.join("\n"));
    assert_eq!(
        to_hex(&encode(schema, &values).unwrap()),
        to_hex(&f),
        "{what}: kwire re-encode"
    );
}

/// As [`check_request`], for a response.
fn check_response<T: Encodable + HeaderVersion + Debug>(
    schema: &Schema,
    key: i16,
    version: i16,
    msg: &T,
    correlation_id: i32,
) {
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let hv = T::header_version(version);
    assert_eq!(
        hv,
        schema.response_header_version(key, version),
        "header version of {key} v{version}"
    );
    let mut hb = BytesMut::new();
    header.encode(&mut hb, hv).unwrap();
    let mut bb = BytesMut::new();
    msg.encode(&mut bb, version).unwrap();
    let f = frame(&hb, &bb);
    let what = format!("api {key} v{version} response");
    let values =
        decode_check(schema, &f, false, key, version).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut errs = Vec::new();
    compare(&values["header"], &debug_tree(&header), "header", &mut errs);
    compare(&values["body"], &debug_tree(msg), "body", &mut errs);
    assert!(errs.is_empty(), "{what}:\n{}", errs.join("\n"));
    assert_eq!(
        to_hex(&encode(schema, &values).unwrap()),
        to_hex(&f),
        "{what}: kwire re-encode"
    );
}

/// A kafka-protocol message with non-trivial values: a random kwire instance of the
/// same (api_key, version) encoded by kwire and decoded by kafka-protocol (which must
/// accept it).
fn kp_from_kwire<T: Decodable>(
    schema: &Schema,
    key: i16,
    version: i16,
    request: bool,
    seed: u64,
) -> T {
    let inst = instance(schema, key, version, request, seed);
    let f = encode(schema, &inst).unwrap();
    let mut b = Bytes::copy_from_slice(&f[4..]);
    if request {
        RequestHeader::decode(&mut b, schema.request_header_version(key, version)).unwrap();
    } else {
        ResponseHeader::decode(&mut b, schema.response_header_version(key, version)).unwrap();
    }
    let m = T::decode(&mut b, version).unwrap_or_else(|e| {
        panic!("kafka-protocol rejects kwire's api {key} v{version}: {e}\n{inst}")
    });
    assert!(
        b.is_empty(),
        "api {key} v{version}: kafka-protocol left {} bytes",
        b.len()
    );
    m
}

macro_rules! api {
    ($name:ident, $req:ty, $resp:ty, $key:expr, [$($v:expr),*]) => {
        #[test]
        fn $name() {
            let schema = Schema::embedded();
            for v in [$($v),*] {
                for seed in 0..6u64 {
                    let req: $req = kp_from_kwire(&schema, $key, v, true, seed * 31 + v as u64);
                    check_request(&schema, $key, v, &req, seed as i32 * 1000 + 7, Some("kwire-diff"));
                    let resp: $resp = kp_from_kwire(&schema, $key, v, false, seed * 37 + v as u64);
                    check_response(&schema, $key, v, &resp, seed as i32 - 3);
                }
            }
        }
    };
}

api!(
    produce,
    ProduceRequest,
    ProduceResponse,
    0,
    [0, 2, 3, 7, 9, 11]
);
api!(fetch, FetchRequest, FetchResponse, 1, [0, 3, 4, 11, 12, 17]);
api!(
    metadata,
    MetadataRequest,
    MetadataResponse,
    3,
    [0, 4, 9, 12]
);
api!(
    api_versions,
    ApiVersionsRequest,
    ApiVersionsResponse,
    18,
    [0, 2, 3, 4]
);
api!(
    join_group,
    JoinGroupRequest,
    JoinGroupResponse,
    11,
    [0, 5, 6, 9]
);
api!(
    sync_group,
    SyncGroupRequest,
    SyncGroupResponse,
    14,
    [0, 3, 4, 5]
);
api!(
    offset_commit,
    OffsetCommitRequest,
    OffsetCommitResponse,
    8,
    [2, 5, 8, 9]
);
api!(
    create_topics,
    CreateTopicsRequest,
    CreateTopicsResponse,
    19,
    [2, 4, 5, 7]
);
api!(
    delete_topics,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    20,
    [1, 3, 4, 6]
);

/// The comparison is real: a changed int, string, array length or null is caught.
#[test]
fn comparison_catches_mismatches() {
    let schema = Schema::embedded();
    let req: DeleteTopicsRequest = kp_from_kwire(&schema, 20, 6, true, 5);
    let kp = debug_tree(&req);
    let inst = instance(&schema, 20, 6, true, 5);
    let mut errs = Vec::new();
    compare(&inst["body"], &kp, "body", &mut errs);
    assert!(errs.is_empty(), "{errs:?}");
    let mut bad = inst["body"].clone();
    bad["TimeoutMs"] = (bad["TimeoutMs"].as_i64().unwrap() ^ 1).into();
    let mut errs = Vec::new();
    compare(&bad, &kp, "body", &mut errs);
    assert_eq!(errs.len(), 1, "{errs:?}");
    let mut bad = inst["body"].clone();
    bad["Topics"] =
        serde_json::json!([{"Name": "x", "TopicId": "00000000-0000-0000-0000-000000000001"}]);
    let mut errs = Vec::new();
    compare(&bad, &kp, "body", &mut errs);
    assert!(!errs.is_empty());
    let mut bad = inst["body"].clone();
    bad["Nope"] = 1.into();
    let mut errs = Vec::new();
    compare(&bad, &kp, "body", &mut errs);
    assert_eq!(
        errs,
        vec!["body.Nope: kafka-protocol has no field nope".to_string()]
    );
}

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

/// Messages built by hand with kafka-protocol's builders.
#[test]
fn hand_built_messages() {
    let schema = Schema::embedded();
    let topic = |n: &str, id: u128| {
        delete_topics_request::DeleteTopicState::default()
            .with_name(Some(TopicName(s(n))))
            .with_topic_id(uuid::Uuid::from_u128(id))
    };
    let dt = DeleteTopicsRequest::default()
        .with_topics(vec![topic("orders", 0x1234), topic("payments", u128::MAX)])
        .with_timeout_ms(30_000);
    check_request(&schema, 20, 6, &dt, 42, Some("admin-1"));
    let dt5 = DeleteTopicsRequest::default()
        .with_topic_names(vec![TopicName(s("a")), TopicName(s("bé"))])
        .with_timeout_ms(-1);
    check_request(&schema, 20, 5, &dt5, i32::MAX, None);

    let md = MetadataResponse::default()
        .with_throttle_time_ms(5)
        .with_brokers(vec![
            metadata_response::MetadataResponseBroker::default()
                .with_node_id(BrokerId(1))
                .with_host(s("kafka-1.example"))
                .with_port(9092)
                .with_rack(Some(s("r1"))),
            metadata_response::MetadataResponseBroker::default()
                .with_node_id(BrokerId(2))
                .with_host(s("kafka-2"))
                .with_port(19092),
        ])
        .with_cluster_id(Some(s("cluster-xyz")))
        .with_controller_id(BrokerId(2))
        .with_topics(vec![metadata_response::MetadataResponseTopic::default()
            .with_error_code(3)
            .with_name(Some(TopicName(s("t"))))
            .with_partitions(vec![
                metadata_response::MetadataResponsePartition::default()
                    .with_partition_index(7)
                    .with_leader_id(BrokerId(1))
                    .with_leader_epoch(9)
                    .with_replica_nodes(vec![BrokerId(1), BrokerId(2)])
                    .with_isr_nodes(vec![BrokerId(1)]),
            ])]);
    for v in [1, 7, 9, 12] {
        let mut m = md.clone();
        if v < 8 {
            m.topics[0].partitions[0].leader_epoch = if v >= 7 { 9 } else { -1 };
        }
        if v < 2 {
            m.cluster_id = None;
        }
        if v < 3 {
            m.throttle_time_ms = 0;
        }
        check_response(&schema, 3, v, &m, 99);
    }

    let av = ApiVersionsResponse::default()
        .with_error_code(35)
        .with_api_keys(vec![
            api_versions_response::ApiVersion::default()
                .with_api_key(0)
                .with_min_version(3)
                .with_max_version(11),
            api_versions_response::ApiVersion::default()
                .with_api_key(18)
                .with_max_version(4),
        ])
        .with_throttle_time_ms(1);
    check_response(&schema, 18, 3, &av, 1);
}
