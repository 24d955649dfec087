//! criterion benchmarks of kwire's hot paths: primitive parsing, decoding Produce and
//! Fetch frames with many records, TCP reassembly (`read_capture` over an in-memory
//! pcap), and text, JSON and summary rendering; TLS: a TLS lab capture read without its
//! keys, decrypted, and decrypted and decoded (the cost of decryption beside decoding).
//! `cargo bench`; see docs/benchmarks.md.
//!
//! Every input is built here with kwire's own encoder and pcap writer, deterministically,
//! but the TLS one: encrypted traffic needs real session keys, so it is the lab's
//! `captures/lab/tls/tls13_kp_aes256gcm.pcapng` with its key log.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kwire::cli::read::SchemaPlausibility;
use kwire::decode::{decode, DecodeOptions, Known};
use kwire::encode::records::encode_records;
use kwire::encode::{encode, to_hex};
use kwire::input::pcap_out::{PcapWriter, TcpFlow};
use kwire::input::{read_capture, CaptureOptions, Event};
use kwire::render::{self, Format, RenderOptions};
use kwire::schema::Schema;
use kwire::tree::Buffers;
use kwire::wire;
use serde_json::{json, Value};
use std::hint::black_box;
use std::net::SocketAddrV4;

/// A record batch of `n` records with JSON-ish values of about `size` bytes.
fn batch(n: usize, size: usize, codec: &str) -> Vec<u8> {
    let records: Vec<Value> = (0..n)
        .map(|i| {
            let v = format!(
                "{{\"id\":{i},\"user\":\"user-{}\",\"event\":\"page_view\",\"note\":\"{}\"}}",
                i * 7919 % 100_000,
                "lorem ipsum dolor sit amet ".repeat(size / 27 + 1)
            );
            json!({"attributes": 0, "timestampDelta": i, "offsetDelta": i,
                   "key": to_hex(format!("order-{}", 100_000 + i).as_bytes()),
                   "value": to_hex(&v.as_bytes()[..size.min(v.len())]),
                   "headers": if i % 3 == 0 { json!([{"key": "trace-id", "value": "0102030405060708"}]) } else { json!([]) }})
        })
        .collect();
    let b = json!([{"magic": 2, "baseOffset": 1000, "partitionLeaderEpoch": 17,
        "attributes": {"compression": codec}, "lastOffsetDelta": n - 1,
        "baseTimestamp": 1_714_557_600_000i64, "maxTimestamp": 1_714_557_600_000i64 + n as i64,
        "producerId": 4242, "producerEpoch": 0, "baseSequence": 0, "records": records}]);
    encode_records(&b, "records").expect("records encode")
}

fn produce(schema: &Schema, records: &[u8]) -> Vec<u8> {
    encode(
        schema,
        &json!({"kind": "request", "api_key": 0, "api_version": 8,
            "header": {"correlation_id": 7, "client_id": "bench-producer"},
            "body": {"TransactionalId": null, "Acks": -1, "TimeoutMs": 30000,
                "TopicData": [{"Name": "orders", "PartitionData": [{"Index": 3, "Records": to_hex(records)}]}]}}),
    )
    .expect("produce encodes")
}

fn fetch_response(schema: &Schema, records: &[u8]) -> Vec<u8> {
    encode(
        schema,
        &json!({"kind": "response", "api_key": 1, "api_version": 11,
            "header": {"correlation_id": 8},
            "body": {"ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": 99, "Responses": [
                {"Topic": "orders", "Partitions": [{"PartitionIndex": 3, "ErrorCode": 0,
                    "HighWatermark": 5000, "LastStableOffset": 5000, "LogStartOffset": 0,
                    "AbortedTransactions": null, "PreferredReadReplica": -1,
                    "Records": to_hex(records)}]}]}}),
    )
    .expect("fetch encodes")
}

fn heartbeat(schema: &Schema, corr: i32) -> Vec<u8> {
    encode(
        schema,
        &json!({"kind": "request", "api_key": 12, "api_version": 4,
            "header": {"correlation_id": corr, "client_id": "bench-consumer"},
            "body": {"GroupId": "order-processor", "GenerationId": 12,
                     "MemberId": "bench-consumer-0001", "GroupInstanceId": null}}),
    )
    .expect("heartbeat encodes")
}

fn heartbeat_response(schema: &Schema, corr: i32) -> Vec<u8> {
    encode(
        schema,
        &json!({"kind": "response", "api_key": 12, "api_version": 4,
            "header": {"correlation_id": corr}, "body": {"ThrottleTimeMs": 0, "ErrorCode": 0}}),
    )
    .expect("heartbeat response encodes")
}

fn wire_primitives(c: &mut Criterion) {
    // 4096 int32s, varints and compact strings back to back.
    let mut ints = Vec::new();
    let mut varints = Vec::new();
    let mut strings = Vec::new();
    for i in 0..4096i32 {
        ints.extend_from_slice(&(i * 7919).to_be_bytes());
        let mut z = ((i * 7919) << 1 ^ (i * 7919) >> 31) as u32;
        loop {
            if z < 0x80 {
                varints.push(z as u8);
                break;
            }
            varints.push((z as u8 & 0x7f) | 0x80);
            z >>= 7;
        }
        let s = format!("topic-{i}");
        strings.push(s.len() as u8 + 1);
        strings.extend_from_slice(s.as_bytes());
    }
    let mut g = c.benchmark_group("wire");
    g.throughput(Throughput::Elements(4096));
    g.bench_function("int32 x4096", |b| {
        b.iter(|| {
            let mut i = black_box(&ints[..]);
            let mut sum = 0i64;
            while let Ok((rest, v)) = wire::int32(i) {
                sum += v as i64;
                i = rest;
            }
            sum
        })
    });
    g.bench_function("varint x4096", |b| {
        b.iter(|| {
            let mut i = black_box(&varints[..]);
            let mut sum = 0i64;
            while let Ok((rest, v)) = wire::varint(i) {
                sum += v as i64;
                i = rest;
            }
            sum
        })
    });
    g.bench_function("compact string x4096", |b| {
        b.iter(|| {
            let mut i = black_box(&strings[..]);
            let mut n = 0usize;
            while let Ok((rest, (_, s))) = wire::sized(wire::LenPrefix::Compact)(i) {
                n += s.map_or(0, <[u8]>::len);
                i = rest;
            }
            n
        })
    });
    g.finish();
}

fn decode_frames(c: &mut Criterion) {
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let plain = batch(500, 200, "none");
    let lz4 = batch(500, 200, "lz4");
    let frames = [
        (
            "heartbeat v4 request",
            heartbeat(&schema, 1),
            Known::request(),
        ),
        (
            "produce v8 500 records",
            produce(&schema, &plain),
            Known::request(),
        ),
        (
            "produce v8 500 records lz4",
            produce(&schema, &lz4),
            Known::request(),
        ),
        (
            "fetch v11 response 500 records",
            fetch_response(&schema, &plain),
            Known::response(1, 11),
        ),
    ];
    let mut g = c.benchmark_group("decode");
    for (name, frame, known) in &frames {
        g.throughput(Throughput::Bytes(frame.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| {
                let arena = Buffers::new();
                let m = decode(&schema, &opts, &arena, black_box(frame), known);
                black_box(m.tree.children.len())
            })
        });
    }
    g.finish();
}

/// A capture of `conns` connections, each with `exchanges` heartbeat exchanges and one
/// Produce of 500 records, interleaved connection by connection.
fn capture(schema: &Schema, conns: u16, exchanges: i32) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new()).expect("pcap in memory");
    let produce = produce(schema, &batch(500, 200, "none"));
    let mut flows: Vec<TcpFlow> = (0..conns)
        .map(|i| {
            TcpFlow::new(
                SocketAddrV4::new([10, 1, 0, 2].into(), 40_000 + i),
                SocketAddrV4::new([10, 0, 0, 11].into(), 9092),
                [1000 * u32::from(i), 7],
            )
        })
        .collect();
    let mut t = 1_714_557_600_000_000u64;
    for f in &mut flows {
        f.open(&mut w, t).expect("write");
        t += 200;
    }
    for k in 0..exchanges {
        for f in &mut flows {
            f.send(&mut w, true, t, &heartbeat(schema, k))
                .expect("write");
            f.send(&mut w, false, t + 300, &heartbeat_response(schema, k))
                .expect("write");
            t += 400;
        }
    }
    for f in &mut flows {
        f.send(&mut w, true, t, &produce).expect("write");
        t += 5000;
        f.close(&mut w, t).expect("write");
    }
    w.into_inner()
}

fn reassembly(c: &mut Criterion) {
    let schema = Schema::embedded();
    let pcap = capture(&schema, 32, 200);
    let plaus = SchemaPlausibility(&schema);
    let opts = CaptureOptions::default();
    let mut g = c.benchmark_group("input");
    g.throughput(Throughput::Bytes(pcap.len() as u64));
    g.bench_function("read_capture 32 connections", |b| {
        b.iter(|| {
            let mut frames = 0usize;
            let mut bytes = 0usize;
            read_capture(black_box(&pcap[..]), &opts, &plaus, |ev| {
                if let Event::Frame(f) = ev {
                    frames += 1;
                    bytes += f.bytes.len();
                }
            })
            .expect("capture reads");
            (frames, bytes)
        })
    });
    g.finish();
}

fn rendering(c: &mut Criterion) {
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let frame = fetch_response(&schema, &batch(100, 200, "none"));
    let hb = heartbeat(&schema, 3);
    let arena = Buffers::new();
    let fetch = decode(&schema, &opts, &arena, &frame, &Known::response(1, 11));
    let small = decode(&schema, &opts, &arena, &hb, &Known::request());
    let ropts = RenderOptions {
        no_bytes: true,
        ..RenderOptions::default()
    };
    let mut out: Vec<u8> = Vec::with_capacity(1 << 20);
    let mut g = c.benchmark_group("render");
    for (fname, format) in [
        ("text", Format::Text),
        ("json", Format::Json),
        ("summary", Format::Summary),
    ] {
        for (mname, m) in [("fetch v11 100 records", &fetch), ("heartbeat", &small)] {
            g.bench_function(format!("{fname} {mname}"), |b| {
                b.iter(|| {
                    out.clear();
                    render::render(&mut out, format, black_box(m), None, &ropts)
                })
            });
        }
    }
    g.finish();
}

/// The TLS lab's kafka-python capture (TLS 1.3, AES-256-GCM: 5 connections, 48 Kafka
/// messages) read three ways: without keys (TLS records framed and counted, nothing
/// decrypted), with its key log (keys derived, records decrypted, Kafka frames cut from
/// the plaintext), and with its key log and every frame decoded as `kwire read` does.
fn tls(c: &mut Criterion) {
    let lab = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/lab/tls");
    let pcap = std::fs::read(lab.join("tls13_kp_aes256gcm.pcapng")).expect("the TLS lab capture");
    let mut keys = kwire::input::tls::KeyLog::new();
    let text = std::fs::read(lab.join("tls13_kp_aes256gcm.keys")).expect("its key log");
    assert!(keys.add_text(&text, "keys").is_empty());
    let schema = Schema::embedded();
    let plaus = SchemaPlausibility(&schema);
    let dopts = DecodeOptions::default();
    let no_keys = CaptureOptions {
        ports: vec![9093],
        ..CaptureOptions::default()
    };
    let with_keys = CaptureOptions {
        tls_keys: std::sync::Arc::new(keys),
        ..no_keys.clone()
    };
    let mut g = c.benchmark_group("tls");
    g.throughput(Throughput::Bytes(pcap.len() as u64));
    for (name, opts, decode) in [
        ("read_capture, no keys", &no_keys, false),
        ("read_capture, decrypted", &with_keys, false),
        ("read_capture, decrypted and decoded", &with_keys, true),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut session = kwire::session::Session::new(&schema, &dopts);
                let mut frames = 0usize;
                let mut nodes = 0usize;
                read_capture(black_box(&pcap[..]), opts, &plaus, |ev| {
                    if let Event::Frame(f) = ev {
                        frames += 1;
                        if decode {
                            let arena = Buffers::new();
                            let (m, _) = session.decode(&f, &arena);
                            nodes += m.tree.children.len();
                        }
                    }
                })
                .expect("capture reads");
                assert_eq!(frames, if opts.tls_keys.is_empty() { 0 } else { 48 });
                (frames, nodes)
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    wire_primitives,
    decode_frames,
    reassembly,
    rendering,
    tls
);
criterion_main!(benches);
