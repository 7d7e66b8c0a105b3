use std::collections::BTreeMap;

use super::*;
use crate::wire::{decode, encode};

fn snapshot_kind() -> RelayKind {
    RelayKind::Snapshot {
        pane: "t0-3".to_owned(),
        scrollback: Some(100),
    }
}

fn subscribe_kind() -> RelayKind {
    RelayKind::Subscribe {
        pane: "p1".to_owned(),
        last_seq: None,
    }
}

fn input_kind() -> RelayKind {
    RelayKind::Input {
        pane: "p1".to_owned(),
        text: Some("ls".to_owned()),
        keys: vec!["Enter".to_owned()],
    }
}

fn snapshot() -> PaneSnapshot {
    PaneSnapshot {
        machine: "web-1".to_owned(),
        pane: "t0-3".to_owned(),
        token: "ab12".to_owned(),
        name: "build".to_owned(),
        cols: 80,
        rows: 24,
        cursor: Cursor { x: 2, y: 0 },
        lines: vec!["$ ".to_owned()],
        scrollback: vec![],
        seq: 9,
    }
}

fn ok(id: u64, result: RelayOk) -> RelayResponse {
    RelayResponse {
        id,
        result: Ok(result),
    }
}

#[test]
fn messages_round_trip() {
    let request = RelayRequest {
        id: 3,
        device: "phone".to_owned(),
        request_id: "r-77".to_owned(),
        device_id: Some("0f".repeat(16)),
        kind: input_kind(),
    };
    assert_eq!(
        decode::<RelayRequest>(&encode(&request).unwrap()).unwrap(),
        request
    );

    let messages = [
        MemberMessage::Response(ok(3, RelayOk::Snapshot(snapshot()))),
        MemberMessage::Response(RelayResponse {
            id: 4,
            result: Err(RelayError::BadInput("unknown key: Foo".to_owned())),
        }),
        MemberMessage::Event(StreamEvent {
            stream: 5,
            seq: 10,
            cursor: Cursor { x: 0, y: 1 },
            cols: 80,
            height: 24,
            full: false,
            rows: BTreeMap::from([(1, "hello".to_owned())]),
        }),
        MemberMessage::End(StreamEnd {
            stream: 5,
            error: Some(RelayError::NoSuchPane),
        }),
    ];
    for m in messages {
        assert_eq!(decode::<MemberMessage>(&encode(&m).unwrap()).unwrap(), m);
    }
}

#[test]
fn errors_display_the_spec_strings() {
    let cases = [
        (RelayError::NoSuchPane, "no such pane"),
        (RelayError::ResourceLimit, "resource limit"),
        (RelayError::AuditUnavailable, "audit unavailable"),
        (RelayError::CapabilityMissing, "capability missing"),
        (
            RelayError::BadInput("text too long".to_owned()),
            "text too long",
        ),
        (RelayError::Restarting, "restarting, try again"),
        (RelayError::Unreachable, "member unreachable"),
        (RelayError::Unreadable, "member response unreadable"),
        (RelayError::Unknown, "member response unreadable"),
    ];
    for (error, text) in cases {
        assert_eq!(error.to_string(), text);
    }
}

#[test]
fn an_unknown_kind_from_a_newer_lead_decodes_as_unknown() {
    // A newer lead's request: same fields, a kind index this side does not have (one past every
    // kind it knows, `Unknown` included), with a payload.
    #[derive(serde::Serialize)]
    enum NewerKind {
        #[allow(dead_code)]
        A,
        #[allow(dead_code)]
        B,
        #[allow(dead_code)]
        C,
        #[allow(dead_code)]
        D,
        #[allow(dead_code)]
        E,
        #[allow(dead_code)]
        F,
        #[allow(dead_code)]
        G,
        #[allow(dead_code)]
        H,
        #[allow(dead_code)]
        I,
        #[allow(dead_code)]
        J,
        #[allow(dead_code)]
        K,
        #[allow(dead_code)]
        L,
        #[allow(dead_code)]
        M,
        #[allow(dead_code)]
        M2,
        #[allow(dead_code)]
        M3,
        #[allow(dead_code)]
        M4,
        #[allow(dead_code)]
        M5,
        #[allow(dead_code)]
        M6,
        #[allow(dead_code)]
        M7,
        #[allow(dead_code)]
        M8,
        #[allow(dead_code)]
        M9,
        #[allow(dead_code)]
        M10,
        #[allow(dead_code)]
        M11,
        #[allow(dead_code)]
        M12,
        #[allow(dead_code)]
        M13,
        #[allow(dead_code)]
        M14,
        #[allow(dead_code)]
        M15,
        #[allow(dead_code)]
        M16,
        #[allow(dead_code)]
        M17,
        #[allow(dead_code)]
        M18,
        #[allow(dead_code)]
        M19,
        #[allow(dead_code)]
        M20,
        #[allow(dead_code)]
        M21,
        #[allow(dead_code)]
        M22,
        #[allow(dead_code)]
        N,
        Resize {
            cols: u16,
            rows: u16,
        },
    }
    #[derive(serde::Serialize)]
    struct NewerRequest {
        id: u64,
        device: String,
        request_id: String,
        kind: NewerKind,
    }
    let newer = NewerRequest {
        id: 8,
        device: "phone".to_owned(),
        request_id: "r".to_owned(),
        kind: NewerKind::Resize {
            cols: 100,
            rows: 30,
        },
    };
    let got: RelayRequest = decode(&encode(&newer).unwrap()).unwrap();
    assert_eq!(got.id, 8);
    assert_eq!(got.kind, RelayKind::Unknown);
}

#[test]
fn the_device_id_reaches_a_newer_member_and_an_older_one_reads_around_it() {
    // The request as a lead sent it before `device_id`.
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct OlderRequest {
        id: u64,
        device: String,
        request_id: String,
        kind: RelayKind,
    }
    let older = OlderRequest {
        id: 5,
        device: "phone".to_owned(),
        request_id: "r-5".to_owned(),
        kind: input_kind(),
    };
    let got: RelayRequest = decode(&encode(&older).unwrap()).unwrap();
    assert_eq!((got.id, got.kind, got.device_id), (5, input_kind(), None));

    let newer = RelayRequest {
        id: 6,
        device: "phone".to_owned(),
        request_id: "r-6".to_owned(),
        kind: RelayKind::DeviceEnded {
            device_id: "ab".repeat(16),
        },
        device_id: Some("cd".repeat(16)),
    };
    let bytes = encode(&newer).unwrap();
    assert_eq!(decode::<RelayRequest>(&bytes).unwrap(), newer);
    // An older member reads the fields it knows and ignores the rest.
    let read: OlderRequest = decode(
        &encode(&RelayRequest {
            kind: input_kind(),
            ..newer.clone()
        })
        .unwrap(),
    )
    .unwrap();
    assert_eq!((read.id, read.kind), (6, input_kind()));
}

#[test]
fn an_outcome_fits_only_its_own_kind_of_request() {
    let snapshot_ok = RelayOk::Snapshot(snapshot());
    assert!(snapshot_kind().fits(&snapshot_ok));
    assert!(!input_kind().fits(&snapshot_ok), "a snapshot for an input");
    assert!(input_kind().fits(&RelayOk::Done));
    assert!(!snapshot_kind().fits(&RelayOk::Done), "done for a snapshot");
    assert!(subscribe_kind().fits(&RelayOk::Subscribed));
    assert!(!subscribe_kind().fits(&RelayOk::Done));
    assert!(RelayKind::PaneList.fits(&RelayOk::PaneList(vec![])));
    assert!(RelayKind::Unsubscribe { stream: 1 }.fits(&RelayOk::Done));
    // An outcome from a newer member fits nothing.
    for kind in [
        snapshot_kind(),
        input_kind(),
        subscribe_kind(),
        RelayKind::PaneList,
    ] {
        assert!(!kind.fits(&RelayOk::Unknown), "{kind:?}");
    }
}

#[test]
fn the_largest_upload_fits_a_frame_and_crosses_the_wire_whole() {
    let bytes: Vec<u8> = (0..MAX_BLOB).map(|i| (i % 251) as u8).collect();
    let request = RelayRequest {
        id: 1,
        device: "d".repeat(64),
        request_id: "r".repeat(64),
        device_id: None,
        kind: RelayKind::Blob {
            pane: "p".repeat(64),
            name: "n".repeat(128),
            bytes,
        },
    };
    let frame = encode(&request).unwrap();
    assert!(
        frame.len() <= crate::wire::MAX_FRAME,
        "{} bytes",
        frame.len()
    );
    // One length and the bytes, not a sequence of elements: the frame is barely larger.
    assert!(frame.len() < MAX_BLOB + 1024, "{} bytes", frame.len());
    assert_eq!(decode::<RelayRequest>(&frame).unwrap(), request);
}

#[test]
fn the_sent_log_and_commands_round_trip_and_fit_only_their_kinds() {
    let lines = RelayOk::SentLines(SentLines {
        recording: true,
        lines: vec![SentEntry {
            id: 3,
            ts: "2026-12-02T07:00:00Z".to_owned(),
            pane: "p1".to_owned(),
            line: "ls -la".to_owned(),
        }],
    });
    let m = MemberMessage::Response(ok(2, lines.clone()));
    assert_eq!(decode::<MemberMessage>(&encode(&m).unwrap()).unwrap(), m);
    assert!(RelayKind::SentList.fits(&lines));
    assert!(!RelayKind::SentClear.fits(&lines));
    assert!(RelayKind::SentClear.fits(&RelayOk::Discarded(4)));
    assert!(RelayKind::SentDiscard { id: 1 }.fits(&RelayOk::Discarded(1)));
    assert!(!RelayKind::SentList.fits(&RelayOk::Discarded(1)));
    let command = RelayKind::Command {
        command: "make".to_owned(),
    };
    assert!(command.is_write());
    assert!(!RelayKind::SentList.is_write());
    assert!(!command.fits(&RelayOk::Done));
    let err = MemberMessage::Response(RelayResponse {
        id: 5,
        result: Err(RelayError::Forbidden("off".to_owned())),
    });
    assert_eq!(
        decode::<MemberMessage>(&encode(&err).unwrap()).unwrap(),
        err
    );
}

#[test]
fn an_upload_past_the_cap_does_not_decode_though_it_fits_a_frame() {
    let request = RelayRequest {
        id: 1,
        device: "d".to_owned(),
        request_id: "r".to_owned(),
        device_id: None,
        kind: RelayKind::Blob {
            pane: "p1".to_owned(),
            name: "big.bin".to_owned(),
            bytes: vec![0; MAX_BLOB + 1],
        },
    };
    // Only a lead that skipped its own check sends this; the member refuses it unread.
    let frame = encode(&request).unwrap();
    assert!(frame.len() <= crate::wire::MAX_FRAME);
    assert!(decode::<RelayRequest>(&frame).is_err());
}

#[test]
fn sessions_and_a_new_window_round_trip_and_fit_only_their_kinds() {
    let sessions = RelayOk::Sessions(vec![TmuxSession {
        session: "t1:work".to_owned(),
        name: "work".to_owned(),
        socket: 1,
    }]);
    let m = MemberMessage::Response(ok(7, sessions.clone()));
    assert_eq!(decode::<MemberMessage>(&encode(&m).unwrap()).unwrap(), m);
    assert!(RelayKind::Sessions.fits(&sessions));
    assert!(!RelayKind::Sessions.is_write());
    let window = RelayKind::CreateWindow {
        name: Some("build".to_owned()),
        starter: None,
        folder: Some("~/src".to_owned()),
        session: "t0:main".to_owned(),
    };
    let request = RelayRequest {
        id: 9,
        device: "phone".to_owned(),
        request_id: "r-9".to_owned(),
        device_id: None,
        kind: window.clone(),
    };
    assert_eq!(
        decode::<RelayRequest>(&encode(&request).unwrap()).unwrap(),
        request
    );
    assert!(window.is_write());
    assert!(!window.fits(&sessions));
    assert!(!RelayKind::Sessions.fits(&RelayOk::Done));
}

#[test]
fn colour_snapshots_and_events_round_trip_and_fit_only_their_kinds() {
    let attrs = ScreenAttrs {
        styles: vec![Style {
            fg: Some(Colour::Rgb(1, 2, 3)),
            bg: Some(Colour::Indexed(4)),
            bold: true,
            ..Style::default()
        }],
        rows: vec![vec![Run {
            start: 0,
            len: 2,
            style: 0,
        }]],
    };
    let colour_ok = RelayOk::SnapshotColour(ColourSnapshot {
        snapshot: snapshot(),
        attrs: attrs.clone(),
    });
    let m = MemberMessage::Response(ok(1, colour_ok.clone()));
    assert_eq!(decode::<MemberMessage>(&encode(&m).unwrap()).unwrap(), m);
    let kind = RelayKind::SnapshotColour {
        pane: "t0-3".to_owned(),
        scrollback: None,
    };
    assert!(kind.fits(&colour_ok));
    assert!(
        !kind.fits(&RelayOk::Snapshot(snapshot())),
        "a plain snapshot"
    );
    assert!(
        !snapshot_kind().fits(&colour_ok),
        "colours for a plain request"
    );
    let subscribe = RelayKind::SubscribeColour {
        pane: "p1".to_owned(),
        last_seq: Some(3),
    };
    assert!(subscribe.is_subscribe());
    assert!(subscribe.fits(&RelayOk::Subscribed));
    assert!(!subscribe.is_write() && !kind.is_write());
    let event = MemberMessage::ColourEvent(ColourEvent {
        event: StreamEvent {
            stream: 5,
            seq: 10,
            cursor: Cursor { x: 0, y: 1 },
            cols: 80,
            height: 24,
            full: true,
            rows: BTreeMap::from([(0, "hello".to_owned())]),
        },
        attrs: EventAttrs {
            styles: BTreeMap::from([(0, attrs.styles[0])]),
            rows: BTreeMap::from([(0, attrs.rows[0].clone())]),
        },
    });
    assert_eq!(
        decode::<MemberMessage>(&encode(&event).unwrap()).unwrap(),
        event
    );
}

#[test]
fn a_starter_row_crosses_the_wire_as_its_spec_and_is_a_write() {
    for spec in [
        RowSpec::Template {
            agent: "claude".to_owned(),
            model: Some("sonnet".to_owned()),
            no_prompts: true,
        },
        RowSpec::Line {
            line: "make test".to_owned(),
        },
    ] {
        let request = RelayRequest {
            id: 9,
            device: "phone".to_owned(),
            request_id: "r-9".to_owned(),
            device_id: None,
            kind: RelayKind::CreateRow {
                row: "Mine".to_owned(),
                name: None,
                spec,
                folder: Some("~/src".to_owned()),
            },
        };
        assert_eq!(
            decode::<RelayRequest>(&encode(&request).unwrap()).unwrap(),
            request
        );
        assert!(request.kind.is_write());
        assert!(!request.kind.fits(&RelayOk::Done));
    }
}
