//! A run's whole life through the real command line: start, list, show, logs, end.

use std::time::Duration;

use bosun_tests::{Bosun, lines};

const T: Duration = Duration::from_secs(20);

#[test]
fn a_run_lives_from_start_to_recorded_exit() -> anyhow::Result<()> {
    let b = Bosun::new("run_life");
    let id = b.start(
        &["--name", "counter", "--env", "GREETING=hello"],
        &[
            "sh",
            "-c",
            "echo $GREETING; sleep 0.1; echo to-stderr >&2; sleep 0.4; echo done; exit 3",
        ],
    )?;
    assert_eq!(id.len(), 26);

    // It is listed while it runs, by its short id.
    let ps = b.ok(&["ps"])?;
    assert!(ps.contains(&id[..8]), "ps should list the live run:\n{ps}");
    assert!(ps.contains("counter"), "{ps}");

    let run = b.wait_ended(&id, T)?;
    assert_eq!(run["outcome"], "failed");
    assert_eq!(run["exit"]["code"], 3);
    assert_eq!(run["exit"]["reason"], "exited with status 3");
    assert!(run["started_at"].is_u64() && run["ended_at"].is_u64());

    let log = String::from_utf8(b.logs(&id)?)?;
    assert_eq!(log, "hello\nto-stderr\ndone\n");
    assert_eq!(b.ok(&["logs", &id, "--stdout"])?, "hello\ndone\n");
    assert_eq!(b.ok(&["logs", &id, "--stderr"])?, "to-stderr\n");

    // Over, it leaves `ps` and stays in `ps --all`.
    assert!(!b.ok(&["ps"])?.contains(&id[..8]));
    assert!(b.ok(&["ps", "--all"])?.contains(&id[..8]));
    // A unique prefix names it.
    assert_eq!(b.show(&id[..6])?["id"], id.as_str());
    b.finish()
}

#[test]
fn run_follow_streams_the_log_and_exits_with_the_runs_status() -> anyhow::Result<()> {
    let b = Bosun::new("run_follow");
    let out = b.output(&[
        "run",
        "--follow",
        "--",
        "sh",
        "-c",
        "for i in 1 2 3; do echo line $i; sleep 0.1; done; exit 7",
    ])?;
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(lines(&out.stdout), ["line 1", "line 2", "line 3"]);
    let ok = b.output(&["run", "-f", "--", "true"])?;
    assert_eq!(ok.status.code(), Some(0));
    b.finish()
}

#[test]
fn output_bytes_are_kept_exactly_and_long_lines_are_split_but_whole() -> anyhow::Result<()> {
    let b = Bosun::new("run_bytes");
    // Bytes that are not UTF-8, a 300 KB line that waits for its newline until the test says
    // (through a FIFO), and a last line without a newline.
    let fifo = b.scratch().join("go");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU)?;
    let script = format!(
        "printf 'a\\377\\376b\\n'; head -c 300000 /dev/zero | tr '\\0' x; cat {} >/dev/null; printf '\\nlast-no-newline'",
        fifo.display()
    );
    let id = b.start(&[], &["sh", "-c", &script])?;
    // An unfinished line goes in pieces of 64 KiB as soon as that much of it waits, and the
    // rest of it after a tenth of a second: the first line, four pieces and the rest, all
    // before the newline comes.
    b.wait_run(&id, "the long line's pieces", T, |v| {
        v["last_seq"].as_u64().unwrap_or(0) >= 6
    })?;
    std::fs::write(&fifo, "go\n")?;
    b.wait_ended(&id, T)?;
    let log = b.logs(&id)?;
    let mut expected = b"a\xff\xfeb\n".to_vec();
    expected.extend(std::iter::repeat_n(b'x', 300_000));
    expected.extend_from_slice(b"\nlast-no-newline");
    assert_eq!(log.len(), expected.len());
    assert!(
        log == expected,
        "the log differs from what the program wrote"
    );
    b.finish()
}

#[test]
fn the_run_gets_its_cwd_env_and_a_null_stdin() -> anyhow::Result<()> {
    let b = Bosun::new("run_env");
    let dir = b.scratch();
    let cwd = dir.to_str().unwrap_or_default();
    let out = b.output(&[
        "run",
        "-f",
        "--cwd",
        cwd,
        "--env",
        "A=1",
        "--env",
        "B=x=y",
        "--",
        "sh",
        "-c",
        "pwd; echo $A $B; cat; echo stdin-done; test -n \"$BOSUN_RUN_ID\" && echo marked",
    ])?;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(lines(&out.stdout), [cwd, "1 x=y", "stdin-done", "marked"]);
    b.finish()
}

#[test]
fn bad_input_is_refused_plainly_and_starts_nothing() -> anyhow::Result<()> {
    let b = Bosun::new("run_bad_input");
    let err = b.fails(&["run", "--env", "NOEQUALS", "--", "true"])?;
    assert!(err.contains("`NOEQUALS` is not KEY=VALUE"), "{err}");
    let err = b.fails(&["run", "--time-cap", "10", "--", "true"])?;
    assert!(err.contains("has no unit"), "{err}");
    let err = b.fails(&["run", "--time-cap", "soon", "--", "true"])?;
    assert!(err.contains("is not a duration"), "{err}");
    let err = b.fails(&["run", "--cwd", "/no/such/dir", "--", "true"])?;
    assert!(
        err.contains("the working directory /no/such/dir does not exist"),
        "{err}"
    );
    let err = b.fails(&["show", "zzzzzz"])?;
    assert!(
        err.contains("no run has an id starting with `zzzzzz`"),
        "{err}"
    );
    let err = b.fails(&["stop", "0"])?;
    assert!(
        err.contains("no run has an id starting with `0`") || err.contains("more than one"),
        "{err}"
    );
    assert!(
        b.json(&["ps", "--all"])?
            .as_array()
            .is_some_and(|a| a.is_empty())
    );

    // A program that does not exist is a run that failed, with the reason.
    let id = b.start(&[], &["no-such-program-anywhere"])?;
    let run = b.wait_ended(&id, T)?;
    assert_eq!(run["outcome"], "failed");
    let reason = run["exit"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("could not start `no-such-program-anywhere`"),
        "{reason}"
    );
    b.finish()
}

#[test]
fn an_ambiguous_prefix_is_refused_with_the_candidates() -> anyhow::Result<()> {
    let b = Bosun::new("run_ambiguous");
    // Random ids: with 40 runs, some share a first character.
    let mut ids = Vec::new();
    for _ in 0..40 {
        ids.push(b.start(&[], &["true"])?);
    }
    let first = ids
        .iter()
        .map(|i| &i[..1])
        .find(|c| ids.iter().filter(|i| i.starts_with(*c)).count() > 1)
        .unwrap_or("0")
        .to_string();
    let err = b.fails(&["show", &first])?;
    assert!(
        err.contains("is the start of more than one run's id"),
        "{err}"
    );
    for id in &ids {
        b.wait_ended(id, T)?;
    }
    b.finish()
}

/// `bosun ps` over more than one answer can hold: the CLI asks bosund page by page, and every
/// run is listed once, whole, in the order the runs were made; the live runs too.
#[test]
fn ps_lists_runs_that_do_not_fit_in_one_answer() -> anyhow::Result<()> {
    use bosun_protocol::frame::MAX_FRAME_LEN;
    use serde_json::Value;

    let b = Bosun::new("ps_pages");
    let big = "x".repeat(100_000);
    let arg = |i: usize| format!("{i}:{big}");
    let mut ended = Vec::new();
    for i in 0..45 {
        ended.push(b.start(&[], &["true", &arg(i)])?);
    }
    for id in &ended {
        b.wait_ended(id, T)?;
    }
    let mut live = Vec::new();
    for i in 45..57 {
        live.push(b.start(&[], &["sh", "-c", "sleep 120", &arg(i)])?);
    }

    let out = b.ok(&["ps", "--all", "--json"])?;
    assert!(
        out.len() > MAX_FRAME_LEN,
        "the history ({} bytes) was meant to be larger than a frame",
        out.len()
    );
    let runs: Vec<Value> = serde_json::from_str(&out)?;
    let ids: Vec<&str> = runs.iter().filter_map(|r| r["id"].as_str()).collect();
    let every: Vec<&str> = ended.iter().chain(&live).map(String::as_str).collect();
    assert_eq!(ids, every, "each run once, in the order they were made");
    for (i, run) in runs.iter().enumerate() {
        let args = run["args"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let whole = args.last().and_then(Value::as_str) == Some(arg(i).as_str());
        assert!(whole, "run {i} came back without its whole argument");
    }

    let out = b.ok(&["ps", "--json"])?;
    let runs: Vec<Value> = serde_json::from_str(&out)?;
    let ids: Vec<&str> = runs.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(ids, live.iter().map(String::as_str).collect::<Vec<_>>());

    let table = b.ok(&["ps", "--all"])?;
    for id in &every {
        assert!(table.contains(&id[..8]), "{id} is not in the table");
    }
    for id in &live {
        b.ok(&["stop", id])?;
    }
    b.finish()
}
