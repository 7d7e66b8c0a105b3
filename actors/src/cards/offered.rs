//! Screen prompts offered as cards (SPEC §10.2): which dialog of which pane a waiting card stands
//! for, and what a look at a pane's screen changes. Pure: the watcher (the application's screen
//! prompt task) feeds it what [`super::prompt::recognize`] found and acts on the [`Step`]s.
//!
//! **One card per dialog.** A pane shows at most one dialog at a time, so a pane holds at most
//! one offered card. The dialog is the same while the hash of its lines is the same; a dialog
//! whose lines changed (the agent redrew it with other text, the selection moved) is a new
//! question — the old card is withdrawn and a new one opened, so a tap never answers lines the
//! person did not read. A dialog that left the screen was answered at the machine: its card ends
//! `answered elsewhere`.
//!
//! **What a tap needs.** The card's option ids are the options' numbers; [`Offered`] keeps the
//! pane, the rows and the hash, so the tap types a number only while the same lines are on the
//! screen at the same place (checked and typed in one turn of the Panes actor).

use std::collections::HashMap;

use super::card::{CardOption, Item, NewCard, Source, MAX_ITEM, MAX_TITLE};
use super::prompt::ScreenPrompt;
use crate::cut::cut;

/// The card a dialog on a pane's screen is offered as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// The card's id.
    pub card: String,
    /// The pane the dialog is on.
    pub pane: String,
    /// The first and one-past-the-last screen row the dialog was read from.
    pub rows: (usize, usize),
    /// SHA-256 (hex) of those rows when the card was made.
    pub hash: String,
}

/// What one look at a pane's screen asks of the watcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing changed.
    Keep,
    /// A dialog appeared: open a card for it (then [`ScreenCards::opened`]).
    Open,
    /// The dialog changed: close this card as withdrawn, then open one for the new dialog.
    Replace(String),
    /// The dialog left the screen: close this card as answered elsewhere.
    Gone(String),
}

/// The offered cards of one machine's panes.
#[derive(Debug, Default)]
pub struct ScreenCards {
    by_pane: HashMap<String, Offered>,
}

impl ScreenCards {
    /// No cards offered.
    pub fn new() -> ScreenCards {
        ScreenCards::default()
    }

    /// What `prompt` (the dialog now on `pane`'s screen, if any) changes. A pane whose card is
    /// replaced or gone is forgotten here at once.
    pub fn look(&mut self, pane: &str, prompt: Option<&ScreenPrompt>) -> Step {
        let offered = self.by_pane.get(pane);
        match (offered, prompt) {
            (None, None) => Step::Keep,
            (None, Some(_)) => Step::Open,
            (Some(o), Some(p)) if o.hash == p.hash && o.rows == p.rows => Step::Keep,
            (Some(_), Some(_)) => Step::Replace(self.forget(pane)),
            (Some(_), None) => Step::Gone(self.forget(pane)),
        }
    }

    /// Records the card opened for `prompt` on `pane`.
    pub fn opened(&mut self, pane: &str, card: String, prompt: &ScreenPrompt) {
        self.by_pane.insert(
            pane.to_owned(),
            Offered {
                card,
                pane: pane.to_owned(),
                rows: prompt.rows,
                hash: prompt.hash.clone(),
            },
        );
    }

    /// Forgets the card of a pane that closed; returns its id, to withdraw it.
    pub fn pane_gone(&mut self, pane: &str) -> Option<String> {
        self.by_pane.remove(pane).map(|o| o.card)
    }

    /// The panes that have a card offered.
    pub fn panes(&self) -> impl Iterator<Item = &str> {
        self.by_pane.keys().map(String::as_str)
    }

    /// The offer card `id` stands for, if it is a screen card of this machine.
    pub fn card(&self, id: &str) -> Option<&Offered> {
        self.by_pane.values().find(|o| o.card == id)
    }

    fn forget(&mut self, pane: &str) -> String {
        self.by_pane
            .remove(pane)
            .map(|o| o.card)
            .unwrap_or_default()
    }
}

/// The card a dialog is shown as: the question as its title, the lines above it (the tool, the
/// command) as one code item, and one option per numbered answer, its id the number to type.
pub fn screen_card(
    machine: &str,
    pane: &str,
    pane_name: Option<String>,
    prompt: &ScreenPrompt,
) -> NewCard {
    let mut items = Vec::new();
    if !prompt.context.is_empty() {
        items.push(Item::Code {
            text: cut(&prompt.context.join("\n"), MAX_ITEM).to_owned(),
        });
    }
    NewCard {
        machine: machine.to_owned(),
        pane: Some(pane.to_owned()),
        pane_name,
        source: Source::Screen,
        conversation: None,
        title: cut(&prompt.question, MAX_TITLE).to_owned(),
        items,
        options: prompt
            .options
            .iter()
            .map(|o| CardOption {
                id: o.key.clone(),
                label: o.label.clone(),
            })
            .collect(),
        question: None,
        shortened: false,
        masked: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cards::prompt::recognize;

    fn screen(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    fn dialog(question: &str, mark_on: usize) -> Vec<String> {
        let mut lines = screen("$ agent\n──────────\n Bash command\n rm -rf build\n");
        lines.push(format!(" {question}"));
        for (i, label) in ["Yes", "No"].iter().enumerate() {
            let mark = if i == mark_on { '❯' } else { ' ' };
            lines.push(format!(" {mark} {}. {label}", i + 1));
        }
        lines
    }

    #[test]
    fn a_dialog_is_offered_once_while_its_lines_stay() {
        let mut offered = ScreenCards::new();
        let p = recognize(&dialog("Do you want to proceed?", 0)).expect("a prompt");
        assert_eq!(offered.look("t0-1", Some(&p)), Step::Open);
        offered.opened("t0-1", "c1".into(), &p);
        assert_eq!(offered.look("t0-1", Some(&p)), Step::Keep);
        assert_eq!(offered.card("c1").map(|o| o.rows), Some(p.rows));
        assert_eq!(offered.look("t0-2", None), Step::Keep);
    }

    #[test]
    fn a_changed_dialog_replaces_its_card_and_a_vanished_one_ends_it() {
        let mut offered = ScreenCards::new();
        let first = recognize(&dialog("Do you want to proceed?", 0)).expect("a prompt");
        offered.opened("t0-1", "c1".into(), &first);
        // The selection moved: other lines, another question for the person.
        let moved = recognize(&dialog("Do you want to proceed?", 1)).expect("a prompt");
        assert_ne!(first.hash, moved.hash);
        assert_eq!(
            offered.look("t0-1", Some(&moved)),
            Step::Replace("c1".into())
        );
        assert_eq!(offered.card("c1"), None);
        offered.opened("t0-1", "c2".into(), &moved);
        assert_eq!(offered.look("t0-1", None), Step::Gone("c2".into()));
        assert_eq!(offered.look("t0-1", None), Step::Keep);
    }

    #[test]
    fn a_closed_pane_gives_its_card_back() {
        let mut offered = ScreenCards::new();
        let p = recognize(&dialog("Proceed?", 0)).expect("a prompt");
        offered.opened("h3", "c9".into(), &p);
        assert_eq!(offered.panes().collect::<Vec<_>>(), ["h3"]);
        assert_eq!(offered.pane_gone("h3"), Some("c9".into()));
        assert_eq!(offered.pane_gone("h3"), None);
    }

    #[test]
    fn the_card_shows_the_question_the_context_and_numbered_options() {
        let p = recognize(&dialog("Do you want to proceed?", 0)).expect("a prompt");
        let card = screen_card("laptop", "t0-1", Some("build".into()), &p);
        assert_eq!(card.source, Source::Screen);
        assert_eq!(card.title, "Do you want to proceed?");
        assert_eq!(
            card.items,
            [Item::Code {
                text: "Bash command\nrm -rf build".into()
            }]
        );
        let ids: Vec<(&str, &str)> = card
            .options
            .iter()
            .map(|o| (o.id.as_str(), o.label.as_str()))
            .collect();
        assert_eq!(ids, [("1", "Yes"), ("2", "No")]);
        assert_eq!(card.check(), Ok(()));
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        assert_eq!(cut(&"é".repeat(10), 5), "éé");
    }
}
