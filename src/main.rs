//! The `bench` binary: parse arguments, run, exit with 0 / 1 / 2.

fn main() -> std::process::ExitCode {
    bench::commands::main(bench::cli::parse())
}
