//! The `retrystorm` command. Everything it does lives in the library; this binary only reads
//! arguments ([`cli`]) and maps the outcome to an exit code.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
