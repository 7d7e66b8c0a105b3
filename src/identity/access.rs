//! The Cloudflare Access gate (SPEC §14, decision 0074): with `COLLIE_ACCESS_TEAM` and
//! `COLLIE_ACCESS_AUD` set, every request must carry a `Cf-Access-Jwt-Assertion` token that
//! Cloudflare Access signed for this application — RS256 by a current key of the team, `aud`
//! holding the AUD tag, `iss` the team's domain, `exp` and `nbf` within a minute's leeway — and the
//! person is the token's `email` (a service token's `common_name`).
//!
//! The gate holds the team's keys in memory ([`keys::KeyRing`]): fetched at start and hourly by
//! [`AccessGate::run_refresher`] (or the task [`AccessGate::spawn_refresher`] starts), sooner
//! after a failure. A failed fetch keeps the keys already held; with none ever fetched, or none
//! fetched for [`MAX_KEY_AGE`], every request is refused (fail-closed). [`AccessGate::check`] is synchronous
//! and reads the ring without a lock, so it costs one RSA verification per request.

mod door;
pub mod keys;
pub mod source;
pub mod token;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use axum::http::HeaderMap;
use tokio_util::sync::CancellationToken;

use self::keys::KeyRing;
pub use self::source::AccessFetchError;
use self::source::KeySource;
pub use self::token::AccessRefusal;
use self::token::{Expected, MAX_TOKEN_BYTES};

/// The header Cloudflare Access puts the application token in.
pub const TOKEN_HEADER: &str = "cf-access-jwt-assertion";
/// How often the keys are fetched while fetches succeed.
pub const REFRESH_EVERY: Duration = Duration::from_secs(60 * 60);
/// The first retry after a failed fetch; each further failure doubles it up to [`RETRY_MAX`].
pub const RETRY_FIRST: Duration = Duration::from_secs(60);
/// The longest wait between retries while keys are held (with none, retries stay at
/// [`RETRY_FIRST`]: every request is refused until one succeeds).
pub const RETRY_MAX: Duration = Duration::from_secs(15 * 60);
/// How long keys are used without a good fetch: Cloudflare keeps a rotated-out key valid for
/// seven days, so keys older than that may include one it no longer honours.
pub const MAX_KEY_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// Longest AUD tag accepted (Cloudflare's are 64 hex digits).
const MAX_AUD_CHARS: usize = 128;

/// Why the gate cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccessConfigError {
    /// `COLLIE_ACCESS_TEAM` is not a team name.
    #[error(
        "COLLIE_ACCESS_TEAM {0:?} is not a team name (the <team> of <team>.cloudflareaccess.com)"
    )]
    BadTeam(String),
    /// `COLLIE_ACCESS_AUD` is not an AUD tag.
    #[error(
        "COLLIE_ACCESS_AUD is not an Access AUD tag (1 to {MAX_AUD_CHARS} letters and digits)"
    )]
    BadAud,
    /// The key source could not be set up.
    #[error("Access key source: {0}")]
    KeySource(String),
}

/// The Cloudflare Access gate: cheap to clone (one `Arc`), `Send + Sync`.
#[derive(Clone)]
pub struct AccessGate {
    shared: Arc<Shared>,
}

struct Shared {
    team: String,
    expected: Expected,
    source: KeySource,
    ring: ArcSwap<KeyRing>,
    status: parking_lot::Mutex<Status>,
    /// One fetch at a time, so two never rotate the ring at once.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Status {
    last_fetch: Option<SystemTime>,
    last_result: Option<Result<usize, String>>,
}

/// What `collie doctor` shows of the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AccessState {
    /// The team name.
    pub team: String,
    /// The AUD tag required.
    pub aud: String,
    /// The `iss` required.
    pub issuer: String,
    /// Where the keys are fetched from.
    pub keys_url: String,
    /// Key ids of the last good fetch.
    pub current_keys: Vec<String>,
    /// Key ids still accepted from the good fetch before it.
    pub previous_keys: Vec<String>,
    /// When the last good fetch was.
    pub last_good_fetch: Option<SystemTime>,
    /// When the last fetch, good or not, ended.
    pub last_fetch: Option<SystemTime>,
    /// Its result: the count of keys, or why it failed.
    pub last_result: Option<Result<usize, String>>,
}

impl AccessState {
    /// The count of keys tokens are checked against.
    pub fn keys_held(&self) -> usize {
        self.current_keys.len() + self.previous_keys.len()
    }
}

impl std::fmt::Debug for AccessGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessGate")
            .field("team", &self.shared.team)
            .field("aud", &self.shared.expected.aud)
            .finish_non_exhaustive()
    }
}

impl AccessGate {
    /// A gate for `team` (the `<team>` of `<team>.cloudflareaccess.com`, or that whole domain)
    /// and the application's AUD tag, holding no keys yet (see [`AccessGate::refresh`]).
    pub fn new(team: &str, aud: &str) -> Result<AccessGate, AccessConfigError> {
        let team = team_name(team)?;
        let source = KeySource::for_team(&team).map_err(AccessConfigError::KeySource)?;
        AccessGate::with_source(team, aud, source)
    }

    /// A gate whose keys come from a test's key server at `url`, its certificate from the CA
    /// in `ca_file` (only in a `fault-injection` build).
    #[cfg(feature = "fault-injection")]
    pub fn with_keys_at(
        team: &str,
        aud: &str,
        url: &str,
        ca_file: &std::path::Path,
    ) -> Result<AccessGate, AccessConfigError> {
        let team = team_name(team)?;
        let source = KeySource::at(url, ca_file).map_err(AccessConfigError::KeySource)?;
        AccessGate::with_source(team, aud, source)
    }

    fn with_source(
        team: String,
        aud: &str,
        source: KeySource,
    ) -> Result<AccessGate, AccessConfigError> {
        let aud = aud.trim();
        if aud.is_empty()
            || aud.len() > MAX_AUD_CHARS
            || !aud.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Err(AccessConfigError::BadAud);
        }
        let expected = Expected {
            issuer: format!("https://{team}.cloudflareaccess.com"),
            aud: aud.to_owned(),
        };
        Ok(AccessGate {
            shared: Arc::new(Shared {
                team,
                expected,
                source,
                ring: ArcSwap::from_pointee(KeyRing::default()),
                status: parking_lot::Mutex::new(Status::default()),
                fetching: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// Checks the request's token at `now` and returns the person it names.
    pub fn check(&self, headers: &HeaderMap, now: SystemTime) -> Result<String, AccessRefusal> {
        let mut values = headers.get_all(TOKEN_HEADER).iter();
        let value = values.next().ok_or(AccessRefusal::NoToken)?;
        if values.next().is_some() {
            return Err(AccessRefusal::SeveralTokens);
        }
        self.check_token(value.as_bytes(), now)
    }

    /// [`AccessGate::check`] of the header's one value, `raw`.
    pub fn check_token(&self, raw: &[u8], now: SystemTime) -> Result<String, AccessRefusal> {
        if raw.len() > MAX_TOKEN_BYTES {
            return Err(AccessRefusal::TooLarge);
        }
        let token = std::str::from_utf8(raw).map_err(|_| AccessRefusal::Malformed)?;
        let ring = self.shared.ring.load();
        if ring.is_empty() {
            return Err(AccessRefusal::NoKeys);
        }
        if let Some(at) = ring.fetched_at() {
            if now.duration_since(at).is_ok_and(|age| age > MAX_KEY_AGE) {
                return Err(AccessRefusal::StaleKeys);
            }
        }
        token::verify(token.trim(), &ring, &self.shared.expected, now)
    }

    /// Fetches the keys once; on success they become current and the current ones previous
    /// ([`KeyRing::rotated`]), on failure the keys held stay. Returns the count fetched.
    pub async fn refresh(&self) -> Result<usize, AccessFetchError> {
        let _one_at_a_time = self.shared.fetching.lock().await;
        let fetched = self.shared.source.fetch().await;
        let at = SystemTime::now();
        let mut status = self.shared.status.lock();
        status.last_fetch = Some(at);
        match fetched {
            Ok(keys) => {
                let count = keys.len();
                let ring = self.shared.ring.load().rotated(keys, at);
                self.shared.ring.store(Arc::new(ring));
                status.last_result = Some(Ok(count));
                Ok(count)
            }
            Err(e) => {
                status.last_result = Some(Err(e.to_string()));
                Err(e)
            }
        }
    }

    /// Starts [`AccessGate::run_refresher`] as a task of its own; the caller owns the handle
    /// (kept with its other tasks, or awaited after cancelling).
    pub fn spawn_refresher(&self, cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
        let gate = self.clone();
        let handle = tokio::spawn(async move { gate.run_refresher(cancel).await });
        tracing::debug!(team = %self.shared.team, "Access key refresher started");
        handle
    }

    /// Fetches the keys now, then every [`REFRESH_EVERY`], and after a failure again after
    /// [`retry_delay`]; returns when `cancel` is cancelled (a fetch under way is dropped). For a
    /// caller that runs it in a task set of its own.
    pub async fn run_refresher(&self, cancel: CancellationToken) {
        let mut failures = 0u32;
        loop {
            let fetched = tokio::select! {
                () = cancel.cancelled() => return,
                fetched = self.refresh() => fetched,
            };
            let wait = match fetched {
                Ok(count) => {
                    failures = 0;
                    tracing::debug!(team = %self.shared.team, count, "Access keys fetched");
                    REFRESH_EVERY
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    let holding = !self.shared.ring.load().is_empty();
                    let wait = retry_delay(failures, holding);
                    tracing::warn!(
                        team = %self.shared.team,
                        error = %e,
                        holding,
                        retry_in_s = wait.as_secs(),
                        "cannot fetch the Access keys"
                    );
                    wait
                }
            };
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// The gate's state, for `collie doctor`.
    pub fn state(&self) -> AccessState {
        let ring = self.shared.ring.load();
        let status = self.shared.status.lock();
        AccessState {
            team: self.shared.team.clone(),
            aud: self.shared.expected.aud.clone(),
            issuer: self.shared.expected.issuer.clone(),
            keys_url: self.shared.source.url().to_owned(),
            current_keys: ring.current_kids(),
            previous_keys: ring.previous_only_kids(),
            last_good_fetch: ring.fetched_at(),
            last_fetch: status.last_fetch,
            last_result: status.last_result.clone(),
        }
    }
}

/// The wait before the next fetch after `failures` failed ones in a row: [`RETRY_FIRST`] while
/// no keys are held (every request is refused meanwhile), else doubling from it up to
/// [`RETRY_MAX`] (the keys held still work; an outage is not hammered).
pub fn retry_delay(failures: u32, holding_keys: bool) -> Duration {
    if !holding_keys {
        return RETRY_FIRST;
    }
    let doublings = failures.saturating_sub(1).min(16);
    RETRY_FIRST.saturating_mul(1 << doublings).min(RETRY_MAX)
}

/// The team name of `COLLIE_ACCESS_TEAM`: one DNS label (letters, digits, inner hyphens, at most
/// 63), lowercased; `<team>.cloudflareaccess.com` is accepted for it.
fn team_name(raw: &str) -> Result<String, AccessConfigError> {
    let lower = raw.trim().to_ascii_lowercase();
    let label = lower
        .strip_suffix(".cloudflareaccess.com")
        .unwrap_or(&lower);
    let valid = !label.is_empty()
        && label.len() <= 63
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-');
    if valid {
        Ok(label.to_owned())
    } else {
        Err(AccessConfigError::BadTeam(raw.to_owned()))
    }
}

// Kept below the shipped code: tests/layers.rs reads a file only up to its first `cfg(test)`.
#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_team_is_one_dns_label() {
        assert_eq!(team_name("acme").expect("plain"), "acme");
        assert_eq!(team_name(" Acme-2 ").expect("case"), "acme-2");
        assert_eq!(
            team_name("acme.cloudflareaccess.com").expect("domain"),
            "acme"
        );
        for bad in [
            "",
            "-acme",
            "acme-",
            "ac.me",
            "acme.example.com",
            "ac me",
            "acme/x",
            "https://acme.cloudflareaccess.com",
            &"a".repeat(64),
        ] {
            assert!(team_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_aud_tag_is_letters_and_digits_bounded() {
        let hex = "4714c1358e65fe4b408ad6d432a5f878f08194bdb4752441fd56faefa9b2b6f2";
        let gate = AccessGate::new("acme", hex).expect("gate");
        assert_eq!(gate.state().aud, hex);
        assert_eq!(gate.state().issuer, "https://acme.cloudflareaccess.com");
        assert_eq!(
            gate.state().keys_url,
            "https://acme.cloudflareaccess.com/cdn-cgi/access/certs"
        );
        for bad in ["", "a b", "abc;", &"a".repeat(MAX_AUD_CHARS + 1)] {
            assert!(
                matches!(AccessGate::new("acme", bad), Err(AccessConfigError::BadAud)),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn without_keys_every_token_is_refused() {
        let gate = AccessGate::new("acme", "abc").expect("gate");
        let mut headers = HeaderMap::new();
        let now = SystemTime::now();
        assert_eq!(gate.check(&headers, now), Err(AccessRefusal::NoToken));
        headers.insert(TOKEN_HEADER, "a.b.c".parse().expect("value"));
        assert_eq!(gate.check(&headers, now), Err(AccessRefusal::NoKeys));
        headers.append(TOKEN_HEADER, "a.b.c".parse().expect("value"));
        assert_eq!(gate.check(&headers, now), Err(AccessRefusal::SeveralTokens));
        assert_eq!(gate.state().keys_held(), 0);
        assert_eq!(gate.state().last_result, None);
    }

    #[test]
    fn retries_are_sooner_than_the_hour_and_bounded() {
        assert_eq!(retry_delay(1, false), RETRY_FIRST);
        assert_eq!(retry_delay(9, false), RETRY_FIRST);
        assert_eq!(retry_delay(1, true), Duration::from_secs(60));
        assert_eq!(retry_delay(2, true), Duration::from_secs(120));
        assert_eq!(retry_delay(4, true), Duration::from_secs(480));
        assert_eq!(retry_delay(5, true), RETRY_MAX);
        assert_eq!(retry_delay(u32::MAX, true), RETRY_MAX);
        assert!(RETRY_MAX < REFRESH_EVERY);
    }
}
