//! The run's list of hosts ([`NetRules`]) and the decision for one host and port; the hosts
//! and rules are read by [`bosun_shared::hosts`].

use bosun_shared::hosts::Pattern;
pub use bosun_shared::hosts::{Host, HostError, HostRule, Target};

/// The hosts a run may reach through its proxy.
#[derive(Debug, Clone, Default)]
pub struct NetRules {
    pub allow: Vec<HostRule>,
    /// Hosts refused without asking anyone, though the run has someone to ask.
    pub quiet: Vec<HostRule>,
    /// The MCP server whose list this is (its own proxy), or None for the run's program: the
    /// refusal's words say how to add a host to that list.
    pub server: Option<ServerList>,
}

/// Whose list a server's proxy reads: the server's name and the hosts the person gave it
/// (`bosun mcp edit NAME --net`, which replaces them), for the words of a refusal.
#[derive(Debug, Clone, Default)]
pub struct ServerList {
    pub name: String,
    pub added: Vec<String>,
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
    ) -> Result<NetRules, HostError> {
        let read = |list: &[bosun_protocol::runner::NetAllow]| Self::read(list);
        Ok(NetRules {
            allow: read(allow)?,
            quiet: read(quiet)?,
            server: None,
        })
    }

    /// Whether `target` is refused without asking.
    pub(crate) fn is_quiet(&self, target: &Target) -> bool {
        self.quiet.iter().any(|rule| rule.matches(target))
    }

    fn read(allow: &[bosun_protocol::runner::NetAllow]) -> Result<Vec<HostRule>, HostError> {
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
            .collect::<Result<Vec<_>, HostError>>()
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
                reason: match &self.server {
                    None => format!(
                        "{target} is not in this run's list of hosts; allow it for the run's agent with `bosun agent set NAME web.fetch={}` (its list, comma-separated)",
                        target.host
                    ),
                    Some(ServerList { name, added }) => {
                        let list: Vec<String> =
                            added.iter().cloned().chain([target.to_string()]).collect();
                        format!(
                            "{target} is not in the list of hosts of the MCP server {name}; add it with `bosun mcp edit {name} --net {}`",
                            list.join(",")
                        )
                    }
                },
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
            server: None,
        }
    }

    fn allowed(rules: &NetRules, host: &str, port: u16) -> bool {
        matches!(rules.decide(host, port), Decision::Allowed { .. })
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
    fn a_servers_refusal_says_how_to_add_the_host_to_its_list() {
        let net = NetRules {
            server: Some(ServerList {
                name: "docs".into(),
                added: vec!["a.org".into()],
            }),
            ..rules(&["a.org"])
        };
        let Decision::Refused { reason } = net.decide("10.0.0.9", 80) else {
            panic!("allowed")
        };
        assert_eq!(
            reason,
            "10.0.0.9:80 is not in the list of hosts of the MCP server docs; add it with `bosun mcp edit docs --net a.org,10.0.0.9:80`"
        );
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
