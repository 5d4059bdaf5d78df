//! Signing in to a server reached by address: `bosun mcp sign-in` as a person (the page in
//! the browser, waited for, Ctrl-C cancels it) or as a machine (client credentials), the
//! sign-in options `add` and `edit` share, and a request that starts a server, signed in
//! first when it asks and a person is at the terminal.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bosun_protocol::ErrorCode;
use bosun_protocol::auth::{
    McpSignIn, McpSignInCancel, McpSignInFinish, McpSignInMachine, SignInStarted,
};
use bosun_protocol::call::Call;
use bosun_protocol::mcp::{McpShow, SecretValue, ServerKind, ServerView, SignInBy};
use bosun_shared::agents::{MAX_SECRET_VALUE, secret_too_long};
use bosun_shared::paths::StateDir;
use bosun_shared::size::read_at_most;
use bosun_ui::{Client, ClientError};
use clap::{Args, ValueEnum};

use super::{connect, done};

/// A machine's sign-in (OAuth client credentials), for servers that sign in programs rather
/// than people.
#[derive(Args, Debug)]
pub struct MachineArgs {
    /// Sign in as a machine with the client's own credentials (OAuth client credentials): no
    /// browser; needs --client-id and --client-secret-stdin or --private-key-file
    #[arg(long, requires = "client_id")]
    client_credentials: bool,
    /// The client id the service gave the machine
    #[arg(long, value_name = "ID", requires = "client_credentials")]
    client_id: Option<String>,
    /// Read the client's secret from stdin (client_secret_basic; kept in the keychain)
    #[arg(
        long,
        requires = "client_credentials",
        conflicts_with = "private_key_file"
    )]
    client_secret_stdin: bool,
    /// The client's private key, a PEM file (P-256 EC or RSA; private_key_jwt): read once into
    /// the keychain, never again from the file
    #[arg(long, value_name = "PATH", requires = "client_credentials")]
    pub(super) private_key_file: Option<PathBuf>,
}

impl MachineArgs {
    /// The request, with the secret from stdin or the key from its file; `None` without
    /// --client-credentials.
    pub(super) fn request(&self, name: &str) -> anyhow::Result<Option<McpSignInMachine>> {
        if !self.client_credentials {
            return Ok(None);
        }
        let client_secret = if self.client_secret_stdin {
            Some(client_secret_from_stdin()?)
        } else {
            None
        };
        let private_key = match &self.private_key_file {
            Some(path) => {
                // The error names the file, never what is in it.
                let could_not = |e| {
                    anyhow::anyhow!(
                        "could not read the private key file {}: {e}",
                        path.display()
                    )
                };
                let file = std::fs::File::open(path).map_err(could_not)?;
                let Some(text) = read_at_most(file, MAX_SECRET_VALUE).map_err(could_not)? else {
                    anyhow::bail!(
                        "{}",
                        secret_too_long(&format!("the private key file {}", path.display()))
                    );
                };
                Some(SecretValue(text))
            }
            None => None,
        };
        if client_secret.is_none() && private_key.is_none() {
            anyhow::bail!(
                "--client-credentials needs the client's secret (--client-secret-stdin) or its private key (--private-key-file PATH)"
            );
        }
        Ok(Some(McpSignInMachine {
            server: name.to_string(),
            client_id: self.client_id.clone().unwrap_or_default(),
            client_secret,
            private_key,
        }))
    }
}

/// The sign-in options `add` and `edit` share.
#[derive(Args, Debug)]
pub struct SignInArgs {
    /// A client id from the service's developer settings, for a server that takes no
    /// registration ("" removes it)
    #[arg(long, value_name = "ID")]
    pub(super) client_id: Option<String>,
    /// Read the client id's secret from stdin (kept in the keychain)
    #[arg(long)]
    pub(super) client_secret_stdin: bool,
    /// The loopback port the sign-in's answer comes back to (for a client id registered with a
    /// fixed redirect address; 0: any free port)
    #[arg(long, value_name = "PORT")]
    pub(super) callback_port: Option<u16>,
    /// Who signs in: bosun, or claude-code (for services that let only listed apps register;
    /// Claude Code then signs in with its own sign-ins)
    #[arg(long, value_enum, value_name = "WHO")]
    pub(super) sign_in_by: Option<SignInByArg>,
    /// The https:// address where you publish bosun's client metadata document: bosun's
    /// client id wherever the authorization server takes such documents, instead of
    /// registering ("" removes it)
    #[arg(long, value_name = "URL")]
    pub(super) client_metadata_url: Option<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(super) enum SignInByArg {
    Bosun,
    ClaudeCode,
}

impl From<SignInByArg> for SignInBy {
    fn from(a: SignInByArg) -> Self {
        match a {
            SignInByArg::Bosun => SignInBy::Bosun,
            SignInByArg::ClaudeCode => SignInBy::ClaudeCode,
        }
    }
}

impl SignInArgs {
    /// The client secret, read from stdin when asked for.
    pub(super) fn secret(&self) -> anyhow::Result<Option<SecretValue>> {
        if !self.client_secret_stdin {
            return Ok(None);
        }
        client_secret_from_stdin().map(Some)
    }
}

/// `--client-secret-stdin`: the secret is all of stdin but its last line end, read no further
/// than one byte past the secret values' rule.
fn client_secret_from_stdin() -> anyhow::Result<SecretValue> {
    // Room for a line end after a value of the most bytes allowed.
    let Some(text) = read_at_most(std::io::stdin().lock(), MAX_SECRET_VALUE + 2)? else {
        anyhow::bail!(
            "--client-secret-stdin: {}",
            secret_too_long("the client secret")
        );
    };
    let value = text.trim_end_matches(['\n', '\r']).to_string();
    if value.is_empty() {
        anyhow::bail!("--client-secret-stdin: stdin was empty; pipe the secret in");
    }
    if value.len() > MAX_SECRET_VALUE {
        anyhow::bail!(
            "--client-secret-stdin: {}",
            secret_too_long("the client secret")
        );
    }
    Ok(SecretValue(value))
}

/// Starts the sign-in, opens the page in the person's browser (or prints it), and waits.
pub(super) async fn sign_in(
    dirs: &StateDir,
    name: &str,
    no_browser: bool,
    new_client: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let server = sign_in_flow(dirs, name, no_browser, new_client).await?;
    done(json, &server, "signed in")
}

/// A person is at this terminal to go through a sign-in.
fn person_at_hand() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks `call` of the server `name`. When the server asks for a sign-in, or a wider or new one
/// (a 403 `insufficient_scope`, a move to another authorization server), and a person is at
/// the terminal, bosun goes through the sign-in with them (the browser opens) and asks once
/// more; otherwise the error says what to run.
pub(super) async fn with_sign_in<C: Call + Clone>(
    dirs: &StateDir,
    call: C,
    name: &str,
    progress: bool,
) -> anyhow::Result<C::Reply> {
    let mut client = connect(dirs).await?;
    let first = with_progress(&mut client, call.clone(), name, progress).await;
    let asked = match &first {
        Err(ClientError::Daemon(e)) if e.code == ErrorCode::Unauthorized && person_at_hand() => {
            e.message.clone()
        }
        _ => return Ok(first?),
    };
    // Only a server bosun signs in to: a stdio server's credentials are its lines, and Claude
    // Code signs in to its own.
    let server = client
        .call(McpShow {
            server: name.to_string(),
        })
        .await?;
    if server.kind == ServerKind::Stdio || server.sign_in_by != SignInBy::Bosun {
        return Ok(first?);
    }
    errln!("bosun: {asked}");
    errln!("bosun: signing in to {name} now, then asking once more");
    sign_in_flow(dirs, name, false, false).await?;
    let mut client = connect(dirs).await?;
    Ok(with_progress(&mut client, call, name, progress).await?)
}

/// Starts the sign-in, opens the page in the person's browser (or prints it), and waits for it;
/// the server as signed in.
async fn sign_in_flow(
    dirs: &StateDir,
    name: &str,
    no_browser: bool,
    new_client: bool,
) -> anyhow::Result<ServerView> {
    let mut client = connect(dirs).await?;
    let SignInStarted {
        attempt,
        url,
        wait_secs,
        reused_registration,
        warning,
    } = client
        .call(McpSignIn {
            server: name.to_string(),
            new_client,
        })
        .await?;
    // Asked not to, or it could not: the person opens the page.
    let opened = if no_browser {
        None
    } else {
        super::super::ui::open_browser(&url).await.ok()
    };
    match opened {
        Some(how) => errln!("bosun: opened the sign-in page for {name} with {how}"),
        None => errln!("bosun: open this page to sign in to {name}:\n\n  {url}\n"),
    }
    if let Some(w) = &warning {
        errln!("bosun: warning: {w}");
    }
    if reused_registration {
        // The server's page is the only one to know when it forgot bosun's client.
        errln!(
            "bosun: this uses the client bosun registered there before; if the page says the client or app is unknown, press Ctrl-C and run `bosun mcp sign-in {name} --new-client`"
        );
    }
    // Taken from here on: Ctrl-C cancels the sign-in rather than leave it waiting in bosund.
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    errln!(
        "bosun: waiting for the sign-in to finish ({} at most; Ctrl-C cancels it)…",
        bosun_shared::time::format_duration(Duration::from_secs(wait_secs))
    );
    let finish = client.call(McpSignInFinish { attempt });
    tokio::pin!(finish);
    let server = tokio::select! {
        server = &mut finish => server?,
        _ = interrupt.recv() => {
            // Cancelled over a connection of its own (this one waits for the end), then the
            // end is told as it came: cancelled, or signed in when the answer was already in.
            let cancelled = match connect(dirs).await {
                Ok(mut other) => other
                    .call(McpSignInCancel { attempt })
                    .await
                    .map(|_| ())
                    .map_err(anyhow::Error::from),
                Err(e) => Err(e),
            };
            if let Err(e) = cancelled {
                // bosund may still wait for the browser's answer: its wait runs out by itself.
                anyhow::bail!("could not cancel the sign-in to {name}: {e:#}");
            }
            // The answer comes at once; a second Ctrl-C does not wait for it.
            tokio::select! {
                server = &mut finish => server?,
                _ = interrupt.recv() => anyhow::bail!("the sign-in to {name} is cancelled"),
            }
        }
    };
    Ok(server)
}

/// Signs a machine in (client credentials): one request, no browser.
pub(super) async fn sign_in_machine(
    dirs: &StateDir,
    request: McpSignInMachine,
    key_file: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let server = client.call(request).await?;
    if let Some(path) = key_file {
        errln!(
            "bosun: the private key from {} is in the keychain now; bosun does not read the file again (you may remove it)",
            path.display()
        );
    }
    done(json, &server, "signed in as a machine (client credentials)")
}

/// Sends a request that starts a server, showing on a terminal how long it has been going.
async fn with_progress<C: Call>(
    client: &mut Client,
    call: C,
    name: &str,
    show: bool,
) -> Result<C::Reply, ClientError> {
    let show = show && std::io::stderr().is_terminal();
    let t0 = Instant::now();
    let mut ticker = tokio::time::interval(Duration::from_millis(500));
    let pending = client.call(call);
    tokio::pin!(pending);
    let result = loop {
        tokio::select! {
            r = &mut pending => break r,
            _ = ticker.tick(), if show => {
                let secs = t0.elapsed().as_secs();
                if secs >= 1 {
                    let hint = if secs >= 5 { " (a first run of an npx server downloads its package: up to 2 minutes)" } else { "" };
                    let name = bosun_shared::text::visible(name);
                    crate::term::raw_err(&format!("\r\x1b[2Kstarting {name}… {secs}s{hint}"));
                }
            }
        }
    };
    if show && t0.elapsed() >= Duration::from_secs(1) {
        crate::term::raw_err("\r\x1b[2K");
    }
    result
}
