//! Record timestamps as RFC 3339 text, written digit by digit (one per record).

use super::*;

/// `v` as `width` zero-padded decimal digits (`v` in `0..10^width`).
pub(super) fn push_padded(s: &mut [u8; 24], at: &mut usize, v: i64, width: u32) {
    let mut div = 10i64.pow(width - 1);
    while div > 0 {
        s[*at] = b'0' + (v / div % 10) as u8;
        *at += 1;
        div /= 10;
    }
}

/// Formats epoch milliseconds as RFC 3339 UTC with millis (`2024-05-01T12:00:00.123Z`).
pub fn format_millis(ms: i64) -> Option<String> {
    Millis::new(ms).map(|m| m.as_str().to_string())
}

/// Epoch milliseconds as RFC 3339 UTC text, on the stack (one per record: no allocation).
pub(super) struct Millis {
    buf: [u8; 24],
}

impl Millis {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf).unwrap_or("")
    }

    /// `None` outside years 0..=9999.
    fn new(ms: i64) -> Option<Millis> {
        let secs = ms.div_euclid(1000);
        let milli = ms.rem_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        if !(0..=9999).contains(&y) {
            return None;
        }
        // Written digit by digit: no formatting machinery (one per record).
        let mut s = [0u8; 24];
        let at = &mut 0;
        push_padded(&mut s, at, y, 4);
        s[4] = b'-';
        *at += 1;
        push_padded(&mut s, at, m, 2);
        s[7] = b'-';
        *at += 1;
        push_padded(&mut s, at, d, 2);
        s[10] = b'T';
        *at += 1;
        push_padded(&mut s, at, sod / 3600, 2);
        s[13] = b':';
        *at += 1;
        push_padded(&mut s, at, sod / 60 % 60, 2);
        s[16] = b':';
        *at += 1;
        push_padded(&mut s, at, sod % 60, 2);
        s[19] = b'.';
        *at += 1;
        push_padded(&mut s, at, milli, 3);
        s[23] = b'Z';
        Some(Millis { buf: s })
    }
}

/// The annotation of a timestamp: `none` for -1, else its RFC 3339 text, with `suffix`.
pub(super) fn time_annotation<'a>(r: &Reader<'a>, ms: i64, suffix: &str) -> &'a str {
    if ms == -1 && suffix.is_empty() {
        return "none";
    }
    match Millis::new(ms) {
        _ if ms == -1 => r.fmt(format_args!("none{suffix}")),
        Some(m) => r.fmt(format_args!("{}{suffix}", m.as_str())),
        None => r.fmt(format_args!("out of the date range{suffix}")),
    }
}
