//! The crew actor as a lead witnessing its members' audit logs: the heads each member sends
//! ([`KeptHeads`] decides what is kept and what is a line), kept in the store's `crew` table under
//! `witness/<member>` and audited `audit.witnessed` as the rule of [`KeptHeads`] says; and the
//! kept heads handed back to the member that asks (`collie audit verify --witnessed`).
//!
//! A member's heads are forgotten with the member (`collie crew remove`): a machine that joins
//! again under that name starts a witness of its own.

use std::collections::BTreeMap;

use serde_json::json;
use time::OffsetDateTime;

use super::actor::{unavailable, CrewState, Role};
use super::CrewError;
use crate::audit::witness::{KeptHead, KeptHeads};
use crate::audit::{AuditEventKind, AuditMsg, AuditRecord, ChainTail};
use crate::store::{Change, Store, Table};

const WITNESS_PREFIX: &str = "witness/";

fn witness_key(member: &str) -> String {
    format!("{WITNESS_PREFIX}{member}")
}

/// Every member's kept heads, as the store holds them (an unreadable entry is skipped and
/// logged: it is evidence for a person to look at, not a reason to keep the lead down).
pub(super) fn load_witness(store: &Store) -> Result<BTreeMap<String, KeptHeads>, CrewError> {
    let mut all = BTreeMap::new();
    for (key, bytes) in store
        .scan_prefix(Table::Crew, WITNESS_PREFIX)
        .map_err(unavailable)?
    {
        let Some(member) = key.strip_prefix(WITNESS_PREFIX) else {
            continue;
        };
        match serde_json::from_slice::<KeptHeads>(&bytes) {
            Ok(kept) => {
                all.insert(member.to_owned(), kept);
            }
            Err(e) => tracing::error!(%key, error = %e, "unreadable witnessed audit heads"),
        }
    }
    Ok(all)
}

/// The change that forgets `member`'s heads.
pub(super) fn forget_change(member: &str) -> Change {
    Change::Remove(witness_key(member))
}

impl CrewState {
    /// Member `member` reports `head` (`stopping`: as its bridge stops; `contradicted`: the
    /// `seq`s of kept heads its log does not hold). The line (when one is due) is written before
    /// the store keeps the head; a failure keeps nothing, and the member sends again.
    pub(super) async fn keep_head(
        &mut self,
        member: &str,
        head: ChainTail,
        stopping: bool,
        contradicted: &[u64],
    ) -> Result<(), CrewError> {
        let Role::Lead(lead) = &self.role else {
            return Err(CrewError::NotLead);
        };
        if !lead.core.members().any(|m| m.name == member) {
            return Err(CrewError::NoSuchMember(member.to_owned()));
        }
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let mut kept = lead.witness.get(member).cloned().unwrap_or_default();
        let observed = kept.observe(head.clone(), stopping, contradicted, now);
        if !observed.changed {
            return Ok(());
        }
        if !observed.contradicts.is_empty() {
            tracing::error!(
                %member,
                seq = head.seq,
                contradicts = ?observed.contradicts,
                "a member's audit head contradicts one this lead witnessed: its log was rewritten, cut or replaced"
            );
        }
        if observed.line {
            let mut line =
                AuditRecord::new(AuditEventKind::AuditWitnessed, self.args.machine.get())
                    .with_detail("member", member.to_owned())
                    .with_detail("seq", head.seq)
                    .with_detail("hash", head.hash.clone())
                    .with_detail("heads", observed.heads)
                    .with_detail("stopping", stopping);
            if !observed.contradicts.is_empty() {
                let against: Vec<_> = observed
                    .contradicts
                    .iter()
                    .map(|t| json!({"seq": t.seq, "hash": t.hash}))
                    .collect();
                line = line.with_detail("contradicts", against);
            }
            match self.args.audit.call(|r| AuditMsg::Append(line, r)).await {
                Ok(Ok(_)) => {}
                _ => return Err(CrewError::AuditUnavailable),
            }
        }
        let bytes = serde_json::to_vec(&kept).map_err(unavailable)?;
        self.args
            .store
            .apply(Table::Crew, &[Change::Put(witness_key(member), bytes)])
            .map_err(unavailable)?;
        if let Role::Lead(lead) = &mut self.role {
            lead.witness.insert(member.to_owned(), kept);
        }
        Ok(())
    }

    /// The heads of `member`'s log this lead keeps, oldest first.
    pub(super) fn witnessed(&self, member: &str) -> Result<Vec<KeptHead>, CrewError> {
        let Role::Lead(lead) = &self.role else {
            return Err(CrewError::NotLead);
        };
        Ok(lead
            .witness
            .get(member)
            .map(|k| k.heads.clone())
            .unwrap_or_default())
    }
}
