//! Captured messages laid out as reference pages: `kwire read ... --format md|html` and
//! `kwire decode ... --format md|html`.
//!
//! Each message gets what a reference page gives one side ([`super::html`],
//! [`super::markdown`]): its title line (the text output's, with frame numbers, time,
//! endpoints and correlation_id), the byte grid coloured by region with a legend of the
//! regions present, the object tree, and with a user schema (`--schema`) the definition.
//! Markdown is written message by message (it pastes into a README or a wiki as is);
//! HTML is gathered into one self-contained file ([`Doc`]): a contents list, then each
//! request beside its response (paired by connection and correlation_id), with hover
//! linking between bytes and tree rows. Tree rows keep to the page's width: a long row
//! is cut with an ellipsis and its whole text is its tooltip.

use std::io::{self, Write};

use super::html::{self as h, esc};
use super::{definition_text, region_runs, runs_text};
use crate::render::{text as rtext, RenderOptions};
use crate::schema::{MessageKind, Schema, Source};
use crate::session::Context;
use crate::tree::{Direction, Message};

/// The user's definition of a message, when `--schema` gave it (raw text).
fn user_definition(schema: &Schema, m: &Message<'_>) -> Option<String> {
    let kind = match m.direction {
        Direction::Request => MessageKind::Request,
        Direction::Response => MessageKind::Response,
    };
    let d = schema.resolve(kind, m.api_key, m.api_version)?;
    (d.source == Source::User).then(|| definition_text(d))
}

/// Prints one message as Markdown: a heading with its number, the title line, each
/// buffer's byte grid with its region runs, the object tree and, with a user schema,
/// the definition.
///
/// # Errors
/// The writer's errors.
pub fn markdown(
    w: &mut dyn Write,
    schema: &Schema,
    n: usize,
    m: &Message<'_>,
    ctx: Option<&Context>,
    opts: &RenderOptions,
) -> io::Result<()> {
    let opts = RenderOptions {
        color: false,
        ..opts.clone()
    };
    let name = m.api_name.unwrap_or("unknown API");
    writeln!(
        w,
        "## {n}. {name} v{} {}",
        m.api_version,
        m.direction.as_str()
    )?;
    writeln!(w)?;
    writeln!(w, "`{}`", rtext::title(m, ctx, false).replace('`', "'"))?;
    writeln!(w)?;
    for id in 0..=m.buffers.len() as u32 {
        writeln!(w, "```text")?;
        rtext::grid_rows(w, m, id, false)?;
        writeln!(w, "```")?;
        writeln!(w)?;
        for (r, runs) in region_runs(m, id) {
            writeln!(w, "- {}: {}", r.label(), runs_text(&runs))?;
        }
        writeln!(w)?;
    }
    writeln!(w, "```text")?;
    rtext::tree(w, m, &opts)?;
    writeln!(w, "```")?;
    writeln!(w)?;
    if let Some(d) = user_definition(schema, m) {
        writeln!(
            w,
            "<details><summary>Kafka message schema (.json)</summary>"
        )?;
        writeln!(w)?;
        writeln!(w, "```json")?;
        writeln!(w, "{d}")?;
        writeln!(w, "```")?;
        writeln!(w)?;
        writeln!(w, "</details>")?;
        writeln!(w)?;
    }
    Ok(())
}

/// One message, rendered.
struct Entry {
    title: String,
    short: String,
    html: String,
    connection: u32,
    correlation_id: Option<i32>,
    request: bool,
}

/// The HTML document of `kwire read/decode --format html`: messages are added as they
/// are decoded (each rendered at once, so no tree outlives its frame) and written out
/// with [`Doc::finish`].
#[derive(Default)]
pub struct Doc {
    entries: Vec<Entry>,
}

impl Doc {
    /// An empty document.
    pub fn new() -> Doc {
        Doc::default()
    }

    /// Renders `m` (with its capture context, when it came from a capture; `stream`
    /// otherwise numbers the input's streams) and keeps it.
    pub fn add(
        &mut self,
        schema: &Schema,
        m: &Message<'_>,
        ctx: Option<&Context>,
        stream: u32,
        opts: &RenderOptions,
    ) {
        let opts = RenderOptions {
            color: false,
            ..opts.clone()
        };
        let n = self.entries.len() + 1;
        let mut buf = Vec::new();
        let sid = format!("m{n}");
        // Writing into a Vec cannot fail.
        let _ = h::message_html(&mut buf, m, &sid, &opts)
            .and_then(|()| match user_definition(schema, m) {
                Some(d) => writeln!(
                    buf,
                    "<details><summary>kafka message schema (.json)</summary><pre class=\"json\">{}</pre></details>",
                    esc(&d)
                ),
                None => Ok(()),
            });
        let name = m.api_name.unwrap_or("unknown API");
        self.entries.push(Entry {
            title: rtext::title(m, ctx, false),
            short: format!(
                "{name} v{} {}, correlation_id {}",
                m.api_version,
                m.direction.as_str(),
                m.correlation_id
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "?".into())
            ),
            html: String::from_utf8_lossy(&buf).into_owned(),
            connection: ctx.map(|c| c.connection).unwrap_or(stream),
            correlation_id: m.correlation_id,
            request: m.direction == Direction::Request,
        });
    }

    /// How many messages were added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none were.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The rows of the page: a request with its response (when both were added), or
    /// one message alone; in the order the first of each was added.
    fn rows(&self) -> Vec<(usize, Option<usize>)> {
        let mut used = vec![false; self.entries.len()];
        let mut rows = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            if used[i] {
                continue;
            }
            used[i] = true;
            let mate = if e.request && e.correlation_id.is_some() {
                self.entries
                    .iter()
                    .enumerate()
                    .skip(i + 1)
                    .find_map(|(j, r)| {
                        (!used[j]
                            && !r.request
                            && r.connection == e.connection
                            && r.correlation_id == e.correlation_id)
                            .then_some(j)
                    })
            } else {
                None
            };
            if let Some(j) = mate {
                used[j] = true;
            }
            rows.push((i, mate));
        }
        rows
    }

    /// Writes the document: head, contents list, then each row.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn finish(&self, w: &mut dyn Write, title: &str) -> io::Result<()> {
        h::doc_head(w, title)?;
        writeln!(w, "<h1>{}</h1>", esc(title))?;
        let rows = self.rows();
        writeln!(
            w,
            "<p class=\"intro\">{} messages; each request beside its response. Hover a tree row to see its bytes, or a byte to see its row.</p>",
            self.entries.len()
        )?;
        writeln!(w, "<nav class=\"toc\"><h2>Contents</h2><ol>")?;
        for (i, mate) in &rows {
            let e = &self.entries[*i];
            write!(w, "<li><a href=\"#m{}\">{}</a>", i + 1, esc(&e.short))?;
            if let Some(j) = mate {
                write!(w, " · <a href=\"#m{}\">response</a>", j + 1)?;
            }
            writeln!(w, "</li>")?;
        }
        writeln!(w, "</ol></nav>")?;
        for (i, mate) in &rows {
            let class = if mate.is_some() { "pair" } else { "single" };
            writeln!(w, "<div class=\"{class}\">")?;
            for k in std::iter::once(*i).chain(*mate) {
                let e = &self.entries[k];
                writeln!(w, "<section class=\"msg\" id=\"m{}\">", k + 1)?;
                writeln!(w, "<h2>{}. {}</h2>", k + 1, esc(&e.short))?;
                writeln!(w, "<div class=\"title\">{}</div>", esc(&e.title))?;
                w.write_all(e.html.as_bytes())?;
                writeln!(w, "</section>")?;
            }
            writeln!(w, "</div>")?;
        }
        h::doc_tail(w)
    }
}
