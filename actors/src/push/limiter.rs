//! The push limiter (SPEC §10.4): which new questions buzz the phone. Pure — no clock, no I/O; the
//! caller passes `now` in Unix milliseconds.
//!
//! The rules, in the order they are applied to each question:
//!
//! 1. **Judged once.** A question is identified by its key (the machine and the card id: one card
//!    is one tool call of one agent). A key seen before is never judged again, so a replayed or
//!    repeated event cannot push twice. Keys are remembered for [`REMEMBER_MS`] (longer than any
//!    card can wait) and at most [`MAX_KEYS`] of them.
//! 2. **The host is quiet** for an hour after its summary push: nothing from it is pushed.
//! 3. **3 per minute per conversation**: a fourth question of one conversation within a minute of
//!    its first three pushes is not pushed.
//! 4. **10 per minute per host.**
//! 5. **30 per hour per host; the 31st becomes one summary push**, and the host is quiet for an
//!    hour from then (rule 2).
//!
//! Windows slide: "per minute" counts the pushes of the last 60 000 ms before `now`, "per hour"
//! those of the last 3 600 000 ms. A question that is not pushed is not kept for later: cards
//! always show on the phone, pushed or not, and a late buzz for an old question helps nobody.

use std::collections::{BTreeMap, HashMap, VecDeque};

/// One minute, in milliseconds.
pub const MINUTE_MS: u64 = 60_000;
/// One hour, in milliseconds.
pub const HOUR_MS: u64 = 60 * MINUTE_MS;
/// Pushes per minute per conversation.
pub const PER_CONVERSATION_MINUTE: usize = 3;
/// Pushes per minute per host.
pub const PER_HOST_MINUTE: usize = 10;
/// Pushes per hour per host; the next question becomes the summary.
pub const PER_HOST_HOUR: usize = 30;
/// How long a judged key is remembered: a day, longer than the longest hold (`[hooks] hold` is at
/// most 24 h).
pub const REMEMBER_MS: u64 = 25 * HOUR_MS;
/// Most keys remembered (the oldest is forgotten first).
pub const MAX_KEYS: usize = 16_384;

/// A new question to judge.
#[derive(Debug, Clone, Copy)]
pub struct Question<'a> {
    /// What makes it one question (the machine and the card id).
    pub key: &'a str,
    /// The machine it is on.
    pub host: &'a str,
    /// The agent's conversation, when known (the session id, else the pane).
    pub conversation: Option<&'a str>,
}

/// Why a question was not pushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quiet {
    /// The key was judged before.
    Judged,
    /// The host is quiet after its summary push, until the given time.
    AfterSummary {
        /// Unix milliseconds from which the host pushes again.
        until: u64,
    },
    /// 3 pushes of this conversation in the last minute.
    ConversationMinute,
    /// 10 pushes of this host in the last minute.
    HostMinute,
}

/// What to do with a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Push it.
    Push,
    /// Push one summary instead: the host had `pushed` pushes in the last hour, and is quiet
    /// from now for an hour.
    Summary {
        /// Pushes of the host in the hour before this question.
        pushed: usize,
    },
    /// Do not push it.
    Quiet(Quiet),
}

#[derive(Debug, Default)]
struct Host {
    /// Times of its pushes in the last hour, oldest first.
    pushes: VecDeque<u64>,
    /// Quiet until (after a summary).
    quiet_until: Option<u64>,
}

/// The limiter of one bridge.
#[derive(Debug, Default)]
pub struct Limiter {
    judged: HashMap<String, u64>,
    judged_order: VecDeque<(u64, String)>,
    hosts: BTreeMap<String, Host>,
    conversations: BTreeMap<(String, String), VecDeque<u64>>,
}

/// How many of `times` (ascending) fall in the `window` before `now`.
fn within(times: &VecDeque<u64>, now: u64, window: u64) -> usize {
    times
        .iter()
        .rev()
        .take_while(|&&t| now.saturating_sub(t) < window)
        .count()
}

fn forget_before(times: &mut VecDeque<u64>, now: u64, window: u64) {
    while times
        .front()
        .is_some_and(|&t| now.saturating_sub(t) >= window)
    {
        times.pop_front();
    }
}

impl Limiter {
    /// An empty limiter.
    pub fn new() -> Limiter {
        Limiter::default()
    }

    /// Judges `q` at `now` (see the module docs) and records what it decided.
    pub fn judge(&mut self, q: &Question<'_>, now: u64) -> Verdict {
        self.forget(now);
        if self.judged.contains_key(q.key) {
            return Verdict::Quiet(Quiet::Judged);
        }
        self.judged.insert(q.key.to_owned(), now);
        self.judged_order.push_back((now, q.key.to_owned()));
        while self.judged.len() > MAX_KEYS {
            let Some((_, oldest)) = self.judged_order.pop_front() else {
                break;
            };
            self.judged.remove(&oldest);
        }

        let host = self.hosts.entry(q.host.to_owned()).or_default();
        if let Some(until) = host.quiet_until {
            if now < until {
                return Verdict::Quiet(Quiet::AfterSummary { until });
            }
            host.quiet_until = None;
        }
        let conversation = q.conversation.map(|c| (q.host.to_owned(), c.to_owned()));
        if let Some(key) = &conversation {
            if self
                .conversations
                .get(key)
                .is_some_and(|t| within(t, now, MINUTE_MS) >= PER_CONVERSATION_MINUTE)
            {
                return Verdict::Quiet(Quiet::ConversationMinute);
            }
        }
        if within(&host.pushes, now, MINUTE_MS) >= PER_HOST_MINUTE {
            return Verdict::Quiet(Quiet::HostMinute);
        }
        let pushed = within(&host.pushes, now, HOUR_MS);
        if pushed >= PER_HOST_HOUR {
            host.quiet_until = Some(now.saturating_add(HOUR_MS));
            host.pushes.clear();
            return Verdict::Summary { pushed };
        }
        host.pushes.push_back(now);
        if let Some(key) = conversation {
            self.conversations.entry(key).or_default().push_back(now);
        }
        Verdict::Push
    }

    /// Drops what no rule can use any more.
    fn forget(&mut self, now: u64) {
        while let Some((at, key)) = self.judged_order.front() {
            if now.saturating_sub(*at) < REMEMBER_MS {
                break;
            }
            self.judged.remove(key);
            self.judged_order.pop_front();
        }
        for host in self.hosts.values_mut() {
            forget_before(&mut host.pushes, now, HOUR_MS);
        }
        self.hosts
            .retain(|_, h| !h.pushes.is_empty() || h.quiet_until.is_some_and(|u| now < u));
        for times in self.conversations.values_mut() {
            forget_before(times, now, MINUTE_MS);
        }
        self.conversations.retain(|_, t| !t.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_800_000_000_000;

    fn q<'a>(key: &'a str, host: &'a str, conversation: &'a str) -> Question<'a> {
        Question {
            key,
            host,
            conversation: Some(conversation),
        }
    }

    /// Judges `n` questions of distinct keys `prefix-i`, one every `every_ms` from `start`.
    fn run(
        l: &mut Limiter,
        prefix: &str,
        host: &str,
        conv: impl Fn(usize) -> String,
        n: usize,
        start: u64,
        every_ms: u64,
    ) -> Vec<Verdict> {
        (0..n)
            .map(|i| {
                let key = format!("{prefix}-{i}");
                let c = conv(i);
                l.judge(&q(&key, host, &c), start + every_ms * i as u64)
            })
            .collect()
    }

    #[test]
    fn a_question_is_judged_once_and_pushed_at_most_once() {
        let mut l = Limiter::new();
        let a = q("web-1/c1", "web-1", "s1");
        assert_eq!(l.judge(&a, T0), Verdict::Push);
        assert_eq!(l.judge(&a, T0 + 1), Verdict::Quiet(Quiet::Judged));
        // Still judged a day later (a card can wait 24 h), then forgotten.
        assert_eq!(
            l.judge(&a, T0 + 24 * HOUR_MS),
            Verdict::Quiet(Quiet::Judged)
        );
        assert_eq!(l.judge(&a, T0 + REMEMBER_MS), Verdict::Push);
        // A question kept quiet is judged too: it does not push later.
        let mut l = Limiter::new();
        for i in 0..3 {
            let key = format!("k{i}");
            assert_eq!(l.judge(&q(&key, "h", "s"), T0), Verdict::Push);
        }
        let late = q("k3", "h", "s");
        assert_eq!(
            l.judge(&late, T0),
            Verdict::Quiet(Quiet::ConversationMinute)
        );
        assert_eq!(
            l.judge(&late, T0 + 2 * MINUTE_MS),
            Verdict::Quiet(Quiet::Judged)
        );
    }

    #[test]
    fn three_per_minute_per_conversation() {
        let mut l = Limiter::new();
        let v = run(&mut l, "a", "h", |_| "s1".into(), 4, T0, 1_000);
        assert_eq!(
            v,
            [
                Verdict::Push,
                Verdict::Push,
                Verdict::Push,
                Verdict::Quiet(Quiet::ConversationMinute)
            ]
        );
        // Another conversation of the same host is not held back by s1.
        assert_eq!(l.judge(&q("b", "h", "s2"), T0 + 4_000), Verdict::Push);
        // 59 999 ms after the first push it still counts; at 60 000 ms it has left the window.
        assert_eq!(
            l.judge(&q("c", "h", "s1"), T0 + MINUTE_MS - 1),
            Verdict::Quiet(Quiet::ConversationMinute)
        );
        assert_eq!(l.judge(&q("d", "h", "s1"), T0 + MINUTE_MS), Verdict::Push);
        // A question without a conversation is bounded by its host only.
        let mut l = Limiter::new();
        for i in 0..10 {
            let key = format!("n{i}");
            let none = Question {
                key: &key,
                host: "h",
                conversation: None,
            };
            assert_eq!(l.judge(&none, T0), Verdict::Push, "{i}");
        }
    }

    #[test]
    fn ten_per_minute_per_host() {
        let mut l = Limiter::new();
        // Ten conversations, one question each, in one second.
        let v = run(&mut l, "a", "h", |i| format!("s{i}"), 11, T0, 100);
        assert_eq!(v[..10], [Verdict::Push; 10]);
        assert_eq!(v[10], Verdict::Quiet(Quiet::HostMinute));
        // Another host has its own budget.
        assert_eq!(l.judge(&q("x", "other", "s0"), T0 + 1_100), Verdict::Push);
        // The first push leaves the window 60 000 ms after it was made.
        assert_eq!(
            l.judge(&q("b", "h", "t"), T0 + MINUTE_MS - 1),
            Verdict::Quiet(Quiet::HostMinute)
        );
        assert_eq!(l.judge(&q("c", "h", "t"), T0 + MINUTE_MS), Verdict::Push);
    }

    #[test]
    fn thirty_per_hour_then_one_summary_then_an_hour_of_quiet() {
        let mut l = Limiter::new();
        // One question every 2 minutes, each from a new conversation: 30 pushes in 58 minutes.
        let every = 2 * MINUTE_MS;
        let v = run(&mut l, "a", "h", |i| format!("s{i}"), 30, T0, every);
        assert_eq!(v, [Verdict::Push; 30]);
        // The 31st, within the hour of the first, becomes the summary.
        let at = T0 + 30 * every - MINUTE_MS; // 59 minutes after the first
        assert_eq!(
            l.judge(&q("a-30", "h", "s30"), at),
            Verdict::Summary { pushed: 30 }
        );
        // Nothing more from the host until an hour after the summary…
        for (i, t) in [at + 1, at + MINUTE_MS, at + HOUR_MS - 1]
            .into_iter()
            .enumerate()
        {
            let key = format!("quiet-{i}");
            assert_eq!(
                l.judge(&q(&key, "h", &key), t),
                Verdict::Quiet(Quiet::AfterSummary {
                    until: at + HOUR_MS
                })
            );
        }
        // …while another host pushes as before.
        assert_eq!(l.judge(&q("o", "other", "s"), at + 1), Verdict::Push);
        // An hour after the summary the host pushes again, with a fresh hour.
        assert_eq!(l.judge(&q("back", "h", "s"), at + HOUR_MS), Verdict::Push);
        let v = run(
            &mut l,
            "again",
            "h",
            |i| format!("r{i}"),
            29,
            at + HOUR_MS + every,
            every,
        );
        assert_eq!(v, [Verdict::Push; 29]);
    }

    #[test]
    fn thirty_pushes_spread_over_more_than_an_hour_need_no_summary() {
        let mut l = Limiter::new();
        // One push every 2 min 1 s: the first has left the hour when the 31st comes.
        let every = 2 * MINUTE_MS + 1_000;
        let v = run(&mut l, "a", "h", |i| format!("s{i}"), 40, T0, every);
        assert_eq!(v, [Verdict::Push; 40]);
    }

    #[test]
    fn the_summary_comes_at_the_31st_push_worthy_question_in_a_burst() {
        // A storm: 100 questions from 100 conversations, 3 per minute … capped at 10 per minute,
        // so the hour fills after 3 minutes and the 31st that passes the minute limits is the
        // summary.
        let mut l = Limiter::new();
        let mut pushes = 0;
        let mut summaries = 0;
        for i in 0..100u64 {
            let key = format!("k{i}");
            let conv = format!("s{i}");
            match l.judge(&q(&key, "h", &conv), T0 + i * 5_000) {
                Verdict::Push => pushes += 1,
                Verdict::Summary { pushed } => {
                    assert_eq!(pushed, 30);
                    summaries += 1;
                }
                Verdict::Quiet(_) => {}
            }
        }
        assert_eq!((pushes, summaries), (30, 1));
    }

    #[test]
    fn memory_stays_bounded() {
        let mut l = Limiter::new();
        // Conversations are kept only while they pushed in the last minute (at most 10 per host),
        // keys up to MAX_KEYS.
        for i in 0..(MAX_KEYS as u64 + 10) {
            let key = format!("k{i}");
            let conv = format!("s{i}");
            let _ = l.judge(&q(&key, "h", &conv), T0 + i);
        }
        assert_eq!(l.judged.len(), MAX_KEYS);
        assert!(l.conversations.len() <= PER_HOST_MINUTE);
        assert_eq!(l.hosts.len(), 1);
        assert_eq!(
            l.judge(&q("k0", "h", "s0"), T0 + MAX_KEYS as u64 + 10),
            Verdict::Quiet(Quiet::HostMinute),
            "the oldest key was forgotten first"
        );
    }
}
