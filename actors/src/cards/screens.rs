//! The Screens actor: watches every pane of this machine for an agent's permission dialog and
//! offers each as a card with `source: "screen"` (SPEC §10.2) — for agents whose hooks do not
//! reach Collie. The rules are the pure [`super::offered`] and [`super::prompt`]; this shell only
//! looks at screens and opens and closes cards.
//!
//! **When it looks.** Only after something changed: it follows the Panes actor's pane-set counter
//! ([`PanesMsg::WatchSet`]: a pane appeared, went or was renamed) and each pane's change counter,
//! through one small forwarding task each that tells the actor, at most once per [`LOOK_EVERY`],
//! that something moved. The actor then looks [`LOOK_EVERY`] later: it lists the panes,
//! subscribes to new ones, and reads a changed screen once it has been still for a whole period —
//! an agent draws its dialog in several writes, and a half-drawn dialog must not become a card.
//! While a screen keeps changing it looks again every period; once every screen is still and
//! read, no timer is left. An idle machine costs nothing: no pane list, no timer, no wake-up.
//!
//! **What it never does.** It never answers: a tap reaches the application's answer operation,
//! which asks this actor which dialog a card stands for ([`ScreensMsg::Offer`]) and has the Panes
//! actor check the lines and type in one turn. A pane whose held permission (a hook's card) is
//! waiting gets no second card for the same question.
//!
//! When it fails: the offered cards' decision receivers drop with it, so the Cards actor ends them
//! as answered elsewhere; the restarted actor offers the dialogs still on screen as new cards.

use std::collections::HashMap;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::{oneshot, watch};
use tokio_util::task::AbortOnDropHandle;

use super::actor::{CardsMsg, Decision};
use super::card::{CardState, Source};
use super::offered::{screen_card, Offered, ScreenCards, Step};
use super::prompt::recognize;
use crate::machine::MachineName;
use crate::panes::actor::PaneInfo;
use crate::panes::PanesMsg;
use crate::slot::Slot;

/// How long a screen must be still before it is read, and the least time between two looks.
pub const LOOK_EVERY: Duration = Duration::from_millis(200);

/// Start-up arguments.
#[derive(Clone)]
pub struct ScreensArgs {
    /// This machine's name.
    pub machine: MachineName,
    /// The Panes actor.
    pub panes: Slot<PanesMsg>,
    /// The Cards actor.
    pub cards: Slot<CardsMsg>,
    /// How long an offered card waits (the `[hooks] hold` of held permissions).
    pub hold: Duration,
}

/// Messages of the Screens actor.
#[derive(Debug)]
pub enum ScreensMsg {
    /// Look at the panes (the actor's own timer, armed by [`ScreensMsg::Changed`]).
    Look,
    /// A pane appeared, went, or its screen changed (sent by the actor's forwarding tasks).
    Changed,
    /// The dialog card `card` stands for, if it is a screen card offered here.
    Offer {
        /// Card id.
        card: String,
        /// The answer.
        reply: RpcReplyPort<Option<Offered>>,
    },
}

/// The actor.
pub struct ScreensActor;

/// A pane being watched.
struct Watched {
    changes: watch::Receiver<u64>,
    /// Changed since it was last looked at.
    dirty: bool,
    /// Tells the actor when `changes` moves; ends with the pane (or with this entry).
    _forward: AbortOnDropHandle<()>,
}

/// Its state.
pub struct ScreensState {
    args: ScreensArgs,
    myself: ActorRef<ScreensMsg>,
    offered: ScreenCards,
    watched: HashMap<String, Watched>,
    /// Forwards the Panes actor's pane-set counter; `None` until it is had (and again once the
    /// Panes actor it came from is gone).
    panes_set: Option<AbortOnDropHandle<()>>,
    /// A [`ScreensMsg::Look`] is on its way.
    look_queued: bool,
    /// Kept so the Cards actor does not take an offered card for one whose asker went away.
    decisions: HashMap<String, oneshot::Receiver<Decision>>,
}

/// Tells `actor` each time `changes` moves (and once more when it closes), then waits a
/// [`LOOK_EVERY`] before it tells again: a pane printing all the time wakes the actor at most
/// once a period, a still one never.
fn forward(
    mut changes: watch::Receiver<u64>,
    actor: ActorRef<ScreensMsg>,
) -> AbortOnDropHandle<()> {
    AbortOnDropHandle::new(tokio::spawn(async move {
        loop {
            let closed = changes.changed().await.is_err();
            if actor.cast(ScreensMsg::Changed).is_err() || closed {
                return;
            }
            tokio::time::sleep(LOOK_EVERY).await;
        }
    }))
}

impl Actor for ScreensActor {
    type Msg = ScreensMsg;
    type State = ScreensState;
    type Arguments = ScreensArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ScreensMsg>,
        args: ScreensArgs,
    ) -> Result<ScreensState, ActorProcessingErr> {
        // The first look follows the panes there are already (and takes the pane-set counter).
        myself.send_after(LOOK_EVERY, || ScreensMsg::Look);
        Ok(ScreensState {
            args,
            myself,
            offered: ScreenCards::new(),
            watched: HashMap::new(),
            panes_set: None,
            look_queued: true,
            decisions: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<ScreensMsg>,
        msg: ScreensMsg,
        state: &mut ScreensState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ScreensMsg::Changed => state.queue_look(),
            ScreensMsg::Look => {
                state.look_queued = false;
                state.look().await;
                // Again next period while a screen still moves (or the Panes actor could not be
                // asked): scheduled after the look, so a slow look never queues up more of them.
                if state.panes_set.is_none() || state.watched.values().any(|w| w.dirty) {
                    state.queue_look();
                }
            }
            ScreensMsg::Offer { card, reply } => {
                let _ = reply.send(state.offered.card(&card).cloned());
            }
        }
        Ok(())
    }
}

impl ScreensState {
    /// A look in one period, unless one is already on its way.
    fn queue_look(&mut self) {
        if !self.look_queued {
            self.look_queued = true;
            self.myself.send_after(LOOK_EVERY, || ScreensMsg::Look);
        }
    }

    async fn look(&mut self) {
        // A pane-set counter whose Panes actor is gone (restarted) is taken again.
        if self.panes_set.as_ref().is_some_and(|f| f.is_finished()) {
            self.panes_set = None;
        }
        if self.panes_set.is_none() {
            if let Ok(set) = self.args.panes.call(PanesMsg::WatchSet).await {
                self.panes_set = Some(forward(set, self.myself.clone()));
            }
        }
        // The Panes actor restarting: try again next period.
        let Ok(panes) = self.args.panes.call(PanesMsg::List).await else {
            return;
        };
        self.follow(&panes).await;
        // A change seen now happened during the last period: look next time, if by then the
        // screen has not changed again (still for a whole period).
        let due: Vec<String> = self
            .watched
            .iter_mut()
            .filter_map(|(pane, w)| {
                if w.changes.has_changed().unwrap_or(false) {
                    w.changes.mark_unchanged();
                    w.dirty = true;
                    return None;
                }
                std::mem::take(&mut w.dirty).then(|| pane.clone())
            })
            .collect();
        for pane in due {
            let name = panes
                .iter()
                .find(|p| p.pane == pane)
                .map(|p| p.name.clone());
            self.look_at(&pane, name).await;
        }
    }

    /// Starts watching new panes and forgets closed ones (withdrawing their cards).
    async fn follow(&mut self, panes: &[PaneInfo]) {
        self.watched
            .retain(|id, _| panes.iter().any(|p| &p.pane == id));
        let gone: Vec<String> = self
            .offered
            .panes()
            .filter(|id| !panes.iter().any(|p| p.pane == *id))
            .map(str::to_owned)
            .collect();
        for pane in gone {
            if let Some(card) = self.offered.pane_gone(&pane) {
                self.close(card, CardState::Withdrawn);
            }
        }
        for p in panes {
            if self.watched.contains_key(&p.pane) {
                continue;
            }
            let pane = p.pane.clone();
            let subscribed = self
                .args
                .panes
                .call(|reply| PanesMsg::Subscribe { pane, reply })
                .await;
            if let Ok(Ok(changes)) = subscribed {
                let forwarding = forward(changes.clone(), self.myself.clone());
                self.watched.insert(
                    p.pane.clone(),
                    Watched {
                        changes,
                        dirty: true,
                        _forward: forwarding,
                    },
                );
            }
        }
    }

    async fn look_at(&mut self, pane: &str, name: Option<String>) {
        let id = pane.to_owned();
        let screen = self
            .args
            .panes
            .call(|reply| PanesMsg::Snapshot {
                pane: id,
                scrollback: 0,
                reply,
            })
            .await;
        let Ok(Ok(screen)) = screen else { return };
        let prompt = recognize(&screen.snapshot.lines);
        match self.offered.look(pane, prompt.as_ref()) {
            Step::Keep => return,
            Step::Gone(card) => {
                self.close(card, CardState::AnsweredElsewhere);
                return;
            }
            Step::Replace(card) => self.close(card, CardState::Withdrawn),
            Step::Open => {}
        }
        let Some(prompt) = prompt else { return };
        if self.hook_holds(pane).await {
            return;
        }
        let new = screen_card(&self.args.machine.get(), pane, name, &prompt);
        let hold = self.args.hold;
        let opened = self
            .args
            .cards
            .call(|reply| CardsMsg::Open { new, hold, reply })
            .await;
        match opened {
            Ok(Ok(opened)) => {
                self.offered.opened(pane, opened.card.id.clone(), &prompt);
                self.decisions.insert(opened.card.id, opened.decision);
            }
            Ok(Err(e)) => tracing::info!(pane, error = %e, "screen prompt not offered"),
            Err(_) => {}
        }
    }

    /// Whether a held permission (a hook's card) waits for this pane: its dialog is the same
    /// question, already on the phone.
    async fn hook_holds(&self, pane: &str) -> bool {
        let Ok(list) = self.args.cards.call(CardsMsg::List).await else {
            return false;
        };
        list.cards
            .iter()
            .any(|c| c.pane.as_deref() == Some(pane) && c.source != Source::Screen)
    }

    fn close(&mut self, card: String, how: CardState) {
        self.decisions.remove(&card);
        let _ = self.args.cards.cast(CardsMsg::Close {
            id: card,
            state: how,
        });
    }
}
