//! Output bytes in JSON, kept exactly as the program wrote them, and the numbered chunk of a
//! run's output they travel in ([`OutputChunk`]).
//!
//! On the sockets output travels in binary frames ([`super::fast`]); JSON carries it where
//! people or older peers read it: `--json` output, and the output frames of a runner or daemon
//! of before binary frames. Programs nearly always write UTF-8, and JSON carries UTF-8 text
//! cheaply, so a chunk that is valid UTF-8 is a plain JSON string. Any other chunk is
//! `{"base64": "…"}`. Either way the receiver gets the very same bytes back.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A piece of a program's output.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct LogBytes(pub Vec<u8>);

impl LogBytes {
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for LogBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LogBytes({} bytes)", self.0.len())
    }
}

impl Serialize for LogBytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("base64", &STANDARD.encode(&self.0))?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for LogBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LogBytesVisitor)
    }
}

struct LogBytesVisitor;

impl<'de> Visitor<'de> for LogBytesVisitor {
    type Value = LogBytes;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, or an object with one field `base64`")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<LogBytes, E> {
        Ok(LogBytes(v.as_bytes().to_vec()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<LogBytes, E> {
        Ok(LogBytes(v.into_bytes()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LogBytes, A::Error> {
        let mut out = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "base64" {
                return Err(de::Error::unknown_field(&key, &["base64"]));
            }
            let text: String = map.next_value()?;
            let bytes = STANDARD
                .decode(text.as_bytes())
                .map_err(|e| de::Error::custom(format!("base64: {e}")))?;
            out = Some(LogBytes(bytes));
        }
        out.ok_or_else(|| de::Error::missing_field("base64"))
    }
}

/// One numbered piece of a run's output: what the runner sends and bosund stores and hands to
/// followers, in a binary frame ([`super::frame`]) or in JSON.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputChunk {
    pub seq: u64,
    pub stream: bosun_shared::run::Stream,
    pub at: bosun_shared::Timestamp,
    pub data: LogBytes,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(bytes: &[u8]) -> (String, Vec<u8>) {
        let json = serde_json::to_string(&LogBytes(bytes.to_vec())).unwrap_or_default();
        let back: LogBytes = serde_json::from_str(&json).unwrap_or_default();
        (json, back.0)
    }

    #[test]
    fn utf8_travels_as_a_plain_string() {
        let (json, back) = round_trip("héllo\n\t\"x\"\u{1}".as_bytes());
        assert!(json.starts_with('"'), "{json}");
        assert_eq!(back, "héllo\n\t\"x\"\u{1}".as_bytes());
    }

    #[test]
    fn other_bytes_travel_as_base64_and_come_back_intact() {
        let raw = [0xff, 0xfe, b'a', 0x80, b'\n'];
        let (json, back) = round_trip(&raw);
        assert!(json.starts_with("{\"base64\""), "{json}");
        assert_eq!(back, raw);
    }

    #[test]
    fn an_unknown_field_is_refused() {
        assert!(serde_json::from_str::<LogBytes>("{\"hex\":\"00\"}").is_err());
    }
}
