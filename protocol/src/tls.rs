//! The runner link over TCP for a run on another host: mutual TLS with bosund's own small CA.
//!
//! bosund keeps a CA of its own (made once, in the state directory) and issues each remote run a
//! client certificate of its own. The run's [`RemoteLink`] — where to dial, the CA to trust, the
//! run's certificate and key, and its token — is the one file the runner on the node reads (0600,
//! in the run's folder on the shared filesystem, deleted as soon as it is read). The launch plan
//! and its secrets come only over the link, after the runner has proved itself twice: its
//! certificate (checked by TLS against bosund's CA, then byte for byte against the one issued
//! for that run) and its token.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, InvalidDnsNameError, PrivateKeyDer, ServerName};
use rustls::server::{VerifierBuilderError, WebPkiClientVerifier};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use bosun_shared::{RunId, RunToken};

/// The name every bosund's server certificate carries, and every runner checks: a runner trusts
/// only its own bosund's CA, so one fixed name is enough and the address may change freely.
pub const SERVER_NAME: &str = "bosund.bosun.invalid";

/// What a runner on another host needs to reach bosund and prove itself.
#[derive(Clone, Serialize, Deserialize)]
pub struct RemoteLink {
    pub run_id: RunId,
    pub token: RunToken,
    /// `host:port` of bosund's runner listener.
    pub addr: String,
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for RemoteLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteLink")
            .field("run_id", &self.run_id)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn certs(pem: &str, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|why| TlsError::NotCertificate { what, why })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(what));
    }
    Ok(certs)
}

fn key(pem: &str, what: &'static str) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|why| TlsError::NotKey { what, why })
}

fn roots(ca_pem: &str) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in certs(ca_pem, "bosund's CA")? {
        roots.add(cert).map_err(TlsError::UnusableCa)?;
    }
    Ok(roots)
}

/// The runner's side: trusts only bosund's CA and presents the run's certificate.
pub fn client_config(link: &RemoteLink) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Versions)?
        .with_root_certificates(roots(&link.ca_pem)?)
        .with_client_auth_cert(
            certs(&link.cert_pem, "the run's certificate")?,
            key(&link.key_pem, "the run's key")?,
        )
        .map_err(|why| TlsError::Mismatch {
            whose: "the run's",
            why,
        })?;
    Ok(Arc::new(config))
}

/// The name the runner checks on bosund's certificate.
pub fn server_name() -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(SERVER_NAME).map_err(TlsError::ServerName)
}

/// bosund's side: its server certificate, and a client certificate signed by its CA required of
/// every connection.
pub fn server_config(
    ca_pem: &str,
    cert_pem: &str,
    key_pem: &str,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca_pem)?), provider())
            .build()
            .map_err(TlsError::Verifier)?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Versions)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            certs(cert_pem, "bosund's certificate")?,
            key(key_pem, "bosund's key")?,
        )
        .map_err(|why| TlsError::Mismatch {
            whose: "bosund's",
            why,
        })?;
    Ok(Arc::new(config))
}

/// The SHA-256 of a certificate in PEM form (its DER bytes), hex: what bosund keeps of the
/// certificate it issued a run, to know it again.
pub fn cert_digest_pem(pem: &str) -> Result<String, TlsError> {
    let certs = certs(pem, "the certificate")?;
    Ok(cert_digest(&certs[0]))
}

/// Why a TLS setting of the runner link could not be made; `what` and `whose` name the PEM
/// (`bosund's CA`, `the run's key`).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{what} is not a PEM certificate: {why}")]
    NotCertificate { what: &'static str, why: pem::Error },
    #[error("{0} holds no certificate")]
    NoCertificate(&'static str),
    #[error("{what} is not a PEM private key: {why}")]
    NotKey { what: &'static str, why: pem::Error },
    #[error("bosund's CA certificate is not usable: {0}")]
    UnusableCa(rustls::Error),
    /// The crypto provider offers none of the protocol versions asked for.
    #[error("{0}")]
    Versions(rustls::Error),
    #[error("{whose} certificate and key do not go together: {why}")]
    Mismatch {
        whose: &'static str,
        why: rustls::Error,
    },
    #[error("bad server name {SERVER_NAME}: {0}")]
    ServerName(InvalidDnsNameError),
    #[error("could not set up client certificate checks: {0}")]
    Verifier(VerifierBuilderError),
}

/// The SHA-256 of a certificate's DER bytes, hex.
pub fn cert_digest(cert: &CertificateDer<'_>) -> String {
    let digest = Sha256::digest(cert.as_ref());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_name_is_a_dns_name() {
        assert!(server_name().is_ok());
    }
}
