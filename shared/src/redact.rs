//! What bosun writes instead of a secret value it handed out, wherever what comes back (a
//! run's output, a server's answer) would show it: the word, and the shortest value hidden
//! (hiding every `1` or `yes` would garble output and protect nothing). The runner redacts a
//! run's output and the MCP area a server's answers with these same two.

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The shortest value that is redacted, in bytes.
pub const MIN_LEN: usize = 6;
