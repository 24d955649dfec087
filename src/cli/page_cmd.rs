//! `kwire page NAME` (one reference page) and `kwire pages --out DIR` (a page for every
//! API, and every version with `--all-versions`, plus an index).

use super::{CliError, PageFormat, PagesFormat};
use crate::page::{
    self, default_page_version, html, index_html, index_md, markdown, page_stem, resolve_api,
    IndexEntry, Page,
};
use crate::render::RenderOptions;
use crate::schema::{MessageKind, Schema};
use std::io::Write;
use std::path::Path;

/// The render options of a page: no folding, descriptions cut unless `wide`.
pub fn page_render_options(color: bool, wide: bool) -> RenderOptions {
    RenderOptions {
        color,
        wide,
        max_elements: 1 << 20,
        max_value_len: if wide {
            usize::MAX
        } else {
            RenderOptions::default().max_value_len
        },
        ..RenderOptions::default()
    }
}

/// `kwire page NAME [--version N] [--format text|md|html]`.
///
/// # Errors
/// An unknown NAME or version, or the writer's errors.
pub fn page_command(
    schema: &Schema,
    name: &str,
    version: Option<i16>,
    format: PageFormat,
    ropts: &RenderOptions,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let key = resolve_api(schema, name)?;
    let v = match version {
        Some(v) => v,
        None => default_page_version(schema, key)
            .ok_or_else(|| CliError::Msg(format!("{name} has no versions in any release")))?,
    };
    let p = Page::build(schema, key, v)?;
    match format {
        PageFormat::Text => page::text::render(out, schema, &p, ropts)?,
        PageFormat::Md => markdown::render(out, schema, &p, ropts, None)?,
        PageFormat::Html => html::render(out, schema, &p, ropts, None)?,
    }
    Ok(())
}

fn write_page(
    dir: &Path,
    schema: &Schema,
    p: &Page,
    stem: &str,
    format: PagesFormat,
    ropts: &RenderOptions,
) -> Result<(), CliError> {
    let (ext, index) = match format {
        PagesFormat::Md => ("md", "index.md"),
        PagesFormat::Html => ("html", "index.html"),
    };
    let path = dir.join(format!("{stem}.{ext}"));
    let mut buf = Vec::new();
    match format {
        PagesFormat::Md => markdown::render(&mut buf, schema, p, ropts, Some(index))?,
        PagesFormat::Html => html::render(&mut buf, schema, p, ropts, Some(index))?,
    }
    std::fs::write(&path, buf).map_err(|e| CliError::Msg(format!("{}: {e}", path.display())))
}

/// `kwire pages --out DIR [--format md|html] [--all-versions]`: writes the pages and the
/// index; returns the number of pages written.
///
/// # Errors
/// A page that cannot be built or a file that cannot be written.
pub fn pages_command(
    schema: &Schema,
    dir: &Path,
    format: PagesFormat,
    all_versions: bool,
    ropts: &RenderOptions,
) -> Result<usize, CliError> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::Msg(format!("{}: {e}", dir.display())))?;
    let mut entries = Vec::new();
    let mut n = 0;
    for key in schema.api_keys() {
        let Some(v) = default_page_version(schema, key) else {
            continue;
        };
        let p = Page::build(schema, key, v)?;
        write_page(
            dir,
            schema,
            &p,
            &page_stem(&p.api_name, None),
            format,
            ropts,
        )?;
        n += 1;
        let mut versions = Vec::new();
        if all_versions {
            for x in schema.versions(MessageKind::Request, key) {
                let px = Page::build(schema, key, x)?;
                write_page(
                    dir,
                    schema,
                    &px,
                    &page_stem(&px.api_name, Some(x)),
                    format,
                    ropts,
                )?;
                versions.push(x);
                n += 1;
            }
        }
        entries.push(IndexEntry {
            api_key: key,
            api_name: p.api_name.clone(),
            version: v,
            versions,
            listeners: p.listeners.clone(),
            sizes: (
                p.request.frame.len(),
                p.response.as_ref().map(|r| r.frame.len()),
            ),
        });
    }
    let mut buf = Vec::new();
    let name = match format {
        PagesFormat::Md => {
            index_md(&mut buf, &entries, "md")?;
            "index.md"
        }
        PagesFormat::Html => {
            index_html(&mut buf, &entries, "html")?;
            "index.html"
        }
    };
    let path = dir.join(name);
    std::fs::write(&path, buf).map_err(|e| CliError::Msg(format!("{}: {e}", path.display())))?;
    Ok(n)
}
