//! `collie`: see `collie --help`.

use std::process::ExitCode;

fn main() -> ExitCode {
    collie::cli::main()
}
