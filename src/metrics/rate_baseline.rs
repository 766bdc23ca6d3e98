//! Per-node baselines for rates (`ray_node_network_*_speed`, `ray_node_disk_*_speed`,
//! `*_iops`, `ray_spill_manager_throughput_mb`).
//!
//! A snapshot holds cumulative counters only; a rate needs two of them. The renderer
//! keeps, per node, the counters it last saw and when (in virtual time), and turns the
//! difference into a rate once at least [`MIN_WINDOW_US`] of virtual time has passed.
//! Between windows it repeats the last rate, so scrapes of the same instant (an
//! all-nodes render and a per-node one) agree. State is one entry per node index:
//! bounded by the cluster's size, whatever the scrape rate.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::shared::{counters, Counters, Rates};
use crate::snapshot::NodeView;

/// Shortest virtual-time window a rate is computed over.
pub const MIN_WINDOW_US: u64 = 1_000_000;

/// The counters in a fixed order, so a baseline is one array.
fn to_array(c: &Counters) -> [u64; 8] {
    [
        c.net_sent,
        c.net_received,
        c.disk_read_bytes,
        c.disk_write_bytes,
        c.disk_read_ops,
        c.disk_write_ops,
        c.spilled_bytes,
        c.restored_bytes,
    ]
}

/// The rates of [`to_array`]'s counters, same order.
fn to_rates(a: [f64; 8]) -> Rates {
    Rates {
        net_send: a[0],
        net_receive: a[1],
        disk_read: a[2],
        disk_write: a[3],
        disk_read_iops: a[4],
        disk_write_iops: a[5],
        spill: a[6],
        restore: a[7],
    }
}

#[derive(Clone, Copy, Debug)]
struct Baseline {
    at_us: u64,
    counters: [u64; 8],
    rates: [f64; 8],
}

#[derive(Debug, Default)]
struct Inner {
    nodes: Mutex<Vec<Option<Baseline>>>,
    /// Bytes per node of the last all-nodes render, to size the next one's buffer.
    all_bytes_per_node: AtomicUsize,
    /// Bytes of the last one-node render.
    node_bytes: AtomicUsize,
}

/// Rate baselines shared by every render of one server (cheap to clone).
#[derive(Clone, Debug, Default)]
pub struct RateBaselines(Arc<Inner>);

impl RateBaselines {
    /// Rates for `nodes` at virtual time `now_us`, updating baselines. `fixed` gives a
    /// node's rates when something else measured them (the real machine).
    pub(crate) fn rates(
        &self,
        now_us: u64,
        nodes: &[&NodeView],
        fixed: impl Fn(&NodeView) -> Option<Rates>,
    ) -> Vec<Rates> {
        let mut table = self.0.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        nodes
            .iter()
            .map(|n| {
                if let Some(r) = fixed(n) {
                    return r;
                }
                let idx = n.idx as usize;
                if table.len() <= idx {
                    table.resize(idx + 1, None);
                }
                let now = to_array(&counters(n));
                to_rates(advance(&mut table[idx], now_us, now))
            })
            .collect()
    }

    /// A buffer size for a render of `nodes` nodes (`all`: every node), from the
    /// last render of the same kind; a little headroom so a growing cluster rarely
    /// reallocates.
    pub(crate) fn size_hint(&self, all: bool, nodes: usize) -> usize {
        let last = if all {
            self.0.all_bytes_per_node.load(Ordering::Relaxed) * nodes
        } else {
            self.0.node_bytes.load(Ordering::Relaxed)
        };
        if last == 0 {
            16 * 1024 + nodes * 24 * 1024
        } else {
            last / 8 * 9
        }
    }

    pub(crate) fn record_size(&self, all: bool, nodes: usize, bytes: usize) {
        if all {
            self.0.all_bytes_per_node.store(bytes / nodes.max(1), Ordering::Relaxed);
        } else {
            self.0.node_bytes.store(bytes, Ordering::Relaxed);
        }
    }
}

/// Move one node's baseline to `now` if the window has passed; return its rates.
fn advance(slot: &mut Option<Baseline>, now_us: u64, now: [u64; 8]) -> [f64; 8] {
    match slot {
        // A node seen for the first time, or a new run (time or a counter went back).
        None => {}
        Some(b) if now_us < b.at_us || now.iter().zip(&b.counters).any(|(n, o)| n < o) => {}
        Some(b) => {
            let window = now_us - b.at_us;
            if window >= MIN_WINDOW_US {
                let secs = window as f64 / 1e6;
                for ((rate, new), old) in b.rates.iter_mut().zip(now).zip(b.counters) {
                    *rate = (new - old) as f64 / secs;
                }
                b.at_us = now_us;
                b.counters = now;
            }
            return b.rates;
        }
    }
    *slot = Some(Baseline { at_us: now_us, counters: now, rates: [0.0; 8] });
    [0.0; 8]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sight_has_zero_rate() {
        let mut slot = None;
        assert_eq!(advance(&mut slot, 5, [100; 8]), [0.0; 8]);
    }

    #[test]
    fn rate_is_difference_over_virtual_seconds() {
        let mut slot = None;
        advance(&mut slot, 0, [0; 8]);
        let r = advance(&mut slot, 2_000_000, [4_000; 8]);
        assert_eq!(r, [2_000.0; 8]);
    }

    #[test]
    fn scrapes_within_a_window_repeat_the_last_rate() {
        let mut slot = None;
        advance(&mut slot, 0, [0; 8]);
        advance(&mut slot, 2_000_000, [4_000; 8]);
        assert_eq!(advance(&mut slot, 2_000_500, [9_000; 8]), [2_000.0; 8]);
    }

    #[test]
    fn time_going_back_resets_the_baseline() {
        let mut slot = None;
        advance(&mut slot, 10_000_000, [50; 8]);
        assert_eq!(advance(&mut slot, 1_000, [0; 8]), [0.0; 8]);
        assert_eq!(advance(&mut slot, 1_001_000, [10; 8]), [10.0; 8]);
    }
}
