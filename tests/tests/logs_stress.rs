//! Live logs under load: every live follower of a run sees every chunk once, in order, however
//! fast the run writes, however many follow it, however slow some of them are, and across
//! restarts of bosund.
//!
//! Each run writes numbered lines (`<tag> <n> xxx…`, see `bosun_tests::stress`) as fast as `seq`
//! can; every copy (each `bosun logs -f`, `bosun run --follow`, raw socket subscribers, and the
//! stored log) is checked line by line to be exactly 1..N, and a failure names the copy and its
//! first gap. `BOSUN_STRESS_LINES` sets N (default 300,000 lines a run, about 30 MB; try
//! 1000000 for the size of the original report).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bosun_protocol::runs::Following;
use bosun_protocol::socket::{self, ReadHalf, WriteHalf};
use bosun_protocol::ui::{
    ClientFrame, Event, FollowParams, Request, Response, ResponseResult, ServerFrame,
};
use bosun_protocol::{FrameReader, FrameWriter, Hello, HelloReply, PROTOCOL_VERSION, Role};
use bosun_shared::run::{Outcome, Stream};
use bosun_tests::stress::{self, Follower, Gen};
use bosun_tests::{Bosun, wait_for};
use nix::sys::signal::Signal;

const T: Duration = Duration::from_secs(60);

/// Lines per run: `BOSUN_STRESS_LINES`, else `default`.
fn lines_per_run(default: u64) -> u64 {
    std::env::var("BOSUN_STRESS_LINES")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// What a raw socket subscriber saw.
#[derive(Debug, Default)]
struct SubReport {
    lines: u64,
    chunks: u64,
    lagged: u64,
}

/// Follows `run` over the socket, speaking the protocol itself: checks that the `Log` seqs go
/// 1, 2, 3, … with no gap and no repeat, that every `LogLagged` resumes right after the last
/// seq sent, that `LogEnd` names the last seq and a succeeded run, and that the data is lines
/// 1..N. A slow subscriber stops reading for a second once it has line `stall_at`, then for
/// 150 ms every 16 chunks, and takes 2 ms over each chunk.
fn socket_follower(
    home: PathBuf,
    run: String,
    g: Gen,
    what: String,
    slow: bool,
    stall_at: u64,
    progress: Arc<AtomicU64>,
) -> std::thread::JoinHandle<Result<SubReport, String>> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("{what}: no runtime: {e}"))?;
        rt.block_on(subscribe(&home, &run, &g, &what, slow, stall_at, &progress))
    })
}

async fn subscribe(
    home: &Path,
    run: &str,
    g: &Gen,
    what: &str,
    slow: bool,
    stall_at: u64,
    progress: &AtomicU64,
) -> Result<SubReport, String> {
    let fail = |m: String| format!("{what}: {m}");
    let stream = socket::connect(&home.join("bosund.sock"))
        .await
        .map_err(|e| fail(format!("could not connect: {e}")))?;
    let (r, w) = socket::split(stream);
    let (mut r, mut w): (FrameReader<ReadHalf>, FrameWriter<WriteHalf>) =
        (FrameReader::new(r), FrameWriter::new(w));
    w.send_now(&Hello {
        protocol_version: PROTOCOL_VERSION,
        role: Role::Ui,
        binary_log: true,
        client: Default::default(),
    })
    .await
    .map_err(|e| fail(format!("hello: {e}")))?;
    match r.read::<HelloReply>().await {
        Ok(Some(HelloReply::Welcome(_))) => {}
        other => return Err(fail(format!("no welcome: {other:?}"))),
    }
    w.send_now(&ClientFrame::Request {
        id: 1,
        body: Request::FollowLog(FollowParams {
            run: run.to_string(),
            from_seq: 1,
            follow: true,
            stream: None,
            direct: false,
        }),
    })
    .await
    .map_err(|e| fail(format!("FollowLog: {e}")))?;

    let mut check = g.checker(what);
    let mut report = SubReport::default();
    let mut sub = None;
    let mut last_seq = 0u64;
    let mut stalled = false;
    loop {
        let frame = tokio::time::timeout(T, r.read::<ServerFrame>())
            .await
            .map_err(|_| {
                fail(format!(
                    "nothing came for {T:?} after seq {last_seq} ({} lines)",
                    check.lines()
                ))
            })?
            .map_err(|e| fail(format!("after seq {last_seq}: {e}")))?;
        let Some(frame) = frame else {
            return Err(fail(format!(
                "bosund closed the connection after seq {last_seq} ({} lines), before LogEnd",
                check.lines()
            )));
        };
        match frame {
            ServerFrame::Response { id: 1, result } => match result {
                ResponseResult::Ok(Response::Following(Following { sub: s, .. })) => sub = Some(s),
                other @ (ResponseResult::Ok(_) | ResponseResult::Err(_)) => {
                    return Err(fail(format!("FollowLog was answered {other:?}")));
                }
            },
            ServerFrame::Response { id, .. } => {
                return Err(fail(format!("an answer to request {id}, never asked")));
            }
            ServerFrame::Error(e) => return Err(fail(format!("an error frame: {e:?}"))),
            ServerFrame::Event(event) => match event {
                Event::Log {
                    sub: s,
                    seq,
                    stream,
                    data,
                    ..
                } => {
                    if sub.is_some_and(|mine| mine != s) {
                        return Err(fail(format!("a chunk of subscription {s}, not ours")));
                    }
                    if seq != last_seq + 1 {
                        return Err(fail(format!(
                            "after seq {last_seq} ({} lines) came seq {seq}: {}",
                            check.lines(),
                            if seq > last_seq {
                                format!("seqs {}..={} are missing", last_seq + 1, seq - 1)
                            } else {
                                "a repeat, or a step back".to_string()
                            }
                        )));
                    }
                    last_seq = seq;
                    report.chunks += 1;
                    if stream != Stream::Note {
                        check.feed(data.as_slice());
                    }
                    progress.store(check.lines(), Ordering::Relaxed);
                    if slow && check.lines() >= stall_at {
                        // A long stall first, then a short one every 16 chunks, and 2 ms over
                        // each chunk.
                        if !stalled || report.chunks % 16 == 0 {
                            let ms = if stalled { 150 } else { 1000 };
                            stalled = true;
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                }
                Event::LogLagged { resume_from, .. } => {
                    report.lagged += 1;
                    if resume_from != last_seq + 1 {
                        return Err(fail(format!(
                            "LogLagged resumes from seq {resume_from}, but the last seq sent was {last_seq}"
                        )));
                    }
                }
                Event::LogEnd {
                    last_seq: end,
                    run: view,
                    ..
                } => {
                    if end != last_seq {
                        return Err(fail(format!(
                            "LogEnd says the last seq is {end}, but the last seq sent was {last_seq}"
                        )));
                    }
                    if view.outcome != Some(Outcome::Succeeded) {
                        return Err(fail(format!(
                            "LogEnd's run is {} {:?}, not succeeded",
                            view.state, view.outcome
                        )));
                    }
                    report.lines = check.whole()?;
                    return Ok(report);
                }
                Event::LogFailed {
                    last_seq: end,
                    message,
                    ..
                } => {
                    return Err(fail(format!(
                        "LogFailed after seq {end} (the last seq sent was {last_seq}): {message}"
                    )));
                }
                Event::LogProgress { upto, .. } => {
                    return Err(fail(format!(
                        "a subscription that did not ask to read the file itself was told it goes to {upto}"
                    )));
                }
                Event::RunChanged { .. }
                | Event::PendingChanged { .. }
                | Event::ApprovalChanged { .. }
                | Event::ChatMessage { .. }
                | Event::StorageFault { .. }
                | Event::StorageRecovered { .. }
                | Event::Notification { .. } => {}
            },
        }
    }
}

/// Checks a follower's copy (whole) and how it exited; returns the failure, if any.
fn check_follower(f: &mut Follower, g: &Gen) -> Option<String> {
    let status = f.poll();
    if !status.is_some_and(|s| s.success()) {
        return Some(f.describe());
    }
    match stress::check_file(&f.out, g.checker(&f.what)) {
        Ok(c) => c.whole().err(),
        Err(e) => Some(format!("{}: could not read its copy: {e}", f.what)),
    }
}

/// Checks the run's record (succeeded) and its stored log (whole).
fn check_stored(b: &Bosun, id: &str, g: &Gen, dir: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    match b.show(id) {
        Ok(v) if v["outcome"] == "succeeded" => {}
        Ok(v) => failures.push(format!(
            "run {} ({id}) is {} {}, not succeeded: {}",
            g.tag, v["state"], v["outcome"], v["exit"]["reason"]
        )),
        Err(e) => failures.push(format!("bosun show {id}: {e}")),
    }
    let path = dir.join(format!("{}.stored", g.tag));
    let what = format!("the stored log of run {} (bosun logs {id})", g.tag);
    match stress::stored_log_to(b, id, &path)
        .and_then(|()| stress::check_file(&path, g.checker(&what)))
    {
        Ok(c) => failures.extend(c.whole().err()),
        Err(e) => failures.push(format!("{what}: {e}")),
    }
    let _ = std::fs::remove_file(path);
    failures
}

fn fail_with(failures: &[String]) -> anyhow::Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = failures.iter().take(30).map(String::as_str).collect();
    anyhow::bail!(
        "{} faults (the first of each copy):\n  {}",
        failures.len(),
        shown.join("\n  ")
    )
}

#[test]
fn fast_runs_followed_by_fast_slow_and_stopped_readers_give_every_copy_whole() -> anyhow::Result<()>
{
    const RUNS: usize = 4;
    let n = lines_per_run(300_000);
    let b = Bosun::new("logs_stress_many");
    let script = stress::generator(&b)?;
    let dir = b.scratch();
    b.ok(&["ps"])?;
    let began = Instant::now();

    // Each run writes its first 1,000 lines, waits until every reader has them (so every one
    // follows live), then floods the rest.
    const HOLD: u64 = 1000;
    let gens: Vec<Gen> = (0..RUNS)
        .map(|k| Gen {
            hold_at: HOLD.min(n),
            hold_file: Some(dir.join(format!("go-{k}"))),
            ..Gen::flood(&format!("s{k}"), n, 88)
        })
        .collect();
    let held_bytes = Gen::flood("s0", HOLD.min(n), 88).total_bytes();

    let mut ids = Vec::new();
    let mut followers: Vec<(usize, Follower)> = Vec::new();
    for (k, g) in gens.iter().enumerate() {
        let name = format!("stress-{k}");
        let cmd = g.command(&script);
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        if k == 0 {
            // One run is started by `bosun run --follow`, itself a reader.
            let mut args = vec!["run", "--follow", "--name", &name, "--"];
            args.extend_from_slice(&cmd);
            followers.push((k, Follower::spawn(&b, &args, &dir, "s0-run-follow")?));
            let id = wait_for("the followed run to be listed", T, || {
                stress::run_named(&b, &name)
            })?;
            ids.push(id);
        } else {
            ids.push(b.start(&["--name", &name], &cmd)?);
        }
    }
    let mut stopped = Vec::new();
    let mut subs = Vec::new();
    for (k, (g, id)) in gens.iter().zip(&ids).enumerate() {
        followers.push((
            k,
            Follower::logs_f(&b, id, &dir, &format!("{}-logs-f", g.tag))?,
        ));
        stopped.push(followers.len());
        followers.push((
            k,
            Follower::logs_f(&b, id, &dir, &format!("{}-logs-f-stopped", g.tag))?,
        ));
        for slow in [false, true] {
            let what = format!(
                "{}-socket{} (a raw FollowLog subscriber)",
                g.tag,
                if slow { "-slow" } else { "" }
            );
            let progress = Arc::new(AtomicU64::new(0));
            let handle = socket_follower(
                b.home.clone(),
                id.clone(),
                g.clone(),
                what.clone(),
                slow,
                HOLD,
                progress.clone(),
            );
            subs.push((k, what, progress, handle));
        }
    }

    wait_for("every reader to have the first lines", T, || {
        let files = followers.iter().all(|(_, f)| f.copied() >= held_bytes);
        let socks = subs
            .iter()
            .all(|(_, _, p, h)| h.is_finished() || p.load(Ordering::Relaxed) >= HOLD.min(n));
        Ok((files && socks).then_some(()))
    })?;
    for g in &gens {
        if let Some(f) = &g.hold_file {
            std::fs::write(f, "")?;
        }
    }
    // The stopped readers fall far behind, catch up, and fall behind again, while the flood
    // goes by.
    for pause in [1000, 400, 400, 400] {
        for &i in &stopped {
            followers[i].1.signal(Signal::SIGSTOP);
        }
        std::thread::sleep(Duration::from_millis(pause));
        for &i in &stopped {
            followers[i].1.signal(Signal::SIGCONT);
        }
        std::thread::sleep(Duration::from_millis(200));
    }

    let mut failures = Vec::new();
    for id in &ids {
        if let Err(e) = b.wait_ended(id, Duration::from_secs(180)) {
            failures.push(format!("run {id}: {e}"));
        }
    }
    let mut all: Vec<&mut Follower> = followers.iter_mut().map(|(_, f)| f).collect();
    if let Err(e) = stress::wait_all(&mut all, T) {
        failures.push(e.to_string());
    }
    for (k, f) in &mut followers {
        failures.extend(check_follower(f, &gens[*k]));
        let _ = std::fs::remove_file(&f.out);
    }
    let mut lagged = vec![0u64; RUNS];
    for (k, what, _, handle) in subs {
        match handle.join() {
            Ok(Ok(r)) => lagged[k] += r.lagged,
            Ok(Err(e)) => failures.push(e),
            Err(_) => failures.push(format!("{what}: its thread panicked")),
        }
    }
    for (g, id) in gens.iter().zip(&ids) {
        failures.extend(check_stored(&b, id, g, &dir));
    }
    eprintln!(
        "logs_stress: {RUNS} runs × {n} lines ({:.1} MB each), 5 readers on the first run and 4 on the others, \
         LogLagged seen by the socket readers per run {lagged:?}, {:.1} s",
        gens[0].total_bytes() as f64 / 1e6,
        began.elapsed().as_secs_f64()
    );
    fail_with(&failures)?;
    b.finish()
}

#[test]
fn followers_resume_where_they_were_across_three_daemon_kills() -> anyhow::Result<()> {
    let n = lines_per_run(300_000);
    let b = Bosun::new("logs_stress_kills");
    let script = stress::generator(&b)?;
    let dir = b.scratch();
    let began = Instant::now();
    // About 40,000 lines a second, so the kills land while it writes; it holds its last batch
    // until the test has killed bosund three times.
    const HOLD: u64 = 2000;
    let g = Gen {
        batch: 1000,
        pause: "0.02".into(),
        hold_at: HOLD.min(n),
        hold_file: Some(dir.join("go")),
        end_file: Some(dir.join("end")),
        ..Gen::flood("k", n, 40)
    };
    let before_end = Gen::flood("k", n.saturating_sub(g.batch), 40).total_bytes();
    let cmd = g.command(&script);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let mut args = vec!["run", "--follow", "--name", "kills", "--"];
    args.extend_from_slice(&cmd);
    let mut run_f = Follower::spawn(&b, &args, &dir, "run-follow")?;
    let id = wait_for("the run to be listed", T, || stress::run_named(&b, "kills"))?;
    let mut logs_f = Follower::logs_f(&b, &id, &dir, "logs-f")?;
    let held = Gen::flood("k", HOLD.min(n), 40).total_bytes();
    wait_for("both followers to have the first lines", T, || {
        Ok((run_f.copied() >= held && logs_f.copied() >= held).then_some(()))
    })?;
    if let Some(go) = &g.hold_file {
        std::fs::write(go, "")?;
    }

    // The kills land about a fifth of the way apart.
    let step = (g.total_bytes() / 5).max(64 * 1024);
    let mut landed = Vec::new();
    for kill in 1..=4 {
        // Output flows to both followers (after a kill: they are back).
        let since = (run_f.copied(), logs_f.copied());
        let grew = wait_for("both followers' copies to grow", T, || {
            if run_f.poll().is_some() || logs_f.poll().is_some() {
                anyhow::bail!("a follower exited");
            }
            let (a, c) = (run_f.copied(), logs_f.copied());
            let moved = |now: u64, then: u64| now >= then + step || now >= before_end;
            Ok((moved(a, since.0) && moved(c, since.1)).then_some(()))
        });
        if let Err(e) = grew {
            anyhow::bail!(
                "after {} kill(s) of bosund, the followers did not go on: {e}\n  {}\n  {}",
                kill - 1,
                run_f.describe(),
                logs_f.describe()
            );
        }
        if kill == 4 {
            break;
        }
        landed.push(logs_f.copied() / (g.total_bytes() / n).max(1));
        b.kill_daemon()?;
    }
    if let Some(end) = &g.end_file {
        std::fs::write(end, "")?;
    }
    let mut failures = Vec::new();
    if let Err(e) = stress::wait_all(&mut [&mut run_f, &mut logs_f], Duration::from_secs(120)) {
        failures.push(e.to_string());
    }
    for f in [&mut run_f, &mut logs_f] {
        failures.extend(check_follower(f, &g));
        let restarts = f.restarts_seen();
        if !(1..=3).contains(&restarts) {
            failures.push(format!(
                "{}: said \"bosund restarted\" {restarts} times for 3 kills (want 1 to 3): `{}`",
                f.what,
                f.stderr()
            ));
        }
    }
    failures.extend(check_stored(&b, &id, &g, &dir));
    eprintln!(
        "logs_stress: 1 run × {n} lines ({:.1} MB), bosund killed 3 times, at about lines {landed:?} \
         of the logs -f copy; \"bosund restarted\" said {} and {} times; {:.1} s",
        g.total_bytes() as f64 / 1e6,
        run_f.restarts_seen(),
        logs_f.restarts_seen(),
        began.elapsed().as_secs_f64()
    );
    fail_with(&failures)?;
    b.finish()
}
