//! A list of `KEY=VALUE` as people write it — the settings of `bosun daemon set`, `bosun agent
//! set` and `bosun project set`, and the command line's `--env`-style flags — read into its
//! pairs before any of them is looked at. This is the one reader of such a list, so that every
//! setter refuses the same things: a line without `=`, a line without a key, and a key given
//! twice, which would otherwise be settled silently by whichever came last.

/// One `KEY=VALUE` of a list: the line as written, its key (without surrounding blanks) and
/// its value (as written, since a value may mean its blanks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyValue<'a> {
    pub text: &'a str,
    pub key: &'a str,
    pub value: &'a str,
}

/// Why a list of `KEY=VALUE` cannot be read. A setter may say [`KeyValueError::NotKeyValue`]
/// in its own words, naming the keys it takes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyValueError {
    /// A line without `=`.
    #[error("`{0}` is not KEY=VALUE")]
    NotKeyValue(String),
    /// A line with nothing before its `=`.
    #[error("`{0}` has no key before `=`")]
    NoKey(String),
    /// The same key twice in one list: refused whole, nothing changed, since which of the two
    /// the person meant cannot be known.
    #[error(
        "`{key}` is given twice (`{first}` and `{second}`), so nothing was changed; give each key once"
    )]
    Twice {
        key: String,
        first: String,
        second: String,
    },
}

/// Every line of `texts` as its key and value, in their order; the first line that is not
/// `KEY=VALUE`, or the second of a key given twice, is refused. Only the first `=` splits, so a
/// value may hold more (`--env OPTS=a=b`). Keys are compared as written, blanks around them
/// aside.
pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Vec<KeyValue<'_>>, KeyValueError> {
    parse_by(texts, |kv| kv.key)
}

/// [`parse`] for a setter where one key may name two settings, told apart by their values
/// (`bosun agent set`'s `mcp.<server>.<tool>=on` switches a tool, `=allow` sets its verdict):
/// two lines are the same setting when `setting` gives them equal values.
pub fn parse_by<'a, S: AsRef<str>, K: PartialEq>(
    texts: &'a [S],
    setting: impl Fn(&KeyValue<'a>) -> K,
) -> Result<Vec<KeyValue<'a>>, KeyValueError> {
    let mut pairs: Vec<(KeyValue<'a>, K)> = Vec::with_capacity(texts.len());
    for text in texts {
        let text = text.as_ref();
        let Some((key, value)) = text.split_once('=') else {
            return Err(KeyValueError::NotKeyValue(text.to_string()));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(KeyValueError::NoKey(text.to_string()));
        }
        let kv = KeyValue { text, key, value };
        let this = setting(&kv);
        if let Some((first, _)) = pairs.iter().find(|(_, k)| *k == this) {
            return Err(KeyValueError::Twice {
                key: key.to_string(),
                first: first.text.to_string(),
                second: text.to_string(),
            });
        }
        pairs.push((kv, this));
    }
    Ok(pairs.into_iter().map(|(kv, _)| kv).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_reads_as_its_pairs_in_order_split_at_the_first_equals_sign() {
        let read = parse(&[" notify = on", "OPTS=a=b", "empty="]).expect("valid");
        let pairs: Vec<(&str, &str)> = read.iter().map(|p| (p.key, p.value)).collect();
        assert_eq!(
            pairs,
            [("notify", " on"), ("OPTS", "a=b"), ("empty", "")],
            "the key is trimmed, the value kept as written"
        );
        assert_eq!(parse::<String>(&[]), Ok(Vec::new()));
    }

    /// Issue 44: `bosun daemon set retention=7d retention=8d` kept 8d without a word.
    #[test]
    fn a_key_given_twice_is_refused_naming_it_and_both_lines() {
        let e = parse(&["retention=7d", "notify=on", " retention =8d"]).expect_err("twice");
        assert_eq!(
            e.to_string(),
            "`retention` is given twice (`retention=7d` and ` retention =8d`), so nothing was changed; give each key once"
        );
        assert_eq!(
            parse(&["notify"]),
            Err(KeyValueError::NotKeyValue("notify".into()))
        );
        assert_eq!(parse(&[" =on"]), Err(KeyValueError::NoKey(" =on".into())));
        // Told apart by their values, one key may name two settings.
        let by_kind = |kv: &KeyValue<'_>| (kv.key.to_string(), kv.value == "allow");
        assert!(parse_by(&["mcp.s.t=on", "mcp.s.t=allow"], by_kind).is_ok());
        assert!(parse_by(&["mcp.s.t=on", "mcp.s.t=off"], by_kind).is_err());
    }
}
