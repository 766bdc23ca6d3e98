//! Encoding speed of `/metrics` at scale: 2,000 nodes and 20,000 actors (the
//! examples/scale.yaml cluster, with fewer map tasks: the number of `ray_tasks` series
//! does not depend on how many tasks there are).
//!
//! Criterion reports time per render and samples/s (throughput in elements); a short
//! run afterwards prints p50/p99 render times against the 250 ms p99 target.
//!
//! `cargo bench --bench metrics`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rayscope::metrics::{render_all, render_node, RenderContext};
use rayscope::sim::Engine;
use rayscope::snapshot::Snapshot;

// The server's allocator, so buffer growth and page faults cost what they cost there.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SCALE_YAML: &str = r#"
cluster:
  head:
    cpu: 16
    memory: 64GiB
  node_types:
    - name: cpu-worker
      count: 1999
      cpu: 16
      memory: 64GiB
      ip_range: 10.1.0.0/16
workloads:
  - kind: actor_pool
    name: actors
    actors: 20000
    calls_per_actor: 100
    call_duration: 1s
    return_size: 1KiB
  - kind: fan_out
    name: map-reduce
    start: 1s
    tasks: 100000
    reducers: 1000
    task_duration: {min: 500ms, max: 1500ms}
    reduce_duration: 2s
    output_size: 1MiB
sim:
  seed: 7
"#;

/// The scale cluster 10 s in: every actor alive, map tasks running on every node.
fn scale_snapshot() -> Snapshot {
    let cfg = rayscope::config::load_str(SCALE_YAML, "bench.yaml").expect("bench config loads");
    let mut engine = Engine::new(cfg);
    engine.run_until(10_000_000);
    engine.publish(rayscope::sim::PublishOptions::seq(1))
}

fn samples(text: &str) -> u64 {
    text.lines().filter(|l| !l.starts_with('#')).count() as u64
}

fn bench(c: &mut Criterion) {
    let snap = std::sync::Arc::new(scale_snapshot());
    let alive_actors: i64 = snap.actor_executor_counts.iter().map(|a| a.count).sum();
    let ctx = RenderContext { metrics_export_port: 8080, ..RenderContext::default() };
    let text = render_all(&snap, None, &ctx);
    let n = samples(&text);
    println!(
        "scale snapshot: {} nodes, {alive_actors} alive actors; render_all: {n} samples, {:.1} MB",
        snap.nodes.len(),
        text.len() as f64 / 1e6
    );

    let mut group = c.benchmark_group("metrics");
    group.sample_size(20).measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(n));
    group.bench_function("render_all_2000_nodes_20000_actors", |b| {
        b.iter(|| black_box(render_all(black_box(&snap), None, &ctx)))
    });
    let worker = &snap.nodes[snap.nodes.len() / 2].ip;
    let one = render_node(&snap, worker, None, &ctx).unwrap();
    group.throughput(Throughput::Elements(samples(&one)));
    group.bench_function("render_node_one_worker", |b| {
        b.iter(|| black_box(render_node(black_box(&snap), worker, None, &ctx)))
    });
    group.finish();

    // Tail latency, which criterion does not report.
    let mut times: Vec<f64> = (0..100)
        .map(|_| {
            let start = Instant::now();
            black_box(render_all(&snap, None, &ctx));
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let (p50, p99) = (times[49], times[98]);
    println!(
        "render_all over 100 renders: p50 {:.1} ms, p99 {:.1} ms (target 250 ms), {:.2} M samples/s at p50",
        p50 * 1e3,
        p99 * 1e3,
        n as f64 / p50 / 1e6
    );

    // What a gzip scrape adds to a render: `/metrics` compresses each render once, at
    // the level the server uses.
    let body = render_all(&snap, None, &ctx);
    let mut times: Vec<f64> = (0..10)
        .map(|_| {
            let start = Instant::now();
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut enc, body.as_bytes()).unwrap();
            black_box(enc.finish().unwrap());
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!("gzip (fast) of one render, 10 times: p50 {:.1} ms, max {:.1} ms", times[4] * 1e3, times[9] * 1e3);
}

criterion_group!(benches, bench);
criterion_main!(benches);
