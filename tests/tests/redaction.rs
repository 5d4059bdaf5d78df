//! A run's secret values never leave its runner: a program that prints the secret it was given
//! (whole, or split across two writes with a pause between them longer than the relay waits for
//! the rest of a line) has `[redacted]` in its log instead, and the value is nowhere in bosun's
//! outputs, logs or files.

use std::time::Duration;

use bosun_tests::Bosun;

const TOKEN: &str = "tok-9f31c7e2a4b8d605";

#[test]
fn a_secret_the_program_prints_is_redacted_even_split_across_writes() -> anyhow::Result<()> {
    let b = Bosun::new("redaction");
    // Printed whole, then its first half, a pause (the relay's partial flush is 100 ms), and
    // the rest; then once more at the very end of the output, with no newline after it.
    let script = r#"printf 'whole: %s\n' "$API_TOKEN"
half=${API_TOKEN%??????????}
printf 'split: %s' "$half"
sleep 0.4
printf '%s done\n' "${API_TOKEN#"$half"}"
printf 'last: %s' "$API_TOKEN""#;
    let out = b.output_with_stdin(
        &[
            "agent",
            "add",
            "printer",
            "--cli",
            "command",
            "--secret-env",
            "API_TOKEN",
            "--",
            "/bin/sh",
            "-c",
            script,
        ],
        TOKEN,
    )?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = b.ok(&["agent", "run", "printer", "print it"])?;
    let run = run.trim();
    let view = b.wait_ended(run, Duration::from_secs(30))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let log = String::from_utf8(b.logs(run)?)?;
    assert_eq!(
        log, "whole: [redacted]\nsplit: [redacted] done\nlast: [redacted]",
        "every print of the value is redacted, split or not"
    );
    b.assert_secret_nowhere(TOKEN)?;
    // Half of it alone is nowhere either.
    b.assert_secret_nowhere(&TOKEN[..TOKEN.len() - 10])?;
    b.finish()
}
