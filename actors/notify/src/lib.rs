//! bosun-notify: desktop notifications. bosund's events are read as any UI reads them (a
//! subscription to the Events actor, taken anew when that actor restarts); those that are
//! alerts ([`Alert::of`]: a call or an action that starts waiting for the person, a failed run,
//! the board's own notifications) are shown through the desktop's notification service, each
//! item once. When several come at once, the first few are shown and one more says how many
//! others there are, so a burst of failed runs does not bury the desktop. The switch (`bosun
//! daemon set notify=on|off`) is read as each alert comes; what could not be shown is said in
//! `daemon status` and logged once, never retried (the inbox has it).

pub mod alert;
mod desktop;

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bosun_protocol::runs::NotifyView;
use bosun_protocol::ui::ServerFrame;
use tokio::sync::mpsc;
use tracing::{info, warn};

pub use alert::Alert;
pub use desktop::ShowError;

/// A fresh subscription to bosund's events, or none while the Events actor is (re)starting.
pub type Subscribe = Box<dyn Fn() -> Option<mpsc::UnboundedReceiver<ServerFrame>> + Send + Sync>;

/// The most alerts shown for what came at once; past it, one more alert counts the rest.
const BURST: usize = 3;
/// How many items are remembered as told (the oldest are forgotten first).
const REMEMBERED: usize = 10_000;
/// The pause before subscribing again to an Events actor that is restarting.
const RESUBSCRIBE: Duration = Duration::from_millis(100);

/// bosund's one notifier: its switch and how it fares, shared with `daemon status`.
#[derive(Clone)]
pub struct Notifier(Arc<Shared>);

struct Shared {
    on: AtomicBool,
    shown: AtomicU64,
    problem: Mutex<Option<String>>,
}

impl Notifier {
    pub fn new(on: bool) -> Self {
        Self(Arc::new(Shared {
            on: AtomicBool::new(on),
            shown: AtomicU64::new(0),
            problem: Mutex::new(None),
        }))
    }

    /// Turns notifications on or off, from the next alert.
    pub fn set(&self, on: bool) {
        self.0.on.store(on, Ordering::SeqCst);
    }

    pub fn view(&self) -> NotifyView {
        NotifyView {
            on: self.0.on.load(Ordering::SeqCst),
            shown: self.0.shown.load(Ordering::SeqCst),
            problem: self.0.problem.lock().ok().and_then(|p| p.clone()),
        }
    }

    /// Reads the events `subscribe` gives and shows their alerts on the desktop, until the task
    /// is aborted.
    pub fn start(&self, subscribe: Subscribe) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move { me.deliver(subscribe, desktop::show).await })
    }

    /// The notifier's loop, with the way an alert is shown given (the desktop's service, or a
    /// test's list).
    async fn deliver<S, F>(&self, subscribe: Subscribe, mut show: S)
    where
        S: FnMut(Alert) -> F,
        F: Future<Output = Result<(), ShowError>>,
    {
        let mut told = Told::default();
        loop {
            let Some(mut rx) = subscribe() else {
                tokio::time::sleep(RESUBSCRIBE).await;
                continue;
            };
            while let Some(first) = rx.recv().await {
                // Whatever else has come by now is one burst.
                let mut frames = vec![first];
                while let Ok(more) = rx.try_recv() {
                    frames.push(more);
                }
                let alerts: Vec<Alert> = frames
                    .iter()
                    .filter_map(|f| match f {
                        ServerFrame::Event(e) => Alert::of(e),
                        ServerFrame::Response { .. } | ServerFrame::Error(_) => None,
                    })
                    .filter(|a| told.first(&a.item))
                    .collect();
                if alerts.is_empty() || !self.0.on.load(Ordering::SeqCst) {
                    continue;
                }
                for alert in burst(alerts) {
                    let shown = show(alert).await;
                    self.fared(shown);
                }
            }
            // The Events actor stopped (it is being restarted): subscribe to the next one.
            tokio::time::sleep(RESUBSCRIBE).await;
        }
    }

    fn fared(&self, shown: Result<(), ShowError>) {
        let Ok(mut problem) = self.0.problem.lock() else {
            return;
        };
        match shown {
            Ok(()) => {
                self.0.shown.fetch_add(1, Ordering::SeqCst);
                if problem.take().is_some() {
                    info!("desktop notifications are shown again");
                }
            }
            Err(e) => {
                if problem.is_none() {
                    warn!(error = %e, "a desktop notification could not be shown");
                }
                *problem = Some(e.to_string());
            }
        }
    }
}

/// The alerts to show for `alerts`, which came at once: all of them, or the first few and one
/// that counts the rest.
fn burst(mut alerts: Vec<Alert>) -> Vec<Alert> {
    if alerts.len() <= BURST {
        return alerts;
    }
    let rest = alerts.split_off(BURST - 1);
    alerts.push(Alert {
        item: String::new(),
        summary: format!("{} more for you from bosun", rest.len()),
        body: "bosun inbox shows what waits for you; bosun ps --all, how runs ended".to_string(),
    });
    alerts
}

/// The items already told, the newest [`REMEMBERED`] of them.
#[derive(Default)]
struct Told {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl Told {
    /// Whether `item` is told for the first time (and remembers it).
    fn first(&mut self, item: &str) -> bool {
        if !self.set.insert(item.to_string()) {
            return false;
        }
        self.order.push_back(item.to_string());
        if self.order.len() > REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        true
    }
}

#[cfg(test)]
mod tests;
