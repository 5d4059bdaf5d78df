//! Named crash points, for the crash tests: with `BOSUN_CRASH_AT=<point>` in its environment,
//! the daemon kills itself with SIGKILL when it reaches that point — no destructor, no flush,
//! exactly as an outside `kill -9` at that instant would leave things.

/// Dies here when the environment names this point, `wait` after reaching it: the task goes
/// no further, while the others go on meanwhile (a message just queued for a socket goes out).
pub async fn point_after(name: &str, wait: std::time::Duration) {
    if std::env::var("BOSUN_CRASH_AT").is_ok_and(|p| p == name) {
        tokio::time::sleep(wait).await;
        point(name);
    }
}

/// Dies here when the environment names this point.
pub fn point(name: &str) {
    if std::env::var("BOSUN_CRASH_AT").is_ok_and(|p| p == name) {
        eprintln!("bosund: BOSUN_CRASH_AT={name}: killed here, as the test asked");
        // SIGKILL cannot be caught; should sending it fail, abort ends the process all the same.
        if let Err(e) =
            nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL)
        {
            eprintln!("bosund: could not send SIGKILL to itself ({e}); aborting");
        }
        std::process::abort();
    }
}
