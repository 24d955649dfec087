//! The text printer: a title line, the byte grid coloured by region, and the object
//! tree laid out as on the reference page:
//!
//! ```text
//! DeleteTopicsRequest message v6 [0x0000, 39B]
//! +-- Frame [0x0000, 4B] length-delimited framing
//! |   +-- size int32 = 35 [0x0000, 4B] number of bytes that follow, patched after encoding
//! ```
//!
//! Each tree line is `name type = value (annotation) [0xOFFSET, NB] description`.

use std::io::{self, Write};

use owo_colors::Style;

use super::json::Spill;
use super::{
    count_text, error_style, guess_note, is_record_payload, paint, region_style, value_into,
    value_text, warning_style, Context, RenderOptions,
};
use crate::tree::{Message, Node, NodeKind, Region, Value};

/// Descriptions longer than this many characters are cut (unless `wide`).
pub const DESCRIPTION_MAX: usize = 75;

/// Prints a message: title line, byte grids (unless `no_bytes`), tree (unless
/// `bytes_only`), then an empty line.
///
/// # Errors
/// The writer's errors.
pub fn render(
    w: &mut dyn Write,
    msg: &Message<'_>,
    ctx: Option<&Context>,
    opts: &RenderOptions,
) -> io::Result<()> {
    let mut t = String::with_capacity(160);
    title_into(&mut t, msg, ctx, opts);
    t.push('\n');
    w.write_all(t.as_bytes())?;
    if !opts.no_bytes {
        grids(w, msg, opts.color)?;
    }
    if !opts.bytes_only {
        if !opts.no_bytes {
            writeln!(w)?;
        }
        tree(w, msg, opts)?;
    }
    writeln!(w)
}

/// The title line: `DeleteTopics v6 request, correlation_id 0, header v2, 39 bytes`,
/// preceded by the capture context (`#3-4 TIME SRC -> DST conn N:`) and followed by the
/// latency, an `incomplete` mark and the error and warning counts when there are any.
pub fn title(msg: &Message<'_>, ctx: Option<&Context>, color: bool) -> String {
    let opts = RenderOptions {
        color,
        ..RenderOptions::default()
    };
    title_with(msg, ctx, &opts)
}

/// [`title`] with the time in `opts.time` (tshark's `-t`) and colour from `opts.color`.
pub fn title_with(msg: &Message<'_>, ctx: Option<&Context>, opts: &RenderOptions) -> String {
    let mut s = String::with_capacity(160);
    title_into(&mut s, msg, ctx, opts);
    s
}

/// [`title_with`], appended to `s`: pieces pushed one after another, numbers through
/// `itoa`, with no `format!` and no piece copied twice (one title a message).
pub(crate) fn title_into(
    s: &mut String,
    msg: &Message<'_>,
    ctx: Option<&Context>,
    opts: &RenderOptions,
) {
    let color = opts.color;
    let mut num = itoa::Buffer::new();
    if let Some(c) = ctx {
        super::push_capture_head(s, c, opts);
        s.push_str(" conn ");
        s.push_str(num.format(c.connection));
        if let Some(t) = &c.tls {
            s.push_str(" [");
            s.push_str(t.session.version);
            s.push(' ');
            s.push_str(&records_text(&t.records));
            s.push(']');
        }
        s.push_str(": ");
    }
    let head_at = s.len();
    super::push_api_head(s, msg);
    s.push(' ');
    s.push_str(msg.direction.as_str());
    if color {
        let head = s.split_off(head_at);
        s.push_str(&paint(true, &head, Style::new().bold()));
    }
    if let Some(g) = guess_note(msg) {
        s.push(' ');
        push_painted(s, color, &g, warning_style());
    }
    match msg.correlation_id {
        Some(id) => {
            s.push_str(", correlation_id ");
            s.push_str(num.format(id));
        }
        None => s.push_str(", correlation_id ?"),
    }
    s.push_str(", header v");
    s.push_str(num.format(msg.header_version));
    s.push_str(", ");
    s.push_str(num.format(msg.size));
    s.push_str(" bytes");
    if let Some(c) = ctx {
        if let Some(l) = c.latency {
            s.push_str(", latency ");
            super::push_latency(s, l);
        }
        if c.incomplete {
            s.push_str(", ");
            push_painted(s, color, "incomplete", warning_style());
        }
    }
    let (errors, warnings) = msg.problem_counts();
    if errors > 0 {
        s.push_str(", ");
        let at = s.len();
        s.push_str("!! ");
        s.push_str(num.format(errors));
        s.push_str(if errors == 1 { " error" } else { " errors" });
        if color {
            let e = s.split_off(at);
            s.push_str(&paint(true, &e, error_style()));
        }
    }
    if warnings > 0 {
        s.push_str(", ");
        let at = s.len();
        s.push_str("! ");
        s.push_str(num.format(warnings));
        s.push_str(if warnings == 1 {
            " warning"
        } else {
            " warnings"
        });
        if color {
            let e = s.split_off(at);
            s.push_str(&paint(true, &e, warning_style()));
        }
    }
}

/// `t` in `style` when `on`, else as it is, appended to `s`.
fn push_painted(s: &mut String, on: bool, t: &str, style: Style) {
    if on {
        s.push_str(&paint(true, t, style));
    } else {
        s.push_str(t);
    }
}

/// TLS record numbers, runs shortened: `record 4`, `records 4-6`, `records 2, 5-6`.
pub(crate) fn records_text(r: &[u64]) -> String {
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < r.len() {
        let mut j = i;
        while j + 1 < r.len() && r[j + 1] == r[j] + 1 {
            j += 1;
        }
        runs.push(if i == j {
            r[i].to_string()
        } else {
            format!("{}-{}", r[i], r[j])
        });
        i = j + 1;
    }
    let word = if r.len() == 1 { "record" } else { "records" };
    format!("{word} {}", runs.join(", "))
}

/// Hex digits of offsets in a buffer of `len` bytes: 4, more past 64 KiB.
pub fn offset_width(len: usize) -> usize {
    let mut width = 4;
    while width < 16 && (len.saturating_sub(1) >> (4 * width)) > 0 {
        width += 1;
    }
    width
}

/// Lower-case hex digits.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// `v` in lower-case hex, zero-padded to `width` digits (more when it needs them), as
/// `{v:0width$x}` writes it.
pub(crate) fn put_hex_offset(out: &mut Vec<u8>, v: usize, width: usize) {
    let digits = (usize::BITS - v.leading_zeros()).div_ceil(4).max(1) as usize;
    out.resize(out.len() + width.saturating_sub(digits), b'0');
    for k in (0..digits).rev() {
        out.push(HEX[(v >> (4 * k)) & 15]);
    }
}

/// Byte `b` as two lower-case hex digits, as `{b:02x}` writes it.
pub(crate) fn put_hex_byte(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

/// A byte as the grid's ASCII column shows it: itself when printable ASCII (space
/// included), else `.`.
fn ascii_mask(b: u8) -> u8 {
    if b.is_ascii_graphic() || b == b' ' {
        b
    } else {
        b'.'
    }
}

/// ASCII bytes as text (the grid's hex digits and `.`-masked ASCII column).
fn ascii_str(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or_default()
}

/// The colour class of each byte of buffer `id`: the region of the deepest node
/// covering it (`None` where no node does), and whether a node with an error covers it.
pub fn byte_regions(msg: &Message<'_>, id: u32) -> (Vec<Option<Region>>, Vec<bool>) {
    let len = msg.buffer(id).len();
    let mut regions = vec![None; len];
    let mut errors = vec![false; len];
    msg.tree.walk(&mut |n, _| {
        if n.buffer != id || n.offset >= len {
            return;
        }
        let end = n.end().min(len);
        regions[n.offset..end].fill(Some(n.region));
        if n.error().is_some() {
            errors[n.offset..end].fill(true);
        }
    });
    (regions, errors)
}

/// Every node's span, by buffer, from one walk of a message's tree: what
/// [`byte_regions`] reads of the tree, for a printer that shows every buffer of a
/// message (a Produce or Fetch of many compressed batches has a buffer each), which
/// would otherwise walk the whole tree once per buffer. One entry a node (at most the
/// node budget, [`crate::decode::DecodeOptions::max_nodes`]).
pub struct ByteRegions {
    /// Per buffer: (offset, end, region, has an error), in the tree's walk order.
    spans: Vec<Vec<(usize, usize, Region, bool)>>,
    /// Per buffer: its length.
    lens: Vec<usize>,
}

impl ByteRegions {
    /// The spans of every buffer of `msg` (0 = the frame, 1.. the decompressed ones).
    pub fn of(msg: &Message<'_>) -> ByteRegions {
        let lens: Vec<usize> = (0..=msg.buffers.len() as u32)
            .map(|id| msg.buffer(id).len())
            .collect();
        let mut spans = vec![Vec::new(); lens.len()];
        msg.tree.walk(&mut |n, _| {
            let id = n.buffer as usize;
            match lens.get(id) {
                Some(&len) if n.offset < len => {
                    spans[id].push((n.offset, n.end().min(len), n.region, n.error().is_some()))
                }
                _ => {}
            }
        });
        ByteRegions { spans, lens }
    }

    /// Buffer `id`'s regions and error marks, as [`byte_regions`] gives them.
    pub fn buffer(&self, id: u32) -> (Vec<Option<Region>>, Vec<bool>) {
        let len = self.lens.get(id as usize).copied().unwrap_or(0);
        let mut regions = vec![None; len];
        let mut errors = vec![false; len];
        for &(a, b, r, e) in self.spans.get(id as usize).map_or(&[][..], Vec::as_slice) {
            regions[a..b].fill(Some(r));
            if e {
                errors[a..b].fill(true);
            }
        }
        (regions, errors)
    }
}

/// Prints the byte grids of every buffer of `msg` (the frame, then each decompressed
/// buffer), each as [`grid`] prints it, reading the tree once for all of them.
///
/// # Errors
/// The writer's errors.
pub fn grids(w: &mut dyn Write, msg: &Message<'_>, color: bool) -> io::Result<()> {
    let br = ByteRegions::of(msg);
    for id in 0..=msg.buffers.len() as u32 {
        let re = br.buffer(id);
        grid_rows_given(w, msg, id, color, &[], &re)?;
        if color {
            grid_legend(w, &re.0, &re.1)?;
        }
    }
    Ok(())
}

/// Prints the byte grid of buffer `id` (0 = the frame): a title, a header row of columns
/// `0`..`F`, rows of 16 bytes labelled by offset with an ASCII column, each byte in the
/// colour of its region; then, with colour, a legend of the regions present.
///
/// # Errors
/// The writer's errors.
pub fn grid(w: &mut dyn Write, msg: &Message<'_>, id: u32, color: bool) -> io::Result<()> {
    let (regions, errors) = grid_rows(w, msg, id, color)?;
    if color {
        grid_legend(w, &regions, &errors)?;
    }
    Ok(())
}

/// The colour legend under a grid: the regions present, and `error` where a byte is in
/// a node with an error.
fn grid_legend(w: &mut dyn Write, regions: &[Option<Region>], errors: &[bool]) -> io::Result<()> {
    let mut legend = String::from("legend:");
    for r in Region::ALL
        .into_iter()
        .filter(|r| regions.contains(&Some(*r)))
    {
        legend.push_str("  ");
        legend.push_str(&paint(true, r.label(), region_style(r)));
    }
    if errors.contains(&true) {
        legend.push_str("  ");
        legend.push_str(&paint(true, "error", grid_error_style()));
    }
    writeln!(w, "{legend}")
}

fn grid_error_style() -> Style {
    Style::new().white().on_red().bold()
}

/// The byte grid of buffer `id` without its legend (see [`grid`]); returns the regions
/// and error marks of its bytes (as [`byte_regions`]).
///
/// # Errors
/// The writer's errors.
#[allow(clippy::type_complexity)]
pub fn grid_rows(
    w: &mut dyn Write,
    msg: &Message<'_>,
    id: u32,
    color: bool,
) -> io::Result<(Vec<Option<Region>>, Vec<bool>)> {
    grid_rows_hiding(w, msg, id, color, &[])
}

/// [`grid_rows`], with the rows wholly inside `hidden` (sorted, merged byte ranges of
/// the buffer: what the tree gives no row of) written as one line per run of them,
/// `… N rows, bytes 0xA-0xB (n B), not shown in the tree: ...`, so that the grid
/// grows with what the tree shows and still accounts for every byte.
///
/// # Errors
/// The writer's errors.
#[allow(clippy::type_complexity)]
pub fn grid_rows_hiding(
    w: &mut dyn Write,
    msg: &Message<'_>,
    id: u32,
    color: bool,
    hidden: &[(usize, usize)],
) -> io::Result<(Vec<Option<Region>>, Vec<bool>)> {
    let re = byte_regions(msg, id);
    grid_rows_given(w, msg, id, color, hidden, &re)?;
    Ok(re)
}

/// [`grid_rows_hiding`] with the buffer's regions and error marks given (`re`, as
/// [`byte_regions`] or [`ByteRegions::buffer`] gives them).
fn grid_rows_given(
    w: &mut dyn Write,
    msg: &Message<'_>,
    id: u32,
    color: bool,
    hidden: &[(usize, usize)],
    (regions, errors): &(Vec<Option<Region>>, Vec<bool>),
) -> io::Result<()> {
    let buf = msg.buffer(id);
    let width = offset_width(buf.len());
    if id == 0 {
        writeln!(w, "byte layout ({} bytes, 16 bytes per row)", buf.len())?;
    } else {
        writeln!(
            w,
            "decompressed buffer {id} ({} bytes, 16 bytes per row)",
            buf.len()
        )?;
    }
    let mut head = " ".repeat(width + 1);
    for c in 0..16 {
        head.push_str(&format!(" {c:X} "));
    }
    writeln!(w, "{}", head.trim_end())?;
    let err_style = grid_error_style();
    // Bytes of one region (or one error mark) in a row share one colour code: a run of
    // them is painted once, not byte by byte.
    let key = |i: usize| -> Option<Style> {
        if !color {
            None
        } else if errors[i] {
            Some(err_style)
        } else {
            regions[i].map(region_style)
        }
    };
    let run_key = |i: usize| (errors[i], regions[i]);
    let (mut line, mut ascii, mut hex, mut text) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut h = hidden.iter().peekable();
    let mut gap: Option<(usize, usize)> = None;
    let end_gap = |w: &mut dyn Write, gap: &mut Option<(usize, usize)>| -> io::Result<()> {
        if let Some((a, b)) = gap.take() {
            writeln!(
                w,
                "{a:0width$x}  … {}, bytes 0x{a:0width$x}-0x{:0width$x} ({} B), not shown in the tree: folded past the node budget (--max-nodes) or past --max-elements",
                crate::text::count((b - a).div_ceil(16) as u64, "row", "rows"),
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
            gap.get_or_insert((base, end)).1 = end;
            continue;
        }
        end_gap(w, &mut gap)?;
        // One row: `OFFSET  hh hh ...  ascii`, built in buffers kept from row to row.
        line.clear();
        ascii.clear();
        put_hex_offset(&mut line, base, width);
        line.push(b' ');
        // Without colour the row is one run: ` hh` a byte, as the runs below write it.
        let mut j = if color { 0 } else { chunk.len() };
        if !color {
            for &b in chunk {
                line.push(b' ');
                put_hex_byte(&mut line, b);
                ascii.push(ascii_mask(b));
            }
        }
        while j < chunk.len() {
            let mut e = j + 1;
            while e < chunk.len() && run_key(base + e) == run_key(base + j) {
                e += 1;
            }
            hex.clear();
            text.clear();
            for (k, &b) in chunk[j..e].iter().enumerate() {
                if k > 0 {
                    hex.push(b' ');
                }
                put_hex_byte(&mut hex, b);
                text.push(ascii_mask(b));
            }
            line.push(b' ');
            match key(base + j) {
                // The hex digits and the ASCII column are ASCII: valid UTF-8.
                Some(st) => {
                    let (h, t) = (ascii_str(&hex), ascii_str(&text));
                    line.extend_from_slice(paint(true, h, st).as_bytes());
                    ascii.extend_from_slice(paint(true, t, st).as_bytes());
                }
                None => {
                    line.extend_from_slice(&hex);
                    ascii.extend_from_slice(&text);
                }
            }
            j = e;
        }
        for _ in chunk.len()..16 {
            line.extend_from_slice(b"   ");
        }
        line.extend_from_slice(b"  ");
        line.extend_from_slice(&ascii);
        line.push(b'\n');
        w.write_all(&line)?;
    }
    end_gap(w, &mut gap)?;
    Ok(())
}

/// Prints the tree of `msg` (see the module documentation).
///
/// # Errors
/// The writer's errors.
pub fn tree(w: &mut dyn Write, msg: &Message<'_>, opts: &RenderOptions) -> io::Result<()> {
    let widths: Vec<usize> = (0..=msg.buffers.len() as u32)
        .map(|id| offset_width(msg.buffer(id).len()))
        .collect();
    TreePrinter { opts, widths }.print(w, &msg.tree)
}

/// Prints a tree rooted at any node (offsets 4 hex digits wide).
///
/// # Errors
/// The writer's errors.
pub fn node_tree(w: &mut dyn Write, root: &Node<'_>, opts: &RenderOptions) -> io::Result<()> {
    TreePrinter {
        opts,
        widths: Vec::new(),
    }
    .print(w, root)
}

/// The text of one node's line, without the connectors and without colour.
pub fn node_line(n: &Node<'_>, parent: Option<&Node<'_>>, opts: &RenderOptions) -> String {
    let opts = RenderOptions {
        color: false,
        ..opts.clone()
    };
    TreePrinter {
        opts: &opts,
        widths: Vec::new(),
    }
    .line(n, parent)
}

/// The lines under `n` at `depth` as the text tree shows them: its children, with the
/// elements past `opts.max_elements` as one [`Item::More`] and, at `opts.depth`, the
/// whole subtree as one [`Item::Fold`]. The HTML pages show the same lines.
pub fn tree_items<'n, 'a>(
    n: &'n Node<'a>,
    opts: &RenderOptions,
    depth: usize,
) -> Vec<Item<'n, 'a>> {
    TreePrinter {
        opts,
        widths: Vec::new(),
    }
    .items(n, depth)
}

/// Whether [`tree_items`] would give `n`'s children as they are (nothing hidden).
pub fn shows_all_children(n: &Node<'_>, opts: &RenderOptions, depth: usize) -> bool {
    opts.depth.is_none_or(|d| depth < d) && n.children.len() <= opts.max_elements
}

/// [`node_line`] for a node of `msg`: offsets as wide as `read -V` prints them in
/// that node's buffer (4 hex digits, more past 64 KiB).
pub fn message_node_line(
    msg: &Message<'_>,
    n: &Node<'_>,
    parent: Option<&Node<'_>>,
    opts: &RenderOptions,
) -> String {
    let opts = RenderOptions {
        color: false,
        ..opts.clone()
    };
    TreePrinter {
        opts: &opts,
        widths: vec![offset_width(msg.buffer(n.buffer).len()); n.buffer as usize + 1],
    }
    .line(n, parent)
}

/// What stands on one line under a parent.
pub enum Item<'n, 'a> {
    /// A child node.
    Node(&'n Node<'a>),
    /// `... M more` elements hidden by `max_elements`.
    More(usize),
    /// `... (N nodes)` hidden by `depth`.
    Fold(usize),
}

struct TreePrinter<'o> {
    opts: &'o RenderOptions,
    widths: Vec<usize>,
}

/// Whether `child` is an element of a list under `parent` (what `max_elements` counts
/// and cuts; the explorer's tree cuts the same elements).
pub fn is_element(parent: &Node<'_>, child: &Node<'_>) -> bool {
    if child.ty == "folded" {
        // What the decoder folded past the node budget is always shown: it says so.
        return false;
    }
    if parent.kind == NodeKind::Array {
        return child.name != "length" && child.name != "tagged_fields";
    }
    child.name.ends_with(']')
}

fn count_nodes(n: &Node<'_>) -> usize {
    let mut k = 0;
    n.walk(&mut |_, _| k += 1);
    k
}

impl TreePrinter<'_> {
    fn color(&self) -> bool {
        self.opts.color
    }

    /// Prints the tree under `root` into a line buffer kept on the thread, written out
    /// to `w` in [`super::json::SPILL`]-sized pieces between nodes and once at the end: one
    /// write a few hundred lines rather than one a line.
    fn print(&self, w: &mut dyn Write, root: &Node<'_>) -> io::Result<()> {
        thread_local! {
            /// The tree's text, reused from message to message.
            static TREE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        super::with_thread_buffer(&TREE, |out| {
            let mut spill = Spill::new(w);
            let mut cont = Vec::with_capacity(64);
            self.node(out, root, None, &mut cont, None, 0, &mut spill);
            spill.finish(out)
        })
    }

    /// Prints `n` (and its subtree) into `out`. `cont` holds the parent's continuation
    /// prefix (`|   ` and `    ` segments); `next` is what this node adds to it, `None`
    /// for the root, which has no connector. Between nodes, `out` spills into `spill`.
    #[allow(clippy::too_many_arguments)]
    fn node(
        &self,
        out: &mut Vec<u8>,
        n: &Node<'_>,
        parent: Option<&Node<'_>>,
        cont: &mut Vec<u8>,
        next: Option<&[u8; 4]>,
        depth: usize,
        spill: &mut Spill<'_>,
    ) {
        if spill.failed() {
            return;
        }
        if next.is_some() {
            out.extend_from_slice(cont);
            out.extend_from_slice(b"+-- ");
        }
        self.line_into(out, n, parent);
        out.push(b'\n');
        spill.check(out);
        let base = cont.len();
        if let Some(x) = next {
            cont.extend_from_slice(x);
        }
        self.rest(out, n, cont, depth, spill);
        cont.truncate(base);
    }

    /// The error and warning lines and the children of `n`, whose continuation prefix
    /// is `cont`.
    fn rest(
        &self,
        out: &mut Vec<u8>,
        n: &Node<'_>,
        cont: &mut Vec<u8>,
        depth: usize,
        spill: &mut Spill<'_>,
    ) {
        let color = self.color();
        // A problem's line under the node: `cont`, then `!! error: ...` or `! warning: ...`.
        let mut problem = |head: &str, text: &str, style| {
            out.extend_from_slice(cont);
            if color {
                let t = format!("{head}{text}");
                out.extend_from_slice(paint(true, &t, style).as_bytes());
            } else {
                out.extend_from_slice(head.as_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            out.push(b'\n');
        };
        if let Some(e) = n.error() {
            problem("!! error: ", e, super::error_style());
        }
        if let Some(e) = n.warning() {
            problem("! warning: ", e, super::warning_style());
        }
        if n.children.is_empty() {
            return;
        }
        const LAST: &[u8; 4] = b"    ";
        const MORE: &[u8; 4] = b"|   ";
        // The usual case, nothing folded or cut: the children themselves, no list built.
        if self.opts.depth.is_none_or(|d| depth < d) && n.children.len() <= self.opts.max_elements {
            let last = n.children.len() - 1;
            for (i, c) in n.children.iter().enumerate() {
                let next = if i == last { LAST } else { MORE };
                self.node(out, c, Some(n), cont, Some(next), depth + 1, spill);
            }
            return;
        }
        let items = self.items(n, depth);
        let last = items.len().saturating_sub(1);
        for (i, item) in items.iter().enumerate() {
            let next = if i == last { LAST } else { MORE };
            let t = match item {
                Item::Node(c) => {
                    self.node(out, c, Some(n), cont, Some(next), depth + 1, spill);
                    continue;
                }
                Item::More(m) => format!("... {m} more"),
                Item::Fold(k) => format!("... ({k} node{})", if *k == 1 { "" } else { "s" }),
            };
            out.extend_from_slice(cont);
            out.extend_from_slice(b"+-- ");
            out.extend_from_slice(paint(color, &t, Style::new().dimmed()).as_bytes());
            out.push(b'\n');
        }
    }

    fn items<'n, 'a>(&self, n: &'n Node<'a>, depth: usize) -> Vec<Item<'n, 'a>> {
        if self.opts.depth.is_some_and(|d| depth >= d) {
            return vec![Item::Fold(count_nodes(n) - 1)];
        }
        let total = n.children.iter().filter(|c| is_element(n, c)).count();
        let mut seen = 0;
        let mut items = Vec::with_capacity(n.children.len().min(self.opts.max_elements + 8));
        for c in &n.children {
            if is_element(n, c) {
                seen += 1;
                if seen > self.opts.max_elements {
                    if seen == self.opts.max_elements + 1 {
                        items.push(Item::More(total - self.opts.max_elements));
                    }
                    continue;
                }
            }
            items.push(Item::Node(c));
        }
        items
    }

    fn width(&self, buffer: u32) -> usize {
        self.widths.get(buffer as usize).copied().unwrap_or(4)
    }

    /// `name type = value (annotation) [0xOFFSET, NB] description`.
    fn line(&self, n: &Node<'_>, parent: Option<&Node<'_>>) -> String {
        let mut s = Vec::new();
        self.line_into(&mut s, n, parent);
        // Every piece is a `&str` or ASCII, and descriptions are cut at a character.
        String::from_utf8(s).unwrap_or_default()
    }

    /// [`Self::line`], appended to `s`.
    fn line_into(&self, s: &mut Vec<u8>, n: &Node<'_>, parent: Option<&Node<'_>>) {
        if self.color() {
            return self.color_line_into(s, n, parent);
        }
        s.extend_from_slice(n.name.as_bytes());
        let ty = shown_type(n);
        if !ty.is_empty() {
            s.push(b' ');
            s.extend_from_slice(ty.as_bytes());
        }
        match (n.kind, &n.value) {
            (NodeKind::Frame, _) => {}
            (NodeKind::Struct, Value::None) => s.extend_from_slice(b" = struct"),
            (NodeKind::Array, Value::None) => {
                s.extend_from_slice(b" = ");
                let k = n.children.iter().filter(|c| is_element(n, c)).count();
                push_count(s, k as u64);
            }
            (_, Value::None) => {}
            // a leaf where the walk stopped, with nothing read: the error says it all
            (_, Value::Bytes([])) if n.error().is_some() => {}
            (_, v) => {
                s.extend_from_slice(b" = ");
                value_into(s, v, self.opts.max_value_len, is_record_payload(parent, n));
            }
        }
        if let Some(a) = &n.annotation {
            s.extend_from_slice(b" (");
            s.extend_from_slice(a.as_bytes());
            s.push(b')');
        }
        // ` [0xOFFSET, NB]` / ` [bufN 0xOFFSET, NB]`, without the formatting machinery
        // (one per line).
        let mut num = itoa::Buffer::new();
        if n.buffer == 0 {
            s.extend_from_slice(b" [0x");
        } else {
            s.extend_from_slice(b" [buf");
            s.extend_from_slice(num.format(n.buffer).as_bytes());
            s.extend_from_slice(b" 0x");
        }
        push_hex(s, n.offset, self.width(n.buffer));
        s.extend_from_slice(b", ");
        s.extend_from_slice(num.format(n.length).as_bytes());
        s.extend_from_slice(b"B]");
        if let Some(d) = &n.description {
            s.push(b' ');
            push_description(s, d, self.opts.wide);
        }
    }

    /// [`Self::line_into`] in colour: each piece painted.
    fn color_line_into(&self, s: &mut Vec<u8>, n: &Node<'_>, parent: Option<&Node<'_>>) {
        let color = true;
        paint_into(s, color, n.name, Style::new().bold());
        let ty = shown_type(n);
        if !ty.is_empty() {
            s.push(b' ');
            paint_into(s, color, ty, Style::new().cyan());
        }
        let value = match (n.kind, &n.value) {
            (NodeKind::Frame, _) => None,
            (NodeKind::Struct, Value::None) => Some("struct".to_string()),
            (NodeKind::Array, Value::None) => Some(count_text(
                n.children.iter().filter(|c| is_element(n, c)).count() as u64,
            )),
            (_, Value::None) => None,
            // a leaf where the walk stopped, with nothing read: the error says it all
            (_, Value::Bytes([])) if n.error().is_some() => None,
            (_, v) => Some(value_text(
                v,
                self.opts.max_value_len,
                is_record_payload(parent, n),
            )),
        };
        // A non-zero error code stands out: value and error name in the error colour.
        let error_code =
            n.name.ends_with("ErrorCode") && matches!(n.value, Value::Int(c) if c != 0);
        if let Some(v) = value {
            s.extend_from_slice(b" = ");
            let style = if error_code {
                error_style()
            } else {
                Style::new().green()
            };
            paint_into(s, color, &v, style);
        }
        if let Some(a) = &n.annotation {
            let style = if error_code {
                error_style()
            } else {
                Style::new().bright_black()
            };
            paint_into(s, color, &format!(" ({a})"), style);
        }
        let width = self.width(n.buffer);
        let span = if n.buffer == 0 {
            format!(" [0x{:0width$x}, {}B]", n.offset, n.length)
        } else {
            format!(" [buf{} 0x{:0width$x}, {}B]", n.buffer, n.offset, n.length)
        };
        paint_into(s, color, &span, Style::new().bright_black());
        if let Some(d) = &n.description {
            s.push(b' ');
            push_description(s, d, self.opts.wide);
        }
    }
}

/// [`count_text`] appended to `out`.
fn push_count(out: &mut Vec<u8>, k: u64) {
    if k == 1 {
        out.extend_from_slice(b"1 element");
    } else {
        out.extend_from_slice(itoa::Buffer::new().format(k).as_bytes());
        out.extend_from_slice(b" elements");
    }
}

/// `v` in lowercase hex, zero-padded to at least `width` digits (`{:0width$x}`).
fn push_hex(out: &mut Vec<u8>, v: usize, width: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = ((usize::BITS - v.leading_zeros()).div_ceil(4) as usize).max(1);
    for _ in digits..width {
        out.push(b'0');
    }
    for i in (0..digits).rev() {
        out.push(HEX[(v >> (4 * i)) & 15]);
    }
}

/// `s` in `style` when `on`, else `s` as it is, appended to `out`.
fn paint_into(out: &mut Vec<u8>, on: bool, s: &str, style: Style) {
    if on {
        out.extend_from_slice(paint(true, s, style).as_bytes());
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

/// [`cut_description`] appended to `out`, without allocating for the usual description
/// (ASCII words separated by single spaces), checked in one pass over its bytes.
pub(crate) fn push_description(out: &mut Vec<u8>, d: &str, wide: bool) {
    let b = d.as_bytes();
    let mut simple = b.first() != Some(&b' ') && b.last() != Some(&b' ');
    let mut prev_space = false;
    for &c in b {
        if !simple {
            break;
        }
        let space = c.is_ascii_whitespace();
        // Non-ASCII, a whitespace other than a space, or two whitespaces in a row.
        simple = c < 0x80 && !(space && (c != b' ' || prev_space));
        prev_space = space;
    }
    if !simple {
        out.extend_from_slice(cut_description(d, wide).as_bytes());
    } else if !wide && d.len() > DESCRIPTION_MAX {
        out.extend_from_slice(&b[..DESCRIPTION_MAX]);
        out.extend_from_slice(b"...");
    } else {
        out.extend_from_slice(b);
    }
}

/// A description cut to [`DESCRIPTION_MAX`] characters plus `...` (unless `wide`); line
/// breaks become spaces.
pub fn cut_description(d: &str, wide: bool) -> String {
    let d: String = d.split_whitespace().collect::<Vec<_>>().join(" ");
    if wide {
        return d;
    }
    match d.char_indices().nth(DESCRIPTION_MAX) {
        Some((cut, _)) => format!("{}...", &d[..cut]),
        None => d,
    }
}

/// The type a node's tree line shows: none for the frame, a header's version alone
/// (`v2` of `header v2`), else the node's type.
fn shown_type<'a>(n: &Node<'a>) -> &'a str {
    match n.kind {
        NodeKind::Frame => "",
        NodeKind::Header => n.ty.strip_prefix("header ").unwrap_or(n.ty),
        _ => n.ty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grid's hex writers give what `format!` gives.
    #[test]
    fn hex_writers_match_format() {
        let mut out = Vec::new();
        for b in 0..=255u8 {
            out.clear();
            put_hex_byte(&mut out, b);
            assert_eq!(out, format!("{b:02x}").as_bytes());
        }
        for width in [1, 4, 5, 8, 16] {
            for v in [
                0usize,
                1,
                15,
                16,
                255,
                0xfff0,
                0x1_0000,
                0xdead_beef,
                usize::MAX,
            ] {
                out.clear();
                put_hex_offset(&mut out, v, width);
                assert_eq!(out, format!("{v:0width$x}").as_bytes(), "{v} {width}");
            }
        }
    }

    /// The former check of a simple description, in several passes.
    fn simple_old(d: &str) -> bool {
        let b = d.as_bytes();
        d.is_ascii()
            && b.first() != Some(&b' ')
            && b.last() != Some(&b' ')
            && !b
                .windows(2)
                .any(|p| p[0].is_ascii_whitespace() && p[1].is_ascii_whitespace())
            && !b.iter().any(|c| c.is_ascii_whitespace() && *c != b' ')
    }

    proptest::proptest! {
        /// The one-pass description gives what the old checks and `cut_description`
        /// gave, wide or not.
        #[test]
        fn description_equals_cut_description(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::Just(" ".to_string()),
                    proptest::prelude::Just("\t".to_string()),
                    proptest::prelude::Just("\n".to_string()),
                    proptest::prelude::Just("\u{b}".to_string()),
                    proptest::prelude::Just("é".to_string()),
                    "[a-z]{1,12}",
                ],
                0..30,
            ),
        ) {
            let d: String = parts.concat();
            for wide in [false, true] {
                let mut out = Vec::new();
                push_description(&mut out, &d, wide);
                let want = if simple_old(&d) {
                    if !wide && d.len() > DESCRIPTION_MAX {
                        format!("{}...", &d[..DESCRIPTION_MAX])
                    } else {
                        d.clone()
                    }
                } else {
                    cut_description(&d, wide)
                };
                proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), want);
            }
        }

        #[test]
        fn push_hex_equals_format(v in proptest::prelude::any::<usize>(), width in 0usize..20) {
            let mut out = Vec::new();
            push_hex(&mut out, v, width);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), format!("{v:0width$x}"));
        }

        #[test]
        fn push_count_equals_count_text(k in proptest::prelude::any::<u64>()) {
            let mut out = Vec::new();
            push_count(&mut out, k);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), count_text(k));
            let mut one = Vec::new();
            push_count(&mut one, 1);
            proptest::prop_assert_eq!(String::from_utf8(one).unwrap(), count_text(1));
        }
    }
}
