//! Kafka framing of one direction's reassembled TCP byte stream.
//!
//! Kafka frames are `int32 size` (big-endian) followed by `size` bytes (Kafka protocol guide,
//! "Common Request and Response Structure"). A stream whose start is unknown (capture started
//! mid-stream, or after a gap) is resynchronised on the first offset where the evidence of
//! [`super::resync`] holds (a sane size, a plausible header by [`FramePlausibility`], and the
//! next boundary on another plausible frame).

use std::collections::VecDeque;

use super::resync::{self, sane_size, Verdict};
use super::{Direction, FramePlausibility, NoticeKind, Timestamp};

/// Bytes of header handed to the plausibility check (when the frame is at least that long).
pub const PEEK: usize = 64;

pub use super::resync::VERIFY_LIMIT;

/// A buffer whose capacity passes this (bytes) is shrunk once it is three-quarters empty.
const SHRINK_ABOVE: usize = 64 << 10;

/// Output of a [`Framer`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FramerOut {
    /// A whole (or, if `incomplete`, gap-cut) frame including its size prefix.
    Frame {
        /// Stream offset of the size prefix.
        offset: u64,
        /// Frame bytes.
        bytes: Vec<u8>,
        /// Record carrying the first byte.
        first: u64,
        /// Record carrying the last byte.
        last: u64,
        /// Time of `last`.
        time: Timestamp,
        /// Cut by a gap or by the end of the stream.
        incomplete: bool,
        /// The record that completes it: the highest record number among those that carried
        /// its bytes or those of the frames before it in this direction (and, when cut, the
        /// record that revealed the gap); its place in the output order (`input::order`).
        key: u64,
        /// The lowest record number among those that carried its bytes.
        low: u64,
        /// The highest record number among those that carried its bytes.
        high: u64,
    },
    /// Something skipped.
    Notice {
        /// Category.
        kind: NoticeKind,
        /// Record involved.
        frame: u64,
        /// Stream offset.
        offset: u64,
        /// Bytes skipped.
        bytes: u64,
        /// Explanation.
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    Sync,
    Resync {
        skipped: u64,
        from: u64,
        reason: &'static str,
    },
    Skip {
        remaining: u64,
    },
}

/// Splits one direction's byte stream into size-prefixed frames.
#[derive(Debug)]
pub struct Framer {
    dir: Direction,
    max_frame: usize,
    buf: Vec<u8>,
    buf_off: u64,
    spans: VecDeque<(u64, u64, Timestamp)>,
    mode: Mode,
    last_frame: u64,
    /// Key of the last frame emitted: keys never go down within a direction, as a frame
    /// cannot be cut before the ones ahead of it in the stream.
    last_key: u64,
    /// Tests: frame everything from the buffer, as before whole frames were emitted
    /// from the bytes that carry them (the two must give the same frames).
    #[cfg(test)]
    slow: bool,
}

fn plausible(plaus: &dyn FramePlausibility, dir: Direction, body: &[u8]) -> bool {
    match dir {
        Direction::ToServer => plaus.plausible_request(body),
        Direction::ToClient => plaus.plausible_response(body),
    }
}

/// Result of scanning for a frame start.
pub enum Scan {
    /// A plausible frame starts at this index.
    Found(usize),
    /// Nothing before this index can start a frame; more bytes are needed to judge the rest.
    NeedMore(usize),
}

/// Look for the first frame start in `buf` that the evidence of [`resync::confirm`]
/// holds for. With `at_end`, candidates are judged on the bytes present.
pub fn find_frame_start(
    buf: &[u8],
    dir: Direction,
    max_frame: usize,
    plaus: &dyn FramePlausibility,
    at_end: bool,
) -> Scan {
    let mut p = 0usize;
    while p + 4 <= buf.len() {
        let size = i32::from_be_bytes([buf[p], buf[p + 1], buf[p + 2], buf[p + 3]]);
        if sane_size(size, dir, max_frame) {
            match resync::confirm(buf, p, dir, max_frame, plaus, at_end) {
                Verdict::Accept => return Scan::Found(p),
                Verdict::NeedMore => return Scan::NeedMore(p),
                Verdict::Reject => {}
            }
        }
        p += 1;
    }
    Scan::NeedMore(p)
}

impl Framer {
    /// New framer. `synced`: the stream is known to start at a frame boundary (SYN seen).
    pub fn new(dir: Direction, max_frame: usize, synced: bool) -> Framer {
        Framer {
            dir,
            max_frame: max_frame.max(8),
            buf: Vec::new(),
            buf_off: 0,
            spans: VecDeque::new(),
            mode: if synced {
                Mode::Sync
            } else {
                Mode::Resync {
                    skipped: 0,
                    from: 0,
                    reason: "capture starts mid-stream",
                }
            },
            last_frame: 0,
            last_key: 0,
            #[cfg(test)]
            slow: false,
        }
    }

    /// Whether whole frames are emitted from the bytes that carry them.
    fn direct(&self) -> bool {
        #[cfg(test)]
        if self.slow {
            return false;
        }
        true
    }

    fn frame_at(&self, off: u64) -> (u64, Timestamp) {
        for (end, f, t) in &self.spans {
            if *end > off {
                return (*f, *t);
            }
        }
        self.spans
            .back()
            .map(|(_, f, t)| (*f, *t))
            .unwrap_or((self.last_frame, Timestamp::default()))
    }

    fn consume(&mut self, n: usize) {
        let n = n.min(self.buf.len());
        self.buf.drain(..n);
        self.advance(n);
    }

    /// The first `n` buffered bytes are gone (consumed or taken): moves the buffer's
    /// offset on, forgets the spans behind it, and gives a large buffer's memory back once
    /// little is left in it (a connection that once carried a large frame does not keep
    /// its size).
    fn advance(&mut self, n: usize) {
        self.buf_off += n as u64;
        if self.buf.capacity() > SHRINK_ABOVE && self.buf.len() < self.buf.capacity() / 4 {
            self.buf.shrink_to(self.buf.len().max(SHRINK_ABOVE / 4));
        }
        if self.spans.capacity() > 256 && self.spans.len() < self.spans.capacity() / 4 {
            self.spans.shrink_to(self.spans.len().max(16));
        }
        while let Some((end, _, _)) = self.spans.front() {
            if *end <= self.buf_off && self.spans.len() > 1 {
                self.spans.pop_front();
            } else {
                break;
            }
        }
    }

    /// The record that completes the first `n` buffered bytes (see [`FramerOut::Frame`]).
    fn completed_by(&mut self, n: usize, incomplete: bool) -> u64 {
        let end = self.buf_off + n as u64;
        let mut start = self.buf_off;
        // A frame cut by a gap is complete (as far as it goes) once the gap is known.
        let mut key = if incomplete {
            self.last_key.max(self.last_frame)
        } else {
            self.last_key
        };
        for (span_end, f, _) in &self.spans {
            if *span_end > start {
                key = key.max(*f);
                start = *span_end;
            }
            if start >= end {
                break;
            }
        }
        self.last_key = key;
        key
    }

    /// The lowest and highest record numbers among the records that carried the first `n`
    /// buffered bytes (see [`super::Origin`]).
    fn carriers(&self, n: usize) -> (u64, u64) {
        let (a, b) = (self.buf_off, self.buf_off + n as u64);
        let mut start = None::<u64>;
        let (mut low, mut high) = (u64::MAX, 0u64);
        for (end, f, _) in &self.spans {
            // A span covers from the previous span's end (the first span: from anywhere
            // before `a`) to its own `end`.
            let covers = *end > a && start.is_none_or(|s| s < b);
            if covers {
                low = low.min(*f);
                high = high.max(*f);
            }
            start = Some(*end);
            if *end >= b {
                break;
            }
        }
        if low == u64::MAX {
            let (f, _) = self.frame_at(a);
            return (f, f);
        }
        (low, high)
    }

    /// The lowest record number among the bytes held while looking for a frame start: a
    /// frame found in them can be completed by a record that far back. `None` when the
    /// framer is in step (a frame it still waits for ends in a record not yet read).
    pub fn hold_floor(&self) -> Option<u64> {
        match self.mode {
            Mode::Resync { .. } if !self.buf.is_empty() => {
                self.spans.iter().map(|(_, f, _)| *f).min()
            }
            _ => None,
        }
    }

    /// The frame of the next `n` bytes of the stream (from the buffer's offset), with
    /// the bytes left empty: where it is and which records carried it.
    fn frame_of(&mut self, n: usize, incomplete: bool) -> FramerOut {
        let (first, _) = self.frame_at(self.buf_off);
        let (last, time) = self.frame_at(self.buf_off + n.saturating_sub(1) as u64);
        let key = self.completed_by(n, incomplete);
        let (low, high) = self.carriers(n);
        FramerOut::Frame {
            offset: self.buf_off,
            bytes: Vec::new(),
            first,
            last,
            time,
            incomplete,
            key,
            low,
            high,
        }
    }

    fn emit(&mut self, n: usize, incomplete: bool, out: &mut Vec<FramerOut>) {
        let n = n.min(self.buf.len());
        let mut frame = self.frame_of(n, incomplete);
        let bytes = if n == self.buf.len() {
            // The usual case (the buffer holds this frame and nothing after it): hand the
            // buffer on instead of copying it.
            let b = std::mem::take(&mut self.buf);
            self.advance(n);
            b
        } else {
            let b = self.buf[..n].to_vec();
            self.consume(n);
            b
        };
        if let FramerOut::Frame { bytes: b, .. } = &mut frame {
            *b = bytes;
        }
        out.push(frame);
    }

    /// Emits the whole frame `b`, the next bytes of the stream while the buffer is
    /// empty: copied once, from the segment that holds it, and never into the buffer.
    fn emit_slice(&mut self, b: &[u8], out: &mut Vec<FramerOut>) {
        let mut frame = self.frame_of(b.len(), false);
        self.advance(b.len());
        if let FramerOut::Frame { bytes, .. } = &mut frame {
            *bytes = b.to_vec();
        }
        out.push(frame);
    }

    /// In step, the size of the frame whose size prefix starts `b` (prefix included),
    /// when it is one the framer emits as it is (not negative, within the cap).
    fn plain_size(&self, b: &[u8]) -> Option<usize> {
        let size = i32::from_be_bytes(b.get(..4)?.try_into().ok()?);
        let total = u64::try_from(size).ok()? + 4;
        (self.mode == Mode::Sync && total <= self.max_frame as u64).then_some(total as usize)
    }

    /// Bytes this framer holds: its buffer (a partial frame, or bytes held while
    /// resynchronising) and the record spans that map them to records.
    pub fn held(&self) -> usize {
        self.buf.capacity() + self.spans.len() * std::mem::size_of::<(u64, u64, Timestamp)>()
    }

    /// The record that carried the oldest byte held, if any.
    pub fn held_since(&self) -> Option<u64> {
        (!self.buf.is_empty()).then(|| self.frame_at(self.buf_off).0)
    }

    /// Gives up what is held, for the in-flight budget of all connections (`budget`
    /// bytes, for the notice), at record `frame`: a partial frame is emitted now as
    /// incomplete with the bytes it has, with a [`NoticeKind::Dropped`] notice, and the
    /// rest of it is skipped as it comes (framing resumes where its size prefix says the
    /// next frame starts); bytes held while resynchronising are skipped (counted in the
    /// resync notice). Returns true when a partial frame was cut.
    pub fn shed(&mut self, frame: u64, budget: usize, out: &mut Vec<FramerOut>) -> bool {
        self.last_frame = self.last_frame.max(frame);
        match self.mode.clone() {
            Mode::Sync if self.buf.len() >= 4 => {
                let size = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                let total = size.max(0) as u64 + 4;
                let have = self.buf.len() as u64;
                out.push(FramerOut::Notice {
                    kind: NoticeKind::Dropped,
                    frame,
                    offset: self.buf_off,
                    bytes: total.saturating_sub(have),
                    message: format!(
                        "in-flight budget of {budget} bytes (all connections) passed: the \
                         oldest partial frame, {total} bytes, is shown incomplete with the \
                         {have} it has; its other {} are skipped",
                        total.saturating_sub(have)
                    ),
                });
                let end = self.buf_off + total;
                self.emit(have as usize, true, out);
                let remaining = end.saturating_sub(self.buf_off);
                self.mode = if remaining == 0 {
                    Mode::Sync
                } else {
                    Mode::Skip { remaining }
                };
                self.buf = Vec::new();
                self.spans = VecDeque::new();
                true
            }
            Mode::Resync {
                skipped,
                from,
                reason,
            } if !self.buf.is_empty() => {
                let n = self.buf.len();
                self.mode = Mode::Resync {
                    skipped: skipped + n as u64,
                    from,
                    reason,
                };
                self.buf = Vec::new();
                self.advance(n);
                self.spans = VecDeque::new();
                false
            }
            _ => false,
        }
    }

    fn resync_notice(&self, skipped: u64, from: u64, reason: &str, out: &mut Vec<FramerOut>) {
        if skipped > 0 {
            out.push(FramerOut::Notice {
                kind: NoticeKind::Resync,
                frame: self.frame_at(from).0,
                offset: from,
                bytes: skipped,
                message: format!(
                    "skipped {skipped} bytes ({reason}) before the next plausible frame start"
                ),
            });
        }
    }

    /// [`Framer::data`] for bytes the caller owns: when they are one whole frame and
    /// nothing is held before them (a frame in one segment, the usual case), they go
    /// out as that frame without being copied.
    pub fn data_vec(
        &mut self,
        offset: u64,
        bytes: Vec<u8>,
        frame: u64,
        time: Timestamp,
        plaus: &dyn FramePlausibility,
        out: &mut Vec<FramerOut>,
    ) {
        let whole = self.direct()
            && self.buf.is_empty()
            && offset == self.buf_off
            && self.plain_size(&bytes) == Some(bytes.len());
        if !whole {
            return self.data(offset, &bytes, frame, time, plaus, out);
        }
        // What `data` does with them, but for the copy.
        self.last_frame = frame;
        self.spans
            .push_back((self.buf_off + bytes.len() as u64, frame, time));
        let mut f = self.frame_of(bytes.len(), false);
        self.advance(bytes.len());
        if let FramerOut::Frame { bytes: b, .. } = &mut f {
            *b = bytes;
        }
        out.push(f);
    }

    /// Append in-order bytes at stream offset `offset` carried by record `frame`.
    pub fn data(
        &mut self,
        offset: u64,
        mut bytes: &[u8],
        frame: u64,
        time: Timestamp,
        plaus: &dyn FramePlausibility,
        out: &mut Vec<FramerOut>,
    ) {
        self.last_frame = frame;
        let end = self.buf_off + self.buf.len() as u64;
        if offset != end {
            // not contiguous (should not happen): treat as a gap
            if offset > end {
                self.gap(end, offset - end, frame, out);
            } else {
                return;
            }
        }
        if let Mode::Skip { remaining } = self.mode {
            let n = (remaining.min(bytes.len() as u64)) as usize;
            bytes = &bytes[n..];
            self.buf_off += n as u64;
            let remaining = remaining - n as u64;
            self.mode = if remaining == 0 {
                Mode::Sync
            } else {
                Mode::Skip { remaining }
            };
        }
        if bytes.is_empty() {
            return;
        }
        self.spans.push_back((
            self.buf_off + (self.buf.len() + bytes.len()) as u64,
            frame,
            time,
        ));
        // In step, whole frames are emitted from `bytes` as they lie: a partial frame
        // in the buffer takes only the bytes that complete it (and goes out as the
        // buffer itself), a frame wholly in `bytes` is copied once, and only what is
        // left after the last whole frame goes into the buffer. The rest (a size
        // prefix cut in two, a frame to skip or resynchronise on) is framed from the
        // buffer below, as all of it was before.
        while self.direct() {
            if self.buf.is_empty() {
                match self.plain_size(bytes) {
                    Some(total) if total <= bytes.len() => {
                        let (this, rest) = bytes.split_at(total);
                        self.emit_slice(this, out);
                        bytes = rest;
                        continue;
                    }
                    _ => break,
                }
            }
            match self.plain_size(&self.buf) {
                Some(total) if total > self.buf.len() && total - self.buf.len() <= bytes.len() => {
                    let (this, rest) = bytes.split_at(total - self.buf.len());
                    self.buf.extend_from_slice(this);
                    bytes = rest;
                    self.emit(total, false, out);
                }
                _ => break,
            }
        }
        if !bytes.is_empty() {
            self.buf.extend_from_slice(bytes);
        }
        self.process(plaus, false, out);
    }

    fn process(&mut self, plaus: &dyn FramePlausibility, at_end: bool, out: &mut Vec<FramerOut>) {
        loop {
            match self.mode.clone() {
                Mode::Skip { .. } => return,
                Mode::Sync => {
                    if self.buf.len() < 4 {
                        return;
                    }
                    let size =
                        i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                    if size < 0 {
                        self.mode = Mode::Resync {
                            skipped: 0,
                            from: self.buf_off,
                            reason: "negative frame size",
                        };
                        continue;
                    }
                    let total = size as u64 + 4;
                    if total > self.max_frame as u64 {
                        let need = (size as usize).min(PEEK);
                        if self.buf.len() < 4 + need && !at_end {
                            return;
                        }
                        let body = &self.buf[4..self.buf.len().min(4 + size as usize)];
                        if plausible(plaus, self.dir, body) {
                            out.push(FramerOut::Notice {
                                kind: NoticeKind::Oversize,
                                frame: self.frame_at(self.buf_off).0,
                                offset: self.buf_off,
                                bytes: total,
                                message: format!(
                                    "frame of {total} bytes exceeds the cap of {} bytes; skipped",
                                    self.max_frame
                                ),
                            });
                            let have = self.buf.len() as u64;
                            if have >= total {
                                self.consume(total as usize);
                            } else {
                                self.consume(have as usize);
                                self.mode = Mode::Skip {
                                    remaining: total - have,
                                };
                            }
                        } else {
                            self.mode = Mode::Resync {
                                skipped: 0,
                                from: self.buf_off,
                                reason: "implausible frame size",
                            };
                        }
                        continue;
                    }
                    if self.buf.len() as u64 >= total {
                        self.emit(total as usize, false, out);
                        continue;
                    }
                    return;
                }
                Mode::Resync {
                    skipped,
                    from,
                    reason,
                } => match find_frame_start(&self.buf, self.dir, self.max_frame, plaus, at_end) {
                    Scan::Found(p) => {
                        self.consume(p);
                        self.resync_notice(skipped + p as u64, from, reason, out);
                        self.mode = Mode::Sync;
                    }
                    Scan::NeedMore(p) => {
                        self.consume(p);
                        self.mode = Mode::Resync {
                            skipped: skipped + p as u64,
                            from,
                            reason,
                        };
                        return;
                    }
                },
            }
        }
    }

    /// `len` bytes at `offset` are lost. The frame they hit is emitted as incomplete; framing
    /// continues after that frame if the gap ends inside it, else resynchronises.
    pub fn gap(&mut self, offset: u64, len: u64, frame: u64, out: &mut Vec<FramerOut>) {
        self.last_frame = frame;
        let gap_end = offset + len;
        match self.mode.clone() {
            Mode::Sync => {
                if self.buf.len() >= 4 {
                    let size =
                        i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                    let frame_end = self.buf_off + 4 + size.max(0) as u64;
                    let n = self.buf.len();
                    self.emit(n, true, out);
                    self.mode = if gap_end <= frame_end {
                        Mode::Skip {
                            remaining: frame_end - gap_end,
                        }
                    } else {
                        Mode::Resync {
                            skipped: 0,
                            from: gap_end,
                            reason: "after a gap",
                        }
                    };
                    if self.mode == (Mode::Skip { remaining: 0 }) {
                        self.mode = Mode::Sync;
                    }
                } else {
                    let skipped = self.buf.len() as u64;
                    self.mode = Mode::Resync {
                        skipped,
                        from: self.buf_off,
                        reason: "a gap hit a size prefix",
                    };
                }
            }
            Mode::Skip { remaining } => {
                // the skipped frame region absorbs the gap if it fits
                let end = offset + remaining;
                self.mode = if gap_end <= end {
                    if end == gap_end {
                        Mode::Sync
                    } else {
                        Mode::Skip {
                            remaining: end - gap_end,
                        }
                    }
                } else {
                    Mode::Resync {
                        skipped: 0,
                        from: gap_end,
                        reason: "after a gap",
                    }
                };
            }
            Mode::Resync {
                skipped,
                from,
                reason,
            } => {
                self.mode = Mode::Resync {
                    skipped: skipped + self.buf.len() as u64,
                    from,
                    reason,
                };
            }
        }
        self.buf = Vec::new();
        self.spans = VecDeque::new();
        self.buf_off = gap_end;
    }

    /// Framing is lost (bytes of unknown length are gone, `reason` says why): the next
    /// frame start is looked for by the resync evidence, whatever the last size prefix
    /// said. Call after [`Framer::gap`], which emits the frame the loss cut.
    pub fn resync(&mut self, reason: &'static str) {
        if let Mode::Resync { .. } = self.mode {
            return;
        }
        self.mode = Mode::Resync {
            skipped: 0,
            from: self.buf_off,
            reason,
        };
    }

    /// End of stream: judge what is left; a partial frame is emitted as incomplete.
    pub fn finish(&mut self, plaus: &dyn FramePlausibility, out: &mut Vec<FramerOut>) {
        self.process(plaus, true, out);
        match self.mode.clone() {
            Mode::Sync => {
                if self.buf.len() >= 4 {
                    let size =
                        i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                    let have = self.buf.len();
                    out.push(FramerOut::Notice {
                        kind: NoticeKind::Unfinished,
                        frame: self.frame_at(self.buf_off).0,
                        offset: self.buf_off,
                        bytes: (size.max(0) as u64 + 4).saturating_sub(have as u64),
                        message: format!(
                            "stream ended inside a frame of {} bytes ({have} present)",
                            size as i64 + 4
                        ),
                    });
                    self.emit(have, true, out);
                } else if !self.buf.is_empty() {
                    out.push(FramerOut::Notice {
                        kind: NoticeKind::Unfinished,
                        frame: self.frame_at(self.buf_off).0,
                        offset: self.buf_off,
                        bytes: self.buf.len() as u64,
                        message: format!("{} trailing bytes at stream end", self.buf.len()),
                    });
                }
            }
            Mode::Resync { skipped, from, .. } => {
                let total = skipped + self.buf.len() as u64;
                self.resync_notice(
                    total,
                    from,
                    "no plausible frame start before stream end",
                    out,
                );
            }
            Mode::Skip { .. } => {}
        }
        self.buf = Vec::new();
        self.spans = VecDeque::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::DefaultPlausibility;

    /// Frames of the sizes in `bodies` (request headers, so that resync can accept them),
    /// one stream.
    fn stream(bodies: &[usize]) -> Vec<u8> {
        let mut s = Vec::new();
        for (i, n) in bodies.iter().enumerate() {
            let n = (*n).max(10);
            s.extend_from_slice(&(n as i32).to_be_bytes());
            let mut b = vec![0u8; n];
            b[1] = 3; // ApiVersions v0..
            b[4..8].copy_from_slice(&(i as i32).to_be_bytes());
            b[8..10].copy_from_slice(&(-1i16).to_be_bytes());
            s.extend_from_slice(&b);
        }
        s
    }

    /// Whole frames emitted from the segments that carry them (one a segment, several a
    /// segment, a frame completed by a segment that also carries the next ones, size
    /// prefixes cut, a negative size, a frame over the cap, a gap) come out the same as
    /// when every byte goes through the buffer: same bytes, offsets, records, keys.
    #[test]
    fn direct_frames_match_the_buffered_ones() {
        let plaus = DefaultPlausibility;
        let mut s = stream(&[10, 40, 12, 300, 10, 10, 10, 77, 5000, 10, 64, 33]);
        // A negative size (resynchronised on), then more frames; then one over the cap.
        s.extend_from_slice(&(-5i32).to_be_bytes());
        s.extend(stream(&[20, 21, 22]));
        s.extend_from_slice(&(9000i32).to_be_bytes());
        s.extend(std::iter::repeat_n(0u8, 9000));
        s.extend(stream(&[30, 31]));
        // Cut points: a frame a segment, three frames a segment, cuts inside size
        // prefixes and bodies, one byte at a time for a stretch.
        let mut cuts: Vec<Vec<usize>> = vec![vec![14, 14 + 44, 14 + 44 + 16]];
        cuts.push((1..s.len()).step_by(7).collect());
        cuts.push((1..s.len()).step_by(333).collect());
        cuts.push((1..200).chain((300..s.len()).step_by(2000)).collect());
        cuts.push(vec![2, 3, 100, 101, 102, 5500, 5502, 9100]);
        for cut in cuts {
            let mut outs = Vec::new();
            for slow in [false, true] {
                let mut f = Framer::new(Direction::ToServer, 8192, true);
                f.slow = slow;
                let mut out = Vec::new();
                let mut at = 0;
                let mut bounds: Vec<usize> = cut.iter().copied().filter(|c| *c < s.len()).collect();
                bounds.push(s.len());
                for (rec, end) in bounds.into_iter().enumerate() {
                    if end <= at {
                        continue;
                    }
                    let t = Timestamp::default();
                    let rec = rec as u64 + 1;
                    if rec.is_multiple_of(2) {
                        f.data_vec(at as u64, s[at..end].to_vec(), rec, t, &plaus, &mut out);
                    } else {
                        f.data(at as u64, &s[at..end], rec, t, &plaus, &mut out);
                    }
                    at = end;
                    if rec == 9 {
                        // A gap (of no bytes) cuts the frame it falls in.
                        f.gap(at as u64, 0, rec, &mut out);
                    }
                }
                f.finish(&plaus, &mut out);
                outs.push(out);
            }
            assert!(
                outs[0]
                    .iter()
                    .filter(|o| matches!(o, FramerOut::Frame { .. }))
                    .count()
                    > 10
            );
            assert_eq!(outs[0], outs[1], "cuts {cut:?}");
        }
    }
}
