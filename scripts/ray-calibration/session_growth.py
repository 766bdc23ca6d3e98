#!/usr/bin/env python3
"""Does Ray's per-task cost grow with the tasks a cluster has run, and is it the task
events? (docs/fidelity.md, noop_tasks: at 1 CPU the suite's fresh clusters took 0.61 ms
a task at 1,000 tasks, 0.68 at 10,000 and 0.70 at 100,000; batch_growth.py's warm
batches on an Intel Xeon VM were slower in their second round than in their first.)

On a fresh 1-CPU local cluster, a batch of 1,000 untimed, then B batches of N no-op
tasks one after another (the suite's `noop_tasks` body: submit all, then `ray.get`
all), each batch's seconds and its submit loop's. Then the same on a fresh cluster with
task events off (`RAY_task_events_report_interval_ms=0`, read by every Ray process at
its start), and once more with them on. If the cost grows batch by batch with events
on and not with them off, the growth is the task events' (the GCS keeps up to
`RAY_task_events_max_num_task_in_gcs`, 100,000 by default).

  python session_growth.py --out runs/session-growth.json
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ray_kit  # noqa: E402
from ray_kit import ray_stop, write_probe  # noqa: E402


def session(events_on, batches, n):
    if events_on:
        os.environ.pop("RAY_task_events_report_interval_ms", None)
    else:
        os.environ["RAY_task_events_report_interval_ms"] = "0"
    ray_stop()
    ray, noop = ray_kit.warm_noop_cluster(1)
    rows = []
    for b in range(batches):
        row = {"task_events": "on" if events_on else "off", "batch": b, "tasks": n,
               "tasks_before": 1000 + b * n, **ray_kit.timed_noops(ray, noop, n)}
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
        rows.append(row)
    ray.shutdown()
    ray_stop()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--tasks", type=int, default=10000)
    args = ap.parse_args()
    load_before, started = ray_kit.begin_probe()
    rows = []
    for on in (True, False, True):
        rows += session(on, args.batches, args.tasks)
    write_probe(args.out, started, load_before, rows)


if __name__ == "__main__":
    main()
