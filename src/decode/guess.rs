//! Ranked guesses for frames whose layout the input does not give: a response whose
//! request is not in the input (a capture's first responses, `kwire decode` of a lone
//! response), and, in `kwire decode`, a frame whose direction no `c>s`/`s>c` marker or
//! `--kind` gives.
//!
//! Every response layout the schema knows (each api_key at each version) is tried on the
//! frame; a layout survives when it consumes the frame exactly with no error and no
//! warning. Survivors are ranked by a score (higher is better): values a broker would not
//! send count against a layout (an error code Kafka does not define, a negative throttle
//! time, control characters in a string...), and the connection's context counts for it
//! (the same API and version, or the same API at a near version, seen in requests on the
//! connection). The best survivor is the decode shown, marked [`Guess`]; the next few are
//! listed as runners-up.
//!
//! Cost: layouts are pruned before any walk by the response header (a flexible version's
//! header ends in a tagged-field count, which must be a small uvarint), trial walks keep
//! only the summary tree ([`Detail::Summary`]) and do not word their problems
//! ([`DecodeOptions::trial`]), versions of an API whose layouts are the same field for
//! field (Kafka bumps many versions for a change of behaviour alone) share one trial
//! walk, and the work per frame is capped at [`MAX_TRIAL_BYTES`] bytes walked, after
//! which the layouts not yet tried are left out.

use super::{decode, DecodeOptions, Detail, Known, Layout};
use crate::schema::plan::struct_fields_of;
use crate::schema::{Field, FieldType, MessageDef, MessageKind, Schema};
use crate::tree::{Buffers, Direction, Message, Value};

/// Bytes walked by trial decodes of one frame, at most (the frame's own length counts
/// once per layout tried; past the cap the remaining layouts are not tried).
pub const MAX_TRIAL_BYTES: usize = 64 << 20;

/// Runners-up kept besides the decode shown.
pub const MAX_CANDIDATES: usize = 5;

pub use crate::tree::{Beaten, Candidate, Guess};

/// What the input says around a frame: the (api_key, api_version) of requests seen on
/// the same connection, oldest first.
#[derive(Clone, Copy, Debug, Default)]
pub struct GuessContext<'c> {
    /// Requests seen on the connection.
    pub seen: &'c [(i16, i16)],
}

/// The response layouts of a schema, listed once.
#[derive(Clone, Debug)]
pub struct Guesser {
    /// `(api_key, api_version, response header version)`.
    layouts: Vec<(i16, i16, i16)>,
    /// For each layout, the index of the first layout whose trial walk it shares (its
    /// own index when it is the first): the same API, header version, definition and
    /// fields at its version ([`trial_key`]).
    same_walk: Vec<usize>,
    /// The api_keys clients send to brokers (their definitions list the `broker`
    /// listener); the others (inter-broker, controller-only) rank lower.
    client_apis: Vec<i16>,
}

impl Guesser {
    /// Lists every response layout of `schema`.
    pub fn new(schema: &Schema) -> Guesser {
        let mut layouts = Vec::new();
        let mut client_apis = Vec::new();
        for k in schema.api_keys() {
            if schema
                .by_api(MessageKind::Request, k)
                .iter()
                .any(|d| d.def.listeners.iter().any(|l| l == "broker"))
            {
                client_apis.push(k);
            }
            for v in schema.versions(MessageKind::Response, k) {
                layouts.push((k, v, schema.response_header_version(k, v)));
            }
        }
        let mut first: std::collections::HashMap<String, usize> = Default::default();
        let same_walk = layouts
            .iter()
            .enumerate()
            .map(|(i, &(k, v, hv))| match trial_key(schema, k, v, hv) {
                Some(key) => *first.entry(key).or_insert(i),
                None => i,
            })
            .collect();
        Guesser {
            layouts,
            same_walk,
            client_apis,
        }
    }

    /// The response layouts whose trial walk is another's, as `((api_key, api_version),
    /// (api_key, api_version) of the walk it takes)`: versions of one API with the same
    /// header version, definition and fields, field for field (a version bumped for a
    /// change of behaviour alone).
    pub fn shared_walks(&self) -> Vec<((i16, i16), (i16, i16))> {
        self.same_walk
            .iter()
            .enumerate()
            .filter(|&(i, &f)| i != f)
            .map(|(i, &f)| {
                let ((k, v, _), (fk, fv, _)) = (self.layouts[i], self.layouts[f]);
                ((k, v), (fk, fv))
            })
            .collect()
    }

    /// The number of response layouts (api_key and version) a guess tries.
    pub fn layouts(&self) -> usize {
        self.layouts.len()
    }

    /// The best response decode of `frame` (laid out as `layout` says) among every
    /// layout that fits, marked with its [`Guess`]; `None` when no layout fits.
    pub fn response<'a>(
        &self,
        schema: &'a Schema,
        opts: &'a DecodeOptions,
        arena: &'a Buffers,
        frame: &'a [u8],
        layout: Layout,
        cx: &GuessContext<'_>,
    ) -> Option<Message<'a>> {
        let body = frame.get(4 * usize::from(layout.size_prefix)..)?;
        if layout.header && body.len() < 4 {
            return None;
        }
        let trial = DecodeOptions {
            detail: Detail::Summary,
            trial: true,
            ..opts.clone()
        };
        let mut fits: Vec<(i16, i16)> = Vec::new();
        let mut work = 0usize;
        // One arena for every trial, emptied between them.
        let mut a = Buffers::new();
        // The result of each layout's walk, kept for the layouts that share it.
        let mut walked: Vec<Option<bool>> = vec![None; self.layouts.len()];
        for (i, &(k, v, hv)) in self.layouts.iter().enumerate() {
            if layout.header && hv == 1 && !small_uvarint(&body[4..]) {
                continue;
            }
            if work > MAX_TRIAL_BYTES {
                break;
            }
            // A shared walk counts as walked, so the cap leaves out the same layouts.
            work += frame.len();
            let fit = match walked[self.same_walk[i]] {
                Some(fit) => fit,
                None => {
                    let fit =
                        !decode(schema, &trial, &a, frame, &known(k, v, layout)).has_problem();
                    a.reset();
                    walked[i] = Some(fit);
                    fit
                }
            };
            if fit {
                fits.push((k, v));
            }
        }
        // Scores read the whole tree, whatever detail the caller keeps, so every output
        // format shows the same guess.
        let full = DecodeOptions {
            detail: Detail::Full,
            trial: false,
            ..opts.clone()
        };
        let mut ranked: Vec<Candidate> = fits
            .iter()
            .map(|&(k, v)| {
                let a = Buffers::new();
                let m = decode(schema, &full, &a, frame, &known(k, v, layout));
                Candidate {
                    api_key: k,
                    api_name: m.api_name.map(str::to_string),
                    api_version: v,
                    direction: Direction::Response,
                    score: score(schema, &m, cx, self.client_apis.contains(&k)),
                }
            })
            .collect();
        // Stable: among equal scores the lower api_key comes first, then the higher version.
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.api_key.cmp(&b.api_key))
                .then(b.api_version.cmp(&a.api_version))
        });
        ranked.truncate(1 + MAX_CANDIDATES);
        decode_ranked(schema, opts, arena, frame, layout, ranked)
    }
}

/// What the trial walk of response layout `(k, v)` with header version `hv` depends on
/// besides the frame, as a key: two layouts with the same key walk every frame alike.
/// It holds the api_key (names and hints are the API's), the header version, the
/// definition serving the version, whether the version is flexible, and for each field,
/// nested structs followed, its name, type, and at this version its presence, tag,
/// nullability and flexibility (what [`super::walk::Walk`] reads of the version).
/// `None` when the schema has no definition for it, or its structs nest deeper than 16
/// levels (such a layout shares no walk).
fn trial_key(schema: &Schema, k: i16, v: i16, hv: i16) -> Option<String> {
    let def = &schema.response(k, v)?.def;
    let flexible = def.is_flexible(v);
    let mut key = format!("{k} {hv} {:p} {flexible} |", std::ptr::from_ref(def));
    fields_key(def, &def.fields, v, flexible, 0, &mut key)?;
    Some(key)
}

/// [`trial_key`] of `fields`, appended to `out`; `None` past 16 levels of structs.
fn fields_key(
    def: &MessageDef,
    fields: &[Field],
    v: i16,
    flexible: bool,
    depth: usize,
    out: &mut String,
) -> Option<()> {
    use std::fmt::Write;
    if depth > 16 {
        return None;
    }
    for f in fields {
        if !f.versions.contains(v) {
            out.push_str("-;");
            continue;
        }
        let _ = write!(
            out,
            "{} {} {:?} {} {} {};",
            f.name,
            f.type_name,
            f.tag.filter(|_| f.is_tagged(v)),
            f.is_nullable(v),
            f.is_flexible(v, flexible),
            f.fields.len()
        );
        let mut t = &f.ty;
        while let FieldType::Array(inner) = t {
            t = inner;
        }
        if let FieldType::Struct(s) = t {
            match struct_fields_of(def, f, s) {
                Some(sub) => {
                    out.push('{');
                    fields_key(def, sub, v, flexible, depth + 1, out)?;
                    out.push('}');
                }
                // The walk says so whatever the version.
                None => out.push_str("{undefined}"),
            }
        }
    }
    Some(())
}

/// `frame` decoded by the first of `ranked` (best first) and marked with them all;
/// `None` when `ranked` is empty (no layout fits).
fn decode_ranked<'a>(
    schema: &'a Schema,
    opts: &'a DecodeOptions,
    arena: &'a Buffers,
    frame: &'a [u8],
    layout: Layout,
    ranked: Vec<Candidate>,
) -> Option<Message<'a>> {
    let best = ranked.first()?;
    let mut m = decode(
        schema,
        opts,
        arena,
        frame,
        &known(best.api_key, best.api_version, layout),
    );
    m.guess = Some(Box::new(Guess {
        candidates: ranked,
        beaten: None,
    }));
    Some(m)
}

/// A response's ranked guess as [`Guesser::response`] decided it, small enough to hand
/// from the thread that reads a capture in order to the worker that decodes the frame:
/// the candidates' (api_key, api_version, score), best first (none: no layout fits),
/// and the decoder limits the guess was made under. A worker decoding with the same
/// limits gets the message [`Guesser::response`] gives without trying every layout
/// again ([`Decided::decode`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    ranked: Box<[(i16, i16, f64)]>,
    limits: Limits,
}

/// The options a guess depends on: every one but the detail level and the kept fields,
/// which change which nodes are kept, not what is read, checked and scored.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Limits {
    max_decompressed: usize,
    max_depth: usize,
    max_nodes: usize,
    fold_frame_arrays: bool,
    page_mode: bool,
}

impl Limits {
    fn of(o: &DecodeOptions) -> Limits {
        // Written out so that a new option is a compile error here until placed.
        let DecodeOptions {
            max_decompressed,
            max_depth,
            page_mode,
            detail: _,
            max_nodes,
            fold_frame_arrays,
            keep: _,
            // The guess words its own decodes: trials never, the others always.
            trial: _,
        } = o;
        Limits {
            max_decompressed: *max_decompressed,
            max_depth: *max_depth,
            max_nodes: *max_nodes,
            fold_frame_arrays: *fold_frame_arrays,
            page_mode: *page_mode,
        }
    }
}

impl Decided {
    /// What a guess under `opts` decided, from the message it gave (a message with no
    /// [`Guess`] mark: no layout fit).
    pub fn of(guessed: &Message<'_>, opts: &DecodeOptions) -> Decided {
        let ranked = guessed
            .guess
            .as_deref()
            .map(|g| {
                g.candidates
                    .iter()
                    .map(|c| (c.api_key, c.api_version, c.score))
                    .collect()
            })
            .unwrap_or_default();
        Decided {
            ranked,
            limits: Limits::of(opts),
        }
    }

    /// Whether a decode under `opts` may take this guess as its own.
    pub fn holds_for(&self, opts: &DecodeOptions) -> bool {
        self.limits == Limits::of(opts)
    }

    /// The message [`Guesser::response`] gives for `frame` under `opts` (see
    /// [`Decided::holds_for`]), decoded by the best candidate and marked with them
    /// all; `None` when no layout fit.
    pub fn decode<'a>(
        &self,
        schema: &'a Schema,
        opts: &'a DecodeOptions,
        arena: &'a Buffers,
        frame: &'a [u8],
        layout: Layout,
    ) -> Option<Message<'a>> {
        let ranked = self
            .ranked
            .iter()
            .map(|&(api_key, api_version, score)| Candidate {
                api_key,
                // As the candidate's own decode names it (`decode` reads the schema).
                api_name: schema.api_name(api_key).map(str::to_string),
                api_version,
                direction: Direction::Response,
                score,
            })
            .collect();
        decode_ranked(schema, opts, arena, frame, layout, ranked)
    }
}

impl Guesser {
    /// A frame whose direction is unknown: a request that decodes with no error and no
    /// warning stays a request with no mark; otherwise the best response layout that fits
    /// is shown, marked, with the request decode among the candidates when it has no
    /// error; with no response layout fitting, the request decode is shown as it is.
    pub fn either<'a>(
        &self,
        schema: &'a Schema,
        opts: &'a DecodeOptions,
        arena: &'a Buffers,
        frame: &'a [u8],
        layout: Layout,
        cx: &GuessContext<'_>,
    ) -> Message<'a> {
        let rk = Known {
            layout,
            ..Known::request()
        };
        let req = decode(schema, opts, arena, frame, &rk);
        let (errors, mut warnings) = req.problem_counts();
        // A request that ends with its header although its version has body fields is
        // not clean either (the decoder leaves a missing body unsaid).
        if body_missing(schema, &req) {
            warnings += 1;
        }
        if (errors, warnings) == (0, 0) {
            return req;
        }
        let Some(mut resp) = self.response(schema, opts, arena, frame, layout, cx) else {
            return req;
        };
        // The guess shown beat a reading that failed: it says so, with that reading's
        // errors and warnings at their offsets, so a request that fails as a request is
        // never shown as a clean response.
        let beaten = beaten_reading(arena, &req, errors, warnings);
        if errors == 0 {
            if let Some(g) = resp.guess.as_mut() {
                let score = -10.0 * oddities(schema, &req) - 5.0 * warnings as f64;
                let c = Candidate {
                    api_key: req.api_key,
                    api_name: req.api_name.map(str::to_string),
                    api_version: req.api_version,
                    direction: Direction::Request,
                    score,
                };
                let at = g
                    .candidates
                    .iter()
                    .position(|x| x.score < score)
                    .unwrap_or(g.candidates.len());
                g.candidates.insert(at, c);
                g.candidates.truncate(1 + MAX_CANDIDATES);
                if at == 0 {
                    let mut req = req;
                    req.guess = resp.guess.take();
                    return req;
                }
            }
        }
        let w = match resp.tree.warning() {
            Some(old) => arena.fmt(format_args!("{beaten}; {old}")),
            None => beaten,
        };
        resp.tree.set_warning(w);
        if let Some(g) = resp.guess.as_mut() {
            g.beaten = Some(Beaten {
                direction: Direction::Request,
                errors,
                warnings,
            });
        }
        resp
    }
}

/// Most problems of the beaten reading listed in its warning (the count says the rest).
const MAX_BEATEN: usize = 4;

/// The warning a guess carries about the request reading it beat: the API and version
/// that reading gave, and its problems at their offsets (`0x0021`), at most
/// [`MAX_BEATEN`] of them.
fn beaten_reading<'a>(
    arena: &'a Buffers,
    req: &Message<'_>,
    errors: usize,
    warnings: usize,
) -> &'a str {
    let mut items: Vec<String> = req
        .errors()
        .into_iter()
        .map(|e| format!("error at 0x{:04x}: {}", e.offset, e.message))
        .chain(
            req.warnings()
                .into_iter()
                .map(|w| format!("warning at 0x{:04x}: {}", w.offset, w.message)),
        )
        .collect();
    let total = items.len();
    items.truncate(MAX_BEATEN);
    if items.is_empty() {
        items.push("its version has a body and the frame ends with the header".into());
    }
    let more = if total > MAX_BEATEN {
        format!(" (and {} more)", total - MAX_BEATEN)
    } else {
        String::new()
    };
    let api = req.api_name.unwrap_or("an unknown API");
    arena.fmt(format_args!(
        "read as a request ({api} v{}), this frame has {errors} error(s) and {warnings} \
         warning(s): {}{more}; the response layout shown is a guess (--kind request \
         shows the request reading)",
        req.api_version,
        items.join("; ")
    ))
}

/// Whether request decode `m` is clean: no error, no warning, and a body where its
/// version has fields (the decoder leaves a missing body unsaid).
pub fn clean_request(schema: &Schema, m: &Message<'_>) -> bool {
    !m.has_problem() && !body_missing(schema, m)
}

/// Whether `m` (a request) has no body although its definition has fields (or a
/// tagged-field count) at its version.
fn body_missing(schema: &Schema, m: &Message<'_>) -> bool {
    let has_body = m
        .tree
        .children
        .iter()
        .any(|n| n.kind == crate::tree::NodeKind::Body || n.name == "body");
    if has_body {
        return false;
    }
    match schema.request(m.api_key, m.api_version) {
        Some(d) => {
            let v = m.api_version;
            d.def.is_flexible(v)
                || d.def
                    .fields
                    .iter()
                    .any(|f| f.versions.contains(v) && !f.tagged_versions.contains(v))
        }
        None => false,
    }
}

fn known(k: i16, v: i16, layout: Layout) -> Known {
    Known {
        layout,
        ..Known::response(k, v)
    }
}

/// Whether `b` starts with a uvarint of at most 2 bytes (a tagged-field count).
fn small_uvarint(b: &[u8]) -> bool {
    match b {
        [x, ..] if x & 0x80 == 0 => true,
        [_, y, ..] => y & 0x80 == 0,
        _ => false,
    }
}

/// The score of a decode that fits: oddities against it (10 a unit), APIs clients do not
/// send to brokers against it (5), the connection's context for it (the same API and
/// version seen: 6; an API of the same family seen, see [`family`]: 0.5), and a slight
/// preference for newer versions (clients mostly speak recent ones: 0.01 a version).
fn score(schema: &Schema, m: &Message<'_>, cx: &GuessContext<'_>, client_api: bool) -> f64 {
    let mut s = -10.0 * oddities(schema, m);
    if !client_api {
        s -= 5.0;
    }
    let (k, v) = (m.api_key, m.api_version);
    if cx.seen.contains(&(k, v)) {
        s += 6.0;
    } else if let Some(f) = family(k) {
        if cx.seen.iter().any(|(sk, _)| family(*sk) == Some(f)) {
            s += 0.5;
        }
    }
    s + f64::from(v) / 100.0
}

/// The APIs a client sends together on one connection: consumer groups (to the group
/// coordinator), transactions (to the transaction coordinator), produce and fetch (to
/// partition leaders), administration (to the controller or any broker).
fn family(api_key: i16) -> Option<u8> {
    match api_key {
        8 | 9 | 10 | 11 | 12 | 13 | 14 | 68 | 69 | 79 => Some(0),
        22 | 24 | 25 | 26 | 28 | 65 | 66 => Some(1),
        0 | 1 | 2 | 3 | 23 => Some(2),
        15 | 16 | 19 | 20 | 21 | 29..=33 | 35..=37 | 42..=51 | 57 | 60 | 61 | 64 | 71 | 74 => {
            Some(3)
        }
        _ => None,
    }
}

/// How many values of `m` a broker would not send, weighted: an ApiVersions answer with
/// no error and no API (3), api_keys Kafka does not define (1), error codes it does not
/// define (3), throttle times outside an hour (3) or over a minute (1), control
/// characters in strings (2),
/// ports outside 0..65535 (2), ids, epochs and indexes below -1 (1), non-zero known error
/// codes (0.25: errors happen, but less often than not).
pub fn oddities(schema: &Schema, m: &Message<'_>) -> f64 {
    let mut odd = 0.0;
    // An ApiVersions answer without error lists the broker's APIs.
    if m.api_key == 18 && m.direction == Direction::Response {
        let ok = m.tree.find("ErrorCode").map(|n| &n.value) == Some(&Value::Int(0));
        let empty = m
            .tree
            .find("ApiKeys")
            .is_some_and(|n| n.value == Value::Count(0));
        if ok && empty {
            odd += 3.0;
        }
    }
    m.tree.walk(&mut |n, _| {
        let name: &str = n.name;
        match n.value {
            Value::Int(x) => {
                if name == "ApiKey" {
                    if i16::try_from(x)
                        .ok()
                        .and_then(|k| schema.api_name(k))
                        .is_none()
                    {
                        odd += 1.0;
                    }
                } else if name.ends_with("ErrorCode") {
                    match i16::try_from(x).ok().and_then(crate::errors::error_name) {
                        None => odd += 3.0,
                        Some(_) if x != 0 => odd += 0.25,
                        Some(_) => {}
                    }
                } else if name == "ThrottleTimeMs" {
                    if !(0..=3_600_000).contains(&x) {
                        odd += 3.0;
                    } else if x > 60_000 {
                        odd += 1.0;
                    }
                } else if name == "Port" {
                    if !(0..=65535).contains(&x) {
                        odd += 2.0;
                    }
                } else if (name.ends_with("Id")
                    || name.contains("Epoch")
                    || name.ends_with("Index"))
                    && x < -1
                {
                    odd += 1.0;
                }
            }
            // Tie-break: of two layouts that fit the same bytes, the one reading fewer
            // empty arrays reads more of what is there.
            Value::Count(0) => odd += 0.002,
            Value::Str(t) if t.chars().any(|c| c.is_control()) => odd += 2.0,
            _ => {}
        }
    });
    odd
}
