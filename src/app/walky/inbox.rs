//! `collie walky inbox`, `who` and `log`, and the phone's walky cards (SPEC §9): what this
//! machine's log holds, and who can be addressed.

use collie_actors::walky::actor::{WalkyMsg, RECORDS_CAP};
use collie_actors::walky::log::{Entry, Kind};
use collie_crew::relay::client::On;
use collie_crew::relay::{RelayKind, RelayOk};
use collie_crew::transport::{Connection, RecvFrames, SendFrames};
use collie_crew::uplink::{Uplink, UplinkAnswer, WhoPane};

use super::header;
use super::sender::{self, PaneEnv};
use super::views::{
    Card, Cards, Inbox, InboxItem, InboxMessage, Log, LogLine, Records, Who, WhoEntry,
};
use crate::app::machine::Member;
use crate::app::App;
use crate::app::AppError;
use collie_actors::crew_link::CrewRole;

fn rfc3339(unix: i64) -> Option<String> {
    collie_actors::rfc3339::format(time::OffsetDateTime::from_unix_timestamp(unix).ok()?)
}

fn inbox_item(e: &Entry) -> InboxItem {
    InboxItem {
        id: e.id.clone(),
        from: e.from.clone(),
        name: e.from_name.clone(),
        to: e.to.clone(),
        received_at: rfc3339(e.at),
    }
}

async fn entries(ctx: &App) -> Result<Vec<Entry>, AppError> {
    ctx.crew
        .walky
        .call(WalkyMsg::Entries)
        .await?
        .map_err(|e| AppError::backend("cannot read the walky log", e))
}

/// Whose inbox: `Some(address prefix "machine/pane")` for a command run inside a pane (an agent
/// reads only what was sent to its own pane), `None` for one run outside any pane (the person at
/// the machine reads every pane's). A pane environment the bridge cannot resolve is an error, not
/// a fallback to everything.
async fn reader(ctx: &App, env: &PaneEnv, peer: Option<u32>) -> Result<Option<String>, AppError> {
    let here = ctx.crew.view.load().name.clone();
    match super::send::own_pane(ctx, env, peer).await {
        Ok((pane, _)) => Ok(Some(format!("{here}/{pane}"))),
        Err(sender::SenderError::NotInPane) => Ok(None),
        Err(e) => Err(AppError::BadRequest(e.to_string())),
    }
}

fn addressed_to(entry: &Entry, reader: Option<&str>) -> bool {
    reader.is_none_or(|r| entry.to.split('#').next() == Some(r))
}

/// The messages delivered to this machine's panes — only the asking pane's when it runs in one —
/// newest last.
pub async fn list(ctx: &App, env: &PaneEnv, peer: Option<u32>) -> Result<Inbox, AppError> {
    let mine = reader(ctx, env, peer).await?;
    let messages = entries(ctx)
        .await?
        .iter()
        .filter(|e| e.kind == Kind::Received && e.body.is_some())
        .filter(|e| addressed_to(e, mine.as_deref()))
        .map(inbox_item)
        .collect();
    Ok(Inbox { messages })
}

/// One delivered message with its body framed as a peer's words (`text`); inside a pane, only a
/// message that pane received.
pub async fn get(
    ctx: &App,
    env: &PaneEnv,
    peer: Option<u32>,
    id: &str,
) -> Result<InboxMessage, AppError> {
    let mine = reader(ctx, env, peer).await?;
    let entry = entries(ctx)
        .await?
        .into_iter()
        .find(|e| {
            e.kind == Kind::Received
                && e.id == id
                && e.body.is_some()
                && addressed_to(e, mine.as_deref())
        })
        .ok_or_else(|| AppError::BadRequest(format!("no message {id} in this machine's inbox")))?;
    let item = inbox_item(&entry);
    let body = entry.body.unwrap_or_default();
    let text = header::framed(
        &item.id,
        &item.from,
        &item.name,
        item.received_at.as_deref().unwrap_or(""),
        &body,
    );
    Ok(InboxMessage { item, body, text })
}

/// This machine's panes and, in a crew, the others' (a member asks the lead).
pub async fn who(ctx: &App) -> Result<Who, AppError> {
    let view = ctx.crew.view.load();
    let (panes, unreachable) = match view.role {
        CrewRole::Lead => crew_panes(ctx).await,
        CrewRole::Member => {
            let mut panes = local_panes(ctx).await?;
            let (others, mut unreachable) = ask_lead_who(ctx).await;
            panes.extend(others.into_iter().filter(|p| p.machine != view.name));
            if let Some(lead) = &view.lead {
                if !lead.online {
                    unreachable.push(lead.name.clone());
                }
            }
            (panes, unreachable)
        }
        CrewRole::Solo => (local_panes(ctx).await?, Vec::new()),
    };
    // Agents first: a pane at a shell prompt refuses messages (its shell would run the header).
    let mut panes = panes;
    panes.sort_by(|a, b| (a.at_shell, &a.machine, &a.pane).cmp(&(b.at_shell, &b.machine, &b.pane)));
    let panes = panes
        .into_iter()
        .map(|p| WhoEntry {
            address: format!("{}/{}#{}", p.machine, p.pane, p.token),
            machine: p.machine,
            pane: p.pane,
            name: p.name,
            at_shell: p.at_shell,
        })
        .collect();
    Ok(Who { panes, unreachable })
}

async fn local_panes(ctx: &App) -> Result<Vec<WhoPane>, AppError> {
    let here = ctx.crew.view.load().name.clone();
    Ok(ctx
        .local_panes()
        .await?
        .into_iter()
        .map(|p| who_pane(&here, p))
        .collect())
}

/// Every addressable pane of the crew as the lead sees it, and the members that did not answer.
pub async fn crew_panes(ctx: &App) -> (Vec<WhoPane>, Vec<String>) {
    let list = match ctx.pane_list(&crate::app::Caller::cli()).await {
        Ok(list) => list,
        Err(e) => {
            tracing::warn!(error = %e, "walky who: cannot list panes");
            return (Vec::new(), Vec::new());
        }
    };
    let panes = list
        .panes
        .into_iter()
        .map(|p| who_pane(&p.machine.clone(), p))
        .collect();
    (panes, list.unreachable)
}

/// A pane as `who` lists it, on `machine` (the crew name, which is what addresses carry).
pub fn who_pane(machine: &str, p: collie_actors::panes::actor::PaneInfo) -> WhoPane {
    WhoPane {
        machine: machine.to_owned(),
        pane: p.pane,
        token: p.token,
        name: p.name,
        at_shell: p.at_shell,
    }
}

async fn ask_lead_who(ctx: &App) -> (Vec<WhoPane>, Vec<String>) {
    let Some(conn) = ctx.crew.lead_link.load_full() else {
        return (Vec::new(), Vec::new());
    };
    let asked = async {
        let (mut send, mut recv) = conn.open_bi().await.ok()?;
        send.send_message(&Uplink::Who).await.ok()?;
        let _ = send.finish();
        match recv.recv_message::<UplinkAnswer>().await.ok()?? {
            UplinkAnswer::Who { panes, unreachable } => Some((panes, unreachable)),
            _ => None,
        }
    };
    tokio::time::timeout(super::RESULT_WITHIN, asked)
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// The whole log (bodies left out; `inbox ID` shows one), and the results the lead keeps for 10
/// minutes.
pub async fn log(ctx: &App) -> Result<Log, AppError> {
    let (kept, dropped) = ctx.crew.walky.call(WalkyMsg::RecordStats).await?;
    let entries = entries(ctx)
        .await?
        .into_iter()
        .map(|e| LogLine {
            id: e.id,
            logged_at: rfc3339(e.at),
            kind: e.kind,
            from: e.from,
            name: e.from_name,
            to: e.to,
            outcome: e.outcome,
        })
        .collect();
    Ok(Log {
        entries,
        records: Records {
            kept,
            dropped,
            cap: RECORDS_CAP,
        },
    })
}

/// The phone's cards: every message in this machine's log, bodies masked (SPEC §6).
pub async fn cards(ctx: &App) -> Result<Cards, AppError> {
    let all = entries(ctx).await?;
    // A result is its own (later) line; fold the latest one into the message's card.
    let results: std::collections::HashMap<String, String> = all
        .iter()
        .filter(|e| e.kind == Kind::Result)
        .filter_map(|e| Some((e.id.clone(), e.outcome.clone()?)))
        .collect();
    let messages = all
        .into_iter()
        .filter(|e| e.kind != Kind::Result)
        .map(|mut e| {
            if e.outcome.is_none() {
                e.outcome = results.get(&e.id).cloned();
            }
            card(ctx, e)
        })
        .collect();
    Ok(Cards { messages })
}

/// The card of message `id` from the log of `machine` (the machine whose pane shows the header),
/// asked through the relay for a member; `no log entry on this machine` when that log does not
/// hold the id (SPEC §9: a header an agent merely printed gets no card).
pub async fn card_at(
    app: &App,
    caller: &crate::app::Caller,
    machine: &str,
    id: &str,
) -> Result<Card, AppError> {
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AppError::BadRequest(
            "invalid message id: 32 hex digits".into(),
        ));
    }
    let card = match app.machine(machine)? {
        crate::app::machine::Machine::Local => card_of(app, id).await?,
        crate::app::machine::Machine::Member(member) => {
            member.walky_card(app, caller.on(), id.to_owned()).await?
        }
    };
    card.ok_or(AppError::NoLogEntry)
}

/// One card, if this machine's log holds the id.
pub async fn card_of(ctx: &App, id: &str) -> Result<Option<Card>, AppError> {
    let all = entries(ctx).await?;
    let outcome = all
        .iter()
        .rev()
        .find(|e| e.id == id && e.kind == Kind::Result)
        .and_then(|e| e.outcome.clone());
    Ok(all
        .into_iter()
        .find(|e| e.id == id && e.kind != Kind::Result)
        .map(|mut e| {
            if e.outcome.is_none() {
                e.outcome = outcome;
            }
            card(ctx, e)
        }))
}

fn card(ctx: &App, e: Entry) -> Card {
    let mask = |s: &str| ctx.core.masker.mask(s).into_owned();
    Card {
        id: e.id,
        kind: e.kind,
        from: e.from,
        name: mask(&e.from_name),
        to: e.to,
        sent_at: rfc3339(e.sent_at),
        logged_at: rfc3339(e.at),
        body: e.body.as_deref().map(mask),
        outcome: e.outcome,
    }
}

impl Member {
    /// The walky card of message `id` from the member's log (`None` if it does not hold the id),
    /// its body and name masked again.
    pub async fn walky_card(
        &self,
        app: &App,
        on: On<'_>,
        id: String,
    ) -> Result<Option<Card>, AppError> {
        match self.call(on, RelayKind::WalkyCard { id }).await? {
            RelayOk::WalkyCard(None) => Ok(None),
            RelayOk::WalkyCard(Some(card)) => {
                let mut card = super::wire::card_of(card);
                // The member masked them already, or did not (its own setting): the lead masks
                // what it shows either way (SPEC §6).
                card.name = app.core.masker.mask(&card.name).into_owned();
                card.body = card.body.map(|b| app.core.masker.mask(&b).into_owned());
                Ok(Some(card))
            }
            _ => Err(AppError::MemberUnreadable),
        }
    }
}
