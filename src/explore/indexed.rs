//! A [`Source`] over one capture file through the message index ([`crate::index`]):
//! while the index pass runs, the first [`FIRST_MESSAGES`] messages come from a capped
//! [`Spool`] (the first screen at once); once the index is built, every message comes
//! from it, decoded alone ([`Capture::decode`]), and the spool is dropped. Memory is then
//! the index's 64 bytes a message, whatever the capture's size.

use super::source::{Inputs, Meta, Progress, Source, Spool};
use crate::decode::Detail;
use crate::index::{Capture, IndexOptions};
use crate::input;
use crate::schema::Schema;
use crate::session::Context;
use crate::tree::{Buffers, Direction, Message};
use std::sync::{Arc, Mutex, OnceLock};

/// Messages the spool reads while the index is built.
pub const FIRST_MESSAGES: usize = 20_000;

/// See the module documentation.
pub struct Indexed {
    spool: Arc<Mutex<Option<Arc<Spool>>>>,
    index: Arc<OnceLock<Result<Capture, String>>>,
    progress: Arc<Mutex<crate::index::Progress>>,
}

impl Indexed {
    /// Starts the index pass over `inputs.files[0]` on a background thread, and a
    /// capped spool beside it.
    ///
    /// # Errors
    /// The spool file cannot be made.
    pub fn start(schema: Arc<Schema>, inputs: Inputs) -> std::io::Result<Indexed> {
        let path = inputs.files[0].clone();
        let spool = Spool::start_capped(Arc::clone(&schema), inputs.clone(), FIRST_MESSAGES)?;
        let index = Arc::new(OnceLock::new());
        let spool = Arc::new(Mutex::new(Some(Arc::new(spool))));
        let progress = Arc::new(Mutex::new(crate::index::Progress::default()));
        {
            let index = Arc::clone(&index);
            let progress = Arc::clone(&progress);
            let spool = Arc::clone(&spool);
            let opts = IndexOptions {
                schema: (*schema).clone(),
                capture: inputs.capture.clone(),
                decode: inputs.decode.clone(),
                ..IndexOptions::default()
            };
            std::thread::Builder::new()
                .name("kwire-index".into())
                .spawn(move || {
                    let r = Capture::open_with(&path, opts, &mut |p| {
                        if let Ok(mut x) = progress.lock() {
                            *x = *p;
                        }
                    });
                    let failed = r.is_err();
                    let _ = index.set(r.map_err(|e| e.to_string()));
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

    fn spool(&self) -> Option<Arc<Spool>> {
        self.spool.lock().ok()?.clone()
    }
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
                error: None,
            },
            Some(Err(_)) => self.spool().map(|s| s.progress()).unwrap_or_default(),
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
        let Ok(frame) = c.frame(i) else {
            return false;
        };
        let arena = Buffers::new();
        match c.decode(i, &frame, &arena) {
            Ok((m, ctx)) => {
                f(&m, &ctx);
                true
            }
            Err(_) => false,
        }
    }

    fn notices(&self) -> (Vec<String>, u64) {
        match self.index.get() {
            Some(Ok(c)) => (
                c.notices().iter().map(|n| format!("kwire: {n}")).collect(),
                c.notices_dropped(),
            ),
            Some(Err(e)) => {
                let (mut n, more) = self.spool().map(|s| s.notices()).unwrap_or_default();
                n.push(format!("kwire: {e}"));
                (n, more)
            }
            None => self.spool().map(|s| s.notices()).unwrap_or_default(),
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
}
