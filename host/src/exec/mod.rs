//! Native execution of plans: the only place verbgate starts a program.
//!
//! - [`argv`]: renders a plugin's typed argv and enforces the injection
//!   guard (no caller value in an option position, no NUL, no shell).
//! - [`programs`]: program names resolved to absolute paths once, at start.
//! - [`confine`]: working directories kept inside the configured root.
//! - [`env`]: the environment variables a plan may set (an allow list).
//! - [`guard`]: program-specific defences against hostile repository
//!   content (git config, ancestor cargo config, just's parent search).
//! - [`run`]: a cleared environment, bounded capture, a timeout that kills
//!   the whole process group; [`child`] runs the program's life on a
//!   blocking thread.

pub mod argv;
mod child;
pub mod confine;
pub mod env;
pub mod guard;
pub mod orphans;
pub mod programs;
pub mod run;

pub use argv::render_argv;
pub use guard::Guards;
pub use programs::Programs;
pub use run::{run_after, run_command, Launch, Prepared, RunLimits};
