//! Hostile inputs for the memory bounds of issue 12, at full size: small captures whose
//! record batches hold millions of tiny records (bounded by bytes, not by records).
//!
//! - `dense-zstd`: one Produce v8 exchange whose one zstd batch inflates to `--size`
//!   bytes (default 60 MiB: 8.99 M records, under kwire's 64 MiB decompression cap) of
//!   tiny records; the capture is a few KB.
//! - `dense-fetch`: one Fetch v11 exchange whose response holds an uncompressed batch of
//!   `--size` bytes (default 4 MiB: 599 k records).
//! - `dense-threads`: `--batches` (default [`BOMBS`]) `dense-zstd` exchanges, each followed by an exchange whose
//!   produce carries a larger uncompressed batch ([`FILLER_RECORDS`] records), so that
//!   each dense batch is a worker job of its own on `kwire read --threads N`.
//!
//! Every record is [`TINY`]; batches are written by kwire's
//! [`write_batch_v2`] (the records are built as bytes: a values tree of 9 M records
//! would take gigabytes), frames by kwire's encoder from the values shape.
//! `--frames-out FILE` also writes the dense frame alone (size-prefixed, as on the wire:
//! the request for `dense-zstd`, the response for `dense-fetch`) for `kwire decode --raw`.

use kwire::encode::records::{write_batch_v2, BatchHeader};
use kwire::encode::{encode, to_hex};
use kwire::input::pcap_out::{PcapWriter, TcpFlow};
use kwire::schema::Schema;
use serde_json::{json, Value};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

/// One tiny record (Kafka's `DefaultRecord`): length 6, attributes 0, timestampDelta 0,
/// offsetDelta 0, null key, null value, no headers: 7 bytes.
pub const TINY: [u8; 7] = [0x0c, 0, 0, 0, 0x01, 0x01, 0];

/// Dense batches in a `dense-threads` capture, by default.
pub const BOMBS: usize = 8;

/// Records of the uncompressed batch after each dense one in `dense-threads` (280 KB:
/// larger than the dense frame, so it closes the dense frame's job).
pub const FILLER_RECORDS: usize = 40_000;

/// Which hostile input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hostile {
    /// One zstd batch of tiny records in a Produce request.
    ZstdBatch,
    /// One uncompressed batch of tiny records in a Fetch response.
    FetchResponse,
    /// [`BOMBS`] dense zstd batches, each in a job of its own.
    ManyJobs,
}

impl Hostile {
    /// The default `--size`: the bytes of tiny records in each dense batch.
    pub fn default_size(self) -> u64 {
        match self {
            Hostile::ZstdBatch | Hostile::ManyJobs => 60 << 20,
            Hostile::FetchResponse => 4 << 20,
        }
    }
}

/// A RecordBatch v2 of `count` tiny records, compressed with `codec` (0 none, 4 zstd).
fn tiny_batch(count: usize, codec: i16) -> io::Result<Vec<u8>> {
    let mut raw = Vec::with_capacity(TINY.len() * count);
    for _ in 0..count {
        raw.extend_from_slice(&TINY);
    }
    let ts = 1_714_557_600_000; // 2024-05-01T10:00:00Z
    let h = BatchHeader {
        partition_leader_epoch: -1,
        attributes: codec,
        last_offset_delta: count.saturating_sub(1) as i32,
        base_timestamp: ts,
        max_timestamp: ts,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        ..BatchHeader::default()
    };
    let count = i32::try_from(count).map_err(io::Error::other)?;
    let mut b = Vec::new();
    write_batch_v2(&mut b, &h, count, &raw).map_err(|e| io::Error::other(format!("{e:?}")))?;
    Ok(b)
}

struct Frames {
    schema: Schema,
    corr: i32,
}

impl Frames {
    fn frame(&self, kind: &str, key: i16, ver: i16, body: Value) -> io::Result<Vec<u8>> {
        let mut header = json!({"correlation_id": self.corr});
        if kind == "request" {
            header["client_id"] = json!("kwire-gen-hostile");
        }
        let v = json!({"kind": kind, "api_key": key, "api_version": ver,
                       "header": header, "body": body});
        encode(&self.schema, &v).map_err(|e| io::Error::other(e.to_string()))
    }

    /// A Produce v8 request of `batch` to dense-0 and its response.
    fn produce(&mut self, batch: &[u8]) -> io::Result<[Vec<u8>; 2]> {
        self.corr += 1;
        let req = self.frame(
            "request",
            0,
            8,
            json!({"TransactionalId": null, "Acks": -1, "TimeoutMs": 30000,
                   "TopicData": [{"Name": "dense", "PartitionData":
                       [{"Index": 0, "Records": to_hex(batch)}]}]}),
        )?;
        let resp = self.frame(
            "response",
            0,
            8,
            json!({"Responses": [{"Name": "dense", "PartitionResponses": [
                       {"Index": 0, "ErrorCode": 0, "BaseOffset": 0, "LogAppendTimeMs": -1,
                        "LogStartOffset": 0, "RecordErrors": [], "ErrorMessage": null}]}],
                   "ThrottleTimeMs": 0}),
        )?;
        Ok([req, resp])
    }

    /// A Fetch v11 request of dense-0 and its response holding `batch`.
    fn fetch(&mut self, batch: &[u8]) -> io::Result<[Vec<u8>; 2]> {
        self.corr += 1;
        let req = self.frame(
            "request",
            1,
            11,
            json!({"ReplicaId": -1, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": 52_428_800,
                   "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
                   "Topics": [{"Topic": "dense", "Partitions": [
                       {"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": 0,
                        "LogStartOffset": -1, "PartitionMaxBytes": 52_428_800}]}],
                   "ForgottenTopicsData": [], "RackId": ""}),
        )?;
        let resp = self.frame(
            "response",
            1,
            11,
            json!({"ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": 0, "Responses": [
                       {"Topic": "dense", "Partitions": [
                           {"PartitionIndex": 0, "ErrorCode": 0, "HighWatermark": 0,
                            "LastStableOffset": 0, "LogStartOffset": 0,
                            "AbortedTransactions": null, "PreferredReadReplica": -1,
                            "Records": to_hex(batch)}]}]}),
        )?;
        Ok([req, resp])
    }
}

/// Writes the `kind` capture to `path`, each dense batch holding `size` bytes of tiny
/// records (`batches` of them for `dense-threads`), and with `frames_out` the dense frame
/// alone. Returns the capture's bytes and
/// packets.
///
/// # Errors
/// Writing a file, or a batch past an int32 record count.
pub fn write(
    kind: Hostile,
    size: u64,
    batches: usize,
    path: &Path,
    frames_out: Option<&Path>,
) -> io::Result<(u64, u64)> {
    let count = (size / TINY.len() as u64) as usize;
    let mut f = Frames {
        schema: Schema::embedded(),
        corr: 0,
    };
    let exchanges: Vec<[Vec<u8>; 2]> = match kind {
        Hostile::ZstdBatch => vec![f.produce(&tiny_batch(count, 4)?)?],
        Hostile::FetchResponse => vec![f.fetch(&tiny_batch(count, 0)?)?],
        Hostile::ManyJobs => {
            let bomb = tiny_batch(count, 4)?;
            let filler = tiny_batch(FILLER_RECORDS, 0)?;
            let mut x = Vec::new();
            for _ in 0..batches {
                x.push(f.produce(&bomb)?);
                x.push(f.produce(&filler)?);
            }
            x
        }
    };
    if let Some(fo) = frames_out {
        let dense = match kind {
            Hostile::FetchResponse => &exchanges[0][1],
            _ => &exchanges[0][0],
        };
        std::fs::write(fo, dense)?;
    }
    let mut w = PcapWriter::new(BufWriter::with_capacity(1 << 20, File::create(path)?))?;
    let mut flow = TcpFlow::new(
        SocketAddrV4::new(Ipv4Addr::new(10, 1, 0, 2), 40_000),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 9092),
        [1_000, 5_000_000],
    );
    let mut t: u64 = 1_714_557_600_000_000;
    flow.open(&mut w, t)?;
    for [req, resp] in &exchanges {
        t += 1_000;
        flow.send(&mut w, true, t, req)?;
        t += 10 * req.len().div_ceil(kwire::input::pcap_out::MSS) as u64 + 2_000;
        flow.send(&mut w, false, t, resp)?;
        t += 10 * resp.len().div_ceil(kwire::input::pcap_out::MSS) as u64;
    }
    flow.close(&mut w, t + 1_000)?;
    let packets = w.packets;
    let mut out = w.into_inner();
    out.flush()?;
    let bytes = std::fs::metadata(path)?.len();
    Ok((bytes, packets))
}
