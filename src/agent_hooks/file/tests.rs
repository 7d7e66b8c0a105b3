use std::os::unix::fs::symlink;

use serde_json::json;

use super::*;

fn mode_of(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_missing_file_is_an_empty_object_and_is_created_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/.claude/settings.json");
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.doc, json!({}));
    assert!(!loaded.existed);

    store(&loaded, &json!({ "a": 1 })).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "{\n  \"a\": 1\n}\n");
    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(mode_of(path.parent().unwrap()), 0o700);
    assert_eq!(mode_of(&dir.path().join("new")), 0o700);
}

#[test]
fn the_files_mode_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    fs::write(&path, "{}").unwrap();
    fs::set_permissions(&path, Permissions::from_mode(0o640)).unwrap();
    let loaded = load(&path).unwrap();
    assert!(loaded.existed);
    store(&loaded, &json!({ "b": [] })).unwrap();
    assert_eq!(mode_of(&path), 0o640);
    assert_eq!(
        serde_json::from_slice::<Value>(&fs::read(&path).unwrap()).unwrap(),
        json!({ "b": [] })
    );
    assert_eq!(names_in(dir.path()), ["settings.json"]);
}

#[test]
fn an_empty_file_holds_no_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    fs::write(&path, " \n").unwrap();
    assert_eq!(load(&path).unwrap().doc, json!({}));
}

#[test]
fn what_cannot_be_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();

    let big = dir.path().join("big.json");
    let f = File::create(&big).unwrap();
    f.set_len(MAX_SETTINGS_BYTES + 1).unwrap();
    assert!(matches!(load(&big), Err(FileError::TooLarge)));
    let at_limit = dir.path().join("at-limit.json");
    let mut text = b"{}".to_vec();
    text.resize(MAX_SETTINGS_BYTES as usize, b' ');
    fs::write(&at_limit, &text).unwrap();
    assert_eq!(load(&at_limit).unwrap().doc, json!({}));

    let bad = dir.path().join("bad.json");
    fs::write(&bad, "{ \"a\": ").unwrap();
    let err = load(&bad).unwrap_err();
    assert!(matches!(err, FileError::Parse(_)), "{err:?}");
    assert!(err.to_string().starts_with("not valid JSON: "), "{err}");

    assert!(matches!(load(dir.path()), Err(FileError::NotAFile)));

    let dangling = dir.path().join("dangling.json");
    symlink(dir.path().join("nowhere.json"), &dangling).unwrap();
    assert!(matches!(load(&dangling), Err(FileError::DanglingLink)));
}

#[test]
fn a_link_is_followed_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles-settings.json");
    fs::write(&real, "{\"x\": 1}").unwrap();
    let link = dir.path().join("settings.json");
    symlink(&real, &link).unwrap();

    let loaded = load(&link).unwrap();
    store(&loaded, &json!({ "x": 2 })).unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        serde_json::from_slice::<Value>(&fs::read(&real).unwrap()).unwrap(),
        json!({ "x": 2 })
    );
}

#[test]
fn a_failure_at_any_step_leaves_the_old_file_byte_for_byte() {
    let original = b"{\"keep\":   [1,2,3]}\n";
    for step in [
        Step::CreateTemp,
        Step::Write,
        Step::SetMode,
        Step::Sync,
        Step::Recheck,
        Step::Rename,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(&path, original).unwrap();
        fs::set_permissions(&path, Permissions::from_mode(0o640)).unwrap();
        let loaded = load(&path).unwrap();

        let err = store_with(&loaded, &json!({ "new": true }), &mut |at| {
            if at == step {
                Err(io::Error::other("injected"))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert!(
            matches!(err, FileError::Write { step: s, .. } if s == step),
            "{step:?}: {err:?}"
        );
        assert_eq!(fs::read(&path).unwrap(), original, "{step:?}");
        assert_eq!(mode_of(&path), 0o640, "{step:?}");
        assert_eq!(names_in(dir.path()), ["settings.json"], "{step:?}");
    }
}

#[test]
fn a_failure_creating_the_directory_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".codex/hooks.json");
    let loaded = load(&path).unwrap();
    let err = store_with(&loaded, &json!({}), &mut |at| {
        if at == Step::CreateDir {
            Err(io::Error::other("injected"))
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert!(matches!(
        err,
        FileError::Write {
            step: Step::CreateDir,
            ..
        }
    ));
    assert!(names_in(dir.path()).is_empty());
}

#[test]
fn a_directory_where_the_file_should_be_is_not_replaced() {
    // Also a real failure (no injection), as a root-run test cannot make a file unwritable.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    let loaded = load(&path).unwrap();
    fs::create_dir(&path).unwrap();
    fs::write(path.join("inside"), "x").unwrap();
    let err = store(&loaded, &json!({})).unwrap_err();
    assert!(
        matches!(err, FileError::Write { .. } | FileError::Changed),
        "{err:?}"
    );
    assert_eq!(fs::read_to_string(path.join("inside")).unwrap(), "x");
    assert_eq!(names_in(dir.path()), ["settings.json"]);
}

#[test]
fn a_change_by_someone_else_meanwhile_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    fs::write(&path, "{}").unwrap();
    let loaded = load(&path).unwrap();
    fs::write(&path, "{\"theirs\": 1}").unwrap();
    assert!(matches!(
        store(&loaded, &json!({ "mine": 1 })),
        Err(FileError::Changed)
    ));
    assert_eq!(fs::read_to_string(&path).unwrap(), "{\"theirs\": 1}");
    assert_eq!(names_in(dir.path()), ["settings.json"]);

    // A file that appeared after Collie found none is someone else's too.
    let fresh = dir.path().join("fresh.json");
    let loaded = load(&fresh).unwrap();
    fs::write(&fresh, "{}").unwrap();
    assert!(matches!(
        store(&loaded, &json!({})),
        Err(FileError::Changed)
    ));
}
