//! Durable agents (SPEC §10.3): programs the user runs — on this machine behind a private unix
//! socket, or elsewhere behind HTTPS with a bearer token — whose conversations and questions
//! reach the phone, and whose every string Collie treats as untrusted.
//!
//! [`wire`] is the agent's protocol as typed structs (raw, untrusted); [`sanitize`] the pure
//! string rules; [`view`] the sanitized state everything else reads. [`sources`] is the list of
//! attached agents (`sources.json`), [`cadence`] when to poll, [`transport`] one request over
//! either transport, [`questions`] which open question has which card, [`receipts`] what the
//! phone's writes leave behind. [`actor`] is the Durable actor, with one [`agent`] child per
//! attached agent.
//!
//! **Only a tap answers.** A question becomes a card (source `durable:<name>`); the application's
//! card answer — a paired device's tap — is the only sender of [`agent::AgentMsg::AnswerCard`],
//! and the phone API's durable writes (tier `full`; an answer there is refused) the only sender
//! of [`agent::AgentMsg::Write`].

pub mod actor;
pub mod agent;
pub mod cadence;
pub mod questions;
pub mod receipts;
pub mod sanitize;
pub mod sources;
pub mod transport;
pub mod view;
pub mod wire;
