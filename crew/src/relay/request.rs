//! Reading a [`RelayRequest`] from a lead of either age.
//!
//! The frame is bincode, which cannot skip or default a field it does not find (decision 0008).
//! `device_id` follows `kind`, so an older member stops reading before it (the rest of a frame is
//! ignored). A newer member reading an older lead's request runs out of bytes where `device_id`
//! would begin; this reader takes that as "absent" instead of refusing the request. After an
//! unknown kind the bytes that follow are that kind's own payload, so nothing more is read: such
//! a request is refused anyway.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use super::{RelayKind, RelayRequest};

/// The fields in their order on the wire.
const FIELDS: &[&str] = &["id", "device", "request_id", "kind", "device_id"];

impl<'de> Deserialize<'de> for RelayRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("RelayRequest", FIELDS, RequestVisitor)
    }
}

struct RequestVisitor;

impl<'de> Visitor<'de> for RequestVisitor {
    type Value = RelayRequest;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a relay request")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RelayRequest, A::Error> {
        let id = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let device = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        let request_id = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(2, &self))?;
        let kind: RelayKind = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(3, &self))?;
        let device_id = if kind == RelayKind::Unknown {
            None
        } else {
            // An older lead's request ends before this field: the error only says it is absent.
            seq.next_element::<Option<String>>()
                .ok()
                .flatten()
                .flatten()
        };
        Ok(RelayRequest {
            id,
            device,
            request_id,
            kind,
            device_id,
        })
    }
}
