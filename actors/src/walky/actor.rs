//! The walky actor's ractor shell: custody of the log, the crew key (for signing), the replay
//! guards and the lead's bounded result records. The pure rules are `collie_crew::walky`'s; the
//! flows (who sends what where) are the application's (`src/app/walky/`), which call in here for every step
//! that needs this state.
//!
//! One actor, so the log is appended in order and each replay guard sees every message; signing
//! and verifying are fast (tens of microseconds) next to the log's `fdatasync`.
//!
//! Who sends what: the application's walky flows (`src/app/walky/`) — `Append` before a message
//! leaves or is typed, `Sign`/`ForwardOwn`/`Attest`/`Receive` on the crew paths, `Record` and
//! `Result` for the lead's kept results, `Entries` for the inbox and the phone's cards.
//!
//! When it fails: a line that cannot be written or synced is answered [`WalkyFailure::Log`] to
//! every writer that waited for that sync, so the message is refused (nothing is sent or typed
//! unlogged). If the log cannot be opened, `pre_start` fails and the supervisor restarts the actor
//! (and stops the bridge after five failures in a minute). A restarted instance rebuilds what it
//! needs from the log — the index of sent ids, the replay guards of the last ten minutes — and
//! loads the crew key again on first use; the lead's kept results live in memory only, so a result
//! asked for after a restart is unknown (the sender already had its answer on its stream). Lines
//! written but not synced when the actor stops are synced and answered in `post_stop`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwap;
use collie_crew::identity::Identity;
use collie_crew::pin::Pin;
use collie_crew::walky::{
    self, Forwarded, Message, MessageId, Outcome, Records, ReplayGuard, Signed, Signer, WalkyError,
    WalkyResult,
};
use ed25519_dalek::VerifyingKey;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use time::OffsetDateTime;

use super::error::WalkyFailure;
use super::log::{Entry, Kind, WalkyLog};
use crate::crew_link::CrewView;

/// Ids a replay guard remembers at most (a flood past this refuses the oldest ids' era).
const REPLAY_CAP: usize = 100_000;
/// Results (and delivery records) the lead keeps at most for their 10 minutes.
pub const RECORDS_CAP: usize = 10_000;
/// How far back the log is read to refill the replay guards at start: every id a guard could
/// still hold (a `sent_at` within five minutes either side of the clock).
const RELOAD_WINDOW_SECS: i64 = 10 * 60;

/// The walky actor.
pub struct WalkyActor;

/// What it needs; cloned at each (re)start.
#[derive(Clone)]
pub struct WalkyArgs {
    /// `<state>/walky`.
    pub dir: PathBuf,
    /// `<state>/crew`, where the crew identity lives once this bridge leads or joined a crew.
    pub identity_dir: PathBuf,
    /// The crew's view (whether this bridge is in a crew at all).
    pub crew_view: Arc<ArcSwap<CrewView>>,
}

/// Messages of the walky actor.
#[non_exhaustive]
pub enum WalkyMsg {
    /// Append a log line (synced).
    Append(Box<Entry>, RpcReplyPort<Result<(), WalkyFailure>>),
    /// Append a log line nobody waits for (a result learned after the fact); a failure is logged.
    AppendLater(Box<Entry>),
    /// Sync the lines written since the last sync and answer their writers (sent by the actor to
    /// itself after a write).
    Flush,
    /// Every readable log line, oldest first.
    Entries(RpcReplyPort<Result<Vec<Entry>, WalkyFailure>>),
    /// Whether this machine logged sending `id` (a member accepts results only for those).
    Sent(MessageId, RpcReplyPort<bool>),
    /// Sign a message of one of this machine's panes with the crew key.
    Sign(Box<Message>, RpcReplyPort<Result<Signed, WalkyFailure>>),
    /// On the lead: sign a message of one of its own panes (no attestation needed).
    ForwardOwn(Box<Message>, RpcReplyPort<Result<Forwarded, WalkyFailure>>),
    /// On the lead: check a member's message and attest it.
    Attest {
        /// The member's signed message.
        signed: Box<Signed>,
        /// The certificate the member presented on its connection.
        certificate: Vec<u8>,
        /// The pin the lead stored for the member.
        pinned: Pin,
        /// The member's crew name.
        member: String,
        /// The message to forward, or why not.
        reply: RpcReplyPort<Result<Forwarded, WalkyFailure>>,
    },
    /// On a receiver: check a forwarded message against the pinned lead's key.
    Receive {
        /// The message as the lead forwarded it.
        forwarded: Box<Forwarded>,
        /// The lead's key (from its pinned certificate).
        lead_key: VerifyingKey,
        /// The lead's crew name.
        lead_machine: String,
        /// The message, or why it is refused.
        reply: RpcReplyPort<Result<Message, WalkyError>>,
    },
    /// On the lead: keep a result for the sender's 10 minutes.
    Record(WalkyResult),
    /// On the lead: a kept result.
    Result(MessageId, RpcReplyPort<Option<Outcome>>),
    /// How many results are kept and how many were dropped for the cap.
    RecordStats(RpcReplyPort<(usize, u64)>),
    /// This machine's crew key (to check, on the lead, messages for its own panes).
    OwnKey(RpcReplyPort<Result<VerifyingKey, WalkyFailure>>),
}

/// The actor's state.
pub struct WalkyState {
    args: WalkyArgs,
    log: WalkyLog,
    sent: HashSet<MessageId>,
    signer: Option<Signer>,
    /// Messages this machine accepted for its panes.
    received: ReplayGuard,
    /// Messages the lead attested (the same message also passes `received` when it is for one of
    /// the lead's own panes).
    attested: ReplayGuard,
    results: Records<Outcome>,
    /// Writers whose lines wait for the next sync.
    waiting: Vec<RpcReplyPort<Result<(), WalkyFailure>>>,
    /// Whether a [`WalkyMsg::Flush`] is already in the mailbox.
    flush_queued: bool,
}

fn now() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

impl WalkyState {
    fn reindex(&mut self) -> Result<(), WalkyFailure> {
        self.sent = self
            .log
            .entries()?
            .into_iter()
            .filter(|e| e.kind == Kind::Sent)
            .filter_map(|e| e.id.parse().ok())
            .collect();
        Ok(())
    }

    /// Refills the replay guards from the log (SPEC §9: they survive restarts): every message
    /// this machine accepted for its panes (`received`) or attested as the lead (`forwarded`, and
    /// `received` for its own panes) whose `sent_at` the guards would still accept. Without this a
    /// restarted bridge would take a replay of any message of the last five minutes.
    fn reload_guards(&mut self, now: i64) {
        let Ok(entries) = self.log.entries() else {
            tracing::warn!("walky: cannot read the log to refill the replay guards");
            return;
        };
        let mut reloaded = 0usize;
        for entry in entries {
            if entry.at < now.saturating_sub(RELOAD_WINDOW_SECS) {
                continue;
            }
            let Ok(id) = entry.id.parse::<MessageId>() else {
                continue;
            };
            let admitted = match entry.kind {
                Kind::Received => {
                    let received = self.received.admit(id, entry.sent_at, now).is_ok();
                    let attested = self.attested.admit(id, entry.sent_at, now).is_ok();
                    received || attested
                }
                Kind::Forwarded => self.attested.admit(id, entry.sent_at, now).is_ok(),
                Kind::Sent | Kind::Result => false,
            };
            reloaded += usize::from(admitted);
        }
        if reloaded > 0 {
            tracing::info!(reloaded, "walky: replay guards refilled from the log");
        }
    }

    /// Writes a line (not yet synced) and makes sure a [`WalkyMsg::Flush`] follows.
    fn write(&mut self, myself: &ActorRef<WalkyMsg>, entry: &Entry) -> Result<(), WalkyFailure> {
        self.log.write(entry, OffsetDateTime::now_utc())?;
        if entry.kind == Kind::Sent {
            if let Ok(id) = entry.id.parse() {
                self.sent.insert(id);
            }
        }
        if !self.flush_queued {
            self.flush_queued = myself.cast(WalkyMsg::Flush).is_ok();
        }
        Ok(())
    }

    /// Group commit: one `fdatasync` for every line written since the last one, then the answers
    /// to their writers, then pruning. The flush message is queued behind the appends that were
    /// already waiting, so under load many lines share one sync.
    fn flush(&mut self) {
        self.flush_queued = false;
        let synced = self.log.sync().map_err(WalkyFailure::from);
        for reply in self.waiting.drain(..) {
            let _ = reply.send(synced.clone());
        }
        if let Err(e) = &synced {
            tracing::error!(error = %e, "walky: the log cannot be synced");
        }
        let before = self.log.lines();
        match self.log.prune(OffsetDateTime::now_utc().date()) {
            Ok(()) if self.log.lines() < before => {
                // A prune dropped lines: forget what they held.
                if let Err(e) = self.reindex() {
                    tracing::warn!(error = %e, "walky: cannot re-read the log");
                }
            }
            Ok(()) => {}
            Err(e) => tracing::warn!(error = %e, "walky: cannot prune the log"),
        }
    }

    /// The crew key, loaded on first use. A solo bridge has none and signs nothing (SPEC §9).
    fn signer(&mut self) -> Result<&Signer, WalkyFailure> {
        if self.args.crew_view.load().role == crate::crew_link::CrewRole::Solo {
            return Err(WalkyFailure::Solo);
        }
        if self.signer.is_none() {
            let key = |e: &dyn std::fmt::Display| WalkyFailure::Key(e.to_string());
            let identity =
                Identity::load_or_create(&self.args.identity_dir).map_err(|e| key(&e))?;
            self.signer = Some(Signer::from_identity(&identity).map_err(|e| key(&e))?);
        }
        self.signer
            .as_ref()
            .ok_or_else(|| WalkyFailure::Key("not loaded".into()))
    }
}

impl Actor for WalkyActor {
    type Msg = WalkyMsg;
    type State = WalkyState;
    type Arguments = WalkyArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<WalkyMsg>,
        args: WalkyArgs,
    ) -> Result<WalkyState, ActorProcessingErr> {
        let log = WalkyLog::open(&args.dir)?;
        let mut state = WalkyState {
            args,
            log,
            sent: HashSet::new(),
            signer: None,
            received: ReplayGuard::new(REPLAY_CAP),
            attested: ReplayGuard::new(REPLAY_CAP),
            results: Records::new(RECORDS_CAP),
            waiting: Vec::new(),
            flush_queued: false,
        };
        state.reindex()?;
        state.reload_guards(now());
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<WalkyMsg>,
        msg: WalkyMsg,
        state: &mut WalkyState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            WalkyMsg::Append(entry, reply) => match state.write(&myself, &entry) {
                Ok(()) => state.waiting.push(reply),
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            WalkyMsg::AppendLater(entry) => {
                if let Err(e) = state.write(&myself, &entry) {
                    tracing::warn!(error = %e, "walky: cannot log a result");
                }
            }
            WalkyMsg::Flush => state.flush(),
            WalkyMsg::Entries(reply) => {
                let _ = reply.send(state.log.entries().map_err(WalkyFailure::from));
            }
            WalkyMsg::Sent(id, reply) => {
                let _ = reply.send(state.sent.contains(&id));
            }
            WalkyMsg::Sign(message, reply) => {
                let signed = state.signer().map(|s| s.sign(*message));
                let _ = reply.send(signed);
            }
            WalkyMsg::ForwardOwn(message, reply) => {
                let fwd = state.signer().map(|s| walky::forward_own(s, *message));
                let _ = reply.send(fwd);
            }
            WalkyMsg::Attest {
                signed,
                certificate,
                pinned,
                member,
                reply,
            } => {
                let result = state.signer().map(|_| ()).and_then(|()| {
                    let WalkyState {
                        signer, attested, ..
                    } = state;
                    let lead = signer
                        .as_ref()
                        .ok_or_else(|| WalkyFailure::Key("not loaded".into()))?;
                    Ok(walky::attest(
                        &signed,
                        &certificate,
                        &pinned,
                        &member,
                        lead,
                        attested,
                        now(),
                    )?)
                });
                let _ = reply.send(result);
            }
            WalkyMsg::Receive {
                forwarded,
                lead_key,
                lead_machine,
                reply,
            } => {
                let result = walky::receive(
                    &forwarded,
                    &lead_key,
                    &lead_machine,
                    &mut state.received,
                    now(),
                );
                let _ = reply.send(result);
            }
            WalkyMsg::Record(result) => {
                state.results.insert(result.id, result.outcome, now());
            }
            WalkyMsg::Result(id, reply) => {
                let _ = reply.send(state.results.get(&id, now()).cloned());
            }
            WalkyMsg::OwnKey(reply) => {
                let _ = reply.send(state.signer().map(Signer::verifying_key));
            }
            WalkyMsg::RecordStats(reply) => {
                state.results.prune(now());
                let _ = reply.send((state.results.len(), state.results.dropped()));
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<WalkyMsg>,
        state: &mut WalkyState,
    ) -> Result<(), ActorProcessingErr> {
        // Lines written but not yet synced still get their sync and their answers.
        state.flush();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use collie_crew::walky::{forward_own, Address};

    use super::*;

    fn args(dir: &std::path::Path) -> WalkyArgs {
        WalkyArgs {
            dir: dir.join("walky"),
            identity_dir: dir.join("crew"),
            crew_view: Arc::new(ArcSwap::from_pointee(CrewView::solo("web-1"))),
        }
    }

    async fn receive(
        actor: &ActorRef<WalkyMsg>,
        forwarded: &Forwarded,
        lead: &Signer,
    ) -> Result<Message, WalkyError> {
        ractor::call!(actor, |reply| WalkyMsg::Receive {
            forwarded: Box::new(forwarded.clone()),
            lead_key: lead.verifying_key(),
            lead_machine: "lead".into(),
            reply,
        })
        .expect("the actor answers")
    }

    /// A message the lead accepted once, replayed to the same member after the member's walky
    /// actor restarted: refused, because the guard was refilled from the log.
    #[tokio::test]
    async fn a_replayed_message_is_refused_after_a_restart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lead = Signer::from_identity(&Identity::generate().expect("identity")).expect("signer");
        let message = Message::new(
            MessageId::random(),
            Address::new("lead", "t0-1", "abcd").expect("from"),
            "planner",
            Address::new("web-1", "t0-2", "efgh").expect("to"),
            now(),
            "run the tests".to_owned(),
        )
        .expect("message");
        let forwarded = forward_own(&lead, message.clone());

        let (actor, handle) = Actor::spawn(None, WalkyActor, args(dir.path()))
            .await
            .expect("spawn");
        let accepted = receive(&actor, &forwarded, &lead).await.expect("accepted");
        // Delivery logs it, as `deliver` does.
        let entry = Entry {
            id: accepted.id.to_string(),
            at: now(),
            kind: Kind::Received,
            from: accepted.from.to_string(),
            from_name: accepted.from_name.clone(),
            to: accepted.to.to_string(),
            sent_at: accepted.sent_at,
            body: Some(accepted.body.clone()),
            outcome: Some("delivered".into()),
        };
        ractor::call!(actor, |r| WalkyMsg::Append(Box::new(entry), r))
            .expect("answers")
            .expect("logged");
        // Still the same actor: a replay is refused.
        assert!(matches!(
            receive(&actor, &forwarded, &lead).await,
            Err(WalkyError::Replayed { .. })
        ));
        actor.stop(None);
        handle.await.expect("stopped");

        let (actor, handle) = Actor::spawn(None, WalkyActor, args(dir.path()))
            .await
            .expect("respawn");
        assert!(
            matches!(
                receive(&actor, &forwarded, &lead).await,
                Err(WalkyError::Replayed { .. })
            ),
            "a restarted guard must remember the ids it accepted"
        );
        // A fresh message still passes.
        let fresh = Message {
            id: MessageId::random(),
            ..message
        };
        assert!(receive(&actor, &forward_own(&lead, fresh), &lead)
            .await
            .is_ok());
        actor.stop(None);
        handle.await.expect("stopped");
    }
}
