//! The crew actor as a lead: opening the endpoint, and applying what [`LeadCore`] decides to the
//! store, the audit log, the TLS pin set and admission, the connections and the published view.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use collie_crew::hello::{
    CrewSecret, Exporter, Hello, Invite, JoinError, JoinReply, JoinRequest, JoinSecret,
};
use collie_crew::identity::Identity;
use collie_crew::pin::Pin;
use collie_crew::relay::client::{Limits, RelayClient};
use collie_crew::tls::{ClientAdmission, PinSet};
use collie_crew::transport::quic::{QuicConnection, QuicEndpoint};
use collie_crew::transport::{Connection, Transport};
use ractor::ActorRef;

use super::actor::{identity_dir, unavailable, CrewMsg, CrewState, Lead, Link, Role, VERSION};
use super::invite::InviteCode;
use super::lead::{Effect, JoinDecision, LeadCore};
use super::link;
use super::persist::{self, RoleRecord};
use super::{CrewError, CrewView};
use crate::audit::AuditMsg;
use crate::store::Table;

impl CrewState {
    /// Opens the lead's endpoint and starts accepting.
    pub(super) fn start_lead(
        &mut self,
        myself: &ActorRef<CrewMsg>,
        secret: CrewSecret,
        previous: Option<SocketAddr>,
    ) -> Result<(), CrewError> {
        let identity =
            Arc::new(Identity::load_or_create(&identity_dir(&self.args)).map_err(unavailable)?);
        let (members, invites) = persist::load_registry(&self.args.store)?;
        let witness = super::lead_witness::load_witness(&self.args.store)?;
        let deputy = super::lead_deputy::load_deputy(&self.args.store)?;
        let (core, effects) = LeadCore::open(
            self.args.machine.get(),
            VERSION.to_owned(),
            secret,
            members,
            invites,
            SystemTime::now(),
        );
        let pins = PinSet::new();
        let mut admission = ClientAdmission::PinnedOnly;
        for effect in &effects {
            match effect {
                Effect::Pin(pin) => {
                    pins.insert(*pin);
                }
                Effect::Admission(a) => admission = *a,
                // Forgetting invites expired long ago is housekeeping: a failure costs nothing.
                Effect::Store(changes) => {
                    if let Err(e) = self.args.store.apply(Table::Crew, changes) {
                        tracing::warn!(error = %e, "cannot forget old crew invites");
                    }
                }
                _ => {}
            }
        }
        // A lead whose port was chosen by the OS keeps it across restarts if it can, so members
        // find it again.
        let bind = self.args.bind;
        let open =
            |at: SocketAddr| QuicEndpoint::lead(Arc::clone(&identity), at, pins.check(), admission);
        let endpoint = match previous.filter(|_| bind.port() == 0) {
            Some(prev) => open(SocketAddr::new(bind.ip(), prev.port())).or_else(|_| open(bind)),
            None => open(bind),
        }
        .map_err(|e| unavailable(format!("cannot listen on {bind}: {e}")))?;
        let endpoint = Arc::new(endpoint);
        let address = endpoint.local_addr().map_err(unavailable)?;
        self.tasks.spawn(link::accept_loop(
            Arc::clone(&endpoint),
            myself.clone(),
            self.args.uplink_streams.clone(),
        ));
        // A name left behind by a removal whose store write failed names no member.
        let deputy = deputy.filter(|d| core.members().any(|m| &m.name == d));
        self.role = Role::Lead(Box::new(Lead {
            core,
            identity,
            endpoint,
            pins,
            address,
            links: BTreeMap::new(),
            witness,
            deputy,
        }));
        Ok(())
    }

    /// `collie crew init`.
    pub(super) async fn init(&mut self, myself: &ActorRef<CrewMsg>) -> Result<CrewView, CrewError> {
        self.must_be_solo()?;
        let dir = identity_dir(&self.args);
        let existed = dir.exists();
        let secret = CrewSecret::random();
        let result = self
            .start_lead(myself, secret.clone(), None)
            .and_then(|()| {
                let Role::Lead(lead) = &self.role else {
                    return Err(unavailable("lead did not start"));
                };
                let record = RoleRecord::Lead {
                    secret: hex::encode(secret.as_bytes()),
                    address: Some(lead.address),
                };
                persist::save_role(&self.args.store, &record)
            });
        if let Err(e) = result {
            let _ = self.stop_role();
            if !existed {
                let _ = std::fs::remove_dir_all(&dir);
            }
            return Err(e);
        }
        self.publish();
        Ok(self.args.view.load().as_ref().clone())
    }

    /// `collie crew invite`.
    pub(super) fn invite(
        &mut self,
        expires: Duration,
        address: Option<String>,
    ) -> Result<String, CrewError> {
        let Role::Lead(lead) = &self.role else {
            return Err(CrewError::NotLead);
        };
        let address = match address.or_else(|| self.args.address.clone()) {
            Some(a) => a,
            None if lead.address.ip().is_unspecified() => return Err(CrewError::BadInput(
                "the lead listens on every address: pass --address HOST:PORT that members can dial"
                    .into(),
            )),
            None => lead.address.to_string(),
        };
        if !super::invite::address_fits(&address) {
            // The invite must read back on the member (`InviteCode::parse`).
            return Err(CrewError::BadInput(
                "--address: a HOST:PORT without spaces, at most 261 characters".into(),
            ));
        }
        let secret = JoinSecret::random();
        let now = SystemTime::now();
        let plan = lead
            .core
            .invite(Invite::new(&secret, now + expires))
            .map_err(unavailable)?;
        for effect in &plan.durable {
            self.durable(effect)?;
        }
        let lead_pin = lead.identity.pin();
        let Role::Lead(lead) = &mut self.role else {
            return Err(CrewError::NotLead);
        };
        let effects = lead.core.commit_invite(plan, now);
        self.apply(effects);
        Ok(InviteCode {
            lead_pin,
            secret,
            address,
        }
        .to_string())
    }

    /// `collie crew remove NAME`.
    pub(super) async fn remove(&mut self, name: &str) -> Result<(), CrewError> {
        let Role::Lead(lead) = &self.role else {
            return Err(CrewError::NotLead);
        };
        let plan = lead
            .core
            .remove(name)
            .ok_or_else(|| CrewError::NoSuchMember(name.to_owned()))?;
        for effect in &plan.durable {
            self.durable_async(effect).await?;
        }
        let Role::Lead(lead) = &mut self.role else {
            return Err(CrewError::NotLead);
        };
        let effects = lead.core.commit_remove(plan);
        if lead.witness.remove(name).is_some() {
            // Housekeeping after the removal: a failure leaves heads nobody asks for.
            let forget = super::lead_witness::forget_change(name);
            if let Err(e) = self.args.store.apply(Table::Crew, &[forget]) {
                tracing::warn!(error = %e, member = %name, "cannot forget a removed member's audit heads");
            }
        }
        self.forget_deputy(name);
        self.apply(effects);
        Ok(())
    }

    /// A join request on a lead's connection whose certificate has `peer`.
    pub(super) async fn lead_join(&mut self, request: JoinRequest, peer: Pin) -> JoinReply {
        let Role::Lead(lead) = &self.role else {
            return JoinReply::Refused(JoinError::Unknown);
        };
        let plan = match lead.core.join(&request, &peer, SystemTime::now()) {
            JoinDecision::Reply(reply) => {
                if let JoinReply::Refused(e) = &reply {
                    tracing::info!(name = %request.name, reason = %e, "crew join refused");
                }
                return reply;
            }
            JoinDecision::Plan(plan) => plan,
        };
        for effect in &plan.durable {
            if self.durable_async(effect).await.is_err() {
                return JoinReply::Refused(JoinError::Unknown);
            }
        }
        let Role::Lead(lead) = &mut self.role else {
            return JoinReply::Refused(JoinError::Unknown);
        };
        let (reply, effects) = lead.core.commit_join(plan, SystemTime::now());
        self.apply(effects);
        reply
    }

    /// A hello on a lead's connection: the member comes online, or the reason to close.
    pub(super) fn lead_hello(
        &mut self,
        hello: &Hello,
        exporter: Exporter,
        conn: QuicConnection,
    ) -> Result<(Hello, String, u64), String> {
        let Some(lead) = self.acceptor() else {
            return Err("not a lead".into());
        };
        let served = lead.core.hello(hello, &conn.peer_pin(), exporter)?;
        let relay = Arc::new(RelayClient::new(
            conn.clone(),
            served.capabilities,
            Limits::default(),
        ));
        lead.links.insert(served.conn, Link { conn, relay });
        self.apply(served.effects);
        Ok((served.answer, served.name, served.conn))
    }

    /// Connection `conn` of member `name` ended.
    pub(super) fn lead_gone(&mut self, name: &str, conn: u64) {
        if let Some(lead) = self.acceptor() {
            lead.links.remove(&conn);
            let effects = lead.core.gone(name, conn);
            self.apply(effects);
        }
    }

    /// A durable effect that needs no await (a store batch).
    fn durable(&self, effect: &Effect) -> Result<(), CrewError> {
        match effect {
            Effect::Store(changes) => self
                .args
                .store
                .apply(Table::Crew, changes)
                .map_err(unavailable),
            _ => Err(unavailable("this change cannot be made here")),
        }
    }

    /// A durable effect: the audit line (written before what it records) or a store batch.
    async fn durable_async(&self, effect: &Effect) -> Result<(), CrewError> {
        match effect {
            Effect::Audit(rec) => match self
                .args
                .audit
                .call(|r| AuditMsg::Append(rec.clone(), r))
                .await
            {
                Ok(Ok(_)) => Ok(()),
                _ => Err(CrewError::AuditUnavailable),
            },
            other => self.durable(other),
        }
    }

    /// Applies the effects that follow a commit.
    fn apply(&mut self, effects: Vec<Effect>) {
        let mut publish = false;
        if let Some(lead) = self.acceptor() {
            for effect in effects {
                match effect {
                    Effect::Pin(pin) => {
                        lead.pins.insert(pin);
                    }
                    Effect::Unpin(pin) => {
                        lead.pins.remove(&pin);
                    }
                    Effect::Admission(admission) => {
                        if let Err(e) = lead.endpoint.set_admission(admission) {
                            tracing::warn!(error = %e, "cannot update the crew's TLS admission");
                        }
                    }
                    Effect::Close { conn, reason } => {
                        if let Some(link) = lead.links.remove(&conn) {
                            link.conn.close(reason);
                        }
                    }
                    Effect::Publish => publish = true,
                    Effect::Audit(_) | Effect::Store(_) => {
                        tracing::error!("a durable crew effect came after its commit; ignored");
                    }
                }
            }
        }
        if publish {
            self.publish();
        }
    }
}
