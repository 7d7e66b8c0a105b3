//! A pane's chat (SPEC §3.3, §5): the turns of the Claude Code or Codex session running in it,
//! read from the transcript the agent writes (`collie_actors::chat`), for this machine's pane or
//! a member's alike. A read, under tier `read` like the screen; nothing is audited. A pane with
//! no agent answers `agent: null` and no turns.
//!
//! For a member's pane the lead relays [`RelayKind::Chat`] (capability `chat`; an older member
//! answers `capability missing`), and masks every text of the answer again with its own masker
//! (SPEC §6: the lead re-masks a member's chat), bounded as its own answers are.

use collie_actors::audit::AuditRecord;
use collie_actors::chat::{self, Chat, ChatError, MAX_ANSWER_BYTES, MAX_TURNS};
use collie_actors::panes::PanesMsg;
use collie_crew::relay::{RelayKind, RelayOk};

use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::{wire, App, AppError, Caller};

impl From<ChatError> for AppError {
    fn from(e: ChatError) -> Self {
        match e {
            ChatError::BadCursor => AppError::BadRequest("bad cursor".into()),
        }
    }
}

/// The chat of a pane after the cursor `after` (empty: the newest turns).
#[derive(Debug, Clone)]
pub struct ReadChat {
    /// The pane's id.
    pub pane: String,
    /// The cursor the phone holds.
    pub after: String,
}

impl Operation for ReadChat {
    type Output = Chat;

    fn op(&self) -> Op {
        Op::PaneChat
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        chat::parse_cursor(&self.after)
            .map(drop)
            .map_err(AppError::from)
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Chat {
            pane: self.pane.clone(),
            after: self.after.clone(),
        })
    }

    /// Masked again here, and bounded as this machine's own answers are.
    fn answer(&self, app: &App, _: &Member, ok: RelayOk) -> Result<Chat, AppError> {
        let RelayOk::Chat(chat) = ok else {
            return Err(AppError::MemberUnreadable);
        };
        let mut chat = wire::chat::chat_of(chat);
        app.remask(&mut chat);
        Ok(chat)
    }

    fn reply(out: Chat) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Chat(wire::chat::chat(out)))
    }

    fn record(&self, _: &App, _: &Caller, _: &Chat) -> Option<AuditRecord> {
        None
    }

    async fn local(self, app: &App, _: &Caller) -> Result<Chat, AppError> {
        app.local_chat(self.pane, self.after).await
    }
}

impl App {
    /// This machine's pane's chat: the pane's first process from the Panes actor, then the
    /// transcript read on a blocking thread.
    pub async fn local_chat(&self, pane: String, after: String) -> Result<Chat, AppError> {
        let pid = self
            .panes
            .actor
            .call(|reply| PanesMsg::Process { pane, reply })
            .await??;
        let Some(pid) = pid else {
            return Ok(Chat::none(None));
        };
        let masker = self.core.masker.clone();
        tokio::task::spawn_blocking(move || chat::read(pid, &after, &masker))
            .await
            .map_err(|e| AppError::backend("chat read", e))?
            .map_err(AppError::from)
    }

    /// A member's chat bounded and masked by this machine, as if it were its own.
    fn remask(&self, chat: &mut Chat) {
        if chat.turns.len() > MAX_TURNS {
            chat.turns.drain(..chat.turns.len() - MAX_TURNS);
        }
        let mut total = 0usize;
        let mut keep = 0usize;
        for turn in chat.turns.iter_mut().rev() {
            self.mask_in_place(&mut turn.text);
            self.mask_in_place(&mut turn.id);
            if let Some(at) = turn.at.as_mut() {
                self.mask_in_place(at);
            }
            total += turn.text.len();
            if total > MAX_ANSWER_BYTES {
                break;
            }
            keep += 1;
        }
        chat.turns.drain(..chat.turns.len() - keep);
        if let Some(session) = chat.session.as_mut() {
            self.mask_in_place(session);
        }
        self.mask_in_place(&mut chat.cursor);
    }
}
