#!/usr/bin/env python3
"""Why the driver's submit loop slows at 4 CPUs on 2 cores and not at 2 (docs/fidelity.md,
`noop_submit`): whether its thread gets less of a core (the cores shared among what is
runnable), or gets a whole core and does more work a call (the same work made slower,
by caches or by locks shared with the io thread).

The suite's `noop_tasks` body, cold, as the suite runs it (a fresh local cluster of C
logical CPUs, the timer started right after `ray.init`): N no-op tasks submitted in one
loop, then one `ray.get` of all. Per run:

  loop_seconds           the loop's wall time
  loop_thread_seconds    the CPU time of the loop's own thread (`time.thread_time()`)
  loop_share             the two's ratio: the part of a core the loop's thread had
  cpu_ms_during_loop     each Ray process group's CPU over the loop (driver, raylet,
                         gcs, workers, starting workers, other), in ms
  cpu_ms_after_loop      the same from the loop's end to the get's
  seconds                the whole run, as the suite's `noop_tasks` times it

  python loop_share.py --out runs/other-cpu/loop-share.json
"""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import suite  # noqa: E402
from suite import cpu_by_role, ray_stop, run_probe  # noqa: E402

CPUS = (1, 2, 4)
TASKS = (10_000, 100_000)
RUNS = {10_000: 3, 100_000: 1}
def spent(before, after):
    return {r: round((after.get(r, 0.0) - before.get(r, 0.0)) * 1e3, 1) for r in sorted(set(before) | set(after))}


def one(cpus, tasks, run):
    ray_stop()
    ray = suite.local_cluster(cpus)
    try:

        @ray.remote(num_cpus=1)
        def noop():
            return None

        assert threading.current_thread() is threading.main_thread()
        at_start = cpu_by_role()
        t0 = time.perf_counter()
        c0 = time.thread_time()
        refs = [noop.remote() for _ in range(tasks)]
        loop_cpu = time.thread_time() - c0
        loop = time.perf_counter() - t0
        at_loop_end = cpu_by_role()
        ray.get(refs)
        seconds = time.perf_counter() - t0
        at_end = cpu_by_role()
    finally:
        ray.shutdown()
        ray_stop()
    return {
        "cpus": cpus,
        "tasks": tasks,
        "run": run,
        "seconds": seconds,
        "loop_seconds": loop,
        "loop_thread_seconds": loop_cpu,
        "loop_share": loop_cpu / loop,
        "cpu_ms_during_loop": spent(at_start, at_loop_end),
        "cpu_ms_after_loop": spent(at_loop_end, at_end),
    }


def rows():
    out = []
    for tasks in TASKS:
        for run in range(RUNS[tasks]):
            for cpus in CPUS:
                out.append(one(cpus, tasks, run))
                print(f"cpus={cpus} tasks={tasks} run {run}: loop {out[-1]['loop_seconds']:.3f} s, "
                      f"share {out[-1]['loop_share']:.2f}", file=sys.stderr, flush=True)
    return out


def summary(row):
    keys = ("cpus", "tasks", "run", "seconds", "loop_seconds", "loop_thread_seconds", "loop_share")
    return {k: (round(row[k], 3) if isinstance(row[k], float) else row[k]) for k in keys}


if __name__ == "__main__":
    run_probe(__doc__, rows, summary, max_load=1.0)
