//! What an agent's CLI permission mode let run without asking, as the saved verdicts that let
//! the same run under bosun's policy: carried over once, when a store of schema 1 is upgraded
//! (`crate::upgrade`), for the agents that existed then. The reasons for each line are in
//! docs/approvals.md ("Permission modes carried over").
//!
//! The verdicts are ordinary `allow` verdicts: the person sees them in `agent show` and changes
//! them like any other, and every step the policy puts before them (a block, a tool switched
//! off, a write outside the workspace, outside content in the turn) still applies.

use bosun_shared::agents::CliKind;

/// The CLI's tools that edit files, by the names its verdicts are saved under.
fn edit_tools(cli: CliKind) -> &'static [&'static str] {
    match cli {
        CliKind::Claude => &["Write", "Edit", "MultiEdit", "NotebookEdit"],
        CliKind::Codex => &["apply_patch"],
        CliKind::Gemini => &["write_file", "replace"],
        CliKind::Command => &[],
    }
}

/// The shell, for every CLI (`Bash` stands for Codex's and Gemini's shell tools too), and
/// Claude's background command.
fn command_tools(cli: CliKind) -> &'static [&'static str] {
    match cli {
        CliKind::Claude => &["Bash", "Monitor"],
        CliKind::Codex | CliKind::Gemini => &["Bash"],
        CliKind::Command => &[],
    }
}

/// What a permission mode let run beyond the CLI's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// Nothing more than the default: the policy's mode already decides.
    Nothing,
    /// File edits.
    Edits,
    /// File edits and commands.
    Everything,
}

/// What each CLI's permission mode let run. A mode bosun does not know carries nothing.
fn reach(cli: CliKind, mode: &str) -> Reach {
    match (cli, mode) {
        // `auto` lets edits run and sends commands to a classifier bosun does not have: its
        // commands ask. `dontAsk` denies whatever no rule allows: it let nothing more run.
        (CliKind::Claude, "acceptEdits" | "auto") => Reach::Edits,
        (CliKind::Claude, "bypassPermissions") => Reach::Everything,
        (CliKind::Codex, "workspace-write") => Reach::Edits,
        (CliKind::Codex, "danger-full-access") => Reach::Everything,
        (CliKind::Gemini, "auto_edit") => Reach::Edits,
        (CliKind::Gemini, "yolo") => Reach::Everything,
        (CliKind::Claude | CliKind::Codex | CliKind::Gemini | CliKind::Command, _) => {
            Reach::Nothing
        }
    }
}

/// The tool keys an agent of `cli` with permission `mode` gets `allow` verdicts for.
pub fn allowed_by_mode(cli: CliKind, mode: &str) -> Vec<&'static str> {
    match reach(cli, mode) {
        Reach::Nothing => Vec::new(),
        Reach::Edits => edit_tools(cli).to_vec(),
        Reach::Everything => [edit_tools(cli), command_tools(cli)].concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{ToolClass, ToolKey, classify_builtin};

    #[test]
    fn every_mode_maps_to_keys_that_read_and_name_the_clis_own_tools() {
        for cli in [CliKind::Claude, CliKind::Codex, CliKind::Gemini] {
            for mode in cli.permission_modes() {
                for key in allowed_by_mode(cli, mode) {
                    let parsed: ToolKey = key.parse().unwrap();
                    assert_eq!(parsed.to_string(), key);
                    if key == "Bash" {
                        continue;
                    }
                    let kind = classify_builtin(cli, key, &serde_json::json!({})).kind;
                    assert!(
                        matches!(kind, ToolClass::IrreversibleWrite | ToolClass::Execute),
                        "{cli} {mode} {key}: {kind:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_modes_carry_edits_or_everything_and_the_rest_nothing() {
        let check = |cli, mode, want: &[&str]| assert_eq!(allowed_by_mode(cli, mode), want);
        let claude_edits = ["Write", "Edit", "MultiEdit", "NotebookEdit"];
        check(CliKind::Claude, "acceptEdits", &claude_edits);
        check(CliKind::Claude, "auto", &claude_edits);
        check(
            CliKind::Claude,
            "bypassPermissions",
            &[
                "Write",
                "Edit",
                "MultiEdit",
                "NotebookEdit",
                "Bash",
                "Monitor",
            ],
        );
        for mode in ["default", "dontAsk", "plan", "nonsense"] {
            check(CliKind::Claude, mode, &[]);
        }
        check(CliKind::Codex, "workspace-write", &["apply_patch"]);
        check(
            CliKind::Codex,
            "danger-full-access",
            &["apply_patch", "Bash"],
        );
        check(CliKind::Codex, "read-only", &[]);
        check(CliKind::Gemini, "auto_edit", &["write_file", "replace"]);
        check(CliKind::Gemini, "yolo", &["write_file", "replace", "Bash"]);
        check(CliKind::Gemini, "default", &[]);
        check(CliKind::Gemini, "plan", &[]);
        check(CliKind::Command, "acceptEdits", &[]);
    }
}
