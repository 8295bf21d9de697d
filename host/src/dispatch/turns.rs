//! Ops take turns on the root: an op that may change it (its verb may write
//! the repository, run its code or destroy data — or declares nothing) runs
//! alone; ops that only read run side by side. An op holds its turn from
//! the moment its plan's checks look at the root until its program has
//! finished (an `exec-read` plan's read-back included), so no op ever acts
//! on a check another op has since invalidated: a `git.switch` cannot turn
//! a directory into a symlink out of the root, or bring an `includeIf`
//! config into force, between a `git.status`'s check and its run.
//!
//! Two locks make one turn:
//! - a fair (first come, first served) in-process `RwLock`, so a waiting
//!   writer is not starved by a stream of readers and turns are granted in
//!   the order ops asked for them;
//! - an advisory `flock` on `$VERBGATE_HOME/state/locks/root-<hash>.lock`,
//!   shared or exclusive like the turn, so a `verbgate request` on the
//!   command line and a server on the same root take turns too.
//!
//! Inside one request, ops keep batch order on top of this (see
//! [`phases`]): a writing op starts only after every op before it has
//! finished, and no op after it starts before it has finished —
//! `[git.add, git.commit]` commits what was added.
//!
//! A turn is not held while a person is asked (a question can take
//! minutes): the op gives its turn back, and when the answer is yes takes
//! a new one and prepares its plan again; it runs only if the commands are
//! exactly the ones the person was shown.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use crate::error::{ErrorCode, OpError};
use crate::registry::Verb;
use crate::runtime::model::Effect;

/// How an op uses the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only reads it: runs beside other readers.
    Shared,
    /// May change it: runs alone.
    Exclusive,
}

impl Access {
    /// The access `verb` needs, from its declared effects: alone when it
    /// may change the root; beside others when it only reads — or declares
    /// nothing about the repository but may still start a program there;
    /// `None` only for a verb that declares no program at all (the host's
    /// job verbs: `job.wait` may wait minutes and must not hold writers
    /// back). A verb whose contract cannot declare effects (0.1.0) may do
    /// anything, so it runs alone.
    pub fn of(verb: &Verb) -> Option<Access> {
        let changes = [Effect::WritesRepo, Effect::RunsRepoCode, Effect::Destructive]
            .into_iter()
            .any(|e| verb.effects.may(e));
        if changes {
            Some(Access::Exclusive)
        } else if verb.effects.may(Effect::ReadsRepo) || !verb.programs.is_empty() {
            Some(Access::Shared)
        } else {
            None
        }
    }
}

/// Split a request's ops (their accesses, in batch order) into phases run
/// one after another: each writing op is a phase of its own, and the
/// readers between two writers share one. Returns each phase as a range of
/// op indices.
pub fn phases(accesses: &[Access]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, a) in accesses.iter().enumerate() {
        if *a == Access::Exclusive {
            if start < i {
                out.push(start..i);
            }
            out.push(i..i + 1);
            start = i + 1;
        }
    }
    if start < accesses.len() {
        out.push(start..accesses.len());
    }
    out
}

/// How long an op waits for its turn before it gives up (`unavailable`).
pub const TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// `unavailable`: the root stayed busy past [`TURN_WAIT`].
fn busy() -> OpError {
    OpError::new(
        ErrorCode::Unavailable,
        format!(
            "the root stayed busy for {} s (another op — maybe in another verbgate process — held it); nothing ran. Send the op again",
            TURN_WAIT.as_secs()
        ),
    )
}

/// The turns of one root.
#[derive(Debug)]
pub struct Turns {
    lock: Arc<RwLock<()>>,
    /// The lock file other processes on the same root share.
    file: PathBuf,
    /// Whether a turn has made and checked the lock files' directory (and
    /// got its turn): from then on a turn first tries without waiting.
    checked: Arc<std::sync::atomic::AtomicBool>,
}

/// A held turn; dropping it lets the next op go.
#[derive(Debug)]
pub enum Turn {
    /// Beside other readers.
    Shared(OwnedRwLockReadGuard<()>, File),
    /// Alone.
    Exclusive(OwnedRwLockWriteGuard<()>, File),
}

impl Turns {
    /// The turns of `root`, with its lock file under `home`'s state
    /// directory (named by a hash of the root, so every process serving
    /// the same root finds the same file).
    pub fn new(home: &Path, root: &Path) -> Turns {
        let hash = crate::json::sha256_hex(root.as_os_str().as_encoded_bytes());
        let file = home.join("state").join("locks").join(format!("root-{}.lock", &hash[..32]));
        Turns { lock: Arc::new(RwLock::new(())), file, checked: Arc::default() }
    }

    /// Wait (at most [`TURN_WAIT`]) for a turn of the kind `access` asks
    /// for.
    pub async fn take(&self, access: Access) -> Result<Turn, OpError> {
        tokio::time::timeout(TURN_WAIT, self.take_unbounded(access))
            .await
            .unwrap_or_else(|_| Err(busy()))
    }

    async fn take_unbounded(&self, access: Access) -> Result<Turn, OpError> {
        // The in-process lock first: only one op per process then waits on
        // the file lock, in a blocking thread.
        match access {
            Access::Shared => {
                let guard = Arc::clone(&self.lock).read_owned().await;
                let file = self.lock_file(access).await?;
                Ok(Turn::Shared(guard, file))
            }
            Access::Exclusive => {
                let guard = Arc::clone(&self.lock).write_owned().await;
                let file = self.lock_file(access).await?;
                Ok(Turn::Exclusive(guard, file))
            }
        }
    }

    async fn lock_file(&self, access: Access) -> Result<File, OpError> {
        let path = self.file.clone();
        let failed = |e: String| {
            OpError::new(
                ErrorCode::Unavailable,
                format!(
                    "cannot take a turn on the root through the lock file {} ({e}); nothing ran. Check that VERBGATE_HOME/state is yours and writable",
                    self.file.display()
                ),
            )
            .with("path", self.file.display().to_string())
        };
        let gate = self.file.with_extension("gate");
        // Uncontended (the usual case), the same steps succeed without
        // waiting: try them here, without a hand-off to a blocking thread.
        if self.checked.load(std::sync::atomic::Ordering::Acquire) {
            if let Some(file) = lock_now(&path, &gate, access) {
                return Ok(file);
            }
        }
        let checked = Arc::clone(&self.checked);
        let joined = tokio::task::spawn_blocking(move || -> Result<File, String> {
            // `flock` grants a shared lock while an exclusive one waits, so
            // readers of other processes could starve a writer for ever.
            // A gate taken around the wait gives the writer precedence: a
            // waiting writer holds the gate, and new readers queue behind it.
            let gate = open_lock_file(&gate).map_err(|e| e.to_string())?;
            gate.lock().map_err(|e| e.to_string())?;
            let file = open_lock_file(&path).map_err(|e| e.to_string())?;
            match access {
                Access::Shared => file.lock_shared(),
                Access::Exclusive => file.lock(),
            }
            .map_err(|e| e.to_string())?;
            drop(gate);
            checked.store(true, std::sync::atomic::Ordering::Release);
            Ok(file)
        })
        .await;
        joined.map_err(|e| failed(e.to_string()))?.map_err(failed)
    }
}

/// The turn of one op: taken before its plan's checks, given back while a
/// person is asked, taken again before it runs.
pub struct Slot<'a> {
    turns: &'a Turns,
    access: Option<Access>,
    held: Option<Turn>,
    given_back: bool,
    /// A two-stage verb's target as checked under this turn (name and
    /// fingerprint): checked again if the turn is given back.
    pub target: Option<(String, String)>,
}

impl<'a> Slot<'a> {
    /// Take a turn of kind `access`; `None` (a verb that never touches the
    /// root, like `job.wait`, which may wait minutes) takes none.
    pub async fn take(turns: &'a Turns, access: Option<Access>) -> Result<Slot<'a>, OpError> {
        let held = match access {
            Some(a) => Some(turns.take(a).await?),
            None => None,
        };
        Ok(Slot { turns, access, held, given_back: false, target: None })
    }

    /// Let other ops go while this one waits (for a person's answer).
    pub fn give_back(&mut self) {
        if self.held.take().is_some() {
            self.given_back = true;
        }
    }

    /// Take the turn again if it was given back; true when it was, so the
    /// op's checks must be made again (the root may have changed).
    pub async fn take_again(&mut self) -> Result<bool, OpError> {
        if !self.given_back {
            return Ok(false);
        }
        if let Some(a) = self.access {
            self.held = Some(self.turns.take(a).await?);
        }
        self.given_back = false;
        Ok(true)
    }
}

/// The steps of [`Turns::lock_file`]'s wait, each without waiting: the
/// gate (free: no writer of another process waits), then the lock itself;
/// `None` when either is held elsewhere (or a file cannot be opened), so
/// the caller waits for them as usual. Only once the waiting path has made
/// and checked the directory (0700, this user's). Each turn opens its own descriptions of
/// the files, as the waiting path does: a `flock` belongs to one.
fn lock_now(path: &Path, gate: &Path, access: Access) -> Option<File> {
    let gate = open_lock_file_in(gate).ok()?;
    gate.try_lock().ok()?;
    let file = open_lock_file_in(path).ok()?;
    match access {
        Access::Shared => file.try_lock_shared(),
        Access::Exclusive => file.try_lock(),
    }
    .ok()?;
    drop(gate);
    Some(file)
}

/// Open (creating 0600, in a 0700 directory) the lock file, never through
/// a symlink: the file is only ever locked, never read or written, but a
/// planted link must not make verbgate create files elsewhere.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        crate::private_files::ensure_private_dir(dir)
            .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    }
    open_lock_file_in(path)
}

/// [`open_lock_file`] in a directory that exists.
fn open_lock_file_in(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::{Exclusive as W, Shared as R};

    #[test]
    fn writers_are_phases_of_their_own_in_batch_order() {
        assert_eq!(phases(&[R, R, W, R, W, W, R]), vec![0..2, 2..3, 3..4, 4..5, 5..6, 6..7]);
        assert_eq!(phases(&[R, R]), vec![0..2]);
        assert_eq!(phases(&[W]), vec![0..1]);
        assert!(phases(&[]).is_empty());
    }

    #[tokio::test]
    async fn a_writer_waits_for_readers_and_readers_for_a_writer_across_processes_files() {
        let home = tempfile::tempdir().unwrap();
        // Two `Turns` on the same root stand for two processes: only the
        // lock file connects them.
        let a = Turns::new(home.path(), Path::new("/some/root"));
        let b = Turns::new(home.path(), Path::new("/some/root"));
        let read = a.take(R).await.unwrap();
        let other_read = b.take(R).await.unwrap();
        let write = tokio::time::timeout(std::time::Duration::from_millis(200), b.take(W));
        drop(other_read);
        assert!(
            write.await.is_err(),
            "a writer in another process waits while a reader holds the root"
        );
        drop(read);
        let held = b.take(W).await.unwrap();
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(200), a.take(R)).await.is_err(),
            "a reader waits for the writer"
        );
        drop(held);
        a.take(R).await.unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&a.file).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn readers_of_other_processes_cannot_starve_a_writer() {
        // Seen before the gate: four processes looping a 0.6 s read kept a
        // git.add from another process waiting for over a minute (a shared
        // flock is granted while an exclusive one waits).
        let home = tempfile::tempdir().unwrap();
        let root = Path::new("/r");
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut readers = Vec::new();
        for i in 0..4u64 {
            let (home, stop) = (home.path().to_path_buf(), Arc::clone(&stop));
            readers.push(tokio::spawn(async move {
                let turns = Turns::new(&home, root);
                tokio::time::sleep(std::time::Duration::from_millis(i * 30)).await;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let held = turns.take(R).await.unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(120)).await;
                    drop(held);
                }
            }));
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let writer = Turns::new(home.path(), root);
        let got = tokio::time::timeout(std::time::Duration::from_secs(3), writer.take(W)).await;
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(got.is_ok(), "the writer waited past 3 s behind overlapping readers");
        drop(got);
        for r in readers {
            r.await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_planted_symlink_is_not_followed() {
        let home = tempfile::tempdir().unwrap();
        let t = Turns::new(home.path(), Path::new("/r"));
        std::fs::create_dir_all(t.file.parent().unwrap()).unwrap();
        let elsewhere = home.path().join("elsewhere");
        std::os::unix::fs::symlink(&elsewhere, &t.file).unwrap();
        let e = t.take(R).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Unavailable);
        assert!(!elsewhere.exists());
    }
}
