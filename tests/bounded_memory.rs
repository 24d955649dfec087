//! Memory bounded by records, not only by bytes (issue 12): inputs that hold millions of
//! tiny records must not build a node graph per record. Each input is built here, small
//! on disk, and scaled down from the issue's sizes (the benchmark script runs the
//! full-size ones); each test runs the real binary in text, JSON and summary modes and
//! checks that it finishes, that the largest peak RSS of the children it ran stays
//! bounded (GNU time's `%M`, the child's `ru_maxrss`), and that the dense batch shows its
//! record count and what was folded.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::Command;

use kwire::input::pcap_out::{PcapWriter, TcpFlow};

mod common;
use common::{batch_of, varint};

/// Peak RSS any run may reach, in KiB. The issue's bound is 256 MiB for any input; the
/// scaled-down inputs here stay far below it (a debug build, 60 MiB of decompressed
/// records at full size).
const PEAK_KIB: i64 = 160 * 1024;

/// One tiny record: length 6, attributes 0, timestampDelta 0, offsetDelta 0, null key,
/// null value, no headers.
const TINY: [u8; 7] = [0x0c, 0, 0, 0, 0x01, 0x01, 0];

/// A RecordBatch v2 holding `count` tiny records, zstd-compressed when `zstd`.
fn batch(count: usize, zstd: bool) -> Vec<u8> {
    let raw: Vec<u8> = TINY
        .iter()
        .copied()
        .cycle()
        .take(TINY.len() * count)
        .collect();
    batch_of(count, &raw, zstd)
}

fn str16(b: &mut Vec<u8>, s: &str) {
    b.extend((s.len() as i16).to_be_bytes());
    b.extend(s.as_bytes());
}

fn sized(body: Vec<u8>) -> Vec<u8> {
    let mut f = (body.len() as i32).to_be_bytes().to_vec();
    f.extend(body);
    f
}

/// A Produce v3 request (header v1) with one topic, one partition, `records`.
fn produce(records: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(0i16.to_be_bytes()); // api_key Produce
    b.extend(3i16.to_be_bytes()); // api_version
    b.extend(7i32.to_be_bytes()); // correlation_id
    str16(&mut b, "test");
    b.extend((-1i16).to_be_bytes()); // TransactionalId null
    b.extend(1i16.to_be_bytes()); // Acks
    b.extend(30_000i32.to_be_bytes()); // TimeoutMs
    b.extend(1i32.to_be_bytes()); // TopicData
    str16(&mut b, "dense");
    b.extend(1i32.to_be_bytes()); // PartitionData
    b.extend(0i32.to_be_bytes()); // Index
    b.extend((records.len() as i32).to_be_bytes());
    b.extend(records);
    sized(b)
}

/// A Fetch v4 response (header v0) with one topic, one partition, `records`.
fn fetch_response(records: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(9i32.to_be_bytes()); // correlation_id
    b.extend(0i32.to_be_bytes()); // ThrottleTimeMs
    b.extend(1i32.to_be_bytes()); // Responses
    str16(&mut b, "dense");
    b.extend(1i32.to_be_bytes()); // Partitions
    b.extend(0i32.to_be_bytes()); // PartitionIndex
    b.extend(0i16.to_be_bytes()); // ErrorCode
    b.extend(100i64.to_be_bytes()); // HighWatermark
    b.extend(100i64.to_be_bytes()); // LastStableOffset
    b.extend((-1i32).to_be_bytes()); // AbortedTransactions null
    b.extend((records.len() as i32).to_be_bytes());
    b.extend(records);
    sized(b)
}

/// A pcap holding `frames` sent by one client to a broker on 9092.
fn capture(path: &Path, frames: &[Vec<u8>]) {
    let sent: Vec<(bool, &[u8])> = frames.iter().map(|f| (true, f.as_slice())).collect();
    std::fs::write(path, common::one_connection_pcap(&sent)).unwrap();
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bounded_memory");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Runs kwire with `args` under GNU time; returns stdout, after checking it succeeded and
/// that its peak RSS stayed under [`PEAK_KIB`]. `None` (the test skips) without
/// `/usr/bin/time`. (`getrusage(RUSAGE_CHILDREN)` in this process would count the test's
/// own memory: a spawned child shares it until it execs.)
fn kwire(args: &[&str]) -> Option<String> {
    run_peak(args).map(|(out, _)| out)
}

/// [`kwire`], also giving the peak RSS in KiB.
fn run_peak(args: &[&str]) -> Option<(String, i64)> {
    run_under(args, PEAK_KIB).map(|(out, _, peak)| (out, peak))
}

/// Runs kwire with `args` under GNU time; returns stdout, stderr and the peak RSS in
/// KiB, after checking that it succeeded and that its peak RSS stayed under `bound` KiB.
fn run_under(args: &[&str], bound: i64) -> Option<(String, String, i64)> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        common::skip("bounded_memory", "no /usr/bin/time (Debian package time)");
        return None;
    }
    let rss = scratch(&format!("rss-{}", std::process::id()))
        .with_extension(format!("{:?}", std::thread::current().id()).replace(['(', ')'], ""));
    let out = common::kwire_env(&mut Command::new(time))
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss)
        .arg(env!("CARGO_BIN_EXE_kwire"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kwire {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // GNU time's last line is the figure (a line before it may say how the child ended).
    let report = std::fs::read_to_string(&rss).unwrap();
    let peak: i64 = report
        .lines()
        .rev()
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("kwire {args:?}: no peak RSS in GNU time's report {report:?}"));
    eprintln!("kwire {args:?}: peak RSS {peak} KiB");
    assert!(
        peak < bound,
        "kwire {args:?}: peak RSS {peak} KiB, over {bound} KiB"
    );
    Some((
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        peak,
    ))
}

/// Eight dense zstd batches, each in a job of its own (a larger frame after each closes
/// the job), read on eight worker threads: what the workers hold together (decompressed
/// buffers, the nodes of large trees) comes out of one budget (`src/memory.rs`), so the
/// peak stays near one thread's instead of growing with each worker that holds a batch.
/// The output is the one-thread output.
#[test]
fn dense_batches_on_many_threads_share_one_budget() {
    const N: usize = 400_000;
    let p = scratch("zstd-dense-many.pcap");
    let bomb = produce(&batch(N, true));
    let filler = produce(&batch(40_000, false));
    let frames: Vec<Vec<u8>> = (0..8)
        .flat_map(|_| [bomb.clone(), filler.clone()])
        .collect();
    capture(&p, &frames);
    let f = p.to_str().unwrap();
    let Some((one_out, one)) = run_peak(&["read", f, "--format", "json", "--threads", "1"]) else {
        return;
    };
    let Some((many_out, many)) = run_peak(&["read", f, "--format", "json", "--threads", "8"])
    else {
        return;
    };
    assert_eq!(one_out.lines().count(), 16, "every message printed");
    assert!(one_out == many_out, "eight threads print what one prints");
    // Measured: 61 MB at one thread, 116-128 MB at eight (the budget's 32 MiB, and what
    // each worker keeps between messages: an arena of at most 4 MiB and its allocator's
    // free lists); 316 MB at eight without the budget (each worker holding its batch's
    // tree and buffer).
    assert!(
        many < one + 96 * 1024,
        "--threads 8 peaks at {many} KiB, --threads 1 at {one} KiB"
    );
}

/// The issue's first input, scaled down: a tiny capture whose one zstd batch inflates to
/// 1.5 M tiny records (10.5 MB; the issue's had 9 M in 60 MiB).
#[test]
fn zstd_batch_of_tiny_records_is_folded() {
    const N: usize = 1_500_000;
    let p = scratch("zstd-dense.pcap");
    capture(&p, &[produce(&batch(N, true))]);
    assert!(
        std::fs::metadata(&p).unwrap().len() < 8 * 1024,
        "small on disk"
    );
    let f = p.to_str().unwrap();

    let Some(summary) = kwire(&["read", f, "--format", "summary"]) else {
        return;
    };
    assert!(
        summary.contains(&format!("records={N}")),
        "the summary counts every record: {summary}"
    );

    let Some(text) = kwire(&["read", f, "--no-bytes", "--color", "never"]) else {
        return;
    };
    let folded = text
        .lines()
        .find(|l| l.contains("folded"))
        .expect("a folded line");
    assert!(
        folded.contains("records read and checked, not shown"),
        "{folded}"
    );
    assert!(folded.contains("--max-nodes"), "{folded}");
    let shown = text.lines().filter(|l| l.contains("Record[")).count();
    assert!(shown < 50_000, "{shown} record lines: not folded");
    // The batch says how many records it holds: declared and found.
    assert!(
        text.contains(&format!("recordsCount int32 = {N}")),
        "count shown"
    );
    assert!(!text.contains("records declared"), "every record found");

    let Some(json) = kwire(&["read", f, "--format", "json"]) else {
        return;
    };
    let v: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    let mut folded = Vec::new();
    fn find<'v>(v: &'v serde_json::Value, out: &mut Vec<&'v serde_json::Value>) {
        if v.get("type").and_then(|t| t.as_str()) == Some("folded") {
            out.push(v);
        }
        if let Some(c) = v.get("children").and_then(|c| c.as_array()) {
            for x in c {
                find(x, out);
            }
        }
    }
    find(&v["tree"], &mut folded);
    assert_eq!(folded.len(), 1, "one folded node in the JSON tree");
    let ann = folded[0]["annotation"].as_str().unwrap();
    let first: usize = folded[0]["name"].as_str().unwrap()["Record[".len()..]
        .split("..")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        ann.starts_with(&format!("{} records read and checked", N - first)),
        "{ann}"
    );

    // The values format gives the records field as hex past 20,000 records.
    let Some(values) = kwire(&["read", f, "--format", "values"]) else {
        return;
    };
    assert!(values.contains("\"Records\":\"0000"), "records as hex");

    // Raising the budget shows more records: the fold starts later.
    let Some(more) = kwire(&[
        "read",
        f,
        "--no-bytes",
        "--color",
        "never",
        "--max-nodes",
        "400000",
    ]) else {
        return;
    };
    let start = |t: &str| -> usize {
        let l = t.lines().find(|l| l.contains(" folded ")).unwrap();
        let at = l.find("Record[").unwrap() + "Record[".len();
        l[at..].split("..").next().unwrap().parse().unwrap()
    };
    assert!(
        start(&more) > start(&text),
        "--max-nodes 400000 folds later"
    );
}

/// The issue's second input, scaled down: an uncompressed 2 MiB Fetch response of tiny
/// records (300,000; the issue's was 4 MiB), read alone with `decode --raw`, and a
/// capture of the same records in a Produce request.
#[test]
fn uncompressed_fetch_of_tiny_records_is_folded() {
    const N: usize = 300_000;
    let p = scratch("fetch-dense.bin");
    std::fs::write(&p, fetch_response(&batch(N, false))).unwrap();
    let f = p.to_str().unwrap();
    let lone = ["decode", "--raw", f, "--api-key", "1", "--api-version", "4"];
    for mode in [
        &["--format", "json"][..],
        &["--no-bytes", "--color", "never"],
    ] {
        let Some(out) = kwire(&[&lone[..], mode].concat()) else {
            return;
        };
        assert!(out.contains("folded"), "{mode:?}: folded shown");
    }
    let Some(out) = kwire(&[&lone[..], &["--format", "summary"]].concat()) else {
        return;
    };
    assert!(out.contains(&format!("records={N}")), "{out}");

    let c = scratch("produce-dense.pcap");
    capture(&c, &[produce(&batch(N, false))]);
    let c = c.to_str().unwrap();
    let Some(s) = kwire(&["read", c, "--format", "summary"]) else {
        return;
    };
    assert!(s.contains(&format!("records={N}")), "{s}");
    let Some(j) = kwire(&["read", c, "--format", "json"]) else {
        return;
    };
    assert!(j.contains("\"type\":\"folded\""));
    let Some(t) = kwire(&["read", c, "-V", "--color", "never"]) else {
        return;
    };
    assert!(t.contains("records read and checked, not shown"));
    let Some(v) = kwire(&["read", c, "--format", "values"]) else {
        return;
    };
    assert!(v.contains("\"Records\":\"0000"), "records as hex");
}

/// Records past the budget are checked: a bad one among them is an error on the folded
/// node, naming it, in every detail level.
#[test]
fn errors_among_folded_records_are_reported() {
    const N: usize = 40_000;
    let mut raw: Vec<u8> = TINY.iter().copied().cycle().take(TINY.len() * N).collect();
    // Record 39,000: a header count of 1 with no header bytes left inside its length.
    let at = 39_000 * TINY.len();
    raw[at + 6] = 0x02;
    let b = batch_of(N, &raw, false);
    let c = scratch("produce-bad-folded.pcap");
    capture(&c, &[produce(&b)]);
    let c = c.to_str().unwrap();
    let budget = ["read", c, "--max-nodes", "90000"];
    let Some(summary) = kwire(&[&budget[..], &["--format", "summary"]].concat()) else {
        return;
    };
    assert!(summary.contains("!! 1 decode error"), "{summary}");
    let want = "1 folded record(s) with errors; the first, Record[39000]";
    for mode in [
        &["--format", "json"][..],
        &["--color", "never", "--no-bytes"],
    ] {
        let Some(out) = kwire(&[&budget[..], mode].concat()) else {
            return;
        };
        assert!(out.contains(want), "{mode:?}: {out}");
    }
}

/// Any array, not only records: a DeleteTopics v3 request naming 400,000 topics (one
/// name not UTF-8) builds nodes for the budget's worth, folds the rest into one node
/// that carries the bad name's error, and the detail levels agree on it.
#[test]
fn long_arrays_are_folded_too() {
    const N: usize = 400_000;
    let mut b = Vec::new();
    b.extend(20i16.to_be_bytes()); // api_key DeleteTopics
    b.extend(3i16.to_be_bytes()); // api_version
    b.extend(5i32.to_be_bytes()); // correlation_id
    str16(&mut b, "test");
    b.extend((N as i32).to_be_bytes());
    for i in 0..N {
        if i == 390_000 {
            b.extend(2i16.to_be_bytes());
            b.extend([0xff, 0xfe]);
        } else {
            str16(&mut b, "t");
        }
    }
    b.extend(30_000i32.to_be_bytes()); // TimeoutMs
    let c = scratch("delete-topics-dense.pcap");
    capture(&c, &[sized(b)]);
    let c = c.to_str().unwrap();
    let Some(text) = kwire(&["read", c, "--no-bytes", "--color", "never"]) else {
        return;
    };
    let folded = text
        .lines()
        .find(|l| l.contains(" folded "))
        .expect("folded");
    assert!(
        folded.contains("elements read and checked, not shown"),
        "{folded}"
    );
    assert!(
        text.contains("1 folded element(s) with errors; the first, TopicNames[390000]"),
        "{text}"
    );
    assert!(
        text.contains("TimeoutMs int32 = 30000"),
        "the walk goes on after the fold"
    );
    let Some(summary) = kwire(&["read", c, "--format", "summary"]) else {
        return;
    };
    assert!(summary.contains("!! 1 decode error"), "{summary}");
    let Some(json) = kwire(&["read", c, "--format", "json"]) else {
        return;
    };
    assert!(json.contains("\"type\":\"folded\""));
}

/// Many large decompressed buffers freed on many threads: glibc's malloc, left to raise
/// its mapping threshold, serves multi-MiB buffers from its per-thread arenas, which keep
/// what is freed, so peak RSS grew with `--threads` past what the shared budget counts
/// (the full-size dense-threads input with 32 batches at `--threads 32`: 321 MiB). Here
/// 24 zstd batches, each one record with a 6 MiB value (a few KB compressed) and each in
/// a job of its own: 24 threads peak near one thread.
#[test]
fn large_buffers_on_many_threads_go_back_to_the_system() {
    const VALUE: usize = 6 << 20;
    let mut rec = vec![0u8, 0, 0, 0x01]; // attributes, timestampDelta, offsetDelta, key null
    let mut n = (VALUE as u64) << 1; // value length (zigzag varint)
    while n >= 0x80 {
        rec.push((n as u8) | 0x80);
        n >>= 7;
    }
    rec.push(n as u8);
    rec.extend(std::iter::repeat_n(0u8, VALUE));
    rec.push(0); // no headers
    let mut raw = Vec::new();
    let mut len = (rec.len() as u64) << 1;
    while len >= 0x80 {
        raw.push((len as u8) | 0x80);
        len >>= 7;
    }
    raw.push(len as u8);
    raw.extend(&rec);
    let big = produce(&batch_of(1, &raw, true));
    let filler = produce(&batch(40_000, false));
    let frames: Vec<Vec<u8>> = (0..24)
        .flat_map(|_| [big.clone(), filler.clone()])
        .collect();
    let p = scratch("large-values-many.pcap");
    capture(&p, &frames);
    let f = p.to_str().unwrap();
    let Some((one_out, one)) = run_peak(&["read", f, "--format", "summary", "--threads", "1"])
    else {
        return;
    };
    let Some((many_out, many)) = run_peak(&["read", f, "--format", "summary", "--threads", "24"])
    else {
        return;
    };
    assert!(one_out == many_out, "24 threads print what one prints");
    // Measured (debug build): 30 MiB at one thread, 196 MiB at 24 before
    // `memory::return_large_buffers`, 71 MiB after (the rest: the budget's 32 MiB that
    // waiting workers hold between them, and their decoders).
    assert!(
        many < one + 96 * 1024,
        "--threads 24 peaks at {many} KiB, --threads 1 at {one} KiB"
    );
}

/// Issue 25: `--format html` kept the whole document and wrote every byte of a
/// decompressed buffer as a cell (a 219-byte input reached 250 MiB and wrote 110 MB).
/// A capture of about 200 bytes of zstd holding 150,000 tiny records, printed as HTML by
/// `read` and `decode`, and as Markdown: the peak stays under the bound, the HTML is a
/// small multiple of the tree it shows, and its grids still account for every byte
/// (cells, and collapsed rows that say how many bytes they stand for).
#[test]
fn zstd_batch_of_150k_records_as_html_is_bounded() {
    const N: usize = 150_000;
    let b = batch(N, true);
    assert!(b.len() < 300, "{} bytes of batch", b.len());
    let frame = produce(&b);
    let p = scratch("zstd-150k.pcap");
    capture(&p, std::slice::from_ref(&frame));
    let raw = scratch("zstd-150k.bin");
    std::fs::write(&raw, &frame).unwrap();
    let (f, r) = (p.to_str().unwrap(), raw.to_str().unwrap());
    for args in [
        vec!["read", f, "--format", "html"],
        vec!["decode", "--raw", r, "--format", "html"],
        vec![
            "read",
            f,
            "--format",
            "html",
            "--max-nodes",
            "20000",
            "--max-elements",
            "1000",
        ],
    ] {
        let Some((html, peak)) = run_peak(&args) else {
            return;
        };
        assert!(peak < 96 * 1024, "{args:?}: peak RSS {peak} KiB");
        assert!(
            html.len() < 4 << 20,
            "{args:?}: {} bytes of HTML",
            html.len()
        );
        assert!(
            html.trim_end().ends_with("</html>"),
            "{args:?}: a whole document"
        );
        // Buffer 1 (the 1.05 MB of records): cells plus collapsed bytes cover it all.
        let grid = html
            .split("data-g=\"m1-1\"")
            .nth(1)
            .and_then(|g| g.split("</table>").next())
            .expect("the decompressed buffer's grid");
        let cells = grid.matches("<td class=\"b ").count();
        let gaps: usize = grid
            .split("<tr class=\"gap\" data-n=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap().parse::<usize>().unwrap())
            .sum();
        assert_eq!(cells + gaps, N * TINY.len(), "{args:?}");
        assert!(gaps > 0, "{args:?}: rows collapsed");
        assert!(
            html.contains("... "),
            "{args:?}: the elements past --max-elements said"
        );
    }
    for args in [
        vec!["read", f, "--format", "md"],
        vec!["decode", "--raw", r, "--format", "md"],
        vec![
            "read",
            f,
            "--format",
            "md",
            "--max-nodes",
            "20000",
            "--max-elements",
            "1000",
        ],
    ] {
        let Some((md, peak)) = run_peak(&args) else {
            return;
        };
        assert!(peak < 96 * 1024, "{args:?}: peak RSS {peak} KiB");
        // The grid grows with the tree, not with the 1.05 MB of records (4.9 MB before).
        assert!(
            md.len() < 1 << 20,
            "{args:?}: {} bytes of Markdown",
            md.len()
        );
        assert!(
            md.contains("records read and checked, not shown"),
            "{args:?}: md folds"
        );
        // Buffer 1's grid: the bytes of its rows plus those its collapsed lines stand
        // for are every byte of the records.
        let grid = md
            .split("decompressed buffer 1 (")
            .nth(1)
            .and_then(|g| g.split("```").next())
            .expect("the decompressed buffer's grid");
        let (mut shown, mut collapsed) = (0usize, 0usize);
        for l in grid.lines().skip(2) {
            let Some((_, rest)) = l.split_once(' ') else {
                continue;
            };
            if let Some(n) = rest
                .split_once(" B), not shown in the tree")
                .and_then(|(a, _)| a.rsplit_once('('))
                .and_then(|(_, n)| n.parse::<usize>().ok())
            {
                collapsed += n;
            } else {
                let hex = rest.trim_start().split("  ").next().unwrap_or("");
                shown += hex.split_whitespace().count();
            }
        }
        assert_eq!(shown + collapsed, N * TINY.len(), "{args:?}");
        assert!(collapsed > 0, "{args:?}: rows collapsed");
    }
}

// Lossy captures (issue 25 parts 1 and 6): connections that lose segments, or hold
// partial frames, all at once. Their in-flight bytes share one budget (16 MiB by
// default, `--max-in-flight`), so the peak stays under 64 MiB at any count.

/// Peak RSS the lossy and many-connection cases may reach, in KiB.
const LOSSY_PEAK_KIB: i64 = 64 * 1024;

/// `count` records of `value` bytes each (null keys, no headers), as a batch's records.
fn records_of(count: usize, value: usize) -> Vec<u8> {
    let mut raw = Vec::new();
    for i in 0..count {
        let mut rec = vec![0u8, 0]; // attributes, timestampDelta
        varint(&mut rec, i as i64); // offsetDelta
        varint(&mut rec, -1); // key null
        varint(&mut rec, value as i64);
        rec.extend(std::iter::repeat_n(b'v', value));
        rec.push(0); // no headers
        varint(&mut raw, rec.len() as i64);
        raw.extend(rec);
    }
    raw
}

/// A Produce v3 request with correlation_id `corr` and one batch of `count` records of
/// `value` bytes.
fn produce_of(corr: i32, count: usize, value: usize) -> Vec<u8> {
    let mut f = produce(&batch_of(count, &records_of(count, value), false));
    f[8..12].copy_from_slice(&corr.to_be_bytes());
    f
}

/// A Produce v3 response to `corr` (one topic, one partition, no error).
fn produce_response(corr: i32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(corr.to_be_bytes());
    b.extend(1i32.to_be_bytes()); // Responses
    str16(&mut b, "dense");
    b.extend(1i32.to_be_bytes()); // PartitionResponses
    b.extend(0i32.to_be_bytes()); // Index
    b.extend(0i16.to_be_bytes()); // ErrorCode
    b.extend(100i64.to_be_bytes()); // BaseOffset
    b.extend((-1i64).to_be_bytes()); // LogAppendTimeMs
    b.extend(0i32.to_be_bytes()); // ThrottleTimeMs
    sized(b)
}

/// An ApiVersions v0 request (header v1) with correlation_id `corr`.
fn api_versions(corr: i32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(18i16.to_be_bytes());
    b.extend(0i16.to_be_bytes());
    b.extend(corr.to_be_bytes());
    str16(&mut b, "test");
    sized(b)
}

/// Its response: no error, no API keys.
fn api_versions_response(corr: i32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(corr.to_be_bytes());
    b.extend(0i16.to_be_bytes());
    b.extend(0i32.to_be_bytes());
    sized(b)
}

/// Connection `i`'s endpoints (client port 20000 + i on 10.1.x.y, the broker on 9092).
fn flow_of(i: usize) -> TcpFlow {
    TcpFlow::new(
        SocketAddrV4::new(
            Ipv4Addr::new(10, 1, (i >> 8) as u8, i as u8),
            20000 + i as u16,
        ),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092),
        [1000 + i as u32 * 7919, 5000],
    )
}

/// The issue's first lossy case: `n` connections, all open at once, each sending a 1 MB
/// Produce (100 records of 10 KB) of which the capture lost 16 KiB (the segments
/// overlapping bytes 500,000..516,384), then its response, two ApiVersions exchanges,
/// and FINs. Step by step across the connections: every connection's Produce is in
/// flight before the first answer. With `acks`, the receiver's delayed ACKs (every
/// second segment) cover the lost bytes at once; without, only the response's ACK
/// does, after every connection's Produce has gone by (what the budget must hold).
fn lossy_produce(path: &Path, n: usize, acks: bool) {
    let mut w = PcapWriter::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ))
    .unwrap();
    let req = produce_of(1, 100, 10_000);
    let mut flows: Vec<TcpFlow> = (0..n).map(flow_of).collect();
    let mut t = 1_000_000u64;
    for f in &mut flows {
        f.open(&mut w, t).unwrap();
        t += 200;
    }
    for f in &mut flows {
        f.send_losing(&mut w, true, t, &req, 500_000..516_384, acks)
            .unwrap();
        t += 10_000;
    }
    for f in &mut flows {
        f.send(&mut w, false, t, &produce_response(1)).unwrap();
        t += 100;
    }
    for corr in [2, 3] {
        for f in &mut flows {
            f.send(&mut w, true, t, &api_versions(corr)).unwrap();
            t += 100;
        }
        for f in &mut flows {
            f.send(&mut w, false, t, &api_versions_response(corr))
                .unwrap();
            t += 100;
        }
    }
    for f in &mut flows {
        f.close(&mut w, t).unwrap();
        t += 100;
    }
    use std::io::Write;
    w.into_inner().flush().unwrap();
}

/// Checks a summary output of [`lossy_produce`] with `n` connections: each Produce is
/// shown incomplete at once, before its response; every response is paired with its
/// request; the gap notices name the lost range; nothing waits to the end.
fn check_lossy_produce(n: usize, out: &str, err: &str) {
    let responses: Vec<&str> = out.lines().filter(|l| l.contains(" response ")).collect();
    assert_eq!(responses.len(), 3 * n, "every response shown:\n{err}");
    let unpaired: Vec<&&str> = responses
        .iter()
        .filter(|l| !l.contains("latency="))
        .collect();
    assert!(
        unpaired.is_empty(),
        "{} of {} responses unpaired, e.g. {:?}",
        unpaired.len(),
        responses.len(),
        unpaired.first()
    );
    assert!(!err.contains("got no response"), "{err}");
    let summary = err.lines().last().unwrap_or("");
    assert!(
        summary.contains(&format!("{n} incomplete")),
        "each Produce incomplete: {summary}"
    );
}

#[test]
fn lossy_produce_on_100_connections_pairs_and_stays_bounded() {
    lossy_produce_case(100, true);
    lossy_produce_case(100, false);
}

#[test]
fn lossy_produce_on_300_connections_pairs_and_stays_bounded() {
    lossy_produce_case(300, false);
}

fn lossy_produce_case(n: usize, acks: bool) {
    let p = scratch(&format!("lossy-produce-{n}-{acks}.pcap"));
    lossy_produce(&p, n, acks);
    let f = p.to_str().unwrap();
    let Some((out, err, _)) = run_under(
        &[
            "read",
            f,
            "--format",
            "summary",
            "--threads",
            "1",
            "--all-notices",
        ],
        LOSSY_PEAK_KIB,
    ) else {
        return;
    };
    check_lossy_produce(n, &out, &err);
    // The lost range, in stream bytes of the request (the segments 342..354 of 1460
    // bytes: 499,320..516,840).
    let gaps = err
        .lines()
        .filter(|l| {
            l.contains("17520 bytes missing from the TCP stream")
                && l.contains("stream bytes 499320..516840")
        })
        .count();
    assert_eq!(
        gaps,
        n,
        "a gap notice per connection, with its range:\n{}",
        &err[..err.len().min(4000)]
    );
    std::fs::remove_file(&p).ok();
}

/// Part 6's case: 2,000 connections, each open and holding half of a 1 MB Produce (one
/// record of 1 MB) at the end of the capture. Without a budget each held its half
/// (1.07 GB); with it, the oldest partial frames are shown incomplete as the budget
/// passes, the rest of each skipped, and the closing notice counts them.
#[test]
fn half_frames_on_2000_connections_share_one_budget() {
    const N: usize = 2000;
    let p = scratch("half-frames-2000.pcap");
    let frame = produce_of(1, 1, 1_000_000);
    let half = &frame[..frame.len() / 2];
    {
        let mut w =
            PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(&p).unwrap())).unwrap();
        let mut t = 1_000_000u64;
        for i in 0..N {
            let mut f = flow_of(i);
            f.open(&mut w, t).unwrap();
            f.send(&mut w, true, t + 1000, half).unwrap();
            t += 10_000;
        }
        use std::io::Write;
        w.into_inner().flush().unwrap();
    }
    let f = p.to_str().unwrap();
    let run = run_under(
        &["read", f, "--format", "summary", "--threads", "1"],
        LOSSY_PEAK_KIB,
    );
    std::fs::remove_file(&p).ok();
    let Some((out, err, _)) = run else {
        return;
    };
    // Every frame shown, incomplete.
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("Produce v3 request"))
            .count(),
        N,
        "{err}"
    );
    let summary = err.lines().last().unwrap_or("");
    assert!(summary.contains(&format!("{N} incomplete")), "{summary}");
    // The closing notice counts the partial frames the budget cut: all but the few that
    // fit in it at the end (which the end of the capture cuts).
    let budget = err
        .lines()
        .find(|l| l.contains("partial frames shown incomplete"))
        .unwrap_or_else(|| {
            panic!(
                "no budget notice:\n{}",
                &err[err.len().saturating_sub(3000)..]
            )
        });
    let cut: usize = budget
        .split("times: ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {budget:?}"));
    // Each cut frame also has a notice of its own (the closing line counts them).
    assert!(
        summary.contains(&format!("Dropped x{cut} ")),
        "a notice for each of the {cut} frames cut: {summary}"
    );
    assert!(cut > N - 40 && cut < N, "{cut} cut: {budget}");
}

#[path = "common/cut.rs"]
mod cut;

/// Where a record's TCP header and payload are (Ethernet, IPv4): (IP header offset, TCP
/// header offset, payload offset), or `None`.
fn tcp_at(d: &[u8]) -> Option<(usize, usize, usize)> {
    if d.len() < 34 || d[12..14] != [0x08, 0x00] {
        return None;
    }
    let ip = 14;
    let tcp = ip + ((d[ip] & 0x0f) as usize) * 4;
    let payload = tcp + ((*d.get(tcp + 12)? >> 4) as usize) * 4;
    (payload <= d.len() && d[ip + 9] == 6).then_some((ip, tcp, payload))
}

/// The issue's second lossy case: a real lab session (`mixed_large`: three clients at
/// once, records of 60-250 kB over many TCP segments) that lost the records `lost`
/// (0-based), replicated `copies` times one after the other (each copy's clients on
/// addresses of their own), written as pcap.
fn lab_lossy(recs: &[cut::Rec], lost: [usize; 2], copies: usize) -> PathBuf {
    let port = |d: &[u8], at: usize| u16::from_be_bytes([d[at], d[at + 1]]);
    let first = recs[0].time;
    let span = recs.last().unwrap().time.secs - first.secs + 2;
    let p = scratch(&format!("lab-lossy-{copies}.pcap"));
    let mut w =
        PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(&p).unwrap())).unwrap();
    for c in 0..copies {
        for (i, r) in recs.iter().enumerate() {
            if lost.contains(&i) || r.linktype != 1 {
                continue;
            }
            let mut d = r.data.clone();
            if let Some((ip, tcp, _)) = tcp_at(&d) {
                // The client's address (the side not on 9092): 10.c.c.1.
                let client = [10, (c >> 8) as u8, c as u8, 1];
                if port(&d, tcp) != 9092 {
                    d[ip + 12..ip + 16].copy_from_slice(&client);
                } else {
                    d[ip + 16..ip + 20].copy_from_slice(&client);
                }
            }
            let secs = (r.time.secs - first.secs) as u64 + (c as u64) * span as u64;
            w.packet(1_000_000 * secs + u64::from(r.time.nanos / 1000), &d)
                .unwrap();
        }
    }
    use std::io::Write;
    w.into_inner().flush().unwrap();
    p
}

/// Two records to lose in `recs`: the second segment of each of the first two Produce
/// requests that span at least three records (from the summary `out` of the whole
/// capture, lines `#A-B ... Produce vN request`), so that each loss falls inside a frame
/// and leaves its size prefix.
fn middle_segments(recs: &[cut::Rec], out: &str) -> [usize; 2] {
    let mut lost = Vec::new();
    for l in out
        .lines()
        .filter(|l| l.contains(" Produce v") && l.contains(" request "))
    {
        let Some((a, b)) = l
            .strip_prefix('#')
            .and_then(|l| l.split(' ').next())
            .and_then(|r| r.split_once('-'))
        else {
            continue;
        };
        let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) else {
            continue;
        };
        // Record a + 1 (1-based) is index a: a data segment of the same sender.
        let same = |i: usize| {
            tcp_at(&recs[i].data)
                .map(|(_, t, p)| (recs[i].data[t..t + 2].to_vec(), recs[i].data.len() > p))
        };
        if b >= a + 2
            && same(a - 1).map(|x| x.0) == same(a).map(|x| x.0)
            && same(a).is_some_and(|x| x.1)
        {
            lost.push(a);
        }
        if lost.len() == 2 {
            break;
        }
    }
    assert_eq!(
        lost.len(),
        2,
        "two Produce requests over three records or more"
    );
    [lost[0], lost[1]]
}

/// Paired responses and the gap notices of a summary run.
fn paired_and_gaps(out: &str, err: &str) -> (usize, usize) {
    (
        out.lines()
            .filter(|l| l.contains(" response ") && l.contains("latency="))
            .count(),
        err.lines()
            .filter(|l| l.contains("bytes missing from the TCP stream"))
            .count(),
    )
}

/// The lab session with two lost segments, replicated 10, 40 and 80 times: every copy pairs
/// what the whole session pairs, each copy reports its two gaps, and the peak stays
/// under 64 MiB (the issue: 40, 130 and 249 MB, growing without end).
#[test]
fn lab_session_with_lost_segments_replicated_stays_bounded() {
    let whole = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/lab/mixed_large.pcapng");
    if !whole.exists() {
        common::skip("bounded_memory", "no captures/lab/mixed_large.pcapng");
        return;
    }
    let Some((out, err, _)) = run_under(
        &[
            "read",
            whole.to_str().unwrap(),
            "--format",
            "summary",
            "--threads",
            "1",
        ],
        LOSSY_PEAK_KIB,
    ) else {
        return;
    };
    let (paired_whole, _) = paired_and_gaps(&out, &err);
    assert!(paired_whole > 100, "{paired_whole} paired in mixed_large");
    let recs = cut::records(&whole);
    let lost = middle_segments(&recs, &out);
    eprintln!(
        "mixed_large: records {} and {} lost",
        lost[0] + 1,
        lost[1] + 1
    );
    for copies in [10, 40, 80] {
        let p = lab_lossy(&recs, lost, copies);
        let run = run_under(
            &[
                "read",
                p.to_str().unwrap(),
                "--format",
                "summary",
                "--threads",
                "1",
                "--all-notices",
            ],
            LOSSY_PEAK_KIB,
        );
        std::fs::remove_file(&p).ok();
        let Some((out, err, _)) = run else {
            return;
        };
        let (paired, gaps) = paired_and_gaps(&out, &err);
        assert_eq!(gaps, 2 * copies, "records {lost:?} lost in each copy");
        assert_eq!(
            paired,
            paired_whole * copies,
            "every copy pairs what the whole session pairs"
        );
        let summary = err.lines().last().unwrap_or("");
        assert!(
            summary.contains(&format!("{} incomplete", 2 * copies)),
            "{summary}"
        );
    }
}

// TLS connections under the one budget (issue 25 part 6): TLS 1.3 records built here
// with the key log's secrets (RFC 8446 section 7: HKDF-Expand-Label, nonce = IV XOR the
// record's sequence number, the header as additional data).

#[path = "common/tls_build.rs"]
mod tls_build;
use tls_build::{handshake_record, seal13};

/// The four TLS 1.3 secrets every connection of [`tls_partial_records`] uses (client
/// and server handshake, client and server application traffic).
const TLS_SECRETS: [[u8; 32]; 4] = [[1; 32], [2; 32], [3; 32], [4; 32]];

/// Connection `i`'s client random.
fn client_random(i: usize) -> [u8; 32] {
    let mut r = [0x5a; 32];
    r[..8].copy_from_slice(&(i as u64).to_be_bytes());
    r
}

/// The TLS 1.3 start both TLS budget captures share: writes the key log of `n`
/// connections ([`TLS_SECRETS`] for each [`client_random`]) to `keys`, and gives the
/// server's first flight (ServerHello with TLS_AES_128_GCM_SHA256, ChangeCipherSpec, and
/// its Finished sealed with the server handshake secret), and the (empty) Finished
/// message both sides send.
fn tls13_start(keys: &Path, n: usize) -> (Vec<u8>, Vec<u8>) {
    let [chs, shs, cts, sts] = TLS_SECRETS;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let mut log = String::new();
    for i in 0..n {
        let r = hex(&client_random(i));
        for (label, s) in [
            ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", chs),
            ("SERVER_HANDSHAKE_TRAFFIC_SECRET", shs),
            ("CLIENT_TRAFFIC_SECRET_0", cts),
            ("SERVER_TRAFFIC_SECRET_0", sts),
        ] {
            log.push_str(&format!("{label} {r} {}\n", hex(&s)));
        }
    }
    std::fs::write(keys, log).unwrap();
    let finished = {
        let mut f = vec![20, 0, 0, 32];
        f.extend([0u8; 32]);
        f
    };
    let server_first = {
        let mut sh = vec![3, 3];
        sh.extend([9u8; 32]);
        // no session id, TLS_AES_128_GCM_SHA256, no compression, supported_versions 1.3
        sh.extend([0, 0x13, 0x01, 0, 0, 6, 0, 43, 0, 2, 3, 4]);
        let mut b = handshake_record(2, &sh);
        b.extend([20, 3, 3, 0, 1, 1]);
        b.extend(seal13(&shs, 0, &finished, 22));
        b
    };
    (server_first, finished)
}

/// `n` TLS 1.3 connections, all open at once, each holding a partial record of a Produce
/// request when the next one starts: the handshake, an ApiVersions exchange (corr 1),
/// then a Produce (corr 2, 20 kB) in three records, of which the second (16,000 bytes of
/// plaintext) is sent only in part (15,000 bytes of its 16,022) before the next
/// connection's turn. Then each connection sends the rest, an ApiVersions request
/// (corr 3), gets both responses, and closes. Writes the capture and its key log.
fn tls_partial_records(cap: &Path, keys: &Path, n: usize) {
    let [chs, _, cts, sts] = TLS_SECRETS;
    let (server_first, finished) = tls13_start(keys, n);
    let produce = produce_of(2, 2, 10_000);
    let (a, b, c) = (&produce[..4000], &produce[4000..20_000], &produce[20_000..]);
    // Per connection: its ClientHello; its Finished, ApiVersions, the Produce's first
    // record and part of its second; the rest.
    let flights: Vec<[Vec<u8>; 3]> = (0..n)
        .map(|i| {
            let mut ch = vec![3, 3];
            ch.extend(client_random(i));
            ch.extend([0, 0, 2, 0x13, 0x01, 1, 0, 0, 0]);
            let hello = handshake_record(1, &ch);
            let mut first = seal13(&chs, 0, &finished, 22);
            first.extend(seal13(&cts, 0, &api_versions(1), 23));
            first.extend(seal13(&cts, 1, a, 23));
            let rec_b = seal13(&cts, 2, b, 23);
            first.extend(&rec_b[..15_000]);
            let mut rest = rec_b[15_000..].to_vec();
            rest.extend(seal13(&cts, 3, c, 23));
            rest.extend(seal13(&cts, 4, &api_versions(3), 23));
            [hello, first, rest]
        })
        .collect();
    let mut w =
        PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(cap).unwrap())).unwrap();
    let mut flows: Vec<TcpFlow> = (0..n).map(flow_of).collect();
    let mut t = 1_000_000u64;
    for (i, f) in flows.iter_mut().enumerate() {
        f.open(&mut w, t).unwrap();
        f.send(&mut w, true, t + 200, &flights[i][0]).unwrap();
        f.send(&mut w, false, t + 300, &server_first).unwrap();
        f.send(&mut w, true, t + 400, &flights[i][1]).unwrap();
        let answer = seal13(&sts, 0, &api_versions_response(1), 23);
        f.send(&mut w, false, t + 800, &answer).unwrap();
        t += 1000;
    }
    for (i, f) in flows.iter_mut().enumerate() {
        f.send(&mut w, true, t, &flights[i][2]).unwrap();
        let mut answers = seal13(&sts, 1, &produce_response(2), 23);
        answers.extend(seal13(&sts, 2, &api_versions_response(3), 23));
        f.send(&mut w, false, t + 200, &answers).unwrap();
        f.close(&mut w, t + 400).unwrap();
        t += 1000;
    }
    use std::io::Write;
    w.into_inner().flush().unwrap();
}

/// `kwire read CAP --tls-keylog KEYS --format summary --threads 1` under
/// [`LOSSY_PEAK_KIB`]: stdout and stderr (`None`: the test skips); both files removed.
fn read_tls_under_budget(cap: &Path, keys: &Path) -> Option<(String, String)> {
    let run = run_under(
        &[
            "read",
            cap.to_str().unwrap(),
            "--tls-keylog",
            keys.to_str().unwrap(),
            "--format",
            "summary",
            "--threads",
            "1",
        ],
        LOSSY_PEAK_KIB,
    );
    std::fs::remove_file(cap).ok();
    std::fs::remove_file(keys).ok();
    run.map(|(out, err, _)| (out, err))
}

/// 4,000 TLS 1.3 connections each holding 15,000 bytes of an unfinished record (and
/// 4,000 bytes of the Produce frame it continues): 60 MB of TLS records alone, without
/// the budget. With it, the oldest partial records are given up (skipped by their
/// headers' lengths, the sequence number moved on), and every later record still
/// decrypts: each connection's ApiVersions after the loss is decoded and paired, and
/// so is each Produce response (its request shown incomplete).
#[test]
fn tls_partial_records_on_4000_connections_share_one_budget() {
    const N: usize = 4000;
    let (cap, keys) = (
        scratch("tls-partial-4000.pcap"),
        scratch("tls-partial-4000.keys"),
    );
    tls_partial_records(&cap, &keys, N);
    let Some((out, err)) = read_tls_under_budget(&cap, &keys) else {
        return;
    };
    let tail = &err[err.len().saturating_sub(3000)..];
    assert!(!err.contains("does not decrypt"), "{tail}");
    assert!(!err.contains("stayed encrypted"), "{tail}");
    let count = |s: &str| out.lines().filter(|l| l.contains(s)).count();
    assert_eq!(count("ApiVersions v0 request"), 2 * N, "{tail}");
    assert_eq!(count("Produce v3 request"), N, "{tail}");
    let responses: Vec<&str> = out.lines().filter(|l| l.contains(" response ")).collect();
    assert_eq!(responses.len(), 3 * N, "{tail}");
    let unpaired = responses.iter().filter(|l| !l.contains("latency=")).count();
    assert_eq!(unpaired, 0, "every response paired: {tail}");
    let budget = err
        .lines()
        .find(|l| l.contains("partial TLS records given up"))
        .unwrap_or_else(|| panic!("no budget notice: {tail}"));
    let records: usize = budget
        .split(", ")
        .find_map(|s| s.strip_suffix(" partial TLS records given up and the rest of each skipped"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {budget:?}"));
    // All but the ones that fit in the budget at the end (16 MiB of about 20 kB each).
    assert!(records > N / 2 && records < N, "{records}: {budget}");
    // One notice for each record given up and each frame cut.
    let summary = err.lines().last().unwrap_or("");
    let dropped: usize = summary
        .split("Dropped x")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no Dropped count: {summary}"));
    assert!(
        dropped >= records,
        "{dropped} Dropped notices, {records} records: {summary}"
    );
}

/// `n` TLS 1.3 connections, all open at once, each losing a segment inside its
/// application data (the header of a 2,922-byte record, a Produce with corr 2), so its
/// client direction searches for the next record (`TlsConn::search`): it finds the
/// header of the next record (a Produce, corr 3, 16,022 bytes) and holds the 15,000
/// bytes of it sent before the next connection's turn. Then each sends the rest, two
/// ApiVersions requests (corr 4 and 5), gets four responses, and closes. The receiver's
/// delayed ACKs reveal the gap at once. Writes the capture and its key log.
fn tls_searching(cap: &Path, keys: &Path, n: usize) {
    let [chs, _, cts, sts] = TLS_SECRETS;
    let (server_first, finished) = tls13_start(keys, n);
    let rec_a = seal13(&cts, 1, &produce_of(2, 25, 100), 23);
    let mut first = rec_a.clone();
    let b = produce_of(3, 160, 100);
    let rec_b = seal13(&cts, 2, &b[..16_000], 23);
    first.extend(&rec_b[..15_000]);
    let mut rest = rec_b[15_000..].to_vec();
    rest.extend(seal13(&cts, 3, &b[16_000..], 23));
    rest.extend(seal13(&cts, 4, &api_versions(4), 23));
    rest.extend(seal13(&cts, 5, &api_versions(5), 23));
    let mut w =
        PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(cap).unwrap())).unwrap();
    let mut flows: Vec<TcpFlow> = (0..n).map(flow_of).collect();
    let mut t = 1_000_000u64;
    for (i, f) in flows.iter_mut().enumerate() {
        let mut ch = vec![3, 3];
        ch.extend(client_random(i));
        ch.extend([0, 0, 2, 0x13, 0x01, 1, 0, 0, 0]);
        f.open(&mut w, t).unwrap();
        f.send(&mut w, true, t + 200, &handshake_record(1, &ch))
            .unwrap();
        f.send(&mut w, false, t + 300, &server_first).unwrap();
        let mut fin = seal13(&chs, 0, &finished, 22);
        fin.extend(seal13(&cts, 0, &api_versions(1), 23));
        f.send(&mut w, true, t + 400, &fin).unwrap();
        let answer = seal13(&sts, 0, &api_versions_response(1), 23);
        f.send(&mut w, false, t + 500, &answer).unwrap();
        f.send_losing(&mut w, true, t + 600, &first, 0..1, true)
            .unwrap();
        t += 1000;
    }
    for f in &mut flows {
        f.send(&mut w, true, t, &rest).unwrap();
        let mut answers = seal13(&sts, 1, &produce_response(2), 23);
        answers.extend(seal13(&sts, 2, &produce_response(3), 23));
        answers.extend(seal13(&sts, 3, &api_versions_response(4), 23));
        answers.extend(seal13(&sts, 4, &api_versions_response(5), 23));
        f.send(&mut w, false, t + 200, &answers).unwrap();
        f.close(&mut w, t + 400).unwrap();
        t += 1000;
    }
    use std::io::Write;
    w.into_inner().flush().unwrap();
}

/// 2,000 TLS 1.3 connections each searching for the next record after a gap, and
/// holding 13.5 KB of the candidate found (27 MB in all): the in-flight budget gives up
/// the oldest searches' bytes (a `Dropped` notice each; the search goes on after them
/// and finds the records after), and every connection's stream is found again: the
/// ApiVersions exchanges after the gap decrypt and pair, and nothing stays encrypted.
#[test]
fn tls_searches_after_gaps_on_2000_connections_share_one_budget() {
    const N: usize = 2000;
    let (cap, keys) = (
        scratch("tls-search-2000.pcap"),
        scratch("tls-search-2000.keys"),
    );
    tls_searching(&cap, &keys, N);
    let Some((out, err)) = read_tls_under_budget(&cap, &keys) else {
        return;
    };
    let tail = &err[err.len().saturating_sub(3000)..];
    assert!(!err.contains("not resynchronised"), "{tail}");
    assert!(!err.contains("stays encrypted"), "{tail}");
    assert!(!err.contains("stayed encrypted"), "{tail}");
    let count = |s: &str| out.lines().filter(|l| l.contains(s)).count();
    assert_eq!(count("ApiVersions v0 request"), 3 * N, "{tail}");
    let paired = out
        .lines()
        .filter(|l| l.contains("ApiVersions v0 response") && l.contains("latency="))
        .count();
    assert_eq!(paired, 3 * N, "{tail}");
    let budget = err
        .lines()
        .find(|l| l.contains("times a search for the next TLS record after a gap gave up"))
        .unwrap_or_else(|| panic!("no budget notice: {tail}"));
    let searches: usize = budget
        .split(", ")
        .find_map(|s| {
            s.strip_suffix(
                " times a search for the next TLS record after a gap gave up the bytes it held",
            )
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {budget:?}"));
    assert!(searches > 0 && searches < N, "{searches}: {budget}");
}

/// Two thousand connections whose ClientHello never completes: each sends four whole
/// TLS handshake records (64 KB) of a handshake message that says it is 600,000 bytes
/// long, and nothing more (a hostile or cut capture). The unfinished handshake messages
/// are held in the in-flight budget; past it, the oldest handshakes are given up with a
/// notice each (their connections' later records would stay encrypted), so 128 MB of
/// held handshakes stay under the bound.
#[test]
fn unfinished_tls_handshakes_on_2000_connections_share_one_budget() {
    const N: usize = 2000;
    let p = scratch("tls-handshakes-2000.pcap");
    {
        let mut w =
            PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(&p).unwrap())).unwrap();
        let mut flows: Vec<TcpFlow> = (0..N).map(flow_of).collect();
        let mut t = 1_000_000u64;
        for f in &mut flows {
            f.open(&mut w, t).unwrap();
            t += 200;
        }
        for k in 0..4 {
            for f in &mut flows {
                let mut rec = vec![22u8, 3, 1, 0x3e, 0x80]; // handshake, 16,000 bytes
                let mut body = vec![0u8; 16_000];
                if k == 0 {
                    // ClientHello of 600,000 bytes (0x0927c0), then its legacy_version.
                    body[..6].copy_from_slice(&[1, 0x09, 0x27, 0xc0, 3, 3]);
                }
                rec.extend_from_slice(&body);
                f.send(&mut w, true, t, &rec).unwrap();
                t += 1000;
            }
        }
        use std::io::Write;
        w.into_inner().flush().unwrap();
    }
    let run = run_under(
        &[
            "read",
            p.to_str().unwrap(),
            "--format",
            "summary",
            "--threads",
            "1",
        ],
        LOSSY_PEAK_KIB,
    );
    std::fs::remove_file(&p).ok();
    let Some((_, err, _)) = run else {
        return;
    };
    let tail = &err[err.len().saturating_sub(3000)..];
    // The budget's closing notice counts the handshakes given up apart from partial
    // records, and the summary counts one Dropped notice each.
    let budget = err
        .lines()
        .find(|l| l.contains("unfinished TLS handshakes given up"))
        .unwrap_or_else(|| panic!("no budget notice: {tail}"));
    assert!(!budget.contains("partial TLS records"), "{budget}");
    let given_up: usize = budget
        .split(", ")
        .find_map(|s| {
            s.strip_suffix(
                " unfinished TLS handshakes given up (the records of their connections stay encrypted)",
            )
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {budget:?}"));
    let summary = err.lines().last().unwrap_or("");
    assert!(
        summary.contains(&format!("Dropped x{given_up} ")),
        "{given_up}: {summary}"
    );
    // All but those that fit in the 16 MiB budget at the end (64 KB each).
    assert!(
        given_up > N / 2 && given_up < N,
        "{given_up} handshakes given up: {tail}"
    );
    // The closing line of a connection whose handshake was given up says so, not that
    // there was no ClientHello (the first 50 notices are printed: the oldest
    // connections', whose handshakes were given up first).
    let closing: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("stayed encrypted") || l.contains("no encrypted record was seen"))
        .collect();
    let shed = closing
        .iter()
        .filter(|l| {
            l.contains("(its handshake given up by the in-flight budget)")
                && l.contains("the in-flight budget (all connections) gave up the TLS handshake")
        })
        .count();
    assert!(shed > 0, "{:?}", closing.first());
    assert!(
        !closing
            .iter()
            .any(|l| l.contains("given up") && l.contains("no ClientHello")),
        "{:?}",
        closing.first()
    );
}

/// A thousand connections, each with 1,500 requests that get no response (a
/// broker that stopped answering; a capture of one direction): the requests waiting
/// for a response share one cap over all connections (100,000), so the session's memory
/// stays bounded; past it the oldest are given up and reported unanswered then, and the
/// closing lines count every one of them.
#[test]
fn unanswered_requests_on_1000_connections_share_one_cap() {
    const N: usize = 1000;
    const M: usize = 1500;
    let p = scratch("unanswered-1000.pcap");
    {
        let mut w =
            PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(&p).unwrap())).unwrap();
        let mut flows: Vec<TcpFlow> = (0..N).map(flow_of).collect();
        let mut t = 1_000_000u64;
        for f in &mut flows {
            f.open(&mut w, t).unwrap();
            t += 200;
        }
        for f in &mut flows {
            let reqs: Vec<u8> = (1..=M as i32).flat_map(api_versions).collect();
            f.send(&mut w, true, t, &reqs).unwrap();
            t += 1000;
        }
        use std::io::Write;
        w.into_inner().flush().unwrap();
    }
    let run = run_under(
        &[
            "read",
            p.to_str().unwrap(),
            "--format",
            "summary",
            "--threads",
            "1",
            "-Y",
            "api == Fetch",
        ],
        LOSSY_PEAK_KIB,
    );
    std::fs::remove_file(&p).ok();
    let Some((out, err, _)) = run else {
        return;
    };
    assert!(out.is_empty(), "nothing matches the filter");
    let tail = &err[err.len().saturating_sub(3000)..];
    let summary = err.lines().last().unwrap_or("");
    assert!(
        summary.contains(&format!("{} unanswered requests", N * M)),
        "every request counted unanswered: {summary}"
    );
    let given_up = format!(
        "{} requests given up unanswered before the end",
        N * M - 100_000
    );
    assert!(err.contains(&given_up), "{tail}");
    // Each given up with a notice at the time (the first few shown, all counted).
    assert!(
        err.contains("gave up the oldest, request correlation_id 1 (api_key 18 v0"),
        "{tail}"
    );
    assert!(
        summary.contains(&format!("Unanswered x{}", N * M - 100_000)),
        "{summary}"
    );
}

/// `-Y unanswered` matches every request the closing line counts unanswered, those the
/// pending cap gave up before the end included: 24 connections of 5,000 requests each
/// that get no response (120,000, so 20,000 past the cap of 100,000 over all connections),
/// after exchanges answered on another connection. The first pass keeps what it found in
/// bounded memory.
#[test]
fn unanswered_filter_matches_the_requests_the_cap_gave_up() {
    const N: usize = 24;
    const M: usize = 5000;
    let p = scratch("unanswered-given-up.pcap");
    {
        let mut w =
            PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(&p).unwrap())).unwrap();
        let mut flows: Vec<TcpFlow> = (0..=N).map(flow_of).collect();
        let mut t = 1_000_000u64;
        for f in &mut flows {
            f.open(&mut w, t).unwrap();
            t += 200;
        }
        let (answered, silent) = flows.split_last_mut().unwrap();
        for corr in 1..=50 {
            answered.send(&mut w, true, t, &api_versions(corr)).unwrap();
            answered
                .send(&mut w, false, t + 100, &api_versions_response(corr))
                .unwrap();
            t += 1000;
        }
        for f in silent {
            let reqs: Vec<u8> = (1..=M as i32).flat_map(api_versions).collect();
            f.send(&mut w, true, t, &reqs).unwrap();
            t += 1000;
        }
        use std::io::Write;
        w.into_inner().flush().unwrap();
    }
    let run = run_under(
        &[
            "read",
            p.to_str().unwrap(),
            "--format",
            "summary",
            "-Y",
            "unanswered",
        ],
        LOSSY_PEAK_KIB,
    );
    // kwire stats counts with the same predicate.
    let stats = run.as_ref().and_then(|_| {
        run_under(
            &["stats", p.to_str().unwrap(), "-Y", "unanswered"],
            LOSSY_PEAK_KIB,
        )
    });
    std::fs::remove_file(&p).ok();
    let (Some((out, err, _)), Some((stats, _, _))) = (run, stats) else {
        return;
    };
    let row: Vec<&str> = stats
        .lines()
        .find(|l| l.starts_with("ApiVersions"))
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        row.get(2).copied(),
        Some(&*(N * M).to_string()),
        "stats -Y unanswered counts every request unanswered:\n{stats}"
    );
    let summary = err.lines().last().unwrap_or("");
    assert!(
        summary.contains(&format!("{} unanswered requests", N * M)),
        "every silent request counted unanswered: {summary}"
    );
    assert!(
        err.contains(&format!(
            "{} requests given up unanswered before the end",
            N * M - 100_000
        )),
        "{}",
        &err[err.len().saturating_sub(3000)..]
    );
    let shown = out.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(
        shown,
        N * M,
        "-Y unanswered lists as many requests as the closing line counts: {summary}"
    );
    assert!(
        out.lines().all(|l| l.contains("ApiVersions")),
        "only the requests: {}",
        out.lines()
            .find(|l| !l.contains("ApiVersions"))
            .unwrap_or("")
    );
}

/// A Produce v3 request (correlation_id `corr`, client_id `client`) of one record to
/// partition 0 of `topic`.
fn produce_to(corr: i32, client: &str, topic: &str) -> Vec<u8> {
    let records = batch_of(1, &records_of(1, 10), false);
    let mut b = Vec::new();
    b.extend(0i16.to_be_bytes());
    b.extend(3i16.to_be_bytes());
    b.extend(corr.to_be_bytes());
    str16(&mut b, client);
    b.extend((-1i16).to_be_bytes()); // TransactionalId null
    b.extend(1i16.to_be_bytes()); // Acks
    b.extend(30_000i32.to_be_bytes());
    b.extend(1i32.to_be_bytes());
    str16(&mut b, topic);
    b.extend(1i32.to_be_bytes());
    b.extend(0i32.to_be_bytes());
    b.extend((records.len() as i32).to_be_bytes());
    b.extend(records);
    sized(b)
}

/// Its response: partition 0 of `topic`, no error.
fn produce_response_to(corr: i32, topic: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(corr.to_be_bytes());
    b.extend(1i32.to_be_bytes());
    str16(&mut b, topic);
    b.extend(1i32.to_be_bytes());
    b.extend(0i32.to_be_bytes()); // Index
    b.extend(0i16.to_be_bytes()); // ErrorCode
    b.extend(100i64.to_be_bytes());
    b.extend((-1i64).to_be_bytes());
    b.extend(0i32.to_be_bytes());
    sized(b)
}

/// A report of a capture with more distinct names and keys than the report keeps rows
/// or plot lines for: 2,600 topics of 200-character names produced to by 2,600
/// client_ids, 600 unknown error codes, and requests of 300 unknown api_keys in 5
/// versions each (1,500 (api_key, api_version) pairs). Each cap folds the rest into one
/// row or line, the overview says what was folded, and the peak stays bounded.
#[test]
fn report_of_many_names_and_keys_folds_past_its_caps() {
    const TOPICS: usize = 2_600;
    let p = scratch("many-names.pcap");
    {
        let mut w =
            PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(&p).unwrap())).unwrap();
        let mut f = flow_of(1);
        let mut t = 1_000_000u64;
        f.open(&mut w, t).unwrap();
        let mut corr = 0i32;
        let mut exchange = |w: &mut PcapWriter<_>, req: Vec<u8>, resp: Option<Vec<u8>>| {
            t += 100;
            f.send(w, true, t, &req).unwrap();
            if let Some(r) = resp {
                t += 100;
                f.send(w, false, t, &r).unwrap();
            }
        };
        for i in 0..TOPICS {
            corr += 1;
            let topic = format!("t{i:05}-{}", "x".repeat(200));
            exchange(
                &mut w,
                produce_to(corr, &format!("client-{i}"), &topic),
                Some(produce_response_to(corr, &topic)),
            );
        }
        for i in 0..600i16 {
            corr += 1;
            let mut resp = api_versions_response(corr);
            resp[8..10].copy_from_slice(&(2_000 + i).to_be_bytes());
            exchange(&mut w, api_versions(corr), Some(resp));
        }
        for k in 0..300i16 {
            for v in 0..5i16 {
                corr += 1;
                let mut req = api_versions(corr);
                req[4..6].copy_from_slice(&(1_000 + k).to_be_bytes());
                req[6..8].copy_from_slice(&v.to_be_bytes());
                exchange(&mut w, req, None);
            }
        }
        use std::io::Write;
        w.into_inner().flush().unwrap();
    }
    let out = scratch("many-names.html");
    let run = run_under(
        &["report", p.to_str().unwrap(), "-o", out.to_str().unwrap()],
        LOSSY_PEAK_KIB * 2,
    );
    std::fs::remove_file(&p).ok();
    if run.is_none() {
        return;
    }
    let html = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).ok();
    let folded = html
        .split("<p id=\"folded\"")
        .nth(1)
        .and_then(|s| s.split("</p>").next())
        .unwrap_or_else(|| panic!("no folded paragraph in the overview"));
    for want in [
        // A request and its response each name the topic.
        &format!(
            "{} partition entries of topics past the first 2000",
            2 * (TOPICS - 2_000)
        ),
        // The later client_ids, and the requests that name client_id "test" after them.
        &format!(
            "{} requests of client_ids past the first 2000",
            TOPICS - 2_000 + 600 + 1_500
        ),
        "100 error code fields with names past the first 500 are counted as (other errors)",
        // Produce and ApiVersions, then 254 of the unknown api_keys have a line.
        "230 messages of api_keys past the first 256 are plotted as (other api_keys)",
        "502 requests of (api_key, api_version) pairs past the first 1000 have no first-request page",
    ] {
        assert!(folded.contains(want), "{want:?} not in {folded}");
    }
    let rows = |id: &str| {
        html.split(&format!("id=\"{id}\""))
            .nth(1)
            .and_then(|s| s.split("</table>").next())
            .map_or(0, |t| t.matches("<tr").count())
    };
    // A header row and one row a topic or client kept.
    assert_eq!(rows("t-topics"), 2_001);
    assert_eq!(rows("t-clients"), 2_001);
    assert!(
        html.contains("(other errors)"),
        "the error rows past the cap as one"
    );
    // Topic names are cut at 256 characters in the rows (these are 206: whole).
    assert!(html.contains(&format!("t00000-{}", "x".repeat(200))));
}

/// `--format html` held each message's page until its place in the document was known,
/// so its peak followed the largest message's HTML (some 60 bytes a byte of grid: 162
/// MiB for 100 MB of `kwire-gen` bulk). A page over what the waiting rows may hold
/// (16 MiB) is now written as it is rendered. Two 2 MB Produce requests (about 100 MB of
/// HTML each), one waiting small request between them, and the responses: the document
/// is whole (every message, the small pair side by side, the contents), and the peak
/// stays far under one big page (measured, release build: 31 MiB, 15 MiB for `-V`;
/// 111 MiB before).
#[test]
fn html_pages_of_large_messages_are_not_held() {
    let frames = [
        (true, produce_of(1, 20, 100_000)),
        (true, produce_of(2, 1, 10)),
        (false, produce_response(2)),
        (false, produce_response(1)),
        (true, produce_of(3, 20, 100_000)),
        (false, produce_response(3)),
    ];
    let sent: Vec<(bool, &[u8])> = frames.iter().map(|(d, f)| (*d, f.as_slice())).collect();
    let p = scratch("html-large-pages.pcap");
    std::fs::write(&p, common::one_connection_pcap(&sent)).unwrap();
    let f = p.to_str().unwrap();
    let Some((_, base)) = run_peak(&["read", f, "-V"]) else {
        return;
    };
    let Some((html, peak)) = run_peak(&["read", f, "--format", "html"]) else {
        return;
    };
    assert!(html.len() > 160 << 20, "{} bytes of HTML", html.len());
    assert!(html.trim_end().ends_with("</html>"), "a whole document");
    assert_eq!(html.matches("<section class=\"msg\"").count(), 6);
    // The small request beside its response; the big ones (over the bound) alone.
    assert_eq!(html.matches("<div class=\"pair\">").count(), 1);
    assert!(html.contains("<li><a href=\"#m2\">"), "the contents list");
    assert!(
        peak < base + 32 * 1024,
        "--format html peaks at {peak} KiB, -V at {base} KiB"
    );
}
