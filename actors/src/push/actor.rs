//! The Push actor's ractor shell (SPEC §10.4): custody of the VAPID key, the subscriptions (one
//! per device, kept in the store), the limiter, each subscription's `Retry-After`, and the posts
//! in flight.
//!
//! Who sends what: the application's subscribe, unsubscribe and key operations (`Subscribe`,
//! `Unsubscribe`, `Key`, `Subscribed`); on a lead, the standing watch of the members' cards
//! (`src/app/push/watch.rs`) an `Ask` for every new member question; the actor's own tasks: its
//! feed of this machine's cards (`Card`, taken in `pre_start`, which runs after the Cards actor
//! started and before the hook socket opens, so no card of this run is missed), its posts
//! (`Posted`, with what the service answered), and its policy watcher (`PolicyChanged` after every
//! device change, which drops the subscriptions of devices that were revoked or whose label
//! another device took over).
//!
//! Every post is checked again just before it is made: the device still paired and not expired,
//! its endpoint still on the allow-list, its `Retry-After` passed. At most [`MAX_IN_FLIGHT`] posts
//! run at once; a push past that is dropped and logged, never queued.
//!
//! When it fails: the subscriptions are in the store and the key on disk, so a restarted actor
//! has both; what it loses is the limiter's memory and the `Retry-After` times (so after a
//! restart a question may push that the old limiter would have held back — never an old one: the
//! watch only asks about cards that appear while it runs).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::task::JoinSet;
use tokio_util::task::AbortOnDropHandle;

use super::endpoint::{self, EndpointError, Keys, Service, Subscription};
use super::limiter::{Limiter, Question, Verdict};
use super::outcome::{self, Outcome};
use super::payload::Payload;
use super::question::{self, Ask};
use super::vapid::{Vapid, VapidError};
use crate::cards::actor::CardsMsg;
use crate::cards::card::Card;
use crate::https::{self, Limits, Target};
use crate::machine::MachineName;
use crate::pairing::{AuthError, Policy, Tier, TokenHash};
use crate::redact::Masker;
use crate::slot::Slot;
use crate::store::{Store, StoreError, Table};

/// Posts running at once, at most.
pub const MAX_IN_FLIGHT: usize = 32;
pub use super::message::TTL;
/// Bounds of one post.
pub const LIMITS: Limits = Limits {
    connect: Duration::from_secs(5),
    total: Duration::from_secs(10),
    max_body: 16 * 1024,
};

/// Why a push operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PushError {
    /// The subscription was refused (400, with the reason).
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The store could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The key could not be made or read.
    #[error(transparent)]
    Key(#[from] VapidError),
}

/// A phone's subscription as it arrives (the browser's `PushSubscription` JSON).
#[derive(Debug, Clone)]
pub struct NewSubscription {
    /// The subscribing device's label.
    pub device: String,
    /// The SHA-256 of its token.
    pub token: TokenHash,
    /// `endpoint`.
    pub endpoint: String,
    /// `keys.p256dh`.
    pub p256dh: String,
    /// `keys.auth`.
    pub auth: String,
}

/// Messages of the Push actor.
#[derive(Debug)]
pub enum PushMsg {
    /// The public key (made on first use).
    Key(RpcReplyPort<Result<String, PushError>>),
    /// Keep a device's subscription (replacing its earlier one); answers the endpoint's host.
    Subscribe(
        Box<NewSubscription>,
        RpcReplyPort<Result<String, PushError>>,
    ),
    /// Drop a device's subscription; answers whether it had one.
    Unsubscribe(String, RpcReplyPort<Result<bool, PushError>>),
    /// The labels of the devices with a subscription.
    Subscribed(RpcReplyPort<Vec<String>>),
    /// A new question (a member's card, from the lead's standing watch).
    Ask(Box<Ask>),
    /// A change of one of this machine's cards (the actor's own feed).
    Card(Box<Card>),
    /// A post ended (the actor's own tasks).
    Posted {
        /// The device.
        device: String,
        /// The endpoint it went to.
        endpoint: String,
        /// What became of it.
        outcome: Outcome,
    },
    /// The device policy changed (the actor's own watcher).
    PolicyChanged,
    /// A device was paired under this label: every other subscribed device is told (SPEC §4.6).
    /// Not limited like questions: a pairing code is one use and the pairing limiter bounds them.
    Paired(String),
}

/// What the actor is started with.
#[derive(Clone)]
pub struct PushArgs {
    /// The store (subscriptions).
    pub store: Store,
    /// `<state>/push`, where the key lives.
    pub dir: PathBuf,
    /// `[push] services`.
    pub services: Vec<Service>,
    /// The device policy.
    pub policy: Policy,
    /// The Cards actor, whose changes are this machine's questions.
    pub cards: Slot<CardsMsg>,
    /// Masks a pane's name before it goes into a push.
    pub masker: Arc<Masker>,
    /// This machine's name.
    pub machine: MachineName,
}

/// The actor.
pub struct PushActor;

/// Its state.
pub struct PushState {
    args: PushArgs,
    vapid: Option<Arc<Vapid>>,
    subs: BTreeMap<String, Subscription>,
    later: HashMap<String, u64>,
    limiter: Limiter,
    tls: HashMap<Option<PathBuf>, Arc<rustls::ClientConfig>>,
    posts: JoinSet<()>,
    _policy: AbortOnDropHandle<()>,
    _cards: AbortOnDropHandle<()>,
}

/// How often a closed card feed (the Cards actor restarting) is asked for again.
const REFOLLOW: Duration = Duration::from_millis(100);

/// Forwards every change of this machine's cards to the actor. `first` is the feed taken in
/// `pre_start` — before the hook socket serves anyone, so no card can be missed at start; after
/// a Cards restart the new actor's feed is taken as soon as it runs.
async fn follow_cards(
    myself: ActorRef<PushMsg>,
    cards: Slot<CardsMsg>,
    first: Option<tokio::sync::broadcast::Receiver<Card>>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let mut feed = first;
    loop {
        let Some(rx) = feed.as_mut() else {
            tokio::time::sleep(REFOLLOW).await;
            feed = cards.call(CardsMsg::Watch).await.ok();
            continue;
        };
        match rx.recv().await {
            Ok(card) => {
                if myself.cast(PushMsg::Card(Box::new(card))).is_err() {
                    return;
                }
            }
            // Fell behind: the missed changes are not pushed (their cards still show).
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "push fell behind this machine's cards");
            }
            Err(RecvError::Closed) => feed = None,
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

const PREFIX: &str = "sub/";

fn load(store: &Store) -> BTreeMap<String, Subscription> {
    let mut subs = BTreeMap::new();
    match store.scan_prefix(Table::Push, PREFIX) {
        Ok(rows) => {
            for (key, value) in rows {
                match serde_json::from_slice::<Subscription>(&value) {
                    Ok(sub) => {
                        subs.insert(sub.device.clone(), sub);
                    }
                    Err(e) => {
                        tracing::warn!(%key, error = %e, "unreadable push subscription skipped")
                    }
                }
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot read the push subscriptions"),
    }
    subs
}

/// Whether the device that made `sub` may still be pushed to: `Some(false)` when it is gone for
/// good (revoked, its label taken over), `None` when it cannot be told now (expired — its
/// expiry may be cleared —, or no authoritative policy yet).
fn device_alive(policy: &Policy, sub: &Subscription) -> Option<bool> {
    let snapshot = policy.load();
    if snapshot.version() == 0 || !snapshot.is_available() {
        return None;
    }
    let now = time::OffsetDateTime::now_utc();
    match snapshot.authorize_hash(&sub.token, Tier::Read, now) {
        Ok(d) if d.label.as_str() == sub.device => Some(true),
        Ok(_) | Err(AuthError::NotPaired) => Some(false),
        Err(_) => None,
    }
}

impl PushState {
    fn vapid(&mut self) -> Result<Arc<Vapid>, VapidError> {
        if let Some(v) = &self.vapid {
            return Ok(Arc::clone(v));
        }
        let v = Arc::new(Vapid::load_or_create(&self.args.dir)?);
        self.vapid = Some(Arc::clone(&v));
        Ok(v)
    }

    fn tls(
        &mut self,
        ca_file: Option<PathBuf>,
    ) -> Result<Arc<rustls::ClientConfig>, https::HttpsError> {
        if let Some(c) = self.tls.get(&ca_file) {
            return Ok(Arc::clone(c));
        }
        let c = https::tls_config(ca_file.as_deref())?;
        self.tls.insert(ca_file, Arc::clone(&c));
        Ok(c)
    }

    fn drop_sub(&mut self, device: &str, why: &str) -> Result<bool, StoreError> {
        if !self.subs.contains_key(device) {
            return Ok(false);
        }
        self.args
            .store
            .remove(Table::Push, &format!("{PREFIX}{device}"))?;
        self.subs.remove(device);
        self.later.remove(device);
        tracing::info!(device, why, "push subscription dropped");
        Ok(true)
    }

    fn subscribe(&mut self, new: NewSubscription) -> Result<String, PushError> {
        let checked = endpoint::check(&new.endpoint, &self.args.services)?;
        Keys::parse(&new.p256dh, &new.auth)?;
        let sub = Subscription {
            device: new.device,
            token: new.token,
            endpoint: new.endpoint,
            p256dh: new.p256dh,
            auth: new.auth,
            created: now_ms(),
        };
        let bytes = serde_json::to_vec(&sub).unwrap_or_default();
        self.args
            .store
            .put(Table::Push, &format!("{PREFIX}{}", sub.device), &bytes)?;
        self.later.remove(&sub.device);
        self.subs.insert(sub.device.clone(), sub);
        Ok(checked.host)
    }

    fn ask(&mut self, myself: &ActorRef<PushMsg>, ask: Ask) {
        let now = now_ms();
        tracing::debug!(key = %ask.key, subscriptions = self.subs.len(), "a new question");
        let question = Question {
            key: &ask.key,
            host: &ask.host,
            conversation: ask.conversation.as_deref(),
        };
        let payload = match self.limiter.judge(&question, now) {
            Verdict::Push => ask.payload,
            Verdict::Summary { pushed } => {
                Payload::summary(&ask.host, u32::try_from(pushed + 1).unwrap_or(u32::MAX))
            }
            Verdict::Quiet(why) => {
                tracing::debug!(key = %ask.key, ?why, "question not pushed");
                return;
            }
        };
        self.send_all(myself, &payload, now, None);
    }

    /// Posts `payload` to every live subscription but `except`'s device.
    fn send_all(
        &mut self,
        myself: &ActorRef<PushMsg>,
        payload: &Payload,
        now: u64,
        except: Option<&str>,
    ) {
        if self.subs.is_empty() {
            return;
        }
        let vapid = match self.vapid() {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, "no push key; nothing pushed");
                return;
            }
        };
        let body = payload.to_bytes();
        let subs: Vec<Subscription> = self
            .subs
            .values()
            .filter(|sub| Some(sub.device.as_str()) != except)
            .cloned()
            .collect();
        for sub in subs {
            match device_alive(&self.args.policy, &sub) {
                Some(true) => {}
                Some(false) => {
                    if let Err(e) = self.drop_sub(&sub.device, "device no longer paired") {
                        tracing::warn!(error = %e, "cannot drop a push subscription");
                    }
                    continue;
                }
                None => continue,
            }
            if self
                .later
                .get(&sub.device)
                .is_some_and(|&until| now < until)
            {
                tracing::debug!(device = %sub.device, "push service asked to wait; not sent");
                continue;
            }
            if self.posts.len() >= MAX_IN_FLIGHT {
                tracing::warn!(device = %sub.device, "too many pushes in flight; not sent");
                continue;
            }
            if let Err(e) = self.post(myself, &vapid, sub, body.clone(), now) {
                tracing::warn!(error = %e, "push not sent");
            }
        }
    }

    /// Checks the endpoint again, builds the encrypted, signed request and sends it in a task.
    fn post(
        &mut self,
        myself: &ActorRef<PushMsg>,
        vapid: &Vapid,
        sub: Subscription,
        body: Vec<u8>,
        now: u64,
    ) -> Result<(), String> {
        let target =
            endpoint::check(&sub.endpoint, &self.args.services).map_err(|e| e.to_string())?;
        let request = super::message::request(&sub, &target, vapid, body, now / 1000)
            .map_err(|e| e.to_string())?;
        let tls = self
            .tls(target.service.as_ref().and_then(|s| s.ca_file.clone()))
            .map_err(|e| e.to_string())?;
        let to = Target {
            host: target.host.clone(),
            port: target.port,
            public_only: target.public_only(),
            tls,
        };
        let myself = myself.clone();
        self.posts.spawn(async move {
            let outcome = match https::send(&to, request, LIMITS).await {
                Ok(reply) => outcome::of_status(
                    reply.status,
                    reply
                        .headers
                        .get(http::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok()),
                    now_ms(),
                ),
                Err(e) => Outcome::Failed(e.to_string()),
            };
            let _ = myself.cast(PushMsg::Posted {
                device: sub.device,
                endpoint: sub.endpoint,
                outcome,
            });
        });
        Ok(())
    }

    fn posted(&mut self, device: String, endpoint: String, outcome: Outcome) {
        // The device may have subscribed anew meanwhile: the answer is about the old endpoint.
        if self
            .subs
            .get(&device)
            .is_none_or(|s| s.endpoint != endpoint)
        {
            return;
        }
        let host = endpoint::check(&endpoint, &self.args.services)
            .map(|e| e.host)
            .unwrap_or_default();
        match outcome {
            Outcome::Delivered => tracing::debug!(%device, %host, "pushed"),
            Outcome::Gone => {
                if let Err(e) = self.drop_sub(&device, "the push service no longer knows it") {
                    tracing::warn!(error = %e, "cannot drop a push subscription");
                }
            }
            Outcome::Later(until) => {
                tracing::info!(%device, %host, wait_ms = until.saturating_sub(now_ms()), "push service asked to wait");
                self.later.insert(device, until);
            }
            Outcome::Failed(why) => tracing::warn!(%device, %host, %why, "push failed"),
        }
    }
}

impl Actor for PushActor {
    type Msg = PushMsg;
    type State = PushState;
    type Arguments = PushArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<PushMsg>,
        args: PushArgs,
    ) -> Result<PushState, ActorProcessingErr> {
        let mut changes = args.policy.watch();
        let me = myself.clone();
        let watcher = tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if me.cast(PushMsg::PolicyChanged).is_err() {
                    break;
                }
            }
        });
        let first = args.cards.call(CardsMsg::Watch).await.ok();
        let cards = tokio::spawn(follow_cards(myself.clone(), args.cards.clone(), first));
        let subs = load(&args.store);
        Ok(PushState {
            args,
            vapid: None,
            subs,
            later: HashMap::new(),
            limiter: Limiter::new(),
            tls: HashMap::new(),
            posts: JoinSet::new(),
            _policy: AbortOnDropHandle::new(watcher),
            _cards: AbortOnDropHandle::new(cards),
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<PushMsg>,
        _state: &mut PushState,
    ) -> Result<(), ActorProcessingErr> {
        // Devices revoked while the bridge was down.
        let _ = myself.cast(PushMsg::PolicyChanged);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<PushMsg>,
        msg: PushMsg,
        state: &mut PushState,
    ) -> Result<(), ActorProcessingErr> {
        while state.posts.try_join_next().is_some() {}
        match msg {
            PushMsg::Key(reply) => {
                let key = state
                    .vapid()
                    .map(|v| v.public_key().to_owned())
                    .map_err(PushError::from);
                let _ = reply.send(key);
            }
            PushMsg::Subscribe(new, reply) => {
                let _ = reply.send(state.subscribe(*new));
            }
            PushMsg::Unsubscribe(device, reply) => {
                let _ = reply.send(
                    state
                        .drop_sub(&device, "unsubscribed")
                        .map_err(PushError::from),
                );
            }
            PushMsg::Subscribed(reply) => {
                let _ = reply.send(state.subs.keys().cloned().collect());
            }
            PushMsg::Ask(ask) => state.ask(&myself, *ask),
            PushMsg::Paired(label) => {
                let payload = Payload::paired(&state.args.machine.get());
                state.send_all(&myself, &payload, now_ms(), Some(&label));
            }
            PushMsg::Card(card) => {
                let machine = state.args.machine.get();
                let masker = Arc::clone(&state.args.masker);
                let mask = move |s: &str| masker.mask(s).into_owned();
                if let Some(ask) = question::of_card(&card, &machine, now_ms(), &mask) {
                    state.ask(&myself, ask);
                }
            }
            PushMsg::Posted {
                device,
                endpoint,
                outcome,
            } => state.posted(device, endpoint, outcome),
            PushMsg::PolicyChanged => {
                let gone: Vec<String> = state
                    .subs
                    .values()
                    .filter(|s| device_alive(&state.args.policy, s) == Some(false))
                    .map(|s| s.device.clone())
                    .collect();
                for device in gone {
                    if let Err(e) = state.drop_sub(&device, "device no longer paired") {
                        tracing::warn!(error = %e, "cannot drop a push subscription");
                    }
                }
            }
        }
        Ok(())
    }
}
