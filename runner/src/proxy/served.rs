//! A fenced network served: the proxy on the first listener its namespace handed back, a
//! loopback forward on each other, and every connection a line in the run's log. The run's
//! program and each MCP server its gateway starts for a fenced run get one each, with lists of
//! their own.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::asking::{Asking, Person};
use super::{Connection, NetRules, ServerList};
use crate::fence;

/// How long the connections still open when the served programs are gone may take to be noted.
const NOTES_GRACE: Duration = Duration::from_secs(2);

/// Whose network is served: it names the log's lines and the words of a refusal.
pub enum Whose {
    /// The run's program: a host its list does not have is asked of the person.
    Program(Arc<dyn Person>),
    /// An MCP server the gateway started: a host its list does not have is refused (a server
    /// has no person's turn to ask in), with how to add it.
    Server(ServerList),
}

/// The proxy and forwards of a fenced network; they stop taking connections when this is
/// dropped or finished.
pub struct NetServed {
    tasks: Vec<JoinHandle<()>>,
    notes: Option<JoinHandle<()>>,
}

impl NetServed {
    /// Stops taking connections, and notes those still open as they close (for a short while).
    pub async fn finish(mut self) {
        for t in &self.tasks {
            t.abort();
        }
        if let Some(notes) = self.notes.take() {
            let _ = tokio::time::timeout(NOTES_GRACE, notes).await;
        }
    }
}

impl Drop for NetServed {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Serves `net` on the `listeners` its namespace handed back, each connection made or refused
/// given to `note` as a line of the run's log.
pub fn serve_net(
    net: &fence::Net,
    listeners: fence::ns::Listeners,
    whose: Whose,
    note: impl Fn(String) + Send + 'static,
) -> NetServed {
    let (tx, mut rx) = mpsc::unbounded_channel::<Connection>();
    let mut tasks = Vec::new();
    let (prefix, server, person) = match whose {
        Whose::Program(person) => ("bosun's proxy".to_string(), None, Some(person)),
        Whose::Server(list) => (
            format!("bosun's proxy (server {})", list.name),
            Some(list),
            None,
        ),
    };
    let (rules, asking) = match NetRules::of(&net.allow, &net.quiet) {
        Ok(rules) => (
            Arc::new(NetRules { server, ..rules }),
            person.map(|p| Arc::new(Asking::new(p))),
        ),
        Err(e) => {
            // The network stays closed: nothing is served, nothing is asked for.
            note(format!(
                "{prefix} refused its list of hosts ({e}), so it reaches no host"
            ));
            (Arc::new(NetRules::default()), None)
        }
    };
    let mut listeners = listeners.into_iter().map(|l| {
        l.set_nonblocking(true)?;
        tokio::net::TcpListener::from_std(l)
    });
    match listeners.next() {
        Some(Ok(l)) => tasks.push(tokio::spawn(super::serve(l, rules, asking, tx.clone()))),
        Some(Err(e)) => note(format!("{prefix} could not serve: {e}")),
        None => {}
    }
    for ((port, allow), l) in net.forwards.iter().zip(listeners) {
        match l {
            Ok(l) => {
                let to = std::net::SocketAddr::from(([127, 0, 0, 1], *port));
                tasks.push(tokio::spawn(super::forward(
                    l,
                    to,
                    allow.why.clone(),
                    tx.clone(),
                )));
            }
            Err(e) => note(format!("{prefix} could not forward port {port}: {e}")),
        }
    }
    drop(tx);
    let notes = tokio::spawn(async move {
        while let Some(c) = rx.recv().await {
            note(format!("{prefix}: {c}"));
        }
    });
    NetServed {
        tasks,
        notes: Some(notes),
    }
}
