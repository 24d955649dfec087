//! Ranked guesses (`kwire::decode::guess`) scored over every response of every capture
//! in the repository (one of each pcap/pcapng pair: they hold the same packets) whose
//! true decode, with its request's api_key and api_version, is clean:
//!
//! - alone: the frame decoded with no context, as `kwire decode --hex FRAME --kind
//!   response` decodes it (the same `Guesser::response` call, no context);
//! - with context: as `kwire read` decodes it when its request is not in the capture,
//!   the connection's other earlier requests as context.
//!
//! A guess is right when it is the true API and version, or when its decode is identical
//! to the true one field for field (names, types, values, spans). Targets: at least 90%
//! alone, at least 98% with context, and every frame that only one layout fits right.

#[path = "common/cut.rs"]
mod cut;

use cut::{decode, distinct_captures, Id, Msg, Rec};
use kwire::decode::guess::{GuessContext, Guesser};
use kwire::decode::{self, DecodeOptions, Known, Layout};
use kwire::schema::Schema;
use kwire::tree::{Buffers, Message, NodeKind};
use std::collections::HashMap;

/// Every node but the root, with the body's own name left out (same-layout APIs differ
/// only there): `(name, type, value, offset, length)`.
fn fields(m: &Message<'_>) -> Vec<(String, String, String, usize, usize)> {
    let mut v = Vec::new();
    m.tree.walk(&mut |n, depth| {
        if depth == 0 {
            return;
        }
        let name = if n.kind == NodeKind::Body {
            String::new()
        } else {
            n.name.to_string()
        };
        v.push((
            name,
            n.ty.to_string(),
            format!("{:?}", n.value),
            n.offset,
            n.length,
        ));
    });
    v
}

#[derive(Default)]
struct Score {
    frames: usize,
    alone: usize,
    context: usize,
    single: usize,
    single_wrong: Vec<String>,
    truth_missing: Vec<String>,
    wrong_alone: Vec<String>,
    wrong_context: Vec<String>,
}

#[test]
fn ranked_guesses_alone_and_with_context() {
    let schema = Schema::embedded();
    let opts = DecodeOptions::default();
    let g = Guesser::new(&schema);
    let mut s = Score::default();
    for (name, recs) in distinct_captures() {
        let all: Vec<&Rec> = recs.iter().collect();
        let d = decode(&schema, &all);
        // Requests on each connection so far: (id, api_key, api_version).
        let mut reqs: HashMap<u32, Vec<(Id, i16, i16)>> = HashMap::new();
        let mut open: HashMap<(String, String, Option<i32>), Id> = HashMap::new();
        for m in &d.msgs {
            if m.id.request {
                reqs.entry(m.connection).or_default().push((
                    m.id.clone(),
                    m.api_key,
                    m.api_version,
                ));
                open.insert(
                    (m.id.src.clone(), m.id.dst.clone(), m.id.corr),
                    m.id.clone(),
                );
                continue;
            }
            let Some(q) = open.remove(&(m.id.dst.clone(), m.id.src.clone(), m.id.corr)) else {
                continue;
            };
            if !m.paired || m.incomplete {
                continue;
            }
            score_one(&schema, &opts, &g, &name, m, &q, &reqs, &mut s);
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / s.frames.max(1) as f64;
    eprintln!(
        "ranked guesses over {} responses: alone {} right ({:.1}%), with context {} right ({:.1}%); {} fit one layout only ({} wrong); true layout not among the fits: {}",
        s.frames,
        s.alone,
        pct(s.alone),
        s.context,
        pct(s.context),
        s.single,
        s.single_wrong.len(),
        s.truth_missing.len()
    );
    for (what, v) in [
        ("wrong alone", &s.wrong_alone),
        ("wrong with context", &s.wrong_context),
        ("one layout, wrong", &s.single_wrong),
        ("true layout missing", &s.truth_missing),
    ] {
        for l in v.iter().take(15) {
            eprintln!("  {what}: {l}");
        }
    }
    assert!(s.frames > 500, "only {} responses", s.frames);
    assert!(pct(s.alone) >= 90.0, "alone: {:.1}%", pct(s.alone));
    assert!(
        pct(s.context) >= 98.0,
        "with context: {:.1}%",
        pct(s.context)
    );
    assert!(s.single_wrong.is_empty());
    assert!(s.truth_missing.is_empty());
}

#[allow(clippy::too_many_arguments)]
fn score_one(
    schema: &Schema,
    opts: &DecodeOptions,
    g: &Guesser,
    name: &str,
    m: &Msg,
    own: &Id,
    reqs: &HashMap<u32, Vec<(Id, i16, i16)>>,
    s: &mut Score,
) {
    let arena = Buffers::new();
    let truth = decode::decode(
        schema,
        opts,
        &arena,
        &m.bytes,
        &Known::response(m.api_key, m.api_version),
    );
    if truth.problem_counts() != (0, 0) {
        return; // a known-bad frame, or an ApiVersions answer in v0
    }
    s.frames += 1;
    let tf = fields(&truth);
    let label = format!(
        "{name} #{:?} {} v{}",
        m.frames,
        truth.api_name.unwrap_or("?"),
        m.api_version
    );
    let right = |gm: &Option<Message<'_>>| match gm {
        Some(x) => (x.api_key, x.api_version) == (m.api_key, m.api_version) || fields(x) == tf,
        None => false,
    };
    let shown = |gm: &Option<Message<'_>>| match gm {
        Some(x) => format!("{} v{}", x.api_name.unwrap_or("?"), x.api_version),
        None => "nothing".into(),
    };
    let a1 = Buffers::new();
    let alone = g.response(
        schema,
        opts,
        &a1,
        &m.bytes,
        Layout::default(),
        &GuessContext::default(),
    );
    if right(&alone) {
        s.alone += 1;
    } else {
        s.wrong_alone
            .push(format!("{label}: guessed {}", shown(&alone)));
    }
    if let Some(x) = &alone {
        let c = &x.guess.as_ref().unwrap().candidates;
        if c.len() == 1 {
            s.single += 1;
            if !right(&alone) {
                s.single_wrong.push(label.clone());
            }
        }
    } else {
        // The true layout is clean, so it fits: only the work cap can have left it out.
        s.truth_missing.push(label.clone());
    }
    // Context: the connection's requests before this response, its own left out.
    let mut seen: Vec<(i16, i16)> = Vec::new();
    for (id, k, v) in reqs.get(&m.connection).map(|v| v.as_slice()).unwrap_or(&[]) {
        if id != own {
            seen.retain(|x| *x != (*k, *v));
            seen.push((*k, *v));
        }
    }
    let a2 = Buffers::new();
    let cx = GuessContext { seen: &seen };
    let with = g.response(schema, opts, &a2, &m.bytes, Layout::default(), &cx);
    if right(&with) {
        s.context += 1;
    } else {
        s.wrong_context
            .push(format!("{label}: guessed {}", shown(&with)));
    }
}

/// A guess's trial decodes (`DecodeOptions::trial`: problems marked, not worded) find
/// the problems the worded decode finds, node for node: on every frame of the fuzz
/// corpus and the regressions, read as a response of one version of every api_key (a
/// different version from frame to frame), and on the repository's responses read as
/// their own layout. `Message::has_problem` agrees with `problem_counts`.
#[test]
fn trial_decodes_find_the_problems_worded_decodes_find() {
    let schema = Schema::embedded();
    let worded = DecodeOptions {
        detail: decode::Detail::Summary,
        ..DecodeOptions::default()
    };
    let trial = DecodeOptions {
        trial: true,
        ..worded.clone()
    };
    // (api_key, versions) of every response.
    let apis: Vec<(i16, Vec<i16>)> = schema
        .api_keys()
        .into_iter()
        .map(|k| (k, schema.versions(kwire::schema::MessageKind::Response, k)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for d in ["fuzz/corpus/frame", "fuzz/regressions/frame"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(d);
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        frames.extend(names.iter().map(|p| std::fs::read(p).unwrap()));
    }
    let (mut decodes, mut failed, mut trial_text) = (0usize, 0usize, 0usize);
    let mut check = |frame: &[u8], k: i16, v: i16| {
        let (a1, a2) = (Buffers::new(), Buffers::new());
        let known = Known::response(k, v);
        let w = decode::decode(&schema, &worded, &a1, frame, &known);
        let t = decode::decode(&schema, &trial, &a2, frame, &known);
        let at = format!("api_key {k} v{v}, frame {frame:02x?}");
        assert_eq!(t.problem_counts(), w.problem_counts(), "{at}");
        assert_eq!(t.has_problem(), w.problem_counts() != (0, 0), "{at}");
        assert_eq!(w.has_problem(), w.problem_counts() != (0, 0), "{at}");
        let shape = |m: &Message<'_>| {
            let mut s = Vec::new();
            m.tree.walk(&mut |n, depth| {
                s.push((
                    depth,
                    n.offset,
                    n.length,
                    n.error().is_some(),
                    n.warning().is_some(),
                ))
            });
            s
        };
        assert_eq!(shape(&t), shape(&w), "{at}");
        let mut texts = 0;
        t.tree.walk(&mut |n, _| {
            texts += usize::from(n.error() == Some(decode::TRIAL_PROBLEM));
        });
        decodes += 1;
        failed += usize::from(w.has_problem());
        trial_text += texts;
    };
    for (i, f) in frames.iter().enumerate() {
        for (k, vs) in &apis {
            check(f, *k, vs[i % vs.len()]);
        }
    }
    for (_, recs) in distinct_captures() {
        let refs: Vec<&Rec> = recs.iter().collect();
        for m in decode(&schema, &refs).msgs.iter().filter(|m| !m.id.request) {
            check(&m.bytes, m.api_key, m.api_version);
        }
    }
    assert!(decodes > 100_000, "{decodes} decodes");
    assert!(
        failed > decodes / 2,
        "{failed} of {decodes} decodes with problems"
    );
    assert!(trial_text > failed / 2, "{trial_text} unworded problems");
}

/// Versions that share a trial walk (`Guesser::shared_walks`) walk alike: on every frame
/// of the fuzz corpus and the regressions and on the repository's responses, the trial
/// decode of each such layout finds what the decode of the layout whose walk it takes
/// finds, node for node (place, error, warning). Sharing is common, and only among
/// versions of one API.
#[test]
fn versions_that_share_a_trial_walk_walk_alike() {
    let schema = Schema::embedded();
    let g = Guesser::new(&schema);
    let shared = g.shared_walks();
    let n = g.layouts();
    eprintln!(
        "{} of {n} response layouts share a trial walk",
        shared.len()
    );
    assert!(
        shared.len() * 5 > n && shared.len() * 2 < n,
        "{}",
        shared.len()
    );
    assert!(shared.iter().all(|((k, v), (fk, fv))| k == fk && fv < v));
    let trial = DecodeOptions {
        detail: decode::Detail::Summary,
        trial: true,
        ..DecodeOptions::default()
    };
    let shape = |m: &Message<'_>| {
        let mut s = Vec::new();
        m.tree.walk(&mut |n, depth| {
            let p = (n.error().is_some(), n.warning().is_some());
            s.push((depth, n.offset, n.length, p));
        });
        s
    };
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for d in ["fuzz/corpus/frame", "fuzz/regressions/frame"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(d);
        for e in std::fs::read_dir(dir).unwrap() {
            frames.push(std::fs::read(e.unwrap().path()).unwrap());
        }
    }
    for (_, recs) in distinct_captures() {
        let refs: Vec<&Rec> = recs.iter().collect();
        let d = decode(&schema, &refs);
        frames.extend(
            d.msgs
                .into_iter()
                .filter(|m| !m.id.request)
                .map(|m| m.bytes),
        );
    }
    let (mut compared, mut fits) = (0usize, 0usize);
    for frame in &frames {
        for &((k, v), (fk, fv)) in &shared {
            let (a, b) = (Buffers::new(), Buffers::new());
            let m = decode::decode(&schema, &trial, &a, frame, &Known::response(k, v));
            let f = decode::decode(&schema, &trial, &b, frame, &Known::response(fk, fv));
            assert_eq!(shape(&m), shape(&f), "api_key {k}: v{v} and v{fv}");
            compared += 1;
            fits += usize::from(!m.has_problem());
        }
    }
    assert!(
        compared > 100_000 && fits > 100,
        "{compared} compared, {fits} fit"
    );
}
