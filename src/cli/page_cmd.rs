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
        PageFormat::Md => markdown::render(out, schema, &p, ropts, &[])?,
        PageFormat::Html => html::render(out, schema, &p, ropts, &[])?,
    }
    Ok(())
}

fn ext(format: PagesFormat) -> &'static str {
    match format {
        PagesFormat::Md => "md",
        PagesFormat::Html => "html",
    }
}

fn write_file(path: &Path, buf: Vec<u8>) -> Result<(), CliError> {
    std::fs::write(path, buf).map_err(|e| CliError::Msg(format!("{}: {e}", path.display())))
}

/// Writes one page; `diff` is the stem of the version's diff page, when it has one.
fn write_page(
    dir: &Path,
    schema: &Schema,
    p: &Page,
    stem: &str,
    (format, diff): (PagesFormat, Option<&str>),
    ropts: &RenderOptions,
) -> Result<(), CliError> {
    let ext = ext(format);
    let index = format!("index.{ext}");
    let diff_file = diff.map(|d| format!("{d}.{ext}"));
    let diff_label = format!("What changed since v{}", p.version - 1);
    let mut links = vec![("All APIs", index.as_str())];
    if let Some(f) = &diff_file {
        links.push((diff_label.as_str(), f.as_str()));
    }
    let path = dir.join(format!("{stem}.{ext}"));
    let mut buf = Vec::new();
    match format {
        PagesFormat::Md => markdown::render(&mut buf, schema, p, ropts, &links)?,
        PagesFormat::Html => html::render(&mut buf, schema, p, ropts, &links)?,
    }
    write_file(&path, buf)
}

/// Writes `NAME-vN-diff` (the changes since the version before) and returns its stem.
fn write_diff_page(
    dir: &Path,
    d: &crate::diff::ApiDiff,
    format: PagesFormat,
) -> Result<String, CliError> {
    let stem = format!("{}-diff", page_stem(&d.api_name, Some(d.to_version)));
    let back = page_stem(&d.api_name, Some(d.to_version));
    let mut buf = Vec::new();
    match format {
        PagesFormat::Md => crate::diff::page_markdown(&mut buf, d, &back, "md")?,
        PagesFormat::Html => crate::diff::page_html(&mut buf, d, &back)?,
    }
    write_file(&dir.join(format!("{stem}.{}", ext(format))), buf)?;
    Ok(stem)
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
            (format, None),
            ropts,
        )?;
        n += 1;
        let mut versions = Vec::new();
        if all_versions {
            let all = schema.versions(MessageKind::Request, key);
            for (i, &x) in all.iter().enumerate() {
                // The changes since the version before, when there is one just before.
                let diff = match i.checked_sub(1).map(|j| all[j]) {
                    Some(prev) if prev == x - 1 => {
                        let d = crate::diff::version_diffs(schema, key, Some(prev), Some(x))?;
                        n += 1;
                        Some(write_diff_page(dir, &d[0], format)?)
                    }
                    _ => None,
                };
                let px = Page::build(schema, key, x)?;
                write_page(
                    dir,
                    schema,
                    &px,
                    &page_stem(&px.api_name, Some(x)),
                    (format, diff.as_deref()),
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
