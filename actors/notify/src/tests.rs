//! The notifier's loop against a list instead of the desktop: each item once, bursts counted,
//! the switch read as alerts come, a restarted Events actor subscribed to again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bosun_protocol::ui::{Event, ServerFrame};
use serde_json::json;
use tokio::sync::mpsc;

use super::{Notifier, ShowError, Subscribe};

fn failed_run(n: u32) -> ServerFrame {
    let id = format!("01j9aaaaaaaaaaaaaaaaaaa{n:03}");
    let run = json!({
        "id": id, "short_id": format!("r{n}"), "state": "exited", "outcome": "failed",
        "program": "false", "args": [], "cwd": "/tmp", "created_at": 1, "last_seq": 0
    });
    let event: Event =
        serde_json::from_value(json!({ "event": "run_changed", "run": run })).expect("an event");
    ServerFrame::Event(event)
}

/// A notifier under test: each subscription's sender as it is taken, the summaries of what it
/// showed, and its task.
struct UnderTest {
    n: Notifier,
    /// The first subscription's sender.
    tx: mpsc::UnboundedSender<ServerFrame>,
    subs: mpsc::UnboundedReceiver<mpsc::UnboundedSender<ServerFrame>>,
    shown: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

/// A notifier whose events are sent through the senders it subscribes with, and whose shown
/// alerts' summaries go to a list (an alert about run r13 is not shown: the desktop does not
/// answer).
async fn notifier() -> UnderTest {
    let n = Notifier::new(true);
    let (subs_tx, subs_rx) = mpsc::unbounded_channel();
    let subscribe: Subscribe = Box::new(move || {
        let (tx, rx) = mpsc::unbounded_channel();
        subs_tx.send(tx).ok()?;
        Some(rx)
    });
    let shown = Arc::new(Mutex::new(Vec::new()));
    let list = shown.clone();
    let me = n.clone();
    let task = tokio::spawn(async move {
        me.deliver(subscribe, move |a| {
            let list = list.clone();
            let summary = a.summary.clone();
            async move {
                if summary.contains("r13") {
                    return Err(ShowError::NoAnswer);
                }
                list.lock().expect("list").push(summary);
                Ok(())
            }
        })
        .await
    });
    let mut subs = subs_rx;
    let tx = subs.recv().await.expect("subscribed");
    UnderTest {
        n,
        tx,
        subs,
        shown,
        task,
    }
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test]
async fn each_item_once_a_burst_counted_and_off_means_nothing_shown() {
    let UnderTest {
        n, tx, shown, task, ..
    } = notifier().await;
    tx.send(failed_run(1)).expect("sent");
    settle().await;
    tx.send(failed_run(1)).expect("sent");
    settle().await;
    assert_eq!(*shown.lock().expect("list"), ["Run r1 failed"]);
    // Five at once: two shown and one that counts the other three.
    for i in 2..7 {
        tx.send(failed_run(i)).expect("sent");
    }
    settle().await;
    assert_eq!(
        shown.lock().expect("list")[1..],
        [
            "Run r2 failed",
            "Run r3 failed",
            "3 more for you from bosun"
        ]
    );
    assert_eq!(n.view().shown, 4);
    // Off: nothing shown, and the item is not told later either.
    n.set(false);
    tx.send(failed_run(7)).expect("sent");
    settle().await;
    n.set(true);
    tx.send(failed_run(7)).expect("sent");
    settle().await;
    assert_eq!(shown.lock().expect("list").len(), 4);
    assert!(n.view().problem.is_none());
    task.abort();
}

#[tokio::test]
async fn a_failure_is_said_until_one_is_shown_and_a_restarted_events_actor_is_followed() {
    let UnderTest {
        n,
        tx,
        mut subs,
        shown,
        task,
    } = notifier().await;
    tx.send(failed_run(13)).expect("sent");
    settle().await;
    let problem = n.view().problem.expect("a problem said");
    assert!(problem.contains("did not answer"), "{problem}");
    // The Events actor restarts: its subscribers' senders are dropped.
    drop(tx);
    let tx = tokio::time::timeout(Duration::from_secs(2), subs.recv())
        .await
        .expect("subscribed again")
        .expect("a sender");
    tx.send(failed_run(14)).expect("sent");
    settle().await;
    assert_eq!(*shown.lock().expect("list"), ["Run r14 failed"]);
    assert_eq!(n.view().problem, None, "shown again");
    task.abort();
}
