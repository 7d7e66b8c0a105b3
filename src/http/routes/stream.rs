//! `GET /api/panes/{m}/{p}/stream`: Server-Sent Events of screen changes (SPEC §3.2, §5).
//!
//! The changes come from [`crate::follow`] for a pane of this machine, or from the member through
//! the relay (the member follows its pane the same way; the lead masks each row again). Each event's
//! `id` is the pane's `seq`; a client that reconnects always starts with a full event, so one that
//! missed events (its `Last-Event-ID` is behind) is resynced. When the pane or the link ends the
//! stream sends a last `closed` event (with the error, if any) and ends.
//!
//! Nothing queues here: the next change is asked for only once the previous event was taken, so a
//! slow phone gets fewer, larger changes (and, for a member, QUIC's flow control holds the member).

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Extension;
use collie_crew::relay::StreamEvent;
use futures_util::stream::{self, Stream};
use serde_json::{json, Map, Value};

use crate::follow::Follow;
use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::http::Ctx;
use crate::relay::lead::{self, Target};

enum Source {
    Local(Box<Follow>),
    Member(Box<lead::MemberStream>),
    Done,
}

impl Source {
    /// The next event to send, or `None` when the stream is over.
    async fn next(&mut self) -> Option<Event> {
        let next = match self {
            Source::Local(follow) => match follow.next().await {
                Some(event) => Ok(event),
                // A closed pane ends the stream plainly; anything else says why, so the phone
                // retries instead of showing the pane as closed.
                None => Err(follow
                    .ended()
                    .filter(|e| !matches!(e, ApiError::NoSuchPane))
                    .map(ToString::to_string)),
            },
            Source::Member(member) => match member.next().await {
                Ok(Some(event)) => Ok(event),
                Ok(None) => Err(None),
                Err(e) => Err(Some(e.to_string())),
            },
            Source::Done => return None,
        };
        match next {
            Ok(event) => Some(event_of(&event)),
            Err(error) => {
                *self = Source::Done;
                let data = error.map_or(json!({}), |e| json!({ "error": e }));
                Some(Event::default().event("closed").data(data.to_string()))
            }
        }
    }
}

/// The handler.
pub(super) async fn stream(
    State(ctx): State<Ctx>,
    Extension(caller): Extension<Caller>,
    Path((m, p)): Path<(String, String)>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let source = match lead::target(&ctx, &m)? {
        Target::Local => Source::Local(Box::new(Follow::start(&ctx, p).await?)),
        Target::Member(member) => {
            let on = super::actor_of(&caller);
            Source::Member(Box::new(lead::subscribe(&ctx, member, &on, p).await?))
        }
    };
    let events = stream::unfold(source, |mut source| async move {
        let event = source.next().await?;
        Some((Ok(event), source))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// The SSE event of one change.
fn event_of(change: &StreamEvent) -> Event {
    let rows: Map<String, Value> = change
        .rows
        .iter()
        .map(|(row, line)| (row.to_string(), Value::from(line.as_str())))
        .collect();
    let data = json!({
        "seq": change.seq,
        "cursor": change.cursor,
        "cols": change.cols,
        "rows_count": change.height,
        "full": change.full,
        "rows": rows,
    });
    Event::default()
        .id(change.seq.to_string())
        .data(data.to_string())
}
