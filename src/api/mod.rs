//! HTTP API (in progress: see the api branch).
