//! Cards (SPEC §10.1): listing and watching them, the one operation that answers one — a paired
//! device's tap — and holding a permission open for a process in a pane (§10.2).
//!
//! **Only a tap answers.** [`App::answer_card`] is the only caller of the Cards actor's claim and
//! release, and it refuses every caller but a paired device of tier `full` — also when an adapter
//! other than the phone API were to reach it (the router's tier gate is the first check, this is
//! the second). The hook socket reaches [`App::hold_permission`], which opens a card and waits;
//! nothing there can decide one.
//!
//! **Audited before it happens.** A tap claims the card, the `card.answered` line is written, and
//! only then is the decision released to the waiting hook; a line that cannot be written unclaims
//! the card (503 `audit unavailable`) and the hook keeps waiting.

use std::future::Future;

use collie_actors::audit::AuditEventKind;
use collie_actors::cards::actor::{CardList, CardsMsg, Decision};
use collie_actors::cards::card::{Card, CardState, Item, NewCard};
use collie_actors::cards::core::Tap;
use collie_actors::cards::error::CardError;
use collie_actors::pairing::Tier;
use collie_actors::panes::PanesMsg;
use collie_crew::relay::PaneInfo;
use tokio::sync::{broadcast, oneshot};

use super::{App, AppError, Caller, Who};

impl From<CardError> for AppError {
    fn from(e: CardError) -> Self {
        match e {
            CardError::Changed => AppError::CardChanged,
            CardError::Closed => AppError::CardClosed,
            CardError::TooMany => AppError::ResourceLimit,
            other => AppError::BadRequest(other.to_string()),
        }
    }
}

/// What a tap got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// A first tap on "Always allow": answer again with this token within 60 s.
    Confirm(String),
    /// Answered; `delivered` says whether the asker was still waiting for it.
    Done {
        /// Whether the decision reached the waiting asker.
        delivered: bool,
    },
}

/// A card held open for a process: the hook waits on it.
pub struct Held {
    app: App,
    card: Card,
    decision: oneshot::Receiver<Decision>,
}

impl Held {
    /// The card as opened.
    pub fn card(&self) -> &Card {
        &self.card
    }

    /// Waits for a tap. `None` when the card ended without one (its deadline, the bridge
    /// stopping) or when `gone` finished first — the asker went away, so the question was
    /// answered at the machine and the card says so at once.
    pub async fn decision(self, gone: impl Future<Output = ()>) -> Option<Decision> {
        let Held {
            app,
            card,
            decision,
        } = self;
        tokio::select! {
            decided = decision => decided.ok(),
            () = gone => {
                let _ = app.cards.cast(CardsMsg::Close {
                    id: card.id,
                    state: CardState::AnsweredElsewhere,
                });
                None
            }
        }
    }
}

impl App {
    /// The waiting cards and the last receipts.
    pub async fn cards(&self) -> Result<CardList, AppError> {
        Ok(self.cards.call(CardsMsg::List).await?)
    }

    /// Every card change from now on.
    pub async fn watch_cards(&self) -> Result<broadcast::Receiver<Card>, AppError> {
        Ok(self.cards.call(CardsMsg::Watch).await?)
    }

    /// A device's tap: `option` on card `id` as drawn (`shown`), with the token of a first tap on
    /// "Always allow" when this is the second.
    pub async fn answer_card(
        &self,
        caller: &Caller,
        id: String,
        option: String,
        shown: String,
        confirm: Option<String>,
    ) -> Result<Answered, AppError> {
        let device = match caller.who() {
            Who::Device {
                label,
                tier: Tier::Full,
                ..
            } => label.clone(),
            Who::Device { .. } => return Err(AppError::InsufficientTier),
            _ => return Err(AppError::NotPaired),
        };
        caller.still_allowed(self, Tier::Full)?;
        let tap = self
            .cards
            .call(|reply| CardsMsg::Tap {
                id: id.clone(),
                option,
                shown,
                confirm,
                reply,
            })
            .await??;
        let (card, option) = match tap {
            Tap::Confirm(token) => return Ok(Answered::Confirm(token)),
            Tap::Claimed { card, option } => (card, option),
        };
        let rec = caller
            .record(self, AuditEventKind::CardAnswered)
            .with_detail("card", card.id.clone())
            .with_detail("source", String::from(card.source.clone()))
            .with_detail("option", option.id.clone());
        let rec = match &card.pane {
            Some(pane) => rec.with_detail("pane", pane.clone()),
            None => rec,
        };
        if let Err(e) = self.audit(rec).await {
            let _ = self.cards.cast(CardsMsg::Unclaim(id));
            return Err(e);
        }
        let delivered = self
            .cards
            .call(|reply| CardsMsg::Release {
                id,
                option,
                device,
                reply,
            })
            .await?;
        Ok(Answered::Done { delivered })
    }

    /// Opens a card for the process `pid` (a hook connected to the hook socket) if it runs in a
    /// pane of this machine; `make` builds the card from the pane. `Ok(None)`: no pane holds the
    /// process, so the bridge does not answer for it (SPEC §10.2). The card's text is masked
    /// (§6) before anyone sees it.
    pub async fn hold_permission(
        &self,
        pid: u32,
        make: impl FnOnce(&str, &PaneInfo) -> NewCard,
    ) -> Result<Option<Held>, AppError> {
        let chain = collie_actors::panes::foreground::ancestry(pid);
        let Some(pane) = self
            .panes
            .call(|reply| PanesMsg::Holding { chain, reply })
            .await?
        else {
            return Ok(None);
        };
        let mut new = make(&self.machine_name(), &pane);
        self.mask_card(&mut new);
        let opened = self
            .cards
            .call(|reply| CardsMsg::Open {
                new,
                hold: self.hold,
                reply,
            })
            .await??;
        Ok(Some(Held {
            app: self.clone(),
            card: opened.card,
            decision: opened.decision,
        }))
    }

    /// Masks secret shapes in what a card shows (never the command word, a path or a host: the
    /// masker only replaces secret shapes).
    fn mask_card(&self, new: &mut NewCard) {
        self.mask_in_place(&mut new.title);
        for item in &mut new.items {
            match item {
                Item::Text { text } | Item::Code { text } | Item::Diff { text } => {
                    self.mask_in_place(text);
                }
                Item::Link { url } => self.mask_in_place(url),
            }
        }
    }
}
