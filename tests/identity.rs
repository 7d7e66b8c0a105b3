//! Identity at the door (SPEC §14, decision 0073) behind a real reverse proxy: Debian's nginx in
//! front of a real `collie bridge`, setting the headers as `tailscale serve` does.
//!
//! How the proxy stands in for `tailscale serve`: `tailscale serve` names the tailnet identity of
//! the *connecting node*, which the client cannot choose by any header. So nginx gets one server
//! block per node — its own loopback port — and each block removes every client-sent
//! `Tailscale-User-*` header and sets `Tailscale-User-Login` / `Tailscale-User-Name` itself (or
//! none, as for a tagged node). A client picks a node by the port it connects to, never by what it
//! sends. The bridge listens on every address (`0.0.0.0`), so nginx reaches it from loopback (the
//! proxy) while the test also reaches it straight over this machine's own non-loopback address,
//! a peer whose identity headers must never be read.
//!
//! nginx and the bridge are stopped on every path, pass or fail: nginx by [`Nginx`]'s `Drop`
//! (its whole process group), the bridge by `TestBridge`'s.

mod support;

use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::{json_of, wait_for, Opts, TestBridge};

/// The headers a node's server block sets; every other `Tailscale-User-*` and `X-Device-Id`
/// header a client sends is removed.
#[derive(Clone, Copy, Default)]
struct Node {
    login: Option<&'static str>,
    name: Option<&'static str>,
    device: Option<&'static str>,
}

/// A running nginx with one loopback port per node, stopped (with its whole process group) on
/// drop.
struct Nginx {
    child: Child,
    ports: Vec<u16>,
    _dir: tempfile::TempDir,
}

/// A loopback port free right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// nginx's value for a header the proxy sets: the value, or empty (nginx then sends none — and
/// never the client's, since the header is named by `proxy_set_header`).
fn set(v: Option<&str>) -> String {
    format!("\"{}\"", v.unwrap_or(""))
}

impl Nginx {
    fn start(bridge_port: u16, nodes: &[Node]) -> Nginx {
        let dir = tempfile::Builder::new()
            .prefix("collie-nginx-")
            .tempdir()
            .expect("tempdir");
        let d = dir.path().display();
        let ports: Vec<u16> = nodes.iter().map(|_| free_port()).collect();
        let mut servers = String::new();
        for (node, port) in nodes.iter().zip(&ports) {
            servers.push_str(&format!(
                r#"
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{bridge_port};
            proxy_http_version 1.1;
            proxy_set_header Host 127.0.0.1:{bridge_port};
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header Tailscale-User-Login {login};
            proxy_set_header Tailscale-User-Name {name};
            proxy_set_header Tailscale-User-Profile-Pic "";
            proxy_set_header X-Device-Id {device};
        }}
    }}"#,
                login = set(node.login),
                name = set(node.name),
                device = set(node.device),
            ));
        }
        let conf = format!(
            r#"
master_process off;
daemon off;
error_log {d}/error.log;
pid {d}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    {servers}
}}
"#
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("write nginx.conf");
        let child = Command::new(nginx_bin())
            .arg("-p")
            .arg(dir.path())
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start nginx (apt-get install nginx)");
        let nginx = Nginx {
            child,
            ports,
            _dir: dir,
        };
        let up = wait_for(Duration::from_secs(10), || {
            nginx
                .ports
                .iter()
                .all(|p| TcpStream::connect(("127.0.0.1", *p)).is_ok())
                .then_some(())
        });
        if up.is_none() {
            let log = std::fs::read_to_string(nginx._dir.path().join("error.log"));
            panic!("nginx did not listen within 10 s: {log:?}");
        }
        nginx
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // The whole group: nginx and anything it started.
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nginx: on `PATH`, or where Debian puts it (`/usr/sbin` is not on every user's `PATH`).
fn nginx_bin() -> String {
    for p in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(p).exists() {
            return p.to_owned();
        }
    }
    "nginx".to_owned()
}

/// A request to `127.0.0.1:port` (a node's door on the proxy): status and JSON body.
fn call(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let url = format!("http://127.0.0.1:{port}{path}");
    let (status, _, text) = support::http(method, &url, token, body, headers);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A GET sent straight to the bridge at `ip:port` (no proxy), with `headers`: status and body.
/// Written by hand so that the Host header names an allowed host whatever `ip` is.
fn straight(ip: IpAddr, port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut s = TcpStream::connect((ip, port)).expect("connect to the bridge");
    s.set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    let mut head =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("send");
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// An address of this machine that is not loopback (the first of `hostname -I`).
fn own_address() -> IpAddr {
    let out = Command::new("hostname")
        .arg("-I")
        .output()
        .expect("hostname -I");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|a| a.parse::<IpAddr>().ok())
        .find(|a| a.is_ipv4() && !a.is_loopback())
        .expect("this test needs a non-loopback IPv4 address on this machine (hostname -I)")
}

fn bridge(env: &[(&str, &str)]) -> TestBridge {
    let mut all = vec![("COLLIE_HOST".to_owned(), "0.0.0.0".to_owned())];
    all.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    TestBridge::start_with(Opts {
        env: all,
        ..Opts::default()
    })
}

/// The `security.denied` lines of `identity required`, once the audit actor wrote one.
fn identity_denials(b: &TestBridge, gate: &str) -> Vec<Value> {
    wait_for(Duration::from_secs(10), || {
        let lines: Vec<Value> = b
            .audit_lines()
            .into_iter()
            .filter(|l| {
                l["event"] == "security.denied"
                    && l["detail"]["reason"] == "identity required"
                    && l["detail"]["gate"] == gate
            })
            .collect();
        (!lines.is_empty()).then_some(lines)
    })
    .unwrap_or_else(|| panic!("no `identity required` line for {gate}"))
}

fn refused_by(answer: (u16, Value), gate: &str, what: &str) {
    assert_eq!(answer.0, 403, "{what}: {}", answer.1);
    assert_eq!(
        answer.1,
        json!({"error": "identity required", "gate": gate}),
        "{what}"
    );
}

#[test]
fn behind_a_tailscale_like_proxy_only_a_trusted_login_pairs_and_is_named() {
    let b = bridge(&[("COLLIE_TRUSTED_USER", "alice@example.com, jörg@example.com")]);
    let alice = Node {
        login: Some("alice@example.com"),
        name: Some("Alice"),
        ..Node::default()
    };
    let mallory = Node {
        login: Some("mallory@example.com"),
        name: Some("Mallory"),
        ..Node::default()
    };
    let tagged = Node::default();
    let jorg = Node {
        login: Some("=?utf-8?q?j=C3=B6rg@example.com?="),
        name: Some("=?utf-8?q?J=C3=B6rg?="),
        ..Node::default()
    };
    let proxy = Nginx::start(b.port, &[alice, mallory, tagged, jorg]);
    let [alice, mallory, tagged, jorg] = [0, 1, 2, 3].map(|i| proxy.ports[i]);
    let pair = |port: u16, label: &str, headers: &[(&str, &str)]| {
        let code = b.code("full");
        call(
            port,
            "POST",
            "/api/pair",
            None,
            Some(&json!({"code": code, "label": label})),
            headers,
        )
    };

    // `collie doctor` says what each gate requires.
    let doctor = String::from_utf8_lossy(&b.cli(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(
            "identity gate tailscale: Tailscale-User-Login must name alice@example.com, jörg@example.com"
        ) && doctor.contains("identity gate device-header: off"),
        "{doctor}"
    );

    // Health stays open and names no one, through the proxy or not.
    let (s, health) = call(tagged, "GET", "/api/health", None, None, &[]);
    assert_eq!(s, 200, "{health}");

    // No header (a tagged node): refused, pairing included, and audited.
    refused_by(pair(tagged, "tagged", &[]), "tailscale", "no login");
    refused_by(
        call(tagged, "GET", "/api/panes", None, None, &[]),
        "tailscale",
        "no login, no token",
    );
    let denied = identity_denials(&b, "tailscale");
    assert_eq!(denied[0]["detail"]["cause"], "missing", "{denied:?}");

    // A login the bridge does not trust.
    refused_by(pair(mallory, "mallory", &[]), "tailscale", "wrong login");

    // A header forged by the client is removed by the proxy: the node's own identity counts.
    let forged = [
        ("Tailscale-User-Login", "alice@example.com"),
        ("Tailscale-User-Name", "Alice"),
    ];
    refused_by(
        pair(tagged, "forged", &forged),
        "tailscale",
        "forged on a tagged node",
    );
    refused_by(
        pair(mallory, "forged", &forged),
        "tailscale",
        "forged over a wrong login",
    );

    // A trusted login pairs; the device list and the CLI say who paired it; audit lines name them.
    let (s, paired) = pair(alice, "alice-phone", &[]);
    assert_eq!(s, 200, "{paired}");
    let token = paired["token"].as_str().expect("token").to_owned();
    let (s, list) = call(alice, "GET", "/api/devices", Some(&token), None, &[]);
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["devices"][0]["label"], "alice-phone");
    assert_eq!(list["devices"][0]["paired_by"], "alice@example.com");
    let cli = b.cli_ok(&["devices", "list"]);
    assert!(cli.contains("paired by alice@example.com"), "{cli}");
    let cli = json_of(&b.cli_ok(&["devices", "list", "--json"]));
    assert_eq!(cli["devices"][0]["paired_by"], "alice@example.com");
    let lines = b.audit_lines();
    let line = lines
        .iter()
        .find(|l| l["event"] == "device.paired")
        .expect("a device.paired line");
    assert_eq!(line["detail"]["identity"], "alice@example.com", "{line}");
    // A write names the person beside the device.
    let (s, created) = call(
        alice,
        "POST",
        "/api/panes",
        Some(&token),
        Some(&json!({"machine": "local", "name": "gated"})),
        &[],
    );
    assert_eq!(s, 200, "{created}");
    let create = wait_for(Duration::from_secs(10), || {
        b.audit_lines()
            .into_iter()
            .find(|l| l["event"] == "pane.create")
    })
    .expect("a pane.create line");
    assert_eq!(create["device"], "alice-phone", "{create}");
    assert_eq!(
        create["detail"]["identity"], "alice@example.com",
        "{create}"
    );
    assert_eq!(create["detail"]["identity_gate"], "tailscale", "{create}");

    // Pairing and identity must both pass: alice's token through another node is refused, and
    // alice's node without a token is not paired.
    refused_by(
        call(mallory, "GET", "/api/devices", Some(&token), None, &[]),
        "tailscale",
        "a token through a wrong login",
    );
    let (s, v) = call(alice, "GET", "/api/devices", None, None, &[]);
    assert_eq!((s, v), (403, json!({"error": "device not paired"})));
    let unpaired = wait_for(Duration::from_secs(10), || {
        b.audit_lines().into_iter().find(|l| {
            l["event"] == "security.denied" && l["detail"]["reason"] == "device not paired"
        })
    })
    .expect("the refusal is audited");
    assert_eq!(
        unpaired["detail"]["identity"], "alice@example.com",
        "{unpaired}"
    );

    // MCP is behind the same door.
    let (s, v) = call(
        mallory,
        "POST",
        "/mcp",
        Some(&token),
        Some(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
        &[("Accept", "application/json, text/event-stream")],
    );
    assert_eq!(
        (s, v),
        (
            403,
            json!({"error": "identity required", "gate": "tailscale"})
        )
    );

    // An RFC 2047 login (what `tailscale serve` sends for a name that is not ASCII) is decoded.
    let (s, paired) = pair(jorg, "jorg-phone", &[]);
    assert_eq!(s, 200, "{paired}");
    let (_, list) = call(alice, "GET", "/api/devices", Some(&token), None, &[]);
    let jorg_row = list["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .find(|d| d["label"] == "jorg-phone")
        .cloned()
        .expect("jorg-phone listed");
    assert_eq!(jorg_row["paired_by"], "jörg@example.com");

    // Straight to the bridge from a peer that is not the proxy: the header is never read, so the
    // request carries no identity, whatever it claims.
    let own = own_address();
    let (s, v) = straight(
        own,
        b.port,
        "/api/devices",
        &[
            ("Tailscale-User-Login", "alice@example.com"),
            ("Authorization", &format!("Bearer {token}")),
        ],
    );
    assert_eq!(
        (s, v),
        (
            403,
            json!({"error": "identity required", "gate": "tailscale"})
        )
    );
    let (s, _) = straight(own, b.port, "/api/health", &[]);
    assert_eq!(s, 200, "health stays open to every peer");
    let causes = wait_for(Duration::from_secs(10), || {
        identity_denials(&b, "tailscale")
            .iter()
            .any(|l| l["detail"]["cause"] == "not from the proxy")
            .then_some(())
    });
    assert!(
        causes.is_some(),
        "the refusal of a non-proxy peer is audited"
    );
}

#[test]
fn the_device_header_gate_lets_in_only_the_values_it_allows() {
    let b = bridge(&[
        ("COLLIE_DEVICE_HEADER", "X-Device-Id"),
        ("COLLIE_DEVICE_ALLOW", "laptop-7,phone-2"),
    ]);
    let proxy = Nginx::start(
        b.port,
        &[
            Node {
                device: Some("phone-2"),
                ..Node::default()
            },
            Node {
                device: Some("phone-3"),
                ..Node::default()
            },
            Node::default(),
        ],
    );
    let [allowed, other, none] = [0, 1, 2].map(|i| proxy.ports[i]);
    let pair = |port: u16, label: &str, headers: &[(&str, &str)]| {
        let code = b.code("read");
        call(
            port,
            "POST",
            "/api/pair",
            None,
            Some(&json!({"code": code, "label": label})),
            headers,
        )
    };
    let doctor = String::from_utf8_lossy(&b.cli(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(
            "identity gate device-header: x-device-id must carry one of 2 allowed value(s)"
        ) && doctor.contains("identity gate tailscale: off"),
        "{doctor}"
    );
    refused_by(pair(none, "a", &[]), "device-header", "no device header");
    refused_by(
        pair(other, "b", &[]),
        "device-header",
        "a value not allowed",
    );
    refused_by(
        pair(none, "c", &[("X-Device-Id", "phone-2")]),
        "device-header",
        "a device header forged by the client",
    );
    let denied = identity_denials(&b, "device-header");
    assert!(!denied.is_empty());
    let (s, paired) = pair(allowed, "tablet", &[]);
    assert_eq!(s, 200, "{paired}");
    let token = paired["token"].as_str().expect("token");
    let (s, list) = call(allowed, "GET", "/api/devices", Some(token), None, &[]);
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["devices"][0]["paired_by"], "phone-2");
    // Straight from a peer that is not the proxy: refused, whatever it sends.
    let (s, v) = straight(
        own_address(),
        b.port,
        "/api/devices",
        &[
            ("X-Device-Id", "phone-2"),
            ("Authorization", &format!("Bearer {token}")),
        ],
    );
    assert_eq!(
        (s, v),
        (
            403,
            json!({"error": "identity required", "gate": "device-header"})
        )
    );
}
