//! Sizes as people write them: `1G`, `500M`, `64k`, `1048576`.

/// Parses a size in bytes: a whole number, optionally followed by `k`, `M` or `G` (powers of
/// 1024, either case, with an optional `B` or `iB` after it).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let hint = "write a size such as 1G, 500M, 64k or a number of bytes";
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size; {hint}"))?;
    if unit.starts_with(['.', ',']) {
        return Err(format!(
            "`{text}` is not a whole number; {hint} (1536M for 1.5G)"
        ));
    }
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.trim_end_matches("ib").trim_end_matches('b');
    let factor: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Err(format!("`{text}` has an unknown unit; {hint}")),
    };
    n.checked_mul(factor)
        .ok_or_else(|| format!("`{text}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

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
