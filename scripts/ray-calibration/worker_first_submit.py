#!/usr/bin/env python3
"""Whether a worker's first `.remote()` costs what a driver's does: the model charges
`scheduler.first_submit_cost` (a driver's first call sets up its submitting, 78-92 ms in
first_submit.py) to drivers only, and the seed tree's actors submit too (they create
their children and call them).

Each run starts a 2-CPU Ray, waits for its prestarted workers, warms the driver up (its
own first `.remote()`, timed), then asks three fresh processes to submit:
  * an actor (`num_cpus=0`, as the seed's workers) whose first `.remote()` creates an
    actor (as the seed's do): that, a second creation, a call, then its first task;
  * another whose first `.remote()` submits a task: that, a second, then its first
    creation of an actor and a call to it;
  * a task: its first `.remote()` of a task and a second, timed in it.
Each figure is the time the `.remote()` call itself took in the submitting process.

  python worker_first_submit.py --out runs/worker-first-submit.json [--runs 3]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import run_program_probe  # noqa: E402

ONE_RUN = r"""
import json, time
import ray
ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
time.sleep(3)  # the prestarted workers are up

@ray.remote(num_cpus=0)
def leaf():
    return None

@ray.remote(num_cpus=0)
class Child:
    def ping(self):
        return None

def timed(call):
    t0 = time.perf_counter()
    ref = call()
    return (time.perf_counter() - t0) * 1e3, ref

@ray.remote(num_cpus=0)
class Parent:
    def tasks_first(self):
        first_ms, a = timed(leaf.remote)
        second_ms, b = timed(leaf.remote)
        create_ms, child = timed(Child.remote)
        call_ms, c = timed(child.ping.remote)
        ray.get([a, b, c])
        return {"first_task_ms": first_ms, "second_task_ms": second_ms,
                "then_first_actor_ms": create_ms, "then_first_call_ms": call_ms}

    def actors_first(self):
        create_ms, child = timed(Child.remote)
        second_create_ms, other = timed(Child.remote)
        call_ms, c = timed(child.ping.remote)
        first_ms, a = timed(leaf.remote)
        ray.get([a, c, other.ping.remote()])
        return {"first_actor_ms": create_ms, "second_actor_ms": second_create_ms,
                "first_call_ms": call_ms, "then_first_task_ms": first_ms}

@ray.remote(num_cpus=1)
def submitter():
    first_ms, a = timed(leaf.remote)
    second_ms, b = timed(leaf.remote)
    ray.get([a, b])
    return {"first_task_ms": first_ms, "second_task_ms": second_ms}

driver_first_ms, ref = timed(leaf.remote)
driver_second_ms, ref2 = timed(leaf.remote)
ray.get([ref, ref2])
actors_first = ray.get(Parent.remote().actors_first.remote())
tasks_first = ray.get(Parent.remote().tasks_first.remote())
task_row = ray.get(submitter.remote())
print(json.dumps({"driver": {"first_task_ms": driver_first_ms, "second_task_ms": driver_second_ms},
                  "actor_creating_first": actors_first, "actor_submitting_first": tasks_first,
                  "task": task_row}))
"""


if __name__ == "__main__":
    run_program_probe(__doc__, ONE_RUN)
