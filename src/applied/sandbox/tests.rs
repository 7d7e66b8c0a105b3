//! `[sandbox]`'s reading, checks and resolution: each refusal is tried with the configuration
//! that would break it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use collie_sandbox::{Network, PathAccess, Preset};

use super::SandboxResolved;
use crate::applied::diff::differences;
use crate::applied::resolve::{resolve, ResolveEnv, ResolveError, Resolved};
use crate::config::parse_config;

/// A home, Collie's state and config folders, and the agent settings paths, in a temp dir.
struct Machine {
    _dir: tempfile::TempDir,
    root: PathBuf,
    env: ResolveEnv,
}

impl Machine {
    fn new() -> Machine {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        for d in ["home/code", "home/docs", "home/.ssh", "state", "config"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        let home = root.join("home");
        let env = ResolveEnv {
            config_dir: root.join("config"),
            home: Some(home.clone()),
            path: None,
            guarded: vec![root.join("state"), root.join("config")],
            agent_settings: vec![
                home.join(".claude/settings.json"),
                home.join(".codex/hooks.json"),
            ],
            collie: None,
        };
        Machine {
            _dir: dir,
            root,
            env,
        }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn resolve(&self, body: &str) -> Result<Resolved, ResolveError> {
        let text = format!("schema_version = 1\n{body}");
        let file = parse_config(&text).expect("parses");
        resolve(
            &self.env.config_dir.join("config.toml"),
            Some(&text),
            &file,
            &self.env,
        )
    }

    fn sandbox(&self, body: &str) -> SandboxResolved {
        self.resolve(body)
            .expect("resolves")
            .sandbox
            .expect("profile workspace")
    }

    /// The problems of `body`, which must not resolve.
    fn refused(&self, body: &str) -> String {
        match self.resolve(body) {
            Ok(r) => panic!("resolved although it must not: {r:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn touch(&self, rel: &str) -> PathBuf {
        let p = self.home().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, "x").expect("write");
        p
    }
}

const WS: &str = "workspaces = [\"~/code\", { path = \"~/docs\", access = \"read\" }]\n";

fn rule<'a>(s: &'a SandboxResolved, path: &Path) -> &'a collie_sandbox::PathRule {
    s.policy
        .paths
        .iter()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("no rule for {}: {:#?}", path.display(), s.policy.paths))
}

#[test]
fn off_by_default_and_then_nothing_is_pinned() {
    let m = Machine::new();
    let r = m.resolve(WS).expect("resolves");
    assert_eq!(r.sandbox, None);
    let r = m
        .resolve(&format!(
            "{WS}[sandbox]\nprofile = \"off\"\npreset = \"extended\"\n"
        ))
        .expect("resolves");
    assert_eq!(r.sandbox, None);
    // Off writes nothing new into the snapshot, and a snapshot without the key reads as off.
    let json = serde_json::to_value(&r).expect("encodes");
    assert!(json.get("sandbox").is_none(), "{json}");
    let back: Resolved = serde_json::from_value(json).expect("an older snapshot reads");
    assert_eq!(back.sandbox, None);
}

#[test]
fn the_policy_names_each_path_with_its_origin() {
    let m = Machine::new();
    let tools = m.root.join("tools");
    std::fs::create_dir_all(&tools).expect("mkdir");
    let bashrc = m.touch(".bashrc");
    let claude_settings = m.touch(".claude/settings.json");
    let agent = m.home().join("bin/agent");
    std::fs::create_dir_all(agent.parent().expect("parent")).expect("mkdir");
    std::fs::copy("/bin/sh", &agent).expect("copy sh");
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let collie = m.root.join("collie");
    std::fs::write(&collie, "").expect("write");
    let mut m = m;
    m.env.collie = Some(collie.clone());
    let s = m.sandbox(&format!(
        "{WS}[[starters]]\nname = \"agent\"\nexec = \"{}\"\n[sandbox]\nprofile = \"workspace\"\nread_only = [\"{}\"]\nmemory_mb = 2048\n",
        agent.display(),
        tools.display()
    ));
    let home = m.home();
    let expect = [
        (home.join("code"), PathAccess::Write, "workspace"),
        (home.join("docs"), PathAccess::Read, "workspace"),
        (tools, PathAccess::Read, "read_only"),
        (home.join("bin"), PathAccess::Read, "starter agent"),
        (claude_settings, PathAccess::Read, "agent settings"),
        (bashrc, PathAccess::Read, "home dotfiles"),
        (collie, PathAccess::Read, "collie (hooks)"),
        (PathBuf::from("/usr"), PathAccess::Read, "system"),
        (PathBuf::from("/dev/null"), PathAccess::Device, "system"),
    ];
    for (path, access, from) in expect {
        let r = rule(&s, &path);
        assert_eq!((r.access, r.from.as_str()), (access, from), "{r:?}");
    }
    // Neither /dev as a whole (raw disks) nor a dotfile that does not exist.
    assert!(!s.policy.paths.iter().any(|r| r.path == Path::new("/dev")));
    assert!(!s.policy.paths.iter().any(|r| r.path.ends_with(".zshrc")));
    // /bin is /usr/bin here: readable through /usr, not listed again.
    if std::fs::canonicalize("/bin").is_ok_and(|b| b.starts_with("/usr")) {
        assert!(!s
            .policy
            .paths
            .iter()
            .any(|r| r.path == Path::new("/usr/bin")));
    }
    for r in &s.policy.paths {
        assert!(r.path.is_absolute() && r.path.exists(), "{r:?}");
    }
    assert_eq!(s.policy.network, Network::None, "none unless asked");
    assert_eq!(s.preset, Preset::Normal);
    assert_eq!(s.policy.limits.memory_mb, 2048);
    assert_eq!(s.policy.limits.processes, 16);
    assert_eq!(s.overrides, ["memory_mb"]);
    assert_eq!(s.limit_from("memory_mb"), "[sandbox] memory_mb");
    assert_eq!(s.limit_from("timeout_s"), "preset normal");
    // It needs TCP rules: ABI 4.
    assert_eq!(s.policy.abi_needed(), 4);
}

#[test]
fn a_path_named_twice_is_one_rule_with_the_stronger_access_and_both_origins() {
    let m = Machine::new();
    let agent = m.home().join("code/agent");
    std::fs::copy("/bin/sh", &agent).expect("copy sh");
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let s = m.sandbox(&format!(
        "{WS}[[starters]]\nname = \"a\"\nexec = \"{}\"\n[sandbox]\nprofile = \"workspace\"\nread_only = [\"~/code\"]\n",
        agent.display()
    ));
    let code = m.home().join("code");
    let r = rule(&s, &code);
    assert_eq!(r.access, PathAccess::Write);
    assert_eq!(r.from, "read_only, workspace, starter a");
    assert_eq!(s.policy.paths.iter().filter(|r| r.path == code).count(), 1);
}

#[test]
fn the_home_folder_as_the_default_workspace_is_refused() {
    let m = Machine::new();
    let e = m.refused("[sandbox]\nprofile = \"workspace\"\n");
    assert!(e.contains("needs `workspaces`"), "{e}");
    assert!(e.contains("narrower workspaces"), "{e}");
}

#[test]
fn a_root_that_reaches_ssh_keys_is_refused() {
    let m = Machine::new();
    for body in [
        "workspaces = [\"~\"]\n[sandbox]\nprofile = \"workspace\"\n",
        "workspaces = [{ path = \"~\", access = \"read\" }]\n[sandbox]\nprofile = \"workspace\"\n",
        &format!("{WS}[sandbox]\nprofile = \"workspace\"\nread_only = [\"~\"]\n"),
        &format!("{WS}[sandbox]\nprofile = \"workspace\"\nread_only = [\"~/.ssh\"]\n"),
    ] {
        let e = m.refused(body);
        assert!(e.contains(".ssh"), "{body}: {e}");
        assert!(e.contains("cannot leave a subfolder out"), "{body}: {e}");
    }
    let e = m.refused("workspaces = [\"~\"]\n[sandbox]\nprofile = \"workspace\"\n");
    assert!(e.contains("narrower workspaces"), "{e}");
    // The same configuration without the sandbox is what it was.
    assert!(m.resolve("workspaces = [\"~\"]\n").is_ok());
}

#[test]
fn a_root_that_reaches_collie_s_state_or_config_is_refused() {
    let m = Machine::new();
    // The state folder inside a workspace (COLLIE_STATE_DIR=~/code/.state, say).
    let state = m.home().join("code/.state");
    std::fs::create_dir_all(&state).expect("mkdir");
    let mut m = m;
    m.env.guarded = vec![state.clone()];
    let e = m.refused(&format!("{WS}[sandbox]\nprofile = \"workspace\"\n"));
    assert!(e.contains(&state.display().to_string()), "{e}");
    assert!(e.contains("state or config"), "{e}");
    // Reached through a read-only root above it.
    let m = Machine::new();
    let e = m.refused(&format!(
        "{WS}[sandbox]\nprofile = \"workspace\"\nread_only = [\"{}\"]\n",
        m.root.display()
    ));
    assert!(
        e.contains(&m.root.join("state").display().to_string()),
        "{e}"
    );
}

#[test]
fn a_writable_root_holding_agent_settings_is_refused_a_readable_one_is_not() {
    let m = Machine::new();
    m.touch(".claude/settings.json");
    let e = m.refused("workspaces = [\"~/.claude\"]\n[sandbox]\nprofile = \"workspace\"\n");
    assert!(e.contains("settings.json"), "{e}");
    assert!(e.contains("agent settings"), "{e}");
    // The same folder read-only is fine: the settings stay readable, never writable.
    let s = m.sandbox(
        "workspaces = [{ path = \"~/.claude\", access = \"read\" }]\n[sandbox]\nprofile = \"workspace\"\n",
    );
    assert_eq!(rule(&s, &m.home().join(".claude")).access, PathAccess::Read);
    // A settings file that does not exist yet is guarded too: a writable root could create it.
    std::fs::create_dir_all(m.home().join(".codex")).expect("mkdir");
    let e = m.refused("workspaces = [\"~/.codex\"]\n[sandbox]\nprofile = \"workspace\"\n");
    assert!(e.contains("hooks.json"), "{e}");
}

#[test]
fn network_and_ports_are_checked() {
    let m = Machine::new();
    let base = format!("{WS}[sandbox]\nprofile = \"workspace\"\n");
    let s = m.sandbox(&format!(
        "{base}network = \"local\"\nlocal_ports = [8080, 5432, 8080]\n"
    ));
    assert_eq!(
        s.policy.network,
        Network::Local {
            ports: vec![5432, 8080]
        }
    );
    assert_eq!(
        m.sandbox(&format!("{base}network = \"any\"\n"))
            .policy
            .abi_needed(),
        1
    );
    for (body, says) in [
        (
            "local_ports = [5432]\n",
            "only applies with network = \"local\"",
        ),
        (
            "network = \"none\"\nlocal_ports = [5432]\n",
            "only applies with network = \"local\"",
        ),
        (
            "network = \"any\"\nlocal_ports = [5432]\n",
            "(network is \"any\")",
        ),
        ("network = \"local\"\n", "needs `local_ports`"),
        ("network = \"local\"\nlocal_ports = []\n", "1 to 64 ports"),
        ("network = \"local\"\nlocal_ports = [0]\n", "got 0"),
    ] {
        let e = m.refused(&format!("{base}{body}"));
        assert!(e.contains(says), "{body}: {e}");
    }
    // The same mistakes are refused with the sandbox off: a typo is not kept for later.
    let e = m.refused(&format!("{WS}[sandbox]\nlocal_ports = [22]\n"));
    assert!(e.contains("local_ports"), "{e}");
    // A port past 65535 is not a port at all.
    let text = "schema_version = 1\n[sandbox]\nnetwork = \"local\"\nlocal_ports = [70000]\n";
    assert!(parse_config(text).is_err());
    let many: Vec<String> = (1..=65).map(|p| p.to_string()).collect();
    let e = m.refused(&format!(
        "{base}network = \"local\"\nlocal_ports = [{}]\n",
        many.join(", ")
    ));
    assert!(e.contains("got 65"), "{e}");
}

#[test]
fn limits_are_bounded_and_each_override_is_named() {
    let m = Machine::new();
    let base = format!("{WS}[sandbox]\nprofile = \"workspace\"\n");
    let e = m.refused(&format!(
        "{base}memory_mb = 0\nprocesses = 0\ntimeout_s = 0\n"
    ));
    for key in [
        "memory_mb must be 1 to",
        "processes must be 1 to",
        "timeout_s must be 1 to",
    ] {
        assert!(e.contains(key), "{e}");
    }
    let e = m.refused(&format!(
        "{base}memory_mb = 99999999\ntimeout_s = 99999999\n"
    ));
    assert!(e.contains("got 99999999"), "{e}");
    let e = m.refused(&format!("{base}processes = 1000000\n"));
    assert!(e.contains("processes must be 1 to 65536"), "{e}");
    let s = m.sandbox(&format!(
        "{base}preset = \"constrained\"\nprocesses = 64\ntimeout_s = 600\n"
    ));
    assert_eq!(s.preset, Preset::Constrained);
    assert_eq!(
        (
            s.policy.limits.memory_mb,
            s.policy.limits.processes,
            s.policy.limits.timeout_s
        ),
        (1024, 64, 600)
    );
    assert_eq!(s.overrides, ["processes", "timeout_s"]);
    let texts = s.limit_texts();
    assert_eq!(
        texts[0],
        (
            "memory_mb",
            "1024 MiB".to_owned(),
            "preset constrained".to_owned()
        )
    );
    assert_eq!(texts[1].2, "[sandbox] processes");
}

#[test]
fn unknown_keys_and_values_are_named() {
    for (body, says) in [
        ("[sandbox]\nprofil = \"workspace\"\n", "profil"),
        ("[sandbox]\nprofile = \"strict\"\n", "strict"),
        ("[sandbox]\nnetwork = \"lan\"\n", "lan"),
        ("[sandbox]\npreset = \"huge\"\n", "huge"),
        ("[sandbox]\nmemory_mb = -1\n", "memory_mb"),
    ] {
        let e = parse_config(&format!("schema_version = 1\n{body}"))
            .expect_err("refused")
            .to_string();
        assert!(e.contains(says), "{body}: {e}");
    }
}

#[test]
fn read_only_roots_are_absolute_and_must_exist() {
    let m = Machine::new();
    let base = format!("{WS}[sandbox]\nprofile = \"workspace\"\n");
    let e = m.refused(&format!("{base}read_only = [\"opt/rust\"]\n"));
    assert!(e.contains("an absolute path"), "{e}");
    let e = m.refused(&format!("{base}read_only = [\"/no/such/toolchain\"]\n"));
    assert!(e.contains("/no/such/toolchain"), "{e}");
    let many: Vec<String> = (0..65).map(|_| "\"/usr\"".to_owned()).collect();
    let e = m.refused(&format!("{base}read_only = [{}]\n", many.join(", ")));
    assert!(e.contains("at most 64"), "{e}");
}

#[test]
fn apply_names_what_changed_in_the_sandbox() {
    let m = Machine::new();
    let off = m.resolve(WS).expect("resolves");
    let on = m
        .resolve(&format!("{WS}[sandbox]\nprofile = \"workspace\"\n"))
        .expect("resolves");
    let text: Vec<String> = differences(Some(&off), &on)
        .iter()
        .map(ToString::to_string)
        .collect();
    let sandbox = text
        .iter()
        .find(|t| t.starts_with("+ sandbox"))
        .expect("named");
    assert!(sandbox.contains("network none"), "{sandbox}");
    assert!(sandbox.contains("(write; workspace)"), "{sandbox}");
    assert!(
        sandbox.contains("memory_mb 4096 MiB (preset normal)"),
        "{sandbox}"
    );
    let any = m
        .resolve(&format!(
            "{WS}[sandbox]\nprofile = \"workspace\"\nnetwork = \"any\"\ntimeout_s = 60\n"
        ))
        .expect("resolves");
    let text: Vec<String> = differences(Some(&on), &any)
        .iter()
        .map(ToString::to_string)
        .collect();
    let changed = text
        .iter()
        .find(|t| t.starts_with("~ sandbox"))
        .expect("named");
    assert!(changed.contains("network none → any"), "{changed}");
    assert!(
        changed.contains("timeout_s 1800 s (preset normal) → 60 s ([sandbox] timeout_s)"),
        "{changed}"
    );
    // A dotfile that appears is a difference too: the pinned policy no longer matches.
    let bashrc = m.touch(".bashrc");
    let now = m
        .resolve(&format!("{WS}[sandbox]\nprofile = \"workspace\"\n"))
        .expect("resolves");
    let text: Vec<String> = differences(Some(&on), &now)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        text.iter().any(|t| t.contains(&format!(
            "+ path {} (read; home dotfiles)",
            bashrc.display()
        ))),
        "{text:?}"
    );
    let text: Vec<String> = differences(Some(&on), &off)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(text.iter().any(|t| t.starts_with("- sandbox")), "{text:?}");
}
