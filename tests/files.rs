//! Black-box tests of the phone's Files and Changes views and of uploads (SPEC §11, "File view and
//! browse", "Uploads") against a real bridge, a real home folder in a temp dir, real git and a
//! real tmux server: the routes' rules — tier `files`, `private, no-store`, no `.git`, no Collie
//! state file, masking, paging — and the uploads' folder, modes, names, size cap, workspace rule
//! and audit lines.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{Opts, TestBridge};

/// A GitHub-token-shaped string (the masker keeps `ghp_` and one more character).
const TOKEN: &str = "ghp_Abcdefghijklmnopqrstuvwxyz0123456789";

fn home(b: &TestBridge) -> PathBuf {
    b.dir.path().join("home")
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// `GET` with the answer's headers: (status, headers, JSON body).
fn get(b: &TestBridge, token: &str, path: &str) -> (u16, Vec<(String, String)>, Value) {
    let (status, headers, text) = b.raw("GET", path, Some(token), None, &[]);
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

fn q(s: &str) -> String {
    support::url_encode(s)
}

fn names(listing: &Value) -> Vec<String> {
    listing["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {listing}"))
        .iter()
        .map(|e| e["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("exists").permissions().mode() & 0o777
}

/// A home with a project: a file holding a token, a `.git` folder, a link to it, a file named
/// like a Collie state file, a long file and a binary one.
fn project(b: &TestBridge) -> PathBuf {
    let proj = home(b).join("proj");
    std::fs::create_dir_all(proj.join(".git")).expect("set up the test");
    std::fs::write(proj.join(".git/config"), "[core]\n").expect("set up the test");
    std::os::unix::fs::symlink(proj.join(".git"), proj.join("gitlink")).expect("set up the test");
    std::fs::write(proj.join("notes.txt"), format!("key {TOKEN} here\n")).expect("set up the test");
    std::fs::write(proj.join("sent.jsonl"), "{}\n").expect("set up the test");
    let long: String = (0..1200).map(|i| format!("line {i}\n")).collect();
    std::fs::write(proj.join("long.txt"), long).expect("set up the test");
    std::fs::write(proj.join("blob.bin"), [0u8, 1, 2, 0, 255]).expect("set up the test");
    proj
}

#[test]
fn files_view_browses_opens_masks_and_hides_git_and_state_files() {
    let b = TestBridge::start_with(Opts {
        log_to_file: true,
        ..Opts::default()
    });
    let proj = project(&b);
    let files = b.pair("phone", "files");
    let p = proj.display().to_string();

    // The root (the workspace: the home folder) and `private, no-store`.
    let (status, headers, root) = get(&b, &files, "/api/files/local/list");
    assert_eq!(status, 200, "{root}");
    assert_eq!(header(&headers, "cache-control"), Some("private, no-store"));
    assert!(names(&root).contains(&"proj".to_owned()), "{root}");

    // A folder: `.git` never listed, nor a file named like a Collie state file.
    let (status, _, listing) = get(&b, &files, &format!("/api/files/local/list?path={}", q(&p)));
    assert_eq!(status, 200, "{listing}");
    let shown = names(&listing);
    assert!(shown.contains(&"notes.txt".to_owned()), "{listing}");
    assert!(!shown.iter().any(|n| n == ".git"), "{listing}");
    assert!(!shown.iter().any(|n| n == "sent.jsonl"), "{listing}");

    // `.git` cannot be browsed or opened, directly or through a link.
    for path in [
        format!("/api/files/local/list?path={}", q(&format!("{p}/.git"))),
        format!(
            "/api/files/local/read?path={}",
            q(&format!("{p}/.git/config"))
        ),
        format!("/api/files/local/list?path={}", q(&format!("{p}/gitlink"))),
        format!(
            "/api/files/local/read?path={}",
            q(&format!("{p}/gitlink/config"))
        ),
        format!(
            "/api/files/local/read?path={}",
            q(&format!("{p}/sent.jsonl"))
        ),
    ] {
        let (status, headers, body) = get(&b, &files, &path);
        assert_eq!(status, 403, "{path}: {body}");
        assert_eq!(body["error"], "path not allowed", "{path}");
        assert_eq!(header(&headers, "cache-control"), Some("private, no-store"));
    }

    // Opened, masked: the token is dots past its prefix.
    let (status, headers, file) = get(
        &b,
        &files,
        &format!(
            "/api/files/local/read?path={}",
            q(&format!("{p}/notes.txt"))
        ),
    );
    assert_eq!(status, 200, "{file}");
    assert_eq!(header(&headers, "cache-control"), Some("private, no-store"));
    let text = file["content"].as_str().expect("content");
    assert!(!text.contains(TOKEN), "{text}");
    assert!(text.contains("ghp_A•••"), "{text}");

    // A long file opens in pages.
    let (status, _, page) = get(
        &b,
        &files,
        &format!(
            "/api/files/local/read?path={}&offset=500&length=500",
            q(&format!("{p}/long.txt"))
        ),
    );
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["offset"], 500);
    assert_eq!(page["lines"], 500);
    assert_eq!(page["total_lines"], 1200);
    assert_eq!(page["truncated"], true);
    assert!(page["content"].as_str().unwrap().starts_with("line 500\n"));
    let (status, _, body) = get(
        &b,
        &files,
        &format!(
            "/api/files/local/read?path={}&length=501",
            q(&format!("{p}/long.txt"))
        ),
    );
    assert_eq!(status, 400, "a page is at most 500 lines: {body}");

    // A binary file says so, without content.
    let (status, _, bin) = get(
        &b,
        &files,
        &format!("/api/files/local/read?path={}", q(&format!("{p}/blob.bin"))),
    );
    assert_eq!(status, 200, "{bin}");
    assert_eq!(bin["binary"], true);
    assert!(bin["content"].is_null(), "{bin}");

    // Outside the workspace.
    let (status, _, body) = get(&b, &files, "/api/files/local/read?path=%2Fetc%2Fpasswd");
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "path outside the workspace");

    // Audited as the tools are, with the path and never the contents.
    let lines = b.audit_lines();
    let reads: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "tool.read_file")
        .collect();
    assert!(
        reads.iter().any(|l| l["detail"]["path"]
            .as_str()
            .unwrap_or("")
            .ends_with("notes.txt")),
        "{reads:?}"
    );
    let all = serde_json::to_string(&lines).unwrap();
    assert!(!all.contains("ghp_Abc"), "an audit line holds the contents");
    assert!(
        !all.contains("line 500"),
        "an audit line holds the contents"
    );
}

#[test]
fn a_read_device_gets_insufficient_tier_everywhere() {
    let b = TestBridge::start_with(Opts {
        log_to_file: true,
        ..Opts::default()
    });
    project(&b);
    let read = b.pair("viewer", "read");
    for path in [
        "/api/files/local/list",
        "/api/files/local/read?path=proj%2Fnotes.txt",
        "/api/files/local/changes",
        "/api/blobs/00000000000000000000000000000000",
    ] {
        let (status, _, body) = get(&b, &read, path);
        assert_eq!(status, 403, "{path}: {body}");
        assert_eq!(body["error"], "insufficient tier", "{path}");
    }
    let (status, body) = b.upload(&read, "local", "t0-0", "a.txt", b"hello");
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "insufficient tier");
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn changes_view_shows_a_masked_diff_and_its_states() {
    let b = TestBridge::start_with(Opts {
        log_to_file: true,
        ..Opts::default()
    });
    let files = b.pair("phone", "files");
    let repo = home(&b).join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "a.txt"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let at = format!(
        "/api/files/local/changes?path={}",
        q(&repo.display().to_string())
    );

    let (status, headers, clean) = get(&b, &files, &at);
    assert_eq!(status, 200, "{clean}");
    assert_eq!(header(&headers, "cache-control"), Some("private, no-store"));
    assert_eq!(clean["files"].as_array().map(Vec::len), Some(0), "{clean}");

    std::fs::write(repo.join("a.txt"), format!("one\n{TOKEN}\nthree\n")).unwrap();
    let (status, _, diff) = get(&b, &files, &at);
    assert_eq!(status, 200, "{diff}");
    let file = &diff["files"][0];
    assert_eq!(file["path"], "a.txt", "{diff}");
    let text = file["diff"].as_str().expect("diff text");
    assert!(text.contains("-two"), "{text}");
    assert!(text.contains("+ghp_A•"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");

    let plain = home(&b).join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let (status, _, body) = get(
        &b,
        &files,
        &format!(
            "/api/files/local/changes?path={}",
            q(&plain.display().to_string())
        ),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "not a git repository");
}

/// A tmux window whose shell starts in `dir`; its pane id as the bridge names it.
fn pane_in(b: &TestBridge, token: &str, dir: &Path) -> String {
    let first = b.first_tmux_pane(token);
    let prefix = first.split('-').next().expect("t<i>").to_owned();
    let tmux = b.tmux.as_ref().expect("tmux");
    let out = tmux
        .cmd()
        .args(["new-window", "-d", "-t", "main", "-c"])
        .arg(dir)
        .args(["-P", "-F", "#{pane_id}"])
        .output()
        .expect("tmux new-window");
    assert!(out.status.success(), "{out:?}");
    let n = String::from_utf8_lossy(&out.stdout)
        .trim()
        .trim_start_matches('%')
        .to_owned();
    let id = format!("{prefix}-{n}");
    // The bridge learns of the window from tmux's notifications: wait until it lists it.
    support::wait_for(Duration::from_secs(10), || {
        let (s, v) = b.get("/api/panes", Some(token));
        (s == 200).then_some(())?;
        v["panes"]
            .as_array()?
            .iter()
            .any(|p| p["pane"] == id.as_str())
            .then_some(())
    })
    .unwrap_or_else(|| panic!("the bridge does not list {id}"));
    id
}

#[test]
fn uploads_land_in_the_panes_folder_private_and_never_overwriting() {
    let b = TestBridge::start_with(Opts {
        with_tmux: true,
        log_to_file: true,
        ..Opts::default()
    });
    let proj = home(&b).join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let files = b.pair("phone", "files");
    let pane = pane_in(&b, &files, &proj);

    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRsecret-pixels";
    let (status, up) = b.upload(&files, "local", &pane, "shot.png", png);
    assert_eq!(status, 200, "{up}");
    let uploads = std::fs::canonicalize(&proj)
        .unwrap()
        .join(".collie-uploads");
    let path = uploads.join("shot.png");
    assert_eq!(up["path"], path.display().to_string(), "{up}");
    assert_eq!(up["name"], "shot.png");
    assert_eq!(up["size"], png.len());
    assert_eq!(std::fs::read(&path).unwrap(), png);
    assert_eq!(mode(&uploads), 0o700);
    assert_eq!(mode(&path), 0o600);
    let id = up["id"].as_str().expect("id").to_owned();
    let blob = b.state().join("blobs").join(&id);
    assert_eq!(mode(&blob), 0o600);
    assert_eq!(mode(&b.state().join("blobs")), 0o700);

    // The same name again: a suffix, the first file unchanged.
    let (status, again) = b.upload(&files, "local", &pane, "shot.png", b"second");
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["name"], "shot-1.png");
    assert_eq!(std::fs::read(&path).unwrap(), png);
    assert_eq!(
        std::fs::read(uploads.join("shot-1.png")).unwrap(),
        b"second"
    );

    // Served back: an image as its type, anything else as an attachment; never cached.
    let (status, headers, _) = b.raw("GET", &format!("/api/blobs/{id}"), Some(&files), None, &[]);
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("image/png"));
    assert_eq!(header(&headers, "cache-control"), Some("private, no-store"));
    assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
    let (_, html) = b.upload(
        &files,
        "local",
        &pane,
        "page.html",
        b"<script>alert(1)</script>",
    );
    let (status, headers, _) = b.raw(
        "GET",
        &format!("/api/blobs/{}", html["id"].as_str().unwrap()),
        Some(&files),
        None,
        &[],
    );
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(header(&headers, "content-disposition"), Some("attachment"));
    for bad in ["../../x", "00000000000000000000000000000000", "ABC"] {
        let (status, _, _) = b.raw("GET", &format!("/api/blobs/{bad}"), Some(&files), None, &[]);
        assert_eq!(status, 404, "{bad}");
    }

    // Names: one plain component.
    for name in ["../escape.txt", ".bashrc", "a/b.txt", ".git", ""] {
        let (status, body) = b.upload(&files, "local", &pane, name, b"x");
        assert_eq!(status, 400, "{name:?}: {body}");
    }
    assert!(!home(&b).join("escape.txt").exists());

    // The size cap: 10 MiB, one byte more is 413 and leaves nothing behind.
    // The declared length is refused before any of the body is read: the request below sends
    // none of it and still gets its answer.
    let before = std::fs::read_dir(&uploads).unwrap().count();
    let (status, answer) = b.declare_only(
        &format!(
            "/api/blobs?pane={}&name=big.bin",
            support::url_encode(&pane)
        ),
        &files,
        10 * 1024 * 1024 + 1,
    );
    assert_eq!(status, 413, "{answer}");
    assert!(answer.to_string().contains("10 MiB"), "{answer}");
    assert_eq!(std::fs::read_dir(&uploads).unwrap().count(), before);
    let big = vec![b'a'; 10 * 1024 * 1024];
    let (status, body) = b.upload(&files, "local", &pane, "ten.txt", &big);
    assert_eq!(status, 200, "exactly 10 MiB is taken: {body}");

    // A pane whose folder is outside the workspace (the session's first pane starts in the
    // test's own folder), or in a `.git` folder, is refused; nothing is written.
    let outside = b.first_tmux_pane(&files);
    let (status, body) = b.upload(&files, "local", &outside, "x.txt", b"x");
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "path outside the workspace");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let in_git = pane_in(&b, &files, &proj.join(".git"));
    let (status, body) = b.upload(&files, "local", &in_git, "x.txt", b"x");
    assert_eq!(status, 403, "{body}");
    assert!(!proj.join(".git/.collie-uploads").exists());
    let (status, body) = b.upload(&files, "local", "t0-9999", "x.txt", b"x");
    assert_eq!(status, 404, "{body}");

    // The Changes of a pane's folder: the repository it is in; a pane outside is refused.
    git(&proj, &["init", "-q"]);
    let (status, _, diff) = get(&b, &files, &format!("/api/files/local/changes?pane={pane}"));
    assert_eq!(status, 200, "{diff}");
    assert_eq!(
        diff["root"],
        std::fs::canonicalize(&proj).unwrap().display().to_string(),
        "{diff}"
    );
    let (status, _, body) = get(
        &b,
        &files,
        &format!("/api/files/local/changes?pane={outside}"),
    );
    assert_eq!(status, 403, "{body}");

    // Audited: the pane, the folder, the name, the size; the path once written; never bytes.
    let lines = b.audit_lines();
    let ups: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "tool.upload")
        .collect();
    let before_write = ups
        .iter()
        .find(|l| l["detail"]["name"] == "shot.png")
        .unwrap_or_else(|| panic!("{ups:?}"));
    assert_eq!(before_write["detail"]["size"], png.len());
    assert_eq!(before_write["detail"]["pane"], pane.as_str());
    assert_eq!(before_write["device"], "phone");
    assert!(ups
        .iter()
        .any(|l| l["detail"]["phase"] == "done" && l["detail"]["blob"] == id.as_str()));
    // The log with its `tool.upload` lines still verifies.
    b.cli_ok(&["audit", "verify"]);
    let all = serde_json::to_string(&lines).unwrap();
    assert!(!all.contains("secret-pixels"));
    assert!(!all.contains("alert(1)"));
    assert!(lines
        .iter()
        .any(|l| l["event"] == "security.denied" && l["detail"]["upload"] == "pane folder"));
}

#[test]
fn a_members_files_come_through_the_lead_masked_and_without_git() {
    let lead = support::crew_bridge(false, &[]);
    let member = support::crew_bridge(false, &[]);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    let proj = project(&member);
    let files = lead.pair("phone", "files");
    let p = proj.display().to_string();

    let (status, headers, listing) = get(
        &lead,
        &files,
        &format!("/api/files/web-1/list?path={}", q(&p)),
    );
    assert_eq!(status, 200, "{listing}");
    assert_eq!(header(&headers, "cache-control"), Some("private, no-store"));
    let shown = names(&listing);
    assert!(shown.contains(&"notes.txt".to_owned()), "{listing}");
    assert!(!shown.iter().any(|n| n == ".git"), "{listing}");

    let (status, _, file) = get(
        &lead,
        &files,
        &format!(
            "/api/files/web-1/read?path={}",
            q(&format!("{p}/notes.txt"))
        ),
    );
    assert_eq!(status, 200, "{file}");
    let text = file["content"].as_str().expect("content");
    assert!(!text.contains(TOKEN) && text.contains("ghp_A•"), "{text}");

    let (status, _, body) = get(
        &lead,
        &files,
        &format!(
            "/api/files/web-1/read?path={}",
            q(&format!("{p}/gitlink/config"))
        ),
    );
    assert_eq!(status, 403, "{body}");

    // Uploads reach the member's panes through the lead (decision 0036; tests/crew_extras.rs):
    // this member has no such pane, and says so.
    let (status, body) = lead.upload(&files, "web-1", "t0-0", "a.txt", b"x");
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"], "no such pane");
}
