//! Finding a record by its id or the start of it, as people type them (the short form is the
//! first 8 characters; 4 are the least taken).

use std::fmt::Display;

/// Why no one id was found for what a person typed. Returned by [`by_prefix`]; retrying as is
/// cannot help.
#[derive(Debug, thiserror::Error)]
pub enum PrefixError {
    /// Nothing starts with it (or too little of an id was given); the message is the caller's.
    #[error("{0}")]
    NoMatch(String),
    /// More than one id starts with it; giving more of it helps.
    #[error("`{key}` is the start of several {what} ids; give more of it")]
    Ambiguous { key: String, what: String },
}

/// The one id in `ids` that starts with `key`. `what` names the kind in the plural possessive
/// for the ambiguous case ("chats'"); `missing` is the whole message when none matches.
pub fn by_prefix<T: Copy + Display>(
    ids: impl IntoIterator<Item = T>,
    key: &str,
    what: &str,
    missing: impl FnOnce(&str) -> String,
) -> Result<T, PrefixError> {
    let key = key.trim();
    let lower = key.to_ascii_lowercase();
    let found: Vec<T> = ids
        .into_iter()
        .filter(|id| id.to_string().starts_with(&lower))
        .take(2)
        .collect();
    match found.as_slice() {
        [one] if lower.len() >= 4 => Ok(*one),
        [] | [_] => Err(PrefixError::NoMatch(missing(key))),
        [_, _, ..] => Err(PrefixError::Ambiguous {
            key: key.to_string(),
            what: what.to_string(),
        }),
    }
}
