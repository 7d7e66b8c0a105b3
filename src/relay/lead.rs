//! The lead's relay: a phone request for a member's pane, sent on that member's connection.
//!
//! Every function here takes a [`Member`] from [`target`], which reads the crew actor's published
//! relay clients (no actor round trip). Writes are checked like local ones (so bad input costs no
//! round trip), audited on the lead with the device, the member's name as `machine` and the request
//! id the member's own line will carry, and only then relayed. Everything a member sends back is
//! masked again before the phone sees it (SPEC §6), and its `machine` is set to the member's crew
//! name, which is what the phone addresses it by.

use std::sync::Arc;

use collie_actors::audit::AuditEventKind;
use collie_actors::panes::actor::{PaneInfo, PaneSnapshot};
use collie_actors::panes::screen::mask_plain_rows;
use collie_crew::relay::client::{On, RelayClient, Subscription};
use collie_crew::relay::{RelayError, RelayKind, RelayOk, StreamEvent};
use collie_crew::transport::quic::QuicConnection;
use futures_util::future::join_all;

use crate::app::App;
use crate::app::AppError;
use crate::ops::{self, Actor};

/// The device name a member sees for a request that came with the local secret rather than a
/// paired device.
const LOCAL_CALLER: &str = "local";

/// Where a request for machine `m` goes.
pub enum Target {
    /// This bridge.
    Local,
    /// An online member, through the relay.
    Member(Member),
}

/// An online member and its relay client.
#[derive(Clone)]
pub struct Member {
    /// The member's crew name.
    pub name: String,
    client: Arc<RelayClient<QuicConnection>>,
}

impl Member {
    /// Sends one request to the member (for callers outside this module, e.g. walky).
    pub async fn call(&self, on: On<'_>, kind: RelayKind) -> Result<RelayOk, RelayError> {
        self.client.call(on, kind).await
    }
}

/// Resolves machine `m`: `local` or this machine's name, an online member, or an error —
/// `member unreachable` for a member that is offline, `no such machine` for a name the crew does
/// not have.
pub fn target(ctx: &App, m: &str) -> Result<Target, AppError> {
    if m == "local" || ctx.machine.is(m) {
        return Ok(Target::Local);
    }
    if let Some(client) = ctx.relays.load().get(m) {
        return Ok(Target::Member(Member {
            name: m.to_owned(),
            client: Arc::clone(client),
        }));
    }
    if ctx.crew_view.load().members.iter().any(|x| x.name == m) {
        return Err(AppError::MemberUnreachable);
    }
    Err(AppError::NoSuchMachine)
}

fn on(actor: &Actor) -> On<'_> {
    On {
        device: actor.device.as_deref().unwrap_or(LOCAL_CALLER),
        request_id: &actor.request_id,
    }
}

fn mask(ctx: &App, s: &mut String) {
    if let std::borrow::Cow::Owned(masked) = ctx.masker.mask(s) {
        *s = masked;
    }
}

fn mask_pane(ctx: &App, member: &Member, mut p: PaneInfo) -> PaneInfo {
    p.machine.clone_from(&member.name);
    mask(ctx, &mut p.name);
    p
}

/// The panes of every online member, and the names of the members whose panes are missing
/// (offline, or no answer in time). Members are asked at once, not one after another.
pub async fn panes(ctx: &App, actor: &Actor) -> (Vec<PaneInfo>, Vec<String>) {
    let online: Vec<Member> = ctx
        .relays
        .load()
        .iter()
        .map(|(name, client)| Member {
            name: name.clone(),
            client: Arc::clone(client),
        })
        .collect();
    let answers = join_all(online.iter().map(|member| async move {
        let answer = member.client.call(on(actor), RelayKind::PaneList).await;
        (member, answer)
    }))
    .await;
    let mut panes = Vec::new();
    let mut missing: Vec<String> = ctx
        .crew_view
        .load()
        .members
        .iter()
        .filter(|m| !online.iter().any(|o| o.name == m.name))
        .map(|m| m.name.clone())
        .collect();
    for (member, answer) in answers {
        match answer {
            Ok(RelayOk::PaneList(list)) => {
                panes.extend(list.into_iter().map(|p| mask_pane(ctx, member, p)));
            }
            other => {
                tracing::info!(member = %member.name, answer = ?other.err(), "member panes missing");
                missing.push(member.name.clone());
            }
        }
    }
    missing.sort();
    (panes, missing)
}

/// A member pane's snapshot, masked again.
pub async fn snapshot(
    ctx: &App,
    member: &Member,
    actor: &Actor,
    pane: String,
    scrollback: usize,
) -> Result<PaneSnapshot, AppError> {
    let kind = RelayKind::Snapshot {
        pane,
        scrollback: Some(u32::try_from(scrollback).unwrap_or(u32::MAX)),
    };
    match member.client.call(on(actor), kind).await? {
        RelayOk::Snapshot(mut snap) => {
            snap.machine.clone_from(&member.name);
            mask(ctx, &mut snap.name);
            // The whole screen, scrollback and rows as one text, as a local screen is masked: a
            // member's wrapped token or key block is caught here whatever the member did.
            let split = snap.scrollback.len();
            let mut all = std::mem::take(&mut snap.scrollback);
            all.append(&mut snap.lines);
            let mut masked = mask_screen(ctx, &all, snap.cols);
            snap.lines = masked.split_off(split.min(masked.len()));
            snap.scrollback = masked;
            Ok(snap)
        }
        _ => Err(AppError::MemberUnreadable),
    }
}

/// A member's rows masked as one screen by the lead's own masker (SPEC §6).
fn mask_screen(ctx: &App, rows: &[String], cols: u16) -> Vec<String> {
    let masker = &ctx.masker;
    if !masker.is_enabled() {
        return rows.to_vec();
    }
    mask_plain_rows(rows, cols, &|s: &str| masker.mask(s).into_owned())
}

/// Audits a write on the lead (the member audits it again when it runs it), failing closed.
async fn audit(
    ctx: &App,
    member: &Member,
    rec: collie_actors::audit::AuditRecord,
) -> Result<(), AppError> {
    let mut rec = rec;
    rec.machine.clone_from(&member.name);
    ctx.audit(rec).await
}

/// Types into a member's pane.
pub async fn input(
    ctx: &App,
    member: &Member,
    actor: &Actor,
    pane: String,
    text: String,
    key_names: Vec<String>,
) -> Result<(), AppError> {
    let kind = RelayKind::Input {
        pane: pane.clone(),
        text: (!text.is_empty()).then(|| text.clone()),
        keys: key_names.clone(),
    };
    member.client.allows(&kind)?;
    let keys = ops::validate_input(&text, &key_names)?;
    let rec = ops::input_record(
        actor.record(ctx, AuditEventKind::PaneInput),
        &pane,
        &text,
        &keys,
    );
    audit(ctx, member, rec).await?;
    done(member.client.call(on(actor), kind).await)
}

/// Opens a hosted pane on a member. Like a local create, `pane.create` is written on the lead
/// once the member says the pane exists (and on the member by the member); a refusal at the
/// member's cap is `resource.denied` on both.
pub async fn create(
    ctx: &App,
    member: &Member,
    actor: &Actor,
    name: Option<String>,
    starter: Option<String>,
) -> Result<PaneInfo, AppError> {
    let kind = RelayKind::Create {
        name: name.clone(),
        starter: starter.clone(),
    };
    member.client.allows(&kind)?;
    if let Some(n) = &name {
        ops::validate_pane_name(n)?;
    }
    let info = match member.client.call(on(actor), kind).await {
        Ok(RelayOk::Created(info)) => mask_pane(ctx, member, info),
        Ok(_) => return Err(AppError::MemberUnreadable),
        Err(RelayError::ResourceLimit) => {
            let rec = actor
                .record(ctx, AuditEventKind::ResourceDenied)
                .with_detail("reason", "member pane limit");
            let _ = audit(ctx, member, rec).await;
            return Err(AppError::ResourceLimit);
        }
        Err(e) => return Err(e.into()),
    };
    let rec = ops::create_record(ctx, actor, &info.pane, name, ("starter", starter));
    if let Err(e) = audit(ctx, member, rec).await {
        // Not audited here, so not kept: close it again on the member.
        let kind = RelayKind::Close {
            pane: info.pane.clone(),
        };
        let _ = member.client.call(on(actor), kind).await;
        return Err(e);
    }
    Ok(info)
}

/// Renames a member's pane.
pub async fn rename(
    ctx: &App,
    member: &Member,
    actor: &Actor,
    pane: String,
    name: String,
) -> Result<(), AppError> {
    let kind = RelayKind::Rename {
        pane: pane.clone(),
        name: name.clone(),
    };
    member.client.allows(&kind)?;
    ops::validate_pane_name(&name)?;
    let rec = actor
        .record(ctx, ops::rename_event(&pane))
        .with_detail("pane", pane)
        .with_detail("name", name);
    audit(ctx, member, rec).await?;
    done(member.client.call(on(actor), kind).await)
}

/// Closes a member's pane.
pub async fn close(
    ctx: &App,
    member: &Member,
    actor: &Actor,
    pane: String,
) -> Result<(), AppError> {
    let kind = RelayKind::Close { pane: pane.clone() };
    member.client.allows(&kind)?;
    let rec = actor
        .record(ctx, AuditEventKind::PaneClose)
        .with_detail("pane", pane);
    audit(ctx, member, rec).await?;
    done(member.client.call(on(actor), kind).await)
}

fn done(answer: Result<RelayOk, RelayError>) -> Result<(), AppError> {
    match answer? {
        RelayOk::Done => Ok(()),
        _ => Err(AppError::MemberUnreadable),
    }
}

/// The walky card of message `id` from a member's log (`None` if it does not hold the id), its
/// body and name masked again.
pub async fn walky_card(
    ctx: &App,
    member: &Member,
    actor: &Actor,
    id: String,
) -> Result<Option<serde_json::Value>, AppError> {
    match member
        .client
        .call(on(actor), RelayKind::WalkyCard { id })
        .await?
    {
        RelayOk::WalkyCard(None) => Ok(None),
        RelayOk::WalkyCard(Some(text)) => {
            let mut card: serde_json::Value =
                serde_json::from_str(&text).map_err(|_| AppError::MemberUnreadable)?;
            for field in ["body", "name"] {
                if let Some(s) = card.get(field).and_then(|v| v.as_str()) {
                    let masked = ctx.masker.mask(s).into_owned();
                    card[field] = serde_json::Value::from(masked);
                }
            }
            Ok(Some(card))
        }
        _ => Err(AppError::MemberUnreadable),
    }
}

/// Most rows the lead keeps of a relayed screen (a member's claimed height is clamped to it).
const MAX_RELAYED_ROWS: u16 = 1000;

/// A member pane's stream of changes, masked again by the lead as a whole screen: the lead keeps
/// the member's rows as sent, applies each change, masks the whole screen, and passes on the rows
/// whose masked text changed — exactly what a local stream does (SPEC §3.2, §6).
pub struct MemberStream {
    ctx: App,
    subscription: Subscription<QuicConnection>,
    /// The member's rows as it sent them.
    raw: Vec<String>,
    /// The size and the masked rows last passed on.
    sent: Option<(u16, u16, Vec<String>)>,
}

impl MemberStream {
    /// The next change; `Ok(None)` when the member ended the stream.
    pub async fn next(&mut self) -> Result<Option<StreamEvent>, RelayError> {
        let Some(event) = self.subscription.next().await? else {
            return Ok(None);
        };
        let height = event.height.min(MAX_RELAYED_ROWS);
        let same_size = self
            .sent
            .as_ref()
            .is_some_and(|(c, h, _)| *c == event.cols && *h == height);
        if event.full || !same_size {
            self.raw = vec![String::new(); usize::from(height)];
        }
        for (row, line) in event.rows {
            if let Some(slot) = self.raw.get_mut(usize::from(row)) {
                *slot = line;
            }
        }
        let masked = mask_screen(&self.ctx, &self.raw, event.cols);
        let full = event.full || !same_size;
        let rows = masked
            .iter()
            .enumerate()
            .filter(|(i, line)| {
                full || self
                    .sent
                    .as_ref()
                    .is_none_or(|(_, _, prev)| prev.get(*i) != Some(*line))
            })
            .map(|(i, line)| (u16::try_from(i).unwrap_or(u16::MAX), line.clone()))
            .collect();
        self.sent = Some((event.cols, height, masked));
        Ok(Some(StreamEvent {
            rows,
            height,
            full,
            ..event
        }))
    }
}

/// Starts following a member's pane.
pub async fn subscribe(
    ctx: &App,
    member: Member,
    actor: &Actor,
    pane: String,
) -> Result<MemberStream, AppError> {
    let subscription = member.client.subscribe(on(actor), pane, None).await?;
    Ok(MemberStream {
        ctx: ctx.clone(),
        subscription,
        raw: Vec::new(),
        sent: None,
    })
}
