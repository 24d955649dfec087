//! Input layer: from capture files (pcap / pcapng) to whole Kafka frames with context, and
//! from hex dumps and base64 text to bytes ([`hex`]).
//!
//! The pipeline is:
//!
//! 1. [`capture`]: a streaming pcap/pcapng record reader (`pcap_parser::create_reader`) and a
//!    link/IP/TCP parser (etherparse; IPv4/IPv6 fragments are reassembled).
//! 2. [`tcp`]: TCP reassembly per connection and direction by sequence number (RFC 793 / RFC 9293).
//! 3. [`framer`]: Kafka framing (4-byte big-endian size prefix) and resynchronisation;
//!    [`conn`]: per connection, which side is the server, TLS and SASL v0 raw-token
//!    detection.
//! 4. [`pair`]: request/response pairing by correlation id (used by the decoder side).
//!
//! This layer only knows bytes: it never decodes a Kafka body. The decoder tells it what looks
//! like a plausible Kafka header through [`FramePlausibility`].
//!
//! Entry point: [`read_capture`]. A live capture ([`live`]) runs dumpcap or tcpdump and
//! hands [`read_capture`] the stream it writes. For packet sources other than capture files, the lower-level
//! [`Extractor`] can be fed with link-layer records directly.

pub mod capture;
pub mod conn;
pub mod framer;
pub mod hex;
pub mod live;
mod order;
pub mod pair;
pub mod pcap_out;
pub mod resync;
pub mod tcp;
pub mod tls;

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

pub use capture::{read_capture, read_capture_observed, CaptureObserver, Extractor, Links};
pub use pair::{PairedRequest, Pairer, PendingRequest, RecordSet};

/// A capture timestamp: seconds and nanoseconds since the Unix epoch (UTC), as recorded in the
/// pcap record header or pcapng Enhanced Packet Block (scaled by the interface's `if_tsresol`
/// and shifted by `if_tsoffset`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    pub secs: i64,
    /// Nanoseconds within the second, `0..1_000_000_000`.
    pub nanos: u32,
}

impl Timestamp {
    /// Nanoseconds elapsed from `earlier` to `self` (negative if `self` is earlier).
    pub fn nanos_since(&self, earlier: &Timestamp) -> i128 {
        (self.secs as i128 - earlier.secs as i128) * 1_000_000_000 + self.nanos as i128
            - earlier.nanos as i128
    }
}

/// Direction of a byte stream within a Kafka connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to broker: requests (`c>s`).
    ToServer,
    /// Broker to client: responses (`s>c`).
    ToClient,
}

impl Direction {
    /// `"c>s"` or `"s>c"`.
    pub fn arrow(&self) -> &'static str {
        match self {
            Direction::ToServer => "c>s",
            Direction::ToClient => "s>c",
        }
    }
}

/// What a frame holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// A Kafka request (direction [`Direction::ToServer`]) or response
    /// ([`Direction::ToClient`]) with its header.
    Kafka,
    /// A raw SASL token (size prefix + opaque bytes, no Kafka header), sent after a
    /// SaslHandshake v0 exchange that succeeded (KIP-43).
    SaslToken,
}

/// Where a frame came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameContext {
    /// 1-based record number (in file order, counting only packet records/blocks) of the
    /// segment that carried the frame's first byte.
    pub first_frame: u64,
    /// 1-based record number of the segment that carried the frame's last byte.
    pub last_frame: u64,
    /// Capture time of the segment that carried the last byte.
    pub time: Timestamp,
    /// Sender address and port.
    pub src: SocketAddr,
    /// Receiver address and port.
    pub dst: SocketAddr,
    /// 1-based connection id, in order of first appearance in the capture.
    pub connection: u32,
    /// Direction of this frame.
    pub direction: Direction,
    /// Byte offset of the frame's first byte (its size prefix) in this direction's byte
    /// stream; offset 0 is the byte after the SYN (ISN + 1), or the first byte seen when the
    /// capture starts mid-stream.
    pub stream_offset: u64,
    /// True when a gap (lost segment or snaplen-truncated record) hit this frame: `bytes` then
    /// holds only the bytes before the gap, and is shorter than the size prefix says.
    pub incomplete: bool,
    /// For a frame decrypted from TLS: the session and the records that carried it. Then
    /// `stream_offset` counts bytes of the decrypted stream, and the record numbers are
    /// those of the packets that completed each TLS record.
    pub tls: Option<tls::TlsFrameInfo>,
    /// Where the frame's bytes lie among the capture's records, to read them again
    /// without the records before them ([`crate::index`]).
    pub origin: Origin,
}

/// Where a frame's bytes lie among the capture's records: what re-reading the frame alone
/// needs ([`crate::index`] keeps it for every message).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The lowest record number (1-based) among the records whose bytes the frame holds:
    /// below [`FrameContext::first_frame`] when a segment arrived out of order.
    pub low_record: u64,
    /// The highest record number among them (at least [`FrameContext::last_frame`]).
    pub high_record: u64,
    /// The TCP sequence number of the frame's first byte (its size prefix), in its
    /// direction; `None` for a frame decrypted from TLS (its bytes are plaintext, at no
    /// sequence number of the TCP stream).
    pub tcp_seq: Option<u32>,
}

/// A whole frame cut from a TCP byte stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Context: record numbers, time, endpoints, connection, direction.
    pub ctx: FrameContext,
    /// Kafka PDU or raw SASL token.
    pub kind: FrameKind,
    /// The frame bytes including the 4-byte big-endian size prefix. When `ctx.incomplete`, a
    /// prefix of the frame only.
    pub bytes: Vec<u8>,
}

/// Category of a [`Notice`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// A record's captured length is less than its original length (snaplen cut).
    Truncated,
    /// The capture file ends inside a record (record claims more bytes than the file
    /// holds).
    FileTruncated,
    /// A record or block of the capture file that cannot be parsed (a wrong type or
    /// length, a length past any record's): the file is corrupt there, not cut, and
    /// reading stops at it.
    CorruptRecord,
    /// A link type this layer cannot parse (reported once per link type).
    UnsupportedLinkType,
    /// An IP fragment that could not be reassembled, or an IP/TCP header that could not be
    /// parsed.
    Malformed,
    /// Bytes missing from a TCP stream (lost segment).
    Gap,
    /// Bytes skipped while looking for the next plausible frame start.
    Resync,
    /// A frame whose size prefix exceeds [`CaptureOptions::max_frame`].
    Oversize,
    /// TLS: a connection (or part of one) that stayed encrypted and why, a record that
    /// does not decrypt, an alert, a renegotiation attempt, a garbled handshake, a key log
    /// line that cannot be used.
    Tls,
    /// Out-of-order data dropped because the buffer was full, or a connection evicted.
    Dropped,
    /// A frame cut short because the stream ended (FIN/RST/end of capture) before its end.
    Unfinished,
    /// A pending request was dropped by the [`Pairer`] or never got a response.
    Unanswered,
    /// The in-flight budget of all connections ([`CaptureOptions::max_in_flight`]) was
    /// passed: one notice at the end counts the partial frames it cut (each has a
    /// [`NoticeKind::Dropped`] notice of its own).
    Budget,
    /// Informational: e.g. SASL raw tokens start/end.
    Info,
}

/// Something skipped or suspicious, with enough context to find it in the capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Category.
    pub kind: NoticeKind,
    /// 1-based record number involved, if any.
    pub frame: Option<u64>,
    /// Connection id involved, if any.
    pub connection: Option<u32>,
    /// Direction involved, if any.
    pub direction: Option<Direction>,
    /// Stream offset (bytes, see [`FrameContext::stream_offset`]) where it happened, if any.
    pub offset: Option<u64>,
    /// Number of bytes skipped or missing, if any.
    pub bytes: Option<u64>,
    /// Human-readable explanation: what was skipped and why.
    pub message: String,
}

impl Notice {
    pub(crate) fn new(kind: NoticeKind, message: impl Into<String>) -> Notice {
        Notice {
            kind,
            frame: None,
            connection: None,
            direction: None,
            offset: None,
            bytes: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(fr) = self.frame {
            write!(f, "frame {fr}: ")?;
        }
        if let Some(c) = self.connection {
            write!(f, "connection {c}")?;
            if let Some(d) = self.direction {
                write!(f, " {}", d.arrow())?;
            }
            if let Some(o) = self.offset {
                write!(f, " @{o}")?;
            }
            write!(f, ": ")?;
        }
        f.write_str(&self.message)
    }
}

/// Output of the input layer, in capture order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A whole Kafka frame or SASL token.
    Frame(Frame),
    /// Something skipped or reported.
    Notice(Notice),
}

/// Decides whether bytes look like the start of a Kafka request or response. Used to
/// resynchronise a stream after a gap or when the capture starts mid-stream, to recognise
/// the server side with [`CaptureOptions::detect`], and to detect the end of SASL v0 raw tokens.
///
/// `frame_after_size` is the frame body after the 4-byte size prefix: at least
/// `min(size, 64)` bytes (fewer only at the end of a stream), at most `size` bytes.
pub trait FramePlausibility {
    /// Does `frame_after_size` start with a plausible request header (api_key int16,
    /// api_version int16, correlation_id int32, client_id nullable string, ...)?
    fn plausible_request(&self, frame_after_size: &[u8]) -> bool;
    /// Does `frame_after_size` start with a plausible response header (correlation_id int32)?
    fn plausible_response(&self, frame_after_size: &[u8]) -> bool;
    /// Does `frame_after_size` (a response) carry the correlation_id of a request seen on
    /// its connection? The evidence a response too large to hold whole needs while
    /// resynchronising ([`resync`]). Default: no.
    fn known_correlation(&self, _frame_after_size: &[u8]) -> bool {
        false
    }
}

/// A schema-free [`FramePlausibility`] for tests and as a fallback: request api_key `0..=100`,
/// api_version `0..=20`, correlation_id `>= 0`, client_id length `-1..=1024` and fitting in
/// the frame; response correlation_id `>= 0` and at least 4 bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultPlausibility;

impl FramePlausibility for DefaultPlausibility {
    fn plausible_request(&self, b: &[u8]) -> bool {
        plausible_request_header(
            b,
            |key, ver| (0..=100).contains(&key) && (0..=20).contains(&ver),
            1024,
        )
    }
    fn plausible_response(&self, b: &[u8]) -> bool {
        b.len() >= 4 && i32::from_be_bytes([b[0], b[1], b[2], b[3]]) >= 0
    }
}

/// Whether `b` (a frame after its size prefix) starts like a request header v1/v2: an
/// (api_key, api_version) that `known` accepts, a non-negative correlation_id, and a
/// client_id length from -1 to `max_client_id` that fits what is there (or runs past
/// the 64 bytes a plausibility check sees).
pub fn plausible_request_header(
    b: &[u8],
    known: impl Fn(i16, i16) -> bool,
    max_client_id: i16,
) -> bool {
    if b.len() < 10 {
        return false;
    }
    let key = i16::from_be_bytes([b[0], b[1]]);
    let ver = i16::from_be_bytes([b[2], b[3]]);
    let corr = i32::from_be_bytes([b[4], b[5], b[6], b[7]]);
    let cid = i16::from_be_bytes([b[8], b[9]]);
    known(key, ver)
        && corr >= 0
        && (-1..=max_client_id).contains(&cid)
        && (cid < 0 || b.len() >= 10 + cid as usize || b.len() >= 64)
}

/// Options for [`read_capture`] / [`Extractor`].
#[derive(Clone, Debug)]
pub struct CaptureOptions {
    /// Broker ports: a TCP connection is Kafka if either port is in this set; the side using
    /// that port is the server. Default `[9092]`.
    pub ports: Vec<u16>,
    /// When true, every TCP connection is a candidate, and the server side is recognised from
    /// the first plausible request (or the SYN). Default false.
    pub detect: bool,
    /// Largest accepted frame, size prefix included, in bytes. Larger frames are reported
    /// ([`NoticeKind::Oversize`]) and skipped without being buffered. Default 100 MiB.
    pub max_frame: usize,
    /// Cap on buffered out-of-order bytes per connection direction; when exceeded, the missing
    /// data is declared lost (a gap). Default 4 MiB.
    pub max_out_of_order: usize,
    /// Closed connections remembered (to ignore late retransmissions) before being dropped.
    /// Default 4096.
    pub max_closed: usize,
    /// The in-flight budget, in bytes, of all connections together: out-of-order
    /// segments, partial frames, bytes held while resynchronising or while deciding what a
    /// connection carries, TLS records not yet whole, per-connection state, and frames
    /// waiting for their turn in the output order. Past it, the connections holding the
    /// oldest bytes give them up: missing segments are declared lost, partial frames are
    /// emitted as incomplete with a [`NoticeKind::Dropped`] notice (the rest of each is
    /// skipped as it comes), and a last notice counts them. One connection alone may
    /// hold one frame of up to [`CaptureOptions::max_frame`]. Default 16 MiB.
    pub max_in_flight: usize,
    /// Seconds of capture time after which a connection that sent nothing gives up what
    /// it holds, as the budget sheds it (missing segments lost, a partial frame emitted
    /// as incomplete); the connection itself stays known. `0`: never. Default 600 (Kafka
    /// brokers close connections idle for `connections.max.idle.ms`, 10 minutes by
    /// default).
    pub idle_timeout: u64,
    /// Initial capacity of the capture reader buffer in bytes; it grows up to 16 MiB for
    /// records larger than it. Default 256 KiB (minimum 64 KiB).
    pub read_buffer: usize,
    /// Secrets for decrypting TLS connections (`--tls-keylog`, `SSLKEYLOGFILE`); a pcapng
    /// file's Decryption Secrets Blocks add to them. Default empty.
    pub tls_keys: Arc<tls::KeyLog>,
    /// Set by the caller to stop reading: [`read_capture`] reads no further record once
    /// it is set (`-c` reached, a closed pipe), so the packets counted are the ones read
    /// up to then, not the rest of what its buffer already holds. Default: never set.
    pub stop: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            ports: vec![9092],
            detect: false,
            max_frame: 100 * 1024 * 1024,
            max_out_of_order: 4 * 1024 * 1024,
            max_closed: 4096,
            max_in_flight: 16 << 20,
            idle_timeout: 600,
            read_buffer: 256 << 10,
            tls_keys: Arc::default(),
            stop: None,
        }
    }
}

/// TLS connections whose summary [`CaptureStats::tls`] keeps (about 200 bytes each);
/// the rest are counted in [`CaptureStats::tls_past_cap`].
pub const TLS_SUMMARIES_KEEP: usize = 100_000;

/// Counters for a whole capture.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Packet records read (pcap records, pcapng EPB/SPB).
    pub packets: u64,
    /// Captured bytes in those records.
    pub bytes: u64,
    /// TCP segments parsed.
    pub tcp_segments: u64,
    /// Kafka connections seen (including TLS ones).
    pub connections: u32,
    /// Frames emitted (Kafka and SASL tokens).
    pub frames: u64,
    /// Stream bytes skipped: resynchronisation, oversize frames, TLS, gaps.
    pub bytes_skipped: u64,
    /// Notices emitted.
    pub notices: u64,
    /// Duplicate (retransmitted) TCP payload bytes dropped.
    pub duplicate_bytes: u64,
    /// True if the file ended in the middle of a record.
    pub file_truncated: bool,
    /// True if reading stopped at a record or block that cannot be parsed
    /// ([`NoticeKind::CorruptRecord`]).
    pub file_corrupt: bool,
    /// Each TLS connection, in the order they ended: version, suite, SNI, how much was
    /// decrypted (the first [`TLS_SUMMARIES_KEEP`]).
    pub tls: Vec<tls::TlsSummary>,
    /// TLS connections that ended past the first [`TLS_SUMMARIES_KEEP`] (counted only).
    pub tls_past_cap: u64,
}

/// Fatal errors of [`read_capture`]. Damage inside a readable file is reported as notices,
/// not errors.
#[derive(Debug)]
pub enum CaptureError {
    /// The input is empty.
    Empty,
    /// The input is neither pcap nor pcapng.
    NotACapture,
    /// The input starts like a pcap or pcapng file but ends inside its file header.
    HeaderCut,
    /// Reading the input failed.
    Read,
    /// Other error from the pcap parser, with its description.
    Parse(String),
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::Empty => f.write_str("capture input is empty"),
            CaptureError::NotACapture => f.write_str("input is not a pcap or pcapng file"),
            CaptureError::HeaderCut => f.write_str(
                "input starts like a pcap or pcapng file but ends inside its file header",
            ),
            CaptureError::Read => f.write_str("error reading capture input"),
            CaptureError::Parse(s) => write!(f, "capture parse error: {s}"),
        }
    }
}

impl std::error::Error for CaptureError {}

#[cfg(test)]
mod tests;
