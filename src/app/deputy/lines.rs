//! The lines a deputy wrote standing in (SPEC §13): read from its own audit log for its lead,
//! and kept by the lead in its own log as `deputy.line` lines (so they join the lead's hash chain
//! and `collie audit tail --crew` shows them).

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

/// The most lines one answer carries.
pub const MAX_LINES: usize = 1000;
/// The most bytes of lines one answer carries (well under a crew frame's 16 MiB).
pub const MAX_BYTES: usize = 4 << 20;

/// The lines of the log at `path`, or `None` when there is no log yet.
fn log_lines(path: &Path) -> std::io::Result<Option<std::io::Lines<BufReader<std::fs::File>>>> {
    match std::fs::File::open(path) {
        Ok(f) => Ok(Some(BufReader::new(f).lines())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The lines of the log at `path` after `seq` `after` that were written standing in (`"via":
/// "deputy"`), at most [`MAX_LINES`] and [`MAX_BYTES`]; and the last `seq` looked at (`after`
/// when there was nothing more). A line that does not read is skipped: the log's own check
/// (`collie audit verify`) is where a damaged log is found.
pub fn stand_in_lines(path: &Path, after: u64) -> std::io::Result<(Vec<String>, u64)> {
    let Some(log) = log_lines(path)? else {
        return Ok((Vec::new(), after));
    };
    let mut lines = Vec::new();
    let (mut bytes, mut scanned) = (0, after);
    for line in log {
        let line = line?;
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(seq) = value["seq"].as_u64().filter(|s| *s > after) else {
            continue;
        };
        if value["detail"]["via"] == "deputy" {
            if lines.len() == MAX_LINES || bytes + line.len() > MAX_BYTES {
                break;
            }
            bytes += line.len();
            lines.push(line);
        }
        scanned = seq;
    }
    Ok((lines, scanned))
}

/// The last `seq` of `deputy`'s lines the lead's log at `path` keeps (0: none).
pub fn kept_up_to(path: &Path, deputy: &str) -> std::io::Result<u64> {
    let Some(log) = log_lines(path)? else {
        return Ok(0);
    };
    let mut last = 0;
    for line in log {
        let line = line?;
        if !line.contains("\"deputy.line\"") {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if value["event"] == "deputy.line" && value["detail"]["deputy"] == deputy {
            last = last.max(value["detail"]["seq"].as_u64().unwrap_or(0));
        }
    }
    Ok(last)
}

/// The last `n` deputy lines the lead's log at `path` keeps, oldest first: (the deputy, its line).
pub fn kept(path: &Path, n: usize) -> std::io::Result<Vec<(String, String)>> {
    let Some(log) = log_lines(path)? else {
        return Ok(Vec::new());
    };
    let mut out = std::collections::VecDeque::new();
    for line in log {
        let line = line?;
        if !line.contains("\"deputy.line\"") {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if value["event"] != "deputy.line" {
            continue;
        }
        let deputy = value["detail"]["deputy"].as_str().unwrap_or("").to_owned();
        out.push_back((deputy, value["detail"]["line"].to_string()));
        if out.len() > n {
            out.pop_front();
        }
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stand_in_lines_after_the_cursor_come_and_the_cursor_moves_past_the_rest() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("audit.log");
        let log = [
            r#"{"seq":1,"event":"pane.input","detail":{"via":"phone"}}"#,
            r#"{"seq":2,"event":"pane.input","detail":{"via":"deputy"}}"#,
            "not json",
            r#"{"seq":3,"event":"pane.close","detail":{"via":"deputy"}}"#,
            r#"{"seq":4,"event":"pane.input","detail":{"via":"relay"}}"#,
        ]
        .join("\n");
        std::fs::write(&path, log).expect("write");
        let (lines, scanned) = stand_in_lines(&path, 0).expect("read");
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("\"seq\":2") && lines[1].contains("\"seq\":3"));
        assert_eq!(scanned, 4);
        assert_eq!(stand_in_lines(&path, 2).expect("read").0.len(), 1);
        assert_eq!(stand_in_lines(&path, 4).expect("read"), (Vec::new(), 4));
        let missing = dir.path().join("none.log");
        assert_eq!(stand_in_lines(&missing, 9).expect("none"), (Vec::new(), 9));
    }

    #[test]
    fn the_lead_finds_where_it_left_off_per_deputy() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("audit.log");
        let log = [
            r#"{"seq":1,"event":"deputy.line","detail":{"deputy":"web-1","seq":7}}"#,
            r#"{"seq":2,"event":"deputy.line","detail":{"deputy":"web-2","seq":30}}"#,
            r#"{"seq":3,"event":"deputy.line","detail":{"deputy":"web-1","seq":9}}"#,
        ]
        .join("\n");
        std::fs::write(&path, log).expect("write");
        assert_eq!(kept_up_to(&path, "web-1").expect("read"), 9);
        assert_eq!(kept_up_to(&path, "web-3").expect("read"), 0);
    }
}
