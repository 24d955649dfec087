//! The display filter's grammar, parsed with nom.
//!
//! ```text
//! expr     := and ( ("||" | "or") and )*
//! and      := unary ( ("&&" | "and") unary )*
//! unary    := ("!" | "not") unary | "(" expr ")" | test
//! test     := NAME [ relop value | "in" set | "contains" value | "matches" value ]
//! relop    := "==" | "eq" | "any_eq" | "===" | "all_eq" | "!=" | "ne" | "all_ne" | "!=="
//!           | "~=" | "any_ne" | ">" | "gt" | ">=" | "ge" | "<" | "lt" | "<=" | "le"
//! set      := "{" item ( [","] item )* "}"      item := value [ ".." value ]
//! value    := "quoted string" | bare-word (number, number with unit, name, address, hex)
//! ```
//!
//! Keywords are case-insensitive. Every failure carries the byte offset it was found at;
//! [`super::Filter::parse`] turns it into a 1-based column.

use nom::branch::alt;
use nom::bytes::complete::{tag, tag_no_case, take_while1};
use nom::character::complete::{char, multispace0};
use nom::combinator::{not, peek};
use nom::error::{ErrorKind, ParseError};
use nom::sequence::terminated;
use nom::{IResult, Parser};

/// A parse failure: where (the input left at that point) and what was expected.
#[derive(Debug)]
pub struct PErr<'a> {
    /// The input left where the failure was found.
    pub at: &'a str,
    /// What went wrong, when a rule said so.
    pub msg: Option<String>,
}

impl<'a> ParseError<&'a str> for PErr<'a> {
    fn from_error_kind(at: &'a str, _kind: ErrorKind) -> Self {
        PErr { at, msg: None }
    }
    fn append(_: &'a str, _: ErrorKind, other: Self) -> Self {
        other
    }
    fn or(self, other: Self) -> Self {
        // Keep the failure that got further into the input, then the one that says why.
        match self.at.len().cmp(&other.at.len()) {
            std::cmp::Ordering::Less => self,
            std::cmp::Ordering::Greater => other,
            std::cmp::Ordering::Equal if self.msg.is_some() => self,
            std::cmp::Ordering::Equal => other,
        }
    }
}

type R<'a, T> = IResult<&'a str, T, PErr<'a>>;

fn fail<'a, T>(at: &'a str, msg: impl Into<String>) -> R<'a, T> {
    Err(nom::Err::Failure(PErr {
        at,
        msg: Some(msg.into()),
    }))
}

/// A literal as written: its text (escapes resolved) and whether it was quoted. `at` is
/// its byte offset in the expression.
#[derive(Clone, Debug, PartialEq)]
pub struct RawLit {
    /// The text.
    pub text: String,
    /// Written in double quotes.
    pub quoted: bool,
    /// Byte offset in the expression.
    pub at: usize,
}

/// One element of a set: a value or an inclusive range.
#[derive(Clone, Debug, PartialEq)]
pub enum RawItem {
    /// `{x}`
    One(RawLit),
    /// `{lo..hi}`
    Range(RawLit, RawLit),
}

/// A relation as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelOp {
    /// `==`: some occurrence equals.
    AnyEq,
    /// `===`: every occurrence equals (and there is one).
    AllEq,
    /// `!=`: every occurrence differs (and there is one).
    AllNe,
    /// `~=`: some occurrence differs.
    AnyNe,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `contains`
    Contains,
    /// `matches` (a regular expression, case-insensitive)
    Matches,
}

/// The right-hand side of a test.
#[derive(Clone, Debug, PartialEq)]
pub enum Rhs {
    /// A relation with a value.
    Rel(RelOp, RawLit),
    /// `in {...}`
    In(Vec<RawItem>),
}

/// The expression tree as parsed (names not resolved yet).
#[derive(Clone, Debug, PartialEq)]
pub enum RawExpr {
    /// `a && b && ...`: a chain of two or more terms, held flat (a chain of any length
    /// costs no depth of recursion to lower, evaluate or drop).
    And(Vec<RawExpr>),
    /// `a || b || ...`, flat as [`RawExpr::And`].
    Or(Vec<RawExpr>),
    /// `!a`
    Not(Box<RawExpr>),
    /// `NAME [rhs]`, with the name's byte offset.
    Test {
        /// The field or property name.
        name: String,
        /// Byte offset of the name.
        at: usize,
        /// The relation, or none for an existence test.
        rhs: Option<Rhs>,
    },
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-'
}

fn keyword<'a>(w: &'static str) -> impl Parser<&'a str, Output = &'a str, Error = PErr<'a>> {
    terminated(
        tag_no_case(w),
        not(peek(nom::character::complete::satisfy(is_ident))),
    )
}

const RESERVED: [&str; 18] = [
    "and", "or", "not", "in", "contains", "matches", "eq", "ne", "any_eq", "all_eq", "all_ne",
    "any_ne", "gt", "ge", "lt", "le", "true", "false",
];

/// Parses a whole expression; `full` is the same text, for offsets.
pub fn expression(full: &str) -> Result<RawExpr, PErr<'_>> {
    match or_expr(full, full) {
        Ok((rest, e)) => {
            let (rest, _) = multispace0::<_, PErr>(rest).unwrap_or((rest, ""));
            if rest.is_empty() {
                Ok(e)
            } else {
                Err(PErr {
                    at: rest,
                    msg: Some(format!(
                        "unexpected {}: expected 'and', 'or' or the end",
                        quote_token(rest)
                    )),
                })
            }
        }
        Err(nom::Err::Error(e)) | Err(nom::Err::Failure(e)) => Err(e),
        Err(nom::Err::Incomplete(_)) => Err(PErr {
            at: "",
            msg: Some("the expression ends too soon".into()),
        }),
    }
}

fn quote_token(s: &str) -> String {
    let t: String = s
        .chars()
        .take_while(|c| !c.is_whitespace())
        .take(20)
        .collect();
    format!("'{t}'")
}

fn off(full: &str, rest: &str) -> usize {
    full.len() - rest.len()
}

fn or_expr<'a>(full: &'a str, i: &'a str) -> R<'a, RawExpr> {
    binary(full, i, ("||", "or"), and_expr, RawExpr::Or)
}

fn and_expr<'a>(full: &'a str, i: &'a str) -> R<'a, RawExpr> {
    binary(full, i, ("&&", "and"), unary, RawExpr::And)
}

/// `next ( (sym | word) next )*`, read in a loop (no recursion per term) into one flat
/// chain made by `join`; a lone term stays itself.
fn binary<'a>(
    full: &'a str,
    i: &'a str,
    (sym, word): (&'static str, &'static str),
    next: fn(&'a str, &'a str) -> R<'a, RawExpr>,
    join: fn(Vec<RawExpr>) -> RawExpr,
) -> R<'a, RawExpr> {
    let (mut i, first) = next(full, i)?;
    let mut terms = vec![first];
    loop {
        let (j, _) = multispace0(i)?;
        let op: R<'a, &str> = alt((tag(sym), keyword(word))).parse(j);
        match op {
            Ok((k, _)) => {
                let (k, right) = operand(full, k, &format!("'{word}'"), next)?;
                terms.push(right);
                i = k;
            }
            Err(_) => break,
        }
    }
    let e = if terms.len() == 1 {
        terms.pop().expect("one term")
    } else {
        join(terms)
    };
    Ok((i, e))
}

/// The operand after a binary operator: a missing one is a failure that says so.
fn operand<'a>(
    full: &'a str,
    i: &'a str,
    after: &str,
    p: fn(&'a str, &'a str) -> R<'a, RawExpr>,
) -> R<'a, RawExpr> {
    let (j, _) = multispace0(i)?;
    if j.is_empty() {
        return fail(j, format!("expected a test after {after}"));
    }
    p(full, j)
}

/// Deepest nesting of `(` and `not` an expression may have (deeper would exhaust the
/// stack of the parser and of the evaluation).
pub const MAX_NESTING: u32 = 256;

thread_local! {
    /// How deep the parser is in `(` and `not` now.
    static NESTING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// One level of [`NESTING`], left when dropped.
struct Nest;

impl Nest {
    fn enter() -> (Nest, u32) {
        let d = NESTING.with(|n| {
            let d = n.get() + 1;
            n.set(d);
            d
        });
        (Nest, d)
    }
}

impl Drop for Nest {
    fn drop(&mut self) {
        NESTING.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

fn unary<'a>(full: &'a str, i: &'a str) -> R<'a, RawExpr> {
    let (_nest, depth) = Nest::enter();
    if depth > MAX_NESTING {
        return fail(
            i,
            format!("nested deeper than {MAX_NESTING} levels of '(' and 'not'"),
        );
    }
    let (i, _) = multispace0(i)?;
    let neg: R<'a, &str> =
        alt((terminated(tag("!"), not(peek(char('=')))), keyword("not"))).parse(i);
    if let Ok((j, _)) = neg {
        let (k, _) = multispace0(j)?;
        if k.is_empty() {
            return fail(k, "expected a test after 'not'");
        }
        let (k, e) = unary(full, k)?;
        return Ok((k, RawExpr::Not(Box::new(e))));
    }
    if let Ok((j, _)) = char::<_, PErr>('(').parse(i) {
        let (j, _) = multispace0(j)?;
        if j.is_empty() {
            return fail(j, "expected a test after '('");
        }
        let (j, e) = or_expr(full, j)?;
        let (j, _) = multispace0(j)?;
        return match char::<_, PErr>(')').parse(j) {
            Ok((k, _)) => Ok((k, e)),
            Err(_) => fail(
                j,
                format!(
                    "expected ')' to close the '(' at column {}",
                    column(full, off(full, i))
                ),
            ),
        };
    }
    test(full, i)
}

fn test<'a>(full: &'a str, i: &'a str) -> R<'a, RawExpr> {
    let name: R<'a, &str> = take_while1(is_ident).parse(i);
    let Ok((j, name)) = name else {
        return fail(
            i,
            if i.is_empty() {
                "expected a test (a field name, a property, '(' or 'not')".to_string()
            } else {
                format!(
                    "unexpected {}: expected a field name, a property, '(' or 'not'",
                    quote_token(i)
                )
            },
        );
    };
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return fail(
            i,
            format!("'{name}' is not a name: a test starts with a field or property name"),
        );
    }
    if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name)) {
        return fail(i, format!("'{name}' is a keyword, not a field name"));
    }
    let at = off(full, i);
    let (k, _) = multispace0(j)?;
    let Some((k, op)) = relop(k) else {
        return Ok((
            j,
            RawExpr::Test {
                name: name.to_string(),
                at,
                rhs: None,
            },
        ));
    };
    let (k, _) = multispace0(k)?;
    match op {
        None => {
            let (k, items) = set(full, k)?;
            Ok((
                k,
                RawExpr::Test {
                    name: name.to_string(),
                    at,
                    rhs: Some(Rhs::In(items)),
                },
            ))
        }
        Some(op) => {
            let (k, v) = literal(full, k, false)?;
            Ok((
                k,
                RawExpr::Test {
                    name: name.to_string(),
                    at,
                    rhs: Some(Rhs::Rel(op, v)),
                },
            ))
        }
    }
}

/// A relation operator; `Some(None)` is `in`.
fn relop(i: &str) -> Option<(&str, Option<RelOp>)> {
    let sym: [(&str, RelOp); 9] = [
        ("===", RelOp::AllEq),
        ("!==", RelOp::AllNe),
        ("==", RelOp::AnyEq),
        ("!=", RelOp::AllNe),
        ("~=", RelOp::AnyNe),
        (">=", RelOp::Ge),
        ("<=", RelOp::Le),
        (">", RelOp::Gt),
        ("<", RelOp::Lt),
    ];
    for (t, op) in sym {
        if let Some(r) = i.strip_prefix(t) {
            return Some((r, Some(op)));
        }
    }
    let words: [(&str, Option<RelOp>); 14] = [
        ("eq", Some(RelOp::AnyEq)),
        ("any_eq", Some(RelOp::AnyEq)),
        ("all_eq", Some(RelOp::AllEq)),
        ("ne", Some(RelOp::AllNe)),
        ("all_ne", Some(RelOp::AllNe)),
        ("any_ne", Some(RelOp::AnyNe)),
        ("gt", Some(RelOp::Gt)),
        ("ge", Some(RelOp::Ge)),
        ("lt", Some(RelOp::Lt)),
        ("le", Some(RelOp::Le)),
        ("contains", Some(RelOp::Contains)),
        ("matches", Some(RelOp::Matches)),
        ("in", None),
        ("~", Some(RelOp::Matches)),
    ];
    for (w, op) in words {
        let r: R<'_, &str> = keyword(w).parse(i);
        if let Ok((r, _)) = r {
            return Some((r, op));
        }
    }
    None
}

fn is_bare(c: char) -> bool {
    !c.is_whitespace() && !"(){},!=<>~&|\"".contains(c)
}

/// A value: a double-quoted string (escapes `\"`, `\\`, `\n`, `\t`, `\r`, `\xHH`) or a
/// bare word. In a set, a bare word stops before `..`.
fn literal<'a>(full: &'a str, i: &'a str, in_set: bool) -> R<'a, RawLit> {
    let at = off(full, i);
    if let Some(body) = i.strip_prefix('"') {
        let mut text = String::new();
        let mut chars = body.char_indices();
        while let Some((p, c)) = chars.next() {
            match c {
                '"' => {
                    return Ok((
                        &body[p + 1..],
                        RawLit {
                            text,
                            quoted: true,
                            at,
                        },
                    ))
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => text.push('\n'),
                    Some((_, 't')) => text.push('\t'),
                    Some((_, 'r')) => text.push('\r'),
                    Some((q, 'x')) => {
                        let h = body.get(q + 1..q + 3).unwrap_or("");
                        match u8::from_str_radix(h, 16) {
                            Ok(b) if h.len() == 2 => {
                                text.push(char::from(b));
                                chars.next();
                                chars.next();
                            }
                            _ => return fail(&body[q..], "\\x needs two hex digits"),
                        }
                    }
                    Some((_, c)) => text.push(c),
                    None => break,
                },
                c => text.push(c),
            }
        }
        return fail(
            &full[full.len()..],
            format!(
                "the string opened at column {} is not closed",
                column(full, at)
            ),
        );
    }
    let word: R<'a, &str> = take_while1(is_bare).parse(i);
    match word {
        Ok((rest, w)) => {
            let (w, rest) = match (in_set, w.find("..")) {
                (true, Some(p)) => (&w[..p], &i[p..]),
                _ => (w, rest),
            };
            if w.is_empty() {
                return fail(i, "expected a value before '..'");
            }
            Ok((
                rest,
                RawLit {
                    text: w.to_string(),
                    quoted: false,
                    at,
                },
            ))
        }
        Err(_) => fail(
            i,
            if i.is_empty() {
                "expected a value".to_string()
            } else {
                format!("unexpected {}: expected a value", quote_token(i))
            },
        ),
    }
}

fn set<'a>(full: &'a str, i: &'a str) -> R<'a, Vec<RawItem>> {
    let Some(mut i) = i.strip_prefix('{') else {
        return fail(i, "expected '{' after 'in' (a set: {1, 2, 5..9})");
    };
    let open = off(full, i) - 1;
    let mut items = Vec::new();
    loop {
        let (j, _) = multispace0(i)?;
        if let Some(k) = j.strip_prefix('}') {
            if items.is_empty() {
                return fail(j, "an empty set matches nothing: give at least one value");
            }
            return Ok((k, items));
        }
        if j.is_empty() {
            return fail(
                j,
                format!(
                    "expected '}}' to close the set opened at column {}",
                    column(full, open)
                ),
            );
        }
        let (j, lo) = literal(full, j, true)?;
        let (j, item) = match j.strip_prefix("..") {
            Some(k) => {
                let (k, _) = multispace0(k)?;
                let (k, hi) = literal(full, k, true)?;
                (k, RawItem::Range(lo, hi))
            }
            None => (j, RawItem::One(lo)),
        };
        items.push(item);
        let (j, _) = multispace0(j)?;
        i = j.strip_prefix(',').unwrap_or(j);
    }
}

/// The 1-based column (in characters) of byte offset `at` of `full`.
pub fn column(full: &str, at: usize) -> usize {
    full.get(..at.min(full.len()))
        .map_or(at, |p| p.chars().count())
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, rhs: Option<Rhs>, at: usize) -> RawExpr {
        RawExpr::Test {
            name: name.into(),
            at,
            rhs,
        }
    }

    #[test]
    fn filter_parse_precedence_and_sets() {
        let e = expression("a || b && !c").unwrap();
        assert_eq!(
            e,
            RawExpr::Or(vec![
                t("a", None, 0),
                RawExpr::And(vec![
                    t("b", None, 5),
                    RawExpr::Not(Box::new(t("c", None, 11)))
                ])
            ])
        );
        let e = expression("a && b && c || d").unwrap();
        assert_eq!(
            e,
            RawExpr::Or(vec![
                RawExpr::And(vec![t("a", None, 0), t("b", None, 5), t("c", None, 10)]),
                t("d", None, 15)
            ])
        );
        let e = expression("frame in {10..20, 30 40}").unwrap();
        let RawExpr::Test {
            rhs: Some(Rhs::In(items)),
            ..
        } = e
        else {
            panic!("{e:?}")
        };
        assert_eq!(items.len(), 3);
        assert!(matches!(&items[0], RawItem::Range(a, b) if a.text == "10" && b.text == "20"));
        let e = expression(r#"Topic == "a \"b\"" and not (x ~= 1)"#).unwrap();
        assert!(matches!(e, RawExpr::And(..)));
    }

    #[test]
    fn filter_nesting_is_capped() {
        let deep = |n: usize| format!("{}api == 1{}", "(".repeat(n), ")".repeat(n));
        assert!(expression(&deep(200)).is_ok());
        let very = deep(10_000);
        let e = expression(&very).unwrap_err();
        assert!(e.msg.unwrap().contains("nested deeper than 256"));
        let nots = format!("{}api == 1", "not ".repeat(10_000));
        assert!(expression(&nots).is_err());
        // The count goes back down: a later expression parses.
        assert!(expression(&deep(200)).is_ok());
    }

    #[test]
    fn filter_long_chains_are_flat() {
        // 6,000 terms (and 60,000) parse in a loop: no stack overflow, one flat chain.
        for n in [6_000, 60_000] {
            for op in [" && ", " || ", " and "] {
                let src = vec!["api == 1"; n].join(op);
                match expression(&src).unwrap() {
                    RawExpr::And(v) | RawExpr::Or(v) => assert_eq!(v.len(), n),
                    e => panic!("{e:?}"),
                }
            }
        }
    }

    #[test]
    fn filter_parse_errors_point_at_columns() {
        for (src, col, want) in [
            ("Topic ==", 9, "expected a value"),
            ("(a", 3, "close the '(' at column 1"),
            ("a &&", 5, "after 'and'"),
            ("a b", 3, "expected 'and', 'or'"),
            ("x in {1, 2", 11, "close the set opened at column 6"),
            ("Topic == \"abc", 14, "string opened at column 10"),
            ("== 3", 1, "expected a field name"),
            ("and", 1, "keyword"),
        ] {
            let e = expression(src).unwrap_err();
            let c = column(src, src.len() - e.at.len());
            assert_eq!(c, col, "{src}: {e:?}");
            assert!(
                e.msg.as_deref().unwrap_or("").contains(want),
                "{src}: {e:?}"
            );
        }
    }
}
