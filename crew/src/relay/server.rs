//! The member's side of the relay: serves one relay stream the lead opened (see [`super::client`]
//! for why there is one stream per request).
//!
//! The stream carries one [`RelayRequest`] from the lead; the member answers with one
//! [`MemberMessage::Response`] and, for a subscription, then sends [`MemberMessage::Event`]s until
//! the pane ends ([`MemberMessage::End`]) or the lead leaves (it finishes or stops the stream, or
//! the connection ends). What a request does is the [`Handler`]'s business: this module knows the
//! framing and the order of frames, the bridge knows panes, masking and auditing.

use std::future::Future;
use std::time::Duration;

use tokio::sync::mpsc;

use super::{Card, ColourEvent, EventAttrs, StreamEnd, StreamEvent};
use super::{MemberMessage, RelayError, RelayKind, RelayOk, RelayRequest, RelayResponse};
use crate::transport::{RecvFrames, SendFrames};

/// How long the lead may take to send the request after opening a stream.
pub const REQUEST_WITHIN: Duration = Duration::from_secs(5);

/// What a member does with relayed requests.
pub trait Handler: Send + Sync + 'static {
    /// A running subscription.
    type Events: Events;

    /// Answers every request but a subscription. `request.device` and `request.request_id` say
    /// whom a write is for, for the member's audit line. The future is dropped when the lead
    /// leaves the stream before the answer (it no longer waits for it), so what it does must
    /// stop cleanly at any await.
    fn handle(
        &self,
        request: &RelayRequest,
    ) -> impl Future<Output = Result<RelayOk, RelayError>> + Send;

    /// Starts following `pane` for a subscription request.
    fn subscribe(
        &self,
        request: &RelayRequest,
        pane: &str,
    ) -> impl Future<Output = Result<Self::Events, RelayError>> + Send;

    /// Starts a feed of card changes for a [`RelayKind::CardsWatch`]; the feed
    /// ends when the receiver is dropped. A member without cards answers `unknown request kind`.
    fn watch_cards(
        &self,
        _request: &RelayRequest,
    ) -> impl Future<Output = Result<mpsc::Receiver<Card>, RelayError>> + Send {
        async { Err(RelayError::UnknownKind) }
    }
}

/// The changes of one followed pane.
pub trait Events: Send {
    /// The next change (already masked); `None` when the pane is gone. `stream` in the event is
    /// filled in by [`serve`]. Must be cancel-safe: [`serve`] drops it when the lead leaves.
    fn next(&mut self) -> impl Future<Output = Option<StreamEvent>> + Send;

    /// The next change with its colours, for a [`RelayKind::SubscribeColour`] stream; like
    /// [`Events::next`] otherwise. A member that keeps no colours sends its changes without.
    fn next_colour(&mut self) -> impl Future<Output = Option<ColourEvent>> + Send {
        async {
            self.next().await.map(|event| ColourEvent {
                event,
                attrs: EventAttrs::default(),
            })
        }
    }

    /// Why the changes ended, once `next` returned `None`: `None` when the pane closed, an error
    /// when the member could not follow it any longer (the lead tells its phone to retry).
    fn ended(&self) -> Option<RelayError> {
        None
    }
}

/// Serves one relay stream to its end. Never fails: a stream that breaks is dropped (the lead
/// answers its phone `member unreachable`); a request that does not decode stops the stream.
pub async fn serve<S: SendFrames, R: RecvFrames, H: Handler>(
    mut send: S,
    mut recv: R,
    handler: &H,
) {
    let request =
        match tokio::time::timeout(REQUEST_WITHIN, recv.recv_message::<RelayRequest>()).await {
            Ok(Ok(Some(request))) => request,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "relay: request refused");
                return;
            }
            Ok(Ok(None)) | Err(_) => return,
        };
    let id = request.id;
    let answer = |result| MemberMessage::Response(RelayResponse { id, result });
    match &request.kind {
        RelayKind::Subscribe { pane, .. } | RelayKind::SubscribeColour { pane, .. } => {
            let colour = matches!(request.kind, RelayKind::SubscribeColour { .. });
            let started = handler.subscribe(&request, pane).await;
            if let Some(events) = opened(started, &answer, &mut send).await {
                follow(id, events, colour, &mut send, &mut recv).await;
            }
        }
        RelayKind::CardsWatch => {
            let started = handler.watch_cards(&request).await;
            if let Some(feed) = opened(started, &answer, &mut send).await {
                follow_cards(id, feed, &mut send, &mut recv).await;
            }
        }
        RelayKind::Unknown => {
            let _ = send
                .send_message(&answer(Err(RelayError::UnknownKind)))
                .await;
        }
        _ => {
            // The lead sends nothing after the request: anything here (its finish, a stop, the
            // connection ending) means it no longer waits — its phone's device lost the right to
            // ask, or the deadline passed. The work stops with it and nothing is answered.
            let result = tokio::select! {
                result = handler.handle(&request) => result,
                _ = recv.recv() => return,
            };
            let _ = send.send_message(&answer(result)).await;
        }
    }
    let _ = send.finish();
}

/// Answers a stream's opening: `Subscribed` and the stream when it `started`, else the error (and
/// the stream finished). `None` when there is nothing to follow.
async fn opened<T, S: SendFrames>(
    started: Result<T, RelayError>,
    answer: &impl Fn(Result<RelayOk, RelayError>) -> MemberMessage,
    send: &mut S,
) -> Option<T> {
    match started {
        Ok(stream) => send
            .send_message(&answer(Ok(RelayOk::Subscribed)))
            .await
            .is_ok()
            .then_some(stream),
        Err(e) => {
            let _ = send.send_message(&answer(Err(e))).await;
            let _ = send.finish();
            None
        }
    }
}

/// Sends card changes until the feed ends or the lead leaves.
async fn follow_cards<S: SendFrames, R: RecvFrames>(
    stream: u64,
    mut feed: mpsc::Receiver<Card>,
    send: &mut S,
    recv: &mut R,
) {
    loop {
        tokio::select! {
            change = feed.recv() => {
                let message = match change {
                    Some(card) => MemberMessage::CardChange(card),
                    None => MemberMessage::End(StreamEnd { stream, error: None }),
                };
                let end = matches!(message, MemberMessage::End(_));
                if send.send_message(&message).await.is_err() || end {
                    return;
                }
            }
            _ = recv.recv() => return,
        }
    }
}

/// Sends the subscription's changes until the pane ends or the lead leaves: with their colours
/// when the lead asked for them (`colour`), as plain events otherwise.
async fn follow<S: SendFrames, R: RecvFrames, E: Events>(
    stream: u64,
    mut events: E,
    colour: bool,
    send: &mut S,
    recv: &mut R,
) {
    loop {
        let next = async {
            if colour {
                events.next_colour().await.map(|mut change| {
                    change.event.stream = stream;
                    MemberMessage::ColourEvent(change)
                })
            } else {
                events.next().await.map(|mut event| {
                    event.stream = stream;
                    MemberMessage::Event(event)
                })
            }
        };
        let message = tokio::select! {
            message = next => message,
            // The lead sends nothing after the request: anything here (its finish, a stop, the
            // connection ending) means it left.
            _ = recv.recv() => return,
        };
        let message = message.unwrap_or_else(|| {
            MemberMessage::End(StreamEnd {
                stream,
                error: events.ended(),
            })
        });
        let end = matches!(message, MemberMessage::End(_));
        if send.send_message(&message).await.is_err() || end {
            return;
        }
    }
}
