// A stand-in for the reverse proxy a phone reaches the bridge through (`tailscale serve` or the
// like, SPEC §1): TLS on loopback with a throw-away self-signed certificate, HTTP/2 to the browser
// (HTTP/1.1 for a client without ALPN), plain HTTP/1.1 to the bridge with `X-Forwarded-Proto:
// https`. The benches use it to time a cold load the way a phone does one, every file multiplexed
// over one connection, instead of HTTP/1.1's six connections per host on plain loopback. A bench
// aid only: nothing here checks the certificate, so the browser context must ignore TLS errors.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';

/** Headers that belong to one hop (RFC 9110 §7.6.1) or to HTTP/2's framing, never forwarded. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'host']);

/** Starts the proxy in front of `target` (`http://127.0.0.1:port`); resolves `{ url, close }`. */
export async function startTlsProxy(target) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'collie-tls-proxy-'));
  const [key, cert] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-keyout', key, '-out', cert,
  ], { stdio: 'ignore' });
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  const server = http2.createSecureServer(
    { key: readFileSync(key), cert: readFileSync(cert), allowHTTP1: true },
    (req, res) => {
      const headers = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (!name.startsWith(':') && !HOP.has(name)) headers[name] = value;
      }
      headers.host = req.headers[':authority'] || req.headers.host;
      headers['x-forwarded-proto'] = 'https';
      const out = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent },
        (answer) => {
          const back = {};
          for (const [name, value] of Object.entries(answer.headers)) {
            if (!HOP.has(name)) back[name] = value;
          }
          res.writeHead(answer.statusCode, back);
          answer.pipe(res);
        },
      );
      out.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      req.pipe(out);
    },
  );
  const sessions = new Set();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${server.address().port}`,
    async close() {
      for (const s of sessions) s.destroy();
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
      agent.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
