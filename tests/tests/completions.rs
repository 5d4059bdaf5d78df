//! `bosun completions bash|zsh|fish`: the scripts load in the real shells, and completing
//! through them — as the shell does at a Tab — gives a subcommand, an agent's name and a run's
//! id from the running bosund, and nothing (without starting one) when bosund is not running.
//! bash is driven through `COMP_WORDS`/`COMP_CWORD` and the function the script registers, fish
//! through `complete -C`; zsh, whose completion needs a terminal, loads the script through
//! `compinit` and is asked the way its script asks.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use bosun_tests::{Bosun, bin_dir};

/// Runs `shell args…` with the test's bosun first on PATH and its state directory; fails
/// unless it succeeds; returns its stdout.
fn shell(b: &Bosun, shell: &str, args: &[&str]) -> anyhow::Result<String> {
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(shell)
        .args(args)
        .env("PATH", path)
        .env("BOSUN_HOME", &b.home)
        .env_remove("BOSUN_COMPLETE")
        .output()
        .with_context(|| {
            format!("could not run {shell} (scripts/setup installs the Debian package {shell})")
        })?;
    if !out.status.success() {
        bail!(
            "{shell} {args:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What bash completes for `words`, the last one being completed, through the script.
fn bash_complete(b: &Bosun, script: &Path, words: &[&str]) -> anyhow::Result<Vec<String>> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let prog = format!(
        r#"source '{script}'
complete -p bosun >/dev/null || exit 3
COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_TYPE=9
COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}
_clap_complete_bosun bosun "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#,
        script = script.display(),
        words = quoted.join(" "),
        cword = words.len() - 1,
    );
    Ok(shell(b, "bash", &["--norc", "--noprofile", "-c", &prog])?
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

#[test]
fn completions_give_subcommands_and_names_from_a_running_bosund_in_bash_zsh_and_fish()
-> anyhow::Result<()> {
    let b = Bosun::new("completions");
    let scripts = b.scratch();
    for sh in ["bash", "zsh", "fish"] {
        std::fs::write(scripts.join(sh), b.ok(&["completions", sh])?)?;
    }
    let work = b.scratch().join("work");
    std::fs::create_dir_all(&work)?;
    b.ok(&[
        "agent",
        "add",
        "coder",
        "--cli",
        "claude",
        "--cwd",
        &work.display().to_string(),
    ])?;
    let run = b.start(&[], &["true"])?;
    let short: String = run.chars().take(8).collect();

    // bash: a subcommand, an agent's name, a run's id.
    let bash = scripts.join("bash");
    assert_eq!(bash_complete(&b, &bash, &["bosun", "ag"])?, ["agent"]);
    assert_eq!(
        bash_complete(&b, &bash, &["bosun", "agent", "show", "co"])?,
        ["coder"]
    );
    assert!(
        bash_complete(&b, &bash, &["bosun", "logs", ""])?.contains(&short),
        "the run {short} among the completions of `bosun logs`"
    );

    // fish: the same, with each name's description.
    let fish = |line: &str| {
        shell(
            &b,
            "fish",
            &[
                "--no-config",
                "-c",
                &format!(
                    "source '{}'; complete -C '{line}'",
                    scripts.join("fish").display()
                ),
            ],
        )
    };
    assert!(
        fish("bosun ag")?.lines().any(|l| l.starts_with("agent")),
        "{}",
        fish("bosun ag")?
    );
    assert_eq!(fish("bosun agent show co")?, "coder\tclaude\n");

    // zsh: the script loads through compinit and registers its completer; asked as the script
    // asks, bosun answers with `name:description` lines.
    let zsh = shell(
        &b,
        "zsh",
        &[
            "-f",
            "-c",
            &format!(
                "autoload -U compinit && compinit -u -D && source '{}' && print -r -- $_comps[bosun]",
                scripts.join("zsh").display()
            ),
        ],
    )?;
    assert_eq!(zsh.trim(), "_clap_dynamic_completer_bosun");
    let asked = b
        .cmd(&["--", "bosun", "agent", "show", "co"])
        .env("BOSUN_COMPLETE", "zsh")
        .env("_CLAP_COMPLETE_INDEX", "3")
        .env("_CLAP_IFS", "\n")
        .output()?;
    assert_eq!(String::from_utf8_lossy(&asked.stdout), "coder:claude");

    // Without a running bosund there are no names, and completing does not start one.
    b.ok(&["daemon", "stop"])?;
    assert_eq!(
        bash_complete(&b, &bash, &["bosun", "agent", "show", "co"])?,
        Vec::<String>::new()
    );
    assert_eq!(bash_complete(&b, &bash, &["bosun", "ag"])?, ["agent"]);
    assert!(b.daemon_pid().is_none(), "completing started bosund");
    b.finish()
}
