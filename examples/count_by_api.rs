//! Counts a capture's messages by API and version, from the index alone (no message is
//! decoded): `cargo run --example count_by_api -- captures/demo.pcap`.
//!
//! Prints one line per (api_key, api_version): the API's name, the version, the requests
//! and the responses; then the messages the index could not place (SASL tokens, responses
//! whose request is not in the capture).

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use kwire::index::Capture;
use kwire::input::{Direction, FrameKind};

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: count_by_api CAPTURE");
        return ExitCode::from(2);
    };
    let capture = match Capture::open(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("count_by_api: {e}");
            return ExitCode::FAILURE;
        }
    };
    // (api_key, api_version) -> (requests, responses)
    let mut counts: BTreeMap<(i16, i16), (u64, u64)> = BTreeMap::new();
    let mut other = 0u64;
    for i in 0..capture.len() {
        let info = match capture.info(i) {
            Ok(info) => info,
            Err(e) => {
                eprintln!("count_by_api: {e}");
                return ExitCode::FAILURE;
            }
        };
        match (info.kind, info.api_key, info.api_version) {
            (FrameKind::Kafka, Some(key), Some(version)) => {
                let c = counts.entry((key, version)).or_default();
                match info.direction {
                    Direction::ToServer => c.0 += 1,
                    Direction::ToClient => c.1 += 1,
                }
            }
            _ => other += 1,
        }
    }
    // Written through a locked stdout so that a closed pipe (`| head`) ends the program
    // quietly instead of panicking as `println!` does.
    let mut out = std::io::stdout().lock();
    let res = (|| -> std::io::Result<()> {
        writeln!(
            out,
            "{:<28} {:>7} {:>9} {:>9}",
            "api", "version", "requests", "responses"
        )?;
        for ((key, version), (requests, responses)) in &counts {
            let name = capture.schema().api_name(*key).unwrap_or("unknown");
            writeln!(
                out,
                "{:<28} {version:>7} {requests:>9} {responses:>9}",
                format!("{name}({key})")
            )?;
        }
        writeln!(
            out,
            "{} messages, {other} without an API (SASL tokens, unpaired responses)",
            capture.len()
        )?;
        out.flush()
    })();
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("count_by_api: {e}");
            ExitCode::FAILURE
        }
    }
}
