//! Migration diagnostics (SPEC §12, seed 001): a key of an older or neighbouring shape is refused
//! with what replaced it, before the schema's own "unknown field" could answer it with a list.
//!
//! The table is the whole of it: each row names a key as written (`table.key`, and `starters.key`
//! for any row of `[[starters]]`) and the sentence that says what to write instead.

/// A key of an older shape, and what replaced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Migrated {
    /// The key, dotted (`tmux.socket`).
    pub key: String,
    /// What to write instead.
    pub instead: &'static str,
}

/// Keys no longer read, and what to write instead.
const REPLACED: &[(&str, &str)] = &[
    ("version", "write `schema_version = 1`"),
    ("workspace", "workspaces are a list: `workspaces = [\"~/code\"]`"),
    ("tmux.socket", "a list: `[tmux] sockets = [\"/path/to/socket\"]`"),
    ("hooks.timeout", "`[hooks] hold = SECONDS` (how long a held permission waits)"),
    ("hooks.hold_seconds", "`[hooks] hold = SECONDS`"),
    ("phone.commands", "`[phone] run = true|false` (one-shot commands)"),
    ("phone.one_shot", "`[phone] run = true|false`"),
    ("phone.add_starters", "`[phone] adds = true|false`"),
    ("phone.freetext", "`[phone] free_text = true|false`"),
    ("push.service", "a list: `[push] services = [\"push.example.org\"]`"),
    (
        "executables",
        "executables are pinned by `collie apply` now: name each in a `[[starters]]` row \
         (`exec = …`) and run `collie apply`",
    ),
    (
        "approvals",
        "there is no approval list: `collie apply` resolves and pins every `[[starters]]` executable",
    ),
    ("starter", "`[[starters]]` (an array of tables, one per starter)"),
    ("starters.command", "`exec` (the executable) and `args` (its fixed arguments)"),
    ("starters.cmd", "`exec` (the executable) and `args` (its fixed arguments)"),
    ("starters.program", "`exec`"),
    ("starters.arguments", "`args`"),
    ("starters.skip_permissions", "`no_prompts = true`"),
    ("starters.dangerous", "`no_prompts = true`"),
    ("starters.yolo", "`no_prompts = true`"),
    ("host", "set `COLLIE_HOST` in the environment or in `<config>/.env`"),
    ("port", "set `COLLIE_PORT` in the environment or in `<config>/.env`"),
    ("state_dir", "set `COLLIE_STATE_DIR` in the environment or in `<config>/.env`"),
    ("redact", "set `COLLIE_REDACT=on|off` in the environment or in `<config>/.env`"),
    ("sandbox_mode", "`[sandbox] profile = \"off\" | \"workspace\"`"),
    ("sandbox.mode", "`profile = \"off\" | \"workspace\"`"),
    (
        "sandbox.writable_roots",
        "the writable folders are the `workspaces` (`access = \"write\"`); `[sandbox] read_only` \
         lists extra readable ones",
    ),
    (
        "sandbox.workspaces",
        "`workspaces` is a top-level key; the sandbox uses each workspace's `access`",
    ),
    ("sandbox.network_access", "`network = \"none\" | \"local\" | \"any\"`"),
    ("sandbox.ports", "`local_ports = [PORT, …]` with `network = \"local\"`"),
    ("sandbox.memory", "`memory_mb`"),
    ("sandbox.timeout", "`timeout_s`"),
    ("sandbox.max_processes", "`processes`"),
];

/// Refuses the first key of `table` that [`REPLACED`] names.
pub(super) fn check(table: &toml::Table) -> Result<(), Migrated> {
    for (key, value) in table {
        refuse(key)?;
        match value {
            toml::Value::Table(inner) => {
                for sub in inner.keys() {
                    refuse(&format!("{key}.{sub}"))?;
                }
            }
            toml::Value::Array(rows) => {
                for row in rows {
                    if let toml::Value::Table(inner) = row {
                        for sub in inner.keys() {
                            refuse(&format!("{key}.{sub}"))?;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn refuse(key: &str) -> Result<(), Migrated> {
    match REPLACED.iter().find(|(old, _)| *old == key) {
        Some((_, instead)) => Err(Migrated {
            key: key.to_owned(),
            instead,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::file::parse;
    use super::*;

    #[test]
    fn every_replaced_key_is_refused_with_its_replacement() {
        for (key, instead) in REPLACED {
            let text = match key.split_once('.') {
                None => format!("schema_version = 1\n{key} = 1\n"),
                Some(("starters", sub)) => {
                    format!("schema_version = 1\n[[starters]]\nname = \"a\"\n{sub} = 1\n")
                }
                Some((table, sub)) => format!("schema_version = 1\n[{table}]\n{sub} = 1\n"),
            };
            let err = parse(&text).expect_err(key).to_string();
            assert!(err.contains(&format!("`{key}`")), "{key}: {err}");
            assert!(err.contains(instead), "{key}: {err}");
        }
    }

    #[test]
    fn an_unknown_key_is_named_and_a_version_is_required() {
        let err = parse("schema_version = 1\n[phone]\nwalk = true\n")
            .expect_err("unknown")
            .to_string();
        assert!(err.contains("walk"), "{err}");
        let err = parse("[phone]\nrun = true\n")
            .expect_err("no version")
            .to_string();
        assert!(err.contains("schema_version = 1"), "{err}");
        let err = parse("schema_version = 2\n")
            .expect_err("newer")
            .to_string();
        assert!(err.contains("schema_version = 2"), "{err}");
        let file = parse(
            "schema_version = 1\nworkspaces = [\"~/a\", { path = \"/b\", access = \"read\" }]\n",
        )
        .expect("valid");
        let ws = file.workspaces.expect("workspaces");
        assert_eq!(ws.len(), 2);
        assert_eq!(ws[1].access(), super::super::file::Access::Read);
    }
}
