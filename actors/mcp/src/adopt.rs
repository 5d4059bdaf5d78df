//! Taking servers over from the coding CLIs' own configuration: find them ([`scan`]), and copy
//! the ones the person picks into bosun's list, their values into the keychain ([`import`]).
//!
//! Read only: the CLIs' files are read, never written; no `.credentials.json` is read; no server
//! is started to find anything.

use std::path::{Path, PathBuf};

use crate::RegistryError;
use bosun_shared::mcp::check_server_name;
use bosun_shared::mcp::{SecretLine, ServerKind};
use ractor::ActorRef;

use super::address;
use super::import::{self, CandidateTransport, ImportCandidate, ImportError, ImportSource};
use super::record::ServerRecord;
use super::registry::{self, NewServer, RegistryContext, RegistryMsg, ServerDetail};

/// Where to look for servers to import.
#[derive(Clone, Debug)]
pub struct Scan {
    /// Config files to read beyond the usual places.
    pub extra_files: Vec<PathBuf>,
    /// The person's own `HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME` and `GEMINI_CLI_HOME`, which
    /// say where the usual places are (the daemon's may differ).
    pub env: Vec<(String, String)>,
}

/// Which candidates to import: every new one, the ones picked, or both.
#[derive(Clone, Debug)]
pub struct Import {
    pub scan: Scan,
    /// Every candidate that is new.
    pub all: bool,
    pub picks: Vec<Pick>,
}

/// A candidate picked by name.
#[derive(Clone, Debug)]
pub struct Pick {
    pub name: String,
    /// The name to give it in bosun (its own when `None`).
    pub rename_to: Option<String>,
    /// The file it is in, to choose between servers of one name in several files or scopes.
    pub account: Option<PathBuf>,
}

/// Whether a candidate can be imported as it is, held against the servers bosun has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Not in bosun's list yet.
    New,
    /// A server with the same name and the same command or address is already in the list.
    AlreadyInList,
    /// Another server has this name: import it under another.
    NameTaken,
    /// The name breaks the rules or is reserved: import it under another.
    BadName,
}

/// How a candidate would be reached once added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub kind: ServerKind,
    pub command: Option<String>,
    pub args: Vec<String>,
    /// The address as written in the CLI's file, its query included.
    pub url: Option<String>,
}

/// Everything found, with files that could not be read in words.
pub struct Found {
    pub candidates: Vec<ImportCandidate>,
    pub problems: Vec<String>,
}

/// Reads the usual places (by the person's environment) and the files they named. A file they
/// named that cannot be read is an error; a usual one is a problem reported alongside.
pub fn find(scan: &Scan) -> Result<Found, RegistryError> {
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
pub fn target(c: &ImportCandidate) -> Target {
    let (kind, command, args, url) = match &c.transport {
        CandidateTransport::Stdio { command, args, .. } => {
            (ServerKind::Stdio, Some(command.clone()), args.clone(), None)
        }
        CandidateTransport::Http { url, .. } => {
            (ServerKind::Http, None, Vec::new(), Some(url.clone()))
        }
        CandidateTransport::Sse { url, .. } => {
            (ServerKind::Sse, None, Vec::new(), Some(url.clone()))
        }
    };
    Target {
        kind,
        command,
        args,
        url,
    }
}

fn target_text(c: &ImportCandidate) -> String {
    let Target {
        command, args, url, ..
    } = target(c);
    match url {
        Some(u) => u,
        None => std::iter::once(command.unwrap_or_default())
            .chain(args)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Whether candidate `c` can be imported as `name` among the servers bosun has.
pub fn status(c: &ImportCandidate, name: &str, existing: &[ServerRecord]) -> Status {
    if check_server_name(name).is_err() {
        return Status::BadName;
    }
    match existing.iter().find(|s| s.name == name) {
        None => Status::New,
        Some(s) => {
            let same = match s.kind {
                ServerKind::Stdio => {
                    let mut parts = vec![s.command.clone().unwrap_or_default()];
                    parts.extend(s.args.iter().cloned());
                    parts.join(" ") == target_text(c)
                }
                // The address bosun keeps has its query hidden: compared as shown.
                ServerKind::Http | ServerKind::Sse => {
                    s.shown_url().as_deref() == Some(&address::shown(&target_text(c)))
                }
            };
            if same {
                Status::AlreadyInList
            } else {
                Status::NameTaken
            }
        }
    }
}

/// Imports the picked candidates (or every new one), each through the Registry like `mcp add`.
/// Every pick is checked before any is added; if one fails to be added, those added before it
/// are removed again.
pub async fn import(
    ctx: &RegistryContext,
    registry: &ActorRef<RegistryMsg>,
    params: Import,
) -> Result<Vec<ServerDetail>, RegistryError> {
    let scan = params.scan.clone();
    let found = tokio::task::spawn_blocking(move || find(&scan))
        .await
        .map_err(|e| RegistryError::internal(e.to_string()))??;
    let existing = registry::records(&ctx.store).await?;
    let mut chosen: Vec<(&ImportCandidate, String)> = Vec::new();
    if params.all {
        for c in &found.candidates {
            if status(c, &c.name, &existing) == Status::New
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

    let mut added: Vec<ServerDetail> = Vec::new();
    for (c, name) in chosen {
        let params = add_params(c, name);
        let result = ractor::call!(registry, |reply| RegistryMsg::Add { params, reply })
            .map_err(|e| RegistryError::internal(format!("the MCP registry did not answer: {e}")))
            .and_then(|r| r);
        match result {
            Ok(detail) => added.push(detail),
            Err(e) => {
                for done in &added {
                    let server = done.record.name.clone();
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
    pick: &Pick,
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
    existing: &[ServerRecord],
) -> Result<(), RegistryError> {
    match status(c, name, existing) {
        Status::New => Ok(()),
        Status::AlreadyInList => Err(RegistryError::conflict(format!(
            "`{name}` is already in the list"
        ))),
        Status::NameTaken => Err(RegistryError::conflict(format!(
            "there is already a server named `{name}`; import it under another name with --as {}=NEW",
            c.name
        ))),
        Status::BadName => {
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
    let Target {
        kind,
        command,
        args,
        url,
    } = target(c);
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
