//! Fuzz tests of the durable wire's decoder (docs/decisions/0063): an agent's `GET /v1/state`
//! answer, at most [`wire::MAX_REPLY`] bytes (the transport's limit, applied before the body is
//! read whole), parsed by [`parse`] and then made a [`View`]. Arbitrary bytes and damaged valid
//! answers: never a panic, a refusal is [`TransportError::Invalid`] naming where, and a valid
//! answer comes back equal.

use proptest::prelude::*;

use super::*;
use crate::durable::view::tests::a_state;
use crate::durable::view::View;
use crate::fuzzing::{arbitrary, mutated_from};

/// What the bridge does with an answer: parse it, and make a view of what parsed.
fn read(bytes: &[u8]) -> Result<(), TestCaseError> {
    match parse::<wire::State>(bytes) {
        Ok(state) => drop(View::from_wire(state)),
        Err(e) => {
            prop_assert!(matches!(e, TransportError::Invalid { .. }), "{e:?}");
            prop_assert!(!e.to_string().is_empty());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in arbitrary(256)) {
        read(&bytes)?;
    }

    #[test]
    fn damaged_answers_parse_or_are_refused(
        bytes in mutated_from(a_state().prop_map(|s| serde_json::to_vec(&s).expect("encodes"))),
    ) {
        read(&bytes)?;
    }

    #[test]
    fn valid_answers_round_trip(state in a_state()) {
        let bytes = serde_json::to_vec(&state).expect("encodes");
        prop_assert_eq!(parse::<wire::State>(&bytes).expect("valid"), state);
    }
}
