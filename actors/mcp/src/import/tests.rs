//! Tests of the importer against configs written by the real CLIs (`tests/fixtures/import`).

use super::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/import");

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(FIXTURES).join(rel)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn stdio_t(command: &str, args: &[&str], env: &[(&str, &str)]) -> CandidateTransport {
    CandidateTransport::Stdio {
        command: command.to_owned(),
        args: strings(args),
        env: pairs(env),
    }
}

fn http_t(url: &str, headers: &[(&str, &str)]) -> CandidateTransport {
    CandidateTransport::Http {
        url: url.to_owned(),
        headers: pairs(headers),
    }
}

fn sse_t(url: &str, headers: &[(&str, &str)]) -> CandidateTransport {
    CandidateTransport::Sse {
        url: url.to_owned(),
        headers: pairs(headers),
    }
}

fn cand(
    source: ImportSource,
    account: &Path,
    scope: &ImportScope,
    name: &str,
    transport: CandidateTransport,
) -> ImportCandidate {
    ImportCandidate {
        source,
        account: account.to_owned(),
        scope: scope.clone(),
        name: name.to_owned(),
        transport,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const GITHUB_ARGS: &[&str] = &["-y", "@modelcontextprotocol/server-github", "--verbose"];

#[test]
fn claude_fixture_user_and_local_scope() {
    let file = fixture("claude/.claude.json");
    let got = read_claude(&file).unwrap();
    let user = ImportScope::User;
    let local = ImportScope::Local {
        folder: PathBuf::from("/work/npm-cli/run/project"),
    };
    let c = |scope: &ImportScope, name: &str, t: CandidateTransport| {
        cand(ImportSource::Claude, &file, scope, name, t)
    };
    let want = vec![
        c(
            &user,
            "github",
            stdio_t(
                "npx",
                GITHUB_ARGS,
                &[
                    ("GITHUB_TOKEN", "canary-secret-1234"),
                    ("LOG_LEVEL", "debug"),
                ],
            ),
        ),
        c(
            &user,
            "remote",
            http_t(
                "https://mcp.example.com/mcp",
                &[
                    ("Authorization", "Bearer canary-secret-1234"),
                    ("X-Team", "blue"),
                ],
            ),
        ),
        c(
            &user,
            "events",
            sse_t(
                "https://sse.example.com/sse",
                &[("X-Api-Key", "canary-secret-5678")],
            ),
        ),
        c(&user, "plain", http_t("https://plain.example.com/mcp", &[])),
        c(
            &user,
            "envref",
            http_t(
                "https://envref.example.com/mcp",
                &[("Authorization", "Bearer ${GH_TOKEN}")],
            ),
        ),
        c(
            &user,
            "fromjson",
            stdio_t("/usr/bin/env", &["mcp-thing"], &[("API_KEY", "${API_KEY}")]),
        ),
        c(&user, "notype", stdio_t("/bin/echo", &["hi"], &[])),
        // "wsserver" ({"type": "ws"}, stored by `claude mcp add-json`) is left out.
        c(
            &user,
            "oauthsrv",
            http_t("https://oauth.example.com/mcp", &[]),
        ),
        c(
            &local,
            "localstdio",
            stdio_t(
                "/usr/local/bin/db-mcp",
                &["--port", "5432"],
                &[("DB_PASSWORD", "canary-secret-local")],
            ),
        ),
        c(
            &local,
            "lochttp",
            http_t(
                "https://local.example.com/mcp",
                &[("Authorization", "Bearer canary-secret-9999")],
            ),
        ),
        c(
            &local,
            "locsse",
            sse_t("https://local.example.com/sse", &[]),
        ),
    ];
    assert_eq!(got, want);
    assert_eq!(got[0].env_names(), vec!["GITHUB_TOKEN", "LOG_LEVEL"]);
    assert!(got[0].header_names().is_empty());
    assert_eq!(got[1].header_names(), vec!["Authorization", "X-Team"]);
    assert!(got[1].env_names().is_empty());
}

#[test]
fn claude_fixture_project_scope() {
    let file = fixture("claude/project/.mcp.json");
    let got = read_claude_project(&file).unwrap();
    let scope = ImportScope::Project {
        folder: fixture("claude/project"),
    };
    let want = vec![
        cand(
            ImportSource::Claude,
            &file,
            &scope,
            "projsrv",
            stdio_t("/bin/echo", &["p"], &[("PROJ_TOKEN", "canary-secret-proj")]),
        ),
        cand(
            ImportSource::Claude,
            &file,
            &scope,
            "projhttp",
            http_t(
                "https://proj.example.com/mcp",
                &[("X-Key", "canary-secret-projhttp")],
            ),
        ),
    ];
    assert_eq!(got, want);
}

#[test]
fn codex_fixture() {
    let file = fixture("codex/config.toml");
    let got = read_codex(&file).unwrap();
    let c = |name: &str, t: CandidateTransport| {
        cand(ImportSource::Codex, &file, &ImportScope::User, name, t)
    };
    let want = vec![
        c(
            "github",
            stdio_t(
                "npx",
                GITHUB_ARGS,
                &[
                    ("GITHUB_TOKEN", "canary-secret-1234"),
                    ("LOG_LEVEL", "debug"),
                ],
            ),
        ),
        c(
            "remote",
            http_t(
                "https://mcp.example.com/mcp",
                &[("Authorization", "Bearer ${GITHUB_TOKEN}")],
            ),
        ),
        c("plain", http_t("https://plain.example.com/mcp", &[])),
        c("oauthsrv", http_t("https://oauth.example.com/mcp", &[])),
        c(
            "envref",
            stdio_t("/usr/bin/env", &["mcp-thing"], &[("API_KEY", "${API_KEY}")]),
        ),
    ];
    assert_eq!(got, want);
}

#[test]
fn codex_handwritten_fixture_env_references() {
    let file = fixture("codex/config-handwritten.toml");
    let got = read_codex(&file).unwrap();
    let c = |name: &str, t: CandidateTransport| {
        cand(ImportSource::Codex, &file, &ImportScope::User, name, t)
    };
    let want = vec![
        c(
            "headers",
            http_t(
                "https://headers.example.com/mcp",
                &[
                    ("X-Team", "blue"),
                    ("X-Api-Key", "canary-secret-codexhdr"),
                    ("X-Org-Token", "${ORG_TOKEN}"),
                    ("Authorization", "Bearer ${API_BEARER}"),
                ],
            ),
        ),
        c(
            "passthru",
            stdio_t(
                "/usr/local/bin/tool-mcp",
                &["--stdio"],
                &[
                    ("STATIC", "canary-secret-static"),
                    ("HOME_TOKEN", "${HOME_TOKEN}"),
                    ("OTHER_TOKEN", "${OTHER_TOKEN}"),
                ],
            ),
        ),
    ];
    assert_eq!(got, want);
}

#[test]
fn gemini_fixture_user_scope() {
    let file = fixture("gemini/settings.json");
    let got = read_gemini(&file).unwrap();
    let c = |name: &str, t: CandidateTransport| {
        cand(ImportSource::Gemini, &file, &ImportScope::User, name, t)
    };
    let want = vec![
        c(
            "github",
            stdio_t(
                "npx",
                GITHUB_ARGS,
                &[
                    ("GITHUB_TOKEN", "canary-secret-1234"),
                    ("LOG_LEVEL", "debug"),
                ],
            ),
        ),
        c(
            "remote",
            http_t(
                "https://mcp.example.com/mcp",
                &[
                    ("Authorization", "Bearer canary-secret-1234"),
                    ("X-Team", "blue"),
                ],
            ),
        ),
        c(
            "events",
            sse_t(
                "https://sse.example.com/sse",
                &[("X-Api-Key", "canary-secret-5678")],
            ),
        ),
        c("plain", http_t("https://plain.example.com/mcp", &[])),
        c(
            "envref",
            stdio_t(
                "/usr/bin/env",
                &["mcp-thing"],
                &[("API_KEY", "$API_KEY"), ("OTHER", "${OTHER_TOKEN}")],
            ),
        ),
        c("withopts", stdio_t("/bin/echo", &["hi"], &[])),
    ];
    assert_eq!(got, want);
}

#[test]
fn gemini_fixture_project_scope() {
    let file = fixture("gemini/project/.gemini/settings.json");
    let got = read_gemini_project(&file).unwrap();
    let scope = ImportScope::Project {
        folder: fixture("gemini/project"),
    };
    let want = vec![
        cand(
            ImportSource::Gemini,
            &file,
            &scope,
            "projsrv",
            stdio_t("/bin/echo", &["p"], &[("PROJ_TOKEN", "canary-secret-proj")]),
        ),
        cand(
            ImportSource::Gemini,
            &file,
            &scope,
            "projsse",
            sse_t("https://proj.example.com/sse", &[]),
        ),
    ];
    assert_eq!(got, want);
}

#[test]
fn gemini_handwritten_fixture_comments_url_httpurl() {
    let file = fixture("gemini/settings-handwritten.json");
    let got = read_gemini(&file).unwrap();
    let c = |name: &str, t: CandidateTransport| {
        cand(ImportSource::Gemini, &file, &ImportScope::User, name, t)
    };
    let want = vec![
        c(
            "legacyurl",
            sse_t(
                "https://legacy.example.com/sse",
                &[("Authorization", "Bearer $LEGACY_TOKEN")],
            ),
        ),
        c(
            "streamable",
            http_t(
                "https://stream.example.com/mcp",
                &[("X-Api-Key", "canary-secret-httpurl")],
            ),
        ),
        c(
            "withcwd",
            stdio_t(
                "node",
                &["server.js", "--url=http://x//y"],
                &[("PATHY", "a/*b*/c")],
            ),
        ),
    ];
    assert_eq!(got, want);
}

#[test]
fn debug_never_prints_secret_values() {
    let mut all = read_claude(&fixture("claude/.claude.json")).unwrap();
    all.extend(read_claude_project(&fixture("claude/project/.mcp.json")).unwrap());
    all.extend(read_codex(&fixture("codex/config.toml")).unwrap());
    all.extend(read_codex(&fixture("codex/config-handwritten.toml")).unwrap());
    all.extend(read_gemini(&fixture("gemini/settings.json")).unwrap());
    all.extend(read_gemini(&fixture("gemini/settings-handwritten.json")).unwrap());
    assert!(all.len() > 20);
    for c in &all {
        for text in [
            format!("{c:?}"),
            format!("{c:#?}"),
            format!("{:?}", c.transport),
        ] {
            assert!(!text.contains("canary"), "secret in Debug: {text}");
            assert!(!text.contains("Bearer"), "header value in Debug: {text}");
        }
    }
    let github = &all[0];
    let text = format!("{github:?}");
    assert!(text.contains("GITHUB_TOKEN=<value>"), "{text}");
    assert!(text.contains("LOG_LEVEL=<value>"), "{text}");
    assert!(!text.contains("debug\""), "{text}");
    let remote = format!("{:?}", all[1]);
    assert!(remote.contains("Authorization=<value>"), "{remote}");
}

#[test]
fn unknown_type_and_broken_entries_are_skipped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        ".claude.json",
        r#"{"mcpServers": {
            "bogus": {"type": "bogus", "url": "http://x"},
            "ide": {"type": "sse-ide", "url": "http://x"},
            "nocmd": {"type": "stdio", "args": ["a"]},
            "nourl": {"type": "http"},
            "badargs": {"command": "x", "args": [1]},
            "badenv": {"command": "x", "env": {"A": 1}},
            "notobj": "x",
            "ok": {"command": "/bin/true"}
        },
        "projects": {"/p": "not an object", "/q": {"allowedTools": []}}}"#,
    );
    let got = read_claude(&file).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].name, "ok");
    assert_eq!(got[0].transport, stdio_t("/bin/true", &[], &[]));

    let codex = write(
        dir.path(),
        "config.toml",
        "[mcp_servers.both]\nurl = \"http://x\"\ncommand = \"x\"\n\
         [mcp_servers.neither]\nargs = [\"x\"]\n\
         [mcp_servers.literal]\nurl = \"http://x\"\nbearer_token = \"canary\"\n\
         [mcp_servers.ok]\nurl = \"http://ok\"\n",
    );
    let got = read_codex(&codex).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].transport, http_t("http://ok", &[]));

    let gemini = write(
        dir.path(),
        "settings.json",
        r#"{"mcpServers": {"ws": {"url": "ws://x", "type": "ws"}, "none": {"trust": true},
            "ok": {"url": "http://ok", "type": "http"}}}"#,
    );
    let got = read_gemini(&gemini).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].transport, http_t("http://ok", &[]));
}

#[test]
fn files_without_servers_give_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let claude = write(dir.path(), ".claude.json", r#"{"numStartups": 3}"#);
    assert!(read_claude(&claude).unwrap().is_empty());
    let codex = write(dir.path(), "config.toml", "model = \"o3\"\n");
    assert!(read_codex(&codex).unwrap().is_empty());
    let gemini = write(dir.path(), "settings.json", "{}");
    assert!(read_gemini(&gemini).unwrap().is_empty());
}

#[test]
fn malformed_json_is_malformed_with_a_plain_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        ".claude.json",
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"canary-secret\"\n  }\n",
    );
    let err = read_claude(&file).unwrap_err();
    assert!(matches!(err, ImportError::Malformed { .. }), "{err:?}");
    let msg = err.to_string();
    assert_eq!(
        msg,
        format!(
            "{} is not valid JSON (line 5, column 0: the file ends too early); \
             fix it in Claude Code or leave it out",
            file.display()
        )
    );

    let file = write(dir.path(), "bad.json", "{\n  \"a\": 1,,\n}");
    let msg = read_claude_project(&file).unwrap_err().to_string();
    assert_eq!(
        msg,
        format!(
            "{} is not valid JSON (line 2, column 10: key must be a string); \
             fix it in Claude Code or leave it out",
            file.display()
        )
    );
    assert!(!msg.ends_with('.'));

    let file = write(dir.path(), "array.json", "[1, 2]");
    let msg = read_gemini(&file).unwrap_err().to_string();
    assert_eq!(
        msg,
        format!(
            "{} is not a JSON object; fix it in Gemini CLI or leave it out",
            file.display()
        )
    );

    let file = write(dir.path(), "servers.json", r#"{"mcpServers": []}"#);
    let msg = read_claude(&file).unwrap_err().to_string();
    assert_eq!(
        msg,
        format!(
            "{} has \"mcpServers\" that is not a JSON object; \
             fix it in Claude Code or leave it out",
            file.display()
        )
    );

    let file = write(dir.path(), "latin1.json", "");
    std::fs::write(&file, b"{\"a\": \"\xe9\"}").unwrap();
    let msg = read_claude(&file).unwrap_err().to_string();
    assert!(msg.ends_with("is not UTF-8 text; fix it in Claude Code or leave it out"));
}

#[test]
fn malformed_toml_is_malformed_with_a_plain_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "config.toml",
        "[mcp_servers.a]\ncommand = \"x\"\nenv = { TOKEN = canary-secret-1234 }\n",
    );
    let err = read_codex(&file).unwrap_err();
    assert!(matches!(err, ImportError::Malformed { .. }), "{err:?}");
    let msg = err.to_string();
    let start = format!("{} is not valid TOML (line 3, column ", file.display());
    assert!(msg.starts_with(&start), "{msg}");
    assert!(msg.ends_with("; fix it in Codex or leave it out"), "{msg}");
    assert!(!msg.contains("canary"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");

    let file = write(dir.path(), "dup.toml", "[mcp_servers.a]\n[mcp_servers.a]\n");
    let msg = read_codex(&file).unwrap_err().to_string();
    assert!(msg.contains("is not valid TOML (line 2, column"), "{msg}");

    let file = write(dir.path(), "shape.toml", "mcp_servers = 3\n");
    let msg = read_codex(&file).unwrap_err().to_string();
    assert_eq!(
        msg,
        format!(
            "{} has mcp_servers that is not a table; fix it in Codex or leave it out",
            file.display()
        )
    );
}

#[test]
fn missing_file_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    for result in [
        read_claude(&missing),
        read_claude_project(&missing),
        read_codex(&missing),
        read_gemini(&missing),
        read_gemini_project(&missing),
    ] {
        let err = result.unwrap_err();
        assert!(matches!(err, ImportError::Unreadable { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "could not read {}: there is no such file",
                missing.display()
            )
        );
    }
    let err = read_claude(dir.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "could not read {}: it is a folder, not a file",
            dir.path().display()
        )
    );
}

#[test]
fn comments_are_stripped_only_outside_strings() {
    let text = "{\"a\": \"x//y /* z */\", // c\n \"b\": /* d\n e */ 1}";
    let stripped = strip_json_comments(text);
    assert_eq!(stripped.len(), text.len());
    let v: Value = serde_json::from_str(&stripped).unwrap();
    assert_eq!(v["a"], "x//y /* z */");
    assert_eq!(v["b"], 1);
    assert_eq!(
        strip_json_comments(r#"{"q": "a\"//b"}"#),
        r#"{"q": "a\"//b"}"#
    );
}

#[test]
fn default_files_follow_the_environment() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let env_of = |pairs: Vec<(&'static str, PathBuf)>| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.display().to_string())
        }
    };
    let only_home = env_of(vec![("HOME", h.to_owned())]);
    assert!(default_files(&only_home).is_empty());

    std::fs::create_dir_all(h.join(".codex")).unwrap();
    std::fs::create_dir_all(h.join(".gemini")).unwrap();
    std::fs::create_dir_all(h.join(".claude")).unwrap();
    write(h, ".claude.json", "{}");
    write(&h.join(".codex"), "config.toml", "");
    write(&h.join(".gemini"), "settings.json", "{}");
    assert_eq!(
        default_files(&only_home),
        vec![
            (ImportSource::Claude, h.join(".claude.json")),
            (ImportSource::Codex, h.join(".codex/config.toml")),
            (ImportSource::Gemini, h.join(".gemini/settings.json")),
        ]
    );

    let other = h.join("second");
    std::fs::create_dir_all(other.join(".gemini")).unwrap();
    write(&other, ".claude.json", "{}");
    write(&other, "config.toml", "");
    write(&other.join(".gemini"), "settings.json", "{}");
    let overridden = env_of(vec![
        ("HOME", h.to_owned()),
        ("CLAUDE_CONFIG_DIR", other.clone()),
        ("CODEX_HOME", other.clone()),
        ("GEMINI_CLI_HOME", other.clone()),
    ]);
    assert_eq!(
        default_files(&overridden),
        vec![
            (ImportSource::Claude, other.join(".claude.json")),
            (ImportSource::Codex, other.join("config.toml")),
            (ImportSource::Gemini, other.join(".gemini/settings.json")),
        ]
    );

    // A set but missing CLAUDE_CONFIG_DIR file does not fall back to ~/.claude.json.
    let empty = h.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let missing = env_of(vec![
        ("HOME", h.to_owned()),
        ("CLAUDE_CONFIG_DIR", empty.clone()),
    ]);
    assert_eq!(default_files(&missing)[0].0, ImportSource::Codex);
    // ...but does find the older .config.json there.
    write(&empty, ".config.json", "{}");
    assert_eq!(
        default_files(&missing)[0],
        (ImportSource::Claude, empty.join(".config.json"))
    );

    let nothing = |_: &str| None;
    assert!(default_files(&nothing).is_empty());
}

#[test]
fn display_words() {
    assert_eq!(ImportSource::Claude.to_string(), "Claude Code");
    assert_eq!(ImportSource::Codex.to_string(), "Codex");
    assert_eq!(ImportSource::Gemini.to_string(), "Gemini CLI");
    assert_eq!(http_t("u", &[]).kind(), "http");
    assert_eq!(sse_t("u", &[]).kind(), "sse");
    assert_eq!(stdio_t("c", &[], &[]).kind(), "stdio");
}
