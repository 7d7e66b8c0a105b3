//! The last guard of a bench that starts processes under one temp dir.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Dropped last: kills (by pid) any process whose command line or environment still names the
/// bench's temp dir — a tmux server or pane, sshd's session, a bridge — and says so. With every
/// guard of the bench working it finds none. Processes on their way out (a tmux server's panes
/// and their `utempter` just after `kill-server`) get up to 5 s to go by themselves first.
pub(crate) struct Sweep(pub(crate) PathBuf);

impl Drop for Sweep {
    fn drop(&mut self) {
        let found = super::wait_for(Duration::from_secs(5), || {
            let found = naming(&self.0);
            found.is_empty().then_some(())
        });
        let found = if found.is_some() {
            Vec::new()
        } else {
            naming(&self.0)
        };
        if found.is_empty() {
            println!("processes left behind: none");
            return;
        }
        for (pid, cmd) in &found {
            println!("process left behind, killing it: {pid} {}", cmd.trim());
            if let Ok(raw) = i32::try_from(*pid) {
                let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
            }
        }
    }
}

/// The processes (pid and command line) but this one whose command line or environment names
/// `dir`.
fn naming(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.display().to_string();
    let me = std::process::id();
    let mut found = Vec::new();
    {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return found;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let names_it = ["cmdline", "environ"].iter().any(|f| {
                std::fs::read(entry.path().join(f))
                    .map(|b| String::from_utf8_lossy(&b).contains(&needle))
                    .unwrap_or(false)
            });
            if names_it {
                let cmd = std::fs::read(entry.path().join("cmdline"))
                    .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                    .unwrap_or_default();
                found.push((pid, cmd));
            }
        }
    }
    found
}
