//! Lossy captures for the bounds of issue 25 (parts 1 and 6): many connections at once,
//! each losing segments at a chosen place or holding a partial frame at the end.
//!
//! - `lossy-produce`: `--connections` (default 100) connections, all open at once; each
//!   sends a Produce v8 of about `--size` bytes (default 1M: one batch of 10 kB
//!   records) of which the capture lost the segments overlapping `--lose START:LEN`
//!   (bytes of the frame; default 500000:16384), then gets its response, makes two
//!   ApiVersions v3 exchanges and closes. Step by step across connections: every
//!   Produce is in flight before the first answer. With `--delayed-acks` the broker
//!   acknowledges every second segment (its ACKs cover the lost bytes, as a receiver's
//!   do when only the capture missed them); without, only the response's ACK does.
//! - `half-frames`: `--connections` (default 2000) connections, each open and holding
//!   the first half of a Produce v8 of about `--size` bytes at the end of the capture.
//!
//! Frames are built by kwire's encoder from the values shape, batches by
//! [`write_batch_v2`], packets by [`TcpFlow`].

use kwire::encode::records::{write_batch_v2, BatchHeader};
use kwire::encode::{encode, to_hex};
use kwire::input::pcap_out::{PcapWriter, TcpFlow, MSS};
use kwire::schema::Schema;
use serde_json::{json, Value};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;
use std::path::Path;

/// Which lossy input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lossy {
    /// Each connection loses segments inside a large Produce, then goes on.
    Produce,
    /// Each connection holds half a large Produce at the end.
    HalfFrames,
}

impl Lossy {
    /// The default `--connections`.
    pub fn default_connections(self) -> usize {
        match self {
            Lossy::Produce => 100,
            Lossy::HalfFrames => 2000,
        }
    }
}

/// `--lose START:LEN`: a byte range of the frame.
pub fn parse_range(s: &str) -> Result<Range<usize>, String> {
    let (a, n) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: expected START:LEN (bytes)"))?;
    let a: usize = a.parse().map_err(|e| format!("{a:?}: {e}"))?;
    let n: usize = n.parse().map_err(|e| format!("{n:?}: {e}"))?;
    Ok(a..a.saturating_add(n))
}

/// A zigzag varint (the varints of Kafka records).
fn varint(out: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A RecordBatch v2 of about `size` bytes: records of 10,000-byte values (fewer bytes:
/// one record of `size`).
fn batch(size: usize) -> io::Result<Vec<u8>> {
    let value = size.min(10_000);
    let count = (size / value.max(1)).max(1);
    let mut raw = Vec::with_capacity(size + 16 * count);
    for i in 0..count {
        let mut rec = vec![0u8, 0]; // attributes, timestampDelta
        varint(&mut rec, i as i64); // offsetDelta
        varint(&mut rec, -1); // null key
        varint(&mut rec, value as i64);
        rec.extend((0..value).map(|j| b'a' + (j % 26) as u8));
        rec.push(0); // no headers
        varint(&mut raw, rec.len() as i64);
        raw.extend(rec);
    }
    let ts = 1_714_557_600_000;
    let h = BatchHeader {
        partition_leader_epoch: -1,
        attributes: 0,
        last_offset_delta: count as i32 - 1,
        base_timestamp: ts,
        max_timestamp: ts,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        ..BatchHeader::default()
    };
    let mut b = Vec::new();
    write_batch_v2(&mut b, &h, count as i32, &raw)
        .map_err(|e| io::Error::other(format!("{e:?}")))?;
    Ok(b)
}

fn frame(
    schema: &Schema,
    kind: &str,
    key: i16,
    ver: i16,
    corr: i32,
    body: Value,
) -> io::Result<Vec<u8>> {
    let mut header = json!({"correlation_id": corr});
    if kind == "request" {
        header["client_id"] = json!("kwire-gen-lossy");
    }
    let v = json!({"kind": kind, "api_key": key, "api_version": ver,
                   "header": header, "body": body});
    encode(schema, &v).map_err(|e| io::Error::other(e.to_string()))
}

fn produce(schema: &Schema, batch: &[u8]) -> io::Result<[Vec<u8>; 2]> {
    let req = frame(
        schema,
        "request",
        0,
        8,
        1,
        json!({"TransactionalId": null, "Acks": -1, "TimeoutMs": 30000,
               "TopicData": [{"Name": "lossy", "PartitionData":
                   [{"Index": 0, "Records": to_hex(batch)}]}]}),
    )?;
    let resp = frame(
        schema,
        "response",
        0,
        8,
        1,
        json!({"Responses": [{"Name": "lossy", "PartitionResponses": [
                   {"Index": 0, "ErrorCode": 0, "BaseOffset": 0, "LogAppendTimeMs": -1,
                    "LogStartOffset": 0, "RecordErrors": [], "ErrorMessage": null}]}],
               "ThrottleTimeMs": 0}),
    )?;
    Ok([req, resp])
}

fn api_versions(schema: &Schema, corr: i32) -> io::Result<[Vec<u8>; 2]> {
    let req = frame(
        schema,
        "request",
        18,
        3,
        corr,
        json!({"ClientSoftwareName": "kwire-gen", "ClientSoftwareVersion": "1"}),
    )?;
    let resp = frame(
        schema,
        "response",
        18,
        3,
        corr,
        json!({"ErrorCode": 0, "ApiKeys": [{"ApiKey": 0, "MinVersion": 0, "MaxVersion": 11}],
               "ThrottleTimeMs": 0}),
    )?;
    Ok([req, resp])
}

/// Connection `i`: client 10.1.x.y port 20000 + i % 40000, the broker 10.0.0.2:9092.
fn flow(i: usize) -> TcpFlow {
    TcpFlow::new(
        SocketAddrV4::new(
            Ipv4Addr::new(10, 1, (i >> 8) as u8, i as u8),
            20_000 + (i % 40_000) as u16,
        ),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092),
        [1_000 + (i as u32).wrapping_mul(7919), 5_000_000],
    )
}

/// Writes the `kind` capture to `path` with `conns` connections and frames of about
/// `size` bytes (`lose` and `acks` for [`Lossy::Produce`]). Returns the capture's bytes
/// and packets.
///
/// # Errors
/// Writing the file.
pub fn write(
    kind: Lossy,
    size: u64,
    conns: usize,
    lose: Range<usize>,
    acks: bool,
    path: &Path,
) -> io::Result<(u64, u64)> {
    let schema = Schema::embedded();
    let [req, resp] = produce(&schema, &batch(size as usize)?)?;
    let mut w = PcapWriter::new(BufWriter::with_capacity(1 << 20, File::create(path)?))?;
    let mut flows: Vec<TcpFlow> = (0..conns).map(flow).collect();
    let mut t: u64 = 1_714_557_600_000_000;
    for f in &mut flows {
        f.open(&mut w, t)?;
        t += 200;
    }
    let step = |t: &mut u64, bytes: usize| *t += 10 * bytes.div_ceil(MSS) as u64 + 100;
    match kind {
        Lossy::HalfFrames => {
            let half = &req[..req.len() / 2];
            for f in &mut flows {
                f.send(&mut w, true, t, half)?;
                step(&mut t, half.len());
            }
        }
        Lossy::Produce => {
            for f in &mut flows {
                f.send_losing(&mut w, true, t, &req, lose.clone(), acks)?;
                step(&mut t, req.len());
            }
            for f in &mut flows {
                f.send(&mut w, false, t, &resp)?;
                step(&mut t, resp.len());
            }
            for corr in [2, 3] {
                let [q, r] = api_versions(&schema, corr)?;
                for f in &mut flows {
                    f.send(&mut w, true, t, &q)?;
                    step(&mut t, q.len());
                }
                for f in &mut flows {
                    f.send(&mut w, false, t, &r)?;
                    step(&mut t, r.len());
                }
            }
            for f in &mut flows {
                f.close(&mut w, t)?;
                t += 100;
            }
        }
    }
    let packets = w.packets;
    let mut out = w.into_inner();
    out.flush()?;
    Ok((std::fs::metadata(path)?.len(), packets))
}
