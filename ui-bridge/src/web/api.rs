//! The JSON API: the session's CSRF value, the one generic request (`POST /api/call`), and the
//! reads of a log that are not streams (its chunks, a download).

use std::collections::VecDeque;
use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Extension, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bosun_protocol::mcp::ImportScan;
use bosun_protocol::runs::{Following, Unfollow};
use bosun_protocol::ui::{Event, FollowParams, Request};
use bosun_shared::run::Stream;
use bosun_shared::usage::CapEdit;
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::ApiError;
use super::guard::Session;
use super::{Bridge, daemon};
use crate::{Client, ClientError};

/// `GET /api/session`: what a page needs to make changes (its CSRF value), and the bridge.
pub async fn session(
    State(bridge): State<Arc<Bridge>>,
    Extension(session): Extension<Session>,
) -> Json<Value> {
    Json(json!({
        "csrf": session.csrf,
        "version": env!("CARGO_PKG_VERSION"),
        "state_dir": bridge.dirs.root(),
        "started_at": bridge.started_at,
    }))
}

/// `POST /api/call`: the body is one request of the UI protocol, `{"method": …, "params": …}`;
/// the answer is the daemon's response, or `{"error": {code, message}}` with a status.
pub async fn call(State(bridge): State<Arc<Bridge>>, body: Bytes) -> Result<Response, ApiError> {
    let mut request: Request = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is not a request bosun knows ({e}); send {{\"method\": …, \"params\": …}}"
        ))
    })?;
    refuse_here(&request)?;
    fill_import_env(&mut request);
    let answer = daemon::request(&bridge.dirs, request).await?;
    Ok(Json(answer).into_response())
}

/// What the generic call does not pass on, and why.
fn refuse_here(request: &Request) -> Result<(), ApiError> {
    if let Request::DaemonStop = request {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "not_here",
            "Stopping bosund is not offered in the browser (every run would be stopped); run `bosun daemon stop` in a terminal",
        ));
    }
    if let Request::FollowLog(_) | Request::Unfollow(_) | Request::SubscribeRuns = request {
        return Err(ApiError::bad_request(
            "streams are not requests here: read a log from /api/runs/{run}/log (SSE) or /api/runs/{run}/chunks, and changes from /api/events",
        ));
    }
    Ok(())
}

/// The variables that say where the coding CLIs keep their configs; `bosun mcp import` sends the
/// person's own, and so does the bridge (it runs as the person, started by `bosun ui`).
const IMPORT_ENV: [&str; 4] = ["HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"];

/// An import from the browser looks where the command line would: a page cannot know the
/// person's `HOME`, so an import request that names no environment gets the bridge's.
fn fill_import_env(request: &mut Request) {
    if let Request::McpImportScan(scan) = request {
        person_env(scan);
    }
    if let Request::McpImport(params) = request {
        person_env(&mut params.scan);
    }
}

fn person_env(scan: &mut ImportScan) {
    if scan.env.is_empty() {
        scan.env = IMPORT_ENV
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
            .collect();
    }
}

#[derive(Deserialize)]
pub struct ParseQuery {
    time_cap: Option<String>,
    size: Option<String>,
    budget_usd: Option<String>,
    budget_tokens: Option<String>,
}

/// `GET /api/parse?time_cap=TEXT`, `?size=TEXT`, `?budget_usd=TEXT` or `?budget_tokens=TEXT`:
/// a time cap (`30m`, `2h`), a size (`1G`) or a card's or project's budget (`5`, `$2.50`,
/// `500000`, `off`) as the person typed it in a form, read by the parser the command line and
/// bosund use, so the pages hold no parser of their own: `{"ms": N}`, `{"bytes": N}` or
/// `{"cap": "off" | {"set": N}}` (the budget's edit as the wire carries it, dollars in
/// millionths), or a 400 in the rule's words (a time cap over a week, a duration without a
/// unit, a budget that is not a positive amount).
pub async fn parse(Query(q): Query<ParseQuery>) -> Result<Response, ApiError> {
    let budget = |what: &str, text: &str, dollars: bool| {
        CapEdit::parse(what, text, dollars)
            .map(|cap| Json(json!({ "cap": cap })).into_response())
            .map_err(ApiError::bad_request)
    };
    match (q.time_cap, q.size, q.budget_usd, q.budget_tokens) {
        (Some(t), None, None, None) => {
            let cap = bosun_shared::time::TimeCap::parse(&t).map_err(ApiError::bad_request)?;
            Ok(Json(json!({ "ms": cap.as_millis() })).into_response())
        }
        (None, Some(s), None, None) => {
            let bytes = bosun_shared::size::parse_size(&s).map_err(ApiError::bad_request)?;
            Ok(Json(json!({ "bytes": bytes })).into_response())
        }
        (None, None, Some(u), None) => budget("a budget in dollars", &u, true),
        (None, None, None, Some(n)) => budget("a budget in tokens", &n, false),
        // None of them, or more than one.
        _ => Err(ApiError::bad_request(
            "say what to read, one of: time_cap=TEXT, size=TEXT, budget_usd=TEXT or budget_tokens=TEXT",
        )),
    }
}

/// The most bytes one upload may have.
pub const MAX_UPLOAD: usize = 64 << 20;

#[derive(Deserialize)]
pub struct UploadQuery {
    name: String,
}

/// The most bytes a file's name may have: the filesystem's own limit (`NAME_MAX`), which counts
/// bytes, not letters (a letter of most scripts takes two or three).
const MAX_NAME_BYTES: usize = 255;

/// A file name as it is kept: its last component, without control characters or slashes;
/// `file` when nothing is left. A name longer than the filesystem takes is refused, with its
/// length, rather than cut (a cut name is not the name the person picked).
fn upload_name(name: &str) -> Result<String, ApiError> {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let kept: String = last.chars().filter(|c| !c.is_control()).collect();
    let kept = kept.trim();
    if kept.is_empty() || kept == "." || kept == ".." {
        return Ok("file".to_string());
    }
    if kept.len() > MAX_NAME_BYTES {
        return Err(ApiError::bad_request(format!(
            "the file's name is {} bytes long ({} letters); a file name may have at most {MAX_NAME_BYTES} bytes, and letters other than plain Latin ones take two to four each: rename the file and pick it again",
            kept.len(),
            kept.chars().count()
        )));
    }
    Ok(kept.to_string())
}

/// `POST /api/uploads?name=NAME`, the body the file's bytes: keeps a file the person picked in
/// the browser under `$BOSUN_HOME/uploads/<random>/NAME` (mode 0600), so a chat message can
/// name it like a file on this machine (`bosun chat send --file`). Answers `{path, name, bytes}`.
pub async fn upload(
    State(bridge): State<Arc<Bridge>>,
    Query(q): Query<UploadQuery>,
    body: Bytes,
) -> Result<Response, ApiError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let name = upload_name(&q.name)?;
    let dir = bridge
        .dirs
        .root()
        .join("uploads")
        .join(&super::guard::random_hex()[..16]);
    let path = dir.join(&name);
    let bytes = body.len();
    let written = path.clone();
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        let kept = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&written)
            .and_then(|mut f| {
                f.write_all(&body)?;
                f.sync_all()
            });
        // A file that could not be kept leaves nothing behind: its folder is this upload's own.
        if kept.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        kept
    })
    .await
    .map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "upload_failed",
            format!("the file could not be kept ({e}); try again"),
        )
    })?
    .map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "upload_failed",
            format!(
                "the file could not be kept in {} ({e}); check that the state directory is writable and has room",
                path.display()
            ),
        )
    })?;
    Ok(Json(json!({ "path": path, "name": name, "bytes": bytes })).into_response())
}

/// The most chunks one `/chunks` read returns.
const MAX_CHUNKS: usize = 5000;
/// The most bytes of output one `/chunks` read returns (past it, chunks are left out: the last
/// ones kept with `keep=tail`, else the first ones).
const MAX_CHUNK_BYTES: usize = 16 << 20;

#[derive(Deserialize)]
pub struct ChunksQuery {
    from: Option<u64>,
    limit: Option<usize>,
    /// `tail`: when over the byte budget, keep the last chunks rather than the first.
    keep: Option<String>,
}

/// A chunk as the browser gets it: the bytes as text (invalid UTF-8 replaced), never markup.
pub fn chunk_json(seq: u64, stream: Stream, at: bosun_shared::Timestamp, data: &[u8]) -> Value {
    json!({
        "seq": seq,
        "stream": stream,
        "at": at,
        "text": String::from_utf8_lossy(data),
    })
}

/// Opens a read of a run's stored log (`follow: false`) from `from`.
async fn open_read(bridge: &Bridge, run: String, from: u64) -> Result<(Client, u64), ApiError> {
    let mut client = daemon::connect(&bridge.dirs).await?;
    let Following { sub, .. } = client
        .call(FollowParams {
            run,
            from_seq: from.max(1),
            follow: false,
            stream: None,
            direct: false,
        })
        .await?;
    Ok((client, sub))
}

/// `GET /api/runs/{run}/chunks?from=A&limit=N[&keep=tail]`: the chunks of seqs A to A+N−1 that
/// are stored, as a JSON array, read without following. Past 16 MiB the last ones are left out,
/// or with `keep=tail` the first ones (a page showing a log tail-first wants its end).
pub async fn chunks(
    State(bridge): State<Arc<Bridge>>,
    Path(run): Path<String>,
    Query(q): Query<ChunksQuery>,
) -> Result<Response, ApiError> {
    let limit = q.limit.unwrap_or(1000).clamp(1, MAX_CHUNKS);
    let keep_tail = q.keep.as_deref() == Some("tail");
    let from = q.from.unwrap_or(1).max(1);
    // The window is the seqs [from, end); past the byte budget the chunks farthest from the
    // kept end are left out.
    let end = from.saturating_add(limit as u64);
    let (mut client, sub) = open_read(&bridge, run, from).await?;
    let mut out: VecDeque<Value> = VecDeque::new();
    let (mut bytes, mut sizes) = (0usize, VecDeque::new());
    loop {
        match client.next_event().await? {
            Some(Event::Log {
                sub: s,
                seq,
                stream,
                at,
                data,
            }) if s == sub => {
                if seq >= end {
                    break;
                }
                if !keep_tail && bytes + data.len() > MAX_CHUNK_BYTES && !out.is_empty() {
                    break;
                }
                bytes += data.len();
                sizes.push_back(data.len());
                out.push_back(chunk_json(seq, stream, at, data.as_slice()));
                while keep_tail && bytes > MAX_CHUNK_BYTES && out.len() > 1 {
                    out.pop_front();
                    bytes -= sizes.pop_front().unwrap_or(0);
                }
            }
            Some(Event::LogEnd { sub: s, .. }) if s == sub => break,
            Some(Event::LogFailed {
                sub: s, message, ..
            }) if s == sub => {
                if out.is_empty() {
                    return Err(ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "log_failed",
                        message,
                    ));
                }
                break;
            }
            Some(
                Event::Log { .. }
                | Event::LogLagged { .. }
                | Event::LogProgress { .. }
                | Event::LogEnd { .. }
                | Event::LogFailed { .. }
                | Event::RunChanged { .. }
                | Event::PendingChanged { .. }
                | Event::ApprovalChanged { .. }
                | Event::ChatMessage { .. }
                | Event::StorageFault { .. }
                | Event::StorageRecovered { .. }
                | Event::Notification { .. },
            ) => {}
            None => {
                return Err(ClientError::Connection("bosund closed the connection".into()).into());
            }
        }
    }
    // Done with the subscription; closing the connection would end it too.
    let _ = client.send(Unfollow { sub }.into()).await;
    Ok(Json(Vec::from(out)).into_response())
}

/// `GET /api/runs/{run}/log.txt`: the run's output (stdout and stderr, as the program wrote
/// them), streamed as a download.
pub async fn download(
    State(bridge): State<Arc<Bridge>>,
    Path(run): Path<String>,
) -> Result<Response, ApiError> {
    let (client, sub) = open_read(&bridge, run.clone(), 1).await?;
    let name: String = run
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(26)
        .collect();
    let body = futures::stream::unfold(Some(client), move |state| async move {
        let mut client = state?;
        loop {
            match client.next_event().await {
                Ok(Some(Event::Log {
                    sub: s,
                    stream,
                    data,
                    ..
                })) if s == sub => match stream {
                    Stream::Stdout | Stream::Stderr => {
                        return Some((Ok::<_, std::io::Error>(Bytes::from(data.0)), Some(client)));
                    }
                    Stream::Note => {}
                },
                Ok(Some(Event::LogEnd { sub: s, .. })) if s == sub => return None,
                Ok(Some(Event::LogFailed {
                    sub: s, message, ..
                })) if s == sub => {
                    return Some((Err(std::io::Error::other(message)), None));
                }
                Ok(Some(
                    Event::Log { .. }
                    | Event::LogLagged { .. }
                    | Event::LogProgress { .. }
                    | Event::LogEnd { .. }
                    | Event::LogFailed { .. }
                    | Event::RunChanged { .. }
                    | Event::PendingChanged { .. }
                    | Event::ApprovalChanged { .. }
                    | Event::ChatMessage { .. }
                    | Event::StorageFault { .. }
                    | Event::StorageRecovered { .. }
                    | Event::Notification { .. },
                )) => {}
                Ok(None) => {
                    return Some((
                        Err(std::io::Error::other("bosund closed the connection")),
                        None,
                    ));
                }
                Err(e) => return Some((Err(std::io::Error::other(e.to_string())), None)),
            }
        }
    });
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/plain; charset=utf-8".to_string(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"bosun-run-{name}.log\""),
            ),
        ],
        Body::from_stream(body),
    )
        .into_response())
}
