//! Capture times as tshark's `-t` prints them.
//!
//! | format | prints | example |
//! |---|---|---|
//! | `a` | local time of day | `12:00:00.002000000` |
//! | `ad` | local date and time | `2024-05-01 12:00:00.002000000` |
//! | `adoy` | local year/day-of-year and time | `2024/122 12:00:00.002000000` |
//! | `d` | seconds since the previous message read | `0.000120000` |
//! | `dd` | seconds since the previous message shown | `0.000120000` |
//! | `e` | seconds since the Unix epoch | `1714557600.002000000` |
//! | `r` | seconds since the first message read | `0.002000000` |
//! | `u` | UTC time of day | `10:00:00.002000000` |
//! | `ud` | UTC date and time, RFC 3339 (kwire's own form) | `2024-05-01T10:00:00.002000000Z` |
//! | `udoy` | UTC year/day-of-year and time | `2024/122 10:00:00.002000000` |

use chrono::{DateTime, Local, TimeZone, Utc};

/// A `-t` format (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TimeFormat {
    /// `a`
    Local,
    /// `ad`
    LocalDate,
    /// `adoy`
    LocalDoy,
    /// `d`
    Delta,
    /// `dd`
    DeltaShown,
    /// `e`
    Epoch,
    /// `r`
    Relative,
    /// `u`
    Utc,
    /// `ud` (RFC 3339; what every printer used before `-t`)
    #[default]
    UtcDate,
    /// `udoy`
    UtcDoy,
}

/// The times the relative formats count from: seconds and nanoseconds since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TimeRefs {
    /// The first message read (`r`).
    pub first: Option<(i64, u32)>,
    /// The message read before this one (`d`).
    pub previous: Option<(i64, u32)>,
    /// The message shown before this one (`dd`).
    pub previous_shown: Option<(i64, u32)>,
}

/// The render options for a message with capture context `ctx`: with `-t r`, `-t d` or
/// `-t dd`, a copy whose time references are the first message read and the previous one
/// read (from `ctx`, set in capture order by the reader) and the previous one shown
/// (`previous_shown`, known only on the reading thread); `opts` itself otherwise.
pub fn with_times<'o>(
    opts: &'o super::RenderOptions,
    ctx: &crate::session::Context,
    previous_shown: Option<(i64, u32)>,
) -> std::borrow::Cow<'o, super::RenderOptions> {
    use std::borrow::Cow;
    match opts.time {
        TimeFormat::Relative | TimeFormat::Delta | TimeFormat::DeltaShown => {
            let mut o = opts.clone();
            o.time_refs.first = ctx.first_time;
            o.time_refs.previous = ctx.previous_time;
            o.time_refs.previous_shown = previous_shown;
            Cow::Owned(o)
        }
        _ => Cow::Borrowed(opts),
    }
}

/// `t - base` in seconds with nine decimals, signed.
fn seconds_since(t: (i64, u32), base: Option<(i64, u32)>) -> String {
    let b = base.unwrap_or(t);
    let n = (i128::from(t.0) * 1_000_000_000 + i128::from(t.1))
        - (i128::from(b.0) * 1_000_000_000 + i128::from(b.1));
    let mut s = String::with_capacity(24);
    if n < 0 {
        s.push('-');
    }
    // Written digit by digit (one line a message prints this): 64-bit division when the
    // span fits, as it always does in a capture.
    let n = n.unsigned_abs();
    let (secs, frac) = match u64::try_from(n) {
        Ok(n) => (u128::from(n / 1_000_000_000), (n % 1_000_000_000) as u32),
        Err(_) => (n / 1_000_000_000, (n % 1_000_000_000) as u32),
    };
    s.push_str(itoa::Buffer::new().format(secs));
    s.push('.');
    let mut digits = [b'0'; 9];
    let mut f = frac;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (f % 10) as u8;
        f /= 10;
    }
    s.push_str(std::str::from_utf8(&digits).unwrap_or("000000000"));
    s
}

fn fmt_tz<Tz: TimeZone>(d: &DateTime<Tz>, pattern: &str, nanos: u32) -> String
where
    Tz::Offset: std::fmt::Display,
{
    format!("{}.{:09}", d.format(pattern), nanos.min(999_999_999))
}

/// The text of capture time `t` (seconds, nanoseconds since the epoch) in `format`.
pub fn time_text(t: (i64, u32), format: TimeFormat, refs: &TimeRefs) -> String {
    let nanos = t.1.min(999_999_999);
    let utc = || Utc.timestamp_opt(t.0, nanos).single();
    let local = || Local.timestamp_opt(t.0, nanos).single();
    let fallback = || super::rfc3339(t.0, t.1);
    match format {
        TimeFormat::UtcDate => super::rfc3339(t.0, t.1),
        TimeFormat::Epoch => seconds_since(t, Some((0, 0))),
        TimeFormat::Relative => seconds_since(t, refs.first),
        TimeFormat::Delta => seconds_since(t, refs.previous),
        TimeFormat::DeltaShown => seconds_since(t, refs.previous_shown),
        TimeFormat::Utc => utc().map_or_else(fallback, |d| fmt_tz(&d, "%H:%M:%S", nanos)),
        TimeFormat::UtcDoy => utc().map_or_else(fallback, |d| fmt_tz(&d, "%Y/%j %H:%M:%S", nanos)),
        TimeFormat::Local => local().map_or_else(fallback, |d| fmt_tz(&d, "%H:%M:%S", nanos)),
        TimeFormat::LocalDate => {
            local().map_or_else(fallback, |d| fmt_tz(&d, "%Y-%m-%d %H:%M:%S", nanos))
        }
        TimeFormat::LocalDoy => {
            local().map_or_else(fallback, |d| fmt_tz(&d, "%Y/%j %H:%M:%S", nanos))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seconds written digit by digit read as `format!("{sign}{}.{:09}")` does, across
    /// signs, small and extreme spans.
    #[test]
    fn seconds_since_as_format() {
        let samples = [
            (0, 0),
            (0, 1),
            (1, 999_999_999),
            (-1, 5),
            (1_714_557_600, 2_000_000),
            (i64::MAX, 999_999_999),
            (i64::MIN, 0),
            (-20_000_000_000, 123),
        ];
        for t in samples {
            for b in samples {
                let n = (i128::from(t.0) * 1_000_000_000 + i128::from(t.1))
                    - (i128::from(b.0) * 1_000_000_000 + i128::from(b.1));
                let sign = if n < 0 { "-" } else { "" };
                let m = n.unsigned_abs();
                let want = format!("{sign}{}.{:09}", m / 1_000_000_000, m % 1_000_000_000);
                assert_eq!(seconds_since(t, Some(b)), want, "{t:?} since {b:?}");
            }
        }
    }

    #[test]
    fn time_formats_as_tshark() {
        let t = (1_714_557_600, 2_000_000); // 2024-05-01T10:00:00.002Z
        let refs = TimeRefs {
            first: Some((1_714_557_600, 0)),
            previous: Some((1_714_557_600, 1_880_000)),
            previous_shown: Some((1_714_557_599, 500_000_000)),
        };
        let f = |x| time_text(t, x, &refs);
        assert_eq!(f(TimeFormat::UtcDate), "2024-05-01T10:00:00.002000000Z");
        assert_eq!(f(TimeFormat::Utc), "10:00:00.002000000");
        assert_eq!(f(TimeFormat::UtcDoy), "2024/122 10:00:00.002000000");
        assert_eq!(f(TimeFormat::Epoch), "1714557600.002000000");
        assert_eq!(f(TimeFormat::Relative), "0.002000000");
        assert_eq!(f(TimeFormat::Delta), "0.000120000");
        assert_eq!(f(TimeFormat::DeltaShown), "0.502000000");
        let back = time_text((1_714_557_599, 0), TimeFormat::Relative, &refs);
        assert_eq!(back, "-1.000000000");
        // no reference yet: the message is its own
        assert_eq!(
            time_text(t, TimeFormat::Relative, &TimeRefs::default()),
            "0.000000000"
        );
    }
}
