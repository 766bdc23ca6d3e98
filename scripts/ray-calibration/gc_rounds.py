#!/usr/bin/env python3
"""Why 200 actors with default resources start slower on Ray than 200 with `num_cpus=0`
(docs/fidelity.md, `actor_creation`): Ray's raylet looks every
`debug_dump_period_milliseconds` (10 s) for leases waiting on resources while none of
its workers shows progress (`IsAvailableForScheduling`: up, holding a lease, not
blocked, not an actor's yet). From the second such look in a row it triggers a global
GC, and every worker process on the node and the driver run Python's `gc.collect()`. A
default actor holds a CPU while it is created, so most of 200 wait for one while the
workers holding the CPUs start; a `num_cpus=0` actor waits for nothing. Whether a look
sees progress depends on the instant (a worker between its start and its actor's
creation counts), so the rounds a run gets vary.

This probe measures, on one node:
  * the rounds: how many "Sending Python GC request" lines the raylet logged, and to how
    many workers, while N actors started in each mode;
  * what a round costs each worker: N idle `num_cpus=0` actors, then Ray's own
    `global_gc()` three times, 11 s apart (a node runs at most one local GC every
    `local_gc_min_interval_s`, 10 s); the workers' CPU seconds over the 3 s after each,
    less their idle rate over 10 s before, per worker;
  * on the same machine, what a worker start costs: the CPU seconds each of those
    actors' processes had used when its first call answered (their starts overlapped),
    so a round's cost can be carried to another machine as a share of a start.

  python gc_rounds.py --out runs/gc-rounds.json [--actors 100] [--idle-actors 40]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import fresh_process_row, ray_stop, wait_quiet, write_probe  # noqa: E402

COMMON = r"""
import json, os, sys, time
import ray
ray.init(address="local", num_cpus=4, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
HZ = os.sysconf("SC_CLK_TCK")

@ray.remote
class Pinger:
    def ping(self):
        return os.getpid()

def cpu(pid):
    try:
        st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(st[11]) + int(st[12])) / HZ

def gc_lines():
    logs = ray._private.worker._global_node.get_logs_dir_path()
    out = []
    for line in open(os.path.join(logs, "raylet.out")):
        m = re.search(r"Sending Python GC request to (\d+) local workers", line)
        if m:
            out.append(int(m.group(1)))
    return out
import re
"""

ROUNDS = COMMON + r"""
n, mode = int(sys.argv[1]), sys.argv[2]
opts = {} if mode == "default" else {"num_cpus": 0}
t0 = time.perf_counter()
actors = [Pinger.options(**opts).remote() for _ in range(n)]
ray.get([a.ping.remote() for a in actors])
seconds = time.perf_counter() - t0
time.sleep(1.0)
rounds = gc_lines()
print(json.dumps({"what": "rounds", "actors": n, "num_cpus": mode, "seconds": seconds,
                  "gc_rounds": len(rounds), "workers_per_round": rounds}))
ray.shutdown()
"""

COST = COMMON + r"""
from ray._private import internal_api
n = int(sys.argv[1])
actors = [Pinger.options(num_cpus=0).remote() for _ in range(n)]
pids = ray.get([a.ping.remote() for a in actors])
start_cpu = sorted(cpu(p) for p in pids)
time.sleep(2.0)
def total():
    return sum(cpu(p) for p in pids)
c0, w0 = total(), time.perf_counter()
time.sleep(10.0)
idle_rate = (total() - c0) / (time.perf_counter() - w0)
per_worker = []
before = len(gc_lines())
for _ in range(3):
    c0, w0 = total(), time.perf_counter()
    internal_api.global_gc()
    time.sleep(3.0)
    spent = total() - c0 - idle_rate * (time.perf_counter() - w0)
    per_worker.append(spent / n)
    time.sleep(8.0)
rounds = gc_lines()[before:]
print(json.dumps({"what": "cost", "idle_actors": n, "gc_rounds": len(rounds), "workers_per_round": rounds,
                  "gc_cpu_per_worker": per_worker, "idle_cpu_per_worker": idle_rate / n,
                  "start_cpu_median": statistics.median(start_cpu), "start_cpu_min": start_cpu[0]}))
ray.shutdown()
"""


def one(program, *args):
    ray_stop()
    wait_quiet(1.0, 300)
    try:
        return fresh_process_row("import statistics\n" + program, *args, timeout=900)
    finally:
        ray_stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--actors", type=int, default=100)
    ap.add_argument("--idle-actors", type=int, default=40)
    args = ap.parse_args()
    wait_quiet(1.0, 300)
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rows = []
    for program, *params in ((COST, args.idle_actors), (ROUNDS, args.actors, "default"), (ROUNDS, args.actors, "0")):
        rows.append(one(program, *params))
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in rows[-1].items()}), flush=True)
    write_probe(args.out, started, load_before, rows)


if __name__ == "__main__":
    main()
