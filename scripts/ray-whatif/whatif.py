#!/usr/bin/env python3
"""What-ifs on a recorded job, proven on real Ray: record a program on one cluster shape
with `rayscope observe --record`, read that cluster's costs from the trace
(`rayscope calibrate --trace`), predict the other shapes with `rayscope simulate
--replay`, then run the same program on those shapes on real Ray, several runs each.

    python whatif.py --rayscope BIN --work DIR --out FILE
                     [--programs sleep_reduce,actor_tree,mixed] [--shapes head1,head6,two_nodes]
                     [--runs 3] [--record-shape head2] [--keep-traces runs/traces/SERIES]
    python whatif.py --merge PART.json... --out FILE   (one record of several, programs in order)
    python whatif.py --repredict RECORD.json --rayscope BIN --work DIR... --out FILE [--skip-missing]
        (the model's figures again from the traces kept in each series' DIR, Ray's runs
        as recorded: after a change to calibrate or the model, without running Ray again;
        a merged record takes one DIR per series, each program finding its recording by
        the Ray session named in the record, and the model told the cores of the machine
        the series ran on; --skip-missing keeps the figures of a program with none kept)

The long series runs a program at a time (a few minutes of Ray each), then merges.

Every run, the recording included, is its cluster's first driver on a fresh cluster (the
idle workers each node had as it began are kept as `idle_workers_at_start`), begun once
the machine is quiet (its cores under 0.3 busy for a second: a new cluster's agents boot
for seconds after its nodes register), watched by
`rayscope observe` (so every run bears the same observer's load), with the
program lingering 2.5 s before it disconnects (as the recording needs; see
programs.py). A run's makespan is the job's start to end as Ray's Jobs API lists it:
what an observer records, and what a replay's makespan is of.

Shapes (one machine; each node of its own loopback address):
  head1      a head of 1 logical CPU
  head2      a head of 2 logical CPUs (the recording's by default)
  head6      a head of 6 logical CPUs
  two_nodes  a head of 2 logical CPUs and a second node of 2 at 127.0.0.2

The model is told the machine's physical cores (this machine's count) for every node,
as a user's config would say it. Writes FILE: one JSON object, per program the
recording (job, makespan, `calibrate`'s costs and figures), the same shape's replay
against the recorded job, and per shape the prediction and band, Ray's runs, median,
range and error. Holds /tmp/real-ray.lock (one real Ray on the machine at a time).
"""
import argparse
import gzip
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ray-common"))
from driven import cpu_model, hold_real_ray  # noqa: E402
from ports import free_port  # noqa: E402

LINGER_S = "2.5"
# A cluster is settled once the machine uses under this many cores over a whole window
# (a settled head, no job, used 0.0 to 0.16 of the machine's cores in half seconds; its
# agents' boot, over one).
QUIET_CORES = 0.3
QUIET_WINDOW_S = 1.0
QUIET_DEADLINE_S = 30
STORE = 200 * 1024 * 1024
SHAPES = {
    "head1": {"head": 1, "nodes": []},
    "head2": {"head": 2, "nodes": []},
    "head6": {"head": 6, "nodes": []},
    "two_nodes": {"head": 2, "nodes": [("127.0.0.2", 2)]},
}
# What a shape changes, in the words of the report's bands.
CHANGE = {"head1": "fewer CPUs", "head2": "CPUs", "head6": "more CPUs", "two_nodes": "a second node"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class GaveUp(RuntimeError):
    """A probe's failure that waiting longer cannot mend."""


def serving_address(process, log_path):
    """The address a `rayscope observe --listen 127.0.0.1:0 --log-format json` serves on,
    from its log; None until it says. The port is the kernel's pick at bind time: one
    chosen beforehand can be taken meanwhile by any of the cluster's own servers, which
    then answer our probes in gRPC."""
    if process.poll() is not None:
        with open(log_path) as f:
            raise GaveUp(f"rayscope observe exited ({process.returncode}): {f.read()[-2000:]}")
    with open(log_path) as f:
        for line in f:
            try:
                fields = json.loads(line).get("fields", {})
            except ValueError:
                continue
            if fields.get("message") == "serving":
                return fields["address"]
    return None


def get_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def wait(what, deadline_s, probe):
    deadline = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < deadline:
        try:
            got = probe()
            if got:
                return got
        except GaveUp:
            raise
        except Exception as e:  # noqa: BLE001 (not up yet)
            last = e
        time.sleep(0.2)
    raise RuntimeError(f"{what}: not within {deadline_s} s ({last})")


def cores_busy():
    """(busy, total) jiffies of the whole machine since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle and iowait
    return sum(ticks) - idle, sum(ticks)


def wait_until_quiet(deadline_s=QUIET_DEADLINE_S):
    """Wait until the machine uses less than QUIET_CORES of its cores over a whole
    QUIET_WINDOW_S. A new cluster's agents (the dashboard's, the runtime env's) can boot
    for seconds after its nodes register: in one run the dashboard agent was a second old
    and used three quarters of a core as the driver began. A job begun beside that boot
    shares the cores with however much of it is left, which no recording or replay knows
    of. Returns the seconds waited; on a machine busy with other work, the deadline's,
    logged, and the run goes on."""
    begun = time.monotonic()
    busy, total = cores_busy()
    used = 0.0
    while time.monotonic() - begun < deadline_s:
        time.sleep(QUIET_WINDOW_S)
        busy2, total2 = cores_busy()
        used = (busy2 - busy) / max(1, total2 - total) * (os.cpu_count() or 1)
        if used < QUIET_CORES:
            return time.monotonic() - begun
        busy, total = busy2, total2
    log(f"  the machine was still using {used:.2f} cores after {deadline_s} s: running anyway")
    return deadline_s


def start_cluster(shape, temp_dir, dashboard_port):
    from ray.cluster_utils import Cluster

    s = SHAPES[shape]
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": s["head"],
            "temp_dir": temp_dir,
            "dashboard_port": dashboard_port,
            "dashboard_host": "127.0.0.1",
            "include_dashboard": True,
            "object_store_memory": STORE,
        },
    )
    for ip, cpus in s["nodes"]:
        cluster.add_node(num_cpus=cpus, node_ip_address=ip, object_store_memory=STORE)
    cluster.wait_for_nodes()
    nodes = [cluster.head_node, *cluster.worker_nodes]
    # Kept with the run, not waited for: Ray 2.60 starts a node's prestarted workers for
    # the first driver, not before it (a 30 s wait for them saw none on any node), and on
    # a loaded 2-core VM the workers for a job's first calls came 0.3 to 3 s into it,
    # where the model's are up at its start (`scheduler.prestart_worker_first_driver`).
    cluster.idle_at_start = [idle_workers(n) for n in nodes]
    return cluster


def idle_workers(node):
    """Idle task workers under a node's raylet: its children named `ray::IDLE`."""
    from ray._private import ray_constants

    raylet = node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
    children = []
    try:
        for tid in os.listdir(f"/proc/{raylet}/task"):
            with open(f"/proc/{raylet}/task/{tid}/children") as f:
                children += f.read().split()
    except OSError:
        return 0
    idle = 0
    for pid in children:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                idle += f.read().startswith(b"ray::IDLE")
        except OSError:
            pass
    return idle


def model_config(shape, cores, path):
    s = SHAPES[shape]
    lines = ["cluster:", "  host_node: false",
             f"  head: {{cpu: {s['head']}, cores: {cores}, memory: 8GiB, object_store_memory: 200MiB}}"]
    if s["nodes"]:
        lines.append("  node_types:")
        for i, (ip, cpus) in enumerate(s["nodes"]):
            # Every node here is a raylet on this one machine: it shares the head's cores.
            lines.append(f"    - {{name: node{i}, count: 1, cpu: {cpus}, on_head_machine: true, memory: 8GiB, "
                         f"object_store_memory: 200MiB, ip_range: {ip}-{ip}}}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def one_run(args, program, shape, run_dir, record):
    """A fresh cluster of `shape`, `rayscope observe` watching it, the program as its
    first driver: (job id, the Jobs API's makespan in s, the trace dir)."""
    os.makedirs(run_dir, exist_ok=True)
    dashboard = free_port()
    trace = os.path.join(run_dir, "trace")
    # Ray's socket paths must fit 107 bytes: its temp files go in a short dir of their own.
    ray_temp = tempfile.mkdtemp(prefix="rw-", dir="/tmp")
    cluster = start_cluster(shape, ray_temp, dashboard)
    observer = None
    try:
        cmd = [args.rayscope, "observe", "--ray", f"http://127.0.0.1:{dashboard}",
               "--listen", "127.0.0.1:0", "--log-format", "json", "--poll-every", "500ms"]
        if record:
            cmd += ["--record", trace]
        observer_log = os.path.join(run_dir, "observe.log")
        observer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(observer_log, "w"))
        base = f"http://{wait('rayscope observe serves', 90, lambda: serving_address(observer, observer_log))}"
        wait("rayscope observe answers", 90, lambda: get_json(f"{base}/api/observe"))
        settled_s = wait_until_quiet()
        argv = [sys.executable, os.path.join(HERE, "programs.py"), program, "--address", cluster.address,
                "--linger-s", LINGER_S]
        if args.object_mb:
            argv += ["--object-mb", str(args.object_mb)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"{program} on {shape}: {done.stderr[-2000:]}")
        job = json.loads(done.stdout.strip().splitlines()[-1])["job_id"]

        def ended():
            j = next((j for j in get_json(f"http://127.0.0.1:{dashboard}/api/jobs/") if j.get("job_id") == job), None)
            return j if j and j.get("end_time") else None

        j = wait(f"job {job} ended in Ray's Jobs API", 60, ended)
        makespan = (j["end_time"] - j["start_time"]) / 1e3
        if record:
            # Ray's last task events land after the job's end, under load seconds after:
            # the trace is final once the observer read the ended job's tasks until
            # they stopped changing.
            def settled():
                jobs = get_json(f"{base}/api/flow/jobs")["jobs"]
                return any(x["job_id"] == job and (x.get("observed") or {}).get("settled") is True for x in jobs)
            wait(f"the observer settled job {job}'s record", 120, settled)
        log(f"  {program} on {shape}: the cluster settled in {settled_s:.1f} s; idle workers per node at the "
            f"start {cluster.idle_at_start}")
        return job, makespan, trace, cluster.idle_at_start
    finally:
        if observer:
            observer.send_signal(signal.SIGTERM)
            try:
                observer.wait(30)
            except subprocess.TimeoutExpired:
                observer.kill()
        cluster.shutdown()
        shutil.rmtree(ray_temp, ignore_errors=True)


def rayscope_json(args, argv, summary_on="stdout"):
    done = subprocess.run([args.rayscope, *argv], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"rayscope {' '.join(argv)}: {done.stderr[-2000:]}")
    return done.stderr if summary_on == "stderr" else done.stdout


def replay(args, shape, trace, job, work, cores=None):
    """The model's makespan of the recorded job on `shape`, on a machine of `cores`
    physical cores (this machine's by default; a repredict gives the series' own)."""
    cfg = model_config(shape, cores or os.cpu_count(), os.path.join(work, f"{shape}.yaml"))
    out = json.loads(rayscope_json(args, ["simulate", "--config", cfg, "--replay", trace, "--job", job,
                                          "--report", "json"]))
    j = out["jobs"][0]
    return {"makespan_s": j["makespan"], "prediction": out.get("prediction")}


def figures(said):
    """`rayscope calibrate`'s figures, from its summary: each line between its first and
    the list of costs it could not determine. A line indented under a figure (a function's
    CPU share under "bodies' CPU") belongs to that figure."""
    out = []
    for line in said.splitlines()[1:]:
        if not line.startswith("  ") or line.startswith("  not determined"):
            break
        if line.startswith("    ") and out:
            sep = " " if out[-1].endswith(":") else ", "
            out[-1] += sep + line.strip()
        else:
            out.append(line.strip())
    return out


def summary(runs, predicted):
    ordered = sorted(runs)
    med = statistics.median(ordered)
    return {"runs_s": [round(r, 3) for r in runs], "median_s": round(med, 3), "low_s": round(ordered[0], 3),
            "high_s": round(ordered[-1], 3), "model_s": round(predicted, 3),
            "error": round((predicted - med) / med, 4)}


def prove(args, program):
    work = os.path.join(args.work, program)
    os.makedirs(work, exist_ok=True)
    log(f"{program}: recording on {args.record_shape}")
    job, recorded, trace, idle = one_run(args, program, args.record_shape, os.path.join(work, "record"), record=True)
    costs = os.path.join(work, "costs.yaml")
    said = rayscope_json(args, ["calibrate", "--trace", trace, "--job", job, "--out", costs], summary_on="stderr")
    same = replay(args, args.record_shape, trace, job, work)
    result = {
        "program": program,
        "record_shape": args.record_shape,
        "job": job,
        "recorded_s": round(recorded, 3),
        "session": session_of(trace),
        "idle_workers_at_start": idle,
        "figures": figures(said),
        "same_shape": {"model_s": round(same["makespan_s"], 3),
                       "error": round((same["makespan_s"] - recorded) / recorded, 4)},
        "shapes": [],
    }
    log(f"{program}: recorded {recorded:.3f} s, same-shape replay {same['makespan_s']:.3f} s")
    for shape in args.shapes:
        predicted = replay(args, shape, trace, job, work)
        runs, idles = [], []
        for i in range(args.runs):
            _, m, _, idle = one_run(args, program, shape, os.path.join(work, f"{shape}-{i}"), record=True)
            idles.append(idle)
            log(f"{program} on {shape}: run {i + 1} {m:.3f} s (model {predicted['makespan_s']:.3f} s)")
            runs.append(m)
        row = {"shape": shape, "change": CHANGE[shape], **summary(runs, predicted["makespan_s"]),
               "idle_workers_at_start": idles}
        if predicted["prediction"] is not None:
            row["band"] = predicted["prediction"]
        result["shapes"].append(row)
    return result


def merge(parts, out):
    records = []
    for p in parts:
        with open(p) as f:
            records.append(json.load(f))
    first = records[0]
    for r in records[1:]:
        if r["ray"] != first["ray"]:
            raise SystemExit(f"--merge: ray differs between parts: {first['ray']} and {r['ray']}")
    programs = []
    for r in records:
        for p in r["programs"]:
            # A program recorded in several series keeps which one it came from, and,
            # where its series ran on another machine than the first part's, which.
            p = {**p, "series": p.get("series", r["started"])}
            machine = p.get("machine", r["machine"])
            if machine != first["machine"]:
                p["machine"] = machine
            programs.append(p)
    merged = {**first, "started": min(r["started"] for r in records),
              "runs_per_shape": max(r["runs_per_shape"] for r in records), "programs": programs}
    with open(out, "w") as f:
        json.dump(merged, f, indent=1)
        f.write("\n")


def session_of(trace):
    """The Ray session a recorded trace was made on (its first segment's header)."""
    first = sorted(f for f in os.listdir(trace) if f.endswith(".jsonl"))[0]
    with open(os.path.join(trace, first)) as f:
        return json.loads(f.readline()).get("session_name")


def recordings_of(program, works):
    """The work dirs of `works` that hold `program`'s recording: those made on the
    record's session, or every one there is when the record names none."""
    found = [w for w in works if os.path.isdir(os.path.join(w, program["program"], "record", "trace"))]
    wanted = program.get("session")
    if wanted:
        found = [w for w in found if session_of(os.path.join(w, program["program"], "record", "trace")) == wanted]
    return found


def recording_of(program, works):
    """The one work dir of `works` that holds `program`'s recording."""
    found = recordings_of(program, works)
    wanted = program.get("session")
    if len(found) != 1:
        where = ", ".join(works)
        which = f"made on Ray session {wanted}" if wanted else "(the record names no session: give one --work)"
        raise SystemExit(f"--repredict: {len(found)} recordings of {program['program']} {which} in {where}")
    return os.path.join(found[0], program["program"])


def keep_traces(work, kept, runs):
    """Copy a program's recording from its work dir to `kept` as it is (`--repredict`
    reads it there), and the trace of each of Ray's `runs` on the other shapes gzipped
    (SHAPE-I/trace/*.jsonl.gz: Ray's own timeline of each run, for a look beside the
    replay's; about a twentieth of the size). The observer's lock file is no part of a
    trace."""
    shutil.copytree(os.path.join(work, "record", "trace"), os.path.join(kept, "record", "trace"),
                    dirs_exist_ok=True, ignore=shutil.ignore_patterns(".lock"))
    for run in runs:
        src = os.path.join(work, run, "trace")
        if not os.path.isdir(src):
            continue
        dst = os.path.join(kept, run, "trace")
        os.makedirs(dst, exist_ok=True)
        for name in sorted(os.listdir(src)):
            if name.endswith(".jsonl"):
                with open(os.path.join(src, name), "rb") as f, gzip.open(os.path.join(dst, name + ".gz"), "wb") as g:
                    shutil.copyfileobj(f, g)


def repredict(args):
    with open(args.repredict) as f:
        record = json.load(f)
    # What the model is given is written apart from the recordings, which may be the
    # ones committed under runs/traces.
    scratch = tempfile.mkdtemp(prefix="whatif-repredict-")
    try:
        repredict_into(args, record, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    record["repredicted"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


def repredict_into(args, record, scratch):
    """Each program of `record` with a recording in `args.work` gets the model's figures
    again, the configs and costs it needs written under `scratch`."""
    for p in record["programs"]:
        if args.skip_missing and not recordings_of(p, args.work):
            log(f"--repredict: {p['program']} of session {p.get('session')}: no recording kept, its figures as recorded")
            continue
        work = recording_of(p, args.work)
        trace = os.path.join(work, "record", "trace")
        p["session"] = session_of(trace)
        out = os.path.join(scratch, p["session"])
        os.makedirs(out, exist_ok=True)
        # The series' machine, not this one: the model is told the cores Ray ran on.
        cores = p.get("machine", record["machine"])["cores"]
        said = rayscope_json(args, ["calibrate", "--trace", trace, "--job", p["job"], "--out",
                                    os.path.join(out, "costs.yaml")], summary_on="stderr")
        p["figures"] = figures(said)
        same = replay(args, p["record_shape"], trace, p["job"], out, cores)["makespan_s"]
        p["same_shape"] = {"model_s": round(same, 3), "error": round((same - p["recorded_s"]) / p["recorded_s"], 4)}
        for row in p["shapes"]:
            predicted = replay(args, row["shape"], trace, p["job"], out, cores)
            row.update(summary(row["runs_s"], predicted["makespan_s"]))
            row.pop("band", None)
            if predicted["prediction"] is not None:
                row["band"] = predicted["prediction"]


def main():
    if "--repredict" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--repredict", required=True)
        ap.add_argument("--rayscope", required=True)
        ap.add_argument("--work", required=True, nargs="+", help="each series' work dir")
        ap.add_argument("--out", required=True)
        ap.add_argument("--skip-missing", action="store_true",
                        help="a program whose recording is in no DIR keeps its figures as recorded")
        return repredict(ap.parse_args())
    if "--merge" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--merge", nargs="+", required=True)
        ap.add_argument("--out", required=True)
        args = ap.parse_args()
        return merge(args.merge, args.out)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rayscope", required=True)
    ap.add_argument("--work", required=True, help="traces, logs and Ray's temp files")
    ap.add_argument("--out", required=True)
    ap.add_argument("--programs", default="sleep_reduce,actor_tree,mixed")
    ap.add_argument("--shapes", default="head1,head6,two_nodes")
    ap.add_argument("--record-shape", default="head2", choices=sorted(SHAPES))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--object-mb", type=int, default=0, help="mixed: each producer's object, MB")
    ap.add_argument("--keep-traces", help="copy each program's recorded trace here, as DIR/PROGRAM/record/trace "
                    "(runs/traces/SERIES, committed beside the record, is what --repredict reads later), "
                    "and each of Ray's runs on the other shapes gzipped, as DIR/PROGRAM/SHAPE-I/trace")
    args = ap.parse_args()
    args.shapes = [s for s in args.shapes.split(",") if s]
    for s in args.shapes:
        if s not in SHAPES:
            raise SystemExit(f"--shapes: unknown shape {s} (known: {', '.join(sorted(SHAPES))})")
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    hold_real_ray(tempfile.mkdtemp(prefix="rw-", dir="/tmp"))
    import ray

    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results = [prove(args, p) for p in args.programs.split(",") if p]
    if args.keep_traces:
        for p in results:
            keep_traces(os.path.join(args.work, p["program"]), os.path.join(args.keep_traces, p["program"]),
                        [f"{row['shape']}-{i}" for row in p["shapes"] for i in range(len(row["runs_s"]))])
    record = {
        "ray": ray.__version__,
        "started": started,
        "machine": {"cores": os.cpu_count(), "cpu": cpu_model()},
        "runs_per_shape": args.runs,
        "programs": results,
    }
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
