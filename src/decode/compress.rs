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
#[derive(Clone, Debug)]
pub struct Decompressed {
    /// The decompressed bytes (at most the cap).
    pub data: Vec<u8>,
    /// A note on the framing (`xerial framing, 3 chunks`; `LZ4 header checksum of Kafka
    /// 0.8-0.10 ignored`), if any.
    pub note: Option<String>,
    /// Something Kafka itself would read differently (LZ4 data of several frames, of
    /// which Kafka reads only the first), if any.
    pub warning: Option<String>,
    /// Compressed bytes left unread after the data that decoded: their offset inside the
    /// compressed data and what they are (bytes after the last LZ4 frame that are not a
    /// frame, or a later frame that fails). `data` holds what came before them.
    pub trailing: Option<(usize, String)>,
}

impl Decompressed {
    /// Bytes with no note, warning or trailing bytes.
    fn plain(data: Vec<u8>) -> Decompressed {
        Decompressed {
            data,
            note: None,
            warning: None,
            trailing: None,
        }
    }
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
    out: Decompressed,
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
            (e.out.data.len() <= cap).then(|| e.out.clone())
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
                    Some(old) => r.bytes -= old.packed.len() + old.out.data.len(),
                    None => break,
                }
            }
            r.bytes += size;
            r.entries.push_back(RecentEntry {
                codec,
                legacy_lz4,
                packed: packed.to_vec(),
                out: d.clone(),
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
    let plain = |data| Ok(Decompressed::plain(data));
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
            // The streaming decoder holds a window buffer as large as a frame header
            // asks (up to the limit): checked and charged before it is allocated.
            let window = zstd_window(data)?;
            charge(window);
            let mut d = zstd::stream::read::Decoder::with_buffer(data)
                .map_err(|e| format!("zstd decoder: {e}"))?;
            d.window_log_max(ZSTD_WINDOW_LOG_MAX)
                .map_err(|e| format!("zstd decoder: {e}"))?;
            plain(read_capped(d, data.len(), cap, "zstd", charge)?)
        }
        Codec::Unknown(n) => Err(format!("unknown compression codec {n}")),
    }
}

/// The largest zstd window the streaming decoder accepts, as a power of two: 128 MiB,
/// zstd's own default limit for decoding (`ZSTD_WINDOWLOG_LIMIT_DEFAULT`), which covers
/// every level Kafka's producers write (`compression.zstd.level` up to 22, KIP-390).
const ZSTD_WINDOW_LOG_MAX: u32 = 27;

/// The window buffer, in bytes, that the streaming zstd decoder allocates for `data`: the
/// largest over its frames of the window a frame header states (its content size when
/// that is smaller, plus room for two blocks). Frames are walked by their compressed
/// sizes; the walk stops at anything that is not a whole frame, which the decoder then
/// reports.
///
/// # Errors
/// A frame whose window exceeds [`ZSTD_WINDOW_LOG_MAX`]: said as the window asked for and
/// the limit (not as corrupt data, which it need not be).
fn zstd_window(data: &[u8]) -> Result<usize, String> {
    const BLOCK: u64 = 128 << 10;
    let limit = 1u64 << ZSTD_WINDOW_LOG_MAX;
    let mut need = 0u64;
    let mut at = 0usize;
    let mut frame = 0usize;
    while let Some(f) = data.get(at..).filter(|f| f.len() >= 6) {
        if f[..4] == [0x28, 0xb5, 0x2f, 0xfd] {
            let fhd = f[4];
            let single = fhd & 0x20 != 0;
            let dict_len = [0usize, 1, 2, 4][usize::from(fhd & 0x03)];
            let fcs_len = match fhd >> 6 {
                0 => usize::from(single),
                1 => 2,
                2 => 4,
                _ => 8,
            };
            let fcs_at = 5 + usize::from(!single) + dict_len;
            let fcs = f.get(fcs_at..fcs_at + fcs_len).map(|b| {
                let mut v = [0u8; 8];
                v[..b.len()].copy_from_slice(b);
                u64::from_le_bytes(v) + if b.len() == 2 { 256 } else { 0 }
            });
            let window = if single {
                fcs
            } else {
                let wd = f[5];
                let base = 1u64 << (10 + u32::from(wd >> 3));
                Some(base + base / 8 * u64::from(wd & 0x07))
            };
            let Some(window) = window else { break };
            if window > limit {
                return Err(format!(
                    "zstd frame {} at byte {at} asks for a window of {window} bytes ({} MiB), over the decoder's limit of {limit} bytes ({} MiB)",
                    frame + 1,
                    window >> 20,
                    limit >> 20
                ));
            }
            let buffer = match fcs.filter(|_| fcs_len > 0) {
                Some(n) => window.saturating_add(2 * BLOCK).min(n),
                None => window.saturating_add(2 * BLOCK),
            };
            need = need.max(buffer);
        }
        match zstd::zstd_safe::find_frame_compressed_size(f) {
            Ok(n) if n > 0 => at += n,
            _ => break,
        }
        frame += 1;
    }
    Ok(usize::try_from(need).unwrap_or(usize::MAX))
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
            note: Some(format!(
                "xerial framing, {}",
                crate::text::count(chunks as u64, "chunk", "chunks")
            )),
            ..Decompressed::plain(out)
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
            note: Some("snappy framing format".into()),
            ..Decompressed::plain(out)
        });
    }
    Ok(Decompressed::plain(snappy_raw(data, cap, charge)?))
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

/// Decodes LZ4 data: every frame, back to back.
///
/// Kafka's own reader (`KafkaLZ4BlockInputStream`) reads the first frame and ignores any
/// byte after it; here every frame is decoded, and data of several frames carries a
/// warning that says so. Bytes after the last frame that are not a frame (or a frame
/// that fails) end the data: the frames before them are kept, and
/// [`Decompressed::trailing`] says where and why. An error in the first frame is the
/// whole answer.
fn lz4(data: &[u8], cap: usize, legacy: bool, charge: Charge<'_>) -> Result<Decompressed, String> {
    if data.is_empty() {
        return Ok(Decompressed::plain(Vec::new()));
    }
    let (mut out, mut at, mut note) = lz4_frame(data, cap, legacy, charge)?;
    let first = out.len();
    let mut frames = 1usize;
    let mut trailing = None;
    while at < data.len() {
        let rest = &data[at..];
        let left = rest.len();
        let starts_a_frame = rest.len() >= 4
            && (rest[..4] == LZ4_MAGIC
                || rest[..4] == LZ4_LEGACY_MAGIC
                || rest[1..4] == [0x2a, 0x4d, 0x18] && rest[0] & 0xf0 == 0x50);
        if !starts_a_frame {
            trailing = Some((
                at,
                format!(
                    "{left} bytes after the last LZ4 frame (frame {frames} ends at byte {at} of the compressed data) are not an LZ4 frame"
                ),
            ));
            break;
        }
        match lz4_frame(rest, cap - out.len(), legacy, charge) {
            Ok((d, n, nn)) if n > 0 => {
                charge(d.len());
                out.extend_from_slice(&d);
                at += n;
                frames += 1;
                note = note.or(nn);
            }
            Ok(_) => {
                trailing = Some((
                    at,
                    format!("{left} bytes at byte {at} of the compressed data hold no LZ4 frame"),
                ));
                break;
            }
            Err(e) if e == cap_error(cap - out.len()) => return Err(cap_error(cap)),
            Err(e) => {
                trailing = Some((
                    at,
                    format!(
                        "LZ4 frame {} ({left} bytes at byte {at} of the compressed data): {}",
                        frames + 1,
                        e.strip_prefix("lz4 data is corrupt: ").unwrap_or(&e)
                    ),
                ));
                break;
            }
        }
    }
    let warning = (frames > 1).then(|| {
        format!(
            "LZ4 data of {frames} frames, decoded back to back: Kafka's reader stops after the first frame ({first} of {} decompressed bytes) and ignores the rest",
            out.len()
        )
    });
    Ok(Decompressed {
        data: out,
        note,
        warning,
        trailing,
    })
}

/// Decodes the one LZ4 frame at the start of `data`, writing at most `cap` bytes: its
/// output, the number of bytes of `data` it took, and a note (the header checksum of
/// Kafka 0.8-0.10 accepted, when `legacy`). Bytes after the frame are not looked at.
fn lz4_frame(
    data: &[u8],
    cap: usize,
    legacy: bool,
    charge: Charge<'_>,
) -> Result<(Vec<u8>, usize, Option<String>), String> {
    if legacy {
        // Kafka before 0.10 (KafkaLZ4BlockOutputStream, magic 0) hashed the magic number
        // into the header checksum. When the stored byte is that one, put the right one in.
        if let Some(hc) = lz4_hc_offset(data) {
            let right = (twox_hash::XxHash32::oneshot(0, &data[4..hc]) >> 8) as u8;
            let kafka08 = (twox_hash::XxHash32::oneshot(0, &data[..hc]) >> 8) as u8;
            if data[hc] != right && data[hc] == kafka08 {
                let mut fixed = data.to_vec();
                fixed[hc] = right;
                let (out, n) = lz4_by_frame_decoder(&fixed, cap, charge)?;
                let note = "header checksum of Kafka 0.8-0.10 (magic 0) accepted";
                return Ok((out, n, Some(note.into())));
            }
        }
    }
    if let Some((out, n)) = lz4_blocks(data, cap, charge) {
        return Ok((out, n, None));
    }
    let (out, n) = lz4_by_frame_decoder(data, cap, charge)?;
    Ok((out, n, None))
}

/// The first LZ4 frame of `data` read by `lz4_flex::frame::FrameDecoder` (which reads
/// exactly the frame's bytes and stops at its end): the output and the bytes taken.
fn lz4_by_frame_decoder(
    data: &[u8],
    cap: usize,
    charge: Charge<'_>,
) -> Result<(Vec<u8>, usize), String> {
    let mut src = data;
    let out = read_capped(
        lz4_flex::frame::FrameDecoder::new(&mut src),
        data.len(),
        cap,
        "lz4",
        charge,
    )?;
    Ok((out, data.len() - src.len()))
}

/// The LZ4 frame magic number, little-endian on the wire.
const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
/// The magic number of the legacy LZ4 frame format (`lz4 -l`), little-endian.
const LZ4_LEGACY_MAGIC: [u8; 4] = [0x02, 0x21, 0x4c, 0x18];
/// The largest block buffer [`lz4_blocks`] keeps on a thread between frames.
const LZ4_KEEP_BLOCK: usize = 1 << 20;
/// How far back an LZ4 match can reach (16-bit offsets): the dictionary of a linked block.
const LZ4_WINDOW: usize = 64 << 10;

/// Decodes a well-formed LZ4 frame block by block with `lz4_flex`'s block decoder, into
/// a block buffer kept on the thread, appending each block's output to the result. Like
/// `lz4_flex::frame::FrameDecoder` read to its end, it reads the first frame only and
/// does not look at bytes after it: it returns the output and the bytes the frame took.
///
/// `lz4_flex::frame::FrameDecoder` zero-fills a new block buffer of the frame's block
/// size (64 KiB to 4 MiB) for every frame it opens, which for the small batches of a
/// chatty capture costs more than the decompression itself. This path checks what the
/// frame decoder checks (version, reserved bits, block size code, header checksum, block
/// sizes, block and content checksums, content size) and hands back `None` on anything
/// else, or on anything wrong (an error, a legacy or skippable frame, a dictionary id,
/// output over `cap`), so that the frame decoder reads the data again and reports it in
/// its own words: both paths accept the same frames and give the same bytes (tested).
///
/// The output grows as [`read_capped`]'s does, each step charged before it is allocated.
/// A block buffer of up to [`LZ4_KEEP_BLOCK`] is kept on the thread; a larger one (a
/// frame of 4 MiB blocks) is freed after the frame.
fn lz4_blocks(data: &[u8], cap: usize, charge: Charge<'_>) -> Option<(Vec<u8>, usize)> {
    thread_local! {
        static BLOCK: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let xxh = |b: &[u8]| twox_hash::XxHash32::oneshot(0, b);
    let le32 = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let mut out = Vec::new();
    // Room for `n` more bytes, charged first: the first step near the likely size, then
    // doubling by at most 16 MiB a step, as `read_capped` grows.
    let room = |out: &mut Vec<u8>, n: usize| {
        if out.capacity() - out.len() < n {
            let first = data.len().saturating_mul(4).clamp(4096, 16 << 20).min(cap);
            let step = if out.capacity() == 0 {
                first
            } else {
                out.len().min(16 << 20)
            };
            let want = step.max(n);
            charge(want);
            out.reserve_exact(want);
        }
    };
    // Frame descriptor: magic, FLG, BD, [content size], [dictionary id], HC.
    if data.len() < 7 || data[..4] != LZ4_MAGIC {
        return None;
    }
    let (flg, bd) = (data[4], data[5]);
    // Version 01; reserved bits clear; no dictionary id (the frame decoder has none).
    if flg & 0xc0 != 0x40 || flg & 0x03 != 0 || bd & 0x8f != 0 {
        return None;
    }
    let block_max = match (bd >> 4) & 0x07 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return None,
    };
    let linked = flg & 0x20 == 0;
    let block_sums = flg & 0x10 != 0;
    let mut at = 6;
    let mut content_size = None;
    if flg & 0x08 != 0 {
        content_size = Some(u64::from_le_bytes(data.get(6..14)?.try_into().ok()?));
        at = 14;
    }
    if *data.get(at)? != (xxh(&data[4..at]) >> 8) as u8 {
        return None;
    }
    at += 1;
    loop {
        // Block: size (high bit: stored uncompressed; 0: the end mark), data, [checksum].
        let info = le32(data, at)?;
        at += 4;
        if info == 0 {
            break;
        }
        let len = (info & 0x7fff_ffff) as usize;
        if len > block_max {
            return None;
        }
        let block = data.get(at..at + len)?;
        at += len;
        if block_sums {
            if le32(data, at)? != xxh(block) {
                return None;
            }
            at += 4;
        }
        if info & 0x8000_0000 != 0 {
            if out.len() + len > cap {
                return None;
            }
            room(&mut out, len);
            out.extend_from_slice(block);
            continue;
        }
        BLOCK.with(|b| {
            let mut b = b.try_borrow_mut().ok()?;
            if b.len() < block_max {
                // A fresh zeroed allocation rather than `resize`, which writes every byte
                // of the block size: from 1 MiB (`memory::MMAP_THRESHOLD`) glibc maps
                // it, the kernel's zero pages, so only the pages the decoder writes are
                // touched (a frame of 4 MiB blocks, freed after each frame, was a 4 MiB
                // memset per frame, 10% of a bulk summary's instructions).
                *b = vec![0; block_max];
            }
            let buf = &mut b[..block_max];
            let n = if linked {
                // A linked block's matches may reach into the frame's last 64 KiB.
                let dict = &out[out.len().saturating_sub(LZ4_WINDOW)..];
                lz4_flex::block::decompress_into_with_dict(block, buf, dict)
            } else {
                lz4_flex::block::decompress_into(block, buf)
            }
            .ok()?;
            if out.len() + n > cap {
                return None;
            }
            room(&mut out, n);
            out.extend_from_slice(&buf[..n]);
            if b.len() > LZ4_KEEP_BLOCK {
                *b = Vec::new();
            }
            Some(())
        })?;
    }
    if content_size.is_some_and(|s| s != out.len() as u64) {
        return None;
    }
    if flg & 0x04 != 0 {
        if le32(data, at)? != xxh(&out) {
            return None;
        }
        at += 4;
    }
    Some((out, at))
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

    /// What `lz4_flex`'s frame decoder alone makes of the first frame of `data` under
    /// `cap` (its bytes, and the bytes it took): the reference the block path must agree
    /// with.
    fn frame_decoder_alone(data: &[u8], cap: usize) -> Result<(Vec<u8>, usize), String> {
        lz4_by_frame_decoder(data, cap, &|_| {})
    }

    /// One frame as [`lz4`] reads it (the block path, else the frame decoder).
    fn one_frame(data: &[u8], cap: usize) -> Result<(Vec<u8>, usize), String> {
        lz4_frame(data, cap, false, &|_| {}).map(|(d, n, _)| (d, n))
    }

    /// The block path gives the frame decoder's bytes on every frame layout (block sizes,
    /// linked and independent blocks, block and content checksums, content size, a second
    /// frame after the first, which both leave unread), takes the same bytes, and on
    /// every corruption of them gives exactly the frame decoder's result (the block path
    /// hands those back to it).
    #[test]
    fn lz4_block_path_agrees_with_the_frame_decoder() {
        use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
        // Compressible, with matches reaching back across block boundaries.
        let mut text = Vec::new();
        let mut x: u32 = 7;
        while text.len() < 300_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let word =
                [b"order-", &b"page-view-"[..], b"trace-id=", b"{\"k\":"][(x >> 16) as usize % 4];
            text.extend_from_slice(word);
            text.extend_from_slice((x % 1000).to_string().as_bytes());
        }
        let mut frames = Vec::new();
        for (size, mode, bsum, csum, csize, n) in [
            (
                BlockSize::Max64KB,
                BlockMode::Independent,
                false,
                false,
                false,
                200,
            ),
            (
                BlockSize::Max64KB,
                BlockMode::Linked,
                true,
                true,
                true,
                300_000,
            ),
            (
                BlockSize::Max256KB,
                BlockMode::Linked,
                false,
                true,
                false,
                300_000,
            ),
            (
                BlockSize::Max1MB,
                BlockMode::Independent,
                true,
                false,
                true,
                100_000,
            ),
            (
                BlockSize::Max4MB,
                BlockMode::Linked,
                false,
                false,
                false,
                5_000,
            ),
            (
                BlockSize::Max64KB,
                BlockMode::Linked,
                false,
                false,
                false,
                0,
            ),
        ] {
            let info = FrameInfo::new()
                .block_size(size)
                .block_mode(mode)
                .block_checksums(bsum)
                .content_checksum(csum)
                .content_size(csize.then_some(n as u64));
            let mut e = FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(&text[..n]).unwrap();
            frames.push(e.finish().unwrap());
        }
        // Incompressible data makes uncompressed blocks.
        let noise: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut e = FrameEncoder::new(Vec::new());
        e.write_all(&noise).unwrap();
        frames.push(e.finish().unwrap());
        frames.push([frames[0].clone(), frames[1].clone()].concat());
        for f in &frames {
            let want = frame_decoder_alone(f, 64 << 20).unwrap();
            let got = lz4_blocks(f, 64 << 20, &|_| {}).expect("the block path reads a good frame");
            assert!(
                got == want,
                "{} bytes, the frame decoder {}",
                got.0.len(),
                want.0.len()
            );
            // Under a cap too small for the output, the frame decoder's error.
            if want.0.len() > 10 {
                assert_eq!(lz4_blocks(f, want.0.len() - 1, &|_| {}), None);
                let got = one_frame(f, want.0.len() - 1);
                assert!(
                    got == frame_decoder_alone(f, want.0.len() - 1),
                    "cap {}",
                    want.0.len() - 1
                );
            }
            // Every byte flipped, cut short, or followed by junk: the same answer either way.
            let step = (f.len() / 300).max(1);
            for i in (0..f.len()).step_by(step) {
                let mut bad = f.clone();
                bad[i] ^= 0x5a;
                let got = one_frame(&bad, 64 << 20);
                assert!(got == frame_decoder_alone(&bad, 64 << 20), "flip at {i}");
                let cut = &f[..i];
                let got = one_frame(cut, 64 << 20);
                assert!(got == frame_decoder_alone(cut, 64 << 20), "cut at {i}");
            }
            let junk = [f.as_slice(), &[0x04, 0x22]].concat();
            let got = one_frame(&junk, 64 << 20);
            assert!(
                got == frame_decoder_alone(&junk, 64 << 20),
                "junk after the frame"
            );
        }
    }

    fn lz4_frame_of(text: &[u8]) -> Vec<u8> {
        let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
        e.write_all(text).unwrap();
        e.finish().unwrap()
    }

    /// LZ4 data of several frames decodes in full, with a warning that Kafka reads only
    /// the first; bytes after the last frame are reported at their offset with the frames
    /// before them kept; an error in the first frame is the whole answer.
    #[test]
    fn lz4_frames_back_to_back() {
        let (a, b) = (b"first frame, ".repeat(20), b"second frame. ".repeat(30));
        let (fa, fb) = (lz4_frame_of(&a), lz4_frame_of(&b));
        let two = [fa.clone(), fb.clone()].concat();
        let d = decompress(Codec::Lz4, &two, 1 << 20, false).unwrap();
        assert_eq!(d.data, [a.clone(), b.clone()].concat());
        let w = d.warning.expect("a warning for two frames");
        assert!(w.contains("2 frames") && w.contains("Kafka"), "{w}");
        assert!(
            w.contains(&format!(
                "first frame ({} of {}",
                a.len(),
                a.len() + b.len()
            )),
            "{w}"
        );
        assert_eq!(d.trailing, None);
        // One frame: no warning.
        let d = decompress(Codec::Lz4, &fa, 1 << 20, false).unwrap();
        assert_eq!((d.data, d.warning, d.trailing), (a.clone(), None, None));
        // 16 bytes of garbage after the frames: kept apart, at their offset.
        let junk = [two.clone(), vec![0xab; 16]].concat();
        let d = decompress(Codec::Lz4, &junk, 1 << 20, false).unwrap();
        assert_eq!(d.data.len(), a.len() + b.len());
        let (at, why) = d.trailing.expect("the garbage is reported");
        assert_eq!(at, two.len());
        assert!(
            why.starts_with("16 bytes after the last LZ4 frame (frame 2 ends at byte"),
            "{why}"
        );
        // A second frame that fails: the first is kept, the failure said at its offset.
        let mut bad = two.clone();
        let last = bad.len() - 1; // the end mark: a block size past the data
        bad[last] ^= 0xff;
        let d = decompress(Codec::Lz4, &bad, 1 << 20, false).unwrap();
        assert_eq!(d.data, a);
        let (at, why) = d.trailing.unwrap();
        assert_eq!(at, fa.len());
        assert!(why.starts_with("LZ4 frame 2 ("), "{why}");
        // The cap covers all frames together.
        let e = decompress(Codec::Lz4, &two, a.len() + 10, false).unwrap_err();
        assert_eq!(e, cap_error(a.len() + 10));
        // An error in the first frame is the whole answer.
        let mut bad = two.clone();
        bad[4] ^= 0x01;
        assert!(decompress(Codec::Lz4, &bad, 1 << 20, false).is_err());
        // The charges cover every frame's output.
        let charged = std::cell::Cell::new(0usize);
        let d = decompress_charged(Codec::Lz4, &two, 1 << 20, false, &|n| {
            charged.set(charged.get() + n)
        })
        .unwrap();
        assert!(charged.get() >= d.data.len());
    }

    /// A zstd frame whose header asks for a window over the limit is said as such (the
    /// window and the limit), not as corrupt data; a legal window is charged before the
    /// streaming decoder allocates it.
    /// A zstd frame whose header has window descriptor exponent `exp` (a window of
    /// 2^(exp + 10) bytes), no content size, then one raw block of 3 bytes ("abc")
    /// marked last.
    fn zstd_raw_abc(exp: u8) -> [u8; 12] {
        [
            0x28,
            0xb5,
            0x2f,
            0xfd,
            0x00,
            exp << 3,
            0x19,
            0x00,
            0x00,
            b'a',
            b'b',
            b'c',
        ]
    }

    #[test]
    fn zstd_window_over_the_limit_and_charged() {
        // Window descriptor exponent 20: 2^30 bytes = 1 GiB.
        let huge = zstd_raw_abc(20);
        let e = decompress(Codec::Zstd, &huge, 1 << 20, false).unwrap_err();
        assert_eq!(
            e,
            "zstd frame 1 at byte 0 asks for a window of 1073741824 bytes (1024 MiB), over the decoder's limit of 134217728 bytes (128 MiB)"
        );
        assert!(!e.contains("corrupt"));
        // The same block under a window of 2^20 (exponent 10): decodes, and the window
        // (1 MiB and two blocks) is charged.
        let small = zstd_raw_abc(10);
        let charged = std::cell::RefCell::new(Vec::new());
        let d = decompress_charged(Codec::Zstd, &small, 1 << 20, false, &|n| {
            charged.borrow_mut().push(n)
        })
        .unwrap();
        assert_eq!(d.data, b"abc");
        assert_eq!(charged.borrow()[0], (1 << 20) + (256 << 10));
        assert_eq!(zstd_window(&small), Ok((1 << 20) + (256 << 10)));
        // A streamed frame of a real encoder: its window is charged, capped by nothing
        // it does not state.
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.write_all(&[7u8; 100_000]).unwrap();
        let streamed = enc.finish().unwrap();
        let w = zstd_window(&streamed).unwrap();
        assert!(w > 0 && w <= (8 << 20) + (256 << 10), "{w}");
    }
}
