//! bosund's own settings, which `bosun daemon set KEY=VALUE` changes: kept as one record of the
//! store's `meta` table (key `daemon`), read at start and written whole on each change. Each
//! `KEY=VALUE` is parsed at the edge into a [`Setting`], so a bad one, or a key given twice, is
//! refused before anything changes. The keys: `notify` (desktop notifications), `retention`
//! (how long decided approvals, and finished runs' decision details, logs and MCP call records,
//! are kept) and `logs.max` (the most the finished runs' logs may take together).

use bosun_store::{META, Record};
use serde::{Deserialize, Serialize};

/// The keys `bosun daemon set` takes, for messages.
const KEYS: &str =
    "notify=on|off, retention=DURATION (such as 30d), logs.max=SIZE|off (such as 20G)";

/// How long decided approvals are kept when the person has not said: 30 days.
pub const DEFAULT_RETENTION_MS: u64 = 30 * 86_400_000;
/// The longest retention taken: ten years.
const MAX_RETENTION_MS: u64 = 3650 * 86_400_000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonSettings {
    /// Desktop notifications of what starts waiting for the person and of failed runs.
    #[serde(default = "on")]
    pub notify: bool,
    /// How long decided approvals, and finished runs' decision details, logs and MCP call
    /// records, are kept, in ms.
    #[serde(default = "default_retention")]
    pub retention_ms: u64,
    /// The most the finished runs' folders (their logs and MCP call records) may take together;
    /// the oldest runs' go first past it. No bound when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs_max: Option<LogsMax>,
}

fn default_retention() -> u64 {
    DEFAULT_RETENTION_MS
}

fn on() -> bool {
    true
}

impl Default for DaemonSettings {
    fn default() -> Self {
        Self {
            notify: true,
            retention_ms: DEFAULT_RETENTION_MS,
            logs_max: None,
        }
    }
}

/// bosund's settings are one record of the store's own `meta` table: its key is always
/// [`DaemonSettings::KEY`].
impl Record for DaemonSettings {
    const TABLE: &'static str = META;
    const WHAT: &'static str = "daemon settings";
    type Key = str;

    fn key(&self) -> String {
        Self::KEY.to_string()
    }
}

impl DaemonSettings {
    pub const KEY: &'static str = "daemon";

    /// These settings with `changes` made, in order.
    pub fn with(&self, changes: &[Setting]) -> Self {
        let mut next = self.clone();
        for change in changes {
            match change {
                Setting::Notify(on) => next.notify = *on,
                Setting::Retention(ms) => next.retention_ms = *ms,
                Setting::LogsMax(max) => next.logs_max = *max,
            }
        }
        next
    }
}

/// One `KEY=VALUE` of `bosun daemon set`, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// `notify=on|off`.
    Notify(bool),
    /// `retention=30d`, in ms.
    Retention(u64),
    /// `logs.max=20G`, or `logs.max=off` (`None`).
    LogsMax(Option<LogsMax>),
}

/// The most bytes the finished runs' logs may take together (`logs.max=20G`): 1 MiB at least,
/// so that a slip of the unit (`logs.max=20`) is refused rather than taken as "prune every
/// log". Made only by [`LogsMax::parse`], and read back from the store through the same check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u64", into = "u64")]
pub struct LogsMax(u64);

impl LogsMax {
    /// The least taken: 1 MiB.
    pub const LEAST: u64 = 1 << 20;

    /// A size as people write it (`20G`, `500M`), or `off` (no bound: `None`).
    pub fn parse(text: &str) -> Result<Option<Self>, SettingError> {
        let t = text.trim();
        if bosun_shared::switch::parse(t) == Some(false) {
            return Ok(None);
        }
        let bytes = bosun_shared::size::parse_size(t)
            .map_err(|e| SettingError::NotALogsMax(t.to_string(), e.to_string()))?;
        Self::try_from(bytes)
            .map(Some)
            .map_err(|why| SettingError::NotALogsMax(t.to_string(), why))
    }

    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl TryFrom<u64> for LogsMax {
    type Error = String;

    fn try_from(bytes: u64) -> Result<Self, String> {
        if bytes < Self::LEAST {
            return Err(format!(
                "it is {}, under the least of 1M, which would prune nearly every log",
                bosun_shared::size::format_size(bytes)
            ));
        }
        Ok(Self(bytes))
    }
}

impl From<LogsMax> for u64 {
    fn from(max: LogsMax) -> u64 {
        max.0
    }
}

/// A `KEY=VALUE` bosund does not take, in words that say what it does take.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("`{0}` is not KEY=VALUE; bosund's settings are {KEYS}")]
    NotKeyValue(String),
    #[error("`{0}` is not a setting of bosund; its settings are {KEYS}")]
    UnknownKey(String),
    #[error("`{key}={value}`: {key} takes on or off")]
    NotASwitch { key: &'static str, value: String },
    #[error("nothing to set; say what, as KEY=VALUE: {KEYS}")]
    Nothing,
    #[error("`retention={0}`: retention takes a time from 1s to 3650d, such as 30d or 12h")]
    NotARetention(String),
    /// A `logs.max` that is not a size of 1M or more, nor `off`: the text, and why.
    #[error(
        "`logs.max={0}`: {1}; logs.max takes a size from 1M, such as 20G or 500M, or off for no bound"
    )]
    NotALogsMax(String, String),
    /// A key given twice, or a line with no key: in the words of the one reader of such lists.
    #[error("{0}")]
    List(bosun_shared::settings::KeyValueError),
}

impl Setting {
    /// One `KEY=VALUE`, already split.
    fn parse(key: &str, value: &str) -> Result<Self, SettingError> {
        match key {
            "notify" => bosun_shared::switch::parse(value)
                .map(Setting::Notify)
                .ok_or_else(|| SettingError::NotASwitch {
                    key: "notify",
                    value: value.trim().to_string(),
                }),
            "retention" => bosun_shared::time::parse_duration(value)
                .ok()
                .map(bosun_shared::time::millis)
                .filter(|ms| (1_000..=MAX_RETENTION_MS).contains(ms))
                .map(Setting::Retention)
                .ok_or_else(|| SettingError::NotARetention(value.trim().to_string())),
            "logs.max" => LogsMax::parse(value).map(Setting::LogsMax),
            other => Err(SettingError::UnknownKey(other.to_string())),
        }
    }
}

/// Every `KEY=VALUE`, or the first that is wrong; a key given twice is refused, since which of
/// the two the person meant cannot be known.
pub fn parse(texts: &[String]) -> Result<Vec<Setting>, SettingError> {
    use bosun_shared::settings::{self, KeyValueError};
    if texts.is_empty() {
        return Err(SettingError::Nothing);
    }
    let pairs = settings::parse(texts).map_err(|e| match e {
        KeyValueError::NotKeyValue(text) => SettingError::NotKeyValue(text),
        e @ (KeyValueError::NoKey(_) | KeyValueError::Twice { .. }) => SettingError::List(e),
    })?;
    pairs
        .iter()
        .map(|p| Setting::parse(p.key, p.value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(texts: &[&str]) -> Result<Vec<Setting>, SettingError> {
        parse(&texts.iter().map(|t| t.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn notify_takes_on_or_off_in_its_spellings() {
        assert_eq!(set(&["notify=off"]), Ok(vec![Setting::Notify(false)]));
        assert_eq!(set(&["notify = on"]), Ok(vec![Setting::Notify(true)]));
        let changes = set(&["notify=OFF", "retention=7d"]).expect("valid");
        assert!(!DaemonSettings::default().with(&changes).notify);
    }

    /// Issue 44: `bosun daemon set retention=7d retention=8d` kept 8d without a word.
    #[test]
    fn a_key_given_twice_is_refused_naming_it() {
        let e = set(&["retention=7d", "retention=8d"]).expect_err("twice");
        assert_eq!(
            e.to_string(),
            "`retention` is given twice (`retention=7d` and `retention=8d`), so nothing was changed; give each key once"
        );
        assert!(set(&["notify=off", "notify = on"]).is_err());
    }

    #[test]
    fn a_bad_setting_is_refused_with_the_keys_there_are() {
        let cases = [
            (
                vec!["retain=7d"],
                "`retain` is not a setting of bosund; its settings are notify=on|off, retention=DURATION (such as 30d), logs.max=SIZE|off (such as 20G)",
            ),
            (
                vec!["notify"],
                "`notify` is not KEY=VALUE; bosund's settings are notify=on|off, retention=DURATION (such as 30d), logs.max=SIZE|off (such as 20G)",
            ),
            (
                vec!["retention=7d", "notify=maybe"],
                "`notify=maybe`: notify takes on or off",
            ),
            (
                vec![],
                "nothing to set; say what, as KEY=VALUE: notify=on|off, retention=DURATION (such as 30d), logs.max=SIZE|off (such as 20G)",
            ),
            (
                vec!["retention=0s"],
                "`retention=0s`: retention takes a time from 1s to 3650d, such as 30d or 12h",
            ),
            (
                vec!["logs.max=20"],
                "`logs.max=20`: it is 20 bytes, under the least of 1M, which would prune nearly every log; logs.max takes a size from 1M, such as 20G or 500M, or off for no bound",
            ),
            (
                vec!["logs.max=1.5G"],
                "`logs.max=1.5G`: `1.5G` is not a whole number; write a size such as 1G, 500M, 64k or a number of bytes (1536M for 1.5G); logs.max takes a size from 1M, such as 20G or 500M, or off for no bound",
            ),
        ];
        for (texts, words) in cases {
            let e = set(&texts).expect_err("refused");
            assert_eq!(e.to_string(), words, "{texts:?}");
        }
    }

    #[test]
    fn a_record_without_a_key_it_did_not_know_reads_as_the_default() {
        let read: DaemonSettings = serde_json::from_str("{}").expect("reads");
        assert_eq!(read, DaemonSettings::default());
        assert!(
            read.notify,
            "notifications are on until the person turns them off"
        );
        assert_eq!(read.retention_ms, 30 * 86_400_000, "30 days");
        let set = parse(&["retention=12h".to_string()]).expect("valid");
        assert_eq!(set, [Setting::Retention(12 * 3_600_000)]);
        assert_eq!(read.logs_max, None, "no bound on the logs' size unless set");
    }

    #[test]
    fn logs_max_is_a_size_of_a_mebibyte_or_more_or_off() {
        let set = set(&["logs.max=20G"]).expect("valid");
        let max = LogsMax::try_from(20u64 << 30).expect("20G");
        assert_eq!(set, [Setting::LogsMax(Some(max))]);
        let settings = DaemonSettings::default().with(&set);
        assert_eq!(settings.logs_max.map(LogsMax::bytes), Some(20 << 30));
        let off = settings.with(&parse(&["logs.max=off".to_string()]).expect("off"));
        assert_eq!(off.logs_max, None);
        // Kept as a number of bytes, and read back through the same check.
        let json = serde_json::to_string(&settings).expect("json");
        assert!(json.contains("\"logs_max\":21474836480"), "{json}");
        assert_eq!(
            serde_json::from_str::<DaemonSettings>(&json).expect("reads"),
            settings
        );
        assert!(serde_json::from_str::<DaemonSettings>(r#"{"logs_max":5}"#).is_err());
    }
}
