#!/usr/bin/env python3
"""Where a no-op task's CPU goes on real Ray, process by process: the model charges
each part of a task's handling to one thread (the driver's loop, its io thread's push,
the raylet, the worker; ARCHITECTURE.md, "Calibration"), and this says how much each
process really burns.

On one warm local cluster of C logical CPUs (a batch of 1,000 run first and not
timed), a batch of N no-op tasks (the suite's `noop_tasks` body), timed, with every
Ray process's CPU time (user + system, from /proc/PID/stat) read before and after:
the driver (this process), the raylet, the GCS, the task workers (`ray::` processes)
and the rest (the agents and monitors), each in ms per task.

  python cpu_by_process.py --out runs/cpu-by-process.json
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ray_kit  # noqa: E402
from ray_kit import cpu_by_role, ray_stop, wait_quiet, write_probe  # noqa: E402

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpus", default="1,2")
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    rows = []
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ray_stop()
    load_before = wait_quiet(0.8, 120)
    for run in range(args.runs):
        for cpus in [int(c) for c in args.cpus.split(",")]:
            ray_stop()
            ray = ray_kit.local_cluster(cpus)

            @ray.remote(num_cpus=1)
            def noop():
                return None

            ray.get([noop.remote() for _ in range(1000)])
            before = cpu_by_role()
            t0 = time.perf_counter()
            refs = [noop.remote() for _ in range(args.tasks)]
            submitted = time.perf_counter() - t0
            ray.get(refs)
            seconds = time.perf_counter() - t0
            after = cpu_by_role()
            ray.shutdown()
            per_task = {r: round((after.get(r, 0.0) - before.get(r, 0.0)) * 1000 / args.tasks, 4) for r in after}
            row = {
                "run": run,
                "cpus": cpus,
                "tasks": args.tasks,
                "seconds": seconds,
                "submit_seconds": submitted,
                "ms_per_task": seconds * 1000 / args.tasks,
                "cpu_ms_per_task": per_task,
            }
            rows.append(row)
            print(row, flush=True)
    ray_stop()
    write_probe(args.out, started, load_before, rows)


if __name__ == "__main__":
    main()
