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

  python loop_share.py --out runs/loop-share.json
"""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ray_kit  # noqa: E402
from ray_kit import cpu_by_role, ray_stop, run_probe  # noqa: E402

CPUS = (1, 2, 4)
TASKS = (10_000, 100_000)
RUNS = {10_000: 3, 100_000: 1}
def spent(before, after):
    return {r: round((after.get(r, 0.0) - before.get(r, 0.0)) * 1e3, 1) for r in sorted(set(before) | set(after))}


def cold_loop(cpus, tasks, run, read):
    """The suite's cold `noop_tasks` body on a fresh local cluster of `cpus` CPUs, with
    `read(phase)` called on the loop's thread right before its loop of `tasks` calls
    ("before"), right after it ("after") and after the `ray.get` of them all ("end"):
    (the three readings, the row's common part: its parameters, the loop's seconds and
    the whole run's, as the suite's `noop_tasks` times it)."""
    ray_stop()
    ray = ray_kit.local_cluster(cpus)
    try:

        @ray.remote(num_cpus=1)
        def noop():
            return None

        assert threading.current_thread() is threading.main_thread()
        before = read("before")
        t0 = time.perf_counter()
        refs = [noop.remote() for _ in range(tasks)]
        loop = time.perf_counter() - t0
        after = read("after")
        ray.get(refs)
        seconds = time.perf_counter() - t0
        end = read("end")
    finally:
        ray.shutdown()
        ray_stop()
    return (before, after, end), {"cpus": cpus, "tasks": tasks, "run": run, "seconds": seconds, "loop_seconds": loop}


def every_run(one, describe):
    """`one(cpus, tasks, run)` over the matrix (TASKS, RUNS, CPUS), a line each on stderr."""
    out = []
    for tasks in TASKS:
        for run in range(RUNS[tasks]):
            for cpus in CPUS:
                out.append(one(cpus, tasks, run))
                print(f"cpus={cpus} tasks={tasks} run {run}: {describe(out[-1])}", file=sys.stderr, flush=True)
    return out


def one(cpus, tasks, run):
    def read(phase):
        # The loop thread's CPU (`time.thread_time()`) read nearest the loop, and each
        # Ray process group's.
        if phase == "before":
            roles = cpu_by_role()
            return time.thread_time(), roles
        return time.thread_time(), cpu_by_role()

    ((c0, at_start), (c1, at_loop_end), (_, at_end)), row = cold_loop(cpus, tasks, run, read)
    loop_cpu = c1 - c0
    loop = row["loop_seconds"]
    return {
        **row,
        "loop_thread_seconds": loop_cpu,
        "loop_share": loop_cpu / loop,
        "cpu_ms_during_loop": spent(at_start, at_loop_end),
        "cpu_ms_after_loop": spent(at_loop_end, at_end),
    }


def rows():
    return every_run(one, lambda r: f"loop {r['loop_seconds']:.3f} s, share {r['loop_share']:.2f}")


def rounded(row, keys):
    """A row's `keys` for its line on stdout, seconds and shares to three places."""
    return {k: (round(row[k], 3) if isinstance(row[k], float) else row[k]) for k in keys}


def summary(row):
    return rounded(row, ("cpus", "tasks", "run", "seconds", "loop_seconds", "loop_thread_seconds", "loop_share"))


if __name__ == "__main__":
    run_probe(__doc__, rows, summary, max_load=1.0)
