//! Parsing of Go-style durations (`15s`, `1m30s`, `12h0m0s`, `500ms`), the format every
//! duration flag of upstream kube-controller-manager takes, so upstream manifests run unchanged.

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
}
