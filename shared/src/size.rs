//! Sizes as people write them: `1G`, `500M`, `64k`, `1048576`, and text read on the person's
//! behalf (a file, stdin) held to its size rule while it is read.

use std::io::{self, Read};

/// Parses a size in bytes: a whole number, optionally followed by `k`, `M` or `G` (powers of
/// 1024, either case, with an optional `B` or `iB` after it).
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let n: u64 = number
        .parse()
        .map_err(|_| SizeError::NotASize(text.into()))?;
    if unit.starts_with(['.', ',']) {
        return Err(SizeError::NotWhole(text.into()));
    }
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.trim_end_matches("ib").trim_end_matches('b');
    let factor: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Err(SizeError::UnknownUnit(text.into())),
    };
    n.checked_mul(factor)
        .ok_or_else(|| SizeError::TooLarge(text.into()))
}

const HINT: &str = "write a size such as 1G, 500M, 64k or a number of bytes";

/// Why [`parse_size`] refused a size; each carries the text as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("`{0}` is not a size; {HINT}")]
    NotASize(String),
    #[error("`{0}` is not a whole number; {HINT} (1536M for 1.5G)")]
    NotWhole(String),
    #[error("`{0}` has an unknown unit; {HINT}")]
    UnknownUnit(String),
    /// More bytes than a `u64` counts.
    #[error("`{0}` is too large")]
    TooLarge(String),
}

/// Writes a size short, in the unit it is a whole number of: `64 KiB`, `1 MiB`, `1500 bytes`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit))
        .map_or_else(
            || format!("{bytes} bytes"),
            |(unit, name)| format!("{} {name}", bytes / unit),
        )
}

/// Reads `from` to its end as UTF-8 text, but never more than `limit` bytes of it: `Ok(None)` as
/// soon as byte `limit + 1` arrives. A source without end (`/dev/zero`, a pipe left open) or a
/// big file is refused by its rule before it fills the memory or reaches the wire.
pub fn read_at_most(from: impl Read, limit: usize) -> io::Result<Option<String>> {
    let mut text = String::new();
    from.take(limit as u64 + 1).read_to_string(&mut text)?;
    Ok((text.len() <= limit).then_some(text))
}

#[cfg(test)]
mod tests {
    use super::{format_size, parse_size, read_at_most};

    #[test]
    fn reads_stop_one_byte_past_the_limit() {
        assert_eq!(
            read_at_most(&b"12345"[..], 5).unwrap(),
            Some("12345".to_string())
        );
        assert_eq!(read_at_most(&b"123456"[..], 5).unwrap(), None);
        // A source without end is refused, not read to the end of the memory.
        let zeros = std::io::repeat(b'a');
        assert_eq!(read_at_most(zeros, 64 * 1024).unwrap(), None);
        assert_eq!(format_size(64 * 1024), "64 KiB");
        assert_eq!(format_size(1 << 20), "1 MiB");
        assert_eq!(format_size(1500), "1500 bytes");
    }

    #[test]
    fn sizes_as_people_write_them() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("64k"), Ok(64 * 1024));
        assert_eq!(parse_size("500M"), Ok(500 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("3mb"), Ok(3 << 20));
        assert!(parse_size("").is_err());
        assert!(parse_size("G").is_err());
        assert!(parse_size("1.5G").is_err());
        assert!(parse_size("10x").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
