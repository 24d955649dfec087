//! Every line of `../shared/captures/lab/hex/*.pdus.txt` decodes with its direction:
//! requests from their headers, responses with the api_key and api_version of the
//! request with the same correlation_id on the same stream.

mod common;

use kwire::decode::{decode, DecodeOptions, Known};
use kwire::input::hex::{parse_hex, Direction};
use kwire::schema::Schema;
use kwire::tree::Buffers;
use std::collections::HashMap;

/// Frames the broker (tansu 0.6.0) really got wrong, with the errors kwire must show.
const KNOWN_BAD: &[(&str, &[(usize, &str)])] = &[
    (
        "kp_admin.pdus.txt:36",
        &[
            (0x0d, "Results is null, which version 3 does not allow"),
            (0x0e, "tagged_fields: varint cut by the end of input"),
        ],
    ),
    (
        "kp_admin.pdus.txt:46",
        &[
            (0x10, "Results is null, which version 0 does not allow"),
            (0x11, "tagged_fields: varint cut by the end of input"),
        ],
    ),
];

#[test]
fn lab_pdus_decode() {
    let Some(sh) = common::shared("lab_pdus_decode") else {
        return;
    };
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let mut files: Vec<_> = std::fs::read_dir(sh.join("captures/lab/hex"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut bad = Vec::new();
    let mut n = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let chunks = parse_hex(&text).unwrap();
        let mut pending: HashMap<(u64, i32), (i16, i16)> = HashMap::new();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let sasl = name.contains("sasl");
        for c in &chunks {
            let arena = Buffers::new();
            let stream = c.stream.unwrap_or(0);
            let known = match c.direction {
                Some(Direction::ClientToServer) => Known::request(),
                _ => {
                    let corr = i32::from_be_bytes([c.bytes[4], c.bytes[5], c.bytes[6], c.bytes[7]]);
                    match pending.get(&(stream, corr)) {
                        Some((k, v)) => Known::response(*k, *v),
                        None => Known {
                            direction: kwire::tree::Direction::Response,
                            ..Known::request()
                        },
                    }
                }
            };
            let m = decode(&schema, &opts, &arena, &c.bytes, &known);
            n += 1;
            if m.direction == kwire::tree::Direction::Request {
                if let Some(corr) = m.correlation_id {
                    pending.insert((stream, corr), (m.api_key, m.api_version));
                }
            }
            let errs = m.errors();
            let where_ = format!("{name}:{}", c.line);
            if let Some((_, want)) = KNOWN_BAD.iter().find(|(w, _)| *w == where_) {
                let got: Vec<(usize, &str)> = errs
                    .iter()
                    .map(|e| (e.offset, e.message.as_str()))
                    .collect();
                assert_eq!(&got, want, "{where_}");
                continue;
            }
            if !errs.is_empty() && (!sasl || m.api_key >= 0) {
                bad.push(format!(
                    "{name}:{}: {} v{} {:?}: {:?}",
                    c.line,
                    m.api_name.unwrap_or("?"),
                    m.api_version,
                    m.direction,
                    errs.iter()
                        .map(|e| format!("0x{:04x} {}", e.offset, e.message))
                        .collect::<Vec<_>>()
                ));
            }
        }
    }
    eprintln!("{n} frames decoded");
    assert!(
        bad.is_empty(),
        "{} bad frames:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
