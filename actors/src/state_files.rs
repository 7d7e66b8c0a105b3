//! The names of the files Collie keeps in its state folder (SPEC §2): the one list that the code
//! writing each file takes its name from and the tools' guard refuses by name wherever a copy
//! lies ([`STATE_FILE_NAMES`](crate::tools::workspace::STATE_FILE_NAMES) is [`ALL`]).
//!
//! A new state file gets its name here, or it has none to be written under; `ALL` is matched
//! exhaustively against `StateFile`, so a name left out of it does not compile. The crew's
//! identity files are named in `collie-crew` (which knows nothing of this crate) and listed here
//! by reference. The test `tests/guard_list.rs` runs a bridge and finds every file it left in its
//! state folder in [`ALL`] (sled's own `db/` files, the kept uploads named by id and the walky's
//! daily logs excepted — their folders are guarded, and their names say nothing).

/// The audit log (SPEC §7).
pub const AUDIT_LOG: &str = "audit.log";
/// The local secret, new at each start (SPEC §4.6).
pub const LOCAL_SECRET: &str = "local-secret";
/// The attached durable agents, with their tokens (SPEC §10.3).
pub const SOURCES: &str = "sources.json";
/// The applied configuration (SPEC §12).
pub const APPLIED: &str = "applied.json";
/// The sent log (SPEC §11).
pub const SENT: &str = "sent.jsonl";
/// The recent one-shot commands (SPEC §11).
pub const COMMANDS_RECENT: &str = "commands-recent.json";
/// The control socket the CLI talks to its bridge on.
pub const CONTROL_SOCKET: &str = "bridge.sock";
/// The socket the held-permission hooks connect to (SPEC §10.2).
pub const HOOK_SOCKET: &str = "hooks.sock";
/// Which devices confirmed a "No prompts" starter (SPEC §12).
pub const NO_PROMPTS: &str = "no-prompts.json";
/// The walky's instances (SPEC §2, §9).
pub const WALKY_INSTANCES: &str = "instances.json";
/// The Web Push (VAPID) private key (SPEC §10.4).
pub const VAPID_KEY: &str = "vapid.p8";
/// On a deputy: the copy of its lead's device registry (SPEC §13; token hashes, never a token).
pub const DEPUTY_REGISTRY: &str = "deputy-registry.json";
/// The crew identity's private key (SPEC §8).
pub const CREW_KEY: &str = collie_crew::identity::KEY_FILE;
/// The crew identity's certificate.
pub const CREW_CERT: &str = collie_crew::identity::CERT_FILE;

/// Each state file, by what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StateFile {
    AuditLog,
    LocalSecret,
    Sources,
    Applied,
    Sent,
    CommandsRecent,
    ControlSocket,
    HookSocket,
    NoPrompts,
    WalkyInstances,
    VapidKey,
    CrewKey,
    CrewCert,
    DeputyRegistry,
}

impl StateFile {
    /// Every state file, in [`ALL`]'s order.
    const EACH: [StateFile; 14] = [
        StateFile::AuditLog,
        StateFile::LocalSecret,
        StateFile::Sources,
        StateFile::Applied,
        StateFile::Sent,
        StateFile::CommandsRecent,
        StateFile::ControlSocket,
        StateFile::HookSocket,
        StateFile::NoPrompts,
        StateFile::WalkyInstances,
        StateFile::VapidKey,
        StateFile::CrewKey,
        StateFile::CrewCert,
        StateFile::DeputyRegistry,
    ];

    /// The file's name: an exhaustive match, so a new kind of state file needs a name here.
    const fn name(self) -> &'static str {
        match self {
            StateFile::AuditLog => AUDIT_LOG,
            StateFile::LocalSecret => LOCAL_SECRET,
            StateFile::Sources => SOURCES,
            StateFile::Applied => APPLIED,
            StateFile::Sent => SENT,
            StateFile::CommandsRecent => COMMANDS_RECENT,
            StateFile::ControlSocket => CONTROL_SOCKET,
            StateFile::HookSocket => HOOK_SOCKET,
            StateFile::NoPrompts => NO_PROMPTS,
            StateFile::WalkyInstances => WALKY_INSTANCES,
            StateFile::VapidKey => VAPID_KEY,
            StateFile::CrewKey => CREW_KEY,
            StateFile::CrewCert => CREW_CERT,
            StateFile::DeputyRegistry => DEPUTY_REGISTRY,
        }
    }
}

/// Every state file's name: what the tools refuse by name anywhere.
pub const ALL: [&str; StateFile::EACH.len()] = {
    let mut out = [""; StateFile::EACH.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = StateFile::EACH[i].name();
        i += 1;
    }
    out
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The list holds each name once and none empty, and the writers' constants are its entries.
    #[test]
    fn every_name_is_listed_once() {
        for (i, n) in ALL.iter().enumerate() {
            assert!(!n.is_empty());
            assert!(!ALL[i + 1..].contains(n), "{n} twice");
        }
        for writer in [
            crate::sent::SENT_FILE,
            crate::sent::RECENT_FILE,
            crate::durable::sources::FILE,
            crate::push::vapid::KEY_FILE,
            collie_crew::identity::KEY_FILE,
            collie_crew::identity::CERT_FILE,
        ] {
            assert!(ALL.contains(&writer), "{writer} is not in the list");
        }
    }
}
