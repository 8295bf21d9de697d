//! The `verbgate` binary: a thin shell over the library.

fn main() -> std::process::ExitCode {
    // The sandbox's namespace wrapper must run before anything else: it
    // unshares a user namespace, which a process with a second thread
    // cannot.
    #[cfg(target_os = "linux")]
    if verbgate::sandbox::namespace::is_entry(std::env::args_os().nth(1).as_deref()) {
        verbgate::sandbox::namespace::main();
    }
    verbgate::cli::main()
}
