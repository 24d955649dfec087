//! `kwire wireshark --out kwire_kafka.lua`: a Wireshark Lua dissector generated from the
//! schema stack, so that it knows every API key and version kwire knows.
//!
//! The output is data plus one interpreter (`src/wireshark/runtime.lua`), not one
//! function per message: Wireshark 4.0 runs Lua 5.2, whose functions hold at most 200
//! local variables. The data are three tables:
//!
//! - `PF_SPECS`: one Wireshark field per API and field name, `kwire.<Api>.<Field>`
//!   (`kwire.Fetch.PartitionIndex`), typed by the Kafka type (`int32` as `FT_INT32`,
//!   `string` as `FT_STRING`, `uuid` as `FT_GUID`, structs and arrays of structs as
//!   `FT_NONE` subtrees, arrays of primitives by their element type). A name used with
//!   two types in one API gets the type's code as a suffix (`kwire.X.Field_i64`).
//! - `ST`: field lists, shared where two structs are the same. A field is
//!   `{name, type, versions lo, hi, nullable lo, hi, tagged lo, hi, tag, field index,
//!   struct, element type, flexible lo, hi}`, with an empty range written `1, 0`, an
//!   open one ending at 32767, and `-1` for no tag or no per-field flexible override.
//! - `APIS[api_key]`: the API name and, for requests (`q`) and responses (`r`), the
//!   definitions best first as the schema stack resolves them (`{valid lo, hi, flexible
//!   lo, hi, ST index}`): Produce v0-v2 from 3.9, v3 and later from the newest release.
//!
//! Headers follow Kafka's rules (request header v2 for flexible versions, v1 otherwise,
//! v0 for ControlledShutdown v0; response header v1 for flexible versions except
//! ApiVersions, always v0), as in [`Schema::request_header_version`].

use crate::schema::{Field, FieldType, MessageDef, MessageKind, Prim, Schema, Versions};
use std::collections::HashMap;
use std::fmt::Write;

/// The interpreter the tables feed.
const RUNTIME: &str = include_str!("wireshark/runtime.lua");

/// How deep struct references are followed (a user's file may name a struct inside
/// itself); deeper lists are empty.
const MAX_DEPTH: usize = 24;

fn code(p: Prim) -> &'static str {
    match p {
        Prim::Bool => "b",
        Prim::Int8 => "i8",
        Prim::Int16 => "i16",
        Prim::Uint16 => "u16",
        Prim::Int32 => "i32",
        Prim::Uint32 => "u32",
        Prim::Int64 => "i64",
        Prim::Float64 => "f64",
        Prim::String => "s",
        Prim::Bytes => "y",
        Prim::Uuid => "u",
        Prim::Records => "r",
    }
}

/// A Lua string literal.
fn lua_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(o, "\\{:03}", c as u32);
            }
            c if c.is_ascii() => o.push(c),
            c => {
                let mut b = [0u8; 4];
                for x in c.encode_utf8(&mut b).bytes() {
                    let _ = write!(o, "\\{x:03}");
                }
            }
        }
    }
    o.push('"');
    o
}

/// A field name as a Wireshark filter-name part: letters, digits and `_`.
fn abbr_part(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() {
        "_".into()
    } else {
        t
    }
}

fn range(v: &Versions) -> (i16, i16) {
    if v.is_empty() {
        (1, 0)
    } else {
        (v.lo, v.hi)
    }
}

#[derive(Default)]
struct Gen {
    /// `(abbrev, display name, kind)`.
    specs: Vec<(String, String, &'static str)>,
    by_abbr: HashMap<String, usize>,
    /// (api, field name) -> the kind first given to `kwire.<Api>.<Field>`.
    kinds: HashMap<(String, String), &'static str>,
    /// Field lists, as Lua text; index 1-based in Lua.
    lists: Vec<String>,
    list_ix: HashMap<String, usize>,
}

impl Gen {
    /// The 1-based index of the Wireshark field for `field` of `api`, of kind `kind`.
    fn pf(&mut self, api: &str, field: &str, kind: &'static str) -> usize {
        let key = (api.to_string(), field.to_string());
        let first = *self.kinds.entry(key).or_insert(kind);
        let mut abbr = format!("kwire.{}.{}", abbr_part(api), abbr_part(field));
        if first != kind {
            abbr = format!("{abbr}_{kind}");
        }
        if let Some(i) = self.by_abbr.get(&abbr) {
            return *i;
        }
        self.specs.push((abbr.clone(), field.to_string(), kind));
        let i = self.specs.len();
        self.by_abbr.insert(abbr, i);
        i
    }

    fn list(&mut self, api: &str, def: &MessageDef, fields: &[Field], depth: usize) -> usize {
        if depth > MAX_DEPTH {
            return 0;
        }
        let mut text = String::from("{");
        for f in fields {
            let (kind, ty, elem, children): (&'static str, &str, &str, Option<&[Field]>) =
                match &f.ty {
                    FieldType::Prim(p) => {
                        let c = code(*p);
                        (if c == "r" { "none" } else { c }, c, "", None)
                    }
                    FieldType::Struct(_) => ("none", "t", "", def.fields_of(f)),
                    FieldType::Array(inner) => match inner.as_ref() {
                        FieldType::Prim(p) => {
                            let c = code(*p);
                            (if c == "r" { "none" } else { c }, "a", c, None)
                        }
                        FieldType::Struct(_) => ("none", "a", "t", def.fields_of(f)),
                        FieldType::Array(_) => ("none", "a", "y", None),
                    },
                };
            let pf = self.pf(api, &f.name, kind);
            let st = match children {
                Some(cs) => self.list(api, def, cs, depth + 1),
                None => 0,
            };
            let (v0, v1) = range(&f.versions);
            let (n0, n1) = range(&f.nullable_versions);
            let (t0, t1) = range(&f.tagged_versions);
            let tag = f.tag.map(i64::from).unwrap_or(-1);
            let (x0, x1) = match f.flexible_versions {
                Some(v) => {
                    let (a, b) = range(&v);
                    (i64::from(a), i64::from(b))
                }
                None => (-1, -1),
            };
            let _ = write!(
                text,
                "{{{},{},{v0},{v1},{n0},{n1},{t0},{t1},{tag},{pf},{st},{},{x0},{x1}}},",
                lua_str(&f.name),
                lua_str(ty),
                lua_str(elem)
            );
        }
        text.push('}');
        if let Some(i) = self.list_ix.get(&text) {
            return *i;
        }
        self.lists.push(text.clone());
        let i = self.lists.len();
        self.list_ix.insert(text, i);
        i
    }
}

/// Generates the dissector for every API key and version of `schema`. `origin` names
/// what it was generated from (written in the file's first lines).
pub fn generate(schema: &Schema, origin: &str) -> String {
    let mut g = Gen::default();
    let mut apis = String::new();
    for key in schema.api_keys() {
        let name = schema.api_name(key).unwrap_or("?").to_string();
        let mut sides = Vec::new();
        for kind in [MessageKind::Request, MessageKind::Response] {
            let mut s = String::from("{");
            for d in schema.serving(kind, key) {
                let (lo, hi) = range(&d.def.valid_versions);
                let (f0, f1) = range(&d.def.flexible_versions);
                let st = g.list(&name, &d.def, &d.def.fields, 0);
                let _ = write!(s, "{{{lo},{hi},{f0},{f1},{st}}},");
            }
            s.push('}');
            sides.push(s);
        }
        let _ = writeln!(
            apis,
            "APIS[{key}] = {{ n = {}, q = {}, r = {} }}",
            lua_str(&name),
            sides[0],
            sides[1]
        );
    }
    let mut out = String::new();
    out.push_str("-- kwire_kafka.lua: a Kafka dissector for Wireshark 4.0 and later (Lua 5.2).\n");
    let _ = writeln!(
        out,
        "-- Generated by `kwire wireshark` from {origin}: do not edit; generate it again."
    );
    out.push_str(
        "-- Install: copy into Wireshark's personal Lua plugins folder (Help > About >\n\
         -- Folders), or run `tshark -X lua_script:kwire_kafka.lua`. It takes TCP port 9092\n\
         -- (preference kwire.ports) and decrypted TLS on 9093 (kwire.tls_ports); disable\n\
         -- Wireshark's own Kafka dissector for those ports (Analyze > Enabled Protocols).\n\n",
    );
    let _ = writeln!(out, "local PF_SPECS = {{");
    for (abbr, name, kind) in &g.specs {
        let _ = writeln!(
            out,
            "{{{},{},{}}},",
            lua_str(abbr),
            lua_str(name),
            lua_str(kind)
        );
    }
    out.push_str("}\n\nlocal ST = {}\nST[0] = {}\n");
    for (i, l) in g.lists.iter().enumerate() {
        let _ = writeln!(out, "ST[{}] = {l}", i + 1);
    }
    out.push_str("\nlocal APIS = {}\n");
    out.push_str(&apis);
    out.push('\n');
    out.push_str(RUNTIME);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_strings_are_escaped() {
        assert_eq!(lua_str("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(lua_str("\n"), "\"\\010\"");
        assert_eq!(lua_str("é"), "\"\\195\\169\"");
    }

    #[test]
    fn every_api_and_a_field_per_name() {
        let s = Schema::embedded();
        let lua = generate(&s, "test");
        for key in s.api_keys() {
            assert!(lua.contains(&format!("APIS[{key}] = ")), "api_key {key}");
        }
        assert!(lua.contains("{\"kwire.Fetch.PartitionIndex\",\"PartitionIndex\",\"i32\"}"));
        assert!(lua.contains("{\"kwire.Fetch.TopicId\",\"TopicId\",\"u\"}"));
        // Produce: v3+ from the newest release first, then 3.9's v0-v11 (for v0-v2).
        let line = lua.lines().find(|l| l.starts_with("APIS[0] = ")).unwrap();
        assert!(line.contains("q = {{3,"), "{line}");
        assert!(line.contains("},{0,11,9,32767,"), "{line}");
    }
}
