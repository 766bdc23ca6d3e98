#!/usr/bin/env python3
"""Run the seed's Flow Insight program (shared/seeds/003) on real Ray and record what
the model needs to replay it: the tree that was drawn, the sleeps used, and the makespan.

The program is the seed's, with two changes that do not alter what Ray does:
  * sleeps are scaled (--scale 0.01 turns 5 s / 30 s into 50 ms / 300 ms);
  * the random draws (1-2 children, each a bottleneck with probability 1/2) are made
    up front from --seed in the seed's order, and each Worker is told its subtree, so
    a shape can be drawn again, or replayed from --tree (the JSON this script writes).
The makespan runs from the root's Worker.remote() to ray.get() of its process()
returning, as rayscope's job makespan does (driver start to end).

    python seed_tree.py --seed 1 --scale 0.01 --out runs/seed-tree-1.json
    python seed_tree.py --tree runs/seed-tree-1.json --out runs/seed-tree-1-<UTC time>.json

Every runs/seed-tree-<shape>[-<anything>].json is a run of that shape: `rayscope
fidelity` takes the median of a shape's runs, as of a suite row's.
"""
import argparse
import json
import os
import platform
import random
import sys
import time

import ray

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ray_kit import cpu_model, refuse_another_cpu  # noqa: E402


def draw(rng, depth, bottleneck):
    """The seed's draw order: the count, then each child's flag, depth first."""
    node = {"bottleneck": bottleneck, "children": []}
    if depth > 0:
        for _ in range(rng.randint(1, 2)):
            flag = rng.randint(0, 1) == 1
            node["children"].append(draw(rng, depth - 1, flag))
    return node


def height(node):
    return max((height(c) + 1 for c in node["children"]), default=0)


@ray.remote
class Worker:
    def __init__(self, depth, is_bottleneck, subtree, sleep, bottleneck_sleep):
        self.is_bottleneck = is_bottleneck
        self.depth = depth
        self.sleep = sleep
        self.bottleneck_sleep = bottleneck_sleep
        self.children = []
        if self.depth > 0:
            for child in subtree["children"]:
                self.children.append(
                    Worker.remote(self.depth - 1, child["bottleneck"], child, sleep, bottleneck_sleep)
                )

    def process(self):
        futures = []
        for child in self.children:
            for _ in range(10):
                if self.is_bottleneck and self.depth - 1 <= 0:
                    time.sleep(self.bottleneck_sleep)
                time.sleep(self.sleep)
                futures.append(child.process.remote())
        ray.get(futures)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1, help="seed of the tree draw")
    ap.add_argument("--depth", type=int, default=3, help="the root's depth (the seed: 3)")
    ap.add_argument("--scale", type=float, default=0.01, help="factor on the 5 s and 30 s sleeps")
    ap.add_argument("--tree", help="replay the tree of an earlier run's JSON instead of drawing")
    ap.add_argument("--out", required=True, help="where to write the result JSON")
    args = ap.parse_args()
    refuse_another_cpu(os.path.dirname(os.path.abspath(args.out)), "seed_tree", "seed-tree-", "--out")

    if args.tree:
        with open(args.tree) as f:
            tree = json.load(f)["tree"]
    else:
        tree = draw(random.Random(args.seed), args.depth, False)
    sleep, bottleneck_sleep = 5.0 * args.scale, 30.0 * args.scale

    load_before = os.getloadavg()
    ray.init(include_dashboard=False, logging_level="ERROR")
    resources = ray.cluster_resources()
    t0 = time.perf_counter()
    root = Worker.remote(height(tree), tree["bottleneck"], tree, sleep, bottleneck_sleep)
    ray.get(root.process.remote())
    makespan = time.perf_counter() - t0
    ray.shutdown()

    result = {
        "ray_version": ray.__version__,
        "python": platform.python_version(),
        "cpus_on_machine": os.cpu_count(),
        # The CPU, as suite.py records it: runs from different CPUs are not comparable.
        "cpu_model": cpu_model(),
        "ray_cluster_resources": {k: v for k, v in resources.items() if not k.startswith("node:")},
        "seed": None if args.tree else args.seed,
        "sleep_s": sleep,
        "bottleneck_sleep_s": bottleneck_sleep,
        "tree": tree,
        "makespan_s": makespan,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps({k: result[k] for k in ("makespan_s", "sleep_s", "bottleneck_sleep_s", "load_average_after")}))


if __name__ == "__main__":
    main()
