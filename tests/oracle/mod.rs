//! Shared parts of the differential tests (`diff_tshark`, `diff_tshark_tls`, `diff_kio`):
//! the capture sets, kwire's decoded messages as owned summaries, the skip rules for
//! outside tools, and (`compare`) the field-by-field comparison with tshark.
#![allow(dead_code)]

use kwire::cli::read::SchemaPlausibility;
use kwire::decode::DecodeOptions;
use kwire::input::tls::KeyLog;
use kwire::input::{read_capture, CaptureOptions, Event, FrameKind};
use kwire::schema::Schema;
use kwire::session::Session;
use kwire::tree::{Buffers, Direction, Message, Node, NodeKind, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub mod compare;
pub mod tshark;

/// The ports the captures use.
pub const PORTS: [u16; 3] = [9092, 9093, 36333];

/// The repository's top folder.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `KWIRE_NO_SKIP=1` (CI) turns skips into failures.
pub fn no_skip() -> bool {
    std::env::var("KWIRE_NO_SKIP").as_deref() == Ok("1")
}

/// Prints that `test` skips because of `why`, or panics when `KWIRE_NO_SKIP=1`.
pub fn skip(test: &str, why: &str) {
    if no_skip() {
        panic!("{test}: {why}, and KWIRE_NO_SKIP=1 forbids skipping");
    }
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("{test}: skipped: {why}\n").as_bytes(),
    );
}

fn walk_dir(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd {
        let p = e.unwrap().path();
        if p.is_dir() {
            // The TLS lab (`captures/lab/tls/`) needs its key logs: `tests/diff_tshark_tls.rs`.
            if p.file_name().is_some_and(|n| n == "tls") {
                continue;
            }
            walk_dir(&p, out);
        } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
            out.push(p);
        }
    }
}

/// The port the TLS lab's broker (its TLS terminator) listens on.
pub const TLS_PORT: u16 = 9093;

/// How a TLS lab capture is decrypted: its key log, and the port that carries TLS.
#[derive(Clone, Debug)]
pub struct Tls {
    /// The NSS key log; `None` when the capture carries its keys (a pcapng Decryption
    /// Secrets Block).
    pub keys: Option<PathBuf>,
    pub port: u16,
}

impl Tls {
    /// A capture of the TLS lab (`captures/lab/tls/`): `X.keys` beside `X.pcapng`, no
    /// key log for `X.dsb.pcapng`; TLS on [`TLS_PORT`].
    pub fn of(capture: &Path) -> Tls {
        let dsb = capture
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(".dsb.pcapng"));
        Tls {
            keys: (!dsb).then(|| capture.with_extension("keys")),
            port: TLS_PORT,
        }
    }

    /// The key log, read: a malformed line fails the test.
    pub fn key_log(&self) -> KeyLog {
        let mut keys = KeyLog::new();
        if let Some(k) = &self.keys {
            let problems = keys.add_text(&std::fs::read(k).unwrap(), &k.display().to_string());
            assert!(problems.is_empty(), "{}: {problems:?}", k.display());
        }
        keys
    }

    /// tshark's options to decrypt the capture and hand its payload to the Kafka
    /// dissector: the key log, `-d tcp.port==PORT,tls` (tshark's heuristics took one lab
    /// connection for ADS/AMS) and `-d tls.port==PORT,kafka` (tshark 4.0 hands the
    /// decrypted payload to no dissector without it).
    pub fn tshark_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(k) = &self.keys {
            v.push("-o".into());
            v.push(format!("tls.keylog_file:{}", k.display()));
        }
        v.extend([
            "-d".into(),
            format!("tcp.port=={},tls", self.port),
            "-d".into(),
            format!("tls.port=={},kafka", self.port),
        ]);
        v
    }
}

/// A named set of captures.
pub struct CaptureSet {
    /// `corpus` (the repository's `captures/`), `public` or `lab` (`../shared/captures`),
    /// `tls` (the TLS lab, `captures/lab/tls/`).
    pub name: &'static str,
    /// The folder the names are relative to.
    pub root: PathBuf,
    /// The capture files, sorted.
    pub files: Vec<PathBuf>,
    /// The captures are the TLS lab's: decrypted with [`Tls::of`].
    pub tls: bool,
}

impl CaptureSet {
    fn new(name: &'static str, root: PathBuf) -> CaptureSet {
        let mut files = Vec::new();
        walk_dir(&root, &mut files);
        files.sort();
        CaptureSet {
            name,
            root,
            files,
            tls: false,
        }
    }

    /// The TLS lab: every `captures/lab/tls/*.pcapng`, decrypted with its keys.
    pub fn tls_lab() -> CaptureSet {
        let root = repo().join("captures/lab/tls");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
            .map(|rd| {
                rd.map(|e| e.unwrap().path())
                    .filter(|p| p.extension().is_some_and(|x| x == "pcapng"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        CaptureSet {
            name: "tls",
            root,
            files,
            tls: true,
        }
    }

    /// How a file of this set is decrypted, if it is TLS.
    pub fn tls_of(&self, f: &Path) -> Option<Tls> {
        self.tls.then(|| Tls::of(f))
    }

    /// A file's name relative to the set's folder.
    pub fn rel(&self, f: &Path) -> String {
        f.strip_prefix(&self.root)
            .unwrap_or(f)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

/// The committed corpus under `captures/` and, with `shared`, the public and lab captures.
pub fn capture_sets(shared: Option<&Path>) -> Vec<CaptureSet> {
    let mut v = vec![CaptureSet::new("corpus", repo().join("captures"))];
    if let Some(sh) = shared {
        v.push(CaptureSet::new("public", sh.join("captures/public")));
        v.push(CaptureSet::new("lab", sh.join("captures/lab")));
    }
    v
}

/// A value kwire decoded, owned.
#[derive(Clone, Debug, PartialEq)]
pub enum KVal {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Uuid(String),
}

impl KVal {
    fn from(v: &Value<'_>) -> Option<KVal> {
        Some(match v {
            Value::None | Value::Count(_) => return None,
            Value::Null => KVal::Null,
            Value::Bool(b) => KVal::Bool(*b),
            Value::Int(i) => KVal::Int(i128::from(*i)),
            Value::UInt(u) => KVal::Int(i128::from(*u)),
            Value::Float(f) => KVal::Float(*f),
            Value::Str(s) => KVal::Str(s.to_string()),
            Value::Bytes(b) => KVal::Bytes(b.to_vec()),
            Value::Uuid(u) => KVal::Uuid(u.to_string()),
        })
    }
}

/// One record (v2) or legacy message that holds data (not a compressed wrapper).
#[derive(Clone, Debug, PartialEq)]
pub struct KRecord {
    /// `None` for a null key.
    pub key: Option<Vec<u8>>,
    /// `None` for a null value.
    pub value: Option<Vec<u8>>,
    /// Inside a decompressed buffer.
    pub compressed: bool,
    /// Legacy message magic (0 or 1), `None` for a v2 record.
    pub legacy_magic: Option<i8>,
}

/// What the differential tests need of one decoded kwire message.
#[derive(Clone, Debug)]
pub struct KMsg {
    pub first_frame: u64,
    pub last_frame: u64,
    pub connection: u32,
    pub request: bool,
    pub sasl_token: bool,
    pub api_key: i16,
    pub api_name: Option<String>,
    pub api_version: i16,
    /// kwire guessed the API (a response whose request is not in the capture).
    pub guessed: bool,
    pub correlation_id: Option<i32>,
    /// The request header's client_id, when the header has one.
    pub client_id: Option<KVal>,
    /// Fields with a value in the frame (buffer 0), by offset: `(name, type, value)`.
    pub fields: HashMap<usize, Vec<(String, String, KVal)>>,
    /// Records and legacy messages, in tree order.
    pub records: Vec<KRecord>,
    /// Record batches (v2) and legacy wrapper-less message sets seen.
    pub batches: usize,
    pub errors: Vec<String>,
    /// Bytes after the body (kwire's "trailing bytes" warning).
    pub trailing: usize,
    /// `--format values` of the message.
    pub values: serde_json::Value,
    /// The frame, size prefix included.
    pub frame: Vec<u8>,
}

fn collect<'a>(m: &Message<'a>, k: &mut KMsg) {
    fn go(n: &Node<'_>, k: &mut KMsg, compressed: bool) {
        if n.buffer == 0 && n.kind == NodeKind::Field {
            if let Some(v) = KVal::from(&n.value) {
                k.fields.entry(n.offset).or_default().push((
                    n.name.to_string(),
                    n.ty.to_string(),
                    v,
                ));
            }
        }
        if n.name == "RecordBatch" {
            k.batches += 1;
        }
        let is_record = n.name.starts_with("Record[")
            || (n.name == "Message" && n.ty.starts_with("LegacyRecord"));
        let wrapper = n
            .children
            .iter()
            .any(|c| c.name.ends_with("(decompressed)"));
        if is_record && !wrapper {
            let field = |name: &str| {
                n.children
                    .iter()
                    .find(|c| c.name == name)
                    .and_then(|c| match &c.value {
                        Value::Bytes(b) => Some(Some(b.to_vec())),
                        Value::Null => Some(None),
                        _ => None,
                    })
            };
            let magic = n.children.iter().find(|c| c.name == "magic").and_then(|c| {
                if let Value::Int(i) = c.value {
                    Some(i as i8)
                } else {
                    None
                }
            });
            k.records.push(KRecord {
                key: field("key").flatten(),
                value: field("value").flatten(),
                compressed: compressed || n.buffer != 0,
                legacy_magic: magic,
            });
        }
        for c in &n.children {
            go(c, k, compressed || n.buffer != 0);
        }
    }
    go(&m.tree, k, false);
}

/// A decoded capture: kwire's messages and what reading it reported.
pub struct Decoded {
    pub msgs: Vec<KMsg>,
}

/// Reads and decodes one capture with kwire on [`PORTS`].
pub fn decode_capture(path: &Path) -> Decoded {
    decode_capture_tls(path, None)
}

/// Reads and decodes one capture with kwire: on [`PORTS`], or with `tls` on its TLS port,
/// decrypted with its keys.
pub fn decode_capture_tls(path: &Path, tls: Option<&Tls>) -> Decoded {
    let schema = Schema::embedded();
    let plaus = SchemaPlausibility(&schema);
    let dopts = DecodeOptions::default();
    let opts = match tls {
        None => CaptureOptions {
            ports: PORTS.to_vec(),
            ..CaptureOptions::default()
        },
        Some(t) => CaptureOptions {
            ports: vec![t.port],
            tls_keys: std::sync::Arc::new(t.key_log()),
            ..CaptureOptions::default()
        },
    };
    let mut session = Session::new(&schema, &dopts);
    let mut msgs = Vec::new();
    read_capture(std::fs::File::open(path).unwrap(), &opts, &plaus, |ev| {
        let Event::Frame(fr) = ev else { return };
        let arena = Buffers::new();
        let (m, ctx) = session.decode(&fr, &arena);
        let client_id = m
            .tree
            .children
            .iter()
            .find(|c| c.kind == NodeKind::Header)
            .and_then(|h| h.children.iter().find(|c| c.name == "client_id"))
            .and_then(|c| KVal::from(&c.value));
        let mut k = KMsg {
            first_frame: ctx.frames.0,
            last_frame: ctx.frames.1,
            connection: ctx.connection,
            request: m.direction == Direction::Request,
            sasl_token: fr.kind == FrameKind::SaslToken,
            // A guessed layout (a response whose request is not in the capture) counts
            // as unknown, as tshark has no API for it either.
            api_key: if m.guess.is_some() { -1 } else { m.api_key },
            api_name: m.api_name.map(str::to_string).filter(|_| m.guess.is_none()),
            api_version: if m.guess.is_some() { -1 } else { m.api_version },
            guessed: m.guess.is_some(),
            correlation_id: m.correlation_id,
            client_id,
            fields: HashMap::new(),
            records: Vec::new(),
            batches: 0,
            errors: m.errors().into_iter().map(|e| e.message).collect(),
            trailing: m
                .tree
                .children
                .iter()
                .filter(|c| c.name == "trailing bytes")
                .map(|c| c.length)
                .sum(),
            values: kwire::values::to_values(&m),
            frame: fr.bytes.clone(),
        };
        collect(&m, &mut k);
        msgs.push(k);
    })
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Decoded { msgs }
}

/// Skip and comparison counters, printed at the end of a differential test.
#[derive(Default)]
pub struct Tally {
    /// Reason -> count of messages skipped.
    pub skipped: BTreeMap<String, usize>,
    /// What -> count of values compared.
    pub compared: BTreeMap<String, usize>,
    pub mismatches: Vec<String>,
}

impl Tally {
    pub fn skip(&mut self, why: impl Into<String>) {
        *self.skipped.entry(why.into()).or_default() += 1;
    }
    pub fn count(&mut self, what: &str) {
        *self.compared.entry(what.to_string()).or_default() += 1;
    }
    pub fn merge(&mut self, o: &Tally) {
        for (k, v) in &o.skipped {
            *self.skipped.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.compared {
            *self.compared.entry(k.clone()).or_default() += v;
        }
        self.mismatches.extend(o.mismatches.iter().cloned());
    }
    pub fn print(&self, test: &str) {
        eprintln!("{test}: compared:");
        for (k, v) in &self.compared {
            eprintln!("  {v:6}  {k}");
        }
        eprintln!("{test}: skipped:");
        for (k, v) in &self.skipped {
            eprintln!("  {v:6}  {k}");
        }
    }
}

/// The heading of the section of `docs/coverage.md` that `tests/wireshark_lua.rs` keeps,
/// after the one `tests/diff_tshark.rs` keeps.
pub const LUA_SECTION: &str = "\n## kwire_kafka.lua in tshark\n";

/// `docs/coverage.md` split into tshark's part and the plugin's section.
pub fn coverage_split(text: &str) -> (&str, &str) {
    match text.find(LUA_SECTION) {
        Some(i) => text.split_at(i),
        None => (text, ""),
    }
}

/// Lowercase hex.
pub fn hex(b: &[u8]) -> String {
    kwire::text::hex(b)
}
