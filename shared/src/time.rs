//! Wall-clock times as milliseconds since the Unix epoch, and durations written the way people
//! type them ("10m", "1h30m").
//!
//! [`parse_duration`] is the one parser of durations people write, for the command line, the web
//! UI's API and bosund's settings alike. A duration with a rule of its own is a type made only
//! by its parsers: [`TimeCap`] (a run's, at most a week) and [`StopGrace`] (a rung of the stop
//! ladder, at most an hour), each made from text ([`TimeCap::parse`]) or from the milliseconds
//! the wire carries ([`TimeCap::from_millis`]), so a value out of its range is refused where it
//! comes in, never wrapped or taken.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A point in time, in milliseconds since the Unix epoch. Stored as an absolute time so it means
/// the same after a restart.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    pub fn now() -> Self {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(millis)
            .unwrap_or(0);
        Self(ms)
    }

    pub fn from_millis(ms: u64) -> Self {
        Self(ms)
    }

    pub fn as_millis(self) -> u64 {
        self.0
    }

    /// RFC 3339 in UTC with milliseconds, e.g. `2026-11-30T23:51:02.123Z`.
    pub fn rfc3339(self) -> String {
        humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(self.0)).to_string()
    }

    /// The time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rfc3339())
    }
}

/// The longest time cap of a run (and so of an agent's runs): a week.
pub const MAX_TIME_CAP: Duration = Duration::from_secs(7 * 24 * 3600);

/// The longest wait of a rung of the stop ladder: an hour. A program that has not ended an hour
/// after SIGINT is not going to; and without a bound a grace of `u64::MAX` milliseconds would
/// leave a program that ignores SIGINT never escalated.
pub const MAX_STOP_GRACE: Duration = Duration::from_secs(3600);

/// Milliseconds of a duration, for the wire and the store; past `u64::MAX` (half a billion
/// years) it stays there rather than wrap.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A run's time cap: longer than zero and at most [`MAX_TIME_CAP`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeCap(Duration);

impl TimeCap {
    /// Parses a time cap as people write it (`30m`, `2h`).
    pub fn parse(text: &str) -> Result<Self, TimeCapError> {
        Self::new(parse_duration(text)?)
    }

    /// A time cap as the wire and the store carry it, in milliseconds.
    pub fn from_millis(ms: u64) -> Result<Self, TimeCapError> {
        Self::new(Duration::from_millis(ms))
    }

    fn new(d: Duration) -> Result<Self, TimeCapError> {
        if d.is_zero() {
            return Err(TimeCapError::Zero);
        }
        if d > MAX_TIME_CAP {
            return Err(TimeCapError::OverAWeek);
        }
        Ok(Self(d))
    }

    pub fn as_millis(self) -> u64 {
        millis(self.0)
    }
}

/// How long a rung of the stop ladder waits for the program before the next signal: at most
/// [`MAX_STOP_GRACE`] (zero: the next signal at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopGrace(Duration);

impl StopGrace {
    /// Parses a grace as people write it (`10s`, `2m`).
    pub fn parse(text: &str) -> Result<Self, StopGraceError> {
        Self::new(parse_duration(text)?)
    }

    /// A grace as the wire and the store carry it, in milliseconds.
    pub fn from_millis(ms: u64) -> Result<Self, StopGraceError> {
        Self::new(Duration::from_millis(ms))
    }

    fn new(d: Duration) -> Result<Self, StopGraceError> {
        if d > MAX_STOP_GRACE {
            return Err(StopGraceError::OverAnHour);
        }
        Ok(Self(d))
    }

    pub fn as_millis(self) -> u64 {
        millis(self.0)
    }
}

/// Parses a duration as people write it: `90s`, `10m`, `1h30m`, `2h`. A bare number is refused,
/// because "10" could mean seconds or minutes; so is one too long to count in milliseconds.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) {
        return Err(DurationError::NoUnit(text.into()));
    }
    let d = humantime::parse_duration(text).map_err(|why| DurationError::NotADuration {
        text: text.into(),
        why,
    })?;
    if d.is_zero() {
        return Err(DurationError::Zero(text.into()));
    }
    if u64::try_from(d.as_millis()).is_err() {
        return Err(DurationError::TooLong(text.into()));
    }
    Ok(d)
}

/// Why [`parse_duration`] refused a duration; each carries the text as written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DurationError {
    /// A bare number: seconds or minutes could be meant.
    #[error("`{0}` has no unit: write it with one, such as {0}s or {0}m")]
    NoUnit(String),
    #[error("`{text}` is not a duration ({why}); write it such as 90s, 10m or 1h30m")]
    NotADuration {
        text: String,
        why: humantime::DurationError,
    },
    #[error("`{0}` is zero; a duration must be longer than that")]
    Zero(String),
    /// Too long to count in milliseconds.
    #[error("`{0}` is too long to be a duration bosun can count")]
    TooLong(String),
}

/// Why a time cap was refused ([`TimeCap::parse`], [`TimeCap::from_millis`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TimeCapError {
    #[error(transparent)]
    Duration(#[from] DurationError),
    #[error("a time cap must be longer than zero")]
    Zero,
    /// Past [`MAX_TIME_CAP`].
    #[error("a time cap can be a week at most (7d)")]
    OverAWeek,
}

/// Why a stop grace was refused ([`StopGrace::parse`], [`StopGrace::from_millis`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StopGraceError {
    #[error(transparent)]
    Duration(#[from] DurationError),
    /// Past [`MAX_STOP_GRACE`].
    #[error("a stop grace can be an hour at most (1h)")]
    OverAnHour,
}

/// Writes a duration short and exact: `10m`, `1h 30m`, `1.5s` becomes `1s 500ms`.
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(Duration::from_millis(millis(d))).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_people_write_them() {
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert!(
            parse_duration("10")
                .unwrap_err()
                .to_string()
                .contains("has no unit")
        );
        assert!(
            parse_duration("soon")
                .unwrap_err()
                .to_string()
                .contains("is not a duration")
        );
        assert!(
            parse_duration("0s")
                .unwrap_err()
                .to_string()
                .contains("zero")
        );
        assert_eq!(format_duration(Duration::from_secs(600)), "10m");
    }

    /// Issue 25: `18446744073709552s` became a 384 ms cap (`as_millis() as u64` wrapped), and a
    /// run took `400d` or a grace of `u64::MAX` milliseconds.
    #[test]
    fn bounded_durations_refuse_what_is_out_of_their_range() {
        assert!(
            parse_duration("18446744073709552s")
                .unwrap_err()
                .to_string()
                .contains("too long")
        );
        assert!(
            TimeCap::parse("18446744073709552s")
                .unwrap_err()
                .to_string()
                .contains("too long")
        );
        assert!(
            TimeCap::parse("400d")
                .unwrap_err()
                .to_string()
                .contains("a time cap can be a week at most")
        );
        assert_eq!(
            TimeCap::parse("7d").map(TimeCap::as_millis),
            Ok(604_800_000)
        );
        assert!(
            TimeCap::from_millis(0)
                .unwrap_err()
                .to_string()
                .contains("longer than zero")
        );
        assert!(
            TimeCap::from_millis(u64::MAX)
                .unwrap_err()
                .to_string()
                .contains("a week at most")
        );
        assert!(
            StopGrace::parse("9999999999d")
                .unwrap_err()
                .to_string()
                .contains("an hour at most")
        );
        assert!(
            StopGrace::from_millis(u64::MAX)
                .unwrap_err()
                .to_string()
                .contains("an hour at most")
        );
        assert_eq!(StopGrace::from_millis(0).map(StopGrace::as_millis), Ok(0));
        assert_eq!(
            StopGrace::parse("1h").map(StopGrace::as_millis),
            Ok(3_600_000)
        );
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }

    #[test]
    fn timestamps_print_in_utc() {
        assert_eq!(
            Timestamp::from_millis(0).rfc3339(),
            "1970-01-01T00:00:00.000Z"
        );
    }
}
