//! The `toolhost` binary: everything is in the library (`toolhost::main`).

fn main() -> std::process::ExitCode {
    toolhost::main()
}
