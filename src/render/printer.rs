//! `kwire read`'s per-message printers as one [`Work`] of the capture engine: the
//! formats of [`Format`], `-x`'s summary line and byte grid, and `-T fields`. (The
//! Markdown and HTML pages, numbered and laid out as one document, are
//! `crate::page::frames::Pages`.) The display filter wraps a printer
//! (`crate::filter::Select`).

use super::fields::Fields;
use super::time::with_times;
use super::{summary, text, Format, RenderOptions};
use crate::filter::MessageFacts;
use crate::run::Work;
use crate::session::Context;
use crate::tree::Message;
use std::io::Write;
use std::sync::Mutex;

/// What a [`Printer`] prints of each message.
#[derive(Clone, Debug)]
pub enum Shape {
    /// One of the printers of [`Format`] (a text message ends with an empty line).
    Format(Format),
    /// The summary line, then the byte grids (frame, then decompressed buffers) and an
    /// empty line (`kwire read -x`).
    LineGrid,
    /// `-T fields`: one row of the `-e` fields.
    Fields(Fields),
}

/// Prints each message it is given in one [`Shape`], with the capture context.
pub struct Printer {
    /// What is printed.
    pub shape: Shape,
    /// How.
    pub opts: RenderOptions,
    /// Print nothing (`-q`): the messages are only counted.
    pub quiet: bool,
    /// Flush the output after each message (`-l`, a terminal, a live capture).
    pub flush_each: bool,
    /// The capture's requests that got no response, by the record number of their last
    /// segment, for the
    /// `unanswered` field of `-T fields` (see [`MessageFacts::unanswered`]).
    pub unanswered: Option<crate::input::RecordSet>,
    /// With one thread (the run gives the messages in order on the reading thread): the
    /// time of the message printed before, for `-t dd`.
    previous_shown: Option<Mutex<Option<(i64, u32)>>>,
}

impl Printer {
    /// A printer of `shape` with `opts`. `ordered`: the messages come on the reading
    /// thread in capture order (a run with one thread), so the printer may count from the
    /// message it printed before (`-t dd`; [`super::time::TimeFormat::DeltaShown`]).
    pub fn new(shape: Shape, opts: RenderOptions, ordered: bool) -> Printer {
        Printer {
            shape,
            opts,
            quiet: false,
            flush_each: false,
            unanswered: None,
            previous_shown: ordered.then(|| Mutex::new(None)),
        }
    }

    /// Prints message `m` with render options `opts` (its time references set).
    fn print(
        &self,
        m: &Message<'_>,
        ctx: &Context,
        opts: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        match &self.shape {
            Shape::Format(f) => {
                super::render(out, *f, m, Some(ctx), opts)?;
                if *f == Format::Text {
                    writeln!(out)?;
                }
            }
            Shape::LineGrid => {
                summary::render(out, m, Some(ctx), opts)?;
                text::grids(out, m, opts.color)?;
                writeln!(out)?;
            }
            Shape::Fields(f) => {
                let facts = MessageFacts {
                    capture: Some(ctx),
                    unanswered: self.unanswered.as_ref(),
                };
                f.row(m, &facts, out)?;
            }
        }
        Ok(())
    }
}

impl Work for Printer {
    type Output = ();
    fn message(&self, m: &Message<'_>, ctx: &Context, out: &mut dyn Write) -> std::io::Result<()> {
        // Locked only on the reading thread's path (workers never wait for it).
        let mut shown = self
            .previous_shown
            .as_ref()
            .map(|p| p.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        if !self.quiet {
            let previous = shown.as_deref().copied().flatten();
            self.print(m, ctx, &with_times(&self.opts, ctx, previous), out)?;
            if self.flush_each {
                out.flush()?;
            }
        }
        if let Some(s) = shown.as_deref_mut() {
            *s = Some(ctx.time);
        }
        Ok(())
    }
}
