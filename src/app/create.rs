//! What a caller asks to start, and the one set of rules that picks how (SPEC §5, §12; decisions
//! 0041, 0042): a starter, a starter row, a command line (the CLI on its own machine only) or the
//! shell, as a hosted pane or as a new window of a tmux session. Every adapter hands the fields it
//! decoded to [`App::new_pane`]; none of them combines them itself.

use collie_actors::panes::actor::PaneInfo;

use super::new_pane::{Launch, NewPane};
use super::{App, AppError, Caller};

/// A request for a new pane: the fields of `POST /api/panes` and of `collie panes new`.
#[derive(Debug, Clone, Default)]
pub struct CreateAsk {
    /// The machine (`local`, this machine's name, or a member's).
    pub machine: String,
    /// The pane's name, if the caller gave one.
    pub name: Option<String>,
    /// An applied starter, by name.
    pub starter: Option<String>,
    /// A starter row phones added, by id.
    pub row: Option<String>,
    /// A command line (only the CLI sends one; a phone starts starters).
    pub command: Vec<String>,
    /// The folder it starts in (absolute or `~/…`), inside one of the machine's workspaces.
    pub folder: Option<String>,
    /// A tmux session (`t<i>:<name>`): a new window there instead of a hosted pane.
    pub session: Option<String>,
    /// The device confirms, once, a starter that skips the agent's permission prompts.
    pub confirm_no_prompts: bool,
}

impl App {
    /// Starts what `ask` names (see the module docs); at most one of starter, row and command.
    pub async fn new_pane(&self, caller: &Caller, ask: CreateAsk) -> Result<PaneInfo, AppError> {
        let CreateAsk {
            machine,
            name,
            starter,
            row,
            command,
            folder,
            session,
            confirm_no_prompts,
        } = ask;
        if starter.is_some() && row.is_some() {
            return Err(AppError::BadRequest("give starter or row, not both".into()));
        }
        if !command.is_empty() && (starter.is_some() || row.is_some()) {
            return Err(AppError::BadRequest(
                "a command line starts on its own: give command, starter or row".into(),
            ));
        }
        if let Some(session) = session {
            if row.is_some() {
                return Err(AppError::BadRequest(
                    "a starter row opens a pane, not a window: give row or session".into(),
                ));
            }
            let launch = match starter {
                Some(starter) => {
                    self.confirm_starter(caller, &machine, &starter, confirm_no_prompts)
                        .await?;
                    Launch::Starter(starter)
                }
                None if !command.is_empty() => Launch::Command(command),
                None => Launch::Shell,
            };
            let new = NewPane {
                name,
                launch,
                folder,
                session: Some(session),
            };
            return self.run(caller, &machine, new).await;
        }
        if let Some(row) = row {
            return self
                .start_row(caller, &machine, &row, name, folder, confirm_no_prompts)
                .await;
        }
        if let Some(starter) = starter {
            return self
                .start_starter(caller, &machine, starter, name, folder, confirm_no_prompts)
                .await;
        }
        let launch = if command.is_empty() {
            Launch::Shell
        } else {
            Launch::Command(command)
        };
        self.create_pane_in(caller, &machine, name, launch, folder)
            .await
    }
}
