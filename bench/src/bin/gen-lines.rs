//! Writes N numbered lines of exactly 100 bytes (99 and a newline) to stdout, block-buffered
//! like any program whose stdout is a pipe (8 KiB, the size of C stdio's and Rust's buffers).
//! The log-throughput benchmark runs it under bosun, under supervisord and into `cat`. It does
//! as little work per line as it can, so the baseline `gen-lines | cat > file` measures the pipe
//! and the disk, not the generator.

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    // "line 0000000042 xxxx…x\n": the number is rewritten in place for each line.
    let mut line = [b'x'; 100];
    line[..5].copy_from_slice(b"line ");
    line[15] = b' ';
    line[99] = b'\n';
    let mut out = BufWriter::with_capacity(8192, std::io::stdout().lock());
    for i in 0..n {
        let mut v = i;
        for d in (5..15).rev() {
            line[d] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out.write_all(&line)?;
    }
    out.flush()
}
