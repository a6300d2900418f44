//! The `toolhost` binary: parse the command line, run the library, map errors to exit codes.

fn main() -> std::process::ExitCode {
    toolhost::cli::main()
}
