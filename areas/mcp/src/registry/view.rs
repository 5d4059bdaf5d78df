//! A server as the UI shows it: each secret line marked saved or missing in the keychain, the
//! gateway's ledger, the built-in browser's program and what it misses, and its sign-in.

use std::path::PathBuf;

use bosun_auth::record::{ClientAuth, Grant, SignInRecord};
use bosun_kit::keychain::Keychain;
use bosun_shared::mcp::{ServerKind, SignInBy};
use bosun_shared::protocol::mcp::{BrowserView, ServerView, SignInView};
use bosun_store::Store;

use super::SIGNED_OUT;
use crate::browser;
use crate::ledger;
use crate::record::ServerRecord;

pub(super) fn view_of(store: &Store, keychain: &Keychain, rec: &ServerRecord) -> ServerView {
    let mut view = rec.view(|kind, name| {
        keychain
            .get(&kind.key(rec.id, name))
            .ok()
            .flatten()
            .is_some()
    });
    ledger::fill_in(&mut view, rec);
    if let Some(settings) = &rec.browser {
        let path = std::env::var("PATH").ok();
        let mut missing = Vec::new();
        let node = browser::check_node(path.as_deref())
            .map_err(|e| missing.push(e.to_string()))
            .ok();
        let program = browser::find_program(settings, path.as_deref())
            .map_err(|e| missing.push(e.to_string()))
            .ok();
        let shown = match &program {
            Some(p) => browser::command_line(settings, p, false),
            None => browser::command_line(
                settings,
                &browser::Program::ServerFinds(PathBuf::new()),
                false,
            ),
        };
        view.command = Some(shown.command);
        view.args = shown.args;
        view.browser = Some(BrowserView {
            version: settings.version.clone(),
            program_set: settings.program.clone(),
            program_found: program.map(|p| p.path().to_path_buf()),
            node,
            missing,
        });
    }
    view.sign_in = sign_in_view(store, rec);
    if view.last_error.as_deref() == Some(SIGNED_OUT) {
        // Said by the sign-in's state.
        view.last_error = None;
    }
    // A look that failed for want of a sign-in is old news once signed in.
    if view
        .sign_in
        .as_ref()
        .is_some_and(|s| s.state == "signed in")
        && view
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("needs sign-in"))
    {
        view.last_error = None;
    }
    view
}

/// A server's sign-in, for the views (a server started as a command has none).
pub fn sign_in_view(store: &Store, rec: &ServerRecord) -> Option<SignInView> {
    if rec.kind == ServerKind::Stdio {
        return None;
    }
    let empty = |state: &str, why: Option<String>| SignInView {
        state: state.to_string(),
        why,
        issuer: None,
        client_id: rec.client_id.clone(),
        registered: false,
        scope: None,
        expires_at: None,
        signed_in_at: None,
        refreshed_at: None,
        wanted_scope: None,
        client_credentials: None,
        dpop: false,
    };
    if rec.sign_in_by == SignInBy::ClaudeCode {
        return Some(empty("Claude Code signs in", None));
    }
    match store.get::<SignInRecord>(&rec.id).ok().flatten() {
        Some(s) => Some(SignInView {
            state: if s.is_signed_in() {
                "signed in".to_string()
            } else {
                "needs sign-in".to_string()
            },
            why: s.needs_sign_in.clone(),
            issuer: Some(s.issuer.clone()),
            client_id: Some(s.client_id.clone()),
            registered: s.registered,
            scope: s.scope.clone(),
            expires_at: s.expires_at,
            signed_in_at: Some(s.signed_in_at),
            refreshed_at: s.refreshed_at,
            wanted_scope: s.wanted_scope.clone(),
            client_credentials: (s.grant == Grant::ClientCredentials).then(|| {
                match s.client_auth {
                    ClientAuth::PrivateKeyJwt => "private_key_jwt",
                    ClientAuth::ClientSecretBasic => "client_secret_basic",
                    ClientAuth::ClientSecretPost => "client_secret_post",
                    ClientAuth::None => "none",
                }
                .to_string()
            }),
            dpop: s.dpop,
        }),
        None if rec.last_error.as_deref() == Some(SIGNED_OUT) => Some(empty(
            "not signed in",
            Some(format!(
                "signed out; run `bosun mcp sign-in {}` to use it again",
                rec.name
            )),
        )),
        None => {
            let asked = rec
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("needs sign-in"));
            Some(if asked {
                empty(
                    "needs sign-in",
                    Some(format!(
                        "the server asks for one; run `bosun mcp sign-in {}`",
                        rec.name
                    )),
                )
            } else {
                empty("not signed in", None)
            })
        }
    }
}
