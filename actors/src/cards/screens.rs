//! The Screens actor: watches every pane of this machine for an agent's permission dialog and
//! offers each as a card with `source: "screen"` (SPEC §10.2) — for agents whose hooks do not
//! reach Collie. The rules are the pure [`super::offered`] and [`super::prompt`]; this shell only
//! looks at screens and opens and closes cards.
//!
//! **When it looks.** Every [`LOOK_EVERY`] it lists the panes and subscribes to each new one's
//! change counter. A pane whose screen changed is looked at once the screen has been still for a
//! whole period — an agent draws its dialog in several writes, and a half-drawn dialog must not
//! become a card. An idle machine costs one pane list per period and no screen reads.
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

use super::actor::{CardsMsg, Decision};
use super::card::{CardState, Source};
use super::offered::{screen_card, Offered, ScreenCards, Step};
use super::prompt::recognize;
use crate::machine::MachineName;
use crate::panes::actor::PaneInfo;
use crate::panes::PanesMsg;
use crate::slot::Slot;

/// How often panes are listed and changed screens looked at.
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
    /// Look at the panes (the actor's own timer).
    Look,
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
}

/// Its state.
pub struct ScreensState {
    args: ScreensArgs,
    offered: ScreenCards,
    watched: HashMap<String, Watched>,
    /// Kept so the Cards actor does not take an offered card for one whose asker went away.
    decisions: HashMap<String, oneshot::Receiver<Decision>>,
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
        myself.send_after(LOOK_EVERY, || ScreensMsg::Look);
        Ok(ScreensState {
            args,
            offered: ScreenCards::new(),
            watched: HashMap::new(),
            decisions: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<ScreensMsg>,
        msg: ScreensMsg,
        state: &mut ScreensState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ScreensMsg::Look => {
                state.look().await;
                // Scheduled after the look, so a slow look never queues up more of them.
                myself.send_after(LOOK_EVERY, || ScreensMsg::Look);
            }
            ScreensMsg::Offer { card, reply } => {
                let _ = reply.send(state.offered.card(&card).cloned());
            }
        }
        Ok(())
    }
}

impl ScreensState {
    async fn look(&mut self) {
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
                self.watched.insert(
                    p.pane.clone(),
                    Watched {
                        changes,
                        dirty: true,
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
