//! Root's mailbox, defined below everything that writes to it: the context keeps Root's
//! address and a request asks for the daemon's shutdown without knowing Root itself.

pub enum RootMsg {
    /// Stop every run (by the ladder, or at once) and exit.
    Shutdown { immediate: bool },
    /// Every run has ended: exit.
    RunsStopped,
}
