#!/usr/bin/env python3
"""Why 200 actors with `num_cpus=0` start faster on Ray than 200 with default resources
(docs/fidelity.md, `actor_creation`): the same run as the suite's, in each mode, with
the worker processes counted at the end and the machine's runnable threads (the
fourth field of /proc/loadavg) sampled every 0.5 s while the actors start.

  python actor_procs.py --out runs/actor-procs.json [--actors 200]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import begin_probe, fresh_process_row, ray_stop, wait_quiet, write_probe  # noqa: E402

DRIVER = r"""
import json, os, sys, threading, time
import ray

n, mode = int(sys.argv[1]), sys.argv[2]
ray.init(address="local", num_cpus=4, include_dashboard=False, logging_level="ERROR", log_to_driver=False)

@ray.remote
class Pinger:
    def ping(self):
        return os.getpid()

samples, done = [], threading.Event()
def sample():
    while not done.is_set():
        samples.append(int(open("/proc/loadavg").read().split()[3].split("/")[0]))
        done.wait(0.5)
sampler = threading.Thread(target=sample)
sampler.start()
opts = {} if mode == "default" else {"num_cpus": 0}
t0 = time.perf_counter()
actors = [Pinger.options(**opts).remote() for _ in range(n)]
pids = ray.get([a.ping.remote() for a in actors])
seconds = time.perf_counter() - t0
done.set()
sampler.join()
workers = 0
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if argv[0].startswith(b"ray::") or any(a.endswith(b"default_worker.py") for a in argv):
            workers += 1
print(json.dumps({"seconds": seconds, "actor_processes": len(set(pids)), "worker_processes": workers,
                  "runnable_mean": sum(samples) / max(1, len(samples)), "runnable_max": max(samples or [0]),
                  "samples": len(samples)}))
ray.shutdown()
"""


def one(actors, mode):
    ray_stop()
    wait_quiet(1.0, 300)
    try:
        row = fresh_process_row(DRIVER, actors, mode, timeout=900)
    finally:
        ray_stop()
    row.update({"actors": actors, "num_cpus": mode})
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--actors", type=int, default=200)
    args = ap.parse_args()
    load_before, started = begin_probe(1.0, 300)
    rows = [one(args.actors, m) for m in ("default", "0")]
    for r in rows:
        print(json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}))
    write_probe(args.out, started, load_before, rows)


if __name__ == "__main__":
    main()
