//! Dictation (SPEC §16, issue 32's figure): seconds of audio against seconds to text with the
//! guide's PocketSphinx recipe, through a real `collie bridge` (`POST /api/speech/local`, as the
//! phone posts it) and, as the baseline in the same run, the same engine with the same arguments
//! started directly on the same WAV. The difference is what Collie adds: reading the WAV, the
//! audit line, hashing the program and the 37 MB model again, writing the recording, the child.
//!
//! Recordings: PocketSphinx's real `goforward.raw` (2.8 s) once, 4 times and 20 times in a row
//! (11 s, 56 s — under the 60 s limit).
//!
//! Run: `cargo bench --bench speech` (`COLLIE_BENCH_SPEECH_N=N` runs of each, default 5). Needs
//! Debian's `pocketsphinx`, `pocketsphinx-en-us` and `pocketsphinx-testdata`. A plain binary, not
//! criterion: the figures are whole processes'. Nothing is asserted.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{cpu_model, cpus, env_number, listing_only, load_average, Bridge, Stats};

const ENGINE: &str = "/usr/bin/pocketsphinx_continuous";
const MODEL: &str = "/usr/share/pocketsphinx/model/en-us";
const SPEECH: &str = "/usr/share/pocketsphinx/test/data/goforward.raw";

/// The guide's recipe, `{wav}` and `{model}` as written.
const ARGS: [&str; 10] = [
    "-infile",
    "{wav}",
    "-hmm",
    "{model}/en-us",
    "-lm",
    "{model}/en-us.lm.bin",
    "-dict",
    "{model}/cmudict-en-us.dict",
    "-logfn",
    "/dev/null",
];

fn direct(wav: &Path) -> Duration {
    let args: Vec<String> = ARGS
        .iter()
        .map(|a| {
            a.replace("{wav}", &wav.display().to_string())
                .replace("{model}", MODEL)
        })
        .collect();
    let start = Instant::now();
    let out = Command::new(ENGINE)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run pocketsphinx_continuous");
    let took = start.elapsed();
    assert!(out.status.success(), "the engine failed");
    took
}

fn through(bridge: &Bridge, token: &str, body: &[u8]) -> (Duration, String) {
    let start = Instant::now();
    let resp = ureq::post(&bridge.url("/api/speech/local"))
        .timeout(Duration::from_secs(90))
        .set("Authorization", &format!("Bearer {token}"))
        .set("Content-Type", "audio/wav")
        .send_bytes(body)
        .expect("the dictation is transcribed");
    let text: serde_json::Value = resp.into_json().expect("a JSON answer");
    (
        start.elapsed(),
        text["text"].as_str().unwrap_or_default().to_owned(),
    )
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    if listing_only() {
        return;
    }
    let n: usize = env_number("COLLIE_BENCH_SPEECH_N", 5);
    let samples = std::fs::read(SPEECH).expect("pocketsphinx-testdata is installed");
    let root = tempfile::Builder::new()
        .prefix("collie-bench-speech-")
        .tempdir()
        .expect("tempdir");
    let first = Bridge::options("speech")
        .dir(root.path().to_path_buf())
        .start();
    let args = ARGS
        .iter()
        .map(|a| format!("{a:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    std::fs::write(
        first.dir().join("config/config.toml"),
        format!(
            "schema_version = 1\n[speech]\nexec = \"{ENGINE}\"\nmodel = \"{MODEL}\"\nargs = [{args}]\n"
        ),
    )
    .expect("write config.toml");
    first.cli_ok(&["apply", "--yes"]);
    // The configuration takes effect when the bridge starts again on the same dirs.
    drop(first);
    let bridge = Bridge::options("speech")
        .dir(root.path().to_path_buf())
        .start();
    let token = bridge.pair("bench", "full");
    let scratch = tempfile::tempdir().expect("tempdir");

    println!(
        "dictation: {} ({} cores), load {}; {n} runs of each, medians",
        cpu_model(),
        cpus(),
        load_average()
    );
    println!("| audio | engine alone | through the bridge | added | text |");
    println!("|---|---|---|---|---|");
    for times in [1usize, 4, 20] {
        let body = collie::speech::wav::encode(&samples.repeat(times));
        let file = scratch.path().join(format!("x{times}.wav"));
        std::fs::write(&file, &body).expect("write the wav");
        let audio = Duration::from_secs_f64(samples.len() as f64 * times as f64 / 32_000.0);
        let mut alone = Vec::new();
        let mut via = Vec::new();
        let mut words = String::new();
        for _ in 0..n {
            alone.push(direct(&file));
            let (took, text) = through(&bridge, &token, &body);
            via.push(took);
            words = text;
        }
        let (alone, via) = (Stats::of(alone).p50, Stats::of(via).p50);
        let shown: String = words.chars().take(40).collect();
        println!(
            "| {:.1} s | {} ({:.2}× real time) | {} ({:.2}×) | {} | {shown}… |",
            audio.as_secs_f64(),
            ms(alone),
            alone.as_secs_f64() / audio.as_secs_f64(),
            ms(via),
            via.as_secs_f64() / audio.as_secs_f64(),
            ms(via.saturating_sub(alone)),
        );
    }
}
