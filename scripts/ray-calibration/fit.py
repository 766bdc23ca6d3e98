#!/usr/bin/env python3
"""Fit the model's cost defaults to the FIT set of recorded runs, and only to those:
every other recorded run stays a hold-out that `rayscope fidelity` checks.

A pattern search over the costs below: each is scaled up and down by a step, a change
kept when it lowers the sum of squared relative errors (each over its row's bound) over
the fit rows, the step halved when none does. The model is run through `rayscope fidelity --format json --set`
on a copy of the runs folder that holds the fit set's files only.

  python fit.py --rayscope ../../target/release/rayscope --out runs/fit.json
  python fit.py --start runs/fit.json --only scheduler.async_call_cost --out runs/fit.json

The search is local. With --restarts N it searches N more times, each from the start
scaled at random (each moving cost by a factor between 1 / (1 + --spread) and
1 + --spread, log-uniform, drawn with --seed), and keeps the lowest loss; the record
lists each restart's loss:

  python fit.py --start runs/fit.json --restarts 3 --seed 1 --out /tmp/fit-restarts.json

With --only, the search moves only the costs named; the others stay at --start's
values (a cost a workload's new mechanism adds is fitted without refitting the rest).

With --owner-ratio FILE (cpu_by_process.py's record), `owner_push_cost` is not searched
but tied to the worker's side at the ratio Ray's processes burned (the median over the
record's rows of the driver's CPU over the task workers'): the owner's side
(`call_submit_cost` + `owner_push_cost`) is that ratio of the worker's
(`call_start_cost` + `task_worker_cost` + `task_reply_cost`).

  python fit.py --start runs/fit.json --owner-ratio runs/cpu-by-process.json \
      --only scheduler.task_worker_cost --only scheduler.task_reply_cost \
      --only scheduler.task_push_latency --out runs/fit.json

The result names the values found; they become the defaults in src/config/defaults.rs
by hand; `rayscope fidelity` marks the rows in its `fitted_on` as fit. Before that (or
for another machine's runs, whose costs are not the defaults), `rayscope fidelity --runs
DIR --costs FILE` reports the model with the record's values and its fixed settings.

For a fit of part of the model to other runs (another machine's, under --runs), --row
names the fit rows instead of the FIT set, --set fixes a setting for every model run
(`call_submit_cost` given so also sets the owner's side --owner-ratio ties to), and
--start-at moves one cost's starting point (the search is local: a cost started near
zero can stay there where a larger value fits better):

  python fit.py --runs runs/epyc --row "noop_tasks cpus=1 tasks=10000" ... \
      --set scheduler.call_submit_cost=58us --start-at scheduler.task_push_latency=200 ...
"""
import argparse
import json
import math
import random
import os
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# The runs the costs are fitted to: one size of each kind whose cost depends on load.
# The other sizes, CPU counts and kinds are the hold-outs.
FIT = [
    "noop_tasks cpus=1 tasks=10000",
    "noop_tasks cpus=2 tasks=10000",
    "noop_tasks cpus=4 tasks=10000",
    # The driver's submit loops of the 1-CPU runs: `call_submit_cost` and
    # `first_submit_cost` are measured from them (src/config/defaults.rs), not fitted
    # here; the 2- and 4-CPU loops are held out.
    "noop_submit cpus=1 tasks=1000",
    "noop_submit cpus=1 tasks=10000",
    "noop_submit cpus=1 tasks=100000",
    "actor_creation actors=10 num_cpus=default",
    "actor_creation actors=200 num_cpus=default",
    "actor_calls calls=10000 mode=sync",
    "seed_tree shape=8",
    # Costs each of which acts on one kind of workload alone: fitted on one size or
    # setting of it, held out on the others.
    "actor_calls calls=10000 mode=async",
    "task_retries heartbeat_ms=1000 retries=0",
    "task_retries heartbeat_ms=200 retries=0",
    "object_transfer size=1000000",
    "object_transfer size=100000000",
    "placement_group groups=20 strategy=PACK",
    "object_local size=1000",
    "object_local size=1000000",
    "object_local size=100000000",
    # The same three sizes for the get each of those runs timed after its put.
    "object_get size=1000",
    "object_get size=1000000",
    "object_get size=100000000",
]

# Rows a run gives besides its own workload's (rayscope's fidelity::cases::row_workloads).
ROW_OF_RUN = {"object_get": "object_local", "noop_submit": "noop_tasks"}

# Each row's error counts against its bound (docs/fidelity.md): a tree's 0.5 % weighs as
# much as another row's 5 %.
BOUND = {"seed_tree": 0.005}

# (setting, starting value, smallest value, unit: µs for a duration, B for bytes a
# second, none for a share)
COSTS = [
    ("scheduler.owner_push_cost", 400, 1, "us"),
    ("scheduler.actor_call_submit_cost", 200, 1, "us"),
    ("scheduler.call_start_cost", 212, 1, "us"),
    ("scheduler.task_worker_cost", 200, 1, "us"),
    ("scheduler.task_reply_cost", 165, 1, "us"),
    ("scheduler.lease_latency", 317, 1, "us"),
    ("scheduler.dispatch_cost", 142, 1, "us"),
    ("scheduler.task_push_latency", 300, 1, "us"),
    ("scheduler.worker_start_cpu", 500_000, 1000, "us"),
    ("scheduler.worker_start_latency", 150_000, 1000, "us"),
    ("scheduler.idle_worker_cpu", 0.0091, 0.0001, ""),
    ("scheduler.async_call_cost", 150, 1, "us"),
    ("scheduler.task_error_cost", 3000, 1, "us"),
    ("scheduler.placement_group_commit_latency", 2500, 1, "us"),
    ("object_store.transfer_latency", 500, 1, "us"),
    ("object_store.transfer_bandwidth", 700_000_000, 1_000_000, "B"),
    ("object_store.put_latency", 450, 1, "us"),
    ("object_store.put_bandwidth", 2_600_000_000, 1_000_000, "B"),
    ("object_store.put_parallel_bandwidth", 2_600_000_000, 1_000_000, "B"),
    ("object_store.get_latency", 50, 1, "us"),
    ("object_store.get_bandwidth", 16_000_000_000, 1_000_000, "B"),
    ("object_store.get_fresh_bandwidth", 2_000_000_000, 1_000_000, "B"),
]
UNIT = {s: u for s, _, _, u in COSTS}


def fixed_numbers(sets):
    """The `--set`s of the costs fit.py reads (those it fits, and `call_submit_cost`) as
    numbers in its units, as `setting_value` writes them (µs as `<n>us`); other settings
    pass to the model as given."""
    units = dict(UNIT, **{"scheduler.call_submit_cost": "us"})
    numbers = {}
    for setting in sets:
        key, _, value = setting.partition("=")
        if key not in units:
            continue
        text = value[:-2] if units[key] == "us" and value.endswith("us") else value
        try:
            numbers[key] = float(text)
        except ValueError:
            raise SystemExit(f"fit.py: --set {setting}: give {key} as {'<n>us' if units[key] == 'us' else 'a number'}")
    return numbers


def call_submit_us(fixed):
    """`call_submit_cost` in µs, as src/config/defaults.rs sets it: measured from the 1-CPU
    submit loops, not fitted, so it is read from the one place that holds it (or from a
    `--set` of it, in `fixed`: `fixed_numbers`)."""
    if "scheduler.call_submit_cost" in fixed:
        return fixed["scheduler.call_submit_cost"]
    path = os.path.join(HERE, "../../src/config/defaults.rs")
    with open(path) as f:
        for line in f:
            if line.startswith("const CALL_SUBMIT_S: f64 = "):
                return float(line.split("=", 1)[1].strip().rstrip(";").replace("_", "")) * 1e6
    raise SystemExit(f"fit.py: no `const CALL_SUBMIT_S` in {path}")


WORKER_SIDE = ["scheduler.call_start_cost", "scheduler.task_worker_cost", "scheduler.task_reply_cost"]


def owner_ratio(path):
    """The median over cpu_by_process.py's rows of the driver's CPU over the task workers'."""
    with open(path) as f:
        rows = json.load(f)["rows"]
    ratios = sorted(r["cpu_ms_per_task"]["driver"] / r["cpu_ms_per_task"]["workers"] for r in rows)
    mid = len(ratios) // 2
    return ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2


def tied(values, ratio, submit_us):
    """`values` with `owner_push_cost` tied to the worker's side at `ratio` (None: as is),
    the owner's side being `submit_us` (`call_submit_cost`) and that push."""
    if ratio is None:
        return values
    worker = sum(values[s] for s in WORKER_SIDE)
    return dict(values, **{"scheduler.owner_push_cost": max(1.0, ratio * worker - submit_us)})


def key(row):
    return f"{row['workload']} {row['params']}"


def fit_runs_dir(runs_dir, fit):
    """A folder with the fit set's run files only (the model reads nothing else)."""
    tmp = tempfile.mkdtemp(prefix="rayscope-fit-")
    os.makedirs(os.path.join(tmp, "suite"))
    # A row's runs are recorded under their run's workload.
    wanted = {ROW_OF_RUN.get(k.split()[0], k.split()[0]) + k[len(k.split()[0]):] for k in fit}
    for name in sorted(os.listdir(os.path.join(runs_dir, "suite"))):
        with open(os.path.join(runs_dir, "suite", name)) as f:
            run = json.load(f)
        label = " ".join(f"{k}={v}" for k, v in sorted(run["params"].items()))
        if f"{run['workload']} {label}" in wanted:
            shutil.copy(os.path.join(runs_dir, "suite", name), os.path.join(tmp, "suite", name))
    for row in fit:
        if row.startswith("seed_tree shape="):
            shape = row.split("=", 1)[1]
            for name in sorted(os.listdir(runs_dir)):
                if name == f"seed-tree-{shape}.json" or (name.startswith(f"seed-tree-{shape}-") and name.endswith(".json")):
                    shutil.copy(os.path.join(runs_dir, name), os.path.join(tmp, name))
    return tmp


def setting_value(setting, v):
    unit = UNIT[setting]
    if unit == "us":
        return f"{int(round(v))}us"
    if unit == "B":
        return str(int(round(v)))
    return f"{v:.6f}"


def evaluate(binary, runs, values, fit, fixed):
    cmd = [binary, "fidelity", "--runs", runs, "--format", "json"]
    for setting, v in values.items():
        cmd += ["--set", f"{setting}={setting_value(setting, v)}"]
    # After the fitted values: a later --set of the same key wins.
    for setting in fixed:
        cmd += ["--set", setting]
    rows = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    errors = {key(r): (r["model"] - r["real"]) / r["real"] for r in rows if key(r) in fit}
    missing = set(fit) - set(errors)
    if missing:
        raise SystemExit(f"fit.py: no recorded run for {sorted(missing)}")
    return sum((e / BOUND.get(k.split()[0], 0.05)) ** 2 for k, e in errors.items()), errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rayscope", default=os.path.join(HERE, "../../target/release/rayscope"))
    ap.add_argument("--runs", default=os.path.join(HERE, "runs"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-step", type=float, default=0.01)
    ap.add_argument("--start", help="start from this earlier fit.json's values (costs it lacks start as above)")
    ap.add_argument("--only", action="append", metavar="SETTING", help="fit only this cost (repeatable)")
    ap.add_argument("--owner-ratio", metavar="FILE", help="tie owner_push_cost to the worker's side (see above)")
    ap.add_argument("--row", action="append", metavar="ROW", help="fit to this row instead of the FIT set (repeatable)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting fixed in every model run, over any value fitted or started (repeatable)")
    ap.add_argument("--start-at", action="append", default=[], metavar="SETTING=VALUE", help="start this cost here (repeatable)")
    ap.add_argument("--restarts", type=int, default=0, help="searches more, each from the start with its costs scaled at random (the lowest loss wins)")
    ap.add_argument("--spread", type=float, default=0.3, help="a restart scales each cost by up to 1 + this, up or down (default 0.3)")
    ap.add_argument("--seed", type=int, default=1, help="the restarts' draw (default 1)")
    args = ap.parse_args()
    if args.restarts < 0 or args.spread <= 0:
        ap.error("--restarts must be 0 or more and --spread above 0")
    fit = args.row or FIT
    # The fixed costs by name (a fixed setting fit.py does not fit only passes to the model).
    fixed = fixed_numbers(args.set)
    ratio = owner_ratio(args.owner_ratio) if args.owner_ratio else None
    if ratio is not None and "scheduler.owner_push_cost" in fixed:
        ap.error("--owner-ratio ties owner_push_cost, which --set fixes: give one of them")
    submit_us = call_submit_us(fixed) if ratio is not None else None

    values = {s: v for s, v, _, _ in COSTS}
    if args.start:
        with open(args.start) as f:
            earlier = json.load(f)["values"]
        values.update({s: v for s, v in earlier.items() if s in values})
    for start in args.start_at:
        setting, _, value = start.partition("=")
        if setting not in values:
            ap.error(f"--start-at {start}: fit.py does not fit {setting}")
        try:
            values[setting] = float(value)
        except ValueError:
            ap.error(f"--start-at {start}: the value must be a number (µs, bytes a second or a share)")
    # A fixed cost holds its value in the search's arithmetic too (the owner's tie).
    values.update({s: v for s, v in fixed.items() if s in values})
    unknown = set(args.only or []) - set(values)
    if unknown:
        ap.error(f"--only names costs fit.py does not fit: {sorted(unknown)}")
    moving = [s for s in (args.only or list(values)) if s not in fixed and (ratio is None or s != "scheduler.owner_push_cost")]
    floor = {s: lo for s, _, lo, _ in COSTS}
    values = tied(values, ratio, submit_us)
    first_start = dict(values)
    runs = fit_runs_dir(args.runs, fit)
    def search(values):
        """The pattern search from `values`: (values, loss, errors, evaluations)."""
        loss, errors = evaluate(args.rayscope, runs, values, fit, args.set)
        step, evaluations = 0.5, 1
        while step >= args.min_step:
            improved = False
            for setting in moving:
                for factor in (1 + step, 1 / (1 + step)):
                    trial = dict(values)
                    trial[setting] = max(floor[setting], values[setting] * factor)
                    if trial[setting] == values[setting]:
                        continue
                    trial = tied(trial, ratio, submit_us)
                    trial_loss, trial_errors = evaluate(args.rayscope, runs, trial, fit, args.set)
                    evaluations += 1
                    if trial_loss < loss:
                        values, loss, errors, improved = trial, trial_loss, trial_errors, True
                        break
            if not improved:
                step /= 2
            print(f"step {step:.3f} loss {loss:.6f} " + " ".join(f"{s.split('.')[-1]}={v:.6g}" for s, v in values.items()), flush=True)
        return values, loss, errors, evaluations

    values, loss, errors, evaluations = search(values)
    # The search is local: each restart begins from the start point with every moving
    # cost scaled by a factor drawn log-uniformly within 1 + --spread either way, and the
    # lowest loss wins.
    draw = random.Random(args.seed)
    restarts = []
    for restart in range(args.restarts):
        start = tied({s: max(floor[s], v * math.exp(draw.uniform(-1, 1) * math.log(1 + args.spread))) if s in moving else v
                      for s, v in first_start.items()}, ratio, submit_us)
        print(f"restart {restart + 1} of {args.restarts}", flush=True)
        r_values, r_loss, r_errors, r_evaluations = search(start)
        evaluations += r_evaluations
        restarts.append({"loss": r_loss, "evaluations": r_evaluations})
        if r_loss < loss:
            values, loss, errors = r_values, r_loss, r_errors
    shutil.rmtree(runs)
    result = {
        "fitted_on": fit,
        "started_from": args.start,
        "fixed": args.set,
        "moved": moving,
        "owner_ratio": ratio,
        "values": {s: (round(v) if UNIT[s] in ("us", "B") else round(v, 6)) for s, v in values.items() if s not in fixed},
        "units": UNIT,
        "errors": errors,
        "loss": loss,
        "evaluations": evaluations,
        "restarts": {"seed": args.seed, "spread": args.spread, "runs": restarts} if args.restarts else None,
        "fitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
