#!/usr/bin/env python3
"""The Flow Insight seed program, run N times on one Ray head with `rayscope observe`
watching by pull and by push, and each run's observed edges held to its x10 law:
every edge from a Worker's `process` to a child's carries 10 calls per call of the
caller (tests/observe_ray.rs checks one live run; this is the series).

    python seed_series.py --rayscope target/debug/rayscope --out seed-series-2.60.json \
        [--runs 10] [--seed 23] [--work DIR]

Run it with the Python of the Ray under test (a venv), with nothing else using real
Ray (cluster.py takes /tmp/real-ray.lock; take the machine's shared lock around it
too). Each run is programs.py's seed program as its own driver through cluster.py
(lingering 2.5 s, as the test's does), so a run here is the test's run.

It writes OUT, compact and meant to be committed:
  {"ray": VERSION, "seed": S, "runs": [{"job": ID, "makespan_s": ..,
    "pull": {"holds": bool, "edges": [[caller, callee, calls, caller_calls]]},
    "push": {...}}], "held": "k of N"}
where caller and callee are the Worker actors as rayscope numbers them. An observer
is read until the job has ended and the law holds, or 90 s have passed (then the last
read is kept and `holds` is false).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ray-common"))
from ports import free_port  # noqa: E402


def get(base, path):
    with urllib.request.urlopen(base + path, timeout=30) as answer:
        return json.load(answer)


def edges_of(base, job):
    """The job's Worker.process edges [caller, callee, calls, caller_calls], or None
    while it has not ended."""
    jobs = get(base, "/api/flow/jobs")["jobs"]
    if not any(j["job_id"] == job and j.get("end_time_s") is not None for j in jobs):
        return None
    graph = get(base, f"/api/flow/graph?job={job}")

    def actor(node_id):
        if not node_id.endswith(".process"):
            return None
        return node_id[: -len(".process")].removeprefix("Worker:")

    calls = {actor(n["id"]): n.get("calls", 0) for n in graph["nodes"] if actor(n["id"])}
    out = []
    for e in graph["edges"]:
        caller, callee = actor(e["source"]), actor(e["target"])
        if caller and callee:
            out.append([caller, callee, e["calls"], calls.get(caller, 0)])
    return sorted(out)


def holds(edges):
    return bool(edges) and all(calls == 10 * per for _, _, calls, per in edges)


def read(base, job, limit_s=90.0):
    deadline = time.monotonic() + limit_s
    last = []
    while time.monotonic() < deadline:
        try:
            got = edges_of(base, job)
        except OSError:
            got = None
        if got is not None:
            last = got
            if holds(got):
                break
        time.sleep(0.5)
    return {"holds": holds(last), "edges": last}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rayscope", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--work")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="seed-series-")
    os.makedirs(work, exist_ok=True)
    dashboard, pull_port, push_port = free_port(), free_port(), free_port()
    pull, push = f"http://127.0.0.1:{pull_port}", f"http://127.0.0.1:{push_port}"
    logs = [open(os.path.join(work, n), "w") for n in ("pull.log", "push.log")]
    observers = [
        subprocess.Popen([args.rayscope, "observe", "--ray", f"http://127.0.0.1:{dashboard}", "--listen",
                          f"127.0.0.1:{pull_port}", "--poll-every", "500ms"], stdout=logs[0], stderr=logs[0]),
        subprocess.Popen([args.rayscope, "observe", "--push-only", "--listen", f"127.0.0.1:{push_port}"],
                         stdout=logs[1], stderr=logs[1]),
    ]
    cluster = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "cluster.py"), os.path.join(work, "ray"), "--dashboard-port",
         str(dashboard), "--push-to", f"{push}/api/observe/events"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def step(command):
        cluster.stdin.write(command + "\n")
        cluster.stdin.flush()
        return answer()

    def answer():
        line = cluster.stdout.readline()
        if not line:
            raise SystemExit("cluster.py ended")
        out = json.loads(line)
        if not out.get("ok"):
            raise SystemExit(f"cluster.py: {out}")
        return out

    try:
        answer()  # ready
        import ray

        runs = []
        for i in range(args.runs):
            out = step(f"seed --seed {args.seed}")
            job = out["job_id"]
            run = {"job": job, "makespan_s": round(out["makespan_s"], 3), "pull": read(pull, job),
                   "push": read(push, job)}
            runs.append(run)
            print(f"run {i + 1}: job {job}, {out['makespan_s']:.2f} s, pull holds {run['pull']['holds']}, "
                  f"push holds {run['push']['holds']}", file=sys.stderr, flush=True)
        held = sum(1 for r in runs if r["pull"]["holds"] and r["push"]["holds"])
        # One run a line: compact, and a diff shows which run changed.
        with open(args.out, "w") as f:
            f.write(f'{{"ray": "{ray.__version__}", "seed": {args.seed}, "held": "{held} of {len(runs)}", "runs": [\n')
            f.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in runs))
            f.write("\n]}\n")
        print(f"the x10 law held by pull and push in {held} of {len(runs)} runs", file=sys.stderr)
        step("quit")
    finally:
        if cluster.poll() is None:
            cluster.kill()
        for o in observers:
            o.terminate()
            o.wait(timeout=30)


if __name__ == "__main__":
    main()
