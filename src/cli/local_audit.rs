//! Where a command run on the machine writes its audit line (`config.applied`,
//! `hooks.installed`). The audit log has one writer, the bridge: with a bridge running the line is
//! asked of it over the control socket; with none, it is kept in the store, and the bridge appends
//! it when it starts (the mechanism that keeps lines while the log cannot be written).
//!
//! The sink is found *before* the change is made, so a command that cannot audit changes nothing;
//! only a failure after the change can leave it without its line, and the caller says so.

use anyhow::Context;
use collie_actors::audit::stored::{kept_change, kept_key, KeptLine};
use collie_actors::audit::AuditRecord;
use collie_actors::store::{Store, Table};
use time::OffsetDateTime;

use crate::config::Settings;
use crate::control::client::{self, ClientError};
use crate::control::protocol::Request;

/// Where the line goes.
pub(super) enum Sink {
    /// The running bridge, at this control socket.
    Bridge(std::path::PathBuf),
    /// The store (no bridge runs), with this machine's name.
    Store(Store, String),
}

impl Sink {
    /// Finds the sink for `settings`, before anything changes: the running bridge, or the store
    /// when none runs (opening it fails while a bridge holds it, or when it is broken). `what`
    /// ends the error ("nothing was applied").
    pub(super) fn find(settings: &Settings, what: &str) -> anyhow::Result<Sink> {
        let socket = settings.control_socket();
        match client::ask::<serde_json::Value>(&socket, &Request::Status) {
            Ok(_) => return Ok(Sink::Bridge(socket)),
            Err(ClientError::NotRunning) => {}
            Err(e) => anyhow::bail!("cannot reach the bridge to audit the change ({e}); {what}"),
        }
        for change in crate::state::prepare_state_dir(&settings.state_dir)? {
            eprintln!("collie: {change}");
        }
        let store = Store::open(&settings.state_dir.join("db")).with_context(|| {
            format!(
                "opening the store in {} to audit the change; {what}",
                settings.state_dir.display()
            )
        })?;
        let machine = collie_actors::crew_link::stored_member_name(&store)
            .unwrap_or_else(|| settings.name.clone());
        Ok(Sink::Store(store, machine))
    }

    /// Whether the line goes to a running bridge.
    pub(super) fn is_bridge(&self) -> bool {
        matches!(self, Sink::Bridge(_))
    }

    /// Writes the line: `request` asks the running bridge to write it; `record(machine)` is the
    /// line kept in the store. `changed` starts the error ("applied", "installed").
    pub(super) fn write(
        self,
        request: &Request,
        record: impl FnOnce(&str) -> AuditRecord,
        changed: &str,
    ) -> anyhow::Result<()> {
        match self {
            Sink::Bridge(socket) => {
                client::ask::<bool>(&socket, request)
                    .with_context(|| format!("{changed}, but the bridge could not audit it"))?;
            }
            Sink::Store(store, machine) => {
                let now = OffsetDateTime::now_utc();
                let line = KeptLine {
                    record: record(&machine),
                    ts_nanos: i64::try_from(now.unix_timestamp_nanos()).unwrap_or(i64::MAX),
                    skip_to: None,
                };
                let change = kept_change(&kept_key(now), &line)?;
                store
                    .apply(Table::Audit, &[change])
                    .with_context(|| format!("{changed}, but the audit line could not be kept"))?;
            }
        }
        Ok(())
    }
}
