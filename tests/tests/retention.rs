//! Decided approvals and finished runs' decision details are pruned once older than bosund's
//! retention (`bosun daemon set retention=…`), the run's summary kept; what still waits, and a
//! run still going, are left alone; a bad retention is refused with the reason.

use std::time::Duration;

use bosun_tests::{Bosun, short_id, wait_for};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

#[test]
fn what_is_older_than_the_retention_is_pruned_and_what_waits_is_kept() -> anyhow::Result<()> {
    let b = Bosun::new("retention");
    let shell = json!([[{"tool": "Bash", "input": {"command": "echo hi"}}]]);
    b.add_fake_claude_agent("coder", &shell)?;
    let status = b.json(&["daemon", "status"])?;
    assert_eq!(
        status["retention_ms"],
        30 * 86_400_000u64,
        "30 days unless set"
    );

    // A run whose call was allowed, and which ended.
    let done = b.run_agent("coder", "go")?;
    let a = b.wait_approval()?;
    b.ok(&["approve", &short_id(&a)])?;
    assert_eq!(b.wait_ended(&done, WAIT)?["outcome"], "succeeded");
    // A run whose call still waits.
    let going = b.run_agent("coder", "go again")?;
    let waiting = wait_for("the second call to wait", WAIT, || {
        Ok(b.waiting_approvals()?
            .into_iter()
            .find(|w| w["run"] == going))
    })?;
    assert_eq!(b.all_approvals()?.len(), 2);

    let e = b.fails(&["daemon", "set", "retention=0s"])?;
    assert!(
        e.contains("`retention=0s`: retention takes a time from 1s to 3650d, such as 30d or 12h"),
        "{e}"
    );
    b.ok(&["daemon", "set", "retention=1s"])?;
    // Once the decided call is older than a second, a round (set again to run one now) prunes.
    // (The run ended a moment after its call was decided: both go once older than a second.)
    wait_for(
        "the decided approval and the run's decisions to be pruned",
        WAIT,
        || {
            b.ok(&["daemon", "set", "retention=1s"])?;
            let pruned = b.show(&done)?["agent"]["decisions_pruned"] == 1;
            Ok((b.all_approvals()?.len() == 1 && pruned).then_some(()))
        },
    )?;
    let left = b.all_approvals()?;
    assert_eq!(
        left[0]["id"], waiting["id"],
        "what waits is kept: {left:#?}"
    );
    let shown = b.show(&done)?;
    assert_eq!(shown["outcome"], "succeeded", "the run's summary is kept");
    assert!(
        shown["agent"]["decisions"]
            .as_array()
            .is_none_or(|d| d.is_empty()),
        "{shown:#}"
    );
    assert_eq!(shown["agent"]["decisions_pruned"], 1, "{shown:#}");
    let words = b.ok(&["show", &done])?;
    assert!(
        words.contains("1 pruned after bosund's retention period"),
        "{words}"
    );
    let status = b.ok(&["daemon", "status"])?;
    assert!(
        status.contains(
            "retention     decided approvals and finished runs' decision details, logs and MCP call records kept 1s"
        ),
        "{status}"
    );
    // The last round is in `daemon status`: the one that pruned, or a later one (the retention
    // was set again while waiting) that found nothing left to prune.
    assert!(
        status.contains("last pruned   ")
            && status.contains("decided approvals, the decision details of"),
        "{status}"
    );
    let last = &b.json(&["daemon", "status"])?["last_prune"];
    assert!(
        last["ended_at"].as_u64().is_some()
            && last["took_ms"].as_u64().is_some()
            && last["approvals"].as_u64() <= Some(1),
        "{last:#}"
    );

    // The run still going keeps its call, which is decided as before.
    b.ok(&["approve", &short_id(&waiting)])?;
    assert_eq!(b.wait_ended(&going, WAIT)?["outcome"], "succeeded");
    assert_eq!(
        b.show(&going)?["agent"]["decisions"][0]["decision"],
        "allowed"
    );
    b.finish()
}
