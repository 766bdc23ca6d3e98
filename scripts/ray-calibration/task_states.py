#!/usr/bin/env python3
"""Record the state sequences real Ray reports for each kind of task, as the State API
shows them (`list_tasks(detail=True)`, each record's `events`): a normal task, an actor's
creation, actor calls that queue behind a busy one, and a task retried after an
application error (every attempt is its own record).

    python task_states.py --out states.json
"""
import argparse
import json
import os
import tempfile
import time

import ray
from ray.util.state import list_tasks


@ray.remote
def plain():
    return 1


@ray.remote(max_retries=1, retry_exceptions=True)
def flaky(marker):
    # Fails its first attempt, succeeds on the retry.
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise ValueError("first attempt fails")
    return 2


@ray.remote
class Queue:
    def busy(self, seconds):
        time.sleep(seconds)

    def quick(self):
        return 3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    ray.init(logging_level="ERROR")
    ray.get(plain.remote())
    marker = os.path.join(tempfile.mkdtemp(), "attempted")
    ray.get(flaky.remote(marker))
    q = Queue.remote()
    ray.get([q.busy.remote(0.5), q.quick.remote(), q.quick.remote()])
    # Task events reach the GCS in batches (about every second): wait until every
    # record has its terminal state, with a deadline.
    deadline = time.time() + 60
    while True:
        rows = list_tasks(detail=True, raise_on_missing_output=False)
        done = [r for r in rows if r.state in ("FINISHED", "FAILED")]
        if len(done) >= 7 or time.time() > deadline:
            break
        time.sleep(0.5)
    out = []
    for r in rows:
        out.append({
            "name": r.name,
            "type": r.type,
            "attempt_number": r.attempt_number,
            "state": r.state,
            "error_type": r.error_type,
            "sequence": [e["state"] for e in (r.events or [])],
        })
    ray.shutdown()
    out.sort(key=lambda r: (r["type"], r["name"], r["attempt_number"]))
    result = {"ray_version": ray.__version__, "tasks": out, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    for r in out:
        print(r["type"], r["name"], r["attempt_number"], r["state"], r["error_type"], " → ".join(r["sequence"]))


if __name__ == "__main__":
    main()
