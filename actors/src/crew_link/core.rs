//! The lead's crew registry as a pure state machine: pinned members and issued invites. No I/O, no
//! clock (`now` is an argument). The actor decides with [`Registry::decide_join`], makes the change
//! durable in the store, and only then applies it with [`Registry::commit_join`], so a refused or
//! failed join changes nothing.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use collie_crew::hello::{
    validate_join, CrewSecret, Invite, JoinAccepted, JoinContext, JoinError, JoinRequest,
};
use collie_crew::pin::Pin;
use serde::{Deserialize, Serialize};

/// How long the record of an expired invite is kept (so that a late replay still reads "expired"
/// or "used" rather than "wrong secret").
pub const INVITE_KEEP: Duration = Duration::from_secs(24 * 3600);

/// A member the lead pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRecord {
    /// The member's name in the crew.
    pub name: String,
    /// The pin of its certificate.
    pub pin: Pin,
}

/// The lead's members and invites.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    members: BTreeMap<String, MemberRecord>,
    invites: Vec<Invite>,
}

impl Registry {
    /// A registry with what the store holds.
    pub fn new(members: Vec<MemberRecord>, invites: Vec<Invite>) -> Self {
        Self {
            members: members.into_iter().map(|m| (m.name.clone(), m)).collect(),
            invites,
        }
    }

    /// Members in name order.
    pub fn members(&self) -> impl Iterator<Item = &MemberRecord> {
        self.members.values()
    }

    /// The member whose certificate has `pin`.
    pub fn by_pin(&self, pin: &Pin) -> Option<&MemberRecord> {
        self.members.values().find(|m| m.pin == *pin)
    }

    /// The member called `name`.
    pub fn get(&self, name: &str) -> Option<&MemberRecord> {
        self.members.get(name)
    }

    /// Records a new invite.
    pub fn issue(&mut self, invite: Invite) {
        self.invites.push(invite);
    }

    /// Whether an unused, unexpired invite exists (the lead then lets unpinned clients finish the
    /// TLS handshake to send a join request).
    pub fn accepting_joins(&self, now: SystemTime) -> bool {
        self.invites.iter().any(|i| !i.used && now < i.expires_at)
    }

    /// Checks a join request without changing anything.
    pub fn decide_join(
        &self,
        request: &JoinRequest,
        peer_pin: &Pin,
        lead_name: &str,
        secret: &CrewSecret,
        now: SystemTime,
    ) -> Result<JoinAccepted, JoinError> {
        let hash = request.join_secret.hash();
        let invite = self.invites.iter().find(|i| i.secret_hash == hash);
        let pinned_as = self.by_pin(peer_pin).map(|m| m.name.as_str());
        let pin_taken = pinned_as.is_some();
        let name_taken = |name: &str| pin_taken || self.members.contains_key(name);
        validate_join(
            request,
            &JoinContext {
                invite,
                peer_pin,
                lead_name,
                name_taken: &name_taken,
                pinned_as,
                crew_secret: secret,
                now,
            },
        )
    }

    /// The records to persist for an accepted join: the used invite and the new member.
    pub fn join_writes(&self, request: &JoinRequest) -> Option<(Invite, MemberRecord)> {
        let hash = request.join_secret.hash();
        let invite = self.invites.iter().find(|i| i.secret_hash == hash)?;
        Some((
            Invite {
                used: true,
                ..invite.clone()
            },
            MemberRecord {
                name: request.name.clone(),
                pin: request.member_pin,
            },
        ))
    }

    /// Applies an accepted join once it is durable.
    pub fn commit_join(&mut self, invite: Invite, member: MemberRecord) {
        if let Some(slot) = self
            .invites
            .iter_mut()
            .find(|i| i.secret_hash == invite.secret_hash)
        {
            *slot = invite;
        }
        self.members.insert(member.name.clone(), member);
    }

    /// Removes a member (after the store removal); returns its record.
    pub fn remove(&mut self, name: &str) -> Option<MemberRecord> {
        self.members.remove(name)
    }

    /// Forgets invites expired for longer than [`INVITE_KEEP`]; returns their hashes (to remove
    /// from the store).
    pub fn prune(&mut self, now: SystemTime) -> Vec<[u8; 32]> {
        let (gone, kept): (Vec<_>, Vec<_>) = self
            .invites
            .drain(..)
            .partition(|i| i.expires_at + INVITE_KEEP <= now);
        self.invites = kept;
        gone.into_iter().map(|i| i.secret_hash).collect()
    }
}

#[cfg(test)]
mod tests {
    use collie_crew::hello::JoinSecret;

    use super::*;

    fn pin(b: u8) -> Pin {
        Pin::of_spki(&[b])
    }

    fn request(secret: &JoinSecret, name: &str, p: Pin) -> JoinRequest {
        JoinRequest {
            join_secret: secret.clone(),
            name: name.into(),
            member_pin: p,
        }
    }

    #[test]
    fn join_commits_once_and_replay_is_refused() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let secret = JoinSecret::random();
        let crew = CrewSecret::random();
        let mut reg = Registry::default();
        assert!(!reg.accepting_joins(now));
        reg.issue(Invite::new(&secret, now + Duration::from_secs(600)));
        assert!(reg.accepting_joins(now));
        let req = request(&secret, "web-1", pin(1));
        assert!(reg.decide_join(&req, &pin(1), "lead", &crew, now).is_ok());
        let (inv, member) = reg.join_writes(&req).expect("invite exists");
        reg.commit_join(inv, member);
        assert!(!reg.accepting_joins(now));
        assert_eq!(reg.by_pin(&pin(1)).map(|m| m.name.as_str()), Some("web-1"));
        let again = request(&secret, "web-2", pin(2));
        assert_eq!(
            reg.decide_join(&again, &pin(2), "lead", &crew, now),
            Err(JoinError::InviteUsed)
        );
    }

    #[test]
    fn refusals_change_nothing() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let crew = CrewSecret::random();
        let mut reg = Registry::new(
            vec![MemberRecord {
                name: "web-1".into(),
                pin: pin(1),
            }],
            vec![],
        );
        let s = JoinSecret::random();
        reg.issue(Invite::new(&s, now + Duration::from_secs(10)));
        let taken = request(&s, "web-1", pin(2));
        assert_eq!(
            reg.decide_join(&taken, &pin(2), "lead", &crew, now),
            Err(JoinError::NameTaken("web-1".into()))
        );
        let late = request(&s, "web-2", pin(2));
        assert_eq!(
            reg.decide_join(&late, &pin(2), "lead", &crew, now + Duration::from_secs(11)),
            Err(JoinError::InviteExpired)
        );
        let wrong = request(&JoinSecret::random(), "web-2", pin(2));
        assert_eq!(
            reg.decide_join(&wrong, &pin(2), "lead", &crew, now),
            Err(JoinError::WrongSecret)
        );
        assert_eq!(reg.members().count(), 1);
        assert!(reg.accepting_joins(now));
        assert!(reg.prune(now).is_empty());
        assert_eq!(
            reg.prune(now + INVITE_KEEP + Duration::from_secs(11)).len(),
            1
        );
    }
}
