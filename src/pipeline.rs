//! Work on every core, output in order: one thread (the caller's) reads and hands out
//! jobs in capture order; worker threads run them, each writing its output into a
//! stream of chunks; the caller's thread prints those streams one job after another, in
//! the order the jobs were handed out, so the output is byte for byte what running the
//! jobs one by one on one thread writes.
//!
//! Memory is bounded by one [`Budget`] over everything held between reading and
//! printing: the input bytes of the jobs in flight (a job waits to be handed out until
//! the earlier ones free enough), at most [`Budget::jobs`] jobs at a time, and, per job,
//! at most [`CHUNKS_WAITING`] chunks of [`CHUNK`] bytes of output waiting to be printed
//! (a worker whose job is not the next to print stops writing until it is). The job
//! being printed always goes on, so a job larger than the whole budget runs alone, as it
//! would on one thread.
//!
//! Threads are `std::thread::scope` threads, so jobs can borrow the caller's data (the
//! schema, the options); the queues are `crossbeam-channel`'s bounded channels, because
//! the job queue has many receivers (std's `mpsc` has one) and a bounded channel makes
//! a worker wait, rather than buffer, when its output is not wanted yet.

use crossbeam_channel::{bounded, Receiver, Sender, TryRecvError};
use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of output a worker gathers before handing them to the printing thread.
pub const CHUNK: usize = 64 << 10;

/// Chunks of one job's output that may wait to be printed before its worker waits.
pub const CHUNKS_WAITING: usize = 4;

/// How much the pipeline may hold at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Input bytes of the jobs handed out and not yet printed.
    pub input_bytes: usize,
    /// Jobs handed out and not yet printed (each may hold up to
    /// [`CHUNKS_WAITING`] x [`CHUNK`] bytes of output).
    pub jobs: usize,
}

impl Budget {
    /// The default for `threads` workers: 2 MiB of input in flight per worker (4 to 16
    /// MiB) and 8 jobs per worker (8 to 64 jobs, each with at most
    /// [`CHUNKS_WAITING`] x [`CHUNK`] = 256 KiB of output waiting), within the 64 MiB
    /// kwire aims at for two workers.
    pub fn for_threads(threads: usize) -> Budget {
        Budget {
            input_bytes: (threads << 21).clamp(4 << 20, 16 << 20),
            jobs: (threads * 8).clamp(8, 64),
        }
    }
}

/// The worker count `--threads` defaults to: the cores this process may use.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

enum Piece<O> {
    Bytes(Vec<u8>),
    Done(io::Result<O>),
}

struct Job<J, O> {
    payload: J,
    out: Sender<Piece<O>>,
    /// The job's number, in the order jobs are handed out (and printed).
    seq: usize,
}

struct Pending<O> {
    input_bytes: usize,
    out: Receiver<Piece<O>>,
}

/// A job's output on its way to the printing thread, in pieces of at most [`CHUNK`]
/// bytes. The buffer is the worker's, kept from job to job: a job's last piece goes out
/// as a copy of its size, so a small output costs one small allocation.
struct Chunks<'c, O> {
    tx: &'c Sender<Piece<O>>,
    buf: &'c mut Vec<u8>,
}

impl<O> Chunks<'_, O> {
    fn closed() -> io::Error {
        io::Error::new(io::ErrorKind::BrokenPipe, "output closed")
    }

    /// Sends a full buffer, taking a fresh one.
    fn send_full(&mut self) -> io::Result<()> {
        let b = std::mem::replace(self.buf, Vec::with_capacity(CHUNK));
        self.tx.send(Piece::Bytes(b)).map_err(|_| Self::closed())
    }

    /// Sends what is left at the end of a job: a copy when it is small (the buffer stays
    /// for the next job), else the buffer itself.
    fn send_rest(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if self.buf.len() >= CHUNK / 4 {
            return self.send_full();
        }
        let b = self.buf.as_slice().to_vec();
        self.buf.clear();
        self.tx.send(Piece::Bytes(b)).map_err(|_| Self::closed())
    }
}

impl<O> Write for Chunks<'_, O> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = b.len().min(CHUNK - self.buf.len());
        self.buf.extend_from_slice(&b[..n]);
        if self.buf.len() >= CHUNK {
            self.send_full()?;
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The handing-out and printing side of a running pipeline (see [`run`]).
pub struct Feeder<'w, J, O> {
    jobs: Option<Sender<Job<J, O>>>,
    pending: VecDeque<Pending<O>>,
    /// The number of the next job handed out.
    next_seq: usize,
    /// The number of the job being printed (the oldest not yet printed), which the
    /// workers read: that job never waits for [`crate::memory`]'s budget.
    head: Arc<AtomicUsize>,
    input_bytes: usize,
    budget: Budget,
    out: &'w mut dyn Write,
    done: &'w mut dyn FnMut(O),
    error: Option<io::Error>,
}

impl<J: Send, O: Send> Feeder<'_, J, O> {
    /// Hands out a job whose input holds `input_bytes`, after printing (and waiting for)
    /// as many earlier jobs as the budget needs. Does nothing once an error has stopped
    /// the output (see [`Feeder::error`]).
    pub fn submit(&mut self, payload: J, input_bytes: usize) {
        if self.error.is_some() {
            return;
        }
        while !self.pending.is_empty()
            && (self.pending.len() >= self.budget.jobs
                || self.input_bytes + input_bytes > self.budget.input_bytes)
        {
            if !self.print_head(true) {
                return;
            }
        }
        let (tx, rx) = bounded(CHUNKS_WAITING);
        self.input_bytes += input_bytes;
        self.pending.push_back(Pending {
            input_bytes,
            out: rx,
        });
        let seq = self.next_seq;
        self.next_seq += 1;
        if let Some(jobs) = &self.jobs {
            // Workers only stop when the job queue closes, so this does not fail.
            let _ = jobs.send(Job {
                payload,
                out: tx,
                seq,
            });
        }
        // Print what is ready without waiting.
        while self.print_head(false) {}
    }

    /// Prints whatever the jobs at the head of the queue have written so far, without
    /// waiting. The reading thread calls it between frames, so a worker whose output
    /// fills its [`CHUNKS_WAITING`] chunks does not stand idle until the next job is
    /// handed out (with one worker, that stall made two threads slower than one).
    pub fn poll(&mut self) {
        if self.error.is_none() {
            while self.print_head(false) {}
        }
    }

    /// The first error: writing the output, or one a job returned. Jobs handed out
    /// after it are not printed.
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// Prints the oldest job's output; with `wait`, waits for it to finish, otherwise
    /// prints what it has written so far. Returns whether that job finished.
    fn print_head(&mut self, wait: bool) -> bool {
        let Some(head) = self.pending.front() else {
            return false;
        };
        loop {
            let piece = if wait {
                head.out.recv().ok()
            } else {
                match head.out.try_recv() {
                    Ok(p) => Some(p),
                    Err(TryRecvError::Empty) => return false,
                    Err(TryRecvError::Disconnected) => None,
                }
            };
            match piece {
                Some(Piece::Bytes(b)) => {
                    if self.error.is_none() {
                        if let Err(e) = self.out.write_all(&b) {
                            self.error = Some(e);
                        }
                    }
                }
                Some(Piece::Done(r)) => {
                    match r {
                        Ok(o) if self.error.is_none() => (self.done)(o),
                        Ok(_) => {}
                        Err(e) => {
                            self.error.get_or_insert(e);
                        }
                    }
                    break;
                }
                None => {
                    // A worker that went away without finishing (it panicked).
                    self.error
                        .get_or_insert(io::Error::other("a worker thread stopped"));
                    break;
                }
            }
        }
        if let Some(h) = self.pending.pop_front() {
            self.input_bytes -= h.input_bytes;
        }
        // The next job to print is the oldest still pending: the one after this.
        self.head.fetch_add(1, Ordering::AcqRel);
        crate::memory::head_moved();
        true
    }

    fn finish(&mut self) {
        self.jobs = None;
        while self.print_head(true) {}
    }
}

/// Runs `feed` on the caller's thread with a [`Feeder`] that hands jobs to `threads`
/// workers running `work` (`work` writes a job's output to the writer it is given and
/// returns a result), prints every job's output to `out` in the order the jobs were
/// handed out and passes each result to `done` in that order, once its output is
/// printed. Returns `feed`'s result once every job is printed.
///
/// # Errors
/// The first error writing to `out` or returned by `work`; after it, no more output
/// is written and `done` is not called again.
pub fn run<J, O, R>(
    threads: usize,
    budget: Budget,
    work: &(dyn Fn(J, &mut dyn Write) -> io::Result<O> + Sync),
    out: &mut dyn Write,
    done: &mut dyn FnMut(O),
    feed: impl FnOnce(&mut Feeder<'_, J, O>) -> R,
) -> io::Result<R>
where
    J: Send,
    O: Send,
{
    let (jtx, jrx) = bounded::<Job<J, O>>(budget.jobs);
    let head = Arc::new(AtomicUsize::new(0));
    let (r, err) = std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            let jrx = jrx.clone();
            let head = head.clone();
            s.spawn(move || {
                let mut buf = Vec::with_capacity(CHUNK);
                while let Ok(job) = jrx.recv() {
                    let _turn = crate::memory::Turn::enter(head.clone(), job.seq);
                    buf.clear();
                    let mut w = Chunks {
                        tx: &job.out,
                        buf: &mut buf,
                    };
                    let r = work(job.payload, &mut w).and_then(|o| w.send_rest().map(|()| o));
                    // The printing thread may have stopped reading: nothing to do then.
                    let _ = job.out.send(Piece::Done(r));
                }
            });
        }
        drop(jrx);
        let mut f = Feeder {
            jobs: Some(jtx),
            pending: VecDeque::new(),
            next_seq: 0,
            head,
            input_bytes: 0,
            budget,
            out,
            done,
            error: None,
        };
        let r = feed(&mut f);
        f.finish();
        (r, f.error)
    });
    match err {
        Some(e) => Err(e),
        None => Ok(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs that take longer the earlier they come still print in order, and the
    /// results arrive in order.
    #[test]
    fn output_in_order_whatever_finishes_first() {
        let work = |n: u64, w: &mut dyn Write| -> io::Result<u64> {
            std::thread::sleep(std::time::Duration::from_micros((50 - n % 50) * 20));
            // Some jobs write more than a chunk, so their output streams.
            let rep = if n.is_multiple_of(7) {
                CHUNK * 3 + 5
            } else {
                3
            };
            for _ in 0..rep {
                write!(w, "{}", n % 10)?;
            }
            writeln!(w)?;
            Ok(n)
        };
        let mut expect = Vec::new();
        for n in 0..200 {
            work(n, &mut expect).unwrap();
        }
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let budget = Budget {
            input_bytes: 10,
            jobs: 5,
        };
        run(3, budget, &work, &mut out, &mut |n| seen.push(n), |f| {
            for n in 0..200 {
                f.submit(n, 1);
            }
        })
        .unwrap();
        assert!(out == expect, "output differs from the one-thread output");
        assert_eq!(seen, (0..200).collect::<Vec<_>>());
    }

    /// A job's error stops the output after the earlier jobs' output, and is returned.
    #[test]
    fn a_job_error_stops_the_output() {
        let work = |n: u32, w: &mut dyn Write| -> io::Result<u32> {
            if n == 5 {
                return Err(io::Error::other("job 5 failed"));
            }
            writeln!(w, "{n}")?;
            Ok(n)
        };
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let e = run(
            2,
            Budget::for_threads(2),
            &work,
            &mut out,
            &mut |n| seen.push(n),
            |f| {
                for n in 0..50 {
                    f.submit(n, 1);
                }
            },
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "job 5 failed");
        assert_eq!(String::from_utf8(out).unwrap(), "0\n1\n2\n3\n4\n");
        assert_eq!(seen, vec![0, 1, 2, 3, 4]);
    }

    /// A job whose output is more than its waiting chunks finishes while the feeder
    /// only polls between frames (hands out nothing more): its output is printed as it
    /// comes, so the worker does not stand waiting for the next job to be handed out.
    #[test]
    fn polling_lets_a_worker_finish_a_long_output() {
        use std::sync::atomic::AtomicBool;
        let finished = AtomicBool::new(false);
        let work = |n: usize, w: &mut dyn Write| -> io::Result<usize> {
            w.write_all(&vec![b'x'; CHUNK * (CHUNKS_WAITING + 4)])?;
            finished.store(true, Ordering::SeqCst);
            Ok(n)
        };
        let mut out = Vec::new();
        run(
            1,
            Budget::for_threads(1),
            &work,
            &mut out,
            &mut |_| {},
            |f| {
                f.submit(0, 1);
                let start = std::time::Instant::now();
                while !finished.load(Ordering::SeqCst) {
                    assert!(
                        start.elapsed() < std::time::Duration::from_secs(20),
                        "the worker waits for its output to be printed"
                    );
                    f.poll();
                    std::thread::yield_now();
                }
            },
        )
        .unwrap();
        assert_eq!(out.len(), CHUNK * (CHUNKS_WAITING + 4));
    }

    /// A job larger than the input budget still runs (alone).
    #[test]
    fn a_job_over_the_budget_runs_alone() {
        let work = |n: usize, w: &mut dyn Write| -> io::Result<usize> {
            writeln!(w, "{n}")?;
            Ok(n)
        };
        let mut out = Vec::new();
        let budget = Budget {
            input_bytes: 100,
            jobs: 4,
        };
        run(2, budget, &work, &mut out, &mut |_| {}, |f| {
            f.submit(1, 10);
            f.submit(2, 1000);
            f.submit(3, 10);
        })
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "1\n2\n3\n");
    }
}
