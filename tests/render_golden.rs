//! Golden files: the whole text, JSON, values and summary output of the seed's two
//! frames as decoded by kwire, byte for byte. `UPDATE_GOLDEN=1 cargo test --test
//! render_golden` rewrites them after an intended change (review the diff).

mod common;

use common::*;
use kwire::decode::{decode, DecodeOptions, Known};
use kwire::render::{self, Format, RenderOptions};
use kwire::schema::Schema;
use kwire::session::Context;
use kwire::tree::Buffers;

fn check(name: &str, got: &str) {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (UPDATE_GOLDEN=1 writes it)"));
    assert_eq!(got, want, "{name} differs from its golden file");
}

fn all_formats(hex: &str, known: Known, stem: &str) {
    let schema = Schema::embedded();
    let dopts = DecodeOptions {
        page_mode: true,
        ..DecodeOptions::default()
    };
    let arena = Buffers::new();
    let f = unhex(hex);
    let m = decode(&schema, &dopts, &arena, &f, &known);
    let ctx = Context {
        frames: (1, 1),
        time: (1_714_557_600, 0),
        src: "10.0.0.1:51234".into(),
        dst: "10.0.0.2:9092".into(),
        connection: 1,
        latency: None,
        incomplete: false,
        ..Context::default()
    };
    for (fmt, ext, c) in [
        (Format::Text, "txt", None),
        (Format::Json, "json", Some(&ctx)),
        (Format::Values, "values.json", None),
        (Format::Summary, "summary.txt", Some(&ctx)),
    ] {
        let mut out = Vec::new();
        render::render(&mut out, fmt, &m, c, &RenderOptions::default()).unwrap();
        check(&format!("{stem}.{ext}"), &String::from_utf8(out).unwrap());
    }
}

#[test]
fn seed_request_golden() {
    all_formats(REQ_HEX, Known::request(), "delete_topics_v6_request");
}

#[test]
fn seed_response_golden() {
    all_formats(
        RESP_HEX,
        Known::response(20, 6),
        "delete_topics_v6_response",
    );
}
