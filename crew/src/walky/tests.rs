//! The signing, attesting and verifying paths end to end: round trips, the canonical encoding, and
//! one test per rejection path.

use std::sync::OnceLock;

use proptest::prelude::*;

use super::attest::attested_bytes;
use super::*;
use crate::identity::Identity;
use crate::wire::{decode, encode};

const NOW: i64 = 1_750_000_000;

/// A crew machine for the tests: its name, identity and signer.
struct Machine {
    name: &'static str,
    identity: Identity,
    signer: Signer,
}

impl Machine {
    fn new(name: &'static str) -> Self {
        let identity = Identity::generate().unwrap();
        let signer = Signer::from_identity(&identity).unwrap();
        Self {
            name,
            identity,
            signer,
        }
    }

    fn cert(&self) -> &[u8] {
        self.identity.certificate().as_ref()
    }

    fn address(&self) -> Address {
        Address::new(self.name, "t0-1", "ab2c").unwrap()
    }
}

/// A lead and two members, made once (issuing certificates is the slow part).
struct Crew {
    lead: Machine,
    m1: Machine,
    m2: Machine,
}

fn crew() -> &'static Crew {
    static CREW: OnceLock<Crew> = OnceLock::new();
    CREW.get_or_init(|| Crew {
        lead: Machine::new("laptop"),
        m1: Machine::new("m1"),
        m2: Machine::new("m2"),
    })
}

fn message(from: &Machine, to: &Machine, body: &str, sent_at: i64) -> Message {
    Message::new(
        MessageId::random(),
        from.address(),
        "reviewer",
        to.address(),
        sent_at,
        body,
    )
    .unwrap()
}

/// What m1's pane sends to m2's, signed by m1.
fn from_m1(sent_at: i64) -> Signed {
    let c = crew();
    c.m1.signer
        .sign(message(&c.m1, &c.m2, "please review", sent_at))
}

/// The lead's checks of a message that came on `sender`'s connection.
fn lead_attests(signed: &Signed, sender: &Machine) -> Result<Forwarded, WalkyError> {
    let c = crew();
    attest(
        signed,
        sender.cert(),
        &sender.identity.pin(),
        sender.name,
        &c.lead.signer,
        &mut ReplayGuard::new(100),
        NOW,
    )
}

fn receive_at(fwd: &Forwarded, replay: &mut ReplayGuard, now: i64) -> Result<Message, WalkyError> {
    let c = crew();
    receive(
        fwd,
        &c.lead.signer.verifying_key(),
        c.lead.name,
        replay,
        now,
    )
}

fn receive_now(fwd: &Forwarded) -> Result<Message, WalkyError> {
    receive_at(fwd, &mut ReplayGuard::new(100), NOW)
}

/// A forwarded message whose attestation the lead signed over whatever it was given: what a
/// buggy or compromised lead could produce, to reach the receiver's later checks.
fn attested_anyway(signed: Signed, sender_machine: &str, sender: &Machine) -> Forwarded {
    let c = crew();
    let bytes = attested_bytes(&signed, sender_machine, &sender.identity.pin());
    Forwarded {
        signed,
        attestation: Some(Attestation {
            sender_certificate: sender.cert().to_vec(),
            sender_machine: sender_machine.to_owned(),
            signature: c.lead.signer.sign_bytes(&bytes),
        }),
    }
}

// ---- round trips --------------------------------------------------------------------------------

#[test]
fn a_member_message_passes_the_lead_and_the_receiver() {
    let c = crew();
    let signed = from_m1(NOW);
    let fwd = lead_attests(&signed, &c.m1).unwrap();
    let attestation = fwd.attestation.as_ref().unwrap();
    assert_eq!(attestation.sender_machine, "m1");
    assert_eq!(attestation.sender_certificate, c.m1.cert());
    assert_eq!(receive_now(&fwd).unwrap(), signed.message);
}

#[test]
fn a_lead_message_needs_no_attestation() {
    let c = crew();
    let fwd = forward_own(&c.lead.signer, message(&c.lead, &c.m1, "hi", NOW));
    assert!(fwd.attestation.is_none());
    assert_eq!(receive_now(&fwd).unwrap(), fwd.signed.message);
}

#[test]
fn the_signer_matches_the_certificate() {
    let c = crew();
    let (pin, key) = public_key_of(c.m1.cert()).unwrap();
    assert_eq!(pin, c.m1.identity.pin());
    assert_eq!(pin, c.m1.signer.pin());
    assert_eq!(key, c.m1.signer.verifying_key());
    let shown = format!("{:?}", c.m1.signer);
    assert!(shown.contains(&pin.to_string()) && shown.contains("(secret)"));
}

#[test]
fn forwarded_and_results_survive_the_wire() {
    let c = crew();
    let fwd = lead_attests(&from_m1(NOW), &c.m1).unwrap();
    let back: Forwarded = decode(&encode(&fwd).unwrap()).unwrap();
    assert_eq!(back, fwd);
    assert!(receive_now(&back).is_ok());

    let own = forward_own(&c.lead.signer, message(&c.lead, &c.m2, "", NOW));
    let back: Forwarded = decode(&encode(&own).unwrap()).unwrap();
    assert_eq!(back, own);
    assert!(receive_now(&back).is_ok());

    for outcome in [
        Outcome::Delivered,
        Outcome::Rejected("walky off on m2".into()),
    ] {
        let result = WalkyResult {
            id: MessageId::random(),
            outcome,
        };
        let back: WalkyResult = decode(&encode(&result).unwrap()).unwrap();
        assert_eq!(back, result);
    }
}

#[test]
fn canonical_layout_is_fixed() {
    let m = Message {
        id: MessageId::from([7; 16]),
        from: Address::new("a", "p", "abcd").unwrap(),
        from_name: "n".into(),
        to: Address::new("b", "q", "efgh").unwrap(),
        sent_at: -2,
        body: "hi".into(),
    };
    let mut expected = b"collie-walky/1 message\0".to_vec();
    expected.extend_from_slice(&[0, 0, 0, 16]);
    expected.extend_from_slice(&[7; 16]);
    for field in ["a", "p", "abcd", "n", "b", "q", "efgh"] {
        expected.extend_from_slice(&u32::try_from(field.len()).unwrap().to_be_bytes());
        expected.extend_from_slice(field.as_bytes());
    }
    expected.extend_from_slice(&[0, 0, 0, 8]);
    expected.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]);
    expected.extend_from_slice(&[0, 0, 0, 2]);
    expected.extend_from_slice(b"hi");
    assert_eq!(m.canonical(), expected);
}

// ---- rejection paths ----------------------------------------------------------------------------

#[test]
fn a_forged_sender_signature_is_refused() {
    let c = crew();
    // At the lead: one flipped bit in the signature, or one changed byte in the body.
    let mut flipped = from_m1(NOW);
    flipped.signature[10] ^= 0x01;
    let id = flipped.message.id;
    assert_eq!(
        lead_attests(&flipped, &c.m1),
        Err(WalkyError::BadSignature { id })
    );
    let mut altered = from_m1(NOW);
    altered.message.body.push('!');
    assert!(matches!(
        lead_attests(&altered, &c.m1),
        Err(WalkyError::BadSignature { .. })
    ));
    let mut short = from_m1(NOW);
    short.signature.truncate(63);
    assert!(matches!(
        lead_attests(&short, &c.m1),
        Err(WalkyError::BadSignature { .. })
    ));
    // At the receiver, even with a lead that attested the forgery.
    let fwd = attested_anyway(flipped, "m1", &c.m1);
    assert_eq!(receive_now(&fwd), Err(WalkyError::BadSignature { id }));
    // A lead message with a flipped signature.
    let mut own = forward_own(&c.lead.signer, message(&c.lead, &c.m1, "hi", NOW));
    own.signed.signature[0] ^= 0x80;
    assert!(matches!(
        receive_now(&own),
        Err(WalkyError::BadSignature { .. })
    ));
}

#[test]
fn a_signature_by_another_members_key_is_refused() {
    let c = crew();
    // m2 signs a message in m1's name; it arrives on m1's connection with m1's certificate.
    let signed = c.m2.signer.sign(message(&c.m1, &c.m2, "hi", NOW));
    let id = signed.message.id;
    assert_eq!(
        lead_attests(&signed, &c.m1),
        Err(WalkyError::BadSignature { id })
    );
    // The receiver refuses it too, whatever the lead attested.
    let fwd = attested_anyway(signed, "m1", &c.m1);
    assert_eq!(receive_now(&fwd), Err(WalkyError::BadSignature { id }));
    // A member's key is no lead key: an unattested message in the lead's name signed by m1.
    let fake = Forwarded {
        signed: c.m1.signer.sign(message(&c.lead, &c.m2, "hi", NOW)),
        attestation: None,
    };
    assert!(matches!(
        receive_now(&fake),
        Err(WalkyError::BadSignature { .. })
    ));
}

#[test]
fn an_attestation_not_by_the_pinned_lead_is_refused() {
    let c = crew();
    let signed = from_m1(NOW);
    let id = signed.message.id;
    // m2 plays lead: its attestation is well-formed, but not by the lead key the receiver pinned.
    let fwd = attest(
        &signed,
        c.m1.cert(),
        &c.m1.identity.pin(),
        "m1",
        &c.m2.signer,
        &mut ReplayGuard::new(10),
        NOW,
    )
    .unwrap();
    assert_eq!(
        receive_now(&fwd),
        Err(WalkyError::AttestationInvalid { id })
    );
    // A garbage signature is refused the same way.
    let mut fwd = lead_attests(&signed, &c.m1).unwrap();
    if let Some(a) = fwd.attestation.as_mut() {
        a.signature = vec![0; 12];
    }
    assert_eq!(
        receive_now(&fwd),
        Err(WalkyError::AttestationInvalid { id })
    );
}

#[test]
fn an_attestation_for_another_message_is_refused() {
    let c = crew();
    let a = lead_attests(&from_m1(NOW), &c.m1).unwrap();
    let b = from_m1(NOW);
    let id = b.message.id;
    // A's attestation attached to B (both genuinely signed by m1).
    let moved = Forwarded {
        signed: b.clone(),
        attestation: a.attestation.clone(),
    };
    assert_eq!(
        receive_now(&moved),
        Err(WalkyError::AttestationInvalid { id })
    );
    // B with A's id but other contents: the hash of the canonical bytes differs.
    let mut same_id = a.signed.message.clone();
    same_id.body = "other words".into();
    let same_id = Forwarded {
        signed: c.m1.signer.sign(same_id),
        attestation: a.attestation.clone(),
    };
    assert!(matches!(
        receive_now(&same_id),
        Err(WalkyError::AttestationInvalid { .. })
    ));
    // Another sender machine named in the attestation.
    let mut other_sender = a.clone();
    if let Some(att) = other_sender.attestation.as_mut() {
        att.sender_machine = "m2".into();
    }
    assert!(matches!(
        receive_now(&other_sender),
        Err(WalkyError::AttestationInvalid { .. })
    ));
    // Another certificate attached.
    let mut other_cert = a.clone();
    if let Some(att) = other_cert.attestation.as_mut() {
        att.sender_certificate = c.m2.cert().to_vec();
    }
    assert!(matches!(
        receive_now(&other_cert),
        Err(WalkyError::AttestationInvalid { .. })
    ));
    // And an attestation stripped off: the message is not the lead's.
    let mut stripped = a.clone();
    stripped.attestation = None;
    assert!(matches!(
        receive_now(&stripped),
        Err(WalkyError::NotFromLead { .. })
    ));
    // The original still passes.
    assert!(receive_now(&a).is_ok());
}

#[test]
fn an_attested_sender_must_be_the_messages_machine() {
    let c = crew();
    // At the lead: a message in m2's name on m1's connection.
    let signed = c.m1.signer.sign(message(&c.m2, &c.lead, "hi", NOW));
    assert_eq!(
        lead_attests(&signed, &c.m1),
        Err(WalkyError::SenderMismatch {
            claimed: "m2".into(),
            actual: "m1".into()
        })
    );
    // At the receiver, with a lead that attested it as m1's anyway.
    let fwd = attested_anyway(signed, "m1", &c.m1);
    assert_eq!(
        receive_now(&fwd),
        Err(WalkyError::SenderMismatch {
            claimed: "m2".into(),
            actual: "m1".into()
        })
    );
}

#[test]
fn a_certificate_not_pinned_for_the_sender_is_refused() {
    let c = crew();
    let signed = from_m1(NOW);
    let err = attest(
        &signed,
        c.m1.cert(),
        &c.m2.identity.pin(),
        "m1",
        &c.lead.signer,
        &mut ReplayGuard::new(10),
        NOW,
    )
    .unwrap_err();
    assert_eq!(
        err,
        WalkyError::PinMismatch {
            machine: "m1".into(),
            pinned: c.m2.identity.pin(),
            presented: c.m1.identity.pin(),
        }
    );
    assert_eq!(
        err.to_string(),
        "certificate presented by m1 is not the one pinned for it"
    );
    // Garbage where a certificate belongs.
    let garbage = attest(
        &signed,
        b"not a certificate",
        &c.m1.identity.pin(),
        "m1",
        &c.lead.signer,
        &mut ReplayGuard::new(10),
        NOW,
    );
    assert_eq!(garbage, Err(WalkyError::BadCertificate));
    let mut fwd = lead_attests(&signed, &c.m1).unwrap();
    if let Some(a) = fwd.attestation.as_mut() {
        a.sender_certificate.truncate(20);
    }
    assert_eq!(receive_now(&fwd), Err(WalkyError::BadCertificate));
}

#[test]
fn an_unattested_message_must_come_from_the_lead() {
    let fwd = Forwarded {
        signed: from_m1(NOW),
        attestation: None,
    };
    let err = receive_now(&fwd).unwrap_err();
    assert!(
        matches!(&err, WalkyError::NotFromLead { machine, lead, .. } if machine == "m1" && lead == "laptop"),
        "{err:?}"
    );
}

#[test]
fn a_replayed_id_is_refused() {
    let c = crew();
    let signed = from_m1(NOW);
    let id = signed.message.id;
    // At the lead.
    let mut lead_guard = ReplayGuard::new(10);
    let pin = c.m1.identity.pin();
    let at_lead = |guard: &mut ReplayGuard| {
        attest(&signed, c.m1.cert(), &pin, "m1", &c.lead.signer, guard, NOW)
    };
    let fwd = at_lead(&mut lead_guard).unwrap();
    assert_eq!(at_lead(&mut lead_guard), Err(WalkyError::Replayed { id }));
    // At the receiver.
    let mut guard = ReplayGuard::new(10);
    receive_at(&fwd, &mut guard, NOW).unwrap();
    assert_eq!(
        receive_at(&fwd, &mut guard, NOW + 10),
        Err(WalkyError::Replayed { id })
    );
}

#[test]
fn a_refused_message_does_not_burn_its_id() {
    let c = crew();
    let genuine = lead_attests(&from_m1(NOW), &c.m1).unwrap();
    let mut forged = genuine.clone();
    forged.signed.signature[5] ^= 0x01;
    let mut guard = ReplayGuard::new(10);
    assert!(receive_at(&forged, &mut guard, NOW).is_err());
    assert!(guard.is_empty());
    assert!(receive_at(&genuine, &mut guard, NOW).is_ok());
}

#[test]
fn a_timestamp_outside_the_skew_is_refused() {
    let c = crew();
    for sent_at in [NOW - MAX_SKEW_SECS - 1, NOW + MAX_SKEW_SECS + 1] {
        let signed = from_m1(sent_at);
        let id = signed.message.id;
        let skew = WalkyError::Skew {
            id,
            sent_at,
            now: NOW,
        };
        // The lead refuses it...
        assert_eq!(lead_attests(&signed, &c.m1), Err(skew.clone()));
        // ...and so does the receiver, when the lead's clock let it through.
        let fwd = attest(
            &signed,
            c.m1.cert(),
            &c.m1.identity.pin(),
            "m1",
            &c.lead.signer,
            &mut ReplayGuard::new(10),
            sent_at,
        )
        .unwrap();
        assert_eq!(receive_now(&fwd), Err(skew));
    }
    let err = lead_attests(&from_m1(NOW - 301), &c.m1).unwrap_err();
    assert!(err
        .to_string()
        .contains("is -301 s off this machine's clock"));
    // The edges are accepted.
    for sent_at in [NOW - MAX_SKEW_SECS, NOW + MAX_SKEW_SECS] {
        let fwd = lead_attests(&from_m1(sent_at), &c.m1).unwrap();
        assert!(receive_now(&fwd).is_ok());
    }
}

#[test]
fn a_result_from_a_non_lead_is_refused() {
    let result = WalkyResult {
        id: MessageId::random(),
        outcome: Outcome::Delivered,
    };
    assert_eq!(
        accept_result(&result, false, |_| true),
        Err(WalkyError::ResultNotFromLead { id: result.id })
    );
    assert_eq!(accept_result(&result, true, |id| *id == result.id), Ok(()));
}

#[test]
fn a_result_for_an_unknown_message_is_refused() {
    let result = WalkyResult::rejected(
        MessageId::random(),
        &WalkyError::WalkyOff {
            machine: "m2".into(),
        },
    );
    assert_eq!(result.outcome, Outcome::Rejected("walky off on m2".into()));
    assert_eq!(
        accept_result(&result, true, |_| false),
        Err(WalkyError::UnknownResult { id: result.id })
    );
}

#[test]
fn an_oversized_body_is_refused() {
    let c = crew();
    let build = |body: String| {
        Message::new(
            MessageId::random(),
            c.m1.address(),
            "n",
            c.m2.address(),
            NOW,
            body,
        )
    };
    let exact = build("x".repeat(MAX_BODY)).unwrap();
    assert_eq!(exact.body.len(), 16 * 1024);
    assert_eq!(
        build("x".repeat(MAX_BODY + 1)),
        Err(WalkyError::BodyTooLarge { len: 16 * 1024 + 1 })
    );
    // Bytes count, not characters: 8,193 two-byte characters are 16,386 bytes.
    assert_eq!(
        build("é".repeat(MAX_BODY / 2 + 1)),
        Err(WalkyError::BodyTooLarge { len: MAX_BODY + 2 })
    );
    // A message built without `new` is refused by the lead and by the receiver.
    let accepted = lead_attests(&c.m1.signer.sign(exact.clone()), &c.m1).unwrap();
    assert!(receive_now(&accepted).is_ok());
    let mut big = exact;
    big.body.push('x');
    let signed = c.m1.signer.sign(big);
    let too_large = WalkyError::BodyTooLarge { len: MAX_BODY + 1 };
    assert_eq!(lead_attests(&signed, &c.m1), Err(too_large.clone()));
    assert_eq!(
        receive_now(&attested_anyway(signed, "m1", &c.m1)),
        Err(too_large)
    );
}

#[test]
fn a_sender_name_that_is_not_a_pane_name_is_refused() {
    let c = crew();
    let build = |name: &str| {
        Message::new(
            MessageId::random(),
            c.m1.address(),
            name,
            c.m2.address(),
            NOW,
            "hi",
        )
    };
    assert!(build("").is_ok());
    assert!(build(&"é".repeat(MAX_FROM_NAME_CHARS)).is_ok());
    assert!(matches!(
        build(&"n".repeat(MAX_FROM_NAME_CHARS + 1)),
        Err(WalkyError::InvalidSenderName(_))
    ));
    assert!(matches!(
        build("a\nrm -rf"),
        Err(WalkyError::InvalidSenderName(_))
    ));
    // Also when it arrives decoded from the wire.
    let mut m = message(&c.m1, &c.m2, "hi", NOW);
    m.from_name = "x\r".into();
    let signed = c.m1.signer.sign(m);
    assert!(matches!(
        lead_attests(&signed, &c.m1),
        Err(WalkyError::InvalidSenderName(_))
    ));
}

#[test]
fn walky_off_is_refused_with_the_exact_text() {
    assert_eq!(check_walky_on(true, "m2"), Ok(()));
    let err = check_walky_on(false, "m2").unwrap_err();
    assert_eq!(
        err,
        WalkyError::WalkyOff {
            machine: "m2".into()
        }
    );
    assert_eq!(err.to_string(), "walky off on m2");
}

// ---- properties ---------------------------------------------------------------------------------

fn address_strategy() -> impl Strategy<Value = Address> {
    ("[a-z0-9-]{1,32}", "[A-Za-z0-9._-]{1,32}", "[a-z2-7]{4}")
        .prop_filter("a valid address", |(m, _, _)| m != "local")
        .prop_map(|(machine, pane, token)| Address {
            machine,
            pane,
            token,
        })
}

fn valid_message() -> impl Strategy<Value = Message> {
    (
        any::<[u8; 16]>(),
        address_strategy(),
        proptest::collection::vec(
            any::<char>().prop_filter("no control", |c| !c.is_control()),
            0..=64,
        ),
        address_strategy(),
        NOW - MAX_SKEW_SECS..=NOW + MAX_SKEW_SECS,
        ".{0,300}",
    )
        .prop_map(|(id, from, name, to, sent_at, body)| Message {
            id: MessageId::from(id),
            from,
            from_name: name.into_iter().collect(),
            to,
            sent_at,
            body,
        })
}

/// Fields from a tiny alphabet, so that different messages often concatenate to the same text
/// and only the length prefixes tell them apart.
fn tiny_message() -> impl Strategy<Value = Message> {
    let f = || "[ab/#]{0,3}";
    (
        prop_oneof![Just([0u8; 16]), Just([1u8; 16])],
        (f(), f(), f()),
        f(),
        (f(), f(), f()),
        prop_oneof![Just(0i64), Just(1), Just(-1), Just(256)],
        f(),
    )
        .prop_map(
            |(id, (fm, fp, ft), name, (tm, tp, tt), sent_at, body)| Message {
                id: MessageId::from(id),
                from: Address {
                    machine: fm,
                    pane: fp,
                    token: ft,
                },
                from_name: name,
                to: Address {
                    machine: tm,
                    pane: tp,
                    token: tt,
                },
                sent_at,
                body,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_valid_message_round_trips(mut m in valid_message()) {
        let c = crew();
        m.from.machine = c.m1.name.into();
        prop_assert!(m.validate().is_ok());
        let signed = c.m1.signer.sign(m.clone());
        prop_assert!(signed.verify(&c.m1.signer.verifying_key()).is_ok());
        prop_assert!(signed.verify(&c.m2.signer.verifying_key()).is_err());
        let fwd = lead_attests(&signed, &c.m1).unwrap();
        let wire: Forwarded = decode(&encode(&fwd).unwrap()).unwrap();
        prop_assert_eq!(receive_now(&wire).unwrap(), m.clone());

        // The same message from the lead's own pane.
        m.from.machine = c.lead.name.into();
        let own = forward_own(&c.lead.signer, m.clone());
        prop_assert_eq!(receive_now(&own).unwrap(), m);
    }

    #[test]
    fn different_messages_have_different_canonical_bytes(a in tiny_message(), b in tiny_message()) {
        prop_assert_eq!(a == b, a.canonical() == b.canonical());
    }

    #[test]
    fn a_parsed_address_prints_back(a in address_strategy()) {
        let text = a.to_string();
        prop_assert_eq!(Address::parse(&text, "elsewhere").unwrap(), a);
    }
}

#[test]
fn moving_text_between_fields_changes_the_canonical_bytes() {
    let c = crew();
    let a = message(&c.m1, &c.m2, "xbody", NOW);
    let mut b = a.clone();
    b.from_name.push('x');
    b.body.remove(0);
    assert_ne!(a.canonical(), b.canonical());
    // And the signature of one does not verify for the other.
    let signed = Signed {
        message: b,
        signature: c.m1.signer.sign(a).signature,
    };
    assert!(signed.verify(&c.m1.signer.verifying_key()).is_err());
}
