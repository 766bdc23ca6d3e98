#!/usr/bin/env python3
"""Does Ray's per-task cost grow with the tasks a driver holds outstanding at once?
(docs/fidelity.md, noop_tasks: the suite's per-task cost rises with N; session_growth.py
found no growth with a cluster's history.)

On one warm 1-CPU local cluster (a batch of 1,000 untimed), N no-op tasks run three
ways, in turn, for R rounds: all submitted and then all got (the suite's body), and in
windows of W: W submitted, W got, again, until N. Per run: its seconds, the submit
loops' seconds, ms a task. If all-at-once costs more a task than the windows, the
growth is what the driver holds outstanding.

  python outstanding.py --out runs/outstanding.json [--tasks 30000 --rounds 4]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ray_kit  # noqa: E402
from ray_kit import ray_stop, write_probe  # noqa: E402


def run(ray, noop, n, window):
    return {"tasks": n, "window": window, **ray_kit.timed_noops(ray, noop, n, window)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tasks", type=int, default=50000)
    ap.add_argument("--windows", default="1000,10000")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    windows = [args.tasks] + [int(w) for w in args.windows.split(",")]
    load_before, started = ray_kit.begin_probe()
    ray, noop = ray_kit.warm_noop_cluster(1)
    rows = []
    for r in range(args.rounds):
        order = windows if r % 2 == 0 else list(reversed(windows))
        for w in order:
            row = run(ray, noop, args.tasks, w)
            row["round"] = r
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
            rows.append(row)
    ray.shutdown()
    ray_stop()
    write_probe(args.out, started, load_before, rows)


if __name__ == "__main__":
    main()
