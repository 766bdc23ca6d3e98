#!/usr/bin/env python3
"""What Ray records of `ray.get` / `ray.wait` / `ray.put` with profiling on, by pull and
by push, and what profiling costs a job (FINDINGS.md, "Profile events").

    python profile_probe.py OUT_DIR [--timing-runs N] [--no-push]

Run it with the Python of the Ray under test (a venv). It takes /tmp/real-ray.lock,
starts a one-node head (2 CPUs) whose dashboard agent pushes every event type
(RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES=ALL) to a receiver in this
process, and runs, each as its own driver:

  probe       ray.put, ray.get, ray.wait in the driver, in a task and in an actor, with
              RAY_PROFILING=1 in the driver's environment and the job's runtime_env
  supervisor  an actor that gets its 6 trainer calls' results, then the driver exits at
              once (no linger): what Ray writes of calls killed with their job
  timing      N runs each without profiling, with it, and with a runtime_env that sets
              another variable (what env_vars alone cost), in turn: 300 calls each
              followed by its own ray.get, then 300 ray.put

It writes OUT_DIR/<program>/{tasks.json, timeline.json, push.json, out.json} and
OUT_DIR/timing.json, and prints a summary line per step. `--save-fixture RUN_DIR DIR`
copies a run's files to DIR with addresses, paths and session names replaced (the
fixtures in tests/fixtures/ray-profile/). PROBE_LIST_TYPES=1 names the event types to
push instead of ALL, which Ray 2.49 does not read.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ray-common"))

PROFILED = {"RAY_PROFILING": "1"}
LIST_TYPES = os.environ.get("PROBE_LIST_TYPES") == "1"
ALL_TYPES = ["TASK_DEFINITION_EVENT", "TASK_EXECUTION_EVENT", "TASK_LIFECYCLE_EVENT", "ACTOR_TASK_DEFINITION_EVENT",
             "ACTOR_TASK_EXECUTION_EVENT", "TASK_PROFILE_EVENT", "DRIVER_JOB_DEFINITION_EVENT",
             "DRIVER_JOB_LIFECYCLE_EVENT", "DRIVER_JOB_EXECUTION_EVENT", "ACTOR_DEFINITION_EVENT",
             "ACTOR_LIFECYCLE_EVENT", "NODE_DEFINITION_EVENT", "NODE_LIFECYCLE_EVENT"]


# ---------------------------------------------------------------- the drivers


def driver(program, address, profiling, linger_s, plain_env=False):
    import ray

    env = {"env_vars": dict(PROFILED)} if profiling else None
    if plain_env:
        # The same runtime_env machinery without profiling: what env_vars alone cost.
        env = {"env_vars": {"RAYSCOPE_PROBE": "1"}}
    ray.init(address=address, logging_level="ERROR", runtime_env=env)
    job_id = ray.get_runtime_context().get_job_id()
    t0 = time.perf_counter()
    out = {"program": program, "job_id": job_id, "profiling": profiling}
    if program == "probe":

        @ray.remote
        def leaf(x):
            time.sleep(0.02)
            return x

        @ray.remote
        def mid(n):
            refs = [leaf.remote(i) for i in range(n)]
            ready, _ = ray.wait(refs, num_returns=1)
            big = ray.put(b"m" * 200_000)
            return sum(ray.get(refs)) + len(ray.get(big))

        @ray.remote
        class Acc:
            def __init__(self):
                self.total = 0

            def add(self, blob):
                self.total += len(blob)
                return self.total

            def fan(self, n):
                return sum(ray.get([leaf.remote(i) for i in range(n)]))

        blob = ray.put(b"x" * 300_000)
        out["mid"] = ray.get(mid.remote(3))
        acc = Acc.remote()
        out["adds"] = ray.get([acc.add.remote(blob) for _ in range(3)])
        out["fan"] = ray.get(acc.fan.remote(2))
    elif program == "supervisor":

        @ray.remote
        def train(step):
            time.sleep(0.3)
            return step

        @ray.remote
        class Supervisor:
            def run(self):
                results = ray.get([train.remote(i) for i in range(6)])
                assert sorted(results) == list(range(6))
                return len(results)

        sup = Supervisor.remote()
        out["trained"] = ray.get(sup.run.remote())
        assert out["trained"] == 6
    elif program == "timing":

        @ray.remote
        def f(i):
            return i

        got = [ray.get(f.remote(i)) for i in range(300)]
        assert got == list(range(300))
        for i in range(300):
            ray.put(i)
    out["makespan_s"] = time.perf_counter() - t0
    time.sleep(linger_s)
    ray.shutdown()
    print(json.dumps(out), flush=True)


# ---------------------------------------------------------------- the harness


class Receiver(BaseHTTPRequestHandler):
    posts = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Receiver.posts.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def run_driver(address, program, profiling, linger_s, plain_env=False):
    env = dict(os.environ)
    if profiling:
        env.update(PROFILED)
    else:
        env.pop("RAY_PROFILING", None)
    argv = [sys.executable, os.path.abspath(__file__), "--driver", program, "--address", address,
            "--linger-s", str(linger_s)] + (["--profiling"] if profiling else []) + (["--plain-env"] if plain_env else [])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{program}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def dump_job(dashboard, out_dir, name, job, n_posts_before):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    # Ray's workers report about once a second; wait until two reads agree.
    prev = None
    for _ in range(20):
        rows = get(f"{dashboard}/api/v0/tasks?detail=true&limit=10000&exclude_driver=false"
                   f"&filter_keys=job_id&filter_predicates=%3D&filter_values={job['job_id']}")
        key = json.dumps(rows["data"]["result"]["result"], sort_keys=True)
        if key == prev:
            break
        prev = key
        time.sleep(1.0)
    with open(os.path.join(d, "tasks.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with urllib.request.urlopen(f"{dashboard}/api/v0/tasks/timeline?job_id={job['job_id']}", timeout=30) as r:
        timeline = json.load(r)
    with open(os.path.join(d, "timeline.json"), "w") as f:
        json.dump(timeline, f, indent=1)
    with open(os.path.join(d, "push.json"), "w") as f:
        json.dump([e for p in Receiver.posts[n_posts_before:] for e in p], f, indent=1)
    with open(os.path.join(d, "out.json"), "w") as f:
        json.dump(job, f, indent=1)
    names = {}
    for row in rows["data"]["result"]["result"]:
        for e in (row.get("profiling_data") or {}).get("events", []):
            names[e["event_name"]] = names.get(e["event_name"], 0) + 1
    pushed = [e for p in Receiver.posts[n_posts_before:] for e in p]
    prof = [e for e in pushed if e.get("eventType") == "TASK_PROFILE_EVENT"]
    pushed_names = {}
    for e in prof:
        for x in e["taskProfileEvents"]["profileEvents"]["events"]:
            pushed_names[x["eventName"]] = pushed_names.get(x["eventName"], 0) + 1
    states = {}
    for row in rows["data"]["result"]["result"]:
        states[(row["name"], row["state"], row.get("error_type"))] = \
            states.get((row["name"], row["state"], row.get("error_type")), 0) + 1
    print(json.dumps({"step": name, "rows": len(rows["data"]["result"]["result"]),
                      "pulled_profile_events": names, "timeline_events": len(timeline),
                      "pushed_profile_events": pushed_names,
                      "states": [list(k) + [v] for k, v in states.items()]}), flush=True)


def save_fixture(src, dst):
    """A probe run's files as test fixtures: addresses, paths and session names
    replaced, JSON compact (tests/fixtures/ray-profile/)."""
    import re

    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".json"):
                continue
            text = json.dumps(json.load(open(os.path.join(root, name))), separators=(",", ":"))
            text = re.sub(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b", "192.0.2.2", text)
            text = re.sub(r"(/work|/tmp|/root|/home)/[^\"\s]*", "/path", text)
            text = re.sub(r"session_[0-9][0-9_-]*", "session_x", text)
            out = os.path.join(dst, os.path.relpath(root, src))
            os.makedirs(out, exist_ok=True)
            with open(os.path.join(out, name), "w") as f:
                f.write(text + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--save-fixture", nargs=2, metavar=("RUN_DIR", "FIXTURE_DIR"))
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--driver")
    ap.add_argument("--address")
    ap.add_argument("--profiling", action="store_true")
    ap.add_argument("--linger-s", type=float, default=0.0)
    ap.add_argument("--plain-env", action="store_true")
    ap.add_argument("--timing-runs", type=int, default=5)
    args = ap.parse_args()
    if args.save_fixture:
        return save_fixture(*args.save_fixture)
    if args.driver:
        return driver(args.driver, args.address, args.profiling, args.linger_s, args.plain_env)

    from driven import hold_real_ray

    os.makedirs(args.out_dir, exist_ok=True)
    temp = os.path.join("/tmp", "rayprobe")
    hold_real_ray(temp)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ["RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"] = f"http://127.0.0.1:{server.server_port}/events"
    os.environ["RAY_enable_core_worker_ray_event_to_aggregator"] = "1"
    os.environ["RAY_enable_ray_event"] = "1"
    # Ray 2.60 reads ALL; Ray 2.49 only a list, and names task events otherwise
    # (TASK_EXECUTION_EVENT): the list of both versions' task types works on both.
    os.environ["RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES"] = ",".join(ALL_TYPES) if LIST_TYPES else "ALL"
    from ray.cluster_utils import Cluster
    import ray

    port = 8299
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "temp_dir": temp, "dashboard_port": port, "dashboard_host": "127.0.0.1",
        "include_dashboard": True, "object_store_memory": 200 * 1024 * 1024})
    cluster.wait_for_nodes()
    dashboard = f"http://127.0.0.1:{port}"
    version = get(f"{dashboard}/api/version")
    print(json.dumps({"step": "ready", "ray": version.get("ray_version")}), flush=True)
    try:
        for program, linger in [("probe", 2.5), ("supervisor", 0.0)]:
            n = len(Receiver.posts)
            job = run_driver(cluster.address, program, True, linger)
            time.sleep(3.0)  # the pushes of the job's last second
            dump_job(dashboard, args.out_dir, program, job, n)
        if args.timing_runs == 0:
            return
        timing = {"with": [], "without": [], "env_vars_only": []}
        for _ in range(args.timing_runs):
            for mode in ("without", "with", "env_vars_only"):
                timing[mode].append(run_driver(cluster.address, "timing", mode == "with", 0.0,
                                               plain_env=mode == "env_vars_only")["makespan_s"])
        summary = {m: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "runs": v}
                   for m, v in timing.items()}
        summary["ray"] = version.get("ray_version")
        with open(os.path.join(args.out_dir, "timing.json"), "w") as f:
            json.dump(summary, f, indent=1)
        print(json.dumps({"step": "timing", **{m: summary[m]["median_s"] for m in timing}}), flush=True)
    finally:
        cluster.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
