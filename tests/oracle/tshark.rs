//! tshark as an oracle: running it on a capture, reading its Kafka PDUs out of `-T json
//! -x`, and what each tshark version is known to get wrong.

use serde_json::Value as J;
use std::path::Path;
use std::process::Command;

/// `tshark --version`'s first line (`TShark (Wireshark) 4.0.17 (...)`), or `None` when
/// tshark is not installed.
pub fn version() -> Option<String> {
    let out = Command::new("tshark").arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8_lossy(&out.stdout);
    Some(s.lines().next().unwrap_or("").trim().to_string())
}

/// `4.0.17` out of the version line.
pub fn version_number(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .unwrap_or("")
        .to_string()
}

/// What one tshark release series decodes of Kafka, and what it gets wrong.
pub struct Limits {
    /// Release prefix (`4.0.`).
    pub series: &'static str,
    /// API keys tshark knows: `0..=last_key`.
    pub last_key: i16,
    /// Highest version tshark decodes, per key (keys not listed: every version seen in the
    /// captures decodes). From its own "Unsupported X version. Supports v0-N" notes.
    pub max_version: &'static [(i16, i16)],
    /// Messages tshark decodes wrongly although it raises nothing or only a warning:
    /// `(api_key, first version, last version, reason)`.
    pub wrong: &'static [(i16, i16, i16, &'static str)],
    /// Record data tshark decodes wrongly: legacy messages of this magic.
    pub wrong_legacy_magic: &'static [(i8, &'static str)],
}

/// The known tshark series. The newest first; a version not listed uses the last entry
/// (the oldest known), and the test says so.
pub const KNOWN: &[Limits] = &[Limits {
    series: "4.0.",
    last_key: 47,
    max_version: &[
        (0, 8),  // Produce
        (1, 11), // Fetch
        (2, 5),  // ListOffsets ("Offsets")
        (3, 9),  // Metadata
        (4, 4),  // LeaderAndIsr
        (5, 2),  // StopReplica
        (6, 6),  // UpdateMetadata
        (7, 3),  // ControlledShutdown
        (8, 8),  // OffsetCommit
        (9, 7),  // OffsetFetch
        (10, 3), // FindCoordinator
        (11, 7), // JoinGroup
        (13, 4), // LeaveGroup
        (16, 3), // ListGroups
        (18, 3), // ApiVersions
        (19, 5), // CreateTopics
        (20, 4), // DeleteTopics
        (21, 1), // DeleteRecords
        (22, 3), // InitProducerId
        (23, 3), // OffsetForLeaderEpoch
        (24, 1), // AddPartitionsToTxn
        (25, 1), // AddOffsetsToTxn
        (26, 1), // EndTxn
        (28, 3), // TxnOffsetCommit
        (29, 2), // DescribeAcls
        (30, 2), // CreateAcls
        (32, 2), // DescribeConfigs
        (33, 1), // AlterConfigs
        (34, 1), // AlterReplicaLogDirs
        (35, 1), // DescribeLogDirs
        (37, 2), // CreatePartitions
    ],
    wrong: &[
        (
            11,
            5,
            5,
            "tshark 4.0: JoinGroup v5 protocol metadata (pre-flexible bytes) shown missing",
        ),
        (
            14,
            3,
            3,
            "tshark 4.0: SyncGroup v3 assignment (pre-flexible bytes) shown missing",
        ),
    ],
    wrong_legacy_magic: &[(
        1,
        "tshark 4.0: magic-1 message timestamp read one byte late",
    )],
}];

/// The limits for a version line, and whether they were chosen for that series exactly.
pub fn limits(version_line: &str) -> (&'static Limits, bool) {
    let v = version_number(version_line);
    match KNOWN.iter().find(|l| v.starts_with(l.series)) {
        Some(l) => (l, true),
        None => (KNOWN.last().unwrap(), false),
    }
}

impl Limits {
    /// Why tshark's decoding of this message is not to be trusted, from the table alone.
    pub fn unsupported(&self, api_key: i16, api_version: i16) -> Option<String> {
        if api_key < 0 || api_key > self.last_key {
            return Some(format!(
                "tshark {}x: unknown api_key (knows 0-{})",
                self.series, self.last_key
            ));
        }
        if let Some((_, max)) = self.max_version.iter().find(|(k, _)| *k == api_key) {
            if api_version > *max {
                return Some(format!(
                    "tshark {}x: unsupported version (key {api_key} to v{max})",
                    self.series
                ));
            }
        }
        self.wrong
            .iter()
            .find(|(k, lo, hi, _)| *k == api_key && (*lo..=*hi).contains(&api_version))
            .map(|(_, _, _, why)| why.to_string())
    }
}

/// One field tshark shows: its filter name, display value and, from `-x`, its raw bytes
/// and position in its data source.
#[derive(Clone, Debug)]
pub struct TField {
    pub name: String,
    pub display: String,
    pub raw: Option<(String, i64, i64)>,
}

/// One record or legacy message tshark shows (an object holding a key or value).
#[derive(Clone, Debug, Default)]
pub struct TRecord {
    pub key: Option<TField>,
    pub value: Option<TField>,
    pub magic: Option<i64>,
    /// Holds other records (a compressed legacy wrapper).
    pub wrapper: bool,
}

/// One Kafka PDU as tshark shows it.
#[derive(Clone, Debug, Default)]
pub struct TPdu {
    /// The frame tshark shows it in (the one that completed it).
    pub frame: u64,
    /// `Some(true)` request, `Some(false)` response, `None` a response tshark could not
    /// pair with its request ("Request missing").
    pub request: Option<bool>,
    pub api_key: Option<i64>,
    pub api_version: Option<i64>,
    pub correlation_id: Option<i64>,
    pub client_id: Option<String>,
    /// Position of `kafka.len` in the PDU's data source: the PDU's first byte.
    pub base: Option<i64>,
    /// Every `kafka.*` field, in document order.
    pub fields: Vec<TField>,
    pub records: Vec<TRecord>,
    /// Expert notes (the `kafka.*` name of each), and whether a Malformed mark is in the PDU.
    pub experts: Vec<String>,
    pub malformed: bool,
    /// The packet holds a Malformed mark outside any PDU and several PDUs.
    pub packet_malformed: bool,
    /// The frame that completed the PDU was cut by the capture's snap length
    /// (`frame.cap_len` < `frame.len`): tshark decodes what was captured.
    pub cut: bool,
    /// tshark could not decompress a message set of the PDU (it shows
    /// `kafka.truncated_content` instead of its records).
    pub undecompressed: bool,
}

impl TPdu {
    fn first(&self, name: &str) -> Option<&TField> {
        self.fields.iter().find(|f| f.name == name)
    }
    fn int(&self, name: &str) -> Option<i64> {
        self.first(name).and_then(|f| f.display.parse().ok())
    }
}

/// Runs tshark on `path` (Kafka on [`super::PORTS`]) and returns its Kafka PDUs.
pub fn pdus(path: &Path) -> Vec<TPdu> {
    pdus_tls(path, None)
}

/// [`pdus`], or with `tls` the Kafka PDUs tshark finds in the capture's decrypted TLS
/// (their positions are in the decrypted data source).
pub fn pdus_tls(path: &Path, tls: Option<&super::Tls>) -> Vec<TPdu> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(path).arg("-n");
    match tls {
        None => {
            for p in super::PORTS {
                cmd.arg("-d").arg(format!("tcp.port=={p},kafka"));
            }
        }
        Some(t) => {
            cmd.args(t.tshark_args());
        }
    }
    cmd.args([
        "-T",
        "json",
        "-x",
        "--no-duplicate-keys",
        "-J",
        "frame kafka _ws",
    ]);
    let out = cmd.output().expect("running tshark");
    assert!(
        out.status.success(),
        "tshark on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let packets: J = serde_json::from_slice(&out.stdout).expect("tshark's JSON");
    let mut v = Vec::new();
    for p in packets.as_array().unwrap() {
        let layers = &p["_source"]["layers"];
        let frame: u64 = layers["frame"]["frame.number"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap();
        let packet_malformed = layers.get("_ws.malformed").is_some();
        let frame_len = |k: &str| -> Option<u64> { layers["frame"][k].as_str()?.parse().ok() };
        let cut = matches!(
            (frame_len("frame.cap_len"), frame_len("frame.len")),
            (Some(c), Some(l)) if c < l
        );
        let kafkas: Vec<&J> = match layers.get("kafka") {
            None => continue,
            Some(J::Array(a)) => a.iter().collect(),
            Some(o) => vec![o],
        };
        let n = kafkas.len();
        for k in kafkas {
            let mut pdu = TPdu {
                frame,
                cut,
                ..TPdu::default()
            };
            // A Malformed mark outside the PDUs: tshark stopped inside one of them; with
            // one PDU it is that one.
            if packet_malformed {
                if n == 1 {
                    pdu.malformed = true;
                } else {
                    pdu.packet_malformed = true;
                }
            }
            let mut rec_stack = Vec::new();
            walk(k, &mut pdu, &mut rec_stack, 0);
            pdu.request = if pdu.first("kafka.request_key").is_some() {
                Some(true)
            } else if pdu.first("kafka.response_key").is_some() {
                Some(false)
            } else {
                None
            };
            pdu.api_key = pdu.int("kafka.api_key");
            pdu.api_version = pdu
                .int("kafka.request.version")
                .or_else(|| pdu.int("kafka.response.version"));
            pdu.correlation_id = pdu.int("kafka.correlation_id");
            pdu.client_id = pdu.first("kafka.client_id").map(|f| f.display.clone());
            pdu.base = pdu
                .first("kafka.len")
                .and_then(|f| f.raw.as_ref())
                .map(|r| r.1);
            v.push(pdu);
        }
    }
    v
}

fn raw_of(r: &J) -> Option<(String, i64, i64)> {
    let a = r.as_array()?;
    Some((
        a.first()?.as_str()?.to_string(),
        a.get(1)?.as_i64()?,
        a.get(2)?.as_i64()?,
    ))
}

/// `depth` is 0 for the PDU's own level (and the subtrees of its top-level fields).
fn walk(o: &J, pdu: &mut TPdu, recs: &mut Vec<usize>, depth: usize) {
    match o {
        J::Array(a) => {
            for x in a {
                walk(x, pdu, recs, depth);
            }
        }
        J::Object(m) => {
            let is_record = m.contains_key("kafka.message_key")
                || m.contains_key("kafka.message_value")
                || m.contains_key("kafka.message_key_raw")
                || m.contains_key("kafka.message_value_raw");
            if is_record {
                if let Some(&parent) = recs.last() {
                    pdu.records[parent].wrapper = true;
                }
                pdu.records.push(TRecord::default());
                recs.push(pdu.records.len() - 1);
            }
            for (key, val) in m {
                if key == "_ws.expert" {
                    let exps: Vec<&J> = match val {
                        J::Array(a) => a.iter().collect(),
                        o => vec![o],
                    };
                    for e in exps {
                        if let Some(obj) = e.as_object() {
                            for k in obj.keys().filter(|k| !k.starts_with("_ws.")) {
                                // Notes on the entries of an ApiVersions response (an API
                                // or version tshark does not know) are not about this PDU.
                                let about_entry = depth > 0
                                    && (k == "kafka.unsupported_api_version"
                                        || k == "kafka.unknown_api_key");
                                if !about_entry {
                                    pdu.experts.push(k.clone());
                                }
                            }
                            if obj.contains_key("_ws.malformed") {
                                pdu.malformed = true;
                            }
                        }
                    }
                    continue;
                }
                if key.starts_with("_ws.malformed") {
                    pdu.malformed = true;
                    continue;
                }
                if key == "kafka.truncated_content" {
                    pdu.undecompressed = true;
                }
                if key.ends_with("_raw") {
                    continue;
                }
                if key.starts_with("kafka.") && !key.ends_with("_tree") {
                    let raws: Vec<Option<(String, i64, i64)>> = match m.get(&format!("{key}_raw")) {
                        Some(J::Array(a)) if a.first().is_some_and(|x| x.is_array()) => {
                            a.iter().map(raw_of).collect()
                        }
                        Some(r) => vec![raw_of(r)],
                        None => Vec::new(),
                    };
                    let displays: Vec<String> = match val {
                        J::Array(a) => a
                            .iter()
                            .map(|x| x.as_str().unwrap_or("").to_string())
                            .collect(),
                        J::String(s) => vec![s.clone()],
                        _ => vec![String::new()],
                    };
                    for (i, d) in displays.into_iter().enumerate() {
                        let f = TField {
                            name: key.clone(),
                            display: d,
                            raw: raws.get(i).cloned().flatten(),
                        };
                        if is_record {
                            let r = &mut pdu.records[*recs.last().unwrap()];
                            match key.as_str() {
                                "kafka.message_key" => r.key = Some(f.clone()),
                                "kafka.message_value" => r.value = Some(f.clone()),
                                "kafka.message_magic" => r.magic = f.display.parse().ok(),
                                _ => {}
                            }
                        }
                        pdu.fields.push(f);
                    }
                    continue;
                }
                let d = if depth == 0 && key.starts_with("kafka.") {
                    0
                } else {
                    depth + 1
                };
                walk(val, pdu, recs, d);
            }
            if is_record {
                recs.pop();
            }
        }
        _ => {}
    }
}
