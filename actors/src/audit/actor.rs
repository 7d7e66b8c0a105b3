//! The Audit actor: sole writer of `<state>/audit.log` (SPEC §7).
//!
//! Everyone who performs a write sends `Append` first and performs the write only after an `Ok`:
//! when the line cannot be appended (full disk, a directory in the log's place) the answer is an
//! error and the write is refused (`503 audit unavailable`). After each line the chain's tail (seq,
//! hash) is kept in the store, so `collie audit verify` notices a removed or truncated tail.
//!
//! If the actor fails it is restarted and resumes the chain from the last complete line on disk.

use std::path::PathBuf;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use time::OffsetDateTime;

use super::{AuditError, AuditLog, AuditRecord, ChainTail, ContentMode, Mask};
use crate::store::{Store, Table};

/// Store key of the chain's last (seq, hash).
pub const TAIL_KEY: &str = "audit.tail";

/// The actor.
pub struct AuditActor;

/// Start-up arguments.
#[derive(Clone)]
pub struct AuditArgs {
    /// `<state>/audit.log`.
    pub path: PathBuf,
    /// Where the tail is kept.
    pub store: Store,
    /// COLLIE_AUDIT_CONTENT.
    pub mode: ContentMode,
    /// The redactor's mask (audit lines pass it).
    pub mask: Mask,
}

/// Messages the audit actor accepts.
#[derive(Debug)]
#[non_exhaustive]
pub enum AuditMsg {
    /// Append one line; the reply says whether it is on disk.
    Append(AuditRecord, RpcReplyPort<Result<ChainTail, AuditError>>),
    /// The tail the store holds (for `collie audit verify`).
    StoredTail(RpcReplyPort<Option<ChainTail>>),
}

/// The actor's state.
pub struct AuditState {
    log: AuditLog,
    store: Store,
}

/// Reads the tail kept in the store.
pub fn stored_tail(store: &Store) -> Option<ChainTail> {
    let bytes = store.get(Table::Meta, TAIL_KEY).ok()??;
    serde_json::from_slice(&bytes).ok()
}

impl Actor for AuditActor {
    type Msg = AuditMsg;
    type State = AuditState;
    type Arguments = AuditArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: AuditArgs,
    ) -> Result<AuditState, ActorProcessingErr> {
        let log = AuditLog::open(&args.path, args.mode, Arc::clone(&args.mask))?;
        if let (Some(stored), file) = (stored_tail(&args.store), log.tail()) {
            let file_seq = file.as_ref().map_or(0, |t| t.seq);
            if file_seq < stored.seq {
                tracing::error!(
                    stored_seq = stored.seq,
                    file_seq,
                    "the audit log ends before the last line the store remembers: it was truncated; run `collie audit verify`"
                );
            }
        }
        Ok(AuditState {
            log,
            store: args.store,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: AuditMsg,
        state: &mut AuditState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            AuditMsg::Append(rec, reply) => {
                let result = state.log.append(&rec, OffsetDateTime::now_utc());
                if let Ok(tail) = &result {
                    match serde_json::to_vec(tail) {
                        Ok(bytes) => {
                            if let Err(e) = state.store.put(Table::Meta, TAIL_KEY, &bytes) {
                                tracing::warn!(error = %e, "could not record the audit tail");
                            }
                        }
                        Err(e) => tracing::warn!(error = %e, "could not encode the audit tail"),
                    }
                }
                let _ = reply.send(result);
            }
            AuditMsg::StoredTail(reply) => {
                let _ = reply.send(stored_tail(&state.store));
            }
        }
        Ok(())
    }
}
