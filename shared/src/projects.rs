//! Projects as every process sees them: a project's name rules, where its repository is hosted
//! (read from its `origin` remote), a card's branch name, and the git part of a run's record.

use serde::{Deserialize, Serialize};

/// The most bytes a board note may have (bosund's rule; the command line reads a note's text no
/// further than one byte past it).
pub const MAX_NOTE: usize = 1024 * 1024;

const MAX_NAME: usize = 40;
/// The most characters of a card's title that go into its branch's name.
const MAX_SLUG: usize = 40;

/// Where a project's repository is hosted. Only GitHub is one bosun will later merge on; any
/// other host is named, so that a refusal can say which.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Host {
    /// `owner/name` on github.com.
    Github { repo: String },
    /// Another host, by its name (`gitlab.com`, `bitbucket.org`, `a folder on this machine`).
    Other { host: String },
    /// The checkout has no `origin` remote.
    None,
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Github { repo } => write!(f, "GitHub {repo}"),
            Host::Other { host } => f.write_str(host),
            Host::None => f.write_str("no origin remote"),
        }
    }
}

impl Host {
    /// The host an `origin` remote's URL names: `git@github.com:o/n.git`,
    /// `https://github.com/o/n`, `ssh://git@github.com/o/n.git` are GitHub `o/n`; other URLs
    /// are named by their host; a path or `file://` URL is a folder on this machine.
    pub fn from_remote(url: &str) -> Self {
        let url = url.trim();
        let (host, path) = if let Some((scheme, rest)) = url.split_once("://") {
            if scheme == "file" {
                return Host::Other {
                    host: "a folder on this machine".into(),
                };
            }
            let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
            match rest.split_once('/') {
                Some((host, path)) => (host.split(':').next().unwrap_or(host), path),
                None => (rest, ""),
            }
        } else if let Some((before, path)) = url.split_once(':')
            && !before.contains('/')
        {
            // scp-like: [user@]host:path
            (before.rsplit_once('@').map_or(before, |(_, h)| h), path)
        } else {
            return Host::Other {
                host: "a folder on this machine".into(),
            };
        };
        let host = host.to_ascii_lowercase();
        if host == "github.com" || host == "www.github.com" {
            let path = path.trim_matches('/');
            let path = path.strip_suffix(".git").unwrap_or(path);
            if let Some(repo) = github_repo(path) {
                return Host::Github { repo };
            }
        }
        Host::Other { host }
    }
}

/// `owner/name` when `s` is one (letters, digits, `-`, `_`, `.`; one `/`).
pub fn github_repo(s: &str) -> Option<String> {
    let (owner, name) = s.trim().split_once('/')?;
    let ok = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (ok(owner) && ok(name)).then(|| format!("{owner}/{name}"))
}

/// A project's name: 1–40 letters, digits, `-`, `_` or `.`, starting with a letter or digit.
pub fn check_name(name: &str) -> Result<(), ProjectNameError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ProjectNameError(name.into()))
    }
}

/// A name [`check_name`] refused, as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{}` is not a project name: use 1 to {MAX_NAME} letters, digits, `-`, `_` or `.`, starting with a letter or digit, such as `web-app`",
    .0.escape_debug()
)]
pub struct ProjectNameError(pub String);

/// The branch a card's runs work on: `bosun/<card short id>-<slug of its title>`.
pub fn card_branch(short_id: &str, title: &str) -> String {
    let mut slug = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= MAX_SLUG {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        format!("bosun/{short_id}")
    } else {
        format!("bosun/{short_id}-{slug}")
    }
}

/// The git part of a card's run: the branch it worked on and its head commit when it started
/// and when it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunGit {
    pub branch: String,
    pub head_at_start: String,
    /// Read when the run ends; absent while it runs (or when it could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_at_end: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_name_their_host() {
        let gh = |r: &str| Host::Github { repo: r.into() };
        let other = |h: &str| Host::Other { host: h.into() };
        for (url, host) in [
            ("git@github.com:acme/web.git", gh("acme/web")),
            ("https://github.com/acme/web", gh("acme/web")),
            ("https://github.com/acme/web.git/", gh("acme/web")),
            ("ssh://git@github.com:22/acme/web.git", gh("acme/web")),
            ("https://user@GitHub.com/acme/web.git", gh("acme/web")),
            ("git@bitbucket.org:team/repo.git", other("bitbucket.org")),
            ("https://gitlab.com/a/b/c.git", other("gitlab.com")),
            ("https://github.com/only-owner", other("github.com")),
            ("/srv/git/repo.git", other("a folder on this machine")),
            ("../repo", other("a folder on this machine")),
            (
                "file:///srv/git/repo.git",
                other("a folder on this machine"),
            ),
        ] {
            assert_eq!(Host::from_remote(url), host, "{url}");
        }
    }

    #[test]
    fn names_and_branches() {
        assert!(check_name("web-app.v2").is_ok());
        for bad in ["", "-x", "a b", "a/b", &"x".repeat(41)] {
            let err = check_name(bad).unwrap_err();
            assert!(err.to_string().contains("is not a project name"), "{err}");
        }
        assert_eq!(
            card_branch("01abcdef", "Fix the  login page!"),
            "bosun/01abcdef-fix-the-login-page"
        );
        assert_eq!(card_branch("01abcdef", "¿¿"), "bosun/01abcdef");
        assert!(card_branch("01abcdef", &"word ".repeat(30)).len() <= 6 + 9 + MAX_SLUG + 1);
    }
}
