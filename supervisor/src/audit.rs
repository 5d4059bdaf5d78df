//! The audit log: an append-only file in the state directory (`audit.jsonl`) of every change to
//! what agents may do (agents, their switches, verdicts and budgets; MCP servers, their rules,
//! approvals, sign-in and sign-out; cards' and projects' budgets; bosund's settings) and every
//! answer to what waited (approvals, the lead's pending actions). Each entry says when, who
//! (this machine's command line, the local web UI, the lead, bosund itself) and what, with what
//! bosun showed of the thing before and after: the views every UI gets, which hold no secret
//! value.
//!
//! Each entry carries the SHA-256 of the one before (`prev`) and its own (`hash`), taken over
//! its line as written up to its hash, so an entry edited, removed or put out of order is found
//! (`bosun audit verify`). Retention removes the oldest entries; the last one removed leaves
//! its number and hash in `audit.anchor`, so that removing more by hand is found too.
//!
//! Written by bosund alone, one entry at a time under a lock, flushed to disk before the
//! request that made it is answered. A write that fails is logged and said in bosund's log;
//! the change itself stands.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use bosun_protocol::UiClient;
use bosun_protocol::audit::{AuditCheck, AuditEntry};
use bosun_shared::Timestamp;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tracing::error;

/// Who a change is on record as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    Ui(UiClient),
    Lead,
    Bosund,
}

impl Who {
    fn name(self) -> &'static str {
        match self {
            Who::Ui(c) => c.name(),
            Who::Lead => "lead",
            Who::Bosund => "bosund",
        }
    }
}

tokio::task_local! {
    /// Who the request being answered is from: set by the session around each request.
    static WHO: Who;
}

/// `fut`, answered as `who`'s: what it records in the audit log is theirs.
pub async fn as_who<F: Future>(who: Who, fut: F) -> F::Output {
    WHO.scope(who, fut).await
}

/// Who the request being answered is from (bosund itself outside of one).
pub fn who() -> Who {
    WHO.try_with(|w| *w).unwrap_or(Who::Bosund)
}

/// The hash the first entry of a log follows.
const GENESIS: &str = "genesis";

/// An entry as it is hashed: every field but its own hash, in this order.
#[derive(Serialize)]
struct Body<'a> {
    n: u64,
    at: Timestamp,
    who: &'a str,
    what: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    before: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    after: Option<&'a Value>,
    prev: &'a str,
}

fn sha(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The line of an entry: its body, then its hash, as the last field.
fn line_of(body: &Body<'_>) -> (String, String) {
    let text = serde_json::to_string(body).unwrap_or_default();
    let hash = sha(&text);
    let line = format!(
        "{},\"hash\":\"{hash}\"}}",
        text.strip_suffix('}').unwrap_or(&text)
    );
    (line, hash)
}

/// The end of the chain so far: the last entry's number and hash.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Tail {
    n: u64,
    hash: String,
}

pub struct AuditLog {
    path: PathBuf,
    anchor: PathBuf,
    tail: Mutex<Option<Tail>>,
}

impl AuditLog {
    /// The log of the state directory `root` (read when it is first written).
    pub fn new(root: &Path) -> AuditLog {
        AuditLog {
            path: root.join("audit.jsonl"),
            anchor: root.join("audit.anchor"),
            tail: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Tail>> {
        self.tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records `what`, done by whoever the request being answered is from, with what it was
    /// before and after (views, never secret values).
    pub fn record<T: Serialize>(&self, what: &str, before: Option<&T>, after: Option<&T>) {
        let (before, after) = (
            before.and_then(|b| serde_json::to_value(b).ok()),
            after.and_then(|a| serde_json::to_value(a).ok()),
        );
        // Nothing changed: nothing to record.
        if before.is_some() && before == after {
            return;
        }
        if let Err(e) = self.append(who(), what, before.as_ref(), after.as_ref()) {
            error!(path = %self.path.display(), error = %e, what, "could not write the audit log");
        }
    }

    fn append(
        &self,
        who: Who,
        what: &str,
        before: Option<&Value>,
        after: Option<&Value>,
    ) -> std::io::Result<()> {
        let mut tail = self.lock();
        let last = match tail.clone() {
            Some(t) => t,
            None => self.read_tail()?,
        };
        let body = Body {
            n: last.n + 1,
            at: Timestamp::now(),
            who: who.name(),
            what,
            before,
            after,
            prev: &last.hash,
        };
        let (line, hash) = line_of(&body);
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)?;
        f.write_all(format!("{line}\n").as_bytes())?;
        f.sync_data()?;
        *tail = Some(Tail { n: body.n, hash });
        Ok(())
    }

    /// The last entry's number and hash, from the file (or the anchor, or the start).
    fn read_tail(&self) -> std::io::Result<Tail> {
        let mut tail = self.anchor_tail();
        if let Ok(f) = File::open(&self.path) {
            for line in BufReader::new(f).lines() {
                let line = line?;
                if let Ok(e) = serde_json::from_str::<AuditEntry>(&line) {
                    tail = Tail {
                        n: e.n,
                        hash: e.hash,
                    };
                }
            }
        }
        Ok(tail)
    }

    /// Where the chain starts: after the last entry pruned, or at its beginning.
    fn anchor_tail(&self) -> Tail {
        std::fs::read_to_string(&self.anchor)
            .ok()
            .and_then(|t| {
                let (n, hash) = t.trim().split_once(' ')?;
                Some(Tail {
                    n: n.parse().ok()?,
                    hash: hash.to_string(),
                })
            })
            .unwrap_or(Tail {
                n: 0,
                hash: GENESIS.into(),
            })
    }

    /// The entries from `since` on (all kept when none), oldest first.
    pub fn read(&self, since: Option<Timestamp>) -> std::io::Result<Vec<AuditEntry>> {
        let _held = self.lock();
        let f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for line in BufReader::new(f).lines() {
            if let Ok(e) = serde_json::from_str::<AuditEntry>(&line?)
                && since.is_none_or(|s| e.at >= s)
            {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// Checks the chain from the anchor to the last entry: each line whole, as it was hashed,
    /// numbered one after the other, and following the one before.
    pub fn verify(&self) -> std::io::Result<AuditCheck> {
        let _held = self.lock();
        let mut last = self.anchor_tail();
        let f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(AuditCheck::Intact { entries: 0 });
            }
            Err(e) => return Err(e),
        };
        let mut entries = 0;
        for (i, line) in BufReader::new(f).lines().enumerate() {
            let line = line?;
            let at = i as u64 + 1;
            let broken = |why: String| Ok(AuditCheck::Broken { line: at, why });
            let Some((text, hash)) = split_hash(&line) else {
                return broken("it is not an entry of the log (no hash at its end)".into());
            };
            if sha(&text) != hash {
                return broken("it is not as it was written (its hash does not match)".into());
            }
            let Ok(e) = serde_json::from_str::<AuditEntry>(&line) else {
                return broken("it does not read as an entry".into());
            };
            if e.n != last.n + 1 {
                return broken(format!(
                    "entry {} follows entry {}: {} missing",
                    e.n,
                    last.n,
                    if e.n > last.n + 1 {
                        "entries are"
                    } else {
                        "the order is wrong, or entries are"
                    }
                ));
            }
            if e.prev != last.hash {
                return broken(format!(
                    "entry {} does not follow the entry before it (the chain is broken)",
                    e.n
                ));
            }
            last = Tail {
                n: e.n,
                hash: e.hash,
            };
            entries += 1;
        }
        Ok(AuditCheck::Intact { entries })
    }

    /// Removes the entries before `cutoff`, keeping the last one removed as the anchor the
    /// rest follows. How many were removed.
    pub fn prune(&self, cutoff: Timestamp) -> std::io::Result<u64> {
        let mut tail = self.lock();
        let Ok(f) = File::open(&self.path) else {
            return Ok(0);
        };
        let mut kept = Vec::new();
        let mut anchor = None;
        for line in BufReader::new(f).lines() {
            let line = line?;
            match serde_json::from_str::<AuditEntry>(&line) {
                Ok(e) if e.at < cutoff && kept.is_empty() => anchor = Some((e.n, e.hash)),
                _ => kept.push(line),
            }
        }
        let Some((n, hash)) = anchor.clone() else {
            return Ok(0);
        };
        let removed = n - self.anchor_tail().n;
        // The anchor first: a crash between the two leaves entries that still follow it.
        let tmp = self.anchor.with_extension("anchor.new");
        std::fs::write(&tmp, format!("{n} {hash}\n"))?;
        std::fs::rename(&tmp, &self.anchor)?;
        let tmp = self.path.with_extension("jsonl.new");
        let mut out = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        for line in &kept {
            out.write_all(format!("{line}\n").as_bytes())?;
        }
        out.sync_data()?;
        std::fs::rename(&tmp, &self.path)?;
        if kept.is_empty() {
            *tail = Some(Tail { n, hash });
        }
        Ok(removed)
    }
}

impl bosun_lead::tools::LeadAudit for AuditLog {
    fn lead_did(&self, what: &str, after: Value) {
        if let Err(e) = self.append(Who::Lead, what, None, Some(&after)) {
            error!(path = %self.path.display(), error = %e, what, "could not write the audit log");
        }
    }
}

/// A line's text as it was hashed (its body closed where the hash began) and the hash.
fn split_hash(line: &str) -> Option<(String, String)> {
    let (text, hash) = line.rsplit_once(",\"hash\":\"")?;
    let hash = hash.strip_suffix("\"}")?;
    (hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| (format!("{text}}}"), hash.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> (tempfile::TempDir, AuditLog) {
        let dir = tempfile::tempdir().expect("a folder");
        let log = AuditLog::new(dir.path());
        (dir, log)
    }

    #[test]
    fn entries_chain_and_an_edited_or_removed_one_is_found() -> std::io::Result<()> {
        let (_dir, log) = log();
        for n in 0..4 {
            log.append(
                Who::Ui(UiClient::Cli),
                &format!("agent set a{n}"),
                None,
                Some(&serde_json::json!({"n": n})),
            )?;
        }
        assert_eq!(log.verify()?, AuditCheck::Intact { entries: 4 });
        let entries = log.read(None)?;
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[0].prev, GENESIS);
        assert_eq!(entries[1].prev, entries[0].hash);
        assert_eq!(entries[3].who, "cli");

        let text = std::fs::read_to_string(&log.path)?;
        let edited = text.replacen("agent set a2", "agent set a9", 1);
        std::fs::write(&log.path, &edited)?;
        assert!(matches!(log.verify()?, AuditCheck::Broken { line: 3, .. }));

        let lines: Vec<&str> = text.lines().collect();
        let removed = format!("{}\n{}\n{}\n", lines[0], lines[1], lines[3]);
        std::fs::write(&log.path, removed)?;
        assert!(matches!(log.verify()?, AuditCheck::Broken { line: 3, .. }));
        std::fs::write(&log.path, &text)?;
        assert_eq!(log.verify()?, AuditCheck::Intact { entries: 4 });
        Ok(())
    }

    #[test]
    fn pruned_entries_leave_an_anchor_the_rest_and_the_next_follow() -> std::io::Result<()> {
        let (_dir, log) = log();
        log.append(Who::Lead, "old", None, None)?;
        log.append(Who::Lead, "old too", None, None)?;
        let cutoff = Timestamp::now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        log.append(Who::Bosund, "new", None, None)?;
        assert_eq!(
            log.prune(Timestamp::from_millis(cutoff.as_millis() + 1))?,
            2
        );
        assert_eq!(log.read(None)?.len(), 1);
        assert_eq!(log.verify()?, AuditCheck::Intact { entries: 1 });
        // A fresh bosund goes on from the file.
        let again = AuditLog::new(log.path.parent().expect("a folder"));
        again.append(Who::Bosund, "next", None, None)?;
        assert_eq!(again.verify()?, AuditCheck::Intact { entries: 2 });
        assert_eq!(again.read(None)?.last().map(|e| e.n), Some(4));
        // Taking the first kept entry away by hand is found.
        let text = std::fs::read_to_string(&again.path)?;
        let rest: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
        std::fs::write(&again.path, rest)?;
        assert!(matches!(
            again.verify()?,
            AuditCheck::Broken { line: 1, .. }
        ));
        Ok(())
    }
}
