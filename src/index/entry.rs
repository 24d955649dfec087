//! The index's record of one message, packed in [`ENTRY_BYTES`] bytes, and the store that
//! keeps the entries: in memory up to a limit, in a temporary file beyond it.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Bytes one message takes in the index: the budget is 64.
pub const ENTRY_BYTES: usize = 64;

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

const _: () = assert!(std::mem::size_of::<Entry>() == ENTRY_BYTES);

impl Entry {
    fn to_bytes(self) -> [u8; ENTRY_BYTES] {
        let mut b = [0u8; ENTRY_BYTES];
        b[0..8].copy_from_slice(&self.first_frame.to_le_bytes());
        b[8..16].copy_from_slice(&self.secs.to_le_bytes());
        b[16..24].copy_from_slice(&self.place.to_le_bytes());
        let words = [
            self.last_delta,
            self.low_delta,
            self.high_delta,
            self.seq,
            self.len_flags,
            self.nanos,
            self.connection,
            self.correlation_id as u32,
            self.pair as u32,
        ];
        for (k, w) in words.iter().enumerate() {
            b[24 + 4 * k..28 + 4 * k].copy_from_slice(&w.to_le_bytes());
        }
        b[60..62].copy_from_slice(&self.api_key.to_le_bytes());
        b[62..64].copy_from_slice(&self.api_version.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8; ENTRY_BYTES]) -> Entry {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        Entry {
            first_frame: u64_at(0),
            secs: u64_at(8) as i64,
            place: u64_at(16),
            last_delta: u32_at(24),
            low_delta: u32_at(28),
            high_delta: u32_at(32),
            seq: u32_at(36),
            len_flags: u32_at(40),
            nanos: u32_at(44),
            connection: u32_at(48),
            correlation_id: u32_at(52) as i32,
            pair: u32_at(56) as i32,
            api_key: i16::from_le_bytes([b[60], b[61]]),
            api_version: i16::from_le_bytes([b[62], b[63]]),
        }
    }
}

/// The entries: the first `limit` in memory, the rest in a temporary file (deleted when
/// the index is dropped), read back 64 bytes at a time.
pub(crate) struct Entries {
    mem: Vec<Entry>,
    limit: usize,
    disk: Option<File>,
    on_disk: u64,
}

impl Entries {
    /// A store keeping at most `limit` entries in memory.
    pub fn new(limit: usize) -> Entries {
        Entries {
            mem: Vec::new(),
            limit,
            disk: None,
            on_disk: 0,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.mem.len() as u64 + self.on_disk
    }

    /// Entries kept in memory.
    #[cfg(test)]
    pub fn in_memory(&self) -> usize {
        self.mem.len()
    }

    /// Entries in the temporary file.
    pub fn on_disk(&self) -> u64 {
        self.on_disk
    }

    /// Bytes of memory the entries hold (capacity included).
    pub fn memory(&self) -> usize {
        self.mem.capacity() * ENTRY_BYTES
    }

    /// Adds an entry at the end.
    pub fn push(&mut self, e: Entry) -> io::Result<()> {
        if self.mem.len() < self.limit && self.on_disk == 0 {
            if self.mem.len() == self.mem.capacity() {
                // Grow by half, within the limit: no doubling past what is allowed.
                let want = (self.mem.len() / 2)
                    .max(1024)
                    .min(self.limit - self.mem.len());
                self.mem.reserve_exact(want);
            }
            self.mem.push(e);
            return Ok(());
        }
        if self.disk.is_none() {
            self.disk = Some(tempfile::tempfile()?);
        }
        if let Some(f) = &self.disk {
            f.write_all_at(&e.to_bytes(), self.on_disk * ENTRY_BYTES as u64)?;
        }
        self.on_disk += 1;
        Ok(())
    }

    /// Entry `i`, when there is one.
    pub fn get(&self, i: u64) -> io::Result<Option<Entry>> {
        if let Some(e) = usize::try_from(i).ok().and_then(|i| self.mem.get(i)) {
            return Ok(Some(*e));
        }
        let k = i - self.mem.len() as u64;
        match &self.disk {
            Some(f) if k < self.on_disk => {
                let mut b = [0u8; ENTRY_BYTES];
                f.read_exact_at(&mut b, k * ENTRY_BYTES as u64)?;
                Ok(Some(Entry::from_bytes(&b)))
            }
            _ => Ok(None),
        }
    }

    /// Replaces entry `i` (which exists).
    pub fn set(&mut self, i: u64, e: Entry) -> io::Result<()> {
        if let Some(slot) = usize::try_from(i).ok().and_then(|i| self.mem.get_mut(i)) {
            *slot = e;
            return Ok(());
        }
        let k = i - self.mem.len() as u64;
        if let Some(f) = &self.disk {
            if k < self.on_disk {
                f.write_all_at(&e.to_bytes(), k * ENTRY_BYTES as u64)?;
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
            secs: -(n as i64),
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

    #[test]
    fn bytes_round_trip() {
        for n in [0, 1, 77, u32::MAX as u64] {
            let e = sample(n);
            assert_eq!(Entry::from_bytes(&e.to_bytes()), e);
        }
    }

    /// Past the memory limit the entries go to the temporary file and come back equal,
    /// and a spilled entry can be rewritten.
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
        let mut e = sample(20);
        e.pair = 99;
        s.set(20, e).unwrap();
        assert_eq!(s.get(20).unwrap().unwrap().pair, 99);
        assert!(s.memory() <= 10 * ENTRY_BYTES);
    }
}
