#!/usr/bin/env python3
"""The calibration suite: workloads run on real Ray on this machine, each run recorded
as one JSON file under runs/suite/ with the machine, the load average before and after,
the time, Ray's version and the command that made it.

Every workload runs in a fresh local cluster (`ray.init(address="local")`, or
`ray.cluster_utils.Cluster` where it needs two nodes), after `ray stop --force`, so a
stale /tmp/ray from an earlier run cannot point it at dead ports.

  python suite.py list                                  # the workloads and their parameters
  python suite.py run noop_tasks --tasks 10000 --cpus 2 # one run
  python suite.py all                                   # the whole matrix, one process a run
  python suite.py all --only actor_creation --max-load 0.8
  python suite.py top-up --spread 0.2 --runs 12          # more runs where Ray disagrees with itself

Workloads (figures in seconds unless named otherwise):
  noop_tasks       N no-op tasks submitted by the driver, then ray.get of all; C logical CPUs
  actor_creation   N actors created at once, then one ping each; default resources or num_cpus=0
  actor_calls      N calls to one warm actor, submitted at once; a sync or an async actor
  object_local     ray.put and ray.get of S bytes in the driver, one node, every object kept
  object_transfer  a task on a second node reads an S-byte object put on the head
  task_retries     a task that always raises, retried R times: time to the error (core worker
                   heartbeat H ms: Ray resubmits retries on its tick)
  actor_restart    an actor's process exits; time until a call answers again (max_restarts=1)
  node_death       a node killed (allow_graceful=False): time until the GCS says it is dead,
                   with the GCS's health check every P ms, dead after T failures; the node is
                   killed K ms after the GCS registered it (the checks tick from there)
  placement_group  G groups of two 1-CPU bundles, PACK or SPREAD, over two nodes: time to ready
  spillback        2C sleeping tasks from a head of C CPUs beside a worker of C CPUs
The seed tree in three shapes is seed_tree.py (its runs are runs/seed-tree-*.json).
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = os.path.join(HERE, "runs", "suite")

# The matrix `all` runs: (workload, parameters). Sizes follow issue 19's list.
MATRIX = (
    [("noop_tasks", {"tasks": n, "cpus": c}) for c in (1, 2, 4) for n in (1000, 10000, 100000)]
    + [("actor_creation", {"actors": n, "num_cpus": r}) for r in ("default", "0") for n in (10, 50, 200)]
    + [("actor_calls", {"calls": n, "mode": m}) for m in ("sync", "async") for n in (1000, 10000)]
    + [("object_local", {"size": s}) for s in (1_000, 100_000, 1_000_000, 10_000_000, 100_000_000)]
    + [("object_transfer", {"size": s}) for s in (1_000, 100_000, 1_000_000, 10_000_000, 100_000_000)]
    + [("task_retries", {"retries": r, "heartbeat_ms": h}) for h in (1000, 200) for r in (0, 3)]
    + [("actor_restart", {})]
    + [("node_death", {"period_ms": p, "threshold": t, "kill_after_ms": 1500}) for p, t in ((3000, 5), (1000, 3))]
    + [("placement_group", {"groups": 20, "strategy": s}) for s in ("PACK", "SPREAD")]
    + [("spillback", {"cpus": 2, "tasks": 40, "sleep": 0.1})]
)


def caches():
    """The first CPU's caches as the kernel lists them, e.g. {"L1d": 49152, "L2": 2097152}
    in bytes: a copy's rate per byte changes where its buffer outgrows one, and two VMs of
    the same core count can differ here ({} where the kernel does not say)."""
    out = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        names = sorted(n for n in os.listdir(base) if n.startswith("index"))
    except OSError:
        return out
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    for name in names:
        try:
            with open(os.path.join(base, name, "level")) as f:
                level = f.read().strip()
            with open(os.path.join(base, name, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, name, "size")) as f:
                size = f.read().strip()
        except OSError:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        scale = units.get(size[-1:], 1)
        digits = size.rstrip("KMG")
        if digits.isdigit():
            out[f"L{level}{suffix}"] = int(digits) * scale
    return out


def cpu_model():
    """The machine's CPU as /proc/cpuinfo names it ("" where it cannot be read)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        return ""


def machine():
    """What the figures were measured on."""
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemTotal"))
    except (OSError, StopIteration):
        pass
    return {
        "cores": os.cpu_count(),
        "cpu_model": cpu_model(),
        "caches": caches(),
        "memory_bytes": mem,
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def ray_stop():
    """Stop any Ray this user runs here, so nothing stale is found or shares the cores."""
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    subprocess.run([ray_bin, "stop", "--force"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def begin_probe(max_load=0.8, deadline_s=120):
    """Stop any Ray, wait (up to a deadline) for a quiet machine, and return the load
    average then and the time (UTC) the probe starts, for `write_probe`."""
    ray_stop()
    load_before = wait_quiet(max_load, deadline_s)
    return load_before, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_probe(out, started, load_before, rows):
    """Record a probe's rows (prestart.py, put_release.py) with the machine, the load
    and the command line that made them."""
    import ray

    record = {
        "ray_version": ray.__version__,
        "machine": machine(),
        "measured_at": started,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "command": " ".join(["python", os.path.basename(sys.argv[0])] + sys.argv[1:]),
        "rows": rows,
    }
    with open(out, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")


def median(xs):
    """The middle of xs (the upper one of an even count), as the probes report a repeat."""
    return sorted(xs)[len(xs) // 2]


TICK = os.sysconf("SC_CLK_TCK")


def stat_cpu(fields):
    """The CPU seconds (user + system, to a clock tick) in a process's /proc/PID/stat
    `fields` after its command's name: utime and stime, fields 14 and 15 of stat."""
    return (int(fields[11]) + int(fields[12])) / TICK


def process_cpu(pid):
    """The CPU seconds (user + system, to a clock tick) process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        return stat_cpu(f.read().rsplit(")", 1)[1].split())


# The no-op actors the actor-call probes define in their programs: source to put in a
# program, so that each class is its `__main__`'s (Ray then ships it by value, as the
# suite's `actor_calls` does its own, and no worker has to import this module).
NOOP_ACTORS = """
@ray.remote
class Sync:
    def noop(self):
        return None
    def pid(self):
        return os.getpid()

@ray.remote
class Async:
    async def noop(self):
        return None
    async def pid(self):
        return os.getpid()
"""


def process_role(pid, cmdline):
    """What a process is to Ray: driver (this process), raylet, gcs, workers (task and
    actor workers, titled `ray::`), starting_workers (default_worker.py not yet titled),
    other (the dashboard and runtime-env agents, the monitors), or None (not Ray's)."""
    if pid == os.getpid():
        return "driver"
    exe = cmdline.split(" ")[0]
    if "raylet" in exe:
        return "raylet"
    if "gcs_server" in exe:
        return "gcs"
    if cmdline.startswith(("ray::DashboardAgent", "ray::RuntimeEnvAgent")):
        return "other"
    if cmdline.startswith("ray::"):
        return "workers"
    if "default_worker.py" in cmdline:
        return "starting_workers"
    return "other" if "ray" in cmdline else None


def ray_processes():
    """(role, the fields of /proc/PID/stat after the command's name, PID) of each of
    this user's Ray processes (`process_role`)."""
    for pid, cmdline, fields in user_processes():
        role = process_role(pid, cmdline)
        if role is not None:
            yield role, fields, pid


def worker_processes():
    """(PID, command line, the fields of /proc/PID/stat after the command's name) of each
    of this user's Ray worker processes, up (titled `ray::`) or starting."""
    for pid, cmdline, fields in user_processes():
        if process_role(pid, cmdline) in ("workers", "starting_workers"):
            yield pid, cmdline, fields


def user_processes():
    """(PID, command line, the fields of /proc/PID/stat after the command's name) of each
    of this user's processes."""
    uid = os.getuid()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(name), cmdline, fields


def cpu_by_role():
    """{role: CPU seconds so far (user + system)} over this user's Ray processes."""
    out = {}
    for role, fields, _ in ray_processes():
        out[role] = out.get(role, 0.0) + stat_cpu(fields)
    return out


def with_medians(row, ways):
    """`row` with each way's `{way}_seconds` (the median of its samples) and the samples
    themselves (`ways`: {way: [seconds, ...]})."""
    for way, xs in ways.items():
        row[f"{way}_seconds"] = median(xs)
    row["samples"] = ways
    return row


def run_probe(description, make_rows, summary, max_load=None):
    """A probe's whole `main()`: its `--out` argument, the time and the load as it began
    (after waiting up to 2 minutes for a 1-minute load below `max_load`, if given), its
    rows (`make_rows()`), one line each on stdout (`summary(row)`), then the record
    (`write_probe`)."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    load_before = wait_quiet(max_load, 120) if max_load is not None else os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rows = make_rows()
    for r in rows:
        print(json.dumps(summary(r)))
    write_probe(args.out, started, load_before, rows)


def fresh_process_row(program, *args, timeout=300):
    """Run `program` (Python source) with `args` in a new Python process, in this folder
    (so it can import the probes), and return the last line it printed that is a JSON
    object, parsed."""
    out = subprocess.run([sys.executable, "-c", program, *map(str, args)], cwd=os.path.dirname(os.path.abspath(__file__)),
                         capture_output=True, text=True, timeout=timeout, check=True)
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def run_program_probe(description, program, runs=3, ways=((),), numbered="run"):
    """A probe's whole `main()` where each run is `program` (Python source that prints
    one JSON row as its last line) in a fresh process of its own on a fresh Ray: its
    `--out` and `--runs` arguments, a wait for a quiet machine, the runs (each after
    `ray stop`, each row printed and numbered under `numbered`), then the record
    (`write_probe`). With `ways`, each run is a round of the program once for each way,
    in turn, given the way's items as its arguments."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=runs)
    args = ap.parse_args()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = wait_quiet(1.0, 120)
    rows = []
    for run in range(args.runs):
        for way in ways:
            ray_stop()
            row = fresh_process_row(program, *way)
            row[numbered] = run
            rows.append(row)
            print(json.dumps(row), flush=True)
    ray_stop()
    write_probe(args.out, started, list(load_before), rows)


def in_ms(row):
    """A probe's row for the eye: its `*_seconds` figures in ms, its samples left out."""
    return {k: (round(v * 1e3, 3) if k.endswith("seconds") else v) for k, v in row.items() if k != "samples"}


def local_cluster(cpus, **extra):
    import ray

    ray.init(address="local", num_cpus=cpus, include_dashboard=False, logging_level="ERROR", **extra)
    return ray


def warm_noop_cluster(cpus, warm=1000):
    """A fresh local cluster of `cpus` CPUs and a 1-CPU no-op task (`noop_tasks`'
    body), after `warm` of them run untimed: where the growth probes start."""
    ray = local_cluster(cpus)

    @ray.remote(num_cpus=1)
    def noop():
        return None

    ray.get([noop.remote() for _ in range(warm)])
    return ray, noop


def timed_noops(ray, noop, n, window=None):
    """Run `n` of `noop` as the suite's `noop_tasks` body does (submit all, then get all),
    or `window` at a time (submit, get, again); their seconds, the submit loops' seconds
    and ms a task."""
    window = window or n
    submit = 0.0
    t0 = time.perf_counter()
    done = 0
    while done < n:
        k = min(window, n - done)
        submit += timed_batch(ray, noop.remote, k)[1]
        done += k
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "submit_seconds": submit, "ms_per_task": seconds * 1000 / n}


def timed_batch(ray, call, n):
    """`n` of `call()` submitted in one loop, then one `ray.get` of them all: (the batch's
    seconds, its submit loop's)."""
    t0 = time.perf_counter()
    refs = [call() for _ in range(n)]
    t1 = time.perf_counter()
    ray.get(refs)
    t2 = time.perf_counter()
    del refs
    return t2 - t0, t1 - t0


def two_nodes(head_cpus, worker_cpus, store=200 * 1024 * 1024):
    """A head and a worker node in this process's view (ray.cluster_utils.Cluster)."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": head_cpus,
            "resources": {"head": 1},
            "object_store_memory": store,
            "include_dashboard": False,
        },
    )
    worker = cluster.add_node(num_cpus=worker_cpus, resources={"worker": 1}, object_store_memory=store)
    ray.init(address=cluster.address, logging_level="ERROR")
    cluster.wait_for_nodes()
    return ray, cluster, worker


# ------------------------------------------------------------------ workloads


def noop_tasks(p):
    ray = local_cluster(p["cpus"])

    @ray.remote(num_cpus=1)
    def noop():
        return None

    total, submitted = timed_batch(ray, noop.remote, p["tasks"])
    return {"seconds": total, "submit_seconds": submitted, "tasks_per_second": p["tasks"] / total}


def actor_creation(p):
    ray = local_cluster(4)

    @ray.remote
    class Pinger:
        def ping(self):
            return 1

    opts = {} if p["num_cpus"] == "default" else {"num_cpus": float(p["num_cpus"])}
    t0 = time.perf_counter()
    actors = [Pinger.options(**opts).remote() for _ in range(p["actors"])]
    ray.get([a.ping.remote() for a in actors])
    total = time.perf_counter() - t0
    # The raylet's GC rounds (gc_rounds.py) vary from run to run and account for much of
    # default actors' spread: each run says how many it got, and to how many workers.
    return {"seconds": total, "actors_per_second": p["actors"] / total, "gc_rounds": raylet_gc_rounds(ray)}


def raylet_gc_rounds(ray):
    """The workers each GC round the raylet sent so far reached, in order."""
    return [workers for _, workers in raylet_gc_requests(ray)]


def raylet_gc_requests(ray):
    """(when, in Unix seconds, how many workers) of each GC round the raylet sent so far
    ("Sending Python GC request" lines in raylet.out), in order."""
    logs = ray._private.worker._global_node.get_logs_dir_path()
    rounds = []
    with open(os.path.join(logs, "raylet.out"), errors="replace") as f:
        for line in f:
            m = re.search(r"Sending Python GC request to (\d+) local workers", line)
            if m:
                rounds.append((log_time(line), int(m.group(1))))
    return rounds


def log_time(line):
    """A Ray log line's own time, in Unix seconds ("[2026-11-30 05:40:42,320 I ...")."""
    return datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def actor_calls(p):
    ray = local_cluster(4)

    @ray.remote
    class Sync:
        def noop(self):
            return None

    @ray.remote
    class Async:
        async def noop(self):
            return None

    actor = (Sync if p["mode"] == "sync" else Async).remote()
    ray.get(actor.noop.remote())  # the worker is up: calls only from here
    t0 = time.perf_counter()
    ray.get([actor.noop.remote() for _ in range(p["calls"])])
    total = time.perf_counter() - t0
    return {"seconds": total, "calls_per_second": p["calls"] / total}


def object_local(p, repeat=21):
    # Every object is kept until the end: a put right after the last object was dropped
    # waits on that release and costs 2-5 times a put into a quiet store
    # (put_release.py), so the figure is the put itself, into a store with room for all.
    ray = local_cluster(2, object_store_memory=3 * 1024 * 1024 * 1024)
    data = b"\x01" * p["size"]
    # The first put maps the store's memory (about 60 ms, whatever the size): not timed.
    held = [ray.put(data)]
    ray.get(held[0])
    puts, gets = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ref = ray.put(data)
        t1 = time.perf_counter()
        out = ray.get(ref)
        t2 = time.perf_counter()
        assert len(out) == p["size"]
        puts.append(t1 - t0)
        gets.append(t2 - t1)
        held.append(ref)
        del out
    return {"put_seconds": sorted(puts)[repeat // 2], "get_seconds": sorted(gets)[repeat // 2], "samples": {"put": puts, "get": gets}}


def object_transfer(p, repeat=21):
    ray, cluster, _ = two_nodes(1, 1, store=512 * 1024 * 1024)

    @ray.remote(num_cpus=0, resources={"worker": 0.01})
    def size_of(x):
        return len(x)

    ray.get(size_of.remote(b"\x01"))  # the remote worker is up
    baseline, moved = [], []
    for _ in range(repeat):
        small = ray.put(b"\x01")
        t0 = time.perf_counter()
        ray.get(size_of.remote(small))
        baseline.append(time.perf_counter() - t0)
        big = ray.put(b"\x01" * p["size"])
        t0 = time.perf_counter()
        assert ray.get(size_of.remote(big)) == p["size"]
        moved.append(time.perf_counter() - t0)
        del big, small
    transfer = max(median(moved) - median(baseline), 0.0)
    out = {
        "call_seconds": median(moved),
        "small_call_seconds": median(baseline),
        "transfer_seconds": transfer,
        "bytes_per_second": p["size"] / transfer if transfer > 0 else None,
        "samples": {"call": moved, "small_call": baseline},
    }
    ray.shutdown()
    cluster.shutdown()
    return out


def task_retries(p, repeat=9):
    ray = local_cluster(2, _system_config={"core_worker_internal_heartbeat_ms": p["heartbeat_ms"]})

    @ray.remote(max_retries=p["retries"], retry_exceptions=True)
    def fail(really):
        if really:
            raise ValueError("calibration: always fails")
        return None

    # Workers up and the function loaded on them: the figure is the failures alone.
    ray.get([fail.remote(False) for _ in range(2)])
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            ray.get(fail.remote(True))
            raise AssertionError("the failing task returned")
        except ray.exceptions.RayTaskError:
            pass
        samples.append(time.perf_counter() - t0)
    return {"seconds": sorted(samples)[repeat // 2], "samples": samples}


def actor_restart(p, repeat=3):
    ray = local_cluster(2)

    @ray.remote(max_restarts=-1, max_task_retries=-1)
    class Phoenix:
        def ping(self):
            return os.getpid()

        def die(self):
            os._exit(1)

    actor = Phoenix.remote()
    samples = []
    for _ in range(repeat):
        before = ray.get(actor.ping.remote())
        t0 = time.perf_counter()
        actor.die.options(max_task_retries=0).remote()
        # The ping waits for the restart (max_task_retries=-1) and answers from the new process.
        deadline = t0 + 120
        while True:
            after = ray.get(actor.ping.remote(), timeout=120)
            if after != before:
                break
            if time.perf_counter() > deadline:
                raise TimeoutError("the actor never restarted")
        samples.append(time.perf_counter() - t0)
    return {"seconds": sorted(samples)[repeat // 2], "samples": samples}


def registered_at(session_dir, node_id, deadline_s=10):
    """When the GCS registered a node (wall clock, from its log: "Registering new node")."""
    import datetime

    log = os.path.join(session_dir, "logs", "gcs_server.out")
    end = time.time() + deadline_s
    while time.time() < end:
        with open(log) as f:
            for line in f:
                if "Registering new node" in line and f"node_id={node_id}" in line:
                    stamp = line[1:24]  # "[2026-11-27 00:48:42,107 I 3084 3091] ..."
                    local = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
                    return local.timestamp()
        time.sleep(0.05)
    raise TimeoutError(f"the GCS log never showed node {node_id} registering")


def node_death(p, repeat=3):
    import ray
    from ray.cluster_utils import Cluster

    checks = {
        "health_check_period_ms": p["period_ms"],
        "health_check_failure_threshold": p["threshold"],
    }
    samples, lateness = [], []
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "_system_config": checks},
    )
    ray.init(address=cluster.address, logging_level="ERROR")
    session_dir = cluster.head_node.get_session_dir_path()
    for _ in range(repeat):
        node = cluster.add_node(num_cpus=1, object_store_memory=100 * 1024 * 1024)
        cluster.wait_for_nodes()
        node_id = node.node_id
        # The GCS's health checks tick from a node's registration: kill it a fixed time
        # after that (a parameter), so the model can kill its node at the same point.
        kill_at = registered_at(session_dir, node_id) + p["kill_after_ms"] / 1000
        if time.time() > kill_at:
            raise RuntimeError(f"the node was older than {p['kill_after_ms']} ms before it could be killed")
        time.sleep(kill_at - time.time())
        lateness.append(time.time() - kill_at)
        t0 = time.perf_counter()
        cluster.remove_node(node, allow_graceful=False)
        deadline = t0 + 180
        while True:
            alive = {n["NodeID"]: n["Alive"] for n in ray.nodes()}
            if alive.get(node_id) is False:
                break
            if time.perf_counter() > deadline:
                raise TimeoutError("the GCS never marked the node dead")
            time.sleep(0.05)
        samples.append(time.perf_counter() - t0)
    ray.shutdown()
    cluster.shutdown()
    return {"seconds": sorted(samples)[repeat // 2], "samples": samples, "kill_lateness_seconds": lateness}


def wait_for_cpus_back(ray, total_cpus, deadline_s=30):
    """Wait until the cluster has `total_cpus` available again. Removing a placement
    group returns its bundles' CPUs asynchronously: a group created before they are back
    waits for them (about a second), which is the release, not the creation."""
    deadline = time.time() + deadline_s
    while ray.available_resources().get("CPU", 0) < total_cpus:
        if time.time() > deadline:
            raise TimeoutError("the removed group's CPUs never came back")
        time.sleep(0.01)


def placement_group(p):
    ray, cluster, _ = two_nodes(2, 2)
    from ray.util.placement_group import placement_group as make_group, remove_placement_group

    total_cpus = ray.cluster_resources()["CPU"]
    samples = []
    for _ in range(p["groups"]):
        t0 = time.perf_counter()
        pg = make_group([{"CPU": 1}, {"CPU": 1}], strategy=p["strategy"])
        ray.get(pg.ready(), timeout=120)
        samples.append(time.perf_counter() - t0)
        remove_placement_group(pg)
        wait_for_cpus_back(ray, total_cpus)
    ray.shutdown()
    cluster.shutdown()
    return {"seconds_per_group": sorted(samples)[len(samples) // 2], "samples": samples}


def spillback(p):
    ray, cluster, _ = two_nodes(p["cpus"], p["cpus"])

    @ray.remote(num_cpus=1)
    def where(seconds):
        time.sleep(seconds)
        return ray.get_runtime_context().get_node_id()

    ray.get([where.remote(0) for _ in range(2 * p["cpus"])])  # workers up on both nodes
    head = ray.get_runtime_context().get_node_id()
    t0 = time.perf_counter()
    nodes = ray.get([where.remote(p["sleep"]) for _ in range(p["tasks"])])
    total = time.perf_counter() - t0
    ray.shutdown()
    cluster.shutdown()
    remote = sum(1 for n in nodes if n != head)
    return {"seconds": total, "tasks_on_worker_node": remote, "tasks_on_head": p["tasks"] - remote}


WORKLOADS = {
    "noop_tasks": (noop_tasks, {"tasks": int, "cpus": int}),
    "actor_creation": (actor_creation, {"actors": int, "num_cpus": str}),
    "actor_calls": (actor_calls, {"calls": int, "mode": str}),
    "object_local": (object_local, {"size": int}),
    "object_transfer": (object_transfer, {"size": int}),
    "task_retries": (task_retries, {"retries": int, "heartbeat_ms": int}),
    "actor_restart": (actor_restart, {}),
    "node_death": (node_death, {"period_ms": int, "threshold": int, "kill_after_ms": int}),
    "placement_group": (placement_group, {"groups": int, "strategy": str}),
    "spillback": (spillback, {"cpus": int, "tasks": int, "sleep": float}),
}


def run_name(workload, params):
    parts = [workload] + [f"{k}{v}" for k, v in sorted(params.items())]
    return "-".join(parts)


def wait_quiet(max_load, deadline_s, minutes=1):
    """Wait (up to a deadline) for the load average over `minutes` (1, 5 or 15) to fall
    below max_load."""
    which = {1: 0, 5: 1, 15: 2}[minutes]
    end = time.time() + deadline_s
    while os.getloadavg()[which] > max_load and time.time() < end:
        time.sleep(2)
    return os.getloadavg()


def run_one(workload, params, out_dir, max_load, quiet_deadline):
    import ray

    fn, _ = WORKLOADS[workload]
    ray_stop()
    load_before = wait_quiet(max_load, quiet_deadline)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t0 = time.perf_counter()
    result = fn(params)
    wall = time.perf_counter() - t0
    if ray.is_initialized():
        ray.shutdown()
    ray_stop()
    record = {
        "workload": workload,
        "params": params,
        "result": result,
        "ray_version": ray.__version__,
        "machine": machine(),
        "measured_at": started,
        "run_wall_seconds": wall,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "command": " ".join(["python", "suite.py", "run", workload] + [f"--{k.replace('_', '-')} {v}" for k, v in params.items()]),
    }
    os.makedirs(out_dir, exist_ok=True)
    stamp = started.replace("-", "").replace(":", "")
    path = os.path.join(out_dir, f"{run_name(workload, params)}-{stamp}.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    print(json.dumps({"workload": workload, "params": params, "result": {k: v for k, v in result.items() if k != "samples"}, "load_before": load_before[0]}), flush=True)
    return path


def refuse_another_cpu(out_dir, who="suite", prefix="", option="--out-dir"):
    """Figures from another CPU are not comparable (on an AMD EPYC VM of the same size,
    runs/epyc/, 10,000 no-op tasks on 2 CPUs took 4.55 s against this Intel Xeon VM's 5.79 s),
    and `rayscope fidelity` refuses a folder that mixes them: stop (as `who`) before
    recording beside the runs in `out_dir` (those whose file names start with `prefix`)
    from another CPU. A run names its CPU under `machine` (the suite's) or at its top
    (a seed tree's). Another CPU's runs go in a folder of their own (`option`)."""
    here = cpu_model()
    recorded = set()
    for name in sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []:
        if not (name.startswith(prefix) and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(out_dir, name)) as f:
                run = json.load(f)
            recorded.add(run["machine"]["cpu_model"] if "machine" in run else run.get("cpu_model"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    others = sorted(m for m in recorded if m and m != here)
    if others:
        sys.exit(f"{who}: this machine's CPU ({here}) is not the one the runs in {out_dir} were recorded on "
                 f"({', '.join(others)}); their figures are not comparable: record elsewhere with {option}")


# A report row measured from another workload's runs: its runs are that workload's.
ROW_OF_RUN = {"noop_submit": "noop_tasks", "object_get": "object_local"}


def noisy_rows(report, spread, runs):
    """The suite runs that the report's rows need more of: every row whose runs' range
    (highest less lowest, against the median) is wider than `spread` and that has fewer
    than `runs` runs, as (workload, params, runs to add). The rule looks only at how far
    Ray disagrees with itself, never at the model's error, so a row gets no more chances
    for being outside its bound. A run two rows share (a no-op run gives the task row and
    the submit row) is added once, for the row that needs most."""
    need = {}
    for row in report:
        if row.get("real_low") is None or not row.get("real"):
            continue
        if (row["real_high"] - row["real_low"]) / row["real"] <= spread or row["runs"] >= runs:
            continue
        workload = ROW_OF_RUN.get(row["workload"], row["workload"])
        _, kinds = WORKLOADS[workload]
        params = {}
        for pair in row["params"].split():
            name, value = pair.split("=", 1)
            params[name] = kinds[name](value)
        key = run_name(workload, params)
        if key not in need or need[key][2] < runs - row["runs"]:
            need[key] = (workload, params, runs - row["runs"])
    return sorted(need.values(), key=lambda w: MATRIX.index((w[0], w[1])))


def run_in_child(args, workload, params):
    """One run in its own process (as `all` makes them); whether it succeeded."""
    cmd = [sys.executable, os.path.abspath(__file__), "--out-dir", args.out_dir, "--max-load", str(args.max_load),
           "--quiet-deadline", str(args.quiet_deadline), "run", workload]
    for k, v in params.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    return subprocess.run(cmd, check=False).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=RUNS, help="where runs are recorded (default: runs/suite/)")
    ap.add_argument("--max-load", type=float, default=1.0, help="wait for the 1-minute load average to fall below this first")
    ap.add_argument("--quiet-deadline", type=float, default=300, help="seconds to wait for a quiet machine before running anyway")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the workloads and the matrix `all` runs")
    one = sub.add_parser("run", help="run one workload")
    one.add_argument("workload", choices=sorted(WORKLOADS))
    for name in sorted({k for _, (_, ps) in WORKLOADS.items() for k in ps}):
        one.add_argument(f"--{name.replace('_', '-')}", dest=name)
    every = sub.add_parser("all", help="run the matrix, each run in its own process")
    every.add_argument("--only", action="append", help="only these workloads (repeatable)")
    more = sub.add_parser("top-up", help="more runs of the rows whose runs disagree most, in rounds")
    more.add_argument("--report", default=os.path.join(HERE, "..", "..", "docs", "fidelity.json"),
                      help="the fidelity report's JSON whose rows are read (default: docs/fidelity.json)")
    more.add_argument("--spread", type=float, default=0.2,
                      help="a row whose runs' range is wider than this share of its median gets more runs")
    more.add_argument("--runs", type=int, default=12, help="until it has this many")
    more.add_argument("--dry-run", action="store_true", help="say what would run, run nothing")
    args = ap.parse_args()

    if args.cmd == "list":
        for workload, params in MATRIX:
            print(run_name(workload, params))
        return
    if args.cmd == "run":
        refuse_another_cpu(args.out_dir)
        _, kinds = WORKLOADS[args.workload]
        params = {}
        for name, kind in kinds.items():
            value = getattr(args, name)
            if value is None:
                ap.error(f"{args.workload} needs --{name.replace('_', '-')}")
            params[name] = kind(value)
        run_one(args.workload, params, args.out_dir, args.max_load, args.quiet_deadline)
        return
    if args.cmd == "top-up":
        try:
            with open(args.report) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"suite: cannot read the report {args.report}: {e}")
        wanted = noisy_rows(report, args.spread, args.runs)
        for workload, params, more_runs in wanted:
            print(f"{run_name(workload, params)}: {more_runs} more", flush=True)
        if args.dry_run:
            return
        refuse_another_cpu(args.out_dir)
        # Rounds, each row once a round, so the hour's speed falls on every row alike.
        failed = []
        for round_no in range(max((m for _, _, m in wanted), default=0)):
            for workload, params, more_runs in wanted:
                if round_no < more_runs and not run_in_child(args, workload, params):
                    failed.append(run_name(workload, params))
                    ray_stop()
        if failed:
            sys.exit("suite: these runs failed: " + ", ".join(failed))
        return
    refuse_another_cpu(args.out_dir)
    failed = []
    for workload, params in MATRIX:
        if args.only and workload not in args.only:
            continue
        if not run_in_child(args, workload, params):
            failed.append(run_name(workload, params))
            ray_stop()
    if failed:
        sys.exit("suite: these runs failed: " + ", ".join(failed))


if __name__ == "__main__":
    main()
