//! `collie version`: this build's version, and what the bridge's last update check said
//! (SPEC §17) — read from the state dir, so it works with the bridge stopped and sends nothing.

use std::process::ExitCode;

use crate::update::{Checked, CURRENT};

pub(super) fn run() -> anyhow::Result<ExitCode> {
    outln!("collie {CURRENT}")?;
    // Settings that do not load (a bad variable) leave just the version: `doctor` says why.
    if let Ok(settings) = super::settings() {
        outln!("{}", update_line(&settings))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The update check in one line, for `version` and `doctor`.
pub(super) fn update_line(settings: &crate::config::Settings) -> String {
    if !settings.update_check {
        return "update check off (COLLIE_UPDATE_CHECK=off): nothing is sent".to_owned();
    }
    match Checked::read(&settings.state_dir) {
        Some(c) => c.summary(),
        None => "update check: not run yet (the bridge checks at start and daily)".to_owned(),
    }
}
