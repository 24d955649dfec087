//! What kwire says about bad input is what happened: a pcapng block that fails is a
//! sentence with its byte offset (never the parser's debug dump), a packet with no
//! Interface Description Block says that (not "link type -1"), random bytes are not
//! "text", stdout on `/dev/null` opened read-write (Python's `subprocess.DEVNULL`) is
//! not a closed output, and a request that fails to decode as a request is never shown
//! as a clean guessed response.

use std::process::Command;

const K: &str = env!("CARGO_BIN_EXE_kwire");

fn kwire(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(K).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn tmp(name: &str, bytes: &[u8]) -> String {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("honest_words");
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

fn le32(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}

/// A pcapng Section Header Block (little-endian, version 1.0, no options).
fn shb() -> Vec<u8> {
    let mut b = Vec::new();
    for x in [0x0A0D_0D0A, 28, 0x1A2B_3C4D] {
        b.extend(le32(x));
    }
    b.extend([1, 0, 0, 0]);
    b.extend((-1i64).to_le_bytes());
    b.extend(le32(28));
    b
}

/// An Interface Description Block for Ethernet.
fn idb() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(le32(1));
    b.extend(le32(20));
    b.extend([1, 0, 0, 0]);
    b.extend(le32(65535));
    b.extend(le32(20));
    b
}

/// An Enhanced Packet Block of interface 0 with 60 zero bytes.
fn epb() -> Vec<u8> {
    let len = 32 + 60;
    let mut b = Vec::new();
    for x in [6, len, 0, 0, 0, 60, 60] {
        b.extend(le32(x));
    }
    b.extend([0u8; 60]);
    b.extend(le32(len));
    b
}

#[test]
fn a_bad_pcapng_block_is_a_sentence_with_its_offset() {
    let mut f = shb();
    f.extend(idb());
    f.extend(epb());
    let at = f.len();
    // A block whose closing length disagrees with its opening one.
    for x in [6, 16, 0, 99] {
        f.extend(le32(x));
    }
    f.extend(epb());
    let p = tmp("badblock.pcapng", &f);
    let (code, _, err) = kwire(&["read", &p]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "the pcapng block at byte {at} is not a valid block: its type, length or closing length is wrong"
        )),
        "{err}"
    );
    assert!(
        !err.contains("NomError") && !err.contains("Verify"),
        "{err}"
    );
    // A corrupt block is not a cut: the file goes on after it.
    assert!(!err.contains("cut short"), "{err}");
    assert!(!err.contains("FileTruncated"), "{err}");
    assert!(err.contains("notices: CorruptRecord x1"), "{err}");
}

#[test]
fn a_packet_without_its_interface_block_says_so() {
    let mut f = shb();
    f.extend(epb());
    f.extend(epb());
    let p = tmp("noidb.pcapng", &f);
    let (code, _, err) = kwire(&["read", &p]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("no Interface Description Block before it describes interface 0"),
        "{err}"
    );
    assert!(err.contains("2 packets"), "{err}");
    assert!(!err.contains("link type -1"), "{err}");
}

#[test]
fn random_bytes_are_not_called_text() {
    // Bytes from a fixed xorshift: high bytes that are no UTF-8, control bytes.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..300)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let p = tmp("random.bin", &bytes);
    let (code, _, err) = kwire(&["read", &p]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not a pcap or pcapng file"), "{err}");
    assert!(!err.contains("text"), "{err}");
    // A hex dump still is.
    let p = tmp(
        "dump.txt",
        b"00000000  00 00 00 23 00 14 00 06  |...#....|\n",
    );
    let (_, _, err) = kwire(&["read", &p]);
    assert!(err.contains("hex dump"), "{err}");
}

#[test]
fn stdout_on_devnull_read_write_is_not_closed() {
    // `1<>/dev/null` opens it read-write, as Python's subprocess.DEVNULL does.
    for args in [
        "read captures/demo.pcap --strict",
        "stats captures/demo.pcap",
    ] {
        let o = Command::new("bash")
            .arg("-c")
            .arg(format!("'{K}' {args} 1<>/dev/null"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args}: {err}");
        assert!(!err.contains("closed"), "{args}: {err}");
    }
}

#[test]
fn a_guess_over_a_failed_request_carries_its_errors() {
    // The seed's DeleteTopics v6 request with one byte changed: as a request its
    // TimeoutMs is cut; a DescribeConfigs response layout fits the bytes exactly.
    let bad = "000000230014000600000000000000020100000000000000000000000000000000010000000000";
    let (code, out, err) = kwire(&["decode", "--hex", bad, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let m: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(m["kind"], "response", "{m}");
    assert_eq!(m["guessed"], true, "{m}");
    let w = m["warnings"][0]["message"].as_str().unwrap_or("");
    assert!(
        w.contains("read as a request (DeleteTopics v6), this frame has 1 error(s)")
            && w.contains("error at 0x0024: TimeoutMs"),
        "{m}"
    );
    let (_, out, _) = kwire(&["decode", "--hex", bad, "--format", "summary"]);
    assert!(
        out.contains("guessed") && out.contains("over a request reading with 1 error"),
        "{out}"
    );
    // The text output shows the warning under the title.
    let (_, out, _) = kwire(&["decode", "--hex", bad, "--format", "text"]);
    assert!(out.contains("! warning: read as a request"), "{out}");
    // With --kind request the request reading, with its error, is shown.
    let (code, out, _) = kwire(&[
        "decode", "--hex", bad, "--kind", "request", "--format", "json",
    ]);
    assert_eq!(code, 0);
    let m: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(m["kind"], "request");
    assert!(
        m["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("TimeoutMs"),
        "{m}"
    );
}
