#!/usr/bin/env python3
"""A real Ray cluster that rayscope observes (tests/observe_ray.rs drives it).

Usage: cluster.py TEMP_DIR --dashboard-port PORT [--push-to URL]   (holds /tmp/real-ray.lock)

Starts a head node (2 CPUs) with ray.cluster_utils.Cluster, its dashboard on
127.0.0.1:PORT (so an observer can be started before the cluster is up). With
--push-to, every Ray process gets Ray 2.60's Event Export settings, so the node's
aggregator agent POSTs task, actor, job and node events to URL:

  RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR=URL
  RAY_enable_core_worker_ray_event_to_aggregator=1   (task events, from the core workers)
  RAY_enable_ray_event=1                             (node, job and actor events, from the GCS)
  RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES=ALL  (profile spans too; not on 2.49)

Then it reads one command per line on stdin and answers one JSON line per command:

  seed ARGS...       run programs.py seed ARGS as its own driver (a new job)
  mapreduce ARGS...  run programs.py mapreduce ARGS as its own driver
  suite NAME [--linger-s S] [--profile]  run suite.py NAME as its own driver (no linger
                     by default; --profile: RAY_PROFILING=1 in the driver and the job)
  quit               shut the cluster down

"ready" comes once the head is listed and its dashboard agent takes task events (a job
started before that can lose its events by push: the core workers drop a batch the
agent did not take; CI's pull observer saw such a job, its push observer nothing).

Each program lingers 2.5 s after its last ray.get before it disconnects: Ray's workers
send their task events about once a second and are killed with their driver, so a job
that exits at once loses its last second of task events (in polls and pushes alike).
A program's answer is its own JSON line plus the job's start and end as Ray's Jobs API
lists them (recorded_start_ms, recorded_end_ms: what an observer records, so a job run
with nobody observing can be compared with a recorded one). Every answer is
{"step": .., "ok": true|false, ...}; the first line, once the cluster is up, is
{"step": "ready", "dashboard": "http://127.0.0.1:PORT", "address": ..}.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ray-common"))
from driven import answer_privately, hold_real_ray, say, wait_for_event_aggregator  # noqa: E402

from ray.cluster_utils import Cluster

HERE = os.path.dirname(os.path.abspath(__file__))
LINGER_S = "2.5"

# Ray's log lines go to stderr from here on; answers to the test, to stdout (`say`).
answer_privately()


def recorded_times(dashboard, job_id, deadline_s=30.0):
    """The job's start and end (ms) as GET /api/jobs/ lists them, once Ray has ended it."""
    deadline = time.monotonic() + deadline_s
    while True:
        with urllib.request.urlopen(f"{dashboard}/api/jobs/", timeout=10) as answer:
            jobs = json.load(answer)
        job = next((j for j in jobs if j.get("job_id") == job_id), None)
        if job and job.get("end_time"):
            return job["start_time"], job["end_time"]
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} not ended in GET /api/jobs/ after {deadline_s} s: {job}")
        time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("temp_dir")
    ap.add_argument("--dashboard-port", type=int, required=True)
    ap.add_argument("--push-to")
    args = ap.parse_args()
    hold_real_ray(args.temp_dir)
    if args.push_to:
        os.environ["RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"] = args.push_to
        os.environ["RAY_enable_core_worker_ray_event_to_aggregator"] = "1"
        os.environ["RAY_enable_ray_event"] = "1"
        # Profile spans (TASK_PROFILE_EVENT) are pushed only when every event type is
        # exposed; Ray 2.49 reads the setting as a plain list, where ALL matches nothing
        # and nothing at all is pushed, and sends no profile events anyway.
        import ray
        if tuple(int(p) for p in ray.__version__.split(".")[:2]) >= (2, 50):
            os.environ["RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES"] = "ALL"
    head = {
        "num_cpus": 2,
        "temp_dir": args.temp_dir,
        "dashboard_port": args.dashboard_port,
        "dashboard_host": "127.0.0.1",
        "include_dashboard": True,
        "object_store_memory": 200 * 1024 * 1024,
    }
    # Ray 2.49 gives its dashboard a fixed ~20 s to come up, which a loaded machine can
    # miss (its modules alone took 20 s at a load of 10): the head is started again,
    # its first try's processes stopped (this script holds the machine's Ray lock).
    for attempt in range(3):
        try:
            cluster = Cluster(initialize_head=True, head_node_args=head)
            break
        except Exception as e:  # noqa: BLE001 (Ray raises a bare Exception here)
            if attempt == 2:
                raise
            print(f"the head did not start ({str(e).strip()[:200]}); trying again", file=sys.stderr, flush=True)
            ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
            subprocess.run([ray_cli, "stop", "--force"], capture_output=True, timeout=120)
    cluster.wait_for_nodes()
    # Ready means a job's task events reach the agent: see wait_for_event_aggregator.
    head_node = cluster.head_node
    wait_for_event_aggregator(f"{head_node.node_ip_address}:{head_node.metrics_agent_port}")
    dashboard = f"http://127.0.0.1:{args.dashboard_port}"
    say(step="ready", ok=True, dashboard=dashboard, address=cluster.address)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        cmd = words[0]
        try:
            if cmd == "suite":
                # A program of suite.py, run as users run them: no linger unless asked.
                argv = [sys.executable, os.path.join(HERE, "suite.py"), *words[1:], "--address", cluster.address]
                done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
                if done.returncode != 0:
                    say(step=cmd, ok=False, why=done.stderr[-2000:])
                    continue
                out = json.loads(done.stdout.strip().splitlines()[-1])
                recorded_times(dashboard, out["job_id"])
                say(step=cmd, ok=True, **out)
            elif cmd in ("seed", "mapreduce"):
                argv = [sys.executable, os.path.join(HERE, "programs.py"), cmd, *words[1:],
                        "--address", cluster.address, "--linger-s", LINGER_S]
                done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
                if done.returncode != 0:
                    say(step=cmd, ok=False, why=done.stderr[-2000:])
                    continue
                out = json.loads(done.stdout.strip().splitlines()[-1])
                start, end = recorded_times(dashboard, out["job_id"])
                say(step=cmd, ok=True, recorded_start_ms=start, recorded_end_ms=end, **out)
            elif cmd == "quit":
                break
            else:
                say(step=cmd, ok=False, why="unknown command")
        except Exception:
            say(step=cmd, ok=False, why=traceback.format_exc()[-2000:])
    cluster.shutdown()
    say(step="quit", ok=True)


if __name__ == "__main__":
    main()
