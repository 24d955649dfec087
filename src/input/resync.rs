//! Evidence for a frame start found while resynchronising a stream (a capture that starts
//! mid-stream, or the bytes after a gap). Inside a frame's bytes, a size prefix followed
//! by a plausible header turns up often enough by chance (record batches are full of small
//! big-endian integers), so a candidate is accepted only when:
//!
//! - its size is within the caps and its header is plausible for its direction
//!   ([`FramePlausibility`]);
//! - it lies whole in the buffered bytes (up to [`VERIFY_LIMIT`]), and the next boundary
//!   lands on the end of the data or on another plausible frame of the same direction
//!   whose correlation_id follows the candidate's by 1 to [`MAX_CORR_STEP`] (a client
//!   numbers its requests upwards, and a broker answers them in order on a connection);
//! - or, for a response too large to hold, its correlation_id is one a request on the
//!   connection carried ([`FramePlausibility::known_correlation`]).
//!
//! Anything weaker is left as skipped bytes (the framer's resync notice says why).

use super::framer::PEEK;
use super::{Direction, FramePlausibility};

/// Largest candidate frame (bytes after the size prefix) held whole to check where it
/// ends; larger ones need a known correlation_id.
pub const VERIFY_LIMIT: usize = 16 << 20;

/// Largest step from a candidate's correlation_id to the next frame's.
pub const MAX_CORR_STEP: i64 = 1024;

/// The judgement on a candidate frame start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The evidence holds.
    Accept,
    /// It does not: look further on.
    Reject,
    /// More bytes are needed to judge.
    NeedMore,
}

fn be32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Is `size` (the prefix value) acceptable as a frame start while resynchronising?
pub fn sane_size(size: i32, dir: Direction, max_frame: usize) -> bool {
    let min = match dir {
        Direction::ToServer => 8,
        Direction::ToClient => 4,
    };
    size >= min && (size as u64 + 4) <= max_frame as u64
}

fn plausible(plaus: &dyn FramePlausibility, dir: Direction, body: &[u8]) -> bool {
    match dir {
        Direction::ToServer => plaus.plausible_request(body),
        Direction::ToClient => plaus.plausible_response(body),
    }
}

/// The correlation_id of a frame body (after the size prefix), when there.
fn correlation(dir: Direction, body: &[u8]) -> Option<i64> {
    let at = match dir {
        Direction::ToServer => 4,
        Direction::ToClient => 0,
    };
    body.get(at..at + 4).map(|b| i64::from(be32(b)))
}

/// Judges the candidate frame whose size prefix starts at `buf[p..]` (its size already
/// sane). `at_end`: no more bytes will come, judge on what is here.
pub fn confirm(
    buf: &[u8],
    p: usize,
    dir: Direction,
    max_frame: usize,
    plaus: &dyn FramePlausibility,
    at_end: bool,
) -> Verdict {
    let size = be32(&buf[p..]).max(0) as usize;
    let avail = buf.len() - (p + 4);
    if avail < size.min(PEEK) && !at_end {
        return Verdict::NeedMore;
    }
    let body = &buf[p + 4..p + 4 + avail.min(size)];
    if !plausible(plaus, dir, body) {
        return Verdict::Reject;
    }
    if size > VERIFY_LIMIT {
        return if dir == Direction::ToClient && plaus.known_correlation(body) {
            Verdict::Accept
        } else {
            Verdict::Reject
        };
    }
    if avail < size {
        return if at_end {
            Verdict::Reject
        } else {
            Verdict::NeedMore
        };
    }
    let rest = &buf[p + 4 + size..];
    if rest.is_empty() {
        return if at_end {
            Verdict::Accept
        } else {
            Verdict::NeedMore
        };
    }
    // The next frame: a sane size, a plausible header and the next correlation_id.
    if rest.len() < 4 {
        return if at_end {
            Verdict::Reject
        } else {
            Verdict::NeedMore
        };
    }
    let next = be32(rest);
    if !sane_size(next, dir, max_frame) {
        return Verdict::Reject;
    }
    let next = next as usize;
    let have = rest.len() - 4;
    if have < next.min(PEEK) && !at_end {
        return Verdict::NeedMore;
    }
    let nbody = &rest[4..4 + have.min(next)];
    if !plausible(plaus, dir, nbody) {
        return Verdict::Reject;
    }
    match (correlation(dir, body), correlation(dir, nbody)) {
        (Some(a), Some(b)) if (1..=MAX_CORR_STEP).contains(&(b - a)) => Verdict::Accept,
        _ => Verdict::Reject,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::DefaultPlausibility;

    fn resp(corr: i32, body: &[u8]) -> Vec<u8> {
        let mut v = ((4 + body.len()) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(&corr.to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn resync_evidence_next_frame_and_correlation() {
        let p = DefaultPlausibility;
        let d = Direction::ToClient;
        let mut two = resp(7, &[0; 10]);
        two.extend(resp(8, &[0; 3]));
        assert_eq!(confirm(&two, 0, d, 1 << 20, &p, false), Verdict::Accept);
        // the next frame's correlation_id does not follow
        let mut bad = resp(7, &[0; 10]);
        bad.extend(resp(9000, &[0; 3]));
        assert_eq!(confirm(&bad, 0, d, 1 << 20, &p, false), Verdict::Reject);
        // a lone frame: only at the end of the data
        let one = resp(7, &[0; 10]);
        assert_eq!(confirm(&one, 0, d, 1 << 20, &p, false), Verdict::NeedMore);
        assert_eq!(confirm(&one, 0, d, 1 << 20, &p, true), Verdict::Accept);
        // cut by the end of the data
        assert_eq!(confirm(&one[..8], 0, d, 1 << 20, &p, true), Verdict::Reject);
        // too large to hold, and no known correlation_id
        let mut big = (20u32 << 20).to_be_bytes().to_vec();
        big.extend_from_slice(&[0; 100]);
        assert_eq!(confirm(&big, 0, d, 100 << 20, &p, true), Verdict::Reject);
    }
}
