//! A new window in a chosen tmux session (SPEC §12, issue 14; decision 0042): the sessions a
//! machine's bridge mirrors, listed for the New page, and a starter or the user's shell opened as
//! a new window of one of them — for this machine or a member alike.
//!
//! A session is named `t<socket index>:<session name>`: the socket index of the pane ids
//! (`t<i>-<n>`), so two tmux servers' sessions of one name stay apart. Only a session the bridge
//! mirrors is a target (its own discovered servers, never a socket the request names), and the
//! backend targets it by tmux's id, never by the name (tmux matches a name by prefix and pattern).
//!
//! A window is the user's tmux server's, not a hosted pane: the hosted-pane cap does not apply
//! (the window's mirror counts under the buffer cap like every tmux pane's). Otherwise a window is
//! a create like any other — one operation, [`super::new_pane::NewPane`] with a session: `pane.create` is written
//! once the window exists and names the session; if it cannot be written the window is killed
//! again and the create refused; a cap's refusal is `resource.denied`, on a member's window too.

use collie_actors::audit::AuditRecord;
use collie_actors::panes::tmux::TmuxSessionInfo;
use collie_actors::panes::PanesMsg;
use collie_actors::tools::ToolError;
use collie_crew::relay::{RelayKind, RelayOk, TmuxSession};
use serde::{Deserialize, Serialize};

use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::{App, AppError, Caller};

/// The longest session string a request may carry (`t<index>:` and a name), in bytes.
pub const MAX_SESSION_LEN: usize = 256;

/// The most sessions a listing carries (a member's answer is cut there too).
pub const MAX_SESSIONS: usize = 500;

/// `GET /api/sessions/{machine}`; `collie panes sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionList {
    /// The machine they are on.
    pub machine: String,
    /// Its mirrored sessions, by tmux server then session id.
    pub sessions: Vec<TmuxSession>,
}

/// Splits a session string `t<i>:<name>` into the socket index and the name, refusing anything
/// else before it is used: at most [`MAX_SESSION_LEN`] bytes, the index in its one spelling (as
/// pane ids), a name of 1 or more characters without control characters, `:` or `.` (tmux's own
/// separators, which no session name holds).
pub fn parse_session(session: &str) -> Result<(usize, &str), AppError> {
    let bad = || {
        AppError::BadRequest(
            "invalid session: t<server>:<name> as GET /api/sessions lists it, at most 256 bytes"
                .into(),
        )
    };
    if session.len() > MAX_SESSION_LEN {
        return Err(bad());
    }
    let (index, name) = session
        .strip_prefix('t')
        .and_then(|s| s.split_once(':'))
        .ok_or_else(bad)?;
    let canonical = index == "0" || (!index.starts_with('0') && !index.is_empty());
    let index: usize = match index.parse() {
        Ok(i) if canonical && index.bytes().all(|b| b.is_ascii_digit()) => i,
        _ => return Err(bad()),
    };
    if name.is_empty() || name.chars().any(|c| c.is_control() || c == ':' || c == '.') {
        return Err(bad());
    }
    Ok((index, name))
}

/// The session string of a mirrored session.
fn session_string(s: &TmuxSessionInfo) -> String {
    format!("t{}:{}", s.socket, s.name)
}

/// An unknown session: 404 `no such session` (the words of a tool session's, so a member's
/// refusal crosses the relay in the tools' fixed strings and comes back the same).
pub(super) fn no_such_session() -> AppError {
    AppError::Tool(ToolError::NoSuchSession)
}

/// The tmux sessions a machine mirrors, where a new window can open (tier `full`, as the
/// starters: only a device that may open one sees them).
#[derive(Debug, Clone, Copy)]
pub struct ListSessions;

impl Operation for ListSessions {
    type Output = SessionList;

    fn op(&self) -> Op {
        Op::SessionList
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Sessions)
    }

    /// Cut and masked again here.
    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<SessionList, AppError> {
        let RelayOk::Sessions(list) = ok else {
            return Err(AppError::MemberUnreadable);
        };
        let sessions = list
            .into_iter()
            .take(MAX_SESSIONS)
            .map(|s| TmuxSession {
                session: app.core.masker.mask_string(s.session),
                name: app.core.masker.mask_string(s.name),
                socket: s.socket,
            })
            .collect();
        Ok(SessionList {
            machine: member.name().to_owned(),
            sessions,
        })
    }

    fn reply(out: SessionList) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Sessions(out.sessions))
    }

    fn record(&self, _: &App, _: &Caller, _: &SessionList) -> Option<AuditRecord> {
        None
    }

    async fn local(self, app: &App, _: &Caller) -> Result<SessionList, AppError> {
        Ok(SessionList {
            machine: app.machine_name(),
            sessions: app.local_sessions().await?,
        })
    }
}

impl App {
    /// This machine's mirrored tmux sessions, names masked (a name that the masker changes
    /// cannot be opened in by that name; the phone shows what it may see).
    pub async fn local_sessions(&self) -> Result<Vec<TmuxSession>, AppError> {
        let sessions = self.panes.actor.call(PanesMsg::Sessions).await?;
        Ok(sessions
            .iter()
            .take(MAX_SESSIONS)
            .map(|s| TmuxSession {
                session: self.core.masker.mask_string(session_string(s)),
                name: self.core.masker.mask_string(s.name.clone()),
                socket: u32::try_from(s.socket).unwrap_or(u32::MAX),
            })
            .collect())
    }

    /// Refuses a session this machine does not mirror (`no such session`).
    pub(super) async fn known_session(&self, socket: usize, name: &str) -> Result<(), AppError> {
        let known = self.panes.actor.call(PanesMsg::Sessions).await?;
        if known.iter().any(|s| s.socket == socket && s.name == name) {
            Ok(())
        } else {
            Err(no_such_session())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_strings_are_checked_before_use() {
        assert_eq!(parse_session("t0:main").ok(), Some((0, "main")));
        assert_eq!(parse_session("t12:my work").ok(), Some((12, "my work")));
        for bad in [
            "", "main", "t:main", "t01:main", "t0:", "t0:a:b", "t0:a.b", "t0:a\nb", "t-1:main",
            "t+1:main", "x0:main",
        ] {
            assert!(parse_session(bad).is_err(), "{bad:?}");
        }
        let long = format!("t0:{}", "a".repeat(MAX_SESSION_LEN));
        assert!(parse_session(&long).is_err());
    }
}
