#!/usr/bin/env python3
"""Why an async actor's calls cost less a call in a batch of 1,000 than in one of 10,000:
the suite's `actor_calls` rows (mode=async) took 238 µs a call at 1,000 and 309 at
10,000 on this VM, where the model charges one figure a call. An async actor runs at
most `max_concurrency` calls at once (1,000 by default); the calls beyond it wait in its
core worker's queue. This probe separates the batch's size from that queue.

A local cluster of 4 CPUs (as the suite's). Each way below is an async no-op actor with
its `max_concurrency`, warmed by one call, then sent a batch of N calls (submitted in one
loop, then one ray.get), the ways in turn: 1 untimed round, then 5 timed ones. A row has
the way, the median batch time and the driver's submit loop alone, with the samples.

  python async_scale.py --out runs/async-scale.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import begin_probe, in_ms, local_cluster, ray_stop, run_probe, timed_batch, with_medians  # noqa: E402

# (max_concurrency, calls)
WAYS = ((1000, 1000), (1000, 3000), (1000, 10000), (10000, 10000), (100, 1000))
UNTIMED, TIMED = 1, 5


def rows():
    begin_probe()
    ray = local_cluster(4)
    try:

        @ray.remote
        class Async:
            async def noop(self):
                return None

        actors = {c: Async.options(max_concurrency=c).remote() for c in sorted({c for c, _ in WAYS})}
        ray.get([a.noop.remote() for a in actors.values()])
        batch = {way: [] for way in WAYS}
        submit = {way: [] for way in WAYS}
        for i in range(UNTIMED + TIMED):
            for concurrency, calls in WAYS:
                seconds, submit_seconds = timed_batch(ray, actors[concurrency].noop.remote, calls)
                if i >= UNTIMED:
                    batch[(concurrency, calls)].append(seconds)
                    submit[(concurrency, calls)].append(submit_seconds)
        out = []
        for concurrency, calls in WAYS:
            row = with_medians({"max_concurrency": concurrency, "calls": calls},
                               {"batch": batch[(concurrency, calls)], "submit": submit[(concurrency, calls)]})
            row["us_per_call"] = row["batch_seconds"] * 1e6 / calls
            out.append(row)
        return out
    finally:
        ray.shutdown()
        ray_stop()


if __name__ == "__main__":
    run_probe(__doc__, rows, in_ms)
