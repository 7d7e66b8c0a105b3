//! Cards (SPEC §10.1): listing and watching them, the one operation that answers one — a paired
//! device's tap — and holding a permission open for a process in a pane (§10.2).
//!
//! **Only a tap answers.** [`CardTap`] is the only caller of the Cards actor's claim and
//! release, and it refuses every caller but a paired device of tier `full` — also when an adapter
//! other than the phone API were to reach it (the router's tier gate is the first check, this is
//! the second). The hook socket reaches [`App::hold_permission`], which opens a card and waits;
//! nothing there can decide one.
//!
//! **Audited before it happens.** A tap claims the card, the `card.answered` line is written, and
//! only then is the decision released to the waiting hook; a line that cannot be written unclaims
//! the card (503 `audit unavailable`) and the hook keeps waiting.

use std::collections::HashSet;
use std::future::Future;

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::cards::actor::{CardList, CardsMsg, Decision};
use collie_actors::cards::card::{shown_hash, Card, CardState, Item, NewCard, Source};
use collie_actors::cards::core::Tap;
use collie_actors::cards::error::CardError;
use collie_actors::cards::offered::Offered;
use collie_actors::cards::present;
use collie_actors::cards::screens::ScreensMsg;
use collie_actors::pairing::Tier;
use collie_actors::panes::actor::PaneError;
use collie_actors::panes::PanesMsg;
use collie_crew::relay::{CardAnswered, PaneInfo, RelayKind, RelayOk};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinSet;

use super::follow::{Slot, StillAllowed};
use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::{wire, App, AppError, Caller, Who};

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

/// The audit event of a tap on a card from `source`: `durable.answer` for a durable agent's
/// question (SPEC §10.3 audits every durable write as `durable.*`), else `card.answered`.
fn answer_event(source: &Source) -> AuditEventKind {
    match source {
        Source::Durable(_) => AuditEventKind::DurableAnswer,
        _ => AuditEventKind::CardAnswered,
    }
}

/// Member card changes the lead's stream may hold before a member's feed waits.
const MEMBER_CHANGES: usize = 64;
/// How often a lead's card stream looks for members it does not follow yet.
const MEMBERS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a hook's process may take to show up in a pane the mirror has not seen yet.
const PLACE_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);
/// How often the pane is looked for again meanwhile.
const PLACE_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

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

impl Answered {
    /// What the tap did, as the relay tells a lead.
    pub fn relayed(self) -> collie_crew::relay::CardAnswered {
        match self {
            Answered::Confirm(token) => collie_crew::relay::CardAnswered::Confirm(token),
            Answered::Done { delivered } => collie_crew::relay::CardAnswered::Done { delivered },
        }
    }
}

/// A device's tap: `option` on card `id` as drawn (`shown`), with the token of a first tap on
/// "Always allow" when this is the second ([`App::run`]; see the module docs).
#[derive(Debug, Clone)]
pub struct CardTap {
    /// The card.
    pub id: String,
    /// The option chosen.
    pub option: String,
    /// The `shown` hash of the card the phone drew.
    pub shown: String,
    /// The token of a first tap on "Always allow", for the second.
    pub confirm: Option<String>,
    /// A member's card's source, learned before the tap is relayed (for the lead's line).
    source: Option<Source>,
}

impl CardTap {
    /// A tap on card `id`.
    pub fn new(id: String, option: String, shown: String, confirm: Option<String>) -> CardTap {
        CardTap {
            id,
            option,
            shown,
            confirm,
            source: None,
        }
    }
}

impl Operation for CardTap {
    type Output = Answered;

    fn op(&self) -> Op {
        Op::CardAnswer
    }

    /// The tap's right holds until it is decided (SPEC §3.2): lost mid-way, nothing more of it
    /// happens and the device gets why.
    fn holds(&self) -> Option<Tier> {
        Some(Tier::Full)
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::CardAnswer {
            id: self.id.clone(),
            option: self.option.clone(),
            shown: self.shown.clone(),
            confirm: self.confirm.clone(),
        })
    }

    /// The phone drew the member's card as this machine shows it (masked again): the tap is
    /// checked against that, and relayed with the member's own hash — the member claims, audits
    /// and releases it as for a tap of its own.
    async fn prepare(
        &mut self,
        app: &App,
        caller: &Caller,
        member: &Member,
    ) -> Result<Option<RelayKind>, AppError> {
        let RelayOk::Cards(list) = member.call(caller.on(), RelayKind::Cards).await? else {
            return Err(AppError::MemberUnreadable);
        };
        let list = wire::cards::list_of(member.name(), list)?;
        let Some(original) = list.cards.into_iter().find(|c| c.id == self.id) else {
            return Err(AppError::CardClosed);
        };
        let mut here = original.clone();
        app.mask_shown(&mut here);
        if here.shown != self.shown {
            return Err(AppError::CardChanged);
        }
        if !here.options.iter().any(|o| o.id == self.option) {
            return Err(AppError::BadRequest(format!(
                "unknown option: {}",
                self.option
            )));
        }
        self.source = Some(here.source);
        Ok(Some(RelayKind::CardAnswer {
            id: self.id.clone(),
            option: self.option.clone(),
            shown: original.shown,
            confirm: self.confirm.clone(),
        }))
    }

    fn answer(&self, _: &App, _: &Member, ok: RelayOk) -> Result<Answered, AppError> {
        match ok {
            RelayOk::CardAnswer(CardAnswered::Confirm(token)) => Ok(Answered::Confirm(token)),
            RelayOk::CardAnswer(CardAnswered::Done { delivered }) => {
                Ok(Answered::Done { delivered })
            }
            _ => Err(AppError::MemberUnreadable),
        }
    }

    fn reply(out: Answered) -> Result<RelayOk, AppError> {
        Ok(RelayOk::CardAnswer(out.relayed()))
    }

    /// The lead's line of a member's card it decided; a first tap on "Always allow" decides
    /// nothing. (This machine's own line, naming the pane, is written once the card is claimed.)
    fn record(&self, app: &App, caller: &Caller, out: &Answered) -> Option<AuditRecord> {
        let source = self.source.as_ref()?;
        if matches!(out, Answered::Confirm(_)) {
            return None;
        }
        Some(
            caller
                .record(app, answer_event(source))
                .with_detail("card", self.id.clone())
                .with_detail("source", String::from(source.clone()))
                .with_detail("option", self.option.clone()),
        )
    }

    async fn local(self, app: &App, caller: &Caller) -> Result<Answered, AppError> {
        let device = match caller.who() {
            Who::Device { label, .. } | Who::Deputy { label, .. } => label.clone(),
            // The lead relaying its full device's tap (it checked the device before relaying).
            Who::Relay { device, .. } => device.clone(),
            _ => return Err(AppError::NotPaired),
        };
        let CardTap {
            id,
            option,
            shown,
            confirm,
            ..
        } = self;
        let tap = app
            .agents
            .cards
            .call(|reply| CardsMsg::Tap {
                id: id.clone(),
                option,
                shown,
                // A confirm token is the device's, by identity: never another device's that
                // was paired under the same label (SPEC §10.1).
                device: caller.owner(),
                confirm,
                reply,
            })
            .await??;
        let (card, option) = match tap {
            Tap::Confirm(token) => return Ok(Answered::Confirm(token)),
            Tap::Claimed { card, option } => (card, option),
        };
        // Until it is released, a tap that ends here (its device's right lost, the lead gone)
        // gives the card back instead of leaving it claimed.
        let mut claim = Claim {
            app,
            id: Some(id.clone()),
        };
        // A screen prompt: the dialog must still be there before the tap is audited (and again,
        // in the same turn as the typing, after).
        let screen = match card.source {
            Source::Screen => Some(app.screen_still(&card.id, None).await?),
            _ => None,
        };
        let rec = caller
            .record(app, answer_event(&card.source))
            .with_detail("card", card.id.clone())
            .with_detail("source", String::from(card.source.clone()))
            .with_detail("option", option.id.clone());
        let rec = match &card.pane {
            Some(pane) => rec.with_detail("pane", pane.clone()),
            None => rec,
        };
        app.audit(rec).await?;
        if let Some(offer) = screen {
            app.screen_still(&card.id, Some((offer, option.id.clone())))
                .await?;
            // Typed: that was its delivery, whatever happens next.
            claim.id = None;
        }
        // A durable question: the agent is told before the card is released; an agent that
        // refuses or cannot be reached leaves the card waiting and the tap gets the reason.
        if let Source::Durable(agent) = &card.source {
            let told = app
                .durable_answer(
                    caller,
                    agent,
                    &card.id,
                    card.conversation.as_deref(),
                    &option.id,
                )
                .await;
            told?;
        }
        claim.id = None;
        let delivered = app
            .agents
            .cards
            .call(|reply| CardsMsg::Release {
                id,
                option,
                device,
                reply,
            })
            .await?;
        // A screen card has no one waiting on it: the typed keys were its delivery; a durable
        // agent was told above.
        Ok(Answered::Done {
            delivered: delivered || matches!(card.source, Source::Screen | Source::Durable(_)),
        })
    }
}

/// A machine's waiting cards and last receipts; a member's named by the member and shown as this
/// machine shows its own (escaped, masked, hashed again).
#[derive(Debug, Clone, Copy)]
pub struct ListCards;

impl Operation for ListCards {
    type Output = CardList;

    fn op(&self) -> Op {
        Op::Cards
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Cards)
    }

    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<CardList, AppError> {
        let RelayOk::Cards(list) = ok else {
            return Err(AppError::MemberUnreadable);
        };
        let mut list = wire::cards::list_of(member.name(), list)?;
        for card in &mut list.cards {
            app.mask_shown(card);
        }
        for receipt in &mut list.receipts {
            app.mask_in_place(&mut receipt.title);
        }
        Ok(list)
    }

    fn reply(out: CardList) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Cards(wire::cards::list(out)))
    }

    fn record(&self, _: &App, _: &Caller, _: &CardList) -> Option<AuditRecord> {
        None
    }

    async fn local(self, app: &App, _: &Caller) -> Result<CardList, AppError> {
        app.cards().await
    }
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
                let _ = app.agents.cards.cast(CardsMsg::Close {
                    id: card.id,
                    state: CardState::AnsweredElsewhere,
                });
                None
            }
        }
    }
}

/// What a phone's card stream yields.
#[derive(Debug, Clone)]
pub enum CardItem {
    /// Every waiting card and the receipts: first, and again whenever the stream fell behind.
    All(CardList),
    /// One card changed (opened, answered or closed; its `state` says which).
    Change(Box<Card>),
    /// The stream is over, and why (the caller lost its right to watch, the bridge restarting).
    Closed(String),
}

/// A phone's stream of card changes: under the same caps and authorization rules as a pane
/// stream (SPEC §10.1, §3.2). On a lead it carries the changes of each online member that declared
/// `cards`, named by member and masked again — also of a member that comes online (or back) while
/// the stream is open: every `MEMBERS_EVERY` the stream looks for members it does not follow yet,
/// and after it starts following one it sends everything again, so that member's waiting cards show.
pub struct CardStream {
    app: App,
    caller: Caller,
    changes: broadcast::Receiver<Card>,
    members: mpsc::Receiver<Card>,
    member_tx: mpsc::Sender<Card>,
    first: Option<CardList>,
    allowed: StillAllowed,
    done: bool,
    _slot: Slot,
    /// The members followed now, by name.
    fed: HashSet<String>,
    /// One task per member feed, yielding the member's name when its feed ends; aborted with the
    /// stream.
    feeds: JoinSet<String>,
    recheck: tokio::time::Interval,
}

impl CardStream {
    /// The next item; `None` after [`CardItem::Closed`].
    pub async fn next(&mut self) -> Option<CardItem> {
        if self.done {
            return None;
        }
        if let Some(all) = self.first.take() {
            return Some(CardItem::All(all));
        }
        let item = loop {
            tokio::select! {
                biased;
                lost = self.allowed.lost() => break CardItem::Closed(lost.to_string()),
                Some(card) = self.members.recv() => break CardItem::Change(Box::new(card)),
                change = self.changes.recv() => break match change {
                    Ok(card) => CardItem::Change(Box::new(card)),
                    // Fell behind: start again from everything, so nothing is missed.
                    Err(broadcast::error::RecvError::Lagged(_)) => self.everything().await,
                    // The cards actor stopped (a restart, the bridge stopping).
                    Err(broadcast::error::RecvError::Closed) => {
                        CardItem::Closed(AppError::Restarting.to_string())
                    }
                },
                Some(ended) = self.feeds.join_next() => {
                    if let Ok(name) = ended {
                        self.fed.remove(&name);
                    }
                }
                _ = self.recheck.tick() => {
                    if self.follow_members().await {
                        break self.everything().await;
                    }
                }
            }
        };
        self.done = matches!(item, CardItem::Closed(_));
        Some(item)
    }

    async fn everything(&self) -> CardItem {
        match self.app.crew_cards(&self.caller).await {
            Ok(all) => CardItem::All(all),
            Err(e) => CardItem::Closed(e.to_string()),
        }
    }

    /// Starts a feed for each online member that declared `cards` and is not followed yet;
    /// whether any started.
    async fn follow_members(&mut self) -> bool {
        let mut started = false;
        for member in self.app.online_members() {
            if self.fed.contains(member.name()) || member.allows(&RelayKind::CardsWatch).is_err() {
                continue;
            }
            let Ok(mut feed) = member.watch_cards(self.caller.on()).await else {
                continue;
            };
            self.fed.insert(member.name().to_owned());
            started = true;
            let (app, merged) = (self.app.clone(), self.member_tx.clone());
            self.feeds.spawn(async move {
                // A change that does not read ends the feed (`member response unreadable`).
                while let Ok(Some(mut card)) = feed.next().await {
                    app.mask_shown(&mut card);
                    if merged.send(card).await.is_err() {
                        break;
                    }
                }
                member.name().to_owned()
            });
        }
        started
    }
}

impl App {
    /// Opens a phone's stream of card changes for `caller`, who asks from `source`.
    pub async fn card_stream(
        &self,
        caller: Caller,
        source: String,
    ) -> Result<CardStream, AppError> {
        let slot = self.stream_slot(&caller, source)?;
        // Watch first, then list: a change between the two shows up twice, never not at all.
        let changes = self.watch_cards().await?;
        let (member_tx, members) = mpsc::channel(MEMBER_CHANGES);
        let mut recheck = tokio::time::interval(MEMBERS_EVERY);
        recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        recheck.reset();
        let mut stream = CardStream {
            app: self.clone(),
            caller: caller.clone(),
            changes,
            members,
            member_tx,
            first: None,
            allowed: StillAllowed::new(self, caller.clone(), Tier::Read),
            done: false,
            _slot: slot,
            fed: HashSet::new(),
            feeds: JoinSet::new(),
            recheck,
        };
        stream.follow_members().await;
        stream.first = Some(self.crew_cards(&caller).await?);
        Ok(stream)
    }

    /// The waiting cards and the last receipts of this machine.
    pub async fn cards(&self) -> Result<CardList, AppError> {
        Ok(self.agents.cards.call(CardsMsg::List).await?)
    }

    /// Every waiting card of the crew: this machine's, and each online member's that declared
    /// `cards` (asked at once; a member that does not answer is left out), named by member and
    /// masked again by this machine (§6). A member card's `shown` is the hash of what this machine
    /// shows, which is what the phone sends back.
    pub async fn crew_cards(&self, caller: &Caller) -> Result<CardList, AppError> {
        let gathered = self.run_everywhere(caller, ListCards).await?;
        let mut all = gathered.here;
        for (member, answer) in gathered.members {
            match answer {
                Ok(list) => {
                    all.cards.extend(list.cards);
                    all.receipts.extend(list.receipts);
                }
                Err(e) => tracing::info!(%member, error = %e, "member cards missing"),
            }
        }
        all.cards
            .sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
        all.receipts.sort_by_key(|r| std::cmp::Reverse(r.at));
        Ok(all)
    }

    /// Escapes and masks a member's card again, as a card of this machine is (SPEC §10.1: only
    /// what a card masks, never the secret-word rule), and hashes what is now shown.
    fn mask_shown(&self, card: &mut Card) {
        present::reshow(card);
        let mut masked = self.mask_card_text(&mut card.title);
        for item in &mut card.items {
            masked |= self.mask_item(item);
        }
        card.masked |= masked;
        card.shown = shown_hash(card);
    }

    /// Every card change from now on.
    pub async fn watch_cards(&self) -> Result<broadcast::Receiver<Card>, AppError> {
        Ok(self.agents.cards.call(CardsMsg::Watch).await?)
    }

    /// Checks that the dialog screen card `id` stands for is still on its pane's screen, and
    /// with `typing` types the option's number in the same turn of the Panes actor. When it is
    /// not (or the pane is gone) the card is withdrawn and the tap gets 409 `The screen changed
    /// before that could be sent`: nothing was typed.
    async fn screen_still(
        &self,
        id: &str,
        typing: Option<(Offered, String)>,
    ) -> Result<Offered, AppError> {
        let (offer, keys) = match typing {
            Some((offer, keys)) => (Some(offer), Some(keys)),
            None => {
                let card = id.to_owned();
                let offer = self
                    .agents
                    .screens
                    .call(|reply| ScreensMsg::Offer { card, reply })
                    .await?;
                (offer, None)
            }
        };
        // Not offered here any more (the watcher restarted): the dialog is not known to be there.
        let Some(offer) = offer else {
            return Err(self.screen_gone(id));
        };
        let (pane, rows, hash) = (offer.pane.clone(), offer.rows, offer.hash.clone());
        let checked = self
            .panes
            .actor
            .call(|reply| PanesMsg::Prompt {
                pane,
                rows,
                hash,
                keys,
                reply,
            })
            .await?;
        match checked {
            Ok(()) => Ok(offer),
            Err(PaneError::ScreenChanged | PaneError::NoSuchPane) => Err(self.screen_gone(id)),
            Err(e) => {
                let _ = self.agents.cards.cast(CardsMsg::Unclaim(id.to_owned()));
                Err(e.into())
            }
        }
    }

    /// Withdraws screen card `id`, whose dialog left the screen; the tap's error.
    fn screen_gone(&self, id: &str) -> AppError {
        let _ = self.agents.cards.cast(CardsMsg::Close {
            id: id.to_owned(),
            state: CardState::Withdrawn,
        });
        AppError::ScreenChanged
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
        let Some(pane) = self.pane_holding(chain).await? else {
            return Ok(None);
        };
        let mut new = make(&self.machine_name(), &pane);
        self.mask_card(&mut new);
        let opened = self
            .agents
            .cards
            .call(|reply| CardsMsg::Open {
                new,
                hold: self.agents.hold,
                reply,
            })
            .await??;
        Ok(Some(Held {
            app: self.clone(),
            card: opened.card,
            decision: opened.decision,
        }))
    }

    /// The pane whose process is on `chain`. A tmux pane is mirrored a moment after tmux made it
    /// (its control client reports the new window, then the pane list is read again), so a hook
    /// started at once in a new window may ask before its pane is known: the question is asked
    /// again for up to [`PLACE_WITHIN`] before the answer is no.
    pub(crate) async fn pane_holding(&self, chain: Vec<u32>) -> Result<Option<PaneInfo>, AppError> {
        let deadline = tokio::time::Instant::now() + PLACE_WITHIN;
        loop {
            let chain = chain.clone();
            let holding = self
                .panes
                .actor
                .call(|reply| PanesMsg::Holding { chain, reply })
                .await?;
            if holding.is_some() || tokio::time::Instant::now() >= deadline {
                return Ok(holding);
            }
            tokio::time::sleep(PLACE_EVERY).await;
        }
    }

    /// Masks secret shapes in what a card shows, as a card masks (SPEC §10.1): vendor-prefixed
    /// tokens, PEM blocks and URL passwords — never the command word, a path, a host or a
    /// `KEY=value` whose value may be a command substitution that runs. The card says when it
    /// masked. This runs on the whole text, before the cards core cuts it to the card's limits,
    /// so a secret the cut would split is still found.
    fn mask_card(&self, new: &mut NewCard) {
        let mut masked = self.mask_card_text(&mut new.title);
        for item in &mut new.items {
            masked |= self.mask_item(item);
        }
        new.masked |= masked;
    }

    /// Masks one of a card's items; whether that changed it.
    fn mask_item(&self, item: &mut Item) -> bool {
        match item {
            Item::Text { text } | Item::Code { text } | Item::Diff { text } => {
                self.mask_card_text(text)
            }
            Item::Link { url } => self.mask_card_text(url),
        }
    }

    /// Masks `text` as a card masks it; whether that changed it.
    fn mask_card_text(&self, text: &mut String) -> bool {
        match self.core.masker.mask_card(text) {
            std::borrow::Cow::Owned(masked) => {
                *text = masked;
                true
            }
            std::borrow::Cow::Borrowed(_) => false,
        }
    }
}

/// A card this tap claimed and has not yet released or delivered: given back ([`CardsMsg::Unclaim`])
/// when the tap ends without deciding it — an error, or its future dropped because the device
/// lost its right or the lead left — so it waits for another tap instead of staying claimed.
struct Claim<'a> {
    app: &'a App,
    /// The card, until the tap decided it.
    id: Option<String>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let _ = self.app.agents.cards.cast(CardsMsg::Unclaim(id));
        }
    }
}
