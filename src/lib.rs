//! rayscope: a deterministic, in-process model of a Ray cluster that exports what a
//! Ray cluster exports.
//!
//! Data flows one way: [`config`] → [`workload`] + [`sim`] drive [`scheduler`] over
//! [`model`] → [`snapshot`] (the immutable contract readers see) → [`metrics`], [`api`],
//! [`flow`]. See ARCHITECTURE.md.

pub mod config;

pub mod api;
pub mod calibrate;
pub mod fidelity;
pub mod flow;
pub mod host;
pub mod metrics;
pub mod model;
pub mod observe;
pub mod scheduler;
pub mod sim;
pub mod snapshot;
pub mod workload;
