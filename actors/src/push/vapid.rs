//! The bridge's VAPID key (RFC 8292) and the token that names it on every push.
//!
//! The key is a P-256 pair, made on first use and kept as PKCS#8 in `<state>/push/vapid.p8`
//! (0600, in a 0700 directory; SPEC §2). A wider mode found on load is tightened and logged, as
//! the bridge does for every state file at start. A file that cannot be read as a key is an error,
//! never replaced: every browser subscription is bound to this key, and a silent new one would
//! break them all without a word.
//!
//! Signing is ring's ECDSA P-256 with SHA-256 in the fixed `r‖s` form JWS needs (ring is already
//! what the crew's TLS uses); the token is assembled here: `{"typ":"JWT","alg":"ES256"}`, then
//! `aud` (the push service's origin), `exp` (12 hours ahead; RFC 8292 allows at most 24) and `sub`
//! (a contact URI, which Apple's service requires).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

/// The key file's name in the push directory.
pub const KEY_FILE: &str = crate::state_files::VAPID_KEY;
/// How long a token is valid.
pub const TOKEN_LIFETIME_SECS: u64 = 12 * 60 * 60;
/// The contact the token names (RFC 8292 `sub`). Collie runs on the user's own machines and has
/// no operator to contact; services require the claim, not a reachable mailbox.
pub const CONTACT: &str = "mailto:collie@localhost";

/// Why the key could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VapidError {
    /// Reading or writing the key file failed.
    #[error("push key file {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file holds no usable P-256 key.
    #[error("push key file {0} is not a P-256 key; move it away to make a new one (phones must then subscribe again)")]
    Unreadable(PathBuf),
    /// The system's random source failed.
    #[error("no randomness for a push key")]
    Random,
}

/// The VAPID key pair.
pub struct Vapid {
    pair: EcdsaKeyPair,
    public: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for Vapid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vapid")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> VapidError + '_ {
    move |source| VapidError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Tightens `path` to `want` if it is wider; returns whether it changed.
fn tighten(path: &Path, want: u32) -> Result<bool, VapidError> {
    let mode = fs::symlink_metadata(path)
        .map_err(io(path))?
        .permissions()
        .mode()
        & 0o777;
    if mode & !want == 0 {
        return Ok(false);
    }
    fs::set_permissions(path, fs::Permissions::from_mode(mode & want)).map_err(io(path))?;
    tracing::warn!(
        path = %path.display(),
        from = format!("{mode:o}"),
        to = format!("{:o}", mode & want),
        "tightened the push key's permissions"
    );
    Ok(true)
}

impl Vapid {
    /// The key in `dir` (`<state>/push`), made there first if there is none.
    pub fn load_or_create(dir: &Path) -> Result<Vapid, VapidError> {
        fs::create_dir_all(dir).map_err(io(dir))?;
        tighten(dir, 0o700)?;
        let path = dir.join(KEY_FILE);
        let rng = SystemRandom::new();
        let pkcs8 = match fs::read(&path) {
            Ok(bytes) => {
                tighten(&path, 0o600)?;
                bytes
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                    .map_err(|_| VapidError::Random)?;
                write_new(&path, doc.as_ref())?;
                doc.as_ref().to_vec()
            }
            Err(e) => return Err(io(&path)(e)),
        };
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng)
            .map_err(|_| VapidError::Unreadable(path.clone()))?;
        let public = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        Ok(Vapid { pair, public, rng })
    }

    /// The public key, uncompressed, base64url: the phone's `applicationServerKey`.
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header of a push to a service at `origin`, at `now` (Unix seconds):
    /// `vapid t=<JWT>, k=<public key>` (RFC 8292 §3).
    pub fn authorization(&self, origin: &str, now: u64) -> Result<String, VapidError> {
        #[derive(serde::Serialize)]
        struct Claims<'a> {
            aud: &'a str,
            exp: u64,
            sub: &'a str,
        }
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::to_vec(&Claims {
            aud: origin,
            exp: now.saturating_add(TOKEN_LIFETIME_SECS),
            sub: CONTACT,
        })
        .unwrap_or_default();
        let signing_input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims));
        let signature = self
            .pair
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| VapidError::Random)?;
        Ok(format!(
            "vapid t={signing_input}.{}, k={}",
            URL_SAFE_NO_PAD.encode(signature.as_ref()),
            self.public
        ))
    }
}

/// Writes a new key file, 0600 from its first byte, and never over an existing one.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), VapidError> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_all().map_err(io(path))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    use super::*;

    #[test]
    fn the_key_is_made_once_kept_private_and_signs_a_verifiable_token() {
        let dir = tempfile::tempdir().expect("tempdir");
        let push = dir.path().join("push");
        let a = Vapid::load_or_create(&push).expect("made");
        let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&push), 0o700);
        assert_eq!(mode(&push.join(KEY_FILE)), 0o600);
        // Loaded again, the same key; a wider mode is tightened.
        fs::set_permissions(push.join(KEY_FILE), fs::Permissions::from_mode(0o644)).expect("chmod");
        let b = Vapid::load_or_create(&push).expect("loaded");
        assert_eq!(a.public_key(), b.public_key());
        assert_eq!(mode(&push.join(KEY_FILE)), 0o600);
        let public = URL_SAFE_NO_PAD.decode(a.public_key()).expect("b64");
        assert_eq!((public.len(), public[0]), (65, 4), "uncompressed point");

        let auth = a
            .authorization("https://push.example:8443", 1_800_000_000)
            .expect("signed");
        let rest = auth.strip_prefix("vapid t=").expect("scheme");
        let (token, k) = rest.split_once(", k=").expect("k");
        assert_eq!(k, a.public_key());
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
        assert_eq!(claims["aud"], "https://push.example:8443");
        assert_eq!(claims["exp"], 1_800_000_000u64 + TOKEN_LIFETIME_SECS);
        assert_eq!(claims["sub"], CONTACT);
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).expect("b64");
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .expect("the signature verifies with the public key");
    }

    #[test]
    fn a_broken_key_file_is_an_error_and_is_not_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join(KEY_FILE), b"not a key").expect("write");
        assert!(matches!(
            Vapid::load_or_create(dir.path()),
            Err(VapidError::Unreadable(_))
        ));
        assert_eq!(
            fs::read(dir.path().join(KEY_FILE)).expect("read"),
            b"not a key"
        );
    }
}
