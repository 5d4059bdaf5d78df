//! The fence of an agent's run, for its runner:
//! - where its programs may write (Landlock): the run's folder and the agent's roots, the git
//!   directories a worktree's commits write, the CLI's state and caches in folders of the
//!   run's own ([`homes`]), a temporary folder of the run's own (`TMPDIR`), and the devices
//!   every program writes to. Nothing else: `~/.bashrc`, the person's own CLI configuration,
//!   another project, the state directory;
//! - what stays read-only inside those roots (git's hooks and configuration, rc files, the
//!   CLIs' project settings) and what it may not read at all (where secrets live, bosun's state
//!   directory but for the run's own folder), both made in the run's mount namespace;
//! - which hosts it may reach through the runner's proxy, when its network is fenced.
//!
//! Decided per CLI (`docs/approvals.md`, "The fence"): Claude Code and Gemini CLI run under
//! bosun's fence; so does Codex, with its own sandbox switched off, since its sandbox builds a
//! bubblewrap container that a Landlock domain forbids (no `mount` inside one) and bosun's
//! policy already sees each of its commands.

use std::path::{Path, PathBuf};

use bosun_protocol::runner::{FencePlan, NetAllow, NetPlan};
use bosun_shared::agents::{CliKind, WebFetch};

use crate::homes;
use crate::record::WorkspaceSettings;

/// The folder in a run's directory that is its `TMPDIR`.
pub const TMP: &str = "tmp";
/// The folder in a run's directory that is the home of a Gemini run.
const HOME: &str = "home";

/// Devices any program may open for writing.
const DEVICES: [&str; 9] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// What can run code or redirect git inside a writable root, kept read-only for everything the
/// run starts: git's hooks and configuration, the shell's rc files, `direnv`'s file, and the
/// project settings of the coding CLIs and editors (each can name a program that runs later,
/// outside bosun).
const READ_ONLY_IN_ROOTS: [&str; 22] = [
    ".git/hooks",
    ".git/config",
    ".git/info",
    ".gitmodules",
    ".gitconfig",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".envrc",
    ".mcp.json",
    ".ripgreprc",
    ".claude",
    ".codex",
    ".gemini",
    ".vscode",
    ".idea",
    ".devcontainer",
];

/// Where secrets live in a home, unreadable by everything a run starts unless the agent says
/// otherwise (`read.allow=…`): the coding CLIs' sign-ins, keys, cloud and cluster credentials,
/// package registries' and forges' tokens, password stores, the keychain's files, browsers'
/// profiles (their cookies).
const HIDDEN_IN_HOME: [&str; 37] = [
    // The person's own CLI folders: their sign-ins (a run gets a copy of its own, `homes`).
    ".claude",
    ".claude.json",
    ".codex",
    ".gemini",
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".local/share/keyrings",
    ".password-store",
    ".config/op",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d",
    ".vault-token",
    ".config/rclone",
    ".s3cfg",
    ".oci",
    ".config/doctl",
    ".gradle/gradle.properties",
    ".m2/settings.xml",
    ".mozilla",
    ".config/chromium",
    ".config/google-chrome",
];

/// What a run's fence is made of, besides the CLI and the run's folder.
pub struct Confine<'a> {
    pub cli: CliKind,
    /// The run's folder (its agent's, or a card's worktree).
    pub folder: &'a Path,
    pub workspace: &'a WorkspaceSettings,
    /// The run's environment.
    pub env: &'a [(String, String)],
    /// The run's own directory, in bosun's state directory.
    pub run_dir: &'a Path,
    /// bosun's state directory, hidden but for the run's own directory.
    pub state_dir: &'a Path,
    /// The hosts the run may reach, when its network is fenced.
    pub net: Option<&'a [NetAllow]>,
    /// The person's home (bosund's), whose secrets are hidden as well as those of the run's
    /// `HOME` (which an agent may set elsewhere, and which is the run's own for Gemini CLI).
    pub person_home: Option<&'a Path>,
}

/// The fence of a run.
pub fn plan(c: &Confine<'_>) -> FencePlan {
    let var = |name: &str| {
        c.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
    };
    let home = var("HOME");
    let roots: Vec<PathBuf> = std::iter::once(c.folder.to_path_buf())
        .chain(c.workspace.roots.iter().cloned())
        .collect();
    let mut writable: Vec<PathBuf> = roots.clone();
    writable.extend(worktree_git(c.folder));
    // Folders a program makes when it needs them: made by the runner first, so that the fence
    // can name them.
    let mut make: Vec<PathBuf> = vec![c.run_dir.join(TMP)];
    // The CLI's own state, in the run's folder (Gemini's is its home, below): never the
    // person's, whatever the environment says ([`homes`]).
    match c.cli {
        CliKind::Claude | CliKind::Codex => {
            make.extend(homes::state(c.cli).map(|d| c.run_dir.join(d)));
        }
        CliKind::Gemini | CliKind::Command => {}
    }
    // Caches, the run's own: the XDG cache (the browser's profile among them) and npm's (for
    // the MCP servers started with npx).
    make.extend(homes::CACHES.iter().map(|d| c.run_dir.join(d)));
    writable.push(c.run_dir.join(HOME));
    writable.extend(make.iter().cloned());
    writable.extend(DEVICES.iter().map(PathBuf::from));
    dedup(&mut writable);
    let mut read_only: Vec<PathBuf> = Vec::new();
    if !c.workspace.protect_open {
        read_only.extend(
            roots
                .iter()
                .flat_map(|r| READ_ONLY_IN_ROOTS.iter().map(move |p| r.join(p))),
        );
        // A worktree's `.git` is a file naming its git directory: kept as it is.
        read_only.extend(roots.iter().map(|r| r.join(".git")).filter(|g| g.is_file()));
    }
    dedup(&mut read_only);
    let (hidden, kept) = if c.workspace.reads_open {
        (Vec::new(), Vec::new())
    } else {
        let homes: Vec<&Path> = home
            .iter()
            .map(PathBuf::as_path)
            .chain(c.person_home)
            .collect();
        let mut hidden: Vec<PathBuf> = homes
            .iter()
            .flat_map(|h| HIDDEN_IN_HOME.iter().map(move |p| h.join(p)))
            .collect();
        hidden.extend(c.workspace.read_deny.iter().cloned());
        hidden.push(c.state_dir.to_path_buf());
        // What the agent lifted, and whatever holds a folder the run works in, stays readable.
        hidden.retain(|h| {
            !c.workspace.read_allow.iter().any(|a| h.starts_with(a))
                && !roots.iter().any(|r| r.starts_with(h))
        });
        dedup(&mut hidden);
        (hidden, vec![c.run_dir.to_path_buf()])
    };
    FencePlan {
        writable,
        make,
        read_only,
        hidden,
        kept,
        net: c.net.map(|allow| NetPlan {
            allow: allow.to_vec(),
            quiet: provider_hosts(c.cli)
                .iter()
                .chain(background_hosts(c.cli))
                .map(|h| NetAllow {
                    host: (*h).to_string(),
                    port: None,
                    why: format!("{}'s own provider host", c.cli),
                })
                .collect(),
        }),
    }
}

fn dedup(paths: &mut Vec<PathBuf>) {
    let mut seen = Vec::new();
    paths.retain(|p| {
        let new = !seen.contains(p);
        seen.push(p.clone());
        new
    });
}

/// The provider's own hosts of a CLI, with its sign-in hosts: its model API unless the agent
/// points it elsewhere.
pub fn provider_hosts(cli: CliKind) -> &'static [&'static str] {
    match cli {
        CliKind::Claude => &["api.anthropic.com", "console.anthropic.com", "claude.ai"],
        CliKind::Codex => &["api.openai.com", "chatgpt.com", "auth.openai.com"],
        CliKind::Gemini => &[
            "generativelanguage.googleapis.com",
            "cloudcode-pa.googleapis.com",
            "oauth2.googleapis.com",
        ],
        CliKind::Command => &[],
    }
}

/// The domains of a CLI's own background traffic (its provider's other hosts: reports,
/// feature flags, updates): refused without asking, like its provider's hosts when the agent
/// points its model API elsewhere, so that they never fill the inbox.
fn background_hosts(cli: CliKind) -> &'static [&'static str] {
    match cli {
        CliKind::Claude => &["*.anthropic.com", "*.claude.ai", "*.claude.com"],
        // Codex also syncs OpenAI's curated plugins from GitHub at every start.
        CliKind::Codex => &[
            "*.openai.com",
            "*.chatgpt.com",
            "github.com",
            "codeload.github.com",
            "api.github.com",
            "raw.githubusercontent.com",
        ],
        CliKind::Gemini => &["*.googleapis.com"],
        CliKind::Command => &[],
    }
}

/// The hosts a run of `cli` may reach when its network is fenced: its model API (the host of
/// its base URL when the agent points it elsewhere, else the provider's, with its sign-in
/// hosts), the hosts of `web.fetch`, and the addresses of the MCP servers its CLI reaches
/// itself (over HTTP, bosun's own among them).
pub fn net_allow(
    cli: CliKind,
    env: &[(String, String)],
    codex_config: &[(String, String)],
    web_fetch: &WebFetch,
    server_urls: &[&str],
) -> Vec<NetAllow> {
    let var = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let mut allow: Vec<NetAllow> = Vec::new();
    let model =
        |url: Option<&str>, defaults: &[&str], why: &str, allow: &mut Vec<NetAllow>| match url
            .and_then(|u| NetAllow::from_url(u, why))
        {
            Some(a) => allow.push(a),
            None => allow.extend(defaults.iter().map(|h| NetAllow {
                host: (*h).to_string(),
                port: Some(443),
                why: why.to_string(),
            })),
        };
    match cli {
        CliKind::Claude => model(
            var("ANTHROPIC_BASE_URL"),
            provider_hosts(cli),
            "the model API of Claude Code",
            &mut allow,
        ),
        CliKind::Codex => {
            let base = codex_config
                .iter()
                .find(|(k, _)| k.ends_with("base_url"))
                .map(|(_, v)| v.trim().trim_matches('"'))
                .or(var("OPENAI_BASE_URL"));
            model(
                base,
                provider_hosts(cli),
                "the model API of Codex",
                &mut allow,
            );
        }
        CliKind::Gemini => model(
            var("GOOGLE_GEMINI_BASE_URL"),
            provider_hosts(cli),
            "the model API of Gemini CLI",
            &mut allow,
        ),
        CliKind::Command => {}
    }
    match web_fetch {
        WebFetch::Off => {}
        WebFetch::Any => allow.push(NetAllow {
            host: "*".into(),
            port: None,
            why: bosun_protocol::runner::WEB_FETCH_ANY_WHY.into(),
        }),
        WebFetch::Domains(ds) => allow.extend(ds.iter().map(|d| NetAllow {
            host: d.trim_end_matches('.').to_ascii_lowercase(),
            port: None,
            why: bosun_protocol::runner::WEB_FETCH_WHY.into(),
        })),
    }
    allow.extend(
        server_urls
            .iter()
            .filter_map(|u| NetAllow::from_url(u, "an MCP server the CLI reaches")),
    );
    let mut seen: Vec<(String, Option<u16>)> = Vec::new();
    allow.retain(|a| {
        let key = (a.host.clone(), a.port);
        let new = !seen.contains(&key);
        seen.push(key);
        new
    });
    allow
}

/// Lets a run whose network is fenced reach the host of `url` too (an MCP server given to it
/// after it was prepared, such as bosun's own to a QA run); nothing when it is not fenced.
pub fn allow_url(net: &mut Option<Vec<NetAllow>>, url: &str, why: &str) {
    if let (Some(net), Some(host)) = (net.as_mut(), NetAllow::from_url(url, why))
        && !net
            .iter()
            .any(|a| a.host == host.host && a.port == host.port)
    {
        net.push(host);
    }
}

/// For a folder that is a git worktree (its `.git` a file naming its git directory): that git
/// directory, and the parts of the repository's common directory that a commit writes (objects,
/// refs and their logs). Never the common directory itself, which holds the configuration and
/// the hooks.
fn worktree_git(folder: &Path) -> Vec<PathBuf> {
    let dot_git = folder.join(".git");
    let Ok(text) = std::fs::read_to_string(&dot_git) else {
        return Vec::new();
    };
    let Some(gitdir) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return Vec::new();
    };
    let gitdir = folder.join(gitdir);
    let common = std::fs::read_to_string(gitdir.join("commondir"))
        .ok()
        .map(|c| gitdir.join(c.trim()));
    let mut out = vec![gitdir];
    if let Some(common) = common {
        out.extend(["objects", "refs", "logs"].map(|d| common.join(d)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_gets_its_git_directory_and_the_commit_parts_of_the_common_one() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let git = repo.join(".git");
        std::fs::create_dir_all(git.join("worktrees/card")).unwrap();
        std::fs::write(git.join("worktrees/card/commondir"), "../..\n").unwrap();
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", git.join("worktrees/card").display()),
        )
        .unwrap();
        let env = vec![
            ("HOME".to_string(), "/home/me".to_string()),
            ("CLAUDE_CONFIG_DIR".to_string(), "/cfg/claude".to_string()),
        ];
        let workspace = WorkspaceSettings {
            roots: vec![PathBuf::from("/data")],
            ..WorkspaceSettings::default()
        };
        let plan = plan(&Confine {
            cli: CliKind::Claude,
            folder: &wt,
            workspace: &workspace,
            env: &env,
            run_dir: Path::new("/state/runs/r1"),
            state_dir: Path::new("/state"),
            net: None,
            person_home: None,
        });
        let common = git.join("worktrees/card").join("../..");
        let made = [
            PathBuf::from("/state/runs/r1/tmp"),
            PathBuf::from("/state/runs/r1/claude"),
            PathBuf::from("/state/runs/r1/cache"),
            PathBuf::from("/state/runs/r1/npm"),
        ];
        assert_eq!(plan.make, made);
        let want: Vec<PathBuf> = [
            wt.clone(),
            PathBuf::from("/data"),
            git.join("worktrees/card"),
            common.join("objects"),
            common.join("refs"),
            common.join("logs"),
            PathBuf::from("/state/runs/r1/home"),
        ]
        .into_iter()
        .chain(made)
        .chain(DEVICES.iter().map(PathBuf::from))
        .collect();
        assert_eq!(plan.writable, want);
        // Never the repository's configuration or hooks.
        assert!(
            !plan
                .writable
                .iter()
                .any(|p| p == &git || p.ends_with("hooks"))
        );
    }
}
