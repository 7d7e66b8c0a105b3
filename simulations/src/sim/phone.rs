//! The phone: a stream of requests through the lead for random machines and panes, each with the
//! 2 s deadline of SPEC §8 (see the parent module's docs for the mix).

use collie_crew::relay::RelayKind;
use rand::Rng;

use super::{Ev, World};
use crate::checker::{Check, PHONE_DEADLINE_MS};

impl World {
    /// The phone issues one request through the lead.
    pub(super) fn phone(&mut self) -> Check {
        if self.draining {
            return Ok(());
        }
        let next = self.now + self.rng.gen_range(5..=60);
        self.schedule(next, Ev::Phone);
        if self.setup.deputy {
            return self.phone_with_token();
        }
        self.phone_through_lead(None)
    }

    /// In the deputy scenario: the phone picks one of its tokens and goes to the lead, or to the
    /// deputy's door when the lead does not answer.
    fn phone_with_token(&mut self) -> Check {
        let Some(token) = self.token() else {
            return Ok(());
        };
        if self.goes_to_deputy() {
            let id = self.next_phone;
            self.next_phone += 1;
            return self.at_door(id, token);
        }
        self.phone_through_lead(Some(token))
    }

    /// A request through the lead, with `token` checked by the lead's registry first (the deputy
    /// scenario).
    fn phone_through_lead(&mut self, token: Option<[u8; 32]>) -> Check {
        if !self.lead.up {
            // The phone cannot reach the lead at all; nothing is relayed.
            return Ok(());
        }
        let m = self.rng.gen_range(0..self.members.len());
        let machine = self.members[m].name.clone();
        let pane = format!("p{}", self.rng.gen_range(0..3));
        let kind = match self.rng.gen_range(0..100) {
            0..=34 => RelayKind::Snapshot {
                pane,
                scrollback: None,
            },
            35..=49 => RelayKind::PaneList,
            50..=79 => RelayKind::Input {
                pane,
                text: Some(format!("echo {}", self.next_phone)),
                keys: vec!["Enter".to_owned()],
            },
            80..=89 => RelayKind::Rename {
                pane,
                name: format!("n{}", self.next_phone),
            },
            90..=94 => RelayKind::Subscribe {
                pane,
                last_seq: None,
            },
            _ => RelayKind::SubscribeColour {
                pane,
                last_seq: None,
            },
        };
        if let Some(token) = token {
            if !self.lead_admits(&token, kind.is_write()) {
                return Ok(());
            }
        }
        let id = self.next_phone;
        self.next_phone += 1;
        self.log(format!("phone {id}: {machine} {kind:?}"));
        self.checker
            .on_issue(id, &machine, kind.is_write(), self.now + PHONE_DEADLINE_MS);
        let outs = self.lead.on_phone(id, &machine, kind, self.now);
        self.apply_lead(outs)
    }
}
