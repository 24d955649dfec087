//! Regression tests for classes of real-world failures seen in other Kafka decoders'
//! bug reports (Wireshark, librdkafka, sarama, kafkajs, kafka-protocol-rs, redpanda).
//! Each builds a small frame, asserts the exact errors (offset and text) or warnings, or
//! none for the legal cases, and that the tree still tiles the frame and decoding goes on
//! after the bad part.
//!
//! Covered elsewhere (and extended here, not repeated):
//! - int32 array count far beyond the bytes, int16 string length past the end, compact
//!   array length varint running to the end, nesting cap on a plain struct, null
//!   client_id in a flexible request, ApiVersions response header v0, DescribeGroups
//!   `ErrorMessage` absent before v6: `tests/hostile.rs`.
//! - record-level cases on the bare records decoder (huge record count, corrupt LZ4
//!   batch, gzip/zstd bombs, record length varint cut, partial last batch, null header
//!   key, legacy wrapper depth cap): the tests of `src/decode/records.rs`.

mod common;
use common::unhex;

#[path = "../fuzz/src/lib.rs"]
mod fuzz;

use fuzz::{batch_v2, compress, fetch_v4_response, legacy_message, produce_v9};
use kwire::decode::{decode, DecodeOptions, Known};
use kwire::schema::Schema;
use kwire::tree::{Buffers, Message, Node, Value};

/// `(buffer, offset, message)`.
type Located = Vec<(u32, usize, String)>;

/// Sets the size prefix to the length that follows.
fn sized(mut b: Vec<u8>) -> Vec<u8> {
    let n = (b.len() - 4) as u32;
    b[..4].copy_from_slice(&n.to_be_bytes());
    b
}

/// Decodes and runs the fuzz targets' invariant checks (nodes inside their buffers,
/// errors inside their buffers, buffer 0 tiled), then hands the message over.
fn with_msg(opts: &DecodeOptions, b: &[u8], known: &Known, f: impl FnOnce(&Message<'_>)) {
    let schema = Schema::embedded();
    let arena = Buffers::new();
    let m = decode(&schema, opts, &arena, b, known);
    fuzz::check_message(&m);
    f(&m);
}

fn located(v: Vec<kwire::tree::Located>) -> Located {
    v.into_iter()
        .map(|e| (e.buffer, e.offset, e.message))
        .collect()
}

fn diag_with(opts: &DecodeOptions, b: &[u8], known: &Known) -> (Located, Located) {
    let mut out = (Vec::new(), Vec::new());
    with_msg(opts, b, known, |m| {
        out = (located(m.errors()), located(m.warnings()));
    });
    out
}

fn diag(b: &[u8], known: &Known) -> (Located, Located) {
    diag_with(&DecodeOptions::default(), b, known)
}

fn e(v: &[(u32, usize, &str)]) -> Located {
    v.iter().map(|(b, o, s)| (*b, *o, s.to_string())).collect()
}

/// Bytes of a uvarint.
fn uvarint_len(mut n: u64) -> usize {
    let mut c = 1;
    while n >= 0x80 {
        n >>= 7;
        c += 1;
    }
    c
}

/// Where the records of [`produce_v9`] start: after their compact length (len+1).
fn produce_records_at(records_len: usize) -> usize {
    30 + uvarint_len(records_len as u64 + 1)
}

/// Where the records of [`fetch_v4_response`] start.
const FETCH_RECORDS_AT: usize = 53;
/// Offset of `recordsCount` and of the records in a RecordBatch v2.
const COUNT_AT: usize = 57;
const RECORDS_AT: usize = 61;

fn zz(v: i64) -> Vec<u8> {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    let mut out = Vec::new();
    loop {
        let b = (u & 0x7f) as u8;
        u >>= 7;
        if u == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

fn vbytes(b: Option<&[u8]>) -> Vec<u8> {
    match b {
        None => zz(-1),
        Some(b) => [zz(b.len() as i64), b.to_vec()].concat(),
    }
}

/// A record: attributes 0, deltas `od`, key, value, then `tail` as the header count and
/// headers, verbatim.
fn record_raw(od: i64, key: Option<&[u8]>, value: Option<&[u8]>, tail: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8];
    b.extend(zz(0));
    b.extend(zz(od));
    b.extend(vbytes(key));
    b.extend(vbytes(value));
    b.extend(tail);
    [zz(b.len() as i64), b].concat()
}

type Hdr<'b> = (Option<&'b [u8]>, Option<&'b [u8]>);

fn record(od: i64, key: Option<&[u8]>, value: Option<&[u8]>, headers: &[Hdr]) -> Vec<u8> {
    let mut t = zz(headers.len() as i64);
    for (k, v) in headers {
        t.extend(vbytes(*k));
        t.extend(vbytes(*v));
    }
    record_raw(od, key, value, &t)
}

fn child<'n, 'a>(n: &'n Node<'a>, name: &str) -> &'n Node<'a> {
    n.children
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} under {}", n.name))
}

/// The body's last leaf: its closing tagged-fields count, read after the bad part.
fn ends_with_body_tags(m: &Message<'_>) {
    let body = m.tree.children.last().unwrap();
    let last = body.children.last().unwrap();
    assert_eq!(last.name, "tagged_fields", "decoding did not reach the end");
    assert_eq!(last.end(), m.frame.len());
}

// ---------------------------------------------------------------------------------------
// Counts in the hundreds of millions with few bytes behind them.

#[test]
fn record_count_in_the_hundreds_of_millions() {
    let rec = record(0, None, Some(b"v"), &[]);
    let b = batch_v2(0, 0, 300_000_000, &rec);
    let at = produce_records_at(b.len());
    let f = produce_v9(&b);
    let (errs, warns) = diag(&f, &Known::request());
    assert_eq!(
        errs,
        e(&[(
            0,
            at + COUNT_AT,
            "record count 300000000, but only 8 bytes follow (each takes at least 7)"
        )])
    );
    assert!(warns.is_empty(), "{warns:?}");
    with_msg(&DecodeOptions::default(), &f, &Known::request(), |m| {
        // the one record there is still decoded, and so is the rest of the request
        assert!(m.tree.find("Record[0]").is_some());
        ends_with_body_tags(m);
    });
}

#[test]
fn compact_array_count_in_the_hundreds_of_millions() {
    // DeleteTopics v6: Topics as a compact array of 300 million (uvarint 300000001).
    let b = sized(unhex(
        "00000000 0014 0006 00000007 0000 00 81c6868f01 00000000 00",
    ));
    let (errs, _) = diag(&b, &Known::request());
    assert_eq!(
        errs,
        e(&[(
            0,
            0x14,
            "Topics: 300000000 elements cannot fit in the 5 bytes left"
        )])
    );
}

#[test]
fn record_header_count_in_the_hundreds_of_millions() {
    let recs = [
        record_raw(0, None, Some(b"v"), &zz(300_000_000)),
        record(1, None, Some(b"w"), &[]),
    ]
    .concat();
    let b = batch_v2(0, 0, 2, &recs);
    let at = produce_records_at(b.len()) + RECORDS_AT;
    let f = produce_v9(&b);
    let (errs, _) = diag(&f, &Known::request());
    // headerCount sits after length, attributes, timestampDelta, offsetDelta, key, value
    assert_eq!(
        errs,
        e(&[(
            0,
            at + 7,
            "header count 300000000, but only 0 bytes follow (each takes at least 2)"
        )])
    );
    with_msg(&DecodeOptions::default(), &f, &Known::request(), |m| {
        assert!(
            m.tree.find("Record[1]").is_some(),
            "the next record decodes"
        );
        ends_with_body_tags(m);
    });
}

// ---------------------------------------------------------------------------------------
// Lengths near i32::MAX added to an offset.

#[test]
fn bytes_length_near_i32_max() {
    // SaslAuthenticate v0 (header v1): AuthBytes with int32 length 0x7fffffff.
    let b = sized(unhex("00000000 0024 0000 00000003 0000 7fffffff 61626364"));
    let (errs, _) = diag(&b, &Known::request());
    assert_eq!(
        errs,
        e(&[(
            0,
            0x12,
            "AuthBytes: length 2147483647 exceeds the 4 bytes left"
        )])
    );
}

#[test]
fn compact_string_length_near_u32_max() {
    // FindCoordinator v3 (flexible): a Key whose compact length is 0xffffffff (len+1).
    let b = sized(unhex("00000000 000a 0003 00000007 0000 00 ffffffff0f 6162"));
    let (errs, _) = diag(&b, &Known::request());
    assert_eq!(errs, e(&[(0, 0x0f, "Key: needs 4294967294 bytes, 2 left")]));
}

#[test]
fn batch_length_near_i32_max() {
    let mut b = batch_v2(0, 0, 1, &record(0, None, Some(b"v"), &[]));
    b[8..12].copy_from_slice(&0x7fff_fff0i32.to_be_bytes());
    let at = produce_records_at(b.len());
    let f = produce_v9(&b);
    let (errs, _) = diag(&f, &Known::request());
    // A Produce request: no broker cut it, the records field just ends.
    let msg = format!(
        "partial batch: {} of 2147483644 bytes, the records field ends inside it",
        b.len()
    );
    assert_eq!(errs, e(&[(0, at, &msg)]));
    with_msg(
        &DecodeOptions::default(),
        &f,
        &Known::request(),
        ends_with_body_tags,
    );
}

#[test]
fn record_key_length_near_i32_max() {
    // key length varint 2147483647 (zigzag fe ff ff ff 0f), two bytes behind it.
    let rec = record_raw(0, None, None, &[]);
    let mut body = rec[1..5].to_vec(); // attributes, deltas, null key
    body.truncate(3);
    body.extend([0xfe, 0xff, 0xff, 0xff, 0x0f, 0x61, 0x62]);
    let recs = [zz(body.len() as i64), body].concat();
    let b = batch_v2(0, 0, 1, &recs);
    let at = produce_records_at(b.len()) + RECORDS_AT;
    let f = produce_v9(&b);
    let (errs, _) = diag(&f, &Known::request());
    assert_eq!(
        errs,
        e(&[(0, at + 4, "key: needs 2147483647 bytes, 2 left")])
    );
    with_msg(
        &DecodeOptions::default(),
        &f,
        &Known::request(),
        ends_with_body_tags,
    );
}

// ---------------------------------------------------------------------------------------
// Corrupt LZ4.

#[test]
fn lz4_legacy_message_set_with_corrupt_data() {
    // Magic 0 and 1 wrapper messages (codec 3) whose LZ4 frame has a bad block, then a
    // good plain message.
    for magic in [0u8, 1] {
        let inner = legacy_message(0, magic, 0, Some(b"hello"));
        let mut lz = compress(3, &inner);
        let n = lz.len();
        lz[n - 8] ^= 0xff; // inside the block data
        lz[11..15].copy_from_slice(&0x7fff_0000u32.to_le_bytes()); // a block size far too big
        let wrapper = legacy_message(0, magic, 3, Some(&lz));
        let good = legacy_message(1, magic, 0, Some(b"next"));
        let field = [wrapper.clone(), good].concat();
        let f = fetch_v4_response(&field);
        let value_at = FETCH_RECORDS_AT + if magic == 0 { 22 } else { 30 };
        let (errs, warns) = diag(&f, &Known::response(1, 4));
        assert_eq!(
            errs,
            e(&[(
                0,
                value_at,
                "lz4 data is corrupt: an LZ4 match points before the start of the data"
            )]),
            "magic {magic}"
        );
        assert!(warns.is_empty(), "{warns:?}");
        with_msg(&DecodeOptions::default(), &f, &Known::response(1, 4), |m| {
            let recs = m.tree.find("Records").unwrap();
            let second = &recs.children[2];
            assert_eq!(second.offset, FETCH_RECORDS_AT + wrapper.len());
            assert_eq!(child(second, "value").value, Value::Bytes(b"next"));
        });
    }
}

#[test]
fn lz4_record_batch_with_corrupt_data() {
    let recs = record(0, None, Some(b"hello"), &[]);
    let mut lz = compress(3, &recs);
    lz[7..11].copy_from_slice(&0x0fff_ffffu32.to_le_bytes()); // block size past the maximum
    let bad = batch_v2(0, 3, 1, &lz);
    let good = batch_v2(1, 0, 1, &record(0, None, Some(b"next"), &[]));
    let field = [bad.clone(), good].concat();
    let at = produce_records_at(field.len());
    let f = produce_v9(&field);
    let (errs, _) = diag(&f, &Known::request());
    assert_eq!(
        errs,
        e(&[(
            0,
            at + RECORDS_AT,
            "lz4 data is corrupt: an LZ4 block larger than the frame's block size"
        )])
    );
    with_msg(&DecodeOptions::default(), &f, &Known::request(), |m| {
        let records = m.tree.find("Records").unwrap();
        let second = &records.children[2];
        assert_eq!(second.offset, at + bad.len());
        assert!(second.find("Record[0]").is_some());
        ends_with_body_tags(m);
    });
}

// ---------------------------------------------------------------------------------------
// Decompression bombs.

#[test]
fn gzip_and_zstd_batches_far_beyond_the_cap() {
    let opts = DecodeOptions {
        max_decompressed: 64 << 10,
        ..DecodeOptions::default()
    };
    let big = vec![0u8; 8 << 20];
    for codec in [1u8, 4] {
        let bomb = batch_v2(0, i16::from(codec), 1, &compress(codec, &big));
        let good = batch_v2(1, 0, 1, &record(0, None, Some(b"next"), &[]));
        let field = [bomb.clone(), good].concat();
        let at = produce_records_at(field.len());
        let f = produce_v9(&field);
        let (errs, _) = diag_with(&opts, &f, &Known::request());
        assert_eq!(
            errs,
            e(&[(
                0,
                at + RECORDS_AT,
                "decompressed size exceeds the cap of 65536 bytes"
            )]),
            "codec {codec}"
        );
        with_msg(&opts, &f, &Known::request(), |m| {
            assert!(m.buffers.is_empty(), "nothing kept of the bomb");
            let records = m.tree.find("Records").unwrap();
            assert!(records.children[2].find("Record[0]").is_some());
            ends_with_body_tags(m);
        });
    }
}

// ---------------------------------------------------------------------------------------
// Varints.

#[test]
fn varint_continuation_bits_run_to_the_end() {
    // A record whose header count is `80 80`: the continuation bits run to the end of
    // the record's bytes.
    let recs = [
        record_raw(0, None, Some(b"v"), &[0x80, 0x80]),
        record(1, None, Some(b"w"), &[]),
    ]
    .concat();
    let b = batch_v2(0, 0, 2, &recs);
    let at = produce_records_at(b.len()) + RECORDS_AT;
    let f = produce_v9(&b);
    let (errs, _) = diag(&f, &Known::request());
    assert_eq!(
        errs,
        e(&[(0, at + 7, "headerCount: varint cut by the end of input")])
    );
    with_msg(&DecodeOptions::default(), &f, &Known::request(), |m| {
        assert!(
            m.tree.find("Record[1]").is_some(),
            "the next record decodes"
        );
    });
    // The body's closing tagged-fields count, at the very end of the frame.
    let mut f =
        unhex("000000230014000600000000000000020100000000000000000000000000000000000000000000");
    let n = f.len();
    f[n - 1] = 0xff;
    f.push(0xff);
    let f = sized(f);
    let (errs, _) = diag(&f, &Known::request());
    assert_eq!(
        errs,
        e(&[(0, 0x26, "tagged_fields: varint cut by the end of input")])
    );
}

// ---------------------------------------------------------------------------------------
// Record headers.

#[test]
fn record_header_with_a_null_value_is_legal() {
    let recs = record(0, Some(b"k"), Some(b"v"), &[(Some(b"h"), None)]);
    let b = batch_v2(0, 0, 1, &recs);
    let f = produce_v9(&b);
    let (errs, warns) = diag(&f, &Known::request());
    assert!(errs.is_empty(), "{errs:?}");
    assert!(warns.is_empty(), "{warns:?}");
    with_msg(&DecodeOptions::default(), &f, &Known::request(), |m| {
        let h = m.tree.find("Header[0]").unwrap();
        assert_eq!(child(h, "headerKey").value, Value::Str("h"));
        assert_eq!(child(h, "headerValue").value, Value::Null);
    });
}

#[test]
fn record_header_with_a_null_key_is_an_error() {
    let recs = [
        record(
            0,
            None,
            Some(b"v"),
            &[(None, Some(b"x")), (Some(b"h"), Some(b"y"))],
        ),
        record(1, None, Some(b"w"), &[]),
    ]
    .concat();
    let b = batch_v2(0, 0, 2, &recs);
    let at = produce_records_at(b.len()) + RECORDS_AT;
    let f = produce_v9(&b);
    let (errs, _) = diag(&f, &Known::request());
    assert_eq!(
        errs,
        e(&[(0, at + 8, "null header key: Kafka requires a header key")])
    );
    with_msg(&DecodeOptions::default(), &f, &Known::request(), |m| {
        // its value, the next header and the next record are still read
        let h = m.tree.find("Header[0]").unwrap();
        assert_eq!(child(h, "headerValue").value, Value::Bytes(b"x"));
        assert!(m.tree.find("Header[1]").is_some());
        assert!(m.tree.find("Record[1]").is_some());
        ends_with_body_tags(m);
    });
}

#[test]
fn record_header_count_is_a_varint_not_an_int32() {
    // Two headers, counted by the varint 2 (zigzag 04): no errors.
    let recs = record(
        0,
        None,
        Some(b"v"),
        &[(Some(b"a"), Some(b"1")), (Some(b"b"), None)],
    );
    let b = batch_v2(0, 0, 1, &recs);
    let f = produce_v9(&b);
    let (errs, _) = diag(&f, &Known::request());
    assert!(errs.is_empty(), "{errs:?}");
    with_msg(&DecodeOptions::default(), &f, &Known::request(), |m| {
        let rec = m.tree.find("Record[0]").unwrap();
        assert_eq!(child(rec, "headerCount").value, Value::Int(2));
        assert_eq!(child(rec, "headerCount").length, 1);
        assert!(m.tree.find("Header[1]").is_some());
    });
    // A writer that puts an int32 count (00 00 00 01) and one header: the varint reads
    // 0 headers and the rest of the record is left over, an error inside the record.
    let mut tail = vec![0, 0, 0, 1];
    tail.extend(vbytes(Some(b"a")));
    tail.extend(vbytes(Some(b"1")));
    let rec = record_raw(0, None, Some(b"v"), &tail);
    let rec_len = rec.len() - 1;
    let recs = [rec, record(1, None, Some(b"w"), &[])].concat();
    let b = batch_v2(0, 0, 2, &recs);
    let at = produce_records_at(b.len()) + RECORDS_AT;
    let f = produce_v9(&b);
    let (errs, _) = diag(&f, &Known::request());
    let msg = format!("7 bytes after the record's fields, inside its length {rec_len}");
    assert_eq!(errs, e(&[(0, at + 8, &msg)]));
    with_msg(&DecodeOptions::default(), &f, &Known::request(), |m| {
        assert!(m.tree.find("Record[1]").is_some());
    });
}

// ---------------------------------------------------------------------------------------
// Fetch responses.

#[test]
fn fetch_response_last_batch_cut_by_max_bytes_is_a_warning() {
    let full = batch_v2(0, 0, 1, &record(0, None, Some(b"v"), &[]));
    let field = [full.clone(), full[..40].to_vec()].concat();
    let f = fetch_v4_response(&field);
    let (errs, warns) = diag(&f, &Known::response(1, 4));
    assert!(errs.is_empty(), "{errs:?}");
    let msg = format!(
        "partial batch: 40 of {} bytes, cut by the broker's max bytes",
        full.len()
    );
    assert_eq!(warns, e(&[(0, FETCH_RECORDS_AT + full.len(), &msg)]));
    with_msg(&DecodeOptions::default(), &f, &Known::response(1, 4), |m| {
        let p = m.tree.find("partial batch").unwrap();
        assert_eq!((p.offset, p.length), (FETCH_RECORDS_AT + full.len(), 40));
        assert!(m.tree.find("Record[0]").is_some());
    });
    // The same cut in a Produce request is an error, and no broker is blamed for it.
    let at = produce_records_at(field.len());
    let (errs, _) = diag(&produce_v9(&field), &Known::request());
    let msg = format!(
        "partial batch: 40 of {} bytes, the records field ends inside it",
        full.len()
    );
    assert_eq!(errs, e(&[(0, at + full.len(), &msg)]));
}

#[test]
fn fetch_response_with_null_records_is_legal() {
    let mut f = fetch_v4_response(&[]);
    f[FETCH_RECORDS_AT - 4..FETCH_RECORDS_AT].copy_from_slice(&(-1i32).to_be_bytes());
    let (errs, warns) = diag(&f, &Known::response(1, 4));
    assert!(errs.is_empty(), "{errs:?}");
    assert!(warns.is_empty(), "{warns:?}");
    with_msg(&DecodeOptions::default(), &f, &Known::response(1, 4), |m| {
        let r = m.tree.find("Records").unwrap();
        assert_eq!(r.value, Value::Null);
        assert_eq!(r.end(), f.len());
    });
}

// ---------------------------------------------------------------------------------------
// Headers and tagged fields.

#[test]
fn api_versions_response_header_v0_with_tagged_fields_by_name() {
    // ApiVersions v3 (a flexible request) answered with header v0 (no tagged byte); its
    // body carries tagged fields 0 (SupportedFeatures), 1 (FinalizedFeaturesEpoch) and
    // 3 (ZkMigrationReady), decoded by name, and an unknown tag 9. See also
    // tests/hostile.rs `api_versions_response_uses_header_v0`.
    let b = sized(unhex(
        "00000000 00000007 0000 02 0012 0000 0004 00 00000000
         04
           00 0a 02 04616263 0001 0003 00
           01 08 0000000000000005
           03 01 01
           09 02 abcd",
    ));
    let (errs, warns) = diag(&b, &Known::response(18, 3));
    assert!(errs.is_empty(), "{errs:?}");
    assert!(warns.is_empty(), "{warns:?}");
    with_msg(
        &DecodeOptions::default(),
        &b,
        &Known::response(18, 3),
        |m| {
            let h = m.tree.find("ResponseHeader").unwrap();
            assert_eq!(h.children.len(), 1, "header v0: correlation_id only");
            let sf = m.tree.find("SupportedFeatures").unwrap();
            assert_eq!(sf.children[2].value, Value::Count(1));
            assert_eq!(
                m.tree.find("Name").map(|n| n.value.clone()),
                Some(Value::Str("abc"))
            );
            assert_eq!(
                m.tree.find("FinalizedFeaturesEpoch").unwrap().children[2].value,
                Value::Int(5)
            );
            assert_eq!(
                m.tree.find("ZkMigrationReady").unwrap().children[2].value,
                Value::Bool(true)
            );
            assert!(m.tree.find("unknown tag 9").is_some());
            ends_with_tagged(m);
        },
    );
}

/// The body's last node is its tagged-field section, ending at the frame's end.
fn ends_with_tagged(m: &Message<'_>) {
    let body = m.tree.children.last().unwrap();
    let last = body.children.last().unwrap();
    assert_eq!(last.name, "tagged_fields");
    assert_eq!(last.end(), m.frame.len());
}

#[test]
fn metadata_response_with_tagged_fields() {
    // Metadata v12: an unknown tag 5 in the response header and tag 7 in the body; both
    // legal, shown as raw data under their tag numbers.
    let b = sized(unhex(
        "00000000 00000009 01 05 02 beef
         00000000 01 00 00000001 01
         01 07 03 010203",
    ));
    let (errs, warns) = diag(&b, &Known::response(3, 12));
    assert!(errs.is_empty(), "{errs:?}");
    assert!(warns.is_empty(), "{warns:?}");
    with_msg(
        &DecodeOptions::default(),
        &b,
        &Known::response(3, 12),
        |m| {
            let h = m.tree.find("ResponseHeader").unwrap();
            assert!(h.find("unknown tag 5").is_some());
            let t = m.tree.find("unknown tag 7").unwrap();
            assert_eq!(child(t, "data").value, Value::Bytes(&[1, 2, 3]));
            assert_eq!(m.tree.find("ControllerId").unwrap().value, Value::Int(1));
            ends_with_tagged(m);
        },
    );
}

#[test]
fn describe_groups_error_message_from_v6() {
    // tests/hostile.rs checks that v5 has no ErrorMessage; v6 has it, between ErrorCode
    // and GroupId.
    let b = sized(unhex(
        "00000000 00000001 00 00000000 02 000f 036f6b 0267 01 01 01 01 80000000 00 00",
    ));
    let (errs, _) = diag(&b, &Known::response(15, 6));
    assert!(errs.is_empty(), "{errs:?}");
    with_msg(
        &DecodeOptions::default(),
        &b,
        &Known::response(15, 6),
        |m| {
            let em = m.tree.find("ErrorMessage").unwrap();
            assert_eq!((em.offset, em.value.clone()), (0x10, Value::Str("ok")));
            assert_eq!(m.tree.find("GroupId").unwrap().value, Value::Str("g"));
        },
    );
}

// ---------------------------------------------------------------------------------------
// Nesting.

/// An Envelope v0 request (header v2) around `inner` (a request header and body, no size
/// prefix), with a null principal and an empty client address.
fn envelope(inner: &[u8]) -> Vec<u8> {
    let mut b = unhex("003a 0000 00000001 0000 00");
    let mut n = inner.len() as u64 + 1;
    while n >= 0x80 {
        b.push((n as u8) | 0x80);
        n >>= 7;
    }
    b.push(n as u8);
    b.extend(inner);
    b.extend([0, 1, 0]); // RequestPrincipal null, ClientHostAddress empty, tagged fields
    b
}

#[test]
fn envelopes_nested_deeper_than_the_cap() {
    // 40 Envelope requests, each the RequestData of the one around it, around a
    // DeleteTopics v6 request.
    let mut levels = vec![unhex(
        "0014 0006 00000000 0000 00 02 00 00000000000000000000000000000000 00 00000000 00",
    )];
    for _ in 0..40 {
        levels.push(envelope(levels.last().unwrap()));
    }
    let f = [
        (levels[40].len() as u32).to_be_bytes().to_vec(),
        levels[40].clone(),
    ]
    .concat();
    let (errs, _) = diag(&f, &Known::request());
    // Each level's header and body walk one level deeper than its envelope's request
    // data, so with a cap of 64 the 33rd request (counting the outermost as the 1st) is
    // the first not decoded: the error sits where its header starts, after the size
    // prefix and, per level, an 11-byte header and the RequestData length.
    let mut at = 4;
    for l in 1..=32 {
        at += 11 + uvarint_len(levels[40 - l].len() as u64 + 1);
    }
    assert_eq!(
        errs,
        e(&[(0, at, "nesting deeper than the cap of 64 levels")])
    );
    // the outer requests' remaining fields are still read, to the end of the frame
    with_msg(
        &DecodeOptions::default(),
        &f,
        &Known::request(),
        ends_with_tagged,
    );
}

#[test]
fn legacy_wrappers_nested_deeper_than_the_cap() {
    // gzip wrapper messages, each holding the next: 70 levels, with a cap of 64.
    let mut m = legacy_message(0, 1, 0, Some(b"core"));
    for _ in 0..70 {
        m = legacy_message(0, 1, 1, Some(&compress(1, &m)));
    }
    let f = fetch_v4_response(&m);
    let (errs, _) = diag(&f, &Known::response(1, 4));
    assert_eq!(errs.len(), 1, "{errs:?}");
    let (buf, off, msg) = &errs[0];
    assert_eq!(msg, "nesting deeper than the cap of 64 levels");
    assert_eq!(*off, 30, "the value of the wrapper at the cap");
    assert!(*buf > 50, "inside a deep decompressed buffer: {buf}");
}

// ---------------------------------------------------------------------------------------
// Found by fuzzing (docs/robustness.md).

#[test]
fn control_record_key_cut_short_still_tiles() {
    // frame target, run 1: a control batch whose record has a zero-length key. The key's
    // `version` could not be read; the record's remaining bytes (inside its length) were
    // in no leaf, so the tree did not tile the frame.
    let body = [0u8, 0, 0, 0, 1, 2, 3, 4]; // attributes, deltas, key length 0, 4 more bytes
    let rec = [zz(body.len() as i64), body.to_vec()].concat();
    let b = batch_v2(0, 0x20, 1, &rec);
    let at = produce_records_at(b.len()) + RECORDS_AT;
    let f = produce_v9(&b);
    let (errs, _) = diag(&f, &Known::request());
    assert_eq!(
        errs,
        e(&[
            (0, at + 5, "version: needs 2 bytes, 0 left"),
            (
                0,
                at + 5,
                "4 bytes of the record not decoded after an error"
            ),
        ])
    );
    with_msg(
        &DecodeOptions::default(),
        &f,
        &Known::request(),
        ends_with_body_tags,
    );
}

// ---------------------------------------------------------------------------------------
// A malformed frame between two good ones: all three come out, the bad one with its
// error, and `kwire read` counts it in its closing line.

const REQ_HEX: &str =
    "000000230014000600000000000000020100000000000000000000000000000000000000000000";
const RESP_HEX: &str = "000000200000000000000000000201000000000000000000000000000000000000010000";

/// A capture of one connection: three DeleteTopics v6 requests (correlation ids 1, 2,
/// 3) each answered; the second request's Topics count is 300 million.
fn capture_with_a_bad_frame() -> Vec<u8> {
    use kwire::input::pcap_out::{PcapWriter, TcpFlow};
    use std::net::{Ipv4Addr, SocketAddrV4};
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut flow = TcpFlow::new(
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092),
        [1000, 5000],
    );
    let t0 = 1_714_564_800_000_000u64;
    flow.open(&mut w, t0).unwrap();
    for corr in 1..=3i32 {
        let mut req = unhex(REQ_HEX);
        req[8..12].copy_from_slice(&corr.to_be_bytes());
        if corr == 2 {
            req[0x0f..0x14].copy_from_slice(&unhex("81c6868f01")); // Topics: 300000000
        }
        let mut resp = unhex(RESP_HEX);
        resp[4..8].copy_from_slice(&corr.to_be_bytes());
        let t = t0 + 1000 * corr as u64;
        flow.send(&mut w, true, t, &req).unwrap();
        flow.send(&mut w, false, t + 500, &resp).unwrap();
    }
    flow.close(&mut w, t0 + 10_000).unwrap();
    w.into_inner()
}

#[test]
fn malformed_frame_between_good_ones_in_a_capture() {
    use kwire::cli::read::SchemaPlausibility;
    use kwire::input::{read_capture, CaptureOptions, Event};
    use kwire::session::Session;
    use kwire::tree::Direction;
    let pcap = capture_with_a_bad_frame();
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let mut session = Session::new(&schema, &opts);
    let mut seen = Vec::new();
    let stats = read_capture(
        &pcap[..],
        &CaptureOptions::default(),
        &SchemaPlausibility(&schema),
        |ev| match ev {
            Event::Frame(f) => {
                let arena = Buffers::new();
                let (m, _) = session.decode(&f, &arena);
                fuzz::check_message(&m);
                seen.push((
                    m.direction,
                    m.correlation_id,
                    m.api_name.map(str::to_string),
                    located(m.errors()),
                ));
            }
            Event::Notice(n) => panic!("unexpected notice: {n}"),
        },
    )
    .unwrap();
    assert_eq!(stats.frames, 6);
    let reqs: Vec<_> = seen.iter().filter(|s| s.0 == Direction::Request).collect();
    assert_eq!(reqs.len(), 3);
    for (i, r) in reqs.iter().enumerate() {
        assert_eq!(r.1, Some(i as i32 + 1));
        assert_eq!(r.2.as_deref(), Some("DeleteTopics"));
    }
    assert!(reqs[0].3.is_empty() && reqs[2].3.is_empty());
    // (the size prefix is unchanged: the bad count takes five bytes where the good one
    // took one, so the rest of the frame is four bytes shorter than its elements need)
    assert_eq!(
        reqs[1].3,
        e(&[(
            0,
            0x14,
            "Topics: 300000000 elements cannot fit in the 19 bytes left"
        )])
    );
    // every response pairs with its request and decodes cleanly
    for r in seen.iter().filter(|s| s.0 == Direction::Response) {
        assert_eq!(r.2.as_deref(), Some("DeleteTopics"));
        assert!(r.3.is_empty(), "{:?}", r.3);
    }
}

#[test]
fn kwire_read_counts_the_malformed_frame() {
    let pcap = capture_with_a_bad_frame();
    let path = std::env::temp_dir().join(format!("kwire-regressions-{}.pcap", std::process::id()));
    std::fs::write(&path, &pcap).unwrap();
    let out = assert_cmd::Command::cargo_bin("kwire")
        .unwrap()
        .args(["read", "-V", "--color", "never"])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("Topics: 300000000 elements cannot fit in the 19 bytes left"),
        "{stdout}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(
            "6 messages decoded (6 shown), 1 with decode errors, 0 incomplete, 0 undecodable, \
             0 SASL tokens, 0 unanswered requests; notices: none"
        ),
        "{stderr}"
    );
}
