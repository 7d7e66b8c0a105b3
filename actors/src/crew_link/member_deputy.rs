//! The crew actor as a member, for the deputy (SPEC §13).
//!
//! - **On the deputy: its door.** While it holds the lead's registry copy, the deputy listens on
//!   the crew port as a lead would ([`Lead`] over the copy's roster, with the crew secret it holds
//!   as a member and no invites): the crew's members say hello to it while they cannot reach the
//!   lead, and their relay clients are published as the door's ([`super::DoorRelays`]), which the
//!   bridge lets only a lead's device served at the standby door use.
//! - **On every member: the notice.** The lead tells each member who the deputy is and where its
//!   door listens, signed with the lead's key; the member checks the signature against the lead's
//!   pin, keeps the notice in the store and runs [`link::deputy_loop`], which links to the door
//!   only while the lead is out of reach.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use collie_crew::relay::deputy::DeputyNotice;
use collie_crew::tls::{ClientAdmission, PinSet};
use collie_crew::transport::quic::QuicEndpoint;
use collie_crew::transport::Transport;
use ractor::ActorRef;

use super::actor::{unavailable, CrewMsg, CrewState, Lead, Role, VERSION};
use super::core::MemberRecord;
use super::lead::{Effect, LeadCore};
use super::link::{self, DeputyDial, MemberLink};
use super::CrewError;
use crate::store::{Change, Table};

/// The key of the deputy notice in a member's `crew` table.
const NOTICE_KEY: &str = "deputy_notice";

/// The stored notice, if any (one that does not read counts as none; the lead sends it again).
pub(super) fn load_notice(store: &crate::store::Store) -> Option<DeputyNotice> {
    let bytes = store.get(Table::Crew, NOTICE_KEY).ok()??;
    serde_json::from_slice(&bytes)
        .inspect_err(|e| tracing::error!(error = %e, "the stored deputy notice is unreadable"))
        .ok()
}

impl CrewState {
    /// On a member: opens the deputy's door for `roster` (closing the one open for another
    /// roster), or closes it (`None`). Returns the door's port.
    pub(super) fn door(
        &mut self,
        myself: &ActorRef<CrewMsg>,
        roster: Option<Vec<MemberRecord>>,
    ) -> Result<Option<u16>, CrewError> {
        let Role::Member(member) = &mut self.role else {
            return Err(unavailable("only a member stands in for its lead"));
        };
        let previous = member.door.as_ref().map(|d| d.address);
        if let Some(door) = member.door.take() {
            door.endpoint.close("the deputy's door closes");
        }
        if let Some(task) = member.door_task.take() {
            task.abort();
        }
        let Some(roster) = roster else {
            self.publish();
            return Ok(None);
        };
        let (core, effects) = LeadCore::open(
            member.name.clone(),
            VERSION.to_owned(),
            member.config.secret.clone(),
            roster,
            Vec::new(),
            SystemTime::now(),
        );
        let pins = PinSet::new();
        for effect in &effects {
            if let Effect::Pin(pin) = effect {
                pins.insert(*pin);
            }
        }
        // The door keeps its port across a new roster, as a lead keeps its own.
        let bind = self.args.bind;
        let open = |at: SocketAddr| {
            QuicEndpoint::lead(
                Arc::clone(&member.identity),
                at,
                pins.check(),
                ClientAdmission::PinnedOnly,
            )
        };
        let endpoint = match previous.filter(|_| bind.port() == 0) {
            Some(prev) => open(prev).or_else(|_| open(bind)),
            None => open(bind),
        }
        .map_err(|e| unavailable(format!("the deputy's door cannot listen on {bind}: {e}")))?;
        let endpoint = Arc::new(endpoint);
        let address = endpoint.local_addr().map_err(unavailable)?;
        let task = self.tasks.spawn(link::accept_loop(
            Arc::clone(&endpoint),
            myself.clone(),
            self.args.uplink_streams.clone(),
        ));
        member.door_task = Some(task);
        member.door = Some(Box::new(Lead {
            core,
            identity: Arc::clone(&member.identity),
            endpoint,
            pins,
            address,
            links: std::collections::BTreeMap::new(),
            witness: std::collections::BTreeMap::new(),
            deputy: None,
        }));
        Ok(Some(address.port()))
    }

    /// On a member: the lead's notice of who the deputy is (`None`: no one). Checked against the
    /// lead's pin, kept, and the link to the deputy's door started anew.
    pub(super) fn notice(&mut self, notice: Option<DeputyNotice>) -> Result<(), CrewError> {
        let Role::Member(member) = &mut self.role else {
            return Err(unavailable("only a member takes a deputy notice"));
        };
        if let Some(n) = &notice {
            n.verify(member.lead_pin)
                .map_err(|e| CrewError::BadInput(e.to_string()))?;
        }
        if member.notice == notice {
            return Ok(());
        }
        let change = match &notice {
            Some(n) => Change::Put(
                NOTICE_KEY.to_owned(),
                serde_json::to_vec(n).map_err(unavailable)?,
            ),
            None => Change::Remove(NOTICE_KEY.to_owned()),
        };
        self.args
            .store
            .apply(Table::Crew, &[change])
            .map_err(unavailable)?;
        member.notice = notice;
        self.start_deputy_link();
        self.publish();
        Ok(())
    }

    /// (Re)starts the member's link to the deputy's door named by its notice (none: stopped). A
    /// member that is itself the deputy never dials its own door.
    pub(super) fn start_deputy_link(&mut self) {
        let Role::Member(member) = &mut self.role else {
            return;
        };
        if let Some(task) = member.deputy_link.take() {
            task.abort();
        }
        let Some(notice) = member.notice.clone() else {
            return;
        };
        if notice.pin == member.identity.pin() {
            return;
        }
        let addr = match notice.address.parse::<SocketAddr>() {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(address = %notice.address, error = %e, "the deputy's address does not read");
                return;
            }
        };
        let link = MemberLink {
            endpoint: Arc::clone(&member.endpoint),
            addr,
            lead_pin: notice.pin,
            config: member.config.clone(),
            relay_streams: self.args.relay_streams.clone(),
            lead_link: Arc::default(),
            reach: Arc::clone(&self.args.reach),
        };
        let dial = DeputyDial {
            name: notice.name,
            reach: Arc::clone(&self.args.reach),
        };
        member.deputy_link = Some(self.tasks.spawn(link::deputy_loop(link, dial)));
    }
}
