//! When an agent is read next (SPEC §10.3): every [`IDLE`] while no phone watches, every
//! [`WATCHED`] while one does, and never more than once per [`DOWN`] while the agent is down or
//! refuses the token — each read of an HTTPS agent is a request its host may bill, and a broken
//! one must not be hammered because a phone is open. Pure: the caller passes `now` (Unix ms).
//!
//! **A stuck ETag.** Reads carry `If-None-Match` so an unchanged state costs a 304 and no
//! parsing. An agent that answers 304 even though its state moved would be frozen on the phone
//! forever, so every [`FULL_EVERY`]th read goes without it.

/// Between reads while no phone watches, in ms (8,640 reads a day).
pub const IDLE: u64 = 10_000;
/// Between reads while a phone watches, in ms.
pub const WATCHED: u64 = 2_000;
/// Between attempts while the agent is down or refuses the token, in ms.
pub const DOWN: u64 = 10_000;
/// How long one phone read counts as watching, in ms (the phone reads every 2 s while a durable
/// view is open).
pub const WATCH_FOR: u64 = 6_000;
/// Every this many reads, one goes without `If-None-Match`.
pub const FULL_EVERY: u32 = 6;

/// How the last attempt went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Health {
    /// Not tried yet.
    #[default]
    New,
    /// It answered.
    Up,
    /// It could not be reached, answered badly, or its path is not private.
    Down,
    /// It refused the token (401).
    Refused,
}

/// One agent's read schedule.
#[derive(Debug, Clone, Default)]
pub struct Cadence {
    last: Option<u64>,
    health: Health,
    watched_until: u64,
    reads: u32,
}

impl Cadence {
    /// A phone watches until `now + WATCH_FOR`.
    pub fn watched(&mut self, now: u64) {
        self.watched_until = now.saturating_add(WATCH_FOR);
    }

    /// Whether a phone watches at `now`.
    pub fn is_watched(&self, now: u64) -> bool {
        now < self.watched_until
    }

    /// When the next read is due (Unix ms): at once for a new agent.
    pub fn due(&self, now: u64) -> u64 {
        let Some(last) = self.last else {
            return now;
        };
        let gap = match self.health {
            Health::New => 0,
            Health::Down | Health::Refused => DOWN,
            Health::Up if self.is_watched(now) => WATCHED,
            Health::Up => IDLE,
        };
        last.saturating_add(gap)
    }

    /// A read starts at `now`; whether it may send `If-None-Match`.
    pub fn start(&mut self, now: u64) -> bool {
        self.last = Some(now);
        self.reads = self.reads.wrapping_add(1);
        !self.reads.is_multiple_of(FULL_EVERY)
    }

    /// A write was taken: read again at once (the phone sees its effect), as a new agent is.
    pub fn soon(&mut self) {
        self.last = None;
    }

    /// The read that started last ended so.
    pub fn ended(&mut self, health: Health) {
        self.health = health;
    }

    /// How the last read went.
    pub fn health(&self) -> Health {
        self.health
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 1_800_000_000_000;

    #[test]
    fn idle_watched_and_down_gaps() {
        let mut c = Cadence::default();
        assert_eq!(c.due(T), T, "a new agent is read at once");
        c.start(T);
        c.ended(Health::Up);
        assert_eq!(c.due(T + 1), T + IDLE);
        c.watched(T + 1);
        assert_eq!(c.due(T + 1), T + WATCHED);
        assert_eq!(c.due(T + 1 + WATCH_FOR), T + IDLE, "watching lapses");
        c.ended(Health::Refused);
        c.watched(T + 1);
        assert_eq!(
            c.due(T + 1),
            T + DOWN,
            "a phone does not speed up a refused agent"
        );
        c.ended(Health::Down);
        assert_eq!(c.due(T + 1), T + DOWN);
    }

    #[test]
    fn a_day_of_idle_reads_is_8640() {
        assert_eq!(24 * 60 * 60 * 1000 / IDLE, 8_640);
    }

    #[test]
    fn every_sixth_read_is_unconditional() {
        let mut c = Cadence::default();
        let conditional: Vec<bool> = (0..12).map(|i| c.start(T + i)).collect();
        assert_eq!(conditional.iter().filter(|b| !**b).count(), 2);
        assert!(!conditional[5] && !conditional[11]);
    }
}
