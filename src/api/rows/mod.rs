//! Ray's State API row shapes, read straight from a snapshot's rows.
//!
//! Each resource declares its columns as Ray's schemas do (`python/ray/util/state/
//! common.py`): a name, whether `detail=false` output includes it, whether it can be
//! filtered on, and its type. A cell is produced on demand from the snapshot's compact
//! rows, borrowing where it can, so filtering 100,000 tasks allocates little and a page
//! of 50 renders only 50 rows. Nothing is copied per request.
//!
//! This file owns the machinery every table shares: [`Column`], [`Resource`] (which
//! table, its columns, where its rows live), [`Cell`], and [`Ctx`], which reads row
//! `i`'s cell of column `c` by handing it to the table's file. Each table's columns
//! and cells live in a file of their own, named for the table (`nodes`, `jobs`,
//! `actors`, `tasks`, `objects`, `placement_groups`; the derived workers, runtime envs
//! and cluster events are built in `api/cluster_rows.rs` and `api/cluster_events.rs`,
//! their columns declared in `derived`); Ray's
//! id layouts, and [`parse_actor_id`] for the control API, are in `ids`. Tables never
//! import each other; what they share is here.

mod actors;
pub(super) mod derived;
mod ids;
mod jobs;
mod nodes;
mod objects;
mod placement_groups;
mod tasks;

use crate::snapshot::{JobView, Snapshot, Tables, VirtualTime};
pub(crate) use ids::{parse_actor_id, worker_hex};
use serde_json::{json, Map, Value};
use std::borrow::Cow;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Str,
    Int,
    Bool,
    /// Objects and lists: not filterable.
    Json,
}

#[derive(Debug)]
pub(crate) struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub filterable: bool,
    /// Only in `detail=true` output.
    pub detail: bool,
}

pub(crate) const fn col(name: &'static str, kind: Kind, filterable: bool, detail: bool) -> Column {
    Column { name, kind, filterable, detail }
}

/// The resources `/api/v0/<name>` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resource {
    Nodes,
    Jobs,
    Actors,
    Tasks,
    Objects,
    PlacementGroups,
    /// Derived per request by `cluster_rows` (never read through [`Ctx::cell`]).
    Workers,
    ClusterEvents,
    RuntimeEnvs,
}

impl Resource {
    pub fn name(self) -> &'static str {
        match self {
            Resource::Nodes => "nodes",
            Resource::Jobs => "jobs",
            Resource::Actors => "actors",
            Resource::Tasks => "tasks",
            Resource::Objects => "objects",
            Resource::PlacementGroups => "placement_groups",
            Resource::Workers => "workers",
            Resource::ClusterEvents => "cluster_events",
            Resource::RuntimeEnvs => "runtime_envs",
        }
    }

    pub fn columns(self) -> &'static [Column] {
        match self {
            Resource::Nodes => nodes::NODE_COLUMNS,
            Resource::Jobs => jobs::JOB_COLUMNS,
            Resource::Actors => actors::ACTOR_COLUMNS,
            Resource::Tasks => tasks::TASK_COLUMNS,
            Resource::Objects => objects::OBJECT_COLUMNS,
            Resource::PlacementGroups => placement_groups::PG_COLUMNS,
            Resource::Workers => derived::WORKER_COLUMNS,
            Resource::ClusterEvents => derived::CLUSTER_EVENT_COLUMNS,
            Resource::RuntimeEnvs => derived::RUNTIME_ENV_COLUMNS,
        }
    }

    /// Whether rows come from the engine's on-demand tables (rather than the snapshot proper).
    pub fn uses_tables(self) -> bool {
        matches!(
            self,
            Resource::Actors | Resource::Tasks | Resource::Objects | Resource::PlacementGroups | Resource::Workers
        )
    }

    pub fn column(self, name: &str) -> Option<usize> {
        self.columns().iter().position(|c| c.name == name)
    }
}

/// One cell, borrowed from the snapshot where possible.
#[derive(Debug, Clone)]
pub(crate) enum Cell<'a> {
    Null,
    Str(Cow<'a, str>),
    Int(i64),
    Bool(bool),
    Json(Value),
}

impl Cell<'_> {
    pub fn into_value(self) -> Value {
        match self {
            Cell::Null => Value::Null,
            Cell::Str(s) => Value::String(s.into_owned()),
            Cell::Int(i) => Value::from(i),
            Cell::Bool(b) => Value::Bool(b),
            Cell::Json(v) => v,
        }
    }
}

fn s(x: &str) -> Cell<'_> {
    Cell::Str(Cow::Borrowed(x))
}

fn owned<'a>(x: String) -> Cell<'a> {
    Cell::Str(Cow::Owned(x))
}

fn opt_int<'a>(x: Option<u64>) -> Cell<'a> {
    x.map_or(Cell::Null, |v| Cell::Int(v as i64))
}

/// Everything a cell may need besides its row.
pub(crate) struct Ctx<'a> {
    pub snap: &'a Snapshot,
    pub tables: &'a Tables,
    pub epoch_ms_at_zero: u64,
    /// Jobs' submission metadata (metadata, runtime_env), by submission id.
    pub job_extra: &'a dyn Fn(&JobView) -> (Value, Value),
}

impl Ctx<'_> {
    pub(crate) fn ms(&self, t: VirtualTime) -> i64 {
        (self.epoch_ms_at_zero + t.as_millis()) as i64
    }

    fn node_id(&self, node: Option<u32>) -> Cell<'_> {
        match node.and_then(|n| self.snap.node(n)) {
            Some(n) => s(&n.node_id),
            None => Cell::Null,
        }
    }

    pub(crate) fn actor_pid(&self, actor: u64) -> Option<u32> {
        let actors = &self.tables.actors;
        actors.binary_search_by_key(&actor, |a| a.id).ok().map(|i| actors[i].pid)
    }

    /// A call spec's resource request as Ray's `required_resources`.
    fn required_resources(&self, spec: u32) -> Cell<'_> {
        match self.tables.spec_requests.get(spec as usize) {
            Some(request) => Cell::Json(Value::Object(request.iter().map(|(r, q)| (r.clone(), json!(q))).collect())),
            None => Cell::Null,
        }
    }

    pub fn len(&self, r: Resource) -> usize {
        match r {
            Resource::Nodes => self.snap.nodes.len(),
            Resource::Jobs => self.snap.jobs.len(),
            Resource::Actors => self.tables.actors.len(),
            Resource::Tasks => self.tables.tasks.len(),
            Resource::Objects => self.tables.objects.len(),
            Resource::PlacementGroups => self.tables.placement_groups.len(),
            Resource::Workers | Resource::ClusterEvents | Resource::RuntimeEnvs => 0,
        }
    }

    /// Row `i`'s value of column `c` (an index into `r.columns()`).
    pub fn cell(&self, r: Resource, i: usize, c: usize) -> Cell<'_> {
        let name = r.columns()[c].name;
        match r {
            Resource::Nodes => self.node_cell(i, name),
            Resource::Jobs => self.job_cell(i, name),
            Resource::Actors => self.actor_cell(i, name),
            Resource::Tasks => self.task_cell(i, name),
            Resource::Objects => self.object_cell(i, name),
            Resource::PlacementGroups => self.pg_cell(i, name),
            Resource::Workers | Resource::ClusterEvents | Resource::RuntimeEnvs => Cell::Null,
        }
    }

    /// Row `i` as a JSON object with Ray's column set for `detail`.
    pub fn row(&self, r: Resource, i: usize, detail: bool) -> Value {
        let mut m = Map::new();
        for (c, column) in r.columns().iter().enumerate() {
            if detail || !column.detail {
                m.insert(column.name.to_string(), self.cell(r, i, c).into_value());
            }
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_has_unique_columns() {
        for r in [
            Resource::Nodes,
            Resource::Jobs,
            Resource::Actors,
            Resource::Tasks,
            Resource::Objects,
            Resource::PlacementGroups,
        ] {
            let cols = r.columns();
            for (i, c) in cols.iter().enumerate() {
                assert_eq!(r.column(c.name), Some(i), "{} {}", r.name(), c.name);
                assert!(!(c.filterable && c.kind == Kind::Json), "{} {}", r.name(), c.name);
            }
        }
    }
}
