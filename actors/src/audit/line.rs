//! The bytes of one audit line, the hash rule, and reading a line back.
//!
//! A line is one JSON object with its members in this fixed order, no whitespace, and a `\n`:
//!
//! ```text
//! {"v":1,"seq":N,"ts":"…Z","event":"…","machine":"…","session":…,"device":…,"request_id":…,"detail":{…},"prev":"<hex>","hash":"<hex>"}
//! ```
//!
//! `session`, `device` and `request_id` are a string or `null`; strings are escaped the way
//! `serde_json` escapes them (so a line never holds a raw newline). The **body** of a line is the
//! same object without the `hash` member: the line's bytes up to the `"` that closes `prev`,
//! followed by `}`. Then
//!
//! ```text
//! hash = lowercase_hex(SHA-256(prev_hex_ascii ‖ body))
//! ```
//!
//! where `prev_hex_ascii` is the 64 ASCII characters of `prev` ([`GENESIS_PREV`], 64 zeros, for
//! the first line). The verifier hashes the bytes as they stand in the file and never serializes
//! again, so nothing depends on how `serde_json` orders the members of `detail`.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// `prev` of the first line of a log: 64 zeros.
pub const GENESIS_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The longest line the verifier reads; [`AuditLog`](super::AuditLog) refuses to write a longer one.
/// Typed text is capped at 64 KiB (SPEC §3.2), so a line stays far below this.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// `,"hash":"`: what closes the body and opens the hash member.
const HASH_MEMBER: &[u8] = b",\"hash\":\"";
/// Length of `,"hash":"<64 hex>"}`.
const HASH_TAIL_LEN: usize = HASH_MEMBER.len() + 64 + 2;

/// The members of a line before hashing, already rendered (masked, content mode applied).
pub(crate) struct Fields<'a> {
    pub(crate) seq: u64,
    pub(crate) ts: &'a str,
    pub(crate) event: &'a str,
    pub(crate) machine: &'a str,
    pub(crate) session: Option<&'a str>,
    pub(crate) device: Option<&'a str>,
    pub(crate) request_id: Option<&'a str>,
    pub(crate) detail: Map<String, Value>,
    pub(crate) prev: &'a str,
}

/// The full line (ending in `\n`) and its hash.
pub(crate) fn encode(fields: Fields<'_>) -> (Vec<u8>, String) {
    let mut body = String::with_capacity(256);
    body.push_str("{\"v\":1,\"seq\":");
    body.push_str(&fields.seq.to_string());
    for (name, value) in [
        ("ts", Value::from(fields.ts)),
        ("event", Value::from(fields.event)),
        ("machine", Value::from(fields.machine)),
        ("session", Value::from(fields.session)),
        ("device", Value::from(fields.device)),
        ("request_id", Value::from(fields.request_id)),
        ("detail", Value::Object(fields.detail)),
        ("prev", Value::from(fields.prev)),
    ] {
        body.push_str(",\"");
        body.push_str(name);
        body.push_str("\":");
        // `Value`'s Display is serde_json's compact serializer, and cannot fail.
        body.push_str(&value.to_string());
    }
    body.push('}');
    let hash = chain_hash(fields.prev, body.as_bytes());

    let mut line = body.into_bytes();
    line.pop(); // the body's closing `}`
    line.extend_from_slice(HASH_MEMBER);
    line.extend_from_slice(hash.as_bytes());
    line.extend_from_slice(b"\"}\n");
    (line, hash)
}

/// `lowercase_hex(SHA-256(prev ‖ body))`.
pub(crate) fn chain_hash(prev: &str, body: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prev.as_bytes());
    hasher.update(body);
    hex::encode(hasher.finalize())
}

/// What a verified line tells the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParsedLine {
    pub(crate) seq: u64,
    /// The `event` member (an `audit.break` line may skip `seq` forward).
    pub(crate) event: String,
    pub(crate) prev: String,
    pub(crate) hash: String,
}

/// Why a line is not a valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineError {
    /// Not an audit line at all (not JSON, a member missing or of the wrong type, wrong version,
    /// members out of place).
    Unparseable(String),
    /// A well-formed line whose hash does not match its bytes.
    Altered { seq: u64 },
}

/// Reads one line (without its `\n`) and checks its hash.
pub(crate) fn parse_line(line: &[u8]) -> Result<ParsedLine, LineError> {
    let bad = |reason: &str| LineError::Unparseable(reason.to_owned());
    let value: Value = serde_json::from_slice(line).map_err(|_| bad("not a JSON object"))?;
    let obj = value.as_object().ok_or_else(|| bad("not a JSON object"))?;
    match obj.get("v").and_then(Value::as_u64) {
        Some(1) => {}
        Some(_) => return Err(bad("unsupported version")),
        None => return Err(bad("missing v")),
    }
    let seq = obj
        .get("seq")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("missing or invalid seq"))?;
    for name in ["ts", "event", "machine"] {
        if !obj.get(name).is_some_and(Value::is_string) {
            return Err(bad(&format!("missing or invalid {name}")));
        }
    }
    for name in ["session", "device", "request_id"] {
        if !obj.get(name).is_some_and(|v| v.is_string() || v.is_null()) {
            return Err(bad(&format!("missing or invalid {name}")));
        }
    }
    if !obj.get("detail").is_some_and(Value::is_object) {
        return Err(bad("missing or invalid detail"));
    }
    let event = obj
        .get("event")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let prev = hex_member(obj, "prev").ok_or_else(|| bad("missing or invalid prev"))?;
    let hash = hex_member(obj, "hash").ok_or_else(|| bad("missing or invalid hash"))?;

    // The hash member must close the line, so that the body is everything before it.
    let split = line
        .len()
        .checked_sub(HASH_TAIL_LEN)
        .filter(|&at| line[at..].starts_with(HASH_MEMBER) && line.ends_with(b"\"}"))
        .ok_or_else(|| bad("hash is not the last member"))?;
    if &line[split + HASH_MEMBER.len()..line.len() - 2] != hash.as_bytes() {
        return Err(bad("hash is not the last member"));
    }
    let mut body = Vec::with_capacity(split + 1);
    body.extend_from_slice(&line[..split]);
    body.push(b'}');
    if chain_hash(&prev, &body) != hash {
        return Err(LineError::Altered { seq });
    }
    Ok(ParsedLine {
        seq,
        event,
        prev,
        hash,
    })
}

/// Only the `seq` of a line, for a line that may not verify.
pub(crate) fn loose_seq(line: &[u8]) -> Option<u64> {
    serde_json::from_slice::<Value>(line)
        .ok()?
        .get("seq")?
        .as_u64()
}

fn hex_member(obj: &Map<String, Value>, name: &str) -> Option<String> {
    let s = obj.get(name)?.as_str()?;
    let ok = s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    ok.then(|| s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(prev: &str) -> (Vec<u8>, String) {
        let mut detail = Map::new();
        detail.insert("pane".into(), Value::from("t0-3"));
        encode(Fields {
            seq: 7,
            ts: "2025-01-02T03:04:05.006Z",
            event: "pane.input",
            machine: "web-1",
            session: None,
            device: Some("phone"),
            request_id: Some("r\"1"),
            detail,
            prev,
        })
    }

    #[test]
    fn encoded_line_parses_back() {
        let (line, hash) = sample(GENESIS_PREV);
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let parsed = parse_line(&line[..line.len() - 1]);
        assert_eq!(
            parsed,
            Ok(ParsedLine {
                seq: 7,
                event: "pane.input".to_owned(),
                prev: GENESIS_PREV.to_owned(),
                hash,
            })
        );
    }

    #[test]
    fn a_changed_byte_is_altered() {
        let (line, _) = sample(GENESIS_PREV);
        let text = String::from_utf8(line).unwrap().replace("t0-3", "t0-4");
        let bytes = text.trim_end().as_bytes();
        assert_eq!(parse_line(bytes), Err(LineError::Altered { seq: 7 }));
    }

    #[test]
    fn malformed_lines_are_unparseable() {
        let (line, _) = sample(GENESIS_PREV);
        let good = String::from_utf8(line).unwrap();
        let good = good.trim_end();
        let cases = [
            ("", "not a JSON object"),
            ("[1]", "not a JSON object"),
            (&good[..good.len() - 5], "not a JSON object"),
            (&good.replace("\"v\":1", "\"v\":2"), "unsupported version"),
            (
                &good.replace("\"seq\":7", "\"seq\":-7"),
                "missing or invalid seq",
            ),
            (
                &good.replace("\"device\":\"phone\"", "\"device\":3"),
                "missing or invalid device",
            ),
            (
                &good
                    .replace("\"detail\":{", "\"detail\":[{")
                    .replace("},\"prev", "}],\"prev"),
                "missing or invalid detail",
            ),
            (
                &good.replace("\"prev\":\"0", "\"prev\":\"A"),
                "missing or invalid prev",
            ),
            (
                &good
                    .replace(",\"hash\":", ",\"x\":0,\"hash\":")
                    .replace("\"}", "\",\"y\":1}"),
                "hash is not the last member",
            ),
        ];
        for (line, reason) in cases {
            assert_eq!(
                parse_line(line.as_bytes()),
                Err(LineError::Unparseable(reason.to_owned())),
                "{line}"
            );
        }
    }

    #[test]
    fn loose_seq_reads_unverified_lines() {
        assert_eq!(loose_seq(br#"{"seq":4}"#), Some(4));
        assert_eq!(loose_seq(b"garbage"), None);
    }
}
