//! `kwire explore`: the options, handed to [`crate::explore`].

use super::read::{CaptureArgs, FilterArgs};
use super::{say, Cli, CliError, OutputArgs, EXIT_OK, EXIT_USAGE};
use crate::input::CaptureOptions;
use crate::schema::Schema;
use clap::Args;

/// `kwire explore` options.
#[derive(Args, Debug, Clone)]
#[command(after_help = "\
Keys: ? in the program lists them (arrows, j/k, Tab, Enter folds, / filter, p pair,
f connection, c copy, e next error, Ctrl-F search, \\ zoom, C connections, s statistics,
L notices, q quit).

Exit status: 0 quit; 1 bad arguments, a bad -Y, or stdout not a terminal; 2 the terminal
could not be used.

Examples:
  kwire explore captures/demo.pcap
  kwire explore f.pcapng --tls-keylog keys.log -Y 'api == Fetch'
  tcpdump -U -w - port 9092 | kwire explore -")]
pub struct ExploreArgs {
    /// The capture and where Kafka is in it.
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// The display filter to start with.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Tree options.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Runs `kwire explore`; returns the exit status.
///
/// # Errors
/// A bad filter or key log; the terminal cannot be used.
pub fn explore_command(schema: Schema, cli: &Cli, a: &ExploreArgs) -> Result<i32, CliError> {
    let l = &a.capture.live;
    if l.is_live() || l.list_interfaces || l.write.is_some() || l.capture_filter.is_some() {
        // The live input (src/input/live.rs) is not wired into the explorer yet: say so
        // rather than read stdin in its place.
        return Err(CliError::Usage(
            "kwire explore reads capture files and stdin; for live traffic, `kwire read -i IFACE -w FILE` and explore FILE (or pipe `dumpcap -w -` into `kwire explore -`)".into(),
        ));
    }
    let flt = a.filter.filter(&schema)?;
    let settings = a.capture.settings();
    let (keys, key_lines) = crate::run::load_keylogs(&settings.keylogs, false)?;
    if let Some(f) = &flt {
        if f.uses_unanswered() {
            return Err(CliError::Usage(
                "-Y unanswered: not in kwire explore yet (it needs the whole capture before the first message)".into(),
            ));
        }
    }
    let files = a
        .capture
        .captures()
        .iter()
        .map(|c| c.path.to_path_buf())
        .collect();
    let inputs = crate::explore::Inputs {
        files,
        capture: CaptureOptions {
            ports: if a.capture.ports.is_empty() {
                vec![9092]
            } else {
                a.capture.ports.clone()
            },
            detect: a.capture.detect,
            max_frame: a.capture.max_frame,
            max_in_flight: settings.max_in_flight,
            idle_timeout: settings.idle_timeout,
            tls_keys: std::sync::Arc::new(keys),
            ..CaptureOptions::default()
        },
        decode: crate::decode::DecodeOptions {
            max_nodes: a.out.max_nodes,
            ..crate::decode::DecodeOptions::default()
        },
    };
    let opts = crate::explore::Options {
        color: super::output::color(cli),
        filter: flt,
        render: super::output::render_options(cli, &a.out),
        known: std::sync::Arc::new(crate::filter::Known::of(&schema)),
    };
    match crate::explore::run(schema, inputs, opts) {
        Ok(()) => {
            // What could not be used in the key logs, after the screen is back.
            key_lines.iter().for_each(|l| say(l));
            Ok(EXIT_OK)
        }
        Err(crate::explore::ExploreError::NotATerminal) => {
            say(&format!(
                "kwire: {}",
                crate::explore::ExploreError::NotATerminal
            ));
            Ok(EXIT_USAGE)
        }
        Err(e) => Err(CliError::Msg(e.to_string())),
    }
}
