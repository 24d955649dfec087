//! `kwire report`: the command line of [`crate::report`] (options, the pass through the
//! engine, the pages, the file).

use super::read::{exit_status, for_each_capture, worse, CaptureArgs, FilterArgs};
use super::{say, CliError, EXIT_OK};
use crate::decode::DecodeOptions;
use crate::filter;
use crate::report::{html, pages, plot::TimeLabels, Fact, Gather};
use crate::run::{CaptureFile, RunOptions, Sink};
use crate::schema::Schema;
use crate::session::Context;
use crate::tree::Message;
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

/// Notice lines kept for the overview (the rest are counted).
const NOTICES_KEEP: usize = 200;

/// `-t` of `kwire report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportTime {
    /// Seconds since the first message.
    R,
    /// UTC clock time.
    U,
    /// Local clock time.
    A,
}

/// `kwire report` options.
#[derive(Args, Debug, Clone)]
#[command(after_help = "\
One HTML file that opens offline in any browser: no network request, no external script,
style or font (inline SVG plots, inline CSS, two small inline scripts for sorting the tables
and linking a message's bytes to its tree); readable printed and in dark mode.

What it holds: an overview (captures, time span, packets, connections, clients with the
software their ApiVersions requests name, brokers, messages by API and version, bytes by
direction, decode errors, notices, the schema release), plots (messages per second by API,
latency over time, latency per API, error codes over time, bytes per topic, consumer-group
events), sortable tables (APIs with p50/p90/p99/max latency, topics, clients, connections,
error names, error responses, the slowest 50 pairs) and, linked from the tables and plots,
the html page of up to --max-pages messages. -Y restricts every section.

Budget: one pass through the engine, then one index pass (no body decoded) of each capture
that has chosen messages; memory: exact latency quantiles (as `kwire stats`) for up to
4,000,000 paired responses (32 MiB), then histograms within 1% (marked ~), plus a few MiB
of fixed-size buckets and capped tables (what a cap folds is said in the overview), the
index's entries past 4 MiB go to a temporary file; the file: under 20 MB at the
defaults whatever the capture's size (200 time buckets a plot, 2000 rows a table, 256 KiB
a message page, 14 MiB of pages).

Examples:
  kwire report captures/demo.pcap -o demo.html
  kwire report f.pcapng --port 9093 --tls-keylog keys.log -o f.html
  kwire report f.pcap -Y 'client_id == \"billing\"' -t u -o billing.html")]
pub struct ReportArgs {
    /// The capture and where Kafka is in it.
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Which messages to count.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The HTML file to write (`-` for stdout).
    #[arg(short = 'o', long = "output", value_name = "REPORT.html")]
    pub output: PathBuf,
    /// Most message pages (the slowest responses, error responses, the first request of
    /// each API and version, with the other half of each pair); 0: none.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub max_pages: usize,
    /// How times read: r (seconds since the first message), u (UTC), a (local).
    #[arg(short = 't', value_enum, value_name = "FORMAT", default_value = "r")]
    pub time: ReportTime,
}

/// The report's sink: facts into the gather, notices kept for the overview and said on
/// stderr.
struct Collect<'g> {
    gather: &'g mut Gather,
    notices: &'g mut Vec<String>,
    dropped: &'g mut u64,
}

impl Sink<Fact> for Collect<'_> {
    fn message(&mut self, f: Fact) -> bool {
        let pass = f.pass;
        self.gather.add(f);
        pass
    }
    fn notice(&mut self, line: String) {
        say(&line);
        if self.notices.len() < NOTICES_KEEP {
            self.notices.push(line);
        } else {
            *self.dropped += 1;
        }
    }
}

/// Refuses, before any capture is read, an output that is one of the captures (exit 1:
/// it would be overwritten) or that is in a folder that does not exist (exit 2).
fn check_output(a: &ReportArgs) -> Result<(), CliError> {
    let o = &a.output;
    if o.as_os_str() == "-" {
        return Ok(());
    }
    if let Ok(om) = std::fs::metadata(o) {
        for f in a.capture.captures() {
            let same = std::fs::metadata(f.path).is_ok_and(|m| same_file(&m, &om));
            if same {
                return Err(CliError::Usage(format!(
                    "-o {}: that is a capture being read; the report would overwrite it",
                    o.display()
                )));
            }
        }
    }
    let dir = match o.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(CliError::Msg(format!(
            "-o {}: no folder {} to write the report in",
            o.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Whether two files' metadata are those of one file (device and inode on Unix).
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Whether two files' metadata are those of one file (elsewhere: no way to tell; the
/// path comparison of the callers' is all).
#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
}

/// Runs `kwire report`; returns the exit status.
///
/// # Errors
/// A bad filter; a capture that cannot be opened or is not a capture; the report that
/// cannot be written (an output that is one of the captures, or in no folder, before
/// any capture is read).
pub fn report_command(
    schema: &Schema,
    a: &ReportArgs,
    out: &mut dyn Write,
) -> Result<i32, CliError> {
    let flt = a.filter.filter(schema)?;
    check_output(a)?;
    let filter_text = flt.as_ref().map(|f| f.text().to_string());
    let mut g = Gather::new();
    let mut notices = Vec::new();
    let mut dropped = 0u64;
    let mut lines = Vec::new();
    let mut status = EXIT_OK;
    let mut ordinal = 0u32;
    let mut paths: Vec<PathBuf> = Vec::new();
    for_each_capture(&a.capture, |file: &CaptureFile<'_>| {
        g.next_capture(ordinal);
        ordinal += 1;
        paths.push(file.path.to_path_buf());
        let unanswered =
            super::read::unanswered_first_pass(schema, &a.capture, file, flt.as_ref())?;
        let work = |m: &Message<'_>, ctx: &Context, _: &mut dyn Write| {
            let fctx = filter::MessageFacts {
                capture: Some(ctx),
                unanswered: unanswered.as_ref(),
            };
            let pass = flt.as_ref().is_none_or(|f| f.matches(m, &fctx));
            Ok(Fact::of(m, ctx, pass))
        };
        let mut run = RunOptions {
            threads: a.capture.threads_for(false),
            ..RunOptions::default()
        };
        let mut sink = Collect {
            gather: &mut g,
            notices: &mut notices,
            dropped: &mut dropped,
        };
        let o = crate::run::run_capture(
            schema,
            &a.capture.settings(),
            file,
            DecodeOptions {
                detail: super::export_cmd::rows_detail(flt.as_ref(), false),
                keep: flt
                    .as_ref()
                    .map(crate::filter::Filter::kept_fields)
                    .unwrap_or_default(),
                ..DecodeOptions::default()
            },
            &mut run,
            &mut std::io::sink(),
            &work,
            &mut sink,
        )?;
        status = worse(status, exit_status(&o, a.capture.strict));
        o.closing.iter().for_each(|l| say(l));
        lines.push(html::CaptureLine {
            // Its name, numbered when the path was given before (`a.pcap (2)`).
            path: file
                .label
                .as_deref()
                .map_or_else(|| file.path.display().to_string(), str::to_string),
            packets: o.packets,
            connections: o.connections,
            closing: o.closing.clone(),
            unanswered: o.unanswered_requests,
            tls: (
                o.tls.len() as u64 + o.tls_past_cap,
                o.tls.iter().filter(|t| t.decrypted() == "yes").count() as u64,
            ),
        });
        g.stats.add_tls(o.tls, o.tls_past_cap, file.label.clone());
        Ok(())
    })?;
    g.finish();
    // The pages: chosen after the pass, read again through the index.
    let settings = a.capture.settings();
    let (keys, _) = crate::run::load_keylogs(&settings.keylogs, false)?;
    let keys = std::sync::Arc::new(keys);
    let copts = crate::input::CaptureOptions {
        ports: if settings.ports.is_empty() {
            vec![9092]
        } else {
            settings.ports.clone()
        },
        detect: settings.detect,
        max_frame: settings.max_frame,
        max_in_flight: settings.max_in_flight,
        idle_timeout: settings.idle_timeout,
        tls_keys: keys,
        ..crate::input::CaptureOptions::default()
    };
    let live = a.capture.live.is_live();
    let sources: Vec<pages::Source<'_>> = paths
        .iter()
        .map(|p| pages::Source {
            path: if live { std::path::Path::new("-") } else { p },
            capture: copts.clone(),
        })
        .collect();
    let chosen = pages::choose(&g, a.max_pages);
    let ropts = crate::render::RenderOptions {
        color: false,
        ..crate::render::RenderOptions::default()
    };
    let (pages, notes) = if a.max_pages == 0 {
        (Default::default(), Vec::new())
    } else {
        pages::render(schema, &sources, &chosen, a.max_pages, &ropts)
    };
    notes
        .iter()
        .for_each(|n| say(&format!("kwire: report: {n}")));
    let mut releases = crate::diff::releases(schema);
    releases.dedup();
    let schema_desc = if schema.user_paths.is_empty() {
        format!("its embedded definitions (Kafka {})", releases.join(", "))
    } else {
        format!(
            "the definitions in {} over its embedded ones",
            schema.user_paths.join(", ")
        )
    };
    let report = html::Report {
        captures: &lines,
        filter: filter_text.as_deref(),
        gather: &g,
        pages: &pages,
        notices: &notices,
        notices_dropped: dropped,
        page_notes: &notes,
        time: match a.time {
            ReportTime::R => TimeLabels::Relative,
            ReportTime::U => TimeLabels::Utc,
            ReportTime::A => TimeLabels::Local,
        },
        schema: schema_desc,
        max_pages: a.max_pages,
    };
    if a.output.as_os_str() == "-" {
        html::write(out, &report)?;
        out.flush()?;
    } else {
        let f = std::fs::File::create(&a.output)
            .map_err(|e| CliError::Msg(format!("{}: {e}", a.output.display())))?;
        let mut w = std::io::BufWriter::new(f);
        html::write(&mut w, &report)
            .and_then(|()| w.flush())
            .map_err(|e| CliError::Msg(format!("{}: {e}", a.output.display())))?;
        say(&format!(
            "kwire: report: {} ({}, {})",
            a.output.display(),
            crate::text::count(g.messages, "message", "messages"),
            crate::text::count(pages.len() as u64, "message page", "message pages")
        ));
    }
    Ok(status)
}
