use std::path::PathBuf;

use bosun_agents::secrets::{SecretLine, SecretSource, UsedAs};
use bosun_protocol::runner::{LaunchPlan, PlanFile, StopLadder};
use bosun_shared::gateway::{GatewayServer, Reach, Rules};
use bosun_shared::{RunId, RunToken, ServerId};
use bosun_store::Record;

use super::{Unsealable, fill, seal};

const AGENT_SECRET: &str = "agent-secret-with \"quotes\" and \\ backslash";
const HEADER: &str = "Basic dXNlcjpwYXNzd29yZA==";
const TOKEN: &str = "access-token-0f9e8d7c";
const QUERY: &str = "key=query-secret-77";

fn line(source: SecretSource, value: &str) -> SecretLine {
    SecretLine {
        source,
        value: value.to_string(),
    }
}

fn keychain(key: &str, used_as: UsedAs) -> SecretSource {
    SecretSource::Keychain {
        key: key.into(),
        what: format!("the value at {key}"),
        fix: "bosun agent edit far --secret-env TOKEN".into(),
        used_as,
    }
}

/// The secrets of [`plan`], as the launch reads them.
fn secrets(agent: &str, token: &str) -> Vec<SecretLine> {
    vec![
        line(keychain("agent/a/env/TOKEN", UsedAs::AgentEnv), agent),
        line(
            keychain(
                "mcp/s/header/X-Key",
                UsedAs::Header {
                    name: "X-Key".into(),
                },
            ),
            HEADER,
        ),
        line(
            SecretSource::Token {
                server: ServerId::new(),
                name: "docs".into(),
                min_valid_ms: 60_000,
            },
            token,
        ),
        line(
            keychain(
                "mcp/s/query",
                UsedAs::Query {
                    url: "https://docs.example/mcp".into(),
                },
            ),
            QUERY,
        ),
    ]
}

/// A plan with the secrets in every place a launch puts them: the environment, a per-run
/// JSON file (escaped), the gateway's addresses (Streamable HTTP and HTTP+SSE), headers and
/// token, and the forms to hide.
fn plan(agent: &str, token: &str) -> LaunchPlan {
    let file = serde_json::json!({
        "mcpServers": { "docs": { "headers": { "X-Key": HEADER, "Authorization": format!("Bearer {token}") } } },
        "env": { "TOKEN": agent },
    });
    let mut redact: Vec<String> = secrets(agent, token)
        .iter()
        .flat_map(SecretLine::redact_forms)
        .collect();
    redact.push("a-value-of-the-browser".into());
    LaunchPlan {
        run_id: RunId::new(),
        token: RunToken::generate(),
        socket: PathBuf::from("/state/bosund.sock"),
        run_dir: PathBuf::from("/shared/runs/r"),
        program: "sh".into(),
        args: vec!["-c".into(), "echo the prompt".into()],
        env: vec![
            ("PATH".into(), "/usr/bin".into()),
            ("TOKEN".into(), agent.into()),
        ],
        cwd: PathBuf::from("/work"),
        files: vec![PlanFile {
            path: PathBuf::from("/shared/runs/r/mcp.json"),
            contents: serde_json::to_string_pretty(&file).unwrap(),
            secret: true,
        }],
        time_cap_ms: Some(60_000),
        ladder: StopLadder::default(),
        umask: 0o022,
        notes: vec!["a note".into()],
        max_output: None,
        control: None,
        redact,
        log_file: None,
        fence: None,
        folders: Vec::new(),
        drop_lines: Vec::new(),
        gateway: vec![
            GatewayServer {
                name: "docs".into(),
                reach: Reach::Http {
                    url: format!("https://docs.example/mcp?{QUERY}"),
                    headers: vec![
                        ("X-Key".into(), HEADER.into()),
                        ("Authorization".into(), format!("Bearer {token}")),
                    ],
                },
                rules: Rules::default(),
                roots: vec![PathBuf::from("/work")],
                pinned: None,
                browser: false,
            },
            GatewayServer {
                name: "feed".into(),
                reach: Reach::Sse {
                    url: format!("https://feed.example/sse?{QUERY}"),
                    headers: vec![
                        ("X-Key".into(), HEADER.into()),
                        ("Authorization".into(), format!("Bearer {token}")),
                    ],
                },
                rules: Rules::default(),
                roots: vec![PathBuf::from("/work")],
                pinned: None,
                browser: false,
            },
        ],
    }
}

fn json(plan: &LaunchPlan) -> serde_json::Value {
    let mut v = serde_json::to_value(plan).unwrap();
    let redact = v["redact"].as_array_mut().unwrap();
    redact.sort_by_key(|r| r.as_str().unwrap().to_string());
    redact.dedup();
    v
}

#[test]
fn a_sealed_plan_holds_no_secret_and_fills_back_to_the_plan() {
    let plan = plan(AGENT_SECRET, TOKEN);
    let sealed = seal(&plan, &secrets(AGENT_SECRET, TOKEN)).unwrap();
    let stored = String::from_utf8(sealed.encode()).unwrap();
    for form in secrets(AGENT_SECRET, TOKEN)
        .iter()
        .flat_map(SecretLine::redact_forms)
        .chain([plan.token.expose().to_string(), "query-secret-77".into()])
    {
        assert!(!stored.contains(&form), "{form} is kept: {stored}");
    }
    // The sealed plan reads back from the store as it was.
    let back = super::SealedPlan::decode(stored.as_bytes()).unwrap();
    assert_eq!(back, sealed);
    let values = secrets(AGENT_SECRET, TOKEN)
        .into_iter()
        .map(|s| s.value)
        .collect();
    let filled = fill(&back, values, plan.token.clone()).unwrap();
    assert_eq!(json(&filled), json(&plan));
}

#[test]
fn values_that_changed_meanwhile_are_the_ones_the_plan_gets() {
    let old = plan(AGENT_SECRET, TOKEN);
    let sealed = seal(&old, &secrets(AGENT_SECRET, TOKEN)).unwrap();
    let (agent, token) = ("a new secret, \"set again\"", "refreshed-token-1a2b3c");
    let values = secrets(agent, token).into_iter().map(|s| s.value).collect();
    let filled = fill(&sealed, values, old.token.clone()).unwrap();
    let mut want = plan(agent, token);
    want.run_id = old.run_id;
    want.token = old.token.clone();
    assert_eq!(json(&filled), json(&want));
    // The file's JSON reads back with the new value in it.
    let file: serde_json::Value = serde_json::from_str(&filled.files[0].contents).unwrap();
    assert_eq!(file["env"]["TOKEN"], agent);
}

#[test]
fn text_made_to_look_like_a_marker_is_never_filled() {
    let mut plan = plan(AGENT_SECRET, TOKEN);
    plan.args[1] = "@@bosun-sealed-00000000000000000000000000000000-0-raw@@".into();
    let sealed = seal(&plan, &secrets(AGENT_SECRET, TOKEN)).unwrap();
    let values = secrets(AGENT_SECRET, TOKEN)
        .into_iter()
        .map(|s| s.value)
        .collect();
    let filled = fill(&sealed, values, plan.token.clone()).unwrap();
    assert_eq!(filled.args[1], plan.args[1]);
}

#[test]
fn a_plan_that_cannot_be_sealed_whole_is_refused() {
    // A value too short to be found for sure.
    let plan = plan("abc", TOKEN);
    let err = seal(&plan, &secrets("abc", TOKEN)).unwrap_err();
    assert!(matches!(err, Unsealable::Short { .. }), "{err}");
    // A secret that stands in the plan in another form than it was read in: the header's
    // `Basic` credential, decoded.
    let mut plan = self::plan(AGENT_SECRET, TOKEN);
    plan.notes.push("signed in as user:password".into());
    let err = seal(&plan, &secrets(AGENT_SECRET, TOKEN)).unwrap_err();
    assert!(
        matches!(&err, Unsealable::Unknown { what } if what.contains("mcp/s/header/X-Key")),
        "{err}"
    );
}
