//! Drawing: the three panes, the status bar and prompt, the views.

use super::app::{App, Pane, Screen, StatsKey, StatsText};
use crate::render::text::offset_width;
use crate::tree::Region;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};
use ratatui::Frame;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A foreground colour, or nothing without colour.
fn fg(app: &App, c: Color) -> Style {
    if app.opts.color {
        Style::default().fg(c)
    } else {
        Style::default()
    }
}

/// The error colour (bold without colour).
fn error_style(app: &App) -> Style {
    if app.opts.color {
        Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
    } else {
        Style::default().add_modifier(Modifier::BOLD)
    }
}

/// A region's colour, as the reference pages colour it (the 16 ANSI colours only).
fn region_style(app: &App, r: Option<Region>) -> Style {
    let Some(r) = r else {
        return Style::default();
    };
    if !app.opts.color {
        return Style::default();
    }
    match r {
        Region::Frame => Style::default().fg(Color::DarkGray),
        Region::Header => Style::default().fg(Color::Cyan),
        Region::RequestBody => Style::default().fg(Color::Green),
        Region::ResponseBody => Style::default().fg(Color::Blue),
        Region::RecordBatch => Style::default().fg(Color::Yellow),
        Region::Record => Style::default().fg(Color::Magenta),
        Region::TaggedFields => Style::default()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::UNDERLINED),
    }
}

/// Draws the whole screen.
pub fn draw(f: &mut Frame<'_>, app: &mut App) {
    let area = f.area();
    let prompt_rows = u16::from(app.prompt.is_some());
    let [body, prompt, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(prompt_rows),
        Constraint::Length(1),
    ])
    .areas(area);
    match app.screen {
        Screen::Main => main(f, app, body),
        Screen::Help => help(f, app, body),
        Screen::Notices => notices(f, app, body),
        Screen::Connections => connections(f, app, body),
        Screen::Stats => stats(f, app, body),
    }
    if let Some(p) = &app.prompt {
        let head = if p.search {
            "search (text, re:REGEX, hex:BYTES): "
        } else {
            "filter: "
        };
        let mut spans = vec![
            Span::styled(head, Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(p.text.clone()),
            Span::styled(" ", Style::default().add_modifier(Modifier::REVERSED)),
        ];
        if let Some(e) = &p.error {
            spans.push(Span::styled(format!("   error: {e}"), error_style(app)));
        }
        f.render_widget(Paragraph::new(Line::from(spans)), prompt);
    }
    f.render_widget(Paragraph::new(status_line(app)), status);
}

fn status_line(app: &App) -> Line<'static> {
    let total = app.count;
    let shown = app.shown_len();
    let mut parts = vec![Span::styled(
        format!("{shown} of {total} messages"),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    if let super::app::Shown::Filtered { text, scan } = &app.shown {
        let scanned = scan.scanned.load(std::sync::atomic::Ordering::Relaxed);
        let mut t = format!(" | filter: {text}");
        let stage = scan.stage();
        if !stage.is_empty() {
            t.push_str(&format!(" ({stage})"));
        } else if !scan.done.load(std::sync::atomic::Ordering::Relaxed) {
            t.push_str(&format!(" (looked at {scanned})"));
        }
        parts.push(Span::raw(t));
    }
    let p = &app.progress;
    let reading = if let Some(e) = &p.error {
        format!(" | {e}")
    } else if let Some(l) = app.src.live() {
        format!(" | {l}")
    } else if p.following {
        " | following the capture's end".to_string()
    } else if p.done {
        String::new()
    } else if p.bytes_total > 0 {
        format!(
            " | reading {}% ({} of {} MB)",
            p.bytes_read.saturating_mul(100) / p.bytes_total.max(1),
            p.bytes_read >> 20,
            p.bytes_total >> 20
        )
    } else {
        format!(" | reading ({} MB)", p.bytes_read >> 20)
    };
    if p.error.is_some() {
        parts.push(Span::styled(reading, error_style(app)));
    } else {
        parts.push(Span::raw(reading));
    }
    if !app.notice.is_empty() {
        parts.push(Span::raw(format!(" | {}", app.notice)));
    }
    parts.push(Span::styled(" | ? keys", fg(app, Color::DarkGray)));
    Line::from(parts)
}

/// A pane's title row: `> Messages ----`, the focused one marked and bold.
fn title(f: &mut Frame<'_>, app: &App, area: Rect, pane: Pane, text: String) {
    let focused = app.focus == pane;
    let mark = if focused { ">" } else { " " };
    let mut style = fg(app, Color::Cyan);
    if focused {
        style = style.add_modifier(Modifier::BOLD);
    }
    let t = format!("{mark} {text} ");
    let fill = usize::from(area.width).saturating_sub(t.chars().count());
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(t, style),
            Span::styled("-".repeat(fill), fg(app, Color::DarkGray)),
        ])),
        area,
    );
}

fn main(f: &mut Frame<'_>, app: &mut App, area: Rect) {
    let (list, tree, bytes) = if app.zoom {
        let z = Some(area);
        match app.focus {
            Pane::List => (z, None, None),
            Pane::Tree => (None, z, None),
            Pane::Bytes => (None, None, z),
        }
    } else {
        let [a, b, c] = Layout::vertical([
            Constraint::Percentage(35),
            Constraint::Percentage(35),
            Constraint::Percentage(30),
        ])
        .areas(area);
        (Some(a), Some(b), Some(c))
    };
    app.areas = Default::default();
    if let Some(a) = list {
        list_pane(f, app, a);
    }
    if let Some(a) = tree {
        tree_pane(f, app, a);
    }
    if let Some(a) = bytes {
        bytes_pane(f, app, a);
    }
}

/// Splits off a pane's title row.
fn split(area: Rect) -> (Rect, Rect) {
    let [t, b] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    (t, b)
}

/// Moves `top` so that `sel` is within `height` rows from it.
fn scroll(top: &mut usize, sel: usize, height: usize) {
    if height == 0 {
        return;
    }
    if sel < *top {
        *top = sel;
    } else if sel >= *top + height {
        *top = sel + 1 - height;
    }
}

fn list_pane(f: &mut Frame<'_>, app: &mut App, area: Rect) {
    let (t, body) = split(area);
    app.areas.list = body;
    let n = app.shown_len();
    title(f, app, t, Pane::List, format!("Messages ({n})"));
    let h = usize::from(body.height);
    let mut top = app.top;
    scroll(&mut top, app.sel, h);
    app.top = top;
    let mut lines = Vec::with_capacity(h);
    for k in top..(top + h).min(n) {
        let Some(i) = app.shown_at(k) else { break };
        let l = app.line(i);
        let mut style = if l.error {
            error_style(app)
        } else {
            Style::default()
        };
        if k == app.sel {
            style = style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::styled(l.text, style));
    }
    if n == 0 {
        let p = &app.progress;
        let t = if p.done {
            if app.filter_text().is_some() {
                "(no message matches the filter)"
            } else {
                "(no Kafka message in the capture: see the notices, L)"
            }
        } else {
            "(reading...)"
        };
        lines.push(Line::styled(t, fg(app, Color::DarkGray)));
    }
    f.render_widget(Paragraph::new(lines), body);
}

fn tree_pane(f: &mut Frame<'_>, app: &mut App, area: Rect) {
    let (t, body) = split(area);
    app.areas.tree = body;
    let Some((i, v)) = &app.view else {
        title(f, app, t, Pane::Tree, "Tree".into());
        return;
    };
    let frames = app
        .src
        .meta(*i)
        .map(|m| format!(" (message {} of the capture, {} bytes)", i + 1, m.size))
        .unwrap_or_default();
    title(f, app, t, Pane::Tree, format!("Tree{frames}"));
    let h = usize::from(body.height);
    let mut top = app.tree_top;
    scroll(&mut top, app.tree_sel, h);
    let mut lines = Vec::with_capacity(h);
    for (k, &r) in v.visible.iter().enumerate().skip(top).take(h) {
        let row = &v.rows[r];
        let mut style = if app.row_is_error(r) {
            error_style(app)
        } else if row.kind == super::tree::RowKind::More
            || row.kind == super::tree::RowKind::Warning
        {
            fg(app, Color::Yellow)
        } else {
            Style::default()
        };
        if k == app.tree_sel {
            style = style.add_modifier(Modifier::REVERSED);
        }
        let mark = if v.folded[r] { "[+] " } else { "" };
        lines.push(Line::from(vec![
            Span::styled(row.prefix.clone(), fg(app, Color::DarkGray)),
            Span::styled(format!("{mark}{}", row.text), style),
        ]));
    }
    app.tree_top = top;
    f.render_widget(Paragraph::new(lines), body);
}

/// Column of the first hex digit of byte column 0, for offsets `w` digits wide.
fn hex_start(w: usize) -> usize {
    w + 2
}

/// Which byte column (0..16) the screen column `col` of the bytes pane shows, if any.
pub fn byte_at_column(app: &App, col: usize) -> Option<usize> {
    let len = app
        .view
        .as_ref()
        .map_or(0, |(_, v)| v.buffers[app.buffer as usize].len());
    let w = offset_width(len);
    let hs = hex_start(w);
    if col >= hs && col < hs + 48 {
        let c = (col - hs) / 3;
        return ((col - hs) % 3 < 2).then_some(c);
    }
    let ascii = hs + 48 + 1;
    (col >= ascii && col < ascii + 16).then(|| col - ascii)
}

fn bytes_pane(f: &mut Frame<'_>, app: &mut App, area: Rect) {
    let (t, body) = split(area);
    app.areas.bytes = body;
    let Some((_, v)) = &app.view else {
        title(f, app, t, Pane::Bytes, "Bytes".into());
        return;
    };
    let id = app.buffer as usize;
    let buf = &v.buffers[id];
    let w = offset_width(buf.len());
    let what = if id == 0 {
        format!(
            "Bytes: the frame, {} bytes, cursor 0x{:0w$x}",
            buf.len(),
            app.cursor
        )
    } else {
        format!(
            "Bytes: decompressed buffer {id}, {} bytes, cursor 0x{:0w$x}",
            buf.len(),
            app.cursor
        )
    };
    let span = app.selected_span();
    let sel = match span {
        Some((b, off, len)) if b as usize == id => off..off + len,
        _ => 0..0,
    };
    let legend = if app.opts.color {
        "  (frame, header, request body, response body, record batch, record, tagged fields)"
    } else {
        ""
    };
    title(f, app, t, Pane::Bytes, format!("{what}{legend}"));
    let h = usize::from(body.height);
    let mut top = app.bytes_top;
    let rows = buf.len().div_ceil(16);
    // The cursor's row in view, and as much of the selected node as fits.
    scroll(&mut top, sel.end.saturating_sub(1).max(sel.start) / 16, h);
    scroll(&mut top, sel.start / 16, h);
    scroll(&mut top, app.cursor / 16, h);
    app.bytes_top = top;
    let regions = &v.regions[id];
    let errors = &v.errors[id];
    let mut lines = Vec::with_capacity(h);
    for row in top..(top + h).min(rows) {
        let base = row * 16;
        let mut spans = vec![Span::styled(
            format!("{base:0w$x}  "),
            fg(app, Color::DarkGray),
        )];
        let mut ascii = Vec::with_capacity(16);
        for c in 0..16 {
            let at = base + c;
            let Some(&b) = buf.get(at) else {
                spans.push(Span::raw("   "));
                continue;
            };
            let mut st = if errors.get(at).copied().unwrap_or(false) {
                if app.opts.color {
                    Style::default().fg(Color::White).bg(Color::Red)
                } else {
                    Style::default().add_modifier(Modifier::BOLD)
                }
            } else {
                region_style(app, regions.get(at).copied().flatten())
            };
            if sel.contains(&at) {
                st = st.add_modifier(Modifier::REVERSED);
            }
            if at == app.cursor && app.focus == Pane::Bytes {
                st = st.add_modifier(Modifier::UNDERLINED | Modifier::BOLD);
            }
            spans.push(Span::styled(format!("{b:02x}"), st));
            spans.push(Span::raw(" "));
            let ch = if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '.'
            };
            ascii.push(Span::styled(ch.to_string(), st));
        }
        spans.push(Span::raw(" "));
        spans.extend(ascii);
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), body);
}

fn text_view(f: &mut Frame<'_>, app: &mut App, area: Rect, head: &str, text: Vec<Line<'static>>) {
    let total = text.len();
    text_window(f, app, area, head, total, |skip, take| {
        text.into_iter().skip(skip).take(take).collect()
    });
}

/// [`text_view`] of a text's lines, only those in view made into [`Line`]s (a
/// statistics text may hold 200,000 lines, made again at each key).
fn text_view_str(f: &mut Frame<'_>, app: &mut App, area: Rect, head: &str, text: &str) {
    let total = text.lines().count();
    text_window(f, app, area, head, total, |skip, take| {
        text.lines()
            .skip(skip)
            .take(take)
            .map(|l| Line::raw(l.to_string()))
            .collect()
    });
}

/// A titled text of `total` lines, scrolled to `app.view_sel` (kept in range): `window`
/// gives the lines in view (from the first to show, as many as fit). They are cut out
/// here, not by the paragraph's own scroll, which counts in u16: a statistics text
/// (100,000 connections, as many TLS rows) runs past 65,535 lines.
fn text_window(
    f: &mut Frame<'_>,
    app: &mut App,
    area: Rect,
    head: &str,
    total: usize,
    window: impl FnOnce(usize, usize) -> Vec<Line<'static>>,
) {
    let (t, body) = split(area);
    let focused_title = Line::styled(
        format!("{head} (Esc: back)"),
        fg(app, Color::Cyan).add_modifier(Modifier::BOLD),
    );
    f.render_widget(Paragraph::new(focused_title), t);
    let height = usize::from(body.height);
    if app.view_end {
        app.view_sel = usize::MAX;
    }
    app.view_sel = app.view_sel.min(total.saturating_sub(height));
    f.render_widget(Paragraph::new(window(app.view_sel, height)), body);
}

fn help(f: &mut Frame<'_>, app: &mut App, area: Rect) {
    let lines = super::HELP
        .lines()
        .map(|l| Line::raw(l.to_string()))
        .collect();
    text_view(f, app, area, "Help", lines);
}

fn notices(f: &mut Frame<'_>, app: &mut App, area: Rect) {
    let (n, more) = app.src.notices();
    let mut lines: Vec<Line<'static>> = n.into_iter().map(Line::raw).collect();
    if more > 0 {
        lines.push(Line::raw(format!("... and {more} more notices")));
    }
    if lines.is_empty() {
        lines.push(Line::raw("no notices"));
    }
    text_view(f, app, area, "Notices", lines);
}

fn overview_progress(app: &App) -> String {
    scan_progress(app, app.overview.as_ref())
}

fn scan_progress(
    app: &App,
    scan: Option<&std::sync::Arc<super::scan::Scan<super::scan::Overview>>>,
) -> String {
    match scan {
        Some(o) if !o.stage().is_empty() => format!(", {}", o.stage()),
        Some(o) if !o.done.load(std::sync::atomic::Ordering::Relaxed) => format!(
            ", counting: {} of {} messages",
            o.scanned.load(std::sync::atomic::Ordering::Relaxed),
            app.src.count()
        ),
        _ => String::new(),
    }
}

fn connections(f: &mut Frame<'_>, app: &mut App, area: Rect) {
    let (t, body) = split(area);
    let conns = app.connections();
    let head = format!(
        "Connections ({}{}; Enter: only that connection, Esc: back)",
        conns.len(),
        overview_progress(app)
    );
    f.render_widget(
        Paragraph::new(Line::styled(
            head,
            fg(app, Color::Cyan).add_modifier(Modifier::BOLD),
        )),
        t,
    );
    if app.view_end {
        app.view_sel = usize::MAX;
    }
    app.view_sel = app.view_sel.min(conns.len().saturating_sub(1));
    let h = usize::from(body.height).saturating_sub(1);
    let mut top = 0;
    scroll(&mut top, app.view_sel, h);
    let mut lines = vec![Line::styled(
        format!(
            "{:>5}  {:<24} {:<24} {:<20} {:>8} {:>10}  tls",
            "conn", "client", "server", "client_id", "messages", "bytes"
        ),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    for (k, c) in conns.iter().enumerate().skip(top).take(h) {
        let mut st = Style::default();
        if k == app.view_sel {
            st = st.add_modifier(Modifier::REVERSED);
        }
        let id = if c.capture > 0 {
            format!("{}#{}", c.capture + 1, c.connection)
        } else {
            c.connection.to_string()
        };
        lines.push(Line::styled(
            format!(
                "{:>5}  {:<24} {:<24} {:<20} {:>8} {:>10}  {}",
                id,
                c.client,
                c.server,
                c.client_id.as_deref().unwrap_or("-"),
                c.messages,
                c.bytes,
                c.tls.as_deref().unwrap_or("plaintext (or not decrypted)")
            ),
            st,
        ));
    }
    f.render_widget(Paragraph::new(lines), body);
}

fn stats(f: &mut Frame<'_>, app: &mut App, area: Rect) {
    let (scan, only) = app.stats_overview();
    let (scan, only) = (scan.cloned(), only.map(str::to_owned));
    let key = scan.as_ref().map(|o| StatsKey {
        scan: Arc::downgrade(o),
        // read before the counts: the pass counts a message, then says so here
        scanned: o.scanned.load(Ordering::Relaxed),
        done: o.done.load(Ordering::Relaxed),
        tls: app.src.tls_count(),
    });
    let made = match (&scan, key) {
        (Some(o), Some(key)) => match &app.stats_text {
            Some((k, made)) if k.same(&key) => Arc::clone(made),
            _ => {
                // `kwire stats` (with `-Y` too) lists every TLS connection the reading
                // summed up.
                let (tls, tls_past_cap) = app.src.tls_table();
                let o = o.found.lock().unwrap_or_else(|e| e.into_inner());
                let mut b = Vec::new();
                let _ = o.stats.write_text_with_tls(&mut b, &tls, tls_past_cap);
                let made = Arc::new(StatsText {
                    text: String::from_utf8_lossy(&b).into_owned(),
                    per_second: o.per_second.clone(),
                });
                drop(o);
                app.stats_text = Some((key, Arc::clone(&made)));
                made
            }
        },
        _ => Arc::default(),
    };
    let (text, per_second) = (&made.text, &made.per_second);
    let [top, chart] =
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
    let head = match only {
        Some(t) => format!(
            "Statistics of the messages `{t}` keeps{}",
            scan_progress(app, scan.as_ref())
        ),
        None => format!("Statistics{}", scan_progress(app, scan.as_ref())),
    };
    text_view_str(f, app, top, &head, text);
    let points: Vec<(f64, f64)> = per_second
        .iter()
        .enumerate()
        .map(|(s, &n)| (s as f64, n as f64))
        .collect();
    let max_y = per_second.iter().copied().max().unwrap_or(0).max(1) as f64;
    let max_x = (per_second.len().max(2) - 1) as f64;
    let data = [Dataset::default()
        .name("messages per second")
        .graph_type(GraphType::Line)
        .marker(ratatui::symbols::Marker::Braille)
        .style(fg(app, Color::Green))
        .data(&points)];
    let c = Chart::new(data.to_vec())
        .x_axis(
            Axis::default()
                .title("seconds since the first message")
                .bounds([0.0, max_x])
                .labels(["0".to_string(), format!("{max_x:.0}")]),
        )
        .y_axis(
            Axis::default()
                .title("messages/s")
                .bounds([0.0, max_y])
                .labels(["0".to_string(), format!("{max_y:.0}")]),
        );
    f.render_widget(c, chart);
}
