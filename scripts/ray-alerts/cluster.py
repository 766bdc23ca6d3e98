#!/usr/bin/env python3
"""A small real Ray cluster whose faults tests/ray_alerts.rs turns on one by one.

Usage: cluster.py TEMP_DIR   (holds /tmp/real-ray.lock while it runs)

Starts a head and one worker node with ray.cluster_utils.Cluster (one machine, every
port picked free so it can run beside another Ray cluster), connects a driver, and
then reads one command per line on stdin and answers one JSON line per command on
stdout, so the test decides when each fault happens and waits on Prometheus between
them. Commands:

  fail-tasks N   N tasks that raise, each retried once (retry_exceptions), on the worker
  oom            a task that allocates until Ray's memory monitor kills it, on the worker
  spill          objects larger than the worker's object store, pinned: the raylet spills
  kill-worker    the worker node killed without grace (every process, SIGKILL)
  kill-head      the head node killed without grace (the driver disconnects first)
  quit           shut down what is left

Every answer is {"step": <command>, "ok": true|false, ...}; the first line, once the
cluster is up, is {"step": "ready", "sd_file": <Ray's service-discovery file>, ...}.
"""

import os
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ray-common"))
from driven import answer_privately, hold_real_ray, kill_processes_using, say  # noqa: E402
from ports import free_port  # noqa: E402

import ray
from ray.cluster_utils import Cluster

MiB = 1024 * 1024
WORKER_IP = "127.0.0.2"

# Ray's log lines go to stderr from here on; answers to the test, to stdout (`say`).
answer_privately()


def meminfo():
    """(total, available) bytes, as Ray's memory monitor reads them outside a cgroup."""
    values = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, rest = line.split(":", 1)
            values[key] = int(rest.split()[0]) * 1024
    return values["MemTotal"], values["MemAvailable"]


def oom_threshold():
    """A memory-monitor threshold 3 GiB above what the machine uses now, so one task
    that allocates 3 GiB or more is killed, and nothing else is. The monitor reads the
    whole machine's memory: other programs growing by a GiB or two (a compiler, a
    server under test) must not push the spill step's tasks over the line."""
    total, available = meminfo()
    return min(0.95, (total - available + 3072 * MiB) / total)


@ray.remote(max_retries=1, retry_exceptions=True, num_cpus=0.1, resources={"worker": 0.01})
def failing(i):
    raise RuntimeError(f"task {i} fails on purpose")


@ray.remote(max_retries=0, num_cpus=0.1, resources={"worker": 0.01})
def hog():
    # Grow in 64 MiB steps, touching every page, until the memory monitor kills the
    # worker (the threshold is 3 GiB above the baseline); give up at 8 GiB.
    chunks = []
    for _ in range(128):
        chunk = bytearray(64 * MiB)
        chunk[:: 4096] = b"x" * (len(chunk) // 4096)
        chunks.append(chunk)
        time.sleep(0.02)
    return len(chunks)


@ray.remote(num_cpus=0.1, resources={"worker": 0.01})
def produce(n):
    # 20 MiB each; returned objects live in the worker node's plasma store.
    return bytearray(n * MiB)


def main():
    temp_dir = sys.argv[1]
    hold_real_ray(temp_dir)
    threshold = oom_threshold()
    # An OOM-killed task fails at once instead of being retried forever.
    os.environ["RAY_task_oom_retries"] = "0"
    # Ray refuses to spill when the disk is over 95% full (OutOfDiskError), and a CI
    # machine's disk can be: the spill step writes 160 MiB, which any disk has, so
    # turn the guard off (Ray reads a threshold of 1 as "never full").
    os.environ["RAY_local_fs_capacity_threshold"] = "1"
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "temp_dir": temp_dir,
            "dashboard_port": free_port(),
            "dashboard_agent_listen_port": free_port(),
            "dashboard_host": "127.0.0.1",
            "metrics_export_port": free_port(),
            "include_dashboard": True,
            "object_store_memory": 80 * MiB,
        },
    )
    # The worker gets its own loopback address, so its series (ip, NodeAddress) and
    # its target tell it apart from the head on one machine; its raylet alone has the
    # low memory-monitor threshold (read from the environment when it starts).
    os.environ["RAY_memory_monitor_refresh_ms"] = "100"
    os.environ["RAY_memory_usage_threshold"] = f"{threshold:.4f}"
    worker = cluster.add_node(
        num_cpus=2,
        resources={"worker": 1},
        object_store_memory=80 * MiB,
        node_ip_address=WORKER_IP,
        metrics_export_port=free_port(),
        temp_dir=temp_dir,
    )
    os.environ.pop("RAY_memory_usage_threshold")
    cluster.wait_for_nodes()
    # The driver joins the head's raylet: Ray 2.49 otherwise picks the node whose IP was
    # written last (the worker's), and then refuses to remove that node.
    ray.init(address=cluster.address, _node_ip_address=cluster.head_node.node_ip_address)
    sd_file = os.path.join(temp_dir, "prom_metrics_service_discovery.json")
    say(
        step="ready",
        ok=True,
        sd_file=sd_file,
        session=os.path.basename(ray._private.worker.global_worker.node.get_session_dir_path()),
        head_ip=cluster.head_node.node_ip_address,
        worker_ip=WORKER_IP,
        worker_metrics_port=worker.metrics_export_port,
        head_metrics_port=cluster.head_node.metrics_export_port,
        oom_threshold=threshold,
    )
    pinned = []
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        cmd, args = words[0], words[1:]
        try:
            if cmd == "fail-tasks":
                refs = [failing.remote(i) for i in range(int(args[0]))]
                failed = 0
                for r in refs:
                    try:
                        ray.get(r)
                    except Exception:
                        failed += 1
                say(step=cmd, ok=failed == len(refs), failed=failed)
            elif cmd == "oom":
                try:
                    ray.get(hog.remote(), timeout=120)
                    say(step=cmd, ok=False, why="the task finished: nothing was killed")
                except ray.exceptions.OutOfMemoryError as e:
                    say(step=cmd, ok=True, error=type(e).__name__)
                except Exception as e:
                    say(step=cmd, ok=False, why=f"{type(e).__name__}: {e}"[:500])
            elif cmd == "spill":
                # 8 x 20 MiB into an 80 MiB store, all pinned by the driver.
                pinned += [produce.remote(20) for _ in range(8)]
                ray.get(pinned)
                say(step=cmd, ok=True, objects=len(pinned))
            elif cmd == "kill-worker":
                cluster.remove_node(worker, allow_graceful=False)
                say(step=cmd, ok=True)
            elif cmd == "kill-head":
                pinned.clear()
                session_dir = cluster.head_node.get_session_dir_path()
                ray.shutdown()
                cluster.remove_node(cluster.head_node, allow_graceful=False)
                # The head's pod is gone: its dashboard agent too. remove_node leaves the
                # agent to notice its raylet's death, which Ray 2.49's takes up to a
                # minute to (serving the head's series all along; 2.60's goes at once).
                say(step=cmd, ok=True, agents_killed=kill_processes_using(session_dir, min_depth=3))
            elif cmd == "quit":
                break
            else:
                say(step=cmd, ok=False, why="unknown command")
        except Exception:
            say(step=cmd, ok=False, why=traceback.format_exc()[-2000:])
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main()
