//! Request/response pairing per connection by correlation id.
//!
//! Request header (after the 4-byte size prefix): `api_key int16` at offset 0,
//! `api_version int16` at 2, `correlation_id int32` at 4. Response header: `correlation_id
//! int32` at 0. The decoder calls [`Pairer::request`] for each request (telling whether a
//! response is expected: Produce with `acks=0` gets none) and [`Pairer::response`] for each
//! response.
//!
//! Memory is bounded per connection ([`DEFAULT_MAX_PENDING`]) and over all connections
//! together ([`DEFAULT_MAX_PENDING_TOTAL`]): past either cap, the oldest request waiting
//! (of the connection, or of all) is given up, reported unanswered by a notice then.
//!
//! A capture's connection holds one request per correlation_id at a time: a request
//! reusing a waiting correlation_id replaces the older one. Frames without connections
//! (`kwire decode` of a dump of several connections written as one stream) reuse
//! correlation_ids while earlier requests still wait: [`Pairer::with_depth`] keeps, per
//! (connection, correlation_id), a queue of up to that many requests, oldest first, and
//! [`Pairer::response_with`] takes the oldest of them the response fits.
//!
//! A run that must know every request left unanswered (`-Y unanswered`) also keeps the
//! record numbers of those given up, in a [`RecordSet`] ([`Pairer::keep_given_up`]).

use foldhash::{HashMap, HashMapExt};
use std::collections::VecDeque;

use super::{Notice, NoticeKind, Timestamp};

/// Default cap on pending requests per connection.
pub const DEFAULT_MAX_PENDING: usize = 10_000;

/// Default cap on pending requests over all connections: about 10 MiB of them (a pending
/// request costs 56 bytes, 16 more in the order of arrival and about 30 in the index by
/// correlation_id).
pub const DEFAULT_MAX_PENDING_TOTAL: usize = 100_000;

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

/// Remembers requests by (connection, correlation id), bounded per connection and in total.
#[derive(Debug)]
pub struct Pairer {
    max_pending: usize,
    max_total: usize,
    /// Per connection, oldest first: correlation_id, the request, its arrival number.
    conns: HashMap<u32, VecDeque<(i32, PairedRequest, u64)>>,
    /// (arrival number, connection) of the requests remembered, oldest first; some
    /// already answered (dropped lazily, [`Pairer::compact`]).
    order: VecDeque<(u64, u32)>,
    /// Requests remembered now, over all connections.
    total: usize,
    next: u64,
    /// Requests given up because all connections together held `max_total`.
    given_up: u64,
    /// The arrival number of each request remembered, by (connection, correlation_id)
    /// (depth 1).
    index: HashMap<(u32, i32), u64>,
    /// Requests remembered per (connection, correlation_id) at most (see
    /// [`Pairer::with_depth`]); 1: a newer request replaces the older.
    depth: usize,
    /// With a depth over 1: the arrival numbers of the requests remembered, by
    /// (connection, correlation_id), oldest first (`index` is then unused).
    queued: HashMap<(u32, i32), VecDeque<u64>>,
    /// Requests not remembered because their (connection, correlation_id) already held
    /// `depth` requests.
    not_queued: u64,
    /// The record numbers of the requests given up for the total cap, when asked
    /// ([`Pairer::keep_given_up`]).
    given_up_records: Option<RecordSet>,
}

/// A set of capture record numbers (frame numbers, counted from 1), held in whichever of
/// two forms is smaller: a list (8 bytes a distinct number, sorted by [`RecordSet::seal`])
/// or a bitmap up to the largest number (1 bit a record of the capture). Its memory stays
/// about the smaller of the two, however many requests share a record: at most one bit a
/// record read, where a set of pairs would cost about 20 bytes a request.
///
/// A capture record (one packet) carries the bytes of one connection, so its number names
/// the connection too.
#[derive(Clone, Debug, Default)]
pub struct RecordSet {
    /// The numbers, while the list is the smaller form (maybe unsorted, with repeats,
    /// until [`RecordSet::seal`]).
    list: Vec<u64>,
    /// The list is out of order (a number smaller than one before it was added).
    unsorted: bool,
    /// The largest number added.
    max: u64,
    /// The bitmap (bit `n % 64` of word `n / 64` for number `n`), once it is the smaller.
    bits: Option<Vec<u64>>,
}

impl RecordSet {
    /// An empty set.
    pub fn new() -> RecordSet {
        RecordSet::default()
    }

    /// Adds record number `n`.
    pub fn insert(&mut self, n: u64) {
        self.max = self.max.max(n);
        if let Some(b) = &mut self.bits {
            let w = (n / 64) as usize;
            if w >= b.len() {
                b.resize(w + 1, 0);
            }
            b[w] |= 1 << (n % 64);
            return;
        }
        match self.list.last() {
            Some(&l) if l == n => return,
            Some(&l) if l > n => self.unsorted = true,
            _ => {}
        }
        self.list.push(n);
        // The bitmap up to the largest number costs max / 64 + 1 words.
        if self.list.len() >= 64 && self.list.len() as u64 > self.max / 64 + 1 {
            let mut b = vec![0u64; (self.max / 64) as usize + 1];
            for &m in &self.list {
                b[(m / 64) as usize] |= 1 << (m % 64);
            }
            self.list = Vec::new();
            self.unsorted = false;
            self.bits = Some(b);
        }
    }

    /// Sorts the list form (after the last [`RecordSet::insert`]) so that
    /// [`RecordSet::contains`] searches it in log time, and gives back spare capacity
    /// (of the list or the bitmap).
    pub fn seal(&mut self) {
        if self.unsorted {
            self.list.sort_unstable();
            self.list.dedup();
            self.unsorted = false;
        }
        self.list.shrink_to_fit();
        if let Some(b) = &mut self.bits {
            b.shrink_to_fit();
        }
    }

    /// Whether record number `n` is in the set.
    pub fn contains(&self, n: u64) -> bool {
        match &self.bits {
            Some(b) => b
                .get((n / 64) as usize)
                .is_some_and(|w| w & (1 << (n % 64)) != 0),
            None if self.unsorted => self.list.contains(&n),
            None => self.list.binary_search(&n).is_ok(),
        }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        match &self.bits {
            Some(b) => b.iter().all(|w| *w == 0),
            None => self.list.is_empty(),
        }
    }

    /// Bytes the set holds on the heap (its list or bitmap).
    pub fn heap_bytes(&self) -> usize {
        8 * self
            .bits
            .as_ref()
            .map_or(self.list.capacity(), Vec::capacity)
    }
}

impl Default for Pairer {
    fn default() -> Self {
        Pairer::new(DEFAULT_MAX_PENDING)
    }
}

impl Pairer {
    /// New pairer keeping at most `max_pending` (at least 1) requests per connection and
    /// [`DEFAULT_MAX_PENDING_TOTAL`] over all.
    pub fn new(max_pending: usize) -> Pairer {
        Pairer::with_total(max_pending, DEFAULT_MAX_PENDING_TOTAL)
    }

    /// New pairer keeping at most `max_pending` requests per connection and `max_total`
    /// over all connections (each at least 1).
    pub fn with_total(max_pending: usize, max_total: usize) -> Pairer {
        Pairer {
            max_pending: max_pending.max(1),
            max_total: max_total.max(1),
            conns: HashMap::new(),
            order: VecDeque::new(),
            total: 0,
            next: 0,
            given_up: 0,
            index: HashMap::new(),
            given_up_records: None,
            depth: 1,
            queued: HashMap::new(),
            not_queued: 0,
        }
    }

    /// This pairer keeping up to `depth` (at least 1) requests per (connection,
    /// correlation_id), oldest first, for frames whose connections are not known (a
    /// dump of several connections as one stream reuses correlation_ids). Past `depth`,
    /// a request with that correlation_id is not remembered (counted: [`Pairer::not_queued`])
    /// until one of those waiting is answered. With a depth of 1 (the default), a newer
    /// request replaces the older.
    #[must_use]
    pub fn with_depth(mut self, depth: usize) -> Pairer {
        self.depth = depth.max(1);
        self
    }

    /// Requests not remembered so far because `depth` requests with their
    /// (connection, correlation_id) were already waiting ([`Pairer::with_depth`]).
    pub fn not_queued(&self) -> u64 {
        self.not_queued
    }

    /// Whether a request of `connection` with `correlation_id` waits for its response.
    pub fn waiting(&self, connection: u32, correlation_id: i32) -> bool {
        if self.depth > 1 {
            self.queued.contains_key(&(connection, correlation_id))
        } else {
            self.index.contains_key(&(connection, correlation_id))
        }
    }

    /// Forgets the request with arrival number `n` from the index by correlation_id
    /// (`index` at depth 1, else `queued`: it is the oldest of its (connection,
    /// correlation_id)).
    fn unindex(
        index: &mut HashMap<(u32, i32), u64>,
        queued: &mut HashMap<(u32, i32), VecDeque<u64>>,
        key: (u32, i32),
        n: u64,
    ) {
        if let Some(q) = queued.get_mut(&key) {
            if let Some(i) = q.iter().position(|x| *x == n) {
                q.remove(i);
            }
            if q.is_empty() {
                queued.remove(&key);
            }
        } else {
            index.remove(&key);
        }
    }

    /// From now on, keeps the record number (the last segment's) of each request given
    /// up for the total cap, for [`Pairer::take_given_up`]: a run that must match every
    /// unanswered request (`-Y unanswered`) needs them as well as those still waiting.
    pub fn keep_given_up(&mut self) {
        self.given_up_records.get_or_insert_with(RecordSet::new);
    }

    /// The record numbers of the requests given up since [`Pairer::keep_given_up`]
    /// (empty without it), handed over and forgotten here.
    pub fn take_given_up(&mut self) -> RecordSet {
        self.given_up_records.take().unwrap_or_default()
    }

    /// Requests given up so far because the pending requests of all connections reached
    /// the total cap.
    pub fn given_up(&self) -> u64 {
        self.given_up
    }

    /// One notice counting the requests given up for the total cap, if any (for the end
    /// of a capture).
    pub fn given_up_notice(&self) -> Option<Notice> {
        (self.given_up > 0).then(|| {
            Notice::new(
                NoticeKind::Unanswered,
                format!(
                    "{} requests given up unanswered before the end: the requests waiting for a response, over all connections, reached the cap of {}, and the oldest were given up first",
                    self.given_up, self.max_total
                ),
            )
        })
    }

    /// Forgets the emptied queue of `connection` and gives a large queue's memory back
    /// once it is three-quarters empty.
    fn tidy(&mut self, connection: u32) {
        if let Some(q) = self.conns.get_mut(&connection) {
            if q.is_empty() {
                self.conns.remove(&connection);
            } else if q.capacity() > 64 && q.len() < q.capacity() / 4 {
                q.shrink_to(q.len() * 2);
            }
        }
    }

    /// Forgets the request of `connection` with `correlation_id`, if remembered: with a
    /// depth over 1, the oldest of those waiting for which `fits` says yes, else the
    /// oldest (`fits` is asked only when more than one waits).
    fn take(
        &mut self,
        connection: u32,
        correlation_id: i32,
        fits: &mut dyn FnMut(&PairedRequest) -> bool,
    ) -> Option<PairedRequest> {
        let key = (connection, correlation_id);
        let n = if self.depth == 1 {
            self.index.remove(&key)?
        } else {
            let waiting = self.queued.get_mut(&key)?;
            let i = match (waiting.len() > 1, self.conns.get(&connection)) {
                (true, Some(q)) => waiting
                    .iter()
                    .position(|n| {
                        q.binary_search_by_key(n, |e| e.2)
                            .is_ok_and(|i| fits(&q[i].1))
                    })
                    .unwrap_or(0),
                _ => 0,
            };
            let n = waiting.remove(i)?;
            if waiting.is_empty() {
                self.queued.remove(&key);
            }
            n
        };
        let q = self.conns.get_mut(&connection)?;
        let i = q.binary_search_by_key(&n, |e| e.2).ok()?;
        let r = q.remove(i).map(|(_, r, _)| r);
        self.total -= 1;
        self.tidy(connection);
        r
    }

    /// Drops the order's entries of requests no longer remembered, once they are most
    /// of it.
    fn compact(&mut self) {
        if self.order.len() <= 2 * self.total + 1024 {
            return;
        }
        let conns = &self.conns;
        self.order.retain(|(n, c)| {
            conns
                .get(c)
                .is_some_and(|q| q.binary_search_by_key(n, |e| e.2).is_ok())
        });
        self.order.shrink_to(2 * self.order.len() + 1024);
    }

    /// Gives up the oldest request of all connections: its notice.
    fn give_up_oldest(&mut self) -> Option<Notice> {
        while let Some((n, c)) = self.order.pop_front() {
            let Some(q) = self.conns.get_mut(&c) else {
                continue;
            };
            // The oldest request remembered is the oldest of its connection too.
            if q.front().is_none_or(|e| e.2 != n) {
                continue;
            }
            let (corr, r, n) = q.pop_front()?;
            Pairer::unindex(&mut self.index, &mut self.queued, (c, corr), n);
            self.total -= 1;
            self.given_up += 1;
            if let Some(set) = &mut self.given_up_records {
                set.insert(r.frame);
            }
            self.tidy(c);
            let mut nt = Notice::new(
                NoticeKind::Unanswered,
                format!(
                    "{} requests wait for a response over all connections (the cap): gave up the oldest, request correlation_id {corr} (api_key {} v{}, frame {}), as unanswered",
                    self.max_total, r.api_key, r.api_version, r.frame
                ),
            );
            nt.frame = Some(r.frame);
            nt.connection = Some(c);
            return Some(nt);
        }
        None
    }

    /// Remember a request. Requests with `expects_response == false` are not stored. When the
    /// connection already holds `max_pending` requests, the oldest is dropped and a notice
    /// returned. A request reusing a pending correlation id replaces the older one (with a
    /// depth over 1, [`Pairer::with_depth`], it queues behind it, up to the depth).
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
        let key = (connection, correlation_id);
        if self.depth == 1 {
            self.take(connection, correlation_id, &mut |_| false);
        } else if self.queued.get(&key).is_some_and(|q| q.len() >= self.depth) {
            self.not_queued += 1;
            return None;
        }
        let q = self.conns.entry(connection).or_default();
        let mut notice = None;
        if q.len() >= self.max_pending {
            if let Some((c, r, n)) = q.pop_front() {
                Pairer::unindex(&mut self.index, &mut self.queued, (connection, c), n);
                self.total -= 1;
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
            self.next,
        ));
        self.order.push_back((self.next, connection));
        if self.depth == 1 {
            self.index.insert(key, self.next);
        } else {
            self.queued.entry(key).or_default().push_back(self.next);
        }
        self.next += 1;
        self.total += 1;
        if self.total > self.max_total {
            notice = self.give_up_oldest().or(notice);
        }
        self.compact();
        notice
    }

    /// Find (and forget) the request answered by a response with `correlation_id` (with
    /// a depth over 1, the oldest of those waiting).
    pub fn response(&mut self, connection: u32, correlation_id: i32) -> Option<PairedRequest> {
        self.take(connection, correlation_id, &mut |_| false)
    }

    /// [`Pairer::response`], choosing among several requests waiting with the
    /// correlation_id (a depth over 1, [`Pairer::with_depth`]): the oldest for which
    /// `fits` (the response decodes cleanly as that request's response) says yes, else
    /// the oldest. `fits` is not asked when one request waits, nor at depth 1.
    pub fn response_with(
        &mut self,
        connection: u32,
        correlation_id: i32,
        mut fits: impl FnMut(&PairedRequest) -> bool,
    ) -> Option<PairedRequest> {
        self.take(connection, correlation_id, &mut fits)
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
                for (c, r, _) in q {
                    v.push(PendingRequest {
                        connection: id,
                        correlation_id: c,
                        request: r,
                    });
                }
            }
        }
        self.order.clear();
        self.index.clear();
        self.queued.clear();
        self.total = 0;
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

    #[test]
    fn input_pair_total_cap_gives_up_the_oldest_of_all_connections() {
        let t = Timestamp::default();
        let mut p = Pairer::with_total(10, 3);
        assert!(p.request(1, 1, 18, 3, true, 1, t).is_none());
        assert!(p.request(2, 1, 18, 3, true, 2, t).is_none());
        assert!(p.request(1, 2, 18, 3, true, 3, t).is_none());
        // Answered requests leave the count: no cap reached.
        assert!(p.response(2, 1).is_some());
        assert!(p.request(3, 1, 18, 3, true, 4, t).is_none());
        // The fourth waiting: the oldest of all (connection 1, frame 1) is given up.
        let n = p.request(3, 2, 18, 3, true, 5, t).expect("a notice");
        assert_eq!(
            (n.kind, n.frame, n.connection),
            (NoticeKind::Unanswered, Some(1), Some(1))
        );
        assert_eq!(p.given_up(), 1);
        assert!(p.response(1, 1).is_none(), "given up");
        // Then connection 1's other request (frame 3), the next oldest.
        let n = p.request(4, 1, 18, 3, true, 6, t).expect("a notice");
        assert_eq!(n.frame, Some(3));
        let left: Vec<(u32, i32)> = p
            .unanswered()
            .iter()
            .map(|x| (x.connection, x.correlation_id))
            .collect();
        assert_eq!(left, vec![(3, 1), (3, 2), (4, 1)]);
        assert!(p
            .given_up_notice()
            .unwrap()
            .message
            .starts_with("2 requests given up"));
    }

    #[test]
    fn input_pair_given_up_records_are_kept_when_asked() {
        let t = Timestamp::default();
        let mut p = Pairer::with_total(10, 2);
        for (corr, frame) in [(1, 5), (2, 5), (3, 7), (4, 9)] {
            p.request(1, corr, 18, 3, true, frame, t);
        }
        assert!(p.take_given_up().is_empty(), "not kept unless asked");
        p.keep_given_up();
        p.request(1, 5, 18, 3, true, 11, t);
        p.request(1, 6, 18, 3, true, 12, t);
        let set = p.take_given_up();
        assert_eq!(p.given_up(), 4);
        assert!(set.contains(7) && set.contains(9));
        assert!(!set.contains(5) && !set.contains(11));
    }

    #[test]
    fn input_pair_record_set_keeps_the_smaller_form() {
        // Sparse: a list, in any order.
        let mut s = RecordSet::new();
        for n in [1_000_000u64, 5, 70, 5, 3] {
            s.insert(n);
        }
        assert!(s.contains(70) && s.contains(3) && !s.contains(4));
        s.seal();
        assert!(s.bits.is_none());
        assert!(s.contains(1_000_000) && s.contains(5) && !s.contains(6));
        // Dense: every third record of 300,000 takes a bitmap of 37.5 KB, not 800 KB.
        let mut d = RecordSet::new();
        for n in (1..=300_000u64).step_by(3) {
            d.insert(n);
        }
        d.seal();
        assert!(d.bits.is_some());
        assert!(d.heap_bytes() <= 300_000 / 8 + 64, "{}", d.heap_bytes());
        assert!((1..=300_000u64).all(|n| d.contains(n) == (n % 3 == 1)));
        assert!(!d.contains(300_001) && !d.contains(u64::MAX));
    }

    #[test]
    fn input_pair_many_connections_stay_under_the_total() {
        let t = Timestamp::default();
        let mut p = Pairer::with_total(1000, 5000);
        for conn in 0..100u32 {
            for corr in 0..1000 {
                p.request(conn, corr, 18, 3, true, 1, t);
            }
        }
        assert_eq!(p.total, 5000);
        assert_eq!(p.given_up(), 100 * 1000 - 5000);
        assert!(p.order.len() <= 2 * 5000 + 1024);
        // The newest are kept: the last five connections whole.
        assert_eq!(p.conns.len(), 5);
        assert_eq!(p.unanswered().len(), 5000);
    }

    #[test]
    fn input_pair_queue_keeps_up_to_depth_per_correlation_id() {
        let t = Timestamp::default();
        let mut p = Pairer::with_total(100_000, 100_000).with_depth(64);
        // 70 requests with correlation_id 1 on one stream: 64 queue, 6 are not kept.
        for i in 0..70u64 {
            assert!(p
                .request(0, 1, 3, (i % 13) as i16, true, i + 1, t)
                .is_none());
        }
        assert_eq!(p.not_queued(), 6);
        assert!(p.waiting(0, 1));
        // Answered oldest first: frames 1..=64, then nothing.
        for i in 0..64u64 {
            assert_eq!(p.response(0, 1).map(|r| r.frame), Some(i + 1));
        }
        assert!(p.response(0, 1).is_none());
        assert!(!p.waiting(0, 1));
        // Room again: the next request with it is kept.
        p.request(0, 1, 3, 1, true, 100, t);
        assert_eq!(p.not_queued(), 6);
        assert_eq!(p.response(0, 1).map(|r| r.frame), Some(100));
        assert_eq!(p.total, 0);
        assert!(p.conns.is_empty() && p.queued.is_empty());
    }

    #[test]
    fn input_pair_queue_takes_the_oldest_that_fits() {
        let t = Timestamp::default();
        let mut p = Pairer::default().with_depth(64);
        p.request(0, 7, 3, 12, true, 1, t); // Metadata
        p.request(0, 7, 18, 3, true, 2, t); // ApiVersions
        p.request(0, 7, 3, 12, true, 3, t); // Metadata
        let r = p.response_with(0, 7, |r| r.api_key == 18).unwrap();
        assert_eq!(r.frame, 2);
        // None fits: the oldest.
        let r = p.response_with(0, 7, |_| false).unwrap();
        assert_eq!(r.frame, 1);
        // One waiting: taken without asking.
        let r = p.response_with(0, 7, |_| panic!("not asked")).unwrap();
        assert_eq!(r.frame, 3);
        // The caps give up the oldest of a queue, which stays in order.
        let mut p = Pairer::with_total(3, 100).with_depth(64);
        for f in 1..=4 {
            p.request(0, 5, 18, 3, true, f, t);
        }
        assert_eq!(p.response(0, 5).map(|r| r.frame), Some(2));
        assert_eq!(p.unanswered().len(), 2);
        assert!(p.queued.is_empty());
        let mut p = Pairer::with_total(100, 2).with_depth(64);
        for f in 1..=3 {
            p.request(0, 5, 18, 3, true, f, t);
        }
        assert_eq!(p.given_up(), 1);
        assert_eq!(p.response(0, 5).map(|r| r.frame), Some(2));
        assert_eq!(p.response(0, 5).map(|r| r.frame), Some(3));
        assert!(p.response(0, 5).is_none());
    }
}
