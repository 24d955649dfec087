//! `stats` counts and latencies on a capture with known answers, built here with
//! kwire's own pcap writer.

mod common;

use common::unhex;
use kwire::cli::read::SchemaPlausibility;
use kwire::decode::DecodeOptions;
use kwire::input::pcap_out::{PcapWriter, TcpFlow};
use kwire::input::{read_capture, CaptureOptions, Event};
use kwire::schema::Schema;
use kwire::session::Session;
use kwire::traffic::Stats;
use kwire::tree::Buffers;
use std::net::SocketAddrV4;

fn sized(mut b: Vec<u8>) -> Vec<u8> {
    let n = (b.len() - 4) as u32;
    b[..4].copy_from_slice(&n.to_be_bytes());
    b
}

/// DeleteTopics v6 request with client_id "demo".
fn request(corr: i32) -> Vec<u8> {
    let mut b = unhex("00000000 0014 0006");
    b.extend_from_slice(&corr.to_be_bytes());
    b.extend(unhex(
        "0004 64656d6f 00 02 01 00000000000000000000000000000000 00 00000000 00",
    ));
    sized(b)
}

/// DeleteTopics v6 response with one result carrying `error`.
fn response(corr: i32, error: i16) -> Vec<u8> {
    let mut b = unhex("00000000");
    b.extend_from_slice(&corr.to_be_bytes());
    b.extend(unhex("00 00000000 02 01 00000000000000000000000000000000"));
    b.extend_from_slice(&error.to_be_bytes());
    b.extend(unhex("01 00 00"));
    sized(b)
}

/// Reads `pcap` with one session, handing each decoded message and its context to `f`;
/// returns the session (for what it left unanswered).
fn each_message<'s>(
    schema: &'s Schema,
    dopts: &'s DecodeOptions,
    pcap: &[u8],
    mut f: impl FnMut(&kwire::tree::Message<'_>, &kwire::session::Context),
) -> Session<'s> {
    let mut session = Session::new(schema, dopts);
    let plaus = SchemaPlausibility(schema);
    read_capture(pcap, &CaptureOptions::default(), &plaus, |ev| {
        if let Event::Frame(fr) = ev {
            let arena = Buffers::new();
            let (m, ctx) = session.decode(&fr, &arena);
            f(&m, &ctx);
        }
    })
    .unwrap();
    session
}

#[test]
fn stats_on_a_capture_with_known_answers() {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut flow = TcpFlow::new(
        SocketAddrV4::new([10, 0, 0, 1].into(), 50000),
        SocketAddrV4::new([10, 0, 0, 2].into(), 9092),
        [1000, 5000],
    );
    let t0 = 1_700_000_000_000_000u64;
    flow.open(&mut w, t0).unwrap();
    // latencies 1 ms, 2 ms, 10 ms; the third answer carries error 3
    for (i, (lat, err)) in [(1000u64, 0i16), (2000, 0), (10_000, 3)].iter().enumerate() {
        let t = t0 + 100_000 * (i as u64 + 1);
        flow.send(&mut w, true, t, &request(i as i32)).unwrap();
        flow.send(&mut w, false, t + lat, &response(i as i32, *err))
            .unwrap();
    }
    // one request left without an answer
    flow.send(&mut w, true, t0 + 900_000, &request(7)).unwrap();
    flow.close(&mut w, t0 + 1_000_000).unwrap();
    let pcap = w.into_inner();

    let schema = Schema::embedded();
    let dopts = DecodeOptions::default();
    let mut st = Stats::default();
    let mut session = each_message(&schema, &dopts, &pcap, |m, ctx| {
        assert!(m.errors().is_empty(), "{:?}", m.errors());
        st.add(m, ctx);
    });
    let j = st.to_json();
    let api = &j["apis"][0];
    assert_eq!(api["api_name"], "DeleteTopics");
    assert_eq!(api["api_version"], 6);
    assert_eq!(api["requests"], 4);
    assert_eq!(api["responses"], 3);
    assert_eq!(
        api["bytes"],
        (4 * request(0).len() + 3 * response(0, 0).len()) as u64
    );
    assert_eq!(api["errors"]["UNKNOWN_TOPIC_OR_PARTITION"], 1);
    let l = &api["latency_ms"];
    assert_eq!(
        (l["count"].as_u64(), l["min"].as_f64(), l["median"].as_f64()),
        (Some(3), Some(1.0), Some(2.0))
    );
    assert_eq!(
        (l["p99"].as_f64(), l["max"].as_f64()),
        (Some(10.0), Some(10.0))
    );
    let c = &j["connections"][0];
    assert_eq!(
        (c["client"].as_str(), c["server"].as_str()),
        (Some("10.0.0.1:50000"), Some("10.0.0.2:9092"))
    );
    assert_eq!(c["client_id"], "demo");
    assert_eq!(c["messages"], 7);
    assert_eq!(session.pairer.unanswered().len(), 1);
    let mut text = Vec::new();
    st.write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("UNKNOWN_TOPIC_OR_PARTITION x1"), "{text}");
}

#[test]
fn produce_with_acks_zero_expects_no_response() {
    let schema = Schema::embedded();
    let v = serde_json::json!({"kind":"request","api_key":0,"api_version":9,"header":{"correlation_id":3,"client_id":"p"},
        "body":{"TransactionalId":null,"Acks":0,"TimeoutMs":1000,"TopicData":[{"Name":"t","PartitionData":[{"Index":0,"Records":null}]}]}});
    let frame = kwire::encode::encode(&schema, &v).unwrap();
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut flow = TcpFlow::new(
        SocketAddrV4::new([10, 0, 0, 1].into(), 50001),
        SocketAddrV4::new([10, 0, 0, 2].into(), 9092),
        [1, 2],
    );
    flow.open(&mut w, 1_000_000).unwrap();
    flow.send(&mut w, true, 1_000_500, &frame).unwrap();
    // and one acks=1 request that also gets no answer
    let mut v1 = v.clone();
    v1["body"]["Acks"] = 1.into();
    v1["header"]["correlation_id"] = 4.into();
    flow.send(
        &mut w,
        true,
        1_000_600,
        &kwire::encode::encode(&schema, &v1).unwrap(),
    )
    .unwrap();
    let pcap = w.into_inner();
    let dopts = DecodeOptions::default();
    let mut session = each_message(&schema, &dopts, &pcap, |m, _| {
        assert!(m.errors().is_empty(), "{:?}", m.errors());
    });
    let waiting = session.pairer.unanswered();
    assert_eq!(waiting.len(), 1, "only the acks=1 request waits");
    assert_eq!(waiting[0].correlation_id, 4);
}

/// A response whose request is not in the capture (the capture began after it): `stats`
/// counts it apart, and the summary and title lines show a guessed layout, marked,
/// instead of printing `api_key -1 v-1`.
#[test]
fn response_without_its_request() {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut flow = TcpFlow::new(
        SocketAddrV4::new([10, 0, 0, 1].into(), 50002),
        SocketAddrV4::new([10, 0, 0, 2].into(), 9092),
        [10, 20],
    );
    flow.open(&mut w, 1_000_000).unwrap();
    flow.send(&mut w, false, 1_000_100, &response(41, 0))
        .unwrap();
    flow.send(&mut w, true, 1_000_200, &request(42)).unwrap();
    flow.send(&mut w, false, 1_000_300, &response(42, 0))
        .unwrap();
    let pcap = w.into_inner();
    let schema = Schema::embedded();
    let dopts = DecodeOptions::default();
    let mut st = Stats::default();
    let mut lines = Vec::new();
    each_message(&schema, &dopts, &pcap, |m, ctx| {
        st.add(m, ctx);
        let opts = kwire::render::RenderOptions::default();
        lines.push(kwire::render::summary::line(m, None, &opts));
        lines.push(kwire::render::text::title(m, None, false));
    });
    let has = |p: &str| lines.iter().any(|l| l.starts_with(p));
    // The orphan is decoded by a ranked guess, marked as such, never `api_key -1 v-1`.
    let orphan: Vec<&String> = lines.iter().filter(|l| l.contains("corr=41")).collect();
    assert!(
        orphan.len() == 1 && orphan[0].contains(" response corr=41 guessed"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" response guessed") && l.contains("correlation_id 41")),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("-1")), "{lines:?}");
    assert!(has("DeleteTopics v6 request corr=42"), "{lines:?}");
    assert!(has("DeleteTopics v6 response corr=42"), "{lines:?}");
    let j = st.to_json();
    assert_eq!(j["unpaired_responses"], 1);
    assert_eq!(j["apis"][0]["responses"], 1);
    let mut text = Vec::new();
    st.write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("1 response whose request is not in the capture"),
        "{text}"
    );
}

/// Drops record `n` (1-based) from a classic pcap file.
fn without_record(pcap: &[u8], n: usize) -> Vec<u8> {
    let mut out = pcap[..24].to_vec();
    let mut at = 24;
    let mut i = 0;
    while at + 16 <= pcap.len() {
        let len = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        i += 1;
        if i != n {
            out.extend_from_slice(&pcap[at..at + 16 + len]);
        }
        at += 16 + len;
    }
    out
}

/// A capture that missed the client's SYN but has the broker's SYN-ACK: the SYN-ACK
/// tells where the client's stream starts, so the first request is read at once, in
/// order, and its response pairs with it.
#[test]
fn a_capture_without_the_syn_still_pairs_the_first_exchange() {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut flow = TcpFlow::new(
        SocketAddrV4::new([10, 0, 0, 1].into(), 50003),
        SocketAddrV4::new([10, 0, 0, 2].into(), 9092),
        [7000, 9000],
    );
    flow.open(&mut w, 1_000_000).unwrap();
    flow.send(&mut w, true, 1_000_100, &request(1)).unwrap();
    flow.send(&mut w, false, 1_000_300, &response(1, 0))
        .unwrap();
    let pcap = without_record(&w.into_inner(), 1);
    let schema = Schema::embedded();
    let dopts = DecodeOptions::default();
    let mut lines = Vec::new();
    let mut latencies = Vec::new();
    let mut session = each_message(&schema, &dopts, &pcap, |m, ctx| {
        let opts = kwire::render::RenderOptions::default();
        lines.push(kwire::render::summary::line(m, None, &opts));
        latencies.push(ctx.latency);
    });
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("DeleteTopics v6 request corr=1"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("DeleteTopics v6 response corr=1"),
        "{lines:?}"
    );
    assert!(latencies[1].is_some(), "the response is paired");
    assert!(session.pairer.unanswered().is_empty());
}
