//! `[speech]` made concrete (SPEC §16, decision 0075): the transcriber's program as a real file
//! with its SHA-256, its arguments checked, and its model — a file or a folder — pinned by a
//! SHA-256 anyone can recompute. The bridge hashes both again before every dictation
//! ([`Pins::check`]); a change is 409 `speech engine changed` until `collie apply` pins it again.
//!
//! A folder's hash is the SHA-256 of the `sha256sum` lines of its files, sorted by path:
//!
//! ```sh
//! cd MODEL && find -L . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::env::{expand, ResolveEnv};
use super::pin::{executable, sha256_file, MAX_ARGS, MAX_ARG_BYTES};
use crate::config::SpeechConfig;

/// Where the recording's path goes in an argument.
pub const WAV: &str = "{wav}";
/// Where the model's path goes in an argument.
pub const MODEL: &str = "{model}";
/// Most files a model folder may hold (a model is a handful of files; a home folder is not one).
pub const MAX_MODEL_FILES: usize = 10_000;
/// Deepest folder inside a model folder.
pub const MAX_MODEL_DEPTH: usize = 16;

/// The pinned transcriber, as the snapshot holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeechResolved {
    /// `exec` as written.
    pub exec_given: String,
    /// The real file it runs (symlinks resolved).
    pub exec: PathBuf,
    /// Hex SHA-256 of that file.
    pub sha256: String,
    /// The arguments as written, placeholders and all.
    pub args: Vec<String>,
    /// The model, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ResolvedModel>,
}

/// A pinned model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolvedModel {
    /// As written.
    pub given: String,
    /// The real file or folder.
    pub path: PathBuf,
    /// A folder (hashed file by file) or one file.
    pub folder: bool,
    /// Hex SHA-256 (of the file, or of the folder's `sha256sum` lines).
    pub sha256: String,
}

/// Why the pinned program or model no longer matches (checked before each dictation).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    /// The program's bytes changed, or it is gone.
    #[error("the speech program {0} is not the one applied")]
    Program(String),
    /// The model's bytes or files changed, or it is gone.
    #[error("the speech model {0} is not the one applied")]
    Model(String),
}

/// What [`Pins::check`] compares: the snapshot's paths and hashes.
pub trait Pins {
    /// Hashes the program and the model again (blocking: a model can be gigabytes) and compares.
    fn check(&self) -> Result<(), PinError>;
}

impl Pins for SpeechResolved {
    fn check(&self) -> Result<(), PinError> {
        let shown = |p: &Path| p.display().to_string();
        if sha256_file(&self.exec).ok().as_deref() != Some(self.sha256.as_str()) {
            return Err(PinError::Program(shown(&self.exec)));
        }
        if let Some(m) = &self.model {
            let now = if m.folder {
                folder_sha256(&m.path).ok()
            } else {
                sha256_file(&m.path).ok()
            };
            if now.as_deref() != Some(m.sha256.as_str()) {
                return Err(PinError::Model(shown(&m.path)));
            }
        }
        Ok(())
    }
}

/// Resolves `[speech]` (`None` without the table), adding what does not resolve to `problems`.
pub fn resolve(
    speech: Option<&SpeechConfig>,
    env: &ResolveEnv,
    problems: &mut Vec<String>,
) -> Option<SpeechResolved> {
    let s = speech?;
    let before = problems.len();
    if s.args.len() > MAX_ARGS {
        problems.push(format!("[speech] at most {MAX_ARGS} args"));
    }
    if s.args
        .iter()
        .any(|a| a.len() > MAX_ARG_BYTES || a.contains('\0'))
    {
        problems.push(format!(
            "[speech] an argument is longer than {MAX_ARG_BYTES} bytes or holds a NUL"
        ));
    }
    for a in &s.args {
        if let Err(why) = placeholders(a, s.model.is_some()) {
            problems.push(format!("[speech] argument {a:?}: {why}"));
        }
    }
    if !s.args.iter().any(|a| a.contains(WAV)) {
        problems.push(
            "[speech] args must name the recording with {wav} (the program reads it from there)"
                .to_owned(),
        );
    }
    let exec = executable(&s.exec, env)
        .map_err(|why| problems.push(format!("[speech] exec {:?}: {why}", s.exec)))
        .ok();
    let model = match &s.model {
        Some(given) => match model(given, env) {
            Ok(m) => Some(m),
            Err(why) => {
                problems.push(format!("[speech] model {given:?}: {why}"));
                None
            }
        },
        None => None,
    };
    let (exec, sha256) = exec?;
    (problems.len() == before).then(|| SpeechResolved {
        exec_given: s.exec.clone(),
        exec,
        sha256,
        args: s.args.clone(),
        model,
    })
}

/// Every `{…}` of `arg` must be `{wav}` or, with a model, `{model}`: a typo would otherwise reach
/// the program as a literal.
fn placeholders(arg: &str, has_model: bool) -> Result<(), String> {
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        let tail = &rest[open..];
        let Some(close) = tail.find('}') else {
            return Err("a `{` without its `}`".into());
        };
        match &tail[..=close] {
            WAV => {}
            MODEL if has_model => {}
            MODEL => return Err("{model} needs `model`".into()),
            other => {
                return Err(format!(
                    "unknown placeholder {other} (only {WAV} and {MODEL})"
                ))
            }
        }
        rest = &tail[close + 1..];
    }
    Ok(())
}

fn model(given: &str, env: &ResolveEnv) -> Result<ResolvedModel, String> {
    let path = expand(given, env)?;
    let path = std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (folder, sha256) = if meta.is_dir() {
        (true, folder_sha256(&path)?)
    } else if meta.is_file() {
        let sha = sha256_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        (false, sha)
    } else {
        return Err(format!("{} is neither a file nor a folder", path.display()));
    };
    Ok(ResolvedModel {
        given: given.to_owned(),
        path,
        folder,
        sha256,
    })
}

/// The hash of a model folder (see the module docs): every file beneath it, links to files
/// followed, sorted by path. A link to a folder, a device or a pipe, a name that is not plain
/// UTF-8, more than [`MAX_MODEL_FILES`] files or [`MAX_MODEL_DEPTH`] levels: refused, so the
/// hash always means the same bytes.
pub fn folder_sha256(root: &Path) -> Result<String, String> {
    let mut files = Vec::new();
    walk(root, Path::new("."), 0, &mut files)?;
    files.sort();
    let mut all = Sha256::new();
    for rel in &files {
        let sha = sha256_file(&root.join(rel)).map_err(|e| format!("{rel}: {e}"))?;
        all.update(format!("{sha}  {rel}\n").as_bytes());
    }
    Ok(hex::encode(all.finalize()))
}

fn walk(root: &Path, rel: &Path, depth: usize, files: &mut Vec<String>) -> Result<(), String> {
    if depth > MAX_MODEL_DEPTH {
        return Err(format!("deeper than {MAX_MODEL_DEPTH} folders"));
    }
    let dir = root.join(rel);
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = entry.file_name();
        let child = rel.join(&name);
        let shown = child.display().to_string();
        let Some(name) = name.to_str().filter(|n| !n.contains(['\n', '\\'])) else {
            return Err(format!("{shown}: a name that is not plain UTF-8"));
        };
        let kind = entry.file_type().map_err(|e| format!("{shown}: {e}"))?;
        if kind.is_dir() {
            walk(root, &child, depth + 1, files)?;
            continue;
        }
        // A link is followed to a file (a model cache links its snapshots to blobs); never to a
        // folder, which could lead back up.
        let target = std::fs::metadata(dir.join(name)).map_err(|e| format!("{shown}: {e}"))?;
        if !target.is_file() {
            return Err(format!("{shown}: neither a file nor a folder"));
        }
        if files.len() >= MAX_MODEL_FILES {
            return Err(format!("more than {MAX_MODEL_FILES} files"));
        }
        files.push(shown);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_wav_and_model_only() {
        assert!(placeholders("-f", false).is_ok());
        assert!(placeholders("{wav}", false).is_ok());
        assert!(placeholders("{model}/en-us", true).is_ok());
        assert!(placeholders("{model}/en-us", false).is_err());
        assert!(placeholders("{wave}", true).is_err());
        assert!(placeholders("{wav", true).is_err());
        assert!(placeholders("x{wav}y{model}z", true).is_ok());
    }

    #[test]
    fn a_folder_hash_is_sha256sum_of_its_sorted_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("b/z"), b"zz").unwrap();
        std::fs::write(dir.path().join("a"), b"aa").unwrap();
        let line =
            |rel: &str, bytes: &[u8]| format!("{}  {rel}\n", hex::encode(Sha256::digest(bytes)));
        let expected = hex::encode(Sha256::digest(
            format!("{}{}", line("./a", b"aa"), line("./b/z", b"zz")).as_bytes(),
        ));
        let first = folder_sha256(dir.path()).unwrap();
        assert_eq!(first, expected);
        // A changed byte, a new file: another hash.
        std::fs::write(dir.path().join("a"), b"ab").unwrap();
        assert_ne!(folder_sha256(dir.path()).unwrap(), first);
        std::fs::write(dir.path().join("a"), b"aa").unwrap();
        std::fs::write(dir.path().join("c"), b"").unwrap();
        assert_ne!(folder_sha256(dir.path()).unwrap(), first);
    }

    #[test]
    fn a_link_to_a_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("loop")).unwrap();
        let err = folder_sha256(dir.path()).unwrap_err();
        assert!(err.contains("loop"), "{err}");
    }
}
