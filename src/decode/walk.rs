//! The schema walk: one message definition, one version, over a [`Reader`].
//!
//! Every field present in the version is read in order; in flexible versions each
//! struct ends with its tagged-field section. Array and string lengths are checked
//! against the bytes left before anything is sized from them. The walk stops at the
//! first error it cannot step over, attaching the error to a leaf that covers the unread
//! bytes, so the tree stays partial but still tiles the input.
//!
//! On error the walk hands back the partial node by value (`Err(node)`): it goes
//! straight into the tree, so boxing it would only add an allocation per error.
#![allow(clippy::result_large_err)]

use super::{records, Cx, Detail, Reader};
use crate::errors::error_name;
use crate::schema::plan::{fixed_size, struct_fields_of, Plan, Role};
use crate::schema::{Field, FieldType, MessageDef, Prim, SummaryFact};
use crate::tree::{Node, NodeKind, Region, Value};
use crate::wire::{self, LenPrefix};

/// The walk stopped: the error is already attached inside the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop;

/// Context the walk needs beyond the definition: what surrounds this message.
#[derive(Clone, Debug, Default)]
pub struct Hints {
    /// The group protocol type (`consumer`) from the paired JoinGroup/SyncGroup request,
    /// for responses and versions that do not carry it themselves.
    pub protocol_type: Option<String>,
    /// Ids of internal topics (`__consumer_offsets`...) learned earlier in the session,
    /// so their records decode where a message names the topic by id only.
    pub internal_topic_ids: Vec<(uuid::Uuid, super::internal_topics::InternalTopic)>,
}

/// Walks one definition at one version.
pub struct Walk<'c, 'a> {
    /// The shared context.
    pub cx: &'c mut Cx<'a>,
    /// The definition being walked.
    pub def: &'a MessageDef,
    /// The version.
    pub version: i16,
    /// Whether the version is flexible.
    pub flexible: bool,
    /// Use protocol-guide type labels and snake_case names (headers).
    pub guide_style: bool,
    /// The region of the bytes this walk reads.
    pub region: Region,
    /// Surrounding hints.
    pub hints: Hints,
    /// The last `ProtocolType` string seen in this message.
    pub protocol_type: Option<&'a str>,
}

use crate::schema::snake_case;

/// The length prefix of a string, bytes or array: compact (uvarint, length + 1) in
/// flexible versions, else `fixed` (int16 for strings, int32 for bytes and arrays).
fn len_prefix(flexible: bool, fixed: LenPrefix) -> LenPrefix {
    if flexible {
        LenPrefix::Compact
    } else {
        fixed
    }
}

/// `1 element`, `3 elements`: a count and its noun, formatted where it is written.
struct Plural<'s>(u64, &'s str);

impl std::fmt::Display for Plural<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            1 => write!(f, "1 {}", self.1),
            n => write!(f, "{n} {}s", self.1),
        }
    }
}

impl<'c, 'a> Walk<'c, 'a> {
    /// A walk over `def` at `version`, for bytes of `region`.
    pub fn new(
        cx: &'c mut Cx<'a>,
        def: &'a MessageDef,
        version: i16,
        region: Region,
    ) -> Walk<'c, 'a> {
        Walk {
            cx,
            def,
            version,
            flexible: def.is_flexible(version),
            guide_style: false,
            region,
            hints: Hints::default(),
            protocol_type: None,
        }
    }

    fn name_of(&self, f: &'a Field) -> &'a str {
        if self.guide_style {
            // The header's fields, in every message: no allocation for them.
            match f.name.as_str() {
                "RequestApiKey" => "request_api_key",
                "RequestApiVersion" => "request_api_version",
                "CorrelationId" => "correlation_id",
                "ClientId" => "client_id",
                n => self.cx.s(&snake_case(n)),
            }
        } else {
            f.name.as_str()
        }
    }

    /// Whether `n`, read for field `f` (or as an element of array field `f`, or as
    /// its length with `f` None), goes into the tree at this detail level: always at
    /// [`Detail::Full`] and in the header; at [`Detail::Summary`] when it holds an
    /// error, a warning or children, or when `f` is a [`SummaryFact`] of the summary
    /// line, the session or `kwire read`'s filters; at [`Detail::Rows`] also when `f`
    /// is a row fact ([`Field::row`]) or an error code, zero included; below
    /// [`Detail::Full`] also when the options name `f` ([`super::DecodeOptions::keep`]).
    fn keeps(&self, f: Option<&Field>, n: &Node<'_>) -> bool {
        if self.cx.opts.detail == Detail::Full
            || self.guide_style
            || n.error().is_some()
            || n.warning().is_some()
            || !n.children.is_empty()
        {
            return true;
        }
        let Some(f) = f else {
            return false;
        };
        f.summary.keeps(&n.value)
            || (self.cx.opts.detail == Detail::Rows && (f.row || f.summary == SummaryFact::NonZero))
            || self.cx.opts.keep.contains(&f.name)
    }

    /// At [`Detail::Summary`], reads field `f` (which the summary does not keep) without
    /// building its node, when it is a fixed-size primitive, a string, or an array of
    /// fixed-size primitives, and reads cleanly: enough bytes, a null only where the
    /// version allows one, UTF-8 text. Otherwise reads nothing and returns `false`, and
    /// the caller reads the field in full, error and all.
    fn skim(&mut self, r: &mut Reader<'a>, f: &'a Field) -> bool {
        let mut p = *r;
        // Elements skimmed count against the node budget as the full walk counts them.
        let mut elements = 0;
        let ok = match &f.ty {
            FieldType::Prim(Prim::String) => {
                let prefix = len_prefix(self.field_flexible(f), LenPrefix::Int16);
                match p.read(wire::sized(prefix)) {
                    Ok(((_, None), _, _)) => self.nullable(f),
                    Ok(((_, Some(b)), _, _)) => std::str::from_utf8(b).is_ok(),
                    Err(_) => false,
                }
            }
            FieldType::Prim(q) => fixed_size(*q).is_some_and(|n| p.split(n).is_some()),
            FieldType::Array(inner) => match **inner {
                FieldType::Prim(q) => fixed_size(q).is_some_and(|n| {
                    let prefix = len_prefix(self.field_flexible(f), LenPrefix::Int32);
                    match p.read(wire::length(prefix)) {
                        Ok((l, _, _)) => match l.len {
                            None => self.nullable(f),
                            Some(count) => {
                                elements = usize::try_from(count).unwrap_or(usize::MAX);
                                elements
                                    .checked_mul(n)
                                    .is_some_and(|bytes| p.split(bytes).is_some())
                            }
                        },
                        Err(_) => false,
                    }
                }),
                _ => false,
            },
            FieldType::Struct(_) => false,
        };
        if ok {
            *r = p;
            self.cx.spend(elements);
        }
        ok
    }

    fn field_flexible(&self, f: &Field) -> bool {
        f.is_flexible(self.version, self.flexible)
    }

    fn nullable(&self, f: &Field) -> bool {
        f.is_nullable(self.version)
    }

    /// The error for a null where this version allows none.
    fn null_error(&self, f: &Field) -> &'a str {
        self.problem(format_args!(
            "{} is null, which version {} does not allow",
            f.name, self.version
        ))
    }

    /// The leaf of a length or count prefix; compact ones say how they count.
    fn length_leaf(
        &self,
        prefix: LenPrefix,
        raw: i64,
        off: usize,
        len: usize,
        r: &Reader<'a>,
        compact_note: &'static str,
    ) -> Node<'a> {
        let mut l = self.leaf("length", prefix_label(prefix), Value::Int(raw), off, len, r);
        if prefix == LenPrefix::Compact {
            l.annotation = Some(compact_note);
        }
        l
    }

    fn leaf(
        &self,
        name: &'a str,
        ty: &'a str,
        v: Value<'a>,
        off: usize,
        len: usize,
        r: &Reader<'a>,
    ) -> Node<'a> {
        let mut n = Node::leaf(name, ty, v, off, len);
        n.buffer = r.buffer;
        n.region = self.region;
        n
    }

    /// An error's or warning's text, formatted into the arena; in a trial decode
    /// ([`DecodeOptions::trial`](super::DecodeOptions::trial)) marked, not worded.
    fn problem(&self, args: std::fmt::Arguments<'_>) -> &'a str {
        self.cx.problem(args)
    }

    /// The annotation of a string's or bytes' length prefix holding `raw`: compact in
    /// flexible versions, else `fixed`'s (`int16 len=N`, `int32 len=N`); empty in a
    /// trial decode.
    fn len_note(
        &self,
        raw: i64,
        flexible: bool,
        fixed: fn(i64, &super::Buffers) -> &str,
    ) -> &'a str {
        if self.cx.opts.trial {
            ""
        } else if flexible {
            super::texts::compact_len(raw, self.cx.arena)
        } else {
            fixed(raw, self.cx.arena)
        }
    }

    /// [`Reader::error_leaf_of`] in this walk's region.
    fn err_leaf(&self, r: &mut Reader<'a>, name: &'a str, ty: &'a str, msg: &'a str) -> Node<'a> {
        let mut n = r.error_leaf_of(name, ty, msg);
        n.region = self.region;
        n
    }

    /// Walks `fields` (a struct's or the body's) and, in flexible versions, the tagged
    /// section after them, pushing nodes onto `out`.
    ///
    /// # Errors
    /// [`Stop`] when an error ended the walk (attached inside `out`).
    pub fn fields(
        &mut self,
        r: &mut Reader<'a>,
        fields: &'a [Field],
        out: &mut Vec<Node<'a>>,
        tag_desc: &'static str,
    ) -> Result<(), Stop> {
        let plan = self.def.plan(fields, self.version, self.flexible);
        self.planned(r, fields, &plan, out, tag_desc)
    }

    /// [`Walk::fields`] by the compiled plan of `fields` at this walk's version.
    fn planned(
        &mut self,
        r: &mut Reader<'a>,
        fields: &'a [Field],
        plan: &Plan,
        out: &mut Vec<Node<'a>>,
        tag_desc: &'static str,
    ) -> Result<(), Stop> {
        self.cx.depth += 1;
        let res = if self.cx.depth > self.cx.opts.max_depth {
            let m = self.problem(format_args!(
                "nesting deeper than the cap of {} levels",
                self.cx.opts.max_depth
            ));
            out.push(self.err_leaf(r, "unread", "bytes", m));
            Err(Stop)
        } else {
            self.steps(r, fields, plan, out).and_then(|()| {
                if self.flexible {
                    self.tagged(r, fields, plan, out, tag_desc)
                } else {
                    Ok(())
                }
            })
        };
        self.cx.depth -= 1;
        res
    }

    /// The fields of `plan`, in order.
    fn steps(
        &mut self,
        r: &mut Reader<'a>,
        fields: &'a [Field],
        plan: &Plan,
        out: &mut Vec<Node<'a>>,
    ) -> Result<(), Stop> {
        let full = self.cx.opts.detail == Detail::Full;
        if full {
            out.reserve(plan.steps.len() + 1);
        }
        let skims = !full && !self.guide_style;
        // A run may hold row facts ([`Field::row`]), which the rows detail keeps: there
        // each field is skimmed (or kept) on its own.
        // So may the fields a filter reads ([`super::DecodeOptions::keep`]).
        let keep = &self.cx.opts.keep;
        let runs = skims && self.cx.opts.detail != Detail::Rows && keep.is_empty();
        let rows = self.cx.opts.detail == Detail::Rows;
        let mut k = 0;
        while let Some(step) = plan.steps.get(k) {
            let f = &fields[usize::from(step.field)];
            // A run of fixed-size fields the summary does not keep: one bounds check.
            // When the bytes run out inside it, its fields are read one by one below and
            // the one cut short says so.
            if runs && step.run > 1 && r.split(step.run_bytes as usize).is_some() {
                k += usize::from(step.run);
                continue;
            }
            k += 1;
            if skims
                && f.skimmable()
                && !(rows && f.row)
                && !keep.contains(&f.name)
                && self.skim(r, f)
            {
                continue;
            }
            let sub = step.home.as_ref().and_then(|h| h.fields(self.def));
            // The struct's plan, reached once through this one.
            let (def, version, flexible) = (self.def, self.version, self.flexible);
            let sub_plan =
                sub.map(|fs| &**step.sub.get_or_init(|| def.plan(fs, version, flexible)));
            match self.field_in(r, f, sub, sub_plan) {
                Ok(n) => {
                    if self.keeps(Some(f), &n) {
                        out.push(n)
                    }
                }
                Err(n) => {
                    out.push(n);
                    return Err(Stop);
                }
            }
        }
        Ok(())
    }

    /// The tagged-field section: uvarint count, then per field uvarint tag, uvarint
    /// size and the data.
    fn tagged(
        &mut self,
        r: &mut Reader<'a>,
        fields: &'a [Field],
        plan: &Plan,
        out: &mut Vec<Node<'a>>,
        tag_desc: &'static str,
    ) -> Result<(), Stop> {
        let (count, off, len) = match r.read(wire::uvarint) {
            Ok(x) => x,
            Err(e) => {
                out.push(self.err_leaf(
                    r,
                    "tagged_fields",
                    "uvarint",
                    self.problem(format_args!("tagged_fields: {}", e.kind)),
                ));
                return Err(Stop);
            }
        };
        let mut count_leaf = self
            .leaf(
                "tagged_fields",
                "uvarint",
                Value::UInt(count as u64),
                off,
                len,
                r,
            )
            .describe(tag_desc);
        count_leaf.region = Region::TaggedFields;
        if count == 0 {
            if self.keeps(None, &count_leaf) {
                out.push(count_leaf);
            }
            return Ok(());
        }
        let mut group = Node::new("tagged_fields", "tagged_fields", NodeKind::Group, off);
        group.value = Value::UInt(count as u64);
        group.buffer = r.buffer;
        group.region = Region::TaggedFields;
        group.description = Some(tag_desc);
        count_leaf.name = "count";
        let mut gk = self.cx.vec();
        gk.push(count_leaf);
        let mut stopped = false;
        if count as usize > r.left() {
            let m = self.problem(format_args!(
                "tagged field count {count} exceeds the {} bytes left",
                r.left()
            ));
            gk.push(self.err_leaf(r, "unread", "bytes", m));
            stopped = true;
        }
        let mut i = 0;
        while !stopped && i < count {
            i += 1;
            let start = r.pos;
            let (tag, toff, tlen) = match r.read(wire::uvarint) {
                Ok(x) => x,
                Err(e) => {
                    gk.push(self.err_leaf(
                        r,
                        "tag",
                        "uvarint",
                        self.problem(format_args!("{}", e.kind)),
                    ));
                    stopped = true;
                    break;
                }
            };
            let (size, soff, slen) = match r.read(wire::uvarint) {
                Ok(x) => x,
                Err(e) => {
                    gk.push(self.leaf("tag", "uvarint", Value::UInt(tag as u64), toff, tlen, r));
                    gk.push(self.err_leaf(
                        r,
                        "size",
                        "uvarint",
                        self.problem(format_args!("{}", e.kind)),
                    ));
                    stopped = true;
                    break;
                }
            };
            let known = plan.tagged_field(tag).map(|i| &fields[i]);
            let label: &'a str = match known {
                Some(f) => self.name_of(f),
                None => self.cx.label(format_args!("unknown tag {tag}")),
            };
            let tty = self.cx.label(format_args!("tag {tag}"));
            let mut tn = Node::new(label, tty, NodeKind::Group, start);
            tn.buffer = r.buffer;
            tn.region = Region::TaggedFields;
            let mut tk = self.cx.vec();
            tk.push(self.leaf("tag", "uvarint", Value::UInt(tag as u64), toff, tlen, r));
            tk.push(self.leaf("size", "uvarint", Value::UInt(size as u64), soff, slen, r));
            let Some(mut sub) = r.split(size as usize) else {
                let m = self.problem(format_args!(
                    "tagged field size {size} exceeds the {} bytes left",
                    r.left()
                ));
                tk.push(self.err_leaf(r, "data", "bytes", m));
                tn.length = r.pos - start;
                tn.children = self.cx.seal(tk);
                gk.push(tn);
                stopped = true;
                break;
            };
            match known {
                Some(f) => {
                    let res = self.field(&mut sub, f);
                    let (node, ok) = match res {
                        Ok(n) => (n, true),
                        Err(n) => (n, false),
                    };
                    tk.push(node);
                    if ok && sub.left() > 0 {
                        let m = self.problem(format_args!(
                            "{} bytes left over in tagged field {tag}",
                            sub.left()
                        ));
                        tk.push(self.err_leaf(&mut sub, "unread", "bytes", m));
                    }
                }
                None => {
                    let data = sub.rest;
                    tk.push(self.leaf("data", "bytes", Value::Bytes(data), sub.pos, data.len(), r));
                }
            }
            tn.length = r.pos - start;
            tn.children = self.cx.seal(tk);
            gk.push(tn);
        }
        group.length = r.pos - off;
        group.children = self.cx.seal(gk);
        out.push(group);
        if stopped {
            Err(Stop)
        } else {
            Ok(())
        }
    }

    /// Reads one field (present in this version, not tagged here).
    ///
    /// # Errors
    /// The partial node, with the error attached, when the walk must stop.
    pub fn field(&mut self, r: &mut Reader<'a>, f: &'a Field) -> Result<Node<'a>, Node<'a>> {
        self.field_in(r, f, None, None)
    }

    /// [`Walk::field`], with the fields of `f`'s struct and their plan when a plan found
    /// them (`None`: looked up by name).
    fn field_in(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        sub: Option<&'a [Field]>,
        sub_plan: Option<&Plan>,
    ) -> Result<Node<'a>, Node<'a>> {
        let name = self.name_of(f);
        let mut n = match &f.ty {
            FieldType::Prim(p) => self.prim(r, f, *p, name, self.field_flexible(f))?,
            FieldType::Struct(s) => self.struct_field(r, f, s, name, sub, sub_plan)?,
            FieldType::Array(inner) => self.array(r, f, inner, name, sub, sub_plan)?,
        };
        if let Some(a) = &f.about {
            n.description = Some(a.as_str());
        }
        self.cx.topics.observe(&self.def.name, f, &n);
        Ok(n)
    }

    fn prim_label(&self, f: &'a Field, p: Prim, flexible: bool) -> &'a str {
        if !self.guide_style {
            // An array element is labelled with the element type (`string`, not `[]string`).
            return match f.ty {
                FieldType::Array(_) => p.as_str(),
                _ => f.type_name.as_str(),
            };
        }
        let base = p.as_str();
        if !matches!(p, Prim::String | Prim::Bytes | Prim::Records) {
            return base;
        }
        match (p, flexible, self.nullable(f)) {
            (Prim::String, false, false) => "string",
            (Prim::String, false, true) => "nullable_string",
            (Prim::String, true, false) => "compact_string",
            (Prim::String, true, true) => "compact_nullable_string",
            (Prim::Bytes, false, false) => "bytes",
            (Prim::Bytes, false, true) => "nullable_bytes",
            (Prim::Bytes, true, false) => "compact_bytes",
            (Prim::Bytes, true, true) => "compact_nullable_bytes",
            (_, false, false) => "records",
            (_, false, true) => "nullable_records",
            (_, true, false) => "compact_records",
            (_, true, true) => "compact_nullable_records",
        }
    }

    fn prim(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        p: Prim,
        name: &'a str,
        flexible: bool,
    ) -> Result<Node<'a>, Node<'a>> {
        let ty = self.prim_label(f, p, flexible);
        macro_rules! fixed {
            ($parser:path, $wrap:expr) => {
                match r.read($parser) {
                    Ok((v, off, len)) => {
                        let v = $wrap(v);
                        self.leaf(name, ty, v, off, len, r)
                    }
                    Err(e) => {
                        return Err(self.err_leaf(
                            r,
                            name,
                            ty,
                            self.problem(format_args!("{}: {}", name, e.kind)),
                        ))
                    }
                }
            };
        }
        let mut n = match p {
            Prim::Bool => fixed!(wire::boolean, Value::Bool),
            Prim::Int8 => fixed!(wire::int8, |v: i8| Value::Int(v as i64)),
            Prim::Int16 => fixed!(wire::int16, |v: i16| Value::Int(v as i64)),
            Prim::Uint16 => fixed!(wire::uint16, |v: u16| Value::UInt(v as u64)),
            Prim::Int32 => fixed!(wire::int32, |v: i32| Value::Int(v as i64)),
            Prim::Uint32 => fixed!(wire::uint32, |v: u32| Value::UInt(v as u64)),
            Prim::Int64 => fixed!(wire::int64, Value::Int),
            Prim::Float64 => fixed!(wire::float64, Value::Float),
            Prim::Uuid => fixed!(wire::uuid, Value::Uuid),
            Prim::String => return self.string(r, f, name, ty, flexible),
            Prim::Bytes | Prim::Records => return self.bytes(r, f, p, name, ty, flexible),
        };
        if let Value::Int(v) = n.value {
            if p == Prim::Int16 && f.role.has(Role::ERROR_CODE) {
                // The reference page leaves NONE (0) unannotated; every other code is named.
                if v != 0 {
                    n.annotation = Some(match error_name(v as i16) {
                        Some(e) => e,
                        None => self.cx.label(format_args!("unknown error code {v}")),
                    });
                }
            } else if p == Prim::Int16 && f.role.has(Role::API_KEY) {
                n.annotation = Some(self.cx.schema.api_name(v as i16).unwrap_or("unknown API"));
            } else if v == -1 && f.role.has(Role::NONE_IF_MINUS_ONE) {
                n.annotation = Some("none");
            }
        }
        Ok(n)
    }

    fn string(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        name: &'a str,
        ty: &'a str,
        flexible: bool,
    ) -> Result<Node<'a>, Node<'a>> {
        let prefix = len_prefix(flexible, LenPrefix::Int16);
        let ((len, data), off, n) = match r.read(wire::sized(prefix)) {
            Ok(x) => x,
            Err(e) => {
                let m = self.problem(format_args!("{}: {}", name, e.kind));
                return Err(self.err_leaf(r, name, ty, m));
            }
        };
        let ann = self.len_note(len.raw, flexible, super::texts::int16_len);
        let mut node = self.leaf(name, ty, Value::Null, off, n, r).annotate(ann);
        match data {
            None => {
                if !self.nullable(f) {
                    node.set_error(self.null_error(f));
                }
            }
            Some(b) => match std::str::from_utf8(b) {
                Ok(s) => {
                    node.value = Value::Str(s);
                    // `protocolType` of a `__consumer_offsets` GroupMetadataValue.
                    let group_value =
                        self.def.name == "GroupMetadataValue" && f.name == "protocolType";
                    if f.role.has(Role::PROTOCOL_TYPE) || group_value {
                        self.protocol_type = Some(s);
                    }
                }
                Err(_) => {
                    node.value = Value::Bytes(b);
                    node.set_error(self.problem(format_args!("{} is not valid UTF-8", f.name)));
                }
            },
        }
        Ok(node)
    }

    fn bytes(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        p: Prim,
        name: &'a str,
        ty: &'a str,
        flexible: bool,
    ) -> Result<Node<'a>, Node<'a>> {
        let prefix = len_prefix(flexible, LenPrefix::Int32);
        let start = r.pos;
        let (len, loff, llen) = match r.read(wire::length(prefix)) {
            Ok(x) => x,
            Err(e) => {
                let m = self.problem(format_args!("{}: {}", name, e.kind));
                return Err(self.err_leaf(r, name, ty, m));
            }
        };
        let ann = self.len_note(len.raw, flexible, super::texts::int32_len);
        let Some(size) = len.len else {
            let mut node = self
                .leaf(name, ty, Value::Null, loff, llen, r)
                .annotate(ann);
            if !self.nullable(f) {
                node.set_error(self.null_error(f));
            }
            return Ok(node);
        };
        let fits = size <= r.left() as u64;
        let Some(mut sub) = fits.then(|| r.split(size as usize)).flatten() else {
            let m = self.problem(format_args!(
                "{}: length {} exceeds the {} bytes left",
                name,
                size,
                r.left()
            ));
            let mut node = self.leaf(name, ty, Value::None, start, 0, r).annotate(ann);
            node.kind = NodeKind::Group;
            let mut nk = self.cx.vec();
            nk.push(self.leaf(
                "length",
                prefix_label(prefix),
                Value::Int(len.raw),
                loff,
                llen,
                r,
            ));
            nk.push(self.err_leaf(r, "data", "bytes", m));
            node.length = r.pos - start;
            node.children = self.cx.seal(nk);
            return Err(node);
        };
        let data = sub.rest;
        let nested = if p == Prim::Records {
            let snapshot = self.def.name == "FetchSnapshotResponse";
            if snapshot && self.cx.topics.position == Some(0) && self.cx.topics.topic.is_some() {
                // A snapshot's first chunk starts at its first batch.
                Some(records::decode_records(self.cx, &mut sub, true))
            } else if snapshot || f.role.has(Role::UNALIGNED_RECORDS) {
                None
            } else {
                let partial_ok = matches!(
                    self.def.name.as_str(),
                    "FetchResponse" | "ShareFetchResponse"
                );
                Some(records::decode_records(self.cx, &mut sub, partial_ok))
            }
        } else if data.is_empty() {
            None
        } else {
            self.nested(&mut sub, f).map(|n| vec![n])
        };
        match nested {
            None => {
                let mut node = self
                    .leaf(name, ty, Value::Bytes(data), start, r.pos - start, r)
                    .annotate(ann);
                if f.role.has(Role::CLIENT_HOST_ADDRESS) {
                    // Envelope: the original client's address as raw IPv4/IPv6 bytes.
                    let ip: Option<std::net::IpAddr> = match data.len() {
                        4 => <[u8; 4]>::try_from(data).ok().map(Into::into),
                        16 => <[u8; 16]>::try_from(data).ok().map(Into::into),
                        _ => None,
                    };
                    if let (Some(ip), Some(a)) = (ip, node.annotation) {
                        node.annotation = Some(self.cx.fmt(format_args!("{a}, {ip}")));
                    }
                }
                if p == Prim::Records {
                    node.region = Region::RecordBatch;
                }
                Ok(node)
            }
            Some(children) => {
                let mut node = self.leaf(name, ty, Value::None, start, r.pos - start, r);
                node.kind = NodeKind::Group;
                if p == Prim::Bytes {
                    node.value = Value::Bytes(data);
                }
                let l = self.length_leaf(prefix, len.raw, loff, llen, r, "compact, len+1");
                let mut nk = self.cx.vec();
                nk.push(l);
                let mut children = children;
                nk.append(&mut children);
                self.cx.recycle(children);
                node.children = self.cx.seal(nk);
                Ok(node)
            }
        }
    }

    /// A nested structure inside a bytes field, when Kafka puts one there.
    fn nested(&mut self, sub: &mut Reader<'a>, f: &'a Field) -> Option<Node<'a>> {
        let mut pt = self.protocol_type.or(self.hints.protocol_type.as_deref());
        let data_name = match (self.def.name.as_str(), f.name.as_str()) {
            ("JoinGroupRequest", "Metadata") | ("JoinGroupResponse", "Metadata") => {
                "ConsumerProtocolSubscription"
            }
            ("SyncGroupRequest", "Assignment") | ("SyncGroupResponse", "Assignment") => {
                "ConsumerProtocolAssignment"
            }
            // `__consumer_offsets`: a classic group's members, by the group's
            // `protocolType` (read before its members).
            ("GroupMetadataValue", "subscription") => "ConsumerProtocolSubscription",
            ("GroupMetadataValue", "assignment") => "ConsumerProtocolAssignment",
            // A consumer group's (KIP-848) classic members: their protocols are the
            // consumer protocol's (the coordinator parses them as such to join them).
            ("ConsumerGroupMemberMetadataValue", "Metadata") => {
                pt = Some("consumer");
                "ConsumerProtocolSubscription"
            }
            ("EnvelopeRequest", "RequestPrincipal") => "DefaultPrincipalData",
            ("EnvelopeRequest", "RequestData") => {
                return Some(super::nested_request(self.cx, sub));
            }
            _ => return None,
        };
        let must_fit = match pt {
            Some("consumer") => false,
            Some(_) => return None,
            None => true,
        };
        let mut trial = *sub;
        let node = decode_versioned_data(self.cx, data_name, &mut trial, data_name)?;
        let ok = node_ok(&node) && trial.left() == 0;
        if must_fit && !ok {
            return None;
        }
        *sub = trial;
        let mut node = node;
        if sub.left() > 0 {
            // Kafka ignores what follows a consumer-protocol struct it understands.
            let rest = sub.rest;
            let mut t = Node::leaf(
                "trailing bytes",
                "bytes",
                Value::Bytes(rest),
                sub.pos,
                rest.len(),
            );
            t.buffer = sub.buffer;
            t.set_warning(
                self.cx
                    .fmt(format_args!("{} bytes after {data_name}", rest.len())),
            );
            sub.split(rest.len());
            node.length += t.length;
            let mut nk = self.cx.vec();
            nk.extend(
                std::mem::take(&mut node.children)
                    .iter_mut()
                    .map(std::mem::take),
            );
            nk.push(t);
            node.children = self.cx.seal(nk);
        }
        node.set_region(self.region);
        Some(node)
    }

    fn struct_field(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        s: &'a str,
        name: &'a str,
        sub: Option<&'a [Field]>,
        sub_plan: Option<&Plan>,
    ) -> Result<Node<'a>, Node<'a>> {
        let start = r.pos;
        let mut node = Node::new(name, f.type_name.as_str(), NodeKind::Struct, start);
        node.buffer = r.buffer;
        node.region = self.region;
        let mut nk = self.cx.vec();
        if self.nullable(f) {
            match r.read(wire::int8) {
                Ok((m, off, len)) => {
                    nk.push(
                        self.leaf("present", "int8", Value::Int(m as i64), off, len, r)
                            .annotate(if m < 0 { "null" } else { "present" }),
                    );
                    if m < 0 {
                        node.value = Value::Null;
                        node.length = r.pos - start;
                        node.children = self.cx.seal(nk);
                        return Ok(node);
                    }
                }
                Err(e) => {
                    nk.push(self.err_leaf(
                        r,
                        "present",
                        "int8",
                        self.problem(format_args!("{}", e.kind)),
                    ));
                    node.length = r.pos - start;
                    node.children = self.cx.seal(nk);
                    return Err(node);
                }
            }
        }
        let Some(fields) = sub.or_else(|| struct_fields_of(self.def, f, s)) else {
            let m = self.problem(format_args!("struct {s} is not defined"));
            nk.push(self.err_leaf(r, "unread", "bytes", m));
            node.length = r.pos - start;
            node.children = self.cx.seal(nk);
            return Err(node);
        };
        match sub_plan.filter(|_| sub.is_some()) {
            Some(p) => self.struct_planned(r, node, nk, fields, p),
            None => self.struct_body(r, node, nk, fields),
        }
    }

    /// Walks a struct's `fields` into `node` (whose offset is where the struct starts)
    /// after the children already in `kids`, sets its length, and hands it back, as
    /// `Err` when an error stopped the walk.
    fn struct_body(
        &mut self,
        r: &mut Reader<'a>,
        node: Node<'a>,
        kids: Vec<Node<'a>>,
        fields: &'a [Field],
    ) -> Result<Node<'a>, Node<'a>> {
        let plan = self.def.plan(fields, self.version, self.flexible);
        self.struct_planned(r, node, kids, fields, &plan)
    }

    /// [`Walk::struct_body`] by `fields`' plan (an array's elements share one).
    fn struct_planned(
        &mut self,
        r: &mut Reader<'a>,
        mut node: Node<'a>,
        mut kids: Vec<Node<'a>>,
        fields: &'a [Field],
        plan: &Plan,
    ) -> Result<Node<'a>, Node<'a>> {
        let res = self.planned(
            r,
            fields,
            plan,
            &mut kids,
            "number of tagged fields in this struct",
        );
        node.length = r.pos - node.offset;
        node.children = self.cx.seal(kids);
        match res {
            Ok(()) => Ok(node),
            Err(Stop) => Err(node),
        }
    }

    fn array(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        inner: &'a FieldType,
        name: &'a str,
        sub: Option<&'a [Field]>,
        sub_plan: Option<&Plan>,
    ) -> Result<Node<'a>, Node<'a>> {
        let start = r.pos;
        let flexible = self.field_flexible(f);
        let prefix = len_prefix(flexible, LenPrefix::Int32);
        let mut node = Node::new(name, f.type_name.as_str(), NodeKind::Array, start);
        node.buffer = r.buffer;
        node.region = self.region;
        let (len, off, llen) = match r.read(wire::length(prefix)) {
            Ok(x) => x,
            Err(e) => {
                let l = self.err_leaf(
                    r,
                    "length",
                    prefix_label(prefix),
                    self.problem(format_args!("{}", e.kind)),
                );
                node.children = self.cx.arena.nodes([l]);
                node.length = r.pos - start;
                return Err(node);
            }
        };
        let mut l = self.length_leaf(prefix, len.raw, off, llen, r, "compact, n+1");
        let Some(count) = len.len else {
            node.value = Value::Null;
            if !self.nullable(f) {
                l.set_error(self.null_error(f));
            }
            node.children = self.cx.arena.nodes([l]);
            node.length = r.pos - start;
            return Ok(node);
        };
        let full = self.cx.opts.detail == Detail::Full;
        l.description = (full || self.guide_style).then(|| match (count, self.cx.opts.page_mode) {
            (1, true) => "one sample element follows",
            (1, false) => "1 element follows",
            (n, _) => self.cx.fmt(format_args!("{n} elements follow")),
        });
        node.value = Value::Count(count);
        let mut nk = self.cx.vec();
        if self.keeps(None, &l) {
            nk.push(l);
        }
        let elem_struct = match inner {
            FieldType::Struct(s) => {
                Some((s.as_str(), sub.or_else(|| struct_fields_of(self.def, f, s))))
            }
            _ => None,
        };
        // One plan for every element of an array of structs: the one the parent plan
        // keeps for it, or looked up.
        let looked_up;
        let elem_plan: Option<&Plan> = match (elem_struct, sub_plan.filter(|_| sub.is_some())) {
            (Some((_, Some(_))), Some(p)) => Some(p),
            (Some((_, Some(fs))), None) => {
                looked_up = self.def.plan(fs, self.version, self.flexible);
                Some(&looked_up)
            }
            _ => None,
        };
        let min = match (&elem_plan, elem_struct) {
            (Some(p), _) => p.min_size,
            (None, Some(_)) => 0,
            (None, None) => {
                crate::schema::plan::min_size(self.def, inner, f, self.version, self.flexible, 0)
            }
        } as u64;
        if count.saturating_mul(min.max(1)) > r.left() as u64 && min > 0 {
            let m = self.problem(format_args!(
                "{}: {} cannot fit in the {} bytes left",
                name,
                Plural(count, "element"),
                r.left()
            ));
            nk.push(self.err_leaf(r, "unread", "bytes", m));
            node.length = r.pos - start;
            node.children = self.cx.seal(nk);
            return Err(node);
        }
        // Counted against the message's node budget: the element and its fields.
        let weight = match elem_struct {
            Some((_, Some(fs))) => 1 + fs.len(),
            _ => 1,
        };
        if full {
            let room = (self.cx.budget_left() / weight + 1) as u64;
            nk.reserve(count.min(r.left() as u64 + 1).min(room) as usize);
        }
        let mut i = 0;
        let mut in_full = false;
        while i < count {
            let foldable = self.cx.opts.fold_frame_arrays || r.buffer != 0;
            if self.cx.budget_left() == 0 && !in_full && foldable {
                let (k, fold) = self.fold_elements(r, f, inner, elem_struct, name, i, count);
                i += k;
                if k > 0 {
                    nk.push(fold);
                }
                // Folding stops before an element whose error ends the walk: that one
                // is decoded in full below, error and all.
                in_full = true;
                continue;
            }
            self.cx.spend(weight);
            let base: &'a str = match elem_struct {
                Some((s, _)) => s,
                None => name,
            };
            // Errors inside a primitive element name it (`Topics[3]: ...`); a struct
            // element's errors name its fields, and the summary looks at what a struct
            // element's name starts with, not its index.
            // A trial decode's names are never read.
            let indexed =
                !self.cx.opts.trial && (full || self.guide_style || elem_struct.is_none());
            let ename: &'a str = if indexed {
                self.cx.fmt(format_args!("{base}[{i}]"))
            } else {
                base
            };
            let res = match (inner, elem_struct) {
                (FieldType::Prim(p), _) => self.prim(r, f, *p, ename, flexible),
                (FieldType::Struct(s), Some((_, Some(fields)))) => {
                    let mut en = Node::new(ename, s.as_str(), NodeKind::Struct, r.pos);
                    en.buffer = r.buffer;
                    en.region = self.region;
                    let ek = self.cx.vec();
                    match &elem_plan {
                        Some(p) => self.struct_planned(r, en, ek, fields, p),
                        None => self.struct_body(r, en, ek, fields),
                    }
                }
                _ => Err(self.err_leaf(
                    r,
                    ename,
                    "bytes",
                    self.problem(format_args!(
                        "element type {} is not supported",
                        f.type_name
                    )),
                )),
            };
            match res {
                Ok(n) => {
                    // A primitive element is a value of `f`; a struct element is a
                    // container, kept for what it holds.
                    if self.keeps(elem_struct.is_none().then_some(f), &n) {
                        nk.push(n)
                    }
                }
                Err(n) => {
                    nk.push(n);
                    node.length = r.pos - start;
                    node.children = self.cx.seal(nk);
                    return Err(node);
                }
            }
            i += 1;
            in_full = false;
        }
        node.length = r.pos - start;
        node.children = self.cx.seal(nk);
        Ok(node)
    }

    /// Elements `first..count` of array field `f`, past the message's node budget: each
    /// is read and checked as the walk reads it (fixed-size ones all at once: the count
    /// was checked against the bytes left; others decoded into a scratch arena emptied
    /// after each), counted, and stand as one leaf over their bytes, `Name[i..j]` of
    /// type `folded`, valued with their count, with an error (a warning) naming the
    /// first error (warning) among them. Folding stops before an element whose error
    /// would end the walk. Returns how many elements were folded, and the leaf.
    #[allow(clippy::too_many_arguments)]
    fn fold_elements(
        &mut self,
        r: &mut Reader<'a>,
        f: &'a Field,
        inner: &'a FieldType,
        elem_struct: Option<(&'a str, Option<&'a [Field]>)>,
        name: &'a str,
        first: u64,
        count: u64,
    ) -> (u64, Node<'a>) {
        let start = r.pos;
        let flexible = self.field_flexible(f);
        let mut i = first;
        let mut found = super::Folded::default();
        match inner {
            FieldType::Prim(p) if fixed_size(*p).is_some() => {
                let size = fixed_size(*p).unwrap_or(1) as u64;
                let n = (count - first).saturating_mul(size).min(r.left() as u64);
                r.split(n as usize);
                i = first + n / size;
            }
            _ => {
                let scratch = &mut crate::tree::Buffers::new();
                while i < count && r.left() > 0 {
                    scratch.reset();
                    let mut scx = Cx::new(self.cx.schema, scratch, self.cx.opts);
                    scx.depth = self.cx.depth;
                    let mut sr = Reader {
                        arena: scratch,
                        ..*r
                    };
                    let mut w = Walk {
                        cx: &mut scx,
                        def: self.def,
                        version: self.version,
                        flexible: self.flexible,
                        guide_style: self.guide_style,
                        region: self.region,
                        hints: self.hints.clone(),
                        protocol_type: self.protocol_type,
                    };
                    let res = match (inner, elem_struct) {
                        (FieldType::Prim(p), _) => w.prim(&mut sr, f, *p, name, flexible),
                        (FieldType::Struct(s), Some((_, Some(fields)))) => {
                            let en = Node::new(name, s.as_str(), NodeKind::Struct, sr.pos);
                            let ek = w.cx.vec();
                            w.struct_body(&mut sr, en, ek, fields)
                        }
                        _ => break,
                    };
                    let Ok(n) = res else {
                        break;
                    };
                    found.note(i, &n);
                    let used = r.left() - sr.left();
                    r.split(used);
                    i += 1;
                }
            }
        }
        let folded = i - first;
        let base = elem_struct.map_or(name, |(s, _)| s);
        let mut n = found.leaf(
            r,
            base,
            "element",
            (first, folded),
            start,
            self.cx.opts.max_nodes,
        );
        n.region = self.region;
        (folded, n)
    }
}

fn prefix_label(p: LenPrefix) -> &'static str {
    match p {
        LenPrefix::Int16 => "int16",
        LenPrefix::Int32 => "int32",
        LenPrefix::Compact => "uvarint",
        LenPrefix::Varint => "varint",
    }
}

/// Whether a node and its descendants carry no error.
pub fn node_ok(n: &Node<'_>) -> bool {
    let mut ok = true;
    n.walk(&mut |x, _| ok &= x.error().is_none());
    ok
}

/// Decodes a data definition written as `int16 version` followed by the struct at that
/// version (the consumer protocol's framing), as a node named `node_name`. Returns
/// `None` when the version prefix cannot be read or names no known version.
pub fn decode_versioned_data<'a>(
    cx: &mut Cx<'a>,
    name: &str,
    r: &mut Reader<'a>,
    node_name: &'a str,
) -> Option<Node<'a>> {
    let start = r.pos;
    let mut probe = *r;
    let (v, off, len) = probe.read(wire::int16).ok()?;
    let defn = cx.schema.resolve_name(name, v).or_else(|| {
        // A newer version than we know: Kafka reads it with the newest version it has.
        let all = cx.schema.by_name(name);
        all.into_iter()
            .filter(|d| !d.def.valid_versions.is_empty() && d.def.valid_versions.hi < v)
            .max_by_key(|d| d.def.valid_versions.hi)
    })?;
    let use_v = if defn.def.valid_versions.contains(v) {
        v
    } else {
        defn.def.valid_versions.hi
    };
    *r = probe;
    let ty = cx.fmt(format_args!("{} v{}", defn.def.name, v));
    let mut node = Node::new(node_name, ty, NodeKind::Group, start);
    node.buffer = r.buffer;
    let mut vl = Node::leaf("version", "int16", Value::Int(v as i64), off, len);
    vl.buffer = r.buffer;
    if use_v != v {
        vl.annotation = Some(cx.fmt(format_args!("read as v{use_v}")));
    }
    let mut nk = cx.vec();
    nk.push(vl);
    let def = &defn.def;
    let mut w = Walk::new(cx, def, use_v, Region::RequestBody);
    let _ = w.fields(
        r,
        &def.fields,
        &mut nk,
        "number of tagged fields in this struct",
    );
    node.length = r.pos - start;
    node.children = cx.seal(nk);
    Some(node)
}

/// Decodes one struct-shaped data definition (`kind: data`, such as
/// `LeaderChangeMessage`, `ConsumerProtocolSubscription`) at `version` from `r`, as a node
/// named `node_name`. Errors are attached inside the returned node; an unknown name or
/// version gives a raw leaf with an error.
pub fn decode_data<'a>(
    cx: &mut Cx<'a>,
    name: &str,
    version: i16,
    r: &mut Reader<'a>,
    node_name: &'a str,
) -> Node<'a> {
    let start = r.pos;
    let Some(defn) = cx.schema.resolve_name(name, version) else {
        let m = cx.fmt(format_args!(
            "{name} has no version {version} in the schema"
        ));
        let mut n = r.error_leaf(node_name, "bytes", m);
        n.value = Value::Bytes(&[]);
        return n;
    };
    let def = &defn.def;
    let ty = cx.fmt(format_args!("{} v{}", def.name, version));
    let mut node = Node::new(node_name, ty, NodeKind::Group, start);
    node.buffer = r.buffer;
    let mut nk = cx.vec();
    let mut w = Walk::new(cx, def, version, Region::Record);
    let _ = w.fields(
        r,
        &def.fields,
        &mut nk,
        "number of tagged fields in this struct",
    );
    node.length = r.pos - start;
    node.children = cx.seal(nk);
    node
}
