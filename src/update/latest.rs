//! What the release host answered, read (pure): the latest release's tag from GitHub's
//! `releases/latest` document, and whether it is newer than this build.

use serde::Deserialize;

/// The largest answer read (GitHub's release document is a few KiB; its notes can be long).
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Why an answer says nothing usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LatestError {
    /// Not the JSON of a release.
    #[error("not a release document: {0}")]
    NotRelease(String),
    /// The tag is not a version (`v1.2.3` or `1.2.3`).
    #[error("the latest tag {0:?} is not a version")]
    NotVersion(String),
}

#[derive(Deserialize)]
struct Release {
    tag_name: String,
}

/// The latest release's tag and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latest {
    /// As published (`v0.2.0`).
    pub tag: String,
    /// Its version.
    pub version: semver::Version,
}

/// Reads the `releases/latest` document.
pub fn read(body: &[u8]) -> Result<Latest, LatestError> {
    let release: Release =
        serde_json::from_slice(body).map_err(|e| LatestError::NotRelease(e.to_string()))?;
    let tag = release.tag_name;
    let bare = tag.strip_prefix('v').unwrap_or(&tag);
    let version = semver::Version::parse(bare).map_err(|_| LatestError::NotVersion(shown(&tag)))?;
    Ok(Latest { tag, version })
}

/// A tag as a message may quote it: at most 64 characters, none a control character.
fn shown(tag: &str) -> String {
    tag.chars().filter(|c| !c.is_control()).take(64).collect()
}

/// Whether `latest` is newer than `current` (a pre-release is never offered over a release).
pub fn newer(latest: &Latest, current: &str) -> bool {
    match semver::Version::parse(current) {
        Ok(current) => latest.version.pre.is_empty() && latest.version > current,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_tag_and_compares_versions() {
        let latest = read(br#"{"tag_name": "v0.2.0", "name": "x", "body": "notes"}"#).unwrap();
        assert_eq!(latest.tag, "v0.2.0");
        assert!(newer(&latest, "0.1.0"));
        assert!(!newer(&latest, "0.2.0"));
        assert!(!newer(&latest, "0.10.0"));
        let pre = read(br#"{"tag_name": "1.0.0-rc.1"}"#).unwrap();
        assert!(!newer(&pre, "0.1.0"));
    }

    #[test]
    fn refuses_what_is_not_a_release() {
        assert!(matches!(read(b"[]"), Err(LatestError::NotRelease(_))));
        assert!(matches!(read(b"{}"), Err(LatestError::NotRelease(_))));
        let err = read(br#"{"tag_name": "nightly\u001b[31m"}"#).unwrap_err();
        assert_eq!(err, LatestError::NotVersion("nightly[31m".into()));
    }
}
