#![allow(dead_code, unreachable_pub)]
//! A scripted durable agent for the durable tests: a real HTTP/1.1 server on a unix socket or on
//! HTTPS (loopback, a certificate from a test CA made here) that answers each request as the
//! test's script says — including the ways a hostile or broken agent answers: a 401, a body of
//! 100 MB, invalid UTF-8, deeply nested JSON, an ETag that never changes, never answering at
//! all. It records every request, so a test can check what the bridge sent (and what it did not).
//! The well-behaved agent is the reference one under `examples/`; this one exists to misbehave.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

// The includer brings `support/test_ca.rs` in as `test_ca` beside this module (one copy even
// when it includes both HTTPS test services).
use crate::test_ca::TestCa;

/// One request the agent got.
#[derive(Debug, Clone)]
pub struct Got {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Got {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What to answer.
pub enum Answer {
    /// Status, extra headers (`Collie-Wire: 1` is added unless `wire` is false), body.
    Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        wire: bool,
    },
    /// A 200 whose body is `bytes` long (sent in chunks, never held whole), with an honest
    /// `Content-Length` when `declared`.
    Huge { bytes: usize, declared: bool },
    /// Read the request, never answer (until the agent stops).
    Hang,
}

impl Answer {
    /// A 200 with this JSON and `Collie-Wire: 1`.
    pub fn json(v: &serde_json::Value) -> Answer {
        Answer::Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: v.to_string().into_bytes(),
            wire: true,
        }
    }

    /// A 200 with this JSON and an ETag.
    pub fn json_etag(v: &serde_json::Value, etag: &str) -> Answer {
        Answer::Reply {
            status: 200,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("etag".into(), etag.into()),
            ],
            body: v.to_string().into_bytes(),
            wire: true,
        }
    }

    /// A bare status with `Collie-Wire: 1`.
    pub fn status(status: u16) -> Answer {
        Answer::Reply {
            status,
            headers: vec![],
            body: vec![],
            wire: true,
        }
    }
}

type Script = dyn Fn(&Got) -> Answer + Send + Sync;

/// The running agent; stops on drop.
pub struct ScriptedAgent {
    /// The socket path, for a socket agent.
    pub socket: Option<PathBuf>,
    /// The HTTPS port, for an HTTPS agent.
    pub port: Option<u16>,
    /// The CA that signed its certificate (PEM), for an HTTPS agent.
    pub ca_file: Option<PathBuf>,
    got: Arc<Mutex<Vec<Got>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedAgent {
    /// Serves `script` on a unix socket at `path` (its folder must exist; modes are the test's
    /// business: a test that wants a private socket sets them).
    pub fn socket(path: &Path, script: impl Fn(&Got) -> Answer + Send + Sync + 'static) -> Self {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).expect("bind the agent's socket");
        listener.set_nonblocking(true).expect("nonblocking");
        let (got, stop) = (Arc::default(), Arc::new(AtomicBool::new(false)));
        let script: Arc<Script> = Arc::new(script);
        let (g, s) = (Arc::clone(&got), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        let (script, g, s) = (Arc::clone(&script), Arc::clone(&g), Arc::clone(&s));
                        std::thread::spawn(move || serve(stream, &*script, &g, &s));
                    }
                    // Polled so that drop can stop the loop without a connection of its own.
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        ScriptedAgent {
            socket: Some(path.to_owned()),
            port: None,
            ca_file: None,
            got,
            stop,
            thread: Some(thread),
        }
    }

    /// Serves `script` over HTTPS on loopback; the CA's certificate is written to
    /// `<dir>/agent-ca.pem`. `names` are the names the certificate holds (`localhost` and
    /// `127.0.0.1` unless a test wants a wrong one).
    pub fn https(
        dir: &Path,
        names: &[&str],
        script: impl Fn(&Got) -> Answer + Send + Sync + 'static,
    ) -> Self {
        let pki = TestCa::issue("collie test durable CA", names);
        let ca_file = dir.join("agent-ca.pem");
        pki.write_ca(&ca_file);
        let config = pki.server_config();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let (got, stop) = (Arc::default(), Arc::new(AtomicBool::new(false)));
        let script: Arc<Script> = Arc::new(script);
        let (g, s) = (Arc::clone(&got), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((tcp, _)) => {
                        let _ = tcp.set_nonblocking(false);
                        let Ok(conn) = rustls::ServerConnection::new(Arc::clone(&config)) else {
                            continue;
                        };
                        let (script, g, s) = (Arc::clone(&script), Arc::clone(&g), Arc::clone(&s));
                        std::thread::spawn(move || {
                            let tls = rustls::StreamOwned::new(conn, tcp);
                            serve(tls, &*script, &g, &s)
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        ScriptedAgent {
            socket: None,
            port: Some(port),
            ca_file: Some(ca_file),
            got,
            stop,
            thread: Some(thread),
        }
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port.expect("an HTTPS agent"))
    }

    /// Every request so far.
    pub fn got(&self) -> Vec<Got> {
        self.got.lock().expect("lock").clone()
    }

    /// Forgets the requests so far.
    pub fn clear(&self) {
        self.got.lock().expect("lock").clear();
    }
}

impl Drop for ScriptedAgent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(p) = &self.socket {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Serves requests on one connection until the client closes it or the agent stops.
fn serve<S: Read + Write>(stream: S, script: &Script, got: &Mutex<Vec<Got>>, stop: &AtomicBool) {
    let mut conn = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if conn.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = Vec::new();
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if conn.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                let (k, v) = (k.trim().to_owned(), v.trim().to_owned());
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.parse().unwrap_or(0).min(1 << 20);
                }
                headers.push((k, v));
            }
        }
        let mut body = vec![0u8; length];
        if conn.read_exact(&mut body).is_err() {
            return;
        }
        let mut words = line.split_whitespace();
        let request = Got {
            method: words.next().unwrap_or("").to_owned(),
            path: words.next().unwrap_or("").to_owned(),
            headers,
            body,
        };
        got.lock().expect("lock").push(request.clone());
        let out = conn.get_mut();
        let written = match script(&request) {
            Answer::Reply {
                status,
                headers,
                body,
                wire,
            } => {
                let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
                if wire {
                    head.push_str("collie-wire: 1\r\n");
                }
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                out.write_all(head.as_bytes())
                    .and_then(|()| out.write_all(&body))
                    .and_then(|()| out.flush())
            }
            Answer::Huge { bytes, declared } => {
                let mut head = "HTTP/1.1 200 OK\r\ncollie-wire: 1\r\n".to_owned();
                if declared {
                    head.push_str(&format!("content-length: {bytes}\r\n"));
                } else {
                    head.push_str("connection: close\r\n");
                }
                head.push_str("\r\n");
                let chunk = vec![b'['; 64 * 1024];
                let mut result = out.write_all(head.as_bytes());
                let mut sent = 0;
                while result.is_ok() && sent < bytes && !stop.load(Ordering::Relaxed) {
                    let n = chunk.len().min(bytes - sent);
                    result = out.write_all(&chunk[..n]);
                    sent += n;
                }
                let _ = result;
                return;
            }
            Answer::Hang => {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                return;
            }
        };
        if written.is_err() {
            return;
        }
    }
}
