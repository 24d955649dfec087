//! The two frames of the seed page (`../shared/reference/delete-topics-v6.md`), written
//! here as test bytes, decode to exactly the offsets, lengths, names, types and values
//! the reference shows.

use kwire::decode::{decode, DecodeOptions, Known};
use kwire::schema::Schema;
use kwire::tree::{Buffers, Node, Value};

const REQ: &str = "000000230014000600000000000000020100000000000000000000000000000000000000000000";
const RESP: &str = "000000200000000000000000000201000000000000000000000000000000000000010000";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn fmt_value(v: &Value<'_>) -> String {
    match v {
        Value::None => String::new(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Str(s) => format!("{s:?}"),
        Value::Bytes(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        Value::Uuid(u) => u.to_string(),
        Value::Count(n) => format!("{n} element{}", if *n == 1 { "" } else { "s" }),
    }
}

/// `(depth, name, type, value, annotation, offset, length)` for every node.
fn rows(n: &Node<'_>) -> Vec<(usize, String, String, String, String, usize, usize)> {
    let mut out = Vec::new();
    n.walk(&mut |x, d| {
        out.push((
            d,
            x.name.to_string(),
            x.ty.to_string(),
            fmt_value(&x.value),
            x.annotation.unwrap_or("").to_string(),
            x.offset,
            x.length,
        ))
    });
    out
}

#[test]
fn seed_request() {
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let arena = Buffers::new();
    let bytes = hex(REQ);
    let m = decode(&schema, &opts, &arena, &bytes, &Known::request());
    assert!(m.errors().is_empty(), "{:?}", m.errors());
    assert_eq!(
        (m.api_key, m.api_version, m.header_version, m.size),
        (20, 6, 2, 39)
    );
    assert_eq!(m.schema_release, Some("4.4"));
    let want: Vec<(usize, &str, &str, &str, &str, usize, usize)> = vec![
        (0, "DeleteTopicsRequest", "message v6", "", "", 0x00, 39),
        (1, "Frame", "frame", "", "", 0x00, 4),
        (2, "size", "int32", "35", "", 0x00, 4),
        (1, "RequestHeader", "header v2", "", "", 0x04, 11),
        (2, "request_api_key", "int16", "20", "DeleteTopics", 0x04, 2),
        (2, "request_api_version", "int16", "6", "", 0x06, 2),
        (2, "correlation_id", "int32", "0", "", 0x08, 4),
        (
            2,
            "client_id",
            "nullable_string",
            "\"\"",
            "int16 len=0",
            0x0c,
            2,
        ),
        (2, "tagged_fields", "uvarint", "0", "", 0x0e, 1),
        (1, "DeleteTopicsRequest", "struct", "", "", 0x0f, 24),
        (2, "Topics", "[]DeleteTopicState", "1 element", "", 0x0f, 19),
        (3, "length", "uvarint", "2", "compact, n+1", 0x0f, 1),
        (
            3,
            "DeleteTopicState[0]",
            "DeleteTopicState",
            "",
            "",
            0x10,
            18,
        ),
        (4, "Name", "string", "\"\"", "compact, len+1=1", 0x10, 1),
        (
            4,
            "TopicId",
            "uuid",
            "00000000-0000-0000-0000-000000000000",
            "",
            0x11,
            16,
        ),
        (4, "tagged_fields", "uvarint", "0", "", 0x21, 1),
        (2, "TimeoutMs", "int32", "0", "", 0x22, 4),
        (2, "tagged_fields", "uvarint", "0", "", 0x26, 1),
    ];
    let got = rows(&m.tree);
    let got: Vec<_> = got
        .iter()
        .map(|(d, a, b, c, e, o, l)| (*d, a.as_str(), b.as_str(), c.as_str(), e.as_str(), *o, *l))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn seed_response() {
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let arena = Buffers::new();
    let bytes = hex(RESP);
    let m = decode(&schema, &opts, &arena, &bytes, &Known::response(20, 6));
    assert!(m.errors().is_empty(), "{:?}", m.errors());
    assert_eq!(
        (m.header_version, m.size, m.correlation_id),
        (1, 36, Some(0))
    );
    let want: Vec<(usize, &str, &str, &str, &str, usize, usize)> = vec![
        (0, "DeleteTopicsResponse", "message v6", "", "", 0x00, 36),
        (1, "Frame", "frame", "", "", 0x00, 4),
        (2, "size", "int32", "32", "", 0x00, 4),
        (1, "ResponseHeader", "header v1", "", "", 0x04, 5),
        (2, "correlation_id", "int32", "0", "", 0x04, 4),
        (2, "tagged_fields", "uvarint", "0", "", 0x08, 1),
        (1, "DeleteTopicsResponse", "struct", "", "", 0x09, 27),
        (2, "ThrottleTimeMs", "int32", "0", "", 0x09, 4),
        (
            2,
            "Responses",
            "[]DeletableTopicResult",
            "1 element",
            "",
            0x0d,
            22,
        ),
        (3, "length", "uvarint", "2", "compact, n+1", 0x0d, 1),
        (
            3,
            "DeletableTopicResult[0]",
            "DeletableTopicResult",
            "",
            "",
            0x0e,
            21,
        ),
        (4, "Name", "string", "\"\"", "compact, len+1=1", 0x0e, 1),
        (
            4,
            "TopicId",
            "uuid",
            "00000000-0000-0000-0000-000000000000",
            "",
            0x0f,
            16,
        ),
        (4, "ErrorCode", "int16", "0", "", 0x1f, 2),
        (
            4,
            "ErrorMessage",
            "string",
            "\"\"",
            "compact, len+1=1",
            0x21,
            1,
        ),
        (4, "tagged_fields", "uvarint", "0", "", 0x22, 1),
        (2, "tagged_fields", "uvarint", "0", "", 0x23, 1),
    ];
    let got = rows(&m.tree);
    let got: Vec<_> = got
        .iter()
        .map(|(d, a, b, c, e, o, l)| (*d, a.as_str(), b.as_str(), c.as_str(), e.as_str(), *o, *l))
        .collect();
    assert_eq!(got, want);
}
