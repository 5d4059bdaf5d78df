//! A server with what only the registry can find out about it beyond its record: which of its
//! secret lines have their value in the keychain, its sign-in, and, for the built-in browser,
//! what this machine has of what it needs. `supervisor/src/api` shows it to the person.

use std::fmt;

use bosun_auth::record::SignInRecord;
use bosun_kit::keychain::Keychain;
use bosun_shared::mcp::{ServerKind, SignInBy};
use bosun_store::Store;

use super::SIGNED_OUT;
use crate::browser::{self, BrowserCheck};
use crate::record::{LineKind, ServerRecord};

/// A server as the registry answers with it.
#[derive(Clone, Debug)]
pub struct ServerDetail {
    pub record: ServerRecord,
    /// The lines whose value is in the keychain (the others are missing).
    pub saved: Vec<(LineKind, String)>,
    /// For a server reached by address: its sign-in.
    pub sign_in: Option<SignIn>,
    /// For the built-in browser: what this machine has of what it needs.
    pub browser: Option<BrowserCheck>,
}

impl ServerDetail {
    /// Whether the value of this line is in the keychain.
    pub fn is_saved(&self, kind: LineKind, name: &str) -> bool {
        self.saved.iter().any(|(k, n)| *k == kind && n == name)
    }

    /// Why the last look at it failed, as the person is told: without what the sign-in's state
    /// says already (signed out, or signed in since a look that wanted a sign-in).
    pub fn last_error(&self) -> Option<String> {
        let error = self
            .record
            .shown_error()
            .filter(|e| e.as_str() != SIGNED_OUT)?;
        // A look that failed for want of a sign-in is old news once signed in.
        let signed_in = self
            .sign_in
            .as_ref()
            .is_some_and(|s| s.state() == SignInState::SignedIn);
        (!(signed_in && error.contains("needs sign-in"))).then_some(error)
    }
}

/// Gathers what the registry knows of a server. Blocks (the store, the keychain, and for the
/// built-in browser `node --version`): call it from a blocking thread.
pub(super) fn detail_of(store: &Store, keychain: &Keychain, rec: &ServerRecord) -> ServerDetail {
    let lines = rec
        .env_names
        .iter()
        .map(|n| (LineKind::Env, n))
        .chain(rec.header_names.iter().map(|n| (LineKind::Header, n)));
    let saved = lines
        .filter(|(kind, name)| {
            keychain
                .get(&kind.key(rec.id, name))
                .ok()
                .flatten()
                .is_some()
        })
        .map(|(kind, name)| (kind, name.clone()))
        .collect();
    let browser = rec.browser.as_ref().map(|settings| {
        let path = std::env::var("PATH").ok();
        browser::check_machine(settings, path.as_deref())
    });
    ServerDetail {
        record: rec.clone(),
        saved,
        sign_in: sign_in_of(store, rec),
        browser,
    }
}

/// A server's sign-in as bosun knows it (never a token).
#[derive(Clone, Debug)]
pub enum SignIn {
    /// Claude Code signs in to the server itself; bosun keeps nothing of it.
    ByClaudeCode,
    /// bosun's sign-in: signed in, or needing a sign-in again (its `needs_sign_in` says why).
    Kept(Box<SignInRecord>),
    /// None kept: the person signed bosun out (`bosun mcp sign-out`).
    SignedOut,
    /// None kept, and the server asked for one at the last look.
    Asked,
    /// None kept, and none asked for.
    NotYet,
}

impl SignIn {
    pub fn state(&self) -> SignInState {
        match self {
            SignIn::ByClaudeCode => SignInState::ClaudeCodeSignsIn,
            SignIn::Kept(s) if s.is_signed_in() => SignInState::SignedIn,
            SignIn::Kept(_) | SignIn::Asked => SignInState::NeedsSignIn,
            SignIn::SignedOut | SignIn::NotYet => SignInState::NotSignedIn,
        }
    }

    /// Why the person must sign in to `server` (again), when they must.
    pub fn why(&self, server: &str) -> Option<String> {
        match self {
            SignIn::Kept(s) => s.needs_sign_in.clone(),
            SignIn::SignedOut => Some(format!(
                "signed out; run `bosun mcp sign-in {server}` to use it again"
            )),
            SignIn::Asked => Some(format!(
                "the server asks for one; run `bosun mcp sign-in {server}`"
            )),
            SignIn::ByClaudeCode | SignIn::NotYet => None,
        }
    }
}

/// Where a server's sign-in stands, in one of four words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignInState {
    SignedIn,
    NeedsSignIn,
    NotSignedIn,
    ClaudeCodeSignsIn,
}

impl SignInState {
    /// As the person reads it: `signed in`, `needs sign-in`, `not signed in`, `Claude Code
    /// signs in`.
    pub fn words(self) -> &'static str {
        match self {
            SignInState::SignedIn => "signed in",
            SignInState::NeedsSignIn => "needs sign-in",
            SignInState::NotSignedIn => "not signed in",
            SignInState::ClaudeCodeSignsIn => "Claude Code signs in",
        }
    }
}

impl fmt::Display for SignInState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// A server's sign-in (a server started as a command has none). Blocks (the store).
pub fn sign_in_of(store: &Store, rec: &ServerRecord) -> Option<SignIn> {
    if rec.kind == ServerKind::Stdio {
        return None;
    }
    if rec.sign_in_by == SignInBy::ClaudeCode {
        return Some(SignIn::ByClaudeCode);
    }
    Some(match store.get::<SignInRecord>(&rec.id).ok().flatten() {
        Some(s) => SignIn::Kept(Box::new(s)),
        None if rec.last_error.as_deref() == Some(SIGNED_OUT) => SignIn::SignedOut,
        None if rec
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("needs sign-in")) =>
        {
            SignIn::Asked
        }
        None => SignIn::NotYet,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sign_ins_state_in_the_words_the_person_reads() {
        let words: Vec<String> = [
            SignIn::ByClaudeCode,
            SignIn::SignedOut,
            SignIn::Asked,
            SignIn::NotYet,
        ]
        .iter()
        .map(|s| s.state().to_string())
        .collect();
        assert_eq!(
            words,
            [
                "Claude Code signs in",
                "not signed in",
                "needs sign-in",
                "not signed in"
            ]
        );
        assert_eq!(SignInState::SignedIn.words(), "signed in");
        assert_eq!(
            SignIn::Asked.why("gh").as_deref(),
            Some("the server asks for one; run `bosun mcp sign-in gh`")
        );
    }
}
