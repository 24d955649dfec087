//! The index's record of one message, packed in [`ENTRY_BYTES`] bytes, and the store that
//! keeps the entries: in memory up to a limit, in a temporary file beyond it.
//!
//! [`Entry`] is the wide view the index works with; the store keeps each as a [`Packed`]
//! of 56 bytes: the capture time as nanoseconds from the Unix epoch (a time outside
//! 1678..2262 or with nanoseconds past 10^9 goes to a side table), and the three record
//! deltas in 16 bits each (a frame spread over 65,535 records or more, or with a segment
//! that far out of order, has its deltas in a side table). The side tables hold only the
//! outliers, in index order, found by binary search; they stay in memory (24 and 20 bytes
//! an outlier, counted by [`Entries::memory`]).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Bytes one message's entry takes in the index (the budget is 64 a message, record
/// offsets, connections and topic names included).
pub const ENTRY_BYTES: usize = 56;

/// Flag bits in [`Entry::len_flags`] above the length.
pub(crate) const TO_CLIENT: u32 = 1 << 31;
pub(crate) const SASL: u32 = 1 << 30;
pub(crate) const INCOMPLETE: u32 = 1 << 29;
/// The frame's bytes (and TLS records) are in the index's spill file, at `place`.
pub(crate) const SPILLED: u32 = 1 << 28;
/// The largest frame length the entry holds (256 MiB - 1): the index caps `max_frame` at it.
pub(crate) const LEN_MASK: u32 = (1 << 28) - 1;

/// One message of the index. Record numbers are 1-based; the deltas are from
/// `first_frame`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Record carrying the frame's first byte.
    pub first_frame: u64,
    /// Capture time of the last segment: whole seconds.
    pub secs: i64,
    /// The stream offset of the size prefix; for a spilled frame, its place in the spill
    /// file.
    pub place: u64,
    /// `last_frame - first_frame`.
    pub last_delta: u32,
    /// `first_frame - low_record`.
    pub low_delta: u32,
    /// `high_record - first_frame`.
    pub high_delta: u32,
    /// TCP sequence number of the frame's first byte (plain frames).
    pub seq: u32,
    /// Frame length in bytes (as captured) and the flags.
    pub len_flags: u32,
    /// Nanoseconds of the capture time.
    pub nanos: u32,
    /// Connection id.
    pub connection: u32,
    /// Correlation id (`i32::MIN` with `api_key == i16::MIN`: unknown).
    pub correlation_id: i32,
    /// Signed distance to the paired message (0: none).
    pub pair: i32,
    /// api_key (`i16::MIN`: unknown).
    pub api_key: i16,
    /// api_version (`i16::MIN`: unknown).
    pub api_version: i16,
}

/// A time that is not `secs * 10^9 + nanos` nanoseconds in an `i64`: in the side table.
const TIME_OUTLIER: i64 = i64::MIN;
/// Deltas that do not fit 16 bits each: in the side table.
const DELTA_OUTLIER: u16 = u16::MAX;
const NANOS: i64 = 1_000_000_000;

/// An [`Entry`] as the store keeps it: see the module docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Packed {
    first_frame: u64,
    place: u64,
    /// Capture time in nanoseconds from the Unix epoch, or [`TIME_OUTLIER`].
    time: i64,
    seq: u32,
    len_flags: u32,
    connection: u32,
    correlation_id: i32,
    pair: i32,
    api_key: i16,
    api_version: i16,
    /// `last_delta`, `low_delta`, `high_delta`, or all three [`DELTA_OUTLIER`].
    deltas: [u16; 3],
}

const _: () = assert!(std::mem::size_of::<Packed>() == ENTRY_BYTES);

impl Packed {
    fn to_bytes(self) -> [u8; ENTRY_BYTES] {
        let mut b = [0u8; ENTRY_BYTES];
        b[0..8].copy_from_slice(&self.first_frame.to_le_bytes());
        b[8..16].copy_from_slice(&self.place.to_le_bytes());
        b[16..24].copy_from_slice(&self.time.to_le_bytes());
        let words = [
            self.seq,
            self.len_flags,
            self.connection,
            self.correlation_id as u32,
            self.pair as u32,
        ];
        for (k, w) in words.iter().enumerate() {
            b[24 + 4 * k..28 + 4 * k].copy_from_slice(&w.to_le_bytes());
        }
        let halves = [
            self.api_key as u16,
            self.api_version as u16,
            self.deltas[0],
            self.deltas[1],
            self.deltas[2],
        ];
        for (k, h) in halves.iter().enumerate() {
            b[44 + 2 * k..46 + 2 * k].copy_from_slice(&h.to_le_bytes());
        }
        b
    }

    fn from_bytes(b: &[u8; ENTRY_BYTES]) -> Packed {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Packed {
            first_frame: u64_at(0),
            place: u64_at(8),
            time: u64_at(16) as i64,
            seq: u32_at(24),
            len_flags: u32_at(28),
            connection: u32_at(32),
            correlation_id: u32_at(36) as i32,
            pair: u32_at(40) as i32,
            api_key: u16_at(44) as i16,
            api_version: u16_at(46) as i16,
            deltas: [u16_at(48), u16_at(50), u16_at(52)],
        }
    }
}

/// The outliers of the packing, by entry index (pushed in index order, so sorted).
#[derive(Default)]
struct Outliers {
    /// `(index, secs, nanos)`.
    times: Vec<(u64, i64, u32)>,
    /// `(index, [last_delta, low_delta, high_delta])`.
    deltas: Vec<(u64, [u32; 3])>,
}

impl Outliers {
    fn memory(&self) -> usize {
        self.times.capacity() * std::mem::size_of::<(u64, i64, u32)>()
            + self.deltas.capacity() * std::mem::size_of::<(u64, [u32; 3])>()
    }

    /// Packs `e`, entry `index` (the next one), keeping what does not fit.
    fn pack(&mut self, index: u64, e: &Entry) -> Packed {
        let time = match e
            .secs
            .checked_mul(NANOS)
            .and_then(|t| t.checked_add(i64::from(e.nanos)))
        {
            Some(t) if i64::from(e.nanos) < NANOS && t != TIME_OUTLIER => t,
            _ => {
                self.times.push((index, e.secs, e.nanos));
                TIME_OUTLIER
            }
        };
        let wide = [e.last_delta, e.low_delta, e.high_delta];
        let deltas = match wide.map(u16::try_from) {
            [Ok(a), Ok(b), Ok(c)] if ![a, b, c].contains(&DELTA_OUTLIER) => [a, b, c],
            _ => {
                self.deltas.push((index, wide));
                [DELTA_OUTLIER; 3]
            }
        };
        Packed {
            first_frame: e.first_frame,
            place: e.place,
            time,
            seq: e.seq,
            len_flags: e.len_flags,
            connection: e.connection,
            correlation_id: e.correlation_id,
            pair: e.pair,
            api_key: e.api_key,
            api_version: e.api_version,
            deltas,
        }
    }

    fn unpack(&self, index: u64, p: &Packed) -> Entry {
        let (secs, nanos) = if p.time == TIME_OUTLIER {
            match self.times.binary_search_by_key(&index, |t| t.0) {
                Ok(k) => (self.times[k].1, self.times[k].2),
                Err(_) => (0, 0),
            }
        } else {
            (p.time.div_euclid(NANOS), p.time.rem_euclid(NANOS) as u32)
        };
        let [last_delta, low_delta, high_delta] = if p.deltas == [DELTA_OUTLIER; 3] {
            match self.deltas.binary_search_by_key(&index, |t| t.0) {
                Ok(k) => self.deltas[k].1,
                Err(_) => [0; 3],
            }
        } else {
            p.deltas.map(u32::from)
        };
        Entry {
            first_frame: p.first_frame,
            secs,
            place: p.place,
            last_delta,
            low_delta,
            high_delta,
            seq: p.seq,
            len_flags: p.len_flags,
            nanos,
            connection: p.connection,
            correlation_id: p.correlation_id,
            pair: p.pair,
            api_key: p.api_key,
            api_version: p.api_version,
        }
    }
}

/// Entries a chunk of the in-memory store holds (224 KiB): the store grows a chunk at a
/// time, never copying what it holds (no doubling, no moment with two copies).
const CHUNK: usize = 1 << 12;

/// Spilled entries gathered before they are written to the temporary file in one call
/// (56 KiB): one write a thousand entries, not one a message.
const TAIL: usize = 1 << 10;

/// The entries: the first `limit` in memory, in chunks of [`CHUNK`], the rest in a
/// temporary file (deleted when the index is dropped), written [`TAIL`] at a time and
/// read back [`ENTRY_BYTES`] at a time; the outliers of the packing in memory.
pub(crate) struct Entries {
    chunks: Vec<Vec<Packed>>,
    in_mem: usize,
    limit: usize,
    disk: Option<File>,
    /// Entries past the in-memory ones: in the file, then in `tail`.
    on_disk: u64,
    /// Of those, how many the file holds; the rest are `tail`'s, packed.
    written: u64,
    tail: Vec<u8>,
    outliers: Outliers,
}

impl Entries {
    /// A store keeping at most `limit` entries in memory.
    pub fn new(limit: usize) -> Entries {
        Entries {
            chunks: Vec::new(),
            in_mem: 0,
            limit,
            disk: None,
            on_disk: 0,
            written: 0,
            tail: Vec::new(),
            outliers: Outliers::default(),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.in_mem as u64 + self.on_disk
    }

    /// Entries kept in memory.
    #[cfg(test)]
    pub fn in_memory(&self) -> usize {
        self.in_mem
    }

    /// Entries in the temporary file.
    pub fn on_disk(&self) -> u64 {
        self.on_disk
    }

    /// Bytes of memory the entries hold (capacity included), outliers included.
    pub fn memory(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity()).sum::<usize>() * ENTRY_BYTES
            + self.chunks.capacity() * std::mem::size_of::<Vec<Packed>>()
            + self.tail.capacity()
            + self.outliers.memory()
    }

    /// Gives back what the growth of the outlier tables left unused (after the pass).
    pub fn shrink(&mut self) {
        self.outliers.times.shrink_to_fit();
        self.outliers.deltas.shrink_to_fit();
    }

    /// Adds an entry at the end.
    pub fn push(&mut self, e: Entry) -> io::Result<()> {
        let p = self.outliers.pack(self.len(), &e);
        if self.in_mem < self.limit && self.on_disk == 0 {
            if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
                // The last chunk may be smaller: no more than the limit allows.
                self.chunks
                    .push(Vec::with_capacity(CHUNK.min(self.limit - self.in_mem)));
            }
            if let Some(c) = self.chunks.last_mut() {
                c.push(p);
            }
            self.in_mem += 1;
            return Ok(());
        }
        if self.disk.is_none() {
            self.disk = Some(tempfile::tempfile()?);
            self.tail.reserve_exact(TAIL * ENTRY_BYTES);
        }
        self.tail.extend_from_slice(&p.to_bytes());
        self.on_disk += 1;
        if self.tail.len() == TAIL * ENTRY_BYTES {
            if let Some(f) = &self.disk {
                f.write_all_at(&self.tail, self.written * ENTRY_BYTES as u64)?;
            }
            self.written = self.on_disk;
            self.tail.clear();
        }
        Ok(())
    }

    /// Where spilled entry `k` (counted from the first spilled one) stands in `tail`, when
    /// it is not written yet.
    fn in_tail(&self, k: u64) -> Option<std::ops::Range<usize>> {
        let t = usize::try_from(k.checked_sub(self.written)?).ok()? * ENTRY_BYTES;
        (t + ENTRY_BYTES <= self.tail.len()).then_some(t..t + ENTRY_BYTES)
    }

    fn slot(&self, i: u64) -> Option<(usize, usize)> {
        let i = usize::try_from(i).ok().filter(|i| *i < self.in_mem)?;
        Some((i / CHUNK, i % CHUNK))
    }

    fn packed(&self, i: u64) -> io::Result<Option<Packed>> {
        if let Some((c, k)) = self.slot(i) {
            return Ok(self.chunks.get(c).and_then(|c| c.get(k)).copied());
        }
        let k = i.wrapping_sub(self.in_mem as u64);
        if let Some(r) = self.in_tail(k).filter(|_| i >= self.in_mem as u64) {
            let b: [u8; ENTRY_BYTES] = self.tail[r].try_into().unwrap_or([0; ENTRY_BYTES]);
            return Ok(Some(Packed::from_bytes(&b)));
        }
        match &self.disk {
            Some(f) if i >= self.in_mem as u64 && k < self.written => {
                let mut b = [0u8; ENTRY_BYTES];
                f.read_exact_at(&mut b, k * ENTRY_BYTES as u64)?;
                Ok(Some(Packed::from_bytes(&b)))
            }
            _ => Ok(None),
        }
    }

    /// Entry `i`, when there is one.
    pub fn get(&self, i: u64) -> io::Result<Option<Entry>> {
        Ok(self.packed(i)?.map(|p| self.outliers.unpack(i, &p)))
    }

    /// Sets entry `i`'s (signed) distance to its pair; nothing when there is no entry `i`.
    pub fn set_pair(&mut self, i: u64, pair: i32) -> io::Result<()> {
        if let Some((c, k)) = self.slot(i) {
            if let Some(slot) = self.chunks.get_mut(c).and_then(|c| c.get_mut(k)) {
                slot.pair = pair;
            }
            return Ok(());
        }
        if let Some(mut p) = self.packed(i)? {
            p.pair = pair;
            let k = i - self.in_mem as u64;
            if let Some(r) = self.in_tail(k) {
                self.tail[r].copy_from_slice(&p.to_bytes());
            } else if let Some(f) = &self.disk {
                f.write_all_at(&p.to_bytes(), k * ENTRY_BYTES as u64)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: u64) -> Entry {
        Entry {
            first_frame: n,
            secs: 1_700_000_000 - n as i64,
            place: n * 3,
            last_delta: 1,
            low_delta: 2,
            high_delta: 3,
            seq: u32::MAX - n as u32,
            len_flags: TO_CLIENT | (n as u32 & LEN_MASK),
            nanos: 999_999_999,
            connection: 7,
            correlation_id: -5,
            pair: -(n as i32),
            api_key: i16::MIN,
            api_version: 12,
        }
    }

    /// Entries whose times or deltas do not pack (times before 1678 or past 2262,
    /// nanoseconds past 10^9; deltas of 65,535 or more) come back equal, as do the usual
    /// ones, from memory and from the temporary file.
    #[test]
    fn outliers_round_trip() {
        let mut odd = Vec::new();
        for (k, (secs, nanos)) in [
            (i64::MIN, 0),
            (i64::MAX, 999_999_999),
            (-9_300_000_000, 5),
            (9_300_000_000, 5),
            (-1, 999_999_999),
            (0, 0),
            (1, 1_500_000_000),
            (i64::MIN / 1_000_000_000, 0),
        ]
        .into_iter()
        .enumerate()
        {
            let mut e = sample(k as u64);
            (e.secs, e.nanos) = (secs, nanos);
            odd.push(e);
        }
        for (k, d) in [0xfffe, 0xffff, 0x1_0000, u32::MAX].into_iter().enumerate() {
            let mut e = sample(100 + k as u64);
            e.high_delta = d;
            odd.push(e);
            let mut e = sample(200 + k as u64);
            (e.last_delta, e.low_delta) = (d, d);
            odd.push(e);
        }
        for limit in [usize::MAX, 5] {
            let mut s = Entries::new(limit);
            for (i, e) in odd.iter().enumerate() {
                s.push(*e).unwrap();
                s.push(sample(1000 + i as u64)).unwrap();
            }
            for (i, e) in odd.iter().enumerate() {
                assert_eq!(s.get(2 * i as u64).unwrap(), Some(*e), "{i} {limit}");
                let usual = s.get(2 * i as u64 + 1).unwrap();
                assert_eq!(usual, Some(sample(1000 + i as u64)));
            }
        }
    }

    #[test]
    fn bytes_round_trip() {
        let mut o = Outliers::default();
        for n in [0, 1, 77, u32::MAX as u64] {
            let p = o.pack(n, &sample(n));
            assert_eq!(Packed::from_bytes(&p.to_bytes()), p);
            assert_eq!(o.unpack(n, &p), sample(n));
        }
        assert!(o.times.is_empty() && o.deltas.is_empty());
    }

    /// Past the memory limit the entries go to the temporary file and come back equal,
    /// and a spilled entry's pair can be set.
    #[test]
    fn spills_past_the_limit() {
        let mut s = Entries::new(10);
        for n in 0..25 {
            s.push(sample(n)).unwrap();
        }
        assert_eq!((s.in_memory(), s.on_disk(), s.len()), (10, 15, 25));
        for n in 0..25 {
            assert_eq!(s.get(n).unwrap(), Some(sample(n)));
        }
        assert_eq!(s.get(25).unwrap(), None);
        s.set_pair(20, 99).unwrap();
        s.set_pair(3, -4).unwrap();
        assert_eq!(s.get(20).unwrap().unwrap().pair, 99);
        assert_eq!(s.get(3).unwrap().unwrap().pair, -4);
        // Ten entries, the list of chunks and the spill's tail.
        assert!(s.memory() < (12 + TAIL) * ENTRY_BYTES, "{}", s.memory());
    }

    /// Entries written to the file a tail at a time read back and take their pairs
    /// alike, on either side of a write.
    #[test]
    fn spilled_entries_across_writes() {
        let n = 10 + 3 * TAIL as u64 + 5;
        let mut s = Entries::new(10);
        for k in 0..n {
            s.push(sample(k)).unwrap();
        }
        assert_eq!((s.on_disk(), s.written), (n - 10, 3 * TAIL as u64));
        let some = [
            0,
            9,
            10,
            11,
            10 + TAIL as u64 - 1,
            10 + TAIL as u64,
            n - 6,
            n - 1,
        ];
        for k in some {
            assert_eq!(s.get(k).unwrap(), Some(sample(k)), "entry {k}");
        }
        assert_eq!(s.get(n).unwrap(), None);
        for (k, pair) in [(10 + TAIL as u64, 7), (n - 2, -7), (12, 3)] {
            s.set_pair(k, pair).unwrap();
            assert_eq!(s.get(k).unwrap().unwrap().pair, pair, "entry {k}");
            assert_eq!(s.get(k + 1).unwrap(), Some(sample(k + 1)));
        }
    }
}
