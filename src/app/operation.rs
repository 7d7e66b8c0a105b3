//! Operations as values (decision 0057): one runner for every operation on one machine, whether
//! the machine is this one or a member.
//!
//! An [`Operation`] is the request itself — what a caller asked for, as a value — and knows its
//! entry in the registry ([`Op`]: tier, and the capability a member may decline), how it is
//! checked, the relay request that asks a member for it and how the member's answer reads, and
//! the audit line of what happened. [`App::run`] is the one order every operation follows:
//!
//! 1. **authorize**: the caller holds what the registry requires, by the policy now
//!    ([`App::authorize`]) — and, for an operation that says so ([`Operation::holds`]), keeps
//!    holding it until the operation is done;
//! 2. **resolve the machine**: `local`, this machine's name, or an online member;
//! 3. for a member, **the member declared it** (its hello's capability), before anything else;
//! 4. **validate** what was asked, as every machine does, before anything runs or is relayed;
//! 5. **execute and audit**: on this machine [`Operation::local`], which writes its line when
//!    SPEC §7 says (before a write, so a write whose line cannot be written is refused; after a
//!    create, which names the new pane); on a member what it must learn there first
//!    ([`Operation::prepare`]), the relay, and this machine's line only once
//!    the member answered that it happened (decision 0052). A refusal at a member's cap is
//!    `resource.denied` here too; any other refusal leaves no line here. When this machine cannot
//!    write the line of something the member did, [`Operation::undo`] takes it back if it can (a
//!    new pane is closed again).
//!
//! The member's relay server runs the same operation with the relayed caller ([`Operation::reply`]
//! is the inverse of [`Operation::answer`]), so the member's own checks, caps and lines are the
//! ones its own callers get. Exposing an operation is one line per adapter: decode it, name the
//! caller, `app.run(&caller, machine, op)`.

use std::future::Future;
use std::time::Duration;

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::pairing::Tier;
use collie_crew::relay::{RelayError, RelayKind, RelayOk};
use futures_util::future::join_all;

use super::machine::{Machine, Member};
use super::ops::Op;
use super::{App, AppError, Caller};

/// One thing a caller may ask of one machine (see the module docs).
pub trait Operation: Sized + Send + Sync {
    /// What the operation answers.
    type Output: Send;

    /// Its entry in the registry: the tier it requires, the capability a member may decline.
    fn op(&self) -> Op;

    /// Checks what was asked, the way every machine does — against this machine's own rules too,
    /// such as its `[phone]` settings — before anything runs or is relayed (no I/O: bad input
    /// costs no round trip).
    fn validate(&self, app: &App) -> Result<(), AppError>;

    /// The relay request that asks a member for it (an operation that runs only on its own
    /// machine refuses here).
    fn relay(&self) -> Result<RelayKind, AppError>;

    /// What a member's operation learns from the member before it is relayed, and the request
    /// rebuilt from it (a tap on a member's card is checked against the card as this machine
    /// showed it, and relayed with the member's own hash); most need nothing.
    fn prepare(
        &mut self,
        _app: &App,
        _caller: &Caller,
        _member: &Member,
    ) -> impl Future<Output = Result<Option<RelayKind>, AppError>> + Send {
        async { Ok(None) }
    }

    /// The tier the caller must keep holding until the operation is done (SPEC §3.2: lost
    /// mid-way, it ends and answers why); `None`: checked once, when it starts.
    fn holds(&self) -> Option<Tier> {
        None
    }

    /// A member's answer, read as this operation's output and named as this machine names it (a
    /// member's pane under the member's name, masked again).
    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<Self::Output, AppError>;

    /// What a member's relay server answers for `out` (the inverse of [`Operation::answer`]).
    fn reply(out: Self::Output) -> Result<RelayOk, AppError>;

    /// How long a member may work on it before it answers (a tool's own time limit); `None`:
    /// the relay's usual deadline.
    fn works(&self) -> Option<Duration> {
        None
    }

    /// The audit line of what happened: the same line on every machine (`None`: a read). This
    /// machine's own line is written by [`Operation::local`] at the moment §7 names; the runner
    /// writes it for a member's write once the member answered.
    fn record(&self, app: &App, caller: &Caller, out: &Self::Output) -> Option<AuditRecord>;

    /// A second line a write leaves once it is done, naming where it landed (an upload's path
    /// and blob). Its loss is logged, never a refusal: the write happened.
    fn outcome(&self, _app: &App, _caller: &Caller, _out: &Self::Output) -> Option<AuditRecord> {
        None
    }

    /// Runs it on this machine, writing its line ([`Operation::record`]) when §7 says.
    fn local(
        self,
        app: &App,
        caller: &Caller,
    ) -> impl Future<Output = Result<Self::Output, AppError>> + Send;

    /// The write that takes `out` back on the member when this machine cannot write its line
    /// (`None`: it cannot be taken back — a keystroke was typed — and the member's own line tells).
    fn undo(_out: &Self::Output) -> Option<RelayKind> {
        None
    }
}

/// This machine's line of what `member` did: named by the member, as its `machine` and in the
/// details (decision 0052).
fn on_member(mut rec: AuditRecord, member: &Member) -> AuditRecord {
    rec.machine = member.name().to_owned();
    rec.with_detail("machine", member.name().to_owned())
}

/// What the machines of the crew answered to one read ([`App::run_everywhere`]).
pub struct Gathered<T> {
    /// This machine's answer.
    pub here: T,
    /// Each online member's that declared the read, by name, or why it is missing.
    pub members: Vec<(String, Result<T, AppError>)>,
}

impl App {
    /// Runs read `op` for `caller` on this machine and on every online member that declared it,
    /// all at once: the crew's panes, cards, durable agents. Authorized and validated once, here;
    /// each member's answer read as [`Operation::answer`] reads it (named and masked again here).
    pub async fn run_everywhere<O: Operation + Clone>(
        &self,
        caller: &Caller,
        op: O,
    ) -> Result<Gathered<O::Output>, AppError> {
        self.authorize(caller, op.op())?;
        op.validate(self)?;
        let kind = op.relay()?;
        let members: Vec<Member> = self
            .members_for(caller)
            .into_iter()
            .filter(|m| m.allows(&kind).is_ok())
            .collect();
        let asked = members.iter().map(|m| {
            let (op, kind) = (&op, kind.clone());
            async move {
                let answer = match m.call(caller.on(), kind).await {
                    Ok(ok) => op.answer(self, m, ok),
                    Err(e) => Err(e.into()),
                };
                (m.name().to_owned(), answer)
            }
        });
        let (here, members) = tokio::join!(op.clone().local(self, caller), join_all(asked));
        Ok(Gathered {
            here: here?,
            members,
        })
    }

    /// Runs `op` for `caller` on `machine` (see the module docs for the order).
    pub async fn run<O: Operation>(
        &self,
        caller: &Caller,
        machine: &str,
        op: O,
    ) -> Result<O::Output, AppError> {
        match op.holds() {
            Some(tier) => {
                self.while_allowed(caller, tier, self.run_once(caller, machine, op))
                    .await
            }
            None => self.run_once(caller, machine, op).await,
        }
    }

    /// [`App::run`], the right checked once.
    async fn run_once<O: Operation>(
        &self,
        caller: &Caller,
        machine: &str,
        mut op: O,
    ) -> Result<O::Output, AppError> {
        self.authorize(caller, op.op())?;
        match self.machine_for(caller, machine)? {
            Machine::Local => {
                op.validate(self)?;
                op.local(self, caller).await
            }
            Machine::Member(member) => {
                let kind = op.relay()?;
                member.allows(&kind)?;
                op.validate(self)?;
                let kind = op.prepare(self, caller, &member).await?.unwrap_or(kind);
                let ok = self.relay_write(caller, &member, kind, op.works()).await?;
                let out = op.answer(self, &member, ok)?;
                if let Some(rec) = op.record(self, caller, &out) {
                    let rec = on_member(rec, &member);
                    self.audit_member_write(caller, &member, rec, O::undo(&out))
                        .await?;
                }
                if let Some(done) = op.outcome(self, caller, &out) {
                    if let Err(e) = self.audit_done(on_member(done, &member)).await {
                        tracing::error!(error = %e, operation = ?op.op(), "cannot audit a member's write's outcome");
                    }
                }
                Ok(out)
            }
        }
    }

    /// This machine's line of a write `member` answered it did. A write that can be taken back
    /// (`undo`) is taken back when the line cannot be written, as a write here would have been
    /// refused; one that cannot (a keystroke) has its line kept until the log can take it
    /// ([`App::audit_done`]).
    async fn audit_member_write(
        &self,
        caller: &Caller,
        member: &Member,
        rec: AuditRecord,
        undo: Option<RelayKind>,
    ) -> Result<(), AppError> {
        let Some(undo) = undo else {
            return self.audit_done(rec).await;
        };
        if let Err(e) = self.audit(rec).await {
            tracing::error!(
                member = member.name(),
                request_id = caller.request_id(),
                "a member's write could not be audited here; taking it back on the member"
            );
            let _ = member.call(caller.on(), undo).await;
            return Err(e);
        }
        Ok(())
    }

    /// Relays write `kind` to `member` and answers what the member answered. A refusal at a cap
    /// is audited `resource.denied` here too (naming the member), as a local one is; any other
    /// refusal leaves no line here — the member wrote what it did, if anything.
    pub(super) async fn relay_write(
        &self,
        caller: &Caller,
        member: &Member,
        kind: RelayKind,
        works: Option<Duration>,
    ) -> Result<RelayOk, AppError> {
        let answer = match works {
            Some(works) => member.call_working(caller.on(), kind, works).await,
            None => member.call(caller.on(), kind).await,
        };
        match answer {
            Ok(answer) => Ok(answer),
            Err(RelayError::ResourceLimit) => {
                let rec = caller
                    .record(self, AuditEventKind::ResourceDenied)
                    .with_detail("reason", "member limit");
                let rec = on_member(rec, member);
                // Refused either way; an unwritable log only loses the line.
                let _ = self.audit(rec).await;
                Err(AppError::ResourceLimit)
            }
            Err(e) => Err(e.into()),
        }
    }
}
