//! `bosun logs`, and the log printing `bosun run --follow` shares with it.

use std::io::Write;
use std::process::ExitCode;

use bosun_shared::Timestamp;
use bosun_shared::paths::StateDir;
use bosun_shared::protocol::ui::{Event, FollowParams, Request, Response, RunView};
use bosun_shared::run::Stream;
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
    print_log(&mut client, &a.run, opts).await?;
    Ok(ExitCode::SUCCESS)
}

pub struct FollowOptions {
    pub from_seq: u64,
    pub follow: bool,
    pub stream: Option<Stream>,
    pub timestamps: bool,
    pub json: bool,
}

/// Prints a run's log to stdout until the subscription ends, and returns the run as it is then.
/// Ctrl-C stops following (the run goes on).
pub async fn print_log(
    client: &mut bosun_ui::Client,
    run: &str,
    opts: FollowOptions,
) -> anyhow::Result<RunView> {
    let request = Request::FollowLog(FollowParams {
        run: run.to_string(),
        from_seq: opts.from_seq,
        follow: opts.follow,
        stream: opts.stream,
    });
    let Response::Following { sub, run: mut view } = client.request(request).await? else {
        anyhow::bail!("bosund answered something unexpected");
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, stdout.lock());
    let mut at_line_start = true;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    loop {
        let event = tokio::select! {
            e = client.next_event() => e?,
            _ = interrupt.recv() => {
                out.flush()?;
                if output::stderr_is_terminal() {
                    eprintln!("\nbosun: stopped following; run {} goes on (`bosun stop {}` ends it)", view.short_id, view.short_id);
                }
                return Ok(*view);
            }
        };
        let Some(event) = event else {
            out.flush()?;
            anyhow::bail!("bosund closed the connection before the log ended");
        };
        match event {
            Event::Log {
                sub: s,
                seq,
                stream,
                at,
                data,
            } if s == sub => {
                if opts.json {
                    let line =
                        serde_json::json!({ "seq": seq, "stream": stream, "at": at, "data": data });
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
                view = run;
                return Ok(*view);
            }
            Event::Log { .. }
            | Event::LogLagged { .. }
            | Event::LogEnd { .. }
            | Event::RunChanged { .. }
            | Event::PendingChanged { .. }
            | Event::ChatMessage { .. } => {}
        }
        // Flush whenever nothing else has arrived yet, so a live log shows at once.
        if !client.has_buffered() {
            out.flush()?;
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
