//! Bytes that carry other structures decode as nested trees under their field: the
//! consumer protocol inside JoinGroup and SyncGroup, and the request and principal
//! wrapped in an Envelope.

mod common;

use common::unhex;
use kwire::decode::{decode, DecodeOptions, Hints, Known};
use kwire::schema::Schema;
use kwire::tree::{Buffers, Value};

fn sized(mut b: Vec<u8>) -> Vec<u8> {
    let n = (b.len() - 4) as u32;
    b[..4].copy_from_slice(&n.to_be_bytes());
    b
}

#[test]
fn envelope_wraps_a_request_and_a_principal() {
    // The wrapped request: DeleteTopics v6, header v2 (no size prefix), client_id "inner".
    let inner = unhex("0014 0006 00000009 0005 696e6e6572 00 02 01 00000000000000000000000000000000 00 00002710 00");
    // DefaultPrincipalData, version-prefixed: v0, Type "User", Name "alice", not a token.
    let principal = unhex("0000 05 55736572 06 616c696365 00 00");
    let mut b = unhex("00000000 003a 0000 00000001 0006 62726f6b6572 00");
    b.push(inner.len() as u8 + 1);
    b.extend(&inner);
    b.push(principal.len() as u8 + 1);
    b.extend(&principal);
    b.extend(unhex("05 7f000001 00"));
    let b = sized(b);
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let arena = Buffers::new();
    let m = decode(&schema, &opts, &arena, &b, &Known::request());
    assert!(m.errors().is_empty(), "{:?}", m.errors());
    common::assert_tiles(&m.tree, b.len());
    let rd = m.tree.find("RequestData").unwrap();
    let wrapped = rd.find("DeleteTopicsRequest").unwrap();
    assert_eq!(wrapped.ty, "message v6");
    assert_eq!(
        wrapped.find("client_id").unwrap().value,
        Value::Str("inner")
    );
    assert_eq!(wrapped.find("TimeoutMs").unwrap().value, Value::Int(10000));
    let p = m.tree.find("RequestPrincipal").unwrap();
    assert_eq!(p.find("Name").unwrap().value, Value::Str("alice"));
    assert_eq!(
        p.find("TokenAuthenticated").unwrap().value,
        Value::Bool(false)
    );
    let a = m.tree.find("ClientHostAddress").unwrap();
    assert!(
        a.annotation.unwrap().ends_with("127.0.0.1"),
        "{:?}",
        a.annotation
    );
}

/// SyncGroup v3 request with one assignment (ConsumerProtocolAssignment v0: topic "t",
/// partitions [0, 1], no user data).
fn sync_group_v3() -> Vec<u8> {
    let assignment = unhex("0000 00000001 0001 74 00000002 00000000 00000001 ffffffff");
    let mut b =
        unhex("00000000 000e 0003 00000005 0000 0001 67 00000001 0001 6d ffff 00000001 0001 6d");
    b.extend((assignment.len() as u32).to_be_bytes());
    b.extend(&assignment);
    sized(b)
}

#[test]
fn consumer_protocol_inside_sync_group() {
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let arena = Buffers::new();
    let b = sync_group_v3();
    let m = decode(&schema, &opts, &arena, &b, &Known::request());
    assert!(m.errors().is_empty(), "{:?}", m.errors());
    common::assert_tiles(&m.tree, b.len());
    // v3 carries no ProtocolType: the bytes decode exactly, so the nested tree is shown.
    let a = m
        .tree
        .find("ConsumerProtocolAssignment")
        .expect("nested assignment");
    assert_eq!(a.find("Topic").unwrap().value, Value::Str("t"));
    assert_eq!(a.find("Partitions").unwrap().value, Value::Count(2));
}

#[test]
fn a_protocol_type_other_than_consumer_keeps_bytes_raw() {
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let arena = Buffers::new();
    let b = sync_group_v3();
    let mut known = Known::request();
    known.hints = Hints {
        protocol_type: Some("connect".into()),
        ..Hints::default()
    };
    let m = decode(&schema, &opts, &arena, &b, &known);
    assert!(m.tree.find("ConsumerProtocolAssignment").is_none());
    assert!(matches!(
        m.tree.find("Assignment").unwrap().value,
        Value::Bytes(_)
    ));
}

#[test]
fn bytes_that_do_not_fit_the_consumer_protocol_stay_raw() {
    // Without a protocol type, bytes that do not decode exactly are not forced into a tree.
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let arena = Buffers::new();
    let mut b = unhex("00000000 000e 0003 00000005 0000 0001 67 00000001 0001 6d ffff 00000001 0001 6d 00000003 7a7a7a");
    b = sized(b);
    let m = decode(&schema, &opts, &arena, &b, &Known::request());
    assert!(m.errors().is_empty(), "{:?}", m.errors());
    assert!(m.tree.find("ConsumerProtocolAssignment").is_none());
    // and empty bytes are shown as empty, never handed to a nested decoder
    let mut e = unhex(
        "00000000 000e 0003 00000005 0000 0001 67 00000001 0001 6d ffff 00000001 0001 6d 00000000",
    );
    e = sized(e);
    let m = decode(&schema, &opts, &arena, &e, &Known::request());
    assert!(m.errors().is_empty(), "{:?}", m.errors());
    assert_eq!(m.tree.find("Assignment").unwrap().value, Value::Bytes(&[]));
}
