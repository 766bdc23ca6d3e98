#!/usr/bin/env python3
"""Drive a real Ray cluster (head + workers on this machine) through the differential
scenario and record, at each step, what every target of Ray's own service-discovery
file exports: metric families, their label keys, which node (by role) serves them,
which node their NodeAddress names, and which series appeared or vanished.

Steps: idle, tasks_running, task_retried, actor_restarted, oom_kill, objects_spilled,
worker_killed, head_killed. Each step acts, then waits on a condition with a deadline
(the effect shows in Ray's API or in a scrape), then unites the scrapes of the next
WINDOW_S (Ray's agents report in periods, so single series flicker from scrape to
scrape); nothing waits a fixed time and hopes. The head's death is recorded once the
head's own target has gone silent. Whatever happens, the cluster is shut down on exit.

    python scenario.py --out differential.json [--workers 2] [--temp-dir /tmp/ray-diff]

Series identity is family + label keys + values, with values that name a node replaced
by its role (head, worker-1, ...) and volatile values (pids, worker/actor ids, session
names) replaced by a placeholder, so two runs of the scenario compare.
"""
import argparse
import http.client
import json
import os
import platform
import signal
import socket
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ray-common"))
import expose  # noqa: E402  (the exposition parser and the series normalization)
from driven import kill_processes_using  # noqa: E402
from ports import free_port  # noqa: E402

HEADROOM_BYTES = 3 << 30  # the OOM node's threshold: memory in use now plus this
CLUSTER = [None]  # the cluster being driven, shut down however main() ends
TEMP_DIR = ["/nonexistent"]  # its temp dir: whatever still uses it at exit is killed
WINDOW_S = 8.0  # each step unites the scrapes of this long (4 metric report periods)
REPORT_MS = 2000  # Ray's metrics report period for this run (default 10 s), so steps settle faster
# How long a raylet keeps trying to reach a dead GCS before it exits (default 60 s; with
# it, worker-2 answered for 122 s after the head died): shorter, so the last step is quick.
GCS_RECONNECT_S = 20


def mem_bytes():
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":")
            info[k] = int(v.split()[0]) * 1024
    return info["MemTotal"], info["MemAvailable"]


def wait_for(what, cond, deadline_s, every=0.5):
    """Poll cond() until it returns a truthy value; fail loudly at the deadline."""
    print(f"  waiting for {what}", flush=True)
    start = time.time()
    end = start + deadline_s
    while True:
        v = cond()
        if v:
            print(f"  ({time.time() - start:.1f} s)", flush=True)
            return v
        if time.time() > end:
            raise TimeoutError(f"waited {deadline_s:.0f} s for: {what}")
        time.sleep(every)


class Scraper:
    """Reads Ray's service-discovery file and scrapes every target it lists."""

    def __init__(self, sd_path, roles):
        self.sd_path = sd_path
        self.roles = roles  # "ip:port" -> role name
        self.last_sd = []

    def sd_targets(self):
        try:
            with open(self.sd_path) as f:
                groups = json.load(f)
        except (OSError, ValueError):
            return self.last_sd
        self.last_sd = sorted(t for g in groups for t in g["targets"])
        self.sd_job = sorted({g["labels"].get("job", "") for g in groups})
        return self.last_sd

    def role(self, target):
        return self.roles.get(target, "unknown:" + target)

    def scrape(self, targets=None):
        """{role: text or None (unreachable)} for every SD target (or the given ones)."""
        out = {}
        for t in targets if targets is not None else self.sd_targets():
            try:
                with urllib.request.urlopen(f"http://{t}/metrics", timeout=5) as r:
                    out[self.role(t)] = r.read().decode()
            except (OSError, http.client.HTTPException):
                # Unreachable, or not HTTP: a port the SD file lists before its agent
                # holds it can answer in another protocol (seen: gRPC bytes on 2.49).
                out[self.role(t)] = None
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--temp-dir", default="/tmp/ray-diff")
    ap.add_argument("--until", help="stop after recording this step (a short live sample)")
    ap.add_argument("--deadline", type=float, default=120, help="seconds each condition may take")
    ap.add_argument("--command", default=" ".join(sys.argv), help="recorded as how this was made")
    args = ap.parse_args()
    TEMP_DIR[0] = args.temp_dir
    assert args.workers >= 2, "worker-1 is OOM-killed and removed; worker-2 outlives the head"
    t_start = time.time()

    total, avail = mem_bytes()
    threshold = min(0.95, (total - avail + HEADROOM_BYTES) / total)
    # Ray's config comes from RAY_* variables read by each process at start: the report
    # period for all, the memory monitor only on worker-1 (so the OOM kill happens there).
    os.environ["RAY_metrics_report_interval_ms"] = str(REPORT_MS)
    os.environ["RAY_memory_monitor_refresh_ms"] = "0"
    os.environ["RAY_task_oom_retries"] = "0"
    # Spilling must not depend on how full this machine's disk is (Ray refuses to
    # spill above 95% by default; a threshold of 1 means "never full").
    os.environ["RAY_local_fs_capacity_threshold"] = "1"
    os.environ["RAY_gcs_rpc_server_reconnect_timeout_s"] = str(GCS_RECONNECT_S)
    # Ray writes its "current cluster" file under RAY_TMPDIR (default /tmp/ray), shared with
    # any other Ray on this machine: keep it inside our own temp dir.
    os.makedirs(os.path.join(args.temp_dir, "ray"), exist_ok=True)
    os.environ["RAY_TMPDIR"] = args.temp_dir

    import ray
    from ray.cluster_utils import Cluster

    # Workers get their own loopback addresses so NodeAddress tells the nodes apart on one
    # machine; the head keeps the machine's address (the driver finds its raylet by it).
    ips = {"head": None}
    for i in range(1, args.workers + 1):
        ips[f"worker-{i}"] = f"127.0.0.{i + 1}"
    ports = {role: free_port() for role in ips}
    common = {"num_cpus": 1, "object_store_memory": 80 << 20}
    cluster = CLUSTER[0] = Cluster(
        initialize_head=True,
        head_node_args=dict(
            common,
            metrics_export_port=ports["head"],
            temp_dir=args.temp_dir,
            include_dashboard=True,
            dashboard_host="127.0.0.1",
        ),
    )
    nodes = {"head": cluster.head_node}
    ips["head"] = cluster.head_node.node_ip_address
    for i in range(1, args.workers + 1):
        role = f"worker-{i}"
        if i == 1:
            os.environ["RAY_memory_monitor_refresh_ms"] = "100"
            os.environ["RAY_memory_usage_threshold"] = f"{threshold:.4f}"
        else:
            os.environ["RAY_memory_monitor_refresh_ms"] = "0"
            os.environ.pop("RAY_memory_usage_threshold", None)
        nodes[role] = cluster.add_node(
            **common,
            node_ip_address=ips[role],
            metrics_export_port=ports[role],
            resources={role: 1},
            temp_dir=args.temp_dir,
        )
    cluster.wait_for_nodes()
    cluster.connect()
    session_dir = cluster.head_node.get_session_dir_path()

    node_ids = {}
    for n in ray.nodes():
        for role, ip in ips.items():
            if n["NodeManagerAddress"] == ip:
                node_ids[role] = n["NodeID"]
    roles = {f"{ips[r]}:{ports[r]}": r for r in ips}
    sd_path = os.path.join(args.temp_dir, "prom_metrics_service_discovery.json")
    scraper = Scraper(sd_path, roles)

    def all_nodes_in_sd():
        return all(f"{ips[r]}:{ports[r]}" in scraper.sd_targets() for r in ips)

    wait_for("every node's target in the service-discovery file", all_nodes_in_sd, args.deadline)
    # The head's other targets (autoscaler, dashboard) are the SD entries that are no node's.
    for t in scraper.sd_targets():
        if t not in roles:
            roles[t] = "head-" + ("dashboard" if expose.is_dashboard(scraper.scrape([t])) else "autoscaler")
    norm = expose.Normalizer(ips, node_ids)

    steps = []
    prev = {}

    def snapshot():
        texts = scraper.scrape()
        return texts, expose.series_of(texts, norm)

    def settle(what):
        """The union of the scrapes over WINDOW_S, once the step's condition holds.
        Ray's agents export what their processes reported in the last period, so series
        and even whole families (a histogram with no observation lately, event-loop lag
        by handler) flicker from scrape to scrape and never hold still on a busy
        machine: a step records what was exported at least once in its window."""
        texts, window = snapshot()
        end = time.time() + WINDOW_S
        while time.time() < end:
            time.sleep(1)
            texts, series = snapshot()
            window.update(series)
        return texts, window

    def record(name, note, extra=None):
        nonlocal prev
        texts, series = settle(name)
        step = expose.describe_step(name, texts, series, prev, norm)
        step["note"] = note
        step["sd_targets"] = sorted(scraper.role(t) for t in scraper.last_sd)
        step["t_s"] = round(time.time() - t_start, 1)
        if extra:
            step.update(extra)
        steps.append(step)
        prev = series
        print(f"[{step['t_s']:7.1f}s] {name}: {len(step['families'])} families, "
              f"+{len(step['appeared'])} -{len(step['vanished'])} series", flush=True)
        if name == args.until:
            write_result()
            raise SystemExit(0)
        return texts, series

    def write_result():
        la = os.getloadavg()
        result = {
            "ray_version": ray.__version__,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_start)),
            "command": args.command,
            "machine": {
                "nproc": os.cpu_count(),
                "memory_bytes": total,
                "loadavg_at_end": [round(x, 2) for x in la],
                "python": platform.python_version(),
                "system": platform.system(),
            },
            "cluster": {
                "roles": sorted(ips),
                "node_ips": ips,
                "num_cpus_per_node": 1,
                "object_store_memory_bytes": 80 << 20,
                "env": {
                    "RAY_metrics_report_interval_ms": REPORT_MS,
                    "RAY_memory_monitor_refresh_ms": "100 on worker-1, 0 elsewhere",
                    "RAY_memory_usage_threshold": "in-use + 3 GiB over total, on worker-1",
                    "RAY_task_oom_retries": 0,
                    "RAY_gcs_rpc_server_reconnect_timeout_s": GCS_RECONNECT_S,
                },
                "sd_file": "<temp_dir>/prom_metrics_service_discovery.json -> <session_dir>/...",
                "session_dir_under_temp_dir": session_dir.startswith(args.temp_dir),
                "sd_job_labels": getattr(scraper, "sd_job", []),
                "target_roles": sorted(set(roles.values())),
            },
            "wall_s": round(time.time() - t_start, 1),
            "steps": steps,
        }
        expose.write_json(args.out, result)
        print(f"wrote {args.out} in {result['wall_s']} s")

    def has_series(family, **labels):
        def cond():
            _, series = snapshot()
            return any(s.family == family and all(s.labels.get(k) == v for k, v in labels.items()) for s in series)
        return cond

    def gone_for(family, role, hold_s):
        """True once no scrape has shown family on role's target for hold_s (a series can
        flicker out of one scrape and back into the next)."""
        last_seen = [time.time()]

        def cond():
            _, series = snapshot()
            now = time.time()
            if any(s.family == family and s.role == role for s in series):
                last_seen[0] = now
            return now - last_seen[0] >= hold_s
        return cond

    # 1. idle. The head's autoscaler exports its view of the nodes only after its
    # first update, which can come after every node's target is listed (seen on a
    # loaded machine: the idle step recorded without it).
    for family in ("ray_cluster_active_nodes", "autoscaler_cluster_resources"):
        wait_for(f"the autoscaler's first {family}", has_series(family), args.deadline)
    record("idle", "all nodes up, nothing submitted")

    # 2. tasks running: one task per node, held until we release it.
    gate = os.path.join(args.temp_dir, "diff-gate")
    if os.path.exists(gate):
        os.remove(gate)

    @ray.remote(num_cpus=1, scheduling_strategy="SPREAD")
    def hold(path):
        while not os.path.exists(path):
            time.sleep(0.1)
        return socket.gethostname()

    held = [hold.remote(gate) for _ in ips]
    wait_for("ray_tasks with State=RUNNING", has_series("ray_tasks", State="RUNNING"), args.deadline)
    record("tasks_running", f"{len(held)} tasks held RUNNING, one per node (SPREAD)")
    open(gate, "w").close()
    ray.get(held, timeout=args.deadline)

    # 3. a task that fails once (application error) and succeeds on its retry.
    marker = os.path.join(args.temp_dir, "diff-attempted")
    if os.path.exists(marker):
        os.remove(marker)

    @ray.remote(max_retries=1, retry_exceptions=True)
    def flaky(path):
        if not os.path.exists(path):
            open(path, "w").close()
            raise ValueError("the first attempt fails")
        return 2

    assert ray.get(flaky.remote(marker), timeout=args.deadline) == 2
    wait_for("ray_tasks with State=FAILED", has_series("ray_tasks", State="FAILED"), args.deadline)
    record("task_retried", "one task fails its first attempt (ValueError), retried, succeeds")

    # 4. an actor that crashes (its process exits) and is restarted.
    @ray.remote(max_restarts=1, max_task_retries=0, resources={"worker-2": 0.1})
    class Fragile:
        def ping(self):
            return os.getpid()

        def crash(self):
            os._exit(1)

    a = Fragile.remote()
    pid = ray.get(a.ping.remote(), timeout=args.deadline)
    try:
        ray.get(a.crash.remote(), timeout=args.deadline)
    except ray.exceptions.RayActorError:
        pass

    def restarted():
        try:
            return ray.get(a.ping.remote(), timeout=5) != pid
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return False

    wait_for("the actor answering from a new process", restarted, args.deadline)
    record("actor_restarted", "an actor on worker-2 exits (os._exit) and is restarted (max_restarts=1)")
    ray.kill(a)
    # worker-2's agent keeps serving the killed actor's last ray_actors report until the
    # series expires; the next step must not depend on whether it already has.
    # Ray before 2.52 (OpenCensus backend, one series per worker under the legacy
    # cardinality level) keeps serving a dead worker's last ray_actors: there it is
    # waited for briefly and the recording says which it was.
    opencensus = tuple(int(p) for p in ray.__version__.split(".")[:2]) < (2, 52)
    gone = gone_for("ray_actors", "worker-2", 2 * REPORT_MS / 1000)
    if not opencensus:
        wait_for("worker-2's agent no longer serving the killed actor's ray_actors", gone, args.deadline)
    else:
        try:
            wait_for("worker-2's agent no longer serving the killed actor's ray_actors", gone, 30)
        except TimeoutError:
            print("  Ray", ray.__version__, "still serves the dead worker's ray_actors: kept", flush=True)

    # 5. an OOM kill by worker-1's memory monitor.
    @ray.remote(max_retries=0, resources={"worker-1": 1})
    def hog(limit):
        chunks = []
        while sum(len(c) for c in chunks) < limit:
            chunks.append(bytearray(b"\x01" * (128 << 20)))
            time.sleep(0.02)
        time.sleep(60)  # the monitor should have killed us long before

    oom_error = None
    try:
        ray.get(hog.remote(HEADROOM_BYTES * 3), timeout=args.deadline)
    except ray.exceptions.OutOfMemoryError as e:
        oom_error = type(e).__name__
    except ray.exceptions.RayError as e:
        oom_error = type(e).__name__
    wait_for("ray_memory_manager_worker_eviction_total in a scrape",
             has_series("ray_memory_manager_worker_eviction_total"), args.deadline)
    record("oom_kill", f"a task on worker-1 allocates until worker-1's memory monitor kills it "
           f"(threshold {threshold:.3f} = in use + 3 GiB)", {"oom_error": oom_error})

    # 6. objects spilling: more objects pinned on the head than its 80 MiB store holds.
    pinned = [ray.put(bytearray(16 << 20)) for _ in range(10)]

    def spilled():
        from ray._private.internal_api import memory_summary
        return "Spilled" in memory_summary(stats_only=True)

    wait_for("objects spilled (memory_summary)", spilled, args.deadline)
    record("objects_spilled", "10 x 16 MiB objects ray.put and held on the head (80 MiB store)")
    del pinned

    # 7. worker-1 killed without grace.
    t_kill = time.time()
    cluster.remove_node(nodes["worker-1"], allow_graceful=False)
    target = f"{ips['worker-1']}:{ports['worker-1']}"
    wait_for("worker-1's target leaving the SD file", lambda: target not in scraper.sd_targets(), args.deadline)
    left_sd_s = round(time.time() - t_kill, 1)
    wait_for("ray_node_failure_total in a scrape", has_series("ray_node_failure_total"), args.deadline)
    record("worker_killed", "worker-1 removed with allow_graceful=False (SIGKILL of its processes)",
           {"sd_left_after_s": left_sd_s})

    # 8. the head killed: the driver leaves first (Ray refuses to kill the driver's node).
    last_sd = list(scraper.sd_targets())
    ray.shutdown()
    t_kill = time.time()
    cluster.remove_node(nodes["head"], allow_graceful=False)
    sd_exists = os.path.exists(sd_path)
    answering = sorted(r for r, t in scraper.scrape(last_sd).items() if t is not None)
    # The head's metrics agent outlives its raylet and GCS for a while, and the surviving
    # worker's raylet gives up on the GCS only after gcs_rpc_server_reconnect_timeout_s:
    # the step is what the targets export once both have happened (either order).
    head_target = f"{ips['head']}:{ports['head']}"
    raylet = nodes["worker-2"].all_processes["raylet"][0].process
    waited = {}

    def settled_after_head_death():
        now = round(time.time() - t_kill, 1)
        if "head" not in waited and scraper.scrape([head_target])["head"] is None:
            waited["head"] = now
        if "raylet" not in waited and raylet.poll() is not None:
            waited["raylet"] = now
        return len(waited) == 2

    wait_for("the head's target silent and worker-2's raylet gone", settled_after_head_death,
             args.deadline + 60, every=1)
    texts = scraper.scrape(last_sd)
    series = expose.series_of(texts, norm)
    step = expose.describe_step("head_killed", texts, series, prev, norm)
    step["note"] = ("head removed with allow_graceful=False; every target of the last SD file scraped once the "
                    "head's target was silent and worker-2's raylet had exited")
    step["sd_targets"] = sorted(scraper.role(t) for t in last_sd)
    step["sd_file_after_head_death"] = "still there (stale)" if sd_exists else "gone"
    step["answering_right_after"] = answering
    step["head_stops_answering_after_s"] = waited["head"]
    step["worker-2_raylet_exits_after_s"] = waited["raylet"]
    step["answering_at_the_end"] = sorted(r for r, t in texts.items() if t is not None)
    step["t_s"] = round(time.time() - t_start, 1)
    steps.append(step)
    print(f"[{step['t_s']:7.1f}s] head_killed: answering right after {answering}", flush=True)
    cluster.shutdown()
    CLUSTER[0] = None

    write_result()


def _terminated(signum, _frame):
    raise SystemExit(f"terminated by signal {signum}")


if __name__ == "__main__":
    # A test that gives up on us sends SIGTERM: shut the cluster down on the way out.
    signal.signal(signal.SIGTERM, _terminated)
    try:
        main()
    finally:
        try:
            if CLUSTER[0] is not None:
                import ray

                ray.shutdown()  # Cluster.shutdown refuses to remove the driver's node
                CLUSTER[0].shutdown()
        finally:
            # A worker's metrics agent can outlive its raylet and Cluster.shutdown() (measured).
            kill_processes_using(TEMP_DIR[0], min_depth=2)
