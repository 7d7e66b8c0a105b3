//! Authorization holds for the whole life of a stream (SPEC §3.2, issue 9 hole 1): a phone that is
//! revoked or expires stops watching within a second — its own bridge's panes and members' panes
//! relayed through the lead alike — while other devices keep watching. Real bridges, a real crew
//! on loopback, real tmux.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{crew_bridge, json_of, wait_for, TestBridge};

fn bridge() -> TestBridge {
    crew_bridge(true, &[])
}

/// A stream being read on its own thread.
struct Watch {
    /// Each event's `data` as it arrives (and `closed` events as `{"closed": …}`).
    events: mpsc::Receiver<Value>,
    /// Resolves to when the connection ended.
    ended: JoinHandle<Instant>,
}

fn watch(b: &TestBridge, token: &str, machine: &str, pane: &str) -> Watch {
    let mut s = TcpStream::connect(("127.0.0.1", b.port)).expect("connect");
    let req = format!(
        "GET /api/panes/{machine}/{pane}/stream HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\
         Authorization: Bearer {token}\r\nConnection: close\r\n\r\n",
        b.port
    );
    s.write_all(req.as_bytes()).expect("write");
    s.set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let (tx, events) = mpsc::channel();
    let ended = std::thread::spawn(move || {
        let mut reader = BufReader::new(s);
        let mut line = String::new();
        let mut closed = false;
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            if line.starts_with("event: closed") || line.starts_with("event:closed") {
                closed = true;
            } else if let Some(d) = line.strip_prefix("data:") {
                if let Ok(v) = serde_json::from_str::<Value>(d.trim()) {
                    let _ = tx.send(if closed {
                        serde_json::json!({ "closed": v })
                    } else {
                        v
                    });
                }
            }
            line.clear();
        }
        Instant::now()
    });
    // The first event (the whole screen) arrives at once.
    let first = events
        .recv_timeout(Duration::from_secs(10))
        .expect("a first event");
    assert_eq!(first["full"], true, "{first}");
    Watch { events, ended }
}

impl Watch {
    /// Waits for the stream to end; returns when it ended and the events that came before.
    fn end(self, within: Duration) -> (Instant, Vec<Value>) {
        let deadline = Instant::now() + within;
        while !self.ended.is_finished() {
            assert!(Instant::now() < deadline, "the stream is still open");
            std::thread::sleep(Duration::from_millis(10));
        }
        let at = self.ended.join().expect("reader");
        (at, self.events.try_iter().collect())
    }
}

/// Types a line into `machine`'s pane through the lead, as a full device.
fn type_line(lead: &TestBridge, token: &str, machine: &str, pane: &str, text: &str) {
    let (s, v) = lead.post(
        &format!("/api/panes/{machine}/{pane}/input"),
        Some(token),
        &serde_json::json!({"text": text, "keys": ["Enter"]}),
    );
    assert_eq!(s, 200, "{v}");
}

/// A lead with two members, a watching phone (`read`) and a typing one (`full`).
struct Crew {
    lead: TestBridge,
    _members: [TestBridge; 2],
    watcher: String,
    typist: String,
    /// (machine, pane) of the lead's own pane and one of each member's.
    panes: Vec<(String, String)>,
}

fn crew() -> Crew {
    let lead = bridge();
    let web1 = bridge();
    let web2 = bridge();
    lead.cli_ok(&["crew", "init"]);
    web1.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    web2.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-2"]);
    let watcher = lead.pair("watcher", "read");
    let typist = lead.pair("typist", "full");
    let panes = ["testbox", "web-1", "web-2"]
        .iter()
        .map(|m| ((*m).to_owned(), lead.tmux_pane_of(&typist, m)))
        .collect();
    Crew {
        lead,
        _members: [web1, web2],
        watcher,
        typist,
        panes,
    }
}

#[test]
fn a_revoked_phone_stops_watching_at_once_here_and_through_the_lead() {
    let c = crew();
    let watches: Vec<Watch> = c
        .panes
        .iter()
        .map(|(m, p)| watch(&c.lead, &c.watcher, m, p))
        .collect();
    // Another device watches on: only the revoked one is cut off.
    let other = watch(&c.lead, &c.typist, &c.panes[1].0, &c.panes[1].1);

    let revoked_at = Instant::now();
    c.lead.cli_ok(&["devices", "revoke", "watcher"]);
    for (w, (m, _)) in watches.into_iter().zip(&c.panes) {
        let (ended, events) = w.end(Duration::from_secs(5));
        let after = ended.duration_since(revoked_at);
        assert!(
            after < Duration::from_secs(1),
            "{m}: ended {after:?} after the revocation"
        );
        let closed = events.last().expect("a closing event");
        assert_eq!(
            closed["closed"]["error"], "device not paired",
            "{m}: {closed}"
        );
    }
    // Typing into the panes reaches no revoked stream (they are gone), and the other device
    // still sees it.
    for (m, p) in &c.panes {
        type_line(&c.lead, &c.typist, m, p, &format!("echo after-revoke-{m}"));
    }
    let seen = wait_for(Duration::from_secs(10), || {
        other
            .events
            .try_iter()
            .any(|e| e.to_string().contains("after-revoke-web-1"))
            .then_some(())
    });
    assert!(seen.is_some(), "the other device's stream stopped too");
    // And the revoked token opens nothing new.
    let (s, v) = c.lead.get(
        &format!("/api/panes/{}/{}/stream", c.panes[1].0, c.panes[1].1),
        Some(&c.watcher),
    );
    assert_eq!((s, v["error"].as_str()), (403, Some("device not paired")));
}

#[test]
fn an_expiring_phone_stops_watching_at_its_expiry_here_and_through_the_lead() {
    let c = crew();
    let watches: Vec<Watch> = c
        .panes
        .iter()
        .map(|(m, p)| watch(&c.lead, &c.watcher, m, p))
        .collect();
    c.lead.cli_ok(&["devices", "set-expiry", "watcher", "1m"]);
    let devices = json_of(&c.lead.cli_ok(&["devices", "list", "--json"]));
    let expires_at = devices["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .find(|d| d["label"] == "watcher")
        .and_then(|d| d["expires_at"].as_str())
        .expect("an expiry")
        .to_owned();
    let expiry =
        time::OffsetDateTime::parse(&expires_at, &time::format_description::well_known::Rfc3339)
            .expect("RFC 3339");
    // The streams keep going until the expiry…
    std::thread::sleep(Duration::from_secs(2));
    for (w, (m, _)) in watches.iter().zip(&c.panes) {
        assert!(!w.ended.is_finished(), "{m}: ended before the expiry");
    }
    // …and end within a second of it.
    for (w, (m, _)) in watches.into_iter().zip(&c.panes) {
        let (ended, events) = w.end(Duration::from_secs(75));
        let ended_utc = time::OffsetDateTime::now_utc() - ended.elapsed();
        let late = ended_utc - expiry;
        assert!(
            late < time::Duration::seconds(1) && late > -time::Duration::seconds(1),
            "{m}: ended {late} after the expiry"
        );
        let closed = events.last().expect("a closing event");
        assert_eq!(closed["closed"]["error"], "device expired", "{m}: {closed}");
    }
}

/// Streams of one member's pane opened through the lead in the test below: well past the 16
/// subscriptions per member the relay once allowed, within each device's own cap (32).
const MANY: usize = 40;

#[test]
fn a_members_pane_is_followed_through_the_lead_by_as_many_streams_as_the_lead_allows() {
    let lead = bridge();
    let web1 = bridge();
    lead.cli_ok(&["crew", "init"]);
    web1.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    let phones: Vec<String> = (0..2)
        .map(|i| lead.pair(&format!("phone-{i}"), "read"))
        .collect();
    let typist = lead.pair("typist", "full");
    let pane = lead.tmux_pane_of(&typist, "web-1");
    let url = lead.url(&format!("/api/panes/web-1/{pane}/stream"));
    // Each stream opens (the lead's per-member relay limit once refused the 17th with 503
    // `resource limit`, though the lead allows 256 streams in all) and starts with the screen.
    let streams: Vec<_> = (0..MANY)
        .map(|i| {
            let resp = match ureq::get(&url)
                .set("Authorization", &format!("Bearer {}", phones[i % 2]))
                .timeout(Duration::from_secs(60))
                .call()
            {
                Ok(resp) => resp,
                Err(ureq::Error::Status(status, resp)) => panic!(
                    "stream {} of web-1's pane refused: {status} {}",
                    i + 1,
                    resp.into_string().unwrap_or_default()
                ),
                Err(e) => panic!("stream {}: {e}", i + 1),
            };
            let events = support::read_events(resp.into_reader());
            let (name, first) = events
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("stream {}: no first event", i + 1));
            assert_eq!(
                (name.as_str(), &first["full"]),
                ("message", &Value::Bool(true))
            );
            events
        })
        .collect();
    // And every one of them follows the pane: a line typed now shows on each.
    type_line(&lead, &typist, "web-1", &pane, "echo many-$((6*7))");
    for (i, events) in streams.iter().enumerate() {
        let seen = wait_for(Duration::from_secs(10), || {
            events
                .try_iter()
                .any(|(_, e)| e.to_string().contains("many-42"))
                .then_some(())
        });
        assert!(
            seen.is_some(),
            "stream {} does not show the typed line",
            i + 1
        );
    }
}

/// Each event's `seq` of a pane's stream, in order, for `within` (a dead hosted pane stays listed,
/// so its stream does not end).
fn seqs_for(b: &TestBridge, token: &str, pane: &str, within: Duration) -> Vec<u64> {
    let events = b.sse(&format!("/api/panes/local/{pane}/stream"), token);
    let mut seqs = Vec::new();
    let deadline = Instant::now() + within;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match events.recv_timeout(left) {
            Ok((name, event)) if name == "message" => {
                seqs.push(event["seq"].as_u64().expect("an event has a seq"));
            }
            Ok(_) | Err(_) => break,
        }
    }
    seqs
}

#[test]
fn every_event_of_a_stream_has_a_higher_seq_than_the_one_before_to_the_panes_end() {
    let b = crew_bridge(false, &[]);
    let phone = b.pair("phone", "read");
    let pane = b.hosted(
        "ends",
        &["sh", "-c", "echo one; sleep 1; echo two; sleep 1"],
    );
    let pane = pane["pane"].as_str().expect("a pane id").to_owned();
    // The pane ends after about 2 s; what its end causes comes at once.
    let seqs = seqs_for(&b, &phone, &pane, Duration::from_secs(6));
    assert!(!seqs.is_empty(), "the stream's first event");
    // The pane's end wakes its followers without a change of the screen: that is no event (it
    // once was one, with the seq of the one before).
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seqs in order, none twice: {seqs:?}"
    );
}

/// A bridge that stops (a SIGTERM, a restart) ends its streams at once with `restarting, try
/// again`, so the phone knows to reconnect and the stop does not wait out the server's grace for
/// streams that would never end by themselves.
#[test]
fn a_stopping_bridge_closes_its_streams_saying_it_is_restarting() {
    let mut b = bridge();
    let token = b.pair("phone", "read");
    let pane = b.first_tmux_pane(&token);
    let w = watch(&b, &token, "local", &pane);
    b.stop();
    let (_, events) = w.end(Duration::from_secs(10));
    let closed = events.last().expect("a closing event");
    assert_eq!(
        closed["closed"]["error"], "restarting, try again",
        "{events:?}"
    );
}
