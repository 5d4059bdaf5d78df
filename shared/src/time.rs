//! Wall-clock times as milliseconds since the Unix epoch, and durations written the way people
//! type them ("10m", "1h30m").

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
            .map(|d| d.as_millis() as u64)
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

/// Parses a duration as people write it: `90s`, `10m`, `1h30m`, `2h`. A bare number is refused,
/// because "10" could mean seconds or minutes.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "`{text}` has no unit: write it with one, such as {text}s or {text}m"
        ));
    }
    let d = humantime::parse_duration(text).map_err(|e| {
        format!("`{text}` is not a duration ({e}); write it such as 90s, 10m or 1h30m")
    })?;
    if d.is_zero() {
        return Err(format!(
            "`{text}` is zero; a duration must be longer than that"
        ));
    }
    Ok(d)
}

/// Writes a duration short and exact: `10m`, `1h 30m`, `1.5s` becomes `1s 500ms`.
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(Duration::from_millis(d.as_millis() as u64)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_people_write_them() {
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("10").unwrap_err().contains("has no unit"));
        assert!(
            parse_duration("soon")
                .unwrap_err()
                .contains("is not a duration")
        );
        assert!(parse_duration("0s").unwrap_err().contains("zero"));
        assert_eq!(format_duration(Duration::from_secs(600)), "10m");
    }

    #[test]
    fn timestamps_print_in_utc() {
        assert_eq!(
            Timestamp::from_millis(0).rfc3339(),
            "1970-01-01T00:00:00.000Z"
        );
    }
}
