//! The pure heart of the CronJob controller: which schedule a CronJob runs on, when it was
//! last due, whether that slot is still unmet, how long until the next one, and the name and
//! annotation of the Job for a slot. Nothing here does I/O or reads a clock: every function
//! takes plain data (a k8s-openapi `batch/v1` CronJob, a parsed [`schedule::Schedule`]) and an
//! explicit `now`, and returns plain data, with the events upstream would record handed back
//! as values. So the controller built on top only carries the decisions out, and every rule
//! is table-tested against upstream's own test tables, whatever the machine's clock or zone.
//!
//! * [`schedule`]: robfig/cron v3's parser and `Next` (spec section 4), upstream's
//!   `formatSchedule` and `time.LoadLocation`.
//! * [`times`]: `utils.go`'s schedule arithmetic (section 5) and the Job's name and
//!   scheduled-timestamp annotation (section 7.1).
//! * [`jobs`]: which Jobs are the CronJob's, how each finished, which the history limits
//!   remove (sections 6 step 1 and 8.1).
//! * [`plan`]: whether a run starts now (section 6, steps 3 to 12), as events and an outcome.
//! * [`template`]: the run's Job (section 7.1).
//!
//! Both rest on `golang`, the few pieces of Go's standard library whose exact behaviour shows
//! through upstream's rules (`time.Date`, `time.ParseDuration`, `strconv.Atoi`, quoting,
//! `time.Duration` arithmetic).

mod golang;
pub mod jobs;
pub mod plan;
pub mod schedule;
pub mod template;
pub mod times;

#[cfg(test)]
mod tests;
