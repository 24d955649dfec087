//! The diff printed: terminal text, Markdown tables, JSON and the `NAME-vN-diff` pages
//! (Markdown and HTML) of what [`super`] computes.

use super::*;

/// Output styles of [`write_text`].
#[derive(Clone, Copy, Debug)]
pub struct TextStyle {
    /// ANSI colours (green added, red removed, yellow changed).
    pub color: bool,
}

fn paint(s: &str, kind: ChangeKind, color: bool) -> String {
    if !color {
        return s.to_string();
    }
    let code = match kind {
        ChangeKind::Added => "32",
        ChangeKind::Removed => "31",
        _ => "33",
    };
    format!("\x1b[{code}m{s}\x1b[0m")
}

fn sign(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Added => "+",
        ChangeKind::Removed => "-",
        _ => "~",
    }
}

fn describe(c: &Change) -> String {
    match c.kind {
        ChangeKind::Added => format!("added ({})", c.to.as_deref().unwrap_or("")),
        ChangeKind::Removed => format!("removed ({})", c.from.as_deref().unwrap_or("")),
        _ => format!(
            "{}: {} -> {}",
            c.kind.as_str(),
            c.from.as_deref().unwrap_or("none"),
            c.to.as_deref().unwrap_or("none")
        ),
    }
}

fn side_heading(d: &ApiDiff) -> String {
    let src = |s: &str| {
        if s.is_empty() {
            String::new()
        } else {
            format!(" ({s})")
        }
    };
    format!(
        "{} v{}{} -> v{}{}",
        d.api_name,
        d.from_version,
        src(&d.from_source),
        d.to_version,
        src(&d.to_source)
    )
}

/// `only in v13 (4.3)` for a message one side lacks.
fn missing_line(d: &ApiDiff, m: &MessageDiff) -> Option<String> {
    let only = |v: i16, s: &str| Some(format!("only in v{v} ({s})"));
    match (m.from_header, m.to_header) {
        (None, Some(_)) => only(d.to_version, &d.to_source),
        (Some(_), None) => only(d.from_version, &d.from_source),
        _ => None,
    }
}

/// Prints comparisons as text, one block each.
///
/// # Errors
/// The writer's.
pub fn write_text(
    w: &mut dyn std::io::Write,
    diffs: &[ApiDiff],
    st: TextStyle,
) -> std::io::Result<()> {
    for (i, d) in diffs.iter().enumerate() {
        if i > 0 {
            writeln!(w)?;
        }
        writeln!(w, "{}", side_heading(d))?;
        for m in &d.messages {
            let title = match m.kind {
                MessageKind::Request => "request",
                _ => "response",
            };
            if let Some(why) = missing_line(d, m) {
                writeln!(w, "  {title} {}: {why}", m.name)?;
                continue;
            }
            if m.changes.is_empty() {
                writeln!(w, "  {title}: no change on the wire")?;
                continue;
            }
            writeln!(w, "  {title}:")?;
            let width = m.changes.iter().map(|c| c.path.len()).max().unwrap_or(0);
            for c in &m.changes {
                let line = format!(
                    "    {} {:width$}  {}  [{}]",
                    sign(c.kind),
                    c.path,
                    describe(c),
                    c.wire
                );
                writeln!(w, "{}", paint(&line, c.kind, st.color))?;
            }
        }
    }
    Ok(())
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Prints comparisons as Markdown: a heading and a table per message.
///
/// # Errors
/// The writer's.
pub fn write_markdown(
    w: &mut dyn std::io::Write,
    diffs: &[ApiDiff],
    level: usize,
) -> std::io::Result<()> {
    let h = "#".repeat(level.clamp(1, 5));
    for d in diffs {
        writeln!(w, "{h} {}", side_heading(d))?;
        writeln!(w)?;
        for m in &d.messages {
            let title = match m.kind {
                MessageKind::Request => "Request",
                _ => "Response",
            };
            writeln!(w, "{h}# {title} ({})", m.name)?;
            writeln!(w)?;
            if let Some(why) = missing_line(d, m) {
                writeln!(w, "{why}.")?;
                writeln!(w)?;
                continue;
            }
            if m.changes.is_empty() {
                writeln!(w, "No change on the wire.")?;
                writeln!(w)?;
                continue;
            }
            writeln!(w, "| field | change | from | to | on the wire |")?;
            writeln!(w, "|---|---|---|---|---|")?;
            for c in &m.changes {
                writeln!(
                    w,
                    "| `{}` | {} | {} | {} | {} |",
                    md_cell(&c.path),
                    c.kind.as_str(),
                    md_cell(c.from.as_deref().unwrap_or("")),
                    md_cell(c.to.as_deref().unwrap_or("")),
                    md_cell(&c.wire)
                )?;
            }
            writeln!(w)?;
        }
    }
    Ok(())
}

/// One comparison as JSON (see `docs/json-format.md`, "kwire diff").
pub fn api_diff_json(d: &ApiDiff) -> Value {
    json!({
        "api_key": d.api_key,
        "api_name": d.api_name,
        "from": {"version": d.from_version, "source": d.from_source},
        "to": {"version": d.to_version, "source": d.to_source},
        "messages": d.messages.iter().map(|m| json!({
            "kind": m.kind.as_str(),
            "name": m.name,
            "header_version": {"from": m.from_header, "to": m.to_header},
            "flexible": {"from": m.from_flexible, "to": m.to_flexible},
            "changes": m.changes.iter().map(|c| json!({
                "path": c.path,
                "change": c.kind.as_str(),
                "from": c.from,
                "to": c.to,
                "wire": c.wire,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// A release-level version change as JSON.
pub fn versions_change_json(c: &ApiVersionsChange) -> Value {
    json!({
        "api_key": c.api_key,
        "api_name": c.api_name,
        "from_versions": c.from.to_string(),
        "to_versions": c.to.to_string(),
        "added": c.added,
        "removed": c.removed,
    })
}

/// One line of the release-level list (`Produce (0): v0-2 removed; v13 added`).
pub fn versions_change_text(c: &ApiVersionsChange) -> String {
    let mut parts = Vec::new();
    if c.from.is_empty() {
        parts.push(format!("new API (v{})", c.to));
    } else if c.to.is_empty() {
        parts.push(format!("API removed (had v{})", c.from));
    } else {
        if !c.removed.is_empty() {
            parts.push(format!("v{} removed", version_list(&c.removed)));
        }
        if !c.added.is_empty() {
            parts.push(format!("v{} added", version_list(&c.added)));
        }
    }
    format!("{} ({}): {}", c.api_name, c.api_key, parts.join("; "))
}

/// The comparisons of one API as a stand-alone Markdown page (the `NAME-vN-diff`
/// pages): a title, a link back to the version's page, and the tables.
///
/// # Errors
/// The writer's.
pub fn page_markdown(
    w: &mut dyn std::io::Write,
    d: &ApiDiff,
    back: &str,
    ext: &str,
) -> std::io::Result<()> {
    writeln!(
        w,
        "# {} v{}: what changed since v{}",
        d.api_name, d.to_version, d.from_version
    )?;
    writeln!(w)?;
    writeln!(
        w,
        "[{} v{}]({back}.{ext}) · [v{}]({}-v{}.{ext})",
        d.api_name, d.to_version, d.from_version, d.api_name, d.from_version
    )?;
    writeln!(w)?;
    write_markdown(w, std::slice::from_ref(d), 2)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The comparisons of one API as a self-contained HTML page (inline CSS).
///
/// # Errors
/// The writer's.
pub fn page_html(w: &mut dyn std::io::Write, d: &ApiDiff, back: &str) -> std::io::Result<()> {
    let title = format!(
        "{} v{}: what changed since v{}",
        d.api_name, d.to_version, d.from_version
    );
    writeln!(
        w,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    )?;
    writeln!(w, "<title>{}</title>", esc(&title))?;
    writeln!(
        w,
        "<style>body{{font-family:system-ui,sans-serif;max-width:70rem;margin:1rem auto;padding:0 1rem}}\
         table{{border-collapse:collapse;width:100%}}td,th{{border:1px solid #ccc;padding:.2rem .5rem;text-align:left;overflow-wrap:anywhere}}\
         code{{font-family:ui-monospace,monospace}}.added{{background:#e6ffec}}.removed{{background:#ffebe9}}.changed{{background:#fff8c5}}</style></head><body>"
    )?;
    writeln!(w, "<h1>{}</h1>", esc(&title))?;
    writeln!(
        w,
        "<p><a href=\"{back}.html\">{} v{}</a> · <a href=\"{}-v{}.html\">v{}</a></p>",
        esc(&d.api_name),
        d.to_version,
        esc(&d.api_name),
        d.from_version,
        d.from_version
    )?;
    for m in &d.messages {
        let title = match m.kind {
            MessageKind::Request => "Request",
            _ => "Response",
        };
        writeln!(w, "<h2>{title} ({})</h2>", esc(&m.name))?;
        if let Some(why) = missing_line(d, m) {
            writeln!(w, "<p>{why}.</p>")?;
            continue;
        }
        if m.changes.is_empty() {
            writeln!(w, "<p>No change on the wire.</p>")?;
            continue;
        }
        writeln!(
            w,
            "<table><tr><th>field</th><th>change</th><th>from</th><th>to</th><th>on the wire</th></tr>"
        )?;
        for c in &m.changes {
            let class = match c.kind {
                ChangeKind::Added => "added",
                ChangeKind::Removed => "removed",
                _ => "changed",
            };
            writeln!(
                w,
                "<tr class=\"{class}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.path),
                c.kind.as_str(),
                esc(c.from.as_deref().unwrap_or("")),
                esc(c.to.as_deref().unwrap_or("")),
                esc(&c.wire)
            )?;
        }
        writeln!(w, "</table>")?;
    }
    writeln!(w, "</body></html>")
}
