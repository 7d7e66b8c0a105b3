//! The text of the service definitions, as pure functions of a [`ServiceSpec`]: the systemd user
//! unit (Linux) and the launchd agent (macOS). Nothing here touches the disk or a service manager,
//! so every escape is unit-tested on any machine.

use std::path::PathBuf;

/// What the service runs: the same bridge `collie bridge` starts in the shell that installs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceSpec {
    /// The service's name: `collie`, or `collie-<instance>` with `COLLIE_INSTANCE`.
    pub name: String,
    /// The absolute path of the `collie` binary that installs the service.
    pub program: PathBuf,
    /// Its arguments (`bridge`).
    pub args: Vec<String>,
    /// Variables carried from the installing shell (see `spec::carried`), in order.
    pub env: Vec<(String, String)>,
    /// `<config>/.env`, read by the service manager where it can (systemd) besides the bridge's
    /// own reading of it.
    pub env_file: PathBuf,
    /// Where launchd writes the bridge's output (systemd has the journal).
    pub log_file: PathBuf,
}

/// A value that cannot be written into a service definition.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum UnitError {
    /// A line break or another control character would end the setting or hide a second one.
    #[error("{what} holds a control character; a service definition cannot carry it")]
    ControlCharacter {
        /// The path or variable.
        what: String,
    },
    /// A path that is not valid UTF-8 cannot be written faithfully.
    #[error("{what} is not valid UTF-8")]
    NotUtf8 {
        /// The path.
        what: String,
    },
}

fn checked<'a>(what: &str, s: &'a str) -> Result<&'a str, UnitError> {
    if s.chars().any(char::is_control) {
        return Err(UnitError::ControlCharacter { what: what.into() });
    }
    Ok(s)
}

fn path_str<'a>(what: &str, p: &'a std::path::Path) -> Result<&'a str, UnitError> {
    let s = p
        .to_str()
        .ok_or_else(|| UnitError::NotUtf8 { what: what.into() })?;
    checked(what, s)
}

/// One word of a systemd command line: as it is when it holds only plain characters, else in
/// double quotes with `\` and `"` escaped. `%` (a specifier) and `$` (a variable) are doubled
/// either way, so a path holding them runs as written.
#[cfg(any(test, not(target_os = "macos")))]
fn exec_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c));
    if plain {
        return s.to_owned();
    }
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An `Environment=` assignment, quoted: systemd expands specifiers (`%`) there but not `$`.
#[cfg(any(test, not(target_os = "macos")))]
fn env_assignment(name: &str, value: &str) -> String {
    let mut out = String::from("\"");
    for c in name
        .chars()
        .chain(std::iter::once('='))
        .chain(value.chars())
    {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The systemd user unit for `spec`.
#[cfg(any(test, not(target_os = "macos")))]
pub(crate) fn systemd_unit(spec: &ServiceSpec) -> Result<String, UnitError> {
    let mut exec = vec![exec_word(path_str(
        "the collie binary's path",
        &spec.program,
    )?)];
    for a in &spec.args {
        exec.push(exec_word(checked("an argument", a)?));
    }
    let env_file = path_str("the .env path", &spec.env_file)?.replace('%', "%%");
    let mut env = String::new();
    for (k, v) in &spec.env {
        env.push_str(&format!(
            "Environment={}\n",
            env_assignment(checked(k, k)?, checked(k, v)?)
        ));
    }
    Ok(format!(
        "# Written by `collie service install`; `collie service uninstall` removes it.\n\
         [Unit]\n\
         Description=Collie bridge: reach the terminal panes of this machine from a phone\n\
         # Five failed starts within a minute (a configuration the bridge refuses, a port in use)\n\
         # and systemd stops trying; the reason is in `journalctl --user -u {name}`.\n\
         StartLimitIntervalSec=60\n\
         StartLimitBurst=5\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={exec}\n\
         Restart=on-failure\n\
         RestartSec=5\n\
         # SIGTERM to the bridge alone: it ends its tools and panes itself, in order, and removes\n\
         # its control socket; whatever is left after the timeout is killed.\n\
         KillMode=mixed\n\
         TimeoutStopSec=30\n\
         # The bridge reads this file itself too; here it also gives the bridge the other\n\
         # variables it names (a durable agent's token, for one).\n\
         EnvironmentFile=-{env_file}\n\
         {env}\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        name = spec.name,
        exec = exec.join(" "),
    ))
}

/// `s` with the five XML special characters escaped.
#[cfg(any(test, target_os = "macos"))]
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The launchd agent (a property list) for `spec`. launchd has no environment file: the bridge
/// reads `<config>/.env` itself, which covers every `COLLIE_*` setting.
#[cfg(any(test, target_os = "macos"))]
pub(crate) fn launchd_plist(spec: &ServiceSpec) -> Result<String, UnitError> {
    let mut args = format!(
        "    <string>{}</string>\n",
        xml(path_str("the collie binary's path", &spec.program)?)
    );
    for a in &spec.args {
        args.push_str(&format!(
            "    <string>{}</string>\n",
            xml(checked("an argument", a)?)
        ));
    }
    let mut env = String::new();
    for (k, v) in &spec.env {
        env.push_str(&format!(
            "    <key>{}</key>\n    <string>{}</string>\n",
            xml(checked(k, k)?),
            xml(checked(k, v)?)
        ));
    }
    let log = xml(path_str("the log file's path", &spec.log_file)?);
    Ok(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \
         \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <!-- Written by `collie service install`; `collie service uninstall` removes it. -->\n\
         <plist version=\"1.0\">\n\
         <dict>\n\
         \x20 <key>Label</key>\n\
         \x20 <string>{label}</string>\n\
         \x20 <key>ProgramArguments</key>\n\
         \x20 <array>\n\
         {args}\
         \x20 </array>\n\
         \x20 <key>EnvironmentVariables</key>\n\
         \x20 <dict>\n\
         {env}\
         \x20 </dict>\n\
         \x20 <key>RunAtLoad</key>\n\
         \x20 <true/>\n\
         \x20 <key>KeepAlive</key>\n\
         \x20 <dict>\n\
         \x20   <key>SuccessfulExit</key>\n\
         \x20   <false/>\n\
         \x20 </dict>\n\
         \x20 <key>ThrottleInterval</key>\n\
         \x20 <integer>5</integer>\n\
         \x20 <key>StandardOutPath</key>\n\
         \x20 <string>{log}</string>\n\
         \x20 <key>StandardErrorPath</key>\n\
         \x20 <string>{log}</string>\n\
         </dict>\n\
         </plist>\n",
        label = xml(&spec.name),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ServiceSpec {
        ServiceSpec {
            name: "collie".into(),
            program: "/home/ann/.cargo/bin/collie".into(),
            args: vec!["bridge".into()],
            env: vec![("PATH".into(), "/home/ann/bin:/usr/bin".into())],
            env_file: "/home/ann/.config/collie/.env".into(),
            log_file: "/home/ann/Library/Logs/collie.log".into(),
        }
    }

    #[test]
    fn the_unit_runs_this_binary_s_bridge_restarts_it_on_failure_and_reads_the_env_file() {
        let unit = systemd_unit(&spec()).expect("unit");
        for line in [
            "ExecStart=/home/ann/.cargo/bin/collie bridge",
            "Restart=on-failure",
            "EnvironmentFile=-/home/ann/.config/collie/.env",
            "Environment=\"PATH=/home/ann/bin:/usr/bin\"",
            "WantedBy=default.target",
        ] {
            assert!(unit.lines().any(|l| l == line), "{line} in\n{unit}");
        }
    }

    #[test]
    fn odd_characters_in_paths_and_values_are_escaped_not_interpreted() {
        let mut s = spec();
        s.program = "/opt/my tools/100%/$HOME/collie".into();
        s.env = vec![("COLLIE_STATE_DIR".into(), "/srv/a \"b\" 50%\\c".into())];
        s.env_file = "/etc/50%/.env".into();
        let unit = systemd_unit(&s).expect("unit");
        assert!(
            unit.contains("ExecStart=\"/opt/my tools/100%%/$$HOME/collie\" bridge"),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=\"COLLIE_STATE_DIR=/srv/a \\\"b\\\" 50%%\\\\c\""),
            "{unit}"
        );
        assert!(unit.contains("EnvironmentFile=-/etc/50%%/.env"), "{unit}");
    }

    #[test]
    fn a_line_break_is_refused_rather_than_written_as_a_second_setting() {
        let mut s = spec();
        s.env = vec![("PATH".into(), "/bin\nExecStartPre=/bin/evil".into())];
        assert_eq!(
            systemd_unit(&s),
            Err(UnitError::ControlCharacter {
                what: "PATH".into()
            })
        );
        let mut s = spec();
        s.program = "/bin/col\nlie".into();
        assert!(systemd_unit(&s).is_err());
        assert!(launchd_plist(&s).is_err());
    }

    #[test]
    fn the_launchd_agent_names_the_program_its_environment_and_restarts_on_failure() {
        let mut s = spec();
        s.env.push(("COLLIE_STATE_DIR".into(), "/a<b>&c".into()));
        let plist = launchd_plist(&s).expect("plist");
        assert!(plist
            .contains("<string>/home/ann/.cargo/bin/collie</string>\n    <string>bridge</string>"));
        assert!(
            plist.contains("<key>COLLIE_STATE_DIR</key>\n    <string>/a&lt;b&gt;&amp;c</string>")
        );
        assert!(plist.contains("<key>SuccessfulExit</key>\n    <false/>"));
        assert!(plist.contains("<string>collie</string>"));
    }
}
