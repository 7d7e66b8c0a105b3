//! The Audit actor: sole writer of `<state>/audit.log` and keeper of what the store vouches for
//! about it (SPEC §7).
//!
//! **Who sends what.** Everyone who performs a write sends `Append` first and performs the write
//! only after an `Ok`: when the line cannot be appended (full disk, a directory in the log's place,
//! a log that changed under the bridge) the answer is an error and the write is refused (`503 audit
//! unavailable`). A revocation sends `AppendOrKeep` instead: it always takes effect, so a line the
//! log refuses is kept in the store and appended as soon as the log is writable. Refusals are sent
//! as `Denied` (no answer) and written at most once a minute per source and reason
//! ([`DenialLimiter`]). The CLI asks for the `Status` (to verify the file against it) and sends
//! `Acknowledge` for a recorded break.
//!
//! **Group commit.** An `Append` joins the batch and the actor sends itself a `Commit`, which
//! queues behind the appends already waiting; the commit writes the whole batch (at most
//! [`MAX_BATCH`] lines) with one store write and one `fdatasync`, then answers every writer. Alone,
//! a line costs what it did; under load, many writers share the two syncs. Every other message
//! commits the batch first, so the log's order is the order messages arrived in.
//!
//! **Each batch.** The store records the batch as pending (the [`Anchor`]: its last line, and its
//! earlier ones) before the lines are appended, so whatever the file ends with after a crash is
//! the last line, or a line of the pending batch — anything else is a break. When the bridge starts, or an append finds the file not the
//! length it left it, the actor compares the file's end with the anchor ([`anchor::decide`]); a
//! break is recorded in the store with what was expected and what was found, and an `audit.break`
//! line, kept in the store first, becomes the first line of the continued chain. Nothing removes
//! a break; only `Acknowledge` marks it seen.
//!
//! **When it fails.** If the store cannot be read at start the actor fails to start, and the
//! supervisor retries; the request path then gets `restarting, try again`. A restarted actor reads
//! the anchor and the file again, exactly as at start.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

use super::anchor::{self, Anchor, Break, Pending, Verdict};
use super::denials::{Denial, DenialLimiter};
use super::stored::{self, Acknowledgment, BreakRecord, KeptLine};
use super::RenderedLine;
use super::{
    examine, AuditError, AuditEventKind, AuditLog, AuditRecord, ChainTail, ContentMode, Mask,
};
use crate::machine::MachineName;
use crate::store::{Change, Store, Table};

/// How often kept lines are retried, finished denial windows written and a lazily written
/// confirmation flushed — while there is any of these to do; otherwise no timer runs.
pub const TICK: Duration = Duration::from_secs(2);

/// The most lines one commit writes (and the anchor names as pending).
pub const MAX_BATCH: usize = 64;

/// The actor.
pub struct AuditActor;

/// Start-up arguments.
#[derive(Clone)]
pub struct AuditArgs {
    /// `<state>/audit.log`.
    pub path: PathBuf,
    /// Where the anchor, breaks and kept lines live.
    pub store: Store,
    /// COLLIE_AUDIT_CONTENT.
    pub mode: ContentMode,
    /// The redactor's mask (audit lines pass it).
    pub mask: Mask,
    /// This machine's name, for the lines the actor writes itself.
    pub machine: MachineName,
    /// The number of recorded breaks nobody acknowledged yet, published for `/api/health`.
    pub open_breaks: Arc<AtomicU64>,
    /// The log's last line, published after every message (a member sends it to its lead to
    /// witness, [`super::witness`]).
    pub head: Arc<watch::Sender<Option<ChainTail>>>,
}

/// What became of an `AppendOrKeep` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// It is in the log.
    Appended(ChainTail),
    /// The log refused it; it is in the store and will be appended when the log can be written.
    Kept,
}

/// The log as the actor knows it, for `collie audit verify`: the file's first `len` bytes must
/// end where `anchor` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditStatus {
    /// What the store vouches for (as this actor left it).
    pub anchor: Anchor,
    /// The file's length after the last append, if known.
    pub len: Option<u64>,
    /// Every recorded break, oldest first.
    pub breaks: Vec<BreakRecord>,
    /// Lines kept while the log could not be written, not yet appended.
    pub kept: usize,
}

/// Messages the audit actor accepts.
#[derive(Debug)]
#[non_exhaustive]
pub enum AuditMsg {
    /// Append one line; the reply says whether it is on disk.
    Append(AuditRecord, RpcReplyPort<Result<ChainTail, AuditError>>),
    /// Append one line, or keep it in the store if the log refuses it (a revocation).
    AppendOrKeep(AuditRecord, RpcReplyPort<Result<Kept, AuditError>>),
    /// A refusal, written as `security.denied` at most once a minute per source and reason.
    Denied(Box<Denial>),
    /// The log's state, for `collie audit verify` and `collie doctor`.
    Status(RpcReplyPort<AuditStatus>),
    /// Mark a recorded break acknowledged (audited as `audit.acknowledged`).
    Acknowledge {
        /// The break's `seq`.
        seq: u64,
        /// Who asks (`cli`).
        by: String,
        /// The acknowledged record.
        reply: RpcReplyPort<Result<BreakRecord, AuditError>>,
    },
    /// Retry kept lines and write finished denial windows (the actor's own timer).
    Tick,
    /// Write the batch of `Append`s and answer them (sent by the actor to itself).
    Commit,
}

/// An `Append` waiting for the batch's commit.
struct Waiting {
    record: AuditRecord,
    ts: OffsetDateTime,
    reply: RpcReplyPort<Result<ChainTail, AuditError>>,
}

/// The actor's state.
pub struct AuditState {
    args: AuditArgs,
    log: AuditLog,
    /// What the store holds.
    anchor: Anchor,
    breaks: Vec<BreakRecord>,
    /// Lines waiting to be appended, in order, with their store keys.
    kept: Vec<(String, KeptLine)>,
    /// Kept lines found in the log at start, removed from the store with the next anchor.
    forget: Vec<String>,
    denials: DenialLimiter,
    /// A confirmation was written to the store but not flushed yet.
    unflushed: bool,
    /// Appends waiting for the next commit, oldest first.
    batch: Vec<Waiting>,
    /// Whether a [`AuditMsg::Commit`] is already in the mailbox.
    commit_queued: bool,
    /// The timer, while there is work for it ([`AuditState::wants_tick`]); aborted with the
    /// state.
    tick: Option<AbortOnDropHandle<()>>,
}

fn store_err(e: impl std::fmt::Display) -> AuditError {
    AuditError::Store(e.to_string())
}

/// When a break was seen or acknowledged: RFC 3339 to the second.
fn break_time(t: OffsetDateTime) -> String {
    crate::rfc3339::format(t.replace_nanosecond(0).unwrap_or(t)).unwrap_or_default()
}

fn nanos(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos()).unwrap_or(0)
}

impl Actor for AuditActor {
    type Msg = AuditMsg;
    type State = AuditState;
    type Arguments = AuditArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: AuditArgs,
    ) -> Result<AuditState, ActorProcessingErr> {
        let anchor = stored::load_anchor(&args.store)?;
        let breaks = stored::load_breaks(&args.store)?;
        let kept = stored::load_kept(&args.store)?;
        let found = examine(&args.path)?;
        let verdict = anchor::decide(&anchor, &found, None);
        let from = match &verdict {
            Verdict::Continue { from, .. } => from.clone(),
            Verdict::Break(b) => b.from.clone(),
        };
        let log = AuditLog::file(
            &args.path,
            from,
            found.len,
            args.mode,
            Arc::clone(&args.mask),
        );
        let mut state = AuditState {
            args,
            log,
            anchor,
            breaks,
            kept,
            forget: Vec::new(),
            denials: DenialLimiter::new(),
            unflushed: false,
            batch: Vec::new(),
            commit_queued: false,
            tick: None,
        };
        match verdict {
            Verdict::Continue {
                written_kept: Some(key),
                ..
            } => {
                state.kept.retain(|(k, _)| *k != key);
                state.forget.push(key);
            }
            Verdict::Continue { .. } => {}
            Verdict::Break(b) => state.record_break(b, OffsetDateTime::now_utc())?,
        }
        state.publish_open_breaks();
        if let Err(e) = state.drain() {
            tracing::error!(error = %e, kept = state.kept.len(), "audit log not writable; lines are kept in the store");
        }
        state.arm_tick(&myself);
        state.publish_head();
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: AuditMsg,
        state: &mut AuditState,
    ) -> Result<(), ActorProcessingErr> {
        let now = OffsetDateTime::now_utc();
        match msg {
            AuditMsg::Append(record, reply) => state.enqueue(
                &myself,
                Waiting {
                    record,
                    ts: now,
                    reply,
                },
            ),
            AuditMsg::Commit => {
                state.commit_queued = false;
                state.commit();
            }
            other => {
                // Whatever arrived after the batch's appends comes after their lines.
                state.commit();
                state.handle_in_order(other, now);
            }
        }
        state.arm_tick(&myself);
        state.publish_head();
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut AuditState,
    ) -> Result<(), ActorProcessingErr> {
        // Appends still waiting get their lines and their answers.
        state.commit();
        // Refusals counted since their last line are written, not lost.
        let now = OffsetDateTime::now_utc();
        for rec in state.denials.flush_all() {
            state.append_best_effort(&rec, now);
        }
        // The last line's confirmation reaches the disk with the bridge's clean exit.
        if let Err(e) = state.args.store.flush() {
            tracing::warn!(error = %e, "cannot flush the store");
        }
        Ok(())
    }
}

impl AuditState {
    /// Whether the timer has work: a confirmation to flush, kept lines to retry, or denial
    /// windows still open.
    fn wants_tick(&self) -> bool {
        self.unflushed || !self.kept.is_empty() || !self.denials.is_empty()
    }

    /// Starts the timer when there is work for it and stops it when there is none, so an idle
    /// bridge's log wakes nothing.
    fn arm_tick(&mut self, myself: &ActorRef<AuditMsg>) {
        match (self.wants_tick(), self.tick.is_some()) {
            (true, false) => {
                let tick = myself.send_interval(TICK, || AuditMsg::Tick);
                self.tick = Some(AbortOnDropHandle::new(tick));
            }
            (false, true) => self.tick = None,
            _ => {}
        }
    }

    /// An `Append` joins the batch; the batch is committed when it is full, or by the
    /// [`AuditMsg::Commit`] queued behind the appends already waiting.
    fn enqueue(&mut self, myself: &ActorRef<AuditMsg>, waiting: Waiting) {
        self.batch.push(waiting);
        if self.batch.len() >= MAX_BATCH {
            self.commit();
        } else if !self.commit_queued {
            self.commit_queued = myself.cast(AuditMsg::Commit).is_ok();
            if !self.commit_queued {
                self.commit();
            }
        }
    }

    /// Every message but `Append` and `Commit` (which `handle` batches), once the batch before it
    /// is committed. An `Append` arriving here anyway is written at once.
    fn handle_in_order(&mut self, msg: AuditMsg, now: OffsetDateTime) {
        match msg {
            AuditMsg::Append(record, reply) => {
                let _ = reply.send(self.append(&record, now));
            }
            AuditMsg::Commit => self.commit(),
            AuditMsg::AppendOrKeep(rec, reply) => {
                let _ = reply.send(self.append_or_keep(&rec, now));
            }
            AuditMsg::Denied(denial) => {
                if let Some(rec) = self.denials.admit(*denial, now.unix_timestamp()) {
                    self.append_best_effort(&rec, now);
                }
            }
            AuditMsg::Status(reply) => {
                let _ = reply.send(self.status());
            }
            AuditMsg::Acknowledge { seq, by, reply } => {
                let _ = reply.send(self.acknowledge(seq, by, now));
            }
            AuditMsg::Tick => {
                // A confirmation waits for the disk at most one tick (sled may flush sooner).
                if std::mem::take(&mut self.unflushed) {
                    if let Err(e) = self.args.store.flush() {
                        tracing::warn!(error = %e, "cannot flush the store");
                    }
                }
                if !self.kept.is_empty() {
                    if let Err(e) = self.drain() {
                        tracing::debug!(error = %e, "kept audit lines still wait");
                    }
                }
                for rec in self.denials.flush(now.unix_timestamp()) {
                    self.append_best_effort(&rec, now);
                }
            }
        }
    }

    fn machine(&self) -> String {
        self.args.machine.get()
    }

    /// Publishes the log's last line, when it moved.
    fn publish_head(&self) {
        let head = self.log.tail();
        self.args.head.send_if_modified(|h| {
            let moved = *h != head;
            if moved {
                h.clone_from(&head);
            }
            moved
        });
    }

    fn publish_open_breaks(&self) {
        let open = self
            .breaks
            .iter()
            .filter(|b| b.acknowledged.is_none())
            .count();
        self.args
            .open_breaks
            .store(u64::try_from(open).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The anchor as the in-memory chain has it (the store may still name a line in flight that
    /// was written since).
    fn status(&self) -> AuditStatus {
        AuditStatus {
            anchor: Anchor {
                last: self.log.tail(),
                pending: None,
            },
            len: self.log.file_len(),
            breaks: self.breaks.clone(),
            kept: self.kept.len(),
        }
    }

    /// Writes the store's batch: the anchor, the given changes, and the removal of kept lines now
    /// in the log.
    fn store_anchor(&mut self, anchor: Anchor, mut changes: Vec<Change>) -> Result<(), AuditError> {
        changes.push(stored::anchor_change(&anchor).map_err(store_err)?);
        changes.extend(self.forget.iter().cloned().map(Change::Remove));
        self.args
            .store
            .apply(Table::Audit, &changes)
            .map_err(store_err)?;
        self.forget.clear();
        self.anchor = anchor;
        self.unflushed = false;
        Ok(())
    }

    /// Records a break: in the store, the break, its `audit.break` line (kept, so it is written
    /// first and never lost) and the new anchor, in one batch; then the chain continues from the
    /// file's last whole record.
    fn record_break(&mut self, b: Break, now: OffsetDateTime) -> Result<(), AuditError> {
        tracing::error!(
            seq = b.seq,
            expected = %b.expected.describe(),
            found = %b.found,
            "the audit log does not end where the store says: break recorded; run `collie audit verify`"
        );
        let record = BreakRecord {
            seq: b.seq,
            expected: b.expected.clone(),
            found: b.found.clone(),
            from: b.from.clone(),
            at: break_time(now),
            acknowledged: None,
        };
        let line = KeptLine {
            record: AuditRecord::new(AuditEventKind::AuditBreak, self.machine())
                .with_detail("expected", b.expected.describe())
                .with_detail("expected_seq", b.expected.max_seq())
                .with_detail("found", b.found.clone()),
            ts_nanos: nanos(now),
            skip_to: Some(b.seq),
        };
        let key = stored::kept_key(now);
        let changes = vec![
            stored::break_change(&record).map_err(store_err)?,
            stored::kept_change(&key, &line).map_err(store_err)?,
        ];
        let found = examine(&self.args.path)?;
        self.store_anchor(
            Anchor {
                last: b.from.clone(),
                pending: None,
            },
            changes,
        )?;
        self.log.resume(b.from, found.len);
        self.breaks.push(record);
        self.kept.insert(0, (key, line));
        self.publish_open_breaks();
        Ok(())
    }

    /// Appends one line: the store names it pending, then the file gets it. A file that changed
    /// under the bridge is recorded as a break first; the line then follows the `audit.break` line.
    fn write_line(
        &mut self,
        rec: &AuditRecord,
        ts: OffsetDateTime,
        skip_to: Option<u64>,
        kept: Option<&str>,
    ) -> Result<ChainTail, AuditError> {
        let line = self.log.render(rec, ts, skip_to)?;
        let anchor = Anchor {
            last: self.log.tail(),
            pending: Some(Pending {
                line: line.tail(),
                kept: kept.map(str::to_owned),
                earlier: Vec::new(),
            }),
        };
        self.store_anchor(anchor, Vec::new())?;
        let tail = self.log.write(&line)?;
        self.confirm(&tail, kept)?;
        Ok(tail)
    }

    /// The line `tail` is on disk: the store now vouches for it alone. Not flushed here — the
    /// next line's pending record is, and so is a clean shutdown; a crash that loses this leaves
    /// the line in flight, which is what it was.
    fn confirm(&mut self, tail: &ChainTail, kept: Option<&str>) -> Result<(), AuditError> {
        let confirmed = Anchor {
            last: Some(tail.clone()),
            pending: None,
        };
        let mut changes = vec![stored::anchor_change(&confirmed).map_err(store_err)?];
        changes.extend(kept.map(|k| Change::Remove(k.to_owned())));
        match self.args.store.apply_lazy(Table::Audit, &changes) {
            Ok(()) => {
                self.anchor = confirmed;
                self.unflushed = true;
            }
            Err(e) => tracing::warn!(error = %e, "cannot confirm an audit line in the store"),
        }
        Ok(())
    }

    /// Writes the waiting appends and answers each writer.
    fn commit(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        let answers = self.append_batch(&batch);
        for (waiting, answer) in batch.into_iter().zip(answers) {
            let _ = waiting.reply.send(answer);
        }
    }

    /// [`Self::append`] for a batch: kept lines first, then the batch; a file that changed under
    /// the bridge is recorded as a break and the batch follows the `audit.break` line. One
    /// answer per line, in order.
    fn append_batch(&mut self, batch: &[Waiting]) -> Vec<Result<ChainTail, AuditError>> {
        let each = |e: AuditError| batch.iter().map(|_| Err(e.duplicate())).collect();
        if let Err(e) = self.drain() {
            return each(e);
        }
        match self.write_batch(batch) {
            Ok(answers) => answers,
            Err(AuditError::Changed { expected, found }) => {
                if let Err(e) = self.changed(expected, found).and_then(|()| self.drain()) {
                    return each(e);
                }
                self.write_batch(batch).unwrap_or_else(each)
            }
            Err(e) => each(e),
        }
    }

    /// The batch's lines: named pending in the store, appended with one sync, confirmed. A line
    /// too long to write is refused alone.
    fn write_batch(
        &mut self,
        batch: &[Waiting],
    ) -> Result<Vec<Result<ChainTail, AuditError>>, AuditError> {
        let rendered = self
            .log
            .render_batch(batch.iter().map(|w| (&w.record, w.ts)));
        let lines: Vec<RenderedLine> = rendered
            .iter()
            .filter_map(|r| r.as_ref().ok().cloned())
            .collect();
        if let Some((last, earlier)) = lines.split_last() {
            let anchor = Anchor {
                last: self.log.tail(),
                pending: Some(Pending {
                    line: last.tail(),
                    kept: None,
                    earlier: earlier.iter().map(RenderedLine::tail).collect(),
                }),
            };
            self.store_anchor(anchor, Vec::new())?;
            self.log.write_batch(&lines)?;
            self.confirm(&last.tail(), None)?;
        }
        Ok(rendered
            .into_iter()
            .map(|r| r.map(|line| line.tail()))
            .collect())
    }

    /// Appends every kept line, in order; stops at the first the log refuses.
    fn drain(&mut self) -> Result<(), AuditError> {
        while let Some((key, line)) = self.kept.first().cloned() {
            match self.write_line(&line.record, line.ts(), line.skip_to, Some(&key)) {
                Ok(_) => {
                    self.kept.remove(0);
                }
                Err(AuditError::Changed { expected, found }) => self.changed(expected, found)?,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The file is not the length this bridge left it: record what it holds as a break.
    fn changed(&mut self, expected: u64, found: u64) -> Result<(), AuditError> {
        let examined = examine(&self.args.path)?;
        let vouched = Anchor {
            last: self.log.tail(),
            pending: None,
        };
        let why = format!("audit.log was {expected} bytes and is now {found} while the bridge ran");
        match anchor::decide(&vouched, &examined, Some(&why)) {
            Verdict::Break(b) => self.record_break(b, OffsetDateTime::now_utc()),
            // `decide` always sees a break when told the file changed; continue if it did not.
            Verdict::Continue { from, .. } => {
                self.log.resume(from, examined.len);
                Ok(())
            }
        }
    }

    fn append(&mut self, rec: &AuditRecord, now: OffsetDateTime) -> Result<ChainTail, AuditError> {
        self.drain()?;
        match self.write_line(rec, now, None, None) {
            Err(AuditError::Changed { expected, found }) => {
                self.changed(expected, found)?;
                self.drain()?;
                self.write_line(rec, now, None, None)
            }
            other => other,
        }
    }

    fn append_or_keep(
        &mut self,
        rec: &AuditRecord,
        now: OffsetDateTime,
    ) -> Result<Kept, AuditError> {
        match self.append(rec, now) {
            Ok(tail) => Ok(Kept::Appended(tail)),
            Err(e) => {
                tracing::error!(error = %e, event = %rec.event, "audit log refused a line that must not be lost; kept in the store");
                let key = stored::keep(&self.args.store, rec, now).map_err(store_err)?;
                self.kept.push((
                    key,
                    KeptLine {
                        record: rec.clone(),
                        ts_nanos: nanos(now),
                        skip_to: None,
                    },
                ));
                Ok(Kept::Kept)
            }
        }
    }

    fn append_best_effort(&mut self, rec: &AuditRecord, now: OffsetDateTime) {
        if let Err(e) = self.append(rec, now) {
            tracing::warn!(error = %e, event = %rec.event, "could not audit a refusal");
        }
    }

    fn acknowledge(
        &mut self,
        seq: u64,
        by: String,
        now: OffsetDateTime,
    ) -> Result<BreakRecord, AuditError> {
        let index = self
            .breaks
            .iter()
            .position(|b| b.seq == seq)
            .ok_or(AuditError::NoSuchBreak(seq))?;
        if self.breaks[index].acknowledged.is_some() {
            return Ok(self.breaks[index].clone());
        }
        let rec = AuditRecord::new(AuditEventKind::AuditAcknowledged, self.machine())
            .with_detail("break_seq", seq)
            .with_detail("found", self.breaks[index].found.clone())
            .with_detail("via", by.clone());
        self.append(&rec, now)?;
        let mut record = self.breaks[index].clone();
        record.acknowledged = Some(Acknowledgment {
            at: break_time(now),
            by,
        });
        let change = stored::break_change(&record).map_err(store_err)?;
        self.args
            .store
            .apply(Table::Audit, &[change])
            .map_err(store_err)?;
        self.breaks[index] = record.clone();
        self.publish_open_breaks();
        Ok(record)
    }
}

#[cfg(test)]
mod tests;
