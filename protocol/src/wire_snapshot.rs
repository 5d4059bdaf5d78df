//! The UI protocol's JSON, pinned byte for byte: one value of every [`Request`] and every
//! [`Response`] variant, and the exact text each one is on the wire. The Rust types may be
//! reshaped (typed calls, replies of their own); what a client sees must not change.

use serde::de::DeserializeOwned;
use serde_json::json;

use super::agents::{AgentRemove, AgentRun, AgentSet, AgentShow, AgentTools};
use super::approvals::{Approvals, ApproveCard, Decide};
use super::audit::AuditList;
use super::auth::{
    McpSignIn, McpSignInCancel, McpSignInFinish, McpSignInMachine, McpSignOut, SignInStarted,
};
use super::board::{BoardLimit, CardRemove, CardShow, NoteShow, NoteWrite};
use super::lead::{
    AnswerStarted, Approve, ApproveAll, ChatNew, ChatSend, ChatShow, Discard, Inbox,
};
use super::mcp::{
    ImportCandidates, Imported, McpApprove, McpCall, McpInspect, McpRemove, McpRename, McpShow,
    McpTools,
};
use super::projects::{ProjectRemove, ProjectSet, ProjectShow};
use super::runs::{
    DaemonSet, Following, GetRun, ListRuns, RunList, RunsCursor, RunsPage, StopRun, Unfollow,
};
use super::ui::{Request, Response};
use super::usage::{UsageBy, UsageReport};
use bosun_shared::gateway::Capability;

const ID: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

/// A payload made from JSON: the views are not what this test is about, only the envelopes.
fn view<T: DeserializeOwned>(v: serde_json::Value) -> T {
    match serde_json::from_value(v) {
        Ok(t) => t,
        Err(e) => panic!("test payload does not decode: {e}"),
    }
}

fn run() -> serde_json::Value {
    json!({"id": ID, "short_id": "01arz3nd", "name": "n", "state": "running", "outcome": null,
        "exit": null, "program": "p", "args": ["a"], "cwd": "/w", "created_at": 1,
        "started_at": 2, "ended_at": null, "pid": 10, "pgid": 10, "time_cap_ms": null,
        "last_seq": 3, "stop_reason": null})
}

fn server() -> serde_json::Value {
    json!({"id": ID, "name": "s", "kind": "stdio", "command": "c", "args": [], "url": null,
        "env": [{"name": "K", "saved": true}], "headers": [], "created_at": 1, "updated_at": 2,
        "listed_at": null, "tool_count": null, "last_error": null})
}

fn signed_in_server() -> serde_json::Value {
    json!({"id": ID, "name": "s", "kind": "http", "command": null, "args": [],
        "url": "https://mcp.example.com/mcp", "env": [], "headers": [], "created_at": 1,
        "updated_at": 2, "listed_at": null, "tool_count": null, "last_error": null,
        "sign_in": {"state": "signed in", "why": null, "issuer": "https://as.example.com",
            "client_id": "cid", "registered": true, "scope": null, "expires_at": 3,
            "signed_in_at": 1, "refreshed_at": null, "wanted_scope": null, "dpop": true}})
}

fn agent() -> serde_json::Value {
    json!({"id": ID, "name": "a", "role": "worker", "cli": "claude", "instructions": "i",
        "permission_mode": null, "allowed_commands": [], "time_cap_ms": null, "cwd": "/w",
        "command": [], "env": [], "secret_env": [], "model": null, "codex_config": [],
        "switches": {"mcp": [], "web_search": false, "web_fetch": {"mode": "off"},
            "browser": false, "browser_insecure_certs": false, "skills": true},
        "approvals": {"mode": "skip", "verdicts": [["Bash(git *)", "allow"]], "wait_ms": 30000,
            "wait_for_person": false},
        "last_run": null, "warnings": [], "created_at": 1, "updated_at": 2})
}

fn approval() -> serde_json::Value {
    json!({"id": ID, "short_id": "01arz3nd", "run": ID, "agent": "a", "card": null,
        "tool": "Bash", "class": "runs commands", "why": "w", "preview": "$ ls",
        "input": {"command": "ls"}, "asked_at": 1, "deadline": 2, "attended": true,
        "state": "waiting", "decided_by": null, "decided_at": null, "message": null,
        "delivered_at": null})
}

fn card() -> serde_json::Value {
    json!({"id": ID, "short_id": "01arz3nd", "title": "t", "description": "", "acceptance": "",
        "assignee": null, "assignee_id": null, "column": "c", "column_id": ID, "hold": null,
        "run": null, "run_state": null, "runs": 0, "created_at": 1, "updated_at": 2,
        "activity": []})
}

fn project() -> serde_json::Value {
    json!({"id": ID, "name": "p", "folder": "/w", "main_branch": "main",
        "host": {"kind": "github", "repo": "o/n"}, "testing": true, "lead_may_merge": false,
        "cards": 0, "created_at": 1, "updated_at": 2})
}

fn chat() -> serde_json::Value {
    json!({"id": ID, "short_id": "01arz3nd", "agent": "lead", "created_at": 1,
        "answering": null, "waiting": 0, "messages": []})
}

fn pending() -> serde_json::Value {
    json!({"id": ID, "short_id": "01arz3nd", "chat": ID, "answer": ID, "tool": "t",
        "args": {}, "cause": "c", "at": 1, "state": "waiting", "line": "l", "preview": "p",
        "would_fail": null, "result": null})
}

/// One of every request, in the order of the enum. Long on purpose: a table of the wire, one
/// value per variant, kept whole so a missing one stands out.
fn requests() -> Vec<Request> {
    vec![
        Request::StartRun(view(
            json!({"name": null, "program": "p", "args": [], "cwd": "/w",
            "env": [["K", "V"]], "time_cap_ms": null, "ladder": null, "umask": 18}),
        )),
        Request::ListRuns(ListRuns {
            all: true,
            page: None,
        }),
        Request::GetRun(GetRun { run: "01a".into() }),
        Request::StopRun(StopRun { run: "01a".into() }),
        Request::FollowLog(view(
            json!({"run": "01a", "from_seq": 0, "follow": true, "stream": null}),
        )),
        Request::Unfollow(Unfollow { sub: 7 }),
        Request::SubscribeRuns,
        Request::DaemonStatus,
        Request::DaemonStop,
        Request::McpAdd(view(
            json!({"name": "s", "kind": "stdio", "command": "c", "args": [],
            "url": null, "env": [], "headers": []}),
        )),
        Request::McpEdit(view(
            json!({"server": "s", "command": null, "args": null, "url": null,
            "kind": null, "set_env": [], "remove_env": [], "set_headers": [],
            "remove_headers": []}),
        )),
        Request::McpRename(McpRename {
            server: "s".into(),
            new_name: "t".into(),
        }),
        Request::McpRemove(McpRemove { server: "s".into() }),
        Request::McpList,
        Request::McpShow(McpShow { server: "s".into() }),
        Request::McpTools(McpTools {
            server: "s".into(),
            cached: true,
        }),
        Request::McpInspect(McpInspect { server: "s".into() }),
        Request::McpCall(McpCall {
            server: "s".into(),
            tool: "t".into(),
            args: json!({"x": 1}),
        }),
        Request::McpImportScan(view(json!({"extra_files": ["/f"], "env": []}))),
        Request::McpImport(view(
            json!({"scan": {"extra_files": [], "env": []}, "all": true,
            "picks": [{"name": "s", "rename_to": null, "account": null}]}),
        )),
        Request::McpSignIn(McpSignIn {
            server: "s".into(),
            new_client: false,
        }),
        Request::McpSignIn(McpSignIn {
            server: "s".into(),
            new_client: true,
        }),
        Request::McpSignInFinish(McpSignInFinish { attempt: 3 }),
        Request::McpSignOut(McpSignOut { server: "s".into() }),
        Request::McpSignInMachine(McpSignInMachine {
            server: "s".into(),
            client_id: "c".into(),
            client_secret: None,
            private_key: None,
        }),
        Request::AgentAdd(view(json!({"name": "a", "role": null, "cli": "claude",
            "instructions": null, "permission_mode": null, "allowed_commands": [],
            "time_cap_ms": null, "cwd": "/w", "command": [], "env": [], "secret_env": []}))),
        Request::AgentEdit(view(json!({"agent": "a", "set_env": [], "remove_env": [],
            "set_secret_env": [], "remove_secret_env": []}))),
        Request::AgentSet(AgentSet {
            agent: "a".into(),
            settings: vec!["skills=on".into()],
        }),
        Request::AgentShow(AgentShow { agent: "a".into() }),
        Request::AgentList,
        Request::AgentRemove(AgentRemove { agent: "a".into() }),
        Request::AgentRun(AgentRun {
            agent: "a".into(),
            prompt: "p".into(),
            card: Some("c".into()),
        }),
        Request::AgentTools(AgentTools {
            agent: "a".into(),
            ask: false,
        }),
        Request::Board,
        Request::ColumnAdd(view(json!({"name": "c", "auto": true}))),
        Request::ColumnSet(view(json!({"column": "c", "auto": false}))),
        Request::CardAdd(view(json!({"title": "t"}))),
        Request::CardEdit(view(
            json!({"card": "c", "clear_hold": true, "budget_micro_usd": {"set": 5_000_000},
                "budget_tokens": "off"}),
        )),
        Request::CardShow(CardShow { card: "c".into() }),
        Request::BoardLimit(BoardLimit { limit: 4 }),
        Request::NoteList,
        Request::NoteShow(NoteShow { path: "a/b".into() }),
        Request::NoteWrite(NoteWrite {
            path: "a/b".into(),
            text: "x".into(),
            base_version: Some(2),
            force: false,
        }),
        Request::ChatNew(ChatNew { agent: None }),
        Request::ChatSend(ChatSend {
            chat: "c".into(),
            message: "m".into(),
            files: vec!["/f".into()],
        }),
        Request::ChatShow(ChatShow { chat: "c".into() }),
        Request::ChatList,
        Request::Inbox(Inbox {
            chat: Some("c".into()),
        }),
        Request::Approve(Approve { action: "x".into() }),
        Request::ApproveAll(ApproveAll { chat: "c".into() }),
        Request::Discard(Discard { action: "x".into() }),
        Request::Approvals(Approvals {
            run: Some("r".into()),
            all: true,
        }),
        Request::Decide(Decide {
            approval: "a".into(),
            allow: false,
            always: false,
            block: true,
            message: Some("m".into()),
            answer: None,
        }),
        Request::ApproveCard(ApproveCard { card: "c".into() }),
        Request::ProjectAdd(view(json!({"name": "p", "folder": "/w"}))),
        Request::ProjectEdit(view(
            json!({"project": "p", "github": "o/n", "daily_budget_micro_usd": {"set": 20_000_000}}),
        )),
        Request::ProjectSet(ProjectSet {
            project: "p".into(),
            settings: vec!["lead-may-merge=on".into()],
        }),
        Request::ProjectShow(ProjectShow {
            project: "p".into(),
        }),
        Request::ProjectList,
        Request::ProjectRemove(ProjectRemove {
            project: "p".into(),
        }),
        Request::CardRemove(CardRemove {
            card: "c".into(),
            force: false,
        }),
        Request::McpSignInCancel(McpSignInCancel { attempt: 3 }),
        Request::DaemonSet(DaemonSet {
            settings: vec!["notify=off".into()],
        }),
        Request::Usage(UsageReport {
            by: UsageBy::Model,
            since_ms: Some(604_800_000),
        }),
        Request::Audit(AuditList {
            since_ms: Some(86_400_000),
            verify: true,
        }),
        Request::McpApprove(McpApprove {
            server: "s".into(),
            tools: vec!["t".into()],
            all_tools: false,
            capabilities: vec![Capability::Resources],
        }),
        Request::DaemonCompact,
    ]
}

/// One of every response, in the order of the enum. Long on purpose: a table, as above.
fn responses() -> Vec<Response> {
    vec![
        Response::Run(view(run())),
        // A finished run whose log was pruned: `log_pruned` shows only then.
        Response::Run(view(
            json!({"id": ID, "short_id": "01arz3nd", "name": null, "state": "exited",
            "outcome": "succeeded", "exit": null, "program": "p", "args": [], "cwd": "/w",
            "created_at": 1, "started_at": 2, "ended_at": 3, "pid": null, "pgid": null,
            "time_cap_ms": null, "last_seq": 3, "stop_reason": null,
            "log_pruned": {"at": 4, "why": "retention", "bytes": 4096}}),
        )),
        Response::Runs(RunList::default()),
        Response::Following(Following {
            sub: 7,
            run: view(run()),
            log_file: None,
        }),
        Response::Done,
        Response::Status(view(
            json!({"pid": 1, "version": "0.1.0", "protocol_version": 1,
            "state_dir": "/s", "started_at": 1, "live_runs": 2, "attached_runners": 1,
            "shutting_down": false}),
        )),
        // The bosund that upgraded the store says so (`upgrade` shows only then).
        Response::Status(view(
            json!({"pid": 1, "version": "0.1.0", "protocol_version": 1,
            "state_dir": "/s", "started_at": 1, "live_runs": 0, "attached_runners": 0,
            "shutting_down": false, "upgrade": "the store was upgraded from schema 1 to 2"}),
        )),
        // With its desktop notifications (`problem` shows only when the last was not shown).
        Response::Status(view(
            json!({"pid": 1, "version": "0.1.0", "protocol_version": 1,
            "state_dir": "/s", "started_at": 1, "live_runs": 0, "attached_runners": 0,
            "shutting_down": false,
            "notify": {"on": true, "shown": 4, "problem": "no desktop notification service answered"}}),
        )),
        // With its retention, the bound on the logs, the last round of pruning and compaction.
        Response::Status(view(
            json!({"pid": 1, "version": "0.1.0", "protocol_version": 1,
            "state_dir": "/s", "started_at": 1, "live_runs": 0, "attached_runners": 0,
            "shutting_down": false, "retention_ms": 2_592_000_000u64,
            "last_prune": {"ended_at": 5, "took_ms": 6, "approvals": 7, "runs": 8, "logs": 9,
                "log_bytes": 10},
            "logs_max": 21_474_836_480u64, "store_bytes": 4096,
            "last_compact": {"ended_at": 5, "took_ms": 6, "before": 8192, "after": 4096}}),
        )),
        Response::Server(view(server())),
        Response::Servers {
            servers: vec![view(server())],
        },
        // A server signed in with DPoP-bound tokens: `sign_in.dpop` shows only when true.
        Response::Server(view(signed_in_server())),
        Response::Tools(view(
            json!({"server": "s", "listed_at": 1, "tools": [], "pages": 1,
            "truncated": null}),
        )),
        Response::Inspect(view(
            json!({"server": "s", "protocol_version": "2025-06-18",
            "server_name": null, "server_version": null, "capabilities": {}, "tools": 0,
            "prompts": null, "resources": null, "instructions": null, "connect_ms": 1,
            "list_ms": 2, "total_ms": 3}),
        )),
        Response::Call(view(
            json!({"is_error": false, "content": [], "structured": null}),
        )),
        Response::ImportCandidates(ImportCandidates {
            candidates: vec![],
            problems: vec!["p".into()],
        }),
        Response::Imported(Imported { servers: vec![] }),
        Response::SignInStarted(SignInStarted {
            attempt: 3,
            url: "http://x".into(),
            wait_secs: 600,
            reused_registration: false,
            warning: None,
        }),
        Response::SignInStarted(SignInStarted {
            attempt: 4,
            url: "http://x".into(),
            wait_secs: 600,
            reused_registration: true,
            warning: None,
        }),
        Response::Agent(view(agent())),
        // An agent whose permission mode an upgrade carried over (`carried_over` shows only then).
        Response::Agent(view({
            let mut a = agent();
            a["carried_over"] = json!(
                "carried over from its permission mode acceptEdits when bosun was upgraded: Write = allow"
            );
            a
        })),
        Response::Agents { agents: vec![] },
        Response::Board(view(json!({"columns": [], "cards": [card()], "limit": 4,
            "running": 0}))),
        Response::Column(view(
            json!({"id": ID, "name": "c", "auto": true, "position": 0}),
        )),
        Response::Card(view(card())),
        Response::Notes { notes: vec![] },
        Response::Note(view(
            json!({"path": "a", "text": "t", "version": 1, "updated_at": 1}),
        )),
        Response::Chat(view(chat())),
        Response::Chats { chats: vec![] },
        Response::AnswerStarted(AnswerStarted {
            chat: view(chat()),
            run: view(run()),
        }),
        Response::Pending {
            actions: vec![view(pending())],
        },
        Response::BuiltinTools(view(json!({"agent": "a", "cli": "claude", "source": "s",
            "tools": []}))),
        Response::Approvals {
            approvals: vec![view(approval())],
        },
        Response::Approval(view(approval())),
        Response::Project(view({
            let mut p = project();
            p["daily_budget"] = json!({"caps": {"micro_usd": 20_000_000},
                "more": {"tokens": 5}, "spent_micro_usd": 7, "spent_tokens": 9});
            p
        })),
        Response::Projects {
            projects: vec![view(project())],
        },
        Response::Usage(view(json!({
            "by": "agent", "since": 5,
            "rows": [{"key": "coder", "runs": 2, "input": 10, "output": 5, "cache_read": 1,
                      "cache_write": 0, "micro_usd": 1500, "unpriced": 1, "tool_calls": 3}],
            "total": {"key": "total", "runs": 2, "input": 10, "output": 5, "cache_read": 1,
                      "cache_write": 0, "micro_usd": 1500, "unpriced": 1, "tool_calls": 3}
        }))),
        Response::Audit(view(json!({
            "entries": [{"n": 1, "at": 5, "who": "cli", "what": "agent set a x=on",
                "after": {"x": true}, "prev": "genesis", "hash": "ab"}],
            "check": {"state": "intact", "entries": 1}
        }))),
    ]
}

const REQUESTS: &[&str] = &[
    r#"{"method":"start_run","params":{"name":null,"program":"p","args":[],"cwd":"/w","env":[["K","V"]],"time_cap_ms":null,"ladder":null,"umask":18}}"#,
    r#"{"method":"list_runs","params":{"all":true}}"#,
    r#"{"method":"get_run","params":{"run":"01a"}}"#,
    r#"{"method":"stop_run","params":{"run":"01a"}}"#,
    r#"{"method":"follow_log","params":{"run":"01a","from_seq":0,"follow":true,"stream":null}}"#,
    r#"{"method":"unfollow","params":{"sub":7}}"#,
    r#"{"method":"subscribe_runs"}"#,
    r#"{"method":"daemon_status"}"#,
    r#"{"method":"daemon_stop"}"#,
    r#"{"method":"mcp_add","params":{"name":"s","kind":"stdio","command":"c","args":[],"url":null,"allow_http":false,"env":[],"headers":[],"client_id":null,"client_secret":null,"callback_port":null,"sign_in_by":null}}"#,
    r#"{"method":"mcp_edit","params":{"server":"s","command":null,"args":null,"url":null,"allow_http":null,"kind":null,"set_env":[],"remove_env":[],"set_headers":[],"remove_headers":[],"browser_version":null,"browser_program":null,"client_id":null,"client_secret":null,"callback_port":null,"sign_in_by":null}}"#,
    r#"{"method":"mcp_rename","params":{"server":"s","new_name":"t"}}"#,
    r#"{"method":"mcp_remove","params":{"server":"s"}}"#,
    r#"{"method":"mcp_list"}"#,
    r#"{"method":"mcp_show","params":{"server":"s"}}"#,
    r#"{"method":"mcp_tools","params":{"server":"s","cached":true}}"#,
    r#"{"method":"mcp_inspect","params":{"server":"s"}}"#,
    r#"{"method":"mcp_call","params":{"server":"s","tool":"t","args":{"x":1}}}"#,
    r#"{"method":"mcp_import_scan","params":{"extra_files":["/f"],"env":[]}}"#,
    r#"{"method":"mcp_import","params":{"scan":{"extra_files":[],"env":[]},"all":true,"picks":[{"name":"s","rename_to":null,"account":null}]}}"#,
    r#"{"method":"mcp_sign_in","params":{"server":"s"}}"#,
    r#"{"method":"mcp_sign_in","params":{"server":"s","new_client":true}}"#,
    r#"{"method":"mcp_sign_in_finish","params":{"attempt":3}}"#,
    r#"{"method":"mcp_sign_out","params":{"server":"s"}}"#,
    r#"{"method":"mcp_sign_in_machine","params":{"server":"s","client_id":"c"}}"#,
    r#"{"method":"agent_add","params":{"name":"a","role":null,"cli":"claude","instructions":null,"permission_mode":null,"allowed_commands":[],"time_cap_ms":null,"cwd":"/w","command":[],"env":[],"secret_env":[],"model":null,"codex_config":[]}}"#,
    r#"{"method":"agent_edit","params":{"agent":"a","name":null,"role":null,"cli":null,"instructions":null,"permission_mode":null,"allowed_commands":null,"time_cap_ms":null,"cwd":null,"command":null,"set_env":[],"remove_env":[],"set_secret_env":[],"remove_secret_env":[],"model":null,"codex_config":null,"paused":null}}"#,
    r#"{"method":"agent_set","params":{"agent":"a","settings":["skills=on"]}}"#,
    r#"{"method":"agent_show","params":{"agent":"a"}}"#,
    r#"{"method":"agent_list"}"#,
    r#"{"method":"agent_remove","params":{"agent":"a"}}"#,
    r#"{"method":"agent_run","params":{"agent":"a","prompt":"p","card":"c"}}"#,
    r#"{"method":"agent_tools","params":{"agent":"a","ask":false}}"#,
    r#"{"method":"board"}"#,
    r#"{"method":"column_add","params":{"name":"c","auto":true,"position":null}}"#,
    r#"{"method":"column_set","params":{"column":"c","name":null,"auto":false,"position":null}}"#,
    r#"{"method":"card_add","params":{"title":"t","description":"","acceptance":"","assignee":null,"column":null}}"#,
    r#"{"method":"card_edit","params":{"card":"c","title":null,"description":null,"acceptance":null,"assignee":null,"column":null,"hold":null,"clear_hold":true,"comment":null,"budget_micro_usd":{"set":5000000},"budget_tokens":"off"}}"#,
    r#"{"method":"card_show","params":{"card":"c"}}"#,
    r#"{"method":"board_limit","params":{"limit":4}}"#,
    r#"{"method":"note_list"}"#,
    r#"{"method":"note_show","params":{"path":"a/b"}}"#,
    r#"{"method":"note_write","params":{"path":"a/b","text":"x","base_version":2,"force":false}}"#,
    r#"{"method":"chat_new","params":{"agent":null}}"#,
    r#"{"method":"chat_send","params":{"chat":"c","message":"m","files":["/f"]}}"#,
    r#"{"method":"chat_show","params":{"chat":"c"}}"#,
    r#"{"method":"chat_list"}"#,
    r#"{"method":"inbox","params":{"chat":"c"}}"#,
    r#"{"method":"approve","params":{"action":"x"}}"#,
    r#"{"method":"approve_all","params":{"chat":"c"}}"#,
    r#"{"method":"discard","params":{"action":"x"}}"#,
    r#"{"method":"approvals","params":{"run":"r","all":true}}"#,
    r#"{"method":"decide","params":{"approval":"a","allow":false,"block":true,"message":"m"}}"#,
    r#"{"method":"approve_card","params":{"card":"c"}}"#,
    r#"{"method":"project_add","params":{"name":"p","folder":"/w","main_branch":null,"github":null,"testing":null}}"#,
    r#"{"method":"project_edit","params":{"project":"p","name":null,"folder":null,"main_branch":null,"github":"o/n","daily_budget_micro_usd":{"set":20000000}}}"#,
    r#"{"method":"project_set","params":{"project":"p","settings":["lead-may-merge=on"]}}"#,
    r#"{"method":"project_show","params":{"project":"p"}}"#,
    r#"{"method":"project_list"}"#,
    r#"{"method":"project_remove","params":{"project":"p"}}"#,
    r#"{"method":"card_remove","params":{"card":"c","force":false}}"#,
    r#"{"method":"mcp_sign_in_cancel","params":{"attempt":3}}"#,
    r#"{"method":"daemon_set","params":{"settings":["notify=off"]}}"#,
    r#"{"method":"usage","params":{"by":"model","since_ms":604800000}}"#,
    r#"{"method":"audit","params":{"since_ms":86400000,"verify":true}}"#,
    r#"{"method":"mcp_approve","params":{"server":"s","tools":["t"],"all_tools":false,"capabilities":["resources"]}}"#,
    r#"{"method":"daemon_compact"}"#,
];

const RESPONSES: &[&str] = &[
    r#"{"answer":"run","id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","name":"n","state":"running","outcome":null,"exit":null,"program":"p","args":["a"],"cwd":"/w","created_at":1,"started_at":2,"ended_at":null,"pid":10,"pgid":10,"time_cap_ms":null,"last_seq":3,"stop_reason":null,"agent":null}"#,
    r#"{"answer":"run","id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","name":null,"state":"exited","outcome":"succeeded","exit":null,"program":"p","args":[],"cwd":"/w","created_at":1,"started_at":2,"ended_at":3,"pid":null,"pgid":null,"time_cap_ms":null,"last_seq":3,"stop_reason":null,"agent":null,"log_pruned":{"at":4,"why":"retention","bytes":4096}}"#,
    r#"{"answer":"runs","runs":[]}"#,
    r#"{"answer":"following","sub":7,"run":{"id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","name":"n","state":"running","outcome":null,"exit":null,"program":"p","args":["a"],"cwd":"/w","created_at":1,"started_at":2,"ended_at":null,"pid":10,"pgid":10,"time_cap_ms":null,"last_seq":3,"stop_reason":null,"agent":null}}"#,
    r#"{"answer":"done"}"#,
    r#"{"answer":"status","pid":1,"version":"0.1.0","protocol_version":1,"state_dir":"/s","started_at":1,"live_runs":2,"attached_runners":1,"shutting_down":false}"#,
    r#"{"answer":"status","pid":1,"version":"0.1.0","protocol_version":1,"state_dir":"/s","started_at":1,"live_runs":0,"attached_runners":0,"shutting_down":false,"upgrade":"the store was upgraded from schema 1 to 2"}"#,
    r#"{"answer":"status","pid":1,"version":"0.1.0","protocol_version":1,"state_dir":"/s","started_at":1,"live_runs":0,"attached_runners":0,"shutting_down":false,"notify":{"on":true,"shown":4,"problem":"no desktop notification service answered"}}"#,
    r#"{"answer":"status","pid":1,"version":"0.1.0","protocol_version":1,"state_dir":"/s","started_at":1,"live_runs":0,"attached_runners":0,"shutting_down":false,"retention_ms":2592000000,"last_prune":{"ended_at":5,"took_ms":6,"approvals":7,"runs":8,"logs":9,"log_bytes":10},"logs_max":21474836480,"store_bytes":4096,"last_compact":{"ended_at":5,"took_ms":6,"before":8192,"after":4096}}"#,
    r#"{"answer":"server","id":"01arz3ndektsv4rrffq69g5fav","name":"s","kind":"stdio","command":"c","args":[],"url":null,"allow_http":false,"env":[{"name":"K","saved":true}],"headers":[],"created_at":1,"updated_at":2,"listed_at":null,"tool_count":null,"last_error":null,"builtin":false,"browser":null,"sign_in_by":"bosun","client_id":null,"callback_port":null,"sign_in":null,"rules":{"trusted":false,"deadline_ms":60000,"max_result_chars":8192,"capabilities":["tools","prompts"]}}"#,
    r#"{"answer":"servers","servers":[{"id":"01arz3ndektsv4rrffq69g5fav","name":"s","kind":"stdio","command":"c","args":[],"url":null,"allow_http":false,"env":[{"name":"K","saved":true}],"headers":[],"created_at":1,"updated_at":2,"listed_at":null,"tool_count":null,"last_error":null,"builtin":false,"browser":null,"sign_in_by":"bosun","client_id":null,"callback_port":null,"sign_in":null,"rules":{"trusted":false,"deadline_ms":60000,"max_result_chars":8192,"capabilities":["tools","prompts"]}}]}"#,
    r#"{"answer":"server","id":"01arz3ndektsv4rrffq69g5fav","name":"s","kind":"http","command":null,"args":[],"url":"https://mcp.example.com/mcp","allow_http":false,"env":[],"headers":[],"created_at":1,"updated_at":2,"listed_at":null,"tool_count":null,"last_error":null,"builtin":false,"browser":null,"sign_in_by":"bosun","client_id":null,"callback_port":null,"sign_in":{"state":"signed in","why":null,"issuer":"https://as.example.com","client_id":"cid","registered":true,"scope":null,"expires_at":3,"signed_in_at":1,"refreshed_at":null,"wanted_scope":null,"dpop":true},"rules":{"trusted":false,"deadline_ms":60000,"max_result_chars":8192,"capabilities":["tools","prompts"]}}"#,
    r#"{"answer":"tools","server":"s","listed_at":1,"tools":[],"pages":1,"truncated":null}"#,
    r#"{"answer":"inspect","server":"s","protocol_version":"2025-06-18","server_name":null,"server_version":null,"capabilities":{},"tools":0,"prompts":null,"resources":null,"instructions":null,"connect_ms":1,"list_ms":2,"total_ms":3,"approved_capabilities":[]}"#,
    r#"{"answer":"call","is_error":false,"content":[],"structured":null}"#,
    r#"{"answer":"import_candidates","candidates":[],"problems":["p"]}"#,
    r#"{"answer":"imported","servers":[]}"#,
    r#"{"answer":"sign_in_started","attempt":3,"url":"http://x","wait_secs":600}"#,
    r#"{"answer":"sign_in_started","attempt":4,"url":"http://x","wait_secs":600,"reused_registration":true}"#,
    r#"{"answer":"agent","id":"01arz3ndektsv4rrffq69g5fav","name":"a","role":"worker","cli":"claude","instructions":"i","permission_mode":null,"allowed_commands":[],"time_cap_ms":null,"cwd":"/w","command":[],"env":[],"secret_env":[],"model":null,"codex_config":[],"switches":{"mcp":[],"web_search":false,"web_fetch":{"mode":"off"},"browser":false,"browser_insecure_certs":false,"skills":true},"approvals":{"mode":"skip","verdicts":[["Bash(git *)","allow"]],"wait_ms":30000,"wait_for_person":false},"workspace":{"roots":[],"unrestricted":false},"last_run":null,"warnings":[],"paused":false,"created_at":1,"updated_at":2}"#,
    r#"{"answer":"agent","id":"01arz3ndektsv4rrffq69g5fav","name":"a","role":"worker","cli":"claude","instructions":"i","permission_mode":null,"allowed_commands":[],"time_cap_ms":null,"cwd":"/w","command":[],"env":[],"secret_env":[],"model":null,"codex_config":[],"switches":{"mcp":[],"web_search":false,"web_fetch":{"mode":"off"},"browser":false,"browser_insecure_certs":false,"skills":true},"approvals":{"mode":"skip","verdicts":[["Bash(git *)","allow"]],"wait_ms":30000,"wait_for_person":false},"workspace":{"roots":[],"unrestricted":false},"last_run":null,"warnings":[],"carried_over":"carried over from its permission mode acceptEdits when bosun was upgraded: Write = allow","paused":false,"created_at":1,"updated_at":2}"#,
    r#"{"answer":"agents","agents":[]}"#,
    r#"{"answer":"board","columns":[],"cards":[{"id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","title":"t","description":"","acceptance":"","assignee":null,"assignee_id":null,"column":"c","column_id":"01arz3ndektsv4rrffq69g5fav","hold":null,"run":null,"run_state":null,"runs":0,"created_at":1,"updated_at":2,"activity":[]}],"limit":4,"running":0}"#,
    r#"{"answer":"column","id":"01arz3ndektsv4rrffq69g5fav","name":"c","auto":true,"position":0}"#,
    r#"{"answer":"card","id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","title":"t","description":"","acceptance":"","assignee":null,"assignee_id":null,"column":"c","column_id":"01arz3ndektsv4rrffq69g5fav","hold":null,"run":null,"run_state":null,"runs":0,"created_at":1,"updated_at":2,"activity":[]}"#,
    r#"{"answer":"notes","notes":[]}"#,
    r#"{"answer":"note","path":"a","text":"t","version":1,"updated_at":1}"#,
    r#"{"answer":"chat","id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","agent":"lead","created_at":1,"answering":null,"waiting":0,"messages":[]}"#,
    r#"{"answer":"chats","chats":[]}"#,
    r#"{"answer":"answer_started","chat":{"id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","agent":"lead","created_at":1,"answering":null,"waiting":0,"messages":[]},"run":{"id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","name":"n","state":"running","outcome":null,"exit":null,"program":"p","args":["a"],"cwd":"/w","created_at":1,"started_at":2,"ended_at":null,"pid":10,"pgid":10,"time_cap_ms":null,"last_seq":3,"stop_reason":null,"agent":null}}"#,
    r#"{"answer":"pending","actions":[{"id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","chat":"01arz3ndektsv4rrffq69g5fav","answer":"01arz3ndektsv4rrffq69g5fav","tool":"t","args":{},"cause":"c","at":1,"state":"waiting","line":"l","preview":"p","would_fail":null,"result":null}]}"#,
    r#"{"answer":"builtin_tools","agent":"a","cli":"claude","source":"s","tools":[]}"#,
    r#"{"answer":"approvals","approvals":[{"id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","run":"01arz3ndektsv4rrffq69g5fav","agent":"a","card":null,"tool":"Bash","class":"runs commands","why":"w","preview":"$ ls","input":{"command":"ls"},"asked_at":1,"deadline":2,"attended":true,"state":"waiting","decided_by":null,"decided_at":null,"message":null,"delivered_at":null}]}"#,
    r#"{"answer":"approval","id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","run":"01arz3ndektsv4rrffq69g5fav","agent":"a","card":null,"tool":"Bash","class":"runs commands","why":"w","preview":"$ ls","input":{"command":"ls"},"asked_at":1,"deadline":2,"attended":true,"state":"waiting","decided_by":null,"decided_at":null,"message":null,"delivered_at":null}"#,
    r#"{"answer":"project","id":"01arz3ndektsv4rrffq69g5fav","name":"p","folder":"/w","main_branch":"main","host":{"kind":"github","repo":"o/n"},"testing":true,"lead_may_merge":false,"cards":0,"created_at":1,"updated_at":2,"daily_budget":{"caps":{"micro_usd":20000000},"more":{"tokens":5},"spent_micro_usd":7,"spent_tokens":9}}"#,
    r#"{"answer":"projects","projects":[{"id":"01arz3ndektsv4rrffq69g5fav","name":"p","folder":"/w","main_branch":"main","host":{"kind":"github","repo":"o/n"},"testing":true,"lead_may_merge":false,"cards":0,"created_at":1,"updated_at":2}]}"#,
    r#"{"answer":"usage","by":"agent","since":5,"rows":[{"key":"coder","runs":2,"input":10,"output":5,"cache_read":1,"cache_write":0,"micro_usd":1500,"unpriced":1,"tool_calls":3}],"total":{"key":"total","runs":2,"input":10,"output":5,"cache_read":1,"cache_write":0,"micro_usd":1500,"unpriced":1,"tool_calls":3}}"#,
    r#"{"answer":"audit","entries":[{"n":1,"at":5,"who":"cli","what":"agent set a x=on","after":{"x":true},"prev":"genesis","hash":"ab"}],"check":{"state":"intact","entries":1}}"#,
];

/// Each value is exactly its pinned text, and the text reads back as the same value.
fn check<T: serde::Serialize + DeserializeOwned>(values: Vec<T>, pinned: &[&str]) {
    let got: Vec<String> = values
        .iter()
        .map(|v| serde_json::to_string(v).unwrap_or_default())
        .collect();
    if got.len() != pinned.len() {
        for g in &got {
            println!("{g:?},");
        }
    }
    assert_eq!(got.len(), pinned.len(), "one pinned text per variant");
    for (g, p) in got.iter().zip(pinned) {
        assert_eq!(g, p);
        let back: T = view(serde_json::from_str(p).unwrap_or_default());
        assert_eq!(serde_json::to_string(&back).unwrap_or_default(), *p);
    }
}

#[test]
fn every_request_is_pinned() {
    check(requests(), REQUESTS);
}

#[test]
fn every_response_is_pinned() {
    check(responses(), RESPONSES);
}

/// What the daemon reads from a client that leaves things out or adds some: each input and
/// what it reads as (or the error it is refused with).
const LENIENT: &[(&str, &str)] = &[
    (r#"{"method":"mcp_list"}"#, r#"{"method":"mcp_list"}"#),
    (
        r#"{"method":"mcp_list","params":null}"#,
        r#"{"method":"mcp_list"}"#,
    ),
    (
        r#"{"method":"chat_new","params":{}}"#,
        r#"{"method":"chat_new","params":{"agent":null}}"#,
    ),
    (
        r#"{"method":"chat_new"}"#,
        r#"error: missing field `params` at line 1 column 21"#,
    ),
    (
        r#"{"method":"inbox","params":{}}"#,
        r#"{"method":"inbox","params":{"chat":null}}"#,
    ),
    (
        r#"{"method":"note_write","params":{"path":"a","text":"t"}}"#,
        r#"{"method":"note_write","params":{"path":"a","text":"t","base_version":null,"force":false}}"#,
    ),
    (
        r#"{"method":"chat_send","params":{"chat":"c","message":"m"}}"#,
        r#"{"method":"chat_send","params":{"chat":"c","message":"m","files":[]}}"#,
    ),
    (
        r#"{"method":"list_runs","params":{"all":true,"extra":1}}"#,
        r#"{"method":"list_runs","params":{"all":true}}"#,
    ),
    (
        r#"{"params":{"all":false},"method":"list_runs"}"#,
        r#"{"method":"list_runs","params":{"all":false}}"#,
    ),
    (
        r#"{"method":"list_runs","params":{}}"#,
        r#"error: missing field `all` at line 1 column 33"#,
    ),
    (
        r#"{"method":"list_runs"}"#,
        r#"error: missing field `params` at line 1 column 22"#,
    ),
    (
        r#"{"method":"no_such_thing"}"#,
        r#"error: unknown variant `no_such_thing`, expected one of `start_run`, `list_runs`, `get_run`, `stop_run`, `follow_log`, `unfollow`, `subscribe_runs`, `daemon_status`, `daemon_stop`, `mcp_add`, `mcp_edit`, `mcp_rename`, `mcp_remove`, `mcp_list`, `mcp_show`, `mcp_tools`, `mcp_inspect`, `mcp_call`, `mcp_import_scan`, `mcp_import`, `mcp_sign_in`, `mcp_sign_in_finish`, `mcp_sign_out`, `mcp_sign_in_machine`, `agent_add`, `agent_edit`, `agent_set`, `agent_show`, `agent_list`, `agent_remove`, `agent_run`, `agent_tools`, `board`, `column_add`, `column_set`, `card_add`, `card_edit`, `card_show`, `board_limit`, `note_list`, `note_show`, `note_write`, `chat_new`, `chat_send`, `chat_show`, `chat_list`, `inbox`, `approve`, `approve_all`, `discard`, `approvals`, `decide`, `approve_card`, `project_add`, `project_edit`, `project_set`, `project_show`, `project_list`, `project_remove`, `card_remove`, `mcp_sign_in_cancel`, `daemon_set`, `usage`, `mcp_approve`, `daemon_compact`, `audit` at line 1 column 25"#,
    ),
    (
        r#"{"method":"get_run","params":{"run":7}}"#,
        r#"error: invalid type: integer `7`, expected a string at line 1 column 37"#,
    ),
];

const LENIENT_INPUTS: &[&str] = &[
    r#"{"method":"mcp_list"}"#,
    r#"{"method":"mcp_list","params":null}"#,
    r#"{"method":"chat_new","params":{}}"#,
    r#"{"method":"chat_new"}"#,
    r#"{"method":"inbox","params":{}}"#,
    r#"{"method":"note_write","params":{"path":"a","text":"t"}}"#,
    r#"{"method":"chat_send","params":{"chat":"c","message":"m"}}"#,
    r#"{"method":"list_runs","params":{"all":true,"extra":1}}"#,
    r#"{"params":{"all":false},"method":"list_runs"}"#,
    r#"{"method":"list_runs","params":{}}"#,
    r#"{"method":"list_runs"}"#,
    r#"{"method":"no_such_thing"}"#,
    r#"{"method":"get_run","params":{"run":7}}"#,
];

#[test]
fn lenient_inputs_read_as_before() {
    let got: Vec<(String, String)> = LENIENT_INPUTS
        .iter()
        .map(|i| {
            let out = match serde_json::from_str::<Request>(i) {
                Ok(r) => serde_json::to_string(&r).unwrap_or_default(),
                Err(e) => format!("error: {e}"),
            };
            (i.to_string(), out)
        })
        .collect();
    if got.len() != LENIENT.len() {
        for g in &got {
            println!("LENIENT {g:?},");
        }
    }
    assert_eq!(got.len(), LENIENT.len());
    for ((i, out), (pi, pout)) in got.iter().zip(LENIENT) {
        assert_eq!((i.as_str(), out.as_str()), (*pi, *pout));
    }
}

/// The storage's fault and its end, as attached UIs get them.
const STORAGE_EVENTS: &[&str] = &[
    r#"{"event":"storage_fault","message":"the state directory's disk is full","since":1}"#,
    r#"{"event":"storage_recovered","fault":"the state directory's disk is full","since":1,"at":2}"#,
];

#[test]
fn the_storage_events_are_pinned() {
    use super::ui::Event;
    use bosun_shared::Timestamp;
    let events = vec![
        Event::StorageFault {
            message: "the state directory's disk is full".into(),
            since: Timestamp::from_millis(1),
        },
        Event::StorageRecovered {
            fault: "the state directory's disk is full".into(),
            since: Timestamp::from_millis(1),
            at: Timestamp::from_millis(2),
        },
    ];
    check(events, STORAGE_EVENTS);
}

/// A direct log subscription: asked for, answered with the file, told how far it goes.
const DIRECT_FOLLOW: &[&str] = &[r#"{"event":"log_progress","sub":7,"upto":9}"#];

#[test]
fn a_direct_log_subscription_is_pinned() {
    use super::runs::Following;
    use super::ui::{Event, FollowParams};
    check(vec![Event::LogProgress { sub: 7, upto: 9 }], DIRECT_FOLLOW);
    let asked = FollowParams {
        run: "r".into(),
        from_seq: 1,
        follow: true,
        stream: None,
        direct: true,
    };
    assert_eq!(
        serde_json::to_string(&asked).ok().as_deref(),
        Some(r#"{"run":"r","from_seq":1,"follow":true,"stream":null,"direct":true}"#)
    );
    let answered: Following = serde_json::from_value(serde_json::json!({
        "sub": 7, "run": run(), "log_file": "/s/runs/r/log"
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        answered.log_file.as_deref(),
        Some(std::path::Path::new("/s/runs/r/log"))
    );
}

/// The notifications attached UIs get.
const NOTIFICATION_EVENTS: &[&str] = &[
    r#"{"event":"notification","kind":"merged","text":"The lead merged pull request #1 of card abcdefgh (Fix the login page).","card":"0aaaaaaaaaaaaaaaaaaaaaaaaa","at":1}"#,
    r#"{"event":"notification","kind":"needs_you","text":"Card abcdefgh needs you: checks failed.","card":"0aaaaaaaaaaaaaaaaaaaaaaaaa","chat":"0bbbbbbbbbbbbbbbbbbbbbbbbb","at":2}"#,
];

#[test]
fn the_notification_events_are_pinned() {
    use super::ui::{Event, NotificationKind};
    use bosun_shared::{CardId, ChatId, Timestamp};
    let (card, chat): (CardId, ChatId) = (
        "0aaaaaaaaaaaaaaaaaaaaaaaaa".parse().unwrap_or_default(),
        "0bbbbbbbbbbbbbbbbbbbbbbbbb".parse().unwrap_or_default(),
    );
    let events = vec![
        Event::Notification {
            kind: NotificationKind::Merged,
            text: "The lead merged pull request #1 of card abcdefgh (Fix the login page).".into(),
            card: Some(card),
            chat: None,
            at: Timestamp::from_millis(1),
        },
        Event::Notification {
            kind: NotificationKind::NeedsYou,
            text: "Card abcdefgh needs you: checks failed.".into(),
            card: Some(card),
            chat: Some(chat),
            at: Timestamp::from_millis(2),
        },
    ];
    check(events, NOTIFICATION_EVENTS);
}

/// A page of runs: the request's `page` and the answer's `next` are left out when absent, so a
/// client or daemon from before pages reads and writes exactly what it did (pinned above).
#[test]
fn a_page_of_runs_is_pinned() {
    let cursor = RunsCursor {
        created_at: view(json!(5)),
        run: view(json!(ID)),
    };
    check(
        vec![
            Request::ListRuns(ListRuns::first_page(true)),
            Request::ListRuns(ListRuns {
                all: false,
                page: Some(RunsPage {
                    after: Some(cursor),
                }),
            }),
        ],
        &[
            r#"{"method":"list_runs","params":{"all":true,"page":{}}}"#,
            r#"{"method":"list_runs","params":{"all":false,"page":{"after":{"created_at":5,"run":"01arz3ndektsv4rrffq69g5fav"}}}}"#,
        ],
    );
    check(
        vec![Response::Runs(RunList {
            runs: vec![view(run())],
            next: Some(cursor),
        })],
        &[
            r#"{"answer":"runs","runs":[{"id":"01arz3ndektsv4rrffq69g5fav","short_id":"01arz3nd","name":"n","state":"running","outcome":null,"exit":null,"program":"p","args":["a"],"cwd":"/w","created_at":1,"started_at":2,"ended_at":null,"pid":10,"pgid":10,"time_cap_ms":null,"last_seq":3,"stop_reason":null,"agent":null}],"next":{"created_at":5,"run":"01arz3ndektsv4rrffq69g5fav"}}"#,
        ],
    );
}
