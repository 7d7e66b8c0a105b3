//! Unit tests: one realistic sample per shape, negatives, and the table's invariants.
//!
//! Sample secrets are generated from a fixed seed rather than written out, so that no string in
//! this file looks like a live credential to a secret scanner.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use super::prefilter::AUTOMATA;
use super::shapes::SHAPES;
use super::{shape_patterns, Masker, MASK};

static MASKER: LazyLock<Masker> = LazyLock::new(|| Masker::new(true));
static EVERY_SHAPE: LazyLock<Masker> = LazyLock::new(Masker::without_prefilter);

pub(super) const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub(super) const B64URL: &[u8] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
pub(super) const HEX: &[u8] = b"0123456789abcdef";
const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const DIGITS: &[u8] = b"0123456789";
const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BECH32: &[u8] = b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `n` characters of `alphabet`, the same on every run.
pub(super) fn filler(alphabet: &[u8], n: usize, seed: u64) -> String {
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

fn bullets(n: usize) -> String {
    std::iter::repeat_n(MASK, n).collect()
}

/// `secret` with its first `visible` characters kept and the rest masked.
fn masked(secret: &str, visible: usize) -> String {
    let kept: String = secret.chars().take(visible).collect();
    kept + &bullets(secret.chars().count() - visible)
}

/// Masks `text` and checks the result, idempotence, and that the prefilter hid nothing.
#[track_caller]
fn check(text: &str, expected: &str) {
    let out = MASKER.mask(text);
    assert_eq!(out, expected, "masking {text:?}");
    assert_eq!(MASKER.mask(&out), out, "masking twice changes {text:?}");
    assert!(
        matches!(MASKER.mask(&out), Cow::Borrowed(_)),
        "second mask allocates"
    );
    assert_eq!(
        EVERY_SHAPE.mask(text),
        expected,
        "the prefilter changed the result for {text:?}"
    );
}

#[track_caller]
fn unchanged(text: &str) {
    let out = MASKER.mask(text);
    assert!(
        matches!(out, Cow::Borrowed(_)),
        "{text:?} was masked: {out:?}"
    );
    assert_eq!(
        EVERY_SHAPE.mask(text),
        text,
        "without the prefilter {text:?} is masked"
    );
}

/// A vendor token in a neutral line: the prefix and one more character stay readable.
#[track_caller]
fn vendor(shape: &str, token: &str, visible: usize) {
    let line = format!("found {token} in .env.bak, rotating");
    let expected = format!("found {} in .env.bak, rotating", masked(token, visible));
    check(&line, &expected);
    assert!(
        MASKER.shapes_found(&line).contains(&shape),
        "{shape} did not match {token:?} (found {:?})",
        MASKER.shapes_found(&line)
    );
    // At the start and the end of a line, and quoted in JSON under a neutral key.
    check(token, &masked(token, visible));
    let json = format!(r#"{{"value": "{token}"}}"#);
    check(
        &json,
        &format!(r#"{{"value": "{}"}}"#, masked(token, visible)),
    );
}

macro_rules! vendor_tests {
    ($($test:ident: $shape:literal, $token:expr, $visible:expr;)*) => {
        $(
            #[test]
            fn $test() {
                vendor($shape, &$token, $visible);
            }
        )*
        const VENDOR_SHAPES_TESTED: &[&str] = &[$($shape),*];
    };
}

vendor_tests! {
    github_pat: "github-pat", format!("ghp_{}", filler(ALNUM, 36, 1)), 5;
    github_oauth: "github-oauth", format!("gho_{}", filler(ALNUM, 36, 2)), 5;
    github_user_to_server: "github-user-to-server", format!("ghu_{}", filler(ALNUM, 36, 3)), 5;
    github_server_to_server: "github-server-to-server", format!("ghs_{}", filler(ALNUM, 36, 4)), 5;
    github_refresh: "github-refresh", format!("ghr_{}", filler(ALNUM, 76, 5)), 5;
    github_fine_grained_pat: "github-fine-grained-pat",
        format!("github_pat_{}_{}", filler(ALNUM, 22, 6), filler(ALNUM, 59, 7)), 12;
    anthropic: "anthropic", format!("sk-ant-api03-{}AA", filler(B64URL, 93, 8)), 8;
    anthropic_short: "anthropic", format!("sk-ant-abc123{}", filler(ALNUM, 24, 9)), 8;
    openai_project: "openai-project", format!("sk-proj-{}", filler(B64URL, 156, 10)), 9;
    openai_service_account: "openai-project", format!("sk-svcacct-{}", filler(B64URL, 80, 11)), 12;
    openai_legacy: "openai", format!("sk-{}T3BlbkFJ{}", filler(ALNUM, 20, 12), filler(ALNUM, 20, 13)), 4;
    openrouter: "openrouter", format!("sk-or-v1-{}", filler(HEX, 64, 14)), 10;
    aws_access_key_id: "aws-access-key-id", format!("AKIA{}", filler(UPPER_DIGITS, 16, 15)), 5;
    aws_session_key_id: "aws-access-key-id", format!("ASIA{}", filler(UPPER_DIGITS, 16, 16)), 5;
    slack_bot_token: "slack-token",
        format!("xoxb-{}-{}-{}", filler(DIGITS, 12, 17), filler(DIGITS, 13, 18), filler(ALNUM, 24, 19)), 6;
    slack_user_token: "slack-token",
        format!("xoxp-{}-{}-{}", filler(DIGITS, 12, 20), filler(DIGITS, 13, 21), filler(HEX, 32, 22)), 6;
    slack_app_token: "slack-app-token",
        format!("xapp-1-A{}-{}-{}", filler(UPPER_DIGITS, 10, 23), filler(DIGITS, 13, 24), filler(HEX, 64, 25)), 6;
    slack_webhook: "slack-webhook",
        format!("https://hooks.slack.com/services/T{}/B{}/{}",
            filler(UPPER_DIGITS, 8, 26), filler(UPPER_DIGITS, 10, 27), filler(ALNUM, 24, 28)), 34;
    discord_webhook: "discord-webhook",
        format!("https://discord.com/api/webhooks/{}/{}", filler(DIGITS, 19, 29), filler(B64URL, 68, 30)), 34;
    stripe_secret_key: "stripe-secret-key", format!("sk_live_{}", filler(ALNUM, 99, 31)), 9;
    stripe_test_key: "stripe-secret-key", format!("sk_test_{}", filler(ALNUM, 24, 32)), 9;
    stripe_restricted_key: "stripe-restricted-key", format!("rk_live_{}", filler(ALNUM, 99, 33)), 9;
    stripe_webhook_secret: "stripe-webhook-secret", format!("whsec_{}", filler(ALNUM, 32, 34)), 7;
    google_api_key: "google-api-key", format!("AIza{}", filler(ALNUM, 35, 35)), 5;
    google_oauth_client_secret: "google-oauth-client-secret", format!("GOCSPX-{}", filler(B64URL, 28, 36)), 8;
    google_oauth_access_token: "google-oauth-access-token", format!("ya29.a0{}", filler(B64URL, 150, 37)), 6;
    gitlab_pat: "gitlab-pat", format!("glpat-{}", filler(B64URL, 20, 38)), 7;
    npm: "npm", format!("npm_{}", filler(ALNUM, 36, 39)), 5;
    pypi: "pypi", format!("pypi-AgEIcHlwaS5vcmc{}", filler(B64URL, 150, 40)), 6;
    hugging_face: "hugging-face", format!("hf_{}", filler(LETTERS, 34, 41)), 4;
    sendgrid: "sendgrid", format!("SG.{}.{}", filler(B64URL, 22, 42), filler(B64URL, 43, 43)), 4;
    jwt: "jwt", format!("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{}",
        filler(B64URL, 43, 44)), 4;
    mapbox: "mapbox", format!("sk.eyJ1Ijoi{}.{}", filler(ALNUM, 40, 45), filler(B64URL, 22, 46)), 4;
    onepassword_service_account: "1password-service-account", format!("ops_eyJ{}", filler(ALNUM, 250, 47)), 5;
    grafana_cloud: "grafana-cloud", format!("glc_eyJ{}", filler(ALNUM, 80, 48)), 5;
    grafana_service_account: "grafana-service-account",
        format!("glsa_{}_{}", filler(ALNUM, 32, 49), filler(HEX, 8, 50)), 6;
    digitalocean: "digitalocean", format!("dop_v1_{}", filler(HEX, 64, 51)), 8;
    shopify: "shopify", format!("shpat_{}", filler(HEX, 32, 52)), 7;
    mailgun: "mailgun", format!("key-{}", filler(HEX, 32, 53)), 5;
    databricks: "databricks", format!("dapi{}", filler(HEX, 32, 54)), 5;
    doppler: "doppler", format!("dp.pt.{}", filler(ALNUM, 43, 55)), 7;
    linear: "linear", format!("lin_api_{}", filler(ALNUM, 40, 56)), 9;
    sentry: "sentry", format!("sntryu_{}", filler(HEX, 64, 57)), 8;
    atlassian: "atlassian", format!("ATATT3xFfGF0{}", filler(B64URL, 180, 58)), 7;
    telegram_bot: "telegram-bot", format!("{}:AA{}", filler(DIGITS, 10, 59), filler(B64URL, 33, 60)), 12;
    square_access_token: "square", format!("EAAA{}", filler(B64URL, 60, 61)), 5;
    square_oauth_secret: "square", format!("sq0csp-{}", filler(B64URL, 43, 62)), 8;
    planetscale: "planetscale", format!("pscale_tkn_{}", filler(B64URL, 43, 63)), 12;
    heroku: "heroku", format!("HRKU-AA{}", filler(B64URL, 58, 64)), 6;
    groq: "groq", format!("gsk_{}", filler(ALNUM, 52, 65)), 5;
    replicate: "replicate", format!("r8_{}", filler(ALNUM, 37, 66)), 4;
    xai: "xai", format!("xai-{}", filler(ALNUM, 80, 67)), 5;
    tailscale: "tailscale", format!("tskey-auth-k{}CNTRL-{}", filler(ALNUM, 8, 68), filler(ALNUM, 32, 69)), 12;
    docker_hub_pat: "docker-hub-pat", format!("dckr_pat_{}", filler(B64URL, 27, 70)), 10;
    hashicorp_vault: "hashicorp-vault", format!("hvs.CAESI{}", filler(B64URL, 90, 71)), 5;
    age_secret_key: "age-secret-key", format!("AGE-SECRET-KEY-1{}", filler(BECH32, 58, 72)), 17;
    twilio_api_key: "twilio-api-key", format!("SK{}", filler(HEX, 32, 74)), 3;
    twilio_api_key_upper_case_hex: "twilio-api-key",
        format!("SK{}", filler(b"0123456789ABCDEF", 32, 75)), 3;
    collie_device_token: "collie-device-token", format!("collie_{}", filler(B64URL, 43, 73)), 8;
}

#[test]
fn every_shape_has_a_test() {
    let others = ["url-password", "secret-assignment", "private-key-block"];
    for shape in SHAPES {
        assert!(
            VENDOR_SHAPES_TESTED.contains(&shape.name) || others.contains(&shape.name),
            "no sample for {}",
            shape.name
        );
    }
    let vendors = SHAPES.iter().filter(|s| !others.contains(&s.name)).count();
    assert!(vendors >= 30, "only {vendors} vendor token shapes");
}

#[test]
fn collie_token_must_have_exactly_43_characters() {
    unchanged(&format!("collie_{}", filler(B64URL, 42, 80)));
    unchanged(&format!("collie_{}", filler(B64URL, 44, 81)));
    unchanged("the collie_ crate");
}

#[test]
fn twilio_api_key_must_have_exactly_32_hex_digits_and_stand_alone() {
    let hex = filler(HEX, 33, 85);
    unchanged(&format!("SK{}", &hex[..31]));
    unchanged(&format!("SK{hex}"));
    // Glued inside a longer word, on either side.
    unchanged(&format!("TASK{}", &hex[..32]));
    unchanged(&format!("SK{}x", &hex[..32]));
    unchanged(&format!("MY_SK{}", &hex[..32]));
    unchanged(&format!("SK{}_1", &hex[..32]));
    // Not hex, or not Twilio's prefix.
    unchanged(&format!("SK{}", filler(ALNUM, 32, 86)));
    unchanged(&format!("sk{}", &hex[..32]));
    // A Twilio account SID is an identifier, not a secret (and no shape of its own).
    unchanged(&format!("AC{}", &hex[..32]));
    unchanged("SKIP: 3 tests, DISK full, ASK again");
    // Between blanks, quotes, `=` or `:`, it is masked.
    let token = format!("SK{}", &hex[..32]);
    check(
        &format!("TWILIO_KEY_SID={token}"),
        &format!("TWILIO_KEY_SID={}", masked(&token, 3)),
    );
    check(
        &format!("api key sid: '{token}', and {token}."),
        &format!(
            "api key sid: '{}', and {}.",
            masked(&token, 3),
            masked(&token, 3)
        ),
    );
}

#[test]
fn adjacent_tokens_are_each_masked() {
    let a = format!("ghp_{}", filler(ALNUM, 36, 82));
    let b = format!("collie_{}", filler(B64URL, 43, 83));
    let c = format!("collie_{}", filler(B64URL, 43, 84));
    check(
        &format!("{a},{b} {c}"),
        &format!("{},{} {}", masked(&a, 5), masked(&b, 8), masked(&c, 8)),
    );
}

// --- Secret words -------------------------------------------------------------------------

#[test]
fn secret_assignments_keep_the_first_character_of_the_value() {
    let cases = [
        ("password: hunter2", "password: h••••••"),
        ("DB_PASSWORD=s3cr3t-pa55", "DB_PASSWORD=s••••••••••"),
        (
            r#"  "api_key": "abc123def456","#,
            r#"  "api_key": "a•••••••••••","#,
        ),
        ("token = 'xyz789xyz'", "token = 'x••••••••'"),
        ("X-Api-Key: abcdef123456", "X-Api-Key: a•••••••••••"),
        ("client_secret=Zx9Yw8Vu7", "client_secret=Z••••••••"),
        ("accessToken: qwertyuiop", "accessToken: q•••••••••"),
        ("NPM_AUTH=dXNlcjpwYXNz", "NPM_AUTH=d•••••••••••"),
        ("bearer = abcdefg", "bearer = a••••••"),
        ("credentials: s3cret", "credentials: s•••••"),
        ("PASSWD=letmein", "PASSWD=l••••••"),
        (
            r#"passphrase = "correct horse battery staple""#,
            r#"passphrase = "c•••••••••••••••••••••••••••""#,
        ),
        (
            "PGPASSWORD='p@ss w0rd' psql -h db",
            "PGPASSWORD='p••••••••' psql -h db",
        ),
        (
            "mysql --password=hunter2 -u root",
            "mysql --password=h•••••• -u root",
        ),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = w•••••••••••••••••••••••••••••••••••••••",
        ),
        (
            "SECRET_KEY=django-insecure-abc",
            "SECRET_KEY=d••••••••••••••••••",
        ),
        ("private_key := loaded", "private_key := l•••••"),
        (
            "const PASSWORD = \"hunter2\";",
            "const PASSWORD = \"h••••••\";",
        ),
        ("letter_token=abcd", "letter_token=a•••"),
        ("password: Hunter2", "password: H••••••"),
        (
            "password: hunter2, # rotate monthly",
            "password: h••••••, # rotate monthly",
        ),
        ("Token: Token", "Token: T••••"),
        (
            "user=bob password=hunter2 token=abc",
            "user=bob password=h•••••• token=a••",
        ),
        (
            "?access_token=abc123&user=bob",
            "?access_token=a•••••&user=bob",
        ),
        (
            "password: \"unterminated value",
            "password: \"u•••••••••••••••••",
        ),
        ("\tsecret: line-with-crlf\r", "\tsecret: l•••••••••••••\r"),
    ];
    for (text, expected) in cases {
        check(text, expected);
        assert!(
            MASKER.shapes_found(text).contains(&"secret-assignment"),
            "{text:?}"
        );
    }
}

#[test]
fn short_secret_words_pass_and_pwd_are_masked_where_they_start_a_word() {
    let cases = [
        ("DB_PASS=hunter2", "DB_PASS=h••••••"),
        ("MYSQL_PWD=hunter2", "MYSQL_PWD=h••••••"),
        ("DB_PWD=hunter2", "DB_PWD=h••••••"),
        ("PASS=x1", "PASS=x•"),
        ("pass: hunter2", "pass: h••••••"),
        ("pwd: hunter2", "pwd: h••••••"),
        ("dbPass: hunter2", "dbPass: h••••••"),
        ("dbPwd: hunter2", "dbPwd: h••••••"),
        ("db_pass=hunter2", "db_pass=h••••••"),
        ("smtp.pass: hunter2", "smtp.pass: h••••••"),
        ("redis-pass=hunter2", "redis-pass=h••••••"),
        ("export SMTP_PASS='hunter 2'", "export SMTP_PASS='h•••••••'"),
        (r#"  "dbPass": "hunter2","#, r#"  "dbPass": "h••••••","#),
        ("PASS := hunter2", "PASS := h••••••"),
        (r#""PASS": "hunter2""#, r#""PASS": "h••••••""#),
        (
            "openssl rsa -in k.pem -passin pass:hunter2",
            "openssl rsa -in k.pem -passin pass:h••••••",
        ),
        // PASSWD was a secret word before the short words; it still is.
        ("PASSWD=letmein", "PASSWD=l••••••"),
        ("db_passwd: letmein", "db_passwd: l••••••"),
        ("MYSQL_PASSWD=letmein", "MYSQL_PASSWD=l••••••"),
        ("dbPasswd=letmein", "dbPasswd=l••••••"),
    ];
    for (text, expected) in cases {
        check(text, expected);
        assert!(
            MASKER.shapes_found(text).contains(&"secret-assignment"),
            "{text:?}"
        );
    }
}

#[test]
fn pass_and_pwd_inside_a_word_are_not_secret_words() {
    for text in [
        "COMPASS=north",
        "BYPASS=1",
        "BYPASS=always-on",
        "bypass: true",
        "bypass: enabled",
        "surpass=expectations",
        "CACHE_BYPASS=always",
        "xpwd=hunter2",
        "OLDPWD=/tmp",
        "passes: three",
        "passed=12",
        "pwds: a,b",
        "PASSING=yes-they-do",
    ] {
        unchanged(text);
    }
}

#[test]
fn the_shells_working_directory_variables_are_not_secrets() {
    // What `env`, `set` and `export -p` print: PWD and OLDPWD are paths.
    for text in [
        "PWD=/home/me/src",
        "OLDPWD=/tmp",
        "declare -x PWD=\"/home/me/src\"",
        "declare -x OLDPWD=\"/tmp\"",
        "export PWD=/home/me/src",
    ] {
        unchanged(text);
    }
    let env = "HOME=/home/me\nOLDPWD=/tmp\nPWD=/home/me/src\nMYSQL_PWD=hunter2\nDB_PASS=s3cret\n";
    check(
        env,
        "HOME=/home/me\nOLDPWD=/tmp\nPWD=/home/me/src\nMYSQL_PWD=h••••••\nDB_PASS=s•••••\n",
    );
    // Only those exact keys: lower case `pwd` and other `…_PWD` keys are passwords.
    check("pwd=/home/me", "pwd=/•••••••");
    check("OLD_PWD=hunter2", "OLD_PWD=h••••••");
}

#[test]
fn test_results_are_not_pass_assignments() {
    for text in [
        "--- PASS: TestParse (0.00s)",
        "    --- PASS: TestParse/empty_input (0.00s)",
        "PASS: tests/t1.sh",
        "# PASS:  12",
    ] {
        unchanged(text);
    }
}

#[test]
fn short_secret_words_skip_placeholders_references_and_code() {
    for text in [
        "DB_PASS=$DB_PASS",
        "MYSQL_PWD=${MYSQL_PWD}",
        "dbPass: null",
        "db_pass: ********",
        "PASS=***",
        "smtp.pass: <your-password>",
        "let pass = cursor;",
        "pwd = get_pwd()",
        "pwd=$(pwd)",
        "    dbPass: String,",
        "self.pass = pass",
    ] {
        unchanged(text);
    }
}

#[test]
fn authorization_headers_mask_the_credentials_after_the_scheme() {
    check(
        "Authorization: Bearer abc.def-ghi_jkl",
        "Authorization: Bearer a••••••••••••••",
    );
    check(
        "authorization: Basic dXNlcjpwYXNzd29yZA==",
        "authorization: Basic d•••••••••••••••••••",
    );
    check(
        r#"curl -H "Authorization: token abc123" https://api.example.com"#,
        r#"curl -H "Authorization: token a•••••" https://api.example.com"#,
    );
    check(
        r#"{"Authorization": "Bearer abc123"}"#,
        r#"{"Authorization": "B••••••••••••"}"#,
    );
    check("AUTHORIZATION=Bearer xyz987", "AUTHORIZATION=Bearer x•••••");
}

#[test]
fn a_vendor_token_under_a_secret_word_is_masked_once() {
    let token = format!("ghp_{}", filler(ALNUM, 36, 90));
    check(
        &format!("export GITHUB_TOKEN={token}"),
        &format!("export GITHUB_TOKEN={}", masked(&token, 1)),
    );
}

#[test]
fn secret_words_without_a_secret_value_are_left_alone() {
    for text in [
        "max_tokens=4096",
        "token_count: 12",
        "Tokens: 12.3k in, 4.1k out",
        "password_file=/etc/app/pw",
        "Enter your password:",
        "Enter your password: ",
        "The password is wrong, try again.",
        "[sudo] password for alice:",
        "Password for 'https://alice@github.com':",
        "Author: Alice <alice@example.org>",
        "token: null",
        "auth: true",
        "secret: ~",
        "password: ********",
        "api_key: \"\"",
        "TOKEN=$GITHUB_TOKEN",
        "password: ${DB_PASSWORD}",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "set TOKEN=%GH_TOKEN%",
        "api_key: <your-api-key>",
        "let token = make_token(&user);",
        "-    let token = cursor;",
        "const PASSWORD = PASSWORD_FROM_ENV",
        "self.password = password",
        "token = request.headers[\"X-Token\"]",
        "pub token: Token,",
        "    password: String,",
        "    pub(crate) api_key: ApiKey,",
        "fn new(token: Token) -> Self {",
        "  readonly token: string;",
        "\tPassword: password,",
        "cache-key-d41d8cd98f00b204e9800998ecf8427e restored",
        "password = os.environ.get(\"DB_PASSWORD\")",
        "if token == expected {",
        "secret_key_base_dir: /srv",
        "keyboard-interactive authentication",
        "ssh-keygen -t ed25519 -C alice@devbox",
        "the key-value store, the key: a name",
    ] {
        unchanged(text);
    }
}

/// The start and value of each match of the secret-assignment regex in `line`, as its own
/// capture groups resolve it.
pub(super) fn assignment_values_by_regex(line: &str) -> Vec<(usize, Range<usize>)> {
    static REGEX: LazyLock<regex::Regex> = LazyLock::new(|| {
        let shape = SHAPES.iter().find(|s| s.name == "secret-assignment");
        regex::Regex::new(shape.expect("the shape exists").pattern).expect("a valid pattern")
    });
    REGEX
        .captures_iter(line)
        .filter_map(|caps| {
            let start = caps.get(0)?.start();
            Some((start, caps.iter().skip(1).flatten().next()?.range()))
        })
        .collect()
}

#[test]
fn assignment_values_are_found_where_the_regex_groups_are() {
    for line in [
        "password: hunter2",
        r#"token: "a\"b" and more"#,
        r#"token: "ends in a backslash\"#,
        r#"token: "escaped backslash\\" next"#,
        "Authorization: Bearer",
        "Authorization: Bearer ,x",
        "Authorization: Bearer   'quoted after scheme' tail",
        "x_token := value; y_secret => 'v2' z-api-key='' `k`",
        "PASSWORD=`backticks` TOKEN='single",
        "auth:   \t  spaced",
        r#"{"password":"p","token":"t"}"#,
        "tokentoken=1 monkey=2 my_api-Key = x a.b-SECRET_KEY:y apikey=z",
        "tokenfoo=1 password=2, Token\"=x token'= 'y' TOKEN \t=> v",
        r#"password="a"token=b password='c'd.secret=e `x`auth=f"#,
        "passwd: x passWord: y PassPhrase: z credentials=w CREDENTIAL=v bearer=u AUTH=t",
        "SigningKey=1 signing-key=2 encryption.KEY=3 Masterkey=4 client_Key=5 privateKEY=6",
        "token: token:=x api_key=>'z' secret:\"unterminated",
        "auth: \"escaped \\\" quote\" tail=token:x",
        "héllo_token=ü日本 тoken=x",
        "COMPASS=1 x_pass=2 a.PWD=3 dbPwd=4 OLDPWD=5 PWD=6 -pass=7 _PASS=8 Pass=9 bYPASS=0",
        "héPASS=x 2pass=y 2_pass=z pass.pass=w PASSPWD=v pwdpass=u db-Pwd=t xPWD=s",
        "a.bPASS=1 a.b.PASS=2 --pass=3 ..pwd=4 pass=pass=5 PASS: TestX PASS:=y",
        "compass_pass='q' dbPASS=r my_passwd=s MYPWD=t my__pwd=u Pwd=v",
    ] {
        assert_eq!(
            MASKER.assignment_values(line),
            assignment_values_by_regex(line),
            "{line:?}"
        );
    }
}

#[test]
fn secret_words_are_matched_in_lower_title_and_upper_case() {
    check("Token=abcd", "Token=a•••");
    check("TOKEN=abcd", "TOKEN=a•••");
    check("token=abcd", "token=a•••");
    check("authToken: abcd", "authToken: a•••");
    check("SlackBotToken=abcd", "SlackBotToken=a•••");
}

// --- URLs ---------------------------------------------------------------------------------

#[test]
fn url_passwords_keep_their_first_character() {
    check(
        "DATABASE_URL_RO postgres://admin:hunter2@db.internal:5432/app",
        "DATABASE_URL_RO postgres://admin:h••••••@db.internal:5432/app",
    );
    check(
        "redis://:s3cr3t@localhost:6379/0",
        "redis://:s•••••@localhost:6379/0",
    );
    check("https://user:p@ss@host/path", "https://user:p•••@host/path");
    check(
        "\"amqp://guest:guest@rabbit:5672\"",
        "\"amqp://guest:g••••@rabbit:5672\"",
    );
    let token = format!("ghs_{}", filler(ALNUM, 36, 91));
    check(
        &format!("git clone https://x-access-token:{token}@github.com/o/r.git"),
        &format!(
            "git clone https://x-access-token:{}@github.com/o/r.git",
            masked(&token, 1)
        ),
    );
    assert!(MASKER
        .shapes_found("redis://:s3cr3t@localhost")
        .contains(&"url-password"));
}

#[test]
fn urls_without_a_password_are_left_alone() {
    for text in [
        "https://example.com:8080/path?q=1",
        "ssh://git@github.com/owner/repo.git",
        "http://[::1]:3000/health",
        "https://alice@example.org/",
        "mailto:alice@example.org",
        "https://docs.rs/regex/latest/regex/#syntax",
        "https://example.com/a:b@c",
        "postgres://app:${PGPASSWORD}@db/app",
    ] {
        unchanged(text);
    }
}

// --- PEM ----------------------------------------------------------------------------------

fn base64_lines(lines: usize, seed: u64) -> Vec<String> {
    (0..lines)
        .map(|i| {
            filler(
                BASE64,
                if i + 1 == lines { 24 } else { 64 },
                seed + i as u64,
            )
        })
        .collect()
}

#[test]
fn private_key_blocks_keep_begin_and_end_and_mask_the_body() {
    for kind in ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "] {
        let body = base64_lines(4, 100);
        let begin = format!("-----BEGIN {kind}PRIVATE KEY-----");
        let end = format!("-----END {kind}PRIVATE KEY-----");
        let text = format!("$ cat key.pem\n{begin}\n{}\n{end}\n$ ", body.join("\n"));
        let masked_body: Vec<String> = body.iter().map(|l| bullets(l.len())).collect();
        let expected = format!(
            "$ cat key.pem\n{begin}\n{}\n{end}\n$ ",
            masked_body.join("\n")
        );
        check(&text, &expected);
        assert!(MASKER.shapes_found(&text).contains(&"private-key-block"));
    }
}

#[test]
fn encrypted_pem_headers_stay_readable() {
    let body = base64_lines(2, 110);
    let text = format!(
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,{}\n\n{}\n-----END RSA PRIVATE KEY-----",
        filler(b"0123456789ABCDEF", 32, 111),
        body.join("\n")
    );
    let expected = text
        .replace(&body[0], &bullets(64))
        .replace(&body[1], &bullets(24));
    check(&text, &expected);
}

#[test]
fn an_indented_block_keeps_its_indentation_and_line_endings() {
    let body = base64_lines(2, 120);
    let text = format!(
        "tls:\r\n  key: |\r\n    -----BEGIN EC PRIVATE KEY-----\r\n    {}\r\n    {}\r\n    -----END EC PRIVATE KEY-----\r\n",
        body[0], body[1]
    );
    let expected = text
        .replace(&body[0], &bullets(64))
        .replace(&body[1], &bullets(24));
    check(&text, &expected);
}

#[test]
fn a_block_cut_off_before_its_end_is_masked_up_to_the_first_other_line() {
    let body = base64_lines(3, 130);
    let text = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n{}\nalice@devbox:~$ ls",
        body[0], body[1]
    );
    let expected = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n{}\nalice@devbox:~$ ls",
        bullets(64),
        bullets(64)
    );
    check(&text, &expected);
}

#[test]
fn a_begin_line_among_another_blocks_headers_shares_its_body() {
    let body = base64_lines(2, 160);
    let text = format!(
        "-----BEGIN RSA PRIVATE KEY-----\nComment: -----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----",
        body[0], body[1]
    );
    let expected = text
        .replace(&body[0], &bullets(64))
        .replace(&body[1], &bullets(24));
    check(&text, &expected);
}

#[test]
fn public_keys_and_certificates_are_left_alone() {
    let body = base64_lines(3, 140).join("\n");
    unchanged(&format!(
        "-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----"
    ));
    unchanged(&format!(
        "-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----"
    ));
    unchanged("-----BEGIN RSA PRIVATE KEY----- is the first line of a key file");
}

/// An armored PGP block of `kind` (`PRIVATE KEY`, `PUBLIC KEY`, `SIGNATURE`) with armor
/// headers, a blank line, base64 lines and a checksum line; and the lines that are its body.
fn pgp_block(kind: &str, seed: u64) -> (String, Vec<String>) {
    let mut body = base64_lines(3, seed);
    body.push(format!("={}", filler(BASE64, 4, seed + 50)));
    let text = format!(
        "-----BEGIN PGP {kind} BLOCK-----\nVersion: GnuPG v2\nComment: alice@example.org\n\n{}\n-----END PGP {kind} BLOCK-----",
        body.join("\n")
    );
    (text, body)
}

#[test]
fn pgp_private_key_blocks_keep_armor_lines_and_mask_the_body_and_checksum() {
    let (block, body) = pgp_block("PRIVATE KEY", 170);
    let text = format!("$ gpg --export-secret-keys --armor alice\n{block}\n$ ");
    let mut expected = text.clone();
    for line in &body {
        expected = expected.replace(line.as_str(), &bullets(line.len()));
    }
    assert!(expected.contains("\n•••••\n-----END PGP PRIVATE KEY BLOCK-----"));
    assert!(expected.contains("-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n"));
    check(&text, &expected);
    assert!(MASKER.shapes_found(&text).contains(&"private-key-block"));
    // Indented, with CRLF line ends, as a config file might hold it.
    let indented = format!("  {}\r\n", block.replace('\n', "\r\n  "));
    let mut expected = indented.clone();
    for line in &body {
        expected = expected.replace(line.as_str(), &bullets(line.len()));
    }
    check(&indented, &expected);
}

#[test]
fn a_pgp_private_key_block_cut_off_before_its_end_is_masked() {
    let (block, body) = pgp_block("PRIVATE KEY", 180);
    // The screen shows the BEGIN line, the headers and two body lines.
    let shown: Vec<&str> = block.lines().take(6).collect();
    let text = format!("{}\nalice@devbox:~$ ls", shown.join("\n"));
    let expected = text
        .replace(&body[0], &bullets(64))
        .replace(&body[1], &bullets(64));
    check(&text, &expected);
    // And cut before the body: nothing to mask yet.
    unchanged("-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n");
}

#[test]
fn pgp_public_keys_and_signatures_are_left_alone() {
    unchanged(&pgp_block("PUBLIC KEY", 190).0);
    let (block, _) = pgp_block("PUBLIC KEY", 191);
    let signature = block
        .replace("PUBLIC KEY BLOCK", "SIGNATURE")
        .replace("Comment: alice@example.org\n", "");
    assert!(signature.starts_with("-----BEGIN PGP SIGNATURE-----\n"));
    unchanged(&signature);
    unchanged(&format!(
        "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\nrelease 1.2\n{signature}"
    ));
    unchanged("-----BEGIN PGP PRIVATE KEY BLOCK----- starts an exported secret key");
}

#[test]
fn a_pem_body_line_alone_is_bare_base64_and_left_alone() {
    unchanged(&base64_lines(1, 150)[0]);
}

// --- Negatives ----------------------------------------------------------------------------

#[test]
fn hex_base64_hashes_and_ids_are_never_masked() {
    let texts = [
        filler(HEX, 40, 200),
        filler(HEX, 64, 201),
        filler(BASE64, 200, 202),
        filler(B64URL, 43, 203),
        format!(
            "commit {}\nAuthor: Alice <alice@example.org>",
            filler(HEX, 40, 204)
        ),
        format!("{}  target/release/collie", filler(HEX, 64, 205)),
        "request id=3f2b8c1e-9a4d-4e7f-b2c6-1d8e9f0a7b3c status=200".to_owned(),
        format!("sha256:{}", filler(HEX, 64, 206)),
        format!("\"integrity\": \"sha512-{}==\"", filler(BASE64, 86, 207)),
        "pip install scikit-learn  # sk-learn".to_owned(),
        "disk-usage-analyzer-for-linux-and-friends-v2".to_owned(),
        "AKIA is how AWS key ids start".to_owned(),
        "from huggingface_hub import hf_hub_download".to_owned(),
        "npm_config_cache=/tmp/npm".to_owned(),
        "eyJ is base64 for {\"".to_owned(),
        format!("xoxb- is a Slack prefix; {}", filler(HEX, 32, 208)),
        "warning: unused variable: `key`".to_owned(),
    ];
    for text in &texts {
        unchanged(text);
    }
}

#[test]
fn clean_terminal_text_is_borrowed() {
    let text = "alice@devbox:~/src/collie$ cargo test\n   Compiling collie v0.1.0\n\
                test result: ok. 42 passed; 0 failed\n";
    assert!(matches!(MASKER.mask(text), Cow::Borrowed(_)));
    let owned = text.to_owned();
    let ptr = owned.as_ptr();
    let back = MASKER.mask_string(owned);
    assert_eq!(back.as_ptr(), ptr, "mask_string copied clean text");
}

// --- Behaviour ----------------------------------------------------------------------------

#[test]
fn disabled_masker_is_the_identity() {
    let masker = Masker::new(false);
    assert!(!masker.is_enabled());
    let text = format!("password: hunter2 ghp_{}", filler(ALNUM, 36, 300));
    assert!(matches!(masker.mask(&text), Cow::Borrowed(_)));
    assert_eq!(masker.mask_string(text.clone()), text);
    assert!(MASKER.is_enabled());
}

#[test]
fn masking_keeps_every_lines_character_count() {
    let text = format!(
        "a: ghp_{}\nü password=hünter2 日本\n-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        filler(ALNUM, 36, 301),
        base64_lines(1, 302)[0]
    );
    let out = MASKER.mask(&text);
    assert_ne!(out, text);
    let counts = |s: &str| s.split('\n').map(|l| l.chars().count()).collect::<Vec<_>>();
    assert_eq!(counts(&out), counts(&text));
    assert!(out.contains("password=h•••••• 日本"));
}

#[test]
fn masker_is_send_and_sync() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<Masker>();
    assert_eq!(
        format!("{:?}", Masker::new(false)),
        "Masker { enabled: false }"
    );
}

// --- The table ----------------------------------------------------------------------------

#[test]
fn every_pattern_compiles_with_a_secret_group() {
    let mut names = Vec::new();
    for (name, pattern) in shape_patterns() {
        let regex = regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(regex.captures_len() >= 2, "{name} has no capture group");
        assert!(!names.contains(&name), "{name} listed twice");
        names.push(name);
    }
    assert_eq!(names.len(), SHAPES.len());
}

#[test]
fn every_trigger_is_in_exactly_one_automaton() {
    let literals: Vec<&str> = AUTOMATA.iter().flat_map(|g| g.iter().copied()).collect();
    for shape in SHAPES {
        for trigger in shape.triggers {
            let n = literals.iter().filter(|l| *l == trigger).count();
            assert_eq!(
                n, 1,
                "trigger {trigger:?} of {} is listed {n} times",
                shape.name
            );
        }
    }
    for literal in &literals {
        assert!(
            SHAPES.iter().any(|s| s.triggers.contains(literal)),
            "literal {literal:?} triggers no shape"
        );
    }
}

#[test]
fn no_literal_is_a_prefix_of_another_in_its_automaton() {
    for group in AUTOMATA {
        for a in group.iter() {
            for b in group.iter() {
                assert!(a == b || !b.starts_with(a), "{a:?} is a prefix of {b:?}");
            }
        }
        assert!(
            group.len() <= 64,
            "a group of {} literals leaves Teddy's fast path",
            group.len()
        );
    }
}
