//! Content modes: what of `detail` reaches the log (SPEC §7, `COLLIE_AUDIT_CONTENT`).
//!
//! Three rules apply to `detail`, recursively, in this order, to every string value:
//!
//! 1. **Typed text is never written.** A string anywhere under a member named [`TYPED_TEXT_KEY`]
//!    (`text`) is typed text: in `preview` mode it becomes one `•` (U+2022) per character, in `none`
//!    mode `[redacted]`. Callers may pass the text itself or [`typed_text_detail`] of it; the result
//!    is the same. Named keys go under `keys` (or `key`) and stay readable.
//! 2. **`none` mode** replaces every other string with [`REDACTED`] unless it sits under a member
//!    whose name is in [`IDENTIFIER_KEYS`] (request ids, key names, machine, pane and device names,
//!    tiers, reasons, versions…); everything under such a member stays as it is, except typed text.
//!    Numbers, booleans and nulls are kept in both modes (counts and lengths are not content).
//! 3. **The mask** (the redactor) is applied to every string that is left, and to every member name.

use std::{fmt, str::FromStr};

use serde_json::{Map, Value};

use super::AuditError;

/// The member of `detail` that holds typed text, at any depth.
pub const TYPED_TEXT_KEY: &str = "text";

/// What a string becomes in `none` mode.
pub const REDACTED: &str = "[redacted]";

/// Members of `detail` whose values are identifiers or fixed vocabulary, kept readable in `none`
/// mode. Anything a person wrote (pane names, walky bodies, answers, the first word of a command)
/// goes under other names.
pub const IDENTIFIER_KEYS: &[&str] = &[
    // ids and addresses
    "request_id",
    "message_id",
    "session",
    "machine",
    "member",
    "lead",
    "device",
    "label",
    // the person an identity gate vouched for, and the gate (SPEC §14)
    "identity",
    "identity_gate",
    "gate",
    "cause",
    "pane",
    "pane_token",
    "tab",
    "from",
    "to",
    // fixed vocabularies
    "key",
    "keys",
    "reason",
    "tier",
    "old_tier",
    "new_tier",
    "required",
    "capability",
    "backend",
    "method",
    "via",
    // versions, actors and times
    "version",
    "actor",
    "expires_at",
    "old_expires_at",
    "new_expires_at",
    // the audit log's own evidence, and refusal bookkeeping
    "expected",
    "expected_seq",
    "found",
    "break_seq",
    "hash",
    "contradicts",
    "source",
    "count",
    "id",
];

/// How much of `detail` the log keeps (`COLLIE_AUDIT_CONTENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContentMode {
    /// `preview` (the default): typed text is recorded as one `•` per character.
    #[default]
    Preview,
    /// `none`: every string of `detail` but identifiers becomes `[redacted]`.
    None,
}

impl ContentMode {
    /// The mode's name as `COLLIE_AUDIT_CONTENT` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Preview => "preview",
            Self::None => "none",
        }
    }
}

impl fmt::Display for ContentMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ContentMode {
    type Err = AuditError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "preview" => Ok(Self::Preview),
            "none" => Ok(Self::None),
            other => Err(AuditError::UnknownContentMode(other.to_owned())),
        }
    }
}

/// The `preview` form of typed text: one `•` per character, so the length shows and the characters
/// do not. Put it under [`TYPED_TEXT_KEY`].
pub fn typed_text_detail(text: &str) -> Value {
    Value::String(bullets(text))
}

fn bullets(text: &str) -> String {
    "\u{2022}".repeat(text.chars().count())
}

/// Where in `detail` a value sits, as far as the rules care.
#[derive(Clone, Copy)]
struct Place {
    typed: bool,
    identifier: bool,
}

/// `detail` as it is written: the three rules of this module applied.
pub(crate) fn render_detail(
    detail: &Map<String, Value>,
    mode: ContentMode,
    mask: &dyn Fn(&str) -> String,
) -> Map<String, Value> {
    let top = Place {
        typed: false,
        identifier: false,
    };
    render_map(detail, top, mode, mask)
}

fn render_map(
    map: &Map<String, Value>,
    place: Place,
    mode: ContentMode,
    mask: &dyn Fn(&str) -> String,
) -> Map<String, Value> {
    map.iter()
        .map(|(key, value)| {
            let inner = Place {
                typed: place.typed || key == TYPED_TEXT_KEY,
                identifier: place.identifier || IDENTIFIER_KEYS.contains(&key.as_str()),
            };
            (mask(key), render_value(value, inner, mode, mask))
        })
        .collect()
}

fn render_value(
    value: &Value,
    place: Place,
    mode: ContentMode,
    mask: &dyn Fn(&str) -> String,
) -> Value {
    match value {
        Value::String(s) => Value::String(mask(&render_string(s, place, mode))),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| render_value(item, place, mode, mask))
                .collect(),
        ),
        Value::Object(map) => Value::Object(render_map(map, place, mode, mask)),
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
    }
}

fn render_string(s: &str, place: Place, mode: ContentMode) -> String {
    match (mode, place.typed, place.identifier) {
        (ContentMode::Preview, true, _) => bullets(s),
        (ContentMode::None, true, _) | (ContentMode::None, false, false) => REDACTED.to_owned(),
        (ContentMode::Preview, false, _) | (ContentMode::None, false, true) => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn identity(s: &str) -> String {
        s.to_owned()
    }

    fn render(detail: Value, mode: ContentMode) -> Value {
        let Value::Object(map) = detail else {
            panic!("test detail must be an object")
        };
        Value::Object(render_detail(&map, mode, &identity))
    }

    #[test]
    fn modes_parse_from_their_names_only() {
        assert_eq!(
            "preview".parse::<ContentMode>().ok(),
            Some(ContentMode::Preview)
        );
        assert_eq!("none".parse::<ContentMode>().ok(), Some(ContentMode::None));
        assert_eq!(ContentMode::default(), ContentMode::Preview);
        for bad in ["", "Preview", "full", "off", " none"] {
            let err = bad.parse::<ContentMode>().unwrap_err();
            assert!(err.to_string().contains("use preview or none"), "{err}");
        }
        assert_eq!(ContentMode::None.to_string(), "none");
    }

    #[test]
    fn typed_text_is_one_bullet_per_character() {
        assert_eq!(typed_text_detail("héllo ✓"), json!("•••••••"));
        assert_eq!(typed_text_detail(""), json!(""));
    }

    #[test]
    fn preview_hides_typed_text_and_keeps_the_rest() {
        let out = render(
            json!({"pane": "t0-3", "text": "rm -rf /", "keys": ["Enter", "C-c"], "len": 8}),
            ContentMode::Preview,
        );
        assert_eq!(
            out,
            json!({"pane": "t0-3", "text": "••••••••", "keys": ["Enter", "C-c"], "len": 8})
        );
    }

    #[test]
    fn typed_text_is_hidden_at_any_depth_and_idempotent() {
        let out = render(
            json!({"answers": [{"text": "yes"}], "text": {"a": ["ab", "c"]}}),
            ContentMode::Preview,
        );
        assert_eq!(
            out,
            json!({"answers": [{"text": "•••"}], "text": {"a": ["••", "•"]}})
        );
        let again = render(out.clone(), ContentMode::Preview);
        assert_eq!(again, out);
    }

    #[test]
    fn none_redacts_every_string_but_identifiers() {
        let out = render(
            json!({
                "request_id": "r-1",
                "pane": "t0-3",
                "name": "my secret project",
                "text": "hunter2",
                "keys": ["Enter"],
                "first_word": "curl",
                "nested": {"note": "x", "tier": "full", "n": 3, "ok": true, "none": null},
                "to": {"pane": "p1", "text": "hi"},
                "list": ["a", 1],
            }),
            ContentMode::None,
        );
        assert_eq!(
            out,
            json!({
                "request_id": "r-1",
                "pane": "t0-3",
                "name": "[redacted]",
                "text": "[redacted]",
                "keys": ["Enter"],
                "first_word": "[redacted]",
                "nested": {"note": "[redacted]", "tier": "full", "n": 3, "ok": true, "none": null},
                "to": {"pane": "p1", "text": "[redacted]"},
                "list": ["[redacted]", 1],
            })
        );
    }

    #[test]
    fn mask_reaches_every_string_and_key() {
        let mask = |s: &str| s.replace('s', "•");
        let Value::Object(map) = json!({"sk": "sss", "pane": ["s"], "text": "ss"}) else {
            unreachable!()
        };
        let out = render_detail(&map, ContentMode::Preview, &mask);
        assert_eq!(
            Value::Object(out),
            json!({"•k": "•••", "pane": ["•"], "text": "••"})
        );
    }
}
