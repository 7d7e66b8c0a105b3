//! `GET /api/panes/{m}/{p}/stream`: Server-Sent Events of screen changes (SPEC §3.2, §5), over
//! the application's [`PaneStream`](crate::app::follow::PaneStream).
//!
//! Each event's `id` is the pane's `seq`; a client that reconnects always starts with a full event,
//! so one that missed events (its `Last-Event-ID` is behind) is resynced. When the pane, the link or
//! the caller's right to watch ends, the stream sends a last `closed` event (with the reason, if
//! any) and ends.
//!
//! Nothing queues here: the next change is asked for only once the previous event was taken, so a
//! slow phone gets fewer, larger changes (and, for a member, QUIC's flow control holds the member).

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Extension;
use collie_crew::relay::ColourEvent;
use futures_util::stream::{self, Stream};
use serde::Serialize;
use std::collections::BTreeMap;

use super::colours::{run_json, styles_json, CursorJson, StyleJson};
use crate::app::follow::StreamItem;
use crate::app::{App, AppError, Caller};
use crate::http::extract::ApiPath;

/// The `data` of one change event.
#[derive(Serialize)]
struct ChangeData<'a> {
    seq: u64,
    cursor: CursorJson,
    cols: u16,
    rows_count: u16,
    full: bool,
    rows: BTreeMap<String, &'a str>,
    /// Runs of the carried rows that have any (a carried row left out here has none).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    attrs: BTreeMap<String, Vec<[u16; 3]>>,
    /// Styles new to the stream's table (all of it on a full event).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    styles: BTreeMap<String, StyleJson<'a>>,
}

/// The `data` of the `closed` event.
#[derive(Serialize)]
struct ClosedData {
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// The handler.
pub(super) async fn stream(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, AppError> {
    let source = caller.source();
    let open = app.follow(caller, source, &m, p).await?;
    let events = stream::unfold(open, |mut open| async move {
        let event = match open.next().await? {
            StreamItem::Change(change) => event_of(&change),
            StreamItem::Closed(error) => Event::default()
                .event("closed")
                .data(serde_json::to_string(&ClosedData { error }).unwrap_or_default()),
        };
        Some((Ok(event), open))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// The SSE event of one change.
fn event_of(colour: &ColourEvent) -> Event {
    let change = &colour.event;
    let data = ChangeData {
        seq: change.seq,
        cursor: change.cursor.into(),
        cols: change.cols,
        rows_count: change.height,
        full: change.full,
        rows: change
            .rows
            .iter()
            .map(|(row, line)| (row.to_string(), line.as_str()))
            .collect(),
        attrs: colour
            .attrs
            .rows
            .iter()
            .filter(|(_, runs)| !runs.is_empty())
            .map(|(row, runs)| (row.to_string(), runs.iter().map(run_json).collect()))
            .collect(),
        styles: styles_json(colour.attrs.styles.iter().map(|(n, s)| (*n, s))),
    };
    Event::default()
        .id(change.seq.to_string())
        .data(serde_json::to_string(&data).unwrap_or_default())
}
