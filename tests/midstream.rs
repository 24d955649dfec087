//! Captures of running clusters start in the middle of conversations. Every capture in
//! the repository (one of each pcap/pcapng pair: they hold the same packets), cut at many
//! start points (every 7th record, at most 24 spread evenly) and with single records lost
//! (likewise, from the 4th), read through the input layer and the session as `kwire read`
//! reads it:
//!
//! - order: messages come out in the order of the record that completes them;
//! - pairing: a response pairs whenever its request is in the cut capture, and the
//!   requests left waiting at the end are only those whose response is not in it;
//! - no false frames: every message of a cut capture is one the whole capture has
//!   (matched by endpoints, direction, correlation_id and the time of its last packet;
//!   a frame cut by a lost record by endpoints, direction and correlation_id).
//!
//! The test prints how many cut captures and messages it tried.

#[path = "common/cut.rs"]
mod cut;

use cut::{decode, distinct_captures, Decoded, Id, Msg, Rec};
use kwire::schema::Schema;
use std::collections::{HashMap, HashSet};

/// Cut points per kind (starts, lost records) in one capture, at most: every 7th record,
/// or evenly spread when the capture is long (the time the test takes).
const MAX_CUTS: usize = 24;

/// Every `step`th index from `from` below `n`, spread to at most [`MAX_CUTS`].
fn points(from: usize, n: usize) -> Vec<usize> {
    let all: Vec<usize> = (from..n).step_by(7).collect();
    if all.len() <= MAX_CUTS {
        return all;
    }
    (0..MAX_CUTS)
        .map(|i| all[i * all.len() / MAX_CUTS])
        .collect()
}

/// The cut captures of one capture: `(label, records)`.
fn cuts(recs: &[Rec]) -> Vec<(String, Vec<&Rec>)> {
    let mut v = Vec::new();
    for s in points(1, recs.len()) {
        v.push((format!("from record {}", s + 1), recs[s..].iter().collect()));
    }
    for g in points(3, recs.len()) {
        let kept = recs
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != g)
            .map(|(_, r)| r)
            .collect();
        v.push((format!("record {} lost", g + 1), kept));
    }
    v
}

/// Without the time: what a frame cut by a gap is matched by.
fn loose(id: &Id) -> (String, String, bool, Option<i32>) {
    (id.src.clone(), id.dst.clone(), id.request, id.corr)
}

/// For each response of `msgs`, the id of the request it answers (the latest earlier
/// request on the same endpoints with its correlation_id).
fn answers(msgs: &[Msg]) -> HashMap<Id, Id> {
    let mut open: HashMap<(String, String, Option<i32>), Id> = HashMap::new();
    let mut out = HashMap::new();
    for m in msgs {
        if m.id.request {
            open.insert(
                (m.id.src.clone(), m.id.dst.clone(), m.id.corr),
                m.id.clone(),
            );
        } else if let Some(q) = open.remove(&(m.id.dst.clone(), m.id.src.clone(), m.id.corr)) {
            out.insert(m.id.clone(), q);
        }
    }
    out
}

#[derive(Default)]
struct Tally {
    cuts: usize,
    messages: usize,
    false_frames: Vec<String>,
    out_of_order: Vec<String>,
    unpaired: Vec<String>,
    false_unanswered: Vec<String>,
}

fn check(name: &str, label: &str, whole: &Decoded, cut: &Decoded, t: &mut Tally) {
    let exact: HashSet<&Id> = whole.msgs.iter().map(|m| &m.id).collect();
    let by_loose: HashSet<_> = whole.msgs.iter().map(|m| loose(&m.id)).collect();
    // A record lost and sent again: the same message, carried by the retransmission.
    let by_bytes: HashSet<_> = whole
        .msgs
        .iter()
        .map(|m| (loose(&m.id), &m.bytes))
        .collect();
    let pairs = answers(&whole.msgs);
    let cut_ids: HashSet<&Id> = cut
        .msgs
        .iter()
        .filter(|m| !m.incomplete)
        .map(|m| &m.id)
        .collect();
    t.cuts += 1;
    t.messages += cut.msgs.len();
    // On a connection that lost bytes too (the peer's ACK past the gap gives it up at
    // once, issue 25), every whole message comes out in the order of its last record.
    // A frame cut by the gap comes out at the record that revealed the gap, which its
    // record numbers do not show: its own place is not checked.
    let mut last = 0;
    for m in &cut.msgs {
        let known = if m.incomplete {
            by_loose.contains(&loose(&m.id))
        } else {
            exact.contains(&m.id) || by_bytes.contains(&(loose(&m.id), &m.bytes))
        };
        if !known {
            t.false_frames
                .push(format!("{name} {label}: #{:?} {:?}", m.frames, m.id));
        }
        if m.incomplete {
            continue;
        }
        if m.frames.1 < last {
            t.out_of_order
                .push(format!("{name} {label}: #{:?} after #{last}", m.frames));
        }
        last = last.max(m.frames.1);
        if !m.id.request && !m.incomplete {
            if let Some(q) = pairs.get(&m.id) {
                if cut_ids.contains(q) && !m.paired {
                    t.unpaired.push(format!(
                        "{name} {label}: response #{:?} corr {:?}",
                        m.frames, m.id.corr
                    ));
                }
            }
        }
    }
    // A request left waiting must have no response in the cut capture.
    let answered: HashSet<&Id> = cut
        .msgs
        .iter()
        .filter(|m| !m.id.request)
        .filter_map(|m| pairs.get(&m.id))
        .collect();
    for (conn, corr, frame) in &cut.unanswered {
        let req = cut
            .msgs
            .iter()
            .find(|m| m.connection == *conn && m.id.corr == Some(*corr) && m.frames.1 == *frame);
        if let Some(r) = req {
            if answered.contains(&r.id) {
                t.false_unanswered.push(format!(
                    "{name} {label}: request #{:?} corr {corr} counted unanswered",
                    r.frames
                ));
            }
        }
    }
}

#[test]
fn cut_captures_order_pairing_and_no_false_frames() {
    let schema = Schema::embedded();
    let mut t = Tally::default();
    for (name, recs) in distinct_captures() {
        let all: Vec<&Rec> = recs.iter().collect();
        let whole = decode(&schema, &all);
        for (label, cut) in cuts(&recs) {
            let d = decode(&schema, &cut);
            check(&name, &label, &whole, &d, &mut t);
        }
    }
    eprintln!(
        "cut captures: {} tried ({} messages): {} false frames, {} out of order, {} responses unpaired although their request is there, {} requests counted unanswered although answered",
        t.cuts,
        t.messages,
        t.false_frames.len(),
        t.out_of_order.len(),
        t.unpaired.len(),
        t.false_unanswered.len()
    );
    for (what, v) in [
        ("false frames", &t.false_frames),
        ("out of order", &t.out_of_order),
        ("unpaired", &t.unpaired),
        ("false unanswered", &t.false_unanswered),
    ] {
        for l in v.iter().take(20) {
            eprintln!("  {what}: {l}");
        }
    }
    assert!(t.cuts > 300, "only {} cut captures", t.cuts);
    assert!(
        t.false_frames.is_empty(),
        "{} false frames",
        t.false_frames.len()
    );
    assert!(t.out_of_order.is_empty());
    assert!(t.unpaired.is_empty());
    assert!(t.false_unanswered.is_empty());
}
