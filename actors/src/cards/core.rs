//! The pure rules of cards (SPEC §10.1): no I/O, no clock, no randomness — the actor passes `now`
//! (Unix milliseconds) and fresh ids and tokens in.
//!
//! **Answering is two steps, claim then release.** A tap *claims* a waiting card (the `shown`
//! hash and the option are checked, and no second tap can claim it), the application writes the
//! audit line, and only then *releases* the decision to the asker; a line that cannot be written
//! *unclaims* it and the card waits again (SPEC §7: audited before it happens, refused when the
//! line cannot be written).
//!
//! **"Always allow" takes two taps.** The first tap on `always` claims nothing: it gets a token,
//! and only an answer carrying that token within [`CONFIRM_WITHIN_MS`] claims the card. A wrong or
//! stale token is a first tap again (a new token), so a phone that waited too long just asks again.
//!
//! **Bounds.** At most [`MAX_WAITING`] cards of at most [`MAX_WAITING_BYTES`] in all wait at once;
//! past either a new card is refused (`resource limit`) before it is kept, and the asker's agent
//! shows its own dialog. Receipts keep the last [`MAX_RECEIPTS`] closes younger than
//! [`RECEIPT_AGE_MS`].

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::card::{shown_hash, Card, CardOption, CardState, Item, NewCard, Source};
use super::error::CardError;
use super::present::{present, DENY};

/// Most cards waiting at once.
pub const MAX_WAITING: usize = 2_048;
/// Most bytes of card text (titles and items) waiting at once.
pub const MAX_WAITING_BYTES: usize = 32 * 1024 * 1024;
/// Receipts kept.
pub const MAX_RECEIPTS: usize = 500;
/// How long a receipt is kept: 7 days.
pub const RECEIPT_AGE_MS: u64 = 7 * 24 * 60 * 60 * 1000;
/// How long the second tap of "Always allow" may take.
pub const CONFIRM_WITHIN_MS: u64 = 60_000;
/// The option id that takes a second tap.
pub const ALWAYS: &str = "always";

/// What was decided about a card, by whom, when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// The card's id.
    pub card: String,
    /// The machine it was on.
    pub machine: String,
    /// Who asked.
    pub source: Source,
    /// The card's title.
    pub title: String,
    /// How it ended.
    pub state: CardState,
    /// The option chosen, for an answered card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    /// The device that answered, for an answered card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Unix milliseconds.
    pub at: u64,
}

/// The result of a tap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tap {
    /// A first tap on "Always allow": the phone must answer again with this token.
    Confirm(String),
    /// The card is claimed for `option`; the caller audits, then releases or unclaims it.
    Claimed {
        /// The card as it was answered.
        card: Box<Card>,
        /// The option chosen.
        option: CardOption,
    },
}

#[derive(Debug)]
struct Waiting {
    card: Card,
    bytes: usize,
    /// A first tap's token on "Always allow": the token, until when it holds, and the device
    /// that tapped — only that device's second tap confirms.
    confirm: Option<(String, u64, String)>,
    claimed: bool,
}

/// The waiting cards and the receipts of one bridge.
#[derive(Debug, Default)]
pub struct Cards {
    waiting: BTreeMap<String, Waiting>,
    bytes: usize,
    receipts: VecDeque<Receipt>,
}

impl Cards {
    /// An empty set.
    pub fn new() -> Cards {
        Cards::default()
    }

    /// Keeps a new card under `id` (fresh, 128-bit random), waiting until `now + hold_ms`.
    ///
    /// A held permission's or screen prompt's card is first made to show what it decides
    /// ([`present`]): escaped, cut to its limits, and offering only Deny when anything was cut.
    pub fn open(
        &mut self,
        id: String,
        mut new: NewCard,
        now: u64,
        hold_ms: u64,
    ) -> Result<Card, CardError> {
        let notes = present(&mut new);
        new.check().map_err(CardError::BadCard)?;
        let bytes = new.title.len() + new.items.iter().map(Item::text_len).sum::<usize>();
        if self.waiting.len() >= MAX_WAITING || self.bytes + bytes > MAX_WAITING_BYTES {
            return Err(CardError::TooMany);
        }
        if self.waiting.contains_key(&id) {
            return Err(CardError::BadCard("card id in use".to_owned()));
        }
        let mut card = Card {
            id: id.clone(),
            machine: new.machine,
            pane: new.pane,
            pane_name: new.pane_name,
            source: new.source,
            conversation: new.conversation,
            title: new.title,
            items: new.items,
            options: new.options,
            created: now,
            expires: now.saturating_add(hold_ms),
            state: CardState::Waiting,
            shown: String::new(),
            question: new.question,
            shortened: new.shortened,
            hidden_characters: notes.hidden,
            masked: new.masked,
            not_shown: notes.not_shown,
        };
        card.shown = shown_hash(&card);
        self.bytes += bytes;
        self.waiting.insert(
            id,
            Waiting {
                card: card.clone(),
                bytes,
                confirm: None,
                claimed: false,
            },
        );
        Ok(card)
    }

    /// A tap by `device`: `option` on card `id` as the phone drew it (`shown`), with the token of
    /// a first tap on "Always allow" if this is the second (the same device's). `token` makes a
    /// fresh token when one is needed.
    // Each argument is one fact of the tap as the phone sent it; a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub fn tap(
        &mut self,
        id: &str,
        option: &str,
        shown: &str,
        device: &str,
        confirm: Option<&str>,
        token: impl FnOnce() -> String,
        now: u64,
    ) -> Result<Tap, CardError> {
        let w = self.waiting.get_mut(id).ok_or(CardError::Closed)?;
        if w.claimed || now >= w.card.expires {
            return Err(CardError::Closed);
        }
        if w.card.shown != shown {
            return Err(CardError::Changed);
        }
        let chosen = w
            .card
            .options
            .iter()
            .find(|o| o.id == option)
            .cloned()
            .ok_or_else(|| CardError::UnknownOption(option.to_owned()))?;
        // Offered only Deny (see `present`); this holds even if that ever changed.
        if w.card.not_shown > 0 && chosen.id != DENY {
            return Err(CardError::UnknownOption(option.to_owned()));
        }
        if chosen.id == ALWAYS {
            let confirmed = match (&w.confirm, confirm) {
                (Some((expected, until, by)), Some(given)) => {
                    now <= *until && by == device && constant_time_eq(expected, given)
                }
                _ => false,
            };
            if !confirmed {
                let fresh = token();
                w.confirm = Some((
                    fresh.clone(),
                    now.saturating_add(CONFIRM_WITHIN_MS),
                    device.to_owned(),
                ));
                return Ok(Tap::Confirm(fresh));
            }
        }
        w.claimed = true;
        w.confirm = None;
        Ok(Tap::Claimed {
            card: Box::new(w.card.clone()),
            option: chosen,
        })
    }

    /// The audit line of a claim could not be written: the card waits again.
    pub fn unclaim(&mut self, id: &str) {
        if let Some(w) = self.waiting.get_mut(id) {
            w.claimed = false;
        }
    }

    /// The claimed card `id` is answered with `option` by `device`; it leaves the waiting set
    /// and a receipt is kept. `None` if it is not claimed (it closed meanwhile).
    pub fn release(&mut self, id: &str, option: &str, device: &str, now: u64) -> Option<Card> {
        if !self.waiting.get(id).is_some_and(|w| w.claimed) {
            return None;
        }
        let mut card = self.remove(id)?;
        card.state = CardState::Answered;
        self.receipt(&card, Some(option), Some(device), now);
        Some(card)
    }

    /// Ends card `id` without an answer: `AnsweredElsewhere`, `Expired` or `Withdrawn`. A claimed
    /// card ends too (its asker is gone; the release will find nothing).
    pub fn close(&mut self, id: &str, state: CardState, now: u64) -> Option<Card> {
        let mut card = self.remove(id)?;
        card.state = state;
        self.receipt(&card, None, None, now);
        Some(card)
    }

    /// Expires every unclaimed card whose deadline is past; returns them.
    pub fn expire(&mut self, now: u64) -> Vec<Card> {
        let due: Vec<String> = self
            .waiting
            .values()
            .filter(|w| !w.claimed && now >= w.card.expires)
            .map(|w| w.card.id.clone())
            .collect();
        due.iter()
            .filter_map(|id| self.close(id, CardState::Expired, now))
            .collect()
    }

    /// The waiting cards, oldest first.
    pub fn waiting(&self) -> Vec<Card> {
        let mut cards: Vec<Card> = self.waiting.values().map(|w| w.card.clone()).collect();
        cards.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
        cards
    }

    /// Whether card `id` is known: waiting, or ended with a receipt kept.
    pub fn knows(&self, id: &str) -> bool {
        self.waiting.contains_key(id) || self.receipts.iter().any(|r| r.card == id)
    }

    /// How many cards wait.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether no card waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The receipts younger than 7 days, newest first.
    pub fn receipts(&self, now: u64) -> Vec<Receipt> {
        self.receipts
            .iter()
            .rev()
            .filter(|r| now.saturating_sub(r.at) < RECEIPT_AGE_MS)
            .cloned()
            .collect()
    }

    fn remove(&mut self, id: &str) -> Option<Card> {
        let w = self.waiting.remove(id)?;
        self.bytes = self.bytes.saturating_sub(w.bytes);
        Some(w.card)
    }

    fn receipt(&mut self, card: &Card, option: Option<&str>, device: Option<&str>, now: u64) {
        self.receipts.push_back(Receipt {
            card: card.id.clone(),
            machine: card.machine.clone(),
            source: card.source.clone(),
            title: card.title.clone(),
            state: card.state,
            option: option.map(str::to_owned),
            device: device.map(str::to_owned),
            at: now,
        });
        while self.receipts.len() > MAX_RECEIPTS
            || self
                .receipts
                .front()
                .is_some_and(|r| now.saturating_sub(r.at) >= RECEIPT_AGE_MS)
        {
            self.receipts.pop_front();
        }
    }
}

/// Compares two tokens without stopping at the first difference.
fn constant_time_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOLD: u64 = 600_000;

    fn new_card(options: &[&str]) -> NewCard {
        NewCard {
            machine: "laptop".into(),
            pane: Some("t0-1".into()),
            pane_name: Some("build".into()),
            source: Source::Claude,
            conversation: Some("s-1".into()),
            title: "Bash".into(),
            items: vec![Item::Code {
                text: "cargo test".into(),
            }],
            options: options
                .iter()
                .map(|o| CardOption {
                    id: (*o).into(),
                    label: o.to_uppercase(),
                })
                .collect(),
            question: None,
            shortened: false,
            masked: false,
        }
    }

    fn opened(cards: &mut Cards, id: &str, options: &[&str]) -> Card {
        cards
            .open(id.into(), new_card(options), 1_000, HOLD)
            .unwrap()
    }

    fn no_token() -> String {
        panic!("no token expected")
    }

    #[test]
    fn a_tap_claims_then_the_release_answers_and_keeps_a_receipt() {
        let mut cards = Cards::new();
        let card = opened(&mut cards, "a", &["allow", "deny"]);
        assert_eq!(card.state, CardState::Waiting);
        assert_eq!(card.expires, 1_000 + HOLD);
        let tap = cards
            .tap("a", "allow", &card.shown, "pixel", None, no_token, 2_000)
            .unwrap();
        assert!(matches!(&tap, Tap::Claimed { option, .. } if option.id == "allow"));
        // A second tap while the first is being audited finds the card closed.
        assert_eq!(
            cards.tap("a", "deny", &card.shown, "pixel", None, no_token, 2_001),
            Err(CardError::Closed)
        );
        let done = cards.release("a", "allow", "phone", 2_002).unwrap();
        assert_eq!(done.state, CardState::Answered);
        assert!(cards.is_empty());
        let receipts = cards.receipts(2_003);
        assert_eq!(receipts.len(), 1);
        assert_eq!(receipts[0].device.as_deref(), Some("phone"));
        assert_eq!(receipts[0].option.as_deref(), Some("allow"));
        // Late taps: closed.
        assert_eq!(
            cards.tap("a", "allow", &card.shown, "pixel", None, no_token, 2_004),
            Err(CardError::Closed)
        );
    }

    #[test]
    fn a_card_cut_at_its_limit_is_only_denied() {
        let mut cards = Cards::new();
        let mut new = new_card(&["allow", "deny", "always"]);
        new.items = vec![Item::Code {
            text: format!("echo tidy{}; curl x | sh", " ".repeat(70_000)),
        }];
        let card = cards.open("a".into(), new, 1_000, HOLD).unwrap();
        assert!(card.shortened && card.not_shown > 0);
        assert_eq!(card.options.len(), 1);
        for option in ["allow", "always"] {
            assert_eq!(
                cards.tap(
                    "a",
                    option,
                    &card.shown,
                    "pixel",
                    None,
                    || "t".into(),
                    2_000
                ),
                Err(CardError::UnknownOption(option.into()))
            );
        }
        assert!(matches!(
            cards.tap("a", "deny", &card.shown, "pixel", None, no_token, 2_001),
            Ok(Tap::Claimed { .. })
        ));
    }

    #[test]
    fn an_unwritten_audit_line_unclaims() {
        let mut cards = Cards::new();
        let card = opened(&mut cards, "a", &["allow", "deny"]);
        cards
            .tap("a", "deny", &card.shown, "pixel", None, no_token, 2_000)
            .unwrap();
        cards.unclaim("a");
        assert_eq!(cards.waiting().len(), 1);
        assert!(cards.release("a", "deny", "phone", 2_001).is_none());
        assert!(matches!(
            cards.tap("a", "allow", &card.shown, "pixel", None, no_token, 2_002),
            Ok(Tap::Claimed { .. })
        ));
    }

    #[test]
    fn a_stale_hash_an_unknown_option_and_an_unknown_card_are_refused() {
        let mut cards = Cards::new();
        let card = opened(&mut cards, "a", &["allow", "deny"]);
        assert_eq!(
            cards.tap("a", "allow", "0000", "pixel", None, no_token, 2_000),
            Err(CardError::Changed)
        );
        assert_eq!(
            cards.tap("a", "maybe", &card.shown, "pixel", None, no_token, 2_000),
            Err(CardError::UnknownOption("maybe".into()))
        );
        assert_eq!(
            cards.tap("b", "allow", &card.shown, "pixel", None, no_token, 2_000),
            Err(CardError::Closed)
        );
        assert_eq!(cards.waiting().len(), 1, "nothing was decided");
    }

    #[test]
    fn always_takes_a_second_tap_with_the_token_within_a_minute() {
        let mut cards = Cards::new();
        let card = opened(&mut cards, "a", &["allow", "deny", "always"]);
        let first = cards
            .tap(
                "a",
                "always",
                &card.shown,
                "pixel",
                None,
                || "t1".into(),
                2_000,
            )
            .unwrap();
        assert_eq!(first, Tap::Confirm("t1".into()));
        // A wrong token is a first tap again.
        let wrong = cards
            .tap(
                "a",
                "always",
                &card.shown,
                "pixel",
                Some("tX"),
                || "t2".into(),
                3_000,
            )
            .unwrap();
        assert_eq!(wrong, Tap::Confirm("t2".into()));
        // The old token no longer works; the new one, late, neither.
        let late = cards
            .tap(
                "a",
                "always",
                &card.shown,
                "pixel",
                Some("t2"),
                || "t3".into(),
                3_000 + CONFIRM_WITHIN_MS + 1,
            )
            .unwrap();
        assert_eq!(late, Tap::Confirm("t3".into()));
        let second = cards
            .tap(
                "a",
                "always",
                &card.shown,
                "pixel",
                Some("t3"),
                no_token,
                70_000,
            )
            .unwrap();
        assert!(matches!(second, Tap::Claimed { option, .. } if option.id == ALWAYS));
    }

    #[test]
    fn only_the_device_that_tapped_first_confirms_with_its_token() {
        let mut cards = Cards::new();
        let card = opened(&mut cards, "a", &["allow", "always"]);
        cards
            .tap(
                "a",
                "always",
                &card.shown,
                "pixel",
                None,
                || "t1".into(),
                2_000,
            )
            .unwrap();
        let other = cards
            .tap(
                "a",
                "always",
                &card.shown,
                "tablet",
                Some("t1"),
                || "t2".into(),
                2_001,
            )
            .unwrap();
        assert_eq!(
            other,
            Tap::Confirm("t2".into()),
            "another device's tap is a first tap"
        );
        let own = cards
            .tap(
                "a",
                "always",
                &card.shown,
                "tablet",
                Some("t2"),
                no_token,
                2_002,
            )
            .unwrap();
        assert!(matches!(own, Tap::Claimed { .. }));
    }

    #[test]
    fn a_confirm_token_does_not_skip_the_hash_check() {
        let mut cards = Cards::new();
        let card = opened(&mut cards, "a", &["allow", "always"]);
        cards
            .tap(
                "a",
                "always",
                &card.shown,
                "pixel",
                None,
                || "t1".into(),
                2_000,
            )
            .unwrap();
        assert_eq!(
            cards.tap("a", "always", "stale", "pixel", Some("t1"), no_token, 2_001),
            Err(CardError::Changed)
        );
    }

    #[test]
    fn cards_expire_at_their_deadline_and_closes_are_receipted() {
        let mut cards = Cards::new();
        let card = opened(&mut cards, "a", &["allow"]);
        opened(&mut cards, "b", &["allow"]);
        assert!(cards.expire(1_000 + HOLD - 1).is_empty());
        assert_eq!(
            cards.tap(
                "a",
                "allow",
                &card.shown,
                "pixel",
                None,
                no_token,
                1_000 + HOLD
            ),
            Err(CardError::Closed),
            "a tap at the deadline is too late"
        );
        let gone = cards
            .close("b", CardState::AnsweredElsewhere, 5_000)
            .unwrap();
        assert_eq!(gone.state, CardState::AnsweredElsewhere);
        let expired = cards.expire(1_000 + HOLD);
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].state, CardState::Expired);
        let states: Vec<CardState> = cards
            .receipts(1_000 + HOLD)
            .iter()
            .map(|r| r.state)
            .collect();
        assert_eq!(states, [CardState::Expired, CardState::AnsweredElsewhere]);
    }

    #[test]
    fn the_waiting_set_is_capped_by_count() {
        let mut cards = Cards::new();
        for i in 0..MAX_WAITING {
            cards
                .open(format!("c{i}"), new_card(&["allow"]), 1, HOLD)
                .unwrap();
        }
        assert_eq!(
            cards.open("over".into(), new_card(&["allow"]), 1, HOLD),
            Err(CardError::TooMany)
        );
        cards.close("c0", CardState::Withdrawn, 2);
        assert!(cards
            .open("now".into(), new_card(&["allow"]), 3, HOLD)
            .is_ok());
    }

    #[test]
    fn the_waiting_set_is_capped_by_bytes() {
        let mut cards = Cards::new();
        let mut big = new_card(&["allow"]);
        big.items = (0..16)
            .map(|_| Item::Diff {
                text: "d".repeat(crate::cards::card::MAX_ITEM),
            })
            .collect();
        let per = big.title.len() + 16 * crate::cards::card::MAX_ITEM;
        let fit = MAX_WAITING_BYTES / per;
        for i in 0..fit {
            cards.open(format!("c{i}"), big.clone(), 1, HOLD).unwrap();
        }
        assert_eq!(
            cards.open("over".into(), big, 1, HOLD),
            Err(CardError::TooMany)
        );
        assert_eq!(cards.len(), fit);
    }

    #[test]
    fn receipts_keep_the_last_500_of_seven_days() {
        let mut cards = Cards::new();
        for i in 0..(MAX_RECEIPTS + 20) {
            let id = format!("c{i}");
            cards
                .open(id.clone(), new_card(&["allow"]), 1, HOLD)
                .unwrap();
            cards.close(&id, CardState::Withdrawn, 10 + i as u64);
        }
        let kept = cards.receipts(1_000);
        assert_eq!(kept.len(), MAX_RECEIPTS);
        assert_eq!(
            kept[0].card,
            format!("c{}", MAX_RECEIPTS + 19),
            "newest first"
        );
        assert!(cards.receipts(10 + RECEIPT_AGE_MS + 1_000).is_empty());
    }
}
