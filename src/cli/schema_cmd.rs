//! `kwire apis` and `kwire schema`: what the schema stack knows, without any bytes.

use crate::schema::{
    Definition, Field, FieldType, MessageDef, MessageKind, Prim, Schema, Source, Versions,
};
use serde_json::{json, Value};
use std::io::Write;

/// One API as `kwire apis` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiInfo {
    /// The api_key.
    pub api_key: i16,
    /// The API name (`DeleteTopics`).
    pub api_name: String,
    /// Lowest version of the newest source that has versions of the API.
    pub min_version: Option<i16>,
    /// Highest version of that source.
    pub max_version: Option<i16>,
    /// Older versions still decoded from an earlier release.
    pub legacy_versions: Vec<i16>,
    /// The response versions of the same source.
    pub response_versions: Option<Versions>,
    /// First flexible version, `None` when never flexible.
    pub flexible_min_version: Option<i16>,
    /// `deprecatedVersions` of that source.
    pub deprecated_versions: Option<Versions>,
    /// `listeners` of that source.
    pub listeners: Vec<String>,
    /// Every source that serves some version, best first.
    pub source_releases: Vec<String>,
    /// The release whose definition first says `none` (APIs removed by Kafka 4.0).
    pub removed_in: Option<String>,
    /// The source of min/max.
    pub source: String,
}

/// The definitions of `(kind, api_key)` that serve some version, best first.
pub fn serving(schema: &Schema, kind: MessageKind, key: i16) -> Vec<&Definition> {
    schema
        .by_api(kind, key)
        .into_iter()
        .filter(|d| !d.def.valid_versions.is_empty())
        .collect()
}

/// Builds the `apis` table from the schema stack.
pub fn api_infos(schema: &Schema) -> Vec<ApiInfo> {
    let mut out = Vec::new();
    for key in schema.api_keys() {
        let all = schema.by_api(MessageKind::Request, key);
        let reqs = serving(schema, MessageKind::Request, key);
        let resps = serving(schema, MessageKind::Response, key);
        let name = schema.api_name(key).unwrap_or("?").to_string();
        let primary = reqs.first();
        let (min, max) = match primary {
            Some(d) => (Some(d.def.valid_versions.lo), Some(d.def.valid_versions.hi)),
            None => (None, None),
        };
        let legacy: Vec<i16> = schema
            .versions(MessageKind::Request, key)
            .into_iter()
            .filter(|v| primary.is_some_and(|p| !p.def.valid_versions.contains(*v)))
            .collect();
        let mut sources: Vec<String> = Vec::new();
        for d in &reqs {
            let s = d.source.to_string();
            let serves = schema
                .versions(MessageKind::Request, key)
                .iter()
                .any(|v| schema.request(key, *v).is_some_and(|x| std::ptr::eq(x, *d)));
            if serves && !sources.contains(&s) {
                sources.push(s);
            }
        }
        let removed_in = match all.first() {
            Some(newest) if newest.def.valid_versions.is_empty() => {
                schema.history(&newest.def.name).and_then(|h| {
                    let mut had = false;
                    h.iter().find_map(|(r, v)| {
                        if v.is_empty() && had {
                            Some(r.clone())
                        } else {
                            had |= !v.is_empty();
                            None
                        }
                    })
                })
            }
            _ => None,
        };
        let resp_v = primary
            .and_then(|p| resps.iter().find(|r| r.source == p.source))
            .map(|r| r.def.valid_versions);
        out.push(ApiInfo {
            api_key: key,
            api_name: name,
            min_version: min,
            max_version: max,
            legacy_versions: legacy,
            response_versions: resp_v,
            flexible_min_version: primary.and_then(|p| {
                (!p.def.flexible_versions.is_empty()).then_some(p.def.flexible_versions.lo)
            }),
            // The newest definition that states deprecatedVersions: Kafka 4.0 removed the
            // versions 3.9 deprecated, and with them the statement, while old clients
            // still send them (they decode as legacy versions).
            deprecated_versions: primary
                .into_iter()
                .copied()
                .chain(reqs.iter().copied())
                .find(|d| !d.def.deprecated_versions.is_empty())
                .map(|d| d.def.deprecated_versions),
            listeners: primary.map(|p| p.def.listeners.clone()).unwrap_or_default(),
            source_releases: sources,
            removed_in,
            source: primary.map(|p| p.source.to_string()).unwrap_or_default(),
        });
    }
    out
}

/// The `apis` table as JSON (an array of objects).
pub fn apis_json(infos: &[ApiInfo]) -> Value {
    Value::Array(
        infos
            .iter()
            .map(|a| {
                json!({
                    "api_key": a.api_key,
                    "api_name": a.api_name,
                    "min_version": a.min_version,
                    "max_version": a.max_version,
                    "legacy_versions": a.legacy_versions,
                    "response_versions": a.response_versions.map(|v| v.to_string()),
                    "flexible_min_version": a.flexible_min_version,
                    "deprecated_versions": a.deprecated_versions.map(|v| v.to_string()),
                    "listeners": a.listeners,
                    "source_releases": a.source_releases,
                    "removed_in": a.removed_in,
                })
            })
            .collect(),
    )
}

/// Prints the `apis` table as text, like `kafka-broker-api-versions` but for the schema.
pub fn apis_text(infos: &[ApiInfo], w: &mut dyn Write) -> std::io::Result<()> {
    // The api column fits the longest name (StreamsGroupTopologyDescriptionUpdate, 37).
    let nw = infos
        .iter()
        .map(|a| a.api_name.len())
        .max()
        .unwrap_or(0)
        .max(34);
    writeln!(
        w,
        "{:>3}  {:<nw$} {:<9} {:<9} {:<9} {:<10} {:<27} {:<12} notes",
        "key", "api", "request", "response", "flexible", "deprecated", "listeners", "from"
    )?;
    for a in infos {
        let req = match (a.min_version, a.max_version) {
            (Some(lo), Some(hi)) if lo == hi => format!("{lo}"),
            (Some(lo), Some(hi)) => format!("{lo}-{hi}"),
            _ => "none".into(),
        };
        let mut notes = Vec::new();
        if !a.legacy_versions.is_empty() {
            let l: Vec<String> = a.legacy_versions.iter().map(|v| v.to_string()).collect();
            notes.push(format!("legacy v{}", l.join(",")));
        }
        if let Some(r) = &a.removed_in {
            notes.push(format!("removed in {r}"));
        }
        writeln!(
            w,
            "{:>3}  {:<nw$} {:<9} {:<9} {:<9} {:<10} {:<27} {:<12} {}",
            a.api_key,
            a.api_name,
            req,
            a.response_versions
                .map(|v| v.to_string())
                .unwrap_or_else(|| "none".into()),
            a.flexible_min_version
                .map(|v| format!("{v}+"))
                .unwrap_or_else(|| "none".into()),
            a.deprecated_versions
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into()),
            a.listeners.join(","),
            a.source_releases.join(","),
            notes.join("; ")
        )?;
    }
    Ok(())
}

fn guide_type(t: &FieldType, flexible: bool, nullable: bool) -> String {
    match t {
        FieldType::Prim(p) => {
            let base = match p {
                Prim::Bool => "BOOLEAN",
                Prim::Int8 => "INT8",
                Prim::Int16 => "INT16",
                Prim::Uint16 => "UINT16",
                Prim::Int32 => "INT32",
                Prim::Uint32 => "UNSIGNED_INT32",
                Prim::Int64 => "INT64",
                Prim::Float64 => "FLOAT64",
                Prim::Uuid => "UUID",
                Prim::String => "STRING",
                Prim::Bytes => "BYTES",
                Prim::Records => "RECORDS",
            };
            if matches!(p, Prim::String | Prim::Bytes | Prim::Records) {
                format!(
                    "{}{}{}",
                    if flexible { "COMPACT_" } else { "" },
                    if nullable { "NULLABLE_" } else { "" },
                    base
                )
            } else {
                base.to_string()
            }
        }
        FieldType::Array(inner) => format!(
            "{}ARRAY[{}]",
            if flexible { "COMPACT_" } else { "" },
            guide_type(inner, flexible, false)
        ),
        FieldType::Struct(s) => s.clone(),
    }
}

/// Prints the grammar of `def` at `version` in the BNF style of Kafka's protocol guide.
pub fn bnf(def: &MessageDef, version: i16, w: &mut dyn Write) -> std::io::Result<()> {
    let flexible = def.is_flexible(version);
    let title = match def.kind {
        MessageKind::Request => format!("{} Request", def.name.trim_end_matches("Request")),
        MessageKind::Response => format!("{} Response", def.name.trim_end_matches("Response")),
        _ => def.name.clone(),
    };
    fn names(def: &MessageDef, fs: &[Field], version: i16, flexible: bool) -> String {
        let mut parts = Vec::new();
        for f in fs {
            if !f.versions.contains(version) || (flexible && f.is_tagged(version)) {
                continue;
            }
            let n = crate::decode::walk::snake_case(&f.name);
            parts.push(if matches!(f.ty, FieldType::Array(_)) {
                format!("[{n}]")
            } else {
                n
            });
        }
        if flexible {
            parts.push("_tagged_fields".into());
        }
        let _ = def;
        parts.join(" ")
    }
    fn body(
        def: &MessageDef,
        fs: &[Field],
        version: i16,
        flexible: bool,
        indent: usize,
        w: &mut dyn Write,
    ) -> std::io::Result<()> {
        let pad = "  ".repeat(indent);
        for f in fs {
            if !f.versions.contains(version) {
                continue;
            }
            let n = crate::decode::walk::snake_case(&f.name);
            let ff = f
                .flexible_versions
                .map(|v| v.contains(version))
                .unwrap_or(flexible);
            let tagged = flexible && f.is_tagged(version);
            let mark = if tagged {
                format!(" (tagged, tag {})", f.tag.unwrap_or(0))
            } else {
                String::new()
            };
            match f.struct_name() {
                Some(s) => {
                    let sub = if f.fields.is_empty() {
                        def.struct_fields(s).unwrap_or(&[])
                    } else {
                        &f.fields
                    };
                    let nullable = if f.nullable_versions.contains(version) {
                        " (nullable)"
                    } else {
                        ""
                    };
                    writeln!(
                        w,
                        "{pad}{n} => {}{nullable}{mark}",
                        names(def, sub, version, flexible)
                    )?;
                    body(def, sub, version, flexible, indent + 1, w)?;
                }
                None => {
                    let nullable = f.nullable_versions.contains(version);
                    let t = match &f.ty {
                        FieldType::Array(inner) => guide_type(inner, ff, false),
                        t => guide_type(t, ff, nullable),
                    };
                    writeln!(w, "{pad}{n} => {t}{mark}")?;
                }
            }
        }
        Ok(())
    }
    writeln!(
        w,
        "{title} (Version: {version}) => {}",
        names(def, &def.fields, version, flexible)
    )?;
    body(def, &def.fields, version, flexible, 1, w)
}

/// `kwire schema NAME`: grammar of request and response (or one data definition), the
/// header versions, and with `json` the definition (raw file with a run-time schema, the
/// facts otherwise).
pub fn schema_command(
    schema: &Schema,
    name: &str,
    version: Option<i16>,
    as_json: bool,
    w: &mut dyn Write,
) -> Result<(), String> {
    let names = schema
        .lookup(name)
        .ok_or_else(|| format!("no API or message named {name:?} (try `kwire apis`)"))?;
    let v = match version {
        Some(v) => v,
        None => schema
            .default_version(&names[0])
            .ok_or_else(|| format!("{} has no versions in any release", names[0]))?,
    };
    let io = |e: std::io::Error| e.to_string();
    for n in &names {
        let Some(d) = schema.resolve_name(n, v) else {
            let vs: Vec<String> = schema
                .by_name(n)
                .iter()
                .map(|d| format!("{} in {}", d.def.valid_versions, d.source))
                .collect();
            return Err(format!(
                "{n} has no version {v} (versions: {})",
                vs.join(", ")
            ));
        };
        if as_json {
            match &d.raw {
                Some(raw) => writeln!(w, "{raw}").map_err(io)?,
                None => writeln!(
                    w,
                    "{}",
                    serde_json::to_string_pretty(&d.def.to_json(false)).unwrap_or_default()
                )
                .map_err(io)?,
            }
            continue;
        }
        bnf(&d.def, v, w).map_err(io)?;
        let src = match &d.source {
            Source::User => "user schema".to_string(),
            Source::Release(r) => format!("Kafka {r}"),
        };
        let header = match (d.def.kind, d.def.api_key) {
            (MessageKind::Request, Some(k)) => {
                format!(", request header v{}", schema.request_header_version(k, v))
            }
            (MessageKind::Response, Some(k)) => format!(
                ", response header v{}",
                schema.response_header_version(k, v)
            ),
            _ => String::new(),
        };
        let flex = if d.def.is_flexible(v) {
            "flexible"
        } else {
            "not flexible"
        };
        writeln!(
            w,
            "  -- {} v{v}: {flex}{header}; valid {} in {src} ({})\n",
            d.def.name, d.def.valid_versions, d.file
        )
        .map_err(io)?;
    }
    Ok(())
}
