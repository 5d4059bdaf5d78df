//! What bosun's built-in browser (chrome-devtools-mcp and the Chromium it starts) needs in a
//! fenced run beyond what every server the gateway starts gets:
//! - **its proxy, named outright**: Chromium reaches loopback addresses (127.0.0.0/8, `[::1]`,
//!   `localhost`) without the proxy its environment names, so in its namespace it would reach
//!   nothing there, refused without a word in the run's log. It is started with
//!   `--proxyServer` and told not to bypass loopback, so its proxy decides every address it
//!   opens and logs each one.
//! - **a short path to the run's temporary folder**: Chromium makes its profile's lock socket
//!   in a new folder under `TMPDIR`, and a Unix socket's path holds at most 107 bytes. The
//!   run's own folder (`<state>/runs/<run>/tmp`) leaves too few, and Chromium exits at its
//!   start ("Socket path too long"). The browser is given a link of its own in `/tmp` to that
//!   folder instead: the same folder (Landlock judges what the link leads to), a short name.
//!
//! # Caveats
//! - The link is removed when the server ends; a runner killed before that leaves it in `/tmp`,
//!   pointing at a folder that is gone.

use std::path::{Path, PathBuf};

/// The arguments that point chrome-devtools-mcp's Chromium at the proxy on `port` of its
/// namespace, loopback included (`<-loopback>` takes out Chromium's own bypass of it).
pub(super) fn proxy_args(port: u16) -> [String; 2] {
    [
        format!("--proxyServer=http://127.0.0.1:{port}"),
        "--chromeArg=--proxy-bypass-list=<-loopback>".to_string(),
    ]
}

/// A link with a short, unpredictable name in `/tmp` to a folder; removed when dropped.
#[derive(Debug)]
pub(super) struct ShortTmp {
    pub(super) link: PathBuf,
}

/// Where the links are made: short, and on every Linux system.
const LINKS: &str = "/tmp";

impl ShortTmp {
    /// Makes a new link to `folder`. A name someone else holds is never reused: `symlink` fails
    /// on a path that exists, and another is tried.
    pub(super) fn to(folder: &Path) -> std::io::Result<ShortTmp> {
        use std::hash::{BuildHasher, RandomState};
        let mut last = std::io::Error::from(std::io::ErrorKind::AlreadyExists);
        for attempt in 0u32..16 {
            let salt = RandomState::new().hash_one((std::process::id(), attempt));
            let link = Path::new(LINKS).join(format!("bosun-{:012x}", salt & 0xffff_ffff_ffff));
            match std::os::unix::fs::symlink(folder, &link) {
                Ok(()) => return Ok(ShortTmp { link }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}

impl Drop for ShortTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.link);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_link_leads_to_the_folder_and_goes_with_its_value() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            ShortTmp::to(dir.path()).unwrap(),
            ShortTmp::to(dir.path()).unwrap(),
        );
        assert_ne!(a.link, b.link);
        // Room for Chromium's `/org.chromium.Chromium.XXXXXX/SingletonSocket` (45 bytes).
        assert!(a.link.as_os_str().len() + 45 < 108, "{}", a.link.display());
        std::fs::write(a.link.join("through"), "x").unwrap();
        assert!(dir.path().join("through").exists());
        let link = a.link.clone();
        drop(a);
        assert!(
            std::fs::symlink_metadata(&link).is_err(),
            "the link is left"
        );
        assert!(dir.path().exists());
    }
}
