//! The crew actor as a lead naming its deputy (SPEC §13): `collie crew deputy set NAME | clear`,
//! audited, kept in the `crew` table under one key, and shown in the view. What the deputy is
//! then sent — the copy of the device registry — is the bridge's business (`src/app/deputy`),
//! which reads the name from the view.

use collie_crew::hello::Capability;
use collie_crew::relay::deputy::DeputyNotice;

use super::actor::{unavailable, CrewState, Role};
use super::CrewError;
use crate::audit::{AuditEventKind, AuditMsg, AuditRecord};
use crate::store::{Change, Store, Table};

/// The key of the deputy's name in the `crew` table.
const DEPUTY_KEY: &str = "deputy";

/// The stored deputy, if one is named. A value that does not read is no deputy (and said in the
/// log): the lead runs on, and `crew deputy set` writes it again.
pub(super) fn load_deputy(store: &Store) -> Result<Option<String>, CrewError> {
    let Some(bytes) = store.get(Table::Crew, DEPUTY_KEY).map_err(unavailable)? else {
        return Ok(None);
    };
    match serde_json::from_slice::<String>(&bytes) {
        Ok(name) => Ok(Some(name)),
        Err(e) => {
            tracing::error!(error = %e, "the stored crew deputy is unreadable; no deputy");
            Ok(None)
        }
    }
}

impl CrewState {
    /// `collie crew deputy set NAME` (`Some`) or `clear` (`None`): audited first, then stored,
    /// then shown. Naming the deputy again is no change and writes nothing.
    pub(super) async fn set_deputy(&mut self, name: Option<String>) -> Result<(), CrewError> {
        let Role::Lead(lead) = &self.role else {
            return Err(CrewError::NotLead);
        };
        if lead.deputy == name {
            return Ok(());
        }
        if let Some(name) = &name {
            if !lead.core.members().any(|m| &m.name == name) {
                return Err(CrewError::NoSuchMember(name.clone()));
            }
            // An online member's hello says whether its bridge can stand in; an offline one is
            // checked when it comes back (the bridge then says so in its log).
            let online = lead.core.online(name).and_then(|o| lead.links.get(&o.conn));
            if online.is_some_and(|link| link.relay.has(Capability::Deputy).is_err()) {
                return Err(CrewError::CannotDeputize(name.clone()));
            }
        }
        let line = AuditRecord::new(AuditEventKind::CrewDeputy, self.args.machine.get())
            .with_detail("member", name.clone().unwrap_or_else(|| "cleared".into()));
        match self.args.audit.call(|r| AuditMsg::Append(line, r)).await {
            Ok(Ok(_)) => {}
            _ => return Err(CrewError::AuditUnavailable),
        }
        let change = match &name {
            Some(n) => Change::Put(
                DEPUTY_KEY.to_owned(),
                serde_json::to_vec(n).map_err(unavailable)?,
            ),
            None => Change::Remove(DEPUTY_KEY.to_owned()),
        };
        self.args
            .store
            .apply(Table::Crew, &[change])
            .map_err(unavailable)?;
        if let Role::Lead(lead) = &mut self.role {
            lead.deputy = name;
        }
        self.publish();
        Ok(())
    }

    /// The notice naming the deputy at `address`, signed with this lead's key.
    pub(super) fn sign_notice(&self, address: String) -> Result<DeputyNotice, CrewError> {
        let Role::Lead(lead) = &self.role else {
            return Err(CrewError::NotLead);
        };
        let name = lead
            .deputy
            .clone()
            .ok_or_else(|| CrewError::BadInput("no deputy is named".into()))?;
        let pin = lead
            .core
            .members()
            .find(|m| m.name == name)
            .map(|m| m.pin)
            .ok_or_else(|| CrewError::NoSuchMember(name.clone()))?;
        DeputyNotice::sign(&lead.identity, name, pin, address).map_err(unavailable)
    }

    /// Member `name` was removed: if it was the deputy, there is none now (its `crew.removed`
    /// line says why). A failed store write leaves a name that names no member, which the lead
    /// ignores at its next start.
    pub(super) fn forget_deputy(&mut self, name: &str) {
        let Role::Lead(lead) = &mut self.role else {
            return;
        };
        if lead.deputy.as_deref() != Some(name) {
            return;
        }
        lead.deputy = None;
        let forget = Change::Remove(DEPUTY_KEY.to_owned());
        if let Err(e) = self.args.store.apply(Table::Crew, &[forget]) {
            tracing::warn!(error = %e, "cannot forget a removed deputy");
        }
    }
}
