//! bosund's own small certificate authority, for the runner link over TCP.
//!
//! Made once and kept in the state directory (`tls/ca.pem`, and `tls/ca.key` at 0600). It signs
//! a fresh server certificate at each start of bosund (its key never leaves memory) and one
//! client certificate per remote run, whose SHA-256 the run's record keeps, so that a runner's
//! connection is taken for exactly the run it was issued for.

use std::fs;
use std::path::{Path, PathBuf};

use bosun_shared::RunId;
use bosun_shared::paths::create_private_dir;
use bosun_shared::protocol::tls::SERVER_NAME;
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
fn ca_params() -> Result<CertificateParams, String> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
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
    pub fn open_or_create(dir: &Path) -> Result<Ca, String> {
        let cert_path = dir.join("ca.pem");
        let key_path = dir.join("ca.key");
        let why = |what: &str, path: &PathBuf, e: &dyn std::fmt::Display| {
            format!("could not {what} {}: {e}", path.display())
        };
        if key_path.exists() && cert_path.exists() {
            let key_pem = fs::read_to_string(&key_path).map_err(|e| why("read", &key_path, &e))?;
            let cert_pem =
                fs::read_to_string(&cert_path).map_err(|e| why("read", &cert_path, &e))?;
            let key = KeyPair::from_pem(&key_pem).map_err(|e| {
                format!(
                    "bosund's CA key {} is damaged ({e}); delete {} and {} to make a new CA (runs on other hosts that are running now will then be lost)",
                    key_path.display(),
                    key_path.display(),
                    cert_path.display()
                )
            })?;
            return Ok(Ca {
                cert_pem,
                issuer: Issuer::new(ca_params()?, key),
            });
        }
        create_private_dir(dir).map_err(|e| why("create", &dir.to_path_buf(), &e))?;
        let key = KeyPair::generate().map_err(|e| format!("could not make a CA key: {e}"))?;
        let params = ca_params()?;
        let cert = params
            .self_signed(&key)
            .map_err(|e| format!("could not make the CA certificate: {e}"))?;
        bosun_kit::keychain::write_private(&key_path, key.serialize_pem().as_bytes())
            .map_err(|e| why("write", &key_path, &e))?;
        bosun_kit::keychain::write_private(&cert_path, cert.pem().as_bytes())
            .map_err(|e| why("write", &cert_path, &e))?;
        Ok(Ca {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// bosund's server certificate for the runner listener.
    pub fn issue_server(&self) -> Result<Issued, String> {
        let mut params =
            CertificateParams::new(vec![SERVER_NAME.to_string()]).map_err(|e| e.to_string())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "bosund runner listener");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A run's client certificate.
    pub fn issue_run(&self, run: RunId) -> Result<Issued, String> {
        let mut params = CertificateParams::new(vec![format!("{run}.run.bosun.invalid")])
            .map_err(|e| e.to_string())?;
        params
            .distinguished_name
            .push(DnType::CommonName, format!("bosun run {run}"));
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Result<Issued, String> {
        let key = KeyPair::generate().map_err(|e| format!("could not make a key: {e}"))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| format!("could not sign a certificate: {e}"))?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_shared::RunToken;
    use bosun_shared::protocol::tls::{RemoteLink, client_config, server_config};

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
