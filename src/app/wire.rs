//! Between this bridge's own types and the relay's (the `crew` crate's): what a member answers a
//! lead, and what a lead reads from it.
//!
//! The crew crate knows nothing of actors, so the relay has types of its own — typed values, never
//! JSON text inside the binary frames (decision 0055) — and this module converts. A field added on
//! either side is a conversion that no longer compiles until someone decides what crosses the
//! wire. On the lead, what a member sent is named by the member's crew name here and masked again
//! by the operation that asked for it.

pub mod cards;
pub mod chat;

use collie_crew::relay::Json;
use serde_json::Value;

use super::AppError;

/// A tool's arguments or answer as the relay carries them (a JSON object is all a tool takes or
/// gives).
pub fn json(value: &Value) -> Result<Json, AppError> {
    Json::from_value(value).map_err(|_| AppError::BadRequest("JSON nested too deep".into()))
}

/// A JSON object the relay carried, or `None` when it is none (a member's answer that does not
/// read is unreadable; a lead's arguments that do not read are bad input — each caller says).
pub fn object(json: &Json) -> Option<Value> {
    json.to_value().ok().filter(Value::is_object)
}
