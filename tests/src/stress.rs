//! Helpers of the log stress and chaos tests: a generator of numbered lines that a test can hold
//! and release, a checker that a copy of its output is exactly lines 1..N (or a gapless prefix
//! of them) and says where the first gap is, a small seeded PRNG, and finding a run's runner.
//!
//! A generated line is `<tag> <n> <pad>\n`: the run's tag, the line's number from 1, and `width`
//! times `x`. The checker compares every line with the one expected next, so a lost chunk, a
//! chunk sent twice, a step back or a line of another run is found at its first byte, and
//! reported in one line (expected vs got), never as megabytes.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::Bosun;

/// The generator script, written once per test into its scratch directory.
///
/// `gen.sh TAG N WIDTH BATCH PAUSE HOLD_AT HOLD_FILE END_FILE` writes lines 1..N with `seq`,
/// BATCH lines at a time, sleeping PAUSE seconds (0: no sleep) between batches. After line
/// HOLD_AT (0: never) it waits until HOLD_FILE exists; before its last batch it waits until
/// END_FILE exists (empty: never). So a test can have its followers attached before the flood
/// starts, and can be sure the program is still alive (and so a killed runner makes the run
/// lost) until it releases it.
const GENERATOR: &str = r#"#!/bin/sh
tag=$1 n=$2 width=$3 batch=$4 pause=$5 hold_at=$6 hold_file=$7 end_file=$8
pad=$(printf "%${width}s" "" | tr ' ' x)
fmt="$tag %.0f $pad"
i=1
while [ "$i" -le "$n" ]; do
  j=$((i + batch - 1))
  [ "$j" -gt "$n" ] && j=$n
  [ "$hold_at" -ge "$i" ] && [ "$j" -gt "$hold_at" ] && j=$hold_at
  if [ "$j" -eq "$n" ] && [ -n "$end_file" ]; then
    while [ ! -e "$end_file" ]; do sleep 0.05; done
  fi
  seq -f "$fmt" "$i" "$j"
  if [ "$j" -eq "$hold_at" ] && [ -n "$hold_file" ]; then
    while [ ! -e "$hold_file" ]; do sleep 0.02; done
  fi
  i=$((j + 1))
  [ "$pause" = 0 ] || sleep "$pause"
done
"#;

/// Writes the generator into the test's scratch directory (once) and returns its path.
pub fn generator(b: &Bosun) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = b.scratch().join("gen.sh");
    if !path.exists() {
        std::fs::write(&path, GENERATOR)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(path)
}

/// What one run writes, and how.
#[derive(Clone, Debug)]
pub struct Gen {
    /// Starts every line; a short word of letters and digits.
    pub tag: String,
    /// Lines 1..=n.
    pub n: u64,
    /// How many `x` end each line.
    pub width: usize,
    /// Lines per `seq` call.
    pub batch: u64,
    /// Seconds between batches, as `sleep` takes it ("0": none).
    pub pause: String,
    /// Wait for `hold_file` after this line (0: never).
    pub hold_at: u64,
    pub hold_file: Option<PathBuf>,
    /// Wait for `end_file` before the last batch.
    pub end_file: Option<PathBuf>,
}

impl Gen {
    /// Lines 1..=n of `width` x's, as fast as `seq` writes them, with no hold.
    pub fn flood(tag: &str, n: u64, width: usize) -> Self {
        Self {
            tag: tag.into(),
            n,
            width,
            batch: n.max(1),
            pause: "0".into(),
            hold_at: 0,
            hold_file: None,
            end_file: None,
        }
    }

    /// The program and its arguments, for `bosun run -- …`.
    pub fn command(&self, script: &Path) -> Vec<String> {
        let path = |p: &Option<PathBuf>| {
            p.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        vec![
            script.display().to_string(),
            self.tag.clone(),
            self.n.to_string(),
            self.width.to_string(),
            self.batch.max(1).to_string(),
            self.pause.clone(),
            self.hold_at.to_string(),
            path(&self.hold_file),
            path(&self.end_file),
        ]
    }

    /// A checker of a copy of this run's output.
    pub fn checker(&self, what: impl Into<String>) -> SeqCheck {
        SeqCheck::new(what, &self.tag, self.width, self.n)
    }

    /// The bytes of the whole output (for sizes: 1..=n lines).
    pub fn total_bytes(&self) -> u64 {
        let fixed = (self.tag.len() + 1 + 1 + self.width + 1) as u64;
        let mut digits_total = 0;
        let mut lo = 1u64;
        let mut d = 1u64;
        while lo <= self.n {
            let hi = (lo * 10 - 1).min(self.n);
            digits_total += (hi - lo + 1) * d;
            lo *= 10;
            d += 1;
        }
        self.n * fixed + digits_total
    }
}

/// Checks, as bytes come, that a copy is lines 1, 2, 3, … of one run, each exactly once and in
/// order, and remembers the first place where it is not.
pub struct SeqCheck {
    what: String,
    /// `<tag> `
    head: Vec<u8>,
    /// ` xxx…x\n`
    tail: Vec<u8>,
    /// The last line there is.
    n: u64,
    /// The number of the line expected next, and its decimal digits.
    next: u64,
    digits: Vec<u8>,
    /// A line not ended yet (the bytes came in two pieces).
    partial: Vec<u8>,
    /// The first fault found.
    fault: Option<String>,
    /// Bytes of the right lines so far.
    good_bytes: u64,
}

impl SeqCheck {
    pub fn new(what: impl Into<String>, tag: &str, width: usize, n: u64) -> Self {
        let mut tail = vec![b' '];
        tail.extend(std::iter::repeat_n(b'x', width));
        tail.push(b'\n');
        Self {
            what: what.into(),
            head: format!("{tag} ").into_bytes(),
            tail,
            n,
            next: 1,
            digits: b"1".to_vec(),
            partial: Vec::new(),
            fault: None,
            good_bytes: 0,
        }
    }

    /// How many whole, right lines have come so far.
    pub fn lines(&self) -> u64 {
        self.next - 1
    }

    /// Whether a fault was found.
    pub fn faulty(&self) -> bool {
        self.fault.is_some()
    }

    fn expected(&self) -> Vec<u8> {
        [&self.head[..], &self.digits, &self.tail].concat()
    }

    fn advance(&mut self, len: usize) {
        self.good_bytes += len as u64;
        self.next += 1;
        // Count up in decimal, in place.
        let mut i = self.digits.len();
        loop {
            if i == 0 {
                self.digits.insert(0, b'1');
                break;
            }
            i -= 1;
            if self.digits[i] == b'9' {
                self.digits[i] = b'0';
            } else {
                self.digits[i] += 1;
                break;
            }
        }
    }

    /// Whether `line` (which ends in a newline) is the line expected next.
    fn is_next(&self, line: &[u8]) -> bool {
        let (h, d) = (self.head.len(), self.digits.len());
        line.len() == h + d + self.tail.len()
            && line[..h] == self.head[..]
            && line[h..h + d] == self.digits[..]
            && line[h + d..] == self.tail[..]
    }

    /// Takes the next piece of the copy.
    pub fn feed(&mut self, mut data: &[u8]) {
        if self.fault.is_some() {
            return;
        }
        if !self.partial.is_empty() {
            match data.iter().position(|b| *b == b'\n') {
                None => {
                    self.partial.extend_from_slice(data);
                    if self.partial.len() > 1 << 20 {
                        let line = std::mem::take(&mut self.partial);
                        self.wrong(&line);
                    }
                    return;
                }
                Some(i) => {
                    let mut line = std::mem::take(&mut self.partial);
                    line.extend_from_slice(&data[..=i]);
                    data = &data[i + 1..];
                    self.line(&line);
                }
            }
        }
        let fixed = self.head.len() + self.tail.len();
        while !data.is_empty() && self.fault.is_none() {
            // The fast way: the next line is where it should be.
            let len = fixed + self.digits.len();
            if self.next <= self.n && data.len() >= len && self.is_next(&data[..len]) {
                self.advance(len);
                data = &data[len..];
                continue;
            }
            match data.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    self.line(&data[..=i]);
                    data = &data[i + 1..];
                }
                None => {
                    self.partial.extend_from_slice(data);
                    break;
                }
            }
        }
    }

    /// One whole line (with its newline).
    fn line(&mut self, line: &[u8]) {
        if self.next <= self.n && self.is_next(line) {
            self.advance(line.len());
        } else {
            self.wrong(line);
        }
    }

    /// Notes the first fault: which line came instead of the next one.
    fn wrong(&mut self, got: &[u8]) {
        let after = self.next - 1;
        let number = got
            .strip_prefix(&self.head[..])
            .and_then(|rest| rest.split(|b| *b == b' ').next())
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| d.parse::<u64>().ok());
        let how = match number {
            _ if self.next > self.n => {
                format!("a line after the last ({}): `{}`", self.n, shorten(got))
            }
            Some(m) if m > self.next => format!(
                "line {m}: lines {}..={} are missing ({} lines)",
                self.next,
                m - 1,
                m - self.next
            ),
            Some(m) if m < self.next => {
                format!("line {m} again (a duplicate, or a step back)")
            }
            Some(_) | None => format!("`{}`, not the line expected", shorten(got)),
        };
        self.fault = Some(format!(
            "{}: after line {after} (byte {}), expected line {}, got {how}",
            self.what, self.good_bytes, self.next
        ));
    }

    /// The copy is over and must be lines 1..=n exactly.
    pub fn whole(self) -> Result<u64, String> {
        if self.fault.is_none() && !self.partial.is_empty() {
            return Err(format!(
                "{}: ends in the middle of line {}: `{}`",
                self.what,
                self.next,
                shorten(&self.partial)
            ));
        }
        let (what, n) = (self.what.clone(), self.n);
        let got = self.prefix()?;
        if got != n {
            return Err(format!(
                "{what}: has lines 1..={got} and then ends; lines {}..={n} are missing",
                got + 1
            ));
        }
        Ok(got)
    }

    /// The copy is over and must be lines 1..=k for some k ≤ n, possibly followed by the start
    /// of line k+1 (a run cut off in the middle of a line). Returns k.
    pub fn prefix(self) -> Result<u64, String> {
        if let Some(f) = self.fault {
            return Err(f);
        }
        if !self.partial.is_empty() {
            let expected = self.expected();
            if self.next > self.n || !expected.starts_with(&self.partial) {
                return Err(format!(
                    "{}: after line {}, expected line {}, got `{}` at the end",
                    self.what,
                    self.next - 1,
                    self.next,
                    shorten(&self.partial)
                ));
            }
        }
        Ok(self.next - 1)
    }
}

/// At most 80 characters of a line, for a message.
fn shorten(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches('\n');
    let short: String = text.chars().take(80).collect();
    if short.len() < text.len() {
        format!("{short}… ({} bytes)", line.len())
    } else {
        short
    }
}

/// Checks a file with `check`, reading it a megabyte at a time.
pub fn check_file(path: &Path, mut check: SeqCheck) -> anyhow::Result<SeqCheck> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(check);
        }
        check.feed(&buf[..n]);
        if check.faulty() {
            return Ok(check);
        }
    }
}

/// Writes the stored log of `run` (`bosun logs RUN`) to `path`.
pub fn stored_log_to(b: &Bosun, run: &str, path: &Path) -> anyhow::Result<()> {
    let out = std::fs::File::create(path)?;
    let status = b
        .cmd(&["logs", run])
        .stdout(out)
        .stderr(std::process::Stdio::piped())
        .output()?;
    if !status.status.success() {
        anyhow::bail!(
            "bosun logs {run} failed ({}): {}",
            status.status,
            String::from_utf8_lossy(&status.stderr).trim()
        );
    }
    Ok(())
}

/// The last `max` bytes of a text file, for a failure message.
pub fn tail_of(path: &Path, max: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let start = text.len().saturating_sub(max);
    String::from_utf8_lossy(&text[start..]).trim().to_string()
}

/// The pid of the live runner of `run`: the `bosun-runner` of this test whose stderr is the
/// run's `runner.log`.
pub fn runner_of(b: &Bosun, run: &str) -> Option<i32> {
    let log = b.home.join("runs").join(run).join("runner.log");
    b.processes()
        .into_iter()
        .filter(|(_, cmd)| cmd.contains("bosun-runner"))
        .find(|(pid, _)| std::fs::read_link(format!("/proc/{pid}/fd/2")).is_ok_and(|p| p == log))
        .map(|(pid, _)| pid)
}

/// A `bosun` process that copies a log to a file (`bosun logs -f RUN`, `bosun run --follow …`),
/// its stderr to another.
pub struct Follower {
    /// Which copy this is, for messages.
    pub what: String,
    pub child: std::process::Child,
    pub out: PathBuf,
    pub err: PathBuf,
    /// Its exit status, once it has exited.
    pub status: Option<std::process::ExitStatus>,
}

impl Follower {
    /// Starts `bosun ARGS…` with stdout to `<dir>/<name>.out` and stderr to `<dir>/<name>.err`.
    pub fn spawn(b: &Bosun, args: &[&str], dir: &Path, name: &str) -> anyhow::Result<Self> {
        let out = dir.join(format!("{name}.out"));
        let err = dir.join(format!("{name}.err"));
        let child = b
            .cmd(args)
            .stdout(std::fs::File::create(&out)?)
            .stderr(std::fs::File::create(&err)?)
            .spawn()?;
        let how: Vec<&str> = args
            .iter()
            .copied()
            .take_while(|a| *a != "--")
            .take(2)
            .collect();
        Ok(Self {
            what: format!("{name} (bosun {})", how.join(" ")),
            child,
            out,
            err,
            status: None,
        })
    }

    /// `bosun logs -f RUN`.
    pub fn logs_f(b: &Bosun, run: &str, dir: &Path, name: &str) -> anyhow::Result<Self> {
        Self::spawn(b, &["logs", "-f", run], dir, name)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Its exit status, if it has exited (reaping it).
    pub fn poll(&mut self) -> Option<std::process::ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Bytes copied so far.
    pub fn copied(&self) -> u64 {
        std::fs::metadata(&self.out).map(|m| m.len()).unwrap_or(0)
    }

    /// SIGSTOP or SIGCONT (or any signal); an exited follower is left alone.
    pub fn signal(&mut self, sig: nix::sys::signal::Signal) {
        if self.poll().is_none() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig);
        }
    }

    /// What it wrote to stderr (the end of it).
    pub fn stderr(&self) -> String {
        tail_of(&self.err, 600)
    }

    /// How many lines of its stderr say that bosund restarted.
    pub fn restarts_seen(&self) -> usize {
        std::fs::read_to_string(&self.err)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("bosund restarted"))
            .count()
    }

    /// Its state in words, for a message: running, or how it exited and what it said.
    pub fn describe(&mut self) -> String {
        match self.poll() {
            None => format!(
                "{}: still running, {} bytes copied",
                self.what,
                self.copied()
            ),
            Some(st) => format!(
                "{}: exited ({st}) after {} bytes, stderr: `{}`",
                self.what,
                self.copied(),
                self.stderr()
            ),
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        if self.poll().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until every follower has exited, or fails after `timeout` naming those still running.
pub fn wait_all(
    followers: &mut [&mut Follower],
    timeout: std::time::Duration,
) -> anyhow::Result<()> {
    let done = crate::wait_for("every follower to end", timeout, || {
        Ok(followers
            .iter_mut()
            .all(|f| f.poll().is_some())
            .then_some(()))
    });
    if done.is_err() {
        let left: Vec<String> = followers
            .iter_mut()
            .filter_map(|f| f.poll().is_none().then(|| f.describe()))
            .collect();
        anyhow::bail!(
            "followers did not end within {timeout:?} of the runs' end:\n  {}",
            left.join("\n  ")
        );
    }
    Ok(())
}

/// The ids of the runs named `name` (`bosun ps --all --json`).
pub fn run_named(b: &Bosun, name: &str) -> anyhow::Result<Option<String>> {
    let runs = b.json(&["ps", "--all"])?;
    Ok(runs.as_array().and_then(|a| {
        a.iter()
            .find(|r| r["name"] == name)
            .and_then(|r| r["id"].as_str().map(str::to_string))
    }))
}

/// A small seeded PRNG (SplitMix64): the same seed gives the same choices.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// One of `items`, or `None` when there is none.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.range(0, items.len() as u64 - 1) as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(tag: &str, width: usize, nums: &[u64]) -> Vec<u8> {
        let pad = "x".repeat(width);
        nums.iter()
            .map(|i| format!("{tag} {i} {pad}\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn a_whole_copy_passes_in_any_pieces() {
        let all: Vec<u64> = (1..=1200).collect();
        let bytes = copy("r1", 7, &all);
        for piece in [1, 3, 17, 4096, bytes.len()] {
            let mut c = SeqCheck::new("copy", "r1", 7, 1200);
            for p in bytes.chunks(piece) {
                c.feed(p);
            }
            assert_eq!(c.whole(), Ok(1200), "pieces of {piece}");
        }
    }

    #[test]
    fn a_gap_a_duplicate_and_a_stranger_are_named() {
        let mut c = SeqCheck::new("a", "r1", 3, 100);
        c.feed(&copy("r1", 3, &[1, 2, 3, 7, 8]));
        let e = c.whole().unwrap_err();
        assert!(
            e.contains("after line 3") && e.contains("lines 4..=6 are missing (3 lines)"),
            "{e}"
        );

        let mut c = SeqCheck::new("b", "r1", 3, 100);
        c.feed(&copy("r1", 3, &[1, 2, 3, 2]));
        let e = c.whole().unwrap_err();
        assert!(e.contains("got line 2 again"), "{e}");

        let mut c = SeqCheck::new("c", "r1", 3, 100);
        c.feed(&copy("r2", 3, &[1]));
        let e = c.whole().unwrap_err();
        assert!(e.contains("`r2 1 xxx`, not the line expected"), "{e}");

        let mut c = SeqCheck::new("d", "r1", 3, 2);
        c.feed(&copy("r1", 3, &[1, 2, 3]));
        let e = c.whole().unwrap_err();
        assert!(e.contains("a line after the last (2)"), "{e}");
    }

    #[test]
    fn a_prefix_may_end_in_the_middle_of_the_next_line_but_a_whole_copy_may_not() {
        let mut bytes = copy("r1", 5, &[1, 2, 3]);
        bytes.extend_from_slice(b"r1 4 xx");
        let mut c = SeqCheck::new("p", "r1", 5, 10);
        c.feed(&bytes);
        assert_eq!(c.prefix(), Ok(3));
        let mut c = SeqCheck::new("p", "r1", 5, 10);
        c.feed(&bytes);
        assert!(c.whole().is_err());
        let mut c = SeqCheck::new("p", "r1", 5, 10);
        c.feed(&copy("r1", 5, &[1, 2]));
        let e = c.whole().unwrap_err();
        assert!(e.contains("lines 3..=10 are missing"), "{e}");
    }

    #[test]
    fn sizes_add_up() {
        let g = Gen::flood("r1", 1234, 9);
        let all: Vec<u64> = (1..=1234).collect();
        assert_eq!(g.total_bytes(), copy("r1", 9, &all).len() as u64);
    }
}
