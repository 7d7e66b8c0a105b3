//! The update check (SPEC §17, seed 002; decision 0078): at start and once a day the bridge asks
//! the release host for the latest release's tag — one anonymous HTTPS GET with the fixed user
//! agent `collie-update-check` and nothing about the machine (no version, no name, no query, no
//! cookie) — and compares it with its own version here. `COLLIE_UPDATE_CHECK=off` turns it off,
//! and then nothing is sent.
//!
//! The host is fixed at build time: Cargo.toml's `repository` (a GitHub repository), asked at
//! `https://api.github.com/repos/<owner>/<name>/releases/latest` through the bridge's one HTTPS
//! client (public web roots, public addresses only, no redirect, bounded). Only a
//! `fault-injection` build (a test build, never shipped) can point it elsewhere:
//! `COLLIE_TEST_UPDATE_URL` (an `https://` URL) with `COLLIE_TEST_UPDATE_CA` (its CA's PEM file).
//!
//! The result is kept in memory for the phone's Settings and written to
//! `<state>/update-check.json` (0600, atomically) for `collie version` and `collie doctor`, which
//! run without the bridge.
//!
//! - [`latest`]: the answer read and compared (pure).

pub mod latest;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use collie_actors::https::{self, HttpsError, Limits, Target};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// The user agent of the check: the same for everyone, so it tells nothing about the machine.
pub const USER_AGENT: &str = "collie-update-check";
/// How often the bridge asks again.
pub const EVERY: Duration = Duration::from_secs(24 * 60 * 60);
/// The file of the last check in the state dir.
pub const FILE: &str = "update-check.json";
/// This build's version.
pub const CURRENT: &str = env!("CARGO_PKG_VERSION");

const LIMITS: Limits = Limits {
    connect: Duration::from_secs(10),
    total: Duration::from_secs(30),
    max_body: latest::MAX_ANSWER_BYTES,
};

/// The last check's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checked {
    /// When (RFC 3339).
    pub checked_at: String,
    /// This build's version then.
    pub current: String,
    /// The latest release's tag, when the answer said.
    pub latest: Option<String>,
    /// Whether it is newer than `current`.
    pub newer: bool,
    /// Why there is no answer (the host unreachable, an odd answer).
    pub error: Option<String>,
}

impl Checked {
    /// The last check written in `state_dir`, if any (a file that does not read is none).
    pub fn read(state_dir: &Path) -> Option<Checked> {
        let bytes = std::fs::read(state_dir.join(FILE)).ok()?;
        if bytes.len() > 64 * 1024 {
            return None;
        }
        serde_json::from_slice(&bytes).ok()
    }

    /// One line for `collie version` and `collie doctor`.
    pub fn summary(&self) -> String {
        match (&self.latest, &self.error) {
            (Some(tag), _) if self.newer => format!(
                "release {tag} is available (this is {}; checked {})",
                self.current, self.checked_at
            ),
            (Some(tag), _) => format!(
                "up to date (latest release {tag}; checked {})",
                self.checked_at
            ),
            (None, Some(e)) => format!("the last update check failed ({e}; {})", self.checked_at),
            (None, None) => format!("no release published yet (checked {})", self.checked_at),
        }
    }
}

/// Where the check asks.
#[derive(Debug, Clone)]
pub struct Source {
    target: Target,
    path: String,
}

impl Source {
    /// The release host of this build (see the module docs); `None` when the repository is not
    /// a GitHub one (a fork publishing elsewhere has no check).
    pub fn of_build() -> Result<Option<Source>, String> {
        #[cfg(feature = "fault-injection")]
        if let Ok(url) = std::env::var("COLLIE_TEST_UPDATE_URL") {
            let ca = std::env::var_os("COLLIE_TEST_UPDATE_CA")
                .ok_or("COLLIE_TEST_UPDATE_CA is not set")?;
            let tls = https::tls_config(Some(Path::new(&ca))).map_err(|e| e.to_string())?;
            let (target, path) = Target::of_url(&url, tls, false)?;
            return Ok(Some(Source { target, path }));
        }
        let Some(repo) = github_repo(env!("CARGO_PKG_REPOSITORY")) else {
            return Ok(None);
        };
        let tls = https::tls_config(None).map_err(|e| e.to_string())?;
        let url = format!("https://api.github.com/repos/{repo}/releases/latest");
        let (target, path) = Target::of_url(&url, tls, true)?;
        Ok(Some(Source { target, path }))
    }

    /// Asks once.
    pub async fn check(&self) -> Checked {
        let (latest, error) = match self.ask().await {
            Ok(l) => (Some(l), None),
            // No release yet: GitHub answers 404.
            Err(CheckError::Status(404)) => (None, None),
            Err(e) => (None, Some(e.to_string())),
        };
        Checked {
            checked_at: collie_actors::rfc3339::format(time::OffsetDateTime::now_utc())
                .unwrap_or_default(),
            current: CURRENT.to_owned(),
            newer: latest.as_ref().is_some_and(|l| latest::newer(l, CURRENT)),
            latest: latest.map(|l| l.tag),
            error,
        }
    }

    async fn ask(&self) -> Result<latest::Latest, CheckError> {
        let request = http::Request::get(self.path.as_str())
            .header(http::header::USER_AGENT, USER_AGENT)
            .header(http::header::ACCEPT, "application/vnd.github+json")
            .body(Vec::new())
            .map_err(|e| {
                CheckError::Https(HttpsError::Http {
                    host: self.target.host.clone(),
                    reason: e.to_string(),
                })
            })?;
        let reply = https::send(&self.target, request, LIMITS).await?;
        if reply.status != 200 {
            return Err(CheckError::Status(reply.status));
        }
        Ok(latest::read(&reply.body)?)
    }
}

/// Why one check has no answer.
#[derive(Debug, thiserror::Error)]
enum CheckError {
    #[error(transparent)]
    Https(#[from] HttpsError),
    #[error("the release host answered {0}")]
    Status(u16),
    #[error(transparent)]
    Latest(#[from] latest::LatestError),
}

/// `owner/name` of a `https://github.com/owner/name` URL.
fn github_repo(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://github.com/")?;
    let rest = rest.trim_end_matches('/').trim_end_matches(".git");
    let (owner, name) = rest.split_once('/')?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    (ok(owner) && ok(name)).then(|| format!("{owner}/{name}"))
}

/// The check as the bridge runs it: the last outcome, for the phone's Settings.
#[derive(Debug, Default)]
pub struct Updates {
    last: ArcSwapOption<Checked>,
    on: bool,
}

impl Updates {
    /// Whether the check runs, and the last outcome a previous run wrote (shown until the first
    /// check of this run answers).
    pub fn new(on: bool, state_dir: &Path) -> Updates {
        Updates {
            last: ArcSwapOption::from(Checked::read(state_dir).filter(|_| on).map(Arc::new)),
            on,
        }
    }

    /// Whether the check is on.
    pub fn on(&self) -> bool {
        self.on
    }

    /// The last outcome.
    pub fn last(&self) -> Option<Arc<Checked>> {
        self.last.load_full()
    }

    /// Checks now and every [`EVERY`] until `stop`, keeping each outcome here and in
    /// `<state_dir>/update-check.json`.
    pub async fn run(
        self: Arc<Self>,
        source: Source,
        state_dir: std::path::PathBuf,
        stop: CancellationToken,
    ) {
        loop {
            let checked = tokio::select! {
                () = stop.cancelled() => return,
                checked = source.check() => checked,
            };
            if let Some(e) = &checked.error {
                tracing::info!(error = %e, "the update check got no answer");
            }
            match serde_json::to_vec_pretty(&checked) {
                Ok(bytes) => {
                    let path = state_dir.join(FILE);
                    if let Err(e) = collie_actors::private_file::write_atomic(&path, &bytes) {
                        tracing::warn!(error = %e, "cannot keep the update check's outcome");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot encode the update check"),
            }
            self.last.store(Some(Arc::new(checked)));
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(EVERY) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_host_is_a_github_repository() {
        assert_eq!(
            github_repo("https://github.com/collie-dev/collie"),
            Some("collie-dev/collie".into())
        );
        assert_eq!(
            github_repo("https://github.com/a/b.git/"),
            Some("a/b".into())
        );
        assert_eq!(github_repo("https://gitlab.com/a/b"), None);
        assert_eq!(github_repo("https://github.com/a"), None);
        assert_eq!(github_repo("https://github.com/a/b?x=1"), None);
    }
}
