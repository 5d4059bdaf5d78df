//! What every bosun process knows about agents: which coding CLIs there are, what each takes as
//! a permission mode, and the rules for the values of an agent's switches.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The program an agent's runs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CliKind {
    Claude,
    Codex,
    Gemini,
    /// Any program: the agent's command, with the prompt in `BOSUN_PROMPT`.
    Command,
}

impl fmt::Display for CliKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CliKind::Claude => "claude",
            CliKind::Codex => "codex",
            CliKind::Gemini => "gemini",
            CliKind::Command => "command",
        })
    }
}

impl FromStr for CliKind {
    type Err = UnknownCli;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "claude" | "claude-code" => Ok(CliKind::Claude),
            "codex" => Ok(CliKind::Codex),
            "gemini" => Ok(CliKind::Gemini),
            "command" => Ok(CliKind::Command),
            other => Err(UnknownCli(other.into())),
        }
    }
}

/// A CLI name bosun does not run, as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a CLI bosun runs; choose claude, codex, gemini or command")]
pub struct UnknownCli(pub String);

impl CliKind {
    /// The permission modes the CLI takes, the first being its default.
    pub fn permission_modes(self) -> &'static [&'static str] {
        match self {
            // Claude Code's --permission-mode (bypassPermissions needs IS_SANDBOX=1 as root).
            CliKind::Claude => &[
                "default",
                "acceptEdits",
                "auto",
                "dontAsk",
                "plan",
                "bypassPermissions",
            ],
            // Codex's --sandbox for the commands the model runs.
            CliKind::Codex => &["read-only", "workspace-write", "danger-full-access"],
            // Gemini's --approval-mode.
            CliKind::Gemini => &["default", "auto_edit", "plan", "yolo"],
            CliKind::Command => &[],
        }
    }

    /// Checks a permission mode for this CLI, saying which it takes when it is not one.
    pub fn check_permission_mode(self, mode: &str) -> Result<(), PermissionModeError> {
        let modes = self.permission_modes();
        if modes.contains(&mode) {
            return Ok(());
        }
        if modes.is_empty() {
            return Err(PermissionModeError::NoModes(self));
        }
        Err(PermissionModeError::NotOne {
            mode: mode.into(),
            cli: self,
        })
    }

    /// Whether bosun has a checked per-run switch for the CLI's slash commands and skills.
    pub fn has_skills_switch(self) -> bool {
        matches!(self, CliKind::Claude)
    }
}

/// Why [`CliKind::check_permission_mode`] refused a mode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PermissionModeError {
    /// The CLI takes no permission mode at all (a command agent).
    #[error("a {0} agent has no permission mode")]
    NoModes(CliKind),
    #[error(
        "`{mode}` is not a permission mode of {cli}; it takes {}",
        cli.permission_modes().join(", ")
    )]
    NotOne { mode: String, cli: CliKind },
}

/// The longest name an agent may have.
pub const MAX_AGENT_NAME_LEN: usize = 64;

/// The most bytes an agent's instructions may have. bosund holds every agent to it; the command
/// line holds a file to it while reading it, so a bigger one is refused by this rule, not by
/// the frame's.
pub const MAX_INSTRUCTIONS: usize = 64 * 1024;

/// The most bytes one secret value may have (an environment value, a header, a client secret,
/// a private key): far more than any real one, and little enough to refuse one read by mistake
/// (a big file, `/dev/zero`) before it reaches the keychain or the wire.
pub const MAX_SECRET_VALUE: usize = 64 * 1024;

/// The refusal of a secret value past [`MAX_SECRET_VALUE`], in the rule's words; `what` names
/// the value (`API_KEY`, `the client secret`). It never shows the value.
pub fn secret_too_long(what: &str) -> String {
    format!(
        "the value of {what} is over {}; a secret value may have at most that",
        crate::size::format_size(MAX_SECRET_VALUE as u64)
    )
}

/// The refusal of instructions past [`MAX_INSTRUCTIONS`] read from `source`, in the rule's
/// words (bosund says the same of instructions that arrive longer).
pub fn instructions_too_long(source: &str) -> String {
    format!(
        "the instructions in {source} are over {limit}; keep them under {limit}",
        limit = crate::size::format_size(MAX_INSTRUCTIONS as u64)
    )
}

/// Checks an agent's name: letters, digits, `-` and `_`, starting with a letter or digit.
pub fn check_agent_name(name: &str) -> Result<(), AgentNameError> {
    if name.is_empty() {
        return Err(AgentNameError::Empty);
    }
    if name.chars().count() > MAX_AGENT_NAME_LEN {
        return Err(AgentNameError::TooLong(name.into()));
    }
    if let Some(ch) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        let name = name.into();
        return Err(AgentNameError::BadChar { name, ch });
    }
    // Every character is ASCII here, so the first is one byte.
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        let first = name[..1].into();
        let name = name.into();
        return Err(AgentNameError::BadStart { name, first });
    }
    Ok(())
}

/// Why [`check_agent_name`] refused a name; each carries the name as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentNameError {
    #[error("an agent needs a name")]
    Empty,
    /// Longer than [`MAX_AGENT_NAME_LEN`] characters.
    #[error("`{0}` is longer than {MAX_AGENT_NAME_LEN} characters")]
    TooLong(String),
    #[error("`{name}` has `{ch}` in it; an agent's name takes only letters, digits, - and _")]
    BadChar { name: String, ch: char },
    #[error("`{name}` starts with `{first}`; an agent's name starts with a letter or digit")]
    BadStart { name: String, first: String },
}

/// Fetching web pages: off, any page, or only listed domains.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "mode", content = "domains")]
pub enum WebFetch {
    #[default]
    Off,
    Any,
    Domains(Vec<String>),
}

impl fmt::Display for WebFetch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WebFetch::Off => f.write_str("off"),
            WebFetch::Any => f.write_str("any"),
            WebFetch::Domains(d) => f.write_str(&d.join(",")),
        }
    }
}

impl WebFetch {
    /// Whether a page of `host` may be fetched: any host with `any`; with a list, a host named
    /// in it, or under one of its `*.` entries (`*.laravel.com` takes `api.laravel.com` and
    /// `a.b.laravel.com`, not `laravel.com` itself). Hosts compare without case and without a
    /// trailing dot.
    ///
    /// The same rule as the fence's proxy ([`crate::hosts::HostRule`]), read by its parser: a
    /// host that parser cannot read is not allowed.
    pub fn allows_host(&self, host: &str) -> bool {
        match self {
            WebFetch::Off => false,
            WebFetch::Any => true,
            WebFetch::Domains(domains) => {
                let Ok(host) = crate::hosts::Host::parse(host) else {
                    return false;
                };
                domains.iter().any(|d| {
                    crate::hosts::HostRule::parse(d, "web.fetch")
                        .is_ok_and(|rule| rule.pattern.covers(&host))
                })
            }
        }
    }

    /// `off`, `any`, or a comma-separated list of domains such as `docs.rs,*.laravel.com`.
    pub fn parse(text: &str) -> Result<Self, DomainError> {
        match text.trim() {
            "off" | "" => Ok(WebFetch::Off),
            "any" | "on" => Ok(WebFetch::Any),
            list => {
                let domains: Vec<String> = list
                    .split(',')
                    .map(|d| d.trim().to_ascii_lowercase())
                    .filter(|d| !d.is_empty())
                    .collect();
                for d in &domains {
                    check_domain(d)?;
                }
                Ok(WebFetch::Domains(domains))
            }
        }
    }
}

/// A domain for the fetch list: a host name, optionally starting with `*.` for its subdomains.
pub fn check_domain(d: &str) -> Result<(), DomainError> {
    let bad = |fault| {
        Err(DomainError {
            domain: d.into(),
            fault,
        })
    };
    if d.contains("://") {
        return bad(DomainFault::Scheme);
    }
    if d.contains('/') || d.contains(':') {
        return bad(DomainFault::PathOrPort);
    }
    let host = d.strip_prefix("*.").unwrap_or(d);
    if host.contains('*') {
        return bad(DomainFault::StarInside);
    }
    let labels: Vec<&str> = host.split('.').collect();
    if labels.len() < 2 {
        return bad(DomainFault::NoDot);
    }
    for l in labels {
        let ok = !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-');
        if !ok {
            return bad(DomainFault::BadLabel);
        }
    }
    Ok(())
}

/// A domain [`check_domain`] refused, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{domain}` is not a domain for fetching pages: {fault}; write it such as docs.rs or *.laravel.com"
)]
pub struct DomainError {
    pub domain: String,
    pub fault: DomainFault,
}

/// What is wrong with a domain for the fetch list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DomainFault {
    #[error("leave out the scheme")]
    Scheme,
    #[error("give the host only, without a path or port")]
    PathOrPort,
    #[error("a * may only start it, as in *.example.com")]
    StarInside,
    #[error("it needs a dot")]
    NoDot,
    #[error("it has a part that is not a host name label")]
    BadLabel,
}

/// An allowed command, such as `Bash(git *)`: a tool name with an optional pattern.
pub fn check_allowed_command(rule: &str) -> Result<(), AllowedCommandError> {
    let (tool, rest) = match rule.find('(') {
        Some(i) => (&rule[..i], Some(&rule[i..])),
        None => (rule, None),
    };
    let tool_ok = !tool.is_empty() && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let rest_ok =
        rest.is_none_or(|r| r.len() > 2 && r.ends_with(')') && !r[1..r.len() - 1].contains(')'));
    if tool_ok && rest_ok {
        Ok(())
    } else {
        Err(AllowedCommandError(rule.into()))
    }
}

/// A rule [`check_allowed_command`] refused, as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an allowed command; write it such as Bash(git *) or Bash(npm test)")]
pub struct AllowedCommandError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_fetch_lists_are_checked_domain_by_domain() {
        assert_eq!(WebFetch::parse("off"), Ok(WebFetch::Off));
        assert_eq!(WebFetch::parse("any"), Ok(WebFetch::Any));
        assert_eq!(
            WebFetch::parse("docs.rs, *.Laravel.com"),
            Ok(WebFetch::Domains(vec![
                "docs.rs".into(),
                "*.laravel.com".into()
            ]))
        );
        for bad in [
            "https://docs.rs",
            "docs.rs/path",
            "local",
            "a.*.b",
            "x..y",
            "-a.b",
            "host:80",
        ] {
            assert!(WebFetch::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_fetch_list_takes_its_hosts_and_the_subdomains_of_its_star_entries() {
        let list = WebFetch::parse("docs.rs,*.laravel.com").unwrap();
        for ok in ["docs.rs", "DOCS.rs.", "api.laravel.com", "a.b.laravel.com"] {
            assert!(list.allows_host(ok), "{ok}");
        }
        for no in [
            "laravel.com",
            "evillaravel.com",
            "sub.docs.rs",
            "docs.rs.evil.com",
            "127.0.0.1",
            "",
        ] {
            assert!(!list.allows_host(no), "{no}");
        }
        assert!(WebFetch::Any.allows_host("127.0.0.1"));
        assert!(!WebFetch::Off.allows_host("docs.rs"));
    }

    #[test]
    fn permission_modes_and_commands_are_checked_per_cli() {
        assert!(CliKind::Claude.check_permission_mode("acceptEdits").is_ok());
        let err = CliKind::Codex
            .check_permission_mode("acceptEdits")
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("read-only, workspace-write, danger-full-access"),
            "{err}"
        );
        assert!(
            "cursor"
                .parse::<CliKind>()
                .unwrap_err()
                .to_string()
                .contains("choose claude, codex, gemini or command")
        );
        assert!(check_allowed_command("Bash(git *)").is_ok());
        assert!(check_allowed_command("WebFetch(domain:docs.rs)").is_ok());
        assert!(check_allowed_command("Bash(git").is_err());
        assert!(check_allowed_command("rm -rf").is_err());
    }
}
