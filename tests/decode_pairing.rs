//! `kwire decode` pairs requests and responses through the session `kwire read` uses
//! (`Session::for_dump`): the same frames given as a capture and as hex lines decode the
//! same, latency and capture facts aside. The captures are the repository's lab captures,
//! or frames of them written into a new capture with kwire's own `PcapWriter`.

mod common;

use common::kwire;
use kwire::input::pcap_out::{PcapWriter, TcpFlow};
use serde_json::Value as J;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};

/// What `kwire read --format json` adds for a capture and `kwire decode` cannot know.
const CAPTURE_ONLY: [&str; 8] = [
    "frame",
    "time",
    "src",
    "dst",
    "connection",
    "latency_ms",
    "incomplete",
    "bytes",
];

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("decode_pairing");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn json_lines(text: &str) -> Vec<J> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// `kwire read --format json -x` of `capture`: every message with its bytes.
fn read(capture: &Path) -> Vec<J> {
    let ok = kwire()
        .args(["read", "--threads", "1", "--format", "json", "-x"])
        .arg(capture)
        .assert()
        .success();
    let out = ok.get_output();
    json_lines(&String::from_utf8_lossy(&out.stdout))
}

/// The messages as hex lines: `c>s STREAM 0 HEX` with `streams` (the lab layout, one
/// stream a connection), else `c>s HEX` (every connection in one stream).
fn hex_lines(msgs: &[J], streams: bool) -> String {
    let mut t = String::new();
    for m in msgs {
        let dir = if m["kind"] == "request" { "c>s" } else { "s>c" };
        let hex = m["bytes"].as_str().unwrap();
        if streams {
            t += &format!("{dir} {} 0 {hex}\n", m["connection"]);
        } else {
            t += &format!("{dir} {hex}\n");
        }
    }
    t
}

/// `kwire decode --format json ARGS` of `text` on stdin: the messages and stderr (exit
/// status 0, or 2 for frames cut short: var_snaplen200's).
fn decode(text: &str, args: &[&str]) -> (Vec<J>, String) {
    let out = kwire()
        .args(["decode", "--hex-file", "-", "--format", "json"])
        .args(args)
        .write_stdin(text.to_string())
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        json_lines(&String::from_utf8_lossy(&out.stdout)),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `m` without what only a capture knows.
fn latency_free(m: &J) -> J {
    let mut m = m.clone();
    if let Some(o) = m.as_object_mut() {
        for k in CAPTURE_ONLY {
            o.remove(k);
        }
    }
    m
}

/// The indexes of the messages where `read` and `decoded` differ (latency-free), with
/// the first difference described.
fn differ(read: &[J], decoded: &[J]) -> (Vec<usize>, String) {
    assert_eq!(read.len(), decoded.len(), "as many messages");
    let mut bad = Vec::new();
    let mut first = String::new();
    for (i, (r, d)) in read.iter().zip(decoded).enumerate() {
        let r = latency_free(r);
        if &r != d {
            if bad.is_empty() {
                first = format!(
                    "message {i}: read {} {} v{} guessed={}, decode {} {} v{} guessed={}",
                    r["kind"],
                    r["api_name"],
                    r["api_version"],
                    r["guessed"],
                    d["kind"],
                    d["api_name"],
                    d["api_version"],
                    d["guessed"]
                );
            }
            bad.push(i);
        }
    }
    (bad, first)
}

fn lab(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures/lab")
        .join(name)
}

/// (a) Every lab capture as hex lines with one stream a connection decodes as `kwire
/// read` decodes the capture, message for message; as one stream of all connections
/// (correlation_ids reused by several connections at once: 11 connections and 76 reused
/// in ck_transactions), a queue of requests per correlation_id still pairs each response
/// with its own request.
#[test]
fn decode_pairs_as_read_with_and_without_streams() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(lab(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    let mut messages = 0;
    for f in &files {
        let r = read(f);
        let (d, _) = decode(&hex_lines(&r, true), &[]);
        let (bad, first) = differ(&r, &d);
        assert!(bad.is_empty(), "{}: with streams: {first}", f.display());
        messages += r.len();
    }
    for name in [
        "ck_transactions.pcap",
        "kp_produce_codecs.pcap",
        "ck_admin.pcap",
        "kp_admin.pcap",
        "ck_consumer_group.pcap",
        "ck_sasl_scram256.pcap",
    ] {
        let r = read(&lab(name));
        let conns: std::collections::HashSet<i64> = r
            .iter()
            .map(|m| m["connection"].as_i64().unwrap())
            .collect();
        assert!(conns.len() >= 5, "{name}: several connections");
        let (d, _) = decode(&hex_lines(&r, false), &[]);
        let (bad, first) = differ(&r, &d);
        assert!(bad.is_empty(), "{name}: one stream: {first}");
    }
    // kp_old_formats.pcap is left out of the second half: a Produce request that got no
    // response (the connection closed) and a ListOffsets request of another connection
    // share correlation_id 1, and the ListOffsets response fits the Produce response's
    // layout too. Without connections nothing tells them apart.
    eprintln!("{} captures, {messages} messages", files.len());
}

/// `v`'s node named `name`, depth first.
fn find<'a>(v: &'a J, name: &str) -> Option<&'a J> {
    if v["name"] == name {
        return Some(v);
    }
    v["children"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| find(c, name))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes `frames` (to the server?, bytes) into a capture of one connection per
/// `conns` entry, in order: each frame goes on its connection.
fn capture(path: &Path, conns: usize, frames: &[(usize, bool, Vec<u8>)]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(std::io::BufWriter::new(f)).unwrap();
    let server = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092);
    let mut flows: Vec<TcpFlow> = (0..conns)
        .map(|i| {
            let client = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000 + i as u16);
            TcpFlow::new(client, server, [1000 + i as u32 * 7919, 5000])
        })
        .collect();
    let mut t = 1_000_000u64;
    for fl in &mut flows {
        fl.open(&mut w, t).unwrap();
        t += 1000;
    }
    for (c, to_server, bytes) in frames {
        flows[*c].send(&mut w, *to_server, t, bytes).unwrap();
        t += 1000;
    }
    use std::io::Write;
    w.into_inner().flush().unwrap();
}

/// The bytes of the first request and response of `api` in demo.pcap.
fn demo_pair(r: &[J], api: &str) -> (Vec<u8>, Vec<u8>, J) {
    let req = r
        .iter()
        .find(|m| m["api_name"] == api && m["kind"] == "request")
        .unwrap();
    let resp = r
        .iter()
        .find(|m| {
            m["api_name"] == api
                && m["kind"] == "response"
                && m["correlation_id"] == req["correlation_id"]
        })
        .unwrap();
    let b = |m: &J| common::unhex(m["bytes"].as_str().unwrap());
    (b(req), b(resp), req.clone())
}

/// (b) A Produce request with acks=0 gets no response: a later response with its
/// correlation_id does not pair with it, in `decode` as in `read` (both guess that
/// response's layout). Before, `decode` decoded it as the Produce request's response.
#[test]
fn decode_acks_zero_produce_takes_no_response() {
    let demo = read(&lab("../demo.pcap"));
    let (mut req, resp, jreq) = demo_pair(&demo, "Produce");
    let acks = find(&jreq["tree"], "Acks").expect("an Acks field");
    assert_ne!(acks["value"], 0, "{acks}");
    let at = acks["offset"].as_u64().unwrap() as usize;
    req[at..at + 2].copy_from_slice(&0i16.to_be_bytes());
    let p = scratch("acks0.pcap");
    capture(&p, 1, &[(0, true, req.clone()), (0, false, resp.clone())]);
    let r = read(&p);
    assert_eq!(r.len(), 2);
    assert_eq!(find(&r[0]["tree"], "Acks").unwrap()["value"], 0);
    assert_eq!(
        r[1]["guessed"], true,
        "read: the response is not paired: {}",
        r[1]["api_name"]
    );
    let text = format!("c>s {}\ns>c {}\n", hex(&req), hex(&resp));
    let (d, _) = decode(&text, &[]);
    let (bad, first) = differ(&r, &d);
    assert!(bad.is_empty(), "{first}");
    // Plain lines, the direction left to the bytes: the response is not paired either
    // (guessed, saying too how it failed as a request).
    let (d, _) = decode(&format!("{}\n{}\n", hex(&req), hex(&resp)), &[]);
    assert_eq!(d[0], latency_free(&r[0]));
    assert_eq!(
        (d[1]["guessed"].as_bool(), &d[1]["kind"]),
        (Some(true), &r[1]["kind"])
    );
    // With acks=1 it pairs, in both.
    let text = format!(
        "c>s {}\ns>c {}\n",
        jreq["bytes"].as_str().unwrap(),
        hex(&resp)
    );
    let (d, _) = decode(&text, &[]);
    assert_eq!(
        (d[1]["api_name"].as_str(), d[1].get("guessed")),
        (Some("Produce"), None)
    );
}

/// (c) Topic names learned from a Metadata response name the `TopicId`s of later
/// messages (Fetch v16 carries only ids) in `decode` as in `read`: demo.pcap as lines
/// decodes as the capture, annotations and summary lines included.
#[test]
fn decode_names_topic_ids_as_read() {
    let demo = lab("../demo.pcap");
    let r = read(&demo);
    let text = hex_lines(&r, true);
    let (d, _) = decode(&text, &[]);
    let (bad, first) = differ(&r, &d);
    assert!(bad.is_empty(), "{first}");
    let fetch = d
        .iter()
        .find(|m| m["api_name"] == "Fetch" && m["kind"] == "request")
        .unwrap();
    let id = find(&fetch["tree"], "TopicId").unwrap();
    assert_eq!(id["annotation"], "topic lab-lz4", "{id}");
    // The summary lines too.
    let summary = |args: &[&str]| {
        let out = kwire()
            .args(args)
            .write_stdin(text.clone())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let s_read = summary(&[
        "read",
        "--threads",
        "1",
        "--format",
        "summary",
        demo.to_str().unwrap(),
    ]);
    let s_dec = summary(&["decode", "--hex-file", "-", "--format", "summary"]);
    assert!(
        s_dec.contains("Fetch v16 request corr=10 topics=lab-lz4[3]"),
        "{s_dec}"
    );
    let fetches = |s: &str| -> Vec<String> {
        s.lines()
            .filter_map(|l| l.find("Fetch v").map(|i| &l[i..]))
            .map(|l| l.split(" latency=").next().unwrap_or(l).to_string())
            .collect()
    };
    assert_eq!(fetches(&s_read), fetches(&s_dec));
    assert!(!fetches(&s_dec).is_empty());
}

/// (d) `--kind` and `--api-key`/`--api-version` force how frames are read, and the
/// pairing follows: a lone response given its request's api_key and version decodes as
/// `read` decodes it paired; with `--kind response` a request's bytes are a response and
/// wait for nothing, so the real response after them is guessed; with `--kind request`
/// nothing is a response and nothing pairs; `--no-size-prefix` frames pair as with it.
#[test]
fn decode_forced_layouts_pair_as_told() {
    let r = read(&lab("../demo.pcap"));
    let (req, resp, _) = demo_pair(&r, "Metadata");
    let paired = r
        .iter()
        .find(|m| m["api_name"] == "Metadata" && m["kind"] == "response")
        .unwrap();
    let (k, v) = (
        paired["api_key"].to_string(),
        paired["api_version"].to_string(),
    );
    let (d, _) = decode(&hex(&resp), &["--api-key", &k, "--api-version", &v]);
    assert_eq!(d[0], latency_free(paired), "a lone response given its API");
    // Both frames as plain lines: the bytes decide, and the response pairs.
    let plain = format!("{}\n{}\n", hex(&req), hex(&resp));
    let (d, _) = decode(&plain, &[]);
    assert_eq!(d[1], latency_free(paired));
    // --api-key: both frames are responses of that API, unpaired.
    let (d, _) = decode(&plain, &["--api-key", &k, "--api-version", &v]);
    assert!(d
        .iter()
        .all(|m| m["kind"] == "response" && m["api_name"] == "Metadata"));
    assert!(d.iter().all(|m| m.get("guessed").is_none()));
    assert!(
        !d[0]["errors"].as_array().unwrap().is_empty(),
        "a request read as a response"
    );
    // --kind response: the request's bytes are not a request, so nothing waits.
    let (d, _) = decode(&plain, &["--kind", "response"]);
    assert!(d.iter().all(|m| m["kind"] == "response"));
    assert_eq!(d[1]["guessed"], true, "{}", d[1]);
    // --kind request: the response's bytes are a request (and decode badly).
    let (d, _) = decode(&plain, &["--kind", "request"]);
    assert!(d.iter().all(|m| m["kind"] == "request"));
    assert_eq!(d[0]["api_name"], "Metadata");
    // A c>s/s>c line says more than --kind: the lines pair.
    let lines = format!("c>s {}\ns>c {}\n", hex(&req), hex(&resp));
    let (d, _) = decode(&lines, &["--kind", "request"]);
    assert_eq!(d[1], latency_free(paired));
    // --no-size-prefix: the same pairing, the correlation_id where it then is.
    let lines = format!("c>s {}\ns>c {}\n", hex(&req[4..]), hex(&resp[4..]));
    let (d, _) = decode(&lines, &["--no-size-prefix"]);
    assert_eq!(
        (
            d[1]["api_name"].as_str(),
            d[1]["api_version"].as_i64(),
            d[1].get("guessed")
        ),
        (Some("Metadata"), paired["api_version"].as_i64(), None)
    );
    assert!(
        d[1]["errors"].as_array().unwrap().is_empty(),
        "{}",
        d[1]["errors"]
    );
}

/// The queue per correlation_id holds 64 requests: 65 connections each send ApiVersions
/// with correlation_id 1 before any answer. `read` pairs all 65 responses, and so does
/// `decode` with one stream a connection; as one stream, the first 64 responses pair
/// and the 65th is guessed, and stderr says why.
#[test]
fn decode_queue_per_correlation_id_is_64_deep() {
    let r = read(&lab("../demo.pcap"));
    let (req, resp, _) = demo_pair(&r, "ApiVersions");
    let n = 65;
    let mut frames: Vec<(usize, bool, Vec<u8>)> = (0..n).map(|c| (c, true, req.clone())).collect();
    frames.extend((0..n).map(|c| (c, false, resp.clone())));
    let p = scratch("queue65.pcap");
    capture(&p, n, &frames);
    let r = read(&p);
    assert_eq!(r.len(), 2 * n);
    assert!(r[n..]
        .iter()
        .all(|m| m.get("guessed").is_none() && m["api_name"] == "ApiVersions"));
    let (d, err) = decode(&hex_lines(&r, true), &[]);
    let (bad, first) = differ(&r, &d);
    assert!(bad.is_empty(), "streams: {first}");
    assert!(!err.contains("wait for their responses"), "{err}");
    let (d, err) = decode(&hex_lines(&r, false), &[]);
    let (bad, _) = differ(&r, &d);
    assert_eq!(bad, vec![2 * n - 1], "only the 65th response differs");
    assert_eq!(d[2 * n - 1]["guessed"], true);
    assert!(
        err.contains("frame 65: 64 requests with its correlation_id wait for their responses"),
        "{err}"
    );
    // 64 waiting: all pair, and nothing is said.
    let one = hex_lines(&r, false);
    let mut lines: Vec<&str> = one.lines().collect();
    lines.remove(n - 1);
    lines.pop();
    let (d, err) = decode(&(lines.join("\n") + "\n"), &[]);
    assert!(d.iter().all(|m| m.get("guessed").is_none()), "64 pair");
    assert!(!err.contains("wait for their responses"), "{err}");
}
