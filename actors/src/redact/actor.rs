//! The Redactor actor: owns the masking configuration (COLLIE_REDACT) and hands out an
//! `Arc<Masker>`.
//!
//! Hot paths (screen snapshots, stream rows, audit lines) call the masker inline through that `Arc`:
//! a message round trip per screen update would cost more than the masking itself. The actor exists
//! for custody of the configuration; if it fails it is restarted and hands out an equal masker.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::Masker;

/// The actor.
pub struct Redactor;

/// Messages the redactor accepts.
#[derive(Debug)]
#[non_exhaustive]
pub enum RedactorMsg {
    /// Hand out the shared masker.
    Masker(RpcReplyPort<Arc<Masker>>),
}

/// The redactor's state: the one masker of this bridge.
pub struct RedactorState {
    masker: Arc<Masker>,
}

impl Actor for Redactor {
    type Msg = RedactorMsg;
    type State = RedactorState;
    /// The masker to hand out (built once at start from COLLIE_REDACT, so a restart hands out the
    /// same configuration).
    type Arguments = Arc<Masker>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        masker: Arc<Masker>,
    ) -> Result<RedactorState, ActorProcessingErr> {
        Ok(RedactorState { masker })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: RedactorMsg,
        state: &mut RedactorState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RedactorMsg::Masker(reply) => {
                let _ = reply.send(Arc::clone(&state.masker));
            }
        }
        Ok(())
    }
}
