#!/usr/bin/env python3
"""Two small Ray programs that observe mode watches, each run as its own driver against
an existing cluster (ray.init(address=...)).

    python programs.py seed --scale 0.01 --seed 1 [--depth 2] [--no-bottleneck-sleep] [--address auto]
    python programs.py mapreduce [--address auto]

seed: the Flow Insight seed program (shared/seeds/003): a tree of Worker actors, each
  spawning 1-2 children, each child flagged a bottleneck with probability 1/2; process()
  submits 10 process() calls to each child, sleeping 5 s before each (plus 30 s when the
  worker is a bottleneck one level above the leaves). Sleeps are scaled by --scale and the
  draws are made up front from --seed, in the seed's order: ray-calibration/seed_tree.py's
  program, imported from there.
mapreduce: 8 map tasks (100 ms, ~1 MB bytes each), 2 reduce tasks taking 4 map outputs each
  as ObjectRef arguments (50 ms each), the driver gets the reduces.

Each prints one JSON line at the end: job_id, makespan_s, wall_start_ms, wall_end_ms, ...
"""
import argparse
import json
import os
import random
import sys
import time

import ray
import ray.cloudpickle

# The seed's tree and its Worker actor are the calibration's (one program, two uses).
# Ray pickles a class by reference to its module, which the workers could not import
# from that directory: registered by value, it travels with the job as __main__'s does.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ray-calibration"))
import seed_tree  # noqa: E402
from seed_tree import Worker, draw, height  # noqa: E402

ray.cloudpickle.register_pickle_by_value(seed_tree)


def run_seed(address="auto", seed=1, depth=2, scale=0.01, bottleneck_sleep=True, linger_s=0.0):
    tree = draw(random.Random(seed), depth, False)
    sleep = 5.0 * scale
    bsleep = 30.0 * scale if bottleneck_sleep else 0.0
    ray.init(address=address, logging_level="ERROR")
    job_id = ray.get_runtime_context().get_job_id()
    wall_start = time.time()
    t0 = time.perf_counter()
    root = Worker.remote(height(tree), tree["bottleneck"], tree, sleep, bsleep)
    ray.get(root.process.remote())
    makespan = time.perf_counter() - t0
    wall_end = time.time()
    # Workers flush task events about once a second and are killed when the driver
    # exits: lingering lets the last events reach GCS / the aggregator.
    time.sleep(linger_s)
    ray.shutdown()
    return {
        "program": "seed",
        "job_id": job_id,
        "seed": seed,
        "depth": depth,
        "sleep_s": sleep,
        "bottleneck_sleep_s": bsleep,
        "tree": tree,
        "makespan_s": makespan,
        "wall_start_ms": int(wall_start * 1000),
        "wall_end_ms": int(wall_end * 1000),
    }


MB = 1024 * 1024


@ray.remote
def map_task(i):
    time.sleep(0.1)
    return bytes([i % 256]) * MB


@ray.remote
def reduce_task(*parts):
    time.sleep(0.05)
    return sum(len(p) for p in parts)


def run_mapreduce(address="auto", maps=8, reduces=2, linger_s=0.0):
    ray.init(address=address, logging_level="ERROR")
    job_id = ray.get_runtime_context().get_job_id()
    wall_start = time.time()
    t0 = time.perf_counter()
    outs = [map_task.remote(i) for i in range(maps)]
    per = maps // reduces
    reds = [reduce_task.remote(*outs[r * per:(r + 1) * per]) for r in range(reduces)]
    sizes = ray.get(reds)
    makespan = time.perf_counter() - t0
    wall_end = time.time()
    # Workers flush task events about once a second and are killed when the driver
    # exits: lingering lets the last events reach GCS / the aggregator.
    time.sleep(linger_s)
    ray.shutdown()
    return {
        "program": "mapreduce",
        "job_id": job_id,
        "maps": maps,
        "reduces": reduces,
        "reduce_sizes": sizes,
        "makespan_s": makespan,
        "wall_start_ms": int(wall_start * 1000),
        "wall_end_ms": int(wall_end * 1000),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="program", required=True)
    s = sub.add_parser("seed")
    s.add_argument("--address", default="auto")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--depth", type=int, default=2)
    s.add_argument("--scale", type=float, default=0.01)
    s.add_argument("--no-bottleneck-sleep", action="store_true")
    s.add_argument("--linger-s", type=float, default=0.0, help="sleep before ray.shutdown()")
    m = sub.add_parser("mapreduce")
    m.add_argument("--address", default="auto")
    m.add_argument("--maps", type=int, default=8)
    m.add_argument("--reduces", type=int, default=2)
    m.add_argument("--linger-s", type=float, default=0.0, help="sleep before ray.shutdown()")
    args = ap.parse_args()
    if args.program == "seed":
        out = run_seed(args.address, args.seed, args.depth, args.scale, not args.no_bottleneck_sleep, args.linger_s)
    else:
        out = run_mapreduce(args.address, args.maps, args.reduces, args.linger_s)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
