use bosun_protocol::ui::Event;
use serde_json::{Value, json};

use super::Alert;

const RUN: &str = "01j9aaaaaaaaaaaaaaaaaaaar1";
const CARD: &str = "01j9aaaaaaaaaaaaaaaaaaaac1";

fn event(v: Value) -> Event {
    serde_json::from_value(v).expect("an event")
}

fn approval(state: &str, preview: &str) -> Event {
    approval_of("execute", state, preview)
}

fn approval_of(class: &str, state: &str, preview: &str) -> Event {
    event(json!({
        "event": "approval_changed",
        "approval": {
            "id": "01j9aaaaaaaaaaaaaaaaaaaaa9", "short_id": "aaa9", "run": RUN,
            "agent": "coder", "card": CARD, "tool": "Bash", "class": class,
            "why": "the agent's approval mode asks before commands", "preview": preview,
            "input": {}, "asked_at": 1, "deadline": 2, "attended": true, "state": state,
            "decided_by": null, "decided_at": null, "message": null, "delivered_at": null
        }
    }))
}

fn run(outcome: Option<&str>) -> Event {
    let mut run = json!({
        "id": RUN, "short_id": "r1ab", "name": "build", "state": "exited",
        "program": "sh", "args": [], "cwd": "/tmp", "created_at": 1, "last_seq": 0,
        "agent": { "agent_name": "coder", "servers": [], "claude_signs_in": [], "tools": [], "calls": [] }
    });
    if let Some(o) = outcome {
        run["outcome"] = json!(o);
        run["exit"] =
            json!({ "outcome": o, "code": 2, "signal": null, "reason": "exited with status 2" });
    }
    event(json!({ "event": "run_changed", "run": run }))
}

#[test]
fn a_call_that_starts_waiting_says_who_asks_why_and_how_to_answer() {
    let a = Alert::of(&approval("waiting", "$ rm -rf build\n  in /work")).expect("an alert");
    assert_eq!(a.summary, "coder asks to use Bash");
    assert_eq!(
        a.body,
        "execute · asks because the agent's approval mode asks before commands\n\
         $ rm -rf build\n  in /work\n\
         bosun approve aaa9 · bosun deny aaa9 (card aaaaaaaac1)"
            .replace(
                "aaaaaaaac1",
                &CARD.parse::<bosun_shared::CardId>().expect("id").short()
            )
    );
    assert_eq!(a.item, "approval 01j9aaaaaaaaaaaaaaaaaaaaa9");
    // Its decision is no alert; the same call waiting again is the same item.
    assert_eq!(Alert::of(&approval("allowed", "")), None);
    assert_eq!(
        Alert::of(&approval("waiting", "other")).map(|a| a.item),
        Some(a.item)
    );
}

#[test]
fn a_run_that_reached_its_budget_says_so_first() {
    let a = Alert::of(&approval_of("budget", "waiting", "allow $2.00 more")).expect("an alert");
    assert_eq!(
        a.summary,
        "coder's run: the agent's approval mode asks before commands"
    );
}

#[test]
fn a_long_preview_is_cut_to_a_few_short_lines() {
    let long = "x".repeat(500);
    let preview = format!("{long}\nb\nc\nd\ne");
    let a = Alert::of(&approval("waiting", &preview)).expect("an alert");
    let lines: Vec<&str> = a.body.lines().collect();
    assert_eq!(lines[1].chars().count(), 121, "cut, with an ellipsis");
    assert_eq!(&lines[2..5], ["b", "c", "…"]);
}

#[test]
fn a_failed_lost_or_timed_out_run_is_an_alert_and_any_other_end_is_not() {
    let a = Alert::of(&run(Some("failed"))).expect("an alert");
    assert_eq!(a.summary, "Run build failed");
    assert_eq!(
        a.body,
        "agent coder: exited with status 2\nbosun show r1ab · bosun logs r1ab"
    );
    assert_eq!(
        Alert::of(&run(Some("lost"))).map(|a| a.summary),
        Some("Run build was lost".into())
    );
    assert_eq!(
        Alert::of(&run(Some("timed_out"))).map(|a| a.summary),
        Some("Run build ran out of time".into())
    );
    for quiet in [Some("succeeded"), Some("stopped"), None] {
        assert_eq!(Alert::of(&run(quiet)), None, "{quiet:?}");
    }
}

#[test]
fn a_pending_action_of_the_lead_and_the_boards_notifications_are_alerts() {
    let pending = event(json!({
        "event": "pending_changed",
        "action": {
            "id": "01j9aaaaaaaaaaaaaaaaaaaaa7", "short_id": "aaa7",
            "chat": "01j9aaaaaaaaaaaaaaaaaaaac3", "answer": "01j9aaaaaaaaaaaaaaaaaaaaa2",
            "tool": "card_add", "args": {}, "cause": "WebFetch", "at": 1, "state": "waiting",
            "line": "add the card `Fix login` to Backlog", "preview": "",
            "would_fail": null, "result": null
        }
    }));
    let a = Alert::of(&pending).expect("an alert");
    assert_eq!(a.summary, "The lead waits for your OK");
    assert_eq!(
        a.body,
        "add the card `Fix login` to Backlog\nbosun approve aaa7 · bosun discard aaa7"
    );
    let merged = event(json!({
        "event": "notification", "kind": "merged", "text": "the lead merged #12 of card Fix login",
        "card": CARD, "at": 5
    }));
    let a = Alert::of(&merged).expect("an alert");
    assert_eq!(a.summary, "A card was merged");
    assert!(
        a.body
            .starts_with("the lead merged #12 of card Fix login\nbosun card show ")
    );
    let chat = event(json!({
        "event": "chat_message", "chat": "01j9aaaaaaaaaaaaaaaaaaaac3",
        "message": { "n": 1, "kind": "lead", "text": "hi", "at": 1, "failed": false }
    }));
    assert_eq!(Alert::of(&chat), None);
}
