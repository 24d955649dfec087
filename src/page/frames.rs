//! Captured messages laid out as reference pages: `kwire read ... --format md|html` and
//! `kwire decode ... --format md|html`.
//!
//! Each message gets what a reference page gives one side ([`super::html`],
//! [`super::markdown`]): its title line (the text output's, with frame numbers, time,
//! endpoints and correlation_id), the byte grid coloured by region with a legend of the
//! regions present, the object tree, and with a user schema (`--schema`) the definition.
//! Markdown is written message by message (it pastes into a README or a wiki as is);
//! HTML is one self-contained file ([`Doc`]), also written message by message: each
//! request beside its response (paired by connection and correlation_id), with hover
//! linking between bytes and tree rows, then a contents list. Both honour the node
//! budget and `--max-elements`: the tree shows what the text tree shows, and the byte
//! grids (HTML and Markdown) collapse the rows of bytes the tree shows no row of. Tree rows keep to the page's width: a long row
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
    let hidden = h::hidden_ranges(m, &opts);
    for id in 0..=m.buffers.len() as u32 {
        writeln!(w, "```text")?;
        let hide = hidden.get(id as usize).map_or(&[][..], |v| &v[..]);
        rtext::grid_rows_hiding(w, m, id, false, hide)?;
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

/// One message, rendered, waiting for its place in the document.
struct Entry {
    /// Its number (`mN`), in the order it was added.
    n: usize,
    title: String,
    short: String,
    html: String,
    /// What the entry counts against `MAX_WAITING_BYTES`: its HTML's length, or one past
    /// the bound for a deferred one.
    bytes: usize,
    /// Its HTML is over `MAX_WAITING_BYTES`, so it is not held: it is rendered straight
    /// into the document when written, which is at once (`html` stays empty).
    deferred: bool,
    connection: u32,
    correlation_id: Option<i32>,
    request: bool,
    /// A request: the number of the response written beside it, once it came.
    mate: Option<Box<Entry>>,
    /// A request that waits no more for its response (written alone).
    done: bool,
}

/// Requests that may wait for their responses at once (each holding its rendered
/// HTML); past it, the oldest is written alone.
const MAX_WAITING: usize = 64;
/// Bytes of rendered HTML the waiting requests may hold together; past it, the oldest
/// are written alone.
const MAX_WAITING_BYTES: usize = 16 << 20;
/// Rows of the contents list kept; past it, the list ends with how many were left out.
const MAX_CONTENTS: usize = 100_000;

/// The HTML document of `kwire read/decode --format html`, written message by message:
/// the head goes out with the first message, each message as soon as its place is known
/// (a request waits for its response, paired by connection and correlation_id, so that
/// the two stand side by side; at most `MAX_WAITING` (64) requests and
/// `MAX_WAITING_BYTES` (16 MiB) of them wait, the oldest written alone past that, and every
/// message after a waiting one waits behind it so that the order is the capture's), and
/// the contents list and the hover script at the end ([`Doc::finish`]). Only the
/// waiting messages and one line of contents per row are held.
pub struct Doc {
    title: String,
    started: bool,
    added: usize,
    /// Rows not yet written, in order: singles, requests waiting, requests with their
    /// responses.
    queue: std::collections::VecDeque<Entry>,
    queued_bytes: usize,
    /// `(n, short, response n)` of each row written, for the contents list.
    contents: Vec<(usize, String, Option<usize>)>,
    rows: usize,
}

impl Doc {
    /// An empty document titled `title`.
    pub fn new(title: &str) -> Doc {
        Doc {
            title: title.to_string(),
            started: false,
            added: 0,
            queue: std::collections::VecDeque::new(),
            queued_bytes: 0,
            contents: Vec::new(),
            rows: 0,
        }
    }

    /// Renders `m` (with its capture context, when it came from a capture; `stream`
    /// otherwise numbers the input's streams) and writes what of the document can be
    /// written.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn add(
        &mut self,
        w: &mut dyn Write,
        schema: &Schema,
        m: &Message<'_>,
        ctx: Option<&Context>,
        stream: u32,
        opts: &RenderOptions,
    ) -> io::Result<()> {
        if !self.started {
            self.started = true;
            h::doc_head(w, &self.title)?;
            writeln!(w, "<h1>{}</h1>", esc(&self.title))?;
            writeln!(
                w,
                "<p class=\"intro\">Each request beside its response; the contents list is at the <a href=\"#contents\">end</a>. Hover a tree row to see its bytes, or a byte to see its row.</p>"
            )?;
        }
        let opts = RenderOptions {
            color: false,
            ..opts.clone()
        };
        self.added += 1;
        let n = self.added;
        let sid = format!("m{n}");
        let mut body = |w: &mut dyn Write| -> io::Result<()> {
            h::message_html(w, m, &sid, &opts)?;
            if let Some(d) = user_definition(schema, m) {
                writeln!(
                    w,
                    "<details><summary>kafka message schema (.json)</summary><pre class=\"json\">{}</pre></details>",
                    esc(&d)
                )?;
            }
            Ok(())
        };
        // A page over what the waiting rows may hold together is not held at all: it is
        // written at once (the bound sends every row before it out alone), rendered
        // again straight into the document, so that memory does not follow the largest
        // message's HTML (some 60 MB for a 1 MB Produce).
        let mut buf = super::Capped::new(MAX_WAITING_BYTES);
        let deferred = match body(&mut buf) {
            Ok(()) => false,
            Err(_) if buf.over() => true,
            Err(e) => return Err(e),
        };
        let html = if deferred {
            String::new()
        } else {
            crate::text::utf8_owned(buf.into_inner())
        };
        let bytes = if deferred {
            MAX_WAITING_BYTES + 1
        } else {
            html.len()
        };
        let name = m.api_name.unwrap_or("unknown API");
        let e = Entry {
            n,
            title: rtext::title(m, ctx, false),
            short: format!(
                "{name} v{} {}, correlation_id {}",
                m.api_version,
                m.direction.as_str(),
                m.correlation_id
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "?".into())
            ),
            html,
            bytes,
            deferred,
            connection: ctx.map(|c| c.connection).unwrap_or(stream),
            correlation_id: m.correlation_id,
            request: m.direction == Direction::Request,
            mate: None,
            done: false,
        };
        self.queued_bytes += e.bytes;
        // A response goes beside the first request still waiting for it.
        let waiting = (!e.request)
            .then(|| {
                self.queue.iter_mut().find(|q| {
                    q.request
                        && !q.done
                        && q.mate.is_none()
                        && q.connection == e.connection
                        && q.correlation_id == e.correlation_id
                })
            })
            .flatten();
        match waiting {
            Some(q) => q.mate = Some(Box::new(e)),
            None => {
                let alone = !e.request || e.correlation_id.is_none();
                let mut e = e;
                e.done = alone;
                self.queue.push_back(e);
            }
        }
        // Past the bounds, the oldest waiting requests are written alone.
        let mut waiting = self
            .queue
            .iter()
            .filter(|q| q.request && !q.done && q.mate.is_none())
            .count();
        for q in self.queue.iter_mut() {
            if waiting <= MAX_WAITING && self.queued_bytes <= MAX_WAITING_BYTES {
                break;
            }
            if q.request && !q.done && q.mate.is_none() {
                q.done = true;
                waiting -= 1;
            }
        }
        self.write_ready(w, false, &mut body)?;
        // (A deferred page is always written above; should one stay, it is held as any.)
        let hold = |x: &mut Entry| -> io::Result<()> {
            if x.deferred {
                let mut v = Vec::new();
                body(&mut v)?;
                x.html = crate::text::utf8_owned(v);
                x.deferred = false;
            }
            Ok(())
        };
        for q in self.queue.iter_mut() {
            hold(q)?;
            if let Some(m) = q.mate.as_deref_mut() {
                hold(m)?;
            }
        }
        Ok(())
    }

    /// How many messages were added.
    pub fn len(&self) -> usize {
        self.added
    }

    /// Whether none were.
    pub fn is_empty(&self) -> bool {
        self.added == 0
    }

    /// Writes the rows at the front of the queue whose place is known (all with `all`);
    /// a deferred page ([`Entry::deferred`]: the message being added) by `render`.
    fn write_ready(
        &mut self,
        w: &mut dyn Write,
        all: bool,
        render: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        while let Some(front) = self.queue.front() {
            if !(all || front.done || front.mate.is_some()) {
                break;
            }
            let Some(mut e) = self.queue.pop_front() else {
                break;
            };
            self.queued_bytes -= e.bytes + e.mate.as_ref().map_or(0, |m| m.bytes);
            let class = if e.mate.is_some() { "pair" } else { "single" };
            writeln!(w, "<div class=\"{class}\">")?;
            let mate_n = e.mate.as_ref().map(|m| m.n);
            if self.contents.len() < MAX_CONTENTS {
                self.contents.push((e.n, e.short.clone(), mate_n));
            }
            self.rows += 1;
            let mate = e.mate.take().map(|m| *m);
            for x in std::iter::once(&e).chain(mate.as_ref()) {
                writeln!(w, "<section class=\"msg\" id=\"m{}\">", x.n)?;
                writeln!(w, "<h2>{}. {}</h2>", x.n, esc(&x.short))?;
                writeln!(w, "<div class=\"title\">{}</div>", esc(&x.title))?;
                if x.deferred {
                    render(w)?;
                } else {
                    w.write_all(x.html.as_bytes())?;
                }
                writeln!(w, "</section>")?;
            }
            writeln!(w, "</div>")?;
        }
        Ok(())
    }

    /// Writes the rows still waiting, the contents list and the end of the document (the
    /// whole document when no message was added).
    ///
    /// # Errors
    /// The writer's errors.
    pub fn finish(&mut self, w: &mut dyn Write) -> io::Result<()> {
        if !self.started {
            self.started = true;
            h::doc_head(w, &self.title)?;
            writeln!(w, "<h1>{}</h1>", esc(&self.title))?;
        }
        // Nothing deferred waits here (see `add`).
        self.write_ready(w, true, &mut |_| Ok(()))?;
        writeln!(
            w,
            "<nav class=\"toc\" id=\"contents\"><h2>Contents</h2><p class=\"intro\">{}.</p><ol>",
            crate::text::count(self.added as u64, "message", "messages")
        )?;
        for (n, short, mate) in &self.contents {
            write!(w, "<li><a href=\"#m{n}\">{}</a>", esc(short))?;
            if let Some(j) = mate {
                write!(w, " · <a href=\"#m{j}\">response</a>")?;
            }
            writeln!(w, "</li>")?;
        }
        writeln!(w, "</ol>")?;
        if self.rows > self.contents.len() {
            writeln!(
                w,
                "<p class=\"intro\">… and {} more rows, not listed (the list keeps {MAX_CONTENTS}).</p>",
                self.rows - self.contents.len()
            )?;
        }
        writeln!(w, "</nav>")?;
        h::doc_tail(w)
    }
}

/// Which document [`Pages`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageFormat {
    /// [`markdown`], one numbered section a message.
    Md,
    /// One [`Doc`].
    Html,
}

/// `kwire read --format md|html` as the capture engine's per-message work
/// ([`crate::run::Work`]): each message numbered and written into one document. The
/// numbering and the document follow the messages shown before, so the run that drives
/// it has one thread; [`Pages::finish`] ends the document once every capture is read.
pub struct Pages<'s> {
    schema: &'s Schema,
    format: PageFormat,
    opts: RenderOptions,
    /// Flush the output after each message.
    pub flush_each: bool,
    /// Print nothing (`-q`).
    pub quiet: bool,
    state: std::sync::Mutex<PagesState>,
}

/// What [`Pages`] carries from message to message.
struct PagesState {
    n: usize,
    doc: Doc,
    previous_shown: Option<(i64, u32)>,
}

impl<'s> Pages<'s> {
    /// Pages of `format`, with `opts`, titled `title` (HTML).
    pub fn new(schema: &'s Schema, format: PageFormat, opts: RenderOptions, title: &str) -> Self {
        Pages {
            schema,
            format,
            opts,
            flush_each: false,
            quiet: false,
            state: std::sync::Mutex::new(PagesState {
                n: 0,
                doc: Doc::new(title),
                previous_shown: None,
            }),
        }
    }

    /// Ends the document (HTML: the rows still waiting, the contents list and the
    /// script; Markdown: nothing).
    ///
    /// # Errors
    /// The writer's errors.
    pub fn finish(&self, w: &mut dyn Write) -> io::Result<()> {
        if self.format == PageFormat::Html {
            let mut st = self
                .state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            st.doc.finish(w)?;
            w.flush()?;
        }
        Ok(())
    }
}

impl crate::run::Work for Pages<'_> {
    type Output = ();
    fn message(&self, m: &Message<'_>, ctx: &Context, out: &mut dyn Write) -> io::Result<()> {
        let mut st = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !self.quiet {
            let opts = &crate::render::time::with_times(&self.opts, ctx, st.previous_shown);
            st.n += 1;
            match self.format {
                PageFormat::Md => markdown(out, self.schema, st.n, m, Some(ctx), opts)?,
                PageFormat::Html => st.doc.add(out, self.schema, m, Some(ctx), 0, opts)?,
            }
            if self.flush_each {
                out.flush()?;
            }
        }
        st.previous_shown = Some(ctx.time);
        Ok(())
    }
}
