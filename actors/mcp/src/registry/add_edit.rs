//! Adding a server and changing one: each checked whole before anything is written, its secret
//! values saved in the keychain before the record that names them, the values of lines it no
//! longer names deleted after; the built-in browser changes its version and program only.

use std::num::NonZeroU16;

use bosun_auth::record::configured_secret_key;
use bosun_kit::edit::Edit;
use bosun_shared::mcp::{SecretLine, ServerKind, SignInBy};
use bosun_shared::{ServerId, Timestamp};
use tracing::{info, warn};

use super::checks::{
    check_browser_options, check_client_metadata_url, check_lines, check_sign_in_settings,
    gateway_rules,
};
use super::{
    NewServer, RegistryContext, ServerDetail, ServerEdit, builtin_refusal, check_name,
    delete_values, detail, find, line_pairs, save_values, stdio_allow_http,
};
use crate::RegistryError;
use crate::address::{self, Address};
use crate::browser;
use crate::record::{self, LineKind, ServerRecord};

pub(super) async fn add(
    ctx: &RegistryContext,
    p: NewServer,
) -> Result<ServerDetail, RegistryError> {
    check_name(ctx, &p.name, None).await?;
    if p.allow_http && p.kind == ServerKind::Stdio {
        return Err(stdio_allow_http());
    }
    let target = address::check_target(p.kind, &p.command, &p.url, p.allow_http)?;
    check_browser_options(&p.command, &p.args)?;
    check_lines(&p.env, &p.headers)?;
    check_sign_in_settings(
        p.kind,
        p.client_id.as_deref(),
        &p.client_secret,
        Some(p.sign_in_by),
    )?;
    let now = Timestamp::now();
    let rec = ServerRecord {
        id: ServerId::new(),
        name: p.name,
        kind: p.kind,
        command: p.command,
        args: p.args,
        url: target.as_ref().map(|a| a.base.clone()),
        query_in_keychain: target.as_ref().is_some_and(|a| a.query.is_some()),
        allow_http: p.allow_http,
        env_names: p.env.iter().map(|l| l.name.clone()).collect(),
        header_names: p.headers.iter().map(|l| l.name.clone()).collect(),
        created_at: now,
        updated_at: now,
        listing: None,
        last_error: None,
        browser: None,
        client_id: p.client_id.clone(),
        callback_port: p.callback_port.map(NonZeroU16::get),
        sign_in_by: p.sign_in_by,
        client_metadata_url: check_client_metadata_url(p.kind, p.client_metadata_url.as_deref())?,
        rules: Default::default(),
        approved_tools: None,
    };
    let lines: Vec<(LineKind, SecretLine)> = p
        .env
        .into_iter()
        .map(|l| (LineKind::Env, l))
        .chain(p.headers.into_iter().map(|l| (LineKind::Header, l)))
        .collect();
    let mut pairs = line_pairs(rec.id, lines);
    if let Some(secret) = p.client_secret {
        pairs.push((configured_secret_key(rec.id), secret.0));
    }
    if let Some(query) = target.and_then(|a| a.query) {
        pairs.push((address::query_key(rec.id), query));
    }
    let keys: Vec<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
    save_values(&ctx.keychain, pairs).await?;
    if let Err(e) = ctx.writer.put(&rec).await {
        let _ = delete_values(&ctx.keychain, keys).await;
        return Err(RegistryError::from(e));
    }
    info!(server = %rec.name, id = %rec.id, "server added");
    detail(ctx, rec).await
}

pub(super) async fn edit(
    ctx: &RegistryContext,
    mut p: ServerEdit,
) -> Result<ServerDetail, RegistryError> {
    let mut rec = find(&ctx.store, &p.server).await?;
    if rec.browser.is_some() {
        return edit_builtin(ctx, rec, p).await;
    }
    if p.browser_version.is_some() || !p.browser_program.is_keep() {
        return Err(RegistryError::invalid(format!(
            "`{}` is not the built-in browser; a version and browser program are set on {} only",
            rec.name,
            browser::NAME
        )));
    }
    if let Some(kind) = p.kind {
        rec.kind = kind;
    }
    if let Some(c) = p.command.take() {
        rec.command = Some(c);
    }
    if let Some(a) = p.args.take() {
        rec.args = a;
    }
    // What a sign-in is for: the address without its query.
    let old_target = (rec.kind, rec.url.as_deref().map(address::base_of));
    if p.allow_http == Some(true) && rec.kind == ServerKind::Stdio {
        return Err(stdio_allow_http());
    }
    if let Some(allow) = p.allow_http {
        rec.allow_http = allow;
    }
    let mut keys = KeychainChanges::default();
    edit_address(&mut rec, p.url.take(), &mut keys)?;
    check_browser_options(&rec.command, &rec.args)?;
    check_lines(&p.set_env, &p.set_headers)?;
    let by = edit_sign_in(&mut rec, &mut p, &mut keys)?;
    rec.rules = gateway_rules(&rec, std::mem::take(&mut p.gateway))?;
    // A sign-in is for one address and one way of signing in: changing either ends it.
    let sign_out =
        (rec.kind, rec.url.as_deref().map(address::base_of)) != old_target || by != rec.sign_in_by;
    rec.sign_in_by = by;
    edit_line_names(&mut rec, &p, &mut keys)?;
    rec.updated_at = Timestamp::now();
    let lines: Vec<(LineKind, SecretLine)> = p
        .set_env
        .into_iter()
        .map(|l| (LineKind::Env, l))
        .chain(p.set_headers.into_iter().map(|l| (LineKind::Header, l)))
        .collect();
    keys.save.extend(line_pairs(rec.id, lines));
    if sign_out {
        bosun_auth::sign_out(&ctx.auth, rec.id).await?;
    }
    save_values(&ctx.keychain, keys.save).await?;
    ctx.writer.put(&rec).await?;
    // The record no longer names them: the old lines' values go.
    if let Err(e) = delete_values(&ctx.keychain, keys.stale).await {
        warn!(server = %rec.name, error = %e, "could not delete the values of removed lines");
    }
    info!(server = %rec.name, "server changed");
    detail(ctx, rec).await
}

/// What an edit does to the keychain once the record is saved: values to save, and the keys
/// of values the record no longer names.
#[derive(Default)]
struct KeychainChanges {
    save: Vec<(String, String)>,
    stale: Vec<String>,
}

/// Fits the record's address to its kind and checks it again, keeping a query in the keychain.
fn edit_address(
    rec: &mut ServerRecord,
    url: Option<String>,
    keys: &mut KeychainChanges,
) -> Result<(), RegistryError> {
    let given_url = url.is_some();
    match rec.kind {
        ServerKind::Stdio => {
            rec.url = None;
            rec.allow_http = false;
        }
        ServerKind::Http | ServerKind::Sse => {
            rec.command = None;
            rec.args.clear();
        }
    }
    if !given_url && let Some(query) = record::take_stored_query(rec) {
        // An older bosun kept this query in the store: the keychain keeps it from now on.
        keys.save.push((address::query_key(rec.id), query));
    }
    // The address given, or the one kept (checked again: plain http may no longer be allowed).
    let url = if given_url { url } else { rec.url.clone() };
    let checked = address::check_target(rec.kind, &rec.command, &url, rec.allow_http)?;
    match checked {
        Some(Address {
            base,
            query: Some(query),
        }) => {
            rec.url = Some(base);
            rec.query_in_keychain = true;
            keys.save.push((address::query_key(rec.id), query));
        }
        Some(Address { base, query: None }) => {
            rec.url = Some(base);
            if given_url {
                rec.query_in_keychain = false;
            }
        }
        None => rec.query_in_keychain = false,
    }
    if !rec.query_in_keychain {
        keys.stale.push(address::query_key(rec.id));
    }
    Ok(())
}

/// Checks and applies the sign-in settings given; returns the way of signing in from now on.
fn edit_sign_in(
    rec: &mut ServerRecord,
    p: &mut ServerEdit,
    keys: &mut KeychainChanges,
) -> Result<SignInBy, RegistryError> {
    let by = p.sign_in_by.unwrap_or(rec.sign_in_by);
    let given_id = match &p.client_id {
        Edit::Set(id) => Some(id.as_str()),
        Edit::Keep | Edit::Clear => None,
    };
    check_sign_in_settings(rec.kind, given_id, &p.client_secret, Some(by))?;
    match std::mem::take(&mut p.client_id) {
        Edit::Clear => {
            rec.client_id = None;
            keys.stale.push(configured_secret_key(rec.id));
        }
        Edit::Set(id) => rec.client_id = Some(id),
        Edit::Keep => {}
    }
    if let Some(secret) = p.client_secret.take() {
        if rec.client_id.is_none() {
            return Err(RegistryError::invalid(format!(
                "a client secret goes with a client id; give both: `bosun mcp edit {} --client-id ID --client-secret-stdin`",
                rec.name
            )));
        }
        keys.save.push((configured_secret_key(rec.id), secret.0));
    }
    std::mem::take(&mut p.callback_port)
        .map(NonZeroU16::get)
        .apply(&mut rec.callback_port);
    match &p.client_metadata_url {
        Edit::Keep => {}
        Edit::Clear => rec.client_metadata_url = None,
        Edit::Set(doc) => rec.client_metadata_url = check_client_metadata_url(rec.kind, Some(doc))?,
    }
    Ok(by)
}

/// Removes and adds the names of environment lines and headers; a name to remove must be there.
fn edit_line_names(
    rec: &mut ServerRecord,
    p: &ServerEdit,
    keys: &mut KeychainChanges,
) -> Result<(), RegistryError> {
    for (names, removed, what) in [
        (&rec.env_names, &p.remove_env, "environment line"),
        (&rec.header_names, &p.remove_headers, "header"),
    ] {
        if let Some(missing) = removed.iter().find(|r| !names.contains(r)) {
            return Err(RegistryError::invalid(format!(
                "`{}` has no {what} {missing} to remove",
                rec.name
            )));
        }
    }
    for name in &p.remove_env {
        rec.env_names.retain(|n| n != name);
        keys.stale.push(LineKind::Env.key(rec.id, name));
    }
    for name in &p.remove_headers {
        rec.header_names.retain(|n| n != name);
        keys.stale.push(LineKind::Header.key(rec.id, name));
    }
    for l in &p.set_env {
        if !rec.env_names.contains(&l.name) {
            rec.env_names.push(l.name.clone());
        }
    }
    for l in &p.set_headers {
        if !rec.header_names.contains(&l.name) {
            rec.header_names.push(l.name.clone());
        }
    }
    Ok(())
}

/// The built-in browser: its version and its program, nothing else.
async fn edit_builtin(
    ctx: &RegistryContext,
    mut rec: ServerRecord,
    p: ServerEdit,
) -> Result<ServerDetail, RegistryError> {
    let other = p.command.is_some()
        || p.args.is_some()
        || p.url.is_some()
        || p.allow_http.is_some()
        || p.kind.is_some()
        || !p.set_env.is_empty()
        || !p.remove_env.is_empty()
        || !p.set_headers.is_empty()
        || !p.remove_headers.is_empty();
    if other {
        return Err(builtin_refusal("changed that way"));
    }
    let mut settings = rec.browser.clone().unwrap_or_default();
    if let Some(v) = p.browser_version {
        browser::check_version(v.trim())?;
        settings.version = v.trim().to_string();
    }
    match p.browser_program {
        Edit::Keep => {}
        Edit::Clear => settings.program = None,
        Edit::Set(path) => {
            browser::check_program(&path)?;
            settings.program = Some(path);
        }
    }
    if rec.browser.as_ref().map(|b| &b.version) != Some(&settings.version) {
        // Another version may have other tools: the old listing no longer says what it has,
        // and the person chose it: its first listing approves what it finds.
        rec.forget_listing();
    }
    rec.browser = Some(settings);
    rec.updated_at = Timestamp::now();
    ctx.writer.put(&rec).await?;
    info!(server = %rec.name, "built-in browser changed");
    detail(ctx, rec).await
}
