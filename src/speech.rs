//! Dictation (SPEC §16, decision 0075): a phone's recording turned into text by the transcriber
//! the applied configuration pinned, on this machine, one short-lived child per recording.
//!
//! - [`wav`]: the recording a phone posts, read strictly and written out with Collie's header.
//! - [`child`]: the run itself — fixed arguments, no `COLLIE_*` variable, a time limit, an
//!   output cap.
//! - [`text`]: what the engine printed, made into one line of words.
//!
//! [`Speech`] holds the pinned engine, the two places a dictation may run in, and the folder the
//! recordings wait in (`<state>/speech/`, 0700; each file 0600 and gone when its child ends).
//! Under the sandbox (SPEC §15) the engine runs confined by a policy of its own, narrower than a
//! pane's: the applied policy's system folders and limits, no network, and reading only its pinned
//! program, its model and the one recording — never a workspace.

pub mod child;
pub mod text;
pub mod wav;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use collie_sandbox::{Network, PathAccess, PathRule, Policy};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::applied::speech::{PinError, Pins, SpeechResolved, MODEL, WAV};
use crate::applied::Snapshot;
use child::ChildError;
use wav::Recording;

/// Dictations that may run at once; one more is refused `resource limit`.
pub const MAX_RUNNING: usize = 2;
/// How long one may run before its whole group is killed.
pub const TIME_LIMIT: Duration = Duration::from_secs(60);
/// The folder of the recordings in the state dir.
pub const RECORDINGS_DIR: &str = "speech";

/// Why a dictation was not transcribed.
#[derive(Debug, thiserror::Error)]
pub enum SpeechError {
    /// No `[speech]` was applied.
    #[error("no transcriber is configured")]
    NotConfigured,
    /// [`MAX_RUNNING`] are running.
    #[error("{MAX_RUNNING} dictations are being transcribed")]
    Busy,
    /// The program or the model is not the one applied.
    #[error(transparent)]
    Changed(#[from] PinError),
    /// The recording could not be handed to the engine.
    #[error("keep the recording for the engine: {0}")]
    Recording(std::io::Error),
    /// The sandbox's words could not be made.
    #[error("confine the speech engine: {0}")]
    Confine(String),
    /// The engine failed, ran too long or printed too much.
    #[error(transparent)]
    Engine(#[from] ChildError),
}

/// The transcriber of this bridge (see the module docs).
pub struct Speech {
    engine: Option<SpeechResolved>,
    running: Arc<Semaphore>,
    recordings: PathBuf,
    /// With the sandbox on: this program (the launcher) and the applied policy.
    sandbox: Option<(PathBuf, Policy)>,
    limit: Duration,
}

/// A place to run one dictation, held while it runs.
pub struct Slot(#[allow(dead_code)] OwnedSemaphorePermit);

impl Speech {
    /// The transcriber `applied` pinned (none: dictation is off), its recordings in
    /// `<state_dir>/speech/` — made 0700 and emptied of what a stopped bridge left there.
    pub fn new(applied: Option<&Snapshot>, state_dir: &Path) -> std::io::Result<Speech> {
        let recordings = state_dir.join(RECORDINGS_DIR);
        private_dir(&recordings)?;
        for entry in std::fs::read_dir(&recordings)?.flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
        let resolved = applied.map(|s| &s.resolved);
        let sandbox = match resolved.and_then(|r| r.sandbox.as_ref()) {
            Some(s) => Some((std::env::current_exe()?, s.policy.clone())),
            None => None,
        };
        Ok(Speech {
            engine: resolved.and_then(|r| r.speech.clone()),
            running: Arc::new(Semaphore::new(MAX_RUNNING)),
            recordings,
            sandbox,
            limit: time_limit(),
        })
    }

    /// Whether a transcriber is configured (the phone shows its microphone).
    pub fn available(&self) -> bool {
        self.engine.is_some()
    }

    /// One of the [`MAX_RUNNING`] places, or [`SpeechError::Busy`].
    pub fn slot(&self) -> Result<Slot, SpeechError> {
        if self.engine.is_none() {
            return Err(SpeechError::NotConfigured);
        }
        Arc::clone(&self.running)
            .try_acquire_owned()
            .map(Slot)
            .map_err(|_| SpeechError::Busy)
    }

    /// Transcribes `rec` in `slot`: the pins checked again, the recording written (0600) for the
    /// child and removed when it ends, the child run, its output made into words.
    pub async fn transcribe(
        &self,
        _slot: &Slot,
        rec: Recording<'_>,
    ) -> Result<String, SpeechError> {
        let engine = self.engine.clone().ok_or(SpeechError::NotConfigured)?;
        let pinned = engine.clone();
        tokio::task::spawn_blocking(move || pinned.check())
            .await
            .map_err(|e| SpeechError::Confine(e.to_string()))??;
        let file = tempfile::Builder::new()
            .prefix("rec-")
            .suffix(".wav")
            .tempfile_in(&self.recordings)
            .map_err(SpeechError::Recording)?;
        std::fs::write(file.path(), rec.canonical()).map_err(SpeechError::Recording)?;
        let argv = self.argv(&engine, file.path())?;
        let out = child::run(&argv, self.limit).await;
        // The recording goes as soon as its child has ended, whatever it answered.
        drop(file);
        Ok(text::words(&out?))
    }

    /// The child's words: `[launcher prefix…] exec args…`, each argument's placeholders replaced
    /// by the recording's and the model's paths — nothing else from the request.
    fn argv(&self, engine: &SpeechResolved, wav: &Path) -> Result<Vec<OsString>, SpeechError> {
        let model = engine.model.as_ref().map(|m| m.path.as_path());
        let mut argv: Vec<OsString> = Vec::new();
        if let Some((exe, applied)) = &self.sandbox {
            let policy = self.policy(applied, engine, wav);
            let prefix = collie_sandbox::launch::prefix(exe, &policy)
                .map_err(|e| SpeechError::Confine(e.to_string()))?;
            argv.extend(prefix.into_iter().map(OsString::from));
        }
        argv.push(engine.exec.clone().into_os_string());
        argv.extend(engine.args.iter().map(|a| fill(a, wav, model)));
        Ok(argv)
    }

    /// The engine's own policy (see the module docs).
    fn policy(&self, applied: &Policy, engine: &SpeechResolved, wav: &Path) -> Policy {
        let mut paths: Vec<PathRule> = applied
            .paths
            .iter()
            .filter(|r| r.from == "system")
            .cloned()
            .collect();
        let read = |path: &Path, from: &str| PathRule {
            path: path.to_path_buf(),
            access: PathAccess::Read,
            from: from.to_owned(),
        };
        paths.push(read(&engine.exec, "speech program"));
        if let Some(m) = &engine.model {
            paths.push(read(&m.path, "speech model"));
        }
        paths.push(read(wav, "recording"));
        let mut limits = applied.limits;
        limits.timeout_s = self.limit.as_secs().max(1);
        Policy {
            paths,
            network: Network::None,
            limits,
        }
    }
}

/// `dir`, created 0700 when missing; an existing one must be a real folder (not a link) and is
/// tightened to 0700.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    if !std::fs::symlink_metadata(dir)?.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a folder",
            dir.display()
        )));
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// `arg` with `{wav}` and `{model}` replaced.
fn fill(arg: &str, wav: &Path, model: Option<&Path>) -> OsString {
    let mut out = arg.replace(WAV, &wav.to_string_lossy());
    if let Some(m) = model {
        out = out.replace(MODEL, &m.to_string_lossy());
    }
    OsString::from(out)
}

/// [`TIME_LIMIT`]; with the test-only `fault-injection` feature `COLLIE_TEST_SPEECH_LIMIT_MS`
/// shortens it, so a test of the limit does not wait a minute.
fn time_limit() -> Duration {
    #[cfg(feature = "fault-injection")]
    if let Some(ms) = std::env::var("COLLIE_TEST_SPEECH_LIMIT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        return Duration::from_millis(ms);
    }
    TIME_LIMIT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_take_the_recording_and_the_model_only() {
        let wav = Path::new("/s/speech/rec-1.wav");
        let model = Path::new("/m/en-us");
        assert_eq!(fill("-infile", wav, Some(model)), "-infile");
        assert_eq!(fill("{wav}", wav, Some(model)), "/s/speech/rec-1.wav");
        assert_eq!(
            fill("{model}/en-us.lm.bin", wav, Some(model)),
            "/m/en-us/en-us.lm.bin"
        );
        assert_eq!(
            fill("--file={wav}", wav, None),
            "--file=/s/speech/rec-1.wav"
        );
    }
}
