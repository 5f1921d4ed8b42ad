//! The pieces of Go's standard library whose exact behaviour shows through upstream's schedule
//! rules, ported so that kcm-rs lands on the same instants and prints the same texts:
//! `time.Date`'s normalization and its choice of offset in a DST gap or fold (robfig's `Next`
//! builds its candidates with it), `Time.Add`/`Sub`/`Truncate`/`Nanosecond`/`Unix` and
//! `Duration.Round`/`Seconds` (`mostRecentScheduleTime` counts with them, saturation and float
//! conversion included), Go's zero time (what robfig's `Next` returns when nothing matches),
//! `time.ParseDuration` (`@every`), `strconv.Atoi` (cron fields), both quoting functions their
//! errors use, and the `time.RFC3339` layout (the scheduled-timestamp annotation).

use jiff::{SignedDuration, Timestamp, tz::TimeZone};

/// Nanoseconds in a second (`time.Second`).
pub(crate) const NANOS_PER_SECOND: i64 = 1_000_000_000;
/// Nanoseconds in a minute (`time.Minute`).
pub(crate) const NANOS_PER_MINUTE: i64 = 60 * NANOS_PER_SECOND;
/// Nanoseconds in an hour (`time.Hour`).
pub(crate) const NANOS_PER_HOUR: i64 = 60 * NANOS_PER_MINUTE;

/// Go's zero `time.Time`, 0001-01-01T00:00:00Z: what robfig's `Next` returns when no time
/// matches within five years, and what an unset `metav1.Time` holds.
pub(crate) const ZERO_TIME: Timestamp = Timestamp::constant(-62_135_596_800, 0);

/// `t.Nanosecond()`: the nanoseconds into `t`'s second, in `0..1e9` (Go floors; jiff's
/// sub-second part is negative before 1970).
pub(crate) fn nanosecond(t: Timestamp) -> i64 {
    // In 0..1e9 by construction.
    t.as_nanosecond().rem_euclid(i128::from(NANOS_PER_SECOND)) as i64
}

/// `t.Unix()`: whole seconds since 1970, floored.
pub(crate) fn unix(t: Timestamp) -> i64 {
    // jiff's range is ±10,000 years, well inside i64 seconds.
    t.as_nanosecond().div_euclid(i128::from(NANOS_PER_SECOND)) as i64
}

/// `t.Add(d)` for `d` nanoseconds, or `None` past jiff's range (years ±9999; Go's is wider,
/// and nothing upstream computes gets there).
pub(crate) fn checked_add(t: Timestamp, nanos: i64) -> Option<Timestamp> {
    t.checked_add(SignedDuration::from_nanos(nanos)).ok()
}

/// `t.Add(d)`, pinned to jiff's range at its ends.
pub(crate) fn add(t: Timestamp, nanos: i64) -> Timestamp {
    checked_add(t, nanos).unwrap_or(if nanos < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

/// `t.Sub(u)` in nanoseconds, saturating at `time.Duration`'s range (about ±292 years) as Go
/// does: Go's zero time is 2,000 years before any real time.
pub(crate) fn sub(t: Timestamp, u: Timestamp) -> i64 {
    let nanos = t.as_nanosecond() - u.as_nanosecond();
    // Clamped into i64 first.
    nanos.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// `t.Truncate(unit)` for a positive `unit`: Go rounds the instant down to a multiple of
/// `unit` since its zero time (a whole number of minutes before 1970), not the wall clock.
pub(crate) fn truncate(t: Timestamp, unit: i64) -> Option<Timestamp> {
    let nanos = t.as_nanosecond();
    Timestamp::from_nanosecond(nanos - nanos.rem_euclid(i128::from(unit))).ok()
}

/// `d.Round(time.Second)`: halves away from zero, saturating.
pub(crate) fn round_to_second(d: i64) -> i64 {
    let m = NANOS_PER_SECOND;
    let less_than_half = |x: i64| x.unsigned_abs() * 2 < m.unsigned_abs();
    let r = d % m;
    if d < 0 {
        let r = -r;
        if less_than_half(r) {
            return d + r;
        }
        return d.checked_sub(m - r).unwrap_or(i64::MIN);
    }
    if less_than_half(r) {
        return d - r;
    }
    d.checked_add(m - r).unwrap_or(i64::MAX)
}

/// `int64(d.Seconds())`: Go computes the seconds as a float (whole part plus fraction) and
/// converts back truncating, which for durations past 2^53 ns can round up a second; kept.
pub(crate) fn whole_seconds(d: i64) -> i64 {
    let seconds = (d / NANOS_PER_SECOND) as f64 + (d % NANOS_PER_SECOND) as f64 / 1e9;
    seconds as i64
}

/// A wall clock reading of an instant in a zone: the fields Go's `Time` methods return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wall {
    pub(crate) year: i64,
    pub(crate) month: i64,
    pub(crate) day: i64,
    pub(crate) hour: i64,
    pub(crate) minute: i64,
    pub(crate) second: i64,
    /// Sunday = 0 (`time.Weekday`).
    pub(crate) weekday: i64,
}

impl Wall {
    /// `t.In(zone)`'s `Year()`, `Month()`, `Day()`, `Hour()`, `Minute()`, `Second()` and
    /// `Weekday()`.
    pub(crate) fn of(t: Timestamp, zone: &TimeZone) -> Wall {
        let civil = zone.to_datetime(t);
        Wall {
            year: i64::from(civil.year()),
            month: i64::from(civil.month()),
            day: i64::from(civil.day()),
            hour: i64::from(civil.hour()),
            minute: i64::from(civil.minute()),
            second: i64::from(civil.second()),
            weekday: i64::from(civil.weekday().to_sunday_zero_offset()),
        }
    }
}

/// `time.Date(year, month, day, hour, minute, second, 0, zone)`, or `None` past jiff's range.
///
/// A month outside 1..=12 carries into the year; days, hours, minutes and seconds carry
/// linearly (the 32nd of a month is the 1st or 2nd of the next). A wall time that a DST
/// transition skips or repeats gets Go's offset: read the wall time as if it were UTC, take
/// the zone's offset at that instant, step back by it, and use the offset in force there.
/// For a zone west of UTC a skipped time lands before the gap (02:30 on New York's
/// spring-forward day is 01:30 EST) and a repeated one on its first occurrence.
pub(crate) fn date(
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    zone: &TimeZone,
) -> Option<Timestamp> {
    let month0 = month.checked_sub(1)?;
    let year = year.checked_add(month0.div_euclid(12))?;
    let month = month0.rem_euclid(12) + 1;
    let days = days_from_civil(year, month, 1)?.checked_add(day.checked_sub(1)?)?;
    let wall = days
        .checked_mul(86_400)?
        .checked_add(hour.checked_mul(3_600)?)?
        .checked_add(minute.checked_mul(60)?)?
        .checked_add(second)?;
    let guess = zone.to_offset(Timestamp::from_second(wall).ok()?).seconds();
    let utc = Timestamp::from_second(wall - i64::from(guess)).ok()?;
    let offset = zone.to_offset(utc).seconds();
    Timestamp::from_second(wall - i64::from(offset)).ok()
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (`month` in 1..=12).
fn days_from_civil(year: i64, month: i64, day: i64) -> Option<i64> {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era.checked_mul(146_097)?
        .checked_add(day_of_era)?
        .checked_sub(719_468)
}

/// `t.In(zone).Format(time.RFC3339)`: seconds, no fraction, `Z` for a zero offset (whatever
/// the zone) or `±hh:mm` (an offset's seconds dropped, as Go does).
pub(crate) fn format_rfc3339(t: Timestamp, zone: &TimeZone) -> String {
    let wall = Wall::of(t, zone);
    let year = if wall.year < 0 {
        format!("-{:04}", -wall.year)
    } else {
        format!("{:04}", wall.year)
    };
    let offset = zone.to_offset(t).seconds();
    let offset = if offset == 0 {
        "Z".to_owned()
    } else {
        let minutes = offset / 60;
        let sign = if minutes < 0 { '-' } else { '+' };
        let minutes = minutes.abs();
        format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
    };
    format!(
        "{year}-{:02}-{:02}T{:02}:{:02}:{:02}{offset}",
        wall.month, wall.day, wall.hour, wall.minute, wall.second
    )
}

/// A `time.ParseDuration` error, as Go words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration at all, or one past ±2^63 ns.
    #[error("time: invalid duration {}", quote_time(.0))]
    Invalid(String),
    /// A number with no unit after it.
    #[error("time: missing unit in duration {}", quote_time(.0))]
    MissingUnit(String),
    /// A unit other than `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`.
    #[error("time: unknown unit {} in duration {}", quote_time(.unit), quote_time(.duration))]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole duration as written.
        duration: String,
    },
}

/// `time.ParseDuration`: a possibly signed sequence of decimal numbers, each with an optional
/// fraction and a unit (`1h30m`, `1.5h`, `300ms`, `-2m`), as nanoseconds. Go's overflow rules
/// and float arithmetic for fractions are kept.
pub(crate) fn parse_duration(orig: &str) -> Result<i64, DurationError> {
    const LIMIT: u64 = 1 << 63;
    let invalid = || DurationError::Invalid(orig.to_owned());
    let mut s = orig;
    let mut total: u64 = 0;
    let mut negative = false;
    if let Some(sign @ (b'-' | b'+')) = s.bytes().next() {
        negative = sign == b'-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    while let Some(first) = s.bytes().next() {
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let before = s.len();
        let (mut value, rest) = leading_int(s).ok_or_else(invalid)?;
        s = rest;
        let pre = before != s.len();
        let (mut fraction, mut scale, mut post) = (0_u64, 1_f64, false);
        if let Some(after_point) = s.strip_prefix('.') {
            let rest;
            (fraction, scale, rest) = leading_fraction(after_point);
            post = after_point.len() != rest.len();
            s = rest;
        }
        if !pre && !post {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .position(|c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(orig.to_owned()));
        }
        let (unit, rest) = s.split_at(unit_len);
        s = rest;
        let unit = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(DurationError::UnknownUnit {
                    unit: unit.to_owned(),
                    duration: orig.to_owned(),
                });
            }
        };
        if value > LIMIT / unit {
            return Err(invalid());
        }
        value *= unit;
        if fraction > 0 {
            // Go: float64 keeps fractions of hours nanosecond-accurate.
            value += (fraction as f64 * (unit as f64 / scale)) as u64;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        // Go's uint64 wraps here (only 2^63 + 2^63 can).
        total = total.wrapping_add(value);
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if negative {
        // `-Duration(d)`: 2^63 wraps onto itself.
        return Ok((total as i64).wrapping_neg());
    }
    if total > LIMIT - 1 {
        return Err(invalid());
    }
    Ok(total as i64)
}

/// `time.leadingInt`: the leading digits, `None` past 2^63.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let mut x: u64 = 0;
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    for c in s[..digits].bytes() {
        if x > (1 << 63) / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > 1 << 63 {
            return None;
        }
    }
    Some((x, &s[digits..]))
}

/// `time.leadingFraction`: the leading digits after a point and their scale; digits past
/// 2^63 are consumed but no longer counted.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let (mut x, mut scale, mut overflow) = (0_u64, 1_f64, false);
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    for c in s[..digits].bytes() {
        if overflow {
            continue;
        }
        if x > ((1 << 63) - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > 1 << 63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[digits..])
}

/// Why `strconv.Atoi` turned a number down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AtoiErrorKind {
    /// Not an optionally signed run of decimal digits (`strconv.ErrSyntax`).
    #[error("invalid syntax")]
    Syntax,
    /// Outside `int64` (`strconv.ErrRange`).
    #[error("value out of range")]
    Range,
}

/// A `strconv.Atoi` error (`*strconv.NumError`), as Go words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strconv.Atoi: parsing {}: {kind}", quote_strconv(.input))]
pub struct AtoiError {
    /// The text given.
    pub input: String,
    /// Why it was turned down.
    pub kind: AtoiErrorKind,
}

/// `strconv.Atoi` on a 64-bit platform: an optional `+` or `-`, then decimal digits.
pub(crate) fn atoi(s: &str) -> Result<i64, AtoiError> {
    let error = |kind| AtoiError {
        input: s.to_owned(),
        kind,
    };
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return Err(error(AtoiErrorKind::Syntax));
    }
    // Go's fast path (fewer than 19 bytes) and `ParseInt` agree on every input but in the
    // order of their checks: `ParseUint` stops at the first overflow before looking at the
    // rest, so "99999999999999999999x" is out of range rather than a syntax error.
    let mut magnitude: u64 = 0;
    for c in digits.bytes() {
        if !c.is_ascii_digit() {
            return Err(error(AtoiErrorKind::Syntax));
        }
        magnitude = magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(c - b'0')))
            .ok_or_else(|| error(AtoiErrorKind::Range))?;
    }
    const CUTOFF: u64 = 1 << 63;
    match (negative, magnitude) {
        (false, m) if m >= CUTOFF => Err(error(AtoiErrorKind::Range)),
        (true, m) if m > CUTOFF => Err(error(AtoiErrorKind::Range)),
        // -2^63 wraps onto itself.
        (true, m) => Ok((m as i64).wrapping_neg()),
        (false, m) => Ok(m as i64),
    }
}

/// The `time` package's `quote` (in `ParseDuration`'s and `LoadLocation`'s errors): ASCII
/// as is with `"` and `\` escaped, every byte of a control character or of anything
/// non-ASCII as `\xNN`.
pub(crate) fn quote_time(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !c.is_ascii() || c < ' ' {
            let mut buf = [0; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// `strconv.Quote`: printable characters as is (`"` and `\` escaped), the C escapes, `\xNN`
/// for other ASCII controls and `\uNNNN`/`\UNNNNNNNN` for other non-printable characters.
/// Go's `IsPrint` is approximated without Unicode's category tables: controls, whitespace
/// other than the space, U+00AD, the format characters, the private-use planes and the
/// noncharacters are
/// non-printable; an unassigned code point is printed where Go would escape it.
pub(crate) fn quote_strconv(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if u32::from(c) < 0x10000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint`, as far as it can be told without Unicode's category tables.
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    // The noncharacters U+nFFFE and U+nFFFF of every plane.
    if c.is_control() || c.is_whitespace() || c == '\u{ad}' || u32::from(c) & 0xfffe == 0xfffe {
        return false;
    }
    !matches!(u32::from(c),
        // Format characters (Cf).
        0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2 | 0x180e
        | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f | 0xfeff
        | 0xfff9..=0xfffb | 0x110bd | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3
        | 0x1d173..=0x1d17a | 0xe0001 | 0xe0020..=0xe007f
        // Private use (Co).
        | 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd
        // The other noncharacters.
        | 0xfdd0..=0xfdef)
}
