//! Web Push (SPEC §10.4): a phone's notification that a question waits, and nothing more.
//!
//! [`question`] says which card changes are new questions; [`limiter`] decides which of them
//! buzz (pure, driven by `now`); [`payload`] is the only thing a push can carry (kind, machine,
//! pane name, count — no agent text); [`endpoint`] the allow-list of push services and the
//! subscription record; [`vapid`] the bridge's key and the token that names it; [`message`] one
//! encrypted, signed request; [`outcome`] what a service's answer means for the subscription;
//! [`actor`] the shell that owns the key, the subscriptions and the posts. The HTTPS client is
//! [`crate::https`].

pub mod actor;
pub mod endpoint;
pub mod limiter;
pub mod message;
pub mod outcome;
pub mod payload;
pub mod question;
pub mod vapid;
