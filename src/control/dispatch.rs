//! The control socket's dispatcher: each request of the CLI, decoded, becomes one call of the
//! application as the CLI on this machine ([`Caller::cli`]); the answer is encoded as the reply's
//! data. Failures carry the detail a backend gave (the machine's own user may read it).

use serde::Serialize;
use serde_json::Value;

use super::protocol::{Reply, Request};
use super::replies::{
    Acknowledged, Crew, Devices, Invite, Message, PairCode, Pane, Panes, Screen, StarterRows,
    Witnessed,
};
use crate::app::create::CreateAsk;
use crate::app::pane_writes::{PaneClose, PaneInput, PaneRename};
use crate::app::panes::{split_address, ReadScreen};
use crate::app::sent::SentDiscard;
use crate::app::walky;
use crate::app::windows::ListSessions;
use crate::app::{App, AppError, Caller};

/// Answers one control-socket request from process `peer` (its pid, as the socket reports it).
pub async fn dispatch(app: &App, req: Request, peer: Option<u32>) -> Reply {
    match answer(app, req, peer).await {
        Ok(v) => Reply::ok(v),
        Err(e) => Reply::err(e.for_local_user()),
    }
}

fn data(v: impl Serialize) -> Result<Value, AppError> {
    serde_json::to_value(v).map_err(|e| AppError::backend("encoding a reply", e))
}

async fn answer(app: &App, req: Request, peer: Option<u32>) -> Result<Value, AppError> {
    let cli = Caller::cli();
    match req {
        Request::Status => data(app.status().await),
        Request::AuditStatus => data(app.audit_status().await?),
        Request::AuditWitnessed => {
            let (heads, status) = app.audit_witnessed().await?;
            data(Witnessed { heads, status })
        }
        Request::AuditAcknowledge { seq } => {
            data(Acknowledged::from(app.acknowledge_break(seq).await?))
        }
        Request::Pair { tier, expires } => {
            let c = app.new_code(&tier, expires.as_deref(), peer).await?;
            let pair_url = app.pair_url(&c.code);
            data(PairCode {
                code: c.code,
                code_expires_at: collie_actors::rfc3339::format(c.expires_at),
                pair_url,
            })
        }
        Request::StarterRows => data(StarterRows {
            rows: app.rows_shown().await?,
        }),
        Request::DevicesList => data(Devices {
            devices: app.devices(&cli).await?,
        }),
        Request::DevicesRevoke { label } => {
            let d = app.revoke(&cli, label).await?;
            data(Message::new(format!("revoked {}", d.label.as_str())))
        }
        Request::DevicesSetExpiry { label, dur } => {
            let d = app.set_expiry(label, &dur).await?;
            let at = d
                .expires_at
                .and_then(collie_actors::rfc3339::format)
                .unwrap_or_else(|| "never".into());
            data(Message::new(format!(
                "{} expires at {at:?}",
                d.label.as_str()
            )))
        }
        Request::DevicesClearExpiry { label } => {
            let d = app.clear_expiry(label).await?;
            data(Message::new(format!(
                "{} no longer expires",
                d.label.as_str()
            )))
        }
        Request::DevicesSetTier { label, tier } => {
            let d = app.set_tier(label, &tier).await?;
            data(Message::new(format!(
                "{} is now {}",
                d.label.as_str(),
                d.tier.as_str()
            )))
        }
        Request::PanesList => data(Panes::of(app.local_panes().await?)),
        Request::PanesNew {
            name,
            command,
            folder,
            session,
        } => data(Pane::from(
            app.new_pane(
                &cli,
                CreateAsk {
                    machine: "local".to_owned(),
                    name,
                    command,
                    folder,
                    session,
                    ..CreateAsk::default()
                },
            )
            .await?,
        )),
        Request::PanesSessions => data(app.run(&cli, "local", ListSessions).await?),
        Request::PanesRead { pane, scrollback } => {
            let (machine, pane) = split_address(&pane);
            let op = ReadScreen {
                pane: pane.to_owned(),
                scrollback,
            };
            data(Screen::from(app.run(&cli, machine, op).await?.snapshot))
        }
        Request::PanesSend { pane, text, enter } => {
            let (machine, pane) = split_address(&pane);
            let keys = if enter {
                vec!["Enter".to_owned()]
            } else {
                vec![]
            };
            let op = PaneInput {
                pane: pane.to_owned(),
                text,
                keys,
            };
            app.run(&cli, machine, op).await?;
            Ok(Value::Null)
        }
        Request::PanesKeys { pane, keys } => {
            let (machine, pane) = split_address(&pane);
            let op = PaneInput {
                pane: pane.to_owned(),
                text: String::new(),
                keys,
            };
            app.run(&cli, machine, op).await?;
            Ok(Value::Null)
        }
        Request::PanesRename { pane, name } => {
            let (machine, pane) = split_address(&pane);
            let op = PaneRename {
                pane: pane.to_owned(),
                name,
            };
            app.run(&cli, machine, op).await?;
            Ok(Value::Null)
        }
        Request::PanesClose { pane } => {
            let (machine, pane) = split_address(&pane);
            let pane = pane.to_owned();
            app.run(&cli, machine, PaneClose { pane }).await?;
            Ok(Value::Null)
        }
        Request::CrewInit => data(Crew::from(app.crew_init().await?)),
        Request::CrewInvite { expires, address } => {
            let (invite, expires) = app.crew_invite(expires.as_deref(), address).await?;
            data(Invite {
                invite,
                expires_in_secs: expires.as_secs(),
            })
        }
        Request::CrewJoin { invite, name } => data(Crew::from(app.crew_join(invite, name).await?)),
        Request::CrewStatus => {
            let mut crew = Crew::from(app.crew_status());
            crew.deputy = app.deputy_status();
            data(crew)
        }
        Request::CrewDeputy { name } => {
            let message = match &name {
                Some(n) => format!("{n} is the crew's deputy"),
                None => "the crew has no deputy".to_owned(),
            };
            app.crew_deputy(name).await?;
            data(Message::new(message))
        }
        Request::CrewRemove { name } => {
            app.crew_remove(name.clone()).await?;
            data(Message::new(format!("removed {name} from the crew")))
        }
        Request::WalkySend {
            from,
            to,
            body,
            wait,
        } => data(walky::send::send(app, &from, peer, &to, body, wait).await?),
        Request::WalkyInbox { from, id: None } => data(walky::inbox::list(app, &from, peer).await?),
        Request::WalkyInbox { from, id: Some(id) } => {
            data(walky::inbox::get(app, &from, peer, &id).await?)
        }
        Request::WalkyWho => data(walky::inbox::who(app).await?),
        Request::WalkyLog => data(walky::inbox::log(app).await?),
        Request::Cards => data(app.crew_cards(&Caller::cli()).await?),
        Request::Durable => data(app.local_durable().await?),
        Request::DurableReload => data(app.durable_reload().await?),
        Request::SentList => data(app.sent_list(&cli).await?),
        Request::SentDiscard { id } => {
            data(app.run(&cli, "local", SentDiscard { id: Some(id) }).await?)
        }
        Request::SentClear => data(app.run(&cli, "local", SentDiscard { id: None }).await?),
        Request::ConfigApplied { snapshot, changes } => {
            app.config_applied(&cli, &snapshot, changes).await?;
            data(true)
        }
        Request::HooksChanged { change } => {
            app.hooks_changed(&cli, &change).await?;
            data(true)
        }
        // Not an operation of the application: the bridge's process ends and begins again once
        // the control server has sent this answer (`control::server`; decision 0077).
        Request::Restart => data(Message::new("restarting")),
        #[cfg(feature = "fault-injection")]
        Request::TestReplayWalky { to } => data(walky::send::replay_last(app, &to).await?),
        #[cfg(feature = "fault-injection")]
        Request::TestFailDeviceWrites { fail } => {
            app.fail_device_writes(fail);
            data(serde_json::json!({ "failing": fail }))
        }
    }
}
