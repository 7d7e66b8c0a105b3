//! `[speech]` in `config.toml` (SPEC §16, decision 0075): the program that turns a phone's
//! recording into text, as written. Only the shape is read here; `collie apply` resolves the
//! program and the model to real files and pins both by SHA-256 (`crate::applied::speech`).
//!
//! ```toml
//! [speech]
//! exec = "/usr/bin/pocketsphinx_continuous"
//! args = ["-infile", "{wav}", "-hmm", "{model}/en-us", "-logfn", "/dev/null"]
//! model = "/usr/share/pocketsphinx/model/en-us"
//! ```

use serde::Deserialize;

/// `[speech]` as written; no table: no transcriber (the phone shows no microphone).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeechConfig {
    /// The program: a path, or a bare name looked up in `PATH`.
    pub exec: String,
    /// Its arguments; `{wav}` becomes the recording's path and `{model}` the model's, anywhere
    /// in an argument.
    #[serde(default)]
    pub args: Vec<String>,
    /// The model: a file or a folder, pinned with the program (optional for an engine that
    /// carries its own).
    pub model: Option<String>,
}
