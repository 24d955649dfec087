//! The crate's public surface: `tools/kwire-gen` (a program of its own in the workspace)
//! builds on the public, documented API only — no `kwire::cli` (the binary's own, hidden
//! from the docs) and no item of a module the crate docs do not list.

use std::path::PathBuf;

/// The top-level modules the crate docs (src/lib.rs) present as the public API.
const PUBLIC: &[&str] = &[
    "input",
    "session",
    "decode",
    "tree",
    "index",
    "schema",
    "wire",
    "render",
    "filter",
    "export",
    "stats",
    "encode",
    "page",
    "log",
    "diff",
    "values",
    "errors",
    "memory",
    "pipeline",
    "wireshark",
];

#[test]
fn kwire_gen_uses_the_public_api() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/kwire-gen/src");
    let lib = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .unwrap();
    let mut used = Vec::new();
    for f in std::fs::read_dir(&dir).unwrap() {
        let p = f.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        for (at, _) in text.match_indices("kwire::") {
            let rest = &text[at + "kwire::".len()..];
            let module: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            used.push((p.file_name().unwrap().to_string_lossy().to_string(), module));
        }
    }
    assert!(
        used.len() >= 5,
        "kwire-gen's imports were not found: {used:?}"
    );
    for (file, m) in &used {
        assert!(
            PUBLIC.contains(&m.as_str()),
            "{file}: kwire::{m} is not public API"
        );
        assert!(
            lib.contains(&format!("pub mod {m};")),
            "{file}: kwire::{m} is no module of lib.rs"
        );
        let hidden = format!("#[doc(hidden)]\npub mod {m};");
        assert!(
            !lib.contains(&hidden),
            "{file}: kwire::{m} is hidden from the docs"
        );
    }
}
