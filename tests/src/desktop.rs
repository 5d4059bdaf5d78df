//! A real desktop notification service for a test: a private D-Bus session bus, an X server
//! with no screen (Xvfb) and dunst on both, so that bosund's notifications go where a person's
//! desktop would take them. What dunst was sent is read back with `dunstctl`. Everything is
//! ended when this is dropped, leaving nothing in /tmp.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::{SessionBus, wait_for};

pub struct Desktop {
    dunst: Child,
    /// dunst's configuration: empty, so a person's own cannot change what a test sees.
    _config: tempfile::NamedTempFile,
    xvfb: Child,
    _bus: SessionBus,
    /// `DBUS_SESSION_BUS_ADDRESS` for the test's bosun.
    pub address: String,
}

/// One notification as dunst took it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    pub app: String,
    pub summary: String,
    pub body: String,
}

impl Desktop {
    pub fn start() -> anyhow::Result<Self> {
        let bus = SessionBus::start(&[])?;
        let address = bus.address.clone();
        let (xvfb, display) = xvfb()?;
        let config = tempfile::NamedTempFile::new()?;
        let dunst = Command::new("dunst")
            .args(["-config", &config.path().display().to_string()])
            .env("DISPLAY", &display)
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("could not start dunst (install the Debian package dunst)")?;
        let desktop = Self {
            dunst,
            _config: config,
            xvfb,
            _bus: bus,
            address,
        };
        // dunst is up once it answers on the bus.
        wait_for("dunst on the session bus", Duration::from_secs(20), || {
            Ok(desktop.dunstctl(&["is-paused"]).ok())
        })?;
        Ok(desktop)
    }

    fn dunstctl(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new("dunstctl")
            .args(args)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .stdin(Stdio::null())
            .output()
            .context("could not run dunstctl")?;
        if !out.status.success() {
            bail!(
                "dunstctl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Every notification dunst was sent so far, oldest first (those on screen are closed, so
    /// that its history has them).
    pub fn shown(&self) -> anyhow::Result<Vec<Shown>> {
        self.dunstctl(&["close-all"])?;
        let history: Value = serde_json::from_str(&self.dunstctl(&["history"])?)?;
        let text = |n: &Value, key: &str| n[key]["data"].as_str().unwrap_or_default().to_string();
        let mut all: Vec<(i64, Shown)> = history["data"][0]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                (
                    n["id"]["data"].as_i64().unwrap_or_default(),
                    Shown {
                        app: text(n, "appname"),
                        summary: text(n, "summary"),
                        body: text(n, "body"),
                    },
                )
            })
            .collect();
        all.sort_by_key(|(id, _)| *id);
        Ok(all.into_iter().map(|(_, s)| s).collect())
    }

    /// Waits until `n` notifications were sent, and returns them.
    pub fn wait_shown(&self, n: usize, timeout: Duration) -> anyhow::Result<Vec<Shown>> {
        wait_for(&format!("{n} notifications"), timeout, || {
            Ok(self.shown().ok().filter(|s| s.len() >= n))
        })
    }
}

/// Xvfb on the first free display from a number of this process's own, and that display.
fn xvfb() -> anyhow::Result<(Child, String)> {
    let first = 100 + std::process::id() % 400;
    for n in first..first + 50 {
        if std::path::Path::new(&format!("/tmp/.X{n}-lock")).exists() {
            continue;
        }
        let display = format!(":{n}");
        let mut child = Command::new("Xvfb")
            .args([
                display.as_str(),
                "-screen",
                "0",
                "640x480x24",
                "-nolisten",
                "tcp",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("could not start Xvfb (install the Debian package xvfb)")?;
        // It is up once its socket is; it exits at once when the display is taken.
        let socket = format!("/tmp/.X11-unix/X{n}");
        for _ in 0..100 {
            if child.try_wait()?.is_some() {
                break;
            }
            if std::path::Path::new(&socket).exists() {
                return Ok((child, display));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    bail!("Xvfb found no free display")
}

impl Drop for Desktop {
    fn drop(&mut self) {
        let _ = self.dunst.kill();
        let _ = self.dunst.wait();
        // SIGTERM, so that Xvfb removes its lock file and socket.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.xvfb.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.xvfb.wait();
        // The bus goes after this (a field).
    }
}
