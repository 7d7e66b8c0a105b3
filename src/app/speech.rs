//! Dictation (SPEC §16): a phone's recording, transcribed on this machine by the pinned engine
//! ([`crate::speech`]), for a pane on this machine or on a member — the audio never leaves the
//! machine the phone talks to; only the text goes back, into the phone's input field, and
//! nothing is sent on its own.

use collie_actors::audit::AuditEventKind;
use collie_actors::pairing::Tier;
use serde::Serialize;

use super::machine::Machine;
use super::ops::Op;
use super::{App, AppError, Caller};
use crate::speech::child::ChildError;
use crate::speech::{wav, SpeechError};

/// The answer: the words, for the person to read, edit and send.
#[derive(Debug, Serialize)]
pub struct Transcribed {
    /// The transcription, masked like everything leaving the machine.
    pub text: String,
}

impl App {
    /// Whether a transcriber is configured here (the phone shows its microphone).
    pub fn speech_available(&self) -> bool {
        self.tools.speech.available()
    }

    /// Transcribes `body` (a WAV recording) for a pane on `machine`: the caller's right to type
    /// there, a known machine, a recording Collie reads, one of the two places; then the
    /// `speech.transcribe` line (the machine and the length, never the text) before the engine
    /// runs — a dictation whose line cannot be written does not run — and the run, for as long
    /// as the caller keeps `full`.
    pub async fn transcribe(
        &self,
        caller: &Caller,
        machine: &str,
        body: &[u8],
    ) -> Result<Transcribed, AppError> {
        self.authorize(caller, Op::Speech)?;
        let target = match self.machine_for(caller, machine)? {
            Machine::Local => self.core.machine.get(),
            Machine::Member(m) => m.name().to_owned(),
        };
        if !self.tools.speech.available() {
            return Err(AppError::NoTranscriber);
        }
        let rec = wav::read(body).map_err(|e| AppError::BadRequest(e.to_string()))?;
        let slot = match self.tools.speech.slot() {
            Ok(slot) => slot,
            Err(e) => {
                if matches!(e, SpeechError::Busy) {
                    let rec = caller
                        .record(self, AuditEventKind::ResourceDenied)
                        .with_detail("reason", "speech");
                    // Refused either way; an unwritable log only loses the line.
                    let _ = self.audit(rec).await;
                }
                return Err(refusal(e));
            }
        };
        let line = caller
            .record(self, AuditEventKind::SpeechTranscribe)
            .with_detail("machine", target)
            .with_detail("duration_ms", rec.duration_ms().to_string());
        self.audit(line).await?;
        let work = async {
            let speech = &self.tools.speech;
            speech.transcribe(&slot, rec).await.map_err(refusal)
        };
        let mut text = self.while_allowed(caller, Tier::Full, work).await?;
        self.mask_in_place(&mut text);
        Ok(Transcribed { text })
    }
}

/// A dictation's failure as the phone hears it; the detail of an engine's failure is logged.
fn refusal(e: SpeechError) -> AppError {
    match e {
        SpeechError::NotConfigured => AppError::NoTranscriber,
        SpeechError::Busy => AppError::ResourceLimit,
        SpeechError::Changed(why) => {
            tracing::warn!(%why, "dictation refused: run `collie apply` to pin the speech engine again");
            AppError::SpeechChanged
        }
        SpeechError::Engine(ChildError::TimedOut(limit)) => {
            tracing::warn!(
                ?limit,
                "the speech engine ran past its limit and was killed"
            );
            AppError::SpeechTimedOut
        }
        SpeechError::Engine(e) => {
            tracing::warn!(error = %e, "the speech engine failed");
            AppError::SpeechFailed
        }
        e @ (SpeechError::Recording(_) | SpeechError::Confine(_)) => {
            AppError::backend("dictation", e)
        }
    }
}
