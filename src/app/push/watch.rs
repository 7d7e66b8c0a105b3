//! The lead's standing watch of its members' cards (SPEC §10.4): the lead holds the phones'
//! subscriptions, so every card that newly appears on a member while it is connected becomes a
//! question for the Push actor, which judges it and may push. (This machine's own cards reach the
//! Push actor from the Cards actor directly.) Cards always show on the phone; this only decides
//! whether it buzzes.
//!
//! **Only new cards.** Each member is followed through the relay's `CardsWatch` (the feed a
//! phone's card stream opens), which carries only the changes after it opened: nothing a member
//! already had when it (re)connected, and nothing waiting before the lead restarted, is ever asked
//! about. [`collie_actors::push::question`] then keeps only fresh waiting cards, and the limiter
//! judges each (machine, card) once.
//!
//! Members come and go: the relay clients are looked at each time the crew actor publishes them
//! (and when a feed ends), never on a clock; a feed is opened for each online member that declared
//! `cards`, and a feed that ends (the member went offline) is opened again once the member is
//! back. A card made in the moment between a member coming online and its feed opening shows,
//! and does not buzz.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use collie_actors::push::actor::PushMsg;
use collie_actors::push::question;
use collie_crew::relay::RelayKind;
use tokio::task::JoinSet;

use crate::app::machine::Member;
use crate::app::{App, AppError, Caller};

/// How long a member whose feed could not be opened waits before it is asked again.
const RETRY_AFTER: Duration = Duration::from_secs(2);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Runs the watch until the bridge stops (the bridge spawns it as one of its tracked tasks).
pub async fn run(app: App) {
    let mut feeds: JoinSet<String> = JoinSet::new();
    let mut watched: BTreeSet<String> = BTreeSet::new();
    let mut published = app.crew.relays.watch();
    loop {
        for member in app.online_members() {
            if member.allows(&RelayKind::CardsWatch).is_err() || watched.contains(member.name()) {
                continue;
            }
            watched.insert(member.name().to_owned());
            feeds.spawn(follow(app.clone(), member));
        }
        tokio::select! {
            Some(ended) = feeds.join_next() => {
                if let Ok(name) = ended {
                    watched.remove(&name);
                }
            }
            changed = published.changed() => {
                if changed.is_err() {
                    // The set is never dropped while the bridge runs.
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// Follows one member's card changes until its feed ends; returns the member's name.
async fn follow(app: App, member: Member) -> String {
    let name = member.name().to_owned();
    let caller = Caller::cli();
    let Ok(mut feed) = member.watch_cards(caller.on()).await else {
        tokio::time::sleep(RETRY_AFTER).await;
        return name;
    };
    let mask = |s: &str| app.core.masker.mask(s).into_owned();
    loop {
        let card = match feed.next().await {
            Ok(Some(card)) => card,
            Err(AppError::MemberUnreadable) => {
                tracing::warn!(member = %name, "unreadable card change from a member; its push feed ends");
                break;
            }
            Ok(None) | Err(_) => break,
        };
        if let Some(ask) = question::of_card(&card, &name, now_ms(), &mask) {
            // The Push actor restarting: this question is not pushed; its card still shows.
            let _ = app.agents.push.cast(PushMsg::Ask(Box::new(ask)));
        }
    }
    name
}
