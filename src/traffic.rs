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
    /// Latencies of paired responses, in nanoseconds.
    pub latencies: Vec<u64>,
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
    /// TLS connections: version, suite, SNI, how much was decrypted (by connection id).
    pub tls: Vec<crate::input::tls::TlsSummary>,
}

/// The `q`-quantile (0..=1) of sorted values, nearest rank.
fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
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
                Some(Value::Str(s)) => Some(s.to_string()),
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
    pub fn add_tls(&mut self, tls: Vec<crate::input::tls::TlsSummary>) {
        self.tls.extend(tls);
        self.tls.sort_by_key(|t| t.connection);
    }

    /// Adds one decoded message with its capture context.
    pub fn add(&mut self, m: &Message<'_>, ctx: &Context) {
        self.add_item(Item::of(m, ctx));
    }

    /// Adds what [`Item::of`] took from one message (items added in capture order give
    /// the statistics [`Stats::add`] gives).
    pub fn add_item(&mut self, it: Item) {
        let conn = self
            .connections
            .entry((self.capture, it.connection))
            .or_default();
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
        let a = self.apis.entry((it.api_key, it.api_version)).or_default();
        a.api_name = it.api_name;
        a.bytes += it.size;
        if it.malformed {
            a.malformed += 1;
        }
        match it.direction {
            Direction::Request => a.requests += 1,
            Direction::Response => {
                a.responses += 1;
                if let Some(l) = it.latency_ns {
                    a.latencies.push(l);
                }
                for e in it.errors {
                    *a.errors.entry(e).or_default() += 1;
                }
            }
        }
    }

    /// The statistics as JSON: `{"apis":[...],"connections":[...]}` with latencies in
    /// milliseconds.
    pub fn to_json(&self) -> serde_json::Value {
        let apis: Vec<_> = self
            .apis
            .iter()
            .map(|((k, v), a)| {
                let mut l = a.latencies.clone();
                l.sort_unstable();
                json!({
                    "api_key": k, "api_name": a.api_name, "api_version": v,
                    "requests": a.requests, "responses": a.responses, "bytes": a.bytes,
                    "malformed": a.malformed, "errors": a.errors,
                    "latency_ms": if l.is_empty() { serde_json::Value::Null } else { json!({
                        "count": l.len(),
                        "min": ms(l[0]), "median": ms(quantile(&l, 0.5)),
                        "p99": ms(quantile(&l, 0.99)), "max": ms(l[l.len() - 1]),
                    })},
                })
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
        if !self.tls.is_empty() {
            j["tls"] = self
                .tls
                .iter()
                .map(|t| {
                    json!({
                        "connection": t.connection, "version": t.version,
                        "cipher_suite": t.cipher_suite, "sni": t.sni, "alpn": t.alpn,
                        "decrypted": t.decrypted(), "decrypted_records": t.decrypted_records,
                        "encrypted_records": t.encrypted_records,
                        "encrypted_bytes": t.encrypted_bytes,
                    })
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
            let mut l = a.latencies.clone();
            l.sort_unstable();
            let lat = |q: f64| {
                if l.is_empty() {
                    "-".to_string()
                } else {
                    format!("{:.3}", ms(quantile(&l, q)))
                }
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
                lat(0.0),
                lat(0.5),
                lat(0.99),
                lat(1.0),
                errs.join(", ")
            )?;
        }
        writeln!(w)?;
        writeln!(
            w,
            "{:>4}  {:<24} {:<24} {:>8}  client_id",
            "conn", "client", "server", "messages"
        )?;
        for ((_, id), c) in &self.connections {
            // With several captures, connection numbers restart in each: name the capture.
            let id = match &c.capture {
                Some(cap) => format!("{cap}#{id}"),
                None => id.to_string(),
            };
            writeln!(
                w,
                "{:>4}  {:<24} {:<24} {:>8}  {}",
                id,
                c.client,
                c.server,
                c.messages,
                c.client_id.as_deref().unwrap_or("-")
            )?;
        }
        if !self.tls.is_empty() {
            writeln!(w)?;
            writeln!(
                w,
                "{:>4}  {:<8} {:<40} {:<24} {:<9}  encrypted",
                "conn", "tls", "cipher_suite", "sni", "decrypted"
            )?;
            for t in &self.tls {
                writeln!(
                    w,
                    "{:>4}  {:<8} {:<40} {:<24} {:<9}  {} records, {} bytes",
                    t.connection,
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
                "\n{} responses whose request is not in the capture (API unknown)",
                self.unpaired_responses
            )?;
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
    use super::quantile;

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), 50);
        assert_eq!(quantile(&v, 0.99), 99);
        assert_eq!(quantile(&v, 1.0), 100);
        assert_eq!(quantile(&v, 0.0), 1);
        assert_eq!(quantile(&[7], 0.99), 7);
    }
}
