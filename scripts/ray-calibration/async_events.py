#!/usr/bin/env python3
"""Whether Ray's task events are why a fresh actor's first 1,000 async calls cost less
a call than 10,000: the suite's `actor_calls` rows took 276 ms over 1,000 calls and
3.16 s over 10,000 (median of six each), and async_history.py's first batch of 1,000 on
a fresh cluster came in below the batches after it in three of four runs.

A worker buffers each call's status events and sends them to the GCS once a second
(`RAY_task_events_report_interval_ms`, 1,000 by default; 0 turns them off). A batch
shorter than that interval may end before its events are sent, so their sending is
not in its time; a batch of several seconds pays for most of its own.

Each row is the suite's `actor_calls` body (a fresh local cluster of 4 CPUs, one warm
actor, N calls submitted at once, one `ray.get`) in a fresh process, with task events
on (Ray's default) or off, for sync and async actors and 1,000 and 10,000 calls, in
turn, three rounds (`--runs`); per row also the driver's and the actor's CPU over the batch and over the 1.5 s
after it (what was left to do once the batch's `ray.get` returned).

  python async_events.py --out runs/async-events.json
  python async_events.py --runs 1 --out DIR/async-events.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import NOOP_ACTORS, run_program_probe  # noqa: E402

ONE_RUN = r"""
import json, os, sys, time
events, mode, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
if events == "off":
    os.environ["RAY_task_events_report_interval_ms"] = "0"
import ray
from ray_kit import process_cpu as cpu_of
ray.init(address="local", num_cpus=4, include_dashboard=False, logging_level="ERROR")
NOOP_ACTORS

actor = (Sync if mode == "sync" else Async).remote()
pid = ray.get(actor.pid.remote())
ray.get(actor.noop.remote())
d0, a0 = time.process_time(), cpu_of(pid)
t0 = time.perf_counter()
ray.get([actor.noop.remote() for _ in range(calls)])
seconds = time.perf_counter() - t0
d1, a1 = time.process_time(), cpu_of(pid)
time.sleep(1.5)
d2, a2 = time.process_time(), cpu_of(pid)
ray.shutdown()
print(json.dumps({"events": events, "mode": mode, "calls": calls, "seconds": seconds,
                  "driver_cpu": d1 - d0, "actor_cpu": a1 - a0,
                  "driver_cpu_after": d2 - d1, "actor_cpu_after": a2 - a1}))
"""

WAYS = [(events, mode, calls) for events in ("on", "off") for mode in ("async", "sync") for calls in (1000, 10000)]

if __name__ == "__main__":
    run_program_probe(__doc__, ONE_RUN.replace("NOOP_ACTORS", NOOP_ACTORS), ways=WAYS, numbered="round")
