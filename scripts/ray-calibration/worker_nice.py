#!/usr/bin/env python3
"""Which of Ray's processes run reniced (`scheduler.worker_niceness`; BENCHMARKS.md,
"Two priorities on a node's cores"). first_call.py read nice 15 in the task workers
after a loop of calls; this reads it in actors too.

A fresh local cluster of 2 logical CPUs. Four no-op tasks, an actor with default
resources and one with `num_cpus=0` each report `os.nice(0)`: the actors in their
constructor and again in a call a second later. Then every Ray process of this user by
role (`ray_kit.process_role`) with its nice value, and the autogroups they are in (Linux
weighs nice values only among the processes of one autogroup).

  python worker_nice.py --out runs/worker-nice.json
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ray_kit  # noqa: E402
from first_call import niceness_by_role  # noqa: E402
from ray_kit import ray_stop, run_probe  # noqa: E402


def autogroup(pid):
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            return f.read().split()[0]
    except OSError:
        return None


def rows():
    ray_stop()
    ray = ray_kit.local_cluster(2)
    try:

        @ray.remote
        def task():
            return os.nice(0)

        @ray.remote
        class Actor:
            def __init__(self):
                self.in_constructor = os.nice(0)

            def nice(self):
                return {"in_constructor": self.in_constructor, "in_a_call": os.nice(0)}

        tasks = ray.get([task.remote() for _ in range(4)])
        default, zero = Actor.remote(), Actor.options(num_cpus=0).remote()
        ray.get([default.nice.remote(), zero.nice.remote()])
        time.sleep(1)
        actors = {"default": ray.get(default.nice.remote()), "num_cpus=0": ray.get(zero.nice.remote())}
        by_role = niceness_by_role()
        groups = sorted({autogroup(pid) for _, _, pid in ray_kit.ray_processes()} - {None})
    finally:
        ray.shutdown()
        ray_stop()
    return [{
        "tasks": tasks,
        "actors": actors,
        "driver": os.nice(0),
        "niceness_by_role": by_role,
        "autogroups": groups,
        "driver_autogroup": autogroup(os.getpid()),
    }]


if __name__ == "__main__":
    run_probe(__doc__, rows, lambda row: row)
