//! A small GitHub of the suite's own, over HTTPS with a test CA, that the real `gh` talks to:
//! `GH_HOST=localhost:<port>`, `GH_ENTERPRISE_TOKEN`, and `SSL_CERT_FILE` naming the CA
//! ([`FakeGithub::env`]). It answers the calls `gh pr list`, `gh pr view` and `gh pr merge` make
//! (recorded with `GH_DEBUG=api` from gh 2.23; all GraphQL, `POST /api/graphql`):
//!
//! - `query PullRequestList(…$headBranch…)`: `repository.pullRequests` — the pull requests whose
//!   head branch is `$headBranch`, in the states asked;
//! - `query PullRequestByNumber(…$pr_number…)`: `repository.pullRequest` — one pull request
//!   with every field `gh pr view --json` reads (its checks as `statusCheckRollup` of its last
//!   commit);
//! - `mutation PullRequestMerge($input)`: `mergePullRequest` — merges only when
//!   `expectedHeadOid` is its head commit now, else answers GitHub's error; every request is
//!   logged ([`FakeGithub::merges`]) with its method and expected head.
//!
//! Anything else is logged and answered `404`, so a test sees a call it did not expect.
//! The state is the test's to change at any moment ([`FakeGithub::with_pr`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};

/// A check on a pull request's head commit: a CheckRun (`status`, `conclusion`) as GitHub
/// gives it.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    /// `COMPLETED`, `IN_PROGRESS`, `QUEUED`.
    pub status: String,
    /// `SUCCESS`, `FAILURE`, `SKIPPED`, `NEUTRAL`, … (empty while not completed).
    pub conclusion: String,
}

impl Check {
    pub fn done(name: &str, conclusion: &str) -> Self {
        Self {
            name: name.into(),
            status: "COMPLETED".into(),
            conclusion: conclusion.into(),
        }
    }

    pub fn running(name: &str) -> Self {
        Self {
            name: name.into(),
            status: "IN_PROGRESS".into(),
            conclusion: String::new(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Pr {
    pub number: u64,
    pub head_ref: String,
    pub head_oid: String,
    pub base_ref: String,
    /// `OPEN`, `CLOSED`, `MERGED`.
    pub state: String,
    pub draft: bool,
    /// From a fork: `isCrossRepository`, and its head repository's owner.
    pub fork: bool,
    /// `MERGEABLE`, `CONFLICTING`, `UNKNOWN`.
    pub mergeable: String,
    /// `CLEAN`, `BLOCKED`, `BEHIND`, `DIRTY`, `UNSTABLE`, `UNKNOWN`, …
    pub merge_state: String,
    pub checks: Vec<Check>,
}

impl Pr {
    /// An open, mergeable pull request of `branch` into `main` whose one check passed.
    pub fn open(number: u64, branch: &str, head: &str) -> Self {
        Self {
            number,
            head_ref: branch.into(),
            head_oid: head.into(),
            base_ref: "main".into(),
            state: "OPEN".into(),
            draft: false,
            fork: false,
            mergeable: "MERGEABLE".into(),
            merge_state: "CLEAN".into(),
            checks: vec![Check::done("build", "SUCCESS")],
        }
    }
}

#[derive(Default)]
struct State {
    prs: Vec<Pr>,
    /// Every request: method, path, and the GraphQL body when there is one.
    requests: Vec<Value>,
    /// Every merge asked: number, method, expected head, and whether it merged.
    merges: Vec<Value>,
}

pub struct FakeGithub {
    state: Arc<Mutex<State>>,
    port: u16,
    _dir: tempfile::TempDir,
    ca: PathBuf,
    config: PathBuf,
    pub owner: String,
    pub repo: String,
}

/// The token gh is given: any value will do; the fake checks it came.
const TOKEN: &str = "fake-github-token";

impl FakeGithub {
    pub fn start(owner: &str, repo: &str) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("bt-gh-")
            .tempdir_in("/tmp")?;
        let test_tls = crate::http::TestTls::new("bosun test CA")?;
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, &test_tls.ca_pem)?;
        let config = dir.path().join("gh-config");
        std::fs::create_dir_all(&config)?;

        let tls = test_tls.config.clone();
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(State::default()));
        let (st, owner_s, repo_s) = (state.clone(), owner.to_string(), repo.to_string());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (st, tls, owner, repo) =
                    (st.clone(), tls.clone(), owner_s.clone(), repo_s.clone());
                std::thread::spawn(move || {
                    let Ok(conn) = rustls::ServerConnection::new(tls) else {
                        return;
                    };
                    let mut s = rustls::StreamOwned::new(conn, stream);
                    let _ = serve(&mut s, &st, &owner, &repo);
                });
            }
        });
        Ok(Self {
            state,
            port,
            _dir: dir,
            ca: ca_file,
            config,
            owner: owner.into(),
            repo: repo.into(),
        })
    }

    /// `localhost:<port>`, as `GH_HOST` takes it.
    pub fn host(&self) -> String {
        format!("localhost:{}", self.port)
    }

    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    /// What gh needs to talk to this GitHub: its host, a token, the CA, and a config folder of
    /// its own.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("GH_HOST".into(), self.host()),
            ("GH_ENTERPRISE_TOKEN".into(), TOKEN.into()),
            ("SSL_CERT_FILE".into(), self.ca.display().to_string()),
            ("GH_CONFIG_DIR".into(), self.config.display().to_string()),
        ]
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a pull request, or replaces the one with its number.
    pub fn with_pr(&self, pr: Pr) {
        let mut s = self.lock();
        s.prs.retain(|p| p.number != pr.number);
        s.prs.push(pr);
    }

    /// Changes a pull request in place.
    pub fn change(&self, number: u64, f: impl FnOnce(&mut Pr)) {
        if let Some(p) = self.lock().prs.iter_mut().find(|p| p.number == number) {
            f(p);
        }
    }

    pub fn pr(&self, number: u64) -> Option<Pr> {
        self.lock().prs.iter().find(|p| p.number == number).cloned()
    }

    pub fn merges(&self) -> Vec<Value> {
        self.lock().merges.clone()
    }

    pub fn requests(&self) -> Vec<Value> {
        self.lock().requests.clone()
    }
}

fn serve(
    s: &mut (impl Read + Write),
    st: &Arc<Mutex<State>>,
    owner: &str,
    repo: &str,
) -> anyhow::Result<()> {
    loop {
        let mut reader = BufReader::new(&mut *s);
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let (mut length, mut auth) = (0usize, String::new());
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h)? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                match k.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    "authorization" => auth = v.trim().to_string(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
        drop(reader);
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (status, answer) = {
            let mut state = st.lock().unwrap_or_else(|p| p.into_inner());
            state
                .requests
                .push(json!({ "method": method, "path": path, "body": body }));
            if !auth.ends_with(TOKEN) {
                (401, json!({ "message": "Bad credentials" }))
            } else if method == "POST" && path == "/api/graphql" {
                (200, graphql(&mut state, &body, owner, repo))
            } else {
                (404, json!({ "message": "Not Found" }))
            }
        };
        let text = answer.to_string();
        write!(
            s,
            "HTTP/1.1 {status} X\r\nContent-Type: application/json; charset=utf-8\r\nX-GitHub-Media-Type: github.v3\r\nContent-Length: {}\r\n\r\n{text}",
            text.len()
        )?;
        s.flush()?;
    }
}

fn pr_json(p: &Pr, owner: &str, repo: &str) -> Value {
    let contexts: Vec<Value> = p
        .checks
        .iter()
        .map(|c| {
            json!({
                "__typename": "CheckRun",
                "name": c.name,
                "status": c.status,
                "conclusion": if c.conclusion.is_empty() { Value::Null } else { Value::from(c.conclusion.clone()) },
                "startedAt": "2026-01-01T00:00:00Z",
                "completedAt": if c.status == "COMPLETED" { Value::from("2026-01-01T00:01:00Z") } else { Value::Null },
                "detailsUrl": format!("https://ci.example/{}", c.name),
                "checkSuite": { "workflowRun": Value::Null },
            })
        })
        .collect();
    let head_owner = if p.fork { "someone-else" } else { owner };
    json!({
        "id": format!("PR_{}", p.number),
        "number": p.number,
        "title": format!("Pull request {}", p.number),
        "state": p.state,
        "isDraft": p.draft,
        "url": format!("https://github.example/{owner}/{repo}/pull/{}", p.number),
        "headRefName": p.head_ref,
        "headRefOid": p.head_oid,
        "baseRefName": p.base_ref,
        "isCrossRepository": p.fork,
        "headRepositoryOwner": { "id": "O_1", "login": head_owner },
        "headRepository": { "id": "R_1", "name": repo },
        "mergeable": p.mergeable,
        "mergeStateStatus": p.merge_state,
        "author": { "login": "someone" },
        "statusCheckRollup": { "nodes": [ { "commit": { "statusCheckRollup": { "contexts": { "nodes": contexts, "pageInfo": { "hasNextPage": false, "endCursor": "" } } } } } ] },
        "commits": { "nodes": [ { "commit": { "oid": p.head_oid, "statusCheckRollup": { "contexts": { "nodes": [] } } } } ], "totalCount": 1 },
    })
}

fn graphql(state: &mut State, body: &Value, owner: &str, repo: &str) -> Value {
    let query = body["query"].as_str().unwrap_or("");
    let vars = &body["variables"];
    if query.contains("__type(name:") {
        // gh asks which fields a pull request has (to know whether merge queues exist).
        let fields: Vec<Value> = [
            "id",
            "number",
            "state",
            "isDraft",
            "mergeable",
            "mergeStateStatus",
            "headRefOid",
            "headRefName",
            "baseRefName",
            "url",
        ]
        .iter()
        .map(|n| json!({ "name": n }))
        .collect();
        return json!({ "data": { "PullRequest": { "fields": fields } } });
    }
    if query.contains("mergePullRequest") {
        let input = &vars["input"];
        let id = input["pullRequestId"].as_str().unwrap_or("");
        let expected = input["expectedHeadOid"].as_str().map(str::to_string);
        let method = input["mergeMethod"].as_str().unwrap_or("").to_string();
        let pr = state
            .prs
            .iter_mut()
            .find(|p| format!("PR_{}", p.number) == id);
        let (merged, error) = match pr {
            None => (false, Some("Could not resolve to a node".to_string())),
            Some(p) if expected.as_deref() != Some(p.head_oid.as_str()) => (
                false,
                Some(format!(
                    "Head branch was modified. Review and try the merge again. (expected {:?}, head is {})",
                    expected, p.head_oid
                )),
            ),
            Some(p) if p.state != "OPEN" => (false, Some("Pull request is not open".into())),
            Some(p) => {
                p.state = "MERGED".into();
                (true, None)
            }
        };
        state.merges.push(json!({
            "pull_request": id.trim_start_matches("PR_").parse::<u64>().unwrap_or(0),
            "merge_method": method,
            "expected_head_oid": expected,
            "input": input,
            "merged": merged,
        }));
        return match error {
            Some(e) => {
                json!({ "data": { "mergePullRequest": null }, "errors": [ { "type": "UNPROCESSABLE", "message": e } ] })
            }
            None => {
                json!({ "data": { "mergePullRequest": { "clientMutationId": null } } })
            }
        };
    }
    if query.contains("pullRequests(") {
        let head = vars["headBranch"].as_str();
        let states: Vec<String> = vars["state"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let nodes: Vec<Value> = state
            .prs
            .iter()
            .filter(|p| head.is_none_or(|h| p.head_ref == h))
            .filter(|p| states.is_empty() || states.contains(&p.state))
            .map(|p| pr_json(p, owner, repo))
            .collect();
        return json!({ "data": { "repository": { "pullRequests": { "totalCount": nodes.len(), "nodes": nodes, "pageInfo": { "hasNextPage": false, "endCursor": "" } } } } });
    }
    if query.contains("pullRequest(number") {
        let n = vars["pr_number"].as_u64().unwrap_or(0);
        return match state.prs.iter().find(|p| p.number == n) {
            Some(p) => {
                json!({ "data": { "repository": { "pullRequest": pr_json(p, owner, repo) } } })
            }
            None => {
                json!({ "data": { "repository": { "pullRequest": null } }, "errors": [ { "type": "NOT_FOUND", "message": format!("Could not resolve to a PullRequest with the number of {n}.") } ] })
            }
        };
    }
    if query.contains("repository(") {
        return json!({ "data": { "repository": { "id": "R_1", "name": repo, "owner": { "login": owner }, "defaultBranchRef": { "name": "main" }, "viewerPermission": "WRITE", "mergeCommitAllowed": true, "squashMergeAllowed": true, "rebaseMergeAllowed": true } } });
    }
    let shown: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown: String = shown.chars().take(300).collect();
    json!({ "errors": [ { "message": format!("the fake GitHub does not know this query: {shown}") } ] })
}
