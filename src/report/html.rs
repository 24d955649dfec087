//! The report as one self-contained HTML page: an overview, the plots ([`super::plot`]),
//! the sortable tables and the message pages, with inline CSS (light, dark through
//! `prefers-color-scheme`, and print) and two small inline scripts (the tables' sorting
//! and the message pages' hover linking). Nothing is fetched: no external script, style,
//! font or image.
//!
//! Every count cell carries its exact value in `data-v` (latencies in nanoseconds), which
//! the sorting script sorts by and tests read; the overview's cells carry `data-k`, the
//! name of the count (`requests`, `connections`, ...).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{self, Write};

use super::gather::{Gather, GroupEvent, MsgRef};
use super::pages::Page;
use super::plot::{self, Axis, BoxRow, Chart, Mark, Series, Style, Ticks, TimeAxis, TimeLabels};
use crate::page::html::esc;
use crate::traffic::Latencies;

/// One capture's line of the overview.
#[derive(Clone, Debug, Default)]
pub struct CaptureLine {
    /// The path as given (numbered from its second reading when given more than once:
    /// `a.pcap (2)`, see [`crate::run::capture_labels`]).
    pub path: String,
    /// Packets (records) read.
    pub packets: u64,
    /// Kafka connections found.
    pub connections: u64,
    /// The engine's closing lines (counts, unanswered requests, what was skipped).
    pub closing: Vec<String>,
    /// Requests that got no response.
    pub unanswered: u64,
    /// TLS connections, and how many of them were decrypted whole.
    pub tls: (u64, u64),
}

/// What the page is made of besides the gathered counts.
pub struct Report<'a> {
    /// The captures, in command-line order.
    pub captures: &'a [CaptureLine],
    /// The display filter (`-Y` and its shorthands), printed at the top.
    pub filter: Option<&'a str>,
    /// The counts, finished ([`Gather::finish`]: the latencies sorted in place).
    pub gather: &'a Gather,
    /// The message pages by message.
    pub pages: &'a BTreeMap<MsgRef, Page>,
    /// Notice lines (the first ones; `notices_dropped` more).
    pub notices: &'a [String],
    /// Notice lines not kept.
    pub notices_dropped: u64,
    /// Notes on the pages left out.
    pub page_notes: &'a [String],
    /// Time labels (`-t`).
    pub time: TimeLabels,
    /// The schema stack's description (releases, `--schema` paths).
    pub schema: String,
    /// The `--max-pages` asked for.
    pub max_pages: usize,
}

const CSS: &str = r#"
:root { color-scheme: light dark; --bg:#fff; --fg:#1d2330; --muted:#5b6475; --line:#d7dbe3; --panel:#f6f7f9; --link:#1864ab; }
@media (prefers-color-scheme: dark) {
  :root { --bg:#15181e; --fg:#dfe3ea; --muted:#9aa3b2; --line:#343a46; --panel:#1d2129; --link:#74c0fc; }
  body { background: var(--bg) !important; color: var(--fg) !important; }
  a { color: var(--link) !important; }
  table.grid td.b { color: #111; }
  .tree .row.hl { background: #3b2a17 !important; }
  .tree .row.sel { background: #17324a !important; }
  .tree .d { color: #69db7c !important; }
  pre.json { background: var(--panel) !important; }
}
body.report { max-width: 1400px; }
.report header p { margin: .2rem 0; }
.report .filter { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; background: var(--panel); padding: .1rem .4rem; border-radius: 3px; }
.report nav.sections a { margin-right: .9rem; }
.report .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(11rem, 1fr)); gap: .6rem; margin: .8rem 0; }
.report .card { border: 1px solid var(--line); border-radius: 6px; padding: .45rem .7rem; background: var(--panel); }
.report .card .v { font-size: 1.35rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.report .card .k { font-size: 12.5px; color: var(--muted); }
.report table.t { border-collapse: collapse; margin: .4rem 0 1rem; font-size: 13.5px; width: 100%; }
.report table.t th, .report table.t td { padding: .2rem .55rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
.report table.t th { position: sticky; top: 0; background: var(--bg); cursor: pointer; user-select: none; white-space: nowrap; }
.report table.t th.sorted-asc::after { content: " \25B2"; font-size: 10px; }
.report table.t th.sorted-desc::after { content: " \25BC"; font-size: 10px; }
.report table.t td.n { text-align: right; font-variant-numeric: tabular-nums; font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; }
.report table.t tr:hover td { background: var(--panel); }
.report .scroll { max-height: 36rem; overflow: auto; border: 1px solid var(--line); border-radius: 4px; }
.report figure { margin: 1rem 0 1.6rem; break-inside: avoid; }
.report figure h3 { text-transform: none; color: var(--fg); font-size: 1rem; margin: .2rem 0; }
.report figcaption { font-size: 13px; color: var(--muted); max-width: 62rem; }
.report svg.plot { width: 100%; height: auto; display: block; color: var(--fg); font: 12px system-ui, sans-serif; }
.report svg.plot .grid line { stroke: var(--line); stroke-width: 1; }
.report svg.plot .tick, .report svg.plot .legend-text { fill: var(--muted); }
.report svg.plot .axis { stroke: currentColor; fill: none; stroke-width: 1.2; }
.report svg.plot .axis-label { fill: currentColor; font-size: 13px; }
.report svg.plot .series { fill: none; stroke-width: 1.8; }
.report svg.plot .whisker { stroke: currentColor; stroke-width: 1.2; }
.report svg.plot a circle:hover { stroke: currentColor; stroke-width: 2; }
.report .notes li { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 12.5px; }
.report .msg { scroll-margin-top: 1rem; }
.report .msg:target { outline: 2px solid var(--link); outline-offset: 4px; }
@media print {
  body.report { max-width: none; padding: 0; }
  .report .scroll { max-height: none; overflow: visible; border: 0; }
  .report table.t th { position: static; }
  .report nav.sections, .report .noprint { display: none; }
  .report section.pages { break-before: page; }
  a { color: inherit; text-decoration: none; }
}
"#;

/// Sorts a `table.t` by the clicked column: numbers by `data-v`, text otherwise; a second
/// click reverses.
const SORT_SCRIPT: &str = r#"
(function () {
  'use strict';
  Array.prototype.forEach.call(document.querySelectorAll('table.t'), function (t) {
    var ths = t.querySelectorAll('thead th');
    Array.prototype.forEach.call(ths, function (th, col) {
      th.addEventListener('click', function () {
        var body = t.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var desc = !th.classList.contains('sorted-desc');
        Array.prototype.forEach.call(ths, function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
        th.classList.add(desc ? 'sorted-desc' : 'sorted-asc');
        var key = function (r) {
          var c = r.cells[col];
          if (!c) { return ''; }
          var v = c.getAttribute('data-v');
          return v === null ? c.textContent.trim().toLowerCase() : +v;
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          var o = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
          return desc ? -o : o;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
"#;

/// `#msg-C-I`, the anchor of message (C, I)'s page.
pub fn anchor(at: MsgRef) -> String {
    format!("msg-{}-{}", at.0, at.1)
}

fn ms_text(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn td_n(v: u64) -> String {
    format!("<td class=\"n\" data-v=\"{v}\">{v}</td>")
}

fn td_ms(ns: Option<u64>) -> String {
    match ns {
        Some(v) => format!("<td class=\"n\" data-v=\"{v}\">{}</td>", ms_text(v)),
        None => "<td class=\"n\" data-v=\"-1\">-</td>".into(),
    }
}

/// A latency read from a histogram (within 1%): marked `~`.
fn td_ms_approx(ns: Option<u64>) -> String {
    match ns {
        Some(v) => format!(
            "<td class=\"n\" data-v=\"{v}\" title=\"from a histogram, within 1%\">~{}</td>",
            ms_text(v)
        ),
        None => td_ms(None),
    }
}

fn td(s: &str) -> String {
    format!("<td>{}</td>", esc(s))
}

fn thead(w: &mut dyn Write, cols: &[&str]) -> io::Result<()> {
    write!(w, "<thead><tr>")?;
    for c in cols {
        write!(w, "<th>{}</th>", esc(c))?;
    }
    writeln!(w, "</tr></thead><tbody>")
}

fn bytes_text(b: u64) -> String {
    if b >= 10 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 10 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// A message's link, when it has a page; else the text alone.
fn link(r: &Report<'_>, at: MsgRef, text: &str) -> String {
    if r.pages.contains_key(&at) {
        format!("<a href=\"#{}\">{}</a>", anchor(at), esc(text))
    } else {
        esc(text)
    }
}

fn time_text(r: &Report<'_>, ns: i64) -> String {
    let t0 = r.gather.t0.unwrap_or(ns);
    let ta = TimeAxis {
        origin: t0 as f64 / 1e9,
        labels: r.time,
    };
    match r.time {
        TimeLabels::Relative => format!("{:.6} s", ns.saturating_sub(t0) as f64 / 1e9),
        _ => ta.label(ns.saturating_sub(t0) as f64 / 1e9, 0.001),
    }
}

fn msg_label(r: &Report<'_>, at: MsgRef) -> String {
    if r.captures.len() > 1 {
        format!("{}#{}", at.0 + 1, at.1)
    } else {
        format!("#{}", at.1)
    }
}

/// Writes the report.
///
/// # Errors
/// The writer's errors.
pub fn write(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let g = r.gather;
    let names: Vec<&str> = r.captures.iter().map(|c| c.path.as_str()).collect();
    let title = format!("kwire report: {}", names.join(", "));
    writeln!(
        w,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
    )?;
    writeln!(
        w,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"color-scheme\" content=\"light dark\">\n<meta name=\"generator\" content=\"kwire {}\">",
        env!("CARGO_PKG_VERSION")
    )?;
    writeln!(w, "<title>{}</title>", esc(&title))?;
    writeln!(
        w,
        "<style>{}{CSS}</style>\n</head>\n<body class=\"report\">",
        crate::page::html::doc_css()
    )?;
    writeln!(w, "<header><h1>{}</h1>", esc(&title))?;
    match r.filter {
        Some(f) => writeln!(
            w,
            "<p>Every section counts only the messages the filter keeps: <code class=\"filter\" id=\"filter\">{}</code></p>",
            esc(f)
        )?,
        None => writeln!(w, "<p>Every message of the captures (no filter).</p>")?,
    }
    writeln!(
        w,
        "<p class=\"intro\">Made by kwire {} with {}. Latencies run from the request's last segment to the response's; quantiles are nearest-rank (the value at rank ceil(q&#215;n)).</p>",
        env!("CARGO_PKG_VERSION"),
        esc(&r.schema)
    )?;
    writeln!(
        w,
        "<nav class=\"sections\"><a href=\"#overview\">overview</a><a href=\"#plots\">plots</a><a href=\"#apis\">APIs</a><a href=\"#topics\">topics</a><a href=\"#clients\">clients</a><a href=\"#connections\">connections</a><a href=\"#errors\">errors</a><a href=\"#slowest\">slowest</a><a href=\"#pages\">messages</a></nav></header>"
    )?;
    overview(w, r)?;
    plots(w, r)?;
    apis(w, r)?;
    topics(w, r)?;
    clients(w, r)?;
    connections(w, r)?;
    errors(w, r)?;
    slowest(w, r)?;
    pages(w, r)?;
    let _ = g;
    writeln!(w, "<script>{SORT_SCRIPT}</script>")?;
    writeln!(w, "<script>{}</script>", crate::page::html::hover_script())?;
    writeln!(w, "</body>\n</html>")
}

fn card(w: &mut dyn Write, k: &str, label: &str, v: u64, text: Option<String>) -> io::Result<()> {
    writeln!(
        w,
        "<div class=\"card\"><div class=\"v\" data-k=\"{k}\" data-v=\"{v}\">{}</div><div class=\"k\">{}</div></div>",
        esc(&text.unwrap_or_else(|| v.to_string())),
        esc(label)
    )
}

fn overview(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let g = r.gather;
    let st = &g.stats;
    writeln!(w, "<section id=\"overview\"><h2>Overview</h2>")?;
    let packets: u64 = r.captures.iter().map(|c| c.packets).sum();
    let unanswered: u64 = r.captures.iter().map(|c| c.unanswered).sum();
    let brokers: BTreeSet<&str> = st.connections.values().map(|c| c.server.as_str()).collect();
    let clients: BTreeSet<&str> = st
        .connections
        .values()
        .filter_map(|c| c.client_id.as_deref())
        .collect();
    let (requests, responses) = st
        .apis
        .values()
        .fold((0, 0), |(a, b), x| (a + x.requests, b + x.responses));
    writeln!(w, "<div class=\"cards\">")?;
    card(w, "captures", "captures", r.captures.len() as u64, None)?;
    let span = g.span.map_or(0, |(a, b)| b.saturating_sub(a).max(0) as u64);
    card(
        w,
        "span_ns",
        "time span",
        span,
        Some(format!("{:.3} s", span as f64 / 1e9)),
    )?;
    card(w, "packets", "packets", packets, None)?;
    card(
        w,
        "connections",
        "connections",
        st.connections.len() as u64,
        None,
    )?;
    card(w, "client_ids", "client_ids", clients.len() as u64, None)?;
    card(w, "brokers", "brokers", brokers.len() as u64, None)?;
    card(w, "messages", "messages", g.messages, None)?;
    card(w, "requests", "requests (by API)", requests, None)?;
    card(w, "responses", "responses (by API)", responses, None)?;
    card(w, "sasl_tokens", "raw SASL tokens", st.sasl_tokens, None)?;
    card(
        w,
        "unpaired_responses",
        "responses without their request",
        st.unpaired_responses,
        None,
    )?;
    card(w, "unanswered", "unanswered requests", unanswered, None)?;
    card(
        w,
        "bytes_to_broker",
        "bytes client to broker",
        g.bytes.0,
        Some(bytes_text(g.bytes.0)),
    )?;
    card(
        w,
        "bytes_to_client",
        "bytes broker to client",
        g.bytes.1,
        Some(bytes_text(g.bytes.1)),
    )?;
    card(
        w,
        "decode_errors",
        "messages with decode errors",
        g.decode_errors,
        None,
    )?;
    card(w, "incomplete", "incomplete frames", g.incomplete, None)?;
    card(
        w,
        "error_responses",
        "responses with error codes",
        g.error_responses,
        None,
    )?;
    writeln!(w, "</div>")?;
    let folded = g.folded();
    if !folded.is_empty() {
        writeln!(
            w,
            "<p id=\"folded\" class=\"intro\">Folded to keep the report bounded: {}.</p>",
            esc(&folded.join("; "))
        )?;
    }
    if let Some((a, b)) = g.span {
        // Clock times as -t chooses: local with `a`, else UTC.
        let utc = |ns: i64| {
            let t = chrono::DateTime::from_timestamp(
                ns.div_euclid(1_000_000_000),
                ns.rem_euclid(1_000_000_000) as u32,
            );
            match (t, r.time) {
                (Some(t), TimeLabels::Local) => t
                    .with_timezone(&chrono::Local)
                    .format("%Y-%m-%d %H:%M:%S%.6f %:z")
                    .to_string(),
                (Some(t), _) => t.format("%Y-%m-%d %H:%M:%S%.6f UTC").to_string(),
                (None, _) => String::new(),
            }
        };
        writeln!(w, "<p>From {} to {}.</p>", esc(&utc(a)), esc(&utc(b)))?;
    }
    if !g.releases.is_empty() {
        let v: Vec<&str> = g.releases.iter().map(String::as_str).collect();
        writeln!(
            w,
            "<p>Definitions from schema release{} {}.</p>",
            if v.len() == 1 { "" } else { "s" },
            esc(&v.join(", "))
        )?;
    }
    writeln!(w, "<h3>captures</h3><table class=\"t\">")?;
    thead(
        w,
        &[
            "capture",
            "packets",
            "connections",
            "unanswered",
            "TLS (decrypted)",
            "closing line",
        ],
    )?;
    for c in r.captures {
        writeln!(
            w,
            "<tr>{}{}{}{}<td class=\"n\" data-v=\"{}\">{} ({})</td><td>{}</td></tr>",
            td(&c.path),
            td_n(c.packets),
            td_n(c.connections),
            td_n(c.unanswered),
            c.tls.0,
            c.tls.0,
            c.tls.1,
            c.closing
                .iter()
                .map(|l| esc(l))
                .collect::<Vec<_>>()
                .join("<br>")
        )?;
    }
    writeln!(w, "</tbody></table>")?;
    // Messages by API and version.
    writeln!(w, "<h3>messages by API and version</h3><p>")?;
    let parts: Vec<String> = st
        .apis
        .iter()
        .map(|((_, v), a)| format!("{} v{v}: {}", esc(&a.api_name), a.requests + a.responses))
        .collect();
    writeln!(w, "{}</p>", parts.join(" · "))?;
    if !r.notices.is_empty() || r.notices_dropped > 0 {
        writeln!(w, "<h3>notices</h3><ul class=\"notes\">")?;
        for n in r.notices {
            writeln!(w, "<li>{}</li>", esc(n))?;
        }
        if r.notices_dropped > 0 {
            writeln!(
                w,
                "<li>... and {} more notice lines (the closing lines count them all)</li>",
                r.notices_dropped
            )?;
        }
        writeln!(w, "</ul>")?;
    }
    writeln!(w, "</section>")
}

/// The x axis of the time plots and the buckets' x positions (their middles).
fn time_axis(r: &Report<'_>) -> (Axis, Vec<f64>, f64) {
    let g = r.gather;
    let n = g.used_buckets().max(1);
    let width_s = g.width_ns as f64 / 1e9;
    let t0 = g.t0.unwrap_or(0) as f64 / 1e9;
    let ta = TimeAxis {
        origin: t0,
        labels: r.time,
    };
    let xs: Vec<f64> = (0..n).map(|i| (i as f64 + 0.5) * width_s).collect();
    (
        Axis {
            label: ta.axis_label(),
            min: 0.0,
            max: (n as f64 * width_s).max(1e-3),
            ticks: Ticks::Time(ta),
        },
        xs,
        width_s,
    )
}

fn lin(label: &str, max: f64) -> Axis {
    Axis {
        label: label.into(),
        min: 0.0,
        max: if max > 0.0 { max * 1.08 } else { 1.0 },
        ticks: Ticks::Linear,
    }
}

fn figure(w: &mut dyn Write, id: &str, title: &str, svg: &str, caption: &str) -> io::Result<()> {
    writeln!(
        w,
        "<figure id=\"{id}\"><h3>{}</h3>{svg}<figcaption>{}</figcaption></figure>",
        esc(title),
        caption
    )
}

/// The `k` keys with the largest totals, largest first.
fn top<K: Clone + Ord>(totals: &BTreeMap<K, f64>, k: usize) -> Vec<K> {
    let mut v: Vec<(&K, &f64)> = totals.iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
    v.into_iter().take(k).map(|(k, _)| k.clone()).collect()
}

fn plots(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let g = r.gather;
    let (x, xs, width_s) = time_axis(r);
    let n = xs.len();
    let bs = &g.buckets[..n.min(g.buckets.len())];
    let api_name = |k: i16| -> String {
        if k == super::gather::OTHER_API_KEYS {
            "(other api_keys)".into()
        } else if k < 0 {
            "SASL token".into()
        } else {
            g.api_names
                .get(&k)
                .cloned()
                .unwrap_or_else(|| format!("api_key {k}"))
        }
    };
    writeln!(w, "<section id=\"plots\"><h2>Plots</h2>")?;
    writeln!(
        w,
        "<p class=\"intro\">Time runs in {} of {} s (the bucket width doubles as a capture grows, so that a plot has at most {} points a line).</p>",
        crate::text::count(n as u64, "bucket", "buckets"),
        plot::num(width_s),
        super::gather::BUCKETS
    )?;
    // 1. Messages per second by API.
    let mut totals: BTreeMap<i16, f64> = BTreeMap::new();
    for b in bs {
        for (k, (c, _)) in &b.apis {
            *totals.entry(*k).or_default() += *c as f64;
        }
    }
    let keys = top(&totals, 8);
    let mut series = Vec::new();
    let mut ymax = 0f64;
    for (i, k) in keys.iter().enumerate() {
        let pts: Vec<(f64, f64)> = xs
            .iter()
            .zip(bs)
            .map(|(x, b)| (*x, b.apis.get(k).map_or(0, |e| e.0) as f64 / width_s))
            .collect();
        ymax = pts.iter().fold(ymax, |m, p| m.max(p.1));
        series.push(Series {
            name: api_name(*k),
            points: pts,
            style: Style::Line,
            color: i,
        });
    }
    if totals.len() > keys.len() {
        let pts: Vec<(f64, f64)> = xs
            .iter()
            .zip(bs)
            .map(|(x, b)| {
                let c: u64 = b
                    .apis
                    .iter()
                    .filter(|(k, _)| !keys.contains(k))
                    .map(|(_, e)| e.0)
                    .sum();
                (*x, c as f64 / width_s)
            })
            .collect();
        ymax = pts.iter().fold(ymax, |m, p| m.max(p.1));
        series.push(Series {
            name: "other APIs".into(),
            points: pts,
            style: Style::Dashed,
            color: 7,
        });
    }
    let c = Chart {
        title: "messages per second by API".into(),
        x: x.clone(),
        y: lin("messages per second", ymax),
        series,
        marks: Vec::new(),
        mark_legend: Vec::new(),
        left: 0.0,
    };
    figure(
        w,
        "plot-rate",
        "Messages per second by API",
        &plot::svg(&c, plot::HEIGHT),
        &format!(
            "Requests and responses per second in each {} s bucket, by API (the 8 busiest; the rest as \"other APIs\").",
            plot::num(width_s)
        ),
    )?;
    // 2. Latency over time.
    let mut resp_totals: BTreeMap<i16, f64> = BTreeMap::new();
    for b in bs {
        for (k, (_, h)) in &b.apis {
            if h.n > 0 {
                *resp_totals.entry(*k).or_default() += h.n as f64;
            }
        }
    }
    let lkeys = top(&resp_totals, 5);
    let mut series = Vec::new();
    let (mut lo, mut hi) = (f64::MAX, 0f64);
    for (i, k) in lkeys.iter().enumerate() {
        for (q, style, tag) in [(0.5, Style::Line, "p50"), (0.99, Style::Dashed, "p99")] {
            let pts: Vec<(f64, f64)> = xs
                .iter()
                .zip(bs)
                .map(|(x, b)| {
                    let v = b.apis.get(k).and_then(|e| e.1.quantile(q));
                    (*x, v.map_or(f64::NAN, |v| v / 1e6))
                })
                .collect();
            for p in pts.iter().filter(|p| !p.1.is_nan()) {
                lo = lo.min(p.1);
                hi = hi.max(p.1);
            }
            series.push(Series {
                name: format!("{} {tag}", api_name(*k)),
                points: pts,
                style,
                color: i,
            });
        }
    }
    let slow = g.slowest();
    let mut marks = Vec::new();
    let t0 = g.t0.unwrap_or(0);
    for s in &slow {
        let ms = s.latency_ns as f64 / 1e6;
        lo = lo.min(ms);
        hi = hi.max(ms);
        let color = lkeys.iter().position(|k| *k == s.api.0).unwrap_or(7);
        marks.push(Mark {
            x: s.time_ns.saturating_sub(t0) as f64 / 1e9,
            y: ms,
            color,
            title: format!(
                "{} v{} {} ms, connection {}, correlation_id {}",
                s.api_name,
                s.api.1,
                ms_text(s.latency_ns),
                s.connection,
                s.correlation_id
                    .map_or_else(|| "?".into(), |c| c.to_string())
            ),
            href: r
                .pages
                .contains_key(&s.at)
                .then(|| format!("#{}", anchor(s.at))),
        });
    }
    if hi <= 0.0 {
        (lo, hi) = (0.01, 1.0);
    }
    let ly = Axis {
        label: "latency (ms, log scale)".into(),
        min: 10f64.powf(lo.max(1e-4).log10().floor()),
        max: 10f64.powf(hi.max(1e-3).log10().ceil()),
        ticks: Ticks::Log,
    };
    let c = Chart {
        title: "latency over time".into(),
        x: x.clone(),
        y: ly,
        series,
        marks,
        mark_legend: vec![(7, format!("the {} slowest", slow.len()))],
        left: 0.0,
    };
    figure(
        w,
        "plot-latency",
        "Latency over time",
        &plot::svg(&c, plot::HEIGHT),
        &format!(
            "Median (solid) and p99 (dashed) latency per bucket of the 5 APIs with the most paired responses, from log-scale histograms (4 bins per doubling: within 9%); each dot is one of the {} slowest responses (exact), coloured by API, linked to its page when it has one.",
            slow.len()
        ),
    )?;
    // 3. Latency distribution per API.
    let mut per_api: BTreeMap<i16, (String, Latencies)> = BTreeMap::new();
    let mut approximate = false;
    for ((k, _), a) in &g.stats.apis {
        let e = per_api
            .entry(*k)
            .or_insert_with(|| (a.api_name.clone(), Latencies::default()));
        e.1.merge(&a.latencies);
    }
    let mut rows = Vec::new();
    for (_, (name, l)) in per_api {
        let Some(q) = l.quantiles(&[0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0]) else {
            continue;
        };
        approximate |= !l.is_exact();
        let q: Vec<f64> = q.iter().map(|v| *v as f64 / 1e6).collect();
        rows.push(BoxRow {
            name,
            q: [q[0], q[1], q[2], q[3], q[4], q[5], q[6]],
            n: l.len(),
        });
    }
    figure(
        w,
        "plot-distribution",
        "Latency distribution per API",
        &plot::boxes(
            "latency distribution per API",
            "latency (ms, log scale)",
            &rows,
        ),
        if approximate {
            "Per API (all versions): the box spans p25 to p75 with the median as a thick line, the whisker runs from the minimum to p99, the short tick is p90 and the dot the maximum; nearest-rank values over every paired response (hover a row for them), read from a histogram within 1% where the API table marks them ~ (minimum and maximum exact)."
        } else {
            "Per API (all versions): the box spans p25 to p75 with the median as a thick line, the whisker runs from the minimum to p99, the short tick is p90 and the dot the maximum; exact nearest-rank values over every paired response (hover a row for them)."
        },
    )?;
    // 4. Error codes over time by name.
    let mut etot: BTreeMap<String, f64> = BTreeMap::new();
    for b in bs {
        for (k, c) in &b.errors {
            *etot.entry(k.clone()).or_default() += *c as f64;
        }
    }
    let ekeys = top(&etot, 8);
    let mut series = Vec::new();
    let mut ymax = 0f64;
    for (i, k) in ekeys.iter().enumerate() {
        let pts: Vec<(f64, f64)> = xs
            .iter()
            .zip(bs)
            .map(|(x, b)| (*x, b.errors.get(k).copied().unwrap_or(0) as f64 / width_s))
            .collect();
        ymax = pts.iter().fold(ymax, |m, p| m.max(p.1));
        series.push(Series {
            name: k.clone(),
            points: pts,
            style: Style::Line,
            color: i,
        });
    }
    let c = Chart {
        title: "error codes per second by name".into(),
        x: x.clone(),
        y: lin("error codes per second", ymax),
        series,
        marks: Vec::new(),
        mark_legend: Vec::new(),
        left: 0.0,
    };
    figure(
        w,
        "plot-errors",
        "Error codes over time",
        &plot::svg(&c, plot::HEIGHT),
        &if ekeys.is_empty() {
            "No response of these messages carries a non-zero error code.".to_string()
        } else {
            "Non-zero error code fields in responses per second, by error name (the 8 most frequent); one response may carry several (one per partition).".to_string()
        },
    )?;
    // 5. Bytes produced and fetched per topic.
    let mut ttot: BTreeMap<String, f64> = BTreeMap::new();
    for b in bs {
        for (k, (p, f)) in &b.topics {
            *ttot.entry(k.to_string()).or_default() += (*p + *f) as f64;
        }
    }
    let tkeys: Vec<String> = top(&ttot, 5)
        .into_iter()
        .filter(|k| ttot.get(k).is_some_and(|v| *v > 0.0))
        .collect();
    let mut series = Vec::new();
    let mut ymax = 0f64;
    for (i, k) in tkeys.iter().enumerate() {
        for (fetched, style, tag) in [
            (false, Style::Line, "produced"),
            (true, Style::Dashed, "fetched"),
        ] {
            let pts: Vec<(f64, f64)> = xs
                .iter()
                .zip(bs)
                .map(|(x, b)| {
                    let v = b
                        .topics
                        .get(k.as_str())
                        .map_or(0, |e| if fetched { e.1 } else { e.0 });
                    (*x, v as f64 / width_s)
                })
                .collect();
            ymax = pts.iter().fold(ymax, |m, p| m.max(p.1));
            series.push(Series {
                name: format!("{k} {tag}"),
                points: pts,
                style,
                color: i,
            });
        }
    }
    let c = Chart {
        title: "record bytes per second by topic".into(),
        x: x.clone(),
        y: lin("record bytes per second", ymax),
        series,
        marks: Vec::new(),
        mark_legend: Vec::new(),
        left: 0.0,
    };
    figure(
        w,
        "plot-topics",
        "Bytes produced and fetched per topic",
        &plot::svg(&c, plot::HEIGHT),
        &if tkeys.is_empty() {
            "No Produce request or Fetch response of these messages carries records.".to_string()
        } else {
            "Record bytes (the records fields, RecordBatch headers included) per second in Produce requests (solid) and Fetch responses (dashed), for the 5 topics with the most bytes.".to_string()
        },
    )?;
    // 6. Consumer-group events.
    let cats: Vec<String> = GroupEvent::ALL
        .iter()
        .map(|e| e.label().to_string())
        .collect();
    let mut groups: Vec<String> = Vec::new();
    let mut marks = Vec::new();
    for e in &g.events {
        let row = GroupEvent::ALL
            .iter()
            .position(|k| *k == e.kind)
            .unwrap_or(0);
        let color = match (&e.what, e.kind) {
            (Some(gid), GroupEvent::Join | GroupEvent::Sync | GroupEvent::Leave) => {
                match groups.iter().position(|x| x == gid) {
                    Some(i) => i,
                    None => {
                        groups.push(gid.clone());
                        groups.len() - 1
                    }
                }
            }
            _ => 3,
        };
        marks.push(Mark {
            x: e.time_ns.saturating_sub(t0) as f64 / 1e9,
            y: row as f64,
            color,
            title: format!(
                "{} at {}, connection {}{}",
                e.kind.label(),
                time_text(r, e.time_ns),
                e.connection,
                e.what
                    .as_deref()
                    .map(|s| format!(": {s}"))
                    .unwrap_or_default()
            ),
            href: r
                .pages
                .contains_key(&e.at)
                .then(|| format!("#{}", anchor(e.at))),
        });
    }
    let legend: Vec<(usize, String)> = groups
        .iter()
        .take(8)
        .enumerate()
        .map(|(i, gid)| (i, format!("group {gid}")))
        .collect();
    let c = Chart {
        title: "consumer-group events".into(),
        x,
        y: Axis {
            label: "event".into(),
            min: 0.0,
            max: cats.len() as f64,
            ticks: Ticks::Categories(cats),
        },
        series: Vec::new(),
        marks,
        mark_legend: legend,
        left: plot::BOX_LEFT,
    };
    let svg = plot::svg(&c, 250.0);
    figure(
        w,
        "plot-groups",
        "Consumer-group events",
        &svg,
        &format!(
            "JoinGroup, SyncGroup and LeaveGroup requests (coloured by GroupId), Heartbeat and ConsumerGroupHeartbeat responses with an error, and other group-API error responses, on the time axis: a rebalance shows as a Heartbeat error followed by JoinGroup and SyncGroup. {}{}.",
            crate::text::count(g.events_total, "event", "events"),
            if g.events_total > g.events.len() as u64 {
                format!(", the first {} drawn", g.events.len())
            } else {
                String::new()
            }
        ),
    )?;
    writeln!(w, "</section>")
}

fn apis(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let st = &r.gather.stats;
    writeln!(
        w,
        "<section id=\"apis\"><h2>APIs</h2><div class=\"scroll\"><table class=\"t\" id=\"t-apis\">"
    )?;
    thead(
        w,
        &[
            "api",
            "api_key",
            "version",
            "requests",
            "responses",
            "bytes",
            "errors",
            "malformed",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "error names",
        ],
    )?;
    for ((k, v), a) in &st.apis {
        let q = a.latencies.quantiles(&[0.5, 0.9, 0.99, 1.0]);
        let q = |i: usize| q.as_ref().map(|q| q[i]);
        let td_q = |i: usize| {
            if a.latencies.is_exact() {
                td_ms(q(i))
            } else {
                td_ms_approx(q(i))
            }
        };
        let errs: u64 = a.errors.values().sum();
        let names: Vec<String> = a.errors.iter().map(|(n, c)| format!("{n} x{c}")).collect();
        writeln!(
            w,
            "<tr data-api=\"{k}\" data-version=\"{v}\">{}{}{}{}{}{}{}{}{}{}{}{}{}</tr>",
            td(&a.api_name),
            td_n(*k as u64),
            td_n(*v as u64),
            td_n(a.requests),
            td_n(a.responses),
            td_n(a.bytes),
            td_n(errs),
            td_n(a.malformed),
            td_q(0),
            td_q(1),
            td_q(2),
            td_ms(q(3)),
            td(&names.join(", "))
        )?;
    }
    writeln!(w, "</tbody></table></div></section>")
}

fn topics(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let g = r.gather;
    writeln!(w, "<section id=\"topics\"><h2>Topics</h2>")?;
    writeln!(
        w,
        "<p class=\"intro\">Topics named by a partition entry (a topic's name, or its TopicId when no earlier Metadata response named it); bytes and records are those of Produce requests and Fetch responses.{}</p>",
        if g.topics_dropped > 0 {
            format!(" {} partition entries of topics past the first {} are not counted.", g.topics_dropped, super::gather::ROWS_KEEP)
        } else {
            String::new()
        }
    )?;
    writeln!(
        w,
        "<div class=\"scroll\"><table class=\"t\" id=\"t-topics\">"
    )?;
    thead(
        w,
        &[
            "topic",
            "messages",
            "partitions",
            "produced bytes",
            "produced records",
            "fetched bytes",
            "fetched records",
            "partition errors",
        ],
    )?;
    for (t, row) in &g.topics {
        writeln!(
            w,
            "<tr>{}{}{}{}{}{}{}{}</tr>",
            td(t),
            td_n(row.messages),
            td_n(row.partitions.len() as u64),
            td_n(row.produced.0),
            td_n(row.produced.1),
            td_n(row.fetched.0),
            td_n(row.fetched.1),
            td_n(row.errors)
        )?;
    }
    writeln!(w, "</tbody></table></div></section>")
}

fn clients(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let g = r.gather;
    writeln!(w, "<section id=\"clients\"><h2>Clients</h2>")?;
    writeln!(
        w,
        "<p class=\"intro\">By client_id (the request header's); software names and versions are those the client's ApiVersions requests give (v3 and later, KIP-511).</p><div class=\"scroll\"><table class=\"t\" id=\"t-clients\">"
    )?;
    thead(
        w,
        &[
            "client_id",
            "software",
            "connections",
            "requests",
            "request bytes",
            "error codes",
        ],
    )?;
    for (id, c) in &g.clients {
        let sw: Vec<String> = c
            .software
            .iter()
            .map(|(n, v)| format!("{n} {v}").trim().to_string())
            .collect();
        writeln!(
            w,
            "<tr>{}{}{}{}{}{}</tr>",
            td(if id.is_empty() { "(none)" } else { id }),
            td(&sw.join(", ")),
            td_n(c.connections.len() as u64),
            td_n(c.requests),
            td_n(c.bytes),
            td_n(c.errors)
        )?;
    }
    writeln!(w, "</tbody></table></div></section>")
}

fn connections(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let g = r.gather;
    writeln!(w, "<section id=\"connections\"><h2>Connections</h2><div class=\"scroll\"><table class=\"t\" id=\"t-connections\">")?;
    thead(
        w,
        &[
            "connection",
            "client",
            "broker",
            "client_id",
            "software",
            "messages",
            "bytes to broker",
            "bytes to client",
            "error codes",
            "first",
            "duration s",
        ],
    )?;
    for (n, ((cap, id), c)) in g.stats.connections.iter().enumerate() {
        if n >= super::gather::ROWS_KEEP {
            writeln!(
                w,
                "<tr><td colspan=\"11\">... and {} more connections</td></tr>",
                g.stats.connections.len() - n
            )?;
            break;
        }
        let x = g.conns.get(&(*cap, u64::from(*id)));
        let name = if r.captures.len() > 1 {
            format!("{}#{id}", cap + 1)
        } else {
            id.to_string()
        };
        let sw = x
            .and_then(|x| x.software.as_ref())
            .map(|(a, b)| format!("{a} {b}"))
            .unwrap_or_default();
        let span = x.map_or((0, 0), |x| x.span);
        writeln!(
            w,
            "<tr><td data-v=\"{}\">{}</td>{}{}{}{}{}{}{}{}<td data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{:.3}</td></tr>",
            u64::from(*cap) << 32 | u64::from(*id),
            esc(&name),
            td(&c.client),
            td(&c.server),
            td(c.client_id.as_deref().unwrap_or("-")),
            td(&sw),
            td_n(c.messages),
            td_n(x.map_or(0, |x| x.bytes.0)),
            td_n(x.map_or(0, |x| x.bytes.1)),
            td_n(x.map_or(0, |x| x.errors)),
            span.0,
            esc(&time_text(r, span.0)),
            span.1.saturating_sub(span.0),
            span.1.saturating_sub(span.0) as f64 / 1e9
        )?;
    }
    writeln!(w, "</tbody></table></div></section>")
}

fn errors(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let g = r.gather;
    writeln!(w, "<section id=\"errors\"><h2>Errors</h2>")?;
    writeln!(
        w,
        "<h3>error names</h3><table class=\"t\" id=\"t-error-names\">"
    )?;
    thead(w, &["error", "count", "APIs", "first"])?;
    for (name, e) in &g.error_names {
        let apis: Vec<&str> = e.apis.iter().map(String::as_str).collect();
        let first = e
            .first
            .map(|at| link(r, at, &format!("message {}", msg_label(r, at))))
            .unwrap_or_default();
        writeln!(
            w,
            "<tr>{}{}{}<td>{first}</td></tr>",
            td(name),
            td_n(e.count),
            td(&apis.join(", "))
        )?;
    }
    writeln!(w, "</tbody></table>")?;
    writeln!(
        w,
        "<h3>error responses</h3><p class=\"intro\">{} a non-zero error code{}.</p><div class=\"scroll\"><table class=\"t\" id=\"t-error-responses\">",
        crate::text::count(g.error_responses, "response carries", "responses carry"),
        if g.error_responses > g.error_msgs.len() as u64 {
            format!("; the first {} are listed", g.error_msgs.len())
        } else {
            String::new()
        }
    )?;
    thead(
        w,
        &[
            "message",
            "time",
            "api",
            "connection",
            "latency ms",
            "errors",
        ],
    )?;
    for e in &g.error_msgs {
        writeln!(
            w,
            "<tr><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td>{}{}{}{}</tr>",
            e.at.1,
            link(r, e.at, &msg_label(r, e.at)),
            e.time_ns,
            esc(&time_text(r, e.time_ns)),
            td(&e.api),
            td_n(u64::from(e.connection)),
            td_ms(e.latency_ns),
            td(&e.errors.join(", "))
        )?;
    }
    writeln!(w, "</tbody></table></div></section>")
}

fn slowest(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let g = r.gather;
    writeln!(
        w,
        "<section id=\"slowest\"><h2>Slowest 50 request/response pairs</h2><div class=\"scroll\"><table class=\"t\" id=\"t-slowest\">"
    )?;
    thead(
        w,
        &[
            "response",
            "time",
            "api",
            "version",
            "connection",
            "correlation_id",
            "latency ms",
            "errors",
        ],
    )?;
    for s in g.slowest().iter().take(50) {
        writeln!(
            w,
            "<tr data-message=\"{}\"><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td>{}{}{}{}{}{}</tr>",
            anchor(s.at),
            s.at.1,
            link(r, s.at, &msg_label(r, s.at)),
            s.time_ns,
            esc(&time_text(r, s.time_ns)),
            td(&s.api_name),
            td_n(s.api.1 as u64),
            td_n(u64::from(s.connection)),
            td(&s.correlation_id.map_or_else(|| "?".into(), |c| c.to_string())),
            td_ms(Some(s.latency_ns)),
            td(&s.errors.join(", "))
        )?;
    }
    writeln!(w, "</tbody></table></div></section>")
}

fn pages(w: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    writeln!(
        w,
        "<section class=\"pages\" id=\"pages\"><h2>Messages</h2><p class=\"intro\">{} message pages (at most --max-pages {}: the slowest responses, the error responses and the first request of each API and version, each with the other half of its pair). Hover a tree row to see its bytes, or a byte to see its row.</p>",
        r.pages.len(),
        r.max_pages
    )?;
    if !r.page_notes.is_empty() {
        writeln!(w, "<ul class=\"notes\">")?;
        for n in r.page_notes {
            writeln!(w, "<li>{}</li>", esc(n))?;
        }
        writeln!(w, "</ul>")?;
    }
    let mut done = BTreeSet::new();
    for (at, p) in r.pages {
        if done.contains(at) {
            continue;
        }
        let mate = p
            .mate
            .filter(|m| r.pages.contains_key(m) && !done.contains(m));
        let mut group = vec![*at];
        if let Some(m) = mate {
            group.push(m);
        }
        group.sort();
        let class = if group.len() == 2 { "pair" } else { "single" };
        writeln!(w, "<div class=\"{class}\">")?;
        for x in &group {
            done.insert(*x);
            let Some(p) = r.pages.get(x) else { continue };
            let mut head = String::new();
            let _ = write!(
                head,
                "<h2>message {}: {}</h2>",
                esc(&msg_label(r, *x)),
                esc(&p.short)
            );
            writeln!(
                w,
                "<section class=\"msg\" id=\"{}\">{head}<div class=\"title\">{}</div>",
                anchor(*x),
                esc(&p.title)
            )?;
            if p.cut {
                writeln!(
                    w,
                    "<p class=\"intro cut\">Its whole page is over {} KiB: the tree shows 3 elements an array and 8 levels (`kwire read -V` shows it all).</p>",
                    super::pages::PAGE_BYTES >> 10
                )?;
            }
            w.write_all(p.html.as_bytes())?;
            writeln!(w, "</section>")?;
        }
        writeln!(w, "</div>")?;
    }
    writeln!(w, "</section>")
}
