//! Fuzz tests of the phone API's request bodies (docs/decisions/0063). Every body is read whole
//! first, within its route's limit ([`crate::http::body`]: 512 KiB, 24 MiB for a tool call, checked
//! against `Content-Length` and while reading), then parsed by [`body`] into the route's type.
//! Arbitrary bytes and damaged valid bodies, each tried as every route's type: never a panic,
//! a refusal is 400 `invalid body: …` naming what is wrong, and a valid body reads.
//!
//! Not here: `POST /api/blobs` stores its bytes as they are (no decoder, only the 10 MiB cap),
//! and `POST /mcp` is the MCP SDK's (its own tests; `http/mcp/reject.rs` only looks at the
//! `method` of a body that parses).

use axum::body::Bytes;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::body;
use crate::app::rows::NewRow;
use crate::app::AppError;
use crate::fuzzing::{arbitrary, mutated};

/// Each route's body, valid, with the fields it may hold.
const BODIES: &[(&str, &str)] = &[
    (
        "cards",
        r#"{"option":"allow","shown":"ab12","confirm":null,"machine":"web-1"}"#,
    ),
    ("devices", r#"{"code":"123456","label":"pixel"}"#),
    (
        "durable",
        r#"{"machine":"web-1","text":"go on","action":null,"title":"t","starter":"s"}"#,
    ),
    ("input", r#"{"text":"ls -la\n","keys":["Enter","C-c"]}"#),
    (
        "create",
        r#"{"machine":"local","name":"build","starter":"claude"}"#,
    ),
    ("rename", r#"{"name":"build"}"#),
    (
        "rows",
        r#"{"name":"fast","agent":"claude","model":"opus","no_prompts":true,"line":null}"#,
    ),
    (
        "push",
        r#"{"endpoint":"https://push.example/x","keys":{"p256dh":"BNc","auth":"tBH"},"expirationTime":null}"#,
    ),
    ("commands", r#"{"machine":null,"command":"git status"}"#),
    ("tools", r#"{"path":"src/main.rs","offset":0,"length":100}"#),
];

/// `bytes` as every route's body: each is a value or a 400 that says what is wrong.
fn every_route(bytes: &[u8]) -> Result<(), TestCaseError> {
    let bytes = Bytes::copy_from_slice(bytes);
    check::<super::cards::AnswerBody>(&bytes)?;
    check::<super::devices::PairBody>(&bytes)?;
    check::<super::durable::WriteBody>(&bytes)?;
    check::<super::panes::InputBody>(&bytes)?;
    check::<super::panes::CreateBody>(&bytes)?;
    check::<super::panes::RenameBody>(&bytes)?;
    check::<NewRow>(&bytes)?;
    check::<super::push::SubscribeBody>(&bytes)?;
    check::<super::sent::CommandBody>(&bytes)?;
    check::<Value>(&bytes)?;
    Ok(())
}

fn check<T: DeserializeOwned>(bytes: &Bytes) -> Result<(), TestCaseError> {
    match body::<T>(bytes) {
        Ok(_) => {}
        Err(AppError::BadRequest(m)) => {
            prop_assert!(m.starts_with("invalid body: ") && m.len() > 14)
        }
        Err(other) => prop_assert!(false, "not a 400: {other}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bodies_never_panic(bytes in arbitrary(256)) {
        every_route(&bytes)?;
    }

    #[test]
    fn damaged_bodies_read_or_are_refused(
        bytes in prop::sample::select(BODIES)
            .prop_flat_map(|(_, valid)| mutated(valid.as_bytes().to_vec())),
    ) {
        every_route(&bytes)?;
    }
}

/// Each valid body reads as its route's type.
#[test]
fn valid_bodies_read() {
    let ok = |name: &str| {
        let (_, text) = BODIES.iter().find(|(n, _)| *n == name).expect("listed");
        Bytes::from_static(text.as_bytes())
    };
    assert!(body::<super::cards::AnswerBody>(&ok("cards")).is_ok());
    assert!(body::<super::devices::PairBody>(&ok("devices")).is_ok());
    assert!(body::<super::durable::WriteBody>(&ok("durable")).is_ok());
    assert!(body::<super::panes::InputBody>(&ok("input")).is_ok());
    assert!(body::<super::panes::CreateBody>(&ok("create")).is_ok());
    assert!(body::<super::panes::RenameBody>(&ok("rename")).is_ok());
    assert!(body::<NewRow>(&ok("rows")).is_ok());
    assert!(body::<super::push::SubscribeBody>(&ok("push")).is_ok());
    assert!(body::<super::sent::CommandBody>(&ok("commands")).is_ok());
    assert!(body::<Value>(&ok("tools")).is_ok());
}
