//! Reading definitions: Kafka's JSON-with-comments files from a folder, a
//! `kafka-clients-*.jar` or a Kafka installation, and kwire's own embedded facts.
//!
//! Comments (`//` and `/* */`) are blanked by `json_comments`, which keeps string
//! contents and every line and column in place, so `serde_json` errors point into the
//! original file; the raw text is kept for display.

use super::{Definition, History, MessageDef, Schema, Source, Versions};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The embedded facts: one JSON object per line (see [`export_embedded`]).
pub const EMBEDDED: &str = include_str!("embedded.jsonl");

/// An error loading definitions: which file, and where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The file (or `jar!entry`), or the path that held none.
    pub file: String,
    /// The field path, when the error is in a field.
    pub field: Option<String>,
    /// 1-based line and column, for JSON syntax errors.
    pub position: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some((l, c)) = self.position {
            write!(f, ":{l}:{c}")?;
        }
        if let Some(fl) = &self.field {
            write!(f, ": field {fl}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SchemaError {}

fn serr(file: &str, message: impl Into<String>) -> SchemaError {
    SchemaError {
        file: file.to_string(),
        field: None,
        position: None,
        message: message.into(),
    }
}

/// Parses the text of one definition file (JSON with `//` and `/* */` comments).
///
/// # Errors
/// JSON syntax errors with line and column; model errors with the field path.
pub fn parse_definition_text(file: &str, text: &str) -> Result<(MessageDef, Value), SchemaError> {
    let mut stripped = String::with_capacity(text.len());
    json_comments::StripComments::new(text.as_bytes())
        .read_to_string(&mut stripped)
        .map_err(|e| serr(file, format!("cannot strip comments: {e}")))?;
    let value: Value = serde_json::from_str(&stripped).map_err(|e| SchemaError {
        file: file.to_string(),
        field: None,
        position: Some((e.line(), e.column())),
        message: format!("invalid JSON: {e}"),
    })?;
    let def = MessageDef::from_json(&value).map_err(|e| SchemaError {
        file: file.to_string(),
        field: (!e.field.is_empty()).then(|| e.field.clone()),
        position: None,
        message: e.message,
    })?;
    Ok((def, value))
}

/// Loads every `*.json` definition below `dir` (recursively), in sorted path order.
///
/// # Errors
/// The first malformed file; a folder with no definitions at all.
pub fn load_folder(
    dir: &Path,
    source: Source,
    keep_raw: bool,
) -> Result<Vec<Definition>, SchemaError> {
    let mut files = Vec::new();
    collect_json(dir, &mut files).map_err(|e| serr(&dir.display().to_string(), e.to_string()))?;
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f)
            .map_err(|e| serr(&f.display().to_string(), e.to_string()))?;
        let rel = f
            .strip_prefix(dir)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        let (def, _) = parse_definition_text(&f.display().to_string(), &text)?;
        out.push(Definition {
            def,
            source: source.clone(),
            file: rel,
            raw: keep_raw.then_some(text),
        });
    }
    if out.is_empty() {
        return Err(serr(
            &dir.display().to_string(),
            "holds no Kafka message definitions (*.json)",
        ));
    }
    Ok(out)
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            collect_json(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    Ok(())
}

/// Loads the definitions inside a `kafka-clients-*.jar` (resources under
/// `common/message/`). Entries are capped at 16 MiB each.
///
/// # Errors
/// Not a zip file; a malformed definition; a jar with no definitions.
pub fn load_jar(path: &Path) -> Result<Vec<Definition>, SchemaError> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| serr(&name, e.to_string()))?;
    let mut zip = zip::ZipArchive::new(f).map_err(|e| serr(&name, format!("not a jar: {e}")))?;
    let mut out = Vec::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| serr(&name, e.to_string()))?;
        let ename = entry.name().to_string();
        if !(ename.starts_with("common/message/") && ename.ends_with(".json")) {
            continue;
        }
        let file = format!("{name}!{ename}");
        if entry.size() > 16 << 20 {
            return Err(serr(&file, "entry larger than 16 MiB"));
        }
        let mut text = String::new();
        entry
            .by_ref()
            .take(16 << 20)
            .read_to_string(&mut text)
            .map_err(|e| serr(&file, e.to_string()))?;
        let (def, _) = parse_definition_text(&file, &text)?;
        out.push(Definition {
            def,
            source: Source::User,
            file: ename,
            raw: Some(text),
        });
    }
    if out.is_empty() {
        return Err(serr(
            &name,
            "holds no Kafka message definitions (common/message/*.json)",
        ));
    }
    Ok(out)
}

/// Loads a user schema from `path`: a folder of definitions, a `kafka-clients-*.jar`, or
/// a Kafka installation folder (its `libs/kafka-clients-*.jar`).
///
/// # Errors
/// A path that does not exist or holds no definitions; any malformed definition.
pub fn load_user(path: &Path) -> Result<Vec<Definition>, SchemaError> {
    let name = path.display().to_string();
    if path.is_file() {
        return load_jar(path);
    }
    if !path.is_dir() {
        return Err(serr(&name, "no such file or folder"));
    }
    let libs = path.join("libs");
    if libs.is_dir() {
        let mut jars: Vec<PathBuf> = std::fs::read_dir(&libs)
            .map_err(|e| serr(&name, e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    n.starts_with("kafka-clients-")
                        && n.ends_with(".jar")
                        && !n.contains("-test")
                        && !n.contains("-sources")
                        && !n.contains("-javadoc")
                })
            })
            .collect();
        jars.sort();
        if let Some(j) = jars.last() {
            return load_jar(j);
        }
    }
    load_folder(path, Source::User, true)
}

/// Removes every `about` key from a definition value (facts only).
fn strip_about(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("about");
            for (_, x) in o.iter_mut() {
                strip_about(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strip_about),
        _ => {}
    }
}

/// Imports release folders (each named like `3.9`, holding module folders of
/// definitions) and writes kwire's embedded facts: one JSON object per line.
///
/// Line 1 is `{"kwire_schema":1,"releases":[...]}`; then one line a message name with
/// its `validVersions` in each release (`{"history":NAME,"releases":[[R,V],...]}`); then one
/// line a kept definition (`{"release":R,"file":F,"def":{...}}`) with `about` removed.
/// A definition is kept when it serves some version that no newer release serves, or
/// when it is the newest definition of its name.
///
/// # Errors
/// Any malformed definition; a folder whose name is not a release number.
pub fn export_embedded(release_dirs: &[PathBuf]) -> Result<String, SchemaError> {
    let mut releases: Vec<(String, PathBuf)> = Vec::new();
    for d in release_dirs {
        let r = d
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if !r.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            return Err(serr(
                &d.display().to_string(),
                "a release folder must be named like 4.3",
            ));
        }
        releases.push((r, d.clone()));
    }
    releases.sort_by_key(|(r, _)| -super::release_number(r));
    // name -> list of (release, file, def, value), newest first
    let mut by_name: BTreeMap<String, Vec<(String, String, MessageDef, Value)>> = BTreeMap::new();
    for (r, dir) in &releases {
        let mut files = Vec::new();
        collect_json(dir, &mut files)
            .map_err(|e| serr(&dir.display().to_string(), e.to_string()))?;
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f)
                .map_err(|e| serr(&f.display().to_string(), e.to_string()))?;
            let (def, value) = parse_definition_text(&f.display().to_string(), &text)?;
            let rel = f
                .strip_prefix(dir)
                .unwrap_or(&f)
                .to_string_lossy()
                .replace('\\', "/");
            by_name
                .entry(def.name.clone())
                .or_default()
                .push((r.clone(), rel, def, value));
        }
    }
    let names: Vec<String> = releases.iter().map(|(r, _)| r.clone()).rev().collect();
    let mut out = String::new();
    out.push_str(&serde_json::json!({"kwire_schema": 1, "releases": names}).to_string());
    out.push('\n');
    for (name, defs) in &by_name {
        let hist: Vec<Value> = defs
            .iter()
            .rev()
            .map(|(r, _, d, _)| serde_json::json!([r, d.valid_versions.to_string()]))
            .collect();
        out.push_str(&serde_json::json!({"history": name, "releases": hist}).to_string());
        out.push('\n');
    }
    for defs in by_name.values() {
        let mut covered: Vec<Versions> = Vec::new();
        for (i, (r, file, def, value)) in defs.iter().enumerate() {
            let v = def.valid_versions;
            let new = !v.is_empty()
                && (v.lo..=v.hi.min(300)).any(|x| !covered.iter().any(|c| c.contains(x)));
            if i == 0 || new {
                let mut value = value.clone();
                strip_about(&mut value);
                out.push_str(
                    &serde_json::json!({"release": r, "file": file, "def": value}).to_string(),
                );
                out.push('\n');
            }
            covered.push(v);
        }
    }
    Ok(out)
}

/// Parses kwire's embedded facts (the format of [`export_embedded`]).
///
/// # Errors
/// A line that is not valid JSON or not a valid definition.
pub fn parse_embedded(text: &str) -> Result<Schema, SchemaError> {
    let mut defs = Vec::new();
    let mut history: BTreeMap<String, History> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let file = format!("embedded.jsonl:{}", i + 1);
        let v: Value = serde_json::from_str(line).map_err(|e| serr(&file, e.to_string()))?;
        if let Some(name) = v.get("history").and_then(Value::as_str) {
            let mut h = Vec::new();
            for pair in v
                .get("releases")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let r = pair
                    .get(0)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let vs = pair.get(1).and_then(Value::as_str).unwrap_or("none");
                h.push((r, Versions::parse(vs).map_err(|m| serr(&file, m))?));
            }
            history.insert(name.to_string(), h);
        } else if let Some(d) = v.get("def") {
            let def = MessageDef::from_json(d).map_err(|e| serr(&file, e.to_string()))?;
            let release = v
                .get("release")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let f = v
                .get("file")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            defs.push(Definition {
                def,
                source: Source::Release(release),
                file: f,
                raw: None,
            });
        }
    }
    Ok(Schema::from_parts(defs, history))
}
