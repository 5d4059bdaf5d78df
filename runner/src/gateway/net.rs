//! The network of an MCP server the gateway starts for a fenced run: a namespace of its own,
//! made as the program's is, whose only way out is a proxy of its own in the runner, reaching
//! only what the server's transport needs and the hosts the person gave it:
//! - a server reached by address (through bosun's bridge): the address's host and port;
//! - a stdio server started with `npx` (or `npm exec`): the npm registry (the host of
//!   `npm_config_registry` when its environment sets one, else `registry.npmjs.org`), so that
//!   npx can fetch the package;
//! - bosun's built-in browser: the run's `web.fetch` list;
//! - the server's own list (`bosun mcp edit NAME --net HOST[:PORT],…`).
//!
//! A host beyond these is refused with 403 and how to add it: a server has no person's turn to
//! ask in.

use bosun_protocol::runner::NetAllow;
use bosun_shared::gateway::{GatewayServer, Reach};

/// The npm registry npx fetches packages from when nothing names another.
const NPM_REGISTRY: &str = "https://registry.npmjs.org/";

/// The hosts `server` may reach from a fenced run whose `web.fetch` list is `web_fetch`; `env`
/// is the environment it is started with.
pub(super) fn hosts(
    server: &GatewayServer,
    env: &[(String, String)],
    web_fetch: &[NetAllow],
) -> Vec<NetAllow> {
    let mut allow = Vec::new();
    match &server.reach {
        Reach::Http { url, .. } | Reach::Sse { url, .. } => {
            allow.extend(NetAllow::from_url(url, "the server's address"));
        }
        Reach::Stdio { command, args, .. } => {
            if starts_npx(command, args) {
                let registry = env
                    .iter()
                    .rev()
                    .find(|(k, _)| k.eq_ignore_ascii_case("npm_config_registry"))
                    .map(|(_, v)| v.as_str())
                    .filter(|v| !v.trim().is_empty())
                    .unwrap_or(NPM_REGISTRY);
                allow.extend(NetAllow::from_url(
                    registry,
                    "the npm registry npx fetches from",
                ));
            }
        }
    }
    if server.browser {
        allow.extend(web_fetch.iter().cloned());
    }
    allow.extend(server.rules.net.iter().map(|h| NetAllow {
        host: h.to_string(),
        port: None,
        why: "the server's list (bosun mcp edit --net)".into(),
    }));
    allow
}

/// Whether a command line is npx's: `npx …`, or `npm exec …` (`npm x …`).
fn starts_npx(command: &str, args: &[String]) -> bool {
    let name = std::path::Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(command);
    name == "npx" || (name == "npm" && args.first().is_some_and(|a| a == "exec" || a == "x"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_shared::gateway::Rules;
    use bosun_shared::hosts::NetHost;

    fn server(reach: Reach, browser: bool, net: &[&str]) -> GatewayServer {
        GatewayServer {
            name: "s".into(),
            reach,
            rules: Rules {
                net: net.iter().map(|h| NetHost::parse(h).unwrap()).collect(),
                ..Rules::default()
            },
            roots: Vec::new(),
            pinned: None,
            browser,
        }
    }

    fn stdio(command: &str, args: &[&str]) -> Reach {
        Reach::Stdio {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
        }
    }

    fn shown(allow: &[NetAllow]) -> Vec<String> {
        allow
            .iter()
            .map(|a| format!("{}:{:?}", a.host, a.port))
            .collect()
    }

    #[test]
    fn each_transport_reaches_only_what_it_needs_and_the_person_adds() {
        let web = vec![NetAllow {
            host: "docs.rs".into(),
            port: None,
            why: "web.fetch".into(),
        }];
        let http = Reach::Http {
            url: "https://user@MCP.example.com/mcp?key=1".into(),
            headers: Vec::new(),
        };
        assert_eq!(
            shown(&hosts(&server(http, false, &[]), &[], &web)),
            ["mcp.example.com:Some(443)"]
        );
        let sse = Reach::Sse {
            url: "http://[::1]:8080/sse".into(),
            headers: Vec::new(),
        };
        assert_eq!(
            shown(&hosts(&server(sse, false, &[]), &[], &web)),
            ["::1:Some(8080)"]
        );
        let npx = server(
            stdio("/usr/bin/npx", &["-y", "pkg"]),
            false,
            &["a.org:8443"],
        );
        assert_eq!(
            shown(&hosts(&npx, &[], &web)),
            ["registry.npmjs.org:Some(443)", "a.org:8443:None"]
        );
        let env = [(
            "npm_config_registry".to_string(),
            "http://npm.internal:4873/".to_string(),
        )];
        let npm = server(stdio("npm", &["exec", "pkg"]), false, &[]);
        assert_eq!(shown(&hosts(&npm, &env, &web)), ["npm.internal:Some(4873)"]);
        let node = server(stdio("node", &["server.js"]), false, &[]);
        assert!(hosts(&node, &env, &web).is_empty());
        let browser = server(stdio("npx", &["chrome-devtools-mcp@1"]), true, &[]);
        assert_eq!(
            shown(&hosts(&browser, &[], &web)),
            ["registry.npmjs.org:Some(443)", "docs.rs:None"]
        );
    }
}
