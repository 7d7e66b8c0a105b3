//! A machine's crew identity: an ed25519 key and a self-signed certificate for it (SPEC §8).
//!
//! The key is what the crew trusts — peers pin the SHA-256 of its SubjectPublicKeyInfo (a [`Pin`]) —
//! and the certificate is only the envelope TLS needs to carry it: its dates, names and
//! self-signature mean nothing to the verifiers. So a lost certificate is re-issued from the key
//! without changing the pin, while a lost key is a new machine.
//!
//! On disk (`<state>/crew/`, SPEC §2): [`KEY_FILE`] holds the key as PKCS#8 DER, mode 0600, and
//! [`CERT_FILE`] the certificate DER; the directory is 0700. Wider modes are tightened (and logged)
//! on load. Each file is written to a temporary file in the same directory, synced, then renamed
//! over the final name and the directory synced, so a crash leaves the old file or the new one —
//! never half a key. The key is written before the certificate, so a crash in between leaves a key
//! whose certificate is re-issued on the next load.

use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::SigningKey;
use rand::rngs::OsRng;
use rand::Rng;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::ParsedCertificate;

use crate::pin::Pin;

/// The server name a member dials and the lead's certificate carries. Constant: the lead is found
/// by address and trusted by pin, never by name.
pub const SERVER_NAME: &str = "collie-crew";

/// The key file in the identity directory: PKCS#8 DER, mode 0600.
pub const KEY_FILE: &str = "key.der";
/// The certificate file in the identity directory: X.509 DER.
pub const CERT_FILE: &str = "cert.der";
/// The subject common name of every crew certificate (informational only).
const COMMON_NAME: &str = "collie crew machine";
/// Neither file is ever near this size; a bigger one is not ours and is not read into memory.
const MAX_FILE_LEN: u64 = 64 * 1024;
/// Between a file's name and the random suffix of its temporary copy: `.key.der.tmp-…`.
const TEMP_INFIX: &str = ".tmp-";
const DIR_MODE: u32 = 0o700;
const KEY_MODE: u32 = 0o600;
const CERT_MODE: u32 = 0o600;

/// Why an identity could not be made, loaded or stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// A filesystem operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The path exists but is not a regular file (or directory), e.g. a symlink.
    #[error("{} is not a regular {expected}", path.display())]
    NotRegular {
        /// The offending path.
        path: PathBuf,
        /// `"file"` or `"directory"`.
        expected: &'static str,
    },
    /// A file is larger than any identity file can be.
    #[error("{} is too large to be a crew identity file", path.display())]
    TooLarge {
        /// The offending file.
        path: PathBuf,
    },
    /// The key file does not hold a PKCS#8 ed25519 key.
    #[error("{} does not hold an ed25519 PKCS#8 key", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
    },
    /// The certificate file holds a certificate for another key (or garbage).
    #[error("{} is not a certificate for the key in {KEY_FILE}", path.display())]
    CertificateMismatch {
        /// The certificate file.
        path: PathBuf,
    },
    /// Encoding the key or issuing the certificate failed.
    #[error("cannot issue the crew certificate: {0}")]
    Issue(String),
}

/// A machine's crew identity: its ed25519 key, the self-signed certificate carrying it, and its
/// [`Pin`]. `Debug` shows the pin only, never the key.
pub struct Identity {
    key: PrivatePkcs8KeyDer<'static>,
    cert: CertificateDer<'static>,
    pin: Pin,
}

impl Identity {
    /// A fresh identity held in memory only.
    pub fn generate() -> Result<Self, IdentityError> {
        Self::from_signing_key(&SigningKey::generate(&mut OsRng), None)
    }

    /// Loads the identity stored in `dir`, creating the directory (0700) and a new identity if there
    /// is none, re-issuing the certificate if it is missing, and tightening wider permissions.
    pub fn load_or_create(dir: &Path) -> Result<Self, IdentityError> {
        ensure_private_dir(dir)?;
        remove_stale_temporaries(dir);
        let key_path = dir.join(KEY_FILE);
        let cert_path = dir.join(CERT_FILE);
        match read_private_file(&key_path, KEY_MODE)? {
            Some(bytes) => {
                let signing =
                    SigningKey::from_pkcs8_der(&bytes).map_err(|_| IdentityError::BadKey {
                        path: key_path.clone(),
                    })?;
                let stored_cert = read_private_file(&cert_path, CERT_MODE)?;
                let had_cert = stored_cert.is_some();
                let identity =
                    Self::from_signing_key(&signing, stored_cert).map_err(|e| match e {
                        IdentityError::CertificateMismatch { .. } => {
                            IdentityError::CertificateMismatch {
                                path: cert_path.clone(),
                            }
                        }
                        other => other,
                    })?;
                if !had_cert {
                    tracing::warn!(path = %cert_path.display(), "crew certificate missing; re-issued from the key");
                    write_atomically(dir, &cert_path, identity.cert.as_ref(), CERT_MODE)?;
                }
                Ok(identity)
            }
            None => {
                let identity = Self::generate()?;
                write_atomically(dir, &key_path, identity.key.secret_pkcs8_der(), KEY_MODE)?;
                write_atomically(dir, &cert_path, identity.cert.as_ref(), CERT_MODE)?;
                Ok(identity)
            }
        }
    }

    /// This machine's pin: the SHA-256 of its certificate's SubjectPublicKeyInfo.
    pub fn pin(&self) -> Pin {
        self.pin
    }

    /// The self-signed certificate (DER) presented in every handshake.
    pub fn certificate(&self) -> &CertificateDer<'static> {
        &self.cert
    }

    /// The key QUIC derives its stateless-reset tokens from: an HMAC of the private key under a
    /// label of its own, so it lasts as long as the identity and reveals nothing of the key. A
    /// machine that restarts (a lead killed and started again) answers its peers' packets for the
    /// connections it lost with a reset they recognise, and they reconnect at once instead of
    /// waiting for silence (decision 0062). Crate-private like the key.
    pub(crate) fn reset_key(&self) -> ring::hmac::Key {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, self.key.secret_pkcs8_der());
        let derived = ring::hmac::sign(&key, b"collie-crew stateless reset v1");
        ring::hmac::Key::new(ring::hmac::HMAC_SHA256, derived.as_ref())
    }

    /// The key of the QUIC connection ids this machine hands out, derived like [`Self::reset_key`]:
    /// a restarted endpoint must still recognise the ids of its lost connections as its own, or it
    /// drops their packets instead of answering them with a reset.
    pub(crate) fn connection_id_key(&self) -> u64 {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, self.key.secret_pkcs8_der());
        let derived = ring::hmac::sign(&key, b"collie-crew connection ids v1");
        let mut first = [0u8; 8];
        first.copy_from_slice(&derived.as_ref()[..8]);
        u64::from_le_bytes(first)
    }

    /// The private key for the TLS configs. Crate-private: nothing outside the crew's TLS needs it.
    pub(crate) fn private_key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(self.key.clone_key())
    }

    /// Builds the identity of `signing`, keeping `cert` if given (after checking that it carries
    /// this key) or issuing a new self-signed certificate.
    fn from_signing_key(
        signing: &SigningKey,
        cert: Option<Vec<u8>>,
    ) -> Result<Self, IdentityError> {
        let key_der = signing
            .to_pkcs8_der()
            .map_err(|e| IdentityError::Issue(e.to_string()))?;
        let key = PrivatePkcs8KeyDer::from(key_der.as_bytes().to_vec());
        let spki = signing
            .verifying_key()
            .to_public_key_der()
            .map_err(|e| IdentityError::Issue(e.to_string()))?;
        let cert = match cert {
            Some(der) => CertificateDer::from(der),
            None => issue_certificate(&key)?,
        };
        // The pin is defined on the certificate (SPEC §8); it must name this very key.
        let parsed =
            ParsedCertificate::try_from(&cert).map_err(|_| IdentityError::CertificateMismatch {
                path: PathBuf::from(CERT_FILE),
            })?;
        if parsed.subject_public_key_info().as_ref() != spki.as_bytes() {
            return Err(IdentityError::CertificateMismatch {
                path: PathBuf::from(CERT_FILE),
            });
        }
        let pin = Pin::of_spki(spki.as_bytes());
        Ok(Self { key, cert, pin })
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("pin", &self.pin)
            .field("key", &"(secret)")
            .finish()
    }
}

/// A self-signed certificate for `key`. Its validity runs from 1975 to 4096 (rcgen's default): the
/// verifiers trust the pinned key, not dates, and a machine's certificate should never expire.
fn issue_certificate(
    key: &PrivatePkcs8KeyDer<'static>,
) -> Result<CertificateDer<'static>, IdentityError> {
    let issue = |e: rcgen::Error| IdentityError::Issue(e.to_string());
    let key_pair =
        rcgen::KeyPair::from_pkcs8_der_and_sign_algo(key, &rcgen::PKCS_ED25519).map_err(issue)?;
    let mut params = rcgen::CertificateParams::new(vec![SERVER_NAME.to_owned()]).map_err(issue)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, COMMON_NAME);
    let cert = params.self_signed(&key_pair).map_err(issue)?;
    Ok(cert.der().clone())
}

/// Creates `dir` (mode 0700) or tightens its mode if group or others have any access.
fn ensure_private_dir(dir: &Path) -> Result<(), IdentityError> {
    let io_err = |what, source| IdentityError::Io {
        what,
        path: dir.to_path_buf(),
        source,
    };
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| io_err("cannot create", e))?;
    let meta = fs::symlink_metadata(dir).map_err(|e| io_err("cannot inspect", e))?;
    if !meta.is_dir() {
        return Err(IdentityError::NotRegular {
            path: dir.to_path_buf(),
            expected: "directory",
        });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(path = %dir.display(), mode = format!("{mode:o}"), "tightening crew identity directory to 0700");
        fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))
            .map_err(|e| io_err("cannot tighten", e))?;
    }
    Ok(())
}

/// Removes temporary files a crash in [`write_atomically`] left behind. Best effort: a leftover
/// is harmless, only untidy.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = [KEY_FILE, CERT_FILE]
            .iter()
            .any(|file| name.starts_with(&format!(".{file}{TEMP_INFIX}")));
        if ours {
            if let Err(error) = fs::remove_file(entry.path()) {
                tracing::warn!(path = %entry.path().display(), %error, "cannot remove a stale temporary file");
            }
        }
    }
}

/// Reads a file written by [`write_atomically`]: `None` if absent; a symlink, a non-file or an
/// oversized file is refused; a mode wider than `mode` is tightened first.
fn read_private_file(path: &Path, mode: u32) -> Result<Option<Vec<u8>>, IdentityError> {
    let io_err = |what, source| IdentityError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("cannot inspect", e)),
    };
    if !meta.is_file() {
        return Err(IdentityError::NotRegular {
            path: path.to_path_buf(),
            expected: "file",
        });
    }
    if meta.len() > MAX_FILE_LEN {
        return Err(IdentityError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    let actual = meta.permissions().mode() & 0o777;
    if actual & !mode != 0 {
        tracing::warn!(path = %path.display(), mode = format!("{actual:o}"), "tightening crew identity file to {mode:o}");
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .map_err(|e| io_err("cannot tighten", e))?;
    }
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|f| f.take(MAX_FILE_LEN + 1).read_to_end(&mut bytes))
        .map_err(|e| io_err("cannot read", e))?;
    if bytes.len() as u64 > MAX_FILE_LEN {
        return Err(IdentityError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    Ok(Some(bytes))
}

/// Writes `bytes` to `path` so that a crash leaves either the old content or the new, never a part:
/// a fresh temporary file in `dir` created with `mode`, synced, renamed over `path`, `dir` synced.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8], mode: u32) -> Result<(), IdentityError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}{TEMP_INFIX}{:016x}", OsRng.gen::<u64>()));
    let io_err = |what, p: &Path, source| IdentityError::Io {
        what,
        path: p.to_path_buf(),
        source,
    };
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_err("cannot write", &tmp, e));
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(io_err("cannot rename into", path, e));
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("cannot sync", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn creates_a_private_directory_and_key_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state").join("crew");
        let identity = Identity::load_or_create(&dir).unwrap();
        assert_eq!(mode_of(&dir), 0o700);
        assert_eq!(mode_of(&dir.join(KEY_FILE)), 0o600);
        assert!(dir.join(CERT_FILE).is_file());
        // Nothing but the two files: no temporary file left behind.
        let mut names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [CERT_FILE, KEY_FILE]);
        assert_eq!(
            fs::read(dir.join(CERT_FILE)).unwrap(),
            identity.certificate().as_ref()
        );
    }

    #[test]
    fn reload_gives_the_same_pin_and_certificate() {
        let tmp = tempfile::tempdir().unwrap();
        let first = Identity::load_or_create(tmp.path()).unwrap();
        let second = Identity::load_or_create(tmp.path()).unwrap();
        assert_eq!(first.pin(), second.pin());
        assert_eq!(first.certificate(), second.certificate());
        assert_ne!(first.pin(), Identity::generate().unwrap().pin());
    }

    #[test]
    fn a_lost_certificate_is_reissued_with_the_same_pin() {
        let tmp = tempfile::tempdir().unwrap();
        let first = Identity::load_or_create(tmp.path()).unwrap();
        fs::remove_file(tmp.path().join(CERT_FILE)).unwrap();
        let second = Identity::load_or_create(tmp.path()).unwrap();
        assert_eq!(first.pin(), second.pin());
        assert!(tmp.path().join(CERT_FILE).is_file());
    }

    #[test]
    fn a_certificate_for_another_key_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        Identity::load_or_create(tmp.path()).unwrap();
        let other = Identity::generate().unwrap();
        fs::write(tmp.path().join(CERT_FILE), other.certificate().as_ref()).unwrap();
        let err = Identity::load_or_create(tmp.path()).unwrap_err();
        assert!(
            matches!(&err, IdentityError::CertificateMismatch { path } if path.ends_with(CERT_FILE)),
            "{err:?}"
        );
    }

    #[test]
    fn a_crash_between_temporary_and_rename_leaves_the_old_key() {
        let tmp = tempfile::tempdir().unwrap();
        let first = Identity::load_or_create(tmp.path()).unwrap();
        // What a crash mid-write leaves: a partial temporary file next to the intact key.
        let partial = tmp
            .path()
            .join(format!(".{KEY_FILE}{TEMP_INFIX}0123456789abcdef"));
        fs::write(&partial, &first.key.secret_pkcs8_der()[..10]).unwrap();
        let second = Identity::load_or_create(tmp.path()).unwrap();
        assert_eq!(first.pin(), second.pin());
        assert!(
            !partial.exists(),
            "the stale temporary file was not removed"
        );
    }

    #[test]
    fn wider_modes_are_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("crew");
        Identity::load_or_create(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(dir.join(KEY_FILE), fs::Permissions::from_mode(0o644)).unwrap();
        Identity::load_or_create(&dir).unwrap();
        assert_eq!(mode_of(&dir), 0o700);
        assert_eq!(mode_of(&dir.join(KEY_FILE)), 0o600);
    }

    #[test]
    fn garbage_and_symlinked_keys_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join(KEY_FILE), b"not a key").unwrap();
        assert!(matches!(
            Identity::load_or_create(tmp.path()),
            Err(IdentityError::BadKey { .. })
        ));

        let other = tempfile::tempdir().unwrap();
        Identity::load_or_create(other.path()).unwrap();
        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(other.path().join(KEY_FILE), linked.path().join(KEY_FILE))
            .unwrap();
        assert!(matches!(
            Identity::load_or_create(linked.path()),
            Err(IdentityError::NotRegular { .. })
        ));
    }

    #[test]
    fn the_pin_is_the_sha256_of_the_spki_computed_independently() {
        let identity = Identity::generate().unwrap();
        // From the key, through ed25519-dalek's SPKI encoder.
        let signing = SigningKey::from_pkcs8_der(identity.key.secret_pkcs8_der()).unwrap();
        let spki = signing.verifying_key().to_public_key_der().unwrap();
        let by_dalek = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(spki.as_bytes()));
        // From the key, through rcgen/ring.
        let key_pair =
            rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&identity.key, &rcgen::PKCS_ED25519)
                .unwrap();
        let by_rcgen = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
            key_pair.public_key_der(),
        ));
        // From the certificate, through webpki.
        let by_cert = Pin::of_certificate(identity.certificate()).unwrap();
        assert_eq!(identity.pin().to_string(), by_dalek);
        assert_eq!(by_dalek, by_rcgen);
        assert_eq!(by_cert, identity.pin());
        assert_eq!(by_dalek.len(), 64);
    }

    #[test]
    fn debug_never_shows_the_key() {
        let identity = Identity::generate().unwrap();
        let shown = format!("{identity:?}");
        assert!(shown.contains(&identity.pin().to_string()));
        assert!(shown.contains("(secret)"));
        let key_hex = hex::encode(identity.key.secret_pkcs8_der());
        assert!(!shown.contains(&key_hex[key_hex.len() - 64..]));
    }
}
