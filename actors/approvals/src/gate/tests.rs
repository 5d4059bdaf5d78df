//! The first step as a table: every switch, on and off, against every approval mode, for each
//! CLI's tools that the switch governs — with the person's "always allow" saved, the most a
//! verdict can give, so that a switch that is off is seen to win over it.

use std::collections::BTreeSet;

use bosun_shared::agents::{CliKind, WebFetch};
use bosun_shared::approvals::{ApprovalMode, Verdict};
use bosun_shared::{ServerId, Timestamp};
use serde_json::{Value, json};

use super::*;
use crate::policy::{Decision, PolicyInput, Rule, classify_builtin, classify_mcp, decide};
use bosun_agents::record::{ServerSwitch, Switches};
use bosun_mcp::browser::BrowserSettings;

const CLIS: [CliKind; 3] = [CliKind::Claude, CliKind::Codex, CliKind::Gemini];
const MODES: [ApprovalMode; 3] = [
    ApprovalMode::AskEveryAction,
    ApprovalMode::ReadOnlyWithoutAsking,
    ApprovalMode::SkipApprovals,
];

fn server(name: &str, browser: bool) -> ServerRecord {
    let mut rec: ServerRecord = serde_json::from_value(json!({
        "id": ServerId::new(),
        "name": name,
        "kind": "stdio",
        "command": "x",
        "args": [],
        "url": null,
        "env_names": [],
        "header_names": [],
        "created_at": Timestamp::from_millis(0),
        "updated_at": Timestamp::from_millis(0),
        "listing": null,
        "last_error": null,
    }))
    .unwrap();
    if browser {
        rec.browser = Some(BrowserSettings::default());
    }
    rec
}

/// The decision for a call under `mode` with "always allow" saved.
fn decided(refused: Option<Refusal>, mode: ApprovalMode, class: crate::policy::Class) -> Decision {
    decide(&PolicyInput {
        refused,
        mode,
        class,
        verdict: Some(Verdict::AlwaysAllow),
        escalated: false,
        attended: true,
        holds_secret: false,
    })
}

fn is_switched_off(d: &Decision) -> bool {
    matches!(
        d,
        Decision::Deny {
            rule: Rule::SwitchedOff,
            ..
        }
    )
}

/// Each governed built-in of each CLI, its switch off then on, in every mode.
#[test]
fn every_built_in_switch_holds_in_every_mode() {
    let servers: Vec<ServerRecord> = Vec::new();
    let mut rows = 0;
    for cli in CLIS {
        for tool in bosun_agents::catalog::catalog(cli) {
            let input = json!({"url": "https://docs.rs/x", "query": "q", "prompt": "see https://docs.rs/x"});
            let (off, on): (Switches, Switches) = match tool.governed {
                Governed::WebSearch => (
                    Switches::default(),
                    Switches {
                        web_search: true,
                        ..Switches::default()
                    },
                ),
                Governed::WebFetch => (
                    Switches::default(),
                    Switches {
                        web_fetch: WebFetch::Any,
                        ..Switches::default()
                    },
                ),
                Governed::Skills => (
                    Switches::default(),
                    Switches {
                        skills: true,
                        ..Switches::default()
                    },
                ),
                Governed::AlwaysOn
                | Governed::PermissionMode
                | Governed::AllowedCommands
                | Governed::Off(_) => {
                    // No switch: the first step lets it through with everything off.
                    let a = Agent {
                        name: "coder",
                        cli,
                        switches: &Switches::default(),
                        servers: &servers,
                    };
                    assert_eq!(
                        switches(
                            a,
                            Call::Builtin {
                                name: tool.name,
                                input: &input
                            }
                        ),
                        None,
                        "{cli} {}",
                        tool.name
                    );
                    continue;
                }
            };
            let class = classify_builtin(cli, tool.name, &input);
            // The decision for the tool with `sw`, in `mode`.
            let judged = |sw: &Switches, mode| {
                let a = Agent {
                    name: "coder",
                    cli,
                    switches: sw,
                    servers: &servers,
                };
                let call = Call::Builtin {
                    name: tool.name,
                    input: &input,
                };
                decided(switches(a, call), mode, class)
            };
            for mode in MODES {
                let d = judged(&off, mode);
                assert!(
                    is_switched_off(&d),
                    "{cli} {} off, {mode:?}: {d:?}",
                    tool.name
                );
                let d = judged(&on, mode);
                let skills_unchecked =
                    tool.governed == Governed::Skills && !cli.has_skills_switch();
                assert_eq!(
                    is_switched_off(&d),
                    skills_unchecked,
                    "{cli} {} on, {mode:?}: {d:?}",
                    tool.name
                );
                rows += 1;
            }
        }
    }
    assert!(rows >= 18, "only {rows} rows");
}

#[test]
fn a_fetch_list_is_matched_against_each_address_host() {
    let servers: Vec<ServerRecord> = Vec::new();
    let listed = Switches {
        web_fetch: WebFetch::parse("docs.rs,*.example.com").unwrap(),
        ..Switches::default()
    };
    let claude = Agent {
        name: "coder",
        cli: CliKind::Claude,
        switches: &listed,
        servers: &servers,
    };
    let fetch = |url: &str| {
        switches(
            claude,
            Call::Builtin {
                name: "WebFetch",
                input: &json!({"url": url}),
            },
        )
    };
    assert_eq!(fetch("https://docs.rs/tokio"), None);
    assert_eq!(fetch("https://api.example.com/x"), None);
    for no in [
        "http://127.0.0.1:8080/secret.txt",
        "https://example.com/",
        "https://docs.rs.evil.net/",
        "https://user@evil.net/?docs.rs",
        "not an address",
    ] {
        let r = fetch(no).unwrap_or_else(|| panic!("{no} was let through"));
        assert_eq!(r.rule, Rule::SwitchedOff);
        assert!(r.reason.contains("docs.rs,*.example.com"), "{}", r.reason);
    }
    let r = fetch("http://127.0.0.1:9/x").unwrap();
    assert!(
        r.reason
            .contains("bosun agent set coder web.fetch=docs.rs,*.example.com,127.0.0.1"),
        "{}",
        r.reason
    );
    let off = Switches::default();
    let claude_off = Agent {
        switches: &off,
        ..claude
    };
    let r = switches(
        claude_off,
        Call::Builtin {
            name: "WebFetch",
            input: &json!({"url": "https://docs.rs"}),
        },
    )
    .unwrap();
    assert!(
        r.reason.contains("bosun agent set coder web.fetch=any"),
        "{}",
        r.reason
    );
    // Gemini cannot keep to a list: its fetch is off while there is one.
    let gemini = Agent {
        cli: CliKind::Gemini,
        ..claude
    };
    let prompt = json!({"prompt": "summarize https://docs.rs/x"});
    assert!(
        switches(
            gemini,
            Call::Builtin {
                name: "web_fetch",
                input: &prompt
            }
        )
        .is_some()
    );
    let any = Switches {
        web_fetch: WebFetch::Any,
        ..Switches::default()
    };
    let gemini_any = Agent {
        switches: &any,
        ..gemini
    };
    assert_eq!(
        switches(
            gemini_any,
            Call::Builtin {
                name: "web_fetch",
                input: &prompt
            }
        ),
        None
    );
}

#[test]
fn mcp_servers_their_tools_and_the_browser_hold_in_every_mode() {
    let (github, browser) = (server("github", false), server("chrome-devtools", true));
    let servers = vec![github.clone(), browser.clone()];
    let mut tools_off = ServerSwitch::all_on();
    tools_off.set_tool("delete_repo", false);
    let cases: Vec<(&str, Switches, &str, &str, bool, &str)> = vec![
        (
            "server off",
            Switches::default(),
            "github",
            "list",
            true,
            "mcp.github=on",
        ),
        (
            "server on",
            Switches {
                mcp: [(github.id, ServerSwitch::all_on())].into(),
                ..Switches::default()
            },
            "github",
            "list",
            false,
            "",
        ),
        (
            "tool off",
            Switches {
                mcp: [(github.id, tools_off)].into(),
                ..Switches::default()
            },
            "github",
            "delete_repo",
            true,
            "mcp.github.delete_repo=on",
        ),
        (
            "browser off",
            Switches::default(),
            "chrome-devtools",
            "click",
            true,
            "browser=on",
        ),
        (
            "browser on",
            Switches {
                mcp: [(browser.id, ServerSwitch::all_on())].into(),
                ..Switches::default()
            },
            "chrome-devtools",
            "click",
            false,
            "",
        ),
        (
            "a server bosun did not give",
            Switches::default(),
            "from-user-config",
            "x",
            true,
            "not an MCP server bosun gave",
        ),
        (
            "bosun's own",
            Switches::default(),
            BOSUN_SERVER,
            "qa_pass",
            false,
            "",
        ),
    ];
    for (what, sw, server, tool, refused, says) in cases {
        for cli in CLIS {
            let a = Agent {
                name: "coder",
                cli,
                switches: &sw,
                servers: &servers,
            };
            let r = switches(a, Call::Mcp { server, tool });
            let class = classify_mcp(server, &Default::default());
            for mode in MODES {
                let d = decided(r.clone(), mode, class);
                assert_eq!(is_switched_off(&d), refused, "{what} {cli} {mode:?}: {d:?}");
            }
            if let Some(r) = r {
                assert!(r.reason.contains(says), "{what}: {}", r.reason);
            }
        }
    }
}

#[test]
fn a_built_in_the_catalog_does_not_know_is_off_until_switched_on_and_then_asks() {
    let servers: Vec<ServerRecord> = Vec::new();
    let input = Value::Null;
    for cli in CLIS {
        let off = Switches::default();
        let a = Agent {
            name: "coder",
            cli,
            switches: &off,
            servers: &servers,
        };
        let r = switches(
            a,
            Call::Builtin {
                name: "FancyTool",
                input: &input,
            },
        )
        .unwrap();
        assert!(r.reason.contains("builtin.FancyTool=on"), "{}", r.reason);
        let on = Switches {
            builtins: BTreeSet::from(["FancyTool".to_string()]),
            ..Switches::default()
        };
        let a = Agent { switches: &on, ..a };
        assert_eq!(
            switches(
                a,
                Call::Builtin {
                    name: "FancyTool",
                    input: &input
                }
            ),
            None
        );
        let class = classify_builtin(cli, "FancyTool", &input);
        for mode in MODES {
            let d = decide(&PolicyInput {
                refused: None,
                mode,
                class,
                verdict: None,
                escalated: false,
                attended: true,
                holds_secret: false,
            });
            assert!(matches!(d, Decision::Ask { .. }), "{cli} {mode:?}: {d:?}");
        }
    }
}
