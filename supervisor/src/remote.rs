//! The runner listener over TCP, for runs placed on other hosts: set up at startup from
//! `placement.toml` (nothing listens on the network without it), every connection secured by
//! mutual TLS before it may say anything, and only a run's runner taken on it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};
use bosun_placement::ca::Ca;
use bosun_placement::kubernetes::Kubernetes;
use bosun_placement::{PlacementConfig, Remote, SlurmBackend};
use bosun_protocol::tls::{cert_digest, server_config};
use bosun_shared::paths::StateDir;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tracing::{info, warn};

use crate::ctx::RemoteListener;

/// How long a new network connection has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads `placement.toml` and, when it configures remote placement, opens the CA and binds the
/// runner listener.
pub async fn setup(dirs: &StateDir) -> anyhow::Result<Option<RemoteListener>> {
    let Some(config) = PlacementConfig::load(dirs.root()).map_err(|e| anyhow!(e))? else {
        return Ok(None);
    };
    let ca_dir = dirs.root().join("tls");
    let ca = tokio::task::spawn_blocking(move || Ca::open_or_create(&ca_dir))
        .await?
        .map_err(|e| anyhow!(e))?;
    let server = ca.issue_server().map_err(|e| anyhow!(e))?;
    let tls =
        server_config(ca.cert_pem(), &server.cert_pem, &server.key_pem).map_err(|e| anyhow!(e))?;
    let tcp = tokio::net::TcpListener::bind(&config.listen)
        .await
        .with_context(|| {
            format!(
                "could not listen for runners on {} (placement.toml's `listen`): is the address one of this machine's?",
                config.listen
            )
        })?;
    let bound = tcp.local_addr()?;
    let advertise = match &config.advertise {
        Some(a) => a.clone(),
        None if bound.ip().is_unspecified() => {
            return Err(anyhow!(
                "placement.toml listens on {bound}, which runners on other hosts cannot dial: set `advertise` to an address of this machine that they reach"
            ));
        }
        None => bound.to_string(),
    };
    let slurm = config.slurm.clone().map(SlurmBackend::new);
    let kubernetes = match config.kubernetes.clone() {
        Some(k) => Some(
            Kubernetes::connect(k)
                .await
                .map_err(|e| anyhow!("placement.toml's [kubernetes] cannot be used: {e}"))?,
        ),
        None => None,
    };
    info!(listen = %bound, %advertise, "listening for runners on other hosts");
    Ok(Some(RemoteListener {
        remote: Arc::new(Remote {
            ca,
            advertise,
            slurm,
            kubernetes,
        }),
        tcp: Arc::new(tcp),
        tls: tokio_rustls::TlsAcceptor::from(tls),
        bound,
    }))
}

/// A network connection that passed the TLS handshake with a certificate of bosund's CA.
pub struct TlsConn {
    pub stream: Box<TlsStream<TcpStream>>,
    /// The SHA-256 of the client's certificate: which run's runner it may be.
    pub cert_digest: String,
    pub peer: SocketAddr,
}

/// Finishes the handshake of a new connection; a peer without a certificate of bosund's CA
/// never gets further.
pub async fn handshake(
    tls: tokio_rustls::TlsAcceptor,
    tcp: TcpStream,
    peer: SocketAddr,
) -> Option<TlsConn> {
    let _ = tcp.set_nodelay(true);
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            warn!(%peer, error = %e, "refused a network connection: TLS handshake failed");
            return None;
        }
        Err(_) => {
            warn!(%peer, "refused a network connection: no TLS handshake in time");
            return None;
        }
    };
    let cert = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(cert_digest);
    let Some(cert_digest) = cert else {
        warn!(%peer, "refused a network connection without a client certificate");
        return None;
    };
    Some(TlsConn {
        stream: Box::new(stream),
        cert_digest,
        peer,
    })
}
