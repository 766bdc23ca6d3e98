//! Error answers and request bodies.
//!
//! Every error is JSON: `{"error": "<what is wrong and what would be valid>"}`, plus
//! `"parameter"` for a bad query parameter or `"field"` for a bad body field, so a
//! client can point at the culprit without parsing prose. Bodies are read whole (up to
//! [`MAX_BODY_BYTES`](super::MAX_BODY_BYTES)) and parsed in one step, so a malformed
//! request is rejected before anything is applied.

use crate::sim::control::ControlError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// Extra members of the JSON body (`parameter`, `field`, `valid`, ...).
    pub extra: Map<String, Value>,
    /// Answer 401 with `WWW-Authenticate: Bearer`.
    pub challenge: bool,
    /// `Retry-After` seconds (503 answers).
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), extra: Map::new(), challenge: false, retry_after: None }
    }

    /// 400 naming a query or path parameter.
    pub fn parameter(name: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message).with("parameter", name)
    }

    /// 400 naming a field of the request body.
    pub fn field(name: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message).with("field", name)
    }

    /// 413 naming a body field over a byte limit, the limit, and the setting that raises it.
    pub fn too_large(field: &str, bytes: usize, limit: u64, setting: &str) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("`{field}` is {bytes} bytes; the limit is {limit} bytes (server.limits.{setting})"),
        )
        .with("field", field)
        .with("limit_bytes", limit)
        .with("setting", format!("server.limits.{setting}"))
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn retry_after(mut self, seconds: u32) -> ApiError {
        self.retry_after = Some(seconds);
        self
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> ApiError {
        self.extra.insert(key.to_string(), value.into());
        self
    }
}

/// A refused control request on the wire: the kind picks the status, the message is
/// the whole body (`{"error": ...}`).
impl From<ControlError> for ApiError {
    fn from(e: ControlError) -> ApiError {
        let status = match &e {
            ControlError::NotFound { .. } => StatusCode::NOT_FOUND,
            ControlError::Invalid { .. } => StatusCode::BAD_REQUEST,
            ControlError::Conflict { .. } => StatusCode::CONFLICT,
            ControlError::LimitExceeded { .. } => StatusCode::TOO_MANY_REQUESTS,
            ControlError::EngineStopped => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError::new(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = Map::new();
        body.insert("error".into(), Value::String(self.message));
        body.extend(self.extra);
        let mut response = (self.status, axum::Json(Value::Object(body))).into_response();
        if let Some(s) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if self.challenge {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"rayscope\""));
        }
        response
    }
}

/// A request body read whole, with the size limit answered as JSON 413.
pub(crate) struct Body(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Bytes::from_request(req, state).await {
            Ok(b) => Ok(Body(b)),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(too_large()),
            Err(e) => Err(ApiError::new(e.status(), format!("cannot read the request body: {}", e.body_text()))),
        }
    }
}

pub(crate) fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body is larger than the {} byte limit", super::MAX_BODY_BYTES),
    )
    .with("limit_bytes", super::MAX_BODY_BYTES)
}

/// Parse a JSON body; an error names the offending field by its path (`alerts[0].status`).
/// `empty_as`: what an empty body means (`None`: an empty body is an error).
pub(crate) fn parse_json<T: DeserializeOwned>(body: &[u8], empty_as: Option<&str>) -> Result<T, ApiError> {
    let text: &[u8] = match (body.iter().all(u8::is_ascii_whitespace), empty_as) {
        (true, Some(default)) => default.as_bytes(),
        (true, None) => return Err(ApiError::field("", "the request body is empty; expected a JSON object")),
        (false, _) => body,
    };
    let mut de = serde_json::Deserializer::from_slice(text);
    let parsed: Result<T, _> = serde_path_to_error::deserialize(&mut de);
    let value = parsed.map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let inner = e.into_inner();
        let message = if inner.is_syntax() || inner.is_eof() {
            format!("the request body is not valid JSON: {inner}")
        } else if path.is_empty() {
            format!("invalid request body: {inner}")
        } else {
            format!("invalid field `{path}`: {inner}")
        };
        // serde names a missing field only in its message; lift it into `field`.
        let field = match message.split("missing field `").nth(1) {
            Some(rest) if path.is_empty() => rest.split('`').next().unwrap_or_default().to_string(),
            _ => path,
        };
        ApiError::field(&field, message)
    })?;
    de.end().map_err(|e| {
        ApiError::field("", format!("the request body has trailing characters after the JSON value: {e}"))
    })?;
    Ok(value)
}

/// `{"error": ...}` for a request nothing routes to.
pub(crate) async fn no_route(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no endpoint at {}; the page at /endpoints lists them all", uri.path()))
}

/// A compact JSON answer.
pub(crate) fn json_ok(v: Value) -> Response {
    axum::Json(v).into_response()
}

/// 500 for what cannot happen (a panicked blocking task).
pub(crate) fn internal(message: impl std::fmt::Display) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Speed {
        speed: f64,
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse_json::<Speed>(br#"{"speed": "fast"}"#, None).unwrap_err();
        assert_eq!(e.extra["field"], "speed");
        let e = parse_json::<Speed>(br#"{}"#, None).unwrap_err();
        assert_eq!(e.extra["field"], "speed", "{e:?}");
        let e = parse_json::<Speed>(br#"{"speed": 1, "sped": 2}"#, None).unwrap_err();
        assert!(e.message.contains("sped"), "{e:?}");
        let e = parse_json::<Speed>(b"{", None).unwrap_err();
        assert!(e.message.contains("not valid JSON"), "{e:?}");
        assert!(parse_json::<Speed>(b"", None).is_err());
        assert_eq!(parse_json::<Speed>(b" ", Some(r#"{"speed": 2}"#)).unwrap().speed, 2.0);
    }

    #[test]
    fn control_refusals_map_by_kind_to_status_and_message() {
        let cases = [
            (ControlError::not_found("no node with IP 10.0.0.9"), 404, "no node with IP 10.0.0.9"),
            (
                ControlError::invalid("speed must be a positive number, got 0"),
                400,
                "speed must be a positive number, got 0",
            ),
            (ControlError::conflict("node 10.0.0.2 is already dead"), 409, "node 10.0.0.2 is already dead"),
            (ControlError::limit_exceeded("too many tasks"), 429, "too many tasks"),
            (ControlError::EngineStopped, 503, "the simulation engine has stopped"),
        ];
        for (refusal, status, message) in cases {
            let e = ApiError::from(refusal);
            assert_eq!((e.status.as_u16(), e.message.as_str()), (status, message));
            assert!(e.extra.is_empty(), "the body is the message alone: {e:?}");
        }
    }
}
