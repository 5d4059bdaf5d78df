//! Showing an alert through the desktop's notification service: a `Notify` call to
//! `org.freedesktop.Notifications` on the session bus of bosund's environment
//! (`DBUS_SESSION_BUS_ADDRESS`, which a systemd user service and a desktop session both give).

use std::time::Duration;

use notify_rust::{Notification, Timeout};

use crate::alert::Alert;

/// How long a notification service has to take one.
const ANSWER_LIMIT: Duration = Duration::from_secs(5);

/// Why an alert was not shown.
#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    #[error("desktop notifications could not be shown: {0}; the inbox still has everything")]
    Unreachable(String),
    #[error("the desktop notification service did not answer within {}s", ANSWER_LIMIT.as_secs())]
    NoAnswer,
}

/// Shows `alert` once, as bosun.
pub async fn show(alert: Alert) -> Result<(), ShowError> {
    let mut n = Notification::new();
    n.appname("bosun")
        .summary(&alert.summary)
        .body(&escape(&alert.body))
        .timeout(Timeout::Default);
    match tokio::time::timeout(ANSWER_LIMIT, n.show_async()).await {
        Ok(Ok(_handle)) => Ok(()),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "the session bus refused the notification");
            Err(ShowError::Unreachable(why_unreachable(&e.to_string())))
        }
        Err(_) => Err(ShowError::NoAnswer),
    }
}

/// What keeps the notification from the desktop, in the person's words rather than the bus's
/// (the bus's own is in bosund's log).
fn why_unreachable(raw: &str) -> String {
    if raw.contains("ServiceUnknown") || raw.contains("org.freedesktop.Notifications") {
        return "no notification service runs in the desktop session: start one (the desktop's own, or dunst), or turn notifications off".into();
    }
    if raw.contains("DBUS_SESSION_BUS_ADDRESS")
        || raw.contains("No such file")
        || raw.contains("Connection refused")
        || raw.contains("os error")
    {
        return "bosund has no desktop session bus to reach (it was started outside the desktop session): start bosun from the desktop, or turn notifications off".into();
    }
    let first = raw.lines().next().unwrap_or_default();
    let short: String = first.chars().take(120).collect();
    format!("the session bus said: {short}")
}

/// The body as text for a service that reads markup (most do: a `<` in a command line must
/// not start a tag); the summary is plain text by the specification.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_in_a_body_is_shown_as_text() {
        assert_eq!(
            super::escape("cat <a.txt >b.txt && echo <b>"),
            "cat &lt;a.txt &gt;b.txt &amp;&amp; echo &lt;b&gt;"
        );
    }
}
