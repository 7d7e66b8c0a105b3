//! The walky log (SPEC §9): `<state>/walky/<YYYY-MM-DD>.jsonl`, one JSON object per line, every
//! message this machine sent, received or forwarded and every result it learned, kept 7 days and at
//! most 2,000 lines ([`super::prune`]).
//!
//! The log is what makes a message real on this machine: the inbox reads bodies from it, the phone
//! shows a card only for an id it holds, and a member accepts a result only for a message it logged.
//! So a line is appended and synced (`fdatasync`) before the message is acknowledged or its header
//! typed, and a line that does not parse (a torn write after a crash) is skipped, never half-read.
//! Files are 0600 in a 0700 directory; wider modes are tightened on open.

use std::collections::BTreeMap;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use time::{Date, OffsetDateTime};

use super::prune::{self, DayFile};

/// A line longer than this is not one of ours (a body is at most 16 KiB) and is skipped.
const MAX_LINE: u64 = 256 * 1024;
const SUFFIX: &str = ".jsonl";

/// What happened to a message on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A pane of this machine sent it.
    Sent,
    /// It was delivered to a pane of this machine.
    Received,
    /// The lead passed it on between two other machines.
    Forwarded,
    /// Its result (delivered, or rejected and why), learned by the sender or the lead.
    Result,
}

impl Kind {
    /// `sent`, `received`, `forwarded` or `result`, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Sent => "sent",
            Kind::Received => "received",
            Kind::Forwarded => "forwarded",
            Kind::Result => "result",
        }
    }
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The message id (32 hex digits).
    pub id: String,
    /// When this machine logged it (unix seconds).
    pub at: i64,
    /// What happened.
    pub kind: Kind,
    /// The sender's address `machine/pane#token`.
    #[serde(default)]
    pub from: String,
    /// The sending pane's name.
    #[serde(default)]
    pub from_name: String,
    /// The receiver's address.
    #[serde(default)]
    pub to: String,
    /// When the sender sent it (unix seconds, the sender's clock).
    #[serde(default)]
    pub sent_at: i64,
    /// The body (not on result lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// `delivered`, or `rejected: <why>` (result lines, and received lines that were refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// Log failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// A filesystem operation failed.
    #[error("walky log {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The entry could not be encoded.
    #[error("walky log entry cannot be encoded: {0}")]
    Encode(String),
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> LogError + 'a {
    move |source| LogError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

/// The log directory and what it holds.
#[derive(Debug)]
pub struct WalkyLog {
    dir: PathBuf,
    /// Line counts of the day files.
    files: BTreeMap<Date, usize>,
    /// The open file of the day last appended to.
    current: Option<(Date, File)>,
}

fn day_of(name: &str) -> Option<Date> {
    let stem = name.strip_suffix(SUFFIX)?;
    let format = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(stem, &format).ok()
}

fn file_name(day: Date) -> String {
    format!(
        "{:04}-{:02}-{:02}{SUFFIX}",
        day.year(),
        u8::from(day.month()),
        day.day()
    )
}

impl WalkyLog {
    /// Opens (creating) the log in `dir`, counting the lines of its day files.
    pub fn open(dir: &Path) -> Result<Self, LogError> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err("create", dir))?;
        tighten(dir, 0o700)?;
        let mut files = BTreeMap::new();
        for item in fs::read_dir(dir).map_err(io_err("read", dir))? {
            let item = item.map_err(io_err("read", dir))?;
            let name = item.file_name();
            let Some(day) = name.to_str().and_then(day_of) else {
                continue;
            };
            let path = item.path();
            tighten(&path, 0o600)?;
            files.insert(day, count_lines(&path)?);
        }
        Ok(Self {
            dir: dir.to_owned(),
            files,
            current: None,
        })
    }

    /// The lines the log holds now.
    pub fn lines(&self) -> usize {
        self.files.values().sum()
    }

    /// Appends `entry` to the file of `now`'s day, synced, then prunes if the log is over its caps.
    pub fn append(&mut self, entry: &Entry, now: OffsetDateTime) -> Result<(), LogError> {
        self.write(entry, now)?;
        self.sync()?;
        self.prune(now.date())
    }

    /// Writes `entry` to the file of `now`'s day without syncing it: call [`Self::sync`] before
    /// telling anyone it is logged (the walky actor syncs once for all the lines written meanwhile),
    /// then [`Self::prune`].
    pub fn write(&mut self, entry: &Entry, now: OffsetDateTime) -> Result<(), LogError> {
        let mut line = serde_json::to_vec(entry).map_err(|e| LogError::Encode(e.to_string()))?;
        line.push(b'\n');
        let day = now.date();
        if self.current.as_ref().map(|(d, _)| *d) != Some(day) {
            // Lines written to the previous day's file must not lose their sync.
            self.sync()?;
            let path = self.dir.join(file_name(day));
            let file = OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .open(&path)
                .map_err(io_err("open", &path))?;
            self.current = Some((day, file));
        }
        if let Some((_, file)) = self.current.as_mut() {
            let path = self.dir.join(file_name(day));
            file.write_all(&line).map_err(io_err("append to", &path))?;
        }
        *self.files.entry(day).or_insert(0) += 1;
        Ok(())
    }

    /// Makes every line written so far durable (`fdatasync` of the day file written last; a day
    /// change reopens, and a file is synced before it is left — see [`Self::write`]).
    pub fn sync(&mut self) -> Result<(), LogError> {
        if let Some((day, file)) = self.current.as_mut() {
            let path = self.dir.join(file_name(*day));
            crate::disk::wait(|| file.sync_data()).map_err(io_err("sync", &path))?;
        }
        Ok(())
    }

    /// Applies the prune plan for `today`.
    pub fn prune(&mut self, today: Date) -> Result<(), LogError> {
        let listed: Vec<DayFile> = self
            .files
            .iter()
            .map(|(day, lines)| DayFile {
                day: *day,
                lines: *lines,
            })
            .collect();
        let plan = prune::plan(&listed, today);
        for day in plan.delete {
            let path = self.dir.join(file_name(day));
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", &path)(e)),
            }
            self.files.remove(&day);
            if self.current.as_ref().is_some_and(|(d, _)| *d == day) {
                self.current = None;
            }
        }
        if let Some((day, drop)) = plan.cut {
            let path = self.dir.join(file_name(day));
            let kept = cut_file(&path, drop)?;
            self.files.insert(day, kept);
            if self.current.as_ref().is_some_and(|(d, _)| *d == day) {
                self.current = None;
            }
        }
        Ok(())
    }

    /// Every readable entry, oldest first (lines that do not parse are skipped).
    pub fn entries(&self) -> Result<Vec<Entry>, LogError> {
        let mut out = Vec::new();
        for day in self.files.keys() {
            let path = self.dir.join(file_name(*day));
            let file = match File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err("open", &path)(e)),
            };
            for_each_line(file, |line| {
                if let Ok(entry) = serde_json::from_slice::<Entry>(line) {
                    out.push(entry);
                }
            })
            .map_err(io_err("read", &path))?;
        }
        Ok(out)
    }
}

/// Calls `f` with each line of `file` (without its `\n`), skipping lines longer than [`MAX_LINE`]
/// without holding them in memory.
fn for_each_line(file: File, mut f: impl FnMut(&[u8])) -> io::Result<()> {
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        if line.last() != Some(&b'\n') {
            if n as u64 > MAX_LINE {
                // Too long: skip to the end of this line.
                let mut rest = Vec::new();
                loop {
                    rest.clear();
                    let m = (&mut reader).take(MAX_LINE).read_until(b'\n', &mut rest)?;
                    if m == 0 || rest.last() == Some(&b'\n') {
                        break;
                    }
                }
                continue;
            }
            // A last line without its newline: a torn write, not a whole entry.
            return Ok(());
        }
        line.pop();
        f(&line);
    }
}

fn count_lines(path: &Path) -> Result<usize, LogError> {
    let file = File::open(path).map_err(io_err("open", path))?;
    let mut n = 0;
    for_each_line(file, |_| n += 1).map_err(io_err("read", path))?;
    Ok(n)
}

/// Drops the first `drop` lines of `path` (written to a temporary file, synced, renamed over it)
/// and returns how many lines are left.
fn cut_file(path: &Path, drop: usize) -> Result<usize, LogError> {
    let file = File::open(path).map_err(io_err("open", path))?;
    let mut kept = Vec::new();
    let mut seen = 0usize;
    let mut lines = 0usize;
    for_each_line(file, |line| {
        seen += 1;
        if seen > drop {
            kept.extend_from_slice(line);
            kept.push(b'\n');
            lines += 1;
        }
    })
    .map_err(io_err("read", path))?;
    let tmp = path.with_extension("jsonl.tmp");
    let mut out = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io_err("create", &tmp))?;
    out.write_all(&kept).map_err(io_err("write", &tmp))?;
    out.sync_all().map_err(io_err("sync", &tmp))?;
    fs::rename(&tmp, path).map_err(io_err("replace", path))?;
    Ok(lines)
}

fn tighten(path: &Path, mode: u32) -> Result<(), LogError> {
    let meta = fs::symlink_metadata(path).map_err(io_err("inspect", path))?;
    if meta.permissions().mode() & 0o777 & !mode != 0 {
        tracing::warn!(path = %path.display(), "walky log was readable by others; tightened");
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .map_err(io_err("tighten", path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn entry(id: u32, kind: Kind) -> Entry {
        Entry {
            id: format!("{id:032x}"),
            at: 0,
            kind,
            from: "m1/t0-1#abcd".into(),
            from_name: "agent".into(),
            to: "m2/t0-2#efgh".into(),
            sent_at: 0,
            body: Some(format!("hello {id}")),
            outcome: None,
        }
    }

    #[test]
    fn entries_survive_a_reopen_and_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("walky");
        let mut log = WalkyLog::open(&path).unwrap();
        let now = datetime!(2026-11-30 10:00 UTC);
        log.append(&entry(1, Kind::Sent), now).unwrap();
        log.append(&entry(2, Kind::Received), now).unwrap();
        let reopened = WalkyLog::open(&path).unwrap();
        assert_eq!(reopened.lines(), 2);
        let all = reopened.entries().unwrap();
        assert_eq!(all, vec![entry(1, Kind::Sent), entry(2, Kind::Received)]);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o700);
        assert_eq!(mode(&path.join("2026-11-30.jsonl")), 0o600);
    }

    #[test]
    fn a_torn_last_line_is_not_read_as_an_entry() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = WalkyLog::open(dir.path()).unwrap();
        log.append(&entry(1, Kind::Sent), datetime!(2026-11-30 10:00 UTC))
            .unwrap();
        let file = dir.path().join("2026-11-30.jsonl");
        let mut f = OpenOptions::new().append(true).open(&file).unwrap();
        f.write_all(br#"{"id":"00000000000000000000000000000002","at":0,"kind":"se"#)
            .unwrap();
        let log = WalkyLog::open(dir.path()).unwrap();
        assert_eq!(log.entries().unwrap(), vec![entry(1, Kind::Sent)]);
    }

    #[test]
    fn the_log_is_pruned_to_seven_days_and_at_most_two_thousand_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = WalkyLog::open(dir.path()).unwrap();
        // Ten days ago: gone as soon as anything is appended today.
        log.append(&entry(0, Kind::Sent), datetime!(2026-11-20 10:00 UTC))
            .unwrap();
        for i in 1..=2_001u32 {
            log.append(&entry(i, Kind::Received), datetime!(2026-11-30 10:00 UTC))
                .unwrap();
            assert!(log.lines() <= prune::MAX_LINES, "{} lines", log.lines());
        }
        assert!(!dir.path().join("2026-11-20.jsonl").exists());
        let all = WalkyLog::open(dir.path()).unwrap().entries().unwrap();
        assert_eq!(all.len(), prune::PRUNE_TO);
        // The newest stay, in order.
        assert_eq!(all.last().unwrap().id, format!("{:032x}", 2_001));
        assert_eq!(
            all.first().unwrap().id,
            format!("{:032x}", 2_001 - prune::PRUNE_TO + 1)
        );
    }
}
