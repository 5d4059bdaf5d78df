//! The IPC listener: the socket `bosund.sock` (0600, in the 0700 state directory), one Session
//! actor per connection, and the peer check on every connection: a process of another user is
//! refused and logged before it can say anything.

use std::sync::Arc;
use std::time::Duration;

use bosun_protocol::socket::{peer_pid, peer_uid};
use bosun_protocol::{ErrorCode, FrameWriter, HelloReply, WireError};
use interprocess::local_socket::tokio::{Listener as SocketListener, Stream};
use interprocess::local_socket::traits::tokio::Listener as _;
use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::ctx::DaemonCtx;
use crate::remote::{self, TlsConn};
use crate::session::{Conn, Session, SessionArgs};

pub enum ListenerMsg {
    Accepted(Stream),
    /// A runner on another host, its TLS handshake done.
    AcceptedTls(TlsConn),
}

pub struct Listener;

/// The event subscription of bosund's own notifier; sessions are numbered after it.
pub const NOTIFIER_SESSION: u64 = 0;

pub struct ListenerState {
    ctx: Arc<DaemonCtx>,
    socket: Option<SocketListener>,
    accept_loop: Option<JoinHandle<()>>,
    tls_accept_loop: Option<JoinHandle<()>>,
    next_session: u64,
}

impl Actor for Listener {
    type Msg = ListenerMsg;
    type State = ListenerState;
    type Arguments = Arc<DaemonCtx>;

    async fn pre_start(
        &self,
        _myself: ActorRef<ListenerMsg>,
        ctx: Arc<DaemonCtx>,
    ) -> Result<ListenerState, ActorProcessingErr> {
        let path = ctx.dirs.socket();
        // Only the daemon holding the store's lock gets here, so a socket file already there is
        // a leftover of a daemon that died: replace it.
        let name = path.as_path().to_fs_name::<GenericFilePath>()?;
        let socket = ListenerOptions::new()
            .name(name)
            .try_overwrite(true)
            .reclaim_name(true)
            .mode(0o600)
            .create_tokio()
            .map_err(|e| format!("could not listen on {}: {e}", path.display()))?;
        info!(socket = %path.display(), "listening");
        Ok(ListenerState {
            ctx,
            socket: Some(socket),
            accept_loop: None,
            tls_accept_loop: None,
            next_session: NOTIFIER_SESSION + 1,
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<ListenerMsg>,
        state: &mut ListenerState,
    ) -> Result<(), ActorProcessingErr> {
        let tls_myself = myself.clone();
        if let Some(socket) = state.socket.take() {
            state.accept_loop = Some(tokio::spawn(async move {
                loop {
                    match socket.accept().await {
                        Ok(stream) => {
                            if myself.cast(ListenerMsg::Accepted(stream)).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            warn!(error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            }));
        }
        if let Some(remote) = &state.ctx.remote {
            let (tcp, tls) = (remote.tcp.clone(), remote.tls.clone());
            state.tls_accept_loop = Some(tokio::spawn(async move {
                loop {
                    match tcp.accept().await {
                        Ok((stream, peer)) => {
                            // Each handshake in a task of its own, so a slow peer holds up
                            // nobody.
                            let (me, tls) = (tls_myself.clone(), tls.clone());
                            tokio::spawn(async move {
                                if let Some(conn) = remote::handshake(tls, stream, peer).await {
                                    let _ = me.cast(ListenerMsg::AcceptedTls(conn));
                                }
                            });
                        }
                        Err(e) => {
                            warn!(error = %e, "accept failed on the runner listener");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            }));
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ListenerMsg>,
        state: &mut ListenerState,
    ) -> Result<(), ActorProcessingErr> {
        for l in [state.accept_loop.take(), state.tls_accept_loop.take()]
            .into_iter()
            .flatten()
        {
            l.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ListenerMsg>,
        msg: ListenerMsg,
        state: &mut ListenerState,
    ) -> Result<(), ActorProcessingErr> {
        bosun_kit::supervision::in_span(tracing::info_span!("listener"), async move {
        match msg {
            ListenerMsg::Accepted(stream) => {
                let me = nix::unistd::getuid().as_raw();
                match peer_uid(&stream) {
                    Ok(uid) if uid == me => {}
                    Ok(uid) => {
                        warn!(uid, pid = ?peer_pid(&stream), "refused a connection from another user");
                        refuse(
                            stream,
                            WireError::new(
                                ErrorCode::Unauthorized,
                                format!(
                                    "this bosund belongs to another user; connections from uid {uid} are refused"
                                ),
                            ),
                        );
                        return Ok(());
                    }
                    Err(e) => {
                        warn!(error = %e, "refused a connection whose peer is unknown");
                        return Ok(());
                    }
                }
                state.start_session(&myself, Conn::Local(stream)).await;
            }
            ListenerMsg::AcceptedTls(conn) => {
                state.start_session(&myself, Conn::Tls(conn)).await;
            }
        }
        Ok(())
        })
        .await
    }

    /// Sessions are not restarted: a failed session is one closed connection, and its client
    /// reconnects. The listener itself goes on.
    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<ListenerMsg>,
        event: SupervisionEvent,
        _state: &mut ListenerState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(_, err) => warn!(error = %err, "a session failed"),
            SupervisionEvent::ActorTerminated(..)
            | SupervisionEvent::ActorStarted(_)
            | SupervisionEvent::ProcessGroupChanged(_) => {}
        }
        Ok(())
    }
}

impl ListenerState {
    async fn start_session(&mut self, myself: &ActorRef<ListenerMsg>, stream: Conn) {
        let id = self.next_session;
        self.next_session += 1;
        let args = SessionArgs {
            ctx: self.ctx.clone(),
            stream,
            id,
        };
        if let Err(e) = Actor::spawn_linked(None, Session, args, myself.get_cell()).await {
            warn!(error = %e, "could not start a session");
        }
    }
}

/// Tells a peer why it is refused, then closes the connection. What the peer sends meanwhile
/// (its hello) is read and dropped for a moment first, so that its write does not fail before
/// it gets to read the refusal.
fn refuse(stream: Stream, error: WireError) {
    tokio::spawn(async move {
        let (mut r, w) = bosun_protocol::socket::split(stream);
        let mut writer = FrameWriter::new(w);
        let _ = writer.send_now(&HelloReply::Refused(error)).await;
        let mut sink = [0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            use tokio::io::AsyncReadExt;
            let mut total = 0;
            while let Ok(n) = r.read(&mut sink).await {
                total += n;
                if n == 0 || total > 64 * 1024 {
                    break;
                }
            }
        })
        .await;
    });
}
