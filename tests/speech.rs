//! Black-box tests of dictation (SPEC §16) against real `collie` processes: a phone's WAV posted
//! to `POST /api/speech/{m}` is transcribed by the engine the applied configuration pinned.
//!
//! The real engine is Debian's PocketSphinx (`pocketsphinx`, `pocketsphinx-en-us`) on real
//! recorded human speech (`pocketsphinx-testdata`'s `goforward.raw`, 16 kHz 16-bit mono, made
//! into a WAV here as the phone makes it). The engine's rules — a changed hash, the time limit,
//! two at once, no `COLLIE_*` variable, the arguments — are tried with small shell-script engines
//! that say what they saw, since PocketSphinx cannot be made to hang or to print its environment.
//! The time limit is shortened through the test-only `fault-injection` feature
//! (`COLLIE_TEST_SPEECH_LIMIT_MS`) so a test does not wait a minute.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::{crew_bridge_configured, wait_for, Opts, TestBridge};

const POCKETSPHINX: &str = "/usr/bin/pocketsphinx_continuous";
const MODEL: &str = "/usr/share/pocketsphinx/model/en-us";
const GO_FORWARD: &str = "/usr/share/pocketsphinx/test/data/goforward.raw";

/// The PocketSphinx recipe of the guide: the pinned model's acoustic model, language model and
/// dictionary, the log to /dev/null so only the words are printed.
fn pocketsphinx_config() -> String {
    format!(
        "[speech]\nexec = \"{POCKETSPHINX}\"\nmodel = \"{MODEL}\"\nargs = [\"-infile\", \"{{wav}}\", \
         \"-hmm\", \"{{model}}/en-us\", \"-lm\", \"{{model}}/en-us.lm.bin\", \"-dict\", \
         \"{{model}}/cmudict-en-us.dict\", \"-logfn\", \"/dev/null\"]\n"
    )
}

/// 16 kHz mono 16-bit samples as the phone sends them: a 44-byte WAV header, then the samples.
fn wav(samples: &[u8]) -> Vec<u8> {
    let len = samples.len() as u32;
    let mut out = Vec::new();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    for field in [16u32.to_le_bytes().to_vec(), vec![1, 0, 1, 0]] {
        out.extend_from_slice(&field);
    }
    out.extend_from_slice(&16_000u32.to_le_bytes());
    out.extend_from_slice(&32_000u32.to_le_bytes());
    out.extend_from_slice(&[2, 0, 16, 0]);
    out.extend_from_slice(b"data");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(samples);
    out
}

fn go_forward() -> Vec<u8> {
    wav(&std::fs::read(GO_FORWARD).expect("pocketsphinx-testdata is installed"))
}

/// `seconds` of quiet.
fn quiet(seconds: usize) -> Vec<u8> {
    wav(&vec![0u8; seconds * 32_000])
}

/// Posts `body` as the phone does; status and JSON answer.
fn post_wav(b: &TestBridge, machine: &str, token: &str, body: &[u8]) -> (u16, Value) {
    post_as(b, machine, token, body, "audio/wav")
}

fn post_as(b: &TestBridge, machine: &str, token: &str, body: &[u8], kind: &str) -> (u16, Value) {
    let resp = ureq::post(&b.url(&format!("/api/speech/{machine}")))
        .timeout(Duration::from_secs(30))
        .set("Authorization", &format!("Bearer {token}"))
        .set("Content-Type", kind)
        .send_bytes(body);
    let resp = match resp {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("POST /api/speech/{machine}: {e}"),
    };
    let status = resp.status();
    let text = resp.into_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// `[speech]` running `engine` on the recording alone.
fn reading_the_wav(engine: &Path) -> String {
    format!(
        "[speech]\nexec = \"{}\"\nargs = [\"{{wav}}\"]\n",
        engine.display()
    )
}

/// An executable shell script at `dir/name`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn speech_lines(b: &TestBridge) -> Vec<Value> {
    b.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "speech.transcribe")
        .collect()
}

fn recordings(b: &TestBridge) -> Vec<String> {
    std::fs::read_dir(b.state().join("speech"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn configured(config: &str, env: &[(&str, &str)]) -> TestBridge {
    TestBridge::start_with(Opts {
        config: Some(config.to_owned()),
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..Opts::default()
    })
}

#[test]
fn real_speech_becomes_the_words_and_only_its_length_is_audited() {
    let b = configured(&pocketsphinx_config(), &[]);
    let full = b.pair("phone", "full");
    let (_, settings) = b.get("/api/settings", Some(&full));
    assert_eq!(settings["speech"], true, "{settings}");

    let (status, answer) = post_wav(&b, "local", &full, &go_forward());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["text"], "go forward ten meters");

    let lines = speech_lines(&b);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(line["device"], "phone");
    assert_eq!(line["detail"]["machine"], "testbox");
    // goforward.raw is 89,160 bytes: 2,786 ms at 32,000 bytes a second.
    assert_eq!(line["detail"]["duration_ms"], "2786");
    let all = b.audit_lines();
    assert!(
        !serde_json::to_string(&all).unwrap().contains("forward"),
        "the words reached the audit log: {all:?}"
    );
    // The recording is gone once its child ended.
    assert!(recordings(&b).is_empty(), "{:?}", recordings(&b));

    // Only a device that may type may dictate; only WAV is read.
    let read = b.pair("reader", "read");
    let (status, answer) = post_wav(&b, "local", &read, &go_forward());
    assert_eq!(
        (status, answer["error"].as_str()),
        (403, Some("insufficient tier"))
    );
    let (status, answer) = post_as(&b, "local", &full, &go_forward(), "audio/ogg");
    assert_eq!(status, 400, "{answer}");
    let mut stereo = go_forward();
    stereo[22] = 2;
    let (status, answer) = post_wav(&b, "local", &full, &stereo);
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("16 kHz mono"),
        "{answer}"
    );
    let (status, _) = post_wav(&b, "elsewhere", &full, &go_forward());
    assert_eq!(status, 404);
    assert_eq!(speech_lines(&b).len(), 1, "a refused dictation left a line");

    // `collie show` lists the engine and the model with their hashes; doctor checks them.
    let shown = b.cli_ok(&["show"]);
    assert!(
        shown.contains(&format!("speech     {POCKETSPHINX} sha256 ")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("model    {MODEL} (folder) sha256 ")),
        "{shown}"
    );
    let doctor = b.cli_ok(&["doctor"]);
    assert!(
        doctor.contains("program and model match their hashes"),
        "{doctor}"
    );
}

#[test]
fn without_a_transcriber_there_is_no_microphone() {
    let b = TestBridge::start_with(Opts::default());
    let full = b.pair("phone", "full");
    let (_, settings) = b.get("/api/settings", Some(&full));
    assert_eq!(settings["speech"], false, "{settings}");
    let (status, answer) = post_wav(&b, "local", &full, &go_forward());
    assert_eq!(
        (status, answer["error"].as_str()),
        (404, Some("no transcriber"))
    );
    let doctor = b.cli_ok(&["doctor"]);
    assert!(doctor.contains("dictation off"), "{doctor}");
}

#[test]
fn a_changed_program_or_model_refuses_until_applied_again() {
    let tools = tempfile::tempdir().expect("tempdir");
    let engine = script(tools.path(), "engine", "echo heard");
    let model = tools.path().join("model.bin");
    std::fs::write(&model, b"weights").expect("write model");
    let config = format!(
        "[speech]\nexec = \"{}\"\nmodel = \"{}\"\nargs = [\"{{wav}}\", \"{{model}}\"]\n",
        engine.display(),
        model.display()
    );
    let b = configured(&config, &[]);
    let full = b.pair("phone", "full");
    let (status, answer) = post_wav(&b, "local", &full, &quiet(1));
    assert_eq!((status, answer["text"].as_str()), (200, Some("heard")));

    // The program changed after apply: refused, and nothing ran (no new words).
    script(tools.path(), "engine", "echo changed");
    let (status, answer) = post_wav(&b, "local", &full, &quiet(1));
    assert_eq!(
        (status, answer["error"].as_str()),
        (409, Some("speech engine changed"))
    );
    script(tools.path(), "engine", "echo heard");
    assert_eq!(post_wav(&b, "local", &full, &quiet(1)).0, 200);

    // The model changed: refused too.
    std::fs::write(&model, b"other weights").expect("write model");
    let (status, answer) = post_wav(&b, "local", &full, &quiet(1));
    assert_eq!(
        (status, answer["error"].as_str()),
        (409, Some("speech engine changed"))
    );
    let doctor = b.cli(&["doctor"]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(text.contains("speech engine changed"), "{text}");
    assert!(recordings(&b).is_empty());
}

#[test]
fn sixty_seconds_pass_and_sixty_one_are_refused() {
    let tools = tempfile::tempdir().expect("tempdir");
    let engine = script(tools.path(), "engine", "wc -c < \"$1\"");
    let b = configured(&reading_the_wav(&engine), &[]);
    let full = b.pair("phone", "full");
    let (status, answer) = post_wav(&b, "local", &full, &quiet(60));
    // The engine reads Collie's own copy: 44 bytes of header and 60 s of samples.
    assert_eq!((status, answer["text"].as_str()), (200, Some("1920044")));
    let (status, answer) = post_wav(&b, "local", &full, &quiet(61));
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("longer than 60 s"),
        "{answer}"
    );
    // Past 2 MiB the body is not even read: the declared length is refused at once.
    let (status, answer) = b.declare_only("/api/speech/local", &full, 44 + 70 * 32_000);
    assert_eq!(status, 413, "{answer}");
    assert_eq!(speech_lines(&b).len(), 1);
}

#[test]
fn three_at_once_get_one_resource_limit() {
    let tools = tempfile::tempdir().expect("tempdir");
    let engine = script(tools.path(), "engine", "sleep 2; echo done");
    let b = configured(&reading_the_wav(&engine), &[]);
    let full = b.pair("phone", "full");
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let posts: Vec<_> = (0..3)
            .map(|_| s.spawn(|| post_wav(&b, "local", &full, &quiet(1))))
            .collect();
        posts.into_iter().map(|p| p.join().unwrap().0).collect()
    });
    let mut sorted = statuses.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![200, 200, 503], "{statuses:?}");
    let denied: Vec<Value> = b
        .audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "resource.denied")
        .collect();
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0]["detail"]["reason"], "speech");
    // Both places are free again.
    assert_eq!(post_wav(&b, "local", &full, &quiet(1)).0, 200);
}

#[test]
fn a_hanging_engine_is_killed_at_the_limit_with_what_it_started() {
    let tools = tempfile::tempdir().expect("tempdir");
    let pids = tools.path().join("pids");
    let engine = script(
        tools.path(),
        "engine",
        &format!(
            "sleep 1000 &\necho $$ $! > {}\ncp \"$1\" {}\nsleep 1000",
            pids.display(),
            tools.path().join("copy.wav").display()
        ),
    );
    let b = configured(
        &reading_the_wav(&engine),
        &[("COLLIE_TEST_SPEECH_LIMIT_MS", "1500")],
    );
    let full = b.pair("phone", "full");
    let (status, answer) = post_wav(&b, "local", &full, &quiet(1));
    assert_eq!(
        (status, answer["error"].as_str()),
        (504, Some("speech engine timed out"))
    );
    // The engine saw the whole recording; it and its background sleep are gone, and so is the
    // recording.
    assert_eq!(
        std::fs::metadata(tools.path().join("copy.wav"))
            .unwrap()
            .len(),
        44 + 32_000
    );
    let text = std::fs::read_to_string(&pids).expect("the engine wrote its pids");
    for pid in text.split_whitespace() {
        let gone = wait_for(Duration::from_secs(5), || {
            (!Path::new("/proc").join(pid).exists()).then_some(())
        });
        assert!(gone.is_some(), "process {pid} outlived the limit");
    }
    assert!(recordings(&b).is_empty(), "{:?}", recordings(&b));
}

#[test]
fn the_engine_gets_its_fixed_arguments_and_no_collie_variable() {
    let tools = tempfile::tempdir().expect("tempdir");
    let model = tools.path().join("model");
    std::fs::create_dir(&model).expect("mkdir");
    std::fs::write(model.join("weights"), b"w").expect("write");
    let engine = script(
        tools.path(),
        "engine",
        "echo args \"$@\"; echo collie vars $(env | grep -c '^COLLIE_'); echo home $HOME",
    );
    let config = format!(
        "[speech]\nexec = \"{}\"\nmodel = \"{}\"\nargs = [\"--in={{wav}}\", \"-m\", \"{{model}}/weights\"]\n",
        engine.display(),
        model.display()
    );
    let b = configured(&config, &[]);
    let full = b.pair("phone", "full");
    let (status, answer) = post_wav(&b, "local", &full, &quiet(1));
    assert_eq!(status, 200, "{answer}");
    let text = answer["text"].as_str().unwrap();
    let speech_dir = std::fs::canonicalize(b.state().join("speech")).unwrap();
    let model = std::fs::canonicalize(&model).unwrap();
    assert!(
        text.starts_with(&format!("args --in={}/rec-", speech_dir.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            ".wav -m {}/weights collie vars 0 home",
            model.display()
        )),
        "{text}"
    );
}

#[test]
fn apply_refuses_a_transcriber_it_cannot_pin() {
    let mut b = TestBridge::start_with(Opts::default());
    b.stop();
    let write = |body: &str| {
        std::fs::write(
            b.config_dir().join("config.toml"),
            format!("schema_version = 1\n[speech]\n{body}"),
        )
        .unwrap();
        let out = b.cli(&["apply", "--yes"]);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = write(&format!("exec = \"{POCKETSPHINX}\"\nargs = [\"-infile\"]"));
    assert!(err.contains("{wav}"), "{err}");
    let err = write(&format!(
        "exec = \"{POCKETSPHINX}\"\nargs = [\"{{wav}}\", \"{{model}}\"]"
    ));
    assert!(err.contains("{model} needs `model`"), "{err}");
    let err = write(&format!("exec = \"{POCKETSPHINX}\"\nargs = [\"{{wave}}\"]"));
    assert!(err.contains("unknown placeholder {wave}"), "{err}");
    let err = write("exec = \"no-such-engine\"\nargs = [\"{wav}\"]");
    assert!(err.contains("not found in PATH"), "{err}");
    let err = write(&format!(
        "exec = \"{POCKETSPHINX}\"\nargs = [\"{{wav}}\"]\nmodel = \"/no/such/model\""
    ));
    assert!(err.contains("/no/such/model"), "{err}");
}

#[test]
fn a_members_pane_uses_the_leads_transcriber() {
    let lead = crew_bridge_configured(false, &[], Some(&pocketsphinx_config()));
    let member = crew_bridge_configured(false, &[], None);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    let full = lead.pair("phone", "full");
    let (status, answer) = post_wav(&lead, "web-1", &full, &go_forward());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["text"], "go forward ten meters");
    let lines = speech_lines(&lead);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["detail"]["machine"], "web-1");
    // The audio never left the lead: the member has no dictation to tell of.
    assert!(speech_lines(&member).is_empty());
}

/// `workspaces = ["~/code"]` with a secret in it, and `[sandbox]` on, then `speech`.
fn sandboxed(speech: &str) -> TestBridge {
    let mut b = TestBridge::start_with(Opts::default());
    b.stop();
    let home = b.dir.path().join("home");
    std::fs::create_dir_all(home.join("code")).expect("mkdir");
    std::fs::write(home.join("code/secret"), "workspace secret").expect("write");
    b.configure(&format!(
        "workspaces = [\"~/code\"]\n[sandbox]\nprofile = \"workspace\"\n{speech}"
    ));
    b.launch();
    b
}

#[test]
fn under_the_sandbox_the_engine_reads_its_own_files_and_nothing_else() {
    // The real engine, confined: its program, model and the recording are all it needs.
    let b = sandboxed(&pocketsphinx_config());
    let full = b.pair("phone", "full");
    let (status, answer) = post_wav(&b, "local", &full, &go_forward());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["text"], "go forward ten meters");

    // An engine that tries more: the recording reads, a workspace does not, nothing is written.
    let tools = tempfile::tempdir().expect("tempdir");
    let home = b.dir.path().join("home");
    let engine = script(
        tools.path(),
        "engine",
        &format!(
            "head -c 4 \"$1\"; echo\ncat {} || echo no-workspace\necho x > {} || echo no-write",
            home.join("code/secret").display(),
            tools.path().join("written").display()
        ),
    );
    let mut b = b;
    b.stop();
    b.configure(&format!(
        "workspaces = [\"~/code\"]\n[sandbox]\nprofile = \"workspace\"\n{}",
        reading_the_wav(&engine)
    ));
    b.launch();
    let (status, answer) = post_wav(&b, "local", &full, &quiet(1));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["text"], "RIFF no-workspace no-write", "{answer}");
    assert!(!tools.path().join("written").exists());
}

#[test]
fn a_revoked_device_s_dictation_ends_with_everything_it_started() {
    let tools = tempfile::tempdir().expect("tempdir");
    let pids = tools.path().join("pids");
    let engine = script(
        tools.path(),
        "engine",
        &format!(
            "sleep 1000 &\necho $$ $! > {}.tmp\nmv {0}.tmp {0}\nsleep 1000",
            pids.display()
        ),
    );
    let b = configured(&reading_the_wav(&engine), &[]);
    let full = b.pair("phone", "full");
    let answer = std::thread::scope(|s| {
        let post = s.spawn(|| post_wav(&b, "local", &full, &quiet(1)));
        let started = wait_for(Duration::from_secs(10), || {
            std::fs::read_to_string(&pids).ok()
        });
        assert!(started.is_some(), "the engine never started");
        b.cli_ok(&["devices", "revoke", "phone"]);
        post.join().expect("the request thread")
    });
    // The dictation answered (not after the engine's 1,000 s) and its processes are gone.
    assert_ne!(answer.0, 200, "{answer:?}");
    let text = std::fs::read_to_string(&pids).expect("pids");
    for pid in text.split_whitespace() {
        let gone = wait_for(Duration::from_secs(5), || {
            (!Path::new("/proc").join(pid).exists()).then_some(())
        });
        assert!(gone.is_some(), "process {pid} outlived its device's right");
    }
    let gone = wait_for(Duration::from_secs(5), || {
        recordings(&b).is_empty().then_some(())
    });
    assert!(gone.is_some(), "{:?}", recordings(&b));
}

#[test]
fn an_engine_that_prints_too_much_or_fails_answers_502_and_its_words_stay_out() {
    let tools = tempfile::tempdir().expect("tempdir");
    // 256 KiB is the most an engine may print; this one prints 300,000 bytes.
    let flood = script(
        tools.path(),
        "flood",
        "head -c 300000 /dev/zero | tr '\\0' a",
    );
    let b = configured(&reading_the_wav(&flood), &[]);
    let full = b.pair("phone", "full");
    let (status, answer) = post_wav(&b, "local", &full, &quiet(1));
    assert_eq!(
        (status, answer["error"].as_str()),
        (502, Some("speech engine failed"))
    );
    // Just under the cap is an answer.
    let mut b = b;
    b.stop();
    let under = script(
        tools.path(),
        "under",
        "head -c 262000 /dev/zero | tr '\\0' a",
    );
    b.configure(&reading_the_wav(&under));
    b.launch();
    let (status, answer) = post_wav(&b, "local", &full, &quiet(1));
    assert_eq!(status, 200, "{}", answer["error"]);
    assert_eq!(answer["text"].as_str().map(str::len), Some(262_000));
    // A failing engine: its error text is for the bridge's log, never the phone.
    b.stop();
    let failing = script(tools.path(), "failing", "echo secret-detail >&2; exit 3");
    b.configure(&reading_the_wav(&failing));
    b.launch();
    let (status, answer) = post_wav(&b, "local", &full, &quiet(1));
    assert_eq!(
        (status, answer["error"].as_str()),
        (502, Some("speech engine failed"))
    );
    assert!(!answer.to_string().contains("secret-detail"), "{answer}");
    assert!(recordings(&b).is_empty());
}
