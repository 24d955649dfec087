//! A [`Source`] over several capture files (`kwire explore A B`), each through the
//! message index as one file is ([`Indexed`]), one after the other: capture `k + 1` is
//! started once capture `k`'s index is built, and its messages follow capture `k`'s in
//! the list, as `kwire read A B` prints them (each capture its own session: its own
//! connection numbers, pairs and topic names).
//!
//! Memory is that of one capture: the captures share [`INDEX_MEMORY`] of index entries
//! in memory (a capture gets what the ones before it left; the rest of its entries go to
//! its index's temporary file), and only one capped spool (the first screen of the
//! capture being indexed) exists at a time. The spool alone, which [`super::open`] used
//! for several captures before, kept about 420 bytes a message in memory.

use super::indexed::{Indexed, INDEX_MEMORY};
use super::source::{Inputs, Meta, Progress, Source};
use crate::decode::Detail;
use crate::schema::Schema;
use crate::session::Context;
use crate::tree::Message;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A capture time: seconds and nanoseconds since the Unix epoch.
type Time = (i64, u32);

/// One capture of several.
struct Part {
    /// The name notices and the tree give it: the path as given on the command line.
    label: Arc<str>,
    /// The file's length in bytes at start.
    size: u64,
    /// Its source, once started.
    src: OnceLock<Arc<Indexed>>,
    /// Its message count, once its reading is done (then the next capture starts).
    done: OnceLock<usize>,
    /// Why it could not be started (the spool file could not be made).
    failed: OnceLock<String>,
}

struct Parts {
    parts: Vec<Part>,
    stop: AtomicBool,
}

/// See the module documentation.
pub struct Several {
    shared: Arc<Parts>,
}

impl Several {
    /// Starts indexing `inputs.files` (capture files, none `-`) in order, on a background
    /// thread that starts each capture's [`Indexed`] when the one before it is built.
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn start(schema: Arc<Schema>, inputs: Inputs) -> std::io::Result<Several> {
        let parts = inputs
            .files
            .iter()
            .zip(crate::run::capture_labels(&inputs.files))
            .map(|(p, label)| Part {
                label,
                size: std::fs::metadata(p).map_or(0, |m| m.len()),
                src: OnceLock::new(),
                done: OnceLock::new(),
                failed: OnceLock::new(),
            })
            .collect();
        let shared = Arc::new(Parts {
            parts,
            stop: AtomicBool::new(false),
        });
        {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("kwire-several".into())
                .spawn(move || run(&schema, &inputs, &shared))?;
        }
        Ok(Several { shared })
    }

    /// The capture holding message `i` and its number there, among the messages known.
    fn locate(&self, i: usize) -> Option<(usize, &Indexed, usize)> {
        let mut base = 0usize;
        for (k, p) in self.shared.parts.iter().enumerate() {
            match p.done.get() {
                Some(&n) => {
                    if i < base + n {
                        return Some((k, p.src.get()?, base));
                    }
                    base += n;
                }
                None => {
                    let s = p.src.get()?;
                    return (i < base + s.count()).then_some((k, s, base));
                }
            }
        }
        None
    }

    /// The capture time of the message before capture `k`'s first (the last one of the
    /// nearest capture before it that has messages), and of the first message of all.
    fn times_around(&self, k: usize) -> (Option<Time>, Option<Time>) {
        let parts = &self.shared.parts;
        let last = |p: &Part| {
            let n = *p.done.get()?;
            p.src.get()?.meta(n.checked_sub(1)?).map(|m| m.time)
        };
        let first = |p: &Part| p.src.get()?.meta(0).map(|m| m.time);
        let previous = parts[..k].iter().rev().find_map(last);
        let first_of_all = parts[..=k].iter().find_map(first);
        (previous, first_of_all)
    }
}

impl Drop for Several {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

/// The background thread: each capture in turn, started when the one before it is done.
fn run(schema: &Arc<Schema>, inputs: &Inputs, shared: &Parts) {
    let mut used = 0usize;
    for (k, part) in shared.parts.iter().enumerate() {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let one = Inputs {
            files: vec![inputs.files[k].clone()],
            ..inputs.clone()
        };
        let memory = INDEX_MEMORY.saturating_sub(used);
        let src = match Indexed::start_within(Arc::clone(schema), one, memory) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                let _ = part.failed.set(format!("{}: {e}", part.label));
                let _ = part.done.set(0);
                continue;
            }
        };
        let _ = part.src.set(Arc::clone(&src));
        while !src.progress().done {
            if shared.stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // `count` once done also frees the capture's first-screen spool.
        let _ = part.done.set(src.count());
        used += src.memory();
    }
}

impl Source for Several {
    fn count(&self) -> usize {
        let mut n = 0;
        for p in &self.shared.parts {
            match p.done.get() {
                Some(c) => n += c,
                None => {
                    n += p.src.get().map_or(0, |s| s.count());
                    break;
                }
            }
        }
        n
    }

    fn progress(&self) -> Progress {
        let mut out = Progress {
            done: true,
            ..Progress::default()
        };
        for p in &self.shared.parts {
            out.bytes_total += p.size;
            let now = p.src.get().map(|s| s.progress());
            if out.error.is_none() {
                out.error = p
                    .failed
                    .get()
                    .cloned()
                    .or_else(|| now.as_ref().and_then(|n| n.error.clone()));
            }
            if p.done.get().is_some() {
                out.bytes_read += p.size;
            } else {
                out.done = false;
                out.bytes_read += now.map_or(0, |n| n.bytes_read.min(p.size));
            }
        }
        out
    }

    fn meta(&self, i: usize) -> Option<Meta> {
        let (k, s, base) = self.locate(i)?;
        let m = s.meta(i - base)?;
        Some(Meta {
            capture: k as u32,
            pair: m.pair.map(|j| j + base),
            ..m
        })
    }

    fn with_message(
        &self,
        i: usize,
        detail: Detail,
        f: &mut dyn FnMut(&Message<'_>, &Context),
    ) -> bool {
        let Some((k, s, base)) = self.locate(i) else {
            return false;
        };
        let local = i - base;
        let (previous, first) = self.times_around(k);
        let label = Arc::clone(&self.shared.parts[k].label);
        s.with_message(local, detail, &mut |m, ctx| {
            let mut c = ctx.clone();
            c.capture = Some(Arc::clone(&label));
            c.first_time = first.or(c.first_time);
            if local == 0 {
                c.previous_time = previous;
            }
            f(m, &c);
        })
    }

    fn input_failed(&self) -> bool {
        self.shared
            .parts
            .iter()
            .any(|p| p.failed.get().is_some() || p.src.get().is_some_and(|s| s.input_failed()))
    }

    fn notices(&self) -> (Vec<String>, u64) {
        let mut lines = Vec::new();
        let mut more = 0;
        for p in &self.shared.parts {
            if let Some(e) = p.failed.get() {
                lines.push(format!("kwire: {e}"));
            }
            let Some(s) = p.src.get() else { break };
            let (l, m) = s.notices();
            lines.extend(l.iter().map(|l| crate::text::named(&p.label, l.clone())));
            more += m;
        }
        (lines, more)
    }

    fn tls_of(&self, capture: u32, connection: u32) -> Option<String> {
        let p = self.shared.parts.get(capture as usize)?;
        p.src.get()?.tls_of(0, connection)
    }

    fn tls_table(&self) -> (Vec<crate::traffic::TlsRow>, u64) {
        let (mut rows, mut past) = (Vec::new(), 0);
        for p in &self.shared.parts {
            let Some(s) = p.src.get() else { break };
            let (r, n) = s.tls_table();
            rows.extend(r.into_iter().map(|mut r| {
                r.capture = Some(Arc::clone(&p.label));
                r
            }));
            past += n;
        }
        (rows, past)
    }

    fn tls_count(&self) -> (usize, u64) {
        let (mut rows, mut past) = (0, 0);
        for p in &self.shared.parts {
            let Some(s) = p.src.get() else { break };
            let (r, n) = s.tls_count();
            rows += r;
            past += n;
        }
        (rows, past)
    }
}
