//! Passes over the whole capture on a background thread, following the [`Source`] as it
//! grows: the display filter's matches ([`filter()`]) and the overview behind the
//! connections and statistics views ([`Overview`]).

use super::source::Source;
use crate::decode::Detail;
use crate::filter::{self, Filter};
use crate::input::RecordSet;
use crate::traffic::Stats;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A pass in progress: how far it is, and a flag that stops it.
pub struct Scan<T> {
    /// Messages looked at so far.
    pub scanned: AtomicUsize,
    /// The pass reached the end of a capture read to its end.
    pub done: AtomicBool,
    /// Set to stop the pass; shared with its first pass ([`UnansweredPass`]).
    stop: Arc<AtomicBool>,
    /// What it found so far.
    pub found: Mutex<T>,
    /// What its first pass could not decide: a capture it could not read (whose
    /// requests are then never unanswered), a capture that grew after it.
    error: Mutex<Option<String>>,
    /// Its first pass ([`UnansweredPass`]) is reading the capture.
    first_pass: AtomicBool,
}

impl<T> Scan<T> {
    /// What the status bar says of the scan besides its count: the first pass reading,
    /// or why it failed; empty otherwise.
    pub fn stage(&self) -> String {
        if self.first_pass.load(Ordering::Relaxed) {
            return "reading the capture once more for unanswered requests".into();
        }
        self.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default()
    }

    /// Stops the pass (at its next message).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
impl<T> Scan<T> {
    /// A pass that finished at once with `found` (no thread), for tests.
    pub(crate) fn finished(found: T) -> Arc<Scan<T>> {
        Arc::new(Scan {
            scanned: AtomicUsize::new(0),
            done: AtomicBool::new(true),
            stop: Arc::default(),
            found: Mutex::new(found),
            error: Mutex::new(None),
            first_pass: AtomicBool::new(false),
        })
    }
}

impl<T> Drop for Scan<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The first pass a filter naming `unanswered` needs: for each capture (by its number in
/// the source), the record numbers of the requests that got no response in the whole
/// capture, read as `kwire read -Y unanswered` reads them
/// ([`crate::run::unanswered_pass`]), with a line for each capture that could not be read
/// (its set is then empty). It stops early when the flag it is given is set (what it
/// gives then is partial). `None` where the input cannot be read twice (stdin, a live
/// capture).
#[derive(Clone)]
pub struct UnansweredPass(pub Arc<dyn Fn(Arc<AtomicBool>) -> Unanswered + Send + Sync>);

/// What an [`UnansweredPass`] read: a set a capture, and a line a capture it could not
/// read.
pub type Unanswered = Arc<(Vec<RecordSet>, Vec<String>)>;

impl UnansweredPass {
    /// This pass, read to its end at most once: the scans of one filter (its list and its
    /// statistics) share what it read. A pass stopped early is not kept (the next scan
    /// reads again); a filter entered anew takes a new one, and so reads anew.
    pub fn once(&self) -> UnansweredPass {
        let inner = self.clone();
        let read: Mutex<Option<Unanswered>> = Mutex::new(None);
        UnansweredPass(Arc::new(move |halt: Arc<AtomicBool>| {
            // Held while reading: a second scan waits for the first's answer.
            let mut kept = read.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(a) = &*kept {
                return Arc::clone(a);
            }
            let a = (inner.0)(Arc::clone(&halt));
            if !halt.load(Ordering::Relaxed) {
                *kept = Some(Arc::clone(&a));
            }
            a
        }))
    }
}

impl std::fmt::Debug for UnansweredPass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UnansweredPass")
    }
}

/// Runs `each` on every message of `src` in order, on a new thread, waiting at the end
/// while the source grows, until the source is read to its end or the scan is stopped.
/// With `first`, its sets are read before the first message (what it could not read is
/// kept in [`Scan::error`]; so is a capture growing after it, whose new requests it
/// did not see).
fn run<T: Send + 'static>(
    src: Arc<dyn Source>,
    detail: Detail,
    init: T,
    first: Option<UnansweredPass>,
    each: impl Fn(&mut T, usize, &crate::tree::Message<'_>, &crate::session::Context, Option<&[RecordSet]>)
        + Send
        + 'static,
) -> Arc<Scan<T>> {
    let scan = Arc::new(Scan {
        scanned: AtomicUsize::new(0),
        done: AtomicBool::new(false),
        stop: Arc::default(),
        found: Mutex::new(init),
        error: Mutex::new(None),
        first_pass: AtomicBool::new(first.is_some()),
    });
    let weak = Arc::downgrade(&scan);
    let _ = std::thread::Builder::new()
        .name("kwire-scan".into())
        .spawn(move || {
            let mut unanswered: Option<Unanswered> = None;
            if let Some(pass) = first {
                let Some(halt) = weak.upgrade().map(|s| Arc::clone(&s.stop)) else {
                    return;
                };
                let read = (pass.0)(halt);
                let Some(s) = weak.upgrade() else { return };
                if s.stop.load(Ordering::Relaxed) {
                    return;
                }
                let errors = &read.1;
                if !errors.is_empty() {
                    let e = format!("unanswered not decided for {}", errors.join("; "));
                    *s.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                }
                s.first_pass.store(false, Ordering::Relaxed);
                unanswered = Some(read);
            }
            let sets = unanswered.as_ref().map(|u| u.0.as_slice());
            let mut grew = false;
            let mut i = 0;
            loop {
                let Some(s) = weak.upgrade() else { return };
                if s.stop.load(Ordering::Relaxed) {
                    return;
                }
                // The capture grew since the first pass read it: its new requests were
                // not seen there (the list stays, and says so).
                if sets.is_some() && !grew && src.follows_end() {
                    grew = true;
                    let e = "the capture grew after unanswered was decided: enter the filter again to decide it anew";
                    *s.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.into());
                }
                if i < src.count() {
                    src.with_message(i, detail, &mut |m, ctx| {
                        let mut f = s.found.lock().unwrap_or_else(|e| e.into_inner());
                        each(&mut f, i, m, ctx, sets);
                    });
                    i += 1;
                    s.scanned.store(i, Ordering::Relaxed);
                } else if src.progress().done && i >= src.count() {
                    s.done.store(true, Ordering::Relaxed);
                    return;
                } else {
                    drop(s);
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        });
    scan
}

/// The messages (numbers in the source) a display filter keeps, found in order. A filter
/// naming `unanswered` takes `pass`'s sets first (the caller refuses it without one).
pub fn filter(
    src: Arc<dyn Source>,
    f: Filter,
    pass: Option<&UnansweredPass>,
) -> Arc<Scan<Vec<usize>>> {
    let first = pass.filter(|_| f.uses_unanswered()).cloned();
    let meta_src = Arc::clone(&src);
    run(
        src,
        filter_detail(&f),
        Vec::new(),
        first,
        move |hits, i, m, ctx, sets| {
            if keeps(&f, m, ctx, sets, &*meta_src, i) {
                hits.push(i);
            }
        },
    )
}

/// Whether `f` keeps message `i` (`m`) of `src`: `unanswered` by the set of its capture
/// when the scan read them.
fn keeps(
    f: &Filter,
    m: &crate::tree::Message<'_>,
    ctx: &crate::session::Context,
    sets: Option<&[RecordSet]>,
    src: &dyn Source,
    i: usize,
) -> bool {
    let unanswered = sets.and_then(|sets| {
        let capture = src.meta(i).map_or(0, |x| x.capture);
        sets.get(capture as usize)
    });
    let fctx = filter::MessageFacts {
        capture: Some(ctx),
        unanswered,
    };
    f.matches(m, &fctx)
}

/// The level the explorer decodes at for `f`. Its levels do not keep a filter's
/// fields: a filter on them reads the whole tree.
fn filter_detail(f: &Filter) -> Detail {
    if f.kept_fields().is_empty() {
        f.least_detail()
    } else {
        Detail::Full
    }
}

/// What the connections and statistics views show.
#[derive(Default)]
pub struct Overview {
    /// `kwire stats`' counts.
    pub stats: Stats,
    /// Frame bytes per (capture, connection).
    pub bytes: BTreeMap<(u32, u32), u64>,
    /// Messages per second since the first message.
    pub per_second: Vec<u64>,
    first: Option<(i64, u32)>,
}

/// Seconds in the messages-per-second chart at most (later messages are counted in
/// the last).
const MAX_SECONDS: usize = 1 << 20;

/// The overview of the whole capture, or of the messages display filter `only` keeps
/// (as `kwire stats -Y` counts them; the seconds of the chart then count from the first
/// message it keeps).
pub fn overview(
    src: Arc<dyn Source>,
    only: Option<Filter>,
    pass: Option<&UnansweredPass>,
) -> Arc<Scan<Overview>> {
    let meta_src = Arc::clone(&src);
    // `kwire stats`' counts read a few facts of each message: the fact trees, unless the
    // filter needs more.
    let detail = only.as_ref().map_or(Detail::Facts, filter_detail);
    let first = pass
        .filter(|_| only.as_ref().is_some_and(Filter::uses_unanswered))
        .cloned();
    run(
        src,
        detail,
        Overview::default(),
        first,
        move |o, i, m, ctx, sets| {
            if only
                .as_ref()
                .is_some_and(|f| !keeps(f, m, ctx, sets, &*meta_src, i))
            {
                return;
            }
            let capture = meta_src.meta(i).map_or(0, |x| x.capture);
            o.stats.capture = capture;
            o.stats.add(m, ctx);
            *o.bytes.entry((capture, ctx.connection)).or_default() += m.frame.len() as u64;
            let first = *o.first.get_or_insert(ctx.time);
            let secs = (ctx.time.0 - first.0).clamp(0, MAX_SECONDS as i64 - 1) as usize;
            if o.per_second.len() <= secs {
                o.per_second.resize(secs + 1, 0);
            }
            o.per_second[secs] += 1;
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_read_once_is_shared_and_a_stopped_one_is_not_kept() {
        let reads = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&reads);
        let base = UnansweredPass(Arc::new(move |_halt| {
            counted.fetch_add(1, Ordering::Relaxed);
            Arc::new((
                vec![RecordSet::default()],
                vec!["x: not a capture".to_string()],
            ))
        }));
        // Stopped: read, not kept.
        let once = base.once();
        let stopped = Arc::new(AtomicBool::new(true));
        let _ = (once.0)(Arc::clone(&stopped));
        let _ = (once.0)(stopped);
        assert_eq!(reads.load(Ordering::Relaxed), 2);
        // Read to its end: kept, and shared by its clones (a filter's list and statistics).
        let first = (once.0)(Arc::default());
        let again = (once.clone().0)(Arc::default());
        assert_eq!(reads.load(Ordering::Relaxed), 3);
        assert!(Arc::ptr_eq(&first, &again));
        // A filter entered anew takes a new one, which reads anew.
        let _ = (base.once().0)(Arc::default());
        assert_eq!(reads.load(Ordering::Relaxed), 4);
    }
}
