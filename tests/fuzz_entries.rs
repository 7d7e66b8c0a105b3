//! The `cargo fuzz` targets' bodies (`fuzz/src/lib.rs`), compiled and run on the stable toolchain
//! so they cannot rot while the nightly-only fuzz crate is not built: each runs on valid
//! encodings, on every one of their prefixes, and on arbitrary bytes (docs/decisions/0063).

use collie_crew::hello::{
    CrewSecret, Hello, HelloConfig, JoinAccepted, JoinReply, MemberHandshake, Opening, EXPORTER_LEN,
};
use collie_crew::relay::{MemberMessage, RelayError, RelayKind, RelayRequest, RelayResponse};
use collie_crew::wire::{encode, encode_frame};
use proptest::prelude::*;

#[allow(unreachable_pub, dead_code)]
#[path = "../fuzz/src/lib.rs"]
mod entries;

type Entry = fn(&[u8]);

const ENTRIES: &[(&str, Entry)] = &[
    ("wire_frames", entries::wire_frames),
    ("hello", entries::hello),
    ("relay", entries::relay),
    ("invite", entries::invite),
    ("control", entries::control),
    ("hook_json", entries::hook_json),
    ("agent_settings", entries::agent_settings),
    ("durable_state", entries::durable_state),
    ("config_toml", entries::config_toml),
    ("applied_json", entries::applied_json),
    ("audit_log", entries::audit_log),
];

/// A valid input of each target (a seed for its corpus, too).
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let hello: Hello = MemberHandshake::new(
        HelloConfig::new("web-1".into(), "0.1.0".into(), CrewSecret::from([1; 32])),
        [7; EXPORTER_LEN],
    )
    .hello();
    let request = RelayRequest {
        id: 3,
        device: "pixel".into(),
        request_id: "r-1".into(),
        kind: RelayKind::Input {
            pane: "p1".into(),
            text: Some("ls".into()),
            keys: vec!["Enter".into()],
        },
        device_id: Some("0f".repeat(16)),
    };
    let answer = MemberMessage::Response(RelayResponse {
        id: 3,
        result: Err(RelayError::NoSuchPane),
    });
    let mut frames = vec![3, 0, 250, 7];
    frames.extend(encode_frame(&answer).expect("encodes"));
    frames.extend(encode_frame(&answer).expect("encodes"));
    vec![
        ("wire_frames", frames),
        ("hello", encode(&Opening::Hello(hello)).expect("encodes")),
        (
            "hello",
            encode(&JoinReply::Accepted(JoinAccepted {
                crew_secret: CrewSecret::from([2; 32]),
                lead_name: "laptop".into(),
            }))
            .expect("encodes"),
        ),
        ("relay", encode(&request).expect("encodes")),
        ("relay", encode(&answer).expect("encodes")),
        ("invite", format!("collie-crew:{}:{}:[::1]:7421", "ab".repeat(32), "cd".repeat(32)).into_bytes()),
        ("control", br#"{"cmd":"panes-keys","pane":"p1","keys":["C-c","Enter"]}"#.to_vec()),
        (
            "hook_json",
            br#"{"agent":"claude","input":{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"},"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"localSettings"}]}}"#.to_vec(),
        ),
        (
            "agent_settings",
            br#"{"hooks":{"PermissionRequest":[{"matcher":"*","hooks":[{"type":"command","command":"/x/collie hook claude-permission"}]}]}}"#.to_vec(),
        ),
        (
            "durable_state",
            br#"{"conversations":[{"id":"c1","title":"t","state":"working","items":[{"id":"i1","kind":"text","text":"hi"}],"questions":[{"id":"q1","title":"ok?","options":[{"id":"y","label":"Yes"}]}]}],"starters":[{"id":"s","label":"New"}]}"#.to_vec(),
        ),
        ("config_toml", b"schema_version = 1\nname = \"web-1\"\n[hooks]\nhold = 600\n".to_vec()),
        (
            "applied_json",
            br#"{"schema_version":1,"resolved":{"config":null,"workspaces":[],"starters":[]},"applied_at":"2026-12-06T15:00:00Z","confirmed":"yes"}"#.to_vec(),
        ),
        (
            "audit_log",
            format!(
                "{{\"v\":1,\"seq\":1,\"ts\":\"2026-12-06T15:00:00Z\",\"event\":\"pane.input\",\"machine\":\"m\",\"detail\":{{}},\"prev\":\"{}\",\"hash\":\"{}\"}}\n",
                "0".repeat(64),
                "1".repeat(64)
            )
            .into_bytes(),
        ),
    ]
}

fn entry(name: &str) -> Entry {
    ENTRIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, e)| *e)
        .expect("a listed target")
}

/// Every seed, and every prefix of it, through its target.
#[test]
fn seeds_and_their_prefixes_pass_their_targets() {
    for (name, seed) in seeds() {
        let run = entry(name);
        for end in 0..=seed.len() {
            run(&seed[..end]);
        }
    }
    assert_eq!(
        ENTRIES.len(),
        seeds()
            .iter()
            .map(|(n, _)| *n)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        "every target has a seed"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Arbitrary bytes through every target.
    #[test]
    fn arbitrary_bytes_pass_every_target(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        for (_, run) in ENTRIES {
            run(&bytes);
        }
    }
}
