//! What the bridge answers when something is refused or fails: a status and
//! `{"error": {"code", "message"}}`, the message in plain words for the person.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bosun_protocol::{ErrorCode, WireError};
use serde_json::json;

use crate::ClientError;

/// A refusal or failure of one API request.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": { "code": self.code, "message": self.message } });
        (self.status, Json(body)).into_response()
    }
}

/// The daemon's error codes as HTTP statuses: the person's mistakes are 4xx, the daemon being
/// away or busy is 503 (the page tries again), its own failures 500.
impl From<WireError> for ApiError {
    fn from(e: WireError) -> Self {
        let (status, code) = match e.code {
            ErrorCode::BadRequest => (StatusCode::BAD_REQUEST, "bad_request"),
            ErrorCode::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            ErrorCode::Ambiguous => (StatusCode::BAD_REQUEST, "ambiguous"),
            ErrorCode::Conflict => (StatusCode::CONFLICT, "conflict"),
            ErrorCode::BadFrame => (StatusCode::BAD_REQUEST, "bad_frame"),
            ErrorCode::FrameTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "frame_too_large"),
            ErrorCode::ProtocolVersion => (StatusCode::BAD_GATEWAY, "protocol_version"),
            ErrorCode::Unauthorized => (StatusCode::FORBIDDEN, "unauthorized"),
            ErrorCode::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, "shutting_down"),
            ErrorCode::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ErrorCode::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        Self::new(status, code, e.message)
    }
}

impl From<ClientError> for ApiError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Daemon(w) => w.into(),
            ClientError::NotRunning(_)
            | ClientError::StartFailed(_)
            | ClientError::Connection(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                format!("bosund cannot be reached just now ({e}); try again in a moment"),
            ),
            ClientError::Refused(w) => Self::new(
                StatusCode::BAD_GATEWAY,
                "refused",
                format!("bosund refused the web UI: {w}"),
            ),
            ClientError::Unexpected => Self::new(
                StatusCode::BAD_GATEWAY,
                "unexpected",
                "bosund answered something this web UI does not know; are bosun and bosund the same version?",
            ),
        }
    }
}
