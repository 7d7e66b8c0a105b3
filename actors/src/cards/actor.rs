//! The Cards actor's ractor shell: custody of the [`Cards`] core, of the decision channel of each
//! card someone holds open (a hook waiting on the hook socket), and of the broadcast that tells
//! the phone's streams about every change.
//!
//! Who sends what: the hook socket (`src/hooks/`) `Open`s a card and holds the returned decision
//! receiver; when its hook process goes away it `Close`s the card as answered elsewhere. The
//! application's answer operation — the only path from a tap — sends `Tap`, writes the audit
//! line, then `Release` (or `Unclaim` if the line could not be written). `List` and `Watch` serve
//! the phone and the CLI. The actor's own one-second `Tick` expires cards past their deadline; it
//! runs only while a card waits, so a bridge with no card has no timer.
//!
//! When it fails: the cards live in memory only. A restarted actor starts empty; every hook that
//! held a card sees its decision channel close and prints nothing, so its agent shows its own
//! dialog — a held permission is never decided by a failure. Receipts are lost with it.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, oneshot};
use tokio_util::task::AbortOnDropHandle;

use super::card::{Card, CardOption, CardState, NewCard};
use super::core::{Cards, Receipt, Tap};
use super::error::CardError;

/// How often deadlines are checked while a card waits.
const TICK: Duration = Duration::from_secs(1);
/// Changes a slow watcher may fall behind by before it is told to resync.
const WATCH_BACKLOG: usize = 256;

/// The decision a holder gets: the option a device chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The option chosen.
    pub option: CardOption,
    /// The device's label.
    pub device: String,
}

/// A card just opened, and where its decision will arrive. Dropping the receiver does not close
/// the card; send `Close` for that.
#[derive(Debug)]
pub struct Opened {
    /// The card.
    pub card: Card,
    /// Gets the decision; fails (closed) when the card ends without one.
    pub decision: oneshot::Receiver<Decision>,
}

/// The waiting cards and the last receipts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardList {
    /// Waiting, oldest first.
    pub cards: Vec<Card>,
    /// Newest first.
    pub receipts: Vec<Receipt>,
}

/// Messages of the Cards actor.
#[derive(Debug)]
pub enum CardsMsg {
    /// Keep a new card, waiting `hold` at most.
    Open {
        /// The card.
        new: NewCard,
        /// Its hold deadline from now.
        hold: Duration,
        /// The answer.
        reply: RpcReplyPort<Result<Opened, CardError>>,
    },
    /// A tap (see [`Cards::tap`]).
    Tap {
        /// Card id.
        id: String,
        /// Option id.
        option: String,
        /// The `shown` hash the phone drew.
        shown: String,
        /// The tapping device's identity (a confirm token holds only for the device it was given
        /// to, never another paired later under the same label).
        device: String,
        /// The token of a first tap on "Always allow".
        confirm: Option<String>,
        /// The answer.
        reply: RpcReplyPort<Result<Tap, CardError>>,
    },
    /// The claimed card's audit line could not be written.
    Unclaim(String),
    /// The claimed card's audit line is written: decide it.
    Release {
        /// Card id.
        id: String,
        /// Option id.
        option: CardOption,
        /// The device's label.
        device: String,
        /// Whether the decision reached a holder (`false`: the asker went away meanwhile).
        reply: RpcReplyPort<bool>,
    },
    /// End a card without an answer (`AnsweredElsewhere`, `Expired`, `Withdrawn`).
    Close {
        /// Card id.
        id: String,
        /// How it ended.
        state: CardState,
    },
    /// The waiting cards and receipts.
    List(RpcReplyPort<CardList>),
    /// Which of these card ids are known (waiting, or ended with a receipt): cheaper than `List`
    /// for an asker that only checks its own cards.
    Known {
        /// The ids asked about.
        ids: Vec<String>,
        /// The known ones.
        reply: RpcReplyPort<Vec<String>>,
    },
    /// A receiver of every change from now on (a card opened, answered or closed).
    Watch(RpcReplyPort<broadcast::Receiver<Card>>),
    /// Expire cards past their deadline (the actor's own timer, running while a card waits).
    Tick,
}

/// The actor.
pub struct CardsActor;

/// Its state.
pub struct CardsState {
    cards: Cards,
    holders: HashMap<String, oneshot::Sender<Decision>>,
    changes: broadcast::Sender<Card>,
    /// The timer sending [`CardsMsg::Tick`], while a card waits or a holder is kept.
    tick: Option<AbortOnDropHandle<()>>,
}

/// Unix milliseconds now.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// 128 random bits, hex.
fn random_id() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

impl CardsState {
    /// Starts the deadline timer when a card waits, stops it when none does.
    fn arm_tick(&mut self, myself: &ActorRef<CardsMsg>) {
        let wanted = !self.cards.is_empty() || !self.holders.is_empty();
        match (wanted, self.tick.is_some()) {
            (true, false) => {
                let tick = myself.send_interval(TICK, || CardsMsg::Tick);
                self.tick = Some(AbortOnDropHandle::new(tick));
            }
            (false, true) => self.tick = None,
            _ => {}
        }
    }

    fn changed(&self, card: &Card) {
        // No watcher is fine.
        let _ = self.changes.send(card.clone());
    }

    fn close(&mut self, id: &str, state: CardState) {
        // Dropping the holder's sender tells it the card ended without a decision.
        self.holders.remove(id);
        if let Some(card) = self.cards.close(id, state, now_ms()) {
            self.changed(&card);
        }
    }
}

impl Actor for CardsActor {
    type Msg = CardsMsg;
    type State = CardsState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<CardsMsg>,
        _args: (),
    ) -> Result<CardsState, ActorProcessingErr> {
        Ok(CardsState {
            cards: Cards::new(),
            holders: HashMap::new(),
            changes: broadcast::channel(WATCH_BACKLOG).0,
            tick: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<CardsMsg>,
        msg: CardsMsg,
        state: &mut CardsState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CardsMsg::Open { new, hold, reply } => {
                let hold_ms = u64::try_from(hold.as_millis()).unwrap_or(u64::MAX);
                let opened = state.cards.open(random_id(), new, now_ms(), hold_ms);
                let answer = opened.map(|card| {
                    let (send, decision) = oneshot::channel();
                    state.holders.insert(card.id.clone(), send);
                    state.changed(&card);
                    Opened { card, decision }
                });
                let _ = reply.send(answer);
            }
            CardsMsg::Tap {
                id,
                option,
                shown,
                device,
                confirm,
                reply,
            } => {
                let tap = state.cards.tap(
                    &id,
                    &option,
                    &shown,
                    &device,
                    confirm.as_deref(),
                    random_id,
                    now_ms(),
                );
                let _ = reply.send(tap);
            }
            CardsMsg::Unclaim(id) => state.cards.unclaim(&id),
            CardsMsg::Release {
                id,
                option,
                device,
                reply,
            } => {
                let released = state.cards.release(&id, &option.id, &device, now_ms());
                let holder = state.holders.remove(&id);
                let delivered = match (released, holder) {
                    (Some(card), Some(holder)) => {
                        state.changed(&card);
                        holder.send(Decision { option, device }).is_ok()
                    }
                    (Some(card), None) => {
                        state.changed(&card);
                        false
                    }
                    (None, _) => false,
                };
                let _ = reply.send(delivered);
            }
            CardsMsg::Close { id, state: how } => state.close(&id, how),
            CardsMsg::List(reply) => {
                let _ = reply.send(CardList {
                    cards: state.cards.waiting(),
                    receipts: state.cards.receipts(now_ms()),
                });
            }
            CardsMsg::Known { ids, reply } => {
                let known = ids.into_iter().filter(|id| state.cards.knows(id)).collect();
                let _ = reply.send(known);
            }
            CardsMsg::Watch(reply) => {
                let _ = reply.send(state.changes.subscribe());
            }
            CardsMsg::Tick => {
                for card in state.cards.expire(now_ms()) {
                    state.holders.remove(&card.id);
                    state.changed(&card);
                }
                // A holder whose receiver is gone (its hook ended) without saying so: the
                // question was answered at the machine.
                let gone: Vec<String> = state
                    .holders
                    .iter()
                    .filter(|(_, h)| h.is_closed())
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in gone {
                    state.close(&id, CardState::AnsweredElsewhere);
                }
            }
        }
        state.arm_tick(&myself);
        Ok(())
    }
}
