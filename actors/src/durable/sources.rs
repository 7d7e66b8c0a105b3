//! The attached durable agents: `<state>/sources.json` (SPEC §2, §10.3).
//!
//! **Tokens.** An HTTPS agent's bearer token is kept here in plain text — the seed's choice: the
//! bridge must send it on every poll, so it must be able to read it unattended. The file is
//! therefore 0600: written that way atomically (temp file 0600, fsync, rename), and a file found
//! wider is logged and tightened before it is read. A token never leaves this module as text
//! except into the `Authorization` header: [`Token`]'s `Debug` and `Display` say `(token set)`,
//! and no error of this module quotes the file's contents (a parse error names the line and
//! column only).
//!
//! **Names.** An agent's name is part of a card's source (`durable:<name>`), of API paths and of
//! audit lines, so it is plain: 1–32 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit.

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name in the state dir.
pub const FILE: &str = crate::state_files::SOURCES;
/// Largest `sources.json` read (a bigger one is refused before it is read).
pub const MAX_FILE: u64 = 1024 * 1024;
/// Most agents attached at once.
pub const MAX_AGENTS: usize = 64;
/// Longest token accepted, in bytes.
pub const MAX_TOKEN: usize = 4096;

/// Why the sources could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourcesError {
    /// Reading or writing the file failed.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The file is not the expected JSON (where only; never what).
    #[error("{path} is not valid ({what} at line {line}, column {column})")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// serde's category of the error.
        what: &'static str,
        /// Line.
        line: usize,
        /// Column.
        column: usize,
    },
    /// The file is over [`MAX_FILE`].
    #[error("{0} is too large")]
    TooLarge(PathBuf),
    /// A name is not a valid agent name.
    #[error(
        "bad agent name {0:?}: use 1 to 32 of A-Z a-z 0-9 . _ - starting with a letter or digit"
    )]
    BadName(String),
    /// An agent of that name is attached already.
    #[error("an agent named {0} is attached already (detach it first)")]
    Exists(String),
    /// No agent of that name is attached.
    #[error("no durable agent named {0}")]
    Unknown(String),
    /// As many agents as allowed are attached.
    #[error("at most {MAX_AGENTS} durable agents can be attached")]
    TooMany,
    /// A URL that is not `https://host[:port][/path]`.
    #[error("bad URL: {0}")]
    BadUrl(String),
    /// A token that cannot be sent in a header.
    #[error("bad token: {0}")]
    BadToken(&'static str),
    /// A socket path that is not absolute.
    #[error("the socket path must be absolute: {0}")]
    RelativeSocket(PathBuf),
}

/// A bearer token; never shown.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(String);

impl Token {
    /// Checks a token read from the environment: 1–[`MAX_TOKEN`] bytes of visible ASCII (it goes
    /// into an `Authorization` header as is).
    pub fn new(token: String) -> Result<Token, SourcesError> {
        if token.is_empty() {
            return Err(SourcesError::BadToken("it is empty"));
        }
        if token.len() > MAX_TOKEN {
            return Err(SourcesError::BadToken("it is longer than 4096 bytes"));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(SourcesError::BadToken(
                "it may hold only visible ASCII characters (no spaces)",
            ));
        }
        Ok(Token(token))
    }

    /// The token itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Its length in bytes (what doctor shows).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty (a token read from a file that was edited by hand).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(token set)")
    }
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(token set)")
    }
}

/// An HTTPS agent's address, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// Port (443 unless named).
    pub port: u16,
    /// The path the wire's paths go under, without a trailing `/` (empty for the root).
    pub base: String,
}

impl Url {
    /// Parses `https://host[:port][/path]`: no user info, no query, no fragment. The `url`
    /// crate reads it (the host lowercased, dot segments of the path resolved; a Unicode host is
    /// refused: write its `xn--` form); the checks before it refuse what that parser would
    /// quietly drop.
    pub fn parse(url: &str) -> Result<Url, SourcesError> {
        let bad =
            |why: &str| SourcesError::BadUrl(format!("{why} (want https://host[:port][/path])"));
        if !url.starts_with("https://") {
            return Err(bad("it must start with https://"));
        }
        // The parser removes tabs and line breaks and trims spaces; refuse them instead.
        if url.len() > 2048 || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("it is too long or holds spaces or control characters"));
        }
        let parsed = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(bad("it may not have a query or a fragment"));
        }
        // An empty user name (`https://@host`) leaves nothing in the parsed URL to see.
        if url.split('/').nth(2).is_some_and(|a| a.contains('@')) {
            return Err(bad("it may not hold a user name or password"));
        }
        let host = match parsed.host() {
            Some(url::Host::Domain(name)) => name.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(bad("it has no host")),
        };
        let port = match parsed.port_or_known_default() {
            Some(0) | None => return Err(bad("a bad port")),
            Some(port) => port,
        };
        Ok(Url {
            host,
            port,
            base: parsed.path().trim_end_matches('/').to_owned(),
        })
    }
}

/// How an agent is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Transport {
    /// A private unix socket on this machine (no token).
    Socket {
        /// The socket's absolute path.
        socket: PathBuf,
    },
    /// HTTPS with a bearer token.
    Https {
        /// `https://host[:port][/path]`.
        url: String,
        /// The token.
        token: Token,
        /// Trust only the CAs in this PEM file instead of the public roots.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ca_file: Option<PathBuf>,
    },
}

impl Transport {
    /// `socket` or `https`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Socket { .. } => "socket",
            Transport::Https { .. } => "https",
        }
    }

    /// Where, for `list` and logs (never the token).
    pub fn address(&self) -> String {
        match self {
            Transport::Socket { socket } => socket.display().to_string(),
            Transport::Https { url, .. } => url.clone(),
        }
    }
}

/// One attached agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// Its name.
    pub name: String,
    /// How it is reached.
    #[serde(flatten)]
    pub transport: Transport,
}

impl Source {
    /// Checks the name and the transport's fields.
    pub fn check(&self) -> Result<(), SourcesError> {
        check_name(&self.name)?;
        match &self.transport {
            Transport::Socket { socket } if !socket.is_absolute() => {
                Err(SourcesError::RelativeSocket(socket.clone()))
            }
            Transport::Socket { .. } => Ok(()),
            Transport::Https { url, token, .. } => {
                Url::parse(url)?;
                Token::new(token.expose().to_owned()).map(|_| ())
            }
        }
    }
}

/// Checks an agent name.
pub fn check_name(name: &str) -> Result<(), SourcesError> {
    let ok = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(SourcesError::BadName(name.to_owned()))
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sources {
    /// The attached agents, in attach order.
    #[serde(default)]
    pub agents: Vec<Source>,
}

impl Sources {
    /// Reads `path` (no file: no agents). A file readable or writable by others is tightened to
    /// 0600 first, with a warning. Every entry is checked; a bad one fails the whole file, so a
    /// hand edit gone wrong is noticed rather than half-applied.
    pub fn load(path: &Path) -> Result<Sources, SourcesError> {
        Sources::read(path, true)
    }

    /// Reads `path` as [`Sources::load`] does, tightening a wide file only when `tighten` (doctor
    /// reports one instead of changing it).
    pub fn read(path: &Path, tighten: bool) -> Result<Sources, SourcesError> {
        let io = |e: std::io::Error| SourcesError::Io {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        let mut file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Sources::default()),
            Err(e) => return Err(io(e)),
        };
        let meta = file.metadata().map_err(io)?;
        let mode = meta.mode() & 0o777;
        if tighten && mode & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(0o600))
                .map_err(io)?;
            tracing::warn!(
                file = %path.display(),
                mode = format!("{mode:o}"),
                "sources.json was readable by others; tightened to 0600 (it holds tokens)"
            );
        }
        if meta.len() > MAX_FILE {
            return Err(SourcesError::TooLarge(path.to_owned()));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        Read::by_ref(&mut file)
            .take(MAX_FILE + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > MAX_FILE {
            return Err(SourcesError::TooLarge(path.to_owned()));
        }
        let sources: Sources =
            serde_json::from_slice(&bytes).map_err(|e| SourcesError::Invalid {
                path: path.to_owned(),
                what: match e.classify() {
                    serde_json::error::Category::Io => "unreadable",
                    serde_json::error::Category::Syntax => "a syntax error",
                    serde_json::error::Category::Data => "an unexpected value",
                    serde_json::error::Category::Eof => "an early end",
                },
                line: e.line(),
                column: e.column(),
            })?;
        if sources.agents.len() > MAX_AGENTS {
            return Err(SourcesError::TooMany);
        }
        for (i, source) in sources.agents.iter().enumerate() {
            source.check()?;
            if sources.agents[..i].iter().any(|s| s.name == source.name) {
                return Err(SourcesError::Exists(source.name.clone()));
            }
        }
        Ok(sources)
    }

    /// Writes the file atomically with mode 0600 (a temp file beside it, fsync, rename, fsync of
    /// the folder): a reader sees the old file or the new one, never half of one.
    pub fn save(&self, path: &Path) -> Result<(), SourcesError> {
        let io = |e: std::io::Error| SourcesError::Io {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        crate::private_file::write_atomic(path, &bytes).map_err(io)
    }

    /// Adds `source` (checked; its name must be new).
    pub fn attach(&mut self, source: Source) -> Result<(), SourcesError> {
        source.check()?;
        if self.agents.iter().any(|s| s.name == source.name) {
            return Err(SourcesError::Exists(source.name));
        }
        if self.agents.len() >= MAX_AGENTS {
            return Err(SourcesError::TooMany);
        }
        self.agents.push(source);
        Ok(())
    }

    /// Removes the agent `name`.
    pub fn detach(&mut self, name: &str) -> Result<Source, SourcesError> {
        let at = self
            .agents
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| SourcesError::Unknown(name.to_owned()))?;
        Ok(self.agents.remove(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn https(name: &str, token: &str) -> Source {
        Source {
            name: name.into(),
            transport: Transport::Https {
                url: "https://agents.example.com:8443/ops".into(),
                token: Token(token.into()),
                ca_file: None,
            },
        }
    }

    #[test]
    fn a_token_is_never_shown() {
        let source = https("ops", "s3cr3t-value");
        assert_eq!(format!("{}", Token("s3cr3t-value".into())), "(token set)");
        assert!(!format!("{source:?}").contains("s3cr3t"));
    }

    #[test]
    fn names_urls_and_tokens_are_checked() {
        for bad in ["", "-x", "a b", "a/b", "durable:x", &"x".repeat(33), "é"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name("ops-1.prod_2").is_ok());
        let url = Url::parse("https://agents.example.com:8443/ops/").unwrap();
        assert_eq!(
            (url.host.as_str(), url.port, url.base.as_str()),
            ("agents.example.com", 8443, "/ops")
        );
        let v6 = Url::parse("https://[::1]:9/").unwrap();
        assert_eq!(
            (v6.host.as_str(), v6.port, v6.base.as_str()),
            ("::1", 9, "")
        );
        for bad in [
            "http://x",
            "https://",
            "https://u:p@x",
            "https://x@y/",
            "https://x/?q",
            "https://x/#f",
            "https://x:0",
            "https://x:99999",
            "https://x y",
            "https://[::1",
            "https://@x",
            "https://bücher.example",
            "HTTPS://x",
            "https://x\t/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
        for bad in ["", "a b", "tök", "\n"] {
            assert!(Token::new(bad.into()).is_err(), "{bad:?}");
        }
        assert!(Token::new("x".repeat(MAX_TOKEN + 1)).is_err());
    }

    #[test]
    fn the_file_round_trips_at_0600_and_is_tightened_when_wide() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        assert_eq!(Sources::load(&path).unwrap(), Sources::default());
        let mut sources = Sources::default();
        sources.attach(https("ops", "tok")).unwrap();
        sources
            .attach(Source {
                name: "local".into(),
                transport: Transport::Socket {
                    socket: "/run/user/0/ops/app.sock".into(),
                },
            })
            .unwrap();
        assert!(matches!(
            sources.attach(https("ops", "t")),
            Err(SourcesError::Exists(_))
        ));
        sources.save(&path).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(Sources::load(&path).unwrap(), sources);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(Sources::load(&path).unwrap(), sources);
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(sources.detach("ops").unwrap().name, "ops");
        assert!(matches!(
            sources.detach("ops"),
            Err(SourcesError::Unknown(_))
        ));
    }

    #[test]
    fn a_bad_file_names_where_never_what() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        fs::write(
            &path,
            br#"{"agents":[{"name":"ops","url":"https://x","token":12345678}]}"#,
        )
        .unwrap();
        let e = Sources::load(&path).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
        assert!(!e.contains("12345678"), "{e}");
        fs::write(
            &path,
            br#"{"agents":[{"name":"ops","url":"https://x","token":"a b"}]}"#,
        )
        .unwrap();
        assert!(matches!(
            Sources::load(&path),
            Err(SourcesError::BadToken(_))
        ));
    }
}
