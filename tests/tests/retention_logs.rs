//! Finished runs' logs and MCP call records go after bosund's retention, and the oldest of them
//! past `logs.max`; each run's summary stays and says its log was pruned, and `bosun logs` says
//! so in words. A live run's log, and a call that waits, are never touched. The store's file
//! gives back the space pruning freed on `bosun daemon compact`.

use std::path::Path;
use std::time::Duration;

use bosun_shared::ApprovalId;
use bosun_tests::{Bosun, short_id, wait_for};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// Copies of a decided approval written into the store, so that pruning frees pages enough for
/// the file to shrink when compacted.
const COPIES: usize = 3000;

fn approvals() -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new("approvals")
}

/// With bosund stopped: `COPIES` copies of the store's decided approval, each under an id of
/// its own (what a long history of decided calls leaves).
fn copy_decided_approval(db: &Path) -> anyhow::Result<()> {
    let db = Database::open(db)?;
    let row: Value = {
        let read = db.begin_read()?;
        let t = read.open_table(approvals())?;
        let first = t
            .iter()?
            .next()
            .ok_or_else(|| anyhow::anyhow!("no approval"))??;
        serde_json::from_slice(first.1.value())?
    };
    let txn = db.begin_write()?;
    {
        let mut t = txn.open_table(approvals())?;
        for n in 0..COPIES {
            let id = ApprovalId::new().to_string();
            let mut copy = row.clone();
            copy["id"] = json!(id);
            copy["key"] = json!(format!("copy-{n}"));
            t.insert(id.as_str(), serde_json::to_vec(&copy)?.as_slice())?;
        }
    }
    txn.commit()?;
    Ok(())
}

fn size(path: &Path) -> anyhow::Result<u64> {
    Ok(std::fs::metadata(path)?.len())
}

#[test]
fn logs_past_the_retention_go_their_summaries_stay_and_the_store_shrinks_when_compacted()
-> anyhow::Result<()> {
    let b = Bosun::new("retention_logs");
    let shell = json!([[{"tool": "Bash", "input": {"command": "echo hi"}}]]);
    b.add_fake_claude_agent("coder", &shell)?;

    // A finished run of an agent, whose call was allowed; its folder has an MCP call record
    // beside its log (written here as the gateway writes one line a call).
    let done = b.run_agent("coder", "go")?;
    let a = b.wait_approval()?;
    b.ok(&["approve", &short_id(&a)])?;
    assert_eq!(b.wait_ended(&done, WAIT)?["outcome"], "succeeded");
    let done_dir = b.home.join("runs").join(&done);
    std::fs::write(done_dir.join("mcp-calls.jsonl"), "{}\n")?;
    assert!(done_dir.join("log").is_file());
    let plain = b.ok(&["run", "--", "sh", "-c", "echo plain output"])?;
    let plain = plain.trim().to_string();
    b.wait_ended(&plain, WAIT)?;
    assert!(b.ok(&["logs", &plain])?.contains("plain output"));

    // A long history of decided calls, then bosund again.
    b.ok(&["daemon", "stop"])?;
    copy_decided_approval(&b.home.join("bosun.redb"))?;
    // A run still going, and a call that waits.
    let live = b.ok(&["run", "--", "sh", "-c", "echo still going; sleep 600"])?;
    let live = live.trim().to_string();
    wait_for("the live run's output", WAIT, || {
        Ok(b.ok(&["logs", &live])?
            .contains("still going")
            .then_some(()))
    })?;
    let going = b.run_agent("coder", "go again")?;
    let waiting = wait_for("the second call to wait", WAIT, || {
        Ok(b.waiting_approvals()?
            .into_iter()
            .find(|w| w["run"] == going.as_str()))
    })?;
    let store = b.home.join("bosun.redb");
    let before = size(&store)?;

    b.ok(&["daemon", "set", "retention=1s"])?;
    wait_for("the finished runs' logs to be pruned", WAIT, || {
        b.ok(&["daemon", "set", "retention=1s"])?;
        let pruned = |run: &str| -> anyhow::Result<bool> {
            Ok(b.show(run)?["log_pruned"]["why"] == "retention")
        };
        // Approvals are pruned in the round's first commits, the runs' records in its last.
        Ok((pruned(&done)? && pruned(&plain)?).then_some(()))
    })?;

    // The finished runs' files are gone; their summaries stay and say why.
    for name in ["log", "runner.log", "mcp-calls.jsonl"] {
        assert!(!done_dir.join(name).exists(), "{name} is still there");
    }
    assert!(!b.home.join("runs").join(&plain).join("log").exists());
    let shown = b.show(&done)?;
    assert_eq!(shown["outcome"], "succeeded", "{shown:#}");
    assert_eq!(shown["agent"]["decisions_pruned"], 1, "{shown:#}");
    assert!(shown["log_pruned"]["bytes"].as_u64() > Some(0), "{shown:#}");
    let words = b.ok(&["show", &done])?;
    assert!(
        words
            .contains("after bosund's retention period): its output and MCP call records are gone"),
        "{words}"
    );
    let e = b.fails(&["logs", &done])?;
    assert!(
        e.contains(&format!(
            "the log and MCP call records of run {} were pruned at",
            &done[..8]
        )) && e.contains("the run ended longer ago than bosund's retention"),
        "{e}"
    );

    // What is still going, and what waits, are untouched.
    assert!(b.home.join("runs").join(&live).join("log").is_file());
    assert!(b.ok(&["logs", &live])?.contains("still going"));
    assert!(b.show(&live)?["log_pruned"].is_null());
    let left = b.all_approvals()?;
    assert_eq!(left.len(), 1, "{left:#?}");
    assert_eq!(left[0]["id"], waiting["id"], "{left:#?}");
    assert_eq!(left[0]["state"], "waiting");

    // The file gives the freed space back.
    let compacted = b.json(&["daemon", "compact"])?;
    let after = size(&store)?;
    assert!(
        after < before,
        "the store was {before} bytes before pruning and is {after} after compacting: {compacted:#}"
    );
    assert_eq!(compacted["last_compact"]["after"], after);
    assert_eq!(compacted["store_bytes"], after);
    assert!(
        b.ok(&["daemon", "compact"])?
            .starts_with("compacted bosun.redb: ")
    );
    // Everything still reads after the compaction.
    assert_eq!(b.show(&done)?["outcome"], "succeeded");
    assert!(b.ok(&["logs", &live])?.contains("still going"));

    // The live run and the waiting call go on as before.
    b.ok(&["approve", &short_id(&waiting)])?;
    assert_eq!(b.wait_ended(&going, WAIT)?["outcome"], "succeeded");
    b.ok(&["stop", &live])?;
    b.wait_ended(&live, WAIT)?;
    b.finish()
}

#[test]
fn past_logs_max_the_oldest_runs_logs_go_first() -> anyhow::Result<()> {
    let b = Bosun::new("retention_logs_max");
    let e = b.fails(&["daemon", "set", "logs.max=20"])?;
    assert!(
        e.contains("`logs.max=20`: it is 20 bytes, under the least of 1M")
            && e.contains("logs.max takes a size from 1M, such as 20G or 500M, or off"),
        "{e}"
    );
    // Two runs of about 0.9 MiB of output each, one after the other.
    let write = "head -c 900000 /dev/zero | tr '\\0' a; echo";
    let older = b.ok(&["run", "--", "sh", "-c", write])?.trim().to_string();
    b.wait_ended(&older, WAIT)?;
    let newer = b.ok(&["run", "--", "sh", "-c", write])?.trim().to_string();
    b.wait_ended(&newer, WAIT)?;

    b.ok(&["daemon", "set", "logs.max=1M"])?;
    wait_for("the older run's log to be pruned", WAIT, || {
        Ok((b.show(&older)?["log_pruned"]["why"] == "size").then_some(()))
    })?;
    assert!(b.show(&newer)?["log_pruned"].is_null());
    assert!(b.home.join("runs").join(&newer).join("log").is_file());
    assert!(!b.home.join("runs").join(&older).join("log").exists());
    assert!(b.ok(&["logs", &newer])?.contains("aaaa"));
    let e = b.fails(&["logs", &older])?;
    assert!(e.contains("took more than bosund's logs.max"), "{e}");
    let status = b.ok(&["daemon", "status"])?;
    assert!(
        status.contains("logs.max      the finished runs' logs take 1 MiB at most"),
        "{status}"
    );
    b.ok(&["daemon", "set", "logs.max=off"])?;
    assert!(b.json(&["daemon", "status"])?["logs_max"].is_null());
    b.finish()
}
