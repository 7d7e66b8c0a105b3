//! The crew actor as a member: joining a crew with an invite, and the link to the lead.

use std::net::SocketAddr;
use std::sync::Arc;

use collie_crew::hello::{
    validate_name, Capability, HelloConfig, JoinError, JoinReply, JoinRequest,
};
use collie_crew::identity::Identity;
use collie_crew::transport::quic::QuicEndpoint;
use collie_crew::transport::Transport;
use ractor::ActorRef;

use super::actor::{
    identity_dir, unavailable, CrewMsg, CrewState, Member, MemberStart, Role, VERSION,
};
use super::invite::InviteCode;
use super::link::{self, MemberLink};
use super::persist::{self, RoleRecord};
use super::{CrewError, CrewView};

impl CrewState {
    /// Starts a member's link.
    pub(super) fn start_member(
        &mut self,
        myself: &ActorRef<CrewMsg>,
        start: MemberStart,
        endpoint: Option<Arc<QuicEndpoint>>,
    ) -> Result<(), CrewError> {
        let identity =
            Arc::new(Identity::load_or_create(&identity_dir(&self.args)).map_err(unavailable)?);
        let endpoint = match endpoint {
            Some(e) => e,
            None => Arc::new(
                QuicEndpoint::member(Arc::clone(&identity), any_addr(&start.lead_address))
                    .map_err(unavailable)?,
            ),
        };
        // From here on this machine is called what it joined as, everywhere (SPEC §3.1).
        self.args.machine.set(start.name.clone());
        let mut config = HelloConfig::new(start.name.clone(), VERSION.to_owned(), start.secret);
        if !self.args.serve_tools {
            // `[crew] tools = false` declines the crew's file access, uploads and browsing
            // included.
            config.capabilities.remove(&Capability::Tools);
            config.capabilities.remove(&Capability::Uploads);
            config.capabilities.remove(&Capability::Browse);
        }
        self.tasks.spawn(link::member_loop(
            MemberLink {
                endpoint: Arc::clone(&endpoint),
                addr: start.lead_address,
                lead_pin: start.lead_pin,
                config: config.clone(),
                relay_streams: self.args.relay_streams.clone(),
                lead_link: Arc::clone(&self.args.lead_link),
                reach: Arc::clone(&self.args.reach),
            },
            myself.clone(),
        ));
        self.role = Role::Member(Box::new(Member {
            identity,
            endpoint,
            name: start.name,
            lead_name: start.lead_name,
            lead_pin: start.lead_pin,
            lead_address: start.lead_address,
            lead_version: None,
            config,
            door: None,
            door_task: None,
            notice: super::member_deputy::load_notice(&self.args.store),
            deputy_link: None,
        }));
        self.start_deputy_link();
        Ok(())
    }

    /// `collie crew join`: a refused or failed join leaves the bridge solo, as it was.
    pub(super) async fn join(
        &mut self,
        myself: &ActorRef<CrewMsg>,
        invite: String,
        name: Option<String>,
    ) -> Result<CrewView, CrewError> {
        self.must_be_solo()?;
        let code = InviteCode::parse(&invite)?;
        let name = name.unwrap_or_else(|| self.args.machine.get());
        validate_name(&name).map_err(CrewError::Refused)?;
        let addr = tokio::net::lookup_host(code.address.as_str())
            .await
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                CrewError::BadInput(format!(
                    "cannot resolve the lead's address {}",
                    code.address
                ))
            })?;
        let dir = identity_dir(&self.args);
        let existed = dir.exists();
        let outcome = self.try_join(myself, &code, addr, name).await;
        if outcome.is_err() {
            let _ = self.stop_role();
            if !existed {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        outcome
    }

    async fn try_join(
        &mut self,
        myself: &ActorRef<CrewMsg>,
        code: &InviteCode,
        addr: SocketAddr,
        name: String,
    ) -> Result<CrewView, CrewError> {
        let identity =
            Arc::new(Identity::load_or_create(&identity_dir(&self.args)).map_err(unavailable)?);
        let endpoint = Arc::new(
            QuicEndpoint::member(Arc::clone(&identity), any_addr(&addr)).map_err(unavailable)?,
        );
        let request = JoinRequest {
            join_secret: code.secret.clone(),
            name: name.clone(),
            member_pin: identity.pin(),
        };
        let accepted = match link::join(&endpoint, addr, code.lead_pin, request).await {
            Ok(JoinReply::Accepted(a)) => a,
            Ok(JoinReply::Refused(e)) => {
                endpoint.close("refused");
                return Err(CrewError::Refused(e));
            }
            Ok(_) => {
                endpoint.close("refused");
                return Err(CrewError::Refused(JoinError::Unknown));
            }
            Err(e) => {
                endpoint.close("failed");
                return Err(e);
            }
        };
        let record = RoleRecord::Member {
            name: name.clone(),
            secret: hex::encode(accepted.crew_secret.as_bytes()),
            lead_name: accepted.lead_name.clone(),
            lead_pin: code.lead_pin,
            lead_address: addr,
        };
        persist::save_role(&self.args.store, &record)?;
        let start = MemberStart {
            name,
            secret: accepted.crew_secret,
            lead_name: accepted.lead_name,
            lead_pin: code.lead_pin,
            lead_address: addr,
        };
        self.start_member(myself, start, Some(endpoint))?;
        self.publish();
        Ok(self.args.view.load().as_ref().clone())
    }

    /// The member's link came up (with the lead's version) or went down.
    pub(super) fn member_link(&mut self, lead_version: Option<String>) {
        if let Role::Member(m) = &mut self.role {
            m.lead_version = lead_version;
            self.publish();
        }
    }
}

/// The wildcard address of `addr`'s family, port 0 (a member's local socket).
fn any_addr(addr: &SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
        SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
    }
}
