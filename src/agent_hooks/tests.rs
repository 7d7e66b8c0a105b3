use std::fs;

use serde_json::{json, Value};

use super::*;
use crate::config::DEFAULT_HOLD;

struct Home {
    _dir: tempfile::TempDir,
    paths: Paths,
}

fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths {
        home: dir.path().join("home"),
        cwd: dir.path().join("project"),
        claude_config_dir: None,
        codex_home: None,
    };
    Home { _dir: dir, paths }
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

const EXE: &str = "/opt/collie/bin/collie";

#[test]
fn the_timeout_is_the_default_hold_and_a_minute() {
    assert_eq!(hook_timeout(DEFAULT_HOLD), Duration::from_secs(660));
    assert_eq!(Agent::Claude.timeout(DEFAULT_HOLD), 660);
    assert_eq!(Agent::Codex.timeout(DEFAULT_HOLD), 660);
    assert_eq!(Agent::Claude.timeout(Duration::from_secs(86_400)), 86_460);
}

#[test]
fn each_agent_and_scope_has_its_file() {
    let h = home();
    let p = &h.paths;
    assert_eq!(
        Agent::Claude.settings_file(Scope::User, p),
        p.home.join(".claude/settings.json")
    );
    assert_eq!(
        Agent::Claude.settings_file(Scope::Project, p),
        p.cwd.join(".claude/settings.json")
    );
    assert_eq!(
        Agent::Codex.settings_file(Scope::User, p),
        p.home.join(".codex/hooks.json")
    );
    assert_eq!(
        Agent::Codex.settings_file(Scope::Project, p),
        p.cwd.join(".codex/hooks.json")
    );
    let moved = Paths {
        claude_config_dir: Some(PathBuf::from("/cfg/claude")),
        codex_home: Some(PathBuf::from("/cfg/codex")),
        ..p.clone()
    };
    assert_eq!(
        Agent::Claude.settings_file(Scope::User, &moved),
        PathBuf::from("/cfg/claude/settings.json")
    );
    assert_eq!(
        Agent::Codex.settings_file(Scope::User, &moved),
        PathBuf::from("/cfg/codex/hooks.json")
    );
    assert_eq!(
        Agent::Codex.settings_file(Scope::Project, &moved),
        p.cwd.join(".codex/hooks.json")
    );
}

#[test]
fn install_uninstall_and_status_of_one_file() {
    let h = home();
    let p = &h.paths;
    let exe = Path::new(EXE);
    let file = p.home.join(".codex/hooks.json");

    let change = install(Agent::Codex, Scope::User, p, exe, DEFAULT_HOLD).unwrap();
    assert_eq!(
        change,
        Change {
            agent: Agent::Codex,
            scope: Scope::User,
            path: file.clone(),
            kind: ChangeKind::Installed,
        }
    );
    assert_eq!(
        read(&file),
        json!({ "hooks": { "PermissionRequest": [ { "matcher": "*", "hooks": [
            { "type": "command", "command": "/opt/collie/bin/collie hook codex-permission", "timeout": 660 }
        ] } ] } })
    );
    assert_eq!(
        install(Agent::Codex, Scope::User, p, exe, DEFAULT_HOLD)
            .unwrap()
            .kind,
        ChangeKind::Unchanged
    );

    let states: Vec<(Agent, Scope, State)> = status(p, Some(exe))
        .into_iter()
        .map(|r| (r.agent, r.scope, r.state))
        .collect();
    assert_eq!(
        states,
        [
            (Agent::Claude, Scope::User, State::NotInstalled),
            (Agent::Claude, Scope::Project, State::NotInstalled),
            (Agent::Codex, Scope::User, State::Installed),
            (Agent::Codex, Scope::Project, State::NotInstalled),
        ]
    );
    let elsewhere = status(p, Some(Path::new("/usr/bin/collie")));
    assert_eq!(
        elsewhere[2].state,
        State::OtherPath {
            executable: EXE.to_owned()
        }
    );
    assert_eq!(
        elsewhere[2].state.to_string(),
        "installed (other collie path: /opt/collie/bin/collie)"
    );

    assert_eq!(
        uninstall(Agent::Codex, Scope::User, p).unwrap().kind,
        ChangeKind::Removed
    );
    assert_eq!(read(&file), json!({}));
    assert_eq!(
        uninstall(Agent::Codex, Scope::User, p).unwrap().kind,
        ChangeKind::Unchanged
    );
}

#[test]
fn uninstall_without_a_file_creates_none() {
    let h = home();
    let change = uninstall(Agent::Claude, Scope::Project, &h.paths).unwrap();
    assert_eq!(change.kind, ChangeKind::Unchanged);
    assert!(!change.path.exists());
    assert!(!h.paths.cwd.exists());
}

#[test]
fn a_file_of_the_wrong_shape_is_named_and_left_alone() {
    let h = home();
    let file = h.paths.home.join(".claude/settings.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "{\"hooks\": []}").unwrap();

    let err = install(
        Agent::Claude,
        Scope::User,
        &h.paths,
        Path::new(EXE),
        DEFAULT_HOLD,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}: `hooks` is a list, not an object", file.display())
    );
    assert!(uninstall(Agent::Claude, Scope::User, &h.paths).is_err());
    assert_eq!(fs::read_to_string(&file).unwrap(), "{\"hooks\": []}");
    assert_eq!(
        status(&h.paths, None)[0].state,
        State::Unreadable {
            why: "`hooks` is a list, not an object".to_owned()
        }
    );

    fs::write(&file, "not json").unwrap();
    let err = install(
        Agent::Claude,
        Scope::User,
        &h.paths,
        Path::new(EXE),
        DEFAULT_HOLD,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}: not valid JSON", file.display())),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), "not json");
}

#[test]
fn an_executable_collie_cannot_recognise_is_refused_before_reading() {
    let h = home();
    let err = install(
        Agent::Claude,
        Scope::User,
        &h.paths,
        Path::new("/usr/bin/collie-1.2"),
        DEFAULT_HOLD,
    )
    .unwrap_err();
    assert!(matches!(
        err,
        HooksError::Command(command::CommandError::NotCollie(_))
    ));
    assert!(!h.paths.home.exists());
}

#[test]
fn reports_serialize_flat_with_a_state_tag() {
    let report = Report {
        agent: Agent::Claude,
        scope: Scope::Project,
        path: PathBuf::from("/p/.claude/settings.json"),
        state: State::OtherPath {
            executable: "/x/collie".to_owned(),
        },
    };
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({ "agent": "claude", "scope": "project", "path": "/p/.claude/settings.json",
                "state": "other_path", "executable": "/x/collie" })
    );
}
