//! The MCP area's answers as the wire shows them: a server (its record, which of its lines the
//! keychain has, its sign-in, the built-in browser's check of this machine, what waits for the
//! person's approval), its tools, an inspection, a tool's answer, and the servers an import
//! finds. Whatever a look found of a server was redacted by the area before it answered.

use bosun_auth::record::{ClientAuth, Grant};
use bosun_mcp::address;
use bosun_mcp::adopt::{self, Target};
use bosun_mcp::import::ImportCandidate;
use bosun_mcp::ledger::{self, PendingTool};
use bosun_mcp::look::{Inspection, ListedTools, ToolAnswer};
use bosun_mcp::record::{LineKind, ServerRecord, StoredMalformedTool, StoredTool};
use bosun_mcp::registry::{ServerDetail, SignIn};
use bosun_protocol::mcp::{
    BrowserView, CallView, ImportCandidateView, ImportStatus, InspectView, LineView,
    MalformedToolView, ParamView, PendingToolView, RevisionView, ServerView, SignInView,
    ToolListing, ToolView,
};
use bosun_shared::mcp::{ToolChange, full_tool_name};

use super::View;

impl View for ServerDetail {
    type Wire = ServerView;
    fn view(&self) -> ServerView {
        let rec = &self.record;
        let mut view = bare_view(rec, |kind, name| self.is_saved(kind, name));
        view.pending_capabilities = ledger::capabilities_pending_of(rec);
        view.pending_tools = ledger::pending_of(rec).iter().map(View::view).collect();
        if let (Some(settings), Some(check)) = (&rec.browser, &self.browser) {
            view.command = Some(check.launch.command.clone());
            view.args = check.launch.args.clone();
            view.browser = Some(BrowserView {
                version: settings.version.clone(),
                program_set: settings.program.clone(),
                program_found: check.program.as_ref().map(|p| p.path().to_path_buf()),
                node: check.node.clone(),
                missing: check.missing.clone(),
            });
        }
        view.sign_in = self.sign_in.as_ref().map(|s| sign_in_view(rec, s));
        view.last_error = self.last_error();
        view
    }
}

/// A server just removed: its lines' values and its sign-in went with it, and nothing waits for
/// the person any more.
pub fn removed_view(rec: &ServerRecord) -> ServerView {
    bare_view(rec, |_, _| false)
}

/// A server's record as the UI shows it, `saved` saying whether a line's value is in the
/// keychain; what the registry finds out beyond the record is left for the caller to fill in.
fn bare_view(rec: &ServerRecord, saved: impl Fn(LineKind, &str) -> bool) -> ServerView {
    let lines = |kind: LineKind, names: &[String]| -> Vec<LineView> {
        names
            .iter()
            .map(|n| LineView {
                name: n.clone(),
                saved: saved(kind, n),
            })
            .collect()
    };
    ServerView {
        id: rec.id,
        name: rec.name.clone(),
        kind: rec.kind,
        command: rec.command.clone(),
        args: rec.args.clone(),
        url: rec.shown_url(),
        allow_http: rec.allow_http,
        env: lines(LineKind::Env, &rec.env_names),
        headers: lines(LineKind::Header, &rec.header_names),
        created_at: rec.created_at,
        updated_at: rec.updated_at,
        listed_at: rec.listing.as_ref().map(|l| l.at),
        tool_count: rec.listing.as_ref().map(|l| l.tools.len()),
        last_error: rec.shown_error(),
        builtin: rec.browser.is_some(),
        browser: None,
        sign_in_by: rec.sign_in_by,
        client_id: rec.client_id.clone(),
        callback_port: rec.callback_port,
        sign_in: None,
        client_metadata_url: rec.client_metadata_url.clone(),
        rules: rec.rules.clone(),
        pending_capabilities: Vec::new(),
        pending_tools: Vec::new(),
    }
}

/// A server's sign-in as the UI shows it (never a token).
fn sign_in_view(rec: &ServerRecord, sign_in: &SignIn) -> SignInView {
    let state = sign_in.state().to_string();
    let why = sign_in.why(&rec.name);
    match sign_in {
        SignIn::Kept(s) => SignInView {
            state,
            why,
            issuer: Some(s.issuer.clone()),
            client_id: Some(s.client_id.clone()),
            registered: s.registered,
            scope: s.scope.clone(),
            expires_at: s.expires_at,
            signed_in_at: Some(s.signed_in_at),
            refreshed_at: s.refreshed_at,
            wanted_scope: s.wanted_scope.clone(),
            client_credentials: (s.grant == Grant::ClientCredentials).then(|| {
                match s.client_auth {
                    ClientAuth::PrivateKeyJwt => "private_key_jwt",
                    ClientAuth::ClientSecretBasic => "client_secret_basic",
                    ClientAuth::ClientSecretPost => "client_secret_post",
                    ClientAuth::None => "none",
                }
                .to_string()
            }),
            dpop: s.dpop,
        },
        SignIn::ByClaudeCode | SignIn::SignedOut | SignIn::Asked | SignIn::NotYet => SignInView {
            state,
            why,
            issuer: None,
            client_id: rec.client_id.clone(),
            registered: false,
            scope: None,
            expires_at: None,
            signed_in_at: None,
            refreshed_at: None,
            wanted_scope: None,
            client_credentials: None,
            dpop: false,
        },
    }
}

impl View for PendingTool {
    type Wire = PendingToolView;
    fn view(&self) -> PendingToolView {
        PendingToolView {
            name: self.name.clone(),
            change: self.change,
        }
    }
}

impl View for StoredMalformedTool {
    type Wire = MalformedToolView;
    fn view(&self) -> MalformedToolView {
        MalformedToolView {
            name: self.name.clone(),
            problem: self.problem.clone(),
        }
    }
}

impl View for ListedTools {
    type Wire = ToolListing;
    fn view(&self) -> ToolListing {
        let pending = self.pending();
        let server = &self.record.name;
        ToolListing {
            server: server.clone(),
            listed_at: self.listing.at,
            tools: self
                .listing
                .tools
                .iter()
                .map(|t| {
                    let change = pending.iter().find(|p| p.name == t.name).map(|p| p.change);
                    tool_view(server, t, change)
                })
                .collect(),
            pages: self.listing.pages,
            truncated: self.listing.truncated.clone(),
            malformed: self.listing.malformed.view(),
        }
    }
}

/// A kept tool of `server` as the UI shows it, with how it differs from what the person
/// approved when runs do not get it until they approve it.
fn tool_view(server: &str, t: &StoredTool, pending: Option<ToolChange>) -> ToolView {
    ToolView {
        name: t.name.clone(),
        full_name: full_tool_name(server, &t.name),
        title: t.title.clone(),
        description: t.description.clone(),
        params: t
            .params
            .iter()
            .map(|p| ParamView {
                name: p.name.clone(),
                r#type: p.r#type.clone(),
                required: p.required,
                description: p.description.clone(),
            })
            .collect(),
        hints: t.hints,
        assessment: t.hints.assess(),
        input_schema: t.input_schema.clone(),
        pending,
    }
}

impl View for Inspection {
    type Wire = InspectView;
    fn view(&self) -> InspectView {
        InspectView {
            server: self.server.clone(),
            protocol_version: self.protocol_version.clone(),
            server_name: self.server_name.clone(),
            server_version: self.server_version.clone(),
            capabilities: self.capabilities.clone(),
            tools: self.tools,
            prompts: self.prompts,
            resources: self.resources,
            instructions: self.instructions.clone(),
            connect_ms: self.connect.as_millis() as u64,
            list_ms: self.list.as_millis() as u64,
            total_ms: self.total.as_millis() as u64,
            revision: Some(RevisionView {
                version: self.revision.version.clone(),
                stateless: self.revision.stateless,
                why: self.revision.why.clone(),
            }),
            malformed: self.malformed.view(),
            approved_capabilities: self.approved_capabilities.clone(),
            pending_capabilities: self.pending_capabilities.clone(),
            never_relayed: self.never_relayed.clone(),
            pending_tools: self.pending_tools.view(),
        }
    }
}

impl View for ToolAnswer {
    type Wire = CallView;
    fn view(&self) -> CallView {
        CallView {
            is_error: self.is_error,
            content: self.content.clone(),
            structured: self.structured.clone(),
        }
    }
}

/// A server found in a coding CLI's configuration as the person sees it: names of its lines,
/// never their values, and its address with the query hidden.
pub fn candidate_view(c: &ImportCandidate, status: adopt::Status) -> ImportCandidateView {
    let Target {
        kind,
        command,
        args,
        url,
    } = adopt::target(c);
    ImportCandidateView {
        source: c.source.to_string(),
        account: c.account.clone(),
        scope: c.scope.to_string(),
        name: c.name.clone(),
        kind,
        command,
        args,
        url: url.as_deref().map(address::shown),
        env_names: c.env_names().into_iter().map(str::to_string).collect(),
        header_names: c.header_names().into_iter().map(str::to_string).collect(),
        status: match status {
            adopt::Status::New => ImportStatus::New,
            adopt::Status::AlreadyInList => ImportStatus::AlreadyInList,
            adopt::Status::NameTaken => ImportStatus::NameTaken,
            adopt::Status::BadName => ImportStatus::BadName,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_mcp::record::StoredParam;
    use bosun_shared::mcp::Hints;

    #[test]
    fn a_tool_is_shown_by_its_full_name_with_its_risk_and_parameters_in_order() {
        let t = StoredTool {
            name: "t".into(),
            title: None,
            description: Some("Does".into()),
            params: vec![StoredParam {
                name: "zeta".into(),
                r#type: Some("string".into()),
                required: true,
                description: None,
            }],
            hints: Hints::default(),
            input_schema: None,
        };
        let v = tool_view("srv", &t, Some(ToolChange::New));
        assert_eq!(v.full_name, "mcp__srv__t");
        assert!(
            v.assessment.sent.is_empty(),
            "no annotations: no hints sent"
        );
        assert_eq!(v.assessment, Hints::default().assess());
        assert_eq!(v.params[0].name, "zeta");
        assert!(v.params[0].required);
        assert_eq!(v.pending, Some(ToolChange::New));
    }
}
