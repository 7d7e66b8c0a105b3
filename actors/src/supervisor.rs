//! The bridge supervisor: the root of the actor tree of SPEC §1.
//!
//! It starts each child from a [`ChildSpec`] (the spec also publishes the child in its [`Slot`], so
//! callers reach the restarted instance), and when a child fails it starts it again — ractor does not
//! restart children by itself. A child that fails more than [`budget::MAX_RESTARTS`] times within
//! [`budget::RESTART_WINDOW`] stops the whole bridge: the supervisor records which child gave up in
//! [`ExitReason`] and stops, and `collie bridge` exits non-zero with a log line naming it.
//!
//! [`Slot`]: crate::slot::Slot

pub mod budget;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SpawnErr, SupervisionEvent};

use self::budget::{RestartBudget, Verdict};

/// Starts one child linked to the given supervisor and returns its cell.
pub type StartFn = Arc<
    dyn Fn(ActorCell) -> Pin<Box<dyn Future<Output = Result<ActorCell, SpawnErr>> + Send>>
        + Send
        + Sync,
>;

/// How to start (and restart) one child.
#[derive(Clone)]
pub struct ChildSpec {
    /// The child's name in logs and in the give-up message (`panes`, `pairing`, …).
    pub name: &'static str,
    /// Spawns the child linked to the supervisor and publishes it in its slot.
    pub start: StartFn,
}

/// Why the supervisor stopped, shared with whoever waits for it.
#[derive(Clone, Default)]
pub struct ExitReason(Arc<Mutex<Option<String>>>);

impl ExitReason {
    /// The give-up message, if the supervisor stopped because a child failed too often.
    pub fn gave_up(&self) -> Option<String> {
        self.0.lock().ok().and_then(|g| g.clone())
    }

    fn set(&self, why: String) {
        if let Ok(mut g) = self.0.lock() {
            *g = Some(why);
        }
    }
}

/// The root actor.
pub struct BridgeSupervisor;

/// Start-up arguments of the supervisor.
pub struct SupervisorArgs {
    /// Children in start order.
    pub children: Vec<ChildSpec>,
    /// Filled in when the supervisor gives up on a child.
    pub exit: ExitReason,
}

/// How long the supervisor waits for each child to stop when the bridge shuts down.
pub const CHILD_STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Per-child bookkeeping.
struct Child {
    spec: ChildSpec,
    cell: ActorCell,
    id: ActorId,
    budget: RestartBudget,
}

/// The supervisor's state.
pub struct SupervisorState {
    children: Vec<Child>,
    exit: ExitReason,
}

/// Messages the supervisor accepts.
#[derive(Debug)]
#[non_exhaustive]
pub enum SupervisorMsg {
    /// Ask for the number of restarts so far per child (for tests and `doctor`).
    Restarts(ractor::RpcReplyPort<Vec<(&'static str, usize)>>),
}

impl Actor for BridgeSupervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        let mut children = Vec::with_capacity(args.children.len());
        for spec in args.children {
            let cell = (spec.start)(myself.get_cell()).await?;
            tracing::debug!(child = spec.name, "started");
            children.push(Child {
                id: cell.get_id(),
                cell,
                spec,
                budget: RestartBudget::default(),
            });
        }
        Ok(SupervisorState {
            children,
            exit: args.exit,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SupervisorMsg::Restarts(reply) => {
                let counts = state
                    .children
                    .iter()
                    .map(|c| (c.spec.name, c.budget.total()))
                    .collect();
                let _ = reply.send(counts);
            }
        }
        Ok(())
    }

    /// Stops the children in the reverse of their start order and waits for each, so every one
    /// finishes its own `post_stop` (the audit actor, started second and stopped next to last, writes
    /// the lines the others' shutdown produced) — ractor does not stop a stopped actor's children.
    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        for child in state.children.iter().rev() {
            let stopped = child
                .cell
                .stop_and_wait(Some("shutdown".into()), Some(CHILD_STOP_WAIT))
                .await;
            if stopped.is_err() {
                tracing::warn!(
                    child = child.spec.name,
                    "child did not stop in time; killing it"
                );
                child.cell.kill();
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, why) = match event {
            SupervisionEvent::ActorFailed(cell, err) => (cell, format!("failed: {err}")),
            SupervisionEvent::ActorTerminated(cell, _, reason) => (
                cell,
                format!("stopped: {}", reason.unwrap_or_else(|| "no reason".into())),
            ),
            _ => return Ok(()),
        };
        let Some(child) = state.children.iter_mut().find(|c| c.id == cell.get_id()) else {
            return Ok(());
        };
        let name = child.spec.name;
        match child.budget.on_failure(Instant::now()) {
            Verdict::Restart => {
                tracing::warn!(child = name, %why, "child actor ended; restarting it");
                let cell = (child.spec.start)(myself.get_cell()).await?;
                child.id = cell.get_id();
                child.cell = cell;
            }
            Verdict::GiveUp => {
                let msg = format!(
                    "child actor `{name}` failed more than {} times within {} s; stopping the bridge",
                    budget::MAX_RESTARTS,
                    budget::RESTART_WINDOW.as_secs()
                );
                tracing::error!(child = name, %why, "{msg}");
                state.exit.set(msg.clone());
                myself.stop(Some(msg));
            }
        }
        Ok(())
    }
}
