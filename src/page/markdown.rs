//! A page as Markdown (the form `docs/reference/` holds), and the Markdown index.

use std::io::{self, Write};

use super::{groups, page_options, page_stem, region_runs, runs_text, IndexEntry, Page};
use crate::render::{text as rtext, RenderOptions};
use crate::schema::Schema;
use crate::tree::Buffers;

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Prints `page` as Markdown. `links` are (label, file) pairs for the page's
/// navigation line when it is one of a set: the index, and the version's diff page.
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
    writeln!(w, "# {}", page.api_name)?;
    writeln!(w)?;
    if !links.is_empty() {
        let ls: Vec<String> = links.iter().map(|(l, f)| format!("[{l}]({f})")).collect();
        writeln!(w, "{}", ls.join(" · "))?;
        writeln!(w)?;
    }
    writeln!(w, "{}", page.intro())?;
    writeln!(w)?;
    writeln!(w, "| item | value |")?;
    writeln!(w, "|---|---|")?;
    for (k, v) in page.metadata() {
        writeln!(w, "| {k} | {} |", cell(&v))?;
    }
    let dopts = page_options();
    for side in page.sides() {
        writeln!(w)?;
        writeln!(w, "## {}", side.heading())?;
        writeln!(w)?;
        writeln!(w, "{}", side.title(page.version))?;
        writeln!(w)?;
        let arena = Buffers::new();
        let msg = side.decode(schema, &dopts, &arena, page.api_key, page.version);
        for id in 0..=msg.buffers.len() as u32 {
            writeln!(w, "```text")?;
            rtext::grid_rows(w, &msg, id, false)?;
            writeln!(w, "```")?;
            writeln!(w)?;
            for (r, runs) in region_runs(&msg, id) {
                writeln!(w, "- {}: {}", r.label(), runs_text(&runs))?;
            }
            writeln!(w)?;
        }
        writeln!(w, "### Object tree")?;
        writeln!(w)?;
        writeln!(w, "```text")?;
        rtext::tree(w, &msg, &opts)?;
        writeln!(w, "```")?;
        writeln!(w)?;
        writeln!(w, "### Kafka message schema (.json)")?;
        writeln!(w)?;
        writeln!(w, "```json")?;
        writeln!(w, "{}", side.definition)?;
        writeln!(w, "```")?;
    }
    if page.response.is_none() {
        writeln!(w)?;
        writeln!(w, "## Response")?;
        writeln!(w)?;
        writeln!(w, "The schema has no response at v{}.", page.version)?;
    }
    Ok(())
}

/// Prints the Markdown index of `entries` (pages named by [`page_stem`] with
/// extension `ext`).
///
/// # Errors
/// The writer's errors.
pub fn index_md(w: &mut dyn Write, entries: &[IndexEntry], ext: &str) -> io::Result<()> {
    writeln!(w, "# Kafka APIs")?;
    writeln!(w)?;
    writeln!(
        w,
        "One page per API: the smallest legal request and response at the API's newest \
         version, their bytes, object trees and definitions. Made by `kwire pages`; \
         grouped by the listeners each definition lists (an API may be in several groups)."
    )?;
    let all = entries.iter().any(|e| !e.versions.is_empty());
    for (g, es) in groups(entries) {
        writeln!(w)?;
        writeln!(w, "## {g}")?;
        writeln!(w)?;
        if all {
            writeln!(w, "| key | API | version | request | response | versions |")?;
            writeln!(w, "|---:|---|---:|---:|---:|---|")?;
        } else {
            writeln!(w, "| key | API | version | request | response |")?;
            writeln!(w, "|---:|---|---:|---:|---:|")?;
        }
        for e in es {
            let vs: Vec<String> = e
                .versions
                .iter()
                .map(|v| format!("[v{v}]({}.{ext})", page_stem(&e.api_name, Some(*v))))
                .collect();
            let vs = if all {
                format!(" {} |", vs.join(" "))
            } else {
                String::new()
            };
            writeln!(
                w,
                "| {} | [{}]({}.{ext}) | v{} | {} B | {} |{vs}",
                e.api_key,
                e.api_name,
                page_stem(&e.api_name, None),
                e.version,
                e.sizes.0,
                e.sizes
                    .1
                    .map(|s| format!("{s} B"))
                    .unwrap_or_else(|| "none".into()),
            )?;
        }
    }
    Ok(())
}
