//! The gates' core: who passes, who is refused and why, and which person is recorded.

use std::time::SystemTime;

use http::{HeaderMap, HeaderValue};

use super::*;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    h
}

fn config(trusted: Option<&str>, device: Option<(&str, &str)>) -> GateConfig {
    GateConfig::from_vars(
        trusted,
        device.map(|d| d.0),
        device.map(|d| d.1),
        (None, None),
    )
    .expect("config")
}

fn check(
    gates: &Gates,
    pairs: &[(&str, &str)],
    from_proxy: bool,
) -> Result<Option<Identity>, Refusal> {
    let h = headers(pairs);
    gates.check(&Seen::new(&h, from_proxy, SystemTime::now()))
}

fn refused(gate: &'static str, cause: Cause) -> Result<Option<Identity>, Refusal> {
    Err(Refusal { gate, cause })
}

fn person(p: &str, gate: &'static str) -> Result<Option<Identity>, Refusal> {
    Ok(Some(Identity {
        person: p.to_owned(),
        gate,
    }))
}

#[test]
fn no_gate_lets_every_request_through_naming_no_one() {
    let gates = config(None, None).gates();
    assert!(gates.is_empty());
    assert_eq!(
        check(&gates, &[("tailscale-user-login", "x@y")], false),
        Ok(None)
    );
}

#[test]
fn the_tailscale_gate_wants_a_trusted_login_from_the_proxy() {
    let gates = config(Some(" alice@example.com, bob@Example.COM "), None).gates();
    assert_eq!(
        check(
            &gates,
            &[("Tailscale-User-Login", "alice@example.com")],
            true
        ),
        person("alice@example.com", "tailscale")
    );
    // The domain ignores case, the local part does not.
    assert_eq!(
        check(&gates, &[("Tailscale-User-Login", "bob@example.com")], true),
        person("bob@example.com", "tailscale")
    );
    assert_eq!(
        check(
            &gates,
            &[("Tailscale-User-Login", "Alice@example.com")],
            true
        ),
        refused("tailscale", Cause::NotAccepted)
    );
    assert_eq!(
        check(
            &gates,
            &[("Tailscale-User-Login", "mallory@example.com")],
            true
        ),
        refused("tailscale", Cause::NotAccepted)
    );
    assert_eq!(
        check(&gates, &[], true),
        refused("tailscale", Cause::Missing)
    );
    // A header from a peer that is not the proxy is never read.
    assert_eq!(
        check(
            &gates,
            &[("Tailscale-User-Login", "alice@example.com")],
            false
        ),
        refused("tailscale", Cause::NotFromProxy)
    );
    assert_eq!(
        check(
            &gates,
            &[
                ("Tailscale-User-Login", "alice@example.com"),
                ("Tailscale-User-Login", "bob@example.com")
            ],
            true
        ),
        refused("tailscale", Cause::Repeated)
    );
    let long = "a".repeat(MAX_VALUE + 1);
    assert_eq!(
        check(&gates, &[("Tailscale-User-Login", &long)], true),
        refused("tailscale", Cause::Unreadable)
    );
}

#[test]
fn a_login_that_is_not_ascii_is_decoded() {
    let gates = config(Some("jörg@example.com"), None).gates();
    assert_eq!(
        check(
            &gates,
            &[("Tailscale-User-Login", "=?utf-8?q?j=C3=B6rg@example.com?=")],
            true
        ),
        person("jörg@example.com", "tailscale")
    );
    assert_eq!(
        check(&gates, &[("Tailscale-User-Login", "=?koi8-r?q?x?=")], true),
        refused("tailscale", Cause::Unreadable)
    );
}

#[test]
fn the_device_header_gate_wants_an_allowed_value() {
    let gates = config(None, Some(("X-Device-Id", "laptop-1, phone-7"))).gates();
    assert_eq!(
        check(&gates, &[("x-device-id", "phone-7")], true),
        person("phone-7", "device-header")
    );
    assert_eq!(
        check(&gates, &[("x-device-id", "phone-8")], true),
        refused("device-header", Cause::NotAccepted)
    );
    assert_eq!(
        check(&gates, &[], true),
        refused("device-header", Cause::Missing)
    );
    assert_eq!(
        check(&gates, &[("x-device-id", "phone-7")], false),
        refused("device-header", Cause::NotFromProxy)
    );
}

#[test]
fn every_gate_applies_and_the_first_person_is_recorded() {
    let gates = config(Some("alice@example.com"), Some(("X-Device-Id", "phone-7"))).gates();
    let names: Vec<_> = gates.iter().map(|g| g.name()).collect();
    assert_eq!(names, ["tailscale", "device-header"]);
    let both = [
        ("tailscale-user-login", "alice@example.com"),
        ("x-device-id", "phone-7"),
    ];
    assert_eq!(
        check(&gates, &both, true),
        person("alice@example.com", "tailscale")
    );
    assert_eq!(
        check(&gates, &both[..1], true),
        refused("device-header", Cause::Missing)
    );
    assert_eq!(
        check(&gates, &both[1..], true),
        refused("tailscale", Cause::Missing)
    );
}

/// A third gate plugs in with [`GateConfig::gates_around`]: it applies, and a gate that passes
/// naming no one leaves the person to the others.
#[test]
fn a_gate_added_between_the_others_applies_too() {
    #[derive(Debug)]
    struct Needs(&'static str);
    impl Gate for Needs {
        fn name(&self) -> &'static str {
            "test"
        }
        fn check(&self, seen: &Seen<'_>) -> Result<Option<String>, Cause> {
            match seen.header(self.0)? {
                Some(_) => Ok(None),
                None => Err(Cause::Invalid("no token")),
            }
        }
        fn describe(&self) -> String {
            String::new()
        }
    }
    let cfg = config(None, Some(("X-Device-Id", "phone-7")));
    let gates = cfg.gates_around(Some(Arc::new(Needs("x-token"))));
    assert_eq!(
        check(&gates, &[("x-device-id", "phone-7")], true),
        refused("test", Cause::Invalid("no token"))
    );
    assert_eq!(
        check(
            &gates,
            &[("x-device-id", "phone-7"), ("x-token", "t")],
            true
        ),
        person("phone-7", "device-header")
    );
}

#[test]
fn settings_that_cannot_work_stop_the_bridge() {
    assert_eq!(
        GateConfig::from_vars(Some(" , "), None, None, (None, None)),
        Err(ConfigError::NoLogins)
    );
    assert_eq!(
        GateConfig::from_vars(None, Some("X-Device-Id"), None, (None, None)),
        Err(ConfigError::DeviceHalf)
    );
    assert_eq!(
        GateConfig::from_vars(None, None, Some("a"), (None, None)),
        Err(ConfigError::DeviceHalf)
    );
    assert_eq!(
        GateConfig::from_vars(None, Some("X-Device-Id"), Some(","), (None, None)),
        Err(ConfigError::NoDeviceValues)
    );
    for bad in ["Authorization", "bad header", "X-Forwarded-For", ""] {
        assert!(
            matches!(
                GateConfig::from_vars(None, Some(bad), Some("a"), (None, None)),
                Err(ConfigError::HeaderName(_))
            ),
            "{bad}"
        );
    }
}

#[test]
fn the_proxy_is_a_loopback_peer() {
    for ip in ["127.0.0.1", "127.3.2.1", "::1", "::ffff:127.0.0.1"] {
        assert!(is_proxy(ip.parse().expect("ip")), "{ip}");
    }
    for ip in [
        "192.0.2.2",
        "100.64.0.1",
        "::",
        "0.0.0.0",
        "fd7a:115c:a1e0::1",
        "::ffff:192.0.2.2",
    ] {
        assert!(!is_proxy(ip.parse().expect("ip")), "{ip}");
    }
}
