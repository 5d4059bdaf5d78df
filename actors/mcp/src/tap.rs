//! What a server answered to `tools/list`, as it sent it, before anything of rmcp's drops a
//! tool from it.
//!
//! rmcp reads a `tools/list` page into typed tools; a page with one malformed tool does not read
//! as a listing at all, and over Streamable HTTP rmcp drops a tool whose `x-mcp-header`
//! annotations are malformed without a word. bosun wants every good tool listed and every bad
//! one shown with what is wrong, so it keeps each page's result as JSON: [`Pages`] is filled by
//! the transport wrapper ([`super::revision::Observed`], for every transport) and, for Streamable
//! HTTP, first by [`Tap`], an HTTP client that sees the answer before rmcp's transport filters
//! it. The first one to keep a page's result wins.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::Value;

/// The `tools/list` results heard, by request id, in the order they came.
#[derive(Clone, Default)]
pub struct Pages(Arc<Mutex<PagesInner>>);

#[derive(Default)]
struct PagesInner {
    /// The ids of the `tools/list` requests sent.
    asked: Vec<RequestId>,
    /// Their results, the first heard for each id.
    heard: Vec<(RequestId, Value)>,
}

impl Pages {
    /// A `tools/list` request is going out.
    pub fn note_request(&self, message: &ClientJsonRpcMessage) {
        if let ClientJsonRpcMessage::Request(r) = message
            && matches!(r.request, ClientRequest::ListToolsRequest(_))
            && let Ok(mut p) = self.0.lock()
            && !p.asked.contains(&r.id)
        {
            p.asked.push(r.id.clone());
        }
    }

    /// A message came from the server: kept when it answers a `tools/list`.
    pub fn note_answer(&self, message: &ServerJsonRpcMessage) {
        let ServerJsonRpcMessage::Response(r) = message else {
            return;
        };
        let Ok(mut p) = self.0.lock() else { return };
        if !p.asked.contains(&r.id) || p.heard.iter().any(|(id, _)| *id == r.id) {
            return;
        }
        if let Ok(v) = serde_json::to_value(&r.result) {
            p.heard.push((r.id.clone(), v));
        }
    }

    /// One raw SSE `data` field from the server.
    fn note_data(&self, data: &str) {
        if let Ok(message) = serde_json::from_str::<Value>(data)
            && let (Some(id), Some(result)) = (message.get("id"), message.get("result"))
            && let Ok(id) = serde_json::from_value::<RequestId>(id.clone())
            && let Ok(mut p) = self.0.lock()
            && p.asked.contains(&id)
            && !p.heard.iter().any(|(i, _)| *i == id)
        {
            p.heard.push((id, result.clone()));
        }
    }

    /// The result of the latest `tools/list` answered, taken out.
    pub fn take_latest(&self) -> Option<Value> {
        let mut p = self.0.lock().ok()?;
        let latest = p.heard.pop().map(|(_, v)| v);
        p.heard.clear();
        latest
    }
}

/// reqwest as rmcp's Streamable HTTP client, keeping `tools/list` results as sent.
#[derive(Clone)]
pub struct Tap {
    /// reqwest, with DPoP proofs where the token is bound.
    pub inner: super::dpop_http::McpHttp,
    pub pages: Pages,
}

impl Tap {
    fn watch(&self, response: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
        // rmcp's enum is open (non-exhaustive): what is neither JSON nor a stream passes as is.
        if let StreamableHttpPostResponse::Json(message, _) = &response {
            self.pages.note_answer(message);
        }
        if let StreamableHttpPostResponse::Sse(stream, session) = response {
            let pages = self.pages.clone();
            let stream = stream
                .inspect(move |event| {
                    if let Ok(event) = event
                        && let Some(data) = event.data.as_deref()
                    {
                        pages.note_data(data);
                    }
                })
                .boxed();
            return StreamableHttpPostResponse::Sse(stream, session);
        }
        response
    }
}

impl StreamableHttpClient for Tap {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.pages.note_request(&message);
        let response = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await?;
        Ok(self.watch(response))
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.pages.note_request(&message);
        let response = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.watch(response))
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.pages.note_request(&message);
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        Ok(self.watch(response))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
