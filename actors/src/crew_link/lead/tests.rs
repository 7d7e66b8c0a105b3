use std::time::Duration;

use collie_crew::hello::{JoinSecret, MemberHandshake, EXPORTER_LEN};

use super::*;

const EXPORTER: Exporter = [7u8; EXPORTER_LEN];

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

fn secret() -> CrewSecret {
    CrewSecret::from([42u8; 32])
}

fn pin(b: u8) -> Pin {
    Pin::of_spki(&[b])
}

fn lead(members: Vec<MemberRecord>, invites: Vec<Invite>) -> LeadCore {
    LeadCore::open(
        "laptop".into(),
        "0.1.0".into(),
        secret(),
        members,
        invites,
        now(),
    )
    .0
}

fn member(name: &str, b: u8) -> MemberRecord {
    MemberRecord {
        name: name.into(),
        pin: pin(b),
    }
}

fn hello_of(name: &str) -> Hello {
    let config = HelloConfig::new(name.into(), "0.1.0".into(), secret());
    MemberHandshake::new(config, EXPORTER).hello()
}

fn request(secret: &JoinSecret, name: &str, b: u8) -> JoinRequest {
    JoinRequest {
        join_secret: secret.clone(),
        name: name.into(),
        member_pin: pin(b),
    }
}

#[test]
fn opening_pins_the_members_and_forgets_invites_expired_long_ago() {
    let old = Invite::new(
        &JoinSecret::random(),
        now() - Duration::from_secs(3 * 24 * 3600),
    );
    let live = Invite::new(&JoinSecret::random(), now() + Duration::from_secs(600));
    let (_, effects) = LeadCore::open(
        "laptop".into(),
        "0.1.0".into(),
        secret(),
        vec![member("web-1", 1)],
        vec![old.clone(), live],
        now(),
    );
    assert_eq!(
        effects,
        vec![
            Effect::Store(vec![Change::Remove(persist::invite_key(&old.secret_hash))]),
            Effect::Pin(pin(1)),
            Effect::Admission(ClientAdmission::JoinAllowed),
            Effect::Publish,
        ]
    );
}

#[test]
fn a_join_is_audited_and_stored_in_one_batch_before_the_member_is_pinned() {
    let s = JoinSecret::random();
    let invite = Invite::new(&s, now() + Duration::from_secs(600));
    let mut core = lead(vec![], vec![invite.clone()]);
    let JoinDecision::Plan(plan) = core.join(&request(&s, "web-1", 1), &pin(1), now()) else {
        panic!("a valid request is planned");
    };
    match plan.durable.as_slice() {
        [Effect::Audit(line), Effect::Store(batch)] => {
            assert_eq!(line.event, AuditEventKind::CrewJoined);
            assert_eq!(batch.len(), 2, "the used invite and the member together");
        }
        other => panic!("audit, then one batch: {other:?}"),
    }
    // Nothing changed before the commit.
    assert_eq!(core.members().count(), 0);
    let (reply, effects) = core.commit_join(plan, now());
    assert!(matches!(reply, JoinReply::Accepted(_)));
    assert_eq!(
        effects,
        vec![
            Effect::Pin(pin(1)),
            Effect::Admission(ClientAdmission::PinnedOnly),
            Effect::Publish,
        ]
    );
    // The invite is used: another machine is refused, the same one is answered again.
    assert!(matches!(
        core.join(&request(&s, "web-2", 2), &pin(2), now()),
        JoinDecision::Reply(JoinReply::Refused(JoinError::InviteUsed))
    ));
    assert!(matches!(
        core.join(&request(&s, "web-1", 1), &pin(1), now()),
        JoinDecision::Reply(JoinReply::Accepted(_))
    ));
}

#[test]
fn a_plan_dropped_after_a_failed_write_changes_nothing() {
    let s = JoinSecret::random();
    let core = lead(
        vec![],
        vec![Invite::new(&s, now() + Duration::from_secs(600))],
    );
    let decision = core.join(&request(&s, "web-1", 1), &pin(1), now());
    assert!(matches!(decision, JoinDecision::Plan(_)));
    drop(decision);
    assert_eq!(core.members().count(), 0);
    // The invite is still unused: the same request is planned again.
    assert!(matches!(
        core.join(&request(&s, "web-1", 1), &pin(1), now()),
        JoinDecision::Plan(_)
    ));
}

#[test]
fn a_newer_hello_replaces_the_link_and_only_the_current_one_goes_offline() {
    let mut core = lead(vec![member("web-1", 1)], vec![]);
    assert_eq!(
        core.hello(&hello_of("web-1"), &pin(9), EXPORTER)
            .map(|s| s.name),
        Err("not a member of this crew".to_owned())
    );
    let first = core
        .hello(&hello_of("web-1"), &pin(1), EXPORTER)
        .expect("pinned");
    assert_eq!(first.effects, vec![Effect::Publish]);
    let second = core
        .hello(&hello_of("web-1"), &pin(1), EXPORTER)
        .expect("again");
    assert_eq!(
        second.effects,
        vec![
            Effect::Close {
                conn: first.conn,
                reason: "replaced by a newer connection"
            },
            Effect::Publish
        ]
    );
    // The replaced connection ending does not take the member offline.
    assert!(core.gone("web-1", first.conn).is_empty());
    assert!(core.online("web-1").is_some());
    assert_eq!(core.gone("web-1", second.conn), vec![Effect::Publish]);
    assert!(core.online("web-1").is_none());
}

#[test]
fn a_hello_under_another_name_is_refused() {
    let mut core = lead(vec![member("web-1", 1)], vec![]);
    assert!(core.hello(&hello_of("db-2"), &pin(1), EXPORTER).is_err());
    assert!(core.online("web-1").is_none());
}

#[test]
fn a_removal_unpins_and_closes_the_link_after_its_line_and_its_store_write() {
    let mut core = lead(vec![member("web-1", 1)], vec![]);
    let served = core
        .hello(&hello_of("web-1"), &pin(1), EXPORTER)
        .expect("pinned");
    assert!(core.remove("db-2").is_none());
    let plan = core.remove("web-1").expect("a member");
    assert!(matches!(
        plan.durable.as_slice(),
        [Effect::Audit(_), Effect::Store(_)]
    ));
    assert_eq!(
        core.commit_remove(plan),
        vec![
            Effect::Unpin(pin(1)),
            Effect::Close {
                conn: served.conn,
                reason: "removed from the crew"
            },
            Effect::Publish,
        ]
    );
    assert_eq!(core.members().count(), 0);
    assert!(core.hello(&hello_of("web-1"), &pin(1), EXPORTER).is_err());
}

#[test]
fn an_invite_opens_the_handshake_to_unpinned_machines_once_it_is_durable() {
    let mut core = lead(vec![], vec![]);
    let plan = core
        .invite(Invite::new(
            &JoinSecret::random(),
            now() + Duration::from_secs(60),
        ))
        .expect("encodes");
    assert!(matches!(plan.durable.as_slice(), [Effect::Store(_)]));
    assert_eq!(
        core.commit_invite(plan, now()),
        vec![Effect::Admission(ClientAdmission::JoinAllowed)]
    );
}
