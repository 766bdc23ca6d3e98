#!/usr/bin/env python3
"""Where the cores go in the suite's cold 1,000-task runs: the model's 4-CPU run of
1,000 no-op tasks is 5 % under Ray's (1.195 s against 1.263), below all six of Ray's
runs, while its 2-CPU run is within 1.4 %; Ray's 4-CPU 1,000-task figure also lies some
60 ms above the line through its 10,000- and 100,000-task ones.

Each row is the suite's `noop_tasks` body (a fresh local cluster, N no-op tasks of
`num_cpus=1` submitted in one loop, one `ray.get`) in a fresh process, with each group of
Ray's processes' CPU seconds over it (`ray_kit.cpu_by_role`: the driver, the raylet, the
GCS, the task workers up and those still starting, the rest), and their sum against
the cores times the wall time: how much of the machine the run left idle. At 2 and 4
CPUs, in turn, three rounds (`--runs`).

  python cold_cpu.py --out runs/cold-cpu.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import run_program_probe  # noqa: E402

ONE_RUN = r"""
import json, os, sys, time
sys.path.insert(0, HERE)
cpus, tasks = int(sys.argv[1]), int(sys.argv[2])
import ray
from ray_kit import cpu_by_role, local_cluster, timed_batch
local_cluster(cpus)

@ray.remote(num_cpus=1)
def noop():
    return None

before = cpu_by_role()
seconds, submit_seconds = timed_batch(ray, noop.remote, tasks)
after = cpu_by_role()
cpu = {role: after.get(role, 0.0) - before.get(role, 0.0) for role in set(before) | set(after)}
ray.shutdown()
print(json.dumps({"cpus": cpus, "tasks": tasks, "seconds": seconds, "submit_seconds": submit_seconds,
                  "cpu_seconds": cpu, "cpu_total": sum(cpu.values()), "cores": os.cpu_count(),
                  "idle_core_seconds": os.cpu_count() * seconds - sum(cpu.values())}))
"""


if __name__ == "__main__":
    run_program_probe(__doc__, ONE_RUN.replace("sys.path.insert(0, HERE)", f"sys.path.insert(0, {HERE!r})"),
                      ways=((2, 1000), (4, 1000)), numbered="round")
