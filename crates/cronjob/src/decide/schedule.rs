//! The schedule a CronJob runs on (`docs/spec/cronjob.md` section 4): robfig/cron v3.0.1's
//! `ParseStandard`, as v1.35+ calls it through `ParseCronScheduleWithPanicRecovery`, its
//! `SpecSchedule.Next` and `ConstantDelaySchedule.Next`, upstream's `formatSchedule`, and
//! `time.LoadLocation` for the zones. Upstream stores a schedule in no object: every sync
//! parses `spec.schedule` again, so what it accepts, the error texts it gives (they reach
//! events) and the instants `Next` picks (DST and the five-year limit included) are
//! reproduced exactly rather than borrowed from a Rust cron crate with other rules.

use jiff::{SignedDuration, Timestamp, Zoned, tz::TimeZone};
use k8s_openapi::api::batch::v1::CronJob;

use super::golang::{self, NANOS_PER_HOUR, NANOS_PER_MINUTE, NANOS_PER_SECOND, Wall};
pub use super::golang::{AtoiError, AtoiErrorKind, DurationError};

/// A parsed schedule: robfig's `Schedule` interface, one of its two implementations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// Five cron fields or a descriptor such as `@daily` (`*SpecSchedule`).
    Spec(SpecSchedule),
    /// `@every <duration>` (`ConstantDelaySchedule`).
    ConstantDelay(ConstantDelaySchedule),
}

impl Schedule {
    /// The first activation strictly after `after` (robfig's `Schedule.Next`), in `after`'s
    /// zone, or `None` where upstream gets Go's zero time (nothing within five years, for a
    /// [`SpecSchedule`]).
    pub fn next(&self, after: &Zoned) -> Option<Zoned> {
        match self {
            Schedule::Spec(spec) => spec.next(after),
            Schedule::ConstantDelay(delay) => delay.next(after),
        }
    }
}

/// The star bit: set on a field written `*` or `?` (kept by a step of 1), it makes day of
/// month and day of week combine with AND.
const STAR_BIT: u64 = 1 << 63;

/// A cron schedule as robfig's `SpecSchedule`: one bit per allowed value of each field (plus
/// the star bit), and the zone it runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecSchedule {
    second: u64,
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
    /// The inline `TZ=`/`CRON_TZ=` zone; `None` is Go's `time.Local`, which robfig reads as
    /// "the zone of the time given to `Next`".
    location: Option<TimeZone>,
}

impl SpecSchedule {
    /// robfig's `SpecSchedule.Next`: the first matching second strictly after `after` (the
    /// search starts at the next whole second), computed on the wall clock of the schedule's
    /// zone, or of `after`'s zone when the schedule names none, and returned in `after`'s
    /// zone. `None` (Go's zero time) when nothing matches within five years (`59 23 31 2 *`).
    ///
    /// Candidates are built with Go's `time.Date`, so DST is as upstream: a wall time that
    /// does not exist (a spring-forward gap) is skipped, one that repeats (a fall-back fold)
    /// can fire twice, and a day whose midnight does not exist is snapped back to the hour.
    pub fn next(&self, after: &Zoned) -> Option<Zoned> {
        let zone = self.location.as_ref().unwrap_or(after.time_zone());
        let wall = |t: Timestamp| Wall::of(t, zone);
        let start = after.timestamp();
        let mut t = golang::checked_add(start, NANOS_PER_SECOND - golang::nanosecond(start))?;
        // Whether a field has been moved on (the smaller ones then restart from zero).
        let mut added = false;
        let year_limit = wall(t).year + 5;
        'wrap: loop {
            if wall(t).year > year_limit {
                return None;
            }
            while self.month & bit(wall(t).month) == 0 {
                if !added {
                    added = true;
                    let w = wall(t);
                    t = golang::date(w.year, w.month, 1, 0, 0, 0, zone)?;
                }
                let w = wall(t);
                t = golang::date(w.year, w.month + 1, w.day, w.hour, w.minute, w.second, zone)?;
                if wall(t).month == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(&wall(t)) {
                if !added {
                    added = true;
                    let w = wall(t);
                    t = golang::date(w.year, w.month, w.day, 0, 0, 0, zone)?;
                }
                let w = wall(t);
                t = golang::date(w.year, w.month, w.day + 1, w.hour, w.minute, w.second, zone)?;
                // A midnight moved by DST: forward to the next hour 0, or back to this one.
                let hour = wall(t).hour;
                if hour != 0 {
                    let shift = if hour > 12 { 24 - hour } else { -hour };
                    t = golang::checked_add(t, shift * NANOS_PER_HOUR)?;
                }
                if wall(t).day == 1 {
                    continue 'wrap;
                }
            }
            while self.hour & bit(wall(t).hour) == 0 {
                if !added {
                    added = true;
                    let w = wall(t);
                    t = golang::date(w.year, w.month, w.day, w.hour, 0, 0, zone)?;
                }
                t = golang::checked_add(t, NANOS_PER_HOUR)?;
                if wall(t).hour == 0 {
                    continue 'wrap;
                }
            }
            while self.minute & bit(wall(t).minute) == 0 {
                if !added {
                    added = true;
                    t = golang::truncate(t, NANOS_PER_MINUTE)?;
                }
                t = golang::checked_add(t, NANOS_PER_MINUTE)?;
                if wall(t).minute == 0 {
                    continue 'wrap;
                }
            }
            while self.second & bit(wall(t).second) == 0 {
                if !added {
                    added = true;
                    t = golang::truncate(t, NANOS_PER_SECOND)?;
                }
                t = golang::checked_add(t, NANOS_PER_SECOND)?;
                if wall(t).second == 0 {
                    continue 'wrap;
                }
            }
            return Some(t.to_zoned(after.time_zone().clone()));
        }
    }

    /// robfig's `dayMatches`: with a star in day of month or day of week both must match
    /// (AND); with both restricted either may (OR), as classic cron.
    fn day_matches(&self, wall: &Wall) -> bool {
        let dom = self.dom & bit(wall.day) != 0;
        let dow = self.dow & bit(wall.weekday) != 0;
        if self.dom & STAR_BIT != 0 || self.dow & STAR_BIT != 0 {
            dom && dow
        } else {
            dom || dow
        }
    }
}

/// The bit of a field's value (every value is below 60).
fn bit(value: i64) -> u64 {
    1 << value
}

/// robfig's `ConstantDelaySchedule`: `@every <duration>`, whole seconds, at least one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstantDelaySchedule {
    /// The delay in nanoseconds, a positive multiple of a second.
    delay_nanos: i64,
}

impl ConstantDelaySchedule {
    /// robfig's `Every`: less than a second becomes a second, and the part below a second is
    /// dropped.
    pub fn every(duration: SignedDuration) -> ConstantDelaySchedule {
        let nanos = i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX);
        let nanos = nanos.max(NANOS_PER_SECOND);
        ConstantDelaySchedule {
            delay_nanos: nanos - nanos % NANOS_PER_SECOND,
        }
    }

    /// The time between activations.
    pub fn delay(&self) -> SignedDuration {
        SignedDuration::from_nanos(self.delay_nanos)
    }

    /// robfig's `ConstantDelaySchedule.Next`: `after` plus the delay, rounded down to its
    /// second (in `after`'s zone, which plays no part). `None` past jiff's range.
    pub fn next(&self, after: &Zoned) -> Option<Zoned> {
        let start = after.timestamp();
        golang::checked_add(start, self.delay_nanos - golang::nanosecond(start))
            .map(|t| t.to_zoned(after.time_zone().clone()))
    }
}

/// Why a schedule does not parse, worded as upstream words it (the text reaches the
/// `UnparseableSchedule` and `UnParseableCronJobSchedule` events).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A `TZ=`/`CRON_TZ=` prefix with no space after it: `ParseStandard` slices the spec up
    /// to the first space, finds none and panics; `ParseCronScheduleWithPanicRecovery` turns
    /// the panic into this error (v1.35+; an earlier manager crashed).
    #[error("invalid schedule format: runtime error: slice bounds out of range [:-1]")]
    ZoneWithoutSpace,
    /// The spec is the empty string.
    #[error("empty spec string")]
    Empty,
    /// The inline zone does not load.
    #[error("provided bad location {zone}: {source}")]
    BadLocation {
        /// The zone as written.
        zone: String,
        /// Why it does not load.
        source: TimeZoneError,
    },
    /// An `@` descriptor other than the known ones.
    #[error("unrecognized descriptor: {0}")]
    UnrecognizedDescriptor(String),
    /// `@every` with a duration Go does not parse.
    #[error("failed to parse duration {descriptor}: {source}")]
    Duration {
        /// The whole descriptor, `@every ` included.
        descriptor: String,
        /// Go's `time.ParseDuration` error.
        source: DurationError,
    },
    /// Not five whitespace-separated fields (Go prints the fields as a slice: `[a b c]`).
    #[error("expected exactly 5 fields, found {}: [{}]", .0.len(), .0.join(" "))]
    FieldCount(Vec<String>),
    /// A range with more than one `-`.
    #[error("too many hyphens: {0}")]
    TooManyHyphens(String),
    /// A range with more than one `/`.
    #[error("too many slashes: {0}")]
    TooManySlashes(String),
    /// A value that is neither a name of its field nor a decimal integer.
    #[error("failed to parse int from {expr}: {source}")]
    Int {
        /// The value as written.
        expr: String,
        /// Go's `strconv.Atoi` error.
        source: AtoiError,
    },
    /// A negative value (only a step can be one: a leading `-` splits a range).
    #[error("negative number ({number}) not allowed: {expr}")]
    Negative {
        /// The value.
        number: i64,
        /// The value as written.
        expr: String,
    },
    /// A range starting below its field's minimum.
    #[error("beginning of range ({start}) below minimum ({min}): {expr}")]
    BelowMinimum {
        /// The start of the range.
        start: u64,
        /// The field's minimum.
        min: u64,
        /// The range as written.
        expr: String,
    },
    /// A range ending above its field's maximum.
    #[error("end of range ({end}) above maximum ({max}): {expr}")]
    AboveMaximum {
        /// The end of the range.
        end: u64,
        /// The field's maximum.
        max: u64,
        /// The range as written.
        expr: String,
    },
    /// A range starting after it ends.
    #[error("beginning of range ({start}) beyond end of range ({end}): {expr}")]
    BeyondEnd {
        /// The start of the range.
        start: u64,
        /// The end of the range.
        end: u64,
        /// The range as written.
        expr: String,
    },
    /// A step of zero.
    #[error("step of range should be a positive number: {0}")]
    ZeroStep(String),
}

/// The values a field takes, and its names (robfig's `bounds`).
struct Bounds {
    min: u64,
    max: u64,
    /// Lower-case names and their values.
    names: &'static [(&'static str, u64)],
}

/// Seconds: not a field of a standard spec, always `0`.
const SECONDS: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
/// Minutes.
const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
/// Hours.
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
/// Days of the month.
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
/// Months, `jan` to `dec`.
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
/// Days of the week, Sunday 0 (`sun` to `sat`; 7 is out of range).
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// `parsers.ParseCronScheduleWithPanicRecovery(spec)`: robfig's `ParseStandard`
/// (minute, hour, day of month, month, day of week; descriptors allowed), with the one input
/// that panics upstream ([`ParseError::ZoneWithoutSpace`]) an error like the others.
///
/// In order: the empty string is an error; a `TZ=` or `CRON_TZ=` prefix names the zone up to
/// the first space (loaded as [`load_time_zone`] does; `Local` keeps the zone of the times
/// given to `Next`), and the rest, trimmed, is parsed in it; an `@` starts a descriptor;
/// anything else is five fields, each parsed in turn, the first error winning.
pub fn parse_schedule(spec: &str) -> Result<Schedule, ParseError> {
    if spec.is_empty() {
        return Err(ParseError::Empty);
    }
    let mut spec = spec;
    let mut location = None;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let zone_start = spec.find('=').map_or(0, |eq| eq + 1);
        let Some((space, zone)) = spec
            .find(' ')
            .and_then(|space| Some((space, spec.get(zone_start..space)?)))
        else {
            return Err(ParseError::ZoneWithoutSpace);
        };
        location = load_location(zone).map_err(|source| ParseError::BadLocation {
            zone: zone.to_owned(),
            source,
        })?;
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec, location);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    let [minute, hour, dom, month, dow] = fields.as_slice() else {
        return Err(ParseError::FieldCount(
            fields.iter().map(|field| (*field).to_owned()).collect(),
        ));
    };
    Ok(Schedule::Spec(SpecSchedule {
        second: get_field("0", &SECONDS)?,
        minute: get_field(minute, &MINUTES)?,
        hour: get_field(hour, &HOURS)?,
        dom: get_field(dom, &DOM)?,
        month: get_field(month, &MONTHS)?,
        dow: get_field(dow, &DOW)?,
        location,
    }))
}

/// robfig's `getField`: the union of a comma-separated list of ranges (empty list elements
/// are dropped, so `,` alone allows nothing and the schedule never fires).
fn get_field(field: &str, bounds: &Bounds) -> Result<u64, ParseError> {
    field
        .split(',')
        .filter(|expr| !expr.is_empty())
        .try_fold(0, |bits, expr| Ok(bits | get_range(expr, bounds)?))
}

/// robfig's `getRange`: `*` or `?` (the whole field, with the star bit), `N`, `N-M`, each
/// optionally `/step`; `N/step` means `N-max/step` and a step above 1 clears the star bit.
/// The range is parsed before the slashes are counted, so the first error is upstream's.
fn get_range(expr: &str, bounds: &Bounds) -> Result<u64, ParseError> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let range = range_and_step.first().copied().unwrap_or_default();
    let low_and_high: Vec<&str> = range.split('-').collect();
    let low = low_and_high.first().copied().unwrap_or_default();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut extra) = if low == "*" || low == "?" {
        // Anything after a star's hyphen is ignored, as upstream.
        (bounds.min, bounds.max, STAR_BIT)
    } else {
        let start = parse_int_or_name(low, bounds)?;
        match low_and_high.as_slice() {
            [_] => (start, start, 0),
            [_, high] => (start, parse_int_or_name(high, bounds)?, 0),
            _ => return Err(ParseError::TooManyHyphens(expr.to_owned())),
        }
    };
    let step = match range_and_step.as_slice() {
        [_] => 1,
        [_, step] => {
            let step = must_parse_int(step)?;
            if single {
                end = bounds.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(ParseError::TooManySlashes(expr.to_owned())),
    };
    if start < bounds.min {
        return Err(ParseError::BelowMinimum {
            start,
            min: bounds.min,
            expr: expr.to_owned(),
        });
    }
    if end > bounds.max {
        return Err(ParseError::AboveMaximum {
            end,
            max: bounds.max,
            expr: expr.to_owned(),
        });
    }
    if start > end {
        return Err(ParseError::BeyondEnd {
            start,
            end,
            expr: expr.to_owned(),
        });
    }
    if step == 0 {
        return Err(ParseError::ZeroStep(expr.to_owned()));
    }
    Ok(get_bits(start, end, step) | extra)
}

/// robfig's `parseIntOrName`: a name of the field (any case), or a number.
fn parse_int_or_name(expr: &str, bounds: &Bounds) -> Result<u64, ParseError> {
    let lower = expr.to_lowercase();
    match bounds.names.iter().find(|(name, _)| *name == lower) {
        Some(&(_, value)) => Ok(value),
        None => must_parse_int(expr),
    }
}

/// robfig's `mustParseInt`: Go's `strconv.Atoi`, then no negatives.
fn must_parse_int(expr: &str) -> Result<u64, ParseError> {
    let number = golang::atoi(expr).map_err(|source| ParseError::Int {
        expr: expr.to_owned(),
        source,
    })?;
    u64::try_from(number).map_err(|_| ParseError::Negative {
        number,
        expr: expr.to_owned(),
    })
}

/// robfig's `getBits`: the bits of `min..=max` every `step` (bounds already checked, so
/// `max` is below 60).
fn get_bits(min: u64, max: u64, step: u64) -> u64 {
    if step == 1 {
        return !(u64::MAX << (max + 1)) & (u64::MAX << min);
    }
    let mut bits = 0;
    let mut value = Some(min);
    while let Some(i) = value.filter(|i| *i <= max) {
        bits |= 1 << i;
        value = i.checked_add(step);
    }
    bits
}

/// Every value of a field, with the star bit (robfig's `all`).
fn all(bounds: &Bounds) -> u64 {
    get_bits(bounds.min, bounds.max, 1) | STAR_BIT
}

/// robfig's `parseDescriptor`: the named schedules (matched exactly: no trailing space, no
/// other case) and `@every <Go duration>`.
fn parse_descriptor(descriptor: &str, location: Option<TimeZone>) -> Result<Schedule, ParseError> {
    let first = |bounds: &Bounds| 1 << bounds.min;
    let spec = |minute, hour, dom, month, dow| {
        Ok(Schedule::Spec(SpecSchedule {
            second: first(&SECONDS),
            minute,
            hour,
            dom,
            month,
            dow,
            location,
        }))
    };
    match descriptor {
        "@yearly" | "@annually" => spec(
            first(&MINUTES),
            first(&HOURS),
            first(&DOM),
            first(&MONTHS),
            all(&DOW),
        ),
        "@monthly" => spec(
            first(&MINUTES),
            first(&HOURS),
            first(&DOM),
            all(&MONTHS),
            all(&DOW),
        ),
        "@weekly" => spec(
            first(&MINUTES),
            first(&HOURS),
            all(&DOM),
            all(&MONTHS),
            first(&DOW),
        ),
        "@daily" | "@midnight" => spec(
            first(&MINUTES),
            first(&HOURS),
            all(&DOM),
            all(&MONTHS),
            all(&DOW),
        ),
        "@hourly" => spec(
            first(&MINUTES),
            all(&HOURS),
            all(&DOM),
            all(&MONTHS),
            all(&DOW),
        ),
        _ => match descriptor.strip_prefix("@every ") {
            Some(duration) => golang::parse_duration(duration)
                .map(|nanos| {
                    Schedule::ConstantDelay(ConstantDelaySchedule::every(
                        SignedDuration::from_nanos(nanos),
                    ))
                })
                .map_err(|source| ParseError::Duration {
                    descriptor: descriptor.to_owned(),
                    source,
                }),
            None => Err(ParseError::UnrecognizedDescriptor(descriptor.to_owned())),
        },
    }
}

/// Why a time zone name does not load, worded as Go's `time.LoadLocation`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeZoneError {
    /// A name containing `..` or starting with `/` or `\`.
    #[error("time: invalid location name")]
    InvalidName,
    /// No zone of that name (names are case-sensitive, as the file names Go reads).
    #[error("unknown time zone {0}")]
    Unknown(String),
}

/// Go's `time.LoadLocation(name)`: `""` and `UTC` are UTC, `Local` is the process's local
/// zone, anything else an IANA name, looked up case-sensitively in the system database
/// (`/usr/share/zoneinfo`, or `TZDIR`), then in the copy built into the binary (upstream's
/// binary embeds Go's `time/tzdata` for hosts without one).
pub fn load_time_zone(name: &str) -> Result<TimeZone, TimeZoneError> {
    load_location(name).map(|location| location.unwrap_or_else(TimeZone::system))
}

/// [`load_time_zone`], keeping `Local` apart (`None`, Go's `time.Local`): robfig reads a
/// schedule in `Local` on the wall clock of the time it is given.
fn load_location(name: &str) -> Result<Option<TimeZone>, TimeZoneError> {
    match name {
        "" | "UTC" => return Ok(Some(TimeZone::UTC)),
        "Local" => return Ok(None),
        _ => {}
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err(TimeZoneError::InvalidName);
    }
    [jiff::tz::db(), &jiff::tz::TimeZoneDatabase::bundled()]
        .into_iter()
        .filter_map(|db| db.get(name).ok())
        // jiff matches names without regard to case and knows `Etc/Unknown`; Go does neither.
        .find(|zone| zone.iana_name() == Some(name) && !zone.is_unknown())
        .map(Some)
        .ok_or_else(|| TimeZoneError::Unknown(name.to_owned()))
}

/// The schedule text a sync parses, and whether upstream warns about it (`formatSchedule`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormattedSchedule {
    /// `spec.schedule`, or `TZ=<spec.timeZone> <spec.schedule>` when the zone is set and
    /// loads and the schedule names none of its own.
    pub spec: String,
    /// The schedule contains `TZ` (an inline `TZ=`/`CRON_TZ=` zone, which then wins over
    /// `spec.timeZone`): upstream records the Warning `UnsupportedSchedule` on every sync.
    pub unsupported_time_zone: bool,
}

/// Upstream's `formatSchedule(cj, recorder)`, the warning returned rather than recorded. A
/// `spec.timeZone` that does not load leaves the schedule as is (the sync has stopped on
/// `UnknownTimeZone` before it gets here).
pub fn format_schedule(cronjob: &CronJob) -> FormattedSchedule {
    let schedule = cronjob.spec.schedule.as_str();
    if schedule.contains("TZ") {
        return FormattedSchedule {
            spec: schedule.to_owned(),
            unsupported_time_zone: true,
        };
    }
    let spec = match cronjob.spec.time_zone.as_deref() {
        Some(zone) if load_time_zone(zone).is_ok() => format!("TZ={zone} {schedule}"),
        _ => schedule.to_owned(),
    };
    FormattedSchedule {
        spec,
        unsupported_time_zone: false,
    }
}
