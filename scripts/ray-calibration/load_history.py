#!/usr/bin/env python3
"""Whether a machine loaded a few minutes before makes the suite's short runs faster.

The suite waits for the 1-minute load average to fall below the cores before a run,
not the 5-minute one. The three suite runs of 1,000 async actor calls made on
2026-11-29 (226-246 ms) each began some four minutes after a run of 200 `num_cpus=0`
actors, with the 5-minute load at 7.9-8.1; the three made on 2026-11-30 on a machine
quiet for minutes took 306-346 ms. The row's median is between the two groups.

Each round runs two arms, in turn, through `suite.py run` (one process a run, its
quiet wait and all, as `suite.py all` runs them; the records go to a scratch folder,
not runs/suite/):
- after: the suite's 200 `num_cpus=0` actors, then the measured runs at once (each
  still waits for a 1-minute load below 1, as the suite does);
- quiet: a wait for the 5-minute load average to fall below 1 (at most 15 minutes),
  then the same measured runs.
The measured runs: 1,000 and 10,000 async actor calls, and 1,000 no-op tasks on 4 CPUs.
Each row has the run's figure and the load averages (1, 5, 15 minutes) as it began.

  python load_history.py --out runs/load-history.json
  python load_history.py --rounds 1 --out /tmp/load-history.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import begin_probe, wait_quiet, write_probe  # noqa: E402

LOAD = ("actor_creation", {"actors": 200, "num_cpus": "0"})
MEASURED = [
    ("actor_calls", {"calls": 1000, "mode": "async"}),
    ("actor_calls", {"calls": 10000, "mode": "async"}),
    ("noop_tasks", {"tasks": 1000, "cpus": 4}),
]


def suite_run(out_dir, workload, params):
    """One `suite.py run` in its own process; its record, read back from `out_dir`."""
    before = set(os.listdir(out_dir))
    cmd = [sys.executable, os.path.join(HERE, "suite.py"), "--out-dir", out_dir, "run", workload]
    for k, v in params.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    (name,) = set(os.listdir(out_dir)) - before
    with open(os.path.join(out_dir, name)) as f:
        return json.load(f)


def arm(out_dir, name, round_no):
    """One arm's rows: `suite.py run` records of the load (arm "after") and the measured
    runs, each with its figure and the load as it began."""
    def row(workload, params):
        rec = suite_run(out_dir, workload, params)
        return {"round": round_no, "arm": name, "workload": workload, "params": params,
                "seconds": rec["result"]["seconds"], "load_before": rec["load_average_before"]}

    rows = []
    if name == "after":
        rows.append(row(*LOAD))
    else:
        wait_quiet(1.0, 900, minutes=5)
    for workload, params in MEASURED:
        rows.append(row(workload, params))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    load_before, started = begin_probe(1.0, 120)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for round_no in range(args.rounds):
            for name in ("after", "quiet"):
                rows += arm(scratch, name, round_no)
    write_probe(args.out, started, load_before, rows)


if __name__ == "__main__":
    main()
