//! `kwire diff API [FROM] [TO]` and `kwire diff [API] --release A B`: wiring only (the
//! comparison is [`crate::diff`]).

use super::{CliError, DiffFormat};
use crate::diff::{self, ApiDiff, ApiVersionsChange, TextStyle};
use crate::page::resolve_api;
use crate::schema::Schema;
use serde_json::json;
use std::io::Write;

/// Parses `v4`, `V4` or `4` as a version.
///
/// # Errors
/// A token that is not a version, named.
pub fn parse_version(s: &str) -> Result<i16, String> {
    let t = s.strip_prefix(['v', 'V']).unwrap_or(s);
    t.parse::<i16>()
        .ok()
        .filter(|v| *v >= 0)
        .ok_or_else(|| format!("{s:?} is not a version (write v4 or 4)"))
}

/// What `kwire diff` was asked.
pub struct DiffRequest<'a> {
    /// API name, message name or api_key.
    pub api: Option<&'a str>,
    /// FROM and TO versions.
    pub versions: &'a [String],
    /// `--release A B`.
    pub releases: Option<(&'a str, &'a str)>,
    /// Output format.
    pub format: DiffFormat,
    /// Colour for text.
    pub color: bool,
}

fn write_release_list(
    out: &mut dyn Write,
    a: &str,
    b: &str,
    changes: &[ApiVersionsChange],
    format: DiffFormat,
) -> Result<(), CliError> {
    match format {
        DiffFormat::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json!({
                "from_release": a,
                "to_release": b,
                "apis": changes.iter().map(diff::versions_change_json).collect::<Vec<_>>(),
            }))
            .unwrap_or_default()
        )?,
        DiffFormat::Md => {
            writeln!(out, "# Kafka {a} -> {b}: API versions added and removed")?;
            writeln!(out)?;
            writeln!(out, "| API | key | {a} | {b} | removed | added |")?;
            writeln!(out, "|---|---|---|---|---|---|")?;
            for c in changes {
                writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} |",
                    c.api_name,
                    c.api_key,
                    c.from,
                    c.to,
                    diff::version_list(&c.removed).replace("none", ""),
                    diff::version_list(&c.added).replace("none", "")
                )?;
            }
        }
        DiffFormat::Text => {
            writeln!(
                out,
                "Kafka {a} -> {b}: {} APIs changed versions",
                changes.len()
            )?;
            for c in changes {
                writeln!(out, "  {}", diff::versions_change_text(c))?;
            }
        }
    }
    Ok(())
}

fn write_diffs(
    out: &mut dyn Write,
    diffs: &[ApiDiff],
    format: DiffFormat,
    color: bool,
) -> Result<(), CliError> {
    match format {
        DiffFormat::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&serde_json::Value::Array(
                diffs.iter().map(diff::api_diff_json).collect()
            ))
            .unwrap_or_default()
        )?,
        DiffFormat::Md => diff::write_markdown(out, diffs, 1)?,
        DiffFormat::Text => diff::write_text(out, diffs, TextStyle { color })?,
    }
    Ok(())
}

/// Runs `kwire diff`.
///
/// # Errors
/// An unknown API, a version the API never had, a release missing from the stack, or
/// the writer's errors.
pub fn diff_command(
    schema: &Schema,
    req: &DiffRequest,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    if req.versions.len() > 2 {
        return Err(CliError::Msg(format!(
            "diff takes at most two versions, got {}",
            req.versions.len()
        )));
    }
    let versions = req
        .versions
        .iter()
        .map(|s| parse_version(s))
        .collect::<Result<Vec<_>, _>>()?;
    match (req.api, req.releases) {
        (None, None) => Err(CliError::Msg(
            "diff needs an API (kwire diff Fetch v12 v13) or --release A B".into(),
        )),
        (None, Some((a, b))) => {
            let ch = diff::release_changes(schema, a, b)?;
            write_release_list(out, a, b, &ch, req.format)
        }
        (Some(api), Some((a, b))) => {
            if !versions.is_empty() {
                return Err(CliError::Msg("give versions or --release, not both".into()));
            }
            let key = resolve_api(schema, api)?;
            let (ch, d) = diff::release_api_diff(schema, key, a, b)?;
            if req.format == DiffFormat::Json {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&json!({
                        "from_release": a,
                        "to_release": b,
                        "versions": diff::versions_change_json(&ch),
                        "diff": d.as_ref().map(diff::api_diff_json),
                    }))
                    .unwrap_or_default()
                )?;
                return Ok(());
            }
            let line = format!("Kafka {a} -> {b}: {}", diff::versions_change_text(&ch));
            let line = if ch.added.is_empty() && ch.removed.is_empty() {
                format!(
                    "Kafka {a} -> {b}: {} ({}): same versions",
                    ch.api_name, ch.api_key
                )
            } else {
                line
            };
            writeln!(out, "{line}\n")?;
            if let Some(d) = d {
                write_diffs(out, &[d], req.format, req.color)?;
            }
            Ok(())
        }
        (Some(api), None) => {
            let key = resolve_api(schema, api)?;
            let diffs = diff::version_diffs(
                schema,
                key,
                versions.first().copied(),
                versions.get(1).copied(),
            )?;
            if diffs.is_empty() {
                return Err(CliError::Msg(format!(
                    "{api} has one version only: nothing to compare"
                )));
            }
            write_diffs(out, &diffs, req.format, req.color)
        }
    }
}
