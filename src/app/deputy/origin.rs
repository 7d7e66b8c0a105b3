//! The web origins the phone's failover needs (SPEC §13): the page is served by the lead, so a
//! phone that turns to the deputy talks to it across origins. Two bridges open exactly one origin
//! each, and only while the crew has a deputy:
//!
//! - **the lead** lets its page connect to the deputy's origin (the app shell's
//!   `Content-Security-Policy` `connect-src`), from the URL the deputy reported;
//! - **the deputy** answers the lead's origin with CORS (and lets it through the Origin check),
//!   from the lead's URL in the registry copy it holds.
//!
//! An origin is derived by parsing the URL and serializing its origin (`scheme://host[:port]`,
//! default ports omitted, as a browser sends `Origin`); anything but `http` or `https`, or a
//! result holding a byte that could end a header's or a policy's token, gives none.

use super::Deputy;
use crate::app::App;
use collie_actors::crew_link::CrewRole;

/// The web origin of `url` as a browser serializes it, if it is an `http(s)` URL with a host.
pub fn origin_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return None;
    }
    let origin = parsed.origin().ascii_serialization();
    // A policy or header token must not be ended early: only the bytes an origin can hold.
    let plain = origin
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-.:/[]".contains(&b));
    plain.then_some(origin)
}

impl Deputy {
    /// On the deputy: the lead's origin, from the copy it holds.
    fn lead_origin(&self) -> Option<String> {
        origin_of(&self.held.load().as_ref()?.copy.lead_url)
    }
}

impl App {
    /// On a bridge holding a deputy's registry copy: the lead's web origin, the one cross origin
    /// its API answers (CORS) and accepts writes from. `None` everywhere else.
    pub fn deputy_lead_origin(&self) -> Option<String> {
        self.crew.deputy.lead_origin()
    }

    /// On a lead that named a deputy which reported its URL: the deputy's web origin, the one
    /// other origin the app shell may connect to. `None` everywhere else.
    pub fn deputy_origin(&self) -> Option<String> {
        let view = self.crew.view.load();
        if view.role != CrewRole::Lead || view.deputy.is_none() {
            return None;
        }
        origin_of(&self.crew.deputy.pushed().url?)
    }
}

#[cfg(test)]
mod tests {
    use super::origin_of;

    #[test]
    fn origins_are_serialized_as_browsers_send_them() {
        assert_eq!(
            origin_of("http://127.0.0.1:7420/").as_deref(),
            Some("http://127.0.0.1:7420")
        );
        assert_eq!(
            origin_of("https://Lead.Example.ts.net:443/x?y").as_deref(),
            Some("https://lead.example.ts.net")
        );
        assert_eq!(
            origin_of("http://[::1]:80").as_deref(),
            Some("http://[::1]")
        );
        assert_eq!(origin_of("ftp://lead.example"), None);
        assert_eq!(origin_of("data:text/plain,x"), None);
        assert_eq!(origin_of("not a url"), None);
    }
}
