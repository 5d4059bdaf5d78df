//! The fence: before the program starts, the runner puts it in namespaces of its own
//! ([`ns`]: the paths that can run code or redirect git read-only, the places secrets live
//! covered, and a network whose only way out is the runner's proxy) and under a Landlock domain
//! that lets it (and everything it starts, which inherits both) write only beneath the plan's
//! writable paths. Device ioctls stay free.
//!
//! The ruleset is built in the runner before the fork (opening each path), and only
//! `landlock_restrict_self` runs in the child between fork and exec, where nothing may allocate.
//!
//! # Caveats
//! - Best effort on the kernel's ABI: ABI 1 cannot fence renames and links across folders
//!   (`REFER`, ABI 2) nor truncation (`TRUNCATE`, ABI 3); what the kernel lacked is said in the
//!   report, and a kernel without Landlock runs the program unfenced, saying so. bosun's policy
//!   still judges every file tool's target either way.
//! - A writable path that does not exist when the run starts is left out (Landlock rules name
//!   open files, not paths).
//! - Landlock allows, it never carves out: what must stay read-only inside a writable root is
//!   bound read-only in the mount namespace ([`ns`]), which holds alongside Landlock.
//! - The namespaces fail closed: a kernel that will not make them refuses the run, with the
//!   agent's switches that turn the parts off (`fence.net=off`, `fence.read=off`,
//!   `fence.protect=off`).

pub mod ns;

use std::os::unix::process::CommandExt;

use bosun_protocol::runner::{FencePlan, NetAllow};
use landlock::{
    ABI, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, path_beneath_rules,
};

/// The newest ABI whose write rights bosun asks for. Device ioctls (ABI 5) are left out on
/// purpose: a fenced program still reads its terminal's size.
const WANTED: ABI = ABI::V4;

/// A ruleset ready to be enforced in the child, the namespaces the child makes first, and what
/// they apply, in words.
pub struct Fence {
    ruleset: Option<RulesetCreated>,
    ns: Option<ns::Plan>,
    net: Option<Net>,
    pub report: String,
}

/// A fenced run's network: the port of the runner's proxy in the run's namespace, and the
/// loopback ports forwarded to the same port outside (for programs that reach loopback without
/// asking a proxy), each with its rule.
pub struct Net {
    pub proxy_port: u16,
    pub forwards: Vec<(u16, NetAllow)>,
    pub allow: Vec<NetAllow>,
    /// Hosts refused without asking (the plan's `quiet`).
    pub quiet: Vec<NetAllow>,
}

/// The port of the runner's proxy inside a run's network namespace, unless a forward takes it.
const PROXY_PORT: u16 = 3128;

impl Net {
    fn of(allow: &[NetAllow], quiet: &[NetAllow]) -> Net {
        let forwards: Vec<(u16, NetAllow)> = allow
            .iter()
            .filter(|a| is_loopback(&a.host))
            .filter_map(|a| a.port.map(|p| (p, a.clone())))
            .collect();
        let proxy_port = (PROXY_PORT..u16::MAX)
            .find(|p| !forwards.iter().any(|(f, _)| f == p))
            .unwrap_or(PROXY_PORT);
        Net {
            proxy_port,
            forwards,
            allow: allow.to_vec(),
            quiet: quiet.to_vec(),
        }
    }

    /// The ports the run's namespace listens on: the proxy's, then each forward's.
    fn ports(&self) -> Vec<u16> {
        std::iter::once(self.proxy_port)
            .chain(self.forwards.iter().map(|(p, _)| *p))
            .collect()
    }

    /// The environment that sends the program's connections to the proxy.
    pub fn env(&self) -> Vec<(String, String)> {
        let url = format!("http://127.0.0.1:{}", self.proxy_port);
        let mut env: Vec<(String, String)> = [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ]
        .iter()
        .map(|k| (k.to_string(), url.clone()))
        .collect();
        // Node's own fetch honours the variables only when told to.
        env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
        env
    }
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl Fence {
    /// Builds the ruleset for `plan`: Landlock when the kernel has it, else nothing (with a
    /// report that says so).
    pub fn build(plan: &FencePlan, empty_file: &std::path::Path) -> Result<Fence, ns::NsError> {
        let net = plan.net.as_ref().map(|n| Net::of(&n.allow, &n.quiet));
        let spaces = if plan.hidden.is_empty() && plan.read_only.is_empty() && net.is_none() {
            None
        } else {
            Some(ns::Plan::new(
                &plan.hidden,
                &plan.kept,
                &plan.read_only,
                net.as_ref().map(Net::ports),
                empty_file,
            )?)
        };
        let mut fence = Self::landlock(plan);
        if let Some(n) = spaces.as_ref().filter(|n| !n.applied.is_empty()) {
            fence.report.push_str("; ");
            fence.report.push_str(&n.applied.join(", "));
        }
        if let Some(net) = &net {
            let hosts: Vec<String> = net.allow.iter().map(net_words).collect();
            fence.report.push_str(&if hosts.is_empty() {
                "; network: none (a namespace of its own, with only loopback)".to_string()
            } else {
                format!(
                    "; network: only through bosun's proxy, to {}",
                    hosts.join(", ")
                )
            });
        }
        fence.ns = spaces;
        fence.net = net;
        Ok(fence)
    }

    fn landlock(plan: &FencePlan) -> Fence {
        let abi = kernel_abi();
        if abi == 0 {
            return Fence {
                ruleset: None,
                ns: None,
                net: None,
                report: "none: this kernel has no Landlock, so the run's programs may write wherever its user may (bosun's policy still keeps file tools to the workspace)".into(),
            };
        }
        let existing: Vec<&std::path::Path> = plan
            .writable
            .iter()
            .map(std::path::PathBuf::as_path)
            .filter(|p| p.exists())
            .collect();
        let built = (|| -> Result<RulesetCreated, landlock::RulesetError> {
            let write = AccessFs::from_write(WANTED);
            Ruleset::default()
                .set_compatibility(CompatLevel::BestEffort)
                .handle_access(write)?
                .create()?
                .add_rules(path_beneath_rules(existing.iter().copied(), write))
        })();
        match built {
            Ok(ruleset) => Fence {
                ruleset: Some(ruleset),
                ns: None,
                net: None,
                report: report(abi, &existing),
            },
            Err(e) => Fence {
                ruleset: None,
                ns: None,
                net: None,
                report: format!(
                    "none: Landlock could not be set up ({e}), so the run's programs may write wherever its user may"
                ),
            },
        }
    }

    /// Enforces the fence in the child, just before it executes the program: its namespaces
    /// first, then Landlock. Returns the namespaces' end of the start (the proxy's listeners)
    /// and the network the listeners serve.
    pub fn install(
        self,
        cmd: &mut tokio::process::Command,
    ) -> Result<(Option<ns::Started>, Option<Net>), ns::NsError> {
        let started = match self.ns {
            Some(n) => Some(n.install(cmd)?),
            None => None,
        };
        if let Some(net) = &self.net {
            cmd.envs(net.env());
            for k in ["NO_PROXY", "no_proxy"] {
                cmd.env_remove(k);
            }
        }
        if let Some(ruleset) = self.ruleset {
            Self::restrict(ruleset, cmd);
        }
        Ok((started, self.net))
    }

    fn restrict(ruleset: RulesetCreated, cmd: &mut tokio::process::Command) {
        let mut ruleset = Some(ruleset);
        // SAFETY: the closure runs in the child between fork and exec. It only makes the two
        // system calls of `restrict_self` (prctl and landlock_restrict_self) on a ruleset built
        // before the fork; it allocates nothing and takes no lock.
        unsafe {
            cmd.as_std_mut().pre_exec(move || {
                if let Some(r) = ruleset.take() {
                    // No error value can be built here without allocating: the start
                    // fails as denied, and the runner says the fence could not be applied.
                    r.restrict_self()
                        .map_err(|_| std::io::Error::from(std::io::ErrorKind::PermissionDenied))?;
                }
                Ok(())
            });
        }
    }
}

/// The empty file nobody may open, in a run's folder, that the fence binds over a file the run
/// may not read.
pub const UNREADABLE: &str = "unreadable";

/// Makes (or finds) the run's unreadable file.
pub fn unreadable_file(run_dir: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = run_dir.join(UNREADABLE);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o000)
        .open(&path)
    {
        Ok(_) => Ok(path),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(path),
        Err(e) => Err(e),
    }
}

/// The read-only paths that do not exist at the start: a bind needs a path, so each the run
/// makes is set aside at its end instead ([`set_aside`]). Those in a `.git` that did not exist
/// either are left out: a repository the run made is its own.
pub fn absent(plan: &FencePlan) -> Vec<std::path::PathBuf> {
    plan.read_only
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_err())
        .filter(|p| {
            p.ancestors()
                .find(|a| a.file_name().is_some_and(|n| n == ".git"))
                .is_none_or(|git| git.exists())
        })
        .cloned()
        .collect()
}

/// After the run: each of `absent` the run made is renamed beside itself
/// (`NAME.set-aside-by-bosun`), where nothing reads it as configuration; returns a line for the
/// run's log for each.
pub fn set_aside(absent: &[std::path::PathBuf]) -> Vec<String> {
    let mut notes = Vec::new();
    for p in absent {
        if std::fs::symlink_metadata(p).is_err() {
            continue;
        }
        let Some(name) = p.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let to = (0..100)
            .map(|i| {
                let suffix = if i == 0 {
                    String::new()
                } else {
                    format!("-{i}")
                };
                p.with_file_name(format!("{name}.set-aside-by-bosun{suffix}"))
            })
            .find(|t| std::fs::symlink_metadata(t).is_err());
        notes.push(match to.map(|t| std::fs::rename(p, &t).map(|()| t)) {
            Some(Ok(t)) => format!(
                "bosun's fence: the run made {}, which can run programs or redirect git outside bosun; it is set aside as {} (rename it back if you want it)",
                p.display(),
                t.display()
            ),
            Some(Err(e)) => format!(
                "bosun's fence: the run made {}, which can run programs or redirect git outside bosun, and it could not be set aside ({e}); look at it before you use this folder",
                p.display()
            ),
            None => format!(
                "bosun's fence: the run made {}, which can run programs or redirect git outside bosun, and it could not be set aside (too many set aside already); look at it before you use this folder",
                p.display()
            ),
        });
    }
    notes
}

/// One host a run may reach, in words.
fn net_words(a: &NetAllow) -> String {
    match a.port {
        Some(p) => format!("{}:{p} ({})", a.host, a.why),
        None => format!("{} ({})", a.host, a.why),
    }
}

/// The kernel's Landlock ABI version, 0 without Landlock.
fn kernel_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: asks only for the version: no ruleset is made and no memory is passed.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    v.max(0)
}

fn report(abi: i64, writable: &[&std::path::Path]) -> String {
    let mut lacks = Vec::new();
    if abi < 2 {
        lacks.push("moving or linking files between folders (needs ABI 2)");
    }
    if abi < 3 {
        lacks.push("truncating files (needs ABI 3)");
    }
    let places = writable
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if lacks.is_empty() {
        format!("Landlock (ABI {abi}): the run's programs write only in {places}")
    } else {
        format!(
            "Landlock (ABI {abi}), partial: the run's programs write only in {places}, but this kernel cannot fence {}",
            lacks.join(" or ")
        )
    }
}
