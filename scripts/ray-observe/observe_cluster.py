#!/usr/bin/env python3
"""Start a small real Ray cluster, run programs.py's drivers against it, and dump what
the dashboard's HTTP API (and, with --push, the aggregator agent's event export) shows.

    python observe_cluster.py --out /tmp/raysamples [--push] [--extra-node] [--polls 60]

Holds /tmp/real-ray.lock for the cluster's life. With --push a small HTTP sink on
127.0.0.1 logs every POST (headers, body, arrival time) to OUT/push/<n>.json, and the
cluster is started with RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR pointing at it,
plus whatever --env KEY=VALUE pairs are given (set before any node starts).
"""
import argparse
import fcntl
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ray-common"))
from procs import proc_cpu  # noqa: E402
from ports import free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
MiB = 1024 * 1024


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Sink(http.server.BaseHTTPRequestHandler):
    out_dir = None
    counter = 0
    lock = threading.Lock()
    status = 200

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        t = time.time()
        with Sink.lock:
            Sink.counter += 1
            k = Sink.counter
        try:
            parsed = json.loads(body)
        except Exception:
            parsed = None
        rec = {
            "n": k,
            "received_unix_ms": int(t * 1000),
            "method": "POST",
            "path": self.path,
            "headers": dict(self.headers.items()),
            "body_bytes": len(body),
            "body": parsed if parsed is not None else body.decode("utf-8", "replace"),
        }
        with open(os.path.join(Sink.out_dir, f"{k:04d}.json"), "w") as f:
            json.dump(rec, f, indent=1)
        self.send_response(Sink.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.send_response(404)
        self.end_headers()

    def log_message(self, *a):
        pass


def get(base, path, timeout=120):
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(base + path, timeout=timeout) as r:
            body = r.read()
            status = r.status
            ctype = r.headers.get("Content-Type")
    except urllib.error.HTTPError as e:
        body = e.read()
        status = e.code
        ctype = e.headers.get("Content-Type")
    return status, ctype, body, time.perf_counter() - t0


def cpu_delta(before, after):
    rows = []
    for pid, (name, cmd, t) in after.items():
        t0 = before.get(pid, (None, None, 0.0))[2]
        if t - t0 > 0.005:
            rows.append({"pid": pid, "name": name, "cmd": cmd, "cpu_s": round(t - t0, 3)})
    return sorted(rows, key=lambda r: -r["cpu_s"])


def run_driver(args, address):
    t0 = time.perf_counter()
    p = subprocess.run([PY, os.path.join(HERE, "programs.py")] + args + ["--address", address],
                       capture_output=True, text=True, timeout=600, cwd="/tmp")
    log(p.stderr[-3000:])
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
    res = json.loads(line)
    res["driver_wall_s"] = time.perf_counter() - t0
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/raysamples")
    ap.add_argument("--push", action="store_true")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--extra-node", action="store_true")
    ap.add_argument("--polls", type=int, default=60)
    ap.add_argument("--seed-args", default="--scale 0.01 --seed 1")
    ap.add_argument("--mr-args", default="")
    ap.add_argument("--linger", type=float, default=5.0, help="seconds to wait for pushed events at the end")
    args = ap.parse_args()
    out = args.out
    os.makedirs(out, exist_ok=True)

    lock = open("/tmp/real-ray.lock", "a")
    fcntl.flock(lock, fcntl.LOCK_EX)
    temp_dir = tempfile.mkdtemp(prefix="rayobs-", dir="/tmp")
    os.environ["RAY_TMPDIR"] = temp_dir
    os.makedirs(os.path.join(temp_dir, "ray"), exist_ok=True)

    server = None
    if args.push:
        push_dir = os.path.join(out, "push")
        os.makedirs(push_dir, exist_ok=True)
        Sink.out_dir = push_dir
        sink_port = free_port()
        server = http.server.ThreadingHTTPServer(("127.0.0.1", sink_port), Sink)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        os.environ["RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"] = f"http://127.0.0.1:{sink_port}/events"
    for kv in args.env:
        k, v = kv.split("=", 1)
        os.environ[k] = v
    env_used = {k: v for k, v in os.environ.items() if k.startswith("RAY_")}
    log("env", env_used)

    import ray
    from ray.cluster_utils import Cluster

    dash_port = free_port()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 2,
            "temp_dir": temp_dir,
            "dashboard_port": dash_port,
            "dashboard_agent_listen_port": free_port(),
            "dashboard_host": "127.0.0.1",
            "metrics_export_port": free_port(),
            "include_dashboard": True,
            "object_store_memory": 200 * MiB,
        },
    )
    summary = {"env": env_used, "temp_dir": temp_dir, "dashboard_port": dash_port}
    try:
        if args.extra_node:
            cluster.add_node(num_cpus=2, object_store_memory=200 * MiB, temp_dir=temp_dir,
                             metrics_export_port=free_port(), node_ip_address="127.0.0.2")
        cluster.wait_for_nodes()
        base = f"http://127.0.0.1:{dash_port}"
        # wait for the dashboard
        for _ in range(120):
            try:
                if get(base, "/api/version", 5)[0] == 200:
                    break
            except Exception:
                pass
            time.sleep(0.5)
        summary["cluster_address"] = cluster.address
        t_start = time.time()
        summary["seed"] = run_driver(["seed"] + args.seed_args.split(), cluster.address)
        log("seed", summary["seed"])
        summary["mapreduce"] = run_driver(["mapreduce"] + args.mr_args.split(), cluster.address)
        log("mapreduce", summary["mapreduce"])
        time.sleep(3)  # let task events flush to GCS (1 s report interval)

        seed_job = summary["seed"]["job_id"]
        paths = {
            "tasks_detail": "/api/v0/tasks?limit=10000&detail=true",
            "tasks_nodetail": "/api/v0/tasks?limit=10000",
            "tasks_limit_20000": "/api/v0/tasks?limit=20000&detail=true",
            "tasks_limit_5": "/api/v0/tasks?limit=5&detail=true",
            "tasks_filter_job": f"/api/v0/tasks?limit=100&detail=true&filter_keys=job_id&filter_predicates=%3D&filter_values={seed_job}",
            "tasks_filter_job_state": f"/api/v0/tasks?limit=10000&detail=true&filter_keys=job_id&filter_predicates=%3D&filter_values={seed_job}&filter_keys=state&filter_predicates=%3D&filter_values=FINISHED",
            "tasks_filter_name_ne": f"/api/v0/tasks?limit=10000&filter_keys=name&filter_predicates=%21%3D&filter_values=Worker.process",
            "tasks_with_driver": "/api/v0/tasks?limit=10000&detail=true&exclude_driver=false",
            "tasks_summary": "/api/v0/tasks/summarize",
            "tasks_timeline": f"/api/v0/tasks/timeline?job_id={seed_job}",
            "actors": "/api/v0/actors?limit=10000&detail=true",
            "nodes": "/api/v0/nodes?limit=10000&detail=true",
            "objects": "/api/v0/objects?limit=10000&detail=true",
            "placement_groups": "/api/v0/placement_groups?limit=10000&detail=true",
            "workers": "/api/v0/workers?limit=100&detail=true",
            "jobs_api": "/api/jobs/",
            "v0_jobs": "/api/v0/jobs?limit=100",
            "nodes_summary": "/nodes?view=summary",
            "cluster_status": "/api/cluster_status",
            "version": "/api/version",
            "v0_cluster_events": "/api/v0/cluster_events?limit=100",
            "v0_delay": "/api/v0/delay",
        }
        timings = {}
        for name, p in paths.items():
            status, ctype, body, dt = get(base, p)
            timings[name] = {"path": p, "status": status, "content_type": ctype, "bytes": len(body), "seconds": round(dt, 4)}
            ext = "json" if (ctype or "").startswith("application/json") else "txt"
            with open(os.path.join(out, f"{name}.{ext}"), "wb") as f:
                f.write(body)
            log(name, timings[name])
        # warm repeat timings
        for name in ("tasks_detail", "tasks_nodetail", "actors", "nodes", "objects", "workers", "jobs_api", "nodes_summary", "cluster_status"):
            ts = []
            for _ in range(5):
                ts.append(get(base, paths[name])[3])
            timings[name]["repeat5_seconds"] = [round(x, 4) for x in ts]
        summary["timings"] = timings

        # polling cost: CPU seconds of every process over N polls of each path
        if args.polls:
            summary["poll_cost"] = {}
            for pname in ("tasks_detail", "tasks_nodetail", "tasks_filter_job"):
                before = proc_cpu()
                t0 = time.perf_counter()
                walls = []
                for _ in range(args.polls):
                    walls.append(get(base, paths[pname])[3])
                elapsed = time.perf_counter() - t0
                after = proc_cpu()
                summary["poll_cost"][pname] = {
                    "path": paths[pname],
                    "polls": args.polls,
                    "elapsed_s": round(elapsed, 3),
                    "wall_per_poll_s": {"min": round(min(walls), 4), "max": round(max(walls), 4), "mean": round(sum(walls) / len(walls), 4)},
                    "cpu_by_process": [r for r in cpu_delta(before, after) if r["pid"] != os.getpid()][:12],
                    "harness_cpu_s": round(after.get(os.getpid(), (0, 0, 0))[2] - before.get(os.getpid(), (0, 0, 0))[2], 3),
                    "loadavg_after": os.getloadavg(),
                }
            # idle baseline
            before = proc_cpu()
            time.sleep(10)
            after = proc_cpu()
            summary["idle_cost"] = {"seconds": 10, "cpu_by_process": cpu_delta(before, after)[:12]}
        if args.push:
            time.sleep(args.linger)
            summary["push_posts"] = Sink.counter
        summary["t_start_unix_ms"] = int(t_start * 1000)
    finally:
        with open(os.path.join(out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        try:
            cluster.shutdown()
        except Exception as e:
            log("shutdown", e)
        if server:
            server.shutdown()
    log("done")


if __name__ == "__main__":
    main()
