//! What differs between the applied resolution and the one made now, in words a person reads once
//! before confirming (`collie apply`) or when the bridge refuses to start.

use std::fmt;

use super::resolve::{Resolved, ResolvedStarter, ResolvedWorkspace};
use super::sandbox::{network_text, rule_text, SandboxResolved};
use super::speech::SpeechResolved;

/// One difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// `config.toml` appeared, changed or went away (hashes, `None` for no file).
    ConfigFile {
        /// Applied.
        was: Option<String>,
        /// Now.
        now: Option<String>,
    },
    /// A workspace that was not applied.
    WorkspaceAdded(ResolvedWorkspace),
    /// An applied workspace that is gone.
    WorkspaceRemoved(ResolvedWorkspace),
    /// The same workspace with another folder behind it or another access.
    WorkspaceChanged {
        /// Applied.
        was: ResolvedWorkspace,
        /// Now.
        now: ResolvedWorkspace,
    },
    /// A starter that was not applied.
    StarterAdded(ResolvedStarter),
    /// An applied starter that is gone.
    StarterRemoved(ResolvedStarter),
    /// The same starter name with another executable, hash, or arguments.
    StarterChanged {
        /// Applied.
        was: ResolvedStarter,
        /// Now.
        now: ResolvedStarter,
    },
    /// The sandbox's effective policy changed, or it was turned on or off (`None`: `off`).
    Sandbox {
        /// Applied.
        was: Option<Box<SandboxResolved>>,
        /// Now.
        now: Option<Box<SandboxResolved>>,
    },
    /// The transcriber was added, removed, or its program, model, hashes or arguments changed.
    Speech {
        /// Applied.
        was: Option<Box<SpeechResolved>>,
        /// Now.
        now: Option<Box<SpeechResolved>>,
    },
}

/// The differences from `applied` (`None`: nothing applied yet) to `now`. Empty when they agree.
pub fn differences(applied: Option<&Resolved>, now: &Resolved) -> Vec<Difference> {
    let empty = Resolved {
        config: None,
        workspaces: Vec::new(),
        starters: Vec::new(),
        sandbox: None,
        speech: None,
    };
    let was = applied.unwrap_or(&empty);
    let mut out = Vec::new();
    let hash = |r: &Resolved| r.config.as_ref().map(|c| c.sha256.clone());
    if applied.is_none() || hash(was) != hash(now) {
        out.push(Difference::ConfigFile {
            was: hash(was),
            now: hash(now),
        });
    }
    for w in &now.workspaces {
        match was.workspaces.iter().find(|o| o.given == w.given) {
            None => out.push(Difference::WorkspaceAdded(w.clone())),
            Some(o) if o != w => out.push(Difference::WorkspaceChanged {
                was: o.clone(),
                now: w.clone(),
            }),
            Some(_) => {}
        }
    }
    for o in &was.workspaces {
        if !now.workspaces.iter().any(|w| w.given == o.given) {
            out.push(Difference::WorkspaceRemoved(o.clone()));
        }
    }
    for s in &now.starters {
        match was.starters.iter().find(|o| o.name == s.name) {
            None => out.push(Difference::StarterAdded(s.clone())),
            Some(o) if o != s => out.push(Difference::StarterChanged {
                was: o.clone(),
                now: s.clone(),
            }),
            Some(_) => {}
        }
    }
    for o in &was.starters {
        if !now.starters.iter().any(|s| s.name == o.name) {
            out.push(Difference::StarterRemoved(o.clone()));
        }
    }
    if was.sandbox != now.sandbox {
        out.push(Difference::Sandbox {
            was: was.sandbox.clone().map(Box::new),
            now: now.sandbox.clone().map(Box::new),
        });
    }
    if was.speech != now.speech {
        out.push(Difference::Speech {
            was: was.speech.clone().map(Box::new),
            now: now.speech.clone().map(Box::new),
        });
    }
    out
}

/// The transcriber in one line: its program, hash and model.
pub fn speech_text(s: &SpeechResolved) -> String {
    let model = match &s.model {
        Some(m) => format!(
            ", model {} ({}, sha256 {})",
            m.path.display(),
            if m.folder { "folder" } else { "file" },
            short(&m.sha256)
        ),
        None => String::new(),
    };
    format!(
        "{} sha256 {}{model} args {:?}",
        s.exec.display(),
        short(&s.sha256),
        s.args
    )
}

/// The sandbox's change, one line each: paths added, removed or changed, the network rule, the
/// limits.
fn sandbox(
    f: &mut fmt::Formatter<'_>,
    was: Option<&SandboxResolved>,
    now: Option<&SandboxResolved>,
) -> fmt::Result {
    let (was, now) = match (was, now) {
        (None, None) => return write!(f, "~ sandbox off"),
        (Some(_), None) => {
            return write!(
                f,
                "- sandbox (profile \"off\": what a phone starts runs unconfined)"
            )
        }
        (None, Some(n)) => {
            write!(f, "+ sandbox (profile \"workspace\")")?;
            for r in &n.policy.paths {
                write!(f, "\n    path {}", rule_text(r))?;
            }
            write!(f, "\n    network {}", network_text(&n.policy.network))?;
            for (key, value, from) in n.limit_texts() {
                write!(f, "\n    {key} {value} ({from})")?;
            }
            return Ok(());
        }
        (Some(w), Some(n)) => (w, n),
    };
    write!(f, "~ sandbox")?;
    for r in &now.policy.paths {
        match was.policy.paths.iter().find(|o| o.path == r.path) {
            None => write!(f, "\n    + path {}", rule_text(r))?,
            Some(o) if o != r => write!(f, "\n    ~ path {} → {}", rule_text(o), rule_text(r))?,
            Some(_) => {}
        }
    }
    for o in &was.policy.paths {
        if !now.policy.paths.iter().any(|r| r.path == o.path) {
            write!(f, "\n    - path {}", rule_text(o))?;
        }
    }
    if was.policy.network != now.policy.network {
        write!(
            f,
            "\n    network {} → {}",
            network_text(&was.policy.network),
            network_text(&now.policy.network)
        )?;
    }
    for ((key, w, wf), (_, n, nf)) in was.limit_texts().into_iter().zip(now.limit_texts()) {
        if w != n || wf != nf {
            write!(f, "\n    {key} {w} ({wf}) → {n} ({nf})")?;
        }
    }
    Ok(())
}

/// The first 12 hex digits of a hash: enough to see it changed.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

fn workspace(w: &ResolvedWorkspace) -> String {
    format!("{} → {} ({})", w.given, w.path.display(), w.access.as_str())
}

fn starter(s: &ResolvedStarter) -> String {
    let badge = if s.no_prompts { " [No prompts]" } else { "" };
    format!(
        "{}: {} sha256 {}{}{badge}",
        s.name,
        s.exec.display(),
        short(&s.sha256),
        if s.args.is_empty() {
            String::new()
        } else {
            format!(" args {:?}", s.args)
        }
    )
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::ConfigFile { was, now } => match (was, now) {
                (None, Some(n)) => write!(f, "+ config.toml (sha256 {})", short(n)),
                (Some(w), None) => write!(
                    f,
                    "- config.toml (sha256 {}; without it the built-in defaults apply)",
                    short(w)
                ),
                (Some(w), Some(n)) => {
                    write!(f, "~ config.toml sha256 {} → {}", short(w), short(n))
                }
                (None, None) => write!(f, "+ the built-in defaults (no config.toml)"),
            },
            Difference::WorkspaceAdded(w) => write!(f, "+ workspace {}", workspace(w)),
            Difference::WorkspaceRemoved(w) => write!(f, "- workspace {}", workspace(w)),
            Difference::WorkspaceChanged { was, now } => write!(
                f,
                "~ workspace {} was {} now {}",
                now.given,
                workspace(was),
                workspace(now)
            ),
            Difference::StarterAdded(s) => write!(f, "+ starter {}", starter(s)),
            Difference::StarterRemoved(s) => write!(f, "- starter {}", starter(s)),
            Difference::StarterChanged { was, now } => {
                write!(f, "~ starter {}", now.name)?;
                if was.exec != now.exec {
                    write!(
                        f,
                        "\n    executable {} → {}",
                        was.exec.display(),
                        now.exec.display()
                    )?;
                }
                if was.sha256 != now.sha256 {
                    write!(
                        f,
                        "\n    sha256 {} → {} (the file changed)",
                        short(&was.sha256),
                        short(&now.sha256)
                    )?;
                }
                if was.args != now.args {
                    write!(f, "\n    args {:?} → {:?}", was.args, now.args)?;
                }
                if was.no_prompts != now.no_prompts || was.agent != now.agent {
                    write!(f, "\n    {}", starter(now))?;
                }
                Ok(())
            }
            Difference::Sandbox { was, now } => sandbox(f, was.as_deref(), now.as_deref()),
            Difference::Speech { was, now } => match (was, now) {
                (None, Some(n)) => write!(f, "+ speech {}", speech_text(n)),
                (Some(w), None) => write!(f, "- speech {} (no dictation)", speech_text(w)),
                (Some(w), Some(n)) => write!(
                    f,
                    "~ speech\n    was {}\n    now {}",
                    speech_text(w),
                    speech_text(n)
                ),
                (None, None) => Ok(()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::resolve::ConfigPin;
    use super::*;
    use crate::config::Access;

    fn starter(name: &str, sha: &str) -> ResolvedStarter {
        ResolvedStarter {
            name: name.into(),
            agent: None,
            exec_given: "x".into(),
            exec: PathBuf::from("/bin/x"),
            sha256: sha.into(),
            args: Vec::new(),
            no_prompts: false,
        }
    }

    #[test]
    fn names_each_change_and_nothing_when_equal() {
        let ws = ResolvedWorkspace {
            given: "~".into(),
            path: PathBuf::from("/h"),
            access: Access::Write,
        };
        let a = Resolved {
            config: Some(ConfigPin {
                path: PathBuf::from("/c/config.toml"),
                sha256: "a".repeat(64),
            }),
            workspaces: vec![ws.clone()],
            starters: vec![starter("one", "1"), starter("two", "2")],
            sandbox: None,
            speech: None,
        };
        assert!(differences(Some(&a), &a).is_empty());
        let mut b = a.clone();
        b.starters[0].sha256 = "9".into();
        b.starters.pop();
        b.workspaces[0].access = Access::Read;
        let d = differences(Some(&a), &b);
        let text: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(d.len(), 3, "{text:?}");
        assert!(text[0].starts_with("~ workspace ~"), "{text:?}");
        assert!(text[1].contains("the file changed"), "{text:?}");
        assert!(text[2].starts_with("- starter two"), "{text:?}");
        // Nothing applied yet: everything is new, the file first.
        let first = differences(None, &a);
        assert!(matches!(first[0], Difference::ConfigFile { was: None, .. }));
        assert_eq!(first.len(), 4);
    }
}
