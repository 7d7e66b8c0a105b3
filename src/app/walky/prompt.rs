//! A walky header never answers a prompt (SPEC §9, §10.1).
//!
//! The header is typed into the receiving pane and followed by Enter. In a pane where an agent
//! asks a person something — its permission dialog on the screen, or a held permission waiting for
//! a tap — that Enter would choose the dialog's highlighted option (or sit in the terminal's input
//! until the dialog shows), and only a person's tap may answer a prompt. So a message is refused
//! with `<machine>/<pane> is showing a prompt` while the pane
//! - has a waiting card of this machine, whatever its source (a held permission, a screen card, a
//!   durable agent's question placed in that pane): the Cards actor holds only this machine's
//!   cards, so the pane id names it;
//! - or shows a dialog the screen-prompt recognizer knows, read as the screen-prompt watcher reads
//!   it (the visible rows of the pane's screen, masked) — also while no card has been offered yet,
//!   since the watcher waits for the screen to be still.
//!
//! [`check`] runs before the message is logged as delivered; the screen is looked at once more by
//! the Panes actor in the same turn as the typing ([`showing_prompt`] goes with the request), as
//! the foreground is.

use collie_actors::cards::prompt::recognize;
use collie_actors::panes::actor::PaneError;
use collie_actors::panes::PanesMsg;

use crate::app::App;

/// Whether screen lines show a dialog the screen-prompt recognizer knows.
pub fn showing_prompt(lines: &[String]) -> bool {
    recognize(lines).is_some()
}

/// Refuses (`Err(why)`) when pane `pane` of this machine, `address` in the refusal, has a waiting
/// card or shows a dialog. A check that cannot be made refuses too: a message is never typed
/// where it might answer a prompt.
pub async fn check(ctx: &App, pane: &str, address: &str) -> Result<(), String> {
    no_waiting_card(ctx, pane, address).await?;
    let screen = ctx
        .panes
        .actor
        .call(|reply| PanesMsg::Snapshot {
            pane: pane.to_owned(),
            scrollback: 0,
            reply,
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|_| format!("no pane {address}"))?;
    if showing_prompt(&screen.snapshot.lines) {
        return Err(refusal(address));
    }
    Ok(())
}

/// Refuses when a card of this machine waits for pane `pane`.
pub async fn no_waiting_card(ctx: &App, pane: &str, address: &str) -> Result<(), String> {
    let cards = ctx
        .cards()
        .await
        .map_err(|e| format!("cannot tell whether {address} is showing a prompt: {e}"))?;
    if cards.cards.iter().any(|c| c.pane.as_deref() == Some(pane)) {
        return Err(refusal(address));
    }
    Ok(())
}

/// SPEC §9's words.
fn refusal(address: &str) -> String {
    format!("{address} {}", PaneError::ShowingPrompt)
}
