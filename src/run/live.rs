//! A live capture as the engine's input: the capture child ([`crate::input::live`]) is
//! started before reading and stopped, reaped and summed up after it.

use super::RunError;
use crate::input::live::{self, Capturer, LiveCapture, LiveOptions, LiveReader};

/// Starts the capture `opts` asks for (dumpcap, else tcpdump) and returns it with the
/// reader of its pcapng stream.
///
/// # Errors
/// Neither program on PATH, or the child would not start: [`RunError::Input`] with the
/// message to act on.
pub(super) fn start(opts: &LiveOptions) -> Result<(LiveCapture, LiveReader), RunError> {
    let c = Capturer::find().map_err(|e| RunError::Input(e.to_string()))?;
    LiveCapture::start(&c, opts).map_err(|e| RunError::Input(e.to_string()))
}

/// What a live capture's end adds to the closing lines.
#[derive(Debug, Default)]
pub(super) struct Ended {
    /// The child's own counts (received, dropped), why the capture stopped, and what
    /// went wrong, as `kwire: ...` lines.
    pub lines: Vec<String>,
    /// The child died part-way or `-w` could not be written: the run fails (exit 2).
    pub failed: bool,
}

/// Stops and reaps the capture child and says how the capture ended.
///
/// # Errors
/// A child that failed before it captured anything (no such interface, not allowed, a bad
/// filter): [`RunError::Input`] with its message.
pub(super) fn end(cap: LiveCapture, keys: &crate::input::tls::KeyLog) -> Result<Ended, RunError> {
    let tool = cap.capturer().tool.name();
    let e = cap.finish();
    let mut lines: Vec<String> = e
        .counts
        .iter()
        .map(|l| format!("kwire: {tool}: {l}"))
        .collect();
    let died = matches!(e.error, Some(live::LiveError::Died { .. }));
    lines.extend((!died).then(|| {
        format!(
            "kwire: live capture {}{}",
            e.reason,
            if e.killed {
                format!(" ({tool} did not stop when asked and was killed)")
            } else {
                String::new()
            }
        )
    }));
    let bad_keys = keys.followed_problems();
    if bad_keys > 0 {
        lines.push(format!(
            "kwire: {bad_keys} lines added to the key logs during the capture could not be used (not NSS key log lines)"
        ));
    }
    let failed = match e.error {
        None => false,
        Some(err @ live::LiveError::Died { .. }) | Some(err @ live::LiveError::Write { .. }) => {
            lines.push(format!("kwire: {err}"));
            true
        }
        Some(err) => return Err(RunError::Input(err.to_string())),
    };
    Ok(Ended { lines, failed })
}
