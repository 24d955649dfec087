//! Request/response pairing per connection by correlation id.
//!
//! Request header (after the 4-byte size prefix): `api_key int16` at offset 0,
//! `api_version int16` at 2, `correlation_id int32` at 4. Response header: `correlation_id
//! int32` at 0. The decoder calls [`Pairer::request`] for each request (telling whether a
//! response is expected: Produce with `acks=0` gets none) and [`Pairer::response`] for each
//! response.

use foldhash::{HashMap, HashMapExt};
use std::collections::VecDeque;

use super::{Notice, NoticeKind, Timestamp};

/// Default cap on pending requests per connection.
pub const DEFAULT_MAX_PENDING: usize = 10_000;

/// What a response learns about its request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairedRequest {
    /// Request api_key.
    pub api_key: i16,
    /// Request api_version.
    pub api_version: i16,
    /// Record number of the request (its last segment).
    pub frame: u64,
    /// Capture time of the request.
    pub time: Timestamp,
    /// The caller's number for the request ([`Pairer::request_tagged`]; 0 from
    /// [`Pairer::request`]): the message index keeps its message number there.
    pub tag: u64,
}

/// A request still waiting for its response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingRequest {
    /// Connection id.
    pub connection: u32,
    /// Correlation id.
    pub correlation_id: i32,
    /// The request.
    pub request: PairedRequest,
}

/// Remembers requests by (connection, correlation id), bounded per connection.
#[derive(Debug)]
pub struct Pairer {
    max_pending: usize,
    conns: HashMap<u32, VecDeque<(i32, PairedRequest)>>,
}

impl Default for Pairer {
    fn default() -> Self {
        Pairer::new(DEFAULT_MAX_PENDING)
    }
}

impl Pairer {
    /// New pairer keeping at most `max_pending` (at least 1) requests per connection.
    pub fn new(max_pending: usize) -> Pairer {
        Pairer {
            max_pending: max_pending.max(1),
            conns: HashMap::new(),
        }
    }

    /// Remember a request. Requests with `expects_response == false` are not stored. When the
    /// connection already holds `max_pending` requests, the oldest is dropped and a notice
    /// returned. A request reusing a pending correlation id replaces the older one.
    #[allow(clippy::too_many_arguments)]
    pub fn request(
        &mut self,
        connection: u32,
        correlation_id: i32,
        api_key: i16,
        api_version: i16,
        expects_response: bool,
        frame: u64,
        time: Timestamp,
    ) -> Option<Notice> {
        self.request_tagged(
            connection,
            correlation_id,
            api_key,
            api_version,
            expects_response,
            frame,
            time,
            0,
        )
    }

    /// [`Pairer::request`], remembering the caller's number `tag` for the request: the
    /// [`PairedRequest`] its response finds carries it.
    #[allow(clippy::too_many_arguments)]
    pub fn request_tagged(
        &mut self,
        connection: u32,
        correlation_id: i32,
        api_key: i16,
        api_version: i16,
        expects_response: bool,
        frame: u64,
        time: Timestamp,
        tag: u64,
    ) -> Option<Notice> {
        if !expects_response {
            return None;
        }
        let q = self.conns.entry(connection).or_default();
        q.retain(|(c, _)| *c != correlation_id);
        let mut notice = None;
        if q.len() >= self.max_pending {
            if let Some((c, r)) = q.pop_front() {
                let mut n = Notice::new(
                    NoticeKind::Unanswered,
                    format!(
                        "too many pending requests; forgot request correlation_id {c} (api_key {} v{}, frame {})",
                        r.api_key, r.api_version, r.frame
                    ),
                );
                n.frame = Some(r.frame);
                n.connection = Some(connection);
                notice = Some(n);
            }
        }
        q.push_back((
            correlation_id,
            PairedRequest {
                api_key,
                api_version,
                frame,
                time,
                tag,
            },
        ));
        notice
    }

    /// Find (and forget) the request answered by a response with `correlation_id`.
    pub fn response(&mut self, connection: u32, correlation_id: i32) -> Option<PairedRequest> {
        let q = self.conns.get_mut(&connection)?;
        let i = q.iter().position(|(c, _)| *c == correlation_id)?;
        q.remove(i).map(|(_, r)| r)
    }

    /// Correlation id of a request frame (size prefix included), if long enough.
    pub fn request_header(frame: &[u8]) -> Option<(i16, i16, i32)> {
        if frame.len() < 12 {
            return None;
        }
        Some((
            i16::from_be_bytes([frame[4], frame[5]]),
            i16::from_be_bytes([frame[6], frame[7]]),
            i32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]]),
        ))
    }

    /// Correlation id of a response frame (size prefix included), if long enough.
    pub fn response_correlation(frame: &[u8]) -> Option<i32> {
        if frame.len() < 8 {
            return None;
        }
        Some(i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]))
    }

    /// Drain all requests still waiting, ordered by connection then arrival.
    pub fn unanswered(&mut self) -> Vec<PendingRequest> {
        let mut ids: Vec<u32> = self.conns.keys().copied().collect();
        ids.sort_unstable();
        let mut v = Vec::new();
        for id in ids {
            if let Some(q) = self.conns.remove(&id) {
                for (c, r) in q {
                    v.push(PendingRequest {
                        connection: id,
                        correlation_id: c,
                        request: r,
                    });
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_pair_basic_and_unanswered() {
        let t = Timestamp { secs: 1, nanos: 5 };
        let mut p = Pairer::new(2);
        assert!(p.request(1, 7, 3, 12, true, 10, t).is_none());
        assert!(p.request(1, 8, 0, 9, false, 11, t).is_none()); // acks=0
        assert!(p.request(2, 7, 18, 3, true, 12, t).is_none());
        let r = p.response(1, 7).unwrap();
        assert_eq!((r.api_key, r.api_version, r.frame), (3, 12, 10));
        assert!(p.response(1, 7).is_none());
        assert!(p.response(1, 8).is_none());
        assert!(p.request(1, 1, 1, 1, true, 20, t).is_none());
        assert!(p.request(1, 2, 1, 1, true, 21, t).is_none());
        let n = p.request(1, 3, 1, 1, true, 22, t).unwrap();
        assert_eq!(n.kind, NoticeKind::Unanswered);
        assert_eq!(n.frame, Some(20));
        let left = p.unanswered();
        let ids: Vec<(u32, i32)> = left
            .iter()
            .map(|x| (x.connection, x.correlation_id))
            .collect();
        assert_eq!(ids, vec![(1, 2), (1, 3), (2, 7)]);
    }
}
