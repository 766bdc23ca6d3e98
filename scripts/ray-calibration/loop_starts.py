#!/usr/bin/env python3
"""When the worker starts that a no-op batch sets off take their CPU, against its
driver's submit loop (docs/fidelity.md, `noop_submit`).

The suite's 1,000-call loops take about the same at 1, 2 and 4 CPUs (125-128 ms), where
the model's loop at 4 CPUs shares the 2 cores with the two worker starts beyond the two
prestarted ones (prestart.py) from its first calls, if it hands them over early. For 2
and 4 CPUs, three rounds: the suite's `noop_tasks` loop of 1,000 calls, each 100 calls'
time, and right at the loop's end every worker process's start (its /proc starttime,
against the loop's start) and the CPU it had used by then (utime + stime), in clock
ticks (10 ms). Each run is a fresh driver process, as each suite run is: a driver's
first batch pays one-time costs its later ones do not.

  python loop_starts.py --out runs/loop-starts.json
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import TICK, fresh_process_row, local_cluster, ray_stop, run_probe, stat_cpu, worker_processes  # noqa: E402

CALLS = 1000
STEP = 100


def boot_seconds():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def workers_now(loop_start_boot):
    """Each Ray worker process (not the driver, raylet or agents): its start against the
    loop's start and its CPU so far, in seconds."""
    out = []
    for _, cmd, fields in worker_processes():
        out.append({"title": cmd.split()[0][:40], "started_s": round(int(fields[19]) / TICK - loop_start_boot, 3),
                    "cpu_s": stat_cpu(fields)})
    return sorted(out, key=lambda w: w["started_s"])


def measure(cpus, round_):
    import ray

    ray_stop()
    ray = local_cluster(cpus)
    try:
        @ray.remote(num_cpus=1)
        def noop():
            return None

        marks = []
        refs = []
        t0_boot = boot_seconds()
        t0 = time.perf_counter()
        for i in range(CALLS):
            refs.append(noop.remote())
            if (i + 1) % STEP == 0:
                marks.append(time.perf_counter() - t0)
        workers = workers_now(t0_boot)
        ray.get(refs)
    finally:
        ray.shutdown()
        ray_stop()
    steps = [round(b - a, 4) for a, b in zip([0.0] + marks, marks)]
    return {"cpus": cpus, "round": round_, "loop_seconds": marks[-1], "each_100_seconds": steps, "workers_at_loop_end": workers}


FRESH_DRIVER = "import json, sys, loop_starts; print(json.dumps(loop_starts.measure(int(sys.argv[1]), int(sys.argv[2]))))"


def rows():
    return [fresh_process_row(FRESH_DRIVER, c, r) for r in (1, 2, 3) for c in (2, 4)]


def summary(row):
    # This cluster's workers: the prestarted ones (up to about 0.45 s before the loop) and
    # any the loop set off.
    new = [w for w in row["workers_at_loop_end"] if w["started_s"] > -0.5]
    return {"cpus": row["cpus"], "round": row["round"], "loop_ms": round(row["loop_seconds"] * 1e3, 1),
            "first_100_ms": round(row["each_100_seconds"][0] * 1e3, 1),
            "workers_started_since_loop": [w["started_s"] for w in new],
            "their_cpu_s": [w["cpu_s"] for w in new]}


if __name__ == "__main__":
    run_probe(__doc__, rows, summary, max_load=1.0)
