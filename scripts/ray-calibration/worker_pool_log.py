#!/usr/bin/env python3
"""Why Ray's raylet starts one task worker more than a burst of leases needs: its own
log of each decision, read back in order.

Each run is a fresh `ray.init(num_cpus=C)` with the raylet's debug log on
(`RAY_BACKEND_LOG_LEVEL=debug`). The driver waits 4 s (the two workers prestarted for
the first driver are up by then), submits N tasks of one function, gets them all, waits
3 s and shuts Ray down. The probe then reads `raylet.out` for the worker pool's lines
and lists them in ms from the first submit:

  prestart   a lease request's `PrestartWorkers` check: the CPUs available and the
             owner's backlog it saw, and how many it asked to start ("Prestarting N")
  started    a worker process launched
  registered a worker process up and registered
  granted    a lease handed to a worker (its short id)

and counts the processes launched during the job, and the spare ones: workers launched
that no lease was granted to while the job ran.

  python worker_pool_log.py --out runs/worker-pool-log.json [--runs 2]

The ways: 1,000 no-ops on 4 CPUs (the suite's `noop_tasks`), and 12 producers (40 ms of
CPU, then 150 ms asleep: the what-if harness's mixed job) on 6 CPUs.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import run_program_probe  # noqa: E402

DRIVER = r"""
import datetime, json, os, re, sys, time
os.environ["RAY_BACKEND_LOG_LEVEL"] = "debug"
import ray

cpus, tasks, busy_s, sleep_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
ray.init(num_cpus=cpus, include_dashboard=False, logging_level="ERROR")
time.sleep(4)

@ray.remote
def call(i):
    end = time.process_time() + busy_s
    while time.process_time() < end:
        pass
    if sleep_s:
        time.sleep(sleep_s)
    return i

t0 = time.time()
ray.get([call.remote(i) for i in range(tasks)])
elapsed = time.time() - t0
time.sleep(3)
session = ray._private.worker._global_node.get_session_dir_path()
ray.shutdown()

STAMP = re.compile(r"\[(\d+-\d+-\d+ \d+:\d+:\d+,\d+) ")
PATTERNS = (
    ("prestart", re.compile(r"PrestartWorkers, num_available_cpus (\d+) backlog_size (\d+)")),
    ("asked", re.compile(r"Prestarting (\d+) workers")),
    ("started", re.compile(r"Started worker process with pid (\d+) worker_id=(\w{8})")),
    ("registered", re.compile(r"Registering worker with pid (\d+).*worker_id=(\w{8})")),
    ("granted", re.compile(r"Granting lease (\w{4}).* to worker (\w{8})")),
)
events = []
with open(os.path.join(session, "logs", "raylet.out"), errors="replace") as log:
    for line in log:
        stamp = STAMP.match(line)
        if not stamp:
            continue
        for kind, pattern in PATTERNS:
            m = pattern.search(line)
            if m:
                at = datetime.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f")
                ms = round((at.replace(tzinfo=datetime.timezone.utc).timestamp() - t0) * 1000)
                events.append([ms, kind] + list(m.groups()))
job = [e for e in events if e[0] >= 0]
launched = [e[3] for e in job if e[1] == "started"]
served = {e[3] for e in job if e[1] == "granted"}
prestarted = sum(int(e[2]) for e in job if e[1] == "asked")
print(json.dumps({"cpus": cpus, "tasks": tasks, "busy_s": busy_s, "sleep_s": sleep_s,
                  "elapsed_s": round(elapsed, 3), "launched_during_job": len(launched),
                  "spare": sorted(set(launched) - served), "prestart_asked": prestarted,
                  "events": job}))
"""

WAYS = ((4, 1000, 0, 0), (6, 12, 0.04, 0.15))

if __name__ == "__main__":
    run_program_probe(__doc__, DRIVER, runs=2, ways=WAYS)
