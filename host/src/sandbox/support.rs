//! What the kernel of this machine can enforce (a leaf: the platform
//! modules fill it in, [`super::support`] probes it once).

/// What the kernel of this machine can enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The mechanism (`landlock+seccomp`, `seatbelt`), or `None`.
    pub mechanism: Option<&'static str>,
    /// Landlock's ABI version (Linux), when there is one.
    pub landlock_abi: Option<i32>,
    /// What each part covers here, for `verbgate doctor`.
    pub covers: Vec<String>,
    /// Why the sandbox cannot be enforced, when it cannot.
    pub missing: Option<String>,
}
