//! Following a log live: from the start and from the middle while the run is still writing, by
//! several followers at once, with no gap and no duplicate.

use std::process::Stdio;
use std::time::Duration;

use bosun_tests::{Bosun, lines};
use serde_json::Value;

const T: Duration = Duration::from_secs(30);
const WRITER: &str =
    "i=0; while [ $i -lt 400 ]; do i=$((i+1)); echo \"line $i\"; sleep 0.005; done";

fn numbered(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("line {i}")).collect()
}

/// The chunks of a finished run's log by seq, from `bosun logs --json`.
fn chunks(b: &Bosun, id: &str) -> anyhow::Result<Vec<(u64, String)>> {
    let out = b.ok(&["logs", id, "--json"])?;
    out.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l)?;
            Ok((
                v["seq"].as_u64().unwrap_or(0),
                v["data"].as_str().unwrap_or_default().to_string(),
            ))
        })
        .collect()
}

#[test]
fn two_followers_from_the_start_see_every_line_once_in_order() -> anyhow::Result<()> {
    let b = Bosun::new("follow_two");
    let id = b.start(&[], &["sh", "-c", WRITER])?;
    let f1 = b.cmd(&["logs", "-f", &id]).stdout(Stdio::piped()).spawn()?;
    let f2 = b
        .cmd(&["logs", "-f", &id, "--from", "0"])
        .stdout(Stdio::piped())
        .spawn()?;
    let (o1, o2) = (f1.wait_with_output()?, f2.wait_with_output()?);
    assert!(o1.status.success() && o2.status.success());
    assert_eq!(lines(&o1.stdout), numbered(400));
    assert_eq!(lines(&o2.stdout), numbered(400));
    let run = b.show(&id)?;
    assert_eq!(
        run["outcome"], "succeeded",
        "following ends when the run ends: {run}"
    );
    assert_eq!(b.logs(&id)?, o1.stdout);
    b.finish()
}

#[test]
fn a_follower_from_the_middle_gets_exactly_the_chunks_from_its_seq() -> anyhow::Result<()> {
    let b = Bosun::new("follow_middle");
    let id = b.start(&[], &["sh", "-c", WRITER])?;
    b.wait_run(&id, "some output", T, |v| {
        v["last_seq"].as_u64().unwrap_or(0) >= 6
    })?;
    let still_running = b.show(&id)?;
    assert_eq!(
        still_running["state"], "running",
        "the follower must join while the run writes"
    );
    let follower = b
        .cmd(&["logs", "-f", &id, "--from", "4"])
        .stdout(Stdio::piped())
        .spawn()?;
    let out = follower.wait_with_output()?;
    assert!(out.status.success());

    let all = chunks(&b, &id)?;
    let seqs: Vec<u64> = all.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        seqs,
        (1..=all.len() as u64).collect::<Vec<_>>(),
        "seqs are gapless from 1"
    );
    let expected: String = all
        .iter()
        .filter(|(s, _)| *s >= 4)
        .map(|(_, d)| d.as_str())
        .collect();
    assert_eq!(String::from_utf8(out.stdout)?, expected);
    let full: String = all.iter().map(|(_, d)| d.as_str()).collect();
    assert_eq!(lines(full.as_bytes()), numbered(400));
    b.finish()
}

#[test]
fn logs_without_follow_print_what_is_there_and_return() -> anyhow::Result<()> {
    let b = Bosun::new("logs_snapshot");
    let id = b.start(&[], &["sh", "-c", "echo first; sleep 30"])?;
    b.wait_run(&id, "the first line", T, |v| {
        v["last_seq"].as_u64().unwrap_or(0) >= 1
    })?;
    let out = b.output(&["logs", &id])?;
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout)?, "first\n");
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, T)?;
    b.finish()
}

#[test]
fn timestamps_start_each_line() -> anyhow::Result<()> {
    let b = Bosun::new("logs_timestamps");
    let id = b.start(
        &[],
        &["sh", "-c", "echo a; echo b; printf 'c'; sleep 0.2; echo d"],
    )?;
    b.wait_ended(&id, T)?;
    let out = b.ok(&["logs", &id, "--timestamps"])?;
    let got = lines(out.as_bytes());
    assert_eq!(got.len(), 3, "{out}");
    for (line, text) in got.iter().zip(["a", "b", "cd"]) {
        let (stamp, rest) = line.split_once(' ').unwrap_or_default();
        assert!(
            stamp.len() == 24 && stamp.ends_with('Z') && stamp.contains('T'),
            "{line}"
        );
        assert_eq!(rest, text);
    }
    b.finish()
}
