#!/usr/bin/env python3
"""Small Ray programs whose call graph is fixed by their source, each run as its own
driver (tests/observe_ray_versions.rs, through cluster.py's `suite NAME`).

    python suite.py NAME --address ADDR [--linger-s S] [--profile]

Each prints one JSON line: {"program", "job_id", "profiled", "pattern", "edges":
[[caller, callee, calls]], "findings": [kind], "findings_measured": [kind],
"findings_listed": [kind]}, the edges
as rayscope's class-level call graph names them (`_main` the driver, a function by its
name, an actor method as Class.method, a constructor Class.__init__), and the findings
(`/api/flow/findings`) the program's source makes: none for a pattern program
(`pattern`), the anti-pattern's own for the others (which may show others too: calls
queued for the head's 2 CPUs wait for resources). `findings_measured` are those that
need Ray's measured waits (a caller's ray.get calls one by one after all its submits):
the program makes them only with --profile, which sets RAY_PROFILING=1 in the driver's
environment and the job's runtime_env, and an observer sees them only where Ray sends
profile events (not by push from Ray 2.49). `findings_listed` are those that need the
calls' argument sizes, which only Ray's object listing shows: an observer that polls
sees them, one that only takes pushes does not.

  get_in_loop   the driver calls f 20 times, each followed by its own ray.get
  pipelined     a producer task pipelines 11 Queue.put calls to a queue actor
  mapreduce     6 maps, 2 reduces taking 3 map outputs each
  actor_tree    a Root actor creates 2 Child actors; Root.run calls each Child.work 3 times
  nested        2 outer tasks each call inner 3 times; each inner calls leaf twice
  put_once      the driver puts a 4 MiB value once and passes its reference to 4
                calls of consume (0.5 CPUs, 5 s each: each call runs through at
                least one object listing, which a polling observer makes every few
                seconds at the slowest)

Anti-patterns (Ray Core's "Design patterns & anti-patterns"), each with its finding:

  get_in_loop        (above) get_in_loop
  actor_in_loop      the driver calls Counter.add 10 times, each followed by its own
                     ray.get: blocked_actor_calls
  submission_order   once two workers are up, 8 calls alternating 0.4 s (1.5 CPUs:
                     one at a time) and 0.02 s (0.5 CPUs), their results got in
                     submission order, each worked on 50 ms: get_in_submission_order
                     (measured waits only: unprofiled, the gets after the last submit
                     read as one wait)
  fine_grained       60 calls that return at once, all submitted, then got:
                     too_fine_grained (its calls' starts are lost when the driver
                     exits at once on Ray 2.49: run it with --linger-s 1.5)
  resource_bound     4 calls of 2 CPUs each, 0.5 s long, on the 2-CPU head, submitted
                     together: pending_on_resources
  large_arg          as put_once, but the same 4 MiB value passed by value to each
                     call: large_arg_by_value (listed only)
"""
import argparse
import json
import os
import sys
import time

# Ray reads RAY_PROFILING once, when it is imported: the driver's own spans need it set
# before `import ray`.
PROFILE = "--profile" in sys.argv
if PROFILE:
    os.environ["RAY_PROFILING"] = "1"

import ray  # noqa: E402


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
class Counter:
    def __init__(self):
        self.n = 0

    def add(self, x):
        self.n += x
        return self.n


@ray.remote
def warm(i):
    time.sleep(0.3)
    return i


@ray.remote
def sleeper(s, i):
    time.sleep(s)
    return i


@ray.remote
def tiny(i):
    return i


@ray.remote(num_cpus=2)
def whole_node(i):
    time.sleep(0.5)
    return i


@ray.remote(num_cpus=0.5)
def consume(data, i):
    time.sleep(5.0)
    return len(data) + i


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
    """The program's edges, the findings its source makes, those of them that need
    measured waits, and those that need the object listing."""
    if name == "get_in_loop":
        assert [ray.get(f.remote(i)) for i in range(20)] == list(range(20))
        return [["_main", "f", 20]], ["get_in_loop"], [], []
    if name == "actor_in_loop":
        c = Counter.remote()
        assert [ray.get(c.add.remote(1)) for _ in range(10)] == list(range(1, 11))
        return [["_main", "Counter.__init__", 1], ["_main", "Counter.add", 10]], ["blocked_actor_calls"], [], []
    if name == "submission_order":
        # Two workers started first (a new job's start on demand, seconds apart on a
        # loaded machine). The long calls take 1.5 of the head's 2 CPUs, so they run one
        # after another and the short ones beside them: the gets wait for each long
        # call in turn while later short ones are done.
        assert ray.get([warm.remote(i) for i in range(2)]) == [0, 1]
        refs = [(sleeper.options(num_cpus=1.5).remote(0.4, i) if i % 2 == 0
                 else sleeper.options(num_cpus=0.5).remote(0.02, i)) for i in range(8)]
        for i, r in enumerate(refs):
            assert ray.get(r) == i
            time.sleep(0.05)
        return [["_main", "warm", 2], ["_main", "sleeper", 8]], [], ["get_in_submission_order"] if PROFILE else [], []
    if name == "fine_grained":
        assert ray.get([tiny.remote(i) for i in range(60)]) == list(range(60))
        return [["_main", "tiny", 60]], ["too_fine_grained"], [], []
    if name == "resource_bound":
        assert ray.get([whole_node.remote(i) for i in range(4)]) == list(range(4))
        return [["_main", "whole_node", 4]], ["pending_on_resources"], [], []
    if name == "large_arg":
        data = b"x" * (4 << 20)
        assert ray.get([consume.remote(data, i) for i in range(4)]) == [(4 << 20) + i for i in range(4)]
        return [["_main", "consume", 4]], [], [], ["large_arg_by_value"]
    if name == "put_once":
        data = ray.put(b"x" * (4 << 20))
        assert ray.get([consume.remote(data, i) for i in range(4)]) == [(4 << 20) + i for i in range(4)]
        return [["_main", "consume", 4]], None, [], []
    if name == "pipelined":
        q = Queue.remote()
        assert ray.get(producer.remote(q, 11)) == 11
        assert ray.get(q.size.remote()) == 11
        return [["_main", "Queue.__init__", 1], ["_main", "producer", 1], ["producer", "Queue.put", 11],
                ["_main", "Queue.size", 1]], None, [], []
    if name == "mapreduce":
        maps = [map_task.remote(i) for i in range(6)]
        assert ray.get([reduce_task.remote(*maps[:3]), reduce_task.remote(*maps[3:])]) == [3, 12]
        return [["_main", "map_task", 6], ["_main", "reduce_task", 2]], None, [], []
    if name == "actor_tree":
        root = Root.remote()
        assert ray.get(root.run.remote()) == 6
        return [["_main", "Root.__init__", 1], ["Root.__init__", "Child.__init__", 2], ["_main", "Root.run", 1],
                ["Root.run", "Child.work", 6]], None, [], []
    if name == "nested":
        # outer(x) = sum of inner(x + i), i < 3; inner(y) = leaf(y) + leaf(y + 1) = 2y + 1.
        assert ray.get([outer.remote(0), outer.remote(10)]) == [6 * x + 9 for x in (0, 10)]
        return [["_main", "outer", 2], ["outer", "inner", 6], ["inner", "leaf", 12]], None, [], []
    raise SystemExit(f"unknown program {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--address", default="auto")
    ap.add_argument("--linger-s", type=float, default=0.0)
    ap.add_argument("--profile", action="store_true", help="RAY_PROFILING=1 in the driver and the job's workers")
    args = ap.parse_args()
    env = {"env_vars": {"RAY_PROFILING": "1"}} if args.profile else None
    ray.init(address=args.address, logging_level="ERROR", runtime_env=env)
    job_id = ray.get_runtime_context().get_job_id()
    edges, findings, measured, listed = run(args.name)
    time.sleep(args.linger_s)
    ray.shutdown()
    # A pattern program (findings None) makes none.
    print(json.dumps({"program": args.name, "job_id": job_id, "profiled": args.profile, "pattern": findings is None,
                      "edges": edges, "findings": findings or [], "findings_measured": measured,
                      "findings_listed": listed}), flush=True)


if __name__ == "__main__":
    main()
