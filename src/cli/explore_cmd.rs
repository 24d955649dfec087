//! `kwire explore`: the options, handed to [`crate::explore`].

use super::read::{CaptureArgs, FilterArgs};
use super::{say, Cli, CliError, OutputArgs, EXIT_INPUT, EXIT_OK, EXIT_USAGE};
use crate::explore::source::LiveInput;
use crate::filter::Filter;
use crate::input::CaptureOptions;
use crate::schema::Schema;
use clap::Args;
use std::io::IsTerminal;

/// `kwire explore` options.
#[derive(Args, Debug, Clone)]
#[command(mut_arg("format", super::no_format))]
#[command(after_help = "\
Keys: ? in the program lists them (arrows, j/k, Tab, Enter folds, / filter, p pair,
f connection, c copy, e next error, Ctrl-F search, \\ zoom, C connections, s statistics,
L notices, q quit).

Exit status: 0 quit; 1 bad arguments, a bad -Y, or stdout not a terminal; 2 the terminal
could not be used, or a live capture could not start or its child died.

A live capture (-i: dumpcap, else tcpdump; see docs/live-capture.md) grows the list as
messages complete, and the list follows its end (G again after moving away); q or Ctrl-C
stops the capture. A capture file still being written is followed the same way.

Examples:
  kwire explore captures/demo.pcap
  kwire explore f.pcapng --tls-keylog keys.log -Y 'api == Fetch'
  tcpdump -U -w - port 9092 | kwire explore -
  kwire explore -i eth0                        live, port 9092 (dumpcap)
  kwire explore -i lo -f 'tcp port 19092' --port 19092 -w kafka.pcapng -a duration:600
  kwire explore -D                             the interfaces to capture on")]
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

/// Runs `kwire explore`; returns the exit status (2 when a live capture failed: its
/// child died, or could not capture).
///
/// # Errors
/// A bad filter or key log; the terminal cannot be used; a live capture that cannot start
/// (no capture program, no such interface, no permission, a bad `-f`).
pub fn explore_command(
    schema: Schema,
    cli: &Cli,
    a: &ExploreArgs,
    out: &mut dyn std::io::Write,
) -> Result<i32, CliError> {
    // -D lists the interfaces (to `out`, kwire's stdout); -w, -f and -a need -i.
    if let Some(code) = super::live::before(&a.capture, out)? {
        return Ok(code);
    }
    let live = a.capture.live.is_live();
    let flt = a.filter.filter(&schema)?;
    let settings = a.capture.settings();
    // A live capture's key logs are followed as they are written (as read -i does).
    let (keys, key_lines) = crate::run::load_keylogs(&settings.keylogs, live)?;
    // `unanswered` reads each capture file once more first, as read -Y does; stdin and a
    // live capture cannot be read twice.
    let files_only = !live
        && a.capture
            .captures()
            .iter()
            .all(|c| c.path.as_os_str() != "-");
    if flt.as_ref().is_some_and(Filter::uses_unanswered) && !files_only {
        return Err(CliError::Usage(format!(
            "-Y {}",
            crate::explore::app::UNANSWERED
        )));
    }
    let unanswered = files_only.then(|| unanswered_pass(&schema, &a.capture));
    if live && !std::io::stdout().is_terminal() {
        // Said before a capture child is started for nothing.
        return not_a_terminal();
    }
    let files = if live {
        Vec::new()
    } else {
        a.capture
            .captures()
            .iter()
            .map(|c| c.path.to_path_buf())
            .collect()
    };
    let capture = if live {
        let opts = crate::input::live::LiveOptions {
            // The explorer reads Ctrl-C as a key, and stops the capture itself.
            signals: false,
            ..super::live::options(&a.capture)
        };
        let c = LiveInput::open(&opts).map_err(|e| CliError::Msg(e.to_string()))?;
        say(&format!(
            "kwire: capturing on {}: {}",
            opts.interfaces.join(", "),
            c.command_line()
        ));
        Some(c)
    } else {
        None
    };
    // However the explorer ends (a panic too), the child is stopped and reaped.
    let guard = Closer(capture.clone());
    let inputs = crate::explore::Inputs {
        files,
        live: capture,
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
    let tls_keys = std::sync::Arc::clone(&inputs.capture.tls_keys);
    let opts = crate::explore::Options {
        color: super::output::color(cli),
        filter: flt,
        render: super::output::render_options(cli, &a.out),
        known: std::sync::Arc::new(crate::filter::Known::of(&schema)),
        unanswered,
    };
    let res = crate::explore::run(schema, inputs, opts);
    // The screen is back: the capture's end, then what could not be used in the key logs.
    let mut status = EXIT_OK;
    if let Some((tool, end)) = guard.close() {
        crate::explore::source::end_lines(tool, &end)
            .iter()
            .for_each(|l| say(l));
        if end.error.is_some() {
            status = EXIT_INPUT;
        }
    }
    match res {
        Ok(outcome) => {
            if outcome.input_failed {
                status = EXIT_INPUT;
            }
            key_lines.iter().for_each(|l| say(l));
            let bad_keys = tls_keys.followed_problems();
            if bad_keys > 0 {
                say(&format!(
                    "kwire: {bad_keys} lines added to the key logs during the capture could not be used (not NSS key log lines)"
                ));
            }
            Ok(status)
        }
        Err(crate::explore::ExploreError::NotATerminal) => not_a_terminal(),
        Err(e) => Err(CliError::Msg(e.to_string())),
    }
}

fn not_a_terminal() -> Result<i32, CliError> {
    say(&format!(
        "kwire: {}",
        crate::explore::ExploreError::NotATerminal
    ));
    Ok(EXIT_USAGE)
}

/// Stops and reaps a live capture when dropped, unless [`Closer::close`] did.
struct Closer(Option<std::sync::Arc<LiveInput>>);

impl Closer {
    /// Stops the capture and reaps its child; the program's name and how it ended.
    fn close(mut self) -> Option<(&'static str, crate::input::live::LiveEnd)> {
        let c = self.0.take()?;
        c.close().map(|e| (c.tool(), e))
    }
}

impl Drop for Closer {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.close();
        }
    }
}

/// The explorer's [`crate::explore::scan::UnansweredPass`] over the capture files of `a`:
/// each read once more, in order, as `kwire read -Y unanswered` reads it
/// ([`crate::run::unanswered_pass`]); one that cannot be read gives an empty set and a
/// line saying why (as read goes on past it).
fn unanswered_pass(schema: &Schema, a: &CaptureArgs) -> crate::explore::scan::UnansweredPass {
    let schema = schema.clone();
    let settings = a.settings();
    let threads = a.threads_for(false);
    let files: Vec<(std::path::PathBuf, Option<std::sync::Arc<str>>)> = a
        .captures()
        .into_iter()
        .map(|c| (c.path.to_path_buf(), c.label))
        .collect();
    crate::explore::scan::UnansweredPass(std::sync::Arc::new(move |halt| {
        let mut errors = Vec::new();
        let sets = files
            .iter()
            .map(|(path, label)| {
                let file = crate::run::CaptureFile {
                    path,
                    label: label.clone(),
                };
                let halt = Some(std::sync::Arc::clone(&halt));
                crate::run::unanswered_pass(&schema, &settings, &file, threads, halt)
                    .unwrap_or_else(|e| {
                        errors.push(e.to_string());
                        crate::input::RecordSet::default()
                    })
            })
            .collect();
        std::sync::Arc::new((sets, errors))
    }))
}
