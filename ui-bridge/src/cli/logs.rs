//! `bosun logs`, and the log printing `bosun run --follow` shares with it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bosun_protocol::runs::{Following, GetRun, Unfollow};
use bosun_protocol::ui::{Event, FollowParams, RunView};
use bosun_shared::Timestamp;
use bosun_shared::logfile::LogReader;
use bosun_shared::paths::StateDir;
use bosun_shared::run::Stream;
use bosun_ui::ClientError;
use clap::Args;

use super::{connect, output};

#[derive(Args, Debug)]
pub struct LogsArgs {
    /// The run's id, or a unique start of it
    #[arg(add = super::complete::runs())]
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

/// Where printed output goes, and where the log is: the next seq to print (every seq before it
/// was printed or is not wanted).
struct Printer<W: Write> {
    out: W,
    next: u64,
    at_line_start: bool,
    stream: Option<Stream>,
    timestamps: bool,
    json: bool,
    /// Where records read from the log file go, kept from one to the next.
    buf: Vec<u8>,
}

impl<W: Write> Printer<W> {
    /// Prints the chunk `seq` if it is the next one. A seq already printed is passed over (it
    /// cannot come with a daemon that keeps its promise, and is never printed twice all the
    /// same); one past the next is an error, never a hole in what is printed.
    fn chunk(
        &mut self,
        run: &str,
        seq: u64,
        stream: Stream,
        at: Timestamp,
        data: &[u8],
    ) -> anyhow::Result<()> {
        if seq < self.next {
            return Ok(());
        }
        if seq > self.next && self.stream.is_none() {
            self.out.flush()?;
            anyhow::bail!(
                "the log of run {run} skipped from chunk {} to {seq}; this is a bug of bosund, please report it (`bosun logs {run} --from {}` reads the stored log)",
                self.next,
                self.next
            );
        }
        self.next = seq + 1;
        if self.stream.is_some_and(|s| s != stream) {
            return Ok(());
        }
        if self.json {
            let data = bosun_protocol::LogBytes(data.to_vec());
            let line = serde_json::json!({ "seq": seq, "stream": stream, "at": at, "data": data });
            serde_json::to_writer(&mut self.out, &line)?;
            self.out.write_all(b"\n")?;
        } else if stream == Stream::Note {
            // bosun's own lines about the run go with its other messages, on stderr.
            self.out.flush()?;
            for line in String::from_utf8_lossy(data).lines() {
                errln!("bosun: {line}");
            }
        } else if self.timestamps {
            write_with_times(&mut self.out, data, at, &mut self.at_line_start)?;
        } else {
            self.out.write_all(data)?;
        }
        Ok(())
    }

    /// A direct subscription said the log file has every chunk up to `upto`: prints them from
    /// the file. The file lacking one is said plainly (a damaged or deleted log), never skipped.
    fn read_file(
        &mut self,
        run: &str,
        file: &mut Option<LogReader>,
        path: &std::path::Path,
        upto: u64,
    ) -> anyhow::Result<()> {
        if file.is_none() {
            *file = LogReader::open(path)?;
            if let Some(r) = file.as_mut() {
                r.skip_to(self.next)?;
            }
        }
        if let Some(r) = file.as_mut() {
            let mut buf = std::mem::take(&mut self.buf);
            while self.next <= upto {
                let Some((seq, stream, at, len)) = r.next_upto_into(upto, &mut buf)? else {
                    break;
                };
                self.chunk(run, seq, stream, at, &buf[..len])?;
            }
            self.buf = buf;
        }
        if self.next <= upto {
            self.out.flush()?;
            anyhow::bail!(
                "the log file of run {run} ends after chunk {}, but the run wrote {upto}: the rest is damaged or was deleted",
                self.next - 1
            );
        }
        Ok(())
    }
}

/// Prints a run's log to stdout until the subscription ends, and returns the run as it is then.
/// Ctrl-C stops following (the run goes on).
///
/// The log file is read here, straight from the state directory (bosund only says how far it
/// goes), so the bytes cross no socket; a file that cannot be opened (another user's state
/// directory, say) makes the follower ask bosund for the chunks themselves instead.
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
    let stdout = std::io::stdout();
    let p = Printer {
        out: std::io::BufWriter::with_capacity(256 * 1024, stdout.lock()),
        next: opts.from_seq.max(1),
        at_line_start: true,
        stream: opts.stream,
        timestamps: opts.timestamps,
        json: opts.json,
        buf: Vec::new(),
    };
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut quiet = tokio::time::interval(Duration::from_secs(1));
    quiet.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut f = Follower {
        run: run.to_string(),
        view: None,
        p,
        direct: true,
        last_output: Instant::now(),
        paused: None,
    };
    loop {
        let Some((sub, log_file)) = f.subscribe(dirs, client, &opts).await? else {
            continue;
        };
        let mut file = None;
        loop {
            let event = tokio::select! {
                e = client.next_event() => e,
                _ = quiet.tick() => {
                    f.say_if_paused(client).await;
                    continue;
                }
                _ = interrupt.recv() => return f.stop(),
            };
            let event = match event {
                Ok(Some(event)) => event,
                Ok(None) | Err(ClientError::Connection(_)) => {
                    // bosund went away mid-log.
                    f.p.out.flush()?;
                    *client = reconnect(dirs, &f.run, f.p.next).await?;
                    break;
                }
                Err(e) => return Err(e.into()),
            };
            match f
                .on_event(client, event, sub, log_file.as_deref(), &mut file)
                .await?
            {
                Next::GoOn => {}
                Next::Skip => continue,
                Next::Resubscribe => break,
                Next::Ended(run) => return Ok(*run),
            }
            // Flush whenever nothing else has arrived yet, so a live log shows at once.
            if !client.has_buffered() {
                f.p.out.flush()?;
            }
        }
    }
}

/// A follower of a run's log, across its subscriptions (one per connection to bosund).
struct Follower<W: Write> {
    /// The run: as the person named it, then by its full id.
    run: String,
    /// The run as its latest subscription found it.
    view: Option<Box<RunView>>,
    /// What prints the chunks, and the seq of the next one to print.
    p: Printer<W>,
    /// The follower reads the log file itself (bosund only says how far it goes).
    direct: bool,
    /// When output last came.
    last_output: Instant,
    /// Why the run is paused, as last said on stderr.
    paused: Option<String>,
}

/// What a follower does after an event.
enum Next {
    /// Go on, flushing the output when nothing else has arrived yet.
    GoOn,
    /// Go on to the next event at once.
    Skip,
    /// Subscribe again, from the chunk after the last one printed.
    Resubscribe,
    /// The log ended: the run as it is then.
    Ended(Box<RunView>),
}

impl<W: Write> Follower<W> {
    /// Subscribes to the run's log from the chunk after the last one printed; the answer is the
    /// subscription and the log file to read, or `None` when the connection broke and bosund
    /// was got back (the follower subscribes again).
    async fn subscribe(
        &mut self,
        dirs: &StateDir,
        client: &mut bosun_ui::Client,
        opts: &FollowOptions,
    ) -> anyhow::Result<Option<(u64, Option<PathBuf>)>> {
        let request = FollowParams {
            run: self.run.clone(),
            from_seq: self.p.next,
            follow: opts.follow,
            stream: opts.stream,
            direct: self.direct,
        };
        match client.call(request).await {
            Ok(Following {
                sub,
                run: v,
                log_file,
            }) => {
                // Follow on by the full id: a prefix could match another run later.
                self.run = v.id.to_string();
                self.view = Some(v);
                Ok(Some((sub, log_file)))
            }
            Err(ClientError::Connection(_)) if self.view.is_some() => {
                self.p.out.flush()?;
                *client = reconnect(dirs, &self.run, self.p.next).await?;
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Says on stderr that the run is paused, once nothing has come for a while.
    async fn say_if_paused(&mut self, client: &mut bosun_ui::Client) {
        // Nothing for a while: say so if the run is paused (its output cannot be
        // written), once, and once more when it goes on.
        if self.last_output.elapsed() < QUIET {
            return;
        }
        if let Ok(v) = client
            .call(GetRun {
                run: self.run.clone(),
            })
            .await
            && v.paused != self.paused
        {
            match &v.paused {
                Some(why) => errln!("bosun: run {} is {why}", v.short_id),
                None => errln!("bosun: run {} goes on", v.short_id),
            }
            self.paused = v.paused;
        }
    }

    /// Stops following at the person's Ctrl-C (the run goes on); the answer is the run as
    /// last heard of.
    fn stop(mut self) -> anyhow::Result<RunView> {
        self.p.out.flush()?;
        if let Some(v) = &self.view
            && output::stderr_is_terminal()
        {
            errln!(
                "\nbosun: stopped following; run {} goes on (`bosun stop {}` ends it)",
                v.short_id,
                v.short_id
            );
        }
        self.view
            .map(|v| *v)
            .ok_or_else(|| anyhow::anyhow!("stopped"))
    }

    /// Says on stderr that a run said to be paused goes on, as its output comes again.
    fn goes_on(&mut self) -> anyhow::Result<()> {
        if self.paused.take().is_some() {
            self.p.out.flush()?;
            errln!("bosun: run {} goes on", self.run);
        }
        Ok(())
    }

    /// Prints what an event of the subscription `sub` brings: a chunk, or the log file up to
    /// where it now goes (`log_file`, read through `file`).
    async fn on_event(
        &mut self,
        client: &mut bosun_ui::Client,
        event: Event,
        sub: u64,
        log_file: Option<&Path>,
        file: &mut Option<LogReader>,
    ) -> anyhow::Result<Next> {
        match event {
            Event::Log {
                sub: s,
                seq,
                stream,
                at,
                data,
            } if s == sub => {
                self.last_output = Instant::now();
                self.goes_on()?;
                self.p.chunk(&self.run, seq, stream, at, data.as_slice())?;
            }
            Event::LogProgress { sub: s, upto } if s == sub => {
                let Some(path) = log_file else {
                    return Ok(Next::Skip);
                };
                self.last_output = Instant::now();
                self.goes_on()?;
                if let Err(e) = self.p.read_file(&self.run, file, path, upto) {
                    if file.is_some() || !is_unreadable(&e) {
                        return Err(e);
                    }
                    // The file is not ours to read: bosund sends the chunks instead.
                    let _ = client.call(Unfollow { sub }).await;
                    self.direct = false;
                    return Ok(Next::Resubscribe);
                }
            }
            Event::LogLagged { sub: s, .. } if s == sub => {}
            Event::LogEnd { sub: s, run, .. } if s == sub => {
                self.p.out.flush()?;
                return Ok(Next::Ended(run));
            }
            Event::LogFailed {
                sub: s, message, ..
            } if s == sub => {
                self.p.out.flush()?;
                anyhow::bail!(message);
            }
            Event::Log { .. }
            | Event::LogLagged { .. }
            | Event::LogProgress { .. }
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
        Ok(Next::GoOn)
    }
}

/// Whether opening the log file failed for want of permission (so reading it through bosund
/// may work), rather than because the log is damaged.
fn is_unreadable(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
}

/// Gets bosund back after the connection broke (starting it when it is not running) and says
/// so on stderr, once.
async fn reconnect(dirs: &StateDir, run: &str, next: u64) -> anyhow::Result<bosun_ui::Client> {
    let started = Instant::now();
    let mut delay = Duration::from_millis(50);
    loop {
        match bosun_ui::Client::connect(dirs, true).await {
            Ok(client) => {
                errln!("bosun: bosund restarted; following run {run} on from chunk {next}");
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

#[cfg(test)]
mod tests;
