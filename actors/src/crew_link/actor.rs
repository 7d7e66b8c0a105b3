//! The crew actor's ractor shell: owns the role, the endpoint, the link tasks and the clock. The
//! lead's decisions are [`LeadCore`]'s (applied in `lead_role.rs`); a member's join and link
//! are in `member_role.rs`. See the module docs of [`crate::crew_link`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use collie_crew::hello::{CrewSecret, Exporter, Hello, HelloConfig, JoinReply, JoinRequest};
use collie_crew::identity::Identity;
use collie_crew::pin::Pin;
use collie_crew::relay::client::RelayClient;
use collie_crew::relay::deputy::DeputyNotice;
use collie_crew::tls::PinSet;
use collie_crew::transport::quic::{QuicConnection, QuicEndpoint};
use collie_crew::transport::Transport;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

use super::lead::LeadCore;
use super::persist::{self, RoleRecord};
use super::{
    CrewError, CrewRole, CrewView, LeadLink, MachineView, RelayStream, Relays, UplinkStream,
};
use crate::audit::witness::{KeptHead, KeptHeads};
use crate::audit::{AuditMsg, ChainTail};
use crate::machine::MachineName;
use crate::slot::Slot;
use crate::store::Store;

/// What a member's link starts from: the stored role.
pub(super) struct MemberStart {
    pub(super) name: String,
    pub(super) secret: CrewSecret,
    pub(super) lead_name: String,
    pub(super) lead_pin: Pin,
    pub(super) lead_address: SocketAddr,
}

/// This bridge's version, in hellos and views.
pub(super) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The crew actor.
pub struct CrewActor;

/// What the crew actor needs; cloned at each (re)start.
#[derive(Clone)]
pub struct CrewArgs {
    /// The store (table `crew`).
    pub store: Store,
    /// The audit actor (`crew.joined`, `crew.removed`).
    pub audit: Slot<AuditMsg>,
    /// The state dir; the identity lives in `<state>/crew/`.
    pub state_dir: PathBuf,
    /// This machine's name; a member's is the name it joined with (set here at the join, and at
    /// start from the stored membership).
    pub machine: MachineName,
    /// Where a lead listens (`COLLIE_HOST:COLLIE_CREW_PORT`; port 0 lets the OS choose).
    pub bind: SocketAddr,
    /// The address invites name unless `collie crew invite --address` says otherwise.
    pub address: Option<String>,
    /// Where the actor publishes its view.
    pub view: Arc<ArcSwap<CrewView>>,
    /// Where a lead publishes the relay clients of its online members.
    pub relays: Relays,
    /// Where the deputy publishes the relay clients of the members at its door.
    pub door_relays: super::DoorRelays,
    /// Where a member hands the relay streams the lead opens.
    pub relay_streams: mpsc::Sender<RelayStream>,
    /// Where a member publishes its live connection to the lead.
    pub lead_link: LeadLink,
    /// Where a member says whether it reaches its lead, and learns whether it is the deputy.
    pub reach: Arc<super::LeadReach>,
    /// Where the lead hands the streams members open after their hello.
    pub uplink_streams: mpsc::Sender<UplinkStream>,
    /// Whether this machine, as a member, serves its tools and takes uploads for its lead (the
    /// `tools` and `uploads` capabilities).
    pub serve_tools: bool,
}

/// Messages of the crew actor.
#[non_exhaustive]
pub enum CrewMsg {
    /// `collie crew init`: become a lead.
    Init(RpcReplyPort<Result<CrewView, CrewError>>),
    /// `collie crew invite`: a one-time invite string.
    Invite {
        /// How long it is valid.
        expires: Duration,
        /// The address members dial, if not the bound one.
        address: Option<String>,
        /// The invite string.
        reply: RpcReplyPort<Result<String, CrewError>>,
    },
    /// `collie crew join`: join the crew of an invite.
    Join {
        /// The invite string.
        invite: String,
        /// The name to ask for (default: the machine's name).
        name: Option<String>,
        /// The new view.
        reply: RpcReplyPort<Result<CrewView, CrewError>>,
    },
    /// `collie crew remove`: unpin a member and close its connection.
    Remove {
        /// The member's name.
        name: String,
        /// Done.
        reply: RpcReplyPort<Result<(), CrewError>>,
    },
    /// From a lead's connection task: decide a join request.
    LeadJoin {
        /// The request.
        request: JoinRequest,
        /// The pin of the connection's certificate.
        peer: Pin,
        /// The answer to send.
        reply: RpcReplyPort<JoinReply>,
    },
    /// From a lead's connection task: check a member's hello and mark it online.
    LeadHello {
        /// The hello.
        hello: Hello,
        /// The connection's exporter value.
        exporter: Exporter,
        /// The connection (closed by `Remove`).
        conn: QuicConnection,
        /// The lead's hello, the member's name and the connection's id; or why to close.
        reply: RpcReplyPort<Result<(Hello, String, u64), String>>,
    },
    /// From a lead's connection task: a member's connection ended.
    LeadGone {
        /// The member.
        name: String,
        /// The connection's id from `LeadHello`.
        conn_id: u64,
    },
    /// From a member's link task: the link is up (with the lead's version) or down.
    MemberLink {
        /// `Some` while up.
        lead_version: Option<String>,
    },
    /// On a lead: a member sent its audit chain head; keep it (and audit it, as
    /// [`KeptHeads`] says).
    KeepHead {
        /// The member (named by its connection).
        member: String,
        /// Its log's last line.
        head: ChainTail,
        /// Sent as the member's bridge stops.
        stopping: bool,
        /// The `seq`s of kept heads the member's log does not hold.
        contradicted: Vec<u64>,
        /// Kept, or why not.
        reply: RpcReplyPort<Result<(), CrewError>>,
    },
    /// `collie crew deputy set NAME` (`Some`) or `clear` (`None`) on a lead (SPEC §13).
    Deputy {
        /// The member, or no one.
        name: Option<String>,
        /// Done.
        reply: RpcReplyPort<Result<(), CrewError>>,
    },
    /// On a lead: the notice naming its deputy, whose door listens at `address`, signed with the
    /// lead's key.
    SignNotice {
        /// The door's address as members dial it.
        address: String,
        /// The notice, or why not (no lead, no deputy).
        reply: RpcReplyPort<Result<DeputyNotice, CrewError>>,
    },
    /// On a member: open the deputy's door for the copy's roster (`Some`) or close it; answers the
    /// door's port.
    Door {
        /// The crew's other members.
        roster: Option<Vec<super::core::MemberRecord>>,
        /// The port, or why not.
        reply: RpcReplyPort<Result<Option<u16>, CrewError>>,
    },
    /// On a member: the lead's notice of who the deputy is (`None`: no one).
    Notice {
        /// The notice.
        notice: Option<DeputyNotice>,
        /// Kept, or why not.
        reply: RpcReplyPort<Result<(), CrewError>>,
    },
    /// On a lead: the heads of a member's audit log it keeps, oldest first.
    Witnessed {
        /// The member (named by its connection).
        member: String,
        /// The heads.
        reply: RpcReplyPort<Result<Vec<KeptHead>, CrewError>>,
    },
}

/// A lead's live connection to an online member.
pub(super) struct Link {
    pub(super) conn: QuicConnection,
    pub(super) relay: Arc<RelayClient<QuicConnection>>,
}

/// The lead role: the core's decisions, and the I/O they act on.
pub(super) struct Lead {
    pub(super) core: LeadCore,
    pub(super) identity: Arc<Identity>,
    pub(super) endpoint: Arc<QuicEndpoint>,
    pub(super) pins: PinSet,
    pub(super) address: SocketAddr,
    /// The connections of online members, by connection number.
    pub(super) links: BTreeMap<u64, Link>,
    /// The heads of each member's audit log this lead keeps (`lead_witness.rs`).
    pub(super) witness: BTreeMap<String, KeptHeads>,
    /// The member named deputy (`lead_deputy.rs`).
    pub(super) deputy: Option<String>,
}

/// The member role.
pub(super) struct Member {
    pub(super) identity: Arc<Identity>,
    pub(super) endpoint: Arc<QuicEndpoint>,
    pub(super) name: String,
    pub(super) lead_name: String,
    pub(super) lead_pin: Pin,
    pub(super) lead_address: SocketAddr,
    pub(super) lead_version: Option<String>,
    /// The hello this member says (to the lead, and to the deputy's door).
    pub(super) config: HelloConfig,
    /// On the deputy: its door (`member_deputy.rs`) and the task accepting on it.
    pub(super) door: Option<Box<Lead>>,
    pub(super) door_task: Option<AbortHandle>,
    /// The lead's notice of who the deputy is, and the task linking to its door.
    pub(super) notice: Option<DeputyNotice>,
    pub(super) deputy_link: Option<AbortHandle>,
}

pub(super) enum Role {
    Solo,
    Lead(Box<Lead>),
    Member(Box<Member>),
}

/// The actor's state.
pub struct CrewState {
    pub(super) args: CrewArgs,
    pub(super) role: Role,
    /// The link tasks; dropping the state aborts them.
    pub(super) tasks: JoinSet<()>,
}

pub(super) fn unavailable(e: impl std::fmt::Display) -> CrewError {
    CrewError::Unavailable(e.to_string())
}

pub(super) fn identity_dir(args: &CrewArgs) -> PathBuf {
    args.state_dir.join("crew")
}

impl Lead {
    /// The relay clients of the online members, by name.
    pub(super) fn online_relays(&self) -> super::RelayMap {
        self.core
            .members()
            .filter_map(|m| {
                let online = self.core.online(&m.name)?;
                let link = self.links.get(&online.conn)?;
                Some((m.name.clone(), Arc::clone(&link.relay)))
            })
            .collect()
    }
}

impl CrewState {
    /// The role that accepts members: the lead, or the deputy's door on a member.
    pub(super) fn acceptor(&mut self) -> Option<&mut Lead> {
        match &mut self.role {
            Role::Lead(lead) => Some(lead),
            Role::Member(m) => m.door.as_deref_mut(),
            Role::Solo => None,
        }
    }

    /// Publishes the view and, on a lead, the relay clients of the online members.
    pub(super) fn publish(&self) {
        let relays = match &self.role {
            Role::Lead(lead) => lead.online_relays(),
            _ => BTreeMap::new(),
        };
        self.args.relays.store(Arc::new(relays));
        let door = match &self.role {
            Role::Member(m) => m
                .door
                .as_deref()
                .map(Lead::online_relays)
                .unwrap_or_default(),
            _ => BTreeMap::new(),
        };
        self.args.door_relays.store(Arc::new(door));
        let view = match &self.role {
            Role::Solo => CrewView::solo(&self.args.machine.get()),
            Role::Lead(lead) => CrewView {
                role: CrewRole::Lead,
                name: self.args.machine.get(),
                pin: Some(lead.identity.pin().to_string()),
                address: Some(lead.address.to_string()),
                lead: None,
                members: lead
                    .core
                    .members()
                    .map(|m| {
                        let online = lead.core.online(&m.name);
                        MachineView {
                            name: m.name.clone(),
                            pin: m.pin.to_string(),
                            address: None,
                            online: online.is_some(),
                            version: online.map(|o| o.version.clone()),
                        }
                    })
                    .collect(),
                deputy: lead.deputy.clone(),
                version: VERSION.to_owned(),
            },
            Role::Member(m) => CrewView {
                role: CrewRole::Member,
                name: m.name.clone(),
                pin: Some(m.identity.pin().to_string()),
                address: None,
                lead: Some(MachineView {
                    name: m.lead_name.clone(),
                    pin: m.lead_pin.to_string(),
                    address: Some(m.lead_address.to_string()),
                    online: m.lead_version.is_some(),
                    version: m.lead_version.clone(),
                }),
                members: Vec::new(),
                deputy: m.notice.as_ref().map(|n| n.name.clone()),
                version: VERSION.to_owned(),
            },
        };
        self.args.view.store(Arc::new(view));
    }

    /// Stops the link tasks and closes the endpoint; returns it so the caller can wait (briefly)
    /// for the close to reach the peers.
    pub(super) fn stop_role(&mut self) -> Option<Arc<QuicEndpoint>> {
        self.tasks.abort_all();
        self.args.lead_link.store(None);
        match std::mem::replace(&mut self.role, Role::Solo) {
            Role::Lead(lead) => {
                lead.endpoint.close("lead stopping");
                Some(lead.endpoint)
            }
            Role::Member(m) => {
                if let Some(door) = &m.door {
                    door.endpoint.close("member stopping");
                }
                m.endpoint.close("member stopping");
                Some(m.endpoint)
            }
            Role::Solo => None,
        }
    }

    /// Refuses `init` or `join` on a bridge that already has a role.
    pub(super) fn must_be_solo(&self) -> Result<(), CrewError> {
        match self.role {
            Role::Lead(_) => Err(CrewError::AlreadyLead),
            Role::Member(_) => Err(CrewError::AlreadyMember),
            Role::Solo => Ok(()),
        }
    }
}

impl Actor for CrewActor {
    type Msg = CrewMsg;
    type State = CrewState;
    type Arguments = CrewArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<CrewMsg>,
        args: CrewArgs,
    ) -> Result<CrewState, ActorProcessingErr> {
        let mut state = CrewState {
            args,
            role: Role::Solo,
            tasks: JoinSet::new(),
        };
        match persist::load_role(&state.args.store)? {
            None => {}
            Some(RoleRecord::Lead { secret, address }) => {
                let secret = persist::secret_from_hex(&secret)?;
                state.start_lead(&myself, secret, address)?;
            }
            Some(RoleRecord::Member {
                name,
                secret,
                lead_name,
                lead_pin,
                lead_address,
            }) => {
                let secret = persist::secret_from_hex(&secret)?;
                let start = MemberStart {
                    name,
                    secret,
                    lead_name,
                    lead_pin,
                    lead_address,
                };
                state.start_member(&myself, start, None)?;
            }
        }
        state.publish();
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<CrewMsg>,
        msg: CrewMsg,
        state: &mut CrewState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CrewMsg::Init(reply) => {
                let _ = reply.send(state.init(&myself).await);
            }
            CrewMsg::Invite {
                expires,
                address,
                reply,
            } => {
                let _ = reply.send(state.invite(expires, address));
            }
            CrewMsg::Join {
                invite,
                name,
                reply,
            } => {
                let _ = reply.send(state.join(&myself, invite, name).await);
            }
            CrewMsg::Remove { name, reply } => {
                let _ = reply.send(state.remove(&name).await);
            }
            CrewMsg::LeadJoin {
                request,
                peer,
                reply,
            } => {
                let _ = reply.send(state.lead_join(request, peer).await);
            }
            CrewMsg::LeadHello {
                hello,
                exporter,
                conn,
                reply,
            } => {
                let _ = reply.send(state.lead_hello(&hello, exporter, conn));
            }
            CrewMsg::LeadGone { name, conn_id } => state.lead_gone(&name, conn_id),
            CrewMsg::MemberLink { lead_version } => state.member_link(lead_version),
            CrewMsg::KeepHead {
                member,
                head,
                stopping,
                contradicted,
                reply,
            } => {
                let _ = reply.send(
                    state
                        .keep_head(&member, head, stopping, &contradicted)
                        .await,
                );
            }
            CrewMsg::Deputy { name, reply } => {
                let _ = reply.send(state.set_deputy(name).await);
            }
            CrewMsg::SignNotice { address, reply } => {
                let _ = reply.send(state.sign_notice(address));
            }
            CrewMsg::Door { roster, reply } => {
                let _ = reply.send(state.door(&myself, roster));
            }
            CrewMsg::Notice { notice, reply } => {
                let _ = reply.send(state.notice(notice));
            }
            CrewMsg::Witnessed { member, reply } => {
                let _ = reply.send(state.witnessed(&member));
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<CrewMsg>,
        state: &mut CrewState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(endpoint) = state.stop_role() {
            // Let the close frames go out, so peers see the link end now rather than after their
            // heartbeat timeout; never hold a shutdown up for long.
            let _ = tokio::time::timeout(Duration::from_millis(500), endpoint.wait_idle()).await;
        }
        Ok(())
    }
}
