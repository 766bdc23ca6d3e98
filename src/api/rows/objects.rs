//! The `objects` table: Ray's `ObjectState` columns and their cells, from the engine's
//! on-demand object rows.

use super::ids::object_hex;
use super::{col, owned, s, Cell, Column, Ctx, Kind::*};

pub(super) const OBJECT_COLUMNS: &[Column] = &[
    col("object_id", Str, true, false),
    col("object_size", Int, true, false),
    col("task_status", Str, true, false),
    col("attempt_number", Int, true, false),
    col("reference_type", Str, true, false),
    col("call_site", Str, true, false),
    col("type", Str, true, false),
    col("pid", Int, true, false),
    col("ip", Str, true, false),
];

impl Ctx<'_> {
    pub(super) fn object_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let o = &self.tables.objects[i];
        match name {
            "object_id" => owned(object_hex(o.id, o.job)),
            "object_size" => Cell::Int(o.size.0 as i64),
            "task_status" => s(o.task_status.as_str()),
            "attempt_number" => Cell::Int(o.attempt as i64),
            "reference_type" => s(if o.refs > 1 { "USED_BY_PENDING_TASK" } else { "LOCAL_REFERENCE" }),
            // Ray records call sites only with RAY_record_ref_creation_sites=1.
            "call_site" => s("disabled"),
            "type" => s("WORKER"),
            // The owner's worker holds the reference Ray lists.
            "pid" => Cell::Int(o.owner_pid as i64),
            "ip" => self.snap.node(o.owner_node).map_or(s(""), |n| s(&n.ip)),
            _ => Cell::Null,
        }
    }
}
