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

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Extension;
use collie_actors::pairing::Tier;
use collie_crew::relay::StreamEvent;
use futures_util::stream::{self, Stream};
use serde_json::{json, Map, Value};

use crate::app::App;
use crate::app::AppError;
use crate::follow::Follow;
use crate::http::auth::{source_of, Caller};
use crate::http::extract::ApiPath;
use crate::http::streams::{slot_for, Slot, StillAllowed};
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
                    .filter(|e| !matches!(e, AppError::NoSuchPane))
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

/// One open stream: where its changes come from, the check that its caller may still watch, and
/// its place under the stream caps.
struct Open {
    source: Source,
    allowed: StillAllowed,
    _slot: Slot,
}

impl Open {
    /// The next event; a caller that lost its right to watch gets a last `closed` event naming
    /// why, and the stream ends.
    async fn next(&mut self) -> Option<Event> {
        if matches!(self.source, Source::Done) {
            return None;
        }
        tokio::select! {
            biased;
            lost = self.allowed.lost() => {
                self.source = Source::Done;
                let data = json!({ "error": lost.to_string() });
                Some(Event::default().event("closed").data(data.to_string()))
            }
            event = self.source.next() => event,
        }
    }
}

/// The tier the stream route needs (the registry's entry for it).
const STREAM_TIER: Tier = Tier::Read;

/// The handler.
pub(super) async fn stream(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ApiPath((m, p)): ApiPath<(String, String)>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, AppError> {
    let slot = slot_for(&ctx, &caller, source_of(&headers, peer))?;
    let source = match lead::target(&ctx, &m)? {
        Target::Local => Source::Local(Box::new(Follow::start(&ctx, p).await?)),
        Target::Member(member) => {
            let on = super::actor_of(&caller);
            Source::Member(Box::new(lead::subscribe(&ctx, member, &on, p).await?))
        }
    };
    let open = Open {
        source,
        allowed: StillAllowed::new(&ctx, caller, STREAM_TIER),
        _slot: slot,
    };
    let events = stream::unfold(open, |mut open| async move {
        let event = open.next().await?;
        Some((Ok(event), open))
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
