//! `collie`: see `collie --help`.

use std::process::ExitCode;

use collie_sandbox::launch;

fn main() -> ExitCode {
    // The tool guard (decision 0032) runs between the bridge and every tool command, the sandbox's
    // keeper and its confining child (decision 0071) around every command started for a phone.
    // They are looked for before clap so they stay out of `--help` and start with nothing else
    // set up.
    let mut args = std::env::args_os().skip(1);
    match args.next() {
        Some(a) if a == collie_actors::tools::sessions::TOOL_GUARD => {
            collie_actors::tools::sessions::guard_main(args.collect())
        }
        Some(a) if a == launch::KEEPER => launch::keeper_main(args.collect()),
        Some(a) if a == launch::INNER => launch::inner_main(args.collect()),
        _ => collie::cli::main(),
    }
}
