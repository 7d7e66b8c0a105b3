//! Fuzz tests of the relay's decoders (docs/decisions/0063): the member decodes the lead's
//! [`RelayRequest`], the lead decodes the member's [`MemberMessage`]s, and on the uplink the lead
//! decodes an [`Uplink`] and the member an [`UplinkAnswer`]. Arbitrary bytes and damaged valid
//! encodings: never a panic, a refusal is a [`WireError`] with a message, a valid encoding
//! comes back equal, and whatever decodes is checked against its request without a panic.

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

use super::*;
use crate::fuzzing::{arbitrary, mutated_from};
use crate::uplink::{Uplink, UplinkAnswer, WhoPane};
use crate::wire::{decode, encode, WireError};

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9-]{0,8}", ".{0,24}"]
}

fn kind() -> impl Strategy<Value = RelayKind> {
    prop_oneof![
        Just(RelayKind::PaneList),
        (text(), proptest::option::of(any::<u32>()))
            .prop_map(|(pane, scrollback)| RelayKind::Snapshot { pane, scrollback }),
        (text(), proptest::option::of(any::<u64>()))
            .prop_map(|(pane, last_seq)| RelayKind::Subscribe { pane, last_seq }),
        any::<u64>().prop_map(|stream| RelayKind::Unsubscribe { stream }),
        (text(), proptest::option::of(text()), vec(text(), 0..4))
            .prop_map(|(pane, text, keys)| RelayKind::Input { pane, text, keys }),
        (proptest::option::of(text()), proptest::option::of(text()))
            .prop_map(|(name, starter)| RelayKind::Create { name, starter }),
        (text(), text()).prop_map(|(pane, name)| RelayKind::Rename { pane, name }),
        text().prop_map(|pane| RelayKind::Close { pane }),
        Just(RelayKind::Cards),
        (text(), text(), text(), proptest::option::of(text())).prop_map(
            |(id, option, shown, confirm)| RelayKind::CardAnswer {
                id,
                option,
                shown,
                confirm
            }
        ),
    ]
}

fn request() -> impl Strategy<Value = RelayRequest> {
    (
        any::<u64>(),
        text(),
        text(),
        kind(),
        proptest::option::of(text()),
    )
        .prop_map(|(id, device, request_id, kind, device_id)| RelayRequest {
            id,
            device,
            request_id,
            kind,
            device_id,
        })
}

fn pane_info() -> impl Strategy<Value = PaneInfo> {
    (text(), text(), any::<(u16, u16, bool, bool)>()).prop_map(
        |(pane, name, (cols, rows, alive, at_shell))| PaneInfo {
            machine: "web-1".into(),
            pane,
            token: "ab12".into(),
            name,
            backend: "tmux".into(),
            alive,
            cols,
            rows,
            last_activity: None,
            asking_password: false,
            at_shell,
            activity: Default::default(),
        },
    )
}

fn error() -> impl Strategy<Value = RelayError> {
    prop_oneof![
        Just(RelayError::NoSuchPane),
        Just(RelayError::ResourceLimit),
        Just(RelayError::CapabilityMissing),
        text().prop_map(RelayError::BadInput),
    ]
}

fn member_message() -> impl Strategy<Value = MemberMessage> {
    let outcome = prop_oneof![
        vec(pane_info(), 0..3).prop_map(|p| Ok(RelayOk::PaneList(p))),
        (
            vec(text(), 0..4),
            vec(text(), 0..4),
            any::<(u16, u16, u64)>()
        )
            .prop_map(
                |(lines, scrollback, (cols, rows, seq))| Ok(RelayOk::Snapshot(PaneSnapshot {
                    machine: "web-1".into(),
                    pane: "p1".into(),
                    token: "ab12".into(),
                    name: "build".into(),
                    cols,
                    rows,
                    cursor: Cursor { x: 0, y: 0 },
                    lines,
                    scrollback,
                    seq,
                }))
            ),
        Just(Ok(RelayOk::Done)),
        Just(Ok(RelayOk::Subscribed)),
        any::<u64>().prop_map(|n| Ok(RelayOk::Discarded(n))),
        error().prop_map(Err),
    ];
    prop_oneof![
        (any::<u64>(), outcome)
            .prop_map(|(id, result)| MemberMessage::Response(RelayResponse { id, result })),
        (
            any::<(u64, u64, u16, u16, bool)>(),
            btree_map(any::<u16>(), text(), 0..4)
        )
            .prop_map(
                |((stream, seq, cols, height, full), rows)| MemberMessage::Event(StreamEvent {
                    stream,
                    seq,
                    cursor: Cursor { x: 1, y: 1 },
                    cols,
                    height,
                    full,
                    rows,
                })
            ),
        (any::<u64>(), proptest::option::of(error()))
            .prop_map(|(stream, error)| MemberMessage::End(StreamEnd { stream, error })),
    ]
}

fn uplink_answer() -> impl Strategy<Value = UplinkAnswer> {
    prop_oneof![
        (
            vec((text(), text(), any::<bool>()), 0..4),
            vec(text(), 0..3)
        )
            .prop_map(|(panes, unreachable)| UplinkAnswer::Who {
                panes: panes
                    .into_iter()
                    .map(|(pane, name, at_shell)| WhoPane {
                        machine: "web-1".into(),
                        pane,
                        token: "ab12".into(),
                        name,
                        at_shell,
                    })
                    .collect(),
                unreachable,
            }),
        text().prop_map(UplinkAnswer::Refused),
    ]
}

fn encoded<T: Serialize>(value: &T) -> Vec<u8> {
    encode(value).expect("a generated value encodes")
}

/// A refusal names what was wrong.
fn refused(e: &WireError) -> Result<(), TestCaseError> {
    prop_assert!(!e.to_string().is_empty());
    Ok(())
}

/// What the lead does with a decoded answer: match it against the request it was for.
fn check_answer(message: &MemberMessage, kind: &RelayKind) {
    if let MemberMessage::Response(RelayResponse { result: Ok(ok), .. }) = message {
        let _ = kind.fits(ok);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in arbitrary(256)) {
        if let Ok(r) = decode::<RelayRequest>(&bytes) {
            let _ = requires(&r.kind);
        }
        if let Ok(m) = decode::<MemberMessage>(&bytes) {
            check_answer(&m, &RelayKind::PaneList);
        }
        let _ = decode::<Uplink>(&bytes);
        let _ = decode::<UplinkAnswer>(&bytes);
    }

    #[test]
    fn damaged_requests_decode_or_are_refused(
        bytes in mutated_from(request().prop_map(|r| encoded(&r))),
    ) {
        match decode::<RelayRequest>(&bytes) {
            Ok(r) => drop(requires(&r.kind)),
            Err(e) => refused(&e)?,
        }
    }

    #[test]
    fn damaged_member_messages_decode_or_are_refused(
        bytes in mutated_from(member_message().prop_map(|m| encoded(&m))),
        kind in kind(),
    ) {
        match decode::<MemberMessage>(&bytes) {
            Ok(m) => check_answer(&m, &kind),
            Err(e) => refused(&e)?,
        }
    }

    #[test]
    fn damaged_uplink_answers_decode_or_are_refused(
        bytes in mutated_from(uplink_answer().prop_map(|a| encoded(&a))),
    ) {
        if let Err(e) = decode::<UplinkAnswer>(&bytes) {
            refused(&e)?;
        }
    }

    #[test]
    fn valid_encodings_round_trip(
        r in request(),
        m in member_message(),
        a in uplink_answer(),
    ) {
        prop_assert_eq!(decode::<RelayRequest>(&encoded(&r)).expect("valid"), r);
        prop_assert_eq!(decode::<MemberMessage>(&encoded(&m)).expect("valid"), m);
        prop_assert_eq!(decode::<UplinkAnswer>(&encoded(&a)).expect("valid"), a);
        prop_assert_eq!(decode::<Uplink>(&encoded(&Uplink::Who)).expect("valid"), Uplink::Who);
    }
}
