//! The fuzz targets' bodies: one function per decoder of outside bytes, each doing with the
//! bytes what the bridge or the CLI does with them, and panicking only where a property of the
//! decoder fails (docs/decisions/0063). The targets in `fuzz_targets/` call them under
//! libFuzzer; the root package's stable test `tests/fuzz_entries.rs` runs them on seeds, so this
//! file is compiled on every CI run even though the fuzz crate is not.
//!
//! Properties checked beyond "no panic, no hang": a decoded crew message encodes again and
//! decodes to the same value; the frame splitter never holds more than its cap; an invite that
//! reads prints back as itself; a refused write to an agent's settings leaves the document as it
//! was.

use std::collections::BTreeSet;

use collie::agent_hooks::command::recognise;
use collie::agent_hooks::merge::{find, install, uninstall, Hook};
use collie::app::permission::ask::Ask;
use collie::applied::snapshot::Snapshot;
use collie::control::protocol::{Reply, Request};
use collie::hooks::wire::{HookReply, HookRequest};
use collie_actors::cards::actor::Decision;
use collie_actors::cards::card::CardOption;
use collie_actors::crew_link::invite::InviteCode;
use collie_actors::durable::view::View;
use collie_crew::hello::{
    CrewSecret, HelloConfig, Invite, JoinContext, JoinReply, LeadHandshake, MemberHandshake,
    Opening, EXPORTER_LEN,
};
use collie_crew::relay::{requires, MemberMessage, PaneInfo, RelayRequest};
use collie_crew::uplink::{Uplink, UplinkAnswer};
use collie_crew::wire::{decode, encode, FrameDecoder, MAX_BUFFERED, MAX_FRAME};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// A decoded crew message encodes again (within the frame limit) and decodes to itself.
fn round_trips<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
    let bytes = encode(value).expect("a decoded value encodes again");
    assert!(bytes.len() <= MAX_FRAME);
    let again: T = decode(&bytes).expect("an encoded value decodes");
    assert_eq!(&again, value);
}

fn try_message<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(data: &[u8]) {
    if let Ok(value) = decode::<T>(data) {
        round_trips(&value);
    }
}

/// The frame splitter of a crew stream, fed `data` in pieces whose sizes the first bytes choose,
/// popping member messages as the lead does.
pub fn wire_frames(data: &[u8]) {
    let (sizes, stream) = data.split_at(data.len().min(8));
    let mut dec = FrameDecoder::new();
    let mut rest = stream;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let n = (usize::from(*size) + 1).min(rest.len());
        if dec.push(&rest[..n]).is_err() {
            break;
        }
        rest = &rest[n..];
        assert!(dec.capacity() <= MAX_BUFFERED);
        while let Ok(Some(message)) = dec.pop_message::<MemberMessage>() {
            round_trips(&message);
        }
    }
    try_message::<MemberMessage>(stream);
}

/// What a machine sends first, through both sides of the hello; the lead's answer to a join.
pub fn hello(data: &[u8]) {
    let secret = CrewSecret::from([42u8; 32]);
    let exporter = [7u8; EXPORTER_LEN];
    match decode::<Opening>(data) {
        Ok(Opening::Hello(h)) => {
            round_trips(&h);
            let config = HelloConfig::new("laptop".into(), "0.1.0".into(), secret.clone());
            let _ = LeadHandshake::new(config, h.name.clone(), exporter).on_hello(&h);
            let config = HelloConfig::new("web-1".into(), "0.1.0".into(), secret.clone());
            let _ = MemberHandshake::new(config, exporter).on_hello(&h);
        }
        Ok(Opening::Join(j)) => {
            round_trips(&j);
            let invite = Invite::new(&j.join_secret, std::time::SystemTime::UNIX_EPOCH);
            let ctx = JoinContext {
                invite: Some(&invite),
                peer_pin: &j.member_pin,
                lead_name: "laptop",
                name_taken: &|_| false,
                pinned_as: None,
                crew_secret: &secret,
                now: std::time::SystemTime::UNIX_EPOCH,
            };
            let _ = collie_crew::hello::validate_join(&j, &ctx);
        }
        Ok(other) => round_trips(&other),
        Err(_) => {}
    }
    try_message::<JoinReply>(data);
}

/// A relayed request (the member's side), a member's frame (the lead's side), and the uplink
/// both ways.
pub fn relay(data: &[u8]) {
    if let Ok(request) = decode::<RelayRequest>(data) {
        let _ = requires(&request.kind);
        let again: RelayRequest = decode(&encode(&request).expect("encodes")).expect("decodes");
        assert_eq!(again, request);
    }
    try_message::<MemberMessage>(data);
    try_message::<Uplink>(data);
    try_message::<UplinkAnswer>(data);
}

/// An invite as pasted into `collie crew join`.
pub fn invite(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(code) = InviteCode::parse(&text) {
        assert_eq!(InviteCode::parse(&code.to_string()), Ok(code));
    }
}

/// One line on the control socket, each way.
pub fn control(data: &[u8]) {
    if let Ok(request) = serde_json::from_slice::<Request>(data) {
        let line = serde_json::to_vec(&request).expect("encodes");
        serde_json::from_slice::<Request>(&line).expect("a request written reads");
    }
    let _ = serde_json::from_slice::<Reply>(data);
}

fn pane() -> PaneInfo {
    PaneInfo {
        machine: "laptop".into(),
        pane: "t0-3".into(),
        token: "ab12".into(),
        name: "agent".into(),
        backend: "tmux".into(),
        alive: true,
        cols: 80,
        rows: 24,
        last_activity: None,
        asking_password: false,
        at_shell: false,
        activity: Default::default(),
    }
}

/// A hook's request line made into a card and answered with each option; the reply line.
pub fn hook_json(data: &[u8]) {
    let _ = serde_json::from_slice::<HookReply>(data);
    let Ok(request) = serde_json::from_slice::<HookRequest>(data) else {
        return;
    };
    let Ok(ask) = Ask::parse(request.agent, &request.input) else {
        return;
    };
    let card = ask.card("laptop", &pane());
    let _ = card.check();
    for option in &card.options {
        let decision = Decision {
            option: CardOption {
                id: option.id.clone(),
                label: option.label.clone(),
            },
            device: "pixel".into(),
        };
        assert!(ask.output(&decision).is_object());
    }
}

/// An agent's settings file: Collie's entry found, put in and taken out.
pub fn agent_settings(data: &[u8]) {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let ours = |c: &str| recognise(c, "claude-permission").is_some();
    let _ = find(&doc, "PermissionRequest", &ours);
    let hook = Hook {
        event: "PermissionRequest",
        matcher: "*",
        command: "/usr/bin/collie hook claude-permission",
        timeout: 660,
    };
    let mut after = doc.clone();
    if install(&mut after, &hook, &ours).is_err() {
        assert_eq!(after, doc, "a refused install changes nothing");
    }
    let mut after = doc.clone();
    if uninstall(&mut after, "PermissionRequest", &ours).is_err() {
        assert_eq!(after, doc, "a refused uninstall changes nothing");
    }
}

/// A durable agent's `GET /v1/state` answer, made into the view phones see.
pub fn durable_state(data: &[u8]) {
    if let Ok(state) = serde_json::from_slice::<collie_actors::durable::wire::State>(data) {
        let (view, _dropped) = View::from_wire(state);
        let ids: BTreeSet<&str> = view.conversations.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids.len(),
            view.conversations.len(),
            "conversation ids are unique"
        );
    }
}

/// `config.toml`.
pub fn config_toml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = collie::config::parse_config(text);
    }
}

/// `applied.json`, through the reader the bridge uses (with its size cap).
pub fn applied_json(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let path = dir.path().join("applied.json");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(Some(snapshot)) = Snapshot::read(&path) {
        let again = serde_json::to_vec(&snapshot).expect("encodes");
        assert_eq!(
            serde_json::from_slice::<Snapshot>(&again).expect("reads"),
            snapshot
        );
    }
}

/// The audit log, through `collie audit verify`, the bridge's look at its end at start, and
/// `collie audit tail`.
pub fn audit_log(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let path = dir.path().join("audit.log");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let _ = collie_actors::audit::verify(&path, None, None);
    let _ = collie_actors::audit::examine(&path);
    let _ = collie_actors::audit::tail(&path, 5);
}
