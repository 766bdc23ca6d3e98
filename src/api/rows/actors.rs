//! The `actors` table: Ray's `ActorState` columns and their cells, from the engine's
//! on-demand actor rows.

use super::ids::{actor_hex, job_hex, pg_hex};
use super::{col, owned, s, Cell, Column, Ctx, Kind::*};
use serde_json::json;

pub(super) const ACTOR_COLUMNS: &[Column] = &[
    col("actor_id", Str, true, false),
    col("class_name", Str, true, false),
    col("state", Str, true, false),
    col("job_id", Str, true, false),
    col("name", Str, true, false),
    col("node_id", Str, true, false),
    col("pid", Int, true, false),
    col("ray_namespace", Str, true, false),
    col("serialized_runtime_env", Str, false, true),
    col("required_resources", Json, false, true),
    col("death_cause", Json, false, true),
    col("is_detached", Bool, false, true),
    col("placement_group_id", Str, true, true),
    col("repr_name", Str, true, true),
    // int64 fields, which Ray's protobuf-to-JSON conversion writes as strings.
    col("num_restarts", Str, false, true),
    col("num_restarts_due_to_lineage_reconstruction", Str, false, true),
    col("num_restarts_due_to_node_preemption", Str, false, true),
    col("call_site", Str, false, true),
    col("label_selector", Json, false, true),
    col("fallback_strategy", Json, false, true),
];

impl Ctx<'_> {
    pub(super) fn actor_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let a = &self.tables.actors[i];
        match name {
            "actor_id" => owned(actor_hex(a.id, a.job)),
            "class_name" => s(self.snap.name(a.class)),
            "state" => s(a.state.as_str()),
            "job_id" => owned(job_hex(a.job)),
            "name" => s(""),
            "node_id" => self.node_id(a.node),
            "pid" => Cell::Int(a.pid as i64),
            "ray_namespace" => s("default"),
            "serialized_runtime_env" => s("{}"),
            "required_resources" => self.required_resources(a.creation_spec),
            "death_cause" => match &a.death_cause {
                Some(cause) => {
                    let node_ip = a.node.and_then(|n| self.snap.node(n)).map_or("", |n| &*n.ip);
                    Cell::Json(json!({"actor_died_error_context": {
                        "error_message": cause,
                        "owner_id": "",
                        "owner_ip_address": self.snap.node(self.snap.head).map_or("", |n| &*n.ip),
                        "node_ip_address": node_ip,
                        "pid": a.pid,
                        "name": "",
                        "ray_namespace": "default",
                        "class_name": self.snap.name(a.class),
                        "actor_id": actor_hex(a.id, a.job),
                        "never_started": a.node.is_none(),
                        "reason": crate::model::actor::death_reason(cause),
                    }}))
                }
                None => Cell::Null,
            },
            "is_detached" => Cell::Bool(false),
            "placement_group_id" => a.placement_group.map_or(Cell::Null, |p| owned(pg_hex(p, a.job))),
            "repr_name" => s(""),
            "num_restarts" => owned(a.num_restarts.to_string()),
            "num_restarts_due_to_lineage_reconstruction" | "num_restarts_due_to_node_preemption" => s("0"),
            // Ray records call sites only with RAY_record_task_actor_creation_sites=1.
            "call_site" => s(""),
            "label_selector" | "fallback_strategy" => Cell::Json(json!({})),
            _ => Cell::Null,
        }
    }
}
