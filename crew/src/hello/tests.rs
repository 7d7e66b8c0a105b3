use std::time::Duration;

use super::*;
use crate::wire::{decode, encode};

const EXPORTER: Exporter = [7u8; EXPORTER_LEN];

fn secret() -> CrewSecret {
    CrewSecret::from([42u8; 32])
}

fn config(name: &str) -> HelloConfig {
    HelloConfig::new(name.to_owned(), "0.1.0".to_owned(), secret())
}

fn member_config() -> HelloConfig {
    let mut c = config("web-1");
    c.capabilities = [Capability::PaneList, Capability::PaneRead].into();
    c
}

#[test]
fn a_full_exchange_establishes_both_sides() {
    let member = MemberHandshake::new(member_config(), EXPORTER);
    let mut member = member;
    let mut lead = LeadHandshake::new(config("laptop"), "web-1".to_owned(), EXPORTER);
    assert!(lead.member().is_none());

    let reply = lead.on_hello(&member.hello()).unwrap();
    let recorded = lead.member().unwrap();
    assert_eq!(recorded.name, "web-1");
    assert_eq!(recorded.protocol, PROTOCOL);
    assert_eq!(
        recorded.capabilities,
        [Capability::PaneList, Capability::PaneRead].into()
    );

    let peer = member.on_hello(&reply).unwrap();
    assert_eq!(peer.name, "laptop");
    assert_eq!(member.lead().unwrap().protocol, PROTOCOL);
}

#[test]
fn a_wrong_secret_is_refused() {
    let mut wrong = member_config();
    wrong.secret = CrewSecret::from([1u8; 32]);
    let hello = MemberHandshake::new(wrong, EXPORTER).hello();
    let mut lead = LeadHandshake::new(config("laptop"), "web-1".to_owned(), EXPORTER);
    let err = lead.on_hello(&hello).unwrap_err();
    assert_eq!(err, HandshakeError::WrongProof);
    assert_eq!(err.to_string(), "hello proof invalid");
    assert!(lead.member().is_none());
    // A failed handshake stays failed.
    let good = MemberHandshake::new(member_config(), EXPORTER).hello();
    assert_eq!(lead.on_hello(&good), Err(HandshakeError::Unexpected));
}

#[test]
fn a_proof_from_another_connection_is_refused() {
    let replayed = MemberHandshake::new(member_config(), [8u8; EXPORTER_LEN]).hello();
    let mut lead = LeadHandshake::new(config("laptop"), "web-1".to_owned(), EXPORTER);
    assert_eq!(lead.on_hello(&replayed), Err(HandshakeError::WrongProof));
}

#[test]
fn a_reflected_proof_is_refused() {
    // A "lead" that only echoes the member's hello back cannot pass as the lead.
    let mut member = MemberHandshake::new(member_config(), EXPORTER);
    let mut echo = member.hello();
    echo.name = "laptop".to_owned();
    assert_eq!(
        member.on_hello(&echo).unwrap_err(),
        HandshakeError::WrongProof
    );
}

#[test]
fn proofs_depend_on_secret_role_and_exporter() {
    let base = proof(&secret(), Role::Member, &EXPORTER);
    assert_ne!(base, proof(&secret(), Role::Lead, &EXPORTER));
    assert_ne!(
        base,
        proof(&CrewSecret::from([0u8; 32]), Role::Member, &EXPORTER)
    );
    assert_ne!(base, proof(&secret(), Role::Member, &[0u8; EXPORTER_LEN]));
    assert_eq!(base, proof(&secret(), Role::Member, &EXPORTER));
}

#[test]
fn an_unsupported_protocol_is_refused_with_a_reason() {
    let mut old = member_config();
    old.protocols = 0..=0;
    let hello = MemberHandshake::new(old, EXPORTER).hello();
    let mut lead = LeadHandshake::new(config("laptop"), "web-1".to_owned(), EXPORTER);
    let err = lead.on_hello(&hello).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("unsupported protocol version 0 (this bridge speaks {MIN_PROTOCOL} to {PROTOCOL})")
    );
}

#[test]
fn a_bridge_of_protocol_1_and_one_of_2_refuse_each_other_by_name() {
    // Protocol 2 carries cards, durable agents, chats, walky cards and tool calls as typed
    // values where 1 carried JSON text (decision 0055): neither can read the other's answers,
    // so they meet at the hello and part with a reason, both ways.
    assert_eq!((MIN_PROTOCOL, PROTOCOL), (2, 2));
    let mut old = member_config();
    old.protocols = 1..=1;
    let mut lead = LeadHandshake::new(config("laptop"), "web-1".to_owned(), EXPORTER);
    let err = lead
        .on_hello(&MemberHandshake::new(old, EXPORTER).hello())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported protocol version 1 (this bridge speaks 2 to 2)"
    );

    let mut old_lead = config("laptop");
    old_lead.protocols = 1..=1;
    let mut lead = LeadHandshake::new(old_lead, "web-1".to_owned(), EXPORTER);
    let mut member = MemberHandshake::new(member_config(), EXPORTER);
    let reply = lead.on_hello(&member.hello()).unwrap();
    assert_eq!(
        reply.protocol, 1,
        "an older lead answers in its own version"
    );
    assert!(matches!(
        member.on_hello(&reply),
        Err(HandshakeError::UnsupportedProtocol { theirs: 1, .. })
    ));
}

#[test]
fn a_newer_member_is_answered_in_the_leads_version() {
    let mut newer = member_config();
    newer.protocols = 1..=PROTOCOL + 1;
    let mut member = MemberHandshake::new(newer, EXPORTER);
    assert_eq!(member.hello().protocol, PROTOCOL + 1);
    let mut lead = LeadHandshake::new(config("laptop"), "web-1".to_owned(), EXPORTER);
    let reply = lead.on_hello(&member.hello()).unwrap();
    assert_eq!(reply.protocol, PROTOCOL);
    assert_eq!(member.on_hello(&reply).unwrap().protocol, PROTOCOL);

    // A member that no longer speaks the lead's version refuses the answer.
    let mut only_newer = member_config();
    only_newer.protocols = PROTOCOL + 1..=PROTOCOL + 1;
    let mut member = MemberHandshake::new(only_newer, EXPORTER);
    let mut lead = LeadHandshake::new(config("laptop"), "web-1".to_owned(), EXPORTER);
    let reply = lead.on_hello(&member.hello()).unwrap();
    assert!(matches!(
        member.on_hello(&reply),
        Err(HandshakeError::UnsupportedProtocol { .. })
    ));
}

#[test]
fn a_hello_under_another_name_is_refused() {
    let hello = MemberHandshake::new(config("db-2"), EXPORTER).hello();
    let mut lead = LeadHandshake::new(config("laptop"), "web-1".to_owned(), EXPORTER);
    assert_eq!(
        lead.on_hello(&hello).unwrap_err().to_string(),
        "hello from db-2 on the certificate pinned for web-1"
    );
}

#[test]
fn a_second_hello_is_unexpected() {
    let hello = MemberHandshake::new(member_config(), EXPORTER).hello();
    let mut lead = LeadHandshake::new(config("laptop"), "web-1".to_owned(), EXPORTER);
    lead.on_hello(&hello).unwrap();
    assert_eq!(lead.on_hello(&hello), Err(HandshakeError::Unexpected));
}

#[test]
fn hellos_cross_the_wire_and_newer_capabilities_decode_as_unknown() {
    let hello = MemberHandshake::new(member_config(), EXPORTER).hello();
    let opening = Opening::Hello(hello.clone());
    assert_eq!(
        decode::<Opening>(&encode(&opening).unwrap()).unwrap(),
        opening
    );

    // A newer member declares capability index 21 (after Deputy) and appends a field to its
    // hello.
    #[derive(serde::Serialize)]
    struct NewerHello {
        protocol: u16,
        bridge_version: String,
        name: String,
        capabilities: Vec<u32>,
        proof: [u8; 32],
        added: String,
    }
    let newer = NewerHello {
        protocol: hello.protocol,
        bridge_version: hello.bridge_version.clone(),
        name: hello.name.clone(),
        capabilities: vec![0, 21],
        proof: hello.proof,
        added: "from a newer bridge".to_owned(),
    };
    let got: Hello = decode(&encode(&newer).unwrap()).unwrap();
    assert_eq!(
        got.capabilities,
        [Capability::PaneList, Capability::Unknown].into()
    );
    assert_eq!(got.proof, hello.proof);
}

#[test]
fn secrets_never_print() {
    assert_eq!(format!("{:?}", secret()), "(crew secret set)");
    assert_eq!(
        format!("{:?}", JoinSecret::from([9u8; 32])),
        "(join secret set)"
    );
    let accepted = JoinAccepted {
        crew_secret: secret(),
        lead_name: "laptop".to_owned(),
    };
    assert!(!format!("{accepted:?}").contains("42"));
    assert_ne!(CrewSecret::random(), CrewSecret::random());
}

mod join {
    use super::*;

    fn pin(b: u8) -> Pin {
        Pin::from([b; 32])
    }

    fn join_secret() -> JoinSecret {
        JoinSecret::from([5u8; 32])
    }

    fn request(name: &str) -> JoinRequest {
        JoinRequest {
            join_secret: join_secret(),
            name: name.to_owned(),
            member_pin: pin(1),
        }
    }

    fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)
    }

    fn check(
        request: &JoinRequest,
        invite: Option<&Invite>,
        now: SystemTime,
    ) -> Result<JoinAccepted, JoinError> {
        let crew = secret();
        let taken = |name: &str| name == "db-2";
        validate_join(
            request,
            &JoinContext {
                invite,
                peer_pin: &pin(1),
                lead_name: "laptop",
                name_taken: &taken,
                pinned_as: None,
                crew_secret: &crew,
                now,
            },
        )
    }

    fn invite() -> Invite {
        Invite::new(&join_secret(), t0() + Duration::from_secs(600))
    }

    #[test]
    fn a_valid_invite_is_accepted() {
        let accepted = check(&request("web-1"), Some(&invite()), t0()).unwrap();
        assert_eq!(accepted.crew_secret, secret());
        assert_eq!(accepted.lead_name, "laptop");
    }

    #[test]
    fn a_wrong_secret_is_refused() {
        assert_eq!(
            check(&request("web-1"), None, t0()),
            Err(JoinError::WrongSecret)
        );
        let mut other = invite();
        other.secret_hash = JoinSecret::from([6u8; 32]).hash();
        assert_eq!(
            check(&request("web-1"), Some(&other), t0()),
            Err(JoinError::WrongSecret)
        );
    }

    #[test]
    fn used_and_expired_invites_are_refused() {
        let mut used = invite();
        used.used = true;
        assert_eq!(
            check(&request("web-1"), Some(&used), t0()),
            Err(JoinError::InviteUsed)
        );
        let expires = invite().expires_at;
        assert!(check(
            &request("web-1"),
            Some(&invite()),
            expires - Duration::from_millis(1)
        )
        .is_ok());
        assert_eq!(
            check(&request("web-1"), Some(&invite()), expires),
            Err(JoinError::InviteExpired)
        );
    }

    #[test]
    fn a_pin_that_is_not_the_connections_is_refused() {
        let mut r = request("web-1");
        r.member_pin = pin(2);
        assert_eq!(
            check(&r, Some(&invite()), t0()),
            Err(JoinError::PinMismatch)
        );
    }

    #[test]
    fn taken_and_invalid_names_are_refused() {
        for name in ["db-2", "laptop"] {
            assert_eq!(
                check(&request(name), Some(&invite()), t0()),
                Err(JoinError::NameTaken(name.to_owned()))
            );
        }
        let long = "a".repeat(MAX_NAME_LEN + 1);
        for name in [
            "",
            "local",
            ".",
            "..",
            "a b",
            "web/1",
            "wéb",
            "Web-1",
            "web_1",
            "web.1",
            "$(id)",
            long.as_str(),
        ] {
            assert_eq!(
                check(&request(name), Some(&invite()), t0()),
                Err(JoinError::InvalidName(name.to_owned())),
                "{name:?}"
            );
        }
        assert!(validate_name(&"a".repeat(MAX_NAME_LEN)).is_ok());
        assert!(validate_name("web-1-prod-2").is_ok());
    }

    #[test]
    fn refusals_are_clear_and_cross_the_wire() {
        assert_eq!(
            JoinError::NameTaken("db-2".to_owned()).to_string(),
            "name db-2 already taken in this crew: join with --name to choose another"
        );
        assert!(JoinError::InviteExpired
            .to_string()
            .contains("collie crew invite"));
        let reply = JoinReply::Refused(JoinError::InviteUsed);
        assert_eq!(
            decode::<JoinReply>(&encode(&reply).unwrap()).unwrap(),
            reply
        );
        let opening = Opening::Join(request("web-1"));
        assert_eq!(
            decode::<Opening>(&encode(&opening).unwrap()).unwrap(),
            opening
        );
    }
}

#[test]
fn the_machine_that_used_an_invite_gets_the_same_acceptance_again() {
    let crew = CrewSecret::from([7u8; 32]);
    let used = Invite {
        used: true,
        ..Invite::new(
            &JoinSecret::from([1u8; 32]),
            SystemTime::UNIX_EPOCH + Duration::from_secs(600),
        )
    };
    let pin = Pin::from([9u8; 32]);
    let request = JoinRequest {
        join_secret: JoinSecret::from([1u8; 32]),
        name: "db-1".into(),
        member_pin: pin,
    };
    let taken = |_: &str| true;
    let check = |pinned_as: Option<&str>| {
        validate_join(
            &request,
            &JoinContext {
                invite: Some(&used),
                peer_pin: &pin,
                lead_name: "laptop",
                name_taken: &taken,
                pinned_as,
                crew_secret: &crew,
                // Even after the invite expired: the machine proved the secret once.
                now: SystemTime::UNIX_EPOCH + Duration::from_secs(3600),
            },
        )
    };
    assert_eq!(
        check(Some("db-1")).expect("accepted again").lead_name,
        "laptop"
    );
    // Anyone else holding the used secret is refused, and so is the member under another name.
    assert_eq!(check(None), Err(JoinError::InviteUsed));
    assert_eq!(check(Some("db-2")), Err(JoinError::InviteUsed));
}
