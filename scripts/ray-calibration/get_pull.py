#!/usr/bin/env python3
"""What a `ray.get` of objects made on another node waits for: whether the per-object
part of a pull (the owner's location lookup, the pull request) is paid once per get or
once per object. Its runs settled that: once per object, so the model pays
`object_store.transfer_latency` for each object a pull moves, a task's arguments or a
get's (ARCHITECTURE.md, Calibration; runs/README.md).

Two nodes (ray.cluster_utils.Cluster, 1 CPU each, 512 MiB stores). For each count N and
size S, N objects of S bytes are made on the worker node (or, for the baseline, on the
head), the driver waits until all exist without fetching them (`ray.wait(...,
fetch_local=False)`), then times:

  batch_seconds       one `ray.get` of all N (from the worker node)
  one_by_one_seconds  N `ray.get`s of one object each (a fresh N from the worker node)
  local_seconds       one `ray.get` of all N made on the head (no pull: the copy alone)

Each the median of REPEAT rounds.

  python get_pull.py --out runs/get-pull.json
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import in_ms, ray_stop, run_probe, two_nodes, with_medians  # noqa: E402

COUNTS = (1, 10, 100)
SIZES = (262_144, 1_000_000)
REPEAT = 7


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
    return with_medians({"count": n, "size": size}, ways)


def rows():
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
        return [measure(ray, make_on_worker, make_on_head, n, s) for s in SIZES for n in COUNTS]
    finally:
        ray.shutdown()
        cluster.shutdown()
        ray_stop()


if __name__ == "__main__":
    run_probe(__doc__, rows, in_ms)
