#!/usr/bin/env python3
"""How many worker processes a raylet starts for a backlog of tasks, and when: Ray
starts one more than its CPUs need, which the model does not (docs/benchmarks-history.md,
"The raylet's spare worker": tried, and why it waits).

Each run is a fresh `ray.init(num_cpus=C)`; the driver waits 4 s (the raylet's
prestarted workers are up by then), submits N tasks of one function (sleeping S
seconds, or none), gets them all, waits 3 s, and lists the task workers with Ray's
State API: each one's launch and registration, in ms from the first submit.

  python spare_worker.py --out runs/spare-worker.json [--runs 3]

On Ray 2.60 on a 2-core VM (2026-12-02) every way listed C + 1 workers: the two
prestarted ones, the starts the leases asked for, and one more, launched as a start
slot came free and running no call while the job lasted.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import run_program_probe  # noqa: E402

DRIVER = r"""
import json, sys, time
import ray
from ray.util.state import list_workers

cpus, tasks, sleep_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
ray.init(num_cpus=cpus, include_dashboard=True, logging_level="ERROR")
time.sleep(4)

@ray.remote
def call(i):
    if sleep_s:
        time.sleep(sleep_s)
    return i

first_submit = time.time()
ray.get([call.remote(i) for i in range(tasks)])
elapsed = time.time() - first_submit
time.sleep(3)
workers = [w for w in list_workers(detail=True) if w.get("worker_type") == "WORKER"]
t0 = first_submit * 1000
starts = sorted([round(w["worker_launch_time_ms"] - t0), round(w["worker_launched_time_ms"] - t0)] for w in workers)
print(json.dumps({"cpus": cpus, "tasks": tasks, "sleep_s": sleep_s, "elapsed_s": round(elapsed, 3),
                  "task_workers": len(workers), "spare": len(workers) - cpus,
                  "launch_and_registered_ms": starts}))
ray.shutdown()
"""

WAYS = ((4, 1000, 0), (4, 100, 0.15), (6, 48, 0.15))

if __name__ == "__main__":
    run_program_probe(__doc__, DRIVER, runs=3, ways=WAYS)
