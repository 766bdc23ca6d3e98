#!/usr/bin/env python3
"""Can the model fit the no-op runs with Ray's own split of a task's CPU between the
driver and the worker? cpu_by_process.py measured the driver's process at about 0.58
of the task workers' CPU per task (runs/cpu-by-process.json). This holds the
model's owner side (`call_submit_cost` + `owner_push_cost`) at that ratio to its worker
side (`call_start_cost`) and walks a grid of the worker's cost and the push latency
(`task_push_latency`), printing the best by the three 10,000-task fit rows with every
no-op row's error (1, 2 and 4 CPUs; 1k, 10k and 100k tasks).

`call_start_cost` here stands for a normal task's worker cost alone (the actor rows it
also moves are not read), all of it before the body: `task_worker_cost` and
`task_reply_cost` are set to 0, the model as it was when this grid was walked
(BENCHMARKS.md, "Where a no-op task's CPU goes").

  python split_grid.py --rayscope ../../target/release/rayscope
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fit import call_submit_us  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rayscope", required=True)
    ap.add_argument("--ratio", type=float, default=0.58)
    args = ap.parse_args()
    # The owner's side is `call_submit_cost`, at the binary's default, and the push.
    submit_us = call_submit_us()
    scored = []
    for worker in range(350, 851, 50):
        owner = round(args.ratio * worker - submit_us)
        for latency in range(0, 801, 100):
            sets = [
                f"scheduler.owner_push_cost={owner}us",
                f"scheduler.call_start_cost={worker}us",
                f"scheduler.task_push_latency={latency}us",
                "scheduler.task_worker_cost=0s",
                "scheduler.task_reply_cost=0s",
            ]
            cmd = [args.rayscope, "fidelity", "--runs", os.path.join(HERE, "runs"), "--format", "json"]
            for s in sets:
                cmd += ["--set", s]
            rows = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            errors = {r["params"]: (r["model"] / r["real"] - 1) * 100 for r in rows if r["workload"] == "noop_tasks"}
            fit = [errors[f"cpus={c} tasks=10000"] for c in (1, 2, 4)]
            scored.append((sum(e * e for e in fit), worker, owner, latency, {k: round(v, 1) for k, v in errors.items()}))
    scored.sort(key=lambda s: s[0])
    for score, worker, owner, latency, errors in scored[:5]:
        print(f"worker {worker} µs, owner push {owner} µs, push latency {latency} µs (fit rows' squares {score:.0f}):")
        print("  " + json.dumps(errors))


if __name__ == "__main__":
    main()
