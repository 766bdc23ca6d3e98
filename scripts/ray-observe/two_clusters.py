#!/usr/bin/env python3
"""Two real Ray clusters at once on this machine (tests/observe_clusters.rs drives it).

Usage: two_clusters.py TEMP_DIR --east-dashboard-port P --west-dashboard-port Q
                       [--west-push-to URL]            (holds /tmp/real-ray.lock)

Starts two Ray heads with `ray start --head --block`, each in a process group of its
own, with its own temp dir, GCS, dashboard, agent, client-server and metrics ports and
worker port range: "east" on 127.0.0.1 and "west" on 127.0.0.2 (one CPU each). With
--west-push-to, west's processes get Ray 2.60's Event Export settings, so its
aggregator agent POSTs its events to URL. Then it reads one command per line on stdin
and answers one JSON line per command:

  run east|west   run a small job on that cluster as its own driver: the driver calls
                  NAME_root twice, each call calling NAME_leaf twice; it lingers 2.5 s
                  so Ray's last task events go out; answers its job id
  quit            stop both heads

The first line, once both dashboards answer, is {"step": "ready", "east_metrics_port":
.., "west_metrics_port": ..}. On quit, EOF or any failure both heads are stopped:
SIGTERM to each head's group (`ray start --block` then stops its node), SIGKILL to
what is left after 20 s.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ray-common"))
from driven import answer_privately, hold_real_ray, say, wait_for_event_aggregator  # noqa: E402
from ports import free_port  # noqa: E402

answer_privately()

RAY = os.path.join(os.path.dirname(sys.executable), "ray")
PUSH_ENV = ("RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR", "RAY_enable_core_worker_ray_event_to_aggregator",
            "RAY_enable_ray_event")

# The driver each "run" starts: NAME_root and NAME_leaf are plain functions, so their
# names (and Flow Insight's nodes) say which cluster ran them.
DRIVER = r'''
import json, sys, time
import ray
name, address = sys.argv[1], sys.argv[2]
def leaf(i):
    time.sleep(0.05)
    return i
def root(i):
    return sum(ray.get([LEAF.remote(i * 10 + k) for k in range(2)]))
leaf.__name__ = leaf.__qualname__ = f"{name}_leaf"
root.__name__ = root.__qualname__ = f"{name}_root"
LEAF = ray.remote(num_cpus=0.1)(leaf)
ROOT = ray.remote(num_cpus=0.1)(root)
ray.init(address=address, logging_level="ERROR")
job = ray.get_runtime_context().get_job_id()
total = sum(ray.get([ROOT.remote(i) for i in range(2)]))
time.sleep(2.5)
print(json.dumps({"job_id": job, "total": total}))
'''


# Each head's 1,000 worker ports, from Ray's own range (10002-19999), which the servers'
# ports (`free_port`, the tests' too) stay above: at 20000-20999 a dashboard port drawn
# at 20909 once made `ray start` refuse to run.
WORKER_PORTS_FROM = {"east": 18_000, "west": 19_000}


class Head:
    def __init__(self, name, ip, temp, dashboard_port, workers_from, push_to):
        self.name, self.ip = name, ip
        self.gcs_port, self.metrics_port, self.agent_grpc_port = free_port(), free_port(), free_port()
        self.dashboard = f"http://127.0.0.1:{dashboard_port}"
        self.env = {k: v for k, v in os.environ.items() if k not in PUSH_ENV}
        if push_to:
            self.env["RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"] = push_to
            self.env["RAY_enable_core_worker_ray_event_to_aggregator"] = "1"
            self.env["RAY_enable_ray_event"] = "1"
        os.makedirs(temp, exist_ok=True)
        argv = [
            RAY, "start", "--head", "--block", "--disable-usage-stats",
            "--node-ip-address", ip, "--port", str(self.gcs_port),
            "--dashboard-host", "127.0.0.1", "--dashboard-port", str(dashboard_port), "--include-dashboard", "true",
            "--dashboard-agent-listen-port", str(free_port()), "--dashboard-agent-grpc-port", str(self.agent_grpc_port),
            "--ray-client-server-port", str(free_port()), "--runtime-env-agent-port", str(free_port()),
            "--metrics-export-port", str(self.metrics_port),
            "--min-worker-port", str(workers_from), "--max-worker-port", str(workers_from + 999),
            "--num-cpus", "1", "--object-store-memory", str(100 * 1024 * 1024), "--temp-dir", temp,
        ]
        self.log_path = os.path.join(temp, "ray-start.log")
        log = open(self.log_path, "w")
        # A group of its own: stopping it stops this head's processes and no other's.
        self.proc = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def start_output_tail(self, lines=15):
        """The last lines `ray start` printed (the temp folder goes with the test)."""
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError as e:
            return f"(unreadable: {e})"

    def address(self):
        return f"{self.ip}:{self.gcs_port}"

    def wait_ready(self, deadline):
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: ray start exited with {self.proc.returncode}; "
                                   f"its output ends: {self.start_output_tail()}")
            try:
                with urllib.request.urlopen(f"{self.dashboard}/api/v0/nodes", timeout=5) as answer:
                    nodes = json.load(answer)["data"]["result"]["result"]
                if any(n.get("state") == "ALIVE" for n in nodes):
                    break
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: the dashboard at {self.dashboard} never listed an alive node")
            time.sleep(0.5)
        # And its agent takes the task events its first job sends (see driven.py).
        wait_for_event_aggregator(f"{self.ip}:{self.agent_grpc_port}", max(1.0, deadline - time.monotonic()))

    def run(self):
        done = subprocess.run([sys.executable, "-c", DRIVER, self.name, self.address()], env=self.env,
                              capture_output=True, text=True, timeout=110)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        return json.loads(done.stdout.strip().splitlines()[-1])

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("temp_dir")
    ap.add_argument("--east-dashboard-port", type=int, required=True)
    ap.add_argument("--west-dashboard-port", type=int, required=True)
    ap.add_argument("--west-push-to")
    args = ap.parse_args()
    hold_real_ray(args.temp_dir)
    heads = {}
    try:
        heads["east"] = Head("east", "127.0.0.1", os.path.join(args.temp_dir, "east"), args.east_dashboard_port,
                             WORKER_PORTS_FROM["east"], None)
        heads["west"] = Head("west", "127.0.0.2", os.path.join(args.temp_dir, "west"), args.west_dashboard_port,
                             WORKER_PORTS_FROM["west"], args.west_push_to)
        deadline = time.monotonic() + 120
        for h in heads.values():
            h.wait_ready(deadline)
        say(step="ready", ok=True, east_metrics_port=heads["east"].metrics_port,
            west_metrics_port=heads["west"].metrics_port)
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            try:
                if words[0] == "run" and len(words) == 2 and words[1] in heads:
                    say(step=line.strip(), ok=True, **heads[words[1]].run())
                elif words[0] == "quit":
                    break
                else:
                    say(step=line.strip(), ok=False, why="unknown command")
            except Exception:
                say(step=line.strip(), ok=False, why=traceback.format_exc()[-2000:])
    except Exception:
        say(step="ready", ok=False, why=traceback.format_exc()[-2000:])
    finally:
        for h in heads.values():
            h.stop()
    say(step="quit", ok=True)


if __name__ == "__main__":
    main()
