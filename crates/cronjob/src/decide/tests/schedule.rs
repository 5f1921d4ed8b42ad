//! `schedule.rs`: upstream's `TestParseCronSchedule`, then kcm-rs tables for robfig's parser
//! (descriptors, names, steps, lists, day matching, inline zones, `@every`, every error
//! text), `Next` (the five-year limit, DST in New York and São Paulo), `formatSchedule` and
//! `time.LoadLocation`.

use jiff::{SignedDuration, Timestamp, tz::TimeZoneDatabase};

use super::{cronjob_in, top_of_the_hour, ts, zoned};
use crate::decide::schedule::{
    FormattedSchedule, Schedule, TimeZoneError, format_schedule, load_time_zone, parse_schedule,
};

/// `parse_schedule(spec)`'s next activation after `after` (in `zone`), as a timestamp.
fn next(spec: &str, zone: &str, after: Timestamp) -> Option<Timestamp> {
    let schedule = parse_schedule(spec).unwrap_or_else(|error| panic!("{spec}: {error}"));
    schedule
        .next(&zoned(after, zone))
        .map(|next| next.timestamp())
}

/// Upstream's `TestParseCronSchedule` (pkg/util/parsers): `Ok` rows must give a schedule with
/// a next time; `Err` rows an error containing the text, and no schedule.
#[test]
#[rustfmt::skip]
fn parse_cron_schedule_table() {
    let cases: &[(&str, &str, Result<(), &str>)] = &[
        ("valid schedule without timezone",                       "0 0 * * *",                          Ok(())),
        ("valid schedule with timezone",                          "TZ=UTC 0 0 * * *",                   Ok(())),
        ("valid schedule with CRON_TZ",                           "CRON_TZ=America/New_York 0 0 * * *", Ok(())),
        ("TZ=0 without space should panic and be recovered",      "TZ=0",                               Err("invalid schedule format")),
        ("TZ= without value should panic and be recovered",       "TZ=",                                Err("invalid schedule format")),
        ("CRON_TZ= without space should panic and be recovered",  "CRON_TZ=UTC",                        Err("invalid schedule format")),
        ("malformed timezone spec should panic and be recovered", "TZ=Invalid/Timezone",                Err("invalid schedule format")),
    ];
    for (name, spec, want) in cases {
        match (want, parse_schedule(spec)) {
            (Ok(()), Ok(schedule)) => {
                assert!(schedule.next(&zoned(top_of_the_hour(), "UTC")).is_some(), "{name}");
            }
            (Err(part), Err(error)) => assert!(error.to_string().contains(part), "{name}: {error}"),
            (want, got) => panic!("{name}: want {want:?}, got {got:?}"),
        }
    }
}

/// Each descriptor is the five fields it stands for, bit for bit (star bits included), and
/// fires where they do.
#[test]
#[rustfmt::skip]
fn descriptor_table() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("@yearly is 0 0 1 1 *",    "@yearly",   "0 0 1 1 *", "2017-01-01T00:00:00Z"),
        ("@annually is @yearly",    "@annually", "0 0 1 1 *", "2017-01-01T00:00:00Z"),
        ("@monthly is 0 0 1 * *",   "@monthly",  "0 0 1 * *", "2016-06-01T00:00:00Z"),
        ("@weekly is 0 0 * * 0",    "@weekly",   "0 0 * * 0", "2016-05-22T00:00:00Z"),
        ("@daily is 0 0 * * *",     "@daily",    "0 0 * * *", "2016-05-20T00:00:00Z"),
        ("@midnight is @daily",     "@midnight", "0 0 * * *", "2016-05-20T00:00:00Z"),
        ("@hourly is 0 * * * *",    "@hourly",   "0 * * * *", "2016-05-19T11:00:00Z"),
    ];
    for (name, descriptor, fields, want) in cases {
        let parsed = parse_schedule(descriptor).expect(name);
        assert_eq!(parsed, parse_schedule(fields).expect(name), "{name}");
        assert_eq!(next(descriptor, "UTC", top_of_the_hour()), Some(ts(want)), "{name}");
    }
}

/// `Next` for schedules of every shape: (row, spec, zone of the time given, that time,
/// the next activation or `None` for Go's zero time).
#[test]
#[rustfmt::skip]
fn next_table() {
    let cases: &[(&str, &str, &str, &str, Option<&str>)] = &[
        ("every minute",                                  "* * * * *",        "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-19T10:01:00Z")),
        ("strictly after: a fraction of a second counts", "* * * * *",        "UTC", "2016-05-19T10:00:59.5Z",   Some("2016-05-19T10:01:00Z")),
        ("? is a star",                                   "* * * * ?",        "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-19T10:01:00Z")),
        ("on the hour",                                   "0 * * * *",        "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-19T11:00:00Z")),
        ("*/60 in minutes is minute 0 only",              "*/60 * * * *",     "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-19T11:00:00Z")),
        ("*/15",                                          "*/15 * * * *",     "UTC", "2016-05-19T10:16:00Z",     Some("2016-05-19T10:30:00Z")),
        ("N/step is N-max/step",                          "5/15 * * * *",     "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-19T10:05:00Z")),
        ("N/step wraps to N next hour",                   "5/15 * * * *",     "UTC", "2016-05-19T10:51:00Z",     Some("2016-05-19T11:05:00Z")),
        ("a range with a step",                           "10-20/5 * * * *",  "UTC", "2016-05-19T10:16:00Z",     Some("2016-05-19T10:20:00Z")),
        ("a hyphen after a star is ignored",              "*-5/30 * * * *",   "UTC", "2016-05-19T10:01:00Z",     Some("2016-05-19T10:30:00Z")),
        ("a list",                                        "0,30 * * * *",     "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-19T10:30:00Z")),
        ("empty list elements are dropped",               "0,,30 * * * *",    "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-19T10:30:00Z")),
        ("a plus sign parses (strconv.Atoi)",             "+5 * * * *",       "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-19T10:05:00Z")),
        ("an hour range, next day",                       "0 9-17 * * *",     "UTC", "2016-05-19T18:00:00Z",     Some("2016-05-20T09:00:00Z")),
        ("upstream's complex schedule",                   "30 6-16/4 * * 1-5","UTC", "2016-05-20T14:30:00Z",     Some("2016-05-23T06:30:00Z")),
        ("a month name",                                  "0 0 1 jun *",      "UTC", "2016-05-19T10:00:00Z",     Some("2016-06-01T00:00:00Z")),
        ("month names in any case, in a range",           "0 0 1 JUN-aug *",  "UTC", "2016-05-19T10:00:00Z",     Some("2016-06-01T00:00:00Z")),
        ("a month name next year",                        "0 0 1 Jan *",      "UTC", "2016-05-19T10:00:00Z",     Some("2017-01-01T00:00:00Z")),
        ("a day name",                                    "0 0 * * MON",      "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-23T00:00:00Z")),
        ("sun is 0",                                      "0 0 * * sun",      "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-22T00:00:00Z")),
        ("day names in a range",                          "0 0 * * sat-SAT",  "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-21T00:00:00Z")),
        ("dom and dow both restricted: OR",               "0 0 1 * 1",        "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-23T00:00:00Z")),
        ("dom restricted, dow a star: AND",               "0 0 13 * *",       "UTC", "2016-05-19T10:00:00Z",     Some("2016-06-13T00:00:00Z")),
        ("a step of 1 keeps the star: AND",               "0 0 */1 * 1",      "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-23T00:00:00Z")),
        ("a step of 1 on the weekday keeps its star",    "0 0 1 * */1",      "UTC", "2016-05-19T10:00:00Z",     Some("2016-06-01T00:00:00Z")),
        ("a full range without a star: OR",               "0 0 1-31 * 1",     "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-20T00:00:00Z")),
        ("a step above 1 clears the star: OR",            "0 0 */2 * 1",      "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-21T00:00:00Z")),
        ("? in day of month is a star: AND",              "0 0 ? * 1",        "UTC", "2016-05-19T10:00:00Z",     Some("2016-05-23T00:00:00Z")),
        ("february 29th, next leap year",                 "0 0 29 2 *",       "UTC", "2016-05-19T10:00:00Z",     Some("2020-02-29T00:00:00Z")),
        ("no time within five years: zero time",          "59 23 31 2 *",     "UTC", "2016-05-19T10:00:00Z",     None),
        ("april 31st never comes",                        "0 0 31 4 *",       "UTC", "2016-05-19T10:00:00Z",     None),
        ("a lone comma allows nothing",                   "0 0 , * *",        "UTC", "2016-05-19T10:00:00Z",     None),
        ("an inline zone",                                "TZ=America/New_York 0 9 * * *",   "UTC", "2016-05-19T10:00:00Z", Some("2016-05-19T13:00:00Z")),
        ("CRON_TZ, and strictly after",                   "CRON_TZ=Europe/Rome 0 12 * * *",  "UTC", "2016-05-19T10:00:00Z", Some("2016-05-20T10:00:00Z")),
        ("an empty inline zone is UTC",                   "TZ= 0 12 * * *",                  "UTC", "2016-05-19T10:00:00Z", Some("2016-05-19T12:00:00Z")),
        ("the rest after the zone is trimmed",            "TZ=UTC    0 12 * * *  ",          "UTC", "2016-05-19T10:00:00Z", Some("2016-05-19T12:00:00Z")),
        ("an inline zone, then a descriptor",             "TZ=Asia/Tokyo @daily",            "UTC", "2016-05-19T10:00:00Z", Some("2016-05-19T15:00:00Z")),
        ("no zone: the wall clock of the time given",     "0 12 * * *",       "America/New_York", "2016-05-19T10:00:00Z", Some("2016-05-19T16:00:00Z")),
        ("TZ=Local: the wall clock of the time given",    "TZ=Local 0 12 * * *", "Asia/Tokyo",    "2016-05-19T10:00:00Z", Some("2016-05-20T03:00:00Z")),
        ("an inline zone beats the time's zone",          "TZ=UTC 0 12 * * *", "Asia/Tokyo",      "2016-05-19T10:00:00Z", Some("2016-05-19T12:00:00Z")),
        // DST in New York: 2024-03-10 02:00 EST jumps to 03:00 EDT, 2024-11-03 02:00 EDT falls back to 01:00 EST.
        ("DST: 02:30 does not exist on spring-forward day: skipped", "CRON_TZ=America/New_York 30 2 * * *", "UTC", "2024-03-09T07:30:00Z", Some("2024-03-11T06:30:00Z")),
        ("DST: the same with the zone from the time given",          "30 2 * * *",     "America/New_York", "2024-03-09T07:30:00Z", Some("2024-03-11T06:30:00Z")),
        ("DST: hourly jumps from 01:00 EST to 03:00 EDT",           "0 * * * *",      "America/New_York", "2024-03-10T06:30:00Z", Some("2024-03-10T07:00:00Z")),
        ("DST: 01:30 repeats on fall-back day: fires twice",         "CRON_TZ=America/New_York 30 1 * * *", "UTC", "2024-11-03T05:30:00Z", Some("2024-11-03T06:30:00Z")),
        ("DST: after the second 01:30, the next day",                "CRON_TZ=America/New_York 30 1 * * *", "UTC", "2024-11-03T06:30:00Z", Some("2024-11-04T06:30:00Z")),
        ("DST: a midnight that does not exist (São Paulo) is skipped", "CRON_TZ=America/Sao_Paulo 0 0 * * *", "UTC", "2018-11-03T03:00:00Z", Some("2018-11-05T02:00:00Z")),
    ];
    for (name, spec, zone, after, want) in cases {
        assert_eq!(next(spec, zone, ts(after)), want.map(ts), "{name}");
    }
}

/// The next activation comes back in the zone of the time given, whatever the schedule's.
#[test]
fn next_is_in_the_zone_of_the_time_given() {
    let schedule = parse_schedule("TZ=Asia/Tokyo 0 0 * * *").expect("parses");
    let next = schedule
        .next(&zoned(top_of_the_hour(), "Europe/Rome"))
        .expect("a next time");
    assert_eq!(next.time_zone().iana_name(), Some("Europe/Rome"));
    assert_eq!(next.timestamp(), ts("2016-05-19T15:00:00Z"));
}

/// `@every <Go duration>`: (row, spec, the delay in milliseconds).
#[test]
#[rustfmt::skip]
fn every_table() {
    let cases: &[(&str, &str, i64)] = &[
        ("hours and minutes",                   "@every 1h30m",      5_400_000),
        ("seconds",                             "@every 90s",        90_000),
        ("a fraction of an hour",               "@every 1.5h",       5_400_000),
        ("under a second is a second",          "@every 300ms",      1_000),
        ("microseconds (us) are under a second", "@every 10us",      1_000),
        ("the micro sign",                      "@every 5\u{b5}s",   1_000),
        ("the Greek mu",                        "@every 5\u{3bc}s",  1_000),
        ("nanoseconds",                         "@every 1ns",        1_000),
        ("the part below a second is dropped",  "@every 1m30.7s",    90_000),
        ("2h45m",                               "@every 2h45m",      9_900_000),
        ("a leading plus",                      "@every +1m",        60_000),
        ("negative is under a second",          "@every -5m",        1_000),
        ("zero is under a second",              "@every 0",          1_000),
        ("a bare point fraction",               "@every .5m",        30_000),
        ("a trailing point",                    "@every 1.h",        3_600_000),
        ("an inline zone is ignored",           "TZ=Asia/Tokyo @every 2m", 120_000),
    ];
    for (name, spec, millis) in cases {
        let Ok(Schedule::ConstantDelay(every)) = parse_schedule(spec) else {
            panic!("{name}: {:?}", parse_schedule(spec));
        };
        assert_eq!(every.delay(), SignedDuration::from_millis(*millis), "{name}");
    }
}

/// `ConstantDelaySchedule.Next`: the delay after the time given, rounded down to its second.
#[test]
#[rustfmt::skip]
fn every_next_table() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("an hour later",                  "@every 1h",  "2016-05-19T10:00:00Z",     "2016-05-19T11:00:00Z"),
        ("the fraction of a second drops", "@every 1h",  "2016-05-19T10:00:00.250Z", "2016-05-19T11:00:00Z"),
        ("no alignment to the clock",      "@every 90s", "2016-05-19T10:00:07Z",     "2016-05-19T10:01:37Z"),
    ];
    for (name, spec, after, want) in cases {
        assert_eq!(next(spec, "UTC", ts(after)), Some(ts(want)), "{name}");
    }
}

/// Every error text robfig's `ParseStandard` and v1.35+'s panic recovery give, verbatim.
#[test]
#[rustfmt::skip]
fn error_table() {
    let cases: &[(&str, &str, &str)] = &[
        ("empty",                             "",                          "empty spec string"),
        ("TZ= with no space (recovered panic)", "TZ=0",                    "invalid schedule format: runtime error: slice bounds out of range [:-1]"),
        ("CRON_TZ= with no space",            "CRON_TZ=UTC",               "invalid schedule format: runtime error: slice bounds out of range [:-1]"),
        ("the zone runs to the first space, a tab is no space", "TZ=UTC\t0 * * * *", "provided bad location UTC\t0: unknown time zone UTC\t0"),
        ("a tab and no space",                "TZ=UTC\t@daily",            "invalid schedule format: runtime error: slice bounds out of range [:-1]"),
        ("unknown inline zone",               "TZ=Mars/Olympus 0 * * * *", "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"),
        ("zone names are case-sensitive",     "TZ=america/new_york 0 * * * *", "provided bad location america/new_york: unknown time zone america/new_york"),
        ("zone names with ..",                "TZ=../etc/passwd 0 * * * *", "provided bad location ../etc/passwd: time: invalid location name"),
        ("zone names from the root",          "CRON_TZ=/etc/localtime 0 * * * *", "provided bad location /etc/localtime: time: invalid location name"),
        ("a zone and nothing else",           "TZ=UTC ",                   "expected exactly 5 fields, found 0: []"),
        ("unknown descriptor",                "@fortnightly",              "unrecognized descriptor: @fortnightly"),
        ("descriptors are exact: case",       "@Daily",                    "unrecognized descriptor: @Daily"),
        ("descriptors are exact: trailing space", "@hourly ",              "unrecognized descriptor: @hourly "),
        ("@every with no space",              "@every",                    "unrecognized descriptor: @every"),
        ("@every with nothing",               "@every ",                   "failed to parse duration @every : time: invalid duration \"\""),
        ("@every with two spaces",            "@every  1h",                "failed to parse duration @every  1h: time: invalid duration \" 1h\""),
        ("@every with a unit alone",          "@every h",                  "failed to parse duration @every h: time: invalid duration \"h\""),
        ("@every with a point alone",         "@every .s",                 "failed to parse duration @every .s: time: invalid duration \".s\""),
        ("@every with a sign alone",          "@every -",                  "failed to parse duration @every -: time: invalid duration \"-\""),
        ("@every with no unit",               "@every 10",                 "failed to parse duration @every 10: time: missing unit in duration \"10\""),
        ("@every with a unit then no unit",   "@every 1h5",                "failed to parse duration @every 1h5: time: missing unit in duration \"1h5\""),
        ("@every with days",                  "@every 1d",                 "failed to parse duration @every 1d: time: unknown unit \"d\" in duration \"1d\""),
        ("@every with a trailing space",      "@every 1h ",                "failed to parse duration @every 1h : time: unknown unit \"h \" in duration \"1h \""),
        ("@every quotes non-ASCII as bytes",  "@every 1é",                 "failed to parse duration @every 1é: time: unknown unit \"\\xc3\\xa9\" in duration \"1\\xc3\\xa9\""),
        ("@every past 2^63 ns",               "@every 2562048h",           "failed to parse duration @every 2562048h: time: invalid duration \"2562048h\""),
        ("too few fields",                    "obvious error schedule",    "expected exactly 5 fields, found 3: [obvious error schedule]"),
        ("too many fields (no seconds)",      "0 * * * * *",               "expected exactly 5 fields, found 6: [0 * * * * *]"),
        ("blank",                             "   ",                       "expected exactly 5 fields, found 0: []"),
        ("too many hyphens",                  "1-2-3 * * * *",             "too many hyphens: 1-2-3"),
        ("a bad start before too many hyphens", "x-2-3 * * * *",           "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
        ("too many slashes",                  "*/2/3 * * * *",             "too many slashes: */2/3"),
        ("not a number",                      "x * * * *",                 "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
        ("no names in minutes",               "jan * * * *",               "failed to parse int from jan: strconv.Atoi: parsing \"jan\": invalid syntax"),
        ("not a month name",                  "0 0 * foo *",               "failed to parse int from foo: strconv.Atoi: parsing \"foo\": invalid syntax"),
        ("a hyphen alone",                    "- * * * *",                 "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"),
        ("a leading hyphen",                  "-5 * * * *",                "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"),
        ("a step that is no number",          "*/x * * * *",               "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
        ("a control character, Go-quoted",    "\u{1} * * * *",             "failed to parse int from \u{1}: strconv.Atoi: parsing \"\\x01\": invalid syntax"),
        ("a printable non-ASCII character",   "é * * * *",                 "failed to parse int from é: strconv.Atoi: parsing \"é\": invalid syntax"),
        ("a number past int64",               "99999999999999999999 * * * *", "failed to parse int from 99999999999999999999: strconv.Atoi: parsing \"99999999999999999999\": value out of range"),
        ("a negative step",                   "*/-1 * * * *",              "negative number (-1) not allowed: -1"),
        ("day of month 0",                    "0 0 0 * *",                 "beginning of range (0) below minimum (1): 0"),
        ("month 0",                           "0 0 * 0-3 *",               "beginning of range (0) below minimum (1): 0-3"),
        ("minute 60",                         "60 * * * *",                "end of range (60) above maximum (59): 60"),
        ("hour 24",                           "0 24 * * *",                "end of range (24) above maximum (23): 24"),
        ("day of month 32",                   "0 0 32 * *",                "end of range (32) above maximum (31): 32"),
        ("month 13",                          "0 0 * 13 *",                "end of range (13) above maximum (12): 13"),
        ("day of week 7 is rejected",         "0 0 * * 7",                 "end of range (7) above maximum (6): 7"),
        ("day of week range to 7",            "0 0 * * 1-7",               "end of range (7) above maximum (6): 1-7"),
        ("a range backwards",                 "5-1 * * * *",               "beginning of range (5) beyond end of range (1): 5-1"),
        ("day names backwards (sat is 6)",    "0 0 * * sat-sun",           "beginning of range (6) beyond end of range (0): sat-sun"),
        ("N/step past the maximum",           "60/5 * * * *",              "beginning of range (60) beyond end of range (59): 60/5"),
        ("a zero step",                       "*/0 * * * *",               "step of range should be a positive number: */0"),
        ("the first bad field wins",          "60 24 * * *",               "end of range (60) above maximum (59): 60"),
        ("the first bad range of a list wins", "1,x,99 * * * *",           "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
    ];
    for (name, spec, want) in cases {
        match parse_schedule(spec) {
            Err(error) => assert_eq!(error.to_string(), *want, "{name}"),
            Ok(schedule) => panic!("{name}: parsed {schedule:?}"),
        }
    }
}

/// Upstream's `formatSchedule`: (row, `spec.schedule`, `spec.timeZone`, the text parsed,
/// whether `UnsupportedSchedule` applies).
#[test]
#[rustfmt::skip]
fn format_schedule_table() {
    let cases: &[(&str, &str, Option<&str>, &str, bool)] = &[
        ("no time zone",                         "0 * * * *",        None,                     "0 * * * *",                     false),
        ("a time zone becomes a TZ= prefix",     "0 * * * *",        Some("America/New_York"), "TZ=America/New_York 0 * * * *", false),
        ("an empty time zone loads (UTC)",       "0 * * * *",        Some(""),                 "TZ= 0 * * * *",                 false),
        ("a time zone that does not load",       "0 * * * *",        Some("bad timezone"),     "0 * * * *",                     false),
        ("an inline TZ= wins, with a warning",   "TZ=UTC 0 * * * ?", Some("America/New_York"), "TZ=UTC 0 * * * ?",              true),
        ("an inline CRON_TZ=, with a warning",   "CRON_TZ=UTC 0 * * * *", None,                "CRON_TZ=UTC 0 * * * *",         true),
        ("TZ anywhere warns",                    "0 * * * * TZ",     Some("Europe/Rome"),      "0 * * * * TZ",                  true),
    ];
    for (name, schedule, time_zone, spec, warn) in cases {
        let want = FormattedSchedule { spec: (*spec).into(), unsupported_time_zone: *warn };
        assert_eq!(format_schedule(&cronjob_in(schedule, *time_zone)), want, "{name}");
    }
}

/// Go's `time.LoadLocation`: (row, name, the zone's IANA name or the error).
#[test]
#[rustfmt::skip]
fn load_time_zone_table() {
    let cases: &[(&str, &str, Result<&str, TimeZoneError>)] = &[
        ("empty is UTC",                       "",                 Ok("UTC")),
        ("UTC",                                "UTC",              Ok("UTC")),
        ("an IANA name",                       "Europe/Rome",      Ok("Europe/Rome")),
        ("a link keeps its name",              "US/Eastern",       Ok("US/Eastern")),
        ("Etc/UTC is a file",                  "Etc/UTC",          Ok("Etc/UTC")),
        ("names are case-sensitive",           "america/new_york", Err(TimeZoneError::Unknown("america/new_york".into()))),
        ("utc is not UTC",                     "utc",              Err(TimeZoneError::Unknown("utc".into()))),
        ("jiff's Etc/Unknown is no zone",      "Etc/Unknown",      Err(TimeZoneError::Unknown("Etc/Unknown".into()))),
        ("a space",                            "bad timezone",     Err(TimeZoneError::Unknown("bad timezone".into()))),
        ("dot dot",                            "../etc/passwd",    Err(TimeZoneError::InvalidName)),
        ("dot dot inside",                     "Europe/../UTC",    Err(TimeZoneError::InvalidName)),
        ("a leading slash",                    "/etc/localtime",   Err(TimeZoneError::InvalidName)),
        ("a leading backslash",                "\\UTC",            Err(TimeZoneError::InvalidName)),
    ];
    for (name, zone, want) in cases {
        let got = load_time_zone(zone);
        match (want, got) {
            (Ok(iana), Ok(got)) => assert_eq!(got.iana_name(), Some(*iana), "{name}"),
            (Err(want), Err(got)) => assert_eq!(&got, want, "{name}"),
            (want, got) => panic!("{name}: want {want:?}, got {got:?}"),
        }
    }
    assert_eq!(
        TimeZoneError::Unknown("bad timezone".into()).to_string(),
        "unknown time zone bad timezone"
    );
    assert!(load_time_zone("Local").is_ok(), "Local is the process's zone");
}

/// The binary carries its own time zone database for hosts without one (upstream embeds
/// Go's `time/tzdata`): the `tzdb-bundle-always` feature is on.
#[test]
fn a_time_zone_database_is_built_in() {
    let bundled = TimeZoneDatabase::bundled();
    let rome = bundled
        .get("Europe/Rome")
        .expect("the bundled database has Europe/Rome");
    assert_eq!(rome.iana_name(), Some("Europe/Rome"));
}
