"""One run's timeline from a kept trace: each worker's start and each call, in ms from the job's start.

    python timeline.py TRACE_DIR [--calls N] [--model-events FILE]

TRACE_DIR is a trace as `rayscope observe --record` wrote it, or as `whatif.py
--keep-traces` kept it (plain or gzipped segments): `runs/traces/SERIES/PROGRAM/record/trace`
or `.../PROGRAM/SHAPE-I/trace`. It prints

* each worker process Ray's worker table lists: when the raylet launched it and when it
  registered, the CPU time it had used by the observer's last reading between its
  registration and its first call (its start's CPU and little else; "-" where no reading
  fell between, as for a recording's prestarts, read only from the job's start), and
  whether it was launched before the job's first call (a prestart for the first driver)
  or during the job;
* the first N calls by when they began to run, each with its end, its worker and whether
  it was that worker's first call.

With --model-events (the log of `rayscope simulate --replay ... --events FILE`), it also
prints the replay's first N calls the same way, by the model's task numbers: what to set
beside Ray's when a shape change misses (scripts/ray-whatif/README.md).
"""

import argparse
import gzip
import json
import os
import signal
import statistics
import sys


def lines_of(trace_dir):
    segments = sorted(f for f in os.listdir(trace_dir) if f.startswith("segment-"))
    if not segments:
        sys.exit(f"{trace_dir}: no segment-*.jsonl or segment-*.jsonl.gz here (a trace's folder)")
    for name in segments:
        path = os.path.join(trace_dir, name)
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def ray_timeline(trace_dir, rows=None):
    """(job start ms, workers, calls) of the trace's one job; `rows`, the trace's rows
    when they were read already."""
    jobs, workers, calls = [], {}, {}
    for row in rows if rows is not None else lines_of(trace_dir):
        kind = row.get("kind")
        if kind == "job":
            jobs.append(row)
        elif kind == "worker" and row.get("launch_ms") and row.get("launched_ms"):
            workers[row["pid"]] = row
        elif kind == "task" and row.get("type") != "DRIVER_TASK":
            calls[(row["task_id"], row.get("attempt_number", 0))] = row
    if not jobs:
        sys.exit(f"{trace_dir}: no job in this trace")
    start = jobs[0]["start_time"]
    rows = []
    for t in calls.values():
        at = dict(t.get("events") or [])
        if "RUNNING" in at:
            rows.append((at["RUNNING"] - start, at.get("FINISHED", at.get("FAILED", 0)) - start, t["name"],
                         t.get("worker_pid")))
    return start, sorted(workers.values(), key=lambda w: w["launch_ms"]), sorted(rows)


def cpu_before_first_call(rows, workers, calls, start):
    """pid -> the CPU ms a worker process had used by the observer's last reading (ten a
    second, `worker_cpu` rows) between its registration and its first call, or the end
    of the trace if it ran none."""
    registered = {w["pid"]: w["launched_ms"] for w in workers}
    first = {}
    for ran, _end, _name, pid in calls:
        first.setdefault(pid, ran + start)
    used = {}
    for row in rows:
        if row.get("kind") != "worker_cpu":
            continue
        for pid, cpu_ms in row["cpu_ms"]:
            if registered.get(pid, float("inf")) <= row["at_ms"] <= first.get(pid, float("inf")):
                used[pid] = cpu_ms
    return used


def model_calls(path):
    """(RUNNING ms, end ms, task) of each call in a model's event log (first attempt)."""
    began, ended = {}, {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4 or parts[1] != "task":
                continue
            at_ms, task, state = int(parts[0]) / 1000, parts[2], parts[3]
            if state == "RUNNING" and task != "1":
                began.setdefault(task, at_ms)
            elif state in ("FINISHED", "FAILED"):
                ended[task] = at_ms
    return sorted((at, ended.get(t, float("nan")), t) for t, at in began.items())


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="a trace's folder (segment-*.jsonl or .jsonl.gz)")
    ap.add_argument("--calls", type=int, default=12, help="how many calls to list (default 12)")
    ap.add_argument("--model-events", help="a replay's event log (simulate --events FILE)")
    args = ap.parse_args()

    rows = list(lines_of(args.trace))
    start, workers, calls = ray_timeline(args.trace, rows)
    cpu = cpu_before_first_call(rows, workers, calls, start)
    print(f"Ray: {len(workers)} worker processes, {len(calls)} calls; ms from the job's start")
    print(f"{'pid':>8} {'launched':>9} {'registered':>11} {'took':>6} {'cpu':>5}  when")
    took = {"before the job": [], "in the job": []}
    for w in workers:
        launch, up = w["launch_ms"] - start, w["launched_ms"] - start
        when = "before the job" if launch < 0 else "in the job"
        took[when].append(up - launch)
        print(f"{w['pid']:>8} {launch:>9} {up:>11} {up - launch:>6} {cpu.get(w['pid'], '-'):>5}  {when}")
    for when, ms in took.items():
        if ms:
            print(f"  starts {when}: {min(ms)}-{max(ms)} ms, median {statistics.median(ms):.0f}")
    print(f"\nRay's first {args.calls} calls by when they ran:")
    print(f"{'ran':>7} {'ended':>7} {'took':>6}  {'worker':>8}  call")
    seen = set()
    for ran, end, name, pid in calls[: args.calls]:
        first = "" if pid in seen else "  (its worker's first)"
        seen.add(pid)
        print(f"{ran:>7} {end:>7} {end - ran:>6}  {pid or '-':>8}  {name}{first}")
    if args.model_events:
        model = model_calls(args.model_events)
        print(f"\nThe replay's first {args.calls} of {len(model)} calls ({args.model_events}):")
        print(f"{'ran':>7} {'ended':>7} {'took':>6}  task")
        for ran, end, task in model[: args.calls]:
            print(f"{ran:>7.0f} {end:>7.0f} {end - ran:>6.0f}  {task}")


if __name__ == "__main__":
    main()
