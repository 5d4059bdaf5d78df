//! bosund's own small certificate authority, for the runner link over TCP.
//!
//! Made once and kept in the state directory (`tls/ca.pem`, and `tls/ca.key` at 0600). It signs
//! a fresh server certificate at each start of bosund (its key never leaves memory) and one
//! client certificate per remote run, whose SHA-256 the run's record keeps, so that a runner's
//! connection is taken for exactly the run it was issued for.

use std::fs;
use std::path::{Path, PathBuf};

use bosun_protocol::tls::SERVER_NAME;
use bosun_shared::RunId;
use bosun_shared::paths::create_private_dir;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A certificate and its key, in PEM.
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued").finish_non_exhaustive()
    }
}

pub struct Ca {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").finish_non_exhaustive()
    }
}

/// The CA's own parameters: the same every time, so that an issuer rebuilt from the stored key
/// signs as the stored certificate says.
fn ca_params() -> Result<CertificateParams, CaError> {
    let mut params = CertificateParams::new(Vec::<String>::new())
        .map_err(CaError::make("the CA's parameters"))?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params
        .distinguished_name
        .push(DnType::CommonName, "bosund runner link CA");
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(params)
}

impl Ca {
    /// The CA in `dir` (the state directory's `tls/`), made there the first time.
    pub fn open_or_create(dir: &Path) -> Result<Ca, CaError> {
        let cert_path = dir.join("ca.pem");
        let key_path = dir.join("ca.key");
        if key_path.exists() && cert_path.exists() {
            let key_pem =
                fs::read_to_string(&key_path).map_err(CaError::files("read", &key_path))?;
            let cert_pem =
                fs::read_to_string(&cert_path).map_err(CaError::files("read", &cert_path))?;
            let key = KeyPair::from_pem(&key_pem).map_err(|source| CaError::Damaged {
                key: key_path.clone(),
                cert: cert_path.clone(),
                source,
            })?;
            return Ok(Ca {
                cert_pem,
                issuer: Issuer::new(ca_params()?, key),
            });
        }
        create_private_dir(dir).map_err(CaError::files("create", dir))?;
        let key = KeyPair::generate().map_err(CaError::make("a CA key"))?;
        let params = ca_params()?;
        let cert = params
            .self_signed(&key)
            .map_err(CaError::make("the CA certificate"))?;
        bosun_kit::keychain::write_private(&key_path, key.serialize_pem().as_bytes())
            .map_err(CaError::files("write", &key_path))?;
        bosun_kit::keychain::write_private(&cert_path, cert.pem().as_bytes())
            .map_err(CaError::files("write", &cert_path))?;
        Ok(Ca {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// bosund's server certificate for the runner listener.
    pub fn issue_server(&self) -> Result<Issued, CaError> {
        let mut params = CertificateParams::new(vec![SERVER_NAME.to_string()])
            .map_err(CaError::make("the server certificate's parameters"))?;
        params
            .distinguished_name
            .push(DnType::CommonName, "bosund runner listener");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A run's client certificate.
    pub fn issue_run(&self, run: RunId) -> Result<Issued, CaError> {
        let mut params = CertificateParams::new(vec![format!("{run}.run.bosun.invalid")])
            .map_err(CaError::make("a run certificate's parameters"))?;
        params
            .distinguished_name
            .push(DnType::CommonName, format!("bosun run {run}"));
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Result<Issued, CaError> {
        let key = KeyPair::generate().map_err(CaError::make("a key"))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(CaError::make("a signed certificate"))?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// Why bosund's certificate authority could not be opened, made or used.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// Its folder or files could not be read, made or written (`tls/` in the state
    /// directory): from `open_or_create`. Retrying helps once the disk does.
    #[error("could not {action} {}: {source}", path.display())]
    Files {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The stored CA key is not one rcgen can read: from `open_or_create`. Retrying cannot
    /// help; the message says how to make a new CA and what that costs.
    #[error(
        "bosund's CA key {} is damaged ({source}); delete {} and {} to make a new CA (runs on other hosts that are running now will then be lost)",
        key.display(), key.display(), cert.display()
    )]
    Damaged {
        key: PathBuf,
        cert: PathBuf,
        #[source]
        source: rcgen::Error,
    },
    /// rcgen could not make a key, parameters or a certificate: from every method. A retry
    /// does not help.
    #[error("could not make {what}: {source}")]
    Make {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },
}

impl CaError {
    fn files(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| CaError::Files {
            action,
            path,
            source,
        }
    }

    fn make(what: &'static str) -> impl FnOnce(rcgen::Error) -> Self {
        move |source| CaError::Make { what, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_protocol::tls::{RemoteLink, client_config, server_config};
    use bosun_shared::RunToken;

    #[test]
    fn the_ca_is_kept_and_signs_what_the_link_accepts() {
        let dir = tempfile::tempdir().unwrap();
        let tls = dir.path().join("tls");
        let first = Ca::open_or_create(&tls).unwrap();
        let again = Ca::open_or_create(&tls).unwrap();
        assert_eq!(first.cert_pem(), again.cert_pem());
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &fs::metadata(tls.join("ca.key")).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);

        // A server certificate signed by the reopened CA and a run's certificate signed by the
        // first one both make configs that load.
        let server = again.issue_server().unwrap();
        server_config(first.cert_pem(), &server.cert_pem, &server.key_pem).unwrap();
        let run = first.issue_run(RunId::new()).unwrap();
        client_config(&RemoteLink {
            run_id: RunId::new(),
            token: RunToken::generate(),
            addr: "127.0.0.1:1".into(),
            ca_pem: again.cert_pem().to_string(),
            cert_pem: run.cert_pem,
            key_pem: run.key_pem,
        })
        .unwrap();
    }
}
