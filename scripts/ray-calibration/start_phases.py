#!/usr/bin/env python3
"""How a new worker process's CPU use begins: whether its start is CPU work from its
first moment, as the model's is, or waits first (docs/fidelity.md, `noop_submit`;
loop_starts.py saw a batch's extra starts use little CPU in their first 50-90 ms).

A fresh one-node cluster of 4 CPUs (two workers prestarted, prestart.py), then four
1-second sleep tasks: two more workers start. Every 2 ms until they are up, each new
worker process's on-CPU time (/proc/PID/schedstat, ns) against its first sighting;
per worker, when it had used 5, 20 and 100 ms of CPU, and its CPU when it ran its task
(its title became `ray::sleep`). Three rounds, each a fresh cluster and driver process.

  python start_phases.py --out runs/start-phases.json
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ray_kit import fresh_process_row, local_cluster, ray_stop, run_probe, worker_processes  # noqa: E402

MARKS_MS = (5, 20, 100)


def worker_pids():
    """{PID: title} of the Ray worker processes now."""
    return {pid: cmdline.split()[0][:30] for pid, cmdline, _ in worker_processes()}


def on_cpu_ms(pid):
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e6
    except OSError:
        return None


def measure(round_):
    import ray

    ray_stop()
    ray = local_cluster(4)
    try:
        @ray.remote(num_cpus=1)
        def sleep():
            time.sleep(1.0)

        before = set(worker_pids())
        t0 = time.perf_counter()
        refs = [sleep.remote() for _ in range(4)]
        seen, curves, titled = {}, {}, {}
        while time.perf_counter() - t0 < 3.0:
            now = (time.perf_counter() - t0) * 1e3
            for pid, title in worker_pids().items():
                if pid in before:
                    continue
                seen.setdefault(pid, now)
                cpu = on_cpu_ms(pid)
                if cpu is not None:
                    curves.setdefault(pid, []).append((round(now - seen[pid], 1), round(cpu, 2)))
                if title.startswith("ray::sleep") and pid not in titled:
                    titled[pid] = round(now - seen[pid], 1)
            if len(titled) >= 2:
                break
            time.sleep(0.002)
        ray.get(refs)
    finally:
        ray.shutdown()
        ray_stop()
    workers = []
    for pid, curve in curves.items():
        marks = {}
        for m in MARKS_MS:
            marks[f"cpu_{m}ms_at_ms"] = next((t for t, c in curve if c >= m), None)
        workers.append({"first_seen_ms": round(seen[pid], 1), "ran_task_at_ms": titled.get(pid), **marks,
                        "cpu_ms_when_task_ran": next((c for t, c in curve if titled.get(pid) is not None and t >= titled[pid]), None),
                        "curve": curve})
    return {"round": round_, "workers": workers}


FRESH_DRIVER = "import json, sys, start_phases; print(json.dumps(start_phases.measure(int(sys.argv[1]))))"


def rows():
    return [fresh_process_row(FRESH_DRIVER, r) for r in (1, 2, 3)]


def summary(row):
    return {"round": row["round"], "workers": [{k: v for k, v in w.items() if k != "curve"} for w in row["workers"]]}


if __name__ == "__main__":
    run_probe(__doc__, rows, summary, max_load=1.0)
