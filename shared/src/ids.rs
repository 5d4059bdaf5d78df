//! Typed ids. Each id is a newtype with a private field, so a run id can never be passed where a
//! chat id is expected, and each knows how it is written at the UI.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Defines an id type: 128 random bits, written as 26 lower-case Crockford base32 characters,
/// shown as the first 8, and accepted back from any unique prefix by the daemon. The bits are
/// random rather than time-ordered so that the first few characters tell ids apart; listings
/// sort by creation time instead.
macro_rules! random_id {
    ($(#[$doc:meta])* $name:ident, $what:literal, $err:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(ulid::Ulid);

        impl $name {
            /// A fresh random id.
            pub fn new() -> Self {
                Self(ulid::Ulid::from(rand::random::<u128>()))
            }

            /// The full lower-case form, as stored.
            pub fn as_string(&self) -> String {
                self.0.to_string().to_ascii_lowercase()
            }

            /// The short form shown in listings: the first 8 characters (40 bits).
            pub fn short(&self) -> String {
                let mut full = self.as_string();
                full.truncate(8);
                full
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.as_string())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({self})", stringify!($name))
            }
        }

        /// Why a string is not such an id.
        #[derive(Debug, thiserror::Error)]
        #[error("`{0}` is not a {what} (ids are 26 letters and digits, such as 2wsews00nev1322zbxr4fzry82)", what = $what)]
        pub struct $err(String);

        impl FromStr for $name {
            type Err = $err;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                ulid::Ulid::from_string(&s.to_ascii_uppercase())
                    .map(Self)
                    .map_err(|_| $err(s.to_string()))
            }
        }

        impl TryFrom<String> for $name {
            type Error = $err;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                s.parse()
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.as_string()
            }
        }
    };
}

random_id!(
    /// A run's id.
    RunId,
    "run id",
    BadRunId
);

random_id!(
    /// An MCP server's id: stable for the server's life, whatever it is renamed to. Its secrets
    /// live in the keychain under `mcp/<server id>/…`.
    ServerId,
    "server id",
    BadServerId
);

random_id!(
    /// An agent's id: stable whatever it is renamed to. Its secret environment lines live in
    /// the keychain under `agent/<agent id>/env/…`.
    AgentId,
    "agent id",
    BadAgentId
);

random_id!(
    /// A card's id on the board.
    CardId,
    "card id",
    BadCardId
);

random_id!(
    /// A project's id: stable whatever it is renamed to.
    ProjectId,
    "project id",
    BadProjectId
);

random_id!(
    /// A board column's id: stable whatever it is renamed to.
    ColumnId,
    "column id",
    BadColumnId
);

random_id!(
    /// A chat with the lead.
    ChatId,
    "chat id",
    BadChatId
);

random_id!(
    /// One answer of the lead in a chat (one Claude Code invocation).
    AnswerId,
    "answer id",
    BadAnswerId
);

random_id!(
    /// A pending action: a privileged call of the lead's that waits for the person's OK.
    ActionId,
    "action id",
    BadActionId
);

random_id!(
    /// A tool call of a run that waits for the person's decision.
    ApprovalId,
    "approval id",
    BadApprovalId
);

/// The secret a runner proves itself with when it connects back to `bosund`. It reaches the
/// runner only through its stdin; the store keeps only its SHA-256 ([`RunToken::digest`]).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunToken(String);

impl RunToken {
    /// 32 random bytes, hex encoded.
    pub fn generate() -> Self {
        let bytes: [u8; 32] = rand::random();
        Self(hex(&bytes))
    }

    /// The digest kept in the store, to check a reconnecting runner after a daemon restart.
    pub fn digest(&self) -> String {
        Self::digest_of(&self.0)
    }

    /// The digest of a token as it arrived (from a runner, or as a bearer token).
    pub fn digest_of(token: &str) -> String {
        hex(&Sha256::digest(token.as_bytes()))
    }

    /// The token itself, for the one place that hands it on (a runner's stdin, an answer's 0600
    /// config file).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for RunToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RunToken(…)")
    }
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_round_trips_through_its_lower_case_form() {
        let id = RunId::new();
        let text = id.to_string();
        assert_eq!(text.len(), 26);
        assert_eq!(text, text.to_ascii_lowercase());
        assert_eq!(text.parse::<RunId>().ok(), Some(id));
        let json = serde_json::to_string(&id).unwrap_or_default();
        assert_eq!(json, format!("\"{text}\""));
    }

    #[test]
    fn run_id_refuses_garbage_with_an_example() {
        let err = "nope"
            .parse::<RunId>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("`nope` is not a run id"), "{err}");
        assert!(
            matches!("nope".parse::<ServerId>(), Err(e) if e.to_string().contains("server id"))
        );
    }

    #[test]
    fn token_digest_is_stable_and_debug_hides_the_token() {
        let t = RunToken::generate();
        assert_eq!(t.digest(), t.digest());
        assert_eq!(format!("{t:?}"), "RunToken(…)");
    }
}
