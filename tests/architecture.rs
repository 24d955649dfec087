//! The layering of `src/`, read from the code itself (docs/architecture.md draws it):
//!
//! - the top-level modules of `src/` (`src/X.rs`, `src/X/`) import each other without a
//!   cycle: the graph of `crate::X` paths between them, tests aside, has no loop;
//! - nothing outside `src/cli` imports `cli` (the command line is on top of the library);
//! - nothing outside `src/cli` and `src/main.rs` writes to stderr (`eprint!`,
//!   `eprintln!`, `stderr()`): the library returns its notices and the command line
//!   decides what reaches the terminal.
//!
//! Test code (`tests.rs` files, `#[cfg(test)]` modules) may reach anywhere and is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `code` with comments, string literals and char literals blanked out (their bytes
/// replaced by spaces, so that nothing inside them reads as a path), lifetimes kept.
fn strip(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, s: &[u8]| {
        out.extend(s.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }))
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, 0);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(n) = raw_string_len(rest) {
            blank(&mut out, &rest[..n]);
            i += n;
        } else if rest[0] == b'"' || rest.starts_with(b"b\"") {
            let mut j = if rest[0] == b'"' { 1 } else { 2 };
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let n = (j + 1).min(rest.len());
            blank(&mut out, &rest[..n]);
            i += n;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{1b}', '"') or a lifetime ('a).
            let n = if rest.get(1) == Some(&b'\\') {
                rest[2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(1, |p| p + 3)
            } else {
                let ch = code[i + 1..].chars().next().map_or(0, char::len_utf8);
                if rest.get(1 + ch) == Some(&b'\'') {
                    ch + 2
                } else {
                    1
                }
            };
            if n == 1 {
                out.push(b'\'');
            } else {
                blank(&mut out, &rest[..n]);
            }
            i += n;
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The length of a raw string literal (`r"..."`, `r#"..."#`, `br"..."`) at the start of
/// `s`, if one starts there.
fn raw_string_len(s: &[u8]) -> Option<usize> {
    let start = if s.starts_with(b"br") {
        2
    } else if s.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = s[start..].iter().take_while(|&&c| c == b'#').count();
    if s.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let body = start + hashes + 1;
    let end = s[body..].windows(close.len()).position(|w| w == close)?;
    Some(body + end + close.len())
}

/// `code` (stripped) without its `#[cfg(test)]` items: the item after each such
/// attribute is cut up to its closing brace or semicolon.
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let b = after.as_bytes();
        let (mut depth, mut j) = (0i32, 0);
        while j < b.len() {
            match b[j] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        rest = &after[j.min(after.len())..];
    }
    out.push_str(rest);
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules that stripped `code` names through `crate::`: `crate::X...`
/// and the first names of a `use crate::{X, Y::z}` group. `depth` is the file's module
/// depth (1 for `src/x.rs` and `src/x/mod.rs`, 2 for `src/x/y.rs`), for paths that climb
/// to the crate root with `super::`.
fn crate_paths(code: &str, depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let word_start = |i: usize| {
        i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'$')
    };
    let mut i = 0;
    while let Some(p) = code[i..].find("crate::") {
        let at = i + p;
        i = at + 7;
        if !word_start(at) {
            continue;
        }
        let rest = &code[i..];
        if let Some(group) = rest.strip_prefix('{') {
            // The names at the group's top level.
            let (mut level, mut item_start) = (0, true);
            for (k, c) in group.char_indices() {
                match c {
                    '{' => level += 1,
                    '}' if level == 0 => break,
                    '}' => level -= 1,
                    ',' if level == 0 => item_start = true,
                    c if item_start && level == 0 && (c.is_ascii_alphabetic() || c == '_') => {
                        out.push(ident_at(&group[k..]).to_string());
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident_at(rest);
            if !name.is_empty() {
                out.push(name.to_string());
            }
        }
    }
    // super::super::x from a file `depth` levels down names the top-level module x.
    if depth >= 1 {
        let climb = "super::".repeat(depth);
        let mut i = 0;
        while let Some(p) = code[i..].find(&climb) {
            let at = i + p;
            i = at + climb.len();
            if word_start(at) && !code[i..].starts_with("super::") {
                let name = ident_at(&code[i..]);
                if !name.is_empty() {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// One source file of `src/`: its top-level module (`cli`, `decode`...; `main` and
/// `lib` for the crate roots), its path relative to `src/`, and its code without
/// comments, strings and test items.
struct Source {
    top: String,
    rel: String,
    depth: usize,
    code: String,
}

fn sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let parts: Vec<&str> = rel.split('/').collect();
        let name = parts.last().unwrap();
        if *name == "tests.rs" || *name == "test.rs" || parts.contains(&"tests") {
            continue;
        }
        let top = parts[0].trim_end_matches(".rs").to_string();
        let depth = parts.len() - usize::from(*name == "mod.rs");
        let text = std::fs::read_to_string(&f).unwrap();
        out.push(Source {
            top,
            rel,
            depth,
            code: without_tests(&strip(&text)),
        });
    }
    assert!(out.len() > 20, "src/ read: only {} files", out.len());
    out
}

/// Edges between top-level modules: from -> to -> the files that make the edge.
fn graph(srcs: &[Source]) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let tops: BTreeSet<&str> = srcs.iter().map(|s| s.top.as_str()).collect();
    let mut g: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for s in srcs {
        if s.top == "main" || s.top == "lib" {
            continue;
        }
        for to in crate_paths(&s.code, s.depth) {
            if to != s.top && tops.contains(to.as_str()) && to != "main" && to != "lib" {
                g.entry(s.top.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(s.rel.clone());
            }
        }
    }
    g
}

/// The cycles of `g`: its strongly connected sets of more than one module (Tarjan).
fn cycles(g: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>) -> Vec<Vec<String>> {
    struct T<'g> {
        g: &'g BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on: BTreeSet<&'g str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(t: &mut T<'g>, v: &'g str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws.keys() {
                let w = w.as_str();
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let l = t.low[v].min(t.low[w]);
                    t.low.insert(v, l);
                } else if t.on.contains(w) {
                    let l = t.low[v].min(t.index[w]);
                    t.low.insert(v, l);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut set = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                set.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                t.out.push(set);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let all: BTreeSet<&str> = g
        .iter()
        .flat_map(|(a, bs)| std::iter::once(a.as_str()).chain(bs.keys().map(String::as_str)))
        .collect();
    for v in all {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_cycle_among_top_level_modules() {
    let g = graph(&sources());
    let cyc = cycles(&g);
    let mut report = String::new();
    for set in &cyc {
        report.push_str(&format!("cycle: {}\n", set.join(" ")));
        for a in set {
            for b in set {
                if let Some(files) = g.get(a).and_then(|m| m.get(b)) {
                    let files: Vec<&str> = files.iter().map(String::as_str).collect();
                    report.push_str(&format!("  {a} -> {b} ({})\n", files.join(", ")));
                }
            }
        }
    }
    assert!(
        cyc.is_empty(),
        "import cycles among src's top-level modules:\n{report}"
    );
}

#[test]
fn nothing_outside_cli_imports_cli() {
    let g = graph(&sources());
    let back: Vec<String> = g
        .iter()
        .filter(|(from, _)| from.as_str() != "cli")
        .filter_map(|(from, to)| {
            to.get("cli").map(|files| {
                format!(
                    "{from} -> cli ({})",
                    files.iter().cloned().collect::<Vec<_>>().join(", ")
                )
            })
        })
        .collect();
    assert!(
        back.is_empty(),
        "library modules importing cli:\n{}",
        back.join("\n")
    );
}

#[test]
fn only_the_command_line_writes_to_stderr() {
    let mut found = Vec::new();
    for s in sources() {
        if s.top == "cli" || s.top == "main" {
            continue;
        }
        for (no, line) in s.code.lines().enumerate() {
            for pat in ["eprint!", "eprintln!", "stderr()", "dbg!"] {
                if line.contains(pat) {
                    found.push(format!("src/{}:{}: {}", s.rel, no + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "writes to stderr outside src/cli and src/main.rs (return the notice to the caller instead):\n{}",
        found.join("\n")
    );
}

/// The reader itself: paths in comments, strings and tests are not imports; `use crate::{..}`
/// groups and `super::` climbs are; a cycle and a back-import are found.
#[test]
fn the_checks_see_what_they_must() {
    let code = r##"
        // crate::cli in a comment
        /* crate::cli /* nested */ crate::cli */
        let s = "crate::cli"; let r = r#"crate::cli"#; let c = '"'; let d = '\'';
        fn f<'a>(x: &'a str) {}
        use crate::{decode::{self, walk}, tree, schema::Schema};
        use crate::render::text;
        pub(crate) fn g() {}
        let e = super::super::filter::Filter::parse("x");
        #[cfg(test)]
        mod tests { use crate::cli::say; }
        eprintln!("x");
    "##;
    let stripped = without_tests(&strip(code));
    let mut got = crate_paths(&stripped, 2);
    got.sort();
    assert_eq!(got, ["decode", "filter", "render", "schema", "tree"]);
    assert!(stripped.contains("eprintln!"));
    assert!(!stripped.contains("cli"));
    let mut g: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into())
            .or_default()
            .entry(b.into())
            .or_default()
            .insert("f".into());
    }
    assert_eq!(cycles(&g), [vec!["a".to_string(), "b".into(), "c".into()]]);
}
