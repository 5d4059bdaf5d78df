//! An MCP server's elicitation form (`elicitation/create`), parsed once, where the gateway meets
//! it, into a [`Form`] that can only hold what bosun knows how to show and check; and the
//! person's answer checked against it.
//!
//! The MCP spec keeps a form flat: an object of named fields, each a text (with an optional
//! length and format), a number or integer (with an optional range), a yes/no, a choice of one
//! (`enum`, `enum` with `enumNames`, or `oneOf` of `{const, title}`) or a choice of several (an
//! array whose `items` are such a choice). Anything else is refused with what was wrong.
//!
//! A form that asks for a secret — a password, a token, a key, payment data, a credential — is
//! refused whole: such data must never pass through a form that the model's server reads and
//! bosun keeps in its inbox.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The most fields a form may have, and the longest text bosun takes for one answer.
pub const MAX_FIELDS: usize = 64;
pub const MAX_TEXT: usize = 10_000;

/// A form, as the person sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Form {
    /// What the server says it wants, in its own words.
    pub message: String,
    pub fields: Vec<Field>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    pub kind: FieldKind,
    /// The server's suggestion, when it is a valid answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<TextFormat>,
    },
    Number {
        integer: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<f64>,
    },
    Boolean,
    /// One of the options.
    Choice {
        options: Vec<Choice>,
    },
    /// Several of the options (between `min` and `max` of them).
    Choices {
        options: Vec<Choice>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<u64>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TextFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

impl TextFormat {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "email" => Self::Email,
            "uri" => Self::Uri,
            "date" => Self::Date,
            "date-time" => Self::DateTime,
            _ => return None,
        })
    }

    fn words(self) -> &'static str {
        match self {
            Self::Email => "an email address",
            Self::Uri => "an address (URI)",
            Self::Date => "a date (YYYY-MM-DD)",
            Self::DateTime => "a date and time (RFC 3339)",
        }
    }

    fn holds(self, s: &str) -> bool {
        match self {
            Self::Email => {
                s.split_once('@')
                    .is_some_and(|(a, b)| !a.is_empty() && b.contains('.') && !b.contains('@'))
                    && !s.chars().any(char::is_whitespace)
            }
            Self::Uri => {
                s.split_once(':').is_some_and(|(scheme, rest)| {
                    !rest.is_empty()
                        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                        && scheme
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                }) && !s.chars().any(char::is_whitespace)
            }
            Self::Date => is_date(s),
            Self::DateTime => is_date_time(s),
        }
    }
}

/// `YYYY-MM-DD`, a day that exists (any year: birthdays come before 1970).
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s.get(r).and_then(|d| d.parse::<u32>().ok());
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339: `YYYY-MM-DDTHH:MM:SS`, an optional fraction, then `Z` or `±HH:MM`.
fn is_date_time(s: &str) -> bool {
    let Some((date, time)) = s.split_once(['T', 't', ' ']) else {
        return false;
    };
    let (clock, zone) = match time.find(['Z', 'z', '+', '-']) {
        Some(i) => time.split_at(i),
        None => return false,
    };
    let two = |t: &str, max: u32| t.len() == 2 && t.parse::<u32>().is_ok_and(|n| n <= max);
    let (whole, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    let hms: Vec<&str> = whole.split(':').collect();
    let zone_ok = match zone {
        "Z" | "z" => true,
        z => z[1..]
            .split_once(':')
            .is_some_and(|(h, m)| two(h, 23) && two(m, 59)),
    };
    is_date(date)
        && hms.len() == 3
        && two(hms[0], 23)
        && two(hms[1], 59)
        && two(hms[2], 60)
        && !fraction.is_empty()
        && fraction.bytes().all(|c| c.is_ascii_digit())
        && zone_ok
}

/// Why a server's form was refused.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum FormRefused {
    #[error(
        "its `requestedSchema` is not an object of named fields (`type: \"object\"` with `properties`)"
    )]
    NotAForm,
    #[error("it has {0} fields; bosun takes at most {MAX_FIELDS}")]
    TooManyFields(usize),
    #[error("its field `{name}` {why}")]
    BadField { name: String, why: String },
    #[error(
        "its field `{name}` asks for {what}, which bosun never passes through a form (the server must ask for it another way)"
    )]
    AsksForSecret { name: String, what: &'static str },
}

/// Why the person's answer does not fit the form: nothing was sent.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum AnswerRefused {
    #[error("the answer must be a JSON object of the form's fields, like {example}")]
    NotAnObject { example: String },
    #[error("the form needs `{0}`")]
    Missing(String),
    #[error("the form has no field `{name}` (its fields: {fields})")]
    Unknown { name: String, fields: String },
    #[error("`{name}` must be {what}")]
    Wrong { name: String, what: String },
}

/// Words that, in a field's name or title, ask for a secret; with what they ask for.
const SECRET_WORDS: &[(&str, &str)] = &[
    ("password", "a password"),
    ("passwd", "a password"),
    ("passphrase", "a password"),
    ("passcode", "a password"),
    ("secret", "a secret"),
    ("token", "a token"),
    ("apikey", "a key"),
    ("accesskey", "a key"),
    ("privatekey", "a key"),
    ("secretkey", "a key"),
    ("sshkey", "a key"),
    ("credential", "a credential"),
    ("creditcard", "payment data"),
    ("cardnumber", "payment data"),
    ("cvv", "payment data"),
    ("cvc", "payment data"),
    ("securitycode", "payment data"),
    ("iban", "payment data"),
    ("bankaccount", "payment data"),
    ("routingnumber", "payment data"),
];

/// Phrases that, in a field's description, ask for a secret.
const SECRET_PHRASES: &[(&str, &str)] = &[
    ("password", "a password"),
    ("api key", "a key"),
    ("access key", "a key"),
    ("private key", "a key"),
    ("secret key", "a key"),
    ("access token", "a token"),
    ("credit card", "payment data"),
    ("card number", "payment data"),
];

/// What a field asks for, when it asks for a secret.
fn secret_asked(
    name: &str,
    title: Option<&str>,
    description: Option<&str>,
) -> Option<&'static str> {
    let squeeze = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase()
    };
    for words in [Some(name), title].into_iter().flatten().map(squeeze) {
        if let Some((_, what)) = SECRET_WORDS.iter().find(|(w, _)| words.contains(w)) {
            return Some(what);
        }
    }
    let description = description?.to_lowercase();
    SECRET_PHRASES
        .iter()
        .find(|(p, _)| description.contains(p))
        .map(|(_, what)| *what)
}

impl Form {
    /// Parses `elicitation/create`'s `message` and `requestedSchema`.
    pub fn parse(message: &str, schema: &Value) -> Result<Self, FormRefused> {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(FormRefused::NotAForm);
        }
        let props = match schema.get("properties") {
            Some(Value::Object(p)) => p,
            None => &Map::new(),
            Some(_) => return Err(FormRefused::NotAForm),
        };
        if props.len() > MAX_FIELDS {
            return Err(FormRefused::TooManyFields(props.len()));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::with_capacity(props.len());
        for (name, p) in props {
            fields.push(Field::parse(name, p, required.contains(&name.as_str()))?);
        }
        if let Some(r) = required.iter().find(|r| !props.contains_key(**r)) {
            return Err(FormRefused::BadField {
                name: (*r).to_string(),
                why: "is required but not among its properties".into(),
            });
        }
        Ok(Self {
            message: message.to_string(),
            fields,
        })
    }

    /// The person's answer, checked field by field: the content to send the server.
    pub fn check(&self, answer: &Value) -> Result<Map<String, Value>, AnswerRefused> {
        let Value::Object(given) = answer else {
            return Err(AnswerRefused::NotAnObject {
                example: self.example(),
            });
        };
        if let Some(name) = given
            .keys()
            .find(|k| !self.fields.iter().any(|f| &f.name == *k))
        {
            return Err(AnswerRefused::Unknown {
                name: name.clone(),
                fields: self.names(),
            });
        }
        let mut content = Map::new();
        for f in &self.fields {
            match given.get(&f.name) {
                None | Some(Value::Null) if f.required => {
                    return Err(AnswerRefused::Missing(f.name.clone()));
                }
                None | Some(Value::Null) => {}
                Some(v) => {
                    f.check(v)?;
                    content.insert(f.name.clone(), v.clone());
                }
            }
        }
        Ok(content)
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
        names.join(", ")
    }

    /// An answer of the right shape, for the person to start from: the defaults, or a
    /// placeholder of each field's kind.
    pub fn example(&self) -> String {
        let mut m = Map::new();
        for f in &self.fields {
            let v = f.default.clone().unwrap_or_else(|| match &f.kind {
                FieldKind::Text { .. } => Value::from("…"),
                FieldKind::Number { .. } => Value::from(0),
                FieldKind::Boolean => Value::from(true),
                FieldKind::Choice { options } => options
                    .first()
                    .map(|o| Value::from(o.value.as_str()))
                    .unwrap_or(Value::Null),
                FieldKind::Choices { options, .. } => Value::Array(
                    options
                        .first()
                        .map(|o| Value::from(o.value.as_str()))
                        .into_iter()
                        .collect(),
                ),
            });
            m.insert(f.name.clone(), v);
        }
        Value::Object(m).to_string()
    }

    /// The form in lines of plain words, for the inbox and the run's log.
    pub fn lines(&self) -> Vec<String> {
        self.fields.iter().map(Field::line).collect()
    }
}

impl Field {
    fn parse(name: &str, p: &Value, required: bool) -> Result<Self, FormRefused> {
        let bad = |why: &str| FormRefused::BadField {
            name: name.to_string(),
            why: why.to_string(),
        };
        let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_string);
        let (title, description) = (text("title"), text("description"));
        if let Some(what) = secret_asked(name, title.as_deref(), description.as_deref()) {
            return Err(FormRefused::AsksForSecret {
                name: name.to_string(),
                what,
            });
        }
        let ty = p.get("type").and_then(Value::as_str);
        let count = |key: &str| p.get(key).and_then(Value::as_u64);
        let kind = match ty {
            Some("string") => match choices_of(p).map_err(|w| bad(&w.to_string()))? {
                Some(options) => FieldKind::Choice { options },
                None => {
                    let format = match text("format") {
                        None => None,
                        Some(f) if f == "password" => {
                            return Err(FormRefused::AsksForSecret {
                                name: name.to_string(),
                                what: "a password",
                            });
                        }
                        Some(f) => Some(TextFormat::parse(&f).ok_or_else(|| {
                            bad(&format!(
                                "has the format `{f}`; bosun knows email, uri, date and date-time"
                            ))
                        })?),
                    };
                    FieldKind::Text {
                        min: count("minLength"),
                        max: count("maxLength"),
                        format,
                    }
                }
            },
            Some(t @ ("number" | "integer")) => FieldKind::Number {
                integer: t == "integer",
                min: p.get("minimum").and_then(Value::as_f64),
                max: p.get("maximum").and_then(Value::as_f64),
            },
            Some("boolean") => FieldKind::Boolean,
            Some("array") => {
                let items = p.get("items").unwrap_or(&Value::Null);
                let options = choices_of(items)
                    .map_err(|w| bad(&w.to_string()))?
                    .ok_or_else(|| bad("is a list whose items are not a choice of options"))?;
                FieldKind::Choices {
                    options,
                    min: count("minItems"),
                    max: count("maxItems"),
                }
            }
            Some(other) => {
                return Err(bad(&format!(
                    "is of type `{other}`; a form field is a string, number, integer, boolean or a list of options"
                )));
            }
            None => return Err(bad("has no type")),
        };
        let mut field = Self {
            name: name.to_string(),
            title,
            description,
            required,
            kind,
            default: None,
        };
        field.default = p.get("default").filter(|d| field.check(d).is_ok()).cloned();
        Ok(field)
    }

    /// Whether `v` is a valid answer to this field.
    fn check(&self, v: &Value) -> Result<(), AnswerRefused> {
        let wrong = |what: String| AnswerRefused::Wrong {
            name: self.name.clone(),
            what,
        };
        match &self.kind {
            FieldKind::Text { min, max, format } => {
                let s = v.as_str().ok_or_else(|| wrong("text".into()))?;
                let n = s.chars().count() as u64;
                if n > MAX_TEXT as u64 || max.is_some_and(|m| n > m) {
                    return Err(wrong(format!(
                        "at most {} characters",
                        max.unwrap_or(MAX_TEXT as u64).min(MAX_TEXT as u64)
                    )));
                }
                if min.is_some_and(|m| n < m) {
                    return Err(wrong(format!(
                        "at least {} characters",
                        min.unwrap_or_default()
                    )));
                }
                if let Some(f) = format
                    && !f.holds(s)
                {
                    return Err(wrong(f.words().into()));
                }
            }
            FieldKind::Number { integer, min, max } => {
                let x = v.as_f64().ok_or_else(|| wrong("a number".into()))?;
                if *integer && x.fract() != 0.0 {
                    return Err(wrong("a whole number".into()));
                }
                let range = || match (min, max) {
                    (Some(a), Some(b)) => format!("between {a} and {b}"),
                    (Some(a), None) => format!("at least {a}"),
                    (None, Some(b)) => format!("at most {b}"),
                    (None, None) => String::new(),
                };
                if min.is_some_and(|m| x < m) || max.is_some_and(|m| x > m) {
                    return Err(wrong(range()));
                }
            }
            FieldKind::Boolean => {
                v.as_bool().ok_or_else(|| wrong("true or false".into()))?;
            }
            FieldKind::Choice { options } => {
                let s = v.as_str().unwrap_or_default();
                if !options.iter().any(|o| o.value == s) {
                    return Err(wrong(format!("one of {}", values(options))));
                }
            }
            FieldKind::Choices { options, min, max } => {
                let picked = v
                    .as_array()
                    .ok_or_else(|| wrong(format!("a list of some of {}", values(options))))?;
                for p in picked {
                    let s = p.as_str().unwrap_or_default();
                    if !options.iter().any(|o| o.value == s) {
                        return Err(wrong(format!("a list of some of {}", values(options))));
                    }
                }
                let n = picked.len() as u64;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(wrong(format!(
                        "a list of {} to {} of {}",
                        min.unwrap_or(0),
                        max.map_or("any".to_string(), |m| m.to_string()),
                        values(options)
                    )));
                }
            }
        }
        Ok(())
    }

    /// `name (kind, required): title — description`.
    fn line(&self) -> String {
        let kind = match &self.kind {
            FieldKind::Text {
                format: Some(f), ..
            } => f.words().to_string(),
            FieldKind::Text { .. } => "text".into(),
            FieldKind::Number { integer: true, .. } => "whole number".into(),
            FieldKind::Number { .. } => "number".into(),
            FieldKind::Boolean => "true or false".into(),
            FieldKind::Choice { options } => format!("one of {}", values(options)),
            FieldKind::Choices { options, .. } => format!("some of {}", values(options)),
        };
        let mut line = format!(
            "{} ({kind}{})",
            self.name,
            if self.required { ", required" } else { "" }
        );
        let words: Vec<&str> = [self.title.as_deref(), self.description.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if !words.is_empty() {
            line.push_str(": ");
            line.push_str(&words.join(" — "));
        }
        line
    }
}

fn values(options: &[Choice]) -> String {
    let v: Vec<String> = options.iter().map(|o| format!("\"{}\"", o.value)).collect();
    v.join(", ")
}

/// Why a choice's options cannot be offered.
#[derive(Debug, thiserror::Error)]
enum BadChoice {
    #[error("has an option that is not text")]
    NotText,
    #[error("has an option without a text `const`")]
    NoConst,
}

/// The options of a choice (`enum`, with `enumNames`; or `oneOf`/`anyOf` of `{const,
/// title}`); `None` when `p` is not a choice.
fn choices_of(p: &Value) -> Result<Option<Vec<Choice>>, BadChoice> {
    if let Some(values) = p.get("enum").and_then(Value::as_array) {
        let names = p.get("enumNames").and_then(Value::as_array);
        let mut options = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            let value = v.as_str().ok_or(BadChoice::NotText)?;
            let title = names
                .and_then(|n| n.get(i))
                .and_then(Value::as_str)
                .map(str::to_string);
            options.push(Choice {
                value: value.to_string(),
                title,
            });
        }
        return Ok(Some(options));
    }
    let Some(list) = p
        .get("oneOf")
        .or_else(|| p.get("anyOf"))
        .and_then(Value::as_array)
    else {
        return Ok(None);
    };
    let mut options = Vec::with_capacity(list.len());
    for o in list {
        let value = o
            .get("const")
            .and_then(Value::as_str)
            .ok_or(BadChoice::NoConst)?;
        options.push(Choice {
            value: value.to_string(),
            title: o.get("title").and_then(Value::as_str).map(str::to_string),
        });
    }
    Ok(Some(options))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The form `@modelcontextprotocol/server-everything` sends, in short.
    fn everything() -> Value {
        json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "title": "String", "description": "Your full, legal name"},
            "check": {"type": "boolean"},
            "email": {"type": "string", "format": "email"},
            "homepage": {"type": "string", "format": "uri"},
            "birthdate": {"type": "string", "format": "date"},
            "integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42,
                        "description": "Your favorite integer (do not give us your phone number, pin, or other sensitive info)"},
            "number": {"type": "number", "minimum": 0, "maximum": 1000, "default": 2.5},
            "single": {"type": "string", "enum": ["Monica", "Rachel"], "default": "Monica"},
            "multi": {"type": "array", "minItems": 1, "maxItems": 2,
                      "items": {"type": "string", "enum": ["Guitar", "Piano", "Drums"]}},
            "titled": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}]},
            "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}]}},
            "legacy": {"type": "string", "enum": ["pet-1"], "enumNames": ["Cats"]},
        }})
    }

    #[test]
    fn the_everything_form_parses_and_checks() {
        let form = Form::parse("Please", &everything()).expect("parses");
        assert_eq!(form.fields.len(), 12);
        let ok = json!({"name": "Ada", "check": true, "email": "ada@example.com",
                        "homepage": "https://ada.example", "birthdate": "1815-12-10",
                        "integer": 7, "number": 2.5, "single": "Rachel", "multi": ["Piano"],
                        "titled": "hero-1", "titledMulti": ["fish-1"], "legacy": "pet-1"});
        assert_eq!(form.check(&ok).expect("fits").len(), 12);
        assert!(form.check(&json!({"name": "Ada"})).is_ok());
        let refused = |v: Value| form.check(&v).expect_err("refused").to_string();
        assert_eq!(refused(json!({})), "the form needs `name`");
        assert!(refused(json!({"name": "A", "integer": 101})).contains("between 1 and 100"));
        assert!(refused(json!({"name": "A", "integer": 1.5})).contains("a whole number"));
        assert!(refused(json!({"name": "A", "email": "nope"})).contains("an email address"));
        assert!(refused(json!({"name": "A", "birthdate": "1815-13-10"})).contains("a date"));
        assert!(refused(json!({"name": "A", "birthdate": "2023-02-29"})).contains("a date"));
        assert!(
            form.check(&json!({"name": "A", "birthdate": "2024-02-29"}))
                .is_ok()
        );
        assert!(refused(json!({"name": "A", "single": "Joey"})).contains("one of \"Monica\""));
        assert!(refused(json!({"name": "A", "multi": []})).contains("a list of 1 to 2"));
        assert!(refused(json!({"name": "A", "color": "red"})).contains("no field `color`"));
        assert!(refused(json!(["Ada"])).contains("like {"));
        assert_eq!(form.fields[5].default, Some(json!(42)));
    }

    #[test]
    fn dates_and_times_are_rfc_3339() {
        for ok in [
            "2026-12-03T19:06:19Z",
            "1815-12-10T00:00:00.5+01:00",
            "2026-12-03t01:02:03z",
        ] {
            assert!(is_date_time(ok), "{ok}");
        }
        for bad in [
            "2026-12-03",
            "2026-12-03T25:00:00Z",
            "2026-12-03T01:02:03",
            "x",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }

    #[test]
    fn a_form_asking_for_a_secret_is_refused() {
        for (prop, what) in [
            (json!({"type": "string", "title": "Password"}), "a password"),
            (
                json!({"type": "string", "format": "password"}),
                "a password",
            ),
            (
                json!({"type": "string", "description": "Your GitHub access token"}),
                "a token",
            ),
            (
                json!({"type": "string", "title": "Card number"}),
                "payment data",
            ),
        ] {
            let schema = json!({"type": "object", "properties": {"field": prop}});
            let e = Form::parse("m", &schema).expect_err("refused");
            assert!(
                matches!(&e, FormRefused::AsksForSecret { what: w, .. } if *w == what),
                "{e}"
            );
        }
        let schema = json!({"type": "object", "properties": {"api_key": {"type": "string"}}});
        assert!(Form::parse("m", &schema).is_err());
    }

    #[test]
    fn a_malformed_form_is_refused_saying_why() {
        let e = |s: Value| Form::parse("m", &s).expect_err("refused").to_string();
        assert!(e(json!({"type": "string"})).contains("not an object"));
        assert!(
            e(json!({"type": "object", "properties": {"x": {"type": "object"}}}))
                .contains("`x` is of type `object`")
        );
        assert!(
            e(json!({"type": "object", "properties": {}, "required": ["y"]}))
                .contains("`y` is required")
        );
        assert!(
            e(json!({"type": "object", "properties": {"x": {"type": "string", "format": "ipv4"}}}))
                .contains("format `ipv4`")
        );
    }
}
