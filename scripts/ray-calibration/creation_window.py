#!/usr/bin/env python3
"""How long each actor's creation shows as progress to its raylet's resource-deadlock
check, and whether that explains when the raylet sends its GC rounds
(docs/fidelity.md, `actor_creation`; gc_rounds.py).

Ray's raylet looks every 10 s; from the second look in a row that sees leases waiting
and no worker "available for scheduling" (a worker holding a lease that is not yet an
actor's) it sends a GC round. A creation is such a worker from its lease to its
creation's end. Each actor worker's core-worker log times that from the worker's side:
`Initializing worker` (it registers with the raylet, which then grants the lease) to
`Actor creation task finished`.

The suite's `actor_creation` row (one node, 4 CPUs, N default actors, one ping each);
for each 10 s of the run, how many creations ended, the share of the time some
creation's window was open, and the windows' median; and when each GC round was sent.

  python creation_window.py --out runs/creation-window.json
"""
import glob
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import local_cluster, log_time, median, raylet_gc_requests, ray_stop, run_probe  # noqa: E402

ACTORS = 200
BUCKET_S = 10


def windows(logs, t0):
    """(registered, created) seconds after t0 for each actor worker's log."""
    out = []
    for path in glob.glob(os.path.join(logs, "python-core-worker-*.log")):
        start = None
        with open(path, errors="replace") as f:
            for line in f:
                if "Initializing worker at address" in line:
                    start = log_time(line)
                elif "Actor creation task finished" in line and start is not None:
                    out.append((start - t0, log_time(line) - t0))
                    break
    return sorted(out)


def by_bucket(spans, end_s):
    rows = []
    for lo in range(0, int(end_s) + 1, BUCKET_S):
        hi = lo + BUCKET_S
        points = [lo + i * 0.01 for i in range(BUCKET_S * 100)]
        open_share = sum(1 for t in points if any(a <= t <= b for a, b in spans)) / len(points)
        ended = [b - a for a, b in spans if lo <= b < hi]
        rows.append({"from_s": lo, "created": len(ended), "open_share": round(open_share, 3),
                     "median_window_ms": round(median(ended) * 1e3, 1) if ended else None})
    return rows


def rows():
    ray_stop()
    ray = local_cluster(4)
    try:
        @ray.remote
        class Pinger:
            def ping(self):
                return 1

        t0 = time.time()
        actors = [Pinger.remote() for _ in range(ACTORS)]
        ray.get([a.ping.remote() for a in actors])
        seconds = time.time() - t0
        gc_at = [round(at - t0, 1) for at, _ in raylet_gc_requests(ray)]
        spans = windows(ray._private.worker._global_node.get_logs_dir_path(), t0)
    finally:
        ray.shutdown()
        ray_stop()
    lengths = sorted(b - a for a, b in spans)
    q = lambda p: round(lengths[int(p * (len(lengths) - 1))] * 1e3, 1)  # noqa: E731
    return [{"actors": ACTORS, "seconds": seconds, "actors_logged": len(spans), "gc_rounds_at_s": gc_at,
             "window_ms": {"min": q(0), "p25": q(0.25), "median": q(0.5), "p75": q(0.75), "p90": q(0.9), "max": q(1)},
             "by_10s": by_bucket(spans, seconds), "samples": spans}]


def summary(row):
    return {k: v for k, v in row.items() if k not in ("samples", "by_10s")}


if __name__ == "__main__":
    run_probe(__doc__, rows, summary, max_load=1.0)
