//! TLS records and handshakes built in a test, with secrets the test chooses, for the
//! captures of `tests/bounded_memory.rs` and `tests/tls_gaps.rs`: TLS 1.3 (RFC 8446
//! section 7: HKDF-Expand-Label, nonce = IV XOR the record's sequence number, the header
//! as additional data) with TLS_AES_128_GCM_SHA256 or TLS_CHACHA20_POLY1305_SHA256, and
//! TLS 1.2 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (RFC 5246 section 6.3's key block from
//! the master secret by P_SHA256; RFC 5288's 4-byte implicit and 8-byte explicit nonce;
//! the sequence number, type, version and length as additional data). Only the hellos
//! kwire reads to find the keys are built (no certificates, no key exchange).
#![allow(dead_code)]

use aes_gcm::aead::{AeadInPlace, KeyInit};

/// HKDF-Expand-Label(secret, label, "", len) with SHA-256 (RFC 8446 section 7.1).
pub fn expand_label(secret: &[u8], label: &str, len: usize) -> Vec<u8> {
    let full = format!("tls13 {label}");
    let mut info = (len as u16).to_be_bytes().to_vec();
    info.push(full.len() as u8);
    info.extend(full.as_bytes());
    info.push(0);
    let mut out = vec![0u8; len];
    hkdf::Hkdf::<sha2::Sha256>::from_prk(secret)
        .unwrap()
        .expand(&info, &mut out)
        .unwrap();
    out
}

/// A TLS 1.3 suite the builders seal with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite13 {
    /// TLS_AES_128_GCM_SHA256 (0x1301).
    Aes128Gcm,
    /// TLS_CHACHA20_POLY1305_SHA256 (0x1303).
    ChaCha20,
}

impl Suite13 {
    /// The IANA id.
    pub fn id(self) -> u16 {
        match self {
            Suite13::Aes128Gcm => 0x1301,
            Suite13::ChaCha20 => 0x1303,
        }
    }
}

/// A TLS 1.3 record (TLS_AES_128_GCM_SHA256) of `inner` with content type `ctype`,
/// sealed with the traffic secret `secret` at sequence number `seq`.
pub fn seal13(secret: &[u8], seq: u64, inner: &[u8], ctype: u8) -> Vec<u8> {
    seal13_with(Suite13::Aes128Gcm, secret, seq, inner, ctype)
}

/// A TLS 1.3 record of `inner` with content type `ctype` under `suite`, sealed with the
/// traffic secret `secret` at sequence number `seq`.
pub fn seal13_with(suite: Suite13, secret: &[u8], seq: u64, inner: &[u8], ctype: u8) -> Vec<u8> {
    let key_len = match suite {
        Suite13::Aes128Gcm => 16,
        Suite13::ChaCha20 => 32,
    };
    let key = expand_label(secret, "key", key_len);
    let mut nonce: [u8; 12] = expand_label(secret, "iv", 12).try_into().unwrap();
    for (a, b) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
        *a ^= b;
    }
    let mut pt = inner.to_vec();
    pt.push(ctype);
    let len = pt.len() + 16;
    let mut rec = vec![23, 3, 3, (len >> 8) as u8, len as u8];
    let aad = rec.clone();
    match suite {
        Suite13::Aes128Gcm => aes_gcm::Aes128Gcm::new_from_slice(&key)
            .unwrap()
            .encrypt_in_place(aes_gcm::Nonce::from_slice(&nonce), &aad, &mut pt)
            .unwrap(),
        Suite13::ChaCha20 => chacha20poly1305::ChaCha20Poly1305::new_from_slice(&key)
            .unwrap()
            .encrypt_in_place(chacha20poly1305::Nonce::from_slice(&nonce), &aad, &mut pt)
            .unwrap(),
    }
    rec.extend(pt);
    rec
}

/// A plaintext handshake record holding one message of type `msg_type`.
pub fn handshake_record(msg_type: u8, body: &[u8]) -> Vec<u8> {
    let mut rec = vec![22, 3, 3];
    let msg = handshake_message(msg_type, body);
    rec.extend((msg.len() as u16).to_be_bytes());
    rec.extend(msg);
    rec
}

/// A handshake message: type, 24-bit length, body.
pub fn handshake_message(msg_type: u8, body: &[u8]) -> Vec<u8> {
    let n = body.len();
    let mut msg = vec![msg_type, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    msg.extend(body);
    msg
}

/// A ClientHello record (legacy version TLS 1.2) with `random`, offering `suite`, no
/// extensions.
pub fn client_hello(random: &[u8; 32], suite: u16) -> Vec<u8> {
    let mut ch = vec![3, 3];
    ch.extend(random);
    ch.push(0); // no session id
    ch.extend([0, 2]);
    ch.extend(suite.to_be_bytes());
    ch.extend([1, 0, 0, 0]); // null compression, no extensions
    handshake_record(1, &ch)
}

/// A ServerHello record with `random` choosing `suite`; `tls13`: with the
/// supported_versions extension naming TLS 1.3.
pub fn server_hello(random: &[u8; 32], suite: u16, tls13: bool) -> Vec<u8> {
    let mut sh = vec![3, 3];
    sh.extend(random);
    sh.push(0); // no session id
    sh.extend(suite.to_be_bytes());
    sh.push(0); // null compression
    if tls13 {
        sh.extend([0, 6, 0, 43, 0, 2, 3, 4]);
    } else {
        sh.extend([0, 0]);
    }
    handshake_record(2, &sh)
}

/// A Finished message of `len` bytes of verify_data (zeros: kwire does not check it).
pub fn finished(len: usize) -> Vec<u8> {
    handshake_message(20, &vec![0u8; len])
}

/// TLS 1.2 PRF with P_SHA256 (RFC 5246 section 5): `len` bytes.
pub fn prf_sha256(secret: &[u8], label: &[u8], seed: &[u8], len: usize) -> Vec<u8> {
    use hmac::{Hmac, Mac};
    type H = Hmac<sha2::Sha256>;
    let mut ls = label.to_vec();
    ls.extend(seed);
    let mac = |parts: &[&[u8]]| -> Vec<u8> {
        let mut m = <H as KeyInit>::new_from_slice(secret).unwrap();
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().to_vec()
    };
    let mut a = mac(&[&ls]);
    let mut out = Vec::new();
    while out.len() < len {
        out.extend(mac(&[&a, &ls]));
        a = mac(&[&a]);
    }
    out.truncate(len);
    out
}

/// One direction's TLS 1.2 AES-128-GCM write state.
#[derive(Clone, Debug)]
pub struct Keys12 {
    /// The write key.
    pub key: Vec<u8>,
    /// The 4-byte implicit nonce (the key block's write IV).
    pub iv: Vec<u8>,
}

/// The client's and the server's TLS 1.2 AES-128-GCM keys from the master secret and
/// the hellos' randoms (RFC 5246 section 6.3: client key, server key, client IV, server
/// IV).
pub fn keys12(master: &[u8], client_random: &[u8], server_random: &[u8]) -> (Keys12, Keys12) {
    let mut seed = server_random.to_vec();
    seed.extend(client_random);
    let b = prf_sha256(master, b"key expansion", &seed, 40);
    (
        Keys12 {
            key: b[..16].to_vec(),
            iv: b[32..36].to_vec(),
        },
        Keys12 {
            key: b[16..32].to_vec(),
            iv: b[36..40].to_vec(),
        },
    )
}

/// A TLS 1.2 AES-128-GCM record of content type `ctype` holding `plain`, at sequence
/// number `seq`, with the 8-byte explicit nonce `explicit` (OpenSSL writes `seq`).
pub fn seal12(k: &Keys12, seq: u64, explicit: u64, ctype: u8, plain: &[u8]) -> Vec<u8> {
    let mut nonce = k.iv.clone();
    nonce.extend(explicit.to_be_bytes());
    let mut aad = seq.to_be_bytes().to_vec();
    aad.extend([ctype, 3, 3]);
    aad.extend((plain.len() as u16).to_be_bytes());
    let mut ct = plain.to_vec();
    aes_gcm::Aes128Gcm::new_from_slice(&k.key)
        .unwrap()
        .encrypt_in_place(aes_gcm::Nonce::from_slice(&nonce), &aad, &mut ct)
        .unwrap();
    let len = 8 + ct.len();
    let mut rec = vec![ctype, 3, 3, (len >> 8) as u8, len as u8];
    rec.extend(explicit.to_be_bytes());
    rec.extend(ct);
    rec
}

/// Hex of `b`, lower case (for key log lines).
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
