//! The fault injector: one random fault every 0.2–1.5 s — a partition, a member restart, a lead
//! restart, a dropped connection or the lead's audit log out for a while (see the parent module's
//! docs). In the deputy scenario a fault comes every 1–4 s, and one in three is the deputy's own
//! (`deputy.rs`).

use rand::Rng;

use super::{Ev, World};
use crate::checker::Check;

impl World {
    /// One random fault, then the next one.
    pub(super) fn fault(&mut self) -> Check {
        if self.draining {
            return Ok(());
        }
        // The deputy scenario's faults are fewer: its own last seconds, not a few hundred ms.
        let next = self.now
            + if self.setup.deputy {
                self.rng.gen_range(1_000..=4_000)
            } else {
                self.rng.gen_range(200..=1_500)
            };
        self.schedule(next, Ev::Fault);
        self.faults += 1;
        if self.setup.deputy && self.rng.gen_ratio(1, 3) {
            return self.deputy_fault();
        }
        let m = self.rng.gen_range(0..self.members.len());
        let member_conn = self.members[m].conn.as_ref().map(|c| c.id);
        match self.rng.gen_range(0..100) {
            0..=39 => {
                if !self.partitioned.insert(m) {
                    return Ok(());
                }
                self.log(format!("partition {}", self.members[m].name));
                self.forget_expected(m);
                // Nothing tells either side: each notices the silence of the other's heartbeat.
                if let Some(conn) = member_conn {
                    self.kill(conn, None, None);
                }
                let heal = self.now + self.rng.gen_range(500..=8_000);
                self.schedule(heal, Ev::Heal { m });
            }
            40..=64 => {
                if !self.members[m].up {
                    return Ok(());
                }
                self.log(format!("restart {}", self.members[m].name));
                self.forget_expected(m);
                self.members[m].crash();
                // The lead notices the silence of the member's heartbeat.
                if let Some(conn) = member_conn {
                    self.kill(conn, None, None);
                }
                let up = self.now + self.rng.gen_range(200..=3_000);
                self.schedule(up, Ev::MemberUp { m });
            }
            65..=79 => {
                if !self.lead.up {
                    return Ok(());
                }
                self.log("restart lead".to_owned());
                self.forget_all_expected();
                let (phones, conns) = self.lead.crash();
                self.checker.on_aborted(&phones)?;
                for conn in conns {
                    let b = self.idle();
                    self.kill(conn, None, Some(b));
                }
                let up = self.now + self.rng.gen_range(500..=4_000);
                self.schedule(up, Ev::LeadUp);
            }
            90..=99 => {
                if !self.lead.disk.audit_up {
                    return Ok(());
                }
                self.log("audit log unavailable".to_owned());
                self.lead.disk.audit_up = false;
                let up = self.now + self.rng.gen_range(500..=3_000);
                self.schedule(up, Ev::AuditUp);
            }
            _ => {
                if let Some(conn) = member_conn {
                    self.log(format!("drop connection {conn}"));
                    self.forget_expected(m);
                    let (a, b) = (self.rng.gen_range(0..500), self.rng.gen_range(0..500));
                    self.kill(conn, Some(a), Some(b));
                }
            }
        }
        Ok(())
    }
}
