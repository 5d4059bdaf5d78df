//! A host the run's list refuses is asked for instead of refused: the proxy asks the person
//! (through [`Person`], which bosund's approvals answer) and holds the client's connection,
//! reading nothing past its request head, until the answer.
//!
//! **Invariant:** one ask per host and port at a time: connections to a host that is being asked
//! for wait on that one ask, and a host allowed stays allowed for the rest of the run (the
//! runner's life), so each host and port is asked for at most once while its answer is yes. A
//! denial is not remembered: the next connection asks again, since a person who said no to one
//! attempt may say yes to the next, and an ask that ran out of time said nothing.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::How;
use super::rules::{Decision, Target};

/// What came of one ask for a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostAnswer {
    /// Allowed, by `by` (the person, or a verdict they saved), in words.
    Allowed { by: String },
    /// Denied: by whom and why, in words (the person's message when they gave one).
    Denied { reason: String },
}

/// Asks whoever decides for the run about one host and port the run's list refuses; the answer
/// comes when they answer, however long that takes (their own deadline ends it).
pub trait Person: Send + Sync + 'static {
    /// `why` says in words why the list refused it.
    fn ask(
        &self,
        target: &str,
        port: u16,
        how: How,
        why: &str,
    ) -> Pin<Box<dyn Future<Output = HostAnswer> + Send>>;
}

/// What is known of a host asked for.
enum Known {
    /// Allowed for the rest of the run, by whom (in words).
    Allowed(String),
    /// Being asked for: its answer comes here.
    Asking(watch::Receiver<Option<HostAnswer>>),
}

/// The hosts asked for in this run, and whom to ask.
pub struct Asking {
    person: Arc<dyn Person>,
    known: Arc<Mutex<HashMap<String, Known>>>,
}

impl Asking {
    pub fn new(person: Arc<dyn Person>) -> Self {
        Asking {
            person,
            known: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The decision for `target`, which the rules refused with `why`: allowed earlier in the
    /// run, or asked for now (joining an ask already made for it).
    pub async fn decide(&self, target: &Target, how: How, why: &str) -> Decision {
        let key = target.to_string();
        let mut answer = {
            let Ok(mut known) = self.known.lock() else {
                return Decision::Refused {
                    reason: "bosun's proxy could not ask for it (its state is broken)".into(),
                };
            };
            match known.get(&key) {
                Some(Known::Allowed(by)) => {
                    return Decision::Allowed {
                        rule: format!("an ask earlier in this run ({by})"),
                    };
                }
                Some(Known::Asking(answer)) => answer.clone(),
                None => {
                    let (tx, rx) = watch::channel(None);
                    known.insert(key.clone(), Known::Asking(rx.clone()));
                    let asked = self
                        .person
                        .ask(&target.host.to_string(), target.port, how, why);
                    let known = Arc::clone(&self.known);
                    // The ask is the run's, not the connection's: a client that gives up
                    // leaves it to be answered, and an allow still holds for the next one.
                    tokio::spawn(async move {
                        let answer = asked.await;
                        if let Ok(mut known) = known.lock() {
                            match &answer {
                                HostAnswer::Allowed { by } => {
                                    known.insert(key, Known::Allowed(by.clone()));
                                }
                                HostAnswer::Denied { .. } => {
                                    known.remove(&key);
                                }
                            }
                        }
                        let _ = tx.send(Some(answer));
                    });
                    rx
                }
            }
        };
        let answered = answer.wait_for(Option::is_some).await.map(|a| a.clone());
        match answered {
            Ok(Some(HostAnswer::Allowed { by })) => Decision::Allowed {
                rule: format!("an ask ({by})"),
            },
            Ok(Some(HostAnswer::Denied { reason })) => Decision::Refused { reason },
            Ok(None) | Err(_) => Decision::Refused {
                reason: "bosun's proxy lost the ask for it".into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
    use tokio::time::timeout;

    use super::*;
    use crate::proxy::{Connection, NetRules, serve};

    const WAIT: Duration = Duration::from_secs(20);

    /// A person who answers each ask with what the test sends, and counts the asks.
    struct Fake {
        asks: Arc<AtomicUsize>,
        answers: Arc<tokio::sync::Mutex<UnboundedReceiver<HostAnswer>>>,
        asked: UnboundedSender<String>,
    }

    impl Person for Fake {
        fn ask(
            &self,
            host: &str,
            port: u16,
            _how: How,
            _why: &str,
        ) -> Pin<Box<dyn Future<Output = HostAnswer> + Send>> {
            self.asks.fetch_add(1, Ordering::SeqCst);
            let _ = self.asked.send(format!("{host}:{port}"));
            let answers = Arc::clone(&self.answers);
            Box::pin(async move {
                let mut answers = answers.lock().await;
                answers.recv().await.unwrap_or(HostAnswer::Denied {
                    reason: "gone".into(),
                })
            })
        }
    }

    struct Scene {
        proxy: SocketAddr,
        asks: Arc<AtomicUsize>,
        asked: UnboundedReceiver<String>,
        answer: UnboundedSender<HostAnswer>,
        _reports: UnboundedReceiver<Connection>,
    }

    async fn start() -> Scene {
        start_with(NetRules::default()).await
    }

    async fn start_with(rules: NetRules) -> Scene {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = listener.local_addr().unwrap();
        let (answer, answers) = unbounded_channel();
        let (asked_tx, asked) = unbounded_channel();
        let asks = Arc::new(AtomicUsize::new(0));
        let fake = Fake {
            asks: Arc::clone(&asks),
            answers: Arc::new(tokio::sync::Mutex::new(answers)),
            asked: asked_tx,
        };
        let asking = Arc::new(Asking::new(Arc::new(fake)));
        let (report, reports) = unbounded_channel();
        tokio::spawn(serve(listener, Arc::new(rules), Some(asking), report));
        Scene {
            proxy,
            asks,
            asked,
            answer,
            _reports: reports,
        }
    }

    /// A host that counts its connections and answers each with `ok`.
    async fn host() -> (u16, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let count = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&count);
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                seen.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    let _ = s.read(&mut buf).await;
                    let _ = s
                        .write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                        )
                        .await;
                });
            }
        });
        (port, count)
    }

    /// A plain GET of the host through the proxy, sent now; the answer read when awaited.
    fn get(proxy: SocketAddr, port: u16) -> tokio::task::JoinHandle<String> {
        tokio::spawn(async move {
            let mut c = TcpStream::connect(proxy).await.unwrap();
            let head = format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n");
            c.write_all(head.as_bytes()).await.unwrap();
            let mut answer = Vec::new();
            timeout(WAIT, c.read_to_end(&mut answer))
                .await
                .unwrap()
                .unwrap();
            String::from_utf8(answer).unwrap()
        })
    }

    #[tokio::test]
    async fn connections_to_a_host_wait_on_one_ask_and_an_allow_holds_for_the_run() {
        let mut s = start().await;
        let (port, count) = host().await;
        let first = get(s.proxy, port);
        let second = get(s.proxy, port);
        let asked = timeout(WAIT, s.asked.recv()).await.unwrap().unwrap();
        assert_eq!(asked, format!("127.0.0.1:{port}"));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(count.load(Ordering::SeqCst), 0, "reached before the answer");
        s.answer
            .send(HostAnswer::Allowed {
                by: "the person".into(),
            })
            .unwrap();
        for answer in [first.await.unwrap(), second.await.unwrap()] {
            assert!(answer.ends_with("ok"), "{answer}");
        }
        let third = get(s.proxy, port).await.unwrap();
        assert!(third.ends_with("ok"), "{third}");
        assert_eq!(s.asks.load(Ordering::SeqCst), 1, "asked more than once");
        assert_eq!(count.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_denied_host_is_403_with_the_reason_never_dialed_and_asked_again_next_time() {
        let mut s = start().await;
        let (port, count) = host().await;
        let first = get(s.proxy, port);
        timeout(WAIT, s.asked.recv()).await.unwrap().unwrap();
        s.answer
            .send(HostAnswer::Denied {
                reason: "denied by the person: not this one".into(),
            })
            .unwrap();
        let answer = first.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
        assert!(answer.contains("not this one"), "{answer}");
        let again = get(s.proxy, port);
        timeout(WAIT, s.asked.recv()).await.unwrap().unwrap();
        s.answer
            .send(HostAnswer::Denied {
                reason: "no".into(),
            })
            .unwrap();
        assert!(again.await.unwrap().contains("403"));
        assert_eq!(s.asks.load(Ordering::SeqCst), 2);
        assert_eq!(count.load(Ordering::SeqCst), 0, "a denied host was dialed");
    }

    #[tokio::test]
    async fn a_quiet_host_is_refused_without_asking() {
        let quiet = vec![bosun_protocol::runner::NetAllow {
            host: "127.0.0.1".into(),
            port: None,
            why: "test".into(),
        }];
        let s = start_with(NetRules::of(&[], &quiet).unwrap()).await;
        let (port, count) = host().await;
        let answer = get(s.proxy, port).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
        assert_eq!(
            s.asks.load(Ordering::SeqCst),
            0,
            "a quiet host was asked for"
        );
        assert_eq!(count.load(Ordering::SeqCst), 0);
    }
}
