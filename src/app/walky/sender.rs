//! Which pane a `collie walky` command runs in (SPEC §9): `COLLIE_PANE` (set in hosted panes, or by
//! the user), or tmux's `TMUX_PANE` with `TMUX` naming the server's socket, or — in a zellij pane
//! (`ZELLIJ_PANE_ID`), whose numbers only the bridge's zellij backend maps to its ids — the pane
//! whose process the asking command descends from (`send::own_pane`).
//!
//! The CLI passes its environment as it is; the bridge maps it to one of its pane ids, because only
//! the bridge knows its tmux sockets and their order (`t<i>-<n>`: socket `i`, pane `%n`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The pane-related environment of the process that runs `collie walky`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneEnv {
    /// `COLLIE_PANE`: `machine/pane#token`, `pane#token` or a bare pane id.
    pub collie_pane: Option<String>,
    /// `TMUX`: `<socket path>,<server pid>,<session>`.
    pub tmux: Option<String>,
    /// `TMUX_PANE`: `%<n>`.
    pub tmux_pane: Option<String>,
    /// `ZELLIJ_PANE_ID`: set in a zellij pane (an older CLI sends none).
    #[serde(default)]
    pub zellij_pane: Option<String>,
}

impl PaneEnv {
    /// This process's environment.
    pub fn from_process() -> Self {
        let var = |k| std::env::var(k).ok().filter(|v: &String| !v.is_empty());
        Self {
            collie_pane: var("COLLIE_PANE"),
            tmux: var("TMUX"),
            tmux_pane: var("TMUX_PANE"),
            zellij_pane: var("ZELLIJ_PANE_ID"),
        }
    }
}

/// Why the sender's pane is unknown. The message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SenderError {
    /// Neither variable is set.
    #[error("not inside a pane: run collie walky from a tmux, zellij or Collie pane (or set COLLIE_PANE=<pane id>)")]
    NotInPane,
    /// `COLLIE_PANE` names another machine.
    #[error("COLLIE_PANE names machine {0}, not this one")]
    OtherMachine(String),
    /// The variables are malformed.
    #[error("cannot read the pane from the environment: {0}")]
    Malformed(String),
    /// The tmux server is not one this bridge mirrors.
    #[error("this tmux server ({0}) is not one the bridge mirrors; add its socket to COLLIE_TMUX_SOCKETS")]
    UnknownSocket(String),
}

/// The pane id (and the token `COLLIE_PANE` carried, if any) of `env` on machine `machine`, whose
/// mirrored tmux sockets are `sockets` in index order (the default socket first).
pub fn pane_of(
    env: &PaneEnv,
    machine: &str,
    sockets: &[PathBuf],
) -> Result<(String, Option<String>), SenderError> {
    if let Some(value) = &env.collie_pane {
        let (rest, token) = match value.split_once('#') {
            Some((rest, token)) => (rest, Some(token.to_owned())),
            None => (value.as_str(), None),
        };
        let pane = match rest.split_once('/') {
            Some((m, p)) if m == machine || m == "local" => p,
            Some((m, _)) => return Err(SenderError::OtherMachine(m.to_owned())),
            None => rest,
        };
        let valid = !pane.is_empty()
            && pane.len() <= 32
            && pane
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !valid {
            return Err(SenderError::Malformed(format!("COLLIE_PANE={value}")));
        }
        return Ok((pane.to_owned(), token));
    }
    let (Some(tmux), Some(tmux_pane)) = (&env.tmux, &env.tmux_pane) else {
        return Err(SenderError::NotInPane);
    };
    let n = tmux_pane
        .strip_prefix('%')
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| SenderError::Malformed(format!("TMUX_PANE={tmux_pane}")))?;
    // The socket path may itself hold commas; the last two fields are the pid and the session.
    let mut fields = tmux.rsplitn(3, ',');
    let (_session, _pid, socket) = (fields.next(), fields.next(), fields.next());
    let socket = socket.ok_or_else(|| SenderError::Malformed(format!("TMUX={tmux}")))?;
    let index = sockets
        .iter()
        .position(|s| same_file(s, Path::new(socket)))
        .ok_or_else(|| SenderError::UnknownSocket(socket.to_owned()))?;
    Ok((format!("t{index}-{n}"), None))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The default tmux socket of this process: `$TMUX_TMPDIR` (or `/tmp`), `tmux-<uid>/default`.
pub fn default_tmux_socket() -> PathBuf {
    let base = std::env::var_os("TMUX_TMPDIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    base.join(format!("tmux-{}", nix::unistd::getuid()))
        .join("default")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(collie: Option<&str>, tmux: Option<&str>, pane: Option<&str>) -> PaneEnv {
        PaneEnv {
            collie_pane: collie.map(str::to_owned),
            tmux: tmux.map(str::to_owned),
            tmux_pane: pane.map(str::to_owned),
            zellij_pane: None,
        }
    }

    #[test]
    fn collie_pane_wins_and_may_carry_machine_and_token() {
        let sockets = [PathBuf::from("/tmp/tmux-0/default")];
        let e = env(Some("box/p3#ab2d"), Some("/x,1,0"), Some("%1"));
        assert_eq!(
            pane_of(&e, "box", &sockets),
            Ok(("p3".into(), Some("ab2d".into())))
        );
        assert_eq!(
            pane_of(&env(Some("t0-4"), None, None), "box", &sockets),
            Ok(("t0-4".into(), None))
        );
        assert_eq!(
            pane_of(&env(Some("other/p3#ab2d"), None, None), "box", &sockets),
            Err(SenderError::OtherMachine("other".into()))
        );
        assert!(matches!(
            pane_of(&env(Some("p3/../x"), None, None), "box", &sockets),
            Err(SenderError::OtherMachine(_)) | Err(SenderError::Malformed(_))
        ));
    }

    #[test]
    fn tmux_panes_map_to_the_socket_index() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a,with,commas");
        let b = dir.path().join("b");
        std::fs::write(&a, "").unwrap();
        std::fs::write(&b, "").unwrap();
        let sockets = [a.clone(), b.clone()];
        let tmux = format!("{},4242,0", b.display());
        assert_eq!(
            pane_of(&env(None, Some(&tmux), Some("%17")), "box", &sockets),
            Ok(("t1-17".into(), None))
        );
        let tmux = format!("{},4242,3", a.display());
        assert_eq!(
            pane_of(&env(None, Some(&tmux), Some("%0")), "box", &sockets),
            Ok(("t0-0".into(), None))
        );
        assert!(matches!(
            pane_of(
                &env(None, Some("/nowhere,1,0"), Some("%1")),
                "box",
                &sockets
            ),
            Err(SenderError::UnknownSocket(_))
        ));
        assert!(matches!(
            pane_of(&env(None, Some(&tmux), Some("7")), "box", &sockets),
            Err(SenderError::Malformed(_))
        ));
    }

    #[test]
    fn outside_any_pane_is_refused() {
        assert_eq!(
            pane_of(&PaneEnv::default(), "box", &[]),
            Err(SenderError::NotInPane)
        );
        assert_eq!(
            pane_of(&env(None, Some("/x,1,0"), None), "box", &[]),
            Err(SenderError::NotInPane)
        );
    }
}
