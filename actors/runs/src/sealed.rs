//! A remote run's plan, kept sealed in the store (`sealed_plans[run_id]`) while its runner waits
//! in a cluster's queue, so that the run survives any number of restarts of bosund.
//!
//! Sealing writes a marker in place of every secret value of the plan (each value as it is, and
//! JSON-escaped as it stands in a per-run file), keeps where each value comes from (the
//! keychain's key, a server's sign-in: [`SecretSource`]), and leaves out the runner's token and
//! every form of a secret the runner hides in the output. When the runner asks for its plan,
//! the values are read again ([`bosun_agents::secrets::read_again`]) and [`fill`] puts them in
//! place of their markers, with the token the runner proved itself with and the forms to hide.
//! A value that changed meanwhile (a secret set again, a token refreshed) is the one the run
//! gets.
//!
//! **Invariant:** a sealed plan holds no secret value in any form the runner would hide: [`seal`]
//! checks every string of it before it is kept, and refuses a plan it cannot seal whole (a value
//! shorter than [`MIN_LEN`], or one that stands in the plan in a form it does not know); such a
//! plan is held in memory only, as every plan was before.
//!
//! The markers carry a nonce drawn for each plan, so no text of the plan (a prompt written to
//! look like a marker) can be mistaken for one.

use aho_corasick::{AhoCorasick, MatchKind};
use bosun_agents::secrets::{SecretLine, SecretSource};
use bosun_protocol::runner::LaunchPlan;
use bosun_shared::redact::MIN_LEN;
use bosun_shared::{RunId, RunToken};
use bosun_store::Record;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A plan with its secrets taken out, and where each comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SealedPlan {
    pub run: RunId,
    /// The plan as JSON, each secret value a marker, without its token.
    plan: Value,
    /// What makes this plan's markers its own.
    nonce: String,
    /// Where the value of marker `i` comes from.
    pub sources: Vec<SecretSource>,
}

impl Record for SealedPlan {
    const TABLE: &'static str = "sealed_plans";
    const WHAT: &'static str = "sealed plan";
    type Key = RunId;

    fn key(&self) -> String {
        self.run.to_string()
    }
}

/// Why a plan cannot be sealed: it is then held in memory only.
#[derive(Debug, thiserror::Error)]
pub enum Unsealable {
    /// A secret value is so short that it could stand anywhere in the plan.
    #[error("{what} is shorter than {min} characters")]
    Short { what: String, min: usize },
    /// A secret stands in the plan in a form that has no marker (encoded some other way).
    #[error("{what} stands in the plan in a form bosun cannot seal")]
    Unknown { what: String },
    /// The plan could not be written as JSON, or its values searched for (neither happens).
    #[error("the plan could not be sealed: {0}")]
    Internal(String),
}

/// Why a sealed plan could not be filled in.
#[derive(Debug, thiserror::Error)]
pub enum FillError {
    /// The values read do not match the markers (a bug: read_again answers one per source).
    #[error("{got} values were read for a plan with {want} secrets")]
    Count { want: usize, got: usize },
    /// The sealed plan does not read back as a plan (kept by another build of bosun).
    #[error("the sealed plan does not read back: {0}")]
    Json(String),
}

/// The two forms of a value a plan holds: as it is, and JSON-escaped (inside a per-run file's
/// JSON text).
const FORMS: [Form; 2] = [Form::Raw, Form::Json];

#[derive(Clone, Copy)]
enum Form {
    Raw,
    Json,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::Raw => "raw",
            Form::Json => "json",
        }
    }

    fn of(self, value: &str) -> String {
        match self {
            Form::Raw => value.to_string(),
            Form::Json => json_escaped(value),
        }
    }
}

fn json_escaped(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_string()
}

fn marker(nonce: &str, i: usize, form: Form) -> String {
    format!("@@bosun-sealed-{nonce}-{i}-{}@@", form.name())
}

fn what(source: &SecretSource) -> String {
    match source {
        SecretSource::Keychain { what, .. } | SecretSource::Ephemeral { what } => what.clone(),
        SecretSource::Token { name, .. } => format!("the access token of the MCP server `{name}`"),
        SecretSource::CliFile { path } => format!("the CLI's sign-in {}", path.display()),
    }
}

/// Seals `plan`, whose secret values are `secrets`.
pub fn seal(plan: &LaunchPlan, secrets: &[SecretLine]) -> Result<SealedPlan, Unsealable> {
    for s in secrets {
        if s.value.trim().len() < MIN_LEN {
            return Err(Unsealable::Short {
                what: what(&s.source),
                min: MIN_LEN,
            });
        }
    }
    let nonce: String = rand::random::<[u8; 16]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // Every form of every secret the runner hides: none may be kept.
    let hidden: Vec<(usize, String)> = secrets
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            let mut forms = s.redact_forms();
            forms.extend(FORMS.iter().map(|f| f.of(&s.value)));
            forms.into_iter().map(move |f| (i, f))
        })
        .filter(|(_, f)| f.len() >= MIN_LEN)
        .collect();
    let mut value = serde_json::to_value(plan).map_err(|e| Unsealable::Internal(e.to_string()))?;
    if let Value::Object(map) = &mut value {
        map.remove("token");
        // The forms to hide are made again from the values read when the plan is filled.
        let kept: Vec<Value> = plan
            .redact
            .iter()
            .filter(|r| !hidden.iter().any(|(_, h)| h == *r))
            .map(|r| Value::String(r.clone()))
            .collect();
        map.insert("redact".into(), Value::Array(kept));
    }
    let mut patterns = Vec::new();
    let mut markers = Vec::new();
    for (i, s) in secrets.iter().enumerate() {
        for form in FORMS {
            let find = form.of(&s.value);
            if !patterns.contains(&find) {
                patterns.push(find);
                markers.push(marker(&nonce, i, form));
            }
        }
    }
    if !patterns.is_empty() {
        let finder = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .map_err(|e| Unsealable::Internal(e.to_string()))?;
        each_string(&mut value, &mut |s| {
            if finder.is_match(s.as_str()) {
                *s = finder.replace_all(s.as_str(), &markers);
            }
        });
    }
    let mut left = None;
    each_string(&mut value, &mut |s| {
        if left.is_none()
            && let Some((i, _)) = hidden.iter().find(|(_, h)| s.contains(h.as_str()))
        {
            left = Some(*i);
        }
    });
    if let Some(i) = left {
        return Err(Unsealable::Unknown {
            what: secrets.get(i).map(|s| what(&s.source)).unwrap_or_default(),
        });
    }
    Ok(SealedPlan {
        run: plan.run_id,
        plan: value,
        nonce,
        sources: secrets.iter().map(|s| s.source.clone()).collect(),
    })
}

/// The plan again: `values` (one per source, in order, as read now) in place of their markers,
/// `token` the runner's, and the forms of the values the runner hides.
pub fn fill(
    sealed: &SealedPlan,
    values: Vec<String>,
    token: RunToken,
) -> Result<LaunchPlan, FillError> {
    if values.len() != sealed.sources.len() {
        return Err(FillError::Count {
            want: sealed.sources.len(),
            got: values.len(),
        });
    }
    let lines: Vec<SecretLine> = sealed
        .sources
        .iter()
        .cloned()
        .zip(values)
        .map(|(source, value)| SecretLine { source, value })
        .collect();
    let mut value = sealed.plan.clone();
    let mut markers = Vec::new();
    let mut with = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        for form in FORMS {
            markers.push(marker(&sealed.nonce, i, form));
            with.push(form.of(&line.value));
        }
    }
    if !markers.is_empty() {
        let finder = AhoCorasick::new(&markers).map_err(|e| FillError::Json(e.to_string()))?;
        each_string(&mut value, &mut |s| {
            if finder.is_match(s.as_str()) {
                *s = finder.replace_all(s.as_str(), &with);
            }
        });
    }
    if let Value::Object(map) = &mut value {
        map.insert("token".into(), Value::String(token.expose().to_string()));
    }
    let mut plan: LaunchPlan =
        serde_json::from_value(value).map_err(|e| FillError::Json(e.to_string()))?;
    plan.redact
        .extend(lines.iter().flat_map(SecretLine::redact_forms));
    plan.redact.sort();
    plan.redact.dedup();
    Ok(plan)
}

/// Calls `f` on every string of `value` (object keys are the plan's field names, left alone).
fn each_string(value: &mut Value, f: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|v| each_string(v, f)),
        Value::Object(map) => map.values_mut().for_each(|v| each_string(v, f)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests;
