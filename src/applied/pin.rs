//! Pinning a program (SPEC §12, §16): an executable found the way a shell would — a bare name in
//! `PATH`, else a path — resolved to the real file behind any link, and its SHA-256; and the
//! limits of the fixed arguments a pinned program runs with. Starters and the speech engine are
//! pinned alike.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::env::{expand, ResolveEnv};

/// Most fixed arguments of one pinned program.
pub const MAX_ARGS: usize = 64;
/// Longest fixed argument, in bytes.
pub const MAX_ARG_BYTES: usize = 4096;

/// A pinned program (a starter's, the speech engine): a bare name looked up in `PATH` (absolute entries only: a relative
/// entry would make the pinned file depend on where the bridge was started), a path otherwise;
/// then the real file behind any symlink, which must be a regular, executable file, and its hash.
pub fn executable(given: &str, env: &ResolveEnv) -> Result<(PathBuf, String), String> {
    let candidate = if given.contains('/') || given.starts_with('~') {
        expand(given, env)?
    } else {
        let path = env.path.as_deref().unwrap_or("");
        path.split(':')
            .filter(|d| d.starts_with('/'))
            .map(|d| Path::new(d).join(given))
            .find(|p| is_executable_file(p))
            .ok_or_else(|| "not found in PATH".to_owned())?
    };
    let real =
        std::fs::canonicalize(&candidate).map_err(|e| format!("{}: {e}", candidate.display()))?;
    if !is_executable_file(&real) {
        return Err(format!("{} is not an executable file", real.display()));
    }
    let sha = sha256_file(&real).map_err(|e| format!("{}: {e}", real.display()))?;
    Ok((real, sha))
}

fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Hex SHA-256 of a file, read in blocks (an agent's executable can be a 100 MB binary).
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}
