#!/usr/bin/env python3
"""What the driver's submit loop waits for when its thread has less than a core
(loop_share.py: 0.91 of a core over 100,000 calls at 1 CPU, 0.77 at 4): a CPU held
by other runnable threads (the kernel's run-queue wait), or something it blocks on (a
lock or a condition shared with the driver's other threads: it sleeps).

The suite's `noop_tasks` body, cold, as loop_share.py runs it (a fresh local cluster of C
logical CPUs): N no-op tasks submitted in one loop, then one `ray.get` of all. The loop's
thread's /proc schedstat and context switches are read around the loop, and each of the
driver's threads' CPU. Per run:

  loop_seconds           the loop's wall time
  on_cpu_share           the part of it the loop's thread ran (schedstat's first field)
  runqueue_share         the part it was runnable and waited for a CPU (the second)
  blocked_share          the rest: it slept, waiting on something other than a CPU
  voluntary_switches     context switches the thread made itself (it blocked), and
  involuntary_switches   those the kernel made (it was preempted), over the loop
  driver_threads_cpu_ms  each of the driver's other threads' CPU over the loop, by name
  seconds                the whole run, as the suite's `noop_tasks` times it

  python loop_wait.py --out runs/loop-wait.json
"""
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from loop_share import cold_loop, every_run, rounded  # noqa: E402
from ray_kit import run_probe  # noqa: E402


def schedstat():
    """The calling thread's (ns on a CPU, ns waiting on a run queue)."""
    with open("/proc/thread-self/schedstat") as f:
        on_cpu, waiting, _ = f.read().split()
    return int(on_cpu), int(waiting)


def switches():
    """The calling thread's (voluntary, involuntary) context switches."""
    counts = {}
    with open("/proc/thread-self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name.endswith("ctxt_switches"):
                counts[name] = int(value)
    return counts["voluntary_ctxt_switches"], counts["nonvoluntary_ctxt_switches"]


def thread_cpu_ns():
    """Each thread of this process: its name and the ns it ran, by thread id."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[tid] = (name, int(f.read().split()[0]))
        except OSError:
            continue  # the thread exited
    return out


def by_name(before, after, skip):
    """CPU ms each thread name ran between two `thread_cpu_ns` readings, but `skip`'s."""
    spent = {}
    for tid, (name, ns) in after.items():
        if tid == skip:
            continue
        spent[name] = spent.get(name, 0.0) + (ns - before.get(tid, (name, 0))[1]) / 1e6
    return {name: round(ms, 1) for name, ms in sorted(spent.items()) if ms >= 0.05}


def one(cpus, tasks, run):
    me = str(threading.get_native_id())

    def read(phase):
        # The loop thread's own counters read nearest the loop.
        if phase == "before":
            threads = thread_cpu_ns()
            return threads, schedstat(), switches()
        if phase == "after":
            stat, switched = schedstat(), switches()
            return thread_cpu_ns(), stat, switched
        return None

    ((threads_before, s0, v0), (threads_after, s1, v1), _), row = cold_loop(cpus, tasks, run, read)
    on_cpu = (s1[0] - s0[0]) / 1e9
    waiting = (s1[1] - s0[1]) / 1e9
    loop = row["loop_seconds"]
    return {
        **row,
        "on_cpu_share": on_cpu / loop,
        "runqueue_share": waiting / loop,
        "blocked_share": max(0.0, loop - on_cpu - waiting) / loop,
        "voluntary_switches": v1[0] - v0[0],
        "involuntary_switches": v1[1] - v0[1],
        "driver_threads_cpu_ms": by_name(threads_before, threads_after, me),
    }


def rows():
    return every_run(one, lambda r: f"loop {r['loop_seconds']:.3f} s, on cpu {r['on_cpu_share']:.2f}, run queue "
                                    f"{r['runqueue_share']:.2f}, blocked {r['blocked_share']:.2f}")


def summary(row):
    return rounded(row, ("cpus", "tasks", "run", "seconds", "loop_seconds", "on_cpu_share", "runqueue_share",
                         "blocked_share", "voluntary_switches", "involuntary_switches"))


if __name__ == "__main__":
    run_probe(__doc__, rows, summary, max_load=1.0)
