//! The bridge's way to bosund: one connection per request, and the reconnecting loop that
//! streams ride on.
//!
//! A request gets a connection of its own, so a slow request (listing a server's tools can take
//! minutes) never holds up another, and a daemon that restarted between two requests is simply
//! connected to again: nothing is retried behind the person's back, so a write is never sent
//! twice. Connecting starts bosund when it is not running, as the command line does.

use std::time::Duration;

use bosun_protocol::ui::{Request, Response};
use bosun_shared::paths::StateDir;

use super::error::ApiError;
use crate::Client;

/// Connects to the daemon, starting it when it is not running.
pub async fn connect(dirs: &StateDir) -> Result<Client, ApiError> {
    Client::connect(dirs, true).await.map_err(ApiError::from)
}

/// Sends one request on a connection of its own and returns the daemon's answer.
pub async fn request(dirs: &StateDir, body: Request) -> Result<Response, ApiError> {
    let mut client = connect(dirs).await?;
    client.request(body).await.map_err(ApiError::from)
}

/// The waits between attempts to get bosund back: short at first, then every two seconds.
#[derive(Debug)]
pub struct Backoff(Duration);

impl Backoff {
    pub fn new() -> Self {
        Self(Duration::from_millis(50))
    }

    pub async fn wait(&mut self) {
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(Duration::from_secs(2));
    }

    pub fn reset(&mut self) {
        self.0 = Duration::from_millis(50);
    }
}
