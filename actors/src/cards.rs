//! Cards (SPEC §10.1): questions that wait for a person — a held permission, a screen prompt, a
//! durable agent's question — and the one way they are answered, a paired device's tap.
//!
//! [`card`] is what a card is and the `shown` hash of what the phone renders; [`core`] the pure
//! rules (the waiting set and its cap, the two taps of "Always allow", claims, receipts,
//! expiry); [`actor`] the shell that owns a core, hands each decision to whoever holds the card
//! open (the hook socket) and tells watchers of every change; [`error`] how an answer fails.
//! [`visible`] makes a text faithful (escapes, cuts) and [`present`] applies it to a whole card:
//! a card shows what it decides, all of it.
//! Screen prompts: [`prompt`] recognizes a dialog on a screen, [`offered`] decides which dialog a
//! card stands for, and [`screens`] is the actor that watches the panes and offers them.
//!
//! **Nothing but a tap decides.** The only message that decides a card is the actor's
//! [`actor::CardsMsg::Release`], and the only caller of it is the application's answer operation,
//! which the phone API's `POST /api/cards/{id}/answer` (tier `full`, a paired device) reaches.
//! The hook socket can open a card and withdraw it, never answer it.

pub mod actor;
pub mod card;
pub mod core;
pub mod error;
pub mod offered;
pub mod present;
pub mod prompt;
pub mod screens;
pub mod visible;
