//! TLS decryption of Kafka connections with logged session keys, as Wireshark does it.
//!
//! - [`keylog`]: the NSS key log format (`--tls-keylog FILE`, `SSLKEYLOGFILE`, pcapng
//!   Decryption Secrets Blocks).
//! - [`record`]: TLS records cut from one direction's reassembled TCP bytes.
//! - [`decrypt`]: keys from the logged secrets, and record decryption (TLS 1.2 and 1.3;
//!   AES-GCM, ChaCha20-Poly1305, AES-CBC with HMAC, MAC-then-encrypt or encrypt-then-MAC).
//!
//! [`TlsConn`] follows one connection: it reads the ClientHello (client random, SNI,
//! ALPN, `encrypt_then_mac`) and ServerHello (version, suite, HelloRetryRequest) with
//! tls-parser, switches keys at ChangeCipherSpec (TLS 1.2), at each Finished and
//! KeyUpdate (TLS 1.3), decrypts TLS 1.3 0-RTT early data (held until the ServerHello
//! names the suite, then opened with `CLIENT_EARLY_TRAFFIC_SECRET`'s keys until the
//! client's EndOfEarlyData), and hands the decrypted application data on as a byte stream per
//! direction, which the caller frames as Kafka. Everything it cannot decrypt is counted
//! and said in a notice; no secret is ever part of a notice or of its output.

pub mod decrypt;
pub mod keylog;
pub mod record;

use std::collections::VecDeque;
use std::sync::Arc;

use super::tcp::Delivery;
use super::{Direction, Notice, NoticeKind};
use decrypt::{RecordKeys, Suite};
pub use keylog::{KeyLog, KeyLogProblem};
use record::{Cut, HeaderRule, Probe, Split, Splitter};

/// What a connection negotiated, shared by every message decrypted from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSession {
    /// `"TLS 1.2"` or `"TLS 1.3"`.
    pub version: &'static str,
    /// IANA name of the suite (`TLS_AES_128_GCM_SHA256`).
    pub cipher_suite: &'static str,
    /// The ClientHello's server_name (SNI), if any.
    pub sni: Option<String>,
    /// The protocol the ServerHello's ALPN chose, if any.
    pub alpn: Option<String>,
}

/// How a Kafka message came through TLS: the connection's session and the TLS records
/// (numbered 1, 2, ... per direction, handshake records included) whose plaintext holds
/// the message's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFrameInfo {
    /// Version, suite, SNI.
    pub session: Arc<TlsSession>,
    /// Record numbers in this direction, ascending.
    pub records: Vec<u64>,
}

/// One TLS connection, for `kwire stats` and the closing notices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSummary {
    /// Connection id.
    pub connection: u32,
    /// `"TLS 1.2"`, `"TLS 1.3"`, or `None` when no ServerHello was seen.
    pub version: Option<&'static str>,
    /// IANA suite name, when a ServerHello was seen.
    pub cipher_suite: Option<String>,
    /// SNI from the ClientHello.
    pub sni: Option<String>,
    /// ALPN the server chose.
    pub alpn: Option<String>,
    /// Records decrypted (both directions).
    pub decrypted_records: u64,
    /// Records that stayed encrypted (both directions).
    pub encrypted_records: u64,
    /// Bytes of those records.
    pub encrypted_bytes: u64,
}

impl TlsSummary {
    /// `"yes"` (every encrypted record decrypted), `"partly"`, `"no"`, or `"none"` (no
    /// encrypted record seen: the handshake stopped before its keys were in use).
    pub fn decrypted(&self) -> &'static str {
        match (self.decrypted_records, self.encrypted_records) {
            (0, 0) => "none",
            (_, 0) => "yes",
            (0, _) => "no",
            _ => "partly",
        }
    }
}

/// Output of [`TlsConn::data`].
#[derive(Debug)]
pub enum TlsOut {
    /// Decrypted application data for side `0`/`1`, at offsets of the plaintext stream.
    Plain(usize, Delivery),
    /// Something to say (the caller adds the connection id).
    Notice(Notice),
    /// Plaintext of side `0`/`1` lost: `len` bytes at `offset` of the plaintext stream,
    /// from a record the in-flight budget gave up ([`TlsConn::shed`]), said by a notice
    /// before it; `exact`: the length is exact (AEAD suites), else the most the record
    /// could hold (CBC: the padding is unknown), so framing must look for the next frame
    /// start instead of trusting it.
    Lost {
        /// Side index.
        side: usize,
        /// Plaintext stream offset of the first byte lost.
        offset: u64,
        /// Bytes lost.
        len: u64,
        /// The record at which they were given up.
        frame: u64,
        /// `len` is exact.
        exact: bool,
    },
}

/// ServerHello.random of a HelloRetryRequest (RFC 8446 section 4.1.3).
const HRR_RANDOM: [u8; 32] = [
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
];

/// Largest handshake message followed, in bytes (certificate chains are the big ones).
const MAX_HANDSHAKE: usize = 1 << 20;

/// Record spans remembered per direction to name the records of a message.
const MAX_SPANS: usize = 4096;

/// Most bytes of TLS 1.3 early data records held until the ServerHello (servers accept
/// 16 KiB by default; `max_early_data_size` is a 32-bit count).
const MAX_EARLY: usize = 1 << 20;

/// After a TCP gap that hid record boundaries: stream bytes scanned from the gap's end
/// for the next record that decrypts before the direction is given up (64 KiB: the
/// next header is at most one record, 2^14 + 2048 + 5 bytes, after the gap's end; the
/// rest leaves room for a few candidates that fail).
pub const RESYNC_SCAN: u64 = 64 * 1024;

/// Decryption tries (sequence numbers tried on candidate records) per gap.
pub const RESYNC_TRIES: u32 = 4096;

/// Decryption tries per candidate record, nearest the estimated sequence number first.
pub const RESYNC_TRIES_PER_CANDIDATE: u32 = 1024;

/// What [`TlsConn::shed`] gave up for the in-flight budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlsShed {
    /// Unfinished application data records given up (the rest of each skipped).
    pub records: u32,
    /// Handshakes given up before they were whole (the connection's later records stay
    /// encrypted).
    pub handshakes: u32,
    /// Searches for the next record after a gap that gave up the bytes they held.
    pub searches: u32,
}

/// A search for the next record that decrypts, after a TCP gap hid record boundaries.
#[derive(Clone, Copy, Debug)]
struct Resync {
    /// The gap that started it: stream offset and end.
    gap_at: u64,
    gap_end: u64,
    /// Bytes missing, over all the gaps met while searching.
    missing: u64,
    /// Gaps met (1 + those while searching).
    gaps: u32,
    /// Sequence number of the first record lost.
    seq: u64,
    /// Record number (per direction) of the first record lost.
    rec_no: u64,
    /// Candidate headers tried and decryption tries made.
    candidates: u32,
    tries: u32,
}

#[derive(Default)]
struct Side {
    split: Splitter,
    hs: Vec<u8>,
    /// The capture record that carried the first byte of `hs` (set when bytes join an
    /// empty `hs`).
    hs_since: u64,
    hs_dead: bool,
    keys: Option<RecordKeys>,
    /// TLS 1.2: keys taken at this side's ChangeCipherSpec. TLS 1.3: application keys
    /// taken after this side's Finished.
    next: Option<RecordKeys>,
    /// TLS 1.2: after this side's ChangeCipherSpec.
    encrypted: bool,
    /// A record failed to decrypt, or a gap that could not be resynchronised: the rest
    /// stays encrypted.
    stopped: bool,
    /// Searching for the next record after a gap.
    resync: Option<Resync>,
    /// The record version of the last record (for the search after a gap).
    rec_version: u16,
    /// The mean size of the records split lately, header included, in bytes (an
    /// exponential moving average, weight 1/8 to the newest): how many records a gap
    /// hid is estimated by it.
    mean_record: u64,
    records: u64,
    decrypted: u64,
    enc_records: u64,
    enc_bytes: u64,
    plain_off: u64,
    /// (plaintext start, end, record number).
    spans: VecDeque<(u64, u64, u64)>,
}

/// The TLS state of one connection; see the module documentation.
pub struct TlsConn {
    id: u32,
    name: String,
    sides: [Side; 2],
    client: Option<usize>,
    client_random: Option<Vec<u8>>,
    server_random: Option<Vec<u8>>,
    sni: Option<String>,
    alpn: Option<String>,
    offered_etm: bool,
    version: Option<u16>,
    suite: Option<Result<Suite, String>>,
    session: Option<Arc<TlsSession>>,
    /// Why the keys are missing, once known.
    missing: Option<String>,
    failed_once: bool,
    /// The ClientHello offered 0-RTT early data (the `early_data` extension).
    offered_early: bool,
    /// Early data records of the client seen before the ServerHello: (record number,
    /// record), with their fragments' total size.
    early: Vec<(u64, record::Record)>,
    early_bytes: usize,
    /// The client's handshake keys, while its early data keys are in use (until its
    /// EndOfEarlyData, or the first record that only they open: the server refused the
    /// early data).
    early_hs: Option<RecordKeys>,
    /// Early data records that stayed encrypted.
    early_stayed: u64,
    /// The client's TLS 1.3 Finished was read.
    client_finished: bool,
    /// The in-flight budget gave up the handshake ([`TlsConn::shed_handshake`]).
    handshake_shed: bool,
}

/// The RFC 8446 / RFC 5246 name of an alert description.
fn alert_name(code: u8) -> String {
    let name = match code {
        0 => "close_notify",
        10 => "unexpected_message",
        20 => "bad_record_mac",
        22 => "record_overflow",
        40 => "handshake_failure",
        42 => "bad_certificate",
        43 => "unsupported_certificate",
        44 => "certificate_revoked",
        45 => "certificate_expired",
        46 => "certificate_unknown",
        47 => "illegal_parameter",
        48 => "unknown_ca",
        49 => "access_denied",
        50 => "decode_error",
        51 => "decrypt_error",
        70 => "protocol_version",
        71 => "insufficient_security",
        80 => "internal_error",
        86 => "inappropriate_fallback",
        90 => "user_canceled",
        100 => "no_renegotiation",
        109 => "missing_extension",
        110 => "unsupported_extension",
        112 => "unrecognized_name",
        113 => "bad_certificate_status_response",
        115 => "unknown_psk_identity",
        116 => "certificate_required",
        120 => "no_application_protocol",
        _ => return format!("alert {code}"),
    };
    name.to_string()
}

/// The extensions of a hello as (type, data), as far as they are whole. Read here rather
/// than with tls-parser's extension list, which stops at the first extension it cannot
/// parse and so would lose the ones after it.
fn raw_extensions(mut b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut v = Vec::new();
    while b.len() >= 4 {
        let ty = u16::from_be_bytes([b[0], b[1]]);
        let len = u16::from_be_bytes([b[2], b[3]]) as usize;
        if b.len() < 4 + len {
            break;
        }
        v.push((ty, &b[4..4 + len]));
        b = &b[4 + len..];
    }
    v
}

/// A name from the capture (SNI, ALPN) made safe to print: escapes for anything but
/// printable ASCII.
/// Longest SNI or ALPN name kept, in bytes of the hello (a DNS name has at most 253);
/// a longer one is cut, with `…` after.
const NAME_BYTES_KEEP: usize = 256;

/// `b` as text (escaped), cut at [`NAME_BYTES_KEEP`] bytes.
fn printable(b: &[u8]) -> String {
    let cut = b.len() > NAME_BYTES_KEEP;
    let mut s = String::from_utf8_lossy(&b[..b.len().min(NAME_BYTES_KEEP)])
        .escape_default()
        .to_string();
    if cut {
        s.push('…');
    }
    s
}

/// The order in which a search after a gap tries how many records were lost, within
/// `1..=most`: by turns the next of [`spiral`] around the estimate `est` and the next
/// of 1, 2, 3, ... (a gap of a few segments among large records hides few of them,
/// whatever the mean size says). Numbers may come twice (the caller skips them).
fn window_order(est: u64, most: u64) -> impl Iterator<Item = u64> {
    let mut near = spiral(est, most);
    let mut low = 1..=most;
    let mut turn = false;
    std::iter::from_fn(move || {
        turn = !turn;
        if turn {
            near.next().or_else(|| low.next())
        } else {
            low.next().or_else(|| near.next())
        }
    })
}

/// `est`, then the numbers around it in turn (`est + 1`, `est - 1`, `est + 2`, ...),
/// within `1..=most`.
fn spiral(est: u64, most: u64) -> impl Iterator<Item = u64> {
    (0..2 * most).filter_map(move |i| {
        let step = i.div_ceil(2);
        let d = if i % 2 == 1 {
            est.checked_add(step)?
        } else {
            est.checked_sub(step)?
        };
        (1..=most).contains(&d).then_some(d)
    })
}

/// `n` and the word for it: `one` when `n` is 1, else `many`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn hex_prefix(b: &[u8]) -> String {
    let mut s: String = b.iter().take(8).map(|x| format!("{x:02x}")).collect();
    s.push('…');
    s
}

impl TlsConn {
    /// A connection with id `id` and endpoints `name` (`a:p <-> b:q`, for its closing
    /// notice); `client`: the client's side index when the ports tell.
    pub fn new(id: u32, name: String, client: Option<usize>) -> TlsConn {
        TlsConn {
            id,
            name,
            sides: [Side::default(), Side::default()],
            client,
            client_random: None,
            server_random: None,
            sni: None,
            alpn: None,
            offered_etm: false,
            version: None,
            suite: None,
            session: None,
            missing: None,
            failed_once: false,
            offered_early: false,
            early: Vec::new(),
            early_bytes: 0,
            early_hs: None,
            early_stayed: 0,
            client_finished: false,
            handshake_shed: false,
        }
    }

    /// The client's side index: the side that sent the ClientHello (or as given).
    pub fn client_side(&self) -> Option<usize> {
        self.client
    }

    /// Bytes held now, in both directions: an unfinished record, an unfinished handshake
    /// message, early data waiting for the ServerHello. Charged to the in-flight budget of
    /// all connections ([`super::CaptureOptions::max_in_flight`]).
    pub fn held(&self) -> usize {
        self.sides
            .iter()
            .map(|s| s.split.held_capacity() + s.hs.capacity())
            .sum::<usize>()
            + self.early_bytes
    }

    /// The capture record that carried the oldest byte of an unfinished record held, if
    /// any (the order in which the in-flight budget sheds connections).
    pub fn held_since(&self) -> Option<u64> {
        let hs = self
            .sides
            .iter()
            .filter(|s| !s.hs.is_empty())
            .map(|s| s.hs_since);
        let early = self.early.first().map(|(_, r)| r.last_frame);
        self.sides
            .iter()
            .filter_map(|s| s.split.held_since())
            .chain(hs)
            .chain(early)
            .min()
    }

    /// Gives up the unfinished records held (the in-flight budget of all connections,
    /// `budget` bytes, at record `frame`), on each side whose records can be skipped:
    /// the record is dropped and the rest of it skipped as it comes, by its header's
    /// length; with keys, the sequence number moves on (the records after it still
    /// decrypt) and its plaintext is a [`TlsOut::Lost`] gap for the framing; without,
    /// it counts as a record that stayed encrypted. A record during a side's handshake
    /// (before its keys are settled: TLS 1.2 before ChangeCipherSpec, TLS 1.3 before
    /// its Finished, or while 0-RTT keys are tried) is kept: the handshake needs it
    /// whole. A side searching for the next record after a gap gives up the bytes it
    /// holds (a candidate record not yet whole) and searches on after them. When nothing
    /// of that could be given up, the handshake is (`TlsConn::shed_handshake`).
    /// Returns what was given up.
    pub fn shed(&mut self, frame: u64, budget: usize, out: &mut Vec<TlsOut>) -> TlsShed {
        let mut given = TlsShed::default();
        let mut n = 0;
        for side in 0..2 {
            if self.sides[side].split.is_searching() {
                if let Some(held) = self.sides[side].split.shed_search() {
                    given.searches += 1;
                    let mut nt = self.notice(
                        NoticeKind::Dropped,
                        Some(side),
                        frame,
                        None,
                        format!(
                            "in-flight budget of {budget} bytes (all connections) passed: the \
                             search for the next TLS record after a gap gives up the {held} \
                             bytes it held (a candidate record not yet whole) and goes on after them"
                        ),
                    );
                    if let TlsOut::Notice(x) = &mut nt {
                        x.bytes = Some(held as u64);
                    }
                    out.push(nt);
                }
                continue;
            }
            let is_client = self.client == Some(side);
            let tls13 = self.version == Some(0x0304);
            let trying = is_client
                && (self.early_hs.is_some() || (self.offered_early && !self.client_finished));
            let s = &self.sides[side];
            // The records that will be opened with keys already settled, or never opened.
            let no_keys = self.session.is_none() && self.version.is_some() || s.stopped;
            let settled = s.keys.is_some() && s.next.is_none() && !trying && (tls13 || s.encrypted);
            // Application data records only: a handshake record is needed whole.
            if s.split.held_type() != Some(23) || !(no_keys || settled) {
                continue;
            }
            let Some(r) = self.sides[side].split.shed() else {
                continue;
            };
            n += 1;
            let s = &mut self.sides[side];
            s.records += 1;
            let rec_no = s.records;
            let flen = r.fragment_len();
            let skipped = 5 + flen as u64 - r.held as u64;
            let what = format!(
                "in-flight budget of {budget} bytes (all connections) passed: TLS record {rec_no} \
                 ({} bytes) given up with the {} bytes held; its other {skipped} are skipped",
                5 + flen,
                r.held
            );
            let keys = s.keys.as_mut().filter(|_| settled && !s.stopped);
            match keys {
                Some(k) => {
                    let (len, exact) = k.skip(flen);
                    let offset = s.plain_off;
                    s.plain_off += len;
                    let more = if exact {
                        format!("{len} bytes of plaintext lost")
                    } else {
                        format!("up to {len} bytes of plaintext lost (a CBC record's padding is unknown: framing resumes at the next frame start)")
                    };
                    let mut nt = self.notice(
                        NoticeKind::Dropped,
                        Some(side),
                        frame,
                        Some(r.offset),
                        format!("{what}; {more}"),
                    );
                    if let TlsOut::Notice(x) = &mut nt {
                        x.bytes = Some(5 + flen as u64);
                    }
                    out.push(nt);
                    out.push(TlsOut::Lost {
                        side,
                        offset,
                        len,
                        frame,
                        exact,
                    });
                }
                None => {
                    s.enc_records += 1;
                    s.enc_bytes += 5 + flen as u64;
                    let mut nt = self.notice(
                        NoticeKind::Dropped,
                        Some(side),
                        frame,
                        Some(r.offset),
                        format!("{what} (it would not have been decrypted)"),
                    );
                    if let TlsOut::Notice(x) = &mut nt {
                        x.bytes = Some(5 + flen as u64);
                    }
                    out.push(nt);
                }
            }
        }
        given.records = n;
        if n == 0 && given.searches == 0 {
            given.handshakes = self.shed_handshake(frame, budget, out);
        }
        given
    }

    /// When no application data record could be given up ([`TlsConn::shed`]) but the
    /// connection still holds a handshake not yet whole (an unfinished handshake message
    /// of up to 1 MiB, a handshake record, early data waiting for the ServerHello): the
    /// handshake is given up on both sides, with what it holds; the connection's later
    /// records are split and counted, but stay encrypted (their keys cannot be derived
    /// without the handshake). One `Dropped` notice says how many bytes went. Nothing
    /// is given up when no side still in its handshake holds bytes (a connection past
    /// its handshake holding only empty buffers). Returns 1 when something was given
    /// up, else 0.
    fn shed_handshake(&mut self, frame: u64, budget: usize, out: &mut Vec<TlsOut>) -> u32 {
        // Bytes of a handshake: early data, or a side not past its handshake holding a
        // handshake message or record bytes (the capacity of an empty buffer is none).
        let pending = self.early_bytes > 0
            || (0..2).any(|i| {
                let s = &self.sides[i];
                (!s.hs.is_empty() || s.split.held() > 0) && !self.handshake_over(i)
            });
        let held = self.held();
        if !pending || held == 0 {
            return 0;
        }
        self.handshake_shed = true;
        for s in &mut self.sides {
            s.hs = Vec::new();
            s.hs_dead = true;
            s.stopped = true;
            if s.resync.take().is_some() {
                s.split.kill();
            }
            if let Some(r) = s.split.shed() {
                s.records += 1;
                s.enc_records += 1;
                s.enc_bytes += 5 + r.fragment_len() as u64;
            }
        }
        let early = std::mem::take(&mut self.early);
        self.early_bytes = 0;
        let client = self.client.unwrap_or(0);
        for (_, r) in early {
            let s = &mut self.sides[client];
            s.enc_records += 1;
            s.enc_bytes += 5 + r.fragment.len() as u64;
        }
        self.early_hs = None;
        let mut nt = self.notice(
            NoticeKind::Dropped,
            None,
            frame,
            None,
            format!(
                "in-flight budget of {budget} bytes (all connections) passed: the TLS \
                 handshake, not yet whole, given up with the {held} bytes held; this \
                 connection's records are counted but stay encrypted"
            ),
        );
        if let TlsOut::Notice(x) = &mut nt {
            x.bytes = Some(held as u64);
        }
        out.push(nt);
        1
    }

    fn dir(&self, side: usize) -> Option<Direction> {
        self.client.map(|c| {
            if c == side {
                Direction::ToServer
            } else {
                Direction::ToClient
            }
        })
    }

    fn notice(
        &self,
        kind: NoticeKind,
        side: Option<usize>,
        frame: u64,
        offset: Option<u64>,
        msg: String,
    ) -> TlsOut {
        let mut n = Notice::new(kind, msg);
        n.frame = Some(frame);
        n.connection = Some(self.id);
        n.direction = side.and_then(|s| self.dir(s));
        n.offset = offset;
        TlsOut::Notice(n)
    }

    fn version_name(&self) -> Option<&'static str> {
        match self.version {
            Some(0x0304) => Some("TLS 1.3"),
            Some(0x0303) => Some("TLS 1.2"),
            Some(0x0302) => Some("TLS 1.1"),
            Some(0x0301) => Some("TLS 1.0"),
            Some(_) => Some("SSL 3.0"),
            None => None,
        }
    }

    /// The TLS records of `side` whose plaintext overlaps `[offset, offset + len)` of the
    /// plaintext stream, with the session; `None` before any key was set.
    pub fn frame_info(&mut self, side: usize, offset: u64, len: u64) -> Option<TlsFrameInfo> {
        let session = self.session.clone()?;
        let spans = &mut self.sides[side].spans;
        while spans.front().is_some_and(|s| s.1 <= offset) {
            spans.pop_front();
        }
        let end = offset + len.max(1);
        let records = spans
            .iter()
            .take_while(|s| s.0 < end)
            .filter(|s| s.1 > offset)
            .map(|s| s.2)
            .collect();
        Some(TlsFrameInfo { session, records })
    }

    /// What the connection negotiated and how much of it was decrypted.
    pub fn summary(&self) -> TlsSummary {
        TlsSummary {
            connection: self.id,
            version: self.version_name(),
            cipher_suite: self.suite.as_ref().map(|s| match s {
                Ok(s) => s.name.to_string(),
                Err(n) => n.clone(),
            }),
            sni: self.sni.clone(),
            alpn: self.alpn.clone(),
            decrypted_records: self.sides.iter().map(|s| s.decrypted).sum(),
            encrypted_records: self.sides.iter().map(|s| s.enc_records).sum(),
            encrypted_bytes: self.sides.iter().map(|s| s.enc_bytes).sum(),
        }
    }

    /// Feeds one delivery of TCP bytes (or a gap) from `side`.
    pub fn data(&mut self, side: usize, d: Delivery, keys: &KeyLog, out: &mut Vec<TlsOut>) {
        match d {
            Delivery::Data {
                offset,
                bytes,
                frame,
                time,
            } => {
                let mut recs = Vec::new();
                self.sides[side]
                    .split
                    .push(offset, &bytes, frame, time, &mut recs);
                self.splits(side, recs, keys, out);
                if self.sides[side].resync.is_some() {
                    self.search(side, keys, out);
                }
            }
            Delivery::Gap { offset, len, frame } => self.gap(side, offset, len, frame, out),
        }
    }

    /// What the splitter of `side` found: records to read, or a bad header.
    fn splits(&mut self, side: usize, recs: Vec<Split>, keys: &KeyLog, out: &mut Vec<TlsOut>) {
        for r in recs {
            match r {
                Split::Record(r) => self.record(side, r, keys, out),
                Split::Bad {
                    offset,
                    frame,
                    message,
                } => {
                    let n = self.notice(
                        NoticeKind::Tls,
                        Some(side),
                        frame,
                        Some(offset),
                        format!("{message}; the rest of this direction is not read as TLS"),
                    );
                    out.push(n);
                }
            }
        }
    }

    /// True when the records of `side` after a gap can be found again: its keys are the
    /// ones all its later records use (its handshake is over, no 0-RTT keys are being
    /// tried) and its records have been decrypting.
    fn can_resync(&self, side: usize) -> bool {
        self.handshake_over(side) && !self.sides[side].stopped
    }

    /// True when the handshake of `side` is over: its keys are the ones all its later
    /// records use (TLS 1.2 after its ChangeCipherSpec, TLS 1.3 after its Finished, no
    /// 0-RTT keys being tried).
    fn handshake_over(&self, side: usize) -> bool {
        let s = &self.sides[side];
        let is_client = self.client == Some(side);
        let trying =
            is_client && (self.early_hs.is_some() || (self.offered_early && !self.client_finished));
        let tls13 = self.version == Some(0x0304);
        self.session.is_some()
            && s.keys.is_some()
            && s.next.is_none()
            && !trying
            && (tls13 || s.encrypted)
    }

    /// `len` bytes at `offset` of `side`'s TCP stream will never arrive (revealed by
    /// capture record `frame`). With the direction's keys settled, the record the gap
    /// cut is dropped: when the gap ends inside it, its sequence number is counted and
    /// reading goes on at the next record; when it hides record boundaries, the next
    /// record is searched for from the gap's end ([`TlsConn::search`]). Else (during
    /// the handshake, without keys) the rest of the direction stays encrypted.
    fn gap(&mut self, side: usize, offset: u64, len: u64, frame: u64, out: &mut Vec<TlsOut>) {
        let end = offset + len;
        if self.sides[side].split.is_dead() {
            return;
        }
        if !self.can_resync(side) {
            let s = &mut self.sides[side];
            s.split.kill();
            s.stopped = true;
            let n = self.notice(
                NoticeKind::Gap,
                Some(side),
                frame,
                Some(offset),
                format!("{len} bytes missing from the TLS stream: TLS record boundaries are lost, the rest of this direction stays encrypted"),
            );
            // A frame the gap cut short comes out at the end, as `Unfinished`.
            out.push(n);
            return;
        }
        let s = &mut self.sides[side];
        // A handshake message the gap cut (a NewSessionTicket) is not read.
        s.hs = Vec::new();
        let Some(cut) = s.split.gap(offset, len) else {
            return;
        };
        let range = format!("stream bytes {offset}..{end}");
        let (text, lost) = match cut {
            Cut::Within {
                record: Some(r),
                next,
            } => {
                s.records += 1;
                let rec_no = s.records;
                let flen = r.fragment_len();
                let Some(k) = s.keys.as_mut() else {
                    return;
                };
                let (plain, exact) = k.skip(flen);
                let at = s.plain_off;
                s.plain_off += plain;
                let up_to = if exact { "" } else { "up to " };
                (
                    format!(
                        "{len} bytes missing from the TLS stream ({range}) inside TLS record \
                         {rec_no} ({} bytes from stream byte {}): the record is lost, \
                         {up_to}{plain} bytes of plaintext; decryption goes on at the next \
                         record (stream byte {next})",
                        5 + flen,
                        r.offset
                    ),
                    Some(TlsOut::Lost {
                        side,
                        offset: at,
                        len: plain,
                        frame,
                        exact,
                    }),
                )
            }
            Cut::Within { record: None, next } => (
                format!(
                    "{len} bytes missing from the TLS stream ({range}) inside a TLS record \
                     already lost; reading goes on at the next record (stream byte {next})"
                ),
                None,
            ),
            Cut::Lost { again: true, .. } => {
                if let Some(r) = s.resync.as_mut() {
                    r.missing += len;
                    r.gaps += 1;
                }
                (
                    format!(
                        "{len} bytes missing from the TLS stream ({range}) while looking for \
                         the next TLS record after an earlier gap; the search goes on after it"
                    ),
                    None,
                )
            }
            Cut::Lost {
                from,
                record,
                again: false,
            } => {
                let seq = s.keys.as_ref().map_or(0, |k| k.seq());
                let rec_no = s.records + 1;
                s.resync = Some(Resync {
                    gap_at: offset,
                    gap_end: end,
                    missing: len,
                    gaps: 1,
                    seq,
                    rec_no,
                    candidates: 0,
                    tries: 0,
                });
                let cut = match &record {
                    Some(r) => format!(
                        " inside TLS record {rec_no} ({} bytes from stream byte {from})",
                        5 + r.fragment_len()
                    ),
                    None if from < offset => {
                        format!(" inside TLS record {rec_no} (from stream byte {from})")
                    }
                    None => format!(" at the start of TLS record {rec_no}"),
                };
                (
                    format!(
                        "{len} bytes missing from the TLS stream ({range}){cut}: the record \
                         boundaries after it are lost; looking for the next record that \
                         decrypts (up to {RESYNC_SCAN} bytes after the gap)"
                    ),
                    None,
                )
            }
        };
        let mut n = self.notice(NoticeKind::Gap, Some(side), frame, Some(offset), text);
        if let TlsOut::Notice(x) = &mut n {
            x.bytes = Some(len);
        }
        out.push(n);
        out.extend(lost);
    }

    /// The record header rule of the search on `side` ([`record::HeaderRule`]).
    fn header_rule(&self, side: usize) -> HeaderRule {
        let s = &self.sides[side];
        let tls13 = self.version == Some(0x0304);
        HeaderRule {
            version: if tls13 { 0x0303 } else { s.rec_version },
            tls13,
            min_len: s.keys.as_ref().map_or(0, |k| k.min_fragment()) as usize,
            max_len: if tls13 {
                (1 << 14) + 256
            } else {
                record::MAX_FRAGMENT
            },
        }
    }

    /// The search after a gap on `side`: each candidate header the splitter finds
    /// ([`Splitter::probe`]) is tried with the sequence numbers its place allows, from
    /// the first record lost + 1 to as many records as the bytes lost before it could
    /// hold at the suite's smallest record, nearest the estimate first (the bytes lost
    /// over the mean record size so far; for TLS 1.2 AES-GCM first the explicit nonce
    /// read as a sequence number), at most [`RESYNC_TRIES_PER_CANDIDATE`] each and
    /// [`RESYNC_TRIES`] a gap. The first record whose tag verifies ends the search:
    /// the records lost are counted, their plaintext is a [`TlsOut::Lost`] gap for the
    /// framing, and decryption goes on from that record. Past [`RESYNC_SCAN`] bytes
    /// scanned, or the tries, the rest of the direction stays encrypted, said by a notice.
    fn search(&mut self, side: usize, keys: &KeyLog, out: &mut Vec<TlsOut>) {
        loop {
            let rule = self.header_rule(side);
            let s = &mut self.sides[side];
            if s.resync.is_none() {
                return;
            }
            let probe = s.split.probe(&rule, RESYNC_SCAN);
            let r = match probe {
                Probe::NeedMore => return,
                Probe::Exhausted => {
                    let why =
                        format!("no record in the {RESYNC_SCAN} bytes after the gap decrypts");
                    self.resync_failed(side, None, &why, out);
                    return;
                }
                Probe::Candidate(r) => r,
            };
            let (lost_from, _) = s.split.search_state().unwrap_or((r.offset, 0));
            let mean = s.mean_record.max(1);
            let (Some(k), Some(rs)) = (s.keys.as_mut(), s.resync.as_mut()) else {
                return;
            };
            rs.candidates += 1;
            // Records lost before the candidate: at least the one the gap hit, at most
            // as many as the bytes from it to the candidate hold at the smallest size.
            let wire = r.offset - lost_from;
            let most = wire.div_ceil(5 + k.min_fragment()).max(1);
            let est = ((wire + mean / 2) / mean).clamp(1, most);
            let nonce = k
                .explicit_seq(&r.fragment)
                .and_then(|n| n.checked_sub(rs.seq))
                .filter(|d| (1..=most).contains(d));
            let mut found = None;
            let mut here = 0;
            let mut tried = std::collections::HashSet::new();
            for d in nonce.into_iter().chain(window_order(est, most)) {
                if rs.tries >= RESYNC_TRIES || here >= RESYNC_TRIES_PER_CANDIDATE {
                    break;
                }
                if !tried.insert(d) {
                    continue;
                }
                rs.tries += 1;
                here += 1;
                if k.opens_at(rs.seq + d, &r.header, &r.fragment) {
                    found = Some(d);
                    break;
                }
            }
            let Some(lost) = found else {
                if rs.tries >= RESYNC_TRIES {
                    let why = format!("{RESYNC_TRIES} decryption tries used");
                    self.resync_failed(side, Some(r.offset), &why, out);
                    return;
                }
                s.split.reject();
                continue;
            };
            let rs = *rs;
            k.set_seq(rs.seq + lost);
            let (over, exact) = k.overhead();
            let overhead = lost * (5 + over);
            let plain = wire.saturating_sub(overhead);
            let exact = exact && wire >= overhead;
            s.records += lost;
            s.resync = None;
            let at = s.plain_off;
            s.plain_off += plain;
            let (a, b) = (rs.rec_no, rs.rec_no + lost - 1);
            let recs = if a == b {
                format!("1 record lost (TLS record {a})")
            } else {
                format!("{lost} records lost (TLS records {a}-{b})")
            };
            let up_to = if exact { "" } else { "up to " };
            let gaps = if rs.gaps > 1 {
                format!(" ({} gaps, {} bytes missing)", rs.gaps, rs.missing)
            } else {
                String::new()
            };
            let mut n = self.notice(
                NoticeKind::Resync,
                Some(side),
                r.last_frame,
                Some(r.offset),
                format!(
                    "TLS stream resynchronised after the gap at stream bytes {}..{}{gaps}: \
                     TLS record {} at stream byte {} decrypts with sequence number {}; \
                     {recs}, {wire} bytes from stream byte {lost_from}, of which {} after \
                     the gap passed over; {up_to}{plain} bytes of plaintext lost ({} on {})",
                    rs.gap_at,
                    rs.gap_end,
                    b + 1,
                    r.offset,
                    rs.seq + lost,
                    r.offset.saturating_sub(rs.gap_end),
                    plural(rs.tries.into(), "decryption try", "decryption tries"),
                    plural(
                        rs.candidates.into(),
                        "candidate record",
                        "candidate records"
                    ),
                ),
            );
            if let TlsOut::Notice(x) = &mut n {
                x.bytes = Some(wire);
            }
            out.push(n);
            out.push(TlsOut::Lost {
                side,
                offset: at,
                len: plain,
                frame: r.last_frame,
                exact,
            });
            let mut recs = Vec::new();
            self.sides[side].split.resume(&mut recs);
            self.splits(side, recs, keys, out);
            return;
        }
    }

    /// The search after a gap on `side` found no record that decrypts (`why`; at
    /// stream byte `at` when known): the rest of the direction stays encrypted, said by
    /// a notice; a frame the gap cut comes out now as incomplete.
    fn resync_failed(&mut self, side: usize, at: Option<u64>, why: &str, out: &mut Vec<TlsOut>) {
        let s = &mut self.sides[side];
        let Some(rs) = s.resync.take() else {
            return;
        };
        let (_, scanned) = s.split.search_state().unwrap_or((0, 0));
        let frame = s.split.last_frame();
        s.split.kill();
        s.stopped = true;
        let plain = s.plain_off;
        let mut n = self.notice(
            NoticeKind::Tls,
            Some(side),
            frame,
            at.or(Some(rs.gap_end)),
            format!(
                "TLS stream not resynchronised after the gap at stream bytes {}..{}: {why} \
                 ({scanned} bytes scanned, {} on {}, with sequence numbers from {}); the \
                 rest of this direction stays encrypted",
                rs.gap_at,
                rs.gap_end,
                plural(rs.tries.into(), "decryption try", "decryption tries"),
                plural(
                    rs.candidates.into(),
                    "candidate record",
                    "candidate records"
                ),
                rs.seq + 1
            ),
        );
        if let TlsOut::Notice(x) = &mut n {
            x.bytes = Some(scanned);
        }
        out.push(n);
        out.push(TlsOut::Lost {
            side,
            offset: plain,
            len: 0,
            frame,
            exact: false,
        });
    }

    fn record(&mut self, side: usize, r: record::Record, keys: &KeyLog, out: &mut Vec<TlsOut>) {
        let ctype = r.header[0];
        let s = &mut self.sides[side];
        s.records += 1;
        s.rec_version = u16::from_be_bytes([r.header[1], r.header[2]]);
        let size = 5 + r.fragment.len() as u64;
        s.mean_record = if s.mean_record == 0 {
            size
        } else {
            (s.mean_record * 7 + size) / 8
        };
        let rec_no = s.records;
        let tls13 = self.version == Some(0x0304);
        let encrypted = if tls13 {
            ctype == 23
        } else {
            self.sides[side].encrypted || ctype == 23
        };
        // TLS 1.3 0-RTT: the client's application data before any ServerHello is early
        // data; its suite (the resumed session's) is the ServerHello's when accepted.
        if ctype == 23
            && self.version.is_none()
            && self.offered_early
            && self.client == Some(side)
            && self.early_bytes + r.fragment.len() <= MAX_EARLY
        {
            self.early_bytes += r.fragment.len();
            self.early.push((rec_no, r));
            return;
        }
        if !encrypted {
            match ctype {
                22 => self.handshake(side, &r.fragment, r.last_frame, r.offset, keys, out),
                20 if !tls13 && self.version.is_some() => {
                    let s = &mut self.sides[side];
                    s.encrypted = true;
                    s.keys = s.next.take();
                }
                21 => self.alert(side, &r.fragment, r.last_frame, r.offset, false, out),
                _ => {}
            }
            return;
        }
        self.open_record(side, rec_no, r, keys, out);
    }

    /// Decrypts an encrypted record of `side` (number `rec_no`) and hands on what it holds.
    fn open_record(
        &mut self,
        side: usize,
        rec_no: u64,
        r: record::Record,
        keys: &KeyLog,
        out: &mut Vec<TlsOut>,
    ) {
        let is_client = self.client == Some(side);
        let s = &mut self.sides[side];
        let Some(k) = s.keys.as_mut().filter(|_| !s.stopped) else {
            s.enc_records += 1;
            s.enc_bytes += 5 + r.fragment.len() as u64;
            return;
        };
        let early_unreadable = is_client && self.offered_early && !self.client_finished;
        // While 0-RTT early data may come, keys are tried: a record they do not open does
        // not count in their sequence.
        let trying = early_unreadable || (is_client && self.early_hs.is_some());
        let mut res = if trying {
            k.try_open(&r.header, &r.fragment)
        } else {
            k.open(&r.header, &r.fragment)
        };
        if res.is_err() && is_client {
            // Early data keys that do not open it: the server refused the early data and
            // the client is on its handshake keys.
            if let Some(mut hk) = self.early_hs.take() {
                match hk.try_open(&r.header, &r.fragment) {
                    Ok(x) => {
                        s.keys = Some(hk);
                        res = Ok(x);
                    }
                    Err(_) => self.early_hs = Some(hk),
                }
            }
        }
        match res {
            Err(_) if early_unreadable && s.decrypted == 0 => {
                // Early data (or its EndOfEarlyData) without its keys, before the
                // client's handshake records: counted, and the direction goes on.
                s.enc_records += 1;
                s.enc_bytes += 5 + r.fragment.len() as u64;
                self.early_stayed += 1;
            }
            Ok((inner, plain)) => {
                let s = &mut self.sides[side];
                s.decrypted += 1;
                match inner {
                    23 => {
                        let start = s.plain_off;
                        s.plain_off += plain.len() as u64;
                        if !plain.is_empty() {
                            if s.spans.len() >= MAX_SPANS {
                                s.spans.pop_front();
                            }
                            s.spans.push_back((start, s.plain_off, rec_no));
                            out.push(TlsOut::Plain(
                                side,
                                Delivery::Data {
                                    offset: start,
                                    bytes: plain,
                                    frame: r.last_frame,
                                    time: r.time,
                                },
                            ));
                        }
                    }
                    22 => self.handshake(side, &plain, r.last_frame, r.offset, keys, out),
                    21 => self.alert(side, &plain, r.last_frame, r.offset, true, out),
                    other => {
                        let n = self.notice(
                            NoticeKind::Tls,
                            Some(side),
                            r.last_frame,
                            Some(r.offset),
                            format!("TLS record {rec_no} holds content type {other}, skipped"),
                        );
                        out.push(n);
                    }
                }
            }
            Err(e) => {
                let s = &mut self.sides[side];
                s.stopped = true;
                s.enc_records += 1;
                s.enc_bytes += 5 + r.fragment.len() as u64;
                let suite = s.keys.as_ref().map_or("?", |k| k.suite().name);
                if !self.failed_once {
                    self.failed_once = true;
                    let n = self.notice(
                        NoticeKind::Tls,
                        Some(side),
                        r.last_frame,
                        Some(r.offset),
                        format!(
                            "TLS record {rec_no} does not decrypt with the logged key ({suite}): {}; wrong key for this connection? The rest of this direction stays encrypted",
                            e.describe()
                        ),
                    );
                    out.push(n);
                }
            }
        }
    }

    fn alert(
        &mut self,
        side: usize,
        b: &[u8],
        frame: u64,
        offset: u64,
        decrypted: bool,
        out: &mut Vec<TlsOut>,
    ) {
        let text = match tls_parser::parse_tls_message_alert(b) {
            Ok((_, tls_parser::TlsMessage::Alert(a))) => {
                let level = match a.severity.0 {
                    1 => "warning",
                    2 => "fatal",
                    _ => "unknown level",
                };
                format!("{} ({level})", alert_name(a.code.0))
            }
            _ => format!("{} bytes that are not an alert", b.len()),
        };
        let how = if decrypted { "" } else { " (unencrypted)" };
        let kind = if b.len() == 2 && b[1] == 0 {
            NoticeKind::Info
        } else {
            NoticeKind::Tls
        };
        let n = self.notice(
            kind,
            Some(side),
            frame,
            Some(offset),
            format!("TLS alert{how}: {text}"),
        );
        out.push(n);
    }

    fn handshake(
        &mut self,
        side: usize,
        b: &[u8],
        frame: u64,
        offset: u64,
        keys: &KeyLog,
        out: &mut Vec<TlsOut>,
    ) {
        if self.sides[side].hs_dead {
            return;
        }
        if self.sides[side].hs.is_empty() {
            self.sides[side].hs_since = frame;
        }
        self.sides[side].hs.extend_from_slice(b);
        loop {
            let hs = &self.sides[side].hs;
            if hs.len() < 4 {
                return;
            }
            let len = u32::from_be_bytes([0, hs[1], hs[2], hs[3]]) as usize;
            if len > MAX_HANDSHAKE {
                self.sides[side].hs_dead = true;
                self.sides[side].hs = Vec::new();
                let n = self.notice(
                    NoticeKind::Tls,
                    Some(side),
                    frame,
                    Some(offset),
                    format!("a handshake message of {len} bytes (over {MAX_HANDSHAKE}): the handshake is garbled; the rest of this direction's handshake is not read"),
                );
                out.push(n);
                return;
            }
            if hs.len() < 4 + len {
                return;
            }
            let msg: Vec<u8> = self.sides[side].hs.drain(..4 + len).collect();
            if self.sides[side].hs.is_empty() {
                // A large message's buffer (a certificate chain) is not kept.
                self.sides[side].hs = Vec::new();
            }
            self.handshake_message(side, &msg, frame, offset, keys, out);
        }
    }

    fn handshake_message(
        &mut self,
        side: usize,
        msg: &[u8],
        frame: u64,
        offset: u64,
        keys: &KeyLog,
        out: &mut Vec<TlsOut>,
    ) {
        use tls_parser::{TlsExtension, TlsMessage, TlsMessageHandshake as H};
        let established = self.sides[side].encrypted
            || (self.version == Some(0x0304)
                && self.session.is_some()
                && self.sides[side].keys.is_some());
        let parsed = tls_parser::parse_tls_message_handshake(msg);
        let garbled = |this: &Self, what: &str| {
            this.notice(
                NoticeKind::Tls,
                Some(side),
                frame,
                Some(offset),
                format!("a garbled {what}: it does not parse as TLS; its connection's keys cannot be found"),
            )
        };
        match msg[0] {
            1 => {
                // After a ServerHello (TLS 1.3's HelloRetryRequest sets no server random),
                // a ClientHello renegotiates, whether or not it parses.
                if established || self.server_random.is_some() && self.version != Some(0x0304) {
                    let n = self.notice(NoticeKind::Tls, Some(side), frame, Some(offset), "TLS renegotiation attempt (a second ClientHello); kwire follows the first handshake's keys only".into());
                    out.push(n);
                    return;
                }
                let Ok((_, TlsMessage::Handshake(H::ClientHello(ch)))) = parsed else {
                    out.push(garbled(self, "ClientHello"));
                    return;
                };
                self.client = Some(side);
                self.client_random = Some(ch.random.to_vec());
                for (ty, data) in raw_extensions(ch.ext.unwrap_or(&[])) {
                    match ty {
                        0 => {
                            if let Ok((_, TlsExtension::SNI(names))) =
                                tls_parser::parse_tls_extension_sni_content(data)
                            {
                                self.sni = names.first().map(|(_, n)| printable(n));
                            }
                        }
                        22 => self.offered_etm = true,
                        42 => self.offered_early = true,
                        _ => {}
                    }
                }
            }
            2 => {
                let Ok((_, TlsMessage::Handshake(H::ServerHello(sh)))) = parsed else {
                    out.push(garbled(self, "ServerHello"));
                    return;
                };
                if established {
                    return;
                }
                let mut version = sh.version.0;
                let mut etm = false;
                for (ty, data) in raw_extensions(sh.ext.unwrap_or(&[])) {
                    match ty {
                        43 if data.len() == 2 => version = u16::from_be_bytes([data[0], data[1]]),
                        22 => etm = true,
                        16 => {
                            if let Ok((_, TlsExtension::ALPN(p))) =
                                tls_parser::parse_tls_extension_alpn_content(data)
                            {
                                self.alpn = p.first().map(|n| printable(n));
                            }
                        }
                        _ => {}
                    }
                }
                if sh.random == HRR_RANDOM {
                    self.version = Some(0x0304);
                    let n = self.notice(
                        NoticeKind::Info,
                        Some(side),
                        frame,
                        Some(offset),
                        "TLS 1.3 HelloRetryRequest: the client sends a second ClientHello".into(),
                    );
                    out.push(n);
                    return;
                }
                if self.client.is_none() {
                    self.client = Some(1 - side);
                }
                self.version = Some(version);
                self.server_random = Some(sh.random.to_vec());
                let suite = Suite::from_id(sh.cipher.0);
                self.suite = Some(suite.clone());
                self.set_keys(side, suite, etm && self.offered_etm, keys);
                self.replay_early(1 - side, frame, offset, keys, out);
            }
            20 if self.version == Some(0x0304) => {
                if self.client == Some(side) {
                    self.client_finished = true;
                }
                let s = &mut self.sides[side];
                if s.next.is_some() {
                    s.keys = s.next.take();
                }
            }
            // EndOfEarlyData: the client's next records are under its handshake keys.
            5 if self.version == Some(0x0304) && self.client == Some(side) => {
                if let Some(hk) = self.early_hs.take() {
                    self.sides[side].keys = Some(hk);
                }
            }
            24 if self.version == Some(0x0304) => {
                let s = &mut self.sides[side];
                s.keys = s.keys.as_ref().and_then(|k| k.updated());
                let n = self.notice(
                    NoticeKind::Info,
                    Some(side),
                    frame,
                    Some(offset),
                    "TLS 1.3 KeyUpdate: this direction's keys change".into(),
                );
                out.push(n);
            }
            0 => {
                let n = self.notice(NoticeKind::Tls, Some(side), frame, Some(offset), "TLS renegotiation attempt (HelloRequest); kwire follows the first handshake's keys only".into());
                out.push(n);
            }
            _ => {}
        }
    }

    /// At the ServerHello (sent by `server`): the keys of both directions, from the key
    /// log entry of the client random.
    fn set_keys(&mut self, server: usize, suite: Result<Suite, String>, etm: bool, keys: &KeyLog) {
        let client = 1 - server;
        let suite = match suite {
            Ok(s) => s,
            Err(name) => {
                self.missing = Some(format!("{name} is not a cipher suite kwire decrypts"));
                return;
            }
        };
        let Some(cr) = self.client_random.clone() else {
            self.missing = Some("no ClientHello seen, so no client random to find keys by".into());
            return;
        };
        let sr = self.server_random.clone().unwrap_or_default();
        let Some(sec) = keys.lookup(&cr) else {
            self.missing = Some(if keys.is_empty() {
                "no key log given, or no key in it (--tls-keylog FILE or SSLKEYLOGFILE)".into()
            } else {
                "no key in the key log for this client random (keys for another capture?)".into()
            });
            return;
        };
        let name = self.version_name().unwrap_or("TLS");
        if self.version == Some(0x0304) {
            let (Some(ch), Some(shs)) = (&sec.client_handshake, &sec.server_handshake) else {
                self.missing = Some(
                    "the key log has no TLS 1.3 handshake secrets for this client random".into(),
                );
                return;
            };
            self.sides[server].keys = decrypt::tls13_keys(suite, shs);
            let client_hs = decrypt::tls13_keys(suite, ch);
            // 0-RTT: the early data keys first, the handshake keys after EndOfEarlyData
            // (a server accepting early data keeps the resumed session's suite).
            let early = sec
                .client_early
                .as_ref()
                .filter(|_| self.offered_early)
                .and_then(|e| decrypt::tls13_keys(suite, e));
            if early.is_some() {
                self.sides[client].keys = early;
                self.early_hs = client_hs;
            } else {
                self.sides[client].keys = client_hs;
            }
            self.sides[server].next = sec
                .server_traffic
                .as_ref()
                .and_then(|s| decrypt::tls13_keys(suite, s));
            self.sides[client].next = sec
                .client_traffic
                .as_ref()
                .and_then(|s| decrypt::tls13_keys(suite, s));
            if self.sides[server].next.is_none() || self.sides[client].next.is_none() {
                self.missing = Some("the key log has no TLS 1.3 traffic secrets (CLIENT_/SERVER_TRAFFIC_SECRET_0) for this client random".into());
            }
        } else {
            let Some(master) = &sec.master else {
                self.missing = Some("the key log has no CLIENT_RANDOM (TLS 1.2 master secret) line for this client random".into());
                return;
            };
            match decrypt::tls12_keys(suite, master, &cr, &sr, etm) {
                Some((c, s)) => {
                    self.sides[client].next = Some(c);
                    self.sides[server].next = Some(s);
                }
                None => {
                    self.missing = Some("keys could not be made from the logged secret".into());
                    return;
                }
            }
        }
        self.session = Some(Arc::new(TlsSession {
            version: name,
            cipher_suite: suite.name,
            sni: self.sni.clone(),
            alpn: self.alpn.clone(),
        }));
    }

    /// At the ServerHello: the client's early data records held until now, decrypted with
    /// the early data keys (or counted as encrypted without them), and one notice saying so.
    fn replay_early(
        &mut self,
        client: usize,
        frame: u64,
        offset: u64,
        keys: &KeyLog,
        out: &mut Vec<TlsOut>,
    ) {
        let early = std::mem::take(&mut self.early);
        self.early_bytes = 0;
        if early.is_empty() {
            return;
        }
        let n = early.len();
        let with_keys = self.early_hs.is_some();
        let before = self.sides[client].decrypted;
        for (rec_no, r) in early {
            self.open_record(client, rec_no, r, keys, out);
        }
        let opened = self.sides[client].decrypted - before;
        if self.session.is_none() {
            // no keys for the connection at all: its closing notice says why
            return;
        }
        let recs = plural(n as u64, "record", "records");
        let (kind, text) = if self.version != Some(0x0304) {
            (
                NoticeKind::Tls,
                format!("TLS 1.3 early data (0-RTT): the client's {recs} sent before the ServerHello stayed encrypted: the server answered with {}, refusing them", self.version_name().unwrap_or("another version")),
            )
        } else if with_keys && opened > 0 {
            (
                NoticeKind::Info,
                format!("TLS 1.3 early data (0-RTT): {opened} of the client's {recs} sent before the ServerHello decrypted with the logged CLIENT_EARLY_TRAFFIC_SECRET (the server may still have refused them)"),
            )
        } else {
            (
                NoticeKind::Tls,
                format!("TLS 1.3 early data (0-RTT): the client's {recs} sent before the ServerHello stayed encrypted: {}", if with_keys { "they do not decrypt with the logged CLIENT_EARLY_TRAFFIC_SECRET" } else { "the key log has no CLIENT_EARLY_TRAFFIC_SECRET for this client random" }),
            )
        };
        let n = self.notice(kind, Some(client), frame, Some(offset), text);
        out.push(n);
    }

    /// End of the connection: says what stayed encrypted and why, and what was cut.
    pub fn finish(&mut self, frame: u64, out: &mut Vec<TlsOut>) {
        // early data held for a ServerHello (its cipher suite opens it) that never came
        let early_waiting = self.early.len();
        if let Some(c) = self.client {
            for (_, r) in std::mem::take(&mut self.early) {
                self.sides[c].enc_records += 1;
                self.sides[c].enc_bytes += 5 + r.fragment.len() as u64;
                self.early_stayed += 1;
            }
        }
        let mut cut = 0;
        for side in 0..2 {
            if let Some(rs) = self.sides[side].resync {
                let (_, scanned) = self.sides[side].split.search_state().unwrap_or((0, 0));
                let scanned = scanned + self.sides[side].split.held() as u64;
                self.sides[side].resync = None;
                self.sides[side].split.kill();
                let n = self.notice(
                    NoticeKind::Unfinished,
                    Some(side),
                    frame,
                    Some(rs.gap_end),
                    format!(
                        "the stream ended while looking for the next TLS record after the gap \
                         at stream bytes {}..{} ({scanned} bytes after it, {} on {}): none \
                         decrypted; the rest of this direction stayed encrypted",
                        rs.gap_at,
                        rs.gap_end,
                        plural(rs.tries.into(), "decryption try", "decryption tries"),
                        plural(
                            rs.candidates.into(),
                            "candidate record",
                            "candidate records"
                        ),
                    ),
                );
                out.push(n);
                continue;
            }
            let held = self.sides[side].split.held();
            if held > 0 {
                cut += 1;
                let n = self.notice(
                    NoticeKind::Unfinished,
                    Some(side),
                    frame,
                    None,
                    format!("the stream ended inside a TLS record ({held} bytes present)"),
                );
                out.push(n);
                self.sides[side].enc_records += 1;
                self.sides[side].enc_bytes += held as u64;
            }
        }
        let sum = self.summary();
        if sum.encrypted_records == 0 && self.session.is_some() {
            return;
        }
        let version = sum.version.unwrap_or("TLS (version unknown)");
        let random = match &self.client_random {
            Some(r) => format!("client random {}", hex_prefix(r)),
            None if self.handshake_shed => "its handshake given up by the in-flight budget".into(),
            None => "no ClientHello".into(),
        };
        let why = match (&self.missing, &self.client_random) {
            _ if self.handshake_shed => "the in-flight budget (all connections) gave up the TLS handshake before it was whole, so the keys cannot be derived (see its Dropped notice)".into(),
            (Some(m), _) => m.clone(),
            (None, None) => "the capture starts after the TLS handshake (no ClientHello, so no client random): the keys cannot be matched".into(),
            (None, Some(_)) if self.failed_once => "a record did not decrypt (see above)".into(),
            (None, Some(_)) if early_waiting > 0 => format!(
                "{early_waiting} of them TLS 1.3 early data (0-RTT) waiting for a ServerHello the capture does not hold (its cipher suite opens them)"
            ),
            (None, Some(_)) if self.early_stayed > 0 => format!(
                "{} of them TLS 1.3 early data (0-RTT) without its CLIENT_EARLY_TRAFFIC_SECRET",
                self.early_stayed
            ),
            (None, Some(_)) if self.server_random.is_none() => "no ServerHello seen".into(),
            (None, Some(_)) if sum.encrypted_records == cut => {
                "the stream ended inside a TLS record (see above)".into()
            }
            (None, Some(_)) => "records after a gap or a failed record".into(),
        };
        // With no encrypted record there was nothing to decrypt: why keys could not be
        // had does not matter, how far the handshake went does.
        let what = match sum.encrypted_records {
            0 => {
                let how = if self.handshake_shed {
                    format!(": {why}")
                } else if self.server_random.is_none() {
                    ": no ServerHello seen".to_string()
                } else {
                    String::new()
                };
                format!("no encrypted record was seen, so nothing was decrypted{how}")
            }
            n => format!(
                "{} ({} bytes) stayed encrypted: {why}",
                plural(n, "record", "records"),
                sum.encrypted_bytes
            ),
        };
        let mut n = Notice::new(
            NoticeKind::Tls,
            format!("{} carries {version} ({random}): {what}", self.name),
        );
        n.frame = Some(frame);
        n.connection = Some(self.id);
        n.bytes = Some(sum.encrypted_bytes);
        out.push(TlsOut::Notice(n));
    }
}

#[cfg(test)]
mod resync_tests {
    use super::{printable, spiral, window_order, NAME_BYTES_KEEP};

    #[test]
    fn hello_names_are_cut_at_their_cap() {
        assert_eq!(printable(b"broker-1.example"), "broker-1.example");
        let long = printable(&[b'a'; 70_000]);
        assert_eq!(long.len(), NAME_BYTES_KEEP + '…'.len_utf8());
        assert!(long.ends_with('…'));
    }

    #[test]
    fn tries_go_out_from_the_estimate_within_the_window() {
        assert_eq!(spiral(3, 5).collect::<Vec<_>>(), vec![3, 4, 2, 5, 1]);
        assert_eq!(spiral(1, 3).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(spiral(1, 1).collect::<Vec<_>>(), vec![1]);
        assert_eq!(
            spiral(1_000, 1_000).take(3).collect::<Vec<_>>(),
            vec![1_000, 999, 998]
        );
        // by turns near the estimate and from the low end
        assert_eq!(
            window_order(10, 20).take(6).collect::<Vec<_>>(),
            vec![10, 1, 11, 2, 9, 3]
        );
        assert_eq!(window_order(2, 2).collect::<Vec<_>>(), vec![2, 1, 1, 2]);
    }
}
