//! The names a filter may use, and the nearest known names to a typo.
//!
//! A schema field is known when any definition the schema holds (every API, every
//! version, every release, the user's `--schema` too; metadata and coordinator records,
//! headers, the consumer protocol) has a field, a struct or a message of that name, or
//! when the decoder names a node so itself (the RecordBatch and legacy MessageSet fields,
//! the frame and header nodes, the tagged-field groups, the entries of Kafka's log files
//! and indexes). Wireshark refuses a name it does not know ("is neither a field nor a
//! protocol name") before it reads a packet; [`Known`] is what lets kwire do the same.

use super::{PREDICATES, PROPERTIES};
use crate::schema::model::{Field, FieldType, Prim};
use crate::schema::Schema;
use std::collections::BTreeSet;

/// Node names the decoders make besides the schema's own: the frame and headers, the
/// tagged fields, RecordBatch v2 and its records and headers, legacy messages, control
/// records, internal-topic keys and values, and the entries of log files, indexes,
/// checkpoints and snapshots (`kwire log`).
pub const DECODER_NAMES: &[&str] = &[
    // frame, headers, bodies (decode/mod.rs, walk.rs)
    "Frame",
    "size",
    "request_api_key",
    "request_api_version",
    "correlation_id",
    "client_id",
    "tagged_fields",
    "tag",
    "length",
    "present",
    "unread",
    "body",
    "token",
    "SaslToken",
    "version",
    "value",
    "key",
    "data",
    "rest",
    "unknown",
    "record",
    // RecordBatch v2 (decode/records)
    "RecordBatch",
    "baseOffset",
    "batchLength",
    "partitionLeaderEpoch",
    "magic",
    "crc",
    "attributes",
    "lastOffsetDelta",
    "baseTimestamp",
    "maxTimestamp",
    "producerId",
    "producerEpoch",
    "baseSequence",
    "recordsCount",
    "Records",
    "Record",
    "timestampDelta",
    "offsetDelta",
    "headerCount",
    "Header",
    "headerKey",
    "headerValue",
    // legacy MessageSet
    "MessageSet",
    "Message",
    "offset",
    "messageSize",
    "timestamp",
    // control records
    "ControlRecordKey",
    "type",
    "EndTxnMarker",
    "coordinatorEpoch",
    // log files, indexes, checkpoints, snapshots (log/files.rs, log/segment.rs)
    "entry",
    "position",
    "relativeOffset",
    "epoch",
    "startOffset",
    "topic",
    "partition",
    "lastSequence",
    "lastOffset",
    "firstOffset",
    "currentTxnFirstOffset",
    "lastStableOffset",
    "count",
    "topic_id",
    "property",
    "line",
    "json",
    "extra",
    "valid",
    "id",
    "data_version",
    "header",
    "frameVersion",
    "producer",
    // meta.properties keys (a dotted key is one node name)
    "cluster.id",
    "node.id",
    "broker.id",
    "directory.id",
];

/// The types the decoders give nodes of their own (`RecordBatch`, `Record v2`'s
/// `Record`, a control record's key): a filter name that starts with a capital names a
/// node of that type too, so no such name is a plain field's ([`Known::is_light`]).
const DECODER_TYPES: &[&str] = &[
    "RecordBatch",
    "Records",
    "Record",
    "Header",
    "Message",
    "MessageSet",
    "LegacyRecord",
    "ControlRecordKey",
    "EndTxnMarker",
    "SaslToken",
    "UnalignedRecords",
    "RequestHeader",
    "ResponseHeader",
];

/// Every name a filter or `-e` may use with a given schema, and the values some
/// properties take (API names).
#[derive(Clone, Debug, Default)]
pub struct Known {
    fields: BTreeSet<String>,
    apis: Vec<String>,
    /// The fields a tree below the whole one can keep exactly ([`Known::is_light`]).
    light: BTreeSet<String>,
}

impl Known {
    /// The names of `schema` (all its definitions, every version) and the decoder's.
    pub fn of(schema: &Schema) -> Known {
        fn walk(fs: &[Field], out: &mut BTreeSet<String>, other: &mut BTreeSet<String>) {
            for f in fs {
                out.insert(f.name.clone());
                if let Some(s) = f.struct_name() {
                    out.insert(s.to_string());
                    other.insert(s.to_string());
                }
                if !matches!(f.ty, FieldType::Prim(p) if p != Prim::Records) {
                    other.insert(f.name.clone());
                }
                walk(&f.fields, out, other);
            }
        }
        let mut fields: BTreeSet<String> = DECODER_NAMES.iter().map(|s| s.to_string()).collect();
        // Names that are not a primitive field's everywhere: structs, arrays, records,
        // messages, the decoder's own nodes.
        let mut other = fields.clone();
        for d in schema.definitions() {
            fields.insert(d.def.name.clone());
            other.insert(d.def.name.clone());
            if d.def.name == "QuorumStateData" {
                // quorum-state files are JSON of it, keyed in lowerCamelCase (`leaderId`):
                // nodes of `kwire log`'s own, no message's field.
                for f in &d.def.fields {
                    let mut c = f.name.chars();
                    if let Some(x) = c.next() {
                        let key = x.to_ascii_lowercase().to_string() + c.as_str();
                        other.insert(key.clone());
                        fields.insert(key);
                    }
                }
            }
            walk(&d.def.fields, &mut fields, &mut other);
            for s in &d.def.common_structs {
                fields.insert(s.name.clone());
                other.insert(s.name.clone());
                walk(&s.fields, &mut fields, &mut other);
            }
        }
        let light = fields
            .iter()
            .filter(|f| !other.contains(*f) && !DECODER_TYPES.contains(&f.as_str()))
            .cloned()
            .collect();
        let apis = schema
            .api_keys()
            .into_iter()
            .filter_map(|k| schema.api_name(k).map(str::to_string))
            .collect();
        Known {
            fields,
            apis,
            light,
        }
    }

    /// Whether every node a whole tree may hold under the name `name` is a schema
    /// field of a primitive type (not `records`, not an array, not a struct), so that
    /// a tree below the whole one that keeps the fields so named
    /// ([`crate::decode::DecodeOptions::keep`]) has each of them as the whole tree has
    /// it: no struct, array, message or node of the decoder's own shares the name, and
    /// no node's type is called so.
    pub fn is_light(&self, name: &str) -> bool {
        self.light.contains(name)
    }

    /// Whether `name` (one part of a dotted name) is a field, struct or message name.
    pub fn is_field(&self, name: &str) -> bool {
        self.fields.contains(name)
    }

    /// Whether `name` names an API (case-insensitive).
    pub fn is_api(&self, name: &str) -> bool {
        self.apis.iter().any(|a| a.eq_ignore_ascii_case(name))
    }

    /// The known API names.
    pub fn apis(&self) -> impl Iterator<Item = &str> {
        self.apis.iter().map(String::as_str)
    }

    /// Every name a filter can use: properties and their aliases, predicates, fields.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        PROPERTIES
            .iter()
            .map(|(n, _)| *n)
            .chain(["corr", "conn", "latency", "tls.version"])
            .chain(PREDICATES.iter().map(|(n, _)| *n))
            .chain(self.fields.iter().map(String::as_str))
    }
}

/// The edit distance of `a` and `b` without regard to ASCII case (Levenshtein:
/// insertions, deletions, substitutions), stopping early past `cap`.
fn distance(a: &str, b: &str, cap: usize) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    if a.len().abs_diff(b.len()) > cap {
        return cap + 1;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut best = cur[0];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
            best = best.min(cur[j + 1]);
        }
        if best > cap {
            return cap + 1;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The known names nearest to `word` (at most three, in the order given): those at the
/// smallest edit distance found within a third of its length (at least 1, at most 3);
/// a name that differs only in case is nearest of all.
pub fn nearest<'k>(word: &str, known: impl IntoIterator<Item = &'k str>) -> Vec<&'k str> {
    let cap = (word.chars().count() / 3).clamp(1, 3);
    let mut found: Vec<(usize, &str)> = Vec::new();
    for k in known {
        if k == word || found.iter().any(|(_, f)| *f == k) {
            continue;
        }
        let d = distance(word, k, cap);
        if d <= cap {
            found.push((d, k));
        }
    }
    let best = found.iter().map(|(d, _)| *d).min().unwrap_or(0);
    found
        .into_iter()
        .filter(|(d, _)| *d == best)
        .take(3)
        .map(|(_, k)| k)
        .collect()
}

/// `; did you mean `A`, `B` or `C`?`, or nothing when no name is near.
pub fn did_you_mean(near: &[&str]) -> String {
    let q: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
    match q.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        [init @ .., last] => format!("; did you mean {} or {last}?", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_names_distance_and_nearest() {
        assert_eq!(distance("Topicc", "Topic", 3), 1);
        assert_eq!(distance("kitten", "sitting", 5), 3);
        assert_eq!(distance("abc", "ABC", 3), 0);
        assert!(distance("a", "abcdefgh", 2) > 2);
        let k = ["Topic", "Topics", "TopicId", "Partition", "Name"];
        assert_eq!(nearest("Topicc", k), vec!["Topic", "Topics"]);
        assert_eq!(nearest("topic", k), vec!["Topic"]);
        assert!(nearest("zzzzzz", k).is_empty());
        assert_eq!(did_you_mean(&["A"]), "; did you mean `A`?");
        assert_eq!(
            did_you_mean(&["A", "B", "C"]),
            "; did you mean `A`, `B` or `C`?"
        );
    }

    #[test]
    fn filter_names_of_the_embedded_schema() {
        let k = Known::of(&Schema::embedded());
        for n in [
            "Topic",
            "ErrorCode",
            "TopicRecord",
            "FetchTopic",
            "ProduceRequest",
            "baseOffset",
            "request_api_key",
            "ConsumerProtocolSubscription",
            "OffsetCommitKey",
        ] {
            assert!(k.is_field(n), "{n}");
        }
        assert!(!k.is_field("Topicc"));
        assert!(k.is_api("fetch") && k.is_api("DeleteTopics") && !k.is_api("Fetchh"));
    }
}
