//! Go-style durations (`15s`, `1m30s`, `12h0m0s`, `500ms`): parsing, the format every duration
//! flag of upstream kube-controller-manager takes, so upstream manifests run unchanged; and
//! formatting as Go's `time.Duration.String` does, the form upstream's `/configz` shows
//! (`metav1.Duration` marshals to it).

use std::time::Duration;

/// A duration flag value that is not a valid Go duration.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid duration {input:?}: {reason}")]
pub struct DurationParseError {
    input: String,
    reason: &'static str,
}

/// Parses a Go `time.Duration` string: an optional sign is rejected (negative durations make no
/// sense for our flags), then one or more `<decimal><unit>` pairs with units `ns`, `us`/`µs`,
/// `ms`, `s`, `m`, `h`. The bare `0` is accepted, as in Go.
pub fn parse_go_duration(input: &str) -> Result<Duration, DurationParseError> {
    let error = |reason| DurationParseError {
        input: input.to_string(),
        reason,
    };
    if input == "0" {
        return Ok(Duration::ZERO);
    }
    if input.is_empty() {
        return Err(error("empty"));
    }
    if input.starts_with('-') || input.starts_with('+') {
        return Err(error("signed durations are not accepted"));
    }
    let mut rest = input;
    let mut total_nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| error("missing unit"))?;
        if number_len == 0 {
            return Err(error("expected a number"));
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| error("malformed number"))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(error("unknown unit")),
        };
        rest = &rest[unit_len..];
        total_nanos += number * nanos_per_unit;
    }
    if !total_nanos.is_finite() || total_nanos > u64::MAX as f64 {
        return Err(error("out of range"));
    }
    Ok(Duration::from_nanos(total_nanos.round() as u64))
}

/// Formats `duration` as Go's `time.Duration.String`: `0s`; below a second the largest unit
/// that keeps a non-zero integer part (`7ns`, `1.5µs`, `500ms`); from a second on hours and
/// minutes only once reached, seconds always (`15s`, `1m30s`, `2m0s`, `12h0m0s`, `1.5s`).
/// Fractions carry no trailing zeros. Durations beyond Go's range (about 292 years) are
/// formatted the same way rather than overflowing.
pub fn format_go_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    const NANOS_PER_SECOND: u128 = 1_000_000_000;
    if nanos < NANOS_PER_SECOND {
        let (unit, digits) = match nanos {
            0..1_000 => ("ns", 0),
            1_000..1_000_000 => ("µs", 3),
            _ => ("ms", 6),
        };
        return format!("{}{unit}", decimal(nanos, digits));
    }
    let whole_seconds = nanos / NANOS_PER_SECOND;
    let seconds = decimal(nanos % (60 * NANOS_PER_SECOND), 9);
    let (hours, minutes) = (whole_seconds / 3600, whole_seconds / 60 % 60);
    if hours > 0 {
        format!("{hours}h{minutes}m{seconds}s")
    } else if whole_seconds >= 60 {
        format!("{minutes}m{seconds}s")
    } else {
        format!("{seconds}s")
    }
}

/// `value / 10^digits` in decimal, without trailing zeros (nor a point when the fraction is 0).
fn decimal(value: u128, digits: u32) -> String {
    let scale = 10u128.pow(digits);
    let (integer, fraction) = (value / scale, value % scale);
    if fraction == 0 {
        return integer.to_string();
    }
    let fraction = format!("{fraction:0width$}", width = digits as usize);
    format!("{integer}.{}", fraction.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        let cases: &[(&str, Option<Duration>)] = &[
            ("0", Some(Duration::ZERO)),
            ("0s", Some(Duration::ZERO)),
            ("15s", Some(Duration::from_secs(15))),
            ("500ms", Some(Duration::from_millis(500))),
            ("1m30s", Some(Duration::from_secs(90))),
            ("12h0m0s", Some(Duration::from_secs(12 * 3600))),
            ("1.5h", Some(Duration::from_secs(5400))),
            ("2us", Some(Duration::from_micros(2))),
            ("7ns", Some(Duration::from_nanos(7))),
            ("", None),
            ("15", None),
            ("-1s", None),
            ("1d", None),
            ("s", None),
            ("1..5s", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_go_duration(input).ok(), *want, "input {input:?}");
        }
    }

    #[test]
    fn formats_as_go_does() {
        // Expected strings are what Go's time.Duration.String prints for the same value.
        let cases: &[(Duration, &str)] = &[
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(7), "7ns"),
            (Duration::from_nanos(999), "999ns"),
            (Duration::from_nanos(1_500), "1.5µs"),
            (Duration::from_micros(2), "2µs"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_nanos(1_234_567), "1.234567ms"),
            (Duration::from_secs(1), "1s"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_nanos(1_000_000_001), "1.000000001s"),
            (Duration::from_secs(15), "15s"),
            (Duration::from_secs(59), "59s"),
            (Duration::from_secs(60), "1m0s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_millis(90_500), "1m30.5s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_secs(3601), "1h0m1s"),
            (Duration::from_secs(12 * 3600), "12h0m0s"),
            (Duration::from_secs(100 * 3600 + 61), "100h1m1s"),
        ];
        for (duration, want) in cases {
            let formatted = format_go_duration(*duration);
            assert_eq!(formatted, *want, "{duration:?}");
            assert_eq!(
                parse_go_duration(&formatted),
                Ok(*duration),
                "{formatted} parses back"
            );
        }
    }
}
