//! `golang.rs`: the Go behaviours the schedule rules rely on, each against what Go's standard
//! library returns for the same input.

use jiff::tz::TimeZone;

use super::ts;
use crate::decide::golang::{
    AtoiErrorKind, ZERO_TIME, atoi, date, nanosecond, parse_duration, quote_strconv, quote_time,
    round_to_second, sub, unix, whole_seconds,
};

/// `time.Date` in a zone: (row, zone, the wall time, the instant Go picks).
#[test]
#[rustfmt::skip]
fn date_table() {
    type Row = (&'static str, &'static str, (i64, i64, i64, i64, i64, i64), &'static str);
    let cases: &[Row] = &[
        ("a plain wall time",                        "America/New_York", (2016, 5, 19, 6, 0, 0),   "2016-05-19T10:00:00Z"),
        ("month 13 is january next year",            "UTC",              (2016, 13, 1, 0, 0, 0),   "2017-01-01T00:00:00Z"),
        ("month 0 is december last year",            "UTC",              (2016, 0, 1, 0, 0, 0),    "2015-12-01T00:00:00Z"),
        ("the 32nd carries into the next month",     "UTC",              (2016, 1, 32, 0, 0, 0),   "2016-02-01T00:00:00Z"),
        ("february 30th of a leap year is march 1st", "UTC",             (2016, 2, 30, 0, 0, 0),   "2016-03-01T00:00:00Z"),
        ("hour 24 is midnight next day",             "UTC",              (2016, 5, 19, 24, 0, 0),  "2016-05-20T00:00:00Z"),
        ("a skipped wall time lands before the gap", "America/New_York", (2024, 3, 10, 2, 30, 0),  "2024-03-10T06:30:00Z"),
        ("a repeated wall time is the first one",    "America/New_York", (2024, 11, 3, 1, 30, 0),  "2024-11-03T05:30:00Z"),
        ("east of UTC, a skipped wall time",         "Europe/Rome",      (2024, 3, 31, 2, 30, 0),  "2024-03-31T01:30:00Z"),
        ("east of UTC, a repeated wall time",        "Europe/Rome",      (2024, 10, 27, 2, 30, 0), "2024-10-27T01:30:00Z"),
        ("year 1",                                   "UTC",              (1, 1, 1, 0, 0, 0),       "0001-01-01T00:00:00Z"),
    ];
    for (name, zone, (year, month, day, hour, minute, second), want) in cases {
        let zone = TimeZone::get(zone).expect("a known zone");
        assert_eq!(date(*year, *month, *day, *hour, *minute, *second, &zone), Some(ts(want)), "{name}");
    }
    assert_eq!(ZERO_TIME, ts("0001-01-01T00:00:00Z"));
}

/// `Time.Nanosecond`, `Time.Unix` (floored before 1970), `Time.Sub` (saturating),
/// `Duration.Round(time.Second)` (halves away from zero) and `int64(Duration.Seconds())`.
#[test]
fn time_arithmetic() {
    assert_eq!(nanosecond(ts("1969-12-31T23:59:59.75Z")), 750_000_000);
    assert_eq!(unix(ts("1969-12-31T23:59:59.75Z")), -1);
    assert_eq!(unix(ts("2016-05-19T10:00:00.5Z")), 1_463_652_000);
    assert_eq!(
        sub(ts("2016-05-19T10:00:00Z"), ZERO_TIME),
        i64::MAX,
        "past 292 years"
    );
    assert_eq!(sub(ZERO_TIME, ts("2016-05-19T10:00:00Z")), i64::MIN);
    assert_eq!(round_to_second(1_499_999_999), 1_000_000_000);
    assert_eq!(round_to_second(1_500_000_000), 2_000_000_000);
    assert_eq!(round_to_second(-1_500_000_000), -2_000_000_000);
    assert_eq!(round_to_second(-1_499_999_999), -1_000_000_000);
    assert_eq!(round_to_second(i64::MAX), i64::MAX);
    assert_eq!(round_to_second(i64::MIN), i64::MIN);
    assert_eq!(whole_seconds(3_599_999_999_999), 3_599);
    assert_eq!(whole_seconds(-1_500_000_000), -1);
    assert_eq!(whole_seconds(i64::MAX), 9_223_372_036);
    // Go's float: 9223372035.999999999 s rounds up to the next second.
    assert_eq!(whole_seconds(9_223_372_035_999_999_999), 9_223_372_036);
}

/// `time.ParseDuration`: (row, text, nanoseconds or the error's text).
#[test]
#[rustfmt::skip]
fn parse_duration_table() {
    let cases: &[(&str, &str, Result<i64, &str>)] = &[
        ("zero",                           "0",            Ok(0)),
        ("signed zero",                    "-0",           Ok(0)),
        ("zero with a unit",               "0s",           Ok(0)),
        ("hours and minutes",              "1h30m",        Ok(5_400_000_000_000)),
        ("a fraction of an hour",          "1.5h",         Ok(5_400_000_000_000)),
        ("milliseconds",                   "300ms",        Ok(300_000_000)),
        ("every unit",                     "1h1m1s1ms1us1ns", Ok(3_661_001_001_001)),
        ("negative",                       "-1.5h",        Ok(-5_400_000_000_000)),
        ("a long fraction keeps its precision", "1.0000000001s", Ok(1_000_000_000)),
        ("the largest",                    "9223372036854775807ns", Ok(i64::MAX)),
        ("the smallest",                   "-9223372036854775808ns", Ok(i64::MIN)),
        ("one past the largest",           "9223372036854775808ns", Err("time: invalid duration \"9223372036854775808ns\"")),
        ("empty",                          "",             Err("time: invalid duration \"\"")),
        ("a sign alone",                   "+",            Err("time: invalid duration \"+\"")),
        ("a bare number",                  "1",            Err("time: missing unit in duration \"1\"")),
        ("an unknown unit",                "1y",           Err("time: unknown unit \"y\" in duration \"1y\"")),
        ("a quote in the text",            "1\"",          Err("time: unknown unit \"\\\"\" in duration \"1\\\"\"")),
        ("a control character",            "1\u{7}",       Err("time: unknown unit \"\\x07\" in duration \"1\\x07\"")),
    ];
    for (name, text, want) in cases {
        let got = parse_duration(text).map_err(|error| error.to_string());
        assert_eq!(got, want.map_err(String::from), "{name}");
    }
}

/// `strconv.Atoi`: (row, text, the number or why not).
#[test]
#[rustfmt::skip]
fn atoi_table() {
    let cases: &[(&str, &str, Result<i64, AtoiErrorKind>)] = &[
        ("digits",                    "42",                    Ok(42)),
        ("a plus",                    "+42",                   Ok(42)),
        ("a minus",                   "-42",                   Ok(-42)),
        ("leading zeros",             "0000000000000000000042", Ok(42)),
        ("the largest",               "9223372036854775807",   Ok(i64::MAX)),
        ("the smallest",              "-9223372036854775808",  Ok(i64::MIN)),
        ("one past the largest",      "9223372036854775808",   Err(AtoiErrorKind::Range)),
        ("empty",                     "",                      Err(AtoiErrorKind::Syntax)),
        ("a sign alone",              "-",                     Err(AtoiErrorKind::Syntax)),
        ("a letter",                  "4a",                    Err(AtoiErrorKind::Syntax)),
        ("no underscores in base 10", "1_000",                 Err(AtoiErrorKind::Syntax)),
        ("overflow is seen first",    "99999999999999999999x", Err(AtoiErrorKind::Range)),
        ("a bad byte before overflow", "9x9999999999999999999", Err(AtoiErrorKind::Syntax)),
    ];
    for (name, text, want) in cases {
        assert_eq!(atoi(text).map_err(|error| error.kind), *want, "{name}");
    }
}

/// The two quoting functions Go's errors use.
#[test]
#[rustfmt::skip]
fn quote_table() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("plain ASCII",          "abc",          "\"abc\"",           "\"abc\""),
        ("quote and backslash",  "a\"b\\c",      "\"a\\\"b\\\\c\"",   "\"a\\\"b\\\\c\""),
        ("a tab",                "\t",           "\"\\x09\"",         "\"\\t\""),
        ("a control character",  "\u{1}",        "\"\\x01\"",         "\"\\x01\""),
        ("DEL",                  "\u{7f}",       "\"\u{7f}\"",        "\"\\x7f\""),
        ("a printable letter",   "é",            "\"\\xc3\\xa9\"",    "\"é\""),
        ("a C1 control",         "\u{85}",       "\"\\xc2\\x85\"",    "\"\\u0085\""),
        ("a format character",   "\u{200b}",     "\"\\xe2\\x80\\x8b\"", "\"\\u200b\""),
        ("outside the BMP",      "\u{10ffff}",   "\"\\xf4\\x8f\\xbf\\xbf\"", "\"\\U0010ffff\""),
    ];
    for (name, text, time, strconv) in cases {
        assert_eq!(quote_time(text), *time, "{name}: time.quote");
        assert_eq!(quote_strconv(text), *strconv, "{name}: strconv.Quote");
    }
}
