//! One budget for the bytes that decoding holds on `kwire read`'s worker threads: the
//! decompressed buffers of record batches and the nodes of large trees.
//!
//! Each arena ([`crate::tree::Buffers`]) charges this budget before it grows by a large
//! step: a decompressed buffer before its bytes are allocated (in steps of at most
//! [`STEP`] where the size is not known up front), and its node memory for every
//! [`STEP`] it grows past. The charges are given back when the arena is reset for the
//! next message or dropped. Small messages never charge anything.
//!
//! A worker thread whose job is not the next to be printed waits before taking more
//! once all charges together pass [`LIMIT`]; the job next to print never waits (so the
//! output always moves on and waiting cannot deadlock: every job becomes the next to
//! print in turn), and neither does a thread outside the pipeline (the reading thread,
//! `--threads 1`, `kwire decode`), whose charges still count. So what the workers hold
//! is at most [`LIMIT`] plus the one message being printed, whatever the thread count.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// Bytes all charges together may reach before a worker whose job is not the next to
/// print waits.
pub const LIMIT: usize = 32 << 20;

/// The step in which arenas charge their node memory and streaming decompressors their
/// output.
pub const STEP: usize = 1 << 20;

struct Gate {
    used: Mutex<usize>,
    moved: Condvar,
}

static GATE: Gate = Gate {
    used: Mutex::new(0),
    moved: Condvar::new(),
};

thread_local! {
    /// On a worker thread running a job: the pipeline's counter of the job now being
    /// printed, and this job's number.
    static TURN: RefCell<Option<(Arc<AtomicUsize>, usize)>> = const { RefCell::new(None) };
}

/// Marks the current thread, until dropped, as running job `seq` of a pipeline whose
/// job being printed is `head` (see [`crate::pipeline`]).
pub(crate) struct Turn;

impl Turn {
    pub(crate) fn enter(head: Arc<AtomicUsize>, seq: usize) -> Turn {
        TURN.with(|t| *t.borrow_mut() = Some((head, seq)));
        Turn
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        TURN.with(|t| *t.borrow_mut() = None);
    }
}

/// Whether this thread runs a job that is not the next to print (and so may wait).
fn may_wait() -> bool {
    TURN.with(|t| {
        t.borrow()
            .as_ref()
            .is_some_and(|(head, seq)| head.load(Ordering::Acquire) != *seq)
    })
}

/// Takes `n` bytes from the budget, first waiting (on a worker whose job is not the
/// next to print) while the charges already taken plus `n` pass [`LIMIT`].
pub fn take(n: usize) {
    if n == 0 {
        return;
    }
    let mut used = GATE.used.lock().unwrap_or_else(PoisonError::into_inner);
    while *used > 0 && used.saturating_add(n) > LIMIT && may_wait() {
        // The timeout is a safety net only: every release and every move of a pipeline's
        // head wakes the waiters.
        used = GATE
            .moved
            .wait_timeout(used, Duration::from_millis(100))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    *used = used.saturating_add(n);
}

/// Gives back `n` bytes taken with [`take`].
pub fn give(n: usize) {
    if n == 0 {
        return;
    }
    let mut used = GATE.used.lock().unwrap_or_else(PoisonError::into_inner);
    *used = used.saturating_sub(n);
    drop(used);
    GATE.moved.notify_all();
}

/// Wakes the waiting workers after a pipeline's job being printed changed (one of them
/// may now be the next to print).
pub(crate) fn head_moved() {
    // Taking the lock orders this after a waiter's check of the head.
    drop(GATE.used.lock().unwrap_or_else(PoisonError::into_inner));
    GATE.moved.notify_all();
}

/// Allocations of at least this many bytes get a mapping of their own from glibc's
/// malloc (see [`return_large_buffers`]).
pub const MMAP_THRESHOLD: usize = 1 << 20;

/// Makes glibc's malloc give every allocation of [`MMAP_THRESHOLD`] bytes or more (a
/// decompressed buffer, a large frame, an arena's big chunk) a mapping of its own,
/// unmapped as soon as it is freed. By default glibc raises that threshold each time
/// such a buffer is freed, up to 32 MiB, after which multi-MiB buffers come from the
/// heaps of its per-thread arenas (up to 8 per core), which keep what is freed: peak RSS
/// then grows with `--threads` past what [`LIMIT`] counts (32 dense zstd batches at
/// `--threads 32` peaked at 321 MiB, 177 MiB with this; docs/benchmarks.md, *Hostile
/// inputs*). Called by `cli::main` before any thread starts; does nothing on other
/// allocators.
pub fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator; it is called before any
    // other thread exists, and the value is a valid threshold (under 32 MiB).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
    }
}

/// Gives the free memory inside glibc malloc's heaps back to the system
/// (`malloc_trim(0)`: the free pages between live allocations too, not only the heap's
/// top). What a phase that fills and empties many small buffers (a Parquet row group's
/// values) leaves free in the middle of a heap otherwise stays in the process's RSS, and
/// the next phase's allocations land elsewhere: RSS grows with the capture though the
/// heap does not. Does nothing on other allocators.
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's own heaps; it takes
    // the arenas' locks itself.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Bytes charged now, by every thread (for tests and benchmarks).
pub fn used() -> usize {
    *GATE.used.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that is not next waits past the limit until the job being printed moves
    /// to it; the one next to print never waits.
    #[test]
    fn only_the_next_job_goes_past_the_limit() {
        let head = Arc::new(AtomicUsize::new(0));
        // Job 0 (being printed) takes the whole budget and more.
        {
            let _turn = Turn::enter(head.clone(), 0);
            take(LIMIT + STEP);
        }
        let h = head.clone();
        let waiter = std::thread::spawn(move || {
            let _turn = Turn::enter(h.clone(), 1);
            take(STEP);
            // It got past only once job 1 was next.
            h.load(Ordering::Acquire)
        });
        std::thread::sleep(Duration::from_millis(150));
        assert!(
            !waiter.is_finished(),
            "job 1 went past the limit while job 0 printed"
        );
        head.store(1, Ordering::Release);
        head_moved();
        assert_eq!(waiter.join().unwrap(), 1);
        give(LIMIT + STEP);
        give(STEP);
    }
}
