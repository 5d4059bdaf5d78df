//! Taking servers over from the coding CLIs' own configuration: find them ([`scan`]), and copy
//! the ones the person picks into bosun's list, their values into the keychain ([`import`]).
//!
//! Read only: the CLIs' files are read, never written; no `.credentials.json` is read; no server
//! is started to find anything.

use std::path::{Path, PathBuf};

use crate::RegistryError;
use bosun_shared::mcp::check_server_name;
use bosun_shared::mcp::{SecretLine, ServerKind};
use bosun_shared::protocol::mcp::{
    ImportCandidateView, ImportParams, ImportPick, ImportScan, ImportStatus, ServerView,
};
use ractor::ActorRef;

use super::address;
use super::import::{self, CandidateTransport, ImportCandidate, ImportError, ImportSource};
use super::registry::{NewServer, RegistryContext, RegistryMsg};

/// Everything found, with files that could not be read in words.
pub struct Found {
    pub candidates: Vec<ImportCandidate>,
    pub problems: Vec<String>,
}

/// Reads the usual places (by the person's environment) and the files they named. A file they
/// named that cannot be read is an error; a usual one is a problem reported alongside.
pub fn find(scan: &ImportScan) -> Result<Found, RegistryError> {
    let env = |k: &str| {
        scan.env
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let mut found = Found {
        candidates: Vec::new(),
        problems: Vec::new(),
    };
    for (source, file) in import::default_files(&env) {
        match read(source, &file) {
            Ok(c) => found.candidates.extend(c),
            Err(e) => found.problems.push(e.to_string()),
        }
    }
    for file in &scan.extra_files {
        let source = classify(file)?;
        let c = read(source, file).map_err(|e| RegistryError::invalid(e.to_string()))?;
        found.candidates.extend(c);
    }
    Ok(found)
}

fn read(source: ImportSource, file: &Path) -> Result<Vec<ImportCandidate>, ImportError> {
    match source {
        ImportSource::Claude if file.file_name().is_some_and(|n| n == ".mcp.json") => {
            import::read_claude_project(file)
        }
        ImportSource::Claude => import::read_claude(file),
        ImportSource::Codex => import::read_codex(file),
        ImportSource::Gemini => import::read_gemini(file),
    }
}

/// Which CLI a named file belongs to, by its name.
fn classify(file: &Path) -> Result<ImportSource, RegistryError> {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match name {
        ".claude.json" | ".config.json" | ".mcp.json" => Ok(ImportSource::Claude),
        "config.toml" => Ok(ImportSource::Codex),
        "settings.json" => Ok(ImportSource::Gemini),
        _ => Err(RegistryError::invalid(format!(
            "{} is not a file bosun can import from; give a Claude Code .claude.json or .mcp.json, a Codex config.toml or a Gemini settings.json",
            file.display()
        ))),
    }
}

/// How a candidate would be added.
fn target(c: &ImportCandidate) -> (ServerKind, Option<String>, Vec<String>, Option<String>) {
    match &c.transport {
        CandidateTransport::Stdio { command, args, .. } => {
            (ServerKind::Stdio, Some(command.clone()), args.clone(), None)
        }
        CandidateTransport::Http { url, .. } => {
            (ServerKind::Http, None, Vec::new(), Some(url.clone()))
        }
        CandidateTransport::Sse { url, .. } => {
            (ServerKind::Sse, None, Vec::new(), Some(url.clone()))
        }
    }
}

fn target_text(c: &ImportCandidate) -> String {
    let (_, command, args, url) = target(c);
    match url {
        Some(u) => u,
        None => std::iter::once(command.unwrap_or_default())
            .chain(args)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn status(c: &ImportCandidate, name: &str, existing: &[ServerView]) -> ImportStatus {
    if check_server_name(name).is_err() {
        return ImportStatus::BadName;
    }
    match existing.iter().find(|s| s.name == name) {
        None => ImportStatus::New,
        Some(s) => {
            let same = match s.kind {
                ServerKind::Stdio => {
                    let mut parts = vec![s.command.clone().unwrap_or_default()];
                    parts.extend(s.args.iter().cloned());
                    parts.join(" ") == target_text(c)
                }
                // A view's address has its query hidden: compared as shown.
                ServerKind::Http | ServerKind::Sse => {
                    s.url.as_deref() == Some(&address::shown(&target_text(c)))
                }
            };
            if same {
                ImportStatus::AlreadyInList
            } else {
                ImportStatus::NameTaken
            }
        }
    }
}

/// A candidate as the person sees it: names of lines, never values.
pub fn view(c: &ImportCandidate, existing: &[ServerView]) -> ImportCandidateView {
    let (kind, command, args, url) = target(c);
    ImportCandidateView {
        source: c.source.to_string(),
        account: c.account.clone(),
        scope: c.scope.to_string(),
        name: c.name.clone(),
        kind,
        command,
        args,
        url: url.as_deref().map(address::shown),
        env_names: c.env_names().into_iter().map(str::to_string).collect(),
        header_names: c.header_names().into_iter().map(str::to_string).collect(),
        status: status(c, &c.name, existing),
    }
}

/// Imports the picked candidates (or every new one), each through the Registry like `mcp add`.
/// Every pick is checked before any is added; if one fails to be added, those added before it
/// are removed again.
pub async fn import(
    ctx: &RegistryContext,
    registry: &ActorRef<RegistryMsg>,
    params: ImportParams,
) -> Result<Vec<ServerView>, RegistryError> {
    let scan = params.scan.clone();
    let found = tokio::task::spawn_blocking(move || find(&scan))
        .await
        .map_err(|e| RegistryError::internal(e.to_string()))??;
    let existing = super::registry::list(ctx).await?;
    let mut chosen: Vec<(&ImportCandidate, String)> = Vec::new();
    if params.all {
        for c in &found.candidates {
            if status(c, &c.name, &existing) == ImportStatus::New
                && !chosen.iter().any(|(_, n)| n == &c.name)
            {
                chosen.push((c, c.name.clone()));
            }
        }
    }
    for pick in &params.picks {
        let c = picked(&found.candidates, pick)?;
        let name = pick.rename_to.clone().unwrap_or_else(|| c.name.clone());
        check_new(c, &name, &existing)?;
        if chosen.iter().any(|(_, n)| n == &name) {
            return Err(RegistryError::invalid(format!("`{name}` is picked twice")));
        }
        chosen.push((c, name));
    }

    let mut added: Vec<ServerView> = Vec::new();
    for (c, name) in chosen {
        let params = add_params(c, name);
        let result = ractor::call!(registry, |reply| RegistryMsg::Add { params, reply })
            .map_err(|e| RegistryError::internal(format!("the MCP registry did not answer: {e}")))
            .and_then(|r| r);
        match result {
            Ok(view) => added.push(view),
            Err(e) => {
                for done in &added {
                    let server = done.name.clone();
                    let _ = ractor::call!(registry, |reply| RegistryMsg::Remove { server, reply });
                }
                return Err(RegistryError::NothingImported(Box::new(e)));
            }
        }
    }
    Ok(added)
}

/// The candidate a pick names: the one of its name (in the file it names, if any), or the
/// first of several that start the same server.
fn picked<'a>(
    candidates: &'a [ImportCandidate],
    pick: &ImportPick,
) -> Result<&'a ImportCandidate, RegistryError> {
    let matches: Vec<&ImportCandidate> = candidates
        .iter()
        .filter(|c| c.name == pick.name)
        .filter(|c| {
            pick.account
                .as_ref()
                .is_none_or(|a| same_file(a, &c.account))
        })
        .collect();
    match matches.as_slice() {
        [] => Err(RegistryError::not_found(format!(
            "no server `{}` was found to import; `bosun mcp import` lists what can be",
            pick.name
        ))),
        [one] => Ok(*one),
        [first, ..] => {
            let files: Vec<String> = matches
                .iter()
                .map(|c| c.account.display().to_string())
                .collect();
            if matches.iter().all(|c| target_text(c) == target_text(first)) {
                Ok(*first)
            } else {
                Err(RegistryError::invalid(format!(
                    "`{}` is in several places ({}); say which with --from-file",
                    pick.name,
                    files.join(", ")
                )))
            }
        }
    }
}

/// Refuses to import `c` as `name` unless it is new to the list under a good name.
fn check_new(
    c: &ImportCandidate,
    name: &str,
    existing: &[ServerView],
) -> Result<(), RegistryError> {
    match status(c, name, existing) {
        ImportStatus::New => Ok(()),
        ImportStatus::AlreadyInList => Err(RegistryError::conflict(format!(
            "`{name}` is already in the list"
        ))),
        ImportStatus::NameTaken => Err(RegistryError::conflict(format!(
            "there is already a server named `{name}`; import it under another name with --as {}=NEW",
            c.name
        ))),
        ImportStatus::BadName => {
            let why = check_server_name(name)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            Err(RegistryError::invalid(format!(
                "{why}; import it under another name with --as {}=NEW",
                c.name
            )))
        }
    }
}

/// What `mcp add` is given to add candidate `c` as `name`.
fn add_params(c: &ImportCandidate, name: String) -> NewServer {
    let (kind, command, args, url) = target(c);
    let lines = |pairs: &[(String, String)]| -> Vec<SecretLine> {
        pairs
            .iter()
            .map(|(k, v)| SecretLine {
                name: k.clone(),
                value: v.clone(),
            })
            .collect()
    };
    let (env, headers) = match &c.transport {
        CandidateTransport::Stdio { env, .. } => (lines(env), Vec::new()),
        CandidateTransport::Http { headers, .. } | CandidateTransport::Sse { headers, .. } => {
            (Vec::new(), lines(headers))
        }
    };
    NewServer {
        command,
        args,
        url,
        env,
        headers,
        ..NewServer::reached(name, kind)
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p));
    canon(a) == canon(b)
}
