//! The lead's orchestration as a pure core (SPEC §8): joins, hellos, the online table and removals.
//! Events in, effects out, no I/O and no clock (`now` is an argument) — the shape of quinn-proto's
//! connection. The crew actor applies the effects to the store, the audit log, the TLS pin set and
//! the connections; the simulations (`simulations/`) apply them to their virtual network. Both run
//! this same code, so what the simulations check is what the lead does.
//!
//! **Two phases.** A change that must be durable comes back as a [`Plan`]: its `durable` effects
//! (the audit line, then one store batch) are applied in order by the caller, and only when every
//! one succeeded does the caller hand the plan back to `commit_*`, which changes the core and
//! returns the effects that follow (pin the member, widen or narrow the TLS admission, close a
//! connection, publish the view). A plan dropped after a failure changed nothing, so a refused or
//! failed join or removal leaves no trace but its refusal.
//!
//! **The online table.** A member is online from an accepted hello until its connection ends;
//! each accepted hello gets a fresh connection number, so the end of a replaced connection never
//! takes the newer one offline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use collie_crew::hello::Capability;
use collie_crew::hello::{
    CrewSecret, Exporter, Hello, HelloConfig, Invite, JoinAccepted, JoinError, JoinReply,
    JoinRequest, LeadHandshake,
};
use collie_crew::pin::Pin;
use collie_crew::tls::ClientAdmission;

use super::core::{MemberRecord, Registry};
use super::persist;
use crate::audit::{AuditEventKind, AuditRecord};
use crate::store::Change;

/// Something the caller does for the core, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Write this audit line (durable; failing it fails the plan).
    Audit(AuditRecord),
    /// Apply these changes to the store's `crew` table as one batch (durable; failing it fails
    /// the plan).
    Store(Vec<Change>),
    /// Trust this pin in the TLS handshake from now on.
    Pin(Pin),
    /// Stop trusting this pin.
    Unpin(Pin),
    /// Set what the TLS handshake admits besides pinned members.
    Admission(ClientAdmission),
    /// Close connection `conn` with `reason`.
    Close {
        /// The connection number of its hello.
        conn: u64,
        /// Why, for the peer.
        reason: &'static str,
    },
    /// The view (members, online) changed: publish it.
    Publish,
}

/// A change waiting for its durable effects.
#[derive(Debug)]
#[must_use = "apply the durable effects, then commit the plan"]
pub struct Plan<C> {
    /// Apply these in order; commit only if all succeeded.
    pub durable: Vec<Effect>,
    commit: C,
}

/// What an accepted hello gives the caller.
#[derive(Debug)]
pub struct Served {
    /// The lead's hello, to send back.
    pub answer: Hello,
    /// The member's crew name.
    pub name: String,
    /// This connection's number (for [`LeadCore::gone`] and [`Effect::Close`]).
    pub conn: u64,
    /// What the member declared it can serve.
    pub capabilities: BTreeSet<Capability>,
    /// Apply these (a replaced connection's close, the view).
    pub effects: Vec<Effect>,
}

/// A member's link as the online table holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Online {
    /// The connection number of its hello.
    pub conn: u64,
    /// Its bridge version, from the hello.
    pub version: String,
}

/// A join to commit: the used invite and the new member.
#[derive(Debug)]
pub struct Joining {
    invite: Invite,
    member: MemberRecord,
    accepted: JoinAccepted,
}

/// A removal to commit.
#[derive(Debug)]
pub struct Removing {
    member: MemberRecord,
}

/// What a join request gets: an answer now, or a plan whose commit answers.
#[derive(Debug)]
pub enum JoinDecision {
    /// Answer this at once (a refusal, or the same machine again after its acceptance was lost).
    Reply(JoinReply),
    /// Make it durable, then [`LeadCore::commit_join`].
    Plan(Plan<Joining>),
}

/// The lead: its name, the crew secret, the registry and the online table.
#[derive(Debug)]
pub struct LeadCore {
    name: String,
    version: String,
    secret: CrewSecret,
    registry: Registry,
    online: BTreeMap<String, Online>,
    next_conn: u64,
}

impl LeadCore {
    /// A lead called `name` (bridge `version`) with what the store holds. The effects pin the
    /// members, set the admission and forget invites expired long ago.
    pub fn open(
        name: String,
        version: String,
        secret: CrewSecret,
        members: Vec<MemberRecord>,
        invites: Vec<Invite>,
        now: SystemTime,
    ) -> (Self, Vec<Effect>) {
        let mut registry = Registry::new(members, invites);
        let gone = registry.prune(now);
        let mut effects = Vec::new();
        if !gone.is_empty() {
            effects.push(Effect::Store(
                gone.iter()
                    .map(|hash| Change::Remove(persist::invite_key(hash)))
                    .collect(),
            ));
        }
        effects.extend(registry.members().map(|m| Effect::Pin(m.pin)));
        effects.push(Effect::Admission(admission(&registry, now)));
        effects.push(Effect::Publish);
        let core = Self {
            name,
            version,
            secret,
            registry,
            online: BTreeMap::new(),
            next_conn: 0,
        };
        (core, effects)
    }

    /// The lead's crew name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pinned members, in name order.
    pub fn members(&self) -> impl Iterator<Item = &MemberRecord> {
        self.registry.members()
    }

    /// The member called `name`, if it is online.
    pub fn online(&self, name: &str) -> Option<&Online> {
        self.online.get(name)
    }

    /// An invite to record: durable first, then [`LeadCore::commit_invite`].
    pub fn invite(&self, invite: Invite) -> Result<Plan<Invite>, serde_json::Error> {
        let key = persist::invite_key(&invite.secret_hash);
        let bytes = serde_json::to_vec(&invite)?;
        Ok(Plan {
            durable: vec![Effect::Store(vec![Change::Put(key, bytes)])],
            commit: invite,
        })
    }

    /// Records a durable invite: unpinned machines may now finish the TLS handshake to join.
    pub fn commit_invite(&mut self, plan: Plan<Invite>, now: SystemTime) -> Vec<Effect> {
        self.registry.issue(plan.commit);
        vec![Effect::Admission(admission(&self.registry, now))]
    }

    /// A join request from a connection whose certificate has `peer`.
    pub fn join(&self, request: &JoinRequest, peer: &Pin, now: SystemTime) -> JoinDecision {
        let accepted = match self
            .registry
            .decide_join(request, peer, &self.name, &self.secret, now)
        {
            Ok(accepted) => accepted,
            Err(e) => return JoinDecision::Reply(JoinReply::Refused(e)),
        };
        if self.registry.by_pin(peer).is_some() {
            // The same machine again, after its acceptance was lost: nothing new to record.
            return JoinDecision::Reply(JoinReply::Accepted(accepted));
        }
        let Some((invite, member)) = self.registry.join_writes(request) else {
            return JoinDecision::Reply(JoinReply::Refused(JoinError::WrongSecret));
        };
        let changes = match persist::join_changes(&invite, &member) {
            Ok(changes) => changes,
            Err(_) => return JoinDecision::Reply(JoinReply::Refused(JoinError::Unknown)),
        };
        let line = AuditRecord::new(AuditEventKind::CrewJoined, self.name.clone())
            .with_detail("member", member.name.clone())
            .with_detail("pin", member.pin.to_string());
        JoinDecision::Plan(Plan {
            durable: vec![Effect::Audit(line), Effect::Store(changes)],
            commit: Joining {
                invite,
                member,
                accepted,
            },
        })
    }

    /// Applies a durable join: the member is pinned; the answer is the acceptance.
    pub fn commit_join(
        &mut self,
        plan: Plan<Joining>,
        now: SystemTime,
    ) -> (JoinReply, Vec<Effect>) {
        let Joining {
            invite,
            member,
            accepted,
        } = plan.commit;
        let pin = member.pin;
        self.registry.commit_join(invite, member);
        let effects = vec![
            Effect::Pin(pin),
            Effect::Admission(admission(&self.registry, now)),
            Effect::Publish,
        ];
        (JoinReply::Accepted(accepted), effects)
    }

    /// A hello on a connection whose certificate has `pin`: the member comes online (a link it
    /// still had is closed: the newer one wins), or the reason to close the connection.
    pub fn hello(
        &mut self,
        hello: &Hello,
        pin: &Pin,
        exporter: Exporter,
    ) -> Result<Served, String> {
        let Some(member) = self.registry.by_pin(pin).cloned() else {
            return Err("not a member of this crew".into());
        };
        let config = HelloConfig::new(self.name.clone(), self.version.clone(), self.secret.clone());
        let mut handshake = LeadHandshake::new(config, member.name.clone(), exporter);
        let answer = handshake.on_hello(hello).map_err(|e| e.to_string())?;
        let capabilities = handshake
            .member()
            .map(|peer| peer.capabilities.clone())
            .unwrap_or_default();
        self.next_conn += 1;
        let conn = self.next_conn;
        let previous = self.online.insert(
            member.name.clone(),
            Online {
                conn,
                version: hello.bridge_version.clone(),
            },
        );
        let mut effects = Vec::new();
        if let Some(old) = previous {
            effects.push(Effect::Close {
                conn: old.conn,
                reason: "replaced by a newer connection",
            });
        }
        effects.push(Effect::Publish);
        Ok(Served {
            answer,
            name: member.name,
            conn,
            capabilities,
            effects,
        })
    }

    /// Connection `conn` of member `name` ended. Only the member's current connection takes it
    /// offline.
    pub fn gone(&mut self, name: &str, conn: u64) -> Vec<Effect> {
        if self.online.get(name).is_some_and(|o| o.conn == conn) {
            self.online.remove(name);
            vec![Effect::Publish]
        } else {
            Vec::new()
        }
    }

    /// `collie crew remove NAME`: the audit line and the store removal first.
    pub fn remove(&self, name: &str) -> Option<Plan<Removing>> {
        let member = self.registry.get(name)?.clone();
        let line = AuditRecord::new(AuditEventKind::CrewRemoved, self.name.clone())
            .with_detail("member", member.name.clone())
            .with_detail("pin", member.pin.to_string());
        Some(Plan {
            durable: vec![
                Effect::Audit(line),
                Effect::Store(vec![Change::Remove(persist::member_key(&member.name))]),
            ],
            commit: Removing { member },
        })
    }

    /// Applies a durable removal: unpinned, its connection closed now.
    pub fn commit_remove(&mut self, plan: Plan<Removing>) -> Vec<Effect> {
        let member = plan.commit.member;
        self.registry.remove(&member.name);
        let mut effects = vec![Effect::Unpin(member.pin)];
        if let Some(online) = self.online.remove(&member.name) {
            effects.push(Effect::Close {
                conn: online.conn,
                reason: "removed from the crew",
            });
        }
        effects.push(Effect::Publish);
        effects
    }
}

/// Unpinned machines may finish the handshake only while an unused invite is valid.
fn admission(registry: &Registry, now: SystemTime) -> ClientAdmission {
    if registry.accepting_joins(now) {
        ClientAdmission::JoinAllowed
    } else {
        ClientAdmission::PinnedOnly
    }
}

#[cfg(test)]
mod tests;
