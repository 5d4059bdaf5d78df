//! The live streams, over server-sent events. Each stream is a task with a daemon connection of
//! its own, feeding a bounded channel; when the browser goes, the channel closes, the task ends
//! and so does its connection (and with it the daemon's subscription). Comments every 15 s keep
//! proxies and the browser from giving up on a quiet stream.
//!
//! **The resume rule.** A log event's `id:` is its seq. The bridge's own follower keeps `next`,
//! the seq after the last one it sent; when bosund goes away it connects again (starting bosund
//! as the command line does) and follows on from `next`, so the page sees no gap and no
//! duplicate. When the browser's connection breaks instead, `EventSource` reconnects with
//! `Last-Event-ID`, and the bridge starts from the seq after it.

use std::convert::Infallible;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as Sse, KeepAlive};
use axum::response::{IntoResponse, Response};
use bosun_protocol::runs::Following;
use bosun_protocol::ui::{Event, FollowParams, Request};
use bosun_shared::paths::StateDir;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::api::chunk_json;
use super::daemon::{self, Backoff};
use super::{Bridge, note};
use crate::{Client, ClientError};

/// How many events wait for a slow browser before the task waits for it in turn.
const BUFFER: usize = 256;

type Tx = mpsc::Sender<Sse>;

fn sse_response(rx: mpsc::Receiver<Sse>) -> Response {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    axum::response::sse::Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

fn event(name: &str, data: &Value) -> Sse {
    Sse::default().event(name).data(data.to_string())
}

/// `GET /api/events`: `hello` each time the bridge is (again) subscribed to bosund (the page
/// reloads its lists then: what changed while bosund was away was not streamed), `run`,
/// `pending`, `approval` and `chat` as they happen, and `daemon` when bosund went away.
pub async fn events(State(bridge): State<Arc<Bridge>>) -> Response {
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(events_task(bridge.dirs.clone(), tx));
    sse_response(rx)
}

async fn events_task(dirs: StateDir, tx: Tx) {
    let mut backoff = Backoff::new();
    loop {
        if tx.is_closed() {
            return;
        }
        let mut client = match daemon::connect(&dirs).await {
            Ok(c) => c,
            Err(e) => {
                let lost = json!({ "connected": false, "message": e.message });
                if tx.send(event("daemon", &lost)).await.is_err() {
                    return;
                }
                backoff.wait().await;
                continue;
            }
        };
        if let Err(e) = client.request(Request::SubscribeRuns).await {
            note(&format!("could not subscribe to bosund's events: {e}"));
            backoff.wait().await;
            continue;
        }
        backoff.reset();
        let hello = json!({
            "daemon_pid": client.welcome.daemon_pid,
            "daemon_version": client.welcome.daemon_version,
        });
        if tx.send(event("hello", &hello)).await.is_err() {
            return;
        }
        loop {
            let next_event = tokio::select! {
                e = client.next_event() => e,
                () = tx.closed() => return,
            };
            let sent = match next_event {
                Ok(Some(Event::RunChanged { run })) => tx.send(event("run", &json!(run))).await,
                Ok(Some(Event::PendingChanged { action })) => {
                    tx.send(event("pending", &json!(action))).await
                }
                Ok(Some(Event::ApprovalChanged { approval })) => {
                    tx.send(event("approval", &json!(approval))).await
                }
                Ok(Some(Event::ChatMessage { chat, message })) => {
                    let data = json!({ "chat": chat, "message": message });
                    tx.send(event("chat", &data)).await
                }
                Ok(Some(Event::StorageFault { message, since })) => {
                    let data = json!({ "fault": message, "since": since });
                    tx.send(event("storage", &data)).await
                }
                Ok(Some(Event::StorageRecovered { fault, since, at })) => {
                    let data = json!({ "fault": null, "was": fault, "since": since, "ended": at });
                    tx.send(event("storage", &data)).await
                }
                Ok(Some(Event::Notification {
                    kind,
                    text,
                    card,
                    chat,
                    at,
                })) => {
                    let data =
                        json!({ "kind": kind, "text": text, "card": card, "chat": chat, "at": at });
                    tx.send(event("notification", &data)).await
                }
                Ok(Some(
                    Event::Log { .. }
                    | Event::LogLagged { .. }
                    | Event::LogProgress { .. }
                    | Event::LogEnd { .. }
                    | Event::LogFailed { .. },
                )) => Ok(()),
                Ok(None) | Err(_) => {
                    let lost =
                        json!({ "connected": false, "message": "bosund went away; reconnecting" });
                    if tx.send(event("daemon", &lost)).await.is_err() {
                        return;
                    }
                    break;
                }
            };
            if sent.is_err() {
                return;
            }
        }
    }
}

#[derive(Deserialize)]
pub struct LogQuery {
    from: Option<u64>,
}

/// `GET /api/runs/{run}/log[?from=SEQ]`: the run's log from `Last-Event-ID` + 1, else `from`,
/// else the start; live until the run ends (`end`), or the log cannot be read on (`failed`).
/// `lagged` says the daemon's follower fell behind and goes on from the store (nothing lost).
pub async fn log(
    State(bridge): State<Arc<Bridge>>,
    Path(run): Path<String>,
    Query(q): Query<LogQuery>,
    headers: HeaderMap,
) -> Response {
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|last| last + 1);
    let next = resume.or(q.from).unwrap_or(1).max(1);
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(log_task(bridge.dirs.clone(), run, next, tx));
    sse_response(rx)
}

/// Follows a run's log into the browser's stream, riding out restarts of bosund.
async fn log_task(dirs: StateDir, run: String, next: u64, tx: Tx) {
    let mut follow = LogFollow {
        run,
        next,
        tx,
        backoff: Backoff::new(),
        followed_once: false,
    };
    loop {
        if follow.tx.is_closed() {
            return;
        }
        let mut client = match daemon::connect(&dirs).await {
            Ok(c) => c,
            Err(e) => {
                let data = json!({ "message": e.message, "next": follow.next });
                if follow.tx.send(event("reconnecting", &data)).await.is_err() {
                    return;
                }
                follow.backoff.wait().await;
                continue;
            }
        };
        let sub = match follow.subscribe(&mut client).await {
            Ok(sub) => sub,
            Err(Flow::Reconnect) => continue,
            Err(Flow::Stop) => return,
        };
        match follow.forward(&mut client, sub).await {
            Flow::Reconnect => {}
            Flow::Stop => return,
        }
    }
}

/// One page's follow of a run's log, kept across bosund's restarts.
struct LogFollow {
    /// The run, by the full id once bosund has named it.
    run: String,
    /// The seq after the last chunk sent to the page.
    next: u64,
    tx: Tx,
    backoff: Backoff,
    followed_once: bool,
}

/// How following goes on when a subscription to the log is over.
enum Flow {
    /// Connect to bosund again and follow on from `next`.
    Reconnect,
    /// Stop: the page is gone, or the log ended or cannot be read on.
    Stop,
}

impl LogFollow {
    /// Subscribes to the run's log from `next`, telling the page when bosund is back after a
    /// restart; returns the subscription.
    async fn subscribe(&mut self, client: &mut Client) -> Result<u64, Flow> {
        let next = self.next;
        let request = FollowParams {
            run: self.run.clone(),
            from_seq: next,
            follow: true,
            stream: None,
            direct: false,
        };
        match client.call(request).await {
            Ok(Following { sub, run: view, .. }) => {
                // Follow on by the full id: a prefix could match another run later.
                self.run = view.id.to_string();
                if self.followed_once {
                    let data = json!({ "message": format!("bosund restarted; following on from chunk {next}"), "next": next });
                    if self.tx.send(event("resumed", &data)).await.is_err() {
                        return Err(Flow::Stop);
                    }
                }
                self.followed_once = true;
                self.backoff.reset();
                Ok(sub)
            }
            Err(ClientError::Connection(_)) => {
                self.backoff.wait().await;
                Err(Flow::Reconnect)
            }
            Err(e) => {
                let data = json!({ "message": e.to_string(), "last_seq": next.saturating_sub(1) });
                let _ = self.tx.send(event("failed", &data)).await;
                Err(Flow::Stop)
            }
        }
    }

    /// Passes the subscription's events on to the page until the log is over or bosund goes.
    async fn forward(&mut self, client: &mut Client, sub: u64) -> Flow {
        loop {
            let next_event = tokio::select! {
                e = client.next_event() => e,
                () = self.tx.closed() => return Flow::Stop,
            };
            if let ControlFlow::Break(flow) = self.pass_on(next_event, sub).await {
                return flow;
            }
        }
    }

    /// Passes one event of the subscription on to the page: a chunk not sent yet, a lag, the
    /// log's end or failure; breaks when this subscription is over.
    async fn pass_on(
        &mut self,
        next_event: Result<Option<Event>, ClientError>,
        sub: u64,
    ) -> ControlFlow<Flow> {
        let sent = match next_event {
            Ok(Some(Event::Log {
                sub: s,
                seq,
                stream,
                at,
                data,
            })) if s == sub => {
                if seq < self.next {
                    // Already sent: a page never gets a chunk twice.
                    return ControlFlow::Continue(());
                }
                self.next = seq + 1;
                let chunk = chunk_json(seq, stream, at, data.as_slice());
                self.tx
                    .send(Sse::default().id(seq.to_string()).data(chunk.to_string()))
                    .await
            }
            Ok(Some(Event::LogLagged {
                sub: s,
                resume_from,
            })) if s == sub => {
                self.tx
                    .send(event("lagged", &json!({ "resume_from": resume_from })))
                    .await
            }
            Ok(Some(Event::LogEnd {
                sub: s,
                last_seq,
                run,
            })) if s == sub => {
                let data = json!({ "last_seq": last_seq, "run": run });
                let _ = self.tx.send(event("end", &data)).await;
                return ControlFlow::Break(Flow::Stop);
            }
            Ok(Some(Event::LogFailed {
                sub: s,
                last_seq,
                message,
            })) if s == sub => {
                let data = json!({ "last_seq": last_seq, "message": message });
                let _ = self.tx.send(event("failed", &data)).await;
                return ControlFlow::Break(Flow::Stop);
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
            )) => Ok(()),
            Ok(None) | Err(ClientError::Connection(_)) => {
                // bosund went away mid-log: get it back and follow on from `next`.
                let data =
                    json!({ "message": "bosund went away; reconnecting", "next": self.next });
                if self.tx.send(event("reconnecting", &data)).await.is_err() {
                    return ControlFlow::Break(Flow::Stop);
                }
                return ControlFlow::Break(Flow::Reconnect);
            }
            Err(e) => {
                let data =
                    json!({ "message": e.to_string(), "last_seq": self.next.saturating_sub(1) });
                let _ = self.tx.send(event("failed", &data)).await;
                return ControlFlow::Break(Flow::Stop);
            }
        };
        if sent.is_err() {
            return ControlFlow::Break(Flow::Stop);
        }
        ControlFlow::Continue(())
    }
}
