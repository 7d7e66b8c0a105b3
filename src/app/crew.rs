//! The crew (SPEC §8) as the CLI drives it: init, invite, join, status, remove. The crew actor
//! decides and audits; the invite's lifetime is checked here, with the one duration grammar.

use std::time::Duration;

use collie_actors::crew_link::{CrewError, CrewMsg, CrewView};
use collie_actors::pairing::duration::INVITE_LIMIT;
use collie_actors::pairing::Dur;

use super::{App, AppError};

/// How long an invite is valid unless `--expires` says otherwise (SPEC §8).
pub const INVITE_TTL: Duration = Duration::from_secs(600);

/// Parses an invite's `--expires` with the one DUR grammar (SPEC §3.1), at most 7 days.
pub fn parse_invite_ttl(s: &str) -> Result<Duration, AppError> {
    Dur::parse_up_to(s, INVITE_LIMIT)
        .map(Dur::as_std)
        .map_err(|e| AppError::BadRequest(format!("--expires: {e}")))
}

impl From<CrewError> for AppError {
    fn from(e: CrewError) -> Self {
        match e {
            CrewError::AuditUnavailable => AppError::AuditUnavailable,
            // The crew's refusals are for the person at this machine (the CLI), in its words.
            other => AppError::BadRequest(other.to_string()),
        }
    }
}

impl App {
    /// Makes this bridge a crew lead.
    pub async fn crew_init(&self) -> Result<CrewView, AppError> {
        Ok(self.crew.actor.call(CrewMsg::Init).await??)
    }

    /// A one-time invite valid `expires` (default 10 minutes, at most 7 days), naming `address`
    /// (default the lead's own); returns it and its lifetime.
    pub async fn crew_invite(
        &self,
        expires: Option<&str>,
        address: Option<String>,
    ) -> Result<(String, Duration), AppError> {
        let expires = match expires {
            None => INVITE_TTL,
            Some(s) => parse_invite_ttl(s)?,
        };
        let invite = self
            .crew
            .actor
            .call(|reply| CrewMsg::Invite {
                expires,
                address,
                reply,
            })
            .await??;
        Ok((invite, expires))
    }

    /// Joins a crew with `invite`, as `name` (default this machine's name).
    pub async fn crew_join(
        &self,
        invite: String,
        name: Option<String>,
    ) -> Result<CrewView, AppError> {
        Ok(self
            .crew
            .actor
            .call(|reply| CrewMsg::Join {
                invite,
                name,
                reply,
            })
            .await??)
    }

    /// The crew as this bridge sees it.
    pub fn crew_status(&self) -> CrewView {
        self.crew.view.load().as_ref().clone()
    }

    /// Removes member `name` (the lead): unpinned and its link closed at once.
    pub async fn crew_remove(&self, name: String) -> Result<(), AppError> {
        Ok(self
            .crew
            .actor
            .call(|reply| CrewMsg::Remove { name, reply })
            .await??)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invite_ttl_is_a_dur_of_at_most_seven_days() {
        assert_eq!(
            parse_invite_ttl("30m").ok(),
            Some(Duration::from_secs(1800))
        );
        assert_eq!(parse_invite_ttl("10m").ok(), Some(INVITE_TTL));
        assert_eq!(
            parse_invite_ttl("7d").ok(),
            Some(Duration::from_secs(7 * 86_400))
        );
        for bad in [
            "",
            "m",
            "0m",
            "8d",
            "2w",
            "30s",
            "-1h",
            "1.5h",
            "10 m",
            "10x",
            "99999999999999999999d",
        ] {
            assert!(parse_invite_ttl(bad).is_err(), "{bad:?}");
        }
        let err = parse_invite_ttl("8d").expect_err("too long").to_string();
        assert_eq!(err, "--expires: duration \"8d\" is too long: at most 7d");
    }
}
