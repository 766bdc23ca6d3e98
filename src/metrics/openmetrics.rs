//! OpenMetrics with timestamps, for backfilling a simulated run into Prometheus
//! (`rayscope simulate --openmetrics FILE`, then `promtool tsdb create-blocks-from
//! openmetrics FILE DIR`), so a day of any config can be browsed in the bundle's
//! dashboards.
//!
//! Owns: turning one render of [`render_all`] of a published snapshot (the classic
//! text format, exactly what a scrape of that instant would return) into OpenMetrics
//! lines stamped with the scrape's time, and the closing `# EOF`. Must never: encode a
//! family itself (the collectors in this module's siblings do that, once, for both
//! formats), read the engine (the sampled run publishes a snapshot per instant, as the
//! server's runner does), or stamp anything with wall-clock time; so the same config
//! and seed give the same file.
//!
//! Differences from the served text, all required by OpenMetrics: a counter's family
//! is described without its `_total` suffix (its samples keep it), `untyped` becomes
//! `unknown`, every sample carries a timestamp in seconds, and the file ends in
//! `# EOF`. Each instant repeats the families' metadata, which promtool's parser
//! accepts and keeps every instant self-contained. The wall-clock facts about the
//! render itself (`rayscope_scrape_*`, `rayscope_snapshot_age_seconds`) are left out:
//! they describe this writer, not the cluster, and would make the file differ run to run.

use std::io::{self, Write};
use std::sync::Arc;

use super::{render_all, RenderContext};
use crate::snapshot::Snapshot;

/// Families about the act of rendering, not about the cluster.
const WALL_CLOCK_FAMILIES: [&str; 3] =
    ["rayscope_scrape_duration_seconds", "rayscope_scrape_collector_duration_seconds", "rayscope_snapshot_age_seconds"];

/// Writes one scrape per [`OpenMetricsWriter::write_scrape`] call, then `# EOF` on
/// [`OpenMetricsWriter::finish`].
pub struct OpenMetricsWriter<W: Write> {
    out: W,
    ctx: RenderContext,
    /// Unix time (ms) of virtual time zero.
    start_unix_ms: i64,
    scrapes: u64,
    samples: u64,
}

impl<W: Write> OpenMetricsWriter<W> {
    /// `start_unix_ms`: the Unix time, in milliseconds, that virtual time zero maps to.
    pub fn new(out: W, start_unix_ms: i64, metrics_export_port: u16) -> Self {
        let ctx = RenderContext { metrics_export_port, ..RenderContext::default() };
        OpenMetricsWriter { out, ctx, start_unix_ms, scrapes: 0, samples: 0 }
    }

    /// Imitate Ray's `RAY_metric_cardinality_level` (`None`: the snapshot's version's).
    pub fn with_metric_cardinality(mut self, level: Option<crate::config::MetricCardinality>) -> Self {
        self.ctx.metric_cardinality = level;
        self
    }

    /// Render `snapshot` as a scrape at virtual time `at_us` would see it (modelled
    /// readings only: no host, so the file depends on nothing but config and seed).
    pub fn write_scrape(&mut self, snapshot: &Arc<Snapshot>, at_us: u64) -> io::Result<()> {
        let text = render_all(snapshot, None, &self.ctx);
        let ms = self.start_unix_ms + (at_us / 1000) as i64;
        let stamp = format!(" {}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000));
        self.samples += convert(&text, &stamp, &mut self.out)?;
        self.scrapes += 1;
        Ok(())
    }

    /// Write the terminator and flush; returns (scrapes, samples) written.
    pub fn finish(mut self) -> io::Result<(u64, u64)> {
        self.out.write_all(b"# EOF\n")?;
        self.out.flush()?;
        Ok((self.scrapes, self.samples))
    }
}

/// Copy classic-format `text` to `out` as OpenMetrics, appending `stamp` to every
/// sample; returns how many samples were written.
fn convert(text: &str, stamp: &str, out: &mut impl Write) -> io::Result<u64> {
    let mut samples = 0;
    let mut skipping = false;
    // The classic format puts HELP before TYPE, and only TYPE says whether the name is a
    // counter's (to lose its `_total`); so HELP waits for its TYPE.
    let mut help: Option<(&str, &str)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (kind, name, tail) =
                (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            skipping = WALL_CLOCK_FAMILIES.contains(&name);
            match kind {
                _ if skipping => {}
                "HELP" => help = Some((name, tail)),
                "TYPE" => {
                    let (family, kind) = match tail {
                        "counter" => (name.strip_suffix("_total").unwrap_or(name), tail),
                        "untyped" => (name, "unknown"),
                        _ => (name, tail),
                    };
                    writeln!(out, "# TYPE {family} {kind}")?;
                    if let Some((_, text)) = help.take().filter(|(n, _)| *n == name) {
                        writeln!(out, "# HELP {family} {text}")?;
                    }
                }
                _ => {}
            }
            continue;
        }
        if skipping || line.is_empty() {
            continue;
        }
        out.write_all(line.as_bytes())?;
        out.write_all(stamp.as_bytes())?;
        out.write_all(b"\n")?;
        samples += 1;
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn om(text: &str) -> String {
        let mut out = Vec::new();
        convert(text, " 1700000000.500", &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn samples_are_stamped_and_counter_families_lose_their_total_suffix() {
        let text = "# HELP ray_node_failure_total Node failures.\n# TYPE ray_node_failure_total counter\n\
                    ray_node_failure_total{SessionName=\"s\"} 1\n";
        let got = om(text);
        assert!(got.contains("# TYPE ray_node_failure counter\n# HELP ray_node_failure Node failures.\n"), "{got}");
        assert!(got.contains("ray_node_failure_total{SessionName=\"s\"} 1 1700000000.500\n"), "{got}");
    }

    #[test]
    fn gauges_named_total_keep_their_name_and_untyped_becomes_unknown() {
        let got = om(
            "# TYPE ray_spill_manager_request_total gauge\nray_spill_manager_request_total 3\n# TYPE x untyped\nx 1\n",
        );
        assert!(got.contains("# TYPE ray_spill_manager_request_total gauge\n"), "{got}");
        assert!(got.contains("# TYPE x unknown\n"), "{got}");
    }

    #[test]
    fn wall_clock_families_are_left_out() {
        let got = om("# HELP rayscope_scrape_duration_seconds Took.\n# TYPE rayscope_scrape_duration_seconds gauge\n\
                      rayscope_scrape_duration_seconds 0.01\n# TYPE rayscope_sim_speed gauge\nrayscope_sim_speed 1\n");
        assert!(!got.contains("rayscope_scrape_duration_seconds"), "{got}");
        assert!(got.contains("rayscope_sim_speed 1 1700000000.500\n"), "{got}");
    }
}
