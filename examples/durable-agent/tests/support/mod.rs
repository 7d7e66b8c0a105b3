//! The harness: the real `collie-durable-example` binary in a temp dir, on a unix socket or on
//! HTTPS on loopback (a certificate from a test CA made here with rcgen), and a plain HTTP/1.1
//! client (hyper over a `UnixStream` or tokio-rustls) that speaks the wire as the bridge does.
//! The process is killed and the temp dir removed on drop, pass or fail.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use collie_actors::durable::wire;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_collie-durable-example"))
}

/// A running agent, killed on drop.
pub struct Agent {
    child: Child,
    pub dir: tempfile::TempDir,
    pub socket: Option<PathBuf>,
    pub https: Option<(SocketAddr, Arc<rustls::ClientConfig>)>,
    /// Where the agent's stderr goes.
    pub log: PathBuf,
}

/// Why an agent did not come up: its exit status and stderr.
#[derive(Debug)]
pub struct Failed {
    pub status: Option<ExitStatus>,
    pub stderr: String,
}

impl Agent {
    /// Starts the agent on `<dir>/run/agent.sock` (the folder made by the agent) with `args`.
    pub fn socket(args: &[&str]) -> Agent {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("run").join("agent.sock");
        Agent::start_in(dir, &socket, args).expect("the agent starts")
    }

    /// Starts the agent on `socket` (inside `dir`), or says why it would not start.
    pub fn start_in(dir: tempfile::TempDir, socket: &Path, args: &[&str]) -> Result<Agent, Failed> {
        let mut cmd = Command::new(bin());
        cmd.arg("--socket").arg(socket).args(args);
        Agent::spawn(dir, cmd, Some(socket.to_owned()), None)
    }

    /// Starts the agent on HTTPS on loopback; `env` holds the token variables.
    pub fn https(args: &[&str], env: &[(&str, &str)]) -> Result<Agent, Failed> {
        let dir = tempfile::tempdir().expect("temp dir");
        let (cert, key, client) = test_pki(dir.path());
        let mut cmd = Command::new(bin());
        cmd.args(["--listen", "127.0.0.1:0", "--cert"])
            .arg(cert)
            .arg("--key")
            .arg(key)
            .args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Agent::spawn(dir, cmd, None, Some(client))
    }

    fn spawn(
        dir: tempfile::TempDir,
        mut cmd: Command,
        socket: Option<PathBuf>,
        client: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Agent, Failed> {
        let log = dir.path().join("agent.log");
        let stderr = std::fs::File::create(&log).expect("log file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("the example binary runs");
        let mut agent = Agent {
            child,
            dir,
            socket,
            https: None,
            log,
        };
        // The agent prints `listening on <where>` once it accepts connections; read that line on
        // a thread so a silent agent fails the test after the deadline instead of hanging it.
        let stdout = agent.child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
        let Some(at) = line.trim().strip_prefix("listening on ") else {
            let status = agent.wait_exit(Duration::from_secs(5));
            return Err(Failed {
                status,
                stderr: agent.stderr(),
            });
        };
        if let Some(client) = client {
            agent.https = Some((at.parse().expect("a socket address"), client));
        }
        Ok(agent)
    }

    /// What the agent logged so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("a pid"));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    }

    /// One request with `Collie-Wire: 1` (and `extra` headers).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Answer {
        let mut headers = vec![("collie-wire", "1")];
        headers.extend_from_slice(extra);
        self.raw(method, path, &headers, body).await
    }

    /// `GET /v1/state`, parsed as the bridge parses it.
    pub async fn state(&self, extra: &[(&str, &str)]) -> (wire::State, String) {
        let a = self.call("GET", wire::STATE_PATH, extra, None).await;
        assert_eq!(a.status, 200, "state: {}", a.text());
        let state = serde_json::from_slice(&a.body).expect("the state parses as wire::State");
        (state, a.header("etag").expect("an ETag").to_owned())
    }

    /// A write, with the path and body the bridge would send.
    pub async fn write(
        &self,
        conversation: &str,
        write: &wire::Write,
        extra: &[(&str, &str)],
    ) -> Answer {
        let body = write.body().to_string();
        let mut headers = vec![("content-type", "application/json")];
        headers.extend_from_slice(extra);
        self.call(
            "POST",
            &write.path(conversation),
            &headers,
            Some(body.as_bytes()),
        )
        .await
    }

    /// One request with exactly these headers, on a fresh connection.
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Answer {
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "agent");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(Full::new(Bytes::copy_from_slice(body.unwrap_or_default())))
            .expect("a request");
        let answer = match (&self.socket, &self.https) {
            (Some(socket), _) => {
                let stream = tokio::net::UnixStream::connect(socket)
                    .await
                    .expect("connect");
                exchange(TokioIo::new(stream), req).await
            }
            (None, Some((addr, client))) => {
                let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
                let tls = tokio_rustls::TlsConnector::from(Arc::clone(client))
                    .connect(ServerName::try_from("localhost").expect("name"), tcp)
                    .await
                    .expect("TLS");
                exchange(TokioIo::new(tls), req).await
            }
            (None, None) => unreachable!("an agent has a transport"),
        };
        answer
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn exchange<IO>(io: IO, req: hyper::Request<Full<Bytes>>) -> Answer
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .expect("handshake");
    let driver = tokio::spawn(conn);
    let res = tokio::time::timeout(Duration::from_secs(20), sender.send_request(req))
        .await
        .expect("an answer within 20 s")
        .expect("an HTTP answer");
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let body = res
        .into_body()
        .collect()
        .await
        .expect("the body")
        .to_bytes();
    driver.abort();
    Answer {
        status,
        headers,
        body,
    }
}

/// An answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// A CA and a `localhost`/127.0.0.1 leaf signed by it: the leaf's PEM files for the agent, and
/// a client configuration that trusts only the CA.
fn test_pki(dir: &Path) -> (PathBuf, PathBuf, Arc<rustls::ClientConfig>) {
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).expect("CA cert");
    let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
    let mut leaf =
        rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("leaf params");
    leaf.subject_alt_names
        .push(rcgen::SanType::IpAddress("127.0.0.1".parse().expect("ip")));
    let leaf_cert = leaf
        .signed_by(&leaf_key, &ca_cert, &ca_key)
        .expect("leaf cert");
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, leaf_cert.pem()).expect("write cert");
    std::fs::write(&key, leaf_key.serialize_pem()).expect("write key");
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca_cert.der().to_vec()))
        .expect("trust the CA");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    (cert, key, Arc::new(client))
}

/// Polls `f` every 20 ms until it returns `Some` or `timeout` passes.
pub async fn wait_for<T, F>(timeout: Duration, mut f: impl FnMut() -> F) -> Option<T>
where
    F: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
