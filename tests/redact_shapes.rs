//! Black-box tests of three secret shapes (SPEC §6) through the real `collie redact` filter:
//! Twilio API key SIDs, PGP private key blocks, and `PASS` / `PWD` as secret words. Each test
//! also feeds the look-alikes that must pass unchanged.
//!
//! The samples are built at run time rather than written out, so that no string in this file
//! looks like a live credential to a secret scanner.

use std::io::Write;
use std::process::{Command, Stdio};

const MASK: char = '\u{2022}';

/// `input` through `collie redact` on stdin, with an environment that points every directory
/// collie could read into a fresh temp dir (no config of the machine's user is read).
fn redact(input: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_collie"))
        .arg("redact")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path().join("home"))
        .env("COLLIE_STATE_DIR", dir.path().join("state"))
        .env("COLLIE_CONFIG_DIR", dir.path().join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start collie redact");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("collie redact runs");
    assert!(
        out.status.success(),
        "collie redact failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// `n` characters of `alphabet`, the same on every run.
fn filler(alphabet: &[u8], n: usize, seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(alphabet[(x % alphabet.len() as u64) as usize])
        })
        .collect()
}

const HEX: &[u8] = b"0123456789abcdef";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `secret` with its first `visible` characters kept and every other one a `•`.
fn masked(secret: &str, visible: usize) -> String {
    let kept: String = secret.chars().take(visible).collect();
    let rest = secret.chars().count() - visible;
    kept + &MASK.to_string().repeat(rest)
}

fn bullets(n: usize) -> String {
    MASK.to_string().repeat(n)
}

#[test]
fn twilio_api_key_sids_are_masked() {
    let hex = filler(HEX, 33, 1);
    let sid = format!("SK{}", &hex[..32]);
    let input = format!(
        "created API key {sid} for the sms worker\n\
         TWILIO_API_KEY_SID=\"{sid}\"\n\
         short SK{} long SK{hex} glued TASK{}\n\
         account AC{}\n",
        &hex[..31],
        &hex[..32],
        &hex[..32],
    );
    let expected = format!(
        "created API key {} for the sms worker\n\
         TWILIO_API_KEY_SID=\"{}\"\n\
         short SK{} long SK{hex} glued TASK{}\n\
         account AC{}\n",
        masked(&sid, 3),
        masked(&sid, 3),
        &hex[..31],
        &hex[..32],
        &hex[..32],
    );
    let out = redact(&input);
    assert_eq!(out, expected);
    assert_eq!(redact(&out), out, "masking twice changes the text");
}

#[test]
fn pgp_private_key_blocks_are_masked_and_public_blocks_are_not() {
    let body: Vec<String> = (0..3).map(|i| filler(BASE64, 64, 10 + i)).collect();
    let checksum = format!("={}", filler(BASE64, 4, 20));
    let block = |kind: &str| {
        format!(
            "-----BEGIN PGP {kind}-----\nVersion: GnuPG v2\nComment: alice@example.org\n\n{}\n{checksum}\n-----END PGP {kind}-----\n",
            body.join("\n")
        )
    };
    let private = block("PRIVATE KEY BLOCK");
    let expected = format!(
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\nComment: alice@example.org\n\n{}\n{}\n{}\n{}\n-----END PGP PRIVATE KEY BLOCK-----\n",
        bullets(64),
        bullets(64),
        bullets(64),
        bullets(5)
    );
    let out = redact(&private);
    assert_eq!(out, expected);
    assert_eq!(redact(&out), out, "masking twice changes the text");

    // The top of the block, its END line below the screen's edge.
    let cut = format!(
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{}\n{}\nalice@devbox:~$ ",
        body[0], body[1]
    );
    assert_eq!(
        redact(&cut),
        format!(
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{}\n{}\nalice@devbox:~$ ",
            bullets(64),
            bullets(64)
        )
    );

    // Public keys and signatures are meant to be shared.
    for public in [block("PUBLIC KEY BLOCK"), block("SIGNATURE")] {
        assert_eq!(redact(&public), public);
    }
}

#[test]
fn pass_and_pwd_keys_are_masked_but_look_alikes_are_not() {
    let input = "DB_PASS=hunter2\n\
                 MYSQL_PWD=hunter2\n\
                 PASS=xyz\n\
                 dbPass: hunter2\n\
                 dbPwd: hunter2\n\
                 db_pass=hunter2\n\
                 smtp.pass: hunter2\n\
                 PASSWD=letmein\n\
                 COMPASS=north\n\
                 BYPASS=always\n\
                 bypass: enabled\n\
                 surpass=expectations\n\
                 PWD=/home/me/src\n\
                 OLDPWD=/tmp\n\
                 DB_PASS=$DB_PASS\n\
                 --- PASS: TestParse (0.00s)\n";
    let expected = "DB_PASS=h••••••\n\
                    MYSQL_PWD=h••••••\n\
                    PASS=x••\n\
                    dbPass: h••••••\n\
                    dbPwd: h••••••\n\
                    db_pass=h••••••\n\
                    smtp.pass: h••••••\n\
                    PASSWD=l••••••\n\
                    COMPASS=north\n\
                    BYPASS=always\n\
                    bypass: enabled\n\
                    surpass=expectations\n\
                    PWD=/home/me/src\n\
                    OLDPWD=/tmp\n\
                    DB_PASS=$DB_PASS\n\
                    --- PASS: TestParse (0.00s)\n";
    let out = redact(input);
    assert_eq!(out, expected);
    assert_eq!(redact(&out), out, "masking twice changes the text");
}
