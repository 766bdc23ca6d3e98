#!/usr/bin/env python3
"""Where a run's CPU goes around its worker starts: one program run as whatif.py runs it
(a fresh cluster, `rayscope observe --record` watching, programs.py as the first
driver), with every process's CPU time read from /proc every 100 ms.

    python cpu_probe.py --rayscope BIN [--program sleep_reduce] [--shapes head2,head6]
                        [--rounds 2] [--work DIR]

For each run (the shapes in turn, `--rounds` times) it prints
* the CPU used, in ms, by each kind of process (raylet, GCS, dashboard processes, the
  observer, the driver, starting workers, registered workers), over
  the 0.9 s before the job's first call and two windows after it;
* each worker process of Ray's worker table: launched and registered (ms from the job's
  start), its CPU time when it registered, and its first call's run, with its CPU time
  when that call began and ended.

That says whether a shape's starts took longer because they did more work (CPU at
registration) or because something beside them took the cores, and what a worker's
first call cost. Needs Ray (run it with the Python that has `ray[default]`); holds
/tmp/real-ray.lock like whatif.py. Each run's trace stays under --work.
"""
import argparse
import collections
import os
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "ray-common"))
import timeline  # noqa: E402
import whatif  # noqa: E402
from driven import hold_real_ray  # noqa: E402
from procs import proc_cpu  # noqa: E402

# A process's kind: its executable's name for Ray's own binaries and the observer, else
# the first of these its command line holds. A worker is `python ... default_worker.py`
# while it starts and retitles itself `ray::IDLE` (then `ray::FUNCTION`) once up.
BINARIES = ["raylet", "gcs_server", "rayscope"]
SCRIPTS = [("ray::", "registered worker"), ("default_worker.py", "starting worker"),
           ("programs.py", "driver"), ("dashboard", "dashboard"), ("runtime_env", "runtime env agent"),
           ("log_monitor", "log monitor"), ("monitor.py", "autoscaler monitor"), ("cpu_probe.py", "this probe")]
TICK_S = 0.1


def processes():
    """pid -> (kind, CPU ms) of every process readable now."""
    return {pid: (name if name in BINARIES else next((k for key, k in SCRIPTS if key in cmd), name), round(cpu * 1000))
            for pid, (name, cmd, cpu) in proc_cpu().items()}


def sampled_run(args, shape, run_dir):
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            samples.append((time.time() * 1000, processes()))
            time.sleep(TICK_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        job, makespan, trace, _ = whatif.one_run(args, args.program, shape, run_dir, record=True)
    finally:
        stop.set()
        sampler.join()
    return makespan, trace, samples


def report(shape, makespan, trace, samples):
    start, workers, calls = timeline.ray_timeline(trace)

    print(f"{shape}: makespan {makespan:.3f} s")
    for lo, hi in [(-900, 0), (0, 1200), (1200, 2500)]:
        # Each tick's CPU goes to the kind the process was at the tick's start: a worker
        # that registers inside the window keeps its start's CPU as a start's.
        ticks = [s for s in samples if start + lo <= s[0] <= start + hi]
        used = collections.Counter()
        for (_, before), (_, after) in zip(ticks, ticks[1:]):
            for pid, (kind, cpu) in after.items():
                # A process new this tick began within it: all its CPU is the tick's.
                was_kind, was_cpu = before.get(pid, (kind, 0))
                used[was_kind] += max(0, cpu - was_cpu)
        top = ", ".join(f"{k} {v}" for k, v in used.most_common(8) if v)
        print(f"  {lo:>5}..{hi:<5} ms: {sum(used.values())} ms of CPU: {top}")

    def cpu_of(pid, ms):
        seen = [s[1][pid][1] for s in samples if pid in s[1] and s[0] <= start + ms]
        return seen[-1] if seen else None

    print(f"  {'pid':>8} {'launched':>9} {'registered':>11} {'CPU then':>9}  first call (ran..ended, CPU at each)")
    for w in workers:
        pid, launch, up = w["pid"], w["launch_ms"] - start, w["launched_ms"] - start
        first = next((c for c in calls if c[3] == pid), None)
        call = (f"{first[0]}..{first[1]} ({cpu_of(pid, first[0])}, {cpu_of(pid, first[1])} ms)"
                if first else "none")
        print(f"  {pid:>8} {launch:>9} {up:>11} {cpu_of(pid, up)!s:>9}  {call}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rayscope", required=True, help="the rayscope binary that observes each run")
    ap.add_argument("--program", default="sleep_reduce", help="one of programs.py's (default sleep_reduce)")
    ap.add_argument("--shapes", default="head2,head6", help=f"of {', '.join(whatif.SHAPES)} (default head2,head6)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", default="/tmp/cpu-probe", help="where each run's trace is written")
    args = ap.parse_args()
    args.object_mb = None
    shapes = args.shapes.split(",")
    unknown = [s for s in shapes if s not in whatif.SHAPES]
    if unknown:
        ap.error(f"--shapes: no shape {', '.join(unknown)} (known: {', '.join(whatif.SHAPES)})")
    hold_real_ray(tempfile.mkdtemp(prefix="rw-", dir="/tmp"))
    for i in range(args.rounds):
        for shape in shapes:
            run_dir = os.path.join(args.work, f"{shape}-{i}")
            shutil.rmtree(run_dir, ignore_errors=True)
            report(shape, *sampled_run(args, shape, run_dir))


if __name__ == "__main__":
    main()
