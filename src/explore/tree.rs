//! The tree and bytes of the selected message, owned: the lines `read -V` prints for it
//! (each node's line from [`crate::render::text::message_node_line`], the same
//! connectors, error and warning lines, `... N more` past `--max-elements`), with each
//! line's node span, so that the panes can fold nodes and link a node to its bytes.

use crate::render::text::{byte_regions, is_element, message_node_line};
use crate::render::RenderOptions;
use crate::tree::{Message, Node, Region};

/// What a line of the tree pane stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// A node: its span in buffer `buffer` (0: the frame; else a decompressed buffer).
    Node {
        /// Offset of its first byte in its buffer.
        offset: usize,
        /// Its bytes.
        length: usize,
        /// Its buffer.
        buffer: u32,
    },
    /// The `!! error: ...` line under a node.
    Error,
    /// The `! warning: ...` line under a node.
    Warning,
    /// `... N more`: elements cut by `--max-elements`.
    More,
}

/// One line of the tree.
#[derive(Clone, Debug)]
pub struct Row {
    /// Depth below the root (0: the message).
    pub depth: usize,
    /// The connectors before the text (`|   +-- `).
    pub prefix: String,
    /// The node's line (or the error, warning or `... more` text).
    pub text: String,
    /// What it stands for.
    pub kind: RowKind,
    /// The row of the parent node.
    pub parent: Option<usize>,
    /// One past the last row of its subtree (its error lines and children).
    pub end: usize,
    /// The node carries a decode error, or is a non-zero error code.
    pub error: bool,
}

impl Row {
    /// Whether rows below it belong to it (it can fold).
    pub fn folds(&self, me: usize) -> bool {
        self.end > me + 1
    }
}

/// The selected message, ready for the tree and bytes panes.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// Every row, in `read -V`'s order.
    pub rows: Vec<Row>,
    /// Which rows are folded.
    pub folded: Vec<bool>,
    /// The rows shown (not inside a folded node), in order.
    pub visible: Vec<usize>,
    /// The frame (0) and the decompressed buffers.
    pub buffers: Vec<Vec<u8>>,
    /// Per buffer, per byte: the region of the deepest node covering it.
    pub regions: Vec<Vec<Option<Region>>>,
    /// Per buffer, per byte: a node with a decode error covers it.
    pub errors: Vec<Vec<bool>>,
}

impl View {
    /// The view of `msg` with the tree options `opts` (`max_elements`, `wide`...).
    pub fn of(msg: &Message<'_>, opts: &RenderOptions) -> View {
        let mut v = View::default();
        let mut b = Builder {
            msg,
            opts,
            rows: Vec::new(),
        };
        b.node(&msg.tree, None, None, &mut String::new(), None, 0);
        v.rows = b.rows;
        v.folded = vec![false; v.rows.len()];
        for id in 0..=msg.buffers.len() as u32 {
            v.buffers.push(msg.buffer(id).to_vec());
            let (r, e) = byte_regions(msg, id);
            v.regions.push(r);
            v.errors.push(e);
        }
        v.refresh();
        v
    }

    /// Recomputes [`View::visible`] after folding.
    pub fn refresh(&mut self) {
        self.visible.clear();
        let mut i = 0;
        while i < self.rows.len() {
            self.visible.push(i);
            if self.folded[i] {
                i = self.rows[i].end.max(i + 1);
            } else {
                i += 1;
            }
        }
    }

    /// Unfolds every ancestor of row `r`, so that it is visible.
    pub fn reveal(&mut self, r: usize) {
        let mut p = self.rows.get(r).and_then(|x| x.parent);
        while let Some(i) = p {
            self.folded[i] = false;
            p = self.rows[i].parent;
        }
        self.refresh();
    }

    /// The deepest node covering byte `at` of buffer `buffer`, as a row.
    pub fn node_at(&self, buffer: u32, at: usize) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, r) in self.rows.iter().enumerate() {
            if let RowKind::Node {
                offset,
                length,
                buffer: b,
            } = r.kind
            {
                if b == buffer
                    && offset <= at
                    && at < offset + length
                    && best.is_none_or(|x| self.rows[x].depth <= r.depth)
                {
                    best = Some(i);
                }
            }
        }
        best
    }

    /// The node span of row `r`, or of the node it is a line of.
    pub fn span(&self, r: usize) -> Option<(u32, usize, usize)> {
        let row = self.rows.get(r)?;
        match row.kind {
            RowKind::Node {
                offset,
                length,
                buffer,
            } => Some((buffer, offset, length)),
            _ => row.parent.and_then(|p| self.span(p)),
        }
    }
}

struct Builder<'m, 'a, 'o> {
    msg: &'m Message<'a>,
    opts: &'o RenderOptions,
    rows: Vec<Row>,
}

impl<'a> Builder<'_, 'a, '_> {
    /// As the text printer's `node`: the node's line, then its error and warning lines
    /// and its children, with the continuation prefix `cont`.
    fn node(
        &mut self,
        n: &Node<'a>,
        parent: Option<&Node<'a>>,
        parent_row: Option<usize>,
        cont: &mut String,
        next: Option<&str>,
        depth: usize,
    ) {
        let me = self.rows.len();
        let prefix = if next.is_some() {
            format!("{cont}+-- ")
        } else {
            String::new()
        };
        let code = crate::traffic::error_code(n).is_some();
        self.rows.push(Row {
            depth,
            prefix,
            text: message_node_line(self.msg, n, parent, self.opts),
            kind: RowKind::Node {
                offset: n.offset,
                length: n.length,
                buffer: n.buffer,
            },
            parent: parent_row,
            end: me + 1,
            error: n.error().is_some() || code,
        });
        let base = cont.len();
        if let Some(x) = next {
            cont.push_str(x);
        }
        for (text, kind) in [
            (n.error().map(|e| format!("!! error: {e}")), RowKind::Error),
            (
                n.warning().map(|w| format!("! warning: {w}")),
                RowKind::Warning,
            ),
        ] {
            if let Some(text) = text {
                self.rows.push(Row {
                    depth: depth + 1,
                    prefix: cont.clone(),
                    text,
                    kind,
                    parent: Some(me),
                    end: self.rows.len() + 1,
                    error: kind == RowKind::Error,
                });
            }
        }
        if !n.children.is_empty() {
            let max = self.opts.max_elements;
            let total = n.children.iter().filter(|c| is_element(n, c)).count();
            // The children shown, and where `... M more` stands among them.
            let mut items: Vec<Option<&Node<'a>>> = Vec::new();
            let mut seen = 0;
            for c in n.children.iter() {
                if n.children.len() > max && is_element(n, c) {
                    seen += 1;
                    if seen > max {
                        if seen == max + 1 {
                            items.push(None);
                        }
                        continue;
                    }
                }
                items.push(Some(c));
            }
            let last = items.len().saturating_sub(1);
            for (i, item) in items.into_iter().enumerate() {
                let next = if i == last { "    " } else { "|   " };
                match item {
                    Some(c) => self.node(c, Some(n), Some(me), cont, Some(next), depth + 1),
                    None => self.rows.push(Row {
                        depth: depth + 1,
                        prefix: format!("{cont}+-- "),
                        text: format!("... {} more", total - max),
                        kind: RowKind::More,
                        parent: Some(me),
                        end: self.rows.len() + 1,
                        error: false,
                    }),
                }
            }
        }
        cont.truncate(base);
        self.rows[me].end = self.rows.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode, DecodeOptions, Known};
    use crate::schema::Schema;
    use crate::tree::Buffers;

    /// The seed page's DeleteTopics v6 request.
    const REQ: &str =
        "000000230014000600000000000000020100000000000000000000000000000000000000000000";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn rows_fold_and_cover_bytes() {
        let schema = Schema::embedded();
        let opts = DecodeOptions::default();
        let arena = Buffers::new();
        let b = unhex(REQ);
        let m = decode(&schema, &opts, &arena, &b, &Known::request());
        let mut v = View::of(&m, &RenderOptions::default());
        let mut text = Vec::new();
        crate::render::text::tree(&mut text, &m, &RenderOptions::default()).unwrap();
        let printed: Vec<String> = String::from_utf8(text)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        let ours: Vec<String> = v
            .rows
            .iter()
            .map(|r| format!("{}{}", r.prefix, r.text))
            .collect();
        assert_eq!(ours, printed);
        // Every byte is covered by a leaf; the deepest node at 8 is correlation_id.
        let r = v.node_at(0, 8).unwrap();
        assert!(v.rows[r].text.starts_with("correlation_id int32"));
        assert!((0..b.len()).all(|i| v.node_at(0, i).is_some()));
        assert_eq!(v.node_at(0, b.len()), None);
        // Folding the header hides its children; revealing a child unfolds it.
        let header = v
            .rows
            .iter()
            .position(|r| r.text.starts_with("RequestHeader"))
            .unwrap();
        let all = v.visible.len();
        v.folded[header] = true;
        v.refresh();
        assert_eq!(v.visible.len(), all - (v.rows[header].end - header - 1));
        v.reveal(r);
        assert_eq!(v.visible.len(), all);
    }
}
