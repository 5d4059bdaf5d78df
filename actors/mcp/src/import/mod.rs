//! Finding the MCP servers people already configured in the three coding CLIs, so they can be
//! imported into bosun's one list.
//!
//! What it reads, and nothing else:
//!
//! - **Claude Code**: `$CLAUDE_CONFIG_DIR/.claude.json` (else `~/.claude.json`): user scope in the
//!   top-level `"mcpServers"`, local scope in `"projects"."<folder>"."mcpServers"`; and, when asked,
//!   a project's `<folder>/.mcp.json` (project scope).
//! - **Codex CLI**: `$CODEX_HOME/config.toml` (else `~/.codex/config.toml`), the
//!   `[mcp_servers.<name>]` tables.
//! - **Gemini CLI**: `~/.gemini/settings.json` (`$GEMINI_CLI_HOME/.gemini/settings.json` when that
//!   is set), and, when asked, a project's `<folder>/.gemini/settings.json`: the `"mcpServers"`
//!   object. Gemini allows `//` and `/* */` comments in that file; so does this reader.
//!
//! It is read-only: it never writes, creates or locks any of these files, never starts a server
//! (it does not run `claude mcp list` or any other CLI), and never reads `.credentials.json` or
//! any other file where the CLIs keep their sign-ins.
//!
//! Env and header **values are secrets**. [`ImportCandidate`] and [`CandidateTransport`] keep them
//! (an import copies them into the keychain), but their `Debug` prints the names only, like
//! `GITHUB_TOKEN=<value>`.
//!
//! References to environment variables are never resolved. The text is kept as written, so the
//! person sees what the CLI would expand at run time:
//!
//! - Claude Code `${VAR}` / `${VAR:-default}` and Gemini `$VAR` / `${VAR}` inside values stay as
//!   they are.
//! - Codex keeps some secrets *by name* in separate keys. They become values in the Claude Code
//!   `${VAR}` form (which the Claude Code runs expand from their environment), never the
//!   variable's content: `bearer_token_env_var = "T"` becomes the header
//!   `Authorization: Bearer ${T}` (unless an `Authorization` header is already set),
//!   `env_http_headers = { "X-Key" = "K" }` becomes the header `X-Key: ${K}`, and
//!   `env_vars = ["A", { name = "B" }]` (variables passed through from the environment) become
//!   the env lines `A=${A}` and `B=${B}`.
//!
//! What the CLIs write, measured with Claude Code 2.1.332, Codex CLI 0.171.0 and Gemini CLI
//! 0.61.0 (fixtures in `tests/fixtures/import/`):
//!
//! - Claude Code: `{"type": "stdio", "command", "args", "env"}`, `{"type": "http" | "sse", "url",
//!   "headers"}`. An entry without `"type"` is stdio (Claude Code treats it so; `claude mcp
//!   add-json` stores it without one). Other types (`"ws"`, which `add-json` accepts, and the
//!   IDE/SDK ones) are skipped, as are entries missing their command or address.
//! - Codex: `command`/`args`/`env` (stdio) or `url` (Streamable HTTP; Codex has no SSE) with
//!   `http_headers`, `env_http_headers`, `bearer_token_env_var`. An entry Codex itself refuses
//!   (both `url` and `command`, a literal `bearer_token`, neither) is skipped. `enabled = false`
//!   servers are still found.
//! - Gemini CLI: `command`/`args`/`env` (stdio); `"url"` with `"type": "http"` (Streamable HTTP,
//!   what `gemini mcp add -t http` writes) or `"type": "sse"`; the older `"httpUrl"` (Streamable
//!   HTTP, wins over `"url"`); `"headers"`. A `"url"` without `"type"` is read as SSE, as Gemini's
//!   documentation says (Gemini 0.61 itself tries Streamable HTTP first there, then SSE).
//!
//! Not carried over: working folders (`cwd`), timeouts, tool filters, trust flags, OAuth client
//! settings and header helpers; the person sets those in bosun.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Which coding CLI a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportSource {
    Claude,
    Codex,
    Gemini,
}

impl fmt::Display for ImportSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImportSource::Claude => "Claude Code",
            ImportSource::Codex => "Codex",
            ImportSource::Gemini => "Gemini CLI",
        })
    }
}

/// Where in the CLI's configuration a server is set.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ImportScope {
    /// For every folder (Claude Code `--scope user`, Codex, Gemini `-s user`).
    User,
    /// Claude Code's local scope: only in this folder, kept in `.claude.json`.
    Local { folder: PathBuf },
    /// Kept in the folder itself: Claude Code's `.mcp.json`, Gemini's `.gemini/settings.json`.
    Project { folder: PathBuf },
}

impl fmt::Display for ImportScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportScope::User => f.write_str("user"),
            ImportScope::Local { folder } => write!(f, "local ({})", folder.display()),
            ImportScope::Project { folder } => write!(f, "project ({})", folder.display()),
        }
    }
}

/// How bosun would talk to a found server. Env and header values are secrets: `Debug` prints
/// their names only.
#[derive(Clone, PartialEq, Eq)]
pub enum CandidateTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    Sse {
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl CandidateTransport {
    /// `"stdio"`, `"http"` or `"sse"`, the words the CLIs use.
    pub fn kind(&self) -> &'static str {
        match self {
            CandidateTransport::Stdio { .. } => "stdio",
            CandidateTransport::Http { .. } => "http",
            CandidateTransport::Sse { .. } => "sse",
        }
    }
}

impl fmt::Debug for CandidateTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CandidateTransport::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &NamesOnly(env))
                .finish(),
            CandidateTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &NamesOnly(headers))
                .finish(),
            CandidateTransport::Sse { url, headers } => f
                .debug_struct("Sse")
                .field("url", url)
                .field("headers", &NamesOnly(headers))
                .finish(),
        }
    }
}

/// Prints `[NAME=<value>, …]`: the names of env or header lines, never their values.
struct NamesOnly<'a>(&'a [(String, String)]);

impl fmt::Debug for NamesOnly<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| HiddenValue(name)))
            .finish()
    }
}

struct HiddenValue<'a>(&'a str);

impl fmt::Debug for HiddenValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=<value>", self.0)
    }
}

/// One MCP server found in a CLI's configuration, as it is written there.
#[derive(Clone, PartialEq, Eq)]
pub struct ImportCandidate {
    pub source: ImportSource,
    /// The config file it came from (for Claude Code, this names the account).
    pub account: PathBuf,
    pub scope: ImportScope,
    pub name: String,
    pub transport: CandidateTransport,
}

impl ImportCandidate {
    /// The names of its env lines (stdio), in file order.
    pub fn env_names(&self) -> Vec<&str> {
        match &self.transport {
            CandidateTransport::Stdio { env, .. } => env.iter().map(|(k, _)| k.as_str()).collect(),
            CandidateTransport::Http { .. } | CandidateTransport::Sse { .. } => Vec::new(),
        }
    }

    /// The names of its header lines (http, sse), in file order.
    pub fn header_names(&self) -> Vec<&str> {
        match &self.transport {
            CandidateTransport::Stdio { .. } => Vec::new(),
            CandidateTransport::Http { headers, .. } | CandidateTransport::Sse { headers, .. } => {
                headers.iter().map(|(k, _)| k.as_str()).collect()
            }
        }
    }
}

impl fmt::Debug for ImportCandidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImportCandidate")
            .field("source", &self.source)
            .field("account", &self.account)
            .field("scope", &self.scope)
            .field("name", &self.name)
            .field("transport", &self.transport)
            .finish()
    }
}

/// Why a config file could not be read. The messages never quote the file's content.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("could not read {}: {}", .path.display(), io_words(.source))]
    Unreadable { path: PathBuf, source: io::Error },
    /// `detail` goes right after the path, like "is not valid JSON (line 3, column 7: …); fix it
    /// in Claude Code or leave it out".
    #[error("{} {detail}", .path.display())]
    Malformed { path: PathBuf, detail: String },
}

fn io_words(err: &io::Error) -> String {
    let kind = err.kind();
    if kind == io::ErrorKind::NotFound {
        "there is no such file".to_owned()
    } else if kind == io::ErrorKind::PermissionDenied {
        "permission denied".to_owned()
    } else if kind == io::ErrorKind::IsADirectory {
        "it is a folder, not a file".to_owned()
    } else {
        kind.to_string()
    }
}

/// The user-scope and local-scope servers in a Claude Code `.claude.json`.
///
/// User scope is the top-level `"mcpServers"`; local scope is `"projects"."<folder>"."mcpServers"`
/// ([`ImportScope::Local`] with that folder). Entries Claude Code would not start, or that bosun
/// cannot talk to (an unknown `"type"`, no command or address), are left out; the rest of the file
/// still counts.
pub fn read_claude(file: &Path) -> Result<Vec<ImportCandidate>, ImportError> {
    let src = ImportSource::Claude;
    let root = read_json(file, src, false)?;
    let mut found = Vec::new();
    collect_json_servers(
        file,
        src,
        &root,
        "\"mcpServers\"",
        &ImportScope::User,
        claude_entry,
        &mut found,
    )?;
    if let Some(projects) = root.get("projects").and_then(Value::as_object) {
        for (folder, project) in projects {
            if !project.is_object() {
                continue;
            }
            let scope = ImportScope::Local {
                folder: PathBuf::from(folder),
            };
            collect_json_servers(
                file,
                src,
                project,
                &format!("\"projects\".\"{folder}\".\"mcpServers\""),
                &scope,
                claude_entry,
                &mut found,
            )?;
        }
    }
    Ok(found)
}

/// The servers in a project's `.mcp.json` (`{"mcpServers": …}`), as [`ImportScope::Project`]
/// with the folder the file is in.
pub fn read_claude_project(mcp_json: &Path) -> Result<Vec<ImportCandidate>, ImportError> {
    let src = ImportSource::Claude;
    let root = read_json(mcp_json, src, false)?;
    let scope = ImportScope::Project {
        folder: folder_above(mcp_json, 1),
    };
    let mut found = Vec::new();
    collect_json_servers(
        mcp_json,
        src,
        &root,
        "\"mcpServers\"",
        &scope,
        claude_entry,
        &mut found,
    )?;
    Ok(found)
}

/// The servers in a Codex `config.toml` (`[mcp_servers.<name>]`), all user scope.
pub fn read_codex(file: &Path) -> Result<Vec<ImportCandidate>, ImportError> {
    let src = ImportSource::Codex;
    let text = read_text(file, src)?;
    let root = parse_toml(&text).map_err(|e| malformed(file, src, &e.to_string()))?;
    let Some(servers) = root.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_object() else {
        return Err(malformed(file, src, "has mcp_servers that is not a table"));
    };
    let mut found = Vec::new();
    for (name, entry) in servers {
        push_entry(
            file,
            src,
            &ImportScope::User,
            name,
            codex_entry(entry),
            &mut found,
        );
    }
    Ok(found)
}

/// The servers in a Gemini CLI user `settings.json` (`"mcpServers"`), all user scope.
pub fn read_gemini(file: &Path) -> Result<Vec<ImportCandidate>, ImportError> {
    read_gemini_as(file, &ImportScope::User)
}

/// The servers in a project's `<folder>/.gemini/settings.json`, as [`ImportScope::Project`] with
/// that folder.
pub fn read_gemini_project(settings_json: &Path) -> Result<Vec<ImportCandidate>, ImportError> {
    let scope = ImportScope::Project {
        folder: folder_above(settings_json, 2),
    };
    read_gemini_as(settings_json, &scope)
}

fn read_gemini_as(file: &Path, scope: &ImportScope) -> Result<Vec<ImportCandidate>, ImportError> {
    let src = ImportSource::Gemini;
    let root = read_json(file, src, true)?;
    let mut found = Vec::new();
    collect_json_servers(
        file,
        src,
        &root,
        "\"mcpServers\"",
        scope,
        gemini_entry,
        &mut found,
    )?;
    Ok(found)
}

/// Where each CLI keeps its config for the current user, from the environment (`env` looks a
/// variable up; an empty value counts as unset). Only files that exist are listed.
///
/// - Claude Code: `$CLAUDE_CONFIG_DIR/.claude.json` if that is set, else `~/.claude.json`; when
///   that file is missing, the older `.config.json` in `$CLAUDE_CONFIG_DIR` (else `~/.claude`),
///   which Claude Code still reads.
/// - Codex: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`.
/// - Gemini CLI: `~/.gemini/settings.json`, with `$GEMINI_CLI_HOME` in place of `~` if set.
pub fn default_files(env: &dyn Fn(&str) -> Option<String>) -> Vec<(ImportSource, PathBuf)> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = var("HOME");
    let mut files = Vec::new();

    let claude_dir = var("CLAUDE_CONFIG_DIR");
    let claude = claude_dir
        .clone()
        .or_else(|| home.clone())
        .map(|dir| dir.join(".claude.json"));
    let claude_legacy = claude_dir
        .or_else(|| home.as_ref().map(|h| h.join(".claude")))
        .map(|dir| dir.join(".config.json"));
    if let Some(file) = [claude, claude_legacy]
        .into_iter()
        .flatten()
        .find(|f| f.exists())
    {
        files.push((ImportSource::Claude, file));
    }

    let codex = var("CODEX_HOME")
        .or_else(|| home.as_ref().map(|h| h.join(".codex")))
        .map(|dir| dir.join("config.toml"));
    if let Some(file) = codex.filter(|f| f.exists()) {
        files.push((ImportSource::Codex, file));
    }

    let gemini = var("GEMINI_CLI_HOME")
        .or(home)
        .map(|dir| dir.join(".gemini").join("settings.json"));
    if let Some(file) = gemini.filter(|f| f.exists()) {
        files.push((ImportSource::Gemini, file));
    }
    files
}

// ---------------------------------------------------------------------------------------------
// Reading files

fn read_text(path: &Path, src: ImportSource) -> Result<String, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Unreadable {
        path: path.to_owned(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|_| malformed(path, src, "is not UTF-8 text"))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

/// Reads a JSON file whose top level must be an object. `comments`: allow `//` and `/* */`
/// (Gemini's settings.json).
fn read_json(path: &Path, src: ImportSource, comments: bool) -> Result<Value, ImportError> {
    let text = read_text(path, src)?;
    let text = if comments {
        strip_json_comments(&text)
    } else {
        text
    };
    let root: Value = serde_json::from_str(&text).map_err(|e| {
        let detail = format!("is not valid JSON ({})", json_error_words(&e));
        malformed(path, src, &detail)
    })?;
    if !root.is_object() {
        return Err(malformed(path, src, "is not a JSON object"));
    }
    Ok(root)
}

fn malformed(path: &Path, src: ImportSource, what: &str) -> ImportError {
    ImportError::Malformed {
        path: path.to_owned(),
        detail: format!("{what}; fix it in {src} or leave it out"),
    }
}

/// "line 3, column 7: expected `,` or `}`", without serde_json's own " at line … column …".
fn json_error_words(err: &serde_json::Error) -> String {
    let (line, column) = (err.line(), err.column());
    let message = match err.classify() {
        serde_json::error::Category::Eof => "the file ends too early".to_owned(),
        serde_json::error::Category::Io
        | serde_json::error::Category::Syntax
        | serde_json::error::Category::Data => {
            let full = err.to_string();
            let suffix = format!(" at line {line} column {column}");
            full.strip_suffix(&suffix).unwrap_or(&full).to_owned()
        }
    };
    format!("line {line}, column {column}: {message}")
}

/// Replaces `//` and `/* */` comments outside strings with spaces (newlines kept), so line and
/// column numbers in errors still match the file. Like the strip-json-comments Gemini CLI uses;
/// trailing commas stay errors, as in Gemini.
fn strip_json_comments(text: &str) -> String {
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum State {
        Code,
        Str,
        StrEscape,
        Line,
        Block,
    }
    let mut out = String::with_capacity(text.len());
    let mut state = State::Code;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            State::Code => {
                if c == '"' {
                    state = State::Str;
                    out.push(c);
                } else if c == '/' && chars.peek() == Some(&'/') {
                    chars.next();
                    out.push_str("  ");
                    state = State::Line;
                } else if c == '/' && chars.peek() == Some(&'*') {
                    chars.next();
                    out.push_str("  ");
                    state = State::Block;
                } else {
                    out.push(c);
                }
            }
            State::Str => {
                if c == '\\' {
                    state = State::StrEscape;
                } else if c == '"' {
                    state = State::Code;
                }
                out.push(c);
            }
            State::StrEscape => {
                state = State::Str;
                out.push(c);
            }
            State::Line => {
                if c == '\n' || c == '\r' {
                    state = State::Code;
                    out.push(c);
                } else {
                    out.push(' ');
                }
            }
            State::Block => {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    out.push_str("  ");
                    state = State::Code;
                } else if c == '\n' || c == '\r' {
                    out.push(c);
                } else {
                    out.push(' ');
                }
            }
        }
    }
    out
}

/// A file that is not valid TOML: from `parse_toml`, its words the detail for
/// [`ImportError::Malformed`] (they never quote the file). Retrying cannot help until the file
/// is fixed.
#[derive(Debug, thiserror::Error)]
#[error("is not valid TOML ({}{message})", .at.map(|(line, column)| format!("line {line}, column {column}: ")).unwrap_or_default())]
struct InvalidToml {
    /// The line and column where the parser stopped, when it says.
    at: Option<(usize, usize)>,
    /// The parser's message, on one line.
    message: String,
}

/// Parses TOML into a JSON value, keeping the file's order of keys (the `toml` crate's own maps
/// are sorted).
fn parse_toml(text: &str) -> Result<Value, InvalidToml> {
    let root = toml::de::DeTable::parse(text).map_err(|e| {
        let message = e
            .message()
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(", ");
        InvalidToml {
            at: e.span().map(|span| line_column(text, span.start)),
            message,
        }
    })?;
    Ok(toml_table_to_json(root.get_ref()))
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |last| last.chars().count())
        + 1;
    (line, column)
}

fn toml_table_to_json(table: &toml::de::DeTable<'_>) -> Value {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    let mut map = Map::new();
    for (key, value) in entries {
        map.insert(key.get_ref().to_string(), toml_to_json(value.get_ref()));
    }
    Value::Object(map)
}

fn toml_to_json(value: &toml::de::DeValue<'_>) -> Value {
    use toml::de::DeValue;
    match value {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
            .map_or_else(|_| Value::String(i.as_str().to_owned()), Value::from),
        DeValue::Float(x) => x
            .as_str()
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(x.as_str().to_owned()), Value::Number),
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::String(d.to_string()),
        DeValue::Array(items) => {
            Value::Array(items.iter().map(|v| toml_to_json(v.get_ref())).collect())
        }
        DeValue::Table(t) => toml_table_to_json(t),
    }
}

/// The folder `levels` steps above a file (1: the file's own folder).
fn folder_above(file: &Path, levels: usize) -> PathBuf {
    let mut folder = file;
    for _ in 0..levels {
        match folder.parent() {
            Some(parent) => folder = parent,
            None => break,
        }
    }
    folder.to_owned()
}

// ---------------------------------------------------------------------------------------------
// Entries

type EntryReader = fn(&Value) -> Result<CandidateTransport, &'static str>;

/// Reads `container["mcpServers"]`, if there is one, with `entry` for each server.
fn collect_json_servers(
    file: &Path,
    src: ImportSource,
    container: &Value,
    where_: &str,
    scope: &ImportScope,
    entry: EntryReader,
    found: &mut Vec<ImportCandidate>,
) -> Result<(), ImportError> {
    let servers = match container.get("mcpServers") {
        None | Some(Value::Null) => return Ok(()),
        Some(servers) => servers,
    };
    let Some(servers) = servers.as_object() else {
        let what = format!("has {where_} that is not a JSON object");
        return Err(malformed(file, src, &what));
    };
    for (name, value) in servers {
        push_entry(file, src, scope, name, entry(value), found);
    }
    Ok(())
}

fn push_entry(
    file: &Path,
    src: ImportSource,
    scope: &ImportScope,
    name: &str,
    transport: Result<CandidateTransport, &'static str>,
    found: &mut Vec<ImportCandidate>,
) {
    match transport {
        Ok(transport) => found.push(ImportCandidate {
            source: src,
            account: file.to_owned(),
            scope: scope.clone(),
            name: name.to_owned(),
            transport,
        }),
        Err(why) => tracing::debug!(
            file = %file.display(),
            server = name,
            "MCP import: left out a server: {why}"
        ),
    }
}

/// Claude Code: `{"type": "stdio"|absent, "command", "args", "env"}` or `{"type": "http"|"sse",
/// "url", "headers"}`.
fn claude_entry(value: &Value) -> Result<CandidateTransport, &'static str> {
    let entry = value.as_object().ok_or("not a JSON object")?;
    let kind = match entry.get("type") {
        None | Some(Value::Null) => "stdio",
        Some(kind) => kind.as_str().ok_or("\"type\" is not a string")?,
    };
    match kind {
        "stdio" => stdio(entry),
        "http" => Ok(CandidateTransport::Http {
            url: required_string(entry, "url")?,
            headers: string_pairs(entry, "headers")?,
        }),
        "sse" => Ok(CandidateTransport::Sse {
            url: required_string(entry, "url")?,
            headers: string_pairs(entry, "headers")?,
        }),
        _ => Err("a type bosun does not import"),
    }
}

/// Codex: `command`/`args`/`env`/`env_vars`, or `url`/`http_headers`/`env_http_headers`/
/// `bearer_token_env_var`.
fn codex_entry(value: &Value) -> Result<CandidateTransport, &'static str> {
    let entry = value.as_object().ok_or("not a table")?;
    match (entry.contains_key("command"), entry.contains_key("url")) {
        (true, true) => Err("both command and url (Codex refuses this)"),
        (false, false) => Err("neither command nor url"),
        (true, false) => {
            let (command, args, mut env) = stdio_parts(entry)?;
            for var in optional_array(entry, "env_vars")? {
                let name = match var {
                    Value::String(name) => name.as_str(),
                    Value::Object(var) => var
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("an env_vars entry without a name")?,
                    Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => {
                        return Err("an env_vars entry that is not a name");
                    }
                };
                if !env.iter().any(|(k, _)| k == name) {
                    env.push((name.to_owned(), env_reference(name)));
                }
            }
            Ok(CandidateTransport::Stdio { command, args, env })
        }
        (false, true) => {
            if entry.contains_key("bearer_token") {
                return Err("a literal bearer_token (Codex refuses this)");
            }
            let url = required_string(entry, "url")?;
            let mut headers = string_pairs(entry, "http_headers")?;
            for (header, var) in string_pairs(entry, "env_http_headers")? {
                headers.push((header, env_reference(&var)));
            }
            if let Some(var) = optional_string(entry, "bearer_token_env_var")? {
                let has_auth = headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
                if !has_auth {
                    headers.push((
                        "Authorization".to_owned(),
                        format!("Bearer {}", env_reference(&var)),
                    ));
                }
            }
            Ok(CandidateTransport::Http { url, headers })
        }
    }
}

/// Gemini CLI: `httpUrl` (Streamable HTTP), `url` + `type` (`http`, or `sse` / none: SSE), or
/// `command`/`args`/`env`; `headers` for the first two. Gemini picks them in that order.
fn gemini_entry(value: &Value) -> Result<CandidateTransport, &'static str> {
    let entry = value.as_object().ok_or("not a JSON object")?;
    if entry.contains_key("httpUrl") {
        return Ok(CandidateTransport::Http {
            url: required_string(entry, "httpUrl")?,
            headers: string_pairs(entry, "headers")?,
        });
    }
    if entry.contains_key("url") {
        let url = required_string(entry, "url")?;
        let headers = string_pairs(entry, "headers")?;
        return match optional_string(entry, "type")?.as_deref() {
            Some("http") => Ok(CandidateTransport::Http { url, headers }),
            Some("sse") | None => Ok(CandidateTransport::Sse { url, headers }),
            Some(_) => Err("a type bosun does not import"),
        };
    }
    if entry.contains_key("command") {
        return stdio(entry);
    }
    Err("no command, url or httpUrl")
}

/// `command`, `args` and `env`, the same keys in all three CLIs.
fn stdio(entry: &Map<String, Value>) -> Result<CandidateTransport, &'static str> {
    let (command, args, env) = stdio_parts(entry)?;
    Ok(CandidateTransport::Stdio { command, args, env })
}

type StdioParts = (String, Vec<String>, Vec<(String, String)>);

fn stdio_parts(entry: &Map<String, Value>) -> Result<StdioParts, &'static str> {
    let command = required_string(entry, "command")?;
    let mut args = Vec::new();
    for arg in optional_array(entry, "args")? {
        args.push(
            arg.as_str()
                .ok_or("an argument that is not a string")?
                .to_owned(),
        );
    }
    Ok((command, args, string_pairs(entry, "env")?))
}

/// `${NAME}`: a reference to an environment variable, in the form Claude Code expands.
fn env_reference(name: &str) -> String {
    format!("${{{name}}}")
}

fn required_string(entry: &Map<String, Value>, key: &'static str) -> Result<String, &'static str> {
    match optional_string(entry, key)? {
        Some(s) if !s.trim().is_empty() => Ok(s),
        Some(_) | None => Err("a command or address is missing"),
    }
}

fn optional_string(
    entry: &Map<String, Value>,
    key: &'static str,
) -> Result<Option<String>, &'static str> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_)) => {
            Err("a field that should be text is not")
        }
    }
}

fn optional_array<'a>(
    entry: &'a Map<String, Value>,
    key: &'static str,
) -> Result<&'a [Value], &'static str> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Object(_)) => {
            Err("a field that should be a list is not")
        }
    }
}

/// An object of text values (env, headers), in file order.
fn string_pairs(
    entry: &Map<String, Value>,
    key: &'static str,
) -> Result<Vec<(String, String)>, &'static str> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v.as_str() {
                Some(v) => Ok((k.clone(), v.to_owned())),
                None => Err("an env or header value that is not text"),
            })
            .collect(),
        Some(Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_)) => {
            Err("env or headers that are not an object")
        }
    }
}

#[cfg(test)]
mod tests;
