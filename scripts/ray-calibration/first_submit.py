#!/usr/bin/env python3
"""Where a driver's first `.remote()` spends its time (docs/fidelity.md, `noop_submit`):
the suite's no-op runs time their loop of N `.remote()` calls, and at 1 CPU that loop is
a fixed part plus N times a per-call part (their intercept and slope are
`scheduler.first_submit_cost` and `scheduler.call_submit_cost`). This probe shows the
fixed part is the driver's first call, paid before that call returns and before its
task runs, and how little a second function's first call costs.

Each run starts a 1-CPU Ray, waits for its prestarted worker, then:
  * times the first `.remote()` of a task that returns `time.time()` when it runs, and
    a second one right after; the tasks' own stamps say when each ran;
  * times the first `.remote()` of two more functions, and 1,000 more calls of each.

  python first_submit.py --out runs/first-submit.json [--runs 3]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import run_program_probe  # noqa: E402

ONE_RUN = r"""
import json, time
import ray
ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR")
time.sleep(3)  # the prestarted worker is up

@ray.remote(num_cpus=1)
def stamp():
    return time.time()

t0 = time.time()
first = stamp.remote()
t1 = time.time()
second = stamp.remote()
t2 = time.time()
ran_first, ran_second = ray.get([first, second])
row = {
    "first_remote_ms": (t1 - t0) * 1e3,
    "second_remote_ms": (t2 - t1) * 1e3,
    "first_task_ran_at_ms": (ran_first - t0) * 1e3,
    "second_task_ran_at_ms": (ran_second - t0) * 1e3,
    "other_functions": [],
}
for _ in range(2):
    @ray.remote(num_cpus=1)
    def other():
        return None
    a = time.perf_counter()
    ref = other.remote()
    b = time.perf_counter()
    refs = [other.remote() for _ in range(1000)]
    c = time.perf_counter()
    ray.get(refs + [ref])
    row["other_functions"].append({"first_remote_ms": (b - a) * 1e3, "next_remote_us": (c - b) / 1000 * 1e6})
print(json.dumps(row))
"""


if __name__ == "__main__":
    run_program_probe(__doc__, ONE_RUN)
