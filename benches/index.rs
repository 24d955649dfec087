//! The message index on a large capture: the index pass's speed and memory per message,
//! against the input layer's framing alone, and the time to decode one message after it.
//!
//! Not a criterion benchmark: one pass over a 1 GB file is the measurement.
//! `scripts/bench-index.sh` generates the capture with kwire-gen and runs this:
//!
//! ```sh
//! KWIRE_INDEX_BENCH=target/bench/chatter-1G.pcap cargo bench --bench index
//! ```
//!
//! Prints the figures `docs/benchmarks.md` quotes: framing alone (read_capture, no
//! session), the index pass (framing + session + entries), messages, index memory per
//! message (entries, record offsets, connections, topic names, notices: what
//! `Capture::memory` counts), the process's peak RSS without the mapped file's pages,
//! and decode times of messages spread over the capture.

use std::time::{Duration, Instant};

use kwire::index::{Capture, IndexOptions};
use kwire::input::{read_capture, CaptureOptions, Event};
use kwire::schema::Schema;
use kwire::session::SchemaPlausibility;
use kwire::tree::Buffers;

/// `VmHWM` and `RssFile` of this process, in KiB (Linux).
fn rss() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("RssFile:"))
}

fn main() {
    let Ok(path) = std::env::var("KWIRE_INDEX_BENCH") else {
        eprintln!("index bench: set KWIRE_INDEX_BENCH to a capture (scripts/bench-index.sh makes one); skipped");
        return;
    };
    let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let gb = len as f64 / 1e9;
    let schema = Schema::embedded();

    // Framing alone: the input layer over the same bytes, memory-mapped too.
    let file = std::fs::File::open(&path).unwrap();
    // SAFETY: read-only mapping of a file nothing writes while the benchmark runs.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    let t = Instant::now();
    let mut frames = 0u64;
    read_capture(
        std::io::Cursor::new(&map[..]),
        &CaptureOptions::default(),
        &SchemaPlausibility(&schema),
        |ev| frames += u64::from(matches!(ev, Event::Frame(_))),
    )
    .unwrap();
    let framing = t.elapsed();
    drop(map);
    println!(
        "framing alone:  {:.2} s, {:.2} GB/s, {frames} frames ({:.3} GB)",
        framing.as_secs_f64(),
        gb / framing.as_secs_f64(),
        gb
    );

    let (hwm_before, _) = rss();
    let t = Instant::now();
    let mut calls = 0u64;
    let cap = Capture::open_with(&path, IndexOptions::default(), &mut |_| calls += 1).unwrap();
    let pass = t.elapsed();
    let (hwm, file_pages) = rss();
    let n = cap.len() as u64;
    println!(
        "index pass:     {:.2} s, {:.2} GB/s ({:.0}% of framing alone's speed), {n} messages, {calls} progress calls",
        pass.as_secs_f64(),
        gb / pass.as_secs_f64(),
        100.0 * framing.as_secs_f64() / pass.as_secs_f64()
    );
    println!(
        "index memory:   {} bytes, {:.1} bytes a message (entries {} B each); {} entries spilled",
        cap.memory(),
        cap.memory() as f64 / n.max(1) as f64,
        kwire::index::ENTRY_BYTES,
        cap.spilled_entries()
    );
    println!(
        "peak RSS:       {} KiB (before the pass {} KiB; of it the mapped file's pages now {} KiB)",
        hwm, hwm_before, file_pages
    );

    // Decode times: 2,000 messages spread over the capture, plus the first and the last,
    // each read and decoded alone (the request of a response read and prepared too).
    let mut picks: Vec<usize> = (0..2000).map(|k| (k as u64 * n / 2000) as usize).collect();
    picks.push(cap.len() - 1);
    let mut times: Vec<Duration> = Vec::with_capacity(picks.len());
    let mut bytes = 0usize;
    for &i in &picks {
        let t = Instant::now();
        let frame = cap.frame(i).unwrap();
        let arena = Buffers::new();
        let (m, _ctx) = cap.decode(i, &frame, &arena).unwrap();
        bytes += m.size;
        times.push(t.elapsed());
    }
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    println!(
        "decode one:     {} messages ({} bytes): mean {:?}, median {:?}, p99 {:?}, max {:?}",
        times.len(),
        bytes,
        mean,
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times[times.len() - 1]
    );
}
