//! `bosun logs`, and the log printing `bosun run --follow` shares with it.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bosun_shared::Timestamp;
use bosun_shared::paths::StateDir;
use bosun_shared::protocol::runs::{Following, GetRun};
use bosun_shared::protocol::ui::{Event, FollowParams, RunView};
use bosun_shared::run::Stream;
use bosun_ui::ClientError;
use clap::Args;

use super::{connect, output};

#[derive(Args, Debug)]
pub struct LogsArgs {
    /// The run's id, or a unique start of it
    run: String,
    /// Keep printing new output until the run ends
    #[arg(long, short = 'f')]
    follow: bool,
    /// Start at this chunk seq (seq numbers the chunks of output, from 1)
    #[arg(long, value_name = "SEQ", default_value_t = 1)]
    from: u64,
    /// Only what the program wrote to stdout
    #[arg(long, conflicts_with = "stderr")]
    stdout: bool,
    /// Only what the program wrote to stderr
    #[arg(long)]
    stderr: bool,
    /// Start each line with the time it was received
    #[arg(long, short = 't')]
    timestamps: bool,
    /// One JSON object per chunk: seq, stream, at, data
    #[arg(long)]
    json: bool,
}

pub async fn logs(dirs: &StateDir, a: LogsArgs) -> anyhow::Result<ExitCode> {
    let stream = match (a.stdout, a.stderr) {
        (true, _) => Some(Stream::Stdout),
        (_, true) => Some(Stream::Stderr),
        _ => None,
    };
    let mut client = connect(dirs).await?;
    let opts = FollowOptions {
        from_seq: a.from,
        follow: a.follow,
        stream,
        timestamps: a.timestamps,
        json: a.json,
    };
    print_log(dirs, &mut client, &a.run, opts).await?;
    Ok(ExitCode::SUCCESS)
}

pub struct FollowOptions {
    pub from_seq: u64,
    pub follow: bool,
    pub stream: Option<Stream>,
    pub timestamps: bool,
    pub json: bool,
}

/// How long a follower hears nothing before it asks (each second) whether the run is paused.
const QUIET: Duration = Duration::from_secs(2);

/// How long a follower keeps trying to get bosund back after the connection broke.
const RECONNECT_FOR: Duration = Duration::from_secs(60);

/// Prints a run's log to stdout until the subscription ends, and returns the run as it is then.
/// Ctrl-C stops following (the run goes on).
///
/// When the connection to bosund breaks (the daemon crashed or was killed), the follower starts
/// it again, says so on stderr in one line, and follows on from the chunk after the last one it
/// printed: no chunk twice, none missing.
pub async fn print_log(
    dirs: &StateDir,
    client: &mut bosun_ui::Client,
    run: &str,
    opts: FollowOptions,
) -> anyhow::Result<RunView> {
    if opts.follow {
        // A follower watches; it should never take the CPU from the run it watches (or any
        // other). At nice 10 it falls behind under load and catches up from the store.
        // SAFETY: setpriority on this process only changes its own nice value.
        unsafe {
            nix::libc::setpriority(nix::libc::PRIO_PROCESS, 0, 10);
        }
    }
    let mut run = run.to_string();
    let mut view = None;
    // The next seq this follower is to print: every seq before it was printed or is not wanted.
    let mut next = opts.from_seq.max(1);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, stdout.lock());
    let mut at_line_start = true;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut quiet = tokio::time::interval(Duration::from_secs(1));
    quiet.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut last_output, mut paused) = (Instant::now(), None::<String>);
    loop {
        let request = FollowParams {
            run: run.clone(),
            from_seq: next,
            follow: opts.follow,
            stream: opts.stream,
        };
        let sub = match client.call(request).await {
            Ok(Following { sub, run: v }) => {
                // Follow on by the full id: a prefix could match another run later.
                run = v.id.to_string();
                view = Some(v);
                sub
            }
            Err(ClientError::Connection(_)) if view.is_some() => {
                out.flush()?;
                *client = reconnect(dirs, &run, next).await?;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        loop {
            let event = tokio::select! {
                e = client.next_event() => e,
                _ = quiet.tick() => {
                    // Nothing for a while: say so if the run is paused (its output cannot be
                    // written), once, and once more when it goes on.
                    if last_output.elapsed() < QUIET {
                        continue;
                    }
                    if let Ok(v) = client.call(GetRun { run: run.clone() }).await
                        && v.paused != paused
                    {
                        match &v.paused {
                            Some(why) => eprintln!("bosun: run {} is {why}", v.short_id),
                            None => eprintln!("bosun: run {} goes on", v.short_id),
                        }
                        paused = v.paused;
                    }
                    continue;
                }
                _ = interrupt.recv() => {
                    out.flush()?;
                    if let Some(v) = &view && output::stderr_is_terminal() {
                        eprintln!("\nbosun: stopped following; run {} goes on (`bosun stop {}` ends it)", v.short_id, v.short_id);
                    }
                    return view.map(|v| *v).ok_or_else(|| anyhow::anyhow!("stopped"));
                }
            };
            let event = match event {
                Ok(Some(event)) => event,
                Ok(None) | Err(ClientError::Connection(_)) => {
                    // bosund went away mid-log.
                    out.flush()?;
                    *client = reconnect(dirs, &run, next).await?;
                    break;
                }
                Err(e) => return Err(e.into()),
            };
            match event {
                Event::Log {
                    sub: s,
                    seq,
                    stream,
                    at,
                    data,
                } if s == sub => {
                    last_output = Instant::now();
                    if paused.take().is_some() {
                        out.flush()?;
                        eprintln!("bosun: run {run} goes on");
                    }
                    if seq < next {
                        // Already printed (cannot happen with a daemon that keeps its promise;
                        // a duplicate is never printed twice all the same).
                        continue;
                    }
                    if seq > next && opts.stream.is_none() {
                        out.flush()?;
                        anyhow::bail!(
                            "the log of run {run} skipped from chunk {next} to {seq}; this is a bug of bosund, please report it (`bosun logs {run} --from {next}` reads the stored log)"
                        );
                    }
                    next = seq + 1;
                    if opts.json {
                        let line = serde_json::json!({ "seq": seq, "stream": stream, "at": at, "data": data });
                        serde_json::to_writer(&mut out, &line)?;
                        out.write_all(b"\n")?;
                    } else if stream == Stream::Note {
                        // bosun's own lines about the run go with its other messages, on stderr.
                        out.flush()?;
                        for line in String::from_utf8_lossy(data.as_slice()).lines() {
                            eprintln!("bosun: {line}");
                        }
                    } else if opts.timestamps {
                        write_with_times(&mut out, data.as_slice(), at, &mut at_line_start)?;
                    } else {
                        out.write_all(data.as_slice())?;
                    }
                }
                Event::LogLagged { sub: s, .. } if s == sub => {}
                Event::LogEnd { sub: s, run, .. } if s == sub => {
                    out.flush()?;
                    return Ok(*run);
                }
                Event::LogFailed {
                    sub: s, message, ..
                } if s == sub => {
                    out.flush()?;
                    anyhow::bail!(message);
                }
                Event::Log { .. }
                | Event::LogLagged { .. }
                | Event::LogEnd { .. }
                | Event::LogFailed { .. }
                | Event::RunChanged { .. }
                | Event::PendingChanged { .. }
                | Event::ApprovalChanged { .. }
                | Event::ChatMessage { .. }
                | Event::StorageFault { .. }
                | Event::StorageRecovered { .. }
                | Event::Notification { .. } => {}
            }
            // Flush whenever nothing else has arrived yet, so a live log shows at once.
            if !client.has_buffered() {
                out.flush()?;
            }
        }
    }
}

/// Gets bosund back after the connection broke (starting it when it is not running) and says
/// so on stderr, once.
async fn reconnect(dirs: &StateDir, run: &str, next: u64) -> anyhow::Result<bosun_ui::Client> {
    let started = Instant::now();
    let mut delay = Duration::from_millis(50);
    loop {
        match bosun_ui::Client::connect(dirs, true).await {
            Ok(client) => {
                eprintln!("bosun: bosund restarted; following run {run} on from chunk {next}");
                return Ok(client);
            }
            Err(_) if started.elapsed() < RECONNECT_FOR => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(1));
            }
            Err(e) => {
                anyhow::bail!(
                    "lost bosund while following run {run}, and could not get it back within {}s: {e}",
                    RECONNECT_FOR.as_secs()
                )
            }
        }
    }
}

/// Writes output with the chunk's time at the start of each line.
fn write_with_times(
    out: &mut impl Write,
    data: &[u8],
    at: Timestamp,
    at_line_start: &mut bool,
) -> std::io::Result<()> {
    let stamp = at.rfc3339();
    for piece in data.split_inclusive(|b| *b == b'\n') {
        if *at_line_start {
            write!(out, "{stamp} ")?;
        }
        out.write_all(piece)?;
        *at_line_start = piece.ends_with(b"\n");
    }
    Ok(())
}
