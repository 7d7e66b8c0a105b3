//! Which operation each route exposes; what the operation requires is the application's one
//! registry ([`crate::app::ops`], SPEC §11).
//!
//! The auth middleware looks every request up here by method and matched route pattern. A route that
//! is missing from this table is refused (fail closed), and `tests/router.rs` tries every entry with a
//! device of each tier: the router serves it, and a tier below the entry's is refused.

use axum::http::Method;

pub use crate::app::ops::Access;
use crate::app::ops::Op;

/// Every API route, with the access of the operation it exposes (the tier is the registry's,
/// [`Op::access`]). Patterns are axum's (`{m}` placeholders).
pub const ROUTES: &[(Method, &str, Access)] = &[
    route(Method::GET, "/api/health", Op::Health),
    route(Method::POST, "/api/pair", Op::Pair),
    route(Method::GET, "/api/machines", Op::Machines),
    route(Method::GET, "/api/settings", Op::Settings),
    route(Method::GET, "/api/devices", Op::Devices),
    route(Method::DELETE, "/api/devices/{label}", Op::DeviceRevoke),
    route(Method::GET, "/api/notices", Op::Notices),
    route(Method::GET, "/api/panes", Op::PaneList),
    route(Method::GET, "/api/walky", Op::WalkyList),
    route(Method::GET, "/api/walky/{id}", Op::WalkyCard),
    route(Method::GET, "/api/cards", Op::Cards),
    route(Method::GET, "/api/cards/stream", Op::CardStream),
    route(Method::POST, "/api/cards/{id}/answer", Op::CardAnswer),
    route(Method::GET, "/api/durable", Op::DurableRead),
    route(
        Method::POST,
        "/api/durable/{name}/{conversation}/{verb}",
        Op::DurableWrite,
    ),
    route(Method::GET, "/api/push/key", Op::PushKey),
    route(Method::GET, "/api/push/subscribe", Op::PushSubscription),
    route(Method::POST, "/api/push/subscribe", Op::PushSubscribe),
    route(Method::DELETE, "/api/push/subscribe", Op::PushUnsubscribe),
    route(Method::POST, "/api/tools/{tool}", Op::ToolCall),
    route(Method::GET, "/api/files/{m}/list", Op::FileList),
    route(Method::GET, "/api/files/{m}/read", Op::FileRead),
    route(Method::GET, "/api/files/{m}/changes", Op::FileChanges),
    route(Method::GET, "/api/browse/{m}", Op::Browse),
    route(Method::POST, "/api/blobs", Op::Upload),
    route(Method::GET, "/api/blobs/{id}", Op::BlobRead),
    route(Method::POST, "/api/panes", Op::PaneCreate),
    route(Method::GET, "/api/panes/{m}/{p}", Op::PaneSnapshot),
    route(Method::DELETE, "/api/panes/{m}/{p}", Op::PaneClose),
    route(Method::GET, "/api/panes/{m}/{p}/stream", Op::PaneStream),
    route(Method::GET, "/api/panes/{m}/{p}/chat", Op::PaneChat),
    route(Method::POST, "/api/panes/{m}/{p}/input", Op::PaneInput),
    route(Method::POST, "/api/panes/{m}/{p}/rename", Op::PaneRename),
    route(Method::GET, "/api/sent", Op::SentList),
    route(Method::DELETE, "/api/sent/{m}", Op::SentDiscardAll),
    route(Method::DELETE, "/api/sent/{m}/{id}", Op::SentDiscard),
    route(Method::POST, "/api/commands", Op::CommandRun),
    route(Method::GET, "/api/starters/{m}", Op::StarterList),
    route(Method::GET, "/api/sessions/{m}", Op::SessionList),
    route(Method::POST, "/api/starters/{m}/rows", Op::RowAdd),
    route(Method::DELETE, "/api/starters/{m}/rows/{id}", Op::RowRemove),
    route(Method::POST, "/api/speech/{m}", Op::Speech),
    route(Method::GET, "/api/commands/recent", Op::CommandsRecent),
];

const fn route(method: Method, pattern: &'static str, op: Op) -> (Method, &'static str, Access) {
    (method, pattern, op.access())
}

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
    use collie_actors::pairing::Tier;

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
