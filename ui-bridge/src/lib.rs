//! bosun-ui: the client side of bosund's UI protocol, used by the `bosun` command line.
//!
//! [`Client::connect`] attaches to the daemon of a state directory, starting `bosund` first when
//! it is not running and waiting until it answers. A client sends requests and receives their
//! answers in order: [`Client::call`] takes a typed request and returns its typed reply. Events
//! of its subscriptions that arrive meanwhile are kept for [`Client::next_event`].

pub mod daemon;
pub mod web;

use std::collections::VecDeque;
use std::io;

use bosun_protocol::call::{Call, Reply};
use bosun_protocol::runs::{ListRuns, RunView, RunsPage};
use bosun_protocol::socket::{self, WriteHalf};
use bosun_protocol::ui::{ClientFrame, Event, Request, Response, ResponseResult, ServerFrame};
use bosun_protocol::{
    FrameError, FrameReader, FrameWriter, Hello, HelloReply, PROTOCOL_VERSION, Role, UiClient,
    Welcome, WireError,
};
use bosun_shared::paths::StateDir;
use tokio::sync::mpsc;

/// What can go wrong talking to the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The daemon is not running (and was not to be started).
    #[error("bosund is not running (state directory {0})")]
    NotRunning(String),
    /// The daemon could not be started; the text says why.
    #[error("{0}")]
    StartFailed(String),
    /// The daemon refused the connection (another protocol version, another user).
    #[error("{0}")]
    Refused(WireError),
    /// The daemon answered the request with an error.
    #[error("{0}")]
    Daemon(WireError),
    /// The connection broke.
    #[error("lost the connection to bosund: {0}")]
    Connection(String),
    /// The daemon answered a request with another request's reply (a daemon of another
    /// build); asking again will not help.
    #[error("bosund answered something unexpected")]
    Unexpected,
}

impl From<FrameError> for ClientError {
    fn from(e: FrameError) -> Self {
        ClientError::Connection(e.to_string())
    }
}

/// A connection to bosund as a UI.
pub struct Client {
    writer: FrameWriter<WriteHalf>,
    frames: mpsc::Receiver<Result<ServerFrame, FrameError>>,
    pending_events: VecDeque<Event>,
    next_id: u64,
    pub welcome: Welcome,
}

/// Which UI this process is, said to bosund in each connection's hello (for its audit log):
/// the web bridge sets it once as it starts; the command line leaves it.
pub static CLIENT: std::sync::OnceLock<UiClient> = std::sync::OnceLock::new();

impl Client {
    /// Connects to the daemon of `dirs`, starting it if `autostart` and it is not running.
    pub async fn connect(dirs: &StateDir, autostart: bool) -> Result<Self, ClientError> {
        // A daemon that dies (a crash, a SIGKILL) between our connect and its welcome breaks
        // the hello; nothing was asked yet, so connecting again (and starting the next daemon)
        // is safe.
        let mut tries = 0;
        loop {
            match Self::connect_once(dirs, autostart).await {
                Ok(client) => return Ok(client),
                Err(ClientError::Connection(_)) if tries < 3 => {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100 * tries)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn connect_once(dirs: &StateDir, autostart: bool) -> Result<Self, ClientError> {
        let stream = match socket::connect(&dirs.socket()).await {
            Ok(s) => s,
            Err(e) if daemon::is_not_running(&e) => {
                if !autostart {
                    return Err(ClientError::NotRunning(dirs.root().display().to_string()));
                }
                daemon::start(dirs).await?
            }
            Err(e) => {
                return Err(ClientError::Connection(format!(
                    "{}: {e}",
                    dirs.socket().display()
                )));
            }
        };
        Self::handshake(stream).await
    }

    async fn handshake(
        stream: interprocess::local_socket::tokio::Stream,
    ) -> Result<Self, ClientError> {
        let (r, w) = socket::split(stream);
        let mut writer = FrameWriter::new(w);
        let mut reader = FrameReader::new(r);
        writer
            .send_now(&Hello {
                protocol_version: PROTOCOL_VERSION,
                role: Role::Ui,
                binary_log: true,
                client: *CLIENT.get().unwrap_or(&UiClient::Cli),
            })
            .await?;
        let welcome = match reader.read::<HelloReply>().await? {
            Some(HelloReply::Welcome(w)) => w,
            Some(HelloReply::Refused(e)) => return Err(ClientError::Refused(e)),
            None => {
                return Err(ClientError::Connection(
                    "bosund closed the connection".into(),
                ));
            }
        };
        let (tx, frames) = mpsc::channel(1024);
        // The reader holds the connection's read half, and the connection closes only when both
        // halves are gone: the task ends as soon as the `Client` (its receiver) is dropped, not
        // when bosund next speaks, which for a quiet connection is never. Without this every
        // dropped client left a connection open in bosund and in this process.
        tokio::spawn(async move {
            loop {
                let read = tokio::select! {
                    read = reader.read::<ServerFrame>() => read,
                    () = tx.closed() => return,
                };
                let item = match read {
                    Ok(Some(f)) => Ok(f),
                    Ok(None) => return,
                    Err(e) => Err(e),
                };
                let end = item.is_err();
                if tx.send(item).await.is_err() || end {
                    return;
                }
            }
        });
        Ok(Self {
            writer,
            frames,
            pending_events: VecDeque::new(),
            next_id: 1,
            welcome,
        })
    }

    /// Sends a request without waiting for its answer; returns its id.
    pub async fn send(&mut self, body: Request) -> Result<u64, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        self.writer
            .send_now(&ClientFrame::Request { id, body })
            .await?;
        Ok(id)
    }

    /// Sends a request and waits for its reply, typed by the request.
    pub async fn call<C: Call>(&mut self, call: C) -> Result<C::Reply, ClientError> {
        let answer = self.request(call.into()).await?;
        C::Reply::from_response(answer).ok_or(ClientError::Unexpected)
    }

    /// The runs that are not over (with `all`, the finished ones too), in the order they were
    /// made, asked for page by page so that no answer outgrows a frame however long the
    /// history. A daemon from before pages answers the first request with all of them.
    pub async fn runs(&mut self, all: bool) -> Result<Vec<RunView>, ClientError> {
        let mut request = ListRuns::first_page(all);
        let mut runs = Vec::new();
        loop {
            let page = self.call(request.clone()).await?;
            runs.extend(page.runs);
            match page.next {
                Some(after) => {
                    request.page = Some(RunsPage { after: Some(after) });
                }
                None => return Ok(runs),
            }
        }
    }

    /// Sends a request and waits for its answer, untyped: [`Client::call`] is the usual way.
    pub async fn request(&mut self, body: Request) -> Result<Response, ClientError> {
        let id = self.send(body).await?;
        loop {
            match self.next_frame().await? {
                Some(ServerFrame::Response { id: rid, result }) if rid == id => {
                    return match result {
                        ResponseResult::Ok(r) => Ok(r),
                        ResponseResult::Err(e) => Err(ClientError::Daemon(e)),
                    };
                }
                Some(ServerFrame::Response { .. }) => {}
                Some(ServerFrame::Event(e)) => self.pending_events.push_back(e),
                Some(ServerFrame::Error(e)) => return Err(ClientError::Daemon(e)),
                None => {
                    return Err(ClientError::Connection(
                        "bosund closed the connection".into(),
                    ));
                }
            }
        }
    }

    /// The next event of this client's subscriptions; `None` when the connection closed.
    pub async fn next_event(&mut self) -> Result<Option<Event>, ClientError> {
        if let Some(e) = self.pending_events.pop_front() {
            return Ok(Some(e));
        }
        loop {
            match self.next_frame().await? {
                Some(ServerFrame::Event(e)) => return Ok(Some(e)),
                Some(ServerFrame::Error(e)) => return Err(ClientError::Daemon(e)),
                Some(ServerFrame::Response { .. }) => {}
                None => return Ok(None),
            }
        }
    }

    async fn next_frame(&mut self) -> Result<Option<ServerFrame>, ClientError> {
        match self.frames.recv().await {
            Some(Ok(f)) => Ok(Some(f)),
            Some(Err(e)) => Err(e.into()),
            None => Ok(None),
        }
    }

    /// Whether a frame has arrived that the caller has not taken yet.
    pub fn has_buffered(&self) -> bool {
        !self.pending_events.is_empty() || !self.frames.is_empty()
    }

    /// Waits until the daemon closes this connection (it does when it exits).
    pub async fn closed(&mut self) {
        while let Some(Ok(_)) = self.frames.recv().await {}
    }
}

/// Whether an error means the daemon is simply not there.
pub fn is_connection_refused(e: &io::Error) -> bool {
    daemon::is_not_running(e)
}
