//! Output order of the input layer: every event comes out in the order of the record that
//! completes it (like tshark's reassembled PDUs), across connections, however long a
//! connection holds bytes back (while deciding what it carries, while confirming a
//! resynchronised frame start, while waiting for an out-of-order segment).
//!
//! Each event gets a key: for a frame, the highest record number among the records that
//! carried its bytes (or the gap or stream end that cut it); for a notice, the record being
//! processed when it was raised. Events wait in a heap until no connection can still produce
//! an event with a lower key: each connection reports a floor (the lowest record number of
//! the bytes it holds; see `Conn::hold_floor`), and everything below the lowest floor and
//! below the next record is released, lowest key first, ties in the order raised.
//!
//! Memory: the heap holds only what arrived while some connection was holding bytes, which
//! is bounded by the holding caps (undecided connections, resynchronisation candidates,
//! out-of-order buffers).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::Event;

struct Slot {
    key: u64,
    seq: u64,
    event: Event,
}

impl PartialEq for Slot {
    fn eq(&self, o: &Self) -> bool {
        (self.key, self.seq) == (o.key, o.seq)
    }
}
impl Eq for Slot {}
impl PartialOrd for Slot {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Slot {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.key, self.seq).cmp(&(o.key, o.seq))
    }
}

/// Events waiting for their turn (see the module documentation).
#[derive(Default)]
pub(crate) struct Reorder {
    heap: BinaryHeap<Reverse<Slot>>,
    seq: u64,
    /// Everything below this key has been released; later events are never put before it.
    released: u64,
    /// Frame bytes waiting (charged to the in-flight budget,
    /// [`super::CaptureOptions::max_in_flight`]).
    bytes: usize,
}

fn size(e: &Event) -> usize {
    match e {
        Event::Frame(f) => f.bytes.capacity(),
        Event::Notice(_) => 0,
    }
}

impl Reorder {
    /// Queue `event` completed by record `key`. A key below what was already released
    /// (which the floors rule out) is raised to it, so order never goes backwards.
    pub fn push(&mut self, key: u64, event: Event) {
        self.seq += 1;
        self.bytes += size(&event);
        self.heap.push(Reverse(Slot {
            key: key.max(self.released),
            seq: self.seq,
            event,
        }));
    }

    /// Hand every event with a key below `floor` to `out`, in order.
    pub fn release(&mut self, floor: u64, out: &mut dyn FnMut(Event)) {
        self.released = self.released.max(floor);
        while self.heap.peek().is_some_and(|s| s.0.key < floor) {
            if let Some(Reverse(s)) = self.heap.pop() {
                self.bytes -= size(&s.event);
                out(s.event);
            }
        }
    }

    /// Frame bytes waiting for their turn.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Hand everything to `out`, in order.
    pub fn drain(&mut self, out: &mut dyn FnMut(Event)) {
        self.release(u64::MAX, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Notice, NoticeKind};

    fn ev(s: &str) -> Event {
        Event::Notice(Notice::new(NoticeKind::Info, s))
    }
    fn text(e: &Event) -> String {
        match e {
            Event::Notice(n) => n.message.clone(),
            Event::Frame(_) => String::new(),
        }
    }

    #[test]
    fn order_by_key_then_arrival_and_release_below_floor() {
        let mut r = Reorder::default();
        r.push(5, ev("b5"));
        r.push(3, ev("a3"));
        r.push(5, ev("c5"));
        let mut got = Vec::new();
        r.release(5, &mut |e| got.push(text(&e)));
        assert_eq!(got, ["a3"]);
        // a late key below what was released goes out next, not before it
        r.push(2, ev("d2"));
        r.drain(&mut |e| got.push(text(&e)));
        assert_eq!(got, ["a3", "b5", "c5", "d2"]);
    }
}
