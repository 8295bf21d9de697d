//! What `Confinement::spawn` can start: std's command or tokio's.

/// A command that `Confinement::spawn` can start: std's or tokio's.
pub trait Spawn: Send {
    /// What starting it gives.
    type Child: Send;
    /// The std command underneath.
    fn std(&mut self) -> &mut std::process::Command;
    /// Start it.
    fn start(&mut self) -> std::io::Result<Self::Child>;
}

impl Spawn for std::process::Command {
    type Child = std::process::Child;
    fn std(&mut self) -> &mut std::process::Command {
        self
    }
    fn start(&mut self) -> std::io::Result<std::process::Child> {
        self.spawn()
    }
}

impl Spawn for tokio::process::Command {
    type Child = tokio::process::Child;
    fn std(&mut self) -> &mut std::process::Command {
        self.as_std_mut()
    }
    fn start(&mut self) -> std::io::Result<tokio::process::Child> {
        self.spawn()
    }
}
