#!/usr/bin/env python3
"""Small Ray programs whose call graph is fixed by their source, each run as its own
driver (tests/observe_ray_versions.rs, through cluster.py's `suite NAME`).

    python suite.py NAME --address ADDR [--linger-s S]

Each prints one JSON line: {"program", "job_id", "edges": [[caller, callee, calls]]},
the edges as rayscope's class-level call graph names them (`_main` the driver, a
function by its name, an actor method as Class.method, a constructor Class.__init__).

  get_in_loop   the driver calls f 20 times, each followed by its own ray.get
  pipelined     a producer task pipelines 11 Queue.put calls to a queue actor
  mapreduce     6 maps, 2 reduces taking 3 map outputs each
  actor_tree    a Root actor creates 2 Child actors; Root.run calls each Child.work 3 times
  nested        2 outer tasks each call inner 3 times; each inner calls leaf twice
"""
import argparse
import json
import time

import ray


@ray.remote
def f(i):
    return i


@ray.remote
class Queue:
    def __init__(self):
        self.items = []

    def put(self, x):
        time.sleep(0.01)
        self.items.append(x)
        return len(self.items)

    def size(self):
        return len(self.items)


@ray.remote
def producer(q, n):
    return ray.get([q.put.remote(i) for i in range(n)])[-1]


@ray.remote
def map_task(i):
    time.sleep(0.05)
    return i


@ray.remote
def reduce_task(*parts):
    return sum(parts)


@ray.remote
class Child:
    def work(self, x):
        return x


@ray.remote
class Root:
    def __init__(self):
        self.children = [Child.remote() for _ in range(2)]

    def run(self):
        return sum(ray.get([c.work.remote(i) for c in self.children for i in range(3)]))


@ray.remote
def leaf(x):
    return x


@ray.remote
def inner(x):
    return sum(ray.get([leaf.remote(x), leaf.remote(x + 1)]))


@ray.remote
def outer(x):
    return sum(ray.get([inner.remote(x + i) for i in range(3)]))


def run(name):
    if name == "get_in_loop":
        assert [ray.get(f.remote(i)) for i in range(20)] == list(range(20))
        return [["_main", "f", 20]]
    if name == "pipelined":
        q = Queue.remote()
        assert ray.get(producer.remote(q, 11)) == 11
        assert ray.get(q.size.remote()) == 11
        return [["_main", "Queue.__init__", 1], ["_main", "producer", 1], ["producer", "Queue.put", 11],
                ["_main", "Queue.size", 1]]
    if name == "mapreduce":
        maps = [map_task.remote(i) for i in range(6)]
        assert ray.get([reduce_task.remote(*maps[:3]), reduce_task.remote(*maps[3:])]) == [3, 12]
        return [["_main", "map_task", 6], ["_main", "reduce_task", 2]]
    if name == "actor_tree":
        root = Root.remote()
        assert ray.get(root.run.remote()) == 6
        return [["_main", "Root.__init__", 1], ["Root.__init__", "Child.__init__", 2], ["_main", "Root.run", 1],
                ["Root.run", "Child.work", 6]]
    if name == "nested":
        # outer(x) = sum of inner(x + i), i < 3; inner(y) = leaf(y) + leaf(y + 1) = 2y + 1.
        assert ray.get([outer.remote(0), outer.remote(10)]) == [6 * x + 9 for x in (0, 10)]
        return [["_main", "outer", 2], ["outer", "inner", 6], ["inner", "leaf", 12]]
    raise SystemExit(f"unknown program {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--address", default="auto")
    ap.add_argument("--linger-s", type=float, default=0.0)
    args = ap.parse_args()
    ray.init(address=args.address, logging_level="ERROR")
    job_id = ray.get_runtime_context().get_job_id()
    edges = run(args.name)
    time.sleep(args.linger_s)
    ray.shutdown()
    print(json.dumps({"program": args.name, "job_id": job_id, "edges": edges}), flush=True)


if __name__ == "__main__":
    main()
