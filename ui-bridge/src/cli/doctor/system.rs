//! The machine's part of `bosun doctor`: the state directory and its disk, the price table
//! (read as bosund reads it), the keychain (the Secret Service asked as bosund asks it), and the
//! kernel's Landlock and namespaces.

use std::path::Path;
use std::time::Duration;

use bosun_shared::paths::StateDir;
use bosun_shared::prices::Prices;

use super::{Check, Configured};

/// Below this much free space the disk is a warning; runs' logs grow fast.
const LOW: u64 = 1 << 30;
/// Below this much it fails: bosund refuses new runs below 64 MB (`BOSUN_MIN_FREE_MB`).
const TOO_LOW: u64 = 100 * 1000 * 1000;
/// How long the Secret Service has to answer.
const KEYCHAIN_LIMIT: Duration = Duration::from_secs(5);

/// The state directory (exists, is a folder, can be written) and the free space of its disk.
pub(crate) fn state_dir(dirs: &StateDir) -> Vec<Check> {
    let root = dirs.root();
    let mut checks = Vec::new();
    // The disk is measured at the state directory, or the nearest folder above it that exists
    // (where it will be made).
    let mut measured = root;
    match std::fs::metadata(root) {
        Ok(m) if !m.is_dir() => checks.push(Check::failing(
            "state directory",
            format!("{} is not a folder", root.display()),
            "move it away, or set BOSUN_HOME to another directory",
        )),
        Ok(_) => match nix::unistd::access(root, nix::unistd::AccessFlags::W_OK) {
            Ok(()) => checks.push(Check::ok(
                "state directory",
                format!("{} (writable)", root.display()),
            )),
            Err(e) => checks.push(Check::failing(
                "state directory",
                format!("{} cannot be written: {e}", root.display()),
                format!(
                    "give your user write access to {} (it is yours alone, mode 0700), or set BOSUN_HOME to another directory",
                    root.display()
                ),
            )),
        },
        Err(_) => {
            checks.push(Check::ok(
                "state directory",
                format!(
                    "{} does not exist yet; the first bosun command makes it",
                    root.display()
                ),
            ));
            measured = root.ancestors().find(|p| p.is_dir()).unwrap_or(Path::new("/"));
        }
    }
    checks.push(disk(measured));
    checks
}

/// The price table bosund reckons costs with: the person's `prices.toml` in the state
/// directory, read by the parser bosund uses, or else the built-in one. A table bosund would
/// not start on fails, with its line and what is wrong.
pub(crate) fn prices(dirs: &StateDir) -> Check {
    let path = dirs.root().join("prices.toml");
    match Prices::load(&path) {
        Ok(p) if path.exists() => Check::ok(
            "prices",
            format!(
                "{}: {} models, prices of {}",
                path.display(),
                p.models(),
                p.date()
            ),
        ),
        Ok(p) => Check::ok(
            "prices",
            format!(
                "the built-in table: {} models, prices of {} (put your own in {})",
                p.models(),
                p.date(),
                path.display()
            ),
        ),
        Err(e) => Check::failing(
            "prices",
            e.to_string(),
            "bosund does not start until it is fixed or moved aside",
        ),
    }
}

fn disk(at: &Path) -> Check {
    let st = match nix::sys::statvfs::statvfs(at) {
        Ok(st) => st,
        Err(e) => {
            return Check::failing(
                "disk",
                format!("could not measure the free space of {}: {e}", at.display()),
                "check that the state directory's disk is mounted and readable",
            );
        }
    };
    let free = st.blocks_available().saturating_mul(st.fragment_size());
    let found = format!("{} MB free at {}", free / 1_000_000, at.display());
    let advice = format!(
        "free space on the disk of {} (below 64 MB bosund refuses new runs; a full disk pauses runs until there is room)",
        at.display()
    );
    if free < TOO_LOW {
        Check::failing("disk", found, advice)
    } else if free < LOW {
        Check::warning("disk", found, advice)
    } else {
        Check::ok("disk", found)
    }
}

/// The keychain bosund would use: the file `BOSUN_FAKE_KEYCHAIN` names, else the Secret
/// Service, asked for an entry that does not exist (which needs no unlocking and shows no
/// prompt). It fails when something keeps secrets there, and is a warning otherwise.
pub(crate) async fn keychain(configured: &Configured) -> Check {
    let needed = configured.secrets == Some(true);
    let unneeded = match configured.secrets {
        Some(true) => "",
        Some(false) => " (nothing keeps secrets yet)",
        None => " (bosund is not running to say whether anything keeps secrets)",
    };
    if let Some(file) = std::env::var_os("BOSUN_FAKE_KEYCHAIN").filter(|v| !v.is_empty()) {
        return Check::ok(
            "keychain",
            format!(
                "the file {} (BOSUN_FAKE_KEYCHAIN)",
                Path::new(&file).display()
            ),
        );
    }
    let asked = tokio::time::timeout(
        KEYCHAIN_LIMIT,
        tokio::task::spawn_blocking(|| -> Result<(), keyring_core::Error> {
            let store = zbus_secret_service_keyring_store::Store::new()?;
            let entry = keyring_core::Entry::new_in_store(
                &(store as std::sync::Arc<keyring_core::CredentialStore>),
                "bosun",
                "doctor/probe",
            )?;
            match entry.get_password() {
                Ok(_) | Err(keyring_core::Error::NoEntry) => Ok(()),
                Err(e) => Err(e),
            }
        }),
    )
    .await;
    let start_it = "start a Secret Service in your session (gnome-keyring or KWallet; DBUS_SESSION_BUS_ADDRESS must reach it) and unlock it, or set BOSUN_FAKE_KEYCHAIN to a file path to keep secrets in a file only you can read";
    match asked {
        Ok(Ok(Ok(()))) => Check::ok("keychain", "the Secret Service answers"),
        Ok(Ok(Err(keyring_core::Error::NoStorageAccess(e)))) => Check::missing(
            "keychain",
            needed,
            format!("the Secret Service is locked{unneeded}: {e}"),
            "unlock it: log in to your desktop session, or run `gnome-keyring-daemon --unlock`",
        ),
        Ok(Ok(Err(e))) => Check::missing(
            "keychain",
            needed,
            format!("the Secret Service cannot be reached{unneeded}: {e}"),
            start_it,
        ),
        Ok(Err(e)) => Check::missing(
            "keychain",
            needed,
            format!("asking the Secret Service failed{unneeded}: {e}"),
            start_it,
        ),
        Err(_) => Check::missing(
            "keychain",
            needed,
            format!(
                "the Secret Service did not answer within {} s{unneeded}",
                KEYCHAIN_LIMIT.as_secs()
            ),
            start_it,
        ),
    }
}

/// The kernel's Landlock ABI, which the runner's fence uses (runner/src/fence.rs).
pub(crate) fn landlock() -> Check {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: asks only for the version: no ruleset is made and no memory is passed.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    match abi {
        a if a >= 3 => Check::ok(
            "landlock",
            format!("ABI {a}: runs' programs write only where their agent may"),
        ),
        a if a >= 1 => Check::warning(
            "landlock",
            format!(
                "ABI {a}: runs are fenced, but this kernel cannot fence moving files between folders (ABI 2) or truncating them (ABI 3)"
            ),
            "boot a kernel of 6.2 or later for the whole fence",
        ),
        _ => Check::warning(
            "landlock",
            "this kernel offers no Landlock, so runs' programs may write wherever your user may (bosun's policy still keeps file tools to the workspace)",
            "boot a kernel of 5.13 or later with Landlock among its LSMs (lsm=…,landlock)",
        ),
    }
}

/// Whether this user may make the namespaces the runner's fence puts a run in (a user, a mount
/// and a network namespace), tried the way the runner makes them: in a child, before it runs a
/// program.
pub(crate) fn namespaces() -> Check {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("true");
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: the closure runs in the child between fork and exec and makes one system call.
    unsafe {
        cmd.pre_exec(|| {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    match cmd.status() {
        Ok(s) if s.success() => Check::ok(
            "namespaces",
            "runs get namespaces of their own: what runs code stays read-only in their roots, secrets are hidden, and their network goes only through bosun's proxy",
        ),
        Ok(s) => Check::warning(
            "namespaces",
            format!("a test program in the namespaces ended {s}"),
            "run `unshare --user --mount --net true` to see why",
        ),
        Err(e) => Check::failing(
            "namespaces",
            format!("this user may not make user namespaces ({e}), so fenced runs are refused"),
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces, or AppArmor's kernel.apparmor_restrict_unprivileged_userns=0), or turn the parts that need them off per agent: `bosun agent set NAME fence.net=off fence.read=off fence.protect=off`",
        ),
    }
}
