//! The message pages of a report: the messages chosen after the pass (the slowest
//! responses, error responses, the first request of each API and version, each with the
//! other half of its pair) are read again through [`crate::index::Capture`] (one index
//! pass over the file, without decoding bodies, then a decode of each chosen message)
//! and rendered as the html message page renders them ([`crate::page::html::message_html`]:
//! title, byte grid by region, object tree, hover linking).
//!
//! Bounds: at most `max_pages` messages; a page whose HTML is over [`PAGE_BYTES`] is
//! rendered again with fewer array elements and a shallower tree, and left out (with a
//! note) when it still is; once the pages hold [`PAGES_BYTES`] the rest are left out.
//! The index keeps its entries in at most [`INDEX_MEMORY`] bytes (the rest on disk).

use std::collections::BTreeMap;
use std::path::Path;

use super::gather::{Gather, MsgRef};
use crate::index::{Capture, IndexOptions};
use crate::input::CaptureOptions;
use crate::render::{text as rtext, RenderOptions};
use crate::schema::Schema;
use crate::tree::Direction;

/// Largest page (the HTML of one message).
pub const PAGE_BYTES: usize = 256 << 10;
/// Largest total of the pages' HTML.
pub const PAGES_BYTES: usize = 14 << 20;
/// Memory the index of one capture may hold its entries in.
pub const INDEX_MEMORY: usize = 4 << 20;

/// One rendered message.
#[derive(Clone, Debug)]
pub struct Page {
    /// `Fetch v12 response, correlation_id 7`.
    pub short: String,
    /// The text output's title line (frames, time, endpoints, correlation_id, latency).
    pub title: String,
    /// The legend, grids and tree ([`crate::page::html::message_html`]).
    pub html: String,
    /// The other half of its pair, when it has a page too.
    pub mate: Option<MsgRef>,
    /// A request (else a response).
    pub request: bool,
    /// The tree was cut (3 elements an array, 8 levels) to keep the page under
    /// [`PAGE_BYTES`].
    pub cut: bool,
}

/// The messages to render, at most `max` of them, in priority order: each slow response
/// (slowest first) with its request, each error response with its request, the first
/// request of each API and version with its response. The requests of responses are
/// found through the index later: here each response counts for two.
pub fn choose(g: &Gather, max: usize) -> Vec<MsgRef> {
    let mut out: Vec<MsgRef> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let slowest = g.slowest();
    let want = slowest
        .iter()
        .take(50)
        .map(|s| s.at)
        .chain(g.error_msgs.iter().map(|e| e.at))
        .chain(g.first_of.values().copied())
        .chain(slowest.iter().skip(50).map(|s| s.at));
    for at in want {
        if out.len() * 2 >= max {
            break;
        }
        if seen.insert(at) {
            out.push(at);
        }
    }
    out
}

/// The options of the capture `path`'s index, as `run` reads it.
pub struct Source<'a> {
    /// The capture file.
    pub path: &'a Path,
    /// How Kafka is found in it (ports, key logs).
    pub capture: CaptureOptions,
}

/// Renders the chosen messages (and the other half of each pair) of `sources` (by
/// capture ordinal), up to `max` pages; returns the pages and lines saying what was
/// left out and why.
pub fn render(
    schema: &Schema,
    sources: &[Source<'_>],
    chosen: &[MsgRef],
    max: usize,
    ropts: &RenderOptions,
) -> (BTreeMap<MsgRef, Page>, Vec<String>) {
    let mut pages = BTreeMap::new();
    let mut notes = Vec::new();
    let mut total = 0usize;
    let mut by_capture: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (c, i) in chosen {
        by_capture.entry(*c).or_default().push(*i);
    }
    let mut budget_said = false;
    for (c, idxs) in by_capture {
        let Some(src) = sources.get(c as usize) else {
            continue;
        };
        if src.path.as_os_str() == "-" {
            notes.push("stdin: no message pages (they need a capture file, read again)".into());
            continue;
        }
        let iopts = IndexOptions {
            schema: schema.clone(),
            capture: src.capture.clone(),
            memory_limit: INDEX_MEMORY,
            ..IndexOptions::default()
        };
        let cap = match Capture::open_with(src.path, iopts, &mut |_| {}) {
            Ok(c) => c,
            Err(e) => {
                notes.push(format!("no message pages of {}: {e}", src.path.display()));
                continue;
            }
        };
        for i in idxs {
            if pages.len() >= max {
                break;
            }
            let info = match cap.info(i as usize) {
                Ok(x) => x,
                Err(e) => {
                    notes.push(format!("message {i} of {}: {e}", src.path.display()));
                    continue;
                }
            };
            // The request first, then its response.
            let pair: Vec<usize> = match (info.direction, info.pair) {
                (crate::input::Direction::ToClient, Some(j)) => vec![j, i as usize],
                (_, Some(j)) => vec![i as usize, j],
                _ => vec![i as usize],
            };
            let fits = pages.len() + pair.len() <= max;
            let pair = if fits { pair } else { vec![i as usize] };
            let mut made = Vec::new();
            for k in &pair {
                let at = (c, *k as u64);
                if pages.contains_key(&at) {
                    made.push(at);
                    continue;
                }
                if total >= PAGES_BYTES {
                    if !budget_said {
                        notes.push(format!(
                            "the message pages reached {} MiB: the rest have none",
                            PAGES_BYTES >> 20
                        ));
                        budget_said = true;
                    }
                    continue;
                }
                match page(&cap, c, *k, ropts) {
                    Ok(Some(p)) => {
                        total += p.html.len();
                        pages.insert(at, p);
                        made.push(at);
                    }
                    Ok(None) => notes.push(format!(
                        "message {k} of {}: its page is over {} KiB even with a shallower tree: left out",
                        src.path.display(),
                        PAGE_BYTES >> 10
                    )),
                    Err(e) => notes.push(format!("message {k} of {}: {e}", src.path.display())),
                }
            }
            if let [a, b] = made[..] {
                if let Some(p) = pages.get_mut(&a) {
                    p.mate = Some(b);
                }
                if let Some(p) = pages.get_mut(&b) {
                    p.mate = Some(a);
                }
            }
        }
    }
    (pages, notes)
}

/// Message `k` of `cap` as a page, `None` when it stays over [`PAGE_BYTES`].
fn page(
    cap: &Capture,
    c: u32,
    k: usize,
    ropts: &RenderOptions,
) -> Result<Option<Page>, crate::index::IndexError> {
    cap.with_message(k, |m, ctx| {
        let sid = format!("p{c}-{k}");
        let tries = [
            ropts.clone(),
            RenderOptions {
                max_elements: ropts.max_elements.min(3),
                depth: Some(ropts.depth.unwrap_or(8).min(8)),
                ..ropts.clone()
            },
        ];
        for (n, o) in tries.iter().enumerate() {
            let mut capped = crate::page::Capped::new(PAGE_BYTES);
            if crate::page::html::message_html(&mut capped, m, &sid, o).is_err() {
                continue;
            }
            let buf = capped.into_inner();
            if buf.len() <= PAGE_BYTES {
                let name = m.api_name.unwrap_or("unknown API");
                return Some(Page {
                    short: format!(
                        "{name} v{} {}, correlation_id {}",
                        m.api_version,
                        m.direction.as_str(),
                        m.correlation_id
                            .map_or_else(|| "?".to_string(), |c| c.to_string())
                    ),
                    title: rtext::title(m, Some(ctx), false),
                    html: crate::text::utf8_owned(buf),
                    mate: None,
                    request: m.direction == Direction::Request,
                    cut: n > 0,
                });
            }
        }
        None
    })
}
