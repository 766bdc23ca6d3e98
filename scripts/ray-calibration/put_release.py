#!/usr/bin/env python3
"""What a `ray.put` costs, and what it waits for: the suite's `object_local` puts run
back to back, each right after the last object was dropped, and cost far more per byte
than a put into a quiet store (docs/fidelity.md, `object_local`).

One node (`ray.init(address="local")`, 2 CPUs, a 1 GiB store); for each size, 15 timed
puts (after one untimed) in three ways:

  back_to_back  drop the last object, put the next at once (the suite's loop)
  paused        drop the last object, wait 200 ms, then put
  held          keep every object (no release in flight), up to 400 MB live

and how long the driver's serializer takes (nothing for `bytes`: Ray writes the value
raw, `RawSerializedObject`, so a put's size-dependent cost is its copy into the store,
put_threshold.py).

  python put_release.py --out runs/put-release.json
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import in_ms, local_cluster, median, ray_stop, run_probe, with_medians  # noqa: E402

SIZES = (1_000, 1_000_000, 10_000_000, 30_000_000, 100_000_000)
REPEAT = 15
PAUSE_S = 0.2
HELD_BYTES = 400_000_000


def timed_put(ray, data):
    t0 = time.perf_counter()
    ref = ray.put(data)
    return time.perf_counter() - t0, ref


def measure(ray, size):
    data = b"\x01" * size
    ray.get(ray.put(data))  # not timed
    ctx = ray._private.worker.global_worker.get_serialization_context()
    serialize = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        ctx.serialize(data)
        serialize.append(time.perf_counter() - t0)
    ways = {"back_to_back": [], "paused": [], "held": []}
    for way in ("back_to_back", "paused"):
        for _ in range(REPEAT):
            if way == "paused":
                time.sleep(PAUSE_S)
            seconds, ref = timed_put(ray, data)
            ways[way].append(seconds)
            del ref
    time.sleep(PAUSE_S)
    live = []
    for _ in range(min(REPEAT, max(1, HELD_BYTES // size))):
        seconds, ref = timed_put(ray, data)
        ways["held"].append(seconds)
        live.append(ref)
    del live
    time.sleep(PAUSE_S)
    return with_medians({"size": size, "serialize_seconds": median(serialize)}, ways)


def rows():
    ray_stop()
    ray = local_cluster(2, object_store_memory=1024 * 1024 * 1024)
    try:
        return [measure(ray, s) for s in SIZES]
    finally:
        ray.shutdown()
        ray_stop()


if __name__ == "__main__":
    run_probe(__doc__, rows, in_ms)
