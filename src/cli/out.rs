//! Printing a command's answer to stdout without panicking when the reader goes away.
//!
//! `println!` panics when stdout is a pipe whose reader has exited (`collie audit list | head`):
//! Rust ignores `SIGPIPE`, so the write fails with `EPIPE` and the macro turns that into a panic.
//! The commands print through [`outln!`] instead, which returns the error; [`super::main`] treats a
//! broken pipe as the reader having seen enough and exits quietly, as `ls | head` does.

/// Writes one line to stdout like `println!`, returning `std::io::Result<()>` instead of
/// panicking when the write fails.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

/// Writes to stdout like `print!` (no newline), flushed, returning `std::io::Result<()>`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        write!(stdout, $($arg)*).and_then(|()| stdout.flush())
    }};
}

/// True when `error` comes from writing to a pipe nobody reads any more.
pub(crate) fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
