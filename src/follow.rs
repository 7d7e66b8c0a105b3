//! Following a pane's screen: the changes the phone's stream (SPEC §3.2, §5) is made of, shared by
//! the local SSE route and the relay (a member follows its pane for the lead the same way).
//!
//! The first change carries every row; later ones carry only rows whose masked text changed (the
//! whole screen is masked before rows are compared), or every row again after a resize. A change is
//! produced at once (leading edge); further changes within [`COALESCE`] are folded into one
//! produced when the window ends (trailing edge). A consumer that is slow simply asks later and gets
//! one change covering everything since, so nothing queues up.

use std::collections::BTreeMap;
use std::time::Duration;

use collie_actors::panes::actor::PaneSnapshot;
use collie_actors::panes::PanesMsg;
use collie_crew::relay::StreamEvent;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::app::App;
use crate::app::AppError;
use crate::ops;

/// Changes closer together than this are coalesced.
pub const COALESCE: Duration = Duration::from_millis(30);

/// One followed pane.
pub struct Follow {
    ctx: App,
    pane: String,
    rx: watch::Receiver<u64>,
    prev: Option<(u16, u16, Vec<String>)>,
    last_sent: Option<Instant>,
    ended: Option<AppError>,
}

impl Follow {
    /// Starts following `pane` of this machine.
    pub async fn start(ctx: &App, pane: String) -> Result<Follow, AppError> {
        let wanted = pane.clone();
        let rx = ctx
            .panes
            .call(|r| PanesMsg::Subscribe {
                pane: wanted,
                reply: r,
            })
            .await??;
        Ok(Follow {
            ctx: ctx.clone(),
            pane,
            rx,
            prev: None,
            last_sent: None,
            ended: None,
        })
    }

    /// The next change (`stream` is 0); `None` once following ended — see [`Follow::ended`] for
    /// why. Waits for a change, except for the first call.
    pub async fn next(&mut self) -> Option<StreamEvent> {
        if self.ended.is_some() {
            return None;
        }
        if self.prev.is_some() {
            // The sender goes away when the pane does, and also when the panes actor stops (a
            // restart, the bridge shutting down): the snapshot below tells the two apart.
            let _ = self.rx.changed().await;
            if let Some(last) = self.last_sent {
                let window_end = last + COALESCE;
                if Instant::now() < window_end {
                    tokio::time::sleep_until(window_end).await;
                }
            }
        }
        self.rx.borrow_and_update();
        match ops::snapshot(&self.ctx, self.pane.clone(), 0).await {
            Ok(snap) => {
                if self.rx.has_changed().is_err() {
                    // The pane is there but its change feed is gone: the actor restarted.
                    self.ended = Some(AppError::Restarting);
                }
                self.last_sent = Some(Instant::now());
                Some(diff(&mut self.prev, &snap))
            }
            Err(e) => {
                self.ended = Some(e);
                None
            }
        }
    }

    /// Why following ended: `no such pane` when the pane closed, another error (`restarting, try
    /// again`) when the bridge could not serve it any longer. `None` while it runs.
    pub fn ended(&self) -> Option<&AppError> {
        self.ended.as_ref()
    }
}

/// The change from `prev` to `snap`: only changed rows unless the size changed or nothing was sent
/// before.
fn diff(prev: &mut Option<(u16, u16, Vec<String>)>, snap: &PaneSnapshot) -> StreamEvent {
    let same_size = prev
        .as_ref()
        .is_some_and(|(c, r, _)| *c == snap.cols && *r == snap.rows);
    let mut rows = BTreeMap::new();
    for (i, line) in snap.lines.iter().enumerate() {
        let changed = match prev {
            Some((_, _, old)) if same_size => old.get(i) != Some(line),
            _ => true,
        };
        if changed {
            rows.insert(u16::try_from(i).unwrap_or(u16::MAX), line.clone());
        }
    }
    *prev = Some((snap.cols, snap.rows, snap.lines.clone()));
    StreamEvent {
        stream: 0,
        seq: snap.seq,
        cursor: snap.cursor,
        cols: snap.cols,
        height: snap.rows,
        full: !same_size,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use collie_actors::panes::actor::Cursor;

    fn snap(cols: u16, lines: &[&str], seq: u64) -> PaneSnapshot {
        PaneSnapshot {
            machine: "m".into(),
            pane: "p1".into(),
            token: "abcd".into(),
            name: "n".into(),
            cols,
            rows: u16::try_from(lines.len()).unwrap(),
            cursor: Cursor { x: 0, y: 0 },
            lines: lines.iter().map(|l| (*l).to_owned()).collect(),
            scrollback: Vec::new(),
            seq,
        }
    }

    #[test]
    fn the_first_change_is_full_then_only_changed_rows_then_full_after_a_resize() {
        let mut prev = None;
        let first = diff(&mut prev, &snap(80, &["a", "b"], 1));
        assert!(first.full);
        assert_eq!(first.rows.len(), 2);
        let second = diff(&mut prev, &snap(80, &["a", "c"], 2));
        assert!(!second.full);
        assert_eq!(second.rows, BTreeMap::from([(1, "c".to_owned())]));
        let resized = diff(&mut prev, &snap(100, &["a", "c"], 3));
        assert!(resized.full, "a resize resends every row");
        assert_eq!(resized.rows.len(), 2);
        assert_eq!(resized.seq, 3);
    }
}
