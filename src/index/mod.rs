//! Messages by index: open a capture once, then decode any message of it without the ones
//! before it.
//!
//! [`Capture::open`] reads a pcap or pcapng file in one pass through the same input layer
//! as `kwire read` ([`crate::input::read_capture_observed`]: records, IP, TCP reassembly,
//! framing, TLS) and the same session ([`crate::session::Session::prepare`]: pairing,
//! topic names, acks), without decoding message bodies (only the small ones that teach
//! topic names, as `kwire read --threads N` does). It keeps, for every message, in the
//! order and numbering `kwire read` prints them (message 0 is the first printed):
//!
//! - where its bytes are: the records that carried them (the lowest and highest record
//!   numbers), the TCP sequence number of its first byte and its length; every 16th
//!   record's offset in the file is kept so that a record is found by walking at most 15
//!   others; a frame decrypted from TLS has its plaintext (and the TLS record numbers)
//!   written to a temporary spill file instead (see [`Capture::frame`] for why);
//! - its connection, direction, capture time, api_key, api_version and correlation_id
//!   (for a response: its request's api_key and api_version) and its pair (the index of
//!   the request a response answers, and back);
//! - the topic names learned from each message, for the messages after it.
//!
//! [`Capture::decode`] then reads message `i`'s records again from the memory-mapped file,
//! reassembles its bytes ([`crate::input::tcp::Reassembler`], the code `read` uses),
//! replays into a fresh session the request it answers and the topic names learned before
//! it, and decodes it: the message and its context equal what `kwire read` prints for it.
//!
//! Memory: [`ENTRY_BYTES`] (56) bytes a message (the capture time as nanoseconds from the
//! Unix epoch, the record deltas in 16 bits; the rare message whose time or deltas do not
//! fit has them in a side table, 24 or 20 bytes more), plus half a byte a record (every
//! 16th record's offset) and a few bytes per connection and per topic name: under the
//! budget of 64 bytes a message. Past [`IndexOptions::memory_limit`] the entries go to a
//! temporary file and are read back 56 bytes at a time: a capture larger than the limit
//! degrades to a disk read (a page-cache hit while the system has memory to spare) per
//! entry past the limit, not to more memory; the record offsets, side tables, topic names
//! and connections stay in memory (about 1 byte a message on chatter).
//!
//! ```
//! use kwire::index::Capture;
//! use kwire::tree::Buffers;
//!
//! let capture = Capture::open("captures/demo.pcap")?;
//! let last = capture.len() - 1;
//! let frame = capture.frame(last)?;
//! let arena = Buffers::new();
//! let (message, context) = capture.decode(last, &frame, &arena)?;
//! println!("{} v{} from frame {}", message.api_key, message.api_version, context.frames.0);
//! # Ok::<(), kwire::index::IndexError>(())
//! ```

mod entry;
mod reread;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::decode::guess::Guesser;
use crate::decode::{DecodeOptions, Detail};
use crate::input::tls::{TlsFrameInfo, TlsSession};
use crate::input::{
    self, CaptureError, CaptureObserver, CaptureOptions, CaptureStats, Direction, Event, Frame,
    FrameContext, FrameKind, Links, Notice, Origin, Pairer, Timestamp,
};
use crate::schema::Schema;
use crate::session::{Context, SchemaPlausibility, Session};
use crate::tree::{Buffers, Message};
pub use entry::ENTRY_BYTES;
use entry::{Entries, Entry, INCOMPLETE, LEN_MASK, SASL, SPILLED, TO_CLIENT};

/// Every how many records the file offset of a record is kept.
const RECORD_STEP: u64 = 16;
/// Most notices kept (the rest are counted in [`Capture::notices_dropped`]).
const MAX_NOTICES: usize = 10_000;
/// Most topic-name lessons kept (a hostile capture renaming ids forever stops here).
const MAX_LESSONS: usize = 1_000_000;
/// Requests looked back over for the guess of a response without its request.
const SEEN_LOOKBACK: u64 = 100_000;

/// What [`Capture::open_with`] is given.
#[derive(Clone, Debug)]
pub struct IndexOptions {
    /// The schema stack messages decode with (default: the embedded one).
    pub schema: Schema,
    /// Capture options, as `kwire read` takes them (`--port`, `--detect`,
    /// `--max-frame`, `--tls-keylog`). `max_frame` is capped at 256 MiB - 1 bytes.
    pub capture: CaptureOptions,
    /// Decoder limits.
    pub decode: DecodeOptions,
    /// Most bytes of entries kept in memory (default 640 MiB: 12 M messages of 56 bytes);
    /// the entries past it go to a temporary file.
    pub memory_limit: usize,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            schema: Schema::embedded(),
            capture: CaptureOptions::default(),
            decode: DecodeOptions::default(),
            memory_limit: 640 << 20,
        }
    }
}

/// How far the index pass has come, handed to the progress callback of
/// [`Capture::open_with`] about every 4 MiB of the file and once at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Bytes of the file read so far.
    pub bytes: u64,
    /// The file's length in bytes.
    pub total: u64,
    /// Records (packets) read so far.
    pub records: u64,
    /// Messages indexed so far.
    pub messages: u64,
    /// True on the last call, when the index is built.
    pub done: bool,
}

/// Why a capture cannot be indexed or a message read.
#[derive(Debug)]
pub enum IndexError {
    /// Opening, mapping or reading the file (or the temporary files) failed.
    Io(PathBuf, io::Error),
    /// The file is not a capture (or is cut inside its header): the input layer's error.
    Capture(PathBuf, CaptureError),
    /// No message has this index (the capture has `len` messages).
    OutOfRange {
        /// The index asked for.
        index: usize,
        /// The number of messages.
        len: usize,
    },
    /// Message `index`'s bytes could not be read again as the index pass read them (the
    /// file changed since, or IP fragments the bounded window before the frame does not
    /// reassemble as the whole pass did): what was found. Never a different message.
    Reread {
        /// The message.
        index: usize,
        /// What differs.
        why: String,
    },
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            IndexError::Capture(p, e) => write!(f, "{}: {e}", p.display()),
            IndexError::OutOfRange { index, len } => {
                write!(
                    f,
                    "no message {index}: the capture has {len} (0 to {len} - 1)"
                )
            }
            IndexError::Reread { index, why } => {
                write!(f, "message {index} cannot be read again: {why}")
            }
        }
    }
}

impl std::error::Error for IndexError {}

/// What the index knows of one message without decoding it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageInfo {
    /// The message's index (0-based, in `kwire read`'s order).
    pub index: usize,
    /// A Kafka request or response, or a raw SASL token (KIP-43).
    pub kind: FrameKind,
    /// Client to broker (a request) or broker to client (a response).
    pub direction: Direction,
    /// The connection's number in the capture (1-based, in order of first appearance).
    pub connection: u32,
    /// Sender address and port.
    pub src: SocketAddr,
    /// Receiver address and port.
    pub dst: SocketAddr,
    /// Capture time of the segment that carried the last byte.
    pub time: Timestamp,
    /// Record numbers (1-based) of the segments that carried the first and last byte.
    pub frames: (u64, u64),
    /// Frame length in bytes as captured (size prefix included; shorter than the size
    /// prefix says when `incomplete`).
    pub size: u32,
    /// A gap or the end of the capture cut the frame short.
    pub incomplete: bool,
    /// The frame was decrypted from TLS.
    pub tls: bool,
    /// The request header's api_key; for a response, its request's (`None` when the
    /// response has no request in the capture, for a SASL token, or when the header is cut).
    pub api_key: Option<i16>,
    /// The request header's api_version; for a response, its request's.
    pub api_version: Option<i16>,
    /// The header's correlation_id (`None` when cut, and for a SASL token).
    pub correlation_id: Option<i32>,
    /// For a response: the index of its request; for a request: of its response (`None`
    /// when unanswered, unpaired, or expecting none).
    pub pair: Option<usize>,
}

/// One connection: its endpoints and, for TLS, its session.
#[derive(Clone, Debug)]
struct Conn {
    /// Client (requests' sender) and broker.
    client: SocketAddr,
    server: SocketAddr,
    tls: Option<Arc<TlsSession>>,
}

/// Every detail level, in the order of [`Capture`]'s options by level.
const DETAILS: [Detail; 4] = [Detail::Full, Detail::Summary, Detail::Facts, Detail::Rows];

/// The place of `d` in [`DETAILS`].
fn detail_slot(d: Detail) -> usize {
    match d {
        Detail::Full => 0,
        Detail::Summary => 1,
        Detail::Facts => 2,
        Detail::Rows => 3,
    }
}

/// A capture opened for random access: see the module docs.
pub struct Capture {
    path: PathBuf,
    map: memmap2::Mmap,
    schema: Schema,
    /// The [`IndexOptions`]' detail level, which [`Capture::decode`] decodes at.
    detail: Detail,
    /// The [`IndexOptions`]' decode options at each detail level, in [`Detail`] order
    /// ([`detail_slot`]), for [`Capture::decode_at`].
    dopts_at: [DecodeOptions; 4],
    max_out_of_order: usize,
    entries: Entries,
    /// File offset of record `RECORD_STEP * k + 1`.
    records: Vec<u64>,
    /// The link state from each record number on.
    links: Vec<(u64, Links)>,
    /// By connection id - 1.
    conns: Vec<Option<Conn>>,
    /// Topic names learned from message `.0`, in order.
    lessons: Vec<(u64, uuid::Uuid, Box<str>)>,
    spill: Option<std::fs::File>,
    spill_len: u64,
    stats: CaptureStats,
    notices: Vec<Notice>,
    notices_dropped: u64,
    guesser: OnceLock<Arc<Guesser>>,
    /// Bytes of the mapping read again since its pages were last given back, counted
    /// with the kernel's fault-around (see [`Capture::note_read`]).
    resident: std::sync::atomic::AtomicUsize,
}

/// How much of the mapping the messages read again may keep resident before its pages
/// are given back ([`Capture::note_read`]).
const RESIDENT_MAX: usize = 8 << 20;

/// What one page fault of a file mapping may map besides the page itself: Linux maps up
/// to 16 pages around it (`fault_around_bytes`, 64 KiB by default).
const FAULT_AROUND: usize = 64 << 10;

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capture")
            .field("path", &self.path)
            .field("messages", &self.entries.len())
            .finish_non_exhaustive()
    }
}

/// Watches the records go by: their offsets, the link state, the progress.
struct Watch<'p> {
    records: Vec<u64>,
    links: Vec<(u64, Links)>,
    progress: &'p mut dyn FnMut(&Progress),
    total: u64,
    next_report: u64,
    count: u64,
    messages: std::rc::Rc<std::cell::Cell<u64>>,
    /// The file's mapping, and how much of it was given back (see [`Watch::record`]).
    map: &'p memmap2::Mmap,
    released: usize,
}

impl CaptureObserver for Watch<'_> {
    fn record(&mut self, number: u64, offset: u64) {
        self.count = number;
        if (number - 1).is_multiple_of(RECORD_STEP) {
            self.records.push(offset);
        }
        if offset >= self.next_report {
            self.next_report = offset + (4 << 20);
            // The pages the pass has read (but the last 4 MiB) are given back: without
            // this the whole file stays resident in the process's RSS after one pass
            // (1.1 GiB for a 1 GB capture). They are the page cache's again, read back
            // from the file when a message is decoded.
            #[cfg(unix)]
            let upto = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .saturating_sub(4 << 20)
                & !((1 << 20) - 1);
            #[cfg(unix)]
            if upto > self.released {
                // SAFETY: a read-only shared mapping of a file: MADV_DONTNEED drops the
                // pages, and reading them again gives the file's bytes (no data is lost,
                // as it would be for a private writable mapping).
                let _ = unsafe {
                    self.map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        self.released,
                        upto - self.released,
                    )
                };
                self.released = upto;
            }
            (self.progress)(&Progress {
                bytes: offset,
                total: self.total,
                records: number,
                messages: self.messages.get(),
                done: false,
            });
        }
    }
    fn links(&mut self, next: u64, links: &Links) {
        self.links.push((next, links.clone()));
    }
}

fn unknown16(v: i16) -> Option<i16> {
    (v != i16::MIN).then_some(v)
}

impl Capture {
    /// Indexes the capture at `path` with the embedded schema and `kwire read`'s default
    /// options (broker port 9092, no key log).
    ///
    /// # Errors
    /// [`IndexError::Io`] when the file cannot be opened or mapped,
    /// [`IndexError::Capture`] when it is not a pcap or pcapng capture.
    pub fn open(path: impl AsRef<Path>) -> Result<Capture, IndexError> {
        Capture::open_with(path, IndexOptions::default(), &mut |_| {})
    }

    /// Indexes the capture at `path` with `options`, calling `progress` about every
    /// 4 MiB of the file and once when done (a front-end's progress bar).
    ///
    /// The file is memory-mapped, not read into memory; it must not change while the
    /// index is used (a changed file gives [`IndexError::Reread`] or wrong bytes, never a
    /// crash of kwire's own making, but a file truncated under a mapping may raise
    /// SIGBUS, as any mapping does).
    ///
    /// # Errors
    /// As [`Capture::open`]; [`IndexError::Io`] also when a temporary file cannot be
    /// written.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: IndexOptions,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Capture, IndexError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |e: io::Error| IndexError::Io(path.clone(), e);
        let file = std::fs::File::open(&path).map_err(io_err)?;
        // SAFETY: the mapping is read-only; the file must not be changed while the index
        // lives (said in the docs above). Every read of it is bounds-checked.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err)?;
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential);
        let IndexOptions {
            schema,
            mut capture,
            decode,
            memory_limit,
        } = options;
        capture.max_frame = capture.max_frame.min(LEN_MASK as usize);
        let mut cap = Capture {
            path: path.clone(),
            map,
            schema: Schema::default(),
            dopts_at: DETAILS.map(|detail| DecodeOptions {
                detail,
                ..decode.clone()
            }),
            detail: decode.detail,
            max_out_of_order: capture.max_out_of_order,
            entries: Entries::new(memory_limit / ENTRY_BYTES),
            records: Vec::new(),
            links: Vec::new(),
            conns: Vec::new(),
            lessons: Vec::new(),
            spill: None,
            spill_len: 0,
            stats: CaptureStats::default(),
            notices: Vec::new(),
            notices_dropped: 0,
            guesser: OnceLock::new(),
            resident: std::sync::atomic::AtomicUsize::new(0),
        };
        let messages = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let total = cap.map.len() as u64;
        let mut watch = Watch {
            records: Vec::new(),
            links: Vec::new(),
            progress,
            total,
            next_report: 0,
            count: 0,
            messages: messages.clone(),
            map: &cap.map,
            released: 0,
        };
        let plaus = SchemaPlausibility(&schema);
        let mut session = Session::new(&schema, &decode);
        session.learned = Some(Vec::new());
        let mut failure: Option<io::Error> = None;
        let map = &cap.map;
        let mut pass = Pass {
            entries: &mut cap.entries,
            conns: &mut cap.conns,
            lessons: &mut cap.lessons,
            spill: &mut cap.spill,
            spill_len: &mut cap.spill_len,
            notices: &mut cap.notices,
            notices_dropped: &mut cap.notices_dropped,
        };
        let res = input::read_capture_observed(
            io::Cursor::new(&map[..]),
            &capture,
            &plaus,
            &mut watch,
            |ev| {
                if failure.is_some() {
                    return;
                }
                match ev {
                    Event::Notice(n) => pass.notice(n),
                    Event::Frame(f) => {
                        if let Err(e) = pass.frame(&mut session, &f) {
                            failure = Some(e);
                        }
                        messages.set(pass.entries.len());
                        for n in session.notices.drain(..) {
                            pass.notice(n);
                        }
                    }
                }
            },
        );
        if let Some(e) = failure {
            return Err(IndexError::Io(path, e));
        }
        cap.stats = res.map_err(|e| IndexError::Capture(path.clone(), e))?;
        let records = watch.count;
        (watch.progress)(&Progress {
            bytes: total,
            total,
            records,
            messages: cap.entries.len(),
            done: true,
        });
        cap.records = watch.records;
        cap.links = watch.links;
        cap.records.shrink_to_fit();
        cap.entries.shrink();
        cap.lessons.shrink_to_fit();
        cap.notices.shrink_to_fit();
        cap.schema = schema;
        #[cfg(unix)]
        let _ = cap.map.advise(memmap2::Advice::Random);
        Ok(cap)
    }

    /// Counts the bytes `from..to` of the mapping that a message's records were read
    /// from again and, once what was read since the last time passes [`RESIDENT_MAX`],
    /// gives the mapping's pages back to the page cache, as the index pass does behind
    /// itself: otherwise every message read again (the report's pages, the explorer's
    /// scrolling) would leave its pages, and the pages the kernel maps around each
    /// fault, in the process's RSS for as long as the capture is open (30 MiB for the
    /// 200 pages of a report on 100 MB of chatter). Reading them again later is a minor
    /// fault from the page cache.
    pub(super) fn note_read(&self, from: usize, to: usize) {
        use std::sync::atomic::Ordering;
        let n = to.saturating_sub(from).saturating_add(2 * FAULT_AROUND);
        let before = self.resident.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) < RESIDENT_MAX {
            return;
        }
        self.resident.store(0, Ordering::Relaxed);
        #[cfg(unix)]
        // SAFETY: a read-only shared mapping of a file: MADV_DONTNEED drops the pages, and
        // reading them again gives the file's bytes. The bytes read from them were copied
        // out (`reread` gives an owned `Vec`), and a reader on another thread at the same
        // time faults the page in again.
        let _ = unsafe {
            self.map
                .unchecked_advise(memmap2::UncheckedAdvice::DontNeed)
        };
    }

    /// The capture's path, as given to [`Capture::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of messages (Kafka frames and SASL tokens).
    pub fn len(&self) -> usize {
        self.entries.len() as usize
    }

    /// True when the capture holds no message.
    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// The schema the messages decode with.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The input layer's counters for the whole capture (packets, bytes, connections,
    /// frames, bytes skipped, TLS connections).
    pub fn stats(&self) -> &CaptureStats {
        &self.stats
    }

    /// The notices of the index pass (gaps, resynchronisations, TLS, unanswered requests
    /// dropped by the pairer...), in capture order: the first 10,000.
    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }

    /// Notices not kept past the first 10,000.
    pub fn notices_dropped(&self) -> u64 {
        self.notices_dropped
    }

    /// Bytes of memory the index holds: entries, record offsets, link states,
    /// connections, topic names and notices (the memory map and the temporary files not
    /// counted).
    pub fn memory(&self) -> usize {
        let conns = self.conns.capacity() * std::mem::size_of::<Option<Conn>>();
        let lessons: usize = self
            .lessons
            .iter()
            .map(|l| std::mem::size_of_val(l) + l.2.len())
            .sum();
        let notices: usize = self
            .notices
            .iter()
            .map(|n| std::mem::size_of::<Notice>() + n.message.len())
            .sum();
        self.entries.memory()
            + self.records.capacity() * 8
            + self.links.capacity() * std::mem::size_of::<(u64, Links)>()
            + conns
            + lessons
            + notices
    }

    /// Messages whose entries are in the temporary file (past
    /// [`IndexOptions::memory_limit`]).
    pub fn spilled_entries(&self) -> u64 {
        self.entries.on_disk()
    }

    fn entry(&self, index: usize) -> Result<Entry, IndexError> {
        let len = self.len();
        match self.entries.get(index as u64) {
            Ok(Some(e)) => Ok(e),
            Ok(None) => Err(IndexError::OutOfRange { index, len }),
            Err(e) => Err(IndexError::Io(self.path.clone(), e)),
        }
    }

    fn conn(&self, id: u32) -> Option<&Conn> {
        self.conns
            .get((id as usize).checked_sub(1)?)
            .and_then(Option::as_ref)
    }

    /// What the index knows of message `index` (0-based), without reading its bytes.
    ///
    /// # Errors
    /// [`IndexError::OutOfRange`]; [`IndexError::Io`] when its entry is in the temporary
    /// file and reading it fails.
    pub fn info(&self, index: usize) -> Result<MessageInfo, IndexError> {
        let e = self.entry(index)?;
        Ok(self.info_of(index, &e))
    }

    fn info_of(&self, index: usize, e: &Entry) -> MessageInfo {
        let direction = if e.len_flags & TO_CLIENT != 0 {
            Direction::ToClient
        } else {
            Direction::ToServer
        };
        let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
        let (client, server, tls) = match self.conn(e.connection) {
            Some(c) => (c.client, c.server, c.tls.is_some()),
            None => (unspecified, unspecified, false),
        };
        let (src, dst) = match direction {
            Direction::ToServer => (client, server),
            Direction::ToClient => (server, client),
        };
        let pair = (e.pair != 0)
            .then(|| (index as i64).checked_add(e.pair as i64))
            .flatten()
            .and_then(|p| usize::try_from(p).ok());
        MessageInfo {
            index,
            kind: if e.len_flags & SASL != 0 {
                FrameKind::SaslToken
            } else {
                FrameKind::Kafka
            },
            direction,
            connection: e.connection,
            src,
            dst,
            time: Timestamp {
                secs: e.secs,
                nanos: e.nanos,
            },
            frames: (
                e.first_frame,
                e.first_frame.saturating_add(e.last_delta as u64),
            ),
            size: e.len_flags & LEN_MASK,
            incomplete: e.len_flags & INCOMPLETE != 0,
            tls,
            api_key: unknown16(e.api_key),
            api_version: unknown16(e.api_version),
            correlation_id: {
                // What `Pairer::request_header` and `response_correlation` read: 12 and
                // 8 bytes (size prefix included).
                let need = if direction == Direction::ToServer {
                    12
                } else {
                    8
                };
                (e.len_flags & SASL == 0 && (e.len_flags & LEN_MASK) >= need)
                    .then_some(e.correlation_id)
            },
            pair,
        }
    }

    /// Message `index`'s frame, read again from the capture: its bytes (size prefix
    /// included) and its context. `ctx.stream_offset` is that of the TCP stream (of the
    /// decrypted stream for TLS), as the index pass saw it.
    ///
    /// Reads only the records that carried the frame (plus at most 15 before them; for a
    /// segment that came in IP fragments, the 2,256 records before the frame's, where the
    /// whole pass keeps fragments), or for a TLS frame the spill file: a bounded read,
    /// whatever came before (gaps, resynchronisations, a capture started mid-stream).
    /// The bytes read again must have the length and the header the index pass read, or
    /// the answer is [`IndexError::Reread`], never another message.
    ///
    /// TLS frames come from the spill file, not from their TLS records decrypted again:
    /// a TLS record does decrypt alone given its key and sequence number, but a frame
    /// re-read from its records also needs where its plaintext starts inside the first
    /// TLS record, the records that carry no application data in between (handshake
    /// messages, KeyUpdate), and the traffic key epoch, kept per index point; that is not
    /// built yet, and the spill costs disk (the plaintext once), not memory.
    ///
    /// # Errors
    /// [`IndexError::OutOfRange`]; [`IndexError::Reread`] when the records no longer give
    /// the bytes the index pass framed; [`IndexError::Io`] on a temporary file's error.
    pub fn frame(&self, index: usize) -> Result<Frame, IndexError> {
        let e = self.entry(index)?;
        let info = self.info_of(index, &e);
        let len = (e.len_flags & LEN_MASK) as usize;
        let low = e.first_frame.saturating_sub(e.low_delta as u64);
        let high = e.first_frame.saturating_add(e.high_delta as u64);
        let (bytes, stream_offset, tls) = if e.len_flags & SPILLED != 0 {
            let (bytes, offset, records) = self.read_spill(e.place, len)?;
            let session = self.conn(e.connection).and_then(|c| c.tls.clone());
            let tls = session.map(|session| TlsFrameInfo { session, records });
            (bytes, offset, tls)
        } else {
            let bytes = reread::bytes(self, &info, low, high, e.seq, len)
                .map_err(|why| IndexError::Reread { index, why })?;
            self.same_header(index, &e, &bytes)?;
            (bytes, e.place, None)
        };
        let ctx = FrameContext {
            first_frame: info.frames.0,
            last_frame: info.frames.1,
            time: info.time,
            src: info.src,
            dst: info.dst,
            connection: info.connection,
            direction: info.direction,
            stream_offset,
            incomplete: info.incomplete,
            tls,
            origin: Origin {
                low_record: low,
                high_record: high,
                tcp_seq: (e.len_flags & SPILLED == 0).then_some(e.seq),
            },
        };
        Ok(Frame {
            ctx,
            kind: info.kind,
            bytes,
        })
    }

    /// The header the index pass read from message `index` (`e`) is the one of `bytes`,
    /// read again: a file changed since, or records that no longer give the same bytes,
    /// are an error, never a different message.
    fn same_header(&self, index: usize, e: &Entry, bytes: &[u8]) -> Result<(), IndexError> {
        if e.len_flags & SASL != 0 {
            return Ok(());
        }
        let same = if e.len_flags & TO_CLIENT == 0 {
            // The lengths are equal: both have a header or neither.
            Pairer::request_header(bytes)
                .is_none_or(|h| h == (e.api_key, e.api_version, e.correlation_id))
        } else {
            Pairer::response_correlation(bytes).is_none_or(|c| c == e.correlation_id)
        };
        if same {
            Ok(())
        } else {
            Err(IndexError::Reread {
                index,
                why: "its records give a different header than the index pass read".into(),
            })
        }
    }

    fn read_spill(&self, at: u64, len: usize) -> Result<(Vec<u8>, u64, Vec<u64>), IndexError> {
        use std::os::unix::fs::FileExt;
        let io_err = |e: io::Error| IndexError::Io(self.path.clone(), e);
        let Some(f) = &self.spill else {
            return Err(io_err(io::Error::other("the spill file is missing")));
        };
        let mut head = [0u8; 12];
        f.read_exact_at(&mut head, at).map_err(io_err)?;
        let offset = u64::from_le_bytes(head[..8].try_into().unwrap_or([0; 8]));
        let n = u32::from_le_bytes(head[8..12].try_into().unwrap_or([0; 4])) as usize;
        let mut rec = vec![0u8; n * 8];
        f.read_exact_at(&mut rec, at + 12).map_err(io_err)?;
        let records = rec
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        let mut bytes = vec![0u8; len];
        f.read_exact_at(&mut bytes, at + 12 + n as u64 * 8)
            .map_err(io_err)?;
        Ok((bytes, offset, records))
    }

    /// Decodes message `index` from `frame` (what [`Capture::frame`] gave for the same
    /// index) into `arena`: the message and its context equal what `kwire read` gives
    /// for it (`ctx.capture` is `None`; `-t r`'s and `-t d`'s first and previous times
    /// are those of messages 0 and `index - 1`).
    ///
    /// A response is decoded with its request's api_key and api_version (that request is
    /// read again too), a response without its request by the ranked guess with its
    /// connection's earlier requests, and topic ids carry the names learned before.
    ///
    /// # Errors
    /// As [`Capture::frame`], for the request a response answers.
    pub fn decode<'a>(
        &'a self,
        index: usize,
        frame: &'a Frame,
        arena: &'a Buffers,
    ) -> Result<(Message<'a>, Context), IndexError> {
        self.decode_at(index, frame, arena, self.detail)
    }

    /// [`Capture::decode`] at detail level `detail` rather than the one of the
    /// [`IndexOptions`]: a summary tree or a fact tree ([`Detail::Summary`],
    /// [`Detail::Facts`]) for what reads only a few facts of each message (a display
    /// filter that decides on them, `kwire stats`' counts), the whole tree
    /// ([`Detail::Full`]) to show it.
    ///
    /// # Errors
    /// As [`Capture::decode`].
    pub fn decode_at<'a>(
        &'a self,
        index: usize,
        frame: &'a Frame,
        arena: &'a Buffers,
        detail: Detail,
    ) -> Result<(Message<'a>, Context), IndexError> {
        let dopts = &self.dopts_at[detail_slot(detail)];
        let e = self.entry(index)?;
        let info = self.info_of(index, &e);
        let mut s = Session::new(&self.schema, dopts);
        let guesser = self
            .guesser
            .get_or_init(|| Arc::new(Guesser::new(&self.schema)));
        s.set_guesser(Arc::clone(guesser));
        // The topic names learned before message `upto`.
        let mut taught = 0usize;
        let mut teach = |s: &mut Session<'_>, upto: u64| {
            while let Some((at, id, name)) = self.lessons.get(taught) {
                if *at >= upto {
                    break;
                }
                s.learn_topic_id(*id, name);
                taught += 1;
            }
        };
        let request = match (info.direction, info.pair) {
            (Direction::ToClient, Some(j)) if j < index => Some(j),
            _ => None,
        };
        if let Some(j) = request {
            let rf = self.frame(j)?;
            teach(&mut s, j as u64);
            s.tag = j as u64;
            let _ = s.prepare(&rf);
        } else if info.direction == Direction::ToClient && info.kind == FrameKind::Kafka {
            self.seen_before(&mut s, index, info.connection)?;
        }
        teach(&mut s, index as u64);
        s.tag = index as u64;
        let mut p = s.prepare(frame);
        p.ctx.first_time = Some(if index == 0 {
            p.ctx.time
        } else {
            let f = self.info(0)?;
            (f.time.secs, f.time.nanos)
        });
        p.ctx.previous_time = match index.checked_sub(1) {
            Some(k) => {
                let t = self.info(k)?.time;
                Some((t.secs, t.nanos))
            }
            None => None,
        };
        let ctx = p.ctx.clone();
        Ok((p.decode(&self.schema, dopts, frame, arena), ctx))
    }

    /// Reads message `index` again, decodes it and hands message and context to `f`: the
    /// short form of [`Capture::frame`] and [`Capture::decode`].
    ///
    /// # Errors
    /// As [`Capture::decode`].
    pub fn with_message<R>(
        &self,
        index: usize,
        f: impl FnOnce(&Message<'_>, &Context) -> R,
    ) -> Result<R, IndexError> {
        let frame = self.frame(index)?;
        let arena = Buffers::new();
        let (m, ctx) = self.decode(index, &frame, &arena)?;
        Ok(f(&m, &ctx))
    }

    /// Tells the session the requests of `connection` before `index` (the most recent
    /// 32 distinct (api_key, api_version) pairs are what a guess uses), oldest first.
    fn seen_before(
        &self,
        s: &mut Session<'_>,
        index: usize,
        connection: u32,
    ) -> Result<(), IndexError> {
        let mut found: Vec<(i32, i16, i16)> = Vec::new();
        let mut distinct: Vec<(i16, i16)> = Vec::new();
        let stop = (index as u64).saturating_sub(SEEN_LOOKBACK);
        let mut k = index as u64;
        while k > stop && distinct.len() < 32 {
            k -= 1;
            let e = self.entry(k as usize)?;
            if e.connection != connection
                || e.len_flags & (TO_CLIENT | SASL) != 0
                || e.api_key == i16::MIN
                || (e.len_flags & LEN_MASK) < 12
            {
                continue;
            }
            if !distinct.contains(&(e.api_key, e.api_version)) {
                distinct.push((e.api_key, e.api_version));
            }
            found.push((e.correlation_id, e.api_key, e.api_version));
        }
        for (corr, key, ver) in found.into_iter().rev() {
            s.seen_request(connection, corr, key, ver);
        }
        Ok(())
    }
}

/// The index pass's state, apart from the session.
struct Pass<'c> {
    entries: &'c mut Entries,
    conns: &'c mut Vec<Option<Conn>>,
    lessons: &'c mut Vec<(u64, uuid::Uuid, Box<str>)>,
    spill: &'c mut Option<std::fs::File>,
    spill_len: &'c mut u64,
    notices: &'c mut Vec<Notice>,
    notices_dropped: &'c mut u64,
}

impl Pass<'_> {
    fn notice(&mut self, n: Notice) {
        if self.notices.len() < MAX_NOTICES {
            self.notices.push(n);
        } else {
            *self.notices_dropped += 1;
        }
    }

    /// Writes a frame's stream offset, TLS record numbers and bytes to the spill file.
    fn spill(&mut self, f: &Frame) -> io::Result<u64> {
        use std::io::Write;
        if self.spill.is_none() {
            *self.spill = Some(tempfile::tempfile()?);
        }
        let at = *self.spill_len;
        let records: &[u64] = f.ctx.tls.as_ref().map_or(&[], |t| &t.records);
        let mut head = Vec::with_capacity(12 + records.len() * 8);
        head.extend_from_slice(&f.ctx.stream_offset.to_le_bytes());
        head.extend_from_slice(&(records.len() as u32).to_le_bytes());
        for r in records {
            head.extend_from_slice(&r.to_le_bytes());
        }
        if let Some(file) = self.spill.as_mut() {
            // Appended in order: the file position is `spill_len`.
            file.write_all(&head)?;
            file.write_all(&f.bytes)?;
        }
        *self.spill_len += (head.len() + f.bytes.len()) as u64;
        Ok(at)
    }

    fn frame(&mut self, s: &mut Session<'_>, f: &Frame) -> io::Result<()> {
        let index = self.entries.len();
        let c = &f.ctx;
        // The connection's endpoints (and TLS session), from its first frame.
        let slot = c.connection.saturating_sub(1) as usize;
        if self.conns.len() <= slot {
            self.conns.resize(slot + 1, None);
        }
        if self.conns[slot].is_none() {
            let (client, server) = match c.direction {
                Direction::ToServer => (c.src, c.dst),
                Direction::ToClient => (c.dst, c.src),
            };
            self.conns[slot] = Some(Conn {
                client,
                server,
                tls: c.tls.as_ref().map(|t| Arc::clone(&t.session)),
            });
        }
        s.tag = index;
        let _ = s.prepare(f);
        if let Some(learned) = s.learned.as_mut() {
            for (id, name) in learned.drain(..) {
                if self.lessons.len() < MAX_LESSONS {
                    self.lessons.push((index, id, name.into_boxed_str()));
                }
            }
        }
        let mut e = Entry {
            first_frame: c.first_frame,
            secs: c.time.secs,
            place: c.stream_offset,
            connection: c.connection,
            api_key: i16::MIN,
            api_version: i16::MIN,
            correlation_id: i32::MIN,
            nanos: c.time.nanos,
            ..Entry::default()
        };
        let len = f.bytes.len().min(LEN_MASK as usize) as u32;
        e.len_flags = len;
        if c.direction == Direction::ToClient {
            e.len_flags |= TO_CLIENT;
        }
        if c.incomplete {
            e.len_flags |= INCOMPLETE;
        }
        if f.kind == FrameKind::SaslToken {
            e.len_flags |= SASL;
        } else if c.direction == Direction::ToServer {
            if let Some((k, v, corr)) = Pairer::request_header(&f.bytes) {
                (e.api_key, e.api_version, e.correlation_id) = (k, v, corr);
            }
        } else {
            if let Some(corr) = Pairer::response_correlation(&f.bytes) {
                e.correlation_id = corr;
            }
            if let Some(p) = s.last_paired.take() {
                e.api_key = p.api_key;
                e.api_version = p.api_version;
                if let Ok(d) = i32::try_from(index - p.tag) {
                    e.pair = -d;
                    self.entries.set_pair(p.tag, d)?;
                }
            }
        }
        let Origin {
            low_record,
            high_record,
            tcp_seq,
        } = c.origin;
        let deltas = (
            u32::try_from(c.last_frame.saturating_sub(c.first_frame)),
            u32::try_from(c.first_frame.saturating_sub(low_record)),
            u32::try_from(high_record.saturating_sub(c.first_frame)),
        );
        match (tcp_seq, deltas, f.bytes.len() == len as usize) {
            (Some(seq), (Ok(l), Ok(lo), Ok(hi)), true) if c.tls.is_none() => {
                (e.last_delta, e.low_delta, e.high_delta, e.seq) = (l, lo, hi, seq);
            }
            _ => {
                // Not re-readable from the records alone: the bytes go to the spill file.
                e.last_delta = deltas.0.unwrap_or(u32::MAX);
                e.place = self.spill(f)?;
                e.len_flags |= SPILLED;
            }
        }
        self.entries.push(e)
    }
}
