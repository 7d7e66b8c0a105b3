//! What each pane's program is doing, at a glance (SPEC §3.2, issue 33): **waiting** for a person
//! when a card of this machine — a held permission or a prompt recognized on its screen — names the
//! pane; **working** when its screen changed in the last [`WORKING_FOR`]; **idle** otherwise.
//! Each machine decides for its own panes (a member's list arrives decided), so a card and the
//! screen it is about are always read on the same machine.

use std::collections::HashSet;
use std::time::Duration;

use collie_crew::relay::{Activity, PaneInfo};
use time::OffsetDateTime;

use super::App;

/// How recent a screen change keeps a pane "working": an agent's spinner or output changes the
/// screen several times a second, a shell waiting at its prompt never does.
pub const WORKING_FOR: Duration = Duration::from_secs(5);

/// The activity of a pane whose last output was at `last` (RFC 3339), at `now`.
pub fn activity(waiting: bool, last: Option<&str>, now: OffsetDateTime) -> Activity {
    if waiting {
        return Activity::Waiting;
    }
    let recent = last
        .and_then(|t| OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok())
        .is_some_and(|t| now - t <= WORKING_FOR && t - now <= WORKING_FOR);
    if recent {
        Activity::Working
    } else {
        Activity::Idle
    }
}

impl App {
    /// `panes` (this machine's) with their activity. Without the cards (their actor restarting)
    /// no pane is waiting: the list itself never fails for it.
    pub(super) async fn with_activity(&self, mut panes: Vec<PaneInfo>) -> Vec<PaneInfo> {
        let waiting: HashSet<String> = match self.cards().await {
            Ok(list) => list.cards.into_iter().filter_map(|c| c.pane).collect(),
            Err(e) => {
                tracing::debug!(error = %e, "pane activity without the cards");
                HashSet::new()
            }
        };
        let now = OffsetDateTime::now_utc();
        for p in &mut panes {
            p.activity = activity(waiting.contains(&p.pane), p.last_activity.as_deref(), now);
        }
        panes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_beats_working_beats_idle() {
        let now = OffsetDateTime::parse(
            "2026-12-06T12:00:10Z",
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        assert_eq!(activity(true, None, now), Activity::Waiting);
        assert_eq!(
            activity(true, Some("2026-12-06T12:00:09Z"), now),
            Activity::Waiting
        );
        assert_eq!(
            activity(false, Some("2026-12-06T12:00:09Z"), now),
            Activity::Working
        );
        assert_eq!(
            activity(false, Some("2026-12-06T12:00:05Z"), now),
            Activity::Working
        );
        assert_eq!(
            activity(false, Some("2026-12-06T12:00:04Z"), now),
            Activity::Idle
        );
        assert_eq!(activity(false, None, now), Activity::Idle);
        assert_eq!(activity(false, Some("not a time"), now), Activity::Idle);
    }
}
