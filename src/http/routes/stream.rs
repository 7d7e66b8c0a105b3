//! `GET /api/panes/{m}/{p}/stream`: Server-Sent Events of screen changes (SPEC §3.2, §5).
//!
//! The first event carries every row; later events carry only rows whose masked text changed (the
//! whole screen is masked before rows are compared). A change is sent at once (leading edge); further
//! changes within [`COALESCE`] are folded into one event sent when the window ends (trailing edge).
//! Each event's `id` is the pane's `seq`. A client that reconnects always starts with a full event,
//! so one that missed events (its `Last-Event-ID` is behind) is resynced.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use collie_actors::panes::actor::PaneSnapshot;
use collie_actors::panes::PanesMsg;
use futures_util::stream::{self, Stream};
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::http::error::ApiError;
use crate::http::Ctx;
use crate::ops;

/// Changes closer together than this are coalesced.
pub(super) const COALESCE: Duration = Duration::from_millis(30);

struct Follow {
    ctx: Ctx,
    pane: String,
    rx: watch::Receiver<u64>,
    prev: Option<(u16, u16, Vec<String>)>,
    last_sent: Option<Instant>,
    done: bool,
}

/// The handler.
pub(super) async fn stream(
    State(ctx): State<Ctx>,
    Path((m, p)): Path<(String, String)>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    ops::check_machine(&ctx, &m)?;
    let pane = p.clone();
    let rx = ctx
        .panes
        .call(|r| PanesMsg::Subscribe { pane, reply: r })
        .await??;
    let follow = Follow {
        ctx,
        pane: p,
        rx,
        prev: None,
        last_sent: None,
        done: false,
    };
    let events = stream::unfold(follow, |mut f| async move {
        if f.done {
            return None;
        }
        if f.prev.is_some() {
            // Wait for a change; end the stream when the pane goes away.
            if f.rx.changed().await.is_err() {
                return None;
            }
            if let Some(last) = f.last_sent {
                let window_end = last + COALESCE;
                if Instant::now() < window_end {
                    tokio::time::sleep_until(window_end).await;
                }
            }
            f.rx.borrow_and_update();
        } else {
            f.rx.borrow_and_update();
        }
        let snap = match ops::snapshot(&f.ctx, f.pane.clone(), 0).await {
            Ok(s) => s,
            Err(_) => {
                f.done = true;
                let ev = Event::default().event("closed").data("{}");
                return Some((Ok(ev), f));
            }
        };
        let ev = diff_event(&mut f.prev, &snap);
        f.last_sent = Some(Instant::now());
        Some((Ok(ev), f))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// Builds the event for `snap`, sending only changed rows unless the size changed or nothing was
/// sent before.
fn diff_event(prev: &mut Option<(u16, u16, Vec<String>)>, snap: &PaneSnapshot) -> Event {
    let mut rows = BTreeMap::new();
    let same_size = prev
        .as_ref()
        .is_some_and(|(c, r, _)| *c == snap.cols && *r == snap.rows);
    for (i, line) in snap.lines.iter().enumerate() {
        let changed = match prev {
            Some((_, _, old)) if same_size => old.get(i) != Some(line),
            _ => true,
        };
        if changed {
            rows.insert(i.to_string(), line.clone());
        }
    }
    let data = json!({
        "seq": snap.seq,
        "cursor": snap.cursor,
        "cols": snap.cols,
        "rows_count": snap.rows,
        "full": !same_size,
        "rows": rows,
    });
    *prev = Some((snap.cols, snap.rows, snap.lines.clone()));
    Event::default()
        .id(snap.seq.to_string())
        .data(data.to_string())
}
