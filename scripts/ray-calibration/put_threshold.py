#!/usr/bin/env python3
"""Where a `ray.put` of `bytes` changes how it copies: Ray writes a `bytes` value raw
(`RawSerializedObject`), with one `memcpy` up to 1 MiB (`kMemcopyDefaultThreshold`,
1,048,576 bytes) and above it with `parallel_memcopy` on 6 threads it starts for that
put (`MEMCOPY_THREADS`). The suite's `object_local` puts cost less a MB at 10 and 100
MB than at 1 MB (docs/fidelity.md); this measures the step at the threshold and the
rate on each side, at sizes the suite does not run.

Each size runs as the suite's `object_local` row does (a fresh one-node cluster of 2
CPUs and a 3 GiB store, one untimed put, then the median of 21 puts into a store that
keeps every object), in two rounds, the second in reverse order.

  python put_threshold.py --out runs/put-threshold.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import in_ms, ray_stop, run_probe  # noqa: E402
from suite import object_local  # noqa: E402

# Either side of 1 MiB by about 1 %, then the single copy's and the parallel copy's rates.
SIZES = (500_000, 1_040_000, 1_060_000, 2_000_000, 4_000_000, 30_000_000)
THRESHOLD = 1024 * 1024


def measure(size, round_):
    import ray

    ray_stop()
    try:
        out = object_local({"size": size})
    finally:
        if ray.is_initialized():
            ray.shutdown()
        ray_stop()
    return {
        "size": size,
        "round": round_,
        "copy": "parallel_memcopy" if size > THRESHOLD else "memcpy",
        "put_seconds": out["put_seconds"],
        "samples": out["samples"]["put"],
    }


def rows():
    order = list(SIZES)
    return [measure(s, 1) for s in order] + [measure(s, 2) for s in reversed(order)]


if __name__ == "__main__":
    run_probe(__doc__, rows, in_ms, max_load=1.0)
