//! Identifiers. Dense indices are used internally for speed; the hex forms
//! shown to users follow Ray's shapes (job ids like `01000000`, 56-hex node ids).

use std::fmt;

/// Lower-case hex digits by nibble, as Ray prints ids: the one table behind the
/// allocation-free hex writers (the event log's lines, Flow Insight's timeline).
pub const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident($inner:ty)) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);
        impl $name {
            #[inline]
            pub fn index(self) -> usize { self.0 as usize }
        }
    };
}

id_type!(
    /// Dense index of a node in the node table. A restarted node is a new node; the slot of
    /// a dead node forgotten past `sim.dead_node_capacity` goes to the next node to join.
    NodeIdx(u32)
);
id_type!(
    /// A task attempt chain; retries keep the id and bump `attempt_number`, as in Ray.
    TaskId(u64)
);
id_type!(
    /// An actor; kept stable across restarts.
    ActorId(u64)
);
id_type!(
    /// An object (task return or `ray.put`).
    ObjectId(u64)
);
id_type!(
    /// A job; rendered like Ray's 4-byte little-endian hex (`01000000` for job 1).
    JobId(u32)
);
id_type!(
    /// A placement group.
    PgId(u32)
);
id_type!(
    /// An interned function, actor class or `Class.method` name.
    NameId(u32)
);

impl JobId {
    /// Ray renders job ids as the little-endian hex of a 4-byte integer.
    pub fn hex(self) -> String {
        let b = self.0.to_le_bytes();
        format!("{:02x}{:02x}{:02x}{:02x}", b[0], b[1], b[2], b[3])
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

/// Deterministic 56-hex node id (28 bytes, as Ray's NodeID), derived from the node index
/// and the session seed so ids differ between sessions but not between runs of one seed.
pub fn node_id_hex(seed: u64, idx: NodeIdx) -> String {
    let mut out = String::with_capacity(56);
    let mut x = seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(idx.0 as u64 + 1));
    for _ in 0..7 {
        // splitmix64 step: cheap, well-mixed, reproducible
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        out.push_str(&format!("{:08x}", (z >> 32) as u32));
    }
    out
}

/// An actor id as Ray's State API writes it: 12 bytes of actor, then its job's 4.
pub fn actor_id_hex(actor: u64, job: u32) -> String {
    format!("{actor:024x}{}", JobId(job).hex())
}

/// A task id as Ray's State API writes it (a driver's is all `f` but its job's bytes).
pub fn task_id_hex(task: u64, job: u32, driver: bool) -> String {
    if driver {
        return format!("{}{}", "f".repeat(40), JobId(job).hex());
    }
    format!("{task:016x}{}{}", "f".repeat(24), JobId(job).hex())
}

/// A worker id (28 bytes, 56 hex) for the worker process `pid`.
pub fn worker_id_hex(pid: u32) -> String {
    format!("{}{pid:08x}", "e".repeat(48))
}

/// A driver's process id. Drivers and normal-task workers are not processes the model
/// allocates pids for (actors are), so theirs are derived, in ranges that cannot meet
/// the actors' (which count up from 1,000) within Linux's `pid_max` (4,194,304).
pub fn driver_pid(job: u32) -> u32 {
    2_000_000 + job % 1_000_000
}

/// The process id of the worker that runs normal task `task` (see [`driver_pid`]).
pub fn worker_pid(task: u64) -> u32 {
    3_000_000 + (task % 1_000_000) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_hex_matches_rays_little_endian_form() {
        assert_eq!(JobId(1).hex(), "01000000");
        assert_eq!(JobId(258).hex(), "02010000");
    }

    #[test]
    fn node_ids_are_56_hex_and_distinct() {
        let a = node_id_hex(7, NodeIdx(0));
        let b = node_id_hex(7, NodeIdx(1));
        assert_eq!(a.len(), 56);
        assert_ne!(a, b);
        assert_eq!(a, node_id_hex(7, NodeIdx(0)));
    }
}
