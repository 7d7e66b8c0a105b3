//! Whether a unix socket path is private to this user before connecting to it (SPEC §10.2, the
//! rule of §10.3): every component from `/` down is checked with `lstat` — no symlinks; each
//! directory owned by root or this user and not writable by group or others, except a root-owned
//! directory with the sticky bit (such as `/tmp`); the socket's own directory this user's and
//! 0700; the socket this user's, a socket, and 0600. Anyone who could replace a component could
//! put their own socket in its place and read what is sent or answer in the bridge's name.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

/// Binds a unix socket at `path` with mode 0600 (the bridge's control and hook sockets),
/// replacing a stale socket file. Call from within a tokio runtime.
pub fn bind(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Why a socket path is not private.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is relative.
    #[error("{0} is not an absolute path")]
    Relative(PathBuf),
    /// A component does not exist.
    #[error("no socket at {0}")]
    Missing(PathBuf),
    /// A component cannot be read.
    #[error("cannot check {0}: {1}")]
    Unreadable(PathBuf, String),
    /// A component is a symlink.
    #[error("{0} is a symlink")]
    Symlink(PathBuf),
    /// A directory on the way is another user's, or writable by others.
    #[error("{0} could be replaced by another user (owner {1}, mode {2:o})")]
    Replaceable(PathBuf, u32, u32),
    /// The socket's directory is not this user's 0700 directory.
    #[error("{0} must be this user's and mode 0700 (it is owner {1}, mode {2:o})")]
    NotPrivateDir(PathBuf, u32, u32),
    /// The socket is not this user's 0600 socket.
    #[error("{0} must be this user's socket with mode 0600 (it is owner {1}, mode {2:o})")]
    NotPrivateSocket(PathBuf, u32, u32),
}

/// Checks `socket` for this process's user.
pub fn check(socket: &Path) -> Result<(), PathError> {
    check_for(socket, nix::unistd::Uid::current().as_raw())
}

/// Checks `socket` for the user `uid`.
pub fn check_for(socket: &Path, uid: u32) -> Result<(), PathError> {
    if !socket.is_absolute() {
        return Err(PathError::Relative(socket.to_owned()));
    }
    let parent = socket
        .parent()
        .ok_or_else(|| PathError::Relative(socket.to_owned()))?;
    let mut at = PathBuf::from("/");
    let mut components = parent.components().peekable();
    while let Some(component) = components.next() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => at.push(name),
            // `..` or `.` could walk around a checked directory.
            _ => return Err(PathError::Relative(socket.to_owned())),
        }
        let meta = lstat(&at, socket)?;
        let mode = meta.mode() & 0o7777;
        if meta.file_type().is_symlink() {
            return Err(PathError::Symlink(at));
        }
        if components.peek().is_none() {
            if meta.uid() != uid || !meta.is_dir() || mode & 0o077 != 0 {
                return Err(PathError::NotPrivateDir(at, meta.uid(), mode));
            }
            break;
        }
        let owner_ok = meta.uid() == 0 || meta.uid() == uid;
        let sticky_root = meta.uid() == 0 && mode & 0o1000 != 0;
        if !meta.is_dir() || !owner_ok || (mode & 0o022 != 0 && !sticky_root) {
            return Err(PathError::Replaceable(at, meta.uid(), mode));
        }
    }
    let meta = lstat(socket, socket)?;
    let mode = meta.mode() & 0o7777;
    if meta.file_type().is_symlink() {
        return Err(PathError::Symlink(socket.to_owned()));
    }
    if !meta.file_type().is_socket() || meta.uid() != uid || mode & 0o177 != 0 {
        return Err(PathError::NotPrivateSocket(
            socket.to_owned(),
            meta.uid(),
            mode,
        ));
    }
    Ok(())
}

/// `path`'s own metadata; a component that does not exist is [`PathError::Missing`] naming the
/// whole socket path (`no socket at <path>`: nothing is there, which is not a privacy problem).
fn lstat(path: &Path, socket: &Path) -> Result<std::fs::Metadata, PathError> {
    std::fs::symlink_metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => PathError::Missing(socket.to_owned()),
        _ => PathError::Unreadable(path.to_owned(), e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A private dir with a 0600 socket in it, under a fresh temp dir (0700).
    fn setup() -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        chmod(root.path(), 0o700);
        let dir = root.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o700);
        let socket = dir.join("hooks.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        drop(listener);
        chmod(&socket, 0o600);
        (root, socket)
    }

    fn me() -> u32 {
        nix::unistd::Uid::current().as_raw()
    }

    #[test]
    fn a_private_socket_passes() {
        let (_root, socket) = setup();
        assert_eq!(check(&socket), Ok(()));
    }

    #[test]
    fn a_wide_socket_or_directory_fails() {
        let (_root, socket) = setup();
        chmod(&socket, 0o660);
        assert!(matches!(
            check(&socket),
            Err(PathError::NotPrivateSocket(..))
        ));
        chmod(&socket, 0o600);
        chmod(socket.parent().unwrap(), 0o750);
        assert!(matches!(check(&socket), Err(PathError::NotPrivateDir(..))));
    }

    #[test]
    fn a_group_writable_directory_on_the_way_fails() {
        let (root, socket) = setup();
        chmod(root.path(), 0o770);
        assert!(matches!(check(&socket), Err(PathError::Replaceable(..))));
    }

    #[test]
    fn a_symlink_anywhere_fails() {
        let (root, socket) = setup();
        let link_dir = root.path().join("link");
        std::os::unix::fs::symlink(socket.parent().unwrap(), &link_dir).unwrap();
        assert!(matches!(
            check(&link_dir.join("hooks.sock")),
            Err(PathError::Symlink(_))
        ));
        let link_sock = socket.parent().unwrap().join("other.sock");
        std::os::unix::fs::symlink(&socket, &link_sock).unwrap();
        assert!(matches!(check(&link_sock), Err(PathError::Symlink(_))));
    }

    #[test]
    fn a_regular_file_a_missing_path_and_another_user_fail() {
        let (_root, socket) = setup();
        let file = socket.parent().unwrap().join("plain");
        std::fs::write(&file, b"").unwrap();
        chmod(&file, 0o600);
        assert!(matches!(check(&file), Err(PathError::NotPrivateSocket(..))));
        let missing = socket.parent().unwrap().join("nope.sock");
        assert_eq!(check(&missing), Err(PathError::Missing(missing.clone())));
        assert_eq!(
            check(&missing).unwrap_err().to_string(),
            format!("no socket at {}", missing.display())
        );
        assert!(check_for(&socket, me() + 1).is_err());
        assert!(matches!(
            check(Path::new("relative/hooks.sock")),
            Err(PathError::Relative(_))
        ));
    }
}
