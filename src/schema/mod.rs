//! Kafka's message schemas: the model, the embedded facts, run-time loading and the
//! release stack.
//!
//! A [`Schema`] holds definitions from several sources, best first: the user's own
//! (`--schema PATH`, source [`Source::User`]) and then the embedded releases, newest
//! first. A message version resolves to the first definition whose `validVersions`
//! holds it, so Produce v0-v2 resolve from 3.9 while v3-v13 resolve from 4.3, and a user
//! schema overlays the embedded stack without hiding versions it lacks.
//!
//! The schema knows nothing of bytes: see [`crate::wire`] and [`crate::decode`].

pub mod load;
pub mod model;
pub mod plan;

pub use model::{
    Field, FieldType, MessageDef, MessageKind, Prim, StructDef, SummaryFact, Versions,
};

use foldhash::HashMap;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Where a definition came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// An embedded Kafka release (`"3.9"`, `"4.3"`).
    Release(String),
    /// The user's `--schema` (or `KWIRE_SCHEMA`).
    User,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Release(r) => f.write_str(r),
            Source::User => f.write_str("user"),
        }
    }
}

/// One loaded definition file with its provenance.
#[derive(Clone, Debug)]
pub struct Definition {
    /// The parsed definition.
    pub def: MessageDef,
    /// Where it came from.
    pub source: Source,
    /// The file name inside its source (`clients/DeleteTopicsRequest.json`).
    pub file: String,
    /// The raw file text, comments and all (run-time schemas only).
    pub raw: Option<String>,
}

/// The `validVersions` of one message name in each release, oldest first (for
/// `removed_in` and `legacy_versions`).
pub type History = Vec<(String, Versions)>;

/// A stack of definitions; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    defs: Vec<Arc<Definition>>,
    by_name: HashMap<String, Vec<usize>>,
    by_api: HashMap<(MessageKind, i16), Vec<usize>>,
    history: BTreeMap<String, History>,
    /// A comment or note for each user path loaded (for diagnostics).
    pub user_paths: Vec<String>,
}

/// Orders sources best first: user, then releases newest first.
fn source_rank(s: &Source) -> (u8, i64) {
    match s {
        Source::User => (0, 0),
        Source::Release(r) => (1, -release_number(r)),
    }
}

/// `"4.3"` as a sortable number (4003); unknown shapes sort oldest.
pub fn release_number(r: &str) -> i64 {
    let mut it = r.split('.').map(|p| p.parse::<i64>().unwrap_or(0));
    let a = it.next().unwrap_or(0);
    let b = it.next().unwrap_or(0);
    a * 1000 + b
}

impl Schema {
    /// The embedded default: Kafka 3.9 to 4.3 facts compiled into the binary.
    ///
    /// # Panics
    /// Never for the committed file (a test parses it); a corrupt build would fail that test.
    pub fn embedded() -> Schema {
        load::parse_embedded(load::EMBEDDED).expect("embedded schema facts parse")
    }

    /// Builds a schema from definitions and histories.
    pub fn from_parts(defs: Vec<Definition>, history: BTreeMap<String, History>) -> Schema {
        let mut s = Schema {
            history,
            ..Schema::default()
        };
        for d in defs {
            s.push(d);
        }
        s
    }

    fn push(&mut self, d: Definition) {
        let idx = self.defs.len();
        let name = d.def.name.to_ascii_lowercase();
        let api = d.def.api_key.map(|k| (d.def.kind, k));
        self.defs.push(Arc::new(d));
        let rank = |i: &usize| source_rank(&self.defs[*i].source);
        let v = self.by_name.entry(name).or_default();
        v.push(idx);
        let defs = &self.defs;
        v.sort_by_key(|i| source_rank(&defs[*i].source));
        if let Some(key) = api {
            let v = self.by_api.entry(key).or_default();
            v.push(idx);
            v.sort_by_key(rank);
        }
    }

    /// Puts the user's definitions on top of this stack.
    pub fn overlay(&mut self, user: Vec<Definition>) {
        for d in user {
            self.push(d);
        }
    }

    /// Every definition, in load order.
    pub fn definitions(&self) -> impl Iterator<Item = &Definition> {
        self.defs.iter().map(|d| d.as_ref())
    }

    /// All definitions of a message name (case-insensitive), best first.
    pub fn by_name(&self, name: &str) -> Vec<&Definition> {
        self.by_name
            .get(&name.to_ascii_lowercase())
            .map(|v| v.iter().map(|i| self.defs[*i].as_ref()).collect())
            .unwrap_or_default()
    }

    /// The definition of message `name` that serves `version`: the best source whose
    /// `validVersions` holds it.
    pub fn resolve_name(&self, name: &str, version: i16) -> Option<&Definition> {
        // Message names are stored lower-case; the header and nested-data names the
        // decoder asks for on every message are looked up without allocating.
        let mut buf = [0u8; 64];
        let v = match buf.get_mut(..name.len()) {
            Some(b) => {
                b.copy_from_slice(name.as_bytes());
                b.make_ascii_lowercase();
                // Lower-casing ASCII bytes of a str leaves it UTF-8.
                self.by_name.get(std::str::from_utf8(b).ok()?)?
            }
            None => self.by_name.get(&name.to_ascii_lowercase())?,
        };
        self.first_serving(v, version)
    }

    /// The first of `idx` (best first) whose `validVersions` holds `version`.
    fn first_serving(&self, idx: &[usize], version: i16) -> Option<&Definition> {
        idx.iter()
            .map(|i| self.defs[*i].as_ref())
            .find(|d| d.def.valid_versions.contains(version))
    }

    /// All definitions of `(kind, api_key)`, best first.
    pub fn by_api(&self, kind: MessageKind, api_key: i16) -> Vec<&Definition> {
        self.by_api
            .get(&(kind, api_key))
            .map(|v| v.iter().map(|i| self.defs[*i].as_ref()).collect())
            .unwrap_or_default()
    }

    /// The definitions of `(kind, api_key)` that serve some version, best first (those
    /// whose `validVersions` is `none`, the APIs Kafka 4.0 removed, left out).
    pub fn serving(&self, kind: MessageKind, api_key: i16) -> Vec<&Definition> {
        self.by_api(kind, api_key)
            .into_iter()
            .filter(|d| !d.def.valid_versions.is_empty())
            .collect()
    }

    /// The definition that serves `(kind, api_key, version)`.
    pub fn resolve(&self, kind: MessageKind, api_key: i16, version: i16) -> Option<&Definition> {
        self.first_serving(self.by_api.get(&(kind, api_key))?, version)
    }

    /// The request definition for `(api_key, version)`.
    pub fn request(&self, api_key: i16, version: i16) -> Option<&Definition> {
        self.resolve(MessageKind::Request, api_key, version)
    }

    /// The response definition for `(api_key, version)`.
    pub fn response(&self, api_key: i16, version: i16) -> Option<&Definition> {
        self.resolve(MessageKind::Response, api_key, version)
    }

    /// The API name (`DeleteTopics`) of an api_key, from its newest request definition.
    pub fn api_name(&self, api_key: i16) -> Option<&str> {
        let d = &self.defs[*self.by_api.get(&(MessageKind::Request, api_key))?.first()?].def;
        Some(d.name.strip_suffix("Request").unwrap_or(&d.name))
    }

    /// Finds the definitions `name` means: an API name (`DeleteTopics`), a message name
    /// (`DeleteTopicsRequest`) or an api_key (`20`), case-insensitive. Returns the request
    /// and response names (or one data definition's name); `None` when nothing matches.
    pub fn lookup(&self, name: &str) -> Option<Vec<String>> {
        let key = name.parse::<i16>().ok().or_else(|| {
            self.api_keys().into_iter().find(|k| {
                self.api_name(*k)
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            })
        });
        if let Some(k) = key {
            let req = self
                .by_api(MessageKind::Request, k)
                .first()
                .map(|d| d.def.name.clone())?;
            let resp = self
                .by_api(MessageKind::Response, k)
                .first()
                .map(|d| d.def.name.clone());
            return Some(std::iter::once(req).chain(resp).collect());
        }
        self.by_name(name).first().map(|d| vec![d.def.name.clone()])
    }

    /// The newest version of message `name`: the highest version of the best source
    /// that gives it any versions.
    pub fn default_version(&self, name: &str) -> Option<i16> {
        self.by_name(name)
            .into_iter()
            .find(|d| !d.def.valid_versions.is_empty())
            .map(|d| d.def.valid_versions.hi)
    }

    /// Every API key that has a request definition, ascending.
    pub fn api_keys(&self) -> Vec<i16> {
        let mut v: Vec<i16> = self
            .by_api
            .keys()
            .filter(|(k, _)| *k == MessageKind::Request)
            .map(|(_, a)| *a)
            .collect();
        v.sort_unstable();
        v
    }

    /// Every version of `(kind, api_key)` that some source can decode, ascending.
    pub fn versions(&self, kind: MessageKind, api_key: i16) -> Vec<i16> {
        let mut out = std::collections::BTreeSet::new();
        for d in self.by_api(kind, api_key) {
            let v = d.def.valid_versions;
            if !v.is_empty() {
                for x in v.lo..=v.hi.min(200) {
                    out.insert(x);
                }
            }
        }
        out.into_iter().collect()
    }

    /// The release history of a message name (oldest first), as imported.
    pub fn history(&self, name: &str) -> Option<&History> {
        self.history.get(name)
    }

    /// All histories.
    pub fn histories(&self) -> &BTreeMap<String, History> {
        &self.history
    }

    /// The request header version for `(api_key, api_version)`: 2 for flexible versions,
    /// 1 otherwise, and 0 for ControlledShutdown v0 (Kafka's one exception).
    pub fn request_header_version(&self, api_key: i16, api_version: i16) -> i16 {
        if api_key == 7 && api_version == 0 {
            return 0;
        }
        match self.request(api_key, api_version) {
            Some(d) if d.def.is_flexible(api_version) => 2,
            _ => 1,
        }
    }

    /// The response header version for `(api_key, api_version)`: 1 for flexible versions,
    /// 0 otherwise, and always 0 for ApiVersions (KIP-511: a client must read the
    /// response before it knows the broker's versions).
    pub fn response_header_version(&self, api_key: i16, api_version: i16) -> i16 {
        if api_key == 18 {
            return 0;
        }
        match self.response(api_key, api_version) {
            Some(d) if d.def.is_flexible(api_version) => 1,
            _ => 0,
        }
    }

    /// The header definition (`RequestHeader` or `ResponseHeader`) serving `version`.
    pub fn header(&self, request: bool, version: i16) -> Option<&Definition> {
        self.resolve_name(
            if request {
                "RequestHeader"
            } else {
                "ResponseHeader"
            },
            version,
        )
    }
}

/// A field name in the header style of Kafka's protocol guide and kwire's values:
/// `RequestApiKey` -> `request_api_key` (an underscore before each capital but the
/// first, all lowercase).
pub fn snake_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
