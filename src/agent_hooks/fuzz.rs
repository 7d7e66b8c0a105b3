//! Fuzz tests of an agent's settings file as Collie reads it (docs/decisions/0063): the bytes
//! of Claude Code's `settings.json` or Codex's `hooks.json` (at most [`MAX_SETTINGS_BYTES`],
//! checked before reading), then Collie's entry found, put in and taken out. Arbitrary bytes and
//! damaged valid files: never a panic; a refusal is a [`FileError`] or a [`ShapeError`] that
//! leaves the document as it was; a valid file reads back as itself.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::command::recognise;
use super::file::{load, FileError, MAX_SETTINGS_BYTES};
use super::merge::{find, install, uninstall, Hook};
use crate::fuzzing::{arbitrary, mutated};

const EVENT: &str = "PermissionRequest";

fn ours(command: &str) -> bool {
    recognise(command, "claude-permission").is_some()
}

/// A settings file as a person has it, with Collie's hook and one of their own.
fn settings() -> Value {
    json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
            EVENT: [
                {"matcher": "*", "hooks": [
                    {"type": "command", "command": "/usr/bin/collie hook claude-permission", "timeout": 660},
                    {"type": "command", "command": "notify-send asked"}
                ]}
            ]
        }
    })
}

/// What `collie hooks install|uninstall|status` does with the file's bytes.
fn read(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("settings.json");
    std::fs::write(&path, bytes).expect("write the settings file");
    let doc = match load(&path) {
        Ok(loaded) => loaded.doc,
        Err(e) => {
            prop_assert!(matches!(e, FileError::Parse(_)), "{e:?}");
            return Ok(());
        }
    };
    let _ = find(&doc, EVENT, &ours);
    let hook = Hook {
        event: EVENT,
        matcher: "*",
        command: "/new/bin/collie hook claude-permission",
        timeout: 660,
    };
    let mut installed = doc.clone();
    if install(&mut installed, &hook, &ours).is_err() {
        prop_assert_eq!(&installed, &doc, "a refused install changes nothing");
    } else {
        prop_assert_eq!(
            find(&installed, EVENT, &ours),
            Ok(vec![hook.command.to_owned()])
        );
    }
    let mut removed = doc.clone();
    if uninstall(&mut removed, EVENT, &ours).is_err() {
        prop_assert_eq!(&removed, &doc, "a refused uninstall changes nothing");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn arbitrary_files_never_panic(bytes in arbitrary(256)) {
        read(&bytes)?;
    }

    #[test]
    fn damaged_files_are_read_or_refused(
        bytes in mutated(serde_json::to_vec_pretty(&settings()).expect("encodes")),
    ) {
        read(&bytes)?;
    }
}

#[test]
fn a_valid_file_reads_back_as_itself_and_the_cap_is_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("settings.json");
    std::fs::write(&path, serde_json::to_vec(&settings()).expect("encodes")).expect("write");
    assert_eq!(load(&path).expect("valid").doc, settings());
    let big = vec![b' '; usize::try_from(MAX_SETTINGS_BYTES).expect("fits") + 1];
    std::fs::write(&path, big).expect("write");
    assert!(matches!(load(&path), Err(FileError::TooLarge)));
}
