//! The `nodes` table: Ray's `NodeState` columns and their cells, from the snapshot's
//! node views (alive and cached dead nodes alike).

use super::{col, s, Cell, Column, Ctx, Kind::*};
use serde_json::{json, Map, Value};

pub(super) const NODE_COLUMNS: &[Column] = &[
    col("node_id", Str, true, false),
    col("node_ip", Str, true, false),
    col("is_head_node", Bool, true, false),
    col("state", Str, true, false),
    col("state_message", Str, false, false),
    col("node_name", Str, true, false),
    col("resources_total", Json, false, false),
    col("labels", Json, false, false),
    col("start_time_ms", Int, false, true),
    col("end_time_ms", Int, false, true),
];

impl Ctx<'_> {
    pub(super) fn node_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let n = &self.snap.nodes[i];
        match name {
            "node_id" => s(&n.node_id),
            "node_ip" => s(&n.ip),
            "is_head_node" => Cell::Bool(n.is_head),
            "state" => s(n.state.as_str()),
            "state_message" => n.death_reason.map_or(Cell::Null, s),
            // Ray names a node by its IP unless told otherwise.
            "node_name" => s(&n.ip),
            "resources_total" => {
                let mut m = Map::new();
                for (r, total, _) in n.resources.iter() {
                    m.insert(r.to_string(), json!(total));
                }
                m.entry(format!("node:{}", n.ip)).or_insert(json!(1.0));
                if n.is_head {
                    m.entry("node:__internal_head__".to_string()).or_insert(json!(1.0));
                }
                Cell::Json(Value::Object(m))
            }
            "labels" => Cell::Json(json!({"ray.io/node-id": n.node_id, "ray.io/node-group": n.node_type})),
            "start_time_ms" => Cell::Int(self.ms(n.started_at_us)),
            // Ray reports 0 until the node dies.
            "end_time_ms" => Cell::Int(n.died_at_us.map_or(0, |t| self.ms(t))),
            _ => Cell::Null,
        }
    }
}
