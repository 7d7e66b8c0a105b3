//! `AppError`: the one way an operation fails. Its `Display` is the exact string of SPEC §3.2 and
//! [`AppError::status`] the status code an HTTP answer carries; it never carries internals to a
//! phone (those go to the log, and to the machine's own user on the control socket).

use collie_actors::slot::CallError;
use collie_actors::tools::ToolError;

/// An error answer of the phone API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// 403: no token, unknown token, revoked token (also a write presenting the local secret).
    #[error("device not paired")]
    NotPaired,
    /// 403: the device's expiry has passed.
    #[error("device expired")]
    Expired,
    /// 403: the device's tier is below the route's.
    #[error("insufficient tier")]
    InsufficientTier,
    /// 403: pairing with a wrong, used, expired or invalidated code.
    #[error("invalid or expired code")]
    InvalidCode,
    /// 409: pairing with a label a live device holds.
    #[error("label in use")]
    LabelInUse,
    /// 429 with `Retry-After`.
    #[error("too many attempts")]
    TooManyAttempts {
        /// Seconds to wait.
        retry_after: u64,
    },
    /// 503: the device store cannot be read or written.
    #[error("pairing unavailable")]
    PairingUnavailable,
    /// 503: the audit line of a write could not be appended.
    #[error("audit unavailable")]
    AuditUnavailable,
    /// 503: a pane or session cap is reached.
    #[error("resource limit")]
    ResourceLimit,
    /// 503: the actor serving the request failed mid-request.
    #[error("restarting, try again")]
    Restarting,
    /// 503 on a deputy (SPEC §13): a lead's device while the lead is reachable; the answer names
    /// the lead's URL (`lead`), where the phone belongs.
    #[error("standby: the lead is up")]
    Standby(String),
    /// 503 on a deputy standing in: devices are paired, revoked and changed on the lead only.
    #[error("standby: devices are changed on the lead")]
    StandbyDevices,
    /// 502: the member is offline or did not answer in time (SPEC §8).
    #[error("member unreachable")]
    MemberUnreachable,
    /// 502: the member's answer could not be decoded, so it is not relayed (SPEC §6).
    #[error("member response unreadable")]
    MemberUnreadable,
    /// 501: the member did not declare the capability the request needs (SPEC §8).
    #[error("capability missing")]
    CapabilityMissing,
    /// 404.
    #[error("no such machine")]
    NoSuchMachine,
    /// 404.
    #[error("no such pane")]
    NoSuchPane,
    /// The card's `shown` hash is not the one the phone drew (SPEC §10.1).
    #[error("card changed")]
    CardChanged,
    /// The card is no longer waiting (SPEC §10.1).
    #[error("card closed")]
    CardClosed,
    /// A screen prompt's lines are no longer on the screen (SPEC §10.2); nothing was typed.
    #[error("The screen changed before that could be sent")]
    ScreenChanged,
    /// 404: the machine's walky log does not hold the message id (SPEC §9: a header an agent
    /// merely printed gets no card).
    #[error("no log entry on this machine")]
    NoLogEntry,
    /// 404: no durable agent of that name is attached.
    #[error("no such durable agent")]
    NoSuchAgent,
    /// The durable agent refused a write (its reason, in Collie's words).
    #[error("{0}")]
    DurableRefused(&'static str),
    /// The durable agent could not be reached or answered badly.
    #[error("durable agent unreachable")]
    DurableUnreachable,
    /// 404: the sent log holds no line of that number.
    #[error("no such line")]
    NoSuchLine,
    /// 409: a starter's executable is not the file `collie apply` pinned (its hash, checked just
    /// before the spawn, differs; SPEC §12).
    #[error("starter changed")]
    StarterChanged,
    /// 409: a starter that skips the agent's permission prompts, not yet confirmed by this device
    /// (SPEC §12: each device confirms it once).
    #[error("confirm no prompts")]
    ConfirmNoPrompts,
    /// 404 for an unknown starter row id (decision 0041).
    /// The transcriber's program or model is not the one applied (SPEC §16).
    #[error("speech engine changed")]
    SpeechChanged,
    /// No `[speech]` is applied here.
    #[error("no transcriber")]
    NoTranscriber,
    /// The transcriber failed or printed more than it may (its detail is in the bridge's log).
    #[error("speech engine failed")]
    SpeechFailed,
    /// The transcriber ran past its time limit and was killed.
    #[error("speech engine timed out")]
    SpeechTimedOut,
    #[error("no such starter row")]
    NoSuchRow,
    /// 404 for an unknown device label.
    #[error("no such device")]
    NoSuchDevice,
    /// 404 for an unknown route.
    #[error("not found")]
    NotFound,
    /// 400 with a message that says what to change (`invalid label`, `unknown key: X`, …).
    #[error("{0}")]
    BadRequest(String),
    /// 403: an identity gate (SPEC §14) refused the request; the answer names the gate.
    #[error("identity required")]
    IdentityRequired {
        /// The refusing gate's name (`tailscale`, `device-header`, …).
        gate: &'static str,
    },
    /// 403: Host or Origin not allowed.
    #[error("{0}")]
    Forbidden(&'static str),
    /// 500: something inside failed; the details are logged, not sent.
    #[error("internal error")]
    Internal,
    /// 500 like [`AppError::Internal`], carrying the detail for the bridge's log and for the
    /// local CLI (the machine's own user); a phone gets only `internal error`.
    #[error("internal error")]
    Backend(String),
    /// 413: the request body is over the limit.
    #[error("request body too large: at most {0}")]
    BodyTooLarge(&'static str),
    /// 408: the request body did not arrive in time.
    #[error("request body too slow")]
    BodyTimeout,
    /// 405: the route exists, the method does not.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 404: the tool registry has no tool of that name (SPEC §11).
    #[error("no such tool")]
    NoSuchTool,
    /// A tool's refusal in its own words (SPEC §11): 400, 403, 404, 409, 503 or 500.
    #[error(transparent)]
    Tool(ToolError),
}

impl AppError {
    /// The HTTP status of this error (SPEC §3.2).
    pub fn status(&self) -> u16 {
        use AppError::*;
        match self {
            NotPaired | Expired | InsufficientTier | InvalidCode | Forbidden(_) => 403,
            IdentityRequired { .. } => 403,
            LabelInUse | CardChanged | ScreenChanged | DurableRefused(_) | StarterChanged
            | ConfirmNoPrompts | SpeechChanged => 409,
            CardClosed => 410,
            TooManyAttempts { .. } => 429,
            PairingUnavailable | AuditUnavailable | ResourceLimit | Restarting => 503,
            Standby(_) | StandbyDevices => 503,
            NoSuchMachine | NoSuchPane | NoSuchAgent | NoSuchDevice | NoLogEntry | NoSuchLine
            | NoSuchRow | NotFound | NoTranscriber => 404,
            MemberUnreachable | MemberUnreadable | DurableUnreachable | SpeechFailed => 502,
            SpeechTimedOut => 504,
            CapabilityMissing => 501,
            BadRequest(_) => 400,
            Internal | Backend(_) => 500,
            BodyTooLarge(_) => 413,
            BodyTimeout => 408,
            MethodNotAllowed => 405,
            NoSuchTool => 404,
            Tool(e) => match e {
                ToolError::BadArgument(_) | ToolError::WrongKind(_) => 400,
                ToolError::OutsideWorkspace | ToolError::PathNotAllowed => 403,
                ToolError::NoSuchFile | ToolError::NoSuchSession | ToolError::NoSuchSearch => 404,
                ToolError::Conflict | ToolError::AlreadyExists => 409,
                ToolError::ResourceLimit(_) => 503,
                _ => 500,
            },
        }
    }

    /// The message for the machine's own user (the control socket): the detail of a backend
    /// failure, otherwise the same string a phone gets.
    pub fn for_local_user(&self) -> String {
        match self {
            AppError::Backend(detail) => detail.clone(),
            other => other.to_string(),
        }
    }

    /// A backend failure: its detail is logged now and goes no further than the local CLI.
    pub fn backend(what: &str, detail: impl std::fmt::Display) -> AppError {
        let detail = format!("{what}: {detail}");
        tracing::error!(%detail, "request failed inside the bridge");
        AppError::Backend(detail)
    }
}

impl From<CallError> for AppError {
    fn from(_: CallError) -> Self {
        AppError::Restarting
    }
}
