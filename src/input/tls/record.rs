//! TLS record framing of one direction's reassembled TCP bytes (RFC 8446 section 5.1,
//! RFC 5246 section 6.2): a 5-byte header read with tls-parser
//! (`parse_tls_record_header`), then `length` bytes. Records may span TCP segments and a
//! segment may hold several records; a record is handed on once whole, with the capture
//! record (frame) numbers of its first and last bytes.

use crate::input::Timestamp;

/// Largest record fragment accepted, in bytes: 2^14 + 2048 (RFC 5246 section 6.2.3; TLS
/// 1.3 allows less, 2^14 + 256).
pub const MAX_FRAGMENT: usize = (1 << 14) + 2048;

/// One whole record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The 5-byte header as on the wire.
    pub header: [u8; 5],
    /// The fragment after it.
    pub fragment: Vec<u8>,
    /// Stream offset of the header's first byte.
    pub offset: u64,
    /// Capture record carrying the first byte.
    pub first_frame: u64,
    /// Capture record carrying the last byte.
    pub last_frame: u64,
    /// Time of `last_frame`.
    pub time: Timestamp,
}

/// What the splitter found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Split {
    /// A whole record.
    Record(Record),
    /// Bytes that are not a TLS record header (an unknown content type or version), or a
    /// length over [`MAX_FRAGMENT`]: the direction cannot be followed any further.
    Bad {
        /// Stream offset of the header.
        offset: u64,
        /// Record carrying it.
        frame: u64,
        /// What is wrong.
        message: String,
    },
}

/// Splits one direction's stream into records. After a [`Split::Bad`] it takes no more.
#[derive(Debug, Default)]
pub struct Splitter {
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    off: u64,
    first_frame: u64,
    dead: bool,
    /// Bytes of a record given up ([`Splitter::shed`]) still to come: skipped as they
    /// arrive.
    skip: u64,
    /// After a gap that hid record boundaries: the search for the next record header
    /// ([`Splitter::gap`], [`Splitter::probe`]).
    search: Option<Search>,
    /// The capture record and time of the last bytes pushed.
    last_frame: u64,
    last_time: Timestamp,
}

/// A search for the next record after a gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Search {
    /// Stream offset of the first record the gap hit (the first one lost).
    lost_from: u64,
    /// Stream bytes looked at (and passed over) since the gap's end, gaps and bytes
    /// given up by the budget included.
    scanned: u64,
}

/// What a record header found while resynchronising after a gap must look like
/// ([`Splitter::probe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderRule {
    /// The record version (the header's bytes 1-2) of the direction's records before
    /// the gap: `0x0303` for TLS 1.3 and TLS 1.2, `0x0301`/`0x0302` for TLS 1.0/1.1.
    pub version: u16,
    /// TLS 1.3: a candidate's content type must be 23 (application data: every
    /// encrypted TLS 1.3 record has that outer type); else 23 or 21 (an alert).
    pub tls13: bool,
    /// Fewest fragment bytes a record can have under the direction's keys.
    pub min_len: usize,
    /// Most fragment bytes: 2^14 + 256 for TLS 1.3 (RFC 8446 section 5.2), 2^14 + 2048
    /// before (RFC 5246 section 6.2.3).
    pub max_len: usize,
}

impl HeaderRule {
    /// True when `h` (5 bytes) fits the rule: as a candidate (`first`), or as the header
    /// right after one (any content type 20..=24).
    fn fits(&self, h: &[u8], first: bool) -> bool {
        let ty = h[0];
        let ty_ok = if first {
            ty == 23 || (!self.tls13 && ty == 21)
        } else {
            (20..=24).contains(&ty)
        };
        let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
        ty_ok
            && u16::from_be_bytes([h[1], h[2]]) == self.version
            && len <= self.max_len
            && (!first || len >= self.min_len)
    }
}

/// What a gap did to the records of a direction ([`Splitter::gap`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cut {
    /// The gap ends inside the record being read (or at its end): the rest of it is
    /// skipped by its header's length and reading goes on at `next`, the next record's
    /// header. `record`: the record cut, or `None` when the gap fell inside a record
    /// already given up.
    Within {
        /// The record cut (its header was whole).
        record: Option<Shed>,
        /// Stream offset of the next record's header.
        next: u64,
    },
    /// Record boundaries are lost from `from` (the first byte of the first record the
    /// gap hit): the splitter now searches from the gap's end for the next record
    /// header ([`Splitter::probe`]).
    Lost {
        /// Stream offset of the first record lost.
        from: u64,
        /// The record cut, when its header was whole.
        record: Option<Shed>,
        /// A search was already going on (a second gap before the next record was
        /// found): it goes on after this gap.
        again: bool,
    },
}

/// What the search after a gap found ([`Splitter::probe`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A whole record whose header fits the rule (and the header right after it, when
    /// its bytes are there): to be confirmed by decryption, then [`Splitter::resume`]
    /// or [`Splitter::reject`].
    Candidate(Record),
    /// No candidate in the bytes held: more are needed.
    NeedMore,
    /// `limit` bytes scanned without a candidate that decrypts: the search is over.
    Exhausted,
}

/// A record given up before it was whole ([`Splitter::shed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shed {
    /// Its 5-byte header.
    pub header: [u8; 5],
    /// Stream offset of the header's first byte.
    pub offset: u64,
    /// Bytes of it that were held (header included), now dropped.
    pub held: usize,
    /// Capture record carrying its first byte.
    pub first_frame: u64,
}

impl Shed {
    /// The fragment's length (after the header), from the header.
    pub fn fragment_len(&self) -> usize {
        u16::from_be_bytes([self.header[3], self.header[4]]) as usize
    }
}

impl Splitter {
    /// True after a bad header: the rest of the direction is not read.
    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// True while searching for the next record after a gap ([`Splitter::gap`]).
    pub fn is_searching(&self) -> bool {
        self.search.is_some()
    }

    /// While searching: the stream offset of the first record lost, and the bytes
    /// scanned since the gap's end.
    pub fn search_state(&self) -> Option<(u64, u64)> {
        self.search.map(|s| (s.lost_from, s.scanned))
    }

    /// The capture record that carried the last bytes pushed.
    pub fn last_frame(&self) -> u64 {
        self.last_frame
    }

    /// Bytes held for an unfinished record.
    pub fn held(&self) -> usize {
        self.buf.len()
    }

    /// Memory held for an unfinished record (the buffer's capacity), in bytes.
    pub fn held_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The content type of the unfinished record held, once its header is whole.
    pub fn held_type(&self) -> Option<u8> {
        (!self.dead && self.search.is_none() && self.buf.len() >= 5).then(|| self.buf[0])
    }

    /// The capture record that carried the first byte held, if any.
    pub fn held_since(&self) -> Option<u64> {
        (!self.buf.is_empty()).then_some(self.first_frame)
    }

    /// Gives up the unfinished record held, when its header is whole (the in-flight
    /// budget of all connections): its bytes are dropped now and the rest of it is
    /// skipped as it comes, by the length its header gives; the records after it are
    /// read as before. `None` when fewer than 5 bytes are held.
    pub fn shed(&mut self) -> Option<Shed> {
        if self.dead || self.search.is_some() || self.buf.len() < 5 {
            return None;
        }
        let mut header = [0u8; 5];
        header.copy_from_slice(&self.buf[..5]);
        let shed = Shed {
            header,
            offset: self.off,
            held: self.buf.len(),
            first_frame: self.first_frame,
        };
        let total = 5 + shed.fragment_len() as u64;
        self.skip = total.saturating_sub(self.buf.len() as u64);
        self.off += self.buf.len() as u64;
        self.buf = Vec::new();
        Some(shed)
    }

    /// While searching after a gap: gives up the bytes held (a candidate record not yet
    /// whole, for the in-flight budget), counted as scanned; the search goes on with
    /// the bytes after them. Returns how many were dropped (`None`: not searching, or
    /// nothing held).
    pub fn shed_search(&mut self) -> Option<usize> {
        let s = self.search.as_mut()?;
        let n = self.buf.len();
        if n == 0 {
            return None;
        }
        s.scanned += n as u64;
        self.off += n as u64;
        self.buf = Vec::new();
        Some(n)
    }

    /// Stops reading (record boundaries lost for good).
    pub fn kill(&mut self) {
        self.dead = true;
        self.search = None;
        self.buf = Vec::new();
    }

    /// `len` bytes at `offset` (the next offset expected) will never arrive. When the
    /// record being read has a whole header and ends at or after the gap's end, the rest
    /// of it is skipped and reading goes on after it ([`Cut::Within`]); else the record
    /// boundaries are lost and the splitter searches for the next header from the gap's
    /// end ([`Cut::Lost`]; [`Splitter::probe`]). The bytes held of the record cut are
    /// dropped. `None` after a bad header.
    pub fn gap(&mut self, offset: u64, len: u64) -> Option<Cut> {
        if self.dead {
            return None;
        }
        let end = offset + len;
        if let Some(s) = self.search.as_mut() {
            s.scanned += self.buf.len() as u64;
            let from = s.lost_from;
            self.buf = Vec::new();
            self.off = end;
            return Some(Cut::Lost {
                from,
                record: None,
                again: true,
            });
        }
        if self.skip > 0 {
            // Inside a record given up: nothing is buffered, `offset` is where it is.
            let rec_end = offset + self.skip;
            if end <= rec_end {
                self.skip = rec_end - end;
                return Some(Cut::Within {
                    record: None,
                    next: rec_end,
                });
            }
            self.skip = 0;
            return Some(self.start_search(rec_end, end, None));
        }
        let from = if self.buf.is_empty() {
            offset
        } else {
            self.off
        };
        let record = (self.buf.len() >= 5).then(|| {
            let mut header = [0u8; 5];
            header.copy_from_slice(&self.buf[..5]);
            Shed {
                header,
                offset: from,
                held: self.buf.len(),
                first_frame: self.first_frame,
            }
        });
        if let Some(r) = &record {
            let rec_end = from + 5 + r.fragment_len() as u64;
            if end <= rec_end {
                self.skip = rec_end - end;
                self.buf = Vec::new();
                self.off = end;
                return Some(Cut::Within {
                    record,
                    next: rec_end,
                });
            }
        }
        Some(self.start_search(from, end, record))
    }

    fn start_search(&mut self, from: u64, end: u64, record: Option<Shed>) -> Cut {
        self.buf = Vec::new();
        self.off = end;
        self.search = Some(Search {
            lost_from: from,
            scanned: 0,
        });
        Cut::Lost {
            from,
            record,
            again: false,
        }
    }

    /// While searching after a gap: the first offset from where the search stands whose
    /// 5 bytes fit `rule`, whose record is whole in what is held, and (when its bytes
    /// are there) is followed by another header that fits. Offsets passed over count as
    /// scanned; past `limit` bytes scanned the search is [`Probe::Exhausted`]. The bytes
    /// passed over are dropped, so what is held is at most one record and a header.
    pub fn probe(&mut self, rule: &HeaderRule, limit: u64) -> Probe {
        let Some(s) = self.search.as_mut() else {
            return Probe::NeedMore;
        };
        let mut at = 0usize;
        let res = loop {
            if s.scanned >= limit {
                break Probe::Exhausted;
            }
            if self.buf.len() - at < 5 {
                break Probe::NeedMore;
            }
            let head = &self.buf[at..at + 5];
            if rule.fits(head, true) {
                let len = usize::from(u16::from_be_bytes([head[3], head[4]]));
                let next = at + 5 + len;
                if self.buf.len() < next {
                    break Probe::NeedMore;
                }
                if self.buf.len() < next + 5 || rule.fits(&self.buf[next..next + 5], false) {
                    let mut header = [0u8; 5];
                    header.copy_from_slice(head);
                    break Probe::Candidate(Record {
                        header,
                        fragment: self.buf[at + 5..next].to_vec(),
                        offset: self.off + at as u64,
                        first_frame: self.first_frame,
                        last_frame: self.last_frame,
                        time: self.last_time,
                    });
                }
            }
            at += 1;
            s.scanned += 1;
        };
        self.buf.drain(..at);
        self.off += at as u64;
        if self.buf.is_empty() {
            self.first_frame = self.last_frame;
        }
        res
    }

    /// The candidate [`Splitter::probe`] gave does not decrypt: the search goes on from
    /// the next byte.
    pub fn reject(&mut self) {
        if let Some(s) = self.search.as_mut() {
            if !self.buf.is_empty() {
                self.buf.drain(..1);
                self.off += 1;
                s.scanned += 1;
            }
        }
    }

    /// The candidate [`Splitter::probe`] gave decrypts: the search is over, and the
    /// records held from it on are split into `out` (the candidate first).
    pub fn resume(&mut self, out: &mut Vec<Split>) {
        if self.search.take().is_some() {
            self.cut_records(self.last_frame, self.last_time, out);
        }
    }

    /// Adds in-order bytes at `offset` carried by capture record `frame` at `time`.
    pub fn push(
        &mut self,
        offset: u64,
        bytes: &[u8],
        frame: u64,
        time: Timestamp,
        out: &mut Vec<Split>,
    ) {
        if self.dead {
            return;
        }
        let (mut offset, mut bytes) = (offset, bytes);
        if self.skip > 0 {
            let n = self.skip.min(bytes.len() as u64);
            self.skip -= n;
            offset += n;
            bytes = &bytes[n as usize..];
            if bytes.is_empty() {
                return;
            }
        }
        if self.buf.is_empty() {
            self.off = offset;
            self.first_frame = frame;
        }
        self.buf.extend_from_slice(bytes);
        self.last_frame = frame;
        self.last_time = time;
        if self.search.is_some() {
            // Looked at by `probe`.
            return;
        }
        self.cut_records(frame, time, out);
    }

    /// Cuts the whole records held into `out`; the last bytes came with `frame` at `time`.
    fn cut_records(&mut self, frame: u64, time: Timestamp, out: &mut Vec<Split>) {
        let mut at = 0usize;
        while self.buf.len() - at >= 5 {
            let head = &self.buf[at..at + 5];
            let parsed = tls_parser::parse_tls_record_header(head);
            let ok = match &parsed {
                Ok((_, h)) => {
                    (20..=24).contains(&h.record_type.0)
                        && h.version.0 >> 8 == 3
                        && h.version.0 & 0xff <= 4
                }
                Err(_) => false,
            };
            let len = match parsed {
                Ok((_, h)) if ok => h.len as usize,
                _ => {
                    out.push(Split::Bad {
                        offset: self.off + at as u64,
                        frame,
                        message: format!(
                            "bytes {:02x} {:02x} {:02x} are not a TLS record header",
                            head[0], head[1], head[2]
                        ),
                    });
                    self.kill();
                    return;
                }
            };
            if len > MAX_FRAGMENT {
                out.push(Split::Bad {
                    offset: self.off + at as u64,
                    frame,
                    message: format!(
                        "a TLS record of {len} bytes is longer than the TLS maximum of {MAX_FRAGMENT}"
                    ),
                });
                self.kill();
                return;
            }
            if self.buf.len() - at < 5 + len {
                break;
            }
            let mut header = [0u8; 5];
            header.copy_from_slice(&self.buf[at..at + 5]);
            out.push(Split::Record(Record {
                header,
                fragment: self.buf[at + 5..at + 5 + len].to_vec(),
                offset: self.off + at as u64,
                first_frame: self.first_frame,
                last_frame: frame,
                time,
            }));
            at += 5 + len;
            self.first_frame = frame;
        }
        self.buf.drain(..at);
        self.off += at as u64;
        if self.buf.is_empty() {
            self.first_frame = frame;
            if self.buf.capacity() > 4096 {
                // A large record's buffer is not kept for the small ones after it.
                self.buf = Vec::new();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_across_and_within_segments() {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        let t = Timestamp::default();
        // two records in one segment, the second's tail in the next
        s.push(
            0,
            &[23, 3, 3, 0, 2, 0xaa, 0xbb, 23, 3, 3, 0, 3, 1],
            1,
            t,
            &mut out,
        );
        assert_eq!(out.len(), 1);
        s.push(13, &[2, 3], 2, t, &mut out);
        assert_eq!(out.len(), 2);
        let Split::Record(r) = &out[1] else { panic!() };
        assert_eq!((r.offset, r.first_frame, r.last_frame), (7, 1, 2));
        assert_eq!(r.fragment, vec![1, 2, 3]);
        // oversize
        s.push(15, &[23, 3, 3, 0x48, 0x01], 3, t, &mut out);
        assert!(matches!(&out[2], Split::Bad { message, .. } if message.contains("longer than")));
        assert!(s.is_dead());
    }

    #[test]
    fn a_record_given_up_is_skipped_by_its_length() {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        let t = Timestamp::default();
        s.push(0, &[23, 3, 3], 1, t, &mut out);
        assert_eq!(s.shed(), None, "no whole header yet");
        s.push(3, &[0, 6, 1, 2], 2, t, &mut out);
        assert_eq!((s.held_type(), s.held_since()), (Some(23), Some(1)));
        let shed = s.shed().unwrap();
        assert_eq!((shed.offset, shed.held, shed.fragment_len()), (0, 7, 6));
        assert_eq!((s.held(), s.held_since()), (0, None));
        // The record's other 4 bytes, then a whole one, in two pieces.
        s.push(7, &[3, 4, 5], 3, t, &mut out);
        s.push(10, &[6, 22, 3, 3, 0, 1, 9], 4, t, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        let Split::Record(r) = &out[0] else { panic!() };
        assert_eq!((r.offset, r.header[0], &r.fragment[..]), (11, 22, &[9][..]));
    }

    const RULE: HeaderRule = HeaderRule {
        version: 0x0303,
        tls13: true,
        min_len: 17,
        max_len: (1 << 14) + 256,
    };

    fn rec(len: usize, fill: u8) -> Vec<u8> {
        let mut v = vec![23, 3, 3, (len >> 8) as u8, len as u8];
        v.extend(std::iter::repeat_n(fill, len));
        v
    }

    #[test]
    fn a_gap_inside_a_record_skips_the_rest_of_it() {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        let t = Timestamp::default();
        // a record of 5 + 40 bytes: 10 held, 20 lost, the other 15 come
        s.push(0, &rec(40, 1)[..10], 1, t, &mut out);
        let cut = s.gap(10, 20).unwrap();
        let Cut::Within {
            record: Some(r),
            next: 45,
        } = cut
        else {
            panic!("{cut:?}")
        };
        assert_eq!((r.offset, r.held, r.fragment_len()), (0, 10, 40));
        let mut more = vec![1u8; 15];
        more.extend(rec(20, 2));
        s.push(30, &more, 2, t, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        let Split::Record(r) = &out[0] else { panic!() };
        assert_eq!((r.offset, r.fragment.len()), (45, 20));
    }

    #[test]
    fn a_gap_past_a_record_searches_for_the_next_header() {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        let t = Timestamp::default();
        s.push(0, &rec(40, 1)[..3], 1, t, &mut out);
        // lost: the rest of the first record and the start of a second one
        let cut = s.gap(3, 60).unwrap();
        assert_eq!(
            cut,
            Cut::Lost {
                from: 0,
                record: None,
                again: false
            }
        );
        assert!(s.is_searching() && s.held_type().is_none() && s.shed().is_none());
        // the second record's tail (its bytes look like a header but for the version),
        // then a third whole and the start of a fourth
        let mut bytes = vec![23, 3, 1, 0, 20, 9, 9];
        bytes.extend(rec(30, 3));
        bytes.extend(&rec(25, 4)[..5]);
        s.push(63, &bytes, 2, t, &mut out);
        assert!(out.is_empty());
        let Probe::Candidate(c) = s.probe(&RULE, 1000) else {
            panic!()
        };
        assert_eq!((c.offset, c.fragment.len()), (70, 30));
        assert_eq!(s.search_state(), Some((0, 7)));
        // say it does not decrypt: the search goes on and finds the fourth, not whole
        s.reject();
        assert_eq!(s.probe(&RULE, 1000), Probe::NeedMore);
        assert_eq!(s.search_state(), Some((0, 42)));
        assert_eq!(s.held(), 5);
        s.push(110, &[4; 25], 3, t, &mut out);
        let Probe::Candidate(c) = s.probe(&RULE, 1000) else {
            panic!()
        };
        assert_eq!(c.offset, 105);
        // it decrypts: the records from it on are split as before
        s.resume(&mut out);
        assert!(!s.is_searching());
        assert_eq!(out.len(), 1);
        s.push(135, &rec(17, 5), 4, t, &mut out);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn the_search_is_bounded() {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        let t = Timestamp::default();
        s.push(0, &rec(40, 1)[..10], 1, t, &mut out);
        // the gap ends past the record: the search starts at its end
        assert!(matches!(s.gap(10, 100), Some(Cut::Lost { from: 0, .. })));
        s.push(110, &[0x17; 300], 2, t, &mut out);
        assert_eq!(s.probe(&RULE, 200), Probe::Exhausted);
        // a gap while searching: counted, the search goes on
        assert!(matches!(
            s.gap(410, 5),
            Some(Cut::Lost {
                from: 0,
                again: true,
                ..
            })
        ));
        // the budget gives up what a search holds
        s.push(415, &rec(100, 7)[..50], 3, t, &mut out);
        assert_eq!(s.shed_search(), Some(50));
        assert_eq!(s.held(), 0);
    }

    #[test]
    fn garbage_is_bad() {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        s.push(0, b"GET / HTTP/1.1", 4, Timestamp::default(), &mut out);
        assert!(matches!(
            &out[0],
            Split::Bad {
                offset: 0,
                frame: 4,
                ..
            }
        ));
    }
}
