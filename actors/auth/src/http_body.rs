//! An answer's body read as it comes, never more than a limit: what a server sends cannot make
//! bosund hold more than it asked for (metadata documents, MCP answers, a diagnosis).

/// The body, at most `max` bytes of it; `true` with it when the server sent more (the rest is
/// not read).
pub async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}
