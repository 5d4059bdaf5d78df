//! A switch as people write it: `on` or `off` (and `true`/`yes`, `false`/`no`), for every
//! `KEY=on|off` setting of agents, projects and bosund itself.

/// Whether `value` turns a switch on (`Some(true)`) or off (`Some(false)`); `None` when it says
/// neither, for the caller to refuse with its key's words. Case and surrounding blanks do not
/// matter.
pub fn parse(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" => Some(true),
        "off" | "false" | "no" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn on_and_off_in_their_spellings_and_nothing_else() {
        for on in ["on", "ON", " true", "yes "] {
            assert_eq!(parse(on), Some(true), "{on}");
        }
        for off in ["off", "False", "no"] {
            assert_eq!(parse(off), Some(false), "{off}");
        }
        for neither in ["", "1", "0", "maybe", "onn", "o n"] {
            assert_eq!(parse(neither), None, "{neither}");
        }
    }
}
