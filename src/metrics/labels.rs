//! The label sets Ray's processes put on their series, written without allocating.
//!
//! `SessionName` and `Version` are not here: the registry adds them to every series.
//! Keys are Ray's (CamelCase for C++ tags and reporter keys), see ray-facts.md C2.

use std::fmt::{self, Write};

use prometheus_client::encoding::{EncodeLabel, EncodeLabelSet, EncodeLabelValue, LabelSetEncoder, LabelValueEncoder};

/// Port of the head's autoscaler metrics target (`AUTOSCALER_METRIC_PORT`), used in
/// the `instance` label of `autoscaler_*` series.
pub const AUTOSCALER_METRIC_PORT: u16 = 44217;

/// A node as a scrape target.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub ip: &'a str,
    /// `metrics_export_port`, already formatted.
    pub port: &'a str,
    pub head: bool,
}

/// `instance="<ip>:<port>"`.
#[derive(Clone, Copy)]
pub(crate) struct Instance<'a>(pub &'a str, pub &'a str);

impl EncodeLabelValue for Instance<'_> {
    fn encode(&self, enc: &mut LabelValueEncoder) -> fmt::Result {
        enc.write_str(self.0)?;
        enc.write_str(":")?;
        enc.write_str(self.1)
    }
}

/// Write one `key="value"` pair into a label set.
pub(crate) fn put(enc: &mut LabelSetEncoder, key: &'static str, value: impl EncodeLabelValue) -> fmt::Result {
    (key, value).encode(enc.encode_label())
}

/// Series from a raylet, the GCS or a core worker: `Component`, `NodeAddress`, `instance`.
#[derive(Clone, Copy)]
pub(crate) struct Core<'a> {
    pub component: &'static str,
    pub at: Target<'a>,
}

impl EncodeLabelSet for Core<'_> {
    fn encode(&self, enc: &mut LabelSetEncoder) -> fmt::Result {
        put(enc, "Component", self.component)?;
        put(enc, "NodeAddress", self.at.ip)?;
        put(enc, "instance", Instance(self.at.ip, self.at.port))
    }
}

/// Series from a node's reporter (`ray_node_*`): `ip`, `IsHeadNode`, `RayNodeType`, `instance`.
#[derive(Clone, Copy)]
pub(crate) struct NodeLabels<'a>(pub Target<'a>);

impl EncodeLabelSet for NodeLabels<'_> {
    fn encode(&self, enc: &mut LabelSetEncoder) -> fmt::Result {
        let t = &self.0;
        put(enc, "ip", t.ip)?;
        put(enc, "IsHeadNode", if t.head { "true" } else { "false" })?;
        put(enc, "RayNodeType", if t.head { "head" } else { "worker" })?;
        put(enc, "instance", Instance(t.ip, t.port))
    }
}

/// A process title: a system component (`raylet`) or a worker (`ray::<name>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Title<'a> {
    System(&'static str),
    Worker(&'a str),
}

impl EncodeLabelValue for Title<'_> {
    fn encode(&self, enc: &mut LabelValueEncoder) -> fmt::Result {
        match self {
            Title::System(s) => enc.write_str(s),
            Title::Worker(name) => {
                enc.write_str("ray::")?;
                enc.write_str(name)
            }
        }
    }
}

/// A pid, or `""` for worker series aggregated by title.
#[derive(Clone, Copy)]
pub(crate) struct Pid(pub Option<u32>);

impl EncodeLabelValue for Pid {
    fn encode(&self, enc: &mut LabelValueEncoder) -> fmt::Result {
        match self.0 {
            Some(pid) => pid.encode(enc),
            None => Ok(()),
        }
    }
}

/// Series from a node's reporter about one process (`ray_component_*`):
/// `ip`, `pid`, `Component`, `instance`.
#[derive(Clone, Copy)]
pub(crate) struct ProcessLabels<'a> {
    pub at: Target<'a>,
    pub pid: Option<u32>,
    pub title: Title<'a>,
}

impl EncodeLabelSet for ProcessLabels<'_> {
    fn encode(&self, enc: &mut LabelSetEncoder) -> fmt::Result {
        put(enc, "ip", self.at.ip)?;
        put(enc, "pid", Pid(self.pid))?;
        put(enc, "Component", self.title)?;
        put(enc, "instance", Instance(self.at.ip, self.at.port))
    }
}

/// Series from a node's reporter about one component's GPU use
/// (`ray_component_gpu_*`): `ip`, `Component`, `instance` (Ray tags these without `pid`).
#[derive(Clone, Copy)]
pub(crate) struct ComponentLabels<'a> {
    pub at: Target<'a>,
    pub title: Title<'a>,
}

impl EncodeLabelSet for ComponentLabels<'_> {
    fn encode(&self, enc: &mut LabelSetEncoder) -> fmt::Result {
        put(enc, "ip", self.at.ip)?;
        put(enc, "Component", self.title)?;
        put(enc, "instance", Instance(self.at.ip, self.at.port))
    }
}

/// A GPU's identity: `GpuIndex`, `GpuDeviceName`, `GpuUuid`.
#[derive(Clone, Copy)]
pub(crate) struct GpuLabels<'a> {
    pub index: u32,
    pub name: &'a str,
    pub uuid: Uuid<'a>,
}

/// A real GPU's uuid, or one made up from the node id and index (`GPU-xxxxxxxx-…`).
#[derive(Clone, Copy)]
pub(crate) enum Uuid<'a> {
    Real(&'a str),
    Modelled { node_id: &'a str, index: u32 },
}

impl EncodeLabelValue for Uuid<'_> {
    fn encode(&self, enc: &mut LabelValueEncoder) -> fmt::Result {
        match *self {
            Uuid::Real(s) => enc.write_str(s),
            Uuid::Modelled { node_id, index } => {
                // 8-4-4-4-12 hex digits: the node id's first 28, then the index.
                let hex = |from: usize, to: usize| node_id.get(from..to).unwrap_or("0");
                write!(
                    enc,
                    "GPU-{}-{}-{}-{}-{}{:04x}",
                    hex(0, 8),
                    hex(8, 12),
                    hex(12, 16),
                    hex(16, 20),
                    hex(20, 28),
                    index
                )
            }
        }
    }
}

impl EncodeLabelSet for GpuLabels<'_> {
    fn encode(&self, enc: &mut LabelSetEncoder) -> fmt::Result {
        put(enc, "GpuIndex", self.index)?;
        put(enc, "GpuDeviceName", self.name)?;
        put(enc, "GpuUuid", self.uuid)
    }
}

/// A `WorkerId` as Ray's legacy cardinality level writes it: `""` on GCS and raylet
/// series, a worker's 56-hex id on a core worker's.
#[derive(Clone, Copy)]
pub(crate) enum WorkerId {
    /// The GCS or a raylet: not a worker.
    System,
    /// The core workers of node `idx`. The model keeps per-node aggregates where Ray has
    /// one series per worker, so a node's worker series share one made-up id
    /// (`ffffffff` then the node index, 56 hex digits in all).
    OfNode(u32),
}

impl EncodeLabelValue for WorkerId {
    fn encode(&self, enc: &mut LabelValueEncoder) -> fmt::Result {
        match *self {
            WorkerId::System => Ok(()),
            WorkerId::OfNode(idx) => write!(enc, "ffffffff{idx:048x}"),
        }
    }
}

/// `ray_tasks` and `ray_actors` labels: `State`, `Name` unless the cardinality level
/// drops it, the `rest`, and `WorkerId` where the level keeps it (legacy).
#[derive(Clone, Copy)]
pub(crate) struct TaskOrActor<'a, const N: usize> {
    pub state: &'a str,
    pub name: Option<&'a str>,
    pub rest: [(&'static str, &'a str); N],
    pub worker: Option<WorkerId>,
}

impl<const N: usize> EncodeLabelSet for TaskOrActor<'_, N> {
    fn encode(&self, enc: &mut LabelSetEncoder) -> fmt::Result {
        put(enc, "State", self.state)?;
        if let Some(name) = self.name {
            put(enc, "Name", name)?;
        }
        for (key, value) in self.rest {
            put(enc, key, value)?;
        }
        match self.worker {
            Some(worker) => put(enc, "WorkerId", worker),
            None => Ok(()),
        }
    }
}
