#!/usr/bin/env python3
"""Why Ray's per-task cost grows with the run (docs/fidelity.md, noop_tasks): at 1 CPU
the suite's runs took 0.61 ms a task at 1,000 tasks, 0.68 at 10,000 and 0.70 at
100,000, beyond the driver's setup and the worker's first call.

On one warm 1-CPU local cluster (a batch of 1,000 run first and not timed), batches of
N no-op tasks (the suite's `noop_tasks` body: submit all, then `ray.get` all), each
size in turn, with the driver's Python garbage collector on and off (`gc.disable()`
for the batch; `gc.collect()` before every batch either way). Per batch: its seconds,
its submit loop's, the driver's CPU seconds (`time.process_time()`), and the collector's
runs per generation while it was on.

  python batch_growth.py --out runs/batch-growth.json
"""
import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ray_kit  # noqa: E402
from ray_kit import ray_stop, write_probe  # noqa: E402


def batch(ray, noop, n, collector_on):
    gc.collect()
    before = [g["collections"] for g in gc.get_stats()]
    if not collector_on:
        gc.disable()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    refs = [noop.remote() for _ in range(n)]
    submitted = time.perf_counter() - t0
    ray.get(refs)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    gc.enable()
    after = [g["collections"] for g in gc.get_stats()]
    del refs
    return {
        "tasks": n,
        "gc": "on" if collector_on else "off",
        "seconds": seconds,
        "submit_seconds": submitted,
        "driver_cpu_seconds": cpu,
        "ms_per_task": seconds * 1000 / n,
        "collections": [a - b for a, b in zip(after, before)],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="1000,10000,30000")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    load_before, started = ray_kit.begin_probe()
    ray, noop = ray_kit.warm_noop_cluster(1)
    rows = []
    for r in range(args.rounds):
        for n in sizes:
            for on in (True, False) if r % 2 == 0 else (False, True):
                row = batch(ray, noop, n, on)
                row["round"] = r
                rows.append(row)
                print(row, flush=True)
    ray.shutdown()
    ray_stop()
    write_probe(args.out, started, load_before, rows)


if __name__ == "__main__":
    main()
