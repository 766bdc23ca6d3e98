//! The GCS's managers: jobs, actors, placement groups and node membership, as Ray's
//! Global Control Service keeps them.
//!
//! Owns: the cluster-wide records' life cycles (a job's start and end, an actor's
//! creation, death and restart, a group's reservation, a node's registration and
//! death). Must never: run a task or hold a node's local state (the raylet's), or call
//! another component (each asks through a `Follow`).

pub(crate) mod actors;
pub(crate) mod jobs;
pub(crate) mod node_manager;
pub(crate) mod placement_groups;
