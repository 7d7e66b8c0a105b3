//! `cargo install --path .` gives a whole `collie` (SPEC §17): the phone app is inside the
//! binary (minified by build.rs in Rust, embedded with `include_bytes!`; no step needs node), so a
//! copy of the binary far from the source tree — as `cargo install` leaves it — serves the app.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::collie_bin;

/// The copied bridge, stopped (SIGTERM, then SIGKILL) when the test ends, pass or fail.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let done = support::wait_for(Duration::from_secs(10), || self.0.try_wait().ok().flatten());
        if done.is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[test]
fn a_copy_of_the_binary_alone_serves_the_phone_app() {
    let dir = tempfile::Builder::new()
        .prefix("collie-installed-")
        .tempdir()
        .expect("tempdir");
    let bin = dir.path().join("bin/collie");
    std::fs::create_dir_all(bin.parent().expect("a folder")).expect("mkdir");
    std::fs::copy(collie_bin(), &bin).expect("copy the binary");
    for d in ["home", "state", "config"] {
        std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
    }
    let mut child = Command::new(&bin)
        .args(["bridge", "--port", "0", "--name", "installed"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path().join("home"))
        .env("COLLIE_STATE_DIR", dir.path().join("state"))
        .env("COLLIE_CONFIG_DIR", dir.path().join("config"))
        .env("TMUX_TMPDIR", dir.path().join("home"))
        .env("COLLIE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the copied binary");
    let stdout = child.stdout.take().expect("stdout");
    let running = Running(child);
    let mut banner = String::new();
    BufReader::new(stdout)
        .read_line(&mut banner)
        .expect("the banner");
    let base = banner
        .split("http://")
        .nth(1)
        .unwrap_or_else(|| panic!("unexpected banner: {banner:?}"))
        .trim()
        .to_owned();

    let (status, _, html) = support::http("GET", &format!("http://{base}/"), None, None, &[]);
    assert_eq!(status, 200);
    assert!(html.contains("src=\"/app.js\""), "{html}");
    let (status, _, script) =
        support::http("GET", &format!("http://{base}/app.js"), None, None, &[]);
    assert_eq!(status, 200);
    assert!(script.contains("import"), "the app's script: {script}");
    let (status, _, manifest) = support::http(
        "GET",
        &format!("http://{base}/manifest.webmanifest"),
        None,
        None,
        &[],
    );
    assert_eq!(status, 200);
    assert!(manifest.contains("\"name\""), "{manifest}");
    drop(running);
}
