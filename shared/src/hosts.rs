//! Hosts as bosun's fence reads them: rules parsed from words (`api.example.com:443`,
//! `*.example.com`, `[::1]:8080`), the target of a request, and whether a rule matches it. The
//! runner's proxy decides with these, and bosund checks the hosts a person adds to an MCP
//! server's list (`bosun mcp edit NAME --net HOST`) with the same reading.
//!
//! A host is a DNS name (matched without regard to case, one trailing dot removed) or an IP
//! address (matched exactly, never through a name). `*.example.com` matches every subdomain at
//! any depth and not `example.com` itself: allowing both takes two rules.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use crate::text::visible;

/// The longest DNS name, in characters, without its trailing dot.
const MAX_NAME: usize = 253;
/// The longest label (the part between two dots) of a DNS name.
const MAX_LABEL: usize = 63;

/// Why a host or a `host[:port]` could not be read. Returned by [`HostRule::parse`] and by the
/// proxy's reading of a request's target; not retried, the words must change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
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
    pub fn parse(text: &str) -> Result<Host, HostError> {
        let inner = match text.strip_prefix('[') {
            Some(rest) => {
                let v6 = rest.strip_suffix(']').ok_or(HostError::BadBrackets)?;
                return v6
                    .parse::<Ipv6Addr>()
                    .map(|ip| Host::Ip(ip.into()))
                    .map_err(|_| HostError::BadBrackets);
            }
            None => text,
        };
        if inner.is_empty() {
            return Err(HostError::Empty);
        }
        if let Ok(ip) = inner.parse::<IpAddr>() {
            return Ok(Host::Ip(ip));
        }
        let name = inner
            .strip_suffix('.')
            .unwrap_or(inner)
            .to_ascii_lowercase();
        if name.chars().count() > MAX_NAME {
            return Err(HostError::TooLong(name.chars().count()));
        }
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(match c {
                '*' => HostError::BadWildcard,
                c => HostError::BadCharacter(format!("'{}'", visible(&c.to_string()))),
            });
        }
        if name
            .split('.')
            .any(|label| label.is_empty() || label.len() > MAX_LABEL)
        {
            return Err(HostError::BadLabel);
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
pub fn split_port(text: &str) -> Result<(&str, Option<u16>), HostError> {
    let (host, port) = if text.starts_with('[') {
        match text.find(']') {
            Some(end) if end + 1 == text.len() => (text, None),
            Some(end) => match text[end + 1..].strip_prefix(':') {
                Some(port) => (&text[..=end], Some(port)),
                None => return Err(HostError::BadBrackets),
            },
            None => return Err(HostError::BadBrackets),
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
            return Err(HostError::BadPort);
        }
        Some(digits) => match digits.parse::<u16>() {
            Ok(0) => return Err(HostError::PortZero),
            Ok(port) => Some(port),
            Err(_) => return Err(HostError::BadPort),
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
    pub fn parse(text: &str, default_port: Option<u16>) -> Result<Target, HostError> {
        let (host, port) = split_port(text)?;
        let port = port.or(default_port).ok_or(HostError::NoPort)?;
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

/// The host (an IPv6 address without its brackets) and port of an `http` or `https` URL; none
/// for another scheme, or a host this module cannot read.
pub fn url_host(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = split_port(authority).ok()?;
    let host = match Host::parse(host).ok()? {
        Host::Ip(ip) => ip.to_string(),
        Host::Name(name) => name,
    };
    Some((host, port.unwrap_or(default)))
}

/// What a rule's host matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
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
    pub pattern: Pattern,
    /// None: any port.
    pub port: Option<u16>,
    pub why: String,
}

impl HostRule {
    /// Reads `host[:port]`: a name, `*.domain` (its subdomains, not the domain), an IPv4
    /// address or an IPv6 address (in brackets when a port follows). `why` names the rule in
    /// words ("web.fetch", "the model API of Claude Code").
    pub fn parse(text: &str, why: impl Into<String>) -> Result<HostRule, HostError> {
        let (host, port) = split_port(text.trim())?;
        let pattern = match host.strip_prefix("*.") {
            Some(domain) => match Host::parse(domain)? {
                Host::Name(name) => Pattern::Subdomains(name),
                Host::Ip(_) => return Err(HostError::BadWildcard),
            },
            None => Pattern::Exact(Host::parse(host)?),
        };
        Ok(HostRule {
            pattern,
            port,
            why: why.into(),
        })
    }

    /// Whether the rule allows `target`.
    pub fn matches(&self, target: &Target) -> bool {
        self.pattern.covers(&target.host) && self.port.is_none_or(|port| port == target.port)
    }
}

impl Pattern {
    /// Whether `host` is this pattern's: the host itself, one beneath the domain (at any
    /// depth, not the domain itself), or any host.
    pub fn covers(&self, host: &Host) -> bool {
        match (self, host) {
            (Pattern::Exact(want), got) => want == got,
            (Pattern::Subdomains(domain), Host::Name(name)) => {
                name.len() > domain.len() + 1
                    && name.ends_with(domain.as_str())
                    && name[..name.len() - domain.len()].ends_with('.')
            }
            (Pattern::Subdomains(_), Host::Ip(_)) => false,
            (Pattern::Any, _) => true,
        }
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

/// A host a person adds to an MCP server's list of hosts (`host[:port]`, `*.domain`), kept as
/// the proxy shows it; made only by [`NetHost::parse`], so a kept one always reads.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NetHost(String);

impl NetHost {
    /// Reads `host[:port]` with the proxy's rules; the error says what was wrong.
    pub fn parse(text: &str) -> Result<NetHost, HostError> {
        HostRule::parse(text, "").map(|r| NetHost(r.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for NetHost {
    type Error = HostError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        NetHost::parse(&s)
    }
}

impl From<NetHost> for String {
    fn from(h: NetHost) -> String {
        h.0
    }
}

impl fmt::Display for NetHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(err(""), HostError::Empty);
        assert_eq!(err("exa mple.com"), HostError::BadCharacter("' '".into()));
        assert_eq!(
            err("evil\x1b.com"),
            HostError::BadCharacter("'\\x1b'".into())
        );
        assert_eq!(err("example.com:0"), HostError::PortZero);
        assert_eq!(err("example.com:http"), HostError::BadPort);
        assert_eq!(err("example.com:70000"), HostError::BadPort);
        assert_eq!(err(&"a".repeat(254)), HostError::TooLong(254));
        assert_eq!(err(&format!("{}.com", "a".repeat(64))), HostError::BadLabel);
        assert_eq!(err("a..com"), HostError::BadLabel);
        assert_eq!(err("*"), HostError::BadWildcard);
        assert_eq!(err("a.*.com"), HostError::BadWildcard);
        assert_eq!(err("*.10.0.0.1"), HostError::BadWildcard);
        assert_eq!(err("[::1:443"), HostError::BadBrackets);
        assert_eq!(err("[::1]443"), HostError::BadBrackets);
        assert!(err("example.com:0").to_string().contains("from 1 to 65535"));
    }

    #[test]
    fn net_host_is_kept_as_the_proxy_shows_it() {
        assert_eq!(
            NetHost::parse("API.example.com.:443").unwrap().as_str(),
            "api.example.com:443"
        );
        assert_eq!(NetHost::parse("::1").unwrap().as_str(), "[::1]");
        assert!(NetHost::parse("a b").is_err());
        let read: Result<NetHost, _> = serde_json::from_str("\"bad host\"");
        assert!(read.is_err());
    }
}
