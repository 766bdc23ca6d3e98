//! Bearer tokens for the endpoints that change state.
//!
//! Ray's dashboard accepted anyone for years (CVE-2023-48022, "ShadowRay"); rayscope is
//! closed by default: without a configured token every state-changing endpoint answers
//! 403 and says how to enable it; with one, a request must carry
//! `Authorization: Bearer <token>` or get 401. Tokens are compared in constant time,
//! over SHA-256 digests so that not even the length leaks.
//!
//! Handlers opt in by taking [`Authorized`] (the main token) or [`AlertAuthorized`]
//! (the main token or `server.alert_token`, for Alertmanager) as an argument; the check
//! runs before the body is read.

use super::app::AppState;
use super::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Proof that the request carried the main token.
pub(crate) struct Authorized;

/// Proof that the request carried the main token or the alert token.
pub(crate) struct AlertAuthorized;

impl FromRequestParts<AppState> for Authorized {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        check(&parts.headers, &[app.token.as_deref()], "RAYSCOPE_TOKEN (or server.token in the config)")
            .map(|_| Authorized)
    }
}

impl FromRequestParts<AppState> for AlertAuthorized {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        check(
            &parts.headers,
            &[app.token.as_deref(), app.alert_token.as_deref()],
            "RAYSCOPE_ALERT_TOKEN or RAYSCOPE_TOKEN (or server.alert_token / server.token in the config)",
        )
        .map(|_| AlertAuthorized)
    }
}

fn check(headers: &HeaderMap, tokens: &[Option<&str>], how: &str) -> Result<(), ApiError> {
    let configured: Vec<&str> = tokens.iter().flatten().copied().collect();
    if configured.is_empty() {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "this endpoint changes state and is disabled because no token is configured; \
                 set {how} and send `Authorization: Bearer <token>`"
            ),
        )
        .with("enable_with", how));
    }
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let Some(presented) = presented else {
        let mut e = ApiError::new(StatusCode::UNAUTHORIZED, "missing `Authorization: Bearer <token>` header");
        e.challenge = true;
        return Err(e);
    };
    let digest = Sha256::digest(presented.as_bytes());
    // Compare against every configured token without stopping early.
    let ok =
        configured.iter().fold(subtle::Choice::from(0), |acc, t| acc | Sha256::digest(t.as_bytes()).ct_eq(&digest));
    if bool::from(ok) {
        Ok(())
    } else {
        let mut e = ApiError::new(StatusCode::UNAUTHORIZED, "the bearer token is not valid");
        e.challenge = true;
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(header::AUTHORIZATION, a.parse().unwrap());
        }
        h
    }

    #[test]
    fn closed_without_a_token_then_bearer_only() {
        assert_eq!(check(&headers(Some("Bearer x")), &[None], "X").unwrap_err().status, StatusCode::FORBIDDEN);
        assert_eq!(check(&headers(None), &[Some("s3cret")], "X").unwrap_err().status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            check(&headers(Some("Basic s3cret")), &[Some("s3cret")], "X").unwrap_err().status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            check(&headers(Some("Bearer s3cre")), &[Some("s3cret")], "X").unwrap_err().status,
            StatusCode::UNAUTHORIZED
        );
        assert!(check(&headers(Some("Bearer s3cret")), &[Some("s3cret")], "X").is_ok());
        assert!(check(&headers(Some("bearer s3cret")), &[Some("s3cret")], "X").is_ok());
        assert!(check(&headers(Some("Bearer alert")), &[Some("s3cret"), Some("alert")], "X").is_ok());
        assert!(check(&headers(Some("Bearer alert")), &[None, Some("alert")], "X").is_ok());
    }
}
