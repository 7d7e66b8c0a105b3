//! A `Slot` holds the current `ActorRef` of a supervised child so callers always reach the live
//! instance: the supervisor swaps in the restarted child, and a caller whose request was in flight when
//! the child failed gets [`CallError::Restarting`] instead of hanging (SPEC §1).

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use ractor::rpc::CallResult;
use ractor::{ActorRef, Message, RpcReplyPort};

/// How long a request waits for an actor's answer before it is treated as a failed child.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to a supervised actor did not produce an answer.
#[derive(Debug, thiserror::Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError {
    /// The actor failed (or was being restarted) while the request was in flight.
    #[error("restarting, try again")]
    Restarting,
}

/// The live reference to one supervised child, swapped by the supervisor on restart.
pub struct Slot<M: Message> {
    current: Arc<ArcSwapOption<ActorRef<M>>>,
}

impl<M: Message> Clone for Slot<M> {
    fn clone(&self) -> Self {
        Self {
            current: Arc::clone(&self.current),
        }
    }
}

impl<M: Message> Default for Slot<M> {
    fn default() -> Self {
        Self {
            current: Arc::new(ArcSwapOption::empty()),
        }
    }
}

impl<M: Message> Slot<M> {
    /// Publishes the child that now serves requests.
    pub fn set(&self, actor: ActorRef<M>) {
        self.current.store(Some(Arc::new(actor)));
    }

    /// Marks the child as gone until it is restarted.
    pub fn clear(&self) {
        self.current.store(None);
    }

    /// The live child, if one is running.
    pub fn get(&self) -> Option<ActorRef<M>> {
        self.current.load_full().map(|a| (*a).clone())
    }

    /// Sends a request and waits (at most [`CALL_TIMEOUT`]) for its reply.
    ///
    /// Every way of not getting an answer — no live child, the child dropped the reply port because it
    /// failed, the timeout — maps to [`CallError::Restarting`]: the caller cannot tell them apart in a
    /// useful way, and all of them are cured by trying again once the supervisor restarted the child.
    pub async fn call<R, F>(&self, build: F) -> Result<R, CallError>
    where
        R: Send + 'static,
        F: FnOnce(RpcReplyPort<R>) -> M,
    {
        let actor = self.get().ok_or(CallError::Restarting)?;
        match actor.call(build, Some(CALL_TIMEOUT)).await {
            Ok(CallResult::Success(value)) => Ok(value),
            Ok(_) | Err(_) => Err(CallError::Restarting),
        }
    }

    /// Sends a message without waiting for an answer.
    pub fn cast(&self, msg: M) -> Result<(), CallError> {
        let actor = self.get().ok_or(CallError::Restarting)?;
        actor.cast(msg).map_err(|_| CallError::Restarting)
    }
}

#[cfg(test)]
mod tests;
