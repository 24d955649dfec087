//! A page as one self-contained HTML file (inline CSS and a little inline script,
//! nothing fetched), and the HTML index.
//!
//! The byte grid is a table whose cells carry their region's colour (the regions the
//! terminal colours: frame, rpc header, request body, response body, RecordBatch,
//! Record, tagged_fields), with a legend. Each tree row carries the span of its bytes
//! (`data-g` grid, `data-o` offset, `data-l` length, `data-d` depth): hovering or
//! selecting a row highlights its bytes, and hovering a byte highlights the deepest row
//! that covers it (clicking it selects that row).

use std::io::{self, Write};

use super::{groups, page_options, page_stem, runs_of, runs_text, IndexEntry, Page, Side};
use crate::render::{text as rtext, RenderOptions};
use crate::schema::Schema;
use crate::tree::{Message, Node, Region};

/// `s` with `&`, `<`, `>`, `"` and `'` escaped.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    esc_into(&mut o, s);
    o
}

/// [`esc`] appended to `o`.
pub fn esc_into(o: &mut String, s: &str) {
    // Most texts (names, types, values, offsets) hold none of the five: one copy.
    let special = |c: &u8| matches!(c, b'&' | b'<' | b'>' | b'"' | b'\'');
    let Some(first) = s.as_bytes().iter().position(special) else {
        o.push_str(s);
        return;
    };
    // The five are ASCII, so `first` is a character boundary.
    o.push_str(&s[..first]);
    for c in s[first..].chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
}

/// An integer's decimal digits appended to `o`.
fn push_int(o: &mut String, v: impl itoa::Integer) {
    o.push_str(itoa::Buffer::new().format(v));
}

/// The CSS class of a region.
pub fn region_class(r: Region) -> &'static str {
    match r {
        Region::Frame => "rg-frame",
        Region::Header => "rg-header",
        Region::RequestBody => "rg-request",
        Region::ResponseBody => "rg-response",
        Region::RecordBatch => "rg-batch",
        Region::Record => "rg-record",
        Region::TaggedFields => "rg-tagged",
    }
}

const CSS: &str = r#"
:root { --fg:#1d2330; --muted:#5b6475; --line:#d7dbe3; --hl:#e8590c; --sel:#1c7ed6; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       margin: 0 auto; padding: 1.2rem 1.5rem 3rem; max-width: 1400px; background: #fff; }
h1 { font-size: 1.8rem; margin: .2rem 0 .6rem; }
h2 { font-size: 1.35rem; margin: 2rem 0 .3rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
h3 { font-size: .95rem; text-transform: lowercase; color: var(--muted); margin: 1rem 0 .3rem; font-weight: 600; }
a { color: #1864ab; }
p.intro { max-width: 60rem; }
table.meta { border-collapse: collapse; margin: .6rem 0 1rem; }
table.meta th { text-align: left; font-weight: 600; padding: .15rem 1.2rem .15rem 0; color: var(--muted); }
table.meta td { padding: .15rem 0; font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 14px; }
.legend { display: flex; flex-wrap: wrap; gap: .4rem .9rem; margin: .4rem 0 .8rem; font-size: 13px; }
.legend span.sw { display: inline-block; width: 1.1em; height: 1.1em; vertical-align: -.2em; margin-right: .3em;
                  border: 1px solid #0002; border-radius: 3px; }
.title { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-weight: 600; margin: .3rem 0 .6rem; }
.panes { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
.gridpane { position: sticky; top: .5rem; flex: 0 0 auto; max-width: 36rem; }
.gridpane .runs { margin-top: .3rem; }
.treepane { flex: 1 1 40rem; min-width: 0; overflow-x: auto; }
.caption { font-size: 13px; color: var(--muted); margin-bottom: .2rem; }
table.grid { border-collapse: separate; border-spacing: 2px; font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 13px; }
table.grid th { font-weight: normal; color: var(--muted); padding: 0 .25rem; text-align: center; }
table.grid th.off { text-align: right; padding-right: .5rem; }
table.grid td.b { padding: .1rem .3rem; border-radius: 3px; text-align: center; cursor: pointer; border: 1px solid transparent; }
table.grid td.b.hl { background: var(--hl) !important; color: #fff; font-weight: 700; }
table.grid td.b.sel { border-color: var(--sel); box-shadow: inset 0 0 0 1px var(--sel); }
.rg-frame { background: #dee2e6; }
.rg-header { background: #99e9f2; }
.rg-request { background: #b2f2bb; }
.rg-response { background: #a5d8ff; }
.rg-batch { background: #ffec99; }
.rg-record { background: #fcc2d7; }
.rg-tagged { background: #e9ecef; text-decoration: underline; }
.tree { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 13px; line-height: 1.5; }
.tree .row { white-space: pre; padding: 0 .4rem; border-left: 4px solid transparent; cursor: pointer; border-radius: 2px; }
.tree .row:focus { outline: none; }
.tree .row.hl { background: #fff4e6; border-left-color: var(--hl); }
.tree .row.sel { background: #e7f5ff; border-left-color: var(--sel); }
.tree .c { color: #adb5bd; }
.tree .n { font-weight: 700; }
.tree .s { color: var(--muted); }
.tree .d { color: #2b8a3e; }
.tree .err { color: #c92a2a; font-weight: 700; }
.tree .dim { color: var(--muted); }
table.grid tr.gap td { color: var(--muted); font-style: italic; white-space: normal; }
pre.json { background: #f8f9fa; border: 1px solid var(--line); border-radius: 4px; padding: .7rem .9rem; overflow-x: auto; font-size: 13px; }
table.index { border-collapse: collapse; margin: .4rem 0 1rem; }
table.index th, table.index td { padding: .2rem .8rem .2rem 0; text-align: left; }
table.index td.num { text-align: right; font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; }
"#;

const SCRIPT: &str = r#"
(function () {
  'use strict';
  var rows = Array.prototype.slice.call(document.querySelectorAll('.tree .row[data-g]'));
  var grids = {};
  Array.prototype.forEach.call(document.querySelectorAll('table.grid'), function (t) {
    // Cell i is byte i; a collapsed row (tr.gap) stands for data-n bytes without cells.
    var cells = [], i = 0;
    Array.prototype.forEach.call(t.querySelectorAll('td.b, tr.gap'), function (c) {
      if (c.tagName === 'TR') { i += +c.getAttribute('data-n'); } else { cells[i++] = c; }
    });
    grids[t.getAttribute('data-g')] = cells;
  });
  function mark(row, cls, on) {
    if (!row) { return; }
    var cells = grids[row.getAttribute('data-g')] || [];
    var o = +row.getAttribute('data-o'), l = +row.getAttribute('data-l');
    for (var i = o; i < o + l && i < cells.length; i++) { if (cells[i]) { cells[i].classList.toggle(cls, on); } }
    row.classList.toggle(cls, on);
  }
  var selected = null;
  function select(row) {
    if (selected === row) { return; }
    mark(selected, 'sel', false);
    selected = row;
    mark(selected, 'sel', true);
  }
  rows.forEach(function (r) {
    r.addEventListener('mouseenter', function () { mark(r, 'hl', true); });
    r.addEventListener('mouseleave', function () { mark(r, 'hl', false); });
    r.addEventListener('focus', function () { select(r); });
    r.addEventListener('click', function () { r.focus(); });
    r.addEventListener('keydown', function (e) {
      var i = rows.indexOf(r);
      if (e.key === 'ArrowDown' && i + 1 < rows.length) { rows[i + 1].focus(); e.preventDefault(); }
      if (e.key === 'ArrowUp' && i > 0) { rows[i - 1].focus(); e.preventDefault(); }
    });
  });
  Object.keys(grids).forEach(function (g) {
    var rs = rows.filter(function (r) { return r.getAttribute('data-g') === g && +r.getAttribute('data-l') > 0; });
    grids[g].forEach(function (c, i) {
      var hovered = null;
      c.addEventListener('mouseenter', function () {
        var best = null, bd = -1;
        rs.forEach(function (r) {
          var o = +r.getAttribute('data-o'), l = +r.getAttribute('data-l'), d = +r.getAttribute('data-d');
          if (i >= o && i < o + l && d >= bd) { best = r; bd = d; }
        });
        hovered = best;
        mark(hovered, 'hl', true);
      });
      c.addEventListener('mouseleave', function () { mark(hovered, 'hl', false); hovered = null; });
      c.addEventListener('click', function () { if (hovered) { hovered.focus(); } });
    });
  });
})();
"#;

fn head(w: &mut dyn Write, title: &str) -> io::Result<()> {
    head_with(w, title, "")
}

/// The document head with the page CSS, then `extra_css`.
fn head_with(w: &mut dyn Write, title: &str, extra_css: &str) -> io::Result<()> {
    writeln!(w, "<!DOCTYPE html>")?;
    writeln!(w, "<html lang=\"en\">")?;
    writeln!(w, "<head>")?;
    writeln!(w, "<meta charset=\"utf-8\">")?;
    writeln!(
        w,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(w, "<title>{}</title>", esc(title))?;
    writeln!(w, "<style>{CSS}{extra_css}</style>")?;
    writeln!(w, "</head>")?;
    writeln!(w, "<body>")
}

fn legend(w: &mut dyn Write) -> io::Result<()> {
    legend_of(w, &Region::ALL)
}

/// The legend of `regions`, in legend order.
fn legend_of(w: &mut dyn Write, regions: &[Region]) -> io::Result<()> {
    write!(w, "<div class=\"legend\">")?;
    for r in Region::ALL.into_iter().filter(|r| regions.contains(r)) {
        write!(
            w,
            "<span><span class=\"sw {}\"></span>{}</span>",
            region_class(r),
            esc(r.label())
        )?;
    }
    writeln!(w, "</div>")
}

/// Byte ranges of each buffer (index = buffer id) that the HTML tree gives no row of
/// their own: the bytes of a `folded` node (one row stands for them all), of elements
/// past `--max-elements` (one `... M more` row) and of subtrees past `--depth`, merged
/// and sorted. [`grid_hiding`] collapses the rows that lie wholly inside them, so that a page
/// grows with what its tree shows (the node and element budgets), not with the bytes.
pub(crate) fn hidden_ranges(msg: &Message<'_>, opts: &RenderOptions) -> Vec<Vec<(usize, usize)>> {
    let mut out: Vec<Vec<(usize, usize)>> = vec![Vec::new(); msg.buffers.len() + 1];
    fn push(out: &mut [Vec<(usize, usize)>], n: &Node<'_>) {
        if n.length > 0 {
            if let Some(v) = out.get_mut(n.buffer as usize) {
                v.push((n.offset, n.offset.saturating_add(n.length)));
            }
        }
    }
    /// A hidden subtree: its bytes, and those of its nodes in other buffers.
    fn hide(out: &mut [Vec<(usize, usize)>], n: &Node<'_>) {
        push(out, n);
        n.walk(&mut |x, _| {
            if x.buffer != n.buffer {
                push(out, x);
            }
        });
    }
    fn walk(out: &mut [Vec<(usize, usize)>], n: &Node<'_>, opts: &RenderOptions, depth: usize) {
        if n.ty == "folded" {
            push(out, n);
            return;
        }
        if n.children.is_empty() {
            return;
        }
        if rtext::shows_all_children(n, opts, depth) {
            for c in n.children.iter() {
                walk(out, c, opts, depth + 1);
            }
            return;
        }
        let shown: Vec<*const Node<'_>> = rtext::tree_items(n, opts, depth)
            .iter()
            .filter_map(|i| match i {
                rtext::Item::Node(c) => Some(*c as *const Node<'_>),
                _ => None,
            })
            .collect();
        for c in n.children.iter() {
            if shown.contains(&(c as *const Node<'_>)) {
                walk(out, c, opts, depth + 1);
            } else {
                hide(out, c);
            }
        }
    }
    walk(&mut out, &msg.tree, opts, 0);
    for v in &mut out {
        v.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(v.len());
        for &(a, b) in v.iter() {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        *v = merged;
    }
    out
}

/// A buffer's byte grid (named `gid` for the hover script), with the rows wholly inside `hidden` (sorted, merged byte ranges) written
/// as one collapsed row per run (`tr.gap`, whose `data-n` is the bytes it stands for).
fn grid_hiding(
    w: &mut dyn Write,
    msg: &Message<'_>,
    id: u32,
    gid: &str,
    hidden: &[(usize, usize)],
    regions: &[Option<Region>],
) -> io::Result<()> {
    let buf = msg.buffer(id);
    let width = rtext::offset_width(buf.len());
    let caption = if id == 0 {
        format!("byte layout ({} bytes, 16 bytes per row)", buf.len())
    } else {
        format!(
            "decompressed buffer {id} ({} bytes, 16 bytes per row)",
            buf.len()
        )
    };
    writeln!(w, "<div class=\"caption\">{}</div>", esc(&caption))?;
    writeln!(w, "<table class=\"grid\" data-g=\"{gid}\">")?;
    write!(w, "<tr><th></th>")?;
    for c in 0..16 {
        write!(w, "<th>{c:X}</th>")?;
    }
    writeln!(w, "</tr>")?;
    let mut h = hidden.iter().peekable();
    let mut html_row = Vec::new();
    let mut gap: Option<(usize, usize)> = None;
    let end_gap = |w: &mut dyn Write, gap: &mut Option<(usize, usize)>| -> io::Result<()> {
        if let Some((a, b)) = gap.take() {
            let rows = (b - a).div_ceil(16);
            writeln!(
                w,
                "<tr class=\"gap\" data-n=\"{}\"><th class=\"off\">{a:0width$x}</th><td colspan=\"16\">… {}, bytes 0x{a:0width$x}-0x{:0width$x} ({} B), not shown in the tree: folded past the node budget (--max-nodes) or past --max-elements</td></tr>",
                b - a,
                crate::text::count(rows as u64, "row", "rows"),
                b - 1,
                b - a
            )?;
        }
        Ok(())
    };
    for (row, chunk) in buf.chunks(16).enumerate() {
        let base = row * 16;
        let end = base + chunk.len();
        while h.peek().is_some_and(|r| r.1 <= base) {
            h.next();
        }
        if h.peek().is_some_and(|r| r.0 <= base && end <= r.1) {
            let g = gap.get_or_insert((base, end));
            g.1 = end;
            continue;
        }
        end_gap(w, &mut gap)?;
        // One row, `<tr><th class="off">OFFSET</th><td class="b CLASS"
        // title="0xOFFSET">hh</td>...</tr>`, built in a buffer kept from row to row.
        html_row.clear();
        html_row.extend_from_slice(b"<tr><th class=\"off\">");
        rtext::put_hex_offset(&mut html_row, base, width);
        html_row.extend_from_slice(b"</th>");
        for (j, &b) in chunk.iter().enumerate() {
            let i = base + j;
            let cls = regions[i].map(region_class).unwrap_or("");
            html_row.extend_from_slice(b"<td class=\"b ");
            html_row.extend_from_slice(cls.as_bytes());
            html_row.extend_from_slice(b"\" title=\"0x");
            rtext::put_hex_offset(&mut html_row, i, width);
            html_row.extend_from_slice(b"\">");
            rtext::put_hex_byte(&mut html_row, b);
            html_row.extend_from_slice(b"</td>");
        }
        html_row.extend_from_slice(b"</tr>\n");
        w.write_all(&html_row)?;
    }
    end_gap(w, &mut gap)?;
    writeln!(w, "</table>")?;
    let runs: Vec<String> = runs_of(regions)
        .iter()
        .map(|(r, runs)| format!("{} {}", r.label(), runs_text(runs)))
        .collect();
    writeln!(
        w,
        "<div class=\"caption runs\">{}</div>",
        esc(&runs.join(" · "))
    )
}

/// A tree line split for colouring: the name, the middle (type, value, annotation),
/// the span and the description.
fn line_html(o: &mut String, line: &str, name: &str) {
    let (front, rest) = match line.find(" [0x").or_else(|| line.find(" [buf")) {
        Some(i) => line.split_at(i),
        None => (line, ""),
    };
    let (span, desc) = match rest.find(']') {
        Some(j) => rest.split_at(j + 1),
        None => (rest, ""),
    };
    let (n, mid) = if front.starts_with(name) {
        front.split_at(name.len())
    } else {
        ("", front)
    };
    o.push_str("<span class=\"n\">");
    esc_into(o, n);
    o.push_str("</span>");
    esc_into(o, mid);
    o.push_str("<span class=\"s\">");
    esc_into(o, span);
    o.push_str("</span><span class=\"d\">");
    esc_into(o, desc);
    o.push_str("</span>");
}

struct TreeHtml<'o> {
    opts: &'o RenderOptions,
    side: &'o str,
    /// Every row's tooltip is its whole text (rows are cut to the page's width).
    title_all: bool,
}

impl TreeHtml<'_> {
    fn node(
        &self,
        w: &mut dyn Write,
        n: &Node<'_>,
        parent: Option<&Node<'_>>,
        lead: &str,
        cont: &str,
        depth: usize,
    ) -> io::Result<()> {
        let line = rtext::node_line(n, parent, self.opts);
        // `<div class="row" tabindex="0" data-g="SIDE-BUFFER" data-o="OFFSET"
        // data-l="LENGTH" data-d="DEPTH" title="..."><span class="c">LEAD</span>LINE</div>`,
        // the title the whole line and its description (`title_all`) or the description.
        let mut row = String::with_capacity(2 * line.len() + 192);
        row.push_str("<div class=\"row\" tabindex=\"0\" data-g=\"");
        row.push_str(self.side);
        row.push('-');
        push_int(&mut row, n.buffer);
        row.push_str("\" data-o=\"");
        push_int(&mut row, n.offset);
        row.push_str("\" data-l=\"");
        push_int(&mut row, n.length);
        row.push_str("\" data-d=\"");
        push_int(&mut row, depth);
        row.push('"');
        let desc = n.description.map(|d| {
            let mut b = Vec::with_capacity(d.len());
            rtext::push_description(&mut b, d, true);
            String::from_utf8(b).unwrap_or_default()
        });
        if self.title_all {
            row.push_str(" title=\"");
            esc_into(&mut row, &line);
            if let Some(d) = desc.as_deref().filter(|d| !line.contains(d)) {
                row.push(' ');
                esc_into(&mut row, d);
            }
            row.push('"');
        } else if let Some(d) = &desc {
            row.push_str(" title=\"");
            esc_into(&mut row, d);
            row.push('"');
        }
        row.push_str("><span class=\"c\">");
        esc_into(&mut row, lead);
        row.push_str("</span>");
        line_html(&mut row, &line, n.name);
        row.push_str("</div>\n");
        w.write_all(row.as_bytes())?;
        for (label, msg) in [("!! error: ", n.error()), ("! warning: ", n.warning())] {
            if let Some(m) = msg {
                writeln!(
                    w,
                    "<div class=\"row note\"><span class=\"c\">{}</span><span class=\"err\">{}{}</span></div>",
                    esc(cont),
                    label,
                    esc(m)
                )?;
            }
        }
        if n.children.is_empty() {
            return Ok(());
        }
        // The children the text tree shows: the elements past --max-elements and the
        // subtrees past --depth stand as one dim row each.
        let items = if rtext::shows_all_children(n, self.opts, depth) {
            n.children.iter().map(rtext::Item::Node).collect()
        } else {
            rtext::tree_items(n, self.opts, depth)
        };
        let last = items.len().saturating_sub(1);
        for (i, item) in items.iter().enumerate() {
            let next = if i == last { "    " } else { "|   " };
            let more = match item {
                rtext::Item::Node(c) => {
                    self.node(
                        w,
                        c,
                        Some(n),
                        &format!("{cont}+-- "),
                        &format!("{cont}{next}"),
                        depth + 1,
                    )?;
                    continue;
                }
                rtext::Item::More(m) => format!("... {m} more"),
                rtext::Item::Fold(k) => format!("... ({k} node{})", if *k == 1 { "" } else { "s" }),
            };
            writeln!(
                w,
                "<div class=\"row note\"><span class=\"c\">{}</span><span class=\"dim\">{}</span></div>",
                esc(&format!("{cont}+-- ")),
                esc(&more)
            )?;
        }
        Ok(())
    }
}

fn side_html(
    w: &mut dyn Write,
    schema: &Schema,
    page: &Page,
    side: &Side,
    opts: &RenderOptions,
) -> io::Result<()> {
    let sid = match side.kind {
        crate::schema::MessageKind::Response => "resp",
        _ => "req",
    };
    let dopts = page_options();
    let arena = crate::tree::Buffers::new();
    let msg = side.decode(schema, &dopts, &arena, page.api_key, page.version);
    writeln!(w, "<section id=\"{}\">", side.label())?;
    writeln!(w, "<h2>{}</h2>", side.heading())?;
    writeln!(
        w,
        "<div class=\"title\">{}</div>",
        esc(&side.title(page.version))
    )?;
    writeln!(w, "<div class=\"panes\">")?;
    grid_and_tree(w, &msg, &rtext::ByteRegions::of(&msg), sid, opts, false)?;
    writeln!(w, "</div>")?;
    writeln!(w, "<h3>kafka message schema (.json)</h3>")?;
    writeln!(w, "<pre class=\"json\">{}</pre>", esc(&side.definition))?;
    writeln!(w, "</section>")
}

/// The legend of the regions `msg` has bytes in (any buffer), in legend order.
fn legend_present(w: &mut dyn Write, msg: &Message<'_>, br: &rtext::ByteRegions) -> io::Result<()> {
    let mut present = Vec::new();
    for id in 0..=msg.buffers.len() as u32 {
        let (regions, _) = br.buffer(id);
        for r in Region::ALL {
            if !present.contains(&r) && regions.contains(&Some(r)) {
                present.push(r);
            }
        }
    }
    legend_of(w, &present)
}

/// One decoded message as the body of a section: the legend of the regions present,
/// each buffer's grid, and the object tree; `sid` names its grids (`sid-0`, ...) for
/// the hover script.
///
/// # Errors
/// The writer's errors.
pub fn message_html(
    w: &mut dyn Write,
    msg: &Message<'_>,
    sid: &str,
    opts: &RenderOptions,
) -> io::Result<()> {
    let br = rtext::ByteRegions::of(msg);
    legend_present(w, msg, &br)?;
    grid_and_tree(w, msg, &br, sid, opts, true)
}

/// Each buffer's grid (named `sid-N`), then the object tree; `title_all` gives every
/// row its whole text as a tooltip.
fn grid_and_tree(
    w: &mut dyn Write,
    msg: &Message<'_>,
    br: &rtext::ByteRegions,
    sid: &str,
    opts: &RenderOptions,
    title_all: bool,
) -> io::Result<()> {
    writeln!(w, "<div class=\"gridpane\">")?;
    let hidden = hidden_ranges(msg, opts);
    for id in 0..=msg.buffers.len() as u32 {
        let h = hidden.get(id as usize).map_or(&[][..], Vec::as_slice);
        let (regions, _) = br.buffer(id);
        grid_hiding(w, msg, id, &format!("{sid}-{id}"), h, &regions)?;
    }
    writeln!(w, "</div>")?;
    writeln!(w, "<div class=\"treepane\">")?;
    writeln!(w, "<h3>object tree</h3>")?;
    writeln!(w, "<div class=\"tree\">")?;
    let t = TreeHtml {
        opts,
        side: sid,
        title_all,
    };
    t.node(w, &msg.tree, None, "", "", 0)?;
    writeln!(w, "</div>")?;
    writeln!(w, "</div>")
}

/// Rules for documents of captured messages: requests beside responses, and rows cut
/// to the width of their column.
const DOC_CSS: &str = r#"
nav.toc ol { columns: 2 28rem; font-size: 14px; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem; align-items: start; }
.single { display: grid; grid-template-columns: minmax(0, 1fr); }
.msg { min-width: 0; border-top: 1px solid var(--line); margin-top: 1rem; }
.msg h2 { font-size: 1.1rem; border: 0; margin: .6rem 0 .2rem; }
.msg .title { font-size: 13px; font-weight: 400; overflow-wrap: anywhere; }
.msg .gridpane { position: static; max-width: 100%; overflow: hidden; }
.msg table.grid { font-size: 12px; border-spacing: 1px; }
.msg table.grid td.b { padding: .05rem .2rem; }
.msg .treepane { overflow: hidden; }
.msg .tree { font-size: 12px; }
.msg .tree .row { overflow: hidden; text-overflow: ellipsis; }
"#;

/// The head of a document of captured messages (the page CSS and `DOC_CSS`).
///
/// # Errors
/// The writer's errors.
pub fn doc_head(w: &mut dyn Write, title: &str) -> io::Result<()> {
    head_with(w, title, DOC_CSS)
}

/// The CSS of a document of captured messages (the page CSS and `DOC_CSS`), for a
/// document that writes its own head (`kwire report`).
pub fn doc_css() -> String {
    format!("{CSS}{DOC_CSS}")
}

/// The hover script of such a document (without its `<script>` element).
pub fn hover_script() -> &'static str {
    SCRIPT
}

/// The end of such a document: the hover script.
///
/// # Errors
/// The writer's errors.
pub fn doc_tail(w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "<script>{SCRIPT}</script>")?;
    writeln!(w, "</body>")?;
    writeln!(w, "</html>")
}

/// Prints `page` as a self-contained HTML document. `links` are (label, file) pairs
/// for the page's navigation line when it is one of a set: the index, and the version's
/// diff page.
///
/// # Errors
/// The writer's errors.
pub fn render(
    w: &mut dyn Write,
    schema: &Schema,
    page: &Page,
    opts: &RenderOptions,
    links: &[(&str, &str)],
) -> io::Result<()> {
    let opts = RenderOptions {
        color: false,
        ..opts.clone()
    };
    head(w, &format!("{} v{} — kwire", page.api_name, page.version))?;
    if !links.is_empty() {
        let ls: Vec<String> = links
            .iter()
            .map(|(label, f)| format!("<a href=\"{}\">{}</a>", esc(f), esc(label)))
            .collect();
        writeln!(w, "<nav>{}</nav>", ls.join(" · "))?;
    }
    writeln!(w, "<h1>{}</h1>", esc(&page.api_name))?;
    writeln!(w, "<p class=\"intro\">{}</p>", esc(&page.intro()))?;
    writeln!(w, "<table class=\"meta\">")?;
    for (k, v) in page.metadata() {
        writeln!(w, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v))?;
    }
    writeln!(w, "</table>")?;
    legend(w)?;
    for side in page.sides() {
        side_html(w, schema, page, side, &opts)?;
    }
    if page.response.is_none() {
        writeln!(
            w,
            "<section id=\"response\"><h2>Response</h2><p>The schema has no response at v{}.</p></section>",
            page.version
        )?;
    }
    writeln!(w, "<script>{SCRIPT}</script>")?;
    writeln!(w, "</body>")?;
    writeln!(w, "</html>")
}

/// Prints the HTML index of `entries` (pages named by [`page_stem`] with extension
/// `ext`).
///
/// # Errors
/// The writer's errors.
pub fn index_html(w: &mut dyn Write, entries: &[IndexEntry], ext: &str) -> io::Result<()> {
    head(w, "Kafka APIs — kwire")?;
    writeln!(w, "<h1>Kafka APIs</h1>")?;
    writeln!(
        w,
        "<p class=\"intro\">One page per API: the smallest legal request and response at the \
         API's newest version, their bytes, object trees and definitions. Made by <code>kwire \
         pages</code>; grouped by the listeners each definition lists (an API may be in \
         several groups).</p>"
    )?;
    let gs = groups(entries);
    write!(w, "<p>")?;
    for (i, (g, _)) in gs.iter().enumerate() {
        if i > 0 {
            write!(w, " · ")?;
        }
        write!(w, "<a href=\"#{}\">{}</a>", esc(&anchor(g)), esc(g))?;
    }
    writeln!(w, "</p>")?;
    let all = entries.iter().any(|e| !e.versions.is_empty());
    for (g, es) in gs {
        writeln!(w, "<h2 id=\"{}\">{}</h2>", esc(&anchor(&g)), esc(&g))?;
        writeln!(w, "<table class=\"index\">")?;
        writeln!(
            w,
            "<tr><th>key</th><th>API</th><th>version</th><th>request</th><th>response</th>{}</tr>",
            if all { "<th>versions</th>" } else { "" }
        )?;
        for e in es {
            let vs: Vec<String> = e
                .versions
                .iter()
                .map(|v| {
                    format!(
                        "<a href=\"{}.{ext}\">v{v}</a>",
                        esc(&page_stem(&e.api_name, Some(*v)))
                    )
                })
                .collect();
            writeln!(
                w,
                "<tr><td class=\"num\">{}</td><td><a href=\"{}.{ext}\">{}</a></td><td class=\"num\">v{}</td><td class=\"num\">{} B</td><td class=\"num\">{}</td>{}</tr>",
                e.api_key,
                esc(&page_stem(&e.api_name, None)),
                esc(&e.api_name),
                e.version,
                e.sizes.0,
                e.sizes
                    .1
                    .map(|s| format!("{s} B"))
                    .unwrap_or_else(|| "none".into()),
                if all {
                    format!("<td>{}</td>", vs.join(" "))
                } else {
                    String::new()
                }
            )?;
        }
        writeln!(w, "</table>")?;
    }
    writeln!(w, "</body>")?;
    writeln!(w, "</html>")
}

fn anchor(g: &str) -> String {
    g.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::esc;

    /// The escape as it was written first: every character looked at.
    fn esc_each(s: &str) -> String {
        s.chars()
            .map(|c| match c {
                '&' => "&amp;".to_string(),
                '<' => "&lt;".to_string(),
                '>' => "&gt;".to_string(),
                '"' => "&quot;".to_string(),
                '\'' => "&#39;".to_string(),
                c => c.to_string(),
            })
            .collect()
    }

    #[test]
    fn esc_escapes_the_five_only() {
        for s in [
            "",
            "plain",
            "a<b>&\"c'",
            "caf\u{e9} <\u{2192}> 'x'",
            "& at the start",
            "ends with >",
            "\u{1f600}&\u{1f600}",
        ] {
            assert_eq!(esc(s), esc_each(s), "{s}");
        }
    }
}
