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
        (!self.dead && self.buf.len() >= 5).then(|| self.buf[0])
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
        if self.dead || self.buf.len() < 5 {
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

    /// Stops reading (a gap: record boundaries are lost).
    pub fn kill(&mut self) {
        self.dead = true;
        self.buf = Vec::new();
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
