//! The fence: before the program starts, the runner puts it under a Landlock domain that lets it
//! (and everything it starts, which inherits the domain) write only beneath the plan's writable
//! paths. Reading and running programs stay free; so do the network and device ioctls.
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
//! - Landlock allows, it never carves out: a root's own `.git` folder is writable by what the run
//!   starts (the policy keeps file tools out of it, not commands).

use std::os::unix::process::CommandExt;

use bosun_protocol::runner::FencePlan;
use landlock::{
    ABI, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, path_beneath_rules,
};

/// The newest ABI whose write rights bosun asks for. Device ioctls (ABI 5) are left out on
/// purpose: a fenced program still reads its terminal's size.
const WANTED: ABI = ABI::V4;

/// A ruleset ready to be enforced in the child, and what it will apply, in words.
pub struct Fence {
    ruleset: Option<RulesetCreated>,
    pub report: String,
}

impl Fence {
    /// Builds the ruleset for `plan`: Landlock when the kernel has it, else nothing (with a
    /// report that says so).
    pub fn build(plan: &FencePlan) -> Fence {
        let abi = kernel_abi();
        if abi == 0 {
            return Fence {
                ruleset: None,
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
                report: report(abi, &existing),
            },
            Err(e) => Fence {
                ruleset: None,
                report: format!(
                    "none: Landlock could not be set up ({e}), so the run's programs may write wherever its user may"
                ),
            },
        }
    }

    /// Enforces the fence in the child, just before it executes the program.
    pub fn install(self, cmd: &mut tokio::process::Command) {
        let Some(ruleset) = self.ruleset else {
            return;
        };
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
