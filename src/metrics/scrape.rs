//! One render: what the collectors read ([`Scrape`]), how the family groups that
//! `metrics` lists ([`FamilyGroup`]) are registered with `prometheus_client`, and the
//! [`Family`] writer they share.
//!
//! `prometheus_client` collectors must be `'static`. Snapshots and host readings are
//! already shared through `Arc`s, so each collector holds an `Arc` of the render's
//! inputs ([`RenderInput`]) and builds the borrowed [`Scrape`] view when it encodes;
//! nothing is copied and work done once per render (rates) is done before.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeGaugeValue, EncodeLabelSet, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::labels::{Target, WorkerId};
use super::shared::Rates;
use super::RenderContext;
use crate::config::MetricCardinality;
use crate::host::HostReading;
use crate::snapshot::{NodeView, Snapshot};

/// A family group: a pure function from a scrape to encoded families.
pub(crate) type EncodeFn = fn(&Scrape<'_>, &mut DescriptorEncoder<'_>) -> fmt::Result;

/// A family group as registered: the name [`RenderContext::disabled_collectors`]
/// switches it off by, its encoder, and the labels the registry adds to its series.
pub(crate) struct FamilyGroup {
    pub name: &'static str,
    pub encode: EncodeFn,
    pub labels: RegistryLabels,
}

/// Which of the session's labels the registry puts on a group's series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegistryLabels {
    /// `SessionName` and `Version`: every `ray_*` group.
    SessionAndVersion,
    /// `SessionName` only: Ray's autoscaler, a Python registry.
    Session,
    /// `Version` only: our own `rayscope_*` groups.
    Version,
}

/// Parsed `major.minor` of the emulated Ray version, for the few names that changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RayVersion(pub u32, pub u32);

impl RayVersion {
    pub(crate) fn parse(s: &str) -> RayVersion {
        let mut parts = s.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        // Anything unparsable reads as the newest layout.
        match (parts.next(), parts.next()) {
            (Some(major), Some(minor)) if major > 0 => RayVersion(major, minor),
            _ => RayVersion(u32::MAX, 0),
        }
    }
}

/// Everything one render reads.
pub(crate) struct Scrape<'a> {
    pub snap: &'a Snapshot,
    host: Option<&'a HostReading>,
    pub ctx: &'a RenderContext,
    pub version: RayVersion,
    /// `RAY_metric_cardinality_level`: the context's, else the version's default, as
    /// that version's default backend applies it.
    pub cardinality: MetricCardinality,
    /// Alive nodes whose series this render includes, in node order.
    pub nodes: Vec<&'a NodeView>,
    /// Byte and operation rates of `nodes`, same order.
    pub rates: &'a [Rates],
    /// Whether the cluster-wide families (served by the head in Ray) are included.
    pub cluster: bool,
    /// The head node if alive, whether or not it is in `nodes`.
    pub head: Option<&'a NodeView>,
    port: String,
    started: Instant,
    timings: &'a Mutex<Vec<(&'static str, f64)>>,
}

/// What one render reads, owned (through `Arc`s) so collectors can be `'static`.
pub(crate) struct RenderInput {
    snap: Arc<Snapshot>,
    host: Option<Arc<HostReading>>,
    ctx: RenderContext,
    /// The one node rendered (`/metrics/nodes/<ip>`), or every alive node.
    only: Option<usize>,
    /// Rates of the rendered nodes, computed once per render (it updates baselines).
    rates: Vec<Rates>,
    started: Instant,
    timings: Mutex<Vec<(&'static str, f64)>>,
}

impl RenderInput {
    fn new(
        snap: Arc<Snapshot>,
        host: Option<Arc<HostReading>>,
        ctx: RenderContext,
        only: Option<usize>,
        collectors: usize,
    ) -> RenderInput {
        let started = Instant::now();
        let rates = {
            let view = Scrape::view(&snap, host.as_deref(), &ctx, only, &[], started, &NO_TIMINGS);
            let host_rates = host.as_deref().map(Rates::from_host);
            ctx.rate_baselines.rates(snap.sim_time_us.as_micros(), &view.nodes, |n| {
                if n.is_head {
                    host_rates
                } else {
                    None
                }
            })
        };
        RenderInput { snap, host, ctx, only, rates, started, timings: Mutex::new(Vec::with_capacity(collectors)) }
    }

    fn scrape(&self) -> Scrape<'_> {
        Scrape::view(&self.snap, self.host.as_deref(), &self.ctx, self.only, &self.rates, self.started, &self.timings)
    }
}

static NO_TIMINGS: Mutex<Vec<(&'static str, f64)>> = Mutex::new(Vec::new());

impl<'a> Scrape<'a> {
    fn view(
        snap: &'a Snapshot,
        host: Option<&'a HostReading>,
        ctx: &'a RenderContext,
        only: Option<usize>,
        rates: &'a [Rates],
        started: Instant,
        timings: &'a Mutex<Vec<(&'static str, f64)>>,
    ) -> Scrape<'a> {
        let (nodes, cluster) = match only.and_then(|i| snap.nodes.get(i)) {
            Some(n) => (vec![&**n], n.is_head),
            // A crashed raylet (the GCS has not marked it dead yet) exports nothing, as
            // its endpoint does not answer; the GCS's own series still count it.
            None => (snap.nodes.iter().filter(|n| n.answers()).map(|n| &**n).collect(), true),
        };
        // A dead head serves nothing: its cluster-wide families go with it.
        let head = snap.head_node().filter(|h| h.state == crate::model::NodeState::Alive);
        let version = RayVersion::parse(&snap.version);
        Scrape {
            snap,
            host,
            ctx,
            version,
            cardinality: {
                let v = (version.0, version.1);
                ctx.metric_cardinality.unwrap_or_else(|| MetricCardinality::default_for(v)).effective(v)
            },
            nodes,
            rates,
            cluster,
            head,
            port: ctx.metrics_export_port.to_string(),
            started,
            timings,
        }
    }

    /// The scrape target of a node (its `instance` label).
    pub(crate) fn target(&self, n: &'a NodeView) -> Target<'_> {
        Target { ip: &n.ip, port: &self.port, head: n.is_head }
    }

    /// `WorkerId` on a `ray_tasks` or `ray_actors` series of `worker`, where the
    /// cardinality level keeps it (legacy only).
    pub(crate) fn task_worker_id(&self, worker: WorkerId) -> Option<WorkerId> {
        (self.cardinality == MetricCardinality::Legacy).then_some(worker)
    }

    /// A task's or actor's `Name` label, unless the cardinality level drops it (low).
    pub(crate) fn task_name<'n>(&self, name: &'n str) -> Option<&'n str> {
        (self.cardinality != MetricCardinality::Low).then_some(name)
    }

    /// The head's target, for series Ray's GCS, autoscaler or head reporter serve.
    pub(crate) fn head_target(&self) -> Option<Target<'_>> {
        self.head.map(|h| self.target(h))
    }

    /// The real machine's reading, for the head node only.
    pub(crate) fn host_for(&self, n: &NodeView) -> Option<&'a HostReading> {
        if n.is_head {
            self.host
        } else {
            None
        }
    }

    /// Seconds since the render began.
    pub(crate) fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Seconds each collector that already ran took.
    pub(crate) fn timings(&self) -> Vec<(&'static str, f64)> {
        self.timings.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A family group as a `prometheus_client` collector: builds fresh metrics from the
/// render's inputs every time it is encoded, and times itself.
struct Group {
    name: &'static str,
    encode: EncodeFn,
    input: Arc<RenderInput>,
}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group").field("name", &self.name).finish()
    }
}

impl Collector for Group {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let scrape = self.input.scrape();
        let start = Instant::now();
        let result = (self.encode)(&scrape, &mut encoder);
        self.input
            .timings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((self.name, start.elapsed().as_secs_f64()));
        result
    }
}

/// Encode one alive node's endpoint (`only`), or every alive node's series with the
/// cluster-wide families (`None`), with the `collectors` the context lets run, in order.
/// The head's endpoint has the cluster-wide families too.
pub(crate) fn render(
    snap: &Arc<Snapshot>,
    host: Option<&Arc<HostReading>>,
    ctx: &RenderContext,
    only: Option<usize>,
    collectors: &[FamilyGroup],
) -> String {
    let mut out = String::new();
    render_into(&mut out, snap, host, ctx, only, collectors);
    out
}

/// [`render`] into `out`, which is cleared first: a caller that renders again and again
/// can hand back the last buffer, whose pages are already mapped (a page the kernel
/// must zero on first touch costs more than the encoding written into it).
pub(crate) fn render_into(
    out: &mut String,
    snap: &Arc<Snapshot>,
    host: Option<&Arc<HostReading>>,
    ctx: &RenderContext,
    only: Option<usize>,
    collectors: &[FamilyGroup],
) {
    out.clear();
    let all = only.is_none();
    let input = Arc::new(RenderInput::new(snap.clone(), host.cloned(), ctx.clone(), only, collectors.len()));
    let node_count = input.rates.len();
    let mut registry = Registry::default();
    for c in collectors.iter().filter(|c| ctx.runs(c.name)) {
        let session = ("SessionName".into(), snap.session_name.clone().into());
        let version = ("Version".into(), snap.version.clone().into());
        let labels = match c.labels {
            RegistryLabels::SessionAndVersion => vec![session, version],
            RegistryLabels::Session => vec![session],
            RegistryLabels::Version => vec![version],
        };
        registry.sub_registry_with_labels(labels.into_iter()).register_collector(Box::new(Group {
            name: c.name,
            encode: c.encode,
            input: input.clone(),
        }));
    }
    let hint = ctx.rate_baselines.size_hint(all, node_count);
    if out.capacity() < hint {
        // A fresh buffer, not a grown one: growing copies the old capacity's bytes.
        *out = String::with_capacity(hint);
    }
    prometheus_client::encoding::text::encode_registry(out, &registry).expect("writing to a String cannot fail");
    ctx.rate_baselines.record_size(all, node_count, out.len());
}

/// One family, written lazily: its `# HELP`/`# TYPE` appear with its first sample,
/// so a family with nothing to say (no GPUs here, no OOM kill yet) is left out.
pub(crate) struct Family<'e, 'a> {
    state: FamilyState<'e, 'a>,
    name: &'static str,
    help: &'static str,
    kind: MetricType,
}

enum FamilyState<'e, 'a> {
    Pending(&'e mut DescriptorEncoder<'a>),
    Open(MetricEncoder<'e>),
    Poisoned,
}

impl<'e, 'a> Family<'e, 'a> {
    pub(crate) fn gauge(enc: &'e mut DescriptorEncoder<'a>, name: &'static str, help: &'static str) -> Self {
        Family { state: FamilyState::Pending(enc), name, help, kind: MetricType::Gauge }
    }

    /// A counter, described under its full name (which must end in `_total`), as the
    /// classic text format wants.
    pub(crate) fn counter(enc: &'e mut DescriptorEncoder<'a>, name: &'static str, help: &'static str) -> Self {
        debug_assert!(name.ends_with("_total"), "counter {name} must end in _total");
        Family { state: FamilyState::Pending(enc), name, help, kind: MetricType::Counter }
    }

    pub(crate) fn histogram(enc: &'e mut DescriptorEncoder<'a>, name: &'static str, help: &'static str) -> Self {
        Family { state: FamilyState::Pending(enc), name, help, kind: MetricType::Histogram }
    }

    fn open(&mut self) -> Result<&mut MetricEncoder<'e>, fmt::Error> {
        if let FamilyState::Pending(_) = self.state {
            let FamilyState::Pending(enc) = std::mem::replace(&mut self.state, FamilyState::Poisoned) else {
                unreachable!()
            };
            self.state = FamilyState::Open(enc.encode_descriptor(self.name, self.help, None, self.kind)?);
        }
        match &mut self.state {
            FamilyState::Open(m) => Ok(m),
            _ => Err(fmt::Error),
        }
    }

    /// One sample of a gauge or counter.
    pub(crate) fn sample(&mut self, labels: &impl EncodeLabelSet, value: impl EncodeGaugeValue) -> fmt::Result {
        self.open()?.encode_family(labels)?.encode_gauge(&value)
    }

    /// One histogram series; `counts` are per bucket (not cumulative), the last +Inf.
    pub(crate) fn histogram_sample(
        &mut self,
        labels: &impl EncodeLabelSet,
        bounds: &[f64],
        counts: &[u64],
        sum: f64,
    ) -> fmt::Result {
        let mut buckets = [(0.0, 0u64); 16];
        let n = counts.len().min(buckets.len());
        for (i, slot) in buckets.iter_mut().enumerate().take(n) {
            *slot = (bounds.get(i).copied().unwrap_or(f64::INFINITY), counts[i]);
        }
        let count = counts.iter().sum();
        self.open()?.encode_family(labels)?.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            sum,
            count,
            &buckets[..n],
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_parses_major_minor() {
        assert_eq!(RayVersion::parse("2.60.0"), RayVersion(2, 60));
        assert_eq!(RayVersion::parse("2.49.2"), RayVersion(2, 49));
        assert!(RayVersion::parse("nightly") > RayVersion(2, 60));
    }
}
