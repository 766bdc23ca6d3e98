//! What more than one family group reads the same way, so that no collector imports
//! another: a node's rows of the snapshot's per-node tables, and the parts of a
//! modelled node's hardware that `node`, `components` and the rate baselines must
//! agree on (its cumulative IO counters and their rates, its GPUs' memory).
//!
//! Owns: these derivations and their constants. Must never: encode a family, keep
//! state between renders, or hold what only one collector uses (that stays in the
//! collector's own file).

use crate::host::{HostReading, MIB};
use crate::snapshot::NodeView;

/// Log bytes a task writes to the node's disk.
pub(crate) const LOG_BYTES_PER_TASK: u64 = 4 * 1024;
/// Size of one disk operation when spilling or restoring.
pub(crate) const IO_BLOCK: u64 = MIB;
/// Memory of a modelled GPU whose config gives none.
const DEFAULT_GPU_MEMORY: u64 = 16 * 1024 * MIB;
/// Share of a GPU's memory a busy GPU holds.
pub(crate) const GPU_MEMORY_BUSY_SHARE: f64 = 0.9;

/// The rows of one node in a table sorted by node (`running_counts`,
/// `actor_executor_counts`).
pub(crate) fn rows_of<T>(rows: &[T], node: u32, key: impl Fn(&T) -> u32) -> &[T] {
    let start = rows.partition_point(|r| key(r) < node);
    let len = rows[start..].partition_point(|r| key(r) == node);
    &rows[start..start + len]
}

/// Memory of each of a modelled node's GPUs, in MiB.
pub(crate) fn gpu_memory_mib(n: &NodeView) -> u64 {
    (if n.gpu_memory.0 > 0 { n.gpu_memory.0 } else { DEFAULT_GPU_MEMORY }) / MIB
}

/// Cumulative per-node counters that have a rate family.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Counters {
    pub net_sent: u64,
    pub net_received: u64,
    pub disk_read_bytes: u64,
    pub disk_write_bytes: u64,
    pub disk_read_ops: u64,
    pub disk_write_ops: u64,
    pub spilled_bytes: u64,
    pub restored_bytes: u64,
}

/// The cumulative counters behind a modelled node's rate families: disk IO is
/// spilling (writes), restoring (reads) and task logs, one operation per [`IO_BLOCK`]
/// or log write; the network is the object manager's bytes.
pub(crate) fn counters(n: &NodeView) -> Counters {
    let st = &n.stats;
    let logs = st.tasks_started * LOG_BYTES_PER_TASK;
    Counters {
        net_sent: st.bytes_sent,
        net_received: st.bytes_received,
        disk_read_bytes: st.bytes_restored,
        disk_write_bytes: st.bytes_spilled + logs,
        disk_read_ops: st.bytes_restored.div_ceil(IO_BLOCK),
        disk_write_ops: st.bytes_spilled.div_ceil(IO_BLOCK) + st.tasks_started,
        spilled_bytes: st.bytes_spilled,
        restored_bytes: st.bytes_restored,
    }
}

/// Per-second rates of [`Counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Rates {
    pub net_send: f64,
    pub net_receive: f64,
    pub disk_read: f64,
    pub disk_write: f64,
    pub disk_read_iops: f64,
    pub disk_write_iops: f64,
    pub spill: f64,
    pub restore: f64,
}

impl Rates {
    /// The real machine measures its own rates between readings.
    pub(crate) fn from_host(h: &HostReading) -> Rates {
        Rates {
            net_send: h.network_send_speed_bytes_per_s,
            net_receive: h.network_receive_speed_bytes_per_s,
            disk_read: h.disk_io_read_speed_bytes_per_s,
            disk_write: h.disk_io_write_speed_bytes_per_s,
            disk_read_iops: h.disk_read_iops,
            disk_write_iops: h.disk_write_iops,
            spill: 0.0,
            restore: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_finds_a_nodes_run() {
        let rows = [1u32, 1, 3, 3, 3, 7];
        assert_eq!(rows_of(&rows, 3, |r| *r).len(), 3);
        assert!(rows_of(&rows, 2, |r| *r).is_empty());
        assert!(rows_of(&rows, 9, |r| *r).is_empty());
    }
}
