//! TCP gaps inside a TLS stream (issue 25, "Nothing lost"): captures built here with
//! secrets the test chooses (`common/tls_build.rs`), in TLS 1.3 (AES-128-GCM and
//! ChaCha20-Poly1305) and TLS 1.2 (AES-128-GCM, with the sequence number as explicit
//! nonce, as OpenSSL writes it, and with another), each read whole and with client
//! segments lost inside the application data: a gap inside one record, a gap that hides
//! several whole records, a gap at a record boundary, and a gap that hides a KeyUpdate
//! (no record after it can decrypt). The exchanges after a gap must decrypt and pair as
//! in the whole capture, with a notice that names the gap and one that says how the
//! stream was found again (or that it was not).

mod common;
use common::varint;
#[path = "common/tls_build.rs"]
mod tls_build;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;
use std::path::{Path, PathBuf};

use kwire::input::pcap_out::{PcapWriter, TcpFlow, MSS};
use serde_json::Value as J;
use tls_build::{
    client_hello, expand_label, finished, handshake_message, hex, keys12, seal12, seal13_with,
    server_hello, Keys12, Suite13,
};

/// The suites the captures are built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Suite {
    Tls13(Suite13),
    /// TLS 1.2 AES-128-GCM; `seq_nonce`: the explicit nonce is the sequence number.
    Tls12 {
        seq_nonce: bool,
    },
}

const SUITES: [Suite; 4] = [
    Suite::Tls13(Suite13::Aes128Gcm),
    Suite::Tls13(Suite13::ChaCha20),
    Suite::Tls12 { seq_nonce: true },
    Suite::Tls12 { seq_nonce: false },
];

impl Suite {
    /// The number of the client's first application data record (its records are
    /// numbered from 1, the ClientHello; then its Finished, after a ChangeCipherSpec in
    /// TLS 1.2).
    fn first_app_record(self) -> usize {
        match self {
            Suite::Tls13(_) => 3,
            Suite::Tls12 { .. } => 4,
        }
    }

    /// Bytes a record adds to its plaintext on the wire (header included).
    fn overhead(self) -> usize {
        match self {
            Suite::Tls13(_) => 5 + 1 + 16,
            Suite::Tls12 { .. } => 5 + 8 + 16,
        }
    }
}

// The TLS 1.3 secrets (client and server handshake, client and server traffic) and the
// TLS 1.2 master secret, the randoms.
const CHS: [u8; 32] = [1; 32];
const SHS: [u8; 32] = [2; 32];
const CTS: [u8; 32] = [3; 32];
const STS: [u8; 32] = [4; 32];
const MASTER: [u8; 48] = [5; 48];
const CR: [u8; 32] = [0x5a; 32];
const SR: [u8; 32] = [0xa5; 32];

/// One direction's record protection while the capture is written.
struct Sealer {
    suite: Suite,
    /// TLS 1.3 traffic secret (KeyUpdate moves it on).
    secret: Vec<u8>,
    k12: Option<Keys12>,
    seq: u64,
}

impl Sealer {
    fn seal(&mut self, ctype: u8, plain: &[u8]) -> Vec<u8> {
        let seq = self.seq;
        self.seq += 1;
        match self.suite {
            Suite::Tls13(s) => seal13_with(s, &self.secret, seq, plain, ctype),
            Suite::Tls12 { seq_nonce } => {
                let nonce = if seq_nonce {
                    seq
                } else {
                    seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5a5a
                };
                seal12(self.k12.as_ref().unwrap(), seq, nonce, ctype, plain)
            }
        }
    }

    /// TLS 1.3 KeyUpdate: the record announcing it, then the next generation of keys.
    fn key_update(&mut self) -> Vec<u8> {
        let rec = self.seal(22, &handshake_message(24, &[0]));
        self.secret = expand_label(&self.secret, "traffic upd", 32);
        self.seq = 0;
        rec
    }
}

fn str16(b: &mut Vec<u8>, s: &[u8]) {
    b.extend((s.len() as i16).to_be_bytes());
    b.extend(s);
}

fn sized(body: Vec<u8>) -> Vec<u8> {
    let mut f = (body.len() as i32).to_be_bytes().to_vec();
    f.extend(body);
    f
}

/// A request with correlation_id `corr` of about `len` bytes: up to 1,000 bytes an
/// ApiVersions v0 request (header v1) whose client_id makes it `len` bytes long, above
/// a Produce v3 request of one batch of records of 100 bytes (kwire's encoder writes
/// the batch).
fn request(corr: i32, len: usize) -> Vec<u8> {
    let mut b = Vec::new();
    if len <= 1000 {
        b.extend(18i16.to_be_bytes());
        b.extend(0i16.to_be_bytes());
        b.extend(corr.to_be_bytes());
        let id: Vec<u8> = (0..len - 14).map(|i| b'a' + (i % 26) as u8).collect();
        str16(&mut b, &id);
        return sized(b);
    }
    b.extend(0i16.to_be_bytes()); // Produce
    b.extend(3i16.to_be_bytes());
    b.extend(corr.to_be_bytes());
    str16(&mut b, b"client");
    b.extend((-1i16).to_be_bytes()); // TransactionalId null
    b.extend(1i16.to_be_bytes()); // Acks
    b.extend(30_000i32.to_be_bytes()); // TimeoutMs
    b.extend(1i32.to_be_bytes()); // TopicData
    str16(&mut b, b"gaps");
    b.extend(1i32.to_be_bytes()); // PartitionData
    b.extend(0i32.to_be_bytes()); // Index
    let count = len / 110;
    let mut raw = Vec::new();
    for i in 0..count {
        let mut rec = vec![0u8, 0]; // attributes, timestampDelta
        varint(&mut rec, i as i64); // offsetDelta
        varint(&mut rec, -1); // key null
        varint(&mut rec, 100);
        rec.extend((0..100).map(|k| b'a' + ((i + k) % 26) as u8));
        rec.push(0); // no headers
        varint(&mut raw, rec.len() as i64);
        raw.extend(rec);
    }
    let batch = common::batch_of(count, &raw, false);
    b.extend((batch.len() as i32).to_be_bytes());
    b.extend(batch);
    sized(b)
}

/// The response to [`request`] `corr` of `len` bytes: ApiVersions v0 (no error, no API
/// keys) or Produce v3 (one topic, one partition, no error).
fn response(corr: i32, len: usize) -> Vec<u8> {
    let mut b = corr.to_be_bytes().to_vec();
    if len <= 1000 {
        b.extend(0i16.to_be_bytes());
        b.extend(0i32.to_be_bytes());
        return sized(b);
    }
    b.extend(1i32.to_be_bytes()); // Responses
    str16(&mut b, b"gaps");
    b.extend(1i32.to_be_bytes()); // PartitionResponses
    b.extend(0i32.to_be_bytes()); // Index
    b.extend(0i16.to_be_bytes()); // ErrorCode
    b.extend(100i64.to_be_bytes()); // BaseOffset
    b.extend((-1i64).to_be_bytes()); // LogAppendTimeMs
    b.extend(0i32.to_be_bytes()); // ThrottleTimeMs
    sized(b)
}

/// A conversation: per exchange (correlation ids 1, 2, ...) the request frame's length
/// and the most plaintext per record the client puts in its records; `key_update`: the
/// client sends a KeyUpdate just before the request of this correlation id.
struct Plan {
    requests: Vec<(usize, usize)>,
    key_update: Option<i32>,
}

/// What was written: the client's application data records (stream offsets, the
/// correlation ids whose frames they carry), and the client stream ranges lost.
struct Layout {
    records: Vec<(Range<u64>, Vec<i32>)>,
    lost: Vec<Range<u64>>,
}

impl Layout {
    /// The records that lost bytes.
    fn lost_records(&self) -> Vec<usize> {
        (0..self.records.len())
            .filter(|&i| {
                let r = &self.records[i].0;
                self.lost.iter().any(|l| l.start < r.end && r.start < l.end)
            })
            .collect()
    }

    /// The correlation ids of the requests that lost bytes.
    fn hit(&self) -> Vec<i32> {
        let mut v: Vec<i32> = self
            .lost_records()
            .into_iter()
            .flat_map(|i| self.records[i].1.clone())
            .collect();
        v.dedup();
        v
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tls_gaps");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Writes the capture of `plan` under `suite` to `cap` and its key log to `keys`; the
/// client's segments overlapping `lose` (client stream offsets) are not written.
fn write(suite: Suite, plan: &Plan, lose: Option<Range<u64>>, cap: &Path, keys: &Path) -> Layout {
    let log = match suite {
        Suite::Tls13(_) => [
            ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", CHS),
            ("SERVER_HANDSHAKE_TRAFFIC_SECRET", SHS),
            ("CLIENT_TRAFFIC_SECRET_0", CTS),
            ("SERVER_TRAFFIC_SECRET_0", STS),
        ]
        .iter()
        .map(|(l, s)| format!("{l} {} {}\n", hex(&CR), hex(s)))
        .collect::<String>(),
        Suite::Tls12 { .. } => format!("CLIENT_RANDOM {} {}\n", hex(&CR), hex(&MASTER)),
    };
    std::fs::write(keys, log).unwrap();
    let (suite_id, tls13) = match suite {
        Suite::Tls13(s) => (s.id(), true),
        Suite::Tls12 { .. } => (0xc02f, false),
    };
    let (c12, s12) = keys12(&MASTER, &CR, &SR);
    let sealer = |secret: [u8; 32], k: &Keys12| Sealer {
        suite,
        secret: secret.to_vec(),
        k12: Some(k.clone()),
        seq: 0,
    };
    let ccs = vec![20u8, 3, 3, 0, 1, 1];
    let (mut client, mut server, client_fin, server_fin) = if tls13 {
        let mut chs = sealer(CHS, &c12);
        let mut shs = sealer(SHS, &s12);
        let cf = chs.seal(22, &finished(32));
        let mut sf = ccs.clone();
        sf.extend(shs.seal(22, &finished(32)));
        (sealer(CTS, &c12), sealer(STS, &s12), cf, sf)
    } else {
        let mut c = sealer(CTS, &c12);
        let mut s = sealer(STS, &s12);
        let mut cf = ccs.clone();
        cf.extend(c.seal(22, &finished(12)));
        let mut sf = ccs.clone();
        sf.extend(s.seal(22, &finished(12)));
        (c, s, cf, sf)
    };
    let mut w =
        PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(cap).unwrap())).unwrap();
    let mut flow = TcpFlow::new(
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092),
        [1000, 5000],
    );
    let mut t = 1_000_000u64;
    flow.open(&mut w, t).unwrap();
    let hello = client_hello(&CR, suite_id);
    let mut sent = 0u64; // client stream offset
    let mut layout = Layout {
        records: Vec::new(),
        lost: Vec::new(),
    };
    flow.send(&mut w, true, t + 100, &hello).unwrap();
    sent += hello.len() as u64;
    let mut sh = server_hello(&SR, suite_id, tls13);
    sh.extend(server_fin);
    flow.send(&mut w, false, t + 200, &sh).unwrap();
    flow.send(&mut w, true, t + 300, &client_fin).unwrap();
    sent += client_fin.len() as u64;
    t += 1000;
    for (i, &(len, chunk)) in plan.requests.iter().enumerate() {
        let corr = i as i32 + 1;
        let mut data = Vec::new();
        if plan.key_update == Some(corr) {
            let rec = client.key_update();
            layout
                .records
                .push((sent..sent + rec.len() as u64, Vec::new()));
            data.extend(rec);
        }
        for piece in request(corr, len).chunks(chunk) {
            let rec = client.seal(23, piece);
            let at = sent + data.len() as u64;
            layout.records.push((at..at + rec.len() as u64, vec![corr]));
            data.extend(rec);
        }
        // The segments (MSS-sized pieces of `data`) that overlap a range lost.
        let seg_lost = |a: u64, b: u64| lose.as_ref().is_some_and(|l| l.start < b && a < l.end);
        let rel: Option<Range<usize>> = {
            let lost: Vec<usize> = (0..data.len().div_ceil(MSS))
                .filter(|&k| {
                    let a = sent + (k * MSS) as u64;
                    seg_lost(a, (a + MSS as u64).min(sent + data.len() as u64))
                })
                .collect();
            match (lost.first(), lost.last()) {
                (Some(&a), Some(&b)) => Some(a * MSS..((b + 1) * MSS).min(data.len())),
                _ => None,
            }
        };
        match rel {
            Some(r) => {
                layout.lost.push(sent + r.start as u64..sent + r.end as u64);
                flow.send_losing(&mut w, true, t, &data, r, false).unwrap();
            }
            None => flow.send(&mut w, true, t, &data).unwrap(),
        }
        sent += data.len() as u64;
        let resp = server.seal(23, &response(corr, len));
        flow.send(&mut w, false, t + 500, &resp).unwrap();
        t += 1000;
    }
    flow.close(&mut w, t).unwrap();
    use std::io::Write;
    w.into_inner().flush().unwrap();
    layout
}

/// One message of `kwire read --format json`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Msg {
    kind: String,
    api: String,
    corr: i64,
    paired: bool,
    incomplete: bool,
}

/// `kwire read CAP --tls-keylog KEYS --format json --all-notices`: the messages and
/// stderr.
fn read(cap: &Path, keys: &Path) -> (Vec<Msg>, String) {
    let out = common::kwire()
        .args([
            "read",
            cap.to_str().unwrap(),
            "--tls-keylog",
            keys.to_str().unwrap(),
            "--format",
            "json",
            "--all-notices",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let msgs = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let j: J = serde_json::from_str(l).unwrap();
            Msg {
                kind: j["kind"].as_str().unwrap_or("").to_string(),
                api: j["api_name"].as_str().unwrap_or("").to_string(),
                corr: j["correlation_id"].as_i64().unwrap_or(-1),
                paired: !j["latency_ms"].is_null(),
                incomplete: j["incomplete"].as_bool().unwrap_or(false),
            }
        })
        .collect();
    (msgs, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// How the stream is expected to be found again after the gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// The gap ends inside the record it cut: skipped by its length.
    Within,
    /// The gap hides record boundaries: the next record is searched for; the gap starts
    /// (and ends) at a record boundary when `boundary`.
    Search { boundary: bool },
}

/// Reads `plan` under `suite` whole and losing `lose`, and checks: the whole capture
/// pairs every exchange; the lossy one names the gap, says how the stream was found
/// again (`expect`), keeps everything decrypted, and shows every exchange the gap did
/// not touch exactly as the whole capture does (request and paired response), at least
/// `after` of them after the gap.
fn check(suite: Suite, name: &str, plan: &Plan, lose: Range<u64>, expect: Expect, after: usize) {
    {
        let tag = format!("{name}-{suite:?}").replace([' ', '{', '}', ':', '(', ')'], "");
        let (cap, keys) = (
            scratch(&format!("{tag}.pcap")),
            scratch(&format!("{tag}.keys")),
        );
        let whole_cap = scratch(&format!("{tag}-whole.pcap"));
        write(suite, plan, None, &whole_cap, &keys);
        let (whole, werr) = read(&whole_cap, &keys);
        let n = plan.requests.len();
        assert_eq!(whole.len(), 2 * n, "{suite:?} whole: {whole:?}\n{werr}");
        assert!(
            whole.iter().all(|m| m.kind == "request" || m.paired),
            "{whole:?}"
        );
        let layout = write(suite, plan, Some(lose), &cap, &keys);
        let (lossy, err) = read(&cap, &keys);
        let ctx = format!("{suite:?} {name}:\n{err}\nlost {:?}", layout.lost);
        assert!(!layout.lost.is_empty(), "{ctx}");
        assert!(!err.contains("stays encrypted"), "{ctx}");
        assert!(!err.contains("stayed encrypted"), "{ctx}");
        assert!(!err.contains("does not decrypt"), "{ctx}");
        for l in &layout.lost {
            let range = format!(
                "missing from the TLS stream (stream bytes {}..{})",
                l.start, l.end
            );
            assert!(err.contains(&range), "no gap notice {range:?}: {ctx}");
        }
        let lost = layout.lost_records();
        match expect {
            Expect::Within => {
                assert_eq!(lost.len(), 1, "{ctx}");
                assert!(
                    err.contains("decryption goes on at the next record"),
                    "{ctx}"
                );
                assert!(!err.contains("resynchronised"), "{ctx}");
            }
            Expect::Search { boundary } => {
                let first = suite.first_app_record();
                let words = match lost.len() {
                    1 => format!("1 record lost (TLS record {})", lost[0] + first),
                    k => format!(
                        "{k} records lost (TLS records {}-{})",
                        lost[0] + first,
                        lost[k - 1] + first
                    ),
                };
                let line = err
                    .lines()
                    .find(|l| l.contains("TLS stream resynchronised"))
                    .unwrap_or_else(|| panic!("no resync notice: {ctx}"));
                assert!(line.contains(&words), "{words:?} in {line}\n{ctx}");
                if boundary {
                    assert!(err.contains("at the start of TLS record"), "{ctx}");
                    assert!(
                        line.contains("of which 0 after the gap passed over"),
                        "{line}"
                    );
                }
            }
        }
        // Every exchange the gap did not touch is as in the whole capture.
        let hit = layout.hit();
        let untouched = |v: &[Msg]| -> Vec<Msg> {
            v.iter()
                .filter(|m| !hit.contains(&(m.corr as i32)))
                .cloned()
                .collect()
        };
        assert_eq!(untouched(&whole), untouched(&lossy), "{ctx}");
        let last_hit = *hit.iter().max().unwrap() as i64;
        let later = untouched(&lossy)
            .iter()
            .filter(|m| m.corr > last_hit && m.kind == "response" && m.paired)
            .count();
        assert!(
            later >= after,
            "{later} exchanges paired after the gap: {ctx}"
        );
        // The requests hit are shown incomplete, or not at all when the gap hid them.
        for m in lossy.iter().filter(|m| hit.contains(&(m.corr as i32))) {
            assert!(m.kind == "response" || m.incomplete, "{m:?}: {ctx}");
        }
        for p in [cap, keys, whole_cap] {
            std::fs::remove_file(p).ok();
        }
    }
}

/// The client stream offset of the request of correlation id `corr` in `plan` under
/// `suite` (its first record's header).
fn request_at(suite: Suite, plan: &Plan, corr: i32) -> u64 {
    let (cap, keys) = (scratch("probe.pcap"), scratch("probe.keys"));
    let l = write(suite, plan, None, &cap, &keys);
    l.records
        .iter()
        .find(|(_, c)| c.contains(&corr))
        .unwrap()
        .0
        .start
}

/// A segment lost in the middle of a 16 KiB record: the record is skipped by the
/// length its header gives, and decryption goes on with the next.
#[test]
fn a_gap_inside_one_record() {
    let plan = Plan {
        requests: vec![
            (100, 16384),
            (30_000, 16384),
            (200, 16384),
            (5000, 16384),
            (100, 16384),
        ],
        key_update: None,
    };
    for suite in SUITES {
        let at = request_at(suite, &plan, 2);
        // The third segment of the request's send: inside its first record.
        let lose = at + 2 * MSS as u64 + 10..at + 2 * MSS as u64 + 20;
        check(suite, "inside", &plan, lose, Expect::Within, 3);
    }
}

/// Two segments lost among records of 200 bytes of plaintext: the gap cuts one record,
/// hides a dozen whole ones and ends inside another; the next record is found by its
/// header and confirmed by decryption with the sequence number the lost bytes allow.
/// The request it cuts ends after it: the framing skips the rest of it by its size and
/// the next request is framed as before.
#[test]
fn a_gap_that_hides_several_whole_records() {
    let plan = Plan {
        requests: vec![
            (100, 200),
            (6000, 200),
            (3000, 200),
            (100, 200),
            (700, 200),
            (100, 200),
        ],
        key_update: None,
    };
    for suite in SUITES {
        let at = request_at(suite, &plan, 2);
        let lose = at + 2000..at + 4000;
        check(
            suite,
            "several",
            &plan,
            lose,
            Expect::Search { boundary: false },
            4,
        );
    }
}

/// A gap that hides the end of one request and the start of the next, across records:
/// the framing finds the next frame by the resync evidence.
#[test]
fn a_gap_across_two_requests() {
    let plan = Plan {
        requests: vec![
            (100, 500),
            (3000, 500),
            (3000, 500),
            (100, 500),
            (700, 500),
            (100, 500),
        ],
        key_update: None,
    };
    for suite in [SUITES[0], SUITES[2]] {
        let at = request_at(suite, &plan, 3);
        let lose = at - 100..at + 100;
        check(
            suite,
            "across",
            &plan,
            lose,
            Expect::Search { boundary: false },
            3,
        );
    }
}

/// A gap that is exactly one record: records of 1,460 bytes on the wire, one per
/// segment, and the second segment of a request lost.
#[test]
fn a_gap_at_a_record_boundary() {
    for suite in SUITES {
        let chunk = MSS - suite.overhead();
        let plan = Plan {
            requests: vec![
                (100, chunk),
                (4 * chunk, chunk),
                (100, chunk),
                (2000, chunk),
                (100, chunk),
            ],
            key_update: None,
        };
        let at = request_at(suite, &plan, 2);
        let lose = at + MSS as u64 + 1..at + MSS as u64 + 2;
        check(
            suite,
            "boundary",
            &plan,
            lose,
            Expect::Search { boundary: true },
            3,
        );
    }
}

/// A gap that hides the client's TLS 1.3 KeyUpdate: the records after it are under the
/// next keys, so none decrypts with the window of sequence numbers tried; the search
/// gives up after its tries with a notice saying what it tried, the request the gap
/// cut comes out incomplete at once, and the server's direction is unaffected.
#[test]
fn a_gap_that_hides_a_key_update_is_said() {
    let suite = SUITES[0];
    let mut requests = vec![(100, 1000); 3];
    requests.extend(vec![(2500, 1000); 30]);
    let plan = Plan {
        requests,
        key_update: Some(3),
    };
    let at = request_at(suite, &plan, 3);
    let (cap, keys) = (scratch("keyupdate.pcap"), scratch("keyupdate.keys"));
    // The first segment of the third request's send: the KeyUpdate record (just before
    // the request's records) and the start of the request.
    let layout = write(suite, &plan, Some(at - 20..at + 40), &cap, &keys);
    let (msgs, err) = read(&cap, &keys);
    let line = err
        .lines()
        .find(|l| l.contains("TLS stream not resynchronised"))
        .unwrap_or_else(|| panic!("no failure notice:\n{err}"));
    let l = &layout.lost[0];
    assert!(
        line.contains(&format!(
            "after the gap at stream bytes {}..{}",
            l.start, l.end
        )),
        "{line}"
    );
    assert!(line.contains("4096 decryption tries used"), "{line}");
    assert!(
        line.contains("the rest of this direction stays encrypted"),
        "{line}"
    );
    assert!(!err.contains("TLS stream resynchronised"), "{err}");
    // Requests 1 and 2 and every response decrypt.
    let count = |kind: &str| msgs.iter().filter(|m| m.kind == kind).count();
    assert_eq!(count("response"), plan.requests.len(), "{msgs:?}");
    assert_eq!(count("request"), 2, "{msgs:?}");
    assert!(
        !msgs.iter().any(|m| m.kind == "request" && m.corr > 3),
        "{msgs:?}"
    );
    std::fs::remove_file(cap).ok();
    std::fs::remove_file(keys).ok();
}

/// The in-flight budget gives up the partial Kafka frames of TLS connections (two
/// connections, each sending half of a Produce of 100 kB in whole records of 1,000 bytes
/// before the other's turn, under a budget of 64 KiB): each frame given up is shown
/// incomplete, and decryption goes on, the handshakes long over. (The budget gave up a
/// "handshake" when the connection held no record at all, only an empty record
/// buffer's capacity, and the rest of the connection stayed encrypted.)
#[test]
fn frames_given_up_by_the_budget_leave_decryption_going() {
    use tls_build::{client_hello, seal13, server_hello};
    let (cap, keys) = (scratch("budget.pcap"), scratch("budget.keys"));
    let random = |i: u8| [i; 32];
    let mut log = String::new();
    for i in 1..=2u8 {
        for (l, sec) in [
            ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", CHS),
            ("SERVER_HANDSHAKE_TRAFFIC_SECRET", SHS),
            ("CLIENT_TRAFFIC_SECRET_0", CTS),
            ("SERVER_TRAFFIC_SECRET_0", STS),
        ] {
            log.push_str(&format!("{l} {} {}\n", hex(&random(i)), hex(&sec)));
        }
    }
    std::fs::write(&keys, log).unwrap();
    let big = request(2, 100_000);
    let records = |from: usize, to: usize, seq: &mut u64| -> Vec<u8> {
        let mut v = Vec::new();
        for piece in big[from..to].chunks(1000) {
            v.extend(seal13(&CTS, *seq, piece, 23));
            *seq += 1;
        }
        v
    };
    let mut w = PcapWriter::new(std::io::BufWriter::new(
        std::fs::File::create(&cap).unwrap(),
    ))
    .unwrap();
    let mut flows: Vec<TcpFlow> = (1..=2u16)
        .map(|i| {
            TcpFlow::new(
                SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000 + i),
                SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9092),
                [1000, 5000],
            )
        })
        .collect();
    let mut seqs = [0u64; 2];
    let mut t = 1_000_000u64;
    for (i, f) in flows.iter_mut().enumerate() {
        f.open(&mut w, t).unwrap();
        f.send(
            &mut w,
            true,
            t + 100,
            &client_hello(&random(i as u8 + 1), 0x1301),
        )
        .unwrap();
        let mut sh = server_hello(&SR, 0x1301, true);
        sh.extend([20, 3, 3, 0, 1, 1]);
        sh.extend(seal13(&SHS, 0, &finished(32), 22));
        f.send(&mut w, false, t + 200, &sh).unwrap();
        let mut c = seal13(&CHS, 0, &finished(32), 22);
        c.extend(seal13(&CTS, 0, &request(1, 100), 23));
        seqs[i] = 1;
        f.send(&mut w, true, t + 300, &c).unwrap();
        f.send(
            &mut w,
            false,
            t + 400,
            &seal13(&STS, 0, &response(1, 100), 23),
        )
        .unwrap();
        t += 1000;
    }
    for (from, to) in [(0, 50_000), (50_000, big.len())] {
        for (i, f) in flows.iter_mut().enumerate() {
            let data = records(from, to, &mut seqs[i]);
            f.send(&mut w, true, t, &data).unwrap();
            t += 1000;
        }
    }
    for (i, f) in flows.iter_mut().enumerate() {
        f.send(
            &mut w,
            true,
            t,
            &seal13(&CTS, seqs[i], &request(3, 300), 23),
        )
        .unwrap();
        let mut answers = seal13(&STS, 1, &response(2, 100_000), 23);
        answers.extend(seal13(&STS, 2, &response(3, 300), 23));
        f.send(&mut w, false, t + 100, &answers).unwrap();
        f.close(&mut w, t + 200).unwrap();
        t += 1000;
    }
    use std::io::Write;
    w.into_inner().flush().unwrap();
    let out = common::kwire()
        .args([
            "read",
            cap.to_str().unwrap(),
            "--tls-keylog",
            keys.to_str().unwrap(),
            "--format",
            "summary",
            "--max-in-flight",
            "65536",
            "--all-notices",
        ])
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(err.contains("the oldest partial frame"), "{err}");
    assert!(!err.contains("handshake"), "{err}");
    assert!(!err.contains("stayed encrypted"), "{err}");
    let paired = out
        .lines()
        .filter(|l| l.contains("ApiVersions v0 response") && l.contains("latency="))
        .count();
    assert_eq!(paired, 4, "{out}\n{err}");
    std::fs::remove_file(cap).ok();
    std::fs::remove_file(keys).ok();
}
