//! A tiny HTTP/1.1 server on loopback for the model stand-ins (`model_api`, `responses_api`): it
//! reads each request on a keep-alive connection (request line, headers, a `Content-Length` body
//! parsed as JSON) and writes the reply a stand-in's script gives for it, whole, with its length.
//! Nothing here knows a model API; the scripts do.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde_json::Value;

/// Most bytes of a request body the server reads (a long conversation's history stays far below).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One request, as the scripts need it.
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target, e.g. `/v1/responses`.
    pub path: String,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
}

/// One reply: a 200 with this content type and body.
pub struct Reply {
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    /// A JSON reply.
    pub fn json(v: &Value) -> Reply {
        Reply {
            content_type: "application/json",
            body: v.to_string().into_bytes(),
        }
    }

    /// A Server-Sent Events reply: each `(event, data)` as `event: …` and `data: …` lines.
    pub fn sse(events: &[(String, Value)]) -> Reply {
        let body: String = events
            .iter()
            .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
            .collect();
        Reply {
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }
}

/// The server; stops when dropped.
pub struct Loopback {
    pub port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Loopback {
    /// Listens on an OS-chosen loopback port and answers every request with `script`.
    pub fn start(script: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the loopback stand-in");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let script = Arc::new(script);
        let thread = std::thread::spawn(move || {
            // Drop wakes this accept with a connection of its own after setting `stop`.
            while let Ok((stream, _)) = listener.accept() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let script = Arc::clone(&script);
                std::thread::spawn(move || serve(stream, &*script));
            }
        });
        Loopback {
            port,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves requests on one keep-alive connection until the client closes it.
fn serve(stream: TcpStream, script: &dyn Fn(&Request) -> Reply) {
    let Ok(mut write) = stream.try_clone() else {
        return;
    };
    let mut read = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if read.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if read.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        if length > MAX_BODY {
            return;
        }
        let mut body = vec![0u8; length];
        if read.read_exact(&mut body).is_err() {
            return;
        }
        let mut words = request_line.split_whitespace();
        let request = Request {
            method: words.next().unwrap_or("GET").to_owned(),
            path: words.next().unwrap_or("/").to_owned(),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        };
        let reply = script(&request);
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n",
            reply.content_type,
            reply.body.len()
        );
        if write.write_all(head.as_bytes()).is_err() || write.write_all(&reply.body).is_err() {
            return;
        }
    }
}
