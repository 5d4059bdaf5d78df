//! `bosun-mcp-http`: bosun's bridge to an MCP server reached by address (Streamable HTTP, or
//! the older HTTP+SSE transport), started by a run's gateway (in `bosun-runner`) as if it were
//! a stdio server.
//!
//! Its first line on stdin says which server, at what address (its query a secret) and with
//! which header lines (the sign-in's bearer token among them): never in its arguments or
//! environment, which other processes can read. Every further line is a message of the CLI's,
//! POSTed to the server (see [`http`]); the server's messages come out on stdout, one a line.
//! Over HTTP+SSE, the end of the server's event stream ends the bridge, as a stdio server
//! that exits (see [`sse`]).
//! What the person should know (a session opened again, a message that could not be
//! delivered) goes to stderr, which the gateway puts in the run's log. When stdin closes, the
//! session is ended at the server and the bridge exits.
//!
//! It is a program of its own so that `bosun-runner`, one per run, does not carry an HTTP
//! client: most runs have no server reached by address.

mod http;
mod sse;

use std::process::ExitCode;

use bosun_shared::gateway::HttpBridge;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bosun-mcp-http: could not start: {e}");
            return ExitCode::from(2);
        }
    };
    let ran = runtime.block_on(run());
    // Reading stdin holds a thread of the runtime's until a line comes: when the bridge ends
    // for the server's sake (its event stream ended), it is not waited for.
    runtime.shutdown_background();
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bosun-mcp-http: {e}");
            ExitCode::from(2)
        }
    }
}

/// Why the bridge ended other than by stdin closing.
#[derive(Debug, thiserror::Error)]
enum BridgeError {
    #[error("could not read what to reach: {0}")]
    Read(std::io::Error),
    /// Stdin closed before its first line.
    #[error("started without what to reach: bosun's gateway starts it with a first line on stdin")]
    NoTarget,
    #[error("the first line is not what bosun's gateway sends ({0})")]
    BadTarget(serde_json::Error),
    /// HTTP+SSE: the server's event stream ended, and why.
    #[error("the event stream of {server} ended: {why}")]
    StreamEnded { server: String, why: String },
}

async fn run() -> Result<(), BridgeError> {
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let first = stdin
        .next_line()
        .await
        .map_err(BridgeError::Read)?
        .ok_or(BridgeError::NoTarget)?;
    let target: HttpBridge = serde_json::from_str(&first).map_err(BridgeError::BadTarget)?;
    let (notes_tx, mut notes) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut err = tokio::io::stderr();
        while let Some(note) = notes.recv().await {
            let _ = err.write_all(format!("{note}\n").as_bytes()).await;
        }
    });
    let (side, mut from_server) = http::HttpSide::new(
        &target.name,
        &target.url,
        &target.headers,
        target.transport,
        notes_tx,
    );
    let mut stdout = tokio::io::stdout();
    loop {
        tokio::select! {
            line = stdin.next_line() => match line {
                Ok(Some(line)) => {
                    if !side.answered(&line) {
                        side.post(line.into_bytes());
                    }
                }
                Ok(None) | Err(_) => break,
            },
            msg = from_server.recv() => match msg {
                Some(mut msg) => {
                    msg.push(b'\n');
                    if stdout.write_all(&msg).await.and(stdout.flush().await).is_err() {
                        break;
                    }
                }
                None => break,
            },
            why = side.stream_ended() => {
                // Messages it sent before its end, which the loop has not written yet, go
                // out first.
                while let Ok(mut msg) = from_server.try_recv() {
                    msg.push(b'\n');
                    if stdout.write_all(&msg).await.is_err() {
                        break;
                    }
                }
                let _ = stdout.flush().await;
                return Err(BridgeError::StreamEnded { server: target.name, why });
            }
        }
    }
    side.end().await;
    Ok(())
}
