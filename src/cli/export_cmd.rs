//! `kwire export`: captures to Parquet tables (`src/export`), several captures at once.

use super::read::{
    run_capture, unanswered_first_pass, unreadable, worse, CaptureArgs, FilterArgs, RunOptions,
};
use super::CliError;
use super::{say, EXIT_OK};
use crate::decode::{DecodeOptions, Detail};
use crate::export::{self, table::FileOptions, CaptureExport, ExportOptions, PartitionBy};
use crate::filter::{Filter, Select};
use crate::schema::Schema;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// `--partition-by`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PartitionByArg {
    /// `hour=2026-11-29T14` folders: the UTC hour of each message.
    Hour,
    /// `api=Fetch` folders.
    Api,
    /// `capture=NAME` folders: the capture file.
    Capture,
}

/// `--compression`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    /// zstd, level 3.
    Zstd,
    /// Snappy.
    Snappy,
}

/// `kwire export` options.
#[derive(Args, Debug, Clone)]
#[command(after_help = "\
Log directories and files (kwire log's paths: folders, .log segments, .checkpoint
snapshots) export as a `batches` table (one row per batch) and, with --records, a
`records` table (one row per record, with its record_type); -Y keeps the batches as in
kwire log. See docs/parquet-format.md.

Examples:
  kwire export broker-1.pcap broker-2.pcap --out DIR --records
  kwire export capture.pcapng --out DIR --partition-by hour -Y 'api == Fetch'
  kwire export /var/lib/kafka/data/__consumer_offsets-31 --out DIR --records
  kwire export __cluster_metadata-0 --out DIR --records -Y 'PartitionChangeRecord'
  kwire export -i eth0 -a duration:600 --out DIR -w kafka.pcapng   (live, through dumpcap)
  kwire export -i eth0 -c 100000 --out DIR        (live: the next 100000 messages)")]
pub struct ExportArgs {
    /// The captures and where Kafka is in them (the options of `kwire read`).
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Which messages to export (rows only for the messages that pass).
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The folder to write (refused when it exists, unless --force).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace the tables of an existing folder (its messages/, partitions/ and records/
    /// folders are removed first; nothing else in it is touched).
    #[arg(long)]
    pub force: bool,
    /// Also write the `records` table: one row per record.
    #[arg(long)]
    pub records: bool,
    /// Give the `records` table the records' values (large, and maybe sensitive).
    #[arg(long, requires = "records")]
    pub record_values: bool,
    /// Hive-style folders under each table (`messages/hour=2026-11-29T14/...`).
    #[arg(long, value_enum)]
    pub partition_by: Option<PartitionByArg>,
    /// Partition files open at once, per table and capture.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_open_files: u16,
    /// Page compression.
    #[arg(long, value_enum, default_value_t = CompressionArg::Zstd)]
    pub compression: CompressionArg,
    /// Rows a row group holds at most (fewer when they take more than about 4 MiB).
    #[arg(long, value_name = "N", default_value_t = 65_536, value_parser = clap::value_parser!(u32).range(1..))]
    pub row_group_rows: u32,
    /// Stop after N messages exported (those -Y keeps), across the captures, as `read -c`
    /// (the captures are then exported one after the other); a live capture (-i) stops
    /// there.
    #[arg(short = 'c', value_name = "N", value_parser = super::message_count)]
    pub count: Option<u64>,
}

/// Runs `kwire export`; returns the exit status.
///
/// # Errors
/// An existing `--out` without `--force`; when a capture cannot be read or written, it is
/// named on stderr, the others still export, and the command fails at the end (status 2).
pub fn export_command(schema: &Schema, a: &ExportArgs) -> Result<i32, CliError> {
    let flt = a.filter.filter(schema)?;
    let logs = a
        .capture
        .captures()
        .iter()
        .all(|c| c.path.is_dir() || crate::log::FileKind::of(c.path).is_some());
    if logs && a.count.is_some() {
        return Err(CliError::Usage(
            "-c N stops after N messages of a capture; a log directory is exported whole (choose with -Y)".to_string(),
        ));
    }
    if logs && a.partition_by.is_some() {
        return Err(CliError::Usage(
            "--partition-by applies to captures; a log directory's tables are not partitioned"
                .to_string(),
        ));
    }
    if a.out.exists() {
        if !a.force {
            return Err(CliError::Msg(format!(
                "{}: exists; give --force to replace its tables",
                a.out.display()
            )));
        }
        for d in export::table_dirs(&a.out) {
            if d.exists() {
                std::fs::remove_dir_all(&d)
                    .map_err(|e| CliError::Msg(format!("{}: {e}", d.display())))?;
            }
        }
    }
    std::fs::create_dir_all(&a.out)
        .map_err(|e| CliError::Msg(format!("{}: {e}", a.out.display())))?;
    let opts = ExportOptions {
        out: a.out.clone(),
        records: a.records,
        record_values: a.record_values,
        partition_by: a.partition_by.map(|p| match p {
            PartitionByArg::Hour => PartitionBy::Hour,
            PartitionByArg::Api => PartitionBy::Api,
            PartitionByArg::Capture => PartitionBy::Capture,
        }),
        max_open_files: a.max_open_files.into(),
        file: FileOptions {
            row_group_rows: a.row_group_rows as usize,
            ..FileOptions::new(a.compression == CompressionArg::Zstd)
        },
    };
    if logs {
        return export_logs(schema, a, flt.as_ref(), &opts);
    }
    let files = a.capture.captures();
    // --threads: captures exported at once (each on one thread: its writer takes rows in
    // capture order); one at a time with -c, which counts across them in order.
    let threads = if a.count.is_some() {
        1
    } else {
        a.capture.threads().clamp(1, files.len().max(1))
    };
    let next = AtomicUsize::new(0);
    let exported = AtomicU64::new(0);
    let mut skipped = 0;
    let results: Mutex<Vec<Option<Exported>>> = Mutex::new(vec![None; files.len()]);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(i) else {
                    break;
                };
                // The capture column: the path, numbered from its second reading when
                // given more than once (`a.pcap (2)`), so readings stay apart.
                let name = file
                    .label
                    .as_deref()
                    .map_or_else(|| file.path.display().to_string(), str::to_string);
                let left = a
                    .count
                    .map(|l| l.saturating_sub(exported.load(Ordering::Relaxed)));
                if left == Some(0) {
                    // -c was reached: the rest are not read (said below).
                    continue;
                }
                let r = export_one(
                    schema,
                    a,
                    flt.as_ref(),
                    &opts,
                    file,
                    (i as u32, &name),
                    (left, &exported),
                );
                if let Ok(mut v) = results.lock() {
                    v[i] = Some(r);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    let (mut failed, mut rows, mut nfiles, mut status) = (0, [0u64; 3], 0, EXIT_OK);
    for (f, r) in files.iter().zip(results) {
        match r {
            Some(Ok((s, st))) => {
                status = worse(status, st);
                rows.iter_mut().zip(s.rows).for_each(|(a, b)| *a += b);
                nfiles += s.files.len();
            }
            Some(Err(e)) => {
                // Said when it happened; counted here.
                let _ = e;
                failed += 1;
            }
            None if a
                .count
                .is_some_and(|l| exported.load(Ordering::Relaxed) >= l) =>
            {
                skipped += 1;
            }
            None => {
                say(&format!("kwire: {}: not exported", f.path.display()));
                failed += 1;
            }
        }
    }
    if skipped > 0 {
        say(&format!(
            "kwire: -c {} reached: {skipped} of {} captures not read",
            a.count.unwrap_or(0),
            files.len()
        ));
    }
    say(&format!(
        "kwire: exported {}, {}{} from {} of {} captures to {} ({} files)",
        crate::text::count(rows[0], "message", "messages"),
        crate::text::count(rows[1], "partition entry", "partition entries"),
        if a.records {
            format!(", {}", crate::text::count(rows[2], "record", "records"))
        } else {
            String::new()
        },
        files.len() - failed - skipped,
        files.len(),
        a.out.display(),
        nfiles
    ));
    unreadable(failed, files.len(), "exported").map(|()| status)
}

/// Exports log directories and files (`batches` and `records` tables): every batch of
/// their segments and KRaft snapshots, in the order `kwire log` reads them.
fn export_logs(
    schema: &Schema,
    a: &ExportArgs,
    flt: Option<&Filter>,
    opts: &ExportOptions,
) -> Result<i32, CliError> {
    let paths: Vec<PathBuf> = a
        .capture
        .captures()
        .iter()
        .map(|c| c.path.to_path_buf())
        .collect();
    let lopts = crate::log::LogOptions {
        detail: crate::decode::Detail::Full,
        ..Default::default()
    };
    let mut exp = export::log::LogExport::new(opts, None).map_err(CliError::Msg)?;
    let mut said = crate::log::Notify {
        inner: &mut exp,
        tell: |l: String| say(&l),
    };
    let read = match flt {
        None => crate::log::read_paths(schema, &paths, &lopts, &mut said),
        Some(filter) => {
            let mut fs = crate::filter::log::Filtered {
                inner: &mut said,
                filter,
                topic: None,
                shown: 0,
            };
            crate::log::read_paths(schema, &paths, &lopts, &mut fs)
        }
    };
    let t = match read {
        Ok(t) => t,
        Err(e) => {
            exp.abandon();
            return Err(CliError::Msg(e.to_string()));
        }
    };
    let sum = exp.finish().map_err(CliError::Msg)?;
    say(&format!(
        "kwire: exported {}{} from {} files to {} ({} files); {} errors, {} warnings in the log files",
        crate::text::count(sum.rows[0], "batch", "batches"),
        if a.records {
            format!(", {}", crate::text::count(sum.rows[2], "record", "records"))
        } else {
            String::new()
        },
        t.files,
        a.out.display(),
        sum.files.len(),
        t.findings[2],
        t.findings[1],
    ));
    Ok(super::log_cmd::log_status(&t, a.capture.strict))
}

/// The detail a capture's messages are decoded at for the `messages` and `partitions`
/// rows (and `kwire report`): [`Detail::Rows`], which keeps what those rows read, unless
/// the `records` table is written (`records`: one row per record) or the filter reads
/// more than the summary tree holds ([`Filter::needs_full_tree`]).
pub(crate) fn rows_detail(flt: Option<&Filter>, records: bool) -> Detail {
    if records || flt.is_some_and(Filter::needs_full_tree) {
        Detail::Full
    } else {
        Detail::Rows
    }
}

/// One capture's export: its summary and exit status, or what went wrong.
type Exported = Result<(export::ExportSummary, i32), String>;

/// Exports one capture (`at`: its number and name); says on stderr what went wrong, if
/// anything. `count`: how many messages `-c` leaves (none: all), and the count of
/// messages exported so far, across the captures, to add this capture's to.
fn export_one(
    schema: &Schema,
    a: &ExportArgs,
    flt: Option<&Filter>,
    opts: &ExportOptions,
    file: &super::read::CaptureFile<'_>,
    (index, name): (u32, &str),
    (left, exported): (Option<u64>, &AtomicU64),
) -> Exported {
    let res = (|| {
        let unanswered =
            unanswered_first_pass(schema, &a.capture, file, flt).map_err(|e| e.to_string())?;
        // The writer takes rows in capture order: the export runs on the reading thread.
        let exp = export::Exporter::new(CaptureExport::new(opts, index, name)?);
        let work = Select {
            filter: flt,
            unanswered: unanswered.as_ref(),
            inner: &exp,
        };
        let mut run = RunOptions {
            threads: 1,
            limit: left,
            ..RunOptions::default()
        };
        let ran = run_capture(
            schema,
            &a.capture,
            file,
            // Every partition entry becomes a row: the frame's arrays are not folded
            // (records past the node budget are, and the rows read them from their bytes).
            DecodeOptions {
                fold_frame_arrays: false,
                detail: rows_detail(flt, a.records),
                keep: flt.map(Filter::kept_fields).unwrap_or_default(),
                ..DecodeOptions::default()
            },
            &mut run,
            &mut std::io::sink(),
            &work,
            &mut |shown: Option<()>| {
                exported.fetch_add(u64::from(shown.is_some()), Ordering::Relaxed);
                shown.is_some()
            },
        );
        let mut exp = exp.into_inner()?;
        match ran {
            Ok(outcome) => {
                let sum = exp.finish()?;
                outcome.closing.iter().for_each(|l| say(l));
                Ok((sum, super::read::exit_status(&outcome, a.capture.strict)))
            }
            Err(e) => {
                exp.abandon();
                Err(e.to_string())
            }
        }
    })();
    if let Err(e) = &res {
        // Errors from the capture name it already (numbered when given before); the
        // writer's name their file.
        say(&file.name_line(format!("kwire: {e}")));
    }
    res
}
