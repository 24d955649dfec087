//! NSS key log files (the format browsers, curl, Python's `ssl` `keylog_filename`, Node's
//! `--tls-keylog` and `openssl s_client -keylogfile` write, and what `editcap
//! --inject-secrets tls,FILE` stores in a pcapng Decryption Secrets Block).
//!
//! Each line is `LABEL <client_random hex> <secret hex>`: `CLIENT_RANDOM` carries a TLS 1.2
//! master secret (48 bytes); `CLIENT_HANDSHAKE_TRAFFIC_SECRET`,
//! `SERVER_HANDSHAKE_TRAFFIC_SECRET`, `CLIENT_TRAFFIC_SECRET_0` and
//! `SERVER_TRAFFIC_SECRET_0` carry TLS 1.3 traffic secrets (32 or 48 bytes, the suite's hash
//! length, RFC 8446 section 7.1), and `CLIENT_EARLY_TRAFFIC_SECRET` the secret of TLS 1.3
//! 0-RTT early data. Comments (`#`), blank lines, duplicates and the other
//! labels the format knows (`EXPORTER_SECRET`, `EARLY_EXPORTER_SECRET`, `RSA`,
//! OpenSSL's `CLIENT_TRAFFIC_SECRET_N` after a KeyUpdate, ...)
//! are accepted; anything else is a [`KeyLogProblem`] naming its line, and the rest of the
//! file is still used.

use std::collections::HashMap;
use std::fmt;

/// The secrets logged for one TLS connection, found by its ClientHello random.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// TLS 1.2 master secret (`CLIENT_RANDOM`), 48 bytes.
    pub master: Option<Vec<u8>>,
    /// TLS 1.3 `CLIENT_HANDSHAKE_TRAFFIC_SECRET`.
    pub client_handshake: Option<Vec<u8>>,
    /// TLS 1.3 `SERVER_HANDSHAKE_TRAFFIC_SECRET`.
    pub server_handshake: Option<Vec<u8>>,
    /// TLS 1.3 `CLIENT_TRAFFIC_SECRET_0`.
    pub client_traffic: Option<Vec<u8>>,
    /// TLS 1.3 `SERVER_TRAFFIC_SECRET_0`.
    pub server_traffic: Option<Vec<u8>>,
    /// TLS 1.3 `CLIENT_EARLY_TRAFFIC_SECRET`: the keys of the client's 0-RTT early data.
    pub client_early: Option<Vec<u8>>,
}

impl fmt::Debug for Secrets {
    /// Says which secrets are present, never their bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secrets")
            .field("master", &self.master.is_some())
            .field("client_handshake", &self.client_handshake.is_some())
            .field("server_handshake", &self.server_handshake.is_some())
            .field("client_traffic", &self.client_traffic.is_some())
            .field("server_traffic", &self.server_traffic.is_some())
            .field("client_early", &self.client_early.is_some())
            .finish()
    }
}

/// A line of a key log that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLogProblem {
    /// Where the text came from: a file name, `SSLKEYLOGFILE`, or `pcapng Decryption
    /// Secrets Block N`.
    pub source: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it (never the secret itself).
    pub message: String,
}

impl fmt::Display for KeyLogProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.source, self.line, self.message)
    }
}

/// Secrets by ClientHello random (32 bytes). Its `Debug` output counts entries and shows
/// no secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct KeyLog {
    by_random: HashMap<[u8; 32], Secrets>,
}

impl fmt::Debug for KeyLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyLog({} connections)", self.by_random.len())
    }
}

/// Labels of the NSS key log format that kwire reads no secret from but accepts.
const OTHER_LABELS: &[&str] = &[
    "EARLY_EXPORTER_SECRET",
    "EXPORTER_SECRET",
    "RSA",
    "ECH_SECRET",
    "ECH_CONFIG",
    // OpenSSL logs each KeyUpdate's secret; kwire derives them (RFC 8446 section 7.2).
    "CLIENT_TRAFFIC_SECRET_N",
    "SERVER_TRAFFIC_SECRET_N",
];

/// Longest secret accepted, in bytes (SHA-512 output; TLS uses at most 48).
const MAX_SECRET: usize = 64;

use crate::text::unhex;

impl KeyLog {
    /// An empty key log.
    pub fn new() -> KeyLog {
        KeyLog::default()
    }

    /// Number of connections (client randoms) with at least one secret.
    pub fn len(&self) -> usize {
        self.by_random.len()
    }

    /// True when no secret is known.
    pub fn is_empty(&self) -> bool {
        self.by_random.is_empty()
    }

    /// The secrets for a ClientHello random, if logged.
    pub fn get(&self, client_random: &[u8]) -> Option<&Secrets> {
        let r: [u8; 32] = client_random.try_into().ok()?;
        self.by_random.get(&r)
    }

    /// Adds every usable line of `text` (NSS key log format, LF or CRLF line ends) and
    /// returns the lines that could not be used, each with its 1-based number. `source`
    /// names the text in those problems. A text that is not UTF-8 is read line by line
    /// all the same: only the lines that are not ASCII fail.
    pub fn add_text(&mut self, text: &[u8], source: &str) -> Vec<KeyLogProblem> {
        let mut problems = Vec::new();
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let line_no = i + 1;
            let problem = |m: &str| KeyLogProblem {
                source: source.to_string(),
                line: line_no,
                message: m.to_string(),
            };
            let Ok(line) = std::str::from_utf8(raw) else {
                problems.push(problem("not text (bytes that are not UTF-8)"));
                continue;
            };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let parts: Vec<&str> = line.split_ascii_whitespace().collect();
            let label = parts[0];
            if OTHER_LABELS.contains(&label) {
                continue;
            }
            let slot: fn(&mut Secrets) -> &mut Option<Vec<u8>> = match label {
                "CLIENT_RANDOM" => |s| &mut s.master,
                "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => |s| &mut s.client_handshake,
                "SERVER_HANDSHAKE_TRAFFIC_SECRET" => |s| &mut s.server_handshake,
                "CLIENT_TRAFFIC_SECRET_0" => |s| &mut s.client_traffic,
                "SERVER_TRAFFIC_SECRET_0" => |s| &mut s.server_traffic,
                "CLIENT_EARLY_TRAFFIC_SECRET" => |s| &mut s.client_early,
                _ => {
                    let shown: String = label.chars().take(40).collect();
                    problems.push(problem(&format!(
                        "unknown label {shown:?} (not an NSS key log line)"
                    )));
                    continue;
                }
            };
            if parts.len() != 3 {
                problems.push(problem(&format!(
                    "{label} needs a client random and a secret ({} fields)",
                    parts.len()
                )));
                continue;
            }
            let Some(random) = unhex(parts[1]).and_then(|r| <[u8; 32]>::try_from(r).ok()) else {
                problems.push(problem(&format!(
                    "{label}: the client random is not 64 hex digits"
                )));
                continue;
            };
            let secret = match unhex(parts[2]) {
                Some(s) if !s.is_empty() && s.len() <= MAX_SECRET => s,
                _ => {
                    problems.push(problem(&format!(
                        "{label}: the secret is not 2 to {} hex digits",
                        MAX_SECRET * 2
                    )));
                    continue;
                }
            };
            if label == "CLIENT_RANDOM" && secret.len() != 48 {
                problems.push(problem(&format!(
                    "CLIENT_RANDOM: a master secret is 48 bytes, this one {}",
                    secret.len()
                )));
                continue;
            }
            *slot(self.by_random.entry(random).or_default()) = Some(secret);
        }
        problems
    }

    /// Adds the entries of `other` (later ones win).
    pub fn merge(&mut self, other: &KeyLog) {
        for (r, s) in &other.by_random {
            let e = self.by_random.entry(*r).or_default();
            for (dst, src) in [
                (&mut e.master, &s.master),
                (&mut e.client_handshake, &s.client_handshake),
                (&mut e.server_handshake, &s.server_handshake),
                (&mut e.client_traffic, &s.client_traffic),
                (&mut e.server_traffic, &s.server_traffic),
                (&mut e.client_early, &s.client_early),
            ] {
                if src.is_some() {
                    dst.clone_from(src);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_comments_and_problems() {
        let r = "ab".repeat(32);
        let text = format!(
            "# a comment\n\nCLIENT_RANDOM {r} {}\r\nSERVER_TRAFFIC_SECRET_0 {r} {}\nEXPORTER_SECRET {r} 00\nGARBAGE x y\nCLIENT_RANDOM {r}\nCLIENT_RANDOM zz {}\nCLIENT_RANDOM {r} 0102\n",
            "11".repeat(48),
            "22".repeat(32),
            "11".repeat(48),
        );
        let mut k = KeyLog::new();
        let p = k.add_text(text.as_bytes(), "keys.txt");
        let lines: Vec<usize> = p.iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![6, 7, 8, 9], "{p:?}");
        assert!(p[0].to_string().starts_with("keys.txt:6: unknown label"));
        let s = k.get(&[0xab; 32]).expect("entry");
        assert_eq!(s.master.as_deref(), Some(&[0x11; 48][..]));
        assert_eq!(s.server_traffic.as_deref(), Some(&[0x22; 32][..]));
        assert!(s.client_traffic.is_none());
        assert_eq!(k.len(), 1);
        // no secret in any Debug or problem text
        let dbg = format!("{k:?} {s:?} {p:?}");
        assert!(!dbg.contains("1111") && !dbg.contains("2222"), "{dbg}");
    }

    #[test]
    fn merge_keeps_both() {
        let r = "01".repeat(32);
        let mut a = KeyLog::new();
        a.add_text(
            format!("CLIENT_RANDOM {r} {}", "33".repeat(48)).as_bytes(),
            "a",
        );
        let mut b = KeyLog::new();
        b.add_text(
            format!("CLIENT_TRAFFIC_SECRET_0 {r} {}", "44".repeat(48)).as_bytes(),
            "b",
        );
        a.merge(&b);
        let s = a.get(&[1; 32]).unwrap();
        assert!(s.master.is_some() && s.client_traffic.is_some());
    }
}
