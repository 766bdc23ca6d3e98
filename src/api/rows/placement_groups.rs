//! The `placement_groups` table: Ray's `PlacementGroupState` columns and their cells,
//! from the engine's on-demand placement group rows.

use super::ids::{job_hex, pg_hex};
use super::{col, owned, s, Cell, Column, Ctx, Kind::*};
use serde_json::{json, Map, Value};

pub(super) const PG_COLUMNS: &[Column] = &[
    col("placement_group_id", Str, true, false),
    col("name", Str, true, false),
    col("creator_job_id", Str, true, false),
    col("state", Str, true, false),
    col("bundles", Json, false, true),
    col("is_detached", Bool, true, true),
    col("stats", Json, false, true),
    col("topology_strategy", Json, false, true),
    col("topology_assignments", Json, false, true),
];

impl Ctx<'_> {
    pub(super) fn pg_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let p = &self.tables.placement_groups[i];
        match name {
            "placement_group_id" => owned(pg_hex(p.id, p.job)),
            "name" => s(&p.name),
            "creator_job_id" => owned(job_hex(p.job)),
            "state" => s(p.state.as_str()),
            "bundles" => Cell::Json(Value::Array(
                p.bundles
                    .iter()
                    .enumerate()
                    .map(|(index, (resources, node))| {
                        let unit: Map<String, Value> = resources.iter().map(|(r, q)| (r.clone(), json!(q))).collect();
                        json!({
                            "bundle_id": format!("{}:{index}", pg_hex(p.id, p.job)),
                            "node_id": self.node_id(*node).into_value(),
                            "unit_resources": unit,
                        })
                    })
                    .collect(),
            )),
            "is_detached" => Cell::Bool(false),
            "stats" => Cell::Json(json!({"scheduling_state": p.state.as_str(), "strategy": p.strategy.as_str()})),
            "topology_strategy" | "topology_assignments" => Cell::Null,
            _ => Cell::Null,
        }
    }
}
