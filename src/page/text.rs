//! A page as terminal text: the API name, the intro, the metadata, then for the request
//! and the response the title line, the byte grid with a legend of its regions (their
//! byte spans, coloured when colour is on), the object tree and the JSON definition.

use std::io::{self, Write};

use owo_colors::Style;

use super::{page_options, region_runs, runs_text, Page};
use crate::render::{paint, region_style, text as rtext, RenderOptions};
use crate::schema::Schema;
use crate::tree::Buffers;

/// Words of `s` wrapped at `width` columns.
pub fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = String::new();
    for word in s.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

/// Prints `page` as text.
///
/// # Errors
/// The writer's errors.
pub fn render(
    w: &mut dyn Write,
    schema: &Schema,
    page: &Page,
    opts: &RenderOptions,
) -> io::Result<()> {
    let color = opts.color;
    writeln!(w, "{}", paint(color, &page.api_name, Style::new().bold()))?;
    for l in wrap(&page.intro(), 88) {
        writeln!(w, "{l}")?;
    }
    writeln!(w)?;
    for (k, v) in page.metadata() {
        writeln!(w, "  {k:<18} {v}")?;
    }
    let dopts = page_options();
    for side in page.sides() {
        writeln!(w)?;
        writeln!(w, "{}", paint(color, side.heading(), Style::new().bold()))?;
        writeln!(w, "{}", side.title(page.version))?;
        let arena = Buffers::new();
        let msg = side.decode(schema, &dopts, &arena, page.api_key, page.version);
        for id in 0..=msg.buffers.len() as u32 {
            rtext::grid_rows(w, &msg, id, color)?;
            let mut legend = String::from("legend:");
            for (r, runs) in region_runs(&msg, id) {
                legend.push_str("  ");
                legend.push_str(&paint(color, r.label(), region_style(r)));
                legend.push(' ');
                legend.push_str(&runs_text(&runs));
            }
            writeln!(w, "{legend}")?;
        }
        writeln!(w)?;
        writeln!(w, "object tree")?;
        rtext::tree(w, &msg, opts)?;
        writeln!(w)?;
        writeln!(w, "kafka message schema (.json)")?;
        writeln!(w, "{}", side.definition)?;
    }
    if page.response.is_none() {
        writeln!(w)?;
        writeln!(w, "Response")?;
        writeln!(w, "The schema has no response at v{}.", page.version)?;
    }
    Ok(())
}
