//! The built-in pages: the overview at `/`, the resource views a Ray user opens
//! (`/nodes`, `/jobs`, `/actors`, `/tasks`, `/events`, `/metrics-view`), Flow
//! Insight's five views of a job (`/flow`) and the endpoint index (`/endpoints`).
//!
//! Owns: the page shell (one header and nav for every page), the embedded assets
//! (`assets/`: one stylesheet, one shared helper script, each page's HTML fragment and
//! script, all compiled into the binary with `include_str!`), and how they are served:
//! content type, cache headers, `X-Content-Type-Options: nosniff`, and a
//! Content-Security-Policy that lets a page reach nothing but this origin.
//!
//! A page is a [`Page`] row: its path, nav label, title, HTML fragment and script. A
//! new page adds a row and its two asset files; the nav, shell, stylesheet and helper
//! come with it.
//!
//! Must never: render data on the server (pages read the JSON APIs and the live
//! stream from the browser, so there is one source of truth for shapes), reference
//! anything outside this origin, or change state: the scripts only `GET` and open
//! `/ws/realtime`, whatever the token setting.

mod endpoints;

use super::app::AppState;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

/// One built-in page.
pub(crate) struct Page {
    pub path: &'static str,
    /// In the nav; pages without one (none yet) are reachable by link only.
    pub nav: &'static str,
    pub title: &'static str,
    pub html: &'static str,
    /// The page's script under `/static/`, if it has one.
    pub script: Option<&'static str>,
}

/// Every page, in nav order.
pub(crate) const PAGES: &[Page] = &[
    Page {
        path: "/",
        nav: "Overview",
        title: "Overview",
        html: include_str!("assets/overview.html"),
        script: Some("overview.js"),
    },
    Page {
        path: "/nodes",
        nav: "Nodes",
        title: "Nodes",
        html: include_str!("assets/nodes.html"),
        script: Some("nodes.js"),
    },
    Page { path: "/jobs", nav: "Jobs", title: "Jobs", html: include_str!("assets/jobs.html"), script: Some("jobs.js") },
    Page {
        path: "/actors",
        nav: "Actors",
        title: "Actors",
        html: include_str!("assets/actors.html"),
        script: Some("actors.js"),
    },
    Page {
        path: "/tasks",
        nav: "Tasks",
        title: "Tasks",
        html: include_str!("assets/tasks.html"),
        script: Some("tasks.js"),
    },
    Page {
        path: "/events",
        nav: "Events",
        title: "Events",
        html: include_str!("assets/events.html"),
        script: Some("events.js"),
    },
    Page {
        path: "/metrics-view",
        nav: "Metrics",
        title: "Metrics",
        html: include_str!("assets/metrics.html"),
        script: Some("metrics.js"),
    },
    Page {
        path: "/flow",
        nav: "Flow Insight",
        title: "Flow Insight",
        html: include_str!("assets/flow.html"),
        script: Some("flow.js"),
    },
    // The endpoint index is rendered from the running server (token state, session).
    Page { path: "/endpoints", nav: "Endpoints", title: "Endpoints", html: "", script: None },
];

/// A file under `/static/`.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "rayscope.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("assets/rayscope.css"),
    },
    Asset { name: "rayscope.js", content_type: JS, body: include_bytes!("assets/rayscope.js") },
    Asset { name: "overview.js", content_type: JS, body: include_bytes!("assets/overview.js") },
    Asset { name: "nodes.js", content_type: JS, body: include_bytes!("assets/nodes.js") },
    Asset { name: "jobs.js", content_type: JS, body: include_bytes!("assets/jobs.js") },
    Asset { name: "actors.js", content_type: JS, body: include_bytes!("assets/actors.js") },
    Asset { name: "tasks.js", content_type: JS, body: include_bytes!("assets/tasks.js") },
    Asset { name: "events.js", content_type: JS, body: include_bytes!("assets/events.js") },
    Asset { name: "metrics.js", content_type: JS, body: include_bytes!("assets/metrics.js") },
    Asset { name: "flow.js", content_type: JS, body: include_bytes!("assets/flow.js") },
    Asset { name: "favicon.svg", content_type: "image/svg+xml", body: include_bytes!("assets/favicon.svg") },
];

const JS: &str = "text/javascript; charset=utf-8";
const SHELL: &str = include_str!("assets/shell.html");

/// Pages may load scripts, styles and images from this origin and talk to it (fetch
/// and the WebSocket); nothing else, and no inline script.
// `frame-src 'self'`: the flame graph is the server's SVG in an `<iframe>`, so that its
// own script (inferno's search, zoom and tooltips) runs, in the SVG's document.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   frame-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// The version of all assets together: asset URLs carry it (`?v=`), so a browser may
/// keep them for a year and still never mixes files of two builds.
static VERSION: LazyLock<String> = LazyLock::new(|| {
    let mut h = Sha256::new();
    for a in ASSETS {
        h.update(a.name.as_bytes());
        h.update(a.body);
    }
    h.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect()
});

/// The routes for every page and asset, merged into the main router.
pub(crate) fn routes() -> Router<AppState> {
    let mut r = Router::new().route("/static/{name}", get(asset)).route("/favicon.ico", get(favicon));
    for p in PAGES {
        r = r.route(p.path, get(move |State(app): State<AppState>| page(app, p)));
    }
    r
}

async fn page(app: AppState, p: &'static Page) -> Response {
    let main = if p.path == "/endpoints" { endpoints::render(&app) } else { p.html.to_string() };
    html(render(p, &main, &app.config.server.grafana_url))
}

/// The shell around a page's fragment: head, nav with this page marked, scripts.
pub(crate) fn render(p: &Page, main: &str, grafana_url: &str) -> String {
    let v = VERSION.as_str();
    let nav: String = PAGES
        .iter()
        .filter(|q| !q.nav.is_empty())
        .map(|q| {
            let current = if q.path == p.path { " aria-current=\"page\"" } else { "" };
            format!("<a href=\"{}\"{current}>{}</a>", q.path, q.nav)
        })
        .collect();
    let script = p.script.map(|s| format!("<script src=\"/static/{s}?v={v}\" defer></script>")).unwrap_or_default();
    SHELL
        .replace("{{title}}", p.title)
        .replace("{{nav}}", &nav)
        .replace("{{version}}", v)
        .replace("{{grafana_url}}", &escape(grafana_url))
        .replace("{{script}}", &script)
        .replace("{{main}}", main)
}

fn html(body: String) -> Response {
    let mut r = (StatusCode::OK, body).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    // Pages are tiny and name their assets by version: always revalidate the page.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    secure(h);
    r
}

fn secure(h: &mut axum::http::HeaderMap) {
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(HeaderName::from_static("x-frame-options"), HeaderValue::from_static("DENY"));
}

/// `GET /static/<name>`: immutable for a year when asked for this build's version,
/// revalidated otherwise (an old page asking for a new file).
async fn asset(Path(name): Path<String>, RawQuery(raw): RawQuery) -> Response {
    let Some(a) = ASSETS.iter().find(|a| a.name == name) else {
        let names: Vec<&str> = ASSETS.iter().map(|a| a.name).collect();
        return super::error::ApiError::not_found(format!("no asset {name:?}; assets: {}", names.join(", ")))
            .into_response();
    };
    let current = raw.as_deref().is_some_and(|q| q == format!("v={}", VERSION.as_str()));
    let cache = if current { "public, max-age=31536000, immutable" } else { "no-cache" };
    let mut r = (StatusCode::OK, a.body).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(a.content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    secure(h);
    r
}

async fn favicon(raw: RawQuery) -> Response {
    asset(Path("favicon.svg".to_string()), raw).await
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_script_is_an_asset_and_pages_reference_only_this_origin() {
        for p in PAGES {
            if let Some(s) = p.script {
                assert!(ASSETS.iter().any(|a| a.name == s), "{} names a missing script {s}", p.path);
            }
            let page = render(p, p.html, "http://grafana.example:3000");
            for needle in ["http://", "https://", "//cdn", "<script>", " style=\""] {
                let outside = page.replace("http://grafana.example:3000", "");
                assert!(!outside.contains(needle), "{} contains {needle:?}", p.path);
            }
            assert!(page.contains("aria-current=\"page\""), "{} marks itself in the nav", p.path);
        }
        for a in ASSETS {
            // SVG's namespace is a name, not a request.
            let text = String::from_utf8_lossy(a.body).replace("http://www.w3.org/2000/svg", "");
            assert!(!text.contains("https://") && !text.contains("http://"), "{} references another origin", a.name);
        }
    }

    #[test]
    fn scripts_never_send_anything_but_get() {
        for a in ASSETS.iter().filter(|a| a.content_type == JS) {
            let text = String::from_utf8_lossy(a.body);
            for needle in ["method:", "XMLHttpRequest", "sendBeacon", "'POST'", "\"POST\""] {
                assert!(!text.contains(needle), "{} contains {needle:?}", a.name);
            }
        }
    }
}
