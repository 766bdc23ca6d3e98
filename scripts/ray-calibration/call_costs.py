#!/usr/bin/env python3
"""Measure what a call costs in real Ray on this machine, for the model's per-call
settings: how long an actor creation takes until the actor answers (a worker process
starts), how long `.remote()` keeps the caller busy, and the round trip of a call to an
idle actor that does nothing. Each figure is the median of --repeat runs.

    python call_costs.py --out costs.json
"""
import argparse
import json
import os
import statistics
import time

import ray


@ray.remote
class Target:
    def noop(self):
        return None


@ray.remote
class Caller:
    def submit(self, target, n):
        """Seconds per .remote() while submitting n calls back to back."""
        t0 = time.perf_counter()
        refs = [target.noop.remote() for _ in range(n)]
        t1 = time.perf_counter()
        ray.get(refs)
        return (t1 - t0) / n

    def round_trip(self, target, n):
        """Seconds per call, one at a time: submit, then wait for its return."""
        t0 = time.perf_counter()
        for _ in range(n):
            ray.get(target.noop.remote())
        return (time.perf_counter() - t0) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    ray.init(include_dashboard=False, logging_level="ERROR")
    creation = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        a = Target.remote()
        ray.get(a.noop.remote())
        creation.append(time.perf_counter() - t0)
        ray.kill(a)
    caller, target = Caller.remote(), Target.remote()
    ray.get([caller.submit.remote(target, 10), target.noop.remote()])  # warm both workers
    submit = [ray.get(caller.submit.remote(target, args.calls)) for _ in range(args.repeat)]
    rtt = [ray.get(caller.round_trip.remote(target, args.calls // 4)) for _ in range(args.repeat)]
    ray.shutdown()

    result = {
        "ray_version": ray.__version__,
        "cpus_on_machine": os.cpu_count(),
        "actor_creation_to_first_reply_s": statistics.median(creation),
        "submit_s_per_call": statistics.median(submit),
        "round_trip_s_per_call": statistics.median(rtt),
        "samples": {"creation": creation, "submit": submit, "round_trip": rtt},
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_after": os.getloadavg(),
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps({k: result[k] for k in ("actor_creation_to_first_reply_s", "submit_s_per_call", "round_trip_s_per_call", "load_average_after")}))


if __name__ == "__main__":
    main()
