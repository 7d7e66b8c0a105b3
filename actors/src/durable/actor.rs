//! The Durable actor (SPEC §1, §10.3): custody of the attached agents — one [`AgentActor`] child
//! per entry of `sources.json` — and of the receipts of the phone's durable writes.
//!
//! Who sends what: the application lists the agents for the phone (`List`, which also counts as
//! a phone watching), forwards writes and card answers to the agent's child, keeps receipts;
//! `collie durable attach|detach` edit `sources.json` and then send `Reload` over the control
//! socket, which starts and stops children to match the file.
//!
//! When it fails: the supervisor starts it again; it reads `sources.json` again and starts every
//! child afresh (each reads its agent at once and asks its open questions with new cards). A
//! child that fails is started again here, with its source; one that fails more than
//! [`RESTARTS`] times in a row is left stopped and listed as down.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use crate::cards::actor::CardsMsg;
use crate::redact::Masker;
use crate::slot::Slot;

use super::agent::{AgentActor, AgentArgs, AgentMsg, Snapshot, Status, WriteError};
use super::receipts::{Receipt, Receipts};
use super::sources::{Source, Sources};
use super::view::View;
use super::wire::{Started, Write};

/// How long a child may take to hand over its state.
const SNAPSHOT_WAIT: Duration = Duration::from_secs(2);
/// How long a durable question's card waits for a tap (the longest hold there is: the question
/// stays open on the agent for as long as it likes, and a card that expires is asked again).
pub const HOLD: Duration = Duration::from_secs(24 * 60 * 60);
/// Restarts of one child in a row before it is left stopped.
pub const RESTARTS: u32 = 5;

/// What the Durable actor starts from.
#[derive(Clone)]
pub struct DurableArgs {
    /// `<state>/sources.json`.
    pub sources: PathBuf,
    /// This machine's name.
    pub machine: crate::machine::MachineName,
    /// The Cards actor.
    pub cards: Slot<CardsMsg>,
    /// Masks what leaves the machine.
    pub masker: Arc<Masker>,
    /// How long a question's card waits.
    pub hold: Duration,
}

/// Messages of the Durable actor.
#[derive(Debug)]
pub enum DurableMsg {
    /// Read `sources.json` again and start and stop children to match; the number attached.
    Reload(RpcReplyPort<Result<usize, String>>),
    /// Every agent's state (a phone is watching).
    List(RpcReplyPort<Vec<Snapshot>>),
    /// Send a write to agent `agent`.
    Write {
        /// The agent.
        agent: String,
        /// The conversation.
        conversation: String,
        /// The write.
        write: Write,
        /// The request id.
        request_id: String,
        /// The answer.
        reply: RpcReplyPort<Result<Started, WriteError>>,
    },
    /// Answer the question card `card` asks of agent `agent`.
    AnswerCard {
        /// The agent.
        agent: String,
        /// Card id.
        card: String,
        /// Option id.
        option: String,
        /// The request id.
        request_id: String,
        /// The answer.
        reply: RpcReplyPort<Result<Started, WriteError>>,
    },
    /// Keep a receipt.
    Receipt(Receipt),
    /// The receipts, newest first.
    Receipts(RpcReplyPort<Vec<Receipt>>),
}

struct Child {
    source: Source,
    actor: Option<ActorRef<AgentMsg>>,
    restarts: u32,
}

/// The actor.
pub struct DurableActor;

/// Its state.
pub struct DurableState {
    args: DurableArgs,
    children: BTreeMap<String, Child>,
    receipts: Receipts,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl DurableState {
    async fn start(
        &self,
        myself: &ActorRef<DurableMsg>,
        source: &Source,
    ) -> Option<ActorRef<AgentMsg>> {
        let args = AgentArgs {
            source: source.clone(),
            machine: self.args.machine.clone(),
            cards: self.args.cards.clone(),
            masker: Arc::clone(&self.args.masker),
            hold: self.args.hold,
        };
        match Actor::spawn_linked(None, AgentActor, args, myself.get_cell()).await {
            Ok((actor, _)) => Some(actor),
            Err(e) => {
                tracing::error!(agent = %source.name, error = %e, "cannot start a durable agent's actor");
                None
            }
        }
    }

    /// Starts and stops children to match `sources`.
    async fn reconcile(&mut self, myself: &ActorRef<DurableMsg>, sources: Sources) {
        let wanted: BTreeMap<String, Source> = sources
            .agents
            .into_iter()
            .map(|s| (s.name.clone(), s))
            .collect();
        let stale: Vec<String> = self
            .children
            .iter()
            .filter(|(name, c)| wanted.get(*name) != Some(&c.source))
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale {
            if let Some(child) = self.children.remove(&name) {
                if let Some(actor) = child.actor {
                    actor.stop(Some("detached".into()));
                }
            }
        }
        for (name, source) in wanted {
            if self.children.contains_key(&name) {
                continue;
            }
            let actor = self.start(myself, &source).await;
            self.children.insert(
                name,
                Child {
                    source,
                    actor,
                    restarts: 0,
                },
            );
        }
    }

    fn child(&self, agent: &str) -> Option<&ActorRef<AgentMsg>> {
        self.children.get(agent).and_then(|c| c.actor.as_ref())
    }
}

fn load(path: &std::path::Path) -> Result<Sources, String> {
    Sources::load(path).map_err(|e| e.to_string())
}

impl Actor for DurableActor {
    type Msg = DurableMsg;
    type State = DurableState;
    type Arguments = DurableArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<DurableMsg>,
        args: DurableArgs,
    ) -> Result<DurableState, ActorProcessingErr> {
        let sources = load(&args.sources).unwrap_or_else(|e| {
            tracing::error!(error = %e, "durable agents not started");
            Sources::default()
        });
        let mut state = DurableState {
            args,
            children: BTreeMap::new(),
            receipts: Receipts::default(),
        };
        state.reconcile(&myself, sources).await;
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<DurableMsg>,
        msg: DurableMsg,
        state: &mut DurableState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            DurableMsg::Reload(reply) => {
                let answer = match load(&state.args.sources) {
                    Ok(sources) => {
                        let n = sources.agents.len();
                        state.reconcile(&myself, sources).await;
                        Ok(n)
                    }
                    Err(e) => Err(e),
                };
                let _ = reply.send(answer);
            }
            DurableMsg::List(reply) => {
                let mut all = Vec::with_capacity(state.children.len());
                for (name, child) in &state.children {
                    let snapshot = match &child.actor {
                        Some(actor) => {
                            let _ = actor.cast(AgentMsg::Watched);
                            actor
                                .call(AgentMsg::Snapshot, Some(SNAPSHOT_WAIT))
                                .await
                                .ok()
                                .and_then(|r| r.success_or(()).ok())
                        }
                        None => None,
                    };
                    all.push(snapshot.unwrap_or_else(|| Snapshot {
                        name: name.clone(),
                        transport: child.source.transport.kind().to_owned(),
                        status: Status::Down,
                        error: Some("its actor is not running".into()),
                        polled: None,
                        view: View::default(),
                    }));
                }
                let _ = reply.send(all);
            }
            DurableMsg::Write {
                agent,
                conversation,
                write,
                request_id,
                reply,
            } => match state.child(&agent) {
                Some(actor) => {
                    let _ = actor.cast(AgentMsg::Write {
                        conversation,
                        write,
                        request_id,
                        reply,
                    });
                }
                None => {
                    let _ = reply.send(Err(WriteError::NoAgent(agent)));
                }
            },
            DurableMsg::AnswerCard {
                agent,
                card,
                option,
                request_id,
                reply,
            } => match state.child(&agent) {
                Some(actor) => {
                    let _ = actor.cast(AgentMsg::AnswerCard {
                        card,
                        option,
                        request_id,
                        reply,
                    });
                }
                None => {
                    let _ = reply.send(Err(WriteError::NoQuestion));
                }
            },
            DurableMsg::Receipt(receipt) => state.receipts.add(receipt),
            DurableMsg::Receipts(reply) => {
                let _ = reply.send(state.receipts.list(now_ms()));
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<DurableMsg>,
        event: SupervisionEvent,
        state: &mut DurableState,
    ) -> Result<(), ActorProcessingErr> {
        let SupervisionEvent::ActorFailed(cell, error) = event else {
            return Ok(());
        };
        let Some((name, source, restarts)) = state
            .children
            .iter()
            .find(|(_, c)| c.actor.as_ref().map(|a| a.get_id()) == Some(cell.get_id()))
            .map(|(n, c)| (n.clone(), c.source.clone(), c.restarts))
        else {
            return Ok(());
        };
        tracing::warn!(agent = %name, error = %error, "a durable agent's actor failed");
        let actor = if restarts < RESTARTS {
            state.start(&myself, &source).await
        } else {
            tracing::error!(agent = %name, "a durable agent's actor failed too often; left stopped");
            None
        };
        if let Some(child) = state.children.get_mut(&name) {
            child.actor = actor;
            child.restarts = restarts + 1;
        }
        Ok(())
    }
}
