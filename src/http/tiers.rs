//! The route → required tier registry (SPEC §11): the one place that says what each route needs.
//!
//! The auth middleware looks every request up here by method and matched route pattern. A route that
//! is missing from this table is refused (fail closed), and `tests/router.rs` tries every entry with a
//! device of each tier: the router serves it, and a tier below the entry's is refused. Nothing at run
//! time changes these tiers and no request field grants one.

use axum::http::Method;
use collie_actors::pairing::Tier;

/// What a route requires of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token needed (`/api/health`, `/api/pair`).
    Open,
    /// A paired device of at least this tier. The local secret is refused.
    Device(Tier),
    /// A `GET` the CLI reads: any paired device, and the local secret too (SPEC §4.6). Only the
    /// routes the CLI reads are marked so — a route added later is closed to the local secret
    /// until someone decides otherwise here.
    CliRead,
}

/// Every API route with its required access. Patterns are axum's (`{m}` placeholders).
pub const ROUTES: &[(Method, &str, Access)] = &[
    (Method::GET, "/api/health", Access::Open),
    (Method::POST, "/api/pair", Access::Open),
    (Method::GET, "/api/machines", Access::CliRead),
    (Method::GET, "/api/settings", Access::CliRead),
    (Method::GET, "/api/devices", Access::CliRead),
    // Revoking oneself needs only `read`; revoking another device needs `full` (checked in the handler,
    // which knows whose label it is).
    (
        Method::DELETE,
        "/api/devices/{label}",
        Access::Device(Tier::Read),
    ),
    // Every new pairing is announced on the other devices (SPEC §4.6).
    (Method::GET, "/api/notices", Access::Device(Tier::Read)),
    (Method::GET, "/api/panes", Access::CliRead),
    (Method::GET, "/api/walky", Access::Device(Tier::Read)),
    (Method::GET, "/api/walky/{id}", Access::Device(Tier::Read)),
    (Method::GET, "/api/cards", Access::CliRead),
    (Method::GET, "/api/cards/stream", Access::Device(Tier::Read)),
    // Only a paired device's tap answers a card (SPEC §10.1).
    (
        Method::POST,
        "/api/cards/{id}/answer",
        Access::Device(Tier::Full),
    ),
    // Durable agents (SPEC §10.3): reading for any paired device, writing only for `full`.
    (Method::GET, "/api/durable", Access::Device(Tier::Read)),
    (
        Method::POST,
        "/api/durable/{name}/{conversation}/{verb}",
        Access::Device(Tier::Full),
    ),
    // Web Push (SPEC §10.4): any paired device may be told that a question waits.
    (Method::GET, "/api/push/key", Access::Device(Tier::Read)),
    (
        Method::GET,
        "/api/push/subscribe",
        Access::Device(Tier::Read),
    ),
    (
        Method::POST,
        "/api/push/subscribe",
        Access::Device(Tier::Read),
    ),
    (
        Method::DELETE,
        "/api/push/subscribe",
        Access::Device(Tier::Read),
    ),
    // Tools (SPEC §11): any paired device reaches the door; the tool's own tier, from the tool
    // registry, is checked first thing in `App::call_tool` (before the machine or the arguments).
    (
        Method::POST,
        "/api/tools/{tool}",
        Access::Device(Tier::Read),
    ),
    // The Files and Changes views and uploads (SPEC §11: "Both need tier files").
    (
        Method::GET,
        "/api/files/{m}/list",
        Access::Device(Tier::Files),
    ),
    (
        Method::GET,
        "/api/files/{m}/read",
        Access::Device(Tier::Files),
    ),
    (
        Method::GET,
        "/api/files/{m}/changes",
        Access::Device(Tier::Files),
    ),
    // Browsing for the New page's folder (SPEC §11: "Both need tier files").
    (Method::GET, "/api/browse/{m}", Access::Device(Tier::Files)),
    (Method::POST, "/api/blobs", Access::Device(Tier::Files)),
    (Method::GET, "/api/blobs/{id}", Access::Device(Tier::Files)),
    (Method::POST, "/api/panes", Access::Device(Tier::Full)),
    (Method::GET, "/api/panes/{m}/{p}", Access::CliRead),
    (
        Method::DELETE,
        "/api/panes/{m}/{p}",
        Access::Device(Tier::Full),
    ),
    (
        Method::GET,
        "/api/panes/{m}/{p}/stream",
        Access::Device(Tier::Read),
    ),
    // The chat view reads what the screen shows, from the agent's transcript (SPEC §3.3).
    (
        Method::GET,
        "/api/panes/{m}/{p}/chat",
        Access::Device(Tier::Read),
    ),
    (
        Method::POST,
        "/api/panes/{m}/{p}/input",
        Access::Device(Tier::Full),
    ),
    (
        Method::POST,
        "/api/panes/{m}/{p}/rename",
        Access::Device(Tier::Full),
    ),
    // The sent log (SPEC §11): any paired device reads it (it reads the panes too); discarding
    // needs `files` (docs/decisions/0033: it edits a file on the machine, which `read` never
    // does); one-shot commands and their recent list need `full`.
    (Method::GET, "/api/sent", Access::Device(Tier::Read)),
    (Method::DELETE, "/api/sent/{m}", Access::Device(Tier::Files)),
    (
        Method::DELETE,
        "/api/sent/{m}/{id}",
        Access::Device(Tier::Files),
    ),
    (Method::POST, "/api/commands", Access::Device(Tier::Full)),
    // The starters a New page lists (SPEC §12): only a device that may start one sees them.
    (Method::GET, "/api/starters/{m}", Access::Device(Tier::Full)),
    // The tmux sessions a new window can open in (decision 0042): listed, like the starters,
    // only to a device that may open one.
    (Method::GET, "/api/sessions/{m}", Access::Device(Tier::Full)),
    // Rows a phone adds to the New page (decision 0041): as starting a starter.
    (
        Method::POST,
        "/api/starters/{m}/rows",
        Access::Device(Tier::Full),
    ),
    (
        Method::DELETE,
        "/api/starters/{m}/rows/{id}",
        Access::Device(Tier::Full),
    ),
    (
        Method::GET,
        "/api/commands/recent",
        Access::Device(Tier::Full),
    ),
];

/// The access a route requires, or `None` for a route the registry does not know (refused).
pub fn required(method: &Method, pattern: &str) -> Option<Access> {
    ROUTES
        .iter()
        .find(|(m, p, _)| m == method && *p == pattern)
        .map(|(_, _, a)| *a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_need_full() {
        for (m, p, a) in ROUTES {
            if *m != Method::GET && p.starts_with("/api/panes") {
                assert_eq!(*a, Access::Device(Tier::Full), "{m} {p}");
            }
        }
        assert_eq!(required(&Method::GET, "/api/nope"), None);
        assert_eq!(
            required(&Method::POST, "/api/panes/{m}/{p}/input"),
            Some(Access::Device(Tier::Full))
        );
    }
}
