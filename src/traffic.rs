//! Capture traffic statistics (what `kwire stats` prints for captures; [`crate::log::census`]
//! counts log directories): per API and version the requests, responses, error names,
//! latencies and bytes; per connection the endpoints and client_id.

use crate::session::Context;
use crate::tree::{Direction, Message, Node, Value};
use serde_json::json;
use std::collections::BTreeMap;

/// Counts for one (api_key, api_version).
#[derive(Debug, Default, Clone)]
pub struct ApiStats {
    /// The API name.
    pub api_name: String,
    /// Requests seen.
    pub requests: u64,
    /// Responses seen.
    pub responses: u64,
    /// Bytes of requests and responses, size prefixes included.
    pub bytes: u64,
    /// Error names found in responses (every non-zero error code field), with counts.
    pub errors: BTreeMap<String, u64>,
    /// Latencies of paired responses, in nanoseconds: exact, or a histogram once
    /// [`EXACT_LATENCIES_KEEP`] are held over all APIs ([`Latencies`]).
    pub latencies: Latencies,
    /// Messages with decode errors.
    pub malformed: u64,
}

/// Counts for one connection.
#[derive(Debug, Default, Clone)]
pub struct ConnStats {
    /// Client endpoint.
    pub client: String,
    /// Server endpoint.
    pub server: String,
    /// The client_id of its requests (the first one seen).
    pub client_id: Option<String>,
    /// Messages seen.
    pub messages: u64,
    /// The capture it is in, when several are read (`kwire stats A B`).
    pub capture: Option<std::sync::Arc<str>>,
}

/// Statistics over a capture.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Per (api_key, api_version).
    pub apis: BTreeMap<(i16, i16), ApiStats>,
    /// Per (capture ordinal, connection id): connections are numbered per capture, and
    /// the ordinal is [`Stats::capture`] at the time [`Stats::add`] saw them.
    pub connections: BTreeMap<(u32, u32), ConnStats>,
    /// The ordinal (0-based, in command-line order) of the capture now being added.
    pub capture: u32,
    /// SASL tokens seen.
    pub sasl_tokens: u64,
    /// Responses whose request is not in the capture (so their API is unknown, or only
    /// guessed).
    pub unpaired_responses: u64,
    /// TLS connections: version, suite, SNI, how much was decrypted; in capture order,
    /// then by connection id.
    pub tls: Vec<TlsRow>,
    /// Messages of (api_key, api_version) pairs past the first [`APIS_KEEP`], counted
    /// here only (a capture of real Kafka traffic has a few hundred pairs at most).
    pub apis_past_cap: u64,
    /// Messages on connections past the first [`CONNECTIONS_KEEP`], counted here only
    /// (their API counts are in [`Stats::apis`] all the same).
    pub connections_past_cap: u64,
    /// TLS connections past [`crate::input::TLS_SUMMARIES_KEEP`] in a capture, counted
    /// only.
    pub tls_past_cap: u64,
    /// Exact latencies held over all of [`Stats::apis`] (at most [`EXACT_LATENCIES_KEEP`]).
    exact_latencies: usize,
}

/// Latencies held exact (8 bytes each) over all APIs. Past it, the API holding the most
/// exact values turns them into a [`LatencyHist`] (30 KiB, about 1% error), and so on:
/// quantiles stay exact for every API below its share. 32 MiB.
pub const EXACT_LATENCIES_KEEP: usize = 4_000_000;
/// (api_key, api_version) pairs itemised by [`Stats`]. Kafka 4.4 has fewer than 1,000;
/// more come only from invented api_keys or versions.
pub const APIS_KEEP: usize = 4_096;
/// Connections itemised by [`Stats`] (about 200 bytes each).
pub const CONNECTIONS_KEEP: usize = 100_000;
/// One TLS connection of [`Stats::tls`].
#[derive(Debug, Clone)]
pub struct TlsRow {
    /// The capture it is of, when several were read (its path as given).
    pub capture: Option<std::sync::Arc<str>>,
    /// What the TLS layer learnt of it.
    pub summary: crate::input::tls::TlsSummary,
}

impl TlsRow {
    /// The rows of one capture's TLS connections, sorted by connection id, each named
    /// `capture` (see [`TlsRow::capture`]).
    pub fn of_capture(
        tls: Vec<crate::input::tls::TlsSummary>,
        capture: Option<std::sync::Arc<str>>,
    ) -> Vec<TlsRow> {
        let mut rows: Vec<TlsRow> = tls
            .into_iter()
            .map(|summary| TlsRow {
                capture: capture.clone(),
                summary,
            })
            .collect();
        rows.sort_by_key(|t| t.summary.connection);
        rows
    }
}

/// A connection's name in the text tables: its id, after its capture's name when there
/// are several captures (connection ids restart in each), as `CAPTURE#ID`.
fn conn_label(capture: Option<&str>, id: u32) -> String {
    match capture {
        Some(cap) => format!("{cap}#{id}"),
        None => id.to_string(),
    }
}

/// The `conn` column's cells, heading first, padded to one width: numbers (one capture)
/// to the right, `CAPTURE#ID` names (several) to the left.
fn conn_column(ids: &[String]) -> Vec<String> {
    let width = ids
        .iter()
        .map(|i| i.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let named = ids.iter().any(|i| i.contains('#'));
    std::iter::once("conn")
        .chain(ids.iter().map(String::as_str))
        .map(|c| match named {
            true => format!("{c:<width$}"),
            false => format!("{c:>width$}"),
        })
        .collect()
}

/// Longest client_id [`Stats`] keeps, in characters; a longer one is cut, with `…` after.
pub const NAME_CHARS_KEEP: usize = 256;

/// `s` cut to [`NAME_CHARS_KEEP`] characters, with `…` after when it was cut.
pub fn bounded_name(s: &str) -> String {
    match s.char_indices().nth(NAME_CHARS_KEEP) {
        None => s.to_string(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}

/// Sub-bins per power of two of a [`LatencyHist`], as a power of two (64).
const SUB_BITS: u32 = 6;
/// Bins of a [`LatencyHist`]: 64 exact ones (0..64 ns), then 64 per power of two up to
/// 2^64 ns.
const HIST_BINS: usize = (1 << SUB_BITS) * (64 - SUB_BITS as usize + 1);

/// A log-linear histogram of nanosecond values, as HdrHistogram lays one out: values
/// below 64 each have a bin; above, each power of two is split in 64 equal bins, so a
/// bin spans at most 1/64 of its lower bound and its middle is within 0.8% of any value
/// in it. Fixed size: 3,776 counts (30 KiB).
#[derive(Debug, Clone)]
pub struct LatencyHist {
    bins: Box<[u64]>,
}

impl Default for LatencyHist {
    fn default() -> LatencyHist {
        LatencyHist {
            bins: vec![0; HIST_BINS].into_boxed_slice(),
        }
    }
}

impl LatencyHist {
    fn bin(v: u64) -> usize {
        let sub = 1u64 << SUB_BITS;
        if v < sub {
            return v as usize;
        }
        let shift = 63 - v.leading_zeros() - SUB_BITS;
        ((shift as u64 + 1) * sub + ((v >> shift) - sub)) as usize
    }

    /// The lowest and highest value of bin `i`.
    fn bounds(i: usize) -> (u64, u64) {
        let sub = 1usize << SUB_BITS;
        if i < sub {
            return (i as u64, i as u64);
        }
        let shift = (i / sub - 1) as u32;
        let lo = ((sub + i % sub) as u64) << shift;
        (lo, lo + ((1u64 << shift) - 1))
    }

    /// Adds one value.
    pub fn add(&mut self, v: u64) {
        let b = Self::bin(v);
        self.bins[b] = self.bins[b].saturating_add(1);
    }

    /// The middle of the bin holding the value of rank `rank` (1-based) in sorted order.
    fn at_rank(&self, rank: u64) -> Option<u64> {
        let mut seen = 0u64;
        for (i, c) in self.bins.iter().enumerate() {
            seen = seen.saturating_add(*c);
            if seen >= rank {
                let (lo, hi) = Self::bounds(i);
                return Some(lo + (hi - lo) / 2);
            }
        }
        None
    }
}

/// The latencies of one API's paired responses, in nanoseconds: every value while
/// [`Stats`] holds fewer than [`EXACT_LATENCIES_KEEP`] over all APIs (quantiles are then
/// exact nearest-rank, as DuckDB's `quantile_disc`), else a [`LatencyHist`] (quantiles
/// within 1%; the minimum and maximum stay exact).
#[derive(Debug, Default, Clone)]
pub struct Latencies {
    exact: Vec<u64>,
    sorted: bool,
    hist: Option<LatencyHist>,
    n: u64,
    min: u64,
    max: u64,
}

impl Latencies {
    /// Values added.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// No value added.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Quantiles are exact (no histogram yet).
    pub fn is_exact(&self) -> bool {
        self.hist.is_none()
    }

    /// Adds one value.
    pub fn push(&mut self, ns: u64) {
        if self.n == 0 {
            (self.min, self.max) = (ns, ns);
        } else {
            self.min = self.min.min(ns);
            self.max = self.max.max(ns);
        }
        self.n += 1;
        match &mut self.hist {
            Some(h) => h.add(ns),
            None => {
                if self.exact.is_empty() {
                    self.sorted = true;
                } else if self.exact.last() > Some(&ns) {
                    self.sorted = false;
                }
                self.exact.push(ns);
            }
        }
    }

    /// Exact values held (what they cost: 8 bytes each).
    pub fn exact_len(&self) -> usize {
        self.exact.len()
    }

    /// Moves the exact values into a histogram; gives how many were freed.
    pub fn to_hist(&mut self) -> usize {
        let h = self.hist.get_or_insert_with(LatencyHist::default);
        for v in &self.exact {
            h.add(*v);
        }
        let freed = self.exact.len();
        self.exact = Vec::new();
        freed
    }

    /// Sorts the exact values in place (so that [`Latencies::quantile`] needs no copy).
    pub fn sort(&mut self) {
        if !self.sorted {
            self.exact.sort_unstable();
            self.sorted = true;
        }
    }

    /// The nearest-rank `q`-quantile (0..=1): the value of rank ceil(q x n); `q` 0 and 1
    /// give the exact minimum and maximum. Exact unless a histogram holds them (then
    /// the middle of the value's bin, within 1%). `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        self.quantiles(&[q]).map(|v| v[0])
    }

    /// [`Latencies::quantile`] for each of `qs` (one sort of a copy when the values are
    /// not sorted yet).
    pub fn quantiles(&self, qs: &[f64]) -> Option<Vec<u64>> {
        if self.n == 0 {
            return None;
        }
        let rank = |q: f64| ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let out = match &self.hist {
            Some(h) => qs
                .iter()
                .map(|&q| match rank(q) {
                    1 if q <= 0.0 => self.min,
                    r if r == self.n => self.max,
                    r => h.at_rank(r).unwrap_or(self.max).clamp(self.min, self.max),
                })
                .collect(),
            None => {
                let copy;
                let v: &[u64] = if self.sorted {
                    &self.exact
                } else {
                    let mut c = self.exact.clone();
                    c.sort_unstable();
                    copy = c;
                    &copy
                };
                qs.iter().map(|&q| v[rank(q) as usize - 1]).collect()
            }
        };
        Some(out)
    }

    /// Adds every value of `o` (exact stays exact only when both are).
    pub fn merge(&mut self, o: &Latencies) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            (self.min, self.max) = (o.min, o.max);
        } else {
            self.min = self.min.min(o.min);
            self.max = self.max.max(o.max);
        }
        self.n += o.n;
        if o.hist.is_some() && self.hist.is_none() {
            self.to_hist();
        }
        match &mut self.hist {
            Some(h) => {
                for v in &o.exact {
                    h.add(*v);
                }
                if let Some(oh) = &o.hist {
                    for (a, b) in h.bins.iter_mut().zip(oh.bins.iter()) {
                        *a = a.saturating_add(*b);
                    }
                }
            }
            None => {
                self.exact.extend_from_slice(&o.exact);
                self.sorted = false;
            }
        }
    }
}

fn ms(ns: u64) -> f64 {
    (ns as f64 / 1000.0).round() / 1000.0
}

/// A non-zero error code field (`...ErrorCode`, or the header-like `error_code`) of a
/// node: the code and its name (the node's annotation, as the decoder names codes it
/// knows). `None` for any other node and for code 0. What `kwire stats` counts and what
/// `kwire export` lists.
pub fn error_code<'n>(n: &'n Node<'_>) -> Option<(i64, Option<&'n str>)> {
    if !(n.name.ends_with("ErrorCode") || n.name == "error_code") {
        return None;
    }
    match n.value {
        Value::Int(v) if v != 0 => Some((v, n.annotation)),
        _ => None,
    }
}

/// What the statistics take from one message: small and owned, so that messages can be
/// decoded on worker threads and added in capture order ([`Stats::add_item`]).
#[derive(Debug, Clone)]
pub struct Item {
    direction: Direction,
    connection: u32,
    /// The capture file, when several are read.
    capture: Option<std::sync::Arc<str>>,
    src: String,
    dst: String,
    client_id: Option<String>,
    api_key: i16,
    api_version: i16,
    api_name: String,
    sasl_token: bool,
    /// The layout was guessed (a response whose request is not in the capture).
    guessed: bool,
    size: u64,
    malformed: bool,
    latency_ns: Option<u64>,
    /// Names of the non-zero error codes of a response, in tree order.
    errors: Vec<String>,
}

impl Item {
    /// The facts of message `m` with capture context `ctx`.
    pub fn of(m: &Message<'_>, ctx: &Context) -> Item {
        let client_id = if m.direction == Direction::Request {
            match m.tree.find("client_id").map(|n| &n.value) {
                Some(Value::Str(s)) => Some(bounded_name(s)),
                _ => None,
            }
        } else {
            None
        };
        let mut errors = Vec::new();
        if m.api_key >= 0 && m.direction == Direction::Response {
            m.tree.walk(&mut |n, _| {
                if let Some((_, Some(name))) = error_code(n) {
                    errors.push(name.to_string());
                }
            });
        }
        Item {
            direction: m.direction,
            connection: ctx.connection,
            capture: ctx.capture.clone(),
            src: ctx.src.clone(),
            dst: ctx.dst.clone(),
            client_id,
            api_key: m.api_key,
            api_version: m.api_version,
            api_name: m
                .api_name
                .map_or_else(|| format!("api_key {}", m.api_key), str::to_string),
            sasl_token: m.api_name == Some("SaslToken"),
            guessed: m.guess.is_some(),
            size: m.size as u64,
            malformed: m.api_key >= 0 && !m.errors().is_empty(),
            latency_ns: ctx.latency.map(|l| l.as_nanos() as u64),
            errors,
        }
    }
}

impl Stats {
    /// Adds the summaries of the capture's TLS connections (from
    /// [`crate::input::CaptureStats::tls`]), kept in connection order.
    /// `past_cap`: the capture's TLS connections past [`crate::input::TLS_SUMMARIES_KEEP`]
    /// (counted, not itemised).
    ///
    /// `capture` names the capture the connections are of when there are several
    /// (connection ids restart in each); the rows of one call are sorted by connection id
    /// and follow those of earlier calls.
    pub fn add_tls(
        &mut self,
        tls: Vec<crate::input::tls::TlsSummary>,
        past_cap: u64,
        capture: Option<std::sync::Arc<str>>,
    ) {
        self.tls_past_cap += past_cap;
        self.tls.extend(TlsRow::of_capture(tls, capture));
    }

    /// Adds one decoded message with its capture context.
    pub fn add(&mut self, m: &Message<'_>, ctx: &Context) {
        self.add_item(Item::of(m, ctx));
    }

    /// Adds what [`Item::of`] took from one message (items added in capture order give
    /// the statistics [`Stats::add`] gives).
    pub fn add_item(&mut self, it: Item) {
        let key = (self.capture, it.connection);
        if self.connections.len() < CONNECTIONS_KEEP || self.connections.contains_key(&key) {
            let conn = self.connections.entry(key).or_default();
            conn.messages += 1;
            if conn.capture.is_none() {
                conn.capture = it.capture;
            }
            if it.direction == Direction::Request {
                conn.client = it.src;
                conn.server = it.dst;
                if conn.client_id.is_none() {
                    conn.client_id = it.client_id;
                }
            } else if conn.client.is_empty() {
                conn.client = it.dst;
                conn.server = it.src;
            }
        } else {
            self.connections_past_cap += 1;
        }
        // A guessed layout (a response whose request is not in the capture) is not
        // counted under the API guessed.
        if it.api_key < 0 || it.guessed {
            if it.sasl_token {
                self.sasl_tokens += 1;
            } else if it.direction == Direction::Response {
                self.unpaired_responses += 1;
            }
            return;
        }
        let k = (it.api_key, it.api_version);
        if self.apis.len() >= APIS_KEEP && !self.apis.contains_key(&k) {
            self.apis_past_cap += 1;
            return;
        }
        let a = self.apis.entry(k).or_default();
        if a.api_name.is_empty() {
            a.api_name = it.api_name;
        }
        a.bytes += it.size;
        if it.malformed {
            a.malformed += 1;
        }
        match it.direction {
            Direction::Request => a.requests += 1,
            Direction::Response => {
                a.responses += 1;
                let exact = a.latencies.is_exact();
                if let Some(l) = it.latency_ns {
                    a.latencies.push(l);
                }
                for e in it.errors {
                    *a.errors.entry(e).or_default() += 1;
                }
                if exact && it.latency_ns.is_some() {
                    self.exact_latencies += 1;
                    if self.exact_latencies > EXACT_LATENCIES_KEEP {
                        self.shed_latencies();
                    }
                }
            }
        }
    }

    /// Past [`EXACT_LATENCIES_KEEP`]: the API holding the most exact latencies moves them
    /// into its histogram.
    fn shed_latencies(&mut self) {
        if let Some(a) = self
            .apis
            .values_mut()
            .max_by_key(|a| a.latencies.exact_len())
        {
            self.exact_latencies -= a.latencies.to_hist();
        }
    }

    /// Some API's latency quantiles come from a histogram (more than
    /// [`EXACT_LATENCIES_KEEP`] paired responses were counted).
    pub fn approximate(&self) -> bool {
        self.apis.values().any(|a| !a.latencies.is_exact())
    }

    /// Sorts every API's exact latencies in place (quantiles then read them without a
    /// copy).
    pub fn finish(&mut self) {
        for a in self.apis.values_mut() {
            a.latencies.sort();
        }
    }

    /// The closing words for what [`Stats`] counted without itemising (past
    /// [`APIS_KEEP`], [`CONNECTIONS_KEEP`] or [`EXACT_LATENCIES_KEEP`]); empty when
    /// nothing was.
    pub fn folded(&self) -> Vec<String> {
        self.folded_with(self.tls_past_cap)
    }

    /// [`Stats::folded`] with `tls_past_cap` for [`Stats::tls_past_cap`].
    fn folded_with(&self, tls_past_cap: u64) -> Vec<String> {
        let mut v = Vec::new();
        if self.apis_past_cap > 0 {
            v.push(format!(
                "{} messages of (api_key, api_version) pairs past the first {APIS_KEEP} are counted only here",
                self.apis_past_cap
            ));
        }
        if self.connections_past_cap > 0 {
            v.push(format!(
                "{} messages on connections past the first {CONNECTIONS_KEEP} are not in the connection table (their APIs are counted)",
                self.connections_past_cap
            ));
        }
        if tls_past_cap > 0 {
            v.push(format!(
                "{} TLS connections past the first {} of a capture are not in the TLS table",
                tls_past_cap,
                crate::input::TLS_SUMMARIES_KEEP
            ));
        }
        if self.approximate() {
            v.push(format!(
                "latencies of APIs marked ~ come from a histogram (within 1%; min and max exact): over {EXACT_LATENCIES_KEEP} paired responses were counted"
            ));
        }
        v
    }

    /// The statistics as JSON: `{"apis":[...],"connections":[...]}` with latencies in
    /// milliseconds.
    pub fn to_json(&self) -> serde_json::Value {
        let apis: Vec<_> = self
            .apis
            .iter()
            .map(|((k, v), a)| {
                let mut j = json!({
                    "api_key": k, "api_name": a.api_name, "api_version": v,
                    "requests": a.requests, "responses": a.responses, "bytes": a.bytes,
                    "malformed": a.malformed, "errors": a.errors,
                    "latency_ms": match a.latencies.quantiles(&[0.0, 0.5, 0.99, 1.0]) {
                        None => serde_json::Value::Null,
                        Some(q) => json!({
                            "count": a.latencies.len(),
                            "min": ms(q[0]), "median": ms(q[1]),
                            "p99": ms(q[2]), "max": ms(q[3]),
                        }),
                    },
                });
                if !a.latencies.is_exact() {
                    j["latency_ms"]["approximate"] = true.into();
                }
                j
            })
            .collect();
        let conns: Vec<_> = self
            .connections
            .iter()
            .map(|((_, id), c)| {
                let mut j = json!({"connection": id, "client": c.client, "server": c.server, "client_id": c.client_id, "messages": c.messages});
                if let (Some(cap), Some(o)) = (&c.capture, j.as_object_mut()) {
                    o.insert("capture".into(), cap.to_string().into());
                }
                j
            })
            .collect();
        let mut j = json!({
            "apis": apis,
            "connections": conns,
            "sasl_tokens": self.sasl_tokens,
            "unpaired_responses": self.unpaired_responses,
        });
        if self.apis_past_cap > 0 {
            j["apis_past_cap_messages"] = self.apis_past_cap.into();
        }
        if self.connections_past_cap > 0 {
            j["connections_past_cap_messages"] = self.connections_past_cap.into();
        }
        if !self.tls.is_empty() {
            j["tls"] = self
                .tls
                .iter()
                .map(|row| {
                    let t = &row.summary;
                    let mut j = json!({
                        "connection": t.connection, "version": t.version,
                        "cipher_suite": t.cipher_suite, "sni": t.sni, "alpn": t.alpn,
                        "decrypted": t.decrypted(), "decrypted_records": t.decrypted_records,
                        "encrypted_records": t.encrypted_records,
                        "encrypted_bytes": t.encrypted_bytes,
                    });
                    if let (Some(cap), Some(o)) = (&row.capture, j.as_object_mut()) {
                        o.insert("capture".into(), cap.to_string().into());
                    }
                    j
                })
                .collect();
        }
        j
    }

    /// The statistics as a text table.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn write_text(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.write_text_with_tls(w, &self.tls, self.tls_past_cap)
    }

    /// [`Stats::write_text`] with `tls` for its TLS table in place of [`Stats::tls`],
    /// and `tls_past_cap` for [`Stats::tls_past_cap`]: the explorer counts its messages
    /// as they are scanned and learns the TLS connections from the capture's reading,
    /// apart.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn write_text_with_tls(
        &self,
        w: &mut dyn std::io::Write,
        tls: &[TlsRow],
        tls_past_cap: u64,
    ) -> std::io::Result<()> {
        writeln!(
            w,
            "latencies in ms from request to response; median and p99 are nearest-rank"
        )?;
        // The api column fits the longest name seen (StreamsGroupTopologyDescriptionUpdate, 37).
        let nw = self
            .apis
            .values()
            .map(|a| a.api_name.len())
            .max()
            .unwrap_or(0)
            .max(32);
        writeln!(
            w,
            "{:<nw$} {:>4} {:>6} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9}  errors",
            "api", "ver", "reqs", "resps", "bytes", "min ms", "median", "p99", "max"
        )?;
        for ((_, v), a) in &self.apis {
            let q = a.latencies.quantiles(&[0.0, 0.5, 0.99, 1.0]);
            let mark = if a.latencies.is_exact() { "" } else { "~" };
            let lat = |i: usize| match &q {
                None => "-".to_string(),
                Some(q) => format!("{mark}{:.3}", ms(q[i])),
            };
            let mut errs: Vec<String> = a.errors.iter().map(|(n, c)| format!("{n} x{c}")).collect();
            if a.malformed > 0 {
                errs.push(format!("malformed x{}", a.malformed));
            }
            writeln!(
                w,
                "{:<nw$} {:>4} {:>6} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9}  {}",
                a.api_name,
                v,
                a.requests,
                a.responses,
                a.bytes,
                lat(0),
                lat(1),
                lat(2),
                lat(3),
                errs.join(", ")
            )?;
        }
        writeln!(w)?;
        let ids: Vec<String> = self
            .connections
            .iter()
            .map(|((_, id), c)| conn_label(c.capture.as_deref(), *id))
            .collect();
        let col = conn_column(&ids);
        writeln!(
            w,
            "{}  {:<24} {:<24} {:>8}  client_id",
            col[0], "client", "server", "messages"
        )?;
        for (id, c) in col[1..].iter().zip(self.connections.values()) {
            writeln!(
                w,
                "{}  {:<24} {:<24} {:>8}  {}",
                id,
                c.client,
                c.server,
                c.messages,
                c.client_id.as_deref().unwrap_or("-")
            )?;
        }
        if !tls.is_empty() {
            writeln!(w)?;
            let ids: Vec<String> = tls
                .iter()
                .map(|t| conn_label(t.capture.as_deref(), t.summary.connection))
                .collect();
            let col = conn_column(&ids);
            // 40 columns, wider for the longest suites (TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256).
            let sw = tls
                .iter()
                .filter_map(|t| t.summary.cipher_suite.as_deref())
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
                .max(40);
            writeln!(
                w,
                "{}  {:<8} {:<sw$} {:<24} {:<9}  encrypted",
                col[0], "tls", "cipher_suite", "sni", "decrypted"
            )?;
            for (id, t) in col[1..].iter().zip(tls.iter().map(|t| &t.summary)) {
                writeln!(
                    w,
                    "{}  {:<8} {:<sw$} {:<24} {:<9}  {} records, {} bytes",
                    id,
                    t.version.unwrap_or("?"),
                    t.cipher_suite.as_deref().unwrap_or("?"),
                    t.sni.as_deref().unwrap_or("-"),
                    t.decrypted(),
                    t.encrypted_records,
                    t.encrypted_bytes
                )?;
            }
        }
        if self.sasl_tokens > 0 {
            writeln!(w, "\n{} raw SASL tokens", self.sasl_tokens)?;
        }
        if self.unpaired_responses > 0 {
            writeln!(
                w,
                "\n{} whose request is not in the capture (API unknown)",
                crate::text::count(self.unpaired_responses, "response", "responses")
            )?;
        }
        for f in self.folded_with(tls_past_cap) {
            writeln!(w, "\n{f}")?;
        }
        Ok(())
    }
}

/// `kwire stats`'s per-message work ([`crate::run::Work`]): each message's [`Item`],
/// gathered in capture order by [`Stats::add_item`].
pub struct Count;

impl crate::run::Work for Count {
    type Output = Item;
    fn message(
        &self,
        m: &Message<'_>,
        ctx: &Context,
        _: &mut dyn std::io::Write,
    ) -> std::io::Result<Item> {
        Ok(Item::of(m, ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let mut l = Latencies::default();
        for v in (1..=100).rev() {
            l.push(v);
        }
        assert_eq!(
            l.quantiles(&[0.5, 0.99, 1.0, 0.0]),
            Some(vec![50, 99, 100, 1])
        );
        l.sort();
        assert_eq!(l.quantile(0.9), Some(90));
        let mut one = Latencies::default();
        one.push(7);
        assert_eq!(one.quantile(0.99), Some(7));
        assert_eq!(Latencies::default().quantile(0.5), None);
    }

    #[test]
    fn histogram_bins_hold_their_values() {
        // The count LatencyHist's doc gives (30 KiB of u64).
        assert_eq!(HIST_BINS, 3_776);
        let mut probes: Vec<u64> = (0..300).collect();
        for p in 6..64 {
            let v = 1u64 << p;
            probes.extend([v - 1, v, v + 1, v + v / 3]);
        }
        probes.push(u64::MAX);
        for v in probes {
            let b = LatencyHist::bin(v);
            assert!(b < HIST_BINS, "{v}: bin {b}");
            let (lo, hi) = LatencyHist::bounds(b);
            assert!(lo <= v && v <= hi, "{v} not in bin {b} [{lo}, {hi}]");
            // A bin spans at most 1/64 of its lower bound.
            assert!((hi - lo) as f64 <= lo as f64 / 64.0, "{v}: [{lo}, {hi}]");
        }
    }

    #[test]
    fn histogram_quantiles_are_within_one_percent() {
        let mut exact = Latencies::default();
        // Latencies from 3 us to about 3 s, unevenly spread.
        for i in 1..=50_000u64 {
            exact.push(3_000 + i * i * 1_200 % 3_000_000_000);
        }
        let mut approx = exact.clone();
        approx.to_hist();
        assert!(!approx.is_exact() && exact.is_exact());
        let qs = [0.0, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0];
        let e = exact.quantiles(&qs).unwrap();
        let a = approx.quantiles(&qs).unwrap();
        for ((q, e), a) in qs.iter().zip(&e).zip(&a) {
            let err = (*a as f64 - *e as f64).abs() / *e as f64;
            assert!(err < 0.01, "q {q}: exact {e}, histogram {a}");
        }
        assert_eq!((a[0], a[6]), (e[0], e[6]), "min and max stay exact");
        // Merging keeps the count; an exact part goes into the histogram.
        let mut m = approx.clone();
        m.merge(&exact);
        assert_eq!(m.len(), 100_000);
        assert!(!m.is_exact());
    }

    fn item(api_key: i16, latency: u64) -> Item {
        Item {
            direction: Direction::Response,
            connection: 1,
            capture: None,
            src: String::new(),
            dst: String::new(),
            client_id: None,
            api_key,
            api_version: 0,
            api_name: "x".into(),
            sasl_token: false,
            guessed: false,
            size: 10,
            malformed: false,
            latency_ns: Some(latency),
            errors: Vec::new(),
        }
    }

    /// Past the budget of exact latencies, the API holding most of them turns into a
    /// histogram; the others stay exact, and the text says which are approximate.
    #[test]
    fn exact_latencies_are_bounded_over_all_apis() {
        let mut st = Stats::default();
        for i in 0..EXACT_LATENCIES_KEEP as u64 {
            st.add_item(item(1, 1_000 + i % 100_000));
        }
        for i in 0..1_000u64 {
            st.add_item(item(3, 5_000 + i));
        }
        assert!(
            st.exact_latencies <= EXACT_LATENCIES_KEEP,
            "{}",
            st.exact_latencies
        );
        let fetch = &st.apis[&(1, 0)].latencies;
        let meta = &st.apis[&(3, 0)].latencies;
        assert!(!fetch.is_exact() && meta.is_exact());
        assert_eq!(fetch.len(), EXACT_LATENCIES_KEEP as u64);
        assert_eq!(meta.quantile(0.5), Some(5_499));
        let p50 = fetch.quantile(0.5).unwrap() as f64;
        assert!((p50 / 50_999.0 - 1.0).abs() < 0.01, "{p50}");
        let mut text = Vec::new();
        st.write_text(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains(" ~0.0"), "{text}");
        assert!(text.contains("come from a histogram"), "{text}");
        assert_eq!(st.to_json()["apis"][0]["latency_ms"]["approximate"], true);
        assert!(st.to_json()["apis"][1]["latency_ms"]
            .get("approximate")
            .is_none());
    }

    /// (api_key, api_version) pairs and connections past their caps are counted, not
    /// itemised.
    #[test]
    fn pairs_and_connections_past_their_caps_are_counted() {
        let mut st = Stats::default();
        for k in 0..(APIS_KEEP as i16 + 10) {
            let mut it = item(k, 1);
            it.connection = k as u32;
            st.add_item(it);
        }
        assert_eq!(st.apis.len(), APIS_KEEP);
        assert_eq!(st.apis_past_cap, 10);
        assert_eq!(st.to_json()["apis_past_cap_messages"], 10);
        for c in 0..CONNECTIONS_KEEP as u32 + 5 {
            let mut it = item(1, 1);
            it.connection = c;
            st.add_item(it);
        }
        assert_eq!(st.connections.len(), CONNECTIONS_KEEP);
        assert_eq!(st.connections_past_cap, 5);
        assert_eq!(st.folded().len(), 2, "{:?}", st.folded());
        assert_eq!(
            bounded_name(&"é".repeat(300)).chars().count(),
            NAME_CHARS_KEEP + 1
        );
        assert_eq!(bounded_name("short"), "short");
    }
}
