//! Flow Insight: views of a job's calls (seed 003, `ray-facts.md` Part B), computed
//! from the records a snapshot carries (`snapshot::flow`, made by the engine's
//! `sim::flow_recorder`) as pure functions of the records and an instant.
//!
//! Owns: replaying the records into spans ([`spans`]), one view per file, and the
//! dispatch from a view's name to its rendering ([`render`]), shared by the API and
//! `rayscope flow`.
//! Must never: run on the engine thread, import it (`sim`: a run reaches the views
//! only as a snapshot), or change what it reads.

pub mod ant;
pub mod bottleneck;
pub mod critical_path;
pub mod derived;
pub mod emit;
pub mod findings;
pub mod flame;
pub mod graph;
pub mod lanes;
pub mod observed;
pub mod physical;
pub mod replay;
pub mod spans;
pub mod stack;
pub mod timeline;
pub mod whatif;

use crate::snapshot::flow::JobRecord;
use crate::snapshot::NodeView;
use derived::Derived;
use spans::Spans;
use std::sync::Arc;

/// One of the views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Graph(graph::Level),
    /// Nodes, the busiest first, at most this many (`None`: all).
    Physical(Option<usize>),
    Stack,
    /// The flame graph as folded stacks, or as SVG, in a mode.
    Folded(flame::Mode),
    Svg(flame::Mode),
    /// The Gantt, over a time window and cut at a number of executions.
    Timeline(timeline::Window),
    /// The Gantt's overview: lanes of time buckets over the whole job or a window.
    Lanes(lanes::Ask),
    Bottlenecks,
    /// What fixing each candidate saves, from re-runs of the job in the replay model.
    Impact,
    /// Ray's documented patterns and anti-patterns found in the job (`findings`).
    Findings,
}

/// A rendered view: its body and content type.
pub struct Rendered {
    pub body: Vec<u8>,
    pub content_type: &'static str,
    /// What a cut answer holds, for the API's response headers: (executions
    /// returned, executions in the window). Only the timeline is cut.
    pub cut: Option<(usize, usize)>,
}

fn json(v: serde_json::Value) -> Rendered {
    Rendered { body: serde_json::to_vec(&v).unwrap_or_default(), content_type: "application/json", cut: None }
}

fn text(body: String, content_type: &'static str) -> Rendered {
    Rendered { body: body.into_bytes(), content_type, cut: None }
}

/// Render `view` of `job` from its spans (replayed up to the view's instant,
/// `spans.at`) and what was derived from them already. `latest`: that instant is "now".
pub fn render(
    job: &JobRecord,
    spans: &Spans,
    derived: &Derived,
    latest: bool,
    view: View,
    nodes: &[Arc<NodeView>],
) -> Result<Rendered, flame::FlameError> {
    // The flame graph's folded stacks: the wall-time ones are worth keeping.
    let folded = |mode| match mode {
        flame::Mode::Wall => derived.wall(job, spans),
        flame::Mode::Execution => Arc::new(flame::folded(job, spans, mode)),
    };
    Ok(match view {
        View::Graph(level) => json(graph::graph(job, spans, level, latest)),
        View::Physical(limit) => Rendered {
            body: physical::physical_json(job, spans, nodes, limit),
            content_type: "application/json",
            cut: None,
        },
        View::Stack => json(stack::stack(job, spans, nodes)),
        View::Timeline(window) => {
            let t = timeline::timeline_json(job, spans, &window);
            Rendered { cut: Some((t.returned, t.total)), ..text(t.json, "application/json") }
        }
        View::Lanes(ask) => {
            Rendered { body: lanes::lanes_json(job, spans, nodes, &ask), content_type: "application/json", cut: None }
        }
        View::Bottlenecks => json(bottleneck::bottlenecks_of(
            job,
            spans,
            &derived.path(job, spans),
            derived.instant(job, spans).as_ref().as_ref(),
            nodes,
        )),
        View::Findings => json(findings::findings_json(job, spans, &derived.findings(job, spans), nodes)),
        View::Impact => json(whatif::impact_json_of(job, spans, derived.impacts(job, spans).as_ref().as_ref())),
        View::Folded(mode) => text(flame::folded_text(&folded(mode)), "text/plain; charset=utf-8"),
        View::Svg(mode) => text(
            flame::svg(&format!("job {} ({}), {} time", job.job_hex, job.name, mode.as_str()), &folded(mode))?,
            "image/svg+xml",
        ),
    })
}
