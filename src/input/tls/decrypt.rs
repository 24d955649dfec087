//! Record protection: key derivation from logged secrets and record decryption, on
//! RustCrypto's crates (`aes-gcm`, `chacha20poly1305`, `aes` + `cbc`, `hmac` with `sha1` /
//! `sha2`, `hkdf`). Nothing here implements a primitive: it only arranges the inputs the
//! RFCs prescribe.
//!
//! - TLS 1.2 (RFC 5246 section 6.3): the key block is `PRF(master_secret, "key expansion",
//!   server_random + client_random)`, PRF being P_SHA256 or the suite's P_SHA384 (section
//!   5, an HMAC chain); AES-GCM records carry an 8-byte explicit nonce after a 4-byte
//!   implicit one (RFC 5288), ChaCha20-Poly1305 XORs the sequence number into a 12-byte IV
//!   (RFC 7905); AES-CBC records are MAC-then-encrypt (RFC 5246 section 6.2.3.2) or, when
//!   both hellos carry `encrypt_then_mac`, encrypt-then-MAC (RFC 7366).
//! - TLS 1.3 (RFC 8446 section 7.3): key and IV by HKDF-Expand-Label from a traffic
//!   secret, nonce = IV XOR sequence number, the record header as additional data, the
//!   content type at the end of the plaintext after zero padding; KeyUpdate's next secret
//!   by HKDF-Expand-Label(secret, "traffic upd") (section 7.2).

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use cbc::cipher::{block_padding::NoPadding, BlockDecryptMut, KeyIvInit};
use chacha20poly1305::ChaCha20Poly1305;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha384};
use tls_parser::{TlsCipherEnc, TlsCipherEncMode, TlsCipherMac, TlsCipherSuite, TlsPRF};

/// How a cipher suite protects records, as far as decryption needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bulk {
    /// AES-128-GCM.
    Aes128Gcm,
    /// AES-256-GCM.
    Aes256Gcm,
    /// ChaCha20-Poly1305.
    ChaCha20Poly1305,
    /// AES-CBC with an HMAC; `key` is 16 or 32 bytes.
    AesCbc {
        /// Encryption key length in bytes.
        key: usize,
        /// The HMAC's hash.
        mac: MacHash,
    },
}

/// The hash of an HMAC or PRF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacHash {
    /// HMAC-SHA1 (20 bytes).
    Sha1,
    /// HMAC-SHA256 (32 bytes).
    Sha256,
    /// HMAC-SHA384 (48 bytes).
    Sha384,
}

impl MacHash {
    fn len(self) -> usize {
        match self {
            MacHash::Sha1 => 20,
            MacHash::Sha256 => 32,
            MacHash::Sha384 => 48,
        }
    }
}

/// A cipher suite kwire can decrypt: its IANA id and name (from tls-parser's table), its
/// record protection and its PRF / HKDF hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suite {
    /// IANA id (`0x1301`).
    pub id: u16,
    /// IANA name (`TLS_AES_128_GCM_SHA256`).
    pub name: &'static str,
    /// Record protection.
    pub bulk: Bulk,
    /// True when the PRF (TLS 1.2) or HKDF (TLS 1.3) hash is SHA-384, else SHA-256.
    pub sha384: bool,
}

impl Suite {
    /// The suite with IANA id `id`, when it is one kwire decrypts (AES-GCM, ChaCha20-Poly1305,
    /// AES-CBC with HMAC-SHA1/256/384); `Err` carries the suite's name (or its id in hex)
    /// for a notice.
    pub fn from_id(id: u16) -> Result<Suite, String> {
        let Some(cs) = TlsCipherSuite::from_id(id) else {
            return Err(format!("cipher suite 0x{id:04x}"));
        };
        let bulk = match (cs.enc, cs.enc_mode, cs.enc_size, cs.mac) {
            (TlsCipherEnc::Aes, TlsCipherEncMode::Gcm, 128, _) => Bulk::Aes128Gcm,
            (TlsCipherEnc::Aes, TlsCipherEncMode::Gcm, 256, _) => Bulk::Aes256Gcm,
            (TlsCipherEnc::Chacha20_Poly1305, _, _, _) => Bulk::ChaCha20Poly1305,
            (TlsCipherEnc::Aes, TlsCipherEncMode::Cbc, bits @ (128 | 256), mac) => {
                let mac = match mac {
                    TlsCipherMac::HmacSha1 => MacHash::Sha1,
                    TlsCipherMac::HmacSha256 => MacHash::Sha256,
                    TlsCipherMac::HmacSha384 => MacHash::Sha384,
                    _ => return Err(cs.name.to_string()),
                };
                Bulk::AesCbc {
                    key: bits as usize / 8,
                    mac,
                }
            }
            _ => return Err(cs.name.to_string()),
        };
        Ok(Suite {
            id,
            name: cs.name,
            bulk,
            sha384: cs.prf == TlsPRF::Sha384,
        })
    }
}

/// Why a record did not decrypt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecryptError {
    /// The AEAD tag did not verify (wrong key, or bytes changed).
    Tag,
    /// The HMAC did not verify (wrong key, or bytes changed).
    Mac,
    /// CBC padding that is not TLS padding (wrong key).
    Padding,
    /// The record is too short for its nonce, IV, tag or MAC.
    Short,
}

impl DecryptError {
    /// What failed, in words.
    pub fn describe(self) -> &'static str {
        match self {
            DecryptError::Tag => "the AEAD tag did not verify",
            DecryptError::Mac => "the record MAC did not verify",
            DecryptError::Padding => "the CBC padding is not TLS padding",
            DecryptError::Short => "the record is too short for its nonce, tag or MAC",
        }
    }
}

enum AeadKey {
    A128(Box<Aes128Gcm>),
    A256(Box<Aes256Gcm>),
    Cha(Box<ChaCha20Poly1305>),
}

impl AeadKey {
    fn new(bulk: Bulk, key: &[u8]) -> Option<AeadKey> {
        Some(match bulk {
            Bulk::Aes128Gcm => AeadKey::A128(Box::new(Aes128Gcm::new_from_slice(key).ok()?)),
            Bulk::Aes256Gcm => AeadKey::A256(Box::new(Aes256Gcm::new_from_slice(key).ok()?)),
            Bulk::ChaCha20Poly1305 => {
                AeadKey::Cha(Box::new(ChaCha20Poly1305::new_from_slice(key).ok()?))
            }
            Bulk::AesCbc { .. } => return None,
        })
    }

    fn open(&self, nonce: &[u8; 12], aad: &[u8], buf: &mut Vec<u8>) -> Result<(), DecryptError> {
        let n = aes_gcm::Nonce::from_slice(nonce);
        let r = match self {
            AeadKey::A128(k) => k.decrypt_in_place(n, aad, buf),
            AeadKey::A256(k) => k.decrypt_in_place(n, aad, buf),
            AeadKey::Cha(k) => {
                k.decrypt_in_place(chacha20poly1305::Nonce::from_slice(nonce), aad, buf)
            }
        };
        r.map_err(|_| DecryptError::Tag)
    }
}

fn key_len(bulk: Bulk) -> usize {
    match bulk {
        Bulk::Aes128Gcm => 16,
        Bulk::Aes256Gcm | Bulk::ChaCha20Poly1305 => 32,
        Bulk::AesCbc { key, .. } => key,
    }
}

/// TLS 1.2 P_hash (RFC 5246 section 5) on the `hmac` crate.
fn p_hash<M: Mac + KeyInit + Clone>(secret: &[u8], seed: &[u8], out: &mut [u8]) {
    let Ok(base) = <M as KeyInit>::new_from_slice(secret) else {
        return;
    };
    let mut a = {
        let mut m = base.clone();
        m.update(seed);
        m.finalize().into_bytes().to_vec()
    };
    let mut done = 0;
    while done < out.len() {
        let mut m = base.clone();
        m.update(&a);
        m.update(seed);
        let block = m.finalize().into_bytes();
        let n = block.len().min(out.len() - done);
        out[done..done + n].copy_from_slice(&block[..n]);
        done += n;
        let mut m = base.clone();
        m.update(&a);
        a = m.finalize().into_bytes().to_vec();
    }
}

/// TLS 1.2 PRF(secret, label, seed) into `out`, with SHA-384 or SHA-256.
fn prf12(sha384: bool, secret: &[u8], label: &[u8], seed: &[u8], out: &mut [u8]) {
    let mut ls = Vec::with_capacity(label.len() + seed.len());
    ls.extend_from_slice(label);
    ls.extend_from_slice(seed);
    if sha384 {
        p_hash::<Hmac<Sha384>>(secret, &ls, out)
    } else {
        p_hash::<Hmac<Sha256>>(secret, &ls, out)
    }
}

/// TLS 1.3 HKDF-Expand-Label(secret, label, "", len) (RFC 8446 section 7.1) on `hkdf`:
/// `len` bytes, `None` when `len` is more than HKDF can give.
pub(crate) fn expand_label(
    sha384: bool,
    secret: &[u8],
    label: &str,
    len: usize,
) -> Option<Vec<u8>> {
    let full = format!("tls13 {label}");
    let mut info = Vec::with_capacity(4 + full.len());
    info.extend_from_slice(&(len as u16).to_be_bytes());
    info.push(full.len() as u8);
    info.extend_from_slice(full.as_bytes());
    info.push(0);
    let mut out = vec![0u8; len];
    let ok = if sha384 {
        hkdf::Hkdf::<Sha384>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .is_ok()
    } else {
        hkdf::Hkdf::<Sha256>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .is_ok()
    };
    ok.then_some(out)
}

enum Kind {
    /// TLS 1.2 AEAD: GCM (4-byte implicit IV + 8-byte explicit nonce) or ChaCha20 (12-byte IV).
    Aead12 { key: AeadKey, iv: Vec<u8> },
    /// TLS 1.2 AES-CBC + HMAC.
    Cbc12 {
        key: Vec<u8>,
        mac_key: Vec<u8>,
        mac: MacHash,
        etm: bool,
    },
    /// TLS 1.3 AEAD from a traffic secret.
    Aead13 {
        key: AeadKey,
        iv: [u8; 12],
        secret: Vec<u8>,
    },
}

/// The read state of one direction: keys and the record sequence number. Holds secrets:
/// its `Debug` says only which kind it is.
pub struct RecordKeys {
    suite: Suite,
    kind: Kind,
    seq: u64,
}

impl std::fmt::Debug for RecordKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecordKeys({}, seq {})", self.suite.name, self.seq)
    }
}

/// TLS 1.2 keys of both directions from a master secret: `(client_write, server_write)`.
/// `etm`: both hellos carried `encrypt_then_mac` (matters for CBC suites only).
pub fn tls12_keys(
    suite: Suite,
    master: &[u8],
    client_random: &[u8],
    server_random: &[u8],
    etm: bool,
) -> Option<(RecordKeys, RecordKeys)> {
    let (mac_len, iv_len) = match suite.bulk {
        Bulk::Aes128Gcm | Bulk::Aes256Gcm => (0, 4),
        Bulk::ChaCha20Poly1305 => (0, 12),
        Bulk::AesCbc { mac, .. } => (mac.len(), 0),
    };
    let kl = key_len(suite.bulk);
    let mut block = vec![0u8; 2 * (mac_len + kl + iv_len)];
    let mut seed = Vec::with_capacity(64);
    seed.extend_from_slice(server_random);
    seed.extend_from_slice(client_random);
    prf12(suite.sha384, master, b"key expansion", &seed, &mut block);
    let mut parts = Vec::new();
    let mut at = 0;
    for len in [mac_len, mac_len, kl, kl, iv_len, iv_len] {
        parts.push(block[at..at + len].to_vec());
        at += len;
    }
    let make = |mac_key: &[u8], key: &[u8], iv: &[u8]| -> Option<RecordKeys> {
        let kind = match suite.bulk {
            Bulk::AesCbc { mac, .. } => Kind::Cbc12 {
                key: key.to_vec(),
                mac_key: mac_key.to_vec(),
                mac,
                etm,
            },
            b => Kind::Aead12 {
                key: AeadKey::new(b, key)?,
                iv: iv.to_vec(),
            },
        };
        Some(RecordKeys {
            suite,
            kind,
            seq: 0,
        })
    };
    Some((
        make(&parts[0], &parts[2], &parts[4])?,
        make(&parts[1], &parts[3], &parts[5])?,
    ))
}

/// TLS 1.3 keys for one direction from a traffic secret (handshake or application).
pub fn tls13_keys(suite: Suite, secret: &[u8]) -> Option<RecordKeys> {
    let key = expand_label(suite.sha384, secret, "key", key_len(suite.bulk))?;
    let iv: [u8; 12] = expand_label(suite.sha384, secret, "iv", 12)?
        .try_into()
        .ok()?;
    Some(RecordKeys {
        suite,
        kind: Kind::Aead13 {
            key: AeadKey::new(suite.bulk, &key)?,
            iv,
            secret: secret.to_vec(),
        },
        seq: 0,
    })
}

fn xor_seq(iv: &[u8], seq: u64) -> [u8; 12] {
    let mut n = [0u8; 12];
    n.copy_from_slice(&iv[..12]);
    for (a, b) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
        *a ^= b;
    }
    n
}

fn hmac_check(hash: MacHash, key: &[u8], parts: &[&[u8]], tag: &[u8]) -> Result<(), DecryptError> {
    fn run<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
        let Ok(mut m) = <M as KeyInit>::new_from_slice(key) else {
            return false;
        };
        for p in parts {
            m.update(p);
        }
        m.verify_slice(tag).is_ok()
    }
    let ok = match hash {
        MacHash::Sha1 => run::<Hmac<sha1::Sha1>>(key, parts, tag),
        MacHash::Sha256 => run::<Hmac<Sha256>>(key, parts, tag),
        MacHash::Sha384 => run::<Hmac<Sha384>>(key, parts, tag),
    };
    if ok {
        Ok(())
    } else {
        Err(DecryptError::Mac)
    }
}

fn cbc_decrypt(key: &[u8], iv: &[u8], buf: &mut [u8]) -> Result<(), DecryptError> {
    let r = match key.len() {
        16 => cbc::Decryptor::<aes::Aes128>::new_from_slices(key, iv)
            .map_err(|_| DecryptError::Short)?
            .decrypt_padded_mut::<NoPadding>(buf)
            .map(|_| ()),
        _ => cbc::Decryptor::<aes::Aes256>::new_from_slices(key, iv)
            .map_err(|_| DecryptError::Short)?
            .decrypt_padded_mut::<NoPadding>(buf)
            .map(|_| ()),
    };
    r.map_err(|_| DecryptError::Short)
}

/// Length of the TLS padding (and its length byte) at the end of `p`, if it is TLS padding.
fn tls_padding(p: &[u8]) -> Result<usize, DecryptError> {
    let Some(&last) = p.last() else {
        return Err(DecryptError::Padding);
    };
    let n = last as usize + 1;
    if n > p.len() || !p[p.len() - n..].iter().all(|&b| b == last) {
        return Err(DecryptError::Padding);
    }
    Ok(n)
}

impl RecordKeys {
    /// The suite these keys belong to.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// A record of `fragment_len` bytes after its header that will not be opened (the
    /// in-flight budget gave it up before it was whole): the sequence number moves on as
    /// if it had been, so the records after it still open (TLS 1.3 and TLS 1.2 AEAD
    /// nonces, and every suite's additional data or MAC, carry it). Returns the length of
    /// its plaintext in bytes and whether that length is exact: it is for AEAD suites
    /// (TLS 1.3 counting the inner content type byte and no padding, which Kafka's
    /// clients and brokers do not add); for CBC suites the padding length is unknown, so
    /// the length given is the most the record can hold.
    pub fn skip(&mut self, fragment_len: usize) -> (u64, bool) {
        self.seq = self.seq.wrapping_add(1);
        let (over, exact) = self.overhead();
        ((fragment_len as u64).saturating_sub(over), exact)
    }

    /// Bytes of a record's fragment that are not plaintext, and whether that count is
    /// exact: TLS 1.2 AES-GCM 24 (the 8-byte explicit nonce and the 16-byte tag),
    /// ChaCha20-Poly1305 16 (the tag), TLS 1.3 17 (the tag and the inner content type,
    /// assuming no padding); AES-CBC at least 17 plus the MAC (the IV, one byte of
    /// padding length; the padding itself is unknown, so not exact).
    pub fn overhead(&self) -> (u64, bool) {
        match &self.kind {
            Kind::Aead12 { iv, .. } if iv.len() == 4 => (8 + 16, true),
            Kind::Aead12 { .. } => (16, true),
            Kind::Aead13 { .. } => (16 + 1, true),
            Kind::Cbc12 { mac, .. } => (16 + mac.len() as u64 + 1, false),
        }
    }

    /// The shortest fragment a record under these keys can have, in bytes: TLS 1.2
    /// AES-GCM 24, ChaCha20-Poly1305 16, TLS 1.3 17 (an empty record: tag and inner
    /// content type), AES-CBC the IV and the blocks that hold the MAC and the padding
    /// length (encrypt-then-MAC: IV, one block, MAC).
    pub fn min_fragment(&self) -> u64 {
        match &self.kind {
            Kind::Aead12 { iv, .. } if iv.len() == 4 => 8 + 16,
            Kind::Aead12 { .. } => 16,
            Kind::Aead13 { .. } => 17,
            Kind::Cbc12 { mac, etm: true, .. } => 32 + mac.len() as u64,
            Kind::Cbc12 { mac, .. } => 16 + (mac.len() as u64 + 1).div_ceil(16) * 16,
        }
    }

    /// The sequence number of the next record to open.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Sets the sequence number of the next record to open (after a gap, once a record
    /// has been found that opens with it: [`opens_at`](Self::opens_at)).
    pub fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }

    /// True when the record opens with sequence number `seq`: its AEAD tag (or MAC)
    /// verifies, which a record at a wrong offset or under a wrong sequence number fails
    /// but for a chance of 2^-128 (AEAD) or of the MAC's size. Leaves the sequence number
    /// as it was.
    pub fn opens_at(&mut self, seq: u64, header: &[u8; 5], fragment: &[u8]) -> bool {
        let was = self.seq;
        self.seq = seq;
        let ok = self.open(header, fragment).is_ok();
        self.seq = was;
        ok
    }

    /// TLS 1.2 AES-GCM: the record's 8-byte explicit nonce read as a number (most
    /// implementations, OpenSSL's among them, write the record's sequence number there);
    /// `None` for other suites or a fragment too short.
    pub fn explicit_seq(&self, fragment: &[u8]) -> Option<u64> {
        match &self.kind {
            Kind::Aead12 { iv, .. } if iv.len() == 4 && fragment.len() >= 8 => {
                Some(u64::from_be_bytes(fragment[..8].try_into().ok()?))
            }
            _ => None,
        }
    }

    /// [`open`](Self::open), but a record that does not decrypt leaves the sequence number
    /// as it was: for keys that may not be the record's (TLS 1.3 0-RTT early data keys
    /// beside the handshake keys).
    pub fn try_open(
        &mut self,
        header: &[u8; 5],
        fragment: &[u8],
    ) -> Result<(u8, Vec<u8>), DecryptError> {
        let seq = self.seq;
        let r = self.open(header, fragment);
        if r.is_err() {
            self.seq = seq;
        }
        r
    }

    /// Decrypts one record: `header` is its 5-byte header (type, version, length) as on
    /// the wire, `fragment` the bytes after it. Returns the content type (TLS 1.3: the
    /// inner one) and the plaintext, and advances the sequence number; on error the
    /// sequence number advances all the same.
    pub fn open(
        &mut self,
        header: &[u8; 5],
        fragment: &[u8],
    ) -> Result<(u8, Vec<u8>), DecryptError> {
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        let ctype = header[0];
        let aad12 = |len: usize| -> [u8; 13] {
            let mut a = [0u8; 13];
            a[..8].copy_from_slice(&seq.to_be_bytes());
            a[8] = ctype;
            a[9] = header[1];
            a[10] = header[2];
            a[11..].copy_from_slice(&(len as u16).to_be_bytes());
            a
        };
        match &self.kind {
            Kind::Aead12 { key, iv } => {
                let (nonce, ct) = if iv.len() == 4 {
                    if fragment.len() < 8 + 16 {
                        return Err(DecryptError::Short);
                    }
                    let mut n = [0u8; 12];
                    n[..4].copy_from_slice(iv);
                    n[4..].copy_from_slice(&fragment[..8]);
                    (n, &fragment[8..])
                } else {
                    if fragment.len() < 16 {
                        return Err(DecryptError::Short);
                    }
                    (xor_seq(iv, seq), fragment)
                };
                let mut buf = ct.to_vec();
                key.open(&nonce, &aad12(ct.len() - 16), &mut buf)?;
                Ok((ctype, buf))
            }
            Kind::Cbc12 {
                key,
                mac_key,
                mac,
                etm,
            } => {
                let ml = mac.len();
                if *etm {
                    if fragment.len() < 32 + ml || !(fragment.len() - ml).is_multiple_of(16) {
                        return Err(DecryptError::Short);
                    }
                    let (body, tag) = fragment.split_at(fragment.len() - ml);
                    hmac_check(*mac, mac_key, &[&aad12(body.len()), body], tag)?;
                    let mut buf = body[16..].to_vec();
                    cbc_decrypt(key, &body[..16], &mut buf)?;
                    let pad = tls_padding(&buf)?;
                    buf.truncate(buf.len() - pad);
                    Ok((ctype, buf))
                } else {
                    if fragment.len() < 32 || !fragment.len().is_multiple_of(16) {
                        return Err(DecryptError::Short);
                    }
                    let mut buf = fragment[16..].to_vec();
                    cbc_decrypt(key, &fragment[..16], &mut buf)?;
                    let pad = tls_padding(&buf)?;
                    if buf.len() < pad + ml {
                        return Err(DecryptError::Padding);
                    }
                    let content_len = buf.len() - pad - ml;
                    let (content, rest) = buf.split_at(content_len);
                    hmac_check(*mac, mac_key, &[&aad12(content_len), content], &rest[..ml])?;
                    buf.truncate(content_len);
                    Ok((ctype, buf))
                }
            }
            Kind::Aead13 { key, iv, .. } => {
                if fragment.len() < 17 {
                    return Err(DecryptError::Short);
                }
                let mut buf = fragment.to_vec();
                key.open(&xor_seq(iv, seq), header, &mut buf)?;
                while buf.last() == Some(&0) {
                    buf.pop();
                }
                let Some(inner) = buf.pop() else {
                    return Err(DecryptError::Padding);
                };
                Ok((inner, buf))
            }
        }
    }

    /// TLS 1.3 KeyUpdate: the next generation of these keys (RFC 8446 section 7.2); `None`
    /// for TLS 1.2 keys.
    pub fn updated(&self) -> Option<RecordKeys> {
        match &self.kind {
            Kind::Aead13 { secret, .. } => {
                let next = expand_label(self.suite.sha384, secret, "traffic upd", secret.len())?;
                tls13_keys(self.suite, &next)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8448 section 3 (simple 1-RTT handshake): the server handshake traffic secret,
    /// and the key and IV the RFC derives from it.
    #[test]
    fn rfc8448_handshake_key_and_iv() {
        let hex = |s: &str| -> Vec<u8> {
            let s: String = s.split_whitespace().collect();
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        let secret = hex("b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38");
        assert_eq!(
            expand_label(false, &secret, "key", 16).unwrap(),
            hex("3f ce 51 60 09 c2 17 27 d0 f2 e4 e8 6e e4 03 bc")
        );
        assert_eq!(
            expand_label(false, &secret, "iv", 12).unwrap(),
            hex("5d 31 3e b2 67 12 76 ee 13 00 0b 30")
        );
    }

    #[test]
    fn suites_from_the_table() {
        let s = Suite::from_id(0x1302).unwrap();
        assert_eq!((s.bulk, s.sha384), (Bulk::Aes256Gcm, true));
        let s = Suite::from_id(0xcca8).unwrap();
        assert_eq!((s.bulk, s.sha384), (Bulk::ChaCha20Poly1305, false));
        let s = Suite::from_id(0xc028).unwrap();
        assert_eq!(
            s.bulk,
            Bulk::AesCbc {
                key: 32,
                mac: MacHash::Sha384
            }
        );
        assert!(s.sha384);
        assert_eq!(
            Suite::from_id(0xc013).unwrap().bulk,
            Bulk::AesCbc {
                key: 16,
                mac: MacHash::Sha1
            }
        );
        assert!(Suite::from_id(0x0004).is_err()); // RC4
    }

    #[test]
    fn a_wrong_key_fails_its_tag() {
        let s = Suite::from_id(0x1301).unwrap();
        let mut k = tls13_keys(s, &[7u8; 32]).unwrap();
        let hdr = [23, 3, 3, 0, 20];
        assert_eq!(k.open(&hdr, &[0u8; 20]).unwrap_err(), DecryptError::Tag);
    }
}
