#!/usr/bin/env python3
"""The programs whose what-ifs whatif.py proves, each run as its own driver against an
existing cluster (ray.init(address=...)).

    python programs.py NAME --address ADDR [--linger-s S]

  sleep_reduce  48 tasks sleeping 150 ms, reduced in two levels: 6 combines of 8
                (50 ms each), then one of the 6
  actor_tree    a Root actor creates 2 Child actors; Root.run calls each Child.work
                twice; each work runs 4 tasks sleeping 250 ms (1 CPU each) and sums them
  mixed         12 producers (40 ms of CPU, 150 ms asleep, a 2 MB object each), 3
                consumers taking 4 of those objects as arguments (20 ms of CPU, 100 ms
                asleep), the driver gets the consumers

Sleep-bound by design: on a 2-core machine Ray's own runs of CPU-bound work spread with
whatever else the machine does. Each prints one JSON line: program, job_id, makespan_s.
The driver sleeps --linger-s before it disconnects, so the workers' last task events
reach Ray (an observer records them); every run of a program lingers alike.
"""
import argparse
import json
import time

import ray

MB = 1024 * 1024


def busy(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


@ray.remote
def leaf(i):
    time.sleep(0.15)
    return i


@ray.remote
def combine(*parts):
    time.sleep(0.05)
    return sum(parts)


@ray.remote
def sleeper(i):
    time.sleep(0.25)
    return i


@ray.remote(num_cpus=0)
class Child:
    def work(self, base):
        return sum(ray.get([sleeper.remote(base + i) for i in range(4)]))


@ray.remote(num_cpus=0)
class Root:
    def __init__(self):
        self.children = [Child.remote() for _ in range(2)]

    def run(self):
        return sum(ray.get([c.work.remote(10 * r) for r in range(2) for c in self.children]))


@ray.remote
def produce(i, mb):
    busy(0.04)
    time.sleep(0.15)
    return bytes([i % 256]) * (mb * MB)


@ray.remote
def consume(*parts):
    busy(0.02)
    time.sleep(0.1)
    return sum(len(p) for p in parts)


def run(name, mb):
    if name == "sleep_reduce":
        leaves = [leaf.remote(i) for i in range(48)]
        combines = [combine.remote(*leaves[k * 8:(k + 1) * 8]) for k in range(6)]
        assert ray.get(combine.remote(*combines)) == sum(range(48))
    elif name == "actor_tree":
        root = Root.remote()
        # work(b) = 4b + 6, for b = 0 and 10 on each of the 2 children.
        assert ray.get(root.run.remote()) == 2 * (6 + 46)
    elif name == "mixed":
        outs = [produce.remote(i, mb) for i in range(12)]
        sizes = ray.get([consume.remote(*outs[k * 4:(k + 1) * 4]) for k in range(3)])
        assert sizes == [4 * mb * MB] * 3, sizes
    else:
        raise SystemExit(f"unknown program {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", choices=["sleep_reduce", "actor_tree", "mixed"])
    ap.add_argument("--address", default="auto")
    ap.add_argument("--linger-s", type=float, default=0.0)
    ap.add_argument("--object-mb", type=int, default=2, help="mixed: each producer's object, MB")
    args = ap.parse_args()
    ray.init(address=args.address, logging_level="ERROR")
    job_id = ray.get_runtime_context().get_job_id()
    t0 = time.perf_counter()
    run(args.name, args.object_mb)
    makespan = time.perf_counter() - t0
    time.sleep(args.linger_s)
    ray.shutdown()
    print(json.dumps({"program": args.name, "job_id": job_id, "makespan_s": makespan}), flush=True)


if __name__ == "__main__":
    main()
