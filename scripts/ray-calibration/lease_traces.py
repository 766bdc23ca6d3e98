#!/usr/bin/env python3
"""When each task of two suite workloads ran, and on which worker: what the model's
per-task leases leave out of `spillback` and of cold `noop_tasks` (docs/fidelity.md).

* spillback: the suite's case (a head and a worker node of 2 CPUs each, the workers
  warmed, 40 tasks of 100 ms). Per worker: how many tasks, when its first began, and
  each idle stretch between two of its tasks longer than 20 ms (a lease given back and
  a new one waited for: Ray's owner returns a lease once it is older than
  `worker_lease_timeout_milliseconds`, 500 ms).
* cold_noop: the suite's case (a fresh `ray.init(address="local", num_cpus=C)`, 1,000
  no-op tasks at once), then a second batch of 1,000 on the same cluster. Per worker:
  its tasks, its first start, and its longest idle stretch.
* actor_first_call: on a fresh 2-CPU node, four actors (`num_cpus=0`) one after
  another, each pinged twice: when its first ping ran and when its answer came (the
  first two take the prestarted workers, the others start one), and the second ping.

Times are milliseconds from the batch's first `.remote()`, read from each task's own
clock (one machine, one clock).

  python lease_traces.py --out runs/lease-traces.json
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ray_kit  # noqa: E402
from ray_kit import ray_stop, write_probe  # noqa: E402

IDLE_MS = 20.0


def per_worker(starts_ends, t0):
    """{pid: [(start_ms, end_ms), ...]} from (pid, start, end) rows, sorted by start."""
    out = {}
    for pid, start, end in starts_ends:
        out.setdefault(pid, []).append(((start - t0) * 1000, (end - t0) * 1000))
    for runs in out.values():
        runs.sort()
    return out


def idle_stretches(runs):
    """Each stretch longer than IDLE_MS between the end of one task and the next's start."""
    return [
        {"after_ms": round(end, 1), "idle_ms": round(nxt - end, 1)}
        for (_, end), (nxt, _) in zip(runs, runs[1:])
        if nxt - end > IDLE_MS
    ]


def spillback(run):
    ray, cluster, _ = ray_kit.two_nodes(2, 2)

    @ray.remote(num_cpus=1)
    def where(seconds):
        start = time.time()
        time.sleep(seconds)
        return ray.get_runtime_context().get_node_id(), os.getpid(), start, time.time()

    ray.get([where.remote(0) for _ in range(4)])  # workers up on both nodes, as the suite
    head = ray.get_runtime_context().get_node_id()
    t0 = time.time()
    out = ray.get([where.remote(0.1) for _ in range(40)])
    total = time.time() - t0
    ray.shutdown()
    cluster.shutdown()
    node_of = {pid: ("head" if node == head else "worker") for node, pid, _, _ in out}
    workers = per_worker([(pid, s, e) for _, pid, s, e in out], t0)
    return {
        "probe": "spillback",
        "run": run,
        "seconds": total,
        "workers": [
            {
                "node": node_of[pid],
                "tasks": len(runs),
                "first_start_ms": round(runs[0][0], 1),
                "idle_stretches": idle_stretches(runs),
            }
            for pid, runs in sorted(workers.items(), key=lambda kv: (node_of[kv[0]], kv[1][0][0]))
        ],
    }


def cold_noop(cpus, run):
    ray = ray_kit.local_cluster(cpus)

    @ray.remote(num_cpus=1)
    def noop():
        now = time.time()
        return os.getpid(), now, now

    batches = []
    for label in ("first", "second"):
        t0 = time.time()
        out = ray.get([noop.remote() for _ in range(1000)])
        total = time.time() - t0
        workers = per_worker(out, t0)
        batches.append(
            {
                "batch": label,
                "seconds": total,
                "workers": [
                    {
                        "tasks": len(runs),
                        "first_start_ms": round(runs[0][0], 1),
                        "longest_idle": max(
                            ({"after_ms": round(a, 1), "idle_ms": round(b - a, 1)}
                             for (a, _), (b, _) in zip(runs, runs[1:])),
                            key=lambda g: g["idle_ms"],
                            default=None,
                        ),
                    }
                    for runs in sorted(workers.values(), key=lambda r: r[0][0])
                ],
            }
        )
    ray.shutdown()
    return {"probe": "cold_noop", "cpus": cpus, "run": run, "batches": batches}


def actor_first_call(run):
    ray = ray_kit.local_cluster(2)

    @ray.remote
    class Pinger:
        def ping(self):
            return os.getpid(), time.time()

    time.sleep(3)  # the prestarted workers are up and idle
    actors = []
    for _ in range(4):
        t0 = time.time()
        a = Pinger.options(num_cpus=0).remote()
        pid, ran = ray.get(a.ping.remote())
        answered = time.time()
        ray.get(a.ping.remote())
        second = time.time() - answered
        actors.append(
            {
                "pid": pid,
                "first_ping_ran_ms": round((ran - t0) * 1000, 1),
                "first_ping_answered_ms": round((answered - t0) * 1000, 1),
                "second_ping_ms": round(second * 1000, 2),
            }
        )
    ray.shutdown()
    return {"probe": "actor_first_call", "run": run, "actors": actors}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "runs", "lease-traces.json"))
    ap.add_argument("--runs", type=int, default=3, help="runs of each probe (default 3)")
    ap.add_argument("--max-load", type=float, default=1.0, help="wait for a 1-minute load below this first")
    args = ap.parse_args()

    load_before = ray_kit.wait_quiet(args.max_load, 120)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rows = []
    for run in range(args.runs):
        ray_stop()
        rows.append(spillback(run))
        ray_stop()
        print(f"spillback run {run}: {rows[-1]['seconds']:.3f} s", file=sys.stderr)
    for cpus in (1, 2, 4):
        for run in range(args.runs):
            ray_stop()
            rows.append(cold_noop(cpus, run))
            ray_stop()
            print(f"cold_noop cpus={cpus} run {run}: " + ", ".join(f"{b['seconds']:.3f} s" for b in rows[-1]["batches"]),
                  file=sys.stderr)
    for run in range(args.runs):
        ray_stop()
        rows.append(actor_first_call(run))
        ray_stop()
        print(f"actor_first_call run {run}: " + ", ".join(
            f"{a['first_ping_ran_ms']:.0f}/{a['first_ping_answered_ms']:.0f} ms" for a in rows[-1]["actors"]), file=sys.stderr)
    write_probe(args.out, started, load_before, rows)


if __name__ == "__main__":
    main()
