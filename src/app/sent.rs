//! The sent log (SPEC §11, seed 002): the shell lines this machine's devices send, kept in
//! `<state>/sent.jsonl` so the phone can find one again and re-send it — recorded, listed,
//! discarded, cleared.
//!
//! **What is recorded.** A device's input to a pane whose foreground is a shell at its prompt
//! (the foreground read from `/proc` just before the text is typed, the way walky tells a prompt:
//! a hosted pane and a tmux pane alike; a pane whose foreground cannot be read is not recorded),
//! split into lines by [`collie_actors::sent::lines`], and every one-shot command. Each line
//! passes [`collie_actors::sent::rules`] first; a line they refuse leaves nothing — no entry, no
//! count, no log line with its text. `COLLIE_SENT=off` records nothing at all.
//!
//! **Custody.** One writer at a time: [`Sent`] holds the files' paths behind one lock, and the
//! file work runs off the async threads. The file is the truth (it is read for each list and
//! edit, so `collie sent` editing it while the bridge is stopped is seen at the next request);
//! only the next id is remembered, so a discarded number is never handed out again while the
//! bridge runs.
//!
//! **Discarding** one line or a whole machine's works with `COLLIE_SENT=off` too, is audited
//! `sent.discard` with a count (never the line) before the file is rewritten, and is refused
//! (503 `audit unavailable`) when that line cannot be written.
//!
//! **A member's log** is read and edited through the lead (capability `sent`, decision 0036): the
//! lead asks every online member at once and masks their lines again, and the member answers with
//! the list its own callers get ([`App::sent_list`], its own lines only); a discard is gated on the
//! lead, counted, audited and done by the member as for its own caller, then audited on the lead
//! (with the member's name and count) once the member answered (decision 0052).

use std::path::{Path, PathBuf};

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::redact::Masker;
use collie_actors::rfc3339;
use collie_actors::sent::entry::{self, Entry};
use collie_actors::sent::{file, rules, SentError, RECENT_FILE, SENT_FILE};
use collie_crew::relay::{RelayKind, RelayOk, SentEntry, SentLines};
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio::sync::Mutex;

use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::{App, AppError, Caller};

/// The sent log's and the recent commands' custody, and the two settings that govern them.
pub struct Sent {
    /// `<state>/sent.jsonl`.
    log: PathBuf,
    /// `<state>/commands-recent.json`.
    recent: PathBuf,
    /// `COLLIE_SENT`: whether lines are recorded at all.
    keep: bool,
    /// `[phone] run`: whether a `full` device may run one-shot commands.
    run: bool,
    /// A masker that is always on: the rules' "matches a masking shape" holds even where
    /// `COLLIE_REDACT=off` leaves screens unmasked.
    shapes: Masker,
    /// Held for every read-modify-write of either file; holds the next id once it is known.
    lock: Mutex<Option<u64>>,
}

impl Sent {
    /// The custody of the files in `state_dir`.
    pub fn new(state_dir: &Path, keep: bool, run: bool) -> Sent {
        Sent {
            log: state_dir.join(SENT_FILE),
            recent: state_dir.join(RECENT_FILE),
            keep,
            run,
            shapes: Masker::new(true),
            lock: Mutex::new(None),
        }
    }

    /// Whether `COLLIE_SENT` is on.
    pub fn keeps(&self) -> bool {
        self.keep
    }

    /// Whether `[phone] run` is on.
    pub fn runs(&self) -> bool {
        self.run
    }

    /// Whether `line` may be kept (in the log, or in the recent commands).
    pub(super) fn may_keep(&self, line: &str) -> bool {
        rules::check(line, &self.shapes).is_ok()
    }

    /// The recent commands' file.
    pub(super) fn recent_path(&self) -> &Path {
        &self.recent
    }

    /// The lock every edit of either file holds.
    pub(super) fn lock(&self) -> &Mutex<Option<u64>> {
        &self.lock
    }
}

/// Runs blocking file work off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, SentError> + Send + 'static,
) -> Result<T, AppError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(AppError::backend("sent log", e)),
        Err(e) => Err(AppError::backend("sent log", e)),
    }
}

/// One line as `GET /api/sent` and `collie sent list` show it (masked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentLine {
    /// The machine whose shell it went to.
    pub machine: String,
    /// Its number there (what a discard names).
    pub id: u64,
    /// When (RFC 3339).
    pub ts: String,
    /// The pane id, or `command` for a one-shot command.
    pub pane: String,
    /// The line, masked.
    pub line: String,
}

impl SentLine {
    /// The log's entries as the phone and the CLI list them: newest first, each line masked.
    pub fn newest_first(entries: Vec<Entry>, masker: &Masker) -> Vec<SentLine> {
        entries
            .into_iter()
            .rev()
            .map(|e| SentLine {
                machine: e.machine,
                id: e.id,
                ts: e.ts,
                pane: e.pane,
                line: masker.mask_string(e.line),
            })
            .collect()
    }
}

/// `GET /api/sent`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentList {
    /// Whether this machine records lines (`COLLIE_SENT`).
    pub recording: bool,
    /// Every machine's lines, newest first.
    pub lines: Vec<SentLine>,
    /// Crew members whose lines are not in `lines` (offline, older, or not answering in time).
    pub unavailable: Vec<String>,
}

/// One machine's sent log as [`ListSent`] answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineSent {
    /// Whether the machine records lines (its own `COLLIE_SENT`).
    pub recording: bool,
    /// Its lines, newest first, masked.
    pub lines: Vec<SentLine>,
}

/// A machine's sent log; a member's named by the member and masked again here.
#[derive(Debug, Clone, Copy)]
pub struct ListSent;

impl Operation for ListSent {
    type Output = MachineSent;

    fn op(&self) -> Op {
        Op::SentList
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::SentList)
    }

    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<MachineSent, AppError> {
        let RelayOk::SentLines(theirs) = ok else {
            return Err(AppError::MemberUnreadable);
        };
        let lines = theirs
            .lines
            .into_iter()
            .map(|e| SentLine {
                machine: member.name().to_owned(),
                id: e.id,
                ts: e.ts,
                pane: app.core.masker.mask_string(e.pane),
                line: app.core.masker.mask_string(e.line),
            })
            .collect();
        Ok(MachineSent {
            recording: theirs.recording,
            lines,
        })
    }

    fn reply(out: MachineSent) -> Result<RelayOk, AppError> {
        let lines = out
            .lines
            .into_iter()
            .map(|l| SentEntry {
                id: l.id,
                ts: l.ts,
                pane: l.pane,
                line: l.line,
            })
            .collect();
        Ok(RelayOk::SentLines(SentLines {
            recording: out.recording,
            lines,
        }))
    }

    fn record(&self, _: &App, _: &Caller, _: &MachineSent) -> Option<AuditRecord> {
        None
    }

    async fn local(self, app: &App, _: &Caller) -> Result<MachineSent, AppError> {
        Ok(MachineSent {
            recording: app.panes.sent.keep,
            lines: app.local_sent().await?,
        })
    }
}

/// What a discard did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Discarded {
    /// The machine.
    pub machine: String,
    /// How many lines went.
    pub discarded: usize,
}

impl App {
    /// The sent log's custody.
    pub fn sent(&self) -> &Sent {
        &self.panes.sent
    }

    /// Records the lines of an input that went to `pane` while its shell was at its prompt; each
    /// line that passes the rules becomes an entry. Never fails the input: a log that cannot be
    /// written is logged (without the line) and the line is lost.
    pub(super) async fn record_sent(&self, pane: &str, lines: Vec<String>) {
        if !self.panes.sent.keep {
            return;
        }
        let lines: Vec<String> = lines
            .into_iter()
            .filter(|l| self.panes.sent.may_keep(l))
            .collect();
        if lines.is_empty() {
            return;
        }
        let mut next = self.panes.sent.lock.lock().await;
        let path = self.panes.sent.log.clone();
        let machine = self.machine_name();
        let pane = pane.to_owned();
        let known = *next;
        let wrote = blocking(move || {
            let mut entries = file::load_log(&path)?;
            let mut id = known.unwrap_or(0).max(entry::next_id(&entries));
            for line in lines {
                let e = Entry {
                    id,
                    ts: rfc3339::format(OffsetDateTime::now_utc()).unwrap_or_default(),
                    machine: machine.clone(),
                    pane: pane.clone(),
                    line,
                };
                file::append_log(&path, &e)?;
                entries.push(e);
                id += 1;
            }
            if entry::trim(&mut entries) > 0 {
                file::rewrite_log(&path, &entries)?;
            }
            Ok(id)
        })
        .await;
        match wrote {
            Ok(id) => *next = Some(id),
            Err(_) => tracing::warn!("a sent line could not be recorded (see the error above)"),
        }
    }

    /// Every machine's lines, newest first, masked: this machine's, and each online member's
    /// that declared the `sent` capability (asked at once, masked again here). A member that is
    /// offline, older or does not answer is listed under `unavailable`.
    pub async fn sent_list(&self, caller: &Caller) -> Result<SentList, AppError> {
        let gathered = self.run_everywhere(caller, ListSent).await?;
        let MachineSent {
            recording,
            mut lines,
        } = gathered.here;
        let mut fetched = Vec::new();
        for (member, answer) in gathered.members {
            match answer {
                Ok(theirs) => {
                    lines.extend(theirs.lines);
                    fetched.push(member);
                }
                Err(e) => tracing::info!(%member, error = %e, "member sent log missing"),
            }
        }
        // Newest first across machines, by the time each machine wrote (an unreadable time sorts
        // last); each machine's own order is kept for equal times.
        lines
            .sort_by_cached_key(|l| std::cmp::Reverse(OffsetDateTime::parse(&l.ts, &Rfc3339).ok()));
        let mut unavailable: Vec<String> = self
            .crew
            .view
            .load()
            .members
            .iter()
            .map(|m| m.name.clone())
            .filter(|m| !self.core.machine.is(m) && !fetched.contains(m))
            .collect();
        unavailable.sort();
        Ok(SentList {
            recording,
            lines,
            unavailable,
        })
    }

    /// This machine's lines, newest first, masked.
    async fn local_sent(&self) -> Result<Vec<SentLine>, AppError> {
        let path = self.panes.sent.log.clone();
        let entries = {
            let _held = self.panes.sent.lock.lock().await;
            blocking(move || file::load_log(&path)).await?
        };
        Ok(SentLine::newest_first(entries, &self.core.masker))
    }
}

/// Discards line `id` of a machine's sent log, or all of it when `id` is `None`: audited
/// `sent.discard` with the count first, then the file rewritten atomically ([`App::run`]).
#[derive(Debug, Clone, Copy)]
pub struct SentDiscard {
    /// The line; `None`: every line.
    pub id: Option<u64>,
}

impl Operation for SentDiscard {
    type Output = Discarded;

    fn op(&self) -> Op {
        if self.id.is_some() {
            Op::SentDiscard
        } else {
            Op::SentDiscardAll
        }
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(match self.id {
            Some(id) => RelayKind::SentDiscard { id },
            None => RelayKind::SentClear,
        })
    }

    fn answer(&self, _: &App, member: &Member, ok: RelayOk) -> Result<Discarded, AppError> {
        let RelayOk::Discarded(n) = ok else {
            return Err(AppError::MemberUnreadable);
        };
        Ok(Discarded {
            machine: member.name().to_owned(),
            discarded: usize::try_from(n).unwrap_or(usize::MAX),
        })
    }

    fn reply(out: Discarded) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Discarded(out.discarded as u64))
    }

    /// The count (the member's, for a member's log), the scope and the line.
    fn record(&self, app: &App, caller: &Caller, out: &Discarded) -> Option<AuditRecord> {
        let rec = caller
            .record(app, AuditEventKind::SentDiscard)
            .with_detail("count", out.discarded as u64)
            .with_detail("scope", if self.id.is_some() { "line" } else { "machine" });
        Some(match self.id {
            Some(id) => rec.with_detail("id", id),
            None => rec,
        })
    }

    async fn local(self, app: &App, caller: &Caller) -> Result<Discarded, AppError> {
        let mut next = app.panes.sent.lock.lock().await;
        let path = app.panes.sent.log.clone();
        let mut entries = blocking(move || file::load_log(&path)).await?;
        *next = Some(next.unwrap_or(0).max(entry::next_id(&entries)));
        let discarded = match self.id {
            Some(id) => entry::discard(&mut entries, id),
            None => std::mem::take(&mut entries).len(),
        };
        if self.id.is_some() && discarded == 0 {
            return Err(AppError::NoSuchLine);
        }
        let done = Discarded {
            machine: app.machine_name(),
            discarded,
        };
        if let Some(rec) = self.record(app, caller, &done) {
            app.audit(rec).await?;
        }
        let path = app.panes.sent.log.clone();
        blocking(move || file::rewrite_log(&path, &entries)).await?;
        Ok(done)
    }
}

impl App {
    /// The lines of an input the sent log would record for `pane`: none when `COLLIE_SENT=off`,
    /// when the input holds no line, or when the pane's foreground is not a shell at its prompt
    /// (or cannot be read — then nothing is recorded rather than a line an agent was sent).
    pub(super) async fn lines_for_shell(
        &self,
        pane: &str,
        text: &str,
        keys: &[collie_actors::panes::keys::NamedKey],
    ) -> Vec<String> {
        if !self.panes.sent.keep {
            return Vec::new();
        }
        let lines: Vec<String> = collie_actors::sent::lines::sent_lines(text, keys)
            .into_iter()
            .map(str::to_owned)
            .collect();
        if lines.is_empty() {
            return lines;
        }
        let pane = pane.to_owned();
        let foreground = self
            .panes
            .actor
            .call(|reply| collie_actors::panes::PanesMsg::Foreground { pane, reply })
            .await;
        match foreground {
            Ok(Ok(Some(names))) if collie_actors::panes::foreground::at_prompt(&names) => lines,
            _ => Vec::new(),
        }
    }
}
