//! The `rayscope` binary: its command line, commands and process setup are `cli`'s.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
