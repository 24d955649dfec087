//! The fact walk (`decode::facts`, `kwire read`'s one-line summary) against the summary
//! tree: for every message of the committed captures and of `kwire-gen` captures, the
//! summary line from the fact walk's facts equals the line from the summary tree (topics
//! and partitions, group, transactional id, records, errors, topic names learned from
//! earlier messages), and so do the facts the session reads (`ProtocolType`, `Acks`);
//! the fact walk is taken only for messages whose summary tree is clean, and it gives up
//! on the malformed frames of the fuzz corpus and the regressions. `kwire stats`' counts
//! (`traffic::Stats`, from `traffic::Item::of`: client ids, error names, malformed
//! messages) are the same from the whole tree, the summary tree and the fact trees, and
//! display filters that decide on facts (`Filter::decides_on_facts`) keep the same
//! messages from the summary tree and the fact trees. The rows tree (`Detail::Rows`)
//! gives the export's `messages` and `partitions` rows and the report's facts of the
//! whole tree, and display filters that do not need the whole tree keep the same
//! messages from it. The values printer (`values::write_values`) writes what the
//! values tree (`values::to_values`) serializes to, on every message and fuzz frame.

mod common;

use kwire::decode::facts::decode_facts;
use kwire::decode::{self, DecodeOptions, Detail, Known};
use kwire::export::rows;
use kwire::filter::{Filter, MessageFacts};
use kwire::input::{self, CaptureOptions, Event, Frame};
use kwire::render::{summary, RenderOptions};
use kwire::report::gather;
use kwire::schema::Schema;
use kwire::session::{Context, SchemaPlausibility, Session};
use kwire::traffic::Stats;
use kwire::tree::{Buffers, Message, Value};
use std::path::{Path, PathBuf};

fn opts(detail: Detail) -> DecodeOptions {
    DecodeOptions {
        detail,
        ..DecodeOptions::default()
    }
}

/// Whether `m` is a fact tree (the fact walk's): it has no `Frame` node.
fn is_facts(m: &Message<'_>) -> bool {
    !m.tree.children.iter().any(|c| c.name == "Frame")
}

fn session_facts<'a>(m: &'a Message<'_>) -> (Option<Value<'a>>, Option<Value<'a>>) {
    let v = |n: &str| m.tree.find(n).map(|x| x.value.clone());
    (v("ProtocolType"), v("Acks"))
}

fn frames(path: &Path) -> Vec<Frame> {
    let schema = Schema::embedded();
    let copts = CaptureOptions {
        ports: vec![9092],
        detect: true,
        ..CaptureOptions::default()
    };
    let mut out = Vec::new();
    let f = std::fs::File::open(path).unwrap();
    let _ = input::read_capture(f, &copts, &SchemaPlausibility(&schema), |ev| {
        if let Event::Frame(f) = ev {
            out.push(f);
        }
    });
    out
}

/// Decodes the frames of `path` with a session at the summary level and one at the fact
/// level, in capture order, and compares every message; and `kwire stats`' counts of
/// the capture from those and from a session at the full level; and what the
/// [`FIELD_FILTERS`] say of the whole tree and of the summary and rows trees that keep
/// their fields. Returns (messages, fast ones, field filter matches on the whole tree).
fn compare(path: &Path) -> (usize, usize, usize) {
    let schema = Schema::embedded();
    let (o_sum, o_fact, o_full) = (
        opts(Detail::Summary),
        opts(Detail::Facts),
        opts(Detail::Full),
    );
    let mut s_sum = Session::new(&schema, &o_sum);
    let mut s_fact = Session::new(&schema, &o_fact);
    let mut s_full = Session::new(&schema, &o_full);
    let o_rows = opts(Detail::Rows);
    let mut s_rows = Session::new(&schema, &o_rows);
    // Filters on schema fields, from the summary tree and the rows tree that keep the
    // fields they read.
    let names = kwire::filter::Known::of(&schema);
    let field_filters: Vec<Filter> = FIELD_FILTERS
        .iter()
        .map(|f| Filter::parse_known(f, &names).unwrap())
        .collect();
    let keep = field_filters
        .iter()
        .fold(decode::KeptFields::default(), |k, f| {
            k.union(&f.kept_fields())
        });
    let (o_ksum, o_krows) = (
        DecodeOptions {
            keep: keep.clone(),
            ..opts(Detail::Summary)
        },
        DecodeOptions {
            keep,
            ..opts(Detail::Rows)
        },
    );
    let mut s_ksum = Session::new(&schema, &o_ksum);
    let mut s_krows = Session::new(&schema, &o_krows);
    let (a5, a6) = (Buffers::new(), Buffers::new());
    let mut stats: [Stats; 3] = Default::default();
    let (a3, a4) = (Buffers::new(), Buffers::new());
    let row_filters: Vec<Filter> = ROW_FILTERS
        .iter()
        .chain(&FACT_FILTERS)
        .map(|f| Filter::parse(f).unwrap())
        .collect();
    let filters: Vec<Filter> = FACT_FILTERS
        .iter()
        .map(|f| Filter::parse(f).unwrap())
        .collect();
    assert!(row_filters.iter().all(|f| !f.needs_full_tree()));
    let narrow = RenderOptions {
        max_value_len: 6,
        ..RenderOptions::default()
    };
    let wide = RenderOptions {
        wide: true,
        ..RenderOptions::default()
    };
    let (mut n, mut fast) = (0, 0);
    let mut field_hits = [0usize; 2];
    let (a1, a2) = (Buffers::new(), Buffers::new());
    for f in frames(path) {
        let (m1, c1) = s_sum.decode(&f, &a1);
        let (m2, c2) = s_fact.decode(&f, &a2);
        let (m3, c3) = s_full.decode(&f, &a3);
        let (m4, c4) = s_rows.decode(&f, &a4);
        // The values printer writes what the values tree serializes to.
        let mut line = Vec::new();
        kwire::values::write_values(&mut line, &m3);
        assert!(
            line == serde_json::to_vec(&kwire::values::to_values(&m3)).unwrap(),
            "{} frames {:?}: values line",
            path.display(),
            c3.frames
        );
        let (m5, c5) = s_ksum.decode(&f, &a5);
        let (m6, c6) = s_krows.decode(&f, &a6);
        for (flt, text) in field_filters.iter().zip(FIELD_FILTERS) {
            let facts = |c| MessageFacts {
                capture: Some(c),
                unanswered: None,
            };
            let whole = flt.matches(&m3, &facts(&c3));
            let at = format!("{} frames {:?}: -Y '{text}'", path.display(), c3.frames);
            assert_eq!(whole, flt.matches(&m5, &facts(&c5)), "{at}: summary tree");
            assert_eq!(whole, flt.matches(&m6, &facts(&c6)), "{at}: rows tree");
            field_hits[usize::from(whole)] += 1;
        }
        // The fields kept change nothing else.
        let at = format!("{} frames {:?}", path.display(), c3.frames);
        assert_eq!(
            summary::line(&m1, Some(&c1), &RenderOptions::default()),
            summary::line(&m5, Some(&c5), &RenderOptions::default()),
            "{at}: summary line with fields kept"
        );
        assert_eq!(m1.problem_counts(), m5.problem_counts(), "{at}");
        same_rows(&m3, &c3, &m6, &c6, &row_filters, &at);
        same_rows(
            &m3,
            &c3,
            &m4,
            &c4,
            &row_filters,
            &format!("{}", path.display()),
        );
        stats[0].add(&m1, &c1);
        stats[1].add(&m2, &c2);
        stats[2].add(&m3, &c3);
        n += 1;
        let at = format!("{} frame {:?}", path.display(), c1.frames);
        for o in [&RenderOptions::default(), &narrow, &wide] {
            assert_eq!(
                summary::line(&m1, Some(&c1), o),
                summary::line(&m2, Some(&c2), o),
                "{at}"
            );
        }
        assert_eq!(session_facts(&m1), session_facts(&m2), "{at}");
        assert_eq!(m1.error_count(), m2.error_count(), "{at}");
        for (flt, text) in filters.iter().zip(FACT_FILTERS) {
            let (f1, f2) = (
                MessageFacts {
                    capture: Some(&c1),
                    unanswered: None,
                },
                MessageFacts {
                    capture: Some(&c2),
                    unanswered: None,
                },
            );
            assert_eq!(
                flt.matches(&m1, &f1),
                flt.matches(&m2, &f2),
                "{at}: -Y '{text}'"
            );
        }
        if is_facts(&m2) {
            fast += 1;
            assert_eq!(
                m1.problem_counts(),
                (0, 0),
                "{at}: fast path on a message with problems"
            );
        }
    }
    let [sum, fact, full] = stats.map(|s| s.to_json().to_string());
    assert_eq!(full, sum, "{}: stats, summary tree", path.display());
    assert_eq!(full, fact, "{}: stats, fact trees", path.display());
    (n, fast, field_hits[1])
}

/// Display filters on schema fields that a tree below the whole one keeps
/// (`Filter::kept_fields`): primitives of requests, responses, headers, nested
/// protocols and internal-topic records.
const FIELD_FILTERS: [&str; 12] = [
    "ThrottleTimeMs > 0",
    "SessionId != 0 || SessionEpoch == -1",
    "FetchOffset > 10 && kind == request",
    "MemberId",
    "ErrorCode == 0",
    "LeaderEpoch > 0 || CurrentLeaderEpoch == -1",
    "ProducerId >= 0",
    "GenerationId == 1 || GenerationIdOrMemberEpoch",
    "!(MaxBytes > 1000) && api == Fetch",
    "ReplicaId == -1 || IsolationLevel == 1",
    "CoordinatorEpoch || CommitTimestamp || Offset > 3",
    "Timestamp > 0 || HighWatermark || LogStartOffset >= 0",
];

/// The field filters read no more than their fields: `Filter::kept_fields` names them
/// and they decide on the summary tree; a filter on a struct, an array, records or a
/// qualified name still needs the whole tree.
#[test]
fn field_filters_keep_their_fields() {
    let names = kwire::filter::Known::of(&Schema::embedded());
    for f in FIELD_FILTERS {
        let flt = Filter::parse_known(f, &names).unwrap();
        assert!(!flt.needs_full_tree(), "{f}");
        assert!(!flt.kept_fields().is_empty(), "{f}");
        assert_eq!(flt.least_detail(), Detail::Summary, "{f}");
    }
    let flt = Filter::parse_known("ThrottleTimeMs > 0 || SessionId", &names).unwrap();
    let kept = flt.kept_fields();
    assert_eq!(
        kept.names().collect::<Vec<_>>(),
        ["ThrottleTimeMs", "SessionId"]
    );
    for f in [
        "Topics",
        "Partitions",
        "Records",
        "RecordBatch",
        "Record",
        "key",
        "length",
        "TopicRecord.Name",
        "FetchTopic",
        "ThrottleTimeMs > 0 && Topics",
        "ApiKeys",
    ] {
        let flt = Filter::parse_known(f, &names).unwrap();
        assert!(flt.needs_full_tree(), "{f}");
        assert!(flt.kept_fields().is_empty(), "{f}");
    }
    // Without the schema, no field is known to be a primitive's.
    assert!(Filter::parse("ThrottleTimeMs > 0")
        .unwrap()
        .needs_full_tree());
}

/// Display filters that read the summary tree (`!Filter::needs_full_tree`) but not only
/// facts: topics, client ids.
const ROW_FILTERS: [&str; 4] = [
    "topic",
    "topic matches \"^_\" || client_id contains \"consumer\"",
    "topic == \"bench\" && kind == request",
    "!client_id",
];

/// The export's rows and the report's facts of message `full` (decoded at
/// `Detail::Full`, context `cf`) and of the same message decoded at `Detail::Rows`
/// (`rows`, `cr`) are the same, and so is what each of `filters` says of them.
fn same_rows(
    full: &Message<'_>,
    cf: &Context,
    rows: &Message<'_>,
    cr: &Context,
    filters: &[Filter],
    at: &str,
) {
    let at = format!("{at} frames {:?}", cf.frames);
    assert_eq!(cf, cr, "{at}: context");
    assert_eq!(
        rows::message_row(full, cf, 0, 1),
        rows::message_row(rows, cr, 0, 1),
        "{at}: messages row"
    );
    assert_eq!(
        rows::partition_rows(full, None, false),
        rows::partition_rows(rows, None, false),
        "{at}: partitions rows"
    );
    for pass in [true, false] {
        assert_eq!(
            format!("{:?}", gather::Fact::of(full, cf, pass)),
            format!("{:?}", gather::Fact::of(rows, cr, pass)),
            "{at}: report facts"
        );
    }
    for flt in filters.iter().filter(|f| !f.needs_full_tree()) {
        let facts = |c| MessageFacts {
            capture: Some(c),
            unanswered: None,
        };
        assert_eq!(
            flt.matches(full, &facts(cf)),
            flt.matches(rows, &facts(cr)),
            "{at}: -Y '{}'",
            flt.text()
        );
    }
}

/// Display filters that decide on facts, each on several of them.
const FACT_FILTERS: [&str; 10] = [
    "api_key == 0 || api == Fetch",
    "kind == response && error_code ~= 0",
    "error_code == UNKNOWN_TOPIC_OR_PARTITION || error_code == NOT_COORDINATOR",
    "error_code > 0 || error_code in {3 15..16}",
    "!(error_code matches \"^NOT_\")",
    "malformed || warning",
    "!guessed && header_version >= 1 && api_version < 5",
    "size > 300 && correlation_id > 3",
    "latency > 1ms",
    "incomplete || schema_release == \"4.4\"",
];

/// The filters above decide on facts; those that read topics, client ids, record types
/// or schema fields do not.
#[test]
fn which_filters_decide_on_facts() {
    for f in FACT_FILTERS {
        assert!(Filter::parse(f).unwrap().decides_on_facts(), "{f}");
    }
    for f in [
        "topic == orders",
        "client_id == x",
        "api_key == 0 && record_type == TopicRecord",
        "kind == request || GroupId == g",
        "!(Acks == -1)",
        // Zero error codes take part: only the whole tree has them all.
        "error_code",
        "error_code != 0",
        "error_code === 3",
        "error_code ~= 3",
        "error_code < 1",
    ] {
        assert!(!Filter::parse(f).unwrap().decides_on_facts(), "{f}");
    }
    for f in [
        "error_code",
        "error_code != 0",
        "error_code < 1",
        "!(error_code ~= 3)",
    ] {
        assert!(Filter::parse(f).unwrap().needs_full_tree(), "{f}");
    }
    for f in FACT_FILTERS
        .iter()
        .chain(&["topic == orders", "client_id == x"])
    {
        assert!(!Filter::parse(f).unwrap().needs_full_tree(), "{f}");
    }
}

/// `kwire read -Y F` keeps the same messages in its one-line summary (decoded by the
/// fact walk, the summary walk or whole, as the filter needs) as in its tree (`-V`,
/// printed to depth 0: decided on the filter's level, then decoded whole) and as a
/// filter that needs every message whole (`(F) && (record_type || !record_type)`): the
/// message numbers are the same, on every committed capture, for filters on facts, on
/// schema fields, and for those the zero error codes take part in.
#[test]
fn summary_and_tree_keep_the_same_messages() {
    let bin = env!("CARGO_BIN_EXE_kwire");
    let numbers = |args: &[&str]| -> Vec<String> {
        let o = std::process::Command::new(bin)
            .args(args)
            .args(["--color", "never", "--threads", "1"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with('#'))
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect()
    };
    let files = common::capture_files(&root().join("captures"));
    let mut kept = 0;
    // The .pcapng files hold the .pcap files' packets; TLS needs its keys.
    let pcaps = files.iter().filter(|p| {
        p.extension().is_some_and(|x| x == "pcap") && !p.to_string_lossy().contains("/tls/")
    });
    for p in pcaps {
        let c = p.to_str().unwrap();
        for f in FACT_FILTERS.iter().chain(&[
            "error_code",
            "error_code != 0",
            "error_code < 1",
            "topic matches \"^lab\" && kind == request",
            "ThrottleTimeMs > 0 || MemberId",
            "ErrorCode == 0 && LeaderEpoch >= 0",
            "SessionId || FetchOffset > 0",
        ]) {
            let line = numbers(&["read", c, "-Y", f]);
            let tree = numbers(&["read", c, "-Y", f, "-V", "--depth", "0"]);
            assert_eq!(line, tree, "{c}: -Y '{f}'");
            let all = format!("({f}) && (record_type || !record_type)");
            assert_eq!(line, numbers(&["read", c, "-Y", &all]), "{c}: -Y '{all}'");
            kept += line.len();
        }
    }
    assert!(kept > 1000, "{kept} messages kept in all");
    // An error code of 0 is NONE by name.
    let demo = root().join("captures/demo.pcap");
    let demo = demo.to_str().unwrap();
    let none = numbers(&["read", demo, "-Y", "error_code == NONE"]);
    assert!(!none.is_empty());
    assert_eq!(none, numbers(&["read", demo, "-Y", "error_code == 0"]));
    assert_eq!(
        numbers(&["read", demo, "-Y", "error_code != NONE"]),
        numbers(&["read", demo, "-Y", "error_code != 0"])
    );
}

/// `kwire read -T fields`: the columns of facts only (decoded by the fact walk), of
/// `topic` and `client_id` (the summary level), and of `record_type` and `error_code`
/// (whole) are what they are beside a schema field's column, which has every message
/// decoded whole: on every committed capture, with and without a filter.
#[test]
fn field_columns_the_same_at_every_detail() {
    let bin = env!("CARGO_BIN_EXE_kwire");
    let rows = |args: &[&str], strip_last: bool| -> String {
        let o = std::process::Command::new(bin)
            .args(args)
            .args(["--color", "never", "--threads", "1"])
            .output()
            .unwrap();
        assert!(o.status.code().is_some_and(|c| c < 2), "{args:?}: {o:?}");
        let text = String::from_utf8(o.stdout).unwrap();
        text.lines()
            .map(|l| match strip_last {
                true => l.rsplit_once('\t').map_or("", |(a, _)| a),
                false => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let facts = [
        "frame",
        "api",
        "api_version",
        "header_version",
        "kind",
        "correlation_id",
        "latency",
        "size",
        "connection",
        "src",
        "dst",
        "schema_release",
        "malformed",
        "guessed",
    ];
    let files = common::capture_files(&root().join("captures"));
    let pcaps = files.iter().filter(|p| {
        p.extension().is_some_and(|x| x == "pcap") && !p.to_string_lossy().contains("/tls/")
    });
    let mut lines = 0;
    for p in pcaps {
        let c = p.to_str().unwrap();
        for (cols, flt) in [
            (&facts[..], None),
            (
                &facts[..],
                Some("kind == response && error_code ~= 0 || api_key == 3"),
            ),
            (&["frame", "topic", "client_id"][..], None),
            (&["frame", "record_type"][..], None),
            (&["frame", "error_code"][..], Some("api_key != 18")),
        ] {
            let mut args = vec!["read", c, "-T", "fields"];
            for e in cols {
                args.extend(["-e", e]);
            }
            if let Some(f) = flt {
                args.extend(["-Y", f]);
            }
            let alone = rows(&args, false);
            args.extend(["-e", "ThrottleTimeMs"]);
            let whole = rows(&args, true);
            assert_eq!(alone, whole, "{c}: {cols:?} -Y {flt:?}");
            lines += alone.lines().count();
        }
    }
    assert!(lines > 2000, "{lines} rows in all");
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every message of the committed captures: the same facts either way.
#[test]
fn committed_captures_same_facts() {
    let files = common::capture_files(&root().join("captures"));
    assert!(files.len() > 10, "{files:?}");
    let (mut n, mut fast, mut hits) = (0, 0, 0);
    for p in &files {
        let (a, b, c) = compare(p);
        n += a;
        fast += b;
        hits += c;
    }
    eprintln!("captures/: {fast} of {n} messages by the fact walk; {hits} field filter matches");
    assert!(n > 1000, "{n} messages");
    assert!(hits > 1000, "{hits} field filter matches");
    assert!(fast > n / 2, "{fast} of {n} messages by the fact walk");
}

use common::kwire_gen;

/// Every message of `kwire-gen` captures (chatter, bulk, the lossy kinds): the same facts.
#[test]
fn kwire_gen_captures_same_facts() {
    let Some(gen) = kwire_gen() else {
        common::skip(
            "kwire_gen_captures_same_facts",
            "no kwire-gen in target/ (cargo build -p kwire-gen)",
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("kwire-fact-walk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (kind, size, extra) in [
        ("chatter", "3M", &[][..]),
        ("bulk", "6M", &[][..]),
        ("lossy-produce", "2M", &["--connections", "20"][..]),
        ("half-frames", "2M", &["--connections", "50"][..]),
    ] {
        let out = dir.join(format!("{kind}.pcap"));
        let st = std::process::Command::new(&gen)
            .args(["--kind", kind, "--size", size, "--seed", "3", "-o"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(st.status.success(), "{kind}: {st:?}");
        let (n, fast, hits) = compare(&out);
        eprintln!("{kind}: {fast} of {n} messages by the fact walk; {hits} field filter matches");
        assert!(n > 20, "{kind}: {n} messages");
        if kind == "chatter" || kind == "bulk" {
            assert!(fast * 10 > n * 9, "{kind}: {fast} of {n} by the fact walk");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The malformed frames of the fuzz corpus and the regressions: where the fact walk
/// gives facts, the summary tree is clean and says the same; it gives up on the others.
/// The rows tree gives the whole tree's export rows and report facts on every one.
#[test]
fn malformed_frames_give_up() {
    let schema = Schema::embedded();
    let o_sum = opts(Detail::Summary);
    let o_fact = opts(Detail::Facts);
    let (o_full, o_rows) = (opts(Detail::Full), opts(Detail::Rows));
    let mut files = Vec::new();
    for d in ["fuzz/corpus/frame", "fuzz/regressions/frame"] {
        for e in std::fs::read_dir(root().join(d)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    let (mut gave_up, mut fast) = (0, 0);
    let ropts = RenderOptions::default();
    for p in &files {
        let b = std::fs::read(p).unwrap();
        let mut knowns = vec![Known::request()];
        if b.len() >= 8 {
            let k = i16::from_be_bytes([b[4], b[5]]);
            let v = i16::from_be_bytes([b[6], b[7]]);
            knowns.push(Known::response(k, v));
        }
        for known in knowns {
            let (a1, a2) = (Buffers::new(), Buffers::new());
            let tree = decode::decode(&schema, &o_sum, &a1, &b, &known);
            let (a3, a4) = (Buffers::new(), Buffers::new());
            let full = decode::decode(&schema, &o_full, &a3, &b, &known);
            let rows = decode::decode(&schema, &o_rows, &a4, &b, &known);
            let ctx = Context::default();
            same_rows(&full, &ctx, &rows, &ctx, &[], &p.display().to_string());
            let mut line = Vec::new();
            kwire::values::write_values(&mut line, &full);
            let tree_line = serde_json::to_vec(&kwire::values::to_values(&full)).unwrap();
            assert!(line == tree_line, "{}: values line", p.display());
            match decode_facts(&schema, &o_fact, &a2, &b, &known) {
                Some(m) => {
                    fast += 1;
                    let at = p.display();
                    assert_eq!(tree.problem_counts(), (0, 0), "{at}");
                    assert_eq!(
                        summary::line(&tree, None, &ropts),
                        summary::line(&m, None, &ropts),
                        "{at}"
                    );
                    assert_eq!(session_facts(&tree), session_facts(&m), "{at}");
                }
                None => gave_up += usize::from(tree.problem_counts() != (0, 0)),
            }
        }
    }
    assert!(
        gave_up > 100,
        "gave up on {gave_up} malformed frames ({fast} clean)"
    );
}

/// Clean requests of the demo capture, spoilt: one byte more (trailing bytes, a
/// warning) or one less (cut short), the size prefix fixed to match. The fact walk
/// reads the clean ones and gives up on every spoilt one.
#[test]
fn spoilt_requests_give_up() {
    let schema = Schema::embedded();
    let o_sum = opts(Detail::Summary);
    let o_fact = opts(Detail::Facts);
    let (mut clean, mut spoilt) = (0, 0);
    for f in frames(&root().join("captures/demo.pcap")) {
        if f.ctx.direction != input::Direction::ToServer {
            continue;
        }
        let known = Known::request();
        let a = Buffers::new();
        if decode_facts(&schema, &o_fact, &a, &f.bytes, &known).is_none() {
            continue;
        }
        clean += 1;
        let mut longer = f.bytes.to_vec();
        longer.push(0);
        let mut shorter = f.bytes.to_vec();
        shorter.pop();
        for mut b in [longer, shorter] {
            let size = (b.len() - 4) as i32;
            b[..4].copy_from_slice(&size.to_be_bytes());
            let (a1, a2) = (Buffers::new(), Buffers::new());
            let tree = decode::decode(&schema, &o_sum, &a1, &b, &known);
            if tree.problem_counts() == (0, 0) {
                continue; // a body that ends in a field that may be cut (none here)
            }
            spoilt += 1;
            assert!(
                decode_facts(&schema, &o_fact, &a2, &b, &known).is_none(),
                "frame {:?}: {} bytes",
                f.ctx.first_frame,
                b.len()
            );
        }
    }
    assert!(
        clean > 5 && spoilt >= clean,
        "{clean} clean, {spoilt} spoilt"
    );
}

/// An AddPartitionsToTxn v3 exchange whose response refuses a partition by
/// `PartitionErrorCode` (an error code under another name than `ErrorCode`, which the
/// summary line does not read and `kwire stats` counts), built with kwire's encoder:
/// the fact walk reads both messages and the counts name the error.
#[test]
fn stats_count_error_codes_of_other_names() {
    use kwire::encode::encode;
    use serde_json::json;
    let schema = Schema::embedded();
    let frame = |v: serde_json::Value| encode(&schema, &v).unwrap();
    let req = frame(json!({"kind": "request", "api_key": 24, "api_version": 3,
        "header": {"correlation_id": 11, "client_id": "txn-client"},
        "body": {"V3AndBelowTransactionalId": "tx-1", "V3AndBelowProducerId": 4000,
            "V3AndBelowProducerEpoch": 0,
            "V3AndBelowTopics": [{"Name": "orders", "Partitions": [0, 1]}]}}));
    let resp = frame(json!({"kind": "response", "api_key": 24, "api_version": 3,
        "header": {"correlation_id": 11},
        "body": {"ThrottleTimeMs": 0, "ResultsByTopicV3AndBelow": [{"Name": "orders",
            "ResultsByPartition": [
                {"PartitionIndex": 0, "PartitionErrorCode": 0},
                {"PartitionIndex": 1, "PartitionErrorCode": 3}]}]}}));
    let dir = std::env::temp_dir().join(format!("kwire-fact-stats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("txn.pcap");
    std::fs::write(
        &path,
        common::one_connection_pcap(&[(true, &req), (false, &resp)]),
    )
    .unwrap();
    let (n, fast, _) = compare(&path);
    assert_eq!((n, fast), (2, 2), "both messages by the fact walk");
    // What the counts hold, read from the fact trees.
    let o = opts(Detail::Facts);
    let mut s = Session::new(&schema, &o);
    let mut st = Stats::default();
    let a = Buffers::new();
    for f in frames(&path) {
        let (m, c) = s.decode(&f, &a);
        st.add(&m, &c);
    }
    let j = st.to_json().to_string();
    assert!(j.contains(r#""client_id":"txn-client""#), "{j}");
    assert!(j.contains(r#""UNKNOWN_TOPIC_OR_PARTITION":1"#), "{j}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Frame `frame` (a response to `known`) decoded at every level below the whole tree
/// reads as the whole tree does: the same problems, summary line and `filters`
/// answers, and at `Detail::Rows` the same export rows and report facts. Each filter
/// must keep the message in the whole tree.
fn every_level_as_whole(frame: &[u8], known: &Known, filters: &[&str], at: &str) {
    let schema = Schema::embedded();
    let filters: Vec<Filter> = filters.iter().map(|f| Filter::parse(f).unwrap()).collect();
    let facts = MessageFacts::default();
    let (af, of) = (Buffers::new(), opts(Detail::Full));
    let full = decode::decode(&schema, &of, &af, frame, known);
    let line = summary::line(&full, None, &RenderOptions::default());
    for f in &filters {
        assert!(!f.needs_full_tree(), "{at}: {}", f.text());
        assert!(
            f.matches(&full, &facts),
            "{at}: the whole tree: -Y '{}'",
            f.text()
        );
    }
    for detail in [Detail::Summary, Detail::Rows, Detail::Facts] {
        let a = Buffers::new();
        let o = opts(detail);
        let m = match detail {
            Detail::Facts => decode_facts(&schema, &o, &a, frame, known)
                .unwrap_or_else(|| decode::decode(&schema, &o, &a, frame, known)),
            _ => decode::decode(&schema, &o, &a, frame, known),
        };
        assert_eq!(
            m.problem_counts(),
            full.problem_counts(),
            "{at}: {detail:?}"
        );
        let l = summary::line(&m, None, &RenderOptions::default());
        assert_eq!(l, line, "{at}: {detail:?}");
        for f in &filters {
            assert!(f.matches(&m, &facts), "{at}: {detail:?}: -Y '{}'", f.text());
        }
        if detail == Detail::Rows {
            let c = Context::default();
            same_rows(&full, &c, &m, &c, &filters, at);
        }
    }
}

/// A Fetch v4 response of `__consumer_offsets` partition 31 carrying `records`.
fn consumer_offsets_fetch(records: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&7i32.to_be_bytes()); // correlation_id
    body.extend_from_slice(&0i32.to_be_bytes()); // ThrottleTimeMs
    body.extend_from_slice(&1i32.to_be_bytes()); // Responses: 1
    let topic = b"__consumer_offsets";
    body.extend_from_slice(&(topic.len() as i16).to_be_bytes());
    body.extend_from_slice(topic);
    body.extend_from_slice(&1i32.to_be_bytes()); // Partitions: 1
    body.extend_from_slice(&31i32.to_be_bytes()); // PartitionIndex
    body.extend_from_slice(&0i16.to_be_bytes()); // ErrorCode
    body.extend_from_slice(&5i64.to_be_bytes()); // HighWatermark
    body.extend_from_slice(&5i64.to_be_bytes()); // LastStableOffset
    body.extend_from_slice(&(-1i32).to_be_bytes()); // AbortedTransactions: null
    body.extend_from_slice(&(records.len() as i32).to_be_bytes()); // Records
    body.extend_from_slice(records);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// Fetch v4 responses from `__consumer_offsets` whose records (a real segment's
/// batches) name the topic `topic_transactions` in a group's subscription and
/// assignment: the whole tree decodes those records, and so must every tree a `topic`
/// filter, the export or the report reads. Once as the broker wrote them; once with the
/// assignment's topic name made invalid UTF-8 (the batch's CRC fixed), an error that
/// only a member metadata read by its group's `protocolType` finds.
#[test]
fn internal_topic_records_at_every_level() {
    let log = std::fs::read(
        root().join("captures/logdirs/rupia/__consumer_offsets-31/00000000000000000003.log"),
    )
    .unwrap();
    let known = Known::response(1, 4);
    let topic = [r#"topic == "topic_transactions""#];
    every_level_as_whole(&consumer_offsets_fetch(&log), &known, &topic, "clean");
    // The first batch: its length at 8, its CRC-32C at 17 over the bytes from 21.
    let end = 12 + u32::from_be_bytes(log[8..12].try_into().unwrap()) as usize;
    let name = b"topic_transactions";
    let last = (0..end - name.len())
        .rev()
        .find(|&i| &log[i..i + name.len()] == name)
        .unwrap();
    let mut bad = log.clone();
    bad[last + 16] = 0xe2;
    let crc = crc32c::crc32c(&bad[21..end]);
    bad[17..21].copy_from_slice(&crc.to_be_bytes());
    let frame = consumer_offsets_fetch(&bad);
    let a = Buffers::new();
    let (schema, of) = (Schema::embedded(), opts(Detail::Full));
    let full = decode::decode(&schema, &of, &a, &frame, &known);
    assert!(
        full.error_count() > 0,
        "the bad name is an error in the whole tree"
    );
    every_level_as_whole(&frame, &known, &[], "bad name");
}

/// A FetchSnapshot v0 response at `Position` 0 whose `UnalignedRecords` hold a real
/// `__cluster_metadata` log's first batches (made with kwire's encoder): the position
/// says they start at a batch, so they decode as records (a FeatureLevelRecord names
/// `metadata.version`), at every level.
#[test]
fn snapshot_records_at_every_level() {
    const FRAME: &str = "00000141000000050000000000000002135f5f636c75737465725f6d657461646174610200000000000000000000000000\
        0a000000010000000000000001f20000000000000000fa0100000000000000000000004700000000026cbf64070020000000\
        0000000191b239b7a100000191b239b7a1ffffffffffffffffffffffffffff000000012a0000000800000003160000000000\
        0000000000000000000000000000010000004f0000000002e9ffad2300000000000000000191b239b7ab00000191b239b7ab\
        ffffffffffffffffffffffffffff000000013a000000012e010c00116d657461646174612e76657273696f6e001400000000\
        0000000000020000003f000000000260c2db5300200000000000000191b239b7ac00000191b239b7acffffffffffffffffff\
        ffffffffff000000011a00000008000000040600000000000000";
    let frame = common::unhex(FRAME);
    let known = Known::response(59, 0);
    let a = Buffers::new();
    let (schema, of) = (Schema::embedded(), opts(Detail::Full));
    let full = decode::decode(&schema, &of, &a, &frame, &known);
    let mut batches = 0;
    full.tree
        .walk(&mut |n, _| batches += usize::from(n.name == "RecordBatch"));
    assert_eq!(batches, 3, "the snapshot's batches in the whole tree");
    every_level_as_whole(
        &frame,
        &known,
        &[r#"topic == "metadata.version""#],
        "snapshot",
    );
}

/// `kwire read -Y F` with a printer of whole trees decodes each message at the level `F`
/// decides on and again whole when `F` keeps it (`RunOptions::whole`): what it prints,
/// and its closing line, are what it prints when every message is decoded whole (`F`
/// joined to a test that needs the whole tree), at one thread and at three.
#[test]
fn two_step_trees_are_whole_trees() {
    let bin = env!("CARGO_BIN_EXE_kwire");
    let run = |args: &[&str]| -> (Vec<u8>, String) {
        let o = std::process::Command::new(bin)
            .args(args)
            .args(["--color", "never"])
            .output()
            .unwrap();
        (o.stdout, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let files = common::capture_files(&root().join("captures"));
    let pcaps: Vec<_> = files
        .iter()
        .filter(|p| {
            p.extension().is_some_and(|x| x == "pcap") && !p.to_string_lossy().contains("/tls/")
        })
        .collect();
    assert!(pcaps.len() > 5, "{pcaps:?}");
    let mut printed = 0;
    for p in pcaps {
        let c = p.to_str().unwrap();
        for f in [
            "ThrottleTimeMs > 0 || MemberId",
            "api == Fetch && kind == response",
            "topic || error_code ~= 0",
        ] {
            let all = format!("({f}) && (record_type || !record_type)");
            for mode in [&["-V"][..], &["-T", "json"], &["-x"], &["-V", "-x"]] {
                for threads in ["1", "3"] {
                    let args = |flt: &str| {
                        let mut v = vec!["read", c, "-Y"];
                        v.push(flt);
                        v.extend_from_slice(mode);
                        v.extend(["--threads", threads]);
                        v.into_iter().map(str::to_string).collect::<Vec<_>>()
                    };
                    let (a, b) = (args(f), args(&all));
                    let a: Vec<&str> = a.iter().map(String::as_str).collect();
                    let b: Vec<&str> = b.iter().map(String::as_str).collect();
                    let (two, whole) = (run(&a), run(&b));
                    assert!(two.0 == whole.0, "{c}: {a:?}: the output differs");
                    assert_eq!(two.1, whole.1, "{c}: {a:?}: stderr");
                    printed += two.0.len();
                }
            }
        }
    }
    assert!(printed > 1_000_000, "{printed} bytes printed");
}
