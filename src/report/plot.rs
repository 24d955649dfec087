//! Plots as inline SVG for `kwire report`: axes with tick labels and a label naming the
//! unit, line series, dashed series, points (each with a tooltip), categorical rows (the
//! consumer-group timeline) and horizontal box plots (latency per API).
//!
//! Why a writer of its own and not `plotters`: `plotters` 0.3.7 with
//! `default-features = false, features = ["svg_backend", "line_series", "point_series"]`
//! (no `ttf`, so no font files) draws the caption but neither tick labels nor axis
//! descriptions (a trial on 2026-12-02: one `<text>` element in a chart with
//! `x_desc`/`y_desc` and a mesh), and writes 26 kB of grid lines for a 600x300 chart.
//! Labels are what a report needs; here they are `<text>` elements laid out by the
//! browser, coloured with `currentColor` so that the page's dark mode and print styles
//! apply, and a chart of a few hundred points stays a few kB.
//!
//! Coordinates are in SVG user units of a [`WIDTH`] x [`HEIGHT`] viewBox; the page scales
//! the SVG to its column (readable from 1000 px on).

use std::fmt::Write as _;

use crate::page::html::esc;

/// ViewBox width.
pub const WIDTH: f64 = 1000.0;
/// ViewBox height of a chart (a box plot or timeline grows with its rows).
pub const HEIGHT: f64 = 320.0;
const LEFT_DEFAULT: f64 = 78.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 48.0;

/// The left margin of charts with named rows (box plots, the group timeline).
pub const BOX_LEFT: f64 = 230.0;

/// Colours of series, in order (readable on white and on the dark background).
pub const PALETTE: [&str; 10] = [
    "#1c7ed6", "#e8590c", "#2f9e44", "#c2255c", "#7048e8", "#f08c00", "#0c8599", "#868e96",
    "#a61e4d", "#5c940d",
];

/// How an axis labels its ticks.
#[derive(Clone, Debug)]
pub enum Ticks {
    /// Numbers (`0`, `2.5`, `1k`), linear.
    Linear,
    /// Powers of ten, logarithmic (values must be > 0).
    Log,
    /// Time: values are seconds since `origin` (seconds since the epoch); labels as
    /// `-t` asks ([`TimeAxis`]).
    Time(TimeAxis),
    /// Named rows at 0, 1, 2, ... (top to bottom).
    Categories(Vec<String>),
}

/// How time tick labels read (`kwire report -t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TimeLabels {
    /// Seconds since the first message (`r`).
    #[default]
    Relative,
    /// UTC clock time (`u`).
    Utc,
    /// Local clock time (`a`).
    Local,
}

/// A time axis: what x = 0 is and how labels read.
#[derive(Clone, Copy, Debug)]
pub struct TimeAxis {
    /// Seconds since the epoch of x = 0 (the first message).
    pub origin: f64,
    /// Label style.
    pub labels: TimeLabels,
}

impl TimeAxis {
    /// The label of `x` seconds after the origin, at a tick step of `step` seconds.
    pub fn label(&self, x: f64, step: f64) -> String {
        let abs = self.origin + x;
        let secs = abs.floor() as i64;
        let nanos = ((abs - abs.floor()) * 1e9)
            .round()
            .clamp(0.0, 999_999_999.0) as u32;
        let frac = step < 1.0;
        let fmt = if frac { "%H:%M:%S%.3f" } else { "%H:%M:%S" };
        match self.labels {
            TimeLabels::Relative => format!("{} s", num(x)),
            TimeLabels::Utc => chrono::DateTime::from_timestamp(secs, nanos)
                .map(|t| t.format(fmt).to_string())
                .unwrap_or_default(),
            TimeLabels::Local => chrono::DateTime::from_timestamp(secs, nanos)
                .map(|t| t.with_timezone(&chrono::Local).format(fmt).to_string())
                .unwrap_or_default(),
        }
    }

    /// The axis label: what time is counted in.
    pub fn axis_label(&self) -> String {
        match self.labels {
            TimeLabels::Relative => "time since the first message (s)".into(),
            TimeLabels::Utc => {
                let d = chrono::DateTime::from_timestamp(self.origin as i64, 0)
                    .map(|t| t.format("%Y-%m-%d").to_string())
                    .unwrap_or_default();
                format!("time (UTC, {d})")
            }
            TimeLabels::Local => {
                let d = chrono::DateTime::from_timestamp(self.origin as i64, 0)
                    .map(|t| {
                        t.with_timezone(&chrono::Local)
                            .format("%Y-%m-%d %:z")
                            .to_string()
                    })
                    .unwrap_or_default();
                format!("time (local, {d})")
            }
        }
    }
}

/// One axis: its label (with the unit), range and ticks.
#[derive(Clone, Debug)]
pub struct Axis {
    /// The label, with the unit: `messages per second`, `latency (ms)`.
    pub label: String,
    /// Lowest value shown.
    pub min: f64,
    /// Highest value shown.
    pub max: f64,
    /// How ticks are placed and labelled.
    pub ticks: Ticks,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A line through the points.
    Line,
    /// A dashed line.
    Dashed,
    /// Points only.
    Points,
}

/// One named series.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// `(x, y)` in axis units, x increasing for lines.
    pub points: Vec<(f64, f64)>,
    /// Line, dashed or points.
    pub style: Style,
    /// Index into [`PALETTE`] (modulo its length).
    pub color: usize,
}

/// A single point with a tooltip and, optionally, a link (a slow response, a group event).
#[derive(Clone, Debug)]
pub struct Mark {
    /// Position in axis units.
    pub x: f64,
    /// Position in axis units.
    pub y: f64,
    /// Index into [`PALETTE`].
    pub color: usize,
    /// The tooltip (`<title>`).
    pub title: String,
    /// A link target inside the report (`#msg-0-12`).
    pub href: Option<String>,
}

/// A chart: axes, series, marks.
#[derive(Clone, Debug)]
pub struct Chart {
    /// The SVG's accessible name (`aria-label`) and the figure's heading.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// Series, drawn in order.
    pub series: Vec<Series>,
    /// Points drawn over the series.
    pub marks: Vec<Mark>,
    /// Legend entries for the marks: `(colour index, text)`.
    pub mark_legend: Vec<(usize, String)>,
    /// The left margin (room for the vertical axis's tick labels); 0: the default.
    pub left: f64,
}

/// `v` as a short number: `0`, `12`, `2.5`, `0.125`, `1.5k`, `3M`.
pub fn num(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 1e9 {
        format!("{:.3}", v / 1e9)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
            + "G"
    } else if a >= 1e6 {
        format!("{:.3}", v / 1e6)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
            + "M"
    } else if a >= 1e4 {
        format!("{:.2}", v / 1e3)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
            + "k"
    } else if a >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A "nice" step (1, 2 or 5 times a power of ten) for about `n` ticks over `range`.
fn nice_step(range: f64, n: f64) -> f64 {
    if !(range.is_finite() && range > 0.0) {
        return 1.0;
    }
    let raw = range / n;
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let f = if m < 1.5 {
        1.0
    } else if m < 3.5 {
        2.0
    } else if m < 7.5 {
        5.0
    } else {
        10.0
    };
    f * p
}

/// Tick positions and labels of an axis.
fn ticks(a: &Axis, n: f64) -> Vec<(f64, String)> {
    match &a.ticks {
        Ticks::Categories(c) => c
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, s.clone()))
            .collect(),
        Ticks::Log => {
            let (lo, hi) = (
                a.min.max(1e-12).log10().floor(),
                a.max.max(1e-12).log10().ceil(),
            );
            let mut v = Vec::new();
            let mut e = lo;
            while e <= hi && v.len() < 40 {
                let t = 10f64.powf(e);
                if t >= a.min * 0.999 && t <= a.max * 1.001 {
                    v.push((t, num(t)));
                }
                e += 1.0;
            }
            v
        }
        Ticks::Linear | Ticks::Time(_) => {
            let step = nice_step(a.max - a.min, n);
            // Clock labels fall on round clock times: align to the epoch.
            let shift = match &a.ticks {
                Ticks::Time(t) if t.labels != TimeLabels::Relative => t.origin.rem_euclid(step),
                _ => 0.0,
            };
            let mut v = Vec::new();
            let mut k = ((a.min + shift) / step).ceil();
            while v.len() < 60 {
                let t = k * step - shift;
                if t > a.max + step * 1e-9 {
                    break;
                }
                let label = match &a.ticks {
                    Ticks::Time(ta) => ta.label(t, step),
                    _ => num(t),
                };
                v.push((t, label));
                k += 1.0;
            }
            v
        }
    }
}

/// Maps a value of axis `a` to `[0, 1]`.
fn unit(a: &Axis, v: f64) -> f64 {
    let (lo, hi, v) = match a.ticks {
        Ticks::Log => (
            a.min.max(1e-12).log10(),
            a.max.max(1e-12).log10(),
            v.max(1e-12).log10(),
        ),
        Ticks::Categories(ref c) => (-0.5, c.len() as f64 - 0.5, v),
        _ => (a.min, a.max, v),
    };
    if hi > lo {
        ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
    } else {
        0.5
    }
}

/// The SVG of `c`, `height` user units tall.
pub fn svg(c: &Chart, height: f64) -> String {
    #[allow(non_snake_case)]
    let LEFT = if c.left > 0.0 { c.left } else { LEFT_DEFAULT };
    let (pw, ph) = (WIDTH - LEFT - RIGHT, height - TOP - BOTTOM);
    let px = |v: f64| LEFT + unit(&c.x, v) * pw;
    let py = |v: f64| match c.y.ticks {
        // Categories top to bottom.
        Ticks::Categories(_) => TOP + unit(&c.y, v) * ph,
        _ => TOP + (1.0 - unit(&c.y, v)) * ph,
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"plot\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(&c.title)
    );
    // Grid and tick labels.
    let _ = write!(s, "<g class=\"grid\">");
    for (t, label) in ticks(&c.y, ph / 45.0) {
        let y = py(t);
        let _ = write!(
            s,
            "<line x1=\"{LEFT:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>",
            LEFT + pw
        );
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            y + 4.0,
            esc(&label)
        );
    }
    for (t, label) in ticks(&c.x, 7.0) {
        let x = px(t);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP:.1}\" y2=\"{:.1}\"/>",
            TOP + ph
        );
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            TOP + ph + 16.0,
            esc(&label)
        );
    }
    let _ = write!(s, "</g>");
    // Axes and their labels.
    let _ = write!(
        s,
        "<path class=\"axis\" d=\"M{LEFT:.1} {TOP:.1}V{:.1}H{:.1}\"/>",
        TOP + ph,
        LEFT + pw
    );
    let _ = write!(
        s,
        "<text class=\"axis-label x\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        LEFT + pw / 2.0,
        height - 8.0,
        esc(&c.x.label)
    );
    let _ = write!(
        s,
        "<text class=\"axis-label y\" transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        TOP + ph / 2.0,
        esc(&c.y.label)
    );
    // Series.
    for se in &c.series {
        let col = PALETTE[se.color % PALETTE.len()];
        match se.style {
            Style::Line | Style::Dashed => {
                // A NaN y is a gap: the line stops and starts again after it; a point
                // with gaps on both sides is drawn as a dot.
                let mut d = String::new();
                let mut dots = String::new();
                let p = &se.points;
                let mut prev_gap = true;
                for (i, (x, y)) in p.iter().enumerate() {
                    if y.is_nan() {
                        prev_gap = true;
                        continue;
                    }
                    let next_gap = p.get(i + 1).is_none_or(|q| q.1.is_nan());
                    if prev_gap && next_gap {
                        let _ = write!(
                            dots,
                            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{col}\"/>",
                            px(*x),
                            py(*y)
                        );
                    }
                    let _ = write!(
                        d,
                        "{}{:.1} {:.1}",
                        if prev_gap { "M" } else { "L" },
                        px(*x),
                        py(*y)
                    );
                    prev_gap = false;
                }
                let dash = if se.style == Style::Dashed {
                    " stroke-dasharray=\"6 4\""
                } else {
                    ""
                };
                let _ = write!(
                    s,
                    "<path class=\"series\" d=\"{d}\" stroke=\"{col}\"{dash}><title>{}</title></path>{dots}",
                    esc(&se.name)
                );
            }
            Style::Points => {
                let _ = write!(s, "<g fill=\"{col}\"><title>{}</title>", esc(&se.name));
                for (x, y) in &se.points {
                    let _ = write!(
                        s,
                        "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\"/>",
                        px(*x),
                        py(*y)
                    );
                }
                let _ = write!(s, "</g>");
            }
        }
    }
    for m in &c.marks {
        let col = PALETTE[m.color % PALETTE.len()];
        let dot = format!(
            "<circle class=\"mark\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{col}\"><title>{}</title></circle>",
            px(m.x),
            py(m.y),
            esc(&m.title)
        );
        match &m.href {
            Some(h) => {
                let _ = write!(s, "<a href=\"{}\">{dot}</a>", esc(h));
            }
            None => s.push_str(&dot),
        }
    }
    // Legend, right of the plot.
    let mut ly = TOP + 8.0;
    let lx = LEFT + pw + 14.0;
    let entries = c
        .series
        .iter()
        .map(|se| (se.color, se.style, se.name.as_str()))
        .chain(
            c.mark_legend
                .iter()
                .map(|(k, n)| (*k, Style::Points, n.as_str())),
        );
    for (k, style, name) in entries {
        if ly > height - 10.0 {
            break;
        }
        let col = PALETTE[k % PALETTE.len()];
        match style {
            Style::Points => {
                let _ = write!(
                    s,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{col}\"/>",
                    lx + 9.0,
                    ly - 4.0
                );
            }
            _ => {
                let dash = if style == Style::Dashed {
                    " stroke-dasharray=\"5 3\""
                } else {
                    ""
                };
                let _ = write!(
                    s,
                    "<line class=\"series\" x1=\"{lx:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{col}\"{dash}/>",
                    lx + 18.0,
                    ly - 4.0,
                    ly - 4.0
                );
            }
        }
        let mut short: String = name.chars().take(21).collect();
        if short.len() < name.len() {
            short.push('\u{2026}');
        }
        let _ = write!(
            s,
            "<text class=\"legend-text\" x=\"{:.1}\" y=\"{ly:.1}\">{}</text>",
            lx + 24.0,
            esc(&short)
        );
        ly += 17.0;
    }
    s.push_str("</svg>");
    s
}

/// One row of a box plot: a name and its five values (min, p25, p50, p75, p99) and max.
#[derive(Clone, Debug)]
pub struct BoxRow {
    /// The row's name (an API).
    pub name: String,
    /// min, p25, p50, p75, p90, p99, max, in axis units.
    pub q: [f64; 7],
    /// How many values (for the tooltip).
    pub n: u64,
}

/// Horizontal box plots on a shared (log) axis: whiskers from min to p99, a box from p25
/// to p75 with the median, a tick at p90 and a dot at max.
pub fn boxes(title: &str, x_label: &str, rows: &[BoxRow]) -> String {
    let (lo, hi) = rows.iter().fold((f64::MAX, f64::MIN), |(lo, hi), r| {
        (lo.min(r.q[0]), hi.max(r.q[6]))
    });
    let (lo, hi) = if rows.is_empty() {
        (0.01, 1.0)
    } else {
        (
            10f64.powf(lo.max(1e-4).log10().floor()),
            10f64.powf(hi.max(1e-3).log10().ceil()),
        )
    };
    let x = Axis {
        label: x_label.to_string(),
        min: lo,
        max: if hi > lo { hi } else { lo * 10.0 },
        ticks: Ticks::Log,
    };
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let y = Axis {
        label: "API".into(),
        min: 0.0,
        max: rows.len() as f64,
        ticks: Ticks::Categories(names),
    };
    let height = (rows.len() as f64 * 26.0 + TOP + BOTTOM).max(140.0);
    let chart = Chart {
        title: title.to_string(),
        x: x.clone(),
        y: y.clone(),
        series: Vec::new(),
        marks: Vec::new(),
        mark_legend: Vec::new(),
        left: BOX_LEFT,
    };
    let mut s = svg(&chart, height);
    s.truncate(s.len() - "</svg>".len());
    let pw = WIDTH - BOX_LEFT - RIGHT;
    let ph = height - TOP - BOTTOM;
    let px = |v: f64| BOX_LEFT + unit(&x, v) * pw;
    for (i, r) in rows.iter().enumerate() {
        let cy = TOP + unit(&y, i as f64) * ph;
        let col = PALETTE[i % PALETTE.len()];
        let [min, p25, p50, p75, p90, p99, max] = r.q;
        let _ = write!(
            s,
            "<g class=\"box\"><title>{}: {}; min {} ms, p25 {} ms, median {} ms, p75 {} ms, p90 {} ms, p99 {} ms, max {} ms</title>",
            esc(&r.name),
            crate::text::count(r.n, "response", "responses"),
            num(min),
            num(p25),
            num(p50),
            num(p75),
            num(p90),
            num(p99),
            num(max)
        );
        let _ = write!(
            s,
            "<line class=\"whisker\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{cy:.1}\" y2=\"{cy:.1}\"/>",
            px(min),
            px(p99)
        );
        let (x0, x1) = (px(p25), px(p75).max(px(p25) + 1.5));
        let _ = write!(
            s,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"14\" fill=\"{col}\" fill-opacity=\"0.35\" stroke=\"{col}\"/>",
            cy - 7.0,
            x1 - x0
        );
        let _ = write!(
            s,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"{col}\" stroke-width=\"2.5\"/>",
            px(p50),
            cy - 8.0,
            cy + 8.0
        );
        let _ = write!(
            s,
            "<line class=\"whisker\" x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\"/>",
            px(p90),
            cy - 4.0,
            cy + 4.0
        );
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{cy:.1}\" r=\"3\" fill=\"{col}\"/></g>",
            px(max)
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_and_numbers() {
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(1.0, 4.0), 0.2);
        assert_eq!(num(1500.0), "1500");
        assert_eq!(num(15000.0), "15k");
        assert_eq!(num(0.125), "0.125");
        assert_eq!(num(2.5), "2.5");
    }

    #[test]
    fn a_chart_has_labelled_axes_and_ticks() {
        let c = Chart {
            title: "t".into(),
            x: Axis {
                label: "time since the first message (s)".into(),
                min: 0.0,
                max: 10.0,
                ticks: Ticks::Time(TimeAxis {
                    origin: 1_700_000_000.0,
                    labels: TimeLabels::Relative,
                }),
            },
            y: Axis {
                label: "latency (ms)".into(),
                min: 0.01,
                max: 100.0,
                ticks: Ticks::Log,
            },
            series: vec![Series {
                name: "Fetch <p99>".into(),
                points: vec![(0.0, 1.0), (5.0, 10.0)],
                style: Style::Line,
                color: 0,
            }],
            marks: Vec::new(),
            mark_legend: Vec::new(),
            left: 0.0,
        };
        let s = svg(&c, HEIGHT);
        assert!(s.contains(">latency (ms)</text>"), "{s}");
        assert!(s.contains(">time since the first message (s)</text>"));
        assert!(
            s.contains(">10 s</text>") && s.contains(">0.1</text>"),
            "{s}"
        );
        assert!(s.contains("Fetch &lt;p99&gt;"), "names are escaped");
        let utc = TimeAxis {
            origin: 1_700_000_000.0,
            labels: TimeLabels::Utc,
        };
        assert_eq!(utc.label(0.0, 1.0), "22:13:20");
    }
}
