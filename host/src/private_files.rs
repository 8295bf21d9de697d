//! Files verbgate trusts from its home, and how it writes them.
//!
//! What lies in `VERBGATE_HOME` decides what runs: `trust/` says which keys
//! may sign code, `cache/` holds native code, `verbgate.toml` names
//! programs, `plugins/` holds components. A home another local user can
//! write to is that user's code running as us. So:
//!
//! - [`check_home`] refuses (never repairs) a home, one of its directories,
//!   the config file or `tokens.json` when it is owned by someone else or
//!   writable by group or others, naming the path, the problem and the fix;
//! - directories verbgate creates are created 0700 ([`ensure_private_dir`]);
//! - files are written through an exclusive temporary name with a random
//!   suffix (`O_CREAT|O_EXCL`, never through a planted file or symlink),
//!   then renamed into place ([`write_file_atomic`]);
//! - small files verbgate reads back (keys, labels, cache entries) are
//!   opened without following symlinks and without blocking, and must be
//!   regular files under a size cap ([`read_regular_capped`]).

use anyhow::{Context, Result};
use std::fmt;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::ErrorCode;

/// A path verbgate refuses to trust: owned by another user, or writable by
/// group or others. Its [`code`](InsecureFile::code) is `insecure_file`.
#[derive(Debug, Clone)]
pub struct InsecureFile {
    /// The offending path.
    pub path: PathBuf,
    /// What is wrong with it (owner uid or mode).
    pub problem: String,
    /// The command that fixes it.
    pub fix: String,
}

impl InsecureFile {
    /// The stable error code for this refusal.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::InsecureFile
    }
}

impl fmt::Display for InsecureFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}; verbgate does not trust files another user could have written (fix: {})",
            self.path.display(),
            self.problem,
            self.fix
        )
    }
}

impl std::error::Error for InsecureFile {}

/// The effective user id verbgate runs as.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Refuse `meta` (of `path`) unless it is owned by the user verbgate runs
/// as and not writable by group or others.
pub fn check_private(path: &Path, meta: &Metadata) -> Result<(), InsecureFile> {
    let me = euid();
    if meta.uid() != me {
        return Err(InsecureFile {
            path: path.to_path_buf(),
            problem: format!(
                "is owned by uid {}, not by the user running verbgate (uid {me})",
                meta.uid()
            ),
            fix: format!(
                "`chown {me} {}`, or remove it and let verbgate recreate it",
                path.display()
            ),
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(InsecureFile {
            path: path.to_path_buf(),
            problem: format!("is writable by group or others (mode {mode:o})"),
            fix: format!("`chmod go-w {}`", path.display()),
        });
    }
    Ok(())
}

/// The directories of the home that decide what runs (checked when they
/// exist; verbgate creates them 0700 when it needs them).
pub const HOME_DIRS: &[&str] = &["cache", "trust", "state", "plugins", "keys"];

/// Check the home, its directories, the config file and `tokens.json`
/// before anything in them is trusted. A missing path is fine (nothing to trust yet).
pub fn check_home(home: &Path, config_file: Option<&Path>) -> Result<()> {
    let mut paths = vec![home.to_path_buf()];
    paths.extend(HOME_DIRS.iter().map(|d| home.join(d)));
    paths.extend(config_file.map(Path::to_path_buf));
    for path in paths {
        // Follow symlinks: what matters is who can write what the link
        // leads to.
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot check {}", path.display())),
        };
        check_private(&path, &meta)?;
    }
    check_token_file(&home.join(TOKENS_FILE))
}

/// The bearer-token file's name in the home.
pub const TOKENS_FILE: &str = "tokens.json";

/// Check the bearer-token file (an absent file is fine: no tokens). It
/// decides who a server lets in: the rule of [`check_private`], with a fix
/// that also says to look for planted tokens. Follows a symlink, as the
/// home check does for the config: what matters is who can write what it
/// leads to.
pub fn check_token_file(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) => check_token_meta(path, &meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot check {}", path.display())),
    }
}

/// [`check_token_file`] on metadata already read (from an open descriptor).
pub fn check_token_meta(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    if let Err(mut insecure) = check_private(path, meta) {
        // Whoever could write it may have added a token of their own:
        // fixing the mode is not enough.
        let tighten = if insecure.problem.contains("owned by") {
            insecure.fix.clone()
        } else {
            format!("`chmod 600 {}`", path.display())
        };
        insecure.fix = format!("{tighten}, then look for tokens you did not make with `verbgate token list` and revoke them");
        return Err(insecure.into());
    }
    Ok(())
}

/// Create a private directory (0700, parents too) or check an existing
/// one: it must be ours and not writable by others (refused otherwise,
/// never repaired); one merely readable by others is tightened to 0700.
pub fn ensure_private_dir(dir: &Path) -> Result<()> {
    if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        return Err(e).with_context(|| format!("cannot create {}", dir.display()));
    }
    let meta = std::fs::metadata(dir).with_context(|| format!("cannot check {}", dir.display()))?;
    if !meta.is_dir() {
        anyhow::bail!("{} is not a directory", dir.display());
    }
    check_private(dir, &meta)?;
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {} private", dir.display()))?;
    }
    Ok(())
}

/// `n` bytes from the system's random source.
pub fn random_bytes(n: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; n];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .context("cannot read random bytes from /dev/urandom")?;
    Ok(buf)
}

/// Write `bytes` to a fresh temporary file next to `path` — an exclusive
/// (`O_CREAT|O_EXCL`), unpredictable name, created with `mode` — then
/// rename it over `path`, so a reader never sees half a file and no one can
/// plant the temporary file or a symlink in its place beforehand.
pub fn write_file_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let (tmp, mut file) = create_exclusive_temp(path, mode)?;
    let written = file.write_all(bytes).and_then(|_| file.sync_all());
    let result =
        written.with_context(|| format!("cannot write {}", tmp.display())).and_then(|_| {
            std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Write a file readable only by its owner (0600), atomically (see
/// [`write_file_atomic`]).
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_file_atomic(path, bytes, 0o600)
}

/// Create `path` with `bytes` only if nothing is there yet (0600), without
/// a moment where a reader could see it half-written: written under a
/// temporary name, then hard-linked into place (link never replaces).
/// Returns false when `path` already existed.
pub fn create_private_file_once(path: &Path, bytes: &[u8]) -> Result<bool> {
    let (tmp, mut file) = create_exclusive_temp(path, 0o600)?;
    let result = file
        .write_all(bytes)
        .and_then(|_| file.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|_| match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e).with_context(|| format!("cannot create {}", path.display())),
        });
    let _ = std::fs::remove_file(&tmp);
    result
}

fn create_exclusive_temp(path: &Path, mode: u32) -> Result<(PathBuf, File)> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut last = None;
    for _ in 0..8 {
        let tmp = dir.join(format!(".{name}.{}.tmp", hex::encode(random_bytes(8)?)));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", tmp.display())),
        }
    }
    Err(last.expect("the loop ran"))
        .with_context(|| format!("cannot find a free temporary name beside {}", path.display()))
}

/// Why a small file could not be read (a sentence naming no path; callers
/// add it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadRefusal {
    /// The file does not exist.
    Missing,
    /// Anything else: a symlink, not a regular file, too big, foreign, …
    Refused(String),
}

impl fmt::Display for ReadRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadRefusal::Missing => f.write_str("does not exist"),
            ReadRefusal::Refused(why) => f.write_str(why),
        }
    }
}

/// Read a small file that verbgate trusts: opened without following a
/// symlink (`O_NOFOLLOW`) and without blocking (`O_NONBLOCK`, so a FIFO
/// cannot hang a start), then required (on the open descriptor) to be a
/// regular file of at most `cap` bytes, owned by the user and not writable
/// by group or others. Never reads more than `cap + 1` bytes.
pub fn read_regular_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ReadRefusal> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadRefusal::Missing),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ReadRefusal::Refused(
                "is a symlink; it is read only as a regular file, never through a link".into(),
            ))
        }
        Err(e) => return Err(ReadRefusal::Refused(format!("cannot be opened ({e})"))),
    };
    let meta =
        file.metadata().map_err(|e| ReadRefusal::Refused(format!("cannot be checked ({e})")))?;
    if !meta.file_type().is_file() {
        return Err(ReadRefusal::Refused(
            "is not a regular file (a FIFO, device, socket or directory)".into(),
        ));
    }
    if meta.len() > cap {
        return Err(ReadRefusal::Refused(format!(
            "is {} bytes, more than the {cap}-byte cap",
            meta.len()
        )));
    }
    if let Err(e) = check_private(path, &meta) {
        return Err(ReadRefusal::Refused(format!("{} (fix: {})", e.problem, e.fix)));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadRefusal::Refused(format!("cannot be read ({e})")))?;
    if bytes.len() as u64 > cap {
        return Err(ReadRefusal::Refused(format!("grew past the {cap}-byte cap while being read")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_files_are_0600_and_leave_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secret");
        write_private_file(&p, b"x").unwrap();
        write_private_file(&p, b"y").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"y");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_planted_temporary_symlink_is_never_written_through() {
        // The old writer used `.<name>.tmp<pid>`: a symlink planted there
        // redirected the write. Names are now random and opened O_EXCL.
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let p = dir.path().join("secret");
        std::os::unix::fs::symlink(
            &victim,
            dir.path().join(format!(".secret.tmp{}", std::process::id())),
        )
        .unwrap();
        write_private_file(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn created_once_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        assert!(create_private_file_once(&p, b"first").unwrap());
        assert!(!create_private_file_once(&p, b"second").unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn private_dirs_are_0700_and_foreign_or_writable_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("a/b");
        ensure_private_dir(&d).unwrap();
        for p in [dir.path().join("a"), d.clone()] {
            assert_eq!(
                std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o700,
                "{}",
                p.display()
            );
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o770)).unwrap();
        let err = ensure_private_dir(&d).unwrap_err();
        let insecure = err.downcast_ref::<InsecureFile>().expect("an InsecureFile");
        assert!(insecure.fix.contains("chmod go-w"), "{insecure}");
    }

    #[test]
    fn capped_reads_refuse_links_fifos_and_big_files() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok");
        std::fs::write(&ok, "abc").unwrap();
        assert_eq!(read_regular_capped(&ok, 3).unwrap(), b"abc");
        assert!(matches!(read_regular_capped(&ok, 2), Err(ReadRefusal::Refused(_))));
        assert_eq!(read_regular_capped(&dir.path().join("none"), 3), Err(ReadRefusal::Missing));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&ok, &link).unwrap();
        assert!(read_regular_capped(&link, 10).unwrap_err().to_string().contains("symlink"));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_regular_capped(&fifo, 10)
            .unwrap_err()
            .to_string()
            .contains("not a regular file"));
    }
}
