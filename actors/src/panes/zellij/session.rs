//! The zellij backend's tasks: the manager that follows the sessions, and per session the task
//! that follows its panes and the `zellij subscribe` child that feeds their mirrors.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tokio::io::BufReader;
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};

use super::cli::{self, Pane, Update};
use super::mirror::Mirror;
use super::sockets::{self, Fingerprint};
use super::{token_of, Entry, State, ZellijStatus};
use crate::panes::line_reader::read_line_limited;

/// Follows the sessions: checks zellij's version once, then asks `list-sessions` whenever the
/// socket folder changed (looked at every poll; asked anyway every `sockets::RECHECK`, and when a
/// session's task ended) and keeps one task per running session.
pub(super) async fn manage(state: Arc<State>) {
    match state.run(&["--version".to_owned()]).await {
        Ok(out) => match cli::version(&out) {
            Ok(v) => *state.status.lock() = ZellijStatus::Ready(v),
            Err(e) => {
                *state.status.lock() = ZellijStatus::Unavailable(e.to_string());
                return;
            }
        },
        Err(e) => {
            *state.status.lock() = ZellijStatus::Unavailable(e.to_string());
            return;
        }
    }
    // The session tasks live in a set this task owns: when the backend is dropped and this task
    // aborted, the set goes with it and aborts them (and their children are killed).
    let mut tasks = JoinSet::new();
    let mut running: HashMap<String, AbortHandle> = HashMap::new();
    let root = state.socket_root();
    let mut asked: Option<(Fingerprint, Instant)> = None;
    let mut again = false;
    loop {
        let ended = std::iter::from_fn(|| tasks.try_join_next()).count() > 0;
        let looked = {
            let root = root.clone();
            tokio::task::spawn_blocking(move || sockets::fingerprint(&root))
                .await
                .unwrap_or_default()
        };
        let changed = asked
            .as_ref()
            .is_none_or(|(print, at)| *print != looked || at.elapsed() >= sockets::RECHECK);
        if changed || ended {
            // Asked now and once more a poll later: a server whose socket is there a moment
            // before it answers is listed the second time.
            again = true;
            asked = Some((looked, Instant::now()));
        } else if again {
            again = false;
        } else {
            tokio::time::sleep(state.options.poll).await;
            continue;
        }
        // No session at all is an error exit of `list-sessions`: the same as none.
        let out = state
            .run(&["list-sessions".to_owned(), "--no-formatting".to_owned()])
            .await
            .unwrap_or_default();
        let live: Vec<String> = cli::sessions(&out)
            .into_iter()
            .filter(|s| !s.exited)
            .map(|s| s.name)
            .collect();
        running.retain(|name, task| {
            let keep = live.contains(name) && !task.is_finished();
            if !keep {
                task.abort();
                drop_session(&state, name);
            }
            keep
        });
        for name in live {
            if let std::collections::hash_map::Entry::Vacant(slot) = running.entry(name) {
                let index = state.session_index(slot.key());
                let name = slot.key().clone();
                slot.insert(tasks.spawn(follow(Arc::clone(&state), index, name)));
            }
        }
        tokio::time::sleep(state.options.poll).await;
    }
}

/// Drops every mirror of session `name` (their `subscribe` receivers close).
fn drop_session(state: &State, name: &str) {
    let mut panes = state.panes.lock();
    let before = panes.len();
    panes.retain(|_, e| e.session != name);
    let changed = panes.len() != before;
    drop(panes);
    if changed {
        state.set_changed();
    }
}

/// Follows one session: its panes every poll, and a `subscribe` child for the set of them,
/// started again when the set changes.
async fn follow(state: Arc<State>, index: usize, name: String) {
    let instance = instance_of(&state, &name).await;
    let mut followed: Vec<u32> = Vec::new();
    // The subscription's reader, in a set of its own so that aborting this task aborts it too.
    let mut reader: JoinSet<()> = JoinSet::new();
    loop {
        let args = [
            "--session".to_owned(),
            name.clone(),
            "action".to_owned(),
            "list-panes".to_owned(),
            "--json".to_owned(),
        ];
        let Ok(panes) = state
            .run(&args)
            .await
            .and_then(|out| cli::panes(&out).map_err(Into::into))
        else {
            // The session went away between the two asks: the manager sees it next time.
            tokio::time::sleep(state.options.poll).await;
            continue;
        };
        let ids = place(&state, index, &name, &instance, &panes);
        reread(&state, index, &name).await;
        find_processes(&state, index, &name).await;
        let ended = reader.try_join_next().is_some();
        if ids != followed || (ended && !ids.is_empty()) || (reader.is_empty() && !ids.is_empty()) {
            // A new set: dropping the old one aborts its reader, whose child is killed.
            reader = JoinSet::new();
            if !ids.is_empty() {
                reader.spawn(subscribe(
                    Arc::clone(&state),
                    index,
                    name.clone(),
                    ids.clone(),
                ));
            }
            followed = ids;
        }
        tokio::time::sleep(state.options.poll).await;
    }
}

/// What tells this run of session `name` from another of the same name, for its pane tokens: its
/// server's pid and start time, so tokens stay across bridge restarts; when the server cannot be
/// read, the time this bridge first saw the session (tokens then change with a restart).
async fn instance_of(state: &State, name: &str) -> String {
    let (session, dir) = (name.to_owned(), state.socket_dir());
    let server =
        tokio::task::spawn_blocking(move || super::process::server_of(&session, dir.as_deref()))
            .await
            .ok()
            .flatten();
    match server {
        Some((pid, start)) => format!("server-{pid}-{start}"),
        None => {
            let seen = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            format!("seen-{seen}")
        }
    }
}

/// Reads the whole history again of each pane of the session whose mirror may have lost some
/// (more than a screen of output came between two updates): `dump-screen --full --ansi`, its last
/// lines the viewport as the mirror holds it, the rest the scrollback.
async fn reread(state: &State, index: usize, session: &str) {
    let lost: Vec<u32> = state
        .panes
        .lock()
        .iter()
        .filter(|((i, _), e)| *i == index && e.lost)
        .map(|((_, n), _)| *n)
        .collect();
    for pane in lost {
        let args = [
            "--session".to_owned(),
            session.to_owned(),
            "action".to_owned(),
            "dump-screen".to_owned(),
            "--full".to_owned(),
            "--ansi".to_owned(),
            "--pane-id".to_owned(),
            format!("terminal_{pane}"),
        ];
        let Ok(dump) = state.run(&args).await else {
            continue;
        };
        let lines: Vec<String> = dump.lines().map(str::to_owned).collect();
        let mut entries = state.panes.lock();
        let Some(e) = entries.get_mut(&(index, pane)) else {
            continue;
        };
        let (rows, _) = e.mirror.screen().size();
        let at = lines.len().saturating_sub(usize::from(rows));
        e.mirror.seed(&lines[..at], &lines[at..]);
        e.lost = false;
        e.seq.send_modify(|s| *s += 1);
    }
}

/// Finds the first process of each pane of the session that has none (or whose process is gone):
/// one look through `/proc`, only when some pane needs it.
async fn find_processes(state: &Arc<State>, index: usize, session: &str) {
    let needed = state.panes.lock().iter().any(|((i, _), e)| {
        *i == index
            && e.pid
                .is_none_or(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    });
    if !needed {
        return;
    }
    let (name, dir) = (session.to_owned(), state.socket_dir());
    let Ok(found) =
        tokio::task::spawn_blocking(move || super::process::pane_pids(&name, dir.as_deref())).await
    else {
        return;
    };
    let mut entries = state.panes.lock();
    for ((i, n), e) in entries.iter_mut() {
        if *i == index {
            e.pid = found.get(n).copied();
        }
    }
}

/// Brings the session's entries in line with `panes`: new ones made, sizes, cursors, names and
/// liveness updated, gone ones dropped. Returns the terminal numbers, sorted.
fn place(state: &State, index: usize, session: &str, instance: &str, panes: &[Pane]) -> Vec<u32> {
    let names = names(panes);
    let mut entries = state.panes.lock();
    let before = entries.len();
    entries.retain(|(i, n), _| *i != index || panes.iter().any(|p| p.id == *n));
    let mut changed = entries.len() != before;
    for p in panes {
        let rows = u16::try_from(p.pane_content_rows).unwrap_or(u16::MAX);
        let cols = u16::try_from(p.pane_content_columns).unwrap_or(u16::MAX);
        let e = entries.entry((index, p.id)).or_insert_with(|| {
            changed = true;
            Entry {
                session: session.to_owned(),
                name: String::new(),
                alive: true,
                mirror: Mirror::new(rows, cols, *state.scrollback.lock()),
                seq: watch::channel(0).0,
                last_activity: SystemTime::now(),
                token: token_of(&state.salt, session, instance, p.id),
                lost: false,
                pid: None,
                tab: p.tab_id,
            }
        });
        e.mirror.resize(rows, cols);
        let cursor = p.cursor_coordinates_in_pane.map(|(x, y)| {
            (
                u16::try_from(x).unwrap_or(u16::MAX),
                u16::try_from(y).unwrap_or(u16::MAX),
            )
        });
        e.mirror.set_cursor(cursor);
        e.tab = p.tab_id;
        let name = names.get(&p.id).cloned().unwrap_or_default();
        changed |= e.alive == p.exited || e.name != name;
        e.alive = !p.exited;
        e.name = name;
    }
    drop(entries);
    if changed {
        state.set_changed();
    }
    let mut ids: Vec<u32> = panes.iter().map(|p| p.id).collect();
    ids.sort_unstable();
    ids
}

/// Each pane's name: its tab's, or `<tab>.<place in the tab>` when the tab has several panes.
fn names(panes: &[Pane]) -> HashMap<u32, String> {
    let mut tabs: BTreeMap<(usize, &str), Vec<u32>> = BTreeMap::new();
    for p in panes {
        tabs.entry((p.tab_position, p.tab_name.as_str()))
            .or_default()
            .push(p.id);
    }
    let mut out = HashMap::new();
    for ((_, tab), ids) in tabs {
        if let [only] = ids[..] {
            out.insert(only, tab.to_owned());
        } else {
            for (i, id) in ids.iter().enumerate() {
                out.insert(*id, format!("{tab}.{i}"));
            }
        }
    }
    out
}

/// Runs `zellij subscribe` for `panes` of session `name` and feeds each update to its mirror,
/// until the child ends (the session closed, or the task is aborted and the child killed).
async fn subscribe(state: Arc<State>, index: usize, name: String, panes: Vec<u32>) {
    let mut c = state.command();
    c.arg("--session")
        .arg(&name)
        .args(cli::subscribe_args(&panes, *state.scrollback.lock()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let Ok(mut child) = c.spawn() else { return };
    let Some(stdout) = child.stdout.take() else {
        return;
    };
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match read_line_limited(&mut reader, &mut buf, cli::MAX_LINE).await {
            Ok(true) => {}
            Ok(false) | Err(_) => break,
        }
        let line = String::from_utf8_lossy(&buf);
        match cli::update(&line) {
            Ok(Some(Update::Screen {
                pane,
                viewport,
                scrollback,
                initial,
            })) => {
                let mut entries = state.panes.lock();
                let Some(e) = entries.get_mut(&(index, pane)) else {
                    continue;
                };
                if initial {
                    e.mirror
                        .seed(scrollback.as_deref().unwrap_or_default(), &viewport);
                    e.lost = false;
                } else if e.mirror.update(&viewport) {
                    e.lost = true;
                }
                e.last_activity = SystemTime::now();
                e.seq.send_modify(|s| *s += 1);
            }
            Ok(Some(Update::Closed { pane })) => {
                let gone = state.panes.lock().remove(&(index, pane)).is_some();
                if gone {
                    state.set_changed();
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(session = %name, "zellij subscribe: {e}");
            }
        }
    }
    let _ = child.kill().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pane_is_named_by_its_tab_never_by_the_title_its_program_sets() {
        let json = r#"[
          {"id":0,"is_plugin":false,"title":"EVIL title","is_suppressed":false,"pane_content_rows":22,"pane_content_columns":80,"tab_name":"work","tab_position":0},
          {"id":1,"is_plugin":false,"title":"Pane #2","is_suppressed":false,"pane_content_rows":22,"pane_content_columns":80,"tab_name":"logs","tab_position":1},
          {"id":4,"is_plugin":false,"title":"tail -f x","is_suppressed":false,"pane_content_rows":22,"pane_content_columns":80,"tab_name":"logs","tab_position":1}
        ]"#;
        let panes = cli::panes(json).expect("panes");
        let names = names(&panes);
        assert_eq!(names[&0], "work", "a tab of one pane: the tab's name");
        assert_eq!(
            names[&1], "logs.0",
            "several: the tab's name and the place in it, from 0"
        );
        assert_eq!(names[&4], "logs.1");
        assert!(names
            .values()
            .all(|n| !n.contains("EVIL") && !n.contains("tail")));
    }
}
