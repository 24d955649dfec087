//! The explorer's state and what each key does to it.

use super::scan::{self, Overview, Scan};
use super::source::Source;
use super::tree::{RowKind, View};
use super::Options;
use crate::decode::Detail;
use crate::filter::Filter;
use crate::render::time::TimeFormat;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEventKind};
use ratatui::layout::Rect;
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The three panes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    /// The message list.
    List,
    /// The selected message's tree.
    Tree,
    /// Its bytes.
    Bytes,
}

impl Pane {
    fn next(self) -> Pane {
        match self {
            Pane::List => Pane::Tree,
            Pane::Tree => Pane::Bytes,
            Pane::Bytes => Pane::List,
        }
    }
    fn prev(self) -> Pane {
        self.next().next()
    }
}

/// What fills the screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    /// The three panes.
    Main,
    /// The keys.
    Help,
    /// One line a connection.
    Connections,
    /// Counts, latencies, the per-second chart.
    Stats,
    /// The notices.
    Notices,
}

/// An open prompt at the bottom.
#[derive(Clone, Debug)]
pub struct Prompt {
    /// Filter (`/`) or search (Ctrl-F).
    pub search: bool,
    /// What was typed.
    pub text: String,
    /// The parser's error for the text last entered.
    pub error: Option<String>,
}

/// A search pattern (Ctrl-F).
#[derive(Clone, Debug)]
pub enum Pattern {
    /// Text, case-insensitive.
    Text(String),
    /// `re:REGEX`.
    Regex(regex::Regex),
    /// `hex:0a0b`: bytes.
    Hex(Vec<u8>),
}

impl Pattern {
    /// Parses what was typed at the search prompt.
    ///
    /// # Errors
    /// A bad regex, odd or non-hex digits.
    pub fn parse(s: &str) -> Result<Pattern, String> {
        if let Some(r) = s.strip_prefix("re:") {
            return regex::Regex::new(r)
                .map(Pattern::Regex)
                .map_err(|e| format!("regex: {e}"));
        }
        if let Some(h) = s.strip_prefix("hex:") {
            let h: String = h.chars().filter(|c| !c.is_whitespace()).collect();
            if h.is_empty()
                || !h.len().is_multiple_of(2)
                || !h.chars().all(|c| c.is_ascii_hexdigit())
            {
                return Err("hex: an even number of hex digits, e.g. hex:00 0c".into());
            }
            let b = (0..h.len())
                .step_by(2)
                .filter_map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok())
                .collect();
            return Ok(Pattern::Hex(b));
        }
        if s.is_empty() {
            return Err("nothing to search for".into());
        }
        Ok(Pattern::Text(s.to_lowercase()))
    }

    /// Whether a line of text matches.
    pub fn in_text(&self, t: &str) -> bool {
        match self {
            Pattern::Text(s) => t.to_lowercase().contains(s),
            Pattern::Regex(r) => r.is_match(t),
            Pattern::Hex(b) => {
                let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                t.to_lowercase().replace(' ', "").contains(&hex)
            }
        }
    }

    /// The first match in `b` at or after `from`: its offset.
    pub fn in_bytes(&self, b: &[u8], from: usize, back: bool) -> Option<usize> {
        let needle: Vec<u8> = match self {
            Pattern::Text(s) => s.as_bytes().to_vec(),
            Pattern::Hex(h) => h.clone(),
            Pattern::Regex(r) => {
                let rb = regex::bytes::Regex::new(r.as_str()).ok()?;
                let hits: Vec<usize> = rb.find_iter(b).map(|m| m.start()).collect();
                return if back {
                    hits.into_iter().rev().find(|&x| x <= from)
                } else {
                    hits.into_iter().find(|&x| x >= from)
                };
            }
        };
        if needle.is_empty() || needle.len() > b.len() {
            return None;
        }
        let fold = matches!(self, Pattern::Text(_));
        let eq = |i: usize| {
            b[i..i + needle.len()].iter().zip(&needle).all(|(x, y)| {
                if fold {
                    x.eq_ignore_ascii_case(y)
                } else {
                    x == y
                }
            })
        };
        let last = b.len() - needle.len();
        if back {
            (0..=from.min(last)).rev().find(|&i| eq(i))
        } else {
            (from..=last).find(|&i| eq(i))
        }
    }
}

/// A summary line of the list, with whether it shows in the error colour.
#[derive(Clone, Debug)]
pub struct Line {
    /// The line `kwire read` prints.
    pub text: String,
    /// A decode error or a non-zero error code.
    pub error: bool,
}

/// Which messages the list shows.
pub enum Shown {
    /// All of them.
    All,
    /// Those a display filter keeps.
    Filtered {
        /// The filter's text.
        text: String,
        /// The pass finding them.
        scan: Arc<Scan<Vec<usize>>>,
    },
}

/// Why a filter naming `unanswered` is refused (at the prompt and for `-Y`) where the
/// input cannot be read twice, as `kwire read -Y unanswered` refuses it.
pub const UNANSWERED: &str =
    "unanswered needs a capture file, not stdin or a live capture: it reads the capture twice";

/// How long a key's scan over messages (`e`, a list search) may take before it stops
/// and says so.
const SCAN_TIME: Duration = Duration::from_secs(3);

/// The explorer.
pub struct App {
    /// The messages.
    pub src: Arc<dyn Source>,
    /// Colour, start filter, tree options.
    pub opts: Options,
    /// What fills the screen.
    pub screen: Screen,
    /// The focused pane.
    pub focus: Pane,
    /// The focused pane fills the screen.
    pub zoom: bool,
    /// The list.
    pub shown: Shown,
    /// The source's message count, taken once a frame (in [`App::tick`]): the list and
    /// the status bar of one frame count the same messages while the index grows.
    pub count: usize,
    /// The source's progress, taken once a frame before [`App::count`]: a frame whose
    /// status bar says the reading is done counts every message (taken after the count,
    /// it could say done over the first-screen spool's count, as the index took over).
    pub progress: super::source::Progress,
    /// The filter in force before `f` (restored by pressing `f` again).
    pub before_conn: Option<Option<String>>,
    /// The selected position in the list.
    pub sel: usize,
    /// The first position on screen.
    pub top: usize,
    /// The list follows the end of the capture (`G`).
    pub follow: bool,
    /// [`App::follow`] was turned on because the source grows (live, a file being written).
    pub auto_followed: bool,
    /// Summary lines already made.
    pub lines: HashMap<usize, Line>,
    /// The selected message (its number in the source) and its tree and bytes.
    pub view: Option<(usize, View)>,
    /// The selected position among the tree's visible rows.
    pub tree_sel: usize,
    /// The first visible row on screen.
    pub tree_top: usize,
    /// The byte cursor, in the buffer of the selected node.
    pub cursor: usize,
    /// The buffer shown in the bytes pane.
    pub buffer: u32,
    /// The first byte row on screen.
    pub bytes_top: usize,
    /// The open prompt.
    pub prompt: Option<Prompt>,
    /// The last search, and the pane it searches.
    pub search: Option<(Pattern, Pane)>,
    /// The last notice for the status bar.
    pub notice: String,
    /// The overview pass of the whole capture (started on the first `C` or `s`).
    pub overview: Option<Arc<Scan<Overview>>>,
    /// With a display filter in force, the statistics view's pass over the messages it
    /// keeps, and the filter's text (started on `s`).
    pub filtered_overview: Option<(String, Arc<Scan<Overview>>)>,
    /// The `unanswered` pass of the display filter in force, read once for its list and
    /// its statistics ([`scan::UnansweredPass::once`]).
    filter_pass: Option<scan::UnansweredPass>,
    /// The selected line of the connections view, and the view's scroll.
    pub view_sel: usize,
    /// The statistics view's text and its messages per second, with what they were
    /// made from (see [`StatsKey`]): made again only when that changes, not at each
    /// redraw (with 100,000 TLS connections the text is 100,000 lines).
    pub stats_text: Option<(StatsKey, Arc<StatsText>)>,
    /// The view follows its last line (`G`), however long it grows.
    pub view_end: bool,
    /// Where the panes were last drawn (for the mouse).
    pub areas: Areas,
    /// Quit.
    pub quit: bool,
}

/// The statistics view's text (`kwire stats`' text, its TLS table included) and the
/// messages per second of its chart.
#[derive(Debug, Default)]
pub struct StatsText {
    /// The text, a line a row.
    pub text: String,
    /// Messages in each second since the first message.
    pub per_second: Vec<u64>,
}

/// What the statistics view's text is made from: the overview pass (the messages it
/// had counted, whether it ended) and the size of the sources' TLS table
/// ([`Source::tls_count`]: the table only grows). Equal keys ([`StatsKey::same`]),
/// equal texts.
#[derive(Clone, Debug)]
pub struct StatsKey {
    /// The pass (a new filter starts a new pass). Held weakly: the pass ends when the
    /// explorer drops it, but its allocation stays while the key does, so no later
    /// pass can take its address and pass for it.
    pub scan: std::sync::Weak<Scan<Overview>>,
    /// Messages it had counted.
    pub scanned: usize,
    /// It had ended.
    pub done: bool,
    /// [`Source::tls_count`].
    pub tls: (usize, u64),
}

impl StatsKey {
    /// The same pass at the same count, and the same TLS table.
    pub fn same(&self, o: &StatsKey) -> bool {
        std::sync::Weak::ptr_eq(&self.scan, &o.scan)
            && (self.scanned, self.done, self.tls) == (o.scanned, o.done, o.tls)
    }
}

/// Where the panes were drawn, inside their borders.
#[derive(Clone, Copy, Debug, Default)]
pub struct Areas {
    /// The list's rows.
    pub list: Rect,
    /// The tree's rows.
    pub tree: Rect,
    /// The byte rows.
    pub bytes: Rect,
}

impl App {
    /// An explorer over `src`.
    pub fn new(src: Arc<dyn Source>, opts: Options) -> App {
        let mut app = App {
            src,
            screen: Screen::Main,
            focus: Pane::List,
            zoom: false,
            shown: Shown::All,
            count: 0,
            progress: Default::default(),
            before_conn: None,
            sel: 0,
            top: 0,
            follow: false,
            auto_followed: false,
            lines: HashMap::new(),
            view: None,
            tree_sel: 0,
            tree_top: 0,
            cursor: 0,
            buffer: 0,
            bytes_top: 0,
            prompt: None,
            search: None,
            notice: String::new(),
            overview: None,
            filtered_overview: None,
            filter_pass: None,
            view_sel: 0,
            stats_text: None,
            view_end: false,
            areas: Areas::default(),
            quit: false,
            opts,
        };
        if let Some(f) = app.opts.filter.take() {
            let text = f.text().to_string();
            app.apply_filter(Some((text, f)));
        }
        app
    }

    /// The event loop: draws, waits at most 100 ms for an event, handles it; redraws
    /// at least ten times a second while the capture is read.
    ///
    /// # Errors
    /// Drawing or reading the terminal failed.
    pub fn run<B: ratatui::backend::Backend>(
        &mut self,
        t: &mut ratatui::Terminal<B>,
    ) -> std::io::Result<()>
    where
        std::io::Error: From<B::Error>,
    {
        while !self.quit {
            self.tick();
            t.draw(|f| super::ui::draw(f, self))?;
            // Tests only (debug builds; a release build has no such hook): a panic once
            // the screen is up, to check that the terminal is restored before its
            // message is printed (`tests/explore.rs`).
            #[cfg(debug_assertions)]
            if std::env::var_os("KWIRE_EXPLORE_TEST_PANIC").is_some() && self.src.count() > 0 {
                panic!("KWIRE_EXPLORE_TEST_PANIC is set: a panic for the tests");
            }
            if event::poll(Duration::from_millis(100))? {
                match event::read()? {
                    Event::Key(k) if k.kind != event::KeyEventKind::Release => self.key(k),
                    Event::Mouse(m) => self.mouse(m),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Messages in the list now.
    pub fn shown_len(&self) -> usize {
        match &self.shown {
            Shown::All => self.count,
            Shown::Filtered { scan, .. } => scan.found.lock().map_or(0, |h| h.len()),
        }
    }

    /// The message (its number in the source) at list position `k`.
    pub fn shown_at(&self, k: usize) -> Option<usize> {
        match &self.shown {
            Shown::All => (k < self.count).then_some(k),
            Shown::Filtered { scan, .. } => scan.found.lock().ok()?.get(k).copied(),
        }
    }

    /// The list position of message `i`, if the list shows it.
    pub fn position_of(&self, i: usize) -> Option<usize> {
        match &self.shown {
            Shown::All => (i < self.count).then_some(i),
            Shown::Filtered { scan, .. } => scan.found.lock().ok()?.binary_search(&i).ok(),
        }
    }

    /// The summary line of message `i` (made once, then kept; at most 4,096 kept).
    pub fn line(&mut self, i: usize) -> Line {
        if let Some(l) = self.lines.get(&i) {
            return l.clone();
        }
        let mut out = Line {
            text: String::new(),
            error: false,
        };
        let base = crate::render::RenderOptions {
            color: false,
            time: TimeFormat::Relative,
            ..self.opts.render.clone()
        };
        self.src.with_message(i, Detail::Facts, &mut |m, ctx| {
            let mut o = base.clone();
            o.time_refs.first = ctx.first_time;
            o.time_refs.previous = ctx.previous_time;
            out.text = crate::render::summary::line(m, Some(ctx), &o);
            out.error = has_problem(m);
        });
        if self.lines.len() >= 4096 {
            self.lines.clear();
        }
        self.lines.insert(i, out.clone());
        out
    }

    /// Called before each frame: follows a growing list, loads the selected message.
    pub fn tick(&mut self) {
        self.progress = self.src.progress();
        self.count = self.src.count();
        // A live capture, a file growing: the list follows the end (once; keys leave it).
        if !self.auto_followed && self.src.follows_end() {
            self.auto_followed = true;
            self.follow = true;
        }
        let n = self.shown_len();
        if self.follow && n > 0 {
            self.sel = n - 1;
        }
        if n > 0 && self.sel >= n {
            self.sel = n - 1;
        }
        let want = self.shown_at(self.sel);
        if want != self.view.as_ref().map(|v| v.0) {
            self.load(want);
        }
    }

    /// Loads message `i`'s tree and bytes (or none).
    fn load(&mut self, i: Option<usize>) {
        self.view = None;
        self.tree_sel = 0;
        self.tree_top = 0;
        self.cursor = 0;
        self.buffer = 0;
        self.bytes_top = 0;
        let Some(i) = i else { return };
        let mut v = None;
        let ropts = self.opts.render.clone();
        self.src.with_message(i, Detail::Full, &mut |m, _| {
            v = Some(View::of(m, &ropts));
        });
        self.view = v.map(|v| (i, v));
    }

    /// Sets the display filter (none: every message), keeping the selected message
    /// selected when the new list shows it.
    pub fn apply_filter(&mut self, f: Option<(String, Filter)>) {
        let keep = self.view.as_ref().map(|v| v.0);
        // The old filter's statistics pass stops (dropping it stops its thread).
        self.filtered_overview = None;
        // A filter entered anew reads `unanswered` anew.
        self.filter_pass = self
            .opts
            .unanswered
            .as_ref()
            .map(scan::UnansweredPass::once);
        self.shown = match f {
            None => Shown::All,
            Some((text, f)) => Shown::Filtered {
                text,
                scan: scan::filter(Arc::clone(&self.src), f, self.filter_pass.as_ref()),
            },
        };
        self.follow = false;
        self.sel = 0;
        self.top = 0;
        if let Some(i) = keep {
            if matches!(self.shown, Shown::All) {
                self.sel = i;
            }
        }
    }

    /// The filter's text, if one is in force.
    pub fn filter_text(&self) -> Option<&str> {
        match &self.shown {
            Shown::All => None,
            Shown::Filtered { text, .. } => Some(text),
        }
    }

    /// Handles a key.
    pub fn key(&mut self, k: KeyEvent) {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && k.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        if self.prompt.is_some() {
            self.prompt_key(k);
            return;
        }
        if self.screen != Screen::Main {
            self.view_key(k);
            return;
        }
        // A view opens at its top.
        self.view_end = false;
        match k.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('?') => {
                self.view_sel = 0;
                self.screen = Screen::Help
            }
            KeyCode::Char('L') => {
                self.view_sel = 0;
                self.screen = Screen::Notices
            }
            KeyCode::Char('C') => {
                self.start_overview();
                self.view_sel = 0;
                self.screen = Screen::Connections;
            }
            KeyCode::Char('s') => {
                self.start_stats();
                self.view_sel = 0;
                self.screen = Screen::Stats;
            }
            KeyCode::Tab => self.focus = self.focus.next(),
            KeyCode::BackTab => self.focus = self.focus.prev(),
            KeyCode::Char('\\') => self.zoom = !self.zoom,
            KeyCode::Char('/') => {
                self.prompt = Some(Prompt {
                    search: false,
                    text: self.filter_text().unwrap_or("").to_string(),
                    error: None,
                })
            }
            KeyCode::Char('f') if ctrl => self.open_search(),
            KeyCode::Char('f') => self.conn_filter(),
            KeyCode::Char('p') => self.pair(),
            KeyCode::Char('c') => self.copy(),
            KeyCode::Char('e') => self.next_error(),
            KeyCode::Char('n') => self.find(false),
            KeyCode::Char('N') => self.find(true),
            _ => self.move_key(k),
        }
    }

    fn open_search(&mut self) {
        self.prompt = Some(Prompt {
            search: true,
            text: String::new(),
            error: None,
        });
    }

    fn start_overview(&mut self) {
        if self.overview.is_none() {
            self.overview = Some(scan::overview(Arc::clone(&self.src), None, None));
        }
    }

    /// Starts the statistics view's pass: the whole capture's overview, or with a
    /// display filter in force a pass over the messages it keeps (as `kwire stats -Y`).
    fn start_stats(&mut self) {
        let Some(text) = self.filter_text().map(str::to_string) else {
            self.start_overview();
            return;
        };
        if self
            .filtered_overview
            .as_ref()
            .is_some_and(|(t, _)| *t == text)
        {
            return;
        }
        // The filter in force parsed when it was set: it parses again.
        if let Ok(f) = Filter::parse_known(&text, &self.opts.known) {
            let scan = scan::overview(Arc::clone(&self.src), Some(f), self.filter_pass.as_ref());
            self.filtered_overview = Some((text, scan));
        }
    }

    /// The pass the statistics view shows, and the display filter it counts by.
    pub fn stats_overview(&self) -> (Option<&Arc<Scan<Overview>>>, Option<&str>) {
        match self.filter_text() {
            None => (self.overview.as_ref(), None),
            Some(text) => (
                self.filtered_overview
                    .as_ref()
                    .filter(|(t, _)| t == text)
                    .map(|(_, s)| s),
                Some(text),
            ),
        }
    }

    /// Keys in a prompt: typing, Backspace, Enter (apply), Esc (cancel).
    fn prompt_key(&mut self, k: KeyEvent) {
        let Some(p) = self.prompt.as_mut() else {
            return;
        };
        match k.code {
            KeyCode::Esc => self.prompt = None,
            KeyCode::Backspace => {
                p.text.pop();
                p.error = None;
            }
            KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => p.text.clear(),
            KeyCode::Char(c) => {
                p.text.push(c);
                p.error = None;
            }
            KeyCode::Enter => {
                let text = p.text.trim().to_string();
                if p.search {
                    match Pattern::parse(&text) {
                        Ok(pat) => {
                            self.search = Some((pat, self.focus));
                            self.prompt = None;
                            self.find(false);
                        }
                        Err(e) => p.error = Some(e),
                    }
                } else if text.is_empty() {
                    self.prompt = None;
                    self.before_conn = None;
                    self.apply_filter(None);
                } else {
                    match Filter::parse_known(&text, &self.opts.known) {
                        // Stdin and a live capture cannot be read twice.
                        Ok(f) if f.uses_unanswered() && self.opts.unanswered.is_none() => {
                            p.error = Some(UNANSWERED.into())
                        }
                        Ok(f) => {
                            self.prompt = None;
                            self.before_conn = None;
                            self.apply_filter(Some((text, f)));
                        }
                        // The old filter stays in force.
                        Err(e) => p.error = Some(e.to_string()),
                    }
                }
            }
            _ => {}
        }
    }

    /// Keys in the help, connections, statistics and notices views.
    fn view_key(&mut self, k: KeyEvent) {
        // `G` keeps the view at its last line as the view grows (the statistics and
        // connections as the pass counts, the TLS table once reading ends), as a
        // terminal follows its output; a key that moves elsewhere stops it.
        if matches!(
            k.code,
            KeyCode::Up
                | KeyCode::Char('k' | 'j' | 'g')
                | KeyCode::Down
                | KeyCode::PageUp
                | KeyCode::PageDown
                | KeyCode::Home
        ) {
            self.view_end = false;
        }
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') => self.screen = Screen::Main,
            KeyCode::Char('?') if self.screen == Screen::Help => self.screen = Screen::Main,
            KeyCode::Up | KeyCode::Char('k') => self.view_sel = self.view_sel.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.view_sel = self.view_sel.saturating_add(1),
            KeyCode::PageUp => self.view_sel = self.view_sel.saturating_sub(10),
            KeyCode::PageDown => self.view_sel = self.view_sel.saturating_add(10),
            KeyCode::Char('g') | KeyCode::Home => self.view_sel = 0,
            // The last line: the view keeps it in range as it draws.
            KeyCode::Char('G') | KeyCode::End => {
                self.view_sel = usize::MAX;
                self.view_end = true;
            }
            KeyCode::Enter if self.screen == Screen::Connections => {
                let conns = self.connections();
                if let Some(c) = conns.get(self.view_sel.min(conns.len().saturating_sub(1))) {
                    let text = conn_filter_text(c.connection, c.label.as_deref());
                    if let Ok(f) = Filter::parse_known(&text, &self.opts.known) {
                        self.before_conn = Some(self.filter_text().map(str::to_string));
                        self.apply_filter(Some((text, f)));
                    }
                }
                self.screen = Screen::Main;
            }
            _ => {}
        }
    }

    /// The connections view's lines, in connection order.
    pub fn connections(&self) -> Vec<ConnLine> {
        let Some(o) = &self.overview else {
            return Vec::new();
        };
        let o = o.found.lock().unwrap_or_else(|e| e.into_inner());
        o.stats
            .connections
            .iter()
            .map(|(&(cap, id), c)| ConnLine {
                capture: cap,
                connection: id,
                client: c.client.clone(),
                server: c.server.clone(),
                client_id: c.client_id.clone(),
                messages: c.messages,
                bytes: o.bytes.get(&(cap, id)).copied().unwrap_or(0),
                tls: self.src.tls_of(cap, id),
                label: c.capture.clone(),
            })
            .collect()
    }

    /// `f`: only the selected message's connection; again, the filter before.
    fn conn_filter(&mut self) {
        if let Some(before) = self.before_conn.take() {
            let f = before.and_then(|t| {
                Filter::parse_known(&t, &self.opts.known)
                    .ok()
                    .map(|f| (t, f))
            });
            self.apply_filter(f);
            self.notice = "back to the filter before `f`".into();
            return;
        }
        let Some(i) = self.view.as_ref().map(|v| v.0) else {
            return;
        };
        let Some(m) = self.src.meta(i) else {
            return;
        };
        // Connections are numbered in each capture: with several, the capture's name too.
        let mut label = None;
        self.src.with_message(i, Detail::Facts, &mut |_, ctx| {
            label.clone_from(&ctx.capture)
        });
        let text = conn_filter_text(m.connection, label.as_deref());
        if let Ok(f) = Filter::parse_known(&text, &self.opts.known) {
            self.before_conn = Some(self.filter_text().map(str::to_string));
            self.apply_filter(Some((text, f)));
        }
    }

    /// `p`: the pair of the selected message (same capture, connection and
    /// correlation_id, the other direction), after it for a request, before it for a
    /// response.
    fn pair(&mut self) {
        let Some(i) = self.view.as_ref().map(|v| v.0) else {
            return;
        };
        let Some(m) = self.src.meta(i) else { return };
        let Some(corr) = m.correlation_id else {
            self.notice = "no correlation_id: no pair".into();
            return;
        };
        let fits = |x: super::source::Meta| {
            x.capture == m.capture
                && x.connection == m.connection
                && x.correlation_id == Some(corr)
                && x.direction != m.direction
        };
        let n = self.src.count();
        let found = if let Some(j) = m.pair {
            Some(j)
        } else if m.direction == crate::tree::Direction::Request {
            (i + 1..n).find(|&j| self.src.meta(j).is_some_and(fits))
        } else {
            (0..i).rev().find(|&j| self.src.meta(j).is_some_and(fits))
        };
        match found {
            Some(j) => match self.position_of(j) {
                Some(k) => {
                    self.follow = false;
                    self.sel = k;
                    self.notice.clear();
                }
                None => self.notice = "its pair is not in the list (the filter hides it)".into(),
            },
            None => self.notice = "its pair is not in the capture".into(),
        }
    }

    /// The selected tree row, as a row number.
    pub fn tree_row(&self) -> Option<usize> {
        self.view
            .as_ref()
            .and_then(|(_, v)| v.visible.get(self.tree_sel).copied())
    }

    /// `c`: the selected node's bytes, as hex, to the clipboard (OSC 52) and the status
    /// bar.
    fn copy(&mut self) {
        let Some((_, v)) = &self.view else { return };
        let Some((buf, off, len)) = self.tree_row().and_then(|r| v.span(r)) else {
            return;
        };
        let b = v
            .buffers
            .get(buf as usize)
            .map_or(&[][..], |b| &b[off.min(b.len())..(off + len).min(b.len())]);
        let hex = crate::render::hex(b);
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(hex.as_bytes());
        let mut out = std::io::stdout();
        let _ = write!(out, "\x1b]52;c;{b64}\x07");
        let _ = out.flush();
        self.notice = format!("copied {len} bytes: {hex}");
    }

    /// `e`: the next message in the list with a decode error or a non-zero error code.
    fn next_error(&mut self) {
        let start = Instant::now();
        let mut k = self.sel + 1;
        while k < self.shown_len() {
            let Some(i) = self.shown_at(k) else { break };
            let mut hit = false;
            self.src
                .with_message(i, Detail::Full, &mut |m, _| hit = has_problem(m));
            if hit {
                self.follow = false;
                self.sel = k;
                self.notice.clear();
                return;
            }
            if start.elapsed() > SCAN_TIME {
                self.sel = k;
                self.notice = format!(
                    "no error in the {} messages looked at in {}s; e again goes on from here",
                    k - self.sel,
                    SCAN_TIME.as_secs()
                );
                return;
            }
            k += 1;
        }
        self.notice = "no later message with an error".into();
    }

    /// `n`/`N`: the next or previous match of the search in its pane.
    fn find(&mut self, back: bool) {
        let Some((pat, pane)) = self.search.clone() else {
            self.notice = "no search yet (Ctrl-F)".into();
            return;
        };
        match pane {
            Pane::List => {
                let start = Instant::now();
                let n = self.shown_len();
                let mut k = self.sel;
                loop {
                    if back {
                        if k == 0 {
                            break;
                        }
                        k -= 1;
                    } else {
                        k += 1;
                        if k >= n {
                            break;
                        }
                    }
                    let Some(i) = self.shown_at(k) else { break };
                    if pat.in_text(&self.line(i).text) {
                        self.follow = false;
                        self.sel = k;
                        self.notice.clear();
                        return;
                    }
                    if start.elapsed() > SCAN_TIME {
                        self.sel = k;
                        self.notice = "not found yet (searched 3s); n goes on from here".into();
                        return;
                    }
                }
                self.notice = "not found in the list".into();
            }
            Pane::Tree => {
                let Some((_, v)) = self.view.as_mut() else {
                    return;
                };
                let cur = v.visible.get(self.tree_sel).copied().unwrap_or(0);
                let hit = if back {
                    (0..cur).rev().find(|&r| pat.in_text(&v.rows[r].text))
                } else {
                    (cur + 1..v.rows.len()).find(|&r| pat.in_text(&v.rows[r].text))
                };
                match hit {
                    Some(r) => {
                        v.reveal(r);
                        if let Some(p) = v.visible.iter().position(|&x| x == r) {
                            self.tree_sel = p;
                        }
                        self.focus = Pane::Tree;
                        self.select_node_bytes();
                        self.notice.clear();
                    }
                    None => self.notice = "not found in the tree".into(),
                }
            }
            Pane::Bytes => {
                let Some((_, v)) = self.view.as_ref() else {
                    return;
                };
                let b = &v.buffers[self.buffer as usize];
                let from = if back {
                    self.cursor.saturating_sub(1)
                } else {
                    self.cursor + 1
                };
                let hit = if back && self.cursor == 0 {
                    None
                } else {
                    pat.in_bytes(b, from, back)
                };
                match hit {
                    Some(x) => {
                        self.cursor = x;
                        self.select_from_cursor();
                        self.notice.clear();
                    }
                    None => self.notice = "not found in the bytes".into(),
                }
            }
        }
    }

    /// After the tree selection moved: the bytes pane shows the node's buffer, with the
    /// cursor on its first byte.
    pub fn select_node_bytes(&mut self) {
        let Some((_, v)) = &self.view else { return };
        if let Some((buf, off, _)) = self.tree_row().and_then(|r| v.span(r)) {
            self.buffer = buf;
            self.cursor = off;
        }
    }

    /// After the byte cursor moved: the deepest node covering it is selected.
    pub fn select_from_cursor(&mut self) {
        let buffer = self.buffer;
        let cursor = self.cursor;
        let Some((_, v)) = self.view.as_mut() else {
            return;
        };
        if let Some(r) = v.node_at(buffer, cursor) {
            v.reveal(r);
            if let Some(p) = v.visible.iter().position(|&x| x == r) {
                self.tree_sel = p;
            }
        }
    }

    /// Page size of a pane (rows on screen, at least 1).
    fn page(&self, pane: Pane) -> usize {
        let a = match pane {
            Pane::List => self.areas.list,
            Pane::Tree => self.areas.tree,
            Pane::Bytes => self.areas.bytes,
        };
        usize::from(a.height).max(1)
    }

    /// Movement keys in the focused pane.
    fn move_key(&mut self, k: KeyEvent) {
        enum M {
            Up(usize),
            Down(usize),
            First,
            Last,
            Left,
            Right,
            Toggle,
        }
        let page = self.page(self.focus);
        let m = match k.code {
            KeyCode::Up | KeyCode::Char('k') => M::Up(1),
            KeyCode::Down | KeyCode::Char('j') => M::Down(1),
            KeyCode::PageUp => M::Up(page),
            KeyCode::PageDown => M::Down(page),
            KeyCode::Char('g') | KeyCode::Home => M::First,
            KeyCode::Char('G') | KeyCode::End => M::Last,
            KeyCode::Left | KeyCode::Char('h') => M::Left,
            KeyCode::Right | KeyCode::Char('l') => M::Right,
            KeyCode::Enter | KeyCode::Char(' ') => M::Toggle,
            _ => return,
        };
        match self.focus {
            Pane::List => {
                let n = self.shown_len();
                match m {
                    M::Up(d) => {
                        self.follow = false;
                        self.sel = self.sel.saturating_sub(d)
                    }
                    M::Down(d) => self.sel = (self.sel + d).min(n.saturating_sub(1)),
                    M::First => {
                        self.follow = false;
                        self.sel = 0
                    }
                    M::Last => {
                        self.follow = true;
                        self.sel = n.saturating_sub(1)
                    }
                    M::Toggle => self.focus = Pane::Tree,
                    M::Left | M::Right => {}
                }
            }
            Pane::Tree => {
                let Some((_, v)) = self.view.as_mut() else {
                    return;
                };
                let n = v.visible.len();
                let row = v.visible.get(self.tree_sel).copied();
                match m {
                    M::Up(d) => self.tree_sel = self.tree_sel.saturating_sub(d),
                    M::Down(d) => self.tree_sel = (self.tree_sel + d).min(n.saturating_sub(1)),
                    M::First => self.tree_sel = 0,
                    M::Last => self.tree_sel = n.saturating_sub(1),
                    M::Toggle | M::Left | M::Right => {
                        let Some(r) = row else { return };
                        let folds = v.rows[r].folds(r);
                        let mut target = r;
                        match m {
                            M::Toggle if folds => v.folded[r] = !v.folded[r],
                            M::Left if folds && !v.folded[r] => v.folded[r] = true,
                            M::Left => target = v.rows[r].parent.unwrap_or(r),
                            M::Right if folds => v.folded[r] = false,
                            _ => {}
                        }
                        v.refresh();
                        if let Some(x) = v.visible.iter().position(|&x| x == target) {
                            self.tree_sel = x;
                        }
                    }
                }
                self.select_node_bytes();
            }
            Pane::Bytes => {
                let Some((_, v)) = self.view.as_ref() else {
                    return;
                };
                let len = v.buffers[self.buffer as usize].len();
                if len == 0 {
                    return;
                }
                match m {
                    M::Up(d) => self.cursor = self.cursor.saturating_sub(16 * d),
                    M::Down(d) => self.cursor = (self.cursor + 16 * d).min(len - 1),
                    M::First => self.cursor = 0,
                    M::Last => self.cursor = len - 1,
                    M::Left => self.cursor = self.cursor.saturating_sub(1),
                    M::Right | M::Toggle => self.cursor = (self.cursor + 1).min(len - 1),
                }
                self.select_from_cursor();
            }
        }
    }

    /// The mouse: a click selects (and focuses) what is under it; the wheel scrolls.
    fn mouse(&mut self, m: event::MouseEvent) {
        if self.screen != Screen::Main || self.prompt.is_some() {
            return;
        }
        let inside = |a: Rect| {
            m.column >= a.x && m.column < a.x + a.width && m.row >= a.y && m.row < a.y + a.height
        };
        let pane = if inside(self.areas.list) {
            Pane::List
        } else if inside(self.areas.tree) {
            Pane::Tree
        } else if inside(self.areas.bytes) {
            Pane::Bytes
        } else {
            return;
        };
        match m.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                self.focus = pane;
                let code = if m.kind == MouseEventKind::ScrollUp {
                    KeyCode::Up
                } else {
                    KeyCode::Down
                };
                for _ in 0..3 {
                    self.move_key(KeyEvent::new(code, KeyModifiers::NONE));
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = pane;
                match pane {
                    Pane::List => {
                        let k = self.top + usize::from(m.row - self.areas.list.y);
                        if k < self.shown_len() {
                            self.follow = false;
                            self.sel = k;
                        }
                    }
                    Pane::Tree => {
                        let k = self.tree_top + usize::from(m.row - self.areas.tree.y);
                        if self.view.as_ref().is_some_and(|(_, v)| k < v.visible.len()) {
                            if self.tree_sel == k {
                                self.move_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
                            }
                            self.tree_sel = k;
                            self.select_node_bytes();
                        }
                    }
                    Pane::Bytes => {
                        let row = self.bytes_top + usize::from(m.row - self.areas.bytes.y);
                        if let Some(col) = super::ui::byte_at_column(
                            self,
                            usize::from(m.column - self.areas.bytes.x),
                        ) {
                            let at = row * 16 + col;
                            let len = self
                                .view
                                .as_ref()
                                .map_or(0, |(_, v)| v.buffers[self.buffer as usize].len());
                            if at < len {
                                self.cursor = at;
                                self.select_from_cursor();
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The node span of the selected tree row.
    pub fn selected_span(&self) -> Option<(u32, usize, usize)> {
        let (_, v) = self.view.as_ref()?;
        v.span(self.tree_row()?)
    }

    /// Whether row `r` of the tree is an error line or an error node.
    pub fn row_is_error(&self, r: usize) -> bool {
        self.view
            .as_ref()
            .is_some_and(|(_, v)| v.rows[r].error || v.rows[r].kind == RowKind::Error)
    }
}

/// The filter of one connection: `connection == N`, and `&& capture == "NAME"` when
/// several captures are read (connection ids restart in each).
fn conn_filter_text(connection: u32, capture: Option<&str>) -> String {
    match capture {
        Some(c) => format!(
            "connection == {connection} && capture == {}",
            crate::filter::quote(c)
        ),
        None => format!("connection == {connection}"),
    }
}

/// One line of the connections view.
#[derive(Clone, Debug)]
pub struct ConnLine {
    /// The capture (0-based).
    pub capture: u32,
    /// The connection's number.
    pub connection: u32,
    /// Client endpoint.
    pub client: String,
    /// Server endpoint.
    pub server: String,
    /// The client_id of its requests.
    pub client_id: Option<String>,
    /// Messages.
    pub messages: u64,
    /// Frame bytes.
    pub bytes: u64,
    /// The TLS session, when decrypted.
    pub tls: Option<String>,
    /// The capture's name, when several are read (see [`crate::run::capture_labels`]).
    pub label: Option<Arc<str>>,
}

/// A decode error anywhere in the tree, or a non-zero error code.
pub fn has_problem(m: &crate::tree::Message<'_>) -> bool {
    if m.error_count() > 0 {
        return true;
    }
    let mut code = false;
    m.tree.walk(&mut |n, _| {
        code |= crate::traffic::error_code(n).is_some();
    });
    code
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn a_stats_key_tells_a_new_pass_from_an_old_one() {
        use super::{Overview, Scan, StatsKey};
        use std::sync::Arc;
        let key = |s: &Arc<Scan<Overview>>| StatsKey {
            scan: Arc::downgrade(s),
            scanned: 0,
            done: true,
            tls: (0, 0),
        };
        let old = Scan::finished(Overview::default());
        let kept = key(&old);
        assert!(kept.same(&key(&old)));
        // A filter entered anew drops the old pass and starts another, which the
        // allocator may place where the old one was (the key by address took it for
        // the old one, and the view showed the old filter's statistics): the key's
        // weak reference keeps the old allocation, so no new pass is the same.
        drop(old);
        for _ in 0..1000 {
            let new = Scan::finished(Overview::default());
            assert!(!kept.same(&key(&new)));
        }
    }

    #[test]
    fn patterns() {
        let t = Pattern::parse("Fetch").unwrap();
        assert!(t.in_text("a fetch v12 request"));
        assert!(!t.in_text("Produce"));
        assert_eq!(t.in_bytes(b"xxFETCHyy", 0, false), Some(2));
        let h = Pattern::parse("hex:00 0c").unwrap();
        assert_eq!(h.in_bytes(&[1, 0, 0x0c, 0, 0x0c], 0, false), Some(1));
        assert_eq!(h.in_bytes(&[1, 0, 0x0c, 0, 0x0c], 2, false), Some(3));
        assert_eq!(h.in_bytes(&[1, 0, 0x0c, 0, 0x0c], 2, true), Some(1));
        assert_eq!(h.in_bytes(&[1, 0], 0, false), None);
        let r = Pattern::parse("re:corr=[0-9]+$").unwrap();
        assert!(r.in_text("Produce v9 request corr=7"));
        assert!(!r.in_text("corr=x"));
        assert!(Pattern::parse("hex:0").is_err());
        assert!(Pattern::parse("hex:zz").is_err());
        assert!(Pattern::parse("re:(").is_err());
        assert!(Pattern::parse("").is_err());
    }
}
