//! The second half of `collie restart` for a bridge no service manager runs (decision 0077):
//! once the bridge has stopped as on SIGTERM — listeners closed, actors stopped, the store flushed
//! and closed, its control socket and local secret removed — the process executes its own
//! program again. The pid stays, so whatever started the bridge (a terminal, a script, a test)
//! still holds it; the environment stays, and `.env` and `config.toml` are read anew.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::Context;

/// The arguments of the new start: the same `collie bridge` flags, with the port the old bridge
/// actually listened on when it had let the OS choose (`--port 0`, `COLLIE_PORT=0`), so a phone
/// finds the new bridge at the URL it used. A port that was named is passed on as it was named,
/// so a new `COLLIE_PORT` in `.env` takes effect.
pub(super) fn argv(
    argv0: OsString,
    host: Option<&str>,
    port: Option<u16>,
    name: Option<&str>,
    crew_port: Option<u16>,
) -> Vec<OsString> {
    let mut out = vec![argv0, "bridge".into()];
    let mut flag = |f: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push(f.into());
            out.push(v.into());
        }
    };
    flag("--host", host.map(str::to_owned));
    flag("--port", port.map(|p| p.to_string()));
    flag("--name", name.map(str::to_owned));
    flag("--crew-port", crew_port.map(|p| p.to_string()));
    out
}

/// Executes `program` with `argv` in place of this process; returns only when that fails.
pub(super) fn exec(program: &Path, argv: &[OsString]) -> anyhow::Error {
    let cstring = |s: &[u8]| CString::new(s).context("an argument holds a NUL byte");
    let program_c = match cstring(program.as_os_str().as_bytes()) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let args: Result<Vec<CString>, _> = argv.iter().map(|a| cstring(a.as_bytes())).collect();
    let args = match args {
        Ok(a) => a,
        Err(e) => return e,
    };
    close_on_exec_above_stdio();
    match nix::unistd::execv(&program_c, &args) {
        Ok(never) => match never {},
        Err(e) => anyhow::anyhow!("executing {} again: {e}", program.display()),
    }
}

/// Marks every descriptor above stderr close-on-exec, so nothing the old bridge held — a hosted
/// pane's terminal, a socket some library opened without the flag — lives on in the new one
/// unseen (std and tokio already set the flag on theirs).
fn close_on_exec_above_stdio() {
    let Ok(dir) = std::fs::read_dir("/dev/fd") else {
        return;
    };
    let fds: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // The descriptor of the listing itself is closed by now: EBADF, ignored.
        let _ = nix::fcntl::fcntl(
            fd,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::argv;

    #[test]
    fn the_new_start_has_the_same_flags_and_the_port_that_was_bound() {
        assert_eq!(
            argv(
                "collie".into(),
                Some("0.0.0.0"),
                Some(40123),
                Some("box"),
                None
            ),
            ["collie", "bridge", "--host", "0.0.0.0", "--port", "40123", "--name", "box"]
                .map(std::ffi::OsString::from)
                .to_vec()
        );
        assert_eq!(
            argv("/usr/bin/collie".into(), None, None, None, Some(7421)),
            ["/usr/bin/collie", "bridge", "--crew-port", "7421"]
                .map(std::ffi::OsString::from)
                .to_vec()
        );
    }
}
