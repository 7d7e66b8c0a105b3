//! What the crew actor keeps in the store's `crew` table, and the keys it keeps it under: the role
//! (with the crew secret), the lead's pinned members and its invites (only the hash of each join
//! secret). A join's invite and member go in one batch, so a crash never leaves a used invite
//! without its member or a member without its used invite.

use std::net::SocketAddr;

use collie_crew::hello::{CrewSecret, Invite};
use collie_crew::pin::Pin;
use serde::{Deserialize, Serialize};

use super::core::MemberRecord;
use super::CrewError;
use crate::store::{Change, Store, Table};

const ROLE_KEY: &str = "role";
const MEMBER_PREFIX: &str = "member/";
const INVITE_PREFIX: &str = "invite/";

/// The role as stored.
#[derive(Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum RoleRecord {
    /// This bridge leads a crew.
    Lead {
        /// The crew secret, hex.
        secret: String,
        /// Where it listened last (kept when the OS chose the port).
        address: Option<SocketAddr>,
    },
    /// This bridge is a member.
    Member {
        /// The name it joined as.
        name: String,
        /// The crew secret, hex.
        secret: String,
        /// The lead's name.
        lead_name: String,
        /// The lead's pin.
        lead_pin: Pin,
        /// The lead's address.
        lead_address: SocketAddr,
    },
}

/// The store key of an invite.
pub(super) fn invite_key(secret_hash: &[u8; 32]) -> String {
    format!("{INVITE_PREFIX}{}", hex::encode(secret_hash))
}

/// The store key of a member.
pub(super) fn member_key(name: &str) -> String {
    format!("{MEMBER_PREFIX}{name}")
}

/// The one batch of an accepted join.
pub(super) fn join_changes(
    invite: &Invite,
    member: &MemberRecord,
) -> Result<Vec<Change>, serde_json::Error> {
    Ok(vec![
        Change::Put(invite_key(&invite.secret_hash), serde_json::to_vec(invite)?),
        Change::Put(member_key(&member.name), serde_json::to_vec(member)?),
    ])
}

fn unavailable(e: impl std::fmt::Display) -> CrewError {
    CrewError::Unavailable(e.to_string())
}

/// The stored role, if any.
pub(super) fn load_role(store: &Store) -> Result<Option<RoleRecord>, CrewError> {
    store
        .get(Table::Crew, ROLE_KEY)
        .map_err(unavailable)?
        .map(|b| serde_json::from_slice::<RoleRecord>(&b).map_err(unavailable))
        .transpose()
}

/// Stores the role (durably, before the caller reports it).
pub(super) fn save_role(store: &Store, record: &RoleRecord) -> Result<(), CrewError> {
    let bytes = serde_json::to_vec(record).map_err(unavailable)?;
    store
        .apply(Table::Crew, &[Change::Put(ROLE_KEY.to_owned(), bytes)])
        .map_err(unavailable)
}

/// The lead's stored members and invites.
pub(super) fn load_registry(store: &Store) -> Result<(Vec<MemberRecord>, Vec<Invite>), CrewError> {
    registry_from_entries(store.scan(Table::Crew).map_err(unavailable)?).map_err(unavailable)
}

/// The members and invites among the `crew` table's `(key, value)` entries, which is how the lead
/// reads its registry back at start (other keys, such as the role, are skipped). Pure, so that
/// whatever keeps the table — sled here, the simulations' in-memory copy of the [`Change`]s a
/// [`super::lead::LeadCore`] asked for — rebuilds a restarted lead the same way.
pub fn registry_from_entries<K: AsRef<str>, V: AsRef<[u8]>>(
    entries: impl IntoIterator<Item = (K, V)>,
) -> Result<(Vec<MemberRecord>, Vec<Invite>), serde_json::Error> {
    let mut members = Vec::new();
    let mut invites = Vec::new();
    for (key, value) in entries {
        let (key, value) = (key.as_ref(), value.as_ref());
        if key.starts_with(MEMBER_PREFIX) {
            members.push(serde_json::from_slice::<MemberRecord>(value)?);
        } else if key.starts_with(INVITE_PREFIX) {
            invites.push(serde_json::from_slice::<Invite>(value)?);
        }
    }
    Ok((members, invites))
}

/// The crew secret of a stored role.
pub(super) fn secret_from_hex(s: &str) -> Result<CrewSecret, CrewError> {
    let bytes: [u8; 32] = hex::decode(s)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| unavailable("stored crew secret is unreadable"))?;
    Ok(CrewSecret::from(bytes))
}

/// The name this bridge joined its crew with, if it is a member: the machine's name from then on
/// (read at start, before any actor writes a line naming the machine).
pub fn stored_member_name(store: &Store) -> Option<String> {
    match load_role(store).ok()?? {
        RoleRecord::Member { name, .. } => Some(name),
        RoleRecord::Lead { .. } => None,
    }
}
