//! The error shape that crosses every socket: a stable code for programs and a message in plain
//! words for people. Internal detail (paths of the store, Rust error chains) stays in the
//! daemon's log; what crosses is written for the person reading it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What kind of failure, for programs that react to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request was understood but its content is not acceptable; fix it and retry.
    BadRequest,
    /// No such run (or other object).
    NotFound,
    /// A prefix matched more than one run.
    Ambiguous,
    /// The request conflicts with the current state (e.g. stopping a run that has ended).
    Conflict,
    /// A frame was not valid JSON of the expected shape; the connection stays open.
    BadFrame,
    /// A frame was longer than the limit; the connection is closed.
    FrameTooLarge,
    /// The peer speaks another protocol version.
    ProtocolVersion,
    /// The peer is not who it claims to be (wrong uid, wrong runner token).
    Unauthorized,
    /// The daemon is shutting down and takes no new work.
    ShuttingDown,
    /// Not possible yet (the daemon is still starting or recovering); retry shortly.
    Unavailable,
    /// The daemon could not do it because of a failure on its side; retrying may help.
    Internal,
}

/// An error as it crosses the socket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    pub code: ErrorCode,
    pub message: String,
}

impl WireError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Conflict, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WireError {}
