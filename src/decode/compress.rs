//! Decompression of record data, with a cap on the output.
//!
//! Kafka's codecs (attributes bits 0-2 of a RecordBatch or legacy message): gzip
//! (multi-member), snappy (raw, or the xerial/snappy-java framing Java clients write),
//! LZ4 frames (with the broken header checksum of Kafka 0.8-0.10 magic-0 messages) and
//! zstd. No codec writes more than `cap` bytes: each output goes through
//! `Read::take(cap + 1)`, and snappy's declared lengths are checked before allocating.

use std::io::Read;

/// A compression codec, from attributes bits 0-2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// 0: no compression.
    None,
    /// 1: gzip.
    Gzip,
    /// 2: snappy.
    Snappy,
    /// 3: LZ4 frame.
    Lz4,
    /// 4: zstd.
    Zstd,
    /// 5-7: not defined by Kafka.
    Unknown(u8),
}

impl Codec {
    /// The codec of attributes bits 0-2.
    pub fn from_attributes(attributes: i64) -> Codec {
        match attributes & 0x07 {
            0 => Codec::None,
            1 => Codec::Gzip,
            2 => Codec::Snappy,
            3 => Codec::Lz4,
            4 => Codec::Zstd,
            n => Codec::Unknown(n as u8),
        }
    }

    /// The codec's name as Kafka spells it (`none`, `gzip`, ...).
    pub fn name(&self) -> String {
        match self {
            Codec::None => "none".into(),
            Codec::Gzip => "gzip".into(),
            Codec::Snappy => "snappy".into(),
            Codec::Lz4 => "lz4".into(),
            Codec::Zstd => "zstd".into(),
            Codec::Unknown(n) => format!("unknown codec {n}"),
        }
    }
}

/// The magic of snappy-java's framing (`SnappyOutputStream`).
const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";

/// What a decompression produced: the bytes and the framing it found.
#[derive(Debug)]
pub struct Decompressed {
    /// The decompressed bytes (at most the cap).
    pub data: Vec<u8>,
    /// A note on the framing (`xerial framing, 3 chunks`; `LZ4 header checksum of Kafka
    /// 0.8-0.10 ignored`), if any.
    pub note: Option<String>,
}

/// The error of output over `cap` bytes.
pub fn cap_error(cap: usize) -> String {
    format!("decompressed size exceeds the cap of {cap} bytes")
}

/// What went wrong, in words: the LZ4 frame decoder's errors by their meaning rather
/// than their Rust names; other codecs' messages as they are.
fn io_error_words(e: &std::io::Error) -> String {
    use lz4_flex::block::DecompressError as D;
    use lz4_flex::frame::Error as F;
    let Some(f) = e.get_ref().and_then(|x| x.downcast_ref::<F>()) else {
        return e.to_string();
    };
    match f {
        F::WrongMagicNumber => "not an LZ4 frame (wrong magic number)".into(),
        F::HeaderChecksumError => "the LZ4 frame header checksum does not match".into(),
        F::BlockChecksumError => "an LZ4 block checksum does not match".into(),
        F::ContentChecksumError => "the LZ4 content checksum does not match".into(),
        F::ContentLengthError { expected, actual } => {
            format!("the LZ4 frame says {expected} bytes, {actual} came out")
        }
        F::UnsupportedBlocksize(b) => format!("unsupported LZ4 block size code {b}"),
        F::UnsupportedVersion(v) => format!("unsupported LZ4 frame version {v}"),
        F::ReservedBitsSet => "reserved bits set in the LZ4 frame descriptor".into(),
        F::InvalidBlockInfo => "a malformed LZ4 block header".into(),
        F::BlockTooBig => "an LZ4 block larger than the frame's block size".into(),
        F::DictionaryNotSupported => "an LZ4 frame that needs a dictionary".into(),
        F::SkippableFrame(n) => format!("a skippable LZ4 frame of {n} bytes"),
        F::DecompressionError(d) => match d {
            D::OutputTooSmall { expected, actual } => {
                format!("an LZ4 block needs {expected} bytes of output, {actual} allowed")
            }
            D::LiteralOutOfBounds => "an LZ4 literal runs past the block".into(),
            D::ExpectedAnotherByte => "an LZ4 block ends in the middle of a sequence".into(),
            D::OffsetZero => "an LZ4 match with offset 0".into(),
            D::OffsetOutOfBounds => "an LZ4 match points before the start of the data".into(),
            _ => "an LZ4 block does not decompress".into(),
        },
        _ => e.to_string(),
    }
}

/// What a decompression is about to allocate, in bytes, said before it allocates (see
/// [`decompress_charged`]).
pub type Charge<'c> = &'c dyn Fn(usize);

/// Reads `r` (decompressing `packed` bytes) to its end, keeping at most `cap` bytes; the
/// output grows in steps, each charged before it is allocated.
fn read_capped(
    mut r: impl Read,
    packed: usize,
    cap: usize,
    what: &str,
    charge: Charge<'_>,
) -> Result<Vec<u8>, String> {
    let limit = cap.saturating_add(1);
    // Record data compresses 2-10x: start near the likely size rather than doubling up
    // from nothing (each doubling copies what was read so far), then double, by at most
    // 16 MiB a step.
    let mut want = packed.saturating_mul(4).clamp(4096, 16 << 20).min(limit);
    let mut out = Vec::new();
    loop {
        charge(want);
        out.reserve_exact(want);
        let got = (&mut r)
            .take(want as u64)
            .read_to_end(&mut out)
            .map_err(|e| format!("{what} data is corrupt: {}", io_error_words(&e)))?;
        if got < want || out.len() >= limit {
            break;
        }
        want = out.len().min(16 << 20).min(limit - out.len());
    }
    if out.len() > cap {
        return Err(cap_error(cap));
    }
    Ok(out)
}

/// Decompresses `data` with `codec`, writing at most `cap` bytes.
///
/// `legacy_lz4` allows the LZ4 header checksum that Kafka's magic-0 messages computed
/// over the wrong bytes.
///
/// # Errors
/// Corrupt data, an unknown codec, or output over `cap` ("decompressed size exceeds the
/// cap of N bytes").
pub fn decompress(
    codec: Codec,
    data: &[u8],
    cap: usize,
    legacy_lz4: bool,
) -> Result<Decompressed, String> {
    decompress_charged(codec, data, cap, legacy_lz4, &|_| {})
}

/// [`decompress`], saying to `charge` how many bytes it is about to allocate before it
/// does (where the size is not known up front, in growing steps), so that a caller can
/// count them against a memory budget first ([`crate::tree::Buffers::charge`]).
///
/// # Errors
/// As [`decompress`].
pub fn decompress_charged(
    codec: Codec,
    data: &[u8],
    cap: usize,
    legacy_lz4: bool,
    charge: Charge<'_>,
) -> Result<Decompressed, String> {
    if let Some(hit) = Recent::find(codec, data, cap, legacy_lz4) {
        // At most a quarter of the cache's few MiB: charged once copied.
        charge(hit.data.len());
        return Ok(hit);
    }
    // Defence in depth: a codec crate that panics on hostile input must not take the
    // inspector down.
    let inner =
        std::panic::AssertUnwindSafe(|| decompress_inner(codec, data, cap, legacy_lz4, charge));
    match std::panic::catch_unwind(inner) {
        Ok(r) => {
            if let Ok(d) = &r {
                Recent::keep(codec, data, legacy_lz4, d);
            }
            r
        }
        Err(_) => Err(format!("{} decoder failed on this data", codec.name())),
    }
}

/// Decompressed bytes kept for batches that come again ([`Recent`]), at most.
const RECENT_BYTES: usize = 8 << 20;
/// Compressed data shorter than this is not worth keeping.
const RECENT_MIN_PACKED: usize = 1024;

/// The last batches decompressed on this thread, so that a batch seen again is copied
/// rather than decompressed again: brokers store batches as producers send them, so a
/// capture of a pipeline holds each compressed batch in the Produce request and again
/// in every consumer's Fetch response. An entry matches only the same codec, the same
/// legacy-LZ4 leniency and the same compressed bytes (compared in full), and is used
/// only when its output fits the cap; only successful decompressions are kept. At most
/// [`RECENT_BYTES`] of output are kept, oldest dropped first.
#[derive(Default)]
struct Recent {
    entries: std::collections::VecDeque<RecentEntry>,
    bytes: usize,
}

struct RecentEntry {
    codec: Codec,
    legacy_lz4: bool,
    packed: Vec<u8>,
    data: Vec<u8>,
    note: Option<String>,
}

/// One cache for the whole process, shared by `kwire read`'s worker threads (a batch in
/// a Produce request and in the Fetch responses that carry it again are often decoded
/// on different threads), so its memory counts once.
static RECENT: std::sync::Mutex<Recent> = std::sync::Mutex::new(Recent {
    entries: std::collections::VecDeque::new(),
    bytes: 0,
});

impl Recent {
    fn find(codec: Codec, packed: &[u8], cap: usize, legacy_lz4: bool) -> Option<Decompressed> {
        if packed.len() < RECENT_MIN_PACKED {
            return None;
        }
        {
            let r = RECENT.lock().ok()?;
            let e = r.entries.iter().find(|e| {
                e.codec == codec
                    && e.legacy_lz4 == legacy_lz4
                    && e.packed.len() == packed.len()
                    && e.packed == packed
            })?;
            (e.data.len() <= cap).then(|| Decompressed {
                data: e.data.clone(),
                note: e.note.clone(),
            })
        }
    }

    fn keep(codec: Codec, packed: &[u8], legacy_lz4: bool, d: &Decompressed) {
        let size = packed.len() + d.data.len();
        if packed.len() < RECENT_MIN_PACKED || size > RECENT_BYTES / 4 {
            return;
        }
        {
            let Ok(mut r) = RECENT.lock() else {
                return;
            };
            while r.bytes + size > RECENT_BYTES {
                match r.entries.pop_front() {
                    Some(old) => r.bytes -= old.packed.len() + old.data.len(),
                    None => break,
                }
            }
            r.bytes += size;
            r.entries.push_back(RecentEntry {
                codec,
                legacy_lz4,
                packed: packed.to_vec(),
                data: d.data.clone(),
                note: d.note.clone(),
            });
        }
    }
}

fn decompress_inner(
    codec: Codec,
    data: &[u8],
    cap: usize,
    legacy_lz4: bool,
    charge: Charge<'_>,
) -> Result<Decompressed, String> {
    let plain = |data| Ok(Decompressed { data, note: None });
    match codec {
        Codec::None => {
            if data.len() > cap {
                return Err(cap_error(cap));
            }
            charge(data.len());
            plain(data.to_vec())
        }
        Codec::Gzip => plain(read_capped(
            flate2::read::MultiGzDecoder::new(data),
            data.len(),
            cap,
            "gzip",
            charge,
        )?),
        Codec::Snappy => snappy(data, cap, charge),
        Codec::Lz4 => lz4(data, cap, legacy_lz4, charge),
        Codec::Zstd => {
            if let Some(out) = zstd_one_shot(data, cap, charge) {
                return plain(out);
            }
            let d = zstd::stream::read::Decoder::with_buffer(data)
                .map_err(|e| format!("zstd decoder: {e}"))?;
            plain(read_capped(d, data.len(), cap, "zstd", charge)?)
        }
        Codec::Unknown(n) => Err(format!("unknown compression codec {n}")),
    }
}

/// Largest ratio of stated to compressed size that [`zstd_one_shot`] sizes a buffer for;
/// beyond it the streaming decoder grows its output as real data comes.
const ZSTD_ONE_SHOT_RATIO: usize = 64;

/// Decodes a zstd frame that states its decompressed size (librdkafka and one-shot
/// compressors write it; Java's streaming producer does not) in one call, straight into
/// a buffer of that size, with a context reused across calls. `None` leaves the data to
/// the streaming decoder: no stated size, a size over the cap or over
/// [`ZSTD_ONE_SHOT_RATIO`] times the input, several frames, or corrupt data (which the
/// streaming decoder then reports).
fn zstd_one_shot(data: &[u8], cap: usize, charge: Charge<'_>) -> Option<Vec<u8>> {
    thread_local! {
        static DCTX: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    let n = zstd::zstd_safe::get_frame_content_size(data).ok()??;
    let n = usize::try_from(n)
        .ok()
        .filter(|n| *n <= cap && *n <= data.len().saturating_mul(ZSTD_ONE_SHOT_RATIO))?;
    DCTX.with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        if c.is_none() {
            *c = zstd::bulk::Decompressor::new().ok();
        }
        charge(n);
        let mut out = Vec::with_capacity(n);
        c.as_mut()?.decompress_to_buffer(data, &mut out).ok()?;
        (out.len() == n).then_some(out)
    })
}

fn snappy_raw(data: &[u8], cap: usize, charge: Charge<'_>) -> Result<Vec<u8>, String> {
    let n = snap::raw::decompress_len(data).map_err(|e| format!("snappy data is corrupt: {e}"))?;
    if n > cap {
        return Err(cap_error(cap));
    }
    charge(n);
    snap::raw::Decoder::new()
        .decompress_vec(data)
        .map_err(|e| format!("snappy data is corrupt: {e}"))
}

fn snappy(data: &[u8], cap: usize, charge: Charge<'_>) -> Result<Decompressed, String> {
    if data.starts_with(XERIAL_MAGIC) {
        // magic (8), version int32, compatible version int32, then [int32 length, raw
        // snappy block]...
        if data.len() < 16 {
            return Err("snappy (xerial framing): header cut short".into());
        }
        let mut rest = &data[16..];
        let mut out: Vec<u8> = Vec::new();
        let mut chunks = 0usize;
        while !rest.is_empty() {
            if rest.len() < 4 {
                return Err(format!(
                    "snappy (xerial framing): chunk {chunks} length cut short"
                ));
            }
            let n = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            rest = &rest[4..];
            if n > rest.len() {
                return Err(format!(
                    "snappy (xerial framing): chunk {chunks} says {n} bytes, {} left",
                    rest.len()
                ));
            }
            let chunk = snappy_raw(&rest[..n], cap - out.len(), charge).map_err(|e| {
                if e.starts_with("decompressed") {
                    cap_error(cap)
                } else {
                    format!("chunk {chunks}: {e}")
                }
            })?;
            // The copy into `out` (which grows by doubling) costs as much again.
            charge(chunk.len());
            out.extend_from_slice(&chunk);
            rest = &rest[n..];
            chunks += 1;
        }
        return Ok(Decompressed {
            data: out,
            note: Some(format!("xerial framing, {chunks} chunks")),
        });
    }
    if data.starts_with(b"\xff\x06\x00\x00sNaPpY") {
        let out = read_capped(
            snap::read::FrameDecoder::new(data),
            data.len(),
            cap,
            "snappy",
            charge,
        )?;
        return Ok(Decompressed {
            data: out,
            note: Some("snappy framing format".into()),
        });
    }
    Ok(Decompressed {
        data: snappy_raw(data, cap, charge)?,
        note: None,
    })
}

/// The offset of the header checksum byte of an LZ4 frame, when the frame descriptor is
/// there to read.
fn lz4_hc_offset(data: &[u8]) -> Option<usize> {
    if data.len() < 7 || data[..4] != [0x04, 0x22, 0x4d, 0x18] {
        return None;
    }
    let flg = data[4];
    let mut hc = 6;
    if flg & 0x08 != 0 {
        hc += 8; // content size
    }
    if flg & 0x01 != 0 {
        hc += 4; // dictionary id
    }
    (hc < data.len()).then_some(hc)
}

fn lz4(data: &[u8], cap: usize, legacy: bool, charge: Charge<'_>) -> Result<Decompressed, String> {
    if legacy {
        // Kafka before 0.10 (KafkaLZ4BlockOutputStream, magic 0) hashed the magic number
        // into the header checksum. When the stored byte is that one, put the right one in.
        if let Some(hc) = lz4_hc_offset(data) {
            let right = (twox_hash::XxHash32::oneshot(0, &data[4..hc]) >> 8) as u8;
            let kafka08 = (twox_hash::XxHash32::oneshot(0, &data[..hc]) >> 8) as u8;
            if data[hc] != right && data[hc] == kafka08 {
                let mut fixed = data.to_vec();
                fixed[hc] = right;
                let out = read_capped(
                    lz4_flex::frame::FrameDecoder::new(&fixed[..]),
                    fixed.len(),
                    cap,
                    "lz4",
                    charge,
                )?;
                return Ok(Decompressed {
                    data: out,
                    note: Some("header checksum of Kafka 0.8-0.10 (magic 0) accepted".into()),
                });
            }
        }
    }
    Ok(Decompressed {
        data: read_capped(
            lz4_flex::frame::FrameDecoder::new(data),
            data.len(),
            cap,
            "lz4",
            charge,
        )?,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Every codec says what it allocates before it does: the charges cover the output
    /// (and stay within a small factor of it, however the output grows).
    #[test]
    fn charges_cover_the_output() {
        let raw: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let gz = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&raw).unwrap();
            e.finish().unwrap()
        };
        let streamed = {
            let mut e = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
            e.write_all(&raw).unwrap();
            e.finish().unwrap()
        };
        let sized = zstd::bulk::compress(&raw, 1).unwrap();
        let lz4 = {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            e.write_all(&raw).unwrap();
            e.finish().unwrap()
        };
        let snappy = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
        for (codec, data) in [
            (Codec::Gzip, &gz),
            (Codec::Zstd, &streamed),
            (Codec::Zstd, &sized),
            (Codec::Lz4, &lz4),
            (Codec::Snappy, &snappy),
            (Codec::None, &raw),
        ] {
            let charged = std::cell::Cell::new(0usize);
            let charge = |n| charged.set(charged.get() + n);
            let d = decompress_charged(codec, data, 64 << 20, false, &charge).unwrap();
            assert_eq!(d.data, raw, "{codec:?}");
            let c = charged.get();
            assert!(
                c >= raw.len() && c <= 2 * raw.len() + (16 << 20),
                "{codec:?}: charged {c} for {} bytes",
                raw.len()
            );
        }
    }

    #[test]
    fn gzip_multi_member_and_cap() {
        let mut all = Vec::new();
        for part in [&b"hello "[..], b"world"] {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(part).unwrap();
            all.extend(e.finish().unwrap());
        }
        assert_eq!(
            decompress(Codec::Gzip, &all, 100, false).unwrap().data,
            b"hello world"
        );
        assert_eq!(
            decompress(Codec::Gzip, &all, 11, false).unwrap().data,
            b"hello world"
        );
        let e = decompress(Codec::Gzip, &all, 10, false).unwrap_err();
        assert!(e.contains("cap of 10 bytes"), "{e}");
    }

    #[test]
    fn snappy_raw_and_xerial() {
        let text = b"abcabcabcabcabcabc the quick brown fox".repeat(10);
        let raw = snap::raw::Encoder::new().compress_vec(&text).unwrap();
        assert_eq!(
            decompress(Codec::Snappy, &raw, 1 << 20, false)
                .unwrap()
                .data,
            text
        );
        assert!(decompress(Codec::Snappy, &raw, 10, false)
            .unwrap_err()
            .contains("cap of 10"));
        let mut x = XERIAL_MAGIC.to_vec();
        x.extend(1i32.to_be_bytes());
        x.extend(1i32.to_be_bytes());
        for chunk in text.chunks(100) {
            let c = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
            x.extend((c.len() as i32).to_be_bytes());
            x.extend(c);
        }
        let d = decompress(Codec::Snappy, &x, 1 << 20, false).unwrap();
        assert_eq!(d.data, text);
        assert_eq!(d.note.as_deref(), Some("xerial framing, 4 chunks"));
        assert!(decompress(Codec::Snappy, &x, 150, false)
            .unwrap_err()
            .contains("cap of 150"));
        // cut chunk
        assert!(decompress(Codec::Snappy, &x[..x.len() - 3], 1 << 20, false).is_err());
    }

    #[test]
    fn lz4_legacy_checksum() {
        let text = b"legacy lz4 legacy lz4 legacy lz4".to_vec();
        let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
        e.write_all(&text).unwrap();
        let good = e.finish().unwrap();
        assert_eq!(
            decompress(Codec::Lz4, &good, 1000, false).unwrap().data,
            text
        );
        // Kafka 0.8's checksum: over magic and descriptor
        let hc = lz4_hc_offset(&good).unwrap();
        let mut broken = good.clone();
        broken[hc] = (twox_hash::XxHash32::oneshot(0, &good[..hc]) >> 8) as u8;
        assert_ne!(broken[hc], good[hc]);
        assert!(decompress(Codec::Lz4, &broken, 1000, false).is_err());
        let d = decompress(Codec::Lz4, &broken, 1000, true).unwrap();
        assert_eq!(d.data, text);
        assert!(d.note.is_some());
    }

    #[test]
    fn zstd_one_shot_and_streaming_agree() {
        // Letters from a little xorshift: compresses about 1.5 times, like record data.
        let mut x = 0x2545_f491_u32;
        let text: Vec<u8> = (0..100_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                b'a' + (x % 26) as u8
            })
            .collect();
        // bulk::compress states the size: one shot.
        let sized = zstd::bulk::compress(&text, 3).unwrap();
        assert!(zstd_one_shot(&sized, 1 << 20, &|_| {}).is_some());
        // A streaming encoder does not: the streaming decoder.
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        e.write_all(&text).unwrap();
        let streamed = e.finish().unwrap();
        assert!(zstd_one_shot(&streamed, 1 << 20, &|_| {}).is_none());
        // Two frames, the first stating its size: the second is not lost.
        let two = [sized.clone(), sized.clone()].concat();
        assert!(zstd_one_shot(&two, 1 << 20, &|_| {}).is_none());
        for (data, want) in [
            (&sized, text.clone()),
            (&streamed, text.clone()),
            (&two, [text.clone(), text.clone()].concat()),
        ] {
            assert_eq!(
                decompress(Codec::Zstd, data, 1 << 20, false).unwrap().data,
                want
            );
        }
        // A stated size over the cap, or a lie about it: the streaming decoder decides.
        assert!(zstd_one_shot(&sized, 1000, &|_| {}).is_none());
        assert!(decompress(Codec::Zstd, &sized, 1000, false)
            .unwrap_err()
            .contains("cap of 1000"));
        let mut lying = sized.clone();
        // Frame header: magic (4), descriptor (1), then the content size field; its
        // width follows from the descriptor's top two bits (0 with single segment: 1 byte).
        let fcs_at = 5 + usize::from(lying[4] & 0x20 == 0);
        lying[fcs_at] ^= 0x01;
        assert!(zstd_one_shot(&lying, 1 << 20, &|_| {}).is_none());
    }

    #[test]
    fn a_batch_seen_again_comes_from_the_recent_ones_within_the_cap_and_codec() {
        let text: Vec<u8> = (0..20_000u32)
            .flat_map(|i| (i * 7919 % 1000).to_le_bytes())
            .collect();
        let z = zstd::stream::encode_all(&text[..], 1).unwrap();
        assert!(z.len() >= RECENT_MIN_PACKED, "{}", z.len());
        let first = decompress(Codec::Zstd, &z, 1 << 20, false).unwrap();
        assert_eq!(first.data, text);
        // The second time the bytes are found among the recent batches: same output.
        assert!(Recent::find(Codec::Zstd, &z, 1 << 20, false).is_some());
        assert_eq!(
            decompress(Codec::Zstd, &z, 1 << 20, false).unwrap().data,
            text
        );
        // A smaller cap still applies to a batch seen before.
        assert!(Recent::find(Codec::Zstd, &z, text.len() - 1, false).is_none());
        let e = decompress(Codec::Zstd, &z, text.len() - 1, false).unwrap_err();
        assert!(e.contains("cap of"), "{e}");
        // The same bytes under another codec are not the same batch.
        assert!(Recent::find(Codec::Gzip, &z, 1 << 20, false).is_none());
        assert!(decompress(Codec::Gzip, &z, 1 << 20, false).is_err());
        // Nor are other bytes of the same length.
        let mut other = z.clone();
        let last = other.len() - 1;
        other[last] ^= 0xff;
        assert!(Recent::find(Codec::Zstd, &other, 1 << 20, false).is_none());
    }

    #[test]
    fn zstd_cap() {
        let big = vec![0u8; 100_000];
        let z = zstd::encode_all(&big[..], 3).unwrap();
        assert_eq!(
            decompress(Codec::Zstd, &z, 100_000, false)
                .unwrap()
                .data
                .len(),
            100_000
        );
        assert!(decompress(Codec::Zstd, &z, 99_999, false)
            .unwrap_err()
            .contains("cap of 99999 bytes"));
        assert!(decompress(Codec::Zstd, &z[..z.len() / 2], 1 << 20, false).is_err());
        assert!(decompress(Codec::Unknown(6), &z, 10, false).is_err());
    }
}
