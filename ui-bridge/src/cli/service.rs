//! bosund as a systemd user service: `bosun daemon install` writes
//! `~/.config/systemd/user/bosund.service` and enables it where a user manager answers (else it
//! says what to run), `bosun daemon uninstall` takes it away, and [`StartedBy`] tells how the
//! running bosund was started, for `bosun daemon status`.
//!
//! **Runners outlive bosund, under systemd too.** Each runner leaves bosund's session, but
//! stays in the unit's control group, which systemd by default kills whole when the unit stops
//! or restarts. The unit says `KillMode=process`: systemd signals bosund alone; a crash leaves
//! the runs going and the next bosund (`Restart=on-failure`) adopts them, and a stop is
//! bosund's own SIGTERM, which stops every run by its ladder as `bosun daemon stop` does.
//!
//! # Caveats
//! The unit carries this shell's `PATH` (where the agents' CLIs are found) and state directory
//! as they are at install time; run `bosun daemon install` again after changing either.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::Context;
use bosun_protocol::runs::DaemonStatus;
use bosun_shared::paths::StateDir;
use bosun_shared::process::{Pid, environ_value, output_blocking, systemd_service};
use serde::Serialize;

use crate::cli::output;

/// The unit's file name.
const UNIT: &str = "bosund.service";
/// How long systemctl and loginctl have to answer.
const SYSTEMCTL_LIMIT: Duration = Duration::from_secs(30);
/// The environment a bosund needs from the person's, when set: where its state is, where
/// programs are, the keychain file of a machine without a desktop, its own settings.
const CARRIED: [&str; 5] = [
    "PATH",
    "BOSUN_FAKE_KEYCHAIN",
    "BOSUN_MIN_FREE_MB",
    "BOSUN_LOG",
    "BOSUN_RUNNER_BIN",
];

/// How the running bosund was started.
#[derive(Debug, Serialize)]
#[serde(tag = "by", rename_all = "lowercase")]
pub enum StartedBy {
    /// By systemd, as the service `unit`.
    Systemd { unit: Option<String> },
    /// On demand, by a bosun command.
    Bosun,
    /// Neither: by hand, or by another program.
    Other,
}

impl StartedBy {
    /// Read from the process's own environment and control group (bosund runs as this user).
    pub fn of(pid: u32) -> Self {
        let pid = Pid::of_child(pid);
        if environ_value(pid, bosun_ui::daemon::STARTED_BY).as_deref() == Some("bosun") {
            StartedBy::Bosun
        } else if environ_value(pid, "INVOCATION_ID").is_some() {
            StartedBy::Systemd {
                unit: systemd_service(pid),
            }
        } else {
            StartedBy::Other
        }
    }

    pub fn words(&self) -> String {
        match self {
            StartedBy::Systemd { unit: Some(u) } => format!("by systemd ({u})"),
            StartedBy::Systemd { unit: None } => "by systemd".into(),
            StartedBy::Bosun => "on demand by bosun".into(),
            StartedBy::Other => "by hand or another program (not systemd, not bosun)".into(),
        }
    }
}

/// Where user units live: `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`.
fn unit_path() -> anyhow::Result<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .context("neither XDG_CONFIG_HOME nor HOME is set, so there is no place for a user unit; set HOME")?;
    Ok(config.join("systemd/user").join(UNIT))
}

/// A value for `Environment="KEY=VALUE"`: quoted, with systemd's specifiers (`%`) and the
/// quote's escapes written out.
fn quoted(key: &str, value: &str) -> String {
    let v = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('%', "%%");
    format!("Environment=\"{key}={v}\"")
}

/// The unit for `bosund` at `bin` with state directory `dirs`.
fn unit_text(bin: &Path, dirs: &StateDir) -> String {
    let exec = bin.display().to_string().replace('%', "%%");
    let mut env = vec![quoted("BOSUN_HOME", &dirs.root().display().to_string())];
    for key in CARRIED {
        if let Some(v) = std::env::var_os(key).filter(|v| !v.is_empty()) {
            env.push(quoted(key, &v.to_string_lossy()));
        }
    }
    format!(
        "# Written by `bosun daemon install`; `bosun daemon uninstall` removes it.
[Unit]
Description=bosund, the daemon of bosun (state directory {state})

[Service]
Type=simple
ExecStart={exec}
{env}
Restart=on-failure
RestartSec=2
# Runners leave bosund's session and must outlive it: systemd signals bosund alone. After a
# crash the runs go on and the next bosund adopts them; a stop is bosund's SIGTERM, which stops
# every run by its ladder (SIGINT, SIGTERM, SIGKILL, 5 s apart by default) before it exits.
KillMode=process
TimeoutStopSec=120

[Install]
WantedBy=default.target
",
        state = dirs.root().display().to_string().replace('%', "%%"),
        env = env.join("\n"),
    )
}

/// Runs `program args` with a deadline; its output when it succeeded, `Err` with why not.
fn run(program: &str, args: &[&str]) -> Result<String, RunError> {
    let out =
        output_blocking(Command::new(program).args(args), SYSTEMCTL_LIMIT).map_err(|why| {
            RunError::Run {
                program: program.into(),
                why,
            }
        })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(RunError::Failed {
            command: format!("{program} {}", args.join(" ")),
            output: text.trim().into(),
        })
    }
}

/// Why [`run`] got no output.
#[derive(Debug, thiserror::Error)]
enum RunError {
    /// It could not be started, or ran past its deadline.
    #[error("{program}: {why}")]
    Run {
        program: String,
        why: bosun_shared::process::HelperError,
    },
    /// It said no: the command line, and what it printed.
    #[error("{command}: {output}")]
    Failed { command: String, output: String },
}

/// Whether `systemctl --user` reaches a user manager.
fn user_manager() -> bool {
    run("systemctl", &["--user", "show-environment"]).is_ok()
}

/// Whether the person's user manager outlives their sessions (lingering); `None` when loginctl
/// can't say.
fn lingering() -> Option<bool> {
    let user = std::env::var("USER").ok()?;
    let out = run("loginctl", &["show-user", &user, "--property=Linger"]).ok()?;
    Some(out.trim() == "Linger=yes")
}

#[derive(Debug, Serialize)]
struct Installed {
    unit: PathBuf,
    bosund: PathBuf,
    /// What bosun ran (systemctl), in order.
    ran: Vec<String>,
    /// What the person should run, in order, when bosun could not.
    to_run: Vec<String>,
    /// Said when the user manager does not linger: runs end with the person's last session.
    #[serde(skip_serializing_if = "Option::is_none")]
    linger: Option<String>,
}

pub async fn install(dirs: &StateDir, json: bool) -> anyhow::Result<ExitCode> {
    let bin = bosun_ui::daemon::daemon_binary()?;
    let bin = std::path::absolute(&bin)
        .with_context(|| format!("could not make {} an absolute path", bin.display()))?;
    let path = unit_path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("could not make {}", dir.display()))?;
    }
    let tmp = path.with_extension("service.tmp");
    std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(unit_text(&bin, dirs).as_bytes()))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .with_context(|| format!("could not write {}", path.display()))?;

    // A bosund already running outside the unit keeps the state directory: starting the unit
    // now would only make a second one fail. It is enabled, and started once that one stops.
    let outside = match bosun_ui::Client::connect(dirs, false).await {
        Ok(mut c) => match c.call(DaemonStatus).await {
            Ok(s) => !matches!(StartedBy::of(s.pid), StartedBy::Systemd { .. }),
            Err(_) => true,
        },
        Err(_) => false,
    };
    let enable: &[&str] = if outside {
        &["--user", "enable", UNIT]
    } else {
        &["--user", "enable", "--now", UNIT]
    };
    let mut ran = Vec::new();
    let mut to_run = Vec::new();
    let systemd = super::doctor::find("systemctl").is_some() && user_manager();
    for args in [&["--user", "daemon-reload"][..], enable] {
        if systemd {
            run("systemctl", args)?;
            ran.push(format!("systemctl {}", args.join(" ")));
        } else {
            to_run.push(format!("systemctl {}", args.join(" ")));
        }
    }
    if outside {
        to_run.push(format!(
            "bosun daemon stop && systemctl --user start {UNIT}   # bosund runs already, not as the service; stopping it stops its runs"
        ));
    }
    let linger = match lingering() {
        Some(true) => None,
        Some(false) | None => Some(format!(
            "runs end when your last session does unless your user manager lingers: loginctl enable-linger {}",
            std::env::var("USER").unwrap_or_else(|_| "$USER".into())
        )),
    };
    let installed = Installed {
        unit: path,
        bosund: bin,
        ran,
        to_run,
        linger,
    };
    if json {
        output::print_json(&installed)?;
    } else {
        outln!(
            "wrote {} (bosund: {})",
            installed.unit.display(),
            installed.bosund.display()
        );
        for r in &installed.ran {
            outln!("ran: {r}");
        }
        if !installed.to_run.is_empty() {
            if !systemd {
                outln!("no systemd user manager answers here; where there is one, run:");
            } else {
                outln!("then run:");
            }
            for r in &installed.to_run {
                outln!("  {r}");
            }
        }
        if let Some(l) = &installed.linger {
            outln!("{l}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn uninstall(json: bool) -> anyhow::Result<ExitCode> {
    let path = unit_path()?;
    if !path.exists() {
        anyhow::bail!(
            "there is no {} to remove: bosund is not installed as a service for this user",
            path.display()
        );
    }
    let mut ran = Vec::new();
    let systemd = super::doctor::find("systemctl").is_some() && user_manager();
    if systemd {
        // Stopping the unit stops bosund by SIGTERM, and every run with it.
        let args = ["--user", "disable", "--now", UNIT];
        run("systemctl", &args)?;
        ran.push(format!("systemctl {}", args.join(" ")));
    }
    std::fs::remove_file(&path).with_context(|| format!("could not remove {}", path.display()))?;
    if systemd {
        let args = ["--user", "daemon-reload"];
        run("systemctl", &args)?;
        ran.push(format!("systemctl {}", args.join(" ")));
    }
    if json {
        output::print_json(&serde_json::json!({ "removed": path, "ran": ran }))?;
    } else {
        outln!("removed {}", path.display());
        for r in &ran {
            outln!("ran: {r}");
        }
        if !systemd {
            outln!(
                "no systemd user manager answers here; where bosund runs as the service, run: systemctl --user disable --now {UNIT}"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn environment_values_are_quoted_for_systemd() {
        assert_eq!(
            quoted("BOSUN_HOME", r#"/home/a "b"/100%\x"#),
            r#"Environment="BOSUN_HOME=/home/a \"b\"/100%%\\x""#
        );
    }
}
