//! Addresses on the web that bosun follows on the person's behalf: whether a plain `http:`
//! address leaves this machine, and whether an address a server's sign-in metadata gives may be
//! opened in the browser. Here, below both `mcp` (a server's own address) and `auth` (its
//! sign-in), which each use it.

use url::{Host, Url};

/// How a hidden query is shown.
pub const HIDDEN_QUERY: &str = "?…";

/// The host of a plain `http` address that is not this machine's, if the address is one.
pub fn plain_http_elsewhere(url: &Url) -> Option<String> {
    if url.scheme() != "http" {
        return None;
    }
    let loopback = match url.host()? {
        Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    };
    (!loopback).then(|| url.host_str().unwrap_or_default().to_string())
}

/// Checks an address a server's sign-in metadata gives (`authorization_endpoint` and the other
/// endpoints), which bosun opens in the browser, shows in the web UI and sends secrets to: it
/// must be `https:`, or plain `http:` to this machine, or to the host of `server` when the
/// person allowed plain http for the server itself (`--allow-http`). Anything else (`javascript:`,
/// `file:`, `data:`, plain http to another machine) is refused; `Err` says why, after the address.
pub fn check_sign_in_address(text: &str, server: &Url) -> Result<(), SignInAddressError> {
    use SignInAddressError as E;
    let Ok(url) = Url::parse(text.trim()) else {
        return Err(E::NotAnAddress);
    };
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if url.host().is_some() => match plain_http_elsewhere(&url) {
            None => Ok(()),
            Some(_) if server.scheme() == "http" && url.host_str() == server.host_str() => Ok(()),
            Some(host) => Err(E::PlainHttpElsewhere(host)),
        },
        "https" | "http" => Err(E::NoHost),
        other => Err(E::NotWeb(other.into())),
    }
}

/// Why [`check_sign_in_address`] refused an address; the text follows the address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignInAddressError {
    #[error("is not an address")]
    NotAnAddress,
    /// Plain `http:` to this other host, which the person did not allow.
    #[error(
        "is plain http:// to {0}, another machine, over which the sign-in would cross the network unencrypted"
    )]
    PlainHttpElsewhere(String),
    #[error("has no host")]
    NoHost,
    /// Of this scheme (`javascript`, `file`, `data`), not a web page.
    #[error("is a `{0}:` address, which a browser would not open as a web page")]
    NotWeb(String),
}

/// An address as bosun shows it anywhere: its query as `?…`, a user name or password as `…@`,
/// a fragment as `#…`. Works on text that is not an address too (in an error about it).
pub fn shown(text: &str) -> String {
    let text = text.trim();
    let Ok(mut url) = Url::parse(text) else {
        return shown_as_text(text);
    };
    let had_user = !url.username().is_empty() || url.password().is_some();
    let had_query = url.query().is_some_and(|q| !q.is_empty());
    let had_fragment = url.fragment().is_some();
    if url.set_username("").is_err() || url.set_password(None).is_err() {
        return shown_as_text(text);
    }
    url.set_query(None);
    url.set_fragment(None);
    let mut out = url.to_string();
    if had_user && let Some(at) = out.find("://") {
        out.insert_str(at + 3, "…@");
    }
    if had_query {
        out.push_str(HIDDEN_QUERY);
    }
    if had_fragment {
        out.push_str("#…");
    }
    out
}

/// [`shown`] for text that does not parse: whatever follows `?` or `#` is hidden, and so is
/// whatever comes before an `@` in the part after `//`.
fn shown_as_text(text: &str) -> String {
    let (head, hidden) = match text.find(['?', '#']) {
        Some(i) => (&text[..i], Some(&text[i..i + 1])),
        None => (text, None),
    };
    let mut out = match head.find("//") {
        Some(i) => {
            let (before, rest) = head.split_at(i + 2);
            let end = rest.find('/').unwrap_or(rest.len());
            match rest[..end].rfind('@') {
                Some(at) => format!("{before}…{}", &rest[at..]),
                None => head.to_string(),
            }
        }
        None => head.to_string(),
    };
    if let Some(mark) = hidden {
        out.push_str(mark);
        out.push('…');
    }
    out
}
