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

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
/// no secret. With [`KeyLog::follow`], files still being written (a running client's
/// SSLKEYLOGFILE, during a live capture) are read again when a connection needs a key the
/// log lacks; clones share those files.
#[derive(Clone, Default)]
pub struct KeyLog {
    by_random: HashMap<[u8; 32], Secrets>,
    followed: Option<Arc<Mutex<Followed>>>,
}

impl PartialEq for KeyLog {
    /// The same secrets (the followed files aside).
    fn eq(&self, other: &KeyLog) -> bool {
        self.by_random == other.by_random
    }
}

impl Eq for KeyLog {}

/// Key log files read again as they grow ([`KeyLog::follow`]).
#[derive(Default)]
struct Followed {
    /// Each file and the offset after the last whole line read from it.
    files: Vec<(PathBuf, u64)>,
    /// What was read from them after the first read.
    keys: HashMap<[u8; 32], Secrets>,
    /// Lines read again that could not be used (counted; the first read reports its own).
    problems: u64,
}

/// How long [`KeyLog::lookup`] waits, at most, for a key to appear in a followed file: a
/// client writes it as it derives it, as the ServerHello reaches it, which kwire may see
/// first.
const FOLLOW_WAIT: Duration = Duration::from_millis(200);

/// Largest growth of a followed file read at once (key log lines are ~200 bytes).
const FOLLOW_MAX_READ: u64 = 16 << 20;

impl Followed {
    /// Reads what the files gained since the last read (whole lines only); true when
    /// something was added.
    fn refresh(&mut self) -> bool {
        let mut added = false;
        let mut log = KeyLog::new();
        for (path, offset) in &mut self.files {
            let Ok(mut f) = std::fs::File::open(&*path) else {
                continue;
            };
            let len = f.metadata().map_or(0, |m| m.len());
            if len < *offset {
                // Truncated or replaced: read from the start again.
                *offset = 0;
            }
            if len == *offset || f.seek(SeekFrom::Start(*offset)).is_err() {
                continue;
            }
            let mut text = Vec::new();
            if (&mut f)
                .take(FOLLOW_MAX_READ)
                .read_to_end(&mut text)
                .is_err()
            {
                continue;
            }
            let Some(end) = text.iter().rposition(|&b| b == b'\n') else {
                continue;
            };
            let name = path.display().to_string();
            self.problems += log.add_text(&text[..=end], &name).len() as u64;
            *offset += end as u64 + 1;
            added = true;
        }
        if added {
            let mut mine = KeyLog {
                by_random: std::mem::take(&mut self.keys),
                followed: None,
            };
            mine.merge(&log);
            self.keys = mine.by_random;
        }
        added
    }
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

    /// True when no secret is known and no file is followed.
    pub fn is_empty(&self) -> bool {
        self.by_random.is_empty() && self.followed.is_none()
    }

    /// The secrets for a ClientHello random, if logged (in what was added; the followed
    /// files are not read: see [`KeyLog::lookup`]).
    pub fn get(&self, client_random: &[u8]) -> Option<&Secrets> {
        let r: [u8; 32] = client_random.try_into().ok()?;
        self.by_random.get(&r)
    }

    /// The secrets for a ClientHello random: as [`KeyLog::get`], then, when files are
    /// followed and the key is not known, in what those files gained since they were last
    /// read, waiting up to 200 ms for it to be written.
    pub fn lookup(&self, client_random: &[u8]) -> Option<Cow<'_, Secrets>> {
        if let Some(s) = self.get(client_random) {
            return Some(Cow::Borrowed(s));
        }
        let r: [u8; 32] = client_random.try_into().ok()?;
        let followed = self.followed.as_ref()?;
        let mut f = followed.lock().ok()?;
        let start = Instant::now();
        loop {
            if let Some(s) = f.keys.get(&r) {
                return Some(Cow::Owned(s.clone()));
            }
            if !f.refresh() {
                if start.elapsed() >= FOLLOW_WAIT {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Follows `path`, read up to `offset` bytes already (the end of its last whole line):
    /// [`KeyLog::lookup`] reads what it gains. The file need not exist yet.
    pub fn follow(&mut self, path: PathBuf, offset: u64) {
        let f = self.followed.get_or_insert_with(Arc::default);
        if let Ok(mut f) = f.lock() {
            f.files.push((path, offset));
        }
    }

    /// Lines of the followed files, read after the first read, that could not be used.
    pub fn followed_problems(&self) -> u64 {
        self.followed
            .as_ref()
            .and_then(|f| f.lock().ok().map(|f| f.problems))
            .unwrap_or(0)
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
    fn followed_files_are_read_again_when_a_key_is_missing() {
        let dir = std::env::temp_dir().join(format!("kwire-follow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.log");
        let (r1, r2) = ("01".repeat(32), "02".repeat(32));
        let first = format!("CLIENT_RANDOM {r1} {}\n", "33".repeat(48));
        std::fs::write(&path, &first).unwrap();
        let mut k = KeyLog::new();
        k.add_text(first.as_bytes(), "keys.log");
        k.follow(path.clone(), first.len() as u64);
        let clone = k.clone();
        assert!(k.lookup(&[1; 32]).is_some());
        // Not there yet: a short wait, then none.
        let t = Instant::now();
        assert!(k.lookup(&[2; 32]).is_none());
        assert!(t.elapsed() >= FOLLOW_WAIT);
        // Written, and half a line more: the whole line is read, the half kept for later.
        let second = format!(
            "CLIENT_RANDOM {r2} {}\nCLIENT_RANDOM {}",
            "44".repeat(48),
            "05".repeat(10)
        );
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, second.as_bytes()).unwrap();
        let s = clone.lookup(&[2; 32]).expect("read again");
        assert_eq!(s.master.as_deref(), Some(&[0x44; 48][..]));
        let r5 = "05".repeat(32);
        std::io::Write::write_all(
            &mut f,
            format!("{} {}\n", &r5[20..], "55".repeat(48)).as_bytes(),
        )
        .unwrap();
        assert!(k.lookup(&[5; 32]).is_some(), "the line finished later");
        assert_eq!(k.followed_problems(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
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
