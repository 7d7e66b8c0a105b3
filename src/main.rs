//! `collie`: see `collie --help`.

use std::process::ExitCode;

fn main() -> ExitCode {
    // The tool guard (decision 0032) runs between the bridge and every tool command. It is looked
    // for before clap so it stays out of `--help` and starts with nothing else set up.
    let mut args = std::env::args_os().skip(1);
    if args
        .next()
        .is_some_and(|a| a == collie_actors::tools::sessions::TOOL_GUARD)
    {
        return collie_actors::tools::sessions::guard_main(args.collect());
    }
    collie::cli::main()
}
