//! Hostile input is normal input: each case gives a partial tree with its error at the
//! byte offset where decoding stopped, and never panics.

mod common;

use common::unhex;
use kwire::decode::{decode, DecodeOptions, Known};
use kwire::schema::Schema;
use kwire::tree::Buffers;

const REQ: &str = "000000230014000600000000000000020100000000000000000000000000000000000000000000";

/// `(offset, message)` pairs.
type Located = Vec<(usize, String)>;

/// Sets the size prefix to the length that follows.
fn sized(mut b: Vec<u8>) -> Vec<u8> {
    let n = (b.len() - 4) as u32;
    b[..4].copy_from_slice(&n.to_be_bytes());
    b
}

fn errors_with(opts: &DecodeOptions, bytes: &[u8], known: &Known) -> (Located, Located) {
    let schema = Schema::embedded();
    let arena = Buffers::new();
    let m = decode(&schema, opts, &arena, bytes, known);
    common::assert_tiles(&m.tree, bytes.len());
    let e = m
        .errors()
        .into_iter()
        .map(|e| (e.offset, e.message))
        .collect();
    let w = m
        .warnings()
        .into_iter()
        .map(|e| (e.offset, e.message))
        .collect();
    (e, w)
}

fn errors(bytes: &[u8], known: &Known) -> (Located, Located) {
    errors_with(&DecodeOptions::default(), bytes, known)
}

fn e(v: &[(usize, &str)]) -> Vec<(usize, String)> {
    v.iter().map(|(o, s)| (*o, s.to_string())).collect()
}

#[test]
fn truncated_frame() {
    let b = unhex(REQ);
    let cut = &b[..30];
    let (errs, _) = errors(cut, &Known::request());
    assert_eq!(
        errs,
        e(&[
            (0, "frame truncated: size says 35 bytes, 26 present"),
            (0x10, "Topics: 1 element cannot fit in the 14 bytes left")
        ])
    );
}

#[test]
fn string_length_past_the_end() {
    // DeleteTopics v3 (not flexible): TopicNames [int32 count] of int16-length strings.
    let b = sized(unhex(
        "00000000 0014 0003 00000007 0000 00000001 7ffe 6162 00000000",
    ));
    let (errs, _) = errors(&b, &Known::request());
    assert_eq!(
        errs,
        e(&[(0x12, "TopicNames[0]: needs 32766 bytes, 6 left")])
    );
}

#[test]
fn negative_length_other_than_minus_one() {
    let b = sized(unhex(
        "00000000 0014 0003 00000007 0000 00000001 fffe 00000000",
    ));
    let (errs, _) = errors(&b, &Known::request());
    assert_eq!(errs, e(&[(0x12, "TopicNames[0]: negative length -2")]));
}

#[test]
fn array_count_far_beyond_the_bytes() {
    // 300 million topic names with 4 bytes behind them: an error, no allocation.
    let b = sized(unhex("00000000 0014 0003 00000007 0000 11e1a300 00000000"));
    let (errs, _) = errors(&b, &Known::request());
    assert_eq!(
        errs,
        e(&[(
            0x12,
            "TopicNames: 300000000 elements cannot fit in the 4 bytes left"
        )])
    );
}

#[test]
fn varint_overflow() {
    // DeleteTopics v6 with a compact array length of six continuation bytes.
    let b = sized(unhex(
        "00000000 0014 0006 00000007 0000 00 ffffffffff01 00000000 00",
    ));
    let (errs, _) = errors(&b, &Known::request());
    assert_eq!(errs, e(&[(0x0f, "varint longer than 5 bytes")]));
    // and one that runs to the end of the input
    let b = sized(unhex("00000000 0014 0006 00000007 0000 00 ffff"));
    let (errs, _) = errors(&b, &Known::request());
    assert_eq!(errs, e(&[(0x0f, "varint cut by the end of input")]));
}

#[test]
fn unknown_api_key_and_version() {
    let b = sized(unhex("00000000 03e7 0000 00000001 0000 deadbeef"));
    let (errs, _) = errors(&b, &Known::request());
    assert_eq!(errs, e(&[(0x0e, "unknown api_key 999: body shown raw")]));
    let b = sized(unhex("00000000 0014 0063 00000001 0000 deadbeef"));
    let (errs, _) = errors(&b, &Known::request());
    assert_eq!(
        errs,
        e(&[(
            0x0e,
            "DeleteTopics has no request version 99 in the schema: body shown raw"
        )])
    );
}

#[test]
fn trailing_bytes_are_a_warning() {
    let mut b = unhex(REQ);
    b.extend_from_slice(&[0xab, 0xcd]);
    let b = sized(b);
    let (errs, warns) = errors(&b, &Known::request());
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        warns,
        e(&[(
            0x27,
            "2 bytes after the end of the body (brokers ignore them)"
        )])
    );
}

#[test]
fn nesting_deeper_than_the_cap() {
    let opts = DecodeOptions {
        max_depth: 1,
        ..DecodeOptions::default()
    };
    let (errs, _) = errors_with(&opts, &unhex(REQ), &Known::request());
    assert_eq!(
        errs,
        e(&[(0x10, "nesting deeper than the cap of 1 levels")])
    );
}

#[test]
fn flexible_request_with_null_client_id_is_legal() {
    let mut b = unhex(REQ);
    b[12] = 0xff;
    b[13] = 0xff;
    let (errs, _) = errors(&b, &Known::request());
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn api_versions_response_uses_header_v0() {
    // ApiVersions v3 response: header v0 (no tagged byte), error 0, one key, throttle, tags.
    let b = sized(unhex(
        "00000000 00000007 0000 02 0012 0000 0003 00 00000000 00",
    ));
    let (errs, _) = errors(&b, &Known::response(18, 3));
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn field_only_in_later_versions_is_absent_before() {
    // DescribeGroups ErrorMessage exists from v6; a v5 response has none.
    let schema = Schema::embedded();
    let arena = Buffers::new();
    let b = sized(unhex(
        "00000000 00000001 00 00000000 02 0000 0267 01 01 01 01 01 80000000 00 00",
    ));
    let opts = DecodeOptions::default();
    let m = decode(&schema, &opts, &arena, &b, &Known::response(15, 5));
    assert!(m.tree.find("ErrorMessage").is_none());
    assert!(m.tree.find("AuthorizedOperations").is_some());
    assert!(m.errors().is_empty(), "{:?}", m.errors());
}

#[test]
fn random_frames_never_panic() {
    // A cheap deterministic fuzz: every truncation and single-byte change of the seed frames.
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    for base in [
        unhex(REQ),
        unhex("000000200000000000000000000201000000000000000000000000000000000000010000"),
    ] {
        for cut in 0..=base.len() {
            for i in 0..cut {
                for v in [0x00u8, 0x01, 0x7f, 0x80, 0xff] {
                    let mut b = base[..cut].to_vec();
                    b[i] = v;
                    for known in [Known::request(), Known::response(20, 6)] {
                        let arena = Buffers::new();
                        let m = decode(&schema, &opts, &arena, &b, &known);
                        for er in m.errors() {
                            assert!(
                                er.offset <= b.len(),
                                "error offset {} outside {} bytes",
                                er.offset,
                                b.len()
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn unsupported_api_versions_request_gets_a_v0_answer() {
    // ApiVersions v9 asked; the broker answers in v0 with UNSUPPORTED_VERSION and its range.
    let b = sized(unhex("00000000 00000003 0023 00000001 0012 0000 0004"));
    let (errs, warns) = errors(&b, &Known::response(18, 9));
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(warns, e(&[(0, "the request was ApiVersions v9; the broker answered UNSUPPORTED_VERSION with a v0 body")]));
}

#[test]
fn empty_frame_is_an_error() {
    let (errs, _) = errors(&unhex("00000000"), &Known::request());
    assert_eq!(errs, e(&[(0, "frame size 0: no header follows")]));
}

/// An ApiVersions v3 request whose body's tagged-field section holds `tags` (each
/// empty).
fn api_versions_tagged(tags: impl Iterator<Item = u32>) -> Vec<u8> {
    fn uvarint(out: &mut Vec<u8>, mut v: u32) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let tags: Vec<u32> = tags.collect();
    let mut b = vec![0; 4]; // the size prefix, set by `sized`
    b.extend(18i16.to_be_bytes()); // ApiVersions
    b.extend(3i16.to_be_bytes());
    b.extend(7i32.to_be_bytes()); // correlation_id
    b.extend(0i16.to_be_bytes()); // client_id ""
    b.push(0); // header tagged fields
    b.extend([1, 1]); // ClientSoftwareName, ClientSoftwareVersion: ""
    uvarint(&mut b, tags.len() as u32);
    for t in tags {
        uvarint(&mut b, t);
        b.push(0); // size 0
    }
    sized(b)
}

/// The values printer on a body of 30,000 unknown tags (checked for repeated keys
/// without comparing every pair), and on repeated tags (the last value in the first
/// place, as the values tree has it): the line is what the values tree serializes to.
#[test]
fn values_of_many_and_repeated_unknown_tags() {
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    for frame in [
        api_versions_tagged(10..30_010),
        api_versions_tagged([5, 9, 5, 7].into_iter()),
        api_versions_tagged((0..40).map(|i| i % 23)),
    ] {
        let arena = Buffers::new();
        let m = decode(&schema, &opts, &arena, &frame, &Known::request());
        assert_eq!(m.problem_counts(), (0, 0));
        let mut line = Vec::new();
        kwire::values::write_values(&mut line, &m);
        let tree = kwire::values::to_values(&m);
        assert!(line == serde_json::to_vec(&tree).unwrap());
        assert!(!tree["body"]["_unknown_tags"]
            .as_object()
            .unwrap()
            .is_empty());
    }
}
