#!/usr/bin/env python3
"""Whether an async actor's call costs more as its history grows: the suite's
`actor_calls` rows (mode=async, each on a fresh cluster) took 238 µs a call over 1,000
calls and 309 over 10,000, while on a cluster that had already served some 60,000 async
calls, batches of 1,000 and of 10,000 both took 330-390 µs a call (async-scale.json).

Each run is a fresh process on a fresh local cluster of 4 CPUs (the suite's). An async
no-op actor A (the default `max_concurrency`, 1,000), warmed by one call, gets 12 batches
of 1,000 calls in a row (the suite's body: submit all, then one ray.get); then a new
actor B, warmed the same way, gets 3; then A gets 3 more. Per batch: its seconds, its
submit loop's, and the CPU seconds of the driver and of the actor's process.

  python async_history.py --out runs/async-history.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import NOOP_ACTORS, run_program_probe  # noqa: E402

ONE_RUN = r"""
import json, os, sys, time
sys.path.insert(0, HERE)
import ray
from ray_kit import process_cpu as cpu_of, timed_batch
ray.init(address="local", num_cpus=4, include_dashboard=False, logging_level="ERROR")
NOOP_ACTORS


def batches(actor, pid, n, calls=1000):
    out = []
    for _ in range(n):
        d0, a0 = time.process_time(), cpu_of(pid)
        seconds, submit_seconds = timed_batch(ray, actor.noop.remote, calls)
        out.append({"seconds": seconds, "submit_seconds": submit_seconds,
                    "driver_cpu": time.process_time() - d0, "actor_cpu": cpu_of(pid) - a0})
    return out

a = Async.remote()
a_pid = ray.get(a.pid.remote())
first = batches(a, a_pid, 12)
b = Async.remote()
b_pid = ray.get(b.pid.remote())
fresh_actor = batches(b, b_pid, 3)
again = batches(a, a_pid, 3)
ray.shutdown()
print(json.dumps({"actor_a": first, "actor_b": fresh_actor, "actor_a_again": again}))
"""

if __name__ == "__main__":
    run_program_probe(__doc__, ONE_RUN.replace("sys.path.insert(0, HERE)", f"sys.path.insert(0, {HERE!r})").replace("NOOP_ACTORS", NOOP_ACTORS))
