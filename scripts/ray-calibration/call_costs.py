#!/usr/bin/env python3
"""Measure what a call costs in real Ray on this machine, for the model's per-call
settings. Each figure is the median of --repeat runs.

  actor_creation_to_first_reply_s  Worker.remote() until the new actor answers a call:
                                   a worker process starts (scheduler.worker_start_latency).
  sleep_overshoot_s                what time.sleep(s) takes beyond s in an actor.
  submit_s_per_call                what .remote() keeps the caller busy, measured as the
                                   seed's loop does it (sleep, then submit), less the
                                   sleep and its overshoot (scheduler.call_submit_cost).
  queued_call_overhead_s           per call on the callee when calls queue at an actor:
                                   finishing one, starting the next (scheduler.call_start_cost).
  round_trip_s_per_call            submit, run a no-op, get the reply, one call at a time.

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

    def work(self, seconds):
        time.sleep(seconds)


@ray.remote
class Caller:
    def sleep_only(self, n, seconds):
        """Seconds beyond `seconds` per time.sleep(seconds)."""
        t0 = time.perf_counter()
        for _ in range(n):
            time.sleep(seconds)
        return (time.perf_counter() - t0) / n - seconds

    def sleep_then_submit(self, target, n, seconds):
        """Seconds beyond `seconds` per iteration of the seed's loop: sleep, then submit."""
        refs = []
        t0 = time.perf_counter()
        for _ in range(n):
            time.sleep(seconds)
            refs.append(target.noop.remote())
        per = (time.perf_counter() - t0) / n - seconds
        ray.get(refs)
        return per

    def queued(self, target, n, seconds):
        """Seconds beyond `seconds` per call when n calls queue at one actor."""
        t0 = time.perf_counter()
        ray.get([target.work.remote(seconds) for _ in range(n)])
        return (time.perf_counter() - t0) / n - seconds

    def round_trip(self, target, n):
        """Seconds per call, one at a time: submit, then wait for its return."""
        t0 = time.perf_counter()
        for _ in range(n):
            ray.get(target.noop.remote())
        return (time.perf_counter() - t0) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=400, help="calls per sample")
    ap.add_argument("--sleep", type=float, default=0.005, help="the sleep of the loop samples, in seconds")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    n, s = args.calls, args.sleep

    ray.init(include_dashboard=False, logging_level="ERROR")
    creation = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        a = Target.remote()
        ray.get(a.noop.remote())
        creation.append(time.perf_counter() - t0)
        ray.kill(a)
    caller, target = Caller.remote(), Target.remote()
    ray.get([caller.round_trip.remote(target, 10), target.noop.remote()])  # warm both workers
    overshoot = [ray.get(caller.sleep_only.remote(n, s)) for _ in range(args.repeat)]
    loop = [ray.get(caller.sleep_then_submit.remote(target, n, s)) for _ in range(args.repeat)]
    queued = [ray.get(caller.queued.remote(target, n, s)) for _ in range(args.repeat)]
    rtt = [ray.get(caller.round_trip.remote(target, n)) for _ in range(args.repeat)]
    ray.shutdown()

    result = {
        "ray_version": ray.__version__,
        "cpus_on_machine": os.cpu_count(),
        "calls_per_sample": n,
        "loop_sleep_s": s,
        "actor_creation_to_first_reply_s": statistics.median(creation),
        "sleep_overshoot_s": statistics.median(overshoot),
        "submit_s_per_call": statistics.median(loop) - statistics.median(overshoot),
        "queued_call_overhead_s": statistics.median(queued),
        "round_trip_s_per_call": statistics.median(rtt),
        "samples": {"creation": creation, "sleep_overshoot": overshoot, "sleep_then_submit": loop, "queued": queued, "round_trip": rtt},
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_after": os.getloadavg(),
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    keys = ("actor_creation_to_first_reply_s", "sleep_overshoot_s", "submit_s_per_call", "queued_call_overhead_s", "round_trip_s_per_call", "load_average_after")
    print(json.dumps({k: result[k] for k in keys}))


if __name__ == "__main__":
    main()
