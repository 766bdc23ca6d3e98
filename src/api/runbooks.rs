//! `GET /runbooks`: docs/runbooks.md, embedded at build time and served as one HTML
//! page, so every alert's absolute `runbook_url` (`<base>/runbooks#<alert, lower-case>`)
//! opens its section from Alertmanager, Slack or Grafana with nothing else to host.
//!
//! The Markdown is the small subset the file uses: `#`/`##` headings, paragraphs,
//! `**bold**` and `` `code` ``. Each `## Name` becomes `<h2 id="name">` (lower-cased,
//! spaces to dashes, as GitHub anchors the same file), so one anchor works on both.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::LazyLock;

use super::pages::escape;

const SOURCE: &str = include_str!("../../docs/runbooks.md");

static PAGE: LazyLock<String> = LazyLock::new(|| render(SOURCE));

pub(crate) async fn page() -> Response {
    let mut r = (StatusCode::OK, PAGE.as_str()).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}

/// The anchor of a `## heading`, as GitHub makes it for these plain headings.
pub(crate) fn anchor(heading: &str) -> String {
    heading.trim().to_lowercase().replace(' ', "-")
}

fn render(md: &str) -> String {
    let mut body = String::new();
    let mut para: Vec<&str> = Vec::new();
    let flush = |para: &mut Vec<&str>, body: &mut String| {
        if !para.is_empty() {
            body.push_str(&format!("<p>{}</p>\n", inline(&para.join(" "))));
            para.clear();
        }
    };
    for line in md.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            flush(&mut para, &mut body);
            let id = anchor(h);
            body.push_str(&format!("<h2 id=\"{}\"><a href=\"#{0}\">{}</a></h2>\n", escape(&id), escape(h.trim())));
        } else if let Some(h) = line.strip_prefix("# ") {
            flush(&mut para, &mut body);
            body.push_str(&format!("<h1>{}</h1>\n", escape(h.trim())));
        } else if line.trim().is_empty() {
            flush(&mut para, &mut body);
        } else {
            para.push(line.trim());
        }
    }
    flush(&mut para, &mut body);
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rayscope runbooks</title></head>\n\
         <body>\n{body}</body></html>\n"
    )
}

/// Escaped text with `` `code` `` spans and `**bold**` outside them.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<code>{}</code>", escape(part)));
        } else {
            for (j, piece) in escape(part).split("**").enumerate() {
                if j > 0 {
                    out.push_str(if j % 2 == 1 { "<strong>" } else { "</strong>" });
                }
                out.push_str(piece);
            }
            // An unclosed `**` in this stretch: close it so the page stays well formed.
            if escape(part).matches("**").count() % 2 == 1 {
                out.push_str("</strong>");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_alert_section_has_its_anchor_and_text_is_escaped() {
        let html = render(SOURCE);
        for name in ["RayNodeDown", "RayHeadDown", "RayTargetDown", "Watchdog"] {
            let id = anchor(name);
            assert!(html.contains(&format!("<h2 id=\"{id}\">")), "no section {id}");
        }
        let html = render("## A b\n\n**Means:** `x<y` and **z**\nmore\n");
        assert!(html.contains("<h2 id=\"a-b\">"), "{html}");
        assert!(
            html.contains("<p><strong>Means:</strong> <code>x&lt;y</code> and <strong>z</strong> more</p>"),
            "{html}"
        );
    }
}
