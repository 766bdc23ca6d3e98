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
import subprocess
import sys
import time

from ray_kit import (
    local_cluster,
    machine,
    median,
    raylet_gc_rounds,
    ray_stop,
    refuse_another_cpu,
    timed_batch,
    two_nodes,
    wait_for_cpus_back,
    wait_quiet,
)

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
