//! What changes on the wire between two versions of an API, or between two releases:
//! `kwire diff API [FROM] [TO]`, `kwire diff [API] --release A B`, and the `NAME-vN-diff`
//! pages of `kwire pages --all-versions`.
//!
//! Works on the schema model alone ([`crate::schema`]): each side of a comparison is one
//! definition at one version, flattened into its fields by path (`Topics[].TopicId`,
//! a struct's fields as `Struct.Field`), each with its type, nullability, tag and
//! default at that version. Fields are matched by path, so a field that moved between
//! structs shows as removed here and added there. The header version and the flexible
//! boundary follow Kafka's rules (`Schema::request_header_version`, KIP-482 for
//! flexible versions). Sizes in the wire words are the encoded sizes of Kafka's
//! primitives: fixed for numbers and uuids, the length prefix alone (`min`) for strings,
//! bytes, arrays and records (int16/int32 classic, a 1-byte uvarint at the least when
//! compact).

use crate::schema::{
    release_number, Definition, Field, FieldType, MessageDef, MessageKind, Prim, Schema, Source,
    Versions,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// How far struct nesting is followed (Kafka's deepest is 5; a user's file may loop).
const MAX_DEPTH: usize = 16;

/// One side of a comparison: a definition at a version, and where it came from.
#[derive(Clone, Copy, Debug)]
pub struct At<'s> {
    /// The definition.
    pub def: &'s Definition,
    /// The version compared.
    pub version: i16,
}

/// What kind of change one [`Change`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// The field is in TO, not in FROM.
    Added,
    /// The field is in FROM, not in TO.
    Removed,
    /// Its type changed (`int32` to `int64`, a struct renamed).
    Type,
    /// It became nullable, or stopped being.
    Nullable,
    /// It became a tagged field (or its tag changed).
    Tagged,
    /// It stopped being a tagged field.
    Untagged,
    /// Its `default` changed.
    Default,
    /// The message became flexible (or stopped being).
    Flexible,
    /// The header version changed.
    Header,
}

impl ChangeKind {
    /// The word the outputs use (`added`, `removed`, `type`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Type => "type",
            ChangeKind::Nullable => "nullable",
            ChangeKind::Tagged => "tagged",
            ChangeKind::Untagged => "untagged",
            ChangeKind::Default => "default",
            ChangeKind::Flexible => "flexible",
            ChangeKind::Header => "header",
        }
    }
}

/// One change between two sides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The field's path (`Topics[].TopicId`), or `(header)` / `(message)`.
    pub path: String,
    /// What changed.
    pub kind: ChangeKind,
    /// The FROM side's fact (type, `nullable`, tag, default), when it had one.
    pub from: Option<String>,
    /// The TO side's fact.
    pub to: Option<String>,
    /// The wire consequence in a word (`+16 B per topic`, `compact from here`).
    pub wire: String,
}

/// The changes of one message (request or response) between two versions.
#[derive(Clone, Debug)]
pub struct MessageDiff {
    /// Request or response.
    pub kind: MessageKind,
    /// The message name on the TO side (`ProduceRequest`), or FROM's when TO has none.
    pub name: String,
    /// FROM's header version, when FROM has the message.
    pub from_header: Option<i16>,
    /// TO's header version.
    pub to_header: Option<i16>,
    /// Whether FROM's version is flexible.
    pub from_flexible: Option<bool>,
    /// Whether TO's version is flexible.
    pub to_flexible: Option<bool>,
    /// The changes, in TO's field order, removed fields last.
    pub changes: Vec<Change>,
}

/// One comparison of an API: FROM and TO versions (and releases, in release mode).
#[derive(Clone, Debug)]
pub struct ApiDiff {
    /// The api_key.
    pub api_key: i16,
    /// The API name (`Produce`).
    pub api_name: String,
    /// FROM's version.
    pub from_version: i16,
    /// TO's version.
    pub to_version: i16,
    /// FROM's source (`4.3`, `3.9`, `user`) as the request's definition gives it.
    pub from_source: String,
    /// TO's source.
    pub to_source: String,
    /// The request's changes, then the response's.
    pub messages: Vec<MessageDiff>,
}

impl ApiDiff {
    /// Whether nothing changed on the wire.
    pub fn is_empty(&self) -> bool {
        self.messages.iter().all(|m| m.changes.is_empty())
    }
}

/// A field flattened at one version.
struct Flat<'a> {
    path: String,
    field: &'a Field,
    /// The array the field sits in, innermost (`Topics`), for `per topic`.
    element_of: Option<String>,
    nullable: bool,
    tag: Option<u32>,
    /// A struct whose fields are listed by their own paths.
    structure: bool,
    min_size: Option<usize>,
}

/// The smallest encoding of `f` at `v` (`None`: an unknown struct or too deep).
fn min_size(def: &MessageDef, f: &Field, v: i16, flexible: bool, depth: usize) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    if f.is_tagged(v) {
        return Some(0);
    }
    let compact = f.is_flexible(v, flexible);
    let prefix = |classic: usize| if compact { 1 } else { classic };
    Some(match &f.ty {
        FieldType::Array(_) => prefix(4),
        FieldType::Prim(p) => match p {
            Prim::String => prefix(2),
            Prim::Bytes | Prim::Records => prefix(4),
            p => p.fixed_size().unwrap_or(0),
        },
        FieldType::Struct(_) => {
            let mut n = usize::from(flexible);
            for c in def.fields_of(f)?.iter().filter(|c| c.versions.contains(v)) {
                n += min_size(def, c, v, flexible, depth + 1)?;
            }
            if f.is_nullable(v) {
                n = 1; // the int8 marker alone
            }
            n
        }
    })
}

/// Whether the smallest encoding is the only one (numbers, uuids, structs of them).
fn fixed_size(def: &MessageDef, f: &Field, v: i16, depth: usize) -> bool {
    if depth > MAX_DEPTH || f.is_tagged(v) {
        return false;
    }
    match &f.ty {
        FieldType::Array(_) => false,
        FieldType::Prim(p) => p.fixed_size().is_some(),
        FieldType::Struct(_) => {
            !f.is_nullable(v)
                && def.fields_of(f).is_some_and(|cs| {
                    cs.iter()
                        .filter(|c| c.versions.contains(v))
                        .all(|c| fixed_size(def, c, v, depth + 1))
                })
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn flatten<'a>(
    def: &'a MessageDef,
    fields: &'a [Field],
    v: i16,
    flexible: bool,
    prefix: &str,
    element_of: Option<&str>,
    depth: usize,
    out: &mut Vec<Flat<'a>>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    for f in fields.iter().filter(|f| f.versions.contains(v)) {
        let path = if prefix.is_empty() {
            f.name.clone()
        } else {
            format!("{prefix}.{}", f.name)
        };
        let children = def.fields_of(f);
        out.push(Flat {
            path: path.clone(),
            field: f,
            element_of: element_of.map(str::to_string),
            nullable: f.is_nullable(v),
            tag: f.is_tagged(v).then_some(f.tag).flatten(),
            structure: children.is_some(),
            min_size: min_size(def, f, v, flexible, depth),
        });
        if let Some(cs) = children {
            let (p, el) = match f.ty {
                FieldType::Array(_) => (format!("{path}[]"), Some(f.name.as_str())),
                _ => (path.clone(), element_of),
            };
            flatten(def, cs, v, flexible, &p, el, depth + 1, out);
        }
    }
}

/// `Topics` as `topic`, `PartitionIndexes` as `partition index`, `Entries` as `entry`.
fn singular(name: &str) -> String {
    let mut words = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            words.push(' ');
        }
        words.push(c.to_ascii_lowercase());
    }
    if let Some(s) = words.strip_suffix("ies") {
        return format!("{s}y");
    }
    for es in ["sses", "xes", "ches", "shes", "exes"] {
        if words.ends_with(es) {
            return words[..words.len() - 2].to_string();
        }
    }
    match words.strip_suffix('s') {
        Some(s) if !s.ends_with('s') => s.to_string(),
        _ => words,
    }
}

fn per(f: &Flat) -> String {
    match &f.element_of {
        Some(a) => format!(" per {}", singular(a)),
        None => String::new(),
    }
}

fn signed(n: usize, plus: bool) -> String {
    format!("{}{n} B", if plus { "+" } else { "-" })
}

/// The wire word for a field that appears (`plus`) or disappears.
fn presence_word(def: &MessageDef, f: &Flat, v: i16, plus: bool) -> String {
    if let Some(t) = f.tag {
        return format!("0 B unless set (tag {t})");
    }
    match f.min_size {
        Some(n) if fixed_size(def, f.field, v, 0) => format!("{}{}", signed(n, plus), per(f)),
        Some(n) => format!("{} min{}", signed(n, plus), per(f)),
        None => "size varies".into(),
    }
}

fn type_word(
    from: &Flat,
    to: &Flat,
    fdef: &MessageDef,
    tdef: &MessageDef,
    fv: i16,
    tv: i16,
) -> String {
    let shape = |t: &FieldType| match t {
        FieldType::Array(_) => 0,
        FieldType::Struct(_) => 1,
        FieldType::Prim(_) => 2,
    };
    if shape(&from.field.ty) == shape(&to.field.ty) && from.structure && to.structure {
        return "no byte change by itself".into();
    }
    let (Some(a), Some(b)) = (from.min_size, to.min_size) else {
        return "size varies".into();
    };
    if fixed_size(fdef, from.field, fv, 0) && fixed_size(tdef, to.field, tv, 0) {
        if a == b {
            return "same size, other meaning".into();
        }
        return format!("{}{}", signed(a.abs_diff(b), b > a), per(to));
    }
    "size varies".into()
}

fn header_word(request: bool, from: i16, to: i16) -> String {
    match (request, from, to) {
        (true, 0, 1) => "+2 B min (client_id)".into(),
        (true, 1, 0) => "-2 B min (client_id)".into(),
        (_, a, b) if a < b => "+1 B (tagged fields)".into(),
        (_, a, b) if a > b => "-1 B (tagged fields)".into(),
        _ => String::new(),
    }
}

fn fact_type(f: &Flat) -> String {
    f.field.type_name.clone()
}

/// Compares one message between two sides (either may lack it).
pub fn diff_message(
    schema: &Schema,
    api_key: i16,
    kind: MessageKind,
    from: Option<At>,
    to: Option<At>,
) -> MessageDiff {
    let request = kind == MessageKind::Request;
    let header = |v: i16| {
        if request {
            schema.request_header_version(api_key, v)
        } else {
            schema.response_header_version(api_key, v)
        }
    };
    let name = to
        .or(from)
        .map(|a| a.def.def.name.clone())
        .unwrap_or_default();
    let mut md = MessageDiff {
        kind,
        name,
        from_header: from.map(|a| header(a.version)),
        to_header: to.map(|a| header(a.version)),
        from_flexible: from.map(|a| a.def.def.is_flexible(a.version)),
        to_flexible: to.map(|a| a.def.def.is_flexible(a.version)),
        changes: Vec::new(),
    };
    let (Some(fa), Some(ta)) = (from, to) else {
        return md;
    };
    if let (Some(a), Some(b)) = (md.from_header, md.to_header) {
        if a != b {
            md.changes.push(Change {
                path: "(header)".into(),
                kind: ChangeKind::Header,
                from: Some(format!("v{a}")),
                to: Some(format!("v{b}")),
                wire: header_word(request, a, b),
            });
        }
    }
    if md.from_flexible != md.to_flexible {
        let now = md.to_flexible == Some(true);
        md.changes.push(Change {
            path: "(message)".into(),
            kind: ChangeKind::Flexible,
            from: Some(if now { "classic" } else { "flexible" }.into()),
            to: Some(if now { "flexible" } else { "classic" }.into()),
            wire: if now {
                "compact from here".into()
            } else {
                "classic from here".into()
            },
        });
    }
    let (fd, td) = (&fa.def.def, &ta.def.def);
    let (fv, tv) = (fa.version, ta.version);
    let old = flat(fa);
    let new = flat(ta);
    fn flat<'a>(a: At<'a>) -> Vec<Flat<'a>> {
        let d = &a.def.def;
        let mut out = Vec::new();
        let fl = d.is_flexible(a.version);
        flatten(d, &d.fields, a.version, fl, "", None, 0, &mut out);
        out
    }
    let old_by: BTreeMap<&str, &Flat> = old.iter().map(|f| (f.path.as_str(), f)).collect();
    let new_paths: BTreeSet<&str> = new.iter().map(|f| f.path.as_str()).collect();
    // A field under an added (removed) struct is said once, by the struct.
    let under = |p: &str, set: &dyn Fn(&str) -> bool| {
        let mut q = p;
        while let Some(i) = q.rfind('.') {
            q = q[..i].trim_end_matches("[]");
            if set(q) {
                return true;
            }
        }
        false
    };
    for n in &new {
        let Some(o) = old_by.get(n.path.as_str()) else {
            if !under(&n.path, &|q| !old_by.contains_key(q)) {
                md.changes.push(Change {
                    path: n.path.clone(),
                    kind: ChangeKind::Added,
                    from: None,
                    to: Some(fact_type(n)),
                    wire: presence_word(td, n, tv, true),
                });
            }
            continue;
        };
        let (of, nf) = (o.field, n.field);
        if of.type_name != nf.type_name {
            md.changes.push(Change {
                path: n.path.clone(),
                kind: ChangeKind::Type,
                from: Some(of.type_name.clone()),
                to: Some(nf.type_name.clone()),
                wire: type_word(o, n, fd, td, fv, tv),
            });
        }
        if o.nullable != n.nullable {
            md.changes.push(Change {
                path: n.path.clone(),
                kind: ChangeKind::Nullable,
                from: Some(if o.nullable { "nullable" } else { "not null" }.into()),
                to: Some(if n.nullable { "nullable" } else { "not null" }.into()),
                wire: if n.nullable {
                    "no byte change; null now legal".into()
                } else {
                    "no byte change; null no longer legal".into()
                },
            });
        }
        match (o.tag, n.tag) {
            (None, Some(t)) => md.changes.push(Change {
                path: n.path.clone(),
                kind: ChangeKind::Tagged,
                from: None,
                to: Some(format!("tag {t}")),
                wire: format!("0 B unless set (tag {t})"),
            }),
            (Some(a), Some(b)) if a != b => md.changes.push(Change {
                path: n.path.clone(),
                kind: ChangeKind::Tagged,
                from: Some(format!("tag {a}")),
                to: Some(format!("tag {b}")),
                wire: "other tag number".into(),
            }),
            (Some(t), None) => md.changes.push(Change {
                path: n.path.clone(),
                kind: ChangeKind::Untagged,
                from: Some(format!("tag {t}")),
                to: None,
                wire: presence_word(td, n, tv, true).replace(" min", " min always"),
            }),
            _ => {}
        }
        if of.default != nf.default {
            md.changes.push(Change {
                path: n.path.clone(),
                kind: ChangeKind::Default,
                from: of.default.clone(),
                to: nf.default.clone(),
                wire: "no byte change; the value when absent".into(),
            });
        }
    }
    for o in &old {
        if !new_paths.contains(o.path.as_str()) && !under(&o.path, &|q| !new_paths.contains(q)) {
            md.changes.push(Change {
                path: o.path.clone(),
                kind: ChangeKind::Removed,
                from: Some(fact_type(o)),
                to: None,
                wire: presence_word(fd, o, fv, false),
            });
        }
    }
    md
}

/// Compares request and response of `api_key` between two sides given per kind.
fn diff_api<'s>(
    schema: &'s Schema,
    api_key: i16,
    (from_version, to_version): (i16, i16),
    side: &dyn Fn(MessageKind, i16) -> Option<&'s Definition>,
) -> ApiDiff {
    let at = |k, v| side(k, v).map(|def| At { def, version: v });
    let mut messages = Vec::new();
    for k in [MessageKind::Request, MessageKind::Response] {
        let (f, t) = (at(k, from_version), at(k, to_version));
        if f.is_some() || t.is_some() {
            messages.push(diff_message(schema, api_key, k, f, t));
        }
    }
    let src = |v| {
        side(MessageKind::Request, v)
            .map(|d| d.source.to_string())
            .unwrap_or_default()
    };
    ApiDiff {
        api_key,
        api_name: schema.api_name(api_key).unwrap_or("?").to_string(),
        from_version,
        to_version,
        from_source: src(from_version),
        to_source: src(to_version),
        messages,
    }
}

/// The comparisons `kwire diff API [FROM] [TO]` makes with the schema stack: FROM to
/// TO; with one version, it against the one before; with none, every version against
/// the one before.
///
/// # Errors
/// A version the API never had, naming the versions it has.
pub fn version_diffs(
    schema: &Schema,
    api_key: i16,
    from: Option<i16>,
    to: Option<i16>,
) -> Result<Vec<ApiDiff>, String> {
    let versions = schema.versions(MessageKind::Request, api_key);
    let name = schema.api_name(api_key).unwrap_or("?").to_string();
    let check = |v: i16| {
        if versions.contains(&v) {
            Ok(v)
        } else {
            Err(format!(
                "{name} has no v{v} (its versions: {})",
                version_list(&versions)
            ))
        }
    };
    let pairs: Vec<(i16, i16)> = match (from, to) {
        (Some(a), Some(b)) => vec![(check(a)?, check(b)?)],
        (Some(b), None) | (None, Some(b)) => {
            let b = check(b)?;
            let prev = versions
                .iter()
                .rev()
                .find(|x| **x < b)
                .copied()
                .ok_or_else(|| {
                    format!("{name} v{b} is its first version: give two versions to compare")
                })?;
            vec![(prev, b)]
        }
        (None, None) => versions.windows(2).map(|w| (w[0], w[1])).collect(),
    };
    let side = |k, v| schema.resolve(k, api_key, v);
    Ok(pairs
        .into_iter()
        .map(|p| diff_api(schema, api_key, p, &side))
        .collect())
}

/// `0-13`, or `0-2, 4` for gaps.
pub fn version_list(vs: &[i16]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < vs.len() {
        let mut j = i;
        while j + 1 < vs.len() && vs[j + 1] == vs[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            vs[i].to_string()
        } else {
            format!("{}-{}", vs[i], vs[j])
        });
        i = j + 1;
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// The releases the stack knows (from the embedded histories), oldest first, and `user`
/// when a user schema is loaded.
pub fn releases(schema: &Schema) -> Vec<String> {
    let mut rs: BTreeSet<String> = BTreeSet::new();
    for h in schema.histories().values() {
        for (r, _) in h {
            rs.insert(r.clone());
        }
    }
    let mut v: Vec<String> = rs.into_iter().collect();
    v.sort_by_key(|r| release_number(r));
    if schema.definitions().any(|d| d.source == Source::User) {
        v.push("user".into());
    }
    v
}

/// Checks that `r` is a release of the stack.
///
/// # Errors
/// One naming the release and the ones the stack has.
pub fn check_release(schema: &Schema, r: &str) -> Result<(), String> {
    let rs = releases(schema);
    if rs.iter().any(|x| x == r) {
        return Ok(());
    }
    let hint = if r == "user" {
        " (give --schema PATH to compare your own definitions)"
    } else {
        ""
    };
    Err(format!(
        "release {r} is not in the schema stack{hint} (it has: {})",
        rs.join(", ")
    ))
}

/// The `validVersions` of message `name` in release `r` (`user`: the user's
/// definition's).
fn release_versions(schema: &Schema, name: &str, r: &str) -> Versions {
    if r == "user" {
        return schema
            .by_name(name)
            .into_iter()
            .find(|d| d.source == Source::User)
            .map(|d| d.def.valid_versions)
            .unwrap_or(Versions::NONE);
    }
    schema
        .history(name)
        .and_then(|h| h.iter().find(|(x, _)| x == r))
        .map(|(_, v)| *v)
        .unwrap_or(Versions::NONE)
}

/// The definition release `r` had for message `name` at `v`: the embedded definition
/// of `r`, or of the oldest newer release that serves `v` (the embedded facts keep a
/// release's file only where it serves a version no newer release does, and a stable
/// version's layout never changes between releases).
fn release_def<'s>(schema: &'s Schema, name: &str, r: &str, v: i16) -> Option<&'s Definition> {
    if !release_versions(schema, name, r).contains(v) {
        return None;
    }
    let all = schema.by_name(name);
    if r == "user" {
        return all.into_iter().find(|d| d.source == Source::User);
    }
    let n = release_number(r);
    all.into_iter()
        .filter(|d| match &d.source {
            Source::Release(x) => release_number(x) >= n && d.def.valid_versions.contains(v),
            Source::User => false,
        })
        .min_by_key(|d| match &d.source {
            Source::Release(x) => release_number(x),
            Source::User => i64::MAX,
        })
}

fn message_name(schema: &Schema, api_key: i16, kind: MessageKind) -> Option<String> {
    schema
        .by_api(kind, api_key)
        .first()
        .map(|d| d.def.name.clone())
}

/// What one API's versions did between two releases.
#[derive(Clone, Debug)]
pub struct ApiVersionsChange {
    /// The api_key.
    pub api_key: i16,
    /// The API name.
    pub api_name: String,
    /// Request versions in FROM.
    pub from: Versions,
    /// Request versions in TO.
    pub to: Versions,
    /// Versions TO has and FROM has not.
    pub added: Vec<i16>,
    /// Versions FROM has and TO has not (KIP-896's removals among them).
    pub removed: Vec<i16>,
}

fn range_list(v: &Versions) -> Vec<i16> {
    if v.is_empty() {
        Vec::new()
    } else {
        (v.lo..=v.hi.min(300)).collect()
    }
}

/// Every API whose request versions differ between releases `a` and `b`.
///
/// # Errors
/// A release the stack does not have.
pub fn release_changes(
    schema: &Schema,
    a: &str,
    b: &str,
) -> Result<Vec<ApiVersionsChange>, String> {
    check_release(schema, a)?;
    check_release(schema, b)?;
    let mut out = Vec::new();
    for key in schema.api_keys() {
        let Some(name) = message_name(schema, key, MessageKind::Request) else {
            continue;
        };
        let (from, to) = (
            release_versions(schema, &name, a),
            release_versions(schema, &name, b),
        );
        let (fl, tl) = (range_list(&from), range_list(&to));
        let added: Vec<i16> = tl.iter().filter(|v| !fl.contains(v)).copied().collect();
        let removed: Vec<i16> = fl.iter().filter(|v| !tl.contains(v)).copied().collect();
        if !added.is_empty() || !removed.is_empty() {
            out.push(ApiVersionsChange {
                api_key: key,
                api_name: schema.api_name(key).unwrap_or("?").to_string(),
                from,
                to,
                added,
                removed,
            });
        }
    }
    Ok(out)
}

/// `kwire diff API --release A B`: the API's version change, and the comparison of A's
/// newest version (as A defined it) with B's newest (as B defines it), when both have
/// the API.
///
/// # Errors
/// A release the stack does not have; an API neither release has.
pub fn release_api_diff(
    schema: &Schema,
    api_key: i16,
    a: &str,
    b: &str,
) -> Result<(ApiVersionsChange, Option<ApiDiff>), String> {
    check_release(schema, a)?;
    check_release(schema, b)?;
    let name = message_name(schema, api_key, MessageKind::Request)
        .ok_or_else(|| format!("api_key {api_key} has no request definition"))?;
    let (from, to) = (
        release_versions(schema, &name, a),
        release_versions(schema, &name, b),
    );
    let api_name = schema.api_name(api_key).unwrap_or("?").to_string();
    if from.is_empty() && to.is_empty() {
        return Err(format!("neither {a} nor {b} has {api_name}"));
    }
    let (fl, tl) = (range_list(&from), range_list(&to));
    let change = ApiVersionsChange {
        api_key,
        api_name,
        from,
        to,
        added: tl.iter().filter(|v| !fl.contains(v)).copied().collect(),
        removed: fl.iter().filter(|v| !tl.contains(v)).copied().collect(),
    };
    let diff = match (fl.last(), tl.last()) {
        (Some(&fv), Some(&tv)) => {
            let side = |k: MessageKind, v: i16| {
                let rel = if v == fv { a } else { b };
                let n = message_name(schema, api_key, k)?;
                release_def(schema, &n, rel, v)
            };
            let mut d = diff_api(schema, api_key, (fv, tv), &side);
            if fv == tv {
                // Same version number: compare A's definition with B's explicitly.
                let at = |k: MessageKind, r: &str| {
                    let n = message_name(schema, api_key, k)?;
                    release_def(schema, &n, r, fv).map(|def| At { def, version: fv })
                };
                d.messages = [MessageKind::Request, MessageKind::Response]
                    .into_iter()
                    .filter_map(|k| {
                        let (f, t) = (at(k, a), at(k, b));
                        (f.is_some() || t.is_some()).then(|| diff_message(schema, api_key, k, f, t))
                    })
                    .collect();
                d.from_source = at(MessageKind::Request, a)
                    .map(|x| x.def.source.to_string())
                    .unwrap_or_default();
                d.to_source = at(MessageKind::Request, b)
                    .map(|x| x.def.source.to_string())
                    .unwrap_or_default();
            }
            Some(d)
        }
        _ => None,
    };
    Ok((change, diff))
}

// ---------------------------------------------------------------- output

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

#[cfg(test)]
mod tests {
    use super::*;

    fn one(api: i16, a: i16, b: i16) -> ApiDiff {
        let s = Schema::embedded();
        version_diffs(&s, api, Some(a), Some(b)).unwrap().remove(0)
    }

    fn find<'a>(
        d: &'a ApiDiff,
        kind: MessageKind,
        path: &str,
        ck: ChangeKind,
    ) -> Option<&'a Change> {
        d.messages
            .iter()
            .filter(|m| m.kind == kind)
            .flat_map(|m| &m.changes)
            .find(|c| c.path == path && c.kind == ck)
    }

    #[test]
    fn singular_names() {
        assert_eq!(singular("Topics"), "topic");
        assert_eq!(singular("Partitions"), "partition");
        assert_eq!(singular("Entries"), "entry");
        assert_eq!(singular("PartitionIndexes"), "partition index");
        assert_eq!(singular("Status"), "statu"); // known limit of the rule
        assert_eq!(singular("Responses"), "response");
    }

    #[test]
    fn fetch_13_adds_topic_ids_and_drops_names() {
        // Fetch v13 (KIP-516): topics by id; Topic names gone from the request.
        let d = one(1, 12, 13);
        let c = find(
            &d,
            MessageKind::Request,
            "Topics[].TopicId",
            ChangeKind::Added,
        )
        .unwrap();
        assert_eq!(c.wire, "+16 B per topic");
        let r = find(
            &d,
            MessageKind::Request,
            "Topics[].Topic",
            ChangeKind::Removed,
        )
        .unwrap();
        assert_eq!(r.wire, "-1 B min per topic"); // compact string at v12
    }

    #[test]
    fn flexible_boundary_and_header() {
        // Metadata became flexible at v9.
        let d = one(3, 8, 9);
        let req = &d.messages[0];
        assert_eq!((req.from_header, req.to_header), (Some(1), Some(2)));
        assert!(req
            .changes
            .iter()
            .any(|c| c.kind == ChangeKind::Flexible && c.wire == "compact from here"));
        assert!(req
            .changes
            .iter()
            .any(|c| c.kind == ChangeKind::Header && c.wire == "+1 B (tagged fields)"));
        let resp = &d.messages[1];
        assert_eq!((resp.from_header, resp.to_header), (Some(0), Some(1)));
    }

    #[test]
    fn api_versions_response_header_stays_v0() {
        let d = one(18, 2, 3);
        let resp = d
            .messages
            .iter()
            .find(|m| m.kind == MessageKind::Response)
            .unwrap();
        assert_eq!((resp.from_header, resp.to_header), (Some(0), Some(0)));
        assert!(!resp.changes.iter().any(|c| c.kind == ChangeKind::Header));
        // SupportedFeatures arrived as a tagged field at v3.
        let c = find(
            &d,
            MessageKind::Response,
            "SupportedFeatures",
            ChangeKind::Added,
        )
        .unwrap();
        assert!(c.wire.starts_with("0 B unless set (tag "), "{}", c.wire);
    }

    #[test]
    fn nothing_changes_between_identical_versions() {
        let d = one(20, 6, 6);
        assert!(d.is_empty());
    }

    #[test]
    fn errors_name_what_is_missing() {
        let s = Schema::embedded();
        let e = version_diffs(&s, 20, Some(0), Some(99)).unwrap_err();
        assert!(e.contains("DeleteTopics has no v99"), "{e}");
        let e = release_changes(&s, "2.8", "4.3").unwrap_err();
        assert!(e.contains("release 2.8 is not in the schema stack"), "{e}");
        assert!(e.contains("3.9"), "{e}");
        let e = release_changes(&s, "3.9", "user").unwrap_err();
        assert!(e.contains("--schema"), "{e}");
    }

    #[test]
    fn kip_896_removals_between_3_9_and_4_0() {
        let s = Schema::embedded();
        let ch = release_changes(&s, "3.9", "4.0").unwrap();
        let produce = ch.iter().find(|c| c.api_key == 0).unwrap();
        assert_eq!(produce.removed, vec![0, 1, 2]);
        // A ZooKeeper-era API gone whole (LeaderAndIsr, api_key 4).
        let lai = ch.iter().find(|c| c.api_key == 4).unwrap();
        assert!(lai.to.is_empty() && !lai.from.is_empty());
        assert!(versions_change_text(lai).contains("API removed"));
    }

    #[test]
    fn release_api_diff_uses_each_releases_definition() {
        let s = Schema::embedded();
        let (ch, d) = release_api_diff(&s, 0, "3.9", "4.4").unwrap();
        assert_eq!(ch.removed, vec![0, 1, 2]);
        let d = d.unwrap();
        assert_eq!(
            (d.from_source.as_str(), d.to_source.as_str()),
            ("3.9", "4.4")
        );
        assert!(d.to_version > d.from_version);
    }
}
