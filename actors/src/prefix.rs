//! Finding a record by its id or the start of it, as people type them (the short form is the
//! first 8 characters; 4 are the least taken).

use std::fmt::Display;

use bosun_shared::protocol::{ErrorCode, WireError};

/// The one id in `ids` that starts with `key`. `what` names the kind in the plural possessive
/// for the ambiguous case ("chats'"); `missing` is the whole message when none matches.
pub fn by_prefix<T: Copy + Display>(
    ids: impl IntoIterator<Item = T>,
    key: &str,
    what: &str,
    missing: impl FnOnce(&str) -> String,
) -> Result<T, WireError> {
    let key = key.trim();
    let lower = key.to_ascii_lowercase();
    let found: Vec<T> = ids
        .into_iter()
        .filter(|id| id.to_string().starts_with(&lower))
        .take(2)
        .collect();
    match found.as_slice() {
        [one] if lower.len() >= 4 => Ok(*one),
        [] | [_] => Err(WireError::not_found(missing(key))),
        [_, _, ..] => Err(WireError::new(
            ErrorCode::Ambiguous,
            format!("`{key}` is the start of several {what} ids; give more of it"),
        )),
    }
}
