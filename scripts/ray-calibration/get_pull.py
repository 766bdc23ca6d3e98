#!/usr/bin/env python3
"""What a `ray.get` of objects made on another node waits for: whether the per-object
part of a pull (the owner's location lookup, the pull request) is paid once per get or
once per object. The model pays `object_store.transfer_latency` once for all a pull asks
for (a task's arguments, or a get's objects), as Ray's pull manager takes them as one
bundle (ARCHITECTURE.md, Calibration).

Two nodes (ray.cluster_utils.Cluster, 1 CPU each, 512 MiB stores). For each count N and
size S, N objects of S bytes are made on the worker node (or, for the baseline, on the
head), the driver waits until all exist without fetching them (`ray.wait(...,
fetch_local=False)`), then times:

  batch_seconds       one `ray.get` of all N (from the worker node)
  one_by_one_seconds  N `ray.get`s of one object each (a fresh N from the worker node)
  local_seconds       one `ray.get` of all N made on the head (no pull: the copy alone)

Each the median of REPEAT rounds.

  python get_pull.py --out runs/other-cpu/get-pull.json
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from suite import ray_stop, two_nodes, write_probe  # noqa: E402

COUNTS = (1, 10, 100)
SIZES = (262_144, 1_000_000)
REPEAT = 7


def median(xs):
    return sorted(xs)[len(xs) // 2]


def measure(ray, make_on_worker, make_on_head, n, size):
    def made(maker):
        refs = [maker.remote(size) for _ in range(n)]
        ray.wait(refs, num_returns=n, fetch_local=False)
        return refs

    ways = {"batch": [], "one_by_one": [], "local": []}
    for _ in range(REPEAT):
        refs = made(make_on_worker)
        t0 = time.perf_counter()
        ray.get(refs)
        ways["batch"].append(time.perf_counter() - t0)
        del refs
        refs = made(make_on_worker)
        t0 = time.perf_counter()
        for r in refs:
            ray.get(r)
        ways["one_by_one"].append(time.perf_counter() - t0)
        del refs
        refs = made(make_on_head)
        t0 = time.perf_counter()
        ray.get(refs)
        ways["local"].append(time.perf_counter() - t0)
        del refs
    row = {"count": n, "size": size}
    for way, xs in ways.items():
        row[f"{way}_seconds"] = median(xs)
    row["samples"] = ways
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ray_stop()
    ray, cluster, _ = two_nodes(1, 1, store=512 * 1024 * 1024)
    try:

        @ray.remote(num_cpus=0, resources={"worker": 0.001})
        def make_on_worker(size):
            return b"\x01" * size

        @ray.remote(num_cpus=0, resources={"head": 0.001})
        def make_on_head(size):
            return b"\x01" * size

        ray.get([make_on_worker.remote(1), make_on_head.remote(1)])  # both workers up
        rows = [measure(ray, make_on_worker, make_on_head, n, s) for s in SIZES for n in COUNTS]
    finally:
        ray.shutdown()
        cluster.shutdown()
        ray_stop()
    for r in rows:
        print(json.dumps({k: (round(v * 1e3, 3) if k.endswith("seconds") else v) for k, v in r.items() if k != "samples"}))
    write_probe(args.out, started, load_before, rows)


if __name__ == "__main__":
    main()
