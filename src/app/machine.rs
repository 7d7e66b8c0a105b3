//! Which machine a request is for, resolved once: this bridge, or an online member of its crew
//! reached through the relay (SPEC §8).
//!
//! [`App::machine`] reads the relay clients the crew actor publishes (no actor round trip): `local`
//! or this machine's name is [`Machine::Local`]; an online member is [`Machine::Member`]; a member
//! that is offline is `member unreachable`, a name the crew does not have `no such machine`.
//!
//! A [`Member`] is the lead's side of the relay. Everything it returns is masked again by the
//! lead's own masker — screens as one text, exactly as a local screen (SPEC §6; decision 0017) —
//! and named by the member's crew name, which is what the phone addresses it by.

use std::collections::BTreeMap;
use std::sync::Arc;

use collie_actors::crew_link::{MemberRelay, MemberSubscription};
use collie_actors::panes::actor::PaneInfo;
use collie_actors::panes::screen::mask_plain_rows;
use collie_crew::hello::Capability;
use collie_crew::relay::client::On;
use collie_crew::relay::{ColourEvent, ColourSnapshot, EventAttrs};
use collie_crew::relay::{RelayError, RelayKind, RelayOk, StreamEvent};

use super::colours::{checked, RelayedColours};
use super::{wire, App, AppError, Caller, Who};

/// Where a request goes.
pub enum Machine {
    /// This bridge.
    Local,
    /// An online member, through the relay.
    Member(Member),
}

/// An online member and its relay client.
#[derive(Clone)]
pub struct Member {
    name: String,
    client: Arc<MemberRelay>,
}

impl App {
    /// Resolves machine `m` (see the module docs).
    pub fn machine(&self, m: &str) -> Result<Machine, AppError> {
        if m == "local" || self.core.machine.is(m) {
            return Ok(Machine::Local);
        }
        if let Some(client) = self.crew.relays.load().get(m) {
            return Ok(Machine::Member(Member::of(m, client)));
        }
        if self.crew.view.load().members.iter().any(|x| x.name == m) {
            return Err(AppError::MemberUnreachable);
        }
        Err(AppError::NoSuchMachine)
    }

    /// Machine `m` as `caller` reaches it: a lead's device served at a deputy's standby door
    /// reaches the members at the deputy's door (SPEC §13) — it alone: a device paired on the
    /// deputy is the deputy's, and the members serve the door's requests as the lead's devices —
    /// and everyone else what [`App::machine`] resolves.
    pub fn machine_for(&self, caller: &Caller, m: &str) -> Result<Machine, AppError> {
        if !matches!(caller.who(), Who::Deputy { .. }) {
            return self.machine(m);
        }
        if m == "local" || self.core.machine.is(m) {
            return Ok(Machine::Local);
        }
        match self.crew.door_relays.load().get(m) {
            Some(client) => Ok(Machine::Member(Member::of(m, client))),
            None => Err(AppError::MemberUnreachable),
        }
    }

    /// The online members `caller` reaches (see [`App::machine_for`]).
    pub(super) fn members_for(&self, caller: &Caller) -> Vec<Member> {
        if !matches!(caller.who(), Who::Deputy { .. }) {
            return self.online_members();
        }
        let door = self.crew.door_relays.load();
        door.iter()
            .map(|(name, client)| Member::of(name, client))
            .collect()
    }

    /// Every online member.
    pub(super) fn online_members(&self) -> Vec<Member> {
        let online = self.crew.relays.load();
        online
            .iter()
            .map(|(name, client)| Member::of(name, client))
            .collect()
    }

    pub(super) fn mask_in_place(&self, s: &mut String) {
        if let std::borrow::Cow::Owned(masked) = self.core.masker.mask(s) {
            *s = masked;
        }
    }

    /// A member's rows masked as one screen by this bridge's own masker.
    fn mask_screen(&self, rows: &[String], cols: u16) -> Vec<String> {
        if !self.core.masker.is_enabled() {
            return rows.to_vec();
        }
        mask_plain_rows(rows, cols, &|s: &str| self.core.masker.mask(s).into_owned())
    }
}

impl Member {
    /// Member `name`, reached through `client`.
    fn of(name: &str, client: &Arc<MemberRelay>) -> Member {
        Member {
            name: name.to_owned(),
            client: Arc::clone(client),
        }
    }

    /// The member's crew name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends one request to the member.
    pub async fn call(&self, on: On<'_>, kind: RelayKind) -> Result<RelayOk, RelayError> {
        self.client.call(on, kind).await
    }

    /// Sends one request the member works on for up to `works` (a tool's time limit) before it
    /// answers.
    pub async fn call_working(
        &self,
        on: On<'_>,
        kind: RelayKind,
        works: std::time::Duration,
    ) -> Result<RelayOk, RelayError> {
        self.client.call_working(on, kind, works).await
    }

    /// Whether the member declared what `kind` needs (`capability missing` otherwise), checked
    /// before anything is audited for it.
    pub fn allows(&self, kind: &RelayKind) -> Result<(), AppError> {
        Ok(self.client.allows(kind)?)
    }

    /// Whether the member declared `capability` (`capability missing` otherwise): the check of
    /// an operation before it has built its request.
    pub fn has(&self, capability: Capability) -> Result<(), AppError> {
        Ok(self.client.has(capability)?)
    }

    /// A pane the member reported, named and masked by the lead.
    pub(super) fn own_pane(&self, app: &App, mut p: PaneInfo) -> PaneInfo {
        p.machine.clone_from(&self.name);
        app.mask_in_place(&mut p.name);
        p
    }

    /// A pane's snapshot the member sent, masked again as one screen — scrollback and rows as
    /// one sequence, so a line wrapping from the scrollback into row 0 is caught too (masking
    /// keeps widths, so the colour runs stay where they are) — and named by the member's name.
    pub(super) fn own_snapshot(&self, app: &App, relayed: ColourSnapshot) -> ColourSnapshot {
        let ColourSnapshot {
            snapshot: mut snap,
            attrs,
        } = relayed;
        snap.machine.clone_from(&self.name);
        app.mask_in_place(&mut snap.name);
        let split = snap.scrollback.len();
        let mut all = std::mem::take(&mut snap.scrollback);
        all.append(&mut snap.lines);
        let mut masked = app.mask_screen(&all, snap.cols);
        snap.lines = masked.split_off(split.min(masked.len()));
        snap.scrollback = masked;
        let attrs = checked(attrs, snap.lines.len(), snap.cols);
        ColourSnapshot {
            snapshot: snap,
            attrs,
        }
    }

    /// Starts following the member's card changes.
    pub(super) async fn watch_cards(&self, on: On<'_>) -> Result<MemberCards, AppError> {
        Ok(MemberCards {
            name: self.name.clone(),
            feed: self.client.watch_cards(on).await?,
        })
    }

    /// Starts following a pane of the member.
    pub(super) async fn subscribe(
        &self,
        app: &App,
        on: On<'_>,
        pane: String,
    ) -> Result<MemberStream, AppError> {
        let subscription = self.client.subscribe(on, pane, None).await?;
        Ok(MemberStream {
            app: app.clone(),
            subscription,
            raw: Vec::new(),
            sent: None,
            colours: RelayedColours::default(),
        })
    }
}

/// A member's card changes, each named by the member's crew name (not yet masked again: the
/// reader masks what it shows).
pub struct MemberCards {
    name: String,
    feed: MemberSubscription,
}

impl MemberCards {
    /// The next change; `Ok(None)` when the member ended the feed. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<collie_actors::cards::card::Card>, AppError> {
        match self.feed.next_card().await? {
            Some(card) => Ok(Some(wire::cards::card_of(&self.name, card)?)),
            None => Ok(None),
        }
    }
}

/// Most rows the lead keeps of a relayed screen (a member's claimed height is clamped to it).
const MAX_RELAYED_ROWS: u16 = 1000;

/// A member pane's stream of changes, masked again by the lead as a whole screen: the lead keeps
/// the member's rows as sent, applies each change, masks the whole screen, and passes on the rows
/// whose masked text changed — exactly what a local stream does (SPEC §3.2, §6). Colours pass
/// through unchanged (masking keeps widths); a row is passed on when its colours changed too.
pub struct MemberStream {
    app: App,
    subscription: MemberSubscription,
    /// The member's rows as it sent them.
    raw: Vec<String>,
    /// The size and the masked rows last passed on.
    sent: Option<(u16, u16, Vec<String>)>,
    /// The member's style table and each row's runs.
    colours: RelayedColours,
}

impl MemberStream {
    /// The next change; `Ok(None)` when the member ended the stream.
    pub async fn next(&mut self) -> Result<Option<ColourEvent>, RelayError> {
        let Some(ColourEvent { event, attrs }) = self.subscription.next_colour().await? else {
            return Ok(None);
        };
        let height = event.height.min(MAX_RELAYED_ROWS);
        let same_size = self
            .sent
            .as_ref()
            .is_some_and(|(c, h, _)| *c == event.cols && *h == height);
        let full = event.full || !same_size;
        if full {
            self.raw = vec![String::new(); usize::from(height)];
        }
        let carried = event.rows.keys().copied().collect::<Vec<_>>().into_iter();
        let styles = self.colours.take(attrs, carried, full, height, event.cols);
        for (row, line) in event.rows {
            if let Some(slot) = self.raw.get_mut(usize::from(row)) {
                *slot = line;
            }
        }
        let masked = self.app.mask_screen(&self.raw, event.cols);
        let passed: Vec<usize> = (0..masked.len())
            .filter(|&i| {
                full || self.colours.changed(i)
                    || self
                        .sent
                        .as_ref()
                        .is_none_or(|(_, _, prev)| prev.get(i) != masked.get(i))
            })
            .collect();
        let mut rows = BTreeMap::new();
        let mut runs = BTreeMap::new();
        for i in passed {
            let row = u16::try_from(i).unwrap_or(u16::MAX);
            rows.insert(row, masked[i].clone());
            runs.insert(row, self.colours.pass(i));
        }
        self.sent = Some((event.cols, height, masked));
        Ok(Some(ColourEvent {
            event: StreamEvent {
                rows,
                height,
                full,
                ..event
            },
            attrs: EventAttrs { styles, rows: runs },
        }))
    }
}
