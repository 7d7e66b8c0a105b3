//! Waiting for a tmux server to appear on a socket, without asking tmux on a clock.
//!
//! A tmux server that starts creates its socket (`bind`), and the folder it lives in when that is
//! missing (`tmux-<uid>` under `TMUX_TMPDIR` or `/tmp` for the default socket). So the manager of
//! a socket with no server watches that folder with inotify — or, while the folder does not exist
//! yet, the nearest folder above it that does — and tries discovery again when something is
//! created or moved in there. An idle bridge with no tmux server then spawns no process and wakes
//! for nothing.
//!
//! Two things keep it from missing a server: a socket made between the last discovery and the
//! watch is seen by its time (see [`created_near`]); and a slow [`RECHECK`] covers a folder whose
//! events do not reach this machine's kernel (a network filesystem). Without inotify (its limits
//! reached) the manager waits the backend's `retry` instead, as it did before.

use std::ffi::OsString;
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fs::inotify;
use tokio::io::unix::AsyncFd;

use super::TmuxSocket;

/// The longest a manager waits between discoveries while its socket's folder is watched.
pub(super) const RECHECK: Duration = Duration::from_secs(60);

/// The path of `socket`'s file as tmux computes it: `-S <path>` as given; the default socket at
/// `$TMUX_TMPDIR/tmux-<uid>/default` (`/tmp` without `TMUX_TMPDIR`), where `env` (the backend's
/// extra environment for tmux) wins over this process's environment.
pub(super) fn socket_path(socket: &TmuxSocket, env: &[(OsString, OsString)]) -> PathBuf {
    match socket {
        TmuxSocket::Path(path) => path.clone(),
        TmuxSocket::Default => {
            let tmpdir = env
                .iter()
                .rev()
                .find(|(k, _)| k == "TMUX_TMPDIR")
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var_os("TMUX_TMPDIR"))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| OsString::from("/tmp"));
            let uid = nix::unistd::getuid().as_raw();
            PathBuf::from(tmpdir)
                .join(format!("tmux-{uid}"))
                .join("default")
        }
    }
}

/// Returns when something is created or moved into the folder of `socket` (or, while that folder
/// is missing, into the nearest existing folder above it), after [`RECHECK`] at the latest — or
/// at once when `socket` was made at or after `tried` (the start of the discovery that just found
/// no server). `Err` when inotify cannot be used; the caller then waits on a clock.
pub(super) async fn created_near(socket: &Path, tried: SystemTime) -> std::io::Result<()> {
    let fd = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)?;
    let mut folder = socket.parent().unwrap_or(Path::new("/"));
    while !folder.is_dir() {
        match folder.parent() {
            Some(up) => folder = up,
            None => return Err(std::io::ErrorKind::NotFound.into()),
        }
    }
    inotify::add_watch(
        &fd,
        folder,
        inotify::WatchFlags::CREATE | inotify::WatchFlags::MOVED_TO,
    )?;
    // Made while the watch was not there yet (a stale socket of a server long gone is older).
    if made_since(socket, tried) {
        return Ok(());
    }
    // `AsyncFd::new` is deprecated because a borrowed descriptor could be closed while it is
    // registered; this one is owned by the `AsyncFd` (moved in) and closed only with it, which is
    // the sound case — and the safe constructor keeps this crate free of `unsafe`.
    #[allow(deprecated)]
    let fd = AsyncFd::new(fd)?;
    let event = async {
        loop {
            let mut ready = fd.readable().await?;
            let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
            let mut events = inotify::Reader::new(ready.get_inner(), &mut buf);
            match events.next() {
                Ok(_) => return Ok::<(), std::io::Error>(()),
                Err(rustix::io::Errno::WOULDBLOCK) => ready.clear_ready(),
                Err(e) => return Err(e.into()),
            }
        }
    };
    match tokio::time::timeout(RECHECK, event).await {
        Ok(result) => result,
        Err(_elapsed) => Ok(()),
    }
}

/// How far a file's time may lag the clock it is compared with: the kernel stamps files from its
/// coarse clock (advanced once a tick, up to 10 ms apart), while `since` is read from the precise
/// one — a socket made in the same tick as `since` carries an earlier time.
const STAMP_LAG: Duration = Duration::from_millis(100);

/// Whether `path` exists and was modified at or after `since` (within [`STAMP_LAG`]).
fn made_since(path: &Path, since: SystemTime) -> bool {
    let since = since.checked_sub(STAMP_LAG).unwrap_or(since);
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;

    #[test]
    fn the_default_socket_follows_tmux_tmpdir() {
        let uid = nix::unistd::getuid().as_raw();
        let env = vec![("TMUX_TMPDIR".into(), "/some/dir".into())];
        assert_eq!(
            socket_path(&TmuxSocket::Default, &env),
            PathBuf::from(format!("/some/dir/tmux-{uid}/default"))
        );
        assert_eq!(
            socket_path(&TmuxSocket::Path("/x/y.sock".into()), &env),
            PathBuf::from("/x/y.sock")
        );
    }

    #[tokio::test]
    async fn a_socket_made_in_a_missing_folder_is_seen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("tmux-0").join("default");
        let tried = SystemTime::now();
        let mut waiting = Box::pin(created_near(&socket, tried));
        // Polled once, it has set its watch and waits (no fixed sleep: the first `Pending` is
        // the moment the watch is in place).
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        // The folder appears: the wait ends (the caller then tries again and watches it).
        std::fs::create_dir(dir.path().join("tmux-0")).expect("mkdir");
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken by the new folder, long before the recheck")
            .expect("inotify works here");
        // A socket made before the next watch is set is seen by its time.
        std::fs::write(&socket, b"").expect("make the socket's file");
        tokio::time::timeout(Duration::from_secs(5), created_near(&socket, tried))
            .await
            .expect("at once")
            .expect("inotify works here");
    }

    #[test]
    fn a_socket_stamped_by_the_coarse_clock_is_still_new() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("default");
        std::fs::write(&socket, b"").expect("a socket");
        let stamped = std::fs::metadata(&socket).unwrap().modified().unwrap();
        // Discovery started a few milliseconds "after" the file's coarse stamp: still new.
        assert!(made_since(&socket, stamped + Duration::from_millis(10)));
        // Half a second after it: a stale socket.
        assert!(!made_since(&socket, stamped + Duration::from_millis(500)));
    }

    #[tokio::test]
    async fn a_stale_socket_does_not_end_the_wait() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("default");
        std::fs::write(&socket, b"").expect("a stale socket");
        let tried = SystemTime::now() + Duration::from_secs(1);
        let waited =
            tokio::time::timeout(Duration::from_millis(300), created_near(&socket, tried)).await;
        assert!(waited.is_err(), "nothing was made: still waiting");
    }
}
