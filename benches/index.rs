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
//! Prints the figures `docs/benchmarks.md` quotes, each stage in wall time and in CPU
//! time (the machine is shared): the records alone (pcap-parser, nothing looked into),
//! framing alone (read_capture, no session), framing with the session, the index pass
//! (framing + session + entries), messages, index memory per
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

/// The repository's captures (plain, TLS, snaplen-cut) and mid-stream and gapped cuts of
/// `mixed_large.pcapng`: every message decoded alone, the slowest reported.
fn repo_captures() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tmp = root.join("target/bench");
    let _ = std::fs::create_dir_all(&tmp);
    // mixed_large's blocks: the header blocks, then the packets (EPB, type 6).
    let big = std::fs::read(root.join("captures/lab/mixed_large.pcapng")).unwrap_or_default();
    let le32 = |at: usize| u32::from_le_bytes(big[at..at + 4].try_into().unwrap()) as usize;
    let (mut head, mut recs, mut at) = (Vec::new(), Vec::new(), 0);
    while at + 12 <= big.len() {
        let n = le32(at + 4);
        match (le32(at), recs.is_empty()) {
            (6, _) => recs.push(&big[at..at + n]),
            (_, true) => head.extend_from_slice(&big[at..at + n]),
            _ => {}
        }
        at += n;
    }
    let write = |name: &str, recs: &[&[u8]]| {
        let p = tmp.join(name);
        let mut b = head.clone();
        recs.iter().for_each(|r| b.extend_from_slice(r));
        std::fs::write(&p, b).unwrap();
        p
    };
    let mid = write("index-bench-mid.pcapng", &recs[28..]);
    let mut lost = recs.clone();
    lost.remove(30);
    let gap = write("index-bench-gap.pcapng", &lost);
    let tls = |name: &str| {
        let mut log = kwire::input::tls::KeyLog::default();
        let keys = std::fs::read(root.join(format!("captures/lab/tls/{name}.keys"))).unwrap();
        log.add_text(&keys, name);
        let mut o = IndexOptions::default();
        o.capture.ports = vec![9093];
        o.capture.tls_keys = std::sync::Arc::new(log);
        (root.join(format!("captures/lab/tls/{name}.pcapng")), o)
    };
    let runs = [
        (root.join("captures/demo.pcap"), IndexOptions::default()),
        (
            root.join("captures/lab/mixed_large.pcapng"),
            IndexOptions::default(),
        ),
        (
            root.join("captures/lab/var_snaplen200.pcap"),
            IndexOptions::default(),
        ),
        (mid.clone(), IndexOptions::default()),
        (gap.clone(), IndexOptions::default()),
        tls("tls13_kp_aes256gcm"),
        tls("tls12_ck_cbc_sha256_rsa"),
    ];
    for (path, opts) in runs {
        let cap = Capture::open_with(&path, opts, &mut |_| {}).unwrap();
        let mut worst = (Duration::ZERO, 0usize, 0usize);
        let mut times = Vec::with_capacity(cap.len());
        let mut firsts = Duration::ZERO;
        for i in 0..cap.len() {
            // Each message three times: the first try as a front-end sees it, and the
            // best of the three, which leaves out the waits for a core of a loaded
            // machine (a try costs the same work each time: no cache in the index).
            let mut best = Duration::MAX;
            let mut size = 0;
            for k in 0..3 {
                let t = Instant::now();
                let frame = cap.frame(i).unwrap();
                let arena = Buffers::new();
                let (m, _) = cap.decode(i, &frame, &arena).unwrap();
                size = frame.bytes.len();
                drop(m);
                let e = t.elapsed();
                if k == 0 {
                    firsts = firsts.max(e);
                }
                best = best.min(e);
            }
            times.push(best);
            if best > worst.0 {
                worst = (best, i, size);
            }
        }
        let total: Duration = times.iter().sum();
        times.sort();
        let at = |q: usize| times.get(times.len().saturating_sub(1) * q / 100).copied();
        println!(
            "{:<40} {:>4} messages, best of 3: mean {:?}, p50 {:?}, p99 {:?}, max {:?} (message {}, {} bytes); first tries' max {:?}; index memory {:.1} B a message",
            path.file_name().unwrap().to_string_lossy(),
            cap.len(),
            total / cap.len().max(1) as u32,
            at(50).unwrap_or_default(),
            at(99).unwrap_or_default(),
            worst.0,
            worst.1,
            worst.2,
            firsts,
            cap.memory() as f64 / cap.len().max(1) as f64,
        );
    }
    let _ = std::fs::remove_file(mid);
    let _ = std::fs::remove_file(gap);
}

/// Nanoseconds this thread has run on a CPU (Linux schedstat, counted in scheduler ticks
/// here: good for a stage of seconds, not for one message): a stage's cost on a loaded
/// machine without its waits for a core.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The machine's load average (1, 5, 15 minutes), from /proc/loadavg.
fn load() -> String {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn main() {
    println!("load average at the start: {}", load());
    repo_captures();
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

    // The records alone: pcap-parser's reader over the mapping (what the input layer
    // reads the file with), every block read and none looked into: the floor under
    // framing.
    let (t, c) = (Instant::now(), cpu_ns());
    let mut blocks = 0u64;
    {
        let mut reader =
            pcap_parser::create_reader(1 << 20, std::io::Cursor::new(&map[..])).unwrap();
        loop {
            match reader.next() {
                Ok((n, _)) => {
                    blocks += 1;
                    reader.consume(n);
                }
                Err(pcap_parser::PcapError::Eof) => break,
                Err(pcap_parser::PcapError::Incomplete(_)) => reader.refill().unwrap(),
                Err(e) => panic!("{e:?}"),
            }
        }
    }
    let records = t.elapsed();
    let records_cpu = (cpu_ns() - c) as f64 / 1e9;
    println!(
        "records alone:  {:.2} s, {:.2} GB/s; CPU {:.2} s, {:.2} GB/s a core; {blocks} blocks",
        records.as_secs_f64(),
        gb / records.as_secs_f64(),
        records_cpu,
        gb / records_cpu,
    );
    let (t, c) = (Instant::now(), cpu_ns());
    let mut frames = 0u64;
    read_capture(
        std::io::Cursor::new(&map[..]),
        &CaptureOptions::default(),
        &SchemaPlausibility(&schema),
        |ev| frames += u64::from(matches!(ev, Event::Frame(_))),
    )
    .unwrap();
    let framing = t.elapsed();
    let framing_cpu = (cpu_ns() - c) as f64 / 1e9;
    println!(
        "framing alone:  {:.2} s, {:.2} GB/s; CPU {:.2} s, {:.2} GB/s a core; {frames} frames ({:.3} GB)",
        framing.as_secs_f64(),
        gb / framing.as_secs_f64(),
        framing_cpu,
        gb / framing_cpu,
        gb
    );

    // Framing and the session (pairing, topic names, acks), as the index pass runs it,
    // without the index's entries: what the session costs.
    let decode_opts = kwire::decode::DecodeOptions::default();
    let (t, c) = (Instant::now(), cpu_ns());
    {
        let mut session = kwire::session::Session::new(&schema, &decode_opts);
        read_capture(
            std::io::Cursor::new(&map[..]),
            &CaptureOptions::default(),
            &SchemaPlausibility(&schema),
            |ev| {
                if let Event::Frame(f) = ev {
                    let _ = session.prepare(&f);
                }
            },
        )
        .unwrap();
    }
    let session_cpu = (cpu_ns() - c) as f64 / 1e9;
    println!(
        "with session:   {:.2} s; CPU {:.2} s, {:.2} GB/s a core",
        t.elapsed().as_secs_f64(),
        session_cpu,
        gb / session_cpu,
    );
    drop(map);

    let (hwm_before, _) = rss();
    let (t, c) = (Instant::now(), cpu_ns());
    let mut calls = 0u64;
    let cap = Capture::open_with(&path, IndexOptions::default(), &mut |_| calls += 1).unwrap();
    let pass = t.elapsed();
    let pass_cpu = (cpu_ns() - c) as f64 / 1e9;
    let (hwm, file_pages) = rss();
    let n = cap.len() as u64;
    println!(
        "index pass:     {:.2} s, {:.2} GB/s; CPU {:.2} s, {:.2} GB/s a core ({:.0}% of framing alone's CPU speed), {n} messages, {calls} progress calls",
        pass.as_secs_f64(),
        gb / pass.as_secs_f64(),
        pass_cpu,
        gb / pass_cpu,
        100.0 * framing_cpu / pass_cpu
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
    let mut bests: Vec<Duration> = Vec::with_capacity(picks.len());
    for &i in &picks {
        let mut best = Duration::MAX;
        for k in 0..3 {
            let t = Instant::now();
            let frame = cap.frame(i).unwrap();
            let arena = Buffers::new();
            let (m, _ctx) = cap.decode(i, &frame, &arena).unwrap();
            if k == 0 {
                bytes += frame.bytes.len();
            }
            drop(m);
            let e = t.elapsed();
            if k == 0 {
                times.push(e);
            }
            best = best.min(e);
        }
        bests.push(best);
    }
    bests.sort();
    println!(
        "decode, best of 3: median {:?}, p99 {:?}, max {:?}",
        bests[bests.len() / 2],
        bests[bests.len() * 99 / 100],
        bests[bests.len() - 1]
    );

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
    println!("load average at the end: {}", load());
}
