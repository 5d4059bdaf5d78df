//! The keychain: where secret values live, and nowhere else.
//!
//! The real one is the desktop's Secret Service (gnome-keyring, KWallet), reached through
//! keyring-core and its Secret Service store. `BOSUN_FAKE_KEYCHAIN=<file>` swaps in a JSON file
//! readable by its owner alone (0600), for tests and machines without a desktop session. There is
//! no silent fallback: without either, every operation that needs a secret fails with
//! [`KeychainError::Unavailable`], which says what to do.
//!
//! Keys are `mcp/<server id>/env/<NAME>` and `mcp/<server id>/header/<Name>` under the service
//! `bosun`. Every call blocks (D-Bus or file I/O): call it from a blocking thread.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use keyring_core::{CredentialStore, Entry};

/// The keychain service name every bosun secret is filed under.
const SERVICE: &str = "bosun";

/// What can go wrong with the keychain. Messages say what to do; none carries a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeychainError {
    /// No keychain to use. Not retryable until the person starts one or names a file.
    #[error(
        "no keychain is available ({0}); start a Secret Service in your session (such as gnome-keyring) and unlock it, or set BOSUN_FAKE_KEYCHAIN to a file path to keep secrets in a file only you can read"
    )]
    Unavailable(String),
    /// The Secret Service is there but locked. Retryable once it is unlocked.
    #[error(
        "the keychain is locked; unlock it (log in to your desktop session, or run `gnome-keyring-daemon --unlock`) and try again"
    )]
    Locked,
    /// The keychain failed.
    #[error("the keychain failed: {0}")]
    Failed(String),
}

/// The keychain bosun uses.
#[derive(Clone)]
pub struct Keychain {
    backend: Arc<Backend>,
}

enum Backend {
    SecretService(Arc<CredentialStore>),
    File(FileKeychain),
    None(String),
}

impl Keychain {
    /// The keychain the environment names: `BOSUN_FAKE_KEYCHAIN`, else the Secret Service. When
    /// neither can be used, a keychain whose every operation says so.
    pub fn from_env() -> Self {
        let backend = match std::env::var_os("BOSUN_FAKE_KEYCHAIN").filter(|v| !v.is_empty()) {
            Some(path) => Backend::File(FileKeychain::new(PathBuf::from(path))),
            None => match zbus_secret_service_keyring_store::Store::new() {
                Ok(store) => Backend::SecretService(store),
                Err(e) => Backend::None(format!("the Secret Service cannot be reached: {e}")),
            },
        };
        Self {
            backend: Arc::new(backend),
        }
    }

    /// A keychain in a JSON file (what `BOSUN_FAKE_KEYCHAIN` gives).
    pub fn file(path: PathBuf) -> Self {
        Self {
            backend: Arc::new(Backend::File(FileKeychain::new(path))),
        }
    }

    /// Which keychain this is, for `bosun daemon status`.
    pub fn describe(&self) -> String {
        match self.backend.as_ref() {
            Backend::SecretService(_) => "Secret Service".into(),
            Backend::File(f) => format!("file {} (BOSUN_FAKE_KEYCHAIN)", f.path.display()),
            Backend::None(why) => format!("none ({why})"),
        }
    }

    /// Saves a value under `key`, replacing any.
    pub fn set(&self, key: &str, value: &str) -> Result<(), KeychainError> {
        match self.backend.as_ref() {
            Backend::SecretService(store) => entry(store, key)?
                .set_password(value)
                .map_err(keyring_error),
            Backend::File(f) => f.update(|m| {
                m.insert(key.to_string(), value.to_string());
            }),
            Backend::None(why) => Err(KeychainError::Unavailable(why.clone())),
        }
    }

    /// The value under `key`, if there is one.
    pub fn get(&self, key: &str) -> Result<Option<String>, KeychainError> {
        match self.backend.as_ref() {
            Backend::SecretService(store) => match entry(store, key)?.get_password() {
                Ok(v) => Ok(Some(v)),
                Err(keyring_core::Error::NoEntry) => Ok(None),
                Err(e) => Err(keyring_error(e)),
            },
            Backend::File(f) => Ok(f.load()?.get(key).cloned()),
            Backend::None(why) => Err(KeychainError::Unavailable(why.clone())),
        }
    }

    /// Removes the value under `key`; a key with no value is not an error.
    pub fn delete(&self, key: &str) -> Result<(), KeychainError> {
        match self.backend.as_ref() {
            Backend::SecretService(store) => match entry(store, key)?.delete_credential() {
                Ok(()) | Err(keyring_core::Error::NoEntry) => Ok(()),
                Err(e) => Err(keyring_error(e)),
            },
            Backend::File(f) => f.update(|m| {
                m.remove(key);
            }),
            Backend::None(why) => Err(KeychainError::Unavailable(why.clone())),
        }
    }
}

impl Keychain {
    /// Saves several values, all or none: on a failure part-way, what was there before each
    /// key is put back.
    pub fn set_many(&self, pairs: &[(String, String)]) -> Result<(), KeychainError> {
        let mut done: Vec<(&str, Option<String>)> = Vec::new();
        for (key, value) in pairs {
            let result = self
                .get(key)
                .and_then(|before| self.set(key, value).map(|()| before));
            match result {
                Ok(before) => done.push((key, before)),
                Err(e) => {
                    for (key, before) in done.into_iter().rev() {
                        let _ = match before {
                            Some(v) => self.set(key, &v),
                            None => self.delete(key),
                        };
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Removes several values; stops at the first failure.
    pub fn delete_many(&self, keys: &[String]) -> Result<(), KeychainError> {
        keys.iter().try_for_each(|k| self.delete(k))
    }
}

fn entry(store: &Arc<CredentialStore>, key: &str) -> Result<Entry, KeychainError> {
    Entry::new_in_store(store, SERVICE, key).map_err(keyring_error)
}

fn keyring_error(e: keyring_core::Error) -> KeychainError {
    if matches!(e, keyring_core::Error::NoStorageAccess(_)) {
        return KeychainError::Locked;
    }
    if matches!(e, keyring_core::Error::PlatformFailure(_)) {
        return KeychainError::Unavailable(format!("the Secret Service failed: {e}"));
    }
    KeychainError::Failed(e.to_string())
}

/// A JSON object of key → value in a 0600 file, rewritten whole (atomically) on each change.
struct FileKeychain {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FileKeychain {
    fn new(path: PathBuf) -> Self {
        Self {
            path,
            lock: Mutex::new(()),
        }
    }

    fn load(&self) -> Result<BTreeMap<String, String>, KeychainError> {
        match fs::read(&self.path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(BTreeMap::new()),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                KeychainError::Failed(format!(
                    "the keychain file {} is not a JSON object of strings ({e}); fix or remove it",
                    self.path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(KeychainError::Failed(format!(
                "could not read the keychain file {}: {e}",
                self.path.display()
            ))),
        }
    }

    fn update(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, String>),
    ) -> Result<(), KeychainError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut map = self.load()?;
        change(&mut map);
        write_private(
            &self.path,
            &serde_json::to_vec_pretty(&map).unwrap_or_default(),
        )
        .map_err(|e| {
            KeychainError::Failed(format!(
                "could not write the keychain file {}: {e}",
                self.path.display()
            ))
        })
    }
}

/// Writes a file readable by its owner alone, replacing it atomically.
/// Writes a file only its owner may read, whole or not at all (a temporary file, flushed, then
/// renamed over it).
pub fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)
}

/// The keychain key of a server's environment line.
pub fn env_key(server: bosun_shared::ServerId, name: &str) -> String {
    format!("mcp/{server}/env/{name}")
}

/// The keychain key of a server's header line.
pub fn header_key(server: bosun_shared::ServerId, name: &str) -> String {
    format!("mcp/{server}/header/{name}")
}

/// The keychain key of an agent's secret environment line.
pub fn agent_env_key(agent: bosun_shared::AgentId, name: &str) -> String {
    format!("agent/{agent}/env/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_file_keychain_keeps_values_privately_and_forgets_them() -> Result<(), KeychainError> {
        let dir = tempfile::tempdir().map_err(|e| KeychainError::Failed(e.to_string()))?;
        let path = dir.path().join("keychain.json");
        let k = Keychain::file(path.clone());
        assert_eq!(k.get("a")?, None);
        k.set("a", "one")?;
        k.set("b", "two")?;
        k.set("a", "uno")?;
        assert_eq!(k.get("a")?.as_deref(), Some("uno"));
        let mode = fs::metadata(&path)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0);
        assert_eq!(mode, 0o600);
        k.delete("a")?;
        k.delete("never-there")?;
        assert_eq!(k.get("a")?, None);
        assert_eq!(k.get("b")?.as_deref(), Some("two"));
        Ok(())
    }

    #[test]
    fn no_keychain_says_what_to_do() {
        let k = Keychain {
            backend: Arc::new(Backend::None("no session bus".into())),
        };
        let err = k
            .set("a", "b")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("no keychain is available (no session bus)"),
            "{err}"
        );
        assert!(err.contains("BOSUN_FAKE_KEYCHAIN"), "{err}");
    }
}
