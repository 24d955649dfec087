//! `kwire read -T fields`: one row a message of the `-e` fields' values (tshark's
//! `-T fields -e NAME -E OPTION`), read from the tree as the display filter reads it
//! ([`crate::filter::occurrences`]).

use crate::filter;
use crate::tree::Message;
use std::io::Write;

/// Which occurrences `-E occurrence=` keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    All,
    First,
    Last,
    Nth(usize),
}

/// `-T fields` output: the `-e` fields and the `-E` options.
#[derive(Clone, Debug)]
pub struct Fields {
    names: Vec<String>,
    header: bool,
    separator: String,
    quote: Option<char>,
    which: Which,
    aggregator: String,
    /// The schema-field columns a tree below the whole one keeps as the whole tree has
    /// them ([`filter::Known::is_light`]), once [`Fields::checked`].
    kept: Vec<String>,
}

/// tshark's `/t` and `/s` for tab and space.
fn sep_value(s: &str) -> String {
    match s {
        "/t" => "\t".into(),
        "/s" => " ".into(),
        s => s.into(),
    }
}

impl Fields {
    /// The fields of `-T fields` (`names`: the `-e` names) with the `-E` options `opts`
    /// (`header=y|n`, `separator=/t|/s|C`, `quote=d|s|n`, `occurrence=f|l|a|N`,
    /// `aggregator=,|/s|C`, as tshark takes them).
    ///
    /// # Errors
    /// An `-E` option tshark does not have, or a value it does not take, as a message.
    pub fn new(names: Vec<String>, opts: &[String]) -> Result<Fields, String> {
        let mut f = Fields {
            kept: Vec::new(),
            names,
            header: false,
            separator: "\t".into(),
            quote: None,
            which: Which::All,
            aggregator: ",".into(),
        };
        for o in opts {
            let bad = || {
                format!("-E {o}: expected header=y|n, separator=/t|/s|C, quote=d|s|n, occurrence=f|l|a|N or aggregator=,|/s|C")
            };
            let (k, val) = o.split_once('=').ok_or_else(bad)?;
            match (k, val) {
                ("header", "y") => f.header = true,
                ("header", "n") => f.header = false,
                ("separator", s) if !s.is_empty() => f.separator = sep_value(s),
                ("quote", "d") => f.quote = Some('"'),
                ("quote", "s") => f.quote = Some('\''),
                ("quote", "n") => f.quote = None,
                ("occurrence", "f") => f.which = Which::First,
                ("occurrence", "l") => f.which = Which::Last,
                ("occurrence", "a") => f.which = Which::All,
                ("occurrence", n) => {
                    f.which = match n.parse::<usize>() {
                        Ok(0) | Err(_) => return Err(bad()),
                        Ok(n) => Which::Nth(n),
                    }
                }
                ("aggregator", s) if !s.is_empty() => f.aggregator = sep_value(s),
                _ => return Err(bad()),
            }
        }
        Ok(f)
    }

    /// These fields, once every `-e` name is known to `schema` (a property, a predicate,
    /// or a field of some definition, as `-Y` takes them).
    ///
    /// # Errors
    /// The first unknown name, with the nearest known names, as a message.
    pub fn checked(mut self, schema: &crate::schema::Schema) -> Result<Fields, String> {
        let known = filter::Known::of(schema);
        for n in &self.names {
            filter::check_name(n, &known).map_err(|(_, m)| format!("-e {n}: {m}"))?;
            if !filter::is_property(n) && known.is_light(n) && !self.kept.contains(n) {
                self.kept.push(n.clone());
            }
        }
        Ok(self)
    }

    /// Whether a column is in the whole tree only (a schema field a lighter tree does
    /// not keep as it is, `record_type`, `error_code`: [`filter::name_needs_full_tree`]),
    /// so messages must be decoded whole.
    pub fn needs_full_tree(&self) -> bool {
        self.names
            .iter()
            .any(|n| filter::name_needs_full_tree(n) && !self.kept.contains(n))
    }

    /// The schema fields a tree below the whole one must keep for these columns
    /// ([`crate::decode::DecodeOptions::keep`]): the columns of primitive fields
    /// ([`filter::Known::is_light`]), once [`Fields::checked`].
    pub fn kept_fields(&self) -> crate::decode::KeptFields {
        crate::decode::KeptFields::new(&self.kept)
    }

    /// Whether every column is one a fact tree gives as the whole tree does
    /// ([`filter::name_on_facts`]: `frame`, `api`, `correlation_id`, `latency`...), so
    /// messages can be decoded by the fact walk.
    pub fn on_facts(&self) -> bool {
        self.names.iter().all(|n| filter::name_on_facts(n))
    }

    fn quoted(&self, s: &str) -> String {
        match self.quote {
            None => s.to_string(),
            Some(q) => {
                let mut o = String::with_capacity(s.len() + 2);
                o.push(q);
                for c in s.chars() {
                    if c == q || c == '\\' {
                        o.push('\\');
                    }
                    o.push(c);
                }
                o.push(q);
                o
            }
        }
    }

    /// The header row, with `-E header=y`.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn header(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.header {
            let cells: Vec<String> = self.names.iter().map(|n| self.quoted(n)).collect();
            writeln!(out, "{}", cells.join(&self.separator))?;
        }
        Ok(())
    }

    /// One message's row.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn row(
        &self,
        m: &Message<'_>,
        ctx: &filter::MessageFacts<'_>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let mut cells = Vec::with_capacity(self.names.len());
        for n in &self.names {
            let occ = filter::occurrences(n, m, ctx);
            let texts: Vec<String> = match self.which {
                Which::All => occ.iter().map(|o| o.text()).collect(),
                Which::First => occ.first().map(|o| o.text()).into_iter().collect(),
                Which::Last => occ.last().map(|o| o.text()).into_iter().collect(),
                Which::Nth(k) => occ.get(k - 1).map(|o| o.text()).into_iter().collect(),
            };
            // Control characters would break the row: they are escaped as in the tree.
            let joined = texts.join(&self.aggregator);
            let safe = if joined.chars().any(char::is_control) {
                let q = super::quote(&joined);
                q[1..q.len() - 1].to_string()
            } else {
                joined
            };
            cells.push(self.quoted(&safe));
        }
        writeln!(out, "{}", cells.join(&self.separator))
    }
}
