//! The crew actor's ractor shell: owns the role, the endpoint, the link tasks and the clock; the
//! decisions are [`Registry`]'s. See the module docs of [`crate::crew_link`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use collie_crew::hello::{
    validate_name, CrewSecret, Exporter, Hello, HelloConfig, Invite, JoinError, JoinReply,
    JoinRequest, JoinSecret, LeadHandshake,
};
use collie_crew::identity::Identity;
use collie_crew::pin::Pin;
use collie_crew::relay::client::{Limits, RelayClient};
use collie_crew::tls::{ClientAdmission, PinSet};
use collie_crew::transport::quic::{QuicConnection, QuicEndpoint};
use collie_crew::transport::{Connection, Transport};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::core::{MemberRecord, Registry};
use super::invite::InviteCode;
use super::link::{self, MemberLink};
use super::{
    CrewError, CrewRole, CrewView, LeadLink, MachineView, RelayStream, Relays, UplinkStream,
};
use crate::audit::{AuditEventKind, AuditMsg, AuditRecord};
use crate::machine::MachineName;
use crate::slot::Slot;
use crate::store::{Store, Table};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const ROLE_KEY: &str = "role";
const MEMBER_PREFIX: &str = "member/";
const INVITE_PREFIX: &str = "invite/";

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
    /// Where a member hands the relay streams the lead opens.
    pub relay_streams: mpsc::Sender<RelayStream>,
    /// Where a member publishes its live connection to the lead.
    pub lead_link: LeadLink,
    /// Where the lead hands the streams members open after their hello.
    pub uplink_streams: mpsc::Sender<UplinkStream>,
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
}

/// The role as stored.
#[derive(Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum RoleRecord {
    Lead {
        secret: String,
        address: Option<SocketAddr>,
    },
    Member {
        name: String,
        secret: String,
        lead_name: String,
        lead_pin: Pin,
        lead_address: SocketAddr,
    },
}

struct Online {
    conn_id: u64,
    conn: QuicConnection,
    version: String,
    relay: Arc<RelayClient<QuicConnection>>,
}

struct Lead {
    identity: Arc<Identity>,
    endpoint: Arc<QuicEndpoint>,
    pins: PinSet,
    registry: Registry,
    secret: CrewSecret,
    address: SocketAddr,
    online: BTreeMap<String, Online>,
    next_conn: u64,
}

struct Member {
    identity: Arc<Identity>,
    endpoint: Arc<QuicEndpoint>,
    name: String,
    lead_name: String,
    lead_pin: Pin,
    lead_address: SocketAddr,
    lead_version: Option<String>,
}

enum Role {
    Solo,
    Lead(Box<Lead>),
    Member(Box<Member>),
}

/// The actor's state.
pub struct CrewState {
    args: CrewArgs,
    role: Role,
    /// The link tasks; dropping the state aborts them.
    tasks: JoinSet<()>,
}

fn unavailable(e: impl std::fmt::Display) -> CrewError {
    CrewError::Unavailable(e.to_string())
}

fn secret_from_hex(s: &str) -> Result<CrewSecret, CrewError> {
    let bytes: [u8; 32] = hex::decode(s)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| unavailable("stored crew secret is unreadable"))?;
    Ok(CrewSecret::from(bytes))
}

fn identity_dir(args: &CrewArgs) -> PathBuf {
    args.state_dir.join("crew")
}

impl CrewState {
    fn publish(&self) {
        let relays = match &self.role {
            Role::Lead(lead) => lead
                .online
                .iter()
                .map(|(name, o)| (name.clone(), Arc::clone(&o.relay)))
                .collect(),
            _ => BTreeMap::new(),
        };
        self.args.relays.store(Arc::new(relays));
        let view = match &self.role {
            Role::Solo => CrewView::solo(&self.args.machine.get()),
            Role::Lead(lead) => CrewView {
                role: CrewRole::Lead,
                name: self.args.machine.get(),
                pin: Some(lead.identity.pin().to_string()),
                address: Some(lead.address.to_string()),
                lead: None,
                members: lead
                    .registry
                    .members()
                    .map(|m| {
                        let online = lead.online.get(&m.name);
                        MachineView {
                            name: m.name.clone(),
                            pin: m.pin.to_string(),
                            address: None,
                            online: online.is_some(),
                            version: online.map(|o| o.version.clone()),
                        }
                    })
                    .collect(),
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
                version: VERSION.to_owned(),
            },
        };
        self.args.view.store(Arc::new(view));
    }

    async fn audit(&self, rec: AuditRecord) -> Result<(), CrewError> {
        match self.args.audit.call(|r| AuditMsg::Append(rec, r)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(CrewError::AuditUnavailable),
        }
    }

    /// Opens the lead's endpoint and starts accepting.
    fn start_lead(
        &mut self,
        myself: &ActorRef<CrewMsg>,
        secret: CrewSecret,
        previous: Option<SocketAddr>,
    ) -> Result<(), CrewError> {
        let identity =
            Arc::new(Identity::load_or_create(&identity_dir(&self.args)).map_err(unavailable)?);
        let mut members = Vec::new();
        let mut invites = Vec::new();
        for (key, value) in self.args.store.scan(Table::Crew).map_err(unavailable)? {
            if key.starts_with(MEMBER_PREFIX) {
                members.push(serde_json::from_slice::<MemberRecord>(&value).map_err(unavailable)?);
            } else if key.starts_with(INVITE_PREFIX) {
                invites.push(serde_json::from_slice::<Invite>(&value).map_err(unavailable)?);
            }
        }
        let mut registry = Registry::new(members, invites);
        for gone in registry.prune(SystemTime::now()) {
            let _ = self.args.store.remove(
                Table::Crew,
                &format!("{INVITE_PREFIX}{}", hex::encode(gone)),
            );
        }
        let pins = PinSet::new();
        for m in registry.members() {
            pins.insert(m.pin);
        }
        let admission = admission(&registry);
        // A lead whose port was chosen by the OS keeps it across restarts if it can, so members
        // find it again.
        let endpoint = match previous.filter(|_| self.args.bind.port() == 0) {
            Some(prev) => QuicEndpoint::lead(
                Arc::clone(&identity),
                SocketAddr::new(self.args.bind.ip(), prev.port()),
                pins.check(),
                admission,
            )
            .or_else(|_| {
                QuicEndpoint::lead(
                    Arc::clone(&identity),
                    self.args.bind,
                    pins.check(),
                    admission,
                )
            }),
            None => QuicEndpoint::lead(
                Arc::clone(&identity),
                self.args.bind,
                pins.check(),
                admission,
            ),
        }
        .map_err(|e| unavailable(format!("cannot listen on {}: {e}", self.args.bind)))?;
        let endpoint = Arc::new(endpoint);
        let address = endpoint.local_addr().map_err(unavailable)?;
        self.tasks.spawn(link::accept_loop(
            Arc::clone(&endpoint),
            myself.clone(),
            self.args.uplink_streams.clone(),
        ));
        self.role = Role::Lead(Box::new(Lead {
            identity,
            endpoint,
            pins,
            registry,
            secret,
            address,
            online: BTreeMap::new(),
            next_conn: 0,
        }));
        Ok(())
    }

    /// Starts a member's link.
    fn start_member(
        &mut self,
        myself: &ActorRef<CrewMsg>,
        record: MemberStart,
        endpoint: Option<Arc<QuicEndpoint>>,
    ) -> Result<(), CrewError> {
        let identity =
            Arc::new(Identity::load_or_create(&identity_dir(&self.args)).map_err(unavailable)?);
        let endpoint = match endpoint {
            Some(e) => e,
            None => Arc::new(
                QuicEndpoint::member(Arc::clone(&identity), any_addr(&record.lead_address))
                    .map_err(unavailable)?,
            ),
        };
        // From here on this machine is called what it joined as, everywhere (SPEC §3.1).
        self.args.machine.set(record.name.clone());
        let config = HelloConfig::new(record.name.clone(), VERSION.to_owned(), record.secret);
        self.tasks.spawn(link::member_loop(
            MemberLink {
                endpoint: Arc::clone(&endpoint),
                addr: record.lead_address,
                lead_pin: record.lead_pin,
                config,
                relay_streams: self.args.relay_streams.clone(),
                lead_link: Arc::clone(&self.args.lead_link),
            },
            myself.clone(),
        ));
        self.role = Role::Member(Box::new(Member {
            identity,
            endpoint,
            name: record.name,
            lead_name: record.lead_name,
            lead_pin: record.lead_pin,
            lead_address: record.lead_address,
            lead_version: None,
        }));
        Ok(())
    }

    async fn init(&mut self, myself: &ActorRef<CrewMsg>) -> Result<CrewView, CrewError> {
        match self.role {
            Role::Lead(_) => return Err(CrewError::AlreadyLead),
            Role::Member(_) => return Err(CrewError::AlreadyMember),
            Role::Solo => {}
        }
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
                let bytes = serde_json::to_vec(&record).map_err(unavailable)?;
                self.args
                    .store
                    .put(Table::Crew, ROLE_KEY, &bytes)
                    .map_err(unavailable)
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

    fn invite(&mut self, expires: Duration, address: Option<String>) -> Result<String, CrewError> {
        let Role::Lead(lead) = &mut self.role else {
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
        let secret = JoinSecret::random();
        let invite = Invite::new(&secret, SystemTime::now() + expires);
        let bytes = serde_json::to_vec(&invite).map_err(unavailable)?;
        self.args
            .store
            .put(
                Table::Crew,
                &format!("{INVITE_PREFIX}{}", hex::encode(invite.secret_hash)),
                &bytes,
            )
            .map_err(unavailable)?;
        lead.registry.issue(invite);
        lead.endpoint
            .set_admission(admission(&lead.registry))
            .map_err(unavailable)?;
        Ok(InviteCode {
            lead_pin: lead.identity.pin(),
            secret,
            address,
        }
        .to_string())
    }

    async fn join(
        &mut self,
        myself: &ActorRef<CrewMsg>,
        invite: String,
        name: Option<String>,
    ) -> Result<CrewView, CrewError> {
        match self.role {
            Role::Lead(_) => return Err(CrewError::AlreadyLead),
            Role::Member(_) => return Err(CrewError::AlreadyMember),
            Role::Solo => {}
        }
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
        let reply = link::join(&endpoint, addr, code.lead_pin, request).await;
        let accepted = match reply {
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
        let bytes = serde_json::to_vec(&record).map_err(unavailable)?;
        self.args
            .store
            .put(Table::Crew, ROLE_KEY, &bytes)
            .map_err(unavailable)?;
        self.start_member(
            myself,
            MemberStart {
                name,
                secret: accepted.crew_secret,
                lead_name: accepted.lead_name,
                lead_pin: code.lead_pin,
                lead_address: addr,
            },
            Some(endpoint),
        )?;
        self.publish();
        Ok(self.args.view.load().as_ref().clone())
    }

    async fn remove(&mut self, name: &str) -> Result<(), CrewError> {
        let Role::Lead(lead) = &self.role else {
            return Err(CrewError::NotLead);
        };
        let Some(member) = lead.registry.get(name).cloned() else {
            return Err(CrewError::NoSuchMember(name.to_owned()));
        };
        self.audit(
            AuditRecord::new(AuditEventKind::CrewRemoved, self.args.machine.get())
                .with_detail("member", member.name.clone())
                .with_detail("pin", member.pin.to_string()),
        )
        .await?;
        self.args
            .store
            .remove(Table::Crew, &format!("{MEMBER_PREFIX}{name}"))
            .map_err(unavailable)?;
        let Role::Lead(lead) = &mut self.role else {
            return Err(CrewError::NotLead);
        };
        lead.pins.remove(&member.pin);
        lead.registry.remove(name);
        if let Some(online) = lead.online.remove(name) {
            online.conn.close("removed from the crew");
        }
        self.publish();
        Ok(())
    }

    async fn lead_join(&mut self, request: JoinRequest, peer: Pin) -> JoinReply {
        let now = SystemTime::now();
        let Role::Lead(lead) = &self.role else {
            return JoinReply::Refused(JoinError::Unknown);
        };
        if let Err(e) =
            lead.registry
                .decide_join(&request, &peer, &self.args.machine.get(), &lead.secret, now)
        {
            tracing::info!(name = %request.name, reason = %e, "crew join refused");
            return JoinReply::Refused(e);
        }
        let accepted = collie_crew::hello::JoinAccepted {
            crew_secret: lead.secret.clone(),
            lead_name: self.args.machine.get(),
        };
        if lead.registry.by_pin(&peer).is_some() {
            // The same machine again, after its acceptance was lost: nothing new to record.
            return JoinReply::Accepted(accepted);
        }
        let Some((invite, member)) = lead.registry.join_writes(&request) else {
            return JoinReply::Refused(JoinError::WrongSecret);
        };
        if self
            .audit(
                AuditRecord::new(AuditEventKind::CrewJoined, self.args.machine.get())
                    .with_detail("member", member.name.clone())
                    .with_detail("pin", member.pin.to_string()),
            )
            .await
            .is_err()
        {
            return JoinReply::Refused(JoinError::Unknown);
        }
        let invite_key = format!("{INVITE_PREFIX}{}", hex::encode(invite.secret_hash));
        let member_key = format!("{MEMBER_PREFIX}{}", member.name);
        let durable = serde_json::to_vec(&invite)
            .ok()
            .zip(serde_json::to_vec(&member).ok())
            .map(|(i, m)| {
                self.args.store.put(Table::Crew, &invite_key, &i).is_ok()
                    && self.args.store.put(Table::Crew, &member_key, &m).is_ok()
            })
            .unwrap_or(false);
        if !durable {
            let _ = self.args.store.remove(Table::Crew, &member_key);
            return JoinReply::Refused(JoinError::Unknown);
        }
        let Role::Lead(lead) = &mut self.role else {
            return JoinReply::Refused(JoinError::Unknown);
        };
        lead.pins.insert(member.pin);
        lead.registry.commit_join(invite, member);
        if let Err(e) = lead.endpoint.set_admission(admission(&lead.registry)) {
            tracing::warn!(error = %e, "cannot update the crew's TLS admission");
        }
        self.publish();
        JoinReply::Accepted(accepted)
    }

    fn lead_hello(
        &mut self,
        hello: &Hello,
        exporter: Exporter,
        conn: QuicConnection,
    ) -> Result<(Hello, String, u64), String> {
        let Role::Lead(lead) = &mut self.role else {
            return Err("not a lead".into());
        };
        let Some(member) = lead.registry.by_pin(&conn.peer_pin()).cloned() else {
            return Err("not a member of this crew".into());
        };
        let config = HelloConfig::new(
            self.args.machine.get(),
            VERSION.to_owned(),
            lead.secret.clone(),
        );
        let mut handshake = LeadHandshake::new(config, member.name.clone(), exporter);
        let answer = handshake.on_hello(hello).map_err(|e| e.to_string())?;
        let capabilities = handshake
            .member()
            .map(|peer| peer.capabilities.clone())
            .unwrap_or_default();
        lead.next_conn += 1;
        let conn_id = lead.next_conn;
        let relay = Arc::new(RelayClient::new(
            conn.clone(),
            capabilities,
            Limits::default(),
        ));
        let previous = lead.online.insert(
            member.name.clone(),
            Online {
                conn_id,
                conn,
                version: hello.bridge_version.clone(),
                relay,
            },
        );
        if let Some(old) = previous {
            old.conn.close("replaced by a newer connection");
        }
        self.publish();
        Ok((answer, member.name, conn_id))
    }

    /// Stops the link tasks and closes the endpoint; returns it so the caller can wait (briefly)
    /// for the close to reach the peers.
    fn stop_role(&mut self) -> Option<Arc<QuicEndpoint>> {
        self.tasks.abort_all();
        self.args.lead_link.store(None);
        match std::mem::replace(&mut self.role, Role::Solo) {
            Role::Lead(lead) => {
                lead.endpoint.close("lead stopping");
                Some(lead.endpoint)
            }
            Role::Member(m) => {
                m.endpoint.close("member stopping");
                Some(m.endpoint)
            }
            Role::Solo => None,
        }
    }
}

struct MemberStart {
    name: String,
    secret: CrewSecret,
    lead_name: String,
    lead_pin: Pin,
    lead_address: SocketAddr,
}

fn admission(registry: &Registry) -> ClientAdmission {
    if registry.accepting_joins(SystemTime::now()) {
        ClientAdmission::JoinAllowed
    } else {
        ClientAdmission::PinnedOnly
    }
}

/// The wildcard address of `addr`'s family, port 0 (a member's local socket).
fn any_addr(addr: &SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
        SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
    }
}

/// The name this bridge joined its crew with, if it is a member: the machine's name from then on
/// (read at start, before any actor writes a line naming the machine).
pub fn stored_member_name(store: &Store) -> Option<String> {
    let bytes = store.get(Table::Crew, ROLE_KEY).ok()??;
    match serde_json::from_slice::<RoleRecord>(&bytes).ok()? {
        RoleRecord::Member { name, .. } => Some(name),
        RoleRecord::Lead { .. } => None,
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
        let record = state
            .args
            .store
            .get(Table::Crew, ROLE_KEY)?
            .map(|b| serde_json::from_slice::<RoleRecord>(&b))
            .transpose()?;
        let started = match record {
            None => Ok(()),
            Some(RoleRecord::Lead { secret, address }) => {
                secret_from_hex(&secret).and_then(|s| state.start_lead(&myself, s, address))
            }
            Some(RoleRecord::Member {
                name,
                secret,
                lead_name,
                lead_pin,
                lead_address,
            }) => secret_from_hex(&secret).and_then(|secret| {
                state.start_member(
                    &myself,
                    MemberStart {
                        name,
                        secret,
                        lead_name,
                        lead_pin,
                        lead_address,
                    },
                    None,
                )
            }),
        };
        started?;
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
            CrewMsg::LeadGone { name, conn_id } => {
                if let Role::Lead(lead) = &mut state.role {
                    if lead.online.get(&name).is_some_and(|o| o.conn_id == conn_id) {
                        lead.online.remove(&name);
                        state.publish();
                    }
                }
            }
            CrewMsg::MemberLink { lead_version } => {
                if let Role::Member(m) = &mut state.role {
                    m.lead_version = lead_version;
                    state.publish();
                }
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
