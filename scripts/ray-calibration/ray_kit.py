#!/usr/bin/env python3
"""What the calibration suite and its probes share, and nothing of any one workload: the
machine a figure is measured on (and the guard that keeps one CPU's runs apart from
another's), a quiet machine before a run, Ray's processes and the CPU each has burned,
fresh local clusters of one or two nodes, timed batches of calls, the raylet's GC rounds
from its log, and the `main()` a probe is made of (its arguments, its rows, its record).

suite.py holds the workloads and runs them; each probe (`*.py` beside it) imports what it
needs from here.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ray-common"))
from driven import cpu_model  # noqa: E402,F401  (re-exported to the probes)


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


def wait_for_cpus_back(ray, total_cpus, deadline_s=30):
    """Wait until the cluster has `total_cpus` available again. Removing a placement
    group returns its bundles' CPUs asynchronously: a group created before they are back
    waits for them (about a second), which is the release, not the creation."""
    deadline = time.time() + deadline_s
    while ray.available_resources().get("CPU", 0) < total_cpus:
        if time.time() > deadline:
            raise TimeoutError("the removed group's CPUs never came back")
        time.sleep(0.01)


def wait_quiet(max_load, deadline_s, minutes=1):
    """Wait (up to a deadline) for the load average over `minutes` (1, 5 or 15) to fall
    below max_load."""
    which = {1: 0, 5: 1, 15: 2}[minutes]
    end = time.time() + deadline_s
    while os.getloadavg()[which] > max_load and time.time() < end:
        time.sleep(2)
    return os.getloadavg()


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
