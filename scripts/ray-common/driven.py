"""What the real-Ray cluster scripts that a test drives over stdin share
(scripts/ray-alerts/cluster.py, scripts/ray-observe/cluster.py).

- `say(**fields)`: one JSON answer line to the test. Answers go out on a private copy
  of stdout, one write per line, and fd 1 itself points at stderr from the first call
  to `answer_privately()`: Ray's driver prints worker and raylet logs to stdout from
  its own thread, and a print() there could land between an answer and its newline
  (CI saw exactly that).
- `hold_real_ray(temp_dir)`: one real Ray cluster on this machine at a time (they share
  ports and /tmp/ray defaults): waits for the machine-wide lock, held until the
  process exits, and keeps Ray's temp files under `temp_dir`.
"""

import fcntl
import json
import os

_answers = None
_lock = None


def answer_privately():
    """Point fd 1 at stderr and keep a copy of the real stdout for `say`. Call it first
    thing, before Ray is imported into a driver."""
    global _answers
    if _answers is None:
        _answers = os.dup(1)
        os.dup2(2, 1)


def say(**fields):
    answer_privately()
    line = (json.dumps(fields) + "\n").encode()
    while line:
        line = line[os.write(_answers, line):]


def hold_real_ray(temp_dir):
    """Take /tmp/real-ray.lock (flock(2), as flock(1) does), held until the process
    exits. Ray's address file then goes under `temp_dir`, not the system temp dir that
    another cluster on the machine may own."""
    global _lock
    _lock = open("/tmp/real-ray.lock", "a")
    fcntl.flock(_lock, fcntl.LOCK_EX)
    os.environ["RAY_TMPDIR"] = temp_dir
    os.makedirs(os.path.join(temp_dir, "ray"), exist_ok=True)
