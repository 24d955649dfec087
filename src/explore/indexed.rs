//! A [`Source`] over one capture file through the message index ([`crate::index`]):
//! while the index pass runs, the first [`FIRST_MESSAGES`] messages come from a capped
//! [`Spool`] (the first screen at once); once the index is built, every message comes
//! from it, decoded alone ([`Capture::decode`]), and the spool is dropped. Memory is then
//! the index's 56 bytes a message, whatever the capture's size (past [`INDEX_MEMORY`] the
//! index keeps its entries in a temporary file).
//!
//! A capture on stdin ([`Indexed::start_stdin`]) is first copied to an unlinked temporary
//! file (the spill), which the capped spool reads as it grows; when stdin ends, the spill
//! is indexed as a file is. So stdin costs what a file costs, not the spool's 420 bytes a
//! message.

use super::source::{Inputs, Meta, Progress, Source, Spool};
use crate::decode::Detail;
use crate::index::{Capture, IndexOptions, MessageInfo};
use crate::input;
use crate::schema::Schema;
use crate::session::Context;
use crate::tree::{Buffers, Direction, Message};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Messages the spool reads while the index is built.
pub const FIRST_MESSAGES: usize = 20_000;

/// Bytes of index entries kept in memory (2.4 M messages); the rest go to the index's
/// temporary file, so that the whole explorer stays under 256 MiB.
pub const INDEX_MEMORY: usize = 128 << 20;

/// What runs on the index thread before the index pass (stdin's copy to the spill).
type Before = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// See the module documentation.
pub struct Indexed {
    spool: Arc<Mutex<Option<Arc<Spool>>>>,
    index: Arc<OnceLock<Result<Capture, String>>>,
    progress: Arc<Mutex<crate::index::Progress>>,
    /// stdin is still being copied to the spill (the progress counts its bytes).
    copying: Arc<AtomicBool>,
    /// The spill file of stdin (unlinked; `/proc/self/fd/N` names it), kept open for
    /// the index, and the name `read` gives stdin in notices.
    spill: Option<(std::fs::File, String)>,
    /// `read`'s closing lines on the requests without a response (made on the index
    /// thread once the index is built).
    unanswered: Arc<OnceLock<Vec<String>>>,
    /// Set when the capture file was found shorter than when it was indexed: its bytes
    /// are no longer read (reading a mapping past a file's end would kill the process).
    changed: Mutex<Option<String>>,
    /// When the file's length was last looked at.
    checked: Mutex<Option<std::time::Instant>>,
    /// The broker ports, as `read`'s notice of no Kafka connection lists them.
    ports: String,
    /// `--detect` was given (the notice's advice then leaves it out).
    detect: bool,
}

impl Indexed {
    /// Starts the index pass over `inputs.files[0]` on a background thread, and a
    /// capped spool beside it.
    ///
    /// # Errors
    /// The spool file cannot be made.
    pub fn start(schema: Arc<Schema>, inputs: Inputs) -> std::io::Result<Indexed> {
        Indexed::start_within(schema, inputs, INDEX_MEMORY)
    }

    /// [`Indexed::start`] keeping at most `memory` bytes of index entries in memory
    /// (the rest in the index's temporary file): what one of several captures gets of
    /// [`INDEX_MEMORY`] ([`super::several::Several`]).
    ///
    /// # Errors
    /// As [`Indexed::start`].
    pub fn start_within(
        schema: Arc<Schema>,
        inputs: Inputs,
        memory: usize,
    ) -> std::io::Result<Indexed> {
        let progress = Arc::new(Mutex::new(crate::index::Progress::default()));
        let copying = Arc::new(AtomicBool::new(false));
        Indexed::start_after(schema, inputs, None, copying, progress, None, memory)
    }

    /// Bytes of memory the index holds ([`Capture::memory`]), once it is built; 0 before.
    pub fn memory(&self) -> usize {
        self.ready().map_or(0, Capture::memory)
    }

    /// The capture on stdin: copied to an unlinked temporary file as it comes (the
    /// capped spool reading that file meanwhile: the first screen at once), indexed when
    /// stdin ends. Memory is that of [`Indexed::start`] on the same capture as a file.
    ///
    /// # Errors
    /// The spill or spool file cannot be made (in `$TMPDIR`).
    pub fn start_stdin(schema: Arc<Schema>, inputs: Inputs) -> std::io::Result<Indexed> {
        use std::os::fd::AsRawFd;
        let tmp = std::env::temp_dir().join(format!(
            "kwire-explore-{}-{}.stdin.pcap",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let mut w = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .read(true)
            .open(&tmp)?;
        // Unlinked at once: the file goes with the process, however it ends; the index
        // and the spool open it again by its descriptor.
        let _ = std::fs::remove_file(&tmp);
        let keep = w.try_clone()?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", keep.as_raw_fd()));
        if !path.exists() {
            return Err(std::io::Error::other(
                "no /proc/self/fd: a capture on stdin needs Linux's /proc",
            ));
        }
        let copying = Arc::new(AtomicBool::new(true));
        let progress = Arc::new(Mutex::new(crate::index::Progress::default()));
        let before: Before = {
            let copying = Arc::clone(&copying);
            let progress = Arc::clone(&progress);
            Box::new(move || {
                let mut buf = vec![0u8; 1 << 20];
                let mut stdin = std::io::stdin().lock();
                let mut copied = 0u64;
                let res = loop {
                    match stdin.read(&mut buf) {
                        Ok(0) => break Ok(()),
                        Ok(n) => {
                            if let Err(e) = w.write_all(&buf[..n]) {
                                break Err(format!(
                                    "-: the copy of stdin to {}: {e}",
                                    tmp.display()
                                ));
                            }
                            copied += n as u64;
                            if let Ok(mut p) = progress.lock() {
                                p.bytes = copied;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => break Err(format!("-: {e}")),
                    }
                };
                copying.store(false, Ordering::Relaxed);
                res
            })
        };
        let inputs = Inputs {
            files: vec![path.clone()],
            ..inputs
        };
        let name = path.display().to_string();
        Indexed::start_after(
            schema,
            inputs,
            Some(before),
            copying,
            progress,
            Some((keep, name)),
            INDEX_MEMORY,
        )
    }

    fn start_after(
        schema: Arc<Schema>,
        inputs: Inputs,
        before: Option<Before>,
        copying: Arc<AtomicBool>,
        progress: Arc<Mutex<crate::index::Progress>>,
        spill: Option<(std::fs::File, String)>,
        memory: usize,
    ) -> std::io::Result<Indexed> {
        let path = inputs.files[0].clone();
        let ports: Vec<String> = inputs.capture.ports.iter().map(u16::to_string).collect();
        let ports = ports.join(", ");
        let detect = inputs.capture.detect;
        let spool = Spool::start_capped(Arc::clone(&schema), inputs.clone(), FIRST_MESSAGES)?;
        let index = Arc::new(OnceLock::new());
        let unanswered = Arc::new(OnceLock::new());
        let spool = Arc::new(Mutex::new(Some(Arc::new(spool))));
        {
            let index = Arc::clone(&index);
            let progress = Arc::clone(&progress);
            let spool = Arc::clone(&spool);
            let unanswered = Arc::clone(&unanswered);
            let opts = IndexOptions {
                schema: (*schema).clone(),
                capture: inputs.capture.clone(),
                decode: inputs.decode.clone(),
                memory_limit: memory,
            };
            std::thread::Builder::new()
                .name("kwire-index".into())
                .spawn(move || {
                    if let Some(before) = before {
                        if let Err(e) = before() {
                            let _ = index.set(Err(e));
                            return;
                        }
                    }
                    let r = Capture::open_with(&path, opts, &mut |p| {
                        if let Ok(mut x) = progress.lock() {
                            *x = *p;
                        }
                    });
                    let failed = r.is_err();
                    let _ = index.set(r.map_err(|e| e.to_string()));
                    if let Some(Ok(c)) = index.get() {
                        let _ = unanswered.set(unanswered_lines(c));
                    }
                    if failed {
                        // Without an index, the whole capture through the spool.
                        if let Ok(s) = Spool::start(schema, inputs) {
                            if let Ok(mut x) = spool.lock() {
                                *x = Some(Arc::new(s));
                            }
                        }
                    }
                })?;
        }
        Ok(Indexed {
            spool,
            index,
            progress,
            copying,
            changed: Mutex::new(None),
            checked: Mutex::new(None),
            unanswered,
            spill,
            ports,
            detect,
        })
    }

    /// The index, once built.
    fn ready(&self) -> Option<&Capture> {
        match self.index.get() {
            Some(Ok(c)) => {
                // The spool's work is done: its memory goes.
                if let Ok(mut s) = self.spool.try_lock() {
                    s.take();
                }
                Some(c)
            }
            _ => None,
        }
    }

    /// Whether the indexed file may still be read: not shorter than when it was indexed
    /// (looked at every 50 ms at most). A file cut under explore is refused from then
    /// on, said in the status bar, instead of reading its mapping past the end.
    fn intact(&self, c: &Capture) -> bool {
        if let Ok(e) = self.changed.lock() {
            if e.is_some() {
                return false;
            }
        }
        if self.spill.is_some() {
            return true;
        }
        let Ok(mut at) = self.checked.lock() else {
            return true;
        };
        if at.is_some_and(|t| t.elapsed() < std::time::Duration::from_millis(50)) {
            return true;
        }
        *at = Some(std::time::Instant::now());
        let was = self.progress.lock().map_or(0, |p| p.total);
        // A file removed is still there for its mapping; only one cut short is not.
        let Ok(m) = std::fs::metadata(c.path()) else {
            return true;
        };
        if m.len() >= was {
            return true;
        }
        if let Ok(mut e) = self.changed.lock() {
            *e = Some(format!(
                "{}: the file was cut from {was} to {} bytes under explore: its messages can no longer be read (start explore again)",
                c.path().display(),
                m.len()
            ));
        }
        false
    }

    fn spool(&self) -> Option<Arc<Spool>> {
        self.spool.lock().ok()?.clone()
    }

    /// The notices, with the index's file name (the spill's `/proc/self/fd/N` for stdin).
    /// Besides the index pass's notices, the lines `read` says at a capture's end when
    /// they apply: a capture cut short, TCP without a Kafka connection on the ports.
    fn notices_named(&self) -> (Vec<String>, u64) {
        match self.index.get() {
            Some(Ok(c)) => {
                let mut lines: Vec<String> =
                    c.notices().iter().map(|n| format!("kwire: {n}")).collect();
                if let Some(u) = self.unanswered.get() {
                    lines.extend(u.iter().cloned());
                }
                let st = c.stats();
                if st.connections == 0 && st.tcp_segments > 0 {
                    lines.push(format!(
                        "kwire: {} TCP segment{}, but no Kafka connection on port {}: {}",
                        st.tcp_segments,
                        if st.tcp_segments == 1 { "" } else { "s" },
                        self.ports,
                        if self.detect {
                            "try --port P"
                        } else {
                            "try --port P or --detect"
                        }
                    ));
                }
                if st.file_truncated {
                    lines.push(format!(
                        "kwire: {}: the capture is cut short (it ends inside a record)",
                        c.path().display()
                    ));
                }
                (lines, c.notices_dropped())
            }
            Some(Err(e)) => {
                let (mut n, more) = self.spool().map(|s| s.notices()).unwrap_or_default();
                n.push(format!("kwire: {e}"));
                (n, more)
            }
            None => self.spool().map(|s| s.notices()).unwrap_or_default(),
        }
    }
}

/// Lines `read` lists at a capture's end that the index does not keep.
const UNANSWERED_LINES: usize = 5;

/// `read`'s lines on the requests that got no response (the first
/// [`UNANSWERED_LINES`], by connection then arrival, and how many more): the requests
/// the index left without a pair, but a Produce with acks=0 (which expects none).
fn unanswered_lines(c: &Capture) -> Vec<String> {
    let mut waiting: Vec<(u32, MessageInfo)> = Vec::new();
    let mut more = 0usize;
    for i in 0..c.len() {
        let Ok(m) = c.info(i) else { continue };
        if m.kind != input::FrameKind::Kafka
            || m.direction != input::Direction::ToServer
            || m.pair.is_some()
        {
            continue;
        }
        if m.api_key == Some(0) {
            let arena = Buffers::new();
            let zero = c.frame(i).ok().is_some_and(|f| {
                c.decode(i, &f, &arena).is_ok_and(|(msg, _)| {
                    msg.tree
                        .find("Acks")
                        .is_some_and(|a| a.value == crate::tree::Value::Int(0))
                })
            });
            if zero {
                continue;
            }
        }
        // The first lines by connection: keep the lowest connections' earliest.
        waiting.push((m.connection, m));
        waiting.sort_by_key(|(conn, m)| (*conn, m.index));
        if waiting.len() > UNANSWERED_LINES {
            waiting.pop();
            more += 1;
        }
    }
    let mut lines: Vec<String> = waiting
        .iter()
        .map(|(conn, m)| {
            format!(
                "kwire: connection {conn}: request correlation_id {} ({} v{}, frame {}) got no response in the capture",
                m.correlation_id.unwrap_or_default(),
                m.api_key.and_then(|k| c.schema().api_name(k)).unwrap_or("?"),
                m.api_version.unwrap_or_default(),
                m.frames.1
            )
        })
        .collect();
    if more > 0 {
        lines.push(format!(
            "kwire: {more} more unanswered requests are not listed (--all-notices lists them; -Y unanswered shows them)"
        ));
    }
    lines
}

fn direction(d: input::Direction) -> Direction {
    if d == input::Direction::ToServer {
        Direction::Request
    } else {
        Direction::Response
    }
}

impl Source for Indexed {
    fn count(&self) -> usize {
        match self.ready() {
            Some(c) => c.len(),
            None => self.spool().map_or(0, |s| s.count()),
        }
    }

    fn progress(&self) -> Progress {
        let p = self.progress.lock().map(|p| *p).unwrap_or_default();
        match self.index.get() {
            Some(Ok(_)) => Progress {
                bytes_read: p.total,
                bytes_total: p.total,
                done: true,
                following: false,
                error: self.changed.lock().ok().and_then(|e| e.clone()),
            },
            Some(Err(_)) => self.spool().map(|s| s.progress()).unwrap_or_default(),
            // stdin being copied: its bytes so far, of a total not known.
            None if self.copying.load(Ordering::Relaxed) => Progress {
                bytes_read: p.bytes,
                bytes_total: 0,
                done: false,
                following: false,
                error: None,
            },
            None => Progress {
                bytes_read: p.bytes,
                bytes_total: p.total.max(1),
                done: false,
                following: false,
                error: None,
            },
        }
    }

    fn meta(&self, i: usize) -> Option<Meta> {
        let Some(c) = self.ready() else {
            return self.spool()?.meta(i);
        };
        let m = c.info(i).ok()?;
        Some(Meta {
            connection: m.connection,
            capture: 0,
            direction: direction(m.direction),
            correlation_id: m.correlation_id,
            size: m.size,
            time: (m.time.secs, m.time.nanos),
            pair: m.pair,
        })
    }

    fn with_message(
        &self,
        i: usize,
        detail: Detail,
        f: &mut dyn FnMut(&Message<'_>, &Context),
    ) -> bool {
        let Some(c) = self.ready() else {
            return self.spool().is_some_and(|s| s.with_message(i, detail, f));
        };
        if !self.intact(c) {
            return false;
        }
        let Ok(frame) = c.frame(i) else {
            return false;
        };
        let arena = Buffers::new();
        match c.decode_at(i, &frame, &arena, detail) {
            Ok((m, ctx)) => {
                f(&m, &ctx);
                true
            }
            Err(_) => false,
        }
    }

    fn notices(&self) -> (Vec<String>, u64) {
        let (mut lines, more) = self.notices_named();
        if let Some((_, name)) = &self.spill {
            // The spill is stdin to the user, as `read -` names it.
            for l in &mut lines {
                if l.contains(name.as_str()) {
                    *l = l.replace(name.as_str(), "-");
                }
            }
        }
        (lines, more)
    }

    fn input_failed(&self) -> bool {
        match self.index.get() {
            Some(Ok(c)) => {
                let st = c.stats();
                st.file_truncated
                    || st.file_corrupt
                    || self.changed.lock().map_or(true, |e| e.is_some())
            }
            Some(Err(_)) => true,
            None => self.spool().is_some_and(|s| s.input_failed()),
        }
    }

    fn tls_of(&self, capture: u32, connection: u32) -> Option<String> {
        let Some(c) = self.ready() else {
            return self.spool()?.tls_of(capture, connection);
        };
        let t = c.stats().tls.iter().find(|t| t.connection == connection)?;
        let mut s = format!(
            "{} {}",
            t.version.unwrap_or("TLS"),
            t.cipher_suite.as_deref().unwrap_or("?")
        );
        if let Some(sni) = &t.sni {
            s.push_str(&format!(" sni={sni}"));
        }
        Some(s)
    }

    fn tls_table(&self) -> (Vec<crate::traffic::TlsRow>, u64) {
        match self.ready() {
            Some(c) => (
                crate::traffic::TlsRow::of_capture(c.stats().tls.clone(), None),
                c.stats().tls_past_cap,
            ),
            None => self.spool().map(|s| s.tls_table()).unwrap_or_default(),
        }
    }

    fn tls_count(&self) -> (usize, u64) {
        match self.ready() {
            Some(c) => (c.stats().tls.len(), c.stats().tls_past_cap),
            None => self.spool().map(|s| s.tls_count()).unwrap_or_default(),
        }
    }
}
