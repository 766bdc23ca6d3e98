//! Each raylet's plasma store, spill manager and object manager:
//! `ray_object_store_*`, `ray_spill_manager_*`, `ray_object_manager_bytes`.
//!
//! The model's `store_used` includes fallback (disk-mmapped) allocations; Ray splits
//! them by `Location` (MMAP_SHM vs MMAP_DISK), so the shared-memory figure is the
//! difference. Everything in the model's store is sealed. Small inline objects live in
//! worker heaps (`Location="WORKER_HEAP"`, reported by core workers).
//!
//! Owns: the object store, spill manager and object manager families. Must never:
//! import another collector, or label a series with an object id.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::Core;
use super::scrape::{Family, Scrape};

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let raylet = |n| Core { component: "raylet", at: s.target(n) };
    let shm = |n: &crate::snapshot::NodeView| n.store_used.saturating_sub(n.store_fallback).0;

    let mut f = Family::gauge(enc, "ray_object_store_memory", "Object store memory by location, in bytes.");
    for &n in &s.nodes {
        let at = raylet(n);
        f.sample(&(at, [("Location", "MMAP_SHM"), ("ObjectState", "SEALED")]), shm(n))?;
        f.sample(&(at, [("Location", "MMAP_SHM"), ("ObjectState", "UNSEALED")]), 0u64)?;
        f.sample(&(at, [("Location", "MMAP_DISK"), ("ObjectState", "SEALED")]), n.store_fallback.0)?;
        f.sample(&(at, [("Location", "MMAP_DISK"), ("ObjectState", "UNSEALED")]), 0u64)?;
        f.sample(&(at, [("Location", "SPILLED"), ("ObjectState", "")]), n.store_spilled.0)?;
        let worker = Core { component: "core_worker", at: s.target(n) };
        f.sample(&(worker, [("Location", "WORKER_HEAP"), ("ObjectState", "")]), n.worker_heap_objects)?;
    }
    let mut f = Family::gauge(enc, "ray_object_store_available_memory", "Free object store memory, in bytes.");
    for &n in &s.nodes {
        f.sample(&raylet(n), n.store_capacity.0.saturating_sub(shm(n)))?;
    }
    let mut f = Family::gauge(enc, "ray_object_store_used_memory", "Used object store memory, in bytes.");
    for &n in &s.nodes {
        f.sample(&raylet(n), shm(n))?;
    }
    let mut f =
        Family::gauge(enc, "ray_object_store_fallback_memory", "Object store fallback allocations on disk, in bytes.");
    for &n in &s.nodes {
        f.sample(&raylet(n), n.store_fallback.0)?;
    }
    let mut f =
        Family::gauge(enc, "ray_object_store_num_local_objects", "Number of objects in the local object store.");
    for &n in &s.nodes {
        f.sample(&raylet(n), n.store_num_objects)?;
    }

    let mut f = Family::gauge(enc, "ray_spill_manager_objects", "Local objects by spill state.");
    for &n in &s.nodes {
        let at = raylet(n);
        f.sample(&(at, [("State", "Pinned")]), n.store_num_objects)?;
        f.sample(&(at, [("State", "PendingRestore")]), 0u64)?;
        f.sample(&(at, [("State", "PendingSpill")]), 0u64)?;
    }
    let mut f = Family::gauge(enc, "ray_spill_manager_objects_bytes", "Bytes of local objects by spill state.");
    for &n in &s.nodes {
        let at = raylet(n);
        f.sample(&(at, [("State", "Pinned")]), shm(n))?;
        f.sample(&(at, [("State", "PendingSpill")]), 0u64)?;
        f.sample(&(at, [("State", "PendingRestore")]), 0u64)?;
        f.sample(&(at, [("State", "Spilled")]), n.stats.bytes_spilled)?;
        f.sample(&(at, [("State", "Restored")]), n.stats.bytes_restored)?;
    }
    // A gauge despite the name, as in Ray.
    let mut f = Family::gauge(enc, "ray_spill_manager_request_total", "Cumulative spill and restore requests.");
    for &n in &s.nodes {
        let at = raylet(n);
        f.sample(&(at, [("Type", "Spilled")]), n.stats.objects_spilled)?;
        f.sample(&(at, [("Type", "Restored")]), n.stats.objects_restored)?;
        f.sample(&(at, [("Type", "FailedDeletion")]), 0u64)?;
    }
    // Ray reports throughput only once a node has spilled.
    let mut f = Family::gauge(enc, "ray_spill_manager_throughput_mb", "Spill and restore throughput, in MB/s.");
    for (&n, r) in s.nodes.iter().zip(s.rates) {
        if n.stats.bytes_spilled > 0 {
            let at = raylet(n);
            f.sample(&(at, [("Type", "Spilled")]), r.spill / 1e6)?;
            f.sample(&(at, [("Type", "Restored")]), r.restore / 1e6)?;
        }
    }

    let mut f = Family::gauge(enc, "ray_object_manager_bytes", "Bytes pushed to and received from other nodes.");
    for &n in &s.nodes {
        let at = raylet(n);
        f.sample(&(at, [("Type", "PushedFromLocalPlasma")]), n.stats.bytes_sent)?;
        f.sample(&(at, [("Type", "PushedFromLocalDisk")]), 0u64)?;
        f.sample(&(at, [("Type", "Received")]), n.stats.bytes_received)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn store_memory_by_location_adds_up_to_the_store() {
        let e = all();
        for n in cluster().nodes.iter().filter(|n| n.state == crate::model::NodeState::Alive) {
            let at = [("NodeAddress", &*n.ip)];
            let mmap = e.sum("ray_object_store_memory", &[at[0], ("Location", "MMAP_SHM")])
                + e.sum("ray_object_store_memory", &[at[0], ("Location", "MMAP_DISK")]);
            assert_eq!(mmap, n.store_used.as_f64());
            assert_eq!(e.sum("ray_object_store_memory", &[at[0], ("Location", "SPILLED")]), n.store_spilled.as_f64());
            assert_eq!(
                e.sum("ray_object_store_used_memory", &at) + e.sum("ray_object_store_available_memory", &at),
                n.store_capacity.max(n.store_used.saturating_sub(n.store_fallback)).as_f64()
            );
        }
    }

    #[test]
    fn spill_request_total_is_a_gauge_as_in_ray() {
        let e = all();
        assert_eq!(e.families["ray_spill_manager_request_total"].kind, "gauge");
        let spilled: u64 = cluster()
            .nodes
            .iter()
            .filter(|n| n.state == crate::model::NodeState::Alive)
            .map(|n| n.stats.objects_spilled)
            .sum();
        assert_eq!(e.sum("ray_spill_manager_request_total", &[("Type", "Spilled")]), spilled as f64);
    }

    #[test]
    fn object_manager_bytes_follow_node_traffic() {
        let w = worker(false);
        let e = node(&w.ip);
        assert_eq!(e.sum("ray_object_manager_bytes", &[("Type", "Received")]), w.stats.bytes_received as f64);
    }
}
