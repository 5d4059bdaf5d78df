//! bosun's own MCP server (`bosun`), on 127.0.0.1 over Streamable HTTP (rmcp's server side,
//! stateless, JSON answers), reached by each answer of the lead through its 0600 per-run config
//! with a bearer token that belongs to that one answer while it runs.
//!
//! It answers clients of either protocol era ([`SERVED_VERSIONS`]): a 2025-era client opens
//! with `initialize` (its version is echoed when served, else 2025-11-25) and is then served
//! without a session, which those revisions allow; a 2026-07-28 client sends every request on
//! its own with `_meta` and the mirrored headers, and may ask `server/discover`. rmcp does the
//! era routing, the header checks (-32020), the `_meta` checks (-32602), the version refusal
//! (-32022) and `resultType`; this module narrows the versions to those bosun really serves
//! and adds what rmcp leaves out (see [`modern_result_meta`]).
//!
//! The gate: a privileged call, and a call that creates or changes a card, waits until the
//! daemon has read the answer's stream up to it (at most 5 s; else it is refused and may be
//! tried again). If the answer used a tool from outside bosun before it, a privileged call is
//! not run but kept as a pending action, and a card it puts in or changes in an Auto column is
//! saved on hold.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bosun_shared::AnswerId;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, MetaObject, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tracing::{debug, info, warn};

use super::answers::{Answers, LiveAnswer, OWN_PREFIX, Reading};
use super::chats::{ChatsHandle, ChatsMsg};
use super::record::McpServerMeta;
use super::tools::{self, LeadTool, ToolCtx};
use bosun_agents::stream::input_digest;
use bosun_board::{BoardRequest, QaTokens};
use bosun_kit::offload::blocking;
use bosun_store::writer::{Change, StoreWriter};

/// How long a call waits for the daemon to read its answer up to it.
const READ_LIMIT: Duration = Duration::from_secs(5);

/// The protocol revisions bosun's server speaks, oldest first: every revision that has the
/// Streamable HTTP transport. rmcp would also claim 2024-11-05, whose clients use the older
/// HTTP+SSE transport that this server does not offer, so `server/discover` and the -32022
/// refusal would list a version no such client could reach it with.
const SERVED_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// The result `_meta` key under which a 2026-07-28 server names itself.
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Whether the request was made under 2026-07-28 or later (the version in its `_meta`, or the
/// one its transport settled on). Versions are ISO dates, so they compare as strings.
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The `_meta` of a result for a 2026-07-28 client: the revision says a server SHOULD name
/// itself (`io.modelcontextprotocol/serverInfo`) on every result, and rmcp 3.11 does so only
/// on `server/discover`. A 2025-era client gets no `_meta` of this revision (`None`).
fn modern_result_meta(context: &RequestContext<RoleServer>) -> Option<MetaObject> {
    if !is_modern(context) {
        return None;
    }
    let mut meta = MetaObject::default();
    // Serialising a name and a version cannot fail; were it to, the SHOULD is left out.
    if let Ok(me) = serde_json::to_value(identity()) {
        meta.0.insert(SERVER_INFO_KEY.to_string(), me);
    }
    Some(meta)
}

/// How bosun's server names itself, in `initialize`, `server/discover` and results' `_meta`.
fn identity() -> Implementation {
    Implementation::new("bosun", env!("CARGO_PKG_VERSION"))
}

/// Adds [`modern_result_meta`] to a tool's result.
fn with_result_meta(
    mut response: CallToolResponse,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    // bosun never asks the client for input nor answers with a task (it declares neither), so
    // only a complete result is ever here; rmcp's enum is non-exhaustive, hence no `match`.
    if let CallToolResponse::Complete(result) = &mut response
        && let Some(meta) = modern_result_meta(context)
    {
        result.meta.get_or_insert_default().0.extend(meta.0);
    }
    response
}

#[derive(Clone)]
pub struct McpCtx {
    /// Where the server's port is kept across restarts.
    pub writer: StoreWriter,
    pub answers: Answers,
    pub tools: ToolCtx,
    pub chats: ChatsHandle,
    /// The tokens of live QA runs of cards: theirs are only `qa_pass` and `qa_fail`.
    pub qa: QaTokens,
}

#[derive(Clone)]
struct BosunMcp {
    ctx: Arc<McpCtx>,
}

fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

fn text_result(text: String, error: bool) -> CallToolResponse {
    let content = vec![ContentBlock::text(text)];
    if error {
        CallToolResult::error(content).into()
    } else {
        CallToolResult::success(content).into()
    }
}

impl rmcp::ServerHandler for BosunMcp {
    fn get_info(&self) -> InitializeResult {
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = identity();
        info.instructions = Some(
            "bosun's board, agents, runs and memory notes. Changes that start runs, change agents or columns, or save notes wait for the person's OK once this answer has used a tool from outside bosun.".into(),
        );
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SERVED_VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // A QA run's token gets its verdict tools; the lead's, everything else.
        let qa = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| bearer(&p.headers))
            .and_then(|t| self.ctx.qa.find(t))
            .is_some();
        let tools = tools::catalog()
            .into_iter()
            .filter(|t| t.tool.for_qa() == qa)
            .map(|t| {
                let schema = match t.schema {
                    Value::Object(m) => m,
                    Value::Null
                    | Value::Bool(_)
                    | Value::Number(_)
                    | Value::String(_)
                    | Value::Array(_) => serde_json::Map::new(),
                };
                Tool::new(t.tool.name(), t.description, Arc::new(schema))
                    .with_annotations(ToolAnnotations::new().read_only(t.read_only))
            })
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.meta = modern_result_meta(&context);
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let token = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| bearer(&p.headers))
            .map(str::to_string);
        // Both revisions make an unknown tool a protocol error (-32602), not a tool's failure.
        let tool = LeadTool::parse(&request.name).map_err(|why| {
            McpError::invalid_params(format!("{why}; tools/list names the ones there are"), None)
        })?;
        if let Some(card) = token.as_deref().and_then(|t| self.ctx.qa.find(t)) {
            return Ok(with_result_meta(
                self.verdict(card, tool, &request).await,
                &context,
            ));
        }
        let live = token.as_deref().and_then(|t| self.ctx.answers.find(t));
        let Some(live) = live else {
            return Ok(with_result_meta(
                text_result(
                    "this call carries no token of a live answer of the lead; bosun's tools answer only the lead's current answer".into(),
                    true,
                ),
                &context,
            ));
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        Ok(with_result_meta(
            self.call(live, tool, args).await,
            &context,
        ))
    }
}

impl BosunMcp {
    /// A QA run's call: its verdict on its card, and nothing else.
    async fn verdict(
        &self,
        card: bosun_shared::CardId,
        tool: LeadTool,
        request: &CallToolRequestParams,
    ) -> CallToolResponse {
        if !tool.for_qa() {
            return text_result(
                format!("a QA run's tools are qa_pass and qa_fail; {tool} is the lead's"),
                true,
            );
        }
        let pass = tool == LeadTool::QaPass;
        let summary = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("summary"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let req = |reply| BoardRequest::QaVerdict {
            card,
            pass,
            summary,
            reply,
        };
        match bosun_board::ask(&self.ctx.tools.board, req).await {
            Ok(c) => text_result(
                format!(
                    "Recorded: {} for card {} at commit {}.",
                    if pass { "qa_pass" } else { "qa_fail" },
                    c.record.id.short(),
                    c.record.qa.as_ref().map_or("?", |q| q.head.as_str())
                ),
                false,
            ),
            Err(why) => text_result(why.to_string(), true),
        }
    }

    async fn call(&self, live: LiveAnswer, tool: LeadTool, args: Value) -> CallToolResponse {
        let card_tool = matches!(tool, LeadTool::CreateTask | LeadTool::UpdateTask);
        let mut taint = None;
        if tool.privileged() || card_tool {
            let Some(run) = self.run_of(live.answer).await else {
                return text_result(refused_unread(tool), true);
            };
            let name = format!("{OWN_PREFIX}{tool}");
            match self
                .ctx
                .answers
                .read_up_to(run, &name, &input_digest(&args), READ_LIMIT)
                .await
            {
                Reading::NotYet => return text_result(refused_unread(tool), true),
                Reading::Read { outside } => taint = outside,
            }
        }
        let privileged = tool.privileged()
            || (tool == LeadTool::UpdateTask
                && args.get("clear_hold").and_then(Value::as_bool) == Some(true)
                && self.card_in_auto(&args).await);
        if privileged && let Some(cause) = &taint {
            return match self.pend(live, tool, &args, cause).await {
                Some(words) => text_result(words, false),
                None => text_result(
                    format!(
                        "{tool} wasn't run, and bosun could not keep it for the person; tell them"
                    ),
                    true,
                ),
            };
        }
        let taint = if card_tool { taint } else { None };
        match tools::execute(&self.ctx.tools, tool, &args, taint, Some(live.chat)).await {
            Ok(text) => {
                if privileged {
                    self.ctx.chats.cast(ChatsMsg::RanItself {
                        chat: live.chat,
                        tool,
                        args,
                    });
                }
                text_result(text, false)
            }
            Err(why) => text_result(why.to_string(), true),
        }
    }

    /// The answer's run, once it is known (it is set as the run starts).
    async fn run_of(&self, answer: AnswerId) -> Option<bosun_shared::RunId> {
        let deadline = tokio::time::Instant::now() + READ_LIMIT;
        loop {
            if let Some(run) = self.ctx.answers.run_of(answer) {
                return Some(run);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn card_in_auto(&self, args: &Value) -> bool {
        let Some(card) = args.get("card").and_then(Value::as_str) else {
            return false;
        };
        // Unknown: treated as the stricter case.
        let Ok(b) = bosun_board::ask(&self.ctx.tools.board, BoardRequest::Show).await else {
            return true;
        };
        let lower = card.to_ascii_lowercase();
        b.cards
            .iter()
            .find(|c| c.record.id.to_string().starts_with(&lower))
            .and_then(|c| b.columns.iter().find(|col| col.id == c.record.column))
            .is_none_or(|col| col.auto)
    }

    async fn pend(
        &self,
        live: LiveAnswer,
        tool: LeadTool,
        args: &Value,
        cause: &str,
    ) -> Option<String> {
        let chats = self.ctx.chats.get()?;
        let (args, cause) = (args.clone(), cause.to_string());
        ractor::call!(chats, |reply| ChatsMsg::Pend {
            chat: live.chat,
            answer: live.answer,
            tool,
            args,
            cause,
            reply
        })
        .ok()
    }
}

fn refused_unread(tool: LeadTool) -> String {
    format!(
        "{tool} was refused: bosun has not read this answer up to the call yet (it waits at most 5 seconds); try the call again"
    )
}

fn plain(
    status: http::StatusCode,
    text: &str,
) -> http::Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
    let mut r = http::Response::new(Full::new(Bytes::from(text.to_string())).boxed());
    *r.status_mut() = status;
    r
}

/// Binds the server's port: the one it had last ([`McpServerMeta`]) when that is free, so that
/// runs that outlived a restart of bosund reach it at the address they were given; else a free
/// one, kept for next time.
async fn listen(ctx: &McpCtx) -> std::io::Result<tokio::net::TcpListener> {
    let store = ctx.tools.store.clone();
    let last = blocking(move || store.get::<McpServerMeta>(McpServerMeta::KEY))
        .await
        .ok()
        .and_then(Result::ok)
        .flatten()
        .map(|m| m.port);
    let listener = match last {
        Some(port) => match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => l,
            Err(e) => {
                warn!(port, error = %e, "bosun's MCP server cannot listen on its port of last time, so runs that outlived the restart cannot reach it (a QA run among them gives no verdict); it listens on a new one");
                tokio::net::TcpListener::bind("127.0.0.1:0").await?
            }
        },
        None => tokio::net::TcpListener::bind("127.0.0.1:0").await?,
    };
    let port = listener.local_addr()?.port();
    if last != Some(port)
        && let Err(e) = ctx
            .writer
            .commit(vec![Change::put(&McpServerMeta { port })])
            .await
    {
        warn!(port, error = %e, "the port of bosun's MCP server could not be kept; after a restart it may listen elsewhere");
    }
    Ok(listener)
}

/// Starts bosun's MCP server on 127.0.0.1 (its port of last time, else a free one); returns its
/// address and its task. Aborting the task ends the server and every connection to it (they
/// hold the daemon's store writer, which must go before the daemon can finish its last commit).
pub async fn serve(ctx: McpCtx) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = listen(&ctx).await?;
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr()?.port());
    let ctx = Arc::new(ctx);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let handler = BosunMcp { ctx: ctx.clone() };
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    info!(%url, "bosun's MCP server is listening");
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            // Finished connections are let go as new ones come.
            while connections.try_join_next().is_some() {}
            let stream = match listener.accept().await {
                Ok((s, _)) => s,
                Err(e) => {
                    warn!(error = %e, "bosun's MCP server could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (service, answers, qa) = (service.clone(), ctx.answers.clone(), ctx.qa.clone());
            connections.spawn(async move {
                let svc =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let (service, answers, qa) = (service.clone(), answers.clone(), qa.clone());
                        async move {
                            if req.uri().path() != "/mcp" {
                                return Ok::<_, Infallible>(plain(
                                    http::StatusCode::NOT_FOUND,
                                    "bosun's MCP server is at /mcp",
                                ));
                            }
                            // Only the token of a live answer of the lead, or of a live QA
                            // run of a card, gets in.
                            if bearer(req.headers())
                                .is_none_or(|t| answers.find(t).is_none() && qa.find(t).is_none())
                            {
                                return Ok(plain(
                                    http::StatusCode::UNAUTHORIZED,
                                    "this token belongs to no live answer of the lead and no live QA run",
                                ));
                            }
                            Ok(service.handle(req).await)
                        }
                    });
                if let Err(e) = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await
                {
                    debug!(error = %e, "a connection to bosun's MCP server ended");
                }
            });
        }
    });
    Ok((url, task))
}
