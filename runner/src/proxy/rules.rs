//! The run's list of hosts: rules parsed from words (`api.example.com:443`, `*.example.com`,
//! `[::1]:8080`) and the decision for one host and port.
//!
//! A host is a DNS name (matched without regard to case, one trailing dot removed) or an IP
//! address (matched exactly, never through a name). `*.example.com` matches every subdomain at
//! any depth and not `example.com` itself: allowing both takes two rules.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use bosun_shared::text::visible;

/// The longest DNS name, in characters, without its trailing dot.
const MAX_NAME: usize = 253;
/// The longest label (the part between two dots) of a DNS name.
const MAX_LABEL: usize = 63;

/// Why a host or a `host[:port]` could not be read. Returned by [`HostRule::parse`] and by the
/// proxy's reading of a request's target; not retried, the words must change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("the host is empty: write a name like api.example.com or an address like 10.0.0.1")]
    Empty,
    #[error(
        "{0} cannot be in a host: a host has letters, digits, '-', '_' and '.' (like api.example.com), or is an address (like 10.0.0.1 or [::1])"
    )]
    BadCharacter(String),
    #[error("a part of the host between two dots is empty or longer than 63 characters")]
    BadLabel,
    #[error("the host has {0} characters, more than the 253 a DNS name may have")]
    TooLong(usize),
    #[error(
        "a wildcard is written only as '*.' before a domain, like *.example.com (it matches the subdomains, not example.com itself)"
    )]
    BadWildcard,
    #[error("an IPv6 address is written in brackets before a port, like [::1]:443")]
    BadBrackets,
    #[error("the port is not a number from 1 to 65535")]
    BadPort,
    #[error("port 0 names no service: write a port from 1 to 65535, or none for any port")]
    PortZero,
    #[error("the target has no port: write it as host:port, like api.example.com:443")]
    NoPort,
}

/// A host as a request or a rule names it, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A DNS name, lowercased, without a trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl Host {
    /// Reads a host (brackets around an IPv6 address allowed). `*.` is refused here; rules read
    /// it in [`HostRule::parse`].
    pub fn parse(text: &str) -> Result<Host, RuleError> {
        let inner = match text.strip_prefix('[') {
            Some(rest) => {
                let v6 = rest.strip_suffix(']').ok_or(RuleError::BadBrackets)?;
                return v6
                    .parse::<Ipv6Addr>()
                    .map(|ip| Host::Ip(ip.into()))
                    .map_err(|_| RuleError::BadBrackets);
            }
            None => text,
        };
        if inner.is_empty() {
            return Err(RuleError::Empty);
        }
        if let Ok(ip) = inner.parse::<IpAddr>() {
            return Ok(Host::Ip(ip));
        }
        let name = inner
            .strip_suffix('.')
            .unwrap_or(inner)
            .to_ascii_lowercase();
        if name.chars().count() > MAX_NAME {
            return Err(RuleError::TooLong(name.chars().count()));
        }
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(match c {
                '*' => RuleError::BadWildcard,
                c => RuleError::BadCharacter(format!("'{}'", visible(&c.to_string()))),
            });
        }
        if name
            .split('.')
            .any(|label| label.is_empty() || label.len() > MAX_LABEL)
        {
            return Err(RuleError::BadLabel);
        }
        Ok(Host::Name(name))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// Splits `host[:port]` (`[v6]:port`, or a bare IPv6 address without a port) into its host and
/// its port, if one is written.
fn split_port(text: &str) -> Result<(&str, Option<u16>), RuleError> {
    let (host, port) = if text.starts_with('[') {
        match text.find(']') {
            Some(end) if end + 1 == text.len() => (text, None),
            Some(end) => match text[end + 1..].strip_prefix(':') {
                Some(port) => (&text[..=end], Some(port)),
                None => return Err(RuleError::BadBrackets),
            },
            None => return Err(RuleError::BadBrackets),
        }
    } else if text.parse::<Ipv6Addr>().is_ok() {
        (text, None)
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match port {
        None => None,
        Some(digits) if !digits.bytes().all(|b| b.is_ascii_digit()) => {
            return Err(RuleError::BadPort);
        }
        Some(digits) => match digits.parse::<u16>() {
            Ok(0) => return Err(RuleError::PortZero),
            Ok(port) => Some(port),
            Err(_) => return Err(RuleError::BadPort),
        },
    };
    Ok((host, port))
}

/// Where a request asks to go: a host and a port, read from `host:port` (`[v6]:port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: Host,
    pub port: u16,
}

impl Target {
    /// Reads an authority; without a written port, `default_port` is taken (none: refused).
    pub fn parse(text: &str, default_port: Option<u16>) -> Result<Target, RuleError> {
        let (host, port) = split_port(text)?;
        let port = port.or(default_port).ok_or(RuleError::NoPort)?;
        Ok(Target {
            host: Host::parse(host)?,
            port,
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// What a rule's host matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// Exactly this host.
    Exact(Host),
    /// Any subdomain of this name (at any depth), not the name itself.
    Subdomains(String),
    /// Any host at all (`web.fetch=any`).
    Any,
}

/// One allowed host (or family of hosts) and port, with the rule's name in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    pattern: Pattern,
    /// None: any port.
    port: Option<u16>,
    why: String,
}

impl HostRule {
    /// Reads `host[:port]`: a name, `*.domain` (its subdomains, not the domain), an IPv4
    /// address or an IPv6 address (in brackets when a port follows). `why` names the rule in
    /// words ("web.fetch", "the model API of Claude Code").
    pub fn parse(text: &str, why: impl Into<String>) -> Result<HostRule, RuleError> {
        let (host, port) = split_port(text.trim())?;
        let pattern = match host.strip_prefix("*.") {
            Some(domain) => match Host::parse(domain)? {
                Host::Name(name) => Pattern::Subdomains(name),
                Host::Ip(_) => return Err(RuleError::BadWildcard),
            },
            None => Pattern::Exact(Host::parse(host)?),
        };
        Ok(HostRule {
            pattern,
            port,
            why: why.into(),
        })
    }

    fn matches(&self, target: &Target) -> bool {
        let host = match (&self.pattern, &target.host) {
            (Pattern::Exact(want), got) => want == got,
            (Pattern::Subdomains(domain), Host::Name(name)) => {
                name.len() > domain.len() + 1
                    && name.ends_with(domain.as_str())
                    && name[..name.len() - domain.len()].ends_with('.')
            }
            (Pattern::Subdomains(_), Host::Ip(_)) => false,
            (Pattern::Any, _) => true,
        };
        host && self.port.is_none_or(|port| port == target.port)
    }
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Pattern::Exact(host) => write!(f, "{host}")?,
            Pattern::Subdomains(domain) => write!(f, "*.{domain}")?,
            Pattern::Any => f.write_str("any host")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// The hosts a run may reach through its proxy.
#[derive(Debug, Clone, Default)]
pub struct NetRules {
    pub allow: Vec<HostRule>,
    /// Hosts refused without asking anyone, though the run has someone to ask.
    pub quiet: Vec<HostRule>,
}

/// The fence's answer for one host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The first rule that matched, in words: its name and its host.
    Allowed { rule: String },
    /// Why not, in words, with what to do.
    Refused { reason: String },
}

impl NetRules {
    /// The rules of a run's plan: each host (`*` for any) with its port, or any port. A host
    /// the plan names that cannot be read is refused with the reason.
    pub fn of(
        allow: &[bosun_protocol::runner::NetAllow],
        quiet: &[bosun_protocol::runner::NetAllow],
    ) -> Result<NetRules, RuleError> {
        let read = |list: &[bosun_protocol::runner::NetAllow]| Self::read(list);
        Ok(NetRules {
            allow: read(allow)?,
            quiet: read(quiet)?,
        })
    }

    /// Whether `target` is refused without asking.
    pub(crate) fn is_quiet(&self, target: &Target) -> bool {
        self.quiet.iter().any(|rule| rule.matches(target))
    }

    fn read(allow: &[bosun_protocol::runner::NetAllow]) -> Result<Vec<HostRule>, RuleError> {
        allow
            .iter()
            .map(|a| {
                let mut rule = if a.host == "*" {
                    HostRule {
                        pattern: Pattern::Any,
                        port: None,
                        why: a.why.clone(),
                    }
                } else {
                    HostRule::parse(&a.host, a.why.clone())?
                };
                if a.port.is_some() {
                    rule.port = a.port;
                }
                Ok(rule)
            })
            .collect::<Result<Vec<_>, RuleError>>()
    }

    /// Decides for `host` (a name, an address, `[v6]`) and `port`.
    #[cfg(test)]
    pub fn decide(&self, host: &str, port: u16) -> Decision {
        match Host::parse(host) {
            Ok(host) => self.decide_target(&Target { host, port }),
            Err(e) => Decision::Refused {
                reason: format!("the host is not one bosun can read: {e}"),
            },
        }
    }

    pub(crate) fn decide_target(&self, target: &Target) -> Decision {
        match self.allow.iter().find(|rule| rule.matches(target)) {
            Some(rule) => Decision::Allowed {
                rule: format!("{} ({rule})", rule.why),
            },
            None => Decision::Refused {
                reason: format!(
                    "{target} is not in this run's list of hosts; allow it for the run's agent with `bosun agent set NAME web.fetch={}` (its list, comma-separated)",
                    target.host
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> NetRules {
        NetRules {
            allow: list
                .iter()
                .map(|r| HostRule::parse(r, "test").unwrap())
                .collect(),
            quiet: Vec::new(),
        }
    }

    fn allowed(rules: &NetRules, host: &str, port: u16) -> bool {
        matches!(rules.decide(host, port), Decision::Allowed { .. })
    }

    #[test]
    fn parse_accepts_names_wildcards_addresses_and_ports() {
        let shown = |text: &str| HostRule::parse(text, "w").map(|r| r.to_string());
        assert_eq!(shown("API.Example.com."), Ok("api.example.com".into()));
        assert_eq!(shown("example.com:443"), Ok("example.com:443".into()));
        assert_eq!(shown("*.example.com"), Ok("*.example.com".into()));
        assert_eq!(shown("10.0.0.1:8080"), Ok("10.0.0.1:8080".into()));
        assert_eq!(shown("[::1]:443"), Ok("[::1]:443".into()));
        assert_eq!(shown("::1"), Ok("[::1]".into()));
        assert_eq!(shown("my_host-1"), Ok("my_host-1".into()));
    }

    #[test]
    fn parse_refuses_with_what_was_wrong() {
        let err = |text: &str| HostRule::parse(text, "w").unwrap_err();
        assert_eq!(err(""), RuleError::Empty);
        assert_eq!(err("exa mple.com"), RuleError::BadCharacter("' '".into()));
        assert_eq!(
            err("evil\x1b.com"),
            RuleError::BadCharacter("'\\x1b'".into())
        );
        assert_eq!(err("example.com:0"), RuleError::PortZero);
        assert_eq!(err("example.com:http"), RuleError::BadPort);
        assert_eq!(err("example.com:70000"), RuleError::BadPort);
        assert_eq!(err(&"a".repeat(254)), RuleError::TooLong(254));
        assert_eq!(err(&format!("{}.com", "a".repeat(64))), RuleError::BadLabel);
        assert_eq!(err("a..com"), RuleError::BadLabel);
        assert_eq!(err("*"), RuleError::BadWildcard);
        assert_eq!(err("a.*.com"), RuleError::BadWildcard);
        assert_eq!(err("*.10.0.0.1"), RuleError::BadWildcard);
        assert_eq!(err("[::1:443"), RuleError::BadBrackets);
        assert_eq!(err("[::1]443"), RuleError::BadBrackets);
        assert!(err("example.com:0").to_string().contains("from 1 to 65535"));
    }

    #[test]
    fn decide_exact_names_ignore_case_and_a_trailing_dot() {
        let net = rules(&["api.example.com"]);
        assert!(allowed(&net, "API.example.COM.", 443));
        assert!(!allowed(&net, "example.com", 443));
        assert!(!allowed(&net, "x.api.example.com", 443));
        let Decision::Refused { reason } = net.decide("other.org", 80) else {
            panic!("allowed")
        };
        assert!(
            reason.starts_with("other.org:80 is not in this run's list of hosts"),
            "{reason}"
        );
        assert!(reason.contains("web.fetch=other.org"), "{reason}");
        assert_eq!(rules(&[]).decide("a.b", 1), Decision::Refused { reason: "a.b:1 is not in this run's list of hosts; allow it for the run's agent with `bosun agent set NAME web.fetch=a.b` (its list, comma-separated)".into() });
    }

    #[test]
    fn decide_wildcards_match_subdomains_not_the_domain() {
        let net = rules(&["*.example.com"]);
        assert!(allowed(&net, "a.example.com", 443));
        assert!(allowed(&net, "a.b.Example.com", 443));
        assert!(!allowed(&net, "example.com", 443));
        assert!(!allowed(&net, "badexample.com", 443));
        assert!(!allowed(&net, "example.com.evil.org", 443));
    }

    #[test]
    fn decide_addresses_exactly_and_ports_when_written() {
        let net = rules(&["10.0.0.1", "[::1]:8443", "localhost:8080"]);
        assert!(allowed(&net, "10.0.0.1", 9));
        assert!(!allowed(&net, "10.0.0.2", 9));
        assert!(allowed(&net, "[::1]", 8443));
        assert!(allowed(&net, "::1", 8443));
        assert!(!allowed(&net, "::1", 443));
        assert!(allowed(&net, "localhost", 8080));
        assert!(!allowed(&net, "localhost", 8081));
        assert!(
            !allowed(&net, "127.0.0.1", 8080),
            "a name rule never allows an address"
        );
        assert_eq!(
            net.decide("10.0.0.1", 9),
            Decision::Allowed {
                rule: "test (10.0.0.1)".into()
            }
        );
        assert!(matches!(
            net.decide("bad host", 1),
            Decision::Refused { .. }
        ));
    }
}
