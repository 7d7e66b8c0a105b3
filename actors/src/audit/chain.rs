//! The pure chain: which `seq` and `prev` the next line gets. No I/O, no clock.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::{
    content::render_detail,
    line::{encode, Fields, GENESIS_PREV},
    AuditRecord, ContentMode,
};

/// The last committed line of a log: what the store keeps so that `collie audit verify` notices a
/// removed or truncated tail, and what a restarted bridge continues from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChainTail {
    /// `seq` of the last line.
    pub seq: u64,
    /// `hash` of the last line (lowercase hex).
    pub hash: String,
}

/// The state of a hash chain: the `seq` and `prev` of the next line.
///
/// [`render`](Self::render) builds a line without changing anything; [`commit`](Self::commit)
/// advances the chain once the caller has appended that line. A failed append therefore leaves the
/// chain where it was, and the next line takes the same `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditChain {
    next_seq: u64,
    prev_hash: String,
}

impl AuditChain {
    /// Continues after `tail`, or starts a fresh log (first line `seq` 1, `prev` 64 zeros).
    pub fn resume(tail: Option<ChainTail>) -> Self {
        match tail {
            Some(tail) => Self {
                next_seq: tail.seq.saturating_add(1),
                prev_hash: tail.hash,
            },
            None => Self {
                next_seq: 1,
                prev_hash: GENESIS_PREV.to_owned(),
            },
        }
    }

    /// Moves the next `seq` forward to `seq` (never back): only for an `audit.break` line, whose
    /// `seq` lies past every `seq` the store or the file has used (see [`super::anchor`]); the
    /// verifier accepts the skip on that event alone.
    pub fn skip_to(&mut self, seq: u64) {
        self.next_seq = self.next_seq.max(seq);
    }

    /// The `seq` the next line gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The last committed line, or `None` for a fresh log.
    pub fn tail(&self) -> Option<ChainTail> {
        (self.next_seq > 1).then(|| ChainTail {
            seq: self.next_seq - 1,
            hash: self.prev_hash.clone(),
        })
    }

    /// The exact bytes of the next line for `rec` at `ts` (line format and hash rule: see the
    /// [`audit`](super) module).
    ///
    /// `mode` is applied to `detail` first (see [`ContentMode`]), then `mask` to every string that
    /// came from the caller: `machine`, `session`, `device`, `request_id`, and every member name
    /// and string value of `detail`. `v`, `seq`, `ts`, `event`, `prev` and `hash` are made here and
    /// never hold caller text. `ts` is converted to UTC and written as
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    pub fn render(
        &self,
        rec: &AuditRecord,
        ts: OffsetDateTime,
        mode: ContentMode,
        mask: &dyn Fn(&str) -> String,
    ) -> RenderedLine {
        let ts = crate::rfc3339::format_millis(ts);
        let machine = mask(&rec.machine);
        let session = rec.session.as_deref().map(mask);
        let device = rec.device.as_deref().map(mask);
        let request_id = rec.request_id.as_deref().map(mask);
        let (bytes, hash) = encode(Fields {
            seq: self.next_seq,
            ts: &ts,
            event: rec.event.as_str(),
            machine: &machine,
            session: session.as_deref(),
            device: device.as_deref(),
            request_id: request_id.as_deref(),
            detail: render_detail(&rec.detail, mode, mask),
            prev: &self.prev_hash,
        });
        RenderedLine {
            bytes,
            seq: self.next_seq,
            hash,
        }
    }

    /// Advances the chain past `line`, which the caller has just appended. `line` must be the
    /// latest line rendered from this chain.
    pub fn commit(&mut self, line: &RenderedLine) {
        debug_assert_eq!(
            line.seq, self.next_seq,
            "committing a line of another chain state"
        );
        self.next_seq = line.seq.saturating_add(1);
        self.prev_hash.clone_from(&line.hash);
    }
}

/// One rendered line, ready to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedLine {
    bytes: Vec<u8>,
    seq: u64,
    hash: String,
}

impl RenderedLine {
    /// The line's bytes, ending in `\n`.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The line's `seq`.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The line's `hash`.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The chain tail this line becomes once committed.
    pub fn tail(&self) -> ChainTail {
        ChainTail {
            seq: self.seq,
            hash: self.hash.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};
    use sha2::{Digest, Sha256};
    use time::macros::datetime;

    use super::*;
    use crate::audit::AuditEventKind;

    fn identity(s: &str) -> String {
        s.to_owned()
    }

    fn record() -> AuditRecord {
        AuditRecord::new(AuditEventKind::PaneInput, "web-1")
            .with_device("phone")
            .with_request_id("req-1")
            .with_detail("keys", json!(["Enter"]))
            .with_detail("pane", "t0-3")
            .with_detail("text", "ls")
    }

    #[test]
    fn first_line_known_answer() {
        let ts = datetime!(2025-01-02 04:04:05.006789 +01:00);
        let line = AuditChain::resume(None).render(&record(), ts, ContentMode::Preview, &identity);

        // The documented rule, computed here from scratch.
        let zeros = "0".repeat(64);
        let body = format!(
            concat!(
                r#"{{"v":1,"seq":1,"ts":"2025-01-02T03:04:05.006Z","event":"pane.input","#,
                r#""machine":"web-1","session":null,"device":"phone","request_id":"req-1","#,
                r#""detail":{{"keys":["Enter"],"pane":"t0-3","text":"••"}},"prev":"{zeros}"}}"#
            ),
            zeros = zeros
        );
        let mut hasher = Sha256::new();
        hasher.update(zeros.as_bytes());
        hasher.update(body.as_bytes());
        let hash = hex::encode(hasher.finalize());
        let expected = format!("{},\"hash\":\"{hash}\"}}\n", &body[..body.len() - 1]);

        assert_eq!(String::from_utf8(line.bytes().to_vec()).unwrap(), expected);
        assert_eq!(line.seq(), 1);
        assert_eq!(line.hash(), hash);
    }

    #[test]
    fn members_come_in_the_fixed_order() {
        let line = AuditChain::resume(None).render(
            &record(),
            OffsetDateTime::UNIX_EPOCH,
            ContentMode::Preview,
            &identity,
        );
        let text = String::from_utf8(line.bytes().to_vec()).unwrap();
        let order = [
            "\"v\":",
            "\"seq\":",
            "\"ts\":",
            "\"event\":",
            "\"machine\":",
            "\"session\":",
            "\"device\":",
            "\"request_id\":",
            "\"detail\":",
            "\"prev\":",
            "\"hash\":",
        ];
        let positions: Vec<usize> = order.iter().map(|m| text.find(m).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(text.contains("\"ts\":\"1970-01-01T00:00:00.000Z\""));
    }

    #[test]
    fn commit_advances_and_resume_continues() {
        let mut chain = AuditChain::resume(None);
        assert_eq!(chain.tail(), None);
        let ts = OffsetDateTime::UNIX_EPOCH;
        let first = chain.render(&record(), ts, ContentMode::Preview, &identity);
        // Rendering alone changes nothing.
        assert_eq!(chain, AuditChain::resume(None));
        chain.commit(&first);
        assert_eq!(chain.tail(), Some(first.tail()));
        assert_eq!(chain.next_seq(), 2);

        let second = chain.render(&record(), ts, ContentMode::Preview, &identity);
        let resumed = AuditChain::resume(Some(first.tail()));
        assert_eq!(
            resumed.render(&record(), ts, ContentMode::Preview, &identity),
            second
        );
        let parsed: Value = serde_json::from_slice(second.bytes()).unwrap();
        assert_eq!(parsed["seq"], json!(2));
        assert_eq!(parsed["prev"], json!(first.hash()));
    }

    #[test]
    fn mask_applies_to_caller_strings_only() {
        let mask = |s: &str| s.replace('e', "•");
        let rec = record().with_session("sess");
        let line = AuditChain::resume(None).render(
            &rec,
            OffsetDateTime::UNIX_EPOCH,
            ContentMode::None,
            &mask,
        );
        let parsed: Value = serde_json::from_slice(line.bytes()).unwrap();
        assert_eq!(parsed["event"], json!("pane.input"));
        assert_eq!(parsed["machine"], json!("w•b-1"));
        assert_eq!(parsed["session"], json!("s•ss"));
        assert_eq!(parsed["device"], json!("phon•"));
        assert_eq!(parsed["request_id"], json!("r•q-1"));
        assert_eq!(
            parsed["detail"],
            json!({"k•ys": ["Ent•r"], "pan•": "t0-3", "t•xt": "[r•dact•d]"})
        );
    }

    #[test]
    fn strings_with_quotes_and_newlines_stay_on_one_line() {
        let rec = AuditRecord::new(AuditEventKind::PaneRename, "m\n\"x\"")
            .with_detail("name", "a\nb\u{2028}\u{0}");
        let line = AuditChain::resume(None).render(
            &rec,
            OffsetDateTime::UNIX_EPOCH,
            ContentMode::Preview,
            &identity,
        );
        let bytes = line.bytes();
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
        let parsed: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(parsed["machine"], json!("m\n\"x\""));
        assert_eq!(parsed["detail"]["name"], json!("a\nb\u{2028}\u{0}"));
    }
}
