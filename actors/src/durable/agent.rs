//! One attached durable agent's actor: it reads the agent on [`super::cadence`]'s schedule,
//! keeps the last sanitized and masked state, opens a card for each open question, and sends the
//! writes it is given.
//!
//! **No I/O in a turn.** Every request runs in a task of its own and reports back as a message,
//! so the phone's reads of the last state never wait behind an agent that hangs (a read is bound
//! by 10 s anyway). One read at a time; writes run beside reads.
//!
//! **Who sends what.** The Durable actor (its parent) forwards the phone's reads (`Snapshot`),
//! the phone watching (`Watched`) and writes (`Write`, `AnswerCard`); this actor's own timer sends
//! `Tick`. A write of an answer comes only from the application's card answer — a device's tap.
//!
//! **When it fails.** The parent starts it again: the state is read again at once and every open
//! question is asked by a new card (the old ones were withdrawn when this actor stopped).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::cards::actor::{CardsMsg, Decision};
use crate::cards::card::{CardState, NewCard};
use crate::redact::Masker;
use crate::slot::Slot;

use super::cadence::{Cadence, Health};
use super::questions::{Effect, Questions};
use super::sources::Source;
use super::transport::{Endpoint, Read, TransportError};
use super::view::View;
use super::wire::{Started, Write};

/// How an agent is doing, as the phone and `collie durable list` say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Not read yet.
    New,
    /// The last read worked.
    Up,
    /// The last read failed (unreachable, a bad answer).
    Down,
    /// The agent refused the token.
    Refused,
    /// The socket's path is not private (nothing was sent).
    Private,
    /// Nothing at the socket's path.
    Missing,
}

/// One agent as the phone sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Its attached name.
    pub name: String,
    /// `socket` or `https`.
    pub transport: String,
    /// How it is doing.
    pub status: Status,
    /// What went wrong last (never agent text, never a token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it was last read successfully, Unix ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polled: Option<u64>,
    /// Its state (the last good one, also while it is down).
    #[serde(flatten)]
    pub view: View,
}

/// Why a write failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The agent refused or failed it.
    #[error("{0}")]
    Agent(#[from] TransportError),
    /// The card asks no question of this agent (any more).
    #[error("no such question")]
    NoQuestion,
    /// The agent's source is unusable (its setup error).
    #[error("{0}")]
    Unusable(String),
    /// No agent of that name is attached.
    #[error("no durable agent named {0}")]
    NoAgent(String),
}

/// Messages of an agent's actor.
#[derive(Debug)]
pub enum AgentMsg {
    /// Read if due (the actor's own timer).
    Tick,
    /// A read ended.
    Read(Result<Read, TransportError>),
    /// A write ended well: read again soon.
    Wrote,
    /// A phone watches: read every 2 s for a while.
    Watched,
    /// The last state.
    Snapshot(RpcReplyPort<Snapshot>),
    /// Send a write to the agent (not an answer: see `AnswerCard`).
    Write {
        /// The conversation (ignored by a starter).
        conversation: String,
        /// The write.
        write: Write,
        /// The request's id, sent along.
        request_id: String,
        /// The answer.
        reply: RpcReplyPort<Result<Started, WriteError>>,
    },
    /// Answer the question card `card` asks with option `option`.
    AnswerCard {
        /// Card id.
        card: String,
        /// Option id.
        option: String,
        /// The request's id, sent along.
        request_id: String,
        /// The answer.
        reply: RpcReplyPort<Result<Started, WriteError>>,
    },
}

/// What an agent's actor starts from.
#[derive(Clone)]
pub struct AgentArgs {
    /// The source.
    pub source: Source,
    /// This machine's name (on its cards; a crew join may change it).
    pub machine: crate::machine::MachineName,
    /// The Cards actor.
    pub cards: Slot<CardsMsg>,
    /// Masks what leaves the machine (§6).
    pub masker: Arc<Masker>,
    /// How long a question's card waits.
    pub hold: Duration,
}

/// The actor.
pub struct AgentActor;

/// Its state.
pub struct AgentState {
    args: AgentArgs,
    endpoint: Result<Arc<Endpoint>, String>,
    cadence: Cadence,
    reading: bool,
    etag: Option<String>,
    view: View,
    status: Status,
    error: Option<String>,
    polled: Option<u64>,
    questions: Questions,
    /// The decision receivers of this agent's cards: kept so the Cards actor sees each card held
    /// (a dropped receiver reads as "the asker went away"). A decision is not used: the answer
    /// was sent to the agent before the card was released.
    holders: HashMap<String, oneshot::Receiver<Decision>>,
    /// Questions whose card the Cards actor refused (its cap), warned about once.
    unasked: std::collections::HashSet<super::questions::Key>,
    /// The reads and writes in flight; aborted when the actor stops (a detached agent is asked
    /// nothing more).
    requests: JoinSet<()>,
}

/// Unix milliseconds now.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl AgentState {
    /// Arms the timer for the next due read.
    fn schedule(&self, myself: &ActorRef<AgentMsg>) {
        let now = now_ms();
        let wait = self.cadence.due(now).saturating_sub(now);
        myself.send_after(Duration::from_millis(wait), || AgentMsg::Tick);
    }

    /// Opens and closes cards after a read, and notes each question's card in the view.
    async fn ask(&mut self) {
        let ids: Vec<String> = self.questions.cards().map(str::to_owned).collect();
        let known: HashSet<String> = match self
            .args
            .cards
            .call(|reply| CardsMsg::Known { ids, reply })
            .await
        {
            Ok(known) => known.into_iter().collect(),
            // The Cards actor is restarting: try again after the next read.
            Err(_) => return,
        };
        let effects = self.questions.plan(
            &self.args.source.name,
            &self.args.machine.get(),
            &self.view,
            &|card| known.contains(card),
        );
        for effect in effects {
            match effect {
                Effect::Close { card, state } => {
                    self.holders.remove(&card);
                    let _ = self.args.cards.cast(CardsMsg::Close { id: card, state });
                }
                Effect::Open {
                    key,
                    fingerprint,
                    card,
                } => {
                    let new: NewCard = *card;
                    let hold = self.args.hold;
                    match self
                        .args
                        .cards
                        .call(|reply| CardsMsg::Open { new, hold, reply })
                        .await
                    {
                        Ok(Ok(opened)) => {
                            self.holders.insert(opened.card.id.clone(), opened.decision);
                            self.questions.opened(key, fingerprint, opened.card.id);
                        }
                        Ok(Err(e)) => {
                            // Asked again at every read; said once.
                            if self.unasked.insert(key) {
                                tracing::warn!(
                                    agent = %self.args.source.name,
                                    error = %e,
                                    "a durable question got no card"
                                );
                            }
                        }
                        Err(_) => return,
                    }
                }
            }
        }
        for c in &mut self.view.conversations {
            for q in &mut c.questions {
                q.card = self
                    .questions
                    .card_of(&(c.id.clone(), q.id.clone()))
                    .map(str::to_owned);
            }
        }
    }

    /// Starts a write in a task of its own; the reply goes straight to `reply`.
    fn write(
        &mut self,
        myself: &ActorRef<AgentMsg>,
        conversation: String,
        write: Write,
        request_id: String,
        reply: RpcReplyPort<Result<Started, WriteError>>,
    ) {
        let endpoint = match &self.endpoint {
            Ok(e) => Arc::clone(e),
            Err(e) => {
                let _ = reply.send(Err(WriteError::Unusable(e.clone())));
                return;
            }
        };
        let me = myself.clone();
        self.requests.spawn(async move {
            let result = endpoint.write(&conversation, &write, &request_id).await;
            if result.is_ok() {
                let _ = me.cast(AgentMsg::Wrote);
            }
            let _ = reply.send(result.map_err(WriteError::from));
        });
    }
}

/// Masks every string of a sanitized view that the phone will show (§6); ids are left alone
/// (they are checked, and a masked id would name nothing).
pub fn mask_view(view: &mut View, masker: &Masker) {
    let m = |s: &mut String| {
        if let std::borrow::Cow::Owned(masked) = masker.mask(s) {
            *s = masked;
        }
    };
    for c in &mut view.conversations {
        m(&mut c.title);
        let items = c
            .items
            .iter_mut()
            .chain(c.questions.iter_mut().flat_map(|q| q.items.iter_mut()));
        for item in items {
            m(&mut item.text);
            m(&mut item.url);
            m(&mut item.summary);
            m(&mut item.output);
        }
        for q in &mut c.questions {
            m(&mut q.title);
            m(&mut q.reason);
            for o in &mut q.options {
                m(&mut o.label);
            }
        }
        for a in &mut c.actions {
            m(&mut a.label);
        }
    }
    for s in &mut view.starters {
        m(&mut s.label);
    }
}

/// The status a failed read means.
fn status_of(error: &TransportError) -> Status {
    use crate::private_socket::PathError;
    match error {
        TransportError::Path(PathError::Missing(_)) => Status::Missing,
        TransportError::Path(_) => Status::Private,
        TransportError::TokenRefused => Status::Refused,
        _ => Status::Down,
    }
}

impl Actor for AgentActor {
    type Msg = AgentMsg;
    type State = AgentState;
    type Arguments = AgentArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<AgentMsg>,
        args: AgentArgs,
    ) -> Result<AgentState, ActorProcessingErr> {
        let endpoint = Endpoint::new(&args.source)
            .map(Arc::new)
            .map_err(|e| e.to_string());
        let error = endpoint.as_ref().err().cloned();
        if let Some(e) = &error {
            tracing::warn!(agent = %args.source.name, error = %e, "durable agent unusable");
        }
        let _ = myself.cast(AgentMsg::Tick);
        Ok(AgentState {
            args,
            endpoint,
            cadence: Cadence::default(),
            reading: false,
            etag: None,
            view: View::default(),
            status: if error.is_some() {
                Status::Down
            } else {
                Status::New
            },
            error,
            polled: None,
            questions: Questions::default(),
            holders: HashMap::new(),
            unasked: std::collections::HashSet::new(),
            requests: JoinSet::new(),
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<AgentMsg>,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        // Detached or restarting: its cards stand for nothing now.
        for card in state.questions.cards() {
            let _ = state.args.cards.cast(CardsMsg::Close {
                id: card.to_owned(),
                state: CardState::Withdrawn,
            });
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<AgentMsg>,
        msg: AgentMsg,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        // Forget the requests that ended (their results came as messages or went to a reply).
        while state.requests.try_join_next().is_some() {}
        match msg {
            AgentMsg::Tick => {
                let now = now_ms();
                let Ok(endpoint) = &state.endpoint else {
                    return Ok(());
                };
                if state.reading {
                    // The read's end schedules the next one.
                    return Ok(());
                }
                if state.cadence.due(now) > now {
                    // Early (a phone stopped watching since this tick was armed): wait for the
                    // read that is due now, or the timer dies with this tick.
                    state.schedule(&myself);
                    return Ok(());
                }
                state.reading = true;
                let conditional = state.cadence.start(now);
                let etag = state.etag.clone().filter(|_| conditional);
                let (endpoint, me) = (Arc::clone(endpoint), myself.clone());
                state.requests.spawn(async move {
                    let read = endpoint.read(etag.as_deref()).await;
                    let _ = me.cast(AgentMsg::Read(read));
                });
            }
            AgentMsg::Read(read) => {
                state.reading = false;
                match read {
                    Ok(Read::Unchanged) => {
                        // Nothing moved: no card to open or close. (A card the Cards actor
                        // forgot is asked again at the next full read, within a minute.)
                        state.cadence.ended(Health::Up);
                        (state.status, state.error) = (Status::Up, None);
                        state.polled = Some(now_ms());
                    }
                    Ok(Read::State(wire, etag)) => {
                        state.cadence.ended(Health::Up);
                        (state.status, state.error) = (Status::Up, None);
                        state.polled = Some(now_ms());
                        let (mut view, dropped) = View::from_wire(*wire);
                        for d in dropped {
                            tracing::info!(agent = %state.args.source.name, "{d}");
                        }
                        mask_view(&mut view, &state.args.masker);
                        state.view = view;
                        state.etag = etag;
                        state.ask().await;
                    }
                    Err(e) => {
                        let status = status_of(&e);
                        state.cadence.ended(match status {
                            Status::Refused => Health::Refused,
                            _ => Health::Down,
                        });
                        let error = e.to_string();
                        if state.error.as_deref() != Some(error.as_str()) {
                            tracing::warn!(agent = %state.args.source.name, error = %error, "durable agent read failed");
                        }
                        (state.status, state.error) = (status, Some(error));
                        // The next read must carry the whole state.
                        state.etag = None;
                    }
                }
                state.schedule(&myself);
            }
            AgentMsg::Wrote => {
                state.cadence.soon();
                let _ = myself.cast(AgentMsg::Tick);
            }
            AgentMsg::Watched => {
                state.cadence.watched(now_ms());
                state.schedule(&myself);
            }
            AgentMsg::Snapshot(reply) => {
                let _ = reply.send(Snapshot {
                    name: state.args.source.name.clone(),
                    transport: state.args.source.transport.kind().to_owned(),
                    status: state.status,
                    error: state.error.clone(),
                    polled: state.polled,
                    view: state.view.clone(),
                });
            }
            AgentMsg::Write {
                conversation,
                write,
                request_id,
                reply,
            } => state.write(&myself, conversation, write, request_id, reply),
            AgentMsg::AnswerCard {
                card,
                option,
                request_id,
                reply,
            } => match state.questions.find(&card).cloned() {
                Some((conversation, question)) => {
                    let write = Write::Answer { question, option };
                    state.write(&myself, conversation, write, request_id, reply);
                }
                None => {
                    let _ = reply.send(Err(WriteError::NoQuestion));
                }
            },
        }
        Ok(())
    }
}
