//! The bridge's operations, shared by the phone API and the control socket.
//!
//! Each function validates its input, talks to the actors through [`App`], audits writes before they
//! happen (fail closed: no audit line, no write) and returns an [`AppError`] whose message is the
//! SPEC §3.2 string. HTTP handlers and the control server are thin adapters around these.

use std::net::IpAddr;
use std::time::Duration;

use collie_actors::audit::{typed_text_detail, AuditEventKind, AuditRecord};
use collie_actors::crew_link::{CrewError, CrewMsg};
use collie_actors::pairing::actor::{ClaimedDevice, NewCode, PairingError};
use collie_actors::pairing::duration::INVITE_LIMIT;
use collie_actors::pairing::{Device, Dur, PairingMsg, Tier};
use collie_actors::panes::actor::{PaneError, PaneInfo, PaneSnapshot};
use collie_actors::panes::keys::{self, NamedKey};
use collie_actors::panes::PanesMsg;
use serde_json::{json, Value};

use crate::app::AppError;
use crate::app::{request_id, App};
use crate::control::protocol::{Reply, Request};

/// Who asks for a write, for audit lines.
#[derive(Debug, Clone)]
pub struct Actor {
    /// The device label, or `None` for the local CLI.
    pub device: Option<String>,
    /// The request id shared by all lines of this request.
    pub request_id: String,
    /// On a member: the lead that relayed the request (the device is the lead's phone).
    pub relayed_by: Option<String>,
}

impl Actor {
    /// The CLI on this machine.
    pub fn cli() -> Actor {
        Actor {
            device: None,
            request_id: request_id(),
            relayed_by: None,
        }
    }

    /// The audit line of a write by this actor on this machine.
    pub fn record(&self, ctx: &App, event: AuditEventKind) -> AuditRecord {
        let rec = AuditRecord {
            event,
            machine: ctx.machine.get(),
            session: None,
            device: self.device.clone(),
            request_id: Some(self.request_id.clone()),
            detail: serde_json::Map::new(),
        };
        match (&self.relayed_by, &self.device) {
            (Some(lead), _) => rec
                .with_detail("via", "relay")
                .with_detail("lead", lead.clone()),
            (None, Some(_)) => rec.with_detail("via", "phone"),
            (None, None) => rec.with_detail("via", "cli"),
        }
    }
}

impl From<PairingError> for AppError {
    fn from(e: PairingError) -> Self {
        match e {
            PairingError::InvalidCode => AppError::InvalidCode,
            PairingError::TooManyAttempts { retry_after } => {
                AppError::TooManyAttempts { retry_after }
            }
            PairingError::LabelInUse => AppError::LabelInUse,
            PairingError::InvalidLabel => AppError::BadRequest("invalid label".into()),
            PairingError::NoSuchDevice => AppError::NoSuchDevice,
            PairingError::AuditUnavailable => AppError::AuditUnavailable,
            PairingError::Store(_) | PairingError::Unavailable => AppError::PairingUnavailable,
            _ => AppError::Internal,
        }
    }
}

impl From<PaneError> for AppError {
    fn from(e: PaneError) -> Self {
        match e {
            PaneError::NoSuchPane => AppError::NoSuchPane,
            PaneError::ResourceLimit(_) => AppError::ResourceLimit,
            PaneError::BadInput(m) => AppError::BadRequest(m),
            // tmux's stderr, a pty that would not spawn: not the caller's fault, and not for a
            // phone to read (SPEC §3.2).
            other => AppError::backend("pane operation failed", other),
        }
    }
}

/// Checks that `m` names this bridge (`local` or its own name).
pub fn check_machine(ctx: &App, m: &str) -> Result<(), AppError> {
    if m == "local" || ctx.machine.is(m) {
        Ok(())
    } else {
        Err(AppError::NoSuchMachine)
    }
}

/// Splits `machine/pane` (the CLI accepts both forms) and checks the machine.
fn local_pane(ctx: &App, pane: &str) -> Result<String, AppError> {
    let pane = pane.split('#').next().unwrap_or(pane);
    match pane.split_once('/') {
        Some((m, p)) => {
            check_machine(ctx, m)?;
            Ok(p.to_string())
        }
        None => Ok(pane.to_string()),
    }
}

// ---- pairing and devices ----

/// A new pairing code.
pub async fn new_code(ctx: &App, tier: &str, expires: Option<&str>) -> Result<NewCode, AppError> {
    let tier = Tier::parse(tier).map_err(|e| AppError::BadRequest(e.to_string()))?;
    let expires = expires
        .map(Dur::parse)
        .transpose()
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    Ok(ctx
        .pairing
        .call(|r| PairingMsg::NewCode {
            tier,
            expires,
            reply: r,
        })
        .await?)
}

/// Claims a code.
pub async fn claim(
    ctx: &App,
    code: String,
    label: String,
    source: IpAddr,
) -> Result<ClaimedDevice, AppError> {
    Ok(ctx
        .pairing
        .call(|r| PairingMsg::Claim {
            code,
            label,
            source,
            reply: r,
        })
        .await??)
}

/// All devices.
pub async fn devices(ctx: &App) -> Result<Vec<Device>, AppError> {
    Ok(ctx.pairing.call(PairingMsg::List).await??)
}

/// JSON of one device for `/api/devices` and `collie devices list --json`.
pub fn device_json(d: &Device, current: Option<&str>) -> Value {
    json!({
        "label": d.label.as_str(),
        "tier": d.tier.as_str(),
        "created_at": rfc3339(Some(d.created_at)),
        "last_seen": rfc3339(d.last_seen),
        "expires_at": rfc3339(d.expires_at),
        "current": current == Some(d.label.as_str()),
    })
}

/// RFC 3339 or null.
pub fn rfc3339(t: Option<time::OffsetDateTime>) -> Value {
    t.and_then(|t| {
        t.format(&time::format_description::well_known::Rfc3339)
            .ok()
    })
    .map_or(Value::Null, Value::String)
}

/// Revokes a device.
pub async fn revoke(ctx: &App, label: String, by: &Actor) -> Result<Device, AppError> {
    let by = by.device.clone();
    Ok(ctx
        .pairing
        .call(|r| PairingMsg::Revoke {
            label,
            by,
            reply: r,
        })
        .await??)
}

// ---- panes ----

/// All panes of this machine.
pub async fn panes(ctx: &App) -> Result<Vec<PaneInfo>, AppError> {
    Ok(ctx.panes.call(PanesMsg::List).await?)
}

/// One pane's masked snapshot.
pub async fn snapshot(
    ctx: &App,
    pane: String,
    scrollback: usize,
) -> Result<PaneSnapshot, AppError> {
    Ok(ctx
        .panes
        .call(|r| PanesMsg::Snapshot {
            pane,
            scrollback,
            reply: r,
        })
        .await??)
}

/// Types `text` then presses `keys` — audited first; refused when the audit line cannot be written.
pub async fn input(
    ctx: &App,
    actor: &Actor,
    pane: String,
    text: String,
    key_names: Vec<String>,
) -> Result<(), AppError> {
    let keys = validate_input(&text, &key_names)?;
    let info = pane_info(ctx, &pane).await?;
    let rec = input_record(
        actor.record(ctx, AuditEventKind::PaneInput),
        &info.pane,
        &text,
        &keys,
    );
    ctx.audit(rec).await?;
    Ok(ctx
        .panes
        .call(|r| PanesMsg::Input {
            pane,
            text,
            keys,
            reply: r,
        })
        .await??)
}

/// Checks input the way every machine does (SPEC §3.2): text at most 64 KiB, keys from the fixed
/// list, something to send. The lead checks before relaying, so a bad request costs no round trip.
pub fn validate_input(text: &str, key_names: &[String]) -> Result<Vec<NamedKey>, AppError> {
    keys::validate_text(text).map_err(|e| AppError::BadRequest(e.to_string()))?;
    if key_names.len() > 256 {
        return Err(AppError::BadRequest("too many keys (at most 256)".into()));
    }
    let keys: Vec<NamedKey> = key_names
        .iter()
        .map(|k| NamedKey::parse(k))
        .collect::<Result<_, _>>()
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    if text.is_empty() && keys.is_empty() {
        return Err(AppError::BadRequest(
            "nothing to send: give text or keys".into(),
        ));
    }
    Ok(keys)
}

/// The details of a `pane.input` line: typed text only as a preview (SPEC §7), key names.
pub fn input_record(rec: AuditRecord, pane: &str, text: &str, keys: &[NamedKey]) -> AuditRecord {
    let mut rec = rec.with_detail("pane", pane.to_owned());
    if !text.is_empty() {
        rec = rec.with_detail("text", typed_text_detail(text));
    }
    if !keys.is_empty() {
        rec = rec.with_detail(
            "keys",
            Value::Array(keys.iter().map(|k| Value::from(k.as_str())).collect()),
        );
    }
    rec
}

/// One pane of this machine (without listing them all).
pub async fn pane_info(ctx: &App, pane: &str) -> Result<PaneInfo, AppError> {
    let pane = pane.to_owned();
    Ok(ctx
        .panes
        .call(|reply| PanesMsg::Info { pane, reply })
        .await??)
}

/// Starts a hosted pane. `pane.create` is written once the pane exists (SPEC §7); if that line
/// cannot be written the pane is closed again and the create refused. A refusal at a cap is
/// `resource.denied`, naming the device and the request.
pub async fn create(
    ctx: &App,
    actor: &Actor,
    name: Option<String>,
    command: Vec<String>,
) -> Result<PaneInfo, AppError> {
    if let Some(n) = &name {
        validate_pane_name(n)?;
    }
    let first_word = command.first().cloned();
    let created = ctx
        .panes
        .call(|r| PanesMsg::Create {
            name: name.clone(),
            command,
            reply: r,
        })
        .await?;
    let info = match created {
        Ok(info) => info,
        Err(PaneError::ResourceLimit(cap)) => {
            let rec = actor
                .record(ctx, AuditEventKind::ResourceDenied)
                .with_detail("reason", cap);
            // Refused either way; an unwritable log only loses the line, never lets it through.
            let _ = ctx.audit(rec).await;
            return Err(AppError::ResourceLimit);
        }
        Err(e) => return Err(e.into()),
    };
    let rec = create_record(ctx, actor, &info.pane, name, ("command", first_word));
    if let Err(e) = ctx.audit(rec).await {
        let pane = info.pane.clone();
        let _ = ctx.panes.call(|r| PanesMsg::Close { pane, reply: r }).await;
        return Err(e);
    }
    Ok(info)
}

/// The `pane.create` line of pane `pane` made by `actor` (on a member, `machine` is set by the
/// caller): its name, and what it runs — `("command", first word)` here, `("starter", name)` when
/// the lead relays.
pub fn create_record(
    ctx: &App,
    actor: &Actor,
    pane: &str,
    name: Option<String>,
    (runs_key, runs): (&str, Option<String>),
) -> AuditRecord {
    let mut rec = actor
        .record(ctx, AuditEventKind::PaneCreate)
        .with_detail("pane", pane.to_owned());
    if let Some(n) = name {
        rec = rec.with_detail("name", n);
    }
    if let Some(runs) = runs {
        rec = rec.with_detail(runs_key, runs);
    }
    rec
}

/// A pane name: 1-64 characters, no control characters.
pub fn validate_pane_name(n: &str) -> Result<(), AppError> {
    if n.is_empty() || n.chars().count() > 64 || n.chars().any(char::is_control) {
        return Err(AppError::BadRequest(
            "invalid name: 1-64 characters, no control characters".into(),
        ));
    }
    Ok(())
}

/// The audit event of renaming pane `id`: a tmux pane (`t<i>-<n>`) is named by its window, so
/// renaming it renames the tab (`tab.rename`); a hosted pane's name is its own (`pane.rename`).
/// The id says which, so the lead names a member's rename right without asking.
pub fn rename_event(id: &str) -> AuditEventKind {
    if id.starts_with('t') {
        AuditEventKind::TabRename
    } else {
        AuditEventKind::PaneRename
    }
}

/// Renames a pane — audited first.
pub async fn rename(ctx: &App, actor: &Actor, pane: String, name: String) -> Result<(), AppError> {
    validate_pane_name(&name)?;
    let info = pane_info(ctx, &pane).await?;
    ctx.audit(
        actor
            .record(ctx, rename_event(&info.pane))
            .with_detail("pane", info.pane.clone())
            .with_detail("name", name.clone()),
    )
    .await?;
    Ok(ctx
        .panes
        .call(|r| PanesMsg::Rename {
            pane,
            name,
            reply: r,
        })
        .await??)
}

/// Closes a pane — audited first.
pub async fn close(ctx: &App, actor: &Actor, pane: String) -> Result<(), AppError> {
    let info = pane_info(ctx, &pane).await?;
    ctx.audit(
        actor
            .record(ctx, AuditEventKind::PaneClose)
            .with_detail("pane", info.pane.clone()),
    )
    .await?;
    Ok(ctx
        .panes
        .call(|r| PanesMsg::Close { pane, reply: r })
        .await??)
}

// ---- the crew ----

/// How long an invite is valid unless `--expires` says otherwise (SPEC §8).
pub const INVITE_TTL: Duration = Duration::from_secs(600);

fn crew_error(e: CrewError) -> AppError {
    match e {
        CrewError::AuditUnavailable => AppError::AuditUnavailable,
        other => AppError::BadRequest(other.to_string()),
    }
}

/// Parses an invite's `--expires` with the one DUR grammar (SPEC §3.1), at most 7 days.
pub fn parse_invite_ttl(s: &str) -> Result<Duration, AppError> {
    Dur::parse_up_to(s, INVITE_LIMIT)
        .map(Dur::as_std)
        .map_err(|e| AppError::BadRequest(format!("--expires: {e}")))
}

// ---- the control socket ----

/// Answers one control-socket request.
pub async fn control(ctx: &App, req: Request) -> Reply {
    match control_inner(ctx, req).await {
        Ok(v) => Reply::ok(v),
        Err(e) => Reply::err(e.for_local_user()),
    }
}

async fn control_inner(ctx: &App, req: Request) -> Result<Value, AppError> {
    let cli = Actor::cli();
    match req {
        Request::Status => Ok(json!({
            "machine": ctx.machine.get(),
            "version": env!("CARGO_PKG_VERSION"),
            // Null while the device store cannot be read (doctor reports it).
            "devices": devices(ctx).await.ok().map(|d| d.len()),
            "masking": ctx.masker.is_enabled(),
            "audit_content": ctx.audit_content.as_str(),
        })),
        Request::AuditStatus => {
            let status = ctx
                .audit
                .call(collie_actors::audit::AuditMsg::Status)
                .await?;
            Ok(serde_json::to_value(status).unwrap_or_default())
        }
        Request::AuditAcknowledge { seq } => {
            let acknowledged = ctx
                .audit
                .call(|reply| collie_actors::audit::AuditMsg::Acknowledge {
                    seq,
                    by: "cli".to_owned(),
                    reply,
                })
                .await?;
            match acknowledged {
                Ok(record) => Ok(json!({ "acknowledged": record })),
                Err(collie_actors::audit::AuditError::NoSuchBreak(seq)) => {
                    Err(AppError::BadRequest(format!(
                        "no recorded break at seq {seq}: `collie audit verify` lists them"
                    )))
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot acknowledge an audit break");
                    Err(AppError::AuditUnavailable)
                }
            }
        }
        Request::Pair { tier, expires } => {
            let c = new_code(ctx, &tier, expires.as_deref()).await?;
            Ok(json!({
                "code": c.code,
                "code_expires_at": rfc3339(Some(c.expires_at)),
                "pair_url": format!("{}/#pair={}", ctx.public_url.trim_end_matches('/'), c.code.replace('-', "")),
            }))
        }
        Request::DevicesList => {
            let list: Vec<Value> = devices(ctx)
                .await?
                .iter()
                .map(|d| device_json(d, None))
                .collect();
            Ok(json!({ "devices": list }))
        }
        Request::DevicesRevoke { label } => {
            let d = revoke(ctx, label, &cli).await?;
            Ok(json!({ "message": format!("revoked {}", d.label.as_str()) }))
        }
        Request::DevicesSetExpiry { label, dur } => {
            let dur = Dur::parse(&dur).map_err(|e| AppError::BadRequest(e.to_string()))?;
            let d = ctx
                .pairing
                .call(|r| PairingMsg::SetExpiry {
                    label,
                    dur,
                    reply: r,
                })
                .await??;
            Ok(
                json!({ "message": format!("{} expires at {}", d.label.as_str(), rfc3339(d.expires_at)) }),
            )
        }
        Request::DevicesClearExpiry { label } => {
            let d = ctx
                .pairing
                .call(|r| PairingMsg::ClearExpiry { label, reply: r })
                .await??;
            Ok(json!({ "message": format!("{} no longer expires", d.label.as_str()) }))
        }
        Request::DevicesSetTier { label, tier } => {
            let tier = Tier::parse(&tier).map_err(|e| AppError::BadRequest(e.to_string()))?;
            let d = ctx
                .pairing
                .call(|r| PairingMsg::SetTier {
                    label,
                    tier,
                    by: None,
                    reply: r,
                })
                .await??;
            Ok(json!({ "message": format!("{} is now {}", d.label.as_str(), d.tier.as_str()) }))
        }
        Request::PanesList => Ok(json!({ "panes": panes(ctx).await? })),
        Request::PanesNew { name, command } => {
            Ok(serde_json::to_value(create(ctx, &cli, name, command).await?).unwrap_or_default())
        }
        Request::PanesRead { pane, scrollback } => {
            let pane = local_pane(ctx, &pane)?;
            Ok(
                serde_json::to_value(snapshot(ctx, pane, scrollback.min(10_000)).await?)
                    .unwrap_or_default(),
            )
        }
        Request::PanesSend { pane, text, enter } => {
            let pane = local_pane(ctx, &pane)?;
            let keys = if enter {
                vec!["Enter".to_string()]
            } else {
                vec![]
            };
            input(ctx, &cli, pane, text, keys).await?;
            Ok(Value::Null)
        }
        Request::PanesKeys { pane, keys } => {
            let pane = local_pane(ctx, &pane)?;
            input(ctx, &cli, pane, String::new(), keys).await?;
            Ok(Value::Null)
        }
        Request::PanesRename { pane, name } => {
            let pane = local_pane(ctx, &pane)?;
            rename(ctx, &cli, pane, name).await?;
            Ok(Value::Null)
        }
        Request::CrewInit => {
            let view = ctx.crew.call(CrewMsg::Init).await?.map_err(crew_error)?;
            Ok(serde_json::to_value(view).unwrap_or_default())
        }
        Request::CrewInvite { expires, address } => {
            let expires = match expires.as_deref() {
                None => INVITE_TTL,
                Some(s) => parse_invite_ttl(s)?,
            };
            let invite = ctx
                .crew
                .call(|reply| CrewMsg::Invite {
                    expires,
                    address,
                    reply,
                })
                .await?
                .map_err(crew_error)?;
            Ok(json!({ "invite": invite, "expires_in_secs": expires.as_secs() }))
        }
        Request::CrewJoin { invite, name } => {
            let view = ctx
                .crew
                .call(|reply| CrewMsg::Join {
                    invite,
                    name,
                    reply,
                })
                .await?
                .map_err(crew_error)?;
            Ok(serde_json::to_value(view).unwrap_or_default())
        }
        Request::CrewStatus => {
            Ok(serde_json::to_value(ctx.crew_view.load().as_ref()).unwrap_or_default())
        }
        Request::CrewRemove { name } => {
            ctx.crew
                .call(|reply| CrewMsg::Remove {
                    name: name.clone(),
                    reply,
                })
                .await?
                .map_err(crew_error)?;
            Ok(json!({ "message": format!("removed {name} from the crew") }))
        }
        Request::PanesClose { pane } => {
            let pane = local_pane(ctx, &pane)?;
            close(ctx, &cli, pane).await?;
            Ok(Value::Null)
        }
        Request::WalkySend {
            from,
            to,
            body,
            wait,
        } => crate::walky::send::send(ctx, &from, &to, body, wait).await,
        Request::WalkyInbox { from, id: None } => crate::walky::inbox::list(ctx, &from).await,
        Request::WalkyInbox { from, id: Some(id) } => {
            crate::walky::inbox::get(ctx, &from, &id).await
        }
        Request::WalkyWho => crate::walky::inbox::who(ctx).await,
        Request::WalkyLog => crate::walky::inbox::log(ctx).await,
        #[cfg(feature = "fault-injection")]
        Request::TestReplayWalky { to } => crate::walky::send::replay_last(ctx, &to).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invite_ttl_is_a_dur_of_at_most_seven_days() {
        assert_eq!(
            parse_invite_ttl("30m").ok(),
            Some(Duration::from_secs(1800))
        );
        assert_eq!(parse_invite_ttl("10m").ok(), Some(INVITE_TTL));
        assert_eq!(
            parse_invite_ttl("7d").ok(),
            Some(Duration::from_secs(7 * 86_400))
        );
        for bad in [
            "",
            "m",
            "0m",
            "8d",
            "2w",
            "30s",
            "-1h",
            "1.5h",
            "10 m",
            "10x",
            "99999999999999999999d",
        ] {
            assert!(parse_invite_ttl(bad).is_err(), "{bad:?}");
        }
        let err = parse_invite_ttl("8d").expect_err("too long").to_string();
        assert_eq!(err, "--expires: duration \"8d\" is too long: at most 7d");
    }
}
