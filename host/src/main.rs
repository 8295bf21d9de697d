//! The `verbgate` binary: a thin shell over the library.

fn main() -> std::process::ExitCode {
    verbgate::cli::main()
}
