//! The run's own namespaces: a user namespace (the person's own uid and gid mapped onto
//! themselves, nothing else), a mount namespace in which the paths that can run code or redirect
//! git are bound read-only and the places secrets live are covered, and, when its network is
//! fenced, a network namespace with only loopback, whose listeners for the runner's proxy are
//! made inside it and handed back to the runner.
//!
//! Everything the child does between fork and exec is a raw system call on values made before
//! the fork: it allocates nothing and takes no lock. When a step fails, the child sends the
//! step and its errno to the runner on the same socket pair the listeners travel on, and the
//! start fails; the runner says which step and why ([`NsError`]).
//!
//! # What the mounts do
//! - A hidden folder gets an empty `tmpfs` of mode 000 over it: listing or opening anything in
//!   it is refused (permission denied). When a kept path lies beneath it (the run's own folder
//!   in bosun's state directory), the `tmpfs` is mode 111 instead, the kept path's folders are
//!   made in it (mode 111: passable, not listable), and the kept path is bound back on them.
//! - A hidden file gets an empty file of mode 000 bound over it.
//! - A read-only path is bound onto itself and made read-only; a read-only mount and Landlock's
//!   rules both hold. A mount point cannot be renamed or removed, so neither can the path.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// The steps of the child, for the runner's words when one fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    Unshare = 1,
    IdMaps = 2,
    Loopback = 3,
    Listen = 4,
    HandBack = 5,
    Private = 6,
    Hide = 7,
    Keep = 8,
    ReadOnly = 9,
    DropRoot = 10,
}

impl Step {
    fn from_u8(b: u8) -> Option<Step> {
        Some(match b {
            1 => Step::Unshare,
            2 => Step::IdMaps,
            3 => Step::Loopback,
            4 => Step::Listen,
            5 => Step::HandBack,
            6 => Step::Private,
            7 => Step::Hide,
            8 => Step::Keep,
            9 => Step::ReadOnly,
            10 => Step::DropRoot,
            _ => return None,
        })
    }

    fn words(self) -> &'static str {
        match self {
            Step::Unshare => "make the run's own namespaces",
            Step::IdMaps => "map the person's user into the run's user namespace",
            Step::Loopback => "bring up loopback in the run's network namespace",
            Step::Listen => "open the proxy's port in the run's network namespace",
            Step::HandBack => "hand the proxy's port to the runner",
            Step::Private => "make the run's mounts its own",
            Step::Hide => "cover a path the run may not read",
            Step::Keep => "keep the run's own folder visible",
            Step::ReadOnly => "make a path read-only",
            Step::DropRoot => "drop the powers of root in the run's namespaces",
        }
    }
}

/// Why the run's namespaces could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NsError {
    #[error("could not set the run's namespaces up: {0}")]
    Prepare(std::io::Error),
    #[error("could not {step} ({errno}){hint}", step = .step.words(), errno = .errno, hint = hint(*.step, .errno))]
    Child { step: Step, errno: std::io::Error },
}

fn hint(step: Step, errno: &std::io::Error) -> &'static str {
    match (step, errno.raw_os_error()) {
        (Step::Unshare, Some(libc::EPERM | libc::ENOSPC | libc::EINVAL)) => {
            ": this machine does not let an unprivileged process make user namespaces (see `sysctl kernel.unprivileged_userns_clone` and `user.max_user_namespaces`, or AppArmor's `kernel.apparmor_restrict_unprivileged_userns`); allow them, or turn the parts that need them off for the agent with `bosun agent set NAME fence.net=off fence.read=off`"
        }
        _ => "",
    }
}

/// One mount of the child, its paths made before the fork.
enum Mount {
    /// An empty tmpfs over a folder (mode 000, or 111 when something is kept beneath it).
    HideDir { at: CString, data: CString },
    /// A folder made in a hidden folder's tmpfs, on the way to a kept path.
    MakeDir { at: CString },
    /// A path opened (`O_PATH`) in the child's namespace before anything is covered, by its
    /// place in [`Plan::opens`], bound on a path: a kept path bound back, or the empty
    /// unreadable file over a hidden file.
    Bind {
        from: usize,
        at: CString,
        step: Step,
    },
    /// A path bound onto itself, read-only or not (a read-only path's parent `.git`, which as a
    /// mount point cannot be renamed).
    Pin { at: CString, read_only: bool },
}

/// What the child will do, all of it made before the fork.
pub struct Plan {
    net: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// The ports the child listens on in its network namespace, in order.
    ports: Vec<u16>,
    mounts: Vec<Mount>,
    /// Paths the child opens before it covers anything, for the binds that name them (a path
    /// opened before the mount namespace was made could not be bound in it).
    opens: Vec<CString>,
    /// What was covered and made read-only, in words.
    pub applied: Vec<String>,
}

/// The listeners the child made in its network namespace, in the order of the ports asked for.
pub type Listeners = Vec<std::net::TcpListener>;

impl Plan {
    /// The namespaces of a run: `hidden` covered (save `kept`), `read_only` bound read-only
    /// (those that exist), and with `ports`, a network of its own listening on each.
    pub fn new(
        hidden: &[PathBuf],
        kept: &[PathBuf],
        read_only: &[PathBuf],
        ports: Option<Vec<u16>>,
        empty_file: &Path,
    ) -> Result<Plan, NsError> {
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let mut plan = Plan {
            net: ports.is_some(),
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            ports: ports.unwrap_or_default(),
            mounts: Vec::new(),
            opens: Vec::new(),
            applied: Vec::new(),
        };
        let mut empty: Option<usize> = None;
        for h in hidden
            .iter()
            .filter(|h| !kept.iter().any(|k| h.starts_with(k)))
        {
            let Ok(meta) = std::fs::symlink_metadata(h) else {
                continue;
            };
            if meta.is_dir() {
                let beneath: Vec<&PathBuf> = kept.iter().filter(|k| k.starts_with(h)).collect();
                let mode = if beneath.is_empty() { "000" } else { "111" };
                plan.mounts.push(Mount::HideDir {
                    at: c_path(h)?,
                    data: CString::new(format!("mode={mode},size=64k,nr_inodes=64"))
                        .map_err(|e| NsError::Prepare(std::io::Error::other(e)))?,
                });
                for k in beneath {
                    plan.keep(h, k)?;
                }
            } else if meta.is_file() {
                let fd = match empty {
                    Some(fd) => fd,
                    None => {
                        let fd = plan.open(empty_file)?;
                        empty = Some(fd);
                        fd
                    }
                };
                plan.mounts.push(Mount::Bind {
                    from: fd,
                    at: c_path(h)?,
                    step: Step::Hide,
                });
            } else {
                continue;
            }
            plan.applied.push(format!("{} hidden", h.display()));
        }
        let mut pinned: Vec<PathBuf> = Vec::new();
        for r in read_only {
            if hidden.iter().any(|h| r.starts_with(h)) && !kept.iter().any(|k| r.starts_with(k))
                || std::fs::symlink_metadata(r).is_err()
            {
                continue;
            }
            // The `.git` above a read-only part of it is pinned (bound onto itself), so that it
            // cannot be renamed away and replaced by one of the run's making.
            if let Some(git) = r
                .ancestors()
                .skip(1)
                .find(|a| a.file_name().is_some_and(|n| n == ".git"))
                && !pinned.iter().any(|p| p == git)
            {
                plan.mounts.push(Mount::Pin {
                    at: c_path(git)?,
                    read_only: false,
                });
                pinned.push(git.to_path_buf());
            }
            plan.mounts.push(Mount::Pin {
                at: c_path(r)?,
                read_only: true,
            });
            plan.applied.push(format!("{} read-only", r.display()));
        }
        Ok(plan)
    }

    /// Keeps `k` (beneath hidden folder `h`): its folders made in the tmpfs, and it bound back.
    fn keep(&mut self, h: &Path, k: &Path) -> Result<(), NsError> {
        let Ok(rest) = k.strip_prefix(h) else {
            return Ok(());
        };
        let mut at = h.to_path_buf();
        for part in rest.components() {
            at.push(part);
            self.mounts.push(Mount::MakeDir { at: c_path(&at)? });
        }
        let fd = self.open(k)?;
        self.mounts.push(Mount::Bind {
            from: fd,
            at: c_path(k)?,
            step: Step::Keep,
        });
        Ok(())
    }

    /// Has the child open `path` first; its place in [`Plan::opens`].
    fn open(&mut self, path: &Path) -> Result<usize, NsError> {
        self.opens.push(c_path(path)?);
        Ok(self.opens.len() - 1)
    }

    /// Has the child make the namespaces before it executes the program. The returned
    /// [`Started`] takes the listeners (or the failed step) once the start is over.
    pub fn install(self, cmd: &mut tokio::process::Command) -> Result<Started, NsError> {
        let (parent, child) = nix::sys::socket::socketpair(
            nix::sys::socket::AddressFamily::Unix,
            nix::sys::socket::SockType::SeqPacket,
            None,
            nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| NsError::Prepare(std::io::Error::from(e)))?;
        let child_fd = child.as_raw_fd();
        let Plan {
            net,
            uid_map,
            gid_map,
            ports,
            mounts,
            opens,
            ..
        } = self;
        let mut opened: Vec<RawFd> = vec![-1; opens.len()];
        let as_root = nix::unistd::getuid().is_root();
        let count = ports.len();
        let mut fds: Vec<RawFd> = vec![-1; count];
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE((count.max(1) * size_of::<RawFd>()) as u32) };
        let mut control: Vec<u8> = vec![0; space as usize];
        // SAFETY: the closure runs in the child between fork and exec. It makes raw system
        // calls on buffers allocated before the fork, and allocates and locks nothing.
        unsafe {
            cmd.as_std_mut().pre_exec(move || {
                let fail = |step: Step| -> std::io::Error {
                    let errno = *libc::__errno_location();
                    let mut msg = [0u8; 5];
                    msg[0] = step as u8;
                    msg[1..].copy_from_slice(&errno.to_ne_bytes());
                    libc::send(child_fd, msg.as_ptr().cast(), msg.len(), 0);
                    std::io::Error::from_raw_os_error(errno)
                };
                let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
                if net {
                    flags |= libc::CLONE_NEWNET;
                }
                if libc::unshare(flags) != 0 {
                    return Err(fail(Step::Unshare));
                }
                if !write_file(c"/proc/self/setgroups", b"deny")
                    || !write_file(c"/proc/self/uid_map", &uid_map)
                    || !write_file(c"/proc/self/gid_map", &gid_map)
                {
                    return Err(fail(Step::IdMaps));
                }
                if net {
                    if !loopback_up() {
                        return Err(fail(Step::Loopback));
                    }
                    for (i, port) in ports.iter().enumerate() {
                        let fd = listen(*port);
                        if fd < 0 {
                            return Err(fail(Step::Listen));
                        }
                        fds[i] = fd;
                    }
                    if !hand_back(child_fd, &fds, &mut control) {
                        return Err(fail(Step::HandBack));
                    }
                    for fd in &fds {
                        libc::close(*fd);
                    }
                }
                if libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(fail(Step::Private));
                }
                for (i, path) in opens.iter().enumerate() {
                    let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                    if fd < 0 {
                        return Err(fail(Step::Keep));
                    }
                    opened[i] = fd;
                }
                for m in &mounts {
                    let (ok, step) = match m {
                        Mount::HideDir { at, data } => (
                            libc::mount(
                                c"tmpfs".as_ptr(),
                                at.as_ptr(),
                                c"tmpfs".as_ptr(),
                                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                                data.as_ptr().cast(),
                            ) == 0,
                            Step::Hide,
                        ),
                        Mount::MakeDir { at } => {
                            let r = libc::mkdir(at.as_ptr(), 0o111);
                            (
                                r == 0 || *libc::__errno_location() == libc::EEXIST,
                                Step::Keep,
                            )
                        }
                        Mount::Bind { from, at, step } => {
                            let source = fd_path(opened[*from]);
                            let ok = libc::mount(
                                source.as_ptr().cast::<libc::c_char>(),
                                at.as_ptr(),
                                std::ptr::null(),
                                libc::MS_BIND | libc::MS_REC,
                                std::ptr::null(),
                            ) == 0;
                            (ok, *step)
                        }
                        Mount::Pin { at, read_only } => (pin(at, *read_only), Step::ReadOnly),
                    };
                    if !ok {
                        return Err(fail(step));
                    }
                }
                if as_root && !drop_root_powers() {
                    return Err(fail(Step::DropRoot));
                }
                Ok(())
            });
        }
        Ok(Started {
            parent,
            child: Some(child),
            count,
        })
    }
}

/// The runner's end of a start: the listeners the child handed back, or why it failed.
pub struct Started {
    parent: OwnedFd,
    child: Option<OwnedFd>,
    count: usize,
}

impl Started {
    /// After a start that failed: which step of the child failed, when it was one of its.
    pub fn failure(mut self) -> Option<NsError> {
        self.close_child();
        // The listeners' message may come first; the failed step is the one of five bytes.
        let mut msg = [0u8; 5];
        loop {
            let n = nix::sys::socket::recv(
                self.parent.as_raw_fd(),
                &mut msg,
                nix::sys::socket::MsgFlags::MSG_DONTWAIT,
            )
            .ok()?;
            if n == 5 {
                break;
            }
        }
        let step = Step::from_u8(msg[0])?;
        let errno = i32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
        Some(NsError::Child {
            step,
            errno: std::io::Error::from_raw_os_error(errno),
        })
    }

    /// After a start that succeeded: the listeners the child made, in the order asked for.
    pub fn listeners(mut self) -> Result<Listeners, NsError> {
        self.close_child();
        if self.count == 0 {
            return Ok(Vec::new());
        }
        let mut byte = [0u8; 1];
        let mut iov = [std::io::IoSliceMut::new(&mut byte)];
        let mut space = nix::cmsg_space!([RawFd; 16]);
        if self.count > 16 {
            space = vec![0u8; self.count * 8 + 64];
        }
        let msg = nix::sys::socket::recvmsg::<()>(
            self.parent.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            nix::sys::socket::MsgFlags::MSG_DONTWAIT | nix::sys::socket::MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(|e| NsError::Prepare(std::io::Error::from(e)))?;
        let mut out = Vec::new();
        for c in msg.cmsgs().map_err(|e| NsError::Prepare(e.into()))? {
            if let nix::sys::socket::ControlMessageOwned::ScmRights(fds) = c {
                for fd in fds {
                    // SAFETY: the kernel just gave the runner this descriptor.
                    let l = unsafe { std::net::TcpListener::from_raw_fd(fd) };
                    out.push(l);
                }
            }
        }
        if out.len() != self.count {
            return Err(NsError::Prepare(std::io::Error::other(format!(
                "the run's namespace handed back {} of its {} listeners",
                out.len(),
                self.count
            ))));
        }
        Ok(out)
    }

    fn close_child(&mut self) {
        self.child.take();
    }
}

fn c_path(p: &Path) -> Result<CString, NsError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|e| NsError::Prepare(std::io::Error::other(e)))
}

/// For a runner that runs as root: the program is root in its namespaces too, so it keeps none
/// of root's powers (no capability, now or after exec), and the files nobody may open stay
/// closed to it as to anyone.
///
/// # Safety
/// Raw system calls only; called between fork and exec.
unsafe fn drop_root_powers() -> bool {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
    const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
    // SAFETY: as above; the header and data are plain values on the stack.
    unsafe {
        let bits = SECBIT_NOROOT
            | SECBIT_NOROOT_LOCKED
            | SECBIT_NO_SETUID_FIXUP
            | SECBIT_NO_SETUID_FIXUP_LOCKED
            | SECBIT_NO_CAP_AMBIENT_RAISE
            | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        if libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) != 0 {
            return false;
        }
        let header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let none = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        libc::syscall(libc::SYS_capset, &raw const header, none.as_ptr()) == 0
    }
}

/// `/proc/self/fd/FD`, NUL-ended, made on the stack (the child may not allocate).
fn fd_path(fd: RawFd) -> [u8; 32] {
    let mut out = [0u8; 32];
    let prefix = b"/proc/self/fd/";
    out[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (fd.max(0) as u32, 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[prefix.len() + i] = digits[len - 1 - i];
    }
    out
}

/// Writes `data` to the file `path` (one of `/proc/self`'s), in the child.
///
/// # Safety
/// Raw system calls only; called between fork and exec.
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> bool {
    // SAFETY: the caller is the child between fork and exec; the buffers outlive the calls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        n == data.len() as isize
    }
}

/// Brings `lo` up in the child's new network namespace.
///
/// # Safety
/// Raw system calls only; called between fork and exec.
unsafe fn loopback_up() -> bool {
    // SAFETY: as above; `ifreq` is plain data, zeroed then filled.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return false;
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        let ok = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut ifr) == 0 && {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(s, libc::SIOCSIFFLAGS, &ifr) == 0
        };
        libc::close(s);
        ok
    }
}

/// A TCP listener on 127.0.0.1:`port` in the child's network namespace; -1 when it failed.
///
/// # Safety
/// Raw system calls only; called between fork and exec.
unsafe fn listen(port: u16) -> RawFd {
    // SAFETY: as above; `sockaddr_in` is plain data.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return -1;
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
        let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(fd, (&raw const addr).cast(), len) != 0 || libc::listen(fd, 1024) != 0 {
            libc::close(fd);
            return -1;
        }
        fd
    }
}

/// Sends `fds` to the runner over `sock` (`SCM_RIGHTS`), in the child.
///
/// # Safety
/// Raw system calls only; `control` was sized for `fds` before the fork.
unsafe fn hand_back(sock: RawFd, fds: &[RawFd], control: &mut [u8]) -> bool {
    // SAFETY: as above; the message header points into buffers that outlive the call.
    unsafe {
        let mut byte = [1u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len() as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return false;
        }
        let bytes = std::mem::size_of_val(fds);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(bytes as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(cmsg), bytes);
        msg.msg_controllen = libc::CMSG_SPACE(bytes as u32) as _;
        libc::sendmsg(sock, &msg, 0) == 1
    }
}

/// Binds `at` onto itself; with `read_only`, remounts it read-only, keeping the flags its mount
/// had (which a user namespace may not drop).
///
/// # Safety
/// Raw system calls only; called between fork and exec.
unsafe fn pin(at: &CString, read_only: bool) -> bool {
    // SAFETY: as above; `statvfs` is plain data filled by the kernel.
    unsafe {
        if libc::mount(
            at.as_ptr(),
            at.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ) != 0
        {
            return false;
        }
        if !read_only {
            return true;
        }
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(at.as_ptr(), &mut st) != 0 {
            return false;
        }
        let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
        for (st_flag, ms_flag) in [
            (libc::ST_NOSUID, libc::MS_NOSUID),
            (libc::ST_NODEV, libc::MS_NODEV),
            (libc::ST_NOEXEC, libc::MS_NOEXEC),
            (libc::ST_NOATIME, libc::MS_NOATIME),
            (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
            (libc::ST_RELATIME, libc::MS_RELATIME),
        ] {
            if st.f_flag & st_flag != 0 {
                flags |= ms_flag;
            }
        }
        libc::mount(
            std::ptr::null(),
            at.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        ) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell in the namespaces of `plan`, its output, and the listeners it handed back.
    async fn run_in(plan: Plan, script: &str) -> (String, Listeners) {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let started = plan.install(&mut cmd).unwrap();
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => panic!("{e}: {:?}", started.failure()),
        };
        let listeners = started.listeners().unwrap();
        let out = child.wait_with_output().await.unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (text, listeners)
    }

    #[tokio::test]
    async fn hidden_paths_cannot_be_read_read_only_ones_cannot_be_written_and_the_network_is_loopback_only()
     {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let secret = d.join("secret");
        let kept = secret.join("runs/r1");
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(secret.join("id_ed25519"), "KEY").unwrap();
        std::fs::write(kept.join("mine"), "MINE").unwrap();
        std::fs::write(d.join("netrc"), "PASSWORD").unwrap();
        let ws = d.join("ws");
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        let empty = d.join("empty");
        std::fs::File::create(&empty).unwrap();
        std::fs::set_permissions(&empty, std::os::unix::fs::PermissionsExt::from_mode(0o000))
            .unwrap();
        let plan = Plan::new(
            &[secret.clone(), d.join("netrc"), d.join("absent")],
            std::slice::from_ref(&kept),
            &[
                ws.join(".git/hooks"),
                ws.join(".git/config"),
                ws.join(".envrc"),
            ],
            Some(vec![3128]),
            &empty,
        )
        .unwrap();
        assert_eq!(plan.applied.len(), 4, "{:?}", plan.applied);
        let s = |p: &Path| p.display().to_string();
        let script = format!(
            "cat {key} >/dev/null 2>&1 && echo READ-KEY; ls {secret} >/dev/null 2>&1 && echo LISTED; \
             cat {mine}; echo; cat {netrc} 2>/dev/null && echo READ-NETRC; \
             echo evil > {hooks}/post-commit 2>/dev/null && echo WROTE-HOOK; \
             echo evil >> {config} 2>/dev/null && echo WROTE-CONFIG; \
             mv {git} {ws}/moved 2>/dev/null && echo MOVED-GIT; \
             echo fine > {ws}/file && echo WROTE-FILE; \
             tail -n +3 /proc/net/dev | cut -d: -f1",
            key = s(&secret.join("id_ed25519")),
            secret = s(&secret),
            mine = s(&kept.join("mine")),
            netrc = s(&d.join("netrc")),
            hooks = s(&ws.join(".git/hooks")),
            config = s(&ws.join(".git/config")),
            git = s(&ws.join(".git")),
            ws = s(&ws),
        );
        let (out, listeners) = run_in(plan, &script).await;
        assert!(out.contains("MINE"), "the kept path stays readable: {out}");
        assert!(out.contains("WROTE-FILE"), "{out}");
        for refused in [
            "READ-KEY",
            "LISTED",
            "READ-NETRC",
            "WROTE-HOOK",
            "WROTE-CONFIG",
            "MOVED-GIT",
        ] {
            assert!(!out.contains(refused), "{refused}: {out}");
        }
        assert!(out.contains("Read-only file system"), "{out}");
        let lines: Vec<&str> = out
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("sh:"))
            .collect();
        assert_eq!(lines, ["MINE", "WROTE-FILE", "lo"], "only loopback: {out}");
        assert!(!ws.join(".git/hooks/post-commit").exists());
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert_eq!(listeners.len(), 1);
        let addr = listeners[0].local_addr().unwrap();
        assert_eq!(addr, "127.0.0.1:3128".parse().unwrap());
    }
}
