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
- `kill_processes_using(directory, min_depth)`: SIGKILL what Ray left running there.
- `cpu_model()`: the machine's CPU as a recorded run names it.
- `wait_for_event_aggregator(address)`: wait until a node's dashboard agent takes task
  events, before the first job runs there.

Also used by scripts/ray-differential/scenario.py, scripts/ray-whatif/whatif.py and
scripts/ray-calibration/ray_kit.py.
"""

import fcntl
import json
import os
import signal
import time

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


def kill_processes_using(directory, min_depth):
    """SIGKILL every process still using `directory` (by working directory, open files
    or command line), but this process and its ancestors (flock and the test that runs
    us write our log there); how many. A directory with fewer than `min_depth` slashes
    is refused (never a top-level one such as /tmp itself). Ray's agents can outlive
    their raylet and Cluster.shutdown(), renamed (ray::DashboardAgent), so they are
    found by what they hold, not by name."""
    needle = os.path.realpath(directory)
    if needle.count("/") < min_depth or not os.path.isdir(needle):
        return 0
    spared, pid = set(), os.getpid()
    while pid > 1:
        spared.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    killed = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in spared:
            continue
        base = f"/proc/{pid}"
        try:
            links = [os.readlink(f"{base}/cwd")]
            links += [os.readlink(f"{base}/fd/{fd}") for fd in os.listdir(f"{base}/fd")]
            with open(f"{base}/cmdline", "rb") as f:
                links.append(f.read().decode(errors="replace"))
        except OSError:
            continue
        if any(needle in link for link in links):
            try:
                os.kill(int(pid), signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


def cpu_model():
    """The machine's CPU as /proc/cpuinfo names it ("" where it cannot be read)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        return ""


def wait_for_event_aggregator(address, deadline_s=90.0):
    """Wait until the dashboard agent whose gRPC server is at `address` ("host:port",
    the node's metrics agent port) answers an empty AddEvents. A core worker sends its
    task events to that agent about once a second and drops a batch the agent does not
    take, with no retry; the agent loads its modules well after the raylet registers, so
    a job started as soon as the node is listed can lose all its events (Ray 2.49 on a
    loaded machine lost a whole first job by push). The agent's gRPC server is up
    before its modules are: until the aggregator's is loaded, it answers UNIMPLEMENTED."""
    import grpc
    from ray.core.generated import events_event_aggregator_service_pb2 as pb
    from ray.core.generated import events_event_aggregator_service_pb2_grpc as pb_grpc

    deadline = time.monotonic() + deadline_s
    while True:
        with grpc.insecure_channel(address) as channel:
            try:
                pb_grpc.EventAggregatorServiceStub(channel).AddEvents(pb.AddEventsRequest(), timeout=2)
                return
            except grpc.RpcError as e:
                why = f"{e.code().name}: {e.details()}"
        if time.monotonic() > deadline:
            raise RuntimeError(f"the dashboard agent at {address} took no events in {deadline_s} s ({why})")
        time.sleep(0.25)
