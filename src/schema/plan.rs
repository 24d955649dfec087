//! Compiled plans: what the decoder's walk needs of one field list at one version,
//! worked out once and kept with the definition, instead of asking the schema for it on
//! every message.
//!
//! A [`Plan`] is made the first time the walk meets a field list (a message body, an
//! inline struct or a common struct) at a version, and kept in its definition's
//! [`Plans`] for every later message: the fields present at that version and not tagged
//! there, in wire order ([`Step`]); runs of fixed-size fields that the summary detail
//! level does not keep, merged into one byte count each, so that the summary steps over
//! a run with one bounds check; the tagged-field table (tag to field); where each
//! struct-typed field's fields are defined; and the fewest bytes one struct of these
//! fields can take (the array count check). What the walk does with a field beyond its
//! type (name an error code, note a topic, read a protocol type...) is decided once per
//! field when the schema is loaded: [`Role`].

use super::model::{Field, FieldType, MessageDef, Prim};
use foldhash::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// What the walk does with a field beyond reading its type, decided once from the
/// field's name and `entityType` (Kafka's JSON definitions) when the schema is loaded:
/// a set of flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Role(u16);

impl Role {
    /// An int16 error code (`ErrorCode`, `...ErrorCode`, `Error`): named by its error.
    pub const ERROR_CODE: Role = Role(1);
    /// An api_key (`RequestApiKey`, `ApiKey`): named by its API.
    pub const API_KEY: Role = Role(1 << 1);
    /// -1 means none (broker ids, epochs, leader, producer, controller and coordinator ids).
    pub const NONE_IF_MINUS_ONE: Role = Role(1 << 2);
    /// `ProtocolType`: the group protocol that decides how member metadata is read.
    pub const PROTOCOL_TYPE: Role = Role(1 << 3);
    /// A topic name (`entityType: topicName`): the topic the records that follow belong to.
    pub const TOPIC_NAME: Role = Role(1 << 4);
    /// `TopicId`: as a topic name, by id.
    pub const TOPIC_ID: Role = Role(1 << 5);
    /// `Position` (a FetchSnapshot response's position in the snapshot).
    pub const POSITION: Role = Role(1 << 6);
    /// `ClientHostAddress` (Envelope): raw IPv4/IPv6 bytes.
    pub const CLIENT_HOST_ADDRESS: Role = Role(1 << 7);
    /// `UnalignedRecords`: records bytes that need not start at a batch.
    pub const UNALIGNED_RECORDS: Role = Role(1 << 8);
    /// Its value steers the rest of the walk: the group protocol type (`ProtocolType`,
    /// and `protocolType` of a `__consumer_offsets` GroupMetadataValue), which decides
    /// how member metadata is read; the topic (a name or `TopicId`) and a FetchSnapshot
    /// response's `Position`, which decide how the records that follow are read. Read
    /// whole at every detail level: never skimmed, nor stepped over in a run.
    pub const STEERS: Role = Role(1 << 9);

    /// The roles of a field called `name` with `entityType` `entity`.
    pub fn of(name: &str, entity: Option<&str>) -> Role {
        let mut r = Role::default();
        let mut add = |yes: bool, x: Role| {
            if yes {
                r.0 |= x.0;
            }
        };
        add(
            name.ends_with("ErrorCode") || name == "Error",
            Role::ERROR_CODE,
        );
        add(name == "RequestApiKey" || name == "ApiKey", Role::API_KEY);
        add(
            entity == Some("brokerId")
                || name.ends_with("Epoch")
                || name.ends_with("LeaderId")
                || matches!(name, "ProducerId" | "ControllerId" | "CoordinatorId"),
            Role::NONE_IF_MINUS_ONE,
        );
        add(name == "ProtocolType", Role::PROTOCOL_TYPE);
        add(entity == Some("topicName"), Role::TOPIC_NAME);
        add(name == "TopicId", Role::TOPIC_ID);
        add(name == "Position", Role::POSITION);
        add(name == "ClientHostAddress", Role::CLIENT_HOST_ADDRESS);
        add(name == "UnalignedRecords", Role::UNALIGNED_RECORDS);
        add(
            matches!(
                name,
                "ProtocolType" | "protocolType" | "TopicId" | "Position"
            ) || entity == Some("topicName"),
            Role::STEERS,
        );
        r
    }

    /// Whether every flag of `x` is set.
    pub fn has(self, x: Role) -> bool {
        self.0 & x.0 == x.0
    }
}

/// Where the fields of a struct-typed field are defined, as a path from its
/// definition's root: the first step indexes the body's fields, or (with
/// `Home::COMMON` set) the common structs; each further step indexes the fields of
/// the field (or common struct) before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Home(Box<[u16]>);

impl Home {
    /// Set on a path's first step when it indexes `commonStructs`.
    const COMMON: u16 = 1 << 15;

    /// The fields this path leads to in `def`.
    pub fn fields<'d>(&self, def: &'d MessageDef) -> Option<&'d [Field]> {
        let (first, rest) = self.0.split_first()?;
        let mut fs: &[Field] = if first & Home::COMMON != 0 {
            &def.common_structs
                .get(usize::from(first & !Home::COMMON))?
                .fields
        } else {
            &def.fields.get(usize::from(*first))?.fields
        };
        for i in rest {
            fs = &fs.get(usize::from(*i))?.fields;
        }
        Some(fs)
    }

    /// The path to `target` (a field list of `def`), when it is one.
    fn find(def: &MessageDef, target: &[Field]) -> Option<Home> {
        fn down(fs: &[Field], target: &[Field], path: &mut Vec<u16>) -> bool {
            for (i, f) in fs.iter().enumerate() {
                path.push(i as u16);
                if std::ptr::eq(f.fields.as_slice(), target) || down(&f.fields, target, path) {
                    return true;
                }
                path.pop();
            }
            false
        }
        let mut path = Vec::new();
        if down(&def.fields, target, &mut path) {
            return Some(Home(path.into()));
        }
        for (i, s) in def.common_structs.iter().enumerate() {
            path.clear();
            path.push(i as u16 | Home::COMMON);
            if std::ptr::eq(s.fields.as_slice(), target) || down(&s.fields, target, &mut path) {
                return Some(Home(path.into()));
            }
        }
        None
    }
}

/// One field the walk reads, in wire order.
#[derive(Clone, Debug)]
pub struct Step {
    /// The field's index in its list.
    pub field: u16,
    /// At the summary detail level: this field and the `run - 1` after it are fixed-size
    /// fields the summary does not keep, `run_bytes` bytes together, read with one
    /// bounds check (1 or 0: read this field alone).
    pub run: u16,
    /// The bytes of the run.
    pub run_bytes: u32,
    /// For a struct-typed field (or an array of structs): where its struct's fields are,
    /// `None` when the definition does not define it.
    pub home: Option<Home>,
    /// The plan of the struct's fields ([`Step::home`]) at this plan's version, made the
    /// first time the walk reaches it and kept here, so that a message reaches each of
    /// its plans once through its parent instead of looking it up in [`Plans`].
    pub sub: OnceLock<Arc<Plan>>,
}

/// One field list at one version, compiled; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// The fields present at this version and not tagged there, in order.
    pub steps: Vec<Step>,
    /// The fields tagged at this version: (tag, index in the list), by tag.
    pub tagged: Vec<(u32, u16)>,
    /// The fewest bytes one struct of these fields takes (its tagged-field count
    /// included in flexible versions).
    pub min_size: usize,
}

/// The size of a fixed-size primitive; `None` for strings, bytes and records.
pub fn fixed_size(p: Prim) -> Option<usize> {
    match p {
        Prim::Bool | Prim::Int8 => Some(1),
        Prim::Int16 | Prim::Uint16 => Some(2),
        Prim::Int32 | Prim::Uint32 => Some(4),
        Prim::Int64 | Prim::Float64 => Some(8),
        Prim::Uuid => Some(16),
        Prim::String | Prim::Bytes | Prim::Records => None,
    }
}

/// Whether `f` is present at `version` and read in order (not tagged there).
fn in_order(f: &Field, version: i16, flexible: bool) -> bool {
    f.versions.contains(version) && !(flexible && f.is_tagged(version))
}

/// The fields of struct-typed field `f`: its own, or those of the struct `s` it names
/// (a common struct of `def`); `None` when `def` defines no such struct.
pub fn struct_fields_of<'d>(def: &'d MessageDef, f: &'d Field, s: &str) -> Option<&'d [Field]> {
    if !f.fields.is_empty() {
        Some(&f.fields)
    } else {
        def.struct_fields(s)
    }
}

/// The fewest bytes one value of type `t` (of field `f`) takes at `version`, structs
/// followed at most 8 levels down.
pub fn min_size(
    def: &MessageDef,
    t: &FieldType,
    f: &Field,
    version: i16,
    flexible: bool,
    depth: usize,
) -> usize {
    match t {
        FieldType::Prim(p) => match p {
            Prim::String => {
                if f.is_flexible(version, flexible) {
                    1
                } else {
                    2
                }
            }
            Prim::Bytes | Prim::Records => {
                if f.is_flexible(version, flexible) {
                    1
                } else {
                    4
                }
            }
            p => p.fixed_size().unwrap_or(0),
        },
        FieldType::Array(_) => {
            if flexible {
                1
            } else {
                4
            }
        }
        FieldType::Struct(s) => {
            if depth > 8 {
                return 0;
            }
            let Some(fs) = struct_fields_of(def, f, s) else {
                return 0;
            };
            let mut n = usize::from(flexible);
            for sf in fs {
                if in_order(sf, version, flexible) {
                    n += min_size(def, &sf.ty, sf, version, flexible, depth + 1);
                }
            }
            n
        }
    }
}

impl Plan {
    /// Compiles `fields` (a field list of `def`) at `version`, in which `def` is
    /// `flexible` or not.
    pub fn compile(def: &MessageDef, fields: &[Field], version: i16, flexible: bool) -> Plan {
        let mut steps: Vec<Step> = Vec::new();
        let mut min = usize::from(flexible);
        for (i, f) in fields.iter().enumerate() {
            if !in_order(f, version, flexible) {
                continue;
            }
            min += min_size(def, &f.ty, f, version, flexible, 1);
            let home = f
                .struct_name()
                .and_then(|s| struct_fields_of(def, f, s))
                .and_then(|fs| Home::find(def, fs));
            steps.push(Step {
                field: i as u16,
                run: 0,
                run_bytes: 0,
                home,
                sub: OnceLock::new(),
            });
        }
        // Runs of fixed-size fields the summary skips, from the back: a step's run is
        // itself plus the run of the step after it.
        let mut next: (u16, u32) = (0, 0);
        for s in steps.iter_mut().rev() {
            let f = &fields[usize::from(s.field)];
            let fixed = match f.ty {
                FieldType::Prim(p) if f.skimmable() => fixed_size(p),
                _ => None,
            };
            next = match fixed {
                Some(n) => (next.0.saturating_add(1), next.1.saturating_add(n as u32)),
                None => (0, 0),
            };
            (s.run, s.run_bytes) = next;
        }
        let mut tagged: Vec<(u32, u16)> = fields
            .iter()
            .enumerate()
            .filter_map(|(i, f)| {
                f.tag
                    .filter(|_| f.is_tagged(version))
                    .map(|t| (t, i as u16))
            })
            .collect();
        // The first field with a tag wins, as a search in field order would find it.
        tagged.sort_by_key(|(t, i)| (*t, *i));
        tagged.dedup_by_key(|(t, _)| *t);
        Plan {
            steps,
            tagged,
            min_size: min,
        }
    }

    /// The index of the field tagged `tag` at this plan's version.
    pub fn tagged_field(&self, tag: u32) -> Option<usize> {
        self.tagged
            .binary_search_by_key(&tag, |(t, _)| *t)
            .ok()
            .map(|k| usize::from(self.tagged[k].1))
    }
}

/// The plans made so far for a definition's field lists, by list and version. Shared by
/// every thread that decodes with the schema; a clone of a definition starts with none
/// (the plans name its field lists by address).
#[derive(Default)]
pub struct Plans(RwLock<HashMap<(usize, i16, bool), Arc<Plan>>>, BodyPlans);

/// Versions whose body plans are kept outside the map (0 to this, less one).
const BODY_VERSIONS: usize = 32;

/// The plans of a definition's body (its top-level fields) at versions
/// `0..BODY_VERSIONS`, read and not, flexibly: reached once per message without a lock
/// or a hash. The table is made on the definition's first message (the schema holds
/// thousands of definitions, most never used).
#[derive(Default)]
struct BodyPlans(OnceLock<Box<[OnceLock<Arc<Plan>>]>>);

impl BodyPlans {
    /// The slot of the body plan at `version`, read `flexible`ly or not.
    fn slot(&self, version: i16, flexible: bool) -> Option<&OnceLock<Arc<Plan>>> {
        let v = usize::try_from(version)
            .ok()
            .filter(|v| *v < BODY_VERSIONS)?;
        let table = self
            .0
            .get_or_init(|| (0..2 * BODY_VERSIONS).map(|_| OnceLock::new()).collect());
        table.get(2 * v + usize::from(flexible))
    }

    /// How many body plans are made.
    fn len(&self) -> usize {
        self.0
            .get()
            .map_or(0, |t| t.iter().filter(|p| p.get().is_some()).count())
    }
}

impl Clone for Plans {
    fn clone(&self) -> Plans {
        Plans::default()
    }
}

impl std::fmt::Debug for Plans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.read().map(|m| m.len()).unwrap_or(0);
        write!(f, "Plans({})", n + self.1.len())
    }
}

/// Plans kept per definition, at most (a user schema with open-ended versions cannot
/// grow the cache without bound: past it, plans are made and not kept).
const MAX_PLANS: usize = 4096;

impl MessageDef {
    /// The plan of `fields` (one of this definition's field lists: its body, an inline
    /// struct or a common struct) at `version`, read `flexible`ly or not (the
    /// definition's flexible versions say which), made on first use and kept.
    pub fn plan(&self, fields: &[Field], version: i16, flexible: bool) -> Arc<Plan> {
        if std::ptr::eq(fields, self.fields.as_slice()) {
            if let Some(slot) = self.plans.1.slot(version, flexible) {
                return slot
                    .get_or_init(|| Arc::new(Plan::compile(self, fields, version, flexible)))
                    .clone();
            }
        }
        let key = (fields.as_ptr() as usize, version, flexible);
        if let Some(p) = self.plans.0.read().ok().and_then(|m| m.get(&key).cloned()) {
            return p;
        }
        let p = Arc::new(Plan::compile(self, fields, version, flexible));
        if let Ok(mut m) = self.plans.0.write() {
            if m.len() < MAX_PLANS {
                m.insert(key, p.clone());
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(json: &str) -> MessageDef {
        MessageDef::from_json(&serde_json::from_str(json).unwrap()).unwrap()
    }

    /// A plan lists the fields of its version in order, merges the summary's fixed-size
    /// runs, finds tags and struct homes, and is made once per list and version.
    #[test]
    fn plan_steps_runs_tags_homes() {
        let d = def(
            r#"{"apiKey": 90, "type": "request", "name": "PlanTestRequest",
            "validVersions": "0-2", "flexibleVersions": "2+", "fields": [
              {"name": "A", "type": "int32", "versions": "0+"},
              {"name": "B", "type": "int64", "versions": "1+"},
              {"name": "C", "type": "int8", "versions": "0+"},
              {"name": "TopicName", "type": "string", "versions": "0+", "entityType": "topicName"},
              {"name": "ErrorCode", "type": "int16", "versions": "0+"},
              {"name": "Parts", "type": "[]Part", "versions": "0+", "fields": [
                {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                {"name": "Extra", "type": "Shared", "versions": "0+"}
              ]},
              {"name": "T1", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 1},
              {"name": "T0", "type": "string", "versions": "2+", "taggedVersions": "2+", "tag": 0}
            ], "commonStructs": [
              {"name": "Shared", "versions": "0+", "fields": [
                {"name": "X", "type": "int32", "versions": "0+"}]}
            ]}"#,
        );
        let p0 = d.plan(&d.fields, 0, false);
        let names: Vec<&str> = p0
            .steps
            .iter()
            .map(|s| d.fields[s.field as usize].name.as_str())
            .collect();
        assert_eq!(names, ["A", "C", "TopicName", "ErrorCode", "Parts"]);
        assert_eq!((p0.steps[0].run, p0.steps[0].run_bytes), (2, 5));
        assert_eq!((p0.steps[1].run, p0.steps[1].run_bytes), (1, 1));
        // TopicName is a string; ErrorCode the summary keeps when not 0.
        assert_eq!(p0.steps[2].run, 0);
        assert_eq!(p0.steps[3].run, 0);
        let p1 = d.plan(&d.fields, 1, false);
        assert_eq!((p1.steps[0].run, p1.steps[0].run_bytes), (3, 13));
        // Tagged fields are only in the flexible version's table, by tag.
        assert!(p1.tagged.is_empty());
        let p2 = d.plan(&d.fields, 2, true);
        assert_eq!(p2.tagged_field(0), Some(7));
        assert_eq!(p2.tagged_field(1), Some(6));
        assert_eq!(p2.tagged_field(2), None);
        // Homes: the inline struct, and the common struct it names.
        let parts = p0.steps[4].home.as_ref().unwrap().fields(&d).unwrap();
        assert!(std::ptr::eq(parts, d.fields[5].fields.as_slice()));
        let pp = d.plan(parts, 0, false);
        let shared = pp.steps[1].home.as_ref().unwrap().fields(&d).unwrap();
        assert_eq!(shared[0].name, "X");
        // min_size: 4 + 1 + 2 + 2 + 4 at v0 (the array counts its length prefix).
        assert_eq!(p0.min_size, 13);
        assert_eq!(pp.min_size, 8);
        // Kept: the same plan again.
        assert!(Arc::ptr_eq(&p0, &d.plan(&d.fields, 0, false)));
        // A clone makes its own.
        let c = d.clone();
        assert!(!Arc::ptr_eq(&p0, &c.plan(&c.fields, 0, false)));
    }

    #[test]
    fn roles_from_names() {
        assert!(Role::of("ErrorCode", None).has(Role::ERROR_CODE));
        assert!(Role::of("TopicErrorCode", None).has(Role::ERROR_CODE));
        assert!(Role::of("LeaderEpoch", None).has(Role::NONE_IF_MINUS_ONE));
        assert!(Role::of("Replicas", Some("brokerId")).has(Role::NONE_IF_MINUS_ONE));
        assert!(Role::of("Name", Some("topicName")).has(Role::TOPIC_NAME));
        assert!(!Role::of("Name", None).has(Role::TOPIC_NAME));
        assert_eq!(Role::of("TimeoutMs", None), Role::default());
    }
}
