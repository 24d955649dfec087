//! `kwire explore`: Wireshark's three panes in a terminal (ratatui over crossterm).
//!
//! The message list on top (the summary lines `kwire read` prints), the selected
//! message's tree in the middle (the lines `read -V` prints, folding), its bytes at the
//! bottom (16 a row, coloured by region as the reference pages colour them), linked:
//! selecting a node highlights its bytes; moving the byte cursor selects the deepest
//! node covering that byte. The captures are read on a background thread
//! ([`source::Spool`]): the first screen comes with the first messages, and the list
//! grows while the rest is read. The display filter and the overview views run as
//! passes over the whole capture on threads of their own ([`scan`]).
//!
//! Keys: see [`HELP`] (also `?` in the program).

pub mod app;
pub mod indexed;
pub mod scan;
pub mod several;
pub mod source;
pub mod tree;
mod ui;

use crate::filter::Filter;
use crate::schema::Schema;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

pub use source::{Inputs, Source, Spool};

/// The keys, as `?` shows them (and the README lists them).
pub const HELP: &str = "\
Keys
  Up/Down, j/k         move in the focused pane (bytes: a row; Left/Right a byte)
  PgUp/PgDn            a page
  g/Home, G/End        first, last (G follows a growing capture or view)
  Tab, Shift-Tab       next, previous pane (list, tree, bytes)
  Enter, Space         tree: fold or unfold the node; list: go to the tree
  Left/Right           tree: fold, unfold (Left on a leaf: its parent)
  /                    display filter (the -Y language; Enter applies, Esc cancels;
                       an empty filter shows every message)
  p                    the request's response, the response's request
  f                    only the selected message's connection (again: back)
  c                    copy the selected node's bytes as hex (OSC 52) and show them
  e                    next message with a decode error or a non-zero error code
  Ctrl-F               search the focused pane: text, re:REGEX or hex:0a0b...
  n, N                 next, previous match
  \\                    zoom the focused pane (again: back)
  C                    connections (Enter: only that connection)
  s                    statistics (per API, errors, latencies, per second) of the
                       messages the filter keeps, then every TLS connection
  L                    notices (what `kwire read` says on stderr)
  ?                    this help
  q, Ctrl-C            quit (Esc: back from a view or a prompt)
  mouse                click a row, a node or a byte; the wheel scrolls";

/// How `kwire explore` runs, besides what to read.
#[derive(Debug)]
pub struct Options {
    /// Colour (`--color`, `NO_COLOR`); without it only reverse video and bold mark things.
    pub color: bool,
    /// The filter to start with (`-Y`).
    pub filter: Option<Filter>,
    /// Tree options (`--max-elements`, `--wide`).
    pub render: crate::render::RenderOptions,
    /// The names the schema knows: the filter prompt refuses others, as `read -Y` does
    /// (`crate::filter::Known::of`).
    pub known: std::sync::Arc<crate::filter::Known>,
    /// The first pass a filter naming `unanswered` takes (capture files only: `None`
    /// for stdin and a live capture, where the prompt refuses such a filter).
    pub unanswered: Option<scan::UnansweredPass>,
}

/// Why `kwire explore` could not run.
#[derive(Debug)]
pub enum ExploreError {
    /// stdout is not a terminal.
    NotATerminal,
    /// The terminal could not be set up or drawn on.
    Io(std::io::Error),
}

impl std::fmt::Display for ExploreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExploreError::NotATerminal => f.write_str(
                "explore: stdout is not a terminal: `kwire explore` draws a full-screen program (`kwire read` prints to files and pipes)",
            ),
            ExploreError::Io(e) => write!(f, "explore: the terminal: {e}"),
        }
    }
}

impl From<std::io::Error> for ExploreError {
    fn from(e: std::io::Error) -> Self {
        ExploreError::Io(e)
    }
}

/// Puts the terminal back: cooked mode, the main screen, no mouse reporting, a cursor.
/// Safe to call more than once.
pub fn restore_terminal() {
    use crossterm::{cursor, event, execute, terminal};
    let _ = terminal::disable_raw_mode();
    let mut out = std::io::stdout();
    let _ = execute!(
        out,
        event::DisableMouseCapture,
        terminal::LeaveAlternateScreen,
        cursor::Show
    );
    let _ = out.flush();
}

/// The terminal's descriptor (`/dev/tty`, kept open) and its settings before raw mode,
/// for [`restore_terminal_from_signal`].
#[cfg(unix)]
static TTY: std::sync::OnceLock<(i32, libc::termios)> = std::sync::OnceLock::new();

/// What a signal handler writes to the terminal to undo the explorer's modes: mouse
/// capture off (the modes crossterm's `EnableMouseCapture` sets), the main screen back,
/// the cursor shown.
#[cfg(unix)]
const RESTORE_SEQ: &[u8] =
    b"\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?1049l\x1b[?25h";

/// Saves the terminal's settings and makes SIGBUS restore them before it ends the process.
///
/// A capture file cut while its mapping is read (the message index maps it) raises SIGBUS
/// at the read, which ends the process: without this, the terminal stayed in raw mode on
/// the alternate screen with the mouse captured. The handler does only what a signal
/// handler may (`write(2)`, `tcsetattr`), says why on stderr, then lets SIGBUS end the
/// process as it would have (exit status 135 in a shell).
#[cfg(unix)]
fn guard_fatal_signals() {
    use std::os::fd::IntoRawFd;
    if TTY.get().is_none() {
        let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
        else {
            return;
        };
        let fd = f.into_raw_fd();
        // SAFETY: `t` is plain data that tcgetattr fills; `fd` is an open descriptor.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
            // SAFETY: `fd` was opened above and is not used elsewhere.
            unsafe { libc::close(fd) };
            return;
        }
        let _ = TTY.set((fd, t));
    }
    // SAFETY: the action runs in the signal handler and calls only async-signal-safe
    // functions: write(2), tcsetattr and signal-hook's emulate_default_handler.
    let _ = unsafe {
        signal_hook::low_level::register(signal_hook::consts::SIGBUS, || {
            restore_terminal_from_signal();
            const MSG: &[u8] = b"kwire: explore: SIGBUS: a capture file was cut or changed while it was read (its mapping has no bytes there any more)\n";
            // Writing a static buffer to stderr (inside the unsafe block above).
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGBUS);
        })
    };
}

/// The terminal as it was before the explorer, by async-signal-safe calls only.
#[cfg(unix)]
fn restore_terminal_from_signal() {
    if let Some((fd, t)) = TTY.get() {
        // SAFETY: write(2) and tcsetattr on the terminal's descriptor, with the settings
        // tcgetattr gave; both are async-signal-safe.
        unsafe {
            libc::write(*fd, RESTORE_SEQ.as_ptr().cast(), RESTORE_SEQ.len());
            libc::tcsetattr(*fd, libc::TCSANOW, t);
        }
    }
}

/// The source for `inputs`: one capture file that is not being written goes through the
/// message index ([`indexed::Indexed`]), and so does stdin, copied to a temporary file
/// first ([`indexed::Indexed::start_stdin`]); several capture files none of which is
/// being written, each through its index in turn ([`several::Several`]); a file still
/// being written (alone or among others), `-` among several inputs, and a live capture
/// are read by a [`Spool`] (which follows a growing file's end, and keeps about 420
/// bytes a message in memory).
///
/// # Errors
/// The spool file cannot be made.
pub fn open(schema: Arc<Schema>, inputs: Inputs) -> std::io::Result<Arc<dyn Source>> {
    let settled = |p: &std::path::Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| std::time::SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age >= source::FOLLOW_RECENT)
    };
    Ok(match inputs.files.as_slice() {
        [one] if one.as_os_str() == "-" => Arc::new(indexed::Indexed::start_stdin(schema, inputs)?),
        [one] if one.as_os_str() != "-" && one.is_file() && settled(one) => {
            Arc::new(indexed::Indexed::start(schema, inputs)?)
        }
        [_, _, ..]
            if inputs.live.is_none()
                && inputs
                    .files
                    .iter()
                    .all(|p| p.as_os_str() != "-" && p.is_file() && settled(p)) =>
        {
            Arc::new(several::Several::start(schema, inputs)?)
        }
        _ => Arc::new(Spool::start(schema, inputs)?),
    })
}

/// How an explorer's run ended ([`run`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// An input was unreadable, not a capture, or cut short ([`Source::input_failed`]):
    /// `kwire explore` then exits 2, as `kwire read` does.
    pub input_failed: bool,
}

/// Runs the explorer on `inputs` until the user quits.
///
/// # Errors
/// stdout is not a terminal ([`ExploreError::NotATerminal`]), the terminal cannot be
/// set up, the spool file cannot be made. The terminal is restored before this returns
/// (and before a panic's message is printed).
pub fn run(schema: Schema, inputs: Inputs, opts: Options) -> Result<Outcome, ExploreError> {
    if !std::io::stdout().is_terminal() {
        return Err(ExploreError::NotATerminal);
    }
    let schema = Arc::new(schema);
    let src = open(schema, inputs)?;
    // crossterm reads NO_COLOR on its own; `--color` has the last word.
    crossterm::style::force_color_output(opts.color);
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        prev(info);
    }));
    #[cfg(unix)]
    guard_fatal_signals();
    {
        use crossterm::{event, execute, terminal};
        terminal::enable_raw_mode()?;
        let mut out = std::io::stdout();
        if let Err(e) = execute!(
            out,
            terminal::EnterAlternateScreen,
            event::EnableMouseCapture
        ) {
            restore_terminal();
            return Err(e.into());
        }
    }
    let res = (|| -> std::io::Result<()> {
        let out = Ansi16 {
            inner: std::io::stdout(),
            buf: Vec::new(),
            only16: only_16_colours(),
        };
        let backend = ratatui::backend::CrosstermBackend::new(out);
        let mut terminal = ratatui::Terminal::new(backend)?;
        let mut app = app::App::new(Arc::clone(&src), opts);
        app.run(&mut terminal)
    })();
    restore_terminal();
    res.map_err(ExploreError::Io)?;
    Ok(Outcome {
        input_failed: src.input_failed(),
    })
}

/// Whether the terminal has only the 16 ANSI colours: neither `COLORTERM` (set by
/// terminals with 24-bit colour) nor a `TERM` naming a 256-colour or direct-colour
/// terminfo entry (`xterm-256color`, `tmux-256color`, `xterm-direct`). `TERM=xterm`,
/// `screen`, `linux`, `vt100` have 8 or 16.
pub fn only_16_colours() -> bool {
    let colorterm = std::env::var_os("COLORTERM").is_some_and(|v| !v.is_empty());
    let term = std::env::var("TERM").unwrap_or_default();
    !(colorterm || term.contains("256col") || term.contains("direct"))
}

/// The terminal's output. crossterm writes every colour, the 16 named ones too, as a
/// 256-colour code (`38;5;N`, `48;5;N`); on a terminal of 16 colours (`only16`) the
/// codes of colours 0-15 are rewritten to the ANSI ones (`30`-`37`, `90`-`97`, `40`-`47`,
/// `100`-`107`) that every colour terminal knows. Bytes are held until `flush` (ratatui
/// flushes after each frame), so that no escape sequence is split.
struct Ansi16<W: Write> {
    inner: W,
    buf: Vec<u8>,
    only16: bool,
}

impl<W: Write> Write for Ansi16<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if !self.only16 {
            return self.inner.write(b);
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            let out = to_16_colours(&self.buf);
            self.buf.clear();
            self.inner.write_all(&out)?;
        }
        self.inner.flush()
    }
}

/// `b` with each SGR sequence's `38;5;N` and `48;5;N` of N below 16 written as the
/// ANSI colour code (see [`Ansi16`]); everything else as it is.
fn to_16_colours(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == 0x1b && b.get(i + 1) == Some(&b'[') {
            // CSI: parameters (digits and ';') up to the final byte.
            let start = i + 2;
            let mut end = start;
            while end < b.len() && (b[end].is_ascii_digit() || b[end] == b';') {
                end += 1;
            }
            if b.get(end) == Some(&b'm') {
                let params = std::str::from_utf8(&b[start..end]).unwrap_or("");
                out.extend_from_slice(b"\x1b[");
                out.extend_from_slice(sgr_16(params).as_bytes());
                out.push(b'm');
                i = end + 1;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// One SGR parameter list with its 256-colour codes of colours 0-15 made ANSI ones.
fn sgr_16(params: &str) -> String {
    let ps: Vec<&str> = params.split(';').collect();
    let mut out: Vec<String> = Vec::with_capacity(ps.len());
    let mut i = 0;
    while i < ps.len() {
        let p = ps[i];
        if (p == "38" || p == "48") && ps.get(i + 1) == Some(&"5") {
            if let Some(n) = ps.get(i + 2).and_then(|n| n.parse::<u8>().ok()) {
                if n < 16 {
                    let base: u8 = if p == "38" { 30 } else { 40 };
                    let code = if n < 8 { base + n } else { base + 60 + n - 8 };
                    out.push(code.to_string());
                    i += 3;
                    continue;
                }
            }
        }
        out.push(p.to_string());
        i += 1;
    }
    out.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_0_to_15_become_ansi_codes() {
        let b = b"a\x1b[38;5;1mred\x1b[48;5;9m\x1b[1;38;5;8;48;5;200mx\x1b[39m\x1b[2J";
        let out = String::from_utf8(to_16_colours(b)).unwrap();
        assert_eq!(
            out,
            "a\x1b[31mred\x1b[101m\x1b[1;90;48;5;200mx\x1b[39m\x1b[2J"
        );
    }
}
