//! Every pcap/pcapng under `../shared/captures` reads to the end and every Kafka message
//! decodes without error, except frames whose bytes are really wrong: those are listed
//! here one by one with the errors (offset and text) kwire must show.

mod common;

use kwire::cli::read::SchemaPlausibility;
use kwire::decode::DecodeOptions;
use kwire::input::{read_capture, CaptureOptions, Event};
use kwire::schema::Schema;
use kwire::session::Session;
use kwire::tree::Buffers;
use serde_json::Value as J;

/// `(file name, first capture frame of the message, [(offset, error)])`.
type Bad = (&'static str, u64, &'static [(usize, &'static str)]);

const KNOWN_BAD: &[Bad] = &[
    // tansu 0.6.0 answers CreateAcls v3 and DescribeUserScramCredentials v0 with a null
    // array where the schema allows none, and leaves out the last tagged-field byte.
    (
        "kp_admin",
        49,
        &[
            (13, "Results is null, which version 3 does not allow"),
            (14, "tagged_fields: varint cut by the end of input"),
        ],
    ),
    (
        "kp_admin",
        69,
        &[
            (16, "Results is null, which version 0 does not allow"),
            (17, "tagged_fields: varint cut by the end of input"),
        ],
    ),
    // Wireshark's test cases: an unknown version, and deliberately broken strings.
    (
        "unsupported-version",
        28,
        &[(
            18,
            "ControlledShutdown has no request version 1000 in the schema: body shown raw",
        )],
    ),
    (
        "unsupported-version.v3",
        28,
        &[(
            18,
            "ControlledShutdown has no request version 1000 in the schema: body shown raw",
        )],
    ),
    (
        "string-type",
        14,
        &[(38, "TopicNames is null, which version 0 does not allow")],
    ),
    (
        "string-type",
        24,
        &[(22, "TopicNames[0]: negative length -2")],
    ),
];

#[test]
fn every_shared_capture_decodes() {
    let Some(sh) = common::shared("every_shared_capture_decodes") else {
        return;
    };
    let schema = Schema::embedded();
    let plaus = SchemaPlausibility(&schema);
    let dopts = DecodeOptions::default();
    let files = common::capture_files(&sh.join("captures"));
    assert!(files.len() >= 70, "{} captures", files.len());
    let schema_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/kwire-message.schema.json"
    );
    let json_schema: J =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::draft202012::new(&json_schema).expect("the JSON Schema compiles");
    let mut problems = Vec::new();
    let mut seen_bad = 0;
    let mut total = 0;
    for f in &files {
        let stem = f.file_stem().unwrap().to_string_lossy().to_string();
        let opts = CaptureOptions {
            ports: vec![9092, 9093, 36333],
            ..CaptureOptions::default()
        };
        let mut session = Session::new(&schema, &dopts);
        let mut frames = 0;
        let stats = read_capture(std::fs::File::open(f).unwrap(), &opts, &plaus, |ev| {
            if let Event::Frame(fr) = ev {
                frames += 1;
                let arena = Buffers::new();
                let (m, ctx) = session.decode(&fr, &arena);
                // The JSON of every message validates against docs/kwire-message.schema.json.
                let j = kwire::render::json::message_json(&m, Some(&ctx));
                for e in validator.iter_errors(&j) {
                    problems.push(format!(
                        "{stem} frame {}: JSON: {e} at {}",
                        fr.ctx.first_frame,
                        e.instance_path()
                    ));
                }
                let errs: Vec<(usize, String)> = m
                    .errors()
                    .into_iter()
                    .map(|e| (e.offset, e.message))
                    .collect();
                let known = KNOWN_BAD
                    .iter()
                    .find(|(n, fr0, _)| *n == stem && *fr0 == fr.ctx.first_frame);
                match known {
                    Some((_, _, want)) => {
                        let want: Vec<(usize, String)> =
                            want.iter().map(|(o, s)| (*o, s.to_string())).collect();
                        if errs != want {
                            problems.push(format!(
                                "{stem} frame {}: want {want:?}, got {errs:?}",
                                fr.ctx.first_frame
                            ));
                        }
                        seen_bad += 1;
                    }
                    None if !errs.is_empty() => problems.push(format!(
                        "{stem} frame {}: {} v{}: {errs:?}",
                        fr.ctx.first_frame,
                        m.api_name.unwrap_or("?"),
                        m.api_version
                    )),
                    None => {}
                }
            }
        })
        .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(
            !stats.file_truncated,
            "{} did not read to the end",
            f.display()
        );
        assert!(frames > 0, "{}: no Kafka frames", f.display());
        total += frames;
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // kp_admin exists as pcap and pcapng; the Wireshark cases once each.
    assert_eq!(seen_bad, 8, "every known-bad frame was met");
    eprintln!("{} captures, {total} messages", files.len());
}
