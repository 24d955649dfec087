//! Reference pages: for one API at one version, the smallest legal request and response
//! ([`crate::encode::minimal`]), encoded, decoded again by the same decoder that reads
//! captures (in [`DecodeOptions::page_mode`]), and laid out as the DeleteTopics v6 seed
//! page: the API's metadata, then for the request and the response a title line, the
//! byte grid coloured by region with its legend, the object tree and the JSON
//! definition.
//!
//! [`Page::build`] gathers the facts; [`text`], [`markdown`] and [`html`] print them;
//! [`index_md`] and [`index_html`] link a set of pages, grouped by the listeners their
//! definitions list.

pub mod frames;
pub mod html;
pub mod markdown;
pub mod text;

use crate::decode::{self, DecodeOptions, Known};
use crate::encode::{encode, minimal::minimal};
use crate::schema::{Definition, MessageKind, Schema, Source, Versions};
use crate::tree::{Buffers, Message, Node, Region};

/// One side of a page: the request or the response.
#[derive(Clone, Debug)]
pub struct Side {
    /// Request or response.
    pub kind: MessageKind,
    /// The message name (`DeleteTopicsRequest`).
    pub message_name: String,
    /// The encoded minimal instance, size prefix included.
    pub frame: Vec<u8>,
    /// The header version the frame uses.
    pub header_version: i16,
    /// The definition's `validVersions`.
    pub versions: Versions,
    /// Where the definition came from (`4.3`, `3.9`, `user`) and its file.
    pub source: String,
    /// The file name inside its source (`clients/DeleteTopicsRequest.json`).
    pub file: String,
    /// The JSON definition: the raw file (comments and all) when a run-time schema
    /// gave it, the facts otherwise.
    pub definition: String,
}

/// Everything one page shows.
#[derive(Clone, Debug)]
pub struct Page {
    /// The api_key.
    pub api_key: i16,
    /// The API name (`DeleteTopics`).
    pub api_name: String,
    /// The version encoded.
    pub version: i16,
    /// The request definition's `flexibleVersions`.
    pub flexible_versions: Versions,
    /// The request definition's `listeners`.
    pub listeners: Vec<String>,
    /// Whether a records field at this version holds a legacy message set.
    pub legacy_records: bool,
    /// The request.
    pub request: Side,
    /// The response, when the schema has one at this version.
    pub response: Option<Side>,
}

/// The file name of an API's page (`DeleteTopics`, or `DeleteTopics-v3` for a given
/// version), without extension.
pub fn page_stem(api_name: &str, version: Option<i16>) -> String {
    match version {
        Some(v) => format!("{api_name}-v{v}"),
        None => api_name.to_string(),
    }
}

/// Finds the api_key NAME means: an API name, a message name or an api_key,
/// case-insensitive.
///
/// # Errors
/// A message naming NAME when it is no API (a header or data definition, or nothing).
pub fn resolve_api(schema: &Schema, name: &str) -> Result<i16, String> {
    let names = schema
        .lookup(name)
        .ok_or_else(|| format!("no API named {name:?} (try `kwire apis`)"))?;
    schema
        .by_name(&names[0])
        .into_iter()
        .find_map(|d| d.def.api_key)
        .ok_or_else(|| format!("{} is not an API message (no apiKey)", names[0]))
}

/// The version a page shows by default: the highest version of the newest release that
/// has versions of the API.
pub fn default_page_version(schema: &Schema, api_key: i16) -> Option<i16> {
    let d = schema.by_api(MessageKind::Request, api_key);
    schema.default_version(&d.first()?.def.name)
}

/// A definition's JSON: the raw file when a run-time schema gave it, the facts otherwise.
pub(crate) fn definition_text(d: &Definition) -> String {
    match &d.raw {
        Some(raw) => raw.trim_end().to_string(),
        None => serde_json::to_string_pretty(&d.def.to_json(d.source == Source::User))
            .unwrap_or_default(),
    }
}

fn side(schema: &Schema, api_key: i16, version: i16, request: bool) -> Result<Side, String> {
    let kind = if request {
        MessageKind::Request
    } else {
        MessageKind::Response
    };
    let d = schema
        .resolve(kind, api_key, version)
        .ok_or_else(|| format!("no {} definition at v{version}", kind.as_str()))?;
    let inst = minimal(schema, api_key, version, request);
    let frame = encode(schema, &inst).map_err(|e| format!("{}: {e}", d.def.name))?;
    Ok(Side {
        kind,
        message_name: d.def.name.clone(),
        frame,
        header_version: if request {
            schema.request_header_version(api_key, version)
        } else {
            schema.response_header_version(api_key, version)
        },
        versions: d.def.valid_versions,
        source: d.source.to_string(),
        file: d.file.clone(),
        definition: definition_text(d),
    })
}

impl Page {
    /// The page of `api_key` at `version`.
    ///
    /// # Errors
    /// When the schema has no request at that version (the message lists the versions
    /// it has) or the minimal instance does not encode.
    pub fn build(schema: &Schema, api_key: i16, version: i16) -> Result<Page, String> {
        let name = schema
            .api_name(api_key)
            .ok_or_else(|| format!("no API with api_key {api_key}"))?
            .to_string();
        let Some(req) = schema.request(api_key, version) else {
            let vs = schema.versions(MessageKind::Request, api_key);
            let list = match (vs.first(), vs.last()) {
                (Some(a), Some(b)) if a == b => a.to_string(),
                (Some(a), Some(b)) => format!("{a}-{b}"),
                _ => "none".into(),
            };
            return Err(format!(
                "{name} has no version {version} (versions: {list})"
            ));
        };
        let flexible_versions = req.def.flexible_versions;
        let listeners = req.def.listeners.clone();
        let legacy_records = match api_key {
            0 => version < 3,
            1 => version < 4,
            _ => false,
        };
        let request = side(schema, api_key, version, true)?;
        let response = match schema.response(api_key, version) {
            Some(_) => Some(side(schema, api_key, version, false)?),
            None => None,
        };
        Ok(Page {
            api_key,
            api_name: name,
            version,
            flexible_versions,
            listeners,
            legacy_records,
            request,
            response,
        })
    }

    /// The sides present: the request, then the response.
    pub fn sides(&self) -> impl Iterator<Item = &Side> {
        std::iter::once(&self.request).chain(self.response.as_ref())
    }

    /// The opening paragraph: what the instance holds and how this version encodes.
    pub fn intro(&self) -> String {
        let records = if self.legacy_records {
            "any records field holds an empty message set (this version predates RecordBatch v2)"
        } else {
            "any records field holds one empty 61-byte RecordBatch v2"
        };
        let flex = if self.flexible_versions.contains(self.version) {
            format!(
                "Version {} is a flexible version, so every struct is terminated by a uvarint \
                 tagged-field count and strings and arrays carry compact length-plus-one prefixes.",
                self.version
            )
        } else {
            format!(
                "Version {} is not a flexible version: strings carry int16 length prefixes, \
                 arrays and byte arrays int32 ones, and there are no tagged fields.",
                self.version
            )
        };
        format!(
            "This page encodes the smallest legal instance of the request and the response: \
             numeric fields are zero, strings and byte arrays are empty, every array carries \
             exactly one sample element, and {records}. {flex} Sizes below include the \
             leading int32 size prefix."
        )
    }

    /// The metadata rows, in the seed page's order, then the listeners and the source.
    pub fn metadata(&self) -> Vec<(&'static str, String)> {
        let resp = self.response.as_ref();
        let mut rows = vec![
            ("API key", self.api_key.to_string()),
            ("Encoded at", format!("v{}", self.version)),
            ("Flexible versions", self.flexible_versions.to_string()),
            (
                "Headers",
                format!(
                    "req v{}, resp {}",
                    self.request.header_version,
                    resp.map(|r| format!("v{}", r.header_version))
                        .unwrap_or_else(|| "none".into())
                ),
            ),
            ("Request versions", self.request.versions.to_string()),
            (
                "Response versions",
                resp.map(|r| r.versions.to_string())
                    .unwrap_or_else(|| "none".into()),
            ),
            (
                "Request size",
                format!("{} bytes", self.request.frame.len()),
            ),
            (
                "Response size",
                resp.map(|r| format!("{} bytes", r.frame.len()))
                    .unwrap_or_else(|| "none".into()),
            ),
        ];
        rows.push((
            "Listeners",
            if self.listeners.is_empty() {
                "none".into()
            } else {
                self.listeners.join(", ")
            },
        ));
        let mut src = format!("{} ({})", self.request.source, self.request.file);
        if let Some(r) = resp {
            if r.source != self.request.source {
                src.push_str(&format!("; response {} ({})", r.source, r.file));
            }
        }
        rows.push(("Schema", src));
        rows
    }
}

impl Side {
    /// `request` or `response`.
    pub fn label(&self) -> &'static str {
        self.kind.as_str()
    }

    /// `Request` or `Response`.
    pub fn heading(&self) -> &'static str {
        match self.kind {
            MessageKind::Response => "Response",
            _ => "Request",
        }
    }

    /// The title line: `DeleteTopicsRequest v6, request header v2, 39 bytes on the wire`.
    pub fn title(&self, version: i16) -> String {
        format!(
            "{} v{version}, {} header v{}, {} bytes on the wire",
            self.message_name,
            self.label(),
            self.header_version,
            self.frame.len()
        )
    }

    /// Decodes the frame with the page's phrasing; the message borrows the frame.
    pub fn decode<'a>(
        &'a self,
        schema: &'a Schema,
        opts: &'a DecodeOptions,
        arena: &'a Buffers,
        api_key: i16,
        version: i16,
    ) -> Message<'a> {
        let known = match self.kind {
            MessageKind::Response => Known::response(api_key, version),
            _ => Known::request(),
        };
        decode::decode(schema, opts, arena, &self.frame, &known)
    }
}

/// A page's HTML, refused (a write error) once it would grow past `cap` bytes: the
/// writing stops at the first byte past the cap, so a message of megabytes (some 60
/// bytes of HTML a byte of grid) is found too large without being written whole.
pub(crate) struct Capped {
    buf: Vec<u8>,
    cap: usize,
    over: bool,
}

impl Capped {
    /// An empty page of at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Capped {
        Capped {
            buf: Vec::new(),
            cap,
            over: false,
        }
    }

    /// Whether a write was refused for the cap.
    pub(crate) fn over(&self) -> bool {
        self.over
    }

    /// The bytes written (all of them unless [`Capped::over`]).
    pub(crate) fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

impl std::io::Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + b.len() > self.cap {
            self.over = true;
            return Err(std::io::Error::other("over the page's cap"));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The decode options of every page.
pub fn page_options() -> DecodeOptions {
    DecodeOptions {
        page_mode: true,
        ..DecodeOptions::default()
    }
}

/// The runs of each region in buffer `id`, in legend order: `(region, [(offset, len)])`.
pub fn region_runs(msg: &Message<'_>, id: u32) -> Vec<(Region, Vec<(usize, usize)>)> {
    let (regions, _) = crate::render::text::byte_regions(msg, id);
    runs_of(&regions)
}

/// The runs of each region in `regions` (a buffer's bytes, as
/// [`crate::render::text::byte_regions`] gives them), in legend order, from one pass.
pub fn runs_of(regions: &[Option<Region>]) -> Vec<(Region, Vec<(usize, usize)>)> {
    let mut by: [Vec<(usize, usize)>; Region::ALL.len()] = Default::default();
    let slot = |r: Region| Region::ALL.iter().position(|x| *x == r).unwrap_or(0);
    let mut i = 0;
    while i < regions.len() {
        let mut e = i + 1;
        while e < regions.len() && regions[e] == regions[i] {
            e += 1;
        }
        if let Some(r) = regions[i] {
            by[slot(r)].push((i, e - i));
        }
        i = e;
    }
    Region::ALL
        .iter()
        .zip(by)
        .filter(|(_, runs)| !runs.is_empty())
        .map(|(r, runs)| (*r, runs))
        .collect()
}

/// `[0x000f, 18B]` spans of a run list, joined by spaces.
pub fn runs_text(runs: &[(usize, usize)]) -> String {
    runs.iter()
        .map(|(o, l)| format!("[0x{o:04x}, {l}B]"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether every byte of every buffer is in exactly one leaf, in order.
pub fn leaves_tile(msg: &Message<'_>) -> Result<(), String> {
    for id in 0..=msg.buffers.len() as u32 {
        let mut leaves: Vec<(usize, usize)> = Vec::new();
        msg.tree.walk(&mut |n: &Node<'_>, _| {
            if n.buffer == id && n.children.is_empty() && n.length > 0 {
                leaves.push((n.offset, n.length));
            }
        });
        leaves.sort_unstable();
        let mut pos = 0;
        for (o, l) in leaves {
            if o != pos {
                return Err(format!("buffer {id}: leaves do not tile at 0x{pos:04x}"));
            }
            pos = o + l;
        }
        let len = msg.buffer(id).len();
        if pos != len {
            return Err(format!(
                "buffer {id}: leaves end at 0x{pos:04x}, the buffer is {len} bytes"
            ));
        }
    }
    Ok(())
}

/// One API in an index: its key, name, default version and the versions that have
/// pages of their own.
#[derive(Clone, Debug)]
pub struct IndexEntry {
    /// The api_key.
    pub api_key: i16,
    /// The API name.
    pub api_name: String,
    /// The default version (the page `NAME`).
    pub version: i16,
    /// Every version with a page `NAME-vN` (empty without `--all-versions`).
    pub versions: Vec<i16>,
    /// The listeners of the request definition.
    pub listeners: Vec<String>,
    /// The request and response sizes of the default page.
    pub sizes: (usize, Option<usize>),
}

/// The listener groups of an index, in order: `broker`, `controller`, `zkBroker`, any
/// other listener, then `no listeners`; each with the entries that list it.
pub fn groups(entries: &[IndexEntry]) -> Vec<(String, Vec<&IndexEntry>)> {
    let mut names: Vec<String> = vec!["broker".into(), "controller".into(), "zkBroker".into()];
    for e in entries {
        for l in &e.listeners {
            if !names.contains(l) {
                names.push(l.clone());
            }
        }
    }
    let mut out: Vec<(String, Vec<&IndexEntry>)> = names
        .into_iter()
        .map(|n| {
            let v: Vec<&IndexEntry> = entries
                .iter()
                .filter(|e| e.listeners.contains(&n))
                .collect();
            (n, v)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let none: Vec<&IndexEntry> = entries.iter().filter(|e| e.listeners.is_empty()).collect();
    if !none.is_empty() {
        out.push(("no listeners".into(), none));
    }
    out
}

pub use html::index_html;
pub use markdown::index_md;
