//! Fuzz tests of the hello's decoders (docs/decisions/0063): what a machine sends first
//! ([`Opening`]), the lead's answer to a join ([`JoinReply`]), and the lead's hello fed whole to
//! the handshake. Arbitrary bytes and damaged valid encodings: never a panic, a refusal is a
//! [`crate::wire::WireError`] or a [`HandshakeError`], and a valid encoding comes back equal.

use proptest::collection::btree_set;
use proptest::prelude::*;

use super::*;
use crate::fuzzing::{arbitrary, mutated_from};
use crate::wire::{decode, encode};

const EXPORTER: Exporter = [7u8; EXPORTER_LEN];

fn secret() -> CrewSecret {
    CrewSecret::from([42u8; 32])
}

fn hello() -> impl Strategy<Value = Hello> {
    (
        any::<u16>(),
        ".{0,12}",
        "[a-z0-9-]{0,70}",
        btree_set(0..Capability::ALL.len(), 0..8),
        any::<[u8; 32]>(),
    )
        .prop_map(|(protocol, bridge_version, name, caps, proof)| Hello {
            protocol,
            bridge_version,
            name,
            capabilities: caps.into_iter().map(|i| Capability::ALL[i]).collect(),
            proof,
        })
}

fn opening() -> impl Strategy<Value = Opening> {
    prop_oneof![
        hello().prop_map(Opening::Hello),
        (any::<[u8; 32]>(), ".{0,40}", any::<[u8; 32]>()).prop_map(|(s, name, pin)| {
            Opening::Join(JoinRequest {
                join_secret: JoinSecret::from(s),
                name,
                member_pin: Pin::from(pin),
            })
        }),
    ]
}

fn join_reply() -> impl Strategy<Value = JoinReply> {
    prop_oneof![
        (any::<[u8; 32]>(), ".{0,40}").prop_map(|(s, lead_name)| {
            JoinReply::Accepted(JoinAccepted {
                crew_secret: CrewSecret::from(s),
                lead_name,
            })
        }),
        Just(JoinReply::Refused(JoinError::WrongSecret)),
        ".{0,40}".prop_map(|n| JoinReply::Refused(JoinError::NameTaken(n))),
    ]
}

/// A decoded hello goes through both sides' handshakes; whatever it holds, the answer is a
/// hello or a [`HandshakeError`].
fn handshake(hello: &Hello) {
    let mut lead = LeadHandshake::new(
        HelloConfig::new("laptop".into(), "0.1.0".into(), secret()),
        hello.name.clone(),
        EXPORTER,
    );
    let _ = lead.on_hello(hello);
    let mut member = MemberHandshake::new(
        HelloConfig::new("web-1".into(), "0.1.0".into(), secret()),
        EXPORTER,
    );
    let _ = member.on_hello(hello);
}

fn encoded<T: Serialize>(value: &T) -> Vec<u8> {
    encode(value).expect("a generated value encodes")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in arbitrary(256)) {
        if let Ok(Opening::Hello(h)) = decode::<Opening>(&bytes) {
            handshake(&h);
        }
        if let Ok(h) = decode::<Hello>(&bytes) {
            handshake(&h);
        }
        let _ = decode::<JoinReply>(&bytes);
    }

    #[test]
    fn damaged_openings_decode_or_are_refused(
        bytes in mutated_from(opening().prop_map(|o| encoded(&o))),
    ) {
        match decode::<Opening>(&bytes) {
            Ok(Opening::Hello(h)) => handshake(&h),
            Ok(Opening::Join(j)) => {
                let invite = Invite::new(&j.join_secret, SystemTime::UNIX_EPOCH);
                let ctx = JoinContext {
                    invite: Some(&invite),
                    peer_pin: &j.member_pin,
                    lead_name: "laptop",
                    name_taken: &|_| false,
                    pinned_as: None,
                    crew_secret: &secret(),
                    now: SystemTime::UNIX_EPOCH - std::time::Duration::from_secs(1),
                };
                let _ = validate_join(&j, &ctx);
            }
            Ok(_) => {}
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn damaged_join_replies_decode_or_are_refused(
        bytes in mutated_from(join_reply().prop_map(|r| encoded(&r))),
    ) {
        let _ = decode::<JoinReply>(&bytes);
    }

    #[test]
    fn valid_encodings_round_trip(o in opening(), r in join_reply()) {
        prop_assert_eq!(decode::<Opening>(&encoded(&o)).expect("valid"), o);
        prop_assert_eq!(decode::<JoinReply>(&encoded(&r)).expect("valid"), r);
    }
}
