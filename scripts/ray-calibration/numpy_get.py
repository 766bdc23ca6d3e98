#!/usr/bin/env python3
"""What a `ray.get` of a numpy array costs against one of `bytes` of the same size: the
suite's `object_get` rows are `bytes`, which a get copies out of the store, where Ray
hands a numpy array back as a read-only view of the store's memory (pickle 5 keeps its
buffer out of band, and the array is rebuilt around it without a copy).

One node (`ray.init(address="local")`, 2 CPUs, a 3 GiB store that keeps every object,
as the suite's `object_local`); for each size, after one untimed put and get of each,
21 rounds (fewer where they would hold over 2.3 GB: 11 at 100 MB), each of which puts and gets a `bytes` and then a numpy array of that size
(`uint8`), the get timed right after its put, in the same process. A row has the
medians (`bytes_get_seconds`, `numpy_get_seconds`, with the puts' too) and the samples.

  python numpy_get.py --out runs/numpy-get.json
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import begin_probe, in_ms, local_cluster, ray_stop, run_probe, with_medians  # noqa: E402

SIZES = (1_000, 100_000, 1_000_000, 10_000_000, 100_000_000)
REPEAT = 21
# What a size's objects may hold of the store at once: 100 MB gets 11 rounds.
HELD_BYTES = 2_300_000_000


def timed_put_get(ray, value):
    t0 = time.perf_counter()
    ref = ray.put(value)
    t1 = time.perf_counter()
    out = ray.get(ref)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, ref, out


def measure(ray, np, size):
    values = {"bytes": b"\x01" * size, "numpy": np.ones(size, dtype=np.uint8)}
    held = []
    for value in values.values():  # not timed: the first of each maps or warms
        held.append(ray.put(value))
        ray.get(held[-1])
    ways = {f"{kind}_{step}": [] for kind in values for step in ("put", "get")}
    views = 0
    rounds = max(1, min(REPEAT, HELD_BYTES // (2 * size) - 1))
    for _ in range(rounds):
        for kind, value in values.items():
            put_s, get_s, ref, out = timed_put_get(ray, value)
            assert len(out) == size
            if kind == "numpy" and not out.flags.writeable:
                views += 1  # a read-only view of the store's memory, not a copy
            ways[f"{kind}_put"].append(put_s)
            ways[f"{kind}_get"].append(get_s)
            held.append(ref)
            del out
    del held
    time.sleep(0.5)  # the store frees them asynchronously: not into the next size's puts
    return with_medians({"size": size, "numpy_read_only_views": views, "rounds": rounds}, ways)


def rows():
    begin_probe()
    import numpy as np

    ray = local_cluster(2, object_store_memory=3 * 1024 * 1024 * 1024)
    try:
        return [measure(ray, np, s) for s in SIZES]
    finally:
        ray.shutdown()
        ray_stop()


if __name__ == "__main__":
    run_probe(__doc__, rows, in_ms)
