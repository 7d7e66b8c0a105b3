//! The table of secret shapes: one row per shape, with the literals that must occur in any match
//! (the prefilter's triggers) and the regex that finds it.
//!
//! Conventions every row follows, relied on by the masker and checked by the tests:
//! - The secret is the first capture group that took part in the match. Its first `keep`
//!   characters stay readable (the vendor prefix sits outside the group, so `ghp_` plus one
//!   character stays readable); every other character of the group becomes one `•`.
//! - A regex never matches across a line break (negated classes exclude `\n` and `\r`, `[ \t]`
//!   stands for blanks), so masking a text line by line finds what masking it whole would.
//!   Classes name ASCII whitespace (`\t-\r` and space) rather than `\s`: Unicode's whitespace
//!   would make the automata several times larger for nothing a terminal shows.
//! - Every match contains at least one of the row's triggers, spelled exactly as listed (the
//!   prefilter is case-sensitive; see [`super::prefilter`]).
//! - The masked part's character class admits `•` or does not match at all after masking, so
//!   already-masked text is never matched in a way that changes it.
//! - Bare hex or base64 is never a shape: every row needs a vendor prefix, a secret word, a
//!   `user:password@` URL or a PEM marker.

/// How a shape's candidate is confirmed cheaply at the trigger hit, before its regex runs.
///
/// Each check is a necessary condition of the regex matching through that hit, so skipping the
/// regex when it fails changes no result; it only spares the regex on frequent trigger words
/// ("Author:", "keyboard", every URL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Always run the regex (vendor prefixes are rare in clean text).
    None,
    /// The word around the hit ends with a secret word and is followed by `:` or `=`.
    Assignment,
    /// The URL authority after `://` holds a `:` and, later, an `@`.
    UrlUserinfo,
    /// The text at the hit starts with this literal.
    StartsWith(&'static str),
    /// The text at the hit starts with one of these literals.
    StartsWithAny(&'static [&'static str]),
    /// The text before the hit ends with this literal.
    Preceded(&'static str),
    /// At least this many bytes of the class follow the trigger: the token itself. This also
    /// spares the regex a masked token, whose readable prefix is followed by `•`.
    Followed(Class, usize),
}

/// A class of token bytes, for [`Check::Followed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// `[A-Za-z0-9]`
    Alnum,
    /// `[A-Z0-9]`
    UpperDigit,
    /// `[A-Za-z0-9_-]`
    Base64Url,
    /// `[0-9a-fA-F]`
    Hex,
}

impl Class {
    pub(crate) fn contains(self, b: u8) -> bool {
        match self {
            Class::Alnum => b.is_ascii_alphanumeric(),
            Class::UpperDigit => b.is_ascii_uppercase() || b.is_ascii_digit(),
            Class::Base64Url => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
            Class::Hex => b.is_ascii_hexdigit(),
        }
    }
}

/// What a shape's match holds, and which of its values are left alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    /// Whatever the regex captured is a secret.
    Token,
    /// A password: skipped when it is plainly not a secret (`null`, `***`, a `$VAR` or
    /// `${VAR}` reference).
    Password,
    /// An assignment to a secret word, its value found by [`super::assign::value`]; skipped
    /// as a password is, and also when it is code (`get_token()`, `let token = cursor;`).
    Assignment,
}

/// One secret shape.
#[derive(Debug)]
pub(crate) struct Shape {
    /// Stable, kebab-case name (tests refer to shapes by it; [`shape_patterns`] lists it).
    pub(crate) name: &'static str,
    /// Literals one of which occurs in every match.
    pub(crate) triggers: &'static [&'static str],
    /// The regex; its first participating capture group is the secret.
    pub(crate) pattern: &'static str,
    /// How many leading characters of the secret stay readable.
    pub(crate) keep: usize,
    /// A necessary condition of a match at each hit of a trigger, cheaper than the regex.
    pub(crate) check: Check,
    pub(crate) value: Value,
    /// True for the PEM (and PGP) private key block, which spans lines and is masked by
    /// [`super::pem`] rather than by its (baseline-only) regex.
    pub(crate) multiline: bool,
}

const fn token(
    name: &'static str,
    triggers: &'static [&'static str],
    pattern: &'static str,
) -> Shape {
    Shape {
        name,
        triggers,
        pattern,
        keep: 1,
        check: Check::None,
        value: Value::Token,
        multiline: false,
    }
}

/// Secret words, as the key of an assignment must end with them. Each word is accepted in
/// lower, Title and UPPER case (and so in camelCase, snake_case and SCREAMING_CASE compounds:
/// `accessToken`, `db_password`, `GITHUB_TOKEN`), which is what the case-sensitive prefilter
/// stems below cover. The key must *end* with the word: `max_tokens`, `token_count` and
/// `password_file` are not secrets.
///
/// The short words `pass` and `pwd` end many words that are no secret (`compass`, `BYPASS`,
/// `surpass`, the shell's `OLDPWD`), so they must also *start* a word of the key: be the whole
/// key, follow `_`, `.` or `-` (`DB_PASS`, `smtp.pass`, `MYSQL_PWD`), or be Title case, which
/// starts a camelCase word (`dbPass`, `dbPwd`). In the regex, a lower or UPPER short word
/// follows `_` or an ASCII word boundary; since every ASCII word byte is a key byte, that
/// boundary is the key's start or a `.` or `-` before the word. It depends only on the bytes
/// around the word, so a match still starts where the key's run of key bytes starts (which
/// [`super::assign::find`] relies on): `COMPASS=` has no match at its `P` either.
macro_rules! secret_key {
    () => {
        concat!(
            r"[A-Za-z0-9_.-]*",
            r"(?:[tT]oken|TOKEN|[pP]assw(?:or)?d|PASSW(?:OR)?D|[pP]assphrase|PASSPHRASE",
            r"|(?:(?-u:\b)|_)(?:pass|PASS|pwd|PWD)|Pass|Pwd",
            r"|[sS]ecret|SECRET|[cC]redentials?|CREDENTIALS?|auth|AUTH|[bB]earer|BEARER",
            r"|[aA]uthorization|AUTHORIZATION",
            r"|(?:[aA]pi|API|[aA]ccess|ACCESS|[pP]rivate|PRIVATE|[sS]ecret|SECRET|[cC]lient",
            r"|CLIENT|[mM]aster|MASTER|[sS]igning|SIGNING|[eE]ncryption|ENCRYPTION)",
            r"[_.-]?(?:[kK]ey|KEY))",
        )
    };
}

/// What follows the key: `:`, `=`, `:=` or `=>`, an optional auth scheme (`Bearer`), and the
/// value — quoted (an unterminated quote runs to the end of the line) or up to a blank, quote,
/// `,`, `;` or `&`.
macro_rules! secret_value {
    () => {
        concat!(
            r#"["']?[ \t]*(?::=|=>|[:=])[ \t]*"#,
            r"(?:(?:[bB]earer|BEARER|[bB]asic|BASIC|[tT]oken|TOKEN)[ \t]+)?",
            r#"(?:"((?:[^"\\\r\n]|\\[^\r\n])*)"?|'([^'\r\n]*)'?|`([^`\r\n]*)`?"#,
            r#"|([^\t-\r "'`,;&]+))"#,
        )
    };
}

const SECRET_ASSIGNMENT: &str = concat!(secret_key!(), secret_value!());

/// Prefilter stems of the secret words, one per spelling: `oken` is in `token` and `Token`,
/// `OKEN` in `TOKEN`, `UTH` in `AUTH` and `AUTHORIZATION`; `pass`, `Pass` and `PASS` are in
/// every spelling of `pass`, `passwd`, `password` and `passphrase`. `auth` is not offered in
/// Title case (`Auth`), which would fire on every `Author:` line of a `git log`;
/// `Authorization` is found through `rization` instead. Each stem is chosen for the
/// prefilter's scan (see [`super::prefilter`]), and listed there in its bucket order.
const SECRET_WORD_STEMS: &[&str] = &[
    "oken", "OKEN", "pass", "Pass", "PASS", "pwd", "Pwd", "PWD", "ecre", "ECRET", "key", "Key",
    "KEY", "auth", "UTH", "rer", "ARER", "denti", "DENTI", "rization",
];

/// `scheme://user:PASSWORD@host`: the password keeps its first character.
const URL_PASSWORD: &str =
    r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://[^\t-\r :/?#@"'`<>]*:([^\t-\r /?#"'`<>]+)@"#;

/// The PEM private key block, and the OpenPGP armored one (`PRIVATE KEY BLOCK`), as one regex
/// for the naive baseline; the masker itself walks the block line by line ([`super::pem`]) so
/// that a block cut off by the screen edge is masked too.
const PEM_BLOCK: &str = concat!(
    r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(.*?)",
    r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----",
);

/// Every shape, in the order the masker tries them on a line.
pub(crate) const SHAPES: &[Shape] = &[
    // GitHub: classic and fine-grained personal access tokens, OAuth, app and refresh tokens.
    Shape {
        check: Check::Followed(Class::Alnum, 36),
        ..token(
            "github-pat",
            &["hp_"],
            r"(?-u:\b)ghp_([A-Za-z0-9]{36,})(?-u:\b)",
        )
    },
    Shape {
        check: Check::Followed(Class::Alnum, 36),
        ..token(
            "github-oauth",
            &["ho_"],
            r"(?-u:\b)gho_([A-Za-z0-9]{36,})(?-u:\b)",
        )
    },
    Shape {
        check: Check::Followed(Class::Alnum, 36),
        ..token(
            "github-user-to-server",
            &["ghu_"],
            r"(?-u:\b)ghu_([A-Za-z0-9]{36,})(?-u:\b)",
        )
    },
    Shape {
        check: Check::Followed(Class::Alnum, 36),
        ..token(
            "github-server-to-server",
            &["ghs_"],
            r"(?-u:\b)ghs_([A-Za-z0-9]{36,})(?-u:\b)",
        )
    },
    Shape {
        check: Check::Followed(Class::Alnum, 36),
        ..token(
            "github-refresh",
            &["ghr_"],
            r"(?-u:\b)ghr_([A-Za-z0-9]{36,})(?-u:\b)",
        )
    },
    token(
        "github-fine-grained-pat",
        &["_pat_"],
        r"(?-u:\b)github_pat_([A-Za-z0-9_]{50,})",
    ),
    // OpenAI, Anthropic, OpenRouter: all `sk-`; the generic OpenAI row wants 32+ letters and
    // digits with no dash, so `sk-learn` or a kebab-case name never match.
    Shape {
        check: Check::StartsWith("sk-ant-"),
        ..token(
            "anthropic",
            &["sk-"],
            r"(?-u:\b)sk-ant-([A-Za-z0-9_-]{20,})",
        )
    },
    Shape {
        check: Check::StartsWithAny(&["sk-proj-", "sk-svcacct-", "sk-admin-"]),
        ..token(
            "openai-project",
            &["sk-"],
            r"(?-u:\b)sk-(?:proj|svcacct|admin)-([A-Za-z0-9_-]{20,})",
        )
    },
    Shape {
        check: Check::StartsWith("sk-or-v1-"),
        ..token(
            "openrouter",
            &["sk-"],
            r"(?-u:\b)sk-or-v1-([0-9a-f]{64})(?-u:\b)",
        )
    },
    Shape {
        check: Check::Followed(Class::Alnum, 32),
        ..token("openai", &["sk-"], r"(?-u:\b)sk-([A-Za-z0-9]{32,})(?-u:\b)")
    },
    Shape {
        check: Check::Followed(Class::UpperDigit, 16),
        ..token(
            "aws-access-key-id",
            &["KIA", "SIA"],
            r"(?-u:\b)(?:AKIA|ASIA)([A-Z0-9]{16})(?-u:\b)",
        )
    },
    token(
        "slack-token",
        &["xox"],
        r"(?-u:\b)xox[abprse]-([A-Za-z0-9-]{10,})",
    ),
    token(
        "slack-app-token",
        &["xap"],
        r"(?-u:\b)xapp-([A-Za-z0-9-]{20,})",
    ),
    token(
        "slack-webhook",
        &["ooks.s"],
        r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/-]{20,})",
    ),
    token(
        "discord-webhook",
        &["ooks/"],
        r"discord(?:app)?\.com/api/webhooks/([0-9]{5,}/[A-Za-z0-9_-]{20,})",
    ),
    token(
        "stripe-secret-key",
        &["_live_", "k_test_"],
        r"(?-u:\b)sk_(?:live|test)_([A-Za-z0-9]{16,})",
    ),
    token(
        "stripe-restricted-key",
        &["_live_", "k_test_"],
        r"(?-u:\b)rk_(?:live|test)_([A-Za-z0-9]{16,})",
    ),
    token(
        "stripe-webhook-secret",
        &["ec_"],
        r"(?-u:\b)whsec_([A-Za-z0-9+/=]{24,})",
    ),
    token(
        "google-api-key",
        &["AIza"],
        r"(?-u:\b)AIza([A-Za-z0-9_-]{35})",
    ),
    token(
        "google-oauth-client-secret",
        &["SPX-"],
        r"(?-u:\b)GOCSPX-([A-Za-z0-9_-]{24,})",
    ),
    token(
        "google-oauth-access-token",
        &["ya29."],
        r"(?-u:\b)ya29\.([A-Za-z0-9_-]{20,})",
    ),
    token(
        "gitlab-pat",
        &["glpat-"],
        r"(?-u:\b)glpat-([A-Za-z0-9_-]{20,})",
    ),
    token("npm", &["pm_"], r"(?-u:\b)npm_([A-Za-z0-9]{36})(?-u:\b)"),
    token(
        "pypi",
        &["ypi-"],
        r"(?-u:\b)pypi-(AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,})",
    ),
    token(
        "hugging-face",
        &["hf_"],
        r"(?-u:\b)hf_([A-Za-z0-9]{34,})(?-u:\b)",
    ),
    token(
        "sendgrid",
        &["SG."],
        r"(?-u:\b)SG\.([A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})",
    ),
    // A JWT: base64url JSON header and payload (both start `eyJ`, i.e. `{"`), then a signature.
    Shape {
        check: Check::Followed(Class::Base64Url, 8),
        ..token(
            "jwt",
            &["eyJ"],
            r"(?-u:\b)eyJ([A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)",
        )
    },
    Shape {
        check: Check::Preceded("sk."),
        ..token(
            "mapbox",
            &["eyJ"],
            r"(?-u:\b)sk\.(eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,})",
        )
    },
    Shape {
        check: Check::Preceded("ops_"),
        ..token(
            "1password-service-account",
            &["eyJ"],
            r"(?-u:\b)ops_(eyJ[A-Za-z0-9+/=_-]{100,})",
        )
    },
    Shape {
        check: Check::Preceded("glc_"),
        ..token(
            "grafana-cloud",
            &["eyJ"],
            r"(?-u:\b)glc_(eyJ[A-Za-z0-9+/=_-]{30,})",
        )
    },
    token(
        "grafana-service-account",
        &["glsa_"],
        r"(?-u:\b)glsa_([A-Za-z0-9]{32}_[A-Fa-f0-9]{8})(?-u:\b)",
    ),
    token(
        "digitalocean",
        &["_v1_"],
        r"(?-u:\b)do[opr]_v1_([a-f0-9]{64})(?-u:\b)",
    ),
    token(
        "shopify",
        &["shp"],
        r"(?-u:\b)shp(?:at|ca|pa|ss)_([a-fA-F0-9]{32})(?-u:\b)",
    ),
    Shape {
        check: Check::StartsWith("key-"),
        // Only after a blank, quote, `=` or `:`: `cache-key-<md5>` is not a Mailgun key.
        ..token(
            "mailgun",
            &["key"],
            r#"(?:^|[\t-\r "'=:])key-([0-9a-f]{32})(?-u:\b)"#,
        )
    },
    token(
        "databricks",
        &["dapi"],
        r"(?-u:\b)dapi([a-f0-9]{32}(?:-[0-9]+)?)(?-u:\b)",
    ),
    token(
        "doppler",
        &["dp."],
        r"(?-u:\b)dp\.(?:pt|st|sa|ct|scim|audit)\.([A-Za-z0-9]{40,44})(?-u:\b)",
    ),
    token(
        "linear",
        &["n_api_"],
        r"(?-u:\b)lin_api_([A-Za-z0-9]{40})(?-u:\b)",
    ),
    token(
        "sentry",
        &["sntry"],
        r"(?-u:\b)sntry[su]_([A-Za-z0-9+/=_-]{40,})",
    ),
    token(
        "atlassian",
        &["ATATT3"],
        r"(?-u:\b)ATATT3([A-Za-z0-9_=-]{100,})",
    ),
    token(
        "telegram-bot",
        &[":AA"],
        r"(?-u:\b)[0-9]{8,10}:(AA[A-Za-z0-9_-]{33})",
    ),
    token(
        "square",
        &["sq0", "EAAA"],
        r"(?-u:\b)(?:sq0atp-|sq0csp-|EAAA)([A-Za-z0-9_-]{22,})",
    ),
    token(
        "planetscale",
        &["cale_"],
        r"(?-u:\b)pscale_(?:tkn|pw|oauth)_([A-Za-z0-9=._-]{32,})",
    ),
    token("heroku", &["HRKU-"], r"(?-u:\b)HRKU-(AA[A-Za-z0-9_-]{58})"),
    token("groq", &["gsk_"], r"(?-u:\b)gsk_([A-Za-z0-9]{48,})(?-u:\b)"),
    token(
        "replicate",
        &["r8_"],
        r"(?-u:\b)r8_([A-Za-z0-9]{36,})(?-u:\b)",
    ),
    token("xai", &["ai-"], r"(?-u:\b)xai-([A-Za-z0-9]{64,})(?-u:\b)"),
    token(
        "tailscale",
        &["tskey-"],
        r"(?-u:\b)tskey-(?:auth|api|client|scim|webhook)-([A-Za-z0-9]+-[A-Za-z0-9]{16,})",
    ),
    token(
        "docker-hub-pat",
        &["_pat_"],
        r"(?-u:\b)dckr_pat_([A-Za-z0-9_-]{27,})",
    ),
    token(
        "hashicorp-vault",
        &["hvs."],
        r"(?-u:\b)hvs\.([A-Za-z0-9_-]{24,})",
    ),
    // Twilio API key SIDs: `SK` and exactly 32 hex digits as a word of their own. Twilio issues
    // lower case; upper case is accepted too, since the prefix, the length and the word
    // boundaries already make the shape precise. The account SID (`AC…`) is an identifier and
    // the auth token is bare hex: neither is a shape.
    Shape {
        check: Check::Followed(Class::Hex, 32),
        ..token(
            "twilio-api-key",
            &["SK"],
            r"(?-u:\b)SK([0-9a-fA-F]{32})(?-u:\b)",
        )
    },
    token(
        "age-secret-key",
        &["ECRET"],
        r"(?-u:\b)AGE-SECRET-KEY-1([QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})",
    ),
    // Collie's own device tokens: `collie_` and 43 base64url characters (256 bits), no more.
    Shape {
        check: Check::Followed(Class::Base64Url, 43),
        ..token(
            "collie-device-token",
            &["ie_"],
            r"(?-u:\b)collie_([A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
        )
    },
    Shape {
        check: Check::UrlUserinfo,
        value: Value::Password,
        ..token("url-password", &["://"], URL_PASSWORD)
    },
    Shape {
        check: Check::Assignment,
        value: Value::Assignment,
        ..token("secret-assignment", SECRET_WORD_STEMS, SECRET_ASSIGNMENT)
    },
    Shape {
        keep: 0,
        multiline: true,
        check: Check::StartsWithAny(&["KEY-----", "KEY BLOCK-----"]),
        ..token("private-key-block", &["KEY"], PEM_BLOCK)
    },
];

/// The secret words an assignment key may end with, lowercased, for [`Check::Assignment`]
/// (a superset of what [`SECRET_ASSIGNMENT`] accepts, compared case-insensitively).
pub(crate) const SECRET_WORD_ENDINGS: &[&str] = &[
    "token",
    "password",
    "passwd",
    "passphrase",
    "pass",
    "pwd",
    "secret",
    "credential",
    "credentials",
    "auth",
    "bearer",
    "authorization",
    "key",
];

/// A byte of an assignment's key: `[A-Za-z0-9_.-]`.
pub(crate) fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// The shapes as `(name, regex)`, in table order, for tools that want to run them without the
/// masker (the benchmark's naive baseline runs each over the whole text in turn).
///
/// In each regex the first capture group that took part in a match is the secret.
pub fn shape_patterns() -> Vec<(&'static str, &'static str)> {
    SHAPES.iter().map(|s| (s.name, s.pattern)).collect()
}
