//! Server-sent events as the bridge reads them: the event streams of Streamable HTTP answers,
//! and the older HTTP+SSE transport (MCP 2024-11-05), whose stream's first `endpoint` event
//! names where to POST (see [`post_address`]).
//!
//! The framing is the WHATWG one, as far as MCP servers use it: lines end with LF or CRLF; a
//! blank line ends an event; `event:` names it (`message` when unnamed); each `data:` line
//! adds a line to its data; lines starting with `:` are comments; `id:`, `retry:` and unknown
//! fields are ignored; an event with no data is not dispatched.

use reqwest::Url;

/// One whole event.
#[derive(Debug, PartialEq, Eq)]
pub struct Event {
    /// Its type: `message` unless the server named another.
    pub name: String,
    pub data: Vec<u8>,
}

/// Server-sent events, fed as bytes come.
#[derive(Default)]
pub struct Events {
    buf: Vec<u8>,
    name: Option<String>,
    data: Vec<u8>,
    has_data: bool,
}

impl Events {
    /// Takes in `chunk`; gives each event it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(i) = self.buf[start..].iter().position(|b| *b == b'\n') {
            let end = start + i;
            let mut line = &self.buf[start..end];
            start = end + 1;
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            if line.is_empty() {
                let name = self.name.take();
                if self.has_data {
                    out.push(Event {
                        name: name.unwrap_or_else(|| "message".into()),
                        data: std::mem::take(&mut self.data),
                    });
                    self.has_data = false;
                }
                continue;
            }
            if line.first() == Some(&b':') {
                continue;
            }
            let (field, value) = match line.iter().position(|b| *b == b':') {
                Some(c) => {
                    let value = &line[c + 1..];
                    (&line[..c], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (line, &b""[..]),
            };
            match field {
                b"data" => {
                    if self.has_data {
                        self.data.push(b'\n');
                    }
                    self.data.extend_from_slice(value);
                    self.has_data = true;
                }
                b"event" => {
                    let name = String::from_utf8_lossy(value).into_owned();
                    self.name = (!name.is_empty()).then_some(name);
                }
                _ => {}
            }
        }
        self.buf.drain(..start);
        out
    }

    /// How many bytes wait for the end of their event.
    pub fn pending(&self) -> usize {
        self.buf.len() + self.data.len()
    }
}

/// Why the `endpoint` event of a server's stream was not followed. Its words name neither the
/// event's address nor a query: only origins.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error(
        "its event stream's `endpoint` event is not an address (the HTTP+SSE transport names where to POST messages there)"
    )]
    NotAnAddress,
    #[error(
        "its event stream's `endpoint` event names an address on {theirs}, not on the server's own origin {ours}: bosun sends the server's messages and secrets only to the origin it was given"
    )]
    OtherOrigin { ours: String, theirs: String },
}

/// Where to POST messages: the `endpoint` event's data, resolved against the event stream's
/// address `base`, which must be on `base`'s origin (scheme, host and port).
pub fn post_address(base: &Url, endpoint: &[u8]) -> Result<Url, EndpointError> {
    let endpoint = std::str::from_utf8(endpoint)
        .map_err(|_| EndpointError::NotAnAddress)?
        .trim();
    if endpoint.is_empty() {
        return Err(EndpointError::NotAnAddress);
    }
    let url = base
        .join(endpoint)
        .map_err(|_| EndpointError::NotAnAddress)?;
    if url.origin() != base.origin() {
        return Err(EndpointError::OtherOrigin {
            ours: base.origin().ascii_serialization(),
            theirs: url.origin().ascii_serialization(),
        });
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, data: &str) -> Event {
        Event {
            name: name.into(),
            data: data.as_bytes().to_vec(),
        }
    }

    #[test]
    fn events_are_whole_across_chunks() {
        let mut e = Events::default();
        assert!(e.feed(b"event: message\r\ndata: {\"a\"").is_empty());
        let got = e.feed(b":1}\r\n\r\nid: 2\ndata: x\ndata: y\n\n");
        assert_eq!(got, vec![ev("message", "{\"a\":1}"), ev("message", "x\ny")]);
        assert_eq!(e.pending(), 0);
    }

    #[test]
    fn an_event_s_type_is_its_own_and_then_forgotten() {
        let mut e = Events::default();
        let got = e.feed(
            b"event: endpoint\ndata: /message?sessionId=1\n\ndata: {}\n\nevent:ping\n\ndata:{}\n\n",
        );
        assert_eq!(
            got,
            vec![
                ev("endpoint", "/message?sessionId=1"),
                ev("message", "{}"),
                // `ping` had no data: not dispatched, and its type does not carry over.
                ev("message", "{}"),
            ]
        );
    }

    #[test]
    fn multi_line_data_comments_and_odd_fields() {
        let mut e = Events::default();
        let got = e.feed(
            b": keep-alive\nretry: 10\ndata\ndata:  two spaces\ndata: {\"x\":\ndata: 1}\nbogus: y\n\n",
        );
        // A bare `data` adds an empty line; only one space after the colon is dropped.
        assert_eq!(got, vec![ev("message", "\n two spaces\n{\"x\":\n1}")]);
        // Byte by byte, CRLF split between chunks, the same.
        let mut e = Events::default();
        let mut got = Vec::new();
        for b in b"event: message\r\ndata: a\r\ndata: b\r\n\r\n" {
            got.extend(e.feed(&[*b]));
        }
        assert_eq!(got, vec![ev("message", "a\nb")]);
        assert_eq!(e.pending(), 0);
    }

    #[test]
    fn the_endpoint_is_resolved_on_the_stream_s_own_origin() {
        let base = Url::parse("http://127.0.0.1:3001/sse?key=SECRET").unwrap();
        assert_eq!(
            post_address(&base, b" /message?sessionId=abc\n")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:3001/message?sessionId=abc"
        );
        assert_eq!(
            post_address(&base, b"messages/1").unwrap().as_str(),
            "http://127.0.0.1:3001/messages/1"
        );
        assert_eq!(
            post_address(&base, b"http://127.0.0.1:3001/m")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:3001/m"
        );
        for elsewhere in [
            &b"https://127.0.0.1:3001/m"[..],
            b"http://127.0.0.1:3002/m",
            b"http://evil.example/m?sessionId=s3cr3t",
            b"//evil.example/m",
        ] {
            let err = post_address(&base, elsewhere).unwrap_err();
            let words = err.to_string();
            assert!(
                matches!(err, EndpointError::OtherOrigin { .. })
                    && words.contains("http://127.0.0.1:3001")
                    && !words.contains("SECRET")
                    && !words.contains("s3cr3t")
                    && !words.contains("/m"),
                "{words}"
            );
        }
        for bad in [&b""[..], b"  ", b"http://[::1", b"\xff"] {
            assert_eq!(post_address(&base, bad), Err(EndpointError::NotAnAddress));
        }
    }
}
