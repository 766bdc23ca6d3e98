#!/usr/bin/env python3
"""How many idle worker processes a fresh Ray node has before the first call, and how
many worker starts its raylet runs at once: what a model that starts every worker on
demand leaves out of a cold workload (docs/fidelity.md, `noop_tasks`).

For each way a test here starts Ray (`ray.init(address="local", num_cpus=C)`, and
`ray start --head --num-cpus C` then a driver) and C in 1, 2, 4: the worker processes
by title right after the driver connected and 3 s later (an idle worker retitles
itself `ray::IDLE` once it is up, so its command line no longer names
default_worker.py), and the raylet's `--maximum_startup_concurrency`.

  python prestart.py --out runs/prestart.json
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import fresh_process_row, ray_stop, run_probe  # noqa: E402

DRIVER = r"""
import collections, json, os, sys, time
import ray

def argvs():
    # Every process's command line, split.
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            yield open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue

def titles():
    out = collections.Counter()
    for argv in argvs():
        if argv[0].startswith(b"ray::"):
            out[argv[0].decode()] += 1
        elif any(a.endswith(b"default_worker.py") for a in argv):
            out["default_worker.py (starting)"] += 1
    return dict(out)

def startup_concurrency():
    for argv in argvs():
        if argv[0].endswith(b"/raylet"):
            for a in argv:
                if a.startswith(b"--maximum_startup_concurrency="):
                    return int(a.split(b"=", 1)[1])
    return None

cpus, mode = int(sys.argv[1]), sys.argv[2]
if mode == "init":
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, logging_level="ERROR")
else:
    ray.init(address="auto", logging_level="ERROR")
at_connect = titles()
time.sleep(3)
print(json.dumps({"at_connect": at_connect, "after_3s": titles(), "maximum_startup_concurrency": startup_concurrency()}))
ray.shutdown()
"""


def one(cpus, mode):
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    ray_stop()
    if mode == "start":
        subprocess.run([ray_bin, "start", "--head", f"--num-cpus={cpus}", "--include-dashboard=false"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    try:
        row = fresh_process_row(DRIVER, cpus, mode, timeout=120)
    finally:
        ray_stop()
    row.update({"cpus": cpus, "how": "ray.init(address='local')" if mode == "init" else "ray start --head, then a driver"})
    row["idle_workers_at_connect"] = row["at_connect"].get("ray::IDLE", 0)
    return row


def summary(row):
    return {k: row[k] for k in ("how", "cpus", "idle_workers_at_connect", "maximum_startup_concurrency")}


if __name__ == "__main__":
    run_probe(__doc__, lambda: [one(c, m) for m in ("init", "start") for c in (1, 2, 4)], summary)
