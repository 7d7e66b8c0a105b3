//! Calls through a [`Slot`] under a paused clock: a request to an actor that never answers comes
//! back `restarting, try again` after [`CALL_TIMEOUT`], and one whose actor fails comes back at
//! once — never a hang.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::time::Instant;

use super::*;

/// An actor that keeps every reply port it is given and never answers, or fails when asked to.
struct Stuck;

enum StuckMsg {
    Ask(RpcReplyPort<()>),
    AskAndFail(RpcReplyPort<()>),
}

impl Actor for Stuck {
    type Msg = StuckMsg;
    type State = Vec<RpcReplyPort<()>>;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<StuckMsg>,
        (): (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(Vec::new())
    }

    async fn handle(
        &self,
        _myself: ActorRef<StuckMsg>,
        msg: StuckMsg,
        held: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            StuckMsg::Ask(reply) => {
                held.push(reply);
                Ok(())
            }
            StuckMsg::AskAndFail(reply) => {
                drop(reply);
                Err("failed mid-request".into())
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_to_an_actor_that_never_answers_times_out() {
    let (actor, handle) = Actor::spawn(None, Stuck, ()).await.expect("spawn");
    let slot = Slot::default();
    slot.set(actor.clone());
    let start = Instant::now();
    assert_eq!(slot.call(StuckMsg::Ask).await, Err(CallError::Restarting));
    assert!(start.elapsed() >= CALL_TIMEOUT, "{:?}", start.elapsed());
    actor.stop(None);
    handle.await.expect("stopped");
}

#[tokio::test(start_paused = true)]
async fn a_call_to_an_actor_that_fails_is_told_at_once() {
    let (actor, handle) = Actor::spawn(None, Stuck, ()).await.expect("spawn");
    let slot = Slot::default();
    slot.set(actor);
    let start = Instant::now();
    assert_eq!(
        slot.call(StuckMsg::AskAndFail).await,
        Err(CallError::Restarting)
    );
    assert!(start.elapsed() < CALL_TIMEOUT, "{:?}", start.elapsed());
    let _ = handle.await;
    // With no live child, a call does not wait at all.
    slot.clear();
    assert_eq!(slot.call(StuckMsg::Ask).await, Err(CallError::Restarting));
}
