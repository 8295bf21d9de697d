//! What every subcommand shares: the global options and how an answer is
//! printed (a leaf: subcommands use it without importing the dispatcher
//! of subcommands in [`super`]).

use std::path::PathBuf;

use crate::config::Overrides;

/// Options every subcommand accepts.
#[derive(Debug, clap::Args, Clone)]
pub struct GlobalArgs {
    /// verbgate's home (trust/, plugins/, state/, cache/, keys/).
    /// Default: $VERBGATE_HOME, else $XDG_DATA_HOME/verbgate, else ~/.local/share/verbgate.
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// Config file. Default: $VERBGATE_HOME/verbgate.toml when present.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Directory programs run in. Default: the current directory.
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Extra plugin directory to load signed components from (repeatable).
    #[arg(long = "plugins", global = true, value_name = "DIR")]
    pub(crate) plugins: Vec<PathBuf>,
}

impl GlobalArgs {
    pub(crate) fn overrides(&self) -> Overrides {
        Overrides {
            home: self.home.clone(),
            config: self.config.clone(),
            root: self.root.clone(),
            plugin_dirs: self.plugins.clone(),
        }
    }
}

/// Print JSON (compact, one line) on stdout.
pub(crate) fn print_json(v: &serde_json::Value) {
    println!("{v}");
}
