//! Record data in the values shape: RecordBatch v2 and legacy message sets, both ways.
//!
//! [`encode_records`] builds the bytes of a `records` field from a list of batches;
//! [`parse_records`] reads them back into that list for [`crate::values`]. Computed
//! fields (lengths, CRCs, counts) are never in the values: the encoder computes them
//! (CRC-32C over a v2 batch from its attributes on, CRC-32 over a legacy message from
//! its magic on) and the reader checks them, falling back to raw hex for data it cannot
//! give back exactly.
//!
//! A v2 batch (Kafka's `DefaultRecordBatch`):
//! `{"magic":2,"baseOffset","partitionLeaderEpoch","attributes":{"compression",
//! "timestampType","isTransactional","isControlBatch"},"lastOffsetDelta","baseTimestamp",
//! "maxTimestamp","producerId","producerEpoch","baseSequence","records":[...]}` with
//! records `{"attributes","timestampDelta","offsetDelta","key","value","headers":[{"key",
//! "value"}]}`. A legacy message (`LegacyRecord`, magic 0 or 1):
//! `{"magic","offset","attributes","timestamp" (magic 1 only),"key","value"}`, with a
//! compressed wrapper's value left as its compressed bytes.
//!
//! Compression (bits 0-2 of the batch attributes): gzip (flate2), snappy (xerial
//! framing, as Java clients write it; raw snappy is read too), lz4 (the LZ4 frame
//! format) and zstd.

use super::{from_hex, get_int, int_json, join, put_varlong, to_hex, wrong};
use super::{EncodeError, EncodeErrorKind};
use serde_json::{json, Map, Value};
use std::io::{Read, Write};

type Res<T> = Result<T, EncodeError>;

/// The compression names, by codec id (bits 0-2 of the attributes).
pub const COMPRESSION: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

/// The most bytes [`parse_records`] decompresses from one batch.
pub const MAX_DECOMPRESSED: usize = 64 << 20;

const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];

/// Compresses `data` with codec `codec` (1 gzip, 2 snappy/xerial, 3 lz4 frame,
/// 4 zstd; 0 copies).
///
/// # Errors
/// A message when the codec is unknown or the compressor fails.
pub fn compress(codec: u8, data: &[u8]) -> Result<Vec<u8>, String> {
    match codec {
        0 => Ok(data.to_vec()),
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).map_err(|e| e.to_string())?;
            e.finish().map_err(|e| e.to_string())
        }
        2 => {
            let mut out = Vec::with_capacity(data.len() / 2 + 32);
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            let mut enc = snap::raw::Encoder::new();
            // Java's SnappyOutputStream writes blocks of 32 KiB.
            for chunk in data.chunks(32 * 1024) {
                let c = enc.compress_vec(chunk).map_err(|e| e.to_string())?;
                out.extend_from_slice(&(c.len() as i32).to_be_bytes());
                out.extend_from_slice(&c);
            }
            Ok(out)
        }
        3 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            e.write_all(data).map_err(|e| e.to_string())?;
            e.finish().map_err(|e| e.to_string())
        }
        4 => zstd::bulk::compress(data, 3).map_err(|e| e.to_string()),
        c => Err(format!("unknown compression codec {c}")),
    }
}

fn read_capped(r: impl Read, cap: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    r.take(cap as u64 + 1).read_to_end(&mut out).ok()?;
    (out.len() <= cap).then_some(out)
}

/// Decompresses `data` of codec `codec`, at most `cap` bytes; `None` when the data is
/// not of that codec or decompresses past `cap`.
pub fn decompress(codec: u8, data: &[u8], cap: usize) -> Option<Vec<u8>> {
    match codec {
        0 => Some(data.to_vec()),
        1 => read_capped(flate2::read::MultiGzDecoder::new(data), cap),
        2 => {
            if data.starts_with(&XERIAL_MAGIC) && data.len() >= 16 {
                let mut out = Vec::new();
                let mut rest = &data[16..];
                while !rest.is_empty() {
                    if rest.len() < 4 {
                        return None;
                    }
                    let n = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                    let block = rest.get(4..4 + n)?;
                    let len = snap::raw::decompress_len(block).ok()?;
                    if out.len() + len > cap {
                        return None;
                    }
                    out.extend(snap::raw::Decoder::new().decompress_vec(block).ok()?);
                    rest = &rest[4 + n..];
                }
                Some(out)
            } else {
                let len = snap::raw::decompress_len(data).ok()?;
                if len > cap {
                    return None;
                }
                snap::raw::Decoder::new().decompress_vec(data).ok()
            }
        }
        3 => read_capped(lz4_flex::frame::FrameDecoder::new(data), cap),
        4 => read_capped(zstd::stream::read::Decoder::new(data).ok()?, cap),
        _ => None,
    }
}

/// Builds the bytes of a `records` field from a JSON array of batches (v2) and legacy
/// messages (magic 0/1), in order.
///
/// # Errors
/// An [`EncodeError`] at `path[i].key` for an unknown key, a wrong type, an integer
/// out of range or an unknown compression name.
pub fn encode_records(v: &Value, path: &str) -> Res<Vec<u8>> {
    let Value::Array(items) = v else {
        return Err(wrong(path, "array of record batches", v));
    };
    let mut out = Vec::new();
    for (i, b) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let Value::Object(o) = b else {
            return Err(wrong(&p, "record batch object", b));
        };
        let magic = match o.get("magic") {
            None => 2,
            Some(m) => get_int(m, "int8 magic", 0, 2, &join(&p, "magic"))? as u8,
        };
        if magic == 2 {
            batch_v2(&mut out, o, &p)?;
        } else {
            legacy(&mut out, o, magic, &p)?;
        }
    }
    Ok(out)
}

/// Checks that every key of `o` is one of `keys`.
fn check_keys(o: &Map<String, Value>, keys: &[&str], path: &str) -> Res<()> {
    for k in o.keys() {
        if !keys.contains(&k.as_str()) {
            return Err(EncodeError::new(
                join(path, k),
                EncodeErrorKind::UnknownField,
            ));
        }
    }
    Ok(())
}

fn int_of(o: &Map<String, Value>, k: &str, lo: i128, hi: i128, ty: &str, path: &str) -> Res<i128> {
    match o.get(k) {
        None => Ok(0),
        Some(v) => get_int(v, ty, lo, hi, &join(path, k)),
    }
}

fn i64_of(o: &Map<String, Value>, k: &str, path: &str) -> Res<i64> {
    int_of(o, k, i64::MIN as i128, i64::MAX as i128, "int64", path).map(|n| n as i64)
}
fn i32_of(o: &Map<String, Value>, k: &str, path: &str) -> Res<i32> {
    int_of(o, k, i32::MIN as i128, i32::MAX as i128, "int32", path).map(|n| n as i32)
}
fn i16_of(o: &Map<String, Value>, k: &str, path: &str) -> Res<i16> {
    int_of(o, k, i16::MIN as i128, i16::MAX as i128, "int16", path).map(|n| n as i16)
}
fn bool_of(o: &Map<String, Value>, k: &str, path: &str) -> Res<bool> {
    match o.get(k) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(wrong(&join(path, k), "boolean", v)),
    }
}

/// A nullable hex field (`null` or a hex string), `None` when absent-or-null.
fn opt_bytes(o: &Map<String, Value>, k: &str, path: &str) -> Res<Option<Vec<u8>>> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => from_hex(s, &join(path, k)).map(Some),
        Some(v) => Err(wrong(&join(path, k), "null or hex string", v)),
    }
}

fn varbytes(out: &mut Vec<u8>, b: &Option<Vec<u8>>) {
    match b {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

fn attributes_v2(v: Option<&Value>, path: &str) -> Res<i16> {
    let p = join(path, "attributes");
    let o = match v {
        None => return Ok(0),
        Some(Value::Object(o)) => o,
        Some(x) => return Err(wrong(&p, "attributes object", x)),
    };
    check_keys(
        o,
        &[
            "compression",
            "timestampType",
            "isTransactional",
            "isControlBatch",
            "hasDeleteHorizonMs",
            "unusedBits",
        ],
        &p,
    )?;
    let codec = match o.get("compression") {
        None => 0,
        Some(Value::String(s)) => COMPRESSION
            .iter()
            .position(|c| c.eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                EncodeError::new(
                    join(&p, "compression"),
                    EncodeErrorKind::BadValue(format!(
                        "unknown compression {s:?} (none, gzip, snappy, lz4, zstd)"
                    )),
                )
            })? as i16,
        Some(x) => return Err(wrong(&join(&p, "compression"), "compression name", x)),
    };
    let ts = match o.get("timestampType") {
        None => 0,
        Some(Value::String(s)) if s == "CreateTime" => 0,
        Some(Value::String(s)) if s == "LogAppendTime" => 1,
        Some(x) => {
            return Err(wrong(
                &join(&p, "timestampType"),
                "\"CreateTime\" or \"LogAppendTime\"",
                x,
            ))
        }
    };
    let unused = int_of(o, "unusedBits", 0, 0xff80, "int16 bits 7-15", &p)? as u16;
    if unused & 0x7f != 0 {
        return Err(EncodeError::new(
            join(&p, "unusedBits"),
            EncodeErrorKind::BadValue("unusedBits may only hold bits 7-15".into()),
        ));
    }
    Ok(codec
        | ts << 3
        | (bool_of(o, "isTransactional", &p)? as i16) << 4
        | (bool_of(o, "isControlBatch", &p)? as i16) << 5
        | (bool_of(o, "hasDeleteHorizonMs", &p)? as i16) << 6
        | unused as i16)
}

fn batch_v2(out: &mut Vec<u8>, o: &Map<String, Value>, p: &str) -> Res<()> {
    check_keys(
        o,
        &[
            "magic",
            "baseOffset",
            "partitionLeaderEpoch",
            "attributes",
            "lastOffsetDelta",
            "baseTimestamp",
            "maxTimestamp",
            "producerId",
            "producerEpoch",
            "baseSequence",
            "records",
        ],
        p,
    )?;
    let attrs = attributes_v2(o.get("attributes"), p)?;
    let records = match o.get("records") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(x) => return Err(wrong(&join(p, "records"), "array of records", x)),
    };
    let mut body = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let rp = format!("{}[{i}]", join(p, "records"));
        record(&mut body, r, &rp)?;
    }
    let count = i32::try_from(records.len()).map_err(|_| {
        EncodeError::new(
            join(p, "records"),
            EncodeErrorKind::OutOfRange {
                ty: "int32 count".into(),
                value: records.len().to_string(),
            },
        )
    })?;
    let h = BatchHeader {
        base_offset: i64_of(o, "baseOffset", p)?,
        partition_leader_epoch: i32_of(o, "partitionLeaderEpoch", p)?,
        attributes: attrs,
        last_offset_delta: i32_of(o, "lastOffsetDelta", p)?,
        base_timestamp: i64_of(o, "baseTimestamp", p)?,
        max_timestamp: i64_of(o, "maxTimestamp", p)?,
        producer_id: i64_of(o, "producerId", p)?,
        producer_epoch: i16_of(o, "producerEpoch", p)?,
        base_sequence: i32_of(o, "baseSequence", p)?,
    };
    write_batch_v2(out, &h, count, &body).map_err(|e| match e {
        BatchError::Compress(m) => EncodeError::new(
            join(p, "attributes.compression"),
            EncodeErrorKind::BadValue(m),
        ),
        BatchError::TooLong(n) => EncodeError::new(
            p,
            EncodeErrorKind::OutOfRange {
                ty: "int32 batchLength".into(),
                value: n.to_string(),
            },
        ),
    })
}

/// The header fields of a RecordBatch v2 (Kafka's `DefaultRecordBatch`) that a writer
/// chooses; [`write_batch_v2`] computes the rest (batchLength, magic 2, the CRC-32C and
/// recordsCount).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchHeader {
    /// baseOffset (int64): the offset of the first record.
    pub base_offset: i64,
    /// partitionLeaderEpoch (int32).
    pub partition_leader_epoch: i32,
    /// attributes (int16): bits 0-2 the codec that [`write_batch_v2`] compresses with
    /// (see [`COMPRESSION`]), bit 3 timestampType, 4 isTransactional, 5 isControlBatch.
    pub attributes: i16,
    /// lastOffsetDelta (int32).
    pub last_offset_delta: i32,
    /// baseTimestamp (int64, ms since the epoch).
    pub base_timestamp: i64,
    /// maxTimestamp (int64, ms since the epoch).
    pub max_timestamp: i64,
    /// producerId (int64; -1 for none).
    pub producer_id: i64,
    /// producerEpoch (int16; -1 for none).
    pub producer_epoch: i16,
    /// baseSequence (int32; -1 for none).
    pub base_sequence: i32,
}

/// Why [`write_batch_v2`] could not write a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchError {
    /// The codec in the attributes is unknown or its compressor failed (the message).
    Compress(String),
    /// batchLength would not fit an int32 (the length it would have, in bytes).
    TooLong(usize),
}

/// Appends to `out` a RecordBatch v2 holding `count` records whose encoded bytes are
/// `records` (each record its varint length then its fields, as Kafka's
/// `DefaultRecord` writes them), compressed with the codec in bits 0-2 of
/// `h.attributes` ([`compress`]); the CRC-32C covers the attributes to the end. Writes
/// nothing on error. `count` is written as given, not checked against `records`: a
/// writer of test and benchmark inputs can build the raw records itself, millions at a
/// time, without a values tree.
///
/// # Errors
/// [`BatchError::Compress`] for an unknown codec or a failed compressor,
/// [`BatchError::TooLong`] when the batch would pass an int32 batchLength.
pub fn write_batch_v2(
    out: &mut Vec<u8>,
    h: &BatchHeader,
    count: i32,
    records: &[u8],
) -> Result<(), BatchError> {
    let payload = compress((h.attributes & 7) as u8, records).map_err(BatchError::Compress)?;
    // From attributes on: what the CRC covers.
    let mut tail = Vec::with_capacity(40 + payload.len());
    tail.extend_from_slice(&h.attributes.to_be_bytes());
    tail.extend_from_slice(&h.last_offset_delta.to_be_bytes());
    tail.extend_from_slice(&h.base_timestamp.to_be_bytes());
    tail.extend_from_slice(&h.max_timestamp.to_be_bytes());
    tail.extend_from_slice(&h.producer_id.to_be_bytes());
    tail.extend_from_slice(&h.producer_epoch.to_be_bytes());
    tail.extend_from_slice(&h.base_sequence.to_be_bytes());
    tail.extend_from_slice(&count.to_be_bytes());
    tail.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&tail);
    let batch_len =
        i32::try_from(4 + 1 + 4 + tail.len()).map_err(|_| BatchError::TooLong(9 + tail.len()))?;
    out.extend_from_slice(&h.base_offset.to_be_bytes());
    out.extend_from_slice(&batch_len.to_be_bytes());
    out.extend_from_slice(&h.partition_leader_epoch.to_be_bytes());
    out.push(2);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&tail);
    Ok(())
}

fn record(out: &mut Vec<u8>, r: &Value, p: &str) -> Res<()> {
    let Value::Object(o) = r else {
        return Err(wrong(p, "record object", r));
    };
    check_keys(
        o,
        &[
            "attributes",
            "timestampDelta",
            "offsetDelta",
            "key",
            "value",
            "headers",
        ],
        p,
    )?;
    let mut b = Vec::new();
    b.push(int_of(o, "attributes", i8::MIN as i128, i8::MAX as i128, "int8", p)? as i8 as u8);
    put_varlong(&mut b, i64_of(o, "timestampDelta", p)?);
    put_varlong(&mut b, i32_of(o, "offsetDelta", p)? as i64);
    varbytes(&mut b, &opt_bytes(o, "key", p)?);
    varbytes(&mut b, &opt_bytes(o, "value", p)?);
    let headers = match o.get("headers") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(x) => return Err(wrong(&join(p, "headers"), "array of headers", x)),
    };
    put_varlong(&mut b, headers.len() as i64);
    for (i, h) in headers.iter().enumerate() {
        let hp = format!("{}[{i}]", join(p, "headers"));
        let Value::Object(ho) = h else {
            return Err(wrong(&hp, "header object", h));
        };
        check_keys(ho, &["key", "value"], &hp)?;
        let key = match ho.get("key") {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(x) => return Err(wrong(&join(&hp, "key"), "string", x)),
        };
        put_varlong(&mut b, key.len() as i64);
        b.extend_from_slice(key.as_bytes());
        varbytes(&mut b, &opt_bytes(ho, "value", &hp)?);
    }
    put_varlong(out, b.len() as i64);
    out.extend_from_slice(&b);
    Ok(())
}

fn legacy(out: &mut Vec<u8>, o: &Map<String, Value>, magic: u8, p: &str) -> Res<()> {
    let keys: &[&str] = if magic == 1 {
        &["magic", "offset", "attributes", "timestamp", "key", "value"]
    } else {
        &["magic", "offset", "attributes", "key", "value"]
    };
    check_keys(o, keys, p)?;
    let mut m = vec![magic];
    m.push(int_of(o, "attributes", i8::MIN as i128, i8::MAX as i128, "int8", p)? as i8 as u8);
    if magic == 1 {
        m.extend_from_slice(&i64_of(o, "timestamp", p)?.to_be_bytes());
    }
    for k in ["key", "value"] {
        match opt_bytes(o, k, p)? {
            None => m.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(b) => {
                let n = i32::try_from(b.len()).map_err(|_| {
                    EncodeError::new(
                        join(p, k),
                        EncodeErrorKind::OutOfRange {
                            ty: "int32 length".into(),
                            value: b.len().to_string(),
                        },
                    )
                })?;
                m.extend_from_slice(&n.to_be_bytes());
                m.extend_from_slice(&b);
            }
        }
    }
    let crc = crc32fast::hash(&m);
    out.extend_from_slice(&i64_of(o, "offset", p)?.to_be_bytes());
    out.extend_from_slice(&((m.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&m);
    Ok(())
}

/// A byte cursor for [`parse_records`].
struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn arr<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).and_then(|s| s.try_into().ok())
    }
    fn i8(&mut self) -> Option<i8> {
        self.arr::<1>().map(i8::from_be_bytes)
    }
    fn i16(&mut self) -> Option<i16> {
        self.arr::<2>().map(i16::from_be_bytes)
    }
    fn i32(&mut self) -> Option<i32> {
        self.arr::<4>().map(i32::from_be_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.arr::<4>().map(u32::from_be_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.arr::<8>().map(i64::from_be_bytes)
    }
    fn uvarlong(&mut self, max: usize) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..max {
            let b = *self.0.get(i)?;
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                self.0 = &self.0[i + 1..];
                return Some(v);
            }
        }
        None
    }
    fn varlong(&mut self) -> Option<i64> {
        let v = self.uvarlong(10)?;
        Some(((v >> 1) as i64) ^ -((v & 1) as i64))
    }
    fn varint(&mut self) -> Option<i32> {
        let v = self.uvarlong(5)?;
        let v = u32::try_from(v).ok()?;
        Some(((v >> 1) as i32) ^ -((v & 1) as i32))
    }
    /// Varint-length bytes, `-1` = null.
    fn varbytes(&mut self) -> Option<Option<&'a [u8]>> {
        let n = self.varint()?;
        if n == -1 {
            return Some(None);
        }
        let n = usize::try_from(n).ok()?;
        self.take(n).map(Some)
    }
}

fn opt_hex(b: Option<&[u8]>) -> Value {
    b.map(|b| Value::String(to_hex(b))).unwrap_or(Value::Null)
}

/// Reads the bytes of a `records` field into the values shape: a list of batches (v2)
/// and legacy messages. `None` when the bytes are not a whole, well-formed sequence
/// that [`encode_records`] would give back exactly (a cut last batch, a bad CRC, an
/// unknown codec, a count that disagrees): the values then hold the raw hex instead.
///
/// A field holding more than [`MAX_PARSED_RECORDS`] records (over all its batches and
/// legacy messages) gives `None` too, so that the caller shows it as hex: the bytes are
/// all there and encode back the same, while a value per record would grow without
/// bound (a few kilobytes of zstd can hold millions of records).
pub fn parse_records(data: &[u8]) -> Option<Value> {
    let mut c = Cur(data);
    let mut out = Vec::new();
    let mut left = MAX_PARSED_RECORDS;
    while !c.0.is_empty() {
        let magic = *c.0.get(16)?;
        match magic {
            2 => out.push(parse_batch(&mut c, &mut left)?),
            0 | 1 => {
                left = left.checked_sub(1)?;
                out.push(parse_legacy(&mut c)?)
            }
            _ => return None,
        }
    }
    Some(Value::Array(out))
}

/// The most records [`parse_records`] gives back as values from one records field.
pub const MAX_PARSED_RECORDS: usize = 20_000;

fn parse_batch(c: &mut Cur<'_>, left: &mut usize) -> Option<Value> {
    let base_offset = c.i64()?;
    let len = usize::try_from(c.i32()?).ok()?;
    let mut b = Cur(c.take(len)?);
    let leader_epoch = b.i32()?;
    let _magic = b.i8()?;
    let crc = b.u32()?;
    if crc32c::crc32c(b.0) != crc {
        return None;
    }
    let attrs = b.i16()? as u16;
    let last_offset_delta = b.i32()?;
    let base_ts = b.i64()?;
    let max_ts = b.i64()?;
    let pid = b.i64()?;
    let pepoch = b.i16()?;
    let base_seq = b.i32()?;
    let count = b.i32()?;
    *left = left.checked_sub(usize::try_from(count).unwrap_or(0))?;
    let codec = (attrs & 7) as u8;
    if codec as usize >= COMPRESSION.len() {
        return None;
    }
    // A compressed payload is given back by its records: encoding them again gives the
    // same records, though another compressor's bytes may differ.
    let raw = decompress(codec, b.0, MAX_DECOMPRESSED)?;
    let mut r = Cur(&raw);
    let mut records = Vec::new();
    for _ in 0..count.max(0) {
        records.push(parse_record(&mut r)?);
    }
    if !r.0.is_empty() || count < 0 {
        return None;
    }
    let mut a = Map::new();
    a.insert("compression".into(), COMPRESSION[codec as usize].into());
    a.insert(
        "timestampType".into(),
        if attrs & 8 != 0 {
            "LogAppendTime"
        } else {
            "CreateTime"
        }
        .into(),
    );
    a.insert("isTransactional".into(), (attrs & 0x10 != 0).into());
    a.insert("isControlBatch".into(), (attrs & 0x20 != 0).into());
    if attrs & 0x40 != 0 {
        a.insert("hasDeleteHorizonMs".into(), true.into());
    }
    if attrs & 0xff80 != 0 {
        a.insert("unusedBits".into(), (attrs & 0xff80).into());
    }
    Some(json!({
        "magic": 2,
        "baseOffset": int_json(base_offset),
        "partitionLeaderEpoch": leader_epoch,
        "attributes": Value::Object(a),
        "lastOffsetDelta": last_offset_delta,
        "baseTimestamp": int_json(base_ts),
        "maxTimestamp": int_json(max_ts),
        "producerId": int_json(pid),
        "producerEpoch": pepoch,
        "baseSequence": base_seq,
        "records": records,
    }))
}

/// The bytes of `v` as a minimal zigzag varint ([`put_varlong`]).
fn varlong_len(v: i64) -> usize {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

fn parse_record(c: &mut Cur<'_>) -> Option<Value> {
    let len = usize::try_from(c.varint()?).ok()?;
    let mut r = Cur(c.take(len)?);
    let attributes = r.i8()?;
    let ts = r.varlong()?;
    let od = r.varint()?;
    let key = r.varbytes()?;
    let value = r.varbytes()?;
    let n = r.varint()?;
    // Non-minimal varints would not come back byte for byte: the record's length must
    // be what `record` writes (every varint minimal).
    let varbytes_len = |b: Option<&[u8]>| b.map_or(1, |b| varlong_len(b.len() as i64) + b.len());
    let mut minimal = 1
        + varlong_len(ts)
        + varlong_len(od.into())
        + varbytes_len(key)
        + varbytes_len(value)
        + varlong_len(n.into());
    let mut headers = Vec::new();
    for _ in 0..n.max(0) {
        let k = r.varbytes()??;
        let k = std::str::from_utf8(k).ok()?;
        let v = r.varbytes()?;
        minimal += varlong_len(k.len() as i64) + k.len() + varbytes_len(v);
        headers.push(json!({"key": k, "value": opt_hex(v)}));
    }
    if !r.0.is_empty() || n < 0 || minimal != len {
        return None;
    }
    Some(json!({
        "attributes": attributes,
        "timestampDelta": int_json(ts),
        "offsetDelta": od,
        "key": opt_hex(key),
        "value": opt_hex(value),
        "headers": headers,
    }))
}

fn parse_legacy(c: &mut Cur<'_>) -> Option<Value> {
    let offset = c.i64()?;
    let size = usize::try_from(c.i32()?).ok()?;
    let mut m = Cur(c.take(size)?);
    let crc = m.u32()?;
    if crc32fast::hash(m.0) != crc {
        return None;
    }
    let magic = m.i8()?;
    let attributes = m.i8()?;
    let ts = if magic == 1 { Some(m.i64()?) } else { None };
    let mut kv = [Value::Null, Value::Null];
    for slot in &mut kv {
        let n = m.i32()?;
        if n != -1 {
            let n = usize::try_from(n).ok()?;
            *slot = Value::String(to_hex(m.take(n)?));
        }
    }
    if !m.0.is_empty() {
        return None;
    }
    let [key, value] = kv;
    let mut o = Map::new();
    o.insert("magic".into(), magic.into());
    o.insert("offset".into(), int_json(offset));
    o.insert("attributes".into(), attributes.into());
    if let Some(t) = ts {
        o.insert("timestamp".into(), int_json(t));
    }
    o.insert("key".into(), key);
    o.insert("value".into(), value);
    Some(Value::Object(o))
}

/// One empty RecordBatch v2 in the values shape: every number zero, no compression,
/// no records (61 bytes on the wire, batchLength 49).
pub fn empty_batch() -> Value {
    json!({
        "magic": 2,
        "baseOffset": 0,
        "partitionLeaderEpoch": 0,
        "attributes": {
            "compression": "none",
            "timestampType": "CreateTime",
            "isTransactional": false,
            "isControlBatch": false
        },
        "lastOffsetDelta": 0,
        "baseTimestamp": 0,
        "maxTimestamp": 0,
        "producerId": 0,
        "producerEpoch": 0,
        "baseSequence": 0,
        "records": []
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varlong_len_is_what_put_varlong_writes() {
        let mut vals = vec![0i64, 1, -1, 63, 64, -64, -65, i64::MAX, i64::MIN];
        for k in 0..63 {
            vals.extend([1i64 << k, (1i64 << k) - 1, -(1i64 << k), -(1i64 << k) - 1]);
        }
        for v in vals {
            let mut b = Vec::new();
            put_varlong(&mut b, v);
            assert_eq!(varlong_len(v), b.len(), "{v}");
        }
    }

    /// A record whose varints are not minimal is not given back as values (encoding
    /// them would not give its bytes): offsetDelta 0 written as `80 00`.
    #[test]
    fn records_with_long_varints_stay_bytes() {
        // length, attributes, timestampDelta 0, offsetDelta 0, key null, value null,
        // no headers
        let minimal = [0x0c, 0, 0, 0x00, 0x01, 0x01, 0x00];
        let long = [0x0e, 0, 0, 0x80, 0x00, 0x01, 0x01, 0x00];
        let v = parse_record(&mut Cur(&minimal)).expect("a minimal record");
        assert_eq!(v["offsetDelta"], 0);
        assert!(parse_record(&mut Cur(&long)).is_none());
        // A header's key length written long.
        let header = [0x14, 0, 0, 0, 0x01, 0x01, 0x02, 0x82, 0x00, b'k', 0x01];
        assert!(parse_record(&mut Cur(&header)).is_none());
        let header = [0x12, 0, 0, 0, 0x01, 0x01, 0x02, 0x02, b'k', 0x01];
        assert!(parse_record(&mut Cur(&header)).is_some());
    }

    #[test]
    fn empty_batch_is_61_bytes() {
        let b = encode_records(&json!([empty_batch()]), "r").unwrap();
        assert_eq!(b.len(), 61);
        assert_eq!(&b[8..12], &49i32.to_be_bytes());
        assert_eq!(b[16], 2);
        assert_eq!(parse_records(&b).unwrap(), json!([empty_batch()]));
    }

    #[test]
    fn codecs_round_trip() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for codec in 0..5u8 {
            let c = compress(codec, &data).unwrap();
            assert_eq!(decompress(codec, &c, MAX_DECOMPRESSED).unwrap(), data);
            assert!(decompress(codec, &c, 10).is_none() || codec == 0);
        }
    }
}
