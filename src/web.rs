//! The phone web app (SPEC §3.3): static files in `src/web/`, embedded in the binary and served at
//! `/`. The files are plain HTML, CSS and JavaScript modules, and what is in the folder is what the
//! phone runs — less the comments and needless whitespace of its scripts and style sheet, which
//! `build.rs` cuts with the `minifier` crate (decisions 0046, 0053) — gzip-compressed for a phone
//! that accepts it. The shell is served with `Cache-Control: no-cache`
//! and a strong `ETag` per form, so a phone revalidates each file (a cheap 304 when nothing
//! changed) and an update arrives at the next load; the service worker (`sw.js`) keeps a copy for
//! offline starts. The security headers, including the CSP of §4.8, are added by the HTTP layer's
//! middleware.

use std::io::Write;
use std::sync::LazyLock;

use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// URL path.
    pub path: &'static str,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The file.
    pub body: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JSON: &str = "application/json";

/// An embedded file: scripts and the style sheet as `build.rs` minified them, the rest as written.
macro_rules! asset {
    ($path:literal, $file:literal, JS) => {
        asset!(@minified $path, $file, JS)
    };
    ($path:literal, $file:literal, CSS) => {
        asset!(@minified $path, $file, CSS)
    };
    (@minified $path:literal, $file:literal, $ty:expr) => {
        Asset {
            path: $path,
            content_type: $ty,
            body: include_bytes!(concat!(env!("OUT_DIR"), "/web/", $file)),
        }
    };
    ($path:literal, $file:literal, $ty:expr) => {
        Asset {
            path: $path,
            content_type: $ty,
            body: include_bytes!(concat!("web/", $file)),
        }
    };
}

/// Every file of the app, by URL path. The shell is all of them but [`ON_DEMAND`]: `sw.js` lists
/// the shell's files (less itself), and `index.html` preloads every module of the shell but
/// `app.js` (which it runs) and `sw.js`, in this order.
pub const ASSETS: &[Asset] = &[
    asset!("/", "index.html", "text/html; charset=utf-8"),
    asset!("/app.js", "app.js", JS),
    asset!("/attrs.js", "attrs.js", JS),
    asset!("/chat.js", "chat.js", JS),
    asset!("/client.js", "client.js", JS),
    asset!("/decide.js", "decide.js", JS),
    asset!("/dictate.js", "dictate.js", JS),
    asset!("/dictate.css", "dictate.css", CSS),
    asset!("/dom.js", "dom.js", JS),
    asset!("/durable.js", "durable.js", JS),
    asset!("/i18n.js", "i18n.js", JS),
    asset!("/idle.js", "idle.js", JS),
    asset!("/kept.js", "kept.js", JS),
    asset!("/manage.js", "manage.js", JS),
    asset!("/markdown.js", "markdown.js", JS),
    asset!("/masked.js", "masked.js", JS),
    asset!("/push.js", "push.js", JS),
    asset!("/report.js", "report.js", JS),
    asset!("/screen.js", "screen.js", JS),
    asset!("/sent.js", "sent.js", JS),
    asset!("/speech-worklet.js", "speech-worklet.js", JS),
    asset!("/store.js", "store.js", JS),
    asset!("/stream.js", "stream.js", JS),
    asset!("/walky.js", "walky.js", JS),
    asset!("/wav.js", "wav.js", JS),
    asset!("/zoom.js", "zoom.js", JS),
    asset!("/views/agents.js", "views/agents.js", JS),
    asset!("/views/cards.js", "views/cards.js", JS),
    asset!("/views/conversation.js", "views/conversation.js", JS),
    asset!("/views/files.js", "views/files.js", JS),
    asset!("/views/new.js", "views/new.js", JS),
    asset!("/views/pair.js", "views/pair.js", JS),
    asset!("/views/pane.js", "views/pane.js", JS),
    asset!("/views/panes.js", "views/panes.js", JS),
    asset!("/views/rows.js", "views/rows.js", JS),
    asset!("/views/sent.js", "views/sent.js", JS),
    asset!("/views/settings.js", "views/settings.js", JS),
    asset!("/views/walky.js", "views/walky.js", JS),
    asset!("/style.css", "style.css", CSS),
    asset!("/sw.js", "sw.js", JS),
    asset!(
        "/manifest.webmanifest",
        "manifest.webmanifest",
        "application/manifest+json"
    ),
    asset!("/icons/icon.svg", "icons/icon.svg", "image/svg+xml"),
    asset!("/icons/icon-192.png", "icons/icon-192.png", "image/png"),
    asset!("/icons/icon-512.png", "icons/icon-512.png", "image/png"),
];

/// The files a phone fetches only when it needs them, never at a start, and its service worker
/// keeps none of them: dictation's (SPEC §16, decision 0076), asked for by `client.js` only when the
/// bridge has a transcriber, and the screens opened less often — New pane, Agents and a
/// conversation, Messages, Sent (decision 0080) — asked for by `app.js` when first opened. They all
/// need the bridge anyway (a recording is transcribed there; each screen shows what the bridge
/// answers), so an offline start loses nothing.
pub const ON_DEMAND: &[&str] = &[
    "/dictate.js",
    "/dictate.css",
    "/speech-worklet.js",
    "/wav.js",
    "/views/agents.js",
    "/views/conversation.js",
    "/views/new.js",
    "/views/rows.js",
    "/views/sent.js",
    "/views/walky.js",
];

/// The phone app's languages but English (decision 0081): `src/web/lang/<code>.json` each, listed
/// by `build.rs`, so a new language is one file. Fetched only by a phone that shows that language.
pub const LANGUAGES: &[Asset] = include!(concat!(env!("OUT_DIR"), "/languages.rs"));

/// `/lang/index.json`: `[{"code", "name"}]` of [`LANGUAGES`], each name read from its file (a file
/// without one is listed by its code; the unit tests hold every file to having one).
static LANGUAGE_INDEX: LazyLock<Served> = LazyLock::new(|| {
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    #[derive(serde::Serialize)]
    struct Listed<'a> {
        code: &'a str,
        name: String,
    }
    let index: Vec<Listed> = LANGUAGES
        .iter()
        .map(|a| {
            let code = a
                .path
                .trim_start_matches("/lang/")
                .trim_end_matches(".json");
            let name = serde_json::from_slice::<Named>(a.body)
                .map_or_else(|_| code.to_owned(), |n| n.name);
            Listed { code, name }
        })
        .collect();
    let body = serde_json::to_vec(&index).unwrap_or_else(|_| b"[]".to_vec());
    Served::from_bytes(Bytes::from(body), true)
});

/// Every language file as served, in [`LANGUAGES`] order.
static SERVED_LANGUAGES: LazyLock<Vec<Served>> =
    LazyLock::new(|| LANGUAGES.iter().map(Served::of).collect());

/// The routes of the app's files, one each, except the start page `/`, which the HTTP layer routes
/// to [`index`].
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let files = ASSETS
        .iter()
        .enumerate()
        .filter(|(_, a)| a.path != "/")
        .fold(Router::new(), |router, (at, asset)| {
            router.route(
                asset.path,
                get(move |headers: HeaderMap| async move { serve(at, &headers) }),
            )
        });
    let languages = LANGUAGES
        .iter()
        .enumerate()
        .fold(files, |router, (at, asset)| {
            router.route(
                asset.path,
                get(move |headers: HeaderMap| async move {
                    match SERVED_LANGUAGES.get(at) {
                        Some(served) => reply(asset, served, &headers),
                        None => StatusCode::NOT_FOUND.into_response(),
                    }
                }),
            )
        });
    languages.route(
        "/lang/index.json",
        get(|headers: HeaderMap| async move {
            let index = Asset {
                path: "/lang/index.json",
                content_type: JSON,
                body: &[],
            };
            reply(&index, &LANGUAGE_INDEX, &headers)
        }),
    )
}

/// The app's start page (`/`): the first of [`ASSETS`].
pub fn index(headers: &HeaderMap) -> Response {
    serve(0, headers)
}

/// One file as it goes out, and gzip-compressed when that is smaller.
struct Served {
    body: Bytes,
    etag: String,
    gzip: Option<(Bytes, String)>,
}

impl Served {
    fn of(asset: &Asset) -> Served {
        // A PNG is deflated already: a second pass saves a few bytes and costs the phone a decode.
        let text = !asset.content_type.starts_with("image/png");
        Served::from_bytes(Bytes::from_static(asset.body), text)
    }

    fn from_bytes(body: Bytes, text: bool) -> Served {
        let etag = etag(&body);
        let gzip = text
            .then(|| gzip(&body))
            .flatten()
            .filter(|z| z.len() < body.len())
            .map(|z| {
                (
                    Bytes::from(z),
                    format!("{}-gz\"", etag.trim_end_matches('"')),
                )
            });
        Served { body, etag, gzip }
    }
}

/// Every file of [`ASSETS`] as served, in the same order, made at the first request.
static SERVED: LazyLock<Vec<Served>> = LazyLock::new(|| ASSETS.iter().map(Served::of).collect());

/// `body` compressed at gzip's best level (done once per file, so the best level costs nothing).
fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(body).ok()?;
    z.finish().ok()
}

/// Whether the request's `Accept-Encoding` takes gzip: named (or `*`) with a weight above zero.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut named = None;
    let mut any = None;
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim();
            let weight = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                named = Some(weight > 0.0);
            } else if coding == "*" {
                any = Some(weight > 0.0);
            }
        }
    }
    named.or(any).unwrap_or(false)
}

/// Answers file `at` of [`ASSETS`], or 304 when the phone already holds this version.
fn serve(at: usize, headers: &HeaderMap) -> Response {
    let (Some(asset), Some(served)) = (ASSETS.get(at), SERVED.get(at)) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    reply(asset, served, headers)
}

/// Answers `asset` in its served form, or 304 when the phone already holds this version.
fn reply(asset: &Asset, served: &Served, headers: &HeaderMap) -> Response {
    let (body, etag, gzipped) = match &served.gzip {
        Some((z, tag)) if accepts_gzip(headers) => (z, tag, true),
        _ => (&served.body, &served.etag, false),
    };
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        body.clone().into_response()
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if gzipped {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    if asset.path == "/sw.js" {
        h.insert("service-worker-allowed", HeaderValue::from_static("/"));
    }
    resp
}

/// A strong validator: 64-bit FNV-1a of the served body, quoted. Stable across builds of the same
/// file.
fn etag(body: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in body {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{hash:016x}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(a: &Asset) -> &'static str {
        std::str::from_utf8(a.body).expect("text assets are UTF-8")
    }

    /// The file as written in `src/web/` (what `build.rs` minified).
    fn source(a: &Asset) -> String {
        let file = if a.path == "/" { "/index.html" } else { a.path };
        std::fs::read_to_string(format!("{}/src/web{file}", env!("CARGO_MANIFEST_DIR")))
            .expect("the source of a text asset")
    }

    /// Whether `asset` belongs to the shell (is not [`ON_DEMAND`]).
    fn in_shell(asset: &Asset) -> bool {
        !ON_DEMAND.contains(&asset.path)
    }

    fn is_text(a: &Asset) -> bool {
        !a.content_type.starts_with("image/png")
    }

    #[test]
    fn the_service_worker_caches_exactly_the_shell() {
        let sw = ASSETS.iter().find(|a| a.path == "/sw.js").expect("sw.js");
        let sw = text(sw);
        for a in ASSETS.iter().filter(|a| a.path != "/sw.js") {
            assert_eq!(
                sw.contains(&format!("'{}'", a.path)),
                in_shell(a),
                "sw.js lists {} exactly when it is of the shell",
                a.path
            );
        }
        assert!(sw.contains("startsWith('/api/')"), "sw.js must skip /api/");
    }

    #[test]
    fn the_start_page_preloads_every_module_the_app_imports() {
        // A module is fetched only once the one importing it has arrived and been read: without
        // these links a cold load walks the import graph one round trip per level (seven deep),
        // which a phone's network turns into most of its time to interactive (docs/PERFORMANCE.md).
        let index = text(&ASSETS[0]);
        let preloaded: Vec<&str> = index
            .split("<link rel=\"modulepreload\" href=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        let modules: Vec<&str> = ASSETS
            .iter()
            .filter(|a| in_shell(a))
            .map(|a| a.path)
            .filter(|p| p.ends_with(".js") && !matches!(*p, "/app.js" | "/sw.js"))
            .collect();
        assert_eq!(
            preloaded, modules,
            "index.html's modulepreload links, in ASSETS order"
        );
    }

    #[test]
    fn no_inline_script_or_style_and_no_html_sinks() {
        let index = text(&ASSETS[0]);
        assert!(!index.contains("<style"), "inline style in index.html");
        assert!(!index.contains(" style="), "style attribute in index.html");
        for tag in index.split("<script").skip(1) {
            assert!(
                tag.trim_start().starts_with("type=\"module\" src="),
                "inline script"
            );
        }
        for a in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            let js = text(a);
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
                "new Function",
            ] {
                assert!(!js.contains(sink), "{} uses {sink}", a.path);
            }
        }
    }

    #[test]
    fn every_module_import_is_served() {
        for a in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            let dir = a.path.rsplit_once('/').map_or("", |(d, _)| d);
            for line in source(a).lines().filter(|l| l.starts_with("import ")) {
                let spec = line
                    .rsplit_once(" from '")
                    .and_then(|(_, s)| s.split('\'').next())
                    .expect("import … from '…'");
                let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
                for seg in spec.split('/') {
                    match seg {
                        "." => {}
                        ".." => {
                            parts.pop();
                        }
                        s => parts.push(s),
                    }
                }
                let target = format!("/{}", parts.join("/"));
                assert!(
                    ASSETS.iter().any(|x| x.path == target),
                    "{} imports {target}, which is not served",
                    a.path
                );
            }
        }
    }

    #[test]
    fn the_router_builds_and_leaves_the_start_page_to_the_caller() {
        assert_eq!(ASSETS[0].path, "/", "index() serves the first asset");
        let _ = routes::<()>().route("/", get(|h: HeaderMap| async move { index(&h) }));
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k, HeaderValue::from_str(v).expect("a header value"));
        }
        h
    }

    async fn body(resp: Response) -> Vec<u8> {
        axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("a body")
            .to_vec()
    }

    #[test]
    fn etag_and_not_modified() {
        let a = &ASSETS[1];
        let resp = serve(1, &HeaderMap::new());
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], a.content_type);
        assert_eq!(resp.headers()[header::CACHE_CONTROL], "no-cache");
        assert!(resp.headers().get(header::CONTENT_ENCODING).is_none());
        let tag = resp.headers()[header::ETAG]
            .to_str()
            .expect("ascii")
            .to_owned();
        assert_eq!(
            serve(1, &headers(&[(header::IF_NONE_MATCH, &tag)])).status(),
            StatusCode::NOT_MODIFIED
        );
        // The gzip form has a validator of its own: the plain one does not match it.
        let gz = &[(header::ACCEPT_ENCODING, "gzip")];
        let zipped = serve(1, &headers(gz));
        let gz_tag = zipped.headers()[header::ETAG]
            .to_str()
            .expect("ascii")
            .to_owned();
        assert_ne!(gz_tag, tag);
        let both = headers(&[
            (header::ACCEPT_ENCODING, "gzip"),
            (header::IF_NONE_MATCH, &tag),
        ]);
        assert_eq!(serve(1, &both).status(), StatusCode::OK);
        let both = headers(&[
            (header::ACCEPT_ENCODING, "gzip"),
            (header::IF_NONE_MATCH, &gz_tag),
        ]);
        assert_eq!(serve(1, &both).status(), StatusCode::NOT_MODIFIED);
    }

    #[tokio::test]
    async fn a_phone_that_takes_gzip_gets_the_minified_file_compressed() {
        use std::io::Read;
        let at = ASSETS
            .iter()
            .position(|a| a.path == "/style.css")
            .expect("style.css");
        let plain = serve(at, &HeaderMap::new());
        assert_eq!(plain.headers()[header::VARY], "accept-encoding");
        let plain = body(plain).await;
        assert!(
            plain.len() < source(&ASSETS[at]).len(),
            "comments and indentation are cut"
        );
        assert!(
            !String::from_utf8_lossy(&plain).contains("/*"),
            "no comment is served"
        );

        let zipped = serve(at, &headers(&[(header::ACCEPT_ENCODING, "br, gzip;q=0.8")]));
        assert_eq!(zipped.headers()[header::CONTENT_ENCODING], "gzip");
        let zipped = body(zipped).await;
        assert!(zipped.len() < plain.len() / 2);
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(zipped.as_slice())
            .read_to_end(&mut unzipped)
            .expect("gzip");
        assert_eq!(unzipped, plain);

        // A weight of zero refuses it; a PNG is never compressed again.
        let refused = serve(at, &headers(&[(header::ACCEPT_ENCODING, "gzip;q=0, *")]));
        assert!(refused.headers().get(header::CONTENT_ENCODING).is_none());
        let png = ASSETS
            .iter()
            .position(|a| a.path.ends_with(".png"))
            .expect("a png");
        let png = serve(png, &headers(&[(header::ACCEPT_ENCODING, "gzip")]));
        assert!(png.headers().get(header::CONTENT_ENCODING).is_none());
    }

    #[test]
    fn the_shell_stays_under_60_kib_gzipped() {
        // Issue 15's budget for the whole shell, each file as served and compressed at gzip's
        // best level, as `web-tests/bench/phone.mjs` sums them. A change that passes it decides
        // what gives (decisions 0046, 0080 weigh the options) rather than growing the shell unseen.
        let total: usize = ASSETS
            .iter()
            .filter(|a| in_shell(a))
            .map(|a| gzip(a.body).map_or(a.body.len(), |z| z.len()))
            .sum();
        assert!(total < 60 * 1024, "the app shell is {total} B gzipped");
    }

    #[test]
    fn every_language_file_names_its_language_and_maps_strings_to_strings() {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Language {
            name: String,
            strings: std::collections::BTreeMap<String, String>,
        }
        assert!(LANGUAGES.len() >= 2, "German and Japanese at least");
        for a in LANGUAGES {
            let lang: Language =
                serde_json::from_slice(a.body).unwrap_or_else(|e| panic!("{}: {e}", a.path));
            assert!(
                !lang.name.trim().is_empty(),
                "{} names its language",
                a.path
            );
            for (english, said) in &lang.strings {
                assert!(!said.trim().is_empty(), "{}: {english:?} is empty", a.path);
            }
        }
    }

    #[tokio::test]
    async fn the_language_index_lists_every_file_with_its_name() {
        use tower::ServiceExt;
        let app: Router = routes();
        let get = |uri: &str| {
            axum::http::Request::get(uri)
                .body(axum::body::Body::empty())
                .expect("request")
        };
        let resp = app
            .clone()
            .oneshot(get("/lang/index.json"))
            .await
            .expect("index");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], JSON);
        let index: Vec<std::collections::BTreeMap<String, String>> =
            serde_json::from_slice(&body(resp).await).expect("a JSON list");
        let codes: Vec<&str> = index.iter().map(|l| l["code"].as_str()).collect();
        assert_eq!(codes, ["de", "ja"]);
        assert_eq!(index[0]["name"], "Deutsch");
        assert_eq!(index[1]["name"], "日本語");
        let de = app.clone().oneshot(get("/lang/de.json")).await.expect("de");
        assert_eq!(de.status(), StatusCode::OK);
        let missing = app.oneshot(get("/lang/fr.json")).await.expect("fr");
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        let takes = |v: &str| accepts_gzip(&headers(&[(header::ACCEPT_ENCODING, v)]));
        assert!(takes("gzip"));
        assert!(takes("deflate, GZIP"));
        assert!(takes("br;q=1.0, gzip;q=0.5"));
        assert!(takes("*"));
        assert!(takes("x-gzip"));
        assert!(!takes("br"));
        assert!(!takes("gzip;q=0"));
        assert!(!takes("gzip; q=0.0, *"));
        assert!(!takes("*;q=0"));
        assert!(!takes(""));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn every_script_and_the_style_sheet_are_served_minified() {
        for a in ASSETS
            .iter()
            .filter(|a| a.content_type == JS || a.content_type == CSS)
        {
            let (served, written) = (text(a), source(a));
            assert!(
                served.len() * 10 < written.len() * 9,
                "{} is served as written",
                a.path
            );
            assert!(!served.contains("\n  "), "{} keeps its indentation", a.path);
        }
    }

    #[test]
    fn text_assets_are_utf8_and_pngs_are_pngs() {
        for a in ASSETS {
            if is_text(a) {
                let _ = text(a);
            } else {
                assert!(a.body.starts_with(b"\x89PNG\r\n\x1a\n"), "{}", a.path);
            }
        }
    }
}
