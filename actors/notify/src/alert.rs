//! Which of bosund's events the person hears of on the desktop, and in which words: a run's
//! tool call or a pending action of the lead that starts waiting (with the command that
//! answers it), a run that failed, was lost or ran out of time, and the board's own
//! notifications (a card merged, a card that needs the person). Everything else is not an
//! alert. Pure: no D-Bus here.

use bosun_protocol::ui::{Event, NotificationKind};
use bosun_shared::run::Outcome;

/// What one notification says, and the item it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    /// The item (an approval, a pending action, a run, a board notification): a person hears
    /// of each once.
    pub item: String,
    pub summary: String,
    /// Plain text; the desktop side escapes it for servers that read markup.
    pub body: String,
}

/// How many lines of a call's preview an alert carries.
const PREVIEW_LINES: usize = 3;
/// The longest line of a preview an alert carries, in characters.
const LINE_CHARS: usize = 120;

impl Alert {
    /// The alert `event` is, if it is one.
    pub fn of(event: &Event) -> Option<Alert> {
        match event {
            Event::ApprovalChanged { approval: a } if a.state == "waiting" => {
                let agent = a.agent.as_deref().unwrap_or("an agent");
                let card = a
                    .card
                    .map(|c| format!(" (card {})", c.short()))
                    .unwrap_or_default();
                let mut body = format!("{} · asks because {}\n", a.class, a.why);
                body.push_str(&preview(&a.preview));
                body.push_str(&format!(
                    "bosun approve {id} · bosun deny {id}{card}",
                    id = a.short_id
                ));
                // A run that reached its budget says so first: its call is only what waits.
                let summary = if a.class == "budget" {
                    format!("{agent}'s run: {}", a.why)
                } else {
                    format!("{agent} asks to use {}", a.tool)
                };
                Some(Alert {
                    item: format!("approval {}", a.id),
                    summary,
                    body,
                })
            }
            Event::PendingChanged { action: p } if p.state == "waiting" => {
                let mut body = format!("{}\n", p.line);
                body.push_str(&preview(&p.preview));
                body.push_str(&format!(
                    "bosun approve {id} · bosun discard {id}",
                    id = p.short_id
                ));
                Some(Alert {
                    item: format!("action {}", p.id),
                    summary: "The lead waits for your OK".to_string(),
                    body,
                })
            }
            Event::RunChanged { run } => {
                let how = match run.outcome? {
                    Outcome::Failed => "failed",
                    Outcome::Lost => "was lost",
                    Outcome::TimedOut => "ran out of time",
                    Outcome::Succeeded | Outcome::Stopped => return None,
                };
                let name = run.name.as_deref().unwrap_or(&run.short_id);
                let who = run
                    .agent
                    .as_ref()
                    .map(|a| format!("agent {}: ", a.agent_name))
                    .unwrap_or_default();
                let why = run
                    .exit
                    .as_ref()
                    .map(|e| e.reason.clone())
                    .unwrap_or_default();
                Some(Alert {
                    item: format!("run {}", run.id),
                    summary: format!("Run {name} {how}"),
                    body: format!(
                        "{who}{why}\nbosun show {id} · bosun logs {id}",
                        id = run.short_id
                    ),
                })
            }
            Event::Notification {
                kind,
                text,
                card,
                at,
                ..
            } => {
                let summary = match kind {
                    NotificationKind::Merged => "A card was merged",
                    NotificationKind::NeedsYou => "A card needs you",
                    NotificationKind::SignIn => "Sign in again",
                };
                let look = card
                    .map(|c| format!("\nbosun card show {}", c.short()))
                    .unwrap_or_default();
                Some(Alert {
                    item: format!("notification {kind:?} {} {text}", at.as_millis()),
                    summary: summary.to_string(),
                    body: format!("{text}{look}"),
                })
            }
            // A decided call or action, and every event that tells of no item for the person.
            Event::ApprovalChanged { .. }
            | Event::PendingChanged { .. }
            | Event::Log { .. }
            | Event::LogLagged { .. }
            | Event::LogProgress { .. }
            | Event::LogEnd { .. }
            | Event::LogFailed { .. }
            | Event::ChatMessage { .. }
            | Event::StorageFault { .. }
            | Event::StorageRecovered { .. } => None,
        }
    }
}

/// The first lines of a preview, each cut to a length a notification can show, each ending in
/// a newline (nothing for an empty preview).
fn preview(text: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    for line in lines.iter().take(PREVIEW_LINES) {
        let mut cut: String = line.chars().take(LINE_CHARS).collect();
        if cut.len() < line.len() {
            cut.push('…');
        }
        out.push_str(&cut);
        out.push('\n');
    }
    if lines.len() > PREVIEW_LINES {
        out.push_str("…\n");
    }
    out
}

#[cfg(test)]
mod tests;
