//! Passes over the whole capture on a background thread, following the [`Source`] as it
//! grows: the display filter's matches ([`filter()`]) and the overview behind the
//! connections and statistics views ([`Overview`]).

use super::source::Source;
use crate::decode::Detail;
use crate::filter::{self, Filter};
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
    stop: AtomicBool,
    /// What it found so far.
    pub found: Mutex<T>,
}

impl<T> Scan<T> {
    /// Stops the pass (at its next message).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl<T> Drop for Scan<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Runs `each` on every message of `src` in order, on a new thread, waiting at the end
/// while the source grows, until the source is read to its end or the scan is stopped.
fn run<T: Send + 'static>(
    src: Arc<dyn Source>,
    detail: Detail,
    init: T,
    each: impl Fn(&mut T, usize, &crate::tree::Message<'_>, &crate::session::Context) + Send + 'static,
) -> Arc<Scan<T>> {
    let scan = Arc::new(Scan {
        scanned: AtomicUsize::new(0),
        done: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        found: Mutex::new(init),
    });
    let weak = Arc::downgrade(&scan);
    let _ = std::thread::Builder::new()
        .name("kwire-scan".into())
        .spawn(move || {
            let mut i = 0;
            loop {
                let Some(s) = weak.upgrade() else { return };
                if s.stop.load(Ordering::Relaxed) {
                    return;
                }
                if i < src.count() {
                    src.with_message(i, detail, &mut |m, ctx| {
                        let mut f = s.found.lock().unwrap_or_else(|e| e.into_inner());
                        each(&mut f, i, m, ctx);
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

/// The messages (numbers in the source) a display filter keeps, found in order.
pub fn filter(src: Arc<dyn Source>, f: Filter) -> Arc<Scan<Vec<usize>>> {
    run(
        src,
        filter_detail(&f),
        Vec::new(),
        move |hits, i, m, ctx| {
            if keeps(&f, m, ctx) {
                hits.push(i);
            }
        },
    )
}

/// Whether `f` keeps `m` in the explorer, which decides no `unanswered` (refused at the
/// prompt and for `-Y`).
fn keeps(f: &Filter, m: &crate::tree::Message<'_>, ctx: &crate::session::Context) -> bool {
    let fctx = filter::MessageFacts {
        capture: Some(ctx),
        unanswered: None,
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
pub fn overview(src: Arc<dyn Source>, only: Option<Filter>) -> Arc<Scan<Overview>> {
    let meta_src = Arc::clone(&src);
    // `kwire stats`' counts read a few facts of each message: the fact trees, unless the
    // filter needs more.
    let detail = only.as_ref().map_or(Detail::Facts, filter_detail);
    run(src, detail, Overview::default(), move |o, i, m, ctx| {
        if only.as_ref().is_some_and(|f| !keeps(f, m, ctx)) {
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
    })
}
