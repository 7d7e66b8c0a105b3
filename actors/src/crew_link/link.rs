//! The link's tasks: the lead's accept loop and per-connection service, and the member's dialer.
//! Each task is owned by the crew actor (a `JoinSet` in its state) and asks the actor for every
//! decision; tasks hold no crew state of their own.
//!
//! After the hello, both sides keep the hello stream as a heartbeat: the member sends a
//! [`LinkFrame::Beat`] every [`BEAT_EVERY`], the lead echoes each one. A lead that hears nothing for
//! [`LEAD_SILENCE`] closes the connection and marks the member offline (QUIC's own idle timeout is
//! 30 s — too slow to show a killed member offline); a member that hears nothing for
//! [`MEMBER_SILENCE`] reconnects.
//!
//! **Decisions apart from the I/O.** Every deadline and retry of these tasks is decided by a pure
//! core — [`accepted::Accepted`] for a connection the lead accepted, [`dialer::Dialer`] for the
//! member's link (dial, hello timeout, heartbeat, silence, backoff with jitter) — which the crew
//! simulations run on their virtual clock. These tasks only do the I/O and sleep until the core's
//! next deadline.

pub mod accepted;
pub mod dialer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use collie_crew::hello::{HelloConfig, JoinReply, MemberHandshake, Opening};
use collie_crew::pin::Pin;
use collie_crew::tls::PeerStatus;
use collie_crew::transport::quic::{QuicConnection, QuicEndpoint};
use collie_crew::transport::{Connection, RecvFrames, SendFrames, Transport};
use ractor::ActorRef;
use rand::Rng;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use self::accepted::{Accepted, Heard};
use self::dialer::{Dialer, Due};
use super::actor::CrewMsg;
use super::reach::DEPUTY_REDIAL;
use super::{LeadLink, LeadReach, RelayStream, UplinkStream};

/// How often a member sends a heartbeat.
pub const BEAT_EVERY: Duration = Duration::from_secs(1);
/// A lead that hears nothing from a member this long closes its connection.
pub const LEAD_SILENCE: Duration = Duration::from_secs(3);
/// A member that hears nothing from the lead this long reconnects.
pub const MEMBER_SILENCE: Duration = Duration::from_secs(5);
/// The most time an opening (or its answer) may take.
pub const OPENING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the actor is given to answer a task.
const ACTOR_TIMEOUT: Duration = Duration::from_secs(5);

/// A frame on the hello stream after the hello.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub enum LinkFrame {
    /// I am alive.
    Beat,
    /// A frame this build does not know (still counts as a sign of life).
    #[serde(other)]
    Unknown,
}

/// The lead's accept loop: serves each connection in a child task until the endpoint closes.
pub(super) async fn accept_loop(
    endpoint: Arc<QuicEndpoint>,
    actor: ActorRef<CrewMsg>,
    uplinks: mpsc::Sender<UplinkStream>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            conn = endpoint.accept() => {
                let Some(conn) = conn else { break };
                conns.spawn(serve(conn, actor.clone(), uplinks.clone()));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// One connection on the lead: a join request, or a member's hello and then its heartbeat (and
/// the uplink streams it opens, handed to the bridge).
async fn serve(
    conn: QuicConnection,
    actor: ActorRef<CrewMsg>,
    uplinks: mpsc::Sender<UplinkStream>,
) {
    let origin = Instant::now();
    let mut clock = Accepted::new(Duration::ZERO);
    let opened = tokio::time::timeout_at(origin + clock.deadline(), async {
        let (send, mut recv) = conn.accept_bi().await.ok()?;
        let first = recv.recv().await.ok()??;
        Some((send, recv, first))
    })
    .await;
    let Ok(Some((mut send, mut recv, first))) = opened else {
        conn.close(accepted::reason::NO_OPENING);
        return;
    };
    let opening = match clock.frame(origin.elapsed(), &first) {
        Heard::Opening(opening) => opening,
        Heard::Close(reason) => return conn.close(reason),
        Heard::Echo | Heard::Nothing => return conn.close(accepted::reason::NO_OPENING),
    };
    match opening {
        Opening::Join(request) => {
            let peer = conn.peer_pin();
            let reply = actor
                .call(
                    |r| CrewMsg::LeadJoin {
                        request,
                        peer,
                        reply: r,
                    },
                    Some(ACTOR_TIMEOUT),
                )
                .await
                .ok()
                .and_then(|r| r.success_or(()).ok())
                .unwrap_or(JoinReply::Refused(collie_crew::hello::JoinError::Unknown));
            if send.send_message(&reply).await.is_ok() {
                let _ = send.finish();
                // Let the member read the reply and close first.
                clock.joined(origin.elapsed());
                let _ = tokio::time::timeout_at(origin + clock.deadline(), conn.closed()).await;
            }
            conn.close(accepted::reason::JOIN_DONE);
        }
        Opening::Hello(hello) => {
            if let PeerStatus::Unpinned(_) = conn.peer_status() {
                conn.close("not a member of this crew");
                return;
            }
            let Ok(exporter) = conn.exporter() else {
                conn.close("no exporter");
                return;
            };
            let answer = actor
                .call(
                    |r| CrewMsg::LeadHello {
                        hello,
                        exporter,
                        conn: conn.clone(),
                        reply: r,
                    },
                    Some(ACTOR_TIMEOUT),
                )
                .await
                .ok()
                .and_then(|r| r.success_or(()).ok());
            let (answer, name, conn_id) = match answer {
                Some(Ok(ok)) => ok,
                Some(Err(reason)) => {
                    conn.close(&reason);
                    return;
                }
                None => {
                    conn.close("lead busy");
                    return;
                }
            };
            if send.send_message(&answer).await.is_ok() {
                let certificate = conn.peer_certificate();
                clock.linked(origin.elapsed());
                loop {
                    tokio::select! {
                        frame = recv.recv() => match frame {
                            Ok(Some(payload)) => match clock.frame(origin.elapsed(), &payload) {
                                Heard::Echo => {
                                    if send.send_message(&LinkFrame::Beat).await.is_err() {
                                        break;
                                    }
                                }
                                Heard::Close(reason) => {
                                    conn.close(reason);
                                    break;
                                }
                                Heard::Opening(_) | Heard::Nothing => {}
                            },
                            _ => break,
                        },
                        stream = conn.accept_bi() => match stream {
                            Ok((s, r)) => {
                                let uplink = UplinkStream {
                                    member: name.clone(),
                                    certificate: certificate.clone(),
                                    send: s,
                                    recv: r,
                                };
                                if let Err(mpsc::error::TrySendError::Full(mut u)) = uplinks.try_send(uplink) {
                                    tracing::warn!("uplink server busy; a member's stream was refused");
                                    let _ = u.send.reset();
                                }
                            }
                            Err(_) => break,
                        },
                        _ = tokio::time::sleep_until(origin + clock.deadline()) => {
                            if let Some(reason) = clock.due(origin.elapsed()) {
                                conn.close(reason);
                                break;
                            }
                        }
                    }
                }
            }
            conn.close(clock.stream_ended().unwrap_or(accepted::reason::LINK_ENDED));
            let _ = actor.cast(CrewMsg::LeadGone { name, conn_id });
        }
        _ => conn.close(accepted::reason::UNKNOWN_OPENING),
    }
}

/// What a member's link needs.
pub(super) struct MemberLink {
    /// The member's endpoint.
    pub endpoint: Arc<QuicEndpoint>,
    /// The lead's address.
    pub addr: SocketAddr,
    /// The lead's pin.
    pub lead_pin: Pin,
    /// The member's hello settings.
    pub config: HelloConfig,
    /// Where the relay streams the lead opens go.
    pub relay_streams: mpsc::Sender<RelayStream>,
    /// Where the live connection is published.
    pub lead_link: LeadLink,
    /// Where the link says whether it is up (and learns whether this member is the deputy).
    pub reach: Arc<LeadReach>,
}

/// The member's link: dial, hello, heartbeat until it breaks, back off, again — forever (the actor
/// aborts it).
pub(super) async fn member_loop(link: MemberLink, actor: ActorRef<CrewMsg>) {
    let origin = Instant::now();
    let mut dialer = Dialer::new(Duration::ZERO);
    loop {
        let deadline = dialer.dial(origin.elapsed());
        let attempt = tokio::time::timeout_at(origin + deadline, connect(&link))
            .await
            .unwrap_or_else(|_| Err("timed out".to_owned()));
        match attempt {
            Ok((conn, mut send, mut recv, version)) => {
                dialer.linked(origin.elapsed());
                let _ = actor.cast(CrewMsg::MemberLink {
                    lead_version: Some(version),
                });
                link.lead_link.store(Some(Arc::new(conn.clone())));
                link.reach.set_up(true);
                let streams = (&mut send, &mut recv);
                let relays = (&link.relay_streams, None);
                let why = heartbeat(&conn, streams, relays, &mut dialer, origin).await;
                link.lead_link.store(None);
                link.reach.set_up(false);
                tracing::info!(%why, "crew link to the lead ended");
                conn.close(&why);
                let _ = actor.cast(CrewMsg::MemberLink { lead_version: None });
            }
            Err(why) => tracing::debug!(%why, "crew link: cannot reach the lead"),
        }
        let jitter: f64 = rand::thread_rng().gen();
        // The deputy must notice the lead's return within the standby door's bound.
        let most = if link.reach.is_deputy() {
            DEPUTY_REDIAL
        } else {
            Duration::MAX
        };
        let at = dialer.lost_within(origin.elapsed(), jitter, most);
        tokio::time::sleep_until(origin + at).await;
    }
}

type Stream = (
    QuicConnection,
    <QuicConnection as Connection>::Send,
    <QuicConnection as Connection>::Recv,
    String,
);

/// One attempt: dial, hello, and the lead's answer (the caller bounds it in time).
async fn connect(link: &MemberLink) -> Result<Stream, String> {
    {
        let conn = link
            .endpoint
            .dial(&link.addr, link.lead_pin)
            .await
            .map_err(|e| e.to_string())?;
        let exporter = conn.exporter().map_err(|e| e.to_string())?;
        let mut handshake = MemberHandshake::new(link.config.clone(), exporter);
        let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
        send.send_message(&Opening::Hello(handshake.hello()))
            .await
            .map_err(|e| e.to_string())?;
        let answer = match recv.recv_message().await {
            Ok(Some(h)) => h,
            Ok(None) => return Err("the lead ended the stream".to_owned()),
            Err(e) => return Err(conn.close_reason().map_or(e.to_string(), |c| c.to_string())),
        };
        let version = match handshake.on_hello(&answer) {
            Ok(peer) => peer.bridge_version.clone(),
            Err(e) => {
                conn.close(&e.to_string());
                return Err(e.to_string());
            }
        };
        Ok((conn, send, recv, version))
    }
}

/// Keeps the link alive and hands every relay stream the lead opens to the relay server, until the
/// link breaks. A stream the server has no room for is reset (the lead answers its phone `member
/// unreachable`); the lead's own per-member limits keep that from happening in normal use.
async fn heartbeat(
    conn: &QuicConnection,
    (send, recv): (
        &mut <QuicConnection as Connection>::Send,
        &mut <QuicConnection as Connection>::Recv,
    ),
    (relay_streams, deputy): (&mpsc::Sender<RelayStream>, Option<&str>),
    dialer: &mut Dialer,
    origin: Instant,
) -> String {
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(origin + dialer.next()) => match dialer.due(origin.elapsed()) {
                Due::Beat => {
                    if let Err(e) = send.send_message(&LinkFrame::Beat).await {
                        return e.to_string();
                    }
                    dialer.beat_sent(origin.elapsed());
                }
                Due::GiveUp(why) => return why.to_owned(),
                Due::Dial | Due::Nothing => {}
            },
            frame = recv.recv() => match frame {
                Ok(Some(_)) => dialer.heard(origin.elapsed()),
                Ok(None) => return "the lead ended the stream".to_owned(),
                Err(e) => return e.to_string(),
            },
            stream = conn.accept_bi() => match stream {
                Ok((send, recv)) => {
                    let stream = RelayStream { send, recv, deputy: deputy.map(str::to_owned) };
                    if let Err(mpsc::error::TrySendError::Full(mut s)) = relay_streams.try_send(stream) {
                        tracing::warn!("relay server busy; a relay stream was refused");
                        let _ = s.send.reset();
                    }
                }
                Err(e) => return e.to_string(),
            },
            closed = conn.closed() => return closed.to_string(),
        }
    }
}

/// What a member's link to the deputy needs besides a [`MemberLink`] (whose address and pin are
/// the deputy's door's).
pub(super) struct DeputyDial {
    /// The deputy's name, which the streams it opens carry.
    pub name: String,
    /// Whether the lead is reachable.
    pub reach: Arc<LeadReach>,
}

/// A member's link to the deputy (SPEC §13): only while its own link to the lead is down it dials
/// the deputy's door, says hello as to the lead and serves the relay streams the deputy opens
/// (tagged with the deputy's name); the moment the lead is back it closes that link. Forever (the
/// actor aborts it when the deputy changes).
pub(super) async fn deputy_loop(link: MemberLink, deputy: DeputyDial) {
    let origin = Instant::now();
    let mut reach = deputy.reach.watch();
    loop {
        // Wait for the lead to be out of reach.
        while reach.borrow_and_update().0 {
            if reach.changed().await.is_err() {
                return;
            }
        }
        let mut dialer = Dialer::new(origin.elapsed());
        let deadline = dialer.dial(origin.elapsed());
        let attempt = tokio::time::timeout_at(origin + deadline, connect(&link))
            .await
            .unwrap_or_else(|_| Err("timed out".to_owned()));
        match attempt {
            Ok((conn, mut send, mut recv, _)) => {
                dialer.linked(origin.elapsed());
                tracing::info!(deputy = %deputy.name, "the lead is out of reach: linked to the deputy");
                let streams = (&mut send, &mut recv);
                let relays = (&link.relay_streams, Some(deputy.name.as_str()));
                let lead_back = async {
                    while !reach.borrow_and_update().0 {
                        if reach.changed().await.is_err() {
                            break;
                        }
                    }
                };
                let why = tokio::select! {
                    why = heartbeat(&conn, streams, relays, &mut dialer, origin) => why,
                    () = lead_back => "the lead is back".to_owned(),
                };
                tracing::info!(%why, "link to the deputy ended");
                conn.close(&why);
            }
            Err(why) => tracing::debug!(%why, "cannot reach the deputy"),
        }
        let jitter: f64 = rand::thread_rng().gen();
        tokio::time::sleep(DEPUTY_REDIAL.mul_f64(0.5 + jitter / 2.0)).await;
    }
}

/// Joins the crew of `addr`: dials pinning the lead, sends the join request and returns the lead's
/// reply. The caller handles the outcome.
pub(super) async fn join(
    endpoint: &QuicEndpoint,
    addr: SocketAddr,
    lead_pin: Pin,
    request: collie_crew::hello::JoinRequest,
) -> Result<JoinReply, super::CrewError> {
    use super::CrewError;
    let classify = |e: &dyn std::fmt::Display| {
        let text = e.to_string();
        if text.contains("aborted by peer") && text.contains("certificate") {
            // The lead's TLS refused this machine: it accepts no joins right now. (QUIC completes
            // the client's side of the handshake before the lead has checked the client's
            // certificate, so this can surface on the first stream rather than the dial.)
            CrewError::NotAdmitted
        } else if text.contains("certificate") || text.contains("pin") {
            CrewError::LeadPinMismatch(addr.to_string())
        } else {
            CrewError::Unreachable(text)
        }
    };
    let attempt = async {
        let conn = endpoint
            .dial(&addr, lead_pin)
            .await
            .map_err(|e| classify(&e))?;
        let (mut send, mut recv) = conn.open_bi().await.map_err(|e| classify(&e))?;
        send.send_message(&Opening::Join(request))
            .await
            .map_err(|e| classify(&e))?;
        let reply: Option<JoinReply> = recv.recv_message().await.map_err(|e| classify(&e))?;
        conn.close("joined");
        reply.ok_or_else(|| CrewError::Unreachable("the lead sent no reply".into()))
    };
    tokio::time::timeout(OPENING_TIMEOUT, attempt)
        .await
        .map_err(|_| CrewError::Unreachable(format!("{addr}: timed out")))?
}
