//! The records decoder on its own: compression, bombs, partial batches, CRCs, control
//! batches, legacy wrappers, folding, and a proptest.

use super::*;
use crate::decode::DecodeOptions;
use crate::schema::Schema;
use crate::tree::Buffers;
use std::collections::BTreeMap;
use std::io::Write;

/// Where the records field starts in the (imaginary) frame: offsets must be absolute.
const BASE: usize = 7;
const TS: i64 = 1_714_564_800_123; // 2024-05-01T12:00:00.123Z

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

type Hdr<'b> = (Option<&'b [u8]>, Option<&'b [u8]>);

fn record(od: i64, key: Option<&[u8]>, value: Option<&[u8]>, headers: &[Hdr]) -> Vec<u8> {
    let mut b = vec![0u8];
    b.extend(zz(od * 10));
    b.extend(zz(od));
    b.extend(vbytes(key));
    b.extend(vbytes(value));
    b.extend(zz(headers.len() as i64));
    for (k, v) in headers {
        b.extend(vbytes(*k));
        b.extend(vbytes(*v));
    }
    [zz(b.len() as i64), b].concat()
}

fn three_records() -> Vec<u8> {
    [
        record(0, None, Some(b"v0"), &[]),
        record(1, Some(b"k1"), Some(b"hello"), &[(Some(b"h"), None)]),
        record(2, Some(b"k2"), None, &[(None, Some(b"x"))]),
    ]
    .concat()
}

fn batch(base_offset: i64, attrs: i16, count: i32, records: &[u8]) -> Vec<u8> {
    let mut a = Vec::new();
    a.extend(attrs.to_be_bytes());
    a.extend((count - 1).max(0).to_be_bytes());
    a.extend(TS.to_be_bytes());
    a.extend(TS.to_be_bytes());
    a.extend((-1i64).to_be_bytes());
    a.extend((-1i16).to_be_bytes());
    a.extend((-1i32).to_be_bytes());
    a.extend(count.to_be_bytes());
    a.extend(records);
    let mut b = base_offset.to_be_bytes().to_vec();
    b.extend(((9 + a.len()) as i32).to_be_bytes());
    b.extend((-1i32).to_be_bytes());
    b.push(2);
    b.extend(crc32c::crc32c(&a).to_be_bytes());
    b.extend(a);
    b
}

fn legacy(offset: i64, magic: u8, attrs: u8, key: Option<&[u8]>, value: Option<&[u8]>) -> Vec<u8> {
    let mut m = vec![magic, attrs];
    if magic == 1 {
        m.extend(TS.to_be_bytes());
    }
    for b in [key, value] {
        match b {
            None => m.extend((-1i32).to_be_bytes()),
            Some(b) => {
                m.extend((b.len() as i32).to_be_bytes());
                m.extend(b);
            }
        }
    }
    let mut out = offset.to_be_bytes().to_vec();
    out.extend(((m.len() + 4) as i32).to_be_bytes());
    out.extend(crc32fast::hash(&m).to_be_bytes());
    out.extend(m);
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn xerial(data: &[u8]) -> Vec<u8> {
    let mut x = b"\x82SNAPPY\x00".to_vec();
    x.extend(1i32.to_be_bytes());
    x.extend(1i32.to_be_bytes());
    for chunk in data.chunks(16) {
        let c = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
        x.extend((c.len() as i32).to_be_bytes());
        x.extend(c);
    }
    x
}

fn lz4(data: &[u8]) -> Vec<u8> {
    let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Checks that the leaves tile the field in buffer 0 and each decompressed buffer,
/// and that every whole-leaf `Bytes` value is the buffer's bytes at the leaf.
fn check_tiling(nodes: &[Node], len: usize, bufs: &[&[u8]], field: &[u8]) {
    let mut leaves: BTreeMap<u32, Vec<(usize, usize)>> = BTreeMap::new();
    for n in nodes {
        n.walk(&mut |x, _| {
            if x.children.is_empty() && x.length > 0 {
                leaves
                    .entry(x.buffer)
                    .or_default()
                    .push((x.offset, x.length));
                let buf: &[u8] = if x.buffer == 0 {
                    field
                } else {
                    bufs[x.buffer as usize - 1]
                };
                let base = if x.buffer == 0 { BASE } else { 0 };
                if let Value::Bytes(b) = x.value {
                    if b.len() == x.length {
                        assert_eq!(
                            b,
                            &buf[x.offset - base..x.end() - base],
                            "bytes of {}",
                            x.name
                        );
                    }
                }
            }
            for c in &x.children {
                if c.buffer == x.buffer {
                    assert!(
                        c.offset >= x.offset && c.end() <= x.end(),
                        "{} outside {}",
                        c.name,
                        x.name
                    );
                }
            }
        });
    }
    let mut expect: Vec<(u32, usize, usize)> = vec![(0, BASE, BASE + len)];
    for (i, b) in bufs.iter().enumerate() {
        expect.push((i as u32 + 1, 0, b.len()));
    }
    for (id, start, end) in expect {
        let mut at = start;
        for &(o, l) in leaves.get(&id).map(|v| v.as_slice()).unwrap_or(&[]) {
            assert_eq!(o, at, "buffer {id}: gap or overlap at {at}");
            at += l;
        }
        assert_eq!(at, end, "buffer {id}: leaves end at {at}, buffer at {end}");
    }
}

struct Out {
    errors: Vec<(u32, usize, String, String)>,
    warnings: Vec<String>,
}

fn all(nodes: &[Node]) -> Out {
    let mut o = Out {
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    for n in nodes {
        n.walk(&mut |x, _| {
            if let Some(e) = x.error() {
                o.errors
                    .push((x.buffer, x.offset, x.name.to_string(), e.to_string()));
            }
            if let Some(w) = x.warning() {
                o.warnings.push(w.to_string());
            }
        });
    }
    o
}

/// Decodes `field` at offset BASE, checks the tiling, then runs `f`.
fn run_with(field: &[u8], partial_ok: bool, opts: DecodeOptions, f: impl FnOnce(&[Node], &Out)) {
    let schema = Schema::embedded();
    let arena = Buffers::new();
    let mut cx = Cx::new(&schema, &arena, &opts);
    let mut r = Reader::new(field, BASE, 0, &arena);
    let nodes = decode_records(&mut cx, &mut r, partial_ok);
    assert_eq!(r.left(), 0);
    check_tiling(&nodes, field.len(), &cx.buffers, field);
    let o = all(&nodes);
    f(&nodes, &o);
}

fn run(field: &[u8], partial_ok: bool, f: impl FnOnce(&[Node], &Out)) {
    run_with(field, partial_ok, DecodeOptions::default(), f)
}

fn child<'n, 'a>(n: &'n Node<'a>, name: &str) -> &'n Node<'a> {
    n.children
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} in {}", n.name))
}

fn ann<'n>(n: &'n Node) -> &'n str {
    n.annotation.unwrap_or("")
}

/// The values of the records (v2) or innermost messages (legacy), in order.
fn values<'a>(nodes: &[Node<'a>]) -> Vec<Option<Vec<u8>>> {
    let mut out = Vec::new();
    for n in nodes {
        n.walk(&mut |x, _| {
            let legacy_plain =
                x.name == "Message" && !x.children.iter().any(|c| c.name.contains("decompressed"));
            if x.name.starts_with("Record[") || legacy_plain {
                if let Some(v) = x.children.iter().find(|c| c.name == "value") {
                    out.push(match v.value {
                        Value::Bytes(b) => Some(b.to_vec()),
                        _ => None,
                    });
                }
            }
        });
    }
    out
}

fn three_values() -> Vec<Option<Vec<u8>>> {
    vec![Some(b"v0".to_vec()), Some(b"hello".to_vec()), None]
}

#[test]
fn empty_batch_is_61_bytes_with_a_valid_crc() {
    let b = batch(0, 0, 0, &[]);
    assert_eq!(b.len(), 61);
    assert_eq!(i32::from_be_bytes(b[8..12].try_into().unwrap()), 49);
    run(&b, false, |nodes, o| {
        assert_eq!(nodes.len(), 1);
        let n = &nodes[0];
        assert_eq!(
            (n.name, n.ty, n.region, n.offset, n.length),
            ("RecordBatch", "RecordBatch", Region::RecordBatch, BASE, 61)
        );
        assert_eq!(ann(child(n, "crc")), "valid");
        assert_eq!(child(n, "crc").offset, BASE + 17);
        assert_eq!(ann(child(n, "partitionLeaderEpoch")), "none");
        assert_eq!(ann(child(n, "producerId")), "none");
        assert_eq!(ann(child(n, "baseTimestamp")), "2024-05-01T12:00:00.123Z");
        assert!(ann(child(n, "attributes")).contains("compression=none"));
        assert!(o.errors.is_empty() && o.warnings.is_empty());
    });
}

#[test]
fn three_records_with_null_key_and_header_cases() {
    let b = batch(100, 0, 3, &three_records());
    run(&b, false, |nodes, o| {
        let recs = child(&nodes[0], "Records");
        assert_eq!(recs.children.len(), 3);
        assert_eq!(recs.value, Value::Count(3));
        let r0 = &recs.children[0];
        assert_eq!((r0.name, r0.region), ("Record[0]", Region::Record));
        assert_eq!(child(r0, "key").value, Value::Null);
        assert_eq!(ann(child(r0, "key")), "varint len=-1, null");
        assert_eq!(ann(child(r0, "value")), "varint len=2");
        let r1 = &recs.children[1];
        assert_eq!(ann(child(r1, "offsetDelta")), "offset 101");
        assert_eq!(ann(child(r1, "timestampDelta")), "2024-05-01T12:00:00.133Z");
        let h = child(r1, "Header[0]");
        assert_eq!(child(h, "headerKey").value, Value::Str("h"));
        assert_eq!(child(h, "headerValue").value, Value::Null);
        assert!(h.error().is_none() && child(h, "headerValue").error().is_none());
        let h2 = child(&recs.children[2], "Header[0]");
        let k = child(h2, "headerKey");
        assert!(k.error().unwrap().contains("null header key"));
        assert_eq!(o.errors.len(), 1, "{:?}", o.errors);
        assert_eq!(o.errors[0].1, k.offset);
        assert_eq!(ann(child(&nodes[0], "crc")), "valid");
    });
    assert_eq!(
        {
            let mut v = None;
            run(&b, false, |nodes, _| v = Some(values(nodes)));
            v.unwrap()
        },
        three_values()
    );
}

#[test]
fn each_compression_decodes_into_a_new_buffer() {
    let recs = three_records();
    let cases: Vec<(i16, &str, Vec<u8>)> = vec![
        (1, "gzip", gzip(&recs)),
        (
            2,
            "snappy",
            snap::raw::Encoder::new().compress_vec(&recs).unwrap(),
        ),
        (2, "snappy", xerial(&recs)),
        (3, "lz4", lz4(&recs)),
        (4, "zstd", zstd::encode_all(&recs[..], 3).unwrap()),
    ];
    for (attrs, name, data) in cases {
        // a compressed batch, then a plain one: both in the same field
        let field = [batch(0, attrs, 3, &data), batch(3, 0, 3, &recs)].concat();
        run(&field, false, |nodes, o| {
            assert!(o.errors.len() == 2, "{name}: {:?}", o.errors); // the two null header keys
            let b = &nodes[0];
            let comp = child(b, "compressed records");
            assert!(comp.children.is_empty() && comp.buffer == 0);
            let a = ann(comp);
            assert!(
                a.starts_with(&format!(
                    "{name}, {} B -> {} B, buffer 1",
                    data.len(),
                    recs.len()
                )),
                "{a}"
            );
            let d = child(b, "Records (decompressed)");
            assert_eq!((d.buffer, d.offset, d.length), (1, 0, recs.len()));
            assert!(d.description.unwrap().contains("decompressed buffer 1"));
            assert_eq!(d.children.len(), 3);
            d.walk(&mut |x, _| assert_eq!(x.buffer, 1));
            assert_eq!(values(&nodes[..1]), three_values());
            assert_eq!(values(&nodes[1..]), three_values());
        });
    }
}

#[test]
fn corrupt_lz4_is_an_error_on_the_compressed_leaf_and_the_next_batch_decodes() {
    let recs = three_records();
    let mut data = lz4(&recs);
    // a block size past the frame's maximum
    data[7..11].copy_from_slice(&0x0fff_ffffu32.to_le_bytes());
    let field = [batch(0, 3, 3, &data), batch(3, 0, 3, &recs)].concat();
    run(&field, false, |nodes, o| {
        let comp = child(&nodes[0], "compressed records");
        assert!(comp.error().is_some());
        assert_eq!(o.errors[0].2, "compressed records");
        assert_eq!(values(&nodes[1..]), three_values());
    });
}

#[test]
fn bombs_stop_at_the_cap() {
    let big = vec![0u8; 1 << 20];
    for (attrs, data) in [
        (1i16, gzip(&big)),
        (4, zstd::encode_all(&big[..], 3).unwrap()),
    ] {
        let field = batch(0, attrs, 1, &data);
        let opts = DecodeOptions {
            max_decompressed: 4096,
            ..DecodeOptions::default()
        };
        run_with(&field, false, opts, |nodes, o| {
            assert_eq!(o.errors.len(), 1);
            let comp = child(&nodes[0], "compressed records");
            assert!(
                comp.error().unwrap().contains("cap of 4096 bytes"),
                "{:?}",
                comp.error()
            );
        });
    }
}

#[test]
fn huge_record_count_is_an_error_not_an_allocation() {
    let field = batch(0, 0, 300_000_000, &[1u8; 10]);
    run(&field, false, |nodes, o| {
        let c = child(&nodes[0], "recordsCount");
        assert!(c.error().unwrap().contains("300000000"), "{:?}", c.error());
        assert!(!o.errors.is_empty());
    });
    // compressed: checked against the decompressed size
    let field = batch(0, 1, 300_000_000, &gzip(&[1u8; 10]));
    run(&field, false, |nodes, _| {
        assert!(child(&nodes[0], "recordsCount").error().is_some());
    });
}

#[test]
fn varint_running_to_the_end() {
    // the record length itself
    let field = batch(0, 0, 1, &[0x80, 0x80, 0x80]);
    run(&field, false, |nodes, o| {
        let recs = child(&nodes[0], "Records");
        let l = child(&recs.children[0], "length");
        assert!(l.error().unwrap().contains("varint cut"), "{:?}", l.error());
        // and the count says more than 3 bytes can hold
        assert_eq!(o.errors.len(), 2, "{:?}", o.errors);
    });
    // a key length inside a record
    let field = batch(0, 0, 1, &[14, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    run(&field, false, |nodes, o| {
        let rec = &child(&nodes[0], "Records").children[0];
        assert!(child(rec, "key").error().unwrap().contains("varint cut"));
        assert_eq!(o.errors.len(), 1, "{:?}", o.errors);
    });
}

#[test]
fn legacy_v0_and_v1_plain() {
    let field = [
        legacy(0, 0, 0, None, Some(b"zero")),
        legacy(1, 0, 0, Some(b"k"), Some(b"one")),
        legacy(2, 1, 0, Some(b"k"), Some(b"two")),
        legacy(3, 1, 0, None, None),
    ]
    .concat();
    run(&field, false, |nodes, o| {
        assert!(o.errors.is_empty(), "{:?}", o.errors);
        assert_eq!(nodes.len(), 4);
        assert_eq!(nodes[0].ty, "LegacyRecord v0");
        assert_eq!(nodes[2].ty, "LegacyRecord v1");
        assert_eq!(ann(child(&nodes[0], "crc")), "valid");
        assert_eq!(
            ann(child(&nodes[2], "timestamp")),
            "2024-05-01T12:00:00.123Z"
        );
        assert_eq!(ann(child(&nodes[1], "key")), "int32 len=1");
        assert_eq!(
            values(nodes),
            vec![
                Some(b"zero".to_vec()),
                Some(b"one".to_vec()),
                Some(b"two".to_vec()),
                None
            ]
        );
    });
}

#[test]
fn legacy_gzip_wrappers_v0_and_v1_and_the_depth_cap() {
    for magic in [0u8, 1] {
        let inner = [
            legacy(0, magic, 0, None, Some(b"a")),
            legacy(1, magic, 0, None, Some(b"b")),
        ]
        .concat();
        let field = legacy(1, magic, 1, None, Some(&gzip(&inner)));
        run(&field, false, |nodes, o| {
            assert!(o.errors.is_empty(), "{:?}", o.errors);
            let d = child(&nodes[0], "Messages (decompressed)");
            assert_eq!((d.buffer, d.length, d.children.len()), (1, inner.len(), 2));
            assert_eq!(
                values(nodes),
                vec![Some(b"a".to_vec()), Some(b"b".to_vec())]
            );
        });
        // a wrapper in a wrapper, with max_depth 1
        let outer = legacy(1, magic, 1, None, Some(&gzip(&field)));
        let opts = DecodeOptions {
            max_depth: 1,
            ..DecodeOptions::default()
        };
        run_with(&outer, false, opts, |_, o| {
            assert_eq!(o.errors.len(), 1, "{:?}", o.errors);
            assert_eq!(o.errors[0].0, 1, "in buffer 1");
            assert_eq!(o.errors[0].3, "nesting deeper than the cap of 1 levels");
        });
    }
    // legacy snappy (xerial) and lz4
    let inner = [
        legacy(0, 1, 0, None, Some(b"a")),
        legacy(1, 1, 0, None, Some(b"b")),
    ]
    .concat();
    for (attrs, data) in [(2u8, xerial(&inner)), (3, lz4(&inner))] {
        run(
            &legacy(1, 1, attrs, None, Some(&data)),
            false,
            |nodes, o| {
                assert!(o.errors.is_empty(), "{:?}", o.errors);
                assert_eq!(
                    values(nodes),
                    vec![Some(b"a".to_vec()), Some(b"b".to_vec())]
                );
            },
        );
    }
}

#[test]
fn mixed_v1_and_v2() {
    let field = [
        legacy(0, 1, 0, None, Some(b"old")),
        batch(1, 0, 3, &three_records()),
        legacy(4, 0, 0, None, Some(b"older")),
    ]
    .concat();
    run(&field, false, |nodes, o| {
        assert_eq!(o.errors.len(), 1); // the null header key
        let names: Vec<_> = nodes.iter().map(|n| n.name.to_string()).collect();
        assert_eq!(names, ["Message", "RecordBatch", "Message"]);
        let mut want = vec![Some(b"old".to_vec())];
        want.extend(three_values());
        want.push(Some(b"older".to_vec()));
        assert_eq!(values(nodes), want);
    });
}

#[test]
fn partial_last_batch() {
    let full = batch(0, 0, 3, &three_records());
    let field = [full.clone(), full[..40].to_vec()].concat();
    run(&field, true, |nodes, o| {
        assert_eq!(o.errors.len(), 1); // the null header key of the whole batch
        let p = nodes.last().unwrap();
        assert_eq!(
            (p.name, p.offset, p.length),
            ("partial batch", BASE + full.len(), 40)
        );
        assert!(p.error().is_none());
        let w = p.warning().unwrap();
        assert_eq!(
            w,
            format!(
                "partial batch: 40 of {} bytes, cut by the broker's max bytes",
                full.len()
            )
        );
    });
    run(&field, false, |nodes, o| {
        assert_eq!(o.errors.len(), 2);
        assert!(nodes
            .last()
            .unwrap()
            .error()
            .unwrap()
            .starts_with("partial batch: 40 of"));
        assert!(o.warnings.is_empty());
    });
    // fewer than 12 bytes
    run(&[0u8; 5], true, |nodes, o| {
        assert!(o.errors.is_empty() && o.warnings.len() == 1);
        assert_eq!(nodes[0].length, 5);
    });
    // a cut legacy message
    let m = legacy(0, 0, 0, None, Some(b"zero"));
    run(&m[..m.len() - 1], true, |_, o| {
        assert!(o.errors.is_empty() && o.warnings.len() == 1)
    });
}

#[test]
fn invalid_crc_is_an_error_at_the_crc_leaf() {
    let mut b = batch(0, 0, 3, &three_records());
    b[20] ^= 1;
    let stored = u32::from_be_bytes(b[17..21].try_into().unwrap());
    run(&b, false, |nodes, o| {
        let crc = child(&nodes[0], "crc");
        assert_eq!(crc.value, Value::UInt(stored as u64));
        assert!(ann(crc).starts_with("invalid, computed 0x"));
        let e = o.errors.iter().find(|e| e.2 == "crc").unwrap();
        assert_eq!(e.1, BASE + 17);
    });
    let mut m = legacy(0, 1, 0, None, Some(b"x"));
    m[15] ^= 1;
    run(&m, false, |_, o| {
        assert_eq!(o.errors.len(), 1);
        assert_eq!((o.errors[0].1, o.errors[0].2.as_str()), (BASE + 12, "crc"));
    });
}

#[test]
fn control_batch_markers() {
    let mut key = 0i16.to_be_bytes().to_vec();
    key.extend(1i16.to_be_bytes()); // COMMIT
    let mut val = 0i16.to_be_bytes().to_vec();
    val.extend(7i32.to_be_bytes());
    let mut lc_key = 0i16.to_be_bytes().to_vec();
    lc_key.extend(2i16.to_be_bytes()); // LEADER_CHANGE
                                       // LeaderChangeMessage v0 (flexible): LeaderId 1, Voters [], GrantingVoters [], no
                                       // tagged fields
    let lc_val = [0u8, 0, 0, 0, 0, 1, 1, 1, 0];
    let recs = [
        record(0, Some(&key), Some(&val), &[]),
        record(1, Some(&lc_key), Some(&lc_val), &[]),
    ]
    .concat();
    let field = batch(0, 0x30, 2, &recs);
    run(&field, false, |nodes, o| {
        assert!(o.errors.is_empty(), "{:?}", o.errors);
        assert!(ann(child(&nodes[0], "attributes")).contains("isControlBatch=true"));
        let rs = child(&nodes[0], "Records");
        let k = child(&rs.children[0], "key");
        assert_eq!((k.ty, ann(k)), ("ControlRecordKey", "COMMIT"));
        assert_eq!(ann(child(k, "type")), "COMMIT");
        let v = child(&rs.children[0], "value");
        assert_eq!(v.ty, "EndTxnMarker");
        assert_eq!(child(v, "coordinatorEpoch").value, Value::Int(7));
        let v = child(&rs.children[1], "value");
        assert_eq!(v.ty, "LeaderChangeMessage");
        let data = child(v, "LeaderChangeMessage");
        assert_eq!(data.offset, child(v, "length").end());
        assert_eq!(data.find("Version").unwrap().value, Value::Int(0));
        assert_eq!(data.find("LeaderId").unwrap().value, Value::Int(1));
    });
}

#[test]
fn agrees_with_the_kafka_protocol_crate() {
    use bytes::Bytes;
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let mut recs = Vec::new();
    for i in 0..5i64 {
        let mut headers = kafka_protocol::indexmap::IndexMap::new();
        headers.insert(
            StrBytes::from_static_str("h"),
            Some(Bytes::from_static(b"hv")),
        );
        recs.push(Record {
            transactional: false,
            control: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: 10 + i,
            sequence: -1,
            timestamp: TS + i,
            key: (i % 2 == 0).then(|| Bytes::from(format!("key{i}"))),
            value: Some(Bytes::from(format!("value number {i}").repeat(3))),
            headers,
        });
    }
    let want: Vec<_> = recs
        .iter()
        .map(|r| r.value.as_ref().map(|v| v.to_vec()))
        .collect();
    for version in [0i8, 1, 2] {
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            // the crate writes neither for message sets
            if version < 2 && matches!(compression, Compression::Zstd | Compression::Lz4) {
                continue;
            }
            let mut recs = recs.clone();
            if version < 2 {
                recs.iter_mut().for_each(|r| r.headers.clear());
            }
            let mut buf = bytes::BytesMut::new();
            let opts = RecordEncodeOptions {
                version,
                compression,
            };
            RecordBatchEncoder::encode(&mut buf, &recs, &opts).unwrap();
            run(&buf, false, |nodes, o| {
                assert!(
                    o.errors.is_empty(),
                    "v{version} {compression:?}: {:?}",
                    o.errors
                );
                assert_eq!(values(nodes), want, "v{version} {compression:?}");
            });
        }
    }
}

#[test]
fn time_format() {
    assert_eq!(format_millis(0).unwrap(), "1970-01-01T00:00:00.000Z");
    assert_eq!(format_millis(TS).unwrap(), "2024-05-01T12:00:00.123Z");
    assert_eq!(
        format_millis(951_782_400_000).unwrap(),
        "2000-02-29T00:00:00.000Z"
    );
    assert_eq!(format_millis(-1).unwrap(), "1969-12-31T23:59:59.999Z");
    assert!(format_millis(i64::MAX).is_none());
    assert!(format_millis(i64::MIN).is_none());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn hostile_bytes_never_panic_and_tile(
        cut in 0usize..400,
        flips in proptest::collection::vec((0usize..400, 0u8..255), 0..6),
        codec in 0i16..5,
    ) {
        let recs = three_records();
        let data = match codec {
            1 => gzip(&recs),
            2 => xerial(&recs),
            3 => lz4(&recs),
            4 => zstd::encode_all(&recs[..], 3).unwrap(),
            _ => recs.clone(),
        };
        let mut field = [legacy(0, 1, 0, None, Some(b"x")), batch(0, codec, 3, &data), batch(3, 0, 3, &recs)].concat();
        for (at, x) in flips {
            let n = field.len();
            field[at % n] ^= x;
        }
        field.truncate(cut.max(1).min(field.len()));
        run(&field, true, |_, _| {});
        run(&field, false, |_, _| {});
    }
}

/// A record with `key`, `value` and headers, as bytes, from parts that may be
/// out of range (negative lengths, huge counts).
fn raw_record(
    len_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(i64, Option<&[u8]>)],
    count_delta: i64,
) -> Vec<u8> {
    let mut body = vec![0u8];
    body.extend(zz(5));
    body.extend(zz(1));
    body.extend(vbytes(key));
    body.extend(vbytes(value));
    body.extend(zz(headers.len() as i64 + count_delta));
    for (klen, v) in headers {
        body.extend(zz(*klen));
        if *klen > 0 {
            body.extend(std::iter::repeat_n(b'k', *klen as usize));
        }
        body.extend(vbytes(*v));
    }
    let mut out = zz(body.len() as i64 + len_delta);
    out.extend(body);
    out
}

#[test]
fn clean_record_check_accepts_clean_records_and_refuses_faults() {
    let ok = raw_record(0, Some(b"k"), None, &[(3, Some(b"v")), (2, None)], 0);
    assert_eq!(clean_record_len(&ok), Some(ok.len()));
    // A null header key (Kafka forbids it), a length past the end, a header count
    // one too many, bytes left inside the length: each sends the record to the
    // full decoder.
    for bad in [
        raw_record(0, None, None, &[(-1, Some(b"v"))], 0),
        raw_record(1, None, None, &[], 0),
        raw_record(0, None, None, &[(1, None)], 1),
        raw_record(-1, None, Some(b"xy"), &[], 0),
    ] {
        assert_eq!(clean_record_len(&bad), None, "{bad:02x?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// The summary's record check never calls a record clean that the full decoder
    /// finds fault with, and covers the bytes the full decoder reads.
    #[test]
    fn clean_record_check_agrees_with_the_full_decoder(
        len_delta in -3i64..3,
        key in proptest::option::of(proptest::collection::vec(0u8..255, 0..6)),
        value in proptest::option::of(proptest::collection::vec(0u8..255, 0..6)),
        headers in proptest::collection::vec((-2i64..4, proptest::option::of(proptest::collection::vec(0u8..255, 0..4))), 0..3),
        count_delta in -1i64..2,
        flips in proptest::collection::vec((0usize..64, 0u8..255), 0..3),
        cut in 1usize..80,
    ) {
        let hs: Vec<(i64, Option<&[u8]>)> = headers.iter().map(|(k, v)| (*k, v.as_deref())).collect();
        let mut b = raw_record(len_delta, key.as_deref(), value.as_deref(), &hs, count_delta);
        for (at, x) in flips {
            let n = b.len();
            b[at % n] ^= x;
        }
        b.truncate(cut.min(b.len()));
        let bcx = BatchCx { base_offset: 0, base_timestamp: 0, log_append_time: false, control: false };
        let schema = crate::schema::Schema::embedded();
        let arena = Buffers::new();
        let opts = DecodeOptions::default();
        let mut cx = Cx::new(&schema, &arena, &opts);
        let mut r = Reader::new(&b, 0, 0, &arena);
        let n = decode_record(&mut cx, &mut r, 0, &bcx);
        let mut problems = 0;
        n.walk(&mut |x, _| problems += usize::from(x.error().is_some() || x.warning().is_some()));
        if let Some(len) = clean_record_len(&b) {
            proptest::prop_assert_eq!(problems, 0, "clean by the check, not by the decoder: {:02x?}", b);
            proptest::prop_assert_eq!(len, r.pos);
        }
    }
}

/// The Fetch v0 responses of kafka-rust's test data: values must equal the companion
/// text's lines.
#[test]
fn kafka_rust_fetch_v0_captures() {
    let Some(shared) = std::env::var_os("KWIRE_SHARED") else {
        if std::env::var("KWIRE_NO_SKIP").as_deref() == Ok("1") {
            panic!("KWIRE_SHARED not set and KWIRE_NO_SKIP=1");
        }
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            concat!(module_path!(), ": skipped: KWIRE_SHARED not set\n").as_bytes(),
        );
        return;
    };
    let dir = std::path::Path::new(&shared).join("captures/public/kafka-rust__kafka-rust");
    let files = [
        ("fetch1.mytopic.1p.nocompression.kafka.0821", "fetch1.txt"),
        ("fetch1.mytopic.1p.gzip.kafka.0821", "fetch1.txt"),
        ("fetch1.mytopic.1p.snappy.kafka.0821", "fetch1.txt"),
        ("fetch1.mytopic.1p.snappy.kafka.0822", "fetch1.txt"),
        ("fetch2.mytopic.nocompression.kafka.0900", "fetch2.txt"),
        (
            "fetch2.mytopic.nocompression.invalid_crc.kafka.0900",
            "fetch2.txt",
        ),
    ];
    // snappy-java's stream framing on its own
    let chunked = std::fs::read(dir.join("fetch1.snappy.chunked.4k")).unwrap();
    let d = compress::decompress(Codec::Snappy, &chunked, 1 << 20, false).unwrap();
    assert_eq!(d.data, std::fs::read(dir.join("fetch1.txt")).unwrap());
    assert!(d.note.unwrap().starts_with("xerial framing"));
    for (file, txt) in files {
        let body = std::fs::read(dir.join(file)).unwrap();
        let text = std::fs::read_to_string(dir.join(txt)).unwrap();
        let lines: Vec<Option<Vec<u8>>> =
            text.lines().map(|l| Some(l.as_bytes().to_vec())).collect();
        // Fetch v0 response: correlation_id, [topic, [partition, error_code,
        // high_watermark, records]]
        let be32 = |p: usize| i32::from_be_bytes(body[p..p + 4].try_into().unwrap());
        let mut p = 4;
        let topics = be32(p);
        p += 4;
        let mut got = Vec::new();
        let mut errors = Vec::new();
        for _ in 0..topics {
            let tl = i16::from_be_bytes([body[p], body[p + 1]]) as usize;
            p += 2 + tl;
            let parts = be32(p);
            p += 4;
            for _ in 0..parts {
                p += 4 + 2 + 8;
                let n = be32(p) as usize;
                p += 4;
                let field = &body[p..p + n];
                let schema = Schema::embedded();
                let arena = Buffers::new();
                let opts = DecodeOptions::default();
                let mut cx = Cx::new(&schema, &arena, &opts);
                let mut r = Reader::new(field, p, 0, &arena);
                let nodes = decode_records(&mut cx, &mut r, true);
                got.extend(values(&nodes));
                errors.extend(all(&nodes).errors.into_iter().map(|e| (e.1, e.2, e.3)));
                p += n;
            }
        }
        assert_eq!(p, body.len(), "{file}: framing");
        assert!(!got.is_empty(), "{file}");
        assert_eq!(got, lines[..got.len()], "{file}");
        if file.contains("invalid_crc") {
            assert_eq!(errors.len(), 1, "{file}: {errors:?}");
            assert_eq!(errors[0].1, "crc");
            assert!(errors[0].2.contains("CRC-32 mismatch"));
        } else {
            assert!(errors.is_empty(), "{file}: {errors:?}");
            if txt == "fetch1.txt" {
                assert_eq!(got.len(), lines.len(), "{file}: all lines");
            }
        }
    }
}
