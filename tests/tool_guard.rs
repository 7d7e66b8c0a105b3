//! The tool guard with the real `collie` binary (SPEC §11, decision 0032): a tool's command and
//! everything it started die with the guard's parent, also when the parent is SIGKILLed, and a
//! signal to the guard's group leaves no orphan.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use support::procs::{self, DEADLINE};
use support::{collie_bin, wait_for};

/// Kills what a test started, pass or fail: the parent and the guard's group (only while the
/// group still has live members, so a recycled id is never hit).
struct Cleanup {
    children: Vec<Child>,
    group: Option<i32>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(g) = self.group {
            if !procs::live_in_group(g).is_empty() {
                let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
            }
        }
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The `sleep`s alive in group `g`.
fn sleeps_in(g: i32) -> usize {
    procs::live_in_group(g)
        .iter()
        .filter(|p| p.comm == "sleep")
        .count()
}

#[test]
fn command_and_grandchild_die_when_the_parent_is_sigkilled() {
    // The parent is a shell that starts the guard in the background, prints its pid and waits.
    let script = r#""$0" __tool-guard $$ -- sh -c 'sleep 1000 & sleep 1000' & echo $!; wait"#;
    let mut parent = Command::new("sh")
        .args(["-c", script])
        .arg(collie_bin())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the parent shell");
    let mut line = String::new();
    BufReader::new(parent.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("read the guard's pid");
    let guard: i32 = line.trim().parse().expect("a pid");
    let parent_pid = Pid::from_raw(i32::try_from(parent.id()).expect("pid fits"));
    let mut cleanup = Cleanup {
        children: vec![parent],
        group: Some(guard),
    };
    // Waits for the command's two sleeps (the one in the background is the grandchild).
    assert!(
        wait_for(DEADLINE, || (sleeps_in(guard) == 2).then_some(())).is_some(),
        "the guarded command never started: {:?}",
        procs::live_in_group(guard)
    );
    kill(parent_pid, Signal::SIGKILL).expect("SIGKILL the parent");
    let _ = cleanup.children[0].wait();
    // Waits for the parent-death signal to reach the guard and the guard to end its group.
    let gone = wait_for(DEADLINE, || {
        procs::live_in_group(guard).is_empty().then_some(())
    });
    assert!(
        gone.is_some(),
        "left behind: {:?}",
        procs::live_in_group(guard)
    );
    cleanup.group = None;
}

#[test]
fn sigkill_of_the_group_with_the_parent_alive_leaves_no_orphan() {
    let mut guard = Command::new(collie_bin())
        .args(["__tool-guard", &procs::me().to_string(), "--"])
        .args(["sh", "-c", "sleep 1000 & sleep 1000"])
        .spawn()
        .expect("start the guard");
    let g = i32::try_from(guard.id()).expect("pid fits");
    // Waits for the guard to make its group and start both sleeps.
    assert!(wait_for(DEADLINE, || (sleeps_in(g) == 2).then_some(())).is_some());
    let status;
    {
        let _cleanup = Cleanup {
            children: Vec::new(),
            group: Some(g),
        };
        killpg(Pid::from_raw(g), Signal::SIGKILL).expect("SIGKILL the group");
        // Waits for the kernel to deliver it to every member.
        let gone = wait_for(DEADLINE, || {
            procs::live_in_group(g).is_empty().then_some(())
        });
        assert!(gone.is_some(), "left behind: {:?}", procs::live_in_group(g));
        status = guard.wait().expect("reap the guard");
    }
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9));
}

#[test]
fn sigterm_to_the_group_ends_even_a_command_that_ignores_it() {
    // `trap '' TERM` makes the shell and the sleep it starts ignore SIGTERM: the guard must
    // escalate to SIGKILL after its grace.
    let guard = Command::new(collie_bin())
        .args(["__tool-guard", &procs::me().to_string(), "--"])
        .args(["sh", "-c", "trap '' TERM; sleep 1000; echo survived"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the guard");
    let g = i32::try_from(guard.id()).expect("pid fits");
    let _cleanup = Cleanup {
        children: Vec::new(),
        group: Some(g),
    };
    assert!(wait_for(DEADLINE, || (sleeps_in(g) == 1).then_some(())).is_some());
    killpg(Pid::from_raw(g), Signal::SIGTERM).expect("SIGTERM the group");
    // Waits past the guard's grace for its SIGKILL.
    let gone = wait_for(DEADLINE, || {
        procs::live_in_group(g).is_empty().then_some(())
    });
    assert!(gone.is_some(), "left behind: {:?}", procs::live_in_group(g));
    let out = guard.wait_with_output().expect("reap the guard");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("survived"));
}

#[test]
fn the_guard_passes_output_and_exit_code_through() {
    let out = Command::new(collie_bin())
        .args(["__tool-guard", &procs::me().to_string(), "--"])
        .args(["sh", "-c", "echo out; echo err >&2; exit 7"])
        .output()
        .expect("run the guard");
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
}

#[test]
fn a_guard_whose_parent_is_not_the_named_one_runs_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = dir.path().join("ran");
    // The test runner's pid is alive but is not the guard's parent (this test process is).
    let not_parent = nix::unistd::getppid().as_raw().to_string();
    let out = Command::new(collie_bin())
        .args(["__tool-guard", &not_parent, "--", "touch"])
        .arg(&marker)
        .output()
        .expect("run the guard");
    assert_eq!(out.status.code(), Some(125));
    assert!(!marker.exists());
    let bad = Command::new(collie_bin())
        .args(["__tool-guard", "nonsense"])
        .output()
        .expect("run the guard");
    assert_eq!(bad.status.code(), Some(125));
    // The hidden subcommand stays out of the help.
    let help = Command::new(collie_bin())
        .arg("--help")
        .output()
        .expect("help");
    assert!(!String::from_utf8_lossy(&help.stdout).contains("tool-guard"));
}
