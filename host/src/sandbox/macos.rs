//! macOS: a Seatbelt profile (SBPL) made from the [`Profile`] and applied
//! with `sandbox_init` in the child before `exec`. Built and linted in the
//! cross-build gate (`just cross`); it cannot run on the machines the tests
//! run on, so what it enforces is stated, not proven, in SECURITY.md.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::Arc;

use super::profile::Profile;
use super::support::Support;

extern "C" {
    fn sandbox_init(
        profile: *const libc::c_char,
        flags: u64,
        errorbuf: *mut *mut libc::c_char,
    ) -> libc::c_int;
}

/// What this system enforces: Seatbelt is always there on macOS.
pub fn probe() -> Support {
    Support {
        mechanism: Some("seatbelt"),
        landlock_abi: None,
        covers: vec!["files and network: Seatbelt (sandbox_init)".into()],
        missing: None,
    }
}

/// An SBPL string literal.
fn quote(p: &Path) -> String {
    let s = p.display().to_string();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The profile as SBPL: deny by default, then what the profile allows.
pub fn sbpl(profile: &Profile, tmp: &Path) -> String {
    let mut s = String::from("(version 1)\n(deny default)\n(allow process-exec process-fork)\n(allow signal (target same-sandbox))\n(allow sysctl-read)\n(allow mach-lookup)\n(allow ipc-posix-shm)\n");
    s.push_str("(allow file-read-metadata)\n");
    for p in &profile.read {
        s.push_str(&format!("(allow file-read* (subpath {}))\n", quote(p)));
    }
    for p in profile.write.iter().map(|p| p.as_path()).chain([tmp]) {
        s.push_str(&format!("(allow file-read* file-write* (subpath {}))\n", quote(p)));
    }
    if profile.network {
        s.push_str("(allow network*)\n");
    } else {
        s.push_str("(allow network* (local unix))\n");
    }
    s
}

/// An SBPL profile ready for the child.
pub struct Confinement {
    profile: Arc<CString>,
}

impl Confinement {
    /// Build the confinement of `profile` with `tmp` writable.
    pub fn new(profile: &Profile, tmp: &Path) -> Result<Confinement, String> {
        let text = CString::new(sbpl(profile, tmp))
            .map_err(|_| "a path of the profile contains a NUL byte".to_string())?;
        Ok(Confinement { profile: Arc::new(text) })
    }

    /// Install into `cmd`, to run in the child right before `exec`.
    pub fn install(&self, cmd: &mut std::process::Command) {
        let profile = Arc::clone(&self.profile);
        // SAFETY: between fork and exec: one call into libsandbox with a
        // string made in the parent.
        unsafe {
            cmd.pre_exec(move || {
                let mut error: *mut libc::c_char = std::ptr::null_mut();
                if sandbox_init(profile.as_ptr(), 0, &mut error) != 0 {
                    return Err(std::io::Error::from_raw_os_error(libc::EPERM));
                }
                Ok(())
            });
        }
    }
}
