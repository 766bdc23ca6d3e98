#!/usr/bin/env python3
"""What holds a task worker after its first task (docs/fidelity.md, `noop_tasks`): in
lease_traces.py's cold runs each worker sat idle 67-124 ms after its first task at 1
and 2 CPUs, and 270-800 ms at 4 CPUs on 2 cores while two more workers started. Either
the worker's own work after its first task (CPU it burns before it replies) is starved
of the cores, or something else (the reply's delivery, the owner's next push) waits.

The suite's cold `noop_tasks` body with 1,000 tasks (a fresh local cluster of C logical
CPUs, timer started right after `ray.init`); each task reports its worker's pid, the
wall clock and its process's CPU time (`time.process_time()`, every thread) at its
start. The driver, once its loop is done, blocks in `ray.wait` on the first task's ref
and notes when it returned. Per worker, between its first and second task:

  gap_ms        the wall time
  gap_cpu_ms    the CPU its process burned (less the first task's own few µs)
  first_ms      when its first task began, from the first `.remote()`

and, for the first task's worker, `first_reply_seen_ms`: when the driver saw that task's
result (if that is long before the worker's second task, the wait is the owner's push,
not the worker's reply). Right after the loop, `niceness_after_loop`: each of this
user's Ray processes by role (`ray_kit.process_role`: driver, raylet, gcs, workers, the
workers still starting, other) with its nice value (Ray renices its task workers:
`RAY_worker_niceness`).

  python first_call.py --out runs/first-call.json
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ray_kit  # noqa: E402
from ray_kit import ray_stop, run_probe  # noqa: E402

CPUS = (1, 2, 4)
RUNS = 3
TASKS = 1000


def niceness_by_role():
    """{role: sorted nice values} over this user's Ray processes (`ray_kit.process_role`)."""
    out = {}
    for role, fields, _ in ray_kit.ray_processes():
        # nice is field 19 of stat (16 after the name).
        out.setdefault(role, []).append(int(fields[16]))
    return {r: sorted(v) for r, v in sorted(out.items())}


def one(cpus, run):
    ray_stop()
    ray = ray_kit.local_cluster(cpus)
    try:

        @ray.remote(num_cpus=1)
        def noop():
            return os.getpid(), time.time(), time.process_time()

        t0 = time.time()
        refs = [noop.remote() for _ in range(TASKS)]
        loop_ms = (time.time() - t0) * 1e3
        niceness = niceness_by_role()
        ray.wait(refs[:1], timeout=60)
        first_reply_seen_ms = (time.time() - t0) * 1e3
        out = ray.get(refs)
        seconds = time.time() - t0
    finally:
        ray.shutdown()
        ray_stop()
    by_worker = {}
    for pid, wall, cpu in out:
        by_worker.setdefault(pid, []).append((wall, cpu))
    workers = []
    for pid, runs in by_worker.items():
        runs.sort()
        (w1, c1), (w2, c2) = runs[0], runs[1] if len(runs) > 1 else (None, None)
        workers.append({
            "tasks": len(runs),
            "first_ms": round((w1 - t0) * 1e3, 1),
            "gap_ms": None if w2 is None else round((w2 - w1) * 1e3, 1),
            "gap_cpu_ms": None if c2 is None else round((c2 - c1) * 1e3, 1),
            "has_first_task": out[0][0] == pid,
        })
    workers.sort(key=lambda w: w["first_ms"])
    return {
        "cpus": cpus,
        "run": run,
        "seconds": seconds,
        "loop_ms": round(loop_ms, 1),
        "first_reply_seen_ms": round(first_reply_seen_ms, 1),
        "workers": workers,
        "niceness_after_loop": niceness,
    }


def rows():
    out = []
    for run in range(RUNS):
        for cpus in CPUS:
            out.append(one(cpus, run))
    return out


def summary(row):
    return {
        "cpus": row["cpus"],
        "run": row["run"],
        "loop_ms": row["loop_ms"],
        "first_reply_seen_ms": row["first_reply_seen_ms"],
        "workers": [(w["first_ms"], w["gap_ms"], w["gap_cpu_ms"], w["has_first_task"]) for w in row["workers"]],
        "niceness_after_loop": row["niceness_after_loop"],
    }


if __name__ == "__main__":
    run_probe(__doc__, rows, summary, max_load=1.0)
