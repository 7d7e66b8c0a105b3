//! Fuzz tests of `config.toml`'s reader (docs/decisions/0063): the file's text (at most
//! [`MAX_CONFIG_BYTES`], cut before it is parsed) read by [`parse`]. Arbitrary text and damaged
//! valid files: never a panic, a refusal is a [`ConfigFileError`] whose message says what to
//! change, and the valid file reads as what it says.

use proptest::prelude::*;

use super::file::{parse, ConfigFileError, MAX_CONFIG_BYTES};
use crate::fuzzing::{arbitrary, mutated, text_of};

/// A file that uses every table and both shapes of each list entry.
const VALID: &str = r#"schema_version = 1
name = "web-1"
public_url = "https://laptop.tail0.ts.net/"
workspaces = ["~/code", { path = "/srv/docs", access = "read" }]

[tmux]
sockets = ["/tmp/tmux-1000/work"]

[crew]
address = "[fd7a::1]:7421"
tools = false

[hooks]
hold = 600

[push]
services = ["ntfy.example.org", { host = "127.0.0.1", ca_file = "ca.pem" }]

[phone]
run = true
adds = false
free_text = true

[[starters]]
name = "Claude"
exec = "claude"
args = ["--verbose"]
agent = "claude"
model = "opus"
no_prompts = true
"#;

fn read(text: &str) -> Result<(), TestCaseError> {
    prop_assert!(text.len() as u64 <= MAX_CONFIG_BYTES);
    if let Err(e) = parse(text) {
        let message = e.to_string();
        prop_assert!(!message.is_empty());
        if let ConfigFileError::Version(m) = &e {
            prop_assert!(m.contains("schema_version"), "{m}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(bytes in arbitrary(256)) {
        read(&text_of(bytes))?;
    }

    #[test]
    fn damaged_files_read_or_are_refused(bytes in mutated(VALID.as_bytes().to_vec())) {
        read(&text_of(bytes))?;
    }
}

#[test]
fn the_valid_file_reads_as_written() {
    let c = parse(VALID).expect("valid");
    assert_eq!(c.schema_version, Some(1));
    assert_eq!(c.name.as_deref(), Some("web-1"));
    assert_eq!(c.workspaces.as_ref().map(Vec::len), Some(2));
    assert_eq!(c.push.services.len(), 2);
    assert_eq!(c.hooks.hold, Some(600));
    assert_eq!(c.crew.tools, Some(false));
    assert_eq!(c.phone.adds, Some(false));
    assert_eq!(c.starters.len(), 1);
    assert!(c.starters[0].no_prompts);
    assert_eq!(c.tmux.sockets.len(), 1);
}
