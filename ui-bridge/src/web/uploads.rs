//! Files picked in the browser for a chat message, kept under `$BOSUN_HOME/uploads/<random>/`,
//! and their removal.
//!
//! bosund reads an attachment by its path only when the lead attaches it to a card (it copies the
//! file to the card's folder then), which may be during the answer to the message that named it
//! or later, once the person approves a waiting `attach_file`. So an upload is not removed when
//! its message is sent: the bridge removes an upload a day after it was made, when the daemon
//! says no waiting action of the lead names it. It sweeps when it starts and every hour.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bosun_protocol::lead::Inbox;
use bosun_shared::paths::StateDir;

use crate::Client;

/// How long an upload is kept.
pub const KEEP: Duration = Duration::from_secs(24 * 3600);
/// How often the bridge sweeps on its own.
const EVERY: Duration = Duration::from_secs(3600);

/// The folder the uploads are kept in.
pub fn root(dirs: &StateDir) -> PathBuf {
    dirs.root().join("uploads")
}

/// Sweeps now and then every hour, for as long as the bridge runs.
pub async fn sweep_forever(dirs: StateDir) {
    loop {
        sweep(&dirs).await;
        tokio::time::sleep(EVERY).await;
    }
}

/// Removes the uploads older than [`KEEP`] that no waiting action of the lead names. When bosund
/// cannot say what waits (it is not running, it refuses), nothing is removed this time.
pub async fn sweep(dirs: &StateDir) {
    let root = root(dirs);
    let now = SystemTime::now();
    let old = match tokio::task::spawn_blocking(move || old_uploads(&root, now)).await {
        Ok(old) => old,
        Err(e) => {
            super::note(&format!("could not look through the uploads: {e}"));
            return;
        }
    };
    if old.is_empty() {
        return;
    }
    // Not started for this: a daemon that is not running has nothing of the uploads to read.
    let waiting = match Client::connect(dirs, false).await {
        Ok(mut client) => client.call(Inbox { chat: None }).await,
        Err(e) => Err(e),
    };
    let named: Vec<PathBuf> = match waiting {
        Ok(actions) => actions
            .iter()
            .filter(|a| a.state == "waiting")
            .filter_map(|a| a.args.get("path").and_then(|p| p.as_str()))
            .map(PathBuf::from)
            .collect(),
        Err(e) => {
            super::note(&format!(
                "kept the uploads older than a day for now: bosund could not say which waiting actions name them ({e})"
            ));
            return;
        }
    };
    let gone = tokio::task::spawn_blocking(move || {
        let mut gone = 0usize;
        for dir in old {
            if named.iter().any(|p| p.starts_with(&dir)) {
                continue;
            }
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => gone += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => super::note(&format!(
                    "could not remove the old upload {}: {e}",
                    dir.display()
                )),
            }
        }
        gone
    })
    .await;
    match gone {
        Ok(0) => {}
        Ok(n) => super::note(&format!("removed {n} upload(s) older than a day")),
        Err(e) => super::note(&format!("could not remove the old uploads: {e}")),
    }
}

/// The upload folders under `root` whose newest entry (the folder itself included) was changed
/// more than [`KEEP`] before `now`.
fn old_uploads(root: &Path, now: SystemTime) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut old = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let mut newest = meta.modified().ok();
        if let Ok(files) = std::fs::read_dir(&dir) {
            for f in files.flatten() {
                if let Ok(m) = f.metadata().and_then(|m| m.modified()) {
                    newest = Some(newest.map_or(m, |n| n.max(m)));
                }
            }
        }
        let aged = newest
            .and_then(|n| now.duration_since(n).ok())
            .is_some_and(|age| age > KEEP);
        if aged {
            old.push(dir);
        }
    }
    old
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_folders_past_a_day_are_old() {
        let tmp = std::env::temp_dir().join(format!("bosun-uploads-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let fresh = tmp.join("fresh");
        std::fs::create_dir_all(&fresh).unwrap();
        std::fs::write(fresh.join("a.txt"), "a").unwrap();
        std::fs::write(tmp.join("stray-file"), "not a folder").unwrap();
        let now = SystemTime::now();
        assert!(old_uploads(&tmp, now).is_empty());
        let later = now + KEEP + Duration::from_secs(60);
        assert_eq!(old_uploads(&tmp, later), vec![fresh]);
        assert!(old_uploads(&tmp.join("missing"), later).is_empty());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
