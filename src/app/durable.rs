//! Durable agents (SPEC §10.3) for the phone: the crew's agents and their conversations, and the
//! phone's writes to them — send, abort, action, rename, close, reopen, starter — and the answer
//! to a durable question, which comes only through its card ([`CardTap`](super::cards::CardTap)).
//!
//! **Each write is one operation**, for a local agent or a member's alike: a paired device of
//! tier `full` (checked here as well as by the router), the write's fields checked, the
//! `durable.<verb>` line written *before* the agent is asked (a line that cannot be written stops
//! the write: 503 `audit unavailable`), the agent asked, and a receipt kept without the typed
//! text. Through a lead the lead audits and relays; the member audits, asks and keeps the receipt
//! with the same request id.
//!
//! **What an agent says is refused in its own words, never its own text**: 409 with a fixed
//! reason for `caller-refused`, an unknown id or "already answered"; 502 `durable agent
//! unreachable` for everything else (the detail goes to the bridge's log).

pub mod wire;

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::durable::actor::DurableMsg;
use collie_actors::durable::agent::{Snapshot, WriteError};
use collie_actors::durable::receipts::Receipt;
use collie_actors::durable::sanitize;
use collie_actors::durable::transport::TransportError;
use collie_actors::durable::view::View;
use collie_actors::durable::wire::{Write, MAX_RENAME, MAX_SEND};
use collie_crew::relay::{RelayKind, RelayOk};
use serde::{Deserialize, Serialize};

use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::{App, AppError, Caller, Who};

/// One agent as the phone sees it: where it is attached, and its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableAgent {
    /// The machine it is attached to.
    pub machine: String,
    /// Its state.
    #[serde(flatten)]
    pub agent: Snapshot,
}

/// `GET /api/durable`: every agent of the crew and the receipts of the phone's writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableList {
    /// The agents, by machine, then name.
    pub agents: Vec<DurableAgent>,
    /// Newest first.
    pub receipts: Vec<Receipt>,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableDone {
    /// Always true (a refusal is an error).
    pub ok: bool,
    /// The conversation a starter made, when the agent named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
}

impl From<WriteError> for AppError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Agent(TransportError::CallerRefused) => {
                AppError::DurableRefused("the durable agent refused it (caller-refused)")
            }
            WriteError::Agent(TransportError::NotFound) => AppError::DurableRefused(
                "the durable agent has no such conversation, question or starter",
            ),
            WriteError::Agent(TransportError::Conflict) => AppError::DurableRefused(
                "the durable agent refused it as answered already or closed",
            ),
            WriteError::NoQuestion => AppError::CardClosed,
            WriteError::NoAgent(_) => AppError::NoSuchAgent,
            other => {
                tracing::warn!(error = %other, "durable write failed");
                AppError::DurableUnreachable
            }
        }
    }
}

/// The audit event of a write.
fn event(write: &Write) -> AuditEventKind {
    match write {
        Write::Answer { .. } => AuditEventKind::DurableAnswer,
        Write::Send { .. } => AuditEventKind::DurableSend,
        Write::Abort => AuditEventKind::DurableAbort,
        Write::Action { .. } => AuditEventKind::DurableAction,
        Write::Rename { .. } => AuditEventKind::DurableRename,
        Write::Close => AuditEventKind::DurableClose,
        Write::Reopen => AuditEventKind::DurableReopen,
        Write::Starter { .. } => AuditEventKind::DurableStarter,
    }
}

/// The id a write chooses (an option, an action, a starter): kept in receipts and audit lines.
fn choice(write: &Write) -> Option<String> {
    match write {
        Write::Answer { option, .. } => Some(option.clone()),
        Write::Action { action } => Some(action.clone()),
        Write::Starter { starter } => Some(starter.clone()),
        _ => None,
    }
}

/// Checks a phone's write: the ids as the sanitizer accepts them, the texts within bounds. An
/// answer is refused here: a question is answered through its card (its `shown` hash, the second
/// tap of "Always allow").
fn check(agent: &str, conversation: &str, write: &Write) -> Result<(), AppError> {
    let bad = |m: &str| Err(AppError::BadRequest(m.to_owned()));
    if collie_actors::durable::sources::check_name(agent).is_err() {
        return Err(AppError::NoSuchAgent);
    }
    let conversation_needed = !matches!(write, Write::Starter { .. });
    if conversation_needed && !sanitize::id(conversation) {
        return bad("bad conversation id");
    }
    match write {
        Write::Answer { .. } => bad("answer a durable question with its card"),
        Write::Send { text } if text.trim().is_empty() || text.len() > MAX_SEND => {
            bad("text must be 1 to 65536 bytes and not only spaces")
        }
        Write::Rename { title }
            if title.trim().is_empty()
                || title.len() > MAX_RENAME
                || title.chars().any(char::is_control) =>
        {
            bad("title must be 1 to 256 bytes without control characters")
        }
        Write::Action { action } if !sanitize::id(action) => bad("bad action id"),
        Write::Starter { starter } if !sanitize::id(starter) => bad("bad starter id"),
        _ => Ok(()),
    }
}

/// The label of the device a write is for, for its receipt: the device's own, or the one the
/// lead relays for (the registry lets no one else write: [`Op::DurableWrite`]).
fn writer(caller: &Caller) -> Result<String, AppError> {
    match caller.who() {
        Who::Device { label, .. } | Who::Deputy { label, .. } => Ok(label.clone()),
        Who::Relay { device, .. } => Ok(device.clone()),
        _ => Err(AppError::NotPaired),
    }
}

/// A machine's durable agents and the receipts of the phone's writes; a member's named by the
/// member and its views masked again here.
#[derive(Debug, Clone, Copy)]
pub struct ListAgents;

impl Operation for ListAgents {
    type Output = DurableList;

    fn op(&self) -> Op {
        Op::DurableRead
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Durable)
    }

    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<DurableList, AppError> {
        let RelayOk::Durable(list) = ok else {
            return Err(AppError::MemberUnreadable);
        };
        let mut list = wire::list_of(member.name(), list);
        for agent in &mut list.agents {
            app.mask_view(&mut agent.agent.view);
        }
        Ok(list)
    }

    fn reply(out: DurableList) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Durable(wire::list(out)))
    }

    fn record(&self, _: &App, _: &Caller, _: &DurableList) -> Option<AuditRecord> {
        None
    }

    async fn local(self, app: &App, _: &Caller) -> Result<DurableList, AppError> {
        app.local_durable().await
    }
}

/// A device's write to one of a machine's agents ([`App::run`]; see the module docs).
#[derive(Debug, Clone)]
pub struct AgentWrite {
    /// The agent's name.
    pub agent: String,
    /// The conversation (`-` for a starter, which makes one).
    pub conversation: String,
    /// The write.
    pub write: Write,
}

impl Operation for AgentWrite {
    type Output = DurableDone;
    fn op(&self) -> Op {
        Op::DurableWrite
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        check(&self.agent, &self.conversation, &self.write)
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::DurableWrite {
            agent: self.agent.clone(),
            conversation: self.conversation.clone(),
            write: wire::write(self.write.clone()),
        })
    }

    fn answer(&self, _: &App, _: &Member, ok: RelayOk) -> Result<DurableDone, AppError> {
        match ok {
            RelayOk::DurableWrite(conversation) => Ok(DurableDone {
                ok: true,
                conversation,
            }),
            _ => Err(AppError::MemberUnreadable),
        }
    }

    fn reply(out: DurableDone) -> Result<RelayOk, AppError> {
        Ok(RelayOk::DurableWrite(out.conversation))
    }

    /// The `durable.<verb>` line: the agent, the conversation, the choice; typed text under
    /// `text` (the audit's content mode decides what of it is kept).
    fn record(&self, app: &App, caller: &Caller, _: &DurableDone) -> Option<AuditRecord> {
        let write = &self.write;
        let rec = caller
            .record(app, event(write))
            .with_detail("agent", self.agent.clone())
            .with_detail("conversation", self.conversation.clone());
        let rec = match choice(write) {
            Some(c) => rec.with_detail("choice", c),
            None => rec,
        };
        Some(match write {
            Write::Send { text } => rec.with_detail("text", text.clone()),
            Write::Rename { title } => rec.with_detail("text", title.clone()),
            _ => rec,
        })
    }

    /// Audited before the agent is asked; a receipt kept without the typed text.
    async fn local(self, app: &App, caller: &Caller) -> Result<DurableDone, AppError> {
        let device = writer(caller)?;
        let unknown = DurableDone {
            ok: true,
            conversation: None,
        };
        if let Some(rec) = self.record(app, caller, &unknown) {
            app.audit(rec).await?;
        }
        let AgentWrite {
            agent,
            conversation,
            write,
        } = self;
        let request_id = caller.request_id().to_owned();
        let started = app
            .agents
            .durable
            .call(|reply| DurableMsg::Write {
                agent: agent.clone(),
                conversation: conversation.clone(),
                write: write.clone(),
                request_id: request_id.clone(),
                reply,
            })
            .await??;
        let made = started.conversation.filter(|c| sanitize::id(c));
        app.durable_receipt(Receipt {
            at: 0,
            machine: String::new(),
            agent,
            conversation: made.clone().unwrap_or(conversation),
            verb: write.verb().to_owned(),
            choice: choice(&write),
            device,
            request_id,
        });
        Ok(DurableDone {
            ok: true,
            conversation: made,
        })
    }
}

impl App {
    /// This machine's agents and receipts (a phone watches: the agents are read every 2 s for a
    /// while).
    pub async fn local_durable(&self) -> Result<DurableList, AppError> {
        let machine = self.machine_name();
        let (agents, receipts) = tokio::join!(
            self.agents.durable.call(DurableMsg::List),
            self.agents.durable.call(DurableMsg::Receipts)
        );
        Ok(DurableList {
            agents: agents?
                .into_iter()
                .map(|agent| DurableAgent {
                    machine: machine.clone(),
                    agent,
                })
                .collect(),
            receipts: receipts?
                .into_iter()
                .map(|mut r| {
                    r.machine.clone_from(&machine);
                    r
                })
                .collect(),
        })
    }

    /// Every agent of the crew: this machine's and each online member's that declared `durable`
    /// (a member that does not answer is left out), masked again by this machine.
    pub async fn durable_list(&self, caller: &Caller) -> Result<DurableList, AppError> {
        let gathered = self.run_everywhere(caller, ListAgents).await?;
        let mut all = gathered.here;
        for (member, answer) in gathered.members {
            match answer {
                Ok(list) => {
                    all.agents.extend(list.agents);
                    all.receipts.extend(list.receipts);
                }
                Err(e) => tracing::info!(%member, error = %e, "member durable agents missing"),
            }
        }
        all.receipts.sort_by_key(|r| std::cmp::Reverse(r.at));
        Ok(all)
    }

    /// Reads `sources.json` again and starts and stops agents to match; how many are attached.
    pub async fn durable_reload(&self) -> Result<usize, AppError> {
        self.agents
            .durable
            .call(DurableMsg::Reload)
            .await?
            .map_err(|e| AppError::backend("reading sources.json", e))
    }

    /// Masks a member's agent view again with this machine's masker.
    fn mask_view(&self, view: &mut View) {
        collie_actors::durable::agent::mask_view(view, &self.core.masker);
    }

    /// Tells agent `agent` the answer `option` to the question card `card` asks; called by the
    /// card answer after the tap is claimed and audited, before the card is released.
    pub(super) async fn durable_answer(
        &self,
        caller: &Caller,
        agent: &str,
        card: &str,
        conversation: Option<&str>,
        option: &str,
    ) -> Result<(), AppError> {
        let device = writer(caller)?;
        let request_id = caller.request_id().to_owned();
        self.agents
            .durable
            .call(|reply| DurableMsg::AnswerCard {
                agent: agent.to_owned(),
                card: card.to_owned(),
                option: option.to_owned(),
                request_id: request_id.clone(),
                reply,
            })
            .await??;
        self.durable_receipt(Receipt {
            at: 0,
            machine: String::new(),
            agent: agent.to_owned(),
            conversation: conversation.unwrap_or_default().to_owned(),
            verb: "answer".to_owned(),
            choice: Some(option.to_owned()),
            device,
            request_id,
        });
        Ok(())
    }

    fn durable_receipt(&self, mut receipt: Receipt) {
        receipt.at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let _ = self.agents.durable.cast(DurableMsg::Receipt(receipt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_checked_before_anything_is_sent() {
        let send = |t: &str| Write::Send { text: t.into() };
        assert!(check("ops", "c1", &send("hello")).is_ok());
        assert!(check("ops", "c1", &send("  ")).is_err());
        assert!(check("ops", "c1", &send(&"x".repeat(MAX_SEND + 1))).is_err());
        assert!(check("ops", "a/b", &send("hi")).is_err());
        assert!(check("ops", "a b", &send("hi")).is_err());
        assert!(matches!(
            check("../x", "c1", &send("hi")),
            Err(AppError::NoSuchAgent)
        ));
        let answer = Write::Answer {
            question: "q".into(),
            option: "yes".into(),
        };
        assert!(
            check("ops", "c1", &answer).is_err(),
            "answers go through cards"
        );
        let rename = |t: &str| Write::Rename { title: t.into() };
        assert!(check("ops", "c1", &rename("New name")).is_ok());
        assert!(check("ops", "c1", &rename("a\u{1b}[2J")).is_err());
        let starter = Write::Starter {
            starter: "deploy?x".into(),
        };
        assert!(check("ops", "-", &starter).is_err());
        let starter = Write::Starter {
            starter: "deploy".into(),
        };
        assert!(check("ops", "-", &starter).is_ok());
    }
}
