//! Which bridge the service runs: the one `collie bridge` would start in the shell that installs
//! it (decision 0077). A service manager starts programs with an environment of its own, so what
//! decides *where* the bridge keeps its things and *which* programs it finds is carried into the
//! service from the installing shell; the settings themselves live in `<config>/.env` and
//! `config.toml`, which the bridge reads at every start, so a change there and `collie restart` is
//! all a setting needs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::unit::ServiceSpec;

/// Variables carried into the service when the installing shell sets them. The directories
/// decide which state (devices, audit log, crew) and which configuration the service's bridge
/// uses; `TMUX_TMPDIR` decides which tmux server is "the default one"; `PATH` decides which
/// programs a starter or a tool runs — and the applied configuration pins the programs it
/// resolved on this PATH (SPEC §12), so a service with systemd's short default PATH could refuse
/// to start.
pub(crate) const CARRIED: [&str; 7] = [
    "COLLIE_STATE_DIR",
    "COLLIE_CONFIG_DIR",
    "COLLIE_INSTANCE",
    "XDG_STATE_HOME",
    "XDG_CONFIG_HOME",
    "TMUX_TMPDIR",
    "PATH",
];

/// Variables whose values are directories: made absolute, since the service starts elsewhere.
const DIRECTORIES: [&str; 5] = [
    "COLLIE_STATE_DIR",
    "COLLIE_CONFIG_DIR",
    "XDG_STATE_HOME",
    "XDG_CONFIG_HOME",
    "TMUX_TMPDIR",
];

/// The service's name: `collie`, or `collie-<instance>` for a second bridge of the same user
/// (`COLLIE_INSTANCE`, already checked to be `[a-z0-9-]{1,32}` by the settings).
pub(crate) fn service_name(instance: Option<&str>) -> String {
    match instance {
        Some(i) if !i.is_empty() => format!("collie-{i}"),
        _ => "collie".into(),
    }
}

/// The variables of `env` carried into the service, in [`CARRIED`]'s order, directories made
/// absolute against `cwd`.
pub(crate) fn carried(env: &BTreeMap<String, String>, cwd: &Path) -> Vec<(String, String)> {
    CARRIED
        .iter()
        .filter_map(|&k| {
            let v = env.get(k).filter(|v| !v.is_empty())?;
            let v = if DIRECTORIES.contains(&k) {
                cwd.join(v).to_string_lossy().into_owned()
            } else {
                v.clone()
            };
            Some((k.to_owned(), v))
        })
        .collect()
}

/// `COLLIE_*` variables set in the installing shell that the service does not get: they are
/// settings, and a setting belongs in `<config>/.env`, where the service's bridge reads it.
pub(crate) fn left_behind(env: &BTreeMap<String, String>) -> Vec<String> {
    env.keys()
        .filter(|k| k.starts_with("COLLIE_") && !CARRIED.contains(&k.as_str()))
        .cloned()
        .collect()
}

/// The spec of the service for a bridge whose config dir is `config_dir`.
pub(crate) fn spec(
    name: String,
    program: PathBuf,
    env: &BTreeMap<String, String>,
    cwd: &Path,
    config_dir: &Path,
    log_file: PathBuf,
) -> ServiceSpec {
    ServiceSpec {
        name,
        program,
        args: vec!["bridge".into()],
        env: carried(env, cwd),
        env_file: cwd.join(config_dir).join(".env"),
        log_file,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn only_what_decides_where_and_which_programs_is_carried_directories_made_absolute() {
        let e = env(&[
            ("HOME", "/home/ann"),
            ("PATH", "/home/ann/.local/bin:/usr/bin"),
            ("COLLIE_STATE_DIR", "state"),
            ("COLLIE_PORT", "7500"),
            ("TERM", "xterm"),
            ("XDG_CONFIG_HOME", ""),
        ]);
        assert_eq!(
            carried(&e, Path::new("/srv/project")),
            vec![
                (
                    "COLLIE_STATE_DIR".to_owned(),
                    "/srv/project/state".to_owned()
                ),
                (
                    "PATH".to_owned(),
                    "/home/ann/.local/bin:/usr/bin".to_owned()
                ),
            ]
        );
        assert_eq!(left_behind(&e), vec!["COLLIE_PORT".to_owned()]);
    }

    #[test]
    fn a_second_instance_is_a_second_service() {
        assert_eq!(service_name(None), "collie");
        assert_eq!(service_name(Some("")), "collie");
        assert_eq!(service_name(Some("work")), "collie-work");
    }
}
